//! `basalt bench`: the subcommand the `basalt` binary delegates to.

use std::path::PathBuf;

use clap::builder::BoolishValueParser;

use crate::cli::{run_ycsb, YcsbArgs};
use crate::compare::{run_compare, CompareArgs};
use crate::dbbench::{format_result, run_benchmark, unit_of, Benchmark, DbBenchConfig};
use crate::targets::{BasaltEmbedded, BasaltKv, BasaltNetwork};
use crate::{BenchError, BenchResult};

/// `basalt bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Debug, clap::Subcommand)]
enum BenchCommand {
    /// YCSB core workloads A-F against Basalt embedded or over Thrift.
    Ycsb(YcsbArgs),
    /// Micro benchmarks with RocksDB db_bench's names, flags and output.
    #[command(name = "db_bench", alias = "db-bench")]
    DbBench(DbBenchArgs),
    /// The whole comparison with the peers; writes bench/results/<date>.md.
    Compare(CompareArgs),
    /// How long a snapshot of a large table takes (10 GiB by default), on
    /// a data directory or object storage.
    Snapshot(crate::snapshot::SnapshotBenchArgs),
    /// What secondary indexes cost a write (0, 1 and 3 indexes), and a
    /// lookup by index against the filtered full scan it replaces.
    Indexes(crate::indexes::IndexBenchArgs),
}

/// db_bench's flags (same names, `--flag=value` form).
#[derive(Debug, clap::Args)]
pub struct DbBenchArgs {
    /// Comma-separated benchmarks, run in order.
    #[arg(
        long,
        default_value = "fillseq,fillrandom,overwrite,readrandom,seekrandom,readseq"
    )]
    benchmarks: String,
    /// Entries.
    #[arg(long, default_value_t = 1_000_000)]
    num: u64,
    /// Reads per thread of the read benchmarks (-1: num).
    #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
    reads: i64,
    /// Writes per thread of the write benchmarks (-1: num).
    #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
    writes: i64,
    /// Key size in bytes.
    #[arg(long = "key_size", default_value_t = 16)]
    key_size: usize,
    /// Value size in bytes.
    #[arg(long = "value_size", default_value_t = 100)]
    value_size: usize,
    /// Threads; each runs the whole benchmark.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Entries stepped after each seek of seekrandom.
    #[arg(long = "seek_nexts", default_value_t = 0)]
    seek_nexts: usize,
    /// Block cache bytes.
    #[arg(long = "cache_size", default_value_t = 8 << 20)]
    cache_size: usize,
    /// none, snappy, lz4, zstd or zlib.
    #[arg(long = "compression_type", default_value = "none")]
    compression_type: String,
    /// Data block size in bytes (the family's BLOCKSIZE). The default is
    /// RocksDB db_bench's (4 KiB), so both sides of a comparison read blocks
    /// of one size; HBase's family default is 64 KiB.
    #[arg(long = "block_size", default_value_t = 4096)]
    block_size: u32,
    /// Data directory.
    #[arg(long, default_value = "dbbench-data")]
    db: PathBuf,
    /// Keep existing data for fillseq/fillrandom/fillsync.
    #[arg(long = "use_existing_db", default_value = "false", value_parser = BoolishValueParser::new(), action = clap::ArgAction::Set)]
    use_existing_db: bool,
    /// Print latency percentiles after each result.
    #[arg(long, default_value = "false", value_parser = BoolishValueParser::new(), action = clap::ArgAction::Set)]
    histogram: bool,
    /// Write without the log.
    #[arg(long = "disable_wal", default_value = "false", value_parser = BoolishValueParser::new(), action = clap::ArgAction::Set)]
    disable_wal: bool,
    /// Seed of the key generators.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// Runs `basalt bench`.
pub fn run(args: BenchArgs) -> Result<(), String> {
    let result = match args.command {
        BenchCommand::Ycsb(a) => ycsb(&a),
        BenchCommand::DbBench(a) => db_bench(&a),
        BenchCommand::Compare(a) => run_compare(&a),
        BenchCommand::Snapshot(a) => crate::snapshot::run_snapshot_bench(&a),
        BenchCommand::Indexes(a) => crate::indexes::run_index_bench(&a),
    };
    result.map_err(|e| e.to_string())
}

fn ycsb(args: &YcsbArgs) -> BenchResult<()> {
    match args.target.as_str() {
        "basalt" => {
            let store = BasaltEmbedded::open_with_compaction_nice(
                args.db.clone(),
                args.cache_bytes,
                args.block_size,
                args.compaction_nice,
            )?;
            run_ycsb(args, &store)?;
        }
        "net" => {
            let store = match &args.gateways {
                Some(list) => BasaltNetwork::spread(
                    list.split(',')
                        .map(str::trim)
                        .filter(|a| !a.is_empty())
                        .map(String::from)
                        .collect(),
                )?,
                None => BasaltNetwork::new(&args.host, args.port),
            };
            run_ycsb(args, &store)?;
        }
        other => {
            return Err(BenchError::new(format!(
                "unknown target '{other}' (basalt or net; fjall runs from bench/peers)"
            )))
        }
    }
    Ok(())
}

fn compression(name: &str) -> BenchResult<basalt::Compression> {
    let name = match name.to_ascii_lowercase().as_str() {
        "zlib" => "gz".to_string(),
        other => other.to_string(),
    };
    name.parse::<basalt::Compression>()
        .map_err(|e| BenchError::new(e.to_string()))
}

fn db_bench(args: &DbBenchArgs) -> BenchResult<()> {
    let benches = args
        .benchmarks
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(Benchmark::parse)
        .collect::<BenchResult<Vec<_>>>()?;
    let config = DbBenchConfig {
        num: args.num,
        reads: u64::try_from(args.reads).ok(),
        writes: u64::try_from(args.writes).ok(),
        key_size: args.key_size,
        value_size: args.value_size,
        threads: args.threads,
        seek_nexts: args.seek_nexts,
        seed: args.seed,
        use_existing_db: args.use_existing_db,
    };
    if config.key_size == 0 {
        return Err(BenchError::new("--key_size must be at least 1"));
    }
    let mut store = BasaltKv::open(
        args.db.clone(),
        Some(args.cache_size),
        compression(&args.compression_type)?,
        args.block_size,
        args.disable_wal,
    )?;
    println!("Basalt:     version {}", env!("CARGO_PKG_VERSION"));
    println!(
        "Keys:       {} bytes each\nValues:     {} bytes each\nEntries:    {}\nCompression: {}\nBlock size: {} bytes",
        args.key_size, args.value_size, args.num, args.compression_type, args.block_size
    );
    println!("DB path: [{}]", args.db.display());
    for bench in benches {
        let outcome = run_benchmark(&mut store, bench, &config);
        let (result, hist) = match outcome {
            Ok(r) => r,
            Err(e) => {
                let _ = store.close();
                return Err(e);
            }
        };
        print!(
            "{}",
            format_result(&result, args.histogram.then_some(&hist), unit_of(bench))
        );
    }
    if let Some(rss) = crate::stats::peak_rss_kib() {
        println!("Peak RSS: {rss} KiB");
    }
    store.close()
}
