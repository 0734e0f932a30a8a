//! Command-line arguments shared by `basalt bench` and the peers binary.

use std::io::Write as _;
use std::path::PathBuf;

use crate::workload::Workload;
use crate::ycsb::{run_phase, Phase, PhaseConfig, PhaseReport, YcsbStore};
use crate::{BenchError, BenchResult};

/// `ycsb`: the YCSB core workloads.
#[derive(Debug, Clone, clap::Args)]
pub struct YcsbArgs {
    /// The store: `basalt` (embedded), `net` (a `basalt serve` gateway) or
    /// a peer the binary knows (`fjall` in basalt-bench-peers).
    #[arg(long, default_value = "basalt")]
    pub target: String,
    /// Data directory of embedded targets.
    #[arg(long, default_value = "ycsb-data")]
    pub db: PathBuf,
    /// Gateway host of the `net` target.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Gateway port of the `net` target.
    #[arg(long, default_value_t = 9090)]
    pub port: u16,
    /// Gateways of the `net` target as HOST:PORT,HOST:PORT,...: client
    /// threads connect to them in turn (a cluster's region servers);
    /// overrides --host and --port.
    #[arg(long, value_name = "LIST")]
    pub gateways: Option<String>,
    /// Workload a-f (`workloada` also accepted).
    #[arg(long, short = 'w', default_value = "a")]
    pub workload: String,
    /// `load`, `run`, or `both` (load then run).
    #[arg(long, default_value = "both")]
    pub phase: String,
    /// Records loaded (`recordcount`).
    #[arg(long, default_value_t = 1_000_000)]
    pub records: u64,
    /// Operations of the run phase (`operationcount`).
    #[arg(long, default_value_t = 1_000_000)]
    pub operations: u64,
    /// Client threads (connections for `net`).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Target operations per second over all threads (default: flat out).
    #[arg(long)]
    pub target_ops: Option<f64>,
    /// Block cache size of embedded targets, in bytes.
    #[arg(long)]
    pub cache_bytes: Option<usize>,
    /// Data block size (BLOCKSIZE) of the table an embedded Basalt target
    /// creates, in bytes (default: HBase's 64 KiB).
    #[arg(long)]
    pub block_size: Option<u32>,
    /// Append each phase's report as a JSON line to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// No progress bars.
    #[arg(long)]
    pub no_progress: bool,
    /// Seed of the client threads' generators.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Print (and keep in --json) each second of a phase: operations, p99
    /// and slowest latency, operations of at least 1,024 us, and the
    /// store's flushes and compactions then (embedded Basalt reports
    /// them), with an account of the slow operations by background work.
    #[arg(long)]
    pub timeline: bool,
    /// The embedded Basalt target's `compaction_nice` (default: the
    /// database's, 0): `10` measures compactions at a lower CPU priority.
    #[arg(long)]
    pub compaction_nice: Option<i32>,
}

impl YcsbArgs {
    /// The phases requested, in order.
    pub fn phases(&self) -> BenchResult<Vec<Phase>> {
        match self.phase.as_str() {
            "load" => Ok(vec![Phase::Load]),
            "run" => Ok(vec![Phase::Run]),
            "both" => Ok(vec![Phase::Load, Phase::Run]),
            other => Err(BenchError::new(format!(
                "unknown phase '{other}' (expected load, run or both)"
            ))),
        }
    }

    /// The phase configuration.
    pub fn config(&self) -> BenchResult<PhaseConfig> {
        if let Some(t) = self.target_ops {
            if !(t.is_finite() && t > 0.0) {
                return Err(BenchError::new("--target-ops must be a positive number"));
            }
        }
        Ok(PhaseConfig {
            workload: self.workload.parse::<Workload>()?,
            record_count: self.records,
            operation_count: self.operations,
            threads: self.threads,
            target_ops: self.target_ops,
            progress: !self.no_progress,
            seed: self.seed,
            timeline: self.timeline,
        })
    }
}

/// Runs the requested phases against `store`, prints YCSB's report for
/// each and appends them to `--json`; finishes the store at the end.
pub fn run_ycsb(args: &YcsbArgs, store: &dyn YcsbStore) -> BenchResult<Vec<PhaseReport>> {
    let phases = args.phases()?;
    let config = args.config()?;
    let mut reports = Vec::new();
    for phase in phases {
        let report = run_phase(store, phase, &config);
        let report = match report {
            Ok(r) => r,
            Err(e) => {
                let _ = store.finish();
                return Err(e);
            }
        };
        println!(
            "# {} {:?} workload {} ({} threads)",
            report.store, report.phase, report.workload, report.threads
        );
        print!("{}", report.to_ycsb_text());
        print!("{}", report.timeline_text());
        if let Some(path) = &args.json {
            append_json(path, &report)?;
        }
        reports.push(report);
    }
    store.finish()?;
    Ok(reports)
}

fn append_json(path: &PathBuf, report: &PhaseReport) -> BenchResult<()> {
    let line = serde_json::to_string(report)
        .map_err(|e| BenchError::new(format!("cannot encode report: {e}")))?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| BenchError::new(format!("cannot open {}: {e}", path.display())))?;
    writeln!(f, "{line}")
        .map_err(|e| BenchError::new(format!("cannot write {}: {e}", path.display())))
}
