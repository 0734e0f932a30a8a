//! Hostile clients (issue 32) against a real REST server on loopback:
//! each case asserts an outcome, never a timing, so it holds on a loaded
//! 2-core CI machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{exchange_raw, parse_reply, Fixture};

const JSON: &str = "application/json";
const XML: &str = "text/xml";

#[test]
fn hbase_meta_and_other_system_names_cannot_be_created() {
    let f = Fixture::new();
    let schema = |name: &str| {
        format!(
            r#"<?xml version="1.0"?><TableSchema name="{name}"><ColumnSchema name="f"/></TableSchema>"#
        )
    };
    for name in ["hbase:meta", "hbase:mine"] {
        let reply = f.put(&format!("/{name}/schema"), XML, schema(name).as_bytes());
        // HBase's REST answers a create that meets TableExistsException
        // 304 Not Modified (hbase:meta exists); any other hbase:* name is
        // a refused request.
        assert!(
            reply.status == 304 || (400..500).contains(&reply.status) || reply.status == 503,
            "{name}: {} {}",
            reply.status,
            reply.text()
        );
        assert!(f.db.describe_table(name).is_err() || name == "hbase:meta");
    }
    assert!(!f.db.list_tables().iter().any(|t| t.starts_with("hbase:")));
    assert_ne!(f.post("/namespaces/hbase", JSON, b"").status, 201);
}

