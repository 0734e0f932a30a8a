//! `basalt bench indexes`: what secondary indexes cost a write, and what a
//! lookup by an index saves over the filtered full scan it replaces
//! (issue 36).
//!
//! One embedded database; for 0, 1 and 3 indexes, a table of its own is
//! loaded with the same rows (an order: buyer, seller, status, total) by
//! `--threads` writers, timed from the first put to the last answer. Then,
//! on the table with 3 indexes, one buyer's orders are read `--lookups`
//! times by the index and by a full scan with a `SingleColumnValueFilter`.
//! Each measurement runs `--runs` times; the report gives the medians, as
//! ratios against the peer in the same run (0 indexes; the filtered scan).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use basalt::{
    ColumnFamilyDescriptor, Database, Filter, IndexColumn, IndexDescriptor, IndexTransform,
    Options, Put, Scan, TableDescriptor,
};
use bytes::Bytes;

use crate::stats::median;
use crate::{BenchError, BenchResult};

/// `basalt bench indexes`'s flags.
#[derive(Debug, clap::Args)]
pub struct IndexBenchArgs {
    /// Rows loaded into each table.
    #[arg(long, default_value_t = 50_000)]
    rows: u64,
    /// Distinct buyers (a lookup returns about rows / buyers orders).
    #[arg(long, default_value_t = 1_000)]
    buyers: u64,
    /// Writer threads.
    #[arg(long, default_value_t = 4)]
    threads: u64,
    /// Lookups timed per run.
    #[arg(long, default_value_t = 20)]
    lookups: u64,
    /// Runs of each measurement (the report takes the median).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Data directory (emptied first).
    #[arg(long, default_value = "index-bench-data")]
    db: PathBuf,
    /// Also write the report (Markdown) to this file.
    #[arg(long)]
    report: Option<PathBuf>,
}

fn failed(what: &'static str) -> impl Fn(basalt::Error) -> BenchError {
    move |e| BenchError::new(format!("{what} failed: {e}"))
}

/// The indexes of the table with `n` of them (0 to 3).
fn indexes(n: usize) -> Vec<IndexDescriptor> {
    [
        IndexDescriptor::new(
            "by_buyer",
            vec![
                IndexColumn::new("o", "buyer"),
                IndexColumn::new("o", "ts").transform(IndexTransform::Reversed),
            ],
        )
        .cover("o", "total"),
        IndexDescriptor::new("by_seller", vec![IndexColumn::new("o", "seller")]),
        IndexDescriptor::new(
            "by_status",
            vec![
                IndexColumn::new("o", "status"),
                IndexColumn::new("o", "total").transform(IndexTransform::PadLeft(8)),
            ],
        ),
    ]
    .into_iter()
    .take(n)
    .collect()
}

fn order(i: u64, buyers: u64) -> Put {
    // A multiplicative hash spreads orders over buyers and rows over keys.
    let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    Put::new(format!("order-{:016x}", h))
        .add("o", "buyer", format!("buyer-{:06}", h % buyers))
        .add("o", "seller", format!("seller-{:04}", (h >> 20) % 97))
        .add(
            "o",
            "status",
            ["new", "paid", "sent", "done"][(h >> 40) as usize % 4],
        )
        .add("o", "ts", format!("{:010}", i))
        .add("o", "total", format!("{}", (h >> 8) % 100_000))
}

