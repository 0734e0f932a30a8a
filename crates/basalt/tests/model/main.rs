#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Model-based property test: random operation sequences run against the real
//! database and against a small in-memory reference of the HBase rules
//! (`Model` in `reference.rs`), comparing every read and every returned value.
//!
//! The reference is deliberately naive: it keeps every cell ever written (puts
//! and delete markers, with a write number) in a flat list and recomputes each
//! answer from scratch, with HBase's rules as Basalt documents them (the
//! module docs of `basalt-engine`'s `scan.rs` and `region.rs`):
//!
//! - a column's visible versions are its puts, one per timestamp (the later
//!   write wins), minus those hidden by a delete marker whatever the write
//!   order; with KEEP_DELETED_CELLS only markers inside the read's time
//!   range count;
//! - the family's VERSIONS, TTL and MIN_VERSIONS cut that list (newest first)
//!   before the read's time range is looked at; then the filter sees the
//!   survivors and the read's max versions counts what the filter let through;
//! - "latest version" deletes, increments and appends read the row as it was
//!   before the mutation (a batch: before the whole batch); increments and
//!   appends write at `max(now, latest + 1)`;
//! - raw scans (modelled for the families without TTL) return puts and
//!   markers in the time range; markers do not count as versions, and the
//!   first put beyond the scan's max versions ends the column (HBase's column
//!   tracker).
//!
//! Sequences mix puts, every kind of delete, increments (also on values that
//! are not 8 bytes), appends, check-and-mutate, row mutations, batches, gets
//! and scans (bounds, prefix, reverse, limit, batch, max versions, time
//! ranges, column selections, filters), raw scans, flushes, minor and major
//! compactions, and reopening the database (after `close()`, which flushes,
//! or by dropping it: WAL replay), with a manual clock moved between steps.
//! Not modelled: SKIP_WAL, concurrency, alter (beyond a family nothing
//! writes to, below), and several latest-version deletes of one column in
//! different deletes of one row mutation.
//!
//! Store files (the module docs of `basalt-engine`'s `store.rs` and
//! `compaction.rs`): every case picks small thresholds (a memstore flush
//! size of a few hundred bytes to a few KiB, a small block cache, 2-3 files
//! for a minor compaction, no background threads so the flushes and the
//! compactions they trigger run inside the writes, deterministically) and,
//! per family, a compression, bloom filter, data block encoding and a small
//! block size. Flushes and minor compactions must not change anything a
//! read returns, raw reads included: the reference does nothing for them,
//! and the harness also compares the engine's own full reads (raw ones of
//! every family, TTL included) before and after. A major compaction op is a
//! flush then a major compaction, so every cell is in the files it rewrites;
//! the reference then does what Basalt documents: without
//! KEEP_DELETED_CELLS it keeps exactly the cells a read of all versions at
//! that moment returns (markers, deleted, surplus, expired and overwritten
//! puts go; so markers stop masking later-written older puts, and a later
//! delete can no longer reveal a version dropped as surplus); with
//! KEEP_DELETED_CELLS it drops only puts overwritten at the same timestamp
//! (and, with a TTL and no MIN_VERSIONS, expired puts).
//!
//! A second property runs the same operations on a table with a tiny split
//! size, so regions split automatically again and again, with manual splits
//! (at a key or at the midpoint) and merges of neighbours mixed in: every
//! read must still match the reference (reverse scans cross the region
//! boundaries), and after every step the regions must cover the key space
//! with no gap and no overlap.
//!
//! A third property (`cluster.rs`) sends the same operations through the
//! members of an in-process cluster (a `ClusterMaster` and 2-3 member
//! databases on a shared `file://` storage, RPCs replaced by in-process
//! stand-ins), each through a member the step picks, so most take remote
//! routes, with cluster events mixed in: moves, balancing, normalizing, a member
//! crashing (its regions reopen elsewhere from its fenced log; a new member
//! may join), members joining, splits and merges by the master, an alter
//! adding a family nothing writes to, a new master fencing the old one, and
//! flushes and compactions on every member. Every read must match the
//! reference; after every event the catalog's serving regions must cover
//! the key space without gap or overlap, each open on exactly one live
//! member. Left out there: `ASYNC_WAL` (a crash may lose such writes, which
//! the reference does not model: they are sent as `SYNC_WAL`) and scans
//! with a page filter (counted per remote region, as in HBase).
//! [`CLUSTER_CASES`] cases (`MODEL_CLUSTER_CASES` overrides).
//!
//! The first property runs again with the store files, manifests and
//! catalog on object storage (`basalt-object-store`, behind its disk
//! cache): on a shared directory (`file://`) and on a real S3-compatible
//! server (moto, `test-support/moto.rs`), [`OBJECT_CASES`] cases each
//! (`MODEL_OBJECT_CASES` overrides); what is checked does not change.
//!
//! A fifth property (`access.rs`) checks access control: random grants
//! and revokes at every kind of scope, and reads and writes by random
//! users, against a naive reference of HBase's rules.
//!
//! `PROPTEST_CASES` sets the number of random cases (default
//! [`DEFAULT_CASES`]); `MODEL_STATS=1` prints how often interesting
//! situations came up.
//!
//! Regressions: a failing case of a property is saved (its seed, as a
//! `cc <hex>` line with the shrunk input as a comment) to
//! `regressions/<property>.txt` beside this file; commit that file. Every
//! run replays the saved seeds first, so a plain
//! `cargo test -p basalt --test model <property>` replays the failure
//! (add `-- --nocapture` for the step-by-step report); delete the line once
//! the bug is fixed and a hand-written case below covers it.
//!
//! Layout: `operations.rs` (schema, operation specs, the engine requests
//! they build), `reference.rs` (the reference model), `harness.rs` (the
//! database under test and the step-by-step comparison), `strategies.rs`
//! (proptest strategies), `cluster.rs` (the in-process cluster and its
//! events), `faults.rs` (the fault run); this file holds the properties and the
//! hand-written cases.

mod access;
mod cluster;
mod faults;
mod harness;
mod operations;
mod reference;
mod strategies;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use basalt::{
    BloomType, CellType, ColumnFamilyDescriptor, CompareOp, Compression, DataBlockEncoding,
    Database, Delete, Durability, Get, ListOperator, Options, Put, Scan, TableDescriptor,
};
use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestCaseError};

use harness::*;
use operations::*;
use reference::*;
use strategies::*;

/// Random cases when `PROPTEST_CASES` is not set. A case takes about 0.1 s
/// on a 2-core machine, mostly the fsyncs of its flushes and compactions
/// (store files and manifests): the whole file stays around 20-30 s.
const DEFAULT_CASES: u32 = 160;
/// Random cases of the region property: each splits and merges a few
/// dozen times (every hand-over writes manifests and the catalog, with
/// fsyncs), so a case takes several times longer.
const REGION_CASES: u32 = 48;

// ------------------------------------------------------------------ coverage counters

/// How often interesting situations came up, over the whole run; printed
/// after each case with `MODEL_STATS=1` (to check the generator, not the engine).
pub(crate) static STATS: Mutex<BTreeMap<&'static str, u64>> = Mutex::new(BTreeMap::new());

