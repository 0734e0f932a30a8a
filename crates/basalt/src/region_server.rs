//! The region server: HBase's region-hosting role. It opens, closes and
//! destroys regions by id, and owns what they share in one process: the
//! write-ahead log, the block cache and file store (the [`StoreContext`]),
//! and the scheduler of background flushes and compactions.
//!
//! It knows nothing of the catalog: the master tells it which regions to
//! open ([`RegionSpec`]) and which to close or destroy, and publishes the
//! locations to the [`RegionLocator`](crate::RegionLocator). A later
//! `basalt regionserver` process runs this role alone.
//!
//! Start-up (`RegionServer::start`), in order:
//! 1. delete region directories that are neither opened nor kept (a crash
//!    between a catalog change and the deletion of files);
//! 2. open every region, empty, from its store manifests;
//! 3. open the log and replay its edits into the regions they belong to
//!    (edits of unknown regions are skipped: dropped or truncated tables;
//!    edits a store already holds in files are skipped by the store);
//! 4. set each region's next sequence id above everything it holds;
//! 5. only then hand the regions the log, so writes start after replay.
//!
//! # Cluster mode
//!
//! A cluster member (`RegionServer::start_member`) shares the storage with
//! other region servers, each with its own log on it; it claims its log
//! (its process epoch), starts it without touching the others' and opens
//! no region until the master assigns one. Each *opening of a region* has
//! its own **region epoch**, allocated by the master (strictly increasing
//! for the region, above every log id and every epoch its manifests
//! carry): a region can move from a server of a higher process epoch back
//! to one of a lower, so process epochs cannot fence regions. Opening an
//! assigned region (`RegionServer::open_assigned`), in order:
//! 1. a region fence, `Fence::child(region epoch, process fence)`, in a
//!    copy of the store context: the region refuses everything once a
//!    newer opening of it exists elsewhere (the child trips) or this
//!    server's log is fenced (the parent trips);
//! 2. open the region: its stores fence their manifests with the region
//!    epoch (and move their next file id 2^20 past the previous owner's,
//!    at every new epoch: invariant M3); a manifest of a higher epoch
//!    means a newer opening exists: fail, fenced, serving nothing;
//! 3. replay the region's edits from each log of a dead server it was on
//!    (ascending log ids; each log already ended by the master): edits
//!    the stores already hold in files are skipped by the store;
//! 4. set the next sequence id above everything the region holds and, if
//!    anything was replayed, flush it, so the dead logs are no longer
//!    needed for it (the flush needs the sequence ids of step 4 to record
//!    how far the files reach);
//! 5. attach this server's log, register with the scheduler, go online.
//!
//! A move closes the region with `RegionServer::close_for_move` (writes
//! stop, then a flush, so none of its edits is left only in this server's
//! log) before the master opens it elsewhere at a new epoch.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};

use basalt_engine::block_cache::{BlockCache, BlockCacheStats};
use basalt_engine::fence::Fence;
use basalt_engine::fs::FileStore;
use basalt_engine::layout;
use basalt_engine::load_split::LoadSplitEvent;
use basalt_engine::memory::MemstoreBudget;
use basalt_engine::observer::WriteObserver;
use basalt_engine::snapshot::RetainingFileStore;
use basalt_engine::wal::object::replay_log;
use basalt_engine::wal::{
    ObjectWal, ObjectWalOptions, ReplayReport, Wal, WalEdit, WalStats, WriteAheadLog,
};
use basalt_engine::{Clock, FamilyState, OpenFailure, Region, RegionInfo, StoreContext};
use basalt_types::{Error, IndexDescriptor, Result};

use crate::maintenance::{Maintenance, MaintenanceActivity, MaintenanceHooks};
use crate::metrics::RetiredLoad;
use crate::options::Options;

/// What a region server needs to open a region: its identity and key
/// range, and its families with the sequence id each one's edits start at.
#[derive(Debug, Clone)]
pub struct RegionSpec {
    /// Region id, table and key range.
    pub info: RegionInfo,
    /// The families, as the catalog records them.
    pub families: Vec<FamilyState>,
    /// The table's secondary indexes: the region keeps them with each
    /// write (`crate::index`).
    pub indexes: Vec<IndexDescriptor>,
}

