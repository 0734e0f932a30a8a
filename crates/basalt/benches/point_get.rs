//! Point gets against several overlapping store files, with and without
//! bloom filters: the no-bloom table is the peer in the same run.
//!
//! Besides criterion's timings, prints how many data blocks a cold get reads
//! per store file that may hold the row (key range and bloom filter could not
//! rule it out): the store-file format promises at most one.
//!
//! Run with `cargo bench -p basalt --bench point_get`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;

use basalt::*;
use criterion::{criterion_group, criterion_main, Criterion};

const ROWS: usize = 20_000;
const FILES: usize = 5;

fn options(dir: &std::path::Path) -> Options {
    let mut o = Options::new(dir);
    o.background_threads = 0;
    o.compaction_min_files = 100;
    o.compaction_max_files = 100;
    o
}

/// FILES store files whose key ranges all overlap, each holding every
/// FILES-th row.
fn build(dir: &std::path::Path, bloom: BloomType) {
    let db = Database::open_with(options(dir)).unwrap();
    db.create_table(
        TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f").bloom_filter(bloom)),
    )
    .unwrap();
    let table = db.table("t").unwrap();
    for file in 0..FILES {
        for i in (file..ROWS).step_by(FILES) {
            table
                .put(
                    &Put::new(format!("row{i:08}"))
                        .add("f", "q", vec![b'v'; 100])
                        .durability(Durability::AsyncWal),
                )
                .unwrap();
        }
        db.flush_table("t").unwrap();
    }
    db.close().unwrap();
}

fn totals(db: &Database) -> (u64, u64) {
    let info = db.describe_table("t").unwrap();
    info.regions
        .iter()
        .flat_map(|r| r.stores.iter())
        .fold((0, 0), |(b, f), (_, s)| {
            (b + s.data_blocks_read, f + s.point_read_files)
        })
}

/// Cold gets on a freshly opened database: blocks read per consulted file.
fn report_cold_blocks(label: &str, dir: &std::path::Path) {
    let db = Database::open_with(options(dir)).unwrap();
    let table = db.table("t").unwrap();
    let gets = 2_000u64;
    for n in 0..gets as usize {
        let i = (n * 7919) % ROWS;
        black_box(table.get(&Get::new(format!("row{i:08}"))).unwrap());
    }
    let (blocks, consulted) = totals(&db);
    println!(
        "{label}: {gets} cold gets over {FILES} files read {blocks} data blocks \
         ({:.3} per get, {:.3} per file that may hold the row)",
        blocks as f64 / gets as f64,
        blocks as f64 / consulted.max(1) as f64
    );
}

fn point_gets(c: &mut Criterion) {
    let with_bloom = tempfile::tempdir().unwrap();
    let without_bloom = tempfile::tempdir().unwrap();
    build(with_bloom.path(), BloomType::Row);
    build(without_bloom.path(), BloomType::None);
    report_cold_blocks("ROW bloom", with_bloom.path());
    report_cold_blocks("no bloom (peer)", without_bloom.path());

    let mut group = c.benchmark_group("point_get_5_overlapping_files");
    for (name, dir) in [("row_bloom", &with_bloom), ("no_bloom", &without_bloom)] {
        let db = Database::open_with(options(dir.path())).unwrap();
        let table = db.table("t").unwrap();
        let mut n = 0usize;
        group.bench_function(name, |b| {
            b.iter(|| {
                n = n.wrapping_add(7919);
                black_box(table.get(&Get::new(format!("row{:08}", n % ROWS))).unwrap())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, point_gets);
criterion_main!(benches);
