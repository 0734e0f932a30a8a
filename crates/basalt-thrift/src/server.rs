//! The Thrift server: one port for buffered and framed transports and the
//! binary and compact protocols, on tokio, running one service: Thrift1's
//! `Hbase` or Thrift2's `THBaseService` ([`Flavour`]; HBase too runs one
//! flavour per port). Everything below the call (transports, limits,
//! scanners' leases) is the same code for both: a service only answers
//! calls ([`Dispatch`]).
//!
//! Each connection is a task on a small pool of async workers; idle
//! connections cost a task and a buffer, no thread. Engine calls block (the
//! write-ahead log's group commit waits for the disk), so each call runs on
//! tokio's blocking pool, capped at `max_blocking_threads`: calls beyond the
//! cap queue instead of multiplying threads.
//!
//! What clients can make the server hold is bounded: connections
//! (`max_connections`, beyond which a connection is accepted and closed at
//! once), idle time (`idle_timeout_ms`), open scanners (`max_scanners`,
//! `max_scanners_per_connection`), and the bytes of requests in flight
//! (`max_in_flight_bytes`): a framed request waits for room for its bytes
//! before its body is read, and every request waits for room for its
//! decoded form, measured exactly before it is decoded, so many small
//! elements cannot grow the process by forty times what was sent.
//!
//! Answers are bounded too: a scanner's answer stops at `max_answer_bytes`
//! whatever the client asks, takes room in the process's answer budget
//! while it is built and written (`basalt::guard`), and a client that reads
//! nothing of it for `write_timeout_ms` is dropped with everything its
//! connection held. A new connection must send its first request within
//! `first_request_timeout_ms`; a scan call reads for at most
//! `scan_call_timeout_ms`, and stops at its next row when its client leaves.
//!
//! With `tls` (`[thrift.tls]`, `[thrift2.tls]`) connections are TLS, the
//! handshake counting against the first request's deadline; with
//! `plaintext` kept, a plaintext client is told apart by its first byte
//! (`basalt::tls::accept`, as every listener). A connection is served by
//! the same code either way, generic over its stream: a plaintext one is
//! a bare `TcpStream`, as without TLS.
//!
//! With `[security] authentication = "kerberos"` every connection starts
//! with Thrift's SASL exchange (GSSAPI; `crate::sasl`), under the first
//! request's deadline; its calls then run as the authenticated user, and
//! a client that does not start SASL is closed with an audit line.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt::gateways::scanners::ScannerLimits;
use basalt::guard::{AddressSlots, AnswerBytes, RefusalLog, Slot, SlotLimits, WriteTimeout};
use basalt::interrupt::CallControl;
use basalt::tls::{Accepted, Refused, TlsServer, TlsSettings};
use bytes::{Buf, BufMut, BytesMut};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use basalt::Database;

use crate::handler::{Advertised, Outcome, Service};
use crate::protocol::{
    decode_header, decode_message_within, detect_wire, encode_message, DecodeError, MessageHeader,
    MessageScanner, MessageType, Scanned, Value, Wire,
};
use crate::sasl::{self, SaslStream, ThriftKerberos};
use crate::scanners::{AnswerLimits, Scanners};
use crate::thrift2::handler::Service2;
use crate::types::{app_error, TApplicationException, Thrift};

/// Which service a server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// HBase's Thrift1 `Hbase` service (and Basalt's `basaltAdmin`).
    Thrift1,
    /// HBase's Thrift2 `THBaseService`.
    Thrift2,
}

impl Flavour {
    fn name(self) -> &'static str {
        match self {
            Flavour::Thrift1 => "Thrift1",
            Flavour::Thrift2 => "Thrift2",
        }
    }
}

/// A service the server runs: answers one decoded call. Calls block (the
/// server runs them on its blocking pool, or first on the connection's own
/// thread with memory-only reads when [`Dispatch::is_read_only`] says so).
pub(crate) trait Dispatch: Send + Sync + std::fmt::Debug + 'static {
    /// Runs `method` for connection `conn` and builds its answer.
    fn call(&self, conn: u64, method: &str, body: Value) -> Outcome;

    /// True for methods that only read rows and change nothing (not even a
    /// scanner's position), so a memory-only attempt whose answer is
    /// dropped can be run again on the pool.
    fn is_read_only(&self, _method: &str) -> bool {
        false
    }

    /// The same service acting as `user` (a Kerberos-authenticated
    /// connection's caller) from `address`: its calls are checked against
    /// that user's grants instead of the server's.
    fn acting_as_user(&self, user: &str, address: Option<String>) -> Arc<dyn Dispatch>;
}

/// Runs one call: a read-only method first on this (runtime) thread with
/// memory-only reads, which answers a read whose data is in memstores and
/// the block cache without a hand-off to the blocking pool (a wake-up
/// there and one back, which cost more than such a read); every other call,
/// and a read that needed a file, on the blocking pool, so nothing that
/// waits on a disk or object storage holds a thread that serves
/// connections (`basalt::read_tier`).
async fn run_call(
    service: &Arc<dyn Dispatch>,
    id: u64,
    name: &str,
    body: Value,
    control: CallControl,
) -> (Outcome, AnswerBytes) {
    // The call's answer room: what building its answer takes in the answer
    // budget, held until the reply is written.
    let room = || basalt::guard::answer_budget().force(0);
    if service.is_read_only(name) {
        let attempt = body.clone();
        let (outcome, held) = control.run(|| {
            basalt::guard::with_answer_room(room(), || {
                basalt::read_tier::memory_only(|| service.call(id, name, attempt))
            })
        });
        if let Some(outcome) = outcome {
            return (outcome, held);
        }
    }
    let service = Arc::clone(service);
    let method = name.to_string();
    let call = move || {
        control.run(|| basalt::guard::with_answer_room(room(), || service.call(id, &method, body)))
    };
    match tokio::task::spawn_blocking(call).await {
        Ok(answered) => answered,
        Err(e) => (
            Outcome::Application(
                app_error::INTERNAL_ERROR,
                format!("Internal error processing {name}: {e}"),
            ),
            AnswerBytes::none(),
        ),
    }
}

