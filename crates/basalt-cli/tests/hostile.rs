//! Hostile clients (issue 32) against the real `basalt serve` process,
//! every gateway at once: three hundred clients per gateway ask for the
//! largest answers and never read them, with the process under a 1 GiB
//! data limit (`prlimit`); its peak resident size stays under 512 MiB, it
//! survives, and a normal client is served meanwhile and after. Then one
//! address opens a thousand silent connections to each gateway while a
//! normal client is served, and the silent ones are closed by the
//! first-request deadline; and the smaller cases: a 100,000-filter request
//! refused with a clear error, `hbase:meta` not created, another
//! connection's scanner id refused.
//!
//! Outcomes are asserted, never timings: the short timeouts in the config
//! only make the test quick.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use basalt_rpc::client::RpcClient;
use basalt_rpc::proto::client::{Scan, ScanRequest};
use basalt_rpc::proto::hbase::{region_specifier::RegionSpecifierType, RegionSpecifier};
use basalt_thrift::client::{family, put};
use basalt_thrift::types::{args, BatchMutation, TScan, Thrift};
use basalt_thrift::{Client, ClientError, Protocol};
use bytes::Bytes;

mod common;

/// The bound on the server's peak resident size (VmHWM) the issue sets.
const PEAK_RSS_BOUND_BYTES: u64 = 512 * 1024 * 1024;

/// The data limit the server runs under (`prlimit --data`).
const DATA_LIMIT_BYTES: u64 = 1024 * 1024 * 1024;

/// Non-reading clients per gateway.
const CLIENTS: usize = 300;

/// Rows of 4 KiB written: 8 MiB, twice the largest answer.
const ROWS: usize = 2000;

const CONFIG: &str = "\
[thrift]
write_timeout_ms = 2000
first_request_timeout_ms = 1000
[thrift2]
port = 0
write_timeout_ms = 2000
first_request_timeout_ms = 1000
[rest]
write_timeout_ms = 2000
first_request_timeout_ms = 1000
[rpc]
write_timeout_ms = 2000
handshake_timeout_ms = 1000
";

