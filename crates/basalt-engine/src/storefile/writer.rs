//! Writes one store file from cells in KeyValue order.
//!
//! Data blocks, leaf index blocks and bloom chunks are written as they fill
//! up, so memory stays bounded by one block of each kind plus the root
//! index (one entry per leaf). The bloom index, meta block, root index and
//! trailer follow the last data block.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use basalt_types::{BloomType, Cell, CellType, Compression, Error, Result};

use super::block::DataBlockBuilder;
use super::bloom::{bloom_hash, bloom_key, BloomChunkBuilder, MAX_CHUNK_KEYS};
use super::format::{encode_block, BlockHandle, BlockKind, Trailer, MAX_BLOCK_LEN};
use super::index::{IndexBlockBuilder, FLAG_ROW_CONTINUES};
use super::meta::{self, StoreFileMeta};
use super::WriterOptions;
use crate::fs::{FileStore, FileWriter};

/// Writes a store file. Cells must be added in strictly increasing
/// KeyValue order ([`Cell::compare_key`], sequence id included); the file
/// appears at its path only when [`StoreFileWriter::finish`] succeeds.
/// After any error the writer refuses further use: drop it (nothing is
/// published) and start again.
#[derive(Debug)]
pub struct StoreFileWriter {
    path: PathBuf,
    out: Box<dyn FileWriter>,
    opts: WriterOptions,
    offset: u64,
    block: DataBlockBuilder,
    /// Entries for data blocks not yet written out in a leaf index block.
    leaf: IndexBlockBuilder,
    /// Entries for written leaf index blocks.
    root: IndexBlockBuilder,
    leaves_written: u64,
    bloom_chunk: BloomChunkBuilder,
    bloom_index: IndexBlockBuilder,
    /// First key of the bloom chunk being filled: row length and
    /// `row ++ qualifier`.
    bloom_first: (usize, Vec<u8>),
    /// Key of the last cell added (its value left out).
    prev: Option<Cell>,
    meta: StoreFileMeta,
    scratch: Vec<u8>,
    bloom_scratch: Vec<u8>,
    failed: bool,
}

impl StoreFileWriter {
    /// Starts a file at `path` (which must not exist).
    pub fn new(store: Arc<dyn FileStore>, path: &Path, options: WriterOptions) -> Result<Self> {
        if options.block_size == 0 || options.index_block_size == 0 {
            return Err(Error::invalid("block sizes must be positive"));
        }
        if options.family.is_empty() {
            return Err(Error::invalid("a store file needs a family name"));
        }
        let bloom_chunk = if options.bloom == BloomType::None {
            BloomChunkBuilder::default()
        } else {
            BloomChunkBuilder::with_expected(options.expected_cells)
        };
        let out = store.create(path)?;
        let mut meta = StoreFileMeta::empty(options.family.clone());
        meta.bloom = options.bloom;
        meta.compression = options.compression;
        meta.encoding = options.encoding;
        meta.block_size = u32::try_from(options.block_size).unwrap_or(u32::MAX);
        meta.created_at_ms = options.created_at_ms;
        // Known from the first cell on: no put yet is "later than any".
        meta.earliest_put_timestamp = Some(i64::MAX);
        meta.properties = options.properties.clone();
        Ok(StoreFileWriter {
            path: path.to_path_buf(),
            out,
            block: DataBlockBuilder::new(options.encoding, options.block_size + 1024),
            opts: options,
            offset: 0,
            leaf: IndexBlockBuilder::default(),
            root: IndexBlockBuilder::default(),
            leaves_written: 0,
            bloom_chunk,
            bloom_index: IndexBlockBuilder::default(),
            bloom_first: (0, Vec::new()),
            prev: None,
            meta,
            scratch: Vec::new(),
            bloom_scratch: Vec::new(),
            failed: false,
        })
    }

    /// The path the file will be published at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Cells added so far.
    pub fn cell_count(&self) -> u64 {
        self.meta.cell_count
    }

    /// Bytes written to the file so far (excludes the block being filled):
    /// lets a compaction cut its output into files of a target size.
    pub fn bytes_written(&self) -> u64 {
        self.offset
    }

