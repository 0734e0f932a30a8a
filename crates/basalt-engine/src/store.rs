//! A store: one column family of one region. An active memstore takes
//! writes; a snapshot of it may be on its way to disk; the store files hold
//! everything flushed before.
//!
//! ```text
//!            writes                      reads (merged)
//!              |                     /        |        \
//!              v                    v         v         v
//!         [ active memstore ]  [snapshot]  [file 7] [file 9] ...
//!              |  flush: swap       |  write, commit manifest, drop snapshot
//!              +------------------->+----------------> new store file
//!                                          compaction: files -> one file
//! ```
//!
//! Invariants:
//! - The view (active, snapshot, files) is replaced as a whole under a
//!   write lock, so a reader's copy of it holds every cell at or below its
//!   read point exactly once: a flush swaps the snapshot for its new file,
//!   and a compaction its inputs for its output, in one step.
//! - A file joins the view only after the manifest that lists it is
//!   durable, and a compacted-away file is deleted only after the manifest
//!   without it is durable and the last reader of it is gone.
//! - `flushed_through`: every edit of this store with a sequence id at or
//!   below it is in the files (or was dropped by the rules).
//! - A linked file (a split daughter's or merged region's view of a file
//!   its parent wrote) is read only within the link's rows and is never
//!   deleted by this store; any compaction of a store with links rewrites
//!   all its files, so links disappear with the first compaction.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};

use basalt_types::cell::compare_version;
use basalt_types::descriptor::{ColumnFamilyDescriptor, KeepDeletedCells};
use basalt_types::{Cell, Result};

use crate::block_cache::{next_file_id, BlockCache};
use crate::compaction::{self, CompactionPolicy};
use crate::fence::Fence;
use crate::fs::FileStore;
use crate::layout;
use crate::manifest::{FileLink, ManifestFile, ManifestLog, StoreManifest};
use crate::memory::{MemstoreBudget, Reservation};
use crate::memstore::MemStore;
use crate::scan::{ReadOptions, StoreScanner};
use crate::source::{first_on_row, CellSource, MergedSource};
use crate::storefile::{
    ReaderOptions, StoreFileReader, StoreFileSource, StoreFileWriter, WriterOptions,
};
use crate::version_limit::ColumnVersionLimit;

/// What every store of a database shares.
#[derive(Debug, Clone)]
pub struct StoreContext {
    /// Where store files and manifests live.
    pub files: Arc<dyn FileStore>,
    /// The block cache shared by all stores (none in some tests).
    pub cache: Option<Arc<BlockCache>>,
    /// When to compact.
    pub policy: CompactionPolicy,
    /// The server's global memstore budget (none: only each region's own
    /// flush and blocking sizes apply).
    pub memory: Option<Arc<MemstoreBudget>>,
    /// On shared storage: this process's epoch, tripped when a newer owner
    /// fences it (none: a local data directory, nothing to fence).
    pub fence: Option<Arc<Fence>>,
    /// Flushes and compactions finished by the regions sharing the context
    /// (a server's), for its metrics.
    pub work: Arc<WorkCounters>,
}

/// Finished flushes and compactions over every region of a server: they
/// only grow (a region that closes or splits keeps its share here), as a
/// server's counters must.
#[derive(Debug, Default)]
pub struct WorkCounters {
    flushes: AtomicU64,
    compactions: AtomicU64,
    major_compactions: AtomicU64,
}

impl WorkCounters {
    /// Region flushes that wrote out at least one memstore.
    pub fn flushes(&self) -> u64 {
        self.flushes.load(Ordering::Relaxed)
    }

    /// Region compactions that rewrote at least one store (major ones
    /// included).
    pub fn compactions(&self) -> u64 {
        self.compactions.load(Ordering::Relaxed)
    }

    /// Of the compactions, the major ones.
    pub fn major_compactions(&self) -> u64 {
        self.major_compactions.load(Ordering::Relaxed)
    }