/// Settings of a Thrift server (the `[thrift]` and `[thrift2]` tables of
/// the config file; only the default port differs, see
/// [`ServerConfig::thrift2`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on. Default `127.0.0.1`.
    pub bind: String,
    /// Port. Default 9090 (HBase's). 0 picks a free port.
    pub port: u16,
    /// Largest message accepted, framed or not, in bytes. Default 16 MiB.
    pub max_frame_bytes: usize,
    /// Milliseconds an unused scanner stays open. Default 60 000 (HBase's
    /// scanner lease).
    pub scanner_lease_ms: u64,
    /// Async worker threads (connections, parsing). Default 2.
    pub worker_threads: usize,
    /// Most threads running engine calls at once. Default 32.
    pub max_blocking_threads: usize,
    /// Most scanners one connection may hold open. Default 1000.
    pub max_scanners_per_connection: usize,
    /// Most scanners open on the whole server. Default 4096: an open
    /// scanner holds engine state (about 60 KB measured), so this keeps
    /// forgotten scanners under about 250 MB while leaving room for
    /// hundreds of clients scanning at once.
    pub max_scanners: usize,
    /// Most connections open at once; one more is accepted and closed at
    /// once (with a warning in the log). Default 1000 (HBase Thrift's
    /// worker thread count): well below the usual descriptor limits, so
    /// idle clients cannot take every descriptor from the data files and
    /// from new clients.
    pub max_connections: usize,
    /// Milliseconds a connection may go without a complete request before
    /// it is closed (its scanners with it); 0 never closes one. Default
    /// 60 000, HBase Thrift's socket read timeout and the scanner lease.
    pub idle_timeout_ms: u64,
    /// Bytes of requests in flight on the whole server. A framed request
    /// waits for room for its length before its body is read; every
    /// request waits for room for its decoded form before it is decoded
    /// (a second budget of the same size), and one whose decoded form
    /// alone exceeds this is refused. A request holds its room until it
    /// is answered. Default 64 MiB: four requests of the largest size at
    /// once, thousands of ordinary ones.
    pub max_in_flight_bytes: usize,
    /// Connections one peer address may hold (0: no limit of its own).
    pub max_connections_per_address: usize,
    /// Of `max_connections`, the slots only addresses holding no
    /// connection may take (default a tenth): one address flooding the
    /// server cannot lock the others out.
    pub reserved_connections: Option<usize>,
    /// Largest answer of one scanner call in cell bytes, whatever the
    /// client asks (and at most half of `max_frame_bytes`): fewer rows come
    /// back, as HBase's `max_result_size` does. Default 4 MiB.
    pub max_answer_bytes: usize,
    /// Milliseconds an answer may make no progress to the client before the
    /// connection is dropped (its scanners, answer and budget with it); 0
    /// never. Default 30 000.
    pub write_timeout_ms: u64,
    /// Milliseconds a new connection has to send its first whole request;
    /// 0: the idle timeout. Default 10 000, so silent connections give
    /// their slot back in seconds.
    pub first_request_timeout_ms: u64,
    /// Milliseconds one scanner call may read before it answers the rows it
    /// has (or, with none, fails naming this limit; the scanner stays where
    /// it stopped); 0 never. Default 60 000.
    pub scan_call_timeout_ms: u64,
    /// TLS on the port (`[thrift.tls]`, `[thrift2.tls]`; docs/security.md):
    /// HBase's `hbase.thrift.ssl.enabled`. Default none.
    pub tls: Option<TlsSettings>,
}

impl ServerConfig {
    /// The Thrift2 gateway's defaults: Thrift1's, on HBase's Thrift2 port
    /// 9091.
    pub fn thrift2() -> ServerConfig {
        ServerConfig {
            port: 9091,
            ..ServerConfig::default()
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: "127.0.0.1".into(),
            port: 9090,
            max_frame_bytes: 16 * 1024 * 1024,
            scanner_lease_ms: 60_000,
            worker_threads: 2,
            max_blocking_threads: 32,
            max_scanners_per_connection: 1000,
            max_scanners: 4096,
            max_connections: 1000,
            idle_timeout_ms: 60_000,
            max_in_flight_bytes: 64 * 1024 * 1024,
            max_connections_per_address: 0,
            reserved_connections: None,
            max_answer_bytes: basalt::guard::DEFAULT_MAX_ANSWER_BYTES,
            write_timeout_ms: basalt::guard::DEFAULT_WRITE_TIMEOUT_MS,
            first_request_timeout_ms: basalt::guard::DEFAULT_FIRST_REQUEST_TIMEOUT_MS,
            scan_call_timeout_ms: basalt::guard::DEFAULT_SCAN_CALL_TIMEOUT_MS,
            tls: None,
        }
    }
}

/// A decoded request may take at most this many times its bytes in memory
/// (plus [`DECODED_FLOOR`]); past it the request is refused unread. A
/// decoded value takes at least 40 bytes however few it was sent in (one,
/// in the compact protocol), and ordinary batches of short cells (compact
/// deletes are the densest) come to a few tens of times by estimate, so
/// this refuses only requests of little else than tiny elements (the test
/// `ordinary_batches_of_short_cells_are_not_refused_for_their_decoded_size`
/// keeps it so).
pub const MAX_DECODED_PER_BYTE: usize = 32;

/// Decoded memory every request may take whatever its size: the smallest
/// requests are a few dozen bytes.
pub const DECODED_FLOOR: usize = 64 * 1024;

/// Counters for tests: how much work and waiting the server did.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Bytes the decoder examined (the message scanner and the decoder
    /// together): linear in what was sent.
    pub decode_bytes_examined: u64,
    /// Times a request waited for room in the in-flight budget.
    pub budget_waits: u64,
    /// Connections refused for being over `max_connections`.
    pub refused_connections: u64,
    /// Connections closed for being idle (before their first request too).
    pub idle_closed: u64,
    /// Requests refused because their decoded form would be too large.
    pub refused_decodes: u64,
    /// Bytes of the request budget held right now (the wire half).
    pub in_flight_bytes: u64,
    /// Connections dropped because their client read nothing of an answer
    /// for `write_timeout_ms`.
    pub write_timeouts: u64,
    /// Connections closed for sending no whole first request within
    /// `first_request_timeout_ms`.
    pub first_request_timeouts: u64,
    /// Calls whose work was stopped because their client left.
    pub cancelled_calls: u64,
}

#[derive(Debug, Default)]
struct Stats {
    decode_bytes_examined: AtomicU64,
    budget_waits: AtomicU64,
    refused_connections: AtomicU64,
    idle_closed: AtomicU64,
    refused_decodes: AtomicU64,
    write_timeouts: AtomicU64,
    first_request_timeouts: AtomicU64,
    cancelled_calls: AtomicU64,
    /// When the last refusal was logged (ms since start), so a flood of
    /// connections logs once a second, not once per connection.
    last_refusal_log_ms: AtomicU64,
}

