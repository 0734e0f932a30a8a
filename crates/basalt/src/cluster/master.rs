//! The master, of a cluster and of one process (a cluster of one,
//! `cluster::in_process`): the only writer of the catalog, and the
//! assignment of regions to live region servers.
//!
//! Every change follows one order: compute the next catalog, commit it
//! (the commit point), then act on servers; a master that takes over (or
//! a process that starts again) reads the catalog and finishes what the
//! committed states say is unfinished ([`ClusterMaster::reconcile`]).
//!
//! Reconciliation, run after every change of the live servers, every DDL
//! and periodically, in order:
//! 1. **Crashes.** A server that regions are assigned to but that is not
//!    live is dead: commit it as a dead server (with its log id, its start
//!    code) and its regions as `OFFLINE`, each to replay that log first.
//! 2. **Fencing.** Fence every dead server's log (create its next object:
//!    `basalt_engine::wal::object::fence_log`), then commit that it is
//!    fenced. Invariant A1: a region of a dead server is reopened only
//!    after its log is fenced, so the dead server can acknowledge nothing
//!    more, and the new opening replays everything it acknowledged.
//! 3. **Transitions left half-done** by a master that died: `OPENING` on a
//!    live server is asked again (a server answers at once if it already
//!    serves that opening), `CLOSING` on a live server is closed again.
//! 4. **Assignment.** Every region of an enabled table that is `OFFLINE`,
//!    `CLOSED` or `FAILED_OPEN` goes to the live server with the fewest
//!    regions, at a new region epoch; every region of a disabled table
//!    that is still open closes.
//! 5. **Clean-up.** A dead server none of whose regions still has to
//!    replay its log has its log deleted and leaves the catalog; finished
//!    procedures are removed. Once nothing is in transition, a catalog
//!    checkpoint the policy wants is written (while regions are in
//!    transition the master writes deltas, up to four times the policy's
//!    limits: see `catalog::CheckpointPolicy::in_transition`).
//!
//! Invariant A2: a region is opened somewhere new only when the server
//! that held it closed it (flushed, so nothing of it is only in that
//! server's log) or is dead with its log fenced and listed in the
//! region's `recover_from`. An open whose answer is lost is therefore
//! followed by a close on the same server before the region goes
//! anywhere else; if that server cannot be reached, the region waits
//! (`OPENING` there) until the server answers or dies.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use basalt_engine::fence::Fence;
use basalt_engine::fs::FileStore;
use basalt_engine::snapshot::RetainingFileStore;
use basalt_engine::wal::object as object_wal;
use basalt_engine::wal::ObjectWal;
use basalt_engine::{layout, Clock};
use basalt_types::{Error, Result, TableDescriptor};

use super::control::{
    ClusterStatus, MasterAnswer, MasterCall, MasterControl, RegionServerControl, RegionTransition,
    ServerName, ServerStatus,
};
use crate::access::{Actions, Grant, PermissionChange, Scope};
use crate::catalog::{fence_catalog, Catalog, DeadServer, Procedure, RegionEntry, RegionState};
use crate::normalizer::{
    plan_table, NormalizationPlan, NormalizerConfig, NormalizerRun, RegionFacts,
};

/// Called after each committed catalog version (the process announces it
/// so members reload the catalog).
pub type CommitListener = Arc<dyn Fn(u64) + Send + Sync>;

/// The active master of a cluster.
pub struct ClusterMaster {
    pub(super) root: PathBuf,
    name: String,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) files: Arc<dyn FileStore>,
    /// The master's epoch on the shared storage: catalog versions record
    /// it, and a newer master's catalog trips it.
    pub(super) fence: Arc<Fence>,
    pub(super) servers: Arc<dyn RegionServerControl>,
    /// The committed catalog and the live servers; the lock serializes
    /// every change.
    pub(super) state: Mutex<State>,
    on_commit: RwLock<Option<CommitListener>>,
    stopped: AtomicBool,
    /// The standby masters, for status ([`ClusterMaster::set_backup_masters`]).
    backup_masters: RwLock<Vec<String>>,
    /// When the periodic chores are next due ([`ClusterMaster::run_chores`]).
    chores: Mutex<ChoreSchedule>,
    /// The normalizer's planning limits ([`ClusterMaster::set_normalizer_config`]).
    normalizer: RwLock<NormalizerConfig>,
    /// The same store as `files`, through which every store file the
    /// master deletes passes the snapshot references' check.
    retaining: Arc<RetainingFileStore>,
    /// The last snapshot, pending snapshot or hold number handed out.
    pub(super) last_snapshot_id: Mutex<u64>,
    /// The pending markers of the snapshots a thread of this master is
    /// taking now; another caller for the same one waits on
    /// `snapshot_driven` for its outcome.
    pub(super) snapshots_driven: Mutex<HashSet<PathBuf>>,
    pub(super) snapshot_driven: parking_lot::Condvar,
    /// How long a snapshot may take, retries included
    /// ([`ClusterMaster::set_snapshot_timeout`]).
    snapshot_timeout: RwLock<std::time::Duration>,
    /// When a catalog version is a checkpoint rather than a delta
    /// ([`ClusterMaster::set_catalog_checkpoint_policy`]).
    checkpoint_policy: RwLock<crate::catalog::CheckpointPolicy>,
    /// Bytes of every catalog version this master committed.
    catalog_bytes_written: std::sync::atomic::AtomicU64,
}

/// How long a snapshot may take by default (HBase's
/// `hbase.snapshot.master.timeout.millis`, 300,000).
pub const DEFAULT_SNAPSHOT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// How often the active master's chores run; zero turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChorePeriods {
    /// The balancer (HBase's `hbase.balancer.period`, 5 minutes), when
    /// the balancer switch is on.
    pub balancer: std::time::Duration,
    /// The sweep of region directories no catalog region names (HBase's
    /// catalog janitor and cleaner chores, `hbase.catalogjanitor.interval`,
    /// 5 minutes).
    pub janitor: std::time::Duration,
    /// The region normalizer (HBase's `hbase.normalizer.period`, 5
    /// minutes), when the normalizer switch is on.
    pub normalizer: std::time::Duration,
}

impl ChorePeriods {
    /// The periods `options` set (`balancer_period_ms`,
    /// `janitor_period_ms`, `normalizer_period_ms`).
    pub fn from_options(options: &crate::Options) -> ChorePeriods {
        let ms = std::time::Duration::from_millis;
        ChorePeriods {
            balancer: ms(options.balancer_period_ms),
            janitor: ms(options.janitor_period_ms),
            normalizer: ms(options.normalizer_period_ms),
        }
    }
}

impl Default for ChorePeriods {
    fn default() -> Self {
        ChorePeriods {
            balancer: std::time::Duration::from_secs(300),
            janitor: std::time::Duration::from_secs(300),
            normalizer: std::time::Duration::from_secs(300),
        }
    }
}

/// The chores' periods and when each is next due (ms on the master's
/// clock; `None`: off).
#[derive(Debug)]
struct ChoreSchedule {
    periods: ChorePeriods,
    next_balance_ms: Option<i64>,
    next_sweep_ms: Option<i64>,
    next_normalize_ms: Option<i64>,
}

impl ChoreSchedule {
    /// The first run of each chore comes one period after `now`: a master
    /// that just took over reconciles and lets regions settle before it
    /// moves any (as HBase's first balancer run waits a period).
    fn new(periods: ChorePeriods, now_ms: i64) -> ChoreSchedule {
        let due = |period: std::time::Duration| {
            (!period.is_zero()).then(|| now_ms.saturating_add(duration_ms(period)))
        };
        ChoreSchedule {
            periods,
            next_balance_ms: due(periods.balancer),
            next_sweep_ms: due(periods.janitor),
            next_normalize_ms: due(periods.normalizer),
        }
    }
}

fn duration_ms(period: std::time::Duration) -> i64 {
    i64::try_from(period.as_millis()).unwrap_or(i64::MAX)
}

/// What one [`ClusterMaster::run_chores`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChoresRun {
    /// The balancer ran and moved this many regions (`None`: it was not
    /// due, the switch is off, or regions were in transition).
    pub balanced: Option<usize>,
    /// The janitor swept and removed this many region directories
    /// (`None`: it was not due).
    pub swept: Option<usize>,
    /// The normalizer ran and carried out this many plans (`None`: it
    /// was not due, its switch is off, or it could not run).
    pub normalized: Option<usize>,
}

impl std::fmt::Debug for ClusterMaster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterMaster")
            .field("root", &self.root)
            .field("name", &self.name)
            .field("epoch", &self.fence.epoch())
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) catalog: Catalog,
    /// Live region servers (HBase server names), as the process last said.
    pub(super) live: BTreeSet<String>,
    /// False until the process has said which servers are live: nothing is
    /// declared dead before that.
    live_known: bool,
}

impl ClusterMaster {
    /// Becomes the active master of the data set at `root` on `files`:
    /// claims an epoch (a log claim on the shared storage, as every owner
    /// does), loads the catalog and stores it again at that epoch, which
    /// fences any older master (its next catalog version collides).
    /// Nothing is assigned until [`ClusterMaster::servers_changed`].
    pub fn start(
        root: &Path,
        name: &str,
        clock: Arc<dyn Clock>,
        files: Arc<dyn FileStore>,
        servers: Arc<dyn RegionServerControl>,
    ) -> Result<Arc<ClusterMaster>> {
        let claim = ObjectWal::claim(Arc::clone(&files), root)?;
        let fence = Arc::clone(claim.fence());
        Self::start_fenced(root, name, clock, files, servers, fence)
    }

