//! Background work: flushes, the compactions they trigger (and the check
//! for one after a region opens, as HBase does), retiring WAL
//! segments that every region has flushed past, and the region work that
//! follows them (the split check after a flush, the catalog janitor after a
//! compaction), which the database supplies as [`MaintenanceHooks`].
//!
//! All of it runs through one scheduler. With `background_threads = 0` the
//! work runs in the thread that asked for it, so tests are deterministic;
//! otherwise a small pool of threads takes requests from two queues, and a
//! region that asks again while its flush (or compaction) is queued is not
//! queued twice.
//!
//! Flushes come before compactions: memory is only returned by flushes,
//! and writers wait for it (the region's blocking size, the global memstore
//! budget), while a compaction only makes reads cheaper. So every worker
//! takes a queued flush before a queued compaction, a background flush
//! queues its follow-up compaction instead of running it, and with two or
//! more threads the first one only flushes: a flush never waits behind
//! compactions that occupy every thread (HBase keeps separate flush and
//! compaction threads for the same reason).
//!
//! Threads that may compact can run at a lower CPU priority
//! (`Options::compaction_nice`, Linux's nice value of the thread, off by
//! default): on a machine with few cores a compaction could take whole
//! time slices from foreground reads. The flush-only thread keeps the
//! process's priority: writers wait for flushes, not for compactions.
//! RocksDB offers the same for its compaction pool. Measured on issue
//! 30's YCSB runs it changed nothing (the read tail there had another
//! cause), so it stays a choice.
//!
//! Load-based splits (`basalt_engine::load_split`) come here too: a
//! region's recorder asks when its load has stayed high for enough
//! windows, and the decision (the split row, or why not) is taken by a
//! worker that does not only flush, after the flushes and before the
//! compactions (a split is quick: it links, never copies), or inline
//! without workers. The split itself is the database's, through
//! [`MaintenanceHooks::load_split`]; every decision is kept in the
//! scheduler's [`LoadSplitLog`].
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};

use basalt_engine::load_split::{LoadSplitConfig, LoadSplitEvent, LoadSplitLog, LoadSplitProposal};
use basalt_engine::memory::MemstoreBudget;
use basalt_engine::wal::WriteAheadLog;
use basalt_engine::{FlushRequester, Region};
use basalt_types::Result;

/// Work waiting for a thread. Invariant: a region id is in `flushes`
/// exactly when it is in `queued_flushes` (likewise for compactions), so a
/// region is never queued twice for the same work.
#[derive(Debug, Default)]
struct Queues {
    flushes: VecDeque<u64>,
    compactions: VecDeque<u64>,
    load_splits: VecDeque<u64>,
    queued_flushes: HashSet<u64>,
    queued_compactions: HashSet<u64>,
    queued_load_splits: HashSet<u64>,
    /// Set by `shutdown`: workers finish what is queued, then stop.
    stopping: bool,
}

enum Task {
    Flush(u64),
    Compact(u64),
    LoadSplit(u64),
}

#[derive(Debug, Default)]
struct WorkQueue {
    queues: Mutex<Queues>,
    /// Signalled when work is queued or the scheduler stops.
    work: Condvar,
}

impl WorkQueue {
    /// The next task for a worker, flushes first; `None` once stopping
    /// with nothing left it may take.
    fn next_task(&self, flush_only: bool) -> Option<Task> {
        let mut queues = self.queues.lock();
        loop {
            if let Some(id) = queues.flushes.pop_front() {
                queues.queued_flushes.remove(&id);
                return Some(Task::Flush(id));
            }
            if !flush_only {
                if let Some(id) = queues.load_splits.pop_front() {
                    queues.queued_load_splits.remove(&id);
                    return Some(Task::LoadSplit(id));
                }
                if let Some(id) = queues.compactions.pop_front() {
                    queues.queued_compactions.remove(&id);
                    return Some(Task::Compact(id));
                }
            }
            if queues.stopping {
                return None;
            }
            self.work.wait(&mut queues);
        }
    }

    fn stop(&self) {
        let mut queues = self.queues.lock();
        queues.stopping = true;
        self.work.notify_all();
    }
}

