//! The block-level encoders and decoders of the store-file format, exposed
//! so that the garbage-input tests (`tests/garbage_input.rs`) can feed the
//! decoders bytes that never passed a checksum. Not a stable API: readers
//! of store files use [`super::StoreFileReader`].
//!
//! The decoders hand out borrowed views through callbacks instead of
//! collecting owned values, as the reader does: a block's keys may share
//! prefixes (and an index's entries may share bytes), so materialising
//! every entry could cost more than the block itself, while walking it
//! costs at most one key buffer.

use bytes::Bytes;

use basalt_types::{Cell, DataBlockEncoding};

use super::block::{BlockCursor, DataBlockBuilder};
use super::bloom::{bloom_hash, BloomChunk, BloomChunkBuilder};
use super::format::BlockHandle;
use super::index::{IndexBlock, IndexBlockBuilder};

/// A decode result; the error says what is damaged and where in the
/// payload (what the reader wraps in `Error::Corruption` with the file).
pub type RawResult<T> = std::result::Result<T, String>;

fn corrupt(what: &str, message: String) -> String {
    format!("{what}: {message}")
}

/// Encodes `cells` (in KeyValue order) as one data block payload.
pub fn encode_data_block(cells: &[Cell], encoding: DataBlockEncoding) -> Vec<u8> {
    let mut b = DataBlockBuilder::new(encoding, 4096);
    for c in cells {
        b.add(c);
    }
    b.finish()
}

/// Decodes every entry of a data block payload in order, handing each to
/// `each` as a cell of `family` (rows and qualifiers shared with the
/// previous cell when equal, values sharing `payload`). Returns the entry
/// count; damage is an error message.
pub fn decode_data_block(
    payload: Bytes,
    family: &Bytes,
    mut each: impl FnMut(Cell),
) -> RawResult<usize> {
    let err = |m| corrupt("data block", m);
    let mut cursor = BlockCursor::new(payload).map_err(err)?;
    let mut prev: Option<Cell> = None;
    let mut n = 0;
    while cursor.step().map_err(err)? {
        if let Some(cell) = cursor.cell(family, prev.as_ref()) {
            each(cell.clone());
            prev = Some(cell);
        }
        n += 1;
    }
    Ok(n)
}

/// Seeks a data block payload to the first cell at or after `target` (the
/// binary search over restart points the read path uses).
pub fn seek_data_block(payload: Bytes, family: &Bytes, target: &Cell) -> RawResult<Option<Cell>> {
    let err = |m| corrupt("data block", m);
    let mut cursor = BlockCursor::new(payload).map_err(err)?;
    if cursor.seek(target, family).map_err(err)? {
        Ok(cursor.cell(family, None))
    } else {
        Ok(None)
    }
}

/// One index block entry, as written or as read (borrowing the block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntryView<'a> {
    /// How many leading bytes of `key` are the row.
    pub row_len: usize,
    /// The entry's key.
    pub key: &'a [u8],
    /// Offset of the block the entry points to.
    pub offset: u64,
    /// Size of that block.
    pub size: u32,
    /// Entry flags.
    pub flags: u64,
}

/// Encodes an index block payload.
pub fn encode_index_block(entries: &[IndexEntryView<'_>]) -> Vec<u8> {
    let mut b = IndexBlockBuilder::default();
    for e in entries {
        let handle = BlockHandle {
            offset: e.offset,
            size: e.size,
        };
        b.add_flagged(e.row_len, e.key, handle, e.flags);
    }
    b.finish()
}

/// Decodes every entry of an index block payload in order, handing each
/// to `each`; returns the entry count.
pub fn decode_index_block(
    payload: Bytes,
    mut each: impl FnMut(IndexEntryView<'_>),
) -> RawResult<usize> {
    let err = |m| corrupt("index block", m);
    let block = IndexBlock::new(payload).map_err(err)?;
    for i in 0..block.len() {
        let e = block.entry(i).map_err(err)?;
        each(IndexEntryView {
            row_len: e.row_len,
            key: e.key,
            offset: e.handle.offset,
            size: e.handle.size,
            flags: e.flags,
        });
    }
    Ok(block.len())
}

/// Binary searches an index block payload for the first entry whose key
/// is not below `key` (as a lookup does); `None` when every key is below.
pub fn search_index_block(payload: Bytes, key: &[u8]) -> RawResult<Option<usize>> {
    let err = |m| corrupt("index block", m);
    let block = IndexBlock::new(payload).map_err(err)?;
    let at = block.partition_point(|e| Ok(e.key < key)).map_err(err)?;
    Ok((at < block.len()).then_some(at))
}

/// Encodes a bloom chunk holding `keys`.
pub fn encode_bloom_chunk<'a>(keys: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut b = BloomChunkBuilder::default();
    for k in keys {
        b.add(bloom_hash(k));
    }
    b.finish()
}

/// A decoded bloom chunk.
#[derive(Debug, Clone)]
pub struct BloomChunkView(BloomChunk);

impl BloomChunkView {
    /// False only when `key` was certainly not added.
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.0.may_contain(bloom_hash(key))
    }
}

/// Decodes a bloom chunk payload.
pub fn decode_bloom_chunk(payload: Bytes) -> RawResult<BloomChunkView> {
    BloomChunk::new(payload)
        .map(BloomChunkView)
        .map_err(|m| corrupt("bloom chunk", m))
}