/// The master's order to open a region on a cluster member (see
/// `RegionServer::open_assigned`).
#[derive(Debug, Clone)]
pub struct RegionAssignment {
    /// The region.
    pub spec: RegionSpec,
    /// This opening's region epoch: strictly above every earlier opening
    /// of the region, every log id, and every epoch its manifests carry.
    /// Never reused: two openings at one epoch do not fence each other.
    pub epoch: u64,
    /// The logs of dead servers that hosted the region since its last
    /// flush, each already ended (fenced or closed): its edits are
    /// replayed from them. Empty for a move (the previous server flushed
    /// it) or a new region.
    pub recover_from: Vec<u64>,
}

/// Where the write-ahead log lives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum WalPlacement {
    /// Segment files in the local data directory (`wal/`).
    #[default]
    Local,
    /// Log objects in the file store, beside the store files, with writer
    /// fencing (`basalt_engine::wal::object`): for data on shared object
    /// storage.
    FileStore(ObjectWalOptions),
}

/// What opening found in the write-ahead log.
#[derive(Debug, Clone, Default)]
pub struct RecoveryReport {
    /// WAL segments read.
    pub segments: usize,
    /// Records replayed into regions.
    pub edits_replayed: u64,
    /// Records of regions that no longer exist (dropped or truncated tables).
    pub edits_skipped: u64,
    /// A record cut short by a crash and dropped: its file and offset.
    pub torn_tail: Option<(PathBuf, u64)>,
}

/// The region-hosting role: open regions, the log, the scheduler.
#[derive(Debug)]
pub struct RegionServer {
    root: PathBuf,
    options: Options,
    clock: Arc<dyn Clock>,
    context: StoreContext,
    /// The global memstore budget every region's memstores count in (also
    /// in `context`, which hands it to the stores).
    budget: Arc<MemstoreBudget>,
    wal: Arc<dyn WriteAheadLog>,
    maintenance: Arc<Maintenance>,
    /// Regions open on this server, by id.
    online: RwLock<HashMap<u64, Arc<Region>>>,
    /// Regions being opened by `open_assigned`, not online yet.
    opening: Mutex<HashSet<u64>>,
    /// Regions closed for a move, with the sequence id they were flushed
    /// through: this server's log holds nothing of them that is not in
    /// store files, so retirement treats them as flushed that far.
    moved_away: Mutex<HashMap<u64, u64>>,
    /// Cluster mode: the region epoch each region open here was opened at.
    epochs: Mutex<HashMap<u64, u64>>,
    /// The final request totals of the regions that left the open set
    /// (folded in by `close_region`, under `online`'s write lock).
    retired: Mutex<RetiredLoad>,
    shut_down: AtomicBool,
    /// The one region server of a process (`cluster::in_process`): its
    /// stores fence with the process epoch ([`RegionServer::store_epoch`]).
    in_process: AtomicBool,
    /// Makes the observers that keep tables' indexes (`crate::index`):
    /// set once the process's routes exist, before any write is served.
    index_keeping: OnceLock<Arc<dyn IndexKeeping>>,
}

/// What makes the write observer that keeps a table's secondary indexes
/// (`crate::index::maintain`), handed to the region server by the layer
/// that knows where index tables are (the region server itself routes
/// nothing).
pub(crate) trait IndexKeeping: Send + Sync + std::fmt::Debug {
    /// The observer for a region of `table`, whose indexes are `indexes`.
    fn observer(&self, table: &str, indexes: Vec<IndexDescriptor>) -> Arc<dyn WriteObserver>;
}

