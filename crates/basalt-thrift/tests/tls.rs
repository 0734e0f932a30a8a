//! TLS on the Thrift gateways (`[thrift.tls]`, `[thrift2.tls]`,
//! docs/security.md): a TLS client is served in every transport and
//! protocol; a plaintext one is refused unless plaintext is kept for a
//! migration, and then served beside TLS clients on the same port; a
//! client certificate from another CA is refused when the server requires
//! one; a renewed certificate is served without a restart; a key anyone
//! may read stops the gateway from starting.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use basalt::tls::TlsSettings;
use basalt::{ColumnFamilyDescriptor, Database, Put, TableDescriptor};
use basalt_thrift::{Client, Client2, Flavour, Protocol, Server, ServerConfig};

mod common;
use common::{TIMEOUT, WIRES};

#[path = "../../../test-support/certificates.rs"]
mod certificates;
use certificates::{cas, settings, TestCa};

/// A client trusting CA `one`, presenting a certificate `signer` issued
/// (or none).
fn client_tls(signer: Option<&TestCa>) -> Arc<rustls::ClientConfig> {
    certificates::client_config(cas().1, signer, "thrift-client")
}

/// A gateway of `flavour` with TLS, serving table `t` with row `r`.
struct Gateway {
    server: Option<Server>,
    _dir: tempfile::TempDir,
}

impl Gateway {
    fn start(tls: TlsSettings, flavour: Flavour) -> Gateway {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path().join("db")).unwrap();
        db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")))
            .unwrap();
        db.table("t")
            .unwrap()
            .put(&Put::new("r").add("cf", "q", "v"))
            .unwrap();
        let config = ServerConfig {
            port: 0,
            tls: Some(tls),
            ..ServerConfig::default()
        };
        let server = Server::start_as(db, &config, flavour).unwrap();
        Gateway {
            server: Some(server),
            _dir: dir,
        }
    }

    fn addr(&self) -> std::net::SocketAddr {
        self.server.as_ref().unwrap().local_addr()
    }

    /// Reads row `r` through Thrift1 over TLS: its cells, or the error.
    fn tls_get(
        &self,
        config: Arc<rustls::ClientConfig>,
        framed: bool,
        protocol: Protocol,
    ) -> Result<usize, String> {
        let mut c = Client::connect_tls(self.addr(), framed, protocol, config, "127.0.0.1")
            .map_err(|e| e.to_string())?;
        c.set_timeout(Some(TIMEOUT)).unwrap();
        cells(c.get_row(b"t", b"r").map_err(|e| e.to_string())?)
    }

    /// Reads row `r` through Thrift1 in plaintext.
    fn plaintext_get(&self, framed: bool, protocol: Protocol) -> Result<usize, String> {
        let mut c = Client::connect(self.addr(), framed, protocol).map_err(|e| e.to_string())?;
        c.set_timeout(Some(TIMEOUT)).unwrap();
        cells(c.get_row(b"t", b"r").map_err(|e| e.to_string())?)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().unwrap();
        }
    }
}

fn cells(rows: Vec<basalt_thrift::types::TRowResult>) -> Result<usize, String> {
    Ok(rows
        .iter()
        .map(|r| r.columns.as_ref().map_or(0, |c| c.len()))
        .sum())
}

const BINARY: Protocol = Protocol::Binary { strict: true };

#[test]
fn a_tls_client_is_served_in_every_wire_and_a_plaintext_one_refused() {
    let (_, one, _) = cas();
    let (cert, key) = one.server("thrift-tls-only");
    let g = Gateway::start(settings(&cert, &key, None, false), Flavour::Thrift1);
    for (framed, protocol) in WIRES {
        assert_eq!(
            g.tls_get(client_tls(None), framed, protocol),
            Ok(1),
            "framed {framed}, {protocol:?}"
        );
    }
    assert!(g.plaintext_get(false, BINARY).is_err());
    // What a plaintext client reads back is at most a TLS alert (a record
    // of type 21), never a Thrift reply.
    let mut raw = TcpStream::connect(g.addr()).unwrap();
    raw.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut call = Vec::new();
    call.extend_from_slice(&[0x80, 0x01, 0x00, 0x01]);
    call.extend_from_slice(&13u32.to_be_bytes());
    call.extend_from_slice(b"getTableNames");
    call.extend_from_slice(&[0, 0, 0, 1, 0]);
    raw.write_all(&call).unwrap();
    let mut answer = Vec::new();
    let _ = raw.read_to_end(&mut answer);
    assert!(
        answer.is_empty() || answer[0] == 0x15,
        "a plaintext client was answered: {answer:?}"
    );
}

