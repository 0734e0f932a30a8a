//! `MasterService`'s replication peer calls at the handler level, as
//! HBase 2.6's `Admin.addReplicationPeer` and the rest send them, with a
//! real ZooKeeper standing in for the peer clusters (HBase's master reads
//! a peer's cluster id there before it adds it). Answers, classes and
//! messages are HBase 2.6.4's, checked against the reference HBase.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use basalt_rpc::proto::hbase::{ClusterId, NameStringPair, TableName};
use basalt_rpc::proto::master::{self as m, get_procedure_result_response::State as ProcState};
use basalt_rpc::proto::replication::{self as r, replication_state::State};
use basalt_rpc::services::MASTER_SERVICE;
use basalt_rpc::zk::{encode_with_metadata, with_tokio_spawner};
use basalt_rpc::RpcError;
use prost::Message;

#[path = "../../../test-support/zookeeper.rs"]
mod zookeeper;
use zookeeper::ZooKeeperServer;

mod common;
use common::{server, Server};

const DO_NOT_RETRY: &str = "org.apache.hadoop.hbase.DoNotRetryIOException";
const PEER_NOT_FOUND: &str = "org.apache.hadoop.hbase.ReplicationPeerNotFoundException";
const IO_EXCEPTION: &str = "java.io.IOException";

impl Server {
    fn call<A: Message + Default>(
        &self,
        method: &str,
        request: &impl Message,
    ) -> Result<A, RpcError> {
        self.call_on(MASTER_SERVICE, method, request)
    }

    fn add(&self, id: &str, config: r::ReplicationPeer, enabled: bool) -> Result<u64, RpcError> {
        let state = if enabled {
            State::Enabled
        } else {
            State::Disabled
        };
        let answer: m::ProcIdResponse = self.call(
            "AddReplicationPeer",
            &r::AddReplicationPeerRequest {
                peer_id: Some(id.into()),
                peer_config: Some(config),
                peer_state: Some(r::ReplicationState {
                    state: Some(state as i32),
                }),
            },
        )?;
        Ok(answer
            .proc_id
            .expect("a peer change answers a procedure id"))
    }

    fn by_id(&self, method: &str, id: &str) -> Result<m::ProcIdResponse, RpcError> {
        self.call(
            method,
            &r::PeerIdRequest {
                peer_id: Some(id.into()),
            },
        )
    }

    fn list(&self, regex: Option<&str>) -> Vec<(String, bool, r::ReplicationPeer)> {
        let answer: r::ListReplicationPeersResponse = self
            .call(
                "ListReplicationPeers",
                &r::ListReplicationPeersRequest {
                    regex: regex.map(String::from),
                },
            )
            .unwrap();
        answer
            .peer_desc
            .into_iter()
            .map(|d| {
                let enabled = d.state.unwrap().state == Some(State::Enabled as i32);
                (d.id.unwrap(), enabled, d.config.unwrap())
            })
            .collect()
    }

    fn config_of(&self, id: &str) -> Result<r::ReplicationPeer, RpcError> {
        let answer: r::GetReplicationPeerConfigResponse = self.call(
            "GetReplicationPeerConfig",
            &r::PeerIdRequest {
                peer_id: Some(id.into()),
            },
        )?;
        assert_eq!(answer.peer_id.as_deref(), Some(id));
        Ok(answer.peer_config.unwrap())
    }

    fn update(&self, id: &str, config: r::ReplicationPeer) -> Result<m::ProcIdResponse, RpcError> {
        self.call(
            "UpdateReplicationPeerConfig",
            &r::UpdateReplicationPeerConfigRequest {
                peer_id: Some(id.into()),
                peer_config: Some(config),
            },
        )
    }

    fn modification_switch(&self, on: bool) -> bool {
        let answer: r::ReplicationPeerModificationSwitchResponse = self
            .call(
                "ReplicationPeerModificationSwitch",
                &r::ReplicationPeerModificationSwitchRequest { on: Some(on) },
            )
            .unwrap();
        answer.previous_value.unwrap()
    }
}

