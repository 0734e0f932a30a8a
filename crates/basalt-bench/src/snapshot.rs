//! `basalt bench snapshot`: how long a snapshot of a large table takes, on
//! a data directory or on object storage (issue 33's target: a 10 GB
//! table's in under 2 s, since a snapshot references the store files and
//! copies none).
//!
//! It loads a table to the asked size (without the log: the load is not
//! what is measured), flushes it, lets its compactions finish, then takes
//! `--runs` snapshots one after the other, timing each call from request
//! to answer (the flush of an idle table included, as a client sees it),
//! and deletes each one after. The report names the size the snapshot
//! references, its file count and the median time.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use basalt::{ColumnFamilyDescriptor, Database, Durability, Options, Put, TableDescriptor};
use bytes::Bytes;
use rand::{Rng, SeedableRng};

use crate::stats::median;
use crate::{BenchError, BenchResult};

const TABLE: &str = "snapbench";
const FAMILY: &str = "f";

/// `basalt bench snapshot`'s flags.
#[derive(Debug, clap::Args)]
pub struct SnapshotBenchArgs {
    /// Bytes of values to load (default 10 GiB).
    #[arg(long, default_value_t = 10 << 30)]
    bytes: u64,
    /// Bytes of each value (random, incompressible).
    #[arg(long, default_value_t = 64 << 10)]
    value_size: usize,
    /// Regions of the table (pre-split evenly over its keys).
    #[arg(long, default_value_t = 16)]
    regions: u64,
    /// Snapshots timed.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Loader threads.
    #[arg(long, default_value_t = 2)]
    threads: u64,
    /// Data directory.
    #[arg(long, default_value = "snapshot-bench-data")]
    db: PathBuf,
    /// Keep the data on object storage (s3://BUCKET[/PREFIX] or
    /// file:///DIR; S3 settings from the AWS_* environment).
    #[arg(long)]
    storage: Option<String>,
    /// Time snapshots of the table a run before loaded, without loading.
    #[arg(long)]
    use_existing_db: bool,
    /// Also write the report (Markdown) to this file.
    #[arg(long)]
    report: Option<PathBuf>,
}

