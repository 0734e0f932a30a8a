//! Opening an HFile and reading its cells.
//!
//! Opening reads the trailer and the load-on-open section (root data
//! index, meta index, file info, Bloom metadata). Cells are read block by
//! block: from the first data block on, or from the block the data index
//! names for a row. Every failure is [`Error::Corruption`] naming the file,
//! the byte offset of the damaged structure (the block's offset for
//! anything inside a block) and what was wrong.

use std::cmp::Ordering;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use basalt_types::{Error, Result};
use bytes::Bytes;

use crate::block::{self, Block, BlockHeader, BlockType, HEADER_SIZE};
use crate::bloom::BloomMeta;
use crate::cell::HFileCell;
use crate::compression::Codec;
use crate::cursor::Cursor;
use crate::encoding::{decode_data_block, CellFormat, DataBlockEncoding};
use crate::fileinfo::{keys, FileInfo};
use crate::index::{locate, parse_non_root, parse_root, IndexEntry};
use crate::key::first_on_row;
use crate::trailer::{self, Trailer, MAX_TRAILER_SIZE};

/// Where the file's bytes come from.
#[derive(Debug)]
enum Source {
    Memory(Bytes),
    File(Mutex<File>),
    Ranges(RangeSource),
}

/// Reads `len` bytes at `offset` of one file, wherever it is stored (an
/// object store, a shared directory): [`HFileReader::from_ranges`].
pub type ReadRange = Box<dyn Fn(u64, usize) -> Result<Bytes> + Send + Sync>;

/// How many bytes [`HFileReader::from_ranges`] asks for at once unless
/// told otherwise.
pub const DEFAULT_READ_AHEAD: usize = 4 << 20;

/// A file read by ranges through a read-ahead window.
///
/// Why a window: a scan reads each data block as two ranges (its header,
/// then the block), which on object storage would be two `GET`s a block,
/// and reading a whole file first would hold all of it in memory (HBase
/// writes store files of several GiB). With the window a scan costs one
/// range a window and holds about one window.
struct RangeSource {
    read: ReadRange,
    read_ahead: usize,
    /// The bytes last read and the offset they start at.
    window: Mutex<(u64, Bytes)>,
}

impl std::fmt::Debug for RangeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeSource")
            .field("read_ahead", &self.read_ahead)
            .finish_non_exhaustive()
    }
}

/// An open HFile.
#[derive(Debug)]
pub struct HFileReader {
    path: PathBuf,
    source: Source,
    len: u64,
    trailer: Trailer,
    file_info: FileInfo,
    root_index: Vec<IndexEntry>,
    meta_index: Vec<IndexEntry>,
    general_bloom: Option<BloomMeta>,
    delete_family_bloom: Option<BloomMeta>,
    format: CellFormat,
    encoding: DataBlockEncoding,
    decode_mvcc: bool,
}

