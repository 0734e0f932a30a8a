//! Shared test helpers: an in-process server on a temporary directory and
//! clients in every transport/protocol combination.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use basalt::Database;
pub mod thrift2;

use basalt_thrift::{Client, Client2, Flavour, Protocol, Server, ServerConfig};

/// Hang guard for every client call; no test depends on it.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The four transport/protocol combinations (plus non-strict binary).
pub const WIRES: [(bool, Protocol); 5] = [
    (false, Protocol::Binary { strict: true }),
    (true, Protocol::Binary { strict: true }),
    (false, Protocol::Compact),
    (true, Protocol::Compact),
    (false, Protocol::Binary { strict: false }),
];

pub struct TestServer {
    pub server: Option<Server>,
    pub dir: tempfile::TempDir,
}

impl TestServer {
    pub fn start() -> Self {
        Self::with_config(ServerConfig {
            port: 0,
            ..ServerConfig::default()
        })
    }

    pub fn with_config(config: ServerConfig) -> Self {
        Self::serving(config, Flavour::Thrift1)
    }

    /// A Thrift2 server on a free port.
    pub fn thrift2() -> Self {
        Self::serving(
            ServerConfig {
                port: 0,
                ..ServerConfig::thrift2()
            },
            Flavour::Thrift2,
        )
    }

    pub fn serving(config: ServerConfig, flavour: Flavour) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path().join("db")).unwrap();
        let server = Server::start_as(db, &config, flavour).unwrap();
        TestServer {
            server: Some(server),
            dir,
        }
    }

    pub fn server(&self) -> &Server {
        self.server.as_ref().unwrap()
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        self.server().local_addr()
    }

    pub fn client(&self, framed: bool, protocol: Protocol) -> Client {
        let client = Client::connect(self.addr(), framed, protocol).unwrap();
        client.set_timeout(Some(TIMEOUT)).unwrap();
        client
    }

    pub fn client2(&self, framed: bool, protocol: Protocol) -> Client2 {
        let mut client = Client2::connect(self.addr(), framed, protocol).unwrap();
        client.connection().set_timeout(Some(TIMEOUT)).unwrap();
        client
    }

    /// Buffered transport, strict binary protocol: happybase's default.
    pub fn default_client(&self) -> Client {
        self.client(false, Protocol::Binary { strict: true })
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().unwrap();
        }
    }
}

/// Polls `condition` until it holds; panics after the hang guard.
pub fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + TIMEOUT;
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
