//! `basalt serve` with the REST gateway: `--rest-port` (and `[rest]` in the
//! config file) serves HBase's REST API beside Thrift on one database, and
//! SIGTERM stops both cleanly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

mod common;

use common::{http, start, Server};

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