/// What HBase 2.6's client sends for `ReplicationPeerConfig.newBuilder()
/// .setClusterKey(key).build()`: every scalar written.
fn peer(key: &str) -> r::ReplicationPeer {
    r::ReplicationPeer {
        clusterkey: Some(key.into()),
        bandwidth: Some(0),
        replicate_all: Some(true),
        serial: Some(false),
        ..Default::default()
    }
}

fn expect_class<T: std::fmt::Debug>(result: Result<T, RpcError>, class: &str) -> RpcError {
    let error = result.expect_err("expected an exception");
    assert_eq!(error.class, class, "{error}");
    error
}

/// A ZooKeeper holding two HBase clusters' ids: this server's under
/// `/self` and another one's under `/other`. `/hbase-peer` holds none.
fn zookeeper_with_clusters(own_id: &str) -> ZooKeeperServer {
    let zk = ZooKeeperServer::start();
    let quorum = zk.connect_string();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let handle = runtime.handle().clone();
    runtime.block_on(with_tokio_spawner(handle, async move {
        let client = zookeeper_client::Client::connector()
            .with_session_timeout(Duration::from_secs(30))
            .connect(&quorum)
            .await
            .unwrap();
        let persistent = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        for (parent, id) in [("/self", own_id), ("/other", "another-cluster")] {
            client.create(parent, &[], &persistent).await.unwrap();
            let data = encode_with_metadata(
                b"test",
                &ClusterId {
                    cluster_id: id.into(),
                },
            );
            client
                .create(&format!("{parent}/hbaseid"), &data, &persistent)
                .await
                .unwrap();
        }
    }));
    zk
}

#[test]
fn peers_are_added_listed_switched_updated_and_removed_with_hbases_answers() {
    let s = server();
    let zk = ZooKeeperServer::start();
    let key = format!("{}:/hbase-peer", zk.connect_string());
    assert!(s.list(None).is_empty());

    // A procedure in HBase: the client polls its id, which is done.
    let proc_id = s.add("p1", peer(&key), true).unwrap();
    let result: m::GetProcedureResultResponse = s
        .call(
            "getProcedureResult",
            &m::GetProcedureResultRequest {
                proc_id: Some(proc_id),
            },
        )
        .unwrap();
    assert_eq!(result.state, Some(ProcState::Finished as i32));
    let error = expect_class(s.add("p1", peer(&key), true), DO_NOT_RETRY);
    assert_eq!(error.message, "Replication peer p1 already exists");

    // Another, disabled, with every field of the configuration.
    let full = r::ReplicationPeer {
        replicate_all: Some(false),
        bandwidth: Some(77),
        serial: Some(true),
        table_cfs: vec![r::TableCf {
            table_name: Some(TableName {
                namespace: b"ns1".to_vec(),
                qualifier: b"t1".to_vec(),
            }),
            families: vec![b"cf1".to_vec(), b"cf2".to_vec()],
        }],
        namespaces: vec![b"ns2".to_vec()],
        configuration: vec![NameStringPair {
            name: "k1".into(),
            value: "v1".into(),
        }],
        ..peer(&key)
    };
    s.add("p2", full.clone(), false).unwrap();
    assert_eq!(s.config_of("p2").unwrap(), full);
    let listed = s.list(None);
    let summary: Vec<(&str, bool)> = listed
        .iter()
        .map(|(id, on, _)| (id.as_str(), *on))
        .collect();
    assert_eq!(summary, [("p1", true), ("p2", false)]);
    // The pattern must match the whole id, as Java's `matches`.
    assert_eq!(s.list(Some("p.*")).len(), 2);
    assert!(s.list(Some("p")).is_empty());
    assert_eq!(s.list(Some("p2"))[0].2, full);

    s.by_id("DisableReplicationPeer", "p1").unwrap();
    let error = expect_class(s.by_id("DisableReplicationPeer", "p1"), DO_NOT_RETRY);
    assert_eq!(
        error.message,
        "Replication peer p1 has already been disabled"
    );
    let state: r::GetReplicationPeerStateResponse = s
        .call(
            "IsReplicationPeerEnabled",
            &r::PeerIdRequest {
                peer_id: Some("p1".into()),
            },
        )
        .unwrap();
    assert_eq!(state.is_enabled, Some(false));
    s.by_id("EnableReplicationPeer", "p1").unwrap();
    let error = expect_class(s.by_id("EnableReplicationPeer", "p1"), DO_NOT_RETRY);
    assert_eq!(
        error.message,
        "Replication peer p1 has already been enabled"
    );
    assert!(s.list(Some("p1"))[0].1);

    // An update keeps the state; the cluster key cannot change.
    let wider = r::ReplicationPeer {
        bandwidth: Some(1000),
        ..peer(&key)
    };
    s.update("p1", wider.clone()).unwrap();
    assert_eq!(s.config_of("p1").unwrap(), wider);
    assert!(s.list(Some("p1"))[0].1);
    let moved = format!("{}:/hbase-other", zk.connect_string());
    let error = expect_class(s.update("p1", peer(&moved)), DO_NOT_RETRY);
    assert!(
        error
            .message
            .starts_with("Changing the cluster key on an existing peer is not allowed."),
        "{error}"
    );

    for id in ["p1", "p2"] {
        s.by_id("RemoveReplicationPeer", id).unwrap();
    }
    assert!(s.list(None).is_empty());
}