#[test]
fn a_hundred_thousand_filter_request_is_refused_with_a_clear_error() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let prefix = common::b64(b"p");
    let one = format!(r#"{{\"type\":\"PrefixFilter\",\"value\":\"{prefix}\"}}"#);
    let list = vec![one.as_str(); 100_000].join(",");
    let filter =
        format!(r#"{{\"type\":\"FilterList\",\"op\":\"MUST_PASS_ONE\",\"filters\":[{list}]}}"#);
    let body = format!(r#"{{"filter":"{filter}"}}"#);
    let config = basalt_rest::RestConfig::default();
    assert!(
        body.len() < config.max_request_bytes,
        "the request fits the body limit"
    );
    let reply = f.put("/t/scanner", JSON, body.as_bytes());
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert!(reply.text().contains("max_filters"), "{}", reply.text());
    assert_eq!(f.server().open_scanners(), 0);
}

#[test]
fn a_cross_site_bodyless_post_does_not_create_a_namespace() {
    let f = Fixture::new();
    let bare = f.send("POST", "/namespaces/x", &[], b"");
    assert_eq!(bare.status, 415, "{}", bare.text());
    let form = f.send(
        "POST",
        "/namespaces/x",
        &[
            ("Content-Type", "text/plain"),
            ("Origin", "http://evil.example"),
        ],
        b"",
    );
    assert_eq!(form.status, 403, "{}", form.text());
    assert!(f.db.describe_namespace("x").is_err());
    // A REST client naming its format is served.
    assert_eq!(f.post("/namespaces/y", JSON, b"").status, 201);
}

#[test]
fn answers_carry_security_headers_and_rebinding_hosts_are_refused() {
    let f = Fixture::new();
    let reply = f.get("/version/cluster", XML);
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(reply.header("x-frame-options"), Some("DENY"));
    assert!(reply.header("content-security-policy").is_some());
    let rebound = parse_reply(&exchange_raw(
        f.addr,
        b"GET /version/cluster HTTP/1.1\r\nHost: attacker.example\r\nSec-Fetch-Site: same-origin\r\nConnection: close\r\n\r\n",
    ));
    assert_eq!(rebound.status, 421);
}

#[test]
fn a_normal_client_is_served_while_one_address_holds_a_thousand_silent_connections() {
    let f = Fixture::new();
    let attacker: Vec<TcpStream> = (0..1000)
        .filter_map(|_| connect_from([127, 0, 0, 2], f.addr))
        .collect();
    assert!(!attacker.is_empty());
    // Half-sent headers (slowloris) on some of them.
    for mut s in attacker.iter().take(100) {
        let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    }
    let reply = f.get("/version/cluster", XML);
    assert_eq!(reply.status, 200, "{}", reply.text());
    drop(attacker);
}

/// A connection from `source` (any 127.x address reaches loopback), or
/// `None` when the server closed it at once or the system ran out.
fn connect_from(source: [u8; 4], to: SocketAddr) -> Option<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
    socket.bind(&SocketAddr::from((source, 0)).into()).ok()?;
    socket.connect(&to.into()).ok()?;
    Some(socket.into())
}

/// Writes `rows` rows of one `value_len`-byte cell each into table `t`.
fn fill(f: &Fixture, rows: usize, value_len: usize) {
    f.create_table("t", &["cf"]);
    let table = f.db.table("t").unwrap();
    let value = vec![b'a'; value_len];
    for i in 0..rows {
        table
            .put(&basalt::Put::new(format!("row{i:07}")).add("cf", "q", value.clone()))
            .unwrap();
    }
}

/// Opens a scanner with `model` (JSON) and returns its path.
fn open_scanner(f: &Fixture, model: &str) -> String {
    let reply = f.put("/t/scanner", JSON, model.as_bytes());
    assert_eq!(reply.status, 201, "{}", reply.text());
    let location = reply.header("location").unwrap().to_string();
    location[format!("http://{}", f.addr).len()..].to_string()
}

/// A REST filter of `n` value filters that each test every cell with a
/// regular expression that must read the whole value to fail: seconds of
/// CPU over a modest table, and nothing matches.
fn costly_filter(n: usize) -> String {
    let one = |i: usize| {
        format!(
            r#"{{\"type\":\"ValueFilter\",\"op\":\"EQUAL\",\"comparator\":{{\"type\":\"RegexStringComparator\",\"value\":\"^a.*z{i}$\"}}}}"#
        )
    };
    let list = (0..n).map(one).collect::<Vec<_>>().join(",");
    format!(r#"{{\"type\":\"FilterList\",\"op\":\"MUST_PASS_ONE\",\"filters\":[{list}]}}"#)
}

#[test]
fn a_client_that_reads_nothing_is_dropped_after_the_write_timeout() {
    let f = Fixture::with(basalt_rest::RestConfig {
        write_timeout_ms: 300,
        ..Default::default()
    });
    // 8 MiB of rows; one answer is capped at max_answer_bytes (4 MiB of
    // cells), far more than the kernel buffers for a client that does not
    // read.
    fill(&f, 2000, 4096);
    let path = open_scanner(&f, r#"{"batch":100000}"#);
    let mut silent = TcpStream::connect(f.addr).unwrap();
    silent
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
    let started = Instant::now();
    eventually("the server to drop the client that reads nothing", || {
        f.server().stats().write_timeouts == 1
    });
    eprintln!(
        "dropped {} ms after the request",
        started.elapsed().as_millis()
    );
    assert_eq!(
        f.get("/version/cluster", XML).status,
        200,
        "others are served"
    );
    drop(silent);
}

#[test]
fn a_scanner_answer_stops_at_max_answer_bytes_whatever_the_batch() {
    let f = Fixture::with(basalt_rest::RestConfig {
        max_answer_bytes: 64 * 1024,
        ..Default::default()
    });
    fill(&f, 100, 4096);
    let path = open_scanner(&f, r#"{"batch":100000}"#);
    let mut cells = 0;
    let mut answers = 0;
    loop {
        let reply = f.get(&path, JSON);
        if reply.status == 204 {
            break;
        }
        let got = common::json_cells(&reply).len();
        assert!(got <= 17, "{got} cells of 4 KiB in one answer");
        cells += got;
        answers += 1;
    }
    assert_eq!(cells, 100, "every cell comes, over several answers");
    assert!(answers >= 6, "{answers} answers");
    // A row range holding more than the limit is refused with advice.
    let reply = f.get("/t/row0000000,row0000099", JSON);
    assert_eq!(reply.status, 400);
    assert!(
        reply.text().contains("max_answer_bytes"),
        "{}",
        reply.text()
    );
}

#[test]
fn a_costly_scan_stops_soon_after_its_client_leaves() {
    let f = Fixture::new();
    fill(&f, 20_000, 200);
    let path = open_scanner(
        &f,
        &format!(r#"{{"batch":10,"filter":"{}"}}"#, costly_filter(999)),
    );
    let mut leaving = TcpStream::connect(f.addr).unwrap();
    leaving
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
    // The scan is under way (it needs far longer than this to finish).
    std::thread::sleep(Duration::from_millis(300));
    drop(leaving);
    let left = Instant::now();
    eventually("the scan to stop", || {
        f.server().stats().cancelled_calls == 1
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
    // The scanner itself stays, for a client that reads it again.
    assert_eq!(f.server().open_scanners(), 1);
}

#[test]
fn silent_connections_give_their_slots_back_after_the_first_request_deadline() {
    let f = Fixture::with(basalt_rest::RestConfig {
        first_request_timeout_ms: 200,
        ..Default::default()
    });
    let silent: Vec<TcpStream> = (0..50)
        .map(|_| TcpStream::connect(f.addr).unwrap())
        .collect();
    eventually("the silent connections to be closed", || {
        f.server().stats().first_request_timeouts == 50
    });
    assert_eq!(f.server().open_connections(), 0);
    assert_eq!(f.get("/version/cluster", XML).status, 200);
    drop(silent);
}

/// Polls `condition` until it holds; panics after a hang guard.
fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}