    /// [`ClusterMaster::start`] once the epoch is known; also the master of
    /// one process (`cluster::in_process`), whose `fence` is the region
    /// server's claim on object storage, or an epoch-0 fence on a local
    /// disk, whose directory lock already keeps every other process out.
    pub(crate) fn start_fenced(
        root: &Path,
        name: &str,
        clock: Arc<dyn Clock>,
        files: Arc<dyn FileStore>,
        servers: Arc<dyn RegionServerControl>,
        fence: Arc<Fence>,
    ) -> Result<Arc<ClusterMaster>> {
        let clock_now = clock.now_millis();
        let retaining = Arc::new(RetainingFileStore::new(
            files,
            root,
            basalt_engine::snapshot::DEFAULT_MAX_MANIFEST_BYTES,
        ));
        let files: Arc<dyn FileStore> = Arc::clone(&retaining) as Arc<dyn FileStore>;
        let mut catalog = Catalog::load(files.as_ref(), root)?;
        fence_catalog(&mut catalog, files.as_ref(), root, &fence)?;
        tracing::info!(
            master = name,
            epoch = fence.epoch(),
            catalog_version = catalog.version,
            "active master: catalog loaded"
        );
        let master = Arc::new(ClusterMaster {
            root: root.to_path_buf(),
            name: name.to_string(),
            clock,
            files,
            fence,
            servers,
            state: Mutex::new(State {
                catalog,
                live: BTreeSet::new(),
                live_known: false,
            }),
            on_commit: RwLock::new(None),
            stopped: AtomicBool::new(false),
            backup_masters: RwLock::new(Vec::new()),
            chores: Mutex::new(ChoreSchedule::new(ChorePeriods::default(), clock_now)),
            normalizer: RwLock::new(NormalizerConfig::default()),
            retaining,
            last_snapshot_id: Mutex::new(0),
            snapshots_driven: Mutex::new(HashSet::new()),
            snapshot_driven: parking_lot::Condvar::new(),
            snapshot_timeout: RwLock::new(DEFAULT_SNAPSHOT_TIMEOUT),
            checkpoint_policy: RwLock::new(crate::catalog::CheckpointPolicy::default()),
            catalog_bytes_written: std::sync::atomic::AtomicU64::new(0),
        });
        if let Err(e) = master.take_over_snapshots() {
            tracing::warn!(error = %e, "could not take over the snapshots left half taken");
        }
        Ok(master)
    }

    /// Sets the largest snapshot manifest the master reads
    /// (`Options::snapshot_manifest_max_bytes`).
    pub fn set_snapshot_manifest_max_bytes(&self, bytes: u64) {
        self.retaining.references().set_max_manifest_bytes(bytes);
    }

    /// Sets how long a snapshot may take, retries included
    /// (`snapshot_timeout_ms`).
    pub fn set_snapshot_timeout(&self, timeout: std::time::Duration) {
        *self.snapshot_timeout.write() = timeout;
    }

    pub(super) fn snapshot_timeout(&self) -> std::time::Duration {
        *self.snapshot_timeout.read()
    }

    pub(super) fn snapshot_manifest_max_bytes(&self) -> u64 {
        self.retaining.references().max_manifest_bytes()
    }

    /// Installs what runs after each commit (once; a later call replaces it).
    pub fn set_commit_listener(&self, listener: CommitListener) {
        *self.on_commit.write() = Some(listener);
    }

    /// Sets when a catalog version is written whole (a checkpoint) instead
    /// of as a delta (`docs/catalog-format.md`).
    pub fn set_catalog_checkpoint_policy(&self, policy: crate::catalog::CheckpointPolicy) {
        *self.checkpoint_policy.write() = policy;
    }

    /// Bytes of every catalog version this master committed since it
    /// became active (checkpoints and deltas), for measurements.
    pub fn catalog_bytes_written(&self) -> u64 {
        self.catalog_bytes_written.load(Ordering::Relaxed)
    }

    /// This master's epoch.
    pub fn epoch(&self) -> u64 {
        self.fence.epoch()
    }

    /// The version of the committed catalog.
    pub fn catalog_version(&self) -> u64 {
        self.state.lock().catalog.version
    }

    /// True once a newer master has fenced this one: it must stop.
    pub fn is_fenced(&self) -> bool {
        self.fence.is_tripped()
    }

    /// Refuses every further change (the process is stopping or lost its
    /// ZooKeeper session).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// One process (`cluster::in_process`): the regions its region server
    /// opened at start, `opened`, are open on this master's one server.
    /// Commits them `OPEN` there, each at its region epoch (a new one for a
    /// region without: a data set an earlier version wrote) with nothing
    /// to replay, and answers `(region, epoch)` for the server to hold them
    /// at.
    pub(crate) fn adopt_regions(&self, opened: &[u64]) -> Result<Vec<(u64, u64)>> {
        let opened: std::collections::HashSet<u64> = opened.iter().copied().collect();
        let mut state = self.state.lock();
        self.check_running()?;
        let floor = self.fence.epoch();
        let mut updated = state.catalog.clone();
        let mut last_epoch = updated.last_region_epoch;
        let mut adopted = Vec::new();
        let mut changed = false;
        for table in updated.tables.values_mut() {
            for region in table.regions.iter_mut() {
                if !opened.contains(&region.id) {
                    continue;
                }
                if region.epoch == 0 {
                    region.epoch = crate::catalog::next_epoch(&mut last_epoch, floor);
                    changed = true;
                }
                if region.state != RegionState::Open
                    || region.server.as_deref() != Some(self.name.as_str())
                    || !region.recover_from.is_empty()
                {
                    region.state = RegionState::Open;
                    region.server = Some(self.name.clone());
                    region.recover_from.clear();
                    changed = true;
                }
                adopted.push((region.id, region.epoch));
            }
        }
        updated.last_region_epoch = last_epoch;
        if changed {
            self.commit(&mut state, updated)?;
        }
        Ok(adopted)
    }

    /// The catalog janitor, unless the master is busy: after a background
    /// compaction in one process, where the change holding the lock runs
    /// the janitor itself as it reconciles.
    pub(crate) fn janitor_if_idle(&self) {
        let Some(mut state) = self.state.try_lock() else {
            return;
        };
        if self.check_running().is_err() {
            return;
        }
        if let Err(e) = self.collect_retired_regions(&mut state) {
            tracing::warn!(error = %e, "catalog janitor failed; retried later");
        }
    }

    /// The live region servers changed: records them and reconciles.
    pub fn servers_changed(&self, live: BTreeSet<String>) -> Result<()> {
        let mut state = self.state.lock();
        if state.live != live || !state.live_known {
            tracing::info!(servers = ?live, "live region servers");
        }
        state.live = live;
        state.live_known = true;
        self.reconcile(&mut state)
    }

    /// Sets how often the chores run ([`ClusterMaster::run_chores`]);
    /// each is next due one period from now.
    pub fn set_chore_periods(&self, periods: ChorePeriods) {
        *self.chores.lock() = ChoreSchedule::new(periods, self.clock.now_millis());
    }