pub(crate) fn stat(key: &'static str) {
    *STATS.lock().unwrap().entry(key).or_insert(0) += 1;
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: DEFAULT_CASES,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/model/regressions/engine_matches_reference_model.txt"
        )))),
        max_shrink_iters: 4096,
        ..ProptestConfig::default()
    })]

    /// Random sequences: the engine answers every read like the reference.
    #[test]
    fn engine_matches_reference_model(config in config(), steps in vec(step(), 20..120)) {
        run_steps(&config, &steps).map_err(TestCaseError::fail)?;
        if std::env::var_os("MODEL_STATS").is_some() {
            eprintln!("{:#?}", STATS.lock().unwrap());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: REGION_CASES,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/model/regressions/regions_split_and_merge_without_changing_reads.txt"
        )))),
        max_shrink_iters: 4096,
        ..ProptestConfig::default()
    })]

    /// The same with regions splitting (automatically, at a tiny split
    /// size, and by hand) and merging all along.
    #[test]
    fn regions_split_and_merge_without_changing_reads(
        config in region_config(),
        steps in vec(region_step(), 20..120),
    ) {
        run_steps(&config, &steps).map_err(TestCaseError::fail)?;
        if std::env::var_os("MODEL_STATS").is_some() {
            eprintln!("{:#?}", STATS.lock().unwrap());
        }
    }
}

// ------------------------------------------------------------------ access control

/// Random cases of the access control property: each is one database
/// and a few dozen grants, reads and writes (no flushes), so it is cheap.
const ACCESS_CASES: u32 = 128;

proptest! {
    #![proptest_config(ProptestConfig {
        cases: ACCESS_CASES,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/model/regressions/access_matches_reference_rules.txt"
        )))),
        max_shrink_iters: 4096,
        ..ProptestConfig::default()
    })]

    /// Random grants, revokes, reads and writes by random users: every
    /// outcome (allowed, refused, the cells a read shows) is the
    /// reference's (`access.rs`).
    #[test]
    fn access_matches_reference_rules(steps in vec(access::access_step(), 10..80)) {
        access::run_access_steps(&steps).map_err(TestCaseError::fail)?;
        if std::env::var_os("MODEL_STATS").is_some() {
            eprintln!("{:#?}", STATS.lock().unwrap());
        }
    }
}

// ------------------------------------------------------------------ cluster

/// Random cases of the cluster property when `MODEL_CLUSTER_CASES` is not
/// set: every event settles the cluster and reads everything back, and a
/// crash replays a log from the shared storage, so a case costs several
/// of the first property's.
const CLUSTER_CASES: u32 = 8;

fn cluster_cases() -> u32 {
    env_u64("MODEL_CLUSTER_CASES").map_or(CLUSTER_CASES, |n| n as u32)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cluster_cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/model/regressions/cluster_members_answer_like_the_reference.txt"
        )))),
        max_shrink_iters: 512,
        ..ProptestConfig::default()
    })]

    /// The same operations through the members of an in-process cluster,
    /// with moves, balancing, crashes, splits, merges, an alter and new
    /// masters mixed in: every read matches the reference and, after every
    /// event, each serving region is open on exactly one live member.
    #[test]
    fn cluster_members_answer_like_the_reference(case in cluster::cluster_case()) {
        cluster::run_cluster_case(&case).map_err(TestCaseError::fail)?;
        if std::env::var_os("MODEL_STATS").is_some() {
            eprintln!("{:#?}", STATS.lock().unwrap());
        }
    }
}

// ------------------------------------------------------------------ object storage

#[path = "../../../../test-support/moto.rs"]
mod moto;

/// Random cases of each object storage run: every flush, compaction and
/// reopen makes requests, so a case costs more than on the local disk.
const OBJECT_CASES: u32 = 16;

/// The first property with the files on the storage `for_case(n)` names
/// for case `n`.
fn run_on_object_storage(name: &str, for_case: impl Fn(u64) -> basalt_object_store::StorageConfig) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let cases = env_u64("MODEL_OBJECT_CASES").map_or(OBJECT_CASES, |n| n as u32);
    let case = Arc::new(AtomicU64::new(0));
    let for_case = Arc::new(for_case);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/model/regressions/engine_matches_reference_model_on_object_storage.txt"
        )))),
        max_shrink_iters: 256,
        ..ProptestConfig::default()
    });
    let outcome = runner.run(&(config(), vec(step(), 20..120)), |(mut config, steps)| {
        // Every case (and every shrink step) in a fresh place.
        let n = case.fetch_add(1, Ordering::Relaxed);
        let storage = for_case(n);
        config.storage = Some(StorageFactory(Arc::new(move |dir: &std::path::Path| {
            basalt_object_store::open_storage(&storage, dir)
                .unwrap()
                .unwrap()
                .file_store()
        })));
        run_steps(&config, &steps).map_err(TestCaseError::fail)?;
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{name}: {e}");
    }
}

#[test]
fn engine_matches_reference_model_on_a_shared_directory() {
    let shared = tempfile::tempdir().unwrap();
    let root = shared.path().to_path_buf();
    run_on_object_storage(
        "engine_matches_reference_model_on_a_shared_directory",
        move |n| {
            basalt_object_store::StorageConfig::for_url(format!(
                "file://{}",
                root.join(format!("case-{n}")).display()
            ))
        },
    );
}

#[test]
fn engine_matches_reference_model_on_s3() {
    let Some(moto) = moto::start_or_skip("engine_matches_reference_model_on_s3") else {
        return;
    };
    let bucket = format!("model-{}", std::process::id());
    moto.create_bucket(&bucket);
    let endpoint = moto.endpoint();
    run_on_object_storage("engine_matches_reference_model_on_s3", move |n| {
        basalt_object_store::StorageConfig {
            url: Some(format!("s3://{bucket}/case-{n}")),
            endpoint: Some(endpoint.clone()),
            region: Some(moto::REGION.to_owned()),
            access_key_id: Some(moto::ACCESS_KEY.to_owned()),
            secret_access_key: Some(moto::SECRET_KEY.to_owned()),
            allow_http: Some(true),
            // Small parts: the cases' files are a few KiB.
            part_bytes: 4096,
            ..basalt_object_store::StorageConfig::default()
        }
    });
}

// ------------------------------------------------------------------ faults

/// Seeds of the fault run when `MODEL_FAULT_CASES` is not set.
const FAULT_CASES: u64 = 200;

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value} is not a number")),
    )
}

/// `MODEL_SEED` alone, or fresh random seeds (each printed if it fails).
fn fault_seeds() -> Vec<u64> {
    if let Some(seed) = env_u64("MODEL_SEED") {
        return vec![seed];
    }
    let base: u64 = rand::random();
    let cases = env_u64("MODEL_FAULT_CASES").unwrap_or(FAULT_CASES);
    (0..cases).map(|i| base.wrapping_add(i)).collect()
}

/// Runs one seed of the fault run; a failure or panic names the seed.
fn run_fault_seed(seed: u64) -> faults::FaultRun {
    match std::panic::catch_unwind(|| faults::run_seed(seed)) {
        Ok(Ok(run)) => run,
        Ok(Err(e)) => panic!("fault run failed (replay: MODEL_SEED={seed})\n{e}"),
        Err(panic) => {
            eprintln!("fault run panicked (replay: MODEL_SEED={seed})");
            std::panic::resume_unwind(panic)
        }
    }
}

