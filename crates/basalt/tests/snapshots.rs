//! Snapshots (`docs/snapshots.md`): a snapshot references a table's store
//! files at a cut without copying them; clone and restore read back
//! exactly its cells; the files it references outlive compactions,
//! splits, merges, drops and the janitor, and go with its last reference.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use basalt::*;
use bytes::Bytes;
use common::{dump, TestDb};

fn presplit(t: &TestDb, name: &str, splits: &[&str], families: &[&str]) -> Table {
    let mut desc = TableDescriptor::new(name);
    for f in families {
        desc = desc.family(ColumnFamilyDescriptor::new(*f).max_versions(3));
    }
    let keys: Vec<Bytes> = splits
        .iter()
        .map(|k| Bytes::copy_from_slice(k.as_bytes()))
        .collect();
    t.db.create_table_with_splits(desc, &keys).unwrap();
    t.db.table(name).unwrap()
}

/// Every store file under the data directory, with its size.
fn store_files(root: &Path) -> Vec<(PathBuf, u64)> {
    common::store_files_below(&root.join("data"))
}

fn paths(files: &[(PathBuf, u64)]) -> BTreeSet<PathBuf> {
    files.iter().map(|(p, _)| p.clone()).collect()
}

fn fill(table: &Table, from: usize, to: usize, tag: &str) {
    for i in from..to {
        table
            .put(
                &Put::new(format!("row{i:05}"))
                    .add("f", "a", format!("{tag}-{i}"))
                    .add("g", "b", format!("{tag}-{i}")),
            )
            .unwrap();
    }
}

fn bounds(db: &Database, table: &str) -> Vec<(Bytes, Bytes)> {
    db.list_regions(table)
        .unwrap()
        .iter()
        .map(|r| (r.info.start_key.clone(), r.info.end_key.clone()))
        .collect()
}

#[test]
fn a_snapshot_of_a_million_cell_table_copies_no_store_file_bytes() {
    let t = TestDb::new();
    let table = presplit(&t, "big", &["row05000"], &["f"]);
    // 10,000 rows of 100 columns: a million cells.
    for i in 0..10_000 {
        let mut put = Put::new(format!("row{i:05}"));
        for c in 0..100 {
            put = put.add("f", format!("c{c:02}"), "v");
        }
        table.put(&put).unwrap();
    }
    t.db.flush_table("big").unwrap();
    let before = store_files(t.dir.path());
    let bytes: u64 = before.iter().map(|(_, n)| n).sum();
    assert!(bytes > 1_000_000, "the table holds {bytes} bytes of files");

    t.db.snapshot("big", "s1", false, 0).unwrap();
    assert_eq!(
        store_files(t.dir.path()),
        before,
        "no store file was written"
    );
    let listed = t.db.list_snapshots(None).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].file_bytes, bytes, "it references every byte");
    assert_eq!(listed[0].files, before.len());
    let manifest_bytes: u64 = std::fs::read_dir(t.dir.path().join("snapshots"))
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(
        manifest_bytes < 8 * 1024,
        "the snapshot is metadata: {manifest_bytes} bytes"
    );

    // A clone shares the files too.
    t.db.clone_snapshot("s1", "big_clone").unwrap();
    assert_eq!(
        store_files(t.dir.path()),
        before,
        "the clone copied nothing"
    );
    let clone = t.db.table("big_clone").unwrap();
    let row = clone.get(&Get::new("row09999")).unwrap();
    assert_eq!(row.cells.len(), 100);
}