    pub(crate) fn flushed(&self) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn compacted(&self, major: bool) {
        self.compactions.fetch_add(1, Ordering::Relaxed);
        if major {
            self.major_compactions.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A store file in use, with its manifest entry.
#[derive(Debug)]
pub struct StoreFile {
    entry: ManifestFile,
    reader: Arc<StoreFileReader>,
    path: PathBuf,
    files: Arc<dyn FileStore>,
    /// Set when a compaction replaced the file: the last holder deletes it
    /// (unless it is a link: the owning region's files are not ours).
    obsolete: AtomicBool,
}

impl StoreFile {
    /// The file's manifest entry.
    pub fn entry(&self) -> &ManifestFile {
        &self.entry
    }

    /// The reader.
    pub fn reader(&self) -> &Arc<StoreFileReader> {
        &self.reader
    }

    /// False when the file is a link whose rows exclude `row` (see
    /// [`FileSource`]: outside them the file shows no cells).
    fn link_admits(&self, row: &[u8]) -> bool {
        self.entry.link.as_ref().is_none_or(|link| {
            (link.lower.is_empty() || row >= &link.lower[..])
                && (link.upper.is_empty() || row < &link.upper[..])
        })
    }

    /// A source over the file's cells (a link's rows only), keeping the
    /// file alive while it is read. `fill_cache` false keeps the blocks it
    /// reads out of the block cache (compactions: see
    /// `StoreFileSource::set_fill_cache`).
    fn source(self: &Arc<Self>, fill_cache: bool) -> FileSource {
        let mut inner = self.reader.source();
        inner.set_fill_cache(fill_cache);
        let (lower, upper) = match &self.entry.link {
            Some(link) => (
                (!link.lower.is_empty()).then(|| link.lower.clone()),
                (!link.upper.is_empty()).then(|| link.upper.clone()),
            ),
            None => (None, None),
        };
        FileSource {
            inner,
            lower,
            upper,
            _file: Arc::clone(self),
        }
    }
}

/// The oldest put `files` record, as a major compaction keeping deleted
/// cells measures markers against (HBase's EARLIEST_PUT_TS): a link counts
/// its parent's record, which covers the parent's other rows too (as an
/// HBase reference file does); a file from before the record existed
/// counts as holding the oldest possible put, so no marker is dropped for
/// being older than every put. `i64::MAX` when no file holds a put.
fn recorded_earliest_put(files: &[Arc<StoreFile>]) -> i64 {
    files
        .iter()
        .map(|f| f.reader.meta().earliest_put_timestamp.unwrap_or(i64::MIN))
        .min()
        .unwrap_or(i64::MAX)
}

/// What a store's or region's compactions are doing (HBase's
/// `CompactionState`, which clients poll to wait for a compaction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CompactionState {
    /// Nothing running or due.
    None,
    /// A minor compaction runs, or a daughter's links wait to be rewritten.
    Minor,
    /// A major compaction runs.
    Major,
}

impl Drop for StoreFile {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) && self.entry.link.is_none() {
            self.reader.evict_cached_blocks();
            if let Err(e) = self.files.delete(&self.path) {
                // Left behind, it is an orphan the next open removes.
                tracing::warn!(path = %self.path.display(), error = %e, "could not delete a compacted store file");
            }
        }
    }
}

/// A file's cells, keeping the file alive (and undeleted) while read. A
/// linked file shows only the rows in `[lower, upper)`: outside them it
/// behaves as if the cells were not there.
struct FileSource {
    _file: Arc<StoreFile>,
    inner: StoreFileSource,
    lower: Option<Bytes>,
    upper: Option<Bytes>,
}

impl CellSource for FileSource {
    fn peek(&self) -> Option<&Cell> {
        let cell = self.inner.peek()?;
        let below = self.lower.as_ref().is_some_and(|l| cell.row < *l);
        let above = self.upper.as_ref().is_some_and(|u| cell.row >= *u);
        (!below && !above).then_some(cell)
    }
    fn advance(&mut self) -> Result<()> {
        self.inner.advance()
    }
    fn seek(&mut self, key: &Cell) -> Result<()> {
        match &self.lower {
            Some(lower) if key.row < *lower => self.inner.seek(&first_on_row(lower)),
            _ => self.inner.seek(key),
        }
    }
    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        let row = match (row, self.upper.as_deref()) {
            (Some(r), Some(u)) => Some(r.min(u)),
            (None, Some(u)) => Some(u),
            (r, None) => r,
        };
        self.inner.seek_before_row(row)
    }
}

/// A compaction input that counts the cells read from it (the store's
/// compaction progress). A cell is counted when the merge moves past it.
/// A linked file is read only within its rows while the total counts the
/// whole file, so such a compaction ends below 100% (then reads idle).
struct Counted {
    inner: FileSource,
    read: Arc<AtomicU64>,
}

impl CellSource for Counted {
    fn peek(&self) -> Option<&Cell> {
        self.inner.peek()
    }
    fn advance(&mut self) -> Result<()> {
        self.read.fetch_add(1, Ordering::Relaxed);
        self.inner.advance()
    }
    fn seek(&mut self, key: &Cell) -> Result<()> {
        self.inner.seek(key)
    }
    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        self.inner.seek_before_row(row)
    }
}

/// What a read sees of a store at one moment.
#[derive(Debug, Clone)]
struct StoreView {
    active: Arc<MemStore>,
    snapshot: Option<Arc<MemStore>>,
    /// Oldest first.
    files: Vec<Arc<StoreFile>>,
}

/// One column family's store within a region.
#[derive(Debug)]
pub struct Store {
    family: Bytes,
    descriptor: RwLock<Arc<ColumnFamilyDescriptor>>,
    /// WAL edits of this family below this sequence id belong to an earlier
    /// family of the same name that was deleted: replay ignores them.
    first_sequence: u64,
    dir: PathBuf,
    context: StoreContext,
    view: RwLock<Arc<StoreView>>,
    /// The committed manifest; its lock also serializes commits.
    manifest: Mutex<StoreManifest>,
    manifest_log: ManifestLog,
    flushed_through: AtomicU64,
    /// The sequence id the pending snapshot was frozen at, once a flush of
    /// it was tried: a snapshot left by a failed flush holds nothing later.
    snapshot_through: Mutex<Option<u64>>,
    compacting: AtomicBool,
    /// Whether the running compaction (while `compacting`) is a major one.
    compacting_major: AtomicBool,
    /// The running compaction's progress: cells in its input files, and
    /// cells read from them so far (0 and 0 when none runs).
    compacting_cells_total: AtomicU64,
    compacted_cells: Arc<AtomicU64>,
    /// Clock millis at which the last major compaction of this store
    /// finished, in memory only (see [`StoreStats::last_major_compaction_ms`]).
    last_major_compaction_ms: AtomicI64,
    /// Flushes and compactions finished since the store opened.
    flushes_completed: AtomicU64,
    compactions_completed: AtomicU64,
    /// Point reads: files consulted (key range and bloom allowed the row)
    /// and files skipped without reading a block.
    point_read_files: AtomicU64,
    point_read_skips: AtomicU64,
}

