//! Secondary indexes in a cluster (issue 36): real `basalt master` and
//! three `basalt regionserver` processes, a real ZooKeeper, shared storage
//! in a directory. Sixteen writers move rows between index keys while one
//! region server is killed with SIGKILL; afterwards the index must keep
//! its invariants as the crash left it, and equal a rebuild from the data
//! once the check's repair has settled the rows the crash left
//! unverified. Timings are printed for the record, never asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt::admin::{AdminReply, AdminRequest};
use basalt::cluster::{MasterAnswer, MasterCall};
use basalt::index::IndexCheckReport;
use basalt::{
    ColumnFamilyDescriptor, IndexColumn, IndexDescriptor, IndexTransform, TableDescriptor,
};
use basalt_thrift::client::put;
use basalt_thrift::types::BatchMutation;
use basalt_thrift::Client;
use bytes::Bytes;

#[path = "common/cluster.rs"]
mod cluster_support;
use cluster_support::TestCluster;

const WRITERS: usize = 16;
/// Rows each writer rewrites again and again, so keys keep moving.
const ROWS_PER_WRITER: u64 = 24;

fn connect(port: u16) -> Client {
    let c = Client::connect(
        ("127.0.0.1", port),
        false,
        basalt_thrift::Protocol::Binary { strict: true },
    )
    .unwrap();
    c.set_timeout(Some(Duration::from_secs(120))).unwrap();
    c
}

fn admin(cluster: &TestCluster, request: AdminRequest) -> AdminReply {
    let mut client = cluster.thrift(0);
    client.admin(request).unwrap()
}

fn check(cluster: &TestCluster, index: &str, repair: bool) -> IndexCheckReport {
    match admin(
        cluster,
        AdminRequest::CheckIndex {
            table: "orders".into(),
            index: index.into(),
            repair,
        },
    ) {
        AdminReply::IndexCheck(report) => report,
        other => panic!("check of {index}: {other:?}"),
    }
}

