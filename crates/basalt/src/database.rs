//! The embedded database: the one-call entry point that wires HBase's
//! three roles together in one process.
//!
//! ```text
//!   Database ── Master ──────── catalog, DDL, split/merge hand-over
//!      │          │ opens/closes regions on
//!      │          ▼
//!      ├──── RegionServer ───── open regions, WAL, block cache, scheduler
//!      │          ▲ locations published by the master
//!      └──── RegionLocator ──── Table / Scanner: which region holds a row
//! ```
//!
//! `Database` itself adds only what belongs to a local data directory: the
//! process lock, and the choice of file store and clock (the
//! [`DatabaseBuilder`]). Each role is reachable on its own
//! ([`Database::master`], [`Database::region_server`],
//! [`Database::locator`]) so that a later cluster mode can run them in
//! separate processes.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use basalt_engine::block_cache::BlockCacheStats;
use basalt_engine::fs::{FileStore, LocalFileStore};
use basalt_engine::{layout, Clock, RegionInfo, RegionLoad, StoreStats, SystemClock};
use basalt_types::{Error, NamespaceDescriptor, Result, TableDescriptor};

use crate::gateways::{Gateway, Gateways};
use crate::locator::RegionLocator;
use crate::master::{FamilyChange, Master};
use crate::options::Options;
use crate::region_server::WalPlacement;
use crate::region_server::{RecoveryReport, RegionServer};
use crate::split::SplitAlgorithm;
use crate::table::Table;
use basalt_engine::wal::ObjectWalOptions;

/// An open Basalt database. Cheap to clone; all clones share the database.
#[derive(Debug, Clone)]
pub struct Database {
    inner: Arc<DbInner>,
}

#[derive(Debug)]
struct DbInner {
    dir: PathBuf,
    /// Held until `close` (or drop): the OS releases the lock when the
    /// process dies, so a crash never leaves the directory locked.
    lock: Mutex<Option<File>>,
    master: Arc<Master>,
    server: Arc<RegionServer>,
    locator: Arc<RegionLocator>,
    closed: AtomicBool,
    recovery: RecoveryReport,
    /// The gateways the serving process announced (none when embedded).
    gateways: Gateways,
}

/// Opens a [`Database`] with parts handed in: the file store that holds
/// store files, manifests and the catalog (default: the local disk under
/// the data directory), and the clock (default: the system clock).
/// [`Options`] stays pure configuration.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use basalt::{Database, ManualClock, Options};
/// # use basalt::fs::MemFileStore;
/// let db = Database::builder(Options::new("/tmp/db"))
///     .file_store(Arc::new(MemFileStore::new()))
///     .clock(Arc::new(ManualClock::new(1_000)))
///     .open()?;
/// # Ok::<(), basalt::Error>(())
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until `open`"]
pub struct DatabaseBuilder {
    options: Options,
    files: Option<Arc<dyn FileStore>>,
    clock: Option<Arc<dyn Clock>>,
    wal: WalPlacement,
}

impl DatabaseBuilder {
    /// The file store for store files, manifests and the catalog. The
    /// lock file and the local write-ahead log stay in the data directory.
    pub fn file_store(mut self, files: Arc<dyn FileStore>) -> Self {
        self.files = Some(files);
        self
    }

    /// Keeps the write-ahead log in the file store (log objects with group
    /// commit and writer fencing) instead of the data directory: for data
    /// on shared object storage, where another machine must be able to
    /// replay it and a second process opening the same data must fence
    /// this one. See `docs/object-storage.md`.
    pub fn wal_in_file_store(mut self, options: ObjectWalOptions) -> Self {
        self.wal = WalPlacement::FileStore(options);
        self
    }

    /// Where "now" comes from (server timestamps, TTL, region ids, load
    /// rates). Tests hand in a [`ManualClock`](crate::ManualClock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Takes the directory lock, loads the catalog and replays the
    /// write-ahead log.
    pub fn open(self) -> Result<Database> {
        let dir = self.options.data_dir.clone();
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let lock = lock_directory(&dir)?;
        let files = self
            .files
            .unwrap_or_else(|| Arc::new(LocalFileStore::new()));
        let clock = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let (master, recovery) = Master::start(&dir, self.options, clock, files, &self.wal)?;
        let server = Arc::clone(master.region_server());
        let locator = Arc::clone(master.locator());
        Ok(Database {
            inner: Arc::new(DbInner {
                dir,
                lock: Mutex::new(Some(lock)),
                master,
                server,
                locator,
                closed: AtomicBool::new(false),
                recovery,
                gateways: Gateways::default(),
            }),
        })
    }
}

