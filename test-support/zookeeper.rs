//! A real ZooKeeper server for tests: Debian's `zookeeper` package run as
//! a child process on a free loopback port, with a temporary data
//! directory; or a replicated ensemble of such servers
//! ([`ZooKeeperEnsemble`]), each with its own data directory, `myid`, and
//! quorum and election ports. Tests include this file with
//! `#[path = "../../../test-support/zookeeper.rs"] mod zookeeper;`; it
//! needs only std and `tempfile`.
//!
//! The server is configured for tests: a short tick (so sessions can be
//! short and expire quickly), every four-letter-word command allowed (the
//! readiness probe uses `srvr`), no admin HTTP server (it would take a
//! port).
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::fs;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};

// Relative to this file: test-support/ports.rs. moto.rs and zookeeper.rs
// each include it, so that either can be included alone.
#[path = "ports.rs"]
#[allow(clippy::duplicate_mod)]
mod ports;
use ports::free_port;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The jar of Debian's `zookeeper` package; its manifest's `Class-Path`
/// names every dependency jar, so it is the whole classpath.
const DEBIAN_JAR: &str = "/usr/share/java/zookeeper.jar";

/// Overrides the classpath (another install of ZooKeeper).
const CLASSPATH_ENV: &str = "BASALT_ZOOKEEPER_CLASSPATH";

/// ZooKeeper's tick in milliseconds: sessions may be as short as two ticks.
pub const TICK_MS: u64 = 200;

/// The main classes: one standalone server, or one member of an ensemble.
const STANDALONE_MAIN: &str = "org.apache.zookeeper.server.ZooKeeperServerMain";
const QUORUM_MAIN: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

/// How long a start may take before the test gives up (a JVM on a busy
/// 2-core machine can be slow; this is a hang guard, not a speed check).
const START_LIMIT: Duration = Duration::from_secs(120);

/// A running ZooKeeper; killed on drop.
#[derive(Debug)]
pub struct ZooKeeperServer {
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
    paused: bool,
    /// [`STANDALONE_MAIN`], or [`QUORUM_MAIN`] for an ensemble's member.
    main_class: &'static str,
}

/// The settings every test server shares, standalone or replicated: a
/// short tick (sessions may be as short as two ticks), every
/// four-letter-word command allowed (the readiness probe and
/// [`ZooKeeperEnsemble::leader`] use `srvr`), no admin HTTP server (it
/// would take a port), no purging.
fn base_config(data: &Path, port: u16) -> String {
    format!(
        "tickTime={TICK_MS}\n\
         initLimit=10\n\
         syncLimit=5\n\
         dataDir={}\n\
         clientPort={port}\n\
         clientPortAddress=127.0.0.1\n\
         minSessionTimeout={}\n\
         maxSessionTimeout=120000\n\
         maxClientCnxns=0\n\
         4lw.commands.whitelist=*\n\
         admin.enableServer=false\n\
         autopurge.purgeInterval=0\n",
        data.display(),
        2 * TICK_MS,
    )
}

impl ZooKeeperServer {
    /// Starts a server on a free loopback port and waits until it serves.
    ///
    /// # Panics
    /// When Java or Debian's `zookeeper` package is missing (install the
    /// package; scripts/test does), or when the server does not come up.
    pub fn start() -> ZooKeeperServer {
        let classpath = classpath();
        check_java();
        let dir = tempfile::Builder::new()
            .prefix("basalt-zookeeper-")
            .tempdir()
            .expect("a temporary directory for ZooKeeper");
        let port = free_port();
        let data = dir.path().join("data");
        fs::create_dir_all(&data).expect("ZooKeeper's data directory");
        fs::write(dir.path().join("zoo.cfg"), base_config(&data, port)).expect("zoo.cfg");
        fs::write(dir.path().join("classpath"), &classpath).expect("classpath note");
        let mut server = ZooKeeperServer {
            port,
            dir,
            child: None,
            paused: false,
            main_class: STANDALONE_MAIN,
        };
        server.launch();
        server
    }

