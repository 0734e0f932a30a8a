//! Store files: a family's cells, sorted and immutable, in blocks with an
//! index, a bloom filter, metadata and a checksummed trailer (Basalt's
//! HFile). `docs/store-file-format.md` describes the bytes.
//!
//! [`StoreFileWriter`] writes one from cells in KeyValue order;
//! [`StoreFileReader`] opens one and hands out [`StoreFileSource`]s, which
//! implement [`crate::source::CellSource`] for the read path. Blocks go
//! through the shared [`crate::block_cache::BlockCache`]; files through a
//! [`crate::fs::FileStore`].
//!
//! Modules: `format` (key encoding, block framing, trailer), `block` (data
//! blocks), `index` (index blocks), `bloom`, `compression`, `meta`.

mod block;
mod bloom;
mod compression;
mod format;
mod index;
mod meta;
#[doc(hidden)]
pub mod raw;
mod reader;
mod writer;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use bytes::Bytes;

use basalt_types::{BloomType, ColumnFamilyDescriptor, Compression, DataBlockEncoding};

pub use format::{FORMAT_VERSION, MAX_BLOCK_LEN, TRAILER_LEN};
pub use meta::{CellTypeCounts, StoreFileMeta};
pub use reader::{ReaderOptions, ReaderStats, StoreFileReader, StoreFileSource};
pub use writer::StoreFileWriter;

/// Default target size of an index block before the index grows a second
/// level. Small on purpose: a point read binary-searches the root (held in
/// memory, its upper levels hot in the CPU cache) and then one leaf, and a
/// 64 KiB leaf of ~1,400 entries cost ~11 cache-missing probes per file
/// (25% of a cold readrandom's samples against 16% with 4 KiB leaves).
/// RocksDB's partitioned indexes use the same 4 KiB.
pub const DEFAULT_INDEX_BLOCK_SIZE: usize = 4 * 1024;

/// How to write a store file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterOptions {
    /// The column family of every cell (not stored per cell).
    pub family: Bytes,
    /// BLOCKSIZE: a data block is closed at the first row boundary after
    /// its uncompressed size reaches this, or mid-row at twice this (a
    /// block never splits a cell, so one big cell makes one big block).
    pub block_size: usize,
    /// COMPRESSION of data blocks.
    pub compression: Compression,
    /// DATA_BLOCK_ENCODING. PREFIX, DIFF and FAST_DIFF all select the one
    /// prefix-compression scheme; NONE stores keys whole.
    pub encoding: DataBlockEncoding,
    /// BLOOMFILTER.
    pub bloom: BloomType,
    /// Roughly how many cells will be written (0 if unknown). Only a
    /// hint for preallocating the bloom chunk: chunks are sized from the
    /// keys actually written, so a wrong guess costs nothing else.
    pub expected_cells: u64,
    /// An index block is closed once it reaches this size; when a file
    /// needs more than one, the index gets two levels.
    pub index_block_size: usize,
    /// Creation time recorded in the metadata, ms since the epoch (from
    /// the region's clock).
    pub created_at_ms: i64,
    /// Free-form properties recorded in the metadata (more can be set
    /// with [`StoreFileWriter::set_property`]).
    pub properties: BTreeMap<String, Bytes>,
}

impl WriterOptions {
    /// Options for `family` with HBase's defaults: 64 KB blocks, no
    /// compression, no encoding, ROW bloom.
    pub fn new(family: impl Into<Bytes>) -> Self {
        WriterOptions {
            family: family.into(),
            block_size: basalt_types::descriptor::DEFAULT_BLOCK_SIZE as usize,
            compression: Compression::None,
            encoding: DataBlockEncoding::None,
            bloom: BloomType::Row,
            expected_cells: 0,
            index_block_size: DEFAULT_INDEX_BLOCK_SIZE,
            created_at_ms: 0,
            properties: BTreeMap::new(),
        }
    }

    /// Options following a family descriptor's BLOCKSIZE, COMPRESSION,
    /// DATA_BLOCK_ENCODING and BLOOMFILTER.
    pub fn for_family(family: &ColumnFamilyDescriptor, created_at_ms: i64) -> Self {
        WriterOptions {
            block_size: family.block_size as usize,
            compression: family.compression,
            encoding: family.data_block_encoding,
            bloom: family.bloom_filter,
            created_at_ms,
            ..WriterOptions::new(Bytes::copy_from_slice(family.name().as_bytes()))
        }
    }
}
