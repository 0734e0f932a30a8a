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

use crate::cluster::{
    BalancerRun, ClusterMember, MasterAnswer, MasterCall, MasterControl, MemberHooks, PrepareMerge,
    PrepareSplit, SplitPlan,
};
use crate::gateways::{Gateway, Gateways};
use crate::locator::{RegionLocator, RegionRoute, TableLocation};
use crate::master::{FamilyChange, Master};
use crate::metrics::RequestLatencies;
use crate::normalizer::NormalizerRun;
use crate::options::Options;
use crate::region_server::WalPlacement;
use crate::region_server::{RecoveryReport, RegionServer};
use crate::remote::{RegionCall, RegionCaller};
use crate::replication::{PeerChange, ReplicationPeer};
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
    /// The master role, in one process; `None` for a cluster member (the
    /// active master is another process, reached through `cluster`).
    master: Option<Arc<Master>>,
    /// Cluster mode: the catalog read from the shared storage, the routes,
    /// and the way to the active master.
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
    /// HBase's split and merge switches ([`Database::split_or_merge_switch`]).
    split_switch: AtomicBool,
    merge_switch: AtomicBool,
}

/// HBase's `MasterSwitchType`: which of the two switches that gate the
/// splits and merges clients ask for ([`Database::split_or_merge_switch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitOrMerge {
    /// Splits ([`crate::AdminRequest::Split`]).
    Split,
    /// Merges ([`crate::AdminRequest::Merge`]).
    Merge,
}