    /// `127.0.0.1:<port>`, for a client's quorum.
    pub fn connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server at once (SIGKILL): no goodbye to clients, sessions
    /// stay in its data directory as after a crash.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if self.paused {
                // A stopped process still dies on SIGKILL, but resuming
                // first keeps `wait` from depending on that detail.
                signal(child.id(), "CONT");
                self.paused = false;
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops, then starts again on the same port with the same data
    /// directory (sessions and znodes survive, as after a crash).
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    /// Freezes the server (SIGSTOP): connections stay open but nothing is
    /// answered, as a hung or partitioned server.
    pub fn pause(&mut self) {
        if let Some(child) = &self.child {
            signal(child.id(), "STOP");
            self.paused = true;
        }
    }

    /// Thaws a paused server (SIGCONT).
    pub fn resume(&mut self) {
        if let Some(child) = &self.child {
            signal(child.id(), "CONT");
            self.paused = false;
        }
    }

    /// The server's output so far (for failure messages).
    pub fn log(&self) -> String {
        fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("zookeeper.log")
    }

    fn launch(&mut self) {
        self.spawn();
        self.wait_until_serving();
    }

    /// Runs the JVM without waiting for it to serve (an ensemble's members
    /// serve only once a quorum of them runs).
    fn spawn(&mut self) {
        let classpath = classpath();
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("ZooKeeper's log file");
        let err = log.try_clone().expect("ZooKeeper's log file");
        let child = Command::new("java")
            // Small and quick to start: the machine running tests is
            // shared with compilers.
            .args([
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Dzookeeper.admin.enableServer=false",
            ])
            .arg("-cp")
            .arg(&classpath)
            .arg(self.main_class)
            .arg(self.dir.path().join("zoo.cfg"))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run java for ZooKeeper: {e}"));
        self.child = Some(child);
        self.paused = false;
    }