impl RegionServer {
    /// Starts a region server over the data set at `root`: opens `regions`,
    /// replays the log into them and starts the scheduler (the steps of the
    /// module docs). Region directories of regions neither in `regions` nor
    /// in `keep` (regions retired by a split or merge whose files are still
    /// linked to) are deleted first.
    pub fn start(
        root: &Path,
        options: Options,
        clock: Arc<dyn Clock>,
        files: Arc<dyn FileStore>,
        regions: Vec<RegionSpec>,
        keep: &[(String, u64)],
        placement: &WalPlacement,
    ) -> Result<(RegionServer, RecoveryReport)> {
        // On shared storage the epoch comes first: the stores fence their
        // manifests with it as they open (step 3 of the fencing protocol,
        // docs/object-storage.md).
        let claim = match placement {
            WalPlacement::Local => None,
            WalPlacement::FileStore(wal) => Some(ObjectWal::claim_with(
                Arc::clone(&files),
                root,
                wal.objects_in_flight,
            )?),
        };
        let (context, budget) = shared_context(
            root,
            &options,
            files,
            claim.as_ref().map(|c| Arc::clone(c.fence())),
        );
        let live: HashSet<PathBuf> = regions
            .iter()
            .map(|s| layout::region_dir(root, &s.info.table, s.info.id))
            .chain(keep.iter().map(|(t, id)| layout::region_dir(root, t, *id)))
            .collect();
        remove_orphaned_regions(context.files.as_ref(), root, &live)?;

        let mut opened: HashMap<u64, Region> = HashMap::new();
        for spec in regions {
            let region = open_or_fail(root, spec, &context, &clock, &options);
            opened.insert(region.info().id, region);
        }
        if let Some(fence) = &context.fence {
            // A store found a newer epoch's manifest: another process owns
            // the data now. Refuse to start rather than serve FAILED_OPEN.
            fence.check()?;
        }
        let mut replayed_max: HashMap<u64, u64> = HashMap::new();
        let (mut skipped, mut replayed) = (0u64, 0u64);
        let apply = |edit: WalEdit| {
            match opened.get(&edit.region_id) {
                Some(region) => {
                    region.replay(&edit);
                    let max = replayed_max.entry(edit.region_id).or_insert(0);
                    *max = (*max).max(edit.sequence_id);
                    replayed += 1;
                }
                None => skipped += 1,
            }
            Ok(())
        };
        let (wal, report): (Arc<dyn WriteAheadLog>, ReplayReport) = match (placement, claim) {
            (WalPlacement::FileStore(wal_options), Some(claim)) => {
                let (wal, report) =
                    ObjectWal::open(claim, options.object_wal_options(wal_options), apply)?;
                (wal, report)
            }
            _ => {
                let (wal, report) =
                    Wal::open(&layout::wal_dir(root), options.wal_options(), apply)?;
                (wal, report)
            }
        };
        let maintenance = start_maintenance(&wal, &budget, &options);
        let mut online = HashMap::with_capacity(opened.len());
        for (id, mut region) in opened {
            region.finish_recovery(replayed_max.get(&id).copied().unwrap_or(0));
            region.attach_wal(Arc::clone(&wal));
            let region = Arc::new(region);
            maintenance.register(&region);
            maintenance.check_compaction_after_open(&region);
            online.insert(id, region);
        }
        let recovery = recovery_report(&report, replayed, skipped);
        if recovery.edits_replayed > 0 || recovery.torn_tail.is_some() {
            tracing::info!(
                dir = %root.display(),
                replayed = recovery.edits_replayed,
                skipped = recovery.edits_skipped,
                torn_tail = ?recovery.torn_tail,
                "recovered from the write-ahead log"
            );
        }
        let server = RegionServer {
            root: root.to_path_buf(),
            options,
            clock,
            context,
            budget,
            wal,
            maintenance,
            online: RwLock::new(online),
            opening: Mutex::new(HashSet::new()),
            moved_away: Mutex::new(HashMap::new()),
            epochs: Mutex::new(HashMap::new()),
            retired: Mutex::new(RetiredLoad::default()),
            shut_down: AtomicBool::new(false),
            in_process: AtomicBool::new(false),
            index_keeping: OnceLock::new(),
        };
        Ok((server, recovery))
    }

    /// Starts a cluster member over the shared data set at `root`: claims
    /// its own log (the epoch it claims is its process epoch, the log's
    /// id), starts that log without touching any other log (they belong to
    /// other servers, live or dead: the master deals with those) and the
    /// scheduler. It opens no region: the master assigns them
    /// ([`RegionServer::open_assigned`]). [`RegionServer::fence`] is the
    /// process fence, which its log's fencing trips.
    pub fn start_member(
        root: &Path,
        options: Options,
        clock: Arc<dyn Clock>,
        files: Arc<dyn FileStore>,
        wal: ObjectWalOptions,
    ) -> Result<RegionServer> {
        let claim = ObjectWal::claim_with(Arc::clone(&files), root, wal.objects_in_flight)?;
        let (context, budget) =
            shared_context(root, &options, files, Some(Arc::clone(claim.fence())));
        let own: Arc<dyn WriteAheadLog> =
            ObjectWal::open_own(claim, options.object_wal_options(&wal))?;
        let maintenance = start_maintenance(&own, &budget, &options);
        tracing::info!(
            dir = %root.display(),
            epoch = context.fence.as_ref().map_or(0, |f| f.epoch()),
            "region server joined the cluster's storage"
        );
        Ok(RegionServer {
            root: root.to_path_buf(),
            options,
            clock,
            context,
            budget,
            wal: own,
            maintenance,
            online: RwLock::new(HashMap::new()),
            opening: Mutex::new(HashSet::new()),
            moved_away: Mutex::new(HashMap::new()),
            epochs: Mutex::new(HashMap::new()),
            retired: Mutex::new(RetiredLoad::default()),
            shut_down: AtomicBool::new(false),
            in_process: AtomicBool::new(false),
            index_keeping: OnceLock::new(),
        })
    }