    /// Runs the chores that are due on the master's clock (the process
    /// calls it every reconciliation round; tests drive it with a manual
    /// clock):
    /// 1. **Balancer**, when its switch is on and no region is in
    ///    transition ([`ClusterMaster::balance`] without force).
    /// 2. **Janitor**: deletes the region directories that no region,
    ///    retired region or procedure of the catalog names
    ///    ([`ClusterMaster::sweep_orphans`]).
    /// 3. **Normalizer**, when its switch is on and no region is in
    ///    transition ([`ClusterMaster::normalize`]).
    ///
    /// A chore that fails is logged and due again a period later: both are
    /// idempotent, and retrying every round would hammer a store that is
    /// down.
    pub fn run_chores(&self) -> ChoresRun {
        let now = self.clock.now_millis();
        let (balance_due, sweep_due, normalize_due) = {
            let mut chores = self.chores.lock();
            let periods = chores.periods;
            let take = |next: &mut Option<i64>, period: std::time::Duration| match *next {
                Some(at) if at <= now => {
                    *next = Some(now.saturating_add(duration_ms(period)));
                    true
                }
                _ => false,
            };
            (
                take(&mut chores.next_balance_ms, periods.balancer),
                take(&mut chores.next_sweep_ms, periods.janitor),
                take(&mut chores.next_normalize_ms, periods.normalizer),
            )
        };
        let mut run = ChoresRun::default();
        if balance_due {
            match self.balance(false) {
                Ok(MasterAnswer::Moved { regions }) => {
                    if regions > 0 {
                        tracing::info!(regions, "periodic balancer moved regions");
                    }
                    run.balanced = Some(regions);
                }
                Ok(MasterAnswer::NotRun { reason }) => {
                    tracing::debug!(reason, "periodic balancer skipped");
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "periodic balancer failed; due again next period")
                }
            }
        }
        if sweep_due {
            {
                let state = self.state.lock();
                self.expire_snapshots(&state);
                // Leased holds (exports') lapse on time, not on a compaction.
                self.release_holds(&state);
            }
            match self.sweep_orphans() {
                Ok(n) => run.swept = Some(n),
                Err(e) => tracing::warn!(error = %e, "janitor sweep failed; due again next period"),
            }
        }
        if normalize_due {
            match self.normalize() {
                Ok(normalized) if normalized.ran => run.normalized = Some(normalized.plans.len()),
                Ok(normalized) => {
                    tracing::debug!(reason = ?normalized.reason, "periodic normalizer skipped");
                }
                Err(e) => {
                    tracing::warn!(error = %e, "periodic normalizer failed; due again next period")
                }
            }
        }
        run
    }

    /// Deletes every region directory on the storage that the committed
    /// catalog does not name (a serving or retired region, or the new
    /// regions of a procedure); returns how many went.
    ///
    /// Such directories are left by a master that died between a commit
    /// and its deletions (drop, truncate), by a split or merge rolled back
    /// while its hosting server was still seeding the new directories, or
    /// by a deletion that failed. Safe under the master's lock: every
    /// region id is committed to the catalog (as a region or in a
    /// procedure) before any server creates its directory, so a
    /// directory the committed catalog does not name can never be named
    /// by it later.
    pub fn sweep_orphans(&self) -> Result<usize> {
        let state = self.state.lock();
        self.check_running()?;
        let mut live = std::collections::HashSet::new();
        for (name, table) in &state.catalog.tables {
            for region in table.regions.iter().chain(&table.retired) {
                live.insert(layout::region_dir(&self.root, name, region.id));
            }
        }
        for procedure in state.catalog.procedures.values() {
            match procedure {
                Procedure::SplitRegion {
                    table, daughters, ..
                } => {
                    for id in daughters {
                        live.insert(layout::region_dir(&self.root, table, *id));
                    }
                }
                Procedure::MergeRegions { table, merged, .. } => {
                    live.insert(layout::region_dir(&self.root, table, *merged));
                }
                _ => {}
            }
        }
        let removed =
            crate::region_server::remove_orphaned_regions(self.files.as_ref(), &self.root, &live)?;
        if removed > 0 {
            tracing::info!(
                removed,
                "janitor: removed region directories no catalog region names"
            );
        }
        Ok(removed)
    }

    /// Sets the normalizer's planning limits (the process hands in
    /// `Options::normalizer_config`; HBase's defaults until then).
    pub fn set_normalizer_config(&self, config: NormalizerConfig) {
        *self.normalizer.write() = config;
    }

    /// Reads the normalizer switch and, with `on`, commits its new value;
    /// answers the value before.
    fn normalizer_switch(&self, on: Option<bool>) -> Result<bool> {
        let mut state = self.state.lock();
        self.check_running()?;
        let previous = state.catalog.normalizer_on;
        if let Some(on) = on {
            if on != previous {
                let mut updated = state.catalog.clone();
                updated.normalizer_on = on;
                self.commit(&mut state, updated)?;
                tracing::info!(on, "normalizer switch");
            }
        }
        Ok(previous)
    }

    /// Reads the split or merge switch and, with `on`, commits its new
    /// value; answers the value before.
    fn split_or_merge_switch(&self, which: crate::SplitOrMerge, on: Option<bool>) -> Result<bool> {
        let mut state = self.state.lock();
        self.check_running()?;
        let off = |c: &crate::catalog::Catalog| match which {
            crate::SplitOrMerge::Split => c.split_off,
            crate::SplitOrMerge::Merge => c.merge_off,
        };
        let previous = !off(&state.catalog);
        if let Some(on) = on {
            if on != previous {
                let mut updated = state.catalog.clone();
                match which {
                    crate::SplitOrMerge::Split => updated.split_off = !on,
                    crate::SplitOrMerge::Merge => updated.merge_off = !on,
                }
                self.commit(&mut state, updated)?;
                tracing::info!(switch = which.name(), on, "split or merge switch");
            }
        }
        Ok(previous)
    }

    /// One normalizer pass (`crate::normalizer`), under the master's lock:
    /// plans each enabled table from the loads the servers report (size:
    /// store files and memstores; requests per second) and carries the
    /// plans out through the master's split (no key: the region's
    /// midpoint) and merge (which first moves the right region to the
    /// left one's server).
    ///
    /// It does not run while its switch is off, while a region is in
    /// transition, or when a live server cannot report its load (the
    /// balancer's rule: sizes and rates from part of the cluster would
    /// plan on a partial picture). A table with a region no server
    /// reports (opening meanwhile) is skipped.
    pub fn normalize(&self) -> Result<NormalizerRun> {
        let mut state = self.state.lock();
        self.check_running()?;
        self.reconcile(&mut state)?;
        if !state.catalog.normalizer_on {
            return Ok(NormalizerRun::not_run("the normalizer switch is off"));
        }
        let moving = self.regions_to_act_on(&state).len();
        if moving > 0 {
            return Ok(NormalizerRun::not_run(format!(
                "{moving} region(s) in transition"
            )));
        }
        let reports = match self.region_reports(&state) {
            Ok(reports) => reports,
            Err(why) => {
                tracing::warn!(why, "the normalizer does not run");
                return Ok(NormalizerRun::not_run(why));
            }
        };
        let config = *self.normalizer.read();
        let now = self.clock.now_millis();
        let mut tables = Vec::new();
        for (name, table) in &state.catalog.tables {
            if !table.enabled {
                continue;
            }
            let facts: Option<Vec<RegionFacts>> = table
                .regions
                .iter()
                .map(|region| {
                    reports.get(&region.id).map(|report| RegionFacts {
                        id: region.id,
                        start_key: region.start_key.clone(),
                        end_key: region.end_key.clone(),
                        size_bytes: report
                            .store_file_bytes
                            .saturating_add(report.memstore_bytes),
                        requests_per_sec: report.requests_per_sec,
                    })
                })
                .collect();
            match facts {
                Some(facts) => tables.push((name.clone(), facts)),
                None => {
                    tracing::debug!(table = %name, "normalizer: a region has no load report; table skipped")
                }
            }
        }
        let mut run = NormalizerRun {
            ran: true,
            ..NormalizerRun::default()
        };
        for (table, facts) in tables {
            for plan in plan_table(&table, &facts, now, &config) {
                let done = match &plan {
                    NormalizationPlan::Split { region, .. } => self
                        .split_locked(&mut state, &table, *region, None)
                        .and_then(|split| {
                            if split {
                                Ok(())
                            } else {
                                Err(Error::invalid("the region has no row to split at"))
                            }
                        }),
                    NormalizationPlan::Merge { left, right, .. } => {
                        self.merge_adjacent_locked(&mut state, &table, *left, *right)
                    }
                };
                match done {
                    Ok(()) => {
                        tracing::info!(table, reason = %plan.reason(), "normalizer");
                        run.plans.push(plan);
                    }
                    Err(e) => {
                        tracing::warn!(table, reason = %plan.reason(), error = %e, "normalizer: plan failed; planned again next run");
                        run.failed += 1;
                    }
                }
            }
        }
        Ok(run)
    }

    /// Reads the balancer switch and, with `on`, commits its new value;
    /// answers the value before.
    fn balancer_switch(&self, on: Option<bool>) -> Result<bool> {
        let mut state = self.state.lock();
        self.check_running()?;
        let previous = !state.catalog.balancer_off;
        if let Some(on) = on {
            if on != previous {
                let mut updated = state.catalog.clone();
                updated.balancer_off = !on;
                self.commit(&mut state, updated)?;
                tracing::info!(on, "balancer switch");
            }
        }
        Ok(previous)
    }

    /// Reads the replication peer modification switch and, with `on`,
    /// commits its new value; answers the value before.
    fn replication_peer_modification_switch(&self, on: Option<bool>) -> Result<bool> {
        let mut state = self.state.lock();
        self.check_running()?;
        let previous = !state.catalog.replication_peer_modification_off;
        if let Some(on) = on {
            if on != previous {
                let mut updated = state.catalog.clone();
                updated.replication_peer_modification_off = !on;
                self.commit(&mut state, updated)?;
                tracing::info!(on, "replication peer modification switch");
            }
        }
        Ok(previous)
    }

    /// Runs the reconciliation of the module docs once (also called
    /// periodically: a failed step is retried).
    pub fn tick(&self) -> Result<()> {
        let mut state = self.state.lock();
        self.reconcile(&mut state)
    }

    pub(super) fn check_running(&self) -> Result<()> {
        self.fence.check()?;
        if self.stopped.load(Ordering::SeqCst) {
            return Err(Error::Closed(format!("master {}", self.name)));
        }
        Ok(())
    }

    /// Commits `updated` as the next catalog version (fenced by the master
    /// epoch) and announces it.
    pub(super) fn commit(&self, state: &mut State, mut updated: Catalog) -> Result<()> {
        self.check_running()?;
        // In transition before or after this change (the change that ends
        // a recovery included): the checkpoint waits for the settled
        // catalog, which `checkpoint_if_settled` then restates whole.
        let mut policy = *self.checkpoint_policy.read();
        let in_transition = |c: &Catalog| !c.dead_servers.is_empty() || !c.procedures.is_empty();
        if in_transition(&updated) || in_transition(&state.catalog) {
            policy = policy.in_transition();
        }
        updated.store_fenced(
            &state.catalog,
            &policy,
            self.files.as_ref(),
            &self.root,
            Some(&self.fence),
        )?;
        let (bytes, _) = updated.last_stored();
        self.catalog_bytes_written
            .fetch_add(bytes, Ordering::Relaxed);
        let version = updated.version;
        state.catalog = updated;
        let listener = self.on_commit.read().clone();
        if let Some(listener) = listener {
            listener(version);
        }
        Ok(())
    }

    /// Changes one region of the catalog and commits.
    pub(super) fn update_region(
        &self,
        state: &mut State,
        table: &str,
        region: u64,
        change: impl FnOnce(&mut RegionEntry, &mut u64),
    ) -> Result<()> {
        let mut updated = state.catalog.clone();
        // The catalog's last region epoch, for `change` to hand out new ones
        // (`catalog::next_epoch`) while it holds the region entry.
        let mut last_epoch = updated.last_region_epoch;
        let entry = updated
            .tables
            .get_mut(table)
            .and_then(|t| t.regions.iter_mut().find(|r| r.id == region))
            .ok_or_else(|| Error::invalid(format!("no region {region} in table {table}")))?;
        change(entry, &mut last_epoch);
        updated.last_region_epoch = last_epoch;
        self.commit(state, updated)
    }

    pub(super) fn reconcile(&self, state: &mut State) -> Result<()> {
        self.check_running()?;
        if !state.live_known {
            return Ok(());
        }
        self.declare_dead(state)?;
        self.fence_dead_logs(state)?;
        let mut first_error = None;
        if let Err(e) = self.resume_handovers(state) {
            tracing::warn!(error = %e, "could not roll back a split or merge; retried later");
            first_error.get_or_insert(e);
        }
        if let Err(e) = self.resume_alters(state) {
            tracing::warn!(error = %e, "could not finish an alter; retried later");
            first_error.get_or_insert(e);
        }
        // Openings go in batches (one version for every `OPENING`, one
        // for the outcomes): recovering a dead server's thousands of
        // regions is then a handful of versions, not two per region.
        let mut batch = Vec::new();
        let mut one_by_one = Vec::new();
        for (name, table) in &state.catalog.tables {
            for region in &table.regions {
                if !needs_action(table.enabled, region, &state.live) {
                    continue;
                }
                if opens_in_batch(table.enabled, region) {
                    batch.push((name.clone(), region.id));
                } else {
                    one_by_one.push((name.clone(), region.id));
                }
            }
        }
        for (table, region) in one_by_one {
            if let Err(e) = self.act_on_region(state, &table, region) {
                tracing::warn!(table = %table, region, error = %e, "region transition failed; retried later");
                first_error.get_or_insert(e);
            }
        }
        if let Err(e) = self.open_batch(state, &batch) {
            tracing::warn!(error = %e, "region openings failed; retried later");
            first_error.get_or_insert(e);
        }
        self.clean_up(state)?;
        if let Err(e) = self.collect_retired_regions(state) {
            tracing::warn!(error = %e, "catalog janitor failed; retried later");
            first_error.get_or_insert(e);
        }
        if let Err(e) = self.checkpoint_if_settled(state) {
            tracing::warn!(error = %e, "could not write a catalog checkpoint; retried later");
            first_error.get_or_insert(e);
        }
        match first_error {
            Some(e) if self.fence.is_tripped() => Err(e),
            _ => Ok(()),
        }
    }

    /// Step 5, last: once nothing is in transition, a checkpoint the
    /// policy wants is written (the same catalog, whole), so recoveries and
    /// procedures write only deltas and the checkpoint comes after them.
    fn checkpoint_if_settled(&self, state: &mut State) -> Result<()> {
        let policy = *self.checkpoint_policy.read();
        let catalog = &state.catalog;
        if !catalog.dead_servers.is_empty()
            || !catalog.procedures.is_empty()
            || !catalog.checkpoint_due(&policy)
        {
            return Ok(());
        }
        let same = state.catalog.clone();
        self.commit(state, same)
    }

    /// Step 1: servers holding regions that are not live are dead.
    fn declare_dead(&self, state: &mut State) -> Result<()> {
        let mut dead: BTreeSet<String> = BTreeSet::new();
        for table in state.catalog.tables.values() {
            for region in &table.regions {
                if let Some(server) = &region.server {
                    if !state.live.contains(server) {
                        dead.insert(server.clone());
                    }
                }
            }
        }
        if dead.is_empty() {
            return Ok(());
        }
        let now = self.clock.now_millis();
        let mut updated = state.catalog.clone();
        for server in &dead {
            let log_id = ServerName::parse(server)?.start_code;
            tracing::warn!(server = %server, log = log_id, "region server is dead: fencing its log, then reopening its regions elsewhere");
            if !updated.dead_servers.contains_key(server) {
                updated.dead_servers.insert(
                    server.clone(),
                    DeadServer {
                        log_id,
                        since_ms: now,
                        log_fenced: false,
                    },
                );
                let id = updated.next_procedure_id();
                updated.procedures.insert(
                    id,
                    Procedure::ServerCrash {
                        server: server.clone(),
                    },
                );
            }
            for table in updated.tables.values_mut() {
                for region in table.regions.iter_mut() {
                    if region.server.as_deref() == Some(server.as_str()) {
                        // Closed cleanly there or not, its edits may be in
                        // that log: replay it.
                        region.server = None;
                        region.state = RegionState::Offline;
                        if !region.recover_from.contains(&log_id) {
                            region.recover_from.push(log_id);
                        }
                    }
                }
            }
        }
        self.commit(state, updated)
    }

    /// Step 2: fence every dead server's log (invariant A1).
    fn fence_dead_logs(&self, state: &mut State) -> Result<()> {
        let unfenced: Vec<(String, u64)> = state
            .catalog
            .dead_servers
            .iter()
            .filter(|(_, d)| !d.log_fenced)
            .map(|(s, d)| (s.clone(), d.log_id))
            .collect();
        if unfenced.is_empty() {
            return Ok(());
        }
        for (server, log_id) in &unfenced {
            object_wal::fence_log(self.files.as_ref(), &self.root, *log_id, self.fence.epoch())?;
            tracing::info!(server = %server, log = log_id, "fenced the log of a dead region server");
        }
        let mut updated = state.catalog.clone();
        for (server, _) in &unfenced {
            if let Some(dead) = updated.dead_servers.get_mut(server) {
                dead.log_fenced = true;
            }
        }
        self.commit(state, updated)
    }

    /// The regions steps 3 and 4 act on, in table and key order.
    fn regions_to_act_on(&self, state: &State) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for (name, table) in &state.catalog.tables {
            for region in &table.regions {
                if needs_action(table.enabled, region, &state.live) {
                    out.push((name.clone(), region.id));
                }
            }
        }
        out
    }

    /// Steps 3 and 4 for one region.
    fn act_on_region(&self, state: &mut State, table: &str, region: u64) -> Result<()> {
        let Some(entry) = state.catalog.tables.get(table) else {
            return Ok(());
        };
        let enabled = entry.enabled;
        let Some(current) = entry.regions.iter().find(|r| r.id == region).cloned() else {
            return Ok(());
        };
        if !needs_action(enabled, &current, &state.live) {
            return Ok(());
        }
        match (current.state, current.server.clone()) {
            (RegionState::Opening, Some(server)) if enabled => {
                self.finish_open(state, table, region, &server)
            }
            (RegionState::Closing, Some(server))
            | (RegionState::Open | RegionState::Opening, Some(server)) => {
                // Closing, or open on a table being disabled.
                self.close_on(state, table, region, &server)
            }
            _ if enabled => {
                let Some(target) = self.target_for(state, table, region) else {
                    return Err(Error::NotServingRegion(
                        "no live region server to assign regions to".into(),
                    ));
                };
                self.assign_to(state, table, region, &target)
            }
            _ => Ok(()),
        }
    }

    /// Steps 3 and 4 for many regions at once, in the order of every single
    /// opening ([`ClusterMaster::assign_to`], [`ClusterMaster::finish_open`]):
    /// 1. one version commits every region not yet assigned `OPENING` on
    ///    its target (a move's target if live, else the live server given
    ///    the fewest regions of this batch so far, then the one with the
    ///    fewest regions), each at a new region epoch;
    /// 2. every server is asked to open its regions, servers in parallel
    ///    (at most [`OPEN_THREADS`] at a time), each server's in order;
    /// 3. an opening that failed is closed again on its server (invariant
    ///    A2: the answer may have been lost) and becomes `FAILED_OPEN`, or
    ///    stays `OPENING` there when that server cannot be reached;
    /// 4. one version commits the outcomes (`OPEN`, with nothing left to
    ///    replay, or `FAILED_OPEN`).
    ///
    /// A master that dies between the steps leaves regions `OPENING`,
    /// which its successor's reconciliation asks again.
    pub(super) fn open_batch(&self, state: &mut State, regions: &[(String, u64)]) -> Result<()> {
        if regions.is_empty() {
            return Ok(());
        }
        let floor = self.fence.epoch();
        let mut updated = state.catalog.clone();
        let mut counts = region_counts(&updated, &state.live);
        let mut batch_counts: BTreeMap<String, usize> = BTreeMap::new();
        let mut last_epoch = updated.last_region_epoch;
        let mut opens: Vec<(String, u64, String)> = Vec::with_capacity(regions.len());
        let mut assigned = false;
        let mut first_error = None;
        for (table, ids) in group_by_table(regions) {
            let move_targets: BTreeMap<u64, String> = state
                .catalog
                .procedures
                .values()
                .filter_map(|p| match p {
                    Procedure::MoveRegion {
                        table: t,
                        region,
                        target: Some(target),
                    } if *t == table && state.live.contains(target) => {
                        Some((*region, target.clone()))
                    }
                    _ => None,
                })
                .collect();
            let Some(entry) = updated.tables.get_mut(&table) else {
                continue;
            };
            let index: std::collections::HashMap<u64, usize> = entry
                .regions
                .iter()
                .enumerate()
                .map(|(i, r)| (r.id, i))
                .collect();
            for id in ids {
                let Some(&i) = index.get(&id) else {
                    continue;
                };
                let region = &mut entry.regions[i];
                if let (RegionState::Opening, Some(server)) = (region.state, &region.server) {
                    opens.push((table.clone(), id, server.clone()));
                    continue;
                }
                // The server given the fewest of this batch, then the one
                // with the fewest regions: a dead server's regions spread
                // over every live server, so each opens a share of them
                // (all on the emptiest server would make the recovery as
                // slow as that one server). Evening the counts out is the
                // balancer's job.
                let target = move_targets.get(&id).cloned().or_else(|| {
                    counts
                        .iter()
                        .min_by_key(|(s, n)| (batch_counts.get(*s).copied().unwrap_or(0), **n))
                        .map(|(s, _)| s.clone())
                });
                let Some(target) = target else {
                    first_error.get_or_insert(Error::NotServingRegion(
                        "no live region server to assign regions to".into(),
                    ));
                    continue;
                };
                if let Some(n) = counts.get_mut(&target) {
                    *n += 1;
                }
                *batch_counts.entry(target.clone()).or_insert(0) += 1;
                region.state = RegionState::Opening;
                region.server = Some(target.clone());
                region.epoch = crate::catalog::next_epoch(&mut last_epoch, floor);
                opens.push((table.clone(), id, target));
                assigned = true;
            }
        }
        updated.last_region_epoch = last_epoch;
        if assigned {
            self.commit(state, updated)?;
        }
        let outcomes = self.open_on_servers(&opens);
        let mut updated = state.catalog.clone();
        let mut changed = false;
        let mut indexes: BTreeMap<String, std::collections::HashMap<u64, usize>> = BTreeMap::new();
        for ((table, id, server), outcome) in opens.iter().zip(outcomes) {
            let next = match outcome {
                Ok(()) => RegionState::Open,
                Err(open_error) => {
                    tracing::warn!(server, table, region = id, error = %open_error, "region did not open");
                    let closed = self.servers.close_region(server, table, *id);
                    if let Err(close_error) = &closed {
                        tracing::warn!(server, table, region = id, error = %close_error, "cannot reach the server an open failed on; the region waits for it to answer or die");
                    }
                    first_error.get_or_insert(open_error);
                    if closed.is_err() {
                        continue;
                    }
                    RegionState::FailedOpen
                }
            };
            let Some(entry) = updated.tables.get_mut(table) else {
                continue;
            };
            let index = indexes.entry(table.clone()).or_insert_with(|| {
                entry
                    .regions
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (r.id, i))
                    .collect()
            });
            let Some(region) = index.get(id).map(|&i| &mut entry.regions[i]) else {
                continue;
            };
            region.state = next;
            if next == RegionState::Open {
                region.recover_from.clear();
            } else {
                region.server = None;
            }
            changed = true;
        }
        if changed {
            self.commit(state, updated)?;
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Asks each server to open its regions of `opens` (`(table, region,
    /// server)`), servers in parallel; the outcomes in the order of `opens`.
    fn open_on_servers(&self, opens: &[(String, u64, String)]) -> Vec<Result<()>> {
        let mut by_server: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, (_, _, server)) in opens.iter().enumerate() {
            by_server.entry(server.as_str()).or_default().push(i);
        }
        // Servers dealt round-robin to at most OPEN_THREADS threads, each
        // asking its servers in turn.
        let mut lanes: Vec<Vec<usize>> = vec![Vec::new(); by_server.len().min(OPEN_THREADS)];
        for (n, indices) in by_server.into_values().enumerate() {
            let lanes_len = lanes.len();
            lanes[n % lanes_len].extend(indices);
        }
        let open = |i: usize| {
            let (table, region, server) = &opens[i];
            (i, self.servers.open_region(server, table, *region))
        };
        let mut outcomes: Vec<Option<Result<()>>> = (0..opens.len()).map(|_| None).collect();
        if lanes.len() <= 1 {
            for i in lanes.into_iter().flatten() {
                let (i, outcome) = open(i);
                outcomes[i] = Some(outcome);
            }
        } else {
            let done: Vec<Vec<(usize, Result<()>)>> = std::thread::scope(|scope| {
                let handles: Vec<_> = lanes
                    .into_iter()
                    .map(|lane| scope.spawn(move || lane.into_iter().map(open).collect::<Vec<_>>()))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            // A panicking open is that server's failure,
                            // not the master's: its regions are retried.
                            Vec::new()
                        })
                    })
                    .collect()
            });
            for (i, outcome) in done.into_iter().flatten() {
                outcomes[i] = Some(outcome);
            }
        }
        outcomes
            .into_iter()
            .map(|o| {
                o.unwrap_or_else(|| {
                    Err(Error::NotServingRegion("the open was not answered".into()))
                })
            })
            .collect()
    }

    /// Where a region goes: the target of a move procedure naming it if
    /// that server is live, else the live server with the fewest regions.
    fn target_for(&self, state: &State, table: &str, region: u64) -> Option<String> {
        let wanted = state.catalog.procedures.values().find_map(|p| match p {
            Procedure::MoveRegion {
                table: t,
                region: r,
                target: Some(target),
            } if t == table && *r == region && state.live.contains(target) => Some(target.clone()),
            _ => None,
        });
        wanted.or_else(|| least_loaded(&state.catalog, &state.live, None))
    }

    /// Commits the region `OPENING` on `server` at a new epoch, then asks
    /// the server to open it.
    pub(super) fn assign_to(
        &self,
        state: &mut State,
        table: &str,
        region: u64,
        server: &str,
    ) -> Result<()> {
        let floor = self.fence.epoch();
        self.update_region(state, table, region, |entry, last_epoch| {
            entry.state = RegionState::Opening;
            entry.server = Some(server.to_string());
            entry.epoch = crate::catalog::next_epoch(last_epoch, floor);
        })?;
        self.finish_open(state, table, region, server)
    }

    /// Asks `server` to open the region the catalog assigns it, and
    /// commits the outcome (invariant A2 on failure).
    pub(super) fn finish_open(
        &self,
        state: &mut State,
        table: &str,
        region: u64,
        server: &str,
    ) -> Result<()> {
        match self.servers.open_region(server, table, region) {
            Ok(()) => self.update_region(state, table, region, |entry, _| {
                entry.state = RegionState::Open;
                entry.recover_from.clear();
            }),
            Err(open_error) => {
                // The open may have happened with its answer lost: close it
                // there before it may go anywhere else.
                match self.servers.close_region(server, table, region) {
                    Ok(()) => {
                        self.update_region(state, table, region, |entry, _| {
                            entry.state = RegionState::FailedOpen;
                            entry.server = None;
                        })?;
                        Err(open_error)
                    }
                    Err(close_error) => {
                        tracing::warn!(server, table, region, error = %close_error, "cannot reach the server an open failed on; the region waits for it to answer or die");
                        Err(open_error)
                    }
                }
            }
        }
    }

    /// Commits the region `CLOSING` on `server`, asks the server to close
    /// it, then commits it `CLOSED` (assigned nowhere).
    pub(super) fn close_on(
        &self,
        state: &mut State,
        table: &str,
        region: u64,
        server: &str,
    ) -> Result<()> {
        let closing = state
            .catalog
            .region(region)
            .is_some_and(|(_, _, r)| r.state == RegionState::Closing);
        if !closing {
            self.update_region(state, table, region, |entry, _| {
                entry.state = RegionState::Closing;
            })?;
        }
        self.servers.close_region(server, table, region)?;
        // Every edit of the region up to its close is in store files now:
        // its families count log edits only from above it, so a family an
        // alter deletes and adds again (now or while the table is
        // disabled) never gets the deleted one's edits back from a log
        // replayed later (`RegionServerControl::closed_through`).
        let through = self.servers.closed_through(server, region)?;
        self.update_region(state, table, region, |entry, _| {
            entry.state = RegionState::Closed;
            entry.server = None;
            if let Some(through) = through {
                for first in entry.family_first_sequence.values_mut() {
                    *first = (*first).max(through.saturating_add(1));
                }
            }
        })
    }

    /// Step 5: delete the logs of dead servers nobody needs any more and
    /// drop finished procedures.
    fn clean_up(&self, state: &mut State) -> Result<()> {
        let needed: BTreeSet<u64> = state
            .catalog
            .tables
            .values()
            .flat_map(|t| t.regions.iter())
            .flat_map(|r| r.recover_from.iter().copied())
            .collect();
        let recovered: Vec<(String, u64)> = state
            .catalog
            .dead_servers
            .iter()
            .filter(|(_, d)| d.log_fenced && !needed.contains(&d.log_id))
            .map(|(s, d)| (s.clone(), d.log_id))
            .collect();
        for (server, log_id) in &recovered {
            object_wal::delete_log(self.files.as_ref(), &self.root, *log_id)?;
            tracing::info!(server = %server, log = log_id, "every region of the dead server is open again; its log is deleted");
        }
        let finished: Vec<u64> = state
            .catalog
            .procedures
            .iter()
            .filter(|(_, p)| procedure_finished(&state.catalog, p, &recovered))
            .map(|(id, _)| *id)
            .collect();
        if recovered.is_empty() && finished.is_empty() {
            return Ok(());
        }
        let mut updated = state.catalog.clone();
        for (server, _) in &recovered {
            updated.dead_servers.remove(server);
        }
        for id in &finished {
            updated.procedures.remove(id);
        }
        self.commit(state, updated)
    }

    // ---- calls from members and tools ----

    fn create_table(
        &self,
        descriptor: TableDescriptor,
        splits: &[bytes::Bytes],
        owner: Option<String>,
    ) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        let mut updated = state.catalog.clone();
        let (descriptor, _) = updated.add_table(descriptor, splits, self.clock.now_millis())?;
        if let Some(owner) = owner {
            // HBase grants a table's creator every action on it; in the
            // same commit, so no table is ever left without its owner.
            updated.permissions.apply(&PermissionChange::Grant {
                grant: Grant {
                    principal: owner,
                    scope: Scope::table(descriptor.name()),
                    actions: Actions::ALL,
                },
                merge: false,
            })?;
        }
        let id = updated.next_procedure_id();
        updated.procedures.insert(
            id,
            Procedure::CreateTable {
                table: descriptor.name().to_string(),
            },
        );
        self.commit(&mut state, updated)?;
        self.reconcile(&mut state)?;
        self.require_settled(&state, descriptor.name())
    }

    pub(super) fn set_enabled(&self, table: &str, enabled: bool) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        let mut updated = state.catalog.clone();
        let entry = updated
            .tables
            .get_mut(table)
            .ok_or_else(|| Error::TableNotFound(table.to_string()))?;
        if entry.enabled == enabled {
            return Err(if enabled {
                Error::TableEnabled(table.to_string())
            } else {
                Error::TableDisabled(table.to_string())
            });
        }
        entry.enabled = enabled;
        let id = updated.next_procedure_id();
        updated.procedures.insert(
            id,
            Procedure::SetTableState {
                table: table.to_string(),
                enabled,
            },
        );
        self.commit(&mut state, updated)?;
        self.reconcile(&mut state)?;
        self.require_settled(&state, table)
    }

    /// After a DDL's reconciliation: every region of the table reached its
    /// state, or the error says which did not (the procedure stays and is
    /// finished later).
    pub(super) fn require_settled(&self, state: &State, table: &str) -> Result<()> {
        let Some(entry) = state.catalog.tables.get(table) else {
            return Ok(());
        };
        let unsettled: Vec<String> = entry
            .regions
            .iter()
            .filter(|r| needs_action(entry.enabled, r, &state.live))
            .map(|r| format!("{} ({})", r.id, state_name(r.state)))
            .collect();
        if unsettled.is_empty() {
            Ok(())
        } else {
            Err(Error::NotServingRegion(format!(
                "table {table}: regions not yet {}: {}; the master keeps trying",
                if entry.enabled { "open" } else { "closed" },
                unsettled.join(", ")
            )))
        }
    }

    /// The table, which must be disabled with every region closed (what
    /// drop and truncate need).
    pub(super) fn closed_table<'a>(
        state: &'a State,
        table: &str,
    ) -> Result<&'a crate::catalog::TableEntry> {
        let entry = state
            .catalog
            .tables
            .get(table)
            .ok_or_else(|| Error::TableNotFound(table.to_string()))?;
        if entry.enabled {
            return Err(Error::TableEnabled(table.to_string()));
        }
        if let Some(r) = entry.regions.iter().find(|r| r.server.is_some()) {
            return Err(Error::NotServingRegion(format!(
                "table {table}: region {} is still {} on {}",
                r.id,
                state_name(r.state),
                r.server.as_deref().unwrap_or("?")
            )));
        }
        Ok(entry)
    }

    /// Creates the table of a new index (`alter.rs`, `change_indexes`).
    pub(super) fn create_index_table(&self, descriptor: TableDescriptor) -> Result<()> {
        self.create_table(descriptor, &[], None)
    }

    /// Disables and drops the table of a dropped index; one already gone
    /// is fine (a drop interrupted after it).
    pub(super) fn drop_index_table(&self, table: &str) -> Result<()> {
        match self.set_enabled(table, false) {
            Ok(()) | Err(Error::TableDisabled(_)) => self.drop_table(table),
            Err(Error::TableNotFound(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn drop_table(&self, table: &str) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        Self::closed_table(&state, table)?;
        let mut updated = state.catalog.clone();
        updated.tables.remove(table);
        // Its grants go with it (HBase removes a dropped table's
        // `hbase:acl` row): a table created later under the name starts
        // with its creator's grant only.
        updated.permissions.forget_table(table, None);
        self.commit(&mut state, updated)?;
        // After the commit: a crash here leaves files the next drop of a
        // table by this name would never see; `delete_prefix` is retried
        // by nobody, so log it loudly.
        let dir = layout::table_dir(&self.root, table);
        if let Err(e) = self.files.delete_prefix(&dir) {
            tracing::warn!(dir = %dir.display(), error = %e, "could not delete the files of a dropped table");
        }
        // A dropped clone's links go with it.
        self.release_holds(&state);
        Ok(())
    }

    /// A change of the catalog alone (namespaces, replication peers): no
    /// region is opened, closed or moved, so one commit is the whole of it.
    pub(super) fn catalog_change(
        &self,
        change: impl FnOnce(&mut Catalog) -> Result<()>,
    ) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        let mut updated = state.catalog.clone();
        change(&mut updated)?;
        self.commit(&mut state, updated)
    }

    pub(super) fn region_by_encoded_name(
        catalog: &Catalog,
        encoded: &str,
    ) -> Result<(String, u64)> {
        catalog.region_by_name(encoded)
    }

    /// Moves a region: close where it is, open on `target` (or wherever).
    fn move_region(&self, encoded: &str, target: Option<String>) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        let (table, region) = Self::region_by_encoded_name(&state.catalog, encoded)?;
        if let Some(target) = &target {
            if !state.live.contains(target) {
                return Err(Error::invalid(format!(
                    "server {target} is not a live region server"
                )));
            }
        }
        self.move_locked(&mut state, &table, region, target)
    }

    pub(super) fn move_locked(
        &self,
        state: &mut State,
        table: &str,
        region: u64,
        target: Option<String>,
    ) -> Result<()> {
        let mut updated = state.catalog.clone();
        // A move of an unassigned region assigns it.
        if let Some(entry) = updated
            .tables
            .get_mut(table)
            .and_then(|t| t.regions.iter_mut().find(|r| r.id == region))
        {
            entry.unassigned = false;
        }
        let id = updated.next_procedure_id();
        updated.procedures.insert(
            id,
            Procedure::MoveRegion {
                table: table.to_string(),
                region,
                target: target.clone(),
            },
        );
        self.commit(state, updated)?;
        let current = state
            .catalog
            .region(region)
            .map(|(_, _, r)| (r.state, r.server.clone()));
        if let Some((RegionState::Open, Some(server))) = current {
            if target.as_deref() == Some(server.as_str()) {
                return self.finish_move(state, id);
            }
            self.close_on(state, table, region, &server)?;
        }
        self.act_on_region(state, table, region)?;
        self.finish_move(state, id)
    }

    fn finish_move(&self, state: &mut State, procedure: u64) -> Result<()> {
        let mut updated = state.catalog.clone();
        updated.procedures.remove(&procedure);
        self.commit(state, updated)
    }

    fn unassign(&self, encoded: &str) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        let (table, region) = Self::region_by_encoded_name(&state.catalog, encoded)?;
        let current = state
            .catalog
            .region(region)
            .map(|(_, _, r)| (r.state, r.server.clone()));
        if let Some((
            RegionState::Open | RegionState::Opening | RegionState::Closing,
            Some(server),
        )) = current
        {
            self.close_on(&mut state, &table, region, &server)?;
        }
        // Reconciliation leaves it closed until `assign` or `move`.
        self.update_region(&mut state, &table, region, |entry, _| {
            entry.unassigned = true;
            if entry.server.is_none() && entry.state != RegionState::FailedOpen {
                entry.state = RegionState::Closed;
            }
        })
    }

    fn assign(&self, encoded: &str) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        let (table, region) = Self::region_by_encoded_name(&state.catalog, encoded)?;
        self.update_region(&mut state, &table, region, |entry, _| {
            entry.unassigned = false;
        })?;
        self.act_on_region(&mut state, &table, region)
    }

    /// Evens the servers out in two passes, as HBase's balancer weighs
    /// region counts and load:
    /// 1. counts: moves regions from the servers with the most to those
    ///    with the fewest until counts differ by at most one;
    /// 2. load: asks every live server for its regions' request rates and
    ///    moves hot regions from the busiest server to the idlest (or swaps
    ///    a hot region for a cold one, to keep counts even) while that
    ///    lowers the busiest server's load ([`plan_load_moves`]).
    ///
    /// A server that cannot report its load skips pass 2: moving regions
    /// on a partial picture could make things worse.
    ///
    /// It does not run while the balancer switch is off, nor, without
    /// `force`, while a region is still in transition after reconciling
    /// (moving regions around one that is stuck opening plans on a
    /// picture about to change). Both as HBase's master decides.
    fn balance(&self, force: bool) -> Result<MasterAnswer> {
        let mut state = self.state.lock();
        self.check_running()?;
        self.reconcile(&mut state)?;
        if state.catalog.balancer_off {
            return Ok(MasterAnswer::NotRun {
                reason: "the balancer switch is off".into(),
            });
        }
        if !force {
            let moving = self.regions_to_act_on(&state).len();
            if moving > 0 {
                return Ok(MasterAnswer::NotRun {
                    reason: format!("{moving} region(s) in transition"),
                });
            }
        }
        self.balance_locked(&mut state)
            .map(|regions| MasterAnswer::Moved { regions })
    }

    /// [`ClusterMaster::balance`]'s two passes, under the lock.
    fn balance_locked(&self, state: &mut State) -> Result<usize> {
        let state = &mut *state;
        let rates = self.region_rates(state);
        let mut moved = 0;
        loop {
            let counts = region_counts(&state.catalog, &state.live);
            let (Some((most, most_n)), Some((fewest, fewest_n))) = (
                counts
                    .iter()
                    .max_by_key(|(_, n)| **n)
                    .map(|(s, n)| (s.clone(), *n)),
                counts
                    .iter()
                    .min_by_key(|(_, n)| **n)
                    .map(|(s, n)| (s.clone(), *n)),
            ) else {
                return Ok(moved);
            };
            if most_n <= fewest_n + 1 {
                break;
            }
            let candidate = state.catalog.tables.iter().find_map(|(name, t)| {
                t.regions
                    .iter()
                    .find(|r| {
                        r.state == RegionState::Open && r.server.as_deref() == Some(most.as_str())
                    })
                    .map(|r| (name.clone(), r.id))
            });
            let Some((table, region)) = candidate else {
                return Ok(moved);
            };
            self.move_locked(state, &table, region, Some(fewest))?;
            moved += 1;
        }

        let Some(rates) = rates else {
            return Ok(moved);
        };
        // Each open region with the rate it had where it was measured: a
        // region moved by pass 1 carries its load with it (its new
        // server's counters start at zero).
        let mut loads: BTreeMap<String, Vec<(String, u64, f64)>> =
            state.live.iter().map(|s| (s.clone(), Vec::new())).collect();
        for (name, table) in &state.catalog.tables {
            for region in &table.regions {
                if region.state != RegionState::Open {
                    continue;
                }
                if let Some(held) = region.server.as_ref().and_then(|s| loads.get_mut(s)) {
                    let rate = rates.get(&region.id).copied().unwrap_or(0.0);
                    held.push((name.clone(), region.id, rate));
                }
            }
        }
        for planned in plan_load_moves(loads, MAX_LOAD_MOVES) {
            tracing::info!(
                table = planned.table,
                region = planned.region,
                from = planned.from,
                to = planned.to,
                requests_per_sec = format!("{:.0}", planned.requests_per_sec),
                "balancer: moving a region for load"
            );
            self.move_locked(state, &planned.table, planned.region, Some(planned.to))?;
            moved += 1;
        }
        Ok(moved)
    }

    /// Every live server's report of its regions' request rates, by
    /// region id; `None` when a server cannot answer (the balancer then
    /// evens counts only: moving regions on a partial picture could make
    /// things worse).
    ///
    /// A region that moved starts counting again on its new server; its
    /// rate is measured from its first request there (over at least a
    /// second, `basalt_engine::load`), so under a steady load it reads
    /// right again within a second or two of the move.
    fn region_rates(&self, state: &State) -> Option<BTreeMap<u64, f64>> {
        match self.region_reports(state) {
            Ok(reports) => Some(
                reports
                    .into_iter()
                    .map(|(id, report)| (id, report.requests_per_sec))
                    .collect(),
            ),
            Err(why) => {
                tracing::warn!(why, "no load report: the balancer evens region counts only");
                None
            }
        }
    }

    /// Every live server's region load reports, by region id; the error
    /// names a server that could not report.
    fn region_reports(
        &self,
        state: &State,
    ) -> std::result::Result<BTreeMap<u64, super::control::RegionLoadReport>, String> {
        let mut out = BTreeMap::new();
        for server in &state.live {
            let reports = self
                .servers
                .region_loads(server)
                .map_err(|e| format!("region server {server} cannot report its load: {e}"))?;
            for report in reports {
                // Only where the catalog has it open: a report can trail a
                // move that just happened.
                let here = state
                    .catalog
                    .region(report.region)
                    .is_some_and(|(_, _, e)| {
                        e.state == RegionState::Open && e.server.as_deref() == Some(server)
                    });
                if here {
                    out.insert(report.region, report);
                }
            }
        }
        Ok(out)
    }

    /// The cluster as this master sees it.
    ///
    /// Each server's region loads are asked for after the master's lock is
    /// released, all servers at once, each call bounded by the control
    /// (a paused server shows without load instead of stalling status).
    pub fn status(&self) -> ClusterStatus {
        let mut status = self.catalog_status();
        let names: Vec<String> = status.servers.iter().map(|s| s.name.clone()).collect();
        let servers = &self.servers;
        let loads: Vec<Option<Vec<super::control::RegionLoadReport>>> =
            std::thread::scope(|scope| {
                let asks: Vec<_> = names
                    .iter()
                    .map(|name| scope.spawn(move || servers.region_loads(name).ok()))
                    .collect();
                asks.into_iter()
                    .map(|ask| ask.join().ok().flatten())
                    .collect()
            });
        for (server, loads) in status.servers.iter_mut().zip(loads) {
            server.region_loads = loads;
        }
        status
    }

    /// Says which standby masters wait (the process wiring reads them from
    /// ZooKeeper's `backup-masters`); status lists them, this master left
    /// out.
    pub fn set_backup_masters(&self, mut names: Vec<String>) {
        names.retain(|n| *n != self.name);
        names.sort();
        *self.backup_masters.write() = names;
    }

    /// [`ClusterMaster::status`] from the catalog alone.
    fn catalog_status(&self) -> ClusterStatus {
        let state = self.state.lock();
        let catalog = &state.catalog;
        let mut by_server: BTreeMap<String, Vec<String>> =
            state.live.iter().map(|s| (s.clone(), Vec::new())).collect();
        let mut in_transition = Vec::new();
        for (name, table) in &catalog.tables {
            for region in &table.regions {
                let encoded = region.info(name).encoded_name();
                match (&region.state, &region.server) {
                    (RegionState::Open, Some(server)) => {
                        by_server.entry(server.clone()).or_default().push(encoded);
                    }
                    (RegionState::Closed, None) if !table.enabled => {}
                    _ => in_transition.push(RegionTransition {
                        region: encoded,
                        table: name.clone(),
                        state: state_name(region.state).to_string(),
                        server: region.server.clone(),
                    }),
                }
            }
        }
        ClusterStatus {
            master: self.name.clone(),
            backup_masters: self.backup_masters.read().clone(),
            servers: by_server
                .into_iter()
                .map(|(name, regions)| ServerStatus {
                    name,
                    regions,
                    region_loads: None,
                })
                .collect(),
            dead_servers: catalog.dead_servers.keys().cloned().collect(),
            in_transition,
            procedures: catalog
                .procedures
                .iter()
                .map(|(id, p)| (*id, describe_procedure(p)))
                .collect(),
            catalog_version: catalog.version,
        }
    }
}

