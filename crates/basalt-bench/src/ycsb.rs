//! The YCSB client: the store interface every target implements, the load
//! and run phases over client threads, and the report.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::generator::InsertCounter;
use crate::stats::{peak_rss_kib, Latencies, LatencySummary};
use crate::timeline::{self, BackgroundSample, TailAccount, ThreadTimeline, TimelineSecond};
use crate::workload::{
    field_names, key_bytes, random_value, KeyChooser, OpKind, Workload, FIELD_COUNT,
    MAX_SCAN_LENGTH,
};
use crate::{BenchError, BenchResult};

/// A store that YCSB records can be written to and read from. One value is
/// shared by all client threads; each thread opens its own session.
pub trait YcsbStore: Send + Sync {
    /// The contender's name in reports.
    fn name(&self) -> String;
    /// Creates the table (load phase) if it does not exist.
    fn prepare(&self) -> BenchResult<()>;
    /// A session for one client thread (a connection, a table handle).
    fn session(&self) -> BenchResult<Box<dyn YcsbSession>>;
    /// Makes everything durable and releases resources.
    fn finish(&self) -> BenchResult<()>;
    /// The store's background work now (flushes, compactions), for the
    /// timeline; `None` for a store that does not say.
    fn background(&self) -> Option<BackgroundSample> {
        None
    }
}

/// One client thread's view of the store.
pub trait YcsbSession {
    /// Writes a new record with all of its fields.
    fn insert(&mut self, key: &[u8], fields: &[(&str, &[u8])]) -> BenchResult<()>;
    /// Reads a whole record; returns the number of fields found (0 when the
    /// record does not exist).
    fn read(&mut self, key: &[u8]) -> BenchResult<usize>;
    /// Overwrites some fields of a record.
    fn update(&mut self, key: &[u8], fields: &[(&str, &[u8])]) -> BenchResult<()>;
    /// Reads up to `count` whole records from `start` on; returns how many
    /// records it read.
    fn scan(&mut self, start: &[u8], count: usize) -> BenchResult<usize>;
}

/// Parameters of a load or run phase.
#[derive(Debug, Clone)]
pub struct PhaseConfig {
    /// The workload (the load phase only uses its record layout).
    pub workload: Workload,
    /// Records in the table (`recordcount`).
    pub record_count: u64,
    /// Operations of the run phase (`operationcount`).
    pub operation_count: u64,
    /// Client threads.
    pub threads: usize,
    /// Target operations per second over all threads; `None` runs flat out.
    pub target_ops: Option<f64>,
    /// Show progress bars (only drawn on a terminal).
    pub progress: bool,
    /// Seed of the client threads' random generators.
    pub seed: u64,
    /// Keep a second-by-second timeline beside the store's background
    /// work, and its account of the slow operations (`timeline.rs`).
    pub timeline: bool,
}

/// Which phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Inserts `record_count` records.
    Load,
    /// Runs `operation_count` operations of the workload's mix.
    Run,
}

/// The outcome of a phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseReport {
    /// The contender.
    pub store: String,
    /// `load` or `run`.
    pub phase: Phase,
    /// The workload letter.
    pub workload: String,
    /// Client threads.
    pub threads: usize,
    /// Wall-clock time of the phase in milliseconds.
    pub runtime_ms: f64,
    /// Operations per second over the phase.
    pub throughput: f64,
    /// Operations that succeeded, over all types.
    pub operations: u64,
    /// Reads (and read-modify-writes) that found no record: should be 0.
    pub reads_not_found: u64,
    /// Operations that failed, over all types: should be 0.
    #[serde(default)]
    pub errors: u64,
    /// The first error messages (at most [`KEPT_ERRORS`] per client
    /// thread), for the contender's log.
    #[serde(default)]
    pub first_errors: Vec<String>,
    /// Per operation type, in YCSB's names.
    pub ops: Vec<(String, LatencySummary)>,
    /// Peak RSS of this process in KiB (the client for network targets).
    pub peak_rss_kib: Option<u64>,
    /// With `timeline`: each second of the phase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<TimelineSecond>,
    /// With `timeline`: the slow operations by background work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_account: Option<TailAccount>,
}