/// A table's description: what `describe` shows.
#[derive(Debug, Clone)]
pub struct TableInfo {
    /// Name and families.
    pub descriptor: TableDescriptor,
    /// Whether the table serves requests.
    pub enabled: bool,
    /// The table's regions.
    pub regions: Vec<RegionSummary>,
}

/// Whether a region serves: the HBase region states a region can be in
/// once a start-up or assignment is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionState {
    /// Serving reads and writes.
    Open,
    /// Its files could not be opened (HBase's `FAILED_OPEN`): every read
    /// and write of its rows fails with an error naming the file, while
    /// the table's other regions serve. `basalt check` and `basalt repair`
    /// (docs/check-and-repair.md) find and quarantine the file.
    FailedOpen {
        /// The file at fault (the region directory when unknown).
        file: PathBuf,
        /// Where in it (0 when unknown).
        offset: u64,
        /// The open error.
        reason: String,
    },
}

impl RegionState {
    /// HBase's name of the state: `OPEN` or `FAILED_OPEN`.
    pub fn name(&self) -> &'static str {
        match self {
            RegionState::Open => "OPEN",
            RegionState::FailedOpen { .. } => "FAILED_OPEN",
        }
    }
}

/// One region of a table, with its load.
#[derive(Debug, Clone)]
pub struct RegionSummary {
    /// Identity and key range.
    pub info: RegionInfo,
    /// Open, or failed to open and why.
    pub state: RegionState,
    /// Load counters, recent rates and memstore size.
    pub load: RegionLoad,
    /// Per family: store files, their bytes, memstore bytes.
    pub stores: Vec<(String, StoreStats)>,
}

impl RegionSummary {
    /// Store files over all families.
    pub fn store_files(&self) -> usize {
        self.stores.iter().map(|(_, s)| s.files).sum()
    }

    /// Bytes in store files over all families.
    pub fn store_file_bytes(&self) -> u64 {
        self.stores.iter().map(|(_, s)| s.file_bytes).sum()
    }
}