fn start(dir: &std::path::Path) -> common::Server {
    let config = dir.join("basalt.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let data = dir.join("data");
    let server = common::start(
        &[
            "--config",
            config.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
            "--thrift-port",
            "0",
            "--native-rpc",
            "--master-port",
            "0",
            "--region-server-port",
            "0",
        ],
        None,
    );
    // The issue's second bound: the process must survive under a 1 GiB
    // data limit (an allocation past it would abort the process).
    let limit = format!("--data={DATA_LIMIT_BYTES}:{DATA_LIMIT_BYTES}");
    let status = std::process::Command::new("prlimit")
        .args(["--pid", &server.child.id().to_string(), &limit])
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(status.success(), "prlimit failed");
    server
}

fn thrift1(server: &common::Server) -> Client {
    let c = Client::connect(
        ("127.0.0.1", server.port),
        false,
        Protocol::Binary { strict: true },
    )
    .unwrap();
    c.set_timeout(Some(Duration::from_secs(120))).unwrap();
    c
}

fn fill(server: &common::Server) {
    let mut c = thrift1(server);
    c.create_table(b"t", vec![family("cf")]).unwrap();
    let value = vec![b'a'; 4096];
    let keys: Vec<usize> = (0..ROWS).collect();
    for chunk in keys.chunks(200) {
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

/// One HTTP exchange on a new connection (`Connection: close`): the
/// answer's head and body as text.
fn http(addr: SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// Opens a REST scanner over every row; its path.
fn rest_scanner(addr: SocketAddr) -> String {
    let body = r#"{"batch":1000000}"#;
    let answer = http(
        addr,
        &format!(
            "PUT /t/scanner HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    let location = answer
        .lines()
        .find_map(|l| {
            l.strip_prefix("Location: ")
                .or_else(|| l.strip_prefix("location: "))
        })
        .unwrap_or_else(|| panic!("no scanner: {answer}"))
        .trim()
        .to_string();
    let path = location.split_once("//").unwrap().1;
    path[path.find('/').unwrap()..].to_string()
}

/// The name of `t`'s only region, for native scans.
fn region(server: &common::Server) -> Option<RegionSpecifier> {
    let regions = thrift1(server).get_table_regions(b"t").unwrap();
    Some(RegionSpecifier {
        r#type: RegionSpecifierType::RegionName as i32,
        value: regions[0].name.clone().unwrap().to_vec(),
    })
}

/// Every gateway's largest answer, asked for by `CLIENTS` clients each,
/// none of whom reads a byte: the connections, kept open.
fn flood_of_non_readers(server: &common::Server) -> Vec<Box<dyn std::any::Any + Send>> {
    let mut held: Vec<Box<dyn std::any::Any + Send>> = Vec::new();
    let rest = SocketAddr::from(([127, 0, 0, 1], server.rest_port.unwrap()));
    let region = region(server);
    for _ in 0..CLIENTS {
        // Thrift1: a scanner, then every row at once.
        let mut c = thrift1(server);
        let id = c.scanner_open(b"t", b"", &[]).unwrap();
        let call = args::ScannerGetList {
            id: Some(id),
            nb_rows: Some(i32::MAX),
        };
        c.send_call("scannerGetList", call.to_value()).unwrap();
        held.push(Box::new(c));

        // Thrift2: a one-call scan of every row.
        let mut c2 = Client::connect(
            ("127.0.0.1", server.thrift2_port.unwrap()),
            false,
            Protocol::Binary { strict: true },
        )
        .unwrap();
        let call = basalt_thrift::thrift2::types::args::GetScannerResults {
            table: Some(Bytes::from_static(b"t")),
            tscan: Some(basalt_thrift::thrift2::types::TScan::default()),
            num_rows: Some(i32::MAX),
        };
        c2.send_call("getScannerResults", call.to_value()).unwrap();
        held.push(Box::new(c2));

        // REST: a scanner of its own, read with the largest batch.
        let path = rest_scanner(rest);
        let mut r = TcpStream::connect(rest).unwrap();
        r.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
        held.push(Box::new(r));

        // Native RPC: a scan asking for every row and 2^62 bytes.
        let mut n = RpcClient::connect(
            ("127.0.0.1", server.region_server_port.unwrap()),
            "ClientService",
            false,
        )
        .unwrap();
        let request = ScanRequest {
            region: region.clone(),
            scan: Some(Scan {
                max_result_size: Some(1 << 62),
                ..Default::default()
            }),
            number_of_rows: Some(u32::MAX >> 1),
            ..Default::default()
        };
        n.send_call("Scan", &request).unwrap();
        held.push(Box::new(n));
    }
    held
}

#[test]
fn three_hundred_non_reading_clients_per_gateway_leave_the_server_under_its_memory_bound() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    fill(&server);
    let started = Instant::now();
    let held = flood_of_non_readers(&server);
    // A normal client is served while the flood holds its answers.
    let mut normal = thrift1(&server);
    assert!(normal.is_table_enabled(b"t").unwrap());
    let row = normal.get_row(b"t", b"row0000001").unwrap();
    assert_eq!(row.len(), 1);
    // The flood's connections are dropped by the write timeout; once they
    // are, a whole scan is served again on every gateway.
    std::thread::sleep(Duration::from_secs(5));
    let id = normal.scanner_open(b"t", b"", &[]).unwrap();
    let mut rows = 0;
    loop {
        let got = normal.scanner_get_list(id, i32::MAX).unwrap();
        if got.is_empty() {
            break;
        }
        rows += got.len();
    }
    assert_eq!(rows, ROWS);
    drop(held);
    eprintln!("the flood took {} ms", started.elapsed().as_millis());
    assert!(
        server.child.id() > 0 && std::fs::metadata(format!("/proc/{}", server.child.id())).is_ok(),
        "the server survived"
    );
    let peak = common::peak_rss_bytes(server.child.id());
    eprintln!(
        "basalt serve peak RSS with {CLIENTS} non-reading clients per gateway: {} MiB",
        peak / (1024 * 1024)
    );
    assert!(
        peak < PEAK_RSS_BOUND_BYTES,
        "peak RSS {} MiB is over the {} MiB bound",
        peak / (1024 * 1024),
        PEAK_RSS_BOUND_BYTES / (1024 * 1024)
    );
}

/// A connection from `source` (any 127.x address reaches loopback).
fn connect_from(source: [u8; 4], to: SocketAddr) -> Option<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
    socket.bind(&SocketAddr::from((source, 0)).into()).ok()?;
    socket.connect(&to.into()).ok()?;
    Some(socket.into())
}

#[test]
fn a_thousand_silent_connections_from_one_address_lock_no_one_out_and_are_closed_soon() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let ports = [
        server.port,
        server.thrift2_port.unwrap(),
        server.rest_port.unwrap(),
        server.region_server_port.unwrap(),
    ];
    for port in ports {
        let to = SocketAddr::from(([127, 0, 0, 1], port));
        let silent: Vec<TcpStream> = (0..1000)
            .filter_map(|_| connect_from([127, 0, 0, 2], to))
            .collect();
        assert!(!silent.is_empty());
        // A normal client from another address is served.
        match port {
            p if p == server.port => {
                assert!(thrift1(&server).get_table_names().unwrap().is_empty());
            }
            p if Some(p) == server.rest_port => {
                let answer = http(
                    to,
                    "GET /version/cluster HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                );
                assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            }
            p if Some(p) == server.thrift2_port => {
                let mut c =
                    basalt_thrift::Client2::connect(to, false, Protocol::Binary { strict: true })
                        .unwrap();
                assert!(!c.table_exists("nothing").unwrap());
            }
            _ => {
                let mut c = RpcClient::connect(to, "ClientService", false).unwrap();
                let request = ScanRequest {
                    scanner_id: Some(1),
                    number_of_rows: Some(1),
                    ..Default::default()
                };
                let refused = c.call("Scan", &request, &[]).unwrap_err();
                assert!(refused.to_string().contains("UnknownScanner"), "{refused}");
            }
        }
        // The silent ones are closed by the first-request deadline: each
        // reads the end of its stream (the hang guard only bounds it).
        for mut s in silent.into_iter().take(20) {
            s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            let mut byte = [0u8; 1];
            assert!(
                matches!(s.read(&mut byte), Ok(0) | Err(_)),
                "a silent connection to port {port} stayed open"
            );
        }
    }
}

#[test]
fn a_hundred_thousand_filters_hbase_meta_and_another_connections_scanner_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    fill_small(&server);
    let mut c = thrift1(&server);
    // 100,000 filters (2.2 MB of filter string): refused before any work,
    // naming the limit.
    let filter = (0..100_000)
        .map(|i| format!("PrefixFilter('p{i}')"))
        .collect::<Vec<_>>()
        .join(" OR ");
    let scan = TScan {
        filter_string: Some(Bytes::from(filter)),
        ..TScan::default()
    };
    match c.scanner_open_with_scan(b"t", scan) {
        Err(ClientError::Io(message)) => assert!(message.contains("max_filters"), "{message}"),
        other => panic!("expected the filter limit, got {other:?}"),
    }
    // hbase:meta is HBase's, not a user table.
    assert!(matches!(
        c.create_table(b"hbase:meta", vec![family("info")]),
        Err(ClientError::AlreadyExists(_))
    ));
    assert!(!c
        .get_table_names()
        .unwrap()
        .iter()
        .any(|t| t.starts_with(b"hbase:")));
    // Another connection cannot use a scanner id.
    let id = c.scanner_open(b"t", b"", &[]).unwrap();
    let mut other = thrift1(&server);
    assert!(matches!(
        other.scanner_get_list(id, 10),
        Err(ClientError::IllegalArgument(_))
    ));
    assert_eq!(c.scanner_get_list(id, 10).unwrap().len(), 1);
}

fn fill_small(server: &common::Server) {
    let mut c = thrift1(server);
    c.create_table(b"t", vec![family("cf")]).unwrap();
    c.mutate_rows(
        b"t",
        vec![BatchMutation {
            row: Some(Bytes::from_static(b"r")),
            mutations: Some(vec![put(b"cf:q", b"v")]),
        }],
    )
    .unwrap();
}
