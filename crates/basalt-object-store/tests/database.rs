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

/// A database whose write-ahead log is on the storage too, as `basalt
/// serve --storage` keeps it (`open` keeps it in the data directory).
fn open_with_log(config: &StorageConfig, options: Options) -> Database {
    let storage = open_storage(config, &options.data_dir).unwrap().unwrap();
    Database::builder(options)
        .file_store(storage.file_store())
        .wal_in_file_store(storage.wal_options())
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

#[test]
fn a_database_keeps_serving_cached_reads_and_logged_writes_while_s3_is_down() {
    let Some(mut moto) = moto::start_or_skip(
        "a_database_keeps_serving_cached_reads_and_logged_writes_while_s3_is_down",
    ) else {
        return;
    };
    let mut config = moto_config(&moto, "down-db", "db");
    config.request_timeout_ms = 2_000;
    config.part_bytes = 64 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let storage = open_storage(&config, dir.path()).unwrap().unwrap();
    let mut o = options(dir.path());
    // A tiny block cache: reads come from the disk cache.
    o.block_cache_bytes = 4096;
    let db = Database::builder(o)
        .file_store(storage.file_store())
        .open()
        .unwrap();
    db.create_table(
        TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f").block_size(1024)),
    )
    .unwrap();
    let table = db.table("t").unwrap();
    for i in 0..500 {
        table
            .put(&Put::new(format!("row{i:04}")).add("f", "q", value(i, 0)))
            .unwrap();
    }
    db.flush_table("t").unwrap();
    let scan = |table: &basalt::Table| -> Vec<basalt::RowResult> {
        table
            .scan(&Scan::new())
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    };
    let before = scan(&table);
    assert_eq!(before.len(), 500);
    let warm = storage.cache_stats();

    moto.stop();
    // Reads of what was read before: from the disk cache, no request.
    let after = scan(&table);
    assert_eq!(after.len(), 500);
    for (a, b) in after.iter().zip(&before) {
        assert_eq!(a.row, b.row);
        assert_eq!(a.value(b"f", b"q"), b.value(b"f", b"q"));
    }
    let stats = storage.cache_stats();
    assert_eq!(stats.misses, warm.misses);
    assert!(stats.hits > warm.hits, "the disk cache served the reads");
    // Writes go to the local log and the memstore, and are read back.
    table
        .put(&Put::new("new").add("f", "q", "while down"))
        .unwrap();
    let got = table.get(&Get::new("new")).unwrap();
    assert_eq!(&got.value(b"f", b"q").unwrap()[..], b"while down");
    // A flush cannot publish its file: a clear error, not a hang.
    let err = db.flush_table("t").unwrap_err().to_string();
    assert!(err.contains("object storage s3://"), "{err}");
    // And the data is still all there.
    assert_eq!(scan(&table).len(), 501);
    db.close().unwrap();
}

/// The files of each log below `wal/` of the shared directory, by log.
fn log_files(shared: &Path) -> Vec<Vec<String>> {
    let mut logs: Vec<_> = std::fs::read_dir(shared.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    logs.sort();
    logs.iter()
        .map(|log| {
            let mut names: Vec<String> = std::fs::read_dir(log)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        })
        .collect()
}

#[test]
fn a_log_on_a_shared_directory_appends_its_batches_to_segments_that_a_new_owner_seals_and_replays()
{
    let shared = tempfile::tempdir().unwrap();
    let config = file_config(shared.path());
    let open_logged = |dir: &Path| {
        let mut o = options(dir);
        // Small segments, so that the log starts new ones as it goes.
        o.wal_segment_bytes = 16 * 1024;
        open_with_log(&config, o)
    };
    let first_dir = tempfile::tempdir().unwrap();
    let db = open_logged(first_dir.path());
    db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    let table = db.table("t").unwrap();
    for i in 0..300 {
        table
            .put(&Put::new(format!("row{i:04}")).add("f", "q", value(i, 0)))
            .unwrap();
    }
    // Each put was its own batch, 300 of them: a claim and a few segments
    // of 16 KiB, not 300 files.
    let logs = log_files(shared.path());
    assert_eq!(logs.len(), 1);
    assert!(
        (3..=12).contains(&logs[0].len()),
        "a claim and a few segments: {:?}",
        logs[0]
    );
    // A crash: the log is never closed.
    drop(table);
    std::mem::forget(db);

    let second_dir = tempfile::tempdir().unwrap();
    let db = open_logged(second_dir.path());
    let table = db.table("t").unwrap();
    for i in 0..300 {
        let got = table.get(&Get::new(format!("row{i:04}"))).unwrap();
        assert_eq!(
            &got.value(b"f", b"q").unwrap()[..],
            value(i, 0).as_bytes(),
            "row {i}"
        );
    }
    // The first log ends with the new owner's fence and its seal.
    let logs = log_files(shared.path());
    let first = &logs[0];
    let fence = first.len() - 2;
    let read = |name: &str| {
        std::fs::read(
            shared
                .path()
                .join("wal")
                .join(log_name(shared.path(), 0))
                .join(name),
        )
        .unwrap()
    };
    // Kinds: byte 12 of an object's header (docs/wal-format.md).
    assert_eq!(read(&first[fence])[12], 2, "a fence");
    assert_eq!(read(&first[fence + 1])[12], 6, "its seal");
    db.close().unwrap();
}

/// The name of the `index`-th log directory below `wal/`.
fn log_name(shared: &Path, index: usize) -> String {
    let mut logs: Vec<String> = std::fs::read_dir(shared.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    logs.sort();
    logs[index].clone()
}

/// The log with several objects in flight on real S3 semantics (moto's
/// conditional `PUT`s): writers on eight threads, then the process
/// "crashes" (never closed, nothing flushed) and a new owner on a new data
/// directory fences its log and replays it: every acknowledged row is
/// there.
#[test]
fn with_objects_in_flight_every_acknowledged_write_on_s3_survives_a_crash() {
    let Some(moto) = moto::start_or_skip(
        "with_objects_in_flight_every_acknowledged_write_on_s3_survives_a_crash",
    ) else {
        return;
    };
    let config = StorageConfig {
        wal_objects_in_flight: 4,
        ..moto_config(&moto, "in-flight", "basalt/in-flight")
    };
    let probe_dir = tempfile::tempdir().unwrap();
    let storage = open_storage(&config, probe_dir.path()).unwrap().unwrap();
    assert_eq!(storage.wal_options().objects_in_flight, 4);
    let first_dir = tempfile::tempdir().unwrap();
    let db = open_with_log(&config, options(first_dir.path()));
    db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    std::thread::scope(|scope| {
        for writer in 0..8 {
            let table = db.table("t").unwrap();
            scope.spawn(move || {
                for i in 0..100 {
                    table
                        .put(&Put::new(format!("w{writer}-{i:03}")).add("f", "q", value(i, writer)))
                        .unwrap();
                }
            });
        }
    });
    // A crash: no close, no flush; its threads are simply abandoned.
    std::mem::forget(db);
    let second_dir = tempfile::tempdir().unwrap();
    let db = open_with_log(&config, options(second_dir.path()));
    let table = db.table("t").unwrap();
    let rows = table.scan(&Scan::new()).unwrap().count();
    assert_eq!(rows, 800);
    for writer in 0..8 {
        for i in [0usize, 57, 99] {
            let got = table.get(&Get::new(format!("w{writer}-{i:03}"))).unwrap();
            assert_eq!(
                got.value(b"f", b"q").map(|v| v.to_vec()),
                Some(value(i, writer).into_bytes())
            );
        }
    }
    db.close().unwrap();
}
