//! The write-ahead log on object storage with objects in flight: how many
//! `SYNC_WAL` writes a second 64 writers get through the log when every
//! object's `PUT` waits a network round trip (10 ms and 30 ms, S3's usual
//! range within a region), with 1, 2, 4 and 8 objects in flight, and what
//! each write costs in `PUT`s.
//!
//! The store is memory behind a fixed wait per publication that overlaps
//! freely (`FaultyFileStore::set_finish_latency`): a store whose `PUT`s wait
//! rather than work, as S3's do from a client's side. A local S3 server such
//! as moto is the opposite (its `PUT`s are CPU work on the same machine,
//! one at a time), which is why `scripts/bench-object-storage` and this
//! bench disagree on the best setting; see docs/object-storage.md.
//!
//! The peer is the same log with one object in flight, in the same run;
//! each setting runs 3 times and the median counts. Prints a Markdown table.
//! Run with `cargo bench -p basalt-engine --bench object_log`
//! (`OBJECT_LOG_SECONDS` sets each run's length, default 3).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_engine::fs::{FaultyFileStore, FileStore, MemFileStore};
use basalt_engine::wal::{ObjectWal, ObjectWalOptions, WalEdit, WriteAheadLog};
use basalt_types::{Cell, CellType, Durability};
use bytes::Bytes;

const WRITERS: u64 = 64;
const RUNS: usize = 3;

/// One YCSB-sized row: ten 100-byte fields.
fn edit(writer: u64, n: u64) -> WalEdit {
    let row = Bytes::from(format!("user{writer:02}{n:010}"));
    let cells = (0..10)
        .map(|field| Cell {
            row: row.clone(),
            family: Bytes::from_static(b"family"),
            qualifier: Bytes::from(format!("field{field}")),
            timestamp: 1_700_000_000_000,
            cell_type: CellType::Put,
            sequence_id: n,
            value: Bytes::from(vec![b'x'; 100]),
            ttl_millis: None,
        })
        .collect();
    WalEdit {
        region_id: writer % 8,
        sequence_id: n,
        cells,
    }
}

/// Writes a second and `PUT`s a write for one run.
fn run(latency: Duration, in_flight: usize, seconds: f64) -> (f64, f64) {
    let faulty = FaultyFileStore::new(Arc::new(MemFileStore::new()));
    faulty.set_finish_latency(latency);
    let files: Arc<dyn FileStore> = Arc::new(faulty);
    let claim = ObjectWal::claim_with(files, Path::new("/bench"), in_flight).unwrap();
    let options = ObjectWalOptions {
        objects_in_flight: in_flight,
        ..ObjectWalOptions::default()
    };
    let (wal, _) = ObjectWal::open(claim, options, |_| Ok(())).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (wal, stop, written) = (Arc::clone(&wal), Arc::clone(&stop), Arc::clone(&written));
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let lsn = wal.append(&edit(writer, n)).unwrap();
                    wal.sync(lsn, Durability::SyncWal).unwrap();
                    written.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    let writes = written.load(Ordering::Relaxed) as f64;
    let objects = wal.stats().writes as f64;
    wal.close().unwrap();
    (writes / elapsed, objects / writes.max(1.0))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    // `cargo test --benches` runs this with `--bench` absent: stay quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    let seconds: f64 = std::env::var("OBJECT_LOG_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if quick { 0.2 } else { 3.0 });
    let runs = if quick { 1 } else { RUNS };
    println!("| PUT latency | objects in flight | writes/s (median of {runs}) | vs 1 in flight | PUTs per write |");
    println!("|---:|---:|---:|---:|---:|");
    for latency_ms in [10u64, 30] {
        let latency = Duration::from_millis(latency_ms);
        let mut peer = None;
        for in_flight in [1usize, 2, 4, 8] {
            let results: Vec<(f64, f64)> = (0..runs)
                .map(|_| run(latency, in_flight, seconds))
                .collect();
            let throughput = median(results.iter().map(|r| r.0).collect());
            let puts = median(results.iter().map(|r| r.1).collect());
            let peer = *peer.get_or_insert(throughput);
            println!(
                "| {latency_ms} ms | {in_flight} | {throughput:.0} | {:.2}x | {puts:.3} |",
                throughput / peer
            );
        }
    }
}