    /// Opens a region the master assigned to this server, at the
    /// assignment's region epoch, recovering its edits from the logs of
    /// dead servers: the steps of the module docs ("Cluster mode"). Dead
    /// servers' logs need shared storage (a process fence); a local data
    /// directory opens regions at an epoch with nothing to replay (one
    /// process, `cluster::in_process`). A region already online (or
    /// being opened) here is [`Error::InvalidArgument`]. A manifest of a
    /// newer opening is [`Error::Fenced`] and nothing is served; any
    /// failure leaves the region closed here, for the master to assign
    /// again at a new epoch.
    pub fn open_assigned(&self, assignment: RegionAssignment) -> Result<Arc<Region>> {
        self.check_running()?;
        let RegionAssignment {
            spec,
            epoch,
            mut recover_from,
        } = assignment;
        let id = spec.info.id;
        let name = spec.info.encoded_name();
        let spec_indexes = spec.indexes.clone();
        let server_fence = match self.context.fence.clone() {
            Some(fence) => fence,
            // A local data directory (one process): its lock keeps every
            // other process out, so nothing can collide with the region's
            // epoch, and the only log is this server's own.
            None if recover_from.is_empty() => Arc::new(Fence::new(0)),
            None => {
                return Err(Error::invalid(format!(
                    "region {name} cannot replay other servers' logs: this server's data is not on shared storage"
                )))
            }
        };
        server_fence.check()?;
        if epoch == 0 {
            // Epoch 0 is a local data directory's: it fences nothing.
            return Err(Error::invalid(format!(
                "region {name} assigned at epoch 0: region epochs start at 1"
            )));
        }
        let _opening = OpeningGuard::begin(self, id, &name)?;

        // Step 1: the region's own fence, under the server's.
        let fence = self.region_fence(epoch, server_fence);
        let context = StoreContext {
            fence: Some(Arc::clone(&fence)),
            ..self.context.clone()
        };
        // Step 2: its stores fence their manifests with the region epoch
        // (a newer opening's manifest trips the fence: `Error::Fenced`).
        let mut region = open_region(&self.root, spec, &context, &self.clock, &self.options)?;
        fence.check()?;

        // Step 3: its edits from the dead servers' logs, oldest log first,
        // so a later edit of a cell is applied after an earlier one.
        recover_from.sort_unstable();
        recover_from.dedup();
        let (mut max_replayed, mut applied) = (0u64, 0u64);
        for &log in &recover_from {
            replay_log(
                self.context.files.as_ref(),
                &self.root,
                log,
                |edit: WalEdit| {
                    if edit.region_id == id {
                        max_replayed = max_replayed.max(edit.sequence_id);
                        if region.replay(&edit) {
                            applied += 1;
                        }
                    }
                    Ok(())
                },
            )?;
        }

        // Step 4: sequence ids above everything it holds, then the flush
        // that makes the dead logs unneeded for it.
        region.finish_recovery(max_replayed);
        if applied > 0 {
            region.flush()?;
        }

        // Step 5: serve. A newer opening may have fenced this one while it
        // replayed: then it serves nothing.
        fence.check()?;
        region.attach_wal(Arc::clone(&self.wal));
        self.keep_indexes(&region, &spec_indexes);
        let region = Arc::new(region);
        self.maintenance.register(&region);
        // A split's daughter or a merged region rewrites its links into
        // files of its own first (at once where maintenance runs inline);
        // the others (a clone's links to a snapshot's files among them) as
        // the compaction policy decides.
        if region.has_parent_links() {
            self.maintenance.request_compaction(id);
        } else {
            self.maintenance.check_compaction_after_open(&region);
        }
        self.moved_away.lock().remove(&id);
        self.epochs.lock().insert(id, epoch);
        self.online.write().insert(id, Arc::clone(&region));
        tracing::info!(
            region = %name,
            epoch,
            logs = ?recover_from,
            edits_replayed = applied,
            "opened an assigned region"
        );
        Ok(region)
    }

    /// Sets what keeps indexes: from then on every region opened here
    /// keeps its table's indexes.
    pub(crate) fn set_index_keeping(&self, keeping: Arc<dyn IndexKeeping>) {
        // Set once per process; a second call comes from the same layer.
        let _ = self.index_keeping.set(keeping);
    }

