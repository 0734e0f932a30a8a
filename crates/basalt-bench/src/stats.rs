//! Latency histograms per operation type and the summaries reported from
//! them (YCSB's and db_bench's output names).

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Longest latency recorded exactly (longer ones are clamped): one minute.
const MAX_NANOS: u64 = 60_000_000_000;

/// A latency histogram in nanoseconds with three significant digits.
#[derive(Debug, Clone)]
pub struct Latencies {
    hist: Histogram<u64>,
    errors: u64,
}

impl Default for Latencies {
    fn default() -> Self {
        Self::new()
    }
}

impl Latencies {
    /// An empty histogram.
    pub fn new() -> Self {
        // 1 ns .. 60 s at 3 significant digits always fits: the bounds are
        // constants, so the constructor cannot fail; fall back to an
        // auto-resizing histogram regardless.
        let hist = Histogram::new_with_bounds(1, MAX_NANOS, 3)
            .or_else(|_| Histogram::new(3))
            .unwrap_or_else(|_| unreachable_histogram());
        Latencies { hist, errors: 0 }
    }

    /// Records one operation's latency.
    pub fn record(&mut self, latency: Duration) {
        let nanos = u64::try_from(latency.as_nanos())
            .unwrap_or(MAX_NANOS)
            .clamp(1, MAX_NANOS);
        // In range by the clamp above.
        let _ = self.hist.record(nanos);
    }

    /// Counts a failed operation.
    pub fn record_error(&mut self) {
        self.errors += 1;
    }

    /// Adds another thread's histogram.
    pub fn merge(&mut self, other: &Latencies) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.hist.add(&other.hist);
        self.errors += other.errors;
    }

    /// Operations recorded.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The summary in microseconds.
    pub fn summary(&self) -> LatencySummary {
        let us = |nanos: u64| nanos as f64 / 1000.0;
        LatencySummary {
            operations: self.hist.len(),
            errors: self.errors,
            avg_us: self.hist.mean() / 1000.0,
            min_us: us(self.hist.min()),
            max_us: us(self.hist.max()),
            p50_us: us(self.hist.value_at_quantile(0.50)),
            p95_us: us(self.hist.value_at_quantile(0.95)),
            p99_us: us(self.hist.value_at_quantile(0.99)),
            p999_us: us(self.hist.value_at_quantile(0.999)),
        }
    }
}

#[allow(clippy::panic)]
fn unreachable_histogram() -> Histogram<u64> {
    // Histogram::new(3) only fails for more than 5 significant digits.
    panic!("hdrhistogram rejected 3 significant digits")
}

/// Latency statistics of one operation type, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Operations that succeeded.
    pub operations: u64,
    /// Operations that failed.
    pub errors: u64,
    /// Mean latency.
    pub avg_us: f64,
    /// Fastest.
    pub min_us: f64,
    /// Slowest.
    pub max_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 95th percentile.
    pub p95_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
}

/// Reads the process's peak resident set size (VmHWM) in KiB, where the
/// kernel reports it.
pub fn peak_rss_kib() -> Option<u64> {
    peak_rss_kib_of("self")
}

/// Peak RSS in KiB of process `pid` (`"self"` for this one).
pub fn peak_rss_kib_of(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The median of `values` (sorted in place; the mean of the middle two for
/// an even count; 0 for none).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_from_recorded_values() {
        let mut a = Latencies::new();
        let mut b = Latencies::new();
        for i in 1..=100u64 {
            a.record(Duration::from_micros(i));
        }
        b.record(Duration::from_millis(10));
        b.record_error();
        a.merge(&b);
        let s = a.summary();
        assert_eq!(s.operations, 101);
        assert_eq!(s.errors, 1);
        assert!((s.p50_us - 51.0).abs() <= 1.0, "{}", s.p50_us);
        assert!(s.max_us >= 9_990.0);
        assert!(s.p95_us >= 95.0 && s.p95_us <= 97.0, "{}", s.p95_us);
    }

    #[test]
    fn the_median_is_the_middle_value_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn peak_rss_is_readable_on_linux() {
        if std::path::Path::new("/proc/self/status").exists() {
            assert!(peak_rss_kib().is_some_and(|k| k > 0));
        }
    }
}
