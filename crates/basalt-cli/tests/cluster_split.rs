//! Split in a cluster of real processes (`basalt::cluster::split`): the
//! active master is killed with SIGKILL while a split it drives is under
//! way, and the standby that takes over finishes it or rolls it back.
//! Timings are never asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use basalt::cluster::{MasterAnswer, MasterCall};
use basalt::{ColumnFamilyDescriptor, TableDescriptor};
use basalt_thrift::Client;
use bytes::Bytes;

#[path = "common/cluster.rs"]
mod cluster_support;
use cluster_support::TestCluster;

fn put_batch(c: &mut Client, table: &str, rows: &[String]) {
    let batch = rows
        .iter()
        .map(|row| basalt_thrift::types::BatchMutation {
            row: Some(Bytes::from(row.clone())),
            mutations: Some(vec![basalt_thrift::client::put(b"cf:q", row.as_bytes())]),
        })
        .collect();
    c.mutate_rows(table.as_bytes(), batch).unwrap();
}

/// Every row, each once (a row read twice fails the test).
fn all_rows(c: &mut Client, table: &str) -> BTreeSet<String> {
    let id = c.scanner_open(table.as_bytes(), b"", &[]).unwrap();
    let rows: Vec<String> = c
        .scan_all(id, 1000)
        .unwrap()
        .into_iter()
        .map(|r| String::from_utf8(r.row.unwrap().to_vec()).unwrap())
        .collect();
    let distinct: BTreeSet<String> = rows.iter().cloned().collect();
    assert_eq!(distinct.len(), rows.len(), "a row was read twice");
    distinct
}

fn split_in_progress(cluster: &TestCluster) -> bool {
    cluster.catalog_json()["procedures"]
        .as_object()
        .is_some_and(|p| p.values().any(|p| p["kind"] == "split_region"))
}

#[test]
fn a_standby_master_finishes_or_rolls_back_a_split_its_killed_predecessor_drove() {
    let mut cluster = TestCluster::start(2, 3);
    let splits: Vec<Bytes> = ["r2", "r4", "r6"]
        .iter()
        .map(|s| Bytes::from(s.to_string()))
        .collect();
    let created = cluster.master_call(MasterCall::CreateTable {
        descriptor: TableDescriptor::new("s").family(ColumnFamilyDescriptor::new("cf")),
        splits,
        owner: None,
    });
    assert!(matches!(created, Ok(MasterAnswer::Done)), "{created:?}");
    let mut c = cluster.thrift(0);
    let written: Vec<String> = (0..4000).map(|i| format!("r{}-{i:05}", i % 8)).collect();
    for chunk in written.chunks(500) {
        put_batch(&mut c, "s", chunk);
    }
    let before = cluster.catalog_json()["tables"]["s"]["regions"]
        .as_array()
        .unwrap()
        .len();

    // Every region splits, one after the other, driven by master 0.
    let port = cluster.master(0).port("rpc-master");
    let splitting = std::thread::spawn(move || {
        let client = basalt_rpc::cluster_service::ClusterClient::new(Duration::from_secs(60));
        let call = MasterCall::SplitTable {
            table: "s".into(),
            key: None,
        };
        client.call::<_, MasterAnswer>(&format!("127.0.0.1:{port}"), "MasterCall", &call)
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut caught = false;
    while !splitting.is_finished() && Instant::now() < deadline {
        if split_in_progress(&cluster) {
            caught = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _old = cluster.kill_master(0);
    let answer = splitting.join().unwrap();
    eprintln!("SPLIT: caught in progress: {caught}; the killed master's answer: {answer:?}");

    // The standby takes over and finishes or rolls back.
    cluster.wait_for_active_master(1);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (status, _) = cluster.wait_until_settled();
        if status.procedures.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "procedures left: {:?}",
            status.procedures
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    cluster.check_invariants();
    let after = cluster.catalog_json()["tables"]["s"]["regions"]
        .as_array()
        .unwrap()
        .len();
    eprintln!("SPLIT: regions before {before}, after {after}");
    assert!(after >= before);

    let mut c = cluster.thrift(1);
    let expected: BTreeSet<String> = written.iter().cloned().collect();
    assert_eq!(all_rows(&mut c, "s"), expected);
    let more: Vec<String> = (0..200).map(|i| format!("r{}-late-{i}", i % 8)).collect();
    put_batch(&mut c, "s", &more);
    assert_eq!(all_rows(&mut c, "s").len(), written.len() + more.len());
    cluster.check_invariants();
}
