//! Hostile clients (issue 32) against a Thrift server in this process:
//! one that reads nothing of its answers, one that leaves in the middle of
//! a costly scan, silent connections, and another connection's scanner id.
//! Each asserts an outcome; times are measured and printed, and bounded
//! only generously, so the tests hold on a loaded two-core machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use basalt_thrift::client::{family, put};
use basalt_thrift::protocol::Protocol;
use basalt_thrift::types::{args, BatchMutation, TScan, Thrift};
use basalt_thrift::{ClientError, Flavour, ServerConfig};
use bytes::Bytes;

use common::{eventually, TestServer};

/// Writes `rows` rows of one `value_len`-byte cell each into a new table `t`.
fn fill(server: &TestServer, rows: usize, value_len: usize) {
    let mut c = server.default_client();
    c.create_table(b"t", vec![family("cf")]).unwrap();
    let value = vec![b'a'; value_len];
    let keys: Vec<usize> = (0..rows).collect();
    for chunk in keys.chunks(1000) {
        let batches = chunk
            .iter()
            .map(|i| BatchMutation {
                row: Some(Bytes::from(format!("row{i:07}"))),
                mutations: Some(vec![put(b"cf:q", &value)]),
            })
            .collect();
        c.mutate_rows(b"t", batches).unwrap();
    }
}

/// A filter string of `n` value filters that each test every cell with a
/// regular expression that must read the whole value to fail: a scan that
/// costs seconds of CPU over a modest table, and matches nothing.
fn costly_filter(n: usize) -> String {
    (0..n)
        .map(|i| format!("ValueFilter(=, 'regexstring:^a.*z{i}$')"))
        .collect::<Vec<_>>()
        .join(" OR ")
}

#[test]
fn a_client_that_reads_nothing_is_dropped_after_the_write_timeout() {
    let server = TestServer::with_config(ServerConfig {
        port: 0,
        write_timeout_ms: 300,
        ..ServerConfig::default()
    });
    // 8 MiB of rows: each answer is capped at max_answer_bytes (4 MiB), far
    // more than the kernel buffers for a client that does not read.
    fill(&server, 2000, 4096);
    let mut c = server.default_client();
    let id = c.scanner_open(b"t", b"", &[]).unwrap();
    for _ in 0..4 {
        let call = args::ScannerGetList {
            id: Some(id),
            nb_rows: Some(i32::MAX),
        };
        c.send_call("scannerGetList", call.to_value()).unwrap();
    }
    let started = Instant::now();
    eventually("the server to drop the client that reads nothing", || {
        server.server().stats().write_timeouts == 1
    });
    eprintln!(
        "dropped {} ms after the requests",
        started.elapsed().as_millis()
    );
    eventually("its connection and scanner to go", || {
        server.server().open_connections() == 0 && server.server().open_scanners() == 0
    });
    // Everyone else is served.
    let mut other = server.default_client();
    assert!(other.is_table_enabled(b"t").unwrap());
    drop(c);
}

#[test]
fn a_scanner_answer_stops_at_max_answer_bytes_whatever_the_client_asks() {
    let server = TestServer::with_config(ServerConfig {
        port: 0,
        max_answer_bytes: 64 * 1024,
        ..ServerConfig::default()
    });
    fill(&server, 100, 4096);
    let mut c = server.default_client();
    let id = c.scanner_open(b"t", b"", &[]).unwrap();
    let mut answers = 0;
    let mut rows = 0;
    loop {
        let got = c.scanner_get_list(id, i32::MAX).unwrap();
        if got.is_empty() {
            break;
        }
        assert!(got.len() <= 17, "{} rows of 4 KiB in one answer", got.len());
        rows += got.len();
        answers += 1;
    }
    assert_eq!(rows, 100, "every row comes, over several answers");
    assert!(answers >= 6, "{answers} answers");
}

