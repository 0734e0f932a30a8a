//! `basalt top` as a process against a live `basalt serve`: with one
//! region of four under a write load, `--batch` lists that region first in
//! region mode and the table with its four regions in table mode; a server
//! that is down is a clear error and exit status 1, promptly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use bytes::Bytes;

use basalt::admin::{AdminReply, AdminRequest, FamilySpec};
use basalt_thrift::client::{self as tc, Client};
use basalt_thrift::Protocol;

use common::serve;

/// Hang guard only: `basalt top -n 2 -d 1` takes about a second.
const TOP_LIMIT: Duration = Duration::from_secs(120);

/// Runs `basalt top ARGS` to its end (killed and failed past the guard).
fn top(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .arg("top")
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(TOP_LIMIT) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("basalt top {args:?} did not finish within {TOP_LIMIT:?}");
        }
    }
}

fn connect(port: u16) -> Client {
    let client = Client::connect(
        ("127.0.0.1", port),
        false,
        Protocol::Binary { strict: true },
    )
    .unwrap();
    client.set_timeout(Some(Duration::from_secs(60))).unwrap();
    client
}

/// The rows of the last refresh in `--batch` output: the lines after the
/// last header line, up to the blank line ending the refresh.
fn last_rows(stdout: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = stdout.lines().collect();
    let header = lines
        .iter()
        .rposition(|l| l.starts_with("NAMESPACE"))
        .unwrap_or_else(|| panic!("no header in:\n{stdout}"));
    lines[header + 1..]
        .iter()
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[test]
fn the_region_under_load_comes_first_and_table_mode_shows_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"));
    let port = server.port;
    let mut admin = connect(port);
    admin
        .admin(AdminRequest::Create {
            table: "hot".into(),
            families: vec![FamilySpec {
                name: "f".into(),
                ..FamilySpec::default()
            }],
            splits: ["b", "c", "d"].into_iter().map(Bytes::from).collect(),
            num_regions: None,
            split_algo: None,
        })
        .unwrap();
    let AdminReply::Regions { regions } = admin
        .admin(AdminRequest::ListRegions {
            table: "hot".into(),
        })
        .unwrap()
    else {
        panic!("not regions");
    };
    assert_eq!(regions.len(), 4);
    let hot = regions
        .iter()
        .find(|r| &r.start_key[..] == b"c")
        .unwrap()
        .encoded_name
        .clone();
    // A little load everywhere, then a lot on [c, d) while top watches.
    for row in ["a1", "b1", "c1", "d1"] {
        admin
            .mutate_row(b"hot", row.as_bytes(), vec![tc::put(b"f:q", b"v")])
            .unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = Arc::clone(&stop);
        let mut client = connect(port);
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let row = format!("c{i:08}");
                client
                    .mutate_row(b"hot", row.as_bytes(), vec![tc::put(b"f:q", b"v")])
                    .unwrap();
                i += 1;
            }
            i
        })
    };
    let port_arg = port.to_string();
    let remote = [
        "--batch",
        "--host",
        "127.0.0.1",
        "--port",
        port_arg.as_str(),
    ];
    let out = top(&[&remote[..], &["-n", "2", "-d", "1"]].concat());
    let tables = top(&[&remote[..], &["-n", "1", "-m", "table"]].concat());
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    assert!(written > 0);

    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.matches("basalt top ").count(), 2, "{stdout}");
    assert!(stdout.contains("rates over the last"), "{stdout}");
    let rows = last_rows(&stdout);
    assert_eq!(rows.len(), 4, "{stdout}");
    // NAMESPACE TABLE REGION #REQ/S ...
    assert_eq!(rows[0][..3], ["default", "hot", hot.as_str()], "{stdout}");
    let busiest: f64 = rows[0][3].parse().unwrap();
    assert!(busiest > 0.0, "{stdout}");
    for other in &rows[1..] {
        assert!(other[3].parse::<f64>().unwrap() < busiest, "{stdout}");
    }

    let stdout = String::from_utf8(tables.stdout).unwrap();
    assert!(tables.status.success(), "{stdout}");
    let rows = last_rows(&stdout);
    assert_eq!(rows.len(), 1, "{stdout}");
    // NAMESPACE TABLE #REGION
    assert_eq!(rows[0][..3], ["default", "hot", "4"], "{stdout}");
    assert!(stdout.contains("Mode: table"), "{stdout}");
}

#[test]
fn a_server_that_is_down_is_a_clear_error_and_exit_status_one() {
    // A port nothing listens on: bind one, learn it, let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let out = top(&["--batch", "-n", "1", "--host", "127.0.0.1", "--port", &port]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "basalt top: cannot reach a Basalt server at 127.0.0.1:{port}:"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn without_a_terminal_and_without_batch_it_says_to_use_batch() {
    let out = top(&["--port", "1"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("use --batch"), "{stderr}");
}