/// The in-flight budgets: bytes of requests being read and served, and
/// their decoded form. Two semaphores, always taken in that order and the
/// second never waited for while holding a permit of it, so no request
/// can wait on another that waits on it.
#[derive(Debug)]
struct Budget {
    wire: Arc<Semaphore>,
    decoded: Arc<Semaphore>,
    /// Permits of each semaphore (a request asks for at most this).
    size: usize,
}

/// Room a request holds in the budget until it is answered.
#[derive(Debug, Default)]
struct Held {
    _permits: Vec<OwnedSemaphorePermit>,
}

/// State shared by the accept loop and every connection.
#[derive(Debug)]
struct Shared {
    service: Arc<dyn Dispatch>,
    scanners: Arc<Scanners>,
    max_frame: usize,
    max_connections: usize,
    idle_timeout: Option<Duration>,
    first_request_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    scan_call_timeout: Option<Duration>,
    budget: Budget,
    stats: Stats,
    started: Instant,
    next_connection: AtomicU64,
    open_connections: AtomicUsize,
    /// Per-address slots with reserved room for other addresses.
    slots: AddressSlots,
    /// TLS, when configured.
    tls: Option<TlsServer>,
    /// Failed TLS handshakes, one summary line per interval (a scanner
    /// probing the port must not flood the log).
    tls_refusals: RefusalLog,
    /// Kerberos (SASL GSSAPI), when `[security] authentication =
    /// "kerberos"`: every connection must authenticate.
    kerberos: Option<ThriftKerberos>,
    /// `Thrift1` or `Thrift2`, for log lines.
    name: &'static str,
}

impl Shared {
    /// Takes `bytes` of `semaphore` (at most the whole budget, so a lone
    /// request larger than it still passes once nothing else is in
    /// flight), waiting if it must; `None` when the server shuts down.
    async fn reserve(
        &self,
        semaphore: &Arc<Semaphore>,
        bytes: usize,
        held: &mut Held,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Option<()> {
        // The budget fits in u32 (see `serve_bound`).
        let n = u32::try_from(bytes.clamp(1, self.budget.size)).unwrap_or(u32::MAX);
        let permit = match Arc::clone(semaphore).try_acquire_many_owned(n) {
            Ok(permit) => permit,
            Err(_) => {
                self.stats.budget_waits.fetch_add(1, Ordering::SeqCst);
                tokio::select! {
                    permit = Arc::clone(semaphore).acquire_many_owned(n) => permit.ok()?,
                    _ = shutdown.changed() => return None,
                }
            }
        };
        held._permits.push(permit);
        Some(())
    }
}

/// A running server. Dropping it without [`Server::shutdown`] stops the
/// runtime abruptly (calls in flight are abandoned).
#[derive(Debug)]
pub struct Server {
    runtime: Option<tokio::runtime::Runtime>,
    local_addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    accept_loop: Option<tokio::task::JoinHandle<()>>,
    shared: Arc<Shared>,
    db: Database,
    flavour: Flavour,
}

/// The server's port, bound but not yet serving: [`Server::bind`] then
/// [`Bound::serve`] lets a caller find a taken port before it opens (and
/// locks, or creates) a data directory.
#[derive(Debug)]
pub struct Bound {
    runtime: tokio::runtime::Runtime,
    listener: TcpListener,
    config: ServerConfig,
    /// The TLS files, loaded at bind so unusable ones fail the start
    /// before a data directory is opened.
    tls: Option<TlsServer>,
}

impl Bound {
    /// The address the port is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Starts serving Thrift1 on `db` on the bound port; returns once the
    /// server accepts connections.
    pub fn serve(self, db: Database) -> io::Result<Server> {
        Server::serve_bound(self, db, Flavour::Thrift1)
    }

    /// Starts serving `flavour` on `db` on the bound port.
    pub fn serve_as(self, db: Database, flavour: Flavour) -> io::Result<Server> {
        Server::serve_bound(self, db, flavour)
    }
}

impl Server {
    /// Starts serving `db` as configured: binds the port and returns once
    /// the server accepts connections.
    pub fn start(db: Database, config: &ServerConfig) -> io::Result<Server> {
        Server::bind(config)?.serve(db)
    }

    /// Starts serving `flavour` on `db` as configured.
    pub fn start_as(db: Database, config: &ServerConfig, flavour: Flavour) -> io::Result<Server> {
        Server::bind(config)?.serve_as(db, flavour)
    }

    /// Binds the configured port (and builds the runtime that will serve
    /// it) without serving anything yet; loads the TLS files, if any.
    pub fn bind(config: &ServerConfig) -> io::Result<Bound> {
        let tls = config
            .tls
            .clone()
            .map(TlsServer::load)
            .transpose()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.worker_threads.max(1))
            .max_blocking_threads(config.max_blocking_threads.max(1))
            .thread_name("basalt-thrift")
            .enable_io()
            .enable_time()
            .build()?;
        let listener = runtime.block_on(TcpListener::bind((config.bind.as_str(), config.port)))?;
        Ok(Bound {
            runtime,
            listener,
            config: config.clone(),
            tls,
        })
    }

