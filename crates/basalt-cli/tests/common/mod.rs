//! A `basalt serve` process for the process tests (serve, shell).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Hang guard only.
const TIMEOUT: Duration = Duration::from_secs(120);

pub struct Server {
    pub child: Child,
    pub port: u16,
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
/// its first "listening" line (the Thrift gateway's).
pub fn start(args: &[&str], cwd: Option<&Path>) -> Server {
    start_for(args, cwd, "listening")
}

/// Starts `basalt serve` and waits for the log line containing `marker`;
/// `port` is the one that line names.
// The child is waited for by `Server` (its drop, or the test); the lint
// cannot follow it there.
#[allow(clippy::zombie_processes)]
pub fn start_for(args: &[&str], cwd: Option<&Path>, marker: &str) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_basalt"));
    command
        .arg("serve")
        .args(args)
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
    loop {
        let line = rx
            .recv_timeout(TIMEOUT)
            .expect("the server never said where it listens");
        if line.contains(marker) {
            let address = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("address="))
                .unwrap();
            let port = address.rsplit(':').next().unwrap().parse().unwrap();
            return Server { child, port };
        }
    }
}
