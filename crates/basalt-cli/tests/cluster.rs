//! The chaos suite of cluster mode: real `basalt master` and `basalt
//! regionserver` processes, a real ZooKeeper, shared storage in a
//! directory, all on loopback. Each test breaks something (kill -9,
//! SIGSTOP, a master lost in the middle of a procedure), then checks that
//! no acknowledged write is lost, that nothing a fenced server accepted
//! late is visible, and the cluster invariants (`check_invariants`).
//! Timings are printed for the record, never asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use basalt::cluster::{MasterAnswer, MasterCall};
use basalt::{ColumnFamilyDescriptor, TableDescriptor};
use basalt_thrift::Client;
use bytes::Bytes;

#[path = "common/cluster.rs"]
mod cluster_support;
use cluster_support::{all_rows, thrift_put as put, TestCluster};

fn create_table(cluster: &TestCluster, name: &str, splits: &[&str]) {
    let call = MasterCall::CreateTable {
        descriptor: TableDescriptor::new(name).family(ColumnFamilyDescriptor::new("cf")),
        splits: splits.iter().map(|s| Bytes::from(s.to_string())).collect(),
        owner: None,
    };
    match cluster.master_call(call) {
        Ok(MasterAnswer::Done) => {}
        other => panic!("create {name}: {other:?}"),
    }
}

/// The `(start, end)` keys of the regions of `table` the catalog assigns
/// to `server`.
fn held_ranges(cluster: &TestCluster, table: &str, server: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let bytes = |v: &serde_json::Value| -> Vec<u8> {
        v.as_array()
            .map(|a| a.iter().map(|b| b.as_u64().unwrap() as u8).collect())
            .unwrap_or_default()
    };
    cluster.catalog_json()["tables"][table]["regions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["server"].as_str() == Some(server))
        .map(|r| (bytes(&r["start_key"]), bytes(&r["end_key"])))
        .collect()
}

/// Seconds since midnight (UTC) now, to compare with log timestamps.
fn seconds_of_day_now() -> f64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    now % 86_400.0
}

/// Seconds since midnight of a log line's `2026-11-23T05:19:44.589846Z`.
fn log_seconds(line: &str) -> Option<f64> {
    let time = line
        .split_whitespace()
        .next()?
        .split('T')
        .nth(1)?
        .trim_end_matches('Z');
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

const SPLITS: &[&str] = &["r0-5", "r1", "r1-5", "r2", "r2-5", "r3", "r3-5"];

/// Writers over Thrift, each on its own region server's gateway (which
/// forwards rows of regions held elsewhere), recording every row whose
/// write was acknowledged and when writes failed.
struct Load {
    stop: Arc<AtomicBool>,
    acknowledged: Arc<Mutex<BTreeSet<String>>>,
    failures: Arc<Mutex<Vec<(Instant, String)>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(cluster: &TestCluster, table: &str, servers: &[usize]) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let acknowledged = Arc::new(Mutex::new(BTreeSet::new()));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for (writer, &server) in servers.iter().enumerate() {
            let port = cluster.server(server).port("thrift");
            let (stop, acknowledged, failures) = (
                Arc::clone(&stop),
                Arc::clone(&acknowledged),
                Arc::clone(&failures),
            );
            let table = table.to_string();
            threads.push(std::thread::spawn(move || {
                let connect = || {
                    let c = Client::connect(
                        ("127.0.0.1", port),
                        false,
                        basalt_thrift::Protocol::Binary { strict: true },
                    )
                    .unwrap();
                    c.set_timeout(Some(Duration::from_secs(120))).unwrap();
                    c
                };
                let mut c = connect();
                let mut i = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    // Rows spread over every region: r0..r3, then a digit
                    // on either side of each `-5` split.
                    let row = format!("r{}-{}-{writer}-{i:06}", i % 4, (i / 4) % 10);
                    match put(&mut c, &table, &row) {
                        Ok(()) => {
                            acknowledged.lock().unwrap().insert(row);
                            i += 1;
                        }
                        Err(e) => {
                            failures.lock().unwrap().push((Instant::now(), e));
                            c = connect();
                        }
                    }
                }
            }));
        }
        Load {
            stop,
            acknowledged,
            failures,
            threads,
        }
    }

    fn stop(self) -> (BTreeSet<String>, Vec<(Instant, String)>) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads {
            t.join().unwrap();
        }
        let acked = self.acknowledged.lock().unwrap().clone();
        let failures = self.failures.lock().unwrap().clone();
        (acked, failures)
    }

    fn count(&self) -> usize {
        self.acknowledged.lock().unwrap().len()
    }
}