    fn serve_bound(bound: Bound, db: Database, flavour: Flavour) -> io::Result<Server> {
        let Bound {
            runtime,
            listener,
            config,
            tls,
        } = bound;
        let local_addr = listener.local_addr()?;
        let kerberos = ThriftKerberos::new(db.security(), flavour.name())?;
        let lease = Duration::from_millis(config.scanner_lease_ms.max(1));
        let scanners = Arc::new(Scanners::new(ScannerLimits {
            max_open: config.max_scanners,
            max_per_connection: config.max_scanners_per_connection,
            lease,
        }));
        let advertised = Advertised {
            host: if local_addr.ip().is_unspecified() {
                "localhost".to_string()
            } else {
                local_addr.ip().to_string()
            },
            port: local_addr.port(),
        };
        let max_frame = config.max_frame_bytes.max(64);
        let millis = |ms: u64| (ms > 0).then(|| Duration::from_millis(ms));
        let write_timeout = millis(config.write_timeout_ms);
        let answer_limits = AnswerLimits {
            max_bytes: config.max_answer_bytes.clamp(1, max_frame / 2),
            // An answer waits for room at most as long as a client that
            // does not read may hold it.
            patience: write_timeout.unwrap_or(Duration::from_millis(
                basalt::guard::DEFAULT_WRITE_TIMEOUT_MS,
            )),
        };
        let service: Arc<dyn Dispatch> = match flavour {
            Flavour::Thrift1 => Arc::new(Service::new(
                db.clone(),
                Arc::clone(&scanners),
                advertised,
                answer_limits,
            )),
            Flavour::Thrift2 => Arc::new(Service2::new(
                db.clone(),
                Arc::clone(&scanners),
                advertised,
                answer_limits,
            )),
        };
        // Semaphores count in u32 requests; 4 GiB is far beyond any use.
        let budget_size = config
            .max_in_flight_bytes
            .clamp(1, u32::MAX as usize)
            .min(Semaphore::MAX_PERMITS);
        let shared = Arc::new(Shared {
            service,
            scanners: Arc::clone(&scanners),
            max_frame,
            max_connections: config.max_connections.max(1),
            idle_timeout: millis(config.idle_timeout_ms),
            first_request_timeout: millis(config.first_request_timeout_ms),
            write_timeout,
            scan_call_timeout: millis(config.scan_call_timeout_ms),
            budget: Budget {
                wire: Arc::new(Semaphore::new(budget_size)),
                decoded: Arc::new(Semaphore::new(budget_size)),
                size: budget_size,
            },
            stats: Stats::default(),
            started: Instant::now(),
            next_connection: AtomicU64::new(1),
            open_connections: AtomicUsize::new(0),
            slots: AddressSlots::new(SlotLimits {
                total: config.max_connections.max(1),
                per_address: match config.max_connections_per_address {
                    0 => usize::MAX,
                    n => n,
                },
                reserved: config
                    .reserved_connections
                    .unwrap_or(config.max_connections / 10),
            }),
            tls,
            tls_refusals: RefusalLog::new(flavour.name(), Duration::from_secs(10)),
            kerberos,
            name: flavour.name(),
        });
        let (shutdown, shutdown_rx) = watch::channel(false);
        scanners.spawn_reaper(runtime.handle(), shutdown_rx.clone(), flavour.name());
        let accept_loop = runtime.spawn(accept_loop(listener, Arc::clone(&shared), shutdown_rx));
        // TLS "optional": plaintext is kept beside it (a migration).
        let tls = match &shared.tls {
            None => "off",
            Some(tls) if tls.accepts_plaintext() => "optional",
            Some(_) => "required",
        };
        let kerberos = if shared.kerberos.is_some() {
            "required"
        } else {
            "off"
        };
        match flavour {
            Flavour::Thrift1 => tracing::info!(
                address = %local_addr,
                tls,
                kerberos,
                "Thrift1 gateway listening (buffered/framed, binary/compact)"
            ),
            Flavour::Thrift2 => tracing::info!(
                address = %local_addr,
                tls,
                kerberos,
                "Thrift2 gateway listening (buffered/framed, binary/compact)"
            ),
        }
        Ok(Server {
            runtime: Some(runtime),
            local_addr,
            shutdown,
            accept_loop: Some(accept_loop),
            shared,
            db,
            flavour,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Scanners currently open.
    pub fn open_scanners(&self) -> usize {
        self.shared.scanners.len()
    }

    /// Connections currently open.
    pub fn open_connections(&self) -> usize {
        self.shared.open_connections.load(Ordering::SeqCst)
    }

    /// Counters of work and waiting, for tests.
    #[doc(hidden)]
    pub fn stats(&self) -> ServerStats {
        let s = &self.shared.stats;
        ServerStats {
            decode_bytes_examined: s.decode_bytes_examined.load(Ordering::SeqCst),
            budget_waits: s.budget_waits.load(Ordering::SeqCst),
            refused_connections: s.refused_connections.load(Ordering::SeqCst),
            idle_closed: s.idle_closed.load(Ordering::SeqCst),
            refused_decodes: s.refused_decodes.load(Ordering::SeqCst),
            in_flight_bytes: (self.shared.budget.size - self.shared.budget.wire.available_permits())
                as u64,
            write_timeouts: s.write_timeouts.load(Ordering::SeqCst),
            first_request_timeouts: s.first_request_timeouts.load(Ordering::SeqCst),
            cancelled_calls: s.cancelled_calls.load(Ordering::SeqCst),
        }
    }

    /// Stops accepting, lets calls in flight finish and answer, closes every
    /// connection and scanner, then closes the database (syncing its log).
    pub fn shutdown(mut self) -> basalt::Result<()> {
        self.stop_serving();
        let result = self.db.close();
        tracing::info!("{} gateway stopped", self.flavour.name());
        result
    }

    /// Like [`Server::shutdown`] but leaves the database open: for a
    /// gateway that shares its database with another, which closes it.
    pub fn stop(mut self) {
        self.stop_serving();
        tracing::info!("{} gateway stopped", self.flavour.name());
    }

    fn stop_serving(&mut self) {
        let _ = self.shutdown.send(true);
        if let (Some(runtime), Some(accept_loop)) = (self.runtime.take(), self.accept_loop.take()) {
            if let Err(e) = runtime.block_on(accept_loop) {
                tracing::warn!(error = %e, "accept loop ended abnormally");
            }
            // Blocking calls have all answered (their connections waited
            // for them); nothing is left that needs time.
            runtime.shutdown_timeout(Duration::from_secs(5));
        }
        self.shared.scanners.clear();
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    // Counted here, not in the task, so that a burst of
                    // connections cannot all pass the cap before any runs.
                    let slot = match shared.slots.acquire(peer.ip()) {
                        Ok(slot) => slot,
                        Err(_) => {
                            refuse(&shared, stream, peer);
                            continue;
                        }
                    };
                    shared.open_connections.fetch_add(1, Ordering::SeqCst);
                    let id = shared.next_connection.fetch_add(1, Ordering::SeqCst);
                    connections.spawn(connection(stream, peer, id, Arc::clone(&shared), shutdown.clone(), slot));
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off rather
                    // than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    tracing::info!(
        connections = connections.len(),
        "no longer accepting; waiting for connections to finish"
    );
    while connections.join_next().await.is_some() {}
}

/// Closes a connection over the cap at once: the client reads an end of
/// stream straight away instead of waiting on a connection nobody serves.
fn refuse(shared: &Shared, stream: TcpStream, peer: SocketAddr) {
    let refused = shared
        .stats
        .refused_connections
        .fetch_add(1, Ordering::SeqCst)
        + 1;
    drop(stream);
    let now = shared.started.elapsed().as_millis() as u64;
    let last = shared.stats.last_refusal_log_ms.load(Ordering::SeqCst);
    if (last == 0 || now.saturating_sub(last) >= 1000)
        && shared
            .stats
            .last_refusal_log_ms
            .compare_exchange(last, now.max(1), Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    {
        tracing::warn!(
            %peer,
            limit = shared.max_connections,
            refused_so_far = refused,
            "connection refused: max_connections connections are open"
        );
    }
}

/// Why a connection stops.
enum Stop {
    /// The peer closed (between messages) or the server shuts down.
    Clean,
    /// No complete request within the idle timeout.
    Idle,
    /// No complete first request within the first-request deadline.
    FirstRequest,
    /// The client read nothing of an answer for the write timeout.
    WriteTimeout,
    /// The TLS handshake failed or did not finish in time.
    Refused(Refused),
    /// The client did not authenticate (Kerberos on); the audit line is
    /// written.
    Unauthenticated(String),
    /// Something to log.
    Error(String),
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    id: u64,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    slot: Slot,
) {
    let _ = stream.set_nodelay(true);
    tracing::debug!(%peer, id, "connection opened");
    // The first request has its own, shorter deadline (a connection that
    // sends nothing gives its slot back in seconds), which a TLS handshake
    // counts against.
    let first_deadline = match (shared.first_request_timeout, shared.idle_timeout) {
        (Some(first), Some(idle)) => Some(first.min(idle)),
        (first, idle) => first.or(idle),
    }
    .map(|t| tokio::time::Instant::now() + t);
    let handshake = first_deadline.map_or(
        Duration::from_millis(basalt::guard::DEFAULT_FIRST_REQUEST_TIMEOUT_MS),
        |deadline| deadline.saturating_duration_since(tokio::time::Instant::now()),
    );
    let ends = Ends {
        peer,
        id,
        shared: &shared,
    };
    match basalt::tls::accept(shared.tls.as_ref(), stream, handshake).await {
        Ok(Accepted::Plain(mut stream)) => {
            serve(&mut stream, &ends, &mut shutdown, first_deadline).await
        }
        Ok(Accepted::Tls(mut stream)) => {
            serve(stream.as_mut(), &ends, &mut shutdown, first_deadline).await
        }
        Err(refused) => ends.report(Stop::Refused(refused)),
    }
    let released = shared.scanners.close_owned_by(id);
    if released > 0 {
        tracing::debug!(%peer, id, released, "released the connection's scanners");
    }
    shared.open_connections.fetch_sub(1, Ordering::SeqCst);
    drop(slot);
}

/// Serves a connection, plaintext or TLS, until it stops; one the server
/// gives up on is closed gently.
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    ends: &Ends<'_>,
    shutdown: &mut watch::Receiver<bool>,
    first_deadline: Option<tokio::time::Instant>,
) {
    let stop = serve_connection(stream, ends, shutdown, first_deadline).await;
    let failed = matches!(stop, Stop::Error(_) | Stop::Unauthenticated(_));
    ends.report(stop);
    if failed {
        close_after_error(stream).await;
    }
}

/// Who a connection was, to count and log how it ended.
struct Ends<'a> {
    peer: SocketAddr,
    id: u64,
    shared: &'a Shared,
}

impl Ends<'_> {
    fn report(&self, stop: Stop) {
        let Ends { peer, id, shared } = *self;
        match stop {
            Stop::Clean => tracing::debug!(%peer, id, "connection closed"),
            Stop::Idle => {
                shared.stats.idle_closed.fetch_add(1, Ordering::SeqCst);
                tracing::info!(%peer, id, "closing connection idle for idle_timeout_ms");
            }
            // Counted, logged quietly: a flood of silent connections must not
            // flood the log either. A TLS handshake that never finishes is
            // such a connection too.
            Stop::FirstRequest | Stop::Refused(Refused::TimedOut) => {
                shared.stats.idle_closed.fetch_add(1, Ordering::SeqCst);
                shared
                    .stats
                    .first_request_timeouts
                    .fetch_add(1, Ordering::SeqCst);
                tracing::debug!(%peer, id, "closing connection: no first request within first_request_timeout_ms");
            }
            Stop::WriteTimeout => {
                shared.stats.write_timeouts.fetch_add(1, Ordering::SeqCst);
                tracing::debug!(%peer, id, "dropping connection: its client read nothing of an answer for write_timeout_ms");
            }
            Stop::Refused(refused) => {
                shared.tls_refusals.refused(refused.reason());
                tracing::debug!(%peer, id, "closing connection: {refused}");
            }
            Stop::Unauthenticated(why) => {
                tracing::debug!(%peer, id, "closing connection: not authenticated: {why}")
            }
            Stop::Error(e) => tracing::warn!(%peer, id, "closing connection: {e}"),
        }
    }
}

/// Ends a connection the server gives up on: the write side first (the
/// peer reads the last reply, then an end of stream), then what the peer
/// still sends is read and dropped for a moment. Closing with unread bytes
/// would send a reset, which can destroy the reply before the peer reads
/// it.
async fn close_after_error<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) {
    let _ = stream.shutdown().await;
    let drain = async {
        let mut scratch = [0u8; 8192];
        let mut left: usize = 1024 * 1024;
        while left > 0 {
            match stream.read(&mut scratch).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
}

/// Where a connection's reads stop waiting: the server shutting down, and
/// the deadline for the next complete request.
struct Waits<'a> {
    shutdown: &'a mut watch::Receiver<bool>,
    idle_deadline: Option<tokio::time::Instant>,
    /// The deadline is the first request's (its expiry is counted apart).
    first: bool,
}

/// Reads at least one more byte into `buf`, unless the server shuts down,
/// the connection has been idle too long, or the peer closes.
async fn fill<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
    wanted: usize,
    waits: &mut Waits<'_>,
) -> Result<bool, Stop> {
    // Never reserve more than the message still needs (bounded by the frame
    // limit by the callers), in slices of at most 64 KiB.
    buf.reserve(wanted.saturating_sub(buf.len()).clamp(1, 64 * 1024));
    if *waits.shutdown.borrow() {
        return Err(Stop::Clean);
    }
    let idle = async {
        match waits.idle_deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        read = stream.read_buf(buf) => match read {
            Ok(0) => Ok(false),
            Ok(_) => Ok(true),
            Err(e) => Err(Stop::Error(format!("read failed: {e}"))),
        },
        _ = waits.shutdown.changed() => Err(Stop::Clean),
        _ = idle => Err(if waits.first { Stop::FirstRequest } else { Stop::Idle }),
    }
}

