//! A phase's second-by-second account (`basalt bench ycsb --timeline`):
//! the operations that finished in each second and how long they took,
//! beside the store's background work sampled every second (flushes and
//! compactions queued, running and finished). It answers the question a
//! latency tail raises on a small machine: are the slow operations the ones
//! that ran while the store flushed or compacted?
//!
//! Latencies go into power-of-two microsecond buckets per second and per
//! client thread (a fixed 32 counters: a long run with many threads stays
//! small), so a second's p99 is known to within a factor of two; the
//! phase's exact percentiles stay in the HdrHistogram report.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// An operation in this bucket or above (at least 2^10 = 1,024 µs) counts
/// as slow in the account: a millisecond is the tail the issue is about.
const SLOW_BUCKET: usize = 10;

/// Bucket `i` holds latencies in `[2^i, 2^(i+1))` µs (bucket 0 also holds
/// 0 µs); the last holds everything from 2^31 µs (36 minutes) up.
const BUCKETS: usize = 32;

/// The store's background work at one moment (`YcsbStore::background`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundSample {
    /// Flushes waiting for a thread.
    pub queued_flushes: u64,
    /// Compactions waiting for a thread.
    pub queued_compactions: u64,
    /// Flushes running.
    pub running_flushes: u64,
    /// Compactions running.
    pub running_compactions: u64,
    /// Flushes finished since the store opened.
    pub flushes_completed: u64,
    /// Compactions finished since the store opened.
    pub compactions_completed: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Second {
    ops: u64,
    buckets: [u64; BUCKETS],
    max_micros: u64,
}

impl Second {
    fn merge(&mut self, other: &Second) {
        self.ops += other.ops;
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            *mine += theirs;
        }
        self.max_micros = self.max_micros.max(other.max_micros);
    }

    /// The upper bound of the bucket holding the `quantile` operation.
    fn quantile_bound_micros(&self, quantile: f64) -> u64 {
        if self.ops == 0 {
            return 0;
        }
        let rank = ((self.ops as f64) * quantile).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, count) in self.buckets.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return (2u64 << i).min(self.max_micros.max(1));
            }
        }
        self.max_micros
    }

    fn slow_ops(&self) -> u64 {
        self.buckets[SLOW_BUCKET..].iter().sum()
    }
}

fn bucket_of(micros: u64) -> usize {
    if micros == 0 {
        0
    } else {
        (micros.ilog2() as usize).min(BUCKETS - 1)
    }
}

/// One client thread's seconds.
#[derive(Debug, Clone)]
pub struct ThreadTimeline {
    start: Instant,
    seconds: Vec<Second>,
}

impl ThreadTimeline {
    /// An empty timeline whose second 0 begins at `start` (the phase's).
    pub fn new(start: Instant) -> Self {
        Self {
            start,
            seconds: Vec::new(),
        }
    }

    /// An operation that finished at `end` after `elapsed`.
    pub fn record(&mut self, end: Instant, elapsed: Duration) {
        let index = end.saturating_duration_since(self.start).as_secs() as usize;
        if self.seconds.len() <= index {
            self.seconds.resize(index + 1, Second::default());
        }
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let second = &mut self.seconds[index];
        second.ops += 1;
        second.buckets[bucket_of(micros)] += 1;
        second.max_micros = second.max_micros.max(micros);
    }
}

/// One second of a phase: its operations and the background work then.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineSecond {
    /// Seconds since the phase began.
    pub second: u64,
    /// Operations that finished in this second, over all client threads.
    pub ops: u64,
    /// Upper bound of the p99 latency's power-of-two bucket, µs.
    pub p99_bound_micros: u64,
    /// The slowest operation, µs.
    pub max_micros: u64,
    /// Operations that took at least 1,024 µs.
    pub slow_ops: u64,
    /// Whether a flush or compaction was queued, running or finished in
    /// this second (known only for stores that report their background
    /// work).
    pub background_busy: Option<bool>,
    /// The store's background work sampled at the end of this second.
    pub background: Option<BackgroundSample>,
}

/// The phase's slow operations split by whether background work was busy
/// in their second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TailAccount {
    /// Seconds in the phase.
    pub seconds: u64,
    /// Of them, those with background work queued, running or finishing.
    pub busy_seconds: u64,
    /// Operations that finished in busy seconds.
    pub busy_ops: u64,
    /// Of them, those that took at least 1,024 µs.
    pub busy_slow_ops: u64,
    /// Operations that finished in the other seconds.
    pub quiet_ops: u64,
    /// Of them, those that took at least 1,024 µs.
    pub quiet_slow_ops: u64,
}

impl TailAccount {
    /// One line for a report.
    pub fn describe(&self) -> String {
        let share = |slow: u64, ops: u64| {
            if ops == 0 {
                0.0
            } else {
                100.0 * slow as f64 / ops as f64
            }
        };
        format!(
            "operations >= 1,024 us: {} of {} ({:.3}%) in the {} seconds with a flush or \
             compaction queued, running or finished; {} of {} ({:.3}%) in the other {} seconds",
            self.busy_slow_ops,
            self.busy_ops,
            share(self.busy_slow_ops, self.busy_ops),
            self.busy_seconds,
            self.quiet_slow_ops,
            self.quiet_ops,
            share(self.quiet_slow_ops, self.quiet_ops),
            self.seconds - self.busy_seconds,
        )
    }
}

