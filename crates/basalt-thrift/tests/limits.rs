//! What clients can make the server hold is bounded, and every refusal is
//! one the client sees at once: connections over the cap are closed, idle
//! connections are closed, scanners over the cap are refused with a
//! message naming it, broken or oversized frames are answered or closed
//! (never left hanging), trickled messages cost work linear in their size,
//! and requests wait for room in the in-flight budget. Nothing here is
//! timed: work is counted, and waits are hang guards.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{ErrorKind, Read, Write};
use std::time::Duration;

use bytes::{BufMut, BytesMut};

use basalt_thrift::client::family;
use basalt_thrift::protocol::{MessageType, Protocol};
use basalt_thrift::types::{app_error, TApplicationException, Thrift};
use basalt_thrift::{Client, ClientError, ServerConfig};

use common::{eventually, TestServer};

const STRICT: Protocol = Protocol::Binary { strict: true };

/// How long a read may take before the test calls it a hang: far longer
/// than any answer takes, far shorter than a client's own timeout.
const HANG: Duration = Duration::from_secs(20);

fn config() -> ServerConfig {
    ServerConfig {
        port: 0,
        ..ServerConfig::default()
    }
}

/// A strict binary call header for `name` with sequence id 42.
fn header(out: &mut BytesMut, name: &str) {
    out.put_u32(0x8001_0001);
    out.put_i32(name.len() as i32);
    out.put_slice(name.as_bytes());
    out.put_i32(42);
}

/// A strict binary call whose argument 1 is a list of `n` one-byte values:
/// about `n` bytes on the wire, forty times that decoded.
fn tiny_elements(name: &str, n: usize) -> BytesMut {
    let mut out = BytesMut::with_capacity(n + 64);
    header(&mut out, name);
    out.put_u8(15); // field 1: list
    out.put_i16(1);
    out.put_u8(3); // of bytes
    out.put_i32(n as i32);
    out.put_bytes(7, n);
    out.put_u8(0);
    out
}

fn framed(message: &[u8]) -> Vec<u8> {
    let mut out = (message.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(message);
    out
}

/// The server closed the connection: a read ends (EOF or reset) within the
/// hang guard instead of timing out.
fn expect_closed(c: &mut Client) {
    c.set_timeout(Some(HANG)).unwrap();
    let mut buf = [0u8; 256];
    loop {
        match c.stream().read(&mut buf) {
            Ok(0) => return,
            Ok(n) => panic!("expected the connection closed, read {n} bytes"),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                assert!(
                    !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
                    "the connection was left hanging instead of closed"
                );
                return;
            }
        }
    }
}

/// Reads the next reply and expects a TApplicationException of `kind`.
fn expect_app_error(c: &mut Client, kind: i32) -> String {
    c.set_timeout(Some(HANG)).unwrap();
    let (header, body) = c.read_reply().unwrap();
    assert_eq!(header.kind, MessageType::Exception, "{body:?}");
    assert_eq!(header.seqid, 42);
    let e = TApplicationException::from_value(body).unwrap();
    assert_eq!(e.kind, Some(kind), "{e:?}");
    e.message.unwrap_or_default()
}

#[test]
fn a_connection_over_the_cap_is_closed_at_once_and_earlier_ones_keep_working() {
    let server = TestServer::with_config(ServerConfig {
        max_connections: 3,
        ..config()
    });
    let mut clients: Vec<Client> = (0..3).map(|_| server.default_client()).collect();
    for c in &mut clients {
        c.get_table_names().unwrap();
    }
    let mut over = server.default_client();
    expect_closed(&mut over);
    assert_eq!(server.server().stats().refused_connections, 1);
    for c in &mut clients {
        c.get_table_names().unwrap();
    }
    // A closed connection makes room for a new one.
    drop(clients.pop());
    eventually("the closed connection to be counted out", || {
        server.server().open_connections() == 2
    });
    server.default_client().get_table_names().unwrap();
}

#[test]
fn a_connection_with_no_complete_request_for_the_idle_timeout_is_closed() {
    let server = TestServer::with_config(ServerConfig {
        idle_timeout_ms: 200,
        ..config()
    });
    // After a call, nothing more.
    let mut quiet = server.default_client();
    quiet.get_table_names().unwrap();
    expect_closed(&mut quiet);
    // Half a message, and nothing more: not a complete request either.
    let mut slow = server.default_client();
    let mut half = BytesMut::new();
    header(&mut half, "getTableNames");
    slow.stream().write_all(&half).unwrap();
    expect_closed(&mut slow);
    // Framed, never a byte.
    let mut silent = server.client(true, STRICT);
    expect_closed(&mut silent);
    eventually("the idle closes to be counted", || {
        server.server().stats().idle_closed == 3
    });
}

