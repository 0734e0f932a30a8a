//! `basalt bench compare`: installs or builds the peers, runs every
//! workload for every contender as a separate process (so each has its own
//! peak RSS), alternates the order of contenders from one workload to the
//! next so machine drift hits all of them, and writes
//! `bench/results/<date>.md` plus an SVG chart of the ratios.

use std::fmt::Write as _;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::dbbench::{parse_output, DbBenchResult};
use crate::stats::peak_rss_kib_of;
use crate::ycsb::PhaseReport;
use crate::{BenchError, BenchResult};

/// `basalt bench compare` flags. The defaults are the issue's sizes.
#[derive(Debug, Clone, clap::Args)]
pub struct CompareArgs {
    /// The repository root (holds bench/peers and bench/results).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Where the contenders keep their data (wiped first).
    #[arg(long, default_value = "/tmp/basalt-bench-compare")]
    pub work_dir: PathBuf,
    /// Where the results go (default `<repo>/bench/results`).
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// Name of the results file without extension (default: today's date).
    #[arg(long)]
    pub name: Option<String>,
    /// db_bench: entries.
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,
    /// db_bench: reads of readrandom.
    #[arg(long, default_value_t = 1_000_000)]
    pub reads: u64,
    /// db_bench: seeks of seekrandom (each followed by --seek-nexts steps).
    #[arg(long, default_value_t = 10_000)]
    pub seeks: u64,
    /// db_bench: steps after each seek.
    #[arg(long, default_value_t = 100)]
    pub seek_nexts: u64,
    /// db_bench: key size.
    #[arg(long, default_value_t = 24)]
    pub key_size: usize,
    /// db_bench: value size.
    #[arg(long, default_value_t = 1000)]
    pub value_size: usize,
    /// db_bench: threads of fillsync.
    #[arg(long, default_value_t = 32)]
    pub fillsync_threads: usize,
    /// Block cache of every contender, in bytes.
    #[arg(long, default_value_t = 1 << 30)]
    pub cache_bytes: usize,
    /// Data block size of every embedded contender, in bytes: RocksDB's
    /// and fjall's default (4 KiB), given to Basalt's tables as BLOCKSIZE
    /// so all read blocks of one size. The Thrift runs keep HBase's 64 KiB
    /// (Thrift1's ColumnDescriptor cannot set it).
    #[arg(long, default_value_t = 4096)]
    pub block_size: u32,
    /// YCSB: records.
    #[arg(long, default_value_t = 1_000_000)]
    pub records: u64,
    /// YCSB: operations of workloads A, B, C, D and F.
    #[arg(long, default_value_t = 200_000)]
    pub ops: u64,
    /// YCSB: operations of workload E (scans read 50 records on average).
    #[arg(long, default_value_t = 20_000)]
    pub scan_ops: u64,
    /// YCSB embedded: client threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// YCSB over the network: connections.
    #[arg(long, default_value_t = 16)]
    pub net_threads: usize,
    /// YCSB over the network: operations of workloads C and A.
    #[arg(long, default_value_t = 200_000)]
    pub net_ops: u64,
    /// Skip the db_bench section.
    #[arg(long)]
    pub skip_db_bench: bool,
    /// Skip the embedded YCSB section.
    #[arg(long)]
    pub skip_ycsb: bool,
    /// Skip the network YCSB section.
    #[arg(long)]
    pub skip_net: bool,
    /// Leave RocksDB (librocksdb through the peers binary) out of the
    /// embedded YCSB section.
    #[arg(long)]
    pub no_ycsb_rocksdb: bool,
    /// Keep the data directories afterwards.
    #[arg(long)]
    pub keep_data: bool,
    /// A markdown file appended to the results (profiles, analysis).
    #[arg(long)]
    pub notes: Option<PathBuf>,
}

/// One measured (workload, contender) pair.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    /// `db_bench`, `ycsb` or `ycsb-net`.
    pub section: String,
    /// Benchmark or workload name.
    pub workload: String,
    /// Who ran it.
    pub contender: String,
    /// Operations per second.
    pub ops_per_sec: f64,
    /// Median latency (µs) of the dominant operation.
    pub p50_us: Option<f64>,
    /// 99th percentile latency (µs) of the dominant operation.
    pub p99_us: Option<f64>,
    /// Per operation type latencies, for the table.
    pub detail: String,
    /// Peak RSS of the contender's process, KiB.
    pub peak_rss_kib: Option<u64>,
    /// The command that produced it.
    pub command: String,
    /// Why the run does not count (operations failed, loaded records not
    /// found): the results show it as failed instead of its throughput
    /// ratio. The first error messages are in the contender's log.
    #[serde(default)]
    pub failed: Option<String>,
}

struct Ctx {
    args: CompareArgs,
    basalt: PathBuf,
    peers: PathBuf,
    db_bench: PathBuf,
    logs: PathBuf,
    time: Option<PathBuf>,
    measurements: Vec<Measurement>,
    step: usize,
    log: Vec<String>,
}

fn err(msg: impl Into<String>) -> BenchError {
    BenchError::new(msg)
}