#[test]
fn a_snapshot_under_concurrent_writes_is_a_consistent_cut() {
    let t = TestDb::new();
    let table = presplit(&t, "t", &["row00300", "row00600"], &["f", "g"]);
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (table, acked, stop) = (table.clone(), Arc::clone(&acked), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::SeqCst) && i < 900 {
                // Each row's two families carry the same value: a cut that
                // split a row would show one without the other.
                let n = i % 900;
                table
                    .put(
                        &Put::new(format!("row{n:05}"))
                            .add("f", "a", format!("v{i}"))
                            .add("g", "b", format!("v{i}")),
                    )
                    .unwrap();
                i += 1;
                acked.store(i, Ordering::SeqCst);
            }
        })
    };
    while acked.load(Ordering::SeqCst) < 100 {
        std::thread::yield_now();
    }
    let acknowledged_before = acked.load(Ordering::SeqCst);
    t.db.snapshot("t", "cut", false, 0).unwrap();
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();

    t.db.clone_snapshot("cut", "cut_clone").unwrap();
    let clone = t.db.table("cut_clone").unwrap();
    let mut present = 0u64;
    for r in clone.scan(&Scan::new()).unwrap() {
        let r = r.unwrap();
        let values: Vec<&Bytes> = r.cells.iter().map(|c| &c.value).collect();
        assert_eq!(values.len(), 2, "row {:?} is half in the snapshot", r.row);
        assert_eq!(values[0], values[1], "row {:?} mixes two writes", r.row);
        present += 1;
    }
    assert!(
        present >= acknowledged_before,
        "every write acknowledged before the snapshot began is in it ({present} < {acknowledged_before})"
    );
}

#[test]
fn clone_and_restore_read_back_exactly_the_snapshot_cells() {
    let t = TestDb::new();
    let table = presplit(&t, "t", &["row00100"], &["f", "g"]);
    fill(&table, 0, 200, "one");
    t.db.flush_table("t").unwrap();
    fill(&table, 50, 150, "two");
    table.delete(&Delete::new("row00007").family("f")).unwrap();
    // Some of it only in memstores: the default snapshot flushes first.
    let expected = dump(&table);
    let expected_bounds = bounds(&t.db, "t");
    t.db.snapshot("t", "snap", false, 0).unwrap();

    // The table moves on: more writes, deletes, a split, a major compaction.
    fill(&table, 150, 300, "three");
    table.delete(&Delete::new("row00120")).unwrap();
    t.db.split_table("t", Some(b"row00050")).unwrap();
    t.db.compact_table("t", true).unwrap();
    assert_ne!(dump(&table), expected);

    t.db.clone_snapshot("snap", "copy").unwrap();
    let copy = t.db.table("copy").unwrap();
    assert_eq!(
        dump(&copy),
        expected,
        "the clone reads the snapshot's cells"
    );
    assert_eq!(bounds(&t.db, "copy"), expected_bounds);
    // A clone is a table of its own: writes to it leave the source alone.
    copy.put(&Put::new("zzz").add("f", "a", "clone only"))
        .unwrap();
    assert!(table.get(&Get::new("zzz")).unwrap().cells.is_empty());

    assert!(matches!(
        t.db.restore_snapshot("snap").unwrap_err(),
        Error::TableEnabled(_)
    ));
    t.db.disable_table("t").unwrap();
    t.db.restore_snapshot("snap").unwrap();
    t.db.enable_table("t").unwrap();
    let table = t.db.table("t").unwrap();
    assert_eq!(
        dump(&table),
        expected,
        "the restored table reads the snapshot's cells"
    );
    assert_eq!(bounds(&t.db, "t"), expected_bounds, "and has its regions");

    // Both survive a restart, and compact their links into files of their own.
    let mut t = t;
    t.reopen();
    let (table, copy) = (t.db.table("t").unwrap(), t.db.table("copy").unwrap());
    assert_eq!(dump(&table), expected);
    t.db.compact_table("t", true).unwrap();
    t.db.compact_table("copy", true).unwrap();
    assert_eq!(dump(&table), expected);
    assert_eq!(dump(&copy).len(), expected.len() + 1);
}

