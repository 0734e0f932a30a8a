//! The global memstore budget: one limit for the memstores of every region
//! of a server together (HBase's `hbase.regionserver.global.memstore.size`
//! and its lower limit).
//!
//! Each region already flushes at its own flush size and holds its writers
//! at its own blocking size; what no region can see is how much all of
//! them hold together when flushes fall behind. The budget counts that:
//!
//! 1. a write reserves the heap size of its cells before it takes a
//!    sequence id ([`MemstoreBudget::reserve`]); under the low-water mark
//!    this is one atomic add;
//! 2. between the low-water mark and the limit the writer asks for flushes
//!    (the server's pressure handler flushes the largest memstores first)
//!    and is slowed: it waits once, at most `slowdown`, or less if a flush
//!    releases memory meanwhile;
//! 3. at the limit the writer is held until a flush releases memory (a
//!    condition variable, not a sleep loop), however long that takes;
//! 4. the inserted cells move from the reservation to their memstore
//!    ([`MemStore::insert_reserved`](crate::memstore::MemStore)); whatever
//!    the write did not insert goes back when the reservation drops;
//! 5. a memstore's bytes stay counted while it is active and while it is
//!    the snapshot being flushed, and are released when the flush commits
//!    (or when the memstore is dropped: a region closed or dropped).
//!
//! Invariant (what the high-water mark checks): the counted total never
//! passes the limit, because bytes only enter it through a reservation that
//! fits, with two exceptions that cannot be held back: a single write
//! larger than the whole limit is let in when nothing else is counted (it
//! could never fit otherwise), and WAL replay at start-up, which inserts
//! what the log holds before any flush can run.
//!
//! A write is never refused for lack of room: it waits. It fails only when
//! the server closes while it waits (`Closed`), or when a flush attempted
//! while it waited has failed (`RegionTooBusy`, as for a region's own
//! blocking size): room is then not coming by itself, and the writer
//! learns why instead of hanging on a full disk.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use basalt_types::{Error, Result};

/// What a server does when memstores pass the low-water mark: request
/// flushes, largest memstores first, until the counted total is expected
/// to be at most the argument (the low-water mark, or lower when a held
/// writer needs more room than the limit leaves above it). Runs in a
/// writer's thread; it must not wait for flushes unless it runs them
/// itself (no background threads).
pub type PressureHandler = Arc<dyn Fn(usize) + Send + Sync>;

/// `relieve_target` when no run of the pressure handler is wanted.
const NO_REQUEST: usize = usize::MAX;

/// Limits of a [`MemstoreBudget`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetLimits {
    /// Writers are held while the memstores of all regions together would
    /// pass this (HBase's `hbase.regionserver.global.memstore.size`).
    pub limit_bytes: usize,
    /// Above this, flushes of the largest memstores are requested and
    /// writers are slowed (HBase's
    /// `hbase.regionserver.global.memstore.size.lower.limit`, as bytes).
    pub low_water_bytes: usize,
    /// The longest a writer waits between the low-water mark and the limit.
    pub slowdown: Duration,
}

impl BudgetLimits {
    /// `limit_bytes` with the low-water mark at `low_water_fraction` of it
    /// (clamped to 0..=1) and the given slowdown.
    pub fn new(limit_bytes: usize, low_water_fraction: f64, slowdown: Duration) -> Self {
        let limit_bytes = limit_bytes.max(1);
        let fraction = if low_water_fraction.is_finite() {
            low_water_fraction.clamp(0.0, 1.0)
        } else {
            1.0
        };
        BudgetLimits {
            limit_bytes,
            low_water_bytes: ((limit_bytes as f64) * fraction) as usize,
            slowdown,
        }
    }
}

