//! Kerberos on Thrift1 and Thrift2 (Thrift's SASL transport with GSSAPI,
//! as HBase's Thrift servers run it with `hbase.thrift.security.qop`),
//! against a real MIT KDC (scripts/throwaway_kdc.py): each protection
//! carries real calls made as the authenticated user, and a client that
//! does not authenticate gets nothing.
#![cfg(feature = "kerberos")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use bytes::Bytes;

use basalt::{ColumnFamilyDescriptor, Database, Put, SecurityOptions, TableDescriptor};
use basalt_kerberos::{KerberosSettings, Qop};
use basalt_thrift::client::KerberosClient;
use basalt_thrift::types::Mutation;
use basalt_thrift::{Client, Client2, ClientError, Flavour, Protocol, Server, ServerConfig};

mod common;
use common::thrift2;
use common::TIMEOUT;

#[path = "../../../test-support/kerberos.rs"]
mod kerberos;
use kerberos::{kdc, principal, REALM};

const BINARY: Protocol = Protocol::Binary { strict: true };

/// A Thrift server with Kerberos on (`protection`), over a database
/// holding `t` (row `r`, `cf:q` = `v`); alice is a superuser, bob holds no
/// grant.
struct Fixture {
    server: Option<Server>,
    db: Database,
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn addr(&self) -> SocketAddr {
        self.server.as_ref().unwrap().local_addr()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().unwrap();
        }
    }
}

fn start(flavour: Flavour, protection: Option<Qop>) -> Fixture {
    let kdc = kdc();
    let dir = tempfile::tempdir().unwrap();
    let mut options = basalt::Options::new(dir.path().join("db"));
    options.security = SecurityOptions {
        authorization: true,
        superusers: vec!["alice".into()],
        ..SecurityOptions::default()
    };
    if let Some(protection) = protection {
        options.security.authentication = basalt::Authentication::Kerberos;
        options.security.kerberos = Some(KerberosSettings {
            principal: format!("hbase/localhost@{REALM}"),
            keytab: kdc.server_keytab.clone(),
            thrift_protection: protection,
            ..KerberosSettings::default()
        });
    }
    let db = Database::open_with(options).unwrap();
    db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")))
        .unwrap();
    db.table("t")
        .unwrap()
        .put(&Put::new("r").add("cf", "q", "v"))
        .unwrap();
    let config = ServerConfig {
        port: 0,
        ..ServerConfig::default()
    };
    let server = Server::start_as(db.clone(), &config, flavour).unwrap();
    Fixture {
        server: Some(server),
        db,
        _dir: dir,
    }
}

fn as_user(user: &str, protection: &[Qop]) -> KerberosClient {
    KerberosClient {
        server_principal: format!("hbase/localhost@{REALM}"),
        client_principal: Some(principal(user)),
        protection: protection.to_vec(),
    }
}

fn connect(f: &Fixture, user: &str, framed: bool, protection: &[Qop]) -> Client {
    let client =
        Client::connect_kerberos(f.addr(), framed, BINARY, &as_user(user, protection)).unwrap();
    client.set_timeout(Some(TIMEOUT)).unwrap();
    client
}

fn put(value: &[u8]) -> Mutation {
    Mutation {
        is_delete: Some(false),
        column: Some(Bytes::from_static(b"cf:q")),
        value: Some(Bytes::copy_from_slice(value)),
        write_to_wal: Some(true),
    }
}

fn value(client: &mut Client, row: &[u8]) -> Result<Vec<u8>, ClientError> {
    let cells = client.get(b"t", row, b"cf:q")?;
    Ok(cells
        .first()
        .and_then(|c| c.value.clone())
        .unwrap_or_default()
        .to_vec())
}

#[test]
fn every_protection_carries_thrift1_calls_and_a_megabyte_value_both_ways() {
    let big: Vec<u8> = (0..(1 << 20)).map(|i| (i * 7 % 251) as u8).collect();
    for qop in [Qop::Authentication, Qop::Integrity, Qop::Privacy] {
        let f = start(Flavour::Thrift1, Some(qop));
        for framed in [false, true] {
            let mut alice = connect(&f, "alice", framed, &[qop]);
            assert_eq!(value(&mut alice, b"r").unwrap(), b"v", "{}", qop.name());
            let row = format!("big-{}-{framed}", qop.name());
            alice
                .mutate_row(b"t", row.as_bytes(), vec![put(&big)])
                .unwrap();
            assert_eq!(value(&mut alice, row.as_bytes()).unwrap(), big);
            // Several calls on one connection keep their order.
            for _ in 0..3 {
                assert_eq!(alice.get_table_names().unwrap(), vec![Bytes::from("t")]);
            }
        }
    }
}

