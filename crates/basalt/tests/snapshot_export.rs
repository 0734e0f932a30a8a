//! Exporting a snapshot to another data set (`basalt::export`,
//! docs/snapshots.md "Export"): the other Basalt lists, clones and
//! restores it with exactly the snapshot's cells; copies are checked on
//! arrival; a stopped export resumes without copying a verified file
//! again; the source's hold keeps the files if the snapshot goes meanwhile
//! and lapses with its lease.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use basalt::export::{export_snapshot, ExportOptions, ExportProgress, ExportSide};
use basalt::*;
use basalt_engine::fs::{FaultOp, FaultyFileStore, FileStore, FileWriter, LocalFileStore};
use bytes::Bytes;
use common::{dump, TestDb};

fn side(root: &Path) -> ExportSide {
    ExportSide {
        files: Arc::new(LocalFileStore::new()),
        root: root.to_path_buf(),
        description: root.display().to_string(),
    }
}

fn quiet(_: ExportProgress) {}

/// Runs the master's catalog janitor (HBase's `runCatalogJanitor`).
fn janitor(db: &Database) {
    db.master_call(basalt::cluster::MasterCall::CatalogJanitor)
        .unwrap();
}

/// A table of two families over three regions, flushed twice, then split
/// so that daughters read their parent's files through links.
fn source_table(t: &TestDb) -> Vec<String> {
    let desc = TableDescriptor::new("t")
        .family(ColumnFamilyDescriptor::new("f").max_versions(3))
        .family(ColumnFamilyDescriptor::new("g"));
    t.db.create_table_with_splits(desc, &[Bytes::from("row100"), Bytes::from("row200")])
        .unwrap();
    let table = t.db.table("t").unwrap();
    for round in ["one", "two"] {
        for i in 0..300 {
            let row = format!("row{i:03}");
            table
                .put(
                    &Put::new(row)
                        .add("f", "a", format!("{round}-{i}"))
                        .add("g", "b", round),
                )
                .unwrap();
        }
        t.db.flush_table("t").unwrap();
    }
    t.db.split_table("t", Some(b"row050")).unwrap();
    dump(&table)
}