impl MasterControl for ClusterMaster {
    fn call(&self, call: MasterCall) -> Result<MasterAnswer> {
        let done = |r: Result<()>| r.map(|()| MasterAnswer::Done);
        match call {
            MasterCall::CreateTable {
                descriptor,
                splits,
                owner,
            } => done(self.create_table(descriptor, &splits, owner)),
            MasterCall::Permission { change } => {
                done(self.catalog_change(|c| c.permissions.apply(&change)))
            }
            MasterCall::SetEnabled { table, enabled } => done(self.set_enabled(&table, enabled)),
            MasterCall::DropTable { table } => done(self.drop_table(&table)),
            MasterCall::CreateNamespace { descriptor } => {
                done(self.catalog_change(|c| c.add_namespace(descriptor)))
            }
            MasterCall::AlterNamespace { name, set, unset } => {
                done(self.catalog_change(|c| c.alter_namespace(&name, set, &unset)))
            }
            MasterCall::DropNamespace { name } => {
                done(self.catalog_change(|c| c.remove_namespace(&name)))
            }
            MasterCall::Move { region, target } => done(self.move_region(&region, target)),
            MasterCall::Assign { region } => done(self.assign(&region)),
            MasterCall::Unassign { region } => done(self.unassign(&region)),
            MasterCall::Split { region, key } => done(self.split_region(&region, key)),
            MasterCall::SplitTable { table, key } => done(self.split_table(&table, key)),
            MasterCall::Merge { region_a, region_b } => {
                done(self.merge_regions(&region_a, &region_b))
            }
            MasterCall::Alter { table, changes } => done(self.alter_table(&table, &changes)),
            MasterCall::Indexes { table, change } => done(self.change_indexes(&table, change)),
            MasterCall::Truncate { table } => done(self.truncate_table(&table)),
            MasterCall::Balance { force } => self.balance(force),
            MasterCall::BalancerSwitch { on } => self
                .balancer_switch(on)
                .map(|previous| MasterAnswer::Switch { previous }),
            MasterCall::NormalizerSwitch { on } => self
                .normalizer_switch(on)
                .map(|previous| MasterAnswer::Switch { previous }),
            MasterCall::SplitOrMergeSwitch { which, on } => self
                .split_or_merge_switch(which, on)
                .map(|previous| MasterAnswer::Switch { previous }),
            MasterCall::Normalize => self.normalize().map(MasterAnswer::Normalized),
            MasterCall::ReplicationPeer { change } => {
                done(self.catalog_change(|c| c.change_replication_peer(change)))
            }
            MasterCall::ReplicationPeers => Ok(MasterAnswer::ReplicationPeers {
                peers: self.state.lock().catalog.replication_peers.clone(),
            }),
            MasterCall::ReplicationPeerModificationSwitch { on } => self
                .replication_peer_modification_switch(on)
                .map(|previous| MasterAnswer::Switch { previous }),
            MasterCall::Status => Ok(MasterAnswer::Status(self.status())),
            MasterCall::Snapshot {
                table,
                name,
                skip_flush,
                ttl_secs,
                owner,
                nonce,
            } => done(self.take_snapshot(&table, &name, skip_flush, ttl_secs, owner, nonce)),
            MasterCall::ListSnapshots { pattern } => self
                .list_snapshots(pattern.as_deref())
                .map(|snapshots| MasterAnswer::Snapshots { snapshots }),
            MasterCall::DeleteSnapshot { name } => done(self.delete_snapshot(&name)),
            MasterCall::CloneSnapshot { name, table } => done(self.clone_snapshot(&name, &table)),
            MasterCall::RestoreSnapshot { name } => done(self.restore_snapshot(&name)),
            MasterCall::SnapshotCleanupSwitch { on } => self
                .snapshot_cleanup_switch(on)
                .map(|previous| MasterAnswer::Switch { previous }),
            MasterCall::CatalogJanitor => {
                let mut state = self.state.lock();
                self.check_running()?;
                self.collect_retired_regions(&mut state)
                    .map(|()| MasterAnswer::Done)
            }
        }
    }
}