#[test]
fn a_user_without_grants_is_denied_and_writes_nothing() {
    let f = start(Flavour::Thrift1, Some(Qop::Authentication));
    let mut bob = connect(&f, "bob", false, &[Qop::Authentication]);
    let err = value(&mut bob, b"r").unwrap_err();
    assert!(
        matches!(&err, ClientError::Io(m) if m.contains("AccessDeniedException") && m.contains("bob")),
        "{err}"
    );
    let err = bob
        .mutate_row(b"t", b"r", vec![put(b"forged")])
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::Io(m) if m.contains("bob")),
        "{err}"
    );
    let row =
        f.db.table("t")
            .unwrap()
            .get(&basalt::Get::new("r"))
            .unwrap();
    assert_eq!(row.value(b"cf", b"q").unwrap().as_ref(), b"v");
}

#[test]
fn a_client_without_sasl_is_refused() {
    let f = start(Flavour::Thrift1, Some(Qop::Authentication));
    for framed in [false, true] {
        let mut plain = Client::connect(f.addr(), framed, BINARY).unwrap();
        plain.set_timeout(Some(TIMEOUT)).unwrap();
        let err = plain.get_table_names().unwrap_err();
        assert!(matches!(err, ClientError::Transport(_)), "{err}");
    }
    // alice still gets in.
    let mut alice = connect(&f, "alice", false, &[Qop::Authentication]);
    assert_eq!(value(&mut alice, b"r").unwrap(), b"v");
}

#[test]
fn a_client_insisting_on_more_protection_than_offered_is_refused() {
    let f = start(Flavour::Thrift1, Some(Qop::Authentication));
    let err = Client::connect_kerberos(f.addr(), false, BINARY, &as_user("alice", &[Qop::Privacy]))
        .unwrap_err();
    assert!(err.to_string().contains("none of privacy"), "{err}");
}

#[test]
fn thrift2_authenticates_the_same_way() {
    let f = start(Flavour::Thrift2, Some(Qop::Privacy));
    let mut alice =
        Client2::connect_kerberos(f.addr(), false, BINARY, &as_user("alice", &[Qop::Privacy]))
            .unwrap();
    alice.connection().set_timeout(Some(TIMEOUT)).unwrap();
    let result = alice.get(b"t", thrift2::get(b"r")).unwrap();
    assert_eq!(
        thrift2::cells(&result),
        [("cf:q".to_string(), "v".to_string())]
    );
    alice
        .put(
            b"t",
            thrift2::put(b"r2", vec![thrift2::cell(b"cf", b"q", b"w")]),
        )
        .unwrap();
    let mut bob =
        Client2::connect_kerberos(f.addr(), false, BINARY, &as_user("bob", &[Qop::Privacy]))
            .unwrap();
    bob.connection().set_timeout(Some(TIMEOUT)).unwrap();
    let err = bob.get(b"t", thrift2::get(b"r")).unwrap_err();
    assert!(err.to_string().contains("bob"), "{err}");
}

/// Sends raw negotiation bytes and reads the server's first answer.
fn first_answer(addr: SocketAddr, bytes: &[u8]) -> (u8, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream.write_all(bytes).unwrap();
    let mut head = [0u8; 5];
    stream.read_exact(&mut head).unwrap();
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).unwrap();
    (head[0], String::from_utf8_lossy(&payload).into_owned())
}

#[test]
fn another_mechanism_or_a_bad_ticket_is_answered_bad() {
    let f = start(Flavour::Thrift1, Some(Qop::Authentication));
    let (status, message) = first_answer(f.addr(), b"\x01\x00\x00\x00\x05PLAIN");
    assert_eq!(status, basalt_thrift::sasl::BAD);
    assert_eq!(message, "Unsupported mechanism type PLAIN");
    let mut garbage = basalt_thrift::sasl::message(1, b"GSSAPI");
    garbage.extend(basalt_thrift::sasl::message(2, b"not a Kerberos token"));
    let (status, message) = first_answer(f.addr(), &garbage);
    assert_eq!(status, basalt_thrift::sasl::BAD, "{message}");
}

#[test]
fn a_server_without_kerberos_tells_a_sasl_client_so() {
    let f = start(Flavour::Thrift1, None);
    let (status, message) = first_answer(f.addr(), b"\x01\x00\x00\x00\x06GSSAPI");
    assert_eq!(status, basalt_thrift::sasl::BAD);
    assert!(message.contains("not kerberos"), "{message}");
    let mut plain = Client::connect(f.addr(), false, BINARY).unwrap();
    assert_eq!(plain.get_table_names().unwrap(), vec![Bytes::from("t")]);
}
