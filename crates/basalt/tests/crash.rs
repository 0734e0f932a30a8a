//! Crash safety: a child process writes with SYNC_WAL and reports every
//! acknowledged row; it is killed with SIGKILL at random moments; after each
//! kill the database must open cleanly and hold every acknowledged row.
//!
//! The child is this same test binary, re-run with `BASALT_CRASH_CHILD_DIR`
//! set so that its `crash_child_writer` test becomes the writer. In the
//! "storage" mode the child also flushes every few KiB and compacts all the
//! time, so kills land in the middle of flushes and compactions too; after
//! each kill no file may be left that the manifests do not list.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use basalt::*;
use rand::{Rng, SeedableRng};

const CHILD_ENV: &str = "BASALT_CRASH_CHILD_DIR";
const ROUNDS: usize = 24;
const WRITER_THREADS: usize = 4;
/// Printed by the child when it starts writing. libtest may print its own
/// "test ... " prefix on the same line, so markers are searched, not compared.
const READY_MARKER: &str = "BASALT-CRASH-CHILD-READY";
const ACK_MARKER: &str = "BASALT-ACK ";

fn value_for(row: &str, family: &str) -> String {
    format!("{family}-value-of-{row}")
}

/// The writer side. Does nothing unless started by the parent test.
#[test]
fn crash_child_writer() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let round: usize = std::env::var("BASALT_CRASH_ROUND")
        .unwrap()
        .parse()
        .unwrap();
    let storage_mode = std::env::var("BASALT_CRASH_MODE").as_deref() == Ok("storage");
    let db = Database::open_with(child_options(&dir, storage_mode)).unwrap();
    if !db.table_exists("crash") {
        db.create_table(
            TableDescriptor::new("crash")
                .family(ColumnFamilyDescriptor::new("a"))
                .family(ColumnFamilyDescriptor::new("b")),
        )
        .unwrap();
    }
    let table = db.table("crash").unwrap();
    let stdout = std::sync::Mutex::new(std::io::stdout());
    println!("{READY_MARKER}");
    std::thread::scope(|s| {
        if storage_mode {
            let db = &db;
            s.spawn(move || loop {
                // Major and minor compactions back to back, all the time.
                db.compact_table("crash", true).unwrap();
                db.compact_table("crash", false).unwrap();
                std::thread::sleep(Duration::from_millis(3));
            });
        }
        for thread in 0..WRITER_THREADS {
            let table = table.clone();
            let stdout = &stdout;
            s.spawn(move || {
                for i in 0u64.. {
                    let row = format!("round{round:02}-t{thread}-{i:08}");
                    // A multi-family row mutation, so a torn record would show
                    // up as half a row.
                    let put = Put::new(row.clone())
                        .add("a", "q", value_for(&row, "a"))
                        .add("b", "q", value_for(&row, "b"))
                        .durability(if i.is_multiple_of(5) {
                            Durability::FsyncWal
                        } else {
                            Durability::SyncWal
                        });
                    table.put(&put).unwrap();
                    let mut out = stdout.lock().unwrap();
                    writeln!(out, "{ACK_MARKER}{row}").unwrap();
                    out.flush().unwrap();
                }
            });
        }
    });
}

/// Kills the child if the parent test fails first, so no writer outlives it.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn child_options(dir: &str, storage_mode: bool) -> Options {
    let mut options = Options::new(dir);
    if storage_mode {
        options.memstore_flush_bytes = 32 * 1024;
        options.compaction_min_files = 2;
        options.background_threads = 1;
    }
    options
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    run_crash_rounds("plain");
}

#[test]
fn acknowledged_writes_survive_sigkill_during_flushes_and_compactions() {
    run_crash_rounds("storage");
}

/// Store files on disk under the data directory.
fn store_files_on_disk(dir: &std::path::Path) -> usize {
    fn walk(dir: &std::path::Path, count: &mut usize) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, count);
            } else if path.extension().is_some_and(|e| e == "sst") {
                *count += 1;
            }
        }
    }
    let mut count = 0;
    walk(&dir.join("data"), &mut count);
    count
}