async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    ends: &Ends<'_>,
    shutdown: &mut watch::Receiver<bool>,
    first_deadline: Option<tokio::time::Instant>,
) -> Stop {
    let Ends { peer, id, shared } = *ends;
    let mut waits = Waits {
        shutdown,
        idle_deadline: first_deadline,
        first: true,
    };
    let mut buf = BytesMut::with_capacity(4096);
    if let Err(stop) = fill_first(stream, &mut buf, &mut waits).await {
        return stop;
    }
    let mut first = [0u8; 5];
    first.copy_from_slice(&buf[..5]);
    match (&shared.kerberos, sasl::is_start(&first)) {
        (Some(kerberos), true) => {
            let (user, layer) =
                match authenticate(stream, &mut buf, kerberos, peer, shared, &mut waits).await {
                    Ok(authenticated) => authenticated,
                    Err(stop) => return stop,
                };
            let service = shared
                .service
                .acting_as_user(&user, Some(peer.ip().to_string()));
            let mut secured = SaslStream::new(&mut *stream, layer, buf.split(), shared.max_frame);
            serve_messages(
                &mut secured,
                BytesMut::new(),
                id,
                shared,
                &service,
                &mut waits,
            )
            .await
        }
        (Some(_), false) => {
            let why = format!(
                "the client did not start SASL (first bytes {first:02x?}); only Kerberos (SASL GSSAPI) clients are served"
            );
            tracing::info!(target: basalt::access::AUDIT_TARGET, "Auth failed for {}: {}: {why}", peer.ip(), shared.name);
            Stop::Unauthenticated(why)
        }
        (None, true) => {
            let why =
                "SASL is not enabled on this server: its [security] authentication is not kerberos";
            let _ = sasl::send(stream, &sasl::message(sasl::BAD, why.as_bytes())).await;
            Stop::Error(format!("a SASL client: {why}"))
        }
        (None, false) => {
            let service = Arc::clone(&shared.service);
            serve_messages(stream, buf, id, shared, &service, &mut waits).await
        }
    }
}

