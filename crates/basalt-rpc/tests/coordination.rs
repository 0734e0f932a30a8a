//! Cluster coordination against the real ZooKeeper (Debian's package): the
//! master election, the region servers' liveness view, the catalog version
//! notification, the cluster znodes and their HBase encodings, and what a
//! session expiry does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../test-support/zookeeper.rs"]
mod zookeeper;

use std::collections::BTreeSet;
use std::time::Duration;

use basalt_rpc::coordination::{Coordinator, SessionState};
use basalt_rpc::proto::hbase::{ClusterId, ClusterUp, Master, MetaRegionServer, ServerName};
use basalt_rpc::zk::{decode_znode, with_tokio_spawner, RegionServerInfo, ZkConfig, ZkError};
use tokio::sync::watch;
use zookeeper::ZooKeeperServer;
use zookeeper_client::Client;

/// Limit for what happens in the background (a watch firing, a session
/// expiring): generous, as a hang guard only.
const EVENTUALLY: Duration = Duration::from_secs(120);

fn config(zk: &ZooKeeperServer, session_timeout_ms: u64) -> ZkConfig {
    ZkConfig {
        quorum: zk.connect_string(),
        session_timeout_ms,
        connect_timeout_ms: 30_000,
        ..ZkConfig::default()
    }
}

fn server(host: &str, port: u32, start_code: u64) -> ServerName {
    ServerName {
        host_name: host.to_owned(),
        port: Some(port),
        start_code: Some(start_code),
    }
}

async fn coordinator(zk: &ZooKeeperServer, session_timeout_ms: u64, name: &str) -> Coordinator {
    Coordinator::connect(&config(zk, session_timeout_ms), &format!("{name}@test"))
        .await
        .unwrap_or_else(|e| panic!("{name} connects: {e}"))
}

/// A separate session reading what HBase's clients would read.
async fn observer(zk: &ZooKeeperServer) -> Client {
    let quorum = zk.connect_string();
    with_tokio_spawner(tokio::runtime::Handle::current(), async move {
        Client::connector()
            .with_session_timeout(Duration::from_secs(30))
            .connect(&quorum)
            .await
    })
    .await
    .expect("the observer connects")
}

/// Data and ephemeral owner of a znode, `None` when it does not exist.
async fn read(client: &Client, znode: &str) -> Option<(Vec<u8>, i64)> {
    match client.get_data(znode).await {
        Ok((data, stat)) => Some((data, stat.ephemeral_owner)),
        Err(zookeeper_client::Error::NoNode) => None,
        Err(e) => panic!("reading {znode}: {e}"),
    }
}

async fn children(client: &Client, znode: &str) -> Vec<String> {
    let mut children = client
        .list_children(znode)
        .await
        .unwrap_or_else(|e| panic!("listing {znode}: {e}"));
    children.sort();
    children
}