/// The model over a file store that fails on demand: every failure is a
/// clean error, every read that succeeds is right, and no acknowledged
/// write is lost through crashes and reopens (rules in `faults.rs`).
#[test]
fn faults_never_lose_an_acknowledged_write() {
    let mut injected = 0;
    for seed in fault_seeds() {
        injected += run_fault_seed(seed).injected;
    }
    assert!(
        injected > 0,
        "no fault was injected: the run tested nothing"
    );
}

/// The same seed gives the same operations, faults and outcomes.
#[test]
fn a_fault_run_replays_identically_from_its_seed() {
    let seed = env_u64("MODEL_SEED").unwrap_or_else(rand::random);
    let first = run_fault_seed(seed);
    let second = run_fault_seed(seed);
    assert!(first.trace.len() > 60, "seed {seed}: {:?}", first.trace);
    assert_eq!(first.trace, second.trace, "seed {seed}");
    assert_eq!(first.injected, second.injected, "seed {seed}");
}

// ------------------------------------------------------------------ deterministic cases

fn b(s: &'static [u8]) -> Bytes {
    Bytes::from_static(s)
}

fn put_at(row: &'static [u8], f: usize, q: &'static [u8], ts: Option<i64>, v: &'static [u8]) -> Op {
    Op::Put(PutSpec {
        row: b(row),
        ts: None,
        cells: vec![(Fam(f), b(q), ts.map(Ts::Abs), b(v))],
        durability: Durability::SyncWal,
    })
}

fn delete(row: &'static [u8], ts: Option<i64>, entries: Vec<DelEntry>) -> Op {
    Op::Delete(DeleteSpec {
        row: b(row),
        ts: ts.map(Ts::Abs),
        entries,
        durability: Durability::SyncWal,
    })
}

fn at(op: Op) -> Step {
    Step { advance: 0, op }
}

fn after(advance: i64, op: Op) -> Step {
    Step { advance, op }
}

fn get_all(row: &'static [u8], fams: &[usize], max_versions: u32, tr: TrSpec) -> GetSpec {
    GetSpec {
        row: b(row),
        sel: fams.iter().map(|&f| SelItem::Family(Fam(f))).collect(),
        max_versions,
        tr,
        filter: None,
    }
}

/// (qualifier, timestamp, value) of the cells a get returns.
fn cells_of(h: &Harness, spec: &GetSpec) -> Vec<(String, i64, String)> {
    h.get(spec)
        .unwrap()
        .cells
        .iter()
        .map(|c| (escape(&c.qualifier), c.ts, escape(&c.value)))
        .collect()
}

fn run(steps: Vec<Step>) -> Harness {
    match run_steps(&Config::default(), &steps) {
        Ok(h) => h,
        Err(e) => panic!("{e}"),
    }
}

fn t(q: &str, ts: i64, v: &str) -> (String, i64, String) {
    (q.to_string(), ts, v.to_string())
}

const T: i64 = START_MS;

#[test]
fn later_written_older_put_is_masked() {
    let h = run(vec![
        at(delete(
            b"r",
            None,
            vec![DelEntry::ColumnsAt(Fam(1), b(b"a"), Ts::Abs(T - 10))],
        )),
        at(put_at(b"r", 1, b"a", Some(T - 20), b"late")),
        at(put_at(b"r", 1, b"a", Some(T - 10), b"late-equal")),
        at(put_at(b"r", 1, b"a", Some(T - 5), b"new")),
        // Family and version markers mask later writes too.
        at(delete(
            b"r",
            None,
            vec![DelEntry::FamilyAt(Fam(0), Ts::Abs(T - 10))],
        )),
        at(put_at(b"r", 0, b"b", Some(T - 11), b"gone")),
        at(delete(
            b"r",
            None,
            vec![DelEntry::ColumnAt(Fam(1), b(b"b"), Ts::Abs(T - 3))],
        )),
        at(put_at(b"r", 1, b"b", Some(T - 3), b"gone")),
        at(put_at(b"r", 1, b"b", Some(T - 4), b"kept")),
    ]);
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[0, 1], 5, TrSpec::All)),
        vec![t("a", T - 5, "new"), t("b", T - 4, "kept")]
    );
}

#[test]
fn delete_family_version_hides_one_timestamp_in_every_column() {
    let h = run(vec![
        at(put_at(b"r", 1, b"a", Some(100), b"a100")),
        at(put_at(b"r", 1, b"a", Some(101), b"a101")),
        at(put_at(b"r", 1, b"b", Some(100), b"b100")),
        at(put_at(b"r", 1, b"b", Some(99), b"b99")),
        at(put_at(b"r", 1, b"", Some(100), b"e100")),
        at(delete(
            b"r",
            None,
            vec![DelEntry::FamilyVersion(Fam(1), Ts::Abs(100))],
        )),
        // Written after the marker, still hidden.
        at(put_at(b"r", 1, b"c", Some(100), b"c100")),
    ]);
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[1], 5, TrSpec::All)),
        vec![t("a", 101, "a101"), t("b", 99, "b99")]
    );
}

#[test]
fn min_versions_keeps_the_newest_expired_version() {
    // f3: VERSIONS 2, TTL 3 s, MIN_VERSIONS 1.
    let h = run(vec![
        at(put_at(b"r", 2, b"a", Some(T - 5_000), b"old")),
        at(put_at(b"r", 2, b"a", Some(T - 4_000), b"newer")),
    ]);
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[2], 5, TrSpec::All)),
        vec![t("a", T - 4_000, "newer")],
        "both expired; MIN_VERSIONS keeps the newest"
    );
    let mut h = h;
    h.step(&at(put_at(b"r", 2, b"a", None, b"fresh"))).unwrap();
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[2], 5, TrSpec::All)),
        vec![t("a", T, "fresh")],
        "the second version is expired and beyond MIN_VERSIONS"
    );
    // An expired version cut off by TTL stays cut even inside a time range.
    assert_eq!(
        cells_of(
            &h,
            &get_all(b"r", &[2], 5, TrSpec::Range(Ts::Abs(T - 4_000), 10))
        ),
        vec![]
    );
    h.step(&after(10_000, Op::Reopen { close: true })).unwrap();
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[2], 5, TrSpec::All)),
        vec![t("a", T, "fresh")],
        "expired, but the newest is kept by MIN_VERSIONS"
    );
}