/// The server-wide count of memstore bytes and the wait for room.
pub struct MemstoreBudget {
    limits: BudgetLimits,
    /// Bytes counted: reserved by writes in flight plus held by memstores
    /// (active and snapshots not yet committed).
    total: AtomicUsize,
    /// The largest `total` ever reached.
    high_water: AtomicUsize,
    /// Guards the wait: a releaser takes it before notifying, so a writer
    /// that checked the total under it cannot miss the wake-up.
    wait_lock: Mutex<Held>,
    /// The most bytes a writer held at the limit waits for (0: none held);
    /// written under `wait_lock`, read by every write (`after_write`).
    held_need: AtomicUsize,
    room: Condvar,
    closed: AtomicBool,
    /// Flushes that failed, and the last one's message (see the module docs).
    failed_flushes: AtomicU64,
    last_failure: Mutex<String>,
    /// Writes held at the limit or slowed, since the start (for tests and
    /// metrics).
    held_writes: AtomicU64,
    slowed_writes: AtomicU64,
    pressure: OnceLock<PressureHandler>,
    /// One pressure handler run at a time (see `relieve`), and the lowest
    /// target asked for since the last run.
    relieving: AtomicBool,
    relieve_target: AtomicUsize,
}

/// Writers held at the limit right now.
#[derive(Debug, Default)]
struct Held {
    writers: usize,
    /// The largest reservation among them.
    need: usize,
}

impl std::fmt::Debug for MemstoreBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemstoreBudget")
            .field("limits", &self.limits)
            .field("total", &self.total())
            .field("high_water", &self.high_water_bytes())
            .finish_non_exhaustive()
    }
}

impl MemstoreBudget {
    /// A budget with `limits`, nothing counted yet.
    pub fn new(limits: BudgetLimits) -> Arc<Self> {
        Arc::new(MemstoreBudget {
            limits,
            total: AtomicUsize::new(0),
            high_water: AtomicUsize::new(0),
            wait_lock: Mutex::new(Held::default()),
            held_need: AtomicUsize::new(0),
            room: Condvar::new(),
            closed: AtomicBool::new(false),
            failed_flushes: AtomicU64::new(0),
            last_failure: Mutex::new(String::new()),
            held_writes: AtomicU64::new(0),
            slowed_writes: AtomicU64::new(0),
            pressure: OnceLock::new(),
            relieving: AtomicBool::new(false),
            relieve_target: AtomicUsize::new(NO_REQUEST),
        })
    }

    /// The limits.
    pub fn limits(&self) -> BudgetLimits {
        self.limits
    }

    /// Installs what runs when memstores pass the low-water mark (once).
    pub fn set_pressure_handler(&self, handler: PressureHandler) {
        // A second call would be a caller bug; the first handler stays.
        let _ = self.pressure.set(handler);
    }

    /// Bytes counted now.
    pub fn total(&self) -> usize {
        self.total.load(Ordering::SeqCst)
    }

    /// The most bytes ever counted at once.
    pub fn high_water_bytes(&self) -> usize {
        self.high_water.load(Ordering::SeqCst)
    }

    /// Writes that were held at the limit (waited for a flush).
    pub fn held_writes(&self) -> u64 {
        self.held_writes.load(Ordering::Relaxed)
    }

    /// Writes slowed between the low-water mark and the limit.
    pub fn slowed_writes(&self) -> u64 {
        self.slowed_writes.load(Ordering::Relaxed)
    }

    /// True while the total is above the low-water mark.
    pub fn above_low_water(&self) -> bool {
        self.total() > self.limits.low_water_bytes
    }

    /// Reserves `bytes` for a write, waiting for room as the module docs
    /// describe (steps 1-3). The reservation returns what is not moved
    /// into a memstore when it drops.
    pub fn reserve(self: &Arc<Self>, bytes: usize) -> Result<Reservation> {
        if self.try_add(bytes, self.limits.low_water_bytes) {
            return Ok(self.reservation(bytes));
        }
        let mut held = false;
        let result = self.reserve_slowly(bytes, &mut held);
        if held {
            let mut waiting = self.wait_lock.lock();
            waiting.writers -= 1;
            if waiting.writers == 0 {
                waiting.need = 0;
                self.held_need.store(0, Ordering::SeqCst);
                tracing::info!(counted = self.total(), "held writes resumed");
            }
        }
        result
    }

