//! Micro benchmarks with the names, parameters and output format of
//! RocksDB's `db_bench`, so Basalt's numbers line up with `db_bench`'s on
//! identical settings. Also the parser the comparison uses to read both.
//!
//! Semantics follow db_bench: every thread performs the whole benchmark
//! (`--threads=4 --num=N` writes 4N entries); keys are the key number as 8
//! big-endian bytes padded with `'0'` to `--key_size`; random benchmarks draw
//! key numbers uniformly from `[0, num)`; write benchmarks write `--writes`
//! entries per thread (default `num`; RocksDB 7.8's `fillsync` does the same,
//! its documented `num / 1000` only shows in the message, so comparisons pass
//! `--writes` explicitly), `fillsync` syncing each to the device; `seekrandom` seeks to a
//! random key and then steps `--seek_nexts` entries; `readrandom` and
//! `seekrandom` count a key as found when it exists exactly.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::stats::Latencies;
use crate::{BenchError, BenchResult};

/// A key-value store under db_bench's workloads. Shared by the threads.
pub trait KvStore: Sync {
    /// Starts over with an empty store (the "fresh database" benchmarks).
    fn reset(&mut self) -> BenchResult<()>;
    /// Writes one entry; `sync` waits for the device.
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> BenchResult<()>;
    /// Reads one entry; returns its value length when found.
    fn get(&self, key: &[u8]) -> BenchResult<Option<usize>>;
    /// Positions at the first key `>= key`, then steps `nexts` entries.
    /// Returns whether the first key equals `key`, and the bytes (key +
    /// value) of the entries visited.
    fn seek(&self, key: &[u8], nexts: usize) -> BenchResult<(bool, u64)>;
    /// Reads up to `limit` entries in key order; returns (entries, bytes).
    fn read_seq(&self, limit: u64) -> BenchResult<(u64, u64)>;
}

/// The benchmarks this mode runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Benchmark {
    /// `num` writes in key order on a fresh store.
    FillSeq,
    /// `num` writes of random keys on a fresh store.
    FillRandom,
    /// `num` writes of random keys on the existing store.
    Overwrite,
    /// `writes` synced writes of random keys on a fresh store.
    FillSync,
    /// `reads` point reads of random keys.
    ReadRandom,
    /// `reads` seeks to random keys, each followed by `seek_nexts` steps.
    SeekRandom,
    /// Reads entries in key order.
    ReadSeq,
}

impl Benchmark {
    /// Parses db_bench's name.
    pub fn parse(name: &str) -> BenchResult<Self> {
        Ok(match name.trim() {
            "fillseq" => Benchmark::FillSeq,
            "fillrandom" => Benchmark::FillRandom,
            "overwrite" => Benchmark::Overwrite,
            "fillsync" => Benchmark::FillSync,
            "readrandom" => Benchmark::ReadRandom,
            "seekrandom" => Benchmark::SeekRandom,
            "readseq" => Benchmark::ReadSeq,
            other => {
                return Err(BenchError::new(format!(
                    "unknown benchmark '{other}' (supported: fillseq, fillrandom, overwrite, \
                     fillsync, readrandom, seekrandom, readseq)"
                )))
            }
        })
    }

    /// db_bench's name.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::FillSeq => "fillseq",
            Benchmark::FillRandom => "fillrandom",
            Benchmark::Overwrite => "overwrite",
            Benchmark::FillSync => "fillsync",
            Benchmark::ReadRandom => "readrandom",
            Benchmark::SeekRandom => "seekrandom",
            Benchmark::ReadSeq => "readseq",
        }
    }

    fn fresh(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq | Benchmark::FillRandom | Benchmark::FillSync
        )
    }

    /// The noun of db_bench's histogram header ("Microseconds per write:").
    fn unit(self) -> &'static str {
        match self {
            Benchmark::ReadRandom | Benchmark::ReadSeq => "read",
            Benchmark::SeekRandom => "seek",
            _ => "write",
        }
    }
}

/// db_bench's parameters.
#[derive(Debug, Clone)]
pub struct DbBenchConfig {
    /// Entries (per thread, for the write benchmarks).
    pub num: u64,
    /// Reads per thread; `None` means `num`.
    pub reads: Option<u64>,
    /// Writes per thread of the write benchmarks; `None` means `num`.
    pub writes: Option<u64>,
    /// Key size in bytes.
    pub key_size: usize,
    /// Value size in bytes.
    pub value_size: usize,
    /// Client threads.
    pub threads: usize,
    /// Steps after each seek of `seekrandom`.
    pub seek_nexts: usize,
    /// Seed of the key generators.
    pub seed: u64,
    /// Keep the existing data for the fill benchmarks.
    pub use_existing_db: bool,
}