    /// Waits until `srvr` answers with the server's mode (it answers
    /// "not currently serving requests" before that).
    fn wait_until_serving(&mut self) {
        let started = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    panic!(
                        "ZooKeeper exited ({status}) while starting on port {}; its log:\n{}",
                        self.port,
                        self.log()
                    );
                }
            }
            if four_letter_word(self.port, "srvr").is_some_and(|answer| answer.contains("Mode:")) {
                return;
            }
            if started.elapsed() > START_LIMIT {
                self.stop();
                panic!(
                    "ZooKeeper did not start serving on port {} within {START_LIMIT:?}; its log:\n{}",
                    self.port,
                    self.log()
                );
            }
            sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for ZooKeeperServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A replicated ZooKeeper ensemble on loopback: `n` servers (quorum
/// members, `myid` 1 to `n`), each with its own data directory and client,
/// quorum and election ports, and the standalone server's test settings.
/// Servers are numbered from 0 in this API (`myid` is the index plus 1).
/// Every server is killed on drop.
#[derive(Debug)]
pub struct ZooKeeperEnsemble {
    servers: Vec<ZooKeeperServer>,
}

impl ZooKeeperEnsemble {
    /// Starts `n` servers and waits until each serves (that is, until a
    /// leader is elected and every follower has synced with it).
    ///
    /// # Panics
    /// As [`ZooKeeperServer::start`]; also when `n` is 0.
    pub fn start(n: usize) -> ZooKeeperEnsemble {
        assert!(n > 0, "an ensemble needs at least one server");
        let classpath = classpath();
        check_java();
        // (client, quorum, election) ports of every member, all taken
        // before any is written: each member's configuration lists all.
        let mut taken = std::collections::BTreeSet::new();
        let mut distinct_port = || loop {
            // The kernel may hand the same free port out twice in a row.
            let port = free_port();
            if taken.insert(port) {
                return port;
            }
        };
        let ports: Vec<(u16, u16, u16)> = (0..n)
            .map(|_| (distinct_port(), distinct_port(), distinct_port()))
            .collect();
        let members: String = ports
            .iter()
            .enumerate()
            .map(|(i, (_, quorum, election))| {
                format!("server.{}=127.0.0.1:{quorum}:{election}\n", i + 1)
            })
            .collect();
        let mut servers = Vec::with_capacity(n);
        for (i, (port, _, _)) in ports.iter().enumerate() {
            let dir = tempfile::Builder::new()
                .prefix(&format!("basalt-zookeeper-{}-", i + 1))
                .tempdir()
                .expect("a temporary directory for ZooKeeper");
            let data = dir.path().join("data");
            fs::create_dir_all(&data).expect("ZooKeeper's data directory");
            fs::write(data.join("myid"), format!("{}\n", i + 1)).expect("myid");
            // A member learns of its peers from this list only (no
            // dynamic reconfiguration), so it stays the same across
            // restarts.
            let cfg = format!("{}{members}", base_config(&data, *port));
            fs::write(dir.path().join("zoo.cfg"), cfg).expect("zoo.cfg");
            fs::write(dir.path().join("classpath"), &classpath).expect("classpath note");
            servers.push(ZooKeeperServer {
                port: *port,
                dir,
                child: None,
                paused: false,
                main_class: QUORUM_MAIN,
            });
        }
        // All run before any is waited for: none serves without a quorum.
        for server in &mut servers {
            server.spawn();
        }
        for server in &mut servers {
            server.wait_until_serving();
        }
        ZooKeeperEnsemble { servers }
    }

    /// `127.0.0.1:<port>,...` of every member, for a client's quorum.
    pub fn connect_string(&self) -> String {
        self.servers
            .iter()
            .map(ZooKeeperServer::connect_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// How many servers the ensemble has (running or not).
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// Server `i` (for its port or log).
    pub fn server(&self, i: usize) -> &ZooKeeperServer {
        &self.servers[i]
    }

    /// The index of the server that is the leader now, asking each running
    /// server `srvr` for `Mode: leader`; waits while an election is on.
    ///
    /// # Panics
    /// When no leader is found within the start limit.
    pub fn leader(&self) -> usize {
        let started = Instant::now();
        loop {
            if let Some(i) = self.try_leader() {
                return i;
            }
            if started.elapsed() > START_LIMIT {
                panic!("the ensemble elected no leader within {START_LIMIT:?}");
            }
            sleep(Duration::from_millis(50));
        }
    }

    /// The leader's index if one answers as leader right now.
    pub fn try_leader(&self) -> Option<usize> {
        self.servers.iter().position(|server| {
            server.child.is_some()
                && !server.paused
                && four_letter_word(server.port, "srvr")
                    .is_some_and(|answer| answer.contains("Mode: leader"))
        })
    }

    /// Kills server `i` at once (SIGKILL); its data directory is kept.
    pub fn stop(&mut self, i: usize) {
        self.servers[i].stop();
    }

    /// Starts server `i` again with its data kept, and waits until it
    /// serves (it rejoins the quorum: as a follower if a leader is there).
    pub fn start_server(&mut self, i: usize) {
        self.servers[i].launch();
    }

    /// Freezes server `i` (SIGSTOP).
    pub fn pause(&mut self, i: usize) {
        self.servers[i].pause();
    }

    /// Thaws server `i` (SIGCONT).
    pub fn resume(&mut self, i: usize) {
        self.servers[i].resume();
    }

    /// Every server's output so far, each under its index (for failure
    /// messages).
    pub fn log(&self) -> String {
        self.servers
            .iter()
            .enumerate()
            .map(|(i, server)| format!("=== ZooKeeper server {i} ===\n{}", server.log()))
            .collect()
    }
}

/// Sends a four-letter word and reads the answer, `None` when the server
/// does not answer.
pub fn four_letter_word(port: u16, word: &str) -> Option<String> {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(word.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

fn classpath() -> String {
    if let Ok(classpath) = std::env::var(CLASSPATH_ENV) {
        return classpath;
    }
    if !Path::new(DEBIAN_JAR).exists() {
        panic!(
            "ZooKeeper is not installed ({DEBIAN_JAR} is missing): install Debian's `zookeeper` \
             package (`apt-get install zookeeper`; scripts/test installs it), or set \
             {CLASSPATH_ENV} to a ZooKeeper classpath"
        );
    }
    DEBIAN_JAR.to_owned()
}

fn check_java() {
    let found = Command::new("java")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        panic!(
            "Java is not installed, ZooKeeper cannot run: install Debian's `zookeeper` package \
             (it brings a Java runtime; scripts/test installs it)"
        );
    }
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