/// Reads the connection's first five bytes (what tells its wire, or a SASL
/// exchange, apart).
async fn fill_first<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
    waits: &mut Waits<'_>,
) -> Result<(), Stop> {
    while buf.len() < 5 {
        match fill(stream, buf, 5, waits).await {
            Ok(true) => {}
            Ok(false) if buf.is_empty() => return Err(Stop::Clean),
            Ok(false) => return Err(Stop::Error("closed before a whole message header".into())),
            Err(stop) => return Err(stop),
        }
    }
    Ok(())
}

/// Reads one SASL negotiation message: its status and payload.
async fn read_negotiation<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
    waits: &mut Waits<'_>,
) -> Result<(u8, BytesMut), Stop> {
    while buf.len() < 5 {
        if !fill(stream, buf, 5, waits).await? {
            return Err(Stop::Error("closed during the SASL exchange".into()));
        }
    }
    let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    if len > sasl::MAX_NEGOTIATION_BYTES {
        return Err(Stop::Error(format!(
            "a SASL negotiation message of {len} bytes is over the {}-byte limit",
            sasl::MAX_NEGOTIATION_BYTES
        )));
    }
    while buf.len() < 5 + len {
        if !fill(stream, buf, 5 + len, waits).await? {
            return Err(Stop::Error("closed during the SASL exchange".into()));
        }
    }
    let status = buf[0];
    buf.advance(5);
    Ok((status, buf.split_to(len)))
}

/// Runs the SASL GSSAPI exchange (the connection's first bytes, a `START`,
/// are in `buf`): the user the client authenticated as, and what protects
/// its bytes from now on. A refusal has been answered (`BAD`, `ERROR`)
/// and written to the audit log.
async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
    kerberos: &ThriftKerberos,
    peer: SocketAddr,
    shared: &Shared,
    waits: &mut Waits<'_>,
) -> Result<(String, basalt_kerberos::SecurityLayer), Stop> {
    let refused = |why: String| {
        tracing::info!(target: basalt::access::AUDIT_TARGET, "Auth failed for {}: {}: {why}", peer.ip(), shared.name);
        Stop::Unauthenticated(why)
    };
    let (_, mechanism) = read_negotiation(stream, buf, waits).await?;
    if &mechanism[..] != sasl::GSSAPI {
        let why = format!(
            "Unsupported mechanism type {}",
            String::from_utf8_lossy(&mechanism)
        );
        let _ = sasl::send(stream, &sasl::message(sasl::BAD, why.as_bytes())).await;
        return Err(refused(why));
    }
    let mut server = kerberos
        .exchange()
        .map_err(|e| Stop::Error(e.to_string()))?;
    loop {
        let (status, payload) = read_negotiation(stream, buf, waits).await?;
        // Accepting reads the keytab and the replay cache: off the
        // connection's worker.
        let (returned, answer) = tokio::task::spawn_blocking(move || {
            let answer = sasl::step(&mut server, status, &payload);
            (server, answer)
        })
        .await
        .map_err(|e| Stop::Error(format!("the SASL step stopped: {e}")))?;
        server = returned;
        match answer {
            sasl::Answer::Continue(message) => {
                sasl::send(stream, &message).await.map_err(write_failed)?;
            }
            sasl::Answer::Done(message, negotiated) => {
                sasl::send(stream, &message).await.map_err(write_failed)?;
                let user = sasl::thrift_user(&negotiated.principal).to_string();
                tracing::debug!(%peer, principal = %negotiated.principal, %user, protection = negotiated.layer.qop().name(), "{}: Kerberos client authenticated", shared.name);
                return Ok((user, negotiated.layer));
            }
            sasl::Answer::Refuse(message, why) => {
                let _ = sasl::send(stream, &message).await;
                return Err(refused(why));
            }
        }
    }
}