    /// Steps 2 and 3 of the module docs; sets `held` once the writer is
    /// counted among the held ones.
    fn reserve_slowly(self: &Arc<Self>, bytes: usize, held: &mut bool) -> Result<Reservation> {
        let failures_before = self.failed_flushes.load(Ordering::SeqCst);
        let mut slowed = false;
        loop {
            self.check_open()?;
            // Outside the wait lock: without background threads the
            // handler flushes here, and a flush releases under that lock.
            self.relieve(bytes);
            let mut waiting = self.wait_lock.lock();
            self.check_open()?;
            if self.try_add(bytes, self.limits.low_water_bytes) {
                return Ok(self.reservation(bytes));
            }
            if self.fits(self.total(), bytes, self.limits.limit_bytes) {
                if slowed {
                    if self.try_add(bytes, self.limits.limit_bytes) {
                        return Ok(self.reservation(bytes));
                    }
                    continue;
                }
                // Step 2: one bounded wait, cut short by a release. A
                // failed flush does not fail a write that fits.
                slowed = true;
                self.slowed_writes.fetch_add(1, Ordering::Relaxed);
                if !self.limits.slowdown.is_zero() {
                    self.room.wait_for(&mut waiting, self.limits.slowdown);
                }
                continue;
            }
            // Step 3: held until a release, a failed flush or the close
            // notifies; the loop re-checks each time. Room comes only
            // from flushes, so one failing meanwhile ends the wait.
            self.check_flushes(failures_before)?;
            if !*held {
                *held = true;
                self.held_writes.fetch_add(1, Ordering::Relaxed);
                if waiting.writers == 0 {
                    // Once per episode, as HBase logs "blocking updates".
                    tracing::info!(
                        counted = self.total(),
                        limit = self.limits.limit_bytes,
                        "memstores of all regions are at global_memstore_bytes: \
                         writes are held until flushes make room"
                    );
                }
                waiting.writers += 1;
                waiting.need = waiting.need.max(bytes);
                self.held_need.store(waiting.need, Ordering::SeqCst);
            }
            self.room.wait(&mut waiting);
        }
    }

    /// Counts bytes no write could be held back for (WAL replay).
    pub fn charge(&self, bytes: usize) {
        let total = self.total.fetch_add(bytes, Ordering::SeqCst) + bytes;
        self.high_water.fetch_max(total, Ordering::SeqCst);
    }

    /// Returns bytes (a flushed snapshot, a dropped memstore, the unused
    /// part of a reservation) and wakes the writers waiting for room.
    pub fn release(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let before = self.total.fetch_sub(bytes, Ordering::SeqCst);
        debug_assert!(before >= bytes, "released more than was counted");
        let _guard = self.wait_lock.lock();
        self.room.notify_all();
    }

    /// A flush failed: writers waiting for room learn it (see the module
    /// docs) instead of waiting for a release that may not come.
    pub fn flush_failed(&self, message: &str) {
        *self.last_failure.lock() = message.to_string();
        self.failed_flushes.fetch_add(1, Ordering::SeqCst);
        let _guard = self.wait_lock.lock();
        self.room.notify_all();
    }

