//! Hostile and broken input, sent over raw sockets: the server answers with
//! a TApplicationException of the right type or closes the connection, and
//! keeps serving everyone else.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};

use bytes::{BufMut, Bytes, BytesMut};

use basalt_thrift::protocol::{encode_message, MessageHeader, MessageType, Protocol, Value};
use basalt_thrift::types::{app_error, TApplicationException, Thrift};
use basalt_thrift::{Client, ServerConfig};

use common::{eventually, TestServer, WIRES};

const STRICT: Protocol = Protocol::Binary { strict: true };

fn message(
    protocol: Protocol,
    framed: bool,
    name: &str,
    kind: MessageType,
    body: Value,
) -> Vec<u8> {
    let header = MessageHeader {
        name: name.into(),
        kind,
        seqid: 42,
    };
    let mut out = BytesMut::new();
    encode_message(protocol, &header, &body, &mut out);
    if framed {
        let mut framed = BytesMut::new();
        framed.put_u32(out.len() as u32);
        framed.put_slice(&out);
        return framed.to_vec();
    }
    out.to_vec()
}

/// Reads the next reply and expects a TApplicationException of `kind`.
fn expect_app_error(c: &mut Client, kind: i32) -> String {
    let (header, body) = c.read_reply().unwrap();
    assert_eq!(header.kind, MessageType::Exception, "{body:?}");
    assert_eq!(header.seqid, 42);
    let e = TApplicationException::from_value(body).unwrap();
    assert_eq!(e.kind, Some(kind), "{e:?}");
    e.message.unwrap_or_default()
}

/// The server closed the connection: a read ends (EOF or reset), not times out.
fn expect_closed(c: &mut Client) {
    let mut buf = [0u8; 64];
    match c.stream().read(&mut buf) {
        Ok(0) => {}
        Ok(n) => panic!("expected the connection closed, read {n} bytes"),
        Err(e) => assert!(
            !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "expected the connection closed, read timed out"
        ),
    }
}

fn still_serving(server: &TestServer) {
    for (framed, protocol) in WIRES {
        let mut c = server.client(framed, protocol);
        c.get_table_names().unwrap();
    }
}

#[test]
fn unknown_methods_and_wrong_types_get_application_exceptions() {
    let server = TestServer::start();
    for (framed, protocol) in WIRES {
        let mut c = server.client(framed, protocol);
        let raw = message(
            protocol,
            framed,
            "noSuchMethod",
            MessageType::Call,
            Value::Struct(vec![]),
        );
        c.stream().write_all(&raw).unwrap();
        let m = expect_app_error(&mut c, app_error::UNKNOWN_METHOD);
        assert!(m.contains("noSuchMethod"), "{m}");

        // getRow's tableName (field 1) must be binary, not i32.
        let body = Value::Struct(vec![
            (1, Value::I32(7)),
            (2, Value::Binary(Bytes::from_static(b"r"))),
        ]);
        let raw = message(protocol, framed, "getRow", MessageType::Call, body);
        c.stream().write_all(&raw).unwrap();
        let m = expect_app_error(&mut c, app_error::PROTOCOL_ERROR);
        assert!(
            m.contains("table_name") && m.contains("expected binary"),
            "{m}"
        );

        // A missing required argument.
        let raw = message(
            protocol,
            framed,
            "isTableEnabled",
            MessageType::Call,
            Value::Struct(vec![]),
        );
        c.stream().write_all(&raw).unwrap();
        expect_app_error(&mut c, app_error::PROTOCOL_ERROR);

        // A reply sent as a request.
        let raw = message(
            protocol,
            framed,
            "getTableNames",
            MessageType::Reply,
            Value::Struct(vec![]),
        );
        c.stream().write_all(&raw).unwrap();
        expect_app_error(&mut c, app_error::INVALID_MESSAGE_TYPE);

        // The connection goes on.
        c.get_table_names().unwrap();
    }
}

