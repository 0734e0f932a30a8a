//! One damaged file takes one region down, not the database: the region
//! is FAILED_OPEN (as in HBase) with the file named, its rows answer with
//! an error naming the file, and every other region serves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use basalt::admin::{AdminReply, AdminRequest};
use basalt::*;

/// A table split at "m" with rows on both sides, flushed and cleanly
/// closed. Returns the store file of the region holding rows from "m".
fn two_region_table(dir: &Path) -> PathBuf {
    let db = Database::open(dir).unwrap();
    db.create_table_with_splits(
        TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f").block_size(1024)),
        &["m".into()],
    )
    .unwrap();
    let table = db.table("t").unwrap();
    for prefix in ["a", "x"] {
        for i in 0..300 {
            table
                .put(&Put::new(format!("{prefix}{i:04}")).add("f", "q", format!("value {i}")))
                .unwrap();
        }
    }
    db.flush_table("t").unwrap();
    let second = db.list_regions("t").unwrap()[1].info.id;
    db.close().unwrap();
    let store = layout::store_dir(&layout::region_dir(dir, "t", second), "f");
    let files: Vec<PathBuf> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| layout::is_store_file(p))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}

fn assert_names(error: &Error, file: &Path) {
    match error {
        Error::Corruption { path, .. } => assert_eq!(path, file, "{error}"),
        other => panic!("expected corruption naming {}, got {other}", file.display()),
    }
    assert!(
        error.to_string().contains(&file.display().to_string()),
        "{error}"
    );
}

fn assert_first_region_serves(db: &Database) {
    let table = db.table("t").unwrap();
    assert_eq!(
        table
            .get(&Get::new("a0007"))
            .unwrap()
            .value(b"f", b"q")
            .unwrap(),
        &b"value 7"[..]
    );
    table
        .put(&Put::new("b-new").add("f", "q", "fresh"))
        .unwrap();
    assert!(!table.get(&Get::new("b-new")).unwrap().is_empty());
    let rows = table
        .scan(&Scan::new().stop_row("m"))
        .unwrap()
        .inspect(|r| assert!(r.is_ok(), "{r:?}"))
        .count();
    assert_eq!(rows, 301);
}

fn status(db: &Database) -> basalt::admin::StatusReply {
    match db.execute(AdminRequest::Status).unwrap() {
        AdminReply::Status(s) => s,
        other => panic!("unexpected reply {other:?}"),
    }
}

#[test]
fn a_damaged_trailer_fails_its_region_open_and_the_other_region_serves() {
    let dir = tempfile::tempdir().unwrap();
    let file = two_region_table(dir.path());
    let len = std::fs::metadata(&file).unwrap().len() as usize;
    flip(&file, len - 10);

    let db = Database::open(dir.path()).unwrap();
    let regions = db.list_regions("t").unwrap();
    assert_eq!(regions[0].state, RegionState::Open);
    match &regions[1].state {
        RegionState::FailedOpen {
            file: named,
            reason,
            ..
        } => {
            assert_eq!(named, &file);
            assert!(reason.contains(&file.display().to_string()), "{reason}");
        }
        other => panic!("expected FAILED_OPEN, got {other:?}"),
    }
    let AdminReply::Regions { regions } = db
        .execute(AdminRequest::ListRegions { table: "t".into() })
        .unwrap()
    else {
        panic!("unexpected reply")
    };
    assert_eq!(regions[1].state, "FAILED_OPEN");
    assert!(regions[1]
        .state_reason
        .as_deref()
        .unwrap()
        .contains(&file.display().to_string()));

    let table = db.table("t").unwrap();
    assert_names(&table.get(&Get::new("x0001")).unwrap_err(), &file);
    assert_names(
        &table
            .put(&Put::new("x-new").add("f", "q", "v"))
            .unwrap_err(),
        &file,
    );
    let scanned: Vec<Result<RowResult>> = table.scan(&Scan::new()).unwrap().collect();
    assert_names(scanned.last().unwrap().as_ref().unwrap_err(), &file);
    assert_first_region_serves(&db);

    let s = status(&db);
    assert_eq!(s.failed_regions, 1);
    assert!(s.corruption_errors >= 2, "{s:?}");
    // A split of the failed region is refused rather than linking to
    // unreadable files.
    assert!(db.split_table("t", Some(b"y")).is_err());
    db.close().unwrap();
}

#[test]
fn a_damaged_data_block_fails_reads_of_its_rows_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = two_region_table(dir.path());
    let len = std::fs::metadata(&file).unwrap().len() as usize;
    // Data blocks come first: a quarter in is inside one.
    flip(&file, len / 4);

    let db = Database::open(dir.path()).unwrap();
    let table = db.table("t").unwrap();
    let errors: Vec<Error> = (0..300)
        .filter_map(|i| table.get(&Get::new(format!("x{i:04}"))).err())
        .collect();
    assert!(
        !errors.is_empty(),
        "a damaged block read back without an error"
    );
    for e in &errors {
        assert_names(e, &file);
    }
    assert_first_region_serves(&db);
    assert!(status(&db).corruption_errors >= errors.len() as u64);
    db.close().unwrap();
}

fn segments_with_records(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join("wal"))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "log"))
                .filter(|p| std::fs::metadata(p).unwrap().len() > 24)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_clean_stop_leaves_no_flushed_log_segment_that_damage_could_block() {
    let dir = tempfile::tempdir().unwrap();
    two_region_table(dir.path());
    // Every record was flushed before the stop: no segment is kept, so
    // a flipped byte in one cannot block the next start.
    assert_eq!(segments_with_records(dir.path()), Vec::<PathBuf>::new());
    for segment in std::fs::read_dir(dir.path().join("wal")).unwrap() {
        let path = segment.unwrap().path();
        if std::fs::metadata(&path).unwrap().len() > 20 {
            flip(&path, 20);
        }
    }
    let db = Database::open(dir.path()).unwrap();
    let rows = db
        .table("t")
        .unwrap()
        .scan(&Scan::new())
        .unwrap()
        .inspect(|r| assert!(r.is_ok(), "{r:?}"))
        .count();
    assert_eq!(rows, 600);
}

#[test]
fn a_failed_region_keeps_the_log_segments_holding_its_unflushed_edits() {
    let dir = tempfile::tempdir().unwrap();
    let file = two_region_table(dir.path());
    {
        let db = Database::open(dir.path()).unwrap();
        db.table("t")
            .unwrap()
            .put(&Put::new("x-unflushed").add("f", "q", "v"))
            .unwrap();
        // Dropped without close: a crash, the edit only in the log.
    }
    let len = std::fs::metadata(&file).unwrap().len() as usize;
    flip(&file, len - 10);
    let db = Database::open(dir.path()).unwrap();
    db.close().unwrap();
    assert_eq!(
        segments_with_records(dir.path()).len(),
        1,
        "the failed region's edit must survive a clean stop"
    );
}