impl PhaseReport {
    /// YCSB's text report (`[OVERALL], RunTime(ms), ...`).
    pub fn to_ycsb_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "[OVERALL], RunTime(ms), {:.0}", self.runtime_ms);
        let _ = writeln!(
            out,
            "[OVERALL], Throughput(ops/sec), {:.2}",
            self.throughput
        );
        if let Some(rss) = self.peak_rss_kib {
            let _ = writeln!(out, "[OVERALL], PeakRSS(KiB), {rss}");
        }
        for (name, s) in &self.ops {
            let _ = writeln!(out, "[{name}], Operations, {}", s.operations);
            let _ = writeln!(out, "[{name}], AverageLatency(us), {:.3}", s.avg_us);
            let _ = writeln!(out, "[{name}], MinLatency(us), {:.3}", s.min_us);
            let _ = writeln!(out, "[{name}], MaxLatency(us), {:.3}", s.max_us);
            let _ = writeln!(out, "[{name}], 50thPercentileLatency(us), {:.3}", s.p50_us);
            let _ = writeln!(out, "[{name}], 95thPercentileLatency(us), {:.3}", s.p95_us);
            let _ = writeln!(out, "[{name}], 99thPercentileLatency(us), {:.3}", s.p99_us);
            let _ = writeln!(out, "[{name}], 99.9PercentileLatency(us), {:.3}", s.p999_us);
            let _ = writeln!(out, "[{name}], Return=OK, {}", s.operations);
            if s.errors > 0 {
                let _ = writeln!(out, "[{name}], Return=ERROR, {}", s.errors);
            }
        }
        if self.reads_not_found > 0 {
            let _ = writeln!(out, "[READ], Return=NOT_FOUND, {}", self.reads_not_found);
        }
        out
    }

    /// The timeline (`--timeline`) as text, a line per second and the
    /// account; empty without one.
    pub fn timeline_text(&self) -> String {
        let mut out = String::new();
        let Some(account) = &self.tail_account else {
            return out;
        };
        let _ = writeln!(
            out,
            "# second, ops, p99 bound us, max us, ops >= 1024 us, flushes queued/running/done, compactions queued/running/done"
        );
        for s in &self.timeline {
            let background = s.background.map_or_else(
                || "-, -".to_string(),
                |b| {
                    format!(
                        "{}/{}/{}, {}/{}/{}",
                        b.queued_flushes,
                        b.running_flushes,
                        b.flushes_completed,
                        b.queued_compactions,
                        b.running_compactions,
                        b.compactions_completed
                    )
                },
            );
            let _ = writeln!(
                out,
                "[TIMELINE], {}, {}, {}, {}, {}, {background}",
                s.second, s.ops, s.p99_bound_micros, s.max_micros, s.slow_ops
            );
        }
        let _ = writeln!(out, "[TAIL], {}", account.describe());
        out
    }

    /// Why this phase does not count as a result: operations failed, or
    /// reads found nothing for records that were loaded or acknowledged
    /// (a store that loses writes must not show a throughput). `None` for
    /// a clean run.
    pub fn failure(&self) -> Option<String> {
        let mut why = Vec::new();
        if self.errors > 0 {
            why.push(format!("{} operations failed", self.errors));
        }
        if self.reads_not_found > 0 {
            why.push(format!(
                "{} reads found no record where one should exist",
                self.reads_not_found
            ));
        }
        (!why.is_empty()).then(|| why.join(", "))
    }

    /// The summary of one operation type.
    pub fn op(&self, kind: OpKind) -> Option<&LatencySummary> {
        self.ops
            .iter()
            .find(|(n, _)| n == kind.name())
            .map(|(_, s)| s)
    }
}

/// Error messages each client thread keeps for the report.
pub const KEPT_ERRORS: usize = 10;

/// What one client thread measured.
struct ThreadResult {
    timeline: Option<ThreadTimeline>,
    hists: Vec<Latencies>,
    not_found: u64,
    /// The thread's first error messages (at most `KEPT_ERRORS`).
    errors: Vec<String>,
}

/// Paces a thread to its share of the target rate.
struct Throttle {
    start: Instant,
    interval: Option<Duration>,
    done: u64,
}