/// Sizes and counts of a store, for descriptions and load reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Store files.
    pub files: usize,
    /// Bytes in store files (a linked file counts whole).
    pub file_bytes: u64,
    /// Of the files, links to files of a parent region (left by a split or
    /// merge until a compaction rewrites them).
    pub linked_files: usize,
    /// Bytes in the memstore (active and snapshot).
    pub memstore_bytes: u64,
    /// Data blocks read from the live files (from cache or disk) since
    /// they were opened.
    pub data_blocks_read: u64,
    /// Of those, blocks that had to come from disk.
    pub data_blocks_from_disk: u64,
    /// Files point reads consulted: their key range and bloom filter could
    /// not rule the row out.
    pub point_read_files: u64,
    /// Files point reads skipped by key range or bloom filter.
    pub point_read_skips: u64,
    /// Cells in the input files of the compaction running now (0 when
    /// none runs).
    pub compacting_cells_total: u64,
    /// Of those, the cells it has read so far: HBase's %COMP is
    /// `compacted_cells / compacting_cells_total`.
    pub compacted_cells: u64,
    /// Clock millis at which the store's last major compaction finished;
    /// 0 when none is known. Derived from the files where it can be (the
    /// creation time of the newest file a major compaction wrote, which
    /// survives restarts), and otherwise remembered in memory from the
    /// major compaction this process ran: so a restart loses it only when
    /// a minor compaction has since rewritten the major-compacted file.
    pub last_major_compaction_ms: i64,
    /// Flushes of this store that wrote a file, since it opened.
    pub flushes_completed: u64,
    /// Compactions of this store (minor and major), since it opened.
    pub compactions_completed: u64,
    /// The oldest put the store files record (see `recorded_earliest_put`):
    /// a major compaction keeping deleted cells drops markers older than it.
    pub earliest_put_timestamp: i64,
}

impl Store {
    /// Opens the store in `dir`: loads its manifest, opens its files, and
    /// removes files the manifest does not list (left by a crash during a
    /// flush or compaction).
    pub fn open(
        descriptor: ColumnFamilyDescriptor,
        first_sequence: u64,
        dir: PathBuf,
        context: StoreContext,
    ) -> Result<Store> {
        let family = Bytes::copy_from_slice(descriptor.name().as_bytes());
        let manifest_log =
            ManifestLog::new(Arc::clone(&context.files), &dir).with_fence(context.fence.clone());
        // On shared storage this also fences the store against an older
        // owner (a new version recording our epoch), before anything of
        // it is read: what it loads can no longer change under us.
        let (manifest, _) = manifest_log.load_and_fence()?;
        let listed: Vec<String> = manifest
            .files
            .iter()
            .filter(|f| f.link.is_none())
            .map(ManifestFile::file_name)
            .collect();
        context.files.remove_unfinished(&dir)?;
        for path in context.files.list(&dir)? {
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if layout::is_store_file(&path) && !listed.iter().any(|l| l == name) {
                tracing::info!(path = %path.display(), "removing an orphaned store file");
                context.files.delete(&path)?;
            }
        }
        let mut files = Vec::with_capacity(manifest.files.len());
        for entry in &manifest.files {
            files.push(Arc::new(open_file(&context, &dir, entry, &descriptor)?));
        }
        Ok(Store {
            view: RwLock::new(Arc::new(StoreView {
                active: Arc::new(MemStore::with_budget(
                    family.clone(),
                    context.memory.clone(),
                )),
                snapshot: None,
                files,
            })),
            flushed_through: AtomicU64::new(manifest.flushed_sequence),
            snapshot_through: Mutex::new(None),
            manifest: Mutex::new(manifest),
            manifest_log,
            family,
            descriptor: RwLock::new(Arc::new(descriptor)),
            first_sequence,
            dir,
            context,
            compacting: AtomicBool::new(false),
            compacting_major: AtomicBool::new(false),
            compacting_cells_total: AtomicU64::new(0),
            compacted_cells: Arc::new(AtomicU64::new(0)),
            last_major_compaction_ms: AtomicI64::new(0),
            flushes_completed: AtomicU64::new(0),
            compactions_completed: AtomicU64::new(0),
            point_read_files: AtomicU64::new(0),
            point_read_skips: AtomicU64::new(0),
        })
    }

    /// The family's options.
    pub fn descriptor(&self) -> Arc<ColumnFamilyDescriptor> {
        Arc::clone(&self.descriptor.read())
    }

    /// Replaces the family's options (alter), keeping the data. Files
    /// already written keep their format options; caching follows at once.
    pub fn set_descriptor(&self, descriptor: ColumnFamilyDescriptor) {
        for file in &self.view.read().files {
            file.reader
                .set_cache_options(ReaderOptions::for_family(&descriptor));
        }
        *self.descriptor.write() = Arc::new(descriptor);
    }

    /// The family name.
    pub fn family(&self) -> &Bytes {
        &self.family
    }

    /// Sequence id from which WAL edits belong to this family.
    pub fn first_sequence(&self) -> u64 {
        self.first_sequence
    }