impl HFileReader {
    /// Opens the HFile at `path`; blocks are read from the file as needed.
    pub fn open(path: impl AsRef<Path>) -> Result<HFileReader> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        Self::init(path, Source::File(Mutex::new(file)), len)
    }

    /// Reads an HFile held in memory; `name` names it in errors.
    pub fn from_bytes(name: impl Into<PathBuf>, bytes: impl Into<Bytes>) -> Result<HFileReader> {
        let bytes = bytes.into();
        let len = bytes.len() as u64;
        Self::init(name.into(), Source::Memory(bytes), len)
    }

    /// Reads an HFile of `len` bytes by ranges: `read(offset, len)` gives
    /// the bytes at `offset`. Ranges of `read_ahead` bytes (at least one
    /// block's header) are read and kept, so a scan asks for one range per
    /// `read_ahead` bytes and holds about that much; `name` names the file
    /// in errors.
    pub fn from_ranges(
        name: impl Into<PathBuf>,
        len: u64,
        read_ahead: usize,
        read: ReadRange,
    ) -> Result<HFileReader> {
        let source = RangeSource {
            read,
            read_ahead: read_ahead.max(HEADER_SIZE),
            window: Mutex::new((0, Bytes::new())),
        };
        Self::init(name.into(), Source::Ranges(source), len)
    }

    fn init(path: PathBuf, source: Source, len: u64) -> Result<HFileReader> {
        let mut r = HFileReader {
            path,
            source,
            len,
            trailer: Trailer {
                major_version: 0,
                minor_version: 0,
                offset: 0,
                file_info_offset: 0,
                load_on_open_offset: 0,
                uncompressed_data_index_size: 0,
                total_uncompressed_bytes: 0,
                data_index_count: 0,
                meta_index_count: 0,
                entry_count: 0,
                num_data_index_levels: 1,
                first_data_block_offset: 0,
                last_data_block_offset: 0,
                comparator_class_name: String::new(),
                compression: Codec::None,
                encrypted: false,
            },
            file_info: FileInfo::default(),
            root_index: Vec::new(),
            meta_index: Vec::new(),
            general_bloom: None,
            delete_family_bloom: None,
            format: CellFormat {
                includes_tags: false,
                tags_compressed: false,
                includes_mvcc: false,
            },
            encoding: DataBlockEncoding::None,
            decode_mvcc: false,
        };
        let tail_len = len.min(MAX_TRAILER_SIZE);
        let tail = r.read_at(len - tail_len, tail_len as usize)?;
        r.trailer = trailer::parse(&tail, len).map_err(|(at, m)| r.corrupt(at, m))?;
        if r.trailer.encrypted {
            return Err(r.corrupt(
                r.trailer.offset,
                "the file is encrypted (trailer field 13), which this reader does not support"
                    .to_string(),
            ));
        }
        r.load_on_open()?;
        Ok(r)
    }

    /// Reads the load-on-open section: root data index, meta index, file
    /// info, then any Bloom metadata, each block right after the last.
    fn load_on_open(&mut self) -> Result<()> {
        let end = self.trailer.offset;
        let mut at = self.trailer.load_on_open_offset;
        let root = self.read_block(at, end, None)?;
        self.expect_type(&root, BlockType::RootIndex)?;
        let mut c = Cursor::new(&root.payload);
        self.root_index = parse_root(&mut c, self.trailer.data_index_count as usize)
            .map_err(|m| self.corrupt(at, format!("root data index: {m}")))?;
        // What follows the entries is the mid-key metadata (multi-level
        // indexes) or nothing.
        let rest = c.remaining();
        if rest != 0 && rest != 16 {
            return Err(self.corrupt(
                at,
                format!("root data index has {rest} bytes after its entries (0 or 16 expected)"),
            ));
        }
        at += root.header.on_disk_size() as u64;

        let meta = self.read_block(at, end, None)?;
        self.expect_type(&meta, BlockType::RootIndex)?;
        let mut c = Cursor::new(&meta.payload);
        self.meta_index = parse_root(&mut c, self.trailer.meta_index_count as usize)
            .map_err(|m| self.corrupt(at, format!("meta index: {m}")))?;
        at += meta.header.on_disk_size() as u64;

        if at != self.trailer.file_info_offset {
            return Err(self.corrupt(
                at,
                format!(
                    "file info expected after the meta index, at {at}; the trailer says {}",
                    self.trailer.file_info_offset
                ),
            ));
        }
        let info = self.read_block(at, end, None)?;
        self.expect_type(&info, BlockType::FileInfo)?;
        self.file_info = FileInfo::parse(&info.payload)
            .map_err(|m| self.corrupt(at, format!("file info: {m}")))?;
        at += info.header.on_disk_size() as u64;

        while at < end {
            let b = self.read_block(at, end, None)?;
            let meta = || {
                BloomMeta::parse(&b.payload)
                    .map_err(|m| self.corrupt(at, format!("{:?}: {m}", b.header.block_type)))
            };
            match b.header.block_type {
                BlockType::GeneralBloomMeta => self.general_bloom = Some(meta()?),
                BlockType::DeleteFamilyBloomMeta => self.delete_family_bloom = Some(meta()?),
                other => {
                    return Err(self.corrupt(
                        at,
                        format!("{other:?} block in the load-on-open section after the file info"),
                    ))
                }
            }
            at += b.header.on_disk_size() as u64;
        }
        self.read_format()
    }

    /// What the cells carry, from file info, as HBase decides it.
    fn read_format(&mut self) -> Result<()> {
        let fi = &self.file_info;
        let at = self.trailer.file_info_offset;
        let bad = |m: String| Error::Corruption {
            path: self.path.clone(),
            offset: at,
            message: format!("file info: {m}"),
        };
        let includes_tags = self.trailer.major_version >= 3 && fi.get(keys::MAX_TAGS_LEN).is_some();
        let tags_compressed =
            includes_tags && fi.get_bool(keys::TAGS_COMPRESSED).map_err(bad)? == Some(true);
        let includes_mvcc = fi.get_i32(keys::KEY_VALUE_VERSION).map_err(bad)? == Some(1);
        let max_ts = fi.get_i64(keys::MAX_MEMSTORE_TS).map_err(bad)?.unwrap_or(0);
        let encoding = match fi.get(keys::DATA_BLOCK_ENCODING) {
            None => DataBlockEncoding::None,
            Some(name) => DataBlockEncoding::from_name(name).ok_or_else(|| {
                bad(format!(
                    "unknown DATA_BLOCK_ENCODING {:?}",
                    String::from_utf8_lossy(name)
                ))
            })?,
        };
        self.format = CellFormat {
            includes_tags,
            tags_compressed,
            includes_mvcc,
        };
        self.encoding = encoding;
        self.decode_mvcc = includes_mvcc && max_ts > 0;
        Ok(())
    }

    fn expect_type(&self, b: &Block, t: BlockType) -> Result<()> {
        if b.header.block_type != t {
            return Err(self.corrupt(
                b.offset,
                format!(
                    "{:?} block where a {t:?} block belongs",
                    b.header.block_type
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn corrupt(&self, offset: u64, message: String) -> Error {
        Error::Corruption {
            path: self.path.clone(),
            offset,
            message,
        }
    }

    /// `len` bytes at `offset`, which must lie within the file.
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        let end = offset.checked_add(len as u64).filter(|&e| e <= self.len);
        if end.is_none() {
            return Err(self.corrupt(
                offset,
                format!(
                    "{len} bytes at {offset} run past the end of the file ({} bytes)",
                    self.len
                ),
            ));
        }
        match &self.source {
            Source::Memory(b) => Ok(b.slice(offset as usize..offset as usize + len)),
            Source::File(f) => {
                let mut f = f.lock().map_err(|_| {
                    self.corrupt(
                        offset,
                        "file handle poisoned by an earlier panic".to_string(),
                    )
                })?;
                let mut buf = vec![0u8; len];
                f.seek(SeekFrom::Start(offset))
                    .and_then(|_| f.read_exact(&mut buf))
                    .map_err(|e| Error::io(&self.path, e))?;
                Ok(Bytes::from(buf))
            }
            Source::Ranges(ranges) => self.read_through_window(ranges, offset, len),
        }
    }

    /// `len` bytes at `offset` (checked to lie within the file) from the
    /// window, reading a new window from `offset` on when they are not all
    /// in it. A range longer than the window is read alone.
    fn read_through_window(&self, ranges: &RangeSource, offset: u64, len: usize) -> Result<Bytes> {
        let mut window = ranges.window.lock().map_err(|_| {
            self.corrupt(
                offset,
                "read-ahead window poisoned by an earlier panic".to_string(),
            )
        })?;
        let (start, bytes) = &*window;
        if let Some(from) = offset.checked_sub(*start) {
            let from = from as usize;
            if from.checked_add(len).is_some_and(|end| end <= bytes.len()) {
                return Ok(bytes.slice(from..from + len));
            }
        }
        // Within the file (the caller checked), so this cannot underflow.
        let left = usize::try_from(self.len - offset).unwrap_or(usize::MAX);
        let want = len.max(ranges.read_ahead.min(left));
        let read = (ranges.read)(offset, want)?;
        if read.len() != want {
            return Err(self.corrupt(
                offset,
                format!(
                    "asked for {want} bytes at {offset}, the storage gave {}",
                    read.len()
                ),
            ));
        }
        let wanted = read.slice(..len);
        if want > len {
            *window = (offset, read);
        }
        Ok(wanted)
    }

    /// Reads, checks and decompresses the block at `offset`, which must
    /// end by `limit`; `expected_size` is its on-disk size where an index
    /// gave one.
    pub fn read_block(&self, offset: u64, limit: u64, expected_size: Option<u32>) -> Result<Block> {
        if offset
            .checked_add(HEADER_SIZE as u64)
            .is_none_or(|e| e > limit)
        {
            return Err(self.corrupt(
                offset,
                format!("a block header at {offset} would run past {limit}"),
            ));
        }
        let head = self.read_at(offset, HEADER_SIZE)?;
        let h: BlockHeader = block::parse_header(&head)
            .map_err(|m| self.corrupt(offset, format!("block header: {m}")))?;
        let size = h.on_disk_size() as u64;
        if offset + size > limit {
            return Err(self.corrupt(
                offset,
                format!(
                    "{:?} block of {size} bytes at {offset} runs past {limit}",
                    h.block_type
                ),
            ));
        }
        if let Some(expected) = expected_size {
            if u64::from(expected) != size {
                return Err(self.corrupt(
                    offset,
                    format!(
                        "{:?} block is {size} bytes on disk, the index says {expected}",
                        h.block_type
                    ),
                ));
            }
        }
        let raw = self.read_at(offset, size as usize)?;
        block::decode(offset, h, &raw, self.trailer.compression)
            .map_err(|m| self.corrupt(offset, format!("{:?} block: {m}", h.block_type)))
    }

    /// The file's name as given to `open` or `from_bytes`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The trailer.
    pub fn trailer(&self) -> &Trailer {
        &self.trailer
    }

    /// The file-info map.
    pub fn file_info(&self) -> &FileInfo {
        &self.file_info
    }

    /// The root data index's entries.
    pub fn root_index(&self) -> &[IndexEntry] {
        &self.root_index
    }

    /// The meta index's entries (named meta blocks).
    pub fn meta_index(&self) -> &[IndexEntry] {
        &self.meta_index
    }

    /// The general Bloom filter's metadata, if the file has one.
    pub fn general_bloom(&self) -> Option<&BloomMeta> {
        self.general_bloom.as_ref()
    }

    /// The delete-family Bloom filter's metadata, if the file has one.
    pub fn delete_family_bloom(&self) -> Option<&BloomMeta> {
        self.delete_family_bloom.as_ref()
    }

    /// The general Bloom filter's type from file info (`ROW`, `ROWCOL`,
    /// ...), if any.
    pub fn bloom_type(&self) -> Option<String> {
        self.file_info
            .get(keys::BLOOM_FILTER_TYPE)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    }

    /// What the cells carry.
    pub fn cell_format(&self) -> CellFormat {
        self.format
    }

    /// The data block encoding file info names.
    pub fn data_block_encoding(&self) -> DataBlockEncoding {
        self.encoding
    }

    /// The number of cells the trailer promises.
    pub fn entry_count(&self) -> u64 {
        self.trailer.entry_count
    }

    /// The data blocks, as the data index lists them (every level read).
    pub fn data_block_index(&self) -> Result<Vec<IndexEntry>> {
        let mut level = self.root_index.clone();
        for depth in 1..self.trailer.num_data_index_levels {
            let want = if depth + 1 == self.trailer.num_data_index_levels {
                BlockType::LeafIndex
            } else {
                BlockType::IntermediateIndex
            };
            let mut next = Vec::new();
            for e in &level {
                next.extend(self.index_block(e, want)?);
            }
            level = next;
        }
        Ok(level)
    }

    fn index_block(&self, e: &IndexEntry, want: BlockType) -> Result<Vec<IndexEntry>> {
        let b = self.read_block(
            e.offset,
            self.trailer.load_on_open_offset,
            Some(e.on_disk_size),
        )?;
        self.expect_type(&b, want)?;
        parse_non_root(&b.payload)
            .map_err(|m| self.corrupt(e.offset, format!("{want:?} block: {m}")))
    }

    /// Every cell, in file order.
    pub fn cells(&self) -> Cells<'_> {
        Cells::new(self, self.trailer.first_data_block_offset, None, true)
    }

    /// The cells from the first one whose row is at or after `row`, found
    /// through the data index.
    pub fn seek(&self, row: &[u8]) -> Result<Cells<'_>> {
        if self.trailer.entry_count == 0 || self.root_index.is_empty() {
            return Ok(Cells::new(self, 0, Some(row.to_vec()), false).finished());
        }
        let target = first_on_row(row);
        let mut entries = self.root_index.clone();
        let mut i = locate(&entries, &target).map_err(|m| {
            self.corrupt(
                self.trailer.load_on_open_offset,
                format!("root data index: {m}"),
            )
        })?;
        for depth in 1..self.trailer.num_data_index_levels {
            let want = if depth + 1 == self.trailer.num_data_index_levels {
                BlockType::LeafIndex
            } else {
                BlockType::IntermediateIndex
            };
            let parent = entries[i].clone();
            entries = self.index_block(&parent, want)?;
            if entries.is_empty() {
                return Err(self.corrupt(parent.offset, format!("{want:?} block has no entries")));
            }
            i = locate(&entries, &target)
                .map_err(|m| self.corrupt(parent.offset, format!("{want:?} block: {m}")))?;
        }
        Ok(Cells::new(
            self,
            entries[i].offset,
            Some(row.to_vec()),
            false,
        ))
    }

    /// Whether `row` may be in the file, by the general Bloom filter; true
    /// when the file has no row Bloom filter (ROW type) to ask.
    pub fn might_contain(&self, row: &[u8]) -> Result<bool> {
        let Some(bloom) = &self.general_bloom else {
            return Ok(true);
        };
        if self.bloom_type().as_deref() != Some("ROW") {
            return Ok(true);
        }
        let Some(chunk) = bloom.chunk_for(row) else {
            return Ok(false);
        };
        let b = self.read_block(
            chunk.offset,
            self.trailer.load_on_open_offset,
            Some(chunk.on_disk_size),
        )?;
        self.expect_type(&b, BlockType::BloomChunk)?;
        bloom
            .chunk_contains(&b.payload, row)
            .map_err(|m| self.corrupt(chunk.offset, format!("bloom chunk: {m}")))
    }
}

/// Cells read block by block; an iterator of results that stops after
/// the first error.
#[derive(Debug)]
pub struct Cells<'a> {
    reader: &'a HFileReader,
    next_block: u64,
    pending: std::vec::IntoIter<HFileCell>,
    from_row: Option<Vec<u8>>,
    whole_file: bool,
    seen: u64,
    last: Option<HFileCell>,
    done: bool,
}

