//! Data blocks: cells with (optionally) prefix-compressed keys and restart
//! points for binary search.
//!
//! ```text
//! entry*  restart offset (u32 LE)*  restart count (u32 LE)
//!
//! entry: shared varint | unshared varint | row_len varint | value_len varint
//!        | unshared key bytes | value bytes
//! ```
//!
//! `shared` bytes of the key are taken from the previous entry's key. At a
//! restart point (every [`RESTART_INTERVAL`]th entry, the first included)
//! `shared` is 0, so a key there decodes on its own and a seek can binary
//! search the restart points. DATA_BLOCK_ENCODING=NONE writes `shared = 0`
//! for every entry; PREFIX, DIFF and FAST_DIFF all write the shared-prefix
//! form (one scheme serves all three).

use std::cmp::Ordering;

use bytes::Bytes;

use basalt_types::{Cell, DataBlockEncoding};

use super::format::{
    compare_target, decode_key, encode_key, put_varint, DecodeResult, Decoder, KeyRef,
    KEY_SUFFIX_LEN, MAX_BLOCK_LEN,
};
use crate::coding::{put_u32_le, u32_le};

/// Entries between restart points. Smaller speeds up seeks, larger
/// compresses keys better; 16 is the usual balance.
pub(crate) const RESTART_INTERVAL: usize = 16;

/// Builds one data block in memory.
#[derive(Debug)]
pub(crate) struct DataBlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    prev_key: Vec<u8>,
    key: Vec<u8>,
    entries: usize,
    prefix: bool,
}

impl DataBlockBuilder {
    pub(crate) fn new(encoding: DataBlockEncoding, capacity: usize) -> Self {
        DataBlockBuilder {
            buf: Vec::with_capacity(capacity.min(MAX_BLOCK_LEN)),
            restarts: Vec::new(),
            prev_key: Vec::new(),
            key: Vec::new(),
            entries: 0,
            // ROW_INDEX_V1, like NONE, keeps keys whole (HBase's own
            // layout for it); the three prefix encodings share one scheme.
            prefix: matches!(
                encoding,
                DataBlockEncoding::Prefix | DataBlockEncoding::Diff | DataBlockEncoding::FastDiff
            ),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The payload size if the block were finished now.
    pub(crate) fn size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// The encoded key of the last cell added.
    pub(crate) fn last_key(&self) -> &[u8] {
        &self.prev_key
    }

    /// Appends a cell (the caller keeps cells in order).
    pub(crate) fn add(&mut self, cell: &Cell) {
        self.key.clear();
        encode_key(cell, &mut self.key);
        let shared = if self.entries.is_multiple_of(RESTART_INTERVAL) {
            self.restarts.push(self.buf.len() as u32);
            0
        } else if self.prefix {
            self.key
                .iter()
                .zip(&self.prev_key)
                .take_while(|(a, b)| a == b)
                .count()
        } else {
            0
        };
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, (self.key.len() - shared) as u64);
        put_varint(&mut self.buf, cell.row.len() as u64);
        // A cell's own TTL leads its value area (the key's type byte says so).
        let ttl_len = if cell.ttl_millis.is_some() { 8 } else { 0 };
        put_varint(&mut self.buf, (ttl_len + cell.value.len()) as u64);
        self.buf.extend_from_slice(&self.key[shared..]);
        if let Some(ttl) = cell.ttl_millis {
            self.buf.extend_from_slice(&ttl.to_be_bytes());
        }
        self.buf.extend_from_slice(&cell.value);
        std::mem::swap(&mut self.key, &mut self.prev_key);
        self.entries += 1;
    }

    /// Appends the restart array and returns the payload; the builder is
    /// empty again afterwards.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        for &r in &self.restarts {
            put_u32_le(&mut self.buf, r);
        }
        put_u32_le(&mut self.buf, self.restarts.len() as u32);
        let cap = self.buf.capacity();
        self.restarts.clear();
        self.prev_key.clear();
        self.entries = 0;
        std::mem::replace(&mut self.buf, Vec::with_capacity(cap))
    }
}

/// A position inside one decoded data block.
///
/// Invariant: when `valid`, `key` holds the full key of the entry that
/// starts at `entry_pos`, `row_len` its row length and `value` its value
/// range; `next_pos` is where the following entry starts; the key's bytes
/// from `shared` on are also in the block, from `suffix_at`.
#[derive(Debug)]
pub(crate) struct BlockCursor {
    data: Bytes,
    entries_end: usize,
    restarts_start: usize,
    restart_count: usize,
    next_pos: usize,
    key: Vec<u8>,
    row_len: usize,
    value: (usize, usize),
    /// The current entry's own TTL, if it has one.
    ttl_millis: Option<u64>,
    /// Bytes of `key` taken from the previous entry.
    shared: usize,
    /// Where the rest of `key` (its unshared bytes) lies in `data`.
    suffix_at: usize,
    valid: bool,
}

