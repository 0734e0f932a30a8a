//! Scans of one region: rows in four overlapping store files plus recent
//! overwrites in the memstore, with a warm block cache. See `fixture.rs`
//! for the data set.
//!
//! - `full`: every row of the region;
//! - `full_value_filter`: every row, through a value filter that keeps
//!   about 1 cell in 26 (the scan loop's cost per skipped cell);
//! - `short_100_rows`: 100 rows from a random start row.
//!
//! Start rows come from a seeded generator, so every run reads the same
//! rows. Run with `cargo bench -p basalt-engine --bench scan`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod fixture;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use basalt_engine::Region;
use basalt_types::{Comparator, CompareOp, Filter, Scan};

/// Reads the scan to its end; returns rows and cells.
fn drain(region: &Region, scan: &Scan) -> (usize, usize) {
    let mut scanner = region.scanner(scan).unwrap();
    let (mut rows, mut cells) = (0, 0);
    while let Some(row) = scanner.next_result().unwrap() {
        rows += 1;
        cells += row.cells.len();
    }
    (rows, cells)
}

fn scans(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (region, _wal) = fixture::build(dir.path());
    assert_eq!(fixture::warm(&region), fixture::ROWS);

    let mut group = c.benchmark_group("engine_scan");
    group.sample_size(10);
    group.throughput(Throughput::Elements(fixture::ROWS as u64));
    group.bench_function("full", |b| {
        b.iter(|| {
            let (rows, cells) = drain(&region, &Scan::new());
            assert_eq!(rows, fixture::ROWS);
            black_box(cells)
        })
    });
    // Values start with 'a'..='z': keep those starting with 'q'.
    let filter = Filter::Value(CompareOp::Equal, Comparator::BinaryPrefix("q".into()));
    let filtered = Scan::new().filter(filter);
    group.bench_function("full_value_filter", |b| {
        b.iter(|| {
            let (rows, cells) = drain(&region, &filtered);
            assert!(rows < fixture::ROWS && cells > 0);
            black_box(cells)
        })
    });
    group.finish();

    let mut group = c.benchmark_group("engine_scan_short");
    group.throughput(Throughput::Elements(100));
    let mut rng = StdRng::seed_from_u64(fixture::SEED ^ 4);
    group.bench_function("short_100_rows", |b| {
        b.iter(|| {
            let start = rng.random_range(0..fixture::ROWS - 100);
            let scan = Scan::new().start_row(fixture::row_key(start)).limit(100);
            let (rows, _) = drain(&region, &scan);
            assert_eq!(rows, 100);
            black_box(rows)
        })
    });
    group.finish();
}

criterion_group!(benches, scans);
criterion_main!(benches);