fn sst_files(root: &Path) -> Vec<PathBuf> {
    common::store_files_below(root)
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

#[test]
fn an_exported_snapshot_is_cloned_and_restored_by_another_basalt_with_exactly_its_cells() {
    let source = TestDb::new();
    let expected = source_table(&source);
    source.db.snapshot("t", "s1", false, 0).unwrap();
    // Writes after the cut are not in it.
    source
        .db
        .table("t")
        .unwrap()
        .put(&Put::new("row999").add("f", "a", "late"))
        .unwrap();

    let mut dest = TestDb::new();
    // The destination already serves a table of the same name, whose
    // region and file ids may collide with the source's.
    dest.table("t", vec![ColumnFamilyDescriptor::new("f")])
        .put(&Put::new("other").add("f", "a", "theirs"))
        .unwrap();
    dest.db.flush_table("t").unwrap();

    let report = export_snapshot(
        "s1",
        &side(source.dir.path()),
        &side(dest.dir.path()),
        &ExportOptions::default(),
        &quiet,
    )
    .unwrap();
    assert_eq!(report.copied, report.files);
    assert_eq!((report.skipped, report.recopied), (0, 0));
    assert!(report.export_table.starts_with("-exports:s1."));

    let listed: Vec<String> = dest
        .db
        .list_snapshots(None)
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(listed, vec!["s1".to_string()]);
    dest.db.clone_snapshot("s1", "copy").unwrap();
    assert_eq!(dump(&dest.db.table("copy").unwrap()), expected);
    // Restore into the destination's own table of that name.
    dest.db.disable_table("t").unwrap();
    dest.db.restore_snapshot("s1").unwrap();
    dest.db.enable_table("t").unwrap();
    assert_eq!(dump(&dest.db.table("t").unwrap()), expected);
    // Nothing of the export's staging is left, and the destination checks.
    assert!(!dest.dir.path().join("exports/s1").exists());
    dest.db.close().unwrap();
    let check = basalt::check::check(dest.dir.path()).unwrap();
    assert!(check.is_healthy(), "{:?}", check.problems);
    dest.db = common::open(dest.dir.path(), &dest.clock);
    // The export's hold at the source is gone: the snapshot keeps the files.
    let holds: Vec<_> = std::fs::read_dir(source.dir.path().join("snapshots"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "hold"))
        .collect();
    assert!(holds.is_empty(), "{holds:?}");

    // Deleting everything that reads the export frees its files.
    for table in ["copy", "t"] {
        dest.db.disable_table(table).unwrap();
        dest.db.drop_table(table).unwrap();
    }
    dest.db.delete_snapshot("s1").unwrap();
    janitor(&dest.db);
    assert!(
        sst_files(&dest.dir.path().join("data/-exports")).is_empty(),
        "{:?}",
        sst_files(&dest.dir.path().join("data/-exports"))
    );
}

#[test]
fn an_export_refuses_a_name_the_destination_already_has() {
    let source = TestDb::new();
    source_table(&source);
    source.db.snapshot("t", "s1", false, 0).unwrap();
    let dest = TestDb::new();
    dest.table("u", vec![ColumnFamilyDescriptor::new("f")]);
    dest.db.snapshot("u", "s1", false, 0).unwrap();
    let err = export_snapshot(
        "s1",
        &side(source.dir.path()),
        &side(dest.dir.path()),
        &ExportOptions::default(),
        &quiet,
    )
    .unwrap_err();
    assert!(matches!(err, Error::SnapshotExists(_)), "{err}");
    assert!(sst_files(&dest.dir.path().join("data/-exports")).is_empty());
    let err = export_snapshot(
        "nope",
        &side(source.dir.path()),
        &side(dest.dir.path()),
        &ExportOptions::default(),
        &quiet,
    )
    .unwrap_err();
    assert!(matches!(err, Error::SnapshotNotFound(_)), "{err}");
}

#[test]
fn an_export_that_stopped_resumes_without_copying_a_verified_file_again() {
    let source = TestDb::new();
    let expected = source_table(&source);
    source.db.snapshot("t", "s1", false, 0).unwrap();
    let dest = TestDb::new();
    let faulty = FaultyFileStore::new(Arc::new(LocalFileStore::new()));
    // The fourth file published at the destination (plan, marker, then
    // copies and their done markers) fails: the export stops midway.
    faulty.fail_nth(FaultOp::Finish, 6);
    let stopped = ExportSide {
        files: Arc::new(faulty),
        ..side(dest.dir.path())
    };
    let options = ExportOptions {
        parallel: 1,
        ..ExportOptions::default()
    };
    export_snapshot("s1", &side(source.dir.path()), &stopped, &options, &quiet).unwrap_err();
    assert!(
        dest.db.list_snapshots(None).unwrap().is_empty(),
        "not committed"
    );

    let report = export_snapshot(
        "s1",
        &side(source.dir.path()),
        &side(dest.dir.path()),
        &options,
        &quiet,
    )
    .unwrap();
    assert!(report.skipped >= 1, "{report:?}");
    assert_eq!(report.copied + report.skipped, report.files, "{report:?}");
    dest.db.clone_snapshot("s1", "t").unwrap();
    assert_eq!(dump(&dest.db.table("t").unwrap()), expected);
}

/// A destination whose first store-file copies arrive with one byte
/// flipped (a bad disk, a bad network card).
#[derive(Debug)]
struct Flipping {
    inner: LocalFileStore,
    flips_left: Arc<AtomicU64>,
}

#[derive(Debug)]
struct FlippingWriter {
    inner: Box<dyn FileWriter>,
    flip: bool,
}

impl FileWriter for FlippingWriter {
    fn write_all(&mut self, buf: &[u8]) -> basalt::Result<()> {
        if std::mem::take(&mut self.flip) && !buf.is_empty() {
            let mut bad = buf.to_vec();
            bad[buf.len() / 2] ^= 0x40;
            return self.inner.write_all(&bad);
        }
        self.inner.write_all(buf)
    }
    fn bytes_written(&self) -> u64 {
        self.inner.bytes_written()
    }
    fn finish(self: Box<Self>) -> basalt::Result<u64> {
        self.inner.finish()
    }
}

impl FileStore for Flipping {
    fn create(&self, path: &Path) -> basalt::Result<Box<dyn FileWriter>> {
        let flip = path.extension().is_some_and(|x| x == "sst")
            && self
                .flips_left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
        Ok(Box::new(FlippingWriter {
            inner: self.inner.create(path)?,
            flip,
        }))
    }
    fn read_range(&self, path: &Path, offset: u64, len: usize) -> basalt::Result<Bytes> {
        self.inner.read_range(path, offset, len)
    }
    fn size(&self, path: &Path) -> basalt::Result<u64> {
        self.inner.size(path)
    }
    fn exists(&self, path: &Path) -> basalt::Result<bool> {
        self.inner.exists(path)
    }
    fn list(&self, dir: &Path) -> basalt::Result<Vec<PathBuf>> {
        self.inner.list(dir)
    }
    fn delete(&self, path: &Path) -> basalt::Result<()> {
        self.inner.delete(path)
    }
    fn list_dirs(&self, dir: &Path) -> basalt::Result<Vec<PathBuf>> {
        self.inner.list_dirs(dir)
    }
    fn list_prefix(&self, dir: &Path) -> basalt::Result<Vec<PathBuf>> {
        self.inner.list_prefix(dir)
    }
    fn delete_prefix(&self, dir: &Path) -> basalt::Result<()> {
        self.inner.delete_prefix(dir)
    }
}

#[test]
fn a_copy_corrupted_on_arrival_is_refused_and_copied_again() {
    let source = TestDb::new();
    let expected = source_table(&source);
    source.db.snapshot("t", "s1", false, 0).unwrap();
    let dest = TestDb::new();
    let flips_left = Arc::new(AtomicU64::new(2));
    let flipping = ExportSide {
        files: Arc::new(Flipping {
            inner: LocalFileStore::new(),
            flips_left: Arc::clone(&flips_left),
        }),
        ..side(dest.dir.path())
    };
    let options = ExportOptions {
        parallel: 1,
        ..ExportOptions::default()
    };
    let report =
        export_snapshot("s1", &side(source.dir.path()), &flipping, &options, &quiet).unwrap();
    assert_eq!(flips_left.load(Ordering::SeqCst), 0);
    assert_eq!(report.recopied, 2, "{report:?}");
    dest.db.clone_snapshot("s1", "t").unwrap();
    assert_eq!(dump(&dest.db.table("t").unwrap()), expected);

    // A destination that corrupts every copy stops the export, naming the file.
    let source_files = side(source.dir.path());
    let dest2 = TestDb::new();
    let always = ExportSide {
        files: Arc::new(Flipping {
            inner: LocalFileStore::new(),
            flips_left: Arc::new(AtomicU64::new(u64::MAX)),
        }),
        ..side(dest2.dir.path())
    };
    let err = export_snapshot("s1", &source_files, &always, &options, &quiet).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("did not arrive intact after 3 attempts"),
        "{text}"
    );
    assert!(text.contains(".sst"), "{text}");
    assert!(dest2.db.list_snapshots(None).unwrap().is_empty());
}