/// Whether reconciliation has something to do for `region`.
fn needs_action(enabled: bool, region: &RegionEntry, live: &BTreeSet<String>) -> bool {
    let on_live = region
        .server
        .as_ref()
        .is_some_and(|server| live.contains(server));
    match region.state {
        RegionState::Open => !enabled || !on_live,
        RegionState::Opening | RegionState::Closing => true,
        RegionState::Closed if region.unassigned => false,
        RegionState::Offline | RegionState::Closed | RegionState::FailedOpen => enabled,
        RegionState::Split | RegionState::Merged => false,
    }
}

/// At most this many threads ask servers to open regions at once
/// ([`ClusterMaster::open_batch`]): each server opens its regions in turn,
/// so a few dozen servers in parallel already keep every server busy.
pub const OPEN_THREADS: usize = 32;

/// True when steps 3 and 4 open the region (assigned now, or `OPENING`
/// already): what [`ClusterMaster::open_batch`] does for many at once.
fn opens_in_batch(enabled: bool, region: &RegionEntry) -> bool {
    enabled
        && matches!(
            (region.state, &region.server),
            (RegionState::Opening, Some(_))
                | (
                    RegionState::Offline | RegionState::Closed | RegionState::FailedOpen,
                    None
                )
        )
}

/// `regions` grouped by table, each table's in the order given.
fn group_by_table(regions: &[(String, u64)]) -> BTreeMap<String, Vec<u64>> {
    let mut grouped: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (table, id) in regions {
        grouped.entry(table.clone()).or_default().push(*id);
    }
    grouped
}