/// Runs the comparison.
pub fn run_compare(args: &CompareArgs) -> BenchResult<()> {
    let repo = args
        .repo
        .canonicalize()
        .map_err(|e| err(format!("repository {}: {e}", args.repo.display())))?;
    if !repo.join("bench/peers/Cargo.toml").exists() {
        return Err(err(format!(
            "{} has no bench/peers/Cargo.toml (pass --repo)",
            repo.display()
        )));
    }
    let basalt = std::env::current_exe().map_err(|e| err(format!("own path: {e}")))?;
    let db_bench = ensure_db_bench()?;
    let peers = build_peers(&repo)?;
    if args.work_dir.exists() {
        std::fs::remove_dir_all(&args.work_dir)
            .map_err(|e| err(format!("cannot wipe {}: {e}", args.work_dir.display())))?;
    }
    let logs = args.work_dir.join("logs");
    std::fs::create_dir_all(&logs)
        .map_err(|e| err(format!("cannot create {}: {e}", logs.display())))?;
    let time = Some(PathBuf::from("/usr/bin/time")).filter(|p| p.exists());
    let mut ctx = Ctx {
        args: args.clone(),
        basalt,
        peers,
        db_bench,
        logs,
        time,
        measurements: Vec::new(),
        step: 0,
        log: Vec::new(),
    };
    let started = Instant::now();
    if !args.skip_db_bench {
        db_bench_section(&mut ctx)?;
    }
    if !args.skip_ycsb {
        ycsb_section(&mut ctx)?;
    }
    if !args.skip_net {
        net_section(&mut ctx)?;
    }
    let out_dir = args.out_dir.clone().unwrap_or(repo.join("bench/results"));
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| err(format!("cannot create {}: {e}", out_dir.display())))?;
    let name = args.name.clone().unwrap_or_else(today);
    let md_path = out_dir.join(format!("{name}.md"));
    let svg_name = format!("{name}.svg");
    let json_path = out_dir.join(format!("{name}.json"));
    std::fs::write(
        out_dir.join(&svg_name),
        render_svg(&ctx.measurements, &ctx.args),
    )
    .map_err(|e| err(format!("cannot write chart: {e}")))?;
    let json = serde_json::to_string_pretty(&ctx.measurements)
        .map_err(|e| err(format!("cannot encode measurements: {e}")))?;
    std::fs::write(&json_path, json).map_err(|e| err(format!("cannot write json: {e}")))?;
    let md = render_markdown(&ctx, &svg_name, started.elapsed());
    std::fs::write(&md_path, md)
        .map_err(|e| err(format!("cannot write {}: {e}", md_path.display())))?;
    if !args.keep_data {
        let _ = std::fs::remove_dir_all(args.work_dir.join("data"));
    }
    println!("wrote {}", md_path.display());
    Ok(())
}

fn today() -> String {
    Command::new("date")
        .arg("-u")
        .arg("+%Y-%m-%d")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "results".to_string())
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

/// RocksDB's db_bench from Debian's rocksdb-tools, installed when missing.
fn ensure_db_bench() -> BenchResult<PathBuf> {
    if let Some(p) = find_in_path("db_bench") {
        return Ok(p);
    }
    eprintln!("compare: installing rocksdb-tools (RocksDB's db_bench) with apt-get");
    let status = Command::new("apt-get")
        .args(["install", "-y", "rocksdb-tools"])
        .status()
        .map_err(|e| err(format!("cannot run apt-get: {e}")))?;
    if !status.success() {
        return Err(err(
            "apt-get install rocksdb-tools failed; install RocksDB's db_bench and retry",
        ));
    }
    find_in_path("db_bench").ok_or_else(|| err("rocksdb-tools installed no db_bench"))
}

/// The peers link the system's librocksdb (the same build as db_bench):
/// installs Debian's librocksdb-dev when its C header is missing.
fn ensure_librocksdb() -> BenchResult<()> {
    if Path::new("/usr/include/rocksdb/c.h").exists() {
        return Ok(());
    }
    eprintln!("compare: installing librocksdb-dev (RocksDB's C API) with apt-get");
    let status = Command::new("apt-get")
        .args(["install", "-y", "librocksdb-dev"])
        .status()
        .map_err(|e| err(format!("cannot run apt-get: {e}")))?;
    if !status.success() {
        return Err(err("apt-get install librocksdb-dev failed"));
    }
    Ok(())
}