    /// Has the regions open before the index keeping was set (those
    /// [`RegionServer::start`] opened) keep the indexes `indexes_of`
    /// names for their tables.
    pub(crate) fn keep_indexes_of_open_regions(
        &self,
        indexes_of: impl Fn(&str) -> Vec<IndexDescriptor>,
    ) {
        for region in self.online_regions() {
            self.keep_indexes(&region, &indexes_of(&region.info().table));
        }
    }

    /// Installs the observer that keeps `indexes` with `region`'s writes
    /// (none for a table without indexes).
    fn keep_indexes(&self, region: &Region, indexes: &[IndexDescriptor]) {
        let observer = match self.index_keeping.get() {
            Some(keeping) if !indexes.is_empty() => {
                Some(keeping.observer(&region.info().table, indexes.to_vec()))
            }
            _ => None,
        };
        region.set_write_observer(observer);
    }

    /// Closes region `id` so that another server can open it (a move):
    /// stops its writes (refused with `NotServingRegion`, which sends
    /// clients back to the locator) and compactions, flushes it, then
    /// closes it as [`RegionServer::close_region`] does. After it, no edit
    /// of the region is only in this server's log, and retirement treats
    /// its edits there as flushed. A failed flush fails the call and
    /// leaves the region online and serving; a region not online here is
    /// `NotServingRegion`.
    pub fn close_for_move(&self, id: u64) -> Result<()> {
        let Some(region) = self.region(id) else {
            return Err(Error::NotServingRegion(format!(
                "region {id} is not online on this server"
            )));
        };
        // A region closed for a split or merge that is being rolled back is
        // already flushed and refuses writes: it only has to go.
        if region.is_serving() || region.open_failure().is_some() {
            region.close_for_handover()?;
        }
        // Recorded before it leaves the open set, so retirement always
        // finds it one way or the other.
        self.moved_away.lock().insert(id, region.flushed_through());
        self.close_region(id);
        // Log objects only it kept are retired now rather than at the next
        // flush of another region.
        if let Err(e) = self.maintenance.retire_wal() {
            tracing::warn!(region = id, error = %e, "could not retire the log after a move");
        }
        tracing::info!(region = %region.info().encoded_name(), "closed a region for a move");
        Ok(())
    }

    /// Closes region `id`, closed for writes and flushed by a split or
    /// merge its successors now serve; as after a move, retirement treats
    /// its edits in this server's log as flushed. Not open here: nothing.
    pub fn close_handed_over(&self, id: u64) {
        let Some(region) = self.region(id) else {
            return;
        };
        self.moved_away.lock().insert(id, region.flushed_through());
        self.close_region(id);
        tracing::info!(region = %region.info().encoded_name(), "closed a region its successors replaced");
    }

    /// The sequence id region `id`, closed here for a move (or an alter),
    /// was flushed through; `None` when it was not closed that way.
    pub(crate) fn closed_through(&self, id: u64) -> Option<u64> {
        self.moved_away.lock().get(&id).copied()
    }

    /// Makes this the one region server of a process (`cluster::in_process`).
    pub(crate) fn serve_in_process(&self) {
        self.in_process.store(true, Ordering::SeqCst);
    }

    /// The fence the stores of a region opened at region epoch
    /// `region_epoch` write their manifests under, `process` being this
    /// server's: in a cluster the region's own, at that epoch (a newer
    /// opening elsewhere trips it alone); in one process the process's
    /// fence itself, as for the regions it opens at start, so every
    /// manifest one process writes carries its epoch, the next process to
    /// open the storage claims an epoch above them all (region epochs
    /// count assignments, not processes), and a collision fences the
    /// whole process.
    pub(crate) fn region_fence(&self, region_epoch: u64, process: Arc<Fence>) -> Arc<Fence> {
        if self.in_process.load(Ordering::SeqCst) {
            process
        } else {
            Arc::new(Fence::child(region_epoch, process))
        }
    }

    /// One process: region `id`, opened at start, is held at region epoch
    /// `epoch` from now on (the catalog's, as the master adopted it), as if
    /// [`RegionServer::open_assigned`] had opened it there.
    pub(crate) fn adopt_epoch(&self, id: u64, epoch: u64) {
        self.epochs.lock().insert(id, epoch);
    }

    /// Installs what the master does after a flush or compaction (once).
    pub(crate) fn set_hooks(&self, hooks: Arc<dyn MaintenanceHooks>) {
        self.maintenance.set_hooks(hooks);
    }

