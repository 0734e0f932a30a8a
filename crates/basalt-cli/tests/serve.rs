//! `basalt serve` as a process: it starts with no configuration, data
//! written through Thrift survives `kill -9` and clean restarts, SIGTERM
//! exits 0, a config file is read with flags overriding it, and a taken
//! port fails fast without touching the data directory. Every gateway
//! speaks TLS when its `tls` table says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use basalt_thrift::client::family;
use basalt_thrift::{Client, Protocol};
use bytes::Bytes;

mod common;

use common::{start, write_rows, Server};

#[path = "../../../test-support/certificates.rs"]
mod certificates;

#[path = "../../../test-support/https.rs"]
mod https;

/// Hang guard only.
const TIMEOUT: Duration = Duration::from_secs(120);

impl Server {
    fn client(&self, framed: bool, protocol: Protocol) -> Client {
        let c = Client::connect(("127.0.0.1", self.port), framed, protocol).unwrap();
        c.set_timeout(Some(TIMEOUT)).unwrap();
        c
    }

    fn terminate(mut self) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.child.wait().unwrap()
    }

    fn kill_9(mut self) {
        self.child.kill().unwrap(); // SIGKILL on Unix
        self.child.wait().unwrap();
    }
}

fn count_rows(c: &mut Client) -> usize {
    let id = c.scanner_open(b"t", b"", &[]).unwrap();
    c.scan_all(id, 1000).unwrap().len()
}

#[test]
fn data_survives_kill_9_and_clean_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_arg = data.to_str().unwrap();
    let args = ["--data-dir", data_arg, "--thrift-port", "0"];

    let server = start(&args, Some(dir.path()));
    let mut c = server.client(false, Protocol::Binary { strict: true });
    c.create_table(b"t", vec![family("cf")]).unwrap();
    write_rows(&mut c, 0, 500);
    for _ in 0..7 {
        c.atomic_increment(b"t", b"counter", b"cf:n", 3).unwrap();
    }
    let mut framed = server.client(true, Protocol::Compact);
    write_rows(&mut framed, 500, 600);
    server.kill_9();

    // Every acknowledged write is back after kill -9 (SYNC_WAL default).
    let server = start(&args, Some(dir.path()));
    let mut c = server.client(false, Protocol::Compact);
    assert_eq!(count_rows(&mut c), 601);
    assert_eq!(
        c.atomic_increment(b"t", b"counter", b"cf:n", 0).unwrap(),
        21
    );
    let cell = c.get(b"t", b"row00123", b"cf:q").unwrap();
    assert_eq!(cell[0].value.as_deref(), Some(&b"value123"[..]));
    write_rows(&mut c, 600, 700);
    drop(c);

    // SIGTERM: a clean stop with exit status 0, and everything is still there.
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
    let server = start(&args, Some(dir.path()));
    let mut c = server.client(true, Protocol::Binary { strict: true });
    assert_eq!(count_rows(&mut c), 701);
    drop(c);
    assert!(server.terminate().success());
}

#[test]
fn defaults_config_file_and_flag_overrides() {
    let dir = tempfile::tempdir().unwrap();
    // No configuration at all: ./basalt-data. (Port 0 only because the
    // default 9090 may be taken on a shared machine.)
    let server = start(&["--thrift-port", "0"], Some(dir.path()));
    let mut c = server.client(false, Protocol::Binary { strict: true });
    assert!(c.get_table_names().unwrap().is_empty());
    drop(c);
    assert!(server.terminate().success());
    assert!(dir.path().join("basalt-data").join("LOCK").exists());

    // A config file; --data-dir overrides its data_dir.
    let config = dir.path().join("basalt.toml");
    std::fs::write(
        &config,
        "data_dir = \"from-config\"\n\n[thrift]\nport = 0\nscanner_lease_ms = 1000\n\n\
         [thrift2]\nport = 0\nmax_connections = 10\n\n\
         [database]\nwal_segment_bytes = 1048576\n",
    )
    .unwrap();
    let config_arg = config.to_str().unwrap();
    let server = start(&["--config", config_arg], Some(dir.path()));
    server
        .client(false, Protocol::Compact)
        .create_table(b"x", vec![family("f")])
        .unwrap();
    assert!(server.terminate().success());
    assert!(dir.path().join("from-config").join("LOCK").exists());
    let server = start(
        &["--config", config_arg, "--data-dir", "from-flag"],
        Some(dir.path()),
    );
    assert!(server.terminate().success());
    assert!(dir.path().join("from-flag").join("LOCK").exists());

    // A bad config file is an error (exit status 1), not a silent default.
    std::fs::write(&config, "[thrift]\nno_such_option = 1\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["serve", "--config", config_arg])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no_such_option"));
}

#[test]
fn taken_port_fails_once_before_touching_data() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Holds the port for the whole test.
    let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    // Logging at its most talkative: the error must still show once.
    let (code, stderr) = common::run_to_exit(
        &[
            "serve",
            "--data-dir",
            data.to_str().unwrap(),
            "--thrift-port",
            &port,
        ],
        &[("RUST_LOG", "debug")],
    );
    assert_eq!(code, Some(1), "stderr: {stderr}");
    let mentions: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("cannot listen"))
        .collect();
    assert_eq!(mentions.len(), 1, "the error once, stderr: {stderr}");
    assert_eq!(
        mentions[0],
        format!(
            "basalt: cannot listen on 127.0.0.1:{port}: the port is already in use \
             (another basalt serve?); stop what holds it or choose another port with \
             --thrift-port."
        ),
    );
    assert!(!data.exists(), "the data directory was created: {stderr}");
    drop(taken);
}

