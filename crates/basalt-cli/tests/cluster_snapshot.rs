//! Snapshots in cluster mode survive what kills a process mid-way
//! (docs/snapshots.md, "The snapshot procedure"): a master killed with
//! SIGKILL while it takes one leaves a marker its standby completes, and
//! the client's request sent again with its nonce is answered as done; a
//! region server killed mid-snapshot fails an attempt, and the snapshot
//! completes once its regions reopen elsewhere. Either way no half
//! snapshot is listed and a clone reads back every acknowledged row.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use basalt::cluster::{MasterAnswer, MasterCall};
use basalt::{ColumnFamilyDescriptor, Nonce, TableDescriptor};
use basalt_rpc::cluster_service::ClusterClient;
use bytes::Bytes;

#[path = "common/cluster.rs"]
mod cluster_support;
use cluster_support::{all_rows, thrift_put as put, TestCluster};

/// Table `t` over four regions, with 200 acknowledged rows.
fn table_with_rows(cluster: &TestCluster) -> BTreeSet<String> {
    let call = MasterCall::CreateTable {
        descriptor: TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")),
        splits: ["r050", "r100", "r150"]
            .iter()
            .map(|s| Bytes::from(s.to_string()))
            .collect(),
        owner: None,
    };
    assert!(matches!(cluster.master_call(call), Ok(MasterAnswer::Done)));
    cluster.wait_until_settled();
    let mut c = cluster.thrift(0);
    let rows: BTreeSet<String> = (0..200).map(|i| format!("r{i:03}")).collect();
    for row in &rows {
        put(&mut c, "t", row).unwrap();
    }
    rows
}

fn snapshot_call(nonce: u64) -> MasterCall {
    MasterCall::Snapshot {
        table: "t".into(),
        name: "s".into(),
        skip_flush: false,
        ttl_secs: 0,
        owner: None,
        nonce: Some(Nonce { group: 77, nonce }),
    }
}

/// Sends `call` to the master at `port` from a thread of its own.
fn call_in_background(
    port: u16,
    call: MasterCall,
) -> std::thread::JoinHandle<basalt::Result<MasterAnswer>> {
    std::thread::spawn(move || {
        ClusterClient::new(Duration::from_secs(120)).call::<_, MasterAnswer>(
            &format!("127.0.0.1:{port}"),
            "MasterCall",
            &call,
        )
    })
}

fn storage_dir(cluster: &TestCluster) -> PathBuf {
    PathBuf::from(cluster.storage.strip_prefix("file://").unwrap())
}

/// Waits until the storage holds a pending snapshot marker.
fn wait_for_marker(cluster: &TestCluster) {
    let dir = storage_dir(cluster).join("snapshots");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pending = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .flatten()
                    .any(|e| e.path().extension().is_some_and(|x| x == "pending"))
            })
            .unwrap_or(false);
        if pending {
            return;
        }
        assert!(Instant::now() < deadline, "the snapshot never began");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn snapshot_names(cluster: &TestCluster) -> Vec<String> {
    match cluster.master_call(MasterCall::ListSnapshots { pattern: None }) {
        Ok(MasterAnswer::Snapshots { snapshots }) => {
            snapshots.into_iter().map(|s| s.name).collect()
        }
        other => panic!("list snapshots: {other:?}"),
    }
}

/// Clones snapshot `s` as `c` and answers its rows.
fn cloned_rows(cluster: &TestCluster) -> BTreeSet<String> {
    let call = MasterCall::CloneSnapshot {
        name: "s".into(),
        table: "c".into(),
    };
    assert!(matches!(cluster.master_call(call), Ok(MasterAnswer::Done)));
    cluster.wait_until_settled();
    all_rows(&mut cluster.thrift(0), "c")
}

#[test]
fn a_snapshot_whose_master_is_killed_midway_is_completed_by_the_standby() {
    let mut cluster = TestCluster::start(2, 2);
    let rows = table_with_rows(&cluster);
    // A paused region server holds the snapshot up in the middle.
    cluster.server(1).signal("STOP");
    let port = cluster.master(0).port("rpc-master");
    let taking = call_in_background(port, snapshot_call(1));
    wait_for_marker(&cluster);
    let _killed = cluster.kill_master(0);
    cluster.server(1).signal("CONT");
    assert!(
        taking.join().unwrap().is_err(),
        "its master died with the answer"
    );

    cluster.wait_for_active_master(1);
    let deadline = Instant::now() + Duration::from_secs(120);
    while snapshot_names(&cluster).is_empty() {
        assert!(Instant::now() < deadline, "the standby never completed it");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The client sends its request again, as HBase's does to a new master:
    // answered as done, not refused as a name taken.
    assert!(matches!(
        cluster.master_call(snapshot_call(1)),
        Ok(MasterAnswer::Done)
    ));
    assert_eq!(snapshot_names(&cluster), ["s"]);
    assert!(matches!(
        cluster.master_call(snapshot_call(2)),
        Err(basalt::Error::SnapshotExists(_))
    ));
    assert_eq!(cloned_rows(&cluster), rows);
    cluster.check_invariants();
}

#[test]
fn a_snapshot_whose_region_server_is_killed_midway_completes_once_its_regions_reopen() {
    let mut cluster = TestCluster::start(1, 3);
    let rows = table_with_rows(&cluster);
    let victim = cluster.server(2).name.clone();
    let held = cluster
        .status()
        .servers
        .iter()
        .find(|s| s.name == victim)
        .map_or(0, |s| s.regions.len());
    assert!(held > 0, "the balancer gave the victim no region");
    cluster.server(2).signal("STOP");
    let port = cluster.master(0).port("rpc-master");
    let started = Instant::now();
    let taking = call_in_background(port, snapshot_call(1));
    wait_for_marker(&cluster);
    let _killed = cluster.kill_server(2);
    let answer = taking.join().unwrap();
    eprintln!(
        "SNAPSHOT THROUGH A REGION SERVER'S DEATH: answered after {:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert!(matches!(answer, Ok(MasterAnswer::Done)), "{answer:?}");
    assert_eq!(snapshot_names(&cluster), ["s"]);
    assert_eq!(cloned_rows(&cluster), rows);
    cluster.check_invariants();
}