#[test]
fn files_a_snapshot_references_survive_compaction_split_merge_drop_and_the_janitor() {
    let t = TestDb::new();
    let table = presplit(&t, "t", &["row00100"], &["f", "g"]);
    fill(&table, 0, 200, "one");
    t.db.flush_table("t").unwrap();
    fill(&table, 0, 200, "two");
    t.db.flush_table("t").unwrap();
    let expected = dump(&table);
    let referenced = paths(&store_files(t.dir.path()));
    t.db.snapshot("t", "keep", false, 0).unwrap();

    t.db.compact_table("t", true).unwrap();
    t.db.split_table("t", Some(b"row00050")).unwrap();
    t.db.compact_table("t", true).unwrap();
    let r = t.db.list_regions("t").unwrap();
    t.db.merge_regions(
        r[0].info.encoded_name().as_bytes(),
        r[1].info.encoded_name().as_bytes(),
    )
    .unwrap();
    t.db.compact_table("t", true).unwrap();
    let now = paths(&store_files(t.dir.path()));
    assert!(
        referenced.is_subset(&now),
        "compactions, a split, a merge and the janitor kept them"
    );
    t.db.disable_table("t").unwrap();
    t.db.drop_table("t").unwrap();
    let now = paths(&store_files(t.dir.path()));
    assert_eq!(now, referenced, "the drop deleted everything but them");

    // The dropped table comes back from its snapshot.
    t.db.clone_snapshot("keep", "t").unwrap();
    assert_eq!(dump(&t.db.table("t").unwrap()), expected);
    // Deleting the snapshot keeps what the clone links to.
    t.db.delete_snapshot("keep").unwrap();
    assert_eq!(dump(&t.db.table("t").unwrap()), expected);
    assert!(referenced.is_subset(&paths(&store_files(t.dir.path()))));
    // Once the clone compacted its links away, the janitor lets them go.
    t.db.compact_table("t", true).unwrap();
    let now = paths(&store_files(t.dir.path()));
    assert!(
        referenced.is_disjoint(&now),
        "released: {:?}",
        referenced.intersection(&now).collect::<Vec<_>>()
    );
    assert_eq!(dump(&t.db.table("t").unwrap()), expected);
}

#[test]
fn deleting_the_last_snapshot_frees_the_files_only_it_kept() {
    let t = TestDb::new();
    let table = presplit(&t, "t", &[], &["f", "g"]);
    fill(&table, 0, 100, "one");
    t.db.flush_table("t").unwrap();
    fill(&table, 0, 100, "two");
    t.db.flush_table("t").unwrap();
    let old = paths(&store_files(t.dir.path()));
    t.db.snapshot("t", "a", false, 0).unwrap();
    t.db.snapshot("t", "b", true, 0).unwrap();
    t.db.compact_table("t", true).unwrap();
    let live: BTreeSet<PathBuf> = paths(&store_files(t.dir.path()))
        .difference(&old)
        .cloned()
        .collect();
    assert!(!live.is_empty(), "the compaction wrote new files");
    assert!(old.is_subset(&paths(&store_files(t.dir.path()))));

    t.db.delete_snapshot("a").unwrap();
    assert!(
        old.is_subset(&paths(&store_files(t.dir.path()))),
        "b still keeps them"
    );
    t.db.delete_snapshot("b").unwrap();
    assert_eq!(
        paths(&store_files(t.dir.path())),
        live,
        "only the live files remain"
    );
    assert!(matches!(
        t.db.delete_snapshot("b").unwrap_err(),
        Error::SnapshotNotFound(_)
    ));
}

#[test]
fn snapshot_operations_refuse_what_hbase_refuses() {
    let t = TestDb::new();
    presplit(&t, "t", &[], &["f"]);
    t.db.snapshot("t", "s", false, 0).unwrap();
    assert!(matches!(
        t.db.snapshot("t", "s", false, 0).unwrap_err(),
        Error::SnapshotExists(_)
    ));
    assert!(matches!(
        t.db.snapshot("nope", "s2", false, 0).unwrap_err(),
        Error::SnapshotFailed(_)
    ));
    for bad in ["", ".s", "-s", "a b", "a:b"] {
        assert!(
            matches!(
                t.db.snapshot("t", bad, false, 0).unwrap_err(),
                Error::InvalidArgument(_)
            ),
            "{bad}"
        );
    }
    assert!(matches!(
        t.db.clone_snapshot("s", "t").unwrap_err(),
        Error::TableExists(_)
    ));
    assert!(matches!(
        t.db.clone_snapshot("missing", "u").unwrap_err(),
        Error::SnapshotNotFound(_)
    ));
    assert!(matches!(
        t.db.clone_snapshot("s", "nons:u").unwrap_err(),
        Error::NamespaceNotFound(_)
    ));
    assert!(matches!(
        t.db.restore_snapshot("s").unwrap_err(),
        Error::TableEnabled(_)
    ));
    assert!(
        t.db.list_snapshots(Some("(")).is_err(),
        "a bad pattern is an error"
    );
    assert!(!t.db.list_tables().iter().any(|n| n == "u"));
}