    /// The server is closing: waiting writers fail with `Closed`, and so
    /// does every later write that would have to wait.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _guard = self.wait_lock.lock();
        self.room.notify_all();
    }

    /// After a write: past the low-water mark, or while a writer is held,
    /// ask for flushes (the writer that pushed the total there is the one
    /// that notices; without background threads it is also the one that
    /// flushes, which is what releases a held writer then).
    pub fn after_write(&self) {
        let need = self.held_need.load(Ordering::SeqCst);
        if need > 0 || self.above_low_water() {
            self.relieve(need);
        }
    }

    /// Runs the pressure handler with a target that leaves room for `need`
    /// more bytes under the limit (and is at most the low-water mark). One
    /// thread runs it at a time; a thread that finds it running leaves its
    /// target for the runner, which picks it up before it stops, so no
    /// request is lost (without background threads a held writer depends
    /// on some thread flushing).
    fn relieve(&self, need: usize) {
        let Some(handler) = self.pressure.get() else {
            return;
        };
        let target = self
            .limits
            .low_water_bytes
            .min(self.limits.limit_bytes.saturating_sub(need));
        self.relieve_target.fetch_min(target, Ordering::SeqCst);
        loop {
            if self
                .relieving
                .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                return;
            }
            loop {
                let target = self.relieve_target.swap(NO_REQUEST, Ordering::SeqCst);
                if target == NO_REQUEST {
                    break;
                }
                handler(target);
            }
            self.relieving.store(false, Ordering::SeqCst);
            // A target left after the last swap but while `relieving` was
            // still set would be lost: take it.
            if self.relieve_target.load(Ordering::SeqCst) == NO_REQUEST {
                return;
            }
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(Error::Closed(
                "region server (a write was waiting for memstore room)".into(),
            ));
        }
        Ok(())
    }

    fn check_flushes(&self, failures_before: u64) -> Result<()> {
        if self.failed_flushes.load(Ordering::SeqCst) != failures_before {
            return Err(Error::RegionTooBusy(format!(
                "memstores of all regions hold {} bytes (global limit {}) and a flush \
                 meant to make room failed: {}",
                self.total(),
                self.limits.limit_bytes,
                self.last_failure.lock()
            )));
        }
        Ok(())
    }

    /// Whether `bytes` more fit under `ceiling` with `total` counted; a
    /// write larger than the whole limit fits only into an empty budget.
    fn fits(&self, total: usize, bytes: usize, ceiling: usize) -> bool {
        total.saturating_add(bytes) <= ceiling || total == 0
    }

    /// Adds `bytes` if they fit under `ceiling`, atomically.
    fn try_add(&self, bytes: usize, ceiling: usize) -> bool {
        let mut current = self.total.load(Ordering::SeqCst);
        loop {
            if !self.fits(current, bytes, ceiling) {
                return false;
            }
            match self.total.compare_exchange_weak(
                current,
                current + bytes,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => {
                    self.high_water.fetch_max(current + bytes, Ordering::SeqCst);
                    return true;
                }
                Err(seen) => current = seen,
            }
        }
    }

    fn reservation(self: &Arc<Self>, bytes: usize) -> Reservation {
        Reservation {
            budget: Arc::clone(self),
            bytes,
        }
    }
}

/// Bytes a write reserved and has not yet moved into a memstore; the rest
/// goes back to the budget on drop.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<MemstoreBudget>,
    bytes: usize,
}

impl Reservation {
    /// Moves `bytes` of the reservation to a memstore, which now holds them
    /// (the budget's total does not change). Returns how many were covered;
    /// a write never inserts more than it reserved, but if it did, the
    /// excess is charged.
    pub(crate) fn transfer(&mut self, bytes: usize) -> usize {
        let covered = bytes.min(self.bytes);
        self.bytes -= covered;
        if covered < bytes {
            self.budget.charge(bytes - covered);
        }
        covered
    }

    /// The budget this reservation is part of.
    pub fn budget(&self) -> &Arc<MemstoreBudget> {
        &self.budget
    }