#[test]
fn an_unknown_peer_answers_hbases_not_found_exception() {
    let s = server();
    let zk = ZooKeeperServer::start();
    let key = format!("{}:/hbase-peer", zk.connect_string());
    for method in [
        "RemoveReplicationPeer",
        "EnableReplicationPeer",
        "DisableReplicationPeer",
    ] {
        let error = expect_class(s.by_id(method, "nope"), PEER_NOT_FOUND);
        assert!(error.message.contains("nope"), "{error}");
    }
    expect_class(s.config_of("nope"), PEER_NOT_FOUND);
    expect_class(s.update("nope", peer(&key)), PEER_NOT_FOUND);
    // HBase's master answers the state of an unknown peer differently: a
    // plain IOException, which its client retries.
    let error = expect_class(
        s.call::<r::GetReplicationPeerStateResponse>(
            "IsReplicationPeerEnabled",
            &r::PeerIdRequest {
                peer_id: Some("nope".into()),
            },
        ),
        IO_EXCEPTION,
    );
    assert_eq!(error.message, "Replication Peer of nope does not exist.");
    assert!(!error.do_not_retry);
}

#[test]
fn a_peer_is_refused_for_its_id_its_key_or_its_selection_as_hbase_refuses_it() {
    let s = server();
    let zk = ZooKeeperServer::start();
    let key = format!("{}:/hbase-peer", zk.connect_string());
    let refused = |id: &str, config: r::ReplicationPeer| -> String {
        expect_class(s.add(id, config, true), DO_NOT_RETRY).message
    };
    // The id is checked first, whatever the key.
    assert_eq!(
        refused("a-b", peer("nonsense")),
        "Found invalid peer name: a-b"
    );
    assert_eq!(refused("p", peer("")), "Invalid cluster key: ");
    assert_eq!(
        refused("p", peer("nonsense")),
        "Invalid cluster key: nonsense"
    );
    assert_eq!(
        refused(
            "p",
            r::ReplicationPeer {
                namespaces: vec![b"ns1".to_vec()],
                ..peer(&key)
            }
        ),
        "Need clean namespaces or table-cfs config firstly when you want replicate all cluster"
    );
    assert_eq!(
        refused(
            "p",
            r::ReplicationPeer {
                replicate_all: Some(false),
                exclude_namespaces: vec![b"ns1".to_vec()],
                ..peer(&key)
            }
        ),
        "Need clean exclude-namespaces or exclude-table-cfs config firstly when replicate_all flag is false"
    );
    assert_eq!(
        refused(
            "p",
            r::ReplicationPeer {
                replicate_all: Some(false),
                namespaces: vec![b"ns1".to_vec()],
                table_cfs: vec![r::TableCf {
                    table_name: Some(TableName {
                        namespace: b"ns1".to_vec(),
                        qualifier: b"t1".to_vec(),
                    }),
                    families: vec![],
                }],
                ..peer(&key)
            }
        ),
        "Table-cfs ns1:t1 is conflict with namespaces ns1 in peer config"
    );
    assert!(s.list(None).is_empty(), "nothing refused was kept");
}

