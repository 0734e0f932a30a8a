//! Index blocks: sorted entries of (key, block handle), binary searchable
//! without decoding the whole block.
//!
//! ```text
//! entry*  entry offset (u32 LE)*  entry count (u32 LE)
//!
//! entry: row_len varint | key_len varint | key bytes | offset varint | size varint | flags varint
//! ```
//!
//! `flags` bit 0 (data index leaf entries only): the next data block
//! continues the row this block ends with (the row was cut mid-row). When
//! it is clear, a read that wants nothing past this block's last row can
//! stop without loading the next block.
//!
//! The same layout serves the data index (root and leaf levels; the key is
//! the encoded key of the **last** cell of the block the entry points to)
//! and the bloom index (the key is the first `row ++ qualifier` of the bloom
//! chunk; `row_len` splits it).

use bytes::Bytes;

use super::format::{put_varint, BlockHandle, DecodeResult, Decoder, MAX_BLOCK_LEN};
use crate::coding::{put_u32_le, u32_le};

/// Builds an index block.
#[derive(Debug, Default)]
pub(crate) struct IndexBlockBuilder {
    buf: Vec<u8>,
    offsets: Vec<u32>,
    last_key: Vec<u8>,
    last_row_len: usize,
}

impl IndexBlockBuilder {
    pub(crate) fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// Payload size if finished now.
    pub(crate) fn size(&self) -> usize {
        self.buf.len() + 4 * self.offsets.len() + 4
    }

    /// The key of the last entry added, with its row length.
    pub(crate) fn last_key(&self) -> (&[u8], usize) {
        (&self.last_key, self.last_row_len)
    }

    pub(crate) fn add(&mut self, row_len: usize, key: &[u8], handle: BlockHandle) {
        self.add_flagged(row_len, key, handle, 0);
    }

    /// Adds an entry with flags (see the module docs).
    pub(crate) fn add_flagged(
        &mut self,
        row_len: usize,
        key: &[u8],
        handle: BlockHandle,
        flags: u64,
    ) {
        self.offsets.push(self.buf.len() as u32);
        put_varint(&mut self.buf, row_len as u64);
        put_varint(&mut self.buf, key.len() as u64);
        self.buf.extend_from_slice(key);
        put_varint(&mut self.buf, handle.offset);
        put_varint(&mut self.buf, u64::from(handle.size));
        put_varint(&mut self.buf, flags);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.last_row_len = row_len;
    }

    /// The payload; the builder is empty afterwards.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for &o in &self.offsets {
            put_u32_le(&mut out, o);
        }
        put_u32_le(&mut out, self.offsets.len() as u32);
        self.offsets.clear();
        out
    }
}

/// One entry of an index block, borrowing its key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IndexEntry<'a> {
    pub row_len: usize,
    pub key: &'a [u8],
    pub handle: BlockHandle,
    pub flags: u64,
}

/// Index entry flag: the next data block continues this block's last row.
pub(crate) const FLAG_ROW_CONTINUES: u64 = 1;

/// A read-only view of an index block payload. Entries decode lazily and
/// every decode is bounds checked.
#[derive(Debug, Clone)]
pub(crate) struct IndexBlock {
    data: Bytes,
    offsets_start: usize,
    count: usize,
}

impl IndexBlock {
    pub(crate) fn new(data: Bytes) -> DecodeResult<Self> {
        let len = data.len();
        if len < 4 {
            return Err("index block shorter than its entry count".to_string());
        }
        let count = u32_le(&data, len - 4, "index block entry count")? as usize;
        let offsets_start = count
            .checked_mul(4)
            .and_then(|n| (len - 4).checked_sub(n))
            .ok_or_else(|| format!("index block too short for {count} entries"))?;
        Ok(IndexBlock {
            data,
            offsets_start,
            count,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub(crate) fn entry(&self, i: usize) -> DecodeResult<IndexEntry<'_>> {
        if i >= self.count {
            return Err(format!("index entry {i} of {}", self.count));
        }
        let p = self.offsets_start + 4 * i;
        let start = u32_le(&self.data, p, "index entry offset")? as usize;
        if start >= self.offsets_start {
            return Err(format!("index entry {i} starts outside the entry area"));
        }
        let mut d = Decoder::at(&self.data[..self.offsets_start], start);
        let row_len = d.len(MAX_BLOCK_LEN, "index row length")?;
        let key_len = d.len(MAX_BLOCK_LEN, "index key length")?;
        let key = d.bytes(key_len)?;
        if row_len > key.len() {
            return Err(format!("index entry {i}: row longer than its key"));
        }
        let offset = d.varint()?;
        let size = u32::try_from(d.varint()?)
            .map_err(|_| format!("index entry {i}: block size does not fit 32 bits"))?;
        let flags = d.varint()?;
        Ok(IndexEntry {
            row_len,
            key,
            handle: BlockHandle { offset, size },
            flags,
        })
    }

    /// The first entry index for which `before` is false (entries must be
    /// partitioned: all `before` ones first); `len()` if none.
    pub(crate) fn partition_point(
        &self,
        mut before: impl FnMut(&IndexEntry<'_>) -> DecodeResult<bool>,
    ) -> DecodeResult<usize> {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(&self.entry(mid)?)? {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_blocks_round_trip_and_search() {
        let mut b = IndexBlockBuilder::default();
        for i in 0..100u64 {
            let key = format!("key{i:04}");
            b.add(
                3,
                key.as_bytes(),
                BlockHandle {
                    offset: i * 100,
                    size: 100,
                },
            );
        }
        let size = b.size();
        let data = b.finish();
        assert_eq!(data.len(), size);
        let ix = IndexBlock::new(Bytes::from(data)).unwrap();
        assert_eq!(ix.len(), 100);
        let e = ix.entry(42).unwrap();
        assert_eq!(e.key, b"key0042");
        assert_eq!(e.handle.offset, 4200);
        let p = ix.partition_point(|e| Ok(e.key < &b"key0050"[..])).unwrap();
        assert_eq!(p, 50);
        assert!(ix.entry(100).is_err());
    }

    #[test]
    fn damaged_index_blocks_are_errors() {
        let mut b = IndexBlockBuilder::default();
        for i in 0..10u64 {
            b.add(
                1,
                b"kk",
                BlockHandle {
                    offset: i,
                    size: 20,
                },
            );
        }
        let data = b.finish();
        for i in 0..data.len() {
            let mut bad = data.clone();
            bad[i] ^= 0xff;
            if let Ok(ix) = IndexBlock::new(Bytes::from(bad)) {
                for j in 0..ix.len().min(20) {
                    let _ = ix.entry(j);
                }
            }
        }
    }
}