#[test]
fn a_costly_scan_stops_soon_after_its_client_leaves() {
    let server = TestServer::start();
    fill(&server, 20_000, 200);
    let mut c = server.default_client();
    let scan = TScan {
        filter_string: Some(Bytes::from(costly_filter(999))),
        ..TScan::default()
    };
    let id = c.scanner_open_with_scan(b"t", scan).unwrap();
    let call = args::ScannerGetList {
        id: Some(id),
        nb_rows: Some(10),
    };
    c.send_call("scannerGetList", call.to_value()).unwrap();
    // The scan is under way (it needs far longer than this to finish).
    std::thread::sleep(Duration::from_millis(300));
    drop(c);
    let left = Instant::now();
    eventually("the scan to stop", || {
        server.server().stats().cancelled_calls == 1
    });
    let took = left.elapsed();
    eprintln!(
        "the scan stopped {} ms after its client left",
        took.as_millis()
    );
    assert!(
        took < Duration::from_secs(10),
        "the scan went on for {took:?} after its client left"
    );
}

#[test]
fn a_scan_call_that_finds_nothing_in_its_time_fails_naming_the_limit() {
    let server = TestServer::with_config(ServerConfig {
        port: 0,
        scan_call_timeout_ms: 50,
        ..ServerConfig::default()
    });
    fill(&server, 20_000, 200);
    let mut c = server.default_client();
    let scan = TScan {
        filter_string: Some(Bytes::from(costly_filter(999))),
        ..TScan::default()
    };
    let id = c.scanner_open_with_scan(b"t", scan).unwrap();
    match c.scanner_get_list(id, 10) {
        Err(ClientError::Io(message)) => {
            assert!(message.contains("scan_call_timeout_ms"), "{message}")
        }
        other => panic!("expected the time limit, got {other:?}"),
    }
    // The scanner is still there: the next call goes on where it stopped.
    assert_eq!(server.server().open_scanners(), 1);
    assert!(c.is_table_enabled(b"t").unwrap());
}

#[test]
fn silent_connections_give_their_slots_back_after_the_first_request_deadline() {
    let server = TestServer::with_config(ServerConfig {
        port: 0,
        first_request_timeout_ms: 200,
        ..ServerConfig::default()
    });
    let silent: Vec<TcpStream> = (0..50)
        .map(|_| TcpStream::connect(server.addr()).unwrap())
        .collect();
    eventually("the silent connections to be closed", || {
        server.server().stats().first_request_timeouts == 50
    });
    assert_eq!(server.server().open_connections(), 0);
    // A connection that asks something is served as before.
    let mut c = server.default_client();
    assert!(c.get_table_names().unwrap().is_empty());
    drop(silent);
}

#[test]
fn a_normal_client_is_served_while_one_address_holds_a_thousand_silent_connections() {
    let server = TestServer::start();
    let attacker: Vec<TcpStream> = (0..1000)
        .filter_map(|_| connect_from([127, 0, 0, 2], server.addr()))
        .collect();
    assert!(!attacker.is_empty());
    let mut c = server.default_client();
    assert!(c.get_table_names().unwrap().is_empty());
    assert!(
        server.server().stats().refused_connections > 0,
        "the flood was held out of the reserved slots"
    );
    drop(attacker);
}

#[test]
fn another_connection_cannot_use_a_thrift2_scanner() {
    let server = TestServer::serving(
        ServerConfig {
            port: 0,
            ..ServerConfig::thrift2()
        },
        Flavour::Thrift2,
    );
    let mut owner = server.client2(false, Protocol::Binary { strict: true });
    common::thrift2::create(&mut owner, "t", &["cf"]);
    let id = owner.open_scanner(b"t", Default::default()).unwrap();
    let mut other = server.client2(false, Protocol::Binary { strict: true });
    let refused = other.get_scanner_rows(id, 10);
    assert!(
        matches!(&refused, Err(ClientError::IllegalArgument(m)) if m.contains("Invalid scanner")),
        "{refused:?}"
    );
    assert!(other.close_scanner(id).is_err());
    assert!(owner.get_scanner_rows(id, 10).unwrap().is_empty());
}

/// A connection from `source` (any 127.x address reaches loopback), or
/// `None` when the server closed it at once or the system ran out.
fn connect_from(source: [u8; 4], to: SocketAddr) -> Option<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
    socket.bind(&SocketAddr::from((source, 0)).into()).ok()?;
    socket.connect(&to.into()).ok()?;
    Some(socket.into())
}