/// Builds bench/peers (its own workspace and lock file) in release mode.
fn build_peers(repo: &Path) -> BenchResult<PathBuf> {
    ensure_librocksdb()?;
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(|d| PathBuf::from(d).join("peers"))
        .unwrap_or_else(|| repo.join("target/peers"));
    eprintln!(
        "compare: building bench/peers into {}",
        target_dir.display()
    );
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--release", "--locked", "--manifest-path"])
        .arg(repo.join("bench/peers/Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target_dir)
        .status()
        .map_err(|e| err(format!("cannot run cargo: {e}")))?;
    if !status.success() {
        return Err(err("building bench/peers failed"));
    }
    Ok(target_dir.join("release/basalt-bench-peers"))
}

struct Outcome {
    stdout: String,
    peak_rss_kib: Option<u64>,
    command: String,
}

fn display_command(program: &Path, args: &[String]) -> String {
    let name = program.file_name().map_or_else(
        || program.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    std::iter::once(name)
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ")
}

impl Ctx {
    fn data(&self, name: &str) -> PathBuf {
        self.args.work_dir.join("data").join(name)
    }

    /// Runs one contender process, its peak RSS measured by /usr/bin/time.
    fn run(&mut self, label: &str, program: &Path, args: &[String]) -> BenchResult<Outcome> {
        let command = display_command(program, args);
        eprintln!("compare: [{label}] {command}");
        self.log.push(command.clone());
        let rss_file = self.logs.join(format!("{label}.rss"));
        let mut cmd = match &self.time {
            Some(time) => {
                let mut c = Command::new(time);
                c.arg("-f").arg("%M").arg("-o").arg(&rss_file).arg(program);
                c
            }
            None => Command::new(program),
        };
        let out = cmd
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| err(format!("cannot run {command}: {e}")))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let _ = std::fs::write(self.logs.join(format!("{label}.out")), &stdout);
        if !out.status.success() {
            return Err(err(format!(
                "[{label}] {command} failed ({}); output in {}",
                out.status,
                self.logs.join(format!("{label}.out")).display()
            )));
        }
        let peak_rss_kib = std::fs::read_to_string(&rss_file)
            .ok()
            .and_then(|s| s.lines().last().and_then(|l| l.trim().parse().ok()));
        Ok(Outcome {
            stdout,
            peak_rss_kib,
            command,
        })
    }

    /// Contenders in the order of this step: alternating, so neither side
    /// always runs first.
    fn order<'a>(&mut self, contenders: &[&'a str]) -> Vec<&'a str> {
        let mut v = contenders.to_vec();
        if !v.is_empty() {
            let by = self.step % v.len();
            v.rotate_left(by);
        }
        self.step += 1;
        v
    }
}

fn db_bench_args(
    ctx: &Ctx,
    dir: &Path,
    benchmarks: &str,
    threads: usize,
    reads: u64,
    existing: bool,
) -> Vec<String> {
    let a = &ctx.args;
    // fillsync writes num / 1000 entries per thread, as db_bench documents
    // it; RocksDB 7.8 needs --writes for that (it otherwise writes num).
    let writes = if benchmarks == "fillsync" {
        (a.num / 1000).max(1)
    } else {
        a.num
    };
    vec![
        format!("--benchmarks={benchmarks}"),
        format!("--num={}", a.num),
        format!("--reads={reads}"),
        format!("--writes={writes}"),
        format!("--key_size={}", a.key_size),
        format!("--value_size={}", a.value_size),
        format!("--threads={threads}"),
        format!("--seek_nexts={}", a.seek_nexts),
        format!("--cache_size={}", a.cache_bytes),
        format!("--block_size={}", a.block_size),
        "--compression_type=none".to_string(),
        "--histogram=1".to_string(),
        format!("--use_existing_db={}", u8::from(existing)),
        "--seed=42".to_string(),
        format!("--db={}", dir.display()),
    ]
}

fn db_bench_section(ctx: &mut Ctx) -> BenchResult<()> {
    // Groups run as separate processes; readrandom runs twice in its
    // process and the second (warm cache) pass counts.
    let groups: Vec<(&str, &str, usize, u64, bool)> = vec![
        ("fill", "fillrandom,overwrite", 1, ctx.args.reads, false),
        ("read", "readrandom,readrandom", 1, ctx.args.reads, true),
        ("seek", "seekrandom", 1, ctx.args.seeks, true),
        (
            "sync",
            "fillsync",
            ctx.args.fillsync_threads,
            ctx.args.reads,
            false,
        ),
    ];
    for (group, benchmarks, threads, reads, existing) in groups {
        for contender in ctx.order(&["basalt", "rocksdb"]) {
            let dir_name = if group == "sync" { "sync" } else { "main" };
            let dir = ctx.data(&format!("dbbench-{contender}-{dir_name}"));
            let args = db_bench_args(ctx, &dir, benchmarks, threads, reads, existing);
            let (program, full_args) = if contender == "basalt" {
                let mut a = vec!["bench".to_string(), "db_bench".to_string()];
                a.extend(args);
                (ctx.basalt.clone(), a)
            } else {
                (ctx.db_bench.clone(), args)
            };
            let out = ctx.run(
                &format!("dbbench-{group}-{contender}"),
                &program,
                &full_args,
            )?;
            let results = parse_output(&out.stdout);
            // The last result of each name counts (the warm readrandom).
            let mut names: Vec<&str> = benchmarks.split(',').collect();
            names.dedup();
            for name in names {
                let r = results
                    .iter()
                    .rev()
                    .find(|r| r.name == name)
                    .ok_or_else(|| err(format!("{contender} printed no {name} result")))?;
                ctx.measurements
                    .push(db_measurement(r, contender, &out, threads));
            }
        }
    }
    Ok(())
}