impl BlockCursor {
    /// Checks the restart array of a block payload and positions before
    /// its first entry.
    pub(crate) fn new(data: Bytes) -> DecodeResult<Self> {
        let len = data.len();
        if len < 4 {
            return Err("data block shorter than its restart count".to_string());
        }
        let count = u32_le(&data, len - 4, "data block restart count")? as usize;
        if count == 0 {
            return Err("data block without entries".to_string());
        }
        let restarts_start = count
            .checked_mul(4)
            .and_then(|n| (len - 4).checked_sub(n))
            .ok_or_else(|| format!("data block too short for {count} restart points"))?;
        let cursor = BlockCursor {
            data,
            entries_end: restarts_start,
            restarts_start,
            restart_count: count,
            next_pos: 0,
            key: Vec::new(),
            row_len: 0,
            value: (0, 0),
            ttl_millis: None,
            shared: 0,
            suffix_at: 0,
            valid: false,
        };
        // Restart offsets must start at 0 and increase inside the entry
        // area, so a seek can trust them as entry starts.
        let mut prev = None;
        for i in 0..count {
            let r = cursor.restart(i);
            let ok = match prev {
                None => r == 0,
                Some(p) => r > p && r < cursor.entries_end,
            };
            if !ok {
                return Err(format!("restart point {i} at {r} is out of order"));
            }
            prev = Some(r);
        }
        if cursor.entries_end == 0 {
            return Err("data block without entries".to_string());
        }
        Ok(cursor)
    }

    /// Offset of restart point `i`; `new` checked that every one is
    /// inside the block, so this reads 0 (the first entry) only if called
    /// with an index it never checked.
    fn restart(&self, i: usize) -> usize {
        u32_le(&self.data, self.restarts_start + 4 * i, "restart point").unwrap_or(0) as usize
    }

    /// Positions before the entry at restart point `i`.
    fn reset_to_restart(&mut self, i: usize) {
        self.next_pos = self.restart(i);
        self.key.clear();
        self.valid = false;
    }

    /// Positions before the first entry.
    pub(crate) fn rewind(&mut self) {
        self.reset_to_restart(0);
    }

    /// Decodes the next entry; false at the end of the block.
    pub(crate) fn step(&mut self) -> DecodeResult<bool> {
        if self.next_pos >= self.entries_end {
            self.valid = false;
            return Ok(false);
        }
        let area = &self.data[..self.entries_end];
        let mut d = Decoder::at(area, self.next_pos);
        let shared = d.len(MAX_BLOCK_LEN, "shared key length")?;
        let unshared = d.len(MAX_BLOCK_LEN, "unshared key length")?;
        let row_len = d.len(MAX_BLOCK_LEN, "row length")?;
        let value_len = d.len(MAX_BLOCK_LEN, "value length")?;
        if shared > self.key.len() || (shared > 0 && !self.valid) {
            return Err(format!(
                "entry at {} shares {shared} key bytes with a {}-byte previous key",
                self.next_pos,
                if self.valid { self.key.len() } else { 0 }
            ));
        }
        let suffix_at = d.pos();
        let suffix = d.bytes(unshared)?;
        let value_start = d.pos();
        d.bytes(value_len)?;
        self.key.truncate(shared);
        self.key.extend_from_slice(suffix);
        if self.key.len() < KEY_SUFFIX_LEN + row_len {
            return Err(format!(
                "entry at {}: {}-byte key cannot hold a {row_len}-byte row",
                self.next_pos,
                self.key.len()
            ));
        }
        // Validates the type code once, here, so `key_ref` cannot fail.
        let key = decode_key(&self.key, row_len)?;
        self.ttl_millis = None;
        let value_end = value_start + value_len;
        let mut value_start = value_start;
        if key.has_ttl {
            let ttl = area
                .get(value_start..value_start + 8)
                .filter(|_| value_len >= 8)
                .ok_or_else(|| {
                    format!(
                        "entry at {}: a cell with a TTL has only {value_len} value bytes",
                        self.next_pos
                    )
                })?;
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(ttl);
            self.ttl_millis = Some(u64::from_be_bytes(bytes));
            value_start += 8;
        }
        self.row_len = row_len;
        self.value = (value_start, value_end);
        self.shared = shared;
        self.suffix_at = suffix_at;
        self.next_pos = d.pos();
        self.valid = true;
        Ok(true)
    }

