//! `basalt serve` with HBase's native RPC: both ports answer, the cluster
//! id survives restarts, and a ZooKeeper that cannot be reached fails
//! start-up once, clearly, instead of hanging. (Registration against a
//! real ZooKeeper and a real client: scripts/hbase-driver-suite.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use basalt_rpc::client::RpcClient;
use basalt_rpc::proto::hbase::EmptyMsg;
use basalt_rpc::proto::master::BoolResponse;
use basalt_rpc::proto::registry::GetClusterIdResponse;

/// Hang guard only.
const TIMEOUT: Duration = Duration::from_secs(120);

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
    let mut child = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["serve", "--config", config.to_str().unwrap()])
        .args(["--data-dir", dir.path().join("data").to_str().unwrap()])
        .args([
            "--thrift-port",
            "0",
            "--thrift2-port",
            "0",
            "--rest-port",
            "0",
        ])
        .args(["--master-port", "0", "--region-server-port", "0"])
        .args(["--zookeeper", &format!("127.0.0.1:{port}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + TIMEOUT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("basalt serve kept waiting for a ZooKeeper that is not there");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("basalt: cannot register in ZooKeeper"))
        .collect();
    assert_eq!(errors.len(), 1, "the error once, stderr: {stderr}");
    assert!(errors[0].contains(&port.to_string()), "{}", errors[0]);
}