/// Serves the Thrift messages of a connection through `service` (the
/// server's, or an authenticated caller's), `buf` holding bytes already
/// read.
async fn serve_messages<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    mut buf: BytesMut,
    id: u64,
    shared: &Shared,
    service: &Arc<dyn Dispatch>,
    waits: &mut Waits<'_>,
) -> Stop {
    // Every call of the connection shares its cancel flag: a client that
    // leaves stops the work of the call it left behind.
    let connection_control = CallControl::new();
    if let Err(stop) = fill_first(stream, &mut buf, waits).await {
        return stop;
    }
    let mut first = [0u8; 5];
    first.copy_from_slice(&buf[..5]);
    let Some(wire) = detect_wire(&first) else {
        return Stop::Error(format!(
            "first bytes {first:02x?} are not a Thrift message (binary, compact, framed or not)"
        ));
    };
    tracing::debug!(id, ?wire, "transport detected");
    loop {
        // Idle time runs from the last answer to the next complete request.
        if !waits.first {
            waits.idle_deadline = shared.idle_timeout.map(|t| tokio::time::Instant::now() + t);
        }
        let mut held = Held::default();
        let message = match read_message(stream, &mut buf, wire, shared, &mut held, waits).await {
            Ok(Some(m)) => m,
            Ok(None) => return Stop::Clean,
            Err(stop) => return stop,
        };
        // A large message leaves a large buffer behind; an idle connection
        // should not keep it.
        if buf.capacity() > 1024 * 1024 {
            buf = BytesMut::from(&buf[..]);
        }
        waits.first = false;
        match message {
            Incoming::Call { header, body } => {
                let oneway = header.kind == MessageType::Oneway;
                let (outcome, room) =
                    if matches!(header.kind, MessageType::Call | MessageType::Oneway) {
                        let control = connection_control.with_deadline(shared.scan_call_timeout);
                        let call = run_call(service, id, &header.name, body, control);
                        match watch_peer(stream, &mut buf, call, &connection_control).await {
                            Some(answered) => answered,
                            None => {
                                shared.stats.cancelled_calls.fetch_add(1, Ordering::SeqCst);
                                return Stop::Clean;
                            }
                        }
                    } else {
                        (
                            Outcome::Application(
                                app_error::INVALID_MESSAGE_TYPE,
                                format!("message type {:?} cannot be a request", header.kind),
                            ),
                            AnswerBytes::none(),
                        )
                    };
                // The request's room in the budget is free once it is
                // answered (its values are gone into the call).
                drop(held);
                if oneway {
                    continue;
                }
                if let Err(e) =
                    reply(stream, wire, &header, outcome, room, shared.write_timeout).await
                {
                    return write_failed(e);
                }
            }
            Incoming::Malformed {
                header,
                error,
                resync,
            } => {
                drop(held);
                tracing::warn!(id, "malformed message: {error}");
                if let Some(header) = &header {
                    let outcome = Outcome::Application(app_error::PROTOCOL_ERROR, error.clone());
                    let room = AnswerBytes::none();
                    if let Err(e) =
                        reply(stream, wire, header, outcome, room, shared.write_timeout).await
                    {
                        return write_failed(e);
                    }
                }
                // Without a frame boundary there is no telling where the
                // next message starts; without a header, nothing to answer
                // and the peer would wait for a reply forever.
                if !resync || header.is_none() {
                    return Stop::Error(error);
                }
            }
        }
    }
}

/// Bytes a client may send ahead (its next requests) while a call runs:
/// kept for later, and no more read until the call answers.
const MAX_READ_AHEAD: usize = 64 * 1024;

/// Awaits `call` while watching the connection: a client that closes it
/// (or breaks it) cancels the call's work, which stops at its next row;
/// `None` then, as nobody is left to answer. Bytes the client sends ahead
/// are kept in `buf` for the next request.
async fn watch_peer<S: AsyncRead + Unpin, T>(
    stream: &mut S,
    buf: &mut BytesMut,
    call: impl std::future::Future<Output = T>,
    control: &CallControl,
) -> Option<T> {
    tokio::pin!(call);
    loop {
        if buf.len() < MAX_READ_AHEAD {
            buf.reserve(4096);
        }
        tokio::select! {
            outcome = &mut call => return Some(outcome),
            read = stream.read_buf(buf), if buf.len() < MAX_READ_AHEAD => match read {
                Ok(0) | Err(_) => {
                    control.cancel();
                    // The work stops at its next row; its answer is dropped.
                    let _ = call.await;
                    return None;
                }
                Ok(_) => {}
            },
        }
    }
}

/// The stop for a failed write: a client that read nothing for the write
/// timeout is told apart from a broken connection.
fn write_failed(e: io::Error) -> Stop {
    if e.kind() == io::ErrorKind::TimedOut {
        Stop::WriteTimeout
    } else {
        Stop::Error(format!("write failed: {e}"))
    }
}

enum Incoming {
    Call {
        header: MessageHeader,
        body: Value,
    },
    /// A message that cannot be served. `resync`: the next message's start
    /// is known (framed transport), so the connection can go on.
    Malformed {
        header: Option<MessageHeader>,
        error: String,
        resync: bool,
    },
}

