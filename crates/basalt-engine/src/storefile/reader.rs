//! Opens store files and reads them: metadata, bloom lookups and a
//! [`CellSource`] with index-driven seeks.
//!
//! Every byte read from the file is checked before it is used: the trailer
//! and every block carry a CRC-32C, handles are bounds checked against the
//! file, and each structure is validated as it is decoded. Damage is
//! reported as [`Error::Corruption`] naming the file and the offset of the
//! block concerned, never as a panic or as wrong cells.

use std::cmp::Ordering as CmpOrdering;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use basalt_types::query::TimeRange;
use basalt_types::{BloomType, Cell, ColumnFamilyDescriptor, Error, Result};

use super::block::{BlockCursor, RESTART_INTERVAL};
use super::bloom::{bloom_key_hash, BloomChunk};
use super::format::{
    check_handle, compare_target, decode_block, decode_key, BlockHandle, BlockKind, DecodeResult,
    Trailer, TRAILER_LEN,
};
use super::index::{IndexBlock, IndexEntry, FLAG_ROW_CONTINUES};
use super::meta::{self, StoreFileMeta};
use crate::block_cache::{BlockCache, BlockPriority};
use crate::fs::FileStore;
use crate::source::{first_on_row, CellSource};
use crate::version_limit::ColumnVersionLimit;

/// Bytes read from the end of a file at open: trailer, root index, meta
/// and bloom index usually fit, so opening costs one ranged read (which
/// matters on object storage).
const TAIL_READ: u64 = 64 * 1024;

/// How a reader uses the block cache; follows the family's BLOCKCACHE and
/// IN_MEMORY options (and can change with them, see
/// [`StoreFileReader::set_cache_options`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderOptions {
    /// BLOCKCACHE: insert data blocks into the cache. Index and bloom
    /// blocks are cached either way (they are small and read by every
    /// lookup), as in HBase.
    pub cache_data_blocks: bool,
    /// IN_MEMORY: cache this file's blocks in the in-memory tier.
    pub in_memory: bool,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            cache_data_blocks: true,
            in_memory: false,
        }
    }
}

impl ReaderOptions {
    /// The options a family asks for.
    pub fn for_family(family: &ColumnFamilyDescriptor) -> Self {
        ReaderOptions {
            cache_data_blocks: family.block_cache,
            in_memory: family.in_memory,
        }
    }
}

/// Counters of one reader (all its sources together).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReaderStats {
    /// Data blocks loaded by sources, from the cache or the file.
    pub data_blocks_read: u64,
    /// Of which read from the file (cache misses or no cache).
    pub data_blocks_from_file: u64,
    /// Leaf index blocks loaded (from the cache or the file).
    pub index_blocks_read: u64,
    /// Bloom chunks loaded (from the cache or the file).
    pub bloom_blocks_read: u64,
    /// Bytes read from the file, open included.
    pub bytes_read: u64,
}

#[derive(Debug, Default)]
struct Counters {
    data_blocks_read: AtomicU64,
    data_blocks_from_file: AtomicU64,
    index_blocks_read: AtomicU64,
    bloom_blocks_read: AtomicU64,
    bytes_read: AtomicU64,
}

/// Below this many leaves, [`StoreFileReader::index_rows`] reads the
/// leaves: enough root entries are evenly spread split candidates on
/// their own, a handful are not.
pub const FEW_LEAVES_FOR_SPLIT: usize = 16;

/// An open store file. Cheap to share (`Arc`); any number of sources may
/// read it concurrently.
#[derive(Debug)]
pub struct StoreFileReader {
    store: Arc<dyn FileStore>,
    path: PathBuf,
    file_id: u64,
    cache: Option<Arc<BlockCache>>,
    cache_data: AtomicBool,
    in_memory: AtomicBool,
    trailer: Trailer,
    /// Where the trailer starts: every block ends at or before it.
    data_end: u64,
    meta: StoreFileMeta,
    root: IndexBlock,
    bloom_index: Option<IndexBlock>,
    counters: Counters,
}

/// A data block's place in the index: leaf block number (0 with a
/// one-level index) and entry within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BlockPos {
    leaf: usize,
    entry: usize,
}

/// The leaf index block a source used last, so that walking a file does
/// not look the leaf up in the cache once per data block.
type LeafMemo = Option<(usize, IndexBlock)>;

