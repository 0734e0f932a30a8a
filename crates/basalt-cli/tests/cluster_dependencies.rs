//! Chaos tests of what cluster mode depends on: a ZooKeeper ensemble whose
//! leader restarts, and object storage (S3 on moto) that stops answering.
//! Real `basalt master` and `basalt regionserver` processes on loopback,
//! under a Thrift write load. Neither failure is a reason to move a region
//! or to declare a server dead, so each test checks that nothing of the
//! sort happened (the catalog's assignment is unchanged, the master never
//! listed a dead server, every process still runs), that every
//! acknowledged write is readable, and the cluster invariants. Timings are
//! printed for the record, never asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use basalt::cluster::{MasterAnswer, MasterCall};
use basalt::{ColumnFamilyDescriptor, TableDescriptor};
use bytes::Bytes;

#[path = "common/cluster.rs"]
mod cluster_support;
use cluster_support::{all_rows, moto, Load, LoadResult, StatusSeen, TestCluster};

/// One cluster at a time: each test runs a ZooKeeper (or three), moto and
/// four `basalt` processes, and two such clusters on a 2-core machine
/// would starve each other's ZooKeeper sessions (a cause of failure these
/// tests do not mean to test).
static ONE_CLUSTER_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_cluster_at_a_time() -> MutexGuard<'static, ()> {
    // A test that failed while holding the lock poisons it; the others
    // still run.
    ONE_CLUSTER_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

const SPLITS: &[&str] = &["r0-5", "r1", "r1-5", "r2", "r2-5", "r3", "r3-5"];

/// Hang guard only.
const LIMIT: Duration = Duration::from_secs(120);

fn create_table(cluster: &TestCluster, name: &str) {
    let call = MasterCall::CreateTable {
        descriptor: TableDescriptor::new(name).family(ColumnFamilyDescriptor::new("cf")),
        splits: SPLITS.iter().map(|s| Bytes::from(s.to_string())).collect(),
        owner: None,
    };
    match cluster.master_call(call) {
        Ok(MasterAnswer::Done) => {}
        other => panic!("create {name}: {other:?}"),
    }
}

/// The checks both failures share: nothing moved, nobody was declared
/// dead or fenced, nothing stopped, nothing acknowledged was lost, and the
/// invariants hold.
fn check_nothing_moved_and_nothing_lost(
    cluster: &mut TestCluster,
    assignment_before: &std::collections::BTreeMap<(String, String), String>,
    seen: &StatusSeen,
    load: &LoadResult,
) {
    let exited = cluster.exited_processes();
    assert!(exited.is_empty(), "processes stopped: {exited:?}");
    assert!(
        seen.dead_servers.is_empty(),
        "the master declared servers dead: {:?}",
        seen.dead_servers
    );
    assert!(seen.answers > 0, "the master's status never answered");
    for proc in cluster.masters.iter().chain(&cluster.servers).flatten() {
        assert!(
            !proc.logged("fenced"),
            "{} logged that something was fenced",
            proc.name
        );
    }
    assert_eq!(
        &cluster.assignment(),
        assignment_before,
        "regions moved without cause"
    );
    let mut reader = cluster.thrift(1);
    let present = all_rows(&mut reader, "t");
    let lost: Vec<&String> = load.acknowledged.difference(&present).collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged writes lost, e.g. {:?}",
        lost.len(),
        load.acknowledged.len(),
        &lost[..lost.len().min(5)]
    );
    cluster.check_invariants();
}