#[test]
fn family_versions_apply_before_the_time_range() {
    let h = run(vec![
        at(put_at(b"r", 0, b"a", Some(100), b"old")),
        at(put_at(b"r", 0, b"a", Some(200), b"new")),
        at(put_at(b"r", 1, b"a", Some(1), b"v1")),
        at(put_at(b"r", 1, b"a", Some(2), b"v2")),
        at(put_at(b"r", 1, b"a", Some(3), b"v3")),
        at(put_at(b"r", 1, b"a", Some(4), b"v4")),
    ]);
    // f1 keeps one version: ts=100 is gone even for a range that excludes 200.
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[0], 1, TrSpec::Range(Ts::Abs(0), 150))),
        vec![]
    );
    // f2 keeps three: ts=1 is the fourth newest.
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[1], 5, TrSpec::Range(Ts::Abs(0), 2))),
        vec![]
    );
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[1], 5, TrSpec::Range(Ts::Abs(0), 3))),
        vec![t("a", 2, "v2")]
    );
    // A deleted newest version does not count against VERSIONS.
    let mut h = h;
    h.step(&at(delete(
        b"r",
        None,
        vec![DelEntry::ColumnAt(Fam(1), b(b"a"), Ts::Abs(4))],
    )))
    .unwrap();
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[1], 5, TrSpec::All)),
        vec![t("a", 3, "v3"), t("a", 2, "v2"), t("a", 1, "v1")]
    );
}

#[test]
fn latest_version_delete_resolves_when_it_runs() {
    let mut h = run(vec![
        at(put_at(b"r", 1, b"a", Some(T - 3), b"v1")),
        at(put_at(b"r", 1, b"a", Some(T - 2), b"v2")),
        at(put_at(b"r", 1, b"a", Some(T - 1), b"v3")),
        at(delete(b"r", None, vec![DelEntry::Column(Fam(1), b(b"a"))])),
    ]);
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[1], 5, TrSpec::All)),
        vec![t("a", T - 2, "v2"), t("a", T - 3, "v1")]
    );
    // Two in one delete: the two newest.
    h.step(&at(put_at(b"r", 1, b"a", Some(T - 1), b"v3 again")))
        .unwrap();
    let still_hidden = cells_of(&h, &get_all(b"r", &[1], 5, TrSpec::All));
    assert_eq!(still_hidden, vec![t("a", T - 2, "v2"), t("a", T - 3, "v1")]);
    h.step(&at(delete(
        b"r",
        None,
        vec![
            DelEntry::Column(Fam(1), b(b"a")),
            DelEntry::Column(Fam(1), b(b"a")),
        ],
    )))
    .unwrap();
    assert_eq!(cells_of(&h, &get_all(b"r", &[1], 5, TrSpec::All)), vec![]);
    // Nothing to delete: the marker takes the row's server timestamp (T),
    // and a put after it in the same millisecond gets a later one, so it is
    // not hidden (issue 12: it used to be, and clients lost such writes).
    h.step(&at(delete(
        b"r",
        None,
        vec![DelEntry::Column(Fam(1), b(b"b"))],
    )))
    .unwrap();
    h.step(&at(put_at(b"r", 1, b"b", None, b"same ms")))
        .unwrap();
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[1], 5, TrSpec::All)),
        vec![t("b", T + 1, "same ms")]
    );
    // A millisecond on, the row's last server timestamp (T + 1) is not
    // before the clock: the next one is T + 2.
    h.step(&after(1, put_at(b"r", 1, b"b", None, b"next ms")))
        .unwrap();
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[1], 5, TrSpec::All)),
        vec![t("b", T + 2, "next ms"), t("b", T + 1, "same ms")]
    );
    h.step(&at(Op::Reopen { close: false })).unwrap();
}

#[test]
fn increment_timestamps_and_not_a_long() {
    let long = |n: i64| Bytes::copy_from_slice(&n.to_be_bytes());
    let mut h = run(vec![at(Op::Put(PutSpec {
        row: b(b"r"),
        ts: None,
        cells: vec![
            (Fam(1), b(b"c"), Some(Ts::Abs(T + 10)), long(5)),
            (Fam(1), b(b"s"), None, b(b"abc")),
        ],
        durability: Durability::SyncWal,
    }))]);
    // The latest value is in the future: the new cell goes one ms above it.
    // A new column takes the row's next server timestamp: the put gave the
    // row T in this millisecond, so T + 1.
    h.step(&at(Op::Increment {
        row: b(b"r"),
        cols: vec![(Fam(1), b(b"c"), 1), (Fam(1), b(b"new"), 7)],
        durability: Durability::SyncWal,
    }))
    .unwrap();
    let got = cells_of(&h, &get_all(b"r", &[1], 1, TrSpec::All));
    assert_eq!(got[0].1, T + 11);
    assert_eq!(
        got[1],
        t("new", T + 1, "\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x07")
    );
    // A non-8-byte latest value fails the whole increment: nothing written.
    h.step(&after(
        5,
        Op::Increment {
            row: b(b"r"),
            cols: vec![(Fam(1), b(b"new"), 1), (Fam(1), b(b"s"), 1)],
            durability: Durability::SyncWal,
        },
    ))
    .unwrap();
    let new_versions: Vec<_> = cells_of(&h, &get_all(b"r", &[1], 5, TrSpec::All))
        .into_iter()
        .filter(|c| c.0 == "new")
        .collect();
    assert_eq!(
        new_versions,
        vec![t("new", T + 1, "\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x07")]
    );
    // Append: same timestamp rule. The increment gave the row T + 11 (the
    // counter's new cell), so at T + 5 the row's next server timestamp is
    // T + 12: a row's server timestamps only grow.
    h.step(&at(Op::Append {
        row: b(b"r"),
        cols: vec![(Fam(1), b(b"s"), b(b"def"))],
        durability: Durability::SyncWal,
    }))
    .unwrap();
    h.step(&at(Op::Reopen { close: true })).unwrap();
    assert!(cells_of(&h, &get_all(b"r", &[1], 5, TrSpec::All)).contains(&t("s", T + 12, "abcdef")));
}

#[test]
fn same_timestamp_later_write_wins_and_raw_shows_it_once() {
    let mut h = run(vec![
        at(put_at(b"r", 1, b"a", Some(50), b"first")),
        at(put_at(b"r", 1, b"a", Some(50), b"second")),
        at(delete(
            b"r",
            None,
            vec![DelEntry::ColumnAt(Fam(1), b(b"a"), Ts::Abs(40))],
        )),
        at(put_at(b"r", 1, b"a", Some(40), b"masked")),
    ]);
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[1], 5, TrSpec::All)),
        vec![t("a", 50, "second")]
    );
    let raw = h
        .raw_scan(&RawScanSpec {
            start: Bytes::new(),
            stop: Bytes::new(),
            reversed: false,
            fams: vec![Fam(1)],
            max_versions: 10,
            tr: TrSpec::All,
            batch: None,
            limit: None,
        })
        .unwrap();
    let kinds: Vec<(i64, CellType, String)> = raw[0]
        .cells
        .iter()
        .map(|c| (c.ts, c.kind, escape(&c.value)))
        .collect();
    assert_eq!(
        kinds,
        // HBase's raw scans skip the older write of the same coordinates
        // (`ScanWildcardColumnTracker.sameAsPreviousTSAndType`).
        vec![
            (50, CellType::Put, "second".to_string()),
            (40, CellType::Delete, String::new()),
            (40, CellType::Put, "masked".to_string()),
        ]
    );
    h.step(&at(Op::Reopen { close: false })).unwrap();
}