#[test]
fn list_snapshots_matches_the_whole_name_against_the_pattern() {
    let t = TestDb::new();
    presplit(&t, "t", &[], &["f"]);
    for name in ["daily-1", "daily-2", "weekly-1"] {
        t.db.snapshot("t", name, false, 0).unwrap();
        t.clock.advance(1);
    }
    let names = |p: Option<&str>| -> Vec<String> {
        t.db.list_snapshots(p)
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect()
    };
    assert_eq!(names(None), ["daily-1", "daily-2", "weekly-1"]);
    assert_eq!(names(Some("daily-.*")), ["daily-1", "daily-2"]);
    assert_eq!(
        names(Some("daily")),
        Vec::<String>::new(),
        "the whole name must match"
    );
    let info = &t.db.list_snapshots(Some("weekly-1")).unwrap()[0];
    assert_eq!(info.table, "t");
    assert_eq!(info.kind, "FLUSH");
}

#[test]
fn an_expired_snapshot_is_deleted_while_cleanup_is_on_and_refused_while_it_is_off() {
    let t = TestDb::new();
    presplit(&t, "t", &[], &["f"]);
    assert!(t.db.snapshot_cleanup_switch(None).unwrap(), "on by default");
    t.db.snapshot("t", "short", false, 10).unwrap();
    t.db.snapshot("t", "forever", false, 0).unwrap();
    assert!(
        t.db.snapshot_cleanup_switch(Some(false)).unwrap(),
        "it was on"
    );
    t.clock.advance(11_000);
    assert_eq!(
        t.db.list_snapshots(None).unwrap().len(),
        2,
        "kept while off"
    );
    assert!(matches!(
        t.db.clone_snapshot("short", "u").unwrap_err(),
        Error::SnapshotExpired(_)
    ));
    assert!(!t.db.snapshot_cleanup_switch(Some(true)).unwrap());
    let left: Vec<String> =
        t.db.list_snapshots(None)
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect();
    assert_eq!(left, ["forever"]);
}

#[test]
fn a_skip_flush_snapshot_holds_only_what_is_in_files() {
    let t = TestDb::new();
    let table = presplit(&t, "t", &[], &["f", "g"]);
    fill(&table, 0, 10, "flushed");
    t.db.flush_table("t").unwrap();
    fill(&table, 10, 20, "memstore");
    t.db.snapshot("t", "skip", true, 0).unwrap();
    t.db.snapshot("t", "flush", false, 0).unwrap();
    let kinds: Vec<String> =
        t.db.list_snapshots(None)
            .unwrap()
            .into_iter()
            .map(|s| s.kind)
            .collect();
    assert_eq!(kinds, ["SKIPFLUSH", "FLUSH"]);
    t.db.clone_snapshot("skip", "a").unwrap();
    t.db.clone_snapshot("flush", "b").unwrap();
    assert_eq!(dump(&t.db.table("a").unwrap()).len(), 20);
    assert_eq!(dump(&t.db.table("b").unwrap()).len(), 40);
}