impl StoreFileReader {
    /// Opens a file with default cache options (see [`ReaderOptions`]).
    /// `file_id` keys the file's blocks in `cache`: take it from
    /// [`crate::block_cache::next_file_id`].
    pub fn open(
        store: Arc<dyn FileStore>,
        path: &Path,
        file_id: u64,
        cache: Option<Arc<BlockCache>>,
    ) -> Result<Arc<StoreFileReader>> {
        Self::open_with(store, path, file_id, cache, ReaderOptions::default())
    }

    /// Opens a file: reads and checks the trailer, metadata, root index and
    /// bloom index (usually with one read of the file's tail).
    pub fn open_with(
        store: Arc<dyn FileStore>,
        path: &Path,
        file_id: u64,
        cache: Option<Arc<BlockCache>>,
        options: ReaderOptions,
    ) -> Result<Arc<StoreFileReader>> {
        let corrupt = |offset: u64, message: String| Error::Corruption {
            path: path.to_path_buf(),
            offset,
            message,
        };
        let size = store.size(path)?;
        if size < TRAILER_LEN as u64 {
            return Err(corrupt(
                0,
                format!("file of {size} bytes is too short to be a store file"),
            ));
        }
        let tail_len = size.min(TAIL_READ);
        let tail_start = size - tail_len;
        let tail = store.read_range(path, tail_start, tail_len as usize)?;
        let data_end = size - TRAILER_LEN as u64;
        let trailer = Trailer::decode(&tail[(data_end - tail_start) as usize..], data_end)
            .map_err(|m| corrupt(data_end, m))?;
        let mut bytes_read = tail_len;
        let mut fetch = |h: BlockHandle, kind: BlockKind| -> Result<Bytes> {
            let raw = if h.offset >= tail_start {
                let start = (h.offset - tail_start) as usize;
                tail.slice(start..start + h.size as usize)
            } else {
                bytes_read += u64::from(h.size);
                store.read_range(path, h.offset, h.size as usize)?
            };
            let payload = decode_block(&raw, h, kind).map_err(|m| corrupt(h.offset, m))?;
            // An uncompressed payload is a view of the 64 KiB tail: copy it
            // so an open reader keeps only its root and bloom index alive.
            Ok(Bytes::copy_from_slice(&payload))
        };
        let meta_payload = fetch(trailer.meta, BlockKind::Meta)?;
        let mut meta = meta::decode(&meta_payload).map_err(|m| corrupt(trailer.meta.offset, m))?;
        meta.file_size = size;
        let root_payload = fetch(trailer.root_index, BlockKind::RootIndex)?;
        let root =
            IndexBlock::new(root_payload).map_err(|m| corrupt(trailer.root_index.offset, m))?;
        let has_bloom_index = trailer.bloom_index.size != 0;
        let bloom_index = if has_bloom_index {
            let payload = fetch(trailer.bloom_index, BlockKind::BloomIndex)?;
            Some(IndexBlock::new(payload).map_err(|m| corrupt(trailer.bloom_index.offset, m))?)
        } else {
            None
        };
        // The summary blocks must agree with each other.
        let has_cells = meta.cell_count > 0;
        let consistent = meta.data_block_count == trailer.data_block_count
            && has_cells == (meta.data_block_count > 0)
            && has_cells != root.is_empty()
            && (trailer.index_levels == 2 || root.len() as u64 == meta.data_block_count)
            && has_bloom_index == (has_cells && meta.bloom != BloomType::None);
        if !consistent {
            return Err(corrupt(
                data_end,
                "trailer, metadata and indexes disagree about the file's contents".to_string(),
            ));
        }
        let reader = StoreFileReader {
            store,
            path: path.to_path_buf(),
            file_id,
            cache,
            cache_data: AtomicBool::new(options.cache_data_blocks),
            in_memory: AtomicBool::new(options.in_memory),
            trailer,
            data_end,
            meta,
            root,
            bloom_index,
            counters: Counters::default(),
        };
        reader
            .counters
            .bytes_read
            .store(bytes_read, Ordering::Relaxed);
        Ok(Arc::new(reader))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The id keying this file's blocks in the cache.
    pub fn file_id(&self) -> u64 {
        self.file_id
    }

    /// The file's metadata.
    pub fn meta(&self) -> &StoreFileMeta {
        &self.meta
    }

    /// Index levels: 1 (the root indexes data blocks) or 2 (root -> leaf
    /// index blocks -> data blocks).
    pub fn index_levels(&self) -> u8 {
        self.trailer.index_levels
    }

    /// First and last cell keys (values empty); `None` for an empty file.
    pub fn key_range(&self) -> Option<(&Cell, &Cell)> {
        match (&self.meta.first_key, &self.meta.last_key) {
            (Some(a), Some(b)) => Some((a, b)),
            _ => None,
        }
    }

    /// Rows the index names (the last row of data blocks or of leaf index
    /// blocks' spans), in order: evenly spread over the file's data, they
    /// are where a region can be cut near its middle.
    ///
    /// A two-level index whose root names fewer than
    /// [`FEW_LEAVES_FOR_SPLIT`] leaves is read down to its leaves: with two
    /// or three leaves the root's rows are the ends of huge spans (the last
    /// one is the file's last row), and the middle of those is nowhere near
    /// the middle of the data; a split there leaves one daughter nearly
    /// empty and the other as large as the parent.
    pub fn index_rows(&self) -> Result<Vec<Bytes>> {
        if self.trailer.index_levels == 2 && self.root.len() < FEW_LEAVES_FOR_SPLIT {
            let mut rows = Vec::new();
            let mut memo = None;
            for leaf in 0..self.root.len() {
                let block = self.leaf(leaf, &mut memo)?;
                let at = self.index_offset(Some(leaf));
                self.push_index_rows(&block, at, &mut rows)?;
            }
            return Ok(rows);
        }
        let mut rows = Vec::with_capacity(self.root.len());
        self.push_index_rows(&self.root, self.trailer.root_index.offset, &mut rows)?;
        Ok(rows)
    }

    /// Appends the distinct rows of `block`'s entries to `rows`.
    fn push_index_rows(&self, block: &IndexBlock, at: u64, rows: &mut Vec<Bytes>) -> Result<()> {
        for i in 0..block.len() {
            let entry = block.entry(i).map_err(|m| self.corruption(at, m))?;
            let key = decode_key(entry.key, entry.row_len).map_err(|m| self.corruption(at, m))?;
            if rows.last().map(|r: &Bytes| &r[..]) != Some(key.row) {
                rows.push(Bytes::copy_from_slice(key.row));
            }
        }
        Ok(())
    }

    /// Smallest and largest timestamps (inclusive); `None` when empty.
    pub fn time_range(&self) -> Option<(i64, i64)> {
        (self.meta.cell_count > 0).then_some((self.meta.min_timestamp, self.meta.max_timestamp))
    }

    /// False when no cell of the file can fall in `range` (half-open).
    pub fn overlaps_time_range(&self, range: &TimeRange) -> bool {
        self.time_range()
            .is_some_and(|(min, max)| min < range.max && max >= range.min)
    }

    /// False when no row of the file lies in `[start, stop)`; an empty
    /// `stop` means no upper bound (HBase's scan convention).
    pub fn overlaps_rows(&self, start: &[u8], stop: &[u8]) -> bool {
        self.key_range().is_some_and(|(first, last)| {
            last.row.as_ref() >= start && (stop.is_empty() || first.row.as_ref() < stop)
        })
    }

    /// Changes the cache options (the family was altered).
    pub fn set_cache_options(&self, options: ReaderOptions) {
        self.cache_data
            .store(options.cache_data_blocks, Ordering::Relaxed);
        self.in_memory.store(options.in_memory, Ordering::Relaxed);
    }

    /// Drops this file's blocks from the cache (call when the file is
    /// retired, e.g. after a compaction replaced it); returns how many.
    pub fn evict_cached_blocks(&self) -> usize {
        self.cache
            .as_ref()
            .map_or(0, |c| c.remove_file(self.file_id))
    }

    /// Counters of this reader.
    pub fn stats(&self) -> ReaderStats {
        let c = &self.counters;
        ReaderStats {
            data_blocks_read: c.data_blocks_read.load(Ordering::Relaxed),
            data_blocks_from_file: c.data_blocks_from_file.load(Ordering::Relaxed),
            index_blocks_read: c.index_blocks_read.load(Ordering::Relaxed),
            bloom_blocks_read: c.bloom_blocks_read.load(Ordering::Relaxed),
            bytes_read: c.bytes_read.load(Ordering::Relaxed),
        }
    }

    /// False when the file certainly holds no cell of `row` (key range and
    /// ROW bloom). A ROWCOL bloom cannot answer for a whole row, so it
    /// only uses the key range.
    pub fn may_contain_row(&self, row: &[u8]) -> Result<bool> {
        if !self.row_in_range(row) {
            return Ok(false);
        }
        match self.meta.bloom {
            BloomType::Row => self.bloom_check(row, &[]),
            BloomType::RowCol | BloomType::None => Ok(true),
        }
    }

    /// False when the file certainly holds nothing a read of column
    /// `(row, qualifier)` needs: no cell of that column and, with a ROWCOL
    /// bloom, no family-wide delete marker of the row either (those have an
    /// empty qualifier and would otherwise be missed). With a ROW bloom
    /// this is [`Self::may_contain_row`].
    pub fn may_contain_column(&self, row: &[u8], qualifier: &[u8]) -> Result<bool> {
        if !self.row_in_range(row) {
            return Ok(false);
        }
        match self.meta.bloom {
            BloomType::None => Ok(true),
            BloomType::Row => self.bloom_check(row, &[]),
            BloomType::RowCol => Ok(self.bloom_check(row, qualifier)?
                || (self.meta.type_counts.family_markers() > 0
                    && !qualifier.is_empty()
                    && self.bloom_check(row, &[])?)),
        }
    }

    fn row_in_range(&self, row: &[u8]) -> bool {
        self.key_range()
            .is_some_and(|(first, last)| row >= first.row.as_ref() && row <= last.row.as_ref())
    }

    fn bloom_check(&self, row: &[u8], qualifier: &[u8]) -> Result<bool> {
        let Some(index) = &self.bloom_index else {
            return Ok(true);
        };
        let at = self.trailer.bloom_index.offset;
        // The chunk covering the key is the last one starting at or before it.
        let after = index
            .partition_point(|e| {
                let (r, q) = e.key.split_at(e.row_len);
                Ok((r, q) <= (row, qualifier))
            })
            .map_err(|m| self.corruption(at, m))?;
        let Some(chunk) = after.checked_sub(1) else {
            return Ok(false);
        };
        let handle = index
            .entry(chunk)
            .map_err(|m| self.corruption(at, m))?
            .handle;
        let payload = self.read_block(handle, BlockKind::Bloom, true)?;
        self.counters
            .bloom_blocks_read
            .fetch_add(1, Ordering::Relaxed);
        let bloom = BloomChunk::new(payload).map_err(|m| self.corruption(handle.offset, m))?;
        Ok(bloom.may_contain(bloom_key_hash(self.meta.bloom, row, qualifier)))
    }

    /// Appends the cells of `row` to `out`, in KeyValue order: the
    /// point-get read of one file, without a source. The index names the
    /// one data block where the row starts (its first block whose last row
    /// is at or after `row`); a binary search over that block's restart
    /// points finds the row's first entry; reading goes on while the row
    /// lasts, into the next block only when the index says the row
    /// continues there. Cells carry `row` itself and the block's bytes
    /// (values, and qualifiers wherever the block stores them whole), so a
    /// cached block is read without copying.
    ///
    /// The caller has already asked [`Self::may_contain_row`]; this reads
    /// the index regardless.
    pub fn row_cells(&self, row: &Bytes, out: &mut Vec<Cell>) -> Result<()> {
        self.row_cells_limited(row, out, None)
    }

    /// [`StoreFileReader::row_cells`], dropping what `limit` refuses (the
    /// point get's version limit, `version_limit.rs`).
    pub(crate) fn row_cells_limited(
        &self,
        row: &Bytes,
        out: &mut Vec<Cell>,
        mut limit: Option<&mut ColumnVersionLimit>,
    ) -> Result<()> {
        let mut memo = None;
        let after = |e: &IndexEntry<'_>| -> DecodeResult<bool> {
            Ok(decode_key(e.key, e.row_len)?.row >= &row[..])
        };
        let Some((mut pos, mut handle)) = self.locate(&mut memo, &after)? else {
            return Ok(());
        };
        let family = &self.meta.family;
        let mut cursor = self.data_block(handle)?;
        if !cursor
            .seek_row(row)
            .map_err(|m| self.corruption(handle.offset, m))?
        {
            return Err(self.corruption(
                handle.offset,
                "data block ends below the last key its index entry names".to_string(),
            ));
        }
        let first = out.len();
        loop {
            if cursor.key_ref().is_none_or(|k| k.row != &row[..]) {
                return Ok(());
            }
            let admitted = match (limit.as_deref_mut(), cursor.key_ref()) {
                (Some(limit), Some(k)) => limit.admits(k.qualifier, k.cell_type),
                _ => true,
            };
            if admitted {
                let prev = out[first..].last();
                if let Some(cell) = cursor.cell_in_row(row, family, prev) {
                    if let Some(limit) = limit.as_deref_mut() {
                        limit.collected(&cell);
                    }
                    out.push(cell);
                }
            }
            if cursor
                .step()
                .map_err(|m| self.corruption(handle.offset, m))?
            {
                continue;
            }
            // The block is done: the row goes on only in a block cut
            // mid-row, which the index flags.
            if !self.row_continues_after(pos, &mut memo)? {
                return Ok(());
            }
            let Some(next) = self.next_pos(pos, &mut memo)? else {
                return Ok(());
            };
            pos = next;
            handle = self.handle_at(pos, &mut memo)?;
            cursor = self.data_block(handle)?;
            if !cursor
                .step()
                .map_err(|m| self.corruption(handle.offset, m))?
            {
                return Err(self.corruption(handle.offset, "empty data block".to_string()));
            }
            // As in `StoreFileSource::advance`: blocks are checksummed one
            // by one, so check they follow each other.
            let follows = match (cursor.key_ref(), out[first..].last()) {
                (Some(k), Some(last)) => compare_target(last, family, &k) == CmpOrdering::Less,
                _ => false,
            };
            if !follows {
                return Err(self.corruption(
                    handle.offset,
                    "data block does not continue the key order of the one before".to_string(),
                ));
            }
        }
    }

