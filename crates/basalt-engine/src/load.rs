//! Per-region load: request totals since the region opened and their rates
//! over the last minute, counted where the work happens.
//!
//! Totals are plain atomic counters. Rates come from samples of the totals
//! taken at most every [`SAMPLE_INTERVAL_MS`] (by the first request after
//! the interval, or by a reader of the load), kept for
//! [`RATE_WINDOW_MS`]: a rate is the growth of a total since the oldest
//! sample inside the window, divided by the time since. So recording a
//! request costs a few relaxed atomic additions (one per total it moves)
//! and a clock read; the lock is taken once per interval.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::clock::Clock;
use crate::scan::ScanMetrics;

/// How often the totals are sampled.
pub const SAMPLE_INTERVAL_MS: i64 = 5_000;
/// The span rates are measured over.
pub const RATE_WINDOW_MS: i64 = 60_000;
/// Rates are never taken over less than this, so a burst right after a
/// sample does not read as an enormous rate.
const MIN_RATE_SPAN_MS: i64 = 1_000;

/// A snapshot of a region's load.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RegionLoad {
    /// Gets and scans served (a scan counts once per region it reads).
    pub read_requests: u64,
    /// Of those, reads whose filter dropped at least one row or cell
    /// (HBase's filtered read requests: the work a filter threw away).
    pub filtered_read_requests: u64,
    /// Row mutations applied (each increment, append, put, delete counts one).
    pub write_requests: u64,
    /// Rows looked at by reads.
    pub rows_scanned: u64,
    /// Cells looked at by reads.
    pub cells_scanned: u64,
    /// Bytes of cells written (cell sizes as the memstore counts them:
    /// key, value and a fixed overhead per cell).
    pub bytes_written: u64,
    /// Bytes of cells returned by reads, counted as `bytes_written` is.
    pub bytes_read: u64,
    /// Bytes held in memstores.
    pub memstore_bytes: u64,
    /// Reads per second over the last minute.
    pub read_requests_per_sec: f64,
    /// Writes per second over the last minute.
    pub write_requests_per_sec: f64,
    /// Rows scanned per second over the last minute.
    pub rows_scanned_per_sec: f64,
    /// Filtered reads per second over the last minute.
    pub filtered_read_requests_per_sec: f64,
    /// Bytes read per second over the last minute.
    pub bytes_read_per_sec: f64,
    /// Bytes written per second over the last minute.
    pub bytes_written_per_sec: f64,
}

/// The totals that have rates.
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    reads: u64,
    writes: u64,
    rows: u64,
    filtered: u64,
    bytes_read: u64,
    bytes_written: u64,
}

/// Per-second rates of the [`Totals`].
#[derive(Debug, Clone, Copy, Default)]
struct Rates {
    reads: f64,
    writes: f64,
    rows: f64,
    filtered: f64,
    bytes_read: f64,
    bytes_written: f64,
}

/// The live counters of one region.
#[derive(Debug, Default)]
pub(crate) struct LoadCounters {
    read_requests: AtomicU64,
    filtered_read_requests: AtomicU64,
    write_requests: AtomicU64,
    rows_scanned: AtomicU64,
    cells_scanned: AtomicU64,
    bytes_written: AtomicU64,
    bytes_read: AtomicU64,
    next_sample_at: AtomicI64,
    /// (time in ms, totals then), oldest first.
    samples: Mutex<VecDeque<(i64, Totals)>>,
}

impl LoadCounters {
    pub(crate) fn record_write(&self, mutations: u64, bytes: u64, clock: &dyn Clock) {
        self.write_requests.fetch_add(mutations, Ordering::Relaxed);
        self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
        self.maybe_sample(clock.now_millis());
    }

    /// One read (a get, or a scan's work in this region) that did `work`.
    pub(crate) fn record_read(&self, work: &ScanMetrics, clock: &dyn Clock) {
        self.read_requests.fetch_add(1, Ordering::Relaxed);
        self.rows_scanned
            .fetch_add(work.rows_scanned, Ordering::Relaxed);
        self.cells_scanned
            .fetch_add(work.cells_scanned, Ordering::Relaxed);
        if work.bytes_returned > 0 {
            self.bytes_read
                .fetch_add(work.bytes_returned, Ordering::Relaxed);
        }
        if work.filtered() {
            self.filtered_read_requests.fetch_add(1, Ordering::Relaxed);
        }
        self.maybe_sample(clock.now_millis());
    }

    fn totals(&self) -> Totals {
        Totals {
            reads: self.read_requests.load(Ordering::Relaxed),
            writes: self.write_requests.load(Ordering::Relaxed),
            rows: self.rows_scanned.load(Ordering::Relaxed),
            filtered: self.filtered_read_requests.load(Ordering::Relaxed),
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
            bytes_written: self.bytes_written.load(Ordering::Relaxed),
        }
    }