/// Waits until the load has a write acknowledged after `since`; when.
fn first_acknowledged_after(load: &Load, since: Instant) -> Instant {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(at) = load.last_acknowledged().filter(|at| *at > since) {
            return at;
        }
        assert!(Instant::now() < deadline, "no write was acknowledged again");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every process's ZooKeeper session timeout in the leader test. When the
/// leader dies, the followers drop their clients and elect a new leader;
/// every session survives only if its client reconnects before the
/// session times out. The client gives up on its own after 7/5 of the
/// timeout without an answer, and the new leader restarts every session's
/// clock once it leads. An election here takes well under a second (a
/// 200 ms tick, loopback), but the JVMs share two cores with the cluster
/// and the writers, so 5 s leaves room several times over; the default 2 s
/// of the other chaos tests would not be a safe margin.
const ELECTION_SAFE_SESSION_MS: u64 = 5000;

#[test]
fn restarting_the_zookeeper_leader_under_load_moves_no_region_and_loses_no_acknowledged_write() {
    let _one = one_cluster_at_a_time();
    let mut cluster = TestCluster::builder()
        .masters(1)
        .servers(3)
        .ensemble(3)
        .session_timeout_ms(ELECTION_SAFE_SESSION_MS)
        .start();
    create_table(&cluster, "t");
    cluster.check_invariants();
    let assignment_before = cluster.assignment();
    let watch = cluster.watch_status();
    let load = Load::start(&cluster, "t", &[0, 1, 2, 0, 1, 2]);
    load.wait_for(300);

    let old_leader = cluster.ensemble().leader();
    let log_marks = log_lengths(&cluster);
    let before_stop = load.count();
    let stopped_at = Instant::now();
    cluster.ensemble().stop(old_leader);
    // A new leader among the other two.
    let (new_leader, elected_at) = loop {
        if let Some(i) = cluster.ensemble().try_leader() {
            break (i, Instant::now());
        }
        assert!(
            stopped_at.elapsed() < LIMIT,
            "no new leader was elected; the ensemble's logs:\n{}",
            cluster.ensemble().log()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let during_election = load.count() - before_stop;
    cluster.ensemble().start_server(old_leader);
    let rejoined_at = Instant::now();
    // Writes go on with the old leader back as a follower.
    load.wait_for(load.count() + 300);
    let result = load.stop();
    // Long enough after the restart for a master that had lost a server's
    // znode to have acted on it.
    std::thread::sleep(Duration::from_millis(2 * ELECTION_SAFE_SESSION_MS));
    let seen = watch.stop();
    let disconnected = longest_disconnection(&cluster, &log_marks);
    eprintln!(
        "ZOOKEEPER LEADER TIMELINE: server {old_leader} (the leader) killed; server {new_leader} \
         leads after {:.2} s ({during_election} writes acknowledged meanwhile); the longest a \
         process's session was disconnected: {disconnected:.2} s; the old leader back and \
         serving at {:.2} s; writes acknowledged {before_stop} before the kill, {} in all; {} \
         failed; longest write call {:.2} s; master status polls: {} answered, {} unanswered, \
         {} with a region in transition",
        (elected_at - stopped_at).as_secs_f64(),
        (rejoined_at - stopped_at).as_secs_f64(),
        result.acknowledged.len(),
        result.failures.len(),
        result.longest_call.as_secs_f64(),
        seen.answers,
        seen.unanswered,
        seen.in_transition,
    );
    for failure in result.failures.iter().take(5) {
        eprintln!("  a failed write: {}", failure.error);
    }
    assert_ne!(new_leader, old_leader);
    for proc in cluster.masters.iter().chain(&cluster.servers).flatten() {
        assert!(
            !proc.logged("session expired") && !proc.logged("session ended"),
            "{} lost its ZooKeeper session",
            proc.name
        );
    }
    check_nothing_moved_and_nothing_lost(&mut cluster, &assignment_before, &seen, &result);
}

/// How many lines each master and region server has logged so far.
fn log_lengths(cluster: &TestCluster) -> Vec<usize> {
    cluster
        .masters
        .iter()
        .chain(&cluster.servers)
        .flatten()
        .map(|proc| proc.lines.lock().unwrap().len())
        .collect()
}

/// The longest time any process's ZooKeeper client spent disconnected
/// after `marks` ([`log_lengths`]), from the client's own log lines
/// ("enter state Disconnected", then "succeeds to establish session"), in
/// seconds; 0 when none disconnected.
fn longest_disconnection(cluster: &TestCluster, marks: &[usize]) -> f64 {
    /// Seconds into the day of a log line's timestamp
    /// (`2026-01-02T03:04:05.678901Z ...`).
    fn seconds(line: &str) -> Option<f64> {
        let time = line.split_whitespace().next()?.split('T').nth(1)?;
        let mut parts = time.trim_end_matches('Z').split(':');
        let h: f64 = parts.next()?.parse().ok()?;
        let m: f64 = parts.next()?.parse().ok()?;
        let s: f64 = parts.next()?.parse().ok()?;
        Some(h * 3600.0 + m * 60.0 + s)
    }
    let mut longest: f64 = 0.0;
    let procs = cluster.masters.iter().chain(&cluster.servers).flatten();
    for (proc, &mark) in procs.zip(marks) {
        let lines = proc.lines.lock().unwrap();
        let mut since = None;
        for line in lines.iter().skip(mark) {
            if line.contains("enter state Disconnected") {
                since = since.or_else(|| seconds(line));
            } else if line.contains("succeeds to establish session") {
                if let (Some(from), Some(to)) = (since.take(), seconds(line)) {
                    // Across midnight the clock of the day starts again.
                    longest = longest.max((to - from).rem_euclid(86_400.0));
                }
            }
        }
    }
    longest
}

/// `[storage] request_timeout_ms` in the storage tests: how long one call
/// to S3 may take before it fails.
const REQUEST_BOUND_MS: u64 = 4000;

/// The object store (moto) is frozen for `pause` while writers write,
/// then thawed: see the two tests below.
fn freeze_the_store_under_load(test: &str, pause: Duration) {
    let Some(mut moto) = moto::start_or_skip(test) else {
        return;
    };
    let _one = one_cluster_at_a_time();
    let mut cluster = TestCluster::builder()
        .masters(1)
        .servers(3)
        .s3(&moto)
        .storage_request_timeout_ms(REQUEST_BOUND_MS)
        .start();
    create_table(&cluster, "t");
    cluster.check_invariants();
    let names_before: Vec<String> = cluster
        .servers
        .iter()
        .flatten()
        .map(|p| p.name.clone())
        .collect();
    let assignment_before = cluster.assignment();
    let watch = cluster.watch_status();
    let load = Load::start(&cluster, "t", &[0, 1, 2, 0, 1, 2]);
    load.wait_for(300);

    let before_pause = load.count();
    let failures_before = load.failure_count();
    moto.pause();
    std::thread::sleep(pause);
    let during_pause = load.count() - before_pause;
    moto.resume();
    let resumed_at = Instant::now();
    let first_write_after = first_acknowledged_after(&load, resumed_at);
    load.wait_for(load.count() + 300);
    let result = load.stop();
    let seen = watch.stop();

    let failed: Vec<_> = result.failures[failures_before..].to_vec();
    let mut messages: Vec<&str> = failed.iter().map(|f| f.error.as_str()).collect();
    messages.sort_unstable();
    messages.dedup();
    eprintln!(
        "OBJECT STORE TIMELINE: moto frozen for {:.2} s (request bound {:.1} s); {during_pause} \
         writes acknowledged while frozen (calls already past the store); first write \
         acknowledged {:.2} s after the thaw; {} writes failed, after waits of up to {:.2} s; \
         longest write call {:.2} s; {} acknowledged in all; master status polls: {} answered, \
         {} unanswered",
        pause.as_secs_f64(),
        Duration::from_millis(REQUEST_BOUND_MS).as_secs_f64(),
        (first_write_after - resumed_at).as_secs_f64(),
        failed.len(),
        failed
            .iter()
            .map(|f| f.took)
            .max()
            .unwrap_or_default()
            .as_secs_f64(),
        result.longest_call.as_secs_f64(),
        result.acknowledged.len(),
        seen.answers,
        seen.unanswered,
    );
    for message in messages.iter().take(5) {
        eprintln!("  a failed write said: {message}");
    }
    // A write that fails says why: the log or the storage it could not
    // reach in time.
    for message in &messages {
        assert!(
            message.contains("write-ahead log") || message.contains("storage"),
            "a write failed without naming the storage: {message}"
        );
    }
    // Nothing restarted: the same servers, under the same names (a
    // restarted server would have claimed a new log, so a new name).
    let names_after: Vec<String> = cluster
        .servers
        .iter()
        .flatten()
        .map(|p| p.name.clone())
        .collect();
    assert_eq!(names_after, names_before);
    let live: Vec<String> = cluster
        .status()
        .servers
        .into_iter()
        .map(|s| s.name)
        .collect();
    for name in &names_before {
        assert!(live.contains(name), "{name} is no longer live: {live:?}");
    }
    check_nothing_moved_and_nothing_lost(&mut cluster, &assignment_before, &seen, &result);
}

#[test]
fn a_store_frozen_for_less_than_the_request_bound_stalls_writes_and_loses_nothing() {
    // Hundreds of group-commit windows (5 ms), well inside the 4 s bound.
    freeze_the_store_under_load(
        "a_store_frozen_for_less_than_the_request_bound_stalls_writes_and_loses_nothing",
        Duration::from_millis(1500),
    );
}

#[test]
fn a_store_frozen_past_the_request_bound_fails_writes_clearly_and_service_resumes_on_thaw() {
    // Twice the 4 s bound: log writes time out and fail their batches.
    freeze_the_store_under_load(
        "a_store_frozen_past_the_request_bound_fails_writes_clearly_and_service_resumes_on_thaw",
        Duration::from_secs(8),
    );
}
