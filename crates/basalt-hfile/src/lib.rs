//! A checked reader for HBase's store files: HFile v3 as HBase 2.x writes
//! it (docs/hfile-format.md describes the format as read here).
//!
//! [`HFileReader::open`] (a path), [`HFileReader::from_ranges`] (a file
//! read by ranges through a read-ahead window, such as an object) or
//! [`HFileReader::from_bytes`] reads the trailer and the load-on-open section; [`HFileReader::cells`] yields
//! every cell in file order, [`HFileReader::seek`] the cells from a row on
//! (through the block index), [`HFileReader::might_contain`] asks the row
//! Bloom filter. Every data block encoding (NONE, PREFIX, DIFF, FAST_DIFF,
//! ROW_INDEX_V1), the compressions NONE, GZ, SNAPPY, LZ4 and ZSTD, both
//! checksum types, tags (compressed or not) and memstore timestamps are
//! read.
//!
//! Input is untrusted: a malformed file is an
//! [`Error::Corruption`](basalt_types::Error::Corruption) naming the file,
//! the byte offset and what was wrong; no length is allocated before it is
//! checked against the bytes that are there.

mod block;
mod bloom;
mod cell;
mod compression;
mod cursor;
mod encoding;
mod fileinfo;
mod index;
mod key;
mod proto;
mod reader;
mod trailer;

pub use block::{Block, BlockHeader, BlockType, ChecksumType, HEADER_SIZE, MAX_BLOCK_SIZE};
pub use bloom::BloomMeta;
pub use cell::{CellConverter, HFileCell, Tag, TTL_TAG_TYPE};
pub use compression::Codec;
pub use encoding::{CellFormat, DataBlockEncoding};
pub use fileinfo::{keys as file_info_keys, FileInfo};
pub use index::IndexEntry;
pub use key::{compare_keys, parse_key, KeyRef};
pub use reader::{Cells, HFileReader, ReadRange, DEFAULT_READ_AHEAD};
pub use trailer::{Trailer, TRAILER_MAGIC};