    fn maybe_sample(&self, now: i64) {
        if now < self.next_sample_at.load(Ordering::Relaxed) {
            return;
        }
        let mut samples = self.samples.lock();
        // Another thread may have sampled while this one waited.
        if now < self.next_sample_at.load(Ordering::Relaxed) {
            return;
        }
        samples.push_back((now, self.totals()));
        // Keep one sample older than the window: the base for the rate
        // when nothing newer is old enough.
        while samples.len() > 2 && samples[1].0 <= now - RATE_WINDOW_MS {
            samples.pop_front();
        }
        self.next_sample_at
            .store(now + SAMPLE_INTERVAL_MS, Ordering::Relaxed);
    }

    /// The totals and rates now; `memstore_bytes` is filled in by the caller.
    pub(crate) fn snapshot(&self, clock: &dyn Clock) -> RegionLoad {
        let now = clock.now_millis();
        self.maybe_sample(now);
        let totals = self.totals();
        let base = {
            let samples = self.samples.lock();
            samples
                .iter()
                .find(|(t, _)| *t >= now - RATE_WINDOW_MS)
                .or(samples.back())
                .copied()
        };
        let rate = |now_total: u64, then_total: u64, since: i64| {
            let span = (now - since).max(MIN_RATE_SPAN_MS) as f64 / 1000.0;
            now_total.saturating_sub(then_total) as f64 / span
        };
        let per_sec = match base {
            Some((since, then)) => {
                let rate = |now_total: u64, then_total: u64| rate(now_total, then_total, since);
                Rates {
                    reads: rate(totals.reads, then.reads),
                    writes: rate(totals.writes, then.writes),
                    rows: rate(totals.rows, then.rows),
                    filtered: rate(totals.filtered, then.filtered),
                    bytes_read: rate(totals.bytes_read, then.bytes_read),
                    bytes_written: rate(totals.bytes_written, then.bytes_written),
                }
            }
            None => Rates::default(),
        };
        RegionLoad {
            read_requests: totals.reads,
            filtered_read_requests: totals.filtered,
            write_requests: totals.writes,
            rows_scanned: totals.rows,
            cells_scanned: self.cells_scanned.load(Ordering::Relaxed),
            bytes_written: totals.bytes_written,
            bytes_read: totals.bytes_read,
            memstore_bytes: 0,
            read_requests_per_sec: per_sec.reads,
            write_requests_per_sec: per_sec.writes,
            rows_scanned_per_sec: per_sec.rows,
            filtered_read_requests_per_sec: per_sec.filtered,
            bytes_read_per_sec: per_sec.bytes_read,
            bytes_written_per_sec: per_sec.bytes_written,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn rates_cover_the_last_minute_only() {
        let clock = ManualClock::new(1_000_000);
        let load = LoadCounters::default();
        // A minute of 10 writes per second.
        for _ in 0..60 {
            for _ in 0..10 {
                load.record_write(1, 100, &clock);
            }
            clock.advance(1_000);
        }
        let busy = load.snapshot(&clock);
        assert_eq!(busy.write_requests, 600);
        assert!(
            (busy.write_requests_per_sec - 10.0).abs() < 1.5,
            "{}",
            busy.write_requests_per_sec
        );
        assert_eq!(busy.read_requests_per_sec, 0.0);

        // Two idle minutes later the totals stay and the rate is gone.
        clock.advance(120_000);
        let idle = load.snapshot(&clock);
        assert_eq!(idle.write_requests, 600);
        assert_eq!(idle.write_requests_per_sec, 0.0);

        // Reads start: 5 reads of 4 rows per second for 30 s.
        for _ in 0..30 {
            for _ in 0..5 {
                let work = ScanMetrics {
                    rows_scanned: 4,
                    cells_scanned: 8,
                    ..ScanMetrics::default()
                };
                load.record_read(&work, &clock);
            }
            clock.advance(1_000);
        }
        let reading = load.snapshot(&clock);
        assert!(
            (reading.read_requests_per_sec - 5.0).abs() < 1.0,
            "{}",
            reading.read_requests_per_sec
        );
        assert!((reading.rows_scanned_per_sec - 20.0).abs() < 4.0);
        assert_eq!(reading.cells_scanned, 30 * 5 * 8);
    }

    #[test]
    fn samples_stay_bounded() {
        let clock = ManualClock::new(0);
        let load = LoadCounters::default();
        for _ in 0..10_000 {
            load.record_write(1, 1, &clock);
            clock.advance(1_000);
        }
        let kept = load.samples.lock().len() as i64;
        assert!(kept <= RATE_WINDOW_MS / SAMPLE_INTERVAL_MS + 2, "{kept}");
    }
}