fn region_counts(catalog: &Catalog, live: &BTreeSet<String>) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<String, usize> = live.iter().map(|s| (s.clone(), 0)).collect();
    for table in catalog.tables.values() {
        for region in &table.regions {
            if let Some(server) = &region.server {
                if let Some(n) = counts.get_mut(server) {
                    *n += 1;
                }
            }
        }
    }
    counts
}

/// At most this many regions move for load in one `balance` (a swap counts
/// two): rates are a minute's average, so a few moves per call and another
/// call later beat a big reshuffle on numbers that are about to change.
const MAX_LOAD_MOVES: usize = 8;

/// A server is not worth relieving when its load is within this fraction
/// of the average (HBase's balancer also tolerates a slop around the mean).
const LOAD_SLOP: f64 = 0.2;

/// Nor when the busiest and idlest servers differ by fewer requests per
/// second than this: an idle cluster should not shuffle regions over noise.
const MIN_LOAD_GAP: f64 = 10.0;

/// One region move the load pass of the balancer wants.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct LoadMove {
    pub table: String,
    pub region: u64,
    pub from: String,
    pub to: String,
    pub requests_per_sec: f64,
}

/// The moves that even out request rates, given each server's regions as
/// (table, region id, requests/s). Each step takes the busiest server B
/// and the idlest I; it stops when B is within [`LOAD_SLOP`] of the
/// average or within [`MIN_LOAD_GAP`] of I. Otherwise, with `gap` = load(B)
/// - load(I):
/// - if B holds more regions than I, it moves B's hottest region whose rate
///   is below `gap` (so I does not become the new busiest at B's old load);
/// - else it swaps a region of B for a colder one of I, the pair whose
///   difference is largest while still below `gap` (counts stay even).
///
/// Every step lowers the busiest load or stops, so it ends; `max_moves`
/// bounds it further.
pub(super) fn plan_load_moves(
    mut servers: BTreeMap<String, Vec<(String, u64, f64)>>,
    max_moves: usize,
) -> Vec<LoadMove> {
    let mut moves = Vec::new();
    if servers.len() < 2 {
        return moves;
    }
    let load = |regions: &[(String, u64, f64)]| regions.iter().map(|r| r.2).sum::<f64>();
    while moves.len() < max_moves {
        let total: f64 = servers.values().map(|r| load(r)).sum();
        let average = total / servers.len() as f64;
        let by_load = |a: &&String, b: &&String| load(&servers[*a]).total_cmp(&load(&servers[*b]));
        let (Some(busiest), Some(idlest)) = (
            servers.keys().max_by(by_load).cloned(),
            servers.keys().min_by(by_load).cloned(),
        ) else {
            break;
        };
        let (busy_load, idle_load) = (load(&servers[&busiest]), load(&servers[&idlest]));
        let gap = busy_load - idle_load;
        if busy_load <= average * (1.0 + LOAD_SLOP) || gap < MIN_LOAD_GAP {
            break;
        }
        let (busy, idle) = (&servers[&busiest], &servers[&idlest]);
        if busy.len() > idle.len() {
            let Some(at) = (0..busy.len())
                .filter(|&i| busy[i].2 > 0.0 && busy[i].2 < gap)
                .max_by(|&a, &b| busy[a].2.total_cmp(&busy[b].2))
            else {
                break;
            };
            let region = servers.get_mut(&busiest).map(|r| r.remove(at));
            let Some(region) = region else { break };
            moves.push(LoadMove {
                table: region.0.clone(),
                region: region.1,
                from: busiest.clone(),
                to: idlest.clone(),
                requests_per_sec: region.2,
            });
            servers.entry(idlest).or_default().push(region);
        } else {
            if moves.len() + 2 > max_moves {
                break;
            }
            let mut best: Option<(usize, usize, f64)> = None;
            for (i, hot) in busy.iter().enumerate() {
                for (j, cold) in idle.iter().enumerate() {
                    let difference = hot.2 - cold.2;
                    if difference > 0.0
                        && difference < gap
                        && best.is_none_or(|(_, _, d)| difference > d)
                    {
                        best = Some((i, j, difference));
                    }
                }
            }
            let Some((i, j, _)) = best else { break };
            let hot = servers.get_mut(&busiest).map(|r| r.remove(i));
            let cold = servers.get_mut(&idlest).map(|r| r.remove(j));
            let (Some(hot), Some(cold)) = (hot, cold) else {
                break;
            };
            moves.push(LoadMove {
                table: hot.0.clone(),
                region: hot.1,
                from: busiest.clone(),
                to: idlest.clone(),
                requests_per_sec: hot.2,
            });
            moves.push(LoadMove {
                table: cold.0.clone(),
                region: cold.1,
                from: idlest.clone(),
                to: busiest.clone(),
                requests_per_sec: cold.2,
            });
            servers.entry(idlest).or_default().push(hot);
            servers.entry(busiest).or_default().push(cold);
        }
    }
    moves
}