/// Writers over Thrift on the gateways of `servers`: each rewrites its
/// rows with a new buyer and time, and now and then deletes one.
struct Writers {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Writers {
    fn start(cluster: &TestCluster, servers: &[usize]) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        for writer in 0..WRITERS {
            let port = cluster
                .server(servers[writer % servers.len()])
                .port("thrift");
            let (stop, done, failed) = (Arc::clone(&stop), Arc::clone(&done), Arc::clone(&failed));
            threads.push(std::thread::spawn(move || {
                let mut c = connect(port);
                let mut i = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    // Row keys spread over every region of the split table.
                    let row = format!("{}-w{writer:02}-{:03}", i % 4, i % ROWS_PER_WRITER);
                    let result = if i % 11 == 10 {
                        c.delete_all_row(b"orders", row.as_bytes())
                    } else {
                        let buyer = format!("buyer-{}", (i * 7 + writer as u64) % 13);
                        let ts = format!("{i:08}");
                        c.mutate_rows(
                            b"orders",
                            vec![BatchMutation {
                                row: Some(Bytes::from(row)),
                                mutations: Some(vec![
                                    put(b"o:buyer", buyer.as_bytes()),
                                    put(b"o:ts", ts.as_bytes()),
                                    put(b"o:total", format!("{}", i % 100).as_bytes()),
                                ]),
                            }],
                        )
                    };
                    match result {
                        Ok(()) => {
                            done.fetch_add(1, Ordering::SeqCst);
                            i += 1;
                        }
                        Err(_) => {
                            failed.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(50));
                            c = connect(port);
                        }
                    }
                }
            }));
        }
        Writers {
            stop,
            done,
            failed,
            threads,
        }
    }

    fn wait_for(&self, at_least: u64) {
        let deadline = Instant::now() + Duration::from_secs(180);
        while self.done.load(Ordering::SeqCst) < at_least {
            assert!(
                Instant::now() < deadline,
                "the writers never reached {at_least} writes"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop(self) -> (u64, u64) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads {
            t.join().unwrap();
        }
        (
            self.done.load(Ordering::SeqCst),
            self.failed.load(Ordering::SeqCst),
        )
    }
}

#[test]
fn a_region_server_killed_under_sixteen_writers_leaves_every_index_equal_to_its_rebuild() {
    let mut cluster = TestCluster::start(1, 3);
    let call = MasterCall::CreateTable {
        descriptor: TableDescriptor::new("orders").family(ColumnFamilyDescriptor::new("o")),
        splits: ["1", "2", "3"].iter().map(|s| Bytes::from(*s)).collect(),
        owner: None,
    };
    assert!(matches!(cluster.master_call(call), Ok(MasterAnswer::Done)));
    for (name, columns) in [
        (
            "by_buyer",
            vec![
                IndexColumn::new("o", "buyer"),
                IndexColumn::new("o", "ts").transform(IndexTransform::Reversed),
            ],
        ),
        (
            "by_total",
            vec![IndexColumn::new("o", "total").transform(IndexTransform::PadLeft(3))],
        ),
    ] {
        let index = IndexDescriptor::new(name, columns).cover("o", "ts");
        let reply = admin(
            &cluster,
            AdminRequest::CreateIndex {
                table: "orders".into(),
                index,
            },
        );
        assert!(matches!(reply, AdminReply::IndexBuilt { .. }), "{reply:?}");
    }
    // The index tables' regions are spread like any table's, so index
    // writes cross servers.
    cluster.check_invariants();

    let writers = Writers::start(&cluster, &[0, 1]);
    writers.wait_for(600);
    let victim = cluster.server(2).name.clone();
    // What the victim serves: data regions (whose writes it keeps the
    // indexes of) or index regions (which other servers' writes reach).
    let catalog = cluster.catalog_json();
    let held: Vec<String> = ["orders", "orders.by_buyer", "orders.by_total"]
        .iter()
        .map(|table| {
            let regions = catalog["tables"][*table]["regions"].as_array().unwrap();
            let on_victim = regions
                .iter()
                .filter(|r| r["server"].as_str() == Some(victim.as_str()))
                .count();
            format!("{on_victim} of {} regions of {table}", regions.len())
        })
        .collect();
    eprintln!("THE VICTIM {victim} SERVES {}", held.join(", "));
    assert!(
        held.iter().any(|h| !h.starts_with("0 of")),
        "the balancer gave the victim no region"
    );
    let killed_at = Instant::now();
    let before_kill = writers.done.load(Ordering::SeqCst);
    let _killed = cluster.kill_server(2);
    let (_, settled_at) = cluster.wait_until_settled_without(&victim);
    writers.wait_for(writers.done.load(Ordering::SeqCst) + 600);
    let (done, failed) = writers.stop();
    eprintln!(
        "INDEXES UNDER A KILL: {before_kill} writes acknowledged before the kill of {victim}, {done} in all, {failed} attempts failed; every region open again after {:.2} s",
        (settled_at - killed_at).as_secs_f64()
    );
    cluster.check_invariants();

    for index in ["by_buyer", "by_total"] {
        let as_left = check(&cluster, index, false);
        eprintln!(
            "INDEX {index} AS THE CRASH LEFT IT: {} data rows, {} index rows, {} unverified current, {} unverified stale",
            as_left.data_rows,
            as_left.index_rows,
            as_left.unverified_current.len(),
            as_left.unverified_stale.len()
        );
        assert!(
            as_left.is_consistent(),
            "index {index} breaks its invariants after the kill: {as_left:?}"
        );
        check(&cluster, index, true);
        let repaired = check(&cluster, index, false);
        assert!(
            repaired.equals_rebuild(),
            "index {index} differs from its rebuild after the repair: {repaired:?}"
        );
        assert!(repaired.data_rows > 0);
    }
}