impl SplitOrMerge {
    /// `split` or `merge`, as messages name it.
    pub fn name(self) -> &'static str {
        match self {
            SplitOrMerge::Split => "split",
            SplitOrMerge::Merge => "merge",
        }
    }
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
        locator.set_caller(member.caller)?;
        // A dead server's regions reopen elsewhere within the ZooKeeper
        // session timeout (seconds) plus the reopen: requests to them wait
        // that long rather than fail (docs/cluster.md, "Routing").
        locator.set_unreachable_wait(MEMBER_UNREACHABLE_WAIT);
        cluster.refresh(Some(&server), &locator)?;
        let db = Database {
            inner: Arc::new(DbInner {
                dir,
                lock: Mutex::new(Some(lock)),
                master: None,
                cluster: Some(cluster),
                server,
                locator,
                closed: AtomicBool::new(false),
                recovery: RecoveryReport::default(),
                gateways: Gateways::default(),
                clock,
                started_at_ms,
                latencies: Arc::default(),
                split_switch: AtomicBool::new(true),
                merge_switch: AtomicBool::new(true),
            }),
        };
        // A region that answers "not serving" moved: read the catalog again
        // (weakly held: the locator lives inside the database).
        let weak = Arc::downgrade(&db.inner);
        db.inner
            .locator
            .set_refresher(Arc::new(move |_table: &str| {
                if let Some(inner) = weak.upgrade() {
                    if let Some(cluster) = &inner.cluster {
                        if let Err(e) = cluster.refresh(Some(&inner.server), &inner.locator) {
                            tracing::warn!(error = %e, "could not read the catalog again");
                        }
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
        let files = self
            .files
            .unwrap_or_else(|| Arc::new(LocalFileStore::new()));
        let clock = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let started_at_ms = clock.now_millis();
        let (master, recovery) =
            Master::start(&dir, self.options, Arc::clone(&clock), files, &self.wal)?;
        let server = Arc::clone(master.region_server());
        let locator = Arc::clone(master.locator());
        Ok(Database {
            inner: Arc::new(DbInner {
                dir,
                lock: Mutex::new(Some(lock)),
                master: Some(master),
                cluster: None,
                server,
                locator,
                closed: AtomicBool::new(false),
                recovery,
                gateways: Gateways::default(),
                clock,
                started_at_ms,
                latencies: Arc::default(),
                split_switch: AtomicBool::new(true),
                merge_switch: AtomicBool::new(true),
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

    /// The master role in one process: catalog, DDL, split and merge
    /// (`None` for a cluster member, whose master is another process).
    pub fn master(&self) -> Option<&Arc<Master>> {
        self.inner.master.as_ref()
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
    /// (the process calls this when the master announces a new version).
    pub fn refresh_cluster(&self) -> Result<()> {
        if let Some(cluster) = &self.inner.cluster {
            cluster.refresh(Some(&self.inner.server), &self.inner.locator)?;
        }
        Ok(())
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

    /// Cluster mode: the encoded name of the region with this full or
    /// encoded name, from the catalog read last (the master's calls name
    /// regions as text; a full name may hold any bytes).
    fn encoded_region_name(&self, cluster: &ClusterMember, name: &[u8]) -> String {
        for (table, entry) in cluster.catalog().tables {
            for region in &entry.regions {
                let info = RegionInfo {
                    id: region.id,
                    table: table.clone(),
                    start_key: region.start_key.clone(),
                    end_key: region.end_key.clone(),
                };
                if &info.region_name()[..] == name || info.encoded_name().as_bytes() == name {
                    return info.encoded_name();
                }
            }
        }
        String::from_utf8_lossy(name).into_owned()
    }

    /// Runs the balancer (HBase's `balancer`): in a cluster the active
    /// master evens region counts, then load, across the live servers
    /// (`docs/cluster.md`, "Balancer"); in one process there is one region
    /// server and nothing to move. It does not run while the balancer
    /// switch is off, nor, in a cluster and without `force`, while regions
    /// are in transition (HBase's rules).
    pub fn balance(&self, force: bool) -> Result<BalancerRun> {
        self.check_open()?;
        if self.inner.cluster.is_some() {
            return match self.master_call(MasterCall::Balance { force })? {
                MasterAnswer::Moved { regions } => Ok(BalancerRun::Moved(regions)),
                MasterAnswer::NotRun { reason } => Ok(BalancerRun::NotRun(reason)),
                other => Err(Error::invalid(format!(
                    "the master answered {other:?} to balance"
                ))),
            };
        }
        if self.balancer_switch(None)? {
            Ok(BalancerRun::Moved(0))
        } else {
            Ok(BalancerRun::NotRun("the balancer switch is off".into()))
        }
    }

    /// Reads the balancer switch and, with `on`, sets it (HBase's
    /// `balance_switch`, `balancer_enabled`); answers the value before.
    /// Kept in the catalog, so it outlives the process and, in a cluster,
    /// the active master.
    pub fn balancer_switch(&self, on: Option<bool>) -> Result<bool> {
        self.check_open()?;
        if self.inner.cluster.is_some() {
            return match self.master_call(MasterCall::BalancerSwitch { on })? {
                MasterAnswer::Switch { previous } => Ok(previous),
                other => Err(Error::invalid(format!(
                    "the master answered {other:?} to balancer_switch"
                ))),
            };
        }
        self.local_master("balancer_switch")?.balancer_switch(on)
    }

    /// Reads HBase's split or merge switch and, with `on`, sets it (native
    /// RPC's `SetSplitOrMergeEnabled`, `IsSplitOrMergeEnabled`); answers
    /// the value before. While one is off, the splits or merges clients
    /// ask for are refused whichever gateway they come through
    /// ([`crate::admin::AdminRequest::Split`] and `Merge` check it, as
    /// native RPC's calls do); the engine's own splits and the normalizer
    /// do not consult it. Both start on and are kept in this process's
    /// memory (as native RPC kept them before every gateway shared them),
    /// so a restart turns them on again; HBase keeps them in ZooKeeper.
    pub fn split_or_merge_switch(&self, which: SplitOrMerge, on: Option<bool>) -> bool {
        let switch = match which {
            SplitOrMerge::Split => &self.inner.split_switch,
            SplitOrMerge::Merge => &self.inner.merge_switch,
        };
        match on {
            Some(on) => switch.swap(on, Ordering::SeqCst),
            None => switch.load(Ordering::SeqCst),
        }
    }

    /// Refuses a client's split or merge while its switch is off.
    pub fn check_split_or_merge(&self, which: SplitOrMerge) -> Result<()> {
        if self.split_or_merge_switch(which, None) {
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
        self.check_open()?;
        if self.inner.cluster.is_some() {
            return match self.master_call(MasterCall::NormalizerSwitch { on })? {
                MasterAnswer::Switch { previous } => Ok(previous),
                other => Err(Error::invalid(format!(
                    "the master answered {other:?} to normalizer_switch"
                ))),
            };
        }
        self.local_master("normalizer_switch")?
            .normalizer_switch(on)
    }

    /// Adds, removes, enables, disables or updates a replication peer
    /// (HBase's `add_peer`, `remove_peer`, `enable_peer`, `disable_peer`,
    /// `update_peer_config`) with HBase's checks (`crate::replication`).
    /// Kept in the catalog, so peers outlive the process and, in a
    /// cluster, the active master. **Basalt ships no edits to peers
    /// yet**: a peer is configuration only.
    pub fn change_replication_peer(&self, change: PeerChange) -> Result<()> {
        self.check_open()?;
        if self.inner.cluster.is_some() {
            return self
                .master_call(MasterCall::ReplicationPeer { change })
                .map(drop);
        }
        self.local_master("change_replication_peer")?
            .change_replication_peer(change)
    }

    /// Every replication peer by id (HBase's `list_peers`). In a cluster,
    /// as the active master has them.
    pub fn replication_peers(&self) -> Result<BTreeMap<String, ReplicationPeer>> {
        self.check_open()?;
        if self.inner.cluster.is_some() {
            return match self.master_call(MasterCall::ReplicationPeers)? {
                MasterAnswer::ReplicationPeers { peers } => Ok(peers),
                other => Err(Error::invalid(format!(
                    "the master answered {other:?} to replication_peers"
                ))),
            };
        }
        Ok(self.local_master("replication_peers")?.replication_peers())
    }

    /// Reads the replication peer modification switch and, with `on`,
    /// sets it (HBase 2.6's `replicationPeerModificationSwitch`); answers
    /// the value before. On by default; while off, every peer change is
    /// refused. Kept in the catalog.
    pub fn replication_peer_modification_switch(&self, on: Option<bool>) -> Result<bool> {
        self.check_open()?;
        if self.inner.cluster.is_some() {
            return match self.master_call(MasterCall::ReplicationPeerModificationSwitch { on })? {
                MasterAnswer::Switch { previous } => Ok(previous),
                other => Err(Error::invalid(format!(
                    "the master answered {other:?} to replication_peer_modification_switch"
                ))),
            };
        }
        self.local_master("replication_peer_modification_switch")?
            .replication_peer_modification_switch(on)
    }

    /// Runs the region normalizer once now, whatever its period (HBase's
    /// `normalize`, `docs/normalizer.md`): merges small cold neighbours
    /// and splits oversized regions that load-based split does not own.
    /// In a cluster the active master plans from the loads its servers
    /// report; in one process from the regions here. While the switch is
    /// off it does nothing and says so; answers the plans carried out.
    pub fn normalize(&self) -> Result<NormalizerRun> {
        self.check_open()?;
        if self.inner.cluster.is_some() {
            return match self.master_call(MasterCall::Normalize)? {
                MasterAnswer::Normalized(run) => Ok(run),
                other => Err(Error::invalid(format!(
                    "the master answered {other:?} to normalize"
                ))),
            };
        }
        self.local_master("normalize")?.normalize()
    }

    /// Cluster mode: a call to the active master.
    pub fn master_call(&self, call: MasterCall) -> Result<MasterAnswer> {
        self.check_open()?;
        let cluster = self.member()?;
        let answer = cluster.control().call(call)?;
        cluster.refresh(Some(&self.inner.server), &self.inner.locator)?;
        Ok(answer)
    }

    fn member(&self) -> Result<&Arc<ClusterMember>> {
        self.inner.cluster.as_ref().ok_or_else(|| {
            Error::invalid("not a cluster member: this database runs in one process")
        })
    }

    /// The master of this process, or the error for an operation a
    /// cluster member does not run yet.
    fn local_master(&self, what: &str) -> Result<&Arc<Master>> {
        self.inner.master.as_ref().ok_or_else(|| {
            Error::invalid(format!(
                "{what} is not supported in cluster mode yet (docs/cluster.md, \"Not yet\")"
            ))
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
        if self.inner.cluster.is_some() {
            let call = MasterCall::CreateTable {
                descriptor,
                splits: split_keys.to_vec(),
            };
            return self.master_call(call).map(drop);
        }
        self.local_master("create")?
            .create_table(descriptor, split_keys)
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
        Ok(Table::new(
            self.inner.locator.table(name)?,
            Arc::clone(&self.inner.latencies),
        ))
    }

    /// The table's descriptor, state and regions.
    pub fn describe_table(&self, name: &str) -> Result<TableInfo> {
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
        let catalog = self.inner.cluster.as_ref().map(|c| c.catalog());
        let holder = |id: u64| {
            catalog
                .as_ref()
                .and_then(|c| c.region(id))
                .and_then(|(_, _, entry)| entry.server.clone())
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
        self.set_enabled(name, true)
    }

    /// Stops a table from serving requests (needed before drop or truncate).
    pub fn disable_table(&self, name: &str) -> Result<()> {
        self.set_enabled(name, false)
    }

    fn set_enabled(&self, name: &str, enabled: bool) -> Result<()> {
        self.check_open()?;
        if self.inner.cluster.is_some() {
            let call = MasterCall::SetEnabled {
                table: name.to_string(),
                enabled,
            };
            return self.master_call(call).map(drop);
        }
        self.local_master("enable")?.set_enabled(name, enabled)
    }

    /// Deletes a disabled table and its data.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
        if self.inner.cluster.is_some() {
            let call = MasterCall::DropTable {
                table: name.to_string(),
            };
            return self.master_call(call).map(drop);
        }
        self.local_master("drop")?.drop_table(name)
    }

    /// Creates a namespace (HBase's `create_namespace`); tables are then
    /// created in it as `namespace:table`. `default` and `hbase` always
    /// exist.
    pub fn create_namespace(&self, descriptor: NamespaceDescriptor) -> Result<()> {
        self.check_open()?;
        if self.inner.cluster.is_some() {
            return self
                .master_call(MasterCall::CreateNamespace { descriptor })
                .map(drop);
        }
        self.local_master("create_namespace")?
            .create_namespace(descriptor)
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
        if self.inner.cluster.is_some() {
            let call = MasterCall::AlterNamespace {
                name: name.to_string(),
                set,
                unset: unset.to_vec(),
            };
            return self.master_call(call).map(drop);
        }
        self.local_master("alter_namespace")?
            .alter_namespace(name, set, unset)
    }

    /// Drops an empty namespace (HBase's `drop_namespace`).
    pub fn drop_namespace(&self, name: &str) -> Result<()> {
        self.check_open()?;
        if self.inner.cluster.is_some() {
            let call = MasterCall::DropNamespace {
                name: name.to_string(),
            };
            return self.master_call(call).map(drop);
        }
        self.local_master("drop_namespace")?.drop_namespace(name)
    }

    /// Every namespace with its properties, reserved ones included, in
    /// name order (HBase's `list_namespace`).
    pub fn list_namespaces(&self) -> Vec<NamespaceDescriptor> {
        match (&self.inner.master, &self.inner.cluster) {
            (Some(master), _) => master.namespaces(),
            (None, Some(cluster)) => cluster.catalog().namespace_list(),
            (None, None) => Vec::new(),
        }
    }

    /// One namespace (HBase's `describe_namespace`).
    pub fn describe_namespace(&self, name: &str) -> Result<NamespaceDescriptor> {
        match (&self.inner.master, &self.inner.cluster) {
            (Some(master), _) => master.namespace(name),
            (None, Some(cluster)) => cluster.catalog().namespace(name),
            (None, None) => Err(Error::NamespaceNotFound(name.to_string())),
        }
    }

    /// The tables of a namespace, full names in order (HBase's
    /// `list_namespace_tables`).
    pub fn list_namespace_tables(&self, name: &str) -> Result<Vec<String>> {
        match (&self.inner.master, &self.inner.cluster) {
            (Some(master), _) => master.namespace_tables(name),
            (None, Some(cluster)) => cluster.catalog().namespace_tables(name),
            (None, None) => Err(Error::NamespaceNotFound(name.to_string())),
        }
    }

    /// Empties a disabled table, keeping its descriptor and region
    /// boundaries; the table stays disabled. The primitive under HBase's
    /// truncate (`AdminRequest::Truncate`, which every gateway and the
    /// shell run: it also enables the table and, unless asked to keep
    /// them, merges its regions into one).
    pub fn truncate_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
        if self.inner.cluster.is_some() {
            let call = MasterCall::Truncate {
                table: name.to_string(),
            };
            return self.master_call(call).map(drop);
        }
        self.local_master("truncate")?.truncate_table(name)
    }

    /// Adds, modifies or deletes column families; works on enabled tables.
    pub fn alter_table(&self, name: &str, changes: &[FamilyChange]) -> Result<()> {
        self.check_open()?;
        if self.inner.cluster.is_some() {
            let call = MasterCall::Alter {
                table: name.to_string(),
                changes: changes.to_vec(),
            };
            return self.master_call(call).map(drop);
        }
        self.local_master("alter")?.alter_table(name, changes)
    }

    /// Flushes every memstore of the table to store files, now.
    pub fn flush_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
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
        self.on_every_region(name, RegionCall::Compact { major })?;
        match &self.inner.master {
            Some(master) => master.collect_retired_regions(),
            None => Ok(()),
        }
    }

    /// Splits regions of a table by hand (HBase's `split 'table'[, 'key']`):
    /// with a key, the region holding it splits there (the key becomes the
    /// second daughter's first row); without one, every region with at
    /// least two rows of data splits near its middle.
    pub fn split_table(&self, name: &str, split_key: Option<&[u8]>) -> Result<()> {
        self.check_open()?;
        if self.inner.cluster.is_some() {
            let call = MasterCall::SplitTable {
                table: name.to_string(),
                key: split_key.map(Bytes::copy_from_slice),
            };
            return self.master_call(call).map(drop);
        }
        self.local_master("split")?.split_table(name, split_key)
    }

    /// Splits one region, named by its full or encoded name, at
    /// `split_key` or, without one, at a row near the middle of its data.
    pub fn split_region(&self, region_name: &[u8], split_key: Option<&[u8]>) -> Result<()> {
        self.check_open()?;
        if let Some(cluster) = &self.inner.cluster {
            let call = MasterCall::Split {
                region: self.encoded_region_name(cluster, region_name),
                key: split_key.map(Bytes::copy_from_slice),
            };
            return self.master_call(call).map(drop);
        }
        self.local_master("split")?
            .split_region(region_name, split_key)
    }

    /// Merges two adjacent regions of a table, named by full or encoded
    /// names, into one (HBase's `merge_region`).
    pub fn merge_regions(&self, region_a: &[u8], region_b: &[u8]) -> Result<()> {
        self.check_open()?;
        if let Some(cluster) = &self.inner.cluster {
            let call = MasterCall::Merge {
                region_a: self.encoded_region_name(cluster, region_a),
                region_b: self.encoded_region_name(cluster, region_b),
            };
            return self.master_call(call).map(drop);
        }
        self.local_master("merge")?
            .merge_regions(region_a, region_b)
    }

    /// Compacts one region, named by its full or encoded name (HBase's
    /// `compact 'region'` / `major_compact 'region'`).
    pub fn compact_region(&self, region_name: &[u8], major: bool) -> Result<()> {
        self.check_open()?;
        if self.inner.cluster.is_none() {
            return self
                .local_master("compact of one region")?
                .compact_region(region_name, major);
        }
        // Cluster mode: the region's holder compacts it.
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
                return match route {
                    RegionRoute::Local(region) => region.compact(major).map(drop),
                    RegionRoute::Remote { info, server } => table
                        .call_remote(&info, &server, RegionCall::Compact { major })
                        .map(drop),
                    RegionRoute::Offline { info } => Err(Error::NotServingRegion(format!(
                        "region {} is being assigned; compact it once it is open",
                        info.encoded_name()
                    ))),
                };
            }
        }
        Err(Error::invalid(format!(
            "unknown region {}",
            String::from_utf8_lossy(region_name)
        )))
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
        if let Some(master) = &self.inner.master {
            master.stop();
        }
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
