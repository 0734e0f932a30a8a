//! Background work: flushes, the compactions they trigger, retiring WAL
//! segments that every region has flushed past, and the region work that
//! follows them (the split check after a flush, the catalog janitor after a
//! compaction), which the database supplies as [`MaintenanceHooks`].
//!
//! All of it runs through one scheduler. With `background_threads = 0` the
//! work runs in the thread that asked for it, so tests are deterministic;
//! otherwise a small pool of threads takes requests from a queue, and a
//! region that asks again while its flush is queued is not queued twice.

use std::collections::{HashMap, HashSet};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;

use parking_lot::{Mutex, RwLock};

use basalt_engine::wal::WriteAheadLog;
use basalt_engine::{FlushRequester, Region};
use basalt_types::Result;

enum Task {
    Flush(u64),
    Compact(u64),
    Stop,
}

/// What the master does after maintenance work on a region.
pub(crate) trait MaintenanceHooks: Send + Sync + std::fmt::Debug {
    /// After a flush: split the region if it has grown past the split size.
    fn after_flush(&self, region: &Arc<Region>);
    /// After a compaction rewrote files: parents nobody links to can go.
    fn after_compaction(&self, region: &Arc<Region>);
}

/// The scheduler and the registry of open regions it serves.
#[derive(Debug)]
pub(crate) struct Maintenance {
    regions: RwLock<HashMap<u64, Weak<Region>>>,
    wal: Arc<dyn WriteAheadLog>,
    queue: Mutex<Option<mpsc::Sender<Task>>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    queued: Mutex<HashSet<u64>>,
    hooks: OnceLock<Arc<dyn MaintenanceHooks>>,
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Task::Flush(id) => write!(f, "Flush({id})"),
            Task::Compact(id) => write!(f, "Compact({id})"),
            Task::Stop => f.write_str("Stop"),
        }
    }
}

impl Maintenance {
    /// A scheduler with `threads` workers (0: run work inline).
    pub(crate) fn start(wal: Arc<dyn WriteAheadLog>, threads: usize) -> Arc<Maintenance> {
        let maintenance = Arc::new(Maintenance {
            regions: RwLock::new(HashMap::new()),
            wal,
            queue: Mutex::new(None),
            workers: Mutex::new(Vec::new()),
            queued: Mutex::new(HashSet::new()),
            hooks: OnceLock::new(),
        });
        if threads > 0 {
            let (tx, rx) = mpsc::channel::<Task>();
            let rx = Arc::new(Mutex::new(rx));
            let mut workers = maintenance.workers.lock();
            for i in 0..threads {
                let rx = Arc::clone(&rx);
                let weak = Arc::downgrade(&maintenance);
                let spawned = std::thread::Builder::new()
                    .name(format!("basalt-maintenance-{i}"))
                    .spawn(move || worker(&weak, &rx));
                match spawned {
                    Ok(handle) => workers.push(handle),
                    Err(e) => tracing::error!(error = %e, "could not start a maintenance thread"),
                }
            }
            if !workers.is_empty() {
                *maintenance.queue.lock() = Some(tx);
            }
        }
        maintenance
    }

    /// Installs the database's hooks (once).
    pub(crate) fn set_hooks(&self, hooks: Arc<dyn MaintenanceHooks>) {
        // A second call would be a caller bug; the first hooks stay.
        let _ = self.hooks.set(hooks);
    }

    /// Makes `region` known to the scheduler and routes its flush requests here.
    pub(crate) fn register(self: &Arc<Self>, region: &Arc<Region>) {
        self.regions
            .write()
            .insert(region.info().id, Arc::downgrade(region));
        let weak = Arc::downgrade(self);
        region.set_flush_requester(FlushRequester(Arc::new(move |id| {
            if let Some(m) = weak.upgrade() {
                m.request_flush(id);
            }
        })));
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
        let queue = self.queue.lock().clone();
        match queue {
            Some(tx) => {
                if self.queued.lock().insert(id) && tx.send(Task::Flush(id)).is_err() {
                    self.queued.lock().remove(&id);
                }
            }
            None => {
                if let Err(e) = self.flush_region(id) {
                    tracing::warn!(region = id, error = %e, "flush failed; the data stays in the WAL");
                }
            }
        }
    }

    /// Flushes region `id` now, retires the WAL segments that no longer hold
    /// unflushed edits, runs a minor compaction if the region needs one, and
    /// lets the database split it if it grew too large.
    pub(crate) fn flush_region(&self, id: u64) -> Result<()> {
        let Some(region) = self.region(id) else {
            return Ok(());
        };
        region.flush()?;
        self.retire_wal()?;
        if region.needs_compaction() && region.compact(false)? {
            self.after_compaction(&region);
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
        let queue = self.queue.lock().clone();
        match queue {
            Some(tx) => {
                if tx.send(Task::Compact(id)).is_err() {
                    tracing::warn!(region = id, "compaction not queued: maintenance stopped");
                }
            }
            None => {
                if let Err(e) = self.compact_region(id) {
                    tracing::warn!(region = id, error = %e, "compaction failed");
                }
            }
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
        let queue = self.queue.lock().take();
        let mut workers = self.workers.lock();
        if let Some(tx) = queue {
            for _ in 0..workers.len() {
                let _ = tx.send(Task::Stop);
            }
        }
        for handle in workers.drain(..) {
            if handle.join().is_err() {
                tracing::error!("a maintenance thread panicked");
            }
        }
    }
}

fn worker(maintenance: &Weak<Maintenance>, rx: &Mutex<mpsc::Receiver<Task>>) {
    loop {
        let task = match rx.lock().recv() {
            Ok(task) => task,
            Err(_) => return,
        };
        let Some(m) = maintenance.upgrade() else {
            return;
        };
        match task {
            Task::Flush(id) => {
                m.queued.lock().remove(&id);
                if let Err(e) = m.flush_region(id) {
                    tracing::warn!(region = id, error = %e, "background flush failed; the data stays in the WAL");
                }
            }
            Task::Compact(id) => {
                if let Err(e) = m.compact_region(id) {
                    tracing::warn!(region = id, error = %e, "background compaction failed");
                }
            }
            Task::Stop => return,
        }
    }
}