    /// A data block through the cache (filled as the family's BLOCKCACHE
    /// says), counted as a source's block is, with a cursor before its
    /// first entry.
    fn data_block(&self, handle: BlockHandle) -> Result<BlockCursor> {
        let cacheable = self.cache_data.load(Ordering::Relaxed);
        let payload = self.read_block(handle, BlockKind::Data, cacheable)?;
        self.counters
            .data_blocks_read
            .fetch_add(1, Ordering::Relaxed);
        BlockCursor::new(payload).map_err(|m| self.corruption(handle.offset, m))
    }

    /// A source over the whole file (not yet positioned: seek first).
    pub fn source(self: &Arc<Self>) -> StoreFileSource {
        StoreFileSource {
            reader: Arc::clone(self),
            memo: None,
            block: None,
            current: None,
            blocks_read: 0,
            fill_cache: true,
        }
    }

    fn corruption(&self, offset: u64, message: String) -> Error {
        Error::Corruption {
            path: self.path.clone(),
            offset,
            message,
        }
    }

    /// Reads a block through the cache; `cacheable` says whether a block
    /// read from the file may be inserted.
    fn read_block(&self, handle: BlockHandle, kind: BlockKind, cacheable: bool) -> Result<Bytes> {
        check_handle(handle, self.data_end).map_err(|m| self.corruption(handle.offset, m))?;
        if let Some(cache) = &self.cache {
            if let Some(block) = cache.get(self.file_id, handle.offset) {
                return Ok(block);
            }
        }
        // A gateway's memory-only attempt ends here (`read_tier`).
        crate::read_tier::before_file_read(&self.path)?;
        let raw = self
            .store
            .read_range(&self.path, handle.offset, handle.size as usize)?;
        self.counters
            .bytes_read
            .fetch_add(raw.len() as u64, Ordering::Relaxed);
        if kind == BlockKind::Data {
            self.counters
                .data_blocks_from_file
                .fetch_add(1, Ordering::Relaxed);
        }
        let payload =
            decode_block(&raw, handle, kind).map_err(|m| self.corruption(handle.offset, m))?;
        if cacheable {
            if let Some(cache) = &self.cache {
                // Leaf index and bloom blocks compete like an IN_MEMORY
                // family's blocks (evicted last): every lookup in the file
                // reads them first, they are a small fraction of its size,
                // and losing one to a scan of other data costs an extra
                // file read on each later get. HBase likewise keeps index
                // and bloom blocks apart from data blocks (the on-heap
                // first level of its combined cache).
                let meta = matches!(kind, BlockKind::LeafIndex | BlockKind::Bloom);
                let priority = if meta || self.in_memory.load(Ordering::Relaxed) {
                    BlockPriority::InMemory
                } else {
                    BlockPriority::Normal
                };
                cache.insert(self.file_id, handle.offset, payload.clone(), priority);
            }
        }
        Ok(payload)
    }

