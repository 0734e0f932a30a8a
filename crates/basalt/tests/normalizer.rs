//! The region normalizer in one process (docs/normalizer.md), driven with
//! a manual clock and no background threads: region ages and request
//! rates are what the test makes them, so each run's plans are
//! deterministic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use bytes::Bytes;

use basalt::{
    ColumnFamilyDescriptor, Database, Get, ManualClock, NormalizationPlan, Options, Put, Scan,
    TableDescriptor,
};

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

struct Fixture {
    dir: tempfile::TempDir,
    clock: ManualClock,
    db: Database,
}

fn options(dir: &std::path::Path) -> Options {
    let mut options = Options::new(dir);
    options.background_threads = 0;
    options.region_split_bytes = 0;
    options
}

fn open(dir: &std::path::Path, clock: &ManualClock) -> Database {
    Database::builder(options(dir))
        .clock(Arc::new(clock.clone()))
        .open()
        .unwrap()
}

/// Table `t` pre-split into eight regions at "1".."7", holding rows
/// `0-000`..`7-009` (ten small rows a region).
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000_000);
    let db = open(dir.path(), &clock);
    let splits: Vec<Bytes> = (1..8).map(|i| Bytes::from(i.to_string())).collect();
    db.create_table_with_splits(
        TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")),
        &splits,
    )
    .unwrap();
    let t = db.table("t").unwrap();
    for region in 0..8 {
        for i in 0..10 {
            t.put(&Put::new(row(region, i)).add("f", "q", format!("v{region}-{i}")))
                .unwrap();
        }
    }
    Fixture { dir, clock, db }
}

fn row(region: usize, i: usize) -> String {
    format!("{region}-{i:03}")
}

fn rows(db: &Database) -> Vec<Bytes> {
    db.table("t")
        .unwrap()
        .scan(&Scan::new())
        .unwrap()
        .map(|r| r.unwrap().row)
        .collect()
}

fn region_count(db: &Database) -> usize {
    db.list_regions("t").unwrap().len()
}

fn merges(plans: &[NormalizationPlan]) -> usize {
    plans
        .iter()
        .filter(|p| matches!(p, NormalizationPlan::Merge { .. }))
        .count()
}

#[test]
fn a_pre_split_table_with_no_load_merges_pairs_once_the_switch_is_on_and_its_regions_are_old_enough(
) {
    let f = fixture();
    assert!(
        !f.db.normalizer_switch(Some(true)).unwrap(),
        "off by default"
    );
    let young = f.db.normalize().unwrap();
    assert!(young.ran && young.plans.is_empty(), "{young:?}");
    assert_eq!(region_count(&f.db), 8);

    f.clock.advance(3 * DAY_MS + 60_000);
    let run = f.db.normalize().unwrap();
    assert!(run.ran, "{run:?}");
    assert_eq!(merges(&run.plans), 4, "{run:?}");
    assert_eq!(run.failed, 0);
    assert_eq!(region_count(&f.db), 4);
    let all = rows(&f.db);
    assert_eq!(all.len(), 80, "every row is still there");
    let t = f.db.table("t").unwrap();
    for region in 0..8 {
        let got = t.get(&Get::new(row(region, 9))).unwrap();
        assert_eq!(
            &got.value(b"f", b"q").unwrap()[..],
            format!("v{region}-9").as_bytes()
        );
    }

    // The merged regions are new, so young: nothing merges again yet.
    let again = f.db.normalize().unwrap();
    assert!(again.plans.is_empty(), "{again:?}");
    f.clock.advance(3 * DAY_MS + 60_000);
    assert_eq!(merges(&f.db.normalize().unwrap().plans), 2);
    assert_eq!(region_count(&f.db), 2);
    assert_eq!(rows(&f.db).len(), 80);
}

#[test]
fn regions_busier_than_the_cold_threshold_merge_nothing() {
    let f = fixture();
    f.db.normalizer_switch(Some(true)).unwrap();
    f.clock.advance(3 * DAY_MS + 60_000);
    // 200 gets a region within one second: 400 requests/s a pair, above
    // the default cold threshold of 300.
    let _ = f.db.list_regions("t").unwrap();
    let t = f.db.table("t").unwrap();
    for region in 0..8 {
        for i in 0..200 {
            t.get(&Get::new(row(region, i % 10))).unwrap();
        }
    }
    f.clock.advance(1_000);
    let run = f.db.normalize().unwrap();
    assert!(run.ran && run.plans.is_empty(), "{run:?}");
    assert_eq!(region_count(&f.db), 8);

    // Once the load cools (rates cover the last minute), they merge.
    f.clock.advance(120_000);
    let _ = f.db.list_regions("t").unwrap();
    f.clock.advance(5_000);
    assert_eq!(merges(&f.db.normalize().unwrap().plans), 4);
    assert_eq!(rows(&f.db).len(), 80);
}

#[test]
fn an_oversized_region_splits_at_its_midpoint_and_keeps_its_rows() {
    let f = fixture();
    f.db.normalizer_switch(Some(true)).unwrap();
    // Region "7" gets about 2 MiB, the others a few hundred bytes each:
    // far more than twice the average.
    let t = f.db.table("t").unwrap();
    let value = vec![b'x'; 20 * 1024];
    for i in 0..100 {
        t.put(&Put::new(format!("7-big-{i:03}")).add("f", "q", value.clone()))
            .unwrap();
    }
    f.db.flush_table("t").unwrap();
    let run = f.db.normalize().unwrap();
    assert_eq!(run.plans.len(), 1, "{run:?}");
    assert!(
        matches!(&run.plans[0], NormalizationPlan::Split { .. }),
        "{run:?}"
    );
    assert!(run.plans[0].reason().contains("more than twice"));
    assert_eq!(region_count(&f.db), 9);
    assert_eq!(rows(&f.db).len(), 180);
}

#[test]
fn with_the_switch_off_nothing_happens_and_normalize_says_why() {
    let f = fixture();
    f.clock.advance(30 * DAY_MS);
    let run = f.db.normalize().unwrap();
    assert!(!run.ran);
    assert!(
        run.reason
            .as_deref()
            .unwrap_or("")
            .contains("switch is off"),
        "{run:?}"
    );
    assert_eq!(region_count(&f.db), 8);
}

#[test]
fn the_normalizer_switch_survives_a_restart() {
    let f = fixture();
    assert!(!f.db.normalizer_switch(Some(true)).unwrap());
    f.db.close().unwrap();
    drop(f.db);
    let db = open(f.dir.path(), &f.clock);
    assert!(db.normalizer_switch(None).unwrap(), "kept in the catalog");
    assert!(db.normalizer_switch(Some(false)).unwrap());
    db.close().unwrap();
    drop(db);
    let db = open(f.dir.path(), &f.clock);
    assert!(!db.normalizer_switch(None).unwrap());
}
