//! TLS on native RPC (`[rpc.tls]`, docs/security.md): a TLS client is
//! served; a plaintext one is refused unless plaintext is kept for a
//! migration; a client certificate from another CA is refused when the
//! server requires one; a renewed certificate is served without a
//! restart; a key anyone may read stops the server from starting.
//!
//! Every `RpcClient` of this test binary speaks TLS (the process-wide
//! client configuration trusts CA `one` and presents a certificate it
//! signed); plaintext clients are raw sockets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use basalt::tls::TlsSettings;
use basalt::{ColumnFamilyDescriptor, Put, TableDescriptor};
use basalt_rpc::client::RpcClient;
use basalt_rpc::proto::client::{Get, GetRequest, GetResponse};
use basalt_rpc::{RpcConfig, RpcError};
use bytes::Bytes;

mod common;
use common::Fixture;

#[path = "../../../test-support/certificates.rs"]
mod certificates;
use certificates::{settings, TestCa};

/// The shared CAs, and this process's client TLS (trusting `one`, with a
/// client certificate from `one`), set on first use.
fn cas() -> (&'static PathBuf, &'static TestCa, &'static TestCa) {
    static CLIENT: OnceLock<()> = OnceLock::new();
    let cas = certificates::cas();
    CLIENT.get_or_init(|| {
        basalt_rpc::client::set_process_tls(certificates::client_config(
            cas.1,
            Some(cas.1),
            "client",
        ));
    });
    cas
}

fn start(tls: TlsSettings) -> Fixture {
    let config = RpcConfig {
        tls: Some(tls),
        ..RpcConfig::default()
    };
    common::start_serving_with(config, |db| {
        db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")))
            .unwrap();
        db.table("t")
            .unwrap()
            .put(&Put::new("r").add("cf", "q", "v"))
            .unwrap();
    })
}

/// Reads row `r` through a TLS `RpcClient`: the cells, or the error.
fn get(f: &Fixture) -> Result<usize, RpcError> {
    let mut c = RpcClient::connect(f.server.region_server_addr(), "ClientService", false)?;
    let region = f.db.describe_table("t").unwrap().regions[0]
        .info
        .region_name();
    let answer = c.call(
        "Get",
        &GetRequest {
            region: common::region(&region),
            get: Some(Get {
                row: Bytes::from_static(b"r"),
                ..Default::default()
            }),
        },
        &[],
    )?;
    let response: GetResponse = answer.decode()?;
    Ok(response.result.unwrap_or_default().cell.len())
}

/// Sends HBase's registry preamble in plaintext: the server's answer
/// (bytes until it closes), or nothing when it refused the connection.
fn plaintext_registry(f: &Fixture) -> Vec<u8> {
    let mut s = TcpStream::connect(f.server.master_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(basalt_rpc::frame::REGISTRY_PREAMBLE).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    answer
}

#[test]
fn a_tls_client_is_served_and_a_plaintext_one_refused() {
    let (_, one, _) = cas();
    let (cert, key) = one.server("tls-only");
    let f = start(settings(&cert, &key, None, false));
    assert_eq!(get(&f).unwrap(), 1);
    // At most a TLS alert (a record of type 21), never the cluster id.
    let answer = plaintext_registry(&f);
    assert!(
        answer.is_empty() || answer[0] == 0x15,
        "a plaintext client was answered: {answer:?}"
    );
    assert!(!answer.windows(12).any(|w| w == b"test-cluster"));
}

#[test]
fn plaintext_is_served_beside_tls_while_clients_move() {
    let (_, one, _) = cas();
    let (cert, key) = one.server("migration");
    let f = start(settings(&cert, &key, None, true));
    assert_eq!(get(&f).unwrap(), 1);
    let answer = plaintext_registry(&f);
    assert!(
        answer.windows(12).any(|w| w == b"test-cluster"),
        "the plaintext registry call got no cluster id: {answer:?}"
    );
}

#[test]
fn a_client_certificate_from_another_ca_is_refused() {
    let (_, one, two) = cas();
    let (cert, key) = one.server("client-ca");
    // This process's client certificate is signed by `one`.
    let other = start(settings(&cert, &key, Some(two.cert()), false));
    assert!(get(&other).is_err(), "a client of another CA was served");
    let same = start(settings(&cert, &key, Some(one.cert()), false));
    assert_eq!(get(&same).unwrap(), 1);
}

/// Copies `from` over `to` with a modification time of its own, as a
/// certificate renewal replaces the files.
fn replace(from: &Path, to: &Path, seconds_ahead: u64) {
    std::fs::copy(from, to).unwrap();
    let file = std::fs::File::options().write(true).open(to).unwrap();
    file.set_modified(std::time::SystemTime::now() + Duration::from_secs(seconds_ahead))
        .unwrap();
}

#[test]
fn a_renewed_certificate_is_served_without_a_restart() {
    let (dir, one, two) = cas();
    let (cert, key) = one.server("renewed-first");
    let served = dir.join("renewed.pem");
    let served_key = dir.join("renewed-key.pem");
    replace(&cert, &served, 0);
    replace(&key, &served_key, 0);
    let f = start(settings(&served, &served_key, None, false));
    assert_eq!(get(&f).unwrap(), 1);
    // Renewed with a certificate of a CA this client does not trust: new
    // connections fail, so the server took the new files.
    let (other_cert, other_key) = two.server("renewed-other");
    replace(&other_cert, &served, 10);
    replace(&other_key, &served_key, 10);
    assert!(get(&f).is_err(), "the renewed certificate was not served");
    // And back to one it trusts.
    let (cert, key) = one.issue("renewed-again", "IP:127.0.0.1");
    replace(&cert, &served, 20);
    replace(&key, &served_key, 20);
    assert_eq!(get(&f).unwrap(), 1);
}

#[test]
fn a_key_anyone_may_read_stops_the_server_from_starting() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, one, _) = cas();
    let (cert, key) = one.issue("open-key", "IP:127.0.0.1");
    let open = dir.join("open-key-copy.pem");
    std::fs::copy(&key, &open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let config = RpcConfig {
        enabled: true,
        master_port: 0,
        region_server_port: 0,
        tls: Some(settings(&cert, &open, None, false)),
        ..RpcConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let db = basalt::Database::open(dir.path()).unwrap();
    let error = basalt_rpc::RpcServer::bind(&config)
        .unwrap()
        .serve(db, "c".into())
        .unwrap_err()
        .to_string();
    assert!(error.contains("readable by every user"), "{error}");
}
