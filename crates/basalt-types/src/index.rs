//! Secondary indexes: what a table declares, and the keys of its index rows.
//!
//! An index is part of its table's descriptor ([`IndexDescriptor`]); its
//! rows live in a table of their own ([`index_table_name`]), one row per
//! indexed data row. An index row's key is the indexed values, each
//! encoded so that byte order is the values' order, followed by the data
//! row's key:
//!
//! ```text
//! component(v1) component(v2) ... data row key
//! component(v) = escape(transform(v)) 00 00      escape: 00 -> 00 FF
//! ```
//!
//! `00 00` sorts below every escaped byte, so a value sorts before every
//! longer value it is a prefix of, and the data row is found again by
//! skipping the terminated components ([`IndexDescriptor::data_row`]).
//! A [`IndexTransform::Reversed`] component is the complement of that
//! encoding (terminated by `FF FF`), which sorts the values in descending
//! order.
//!
//! The design, its consistency invariant and its proofs are in
//! `docs/secondary-indexes.md`.

use bytes::{BufMut, Bytes, BytesMut};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The only family of an index table.
pub const INDEX_FAMILY: &[u8] = b"x";

/// The qualifier of an index row's verified flag.
pub const VERIFIED_QUALIFIER: &[u8] = b"_v";

/// The flag's value on a row the read path trusts.
pub const VERIFIED: &[u8] = &[1];

/// The flag's value on a row written before its data commit: the read
/// path checks it against the data row.
pub const UNVERIFIED: &[u8] = &[0];

/// The longest index name, in bytes.
pub const MAX_INDEX_NAME_BYTES: usize = 64;

/// How an indexed value becomes its part of the index key. Each is a pure
/// function of the value, so a row's index key depends on its current
/// values only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum IndexTransform {
    /// The value as it is.
    None,
    /// Descending order of the value.
    Reversed,
    /// The first `n` bytes of the value (all of a shorter one).
    Prefix(usize),
    /// The value left-padded with `0` characters to `n` bytes, so decimal
    /// numbers written as text sort as numbers. A longer value is kept
    /// whole (it sorts after every padded one of the same first digits).
    PadLeft(usize),
}

impl IndexTransform {
    /// The transformed value.
    pub fn apply(&self, value: &[u8]) -> Bytes {
        match *self {
            IndexTransform::None | IndexTransform::Reversed => Bytes::copy_from_slice(value),
            IndexTransform::Prefix(n) => Bytes::copy_from_slice(&value[..value.len().min(n)]),
            IndexTransform::PadLeft(n) if value.len() < n => {
                let mut padded = vec![b'0'; n - value.len()];
                padded.extend_from_slice(value);
                Bytes::from(padded)
            }
            IndexTransform::PadLeft(_) => Bytes::copy_from_slice(value),
        }
    }

    /// The shell's spelling after a `/` (`o:ts/REVERSED`, `o:id/PAD(10)`).
    pub fn parse(text: &str) -> Result<IndexTransform> {
        let upper = text.trim().to_ascii_uppercase();
        let number = |prefix: &str| -> Result<usize> {
            upper
                .strip_prefix(prefix)
                .and_then(|rest| rest.strip_suffix(')'))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "index transform '{text}': expected {prefix}n) with n a positive number"
                    ))
                })
        };
        if upper.is_empty() || upper == "NONE" {
            Ok(IndexTransform::None)
        } else if upper == "REVERSED" {
            Ok(IndexTransform::Reversed)
        } else if upper.starts_with("PREFIX(") {
            number("PREFIX(").map(IndexTransform::Prefix)
        } else if upper.starts_with("PAD(") {
            number("PAD(").map(IndexTransform::PadLeft)
        } else {
            Err(Error::invalid(format!(
                "index transform '{text}' is unknown; known: REVERSED, PREFIX(n), PAD(n)"
            )))
        }
    }
}

impl std::fmt::Display for IndexTransform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexTransform::None => Ok(()),
            IndexTransform::Reversed => write!(f, "/REVERSED"),
            IndexTransform::Prefix(n) => write!(f, "/PREFIX({n})"),
            IndexTransform::PadLeft(n) => write!(f, "/PAD({n})"),
        }
    }
}

/// One indexed column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexColumn {
    /// The family.
    pub family: Bytes,
    /// The qualifier.
    pub qualifier: Bytes,
    /// How its value enters the key.
    pub transform: IndexTransform,
}