impl Throttle {
    fn new(per_thread_ops: Option<f64>) -> Self {
        Throttle {
            start: Instant::now(),
            interval: per_thread_ops
                .filter(|r| *r > 0.0)
                .map(|r| Duration::from_secs_f64(1.0 / r)),
            done: 0,
        }
    }

    fn wait(&mut self) {
        if let Some(interval) = self.interval {
            let due = self.start + interval.mul_f64(self.done as f64);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        self.done += 1;
    }
}

fn progress_bar(enabled: bool, total: u64, label: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{msg:>14} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec}, eta {eta})",
    ) {
        bar.set_style(style);
    }
    bar.set_message(label.to_string());
    bar
}

/// Runs a phase against `store` and reports it.
pub fn run_phase(
    store: &dyn YcsbStore,
    phase: Phase,
    config: &PhaseConfig,
) -> BenchResult<PhaseReport> {
    if config.threads == 0 {
        return Err(BenchError::new("threads must be at least 1"));
    }
    if phase == Phase::Load {
        store.prepare()?;
    }
    let total = match phase {
        Phase::Load => config.record_count,
        Phase::Run => config.operation_count,
    };
    let label = match phase {
        Phase::Load => format!("{} load", store.name()),
        Phase::Run => format!("{} run {}", store.name(), config.workload),
    };
    let bar = progress_bar(config.progress, total, &label);
    // Load hands out record numbers from 0; run inserts continue after the
    // loaded records.
    let claimed = AtomicU64::new(0);
    let inserts = Arc::new(InsertCounter::new(match phase {
        Phase::Load => 0,
        Phase::Run => config.record_count,
    }));
    let per_thread_rate = config.target_ops.map(|t| t / config.threads as f64);
    let started = Instant::now();
    let clients_done = AtomicBool::new(false);
    let mut samples = Vec::new();
    let results: Vec<BenchResult<ThreadResult>> = std::thread::scope(|scope| {
        let sampler = config
            .timeline
            .then(|| scope.spawn(|| sample_each_second(store, started, &clients_done)));
        let handles: Vec<_> = (0..config.threads)
            .map(|t| {
                let inserts = inserts.clone();
                let claimed = &claimed;
                let bar = &bar;
                scope.spawn(move || -> BenchResult<ThreadResult> {
                    let mut session = store.session()?;
                    let mut worker = Worker {
                        rng: StdRng::seed_from_u64(config.seed.wrapping_add(t as u64 * 7919)),
                        chooser: KeyChooser::new(
                            config.workload,
                            config.record_count,
                            config.operation_count,
                            inserts,
                        ),
                        names: field_names(),
                        values: vec![Vec::new(); FIELD_COUNT],
                        result: ThreadResult {
                            timeline: config.timeline.then(|| ThreadTimeline::new(started)),
                            hists: vec![Latencies::new(); OpKind::ALL.len()],
                            not_found: 0,
                            errors: Vec::new(),
                        },
                    };
                    let mut throttle = Throttle::new(per_thread_rate);
                    let mut since_tick = 0u64;
                    while claimed.fetch_add(1, Ordering::Relaxed) < total {
                        throttle.wait();
                        match phase {
                            Phase::Load => worker.load_one(session.as_mut()),
                            Phase::Run => worker.run_one(session.as_mut(), config.workload),
                        }
                        since_tick += 1;
                        if since_tick == 256 {
                            bar.inc(since_tick);
                            since_tick = 0;
                        }
                    }
                    bar.inc(since_tick);
                    Ok(worker.result)
                })
            })
            .collect();
        let results = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BenchError::new("a client thread panicked")))
            })
            .collect();
        clients_done.store(true, Ordering::Relaxed);
        if let Some(sampler) = sampler {
            // A panicked sampler only costs the timeline its samples.
            samples = sampler.join().unwrap_or_default();
        }
        results
    });
    let elapsed = started.elapsed();
    bar.finish_and_clear();
    let mut hists = vec![Latencies::new(); OpKind::ALL.len()];
    let mut not_found = 0;
    let mut first_errors = Vec::new();
    let mut timelines = Vec::new();
    for r in results {
        let mut r = r?;
        timelines.extend(r.timeline.take());
        for (total, h) in hists.iter_mut().zip(&r.hists) {
            total.merge(h);
        }
        not_found += r.not_found;
        first_errors.extend(r.errors);
    }
    let errors = hists.iter().map(|h| h.summary().errors).sum();
    let operations: u64 = hists.iter().map(Latencies::count).sum();
    let ops = OpKind::ALL
        .iter()
        .zip(&hists)
        .filter(|(_, h)| h.count() > 0 || h.summary().errors > 0)
        .map(|(k, h)| (k.name().to_string(), h.summary()))
        .collect();
    let secs = elapsed.as_secs_f64().max(1e-9);
    let (timeline, tail_account) = if config.timeline {
        let (seconds, account) = timeline::assemble(&timelines, &samples);
        (seconds, Some(account))
    } else {
        (Vec::new(), None)
    };
    Ok(PhaseReport {
        store: store.name(),
        phase,
        workload: config.workload.to_string(),
        threads: config.threads,
        runtime_ms: secs * 1000.0,
        throughput: operations as f64 / secs,
        operations,
        reads_not_found: not_found,
        errors,
        first_errors,
        ops,
        peak_rss_kib: peak_rss_kib(),
        timeline,
        tail_account,
    })
}