/// The result of one benchmark.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DbBenchResult {
    /// db_bench's benchmark name.
    pub name: String,
    /// Average time per operation per thread (db_bench's micros/op).
    pub micros_per_op: f64,
    /// Operations per second over all threads.
    pub ops_per_sec: f64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Operations over all threads.
    pub operations: u64,
    /// MB/s of keys and values moved, when any.
    pub mb_per_sec: Option<f64>,
    /// "(found of total found)" for the read benchmarks.
    pub found: Option<(u64, u64)>,
    /// Latency percentiles in microseconds: P50, P99, P99.9 (with
    /// `--histogram=1`).
    pub p50_us: Option<f64>,
    /// 99th percentile.
    pub p99_us: Option<f64>,
    /// 99.9th percentile.
    pub p999_us: Option<f64>,
}

/// db_bench's key for key number `n`.
pub fn make_key(n: u64, key_size: usize, out: &mut Vec<u8>) {
    out.clear();
    let be = n.to_be_bytes();
    if key_size >= 8 {
        out.extend_from_slice(&be);
        out.resize(key_size, b'0');
    } else {
        out.extend_from_slice(&be[8 - key_size..]);
    }
}

/// A block of random bytes that values are sliced from, so generating a
/// value costs no more than a copy.
struct ValueSource {
    data: Vec<u8>,
    pos: usize,
}

impl ValueSource {
    fn new(rng: &mut StdRng, value_size: usize) -> Self {
        let len = (1 << 20).max(value_size * 2);
        let data = (0..len).map(|_| rng.random::<u8>()).collect();
        ValueSource { data, pos: 0 }
    }

    fn next(&mut self, size: usize) -> &[u8] {
        if self.pos + size > self.data.len() {
            self.pos = 0;
        }
        let v = &self.data[self.pos..self.pos + size];
        self.pos += size;
        v
    }
}

struct ThreadOutcome {
    hist: Latencies,
    done: u64,
    found: u64,
    bytes: u64,
    busy: Duration,
}

/// Runs `bench` on `store` and returns its result.
pub fn run_benchmark(
    store: &mut dyn KvStore,
    bench: Benchmark,
    config: &DbBenchConfig,
) -> BenchResult<(DbBenchResult, Latencies)> {
    if config.threads == 0 {
        return Err(BenchError::new("--threads must be at least 1"));
    }
    if config.num == 0 {
        return Err(BenchError::new("--num must be at least 1"));
    }
    if bench.fresh() && !config.use_existing_db {
        store.reset()?;
    }
    let store: &dyn KvStore = store;
    let per_thread = match bench {
        Benchmark::ReadRandom | Benchmark::SeekRandom | Benchmark::ReadSeq => {
            config.reads.unwrap_or(config.num)
        }
        _ => config.writes.unwrap_or(config.num),
    };
    let started = Instant::now();
    let outcomes: Vec<BenchResult<ThreadOutcome>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..config.threads)
            .map(|t| scope.spawn(move || run_thread(store, bench, config, t as u64, per_thread)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BenchError::new("a benchmark thread panicked")))
            })
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    let mut hist = Latencies::new();
    let (mut done, mut found, mut bytes, mut busy) = (0u64, 0u64, 0u64, 0.0f64);
    for o in outcomes {
        let o = o?;
        hist.merge(&o.hist);
        done += o.done;
        found += o.found;
        bytes += o.bytes;
        busy += o.busy.as_secs_f64();
    }
    let done_f = done.max(1) as f64;
    let summary = hist.summary();
    let result = DbBenchResult {
        name: bench.name().to_string(),
        micros_per_op: busy * 1e6 / done_f,
        ops_per_sec: done as f64 / elapsed,
        seconds: elapsed,
        operations: done,
        mb_per_sec: (bytes > 0).then(|| bytes as f64 / 1_048_576.0 / elapsed),
        found: matches!(bench, Benchmark::ReadRandom | Benchmark::SeekRandom)
            .then_some((found, done)),
        p50_us: Some(summary.p50_us),
        p99_us: Some(summary.p99_us),
        p999_us: Some(summary.p999_us),
    };
    Ok((result, hist))
}

