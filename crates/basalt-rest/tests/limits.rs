//! What clients can make the REST gateway hold is bounded, and each bound
//! answers with a clear status: bodies (413), answers (400 with advice),
//! connections (closed at once), idle connections (closed), bodies that
//! stop coming (408), read-only mode (403).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use basalt_rest::RestConfig;
use common::{exchange_raw, hold, json_cells, json_row, parse_reply, Fixture};

const JSON: &str = "application/json";

#[test]
fn a_body_over_max_request_bytes_is_refused_before_it_is_read() {
    let f = Fixture::with(RestConfig {
        max_request_bytes: 1024,
        ..Default::default()
    });
    f.create_table("t", &["cf"]);
    // Declares far more than it sends: refused from the header alone.
    let raw = exchange_raw(f.addr, b"PUT /t/r/cf:q HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000000000\r\n\r\nabc");
    let reply = parse_reply(&raw);
    assert_eq!(reply.status, 413);
    assert!(
        reply.text().contains("max_request_bytes (1024)"),
        "{}",
        reply.text()
    );

    let body = vec![b'x'; 2048];
    let reply = f.send(
        "PUT",
        "/t/r/cf:q",
        &[("Content-Type", "application/octet-stream")],
        &body,
    );
    assert_eq!(reply.status, 413);
    assert_eq!(f.server().stats().refused_bodies, 2);
    assert_eq!(f.get("/t/r", JSON).status, 404, "nothing was written");

    let reply = f.send(
        "PUT",
        "/t/r/cf:q",
        &[("Content-Type", "application/octet-stream")],
        &body[..1000],
    );
    assert_eq!(reply.status, 200, "a body within the limit is served");
}

#[test]
fn a_range_read_over_max_response_cells_is_refused_with_advice_and_scanners_are_capped() {
    let f = Fixture::with(RestConfig {
        max_response_cells: 3,
        ..Default::default()
    });
    f.create_table("t", &["cf"]);
    for row in ["a", "b", "c", "d"] {
        f.put(
            "/t/x",
            JSON,
            &json_row(row.as_bytes(), &[(b"cf:q", None, b"v")]),
        );
    }
    let reply = f.get("/t/a,z", JSON);
    assert_eq!(reply.status, 400);
    assert!(
        reply.text().contains("read them with a scanner"),
        "{}",
        reply.text()
    );
    assert_eq!(
        json_cells(&f.get("/t/a,c", JSON)).len(),
        2,
        "a smaller range is served"
    );

    let reply = f.put("/t/scanner", JSON, br#"{"batch":100}"#);
    let location = reply.header("location").unwrap().to_string();
    let path = &location[format!("http://{}", f.addr).len()..];
    assert_eq!(
        json_cells(&f.get(path, JSON)).len(),
        3,
        "the batch is capped"
    );
    assert_eq!(json_cells(&f.get(path, JSON)).len(), 1);
}

#[test]
fn connections_beyond_max_connections_are_closed_at_once() {
    let f = Fixture::with(RestConfig {
        max_connections: 1,
        ..Default::default()
    });
    // Holds the one connection open: a request whose body never comes.
    let held = hold(
        &f,
        b"PUT /t/r/cf:q HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n",
    );
    let raw = exchange_raw(f.addr, b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(raw.is_empty(), "refused connections get no answer");
    assert_eq!(f.server().stats().refused_connections, 1);
    drop(held);
    while f.server().open_connections() > 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(f.get("/version", JSON).status, 200);
}

#[test]
fn a_connection_that_sends_no_request_is_closed_after_the_idle_timeout() {
    let f = Fixture::with(RestConfig {
        idle_timeout_ms: 50,
        ..Default::default()
    });
    // Returns when the server closes the connection (it may first answer
    // 408); a server that never closed it would hit the hang guard.
    let raw = exchange_raw(f.addr, b"GET /vers");
    let text = String::from_utf8_lossy(&raw);
    assert!(raw.is_empty() || text.starts_with("HTTP/1.1 408"), "{text}");
}

#[test]
fn a_read_only_gateway_refuses_every_change_and_serves_reads() {
    let f = Fixture::with(RestConfig {
        read_only: true,
        ..Default::default()
    });
    f.create_table("t", &["cf"]);
    let reply = f.put("/t/r", JSON, &json_row(b"r", &[(b"cf:q", None, b"v")]));
    assert_eq!(reply.status, 403);
    assert_eq!(f.delete("/t/schema").status, 403);
    assert_eq!(f.post("/t/scanner", JSON, b"{}").status, 403);
    assert!(f.db.table_exists("t"));
    assert_eq!(f.get("/t/r", JSON).status, 404);
    assert_eq!(f.get("/", "text/plain").text(), "t\n");
}

#[test]
fn requests_without_a_body_never_wait_for_the_in_flight_budget() {
    let f = Fixture::with(RestConfig {
        max_in_flight_bytes: 1024,
        ..Default::default()
    });
    f.create_table("t", &["cf"]);
    // Takes the whole budget: a JSON body declared and never sent.
    let held = hold(&f, b"PUT /t/r HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{");
    // Reads still answer (a server that reserved room for them would
    // make this wait until the held request gives up).
    assert_eq!(f.get("/t/schema", JSON).status, 200);
    assert_eq!(f.get("/t/r", JSON).status, 404);
    drop(held);
}

#[test]
fn a_body_that_stops_coming_is_answered_request_timeout_and_frees_its_room() {
    let f = Fixture::with(RestConfig {
        idle_timeout_ms: 50,
        max_in_flight_bytes: 1024,
        ..Default::default()
    });
    f.create_table("t", &["cf"]);
    let raw = exchange_raw(f.addr, b"PUT /t/r HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{");
    let reply = parse_reply(&raw);
    assert_eq!(reply.status, 408, "{}", reply.text());
    // The room it held is free again: a body that needs it is served.
    let body = json_row(b"r", &[(b"cf:q", None, b"v")]);
    assert_eq!(f.put("/t/r", JSON, &body).status, 200);
}