/// The store's background work at the end of each second of the phase
/// (`samples[i]` for second `i`), until the clients are done.
fn sample_each_second(
    store: &dyn YcsbStore,
    started: Instant,
    clients_done: &AtomicBool,
) -> Vec<Option<BackgroundSample>> {
    let mut samples = Vec::new();
    while !clients_done.load(Ordering::Relaxed) {
        let due = started + Duration::from_secs(samples.len() as u64 + 1);
        // Short naps, so the phase's end is not held up by a second.
        while Instant::now() < due && !clients_done.load(Ordering::Relaxed) {
            std::thread::sleep(
                due.saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(50)),
            );
        }
        samples.push(store.background());
    }
    samples
}

struct Worker {
    rng: StdRng,
    chooser: KeyChooser,
    names: Vec<String>,
    values: Vec<Vec<u8>>,
    result: ThreadResult,
}

impl Worker {
    fn timed<T>(
        &mut self,
        kind: OpKind,
        op: impl FnOnce(&mut Self) -> BenchResult<T>,
    ) -> Option<T> {
        let start = Instant::now();
        let out = op(self);
        let end = Instant::now();
        let elapsed = end.saturating_duration_since(start);
        if let Some(timeline) = &mut self.result.timeline {
            timeline.record(end, elapsed);
        }
        match out {
            Ok(v) => {
                self.result.hists[kind.index()].record(elapsed);
                Some(v)
            }
            Err(e) => {
                self.result.hists[kind.index()].record_error();
                if self.result.errors.len() < KEPT_ERRORS {
                    self.result
                        .errors
                        .push(format!("{} failed: {e}", kind.name()));
                }
                report_error(kind, &e);
                None
            }
        }
    }

    fn fill_all_fields(&mut self) {
        for v in &mut self.values {
            random_value(&mut self.rng, v);
        }
    }

    fn insert(&mut self, session: &mut dyn YcsbSession, keynum: u64) -> bool {
        self.fill_all_fields();
        let key = key_bytes(keynum);
        self.timed(OpKind::Insert, |w| {
            let fields: Vec<(&str, &[u8])> = w
                .names
                .iter()
                .zip(&w.values)
                .map(|(n, v)| (n.as_str(), v.as_slice()))
                .collect();
            session.insert(&key, &fields)
        })
        .is_some()
    }

    fn load_one(&mut self, session: &mut dyn YcsbSession) {
        let n = self.chooser.inserts().next();
        if self.insert(session, n) {
            self.chooser.inserts().acknowledge(n);
        }
    }

    /// An update writes one random field (`writeallfields=false`).
    fn update_fields(&mut self) -> usize {
        let field = self.rng.random_range(0..FIELD_COUNT);
        random_value(&mut self.rng, &mut self.values[field]);
        field
    }