impl<'a> Cells<'a> {
    fn new(
        reader: &'a HFileReader,
        start: u64,
        from_row: Option<Vec<u8>>,
        whole_file: bool,
    ) -> Self {
        Cells {
            reader,
            next_block: start,
            pending: Vec::new().into_iter(),
            from_row,
            whole_file,
            seen: 0,
            last: None,
            done: reader.trailer.entry_count == 0,
        }
    }

    fn finished(mut self) -> Self {
        self.done = true;
        self
    }

    /// Reads data blocks (skipping the index and Bloom blocks among them)
    /// until one yields cells; `Ok(false)` at the end of the data.
    fn fill(&mut self) -> Result<bool> {
        let r = self.reader;
        while self.next_block <= r.trailer.last_data_block_offset {
            let at = self.next_block;
            let b = r.read_block(at, r.trailer.load_on_open_offset, None)?;
            self.next_block = at + b.header.on_disk_size() as u64;
            match b.header.block_type {
                BlockType::Data | BlockType::EncodedData => {}
                BlockType::LeafIndex | BlockType::BloomChunk | BlockType::IntermediateIndex => {
                    continue
                }
                other => {
                    return Err(r.corrupt(at, format!("{other:?} block among the data blocks")))
                }
            }
            let (encoding, mut cells) =
                decode_data_block(b.header.block_type, &b.payload, &r.format)
                    .map_err(|m| r.corrupt(at, m))?;
            if encoding != r.encoding && encoding != DataBlockEncoding::None {
                return Err(r.corrupt(
                    at,
                    format!(
                        "block encoded {}, file info says {}",
                        encoding.name(),
                        r.encoding.name()
                    ),
                ));
            }
            if cells.is_empty() {
                return Err(r.corrupt(at, "data block with no cells".to_string()));
            }
            for cell in &mut cells {
                if !r.decode_mvcc {
                    cell.seq_id = 0;
                }
                if let Some(prev) = &self.last {
                    if compare_cells(prev, cell) == Ordering::Greater {
                        return Err(r.corrupt(at, "cells out of order".to_string()));
                    }
                }
                self.last = Some(cell.clone());
            }
            self.seen += cells.len() as u64;
            if let Some(row) = &self.from_row {
                cells.retain(|c| c.row.as_ref() >= row.as_slice());
                if cells.is_empty() {
                    continue;
                }
                self.from_row = None;
            }
            self.pending = cells.into_iter();
            return Ok(true);
        }
        if self.whole_file && self.seen != r.trailer.entry_count {
            return Err(r.corrupt(
                r.trailer.offset,
                format!(
                    "the data blocks hold {} cells, the trailer says {}",
                    self.seen, r.trailer.entry_count
                ),
            ));
        }
        Ok(false)
    }
}

fn compare_cells(a: &HFileCell, b: &HFileCell) -> Ordering {
    a.row
        .cmp(&b.row)
        .then_with(|| a.family.cmp(&b.family))
        .then_with(|| a.qualifier.cmp(&b.qualifier))
        .then_with(|| b.timestamp.cmp(&a.timestamp))
        .then_with(|| b.cell_type.code().cmp(&a.cell_type.code()))
}

impl Iterator for Cells<'_> {
    type Item = Result<HFileCell>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(c) = self.pending.next() {
                return Some(Ok(c));
            }
            if self.done {
                return None;
            }
            match self.fill() {
                Ok(true) => continue,
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