#[test]
fn keep_deleted_cells_time_travel() {
    // f4 keeps deleted cells: a read ending before the delete sees them.
    let h = run(vec![
        at(put_at(b"r", 3, b"a", Some(100), b"v")),
        at(delete(
            b"r",
            None,
            vec![DelEntry::ColumnsAt(Fam(3), b(b"a"), Ts::Abs(150))],
        )),
        at(put_at(b"r", 1, b"a", Some(100), b"v")),
        at(delete(
            b"r",
            None,
            vec![DelEntry::ColumnsAt(Fam(1), b(b"a"), Ts::Abs(150))],
        )),
    ]);
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[1, 3], 1, TrSpec::All)),
        vec![]
    );
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[1, 3], 1, TrSpec::Before(Ts::Abs(150)))),
        vec![t("a", 100, "v")],
        "only f4 (KEEP_DELETED_CELLS) time-travels"
    );
}

#[test]
fn check_and_mutate_compares_given_value_on_the_left() {
    let mut h = run(vec![at(put_at(b"r", 1, b"a", None, b"5"))]);
    let cam = |op, v: &'static [u8]| Op::CheckAndMutate {
        row: b(b"r"),
        fam: Fam(1),
        qual: b(b"a"),
        cond: CondSpec::Compare(op, CmpSpec::Binary(b(v))),
        tr: TrSpec::All,
        muts: vec![MutSpec::Put(PutSpec {
            row: b(b"r"),
            ts: None,
            cells: vec![(Fam(1), b(b"hit"), None, b(v))],
            durability: Durability::SyncWal,
        })],
    };
    // 4 < 5 holds, 6 < 5 does not.
    h.step(&after(1, cam(CompareOp::Less, b"4"))).unwrap();
    h.step(&after(1, cam(CompareOp::Less, b"6"))).unwrap();
    h.step(&after(1, cam(CompareOp::Greater, b"6"))).unwrap();
    assert_eq!(
        cells_of(&h, &get_all(b"r", &[1], 1, TrSpec::All)),
        vec![t("a", T, "5"), t("hit", T + 3, "6")]
    );
}

#[test]
fn scans_cover_bounds_prefix_reverse_limit_and_batch() {
    let mut steps = Vec::new();
    for r in ROWS {
        steps.push(at(Op::Put(PutSpec {
            row: Bytes::from_static(r),
            ts: None,
            cells: vec![
                (Fam(0), b(b"a"), None, b(b"1")),
                (Fam(1), b(b""), None, b(b"2")),
                (Fam(1), b(b"b"), None, b(b"3")),
            ],
            durability: Durability::AsyncWal,
        })));
    }
    let h = run(steps);
    let scan =
        |start: &'static [u8], stop: &'static [u8], prefix: Option<&'static [u8]>, reversed| {
            let rows: Vec<String> = h
                .scan(&ScanSpec {
                    start: b(start),
                    stop: b(stop),
                    prefix: prefix.map(b),
                    reversed,
                    sel: Vec::new(),
                    max_versions: 1,
                    tr: TrSpec::All,
                    filter: None,
                    batch: Some(2),
                    limit: Some(3),
                })
                .unwrap()
                .iter()
                .map(|r| escape(&r.row))
                .collect();
            rows
        };
    assert_eq!(
        scan(b"r1", b"r2", None, false),
        ["r1", "r1", "r1\\x00", "r1\\x00", "r10", "r10"]
    );
    assert_eq!(
        scan(b"r2", b"r1", None, true),
        ["r2", "r2", "r11", "r11", "r10", "r10"]
    );
    assert_eq!(
        scan(b"", b"", Some(b"r1"), true),
        ["r11", "r11", "r10", "r10", "r1\\x00", "r1\\x00"]
    );
    assert_eq!(
        scan(b"\xff", b"", None, false),
        ["\\xFF\\x01", "\\xFF\\x01"]
    );
}

fn filtered_scan(h: &Harness, filter: FilterSpec, max_versions: u32) -> Vec<String> {
    h.scan(&ScanSpec {
        start: Bytes::new(),
        stop: Bytes::new(),
        prefix: None,
        reversed: false,
        sel: Vec::new(),
        max_versions,
        tr: TrSpec::All,
        filter: Some(filter),
        batch: None,
        limit: None,
    })
    .unwrap()
    .iter()
    .flat_map(|r| r.cells.iter())
    .map(|c| format!("{c:?}"))
    .collect()
}

#[test]
fn filters_see_versions_before_the_read_max_versions() {
    if !FILTERS_IN_MODEL {
        return;
    }
    let h = run(vec![
        at(put_at(b"r1", 1, b"a", Some(1), b"5")),
        at(put_at(b"r1", 1, b"a", Some(2), b"9")),
        at(put_at(b"r1", 0, b"b", Some(3), b"5")),
        at(put_at(b"r2", 1, b"a", Some(4), b"0")),
        at(put_at(b"s", 1, b"b", Some(5), b"zz")),
    ]);
    // The newest f2:a of r1 fails `value <= 5`: the older one shows instead.
    assert_eq!(
        filtered_scan(&h, FilterSpec::Value(CompareOp::LessOrEqual, b(b"5")), 1),
        ["r1/f1:b/3/Put=5", "r1/f2:a/1/Put=5", "r2/f2:a/4/Put=0"]
    );
    // Qualifier prefix `a` in f2 even though f1's `b` sorts after it.
    assert_eq!(
        filtered_scan(&h, FilterSpec::ColumnPrefix(b(b"a")), 1),
        ["r1/f2:a/2/Put=9", "r2/f2:a/4/Put=0"]
    );
    assert_eq!(
        filtered_scan(&h, FilterSpec::FirstKeyOnly, 3),
        ["r1/f1:b/3/Put=5", "r2/f2:a/4/Put=0", "s/f2:b/5/Put=zz"]
    );
    // Page counts rows that have cells.
    assert_eq!(
        filtered_scan(&h, FilterSpec::Page(2), 1),
        ["r1/f1:b/3/Put=5", "r1/f2:a/2/Put=9", "r2/f2:a/4/Put=0"]
    );
    assert_eq!(
        filtered_scan(
            &h,
            FilterSpec::List(
                ListOperator::MustPassAll,
                vec![
                    FilterSpec::Timestamps(vec![Ts::Abs(1), Ts::Abs(5)]),
                    FilterSpec::KeyOnly
                ]
            ),
            2
        ),
        ["r1/f2:a/1/Put=", "s/f2:b/5/Put="]
    );
    // OR: every cell of rows starting with `r1`, elsewhere values equal to 0.
    assert_eq!(
        filtered_scan(
            &h,
            FilterSpec::List(
                ListOperator::MustPassOne,
                vec![
                    FilterSpec::Prefix(b(b"r1")),
                    FilterSpec::Value(CompareOp::Equal, b(b"0"))
                ]
            ),
            1
        ),
        ["r1/f1:b/3/Put=5", "r1/f2:a/2/Put=9", "r2/f2:a/4/Put=0"]
    );
}

// ------------------------------------------------------------------ store files, flushes, compactions