#[test]
fn a_scanner_over_the_server_cap_is_refused_with_a_message_naming_the_limit() {
    let server = TestServer::with_config(ServerConfig {
        max_scanners: 3,
        max_scanners_per_connection: 2,
        ..config()
    });
    let mut a = server.default_client();
    let mut b = server.default_client();
    a.create_table(b"t", vec![family("cf")]).unwrap();
    let mut open = vec![a.scanner_open(b"t", b"", &[]).unwrap()];
    open.push(a.scanner_open(b"t", b"", &[]).unwrap());
    // The connection's own cap.
    match a.scanner_open(b"t", b"", &[]) {
        Err(ClientError::Io(m)) => assert!(m.contains("max_scanners_per_connection"), "{m}"),
        other => panic!("{other:?}"),
    }
    b.scanner_open(b"t", b"", &[]).unwrap();
    // The server's.
    match b.scanner_open(b"t", b"", &[]) {
        Err(ClientError::Io(m)) => {
            assert!(
                m.contains("on the server") && m.contains("limit 3") && m.contains("max_scanners"),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.server().open_scanners(), 3);
    // Closing one makes room.
    a.scanner_close(open[0]).unwrap();
    b.scanner_open(b"t", b"", &[]).unwrap();
}

#[test]
fn a_framed_message_whose_header_cannot_be_decoded_is_closed_not_left_hanging() {
    let server = TestServer::start();
    // A bad version word, and a message type that does not exist: no
    // header, so nothing to answer; the connection is closed.
    for body in [
        vec![0x80, 0x7f, 0x00, 0x01, 0, 0, 0, 1, b'x', 0, 0, 0, 1, 0],
        vec![0x80, 0x01, 0x00, 0x09, 0, 0, 0, 1, b'x', 0, 0, 0, 1, 0],
        vec![0x82, 0x07, 0x01, 0x01, b'x', 0],
    ] {
        let mut c = server.client(true, STRICT);
        c.stream().write_all(&framed(&body)).unwrap();
        expect_closed(&mut c);
    }
    // A header that decodes and a body that does not: answered, and the
    // connection goes on.
    let mut c = server.client(true, STRICT);
    let mut message = BytesMut::new();
    header(&mut message, "getTableNames");
    message.put_u8(99); // no such type
    message.put_i16(1);
    c.stream().write_all(&framed(&message)).unwrap();
    let m = expect_app_error(&mut c, app_error::PROTOCOL_ERROR);
    assert!(m.contains("99"), "{m}");
    c.get_table_names().unwrap();
}

#[test]
fn an_over_limit_frame_gets_an_application_exception_naming_the_limit_then_an_end_of_stream() {
    let server = TestServer::with_config(ServerConfig {
        max_frame_bytes: 4096,
        ..config()
    });
    for protocol in [STRICT, Protocol::Compact] {
        let mut c = server.client(true, protocol);
        // The length and the message's start; the body is never sent.
        let mut start = BytesMut::new();
        start.put_u32(64 * 1024 * 1024);
        match protocol {
            Protocol::Compact => {
                start.put_u8(0x82);
                start.put_u8(0x21);
                start.put_u8(42);
                start.put_u8(6);
                start.put_slice(b"getRow");
            }
            _ => header(&mut start, "getRow"),
        }
        c.stream().write_all(&start).unwrap();
        let m = expect_app_error(&mut c, app_error::PROTOCOL_ERROR);
        assert!(m.contains("4096") && m.contains("max_frame_bytes"), "{m}");
        expect_closed(&mut c);
    }
}

#[test]
fn a_trickled_unframed_message_costs_decoding_work_linear_in_its_size() {
    let server = TestServer::start();
    // Two megabytes of strings inside structs: each field can only be
    // seen complete once its bytes are there.
    let mut message = BytesMut::new();
    header(&mut message, "noSuchMethod");
    let n = 40_000;
    message.put_u8(15); // field 1: list
    message.put_i16(1);
    message.put_u8(12); // of structs
    message.put_i32(n);
    for i in 0..n {
        message.put_u8(11); // field 1: a 40-byte string
        message.put_i16(1);
        message.put_i32(40);
        message.put_slice(format!("{i:040}").as_bytes());
        message.put_u8(0);
    }
    message.put_u8(0);
    let size = message.len() as u64;
    let before = server.server().stats().decode_bytes_examined;
    let mut c = server.default_client();
    for (i, piece) in message.chunks(1024).enumerate() {
        c.stream().write_all(piece).unwrap();
        // Let the server see the pieces one by one, not all at once.
        if i % 16 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let m = expect_app_error(&mut c, app_error::UNKNOWN_METHOD);
    assert!(m.contains("noSuchMethod"), "{m}");
    let examined = server.server().stats().decode_bytes_examined - before;
    // Walked once as it arrived (plus the pieces of fields cut short), then
    // decoded once: re-decoding on every read would be hundreds of times.
    assert!(examined >= size, "examined {examined} of {size}");
    assert!(
        examined <= 3 * size,
        "examined {examined} bytes for a {size}-byte message"
    );
    c.get_table_names().unwrap();
}

#[test]
fn a_message_of_tiny_elements_is_refused_before_it_is_decoded() {
    let server = TestServer::start();
    for framing in [true, false] {
        let mut c = server.client(framing, STRICT);
        let message = tiny_elements("getRow", 1 << 20);
        let raw = if framing {
            framed(&message)
        } else {
            message.to_vec()
        };
        c.stream().write_all(&raw).unwrap();
        let m = expect_app_error(&mut c, app_error::PROTOCOL_ERROR);
        assert!(
            m.contains("decoded") && m.contains("split the request"),
            "{m}"
        );
        if framing {
            c.get_table_names().unwrap();
        } else {
            expect_closed(&mut c);
        }
    }
    assert_eq!(server.server().stats().refused_decodes, 2);
}

#[test]
fn a_second_large_message_waits_for_the_first_to_finish() {
    let budget = 1024 * 1024;
    let server = TestServer::with_config(ServerConfig {
        max_in_flight_bytes: budget,
        max_frame_bytes: 4 * budget,
        ..config()
    });
    // Two calls of 600 KB each (an unknown method with a long string):
    // together over the budget.
    let call = |name: &str| {
        let mut out = BytesMut::new();
        header(&mut out, name);
        out.put_u8(11);
        out.put_i16(1);
        out.put_i32(600_000);
        out.put_bytes(b'v', 600_000);
        out.put_u8(0);
        framed(&out)
    };
    let first = call("first");
    let second = call("second");
    let mut a = server.client(true, STRICT);
    // The first sends its length and half its body, and holds its room.
    a.stream().write_all(&first[..300_000]).unwrap();
    eventually("the first message to hold its room", || {
        server.server().stats().in_flight_bytes >= 600_000
    });
    let mut b = server.client(true, STRICT);
    b.stream().write_all(&second).unwrap();
    eventually("the second message to wait for room", || {
        server.server().stats().budget_waits == 1
    });
    // The first finishes; both are answered.
    a.stream().write_all(&first[300_000..]).unwrap();
    let m = expect_app_error(&mut a, app_error::UNKNOWN_METHOD);
    assert!(m.contains("first"), "{m}");
    let m = expect_app_error(&mut b, app_error::UNKNOWN_METHOD);
    assert!(m.contains("second"), "{m}");
    eventually("the budget to be free again", || {
        server.server().stats().in_flight_bytes == 0
    });
    assert_eq!(server.server().stats().budget_waits, 1);

    // A message larger than the whole budget passes when it is alone.
    let mut big = BytesMut::new();
    header(&mut big, "big");
    big.put_u8(11);
    big.put_i16(1);
    big.put_i32(3 * 1024 * 1024);
    big.put_bytes(b'v', 3 * 1024 * 1024);
    big.put_u8(0);
    a.stream().write_all(&framed(&big)).unwrap();
    let m = expect_app_error(&mut a, app_error::UNKNOWN_METHOD);
    assert!(m.contains("big"), "{m}");
}

#[test]
fn ordinary_batches_of_short_cells_are_not_refused_for_their_decoded_size() {
    use basalt_thrift::client::{delete, put};
    use basalt_thrift::types::BatchMutation;
    use bytes::Bytes;
    let server = TestServer::start();
    // The densest ordinary requests: compact puts of one-byte values and
    // compact deletes, tens of times their size decoded, well past the
    // 64 KiB every request may take.
    for (framed, protocol) in [(false, Protocol::Compact), (true, STRICT)] {
        let mut c = server.client(framed, protocol);
        let _ = c.create_table(b"t", vec![family("cf")]);
        let batch = |mutation: &dyn Fn() -> basalt_thrift::types::Mutation| {
            (0..20_000)
                .map(|i| BatchMutation {
                    row: Some(Bytes::from(format!("{i}"))),
                    mutations: Some(vec![mutation()]),
                })
                .collect::<Vec<_>>()
        };
        c.mutate_rows(b"t", batch(&|| put(b"cf:q", b"v"))).unwrap();
        c.mutate_rows(b"t", batch(&|| delete(b"cf:q"))).unwrap();
    }
    assert_eq!(server.server().stats().refused_decodes, 0);
}
