//! Crash safety: a child process writes with SYNC_WAL and reports every
//! acknowledged row; it is killed with SIGKILL at random moments; after each
//! kill the database must open cleanly and hold every acknowledged row.
//!
//! The child is this same test binary, re-run with `BASALT_CRASH_CHILD_DIR`
//! set so that its `crash_child_writer` test becomes the writer. In the
//! "storage" mode the child also flushes every few KiB and compacts all the
//! time, so kills land in the middle of flushes and compactions too; after
//! each kill no file may be left that the manifests do not list. In the
//! "regions" mode the table also splits by itself at a tiny split size while
//! a thread splits and merges regions by hand without pause, so kills land
//! in the middle of splits and merges: after each kill the serving regions
//! must cover the key space with no gap or overlap (the parent or the
//! daughters serve, never both, never neither), every acknowledged row must
//! be there, and only serving and retired regions may have files.
//!
//! The "s3" and "file" modes keep the data on object storage (moto's S3,
//! or a shared directory through `file://`), write-ahead log included: each
//! child writes from a new, empty data directory and each check opens yet
//! another one, so every acknowledged row must come back from the storage
//! alone (the log objects of the killed child, replayed and fenced by the
//! next owner).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../test-support/moto.rs"]
mod moto;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use basalt::*;
use rand::{Rng, SeedableRng};

const CHILD_ENV: &str = "BASALT_CRASH_CHILD_DIR";
/// The storage URL of the object storage modes.
const STORAGE_ENV: &str = "BASALT_CRASH_STORAGE";
const ROUNDS: usize = 24;
/// Fewer rounds on object storage: every write is a `PUT`.
const STORAGE_ROUNDS: usize = 8;
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
    let mode = std::env::var("BASALT_CRASH_MODE").unwrap_or_default();
    let storage_mode = mode == "storage" || mode == "regions";
    let regions_mode = mode == "regions";
    // Endpoint and credentials come from the AWS environment the parent
    // set for this process.
    let db = open_db(
        child_options(&dir, &mode),
        std::env::var(STORAGE_ENV)
            .ok()
            .map(basalt_object_store::StorageConfig::for_url),
    );
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
        if regions_mode {
            let db = &db;
            s.spawn(move || {
                for pass in 0usize.. {
                    let regions = db.list_regions("crash").unwrap();
                    let outcome = if regions.len() < 8 {
                        db.split_table("crash", None)
                    } else {
                        let i = pass % (regions.len() - 1);
                        db.merge_regions(
                            regions[i].info.encoded_name().as_bytes(),
                            regions[i + 1].info.encoded_name().as_bytes(),
                        )
                    };
                    // An automatic split may retire a region between the
                    // listing and the merge: that is not a failure.
                    if let Err(e) = outcome {
                        eprintln!("hand-over refused: {e}");
                    }
                }
            });
        }
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
                    // A leading bucket spreads the rows over the key space,
                    // so every region, old or new, takes writes.
                    let bucket = (i * 7919 + thread as u64 * 131) % 256;
                    let row = format!("{bucket:02x}-round{round:02}-t{thread}-{i:08}");
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

