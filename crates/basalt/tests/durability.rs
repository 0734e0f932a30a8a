//! What survives a restart: every durability level through a clean close,
//! and the WAL's handling of damaged files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;

use basalt::*;
use common::{cells, rows, TestDb};

#[test]
fn logged_writes_survive_reopen_with_their_exact_cells() {
    let mut t = TestDb::new();
    let table = t.table(
        "t",
        vec![
            ColumnFamilyDescriptor::new("f").max_versions(3),
            ColumnFamilyDescriptor::new("g"),
        ],
    );
    for (i, durability) in [
        Durability::SyncWal,
        Durability::FsyncWal,
        Durability::AsyncWal,
    ]
    .into_iter()
    .enumerate()
    {
        let row = format!("r{i}");
        table
            .put(
                &Put::new(row.clone())
                    .add_at("f", "q", 1, "old")
                    .durability(durability),
            )
            .unwrap();
        table
            .put(
                &Put::new(row.clone())
                    .add_at("f", "q", 2, "new")
                    .add("g", "x", "y")
                    .durability(durability),
            )
            .unwrap();
        table
            .delete(
                &Delete::new(row)
                    .columns_at("g", "x", 0)
                    .durability(durability),
            )
            .unwrap();
    }
    table.increment_column("counter", "f", "n", 41).unwrap();
    table.increment_column("counter", "f", "n", 1).unwrap();
    let before: Vec<Vec<String>> = table
        .scan(&Scan::new().max_versions(5).raw(true))
        .unwrap()
        .map(|r| cells(&r.unwrap()))
        .collect();
    t.reopen();
    let table = t.db.table("t").unwrap();
    let after: Vec<Vec<String>> = table
        .scan(&Scan::new().max_versions(5).raw(true))
        .unwrap()
        .map(|r| cells(&r.unwrap()))
        .collect();
    assert_eq!(before, after);
    assert_eq!(table.increment_column("counter", "f", "n", 0).unwrap(), 42);
}

#[test]
fn later_writes_keep_winning_after_reopen() {
    // Sequence ids continue above the replayed ones, so a write after the
    // restart still beats one before it at the same timestamp.
    let mut t = TestDb::new();
    let table = t.table("t", vec![ColumnFamilyDescriptor::new("f")]);
    table
        .put(&Put::new("r").add_at("f", "q", 5, "before"))
        .unwrap();
    t.reopen();
    let table = t.db.table("t").unwrap();
    table
        .put(&Put::new("r").add_at("f", "q", 5, "after"))
        .unwrap();
    assert_eq!(cells(&table.get(&Get::new("r")).unwrap()), ["f:q=after@5"]);
    t.reopen();
    assert_eq!(
        cells(&t.db.table("t").unwrap().get(&Get::new("r")).unwrap()),
        ["f:q=after@5"]
    );
}

#[test]
fn skip_wal_writes_survive_a_clean_close_but_not_a_crash() {
    let mut t = TestDb::new();
    let table = t.table("t", vec![ColumnFamilyDescriptor::new("f")]);
    table
        .put(
            &Put::new("closed")
                .add("f", "q", "v")
                .durability(Durability::SkipWal),
        )
        .unwrap();
    t.reopen();
    let table = t.db.table("t").unwrap();
    assert!(
        !table.get(&Get::new("closed")).unwrap().is_empty(),
        "close flushes memstores"
    );
    table.put(&Put::new("logged").add("f", "q", "v")).unwrap();
    table
        .put(
            &Put::new("unlogged")
                .add("f", "q", "v")
                .durability(Durability::SkipWal),
        )
        .unwrap();
    assert!(!table.get(&Get::new("unlogged")).unwrap().is_empty());
    let (dir, clock) = t.crash();
    let t = TestDb::open_at(dir, clock);
    let table = t.db.table("t").unwrap();
    assert!(!table.get(&Get::new("logged")).unwrap().is_empty());
    assert!(
        table.get(&Get::new("unlogged")).unwrap().is_empty(),
        "SKIP_WAL is lost in a crash before a flush"
    );
}

fn wal_segments(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = fs::read_dir(dir.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    files.sort();
    files
}

#[test]
fn torn_tail_is_dropped_and_reported() {
    let t = TestDb::new();
    let table = t.table("t", vec![ColumnFamilyDescriptor::new("f")]);
    for i in 0..10 {
        table
            .put(&Put::new(format!("r{i}")).add("f", "q", "v"))
            .unwrap();
    }
    let (dir, clock) = t.crash();
    let last = wal_segments(dir.path()).pop().unwrap();
    let len = fs::metadata(&last).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&last)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let mut t = TestDb::open_at(dir, clock);
    let report = t.db.recovery_report().clone();
    assert!(report.torn_tail.is_some(), "{report:?}");
    let rows = t.db.table("t").unwrap().scan(&Scan::new()).unwrap().count();
    assert_eq!(rows, 9, "only the cut record is lost");
    t.reopen();
    assert!(
        t.db.recovery_report().torn_tail.is_none(),
        "the tail was truncated away"
    );
}

#[test]
fn corruption_in_the_middle_is_an_error_naming_file_and_offset() {
    let t = TestDb::new();
    let table = t.table("t", vec![ColumnFamilyDescriptor::new("f")]);
    for i in 0..10 {
        table
            .put(&Put::new(format!("r{i}")).add("f", "q", "some value"))
            .unwrap();
    }
    let (dir, _clock) = t.crash();
    let last = wal_segments(dir.path()).pop().unwrap();
    let mut bytes = fs::read(&last).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    fs::write(&last, bytes).unwrap();
    let err = Database::open(dir.path()).unwrap_err();
    match &err {
        Error::Corruption { path, offset, .. } => {
            assert_eq!(path, &last);
            assert!(*offset <= middle as u64, "{err}");
        }
        other => panic!("expected corruption, got {other}"),
    }
}

/// Issue 12, defect 2: a log segment whose records are all flushed is not
/// needed for recovery and must not block it. After a flush, an idle
/// database's active segment (all flushed) is rolled and retired, so a
/// crash leaves no log with records: damage to whatever the log directory
/// holds cannot refuse the start.
#[test]
fn damage_to_the_log_of_a_flushed_idle_database_cannot_block_a_start_after_a_crash() {
    let t = TestDb::new();
    let table = t.table("t", vec![ColumnFamilyDescriptor::new("f")]);
    for i in 0..200 {
        table
            .put(&Put::new(format!("row{i:03}")).add("f", "q", format!("v{i}")))
            .unwrap();
    }
    t.db.flush_table("t").unwrap();
    let (dir, clock) = t.crash();

    // Flip a byte in the middle of every segment file: before the fix, the
    // active segment still held all 200 (flushed) records, and the damage
    // refused the start; now only a fresh segment without records is left.
    let wal = basalt::layout::wal_dir(dir.path());
    let mut records_left = 0;
    for entry in std::fs::read_dir(&wal).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        if bytes.len() > 64 {
            records_left += 1;
        }
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x5a;
        std::fs::write(&path, bytes).unwrap();
    }
    let t = TestDb::open_at(dir, clock);
    let table = t.db.table("t").unwrap();
    assert_eq!(rows(table.scan(&Scan::new()).unwrap()).len(), 200);
    assert_eq!(
        records_left, 0,
        "a flushed idle database keeps no log records"
    );
}