/// The live server with the fewest regions (ties: the first by name),
/// other than `except`.
pub(super) fn least_loaded(
    catalog: &Catalog,
    live: &BTreeSet<String>,
    except: Option<&str>,
) -> Option<String> {
    region_counts(catalog, live)
        .into_iter()
        .filter(|(s, _)| Some(s.as_str()) != except)
        .min_by_key(|(_, n)| *n)
        .map(|(s, _)| s)
}

/// True when every region of `table` was opened (or, disabled, re-epoched)
/// after the alter: the procedure is done.
fn alter_finished(catalog: &Catalog, table: &str, floor: u64) -> bool {
    catalog.tables.get(table).is_none_or(|t| {
        t.regions
            .iter()
            .all(|r| r.epoch > floor && (!t.enabled || r.state == RegionState::Open))
    })
}

/// True when a split or merge is committed (no old region serves any more)
/// and every new region is open: its procedure can go.
fn handover_finished(catalog: &Catalog, old: &[u64], new: &[u64]) -> bool {
    old.iter().all(|id| catalog.region(*id).is_none())
        && new.iter().all(|id| {
            catalog
                .region(*id)
                .is_none_or(|(_, _, r)| r.state == RegionState::Open)
        })
}

fn procedure_finished(
    catalog: &Catalog,
    procedure: &Procedure,
    recovered: &[(String, u64)],
) -> bool {
    let settled = |table: &str| {
        catalog.tables.get(table).is_none_or(|t| {
            t.regions.iter().all(|r| {
                if t.enabled {
                    r.state == RegionState::Open
                } else {
                    r.server.is_none()
                }
            })
        })
    };
    match procedure {
        Procedure::CreateTable { table } | Procedure::SetTableState { table, .. } => settled(table),
        Procedure::ServerCrash { server } => {
            recovered.iter().any(|(s, _)| s == server) || !catalog.dead_servers.contains_key(server)
        }
        Procedure::MoveRegion { region, .. } => catalog
            .region(*region)
            .is_none_or(|(_, _, r)| r.state == RegionState::Open),
        Procedure::AlterTable {
            table, epoch_floor, ..
        } => alter_finished(catalog, table, *epoch_floor),
        // Committed (the old regions retired) and every new region open;
        // an uncommitted one is rolled back by `resume_handovers`.
        Procedure::SplitRegion {
            parent: old,
            daughters: new,
            ..
        } => handover_finished(catalog, &[*old], new),
        Procedure::MergeRegions {
            regions: old,
            merged,
            ..
        } => handover_finished(catalog, old, &[*merged]),
    }
}