/// Waits until the watched value satisfies `check`; panics naming `what`
/// after [`EVENTUALLY`].
async fn until<T: Clone>(
    receiver: &mut watch::Receiver<T>,
    what: &str,
    check: impl FnMut(&T) -> bool,
) -> T {
    tokio::time::timeout(EVENTUALLY, receiver.wait_for(check))
        .await
        .unwrap_or_else(|_| panic!("gave up waiting for: {what}"))
        .unwrap_or_else(|_| panic!("the channel closed while waiting for: {what}"))
        .clone()
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|name| (*name).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_candidate_becomes_active_and_a_second_waits_as_a_backup_until_the_first_closes()
{
    let zk = ZooKeeperServer::start();
    let first = coordinator(&zk, 10_000, "first").await;
    first.ensure_cluster_znodes("cluster-1").await.unwrap();
    let first_name = server("master-1.example", 16000, 1);
    first
        .run_for_master(&first_name, 16010)
        .await
        .expect("the first candidate runs")
        .wait_until_active()
        .await
        .expect("the first candidate becomes active at once");
    assert_eq!(
        first.active_master().await.unwrap(),
        Some(first_name.clone())
    );

    let second = coordinator(&zk, 10_000, "second").await;
    second.ensure_cluster_znodes("cluster-1").await.unwrap();
    let second_name = server("master-2.example", 16000, 2);
    let waiting = second
        .run_for_master(&second_name, 0)
        .await
        .expect("the second candidate runs");
    assert_eq!(
        waiting.backup_znode(),
        "/hbase/backup-masters/master-2.example,16000,2"
    );
    let client = observer(&zk).await;
    assert_eq!(
        children(&client, "/hbase/backup-masters").await,
        ["master-2.example,16000,2"]
    );
    let (data, owner) = read(&client, waiting.backup_znode())
        .await
        .expect("the backup znode");
    assert_eq!(owner, second.session_id(), "the backup znode is ephemeral");
    let backup: Master = decode_znode(&data).expect("a backup znode holds HBase's Master");
    assert_eq!(backup.master, Some(second_name.clone()));

    let mut seen_by_second = second.watch_active_master();
    until(
        &mut seen_by_second,
        "the second sees the first active",
        |m| m.as_ref() == Some(&first_name),
    )
    .await;
    let election = tokio::spawn(async move { waiting.wait_until_active().await });
    let (_, owner) = read(&client, "/hbase/master").await.expect("master");
    assert_eq!(owner, first.session_id(), "the first is still the master");
    assert!(
        !election.is_finished(),
        "the second waits while the first lives"
    );

    first.close().await;
    tokio::time::timeout(EVENTUALLY, election)
        .await
        .expect("the election ends")
        .expect("the election task")
        .expect("the second becomes active");
    let (data, owner) = read(&client, "/hbase/master").await.expect("master");
    assert_eq!(owner, second.session_id());
    let master: Master = decode_znode(&data).expect("Master");
    assert_eq!(master.master, Some(second_name.clone()));
    assert_eq!(master.info_port, Some(0));
    assert!(
        children(&client, "/hbase/backup-masters").await.is_empty(),
        "the new active master's backup znode is gone"
    );
    until(&mut seen_by_second, "the watch to name the second", |m| {
        m.as_ref() == Some(&second_name)
    })
    .await;
    second.close().await;
}

#[test]
fn a_backup_master_takes_over_when_the_active_masters_session_dies() {
    let zk = ZooKeeperServer::start();
    // The "process" of the active master: its own runtime, torn down
    // without closing the session, so ZooKeeper has to expire it.
    let doomed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let crashed = doomed.block_on(async {
        let crashing = coordinator(&zk, 1_000, "crashing").await;
        crashing.ensure_cluster_znodes("cluster-2").await.unwrap();
        crashing
            .run_for_master(&server("crashing.example", 16000, 1), 0)
            .await
            .unwrap()
            .wait_until_active()
            .await
            .expect("active");
        crashing
    });
    let crashed_session = crashed.session_id();
    // Forgetting skips Drop, which would close the session politely.
    std::mem::forget(crashed);
    doomed.shutdown_background();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let successor = coordinator(&zk, 30_000, "successor").await;
        successor.ensure_cluster_znodes("cluster-2").await.unwrap();
        let name = server("successor.example", 16000, 2);
        let candidate = successor.run_for_master(&name, 0).await.unwrap();
        let client = observer(&zk).await;
        tokio::time::timeout(EVENTUALLY, candidate.wait_until_active())
            .await
            .expect("the election ends")
            .expect("the successor becomes active once the crashed session expired");
        let (data, owner) = read(&client, "/hbase/master").await.expect("master");
        assert_ne!(owner, crashed_session);
        assert_eq!(owner, successor.session_id());
        assert_eq!(decode_znode::<Master>(&data).unwrap().master, Some(name));
        assert!(children(&client, "/hbase/backup-masters").await.is_empty());
        assert_eq!(*successor.session().borrow(), SessionState::Connected);
        successor.close().await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_waiting_master_ends_its_wait_and_removes_its_backup_znode() {
    let zk = ZooKeeperServer::start();
    let active = coordinator(&zk, 10_000, "active").await;
    active.ensure_cluster_znodes("cluster-3").await.unwrap();
    active
        .run_for_master(&server("active.example", 16000, 1), 0)
        .await
        .unwrap()
        .wait_until_active()
        .await
        .unwrap();
    let quitter = coordinator(&zk, 10_000, "quitter").await;
    let candidate = quitter
        .run_for_master(&server("quitter.example", 16000, 2), 0)
        .await
        .unwrap();
    let election = tokio::spawn(async move { candidate.wait_until_active().await });
    let mut state = quitter.session();
    quitter.close().await;
    assert_eq!(*state.borrow_and_update(), SessionState::Closed);
    let error = tokio::time::timeout(EVENTUALLY, election)
        .await
        .expect("the wait ends")
        .expect("the election task")
        .expect_err("a closed coordinator never becomes active");
    assert!(matches!(error, ZkError::SessionEnded { .. }), "{error}");
    assert!(error.to_string().contains("/hbase/master"), "{error}");
    let client = observer(&zk).await;
    assert!(children(&client, "/hbase/backup-masters").await.is_empty());
    active.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn region_servers_appear_in_the_watch_and_leave_when_closed_or_expired() {
    let mut zk = ZooKeeperServer::start();
    let master = coordinator(&zk, 30_000, "master").await;
    master.ensure_cluster_znodes("cluster-4").await.unwrap();
    let mut live = master.watch_region_servers();

    let steady = coordinator(&zk, 30_000, "steady").await;
    steady
        .register_region_server(&server("rs-1.example", 16020, 11), 16030)
        .await
        .expect("registers");
    // A session of 1 s: it expires while ZooKeeper is frozen below.
    let doomed = coordinator(&zk, 1_000, "doomed").await;
    let doomed_name = server("rs-2.example", 16020, 12);
    doomed
        .register_region_server(&doomed_name, 0)
        .await
        .expect("registers");
    until(&mut live, "both region servers to be seen", |servers| {
        *servers == names(&["rs-1.example,16020,11", "rs-2.example,16020,12"])
    })
    .await;
    let client = observer(&zk).await;
    let (data, owner) = read(&client, "/hbase/rs/rs-1.example,16020,11")
        .await
        .expect("the region server znode");
    assert_eq!(owner, steady.session_id(), "ephemeral, of its own session");
    let info: RegionServerInfo = decode_znode(&data).expect("RegionServerInfo");
    assert_eq!(info.info_port, Some(16030));
    let (data, _) = read(&client, "/hbase/rs/rs-2.example,16020,12")
        .await
        .expect("the region server znode");
    let info: RegionServerInfo = decode_znode(&data).expect("RegionServerInfo");
    assert_eq!(
        info.info_port,
        Some(-1),
        "no web UI is written as HBase's -1"
    );

    steady.close().await;
    until(&mut live, "the closed region server to leave", |servers| {
        *servers == names(&["rs-2.example,16020,12"])
    })
    .await;

    // Frozen for longer than the doomed session's timeout (its client
    // gives the session up 1.4 timeouts after the last answer), shorter
    // than the others' 30 s.
    let mut doomed_state = doomed.session();
    zk.pause();
    until(&mut doomed_state, "the doomed session to expire", |state| {
        *state == SessionState::Expired
    })
    .await;
    zk.resume();
    until(&mut live, "the expired region server to leave", |servers| {
        servers.is_empty()
    })
    .await;
    assert_eq!(
        *doomed.session().borrow(),
        SessionState::Expired,
        "expired is final"
    );
    let error = doomed
        .register_region_server(&doomed_name, 0)
        .await
        .expect_err("an expired coordinator never registers again");
    assert!(matches!(error, ZkError::SessionEnded { .. }), "{error}");
    assert_eq!(
        read(&client, "/hbase/rs/rs-2.example,16020,12").await,
        None,
        "nothing came back"
    );
    let mut master_state = master.session();
    until(
        &mut master_state,
        "the master's session to reconnect",
        |state| *state == SessionState::Connected,
    )
    .await;
    doomed.close().await;
    master.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_region_server_name_held_by_another_session_is_refused() {
    let zk = ZooKeeperServer::start();
    let first = coordinator(&zk, 10_000, "first").await;
    first.ensure_cluster_znodes("cluster-5").await.unwrap();
    let name = server("rs.example", 16020, 5);
    first.register_region_server(&name, 0).await.unwrap();
    first
        .register_region_server(&name, 16030)
        .await
        .expect("registering again on the same session rewrites it");
    let impostor = coordinator(&zk, 10_000, "impostor").await;
    let error = impostor
        .register_region_server(&name, 0)
        .await
        .expect_err("another session holds the name");
    assert!(
        matches!(error, ZkError::AlreadyRegistered { session, .. } if session == first.session_id()),
        "{error}"
    );
    let text = error.to_string();
    assert!(text.contains("/hbase/rs/rs.example,16020,5"), "{text}");
    assert!(text.contains(&zk.connect_string()), "{text}");

    let client = observer(&zk).await;
    let (data, owner) = read(&client, "/hbase/rs/rs.example,16020,5").await.unwrap();
    assert_eq!(owner, first.session_id());
    let info: RegionServerInfo = decode_znode(&data).unwrap();
    assert_eq!(info.info_port, Some(16030));

    let error = first
        .register_region_server(&server("", 16020, 5), 0)
        .await
        .expect_err("a server name without a host");
    assert!(matches!(error, ZkError::BadName { .. }), "{error}");
    impostor.close().await;
    first.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_version_published_by_one_coordinator_is_seen_by_anothers_watch() {
    let zk = ZooKeeperServer::start();
    let master = coordinator(&zk, 10_000, "master").await;
    master.ensure_cluster_znodes("cluster-6").await.unwrap();
    let region_server = coordinator(&zk, 10_000, "region-server").await;
    let mut seen = region_server.watch_catalog_version();

    master.publish_catalog_version(7).await.unwrap();
    until(&mut seen, "version 7", |version| *version == 7).await;
    let client = observer(&zk).await;
    let (data, owner) = read(&client, "/hbase/basalt/catalog").await.unwrap();
    assert_eq!(data, b"7", "decimal text");
    assert_eq!(owner, 0, "persistent");

    master
        .publish_catalog_version(5)
        .await
        .expect("an older version is no error");
    let (data, _) = read(&client, "/hbase/basalt/catalog").await.unwrap();
    assert_eq!(data, b"7", "the number never goes down");

    master.publish_catalog_version(9).await.unwrap();
    until(&mut seen, "version 9", |version| *version == 9).await;

    let late = coordinator(&zk, 10_000, "late").await;
    let mut late_seen = late.watch_catalog_version();
    until(&mut late_seen, "a new watch to start at 9", |version| {
        *version == 9
    })
    .await;
    late.close().await;
    region_server.close().await;
    master.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensuring_the_cluster_znodes_twice_is_fine_and_hbaseid_decodes_to_the_cluster_id() {
    let zk = ZooKeeperServer::start();
    let one = coordinator(&zk, 10_000, "one").await;
    let two = coordinator(&zk, 10_000, "two").await;
    // At once from two processes, then again.
    let (a, b) = tokio::join!(
        one.ensure_cluster_znodes("cluster-7"),
        two.ensure_cluster_znodes("cluster-7")
    );
    a.expect("the first process");
    b.expect("the second process");
    one.ensure_cluster_znodes("cluster-7")
        .await
        .expect("again is fine");

    let client = observer(&zk).await;
    assert_eq!(
        children(&client, "/hbase").await,
        [
            "backup-masters",
            "basalt",
            "hbaseid",
            "rs",
            "running",
            "table"
        ]
    );
    let (data, owner) = read(&client, "/hbase/hbaseid").await.unwrap();
    assert_eq!(owner, 0, "persistent");
    let id: ClusterId = decode_znode(&data).expect("ClusterId");
    assert_eq!(id.cluster_id, "cluster-7");
    let (data, _) = read(&client, "/hbase/running").await.unwrap();
    let up: ClusterUp = decode_znode(&data).expect("ClusterUp");
    assert!(up.start_date.contains(" UTC "), "{}", up.start_date);

    let error = two
        .ensure_cluster_znodes("another-cluster")
        .await
        .expect_err("another cluster's id is refused");
    assert!(matches!(error, ZkError::BadZnode { .. }), "{error}");
    let text = error.to_string();
    assert!(text.contains("/hbase/hbaseid"), "{text}");
    assert!(text.contains("cluster-7"), "{text}");
    one.close().await;
    two.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_master_and_meta_znodes_decode_as_hbase_messages() {
    let zk = ZooKeeperServer::start();
    let coordinator = coordinator(&zk, 10_000, "writer").await;
    coordinator
        .ensure_cluster_znodes("cluster-8")
        .await
        .unwrap();
    let me = server("hmaster.example", 16000, 1_700_000_000_000);
    coordinator
        .run_for_master(&me, 16010)
        .await
        .unwrap()
        .wait_until_active()
        .await
        .unwrap();
    let meta_server = server("meta-rs.example", 16020, 3);
    coordinator
        .set_meta_region_server(&server("old-rs.example", 16020, 2))
        .await
        .unwrap();
    coordinator
        .set_meta_region_server(&meta_server)
        .await
        .expect("overwrites");

    let client = observer(&zk).await;
    let (data, owner) = read(&client, "/hbase/master").await.unwrap();
    assert_eq!(owner, coordinator.session_id(), "ephemeral");
    // HBase's envelope: 0xFF, the identifier's length and the identifier.
    assert_eq!(data[0], 0xFF);
    let length = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
    assert_eq!(&data[5..5 + length], b"writer@test");
    let master: Master = decode_znode(&data).expect("HBase's Master");
    assert_eq!(
        master,
        Master {
            master: Some(me.clone()),
            rpc_version: Some(0),
            info_port: Some(16010),
        }
    );
    let (data, owner) = read(&client, "/hbase/meta-region-server").await.unwrap();
    assert_eq!(owner, 0, "persistent");
    let meta: MetaRegionServer = decode_znode(&data).expect("MetaRegionServer");
    assert_eq!(meta.server, Some(meta_server));
    assert_eq!(meta.state, Some(3), "OPEN");
    assert_eq!(coordinator.active_master().await.unwrap(), Some(me));
    coordinator.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn published_addresses_are_listed_by_role_and_go_with_their_session() {
    let zk = ZooKeeperServer::start();
    let gateway = coordinator(&zk, 10_000, "gateway").await;
    gateway.ensure_cluster_znodes("cluster-9").await.unwrap();
    let other = coordinator(&zk, 10_000, "other").await;
    let gateway_name = server("gw.example", 16020, 1);
    gateway
        .publish_address(&gateway_name, "thrift", "gw.example:9090")
        .await
        .unwrap();
    other
        .publish_address(&server("other.example", 16020, 2), "thrift", "other:9090")
        .await
        .unwrap();
    gateway
        .publish_address(&gateway_name, "rest", "gw.example:8080")
        .await
        .unwrap();
    let thrift = gateway.addresses("thrift").await.unwrap();
    assert_eq!(
        thrift.into_iter().collect::<Vec<_>>(),
        [
            (
                "gw.example,16020,1".to_owned(),
                "gw.example:9090".to_owned()
            ),
            ("other.example,16020,2".to_owned(), "other:9090".to_owned()),
        ]
    );
    assert!(other.addresses("web").await.unwrap().is_empty());
    let error = other
        .addresses("catalog")
        .await
        .expect_err("catalog is not a role");
    assert!(matches!(error, ZkError::BadName { .. }), "{error}");

    other.close().await;
    let thrift = gateway.addresses("thrift").await.unwrap();
    assert_eq!(thrift.keys().collect::<Vec<_>>(), ["gw.example,16020,1"]);
    gateway.close().await;
}