#[test]
fn a_peer_cluster_is_read_in_its_zookeeper_and_may_not_be_this_cluster() {
    let s = server();
    let zk = zookeeper_with_clusters(&s.ctx.identity.cluster_id);
    let quorum = zk.connect_string();
    let error = expect_class(
        s.add("self", peer(&format!("{quorum}:/self")), true),
        DO_NOT_RETRY,
    );
    assert_eq!(
        error.message,
        format!(
            "Invalid cluster key: {quorum}:/self, should not replicate to itself for HBaseInterClusterReplicationEndpoint"
        )
    );
    s.add("other", peer(&format!("{quorum}:/other")), true)
        .unwrap();
    // A custom endpoint is not a cluster reached through the key.
    s.add(
        "custom",
        r::ReplicationPeer {
            replication_endpoint_impl: Some("com.example.Shipper".into()),
            ..peer("")
        },
        true,
    )
    .unwrap();
    let ids: Vec<String> = s.list(None).into_iter().map(|(id, _, _)| id).collect();
    assert_eq!(ids, ["custom", "other"]);
}

#[test]
fn a_peer_whose_zookeeper_does_not_answer_is_refused_in_bounded_time() {
    let s = server();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let key = format!("127.0.0.1:{port}:/hbase");
    let config = basalt_rpc::replication::peer_config(&peer(&key)).unwrap();
    let started = Instant::now();
    let error = basalt_rpc::replication::check_peer_cluster_within(
        &s.ctx,
        &config,
        Duration::from_millis(500),
    )
    .unwrap_err();
    assert_eq!(error.class, DO_NOT_RETRY);
    assert!(
        error
            .message
            .starts_with(&format!("Can't get peerClusterId for clusterKey={key}")),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(5), "bounded");
}

#[test]
fn the_modification_switch_stops_every_peer_change_with_a_retried_io_exception() {
    let s = server();
    let zk = ZooKeeperServer::start();
    let key = format!("{}:/hbase-peer", zk.connect_string());
    s.add("p1", peer(&key), true).unwrap();
    let enabled = |s: &Server| -> bool {
        let answer: r::IsReplicationPeerModificationEnabledResponse = s
            .call("IsReplicationPeerModificationEnabled", &m::Empty {})
            .unwrap();
        answer.enabled.unwrap()
    };
    assert!(enabled(&s), "on by default");
    assert!(s.modification_switch(false));
    assert!(!enabled(&s));
    // Refused before the request is looked at, as HBase's master does.
    for error in [
        s.add("a-b", peer("nonsense"), true).unwrap_err(),
        s.by_id("RemoveReplicationPeer", "p1").unwrap_err(),
        s.by_id("DisableReplicationPeer", "p1").unwrap_err(),
        s.update("p1", peer(&key)).unwrap_err(),
    ] {
        assert_eq!(error.class, IO_EXCEPTION);
        assert_eq!(error.message, "Replication peer modification disabled");
        assert!(!error.do_not_retry);
    }
    // Reads go on; nothing is left running.
    assert_eq!(s.list(None).len(), 1);
    let _: r::GetReplicationPeerModificationProceduresResponse = s
        .call("GetReplicationPeerModificationProcedures", &m::Empty {})
        .unwrap();
    assert!(!s.modification_switch(true));
    s.by_id("RemoveReplicationPeer", "p1").unwrap();
}
