//! A region: one key range of a table, with a store per column family.
//!
//! Writes follow one pipeline, whatever the operation:
//!
//! 1. lock the row(s);
//! 2. resolve the mutation into cells: server timestamps for `LATEST`,
//!    "latest version" deletes turned into exact ones, increments and
//!    appends computed from the current values;
//! 3. wait for memstore room: the region's own blocking size, then a
//!    reservation of the cells' bytes in the server's global memstore
//!    budget (slowed past its low-water mark, held at its limit; see
//!    `memory.rs`);
//! 4. take a write number from MVCC (it is also the WAL sequence id);
//! 5. append one WAL record per row mutation and wait for the durability
//!    asked for (group commit shares the wait with other writers);
//! 6. insert the cells into the family memstores (their bytes move from
//!    the reservation to the memstores);
//! 7. complete the write number and wait until it is visible, then unlock;
//!    past the flush size (or the budget's low-water mark) ask for flushes.
//!
//! Readers never lock: they take the MVCC read point and see every write at
//! or below it, in full (see `mvcc.rs`).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};

use basalt_types::cell::escape_bytes;
use basalt_types::filter::CellFilter;
use basalt_types::mutation::{validate_row, validate_timestamp, Condition};
use basalt_types::query::{prefix_successor, ColumnSelection};
use basalt_types::{
    Append, Cell, CellType, CheckAndMutate, ColumnFamilyDescriptor, CompareOp, Delete, Durability,
    Error, ErrorKind, Get, Increment, Mutation, Put, Result, RowMutations, RowResult, Scan,
    TimeRange, LATEST_TIMESTAMP,
};

use crate::clock::Clock;
use crate::key_load::{KeyLoad, KeyLoadConfig, KeyLoadMinute};
use crate::layout;
use crate::load::{LoadCounters, RegionLoad};
use crate::load_split::LoadSplitRecorder;
use crate::manifest::ManifestFile;
use crate::mvcc::Mvcc;
use crate::observer::{self, AfterCommit, PendingWrite, WriteObserver};
use crate::point_get::{self, FamilyRow};
use crate::row_lock::RowLocks;
use crate::scan::{ReadOptions, RegionScanner, RowRange, RowRules, ScanShape, StoreScanner};
use crate::store::{CompactionState, Store, StoreContext, StoreStats};
use crate::wal::{WalEdit, WriteAheadLog};

/// Identity and key range of a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionInfo {
    /// Unique id (HBase's region id: the creation time in milliseconds, made
    /// unique by the catalog). WAL records carry it.
    pub id: u64,
    /// The table the region belongs to.
    pub table: String,
    /// First row (inclusive); empty is the start of the table.
    pub start_key: Bytes,
    /// End row (exclusive); empty is the end of the table.
    pub end_key: Bytes,
}

impl RegionInfo {
    /// True when `row` belongs to this region.
    pub fn contains(&self, row: &[u8]) -> bool {
        row >= &self.start_key[..] && (self.end_key.is_empty() || row < &self.end_key[..])
    }

    /// HBase's region name: `<table>,<start key>,<region id>.<encoded name>.`
    /// (the start key is raw bytes, so the name is bytes too).
    pub fn region_name(&self) -> Bytes {
        let mut name = self.name_base();
        name.push(b'.');
        name.extend_from_slice(self.encoded_name().as_bytes());
        name.push(b'.');
        Bytes::from(name)
    }

    /// HBase's encoded region name: the MD5 hex of `<table>,<start key>,<id>`.
    /// Short and printable, it is what `merge_region` and the logs use.
    pub fn encoded_name(&self) -> String {
        use md5::{Digest, Md5};
        let digest = Md5::digest(self.name_base());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn name_base(&self) -> Vec<u8> {
        let mut base = Vec::with_capacity(self.table.len() + self.start_key.len() + 24);
        base.extend_from_slice(self.table.as_bytes());
        base.push(b',');
        base.extend_from_slice(&self.start_key);
        base.push(b',');
        base.extend_from_slice(self.id.to_string().as_bytes());
        base
    }
}

/// Limits and knobs of a region.
#[derive(Debug, Clone)]
pub struct RegionConfig {
    /// Largest value accepted in one cell (HBase's `hbase.client.keyvalue.maxsize`).
    pub max_value_bytes: usize,
    /// Row lock stripes.
    pub row_lock_stripes: usize,
    /// Flush the region's memstores when together they pass this size.
    pub memstore_flush_bytes: usize,
    /// Writers wait (they are slowed, never failed) while the memstores
    /// hold more than this: flushes are falling behind.
    pub memstore_block_bytes: usize,
    /// The bounds of the region's key load (`key_load.rs`).
    pub key_load: KeyLoadConfig,
}

impl Default for RegionConfig {
    fn default() -> Self {
        RegionConfig {
            max_value_bytes: 10 * 1024 * 1024,
            row_lock_stripes: 1024,
            memstore_flush_bytes: 128 * 1024 * 1024,
            memstore_block_bytes: 512 * 1024 * 1024,
            key_load: KeyLoadConfig::default(),
        }
    }
}

/// A region of a table.
#[derive(Debug)]
pub struct Region {
    info: RegionInfo,
    stores: RwLock<BTreeMap<Bytes, Arc<Store>>>,
    mvcc: Mvcc,
    row_locks: RowLocks,
    /// The last server-assigned timestamp of each recently written row, so
    /// that a row's mutations get strictly increasing server timestamps.
    row_clock: RowClock,
    /// The last order timestamp each recently written row gave its write
    /// observer (`observer.rs`): apart from `row_clock`, so that
    /// observing a region changes no cell's timestamp.
    order_clock: RowClock,
    /// Set once recovery is over: replay fills the memstores before the log
    /// accepts new writes.
    wal: OnceLock<Arc<dyn WriteAheadLog>>,
    clock: Arc<dyn Clock>,
    config: RegionConfig,
    load: LoadCounters,
    /// Which row keys were read and written, minute by minute.
    key_load: KeyLoad,
    /// Samples of the rows requests touch, for load-based split.
    load_split: LoadSplitRecorder,
    dir: PathBuf,
    context: StoreContext,
    /// Writers hold it shared from taking a write number until the write is
    /// complete; a flush takes it exclusively for the instant it needs to
    /// freeze the memstores, so no write straddles the snapshot.
    updates: RwLock<()>,
    /// One flush of this region at a time.
    flush_lock: Mutex<()>,
    /// Signalled after each flush, for writers held back by a full memstore.
    flushed: Condvar,
    flushed_mutex: Mutex<()>,
    /// Asks for a background flush; `None` flushes in the writer's thread.
    flush_requester: OnceLock<FlushRequester>,
    /// Set once the region hands its rows over (split or merge): writes
    /// are refused with `NotServingRegion` from then on, checked under
    /// `updates` so none is half applied. Reads go on: the data is frozen.
    closed: AtomicBool,
    /// Flushes that failed since the region opened, and the last failure's
    /// message: a writer held back by full memstores gives up only once a
    /// flush attempted during its wait has failed (see
    /// `wait_for_memstore_room`).
    failed_flushes: AtomicU64,
    last_flush_failure: Mutex<String>,
    /// Held by a compaction or a bulk load while it runs, and by the
    /// hand-over while it closes the region: new regions link to the files
    /// the region has then, so no compaction may replace them and no bulk
    /// load add to them afterwards.
    compaction_gate: Mutex<()>,
    /// Set when the region's files could not be opened (HBase's
    /// `FAILED_OPEN`): it holds no stores and refuses every read and write
    /// with the reason, so the rest of the table can serve.
    open_failure: Option<OpenFailure>,
    /// Work around each write (`observer.rs`): the database layer keeps
    /// secondary indexes with it. `None` costs a write nothing.
    observer: RwLock<Option<Arc<dyn WriteObserver>>>,
}

/// Why a region could not be opened (HBase's `FAILED_OPEN` state): the file
/// and offset at fault when the error names them, and the error's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFailure {
    /// The file that could not be read (the region directory when the
    /// error named none).
    pub path: PathBuf,
    /// Offset of the damage in that file (0 when unknown).
    pub offset: u64,
    /// The open error, as it printed.
    pub reason: String,
}

impl OpenFailure {
    /// Describes `error`, raised while opening the region in `dir`.
    pub fn from_error(error: &Error, dir: &std::path::Path) -> Self {
        let (path, offset) = match error {
            Error::Corruption { path, offset, .. } => (path.clone(), *offset),
            Error::Io { path, .. } => (path.clone(), 0),
            _ => (dir.to_path_buf(), 0),
        };
        OpenFailure {
            path,
            offset,
            reason: error.to_string(),
        }
    }
}

