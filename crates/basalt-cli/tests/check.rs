//! `basalt check` and `basalt repair` as processes over real data
//! directories: damage is found with its file and offset, quarantined or
//! cut away on request, and the database then opens whole.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use basalt::*;

/// Held by each test for its whole run. A process spawned while another
/// test holds a data directory's LOCK inherits that descriptor until it
/// execs, so that directory stays locked a moment after its database
/// closes; a check spawned in that moment is refused (seen on a loaded
/// machine). One test at a time removes the overlap.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn basalt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn check(dir: &Path) -> Output {
    basalt(&["check", "--data-dir", dir.to_str().unwrap()])
}

/// A table split at "m", rows on both sides. With `flush` everything is in
/// store files and the database is closed cleanly; without, it is dropped
/// unflushed (a crash) and the rows are only in the log.
fn populate(dir: &Path, flush: bool) {
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
    if flush {
        db.flush_table("t").unwrap();
        db.close().unwrap();
    }
}

fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, ext, out);
            } else if path.extension().is_some_and(|e| e == ext) {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, ext, &mut out);
    out.sort();
    out
}

/// The store file of the region holding rows from "m".
fn second_region_file(dir: &Path) -> PathBuf {
    let db = Database::open(dir).unwrap();
    let id = db.list_regions("t").unwrap()[1].info.id;
    db.close().unwrap();
    let store = layout::store_dir(&layout::region_dir(dir, "t", id), "f");
    files_with_extension(&store, "sst").pop().unwrap()
}

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}

fn row_count(dir: &Path) -> usize {
    let db = Database::open(dir).unwrap();
    for region in db.list_regions("t").unwrap() {
        assert_eq!(region.state, RegionState::Open, "{:?}", region.state);
    }
    let n = db
        .table("t")
        .unwrap()
        .scan(&Scan::new())
        .unwrap()
        .inspect(|r| assert!(r.is_ok(), "{r:?}"))
        .count();
    db.close().unwrap();
    n
}

#[test]
fn a_healthy_directory_passes_with_a_one_line_summary() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path(), true);
    let out = check(dir.path());
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.starts_with("OK: 1 tables, 2 regions"), "{stdout}");
}

#[test]
fn a_flipped_byte_anywhere_in_a_store_file_is_named_with_its_offset() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path(), true);
    let file = second_region_file(dir.path());
    let pristine = std::fs::read(&file).unwrap();
    let len = pristine.len();
    // A data block, the middle (index/bloom/meta region) and the trailer.
    for at in [len / 4, len - 100, len - 10] {
        std::fs::write(&file, &pristine).unwrap();
        flip(&file, at);
        let out = check(dir.path());
        let report = text(&out);
        assert_eq!(out.status.code(), Some(1), "byte {at}: {report}");
        assert!(
            report.contains(&format!("PROBLEM {} at offset", file.display())),
            "byte {at}: {report}"
        );
    }
}

#[test]
fn a_flipped_byte_in_a_log_record_is_named_with_its_offset() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path(), false);
    let segment = files_with_extension(&dir.path().join("wal"), "log")
        .pop()
        .unwrap();
    let len = std::fs::metadata(&segment).unwrap().len() as usize;
    flip(&segment, len / 2);
    let out = check(dir.path());
    let report = text(&out);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains(&format!("PROBLEM {} at offset", segment.display())),
        "{report}"
    );
}

#[test]
fn quarantine_moves_the_file_aside_reports_the_lost_rows_and_the_database_opens_whole() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path(), true);
    let file = second_region_file(dir.path());
    let len = std::fs::metadata(&file).unwrap().len() as usize;
    flip(&file, len / 4);
    assert_eq!(check(dir.path()).status.code(), Some(1));

    let out = basalt(&[
        "repair",
        "--data-dir",
        dir.path().to_str().unwrap(),
        "--quarantine",
        file.to_str().unwrap(),
    ]);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("lost key range: rows 'x0000' to 'x0299'"),
        "{report}"
    );
    assert!(!file.exists());
    let moved = dir
        .path()
        .join("quarantine")
        .join(file.strip_prefix(dir.path()).unwrap());
    assert!(moved.exists(), "{report}");

    assert_eq!(row_count(dir.path()), 300, "the other region's rows remain");
    let out = check(dir.path());
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn point_in_time_recovery_drops_the_log_from_the_first_damaged_record() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path(), false);
    let segment = files_with_extension(&dir.path().join("wal"), "log")
        .pop()
        .unwrap();
    let len = std::fs::metadata(&segment).unwrap().len() as usize;
    flip(&segment, len / 2);
    let data_dir = dir.path().to_str().unwrap();

    let refused = basalt(&[
        "repair",
        "--data-dir",
        data_dir,
        "--wal-recovery",
        "absolute-consistency",
    ]);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(text(&refused).contains(&segment.display().to_string()));

    let out = basalt(&[
        "repair",
        "--data-dir",
        data_dir,
        "--wal-recovery",
        "point-in-time",
    ]);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("point-in-time: cut"), "{report}");
    assert!(report.contains("dropping"), "{report}");

    let rows = row_count(dir.path());
    assert!(rows > 0 && rows < 600, "{rows} rows survived");
    let out = check(dir.path());
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn check_refuses_a_directory_a_server_holds() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let out = check(dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("in use by a running server"),
        "{}",
        text(&out)
    );
    db.close().unwrap();
}