impl IndexColumn {
    /// A column indexed as it is.
    pub fn new(family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Self {
        IndexColumn {
            family: family.into(),
            qualifier: qualifier.into(),
            transform: IndexTransform::None,
        }
    }

    /// Builder: the transform.
    pub fn transform(mut self, transform: IndexTransform) -> Self {
        self.transform = transform;
        self
    }
}

impl std::fmt::Display for IndexColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}{}",
            String::from_utf8_lossy(&self.family),
            String::from_utf8_lossy(&self.qualifier),
            self.transform
        )
    }
}

/// Whether reads may use an index yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum IndexState {
    /// Every write maintains it, and the backfill is filling it from the
    /// rows written before it existed; reads by it are refused.
    Building,
    /// Complete: reads may use it.
    Active,
}

/// A secondary index of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexDescriptor {
    /// Unique within the table; `[A-Za-z0-9_-]`, at most
    /// [`MAX_INDEX_NAME_BYTES`].
    pub name: String,
    /// The indexed columns, in key order. A row without a value for the
    /// first one has no index row; a later one without a value enters the
    /// key as an empty value.
    pub columns: Vec<IndexColumn>,
    /// Columns copied into the index rows, so an index read of only these
    /// (and the indexed ones) needs no data row.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covered: Vec<(Bytes, Bytes)>,
    /// Building or active.
    pub state: IndexState,
    /// When its creation began (milliseconds since the epoch): the
    /// backfill writes its rows just below it, so every write that
    /// maintained the index wins over them.
    #[serde(default)]
    pub created_at_ms: i64,
}

impl IndexDescriptor {
    /// An index named `name` on `columns`, not yet built.
    pub fn new(name: impl Into<String>, columns: Vec<IndexColumn>) -> Self {
        IndexDescriptor {
            name: name.into(),
            columns,
            covered: Vec::new(),
            state: IndexState::Building,
            created_at_ms: 0,
        }
    }

