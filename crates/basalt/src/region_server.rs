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

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use basalt_engine::block_cache::{BlockCache, BlockCacheStats};
use basalt_engine::fence::Fence;
use basalt_engine::fs::FileStore;
use basalt_engine::layout;
use basalt_engine::memory::MemstoreBudget;
use basalt_engine::wal::{ObjectWal, ObjectWalOptions, ReplayReport, Wal, WalEdit, WriteAheadLog};
use basalt_engine::{Clock, FamilyState, OpenFailure, Region, RegionInfo, StoreContext};
use basalt_types::{Error, Result};

use crate::maintenance::{Maintenance, MaintenanceHooks};
use crate::options::Options;

/// What a region server needs to open a region: its identity and key
/// range, and its families with the sequence id each one's edits start at.
#[derive(Debug, Clone)]
pub struct RegionSpec {
    /// Region id, table and key range.
    pub info: RegionInfo,
    /// The families, as the catalog records them.
    pub families: Vec<FamilyState>,
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
    shut_down: AtomicBool,
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
            WalPlacement::FileStore(_) => Some(ObjectWal::claim(Arc::clone(&files), root)?),
        };
        let budget = MemstoreBudget::new(options.memstore_budget_limits());
        let context = StoreContext {
            files,
            cache: Some(Arc::new(BlockCache::new(options.block_cache_size()))),
            policy: options.compaction_policy(),
            memory: Some(Arc::clone(&budget)),
            fence: claim.as_ref().map(|c| Arc::clone(c.fence())),
        };
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
                let (wal, report) = ObjectWal::open(claim, wal_options.clone(), apply)?;
                (wal, report)
            }
            _ => {
                let (wal, report) =
                    Wal::open(&layout::wal_dir(root), options.wal_options(), apply)?;
                (wal, report)
            }
        };
        let maintenance = Maintenance::start(Arc::clone(&wal), options.background_threads);
        {
            let weak_maintenance = Arc::downgrade(&maintenance);
            let weak_budget = Arc::downgrade(&budget);
            budget.set_pressure_handler(Arc::new(move |target| {
                if let (Some(m), Some(b)) = (weak_maintenance.upgrade(), weak_budget.upgrade()) {
                    m.relieve_memory(&b, target);
                }
            }));
        }
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
            shut_down: AtomicBool::new(false),
        };
        Ok((server, recovery))
    }

    /// Installs what the master does after a flush or compaction (once).
    pub(crate) fn set_hooks(&self, hooks: Arc<dyn MaintenanceHooks>) {
        self.maintenance.set_hooks(hooks);
    }

    /// Opens a region that has no edits in the log (a new table's, a split
    /// daughter, a merged region) and starts serving it.
    pub fn open_region(&self, spec: RegionSpec) -> Result<Arc<Region>> {
        self.check_running()?;
        let mut region = open_region(&self.root, spec, &self.context, &self.clock, &self.options)?;
        region.finish_recovery(0);
        region.attach_wal(Arc::clone(&self.wal));
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
    pub fn close_region(&self, id: u64) -> Option<Arc<Region>> {
        self.maintenance.unregister(id);
        self.online.write().remove(&id)
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
            let retired = self.wal.retire_flushed(&|region_id| {
                Some(online.get(&region_id).map_or(0, |r| r.flushed_through()))
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
/// split) and the deletion of the files.
fn remove_orphaned_regions(
    files: &dyn FileStore,
    root: &Path,
    live: &HashSet<PathBuf>,
) -> Result<()> {
    for namespace in files.list_dirs(&layout::data_dir(root))? {
        for table in files.list_dirs(&namespace)? {
            for region in files.list_dirs(&table)? {
                if !live.contains(&region) {
                    tracing::info!(dir = %region.display(), "removing the files of a region no longer in the catalog");
                    files.delete_prefix(&region)?;
                }
            }
        }
    }
    Ok(())
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
