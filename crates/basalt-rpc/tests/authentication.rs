//! The authentication handshake as HBase 2.6's server runs it, on a
//! server without security (docs/native-rpc.md, "Authentication"): a
//! client that starts SASL is told to fall back to SIMPLE, a client asking
//! the server's principal is told security is off, and neither loses its
//! connection. Kerberos itself is tests/kerberos.rs (feature `kerberos`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use basalt_rpc::frame;
use basalt_rpc::proto::hbase::TableName;
use basalt_rpc::proto::rpc::ConnectionHeader;
use bytes::{BufMut, Bytes};
use prost::Message;

mod common;

fn raw(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

fn header(service: &str) -> Vec<u8> {
    let header = ConnectionHeader {
        service_name: Some(service.to_string()),
        ..Default::default()
    }
    .encode_to_vec();
    let mut out = Vec::new();
    out.put_u32(header.len() as u32);
    out.extend_from_slice(&header);
    out
}

fn read_answer(s: &mut TcpStream) -> basalt_rpc::proto::rpc::ResponseHeader {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).unwrap();
    frame::split_response(Bytes::from(body)).unwrap().0
}

/// A call on the connection is answered: the connection is serving.
fn answers_a_call(s: &mut TcpStream) {
    s.write_all(&frame::encode_request(
        7,
        "NoSuchMethod",
        &TableName::default(),
        &[],
    ))
    .unwrap();
    let answer = read_answer(s);
    assert_eq!(answer.call_id, Some(7));
    assert!(answer.exception.is_some());
}

#[test]
fn a_sasl_client_is_switched_to_simple_by_a_server_without_security() {
    let f = common::start_serving(|_| {});
    let mut s = raw(f.server.region_server_addr());
    // KERBEROS, and the first token right behind it, as the Java client
    // sends them.
    let mut hello = b"HBas\x00\x51".to_vec();
    hello.put_u32(5);
    hello.extend_from_slice(b"token");
    s.write_all(&hello).unwrap();
    let mut reply = [0u8; 8];
    s.read_exact(&mut reply).unwrap();
    assert_eq!(reply, frame::SWITCH_TO_SIMPLE_AUTH);
    s.write_all(&header("ClientService")).unwrap();
    answers_a_call(&mut s);
}

#[test]
fn a_sasl_token_over_the_limit_closes_the_connection() {
    let f = common::start_serving(|_| {});
    let mut s = raw(f.server.region_server_addr());
    let mut hello = b"HBas\x00\x52".to_vec();
    hello.put_u32(u32::MAX);
    s.write_all(&hello).unwrap();
    let mut reply = [0u8; 8];
    s.read_exact(&mut reply).unwrap();
    assert_eq!(reply, frame::SWITCH_TO_SIMPLE_AUTH);
    let mut rest = Vec::new();
    assert_eq!(s.read_to_end(&mut rest).unwrap(), 0, "closed, nothing more");
}

#[test]
fn asking_the_principal_of_a_server_without_security_is_answered_and_the_connection_goes_on() {
    let f = common::start_serving(|_| {});
    let mut s = raw(f.server.master_addr());
    s.write_all(frame::SECURITY_PREAMBLE).unwrap();
    let answer = read_answer(&mut s);
    assert_eq!(answer.call_id, Some(frame::NO_CALL));
    assert_eq!(
        answer.exception.unwrap().exception_class_name.as_deref(),
        Some("org.apache.hadoop.hbase.ipc.SecurityNotEnabledException")
    );
    s.write_all(b"HBas\x00\x50").unwrap();
    s.write_all(&header("ClientService")).unwrap();
    answers_a_call(&mut s);
}

/// Without the `kerberos` feature, a server asked to run Kerberos says
/// how to get it instead of starting without it.
#[cfg(not(feature = "kerberos"))]
#[test]
fn a_build_without_kerberos_refuses_to_serve_kerberos() {
    let dir = tempfile::tempdir().unwrap();
    let keytab = dir.path().join("server.keytab");
    std::fs::write(&keytab, b"\x05\x02").unwrap();
    let mut options = basalt::Options::new(dir.path().join("data"));
    options.security = basalt::SecurityOptions {
        authentication: basalt::Authentication::Kerberos,
        kerberos: Some(basalt_kerberos::KerberosSettings {
            principal: "hbase/_HOST@BASALT.TEST".into(),
            keytab,
            ..Default::default()
        }),
        ..Default::default()
    };
    let db = basalt::Database::open_with(options).unwrap();
    let config = basalt_rpc::RpcConfig {
        master_port: 0,
        region_server_port: 0,
        ..Default::default()
    };
    let err = basalt_rpc::RpcServer::bind(&config)
        .unwrap()
        .serve(db, "c".into())
        .unwrap_err();
    assert!(err.to_string().contains("--features kerberos"), "{err}");
}
