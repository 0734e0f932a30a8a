//! Scanners and connections over their lifetime: scanners die with the
//! connection that opened them or when their lease runs out, and shutdown
//! closes idle connections and then the database.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Read;

use basalt_thrift::client::{family, put};
use basalt_thrift::types::BatchMutation;
use basalt_thrift::{ClientError, ServerConfig};
use bytes::Bytes;

use common::{eventually, TestServer, WIRES};

fn fill(server: &TestServer) {
    let mut c = server.default_client();
    c.create_table(b"t", vec![family("cf")]).unwrap();
    let batches = (0..100)
        .map(|i| BatchMutation {
            row: Some(Bytes::from(format!("row{i:03}"))),
            mutations: Some(vec![put(b"cf:q", b"v")]),
        })
        .collect();
    c.mutate_rows(b"t", batches).unwrap();
}

#[test]
fn a_vanished_client_releases_its_scanners() {
    let server = TestServer::start();
    fill(&server);
    for (framed, protocol) in WIRES {
        let mut c = server.client(framed, protocol);
        let idle = c.scanner_open(b"t", b"", &[]).unwrap();
        let busy = c.scanner_open(b"t", b"", &[]).unwrap();
        assert_eq!(c.scanner_get_list(busy, 10).unwrap().len(), 10);
        let mut other = server.client(framed, protocol);
        let kept = other.scanner_open(b"t", b"", &[]).unwrap();
        assert_eq!(server.server().open_scanners(), 3, "{idle} {busy} {kept}");
        drop(c); // mid-scan
        eventually("the scanners of the closed connection to go", || {
            server.server().open_scanners() == 1
        });
        // The other connection's scanner is untouched.
        assert_eq!(other.scanner_get_list(kept, 1000).unwrap().len(), 100);
        other.scanner_close(kept).unwrap();
        assert_eq!(server.server().open_scanners(), 0);
    }
}

#[test]
fn unused_scanners_expire_after_the_lease() {
    let server = TestServer::with_config(ServerConfig {
        port: 0,
        scanner_lease_ms: 20,
        ..ServerConfig::default()
    });
    fill(&server);
    let mut c = server.default_client();
    let id = c.scanner_open(b"t", b"", &[]).unwrap();
    assert_eq!(c.scanner_get(id).unwrap().len(), 1);
    eventually("the scanner lease to expire", || {
        server.server().open_scanners() == 0
    });
    assert!(matches!(
        c.scanner_get(id),
        Err(ClientError::IllegalArgument(m)) if m.contains("scanner ID is invalid")
    ));
    // The connection itself is fine.
    assert!(c.is_table_enabled(b"t").unwrap());
}

#[test]
fn shutdown_closes_idle_connections_and_the_database() {
    let mut server = TestServer::start();
    fill(&server);
    let mut idle: Vec<_> = WIRES
        .iter()
        .map(|(framed, protocol)| server.client(*framed, *protocol))
        .collect();
    let id = idle[0].scanner_open(b"t", b"", &[]).unwrap();
    assert!(id >= 0);
    let dir = server.dir.path().join("db");
    server.server.take().unwrap().shutdown().unwrap();
    for c in idle.iter_mut() {
        let mut buf = [0u8; 8];
        let n = c.stream().read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0, "the server closes idle connections");
    }
    // The directory lock is released and the data is there.
    let db = basalt::Database::open(&dir).unwrap();
    let rows = db
        .table("t")
        .unwrap()
        .scan(&basalt::Scan::new())
        .unwrap()
        .count();
    assert_eq!(rows, 100);
    db.close().unwrap();
}

#[test]
fn a_client_gone_mid_call_releases_its_scanners() {
    use std::io::Write;

    use basalt_thrift::protocol::{encode_message, MessageHeader, MessageType};
    use basalt_thrift::types::{args, Thrift};

    let server = TestServer::start();
    fill(&server);
    for (framed, protocol) in WIRES {
        let mut c = server.client(framed, protocol);
        let id = c.scanner_open(b"t", b"", &[]).unwrap();
        // Send scannerGetList and vanish without reading the answer.
        let call = args::ScannerGetList {
            id: Some(id),
            nb_rows: Some(1000),
        };
        let header = MessageHeader {
            name: "scannerGetList".into(),
            kind: MessageType::Call,
            seqid: 1,
        };
        let mut out = bytes::BytesMut::new();
        encode_message(protocol, &header, &call.to_value(), &mut out);
        if framed {
            c.stream()
                .write_all(&(out.len() as u32).to_be_bytes())
                .unwrap();
        }
        c.stream().write_all(&out).unwrap();
        drop(c);
        eventually("the scanner of the vanished client to go", || {
            server.server().open_scanners() == 0
        });
    }
    eventually("every connection to close", || {
        server.server().open_connections() == 0
    });
}

#[test]
fn scanners_per_connection_are_capped() {
    let server = TestServer::with_config(ServerConfig {
        port: 0,
        max_scanners_per_connection: 3,
        ..ServerConfig::default()
    });
    fill(&server);
    let mut c = server.default_client();
    let ids: Vec<i32> = (0..3)
        .map(|_| c.scanner_open(b"t", b"", &[]).unwrap())
        .collect();
    assert!(matches!(
        c.scanner_open(b"t", b"", &[]),
        Err(ClientError::Io(m)) if m.contains("too many open scanners")
    ));
    // Another connection has its own allowance; closing one frees a slot.
    let mut other = server.default_client();
    other.scanner_open(b"t", b"", &[]).unwrap();
    c.scanner_close(ids[0]).unwrap();
    c.scanner_open(b"t", b"", &[]).unwrap();
    assert_eq!(server.server().open_scanners(), 4);
}

#[test]
fn another_connection_cannot_use_or_close_a_scanner() {
    let server = TestServer::start();
    fill(&server);
    let mut owner = server.default_client();
    let first = owner.scanner_open(b"t", b"", &[]).unwrap();
    let second = owner.scanner_open(b"t", b"", &[]).unwrap();
    assert_ne!(
        second,
        first.wrapping_add(1),
        "scanner ids are not sequential"
    );
    let mut thief = server.default_client();
    assert!(thief.scanner_get_list(first, 10).is_err());
    assert!(thief.scanner_close(first).is_err());
    // The owner's scanner is untouched: it still reads every row.
    assert_eq!(owner.scanner_get_list(first, 1000).unwrap().len(), 100);
    owner.scanner_close(first).unwrap();
    owner.scanner_close(second).unwrap();
}