fn run_thread(
    store: &dyn KvStore,
    bench: Benchmark,
    config: &DbBenchConfig,
    thread: u64,
    ops: u64,
) -> BenchResult<ThreadOutcome> {
    let mut rng = StdRng::seed_from_u64(config.seed.wrapping_add(thread.wrapping_mul(1_000_003)));
    let mut values = ValueSource::new(&mut rng, config.value_size);
    let mut out = ThreadOutcome {
        hist: Latencies::new(),
        done: 0,
        found: 0,
        bytes: 0,
        busy: Duration::ZERO,
    };
    let mut key = Vec::with_capacity(config.key_size.max(8));
    let entry_bytes = (config.key_size + config.value_size) as u64;
    let thread_start = Instant::now();
    if bench == Benchmark::ReadSeq {
        let start = Instant::now();
        let (entries, bytes) = store.read_seq(ops)?;
        out.hist
            .record(start.elapsed() / u32::try_from(entries.max(1)).unwrap_or(u32::MAX));
        out.done = entries;
        out.bytes = bytes;
        out.busy = thread_start.elapsed();
        return Ok(out);
    }
    for i in 0..ops {
        let n = match bench {
            Benchmark::FillSeq => i,
            _ => rng.random_range(0..config.num),
        };
        make_key(n, config.key_size, &mut key);
        let start = Instant::now();
        match bench {
            Benchmark::FillSeq | Benchmark::FillRandom | Benchmark::Overwrite => {
                store.put(&key, values.next(config.value_size), false)?;
                out.bytes += entry_bytes;
            }
            Benchmark::FillSync => {
                store.put(&key, values.next(config.value_size), true)?;
                out.bytes += entry_bytes;
            }
            Benchmark::ReadRandom => {
                if let Some(len) = store.get(&key)? {
                    out.found += 1;
                    out.bytes += (key.len() + len) as u64;
                }
            }
            Benchmark::SeekRandom => {
                let (hit, bytes) = store.seek(&key, config.seek_nexts)?;
                out.found += u64::from(hit);
                out.bytes += bytes;
            }
            Benchmark::ReadSeq => {}
        }
        out.hist.record(start.elapsed());
        out.done += 1;
    }
    out.busy = thread_start.elapsed();
    Ok(out)
}

/// The result line and, with `histogram`, the latency block, in db_bench's
/// format.
pub fn format_result(r: &DbBenchResult, hist: Option<&Latencies>, unit: &str) -> String {
    let mut line = format!(
        "{:<12} : {:>11.3} micros/op {} ops/sec {:.3} seconds {} operations;",
        r.name, r.micros_per_op, r.ops_per_sec as u64, r.seconds, r.operations
    );
    if let Some(mb) = r.mb_per_sec {
        let _ = write!(line, " {mb:>6.1} MB/s");
    }
    if let Some((found, total)) = r.found {
        let _ = write!(line, " ({found} of {total} found)");
    }
    line.push('\n');
    if let Some(h) = hist {
        let s = h.summary();
        let _ = writeln!(line, "Microseconds per {unit}:");
        let _ = writeln!(line, "Count: {} Average: {:.4}", s.operations, s.avg_us);
        let _ = writeln!(
            line,
            "Min: {:.0}  Median: {:.4}  Max: {:.0}",
            s.min_us, s.p50_us, s.max_us
        );
        let _ = writeln!(
            line,
            "Percentiles: P50: {:.2} P95: {:.2} P99: {:.2} P99.9: {:.2}",
            s.p50_us, s.p95_us, s.p99_us, s.p999_us
        );
    }
    line
}

/// The histogram noun of a benchmark (for [`format_result`]).
pub fn unit_of(bench: Benchmark) -> &'static str {
    bench.unit()
}

/// Parses db_bench output (RocksDB's or this tool's): one result per
/// `name : x micros/op y ops/sec ...` line, with the percentiles of the
/// `Percentiles:` line that follows it, if any.
pub fn parse_output(text: &str) -> Vec<DbBenchResult> {
    let mut results: Vec<DbBenchResult> = Vec::new();
    for line in text.lines() {
        // db_bench's progress output shares lines with carriage returns.
        let line = line.rsplit('\r').next().unwrap_or(line);
        if let Some(r) = parse_result_line(line) {
            results.push(r);
        } else if let Some(rest) = line.trim_start().strip_prefix("Percentiles:") {
            if let Some(last) = results.last_mut() {
                let words: Vec<&str> = rest.split_whitespace().collect();
                let value = |label: &str| {
                    words
                        .iter()
                        .position(|w| *w == label)
                        .and_then(|i| words.get(i + 1))
                        .and_then(|v| v.parse::<f64>().ok())
                };
                last.p50_us = value("P50:");
                last.p99_us = value("P99:");
                last.p999_us = value("P99.9:");
            }
        }
    }
    results
}