    // --- the index ------------------------------------------------------

    fn index_offset(&self, leaf: Option<usize>) -> u64 {
        match leaf {
            Some(i) if self.trailer.index_levels == 2 => self
                .root
                .entry(i)
                .map_or(self.trailer.root_index.offset, |e| e.handle.offset),
            _ => self.trailer.root_index.offset,
        }
    }

    fn leaf_count(&self) -> usize {
        if self.trailer.index_levels == 1 {
            usize::from(!self.root.is_empty())
        } else {
            self.root.len()
        }
    }

    /// The index block listing data blocks number `leaf`.
    fn leaf(&self, leaf: usize, memo: &mut LeafMemo) -> Result<IndexBlock> {
        if self.trailer.index_levels == 1 {
            return Ok(self.root.clone());
        }
        if let Some((i, block)) = memo {
            if *i == leaf {
                return Ok(block.clone());
            }
        }
        let at = self.trailer.root_index.offset;
        let handle = self
            .root
            .entry(leaf)
            .map_err(|m| self.corruption(at, m))?
            .handle;
        let payload = self.read_block(handle, BlockKind::LeafIndex, true)?;
        self.counters
            .index_blocks_read
            .fetch_add(1, Ordering::Relaxed);
        let block = IndexBlock::new(payload).map_err(|m| self.corruption(handle.offset, m))?;
        if block.is_empty() {
            return Err(self.corruption(handle.offset, "empty leaf index block".to_string()));
        }
        *memo = Some((leaf, block.clone()));
        Ok(block)
    }