    /// Builder: a covered column.
    pub fn cover(mut self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Self {
        self.covered.push((family.into(), qualifier.into()));
        self
    }

    /// Checks the name, that there is at least one column, and that no
    /// column is named twice. Families are checked against the table by
    /// [`crate::TableDescriptor::add_index`].
    pub fn validate(&self) -> Result<()> {
        validate_index_name(&self.name)?;
        if self.columns.is_empty() {
            return Err(Error::invalid(format!(
                "index '{}' names no column",
                self.name
            )));
        }
        let mut seen = std::collections::BTreeSet::new();
        for column in &self.columns {
            if !seen.insert((&column.family, &column.qualifier)) {
                return Err(Error::invalid(format!(
                    "index '{}' names column {column} twice",
                    self.name
                )));
            }
        }
        Ok(())
    }

    /// Every column whose value an index row depends on: the indexed ones,
    /// then the covered ones not indexed.
    pub fn read_columns(&self) -> Vec<(Bytes, Bytes)> {
        let mut columns: Vec<(Bytes, Bytes)> = self
            .columns
            .iter()
            .map(|c| (c.family.clone(), c.qualifier.clone()))
            .collect();
        for covered in &self.covered {
            if !columns.contains(covered) {
                columns.push(covered.clone());
            }
        }
        columns
    }

    /// The index row key of data row `row` whose indexed columns hold
    /// `values` (in the order of [`IndexDescriptor::columns`]; `None`
    /// for a column without a value). `None` when the first column has no
    /// value: such a row has no index row.
    pub fn key(&self, values: &[Option<&[u8]>], row: &[u8]) -> Option<Bytes> {
        // A row without its first indexed value has no index row.
        values.first().copied().flatten()?;
        let mut key = BytesMut::new();
        for (column, value) in self.columns.iter().zip(values) {
            let value = column.transform.apply(value.unwrap_or_default());
            put_component(&mut key, &value, column.transform, true);
        }
        key.put_slice(row);
        Some(key.freeze())
    }

    /// The data row an index row key names: what follows its components.
    /// A key that does not hold them all is refused, naming what is
    /// missing.
    pub fn data_row(&self, key: &[u8]) -> Result<Bytes> {
        let mut at = 0;
        for (i, column) in self.columns.iter().enumerate() {
            let (literal, end) = match column.transform {
                IndexTransform::Reversed => (0xFF, 0xFF),
                _ => (0x00, 0x00),
            };
            loop {
                match key.get(at..at + 2) {
                    Some([a, b]) if *a == literal && *b == end => {
                        at += 2;
                        break;
                    }
                    Some([a, _]) if *a == literal => at += 2,
                    Some(_) => at += 1,
                    None => {
                        return Err(Error::invalid(format!(
                        "index '{}' row key of {} bytes: component {} ({column}) has no terminator",
                        self.name,
                        key.len(),
                        i + 1
                    )))
                    }
                }
            }
        }
        if at == key.len() {
            return Err(Error::invalid(format!(
                "index '{}' row key of {} bytes names no data row",
                self.name,
                key.len()
            )));
        }
        Ok(Bytes::copy_from_slice(&key[at..]))
    }

    /// The lowest index key whose leading values are at or after `values`
    /// (the first `values.len()` columns; the last compared as a prefix,
    /// so `["b"]` starts at the first value `>= "b"` in index order).
    pub fn bound(&self, values: &[&[u8]]) -> Result<Bytes> {
        self.encode_leading(values, false)
    }

    /// The key prefix every index row whose leading values equal `values`
    /// starts with.
    pub fn equal_prefix(&self, values: &[&[u8]]) -> Result<Bytes> {
        self.encode_leading(values, true)
    }

    fn encode_leading(&self, values: &[&[u8]], terminate_last: bool) -> Result<Bytes> {
        if values.len() > self.columns.len() {
            return Err(Error::invalid(format!(
                "index '{}' has {} column(s); {} values given",
                self.name,
                self.columns.len(),
                values.len()
            )));
        }
        let mut key = BytesMut::new();
        for (i, (column, value)) in self.columns.iter().zip(values).enumerate() {
            let terminated = terminate_last || i + 1 < values.len();
            put_component(
                &mut key,
                &column.transform.apply(value),
                column.transform,
                terminated,
            );
        }
        Ok(key.freeze())
    }
}

/// Appends one value's encoding: escaped, terminated if asked, and
/// complemented for a reversed column.
fn put_component(key: &mut BytesMut, value: &[u8], transform: IndexTransform, terminated: bool) {
    let flip = if transform == IndexTransform::Reversed {
        0xFF
    } else {
        0x00
    };
    for &b in value {
        key.put_u8(b ^ flip);
        if b == 0 {
            key.put_u8(0xFF ^ flip);
        }
    }
    if terminated {
        key.put_u8(flip);
        key.put_u8(flip);
    }
}

/// The table that holds index `index` of table `table`: `<table>.<index>`
/// in the table's namespace.
pub fn index_table_name(table: &str, index: &str) -> String {
    format!("{table}.{index}")
}

/// Checks an index name: `[A-Za-z0-9_-]`, 1 to [`MAX_INDEX_NAME_BYTES`]
/// bytes (it becomes part of a table name).
pub fn validate_index_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_INDEX_NAME_BYTES {
        return Err(Error::invalid(format!(
            "index name '{name}' must be 1 to {MAX_INDEX_NAME_BYTES} bytes long"
        )));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(Error::invalid(format!(
            "index name '{name}' holds '{bad}'; allowed are letters, digits, '_' and '-'"
        )));
    }
    Ok(())
}

