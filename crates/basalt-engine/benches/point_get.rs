//! Point gets on one region: rows in four overlapping store files (each
//! spans the whole key range) plus recent overwrites in the memstore, with
//! a warm block cache. See `fixture.rs` for the data set.
//!
//! - `existing`: a random existing row (all its columns);
//! - `existing_one_column`: one column of a random existing row;
//! - `missing`: a row that sorts between existing ones (the ROW bloom
//!   filters of all files should rule it out).
//!
//! Keys come from a seeded generator, so every run asks for the same rows.
//! Run with `cargo bench -p basalt-engine --bench point_get`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod fixture;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use basalt_types::Get;

fn point_gets(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (region, _wal) = fixture::build(dir.path());
    fixture::warm(&region);

    let mut group = c.benchmark_group("engine_point_get");
    let mut rng = StdRng::seed_from_u64(fixture::SEED ^ 1);
    group.bench_function("existing", |b| {
        b.iter(|| {
            let i = rng.random_range(0..fixture::ROWS);
            let row = region.get(&Get::new(fixture::row_key(i))).unwrap();
            assert!(!row.is_empty());
            black_box(row)
        })
    });
    let mut rng = StdRng::seed_from_u64(fixture::SEED ^ 2);
    group.bench_function("existing_one_column", |b| {
        b.iter(|| {
            let i = rng.random_range(0..fixture::ROWS);
            let get = Get::new(fixture::row_key(i)).column("f", fixture::qualifier(2));
            let row = region.get(&get).unwrap();
            assert!(!row.is_empty());
            black_box(row)
        })
    });
    let mut rng = StdRng::seed_from_u64(fixture::SEED ^ 3);
    group.bench_function("missing", |b| {
        b.iter(|| {
            let i = rng.random_range(0..fixture::ROWS);
            // "user0000001234x" sorts after row 1234 and before row 1235.
            let row = region
                .get(&Get::new(format!("{}x", fixture::row_key(i))))
                .unwrap();
            assert!(row.is_empty());
            black_box(row)
        })
    });
    group.finish();
}

criterion_group!(benches, point_gets);
criterion_main!(benches);