fn db_measurement(
    r: &DbBenchResult,
    contender: &str,
    out: &Outcome,
    threads: usize,
) -> Measurement {
    let mut detail = format!("{:.3} micros/op", r.micros_per_op);
    if let Some((f, t)) = r.found {
        let _ = write!(detail, ", {f} of {t} found");
    }
    if threads > 1 {
        let _ = write!(detail, ", {threads} threads");
    }
    Measurement {
        section: "db_bench".into(),
        workload: r.name.clone(),
        contender: contender.into(),
        ops_per_sec: r.ops_per_sec,
        p50_us: r.p50_us,
        p99_us: r.p99_us,
        detail,
        peak_rss_kib: out.peak_rss_kib,
        command: out.command.clone(),
        failed: None,
    }
}

fn ycsb_common(
    ctx: &Ctx,
    workload: &str,
    phase: &str,
    ops: u64,
    threads: usize,
    json: &Path,
) -> Vec<String> {
    vec![
        "--workload".into(),
        workload.into(),
        "--phase".into(),
        phase.into(),
        "--records".into(),
        ctx.args.records.to_string(),
        "--operations".into(),
        ops.to_string(),
        "--threads".into(),
        threads.to_string(),
        "--json".into(),
        json.display().to_string(),
        "--no-progress".into(),
    ]
}

fn read_report(json: &Path) -> BenchResult<PhaseReport> {
    let text = std::fs::read_to_string(json)
        .map_err(|e| err(format!("cannot read {}: {e}", json.display())))?;
    let line = text
        .lines()
        .last()
        .ok_or_else(|| err(format!("{} is empty", json.display())))?;
    serde_json::from_str(line).map_err(|e| err(format!("{}: {e}", json.display())))
}

fn ycsb_measurement(
    section: &str,
    report: &PhaseReport,
    contender: &str,
    out: &Outcome,
) -> Measurement {
    let dominant = report
        .ops
        .iter()
        .max_by_key(|(_, s)| s.operations)
        .map(|(_, s)| *s);
    let detail = report
        .ops
        .iter()
        .map(|(name, s)| format!("{name} {:.0}/{:.0}", s.p50_us, s.p99_us))
        .chain(
            (report.reads_not_found > 0).then(|| format!("{} not found", report.reads_not_found)),
        )
        .collect::<Vec<_>>()
        .join(", ");
    let workload = match report.phase {
        crate::ycsb::Phase::Load => "load".to_string(),
        crate::ycsb::Phase::Run => report.workload.to_uppercase(),
    };
    Measurement {
        section: section.into(),
        workload,
        contender: contender.into(),
        ops_per_sec: report.throughput,
        p50_us: dominant.map(|s| s.p50_us),
        p99_us: dominant.map(|s| s.p99_us),
        detail,
        peak_rss_kib: out.peak_rss_kib,
        command: out.command.clone(),
        failed: report.failure(),
    }
}

impl Ctx {
    /// Keeps a failed phase's first error messages in the contender's log
    /// (`<label>.errors` beside its output), named in the results.
    fn keep_errors(&self, label: &str, report: &PhaseReport) {
        let Some(why) = report.failure() else {
            return;
        };
        let path = self.logs.join(format!("{label}.errors"));
        let mut text = format!("{label}: {why}\n");
        for e in &report.first_errors {
            text.push_str(e);
            text.push('\n');
        }
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("compare: cannot write {}: {e}", path.display());
        }
        eprintln!(
            "compare: [{label}] FAILED: {why}; first errors in {}",
            path.display()
        );
    }
}

fn ycsb_section(ctx: &mut Ctx) -> BenchResult<()> {
    // Load once, then A, B, C, F, D, E on the loaded data (D and E insert,
    // so they come last), as YCSB's documentation orders them.
    let steps: Vec<(&str, &str, u64)> = vec![
        ("a", "load", 0),
        ("a", "run", ctx.args.ops),
        ("b", "run", ctx.args.ops),
        ("c", "run", ctx.args.ops),
        ("f", "run", ctx.args.ops),
        ("d", "run", ctx.args.ops),
        ("e", "run", ctx.args.scan_ops),
    ];
    let contenders: &[&str] = if ctx.args.no_ycsb_rocksdb {
        &["basalt", "fjall"]
    } else {
        &["basalt", "fjall", "rocksdb"]
    };
    for (workload, phase, ops) in steps {
        for contender in ctx.order(contenders) {
            let label = format!("ycsb-{phase}-{workload}-{contender}");
            let json = ctx.logs.join(format!("{label}.json"));
            let dir = ctx.data(&format!("ycsb-{contender}"));
            let mut args = vec![
                "ycsb".to_string(),
                "--target".into(),
                contender.into(),
                "--db".into(),
                dir.display().to_string(),
                "--cache-bytes".into(),
                ctx.args.cache_bytes.to_string(),
            ];
            args.extend(ycsb_common(
                ctx,
                workload,
                phase,
                ops,
                ctx.args.threads,
                &json,
            ));
            let program = if contender == "basalt" {
                args.insert(0, "bench".into());
                args.extend(["--block-size".into(), ctx.args.block_size.to_string()]);
                ctx.basalt.clone()
            } else {
                ctx.peers.clone()
            };
            let out = ctx.run(&label, &program, &args)?;
            let report = read_report(&json)?;
            ctx.keep_errors(&label, &report);
            ctx.measurements
                .push(ycsb_measurement("ycsb", &report, contender, &out));
        }
    }
    Ok(())
}