/// The qualifier under which an index row keeps covered column
/// `family:qualifier`.
pub fn covered_qualifier(family: &[u8], qualifier: &[u8]) -> Bytes {
    let mut name = BytesMut::with_capacity(family.len() + 1 + qualifier.len());
    name.put_slice(family);
    name.put_u8(b':');
    name.put_slice(qualifier);
    name.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by(columns: &[(&str, IndexTransform)]) -> IndexDescriptor {
        IndexDescriptor::new(
            "i",
            columns
                .iter()
                .map(|(q, t)| IndexColumn::new("f", q.to_string()).transform(*t))
                .collect(),
        )
    }

    #[test]
    fn keys_sort_as_their_values_then_their_rows() {
        let index = by(&[("a", IndexTransform::None)]);
        let values: &[&[u8]] = &[b"", b"\0", b"\0\0", b"\0\x01", b"a", b"a\0", b"ab", b"b"];
        let mut keys = Vec::new();
        for v in values {
            for row in [&b"r1"[..], b"r2"] {
                keys.push(index.key(&[Some(v)], row).unwrap());
            }
        }
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
    }

    #[test]
    fn a_reversed_column_sorts_its_values_in_descending_order() {
        let index = by(&[("a", IndexTransform::Reversed)]);
        let key = |v: &[u8]| index.key(&[Some(v)], b"r").unwrap();
        assert!(key(b"b") < key(b"ab"));
        assert!(key(b"ab") < key(b"a"));
        assert!(key(b"a\0") < key(b"a"));
        assert!(key(b"a") < key(b""));
    }

    #[test]
    fn the_data_row_is_found_again_after_every_component() {
        let index = by(&[
            ("a", IndexTransform::None),
            ("b", IndexTransform::Reversed),
            ("c", IndexTransform::PadLeft(4)),
        ]);
        for (values, row) in [
            ([&b"x\0y"[..], b"\xff\0", b"7"], &b"row\0\xff"[..]),
            ([b"", b"", b""], b"r"),
            ([b"\0\0", b"\xff\xff", b"12345"], b"\0"),
        ] {
            let key = index
                .key(&[Some(values[0]), Some(values[1]), Some(values[2])], row)
                .unwrap();
            assert_eq!(index.data_row(&key).unwrap(), row);
        }
    }

    #[test]
    fn a_row_without_its_first_indexed_value_has_no_key() {
        let index = by(&[("a", IndexTransform::None), ("b", IndexTransform::None)]);
        assert_eq!(index.key(&[None, Some(b"v")], b"r"), None);
        assert!(index.key(&[Some(b"v"), None], b"r").is_some());
    }

    #[test]
    fn garbage_keys_are_refused_with_the_component_that_failed() {
        let index = by(&[("a", IndexTransform::None), ("b", IndexTransform::None)]);
        let e = index.data_row(b"abc").unwrap_err().to_string();
        assert!(e.contains("component 1 (f:a) has no terminator"), "{e}");
        let e = index.data_row(b"a\0\0b").unwrap_err().to_string();
        assert!(e.contains("component 2 (f:b)"), "{e}");
        let e = index.data_row(b"a\0\0b\0\0").unwrap_err().to_string();
        assert!(e.contains("names no data row"), "{e}");
        for garbage in [&b""[..], b"\0", b"\0\xff\0", b"\xff\xff\xff"] {
            assert!(index.data_row(garbage).is_err());
        }
    }

    #[test]
    fn bounds_select_values_at_or_after_and_equal_prefixes_exactly_them() {
        let index = by(&[("a", IndexTransform::None), ("b", IndexTransform::None)]);
        let key = |a: &[u8], b: &[u8]| index.key(&[Some(a), Some(b)], b"r").unwrap();
        let start = index.bound(&[b"b"]).unwrap();
        assert!(key(b"a", b"z") < start);
        assert!(start <= key(b"b", b""));
        assert!(start <= key(b"ba", b""));
        let equal = index.equal_prefix(&[b"b"]).unwrap();
        assert!(key(b"b", b"x").starts_with(&equal));
        assert!(!key(b"ba", b"x").starts_with(&equal));
        assert!(index.bound(&[b"a", b"b", b"c"]).is_err());
    }

    #[test]
    fn transforms_parse_as_the_shell_writes_them() {
        assert_eq!(
            IndexTransform::parse("reversed").unwrap(),
            IndexTransform::Reversed
        );
        assert_eq!(
            IndexTransform::parse("PAD(10)").unwrap(),
            IndexTransform::PadLeft(10)
        );
        assert_eq!(
            IndexTransform::parse("prefix(3)").unwrap(),
            IndexTransform::Prefix(3)
        );
        for bad in ["PAD(0)", "PAD(x)", "UPPER", "PREFIX(3"] {
            assert!(IndexTransform::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(IndexTransform::PadLeft(3).apply(b"7"), &b"007"[..]);
        assert_eq!(IndexTransform::Prefix(2).apply(b"abc"), &b"ab"[..]);
    }

    #[test]
    fn names_and_columns_are_checked() {
        assert!(validate_index_name("by_buyer-2").is_ok());
        for bad in ["", "a.b", "a:b", "a b", &"x".repeat(65)] {
            assert!(validate_index_name(bad).is_err(), "{bad}");
        }
        let twice = IndexDescriptor::new(
            "i",
            vec![IndexColumn::new("f", "a"), IndexColumn::new("f", "a")],
        );
        assert!(twice.validate().unwrap_err().to_string().contains("twice"));
        assert!(IndexDescriptor::new("i", vec![]).validate().is_err());
    }
}
