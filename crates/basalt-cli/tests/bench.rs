//! `basalt bench` as a process: a tiny YCSB run and a tiny db_bench run
//! print their reports, and bad input is an error, not a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Command;

fn basalt(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ycsb_and_db_bench_print_their_reports() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ycsb");
    let (ok, out, err) = basalt(&[
        "bench",
        "ycsb",
        "--db",
        db.to_str().unwrap(),
        "--workload",
        "b",
        "--records",
        "300",
        "--operations",
        "300",
        "--threads",
        "2",
        "--no-progress",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("[INSERT], Return=OK, 300"), "{out}");
    assert!(out.contains("[READ], 99thPercentileLatency(us)"), "{out}");
    assert!(!out.contains("NOT_FOUND"), "{out}");

    let db = dir.path().join("dbbench");
    let (ok, out, err) = basalt(&[
        "bench",
        "db_bench",
        "--benchmarks=fillseq,readrandom",
        "--num=200",
        "--key_size=24",
        "--value_size=100",
        "--histogram=1",
        &format!("--db={}", db.display()),
    ]);
    assert!(ok, "{err}");
    let results = basalt_bench::dbbench::parse_output(&out);
    let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["fillseq", "readrandom"], "{out}");
    assert_eq!(results[1].found, Some((200, 200)));
    assert!(results[1].p99_us.is_some());
}

#[test]
fn the_snapshot_bench_times_snapshots_of_the_table_it_loaded_and_reports_their_size() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("snap");
    let report = dir.path().join("report.md");
    let (ok, out, err) = basalt(&[
        "bench",
        "snapshot",
        "--bytes",
        "4194304",
        "--value-size",
        "4096",
        "--regions",
        "4",
        "--runs",
        "2",
        "--db",
        db.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("Loaded 4 MiB of values"), "{out}");
    // Two timed rows, each referencing the loaded bytes (4 MiB of values
    // and their keys).
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("| 1 |") || l.starts_with("| 2 |"))
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(rows.iter().all(|r| r.ends_with("| 4 MiB |")), "{rows:?}");
    assert!(out.contains("Median of 2 snapshots"), "{out}");
    assert_eq!(std::fs::read_to_string(&report).unwrap(), out);
    // Again on the kept table, without loading; snapshots were deleted.
    let (ok, out, err) = basalt(&[
        "bench",
        "snapshot",
        "--use-existing-db",
        "--runs",
        "1",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(!out.contains("Loaded"), "{out}");
    assert!(out.contains("Median of 1 snapshots"), "{out}");
}

#[test]
fn bad_arguments_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x");
    for args in [
        vec![
            "bench",
            "ycsb",
            "--workload",
            "g",
            "--db",
            db.to_str().unwrap(),
        ],
        vec![
            "bench",
            "db_bench",
            "--benchmarks=nosuch",
            "--db",
            db.to_str().unwrap(),
        ],
        vec![
            "bench",
            "ycsb",
            "--phase",
            "warmup",
            "--db",
            db.to_str().unwrap(),
        ],
        vec![
            "bench",
            "snapshot",
            "--value-size",
            "0",
            "--db",
            db.to_str().unwrap(),
        ],
    ] {
        let (ok, _, err) = basalt(&args);
        assert!(!ok, "{args:?} succeeded");
        assert!(err.contains("basalt: "), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
