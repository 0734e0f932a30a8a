//! Block indexes: the root index (data or meta, in the load-on-open
//! section) and the non-root index blocks (leaf and intermediate levels of
//! a multi-level data index).
//!
//! A root entry is the block's offset (8), its on-disk size (4, header
//! included) and its first key, as a Hadoop vint length and the key. The
//! root data index of a multi-level index is followed by the mid-key
//! metadata: the middle leaf block's offset (8) and size (4) and the
//! entry's index in it (4).
//!
//! A non-root block has the entry count (4), then count+1 offsets of the
//! entries (4 each, relative to the end of this list; the last is the
//! entries' total size), then the entries: offset (8), on-disk size (4),
//! key (the bytes up to the next entry).

use std::cmp::Ordering;

use crate::cursor::{Cursor, Decode};
use crate::key::{compare_keys, parse_key, KeyRef};

/// One index entry: a block and its first key (or a key between the
/// previous block's last and this block's first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// The block's offset.
    pub offset: u64,
    /// The block's size on disk, header included.
    pub on_disk_size: u32,
    /// The key (a flat cell key in the data index, a name in the meta
    /// index, a row or key in a Bloom filter's index).
    pub key: Vec<u8>,
}

fn entry(c: &mut Cursor<'_>, i: usize) -> Decode<(u64, u32)> {
    let at = c.pos();
    let offset = c.i64("index entry offset")?;
    let size = c.i32("index entry size")?;
    let offset = u64::try_from(offset)
        .map_err(|_| format!("index entry {i} at byte {at} has negative offset {offset}"))?;
    let size = u32::try_from(size)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| format!("index entry {i} at byte {at} has size {size}"))?;
    Ok((offset, size))
}

/// Reads `count` root-index entries from the start of `c`.
pub(crate) fn parse_root(c: &mut Cursor<'_>, count: usize) -> Decode<Vec<IndexEntry>> {
    // Each entry takes at least 13 bytes: a count larger than the bytes
    // can hold is an error before anything is allocated.
    if count > c.remaining() / 13 {
        return Err(format!(
            "{count} root index entries cannot fit in {} bytes",
            c.remaining()
        ));
    }
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let (offset, on_disk_size) = entry(c, i)?;
        let key = c.hadoop_bytes("index entry key")?.to_vec();
        out.push(IndexEntry {
            offset,
            on_disk_size,
            key,
        });
    }
    Ok(out)
}

/// Reads a leaf or intermediate index block's entries.
pub(crate) fn parse_non_root(payload: &[u8]) -> Decode<Vec<IndexEntry>> {
    let mut c = Cursor::new(payload);
    let count = c.len32("index entry count")?;
    if count > payload.len() / 16 {
        return Err(format!(
            "{count} index entries cannot fit in {} bytes",
            payload.len()
        ));
    }
    let mut marks = Vec::with_capacity(count + 1);
    for _ in 0..=count {
        marks.push(c.len32("secondary index offset")?);
    }
    let base = c.pos();
    let entries = &payload[base..];
    if marks.last() != Some(&entries.len()) {
        return Err(format!(
            "secondary index ends at {:?}, the entries take {} bytes",
            marks.last(),
            entries.len()
        ));
    }
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let (start, end) = (marks[i], marks[i + 1]);
        if end < start + 12 || end > entries.len() {
            return Err(format!(
                "index entry {i} spans bytes {start}..{end} of {}",
                entries.len()
            ));
        }
        let mut e = Cursor::new(&entries[start..end]);
        let (offset, on_disk_size) = entry(&mut e, i)?;
        out.push(IndexEntry {
            offset,
            on_disk_size,
            key: entries[start + 12..end].to_vec(),
        });
    }
    Ok(out)
}

/// The entry to descend into for `target` in a level of the data index:
/// the last entry whose key is at or before it (the first entry when
/// every key is after it).
pub(crate) fn locate(entries: &[IndexEntry], target: &KeyRef<'_>) -> Decode<usize> {
    let mut lo = 0usize;
    let mut hi = entries.len();
    // Binary search for the first entry whose key is after the target.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let key = parse_key(&entries[mid].key).map_err(|e| format!("index key {mid}: {e}"))?;
        if compare_keys(&key, target) == Ordering::Greater {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(lo.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{build_key, first_on_row};

    fn non_root(entries: &[(u64, u32, Vec<u8>)]) -> Vec<u8> {
        let mut body = Vec::new();
        let mut marks = Vec::new();
        for (o, s, k) in entries {
            marks.push(body.len() as u32);
            body.extend_from_slice(&o.to_be_bytes());
            body.extend_from_slice(&s.to_be_bytes());
            body.extend_from_slice(k);
        }
        marks.push(body.len() as u32);
        let mut out = (entries.len() as u32).to_be_bytes().to_vec();
        for m in marks {
            out.extend_from_slice(&m.to_be_bytes());
        }
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn a_non_root_block_yields_its_entries() {
        let k1 = build_key(b"a", b"f", b"", 1, 4);
        let k2 = build_key(b"m", b"f", b"", 1, 4);
        let buf = non_root(&[(0, 100, k1.clone()), (100, 50, k2.clone())]);
        let e = parse_non_root(&buf).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!((e[1].offset, e[1].on_disk_size, &e[1].key), (100, 50, &k2));
    }

    #[test]
    fn a_secondary_index_out_of_bounds_is_refused() {
        let k = build_key(b"a", b"f", b"", 1, 4);
        let mut buf = non_root(&[(0, 100, k)]);
        buf[7] = 200; // the first entry starts past its end
        assert!(parse_non_root(&buf).is_err());
        assert!(parse_non_root(&[0x7f, 0xff, 0xff, 0xff]).is_err());
    }

    #[test]
    fn locate_picks_the_last_block_starting_at_or_before_the_target() {
        let entries: Vec<IndexEntry> = [b"b", b"d", b"f"]
            .iter()
            .enumerate()
            .map(|(i, r)| IndexEntry {
                offset: i as u64,
                on_disk_size: 1,
                key: build_key(*r, b"f", b"q", 1, 4),
            })
            .collect();
        assert_eq!(locate(&entries, &first_on_row(b"a")).unwrap(), 0);
        assert_eq!(locate(&entries, &first_on_row(b"c")).unwrap(), 0);
        assert_eq!(locate(&entries, &first_on_row(b"d")).unwrap(), 0);
        assert_eq!(locate(&entries, &first_on_row(b"e")).unwrap(), 1);
        assert_eq!(locate(&entries, &first_on_row(b"z")).unwrap(), 2);
    }
}