/// Reads the next message; `None` when the peer closed between messages.
/// What the message holds of the in-flight budget is added to `held`.
async fn read_message<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
    wire: Wire,
    shared: &Shared,
    held: &mut Held,
    waits: &mut Waits<'_>,
) -> Result<Option<Incoming>, Stop> {
    let max_frame = shared.max_frame;
    // Wait for the first byte of the message (or the peer closing).
    while buf.is_empty() {
        match fill(stream, buf, 1, waits).await? {
            true => {}
            false => return Ok(None),
        }
    }
    if wire.framed {
        while buf.len() < 4 {
            if !fill(stream, buf, 4, waits).await? {
                return Err(Stop::Error("closed inside a frame header".into()));
            }
        }
        let declared = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        let Ok(len) = usize::try_from(declared) else {
            return Err(Stop::Error(format!("negative frame length {declared}")));
        };
        if len > max_frame {
            // Answered when the message's header came with the length (a
            // reply the client cannot match to its call would not help it),
            // then closed: the body is never read.
            return Ok(Some(Incoming::Malformed {
                header: decode_header(wire.protocol, &buf[4..]).ok(),
                error: format!(
                    "frame of {len} bytes is over the {max_frame}-byte limit (max_frame_bytes)"
                ),
                resync: false,
            }));
        }
        // Room for the bytes before they are read.
        if shared
            .reserve(&shared.budget.wire, 4 + len, held, waits.shutdown)
            .await
            .is_none()
        {
            return Err(Stop::Clean);
        }
        while buf.len() < 4 + len {
            if !fill(stream, buf, 4 + len, waits).await? {
                return Err(Stop::Error(format!(
                    "closed inside a frame ({} of {len} bytes)",
                    buf.len() - 4
                )));
            }
        }
        let frame = buf.split_to(4 + len);
        let frame = &frame[4..];
        let mut scanner = MessageScanner::new(wire.protocol);
        let scanned = scanner.advance(frame);
        shared
            .stats
            .decode_bytes_examined
            .fetch_add(scanner.examined(), Ordering::SeqCst);
        let header = scanner
            .header()
            .cloned()
            .or_else(|| decode_header(wire.protocol, frame).ok());
        let incoming = match scanned {
            Ok(Scanned::Complete(used)) => {
                decode(&frame[..used], wire, &scanner, shared, held, waits, true).await?
            }
            Ok(Scanned::Incomplete { .. }) => Incoming::Malformed {
                header,
                error: format!("truncated message: the {len}-byte frame ends inside it"),
                resync: true,
            },
            Err(e) => Incoming::Malformed {
                header,
                error: e.to_string(),
                resync: true,
            },
        };
        return Ok(Some(incoming));
    }
    // Unframed: the scanner walks the bytes as they come, each once, and
    // says where the message ends; then it is decoded once.
    let mut scanner = MessageScanner::new(wire.protocol);
    let mut counted = 0;
    loop {
        let scanned = scanner.advance(&buf[..]);
        shared
            .stats
            .decode_bytes_examined
            .fetch_add(scanner.examined() - counted, Ordering::SeqCst);
        counted = scanner.examined();
        match scanned {
            Ok(Scanned::Complete(used)) => {
                // The bytes are read already; they wait for their room
                // before decoding all the same, holding nothing else.
                if shared
                    .reserve(&shared.budget.wire, used, held, waits.shutdown)
                    .await
                    .is_none()
                {
                    return Err(Stop::Clean);
                }
                let message = buf.split_to(used);
                let incoming = decode(&message, wire, &scanner, shared, held, waits, false).await?;
                return Ok(Some(incoming));
            }
            Err(e) => {
                return Ok(Some(Incoming::Malformed {
                    header: scanner.header().cloned(),
                    error: e.to_string(),
                    resync: false,
                }));
            }
            Ok(Scanned::Incomplete { needed }) => {
                if needed > max_frame {
                    let error = format!(
                        "message of at least {needed} bytes is over the {max_frame}-byte limit \
                         (max_frame_bytes)"
                    );
                    return Ok(Some(Incoming::Malformed {
                        header: scanner.header().cloned(),
                        error,
                        resync: false,
                    }));
                }
                while buf.len() < needed {
                    if !fill(stream, buf, needed, waits).await? {
                        return Err(Stop::Error(format!(
                            "closed inside a message ({} bytes of at least {needed})",
                            buf.len()
                        )));
                    }
                }
            }
        }
    }
}

/// Decodes a whole message the scanner walked, once its decoded form (which
/// the scanner measured) is known to be allowed and has room in the budget.
async fn decode(
    message: &[u8],
    wire: Wire,
    scanner: &MessageScanner,
    shared: &Shared,
    held: &mut Held,
    waits: &mut Waits<'_>,
    resync: bool,
) -> Result<Incoming, Stop> {
    let cost = scanner.cost();
    // A message may take MAX_DECODED_PER_BYTE times its size decoded, and
    // no more than the whole budget, unless its decoded form is no larger
    // than the message itself (its values are its strings): such a
    // message larger than the budget still passes, alone.
    let allowed = message
        .len()
        .saturating_mul(MAX_DECODED_PER_BYTE)
        .saturating_add(DECODED_FLOOR)
        .min(
            shared
                .budget
                .size
                .max(message.len().saturating_add(DECODED_FLOOR)),
        );
    if cost > allowed {
        shared.stats.refused_decodes.fetch_add(1, Ordering::SeqCst);
        return Ok(Incoming::Malformed {
            header: scanner.header().cloned(),
            error: format!(
                "message refused: its {} bytes would take {cost} bytes decoded, over the \
                 limit of {allowed} ({MAX_DECODED_PER_BYTE} times its size, and at most \
                 max_in_flight_bytes); send fewer, larger elements or split the request",
                message.len()
            ),
            resync,
        });
    }
    if shared
        .reserve(&shared.budget.decoded, cost, held, waits.shutdown)
        .await
        .is_none()
    {
        return Err(Stop::Clean);
    }
    let decoded = decode_message_within(wire.protocol, message, allowed);
    shared
        .stats
        .decode_bytes_examined
        .fetch_add(message.len() as u64, Ordering::SeqCst);
    Ok(match decoded {
        Ok(d) => Incoming::Call {
            header: d.header,
            body: d.body,
        },
        Err((header, e)) => Incoming::Malformed {
            header: header.or_else(|| scanner.header().cloned()),
            error: match e {
                DecodeError::Incomplete { .. } => "truncated message".to_string(),
                DecodeError::Invalid(m) => m,
            },
            resync,
        },
    })
}

/// Answers smaller than this are not counted in the answer budget: a
/// thousand connections' worth of them is a few megabytes.
const COUNTED_ANSWER_BYTES: usize = 16 * 1024;

async fn reply<S: AsyncWrite + Unpin>(
    stream: &mut S,
    wire: Wire,
    request: &MessageHeader,
    outcome: Outcome,
    mut room: AnswerBytes,
    write_timeout: Option<Duration>,
) -> io::Result<()> {
    let (kind, body) = match outcome {
        Outcome::Reply(body) => (MessageType::Reply, body),
        Outcome::Application(code, message) => (
            MessageType::Exception,
            TApplicationException {
                message: Some(message),
                kind: Some(code),
            }
            .to_value(),
        ),
    };
    let header = MessageHeader {
        name: request.name.clone(),
        kind,
        seqid: request.seqid,
    };
    let mut out = BytesMut::with_capacity(256);
    if wire.framed {
        out.put_u32(0);
    }
    encode_message(wire.protocol, &header, &body, &mut out);
    if wire.framed {
        let len = u32::try_from(out.len() - 4).unwrap_or(u32::MAX);
        out[..4].copy_from_slice(&len.to_be_bytes());
    }
    // The encoded answer holds room in the answer budget until it is
    // written, or its client is dropped for not reading it; what building
    // it took is given back now that only the bytes remain.
    if out.len() >= COUNTED_ANSWER_BYTES {
        if room.held() == 0 {
            room = basalt::guard::answer_budget().force(out.len());
        } else {
            room.resize(out.len());
        }
    } else {
        room = AnswerBytes::none();
    }
    let _room = room;
    let mut conn = WriteTimeout::new(&mut *stream, write_timeout);
    conn.write_all(&out).await?;
    conn.flush().await
}