fn free_port() -> BenchResult<u16> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| err(format!("no free port: {e}")))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| err(format!("no free port: {e}")))
}

struct ServerGuard {
    child: Child,
}

impl ServerGuard {
    fn stop(&mut self) {
        // SIGTERM lets the server close the database cleanly.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop();
        }
    }
}

fn net_section(ctx: &mut Ctx) -> BenchResult<()> {
    let port = free_port()?;
    let dir = ctx.data("ycsb-net");
    let log = std::fs::File::create(ctx.logs.join("serve.log"))
        .map_err(|e| err(format!("cannot create server log: {e}")))?;
    let serve_cmd = format!(
        "basalt serve --config serve.toml (block_cache_bytes = {}) --data-dir {} --thrift-port {port}",
        ctx.args.cache_bytes,
        dir.display()
    );
    eprintln!("compare: [serve] {serve_cmd}");
    ctx.log.push(serve_cmd);
    // The server gets the same block cache as the embedded contenders.
    let config = ctx.args.work_dir.join("serve.toml");
    std::fs::write(
        &config,
        format!("[database]\nblock_cache_bytes = {}\n", ctx.args.cache_bytes),
    )
    .map_err(|e| err(format!("cannot write {}: {e}", config.display())))?;
    let child = Command::new(&ctx.basalt)
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .arg("--data-dir")
        .arg(&dir)
        .arg("--thrift-port")
        .arg(port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| err(format!("cannot start basalt serve: {e}")))?;
    let mut server = ServerGuard { child };
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err(err("basalt serve did not start listening within 30 s"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = server.child.id().to_string();
    for (workload, phase, ops) in [
        ("c", "load", 0),
        ("c", "run", ctx.args.net_ops),
        ("a", "run", ctx.args.net_ops),
    ] {
        let label = format!("net-{phase}-{workload}");
        let json = ctx.logs.join(format!("{label}.json"));
        let mut args = vec![
            "bench".to_string(),
            "ycsb".into(),
            "--target".into(),
            "net".into(),
            "--host".into(),
            "127.0.0.1".into(),
            "--port".into(),
            port.to_string(),
        ];
        args.extend(ycsb_common(
            ctx,
            workload,
            phase,
            ops,
            ctx.args.net_threads,
            &json,
        ));
        let basalt = ctx.basalt.clone();
        let mut out = ctx.run(&label, &basalt, &args)?;
        // The server's memory is what a deployment pays for; the client's
        // is a benchmark artefact.
        out.peak_rss_kib = peak_rss_kib_of(&pid);
        let report = read_report(&json)?;
        ctx.keep_errors(&label, &report);
        ctx.measurements
            .push(ycsb_measurement("ycsb-net", &report, "basalt-net", &out));
    }
    server.stop();
    Ok(())
}

/// The version of `package` that `bench/peers/Cargo.lock` pins (what the
/// peers binary was built with), or "unknown".
fn locked_version(lock: &str, package: &str) -> String {
    let name = format!("name = \"{package}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == name {
            if let Some(version) = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("version = "))
            {
                return version.trim_matches('"').to_string();
            }
        }
    }
    "unknown".into()
}

fn machine_info(repo: &Path) -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let peers_lock =
        std::fs::read_to_string(repo.join("bench/peers/Cargo.lock")).unwrap_or_default();
    let fjall = locked_version(&peers_lock, "fjall");
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:").map(|v| v.trim().to_string()))
        .unwrap_or_default();
    let run = |c: &str, a: &[&str]| {
        Command::new(c)
            .args(a)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let kernel = run("uname", &["-sr"]);
    let rustc = run("rustc", &["--version"]);
    let commit = run("git", &["rev-parse", "--short", "HEAD"]);
    let db_bench = run("sh", &["-c", "db_bench --version 2>&1 | head -1"]);
    format!(
        "- CPU: {cpu}, {cores} cores\n- Memory: {mem}\n- Kernel: {kernel}\n- {rustc}\n\
         - Basalt commit: {commit}\n- RocksDB: {db_bench} (Debian rocksdb-tools)\n- fjall: {fjall} (crates.io); librocksdb 7.8.3 (Debian librocksdb-dev) for YCSB\n"
    )
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

fn fmt_rss(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |k| format!("{:.0}", k as f64 / 1024.0))
}

/// Basalt against one peer on one workload.
struct Ratio {
    section: String,
    workload: String,
    peer: String,
    basalt_ops: f64,
    peer_ops: f64,
    /// Set when either run failed (see [`Measurement::failed`]): the pair
    /// has no ratio then.
    failed: Option<String>,
}

impl Ratio {
    fn value(&self) -> f64 {
        self.basalt_ops / self.peer_ops.max(1e-9)
    }
}