    /// The last load-based split decisions of this server, oldest first.
    pub fn load_split_events(&self) -> Vec<LoadSplitEvent> {
        self.maintenance.load_split_events()
    }

    /// Opens a region that has no edits in the log (a new table's, a split
    /// daughter, a merged region) and starts serving it. Its stores are
    /// fenced with the process epoch: a cluster member opens regions with
    /// [`RegionServer::open_assigned`] instead, at a region epoch.
    pub fn open_region(&self, spec: RegionSpec) -> Result<Arc<Region>> {
        self.check_running()?;
        let spec_indexes = spec.indexes.clone();
        let mut region = open_region(&self.root, spec, &self.context, &self.clock, &self.options)?;
        region.finish_recovery(0);
        region.attach_wal(Arc::clone(&self.wal));
        self.keep_indexes(&region, &spec_indexes);
        let region = Arc::new(region);
        self.maintenance.register(&region);
        self.online
            .write()
            .insert(region.info().id, Arc::clone(&region));
        Ok(region)
    }

    /// The open region `id`.
    pub fn region(&self, id: u64) -> Option<Arc<Region>> {
        self.online.read().get(&id).cloned()
    }

    /// Every open region, in no particular order.
    pub fn online_regions(&self) -> Vec<Arc<Region>> {
        self.online.read().values().cloned().collect()
    }

    /// Stops serving region `id` here: the scheduler forgets it and it
    /// leaves the open set. Its files stay (a successor may link to them);
    /// handles still held keep reading its frozen data.
    ///
    /// Every way a region leaves this server ends here (a move, an
    /// unassignment, a split or merge parent replaced, a table disabled,
    /// truncated or dropped: [`RegionServer::close_for_move`],
    /// [`RegionServer::close_handed_over`], [`RegionServer::destroy_region`]
    /// call it), so this is where its final request totals are folded into
    /// the retired load ([`RegionServer::regions_and_retired_load`]): the
    /// server's and table's totals never go down.
    pub fn close_region(&self, id: u64) -> Option<Arc<Region>> {
        self.maintenance.unregister(id);
        self.epochs.lock().remove(&id);
        let mut online = self.online.write();
        let closed = online.remove(&id);
        if let Some(region) = &closed {
            // Under the open set's lock: a reader sees the region open or
            // retired, never both and never neither.
            self.retired
                .lock()
                .fold(&region.info().table, &region.load());
        }
        closed
    }

    /// Every open region and the totals of those that left, taken together
    /// so that no region is counted twice or missed (the metrics' sums).
    pub fn regions_and_retired_load(&self) -> (Vec<Arc<Region>>, RetiredLoad) {
        let online = self.online.read();
        let retired = self.retired.lock().clone();
        (online.values().cloned().collect(), retired)
    }

    /// Cluster mode: the region epoch region `id` was opened at here
    /// (`None`: not open here, or opened without one).
    pub fn region_epoch(&self, id: u64) -> Option<u64> {
        self.epochs.lock().get(&id).copied()
    }

    /// Closes region `id` of `table` (if open) and deletes its files.
    pub fn destroy_region(&self, table: &str, id: u64) {
        self.close_region(id);
        let dir = layout::region_dir(&self.root, table, id);
        if let Err(e) = self.context.files.delete_prefix(&dir) {
            // The next start removes it as an orphan.
            tracing::warn!(dir = %dir.display(), error = %e, "could not delete the files of a region");
        }
    }

    /// Flushes region `id` now, then runs what follows a flush (WAL
    /// retirement, compaction, the master's split check).
    pub fn flush_region(&self, id: u64) -> Result<()> {
        self.maintenance.flush_region(id)
    }

    /// Asks for a minor compaction of region `id` in the background.
    pub fn request_compaction(&self, id: u64) {
        self.maintenance.request_compaction(id);
    }

    /// Hits, misses and size of the block cache shared by all stores.
    pub fn block_cache_stats(&self) -> BlockCacheStats {
        self.context
            .cache
            .as_ref()
            .map(|c| c.stats())
            .unwrap_or_default()
    }

    /// Bytes the memstores of all regions hold now (active, and snapshots
    /// being flushed), plus what writes in flight have reserved.
    pub fn memstore_bytes(&self) -> usize {
        self.budget.total()
    }

    /// The most bytes memstores ever held together since the start: never
    /// above `global_memstore_bytes`, except by WAL replay at start-up or
    /// a single write larger than the limit (see `basalt_engine::memory`).
    pub fn memstore_high_water_bytes(&self) -> usize {
        self.budget.high_water_bytes()
    }