fn run_crash_rounds(mode: &str) {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let seed: u64 = std::env::var("BASALT_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    println!("crash test seed {seed} (set BASALT_CRASH_SEED to replay)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut acknowledged: BTreeMap<String, usize> = BTreeMap::new();
    let mut torn_tails = 0;

    // The child's stderr goes to a file outside the data directory, so a
    // child that dies on its own explains why.
    let logs = tempfile::tempdir().unwrap();
    for round in 0..ROUNDS {
        let stderr_path = logs.path().join(format!("child-{round}.stderr"));
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        let mut child = KillOnDrop(
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "crash_child_writer",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_ENV, dir.path())
                .env("BASALT_CRASH_ROUND", round.to_string())
                .env("BASALT_CRASH_MODE", mode)
                .stdout(Stdio::piped())
                .stderr(Stdio::from(stderr))
                .spawn()
                .unwrap(),
        );
        let stdout = child.0.stdout.take().unwrap();
        let (lines_tx, lines_rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Wait until the child is writing, then kill it at a random moment.
        loop {
            let Ok(line) = lines_rx.recv_timeout(Duration::from_secs(60)) else {
                panic!(
                    "round {round}: the child never became ready; its stderr:\n{}",
                    std::fs::read_to_string(&stderr_path).unwrap_or_default()
                );
            };
            if line.contains(READY_MARKER) {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(5..250)));
        child.0.kill().unwrap(); // SIGKILL on Unix
        child.0.wait().unwrap();
        reader.join().unwrap();
        let mut acked_this_round = 0;
        for line in lines_rx.try_iter() {
            if let Some(at) = line.find(ACK_MARKER) {
                let row = &line[at + ACK_MARKER.len()..];
                acknowledged.insert(row.to_string(), round);
                acked_this_round += 1;
            }
        }

        // The store must open cleanly and hold every acknowledged row, whole.
        let db = Database::open(dir.path())
            .unwrap_or_else(|e| panic!("round {round}: reopen failed: {e}"));
        if db.recovery_report().torn_tail.is_some() {
            torn_tails += 1;
        }
        let table = db.table("crash").unwrap();
        for row in acknowledged.keys() {
            let result = table.get(&Get::new(row.clone())).unwrap();
            for family in ["a", "b"] {
                let value = result.value(family.as_bytes(), b"q");
                assert_eq!(
                    value.map(|v| String::from_utf8_lossy(v).into_owned()),
                    Some(value_for(row, family)),
                    "round {round} (seed {seed}): acknowledged row {row} lost or damaged"
                );
            }
        }
        // A crash mid-flush or mid-compaction leaves no file the manifests
        // do not list: opening removed the orphans.
        let listed: usize = db
            .describe_table("crash")
            .unwrap()
            .regions
            .iter()
            .flat_map(|r| r.stores.iter().map(|(_, s)| s.files))
            .sum();
        assert_eq!(
            store_files_on_disk(dir.path()),
            listed,
            "round {round}: orphaned store files"
        );
        // Rows written but not acknowledged may or may not be there, but never half.
        for result in table.scan(&Scan::new()).unwrap() {
            let result = result.unwrap();
            assert_eq!(
                result.cells.len(),
                2,
                "half a row mutation survived: {result:?}"
            );
        }
        println!(
            "{mode} round {round}: {acked_this_round} rows acknowledged, {} in all, {listed} store files",
            acknowledged.len()
        );
        db.close().unwrap();
    }
    assert!(
        acknowledged.len() > ROUNDS,
        "the child barely wrote anything"
    );
    println!(
        "{mode}: {} acknowledged rows verified over {ROUNDS} kills; {torn_tails} torn tails recovered",
        acknowledged.len()
    );
}
