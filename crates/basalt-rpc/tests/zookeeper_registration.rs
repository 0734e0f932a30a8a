//! ZooKeeper registration against the real ZooKeeper (Debian's package):
//! the znodes native HBase clients read, their encodings, their lifetimes,
//! and the recovery after ZooKeeper goes away.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../test-support/zookeeper.rs"]
mod zookeeper;

use std::future::Future;
use std::time::{Duration, Instant};

use basalt_rpc::context::HBASE_VERSION;
use basalt_rpc::proto::hbase::{ClusterId, ClusterUp, Master, MetaRegionServer};
use basalt_rpc::zk::{
    decode_znode, with_tokio_spawner, RegionServerInfo, ZkConfig, ZkError, ZkRegistration,
    ZnodePaths,
};
use basalt_rpc::Identity;
use zookeeper::ZooKeeperServer;
use zookeeper_client::Client;

/// Polling limit for what happens in the background (session expiry,
/// re-registration): generous, as a hang guard only.
const EVENTUALLY: Duration = Duration::from_secs(120);

fn identity(host: &str, master_port: u16, region_server_port: u16) -> Identity {
    Identity {
        host: host.to_owned(),
        master_port,
        region_server_port,
        start_code: 1_700_000_000_000 + u64::from(master_port),
        cluster_id: format!("cluster-of-{host}"),
    }
}

fn config(zk: &ZooKeeperServer, session_timeout_ms: u64) -> ZkConfig {
    ZkConfig {
        quorum: zk.connect_string(),
        session_timeout_ms,
        connect_timeout_ms: 30_000,
        ..ZkConfig::default()
    }
}

/// A separate session reading what clients would read.
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