    /// The global memstore budget (limits, writes held and slowed so far).
    pub fn memstore_budget(&self) -> &Arc<MemstoreBudget> {
        &self.budget
    }

    /// Counters of this server's write-ahead log since it opened.
    pub fn wal_stats(&self) -> WalStats {
        self.wal.stats()
    }

    /// Flushes and compactions queued for a background thread now (HBase's
    /// flush and compaction queue lengths) and running on one; all 0 when
    /// work runs inline.
    pub fn maintenance_activity(&self) -> MaintenanceActivity {
        self.maintenance.activity()
    }

    /// The file store, block cache and compaction policy regions share.
    pub fn store_context(&self) -> &StoreContext {
        &self.context
    }

    /// On shared storage: this process's epoch, and whether another
    /// process has fenced it (none for a local data directory).
    pub fn fence(&self) -> Option<&Arc<Fence>> {
        self.context.fence.as_ref()
    }

    /// The data set's root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Stops background work, flushes every region (as HBase does when it
    /// closes a region: the next start replays less), closes the log and
    /// then retires every segment whose edits are all in store files: the
    /// last (active) one too, since closing sealed it. After a clean stop
    /// with every region flushed, the log is empty, so no damage to an old
    /// segment can block the next start. Segments holding edits of a
    /// region that did not flush, is `FAILED_OPEN` or was dropped since
    /// the open stay. Acknowledged
    /// writes are safe whatever fails here: they are in the log.
    pub fn shutdown(&self) -> Result<()> {
        if self.shut_down.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        // Writers waiting for memstore room fail with `Closed` instead of
        // waiting for flushes that will no longer be scheduled.
        self.budget.close();
        self.maintenance.shutdown();
        for region in self.online_regions() {
            if region.open_failure().is_some() {
                continue;
            }
            if let Err(e) = region.flush() {
                tracing::warn!(region = region.info().id, error = %e, "flush at close failed; the WAL keeps the data");
            }
        }
        let closed = self.wal.close();
        if closed.is_ok() {
            // Only segments whose every region is open here and flushed
            // past them: one still holding edits of a region dropped since
            // the open stays for the next start to skip and report.
            let online = self.online.read();
            let moved_away = self.moved_away.lock();
            let retired = self.wal.retire_flushed(&|region_id| {
                Some(
                    online
                        .get(&region_id)
                        .map(|r| r.flushed_through())
                        .or_else(|| moved_away.get(&region_id).copied())
                        .unwrap_or(0),
                )
            });
            if let Err(e) = retired {
                tracing::warn!(error = %e, "could not retire WAL segments at close");
            }
        }
        closed
    }

    /// The regions that could not be opened (`FAILED_OPEN`), with why.
    pub fn failed_regions(&self) -> Vec<Arc<Region>> {
        let mut failed: Vec<Arc<Region>> = self
            .online
            .read()
            .values()
            .filter(|r| r.open_failure().is_some())
            .cloned()
            .collect();
        failed.sort_by_key(|r| r.info().id);
        failed
    }

    fn check_running(&self) -> Result<()> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(Error::Closed(format!(
                "region server of {}",
                self.root.display()
            )));
        }
        Ok(())
    }
}

impl Drop for RegionServer {
    fn drop(&mut self) {
        // No flush will be scheduled any more: writers still holding
        // regions must not wait for memstore room forever.
        self.budget.close();
        if !self.shut_down.load(Ordering::SeqCst) {
            if let Err(e) = self.wal.close() {
                tracing::warn!(error = %e, "closing the write-ahead log failed");
            }
        }
    }
}

/// Marks a region as being opened by `open_assigned` until dropped, so
/// that two openings of one region on one server cannot race.
struct OpeningGuard<'a> {
    server: &'a RegionServer,
    id: u64,
}

impl<'a> OpeningGuard<'a> {
    fn begin(server: &'a RegionServer, id: u64, name: &str) -> Result<OpeningGuard<'a>> {
        let mut opening = server.opening.lock();
        if server.online.read().contains_key(&id) || !opening.insert(id) {
            return Err(Error::invalid(format!(
                "region {name} (id {id}) is already online on this server"
            )));
        }
        Ok(OpeningGuard { server, id })
    }
}

impl Drop for OpeningGuard<'_> {
    fn drop(&mut self) {
        self.server.opening.lock().remove(&self.id);
    }
}