    /// The first data block whose last key is at or after `target` (by
    /// `after`: true when the entry's last key is at or after the target):
    /// the only block that can hold the first cell at or after it.
    fn locate(
        &self,
        memo: &mut LeafMemo,
        after: &dyn Fn(&IndexEntry<'_>) -> DecodeResult<bool>,
    ) -> Result<Option<(BlockPos, BlockHandle)>> {
        let root_at = self.trailer.root_index.offset;
        let first = self
            .root
            .partition_point(|e| Ok(!after(e)?))
            .map_err(|m| self.corruption(root_at, m))?;
        if first >= self.root.len() {
            return Ok(None);
        }
        if self.trailer.index_levels == 1 {
            let handle = self
                .root
                .entry(first)
                .map_err(|m| self.corruption(root_at, m))?
                .handle;
            return Ok(Some((
                BlockPos {
                    leaf: 0,
                    entry: first,
                },
                handle,
            )));
        }
        let leaf = self.leaf(first, memo)?;
        let leaf_at = self.index_offset(Some(first));
        let entry = leaf
            .partition_point(|e| Ok(!after(e)?))
            .map_err(|m| self.corruption(leaf_at, m))?;
        if entry >= leaf.len() {
            return Err(self.corruption(
                leaf_at,
                "leaf index block ends below the key its root entry promises".to_string(),
            ));
        }
        let handle = leaf
            .entry(entry)
            .map_err(|m| self.corruption(leaf_at, m))?
            .handle;
        Ok(Some((BlockPos { leaf: first, entry }, handle)))
    }

    fn entry_at(&self, pos: BlockPos, memo: &mut LeafMemo) -> Result<(Vec<u8>, BlockHandle)> {
        let leaf = self.leaf(pos.leaf, memo)?;
        let at = self.index_offset(Some(pos.leaf));
        let e = leaf.entry(pos.entry).map_err(|m| self.corruption(at, m))?;
        let row = decode_key(e.key, e.row_len)
            .map_err(|m| self.corruption(at, m))?
            .row
            .to_vec();
        Ok((row, e.handle))
    }

    /// The handle of the data block at `pos`.
    fn handle_at(&self, pos: BlockPos, memo: &mut LeafMemo) -> Result<BlockHandle> {
        let leaf = self.leaf(pos.leaf, memo)?;
        let at = self.index_offset(Some(pos.leaf));
        let e = leaf.entry(pos.entry).map_err(|m| self.corruption(at, m))?;
        Ok(e.handle)
    }

    /// True when the block after `pos` continues the row `pos` ends with.
    fn row_continues_after(&self, pos: BlockPos, memo: &mut LeafMemo) -> Result<bool> {
        let leaf = self.leaf(pos.leaf, memo)?;
        let at = self.index_offset(Some(pos.leaf));
        let e = leaf.entry(pos.entry).map_err(|m| self.corruption(at, m))?;
        Ok(e.flags & FLAG_ROW_CONTINUES != 0)
    }

    fn next_pos(&self, pos: BlockPos, memo: &mut LeafMemo) -> Result<Option<BlockPos>> {
        let leaf = self.leaf(pos.leaf, memo)?;
        if pos.entry + 1 < leaf.len() {
            return Ok(Some(BlockPos {
                leaf: pos.leaf,
                entry: pos.entry + 1,
            }));
        }
        if pos.leaf + 1 < self.leaf_count() {
            return Ok(Some(BlockPos {
                leaf: pos.leaf + 1,
                entry: 0,
            }));
        }
        Ok(None)
    }

    fn prev_pos(&self, pos: BlockPos, memo: &mut LeafMemo) -> Result<Option<BlockPos>> {
        if pos.entry > 0 {
            return Ok(Some(BlockPos {
                leaf: pos.leaf,
                entry: pos.entry - 1,
            }));
        }
        if pos.leaf == 0 {
            return Ok(None);
        }
        let leaf = self.leaf(pos.leaf - 1, memo)?;
        Ok(Some(BlockPos {
            leaf: pos.leaf - 1,
            entry: leaf.len() - 1,
        }))
    }

    fn last_pos(&self, memo: &mut LeafMemo) -> Result<Option<BlockPos>> {
        let Some(leaf) = self.leaf_count().checked_sub(1) else {
            return Ok(None);
        };
        let block = self.leaf(leaf, memo)?;
        Ok(block
            .len()
            .checked_sub(1)
            .map(|entry| BlockPos { leaf, entry }))
    }
}

/// A [`CellSource`] over one store file. Cells come out with the file's
/// family. Values are views into the decoded block (no copy); holding a
/// cell keeps its block's memory alive.
pub struct StoreFileSource {
    reader: Arc<StoreFileReader>,
    memo: LeafMemo,
    /// The data block being read, with its place and handle.
    block: Option<(BlockPos, BlockHandle, BlockCursor)>,
    current: Option<Cell>,
    blocks_read: u64,
    /// Whether blocks read from the file go into the block cache (blocks
    /// already cached are used either way).
    fill_cache: bool,
}

impl std::fmt::Debug for StoreFileSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreFileSource")
            .field("path", &self.reader.path)
            .field("current", &self.current)
            .field("blocks_read", &self.blocks_read)
            .finish()
    }
}

