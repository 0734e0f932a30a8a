//! A cluster whose native RPC takes TLS only (`[rpc.tls]`, with
//! `[cluster_tls]` for the processes' own calls; docs/security.md): the
//! master assigns regions, region servers hand rows to each other, and a
//! plaintext client is refused. Real `basalt master` and `basalt
//! regionserver` processes, a real ZooKeeper, a throwaway CA made by
//! openssl. This test process's own calls (the harness's master calls)
//! are TLS too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use basalt::cluster::{MasterAnswer, MasterCall};
use basalt::tls::TlsClientSettings;
use basalt::{ColumnFamilyDescriptor, TableDescriptor};
use bytes::Bytes;

#[path = "common/cluster.rs"]
mod cluster_support;
use cluster_support::{all_rows, thrift_put, TestCluster};

#[path = "../../../test-support/certificates.rs"]
mod certificates;
use certificates::TestCa;

#[test]
fn a_cluster_speaking_tls_only_assigns_routes_and_refuses_plaintext() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "cluster");
    let (cert, key) = ca.server("node");
    basalt_rpc::client::set_process_tls(
        basalt::tls::client_config(&TlsClientSettings {
            ca_file: ca.cert(),
            cert_file: None,
            key_file: None,
        })
        .unwrap(),
    );
    let cluster = TestCluster::builder()
        .extra_config(&format!(
            "[rpc.tls]\ncert_file = \"{}\"\nkey_file = \"{}\"\n\n[cluster_tls]\nca_file = \"{}\"\n",
            cert.display(),
            key.display(),
            ca.cert().display()
        ))
        .start();
    let created = cluster.master_call(MasterCall::CreateTable {
        descriptor: TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")),
        splits: ["d", "h", "m", "r"].map(Bytes::from).to_vec(),
        owner: None,
    });
    assert!(matches!(created, Ok(MasterAnswer::Done)), "{created:?}");
    cluster.wait_until_settled();
    // Rows written through one server's Thrift gateway reach the regions
    // of every server (region calls between servers, over TLS) and read
    // back whole through another's.
    let rows: Vec<String> = ["a", "e", "i", "n", "s", "x"]
        .iter()
        .map(|p| format!("{p}-row"))
        .collect();
    let mut writer = cluster.thrift(0);
    for row in &rows {
        thrift_put(&mut writer, "t", row).unwrap();
    }
    let read = all_rows(&mut cluster.thrift(2), "t");
    assert_eq!(read, rows.iter().cloned().collect());
    // A plaintext client gets no answer from a region server's port.
    let port = cluster.server(1).port("rpc-region-server");
    let mut plain = TcpStream::connect(("127.0.0.1", port)).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    plain
        .write_all(basalt_rpc::frame::REGISTRY_PREAMBLE)
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        answer.is_empty() || answer[0] == 0x15,
        "a plaintext client was answered: {answer:?}"
    );
}
