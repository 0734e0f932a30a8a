//! A whole database on object storage: tables written, flushed, split,
//! compacted and dropped on one data directory are read back by a database
//! opened on a new, empty data directory (local caches only) pointing at
//! the same storage; on S3 (moto) and on a shared directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use basalt::{ColumnFamilyDescriptor, Database, Delete, Get, Options, Put, Scan, TableDescriptor};
use basalt_object_store::{open_storage, StorageConfig};

mod common;
use common::{file_config, moto, moto_config};

const ROWS: usize = 3_000;

fn options(dir: &Path) -> Options {
    let mut o = Options::new(dir);
    // Deterministic: flushes, splits and compactions only when asked.
    o.background_threads = 0;
    o.region_split_bytes = 0;
    o
}

fn open(config: &StorageConfig, dir: &Path) -> Database {
    let storage = open_storage(config, dir).unwrap().unwrap();
    Database::builder(options(dir))
        .file_store(storage.file_store())
        .open()
        .unwrap()
}

fn value(i: usize, round: usize) -> String {
    format!("value {i} of round {round} {}", "x".repeat(i % 50))
}

fn round_trip(config: &StorageConfig) {
    let first_dir = tempfile::tempdir().unwrap();
    let db = open(config, first_dir.path());
    db.create_table(
        TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f").block_size(4096)),
    )
    .unwrap();
    db.create_table(TableDescriptor::new("gone").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    let table = db.table("t").unwrap();
    // Three flushed rounds: every row, then every other, then every third.
    for round in 0..3 {
        for i in (0..ROWS).step_by(round + 1) {
            table
                .put(&Put::new(format!("row{i:06}")).add("f", "q", value(i, round)))
                .unwrap();
        }
        db.flush_table("t").unwrap();
    }
    db.table("gone")
        .unwrap()
        .put(&Put::new("r").add("f", "q", "v"))
        .unwrap();
    db.flush_table("gone").unwrap();
    // A split leaves the daughters linking to the parent's files; the
    // major compaction then rewrites them.
    db.split_table("t", Some(b"row001500")).unwrap();
    for i in (0..ROWS).step_by(7) {
        table.delete(&Delete::new(format!("row{i:06}"))).unwrap();
    }
    db.flush_table("t").unwrap();
    db.compact_table("t", true).unwrap();
    db.disable_table("gone").unwrap();
    db.drop_table("gone").unwrap();
    db.close().unwrap();
    // Nothing but local state is in the first data directory.
    let local: Vec<String> = std::fs::read_dir(first_dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for name in &local {
        assert!(
            ["LOCK", "wal", "cache"].contains(&name.as_str()),
            "{name} was written to the local data directory"
        );
    }

    let second_dir = tempfile::tempdir().unwrap();
    let db = open(config, second_dir.path());
    assert_eq!(db.list_tables(), vec!["t".to_string()]);
    let info = db.describe_table("t").unwrap();
    assert_eq!(info.regions.len(), 2, "the split survived");
    let table = db.table("t").unwrap();
    let mut expected = Vec::new();
    for i in 0..ROWS {
        if i % 7 == 0 {
            continue;
        }
        let round = [2, 1, 0].into_iter().find(|r| i % (r + 1) == 0).unwrap();
        expected.push((format!("row{i:06}"), value(i, round)));
    }
    let scanned: Vec<(String, String)> = table
        .scan(&Scan::new())
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            let v = r.value(b"f", b"q").unwrap();
            (
                String::from_utf8(r.row.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            )
        })
        .collect();
    assert_eq!(scanned.len(), expected.len());
    assert_eq!(scanned, expected);
    for i in [1usize, 6, 7, 1499, 1500, 2999] {
        let got = table.get(&Get::new(format!("row{i:06}"))).unwrap();
        if i % 7 == 0 {
            assert!(got.value(b"f", b"q").is_none(), "row {i} was deleted");
        } else {
            assert!(got.value(b"f", b"q").is_some(), "row {i}");
        }
    }
    // Writes go on in the new home, and survive another move.
    table
        .put(&Put::new("row999999").add("f", "q", "written second"))
        .unwrap();
    db.flush_table("t").unwrap();
    db.close().unwrap();
    let third_dir = tempfile::tempdir().unwrap();
    let db = open(config, third_dir.path());
    let got = db.table("t").unwrap().get(&Get::new("row999999")).unwrap();
    assert_eq!(&got.value(b"f", b"q").unwrap()[..], b"written second");
    db.close().unwrap();
}

#[test]
fn a_database_on_s3_reopens_from_a_new_data_directory() {
    let Some(moto) = moto::start_or_skip("a_database_on_s3_reopens_from_a_new_data_directory")
    else {
        return;
    };
    let config = moto_config(&moto, "database", "basalt/one");
    round_trip(&config);
}

#[test]
fn a_database_on_a_shared_directory_reopens_from_a_new_data_directory() {
    let shared = tempfile::tempdir().unwrap();
    round_trip(&file_config(shared.path()));
    // The objects are the data set's tree below the shared directory.
    assert!(shared.path().join("catalog").is_dir());
    assert!(shared.path().join("data/default/t").is_dir());
    assert!(!shared.path().join("data/default/gone").exists());
}
