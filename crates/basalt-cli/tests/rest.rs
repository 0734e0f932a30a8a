//! `basalt serve` with the REST gateway: `--rest-port` (and `[rest]` in the
//! config file) serves HBase's REST API beside Thrift on one database, and
//! SIGTERM stops both cleanly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

mod common;

use common::{start, Server};

/// One request on its own connection; (status, body).
fn http(port: u16, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nAccept: application/json\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn terminate(mut server: Server) {
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(server.child.wait().unwrap().success());
}

#[test]
fn rest_port_serves_tables_and_cells_and_sigterm_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let args = [
        "--data-dir",
        data.to_str().unwrap(),
        "--thrift-port",
        "0",
        "--rest-port",
        "0",
    ];
    let server = start(&args, None);
    let rest = server.rest_port.unwrap();
    let schema = br#"{"ColumnSchema":[{"name":"cf","VERSIONS":"2"}]}"#;
    assert_eq!(
        http(rest, "PUT", "/t/schema", "application/json", schema).0,
        201
    );
    assert_eq!(
        http(
            rest,
            "PUT",
            "/t/r/cf:q",
            "application/octet-stream",
            b"hello"
        )
        .0,
        200
    );
    let (status, body) = http(rest, "GET", "/t/r", "application/json", b"");
    assert_eq!(status, 200);
    // "hello" in base64.
    assert!(body.contains(r#""$":"aGVsbG8=""#), "{body}");
    terminate(server);

    // The data is there after a clean stop, read by a server configured
    // from a file this time.
    let config = dir.path().join("basalt.toml");
    std::fs::write(&config, "[rest]\nenabled = true\nport = 0\n").unwrap();
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
        "--thrift-port",
        "0",
    ];
    let server = start(&args, None);
    let rest = server.rest_port.unwrap();
    let (status, body) = http(rest, "GET", "/", "text/plain", b"");
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"table":[{"name":"t"}]}"#)
    );
    terminate(server);
}