    /// Bytes still reserved.
    pub fn remaining(&self) -> usize {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(std::mem::take(&mut self.bytes));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::sync::mpsc;

    fn budget(limit: usize) -> Arc<MemstoreBudget> {
        MemstoreBudget::new(BudgetLimits::new(limit, 0.5, Duration::ZERO))
    }

    #[test]
    fn reservations_under_the_low_water_mark_are_counted_at_once() {
        let b = budget(1000);
        let r = b.reserve(300).unwrap();
        assert_eq!(b.total(), 300);
        assert_eq!(r.remaining(), 300);
        drop(r);
        assert_eq!(b.total(), 0, "an unused reservation goes back");
        assert_eq!(b.high_water_bytes(), 300);
    }

    #[test]
    fn a_transferred_reservation_stays_counted_until_released() {
        let b = budget(1000);
        let mut r = b.reserve(300).unwrap();
        assert_eq!(r.transfer(200), 200);
        drop(r);
        assert_eq!(b.total(), 200, "the memstore holds what was moved");
        b.release(200);
        assert_eq!(b.total(), 0);
    }

    #[test]
    fn a_write_between_low_water_and_the_limit_is_slowed_not_held() {
        let b = budget(1000);
        let first = b.reserve(600).unwrap();
        let second = b.reserve(300).unwrap();
        assert_eq!(b.total(), 900);
        assert_eq!(b.slowed_writes(), 1);
        assert_eq!(b.held_writes(), 0);
        drop((first, second));
    }

    #[test]
    fn a_write_larger_than_the_limit_enters_an_empty_budget() {
        let b = budget(100);
        let r = b.reserve(500).unwrap();
        assert_eq!(b.total(), 500);
        drop(r);
    }

    #[test]
    fn the_pressure_handler_runs_past_the_low_water_mark() {
        let b = budget(1000);
        let (tx, rx) = mpsc::channel();
        b.set_pressure_handler(Arc::new(move |target| {
            let _ = tx.send(target);
        }));
        let mut r = b.reserve(400).unwrap();
        r.transfer(400);
        b.after_write();
        assert!(rx.try_recv().is_err(), "under the low-water mark: no flush");
        let mut r2 = b.reserve(200).unwrap();
        r2.transfer(200);
        b.after_write();
        assert_eq!(rx.try_recv().ok(), Some(500), "past it: flushes down to it");
    }

    #[test]
    fn a_writer_held_at_the_limit_is_released_by_a_release() {
        let b = budget(1000);
        let mut held = b.reserve(900).unwrap();
        held.transfer(900);
        drop(held);
        let (tx, rx) = mpsc::channel();
        let waiter = {
            let b = Arc::clone(&b);
            std::thread::spawn(move || {
                let r = b.reserve(200).unwrap();
                tx.send(b.total()).unwrap();
                drop(r);
            })
        };
        // The writer cannot be admitted until the 900 bytes go: wait until
        // it is counted as held (no timing: the counter says so).
        while b.held_writes() == 0 {
            std::thread::yield_now();
        }
        assert!(rx.try_recv().is_err(), "held, not admitted");
        b.release(900);
        assert_eq!(rx.recv().unwrap(), 200);
        waiter.join().unwrap();
        assert!(b.high_water_bytes() <= 1000);
    }

    #[test]
    fn closing_fails_a_held_writer() {
        let b = budget(100);
        let mut r = b.reserve(100).unwrap();
        r.transfer(100);
        let waiter = {
            let b = Arc::clone(&b);
            std::thread::spawn(move || b.reserve(50).map(|_| ()))
        };
        while b.held_writes() == 0 {
            std::thread::yield_now();
        }
        b.close();
        assert!(matches!(waiter.join().unwrap(), Err(Error::Closed(_))));
    }

    #[test]
    fn a_failed_flush_fails_a_held_writer_with_region_too_busy() {
        let b = budget(100);
        let mut r = b.reserve(100).unwrap();
        r.transfer(100);
        let waiter = {
            let b = Arc::clone(&b);
            std::thread::spawn(move || b.reserve(50).map(|_| ()))
        };
        while b.held_writes() == 0 {
            std::thread::yield_now();
        }
        b.flush_failed("disk full");
        let err = waiter.join().unwrap().unwrap_err();
        assert!(matches!(err, Error::RegionTooBusy(ref m) if m.contains("disk full")));
    }

    #[test]
    fn concurrent_reservations_never_pass_the_limit() {
        let b = budget(10_000);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let b = Arc::clone(&b);
                std::thread::spawn(move || {
                    for _ in 0..2_000 {
                        let mut r = b.reserve(700).unwrap();
                        r.transfer(700);
                        drop(r);
                        b.release(700);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(b.total(), 0);
        assert!(b.high_water_bytes() <= 10_000);
    }
}
