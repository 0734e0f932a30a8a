//! `basalt serve` with HBase's native RPC: both ports answer, the cluster
//! id survives restarts, and a ZooKeeper that cannot be reached fails
//! start-up once, clearly, instead of hanging. (Registration against a
//! real ZooKeeper and a real client: scripts/hbase-driver-suite.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use basalt_rpc::client::RpcClient;
use basalt_rpc::proto::hbase::EmptyMsg;
use basalt_rpc::proto::master::BoolResponse;
use basalt_rpc::proto::registry::GetClusterIdResponse;

fn cluster_id(server: &common::Server) -> String {
    let port = server.region_server_port.unwrap();
    let mut c = RpcClient::connect(("127.0.0.1", port), "ClientMetaService", false).unwrap();
    let answer: GetClusterIdResponse = c
        .call("GetClusterId", &EmptyMsg {}, &[])
        .unwrap()
        .decode()
        .unwrap();
    answer.cluster_id.unwrap()
}

#[test]
fn native_rpc_serves_the_master_and_region_server_ports_and_keeps_its_cluster_id() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let args = [
        "--data-dir",
        data.to_str().unwrap(),
        "--thrift-port",
        "0",
        "--native-rpc",
        "--master-port",
        "0",
        "--region-server-port",
        "0",
    ];
    let server = common::start(&args, None);
    let master = server.master_port.unwrap();
    let mut c = RpcClient::connect(("127.0.0.1", master), "MasterService", false).unwrap();
    let running: BoolResponse = c
        .call("IsMasterRunning", &EmptyMsg {}, &[])
        .unwrap()
        .decode()
        .unwrap();
    assert_eq!(running.value, Some(true));
    let first = cluster_id(&server);
    assert_eq!(
        std::fs::read_to_string(data.join("cluster.id"))
            .unwrap()
            .trim(),
        first
    );
    drop(server);
    let server = common::start(&args, None);
    assert_eq!(cluster_id(&server), first);
}

#[test]
fn an_unreachable_zookeeper_fails_start_up_once_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // A port nobody listens on: bound, then released.
    let port = std::net::TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.path().join("basalt.toml");
    std::fs::write(&config, "[zookeeper]\nconnect_timeout_ms = 2000\n").unwrap();
    let data = dir.path().join("data");
    let quorum = format!("127.0.0.1:{port}");
    let (code, stderr) = common::run_to_exit(
        &[
            "serve",
            "--config",
            config.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
            "--thrift-port",
            "0",
            "--thrift2-port",
            "0",
            "--rest-port",
            "0",
            "--master-port",
            "0",
            "--region-server-port",
            "0",
            "--zookeeper",
            &quorum,
        ],
        &[],
    );
    assert_eq!(code, Some(1), "stderr: {stderr}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("basalt: cannot register in ZooKeeper"))
        .collect();
    assert_eq!(errors.len(), 1, "the error once, stderr: {stderr}");
    assert!(errors[0].contains(&port.to_string()), "{}", errors[0]);
}

/// A `Multi` call of `n` empty actions: two bytes each on the wire, a
/// whole decoded struct each in memory.
fn tiny_actions(n: usize) -> basalt_rpc::proto::client::MultiRequest {
    use basalt_rpc::proto::client::{Action, MultiRequest, RegionAction};
    MultiRequest {
        region_action: vec![RegionAction {
            action: vec![Action::default(); n],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn sixteen_senders_of_tiny_element_requests_stay_under_the_memory_bound() {
    // 64 MiB of requests in flight, 64 MiB decoded: the peak stays under
    // twice the budget plus the process (docs/native-rpc.md).
    const BOUND: u64 = 256 * 1024 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("basalt.toml");
    std::fs::write(
        &config,
        "[rpc]\nmax_in_flight_bytes = 67108864\nmax_frame_bytes = 16777216\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let server = common::start(
        &[
            "--config",
            config.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
            "--thrift-port",
            "0",
            "--native-rpc",
            "--master-port",
            "0",
            "--region-server-port",
            "0",
        ],
        None,
    );
    let port = server.region_server_port.unwrap();
    // Refused by its decoded size: ~16 MiB on the wire, gigabytes decoded.
    let worst = std::sync::Arc::new(tiny_actions(8_000_000));
    // Under the decoded budget: decoded, then answered (no region named).
    let allowed = std::sync::Arc::new(tiny_actions(20_000));
    let senders: Vec<_> = (0..16)
        .map(|i| {
            let request = if i < 8 {
                std::sync::Arc::clone(&worst)
            } else {
                std::sync::Arc::clone(&allowed)
            };
            std::thread::spawn(move || {
                let mut c =
                    RpcClient::connect(("127.0.0.1", port), "ClientService", false).unwrap();
                let answer = c.call("Multi", &*request, &[]);
                if i < 8 {
                    let e = answer.unwrap_err();
                    assert_eq!(
                        e.class,
                        "org.apache.hadoop.hbase.exceptions.RequestTooBigException"
                    );
                } else {
                    let multi: basalt_rpc::proto::client::MultiResponse =
                        answer.unwrap().decode().unwrap();
                    assert!(multi.region_action_result[0].exception.is_some());
                }
            })
        })
        .collect();
    for sender in senders {
        sender.join().unwrap();
    }
    // The server still serves.
    assert!(!cluster_id(&server).is_empty());
    let peak = common::peak_rss_bytes(server.child.id());
    eprintln!("basalt serve peak RSS: {} MiB", peak / (1024 * 1024));
    assert!(
        peak < BOUND,
        "peak RSS {} MiB is over the {} MiB bound",
        peak / (1024 * 1024),
        BOUND / (1024 * 1024)
    );
}