fn describe_procedure(procedure: &Procedure) -> String {
    match procedure {
        Procedure::CreateTable { table } => format!("CreateTableProcedure table={table}"),
        Procedure::SetTableState { table, enabled } => format!(
            "{}TableProcedure table={table}",
            if *enabled { "Enable" } else { "Disable" }
        ),
        Procedure::ServerCrash { server } => format!("ServerCrashProcedure server={server}"),
        Procedure::AlterTable { table, .. } => format!("ModifyTableProcedure table={table}"),
        Procedure::MoveRegion {
            table,
            region,
            target,
        } => format!(
            "TransitRegionStateProcedure table={table} region={region} target={}",
            target.as_deref().unwrap_or("any")
        ),
        Procedure::SplitRegion {
            table,
            parent,
            daughters,
            ..
        } => format!(
            "SplitTableRegionProcedure table={table} parent={parent} daughters={daughters:?}"
        ),
        Procedure::MergeRegions {
            table,
            regions,
            merged,
        } => {
            format!("MergeTableRegionsProcedure table={table} regions={regions:?} merged={merged}")
        }
    }
}

/// HBase's name of a region state.
pub(crate) fn state_name(state: RegionState) -> &'static str {
    match state {
        RegionState::Open => "OPEN",
        RegionState::Split => "SPLIT",
        RegionState::Merged => "MERGED",
        RegionState::Offline => "OFFLINE",
        RegionState::Opening => "OPENING",
        RegionState::Closing => "CLOSING",
        RegionState::Closed => "CLOSED",
        RegionState::FailedOpen => "FAILED_OPEN",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(spec: &[(&str, &[(u64, f64)])]) -> BTreeMap<String, Vec<(String, u64, f64)>> {
        spec.iter()
            .map(|(server, regions)| {
                let regions = regions
                    .iter()
                    .map(|&(id, rate)| ("t".to_string(), id, rate));
                (server.to_string(), regions.collect())
            })
            .collect()
    }

    /// Each server's (load, region count) once `moves` are applied.
    fn after(
        mut spec: BTreeMap<String, Vec<(String, u64, f64)>>,
        moves: &[LoadMove],
    ) -> BTreeMap<String, (f64, usize)> {
        for m in moves {
            let from = spec.get_mut(&m.from).unwrap();
            let at = from.iter().position(|r| r.1 == m.region).unwrap();
            let region = from.remove(at);
            spec.get_mut(&m.to).unwrap().push(region);
        }
        spec.into_iter()
            .map(|(s, r)| (s, (r.iter().map(|x| x.2).sum(), r.len())))
            .collect()
    }

    fn busiest(loads: &BTreeMap<String, (f64, usize)>) -> f64 {
        loads.values().map(|l| l.0).fold(0.0, f64::max)
    }

    fn count_spread(loads: &BTreeMap<String, (f64, usize)>) -> usize {
        let counts = loads.values().map(|l| l.1);
        counts.clone().max().unwrap() - counts.min().unwrap()
    }

    #[test]
    fn a_server_with_more_regions_and_the_load_gives_its_hot_region_away() {
        let spec = servers(&[
            ("a", &[(1, 900.0), (2, 50.0), (3, 50.0)]),
            ("b", &[(4, 10.0), (5, 10.0)]),
        ]);
        let moves = plan_load_moves(spec.clone(), 8);
        // The hot region goes first: b then carries 920 < a's 1000.
        assert_eq!(
            (
                moves[0].region,
                moves[0].from.as_str(),
                moves[0].to.as_str()
            ),
            (1, "a", "b")
        );
        let loads = after(spec, &moves);
        // One region of 900 bounds what any plan can reach.
        assert!(busiest(&loads) <= 920.0, "{loads:?}");
        assert!(count_spread(&loads) <= 1, "{loads:?}");
    }

    #[test]
    fn equal_counts_swap_a_hot_region_for_a_cold_one() {
        let spec = servers(&[
            ("a", &[(1, 500.0), (2, 400.0)]),
            ("b", &[(3, 5.0), (4, 5.0)]),
        ]);
        let moves = plan_load_moves(spec.clone(), 8);
        assert!(moves.len() >= 2, "{moves:?}");
        assert_eq!((moves[0].from.as_str(), moves[0].to.as_str()), ("a", "b"));
        assert_eq!((moves[1].from.as_str(), moves[1].to.as_str()), ("b", "a"));
        let loads = after(spec, &moves);
        assert!(busiest(&loads) <= 505.0, "{loads:?}");
        assert_eq!(count_spread(&loads), 0, "{loads:?}");
    }

    #[test]
    fn an_even_or_idle_cluster_moves_nothing() {
        let even = servers(&[
            ("a", &[(1, 100.0), (2, 100.0)]),
            ("b", &[(3, 110.0), (4, 95.0)]),
        ]);
        assert!(plan_load_moves(even, 8).is_empty());
        let idle = servers(&[("a", &[(1, 3.0), (2, 2.0)]), ("b", &[(3, 0.0)])]);
        assert!(plan_load_moves(idle, 8).is_empty());
        let one = servers(&[("a", &[(1, 1000.0)])]);
        assert!(plan_load_moves(one, 8).is_empty());
    }

    #[test]
    fn a_single_hot_region_that_no_move_would_help_stays() {
        // Moving region 1 anywhere just moves the hot spot.
        let spec = servers(&[
            ("a", &[(1, 1000.0)]),
            ("b", &[(2, 1.0)]),
            ("c", &[(3, 1.0)]),
        ]);
        assert!(plan_load_moves(spec, 8).is_empty());
    }

    #[test]
    fn the_plan_never_exceeds_its_move_budget() {
        let hot: Vec<(u64, f64)> = (0..20).map(|i| (i, 100.0)).collect();
        let cold: Vec<(u64, f64)> = (100..120).map(|i| (i, 1.0)).collect();
        let spec = servers(&[("a", &hot), ("b", &cold)]);
        for budget in 0..6 {
            assert!(plan_load_moves(spec.clone(), budget).len() <= budget);
        }
    }
}