impl StoreFileSource {
    /// Stops (or restarts) putting the blocks this source reads from the
    /// file into the block cache, as HBase does for compactions and for a
    /// scan with `cacheBlocks` off: a compaction reads every block of its
    /// inputs once, files that are deleted when it ends, and caching them
    /// would evict the blocks readers use (and hold their memory until
    /// eviction). Cached blocks are still read from the cache.
    pub fn set_fill_cache(&mut self, fill: bool) {
        self.fill_cache = fill;
    }

    /// Data blocks this source has loaded (from the cache or the file).
    pub fn blocks_read(&self) -> u64 {
        self.blocks_read
    }

    /// The reader this source reads.
    pub fn reader(&self) -> &Arc<StoreFileReader> {
        &self.reader
    }

    /// Makes the block at `pos` current (reusing it if it already is) and
    /// returns its cursor.
    fn load(&mut self, pos: BlockPos, handle: BlockHandle) -> Result<&mut BlockCursor> {
        let reuse = matches!(&self.block, Some((p, h, _)) if *p == pos && *h == handle);
        if !reuse {
            self.block = None;
            let cacheable = self.fill_cache && self.reader.cache_data.load(Ordering::Relaxed);
            let payload = self.reader.read_block(handle, BlockKind::Data, cacheable)?;
            self.blocks_read += 1;
            self.reader
                .counters
                .data_blocks_read
                .fetch_add(1, Ordering::Relaxed);
            let cursor =
                BlockCursor::new(payload).map_err(|m| self.reader.corruption(handle.offset, m))?;
            self.block = Some((pos, handle, cursor));
        }
        match &mut self.block {
            Some((_, _, cursor)) => Ok(cursor),
            None => Err(self
                .reader
                .corruption(handle.offset, "data block vanished".to_string())),
        }
    }