/// Polls `check` until it holds; panics naming `what` after [`EVENTUALLY`].
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(
            started.elapsed() < EVENTUALLY,
            "gave up waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What the Python client hbase-driver does with `/hbase/master` and
/// `/hbase/meta-region-server`: 0xFF, a big-endian length, skip that many
/// bytes, then `PBUF`.
fn hbase_driver_payload(data: &[u8]) -> &[u8] {
    assert_eq!(data[0], 0xFF, "the envelope's magic byte");
    let id_length = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
    let rest = &data[5 + id_length..];
    assert_eq!(
        &rest[..4],
        b"PBUF",
        "the protobuf magic after the identifier"
    );
    &rest[4..]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_znode_is_present_in_the_encoding_hbase_clients_read() {
    let zk = ZooKeeperServer::start();
    let me = identity("rs-host.example", 16000, 16020);
    let registration = ZkRegistration::register(&config(&zk, 10_000), &me)
        .await
        .expect("registers");
    let session = registration.session_id().expect("a session");
    let paths = ZnodePaths::new("/hbase");
    let client = observer(&zk).await;

    let (data, owner) = read(&client, &paths.master)
        .await
        .expect("the master znode");
    assert_eq!(owner, session, "the master znode is ephemeral and ours");
    let identifier_length = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
    let identifier = String::from_utf8_lossy(&data[5..5 + identifier_length]).into_owned();
    assert_eq!(
        identifier,
        format!("{}@rs-host.example", std::process::id())
    );
    let master: Master = prost::Message::decode(hbase_driver_payload(&data)).expect("Master");
    let server = master.master.expect("the master's ServerName");
    assert_eq!(server.host_name, "rs-host.example");
    assert_eq!(server.port, Some(16000));
    assert_eq!(server.start_code, Some(me.start_code));
    assert_eq!(master.rpc_version, Some(0));

    let (data, owner) = read(&client, &paths.meta_region_server)
        .await
        .expect("the meta-region-server znode");
    assert_eq!(owner, 0, "meta-region-server is persistent");
    let meta: MetaRegionServer =
        prost::Message::decode(hbase_driver_payload(&data)).expect("MetaRegionServer");
    let server = meta.server.expect("the meta server's ServerName");
    assert_eq!(server.host_name, "rs-host.example");
    assert_eq!(server.port, Some(16020));
    assert_eq!(server.start_code, Some(me.start_code));
    assert_eq!(meta.state, Some(3), "hbase:meta is OPEN");

    let (data, owner) = read(&client, &paths.cluster_id).await.expect("hbaseid");
    assert_eq!(owner, 0, "hbaseid is persistent");
    let cluster: ClusterId = decode_znode(&data).expect("ClusterId");
    assert_eq!(cluster.cluster_id, "cluster-of-rs-host.example");

    let (data, owner) = read(&client, &paths.running).await.expect("running");
    assert_eq!(owner, 0, "running is persistent");
    let up: ClusterUp = decode_znode(&data).expect("ClusterUp");
    assert!(up.start_date.ends_with(" 2023"), "{}", up.start_date);

    let rs = paths.region_server(&me);
    assert_eq!(rs, "/hbase/rs/rs-host.example,16020,1700000016000");
    let (data, owner) = read(&client, &rs).await.expect("the region server znode");
    assert_eq!(
        owner, session,
        "the region server znode is ephemeral and ours"
    );
    let info: RegionServerInfo = decode_znode(&data).expect("RegionServerInfo");
    assert_eq!(info.info_port, Some(-1));
    let version = info.version_info.expect("version info");
    assert_eq!(version.version, HBASE_VERSION);

    let mut children = client.list_children("/hbase").await.expect("children");
    children.sort();
    assert_eq!(
        children,
        [
            "backup-masters",
            "hbaseid",
            "master",
            "meta-region-server",
            "rs",
            "running",
            "table"
        ]
    );
    assert_eq!(
        client
            .list_children("/hbase/rs")
            .await
            .expect("rs children"),
        ["rs-host.example,16020,1700000016000"]
    );
    assert!(client
        .list_children("/hbase/backup-masters")
        .await
        .expect("backup masters")
        .is_empty());

    registration.deregister().await.expect("deregisters");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registering_again_overwrites_stale_persistent_znodes() {
    let zk = ZooKeeperServer::start();
    let paths = ZnodePaths::new("/hbase");
    let old = identity("old-host", 16000, 16020);
    ZkRegistration::register(&config(&zk, 10_000), &old)
        .await
        .expect("registers the old server")
        .deregister()
        .await
        .expect("deregisters the old server");
    let new = identity("new-host", 16001, 16021);
    let registration = ZkRegistration::register(&config(&zk, 10_000), &new)
        .await
        .expect("registers the new server");
    let client = observer(&zk).await;
    let (data, _) = read(&client, &paths.meta_region_server)
        .await
        .expect("meta-region-server");
    let meta: MetaRegionServer = decode_znode(&data).expect("MetaRegionServer");
    assert_eq!(meta.server.expect("server").host_name, "new-host");
    let (data, _) = read(&client, &paths.cluster_id).await.expect("hbaseid");
    let cluster: ClusterId = decode_znode(&data).expect("ClusterId");
    assert_eq!(cluster.cluster_id, "cluster-of-new-host");
    registration.deregister().await.expect("deregisters");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ephemeral_znodes_vanish_after_deregister_while_persistent_ones_stay() {
    let zk = ZooKeeperServer::start();
    let me = identity("leaving-host", 16000, 16020);
    let registration = ZkRegistration::register(&config(&zk, 10_000), &me)
        .await
        .expect("registers");
    let paths = ZnodePaths::new("/hbase");
    let rs = registration.region_server_znode();
    registration.deregister().await.expect("deregisters");

    let client = observer(&zk).await;
    assert_eq!(read(&client, &paths.master).await, None, "master is gone");
    assert_eq!(read(&client, &rs).await, None, "the region server is gone");
    for persistent in [&paths.meta_region_server, &paths.cluster_id, &paths.running] {
        assert!(
            read(&client, persistent).await.is_some(),
            "{persistent} stays"
        );
    }
}

#[test]
fn ephemeral_znodes_vanish_when_the_registering_process_dies_while_persistent_ones_stay() {
    let zk = ZooKeeperServer::start();
    let me = identity("crashing-host", 16000, 16020);
    let paths = ZnodePaths::new("/hbase");
    // The "process": its own runtime, torn down without deregistering, so
    // the session's connection just closes and ZooKeeper has to expire it.
    let doomed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let registration = doomed
        .block_on(ZkRegistration::register(&config(&zk, 2_000), &me))
        .expect("registers");
    let rs = registration.region_server_znode();
    // Forgetting skips Drop, which would close the session politely.
    std::mem::forget(registration);
    doomed.shutdown_background();

    let observing = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    observing.block_on(async {
        let client = observer(&zk).await;
        eventually(
            "the crashed server's ephemeral znodes to expire",
            || async {
                read(&client, &paths.master).await.is_none() && read(&client, &rs).await.is_none()
            },
        )
        .await;
        for persistent in [&paths.meta_region_server, &paths.cluster_id, &paths.running] {
            assert!(
                read(&client, persistent).await.is_some(),
                "{persistent} stays"
            );
        }
    });
}

#[test]
fn a_new_master_waits_for_a_crashed_predecessors_znode_to_expire() {
    let zk = ZooKeeperServer::start();
    let paths = ZnodePaths::new("/hbase");
    let doomed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let crashed = doomed
        .block_on(ZkRegistration::register(
            &config(&zk, 2_000),
            &identity("crashed-host", 16000, 16020),
        ))
        .expect("the first server registers");
    std::mem::forget(crashed);
    doomed.shutdown_background();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        // Waits up to its own session timeout, longer than the crashed
        // session's: the predecessor's znode expires meanwhile.
        let successor = ZkRegistration::register(
            &config(&zk, 60_000),
            &identity("successor-host", 16001, 16021),
        )
        .await
        .expect("the successor registers once the crashed session expired");
        let client = observer(&zk).await;
        let (data, owner) = read(&client, &paths.master).await.expect("master");
        assert_eq!(Some(owner), successor.session_id());
        let master: Master = decode_znode(&data).expect("Master");
        assert_eq!(master.master.expect("server").host_name, "successor-host");
        successor.deregister().await.expect("deregisters");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_against_a_stopped_zookeeper_fails_clearly() {
    let mut zk = ZooKeeperServer::start();
    let quorum = zk.connect_string();
    zk.stop();
    let config = ZkConfig {
        quorum: quorum.clone(),
        session_timeout_ms: 10_000,
        connect_timeout_ms: 2_000,
        ..ZkConfig::default()
    };
    // The outer limit only guards against a hang; the registration's own
    // connect timeout is what ends it.
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        ZkRegistration::register(&config, &identity("lonely-host", 16000, 16020)),
    )
    .await
    .expect("registration gives up instead of hanging");
    let error = outcome.expect_err("nothing to register with");
    assert!(matches!(error, ZkError::Connect { .. }), "{error}");
    let text = error.to_string();
    assert!(text.contains(&quorum), "names the quorum: {text}");
    assert!(text.contains("cannot reach ZooKeeper"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbage_quorum_is_refused_before_connecting() {
    let config = ZkConfig {
        quorum: "zk1:2181,,zk2:notaport".to_owned(),
        ..ZkConfig::default()
    };
    let error = ZkRegistration::register(&config, &identity("h", 16000, 16020))
        .await
        .expect_err("garbage quorum");
    assert!(matches!(error, ZkError::BadQuorum { .. }), "{error}");
    assert!(
        error.to_string().contains("zk1:2181,,zk2:notaport"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_master_is_refused_while_the_first_is_live() {
    let zk = ZooKeeperServer::start();
    let first = ZkRegistration::register(
        &config(&zk, 10_000),
        &identity("first-master", 16000, 16020),
    )
    .await
    .expect("the first master registers");
    // Waits one second for the first master to go, which it does not.
    let impatient = config(&zk, 1_000);
    let error = ZkRegistration::register(&impatient, &identity("second-master", 16001, 16021))
        .await
        .expect_err("the second master is refused");
    assert!(matches!(error, ZkError::MasterTaken { .. }), "{error}");
    let text = error.to_string();
    assert!(
        text.contains("first-master:16000"),
        "names the other master: {text}"
    );
    assert!(text.contains("/hbase/master"), "names the znode: {text}");
    assert!(
        text.contains(&zk.connect_string()),
        "names the quorum: {text}"
    );

    // The refused one changed nothing the first one announced.
    let client = observer(&zk).await;
    let paths = ZnodePaths::new("/hbase");
    let (data, owner) = read(&client, &paths.master).await.expect("master");
    assert_eq!(Some(owner), first.session_id());
    let master: Master = decode_znode(&data).expect("Master");
    assert_eq!(master.master.expect("server").host_name, "first-master");
    let (data, _) = read(&client, &paths.meta_region_server)
        .await
        .expect("meta-region-server");
    let meta: MetaRegionServer = decode_znode(&data).expect("MetaRegionServer");
    assert_eq!(meta.server.expect("server").host_name, "first-master");
    assert_eq!(
        read(&client, "/hbase/rs/second-master,16021,1700000016001").await,
        None
    );
    first.deregister().await.expect("deregisters");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_zookeeper_restarts_with_the_session_expired_the_ephemeral_znodes_come_back() {
    let mut zk = ZooKeeperServer::start();
    let me = identity("phoenix-host", 16000, 16020);
    let config = ZkConfig {
        connect_timeout_ms: 3_000,
        ..config(&zk, 2_000)
    };
    let registration = ZkRegistration::register(&config, &me)
        .await
        .expect("registers");
    let old_session = registration.session_id().expect("a session");
    let paths = ZnodePaths::new("/hbase");
    let rs = registration.region_server_znode();

    zk.stop();
    // Away for several session timeouts: the client gives the session up
    // (it declares expiry 1.4 timeouts after the last answer).
    tokio::time::sleep(Duration::from_secs(8)).await;
    zk.restart();

    let client = observer(&zk).await;
    eventually(
        "the ephemeral znodes to come back with a new session",
        || async {
            let Some(session) = registration.session_id() else {
                return false;
            };
            if session == old_session {
                return false;
            }
            let master = read(&client, &paths.master).await;
            let server = read(&client, &rs).await;
            matches!((master, server), (Some((_, m)), Some((_, s))) if m == session && s == session)
        },
    )
    .await;
    let (data, _) = read(&client, &paths.master).await.expect("master");
    let master: Master = decode_znode(&data).expect("Master");
    assert_eq!(master.master.expect("server").host_name, "phoenix-host");
    assert!(read(&client, &paths.meta_region_server).await.is_some());
    registration.deregister().await.expect("deregisters");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zookeeper_pause_shorter_than_the_session_keeps_the_registration() {
    let mut zk = ZooKeeperServer::start();
    let registration = ZkRegistration::register(
        &config(&zk, 20_000),
        &identity("patient-host", 16000, 16020),
    )
    .await
    .expect("registers");
    let session = registration.session_id();
    zk.pause();
    tokio::time::sleep(Duration::from_secs(2)).await;
    zk.resume();
    let client = observer(&zk).await;
    let (_, owner) = read(&client, "/hbase/master").await.expect("master");
    assert_eq!(Some(owner), session);
    assert_eq!(registration.session_id(), session, "the same session");
    registration.deregister().await.expect("deregisters");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_znode_parent_is_honoured() {
    let zk = ZooKeeperServer::start();
    let config = ZkConfig {
        znode_parent: "/basalt-test".to_owned(),
        ..config(&zk, 10_000)
    };
    let me = identity("custom-host", 16000, 16020);
    let registration = ZkRegistration::register(&config, &me)
        .await
        .expect("registers");
    assert_eq!(registration.paths().master, "/basalt-test/master");
    let client = observer(&zk).await;
    let (data, _) = read(&client, "/basalt-test/master").await.expect("master");
    let master: Master = decode_znode(&data).expect("Master");
    assert_eq!(master.master.expect("server").host_name, "custom-host");
    for name in ["meta-region-server", "hbaseid", "running", "rs", "table"] {
        assert!(
            read(&client, &format!("/basalt-test/{name}"))
                .await
                .is_some(),
            "/basalt-test/{name}"
        );
    }
    assert!(
        read(&client, "/basalt-test/rs/custom-host,16020,1700000016000")
            .await
            .is_some()
    );
    assert_eq!(read(&client, "/hbase").await, None, "nothing under /hbase");
    registration.deregister().await.expect("deregisters");
}