/// Called with a region id when that region wants a background flush.
#[derive(Clone)]
pub struct FlushRequester(pub Arc<dyn Fn(u64) + Send + Sync>);

impl std::fmt::Debug for FlushRequester {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FlushRequester")
    }
}

/// One family of a region being opened, and where its WAL edits start.
#[derive(Debug, Clone)]
pub struct FamilyState {
    /// The family.
    pub descriptor: ColumnFamilyDescriptor,
    /// See [`Store::first_sequence`].
    pub first_sequence: u64,
}

/// A row mutation resolved into cells, waiting for its turn in the pipeline.
struct ResolvedWrite {
    cells: Vec<Cell>,
    durability: Durability,
}

impl Region {
    /// Opens a region: each family's store from its directory under `dir`
    /// (manifest and store files), with empty memstores. Replay its WAL
    /// edits with [`Region::replay`], call [`Region::finish_recovery`], and
    /// hand it the log with [`Region::attach_wal`] before writing.
    pub fn open(
        info: RegionInfo,
        families: Vec<FamilyState>,
        dir: PathBuf,
        context: StoreContext,
        clock: Arc<dyn Clock>,
        config: RegionConfig,
    ) -> Result<Self> {
        let mut stores = BTreeMap::new();
        for f in families {
            let name = Bytes::copy_from_slice(f.descriptor.name().as_bytes());
            let store_dir = layout::store_dir(&dir, f.descriptor.name());
            let store = Store::open(f.descriptor, f.first_sequence, store_dir, context.clone())?;
            stores.insert(name, Arc::new(store));
        }
        Ok(Region::assemble(
            info, stores, dir, context, clock, config, false, None,
        ))
    }

    /// A region whose files could not be opened: it keeps its identity (so
    /// it can be listed, and so the log segments holding its edits are
    /// kept: with no stores it has flushed nothing) but holds no data and
    /// answers every read and write with an error naming the file.
    pub fn failed_open(
        info: RegionInfo,
        dir: PathBuf,
        context: StoreContext,
        clock: Arc<dyn Clock>,
        config: RegionConfig,
        failure: OpenFailure,
    ) -> Self {
        // Never serving: no split, merge or compaction touches it.
        Region::assemble(
            info,
            BTreeMap::new(),
            dir,
            context,
            clock,
            config,
            true,
            Some(failure),
        )
    }