/// What the master does after maintenance work on a region.
pub(crate) trait MaintenanceHooks: Send + Sync + std::fmt::Debug {
    /// After a flush: split the region if it has grown past the split size.
    fn after_flush(&self, region: &Arc<Region>);
    /// After a compaction rewrote files: parents nobody links to can go.
    fn after_compaction(&self, region: &Arc<Region>);
    /// The load chose a split row for `region`: split there unless the
    /// region or its table cannot split now (a split or merge running,
    /// links to a parent's files, a disabled table, the table's region
    /// limit), which is noted in `events` as a quiet refusal. The outcome
    /// goes to `events` too.
    fn load_split(
        &self,
        region: &Arc<Region>,
        proposal: &LoadSplitProposal,
        events: &Arc<LoadSplitLog>,
    );
}

/// The scheduler and the registry of open regions it serves.
#[derive(Debug)]
pub(crate) struct Maintenance {
    regions: RwLock<HashMap<u64, Weak<Region>>>,
    wal: Arc<dyn WriteAheadLog>,
    /// Shared with the workers, which wait on it without keeping the
    /// scheduler alive (dropping it stops them).
    queue: Arc<WorkQueue>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// Background threads are running (otherwise work runs in the
    /// caller's thread).
    background: AtomicBool,
    hooks: OnceLock<Arc<dyn MaintenanceHooks>>,
    /// What every region registered here samples its load with.
    load_split: LoadSplitConfig,
    /// The last load-based split decisions.
    load_split_events: Arc<LoadSplitLog>,
    /// Flushes and compactions a worker is running now.
    running: Arc<RunningWork>,
}

/// Background work in progress, for the server's metrics (a benchmark's
/// timeline puts it beside its slow operations).
#[derive(Debug, Default)]
struct RunningWork {
    flushes: AtomicUsize,
    compactions: AtomicUsize,
}

/// The scheduler's work now: queued and running.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaintenanceActivity {
    /// Flushes waiting for a thread (HBase's flush queue length).
    pub queued_flushes: usize,
    /// Compactions waiting for a thread (HBase's compaction queue length).
    pub queued_compactions: usize,
    /// Flushes a background thread is running.
    pub running_flushes: usize,
    /// Compactions a background thread is running.
    pub running_compactions: usize,
}

/// Counts a running task for as long as it lives.
struct RunningGuard<'a>(&'a AtomicUsize);