impl Database {
    /// Opens (creating if needed) the database in `dir` with default options.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Database> {
        Database::open_with(Options::new(dir))
    }

    /// Opens the database described by `options` on the local disk with
    /// the system clock: takes the directory lock, loads the catalog and
    /// replays the write-ahead log.
    pub fn open_with(options: Options) -> Result<Database> {
        Database::builder(options).open()
    }

    /// A builder to open a database with a chosen file store and clock.
    pub fn builder(options: Options) -> DatabaseBuilder {
        DatabaseBuilder {
            options,
            files: None,
            clock: None,
            wal: WalPlacement::Local,
        }
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// What opening found in the write-ahead log.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.inner.recovery
    }

    /// Announces a gateway serving this database (`protocol` as users name
    /// it: `thrift`, `thrift2`, `rest`), so `status` can list it. The
    /// process that binds the gateway calls this; registering a protocol
    /// again replaces its address.
    pub fn register_gateway(&self, protocol: &str, address: std::net::SocketAddr) {
        self.inner.gateways.register(protocol, address);
    }

    /// Withdraws a gateway that stopped serving.
    pub fn deregister_gateway(&self, protocol: &str) {
        self.inner.gateways.deregister(protocol);
    }

    /// The gateways serving this database, in the order they were
    /// registered; empty for an embedded database.
    pub fn gateways(&self) -> Vec<Gateway> {
        self.inner.gateways.list()
    }

    /// The master role: catalog, DDL, split and merge.
    pub fn master(&self) -> &Arc<Master> {
        &self.inner.master
    }

    /// The region server role: open regions, the log, background work.
    pub fn region_server(&self) -> &Arc<RegionServer> {
        &self.inner.server
    }

    /// The client role: where each table's rows are served.
    pub fn locator(&self) -> &Arc<RegionLocator> {
        &self.inner.locator
    }

    /// Creates a table.
    pub fn create_table(&self, descriptor: TableDescriptor) -> Result<()> {
        self.create_table_with_splits(descriptor, &[])
    }

    /// Creates a table pre-split at `split_keys`: `n` keys make `n + 1`
    /// regions, `[-inf, k1), [k1, k2), ..., [kn, +inf)`. The keys must be
    /// non-empty, sorted and distinct.
    pub fn create_table_with_splits(
        &self,
        descriptor: TableDescriptor,
        split_keys: &[Bytes],
    ) -> Result<()> {
        self.check_open()?;
        self.inner.master.create_table(descriptor, split_keys)
    }

    /// Creates a table pre-split into `regions` regions by a split
    /// algorithm (HBase's `NUMREGIONS` and `SPLITALGO`).
    pub fn create_table_presplit(
        &self,
        descriptor: TableDescriptor,
        regions: usize,
        algorithm: SplitAlgorithm,
    ) -> Result<()> {
        self.create_table_with_splits(descriptor, &algorithm.split_keys(regions)?)
    }

    /// Names of all tables, sorted.
    pub fn list_tables(&self) -> Vec<String> {
        self.inner.locator.table_names()
    }

    /// True when the table exists.
    pub fn table_exists(&self, name: &str) -> bool {
        self.inner.locator.contains(name)
    }

    /// A handle for reads and writes on a table.
    pub fn table(&self, name: &str) -> Result<Table> {
        self.check_open()?;
        Ok(Table::new(self.inner.locator.table(name)?))
    }

    /// The table's descriptor, state and regions.
    pub fn describe_table(&self, name: &str) -> Result<TableInfo> {
        let state = self.inner.locator.table(name)?;
        Ok(TableInfo {
            descriptor: state.descriptor(),
            enabled: state.is_enabled(),
            regions: state
                .regions()
                .iter()
                .map(|r| RegionSummary {
                    info: r.info().clone(),
                    state: region_state(r),
                    load: r.load(),
                    stores: r.store_stats(),
                })
                .collect(),
        })
    }

    /// The table's regions in key order with their state only: what a
    /// lookup needs, without the loads and store statistics
    /// [`Database::list_regions`] gathers from every store.
    pub fn region_states(&self, name: &str) -> Result<Vec<(RegionInfo, RegionState)>> {
        let state = self.inner.locator.table(name)?;
        Ok(state
            .regions()
            .iter()
            .map(|r| (r.info().clone(), region_state(r)))
            .collect())
    }

    /// The table's regions in key order, with their load (HBase's
    /// `list_regions`).
    pub fn list_regions(&self, name: &str) -> Result<Vec<RegionSummary>> {
        Ok(self.describe_table(name)?.regions)
    }

    /// Reads that failed on damaged data (checksum or structure failures,
    /// and requests to `FAILED_OPEN` regions) since the database opened,
    /// over the tables that still exist. Each was logged with its file and
    /// offset.
    pub fn corruption_errors(&self) -> u64 {
        self.inner
            .locator
            .tables()
            .iter()
            .map(|(_, t)| t.corruption_errors())
            .sum()
    }

    /// True when the table serves requests.
    pub fn is_table_enabled(&self, name: &str) -> Result<bool> {
        Ok(self.inner.locator.table(name)?.is_enabled())
    }

    /// Lets a disabled table serve requests again.
    pub fn enable_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
        self.inner.master.set_enabled(name, true)
    }

    /// Stops a table from serving requests (needed before drop or truncate).
    pub fn disable_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
        self.inner.master.set_enabled(name, false)
    }

    /// Deletes a disabled table and its data.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
        self.inner.master.drop_table(name)
    }

    /// Creates a namespace (HBase's `create_namespace`); tables are then
    /// created in it as `namespace:table`. `default` and `hbase` always
    /// exist.
    pub fn create_namespace(&self, descriptor: NamespaceDescriptor) -> Result<()> {
        self.check_open()?;
        self.inner.master.create_namespace(descriptor)
    }

    /// Sets and removes properties of a namespace (HBase's
    /// `alter_namespace`).
    pub fn alter_namespace(
        &self,
        name: &str,
        set: BTreeMap<String, String>,
        unset: &[String],
    ) -> Result<()> {
        self.check_open()?;
        self.inner.master.alter_namespace(name, set, unset)
    }

    /// Drops an empty namespace (HBase's `drop_namespace`).
    pub fn drop_namespace(&self, name: &str) -> Result<()> {
        self.check_open()?;
        self.inner.master.drop_namespace(name)
    }

    /// Every namespace with its properties, reserved ones included, in
    /// name order (HBase's `list_namespace`).
    pub fn list_namespaces(&self) -> Vec<NamespaceDescriptor> {
        self.inner.master.namespaces()
    }

    /// One namespace (HBase's `describe_namespace`).
    pub fn describe_namespace(&self, name: &str) -> Result<NamespaceDescriptor> {
        self.inner.master.namespace(name)
    }

    /// The tables of a namespace, full names in order (HBase's
    /// `list_namespace_tables`).
    pub fn list_namespace_tables(&self, name: &str) -> Result<Vec<String>> {
        self.inner.master.namespace_tables(name)
    }

    /// Empties a disabled table, keeping its descriptor and region
    /// boundaries; the table stays disabled (as HBase's Admin does).
    pub fn truncate_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
        self.inner.master.truncate_table(name)
    }

    /// Adds, modifies or deletes column families; works on enabled tables.
    pub fn alter_table(&self, name: &str, changes: &[FamilyChange]) -> Result<()> {
        self.check_open()?;
        self.inner.master.alter_table(name, changes)
    }

    /// Flushes every memstore of the table to store files, now.
    pub fn flush_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
        for region in self.inner.locator.table(name)?.regions() {
            self.inner.server.flush_region(region.info().id)?;
        }
        Ok(())
    }

    /// Compacts every store of the table, now: a major compaction rewrites
    /// all files of each store and drops deleted cells, delete markers,
    /// surplus versions and expired cells; a minor one merges the files the
    /// compaction policy picks.
    pub fn compact_table(&self, name: &str, major: bool) -> Result<()> {
        self.check_open()?;
        for region in self.inner.locator.table(name)?.regions() {
            region.compact(major)?;
        }
        self.inner.master.collect_retired_regions()
    }

    /// Splits regions of a table by hand (HBase's `split 'table'[, 'key']`):
    /// with a key, the region holding it splits there (the key becomes the
    /// second daughter's first row); without one, every region with at
    /// least two rows of data splits near its middle.
    pub fn split_table(&self, name: &str, split_key: Option<&[u8]>) -> Result<()> {
        self.check_open()?;
        self.inner.master.split_table(name, split_key)
    }

    /// Splits one region, named by its full or encoded name, at
    /// `split_key` or, without one, at a row near the middle of its data.
    pub fn split_region(&self, region_name: &[u8], split_key: Option<&[u8]>) -> Result<()> {
        self.check_open()?;
        self.inner.master.split_region(region_name, split_key)
    }

    /// Merges two adjacent regions of a table, named by full or encoded
    /// names, into one (HBase's `merge_region`).
    pub fn merge_regions(&self, region_a: &[u8], region_b: &[u8]) -> Result<()> {
        self.check_open()?;
        self.inner.master.merge_regions(region_a, region_b)
    }

    /// Compacts one region, named by its full or encoded name (HBase's
    /// `compact 'region'` / `major_compact 'region'`).
    pub fn compact_region(&self, region_name: &[u8], major: bool) -> Result<()> {
        self.check_open()?;
        self.inner.master.compact_region(region_name, major)
    }

    /// Hits, misses and size of the block cache shared by all stores.
    pub fn block_cache_stats(&self) -> BlockCacheStats {
        self.inner.server.block_cache_stats()
    }

    /// Writes out everything buffered in the log and closes it. Later calls
    /// on this database or its tables fail with [`Error::Closed`]. Dropping
    /// the last handle without closing is safe too: acknowledged writes are
    /// already in the log.
    pub fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.inner.master.stop();
        for (_, location) in self.inner.locator.tables() {
            location.mark_closed();
        }
        let closed = self.inner.server.shutdown();
        // Only now may another process (or handle) open the directory.
        self.inner.lock.lock().take();
        closed
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(Error::Closed(format!(
                "database {}",
                self.inner.dir.display()
            )));
        }
        Ok(())
    }
}

pub(crate) fn lock_directory(dir: &Path) -> Result<File> {
    let path = layout::lock_file(dir);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => Err(Error::Locked { path }),
        Err(fs::TryLockError::Error(e)) => Err(Error::io(&path, e)),
    }
}

/// Open, or failed to open and why.
fn region_state(region: &basalt_engine::Region) -> RegionState {
    match region.open_failure() {
        None => RegionState::Open,
        Some(f) => RegionState::FailedOpen {
            file: f.path.clone(),
            offset: f.offset,
            reason: f.reason.clone(),
        },
    }
}
