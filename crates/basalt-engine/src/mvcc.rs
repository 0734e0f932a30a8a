//! Multi-version concurrency control: which writes a reader may see.
//!
//! Every row mutation takes a write number (also its WAL sequence id) with
//! [`Mvcc::begin`], inserts its cells into the memstores tagged with it, and
//! calls [`Mvcc::complete`]. The *read point* is the highest write number
//! such that it and every write before it are complete. Readers take the read
//! point when they start and ignore cells with a higher sequence id.
//!
//! Invariant: a write is never visible before all of its cells are in the
//! memstores (it completes only afterwards), and writes become visible in
//! write-number order, so no reader ever sees half of a row mutation or a
//! later write without an earlier one.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};

/// Write numbers and the read point of one region.
#[derive(Debug)]
pub struct Mvcc {
    state: Mutex<MvccState>,
    advanced: Condvar,
    read_point: AtomicU64,
}

#[derive(Debug)]
struct MvccState {
    next_write: u64,
    /// Writes begun and not yet retired, in write-number order, with a flag
    /// telling whether each has completed.
    in_flight: VecDeque<(u64, bool)>,
}

impl Mvcc {
    /// A fresh tracker whose first write number will be `next_write`;
    /// everything below it counts as complete.
    pub fn new(next_write: u64) -> Self {
        let next_write = next_write.max(1);
        Mvcc {
            state: Mutex::new(MvccState {
                next_write,
                in_flight: VecDeque::new(),
            }),
            advanced: Condvar::new(),
            read_point: AtomicU64::new(next_write - 1),
        }
    }

    /// The highest write number visible to a reader starting now.
    pub fn read_point(&self) -> u64 {
        self.read_point.load(Ordering::Acquire)
    }

    /// The write number the next [`begin`](Self::begin) will hand out.
    pub fn next_write(&self) -> u64 {
        self.state.lock().next_write
    }

    /// Starts a write and returns its number.
    pub fn begin(&self) -> u64 {
        let mut state = self.state.lock();
        let number = state.next_write;
        state.next_write += 1;
        state.in_flight.push_back((number, false));
        number
    }

    /// Marks a write complete (whether it succeeded or was abandoned) and
    /// advances the read point over every completed write at the front.
    pub fn complete(&self, number: u64) {
        let mut state = self.state.lock();
        let Some(front) = state.in_flight.front().map(|e| e.0) else {
            return;
        };
        let Some(index) = number.checked_sub(front) else {
            return;
        };
        if let Some(entry) = state.in_flight.get_mut(index as usize) {
            entry.1 = true;
        }
        let mut new_read_point = None;
        while let Some(&(n, true)) = state.in_flight.front() {
            new_read_point = Some(n);
            state.in_flight.pop_front();
        }
        if let Some(point) = new_read_point {
            // The read point only moves forward: readers rely on it.
            debug_assert!(point >= self.read_point.load(Ordering::Acquire));
            self.read_point.store(point, Ordering::Release);
            self.advanced.notify_all();
        }
    }

    /// Blocks until the read point reaches `number`, so a writer's own later
    /// reads see its write.
    pub fn wait_for(&self, number: u64) {
        if self.read_point() >= number {
            return;
        }
        let mut state = self.state.lock();
        while self.read_point() < number {
            self.advanced.wait(&mut state);
        }
    }

    /// Completes `number` and waits until it is visible.
    pub fn complete_and_wait(&self, number: u64) {
        self.complete(number);
        self.wait_for(number);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn read_point_waits_for_earlier_writes() {
        let m = Mvcc::new(1);
        let a = m.begin();
        let b = m.begin();
        assert_eq!(m.read_point(), 0);
        m.complete(b);
        assert_eq!(m.read_point(), 0, "b must stay hidden while a is open");
        m.complete(a);
        assert_eq!(m.read_point(), b);
    }

    #[test]
    fn starts_after_recovered_sequence() {
        let m = Mvcc::new(42);
        assert_eq!(m.read_point(), 41);
        assert_eq!(m.begin(), 42);
    }

    #[test]
    fn waiters_wake_when_their_write_is_visible() {
        let m = Arc::new(Mvcc::new(1));
        let first = m.begin();
        let second = m.begin();
        let waiter = {
            let m = Arc::clone(&m);
            std::thread::spawn(move || {
                m.complete_and_wait(second);
                m.read_point()
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        m.complete(first);
        assert!(waiter.join().unwrap() >= second);
    }
}