/// What the regions of one server share: the file store, a block cache,
/// the compaction policy, the global memstore budget, and the process
/// fence on shared storage.
fn shared_context(
    root: &Path,
    options: &Options,
    files: Arc<dyn FileStore>,
    fence: Option<Arc<Fence>>,
) -> (StoreContext, Arc<MemstoreBudget>) {
    // Every deletion of a store file by this server (a compaction's
    // replaced inputs, a store's orphans at open, a dropped family, a
    // destroyed region) goes through the snapshot references.
    let files: Arc<dyn FileStore> = Arc::new(RetainingFileStore::new(
        files,
        root,
        options.snapshot_manifest_max_bytes,
    ));
    let budget = MemstoreBudget::new(options.memstore_budget_limits());
    let context = StoreContext {
        files,
        cache: Some(Arc::new(BlockCache::new(options.block_cache_size()))),
        policy: options.compaction_policy(),
        memory: Some(Arc::clone(&budget)),
        fence,
        work: Arc::default(),
    };
    (context, budget)
}

/// The scheduler over `wal`, relieving the memstore budget when it asks.
fn start_maintenance(
    wal: &Arc<dyn WriteAheadLog>,
    budget: &Arc<MemstoreBudget>,
    options: &Options,
) -> Arc<Maintenance> {
    let maintenance = Maintenance::start(
        Arc::clone(wal),
        options.background_threads,
        options.compaction_nice,
        options.load_split_config(),
        options.load_split_events_kept,
    );
    let weak_maintenance = Arc::downgrade(&maintenance);
    let weak_budget = Arc::downgrade(budget);
    budget.set_pressure_handler(Arc::new(move |target| {
        if let (Some(m), Some(b)) = (weak_maintenance.upgrade(), weak_budget.upgrade()) {
            m.relieve_memory(&b, target);
        }
    }));
    maintenance
}

/// Opens a region at start-up; a region whose files cannot be opened is
/// marked `FAILED_OPEN` (as HBase's assignment does) instead of failing
/// the start, so one damaged file takes down one region, not the database.
fn open_or_fail(
    root: &Path,
    spec: RegionSpec,
    context: &StoreContext,
    clock: &Arc<dyn Clock>,
    options: &Options,
) -> Region {
    let info = spec.info.clone();
    match open_region(root, spec, context, clock, options) {
        Ok(region) => region,
        Err(e) => {
            let dir = layout::region_dir(root, &info.table, info.id);
            let failure = OpenFailure::from_error(&e, &dir);
            tracing::error!(
                region = %info.encoded_name(),
                table = %info.table,
                file = %failure.path.display(),
                offset = failure.offset,
                error = %e,
                "region FAILED_OPEN: its reads and writes are refused until it is repaired"
            );
            Region::failed_open(
                info,
                dir,
                context.clone(),
                Arc::clone(clock),
                options.region_config(),
                failure,
            )
        }
    }
}

fn open_region(
    root: &Path,
    spec: RegionSpec,
    context: &StoreContext,
    clock: &Arc<dyn Clock>,
    options: &Options,
) -> Result<Region> {
    let dir = layout::region_dir(root, &spec.info.table, spec.info.id);
    Region::open(
        spec.info,
        spec.families,
        dir,
        context.clone(),
        Arc::clone(clock),
        options.region_config(),
    )
}

/// Deletes region directories that are not in `live`: left by a crash
/// between a catalog change (drop, truncate, the janitor, an abandoned
/// split) and the deletion of the files. Returns how many went. A region
/// server runs it at start; a cluster's master from its janitor chore.
pub(crate) fn remove_orphaned_regions(
    files: &dyn FileStore,
    root: &Path,
    live: &HashSet<PathBuf>,
) -> Result<usize> {
    let mut removed = 0;
    for namespace in files.list_dirs(&layout::data_dir(root))? {
        for table in files.list_dirs(&namespace)? {
            for region in files.list_dirs(&table)? {
                if !live.contains(&region) {
                    tracing::info!(dir = %region.display(), "removing the files of a region no longer in the catalog");
                    files.delete_prefix(&region)?;
                    removed += 1;
                }
            }
        }
    }
    Ok(removed)
}

fn recovery_report(report: &ReplayReport, replayed: u64, skipped: u64) -> RecoveryReport {
    RecoveryReport {
        segments: report.segments,
        edits_replayed: replayed,
        edits_skipped: skipped,
        torn_tail: report
            .torn_tail
            .as_ref()
            .map(|t| (t.path.clone(), t.offset)),
    }
}