#[test]
fn oversized_frames_and_messages_close_the_connection() {
    let server = TestServer::with_config(ServerConfig {
        port: 0,
        max_frame_bytes: 4096,
        ..ServerConfig::default()
    });
    // A frame over the limit: closed before anything is read or allocated.
    let mut c = server.client(true, STRICT);
    c.stream()
        .write_all(&(64u32 * 1024 * 1024).to_be_bytes())
        .unwrap();
    c.stream().write_all(&[0x80, 0x01, 0, 1]).unwrap();
    expect_closed(&mut c);

    // A negative frame length.
    let mut c = server.client(true, STRICT);
    c.stream()
        .write_all(&[0xff, 0xff, 0xff, 0xf0, 0x80])
        .unwrap();
    expect_closed(&mut c);

    // Unframed: a string claiming 2 GB gets a protocol error, then a close
    // (there is no telling where the next message would start).
    for protocol in [STRICT, Protocol::Compact] {
        let mut c = server.client(false, protocol);
        let big = Value::Struct(vec![(1, Value::Binary(Bytes::from(vec![b'x'; 5000])))]);
        let raw = message(protocol, false, "getTableRegions", MessageType::Call, big);
        c.stream().write_all(&raw[..raw.len() / 2]).unwrap();
        let m = expect_app_error(&mut c, app_error::PROTOCOL_ERROR);
        assert!(m.contains("limit"), "{m}");
        expect_closed(&mut c);
    }

    // Within the limit, framed and not, works.
    let mut c = server.client(true, STRICT);
    c.create_table(b"t", vec![basalt_thrift::client::family("cf")])
        .unwrap();
    c.mutate_row(
        b"t",
        b"r",
        vec![basalt_thrift::client::put(b"cf:q", &[7u8; 2000])],
    )
    .unwrap();
    let mut c = server.client(false, Protocol::Compact);
    assert_eq!(c.get(b"t", b"r", b"cf:q").unwrap().len(), 1);
    still_serving(&server);
}

#[test]
fn truncated_and_garbled_messages() {
    let server = TestServer::start();
    let body = Value::Struct(vec![(1, Value::Binary(Bytes::from_static(b"some-table")))]);

    // Framed: a frame whose message ends early is answered with a protocol
    // error, and the next frame is served.
    for protocol in [
        STRICT,
        Protocol::Compact,
        Protocol::Binary { strict: false },
    ] {
        let mut c = server.client(true, protocol);
        let inner = message(
            protocol,
            false,
            "getTableRegions",
            MessageType::Call,
            body.clone(),
        );
        let cut = &inner[..inner.len() - 3];
        c.stream()
            .write_all(&(cut.len() as u32).to_be_bytes())
            .unwrap();
        c.stream().write_all(cut).unwrap();
        let m = expect_app_error(&mut c, app_error::PROTOCOL_ERROR);
        assert!(m.contains("truncated"), "{m}");
        c.get_table_names().unwrap();
    }

    // Unframed: an unknown field type code gets a protocol error and a close.
    let mut c = server.client(false, STRICT);
    let mut raw = BytesMut::new();
    raw.put_u32(0x8001_0001);
    raw.put_i32(6);
    raw.put_slice(b"getRow");
    raw.put_i32(42);
    raw.put_u8(99); // no such type
    raw.put_i16(1);
    c.stream().write_all(&raw).unwrap();
    expect_app_error(&mut c, app_error::PROTOCOL_ERROR);
    expect_closed(&mut c);

    // Nesting beyond the cap.
    let mut c = server.client(false, STRICT);
    let mut raw = BytesMut::new();
    raw.put_u32(0x8001_0001);
    raw.put_i32(6);
    raw.put_slice(b"getRow");
    raw.put_i32(42);
    raw.put_u8(15); // field 1: a list
    raw.put_i16(1);
    for _ in 0..100 {
        raw.put_u8(15); // of lists, one element each
        raw.put_i32(1);
    }
    c.stream().write_all(&raw).unwrap();
    let m = expect_app_error(&mut c, app_error::PROTOCOL_ERROR);
    assert!(m.contains("nesting") || m.contains("element type"), "{m}");

    // A client that sends half a message and leaves.
    for (framed, protocol) in WIRES {
        let mut c = server.client(framed, protocol);
        let raw = message(
            protocol,
            framed,
            "getTableRegions",
            MessageType::Call,
            body.clone(),
        );
        c.stream().write_all(&raw[..raw.len() - 2]).unwrap();
        drop(c);
    }

    // Bytes that are no Thrift at all: closed.
    let mut c = server.client(false, STRICT);
    c.stream().write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    expect_closed(&mut c);
    let mut c = server.client(false, STRICT);
    c.stream().write_all(&[0x82, 0x07, 0, 0, 0, 0]).unwrap(); // compact, version 7
    expect_closed(&mut c);

    still_serving(&server);
    eventually("every connection to close", || {
        server.server().open_connections() == 0
    });
}