fn wait_for_writes(load: &Load, at_least: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while load.count() < at_least {
        assert!(
            Instant::now() < deadline,
            "the load never reached {at_least} writes"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_killed_region_server_loses_no_acknowledged_write_and_its_regions_reopen_elsewhere() {
    let mut cluster = TestCluster::start(1, 3);
    create_table(&cluster, "t", SPLITS);
    cluster.check_invariants();
    let victim_name = cluster.server(2).name.clone();
    let held = cluster
        .status()
        .servers
        .iter()
        .find(|s| s.name == victim_name)
        .map_or(0, |s| s.regions.len());
    assert!(held > 0, "the balancer gave the victim no region");

    let load = Load::start(&cluster, "t", &[0, 1, 0, 1]);
    wait_for_writes(&load, 400);
    let before_kill = load.count();
    let killed_at = Instant::now();
    let killed_wall = seconds_of_day_now();
    let _victim = cluster.kill_server(2);
    let (status, settled_at) = cluster.wait_until_settled_without(&victim_name);
    let reopened = settled_at - killed_at;
    // Writes go on after the recovery, on every region.
    wait_for_writes(&load, load.count() + 400);
    let (acknowledged, failures) = load.stop();
    let first_ok_after = failures
        .iter()
        .map(|(t, _)| *t)
        .max()
        .map_or(Duration::ZERO, |t| t - killed_at);
    eprintln!(
        "RECOVERY TIMELINE: kill -9 of {victim_name} (held {held} regions); every region open again after {:.2} s; writes acknowledged {before_kill} before the kill, {} in all; {} write attempts failed, the last {:.2} s after the kill",
        reopened.as_secs_f64(),
        acknowledged.len(),
        failures.len(),
        first_ok_after.as_secs_f64()
    );
    assert!(status.servers.iter().all(|s| s.name != victim_name));
    // The steps, from the processes' own log lines (wall clock).
    let master = cluster.master(0);
    let step = |proc: &cluster_support::Proc, needle: &str, last: bool| {
        let lines = proc.lines.lock().unwrap();
        let mut found = lines
            .iter()
            .filter(|l| l.contains(needle))
            .filter_map(|l| log_seconds(l));
        let at = if last {
            found.next_back()
        } else {
            found.next()
        };
        at.map(|t| format!("{:.2} s", t - killed_wall))
            .unwrap_or_else(|| "-".into())
    };
    let reopened_last = (0..2)
        .filter_map(|i| {
            let lines = cluster.server(i).lines.lock().unwrap();
            lines
                .iter()
                .filter(|l| l.contains("opened an assigned region") && !l.contains("logs=[]"))
                .filter_map(|l| log_seconds(l))
                .next_back()
        })
        .fold(f64::MIN, f64::max);
    eprintln!(
        "RECOVERY STEPS: declared dead {}, log fenced {}, last region reopened {:.2} s, dead log deleted {} after the kill",
        step(master, "region server is dead", false),
        step(master, "fenced the log of a dead region server", false),
        reopened_last - killed_wall,
        step(master, "its log is deleted", true),
    );

    let mut reader = cluster.thrift(1);
    let present = all_rows(&mut reader, "t");
    let lost: Vec<&String> = acknowledged.difference(&present).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged writes lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    cluster.check_invariants();
}

#[test]
fn a_paused_region_server_is_fenced_and_nothing_it_accepts_late_ever_appears() {
    let mut cluster = TestCluster::start(1, 3);
    create_table(&cluster, "t", SPLITS);
    cluster.check_invariants();
    let mut writer = cluster.thrift(0);
    let mut acknowledged = BTreeSet::new();
    for i in 0..400 {
        let row = format!("r{}-{}a-{i:05}", i % 4, (i / 4) % 10);
        put(&mut writer, "t", &row).unwrap();
        acknowledged.insert(row);
    }
    // A client of the server about to be paused, connected before.
    let mut stale = cluster.thrift(2);
    let paused_name = cluster.server(2).name.clone();
    // The key ranges of the regions it holds: "its writes" are writes to
    // those. (Rows of other regions it would forward, as any client
    // does, to the servers holding them: those are not its writes.)
    let held = held_ranges(&cluster, "t", &paused_name);
    assert!(!held.is_empty(), "the paused server holds no region");
    cluster.server(2).signal("STOP");
    // Its session expires; the master fences its log and reopens its
    // regions on the others.
    let _ = cluster.wait_until_settled_without(&paused_name);
    for i in 0..400 {
        let row = format!("r{}-{}b-{i:05}", i % 4, (i / 4) % 10);
        put(&mut writer, "t", &row).unwrap();
        acknowledged.insert(row);
    }
    cluster.server(2).signal("CONT");
    // Whatever the woken server says to writes to its former regions,
    // none may appear.
    let mut late = BTreeSet::new();
    let mut accepted = 0;
    let rows_in_held = (0..4000)
        .map(|i| format!("r{}-{}late-{i:05}", i % 4, (i / 4) % 10))
        .filter(|row| {
            held.iter().any(|(start, end)| {
                row.as_bytes() >= start.as_slice()
                    && (end.is_empty() || row.as_bytes() < end.as_slice())
            })
        })
        .take(50);
    for row in rows_in_held {
        late.insert(row.clone());
        if put(&mut stale, "t", &row).is_ok() {
            accepted += 1;
        }
    }
    assert!(!late.is_empty());
    // It stops: its session expired, so it exits on its own.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut paused = cluster.servers[2].take().unwrap();
    let exit = loop {
        if let Some(status) = paused.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the fenced server kept running");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        !exit.success(),
        "a fenced server exits with a failure status: {exit:?}"
    );
    // Its last lines may still be in the pipe when it exits.
    paused.read_to_end();
    assert!(
        paused.logged("session expired") || paused.logged("fenced"),
        "the server says why it stopped"
    );
    drop(paused);
    eprintln!(
        "late writes to the paused server's former regions: {accepted} of {} got an answer without an error",
        late.len()
    );

    let mut reader = cluster.thrift(1);
    let present = all_rows(&mut reader, "t");
    let lost: Vec<&String> = acknowledged.difference(&present).collect();
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    let leaked: Vec<&String> = late.intersection(&present).collect();
    assert!(
        leaked.is_empty(),
        "writes to the fenced server became visible: {leaked:?}"
    );
    cluster.check_invariants();
}

#[test]
fn a_standby_master_finishes_a_table_creation_its_killed_predecessor_began() {
    let mut cluster = TestCluster::start(2, 3);
    let splits: Vec<String> = (1..24).map(|i| format!("k{i:02}")).collect();
    let split_refs: Vec<&str> = splits.iter().map(String::as_str).collect();
    let port = cluster.master(0).port("rpc-master");
    let creating = {
        let splits: Vec<Bytes> = split_refs
            .iter()
            .map(|s| Bytes::from(s.to_string()))
            .collect();
        std::thread::spawn(move || {
            let client = basalt_rpc::cluster_service::ClusterClient::new(Duration::from_secs(60));
            let call = MasterCall::CreateTable {
                descriptor: TableDescriptor::new("big").family(ColumnFamilyDescriptor::new("cf")),
                splits,
                owner: None,
            };
            client.call::<_, MasterAnswer>(&format!("127.0.0.1:{port}"), "MasterCall", &call)
        })
    };
    // Kill the master once the creation is committed but (most likely)
    // before every region is open.
    let deadline = Instant::now() + Duration::from_secs(60);
    while cluster.catalog_json()["tables"].get("big").is_none() {
        assert!(Instant::now() < deadline, "the table was never committed");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _old = cluster.kill_master(0);
    let _ = creating.join().unwrap();
    // The standby takes over and finishes the procedure.
    cluster.wait_for_active_master(1);
    let (status, _) = cluster.wait_until_settled();
    assert!(
        status.procedures.is_empty(),
        "procedures left: {:?}",
        status.procedures
    );
    let regions = cluster.catalog_json()["tables"]["big"]["regions"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(regions, 24);
    let mut c = cluster.thrift(0);
    for k in 0..24 {
        put(&mut c, "big", &format!("k{k:02}-row")).unwrap();
    }
    assert_eq!(all_rows(&mut c, "big").len(), 24);
    cluster.check_invariants();
}

/// Writes `f:old` to row `r1` of table `t` (families `cf` and `f`),
/// deletes family `f` and adds it again (with the table disabled around
/// both alters when `disabled`), writes `f:new`, then kills the one region
/// server and answers the columns of `r1` as the server that replayed its
/// log serves them.
fn columns_replayed_after_a_family_is_deleted_and_added_again(disabled: bool) -> Vec<String> {
    // A log object is deleted once every region with edits in it has
    // flushed past them. A long group-commit window puts the deleted
    // family's edit into one object with an edit of "keep" that is never
    // flushed, so the object, and the edit, are still in the log the next
    // server replays.
    let mut cluster = TestCluster::builder()
        .servers(1)
        .wal_group_commit_ms(500)
        .start();
    create_table(&cluster, "keep", &[]);
    let call = MasterCall::CreateTable {
        descriptor: TableDescriptor::new("t")
            .family(ColumnFamilyDescriptor::new("cf"))
            .family(ColumnFamilyDescriptor::new("f")),
        splits: Vec::new(),
        owner: None,
    };
    assert!(matches!(cluster.master_call(call), Ok(MasterAnswer::Done)));
    let write = |client: &mut Client, table: &[u8], row: &[u8], column: &[u8], value: &[u8]| {
        client
            .mutate_rows(
                table,
                vec![basalt_thrift::types::BatchMutation {
                    row: Some(Bytes::copy_from_slice(row)),
                    mutations: Some(vec![basalt_thrift::client::put(column, value)]),
                }],
            )
            .unwrap()
    };
    std::thread::scope(|s| {
        let mut first = cluster.thrift(0);
        let mut second = cluster.thrift(0);
        s.spawn(move || write(&mut first, b"keep", b"k1", b"cf:q", b"never flushed"));
        s.spawn(move || {
            write(
                &mut second,
                b"t",
                b"r1",
                b"f:old",
                b"deleted with its family",
            )
        });
    });
    let mut client = cluster.thrift(0);
    write(&mut client, b"t", b"r1", b"cf:q", b"kept");
    let set_enabled = |enabled: bool| {
        let call = MasterCall::SetEnabled {
            table: "t".into(),
            enabled,
        };
        assert!(matches!(cluster.master_call(call), Ok(MasterAnswer::Done)));
    };
    if disabled {
        set_enabled(false);
    }
    for change in [
        basalt::FamilyChange::Delete("f".into()),
        basalt::FamilyChange::Add(ColumnFamilyDescriptor::new("f")),
    ] {
        let call = MasterCall::Alter {
            table: "t".into(),
            changes: vec![change],
        };
        assert!(
            matches!(cluster.master_call(call), Ok(MasterAnswer::Done)),
            "alter"
        );
    }
    if disabled {
        set_enabled(true);
    }
    write(
        &mut client,
        b"t",
        b"r1",
        b"f:new",
        b"written after the re-add",
    );
    let columns = |client: &mut Client| -> Vec<String> {
        let rows = client.get_row(b"t", b"r1").unwrap();
        rows.iter()
            .flat_map(|r| r.columns.iter().flatten())
            .map(|(c, _)| String::from_utf8_lossy(c).into_owned())
            .collect()
    };
    assert_eq!(columns(&mut client), ["cf:q", "f:new"]);

    cluster.start_region_server();
    cluster.wait_for_live_servers(2);
    let victim = cluster.server(0).name.clone();
    let _killed = cluster.kill_server(0);
    cluster.wait_until_settled_without(&victim);
    let mut reader = cluster.thrift(1);
    assert!(all_rows(&mut reader, "keep").contains("k1"));
    let replayed = columns(&mut reader);
    cluster.check_invariants();
    replayed
}

#[test]
fn a_family_deleted_and_added_again_gets_none_of_its_old_cells_back_when_a_killed_servers_log_is_replayed(
) {
    // The log replayed on the new server holds `f:old`, written before
    // the family was deleted: the family added again starts above it.
    assert_eq!(
        columns_replayed_after_a_family_is_deleted_and_added_again(false),
        ["cf:q", "f:new"]
    );
}

#[test]
fn a_family_deleted_and_added_again_while_its_table_is_disabled_stays_empty_of_old_cells_after_a_replay(
) {
    assert_eq!(
        columns_replayed_after_a_family_is_deleted_and_added_again(true),
        ["cf:q", "f:new"]
    );
}