impl<'a> RunningGuard<'a> {
    fn enter(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        Self(counter)
    }
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Maintenance {
    /// A scheduler with `threads` workers (0: run work inline), whose
    /// regions split by load as `load_split` says, keeping the last
    /// `events_kept` decisions; workers that may compact run at nice
    /// value `compaction_nice` (0: the process's priority).
    pub(crate) fn start(
        wal: Arc<dyn WriteAheadLog>,
        threads: usize,
        compaction_nice: i32,
        load_split: LoadSplitConfig,
        events_kept: usize,
    ) -> Arc<Maintenance> {
        let maintenance = Arc::new(Maintenance {
            regions: RwLock::new(HashMap::new()),
            wal,
            queue: Arc::new(WorkQueue::default()),
            workers: Mutex::new(Vec::new()),
            background: AtomicBool::new(false),
            hooks: OnceLock::new(),
            load_split,
            load_split_events: Arc::new(LoadSplitLog::new(events_kept)),
            running: Arc::new(RunningWork::default()),
        });
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let weak = Arc::downgrade(&maintenance);
            let queue = Arc::clone(&maintenance.queue);
            let running = Arc::clone(&maintenance.running);
            // See the module docs: with two or more threads, the first
            // one only flushes, and only the others yield the CPU.
            let flush_only = threads >= 2 && i == 0;
            let nice = if flush_only { 0 } else { compaction_nice };
            let spawned = std::thread::Builder::new()
                .name(format!("basalt-maintenance-{i}"))
                .spawn(move || {
                    lower_this_threads_priority(nice);
                    worker(&weak, &queue, &running, flush_only)
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => tracing::error!(error = %e, "could not start a maintenance thread"),
            }
        }
        // No thread could start: the work runs inline rather than queued
        // for nobody.
        maintenance
            .background
            .store(!handles.is_empty(), Ordering::SeqCst);
        *maintenance.workers.lock() = handles;
        maintenance
    }

    /// Installs the database's hooks (once).
    pub(crate) fn set_hooks(&self, hooks: Arc<dyn MaintenanceHooks>) {
        // A second call would be a caller bug; the first hooks stay.
        let _ = self.hooks.set(hooks);
    }

    /// Makes `region` known to the scheduler and routes its flush requests
    /// and load-based split requests here.
    pub(crate) fn register(self: &Arc<Self>, region: &Arc<Region>) {
        let id = region.info().id;
        self.regions.write().insert(id, Arc::downgrade(region));
        let weak = Arc::downgrade(self);
        region.set_flush_requester(FlushRequester(Arc::new(move |id| {
            if let Some(m) = weak.upgrade() {
                m.request_flush(id);
            }
        })));
        let weak = Arc::downgrade(self);
        region.load_split().enable(
            self.load_split,
            Some(Arc::new(move || {
                if let Some(m) = weak.upgrade() {
                    m.request_load_split(id);
                }
            })),
        );
    }

    /// The last load-based split decisions, oldest first.
    pub(crate) fn load_split_events(&self) -> Vec<LoadSplitEvent> {
        self.load_split_events.events()
    }

    /// A region's recorder says a load-based split decision is due: taken
    /// in the background if there are workers, else now (the recorder
    /// calls from outside the region's locks).
    fn request_load_split(&self, id: u64) {
        if self.background.load(Ordering::SeqCst) {
            let mut queues = self.queue.queues.lock();
            if !queues.stopping && queues.queued_load_splits.insert(id) {
                queues.load_splits.push_back(id);
                self.queue.work.notify_all();
            }
            return;
        }
        self.decide_load_split(id);
    }

    /// Takes region `id`'s decision and hands a split row to the hooks; a
    /// refusal by the load itself (a single hot row) is noted here.
    fn decide_load_split(&self, id: u64) {
        let Some(region) = self.region(id) else {
            return;
        };
        let info = region.info();
        let Some(decision) = region.load_split().decide(&info.start_key, &info.end_key) else {
            return;
        };
        match decision {
            Err(refusal) => self
                .load_split_events
                .note(LoadSplitEvent::refused(info, &refusal), false),
            Ok(proposal) => {
                if let Some(hooks) = self.hooks.get() {
                    hooks.load_split(&region, &proposal, &self.load_split_events);
                }
            }
        }
    }

    /// Forgets a region (dropped or truncated away).
    pub(crate) fn unregister(&self, id: u64) {
        self.regions.write().remove(&id);
    }

    fn region(&self, id: u64) -> Option<Arc<Region>> {
        self.regions.read().get(&id).and_then(Weak::upgrade)
    }

    /// Asks for a flush of region `id`, in the background if there are
    /// workers.
    pub(crate) fn request_flush(&self, id: u64) {
        if self.background.load(Ordering::SeqCst) {
            let mut queues = self.queue.queues.lock();
            if !queues.stopping && queues.queued_flushes.insert(id) {
                queues.flushes.push_back(id);
                self.queue.work.notify_all();
            }
            return;
        }
        if let Err(e) = self.flush_region(id) {
            tracing::warn!(region = id, error = %e, "flush failed; the data stays in the WAL");
        }
    }

    /// The global memstore budget passed its low-water mark (or a writer
    /// waits at its limit): requests flushes of the regions with the
    /// largest memstores until the counted total is expected to be at most
    /// `target` (HBase's flush-largest-first). Snapshots being flushed
    /// right now and regions already queued count as on their way out; a
    /// snapshot a failed flush left counts as flushable (flushing it again
    /// is how a held writer learns that flushes fail).
    pub(crate) fn relieve_memory(&self, budget: &MemstoreBudget, target: usize) {
        let regions: Vec<Arc<Region>> = self
            .regions
            .read()
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        let queued: HashSet<u64> = self.queue.queues.lock().queued_flushes.clone();
        let mut expected = budget.total();
        let mut candidates = Vec::with_capacity(regions.len());
        for region in &regions {
            let (active, snapshot) = region.memstore_parts();
            let id = region.info().id;
            let flushable = if region.is_flushing() {
                expected = expected.saturating_sub(snapshot);
                active
            } else {
                active + snapshot
            };
            if queued.contains(&id) {
                expected = expected.saturating_sub(flushable);
            } else if flushable > 0 {
                candidates.push((flushable, id));
            }
        }
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        for (flushable, id) in candidates {
            if expected <= target {
                break;
            }
            self.request_flush(id);
            expected = expected.saturating_sub(flushable);
        }
    }

    /// Flushes region `id` now, retires the WAL segments that no longer hold
    /// unflushed edits, runs a minor compaction if the region needs one, and
    /// lets the database split it if it grew too large.
    pub(crate) fn flush_region(&self, id: u64) -> Result<()> {
        self.flush_then(id, true)
    }

    /// A flush and what follows it; `compact_inline` false queues the
    /// compaction instead (a background flush: see the module docs).
    fn flush_then(&self, id: u64, compact_inline: bool) -> Result<()> {
        let Some(region) = self.region(id) else {
            return Ok(());
        };
        region.flush()?;
        self.retire_wal()?;
        if compact_inline {
            if region.needs_compaction() && region.compact(false)? {
                self.after_compaction(&region);
            }
        } else if region.needs_compaction() {
            self.request_compaction(id);
        }
        if let Some(hooks) = self.hooks.get() {
            hooks.after_flush(&region);
        }
        Ok(())
    }

    /// Asks for a minor compaction of region `id` (in the background if
    /// there are workers): after a split or merge, it rewrites the links to
    /// the parent's files.
    pub(crate) fn request_compaction(&self, id: u64) {
        if self.background.load(Ordering::SeqCst) {
            let mut queues = self.queue.queues.lock();
            if queues.stopping {
                tracing::warn!(region = id, "compaction not queued: maintenance stopped");
            } else if queues.queued_compactions.insert(id) {
                queues.compactions.push_back(id);
                self.queue.work.notify_all();
            }
            return;
        }
        if let Err(e) = self.compact_region(id) {
            tracing::warn!(region = id, error = %e, "compaction failed");
        }
    }

    /// After a region opens: queues a minor compaction if its files call
    /// for one, as HBase checks after every region open. Without it a
    /// region that is only read after a restart keeps every small file
    /// its last close flushed (no flush comes to trigger the check), and
    /// each point read pays a bloom check and often a block per file.
    /// Without background workers nothing is queued: tests that run
    /// maintenance by hand decide when compactions happen.
    pub(crate) fn check_compaction_after_open(&self, region: &Region) {
        if self.background.load(Ordering::SeqCst) && region.needs_compaction() {
            self.request_compaction(region.info().id);
        }
    }

    fn compact_region(&self, id: u64) -> Result<()> {
        let Some(region) = self.region(id) else {
            return Ok(());
        };
        if region.needs_compaction() && region.compact(false)? {
            self.after_compaction(&region);
        }
        Ok(())
    }

    fn after_compaction(&self, region: &Arc<Region>) {
        if let Some(hooks) = self.hooks.get() {
            hooks.after_compaction(region);
        }
    }

    /// Deletes the WAL segments all of whose edits are in store files (or
    /// belong to regions that no longer exist).
    pub(crate) fn retire_wal(&self) -> Result<usize> {
        let regions = self.regions.read();
        self.wal.retire_flushed(&|region_id| {
            regions
                .get(&region_id)
                .and_then(Weak::upgrade)
                .map(|region| region.flushed_through())
        })
    }

    /// Stops the workers after the work already queued.
    pub(crate) fn shutdown(&self) {
        self.queue.stop();
        let mut workers = self.workers.lock();
        for handle in workers.drain(..) {
            if handle.join().is_err() {
                tracing::error!("a maintenance thread panicked");
            }
        }
    }

    /// Flushes and compactions waiting for a thread and running now
    /// (read-only: for the server's metrics).
    pub(crate) fn activity(&self) -> MaintenanceActivity {
        let (queued_flushes, queued_compactions) = {
            let queues = self.queue.queues.lock();
            (queues.flushes.len(), queues.compactions.len())
        };
        MaintenanceActivity {
            queued_flushes,
            queued_compactions,
            running_flushes: self.running.flushes.load(Ordering::Relaxed),
            running_compactions: self.running.compactions.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Maintenance {
    fn drop(&mut self) {
        // Dropped without `shutdown` (a region server dropped without
        // closing): the workers stop after what is queued. Not joined:
        // the last reference may be a worker's own.
        self.queue.stop();
    }
}

/// Sets the calling thread's nice value to `nice` (clamped to Linux's
/// 0..=19; 0 changes nothing). Raising it needs no privilege; a refusal
/// (a sandbox) is logged and the thread runs at the process's priority.
fn lower_this_threads_priority(nice: i32) {
    let nice = nice.clamp(0, 19);
    if nice == 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // On Linux a thread id names one thread to setpriority(2), so only
        // this thread changes.
        let thread = rustix::thread::gettid();
        if let Err(e) = rustix::process::setpriority_process(Some(thread), nice) {
            tracing::warn!(nice, error = %e, "could not lower a compaction thread's CPU priority");
        }
    }
}

fn worker(
    maintenance: &Weak<Maintenance>,
    queue: &WorkQueue,
    running: &RunningWork,
    flush_only: bool,
) {
    while let Some(task) = queue.next_task(flush_only) {
        let Some(m) = maintenance.upgrade() else {
            return;
        };
        match task {
            Task::Flush(id) => {
                let _running = RunningGuard::enter(&running.flushes);
                if let Err(e) = m.flush_then(id, false) {
                    tracing::warn!(region = id, error = %e, "background flush failed; the data stays in the WAL");
                }
            }
            Task::Compact(id) => {
                let _running = RunningGuard::enter(&running.compactions);
                if let Err(e) = m.compact_region(id) {
                    tracing::warn!(region = id, error = %e, "background compaction failed");
                }
            }
            Task::LoadSplit(id) => m.decide_load_split(id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    fn this_threads_nice() -> i32 {
        rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_compaction_thread_lowers_its_own_priority_and_no_other_threads() {
        let before = this_threads_nice();
        let (inside, zero_left_alone) = std::thread::spawn(move || {
            lower_this_threads_priority(0);
            let untouched = this_threads_nice();
            // Out of range asks for the lowest priority there is (19).
            lower_this_threads_priority(50);
            (this_threads_nice(), untouched)
        })
        .join()
        .unwrap();
        assert_eq!(zero_left_alone, before, "0 changes nothing");
        assert_eq!(inside, 19);
        assert_eq!(
            this_threads_nice(),
            before,
            "the calling thread is unchanged"
        );
    }

    #[test]
    fn running_work_is_counted_while_it_runs() {
        let running = RunningWork::default();
        {
            let _flush = RunningGuard::enter(&running.flushes);
            let _compaction = RunningGuard::enter(&running.compactions);
            assert_eq!(running.flushes.load(Ordering::Relaxed), 1);
            assert_eq!(running.compactions.load(Ordering::Relaxed), 1);
        }
        assert_eq!(running.flushes.load(Ordering::Relaxed), 0);
        assert_eq!(running.compactions.load(Ordering::Relaxed), 0);
    }

    fn queue_with(flushes: &[u64], compactions: &[u64]) -> WorkQueue {
        let queue = WorkQueue::default();
        {
            let mut q = queue.queues.lock();
            for &id in compactions {
                q.queued_compactions.insert(id);
                q.compactions.push_back(id);
            }
            for &id in flushes {
                q.queued_flushes.insert(id);
                q.flushes.push_back(id);
            }
            // Nothing waits: `next_task` returns `None` once empty.
            q.stopping = true;
        }
        queue
    }

    fn drain(queue: &WorkQueue, flush_only: bool) -> Vec<String> {
        std::iter::from_fn(|| queue.next_task(flush_only))
            .map(|t| match t {
                Task::Flush(id) => format!("flush {id}"),
                Task::Compact(id) => format!("compact {id}"),
                Task::LoadSplit(id) => format!("load split {id}"),
            })
            .collect()
    }

    #[test]
    fn queued_flushes_are_taken_before_queued_compactions() {
        let queue = queue_with(&[3, 4], &[1, 2]);
        assert_eq!(
            drain(&queue, false),
            ["flush 3", "flush 4", "compact 1", "compact 2"]
        );
        let q = queue.queues.lock();
        assert!(q.queued_flushes.is_empty() && q.queued_compactions.is_empty());
    }

    #[test]
    fn the_flush_only_worker_leaves_compactions_to_the_others() {
        let queue = queue_with(&[7], &[1]);
        assert_eq!(drain(&queue, true), ["flush 7"]);
        assert_eq!(drain(&queue, false), ["compact 1"]);
    }

    #[test]
    fn load_splits_come_after_flushes_and_before_compactions_and_never_on_the_flush_only_worker() {
        let queue = queue_with(&[7], &[1]);
        {
            let mut q = queue.queues.lock();
            q.queued_load_splits.insert(5);
            q.load_splits.push_back(5);
        }
        assert_eq!(drain(&queue, true), ["flush 7"]);
        assert_eq!(drain(&queue, false), ["load split 5", "compact 1"]);
        assert!(queue.queues.lock().queued_load_splits.is_empty());
    }
}