    /// Every edit at or below this sequence id is in the store files.
    pub fn flushed_through(&self) -> u64 {
        self.flushed_through.load(Ordering::Acquire)
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True when a recovered WAL edit with this sequence id still needs
    /// replaying into this store.
    pub fn needs_replay(&self, sequence_id: u64) -> bool {
        sequence_id >= self.first_sequence && sequence_id > self.flushed_through()
    }

    /// Adds a cell to the active memstore (WAL replay: the budget counts
    /// it without waiting).
    pub fn insert(&self, cell: &Cell) {
        self.view.read().active.insert(cell);
    }

    /// Adds a cell to the active memstore, moving its bytes out of the
    /// write's reservation in the global budget (when there is one).
    pub fn insert_reserved(&self, cell: &Cell, reservation: Option<&mut Reservation>) {
        let view = self.view.read();
        match reservation {
            Some(reservation) => view.active.insert_reserved(cell, reservation),
            None => view.active.insert(cell),
        }
    }

    /// Sizes and counts.
    pub fn stats(&self) -> StoreStats {
        let view = Arc::clone(&self.view.read());
        StoreStats {
            files: view.files.len(),
            file_bytes: view.files.iter().map(|f| f.entry.size).sum(),
            linked_files: view.files.iter().filter(|f| f.entry.link.is_some()).count(),
            memstore_bytes: (view.active.heap_size()
                + view.snapshot.as_ref().map_or(0, |s| s.heap_size()))
                as u64,
            data_blocks_read: view
                .files
                .iter()
                .map(|f| f.reader.stats().data_blocks_read)
                .sum(),
            data_blocks_from_disk: view
                .files
                .iter()
                .map(|f| f.reader.stats().data_blocks_from_file)
                .sum(),
            point_read_files: self.point_read_files.load(Ordering::Relaxed),
            point_read_skips: self.point_read_skips.load(Ordering::Relaxed),
            compacting_cells_total: self.compacting_cells_total.load(Ordering::Relaxed),
            compacted_cells: self.compacted_cells.load(Ordering::Relaxed),
            last_major_compaction_ms: view
                .files
                .iter()
                .filter(|f| f.entry.major && f.entry.link.is_none())
                .map(|f| f.reader.meta().created_at_ms)
                .max()
                .unwrap_or(0)
                .max(self.last_major_compaction_ms.load(Ordering::Relaxed)),
            flushes_completed: self.flushes_completed.load(Ordering::Relaxed),
            compactions_completed: self.compactions_completed.load(Ordering::Relaxed),
            earliest_put_timestamp: recorded_earliest_put(&view.files),
        }
    }

    /// Bytes in the active memstore, and in the snapshot being flushed.
    pub fn memstore_parts(&self) -> (usize, usize) {
        let view = self.view.read();
        (
            view.active.heap_size(),
            view.snapshot.as_ref().map_or(0, |s| s.heap_size()),
        )
    }

    /// Bytes held in memory (active memstore and any snapshot).
    pub fn memstore_bytes(&self) -> usize {
        let view = self.view.read();
        view.active.heap_size() + view.snapshot.as_ref().map_or(0, |s| s.heap_size())
    }

    /// The merged sources a scan at `read_point` sees (a get reads
    /// [`Store::row_cells`] instead).
    ///
    /// Files whose newest cell is older than `oldest_wanted` are left out
    /// too: their puts are outside the read's time range, and their delete
    /// markers only cover puts older still. (A file of only *newer* cells
    /// cannot be skipped: its versions count towards the family's VERSIONS
    /// and its markers hide older puts.)
    pub fn source(&self, read_point: u64, oldest_wanted: i64) -> Result<MergedSource> {
        let view = Arc::clone(&self.view.read());
        let mut sources: Vec<Box<dyn CellSource>> = Vec::with_capacity(view.files.len() + 2);
        sources.push(Box::new(view.active.source(read_point)));
        if let Some(snapshot) = &view.snapshot {
            sources.push(Box::new(snapshot.source(read_point)));
        }
        for file in &view.files {
            if !self.file_wanted(file, None, oldest_wanted)? {
                continue;
            }
            sources.push(Box::new(file.source(true)));
        }
        Ok(MergedSource::new(sources))
    }

    /// Whether a read must look at `file` (see [`Store::source`]): not when
    /// all its cells are older than `oldest_wanted`, nor, for a point read
    /// of `row`, when its key range or bloom filter rule the row out. Both
    /// read paths ask here, so they skip the same files.
    fn file_wanted(
        &self,
        file: &StoreFile,
        row: Option<&[u8]>,
        oldest_wanted: i64,
    ) -> Result<bool> {
        if file
            .reader
            .time_range()
            .is_some_and(|(_, newest)| newest < oldest_wanted)
        {
            return Ok(false);
        }
        if let Some(row) = row {
            let in_range = file
                .reader
                .key_range()
                .is_some_and(|(first, last)| row >= &first.row[..] && row <= &last.row[..]);
            if !in_range || !file.reader.may_contain_row(row)? {
                self.point_read_skips.fetch_add(1, Ordering::Relaxed);
                return Ok(false);
            }
            self.point_read_files.fetch_add(1, Ordering::Relaxed);
        }
        Ok(true)
    }

    /// The cells of `row` a read at `read_point` sees, in KeyValue order:
    /// the point-get path's read of this store (no sources, no merge
    /// heap). The same parts as [`Store::source`] with a row are read (the
    /// active memstore, the snapshot being flushed, the files
    /// [`Store::file_wanted`] admits, a linked file only within its rows),
    /// each for the row alone; every part's cells are already in order, so
    /// putting them in order is a merge of a few sorted runs.
    pub fn row_cells(&self, read_point: u64, row: &Bytes, oldest_wanted: i64) -> Result<Vec<Cell>> {
        let view = Arc::clone(&self.view.read());
        let descriptor = self.descriptor();
        // Each part stops a column at the family's versions
        // (`version_limit.rs` says why that is exact) unless the row turns
        // out to hold a delete marker: then it is collected again whole.
        if !descriptor.new_version_behavior {
            let versions = descriptor.max_versions.max(descriptor.min_versions);
            let mut limit = ColumnVersionLimit::new(versions);
            let cells =
                self.collect_row(&view, read_point, row, oldest_wanted, Some(&mut limit))?;
            if !limit.dropped_any() || !cells.iter().any(|c| c.cell_type.is_delete()) {
                return Ok(cells);
            }
        }
        self.collect_row(&view, read_point, row, oldest_wanted, None)
    }

    /// The row's cells from every part of `view`, in KeyValue order,
    /// each part's as `limit` lets through.
    fn collect_row(
        &self,
        view: &StoreView,
        read_point: u64,
        row: &Bytes,
        oldest_wanted: i64,
        mut limit: Option<&mut ColumnVersionLimit>,
    ) -> Result<Vec<Cell>> {
        let mut cells = Vec::new();
        // Parts that added cells: each adds one sorted run.
        let mut runs = 0;
        if let Some(limit) = limit.as_deref_mut() {
            limit.next_part();
        }
        view.active
            .row_cells_limited(row, read_point, &mut cells, limit.as_deref_mut());
        runs += usize::from(!cells.is_empty());
        if let Some(snapshot) = &view.snapshot {
            if let Some(limit) = limit.as_deref_mut() {
                limit.next_part();
            }
            let before = cells.len();
            snapshot.row_cells_limited(row, read_point, &mut cells, limit.as_deref_mut());
            runs += usize::from(cells.len() > before);
        }
        for file in &view.files {
            if !self.file_wanted(file, Some(row), oldest_wanted)? || !file.link_admits(row) {
                continue;
            }
            if let Some(limit) = limit.as_deref_mut() {
                limit.next_part();
            }
            let before = cells.len();
            file.reader
                .row_cells_limited(row, &mut cells, limit.as_deref_mut())?;
            runs += usize::from(cells.len() > before);
        }
        if runs > 1 {
            // A stable sort finds the sorted runs and merges them; equal
            // keys (which the view's invariant rules out) would keep the
            // order of the merged sources, memstore first. Every cell here
            // is of `row` and of this store's family, so KeyValue order is
            // qualifier then version: comparing the row and family again
            // (the same bytes every time) was most of the sort's cost.
            cells.sort_by(|a, b| {
                debug_assert!(a.row == b.row && a.family == b.family);
                a.qualifier
                    .cmp(&b.qualifier)
                    .then_with(|| compare_version(a, b))
            });
        }
        Ok(cells)
    }

    /// A scanner of this store for a read.
    pub fn scanner(
        &self,
        read_point: u64,
        qualifiers: Option<std::collections::BTreeSet<Bytes>>,
        options: &ReadOptions,
    ) -> Result<StoreScanner> {
        let source = self.source(read_point, options.time_range.min)?;
        Ok(StoreScanner::new(
            source,
            self.descriptor(),
            qualifiers,
            options,
        ))
    }

    /// True while a snapshot (one a failed flush left) waits to be flushed.
    pub fn has_snapshot(&self) -> bool {
        self.view.read().snapshot.is_some()
    }

    /// Freezes the active memstore as the snapshot to flush and starts a new
    /// one. The caller must hold off writers (the region's update lock) so
    /// no write is half in. Returns false when there is nothing to flush. A
    /// snapshot left by a failed flush is kept and flushed again instead.
    pub fn prepare_flush(&self) -> bool {
        let mut view = self.view.write();
        if view.snapshot.is_some() {
            return true;
        }
        if view.active.is_empty() {
            return false;
        }
        let mut next = (**view).clone();
        next.snapshot = Some(Arc::clone(&next.active));
        next.active = Arc::new(MemStore::with_budget(
            self.family.clone(),
            self.context.memory.clone(),
        ));
        *view = Arc::new(next);
        true
    }

    /// Writes the snapshot to a new store file and commits it. `through` is
    /// the sequence id every snapshotted edit is at or below.
    /// `now` stamps the file's creation time.
    pub fn flush(&self, through: u64, now: i64) -> Result<()> {
        let snapshot = self.view.read().snapshot.clone();
        let Some(snapshot) = snapshot else {
            // Nothing was in memory: everything up to `through` is already in files.
            self.flushed_through.fetch_max(through, Ordering::AcqRel);
            return Ok(());
        };
        // Retrying a snapshot a failed flush left: the edits since (in the
        // active memstore) are at or below the caller's `through` but not
        // in this snapshot, so only the first attempt's `through` is flushed.
        let through = *self.snapshot_through.lock().get_or_insert(through);
        let mut manifest = self.manifest.lock();
        let id = manifest.next_file_id.max(1);
        // Reserve the number first: if the file is published but the
        // manifest commit fails, the retry must not reuse its name.
        manifest.next_file_id = id + 1;
        let mut source = snapshot.source(u64::MAX);
        source.seek(&first_on_row(b""))?;
        let new_file = self.write_file(id, &mut source, false, now)?;
        let mut next = manifest.clone();
        next.next_file_id = id + 1;
        next.flushed_sequence = next.flushed_sequence.max(through);
        if let Some((entry, _)) = &new_file {
            next.files.push(entry.clone());
        }
        *manifest = self.manifest_log.commit(&manifest, next)?;
        {
            let mut view = self.view.write();
            let mut next_view = (**view).clone();
            next_view.snapshot = None;
            if let Some((_, file)) = new_file {
                next_view.files.push(file);
            }
            *view = Arc::new(next_view);
        }
        // The file holds the snapshot's cells now: its bytes leave the
        // global budget (readers still holding it keep reading it).
        snapshot.release_budget();
        *self.snapshot_through.lock() = None;
        self.flushed_through.fetch_max(through, Ordering::AcqRel);
        self.flushes_completed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Writes the cells `source` yields (those `keep` accepts) into store
    /// file `id`; `None` when no cell was kept (no file is left behind).
    fn write_file(
        &self,
        id: u64,
        cells: &mut dyn compaction::CellStream,
        major: bool,
        now: i64,
    ) -> Result<Option<(ManifestFile, Arc<StoreFile>)>> {
        if let Some(fence) = &self.context.fence {
            // A fenced process writes no more files: it could not commit
            // them, and the new owner's ids start only a bounded distance
            // above its own (invariant M3, `manifest.rs`).
            fence.check()?;
        }
        let descriptor = self.descriptor();
        let path = layout::store_file_path(&self.dir, id);
        let mut writer = StoreFileWriter::new(
            Arc::clone(&self.context.files),
            &path,
            WriterOptions::for_family(&descriptor, now),
        )?;
        // A major compaction writes what HBase's would, so its own record
        // of the oldest put is HBase's; a flush or minor compaction keeps
        // more than HBase's would, so it records what HBase's would keep.
        // Only a family keeping deleted cells reads the record: others
        // skip the per-cell work (a record over every put, lower, only
        // makes a later KEEP_DELETED_CELLS compaction keep more).
        let mut floor = (!major && descriptor.keep_deleted_cells != KeepDeletedCells::False)
            .then(|| compaction::KeptPutFloor::new(&descriptor, now));
        let mut written = 0u64;
        while let Some(cell) = cells.next_cell()? {
            writer.add(&cell)?;
            if let Some(floor) = floor.as_mut() {
                floor.observe(&cell);
            }
            written += 1;
        }
        if written == 0 {
            // Dropping an unfinished writer publishes nothing.
            return Ok(None);
        }
        if let Some(floor) = floor {
            writer.record_earliest_put(floor.earliest());
        }
        let meta = writer.finish()?;
        let entry = ManifestFile {
            id,
            size: meta.file_size,
            max_sequence: meta.max_sequence_id,
            cells: meta.cell_count,
            major,
            link: None,
        };
        let file = open_file(&self.context, &self.dir, &entry, &descriptor)?;
        Ok(Some((entry, Arc::new(file))))
    }

    /// Compacts the store: a major compaction rewrites every file and drops
    /// what no read can return any more; a minor one merges the files the
    /// policy picks and drops nothing. Returns false when there was nothing
    /// to do (or another compaction of this store is running).
    pub fn compact(&self, major: bool, now: i64) -> Result<bool> {
        if self.compacting.swap(true, Ordering::AcqRel) {
            return Ok(false);
        }
        self.compacting_major.store(major, Ordering::Release);
        let result = self.compact_inner(major, now);
        // Idle again: progress reads 0 of 0.
        self.compacting_cells_total.store(0, Ordering::Relaxed);
        self.compacted_cells.store(0, Ordering::Relaxed);
        if let Ok(true) = result {
            self.compactions_completed.fetch_add(1, Ordering::Relaxed);
            if major {
                self.last_major_compaction_ms
                    .fetch_max(now, Ordering::Relaxed);
            }
        }
        self.compacting.store(false, Ordering::Release);
        result
    }

    fn compact_inner(&self, major: bool, now: i64) -> Result<bool> {
        let files = self.view.read().files.clone();
        // One reading of the family's options decides and drives the whole
        // compaction, even if an alter lands meanwhile.
        let descriptor = self.descriptor();
        let has_links = files.iter().any(|f| f.entry.link.is_some());
        let selected: Vec<Arc<StoreFile>> = if major || has_links {
            // A lone major-compacted file only needs rewriting when time can
            // have expired more of it since (a TTL), or, keeping deleted
            // cells, when the first pass dropped the oldest puts: a second
            // one drops the markers older than the oldest put it left.
            // HBase rewrites a lone major-compacted file when asked to
            // (checked on the reference HBase: the file's major compaction
            // time moves).
            let nothing_new = files.len() == 1
                && files[0].entry.major
                && descriptor.ttl_seconds.is_none()
                && descriptor.keep_deleted_cells == KeepDeletedCells::False;
            if files.is_empty() || nothing_new {
                return Ok(false);
            }
            // A compaction that rewrites links must take every file: the
            // links go, so the parent's files can be deleted.
            files
        } else {
            let sizes: Vec<u64> = files.iter().map(|f| f.entry.size).collect();
            match self.context.policy.select(&sizes) {
                Some(range) => files[range].to_vec(),
                None => return Ok(false),
            }
        };
        let id = {
            let mut manifest = self.manifest.lock();
            let id = manifest.next_file_id.max(1);
            // Reserve the id so a concurrent flush does not take it.
            manifest.next_file_id = id + 1;
            id
        };
        // Progress: the inputs' cell counts (from the manifest) against
        // the cells read from them, counted as the merge advances.
        self.compacted_cells.store(0, Ordering::Relaxed);
        self.compacting_cells_total.store(
            selected.iter().map(|f| f.entry.cells).sum(),
            Ordering::Relaxed,
        );
        let sources: Vec<Box<dyn CellSource>> = selected
            .iter()
            // The inputs are read once and deleted after: not cached.
            .map(|f| {
                Box::new(Counted {
                    inner: f.source(false),
                    read: Arc::clone(&self.compacted_cells),
                }) as Box<dyn CellSource>
            })
            .collect();
        let mut merged = MergedSource::new(sources);
        merged.seek(&first_on_row(b""))?;
        let output = if major && descriptor.keep_deleted_cells == KeepDeletedCells::False {
            let mut rules = compaction::Collecting::new(merged, Arc::clone(&descriptor), now);
            self.write_file(id, &mut rules, true, now)?
        } else if major {
            let earliest_put = recorded_earliest_put(&selected);
            let mut retain = compaction::Retaining::new(merged, &descriptor, now, earliest_put);
            self.write_file(id, &mut retain, true, now)?
        } else {
            self.write_file(id, &mut merged, false, now)?
        };
        let selected_ids: Vec<u64> = selected.iter().map(|f| f.entry.id).collect();
        {
            let mut manifest = self.manifest.lock();
            let mut next = manifest.clone();
            next.files.retain(|f| !selected_ids.contains(&f.id));
            if let Some((entry, _)) = &output {
                next.files.push(entry.clone());
            }
            next.next_file_id = next.next_file_id.max(id + 1);
            *manifest = self.manifest_log.commit(&manifest, next)?;
            let mut view = self.view.write();
            let mut next_view = (**view).clone();
            next_view
                .files
                .retain(|f| !selected_ids.contains(&f.entry.id));
            if let Some((_, file)) = output {
                next_view.files.push(file);
            }
            *view = Arc::new(next_view);
        }
        for file in selected {
            file.obsolete.store(true, Ordering::Release);
        }
        Ok(true)
    }

    /// Adds the cells `cells` yields (strictly increasing KeyValue order,
    /// every one of this store's family) as one new store file: HBase's
    /// bulk load. The region chose their sequence ids
    /// ([`crate::region::Region::bulk_load`]). Returns the manifest entry,
    /// `None` when `cells` yielded nothing (no file is left behind).
    ///
    /// The file is written outside the manifest lock (a flush or a
    /// compaction of the store goes on meanwhile: its id is reserved
    /// first), then committed and made visible under it, as a flush does,
    /// so no concurrent commit can drop it from the view.
    pub fn bulk_load(
        &self,
        cells: &mut dyn compaction::CellStream,
        now: i64,
    ) -> Result<Option<ManifestFile>> {
        let id = {
            let mut manifest = self.manifest.lock();
            let id = manifest.next_file_id.max(1);
            manifest.next_file_id = id + 1;
            id
        };
        let Some((entry, file)) = self.write_file(id, cells, false, now)? else {
            return Ok(None);
        };
        let mut manifest = self.manifest.lock();
        let mut next = manifest.clone();
        next.next_file_id = next.next_file_id.max(id + 1);
        next.files.push(entry.clone());
        *manifest = self.manifest_log.commit(&manifest, next)?;
        let mut view = self.view.write();
        let mut next_view = (**view).clone();
        next_view.files.push(file);
        *view = Arc::new(next_view);
        Ok(Some(entry))
    }

    /// The highest sequence id of any cell in the store's files (0 with
    /// none): a region reopened must give new writes higher ids, even when
    /// a bulk load put cells above what its log and flushes record.
    pub fn max_file_sequence(&self) -> u64 {
        self.manifest
            .lock()
            .files
            .iter()
            .map(|f| f.max_sequence)
            .max()
            .unwrap_or(0)
    }

    /// True when the policy would pick files for a minor compaction, or
    /// links wait to be rewritten.
    pub fn needs_compaction(&self) -> bool {
        let view = Arc::clone(&self.view.read());
        // A split or merge parent waits for its daughters' rewrite; a
        // snapshot's files shared by a clone do not (they stay shared
        // until the policy picks the store anyway).
        if view
            .files
            .iter()
            .any(|f| f.entry.link.as_ref().is_some_and(|l| l.table.is_none()))
        {
            return true;
        }
        let sizes: Vec<u64> = view.files.iter().map(|f| f.entry.size).collect();
        self.context.policy.select(&sizes).is_some()
    }

    /// What the store's compactions are doing now: a link rewrite that has
    /// not started yet counts as a minor compaction due (it starts at once,
    /// see [`Store::needs_compaction`]), as HBase reports the compaction a
    /// daughter's reference files queue.
    pub fn compaction_state(&self) -> CompactionState {
        if self.compacting.load(Ordering::Acquire) {
            if self.compacting_major.load(Ordering::Acquire) {
                CompactionState::Major
            } else {
                CompactionState::Minor
            }
        } else if self.has_parent_links() {
            CompactionState::Minor
        } else {
            CompactionState::None
        }
    }

    /// True while the store reads files of another region through links.
    pub fn has_links(&self) -> bool {
        self.view
            .read()
            .files
            .iter()
            .any(|f| f.entry.link.is_some())
    }

    /// True while the store links to a file of a split or merge parent
    /// (a link naming no table). Links naming a table (a clone or restore
    /// reading a snapshot's files) do not count: nothing waits for them to
    /// be rewritten, so they stay shared until a compaction comes by.
    pub fn has_parent_links(&self) -> bool {
        self.view
            .read()
            .files
            .iter()
            .any(|f| f.entry.link.as_ref().is_some_and(|l| l.table.is_none()))
    }

    /// Ids of the regions whose files this store links to.
    pub fn linked_regions(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .manifest
            .lock()
            .files
            .iter()
            .filter_map(|f| f.link.as_ref().map(|l| l.region_id))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Links to this store's committed files, restricted to the rows in
    /// `[lower, upper)` (empty: unbounded), for a region taking over those
    /// rows (split daughter or merged region). A file that is itself a link
    /// is linked at its owner, with the narrower range, so links never
    /// chain. `region_id` is this store's region. Call it only once the
    /// region takes no more writes and is flushed.
    pub fn links_for(&self, region_id: u64, lower: &Bytes, upper: &Bytes) -> Vec<ManifestFile> {
        self.manifest
            .lock()
            .files
            .iter()
            .filter_map(|f| {
                let (table, owner, file_id, l, u) = match &f.link {
                    Some(link) => (
                        link.table.clone(),
                        link.region_id,
                        link.file_id,
                        &link.lower,
                        &link.upper,
                    ),
                    None => (None, region_id, f.id, lower, upper),
                };
                let link_lower = std::cmp::max(l, lower).clone();
                let link_upper = match (u.is_empty(), upper.is_empty()) {
                    (true, _) => upper.clone(),
                    (false, true) => u.clone(),
                    (false, false) => std::cmp::min(u, upper).clone(),
                };
                let empty = !link_upper.is_empty() && link_upper <= link_lower;
                (!empty).then(|| ManifestFile {
                    id: 0,
                    size: f.size,
                    max_sequence: f.max_sequence,
                    cells: f.cells,
                    major: false,
                    link: Some(FileLink {
                        table,
                        region_id: owner,
                        file_id,
                        lower: link_lower,
                        upper: link_upper,
                    }),
                })
            })
            .collect()
    }

    /// The committed manifest's file entries (own files and links).
    pub fn manifest_files(&self) -> Vec<ManifestFile> {
        self.manifest.lock().files.clone()
    }

    /// Writes the first manifest of a new region's store in `dir`: the
    /// given links (numbered here) and the sequence id its data is flushed
    /// through.
    pub fn seed(
        files: &Arc<dyn FileStore>,
        dir: &Path,
        mut links: Vec<ManifestFile>,
        flushed_sequence: u64,
        fence: Option<Arc<Fence>>,
    ) -> Result<()> {
        for (i, link) in links.iter_mut().enumerate() {
            link.id = i as u64 + 1;
        }
        let manifest = StoreManifest {
            version: 0,
            flushed_sequence,
            next_file_id: links.len() as u64 + 1,
            files: links,
            epoch: 0,
        };
        ManifestLog::new(Arc::clone(files), dir)
            .with_fence(fence)
            .commit(&StoreManifest::default(), manifest)?;
        Ok(())
    }

    /// Rows near which the store's data can be cut, in order: the rows its
    /// largest file's index names, limited to `(lower, upper)`. A file of
    /// one or two data blocks is read whole for its distinct rows.
    pub fn split_candidates(&self, lower: &[u8], upper: &[u8]) -> Result<Vec<Bytes>> {
        let files = self.view.read().files.clone();
        let Some(largest) = files.iter().max_by_key(|f| f.entry.size) else {
            return Ok(Vec::new());
        };
        let mut rows = largest.reader.index_rows()?;
        if rows.len() < 3 && largest.reader.index_levels() == 1 {
            rows.clear();
            let mut source = largest.source(false);
            source.seek(&first_on_row(lower))?;
            while let Some(cell) = source.peek() {
                if rows.last() != Some(&cell.row) {
                    rows.push(cell.row.clone());
                }
                source.advance()?;
            }
        }
        rows.retain(|r| &r[..] > lower && (upper.is_empty() || &r[..] < upper));
        Ok(rows)
    }

    /// Deletes every file of the store (the family was dropped).
    pub fn destroy(&self) -> Result<()> {
        for path in self.context.files.list(&self.dir)? {
            self.context.files.delete(&path)?;
        }
        Ok(())
    }
}

fn open_file(
    context: &StoreContext,
    dir: &Path,
    entry: &ManifestFile,
    family: &ColumnFamilyDescriptor,
) -> Result<StoreFile> {
    let path = entry.path(dir)?;
    // A fresh cache id for every open: blocks cached under an earlier open
    // of a file with the same name can never be served for this one.
    let reader = StoreFileReader::open_with(
        Arc::clone(&context.files),
        &path,
        next_file_id(),
        context.cache.clone(),
        ReaderOptions::for_family(family),
    )?;
    Ok(StoreFile {
        entry: entry.clone(),
        reader,
        path,
        files: Arc::clone(&context.files),
        obsolete: AtomicBool::new(false),
    })
}
