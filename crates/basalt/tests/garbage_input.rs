//! Garbage in a data directory's catalog (a checkpoint, a delta after
//! one, or the format-2 `catalog.json`) never panics
//! `Database::open`, and opening it never allocates more than a small
//! multiple of the file plus the fixed cost of opening a database.
//!
//! Arbitrary bytes must be refused with an error. Mutated copies of a real
//! catalog (bytes flipped, inserted, deleted, or the tail cut off) may
//! still describe a database that opens; either way there is no panic. The
//! peak is measured on the opening thread by the counting global allocator
//! of this test binary, against [`FACTOR`] times the catalog's length plus
//! [`CONSTANT`].
//!
//! Failing cases are persisted in `garbage_input.proptest-regressions`
//! beside this file; commit that file when it appears.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use proptest::prelude::*;

use basalt::{ColumnFamilyDescriptor, Database, ManualClock, Options, TableDescriptor};

// The proptest settings, the counting global allocator, the bound check
// and the byte mutations are shared by every crate's garbage-input test.
#[path = "../../../test-support/garbage.rs"]
mod garbage;
use garbage::{arb_mutations, check_bounded, config, mutate, peak_while};
/// The catalog is parsed once into maps and vectors that grow by doubling.
const FACTOR: usize = 16;
/// Opening a database at all: the WAL's replay buffer and writer, the block
/// cache's bookkeeping, the options, and what opening the regions a
/// (mutated) catalog still names costs, and the master and the member
/// (one process is a cluster of one) each holding the catalog. Measured:
/// about 2 KiB when the catalog is refused, about 290 KiB at the peak for
/// a full open and close of the two-region table.
const CONSTANT: usize = 384 << 10;

fn options(dir: &Path) -> Options {
    Options::new(dir)
}

fn open(dir: &Path) -> basalt::Result<Database> {
    Database::builder(options(dir))
        .clock(Arc::new(ManualClock::new(1_000_000)))
        .open()
}

/// The catalog file an open reads: the newest numbered version, or the
/// first one when none was written yet.
fn newest_catalog(dir: &Path) -> std::path::PathBuf {
    basalt::catalog_file(&basalt::fs::LocalFileStore::new(), dir)
        .unwrap()
        .unwrap_or_else(|| basalt::layout::catalog_version_path(dir, 1))
}

/// A data directory holding one closed database with a pre-split table
/// of two families.
fn real_data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path()).unwrap();
    db.create_table_with_splits(
        TableDescriptor::new("t")
            .family(ColumnFamilyDescriptor::new("a"))
            .family(ColumnFamilyDescriptor::new("b")),
        &[Bytes::from_static(b"m")],
    )
    .unwrap();
    db.close().unwrap();
    dir
}

/// Writes `catalog` as the catalog file `path` of `dir` and opens it; true
/// when the open succeeded.
fn open_with_catalog(dir: &Path, path: &Path, catalog: &[u8]) -> bool {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, catalog).unwrap();
    let (opened, peak) = peak_while(|| {
        let db = open(dir);
        let ok = db.is_ok();
        if let Ok(db) = db {
            let _ = db.close();
        }
        ok
    });
    check_bounded("catalog", peak, catalog.len(), FACTOR, CONSTANT);
    opened
}

#[test]
fn an_untouched_catalog_opens() {
    let dir = real_data_dir();
    let path = newest_catalog(dir.path());
    let catalog = std::fs::read(&path).unwrap();
    assert!(open_with_catalog(dir.path(), &path, &catalog));
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn arbitrary_bytes_in_the_catalog_make_open_fail_cleanly(
        data in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = newest_catalog(dir.path());
        prop_assert!(!open_with_catalog(dir.path(), &path, &data), "garbage opened");
    }

    #[test]
    fn arbitrary_bytes_in_a_format_2_catalog_make_open_fail_cleanly(
        data in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = basalt::layout::legacy_catalog_path(dir.path());
        prop_assert!(!open_with_catalog(dir.path(), &path, &data), "garbage opened");
    }

    #[test]
    fn a_mutated_catalog_opens_or_fails_cleanly(mutations in arb_mutations()) {
        let dir = real_data_dir();
        let path = newest_catalog(dir.path());
        let mut catalog = std::fs::read(&path).unwrap();
        mutate(&mut catalog, &mutations);
        open_with_catalog(dir.path(), &path, &catalog);
    }

    #[test]
    fn arbitrary_bytes_as_the_delta_after_a_real_checkpoint_make_open_fail_cleanly(
        data in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        let dir = real_data_dir();
        let path = next_catalog_version(dir.path());
        prop_assert!(!open_with_catalog(dir.path(), &path, &data), "garbage opened");
    }

    #[test]
    fn a_delta_with_arbitrary_fields_after_a_real_checkpoint_opens_or_fails_cleanly(
        base_offset in 0u64..3,
        checkpoint in 0u64..40,
        table in prop_oneof![Just("t".to_string()), "[a-z:]{0,4}"],
        id in prop_oneof![Just(None), any::<u64>().prop_map(Some)],
        start in proptest::collection::vec(any::<u8>(), 0..3),
        state in "[A-Z_]{0,8}",
        removed in proptest::collection::vec(any::<u64>(), 0..2),
        dropped in proptest::collection::vec("[a-z]{0,2}", 0..2),
        field in prop_oneof![Just("epoch"), Just("procedures"), Just("namespaces"), Just("x")],
        value in prop_oneof![Just(serde_json::json!(7)), Just(serde_json::json!("s")), Just(serde_json::json!({}))],
    ) {
        let dir = real_data_dir();
        let path = next_catalog_version(dir.path());
        let version = basalt::layout::catalog_version_of(&path).unwrap();
        let first_region = first_region_id(dir.path());
        let delta = serde_json::json!({
            "format_version": 4,
            "kind": "delta",
            "base": version.saturating_sub(base_offset),
            "checkpoint": checkpoint,
            "set": { field: value },
            "tables": { table: {
                "regions": [{ "id": id.unwrap_or(first_region),
                              "set": { "start_key": start, "state": state } }],
                "removed": removed,
            } },
            "dropped": dropped,
        });
        open_with_catalog(dir.path(), &path, &serde_json::to_vec(&delta).unwrap());
    }
}

/// Where the next catalog version of `dir` goes (after the newest).
fn next_catalog_version(dir: &Path) -> std::path::PathBuf {
    let newest = basalt::layout::catalog_version_of(&newest_catalog(dir)).unwrap();
    basalt::layout::catalog_version_path(dir, newest + 1)
}

/// The id of the first region of table `t` in the catalog of `dir`.
fn first_region_id(dir: &Path) -> u64 {
    let text = basalt::catalog_document(&basalt::fs::LocalFileStore::new(), dir)
        .unwrap()
        .unwrap();
    let catalog: serde_json::Value = serde_json::from_slice(&text).unwrap();
    catalog["tables"]["t"]["regions"][0]["id"].as_u64().unwrap()
}