fn parse_result_line(line: &str) -> Option<DbBenchResult> {
    let (name, rest) = line.split_once(" : ")?;
    let name = name.trim();
    if name.is_empty() || name.contains(' ') {
        return None;
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let before = |label: &str| -> Option<&str> {
        let i = words
            .iter()
            .position(|w| w.trim_end_matches(';') == label)?;
        words.get(i.checked_sub(1)?).copied()
    };
    let micros_per_op = before("micros/op")?.parse().ok()?;
    let ops_per_sec = before("ops/sec")?.parse().ok()?;
    let seconds = before("seconds")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    let operations = before("operations")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mb_per_sec = before("MB/s").and_then(|s| s.parse().ok());
    let found = rest.find('(').and_then(|start| {
        let inner = rest[start + 1..].split(')').next()?;
        let w: Vec<&str> = inner.split_whitespace().collect();
        match w.as_slice() {
            [f, "of", t, "found"] => Some((f.parse().ok()?, t.parse().ok()?)),
            _ => None,
        }
    });
    Some(DbBenchResult {
        name: name.to_string(),
        micros_per_op,
        ops_per_sec,
        seconds,
        operations,
        mb_per_sec,
        found,
        p50_us: None,
        p99_us: None,
        p999_us: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_big_endian_numbers_padded_with_zero_characters() {
        let mut k = Vec::new();
        make_key(0x0102, 16, &mut k);
        assert_eq!(&k[..8], &[0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(&k[8..], b"00000000");
        make_key(0x0102, 4, &mut k);
        assert_eq!(k, vec![0, 0, 1, 2]);
        let mut a = Vec::new();
        let mut b = Vec::new();
        make_key(5, 24, &mut a);
        make_key(6, 24, &mut b);
        assert!(a < b, "keys sort like their numbers");
    }

    #[test]
    fn parses_rocksdb_lines_and_percentiles() {
        let text = "DB path: [/tmp/x]\n\
            fillrandom   :      13.668 micros/op 141582 ops/sec 0.028 seconds 4000 operations;   16.7 MB/s\n\
            Microseconds per write:\n\
            Count: 4000 Average: 14.0073  StdDev: 165.90\n\
            Percentiles: P50: 8.42 P75: 9.66 P99: 69.59 P99.9: 161.43 P99.99: 7442.00\n\
            ... finished 100 ops\rreadrandom   :       1.893 micros/op 843881 ops/sec 0.005 seconds 4000 operations;   86.2 MB/s (1718 of 2000 found)\n";
        let r = parse_output(text);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].name, "fillrandom");
        assert_eq!(r[0].ops_per_sec, 141582.0);
        assert_eq!(r[0].operations, 4000);
        assert_eq!(r[0].mb_per_sec, Some(16.7));
        assert_eq!(r[0].p99_us, Some(69.59));
        assert_eq!(r[0].p999_us, Some(161.43));
        assert_eq!(r[1].name, "readrandom");
        assert_eq!(r[1].found, Some((1718, 2000)));
        assert_eq!(r[1].p50_us, None);
    }

    #[test]
    fn formatted_results_parse_back() {
        let r = DbBenchResult {
            name: "seekrandom".into(),
            micros_per_op: 12.5,
            ops_per_sec: 80000.0,
            seconds: 1.25,
            operations: 100000,
            mb_per_sec: Some(95.3),
            found: Some((63000, 100000)),
            p50_us: Some(10.0),
            p99_us: Some(40.0),
            p999_us: Some(90.0),
        };
        let mut h = Latencies::new();
        h.record(Duration::from_micros(10));
        let text = format_result(&r, Some(&h), "seek");
        assert!(text.starts_with("seekrandom   :      12.500 micros/op 80000 ops/sec"));
        let back = parse_output(&text);
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].found, Some((63000, 100000)));
        assert_eq!(back[0].ops_per_sec, 80000.0);
        assert!(back[0].p50_us.is_some_and(|p| (p - 10.0).abs() < 0.1));
    }

    #[test]
    fn benchmark_names_round_trip() {
        for name in [
            "fillseq",
            "fillrandom",
            "overwrite",
            "fillsync",
            "readrandom",
            "seekrandom",
            "readseq",
        ] {
            assert_eq!(Benchmark::parse(name).map(Benchmark::name).ok(), Some(name));
        }
        assert!(Benchmark::parse("mergerandom").is_err());
    }
}