    /// The current entry's key (only when `valid`).
    pub(crate) fn key_ref(&self) -> Option<KeyRef<'_>> {
        if !self.valid {
            return None;
        }
        decode_key(&self.key, self.row_len).ok()
    }

    /// The current entry as a cell of `family`; reuses `prev`'s row and
    /// qualifier when they are equal, so a row's cells share them.
    pub(crate) fn cell(&self, family: &Bytes, prev: Option<&Cell>) -> Option<Cell> {
        let k = self.key_ref()?;
        let row = match prev {
            Some(p) if p.row.as_ref() == k.row => p.row.clone(),
            _ => self.key_bytes(0, k.row),
        };
        Some(self.cell_with_row(row, family, prev, &k))
    }

    /// The current entry as a cell of `family` in `row`, which the caller
    /// knows is the entry's row (a point get passes the row it reads).
    pub(crate) fn cell_in_row(
        &self,
        row: &Bytes,
        family: &Bytes,
        prev: Option<&Cell>,
    ) -> Option<Cell> {
        let k = self.key_ref()?;
        Some(self.cell_with_row(row.clone(), family, prev, &k))
    }

    fn cell_with_row(
        &self,
        row: Bytes,
        family: &Bytes,
        prev: Option<&Cell>,
        k: &KeyRef<'_>,
    ) -> Cell {
        let qualifier = match prev {
            Some(p) if p.qualifier.as_ref() == k.qualifier => p.qualifier.clone(),
            _ => self.key_bytes(self.row_len, k.qualifier),
        };
        Cell {
            row,
            family: family.clone(),
            qualifier,
            timestamp: k.timestamp,
            cell_type: k.cell_type,
            sequence_id: k.sequence_id,
            value: self.data.slice(self.value.0..self.value.1),
            ttl_millis: self.ttl_millis,
        }
    }

    /// `part`, the bytes of the current key from `at` on, as a view of the
    /// block when the entry stores them whole (past the bytes it shares
    /// with the previous key: always without prefix encoding); a copy
    /// otherwise. Views cost no allocation; like values, they keep the
    /// block's memory alive while held.
    fn key_bytes(&self, at: usize, part: &[u8]) -> Bytes {
        if at >= self.shared {
            let start = self.suffix_at + (at - self.shared);
            if let Some(view) = self.data.get(start..start + part.len()) {
                if view == part {
                    return self.data.slice(start..start + part.len());
                }
            }
        }
        Bytes::copy_from_slice(part)
    }

    /// Positions at the first entry at or after `target`; false (and not
    /// valid) when every entry sorts before it.
    pub(crate) fn seek(&mut self, target: &Cell, family: &[u8]) -> DecodeResult<bool> {
        self.seek_by(|k| compare_target(target, family, k) == Ordering::Greater)
    }

    /// Positions at the first entry of `row` or of a later row; false (and
    /// not valid) when every entry's row sorts before it.
    pub(crate) fn seek_row(&mut self, row: &[u8]) -> DecodeResult<bool> {
        self.seek_by(|k| k.row < row)
    }

    /// Positions at the first entry for which `before` is false (`before`
    /// must be true for a prefix of the entries, false after it); false
    /// (and not valid) when it is true for every entry.
    fn seek_by(&mut self, before: impl Fn(&KeyRef<'_>) -> bool) -> DecodeResult<bool> {
        // Last restart point whose key is before the target: the answer
        // is at or after it (and before the next restart point's key).
        let (mut lo, mut hi) = (0, self.restart_count);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            self.reset_to_restart(mid);
            if !self.step()? {
                return Err(format!("restart point {mid} has no entry"));
            }
            if self.key_ref().is_some_and(|k| before(&k)) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        self.reset_to_restart(lo);
        while self.step()? {
            if self.key_ref().is_some_and(|k| !before(&k)) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The row of the last entry whose row sorts strictly before `row`, if
    /// any. Leaves the cursor in an unspecified position.
    pub(crate) fn last_row_before(&mut self, row: &[u8]) -> DecodeResult<Option<Vec<u8>>> {
        let (mut lo, mut hi) = (0, self.restart_count);
        // Last restart point whose row is below `row`.
        let mut found_any = false;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            self.reset_to_restart(mid);
            if !self.step()? {
                return Err(format!("restart point {mid} has no entry"));
            }
            let below = self.key_ref().is_some_and(|k| k.row < row);
            if below {
                found_any = true;
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if !found_any {
            return Ok(None);
        }
        self.reset_to_restart(lo - 1);
        let mut last: Option<Vec<u8>> = None;
        while self.step()? {
            match self.key_ref() {
                Some(k) if k.row < row => {
                    if last.as_deref() != Some(k.row) {
                        last = Some(k.row.to_vec());
                    }
                }
                _ => break,
            }
        }
        Ok(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt_types::CellType;

    fn cells(n: usize) -> Vec<Cell> {
        let mut v: Vec<Cell> = (0..n)
            .map(|i| {
                let mut c = Cell::put(
                    format!("row{:03}", i / 3),
                    "f",
                    format!("q{}", i % 3),
                    1000 - i as i64,
                    format!("value-{i}"),
                );
                c.sequence_id = i as u64;
                if i % 7 == 0 {
                    c.cell_type = CellType::DeleteColumn;
                } else if i % 5 == 0 {
                    // Some puts carry their own TTL (a flag on the type
                    // byte, the TTL in front of the value).
                    c.ttl_millis = Some(i as u64 * 1_000);
                }
                c
            })
            .collect();
        v.sort();
        v
    }

    fn build(cells: &[Cell], encoding: DataBlockEncoding) -> Bytes {
        let mut b = DataBlockBuilder::new(encoding, 4096);
        for c in cells {
            b.add(c);
        }
        let size = b.size();
        let out = b.finish();
        assert_eq!(out.len(), size);
        assert!(b.is_empty());
        Bytes::from(out)
    }

    #[test]
    fn blocks_round_trip_and_seek_in_both_encodings() {
        let input = cells(100);
        let family = Bytes::from_static(b"f");
        let mut sizes = vec![];
        for enc in [DataBlockEncoding::None, DataBlockEncoding::Prefix] {
            let data = build(&input, enc);
            sizes.push(data.len());
            let mut cur = BlockCursor::new(data).unwrap();
            let mut out: Vec<Cell> = vec![];
            while cur.step().unwrap() {
                let c = cur.cell(&family, out.last()).unwrap();
                out.push(c);
            }
            assert_eq!(out, input);
            for (i, c) in input.iter().enumerate() {
                assert!(cur.seek(c, b"f").unwrap());
                assert_eq!(cur.cell(&family, None).unwrap(), input[i]);
            }
            let mut past = input[input.len() - 1].clone();
            past.timestamp -= 1;
            assert!(!cur.seek(&past, b"f").unwrap());
            assert_eq!(cur.last_row_before(b"row010").unwrap().unwrap(), b"row009");
            assert_eq!(cur.last_row_before(b"row000").unwrap(), None);
            assert_eq!(cur.last_row_before(b"zzz").unwrap().unwrap(), b"row033");
        }
        assert!(
            sizes[1] < sizes[0],
            "prefix encoding saves space: {sizes:?}"
        );
    }

    #[test]
    fn damaged_blocks_are_errors_not_panics() {
        let data = build(&cells(50), DataBlockEncoding::Prefix);
        for i in 0..data.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = data.to_vec();
                bad[i] ^= bit;
                if let Ok(mut cur) = BlockCursor::new(Bytes::from(bad)) {
                    while let Ok(true) = cur.step() {
                        let _ = cur.cell(&Bytes::new(), None);
                    }
                    let _ = cur.seek(&cells(1)[0], b"f");
                    let _ = cur.last_row_before(b"row010");
                }
            }
        }
        assert!(BlockCursor::new(Bytes::from_static(&[0, 0, 0, 0])).is_err());
        assert!(BlockCursor::new(Bytes::from_static(&[1, 0, 0])).is_err());
    }

    #[test]
    fn a_cell_flagged_with_a_ttl_but_too_short_for_it_is_corruption() {
        let mut c = Cell::put("r", "f", "q", 5, "");
        c.ttl_millis = Some(7);
        let data = build(&[c], DataBlockEncoding::None);
        let mut cur = BlockCursor::new(data.clone()).unwrap();
        assert!(cur.step().unwrap());
        assert_eq!(cur.cell(&Bytes::new(), None).unwrap().ttl_millis, Some(7));
        // The entry's value length (one byte, right after the three key
        // varints: shared 0, unshared, row length) says 8 bytes; make it 7.
        let mut bad = data.to_vec();
        assert_eq!(bad[3], 8);
        bad[3] = 7;
        let mut cur = BlockCursor::new(Bytes::from(bad)).unwrap();
        let error = cur.step().unwrap_err();
        assert!(error.contains("TTL"), "{error}");
    }
}
