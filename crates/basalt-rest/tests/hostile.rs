//! Hostile clients (issue 32) against a real REST server on loopback:
//! each case asserts an outcome, never a timing, so it holds on a loaded
//! 2-core CI machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};

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