/// Loads `rows` orders into `table` with `threads` writers; the seconds
/// it took.
fn load(db: &Database, table: &str, args: &IndexBenchArgs) -> BenchResult<f64> {
    let handle = Arc::new(db.table(table).map_err(failed("table"))?);
    let started = Instant::now();
    let workers: Vec<_> = (0..args.threads)
        .map(|t| {
            let handle = Arc::clone(&handle);
            let (rows, threads, buyers) = (args.rows, args.threads, args.buyers);
            std::thread::spawn(move || -> basalt::Result<()> {
                let mut i = t;
                while i < rows {
                    handle.put(&order(i, buyers))?;
                    i += threads;
                }
                Ok(())
            })
        })
        .collect();
    for worker in workers {
        worker
            .join()
            .map_err(|_| BenchError::new("a writer panicked"))?
            .map_err(failed("put"))?;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Runs `basalt bench indexes`.
pub fn run_index_bench(args: &IndexBenchArgs) -> BenchResult<()> {
    if args.rows == 0
        || args.buyers == 0
        || args.threads == 0
        || args.runs == 0
        || args.lookups == 0
    {
        return Err(BenchError::new(
            "--rows, --buyers, --threads, --lookups and --runs must be at least 1",
        ));
    }
    let mut writes: Vec<Vec<f64>> = vec![Vec::new(); 3];
    let mut by_index = Vec::new();
    let mut by_scan = Vec::new();
    let mut answered = 0usize;
    for run in 1..=args.runs {
        if args.db.exists() {
            std::fs::remove_dir_all(&args.db)
                .map_err(|e| BenchError::new(format!("cannot empty {}: {e}", args.db.display())))?;
        }
        let db = Database::open_with(Options::new(&args.db)).map_err(failed("open"))?;
        for (slot, n) in [0usize, 1, 3].into_iter().enumerate() {
            let table = format!("orders{n}");
            db.create_table(
                TableDescriptor::new(table.clone()).family(ColumnFamilyDescriptor::new("o")),
            )
            .map_err(failed("create_table"))?;
            for index in indexes(n) {
                db.create_index(&table, index)
                    .map_err(failed("create_index"))?;
            }
            let seconds = load(&db, &table, args)?;
            writes[slot].push(args.rows as f64 / seconds.max(1e-9));
            eprintln!(
                "run {run}: {n} index(es): {:.0} writes/s",
                args.rows as f64 / seconds
            );
        }
        let descriptor = db
            .table("orders3")
            .map_err(failed("table"))?
            .descriptor()
            .get_index("by_buyer")
            .cloned()
            .ok_or_else(|| BenchError::new("index by_buyer is missing"))?;
        let table = db.table("orders3").map_err(failed("table"))?;
        let (mut index_seconds, mut scan_seconds) = (0.0, 0.0);
        for k in 0..args.lookups {
            let buyer = format!("buyer-{:06}", (k * 7919) % args.buyers);
            let prefix = descriptor
                .equal_prefix(&[buyer.as_bytes()])
                .map_err(failed("equal_prefix"))?;
            let started = Instant::now();
            let found: Vec<Bytes> = db
                .scan_index("orders3", "by_buyer", &Scan::new().prefix(prefix))
                .map_err(failed("scan_index"))?
                .map(|r| r.map(|r| r.row))
                .collect::<basalt::Result<_>>()
                .map_err(failed("scan_index"))?;
            index_seconds += started.elapsed().as_secs_f64();
            let filter = Filter::parse(&format!(
                "SingleColumnValueFilter('o', 'buyer', =, 'binary:{buyer}', true, true)"
            ))
            .map_err(failed("filter"))?;
            let started = Instant::now();
            let mut scanned: Vec<Bytes> = Vec::new();
            for row in table
                .scan(&Scan::new().filter(filter))
                .map_err(failed("scan"))?
            {
                scanned.push(row.map_err(failed("scan"))?.row);
            }
            scan_seconds += started.elapsed().as_secs_f64();
            let mut sorted = found.clone();
            sorted.sort();
            if sorted != scanned {
                return Err(BenchError::new(format!(
                    "the index and the filtered scan disagree for {buyer}: {} rows against {}",
                    found.len(),
                    scanned.len()
                )));
            }
            answered += found.len();
        }
        by_index.push(index_seconds / args.lookups as f64);
        by_scan.push(scan_seconds / args.lookups as f64);
        db.close().map_err(failed("close"))?;
    }
    let medians: Vec<f64> = writes.iter_mut().map(|w| median(w)).collect();
    let (index_ms, scan_ms) = (median(&mut by_index) * 1e3, median(&mut by_scan) * 1e3);
    let lines = [
        "# Secondary indexes: the cost of a write, the speed of a lookup".to_string(),
        String::new(),
        format!(
            "{} rows per table, {} writers, {} buyers, medians of {} runs; each put writes 5 cells of one row.",
            args.rows, args.threads, args.buyers, args.runs
        ),
        String::new(),
        "| indexes | writes/s | vs no index |".into(),
        "|---:|---:|---:|".into(),
        format!("| 0 | {:.0} | 1.00x |", medians[0]),
        format!("| 1 | {:.0} | {:.2}x |", medians[1], medians[1] / medians[0]),
        format!("| 3 | {:.0} | {:.2}x |", medians[2], medians[2] / medians[0]),
        String::new(),
        format!(
            "One buyer's orders (about {} rows) on the table with 3 indexes: by index **{index_ms:.3} ms**, by a full scan with a SingleColumnValueFilter **{scan_ms:.1} ms**: the index is **{:.0}x** faster.",
            answered / (args.lookups as usize * args.runs).max(1),
            scan_ms / index_ms.max(1e-9)
        ),
    ];
    let report = lines.join("\n") + "\n";
    print!("{report}");
    if let Some(path) = &args.report {
        std::fs::write(path, &report)
            .map_err(|e| BenchError::new(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}
