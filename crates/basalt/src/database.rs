//! The embedded database: the one-call entry point that wires HBase's
//! three roles together in one process.
//!
//! ```text
//!   Database ── MasterLink ──── the master: catalog, DDL, split/merge
//!      │          │ opens/closes regions on
//!      │          ▼
//!      ├──── RegionServer ───── open regions, WAL, block cache, scheduler
//!      │          ▲ locations published by the master
//!      └──── RegionLocator ──── Table / Scanner: which region holds a row
//! ```
//!
//! `Database` adds what belongs to a data directory (the process lock, the
//! choice of file store and clock: [`DatabaseBuilder`]) and reaches the
//! master only through its [`MasterLink`]: in one process the cluster's
//! own master runs in-process, joined to this process's region server by
//! direct calls (`cluster::in_process`); in a member it is the active
//! master of the cluster (`cluster::member`). So no operation here asks
//! which mode it runs in. The region server and the locator are reachable on their own
//! ([`Database::region_server`], [`Database::locator`]).
//!
//! Every `impl Database` of the crate is in this file: the embedded API,
//! then the calls other servers make on this one (region calls, load
//! reports), then metrics and the key heatmap.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;

use basalt_engine::block_cache::BlockCacheStats;
use basalt_engine::fs::{FileStore, LocalFileStore};
use basalt_engine::{layout, Clock, Region, RegionInfo, RegionLoad, StoreStats, SystemClock};
use basalt_types::index::index_table_name;
use basalt_types::{
    Error, Get, IndexDescriptor, IndexState, NamespaceDescriptor, Result, Scan, TableDescriptor,
};

use crate::access::{
    AccessCheck, Action, Actions, Caller, Grant, PermissionChange, PermissionQuery, Scope,
    SecurityOptions,
};
use crate::authorize;
use crate::catalog::{Catalog, FamilyChange, SplitOrMerge};
use crate::cluster::{
    BalancerRun, ClusterMember, IndexChange, MasterAnswer, MasterCall, MasterControl, MasterLink,
    MemberHooks, MemberLink, PrepareMerge, PrepareSplit, SplitPlan,
};
use crate::cluster::{RegionLoadReport, SnapshotInfo, SnapshotRegionRequest};
use crate::gateways::{Gateway, Gateways};
use crate::index::maintain::IndexRoutes;
use crate::index::{IndexCheckReport, IndexScanner};
use crate::locator::{RegionLocator, RegionRoute, TableLocation};
use crate::metrics::heatmap::{self, HeatmapQuery, KeyHeatmap};
use crate::metrics::{
    FileCacheMetrics, GatewayMetrics, MemstoreMetrics, RequestLatencies, RequestMetrics,
    ServerMetrics, TableMetrics,
};
use crate::normalizer::NormalizerRun;
use crate::options::Options;
use crate::region_calls;
use crate::region_server::WalPlacement;
use crate::region_server::{RecoveryReport, RegionServer};
use crate::remote::{RegionAnswer, RegionCall, RegionCaller};
use crate::replication::{PeerChange, ReplicationPeer};
use crate::split::SplitAlgorithm;
use crate::table::Table;
use basalt_engine::snapshot::SnapshotStore;
use basalt_engine::wal::ObjectWalOptions;

/// An open Basalt database. Cheap to clone; all clones share the database.
#[derive(Debug, Clone)]
pub struct Database {
    inner: Arc<DbInner>,
    /// The caller every operation of this handle is checked for
    /// ([`Database::acting_as`]); `None`: a trusted caller (the embedded
    /// API, the cluster's own calls, or authorization off).
    access: Option<AccessCheck>,
}

#[derive(Debug)]
struct DbInner {
    dir: PathBuf,
    /// Held until `close` (or drop): the OS releases the lock when the
    /// process dies, so a crash never leaves the directory locked.
    lock: Mutex<Option<File>>,
    /// The master, whichever the mode: every DDL and region operation
    /// goes through it, and the catalog is read from it.
    master: Arc<dyn MasterLink>,
    /// Cluster mode: the region-server side of a member (the regions the
    /// active master assigns here); `None` in one process.
    cluster: Option<Arc<ClusterMember>>,
    server: Arc<RegionServer>,
    locator: Arc<RegionLocator>,
    closed: AtomicBool,
    recovery: RecoveryReport,
    /// The gateways the serving process announced (none when embedded).
    gateways: Gateways,
    /// Where "now" comes from, and when the database opened by it.
    clock: Arc<dyn Clock>,
    started_at_ms: i64,
    /// Every `Table`'s request latencies (`metrics.rs`).
    latencies: Arc<RequestLatencies>,
    /// Access control settings (`crate::access`).
    security: SecurityOptions,
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

/// How long a member's request to a server it cannot reach waits for the
/// region to reopen elsewhere: above any session timeout a cluster
/// should use (a few seconds) plus the time to reopen.
const MEMBER_UNREACHABLE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What a cluster member needs besides storage: see
/// [`DatabaseBuilder::open_cluster_member`].
#[derive(Debug, Clone)]
pub struct MemberConfig {
    /// The active master, for DDL and assignment.
    pub control: Arc<dyn MasterControl>,
    /// How calls reach regions other servers hold.
    pub caller: Arc<dyn RegionCaller>,
    /// Where this region server's RPC port listens (host clients reach it
    /// by, and the port), making its HBase name `host,port,startcode` with
    /// its log id as start code; `None` for a member that hosts no
    /// regions (the master's own gateways).
    pub host: Option<(String, u16)>,
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

    /// Opens a cluster member (`basalt regionserver`, and the gateways of
    /// `basalt master`): a region server with its own log on the shared
    /// file store (which must be set) and no region until the master
    /// assigns some, the routes of the catalog the master wrote, and the
    /// master for DDL. See `docs/cluster.md`.
    pub fn open_cluster_member(self, member: MemberConfig) -> Result<Database> {
        let dir = self.options.data_dir.clone();
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let lock = lock_directory(&dir)?;
        let security = self.options.security.clone();
        let files = self.files.ok_or_else(|| {
            Error::invalid("a cluster member needs shared storage (a file store)")
        })?;
        let clock = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let wal = match self.wal {
            WalPlacement::FileStore(options) => options,
            WalPlacement::Local => ObjectWalOptions::default(),
        };
        let options = self.options.clone();
        let started_at_ms = clock.now_millis();
        let server = Arc::new(RegionServer::start_member(
            &dir,
            self.options,
            Arc::clone(&clock),
            Arc::clone(&files),
            wal,
        )?);
        let log_id = server.fence().map_or(0, |f| f.epoch());
        let name = member
            .host
            .map(|(host, port)| format!("{host},{port},{log_id}"));
        let cluster = Arc::new(ClusterMember::new(&dir, files, name, member.control));
        // Automatic splits: after a flush, a region past the split size
        // asks the master (`cluster::split`).
        server.set_hooks(Arc::new(MemberHooks::new(&cluster, options)));
        let locator = Arc::new(RegionLocator::new());
        server.set_index_keeping(Arc::new(IndexRoutes::new(&locator)));
        locator.set_caller(member.caller)?;
        // A dead server's regions reopen elsewhere within the ZooKeeper
        // session timeout (seconds) plus the reopen: requests to them wait
        // that long rather than fail (docs/cluster.md, "Routing").
        locator.set_unreachable_wait(MEMBER_UNREACHABLE_WAIT);
        cluster.refresh(Some(&server), &locator)?;
        let master = Arc::new(MemberLink::new(
            Arc::clone(&cluster),
            Arc::clone(&server),
            Arc::clone(&locator),
        ));
        let db = Database {
            inner: Arc::new(DbInner {
                dir,
                lock: Mutex::new(Some(lock)),
                master,
                cluster: Some(cluster),
                server,
                locator,
                closed: AtomicBool::new(false),
                recovery: RecoveryReport::default(),
                gateways: Gateways::default(),
                clock,
                started_at_ms,
                latencies: Arc::default(),
                security,
            }),
            access: None,
        };
        // A region that answers "not serving" moved: read the catalog again
        // (weakly held: the locator lives inside the database).
        let weak = Arc::downgrade(&db.inner);
        db.inner
            .locator
            .set_refresher(Arc::new(move |_table: &str| {
                if let Some(inner) = weak.upgrade() {
                    if let Err(e) = inner.master.refresh() {
                        tracing::warn!(error = %e, "could not read the catalog again");
                    }
                }
            }));
        Ok(db)
    }