#[test]
fn plaintext_is_served_beside_tls_while_clients_move() {
    let (_, one, _) = cas();
    let (cert, key) = one.server("thrift-migration");
    let g = Gateway::start(settings(&cert, &key, None, true), Flavour::Thrift1);
    // Every wire's first byte (a frame length's 0, binary's 0x80,
    // compact's 0x82, non-strict binary's 0) is told from a handshake's.
    for (framed, protocol) in WIRES {
        assert_eq!(
            g.plaintext_get(framed, protocol),
            Ok(1),
            "plaintext, framed {framed}, {protocol:?}"
        );
        assert_eq!(
            g.tls_get(client_tls(None), framed, protocol),
            Ok(1),
            "TLS, framed {framed}, {protocol:?}"
        );
    }
}

#[test]
fn a_client_certificate_from_another_ca_is_refused() {
    let (_, one, two) = cas();
    let (cert, key) = one.server("thrift-client-ca");
    let g = Gateway::start(
        settings(&cert, &key, Some(one.cert()), false),
        Flavour::Thrift1,
    );
    assert_eq!(g.tls_get(client_tls(Some(one)), false, BINARY), Ok(1));
    assert!(
        g.tls_get(client_tls(Some(two)), false, BINARY).is_err(),
        "a client certificate of another CA was served"
    );
    assert!(
        g.tls_get(client_tls(None), false, BINARY).is_err(),
        "a client without a certificate was served"
    );
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
    let (cert, key) = one.server("thrift-renewed-first");
    let served = dir.join("thrift-renewed.pem");
    let served_key = dir.join("thrift-renewed-key.pem");
    replace(&cert, &served, 0);
    replace(&key, &served_key, 0);
    let g = Gateway::start(
        settings(&served, &served_key, None, false),
        Flavour::Thrift1,
    );
    assert_eq!(g.tls_get(client_tls(None), true, BINARY), Ok(1));
    // Renewed with a certificate of a CA the client does not trust: new
    // connections fail, so the gateway took the new files.
    let (other_cert, other_key) = two.server("thrift-renewed-other");
    replace(&other_cert, &served, 10);
    replace(&other_key, &served_key, 10);
    assert!(
        g.tls_get(client_tls(None), true, BINARY).is_err(),
        "the renewed certificate was not served"
    );
    // And back to one it trusts.
    let (cert, key) = one.issue("thrift-renewed-again", "IP:127.0.0.1");
    replace(&cert, &served, 20);
    replace(&key, &served_key, 20);
    assert_eq!(g.tls_get(client_tls(None), true, BINARY), Ok(1));
}

#[test]
fn thrift2_serves_tls_clients_and_refuses_plaintext_ones() {
    let (_, one, _) = cas();
    let (cert, key) = one.server("thrift2-tls");
    let g = Gateway::start(settings(&cert, &key, None, false), Flavour::Thrift2);
    let get = basalt_thrift::thrift2::types::TGet {
        row: Some(bytes::Bytes::from_static(b"r")),
        ..Default::default()
    };
    let mut c = Client2::connect_tls(
        g.addr(),
        true,
        Protocol::Compact,
        client_tls(None),
        "localhost",
    )
    .unwrap();
    c.connection().set_timeout(Some(TIMEOUT)).unwrap();
    let result = c.get(b"t", get.clone()).unwrap();
    assert_eq!(result.column_values.map(|v| v.len()), Some(1));
    let mut plain = Client2::connect(g.addr(), true, Protocol::Compact).unwrap();
    plain.connection().set_timeout(Some(TIMEOUT)).unwrap();
    assert!(plain.get(b"t", get).is_err());
}

#[test]
fn a_key_anyone_may_read_stops_the_gateway_from_starting() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, one, _) = cas();
    let (cert, key) = one.issue("thrift-open-key", "IP:127.0.0.1");
    let open = dir.join("thrift-open-key-copy.pem");
    std::fs::copy(&key, &open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let config = ServerConfig {
        port: 0,
        tls: Some(settings(&cert, &open, None, false)),
        ..ServerConfig::default()
    };
    // Refused at bind, before a data directory would be opened.
    let error = Server::bind(&config).unwrap_err().to_string();
    assert!(error.contains("readable by every user"), "{error}");
}