    /// The one place a `Region` is put together: a serving region
    /// (`open`) or one whose files could not be opened (`failed_open`).
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        info: RegionInfo,
        stores: BTreeMap<Bytes, Arc<Store>>,
        dir: PathBuf,
        context: StoreContext,
        clock: Arc<dyn Clock>,
        config: RegionConfig,
        closed: bool,
        open_failure: Option<OpenFailure>,
    ) -> Region {
        Region {
            info,
            stores: RwLock::new(stores),
            mvcc: Mvcc::new(1),
            row_locks: RowLocks::new(config.row_lock_stripes),
            row_clock: RowClock::new(),
            order_clock: RowClock::new(),
            wal: OnceLock::new(),
            clock,
            key_load: KeyLoad::new(config.key_load),
            config,
            load: LoadCounters::default(),
            load_split: LoadSplitRecorder::default(),
            dir,
            context,
            updates: RwLock::new(()),
            flush_lock: Mutex::new(()),
            flushed: Condvar::new(),
            flushed_mutex: Mutex::new(()),
            flush_requester: OnceLock::new(),
            closed: AtomicBool::new(closed),
            failed_flushes: AtomicU64::new(0),
            last_flush_failure: Mutex::new(String::new()),
            compaction_gate: Mutex::new(()),
            observer: RwLock::new(None),
            open_failure,
        }
    }

    /// Why the region could not be opened, if it could not (`FAILED_OPEN`).
    pub fn open_failure(&self) -> Option<&OpenFailure> {
        self.open_failure.as_ref()
    }

    /// The `Fenced` error once a newer owner fenced this process (or this
    /// opening of the region), if one has.
    fn fence_error(&self) -> Option<Error> {
        self.context.fence.as_ref().and_then(|f| f.check().err())
    }

    /// The error every request to a `FAILED_OPEN` region gets: corruption
    /// at the file and offset that made the open fail.
    fn check_opened(&self) -> Result<()> {
        // Fencing invariant R1: once a newer owner fenced this process,
        // no region answers: a read could return data the newer owner has
        // since overwritten, and a write could never become durable.
        if let Some(fence) = &self.context.fence {
            fence.check()?;
        }
        match &self.open_failure {
            None => Ok(()),
            Some(f) => Err(Error::Corruption {
                path: f.path.clone(),
                offset: f.offset,
                message: format!(
                    "region {} of table {} is FAILED_OPEN: {}",
                    self.info.encoded_name(),
                    self.info.table,
                    f.reason
                ),
            }),
        }
    }

    /// Routes flush requests to a background scheduler (once).
    pub fn set_flush_requester(&self, requester: FlushRequester) {
        // A second call would be a caller bug; the first requester stays.
        let _ = self.flush_requester.set(requester);
    }

    /// The region's directory.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Gives the region the log its writes go to (once; later calls are ignored).
    pub fn attach_wal(&self, wal: Arc<dyn WriteAheadLog>) {
        // A second attach would be a caller bug; the first log stays in use.
        let _ = self.wal.set(wal);
    }

    fn wal(&self) -> Result<&Arc<dyn WriteAheadLog>> {
        self.wal.get().ok_or_else(|| {
            Error::Closed(format!(
                "region {} has no write-ahead log yet",
                self.info.id
            ))
        })
    }

    /// The region's identity.
    pub fn info(&self) -> &RegionInfo {
        &self.info
    }

    /// Applies one recovered WAL edit. Returns false when the edit was
    /// ignored entirely (families deleted since).
    pub fn replay(&self, edit: &WalEdit) -> bool {
        let stores = self.stores.read();
        let mut applied = false;
        for cell in &edit.cells {
            if let Some(store) = stores.get(&cell.family) {
                if store.needs_replay(edit.sequence_id) {
                    let mut cell = cell.clone();
                    cell.sequence_id = edit.sequence_id;
                    store.insert(&cell);
                    applied = true;
                }
            }
        }
        applied
    }

    /// Ends recovery: new writes get sequence ids above `max_replayed`,
    /// above every family's first sequence and above every cell in the
    /// store files (a bulk load's cells are in no log).
    pub fn finish_recovery(&mut self, max_replayed: u64) {
        let stores = self.stores.read();
        let families_floor = stores
            .values()
            .map(|s| s.first_sequence())
            .max()
            .unwrap_or(0);
        // Edits already in store files may no longer be in the log at all.
        let flushed = stores
            .values()
            .map(|s| s.flushed_through())
            .max()
            .unwrap_or(0);
        let in_files = stores
            .values()
            .map(|s| s.max_file_sequence())
            .max()
            .unwrap_or(0);
        let next = max_replayed
            .max(flushed)
            .max(in_files)
            .saturating_add(1)
            .max(families_floor);
        drop(stores);
        self.mvcc = Mvcc::new(next);
    }

    /// The stores, by family name.
    pub fn stores(&self) -> Vec<Arc<Store>> {
        self.stores.read().values().cloned().collect()
    }

    /// Adds a family (its WAL edits start at the current sequence id).
    pub fn add_family(&self, descriptor: ColumnFamilyDescriptor) -> Result<u64> {
        let mut stores = self.stores.write();
        let name = Bytes::copy_from_slice(descriptor.name().as_bytes());
        if stores.contains_key(&name) {
            return Err(Error::invalid(format!(
                "column family {} already exists in table {}",
                descriptor.name(),
                self.info.table
            )));
        }
        let first = self.mvcc.next_write();
        let store_dir = layout::store_dir(&self.dir, descriptor.name());
        // A family of the same name deleted earlier may have left files if
        // its deletion was interrupted: they are not this family's.
        for path in self.context.files.list(&store_dir)? {
            self.context.files.delete(&path)?;
        }
        let store = Store::open(descriptor, first, store_dir, self.context.clone())?;
        stores.insert(name, Arc::new(store));
        Ok(first)
    }

    /// Changes a family's options, keeping its data.
    pub fn modify_family(&self, descriptor: ColumnFamilyDescriptor) -> Result<()> {
        let stores = self.stores.read();
        let name = Bytes::copy_from_slice(descriptor.name().as_bytes());
        let Some(store) = stores.get(&name) else {
            return Err(self.no_such_family(&name));
        };
        store.set_descriptor(descriptor);
        Ok(())
    }

    /// Removes a family and deletes its data.
    pub fn remove_family(&self, name: &[u8]) -> Result<()> {
        let removed = self.stores.write().remove(name);
        match removed {
            Some(store) => store.destroy(),
            None => Err(self.no_such_family(name)),
        }
    }

    fn no_such_family(&self, family: &[u8]) -> Error {
        Error::NoSuchFamily {
            table: self.info.table.clone(),
            family: String::from_utf8_lossy(family).into_owned(),
        }
    }

    fn check_row(&self, row: &[u8]) -> Result<()> {
        self.check_opened()?;
        validate_row(row)?;
        if !self.info.contains(row) {
            return Err(Error::invalid(format!(
                "row '{}' is outside region [{}, {}) of table {}",
                escape_bytes(row),
                escape_bytes(&self.info.start_key),
                escape_bytes(&self.info.end_key),
                self.info.table
            )));
        }
        Ok(())
    }

    /// [`Region::check_row`] for a write, which a region that handed its
    /// rows over refuses before reading anything: an increment, a
    /// check-and-mutate or an index's observer would otherwise read files
    /// the janitor may have deleted already (a batch's routes are taken
    /// once, and its first group's flush can split or merge the region
    /// its next group goes to).
    fn check_write_row(&self, row: &[u8]) -> Result<()> {
        self.check_row(row)?;
        if self.closed.load(Ordering::Acquire) {
            return Err(self.not_serving());
        }
        Ok(())
    }

    /// A call that failed reading or writing storage on a region that has
    /// handed its rows over failed because that region is gone: once its
    /// successors no longer link to its files, the janitor deletes them,
    /// while a caller holding an old route may still be reading. Such a
    /// caller is told to route again (`NotServingRegion`), as a write is,
    /// rather than shown an I/O error about a file no region uses any
    /// more. Other errors (a bad argument) are the answer wherever asked.
    fn unless_retired<T>(&self, result: Result<T>) -> Result<T> {
        match result {
            Err(e)
                if self.closed.load(Ordering::Acquire)
                    && matches!(e.kind(), ErrorKind::Io | ErrorKind::Corruption) =>
            {
                tracing::debug!(region = self.info.id, error = %e, "a retired region's read failed: routed again");
                Err(self.not_serving())
            }
            other => other,
        }
    }

    /// Which row keys were read and written, minute by minute, over the
    /// last `key_load.minutes` minutes, oldest first, the current partial
    /// minute last (see `key_load.rs`). Empty when the key load is off.
    pub fn key_load(&self) -> Vec<KeyLoadMinute> {
        self.key_load.snapshot(self.clock.now_millis())
    }

    /// Current load: totals since the region opened and recent rates.
    pub fn load(&self) -> RegionLoad {
        RegionLoad {
            memstore_bytes: self.memstore_bytes() as u64,
            ..self.load.snapshot(self.clock.as_ref())
        }
    }

    /// The load-based split sampler (`load_split.rs`).
    pub fn load_split(&self) -> &LoadSplitRecorder {
        &self.load_split
    }

    /// Installs (or with `None` removes) the work run around each write
    /// (`observer.rs`). Writes already past their resolution keep the
    /// observer they started with.
    pub fn set_write_observer(&self, observer: Option<Arc<dyn WriteObserver>>) {
        *self.observer.write() = observer;
    }

    fn write_observer(&self) -> Option<Arc<dyn WriteObserver>> {
        self.observer.read().clone()
    }

    /// Step 1 of `observer.rs` for one row's resolved cells; the caller
    /// holds the row lock.
    fn observe(
        &self,
        observer: Option<&Arc<dyn WriteObserver>>,
        row: &Bytes,
        cells: &[Cell],
        earlier: &[Cell],
        staged: &StagedTimestamps,
    ) -> Result<Option<AfterCommit>> {
        let Some(observer) = observer else {
            return Ok(None);
        };
        // Strictly above the row's previous order timestamp (the row lock
        // is held, so the row's writes come here one at a time), and not
        // below the write's own server timestamp.
        let now = self.clock.now_millis();
        let order_ts = self
            .order_clock
            .next(row, now)
            .max(staged.rows.get(row).copied().unwrap_or(now));
        let mut write = PendingWrite {
            row,
            cells,
            earlier,
            order_ts,
        };
        let after = observer.before_commit(self, &mut write);
        // Recorded even when the observer failed: a timestamp it may have
        // used is never handed out again. The observer may only raise it.
        self.order_clock
            .record(row, write.order_ts.max(order_ts), now);
        after
    }

    // ---------------------------------------------------------------- writes

    /// Applies a put.
    pub fn put(&self, put: &Put) -> Result<()> {
        self.mutate(Mutation::Put(put.clone())).map(drop)
    }

    /// Applies a delete.
    pub fn delete(&self, delete: &Delete) -> Result<()> {
        self.mutate(Mutation::Delete(delete.clone())).map(drop)
    }

    /// One mutation, atomically; the new values of an increment or append.
    fn mutate(&self, mutation: Mutation) -> Result<RowResult> {
        let row = mutation.row().clone();
        self.check_write_row(&row)?;
        self.unless_retired(self.mutate_checked(mutation, row))
    }

    fn mutate_checked(&self, mutation: Mutation, row: Bytes) -> Result<RowResult> {
        let durability = mutation.durability();
        let observer = self.write_observer();
        let (result, after) = {
            let _lock = self.row_locks.lock(&row);
            let mut staged = StagedTimestamps::new();
            let mut computed = Vec::new();
            let cells = self.resolve(
                &row,
                std::slice::from_ref(&mutation),
                &mut staged,
                &mut computed,
            )?;
            let after = self.observe(observer.as_ref(), &row, &cells, &[], &staged)?;
            self.write(vec![ResolvedWrite { cells, durability }], staged)?;
            (result_of(&row, computed), after)
        };
        observer::run_all(after.into_iter().collect());
        Ok(result)
    }

    /// Applies the mutations of one row atomically; returns the new values
    /// of its increments and appends (empty when it has none).
    pub fn mutate_row(&self, mutations: &RowMutations) -> Result<RowResult> {
        self.check_write_row(mutations.row())?;
        self.unless_retired(self.mutate_row_checked(mutations))
    }

    fn mutate_row_checked(&self, mutations: &RowMutations) -> Result<RowResult> {
        let row = mutations.row();
        let observer = self.write_observer();
        let (result, after) = {
            let _lock = self.row_locks.lock(row);
            let mut staged = StagedTimestamps::new();
            let mut computed = Vec::new();
            let cells = self.resolve(row, mutations.mutations(), &mut staged, &mut computed)?;
            let after = self.observe(observer.as_ref(), row, &cells, &[], &staged)?;
            self.write(
                vec![ResolvedWrite {
                    cells,
                    durability: mutations.durability(),
                }],
                staged,
            )?;
            (result_of(row, computed), after)
        };
        observer::run_all(after.into_iter().collect());
        Ok(result)
    }

    /// Applies many mutations, each atomically on its row; the batch as a
    /// whole is not atomic. They share one WAL sync.
    pub fn batch(&self, mutations: &[Mutation]) -> Vec<Result<()>> {
        let mut results: Vec<Result<()>> = mutations
            .iter()
            .map(|m| self.check_write_row(m.row()))
            .collect();
        let rows = mutations
            .iter()
            .zip(&results)
            .filter(|(_, r)| r.is_ok())
            .map(|(m, _)| &m.row()[..]);
        let locks = self.row_locks.lock_all(rows);
        let observer = self.write_observer();
        let mut pending = Vec::new();
        let mut pending_index = Vec::new();
        let mut after = Vec::new();
        // With an observer: each row's cells so far in this batch, which
        // a later mutation of the row must see as its row's state.
        let mut earlier: HashMap<Bytes, Vec<Cell>> = HashMap::new();
        // Later mutations of a row in the batch see earlier ones' staged
        // timestamps, so each gets a later one.
        let mut staged = StagedTimestamps::new();
        for (i, mutation) in mutations.iter().enumerate() {
            if results[i].is_err() {
                continue;
            }
            // A batch does not answer an increment's values (see `Mutation`).
            let mut computed = Vec::new();
            // The row's staged timestamp before this mutation: a mutation
            // its observer refuses takes its own back, as one that fails
            // to resolve never stages one.
            let staged_before = staged.rows.get(mutation.row()).copied();
            let resolved = self
                .resolve(
                    mutation.row(),
                    std::slice::from_ref(mutation),
                    &mut staged,
                    &mut computed,
                )
                .and_then(|cells| {
                    if observer.is_none() {
                        return Ok(cells);
                    }
                    let row = mutation.row();
                    let before = earlier.get(row).map(Vec::as_slice).unwrap_or_default();
                    let work = self.observe(observer.as_ref(), row, &cells, before, &staged)?;
                    after.extend(work);
                    earlier
                        .entry(row.clone())
                        .or_default()
                        .extend(cells.iter().cloned());
                    Ok(cells)
                });
            match resolved {
                Ok(cells) => {
                    pending.push(ResolvedWrite {
                        cells,
                        durability: mutation.durability(),
                    });
                    pending_index.push(i);
                }
                Err(e) => {
                    match staged_before {
                        Some(ts) => staged.rows.insert(mutation.row().clone(), ts),
                        None => staged.rows.remove(mutation.row()),
                    };
                    results[i] = self.unless_retired(Err(e));
                }
            }
        }
        let written = self.write(pending, staged);
        drop(locks);
        if written.is_ok() {
            observer::run_all(after);
        }
        if let Err(e) = written {
            // Every pending mutation failed the same way, and each gets the
            // same kind of error: a region that stopped serving refuses the
            // whole group before anything reaches the log, and the table
            // layer routes `NotServingRegion` again (reporting it as a log
            // failure made writes fail during splits).
            for i in pending_index {
                results[i] = Err(same_failure(&e));
            }
        }
        results
    }

    /// Adds to 8-byte counters; returns the new values.
    pub fn increment(&self, increment: &Increment) -> Result<RowResult> {
        self.mutate(Mutation::Increment(increment.clone()))
    }

    /// Appends to the latest values; returns the new values.
    pub fn append(&self, append: &Append) -> Result<RowResult> {
        self.mutate(Mutation::Append(append.clone()))
    }

    /// Tests a column and applies the mutations if the test holds, atomically.
    pub fn check_and_mutate(&self, check: &CheckAndMutate) -> Result<bool> {
        self.check_and_mutate_returning(check)
            .map(|(applied, _)| applied)
    }

    /// [`Region::check_and_mutate`], also returning the new values of the
    /// mutations' increments and appends when they were applied (HBase's
    /// `CheckAndMutateResult`).
    pub fn check_and_mutate_returning(&self, check: &CheckAndMutate) -> Result<(bool, RowResult)> {
        self.check_write_row(&check.row)?;
        self.unless_retired(self.check_and_mutate_checked(check))
    }

    fn check_and_mutate_checked(&self, check: &CheckAndMutate) -> Result<(bool, RowResult)> {
        let not_applied = || Ok((false, result_of(&check.row, Vec::new())));
        let row = &check.row;
        if check.mutations.row() != row {
            return Err(Error::invalid(
                "check-and-mutate mutations must be on the checked row",
            ));
        }
        if let Condition::Filter(filter) = &check.condition {
            // HBase: a filter condition reads the whole row through it.
            let (result, after) = {
                let _lock = self.row_locks.lock(row);
                let get = Get::new(row.clone())
                    .filter(filter.clone())
                    .time_range(check.time_range);
                if self.get(&get)?.cells.is_empty() {
                    return not_applied();
                }
                self.apply_checked(check)?
            };
            observer::run_all(after.into_iter().collect());
            return Ok((true, result));
        }
        self.check_family(&check.family)?;
        let lock = self.row_locks.lock(row);
        let current = self.latest_cell(row, &check.family, &check.qualifier, check.time_range)?;
        let holds = match (&check.condition, &current) {
            (Condition::Filter(_), _) => false,
            (Condition::Absent, current) => current.is_none(),
            // HBase (2.5+, HBASE-26742): an empty expected value tests for an
            // absent or empty cell, whatever the operator; NOT_EQUAL negates.
            (Condition::Compare { op, comparator }, current) if comparator.value_is_empty() => {
                let absent_or_empty = current.as_ref().is_none_or(|c| c.value.is_empty());
                absent_or_empty == (*op != CompareOp::NotEqual)
            }
            (Condition::Compare { .. }, None) => false,
            (Condition::Compare { op, comparator }, Some(cell)) => {
                op.holds(comparator.compare_to(&cell.value))
            }
        };
        if !holds {
            return not_applied();
        }
        let (result, after) = self.apply_checked(check)?;
        drop(lock);
        observer::run_all(after.into_iter().collect());
        Ok((true, result))
    }

    /// Writes a check's mutations once its test held; the caller holds the
    /// row lock, and runs the observer's after-commit work (returned
    /// beside the new values of its increments and appends) once it has
    /// let the lock go.
    fn apply_checked(&self, check: &CheckAndMutate) -> Result<(RowResult, Option<AfterCommit>)> {
        let mut computed = Vec::new();
        let mut after = None;
        if !check.mutations.mutations().is_empty() {
            let observer = self.write_observer();
            let mut staged = StagedTimestamps::new();
            let cells = self.resolve(
                &check.row,
                check.mutations.mutations(),
                &mut staged,
                &mut computed,
            )?;
            after = self.observe(observer.as_ref(), &check.row, &cells, &[], &staged)?;
            self.write(
                vec![ResolvedWrite {
                    cells,
                    durability: check.mutations.durability(),
                }],
                staged,
            )?;
        }
        Ok((result_of(&check.row, computed), after))
    }

    fn check_family(&self, family: &[u8]) -> Result<()> {
        if self.stores.read().contains_key(family) {
            Ok(())
        } else {
            Err(self.no_such_family(family))
        }
    }

    fn check_value(&self, value: &[u8]) -> Result<()> {
        if value.len() > self.config.max_value_bytes {
            return Err(Error::invalid(format!(
                "value of {} bytes exceeds the maximum cell size of {} bytes",
                value.len(),
                self.config.max_value_bytes
            )));
        }
        Ok(())
    }

    /// Turns mutations of one row into cells with final timestamps. The row
    /// lock must be held (deletes of "the latest version" read the row).
    ///
    /// Every server-assigned timestamp of one call is the row's next server
    /// timestamp (see [`RowClock`]): one atomic mutation shares one
    /// timestamp, as in HBase, and the row's next call gets a later one.
    ///
    /// The timestamp is staged in `staged`, and reaches the row's record
    /// only through [`Region::commit_timestamps`] once the write is applied.
    ///
    /// Increments and appends read the row as it was before these
    /// mutations (as HBase computes them before it applies any); their new
    /// cells are also pushed to `computed`, the row mutation's result. A
    /// new value's timestamp is HBase's `max(now, latest + 1)`.
    fn resolve(
        &self,
        row: &Bytes,
        mutations: &[Mutation],
        staged: &mut StagedTimestamps,
        computed: &mut Vec<Cell>,
    ) -> Result<Vec<Cell>> {
        let now = self.clock.now_millis();
        let server_ts = match staged.rows.get(row) {
            Some(&earlier) => self.row_clock.next(row, now).max(earlier.saturating_add(1)),
            None => self.row_clock.next(row, now),
        };
        let mut used_server_ts = false;
        // The newest server-given timestamp (an increment's may pass
        // `server_ts`): the row's next write must get a later one.
        let mut newest_ts = server_ts;
        let mut cells = Vec::new();
        // How many "latest version" deletes each column got so far: the k-th
        // such marker on a column removes its k-th newest version.
        let mut latest_deletes: BTreeMap<(Bytes, Bytes), u32> = BTreeMap::new();
        for mutation in mutations {
            match mutation {
                Mutation::Put(put) => {
                    if put.is_empty() {
                        return Err(Error::invalid(format!(
                            "put of row '{}' has no cells",
                            escape_bytes(row)
                        )));
                    }
                    for cell in put.cells() {
                        self.check_family(&cell.family)?;
                        self.check_value(&cell.value)?;
                        let mut cell = cell.clone();
                        used_server_ts |= cell.timestamp == LATEST_TIMESTAMP;
                        cell.timestamp = resolve_ts(cell.timestamp, server_ts)?;
                        cells.push(cell);
                    }
                }
                Mutation::Delete(delete) => {
                    if delete.markers().is_empty() {
                        used_server_ts |= delete.timestamp() == LATEST_TIMESTAMP;
                        let ts = resolve_ts(delete.timestamp(), server_ts)?;
                        for family in self.stores.read().keys() {
                            cells.push(marker(
                                row,
                                family,
                                &Bytes::new(),
                                ts,
                                CellType::DeleteFamily,
                            ));
                        }
                        continue;
                    }
                    for m in delete.markers() {
                        self.check_family(&m.family)?;
                        let ts =
                            if m.cell_type == CellType::Delete && m.timestamp == LATEST_TIMESTAMP {
                                let k = latest_deletes
                                    .entry((m.family.clone(), m.qualifier.clone()))
                                    .or_insert(0);
                                *k += 1;
                                match self.nth_latest_ts(row, &m.family, &m.qualifier, *k)? {
                                    Some(ts) => ts,
                                    None => {
                                        used_server_ts = true;
                                        server_ts
                                    }
                                }
                            } else {
                                used_server_ts |= m.timestamp == LATEST_TIMESTAMP;
                                resolve_ts(m.timestamp, server_ts)?
                            };
                        cells.push(marker(row, &m.family, &m.qualifier, ts, m.cell_type));
                    }
                }
                Mutation::Increment(increment) => {
                    for (family, qualifier, delta) in increment.columns() {
                        let mut cell =
                            self.computed_cell(row, family, qualifier, server_ts, |current| {
                                incremented(current, *delta)
                            })?;
                        cell.ttl_millis = increment.ttl_millis;
                        used_server_ts = true;
                        newest_ts = newest_ts.max(cell.timestamp);
                        computed.push(cell.clone());
                        cells.push(cell);
                    }
                }
                Mutation::Append(append) => {
                    for (family, qualifier, suffix) in append.columns() {
                        let mut cell =
                            self.computed_cell(row, family, qualifier, server_ts, |current| {
                                appended(current, suffix)
                            })?;
                        cell.ttl_millis = append.ttl_millis;
                        used_server_ts = true;
                        newest_ts = newest_ts.max(cell.timestamp);
                        computed.push(cell.clone());
                        cells.push(cell);
                    }
                }
            }
        }
        if used_server_ts {
            staged.rows.insert(row.clone(), newest_ts);
            staged.now = now;
        }
        Ok(cells)
    }

    /// An increment's or append's new cell of one column, computed from its
    /// latest visible cell; its timestamp is `max(server_ts, latest + 1)`,
    /// so it is never hidden behind the value it replaces.
    fn computed_cell(
        &self,
        row: &Bytes,
        family: &Bytes,
        qualifier: &Bytes,
        server_ts: i64,
        new_value: impl FnOnce(Option<&Cell>) -> Result<Bytes>,
    ) -> Result<Cell> {
        self.check_family(family)?;
        let current = self.latest_cell(row, family, qualifier, TimeRange::all())?;
        let value = new_value(current.as_ref())?;
        self.check_value(&value)?;
        let timestamp = current
            .as_ref()
            .map_or(server_ts, |c| c.timestamp.saturating_add(1).max(server_ts));
        Ok(Cell {
            row: row.clone(),
            family: family.clone(),
            qualifier: qualifier.clone(),
            timestamp,
            cell_type: CellType::Put,
            sequence_id: 0,
            value,
            ttl_millis: None,
        })
    }

    /// Runs resolved writes through the WAL, the memstores and MVCC.
    ///
    /// `staged` holds the server timestamps the writes took; they reach the
    /// rows' records once the writes are applied, and before the flush and
    /// split check that may follow (a split's daughters take the records
    /// over, so they must already hold this write's).
    fn write(&self, writes: Vec<ResolvedWrite>, staged: StagedTimestamps) -> Result<()> {
        if writes.is_empty() {
            return Ok(());
        }
        let wal = self.wal()?;
        // Fencing invariant R1 holds for a writer that waited for room too:
        // when room never came because this process was fenced meanwhile
        // (its flushes cannot commit any more), the answer is `Fenced`,
        // which tells the client the region is elsewhere now, not
        // `RegionTooBusy`, which would have it retry here.
        let fenced_first = |e: Error| self.fence_error().unwrap_or(e);
        self.wait_for_memstore_room().map_err(fenced_first)?;
        // The global budget after the region's own limit: a writer held
        // by its region holds no global bytes meanwhile.
        let mut reservation = match &self.context.memory {
            Some(budget) => {
                let bytes = writes
                    .iter()
                    .flat_map(|w| w.cells.iter())
                    .map(crate::memstore::entry_size)
                    .sum();
                Some(budget.reserve(bytes).map_err(fenced_first)?)
            }
            None => None,
        };
        let updates = self.updates.read();
        if self.closed.load(Ordering::Acquire) {
            return Err(self.not_serving());
        }
        let mut sequences = Vec::with_capacity(writes.len());
        let mut last_lsn = None;
        let mut strongest = Durability::SkipWal;
        let mut prepared = Vec::with_capacity(writes.len());
        for write in writes {
            let sequence_id = self.mvcc.begin();
            sequences.push(sequence_id);
            let mut cells = write.cells;
            for cell in &mut cells {
                cell.sequence_id = sequence_id;
            }
            if write.durability != Durability::SkipWal {
                let edit = WalEdit {
                    region_id: self.info.id,
                    sequence_id,
                    cells,
                };
                match wal.append(&edit) {
                    Ok(lsn) => last_lsn = Some(lsn),
                    Err(e) => {
                        sequences.iter().for_each(|&s| self.mvcc.complete(s));
                        return Err(e);
                    }
                }
                cells = edit.cells;
                strongest = strongest.max(write.durability);
            }
            prepared.push(cells);
        }
        if let Some(lsn) = last_lsn {
            if let Err(e) = wal.sync(lsn, strongest) {
                sequences.iter().for_each(|&s| self.mvcc.complete(s));
                return Err(e);
            }
        }
        {
            let stores = self.stores.read();
            let mut bytes = 0u64;
            let now = self.clock.now_millis();
            for cells in &prepared {
                let mut row_bytes = 0u64;
                for cell in cells {
                    // A family dropped by a concurrent alter takes its cells with it.
                    if let Some(store) = stores.get(&cell.family) {
                        store.insert_reserved(cell, reservation.as_mut());
                    }
                    row_bytes += cell.heap_size() as u64;
                }
                bytes += row_bytes;
                if let Some(cell) = cells.first() {
                    self.key_load.record_write(&cell.row, row_bytes, now);
                }
            }
            self.load
                .record_write(prepared.len() as u64, bytes, self.clock.as_ref());
        }
        let last = sequences.iter().copied().max().unwrap_or(0);
        for s in sequences {
            self.mvcc.complete(s);
        }
        drop(updates);
        // What a dropped family did not take goes back.
        drop(reservation);
        self.mvcc.wait_for(last);
        self.commit_timestamps(staged);
        self.maybe_flush();
        // Outside every lock: a load-based split may follow it inline.
        self.load_split
            .record_writes(&prepared, self.clock.as_ref());
        if let Some(budget) = &self.context.memory {
            budget.after_write();
        }
        Ok(())
    }

    /// Bytes held in this region's memstores.
    pub fn memstore_bytes(&self) -> usize {
        self.stores
            .read()
            .values()
            .map(|s| s.memstore_bytes())
            .sum()
    }

    /// Bytes in this region's active memstores, and in its snapshots (being
    /// flushed, or left by a flush that failed): the global budget flushes
    /// the regions holding the most first.
    pub fn memstore_parts(&self) -> (usize, usize) {
        self.stores
            .read()
            .values()
            .map(|s| s.memstore_parts())
            .fold((0, 0), |(a, b), (x, y)| (a + x, b + y))
    }

    /// True while a flush of this region runs (its snapshots are on their
    /// way to files).
    pub fn is_flushing(&self) -> bool {
        self.flush_lock.is_locked()
    }

    /// Requests (or, without a scheduler, runs) a flush once the memstores
    /// pass the flush size.
    fn maybe_flush(&self) {
        if self.memstore_bytes() < self.config.memstore_flush_bytes {
            return;
        }
        match self.flush_requester.get() {
            Some(request) => (request.0)(self.info.id),
            None => {
                if let Err(e) = self.flush() {
                    // The data is safe in the WAL; the next write retries.
                    tracing::warn!(region = self.info.id, error = %e, "flush failed");
                }
            }
        }
    }

    /// Holds a writer back while the memstores are over the blocking size,
    /// waiting for flushes to catch up (never failing it for slowness, as
    /// HBase's writers are held rather than refused). When a flush attempted
    /// during the wait fails, room is not coming by itself: the writer gets
    /// `RegionTooBusy` (HBase's `RegionTooBusyException`) instead of waiting
    /// forever, and nothing was written. Writes succeed again as soon as a
    /// flush does (a full disk with space freed, for example).
    fn wait_for_memstore_room(&self) -> Result<()> {
        let failures_before = self.failed_flushes.load(Ordering::SeqCst);
        while self.memstore_bytes() >= self.config.memstore_block_bytes {
            if self.failed_flushes.load(Ordering::SeqCst) != failures_before {
                return Err(Error::RegionTooBusy(format!(
                    "{}: memstores hold {} bytes (blocking size {}) and flushing them failed: {}",
                    self.info.encoded_name(),
                    self.memstore_bytes(),
                    self.config.memstore_block_bytes,
                    self.last_flush_failure.lock()
                )));
            }
            match self.flush_requester.get() {
                Some(request) => {
                    (request.0)(self.info.id);
                    let mut guard = self.flushed_mutex.lock();
                    // Bounded wait: re-check even if a signal was missed.
                    self.flushed
                        .wait_for(&mut guard, std::time::Duration::from_millis(50));
                }
                None => {
                    if let Err(e) = self.flush() {
                        tracing::warn!(region = self.info.id, error = %e, "flush failed");
                    }
                }
            }
        }
        Ok(())
    }

    /// Writes every memstore out to store files. Returns the sequence id
    /// through which the region's data is now in files.
    pub fn flush(&self) -> Result<u64> {
        let result = self.flush_all();
        if let Err(e) = &result {
            *self.last_flush_failure.lock() = e.to_string();
            self.failed_flushes.fetch_add(1, Ordering::SeqCst);
            if let Some(budget) = &self.context.memory {
                budget.flush_failed(&format!("{}: {e}", self.info.encoded_name()));
            }
            // Writers waiting for room learn at once that it is not coming.
            let _guard = self.flushed_mutex.lock();
            self.flushed.notify_all();
        }
        result
    }

    fn flush_all(&self) -> Result<u64> {
        let _one_at_a_time = self.flush_lock.lock();
        // A snapshot a failed flush left goes out on its own (it holds
        // nothing written since); a second pass then takes the rest.
        let retrying = self.stores().iter().any(|s| s.has_snapshot());
        let through = self.flush_pass()?;
        if retrying {
            self.flush_pass()
        } else {
            Ok(through)
        }
    }

    fn flush_pass(&self) -> Result<u64> {
        let stores = self.stores();
        let mut any = false;
        let through = {
            let _no_writes = self.updates.write();
            for store in &stores {
                any |= store.prepare_flush();
            }
            // No write is in flight: everything begun is complete and in
            // the snapshots.
            self.mvcc.read_point()
        };
        let now = self.clock.now_millis();
        let mut result = Ok(through);
        for store in &stores {
            if let Err(e) = store.flush(through, now) {
                result = Err(e);
            }
        }
        if any && result.is_ok() {
            self.context.work.flushed();
        }
        let _guard = self.flushed_mutex.lock();
        self.flushed.notify_all();
        result
    }

    /// Every edit of this region at or below this sequence id is in store
    /// files; WAL segments holding only such edits of it can go.
    pub fn flushed_through(&self) -> u64 {
        self.stores
            .read()
            .values()
            .map(|s| s.flushed_through())
            .min()
            .unwrap_or(0)
    }

    /// Compacts every store (see [`Store::compact`]). Returns true when any
    /// store was compacted.
    pub fn compact(&self, major: bool) -> Result<bool> {
        let _gate = self.compaction_gate.lock();
        if self.closed.load(Ordering::Acquire) {
            // Its files are what the regions that took over link to.
            return Ok(false);
        }
        let now = self.clock.now_millis();
        let mut any = false;
        for store in self.stores() {
            any |= store.compact(major, now)?;
        }
        if any {
            self.context.work.compacted(major);
        }
        Ok(any)
    }

    /// True when a store has enough files for a minor compaction.
    pub fn needs_compaction(&self) -> bool {
        self.stores().iter().any(|s| s.needs_compaction())
    }

    // ------------------------------------------------------ split and merge

    /// Records the staged server timestamps of an applied write.
    fn commit_timestamps(&self, staged: StagedTimestamps) {
        for (row, ts) in staged.rows {
            self.row_clock.record(&row, ts, staged.now);
        }
    }

    /// Takes over the per-row timestamp records of `predecessor` for the
    /// rows this region holds: a region made by a split or merge calls it
    /// before it serves, with the (closed) regions it replaces, so rows
    /// written in the same millisecond as the hand-over still get strictly
    /// increasing server timestamps. The region's key load takes over the
    /// predecessor's minutes for its rows too (`key_load.rs`, step 5), so
    /// the key heatmap keeps their history across the hand-over.
    pub fn adopt_row_clock(&self, predecessor: &Region) {
        let now = self.clock.now_millis();
        self.key_load.adopt(
            &predecessor.key_load,
            &self.info.start_key,
            &self.info.end_key,
            now,
        );
        for (row, ts) in predecessor.row_clock.entries() {
            if self.info.contains(&row) {
                self.row_clock.record(&row, ts, now);
            }
        }
        for (row, ts) in predecessor.order_clock.entries() {
            if self.info.contains(&row) {
                self.order_clock.record(&row, ts, now);
            }
        }
    }

    fn not_serving(&self) -> Error {
        Error::NotServingRegion(format!(
            "{} ({} is split or merged)",
            String::from_utf8_lossy(&self.info.region_name()),
            self.info.encoded_name()
        ))
    }

    /// False once the region has handed its rows over (or is doing so).
    pub fn is_serving(&self) -> bool {
        !self.closed.load(Ordering::Acquire)
    }

    /// The sequence id for a bulk load's cells (HBase's bulk load with
    /// `assignSeqNum`): a fresh id above every write begun before the
    /// call, so a loaded cell wins over an existing one with the same
    /// coordinates and loses to any write begun after. Give it to every
    /// cell passed to [`Region::bulk_load`].
    pub fn bulk_load_sequence(&self) -> Result<u64> {
        self.check_opened()?;
        let _updates = self.updates.read();
        if self.closed.load(Ordering::Acquire) {
            return Err(self.not_serving());
        }
        let s = self.mvcc.begin();
        self.mvcc.complete(s);
        Ok(s)
    }

    /// Loads `cells` (KeyValue order, sequence ids from
    /// [`Region::bulk_load_sequence`]) into `family` as a new store file.
    /// The cells are in no log: the committed file is their durability, and
    /// a reopened region gives new writes ids above the files'
    /// (`finish_recovery`). A row outside the region fails the load (the
    /// caller splits by region) and nothing is committed. Returns the new
    /// file's entry (`None` when `cells` yielded nothing).
    pub fn bulk_load(
        &self,
        family: &[u8],
        cells: &mut dyn crate::compaction::CellStream,
    ) -> Result<Option<crate::manifest::ManifestFile>> {
        self.check_opened()?;
        // Held until the file is committed: a split or merge closing the
        // region waits (its daughters link to the files committed before
        // it closes, so a file committed after would be lost to them), as
        // it waits for a compaction.
        let _gate = self.compaction_gate.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(self.not_serving());
        }
        let store = self
            .stores
            .read()
            .get(family)
            .cloned()
            .ok_or_else(|| Error::NoSuchFamily {
                table: self.info.table.clone(),
                family: String::from_utf8_lossy(family).into_owned(),
            })?;
        let mut checked = InRegion {
            inner: cells,
            region: &self.info,
        };
        let entry = store.bulk_load(&mut checked, self.clock.now_millis())?;
        if entry.is_some() {
            // A new file: the compaction checker may want to merge it.
            self.context.work.flushed();
        }
        Ok(entry)
    }

    /// Stops the region taking writes and compactions, and flushes it, so
    /// that its files hold all its data and stay as they are: the first
    /// step of a split or merge. Writers are refused with
    /// `NotServingRegion` (the table routes them again); readers go on.
    /// Returns the sequence id the data is flushed through. On error the
    /// region is serving again.
    pub fn close_for_handover(&self) -> Result<u64> {
        // Its files are unreadable: daughters could not link to them.
        self.check_opened()?;
        {
            // Waits for a running compaction; none starts after this.
            let _gate = self.compaction_gate.lock();
            // Waits for writes in flight; none starts after this.
            let _no_writes = self.updates.write();
            if self.closed.swap(true, Ordering::AcqRel) {
                return Err(self.not_serving());
            }
        }
        match self.flush() {
            Ok(through) => Ok(through),
            Err(e) => {
                self.reopen_after_failed_handover();
                Err(e)
            }
        }
    }

    /// Serves writes again after a split or merge that did not happen.
    pub fn reopen_after_failed_handover(&self) {
        if self.open_failure.is_some() {
            return;
        }
        self.closed.store(false, Ordering::Release);
    }

    /// Per family, links to this region's files for the rows in
    /// `[lower, upper)`: what a region taking those rows over starts with.
    /// Only meaningful once [`Region::close_for_handover`] returned.
    pub fn links_for(&self, lower: &Bytes, upper: &Bytes) -> Vec<(String, Vec<ManifestFile>)> {
        self.stores
            .read()
            .iter()
            .map(|(name, store)| {
                (
                    String::from_utf8_lossy(name).into_owned(),
                    store.links_for(self.info.id, lower, upper),
                )
            })
            .collect()
    }

    /// Per family, the manifest entries of the files that hold the
    /// region's data now (its own files and links): what a snapshot of the
    /// region records. With `flush`, the memstores are written out first,
    /// so the files hold every write acknowledged before the call. The
    /// entries are read while no flush runs, so every family is cut at the
    /// same flush: a row's families are all in or all out. Writes go on;
    /// what they add after the cut is not listed.
    pub fn snapshot_files(&self, flush: bool) -> Result<Vec<(String, Vec<ManifestFile>)>> {
        self.check_opened()?;
        if flush {
            self.flush()?;
        }
        let _no_flush = self.flush_lock.lock();
        Ok(self
            .stores
            .read()
            .iter()
            .map(|(name, store)| {
                (
                    String::from_utf8_lossy(name).into_owned(),
                    store.manifest_files(),
                )
            })
            .collect())
    }

    /// What the region's compactions are doing: the busiest of its
    /// stores' states ([`Store::compaction_state`]).
    pub fn compaction_state(&self) -> CompactionState {
        self.stores
            .read()
            .values()
            .map(|s| s.compaction_state())
            .max()
            .unwrap_or(CompactionState::None)
    }

    /// True while some store still reads a parent region's files.
    pub fn has_links(&self) -> bool {
        self.stores.read().values().any(|s| s.has_links())
    }

    /// True while some store still reads a split or merge parent's files
    /// ([`Store::has_parent_links`]): such a region compacts at once and
    /// does not split again until it has.
    pub fn has_parent_links(&self) -> bool {
        self.stores.read().values().any(|s| s.has_parent_links())
    }

    /// Ids of the regions whose files this region's stores link to.
    pub fn linked_regions(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .stores
            .read()
            .values()
            .flat_map(|s| s.linked_regions())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Bytes in the store files of the region's largest store: what the
    /// split policy compares with the split size (as HBase does).
    pub fn largest_store_bytes(&self) -> u64 {
        self.stores
            .read()
            .values()
            .map(|s| s.stats().file_bytes)
            .max()
            .unwrap_or(0)
    }

    /// A row near the middle of the region's data to split at: the middle
    /// of the candidates the largest store's largest file offers, strictly
    /// inside the region (so both daughters are non-empty ranges). `None`
    /// when the data has no such row (empty, or a single row).
    pub fn split_point(&self) -> Result<Option<Bytes>> {
        let stores = self.stores();
        let Some(largest) = stores.iter().max_by_key(|s| s.stats().file_bytes) else {
            return Ok(None);
        };
        let rows = largest.split_candidates(&self.info.start_key, &self.info.end_key)?;
        Ok(rows.get(rows.len() / 2).cloned())
    }

    /// Per-family store sizes.
    pub fn store_stats(&self) -> Vec<(String, StoreStats)> {
        self.stores
            .read()
            .iter()
            .map(|(name, s)| (String::from_utf8_lossy(name).into_owned(), s.stats()))
            .collect()
    }

    // ----------------------------------------------------------------- reads

    /// Reads one row, through the point-get path (`point_get.rs`): each
    /// family's cells of the row straight from its store, then the same
    /// rules and filter loop as a scan.
    pub fn get(&self, get: &Get) -> Result<RowResult> {
        self.check_row(&get.row)?;
        // Reads of a region handing its rows over go on (its data is
        // frozen), unless its files went with it.
        self.unless_retired(self.get_checked(get))
    }

    fn get_checked(&self, get: &Get) -> Result<RowResult> {
        if get.max_versions == 0 {
            return Err(Error::invalid("max versions must be at least 1"));
        }
        let options = ReadOptions {
            max_versions: get.max_versions,
            time_range: get.time_range,
            raw: false,
            now: self.clock.now_millis(),
        };
        let read_point = self.mvcc.read_point();
        let stores = self.stores_read(&get.columns)?;
        let mut families = Vec::with_capacity(stores.len());
        for store in &stores {
            let cells = store.row_cells(read_point, &get.row, options.time_range.min)?;
            let qualifiers = get.columns.qualifiers(store.family()).cloned();
            let rules = RowRules::new(store.descriptor(), qualifiers, &options);
            families.push(FamilyRow::new(cells, rules));
        }
        let filter = get.filter.as_ref().map(|f| f.build(false));
        let (cells, metrics) =
            point_get::read_one_row(&mut families, &get.row, filter, get.max_versions)?;
        self.load.record_read(&metrics, self.clock.as_ref());
        self.key_load
            .record_read(&get.row, metrics.bytes_returned, self.clock.now_millis());
        self.load_split
            .record_get(&get.row, cells.as_deref(), self.clock.as_ref());
        Ok(cells
            .map(|cells| RowResult {
                row: get.row.clone(),
                cells,
            })
            .unwrap_or_default())
    }

    /// Opens a scanner over this region's part of `scan`.
    pub fn scanner(&self, scan: &Scan) -> Result<RegionScanner> {
        scan.validate()?;
        let filter = scan.filter.as_ref().map(|f| f.build(scan.reversed));
        self.scanner_within(scan, &RowRange::all(), filter, scan.limit)
    }

    /// Opens a scanner over the rows of `scan` that also lie in `clip`, with
    /// a filter already built and a row limit of its own: the table layer
    /// continues one scan (and one filter state) across regions this way.
    pub fn scanner_within(
        &self,
        scan: &Scan,
        clip: &RowRange,
        filter: Option<Box<dyn CellFilter>>,
        limit: Option<usize>,
    ) -> Result<RegionScanner> {
        self.check_opened()?;
        let options = ReadOptions {
            max_versions: scan.max_versions,
            time_range: scan.time_range,
            raw: scan.raw,
            now: self.clock.now_millis(),
        };
        let stores = self.store_scanners(&scan.columns, &options)?;
        let range = scan_range(scan).intersect(clip);
        self.load_split.record_scan(
            &range,
            scan.reversed,
            &self.info.start_key,
            self.clock.as_ref(),
        );
        RegionScanner::new(
            stores,
            filter,
            ScanShape {
                range,
                reversed: scan.reversed,
                max_versions: scan.max_versions,
                raw: scan.raw,
                batch: scan.batch,
                limit,
            },
        )
    }

    /// Adds a finished (or abandoned) scanner's work to the load counters.
    pub fn record_read(&self, scanner: &RegionScanner) {
        let m = scanner.metrics();
        self.load.record_read(&m, self.clock.as_ref());
        if let Some(row) = scanner.first_row() {
            self.key_load
                .record_read(row, m.bytes_returned, self.clock.now_millis());
        }
    }

    /// One scanner per family read.
    fn store_scanners(
        &self,
        columns: &ColumnSelection,
        options: &ReadOptions,
    ) -> Result<Vec<StoreScanner>> {
        let read_point = self.mvcc.read_point();
        self.stores_read(columns)?
            .iter()
            .map(|store| {
                let qualifiers = columns.qualifiers(store.family()).cloned();
                store.scanner(read_point, qualifiers, options)
            })
            .collect::<Result<Vec<_>>>()
    }

    /// The stores a read of `columns` reads, in family order; an error
    /// names the first selected family the region does not have.
    fn stores_read(&self, columns: &ColumnSelection) -> Result<Vec<Arc<Store>>> {
        let stores = self.stores.read();
        for family in columns.families().keys() {
            if !stores.contains_key(family) {
                return Err(self.no_such_family(family));
            }
        }
        Ok(stores
            .iter()
            .filter(|(name, _)| columns.includes_family(name))
            .map(|(_, store)| Arc::clone(store))
            .collect())
    }

    /// The newest visible version of a column within `range`.
    fn latest_cell(
        &self,
        row: &Bytes,
        family: &Bytes,
        qualifier: &Bytes,
        range: TimeRange,
    ) -> Result<Option<Cell>> {
        let get = Get::new(row.clone())
            .column(family.clone(), qualifier.clone())
            .time_range(range);
        Ok(self.get(&get)?.cells.into_iter().next())
    }

    /// Timestamp of the k-th newest visible version of a column.
    fn nth_latest_ts(
        &self,
        row: &Bytes,
        family: &Bytes,
        qualifier: &Bytes,
        k: u32,
    ) -> Result<Option<i64>> {
        let get = Get::new(row.clone())
            .column(family.clone(), qualifier.clone())
            .max_versions(k);
        let result = self.get(&get)?;
        Ok(result.cells.get(k as usize - 1).map(|c| c.timestamp))
    }
}