#[test]
fn the_source_hold_keeps_the_files_of_a_snapshot_deleted_mid_export_and_lapses_with_its_lease() {
    let source = TestDb::new();
    let expected = source_table(&source);
    source.db.snapshot("t", "s1", false, 0).unwrap();
    // The table's own files go: only snapshot s1 (and then the hold) keep
    // what it references.
    source.db.disable_table("t").unwrap();
    source.db.drop_table("t").unwrap();
    let referenced = sst_files(source.dir.path());
    assert!(!referenced.is_empty());

    let dest = TestDb::new();
    let deleted = AtomicBool::new(false);
    let delete_source_snapshot = |_: ExportProgress| {
        if !deleted.swap(true, Ordering::SeqCst) {
            source.db.delete_snapshot("s1").unwrap();
        }
    };
    let options = ExportOptions {
        parallel: 1,
        lease: Duration::from_secs(60),
        ..ExportOptions::default()
    };
    export_snapshot(
        "s1",
        &side(source.dir.path()),
        &side(dest.dir.path()),
        &options,
        &delete_source_snapshot,
    )
    .unwrap();
    assert!(deleted.load(Ordering::SeqCst));
    dest.db.clone_snapshot("s1", "t").unwrap();
    assert_eq!(dump(&dest.db.table("t").unwrap()), expected);

    // The hold stays until its lease passes, then the janitor releases it
    // and the files only it kept.
    assert_eq!(sst_files(source.dir.path()), referenced);
    janitor(&source.db);
    assert_eq!(
        sst_files(source.dir.path()),
        referenced,
        "the lease has not passed"
    );
    let wall_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    source.clock.set(wall_ms + 61_000);
    janitor(&source.db);
    assert!(
        sst_files(source.dir.path()).is_empty(),
        "{:?}",
        sst_files(source.dir.path())
    );
}