/// The phase's seconds from its threads' timelines and the samples taken
/// at the end of each second (`samples[i]` for second `i`, `None` for a
/// store that does not report background work), and their account.
pub fn assemble(
    threads: &[ThreadTimeline],
    samples: &[Option<BackgroundSample>],
) -> (Vec<TimelineSecond>, TailAccount) {
    let len = threads.iter().map(|t| t.seconds.len()).max().unwrap_or(0);
    let mut merged = vec![Second::default(); len];
    for thread in threads {
        for (total, second) in merged.iter_mut().zip(&thread.seconds) {
            total.merge(second);
        }
    }
    let mut account = TailAccount::default();
    let mut previous: Option<BackgroundSample> = None;
    let mut seconds = Vec::with_capacity(len);
    for (i, second) in merged.iter().enumerate() {
        let sample = samples.get(i).copied().flatten();
        let busy = sample.map(|now| {
            let finished = previous.is_some_and(|before| {
                now.flushes_completed != before.flushes_completed
                    || now.compactions_completed != before.compactions_completed
            });
            finished
                || now.running_flushes + now.running_compactions > 0
                || now.queued_flushes + now.queued_compactions > 0
        });
        if sample.is_some() {
            previous = sample;
        }
        let slow = second.slow_ops();
        account.seconds += 1;
        if busy == Some(true) {
            account.busy_seconds += 1;
            account.busy_ops += second.ops;
            account.busy_slow_ops += slow;
        } else {
            account.quiet_ops += second.ops;
            account.quiet_slow_ops += slow;
        }
        seconds.push(TimelineSecond {
            second: i as u64,
            ops: second.ops,
            p99_bound_micros: second.quantile_bound_micros(0.99),
            max_micros: second.max_micros,
            slow_ops: slow,
            background_busy: busy,
            background: sample,
        });
    }
    (seconds, account)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn operations_land_in_the_second_they_finished() {
        let start = Instant::now();
        let mut t = ThreadTimeline::new(start);
        t.record(start + Duration::from_millis(10), micros(5));
        t.record(start + Duration::from_millis(2_500), micros(2_000));
        let (seconds, _) = assemble(&[t], &[]);
        assert_eq!(seconds.len(), 3);
        assert_eq!(seconds.iter().map(|s| s.ops).collect::<Vec<_>>(), [1, 0, 1]);
        assert_eq!(seconds[2].slow_ops, 1);
        assert_eq!(seconds[2].max_micros, 2_000);
        assert_eq!(seconds[1].background_busy, None, "no samples: unknown");
    }

    #[test]
    fn p99_bound_is_the_bucket_holding_the_99th_percentile() {
        let start = Instant::now();
        let mut t = ThreadTimeline::new(start);
        for _ in 0..99 {
            t.record(start, micros(10)); // bucket [8, 16)
        }
        t.record(start, micros(3_000)); // bucket [2048, 4096)
        let (seconds, _) = assemble(&[t.clone()], &[]);
        assert_eq!(seconds[0].p99_bound_micros, 16);
        t.record(start, micros(3_000));
        let (seconds, _) = assemble(&[t], &[]);
        assert_eq!(seconds[0].p99_bound_micros, 3_000, "capped by the max");
    }

    #[test]
    fn threads_merge_second_by_second() {
        let start = Instant::now();
        let mut a = ThreadTimeline::new(start);
        let mut b = ThreadTimeline::new(start);
        a.record(start, micros(1));
        b.record(start, micros(1));
        b.record(start + Duration::from_secs(1), micros(7_000));
        let (seconds, _) = assemble(&[a, b], &[]);
        assert_eq!(seconds[0].ops, 2);
        assert_eq!(seconds[1].max_micros, 7_000);
    }

    #[test]
    fn the_account_splits_slow_operations_by_background_work_in_their_second() {
        let start = Instant::now();
        let mut t = ThreadTimeline::new(start);
        for s in 0..4u64 {
            let at = start + Duration::from_secs(s) + Duration::from_millis(1);
            t.record(at, micros(50));
            t.record(at, micros(50));
            if s == 1 || s == 3 {
                t.record(at, micros(4_000));
            }
        }
        let idle = BackgroundSample::default();
        let running = BackgroundSample {
            running_compactions: 1,
            ..idle
        };
        let finished = BackgroundSample {
            compactions_completed: 1,
            ..idle
        };
        // Second 1: a compaction running; second 2: it finished (the
        // counter moved); second 3: nothing (the counter stays).
        let samples = [Some(idle), Some(running), Some(finished), Some(finished)];
        let (seconds, account) = assemble(&[t], &samples);
        assert_eq!(
            seconds
                .iter()
                .map(|s| s.background_busy)
                .collect::<Vec<_>>(),
            [Some(false), Some(true), Some(true), Some(false)]
        );
        assert_eq!(
            account,
            TailAccount {
                seconds: 4,
                busy_seconds: 2,
                busy_ops: 5,
                busy_slow_ops: 1,
                quiet_ops: 5,
                quiet_slow_ops: 1,
            }
        );
        assert!(account.describe().contains("1 of 5 (20.000%)"));
    }

    #[test]
    fn extreme_latencies_stay_in_the_last_bucket() {
        let start = Instant::now();
        let mut t = ThreadTimeline::new(start);
        t.record(start, Duration::from_secs(100_000));
        t.record(start, Duration::ZERO);
        let (seconds, account) = assemble(&[t], &[]);
        assert_eq!(seconds[0].ops, 2);
        assert_eq!(account.quiet_slow_ops, 1);
    }
}