#[test]
fn snapshots_survive_a_restart_and_a_half_taken_one_is_removed() {
    let mut t = TestDb::new();
    let table = presplit(&t, "t", &[], &["f", "g"]);
    fill(&table, 0, 50, "x");
    let expected = dump(&table);
    t.db.disable_table("t").unwrap();
    t.db.snapshot("t", "off", false, 0).unwrap();
    assert_eq!(t.db.list_snapshots(None).unwrap()[0].kind, "DISABLED");
    // A crash mid-snapshot leaves a marker and no manifest.
    let marker = basalt::layout::pending_snapshot_path(t.dir.path(), u64::MAX / 2, "half");
    std::fs::write(&marker, br#"{"table":"t"}"#).unwrap();
    t.reopen();
    assert!(!marker.exists(), "the next start removes the marker");
    let names: Vec<String> =
        t.db.list_snapshots(None)
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect();
    assert_eq!(names, ["off"]);
    t.db.clone_snapshot("off", "back").unwrap();
    assert_eq!(dump(&t.db.table("back").unwrap()).len(), expected.len());
}

#[test]
fn a_snapshot_a_crash_left_half_taken_is_completed_by_the_next_master() {
    let mut t = TestDb::new();
    let table = presplit(&t, "t", &["row00025"], &["f", "g"]);
    fill(&table, 0, 50, "x");
    let expected = dump(&table);
    // What a master that died after publishing the marker leaves: the
    // request, and no manifest.
    let marker = basalt::layout::pending_snapshot_path(t.dir.path(), 1_000_001, "half");
    std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
    std::fs::write(
        &marker,
        br#"{"table":"t","request":{"skip_flush":false,"ttl_secs":0,"nonce":{"group":7,"nonce":9},"requested_ms":1000000}}"#,
    )
    .unwrap();
    t.reopen();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while t.db.list_snapshots(None).unwrap().is_empty() {
        assert!(std::time::Instant::now() < deadline, "never completed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The manifest is the commit point and is published first; the marker
    // is removed right after it, so a reader can see the snapshot a moment
    // before the marker has gone.
    while marker.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the marker goes once it is taken"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Writes acknowledged before the request are in it (flushed at the cut).
    t.db.clone_snapshot("half", "back").unwrap();
    assert_eq!(dump(&t.db.table("back").unwrap()), expected);
    // The client that sent it sends it again (its master died with the
    // answer): the same nonce is answered as done; another is refused.
    let nonce = |n| Some(Nonce { group: 7, nonce: n });
    t.db.snapshot_once("t", "half", false, 0, nonce(9)).unwrap();
    for other in [nonce(10), None] {
        let err =
            t.db.snapshot_once("t", "half", false, 0, other)
                .unwrap_err();
        assert!(matches!(err, Error::SnapshotExists(_)), "{err}");
    }
}

#[test]
fn a_snapshot_sent_again_with_its_nonce_is_answered_as_the_one_taken() {
    let t = TestDb::new();
    let table = presplit(&t, "t", &[], &["f"]);
    fill_one(&table, "a");
    let nonce = Some(Nonce {
        group: 1,
        nonce: 42,
    });
    t.db.snapshot_once("t", "s", false, 0, nonce).unwrap();
    fill_one(&table, "b");
    t.db.snapshot_once("t", "s", false, 0, nonce).unwrap();
    assert_eq!(t.db.list_snapshots(None).unwrap().len(), 1);
    t.db.clone_snapshot("s", "c").unwrap();
    assert_eq!(
        dump(&t.db.table("c").unwrap()).len(),
        1,
        "the first request's cut, not a second one"
    );
    let err = t.db.snapshot("t", "s", false, 0).unwrap_err();
    assert!(matches!(err, Error::SnapshotExists(_)), "{err}");
}

fn fill_one(table: &Table, row: &str) {
    table
        .put(&Put::new(row.to_string()).add("f", "a", row.to_string()))
        .unwrap();
}

#[test]
fn basalt_check_accepts_what_snapshots_keep_and_reports_a_referenced_file_gone_missing() {
    let t = TestDb::new();
    let table = presplit(&t, "t", &["row00050"], &["f", "g"]);
    fill(&table, 0, 100, "x");
    t.db.snapshot("t", "s", false, 0).unwrap();
    fill(&table, 0, 100, "y");
    t.db.compact_table("t", true).unwrap();
    t.db.clone_snapshot("s", "c").unwrap();
    t.db.disable_table("t").unwrap();
    t.db.drop_table("t").unwrap();
    let referenced: Vec<PathBuf> = paths(&store_files(t.dir.path())).into_iter().collect();
    let (dir, _clock) = t.crash();
    let report = basalt::check::check(dir.path()).unwrap();
    assert!(report.is_healthy(), "{:?}", report.problems);
    let listing: Vec<_> = std::fs::read_dir(dir.path().join("snapshots"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        report.snapshots, 2,
        "the snapshot and the clone's hold: {listing:?}"
    );

    let gone = referenced
        .iter()
        .find(|p| p.to_string_lossy().contains("/default/t/"))
        .unwrap();
    std::fs::remove_file(gone).unwrap();
    let report = basalt::check::check(dir.path()).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| &p.file == gone && p.message.contains("missing")),
        "{:?}",
        report.problems
    );
}