#[test]
fn thrift2_serves_the_same_data_beside_thrift1_unless_turned_off() {
    use basalt_thrift::thrift2::types::{TColumnValue, TGet, TPut};
    let dir = tempfile::tempdir().unwrap();
    let server = start(&["--thrift-port", "0"], Some(dir.path()));
    let mut c = server.client(false, Protocol::Binary { strict: true });
    c.create_table(b"t", vec![family("cf")]).unwrap();
    let port = server.thrift2_port.expect("Thrift2 is on by default");
    let mut c2 =
        basalt_thrift::Client2::connect(("127.0.0.1", port), true, Protocol::Compact).unwrap();
    assert_eq!(c2.get_thrift_server_type().unwrap(), 2);
    let cell = TColumnValue {
        family: Some(Bytes::from_static(b"cf")),
        qualifier: Some(Bytes::from_static(b"q")),
        value: Some(Bytes::from_static(b"v")),
        ..TColumnValue::default()
    };
    c2.put(
        b"t",
        TPut {
            row: Some(Bytes::from_static(b"r")),
            column_values: Some(vec![cell]),
            ..TPut::default()
        },
    )
    .unwrap();
    // Written over Thrift2, read over Thrift1 and Thrift2.
    assert_eq!(
        c.get(b"t", b"r", b"cf:q").unwrap()[0].value.as_deref(),
        Some(&b"v"[..])
    );
    let got = c2
        .get(
            b"t",
            TGet {
                row: Some(Bytes::from_static(b"r")),
                ..TGet::default()
            },
        )
        .unwrap();
    assert_eq!(got.column_values.unwrap().len(), 1);
    drop((c, c2));
    assert!(server.terminate().success());

    // Turned off, it does not even bind:
    // a Thrift2 port held by someone else does not stop the server.
    let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let held = taken.local_addr().unwrap().port();
    let config = dir.path().join("held.toml");
    std::fs::write(&config, format!("[thrift2]\nport = {held}\n")).unwrap();
    let config_arg = config.to_str().unwrap();
    let server = start(
        &["--config", config_arg, "--thrift-port", "0", "--no-thrift2"],
        Some(dir.path()),
    );
    assert!(server.terminate().success());
    drop(taken);
}

#[test]
fn every_gateway_speaks_tls_when_its_config_table_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let ca = certificates::TestCa::new(dir.path(), "serve");
    let (cert, key) = ca.server("serve");
    let tls = format!(
        "cert_file = \"{}\"\nkey_file = \"{}\"\n",
        cert.display(),
        key.display()
    );
    let config = dir.path().join("tls.toml");
    std::fs::write(
        &config,
        format!("[thrift.tls]\n{tls}\n[thrift2.tls]\n{tls}\n[rest.tls]\n{tls}\n[info.tls]\n{tls}"),
    )
    .unwrap();
    let server = start(
        &["--config", config.to_str().unwrap(), "--thrift-port", "0"],
        Some(dir.path()),
    );
    let client_tls = basalt::tls::client_config(&basalt::tls::TlsClientSettings {
        ca_file: ca.cert(),
        cert_file: None,
        key_file: None,
    })
    .unwrap();
    let binary = Protocol::Binary { strict: true };
    let mut c = Client::connect_tls(
        ("127.0.0.1", server.port),
        false,
        binary,
        client_tls.clone(),
        "127.0.0.1",
    )
    .unwrap();
    c.set_timeout(Some(TIMEOUT)).unwrap();
    c.create_table(b"t", vec![family("cf")]).unwrap();
    write_rows(&mut c, 0, 1);
    assert_eq!(count_rows(&mut c), 1);
    let mut plain = Client::connect(("127.0.0.1", server.port), false, binary).unwrap();
    plain.set_timeout(Some(TIMEOUT)).unwrap();
    assert!(
        plain.get_table_names().is_err(),
        "plaintext Thrift was served"
    );
    let mut c2 = basalt_thrift::Client2::connect_tls(
        ("127.0.0.1", server.thrift2_port.unwrap()),
        true,
        Protocol::Compact,
        client_tls.clone(),
        "localhost",
    )
    .unwrap();
    c2.connection().set_timeout(Some(TIMEOUT)).unwrap();
    assert_eq!(c2.get_thrift_server_type().unwrap(), 2);
    let rest = std::net::SocketAddr::from(([127, 0, 0, 1], server.rest_port.unwrap()));
    let tables = https::get(rest, "/", Some(client_tls.clone())).unwrap();
    assert_eq!(tables.status, 200, "{}", tables.body);
    assert!(
        tables.body.lines().any(|table| table.trim() == "t"),
        "{}",
        tables.body
    );
    assert!(
        https::get(rest, "/", None).is_err(),
        "plain HTTP was served"
    );
    let info = std::net::SocketAddr::from(([127, 0, 0, 1], server.info_port.unwrap()));
    let page = https::get(info, "/tables", Some(client_tls)).unwrap();
    assert_eq!(page.status, 200, "{}", page.body);
    drop((c, c2, plain));
    assert!(server.terminate().success());
}