#[test]
fn major_compaction_ends_the_masking_quirk() {
    let masked = |h: &Harness| cells_of(h, &get_all(b"r", &[0, 1, 3], 5, TrSpec::All));
    let mut h = run(vec![
        at(delete(
            b"r",
            None,
            vec![
                DelEntry::ColumnsAt(Fam(1), b(b"a"), Ts::Abs(100)),
                DelEntry::FamilyAt(Fam(0), Ts::Abs(100)),
                DelEntry::FamilyVersion(Fam(1), Ts::Abs(70)),
                // f4 keeps deleted cells: its marker survives compactions.
                DelEntry::ColumnsAt(Fam(3), b(b"a"), Ts::Abs(100)),
            ],
        )),
        at(put_at(b"r", 1, b"a", Some(50), b"masked")),
        at(put_at(b"r", 0, b"b", Some(60), b"masked")),
        at(put_at(b"r", 1, b"c", Some(70), b"masked")),
        at(put_at(b"r", 3, b"a", Some(50), b"masked")),
    ]);
    assert_eq!(masked(&h), vec![]);
    h.step(&at(Op::MajorCompact)).unwrap();
    assert_eq!(masked(&h), vec![], "the compaction dropped the masked puts");
    for (f, q, ts) in [(1, b"a", 50), (0, b"b", 60), (1, b"c", 70), (3, b"a", 50)] {
        h.step(&at(put_at(b"r", f, q, Some(ts), b"after"))).unwrap();
    }
    let expected = vec![
        t("b", 60, "after"),
        t("a", 50, "after"),
        t("c", 70, "after"),
    ];
    assert_eq!(masked(&h), expected, "markers gone, except f4's");
    h.step(&at(Op::Reopen { close: false })).unwrap();
    assert_eq!(masked(&h), expected);
    h.step(&at(Op::Reopen { close: true })).unwrap();
    assert_eq!(masked(&h), expected);
    h.step(&at(Op::MajorCompact)).unwrap();
    assert_eq!(masked(&h), expected);
}

#[test]
fn major_compaction_drops_surplus_and_expired_versions_for_good() {
    let steps = vec![
        // f2 keeps three versions: ts 1 is the surplus one.
        at(put_at(b"r", 1, b"a", Some(1), b"v1")),
        at(put_at(b"r", 1, b"a", Some(2), b"v2")),
        at(put_at(b"r", 1, b"a", Some(3), b"v3")),
        at(put_at(b"r", 1, b"a", Some(4), b"v4")),
        // f3: both expired, MIN_VERSIONS keeps the newer one.
        at(put_at(b"r", 2, b"a", Some(T - 5_000), b"old")),
        at(put_at(b"r", 2, b"a", Some(T - 4_000), b"newer")),
    ];
    let delete_newest = at(delete(
        b"r",
        None,
        vec![
            DelEntry::ColumnAt(Fam(1), b(b"a"), Ts::Abs(4)),
            DelEntry::ColumnAt(Fam(2), b(b"a"), Ts::Abs(T - 4_000)),
        ],
    ));
    let read = |h: &Harness| cells_of(h, &get_all(b"r", &[1, 2], 5, TrSpec::All));

    let mut plain = run(steps.clone());
    plain.step(&delete_newest).unwrap();
    assert_eq!(
        read(&plain),
        vec![
            t("a", 3, "v3"),
            t("a", 2, "v2"),
            t("a", 1, "v1"),
            t("a", T - 5_000, "old")
        ],
        "without a compaction, deleting the newest reveals the next one"
    );

    let mut compacted = run(steps);
    compacted.step(&at(Op::MajorCompact)).unwrap();
    compacted.step(&delete_newest).unwrap();
    assert_eq!(
        read(&compacted),
        vec![t("a", 3, "v3"), t("a", 2, "v2")],
        "the compaction dropped them: nothing to reveal"
    );
    compacted.step(&at(Op::Reopen { close: false })).unwrap();
}

#[test]
fn write_order_survives_flushes_crashes_and_compactions() {
    // The same coordinates written again and again, each write ending up
    // elsewhere: a file, the WAL only, a compacted file. The latest write
    // must win every time (f4 keeps the older ones for raw reads).
    let read = |h: &Harness| cells_of(h, &get_all(b"r", &[1, 3], 5, TrSpec::All));
    let put = |v: &'static [u8]| {
        at(Op::Put(PutSpec {
            row: b(b"r"),
            ts: Some(Ts::Abs(50)),
            cells: vec![(Fam(1), b(b"a"), None, b(v)), (Fam(3), b(b"a"), None, b(v))],
            durability: Durability::SyncWal,
        }))
    };
    let mut h = run(vec![
        put(b"1"),
        at(Op::Flush),
        put(b"2"),
        at(Op::Reopen { close: false }),
        put(b"3"),
        at(Op::Flush),
        at(Op::Reopen { close: false }),
        put(b"4"),
        at(Op::MinorCompact),
        at(Op::Reopen { close: false }),
    ]);
    assert_eq!(read(&h), vec![t("a", 50, "4"), t("a", 50, "4")]);
    h.step(&at(Op::MajorCompact)).unwrap();
    h.step(&at(Op::Reopen { close: false })).unwrap();
    h.step(&put(b"5")).unwrap();
    h.step(&at(Op::Reopen { close: false })).unwrap();
    assert_eq!(read(&h), vec![t("a", 50, "5"), t("a", 50, "5")]);
    // What a major compaction dropped stays dropped after WAL replay.
    h.step(&at(delete(b"r", Some(50), vec![]))).unwrap();
    h.step(&at(Op::MajorCompact)).unwrap();
    h.step(&at(Op::Reopen { close: false })).unwrap();
    assert_eq!(read(&h), vec![]);
    h.step(&at(Op::Reopen { close: true })).unwrap();
    assert_eq!(read(&h), vec![]);
}