    fn run_one(&mut self, session: &mut dyn YcsbSession, workload: Workload) {
        let kind = workload.mix().choose(self.rng.random());
        if kind == OpKind::Insert {
            let n = self.chooser.inserts().next();
            if self.insert(session, n) {
                self.chooser.inserts().acknowledge(n);
            }
            return;
        }
        let Some(keynum) = self.chooser.next_existing(&mut self.rng) else {
            return;
        };
        let key = key_bytes(keynum);
        match kind {
            OpKind::Read => {
                if let Some(0) = self.timed(kind, |_| session.read(&key)) {
                    self.result.not_found += 1;
                }
            }
            OpKind::Update => {
                let f = self.update_fields();
                self.timed(kind, |w| {
                    session.update(&key, &[(w.names[f].as_str(), w.values[f].as_slice())])
                });
            }
            OpKind::Scan => {
                let len = self.rng.random_range(1..=MAX_SCAN_LENGTH);
                self.timed(kind, |_| session.scan(&key, len));
            }
            OpKind::ReadModifyWrite => {
                let f = self.update_fields();
                let found = self.timed(kind, |w| {
                    let found = session.read(&key)?;
                    session.update(&key, &[(w.names[f].as_str(), w.values[f].as_slice())])?;
                    Ok(found)
                });
                if let Some(0) = found {
                    self.result.not_found += 1;
                }
            }
            OpKind::Insert => {}
        }
    }
}

/// Errors are counted in the report; the first few are also printed so a
/// broken target is visible without flooding the terminal.
fn report_error(kind: OpKind, e: &BenchError) {
    static PRINTED: AtomicU64 = AtomicU64::new(0);
    if PRINTED.fetch_add(1, Ordering::Relaxed) < 10 {
        eprintln!("{} failed: {e}", kind.name());
    }
}

/// Record codec for key-value peers that keep a record in one value (as
/// YCSB's RocksDB binding does): per field, a u32 name length, the name, a
/// u32 value length and the value, big-endian.
pub mod record {
    use crate::{BenchError, BenchResult};

    /// Encodes fields into one value.
    pub fn encode(fields: &[(&str, &[u8])]) -> Vec<u8> {
        let size: usize = fields.iter().map(|(n, v)| 8 + n.len() + v.len()).sum();
        let mut out = Vec::with_capacity(size);
        for (name, value) in fields {
            out.extend_from_slice(&(name.len() as u32).to_be_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&(value.len() as u32).to_be_bytes());
            out.extend_from_slice(value);
        }
        out
    }

