//! A real S3-compatible server for tests: `moto_server` (PyPI's
//! `moto[server]`) run as a child process on a free loopback port. Tests
//! include this file with
//! `#[path = "../../../test-support/moto.rs"] mod moto;`; it needs only std.
//!
//! moto keeps everything in memory: a stopped server loses its buckets, so
//! tests that stop it (to see the store unreachable) do so last. moto
//! honours conditional writes (`If-None-Match: *` is refused with 412 when
//! the key exists), which the object store's create-if-absent publication
//! relies on; `tests/moto.rs` of basalt-object-store checks it.
//!
//! Finding the server: `$BASALT_MOTO_SERVER` (scripts/test installs moto
//! into a virtualenv and sets it), else `moto_server` on the `PATH`. When
//! neither exists the test fails with a clear message if `CI` is set, and
//! otherwise is skipped with a loud message on stderr.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};

// Relative to this file: test-support/ports.rs. moto.rs and zookeeper.rs
// each include it, so that either can be included alone.
#[path = "ports.rs"]
#[allow(clippy::duplicate_mod)]
mod ports;
use ports::free_port;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// Names the `moto_server` executable.
pub const BINARY_ENV: &str = "BASALT_MOTO_SERVER";

/// The credentials moto accepts (any); tests pass these.
pub const ACCESS_KEY: &str = "basalt-test";
pub const SECRET_KEY: &str = "basalt-test-secret";
pub const REGION: &str = "us-east-1";

/// A hang guard for the start, not a speed check.
const START_LIMIT: Duration = Duration::from_secs(120);

/// A running moto server; killed on drop.
#[derive(Debug)]
pub struct MotoServer {
    port: u16,
    child: Option<Child>,
    paused: bool,
    log: tempfile::NamedTempFile,
}

/// Starts moto, or says loudly why the test is skipped (`None`) when moto
/// is not installed and `CI` is not set.
///
/// # Panics
/// When moto is missing and `CI` is set, or when it does not come up.
pub fn start_or_skip(test: &str) -> Option<MotoServer> {
    match binary() {
        Some(binary) => Some(MotoServer::start(binary)),
        None if std::env::var_os("CI").is_some() => panic!(
            "{test}: moto_server is not installed: set {BINARY_ENV} to its path or put it on \
             the PATH (`pip install 'moto[server]'`; scripts/test installs it)"
        ),
        None => {
            eprintln!(
                "\n*** SKIPPED {test}: moto_server is not installed (set {BINARY_ENV} or \
                 `pip install 'moto[server]'`; scripts/test installs it) ***\n"
            );
            None
        }
    }
}

fn binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(BINARY_ENV) {
        let path = PathBuf::from(path);
        return path.is_file().then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("moto_server"))
        .find(|candidate| candidate.is_file())
}

impl MotoServer {
    fn start(binary: PathBuf) -> MotoServer {
        let log = tempfile::Builder::new()
            .prefix("basalt-moto-")
            .suffix(".log")
            .tempfile()
            .expect("a log file for moto");
        let mut server = MotoServer {
            port: free_port(),
            child: None,
            paused: false,
            log,
        };
        server.launch(&binary);
        server
    }

    /// `http://127.0.0.1:<port>`, the S3 endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Creates a bucket (moto needs no signature for it).
    pub fn create_bucket(&self, bucket: &str) {
        let answer = http(self.port, "PUT", &format!("/{bucket}"), &[])
            .unwrap_or_else(|e| panic!("creating bucket {bucket} on moto: {e}"));
        assert!(
            answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200"),
            "creating bucket {bucket} on moto: {answer}"
        );
    }

    /// The AWS environment variables a child process needs to use this
    /// server (endpoint, region, credentials, plain HTTP).
    pub fn aws_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_REGION", REGION.to_owned()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_owned()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
        ]
    }

    /// Kills the server (its data is gone; requests are refused).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if self.paused {
                signal(child.id(), "CONT");
                self.paused = false;
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes the server (SIGSTOP): connections are accepted by the
    /// kernel but nothing answers, as a hung server.
    pub fn pause(&mut self) {
        if let Some(child) = &self.child {
            signal(child.id(), "STOP");
            self.paused = true;
        }
    }

    /// Thaws a paused server.
    pub fn resume(&mut self) {
        if let Some(child) = &self.child {
            signal(child.id(), "CONT");
            self.paused = false;
        }
    }

    /// The server's output so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    fn launch(&mut self, binary: &PathBuf) {
        let out = self.log.reopen().expect("moto's log file");
        let err = out.try_clone().expect("moto's log file");
        let child = Command::new(binary)
            .args(["-H", "127.0.0.1", "-p", &self.port.to_string()])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
        self.child = Some(child);
        let started = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    panic!(
                        "moto_server exited ({status}) while starting on port {}; its log:\n{}",
                        self.port,
                        self.log()
                    );
                }
            }
            if http(self.port, "GET", "/", &[]).is_ok_and(|a| a.starts_with("HTTP/")) {
                return;
            }
            if started.elapsed() > START_LIMIT {
                self.stop();
                panic!(
                    "moto_server did not answer on port {} within {START_LIMIT:?}; its log:\n{}",
                    self.port,
                    self.log()
                );
            }
            sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One HTTP/1.1 request with `Connection: close`; the answer's text.
fn http(port: u16, method: &str, path: &str, body: &[u8]) -> std::io::Result<String> {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status();
    if !status.is_ok_and(|status| status.success()) {
        panic!("kill -{name} {pid} failed");
    }
}