/// Runs `basalt bench snapshot`.
pub fn run_snapshot_bench(args: &SnapshotBenchArgs) -> BenchResult<()> {
    if args.value_size == 0 || args.regions == 0 || args.runs == 0 || args.threads == 0 {
        return Err(BenchError::new(
            "--value-size, --regions, --runs and --threads must be at least 1",
        ));
    }
    let db = open(args)?;
    let where_ = args
        .storage
        .clone()
        .unwrap_or_else(|| format!("data directory {}", args.db.display()));
    let mut lines = vec![
        format!("# Snapshot of a large table: {where_}"),
        String::new(),
    ];
    if !(args.use_existing_db && db.table_exists(TABLE)) {
        let loaded = load(&db, args)?;
        lines.push(format!(
            "Loaded {} MiB of values in {:.1} s ({:.0} MiB/s, {} regions, {} threads, no log), then flushed and compacted.",
            args.bytes >> 20,
            loaded.as_secs_f64(),
            (args.bytes >> 20) as f64 / loaded.as_secs_f64().max(0.001),
            args.regions,
            args.threads
        ));
        lines.push(String::new());
    }
    lines.push("| run | took | files referenced | bytes referenced |".into());
    lines.push("|---:|---:|---:|---:|".into());
    let mut took = Vec::with_capacity(args.runs);
    for run in 1..=args.runs {
        let name = format!("bench-{run}");
        let started = Instant::now();
        db.snapshot(TABLE, &name, false, 0)
            .map_err(failed("snapshot"))?;
        let elapsed = started.elapsed();
        let info = db
            .list_snapshots(Some(&name))
            .map_err(failed("list_snapshots"))?
            .into_iter()
            .next()
            .ok_or_else(|| BenchError::new(format!("snapshot {name} is not listed")))?;
        lines.push(format!(
            "| {run} | {:.3} s | {} | {} MiB |",
            elapsed.as_secs_f64(),
            info.files,
            info.file_bytes >> 20
        ));
        took.push(elapsed.as_secs_f64());
        db.delete_snapshot(&name)
            .map_err(failed("delete_snapshot"))?;
    }
    lines.push(String::new());
    lines.push(format!(
        "Median of {} snapshots: **{:.3} s** (target: under 2 s).",
        took.len(),
        median(&mut took)
    ));
    db.close().map_err(failed("close"))?;
    let report = lines.join("\n") + "\n";
    print!("{report}");
    if let Some(path) = &args.report {
        std::fs::write(path, &report)
            .map_err(|e| BenchError::new(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

fn failed(what: &'static str) -> impl Fn(basalt::Error) -> BenchError {
    move |e| BenchError::new(format!("{what}: {e}"))
}

fn open(args: &SnapshotBenchArgs) -> BenchResult<Database> {
    let options = Options::new(&args.db);
    let mut builder = Database::builder(options);
    if let Some(url) = &args.storage {
        let storage = basalt_object_store::open_storage(
            &basalt_object_store::StorageConfig::for_url(url.clone()),
            &args.db,
        )
        .map_err(|e| BenchError::new(format!("cannot use the storage {url}: {e}")))?
        .ok_or_else(|| BenchError::new("no storage URL"))?;
        builder = builder
            .file_store(storage.file_store())
            .wal_in_file_store(storage.wal_options());
    }
    builder
        .open()
        .map_err(|e| BenchError::new(format!("cannot open {}: {e}", args.db.display())))
}

/// Row key `i` of `rows`: fixed width, so split points fall evenly.
fn row_key(i: u64) -> String {
    format!("row{i:012}")
}

/// Loads the table and waits until it holds only flushed, compacted files.
fn load(db: &Database, args: &SnapshotBenchArgs) -> BenchResult<Duration> {
    if db.table_exists(TABLE) {
        db.disable_table(TABLE).map_err(failed("disable"))?;
        db.drop_table(TABLE).map_err(failed("drop"))?;
    }
    let rows = args.bytes.div_ceil(args.value_size as u64).max(1);
    let splits: Vec<Bytes> = (1..args.regions)
        .map(|r| Bytes::from(row_key(rows * r / args.regions)))
        .collect();
    db.create_table_with_splits(
        TableDescriptor::new(TABLE).family(ColumnFamilyDescriptor::new(FAMILY).max_versions(1)),
        &splits,
    )
    .map_err(failed("create table"))?;
    // One random buffer, twice a value long: each value is a window of it
    // at a random offset, so values differ and do not compress.
    let mut random = rand::rngs::StdRng::seed_from_u64(33);
    let pool: Vec<u8> = (0..args.value_size * 2).map(|_| random.random()).collect();
    let pool = Bytes::from(pool);
    let started = Instant::now();
    let result: BenchResult<()> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..args.threads)
            .map(|t| {
                let pool = pool.clone();
                scope.spawn(move || -> BenchResult<()> {
                    let table = db.table(TABLE).map_err(failed("table"))?;
                    let mut random = rand::rngs::StdRng::seed_from_u64(t);
                    let mut i = t;
                    while i < rows {
                        let at = random.random_range(0..args.value_size);
                        let value = pool.slice(at..at + args.value_size);
                        let put = Put::new(row_key(i))
                            .add(FAMILY, "v", value)
                            .durability(Durability::SkipWal);
                        table.put(&put).map_err(failed("put"))?;
                        i += args.threads;
                    }
                    Ok(())
                })
            })
            .collect();
        for worker in workers {
            worker
                .join()
                .map_err(|_| BenchError::new("a loader thread panicked"))??;
        }
        Ok(())
    });
    result?;
    db.flush_table(TABLE).map_err(failed("flush"))?;
    db.compact_table(TABLE, false).map_err(failed("compact"))?;
    Ok(started.elapsed())
}