    /// Short forward seeks (the next column, the next row) usually land a
    /// few cells ahead in the current block: step there instead of going
    /// through the index. True when it found the target's cell.
    fn seek_forward_in_block(&mut self, target: &Cell) -> Result<bool> {
        let (Some(current), Some((_, handle, cursor))) = (&self.current, &mut self.block) else {
            return Ok(false);
        };
        if !current.compare_key(target).is_lt() {
            return Ok(false);
        }
        let family = &self.reader.meta.family;
        for _ in 0..RESTART_INTERVAL {
            if !cursor
                .step()
                .map_err(|m| self.reader.corruption(handle.offset, m))?
            {
                return Ok(false);
            }
            if let Some(k) = cursor.key_ref() {
                if compare_target(target, family, &k) != CmpOrdering::Greater {
                    self.current = cursor.cell(family, Some(current));
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    fn seek_inner(&mut self, target: &Cell) -> Result<()> {
        if self.seek_forward_in_block(target)? {
            return Ok(());
        }
        self.current = None;
        let reader = Arc::clone(&self.reader);
        let family = reader.meta.family.clone();
        let after = |e: &IndexEntry<'_>| -> DecodeResult<bool> {
            let k = decode_key(e.key, e.row_len)?;
            Ok(compare_target(target, &family, &k) != CmpOrdering::Greater)
        };
        let Some((pos, handle)) = reader.locate(&mut self.memo, &after)? else {
            return Ok(());
        };
        let cursor = self.load(pos, handle)?;
        let found = cursor
            .seek(target, &family)
            .map_err(|m| reader.corruption(handle.offset, m))?;
        if !found {
            return Err(reader.corruption(
                handle.offset,
                "data block ends below the last key its index entry names".to_string(),
            ));
        }
        self.current = cursor.cell(&family, None);
        Ok(())
    }

    fn advance_inner(&mut self) -> Result<()> {
        let Some(prev) = self.current.take() else {
            return Ok(());
        };
        let reader = Arc::clone(&self.reader);
        let family = &reader.meta.family;
        let Some((pos, handle, cursor)) = &mut self.block else {
            return Ok(());
        };
        if cursor
            .step()
            .map_err(|m| reader.corruption(handle.offset, m))?
        {
            self.current = cursor.cell(family, Some(&prev));
            return Ok(());
        }
        let pos = *pos;
        let Some(next) = reader.next_pos(pos, &mut self.memo)? else {
            return Ok(());
        };
        let (_, handle) = reader.entry_at(next, &mut self.memo)?;
        let cursor = self.load(next, handle)?;
        cursor.rewind();
        if !cursor
            .step()
            .map_err(|m| reader.corruption(handle.offset, m))?
        {
            return Err(reader.corruption(handle.offset, "empty data block".to_string()));
        }
        let cell = cursor.cell(family, Some(&prev));
        // Blocks are checksummed one by one; this catches a file whose
        // blocks are each intact but do not follow each other.
        if !cell.as_ref().is_some_and(|c| c.compare_key(&prev).is_gt()) {
            return Err(reader.corruption(
                handle.offset,
                "data block does not continue the key order of the one before".to_string(),
            ));
        }
        self.current = cell;
        Ok(())
    }

    fn seek_before_row_inner(&mut self, row: Option<&[u8]>) -> Result<()> {
        self.current = None;
        let reader = Arc::clone(&self.reader);
        let target_row: Option<Vec<u8>> = match row {
            None => match reader.last_pos(&mut self.memo)? {
                Some(pos) => Some(reader.entry_at(pos, &mut self.memo)?.0),
                None => None,
            },
            Some(row) => {
                let after = |e: &IndexEntry<'_>| -> DecodeResult<bool> {
                    Ok(decode_key(e.key, e.row_len)?.row >= row)
                };
                match reader.locate(&mut self.memo, &after)? {
                    // Every row of the file is below `row`: the last one.
                    None => match reader.last_pos(&mut self.memo)? {
                        Some(pos) => Some(reader.entry_at(pos, &mut self.memo)?.0),
                        None => None,
                    },
                    Some((pos, handle)) => {
                        let cursor = self.load(pos, handle)?;
                        let in_block = cursor
                            .last_row_before(row)
                            .map_err(|m| reader.corruption(handle.offset, m))?;
                        match in_block {
                            Some(r) => Some(r),
                            // The block starts at or after `row`: the row
                            // wanted is the previous block's last.
                            None => match reader.prev_pos(pos, &mut self.memo)? {
                                Some(prev) => Some(reader.entry_at(prev, &mut self.memo)?.0),
                                None => None,
                            },
                        }
                    }
                }
            }
        };
        match target_row {
            // The row may start in an earlier block than the one that
            // showed it: seeking to its first key finds its first cell.
            Some(r) => self.seek_inner(&first_on_row(&r)),
            None => Ok(()),
        }
    }

    /// Leaves the source exhausted after an error, so a caller that goes on
    /// regardless sees no cells rather than stale ones.
    fn fail<T>(&mut self, r: Result<T>) -> Result<T> {
        if r.is_err() {
            self.current = None;
            self.block = None;
        }
        r
    }
}

impl CellSource for StoreFileSource {
    fn peek(&self) -> Option<&Cell> {
        self.current.as_ref()
    }

    fn advance(&mut self) -> Result<()> {
        let r = self.advance_inner();
        self.fail(r)
    }

    fn seek(&mut self, key: &Cell) -> Result<()> {
        let r = self.seek_inner(key);
        self.fail(r)
    }

    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        let r = self.seek_before_row_inner(row);
        self.fail(r)
    }
}