    /// Sets a free-form property recorded in the file's metadata (e.g.
    /// "major compaction output"); replaces one set earlier or in the
    /// options.
    pub fn set_property(&mut self, key: impl Into<String>, value: impl Into<Bytes>) {
        self.meta.properties.insert(key.into(), value.into());
    }

    /// Appends a cell. Errors: a cell of another family or not strictly
    /// after the previous one (invalid argument, the writer stays usable),
    /// a cell too large for a block, or an I/O error (the writer is dead).
    pub fn add(&mut self, cell: &Cell) -> Result<()> {
        if self.failed {
            return Err(Error::invalid(format!(
                "store file writer for {} failed earlier",
                self.path.display()
            )));
        }
        if cell.family != self.opts.family {
            return Err(Error::invalid(format!(
                "cell {cell:?} is not in family {}",
                String::from_utf8_lossy(&self.opts.family)
            )));
        }
        if let Some(prev) = &self.prev {
            if !cell.compare_key(prev).is_gt() {
                return Err(Error::invalid(format!(
                    "store file cells out of order: {cell:?} after {prev:?}"
                )));
            }
        }
        let entry_len = cell.row.len() + cell.qualifier.len() + cell.value.len() + 64;
        if entry_len > MAX_BLOCK_LEN - 64 {
            return Err(Error::invalid(format!(
                "cell of {entry_len} bytes exceeds the store file block limit of {MAX_BLOCK_LEN}"
            )));
        }
        let result = self.add_unchecked(cell, entry_len);
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn add_unchecked(&mut self, cell: &Cell, entry_len: usize) -> Result<()> {
        // A block never splits a cell. Once it reaches BLOCKSIZE it is
        // closed at the next row boundary, so that a row smaller than a
        // block lies in one block and a point lookup reads one block; a
        // wide row is cut mid-row at twice BLOCKSIZE; and no block passes
        // the hard limit.
        if !self.block.is_empty() {
            let size = self.block.size();
            let new_row = self.prev.as_ref().is_some_and(|p| p.row != cell.row);
            if size + entry_len > MAX_BLOCK_LEN
                || (size >= self.opts.block_size
                    && (new_row || size >= self.opts.block_size.saturating_mul(2)))
            {
                self.flush_data_block(!new_row)?;
            }
        }
        if self.opts.bloom != BloomType::None {
            self.add_to_bloom(cell)?;
        }
        self.block.add(cell);
        let m = &mut self.meta;
        m.cell_count += 1;
        m.type_counts.count(cell.cell_type);
        if cell.cell_type == CellType::Put {
            m.earliest_put_timestamp = m.earliest_put_timestamp.map(|t| t.min(cell.timestamp));
        }
        m.min_timestamp = m.min_timestamp.min(cell.timestamp);
        m.max_timestamp = m.max_timestamp.max(cell.timestamp);
        m.min_sequence_id = m.min_sequence_id.min(cell.sequence_id);
        m.max_sequence_id = m.max_sequence_id.max(cell.sequence_id);
        let key = Cell {
            value: Bytes::new(),
            ..cell.clone()
        };
        if m.first_key.is_none() {
            m.first_key = Some(key.clone());
        }
        self.prev = Some(key);
        Ok(())
    }

    fn add_to_bloom(&mut self, cell: &Cell) -> Result<()> {
        // Keys arrive sorted, so a repeated bloom key can only repeat the
        // previous cell's: skipping those counts each key once.
        let new_key = match (&self.prev, self.opts.bloom) {
            (None, _) => true,
            (Some(p), BloomType::Row) => p.row != cell.row,
            (Some(p), _) => p.row != cell.row || p.qualifier != cell.qualifier,
        };
        if !new_key {
            return Ok(());
        }
        if self.bloom_chunk.len() >= MAX_CHUNK_KEYS {
            self.flush_bloom_chunk()?;
        }
        let qualifier: &[u8] = if self.opts.bloom == BloomType::RowCol {
            &cell.qualifier
        } else {
            &[]
        };
        if self.bloom_chunk.is_empty() {
            self.bloom_first.0 = cell.row.len();
            self.bloom_first.1.clear();
            self.bloom_first.1.extend_from_slice(&cell.row);
            self.bloom_first.1.extend_from_slice(qualifier);
        }
        bloom_key(
            self.opts.bloom,
            &cell.row,
            qualifier,
            &mut self.bloom_scratch,
        );
        self.bloom_chunk.add(bloom_hash(&self.bloom_scratch));
        self.meta.bloom_key_count += 1;
        Ok(())
    }

    fn write_block(
        &mut self,
        kind: BlockKind,
        codec: Compression,
        payload: &[u8],
    ) -> Result<BlockHandle> {
        encode_block(kind, codec, payload, self.offset, &mut self.scratch)?;
        self.out.write_all(&self.scratch)?;
        let handle = BlockHandle {
            offset: self.offset,
            size: self.scratch.len() as u32,
        };
        self.offset += self.scratch.len() as u64;
        Ok(handle)
    }

    /// `row_continues`: the next cell is in the same row as this block's
    /// last one (a wide row cut mid-row), recorded in the index entry.
    fn flush_data_block(&mut self, row_continues: bool) -> Result<()> {
        let Some(prev) = &self.prev else {
            return Ok(());
        };
        let row_len = prev.row.len();
        let last_key = self.block.last_key().to_vec();
        let payload = self.block.finish();
        self.meta.uncompressed_data_bytes += payload.len() as u64;
        let handle = self.write_block(BlockKind::Data, self.opts.compression, &payload)?;
        self.meta.data_block_count += 1;
        let flags = if row_continues { FLAG_ROW_CONTINUES } else { 0 };
        self.leaf.add_flagged(row_len, &last_key, handle, flags);
        if self.leaf.size() >= self.opts.index_block_size {
            self.flush_leaf()?;
        }
        Ok(())
    }

    fn flush_leaf(&mut self) -> Result<()> {
        let (key, row_len) = self.leaf.last_key();
        let key = key.to_vec();
        let payload = self.leaf.finish();
        let handle = self.write_block(BlockKind::LeafIndex, Compression::None, &payload)?;
        self.root.add(row_len, &key, handle);
        self.leaves_written += 1;
        Ok(())
    }

    fn flush_bloom_chunk(&mut self) -> Result<()> {
        let payload = self.bloom_chunk.finish();
        let handle = self.write_block(BlockKind::Bloom, Compression::None, &payload)?;
        let (row_len, key) = std::mem::take(&mut self.bloom_first);
        self.bloom_index.add(row_len, &key, handle);
        self.bloom_first = (0, key);
        Ok(())
    }

    /// Records `ts` as the file's oldest put instead of the oldest put
    /// written: for a file whose cells include puts HBase would not have
    /// written (see `compaction::KeptPutFloor`). Ignored after a failure.
    pub fn record_earliest_put(&mut self, ts: i64) {
        self.meta.earliest_put_timestamp = Some(ts);
    }

    /// Writes the remaining blocks, the metadata and the trailer, then
    /// makes the file durable and publishes it (see [`FileWriter::finish`]).
    /// Returns the file's metadata, `file_size` included.
    pub fn finish(mut self) -> Result<StoreFileMeta> {
        if self.failed {
            return Err(Error::invalid(format!(
                "store file writer for {} failed earlier",
                self.path.display()
            )));
        }
        if !self.block.is_empty() {
            self.flush_data_block(false)?;
        }
        if !self.bloom_chunk.is_empty() {
            self.flush_bloom_chunk()?;
        }
        let index_levels = if self.leaves_written == 0 {
            1
        } else {
            if !self.leaf.is_empty() {
                self.flush_leaf()?;
            }
            2
        };
        let bloom_index = if self.bloom_index.is_empty() {
            BlockHandle::default()
        } else {
            let payload = self.bloom_index.finish();
            self.write_block(BlockKind::BloomIndex, Compression::None, &payload)?
        };
        self.meta.last_key = self.prev.take();
        let meta_payload = meta::encode(&self.meta);
        let meta = self.write_block(BlockKind::Meta, Compression::None, &meta_payload)?;
        let root_payload = if index_levels == 1 {
            self.leaf.finish()
        } else {
            self.root.finish()
        };
        let root_index =
            self.write_block(BlockKind::RootIndex, Compression::None, &root_payload)?;
        let trailer = Trailer {
            root_index,
            meta,
            bloom_index,
            data_block_count: self.meta.data_block_count,
            index_levels,
        };
        self.out.write_all(&trailer.encode())?;
        let size = self.out.finish()?;
        self.meta.file_size = size;
        Ok(self.meta)
    }
}