fn ratios(ms: &[Measurement]) -> Vec<Ratio> {
    let mut out = Vec::new();
    for m in ms
        .iter()
        .filter(|m| m.contender != "basalt" && m.section != "ycsb-net")
    {
        if let Some(b) = ms
            .iter()
            .find(|b| b.contender == "basalt" && b.section == m.section && b.workload == m.workload)
        {
            let failed = [b, m]
                .iter()
                .filter_map(|x| {
                    x.failed
                        .as_ref()
                        .map(|why| format!("{}: {why}", x.contender))
                })
                .collect::<Vec<_>>();
            out.push(Ratio {
                section: m.section.clone(),
                workload: m.workload.clone(),
                peer: m.contender.clone(),
                basalt_ops: b.ops_per_sec,
                peer_ops: m.ops_per_sec,
                failed: (!failed.is_empty()).then(|| failed.join("; ")),
            });
        }
    }
    // Group the peers of one workload together, in the order of the run.
    let first = |section: &str, workload: &str| {
        ms.iter()
            .position(|m| m.section == section && m.workload == workload)
            .unwrap_or(usize::MAX)
    };
    out.sort_by(|a, b| {
        (first(&a.section, &a.workload), &a.peer).cmp(&(first(&b.section, &b.workload), &b.peer))
    });
    out
}

/// A network workload's absolute target.
struct NetTarget {
    label: String,
    ops: f64,
    target: f64,
    p99_us: Option<f64>,
    p99_limit_us: Option<f64>,
    failed: Option<String>,
}

/// The network targets of the issue, for the workloads that ran.
fn net_targets(ms: &[Measurement]) -> Vec<NetTarget> {
    let find = |w: &str| {
        ms.iter()
            .find(|m| m.section == "ycsb-net" && m.workload == w)
    };
    let mut out = Vec::new();
    if let Some(c) = find("C") {
        out.push(NetTarget {
            label: "YCSB C over Thrift".into(),
            ops: c.ops_per_sec,
            target: 40_000.0,
            p99_us: c.p99_us,
            p99_limit_us: Some(5_000.0),
            failed: c.failed.clone(),
        });
    }
    if let Some(a) = find("A") {
        out.push(NetTarget {
            label: "YCSB A over Thrift".into(),
            ops: a.ops_per_sec,
            target: 25_000.0,
            p99_us: None,
            p99_limit_us: None,
            failed: a.failed.clone(),
        });
    }
    out
}

const TARGETED: [&str; 11] = [
    "fillrandom",
    "overwrite",
    "readrandom",
    "seekrandom",
    "fillsync",
    "A",
    "B",
    "C",
    "D",
    "E",
    "F",
];