/// A cell timestamp as written: `LATEST_TIMESTAMP` becomes the server's
/// timestamp, an explicit one is checked and kept (HBase's rules).
fn resolve_ts(ts: i64, server_ts: i64) -> Result<i64> {
    if ts == LATEST_TIMESTAMP {
        Ok(server_ts)
    } else {
        validate_timestamp(ts)?;
        Ok(ts)
    }
}

/// Shards of [`RowClock`]: rows of different shards never wait for each other.
const ROW_CLOCK_SHARDS: usize = 16;

/// The last server-assigned timestamp of each row written "recently":
/// in the current millisecond of the clock, or pushed ahead of it.
///
/// Without it, mutations of one row that arrive within one millisecond get
/// the same timestamp, and HBase's rules then lose writes: a delete marker
/// at T hides a later put at T, and puts at the same T collapse into one
/// version. With it, a row's server timestamps strictly increase in the
/// order its mutations are applied (callers hold the row lock from
/// [`RowClock::next`] to [`RowClock::record`]). That is a timing HBase
/// itself could produce (each call a millisecond apart), so the data model
/// is unchanged. It is per row, not per region, so one hot row pushing its
/// own timestamps ahead never moves any other row's.
///
/// An entry is needed only while its timestamp is at or after the clock's
/// now (otherwise `now` alone is already later), so each shard drops the
/// older ones whenever the clock has moved: memory stays proportional to
/// the rows written in the current millisecond (plus rows pushed ahead).
/// The record is in memory only: a region opened anew by a restart starts
/// without it, which matters only if the clock has not moved past the last
/// write's timestamp by then. Regions made by a split or merge take their
/// predecessors' records over ([`Region::adopt_row_clock`]), so a hand-over
/// never lets a row's next timestamp go back.
/// Server timestamps given to rows by a write not applied yet (see
/// `Region::resolve`); the rows are locked until it is.
#[derive(Debug, Default)]
struct StagedTimestamps {
    rows: HashMap<Bytes, i64>,
    now: i64,
}

