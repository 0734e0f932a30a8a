//! A `basalt serve` process for the process tests (serve, shell).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Hang guard only.
const TIMEOUT: Duration = Duration::from_secs(120);

pub struct Server {
    pub child: Child,
    /// The Thrift1 port.
    pub port: u16,
    /// The Thrift2 port, unless `--no-thrift2` turned it off.
    pub thrift2_port: Option<u16>,
    /// The REST port, unless `--no-rest` turned it off.
    pub rest_port: Option<u16>,
    /// The native RPC master port, when native RPC is on.
    pub master_port: Option<u16>,
    /// The native RPC region server port, when native RPC is on.
    pub region_server_port: Option<u16>,
    /// The info server's port (web UI, /metrics), unless `--no-info`.
    pub info_port: Option<u16>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `basalt serve` on a free port over `dir`.
pub fn serve(dir: &Path) -> Server {
    serve_on(dir, 0)
}

/// Starts `basalt serve` on `port` (0: a free one) over `dir`.
pub fn serve_on(dir: &Path, port: u16) -> Server {
    let data = dir.to_str().unwrap();
    start(
        &["--thrift-port", &port.to_string(), "--data-dir", data],
        None,
    )
}

/// Starts `basalt serve` with `args` (in `cwd`, if given) and waits for
/// the "listening" line of every gateway it runs. Thrift2 and REST get
/// free ports unless `args` say otherwise: tests run in parallel, and
/// their defaults (9091, 8080) are one port each.
// The child is waited for by `Server` (its drop, or the test); the lint
// cannot follow it there.
pub fn start(args: &[&str], cwd: Option<&Path>) -> Server {
    start_with_env(args, cwd, &[])
}

/// [`start`] with extra environment variables for the server.
#[allow(clippy::zombie_processes)]
pub fn start_with_env(args: &[&str], cwd: Option<&Path>, env: &[(&str, &str)]) -> Server {
    let mentions = |flag: &str, off: &str| args.iter().any(|a| a.starts_with(flag) || *a == off);
    let mut command = Command::new(env!("CARGO_BIN_EXE_basalt"));
    command.arg("serve").args(args);
    if !mentions("--thrift2-port", "--no-thrift2") {
        command.args(["--thrift2-port", "0"]);
    }
    if !mentions("--rest-port", "--no-rest") {
        command.args(["--rest-port", "0"]);
    }
    if !mentions("--info-port", "--no-info") {
        command.args(["--info-port", "0"]);
    }
    command
        .envs(env.iter().copied())
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            eprintln!("[basalt] {line}");
            // Keep draining after the test stops listening: a closed pipe
            // would fail the server's next log line.
            let _ = tx.send(line);
        }
    });
    let (mut port, mut thrift2_port, mut rest_port) = (None, None, None);
    let (mut master_port, mut region_server_port, mut info_port) = (None, None, None);
    // Every gateway says where it listens once the database is open;
    // "database open" comes before them all, and the last gateway line
    // before serving starts is the last of them.
    let mut expected: Option<usize> = None;
    let mut seen = 0;
    while expected.is_none_or(|n| seen < n) {
        let line = rx
            .recv_timeout(TIMEOUT)
            .expect("the server never said where it listens");
        if line.contains("gateways serving") {
            let n = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("count="))
                .unwrap()
                .parse()
                .unwrap();
            expected = Some(n);
            continue;
        }
        if !line.contains("listening") {
            continue;
        }
        let address = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("address="))
            .unwrap();
        let p: u16 = address.rsplit(':').next().unwrap().parse().unwrap();
        seen += 1;
        if line.contains("info server") {
            info_port = Some(p);
        } else if line.contains("RPC master") {
            master_port = Some(p);
        } else if line.contains("RPC region server") {
            region_server_port = Some(p);
        } else if line.contains("Thrift2") {
            thrift2_port = Some(p);
        } else if line.contains("REST") {
            rest_port = Some(p);
        } else {
            port = Some(p);
        }
    }
    Server {
        child,
        port: port.unwrap(),
        master_port,
        region_server_port,
        thrift2_port,
        rest_port,
        info_port,
    }
}

/// A process's peak resident size (VmHWM), in bytes.
pub fn peak_rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kb * 1024
}

/// Runs `basalt` with `args`, expecting it to exit by itself (a hang
/// guard kills it after the timeout and fails): its exit code and stderr.
pub fn run_to_exit(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + TIMEOUT;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("basalt {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A Thrift1 client (binary protocol, buffered) of `server`'s gateway,
/// with the hang guard as its socket timeout.
pub fn thrift_client(server: &Server) -> basalt_thrift::Client {
    let c = basalt_thrift::Client::connect(
        ("127.0.0.1", server.port),
        false,
        basalt_thrift::Protocol::Binary { strict: true },
    )
    .unwrap();
    c.set_timeout(Some(TIMEOUT)).unwrap();
    c
}

/// Writes `row` (cell `cf:q` = the row key) to table `t` over Thrift.
pub fn thrift_write(
    c: &mut basalt_thrift::Client,
    row: &str,
) -> Result<(), basalt_thrift::client::ClientError> {
    c.mutate_rows(
        b"t",
        vec![basalt_thrift::types::BatchMutation {
            row: Some(bytes::Bytes::from(row.to_owned())),
            mutations: Some(vec![basalt_thrift::client::put(b"cf:q", row.as_bytes())]),
        }],
    )
}

/// Writes rows `row{from:05}` .. `row{to:05}` (cell `cf:q` = `value{i}`) to
/// table `t` over Thrift in one batch.
pub fn write_rows(c: &mut basalt_thrift::Client, from: usize, to: usize) {
    let batches = (from..to)
        .map(|i| basalt_thrift::types::BatchMutation {
            row: Some(bytes::Bytes::from(format!("row{i:05}"))),
            mutations: Some(vec![basalt_thrift::client::put(
                b"cf:q",
                format!("value{i}").as_bytes(),
            )]),
        })
        .collect();
    c.mutate_rows(b"t", batches).unwrap();
}

/// Runs `basalt shell ARGS` with `input` on standard input.
pub fn shell(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .arg("shell")
        .args(args)
        .env("USER", "tester")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// The `basalt shell` arguments that reach `server` (over Thrift1 and
/// Basalt's admin extension).
pub fn remote_args(server: &Server) -> Vec<String> {
    vec![
        "--host".into(),
        "127.0.0.1".into(),
        "--port".into(),
        server.port.to_string(),
    ]
}

/// One HTTP request to the REST gateway on `port`, on its own connection,
/// accepting JSON: (status, body).
pub fn http(port: u16, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
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