fn render_markdown(ctx: &Ctx, svg: &str, elapsed: Duration) -> String {
    let a = &ctx.args;
    let ms = &ctx.measurements;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Basalt vs RocksDB and fjall ({})\n",
        a.name.clone().unwrap_or_else(today)
    );
    let _ = writeln!(
        s,
        "Produced by `basalt bench compare` (`scripts/bench-compare`) in {:.0} minutes. \
         Every (workload, contender) pair ran as its own process, the contenders' order \
         alternating from one workload to the next; peak RSS is that process's maximum \
         resident set (`/usr/bin/time -f %M`; for Thrift, the server's VmHWM).\n",
        elapsed.as_secs_f64() / 60.0
    );
    let _ = writeln!(s, "## Machine\n\n{}", machine_info(&a.repo));
    let _ = writeln!(
        s,
        "The machine is shared: other engineers compiled on the same 2 cores during the run, \
         which the alternation spreads over all contenders but does not remove.\n"
    );
    let _ = writeln!(s, "## Settings\n");
    let _ = writeln!(
        s,
        "- db_bench: {} keys of {} bytes, values of {} bytes, compression off, cache {} MiB and \
         data blocks of {} bytes for both (RocksDB db_bench's default block size; Basalt's \
         table gets it as BLOCKSIZE, whose HBase default is 64 KiB), WAL on without sync (Basalt SYNC_WAL: each write reaches the OS, as RocksDB's \
         WAL does with `--sync=0`); readrandom {} reads (second pass in the process counts: warm \
         cache); seekrandom {} seeks of 1 + {} entries; fillsync {} threads, each writing num/1000 \
         = {} entries fsynced (db_bench's documented fillsync, passed as `--writes` to both; \
         Basalt FSYNC_WAL).",
        a.num,
        a.key_size,
        a.value_size,
        a.cache_bytes >> 20,
        a.block_size,
        a.reads,
        a.seeks,
        a.seek_nexts,
        a.fillsync_threads,
        a.num / 1000
    );
    let _ = writeln!(
        s,
        "- YCSB embedded: {} records of 10 fields x 100 bytes, {} threads, {} operations (E: {}), \
         zipfian 0.99 (scrambled; latest for D), load once then A, B, C, F, D, E on the same \
         data. Data blocks of {} bytes for every contender (fjall's and RocksDB's default; \
         Basalt's BLOCKSIZE). Basalt: one column per field, one version kept. fjall: one value per record \
         (fields serialised), an update reads, merges and rewrites the record; every write is \
         followed by `persist(Buffer)` so it reaches the OS like Basalt's SYNC_WAL. RocksDB \
         (unless --no-ycsb-rocksdb): the system's librocksdb 7.8 through its C API, records \
         stored like fjall's, compression off, LRU block cache of the same size, WAL on \
         without sync.",
        a.records, a.threads, a.ops, a.scan_ops, a.block_size
    );
    let _ = writeln!(
        s,
        "- YCSB over the network: `basalt serve` on loopback, {} connections (binary protocol, \
         buffered transport), {} operations each for C and A, client on the same machine; the \
         table is created over Thrift with one version, block cache on and ROW bloom (HBase \
         shell defaults; Thrift's own ColumnDescriptor defaults turn both off) and HBase's \
         64 KiB blocks (Thrift1 cannot set BLOCKSIZE), the server's block cache sized like the \
         embedded runs.\n",
        a.net_threads, a.net_ops
    );
    let _ = writeln!(
        s,
        "## Ratios (Basalt / peer, throughput)\n\n![chart]({svg})\n"
    );
    let _ = writeln!(
        s,
        "| Benchmark | Peer | Basalt ops/s | Peer ops/s | Basalt/peer | Target met |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---|");
    for r in ratios(ms) {
        let (section, workload, peer) = (&r.section, &r.workload, &r.peer);
        let (b, p) = (r.basalt_ops, r.peer_ops);
        // The issue's targets: db_bench against RocksDB, YCSB against fjall.
        let targeted = TARGETED.contains(&workload.as_str())
            && matches!(
                (section.as_str(), peer.as_str()),
                ("db_bench", "rocksdb") | ("ycsb", "fjall")
            );
        if let Some(why) = &r.failed {
            // A run with errors or lost records has no ratio: its
            // throughput is not comparable.
            let met = if targeted {
                "**no** (failed)"
            } else {
                "(failed)"
            };
            let _ = writeln!(
                s,
                "| {section} {workload} | {peer} | {b:.0} | {p:.0} | failed: {why} | {met} |"
            );
            continue;
        }
        let ratio = r.value();
        let met = if !targeted {
            "(no target)"
        } else if ratio >= 1.0 {
            "yes"
        } else {
            "**no**"
        };
        let _ = writeln!(
            s,
            "| {section} {workload} | {peer} | {b:.0} | {p:.0} | {ratio:.2}x | {met} |"
        );
    }
    for t in net_targets(ms) {
        let ok = t.failed.is_none()
            && t.ops >= t.target
            && match (t.p99_us, t.p99_limit_us) {
                (Some(p), Some(l)) => p < l,
                _ => true,
            };
        let p99_text = match (t.p99_us, t.p99_limit_us) {
            (Some(p), Some(l)) => {
                format!(", p99 {:.2} ms (limit {:.0} ms)", p / 1000.0, l / 1000.0)
            }
            _ => String::new(),
        };
        let p99_text = match &t.failed {
            Some(why) => format!("{p99_text}; failed: {why}"),
            None => p99_text,
        };
        let _ = writeln!(
            s,
            "| {} | target {:.0} ops/s{p99_text} | {:.0} | - | {:.2}x of target | {} |",
            t.label,
            t.target,
            t.ops,
            t.ops / t.target,
            if ok { "yes" } else { "**no**" }
        );
    }
    for (title, section) in [
        ("db_bench workloads", "db_bench"),
        ("YCSB embedded", "ycsb"),
        ("YCSB over the network (Basalt Thrift gateway)", "ycsb-net"),
    ] {
        let rows: Vec<&Measurement> = ms.iter().filter(|m| m.section == section).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(s, "\n## {title}\n");
        let _ = writeln!(
            s,
            "| Workload | Contender | ops/s | p50 µs | p99 µs | Peak RSS MiB | Latencies p50/p99 µs and notes |"
        );
        let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---|");
        for m in rows {
            let notes = match &m.failed {
                Some(why) => format!("**FAILED** ({why}; first errors in its log); {}", m.detail),
                None => m.detail.clone(),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {:.0} | {} | {} | {} | {} |",
                m.workload,
                m.contender,
                m.ops_per_sec,
                fmt_opt(m.p50_us),
                fmt_opt(m.p99_us),
                fmt_rss(m.peak_rss_kib),
                notes
            );
        }
    }
    if let Some(notes) = &a.notes {
        match std::fs::read_to_string(notes) {
            Ok(text) => {
                let _ = writeln!(s, "\n{}", text.trim_end());
            }
            Err(e) => eprintln!("compare: cannot read notes {}: {e}", notes.display()),
        }
    }
    let _ = writeln!(s, "\n## Commands, in the order they ran\n\n```");
    for c in &ctx.log {
        let _ = writeln!(s, "{c}");
    }
    let _ = writeln!(s, "```");
    s
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A horizontal bar chart of Basalt/peer throughput ratios (and, for the
/// network runs, throughput relative to the target), with the 1.0 line.
pub fn render_svg(ms: &[Measurement], _args: &CompareArgs) -> String {
    // A failed run draws no bar: its throughput is not a result.
    let mut bars: Vec<(String, f64)> = ratios(ms)
        .into_iter()
        .map(|r| {
            let label = format!("{} {} vs {}", r.section, r.workload, r.peer);
            match r.failed {
                Some(_) => (format!("{label} (failed)"), 0.0),
                None => (label, r.value()),
            }
        })
        .collect();
    for t in net_targets(ms) {
        let label = format!("{} vs target", t.label);
        match t.failed {
            Some(_) => bars.push((format!("{label} (failed)"), 0.0)),
            None => bars.push((label, t.ops / t.target)),
        }
    }
    let max = bars
        .iter()
        .map(|(_, r)| *r)
        .fold(1.25f64, f64::max)
        .min(20.0);
    let (left, width, row, top) = (250.0, 480.0, 24.0, 40.0);
    let height = top + row * bars.len() as f64 + 40.0;
    let x = |r: f64| left + width * (r.min(max) / max);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"22\" font-size=\"15\">Basalt throughput / peer throughput (higher is better)</text>\n",
        w = left + width + 80.0
    );
    for (i, (label, ratio)) in bars.iter().enumerate() {
        let y = top + row * i as f64;
        let color = if *ratio >= 1.0 { "#2e7d32" } else { "#c62828" };
        let _ = writeln!(
            s,
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{left}\" y=\"{:.0}\" width=\"{:.1}\" height=\"{:.0}\" fill=\"{color}\"/>\
             <text x=\"{:.1}\" y=\"{:.0}\">{ratio:.2}x</text>",
            left - 6.0,
            y + 15.0,
            xml_escape(label),
            y + 3.0,
            (x(*ratio) - left).max(1.0),
            row - 6.0,
            x(*ratio) + 4.0,
            y + 15.0
        );
    }
    let one = x(1.0);
    let bottom = top + row * bars.len() as f64;
    let _ = writeln!(
        s,
        "<line x1=\"{one:.1}\" y1=\"{:.0}\" x2=\"{one:.1}\" y2=\"{bottom:.0}\" stroke=\"black\" \
         stroke-dasharray=\"4,3\"/><text x=\"{one:.1}\" y=\"{:.0}\" text-anchor=\"middle\">1.0x</text>",
        top - 4.0,
        bottom + 16.0
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_peers_lock_file_names_the_fjall_version_in_the_results() {
        let lock = "[[package]]\nname = \"fjall\"\nversion = \"3.1.13\"\nsource = \"registry\"\n\n\
                    [[package]]\nname = \"lsm-tree\"\nversion = \"3.1.10\"\n";
        assert_eq!(locked_version(lock, "fjall"), "3.1.13");
        assert_eq!(locked_version(lock, "lsm-tree"), "3.1.10");
        assert_eq!(locked_version(lock, "rocksdb"), "unknown");
        assert_eq!(locked_version("", "fjall"), "unknown");
    }

    use super::*;

    fn m(section: &str, workload: &str, contender: &str, ops: f64) -> Measurement {
        Measurement {
            section: section.into(),
            workload: workload.into(),
            contender: contender.into(),
            ops_per_sec: ops,
            p50_us: Some(10.0),
            p99_us: Some(4000.0),
            detail: String::new(),
            peak_rss_kib: Some(2048),
            command: "x".into(),
            failed: None,
        }
    }

    #[test]
    fn ratios_pair_basalt_with_each_peer() {
        let ms = vec![
            m("db_bench", "fillrandom", "basalt", 50.0),
            m("db_bench", "fillrandom", "rocksdb", 100.0),
            m("ycsb", "A", "fjall", 10.0),
            m("ycsb", "A", "basalt", 30.0),
            m("ycsb-net", "C", "basalt-net", 50_000.0),
        ];
        let r = ratios(&ms);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].workload, "fillrandom");
        assert!((r[0].value() - 0.5).abs() < 1e-9);
        assert!((r[1].value() - 3.0).abs() < 1e-9);
        assert!(r.iter().all(|r| r.failed.is_none()));
        let t = net_targets(&ms);
        assert_eq!(t.len(), 1);
        let svg = render_svg(&ms, &CompareArgs::parse_default());
        assert!(svg.starts_with("<svg") && svg.contains("0.50x") && svg.contains("3.00x"));
        assert!(svg.contains("1.25x") || svg.contains("vs target"));
    }

    #[test]
    fn a_contender_whose_run_had_errors_counts_as_failed() {
        let mut lossy = m("ycsb", "load", "basalt", 90_000.0);
        lossy.failed = Some("18324 operations failed".into());
        let mut net = m("ycsb-net", "C", "basalt-net", 50_000.0);
        net.failed = Some("12 reads found no record where one should exist".into());
        let ms = vec![lossy, m("ycsb", "load", "fjall", 30_000.0), net];
        let r = ratios(&ms);
        assert_eq!(r.len(), 1);
        assert_eq!(
            r[0].failed.as_deref(),
            Some("basalt: 18324 operations failed")
        );
        let t = net_targets(&ms);
        assert!(t[0].failed.is_some());
        let svg = render_svg(&ms, &CompareArgs::parse_default());
        assert!(svg.contains("(failed)"));
        assert!(!svg.contains("3.00x"), "no ratio drawn for a failed run");
    }

    impl CompareArgs {
        fn parse_default() -> Self {
            use clap::Parser;
            #[derive(clap::Parser)]
            struct W {
                #[command(flatten)]
                a: CompareArgs,
            }
            W::parse_from(["x"]).a
        }
    }
}