    /// Decodes a value written by [`encode`].
    pub fn decode(mut buf: &[u8]) -> BenchResult<Vec<(String, Vec<u8>)>> {
        fn take<'a>(buf: &mut &'a [u8]) -> BenchResult<&'a [u8]> {
            let len_bytes: [u8; 4] = buf
                .get(..4)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| BenchError::new("truncated record"))?;
            let len = u32::from_be_bytes(len_bytes) as usize;
            let item = buf
                .get(4..4 + len)
                .ok_or_else(|| BenchError::new("truncated record"))?;
            *buf = &buf[4 + len..];
            Ok(item)
        }
        let mut fields = Vec::new();
        while !buf.is_empty() {
            let name = String::from_utf8_lossy(take(&mut buf)?).into_owned();
            let value = take(&mut buf)?.to_vec();
            fields.push((name, value));
        }
        Ok(fields)
    }

    /// Replaces (or adds) fields of an encoded record.
    pub fn merge(existing: &[u8], fields: &[(&str, &[u8])]) -> BenchResult<Vec<u8>> {
        let mut current = decode(existing)?;
        for (name, value) in fields {
            match current.iter_mut().find(|(n, _)| n == name) {
                Some((_, v)) => *v = value.to_vec(),
                None => current.push((name.to_string(), value.to_vec())),
            }
        }
        let refs: Vec<(&str, &[u8])> = current
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
            .collect();
        Ok(encode(&refs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_codec_round_trips_and_merges() {
        let v = record::encode(&[("field0", b"abc"), ("field1", b"")]);
        let d = record::decode(&v).unwrap();
        assert_eq!(
            d,
            vec![
                ("field0".to_string(), b"abc".to_vec()),
                ("field1".to_string(), Vec::new())
            ]
        );
        let m = record::merge(&v, &[("field1", b"xyz")]).unwrap();
        assert_eq!(record::decode(&m).unwrap()[1].1, b"xyz".to_vec());
        assert!(record::decode(&v[..v.len() - 1]).is_err());
    }

    /// A store that fails every insert after the first `ok` and finds
    /// nothing on reads.
    struct Lossy {
        ok: u64,
        inserts: Arc<AtomicU64>,
    }

    struct LossySession {
        ok: u64,
        inserts: Arc<AtomicU64>,
    }

    impl YcsbStore for Lossy {
        fn name(&self) -> String {
            "lossy".into()
        }
        fn prepare(&self) -> BenchResult<()> {
            Ok(())
        }
        fn session(&self) -> BenchResult<Box<dyn YcsbSession>> {
            Ok(Box::new(LossySession {
                ok: self.ok,
                inserts: Arc::clone(&self.inserts),
            }))
        }
        fn finish(&self) -> BenchResult<()> {
            Ok(())
        }
    }

    impl YcsbSession for LossySession {
        fn insert(&mut self, _: &[u8], _: &[(&str, &[u8])]) -> BenchResult<()> {
            if self.inserts.fetch_add(1, Ordering::SeqCst) < self.ok {
                Ok(())
            } else {
                Err(BenchError::new("region is splitting"))
            }
        }
        fn read(&mut self, _: &[u8]) -> BenchResult<usize> {
            Ok(0)
        }
        fn update(&mut self, _: &[u8], _: &[(&str, &[u8])]) -> BenchResult<()> {
            Ok(())
        }
        fn scan(&mut self, _: &[u8], _: usize) -> BenchResult<usize> {
            Ok(0)
        }
    }

    fn config(workload: Workload) -> PhaseConfig {
        PhaseConfig {
            workload,
            record_count: 50,
            operation_count: 50,
            threads: 1,
            target_ops: None,
            progress: false,
            seed: 1,
            timeline: false,
        }
    }

    #[test]
    fn a_load_with_failed_inserts_is_a_failure_and_keeps_the_first_messages() {
        let store = Lossy {
            ok: 20,
            inserts: Arc::default(),
        };
        let report = run_phase(&store, Phase::Load, &config(Workload::A)).unwrap();
        assert_eq!(report.errors, 30);
        assert_eq!(report.operations, 20);
        assert_eq!(report.first_errors.len(), KEPT_ERRORS);
        assert!(report.first_errors[0].contains("region is splitting"));
        let why = report.failure().unwrap();
        assert!(why.contains("30 operations failed"), "{why}");
    }

    #[test]
    fn reads_that_miss_loaded_records_make_a_run_a_failure() {
        let store = Lossy {
            ok: u64::MAX,
            inserts: Arc::default(),
        };
        let report = run_phase(&store, Phase::Run, &config(Workload::C)).unwrap();
        assert_eq!(report.errors, 0);
        assert_eq!(report.reads_not_found, 50);
        assert!(report
            .failure()
            .unwrap()
            .contains("50 reads found no record"));
    }

    #[test]
    fn ycsb_text_has_the_standard_names() {
        let report = PhaseReport {
            store: "x".into(),
            phase: Phase::Run,
            workload: "a".into(),
            threads: 1,
            runtime_ms: 1000.0,
            throughput: 10.0,
            operations: 10,
            reads_not_found: 0,
            errors: 0,
            first_errors: Vec::new(),
            ops: vec![(
                "READ".into(),
                LatencySummary {
                    operations: 10,
                    ..LatencySummary::default()
                },
            )],
            peak_rss_kib: Some(5),
            timeline: Vec::new(),
            tail_account: None,
        };
        assert_eq!(report.failure(), None, "a clean run counts");
        let text = report.to_ycsb_text();
        assert!(text.contains("[OVERALL], Throughput(ops/sec), 10.00"));
        assert!(text.contains("[READ], 99thPercentileLatency(us), 0.000"));
        assert!(text.contains("[READ], Return=OK, 10"));
    }
}