impl StagedTimestamps {
    fn new() -> Self {
        StagedTimestamps::default()
    }
}

#[derive(Debug)]
struct RowClock {
    shards: Box<[Mutex<RowClockShard>]>,
}

#[derive(Debug, Default)]
struct RowClockShard {
    last: HashMap<Bytes, i64>,
    /// The clock reading of the last pruning.
    pruned_at: i64,
}

impl RowClock {
    fn new() -> Self {
        RowClock {
            shards: (0..ROW_CLOCK_SHARDS)
                .map(|_| Mutex::new(RowClockShard::default()))
                .collect(),
        }
    }

    fn shard(&self, row: &[u8]) -> &Mutex<RowClockShard> {
        // Not the row lock's stripe hash on purpose: any spread will do.
        let h = row.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        &self.shards[(h % ROW_CLOCK_SHARDS as u64) as usize]
    }

    /// The server timestamp for the row's next mutation: `now`, or one past
    /// the row's last server timestamp when that is not before `now`.
    fn next(&self, row: &[u8], now: i64) -> i64 {
        let mut shard = self.shard(row).lock();
        shard.prune(now);
        match shard.last.get(row) {
            Some(&last) if last >= now => last.saturating_add(1),
            _ => now,
        }
    }

    /// Every row's record, for the regions that take a region's rows over.
    fn entries(&self) -> Vec<(Bytes, i64)> {
        self.shards
            .iter()
            .flat_map(|shard| {
                let shard = shard.lock();
                shard
                    .last
                    .iter()
                    .map(|(row, ts)| (row.clone(), *ts))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Notes that the row was given server timestamp `ts` (at clock `now`).
    fn record(&self, row: &Bytes, ts: i64, now: i64) {
        let mut shard = self.shard(row).lock();
        shard.prune(now);
        if ts >= now {
            let last = shard.last.entry(row.clone()).or_insert(ts);
            *last = (*last).max(ts);
        }
    }
}

impl RowClockShard {
    fn prune(&mut self, now: i64) {
        if now > self.pruned_at {
            self.last.retain(|_, ts| *ts >= now);
            self.pruned_at = now;
        }
    }
}

fn marker(row: &Bytes, family: &Bytes, qualifier: &Bytes, ts: i64, t: CellType) -> Cell {
    Cell {
        row: row.clone(),
        family: family.clone(),
        qualifier: qualifier.clone(),
        timestamp: ts,
        cell_type: t,
        sequence_id: 0,
        value: Bytes::new(),
        ttl_millis: None,
    }
}

/// An increment's new value: the current 8-byte counter plus `delta`
/// (wrapping, as Java's long does); a missing cell counts as 0.
fn incremented(current: Option<&Cell>, delta: i64) -> Result<Bytes> {
    let old = match current {
        Some(c) => {
            let bytes: [u8; 8] = c.value[..]
                .try_into()
                .map_err(|_| Error::NotALong { len: c.value.len() })?;
            i64::from_be_bytes(bytes)
        }
        None => 0,
    };
    Ok(Bytes::copy_from_slice(
        &old.wrapping_add(delta).to_be_bytes(),
    ))
}

/// An append's new value: the current value followed by `suffix`; a
/// missing cell counts as empty.
fn appended(current: Option<&Cell>, suffix: &Bytes) -> Result<Bytes> {
    Ok(match current {
        Some(c) => {
            let mut v = Vec::with_capacity(c.value.len() + suffix.len());
            v.extend_from_slice(&c.value);
            v.extend_from_slice(suffix);
            Bytes::from(v)
        }
        None => suffix.clone(),
    })
}

fn result_of(row: &Bytes, mut cells: Vec<Cell>) -> RowResult {
    cells.sort_by(|a, b| a.compare_key(b));
    RowResult {
        row: row.clone(),
        cells,
    }
}

/// The rows a scan covers, from its start/stop rows, prefix and direction.
pub fn scan_range(scan: &Scan) -> RowRange {
    use std::ops::Bound;
    let non_empty = |b: &Bytes| (!b.is_empty()).then(|| b.clone());
    let mut range = if scan.reversed {
        RowRange {
            lower: non_empty(&scan.stop_row).map_or(Bound::Unbounded, Bound::Excluded),
            upper: non_empty(&scan.start_row).map_or(Bound::Unbounded, Bound::Included),
        }
    } else {
        RowRange {
            lower: non_empty(&scan.start_row).map_or(Bound::Unbounded, Bound::Included),
            upper: non_empty(&scan.stop_row).map_or(Bound::Unbounded, Bound::Excluded),
        }
    };
    if let Some(prefix) = scan.row_prefix.as_ref().filter(|p| !p.is_empty()) {
        let end = prefix_successor(prefix);
        let prefix_range = RowRange {
            lower: Bound::Included(prefix.clone()),
            upper: if end.is_empty() {
                Bound::Unbounded
            } else {
                Bound::Excluded(end)
            },
        };
        range = range.intersect(&prefix_range);
    }
    range
}

/// The same failure again, for each mutation of a group that failed as one:
/// errors are not `Clone` (I/O errors are not), so the kinds the callers act
/// on are rebuilt and the rest keep their message as a log failure.
fn same_failure(error: &Error) -> Error {
    match error {
        Error::NotServingRegion(m) => Error::NotServingRegion(m.clone()),
        Error::Closed(m) => Error::Closed(m.clone()),
        Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
        Error::WalFailed(m) => Error::WalFailed(m.clone()),
        other => Error::WalFailed(other.to_string()),
    }
}

/// A bulk load's cells, refused past the region's rows.
struct InRegion<'a, 'b> {
    inner: &'a mut (dyn crate::compaction::CellStream + 'b),
    region: &'a RegionInfo,
}

impl crate::compaction::CellStream for InRegion<'_, '_> {
    fn next_cell(&mut self) -> Result<Option<Cell>> {
        let cell = self.inner.next_cell()?;
        if let Some(c) = &cell {
            if !self.region.contains(&c.row) {
                return Err(Error::invalid(format!(
                    "bulk load: row {:?} is outside region {}",
                    c.row,
                    self.region.encoded_name()
                )));
            }
        }
        Ok(cell)
    }
}