/// Starts the child writer `command` describes (stdout piped, so its
/// markers can be read), waits until it says it is writing (at most
/// `ready_within`), lets it write for a random `kill_after_ms`, kills it
/// with SIGKILL and returns the rows it acknowledged.
fn kill_child_while_writing(
    command: &mut Command,
    round: usize,
    stderr_path: &std::path::Path,
    ready_within: Duration,
    kill_after_ms: std::ops::Range<u64>,
    rng: &mut rand::rngs::StdRng,
) -> Vec<String> {
    let mut child = KillOnDrop(command.spawn().unwrap());
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
    loop {
        let Ok(line) = lines_rx.recv_timeout(ready_within) else {
            panic!(
                "round {round}: the child never became ready; its stderr:\n{}",
                std::fs::read_to_string(stderr_path).unwrap_or_default()
            );
        };
        if line.contains(READY_MARKER) {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(rng.random_range(kill_after_ms)));
    child.0.kill().unwrap(); // SIGKILL on Unix
    child.0.wait().unwrap();
    reader.join().unwrap();
    lines_rx
        .try_iter()
        .filter_map(|line| {
            line.find(ACK_MARKER)
                .map(|at| line[at + ACK_MARKER.len()..].to_string())
        })
        .collect()
}

/// Opens the database, on the storage `config` names (log included) when
/// given.
/// Opens the database, waiting out a LOCK held a moment by a process
/// another test is spawning: a child inherits every descriptor of this
/// test binary until it execs, the LOCK of a database just closed here
/// included (seen once on a loaded machine). A lock held longer than the
/// wait still fails the test.
fn open_db(options: Options, config: Option<basalt_object_store::StorageConfig>) -> Database {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match try_open_db(options.clone(), config.clone()) {
            Err(Error::Locked { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            opened => return opened.unwrap(),
        }
    }
}

fn try_open_db(
    options: Options,
    config: Option<basalt_object_store::StorageConfig>,
) -> basalt::Result<Database> {
    let Some(config) = config else {
        return Database::open_with(options);
    };
    let storage = basalt_object_store::open_storage(&config, &options.data_dir)?
        .ok_or_else(|| Error::invalid("no storage URL"))?;
    Database::builder(options)
        .file_store(storage.file_store())
        .wal_in_file_store(storage.wal_options())
        .open()
}

fn child_options(dir: &str, mode: &str) -> Options {
    let mut options = Options::new(dir);
    if mode == "s3" || mode == "file" {
        // Flushes now and then, so log objects are retired while kills land.
        options.memstore_flush_bytes = 32 * 1024;
        options.compaction_min_files = 2;
        options.background_threads = 1;
    }
    if mode == "storage" || mode == "regions" {
        options.memstore_flush_bytes = 32 * 1024;
        options.compaction_min_files = 2;
        options.background_threads = 1;
    }
    if mode == "regions" {
        options.region_split_bytes = 64 * 1024;
    } else {
        // The other modes keep one region (the stepping policy would split
        // it at twice the tiny flush size).
        options.region_split_policy = RegionSplitPolicy::ConstantSize;
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

#[test]
fn acknowledged_writes_survive_sigkill_during_splits_and_merges() {
    run_crash_rounds("regions");
}

#[test]
fn acknowledged_writes_survive_sigkill_with_data_and_log_on_s3() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let Some(moto) =
        moto::start_or_skip("acknowledged_writes_survive_sigkill_with_data_and_log_on_s3")
    else {
        return;
    };
    let bucket = format!("crash-{}", std::process::id());
    moto.create_bucket(&bucket);
    run_rounds_on_storage("s3", &format!("s3://{bucket}/db"), &moto.aws_env());
}

#[test]
fn acknowledged_writes_survive_sigkill_with_data_and_log_in_a_shared_directory() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let shared = tempfile::tempdir().unwrap();
    run_rounds_on_storage("file", &format!("file://{}", shared.path().display()), &[]);
}

/// The settings the AWS environment `env` stands for (the parent does not
/// change its own environment: other tests run beside it).
fn storage_config(url: &str, env: &[(&'static str, String)]) -> basalt_object_store::StorageConfig {
    let mut config = basalt_object_store::StorageConfig::for_url(url);
    for (key, value) in env {
        match *key {
            "AWS_ENDPOINT_URL" => config.endpoint = Some(value.clone()),
            "AWS_REGION" => config.region = Some(value.clone()),
            "AWS_ACCESS_KEY_ID" => config.access_key_id = Some(value.clone()),
            "AWS_SECRET_ACCESS_KEY" => config.secret_access_key = Some(value.clone()),
            "AWS_ALLOW_HTTP" => config.allow_http = Some(value == "true"),
            _ => {}
        }
    }
    config
}

/// The crash rounds with data and log on the storage at `url`: every
/// child and every check on a data directory of its own.
fn run_rounds_on_storage(mode: &str, url: &str, env: &[(&'static str, String)]) {
    let dirs = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let seed: u64 = std::env::var("BASALT_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    println!("crash test seed {seed} (set BASALT_CRASH_SEED to replay)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut acknowledged: BTreeMap<String, usize> = BTreeMap::new();
    for round in 0..STORAGE_ROUNDS {
        let child_dir = dirs.path().join(format!("child-{round}"));
        let stderr_path = logs.path().join(format!("child-{round}.stderr"));
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "crash_child_writer",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &child_dir)
            .env(STORAGE_ENV, url)
            .env("BASALT_CRASH_ROUND", round.to_string())
            .env("BASALT_CRASH_MODE", mode)
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr));
        for (key, value) in env {
            command.env(key, value);
        }
        let acked = kill_child_while_writing(
            &mut command,
            round,
            &stderr_path,
            Duration::from_secs(120),
            20..400,
            &mut rng,
        );
        let acked_this_round = acked.len();
        for row in acked {
            acknowledged.insert(row, round);
        }

        // A new owner on an empty data directory: the storage is all it has.
        let check_dir = dirs.path().join(format!("check-{round}"));
        let db = open_db(Options::new(&check_dir), Some(storage_config(url, env)));
        let table = db.table("crash").unwrap();
        for row in acknowledged.keys() {
            let result = table.get(&Get::new(row.clone())).unwrap();
            for family in ["a", "b"] {
                assert_eq!(
                    result
                        .value(family.as_bytes(), b"q")
                        .map(|v| String::from_utf8_lossy(v).into_owned()),
                    Some(value_for(row, family)),
                    "{mode} round {round} (seed {seed}): acknowledged row {row} lost or damaged"
                );
            }
        }
        for result in table.scan(&Scan::new()).unwrap() {
            let result = result.unwrap();
            assert_eq!(
                result.cells.len(),
                2,
                "half a row mutation survived: {result:?}"
            );
        }
        println!(
            "{mode} round {round}: {acked_this_round} rows acknowledged, {} in all, {} replayed at open",
            acknowledged.len(),
            db.recovery_report().edits_replayed
        );
        db.close().unwrap();
    }
    assert!(
        acknowledged.len() > STORAGE_ROUNDS,
        "the child barely wrote anything"
    );
    println!(
        "{mode}: {} acknowledged rows verified over {STORAGE_ROUNDS} kills",
        acknowledged.len()
    );
}

/// Store files on disk in the directories of the table's regions, by
/// region id.
fn store_files_on_disk(dir: &std::path::Path) -> BTreeMap<u64, usize> {
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
    let mut by_region = BTreeMap::new();
    let table_dir = dir.join("data").join("default").join("crash");
    for entry in std::fs::read_dir(table_dir).into_iter().flatten().flatten() {
        let id: u64 = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected entry {:?}", entry.path()));
        let mut count = 0;
        walk(&entry.path(), &mut count);
        by_region.insert(id, count);
    }
    by_region
}

/// Ids of the regions the catalog names under `key` of the table: `regions`
/// (serving) or `retired` (split or merged, with files serving regions
/// still link to). A catalog not written yet names none.
fn catalog_region_ids(dir: &std::path::Path, key: &str) -> Vec<u64> {
    let text = basalt::catalog_document(&basalt::fs::LocalFileStore::new(), dir)
        .ok()
        .flatten()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_default();
    let Ok(catalog) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    catalog["tables"]["crash"][key]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r["id"].as_u64()).collect())
        .unwrap_or_default()
}

/// The serving regions cover the key space with no gap and no overlap.
fn assert_regions_cover_key_space(db: &Database, round: usize) {
    let regions = db.list_regions("crash").unwrap();
    let bounds: Vec<(&[u8], &[u8])> = regions
        .iter()
        .map(|r| (&r.info.start_key[..], &r.info.end_key[..]))
        .collect();
    let ok = bounds.first().is_some_and(|(s, _)| s.is_empty())
        && bounds.last().is_some_and(|(_, e)| e.is_empty())
        && bounds
            .windows(2)
            .all(|w| w[0].1 == w[1].0 && w[0].0 < w[0].1);
    assert!(
        ok,
        "round {round}: regions do not cover the key space: {bounds:?}"
    );
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
    let mut interrupted_handovers = 0;
    let mut parents_awaiting_janitor = 0;

    // The child's stderr goes to a file outside the data directory, so a
    // child that dies on its own explains why.
    let logs = tempfile::tempdir().unwrap();
    for round in 0..ROUNDS {
        let stderr_path = logs.path().join(format!("child-{round}.stderr"));
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
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
            .stderr(Stdio::from(stderr));
        // Wait until the child is writing, then kill it at a random moment.
        let acked = kill_child_while_writing(
            &mut command,
            round,
            &stderr_path,
            Duration::from_secs(60),
            5..250,
            &mut rng,
        );
        let acked_this_round = acked.len();
        for row in acked {
            acknowledged.insert(row, round);
        }

        // The store must open cleanly and hold every acknowledged row, whole.
        // What the kill interrupted: daughters or merged regions seeded but
        // not committed (directories the catalog does not name), and
        // committed hand-overs whose parents still wait for the janitor.
        let mut named = catalog_region_ids(dir.path(), "regions");
        named.extend(catalog_region_ids(dir.path(), "retired"));
        let uncommitted = store_files_on_disk(dir.path())
            .keys()
            .filter(|id| !named.contains(id))
            .count();
        let awaiting_janitor = catalog_region_ids(dir.path(), "retired").len();
        interrupted_handovers += uncommitted;
        parents_awaiting_janitor += awaiting_janitor;
        // Maintenance inline: the compactions opening starts (of regions
        // still linking to a parent's files) are over when it returns, so
        // the files on disk can be counted.
        let mut options = Options::new(dir.path());
        options.background_threads = 0;
        let db = Database::open_with(options)
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
        // A crash mid-flush, mid-compaction, mid-split or mid-merge leaves
        // no file the manifests do not list, and no region directory the
        // catalog does not name: opening removed the orphans.
        assert_regions_cover_key_space(&db, round);
        let regions = db.list_regions("crash").unwrap();
        let retired = catalog_region_ids(dir.path(), "retired");
        let on_disk = store_files_on_disk(dir.path());
        let mut listed = 0;
        for region in &regions {
            assert!(
                !retired.contains(&region.info.id),
                "round {round}: region {} both serving and retired",
                region.info.id
            );
            let own: usize = region
                .stores
                .iter()
                .map(|(_, s)| s.files - s.linked_files)
                .sum();
            assert_eq!(
                on_disk.get(&region.info.id).copied().unwrap_or(0),
                own,
                "round {round}: orphaned store files in region {}",
                region.info.id
            );
            listed += own;
        }
        for id in on_disk.keys() {
            assert!(
                regions.iter().any(|r| r.info.id == *id) || retired.contains(id),
                "round {round}: directory of region {id}, which the catalog does not name"
            );
        }
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
            "{mode} round {round}: {acked_this_round} rows acknowledged, {} in all, {listed} store files, {} regions ({} retired)",
            acknowledged.len(),
            regions.len(),
            retired.len()
        );
        db.close().unwrap();
    }
    assert!(
        acknowledged.len() > ROUNDS,
        "the child barely wrote anything"
    );
    println!(
        "{mode}: {} acknowledged rows verified over {ROUNDS} kills; {torn_tails} torn tails recovered; \
         kills found {interrupted_handovers} uncommitted split/merge regions and \
         {parents_awaiting_janitor} retired parents awaiting the janitor",
        acknowledged.len()
    );
}