/// A data set with several versions, every kind of marker, masked puts,
/// same-timestamp overwrites, long values, a TTL family with MIN_VERSIONS
/// and a KEEP_DELETED_CELLS family, in three parts (flushed after each of
/// the first two, so stores hold several files; the last stays in memory).
fn mixed_data_parts() -> [Vec<Step>; 3] {
    let mut one = Vec::new();
    for row in [&b"r1"[..], b"r2", b"s"] {
        let row: &'static [u8] = row;
        one.extend([
            at(put_at(row, 0, b"a", Some(T - 10), b"1a")),
            at(put_at(row, 0, b"b", Some(T - 10), b"1b")),
            at(put_at(row, 1, b"a", Some(T - 10), b"v10")),
            at(put_at(row, 1, b"a", Some(T - 9), b"v9")),
            at(put_at(row, 1, b"a", Some(T - 8), b"v8")),
            at(put_at(row, 1, b"a", Some(T - 7), b"v7")),
            at(put_at(row, 2, b"a", Some(T - 5_000), b"old")),
            at(put_at(row, 2, b"a", Some(T - 4_000), b"newer")),
            at(put_at(row, 2, b"b", None, b"live")),
            at(put_at(row, 3, b"a", Some(T - 10), b"k10")),
            at(put_at(row, 3, b"a", Some(T - 9), b"k9")),
        ]);
    }
    let long = |row: &'static [u8], ts: i64| {
        at(Op::Put(PutSpec {
            row: b(row),
            ts: Some(Ts::Abs(ts)),
            cells: vec![
                (Fam(1), b(b"c"), None, Bytes::from_static(&LONG_VALUE)),
                (Fam(3), b(b"c"), None, Bytes::from_static(&LONG_VALUE)),
            ],
            durability: Durability::SyncWal,
        }))
    };
    one.extend([long(b"r3", T - 3), long(b"r3", T - 2), long(b"r3", T - 1)]);
    let two = vec![
        after(
            1,
            delete(
                b"r1",
                None,
                vec![DelEntry::ColumnsAt(Fam(1), b(b"a"), Ts::Abs(T - 9))],
            ),
        ),
        at(put_at(b"r1", 1, b"a", Some(T - 10), b"masked")),
        at(delete(b"r2", None, vec![DelEntry::Family(Fam(0))])),
        at(delete(
            b"r2",
            None,
            vec![DelEntry::FamilyVersion(Fam(1), Ts::Abs(T - 8))],
        )),
        at(delete(b"r1", None, vec![DelEntry::Column(Fam(3), b(b"a"))])),
        at(delete(
            b"r1",
            None,
            vec![DelEntry::ColumnsAt(Fam(3), b(b"b"), Ts::Abs(T - 5))],
        )),
        at(put_at(b"r1", 3, b"b", Some(T - 6), b"kdc masked")),
        at(delete(b"s", None, vec![])),
        at(put_at(b"r1", 1, b"b", Some(T - 3), b"first")),
        at(put_at(b"r1", 1, b"b", Some(T - 3), b"second")),
        at(put_at(b"r1", 3, b"b", Some(T - 3), b"dup1")),
        at(put_at(b"r1", 3, b"b", Some(T - 3), b"dup2")),
        at(delete(
            b"r2",
            None,
            vec![DelEntry::ColumnAt(Fam(2), b(b"a"), Ts::Abs(T - 4_000))],
        )),
        long(b"r3", T - 4),
    ];
    let three = vec![
        after(2, put_at(b"r1", 2, b"a", None, b"fresh")),
        at(put_at(b"r2", 0, b"a", Some(T - 20), b"masked by family")),
        at(Op::Increment {
            row: b(b"r1"),
            cols: vec![(Fam(1), b(b"n"), 5), (Fam(3), b(b"n"), 7)],
            durability: Durability::SyncWal,
        }),
        at(Op::Append {
            row: b(b"r1"),
            cols: vec![(Fam(1), b(b"b"), b(b"x")), (Fam(3), b(b"b"), b(b"y"))],
            durability: Durability::AsyncWal,
        }),
        at(put_at(b"s", 0, b"a", None, b"after the row delete")),
        long(b"r3", T),
    ];
    [one, two, three]
}

/// Reads of every kind (each compared with the model by the harness), and
/// the engine's own full reads: (normal reads, raw reads).
fn read_battery(h: &Harness) -> (Vec<Vec<RowView>>, Vec<Vec<RowView>>) {
    let mut normal = Vec::new();
    let trs = [
        TrSpec::All,
        TrSpec::Before(Ts::Abs(T - 8)),
        TrSpec::Range(Ts::Abs(T - 10), 5),
        TrSpec::At(Ts::Abs(T - 9)),
        TrSpec::Before(Ts::Abs(T - 2)),
    ];
    for max_versions in [1, 2, 10] {
        for tr in trs {
            for (reversed, filter) in [
                (false, None),
                (true, None),
                (false, Some(FilterSpec::Value(CompareOp::Less, b(b"v9")))),
            ] {
                normal.push(
                    h.scan(&ScanSpec {
                        start: Bytes::new(),
                        stop: Bytes::new(),
                        prefix: None,
                        reversed,
                        sel: Vec::new(),
                        max_versions,
                        tr,
                        filter,
                        batch: None,
                        limit: None,
                    })
                    .unwrap(),
                );
            }
        }
    }
    for row in [&b"r1"[..], b"r2", b"r3", b"s", b"missing"] {
        for sel in [
            vec![],
            vec![SelItem::Column(Fam(1), b(b"a"))],
            vec![SelItem::Family(Fam(3))],
        ] {
            normal.push(vec![h
                .get(&GetSpec {
                    row: Bytes::copy_from_slice(row),
                    sel,
                    max_versions: 10,
                    tr: TrSpec::All,
                    filter: None,
                })
                .unwrap()]);
        }
    }
    let mut raw = Vec::new();
    for max_versions in [1, 10] {
        raw.push(
            h.raw_scan(&RawScanSpec {
                start: Bytes::new(),
                stop: Bytes::new(),
                reversed: false,
                fams: RAW_FAMS.to_vec(),
                max_versions,
                tr: TrSpec::All,
                batch: None,
                limit: None,
            })
            .unwrap(),
        );
    }
    let mut engine = h.engine_snapshot().unwrap();
    raw.push(engine.pop().unwrap());
    normal.extend(engine);
    (normal, raw)
}

fn total_files(h: &Harness) -> Vec<usize> {
    h.stores().unwrap().iter().map(|s| s.0).collect()
}

/// Every compression, bloom type and block encoding, each on every family
/// in one of the rounds.
fn format_rounds() -> Vec<Vec<FamFormat>> {
    let rounds = Compression::ALL
        .len()
        .max(BloomType::ALL.len())
        .max(DataBlockEncoding::ALL.len());
    (0..rounds)
        .map(|i| {
            (0..FAMS.len())
                .map(|k| FamFormat {
                    compression: Compression::ALL[(i + k) % Compression::ALL.len()],
                    bloom: BloomType::ALL[(i + k) % BloomType::ALL.len()],
                    encoding: DataBlockEncoding::ALL[(i + k) % DataBlockEncoding::ALL.len()],
                    block_size: 1024,
                    block_cache: (i + k) % 4 != 3,
                    in_memory: (i + k) % 3 == 1,
                })
                .collect()
        })
        .collect()
}