    /// Takes the directory lock, loads the catalog and replays the
    /// write-ahead log.
    pub fn open(self) -> Result<Database> {
        let dir = self.options.data_dir.clone();
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let lock = lock_directory(&dir)?;
        let security = self.options.security.clone();
        let files = self
            .files
            .unwrap_or_else(|| Arc::new(LocalFileStore::new()));
        let clock = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let started_at_ms = clock.now_millis();
        // One process is a cluster of one (`cluster::in_process`).
        let started = crate::cluster::start_in_process(
            &dir,
            self.options,
            Arc::clone(&clock),
            files,
            &self.wal,
        )?;
        let (server, locator, recovery) = (started.server, started.locator, started.recovery);
        // From here every region keeps its table's indexes; those opened
        // at start-up are given theirs now, before any write is served.
        server.set_index_keeping(Arc::new(IndexRoutes::new(&locator)));
        server.keep_indexes_of_open_regions(|table| {
            locator
                .table(table)
                .map(|location| location.descriptor().indexes().to_vec())
                .unwrap_or_default()
        });
        Ok(Database {
            inner: Arc::new(DbInner {
                dir,
                lock: Mutex::new(Some(lock)),
                master: started.link,
                cluster: None,
                server,
                locator,
                closed: AtomicBool::new(false),
                recovery,
                gateways: Gateways::default(),
                clock,
                started_at_ms,
                latencies: Arc::default(),
                security,
            }),
            access: None,
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
    /// Cluster mode: open on no server right now (being assigned, or
    /// recovered after its server died); requests wait for it.
    Offline,
}

impl RegionState {
    /// HBase's name of the state: `OPEN` or `FAILED_OPEN`.
    pub fn name(&self) -> &'static str {
        match self {
            RegionState::Open => "OPEN",
            RegionState::FailedOpen { .. } => "FAILED_OPEN",
            RegionState::Offline => "OFFLINE",
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
    /// Cluster mode: the HBase name (`host,port,startcode`) of the server
    /// holding it; `None` in one process (this process holds it). Load and
    /// store statistics are known only for regions this process holds.
    pub server: Option<String>,
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

    /// Cluster mode: the member side (catalog, routes, the master).
    pub fn cluster(&self) -> Option<&Arc<ClusterMember>> {
        self.inner.cluster.as_ref()
    }

    /// This region server's HBase name in a cluster (`None` in one
    /// process, where `basalt-rpc`'s identity names it).
    pub fn server_name(&self) -> Option<&str> {
        self.inner.cluster.as_ref().and_then(|c| c.name())
    }

    /// Cluster mode: reads the newest catalog and publishes its routes
    /// (the process calls this when the master announces a new version);
    /// in one process routes are always current.
    pub fn refresh_cluster(&self) -> Result<()> {
        self.inner.master.refresh()
    }

    /// Cluster mode: opens a region the master assigned to this server
    /// (the catalog says how). See `cluster::member`.
    pub fn open_assigned_region(&self, table: &str, region: u64) -> Result<()> {
        self.check_open()?;
        let cluster = self.member()?;
        cluster.open_assigned(&self.inner.server, &self.inner.locator, table, region)
    }

    /// Cluster mode: closes a region for the master (flushed first).
    pub fn close_assigned_region(&self, region: u64) -> Result<()> {
        self.check_open()?;
        let cluster = self.member()?;
        cluster.close_assigned(&self.inner.server, &self.inner.locator, region)
    }

    /// Cluster mode: the sequence id region `region`, closed here for a
    /// move or an alter, was flushed through (`None`: not closed that
    /// way). The master's alter asks, so a family it adds counts log edits
    /// only from above it (`RegionServerControl::closed_through`).
    pub fn closed_through(&self, region: u64) -> Result<Option<u64>> {
        self.check_open()?;
        self.member()?;
        Ok(self.inner.server.closed_through(region))
    }

    /// Cluster mode: step b of a split the master drives, on the server
    /// hosting the parent (`cluster::split`): closes it for writes, flushes
    /// it and seeds the daughters.
    pub fn prepare_split_region(&self, request: &PrepareSplit) -> Result<SplitPlan> {
        self.check_open()?;
        let cluster = self.member()?;
        cluster.prepare_split(&self.inner.server, &self.inner.locator, request)
    }

    /// Cluster mode: step b of a merge the master drives (`cluster::split`).
    pub fn prepare_merge_regions(&self, request: &PrepareMerge) -> Result<()> {
        self.check_open()?;
        let cluster = self.member()?;
        cluster.prepare_merge(&self.inner.server, &self.inner.locator, request)
    }

    /// The encoded name of the region with this full or encoded name, from
    /// the catalog (the master's calls name regions as text; a full name
    /// may hold any bytes). A name no region has is passed on as it is,
    /// for the master to refuse.
    fn encoded_region_name(&self, name: &[u8]) -> String {
        let catalog = self.inner.master.catalog();
        let found = catalog.tables.iter().find_map(|(table, entry)| {
            entry.regions.iter().find_map(|region| {
                let info = region.info(table);
                (&info.region_name()[..] == name || info.encoded_name().as_bytes() == name)
                    .then(|| info.encoded_name())
            })
        });
        found.unwrap_or_else(|| String::from_utf8_lossy(name).into_owned())
    }

    /// Runs `call` on the master and expects an answer `expected` picks
    /// out (`what` names the call in the error for any other answer).
    fn master_answer<T>(
        &self,
        what: &str,
        call: MasterCall,
        expected: impl FnOnce(MasterAnswer) -> std::result::Result<T, Box<MasterAnswer>>,
    ) -> Result<T> {
        expected(self.master_call(call)?)
            .map_err(|other| Error::invalid(format!("the master answered {other:?} to {what}")))
    }

    /// Runs `call` on the master, which answers a switch's value before it.
    fn master_switch(&self, what: &str, call: MasterCall) -> Result<bool> {
        self.master_answer(what, call, |answer| match answer {
            MasterAnswer::Switch { previous } => Ok(previous),
            other => Err(Box::new(other)),
        })
    }

    /// Runs the balancer (HBase's `balancer`): in a cluster the active
    /// master evens region counts, then load, across the live servers
    /// (`docs/cluster.md`, "Balancer"); in one process there is one region
    /// server and nothing to move. It does not run while the balancer
    /// switch is off, nor, in a cluster and without `force`, while regions
    /// are in transition (HBase's rules).
    pub fn balance(&self, force: bool) -> Result<BalancerRun> {
        self.master_answer(
            "balance",
            MasterCall::Balance { force },
            |answer| match answer {
                MasterAnswer::Moved { regions } => Ok(BalancerRun::Moved(regions)),
                MasterAnswer::NotRun { reason } => Ok(BalancerRun::NotRun(reason)),
                other => Err(Box::new(other)),
            },
        )
    }

    /// Reads the balancer switch and, with `on`, sets it (HBase's
    /// `balance_switch`, `balancer_enabled`); answers the value before.
    /// Kept in the catalog, so it outlives the process and, in a cluster,
    /// the active master.
    pub fn balancer_switch(&self, on: Option<bool>) -> Result<bool> {
        self.master_switch("balancer_switch", MasterCall::BalancerSwitch { on })
    }

    /// Reads HBase's split or merge switch and, with `on`, sets it (native
    /// RPC's `SetSplitOrMergeEnabled`, `IsSplitOrMergeEnabled`); answers
    /// the value before. While one is off, the splits or merges clients
    /// ask for are refused whichever gateway they come through
    /// ([`crate::admin::AdminRequest::Split`] and `Merge` check it, as
    /// native RPC's calls do); the engine's own splits and the normalizer
    /// do not consult it. Both start on and are kept in the catalog, so
    /// they outlive the process and, in a cluster, hold on every server
    /// and for a master that takes over (HBase keeps them in ZooKeeper).
    pub fn split_or_merge_switch(&self, which: SplitOrMerge, on: Option<bool>) -> Result<bool> {
        self.master_switch(
            &format!("{}_switch", which.name()),
            MasterCall::SplitOrMergeSwitch { which, on },
        )
    }

    /// Refuses a client's split or merge while its switch is off. Reads
    /// the catalog this process holds: in a cluster, a switch another
    /// process just turned off holds here once the catalog's notification
    /// arrives.
    pub fn check_split_or_merge(&self, which: SplitOrMerge) -> Result<()> {
        let catalog = self.inner.master.catalog();
        let off = match which {
            SplitOrMerge::Split => catalog.split_off,
            SplitOrMerge::Merge => catalog.merge_off,
        };
        if !off {
            return Ok(());
        }
        let what = which.name();
        Err(Error::invalid(format!(
            "the {what} switch is off (SetSplitOrMergeEnabled); no {what} was made"
        )))
    }

    /// Reads the normalizer switch and, with `on`, sets it (HBase's
    /// `normalizer_switch`, `normalizer_enabled`); answers the value
    /// before. Off by default; kept in the catalog, so it outlives the
    /// process and, in a cluster, the active master. It applies to every
    /// table (HBase also has a per-table `NORMALIZATION_ENABLED`, which
    /// Basalt does not have).
    pub fn normalizer_switch(&self, on: Option<bool>) -> Result<bool> {
        self.master_switch("normalizer_switch", MasterCall::NormalizerSwitch { on })
    }

    /// Adds, removes, enables, disables or updates a replication peer
    /// (HBase's `add_peer`, `remove_peer`, `enable_peer`, `disable_peer`,
    /// `update_peer_config`) with HBase's checks (`crate::replication`).
    /// Kept in the catalog, so peers outlive the process and, in a
    /// cluster, the active master. **Basalt ships no edits to peers
    /// yet**: a peer is configuration only.
    pub fn change_replication_peer(&self, change: PeerChange) -> Result<()> {
        self.master_call(MasterCall::ReplicationPeer { change })
            .map(drop)
    }

    /// Every replication peer by id (HBase's `list_peers`). In a cluster,
    /// as the active master has them.
    pub fn replication_peers(&self) -> Result<BTreeMap<String, ReplicationPeer>> {
        self.master_answer(
            "replication_peers",
            MasterCall::ReplicationPeers,
            |answer| match answer {
                MasterAnswer::ReplicationPeers { peers } => Ok(peers),
                other => Err(Box::new(other)),
            },
        )
    }

    /// Reads the replication peer modification switch and, with `on`,
    /// sets it (HBase 2.6's `replicationPeerModificationSwitch`); answers
    /// the value before. On by default; while off, every peer change is
    /// refused. Kept in the catalog.
    pub fn replication_peer_modification_switch(&self, on: Option<bool>) -> Result<bool> {
        self.master_switch(
            "replication_peer_modification_switch",
            MasterCall::ReplicationPeerModificationSwitch { on },
        )
    }

    /// Runs the region normalizer once now, whatever its period (HBase's
    /// `normalize`, `docs/normalizer.md`): merges small cold neighbours
    /// and splits oversized regions that load-based split does not own.
    /// In a cluster the active master plans from the loads its servers
    /// report; in one process from the regions here. While the switch is
    /// off it does nothing and says so; answers the plans carried out.
    pub fn normalize(&self) -> Result<NormalizerRun> {
        self.master_answer("normalize", MasterCall::Normalize, |answer| match answer {
            MasterAnswer::Normalized(run) => Ok(run),
            other => Err(Box::new(other)),
        })
    }

    /// Takes snapshot `name` of `table` (HBase's `snapshot`,
    /// `docs/snapshots.md`): its descriptor, regions and the store files
    /// they hold at the cut, referenced, never copied. Each region is
    /// flushed first unless `skip_flush` (HBase's `SKIP_FLUSH`); writes go
    /// on meanwhile. `ttl_secs` > 0: the snapshot expires that long after
    /// it was taken (while the cleanup switch is on).
    pub fn snapshot(&self, table: &str, name: &str, skip_flush: bool, ttl_secs: i64) -> Result<()> {
        self.snapshot_once(table, name, skip_flush, ttl_secs, None)
    }

    /// [`Database::snapshot`] with the client's `nonce`: the same request
    /// sent again (its answer lost with a master that died) is answered
    /// as the snapshot it took, not refused as a name taken (HBase's
    /// nonce on `SnapshotRequest`).
    pub fn snapshot_once(
        &self,
        table: &str,
        name: &str,
        skip_flush: bool,
        ttl_secs: i64,
        nonce: Option<basalt_types::Nonce>,
    ) -> Result<()> {
        self.master_call(MasterCall::Snapshot {
            table: table.to_string(),
            name: name.to_string(),
            skip_flush,
            ttl_secs,
            owner: None,
            nonce,
        })
        .map(drop)
    }

    /// The completed snapshots, oldest first; with `pattern`, those whose
    /// whole name matches that regular expression (HBase's
    /// `list_snapshots`).
    pub fn list_snapshots(&self, pattern: Option<&str>) -> Result<Vec<SnapshotInfo>> {
        let snapshots = self.master_snapshots(pattern)?;
        // HBase lists a caller the snapshots it took, all of them to a
        // global admin.
        let Some(check) = &self.access else {
            return Ok(snapshots);
        };
        let administers_all = self.allows(authorize::ADMIN, &Scope::Global);
        Ok(snapshots
            .into_iter()
            .filter(|s| authorize::lists_snapshot(s, &check.caller().user, administers_all))
            .collect())
    }

    /// Every completed snapshot the master lists (those matching
    /// `pattern`), whoever asks: listing needs no right, the caller's view
    /// is filtered after (`list_snapshots`).
    fn master_snapshots(&self, pattern: Option<&str>) -> Result<Vec<SnapshotInfo>> {
        self.master_answer(
            "list_snapshots",
            MasterCall::ListSnapshots {
                pattern: pattern.map(str::to_string),
            },
            |answer| match answer {
                MasterAnswer::Snapshots { snapshots } => Ok(snapshots),
                other => Err(Box::new(other)),
            },
        )
    }

    /// What `call` needs of `caller`: HBase's rules (`authorize`), with a
    /// snapshot call decided from the snapshot it names, since its owner
    /// has rights others lack. A snapshot that does not exist needs
    /// nothing: the call fails as missing, whoever asks, as in HBase.
    fn requirement(
        &self,
        call: &MasterCall,
        caller: &str,
        catalog: &Catalog,
    ) -> Result<Option<authorize::Requirement>> {
        let (MasterCall::DeleteSnapshot { name }
        | MasterCall::CloneSnapshot { name, .. }
        | MasterCall::RestoreSnapshot { name }) = call
        else {
            return Ok(authorize::master_call(call, catalog));
        };
        let named = self.master_snapshots(Some(&regex::escape(name)))?;
        Ok(named
            .iter()
            .find(|s| s.name == *name)
            .and_then(|snapshot| authorize::snapshot_call(call, snapshot, caller, catalog)))
    }

    /// Deletes snapshot `name`; the store files nothing else references
    /// any more are deleted with it (HBase's `delete_snapshot`).
    pub fn delete_snapshot(&self, name: &str) -> Result<()> {
        self.master_call(MasterCall::DeleteSnapshot {
            name: name.to_string(),
        })
        .map(drop)
    }

    /// Creates table `table` from snapshot `name`, sharing the snapshot's
    /// files (HBase's `clone_snapshot`); the table is enabled.
    pub fn clone_snapshot(&self, name: &str, table: &str) -> Result<()> {
        self.master_call(MasterCall::CloneSnapshot {
            name: name.to_string(),
            table: table.to_string(),
        })
        .map(drop)
    }

    /// Returns the snapshot's table, which must be disabled, to exactly
    /// the snapshot's descriptor, regions and cells (HBase's
    /// `restore_snapshot`); it stays disabled.
    pub fn restore_snapshot(&self, name: &str) -> Result<()> {
        self.master_call(MasterCall::RestoreSnapshot {
            name: name.to_string(),
        })
        .map(drop)
    }

    /// Reads the snapshot cleanup switch and, with `on`, sets it (HBase's
    /// `snapshot_cleanup_switch`); answers the value before. On by
    /// default; kept in the catalog.
    pub fn snapshot_cleanup_switch(&self, on: Option<bool>) -> Result<bool> {
        self.master_switch(
            "snapshot_cleanup_switch",
            MasterCall::SnapshotCleanupSwitch { on },
        )
    }

    /// The serving side of a master's snapshot of a region held here
    /// (`RegionServerControl::snapshot_region`): flushed if asked, then its
    /// files per family.
    pub fn snapshot_region_files(
        &self,
        request: &SnapshotRegionRequest,
    ) -> Result<Vec<SnapshotStore>> {
        self.check_open()?;
        crate::cluster::snapshot_region(&self.inner.server, request)
    }

    /// A call to the master: the in-process one, or a cluster's active
    /// master. When it returns, this process's routes show its outcome.
    pub fn master_call(&self, mut call: MasterCall) -> Result<MasterAnswer> {
        self.check_open()?;
        if let Some(check) = &self.access {
            let catalog = self.inner.master.catalog();
            if let Some(required) = self.requirement(&call, &check.caller().user, &catalog)? {
                check.require(
                    &catalog.permissions,
                    required.operation,
                    required.actions,
                    &required.scope,
                )?;
                // Every admin operation is audited, allowed or not.
                crate::access::audit(
                    check.caller(),
                    true,
                    required.operation,
                    &required.scope.to_string(),
                );
            }
            if let MasterCall::CreateTable { owner, .. } | MasterCall::Snapshot { owner, .. } =
                &mut call
            {
                *owner = Some(check.caller().user.clone());
            }
        }
        self.inner.master.call(call)
    }

    /// A handle on the same database whose every operation is checked
    /// against `caller`'s permissions (`crate::access`): what a gateway
    /// makes for the caller of a request. With authorization off
    /// ([`SecurityOptions::authorization`]) the handle is trusted, as
    /// this one is.
    pub fn acting_as(&self, caller: Caller) -> Database {
        let security = &self.inner.security;
        Database {
            inner: Arc::clone(&self.inner),
            access: security
                .authorization
                .then(|| AccessCheck::new(security, caller)),
        }
    }

    /// [`Database::acting_as`] the user `user`, in the groups the
    /// configuration gives it.
    pub fn acting_as_user(&self, user: &str) -> Database {
        self.acting_as(self.inner.security.caller(user))
    }

    /// The access control settings the database was opened with.
    pub fn security(&self) -> &SecurityOptions {
        &self.inner.security
    }

    /// The caller this handle checks operations for; `None` for a trusted
    /// handle.
    pub fn caller(&self) -> Option<&Caller> {
        self.access.as_ref().map(AccessCheck::caller)
    }

    /// Grants or revokes permissions (HBase's `grant` and `revoke`). The
    /// caller needs ADMIN at the scope of the change, and only a
    /// superuser may change a superuser's or a superuser group's grants.
    pub fn change_permission(&self, change: PermissionChange) -> Result<()> {
        self.require_access_control()?;
        if let Some(check) = &self.access {
            let grant = match &change {
                PermissionChange::Grant { grant, .. } | PermissionChange::Revoke { grant } => grant,
            };
            if !check.is_superuser() && self.inner.security.is_superuser_principal(&grant.principal)
            {
                return Err(Error::AccessDenied(
                    "Granting or revoking superusers's or supergroups's permissions is not allowed"
                        .into(),
                ));
            }
        }
        self.master_call(MasterCall::Permission { change })
            .map(drop)
    }

    /// The grants `query` asks for (HBase's `getUserPermissions`), as
    /// this process holds them (in a cluster, within about a second of
    /// the master's). A checked caller needs ADMIN at the query's scope.
    pub fn user_permissions(&self, query: &PermissionQuery) -> Result<Vec<Grant>> {
        self.require_access_control()?;
        self.authorize("getUserPermissions", authorize::ADMIN, &query.scope)?;
        Ok(self
            .inner
            .master
            .catalog()
            .permissions
            .query(query, &self.inner.security))
    }

    /// For each of `asked`, whether `user` (this handle's caller when
    /// `None`) may do all of its actions there (HBase's
    /// `hasUserPermissions`). Asking about another user takes ADMIN at
    /// each scope asked about.
    pub fn has_user_permissions(
        &self,
        user: Option<&str>,
        asked: &[(Scope, Actions)],
    ) -> Result<Vec<bool>> {
        self.require_access_control()?;
        let security = &self.inner.security;
        let target = match (&self.access, user) {
            // A trusted handle holds everything.
            (None, None) => return Ok(vec![true; asked.len()]),
            (None, Some(user)) => AccessCheck::new(security, security.caller(user)),
            (Some(check), Some(user)) if user != check.caller().user => {
                for (scope, _) in asked {
                    self.authorize("hasUserPermissions", authorize::ADMIN, scope)?;
                }
                AccessCheck::new(security, security.caller(user))
            }
            (Some(check), _) => check.clone(),
        };
        let catalog = self.inner.master.catalog();
        Ok(asked
            .iter()
            .map(|(scope, actions)| target.holds(&catalog.permissions, *actions, scope))
            .collect())
    }

    /// The permission calls need access control on: HBase without its
    /// `AccessController` refuses them too, rather than keep grants that
    /// nothing checks.
    fn require_access_control(&self) -> Result<()> {
        if self.inner.security.authorization {
            return Ok(());
        }
        Err(Error::invalid(
            "Security features are not available: access control is off (set [security] authorization = true; docs/security.md)",
        ))
    }

    /// Whether this handle's caller holds one of `actions` at `scope`
    /// (always for a trusted handle).
    pub fn allows(&self, actions: &[Action], scope: &Scope) -> bool {
        self.access.as_ref().is_none_or(|check| {
            check.allows(&self.inner.master.catalog().permissions, actions, scope)
        })
    }

    /// Refuses unless the caller holds one of `actions` at `scope`.
    pub(crate) fn authorize(
        &self,
        operation: &str,
        actions: &[Action],
        scope: &Scope,
    ) -> Result<()> {
        match &self.access {
            None => Ok(()),
            Some(check) => check.require(
                &self.inner.master.catalog().permissions,
                operation,
                actions,
                scope,
            ),
        }
    }

    fn member(&self) -> Result<&Arc<ClusterMember>> {
        self.inner.cluster.as_ref().ok_or_else(|| {
            Error::invalid("not a cluster member: this database runs in one process")
        })
    }

    /// The region server role: open regions, the log, background work.
    pub fn region_server(&self) -> &Arc<RegionServer> {
        &self.inner.server
    }

    /// The client role: where each table's rows are served.
    pub fn locator(&self) -> &Arc<RegionLocator> {
        &self.inner.locator
    }

    /// The database's clock (handed to the builder, or the system's).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// Clock millis at which the database opened.
    pub fn started_at_ms(&self) -> i64 {
        self.inner.started_at_ms
    }

    /// The request latencies every `Table` of this database records.
    pub fn latencies(&self) -> &Arc<RequestLatencies> {
        &self.inner.latencies
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
        // `master_call` names the owner when a caller is checked.
        let call = MasterCall::CreateTable {
            descriptor,
            splits: split_keys.to_vec(),
            owner: None,
        };
        self.master_call(call).map(drop)
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
        let names = self.inner.locator.table_names();
        match &self.access {
            None => names,
            // HBase's `getTableNames` keeps the tables the caller holds
            // some right in.
            Some(check) => {
                let catalog = self.inner.master.catalog();
                names
                    .into_iter()
                    .filter(|table| check.any_in_table(&catalog.permissions, table))
                    .collect()
            }
        }
    }

    /// True when the table exists.
    pub fn table_exists(&self, name: &str) -> bool {
        self.inner.locator.contains(name)
    }

    /// A handle for reads and writes on a table.
    pub fn table(&self, name: &str) -> Result<Table> {
        self.check_open()?;
        let table = Table::new(
            self.inner.locator.table(name)?,
            Arc::clone(&self.inner.latencies),
        );
        // A superuser passes every data check (and reads and writes are
        // not audited when allowed): its table is unchecked, so the
        // gateways acting as the server user pay nothing per request.
        Ok(match &self.access {
            Some(check) if !check.is_superuser() => {
                table.checked(check.clone(), Arc::clone(&self.inner.master))
            }
            _ => table,
        })
    }

    /// The table's descriptor, state and regions.
    pub fn describe_table(&self, name: &str) -> Result<TableInfo> {
        // HBase's `getTableDescriptors` by name: ADMIN or CREATE.
        self.authorize(
            "getTableDescriptors",
            authorize::ADMIN_OR_CREATE,
            &Scope::table(name),
        )?;
        self.table_info(name)
    }

    /// [`Database::describe_table`] unchecked: region lists are what
    /// `hbase:meta` shows, which every caller may read.
    fn table_info(&self, name: &str) -> Result<TableInfo> {
        let state = self.inner.locator.table(name)?;
        Ok(TableInfo {
            descriptor: state.descriptor(),
            enabled: state.is_enabled(),
            regions: self.summaries(&state, true),
        })
    }

    /// The table's regions in key order with their state only: what a
    /// lookup needs, without the loads and store statistics
    /// [`Database::list_regions`] gathers from every store.
    pub fn region_states(&self, name: &str) -> Result<Vec<(RegionInfo, RegionState)>> {
        let state = self.inner.locator.table(name)?;
        Ok(self
            .summaries(&state, false)
            .into_iter()
            .map(|s| (s.info, s.state))
            .collect())
    }

    /// The table's regions in key order with their state and, in a
    /// cluster, the HBase name of the server holding each (what
    /// `hbase:meta` says).
    pub fn region_holders(
        &self,
        name: &str,
    ) -> Result<Vec<(RegionInfo, RegionState, Option<String>)>> {
        let state = self.inner.locator.table(name)?;
        Ok(self
            .summaries(&state, false)
            .into_iter()
            .map(|s| (s.info, s.state, s.server))
            .collect())
    }

    /// One summary per region of `table` in key order; `loads` gathers
    /// the load and store statistics of the regions held here.
    fn summaries(&self, table: &TableLocation, loads: bool) -> Vec<RegionSummary> {
        let catalog = self.inner.master.catalog();
        // The one server of a process has no network name of its own (its
        // gateways name themselves): only a cluster's servers are shown.
        let holder = |id: u64| {
            catalog
                .region(id)
                .and_then(|(_, _, entry)| entry.server.clone())
                .filter(|server| server != crate::cluster::IN_PROCESS_SERVER)
        };
        table
            .routes()
            .iter()
            .map(|route| match route {
                RegionRoute::Local(r) => RegionSummary {
                    info: r.info().clone(),
                    state: region_state(r),
                    load: if loads {
                        r.load()
                    } else {
                        RegionLoad::default()
                    },
                    stores: if loads { r.store_stats() } else { Vec::new() },
                    server: holder(r.info().id),
                },
                RegionRoute::Remote { info, .. } => RegionSummary {
                    info: info.clone(),
                    state: RegionState::Open,
                    load: RegionLoad::default(),
                    stores: Vec::new(),
                    server: holder(info.id),
                },
                RegionRoute::Offline { info } => RegionSummary {
                    info: info.clone(),
                    state: RegionState::Offline,
                    load: RegionLoad::default(),
                    stores: Vec::new(),
                    server: None,
                },
            })
            .collect()
    }

    /// The table's regions in key order, with their load (HBase's
    /// `list_regions`).
    pub fn list_regions(&self, name: &str) -> Result<Vec<RegionSummary>> {
        Ok(self.table_info(name)?.regions)
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
        self.set_enabled(name, true)?;
        // Indexes a restore emptied (or a build a crash interrupted) are
        // filled again now that the rows can be read.
        let building: Vec<IndexDescriptor> = self
            .inner
            .locator
            .table(name)?
            .descriptor()
            .indexes()
            .iter()
            .filter(|index| index.state == IndexState::Building)
            .cloned()
            .collect();
        for index in building {
            self.create_index(name, index)?;
        }
        Ok(())
    }

    /// Stops a table from serving requests (needed before drop or truncate).
    pub fn disable_table(&self, name: &str) -> Result<()> {
        self.set_enabled(name, false)
    }

    fn set_enabled(&self, name: &str, enabled: bool) -> Result<()> {
        self.check_open()?;
        let call = MasterCall::SetEnabled {
            table: name.to_string(),
            enabled,
        };
        self.master_call(call).map(drop)
    }

    /// Deletes a disabled table and its data, and its indexes' tables.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
        let index_tables = self.index_tables_of(name);
        let call = MasterCall::DropTable {
            table: name.to_string(),
        };
        self.master_call(call)?;
        for table in index_tables {
            match self.set_enabled(&table, false) {
                Ok(()) | Err(Error::TableDisabled(_)) => {}
                Err(Error::TableNotFound(_)) => continue,
                Err(e) => return Err(e),
            }
            self.master_call(MasterCall::DropTable { table })?;
        }
        Ok(())
    }

    /// The tables that hold `table`'s indexes (none for an unknown table).
    fn index_tables_of(&self, table: &str) -> Vec<String> {
        self.inner
            .locator
            .table(table)
            .map(|location| {
                location
                    .descriptor()
                    .indexes()
                    .iter()
                    .map(|index| index_table_name(table, &index.name))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Creates secondary index `index` on `table` and fills it from the
    /// rows the table holds (`crate::index`, and `index/build.rs` for the
    /// steps); returns how many rows the backfill indexed. Writes keep the
    /// index from the moment it is recorded, while the backfill runs; reads
    /// may use it once this returns. The same definition again resumes a
    /// build that was interrupted (the backfill is idempotent).
    pub fn create_index(&self, table: &str, index: IndexDescriptor) -> Result<u64> {
        self.create_index_reporting(table, index, &mut |_| {})
    }

    /// [`Database::create_index`], telling `progress` how many rows the
    /// backfill has indexed after each batch.
    pub fn create_index_reporting(
        &self,
        table: &str,
        index: IndexDescriptor,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64> {
        self.check_open()?;
        let name = index.name.clone();
        self.master_call(MasterCall::Indexes {
            table: table.to_string(),
            change: IndexChange::Add { index },
        })?;
        let location = self.inner.locator.table(table)?;
        let stored = location
            .descriptor()
            .get_index(&name)
            .cloned()
            .ok_or_else(|| {
                Error::invalid(format!(
                    "index '{name}' of table '{table}' was dropped while it was being created"
                ))
            })?;
        if stored.state == IndexState::Active {
            return Ok(0);
        }
        let data = Table::new(location, Arc::clone(&self.inner.latencies));
        let index_table = Table::new(
            self.inner.locator.table(&index_table_name(table, &name))?,
            Arc::clone(&self.inner.latencies),
        );
        let rows = crate::index::build::backfill(&data, &index_table, &stored, progress)?;
        self.master_call(MasterCall::Indexes {
            table: table.to_string(),
            change: IndexChange::Activate { name },
        })?;
        Ok(rows)
    }

    /// Index `index` of `table`: its descriptor, a trusted handle on the
    /// data table and one on the index table.
    fn index_parts(&self, table: &str, index: &str) -> Result<(IndexDescriptor, Table, Table)> {
        let location = self.inner.locator.table(table)?;
        let descriptor = location
            .descriptor()
            .get_index(index)
            .cloned()
            .ok_or_else(|| {
                Error::invalid(format!("table '{table}' has no index named '{index}'"))
            })?;
        let data = Table::new(location, Arc::clone(&self.inner.latencies));
        let index_table = Table::new(
            self.inner.locator.table(&index_table_name(table, index))?,
            Arc::clone(&self.inner.latencies),
        );
        Ok((descriptor, data, index_table))
    }

    /// Compares index `index` of `table` with a rebuild of it from the
    /// table's rows (`index/check.rs`); with `repair`, settles the
    /// unverified rows interrupted writes left, as reads do. Exact on a
    /// table no write reaches meanwhile.
    pub fn check_index(&self, table: &str, index: &str, repair: bool) -> Result<IndexCheckReport> {
        self.check_open()?;
        let (descriptor, data, index_table) = self.index_parts(table, index)?;
        crate::index::check::check(
            &self.table(table)?,
            &data,
            &index_table,
            &descriptor,
            repair,
        )
    }

    /// The scans of `table` whose filter tested a column's value, as this
    /// process served them, by column: where a secondary index would
    /// spare a full read (`basalt keys analyze`).
    pub fn filter_scans(&self, table: &str) -> Result<Vec<crate::FilterScanStats>> {
        self.check_open()?;
        Ok(self.inner.locator.table(table)?.filter_scans())
    }

    /// Drops secondary index `name` of `table`: writes stop keeping it,
    /// then its table goes.
    pub fn drop_index(&self, table: &str, name: &str) -> Result<()> {
        self.check_open()?;
        self.master_call(MasterCall::Indexes {
            table: table.to_string(),
            change: IndexChange::Drop {
                name: name.to_string(),
            },
        })
        .map(drop)
    }

    /// Reads `table`'s rows by index `index`, in index order
    /// (`index/scan.rs`). The scan's start and stop rows and row prefix
    /// are index keys: build them from values with
    /// [`IndexDescriptor::bound`] and [`IndexDescriptor::equal_prefix`].
    /// Its columns, versions, time range and filter apply to each data
    /// row (a filter sees one row at a time), its limit counts data rows,
    /// and a reversed scan reads the index backwards.
    pub fn scan_index(&self, table: &str, index: &str, scan: &Scan) -> Result<IndexScanner> {
        self.check_open()?;
        scan.validate()?;
        let (descriptor, checks, index_table) = self.index_parts(table, index)?;
        if descriptor.state != IndexState::Active {
            return Err(Error::invalid(format!(
                "index '{index}' of table '{table}' is still being built; reads may use it once create_index returns"
            )));
        }
        let data = self.table(table)?;
        let entries_scan = Scan {
            start_row: scan.start_row.clone(),
            stop_row: scan.stop_row.clone(),
            row_prefix: scan.row_prefix.clone(),
            reversed: scan.reversed,
            caching: scan.caching,
            ..Scan::new()
        };
        let entries = index_table.scan(&entries_scan)?;
        let template = Get {
            row: Default::default(),
            columns: scan.columns.clone(),
            max_versions: scan.max_versions,
            time_range: scan.time_range,
            filter: scan.filter.clone(),
        };
        Ok(IndexScanner::new(
            descriptor,
            entries,
            data,
            checks,
            index_table,
            template,
            scan.limit,
        ))
    }

    /// Creates a namespace (HBase's `create_namespace`); tables are then
    /// created in it as `namespace:table`. `default` and `hbase` always
    /// exist.
    pub fn create_namespace(&self, descriptor: NamespaceDescriptor) -> Result<()> {
        self.check_open()?;
        self.master_call(MasterCall::CreateNamespace { descriptor })
            .map(drop)
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
        let call = MasterCall::AlterNamespace {
            name: name.to_string(),
            set,
            unset: unset.to_vec(),
        };
        self.master_call(call).map(drop)
    }

    /// Drops an empty namespace (HBase's `drop_namespace`).
    pub fn drop_namespace(&self, name: &str) -> Result<()> {
        self.check_open()?;
        let call = MasterCall::DropNamespace {
            name: name.to_string(),
        };
        self.master_call(call).map(drop)
    }

    /// Every namespace with its properties, reserved ones included, in
    /// name order (HBase's `list_namespace`).
    pub fn list_namespaces(&self) -> Vec<NamespaceDescriptor> {
        let namespaces = self.inner.master.catalog().namespace_list();
        // HBase's `listNamespaceDescriptors` keeps those the caller
        // administers.
        namespaces
            .into_iter()
            .filter(|namespace| self.allows(authorize::ADMIN, &Scope::namespace(&namespace.name)))
            .collect()
    }

    /// One namespace (HBase's `describe_namespace`).
    pub fn describe_namespace(&self, name: &str) -> Result<NamespaceDescriptor> {
        self.authorize(
            "getNamespaceDescriptor",
            authorize::ADMIN,
            &Scope::namespace(name),
        )?;
        self.inner.master.catalog().namespace(name)
    }

    /// The tables of a namespace, full names in order (HBase's
    /// `list_namespace_tables`).
    pub fn list_namespace_tables(&self, name: &str) -> Result<Vec<String>> {
        self.inner.master.catalog().namespace_tables(name)
    }

    /// Empties a disabled table, keeping its descriptor and region
    /// boundaries; the table stays disabled. The primitive under HBase's
    /// truncate (`AdminRequest::Truncate`, which every gateway and the
    /// shell run: it also enables the table and, unless asked to keep
    /// them, merges its regions into one).
    pub fn truncate_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
        let call = MasterCall::Truncate {
            table: name.to_string(),
        };
        self.master_call(call)?;
        // Its indexes are emptied with it (they stay enabled: only the
        // data table's writes reach them).
        for table in self.index_tables_of(name) {
            match self.set_enabled(&table, false) {
                Ok(()) | Err(Error::TableDisabled(_)) => {}
                Err(e) => return Err(e),
            }
            self.master_call(MasterCall::Truncate {
                table: table.clone(),
            })?;
            self.set_enabled(&table, true)?;
        }
        Ok(())
    }

    /// Adds, modifies or deletes column families; works on enabled tables.
    pub fn alter_table(&self, name: &str, changes: &[FamilyChange]) -> Result<()> {
        self.check_open()?;
        let call = MasterCall::Alter {
            table: name.to_string(),
            changes: changes.to_vec(),
        };
        self.master_call(call).map(drop)
    }

    /// Flushes every memstore of the table to store files, now.
    pub fn flush_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
        self.authorize("flush", authorize::ADMIN_OR_CREATE, &Scope::table(name))?;
        self.on_every_region(name, RegionCall::Flush)
    }

    /// Runs a maintenance `call` (flush or compact) on every region of
    /// table `name`: here for the regions this process holds, through a
    /// region call to the holder for the others (cluster mode); a region
    /// held nowhere right now (being assigned) is skipped, it has nothing
    /// of its own in memory.
    fn on_every_region(&self, name: &str, call: RegionCall) -> Result<()> {
        let table = self.inner.locator.table(name)?;
        for route in table.routes() {
            match route {
                RegionRoute::Local(region) => match call {
                    RegionCall::Compact { major } => {
                        region.compact(major)?;
                    }
                    _ => self.inner.server.flush_region(region.info().id)?,
                },
                RegionRoute::Remote { info, server } => {
                    table.call_remote(&info, &server, call.clone())?;
                }
                RegionRoute::Offline { .. } => {}
            }
        }
        Ok(())
    }

    /// Compacts every store of the table, now: a major compaction rewrites
    /// all files of each store and drops deleted cells, delete markers,
    /// surplus versions and expired cells; a minor one merges the files the
    /// compaction policy picks.
    pub fn compact_table(&self, name: &str, major: bool) -> Result<()> {
        self.check_open()?;
        self.authorize("compact", authorize::ADMIN_OR_CREATE, &Scope::table(name))?;
        self.on_every_region(name, RegionCall::Compact { major })?;
        self.run_catalog_janitor()
    }

    /// Splits regions of a table by hand (HBase's `split 'table'[, 'key']`):
    /// with a key, the region holding it splits there (the key becomes the
    /// second daughter's first row); without one, every region with at
    /// least two rows of data splits near its middle.
    pub fn split_table(&self, name: &str, split_key: Option<&[u8]>) -> Result<()> {
        self.check_open()?;
        let call = MasterCall::SplitTable {
            table: name.to_string(),
            key: split_key.map(Bytes::copy_from_slice),
        };
        self.master_call(call).map(drop)
    }

    /// Splits one region, named by its full or encoded name, at
    /// `split_key` or, without one, at a row near the middle of its data.
    pub fn split_region(&self, region_name: &[u8], split_key: Option<&[u8]>) -> Result<()> {
        self.check_open()?;
        let call = MasterCall::Split {
            region: self.encoded_region_name(region_name),
            key: split_key.map(Bytes::copy_from_slice),
        };
        self.master_call(call).map(drop)
    }

    /// Merges two adjacent regions of a table, named by full or encoded
    /// names, into one (HBase's `merge_region`).
    pub fn merge_regions(&self, region_a: &[u8], region_b: &[u8]) -> Result<()> {
        self.check_open()?;
        let call = MasterCall::Merge {
            region_a: self.encoded_region_name(region_a),
            region_b: self.encoded_region_name(region_b),
        };
        self.master_call(call).map(drop)
    }

    /// Compacts one region, named by its full or encoded name (HBase's
    /// `compact 'region'` / `major_compact 'region'`).
    pub fn compact_region(&self, region_name: &[u8], major: bool) -> Result<()> {
        self.check_open()?;
        // The region's holder compacts it: this process, or the server a
        // cluster's catalog names.
        for (_, table) in self.inner.locator.tables() {
            for route in table.routes() {
                let info = match &route {
                    RegionRoute::Local(region) => region.info().clone(),
                    RegionRoute::Remote { info, .. } | RegionRoute::Offline { info } => {
                        info.clone()
                    }
                };
                if info.region_name()[..] != *region_name
                    && info.encoded_name().as_bytes() != region_name
                {
                    continue;
                }
                self.authorize(
                    "compact",
                    authorize::ADMIN_OR_CREATE,
                    &Scope::table(table.name()),
                )?;
                match route {
                    RegionRoute::Local(region) => region.compact(major).map(drop),
                    RegionRoute::Remote { info, server } => table
                        .call_remote(&info, &server, RegionCall::Compact { major })
                        .map(drop),
                    RegionRoute::Offline { info } => Err(Error::NotServingRegion(format!(
                        "region {} is being assigned; compact it once it is open",
                        info.encoded_name()
                    ))),
                }?;
                return self.run_catalog_janitor();
            }
        }
        Err(Error::invalid(format!(
            "unknown region {}",
            String::from_utf8_lossy(region_name)
        )))
    }

    /// A compaction rewrites a split or merge's links: the retired regions
    /// no region links to any more go now rather than at the master's next
    /// round.
    fn run_catalog_janitor(&self) -> Result<()> {
        self.master_call(MasterCall::CatalogJanitor).map(drop)
    }

    /// Hits, misses and size of the block cache shared by all stores.
    pub fn block_cache_stats(&self) -> BlockCacheStats {
        self.inner.server.block_cache_stats()
    }

    /// The last load-based split decisions of this server, oldest first:
    /// splits and refusals, with the reason and time (`docs/load-split.md`);
    /// at most `Options::load_split_events_kept`.
    pub fn load_split_events(&self) -> Vec<crate::LoadSplitEvent> {
        self.inner.server.load_split_events()
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

// ---- served to other servers: region calls and load reports ----
impl Database {
    /// Runs a region call another server sent about region `region_id` of
    /// `table`, on that region if it is open here (see the module docs).
    /// A region not open here, or of another table, or a row outside its
    /// range, is `NotServingRegion`: the caller refreshes its routes.
    pub fn serve_region_call(
        &self,
        table: &str,
        region_id: u64,
        call: RegionCall,
    ) -> Result<RegionAnswer> {
        let scanners = &self.locator().served;
        match call {
            // Scanner calls name their scanner; it holds its region.
            RegionCall::NextRows { scanner, rows } => {
                let served = scanners.get(table, region_id, scanner)?;
                let mut served = served.lock();
                region_calls::next_rows(scanners, scanner, &mut served, rows)
            }
            RegionCall::CloseScanner { scanner } => {
                // Only a scanner of this region and table is closed; an
                // unknown one is closed already.
                if scanners.get(table, region_id, scanner).is_ok() {
                    scanners.remove(scanner);
                }
                Ok(RegionAnswer::Done)
            }
            RegionCall::Flush => {
                self.region_here(table, region_id)?;
                self.region_server().flush_region(region_id)?;
                Ok(RegionAnswer::Done)
            }
            RegionCall::BulkLoad { family, path, from } => {
                let region = self.region_here(table, region_id)?;
                Self::serve_bulk_load(&region, &family, &path, &from)
            }
            RegionCall::Compact { major } => {
                // Whether it compacted anything does not travel: the caller
                // asked for the policy's decision, not a promise of work.
                let _compacted = self.region_here(table, region_id)?.compact(major)?;
                Ok(RegionAnswer::Done)
            }
            call => {
                let region = self.region_here(table, region_id)?;
                region_calls::serve_on_region(scanners, table, &region, call)
            }
        }
    }

    /// Sets how long a scanner opened by a region call lives without a
    /// call on it (default [`crate::REGION_CALL_SCANNER_LEASE`]).
    pub fn set_region_call_scanner_lease(&self, lease: Duration) {
        self.locator()
            .served
            .set_lease(lease.max(Duration::from_millis(1)));
    }

    /// Scanners opened by region calls and still open on this server.
    pub fn region_call_scanners(&self) -> usize {
        self.locator().served.len()
    }

    /// Region `region_id` if this process serves it for `table`.
    fn region_here(&self, table: &str, region_id: u64) -> Result<Arc<Region>> {
        self.region_server()
            .region(region_id)
            .filter(|r| r.info().table == table)
            .ok_or_else(|| {
                Error::NotServingRegion(format!(
                    "region {region_id} of table {table} is not open on this server"
                ))
            })
    }

    /// The load of every region this process serves itself, for
    /// [`crate::cluster::RegionServerControl::region_loads`]'s serving side.
    pub fn region_load_reports(&self) -> Vec<RegionLoadReport> {
        crate::cluster::region_load_reports(self.locator())
    }
}

// ---- metrics ----
impl Database {
    /// The server's numbers now: uptime, requests and their latencies,
    /// block cache, log, memstores, queues and finished work. Cheap enough
    /// to call every few seconds (it reads each open region's counters).
    pub fn server_metrics(&self) -> ServerMetrics {
        let server = self.region_server();
        let now = self.clock().now_millis();
        let started = self.started_at_ms();
        let (online, retired) = server.regions_and_retired_load();
        let mut requests = RequestMetrics::default();
        requests.add_totals(&retired.server);
        let (mut regions, mut failed, mut files, mut file_bytes) = (0, 0, 0, 0);
        for region in online {
            regions += 1;
            if region.open_failure().is_some() {
                failed += 1;
            }
            requests.add(&region.load());
            for (_, stats) in region.store_stats() {
                files += stats.files;
                file_bytes += stats.file_bytes;
            }
        }
        let budget = server.memstore_budget();
        let limits = budget.limits();
        let activity = server.maintenance_activity();
        let work = &server.store_context().work;
        ServerMetrics {
            started_at_ms: started,
            uptime_ms: now.saturating_sub(started).max(0),
            server: self.server_name().map(str::to_string),
            tables: self.list_tables().len(),
            regions,
            failed_regions: failed,
            gateways: self
                .gateways()
                .into_iter()
                .map(|g| GatewayMetrics {
                    protocol: g.protocol,
                    address: g.address.to_string(),
                })
                .collect(),
            requests,
            latencies: self.latencies().snapshot(),
            block_cache: self.block_cache_stats().into(),
            file_cache: server
                .store_context()
                .files
                .cache_stats()
                .map(FileCacheMetrics::from),
            wal: server.wal_stats().into(),
            memstore: MemstoreMetrics {
                bytes: budget.total() as u64,
                limit_bytes: limits.limit_bytes as u64,
                low_water_bytes: limits.low_water_bytes as u64,
                high_water_bytes: budget.high_water_bytes() as u64,
                held_writes: budget.held_writes(),
                slowed_writes: budget.slowed_writes(),
            },
            store_files: files,
            store_file_bytes: file_bytes,
            flush_queue_length: activity.queued_flushes,
            compaction_queue_length: activity.queued_compactions,
            flushes_running: activity.running_flushes,
            compactions_running: activity.running_compactions,
            flushes_completed: work.flushes(),
            compactions_completed: work.compactions(),
            major_compactions_completed: work.major_compactions(),
            corruption_errors: self.corruption_errors(),
            index_failed_post_writes: crate::index::failed_post_writes(),
        }
    }

    /// Per table, its numbers over the regions open here (and, for the
    /// request totals, those that left), in name order.
    pub fn table_metrics(&self) -> Vec<TableMetrics> {
        // The open set, not the locator's local routes, so that a region
        // is counted live or retired, never both: the locator may still
        // route to a region the server has just closed.
        let (online, retired) = self.region_server().regions_and_retired_load();
        let mut by_table: HashMap<&str, Vec<&Arc<basalt_engine::Region>>> = HashMap::new();
        for region in &online {
            by_table
                .entry(region.info().table.as_str())
                .or_default()
                .push(region);
        }
        self.locator()
            .tables()
            .into_iter()
            .map(|(name, location)| {
                let mut metrics = TableMetrics {
                    regions: location.routes().len(),
                    enabled: location.is_enabled(),
                    regions_here: 0,
                    requests: RequestMetrics::default(),
                    store_files: 0,
                    store_file_bytes: 0,
                    memstore_bytes: 0,
                    table: name,
                };
                if let Some(totals) = retired.tables.get(&metrics.table) {
                    metrics.requests.add_totals(totals);
                }
                for region in by_table.get(metrics.table.as_str()).into_iter().flatten() {
                    let load = region.load();
                    metrics.regions_here += 1;
                    metrics.requests.add(&load);
                    metrics.memstore_bytes += load.memstore_bytes;
                    for (_, stats) in region.store_stats() {
                        metrics.store_files += stats.files;
                        metrics.store_file_bytes += stats.file_bytes;
                    }
                }
                metrics
            })
            .collect()
    }

    /// The key heatmap of `table` (see [`KeyHeatmap`]): its regions' key
    /// load over the last minutes, on a key axis of about `query.rows`
    /// rows plus the region boundaries.
    pub fn key_heatmap(&self, table: &str, query: HeatmapQuery) -> Result<KeyHeatmap> {
        let location = self.locator().table(table)?;
        let regions: Vec<heatmap::RegionInput> = location
            .routes()
            .iter()
            .map(|route| {
                let info = route.info();
                let (here, minutes) = match route {
                    RegionRoute::Local(region) => (true, region.key_load()),
                    _ => (false, Vec::new()),
                };
                heatmap::RegionInput {
                    name: info.encoded_name(),
                    start: info.start_key.clone(),
                    end: info.end_key.clone(),
                    here,
                    minutes,
                }
            })
            .collect();
        let now = self.clock().now_millis();
        Ok(heatmap::build(table, regions, query, now))
    }
}

impl RegionSummary {
    /// Compaction progress of a region from its stores' statistics: the
    /// fraction of the running compactions' input cells read so far, `None`
    /// when no compaction runs (HBase's %COMP).
    pub fn compaction_progress(&self) -> Option<f64> {
        let (done, total) = self.stores.iter().fold((0u64, 0u64), |(d, t), (_, s)| {
            (d + s.compacted_cells, t + s.compacting_cells_total)
        });
        (total > 0).then(|| (done as f64 / total as f64).min(1.0))
    }

    /// When the region was last major-compacted, in clock millis: the oldest
    /// of its stores' last major compactions (a store never major-compacted
    /// makes it 0, "never"); stores without files do not count.
    pub fn last_major_compaction_ms(&self) -> i64 {
        self.stores
            .iter()
            .filter(|(_, s)| s.files > 0)
            .map(|(_, s)| s.last_major_compaction_ms)
            .min()
            .unwrap_or(0)
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
