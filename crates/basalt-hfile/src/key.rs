//! HBase's flat key (`KeyValue`'s key part) and its order.
//!
//! A key is: row length (2 bytes, big-endian), row, family length (1
//! byte), family, qualifier (the rest), timestamp (8 bytes, big-endian),
//! type (1 byte). Keys sort by row, then family, then qualifier (unsigned
//! bytes), then timestamp descending, then type code descending; a key
//! with no family and qualifier and type Minimum (0) sorts after every
//! other key of its row (HBase's "last on row").

use std::cmp::Ordering;

use crate::cursor::{Cursor, Decode};

/// The fixed part of a key besides row, family and qualifier.
pub(crate) const KEY_INFRASTRUCTURE: usize = 2 + 1 + 8 + 1;

/// A key's parts, borrowed from its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRef<'a> {
    /// The row.
    pub row: &'a [u8],
    /// The family.
    pub family: &'a [u8],
    /// The qualifier.
    pub qualifier: &'a [u8],
    /// The timestamp.
    pub timestamp: i64,
    /// The type code.
    pub type_code: u8,
}

/// Splits a flat key into its parts.
pub fn parse_key(key: &[u8]) -> Decode<KeyRef<'_>> {
    if key.len() < KEY_INFRASTRUCTURE {
        return Err(format!(
            "key of {} bytes is shorter than the {KEY_INFRASTRUCTURE} every key needs",
            key.len()
        ));
    }
    let mut c = Cursor::new(key);
    let row_len = c.u16("key row length")? as usize;
    let row = c.take(row_len, "key row")?;
    let family_len = c.u8("key family length")? as usize;
    let family = c.take(family_len, "key family")?;
    let qualifier_len = c.remaining().checked_sub(9).ok_or_else(|| {
        format!(
            "key of {} bytes: row and family leave no room for timestamp and type",
            key.len()
        )
    })?;
    let qualifier = c.take(qualifier_len, "key qualifier")?;
    let timestamp = c.i64("key timestamp")?;
    let type_code = c.u8("key type")?;
    Ok(KeyRef {
        row,
        family,
        qualifier,
        timestamp,
        type_code,
    })
}

/// HBase's order of two keys (`CellComparatorImpl`, without sequence ids).
pub fn compare_keys(a: &KeyRef<'_>, b: &KeyRef<'_>) -> Ordering {
    let rows = a.row.cmp(b.row);
    if rows != Ordering::Equal {
        return rows;
    }
    let a_last = a.family.is_empty() && a.qualifier.is_empty() && a.type_code == 0;
    let b_last = b.family.is_empty() && b.qualifier.is_empty() && b.type_code == 0;
    match (a_last, b_last) {
        (true, true) => {}
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (false, false) => {}
    }
    a.family
        .cmp(b.family)
        .then_with(|| a.qualifier.cmp(b.qualifier))
        .then_with(|| b.timestamp.cmp(&a.timestamp))
        .then_with(|| b.type_code.cmp(&a.type_code))
}

/// The smallest key of a row: no family or qualifier, the latest
/// timestamp, type Maximum (255): every cell of the row sorts after it.
pub(crate) fn first_on_row(row: &[u8]) -> KeyRef<'_> {
    KeyRef {
        row,
        family: b"",
        qualifier: b"",
        timestamp: i64::MAX,
        type_code: 255,
    }
}

/// Builds a flat key from parts.
#[cfg(test)]
pub(crate) fn build_key(row: &[u8], family: &[u8], qualifier: &[u8], ts: i64, t: u8) -> Vec<u8> {
    let mut k = Vec::with_capacity(KEY_INFRASTRUCTURE + row.len() + family.len() + qualifier.len());
    k.extend_from_slice(&(row.len() as u16).to_be_bytes());
    k.extend_from_slice(row);
    k.push(family.len() as u8);
    k.extend_from_slice(family);
    k.extend_from_slice(qualifier);
    k.extend_from_slice(&ts.to_be_bytes());
    k.push(t);
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_splits_into_its_parts() {
        let k = build_key(b"row", b"cf", b"q", 42, 4);
        let p = parse_key(&k).unwrap();
        assert_eq!(
            (p.row, p.family, p.qualifier, p.timestamp, p.type_code),
            (&b"row"[..], &b"cf"[..], &b"q"[..], 42, 4)
        );
    }

    #[test]
    fn keys_whose_lengths_overrun_are_refused() {
        let mut k = build_key(b"row", b"cf", b"", 1, 4);
        k[1] = 200;
        assert!(parse_key(&k).is_err());
        assert!(parse_key(&[0, 0, 0]).is_err());
    }

    #[test]
    fn newer_timestamps_and_higher_types_sort_first() {
        let a = build_key(b"r", b"f", b"q", 2, 4);
        let b = build_key(b"r", b"f", b"q", 1, 4);
        let d = build_key(b"r", b"f", b"q", 1, 8);
        let (a, b, d) = (
            parse_key(&a).unwrap(),
            parse_key(&b).unwrap(),
            parse_key(&d).unwrap(),
        );
        assert_eq!(compare_keys(&a, &b), Ordering::Less);
        assert_eq!(compare_keys(&d, &b), Ordering::Less);
        assert_eq!(compare_keys(&first_on_row(b"r"), &a), Ordering::Less);
    }

    #[test]
    fn last_on_row_sorts_after_every_cell_of_its_row() {
        let last = build_key(b"r", b"", b"", 0, 0);
        let cell = build_key(b"r", b"zz", b"zz", 0, 4);
        let next = build_key(b"s", b"", b"", i64::MAX, 255);
        let (l, c, n) = (
            parse_key(&last).unwrap(),
            parse_key(&cell).unwrap(),
            parse_key(&next).unwrap(),
        );
        assert_eq!(compare_keys(&l, &c), Ordering::Greater);
        assert_eq!(compare_keys(&l, &n), Ordering::Less);
    }
}