#[test]
fn reads_are_the_same_through_flush_minor_and_major_compaction() {
    for formats in format_rounds() {
        // No automatic compactions while writing: files pile up.
        // A memstore counts each cell's entry cost (104 bytes beside its
        // bytes): the flush size leaves the last writes in memory.
        let config = Config {
            flush_bytes: 2000,
            min_files: 10,
            max_files: 10,
            formats: formats.clone(),
            ..Config::default()
        };
        let [one, two, three] = mixed_data_parts();
        let mut h = run_steps(&config, &one).unwrap();
        h.step(&at(Op::Flush)).unwrap();
        for s in two.iter().chain([&at(Op::Flush)]).chain(&three) {
            h.step(s).unwrap();
        }
        let files = total_files(&h);
        assert!(
            files.iter().all(|&n| n >= 2) && h.stores().unwrap().iter().any(|s| s.1 > 0),
            "several files and a memstore in every store: {:?} ({formats:?})",
            h.stores().unwrap()
        );
        let (normal, raw) = read_battery(&h);
        assert!(normal.iter().flatten().count() > 100);

        h.step(&at(Op::Flush)).unwrap();
        assert_eq!(read_battery(&h), (normal.clone(), raw.clone()), "flush");

        // Reopen with a policy that merges the files.
        h.config.min_files = 2;
        h.config.ratio = 3.0;
        h.step(&at(Op::Reopen { close: true })).unwrap();
        assert_eq!(read_battery(&h), (normal.clone(), raw.clone()), "reopen");
        let before = total_files(&h);
        h.step(&at(Op::MinorCompact)).unwrap();
        let merged = total_files(&h);
        assert!(
            merged.iter().sum::<usize>() < before.iter().sum::<usize>(),
            "the minor compaction merged files: {before:?} -> {merged:?}"
        );
        assert_eq!(read_battery(&h), (normal.clone(), raw.clone()), "minor");

        h.step(&at(Op::MajorCompact)).unwrap();
        assert!(total_files(&h).iter().all(|&n| n == 1));
        let (normal_after, raw_after) = read_battery(&h);
        assert_eq!(normal_after, normal, "major: normal reads");
        assert_ne!(raw_after, raw, "major: raw reads lose markers");
        h.step(&at(Op::Reopen { close: false })).unwrap();
        assert_eq!(read_battery(&h), (normal_after, raw_after), "crash reopen");

        // Later: f3's remaining versions expire; compactions keep agreeing.
        h.step(&after(5_000, Op::MajorCompact)).unwrap();
        read_battery(&h);
        h.step(&at(put_at(b"r1", 2, b"a", Some(T - 4_500), b"late")))
            .unwrap();
        h.step(&at(Op::MajorCompact)).unwrap();
        read_battery(&h);
    }
}

/// Regression (found while extending the model to compactions): a major
/// compaction used to be skipped when the store's only file was itself the
/// output of one, so cells that had expired (TTL) since stayed in the file;
/// a later delete of the version MIN_VERSIONS kept then revealed the expired
/// one, which the compaction should have dropped.
#[test]
fn major_compaction_of_a_major_compacted_file_drops_newly_expired_versions() {
    // f3: VERSIONS 2, MIN_VERSIONS 1, TTL 3 s.
    let mut h = run(vec![
        at(put_at(b"r", 2, b"a", Some(T - 100), b"older")),
        at(put_at(b"r", 2, b"a", Some(T - 50), b"newer")),
        // Both alive: the compaction keeps both.
        at(Op::MajorCompact),
        // Both expired: MIN_VERSIONS keeps "newer", "older" must go.
        after(5_000, Op::MajorCompact),
        at(delete(
            b"r",
            None,
            vec![DelEntry::ColumnAt(Fam(2), b(b"a"), Ts::Abs(T - 50))],
        )),
    ]);
    assert_eq!(cells_of(&h, &get_all(b"r", &[2], 5, TrSpec::All)), vec![]);
    h.step(&at(Op::Reopen { close: true })).unwrap();
}

// ------------------------------------------------------------------ regressions: engine bugs found here

/// Raw scan of `f2` with max versions 1 over the same shape of data in the
/// empty-qualifier column and in column `a`.
fn raw_scan_of_two_puts_and_a_marker(qualifier: &'static [u8], marker: Delete) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f2")))
        .unwrap();
    let table = db.table("t").unwrap();
    table
        .put(&Put::new("r").add_at("f2", qualifier, 10, "new"))
        .unwrap();
    table
        .put(&Put::new("r").add_at("f2", qualifier, 9, "old"))
        .unwrap();
    table.delete(&marker).unwrap();
    let scan = Scan::new().raw(true).max_versions(1);
    table
        .scan(&scan)
        .unwrap()
        .flat_map(|r| r.unwrap().cells)
        .map(|c| format!("{}@{}", c.cell_type, c.timestamp))
        .collect()
}

/// Found by the model: a raw scan kept returning the empty-qualifier column's
/// delete markers after a put beyond max versions.
#[test]
fn raw_scan_ends_the_empty_qualifier_column_at_the_version_limit() {
    // Column `a`: the put at 9 is beyond max versions 1, so the column ends
    // and the older marker is not returned (HBase's ScanWildcardColumnTracker:
    // markers are not counted, but the first surplus put seeks to the next column).
    assert_eq!(
        raw_scan_of_two_puts_and_a_marker(b"a", Delete::new("r").columns_at("f2", "a", 8)),
        ["Put@10"]
    );
    // The empty qualifier must behave the same (family markers live there).
    assert_eq!(
        raw_scan_of_two_puts_and_a_marker(b"", Delete::new("r").family_at("f2", 8)),
        ["Put@10"]
    );
}

/// A fault-injecting in-memory file store, and how to open a database over
/// it (again after a crash) whose table `t` has family `f`.
fn faulty_database() -> (basalt::fs::FaultyFileStore, impl Fn() -> Database) {
    use basalt::fs::{FaultyFileStore, MemFileStore};
    let dir = tempfile::tempdir().unwrap();
    let store = FaultyFileStore::new(Arc::new(MemFileStore::new()));
    let files = store.clone();
    let open = move || {
        let db = Database::builder(Options::new(dir.path()))
            .file_store(Arc::new(files.clone()))
            .open()
            .unwrap();
        if !db.table_exists("t") {
            db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")))
                .unwrap();
        }
        db
    };
    (store, open)
}

/// Found by the fault run: a flush whose store file was published but whose
/// manifest commit failed left the file's number unreserved, so every later
/// flush of the store tried to create the same file and failed with "file
/// already exists" until the database was reopened.
#[test]
fn a_flush_after_a_failed_manifest_commit_takes_a_new_file_name() {
    use basalt::fs::FaultOp;
    let (store, open) = faulty_database();
    let db = open();
    let table = db.table("t").unwrap();
    table.put(&Put::new("r").add("f", "q", "v1")).unwrap();
    // The first finish publishes the store file, the second the manifest.
    store.fail_nth(FaultOp::Finish, 2);
    assert!(db.flush_table("t").is_err());
    store.clear();
    db.flush_table("t").unwrap();
    table.put(&Put::new("r").add("f", "q2", "v2")).unwrap();
    db.flush_table("t").unwrap();
    db.close().unwrap();
    drop((table, db));
    let db = open();
    let row = db.table("t").unwrap().get(&Get::new("r")).unwrap();
    assert_eq!(row.cells.len(), 2, "{row:?}");
}

/// Found by the fault run: a flush that retried the snapshot a failed flush
/// had left recorded the new flush's sequence id as flushed, though the
/// writes made since were only in the active memstore; after a crash, WAL
/// replay skipped them and acknowledged writes were lost.
#[test]
fn a_retried_flush_does_not_count_later_writes_as_flushed() {
    use basalt::fs::FaultOp;
    let (store, open) = faulty_database();
    let db = open();
    let table = db.table("t").unwrap();
    table.put(&Put::new("r").add("f", "a", "1")).unwrap();
    store.fail_nth(FaultOp::Finish, 1);
    assert!(db.flush_table("t").is_err());
    store.clear();
    table.put(&Put::new("r").add("f", "b", "2")).unwrap();
    db.flush_table("t").unwrap();
    // A crash: no close, so "b" is only in the WAL (or a file).
    drop((table, db));
    let db = open();
    let row = db.table("t").unwrap().get(&Get::new("r")).unwrap();
    assert_eq!(row.cells.len(), 2, "{row:?}");
}
