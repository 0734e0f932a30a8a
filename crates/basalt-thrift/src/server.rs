//! The Thrift1 server: one port for buffered and framed transports and the
//! binary and compact protocols, on tokio.
//!
//! Each connection is a task on a small pool of async workers; idle
//! connections cost a task and a buffer, no thread. Engine calls block (the
//! write-ahead log's group commit waits for the disk), so each call runs on
//! tokio's blocking pool, capped at `max_blocking_threads`: calls beyond the
//! cap queue instead of multiplying threads.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, BytesMut};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use basalt::Database;

use crate::handler::{Advertised, Outcome, Service};
use crate::protocol::{
    decode_header, decode_message, detect_wire, encode_message, DecodeError, MessageHeader,
    MessageType, Value, Wire,
};
use crate::scanners::Scanners;
use crate::types::{app_error, TApplicationException, Thrift};

/// Settings of the Thrift server (the `[thrift]` table of the config file).
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
        }
    }
}

/// State shared by the accept loop and every connection.
#[derive(Debug)]
struct Shared {
    service: Arc<Service>,
    scanners: Arc<Scanners>,
    max_frame: usize,
    next_connection: AtomicU64,
    open_connections: AtomicUsize,
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
}

/// The server's port, bound but not yet serving: [`Server::bind`] then
/// [`Bound::serve`] lets a caller find a taken port before it opens (and
/// locks, or creates) a data directory.
#[derive(Debug)]
pub struct Bound {
    runtime: tokio::runtime::Runtime,
    listener: TcpListener,
    config: ServerConfig,
}

impl Bound {
    /// The address the port is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Starts serving `db` on the bound port; returns once the server
    /// accepts connections.
    pub fn serve(self, db: Database) -> io::Result<Server> {
        Server::serve_bound(self, db)
    }
}

impl Server {
    /// Starts serving `db` as configured: binds the port and returns once
    /// the server accepts connections.
    pub fn start(db: Database, config: &ServerConfig) -> io::Result<Server> {
        Server::bind(config)?.serve(db)
    }

    /// Binds the configured port (and builds the runtime that will serve
    /// it) without serving anything yet.
    pub fn bind(config: &ServerConfig) -> io::Result<Bound> {
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
        })
    }

    fn serve_bound(bound: Bound, db: Database) -> io::Result<Server> {
        let Bound {
            runtime,
            listener,
            config,
        } = bound;
        let local_addr = listener.local_addr()?;
        let lease = Duration::from_millis(config.scanner_lease_ms.max(1));
        let scanners = Arc::new(Scanners::new(
            lease,
            config.max_scanners_per_connection.max(1),
        ));
        let advertised = Advertised {
            host: if local_addr.ip().is_unspecified() {
                "localhost".to_string()
            } else {
                local_addr.ip().to_string()
            },
            port: local_addr.port(),
        };
        let max_frame = config.max_frame_bytes.max(64);
        let service = Arc::new(Service::new(
            db.clone(),
            Arc::clone(&scanners),
            advertised,
            max_frame / 2,
        ));
        let shared = Arc::new(Shared {
            service,
            scanners: Arc::clone(&scanners),
            max_frame,
            next_connection: AtomicU64::new(1),
            open_connections: AtomicUsize::new(0),
        });
        let (shutdown, shutdown_rx) = watch::channel(false);
        runtime.spawn(expire_scanners(
            Arc::clone(&scanners),
            lease,
            shutdown_rx.clone(),
        ));
        let accept_loop = runtime.spawn(accept_loop(listener, Arc::clone(&shared), shutdown_rx));
        tracing::info!(address = %local_addr, "Thrift1 gateway listening (buffered/framed, binary/compact)");
        Ok(Server {
            runtime: Some(runtime),
            local_addr,
            shutdown,
            accept_loop: Some(accept_loop),
            shared,
            db,
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

    /// Blocks until the process receives SIGINT or SIGTERM.
    pub fn wait_for_signal(&self) -> io::Result<()> {
        let Some(runtime) = self.runtime.as_ref() else {
            return Ok(());
        };
        runtime.block_on(async {
            use tokio::signal::unix::{signal, SignalKind};
            let mut term = signal(SignalKind::terminate())?;
            let mut int = signal(SignalKind::interrupt())?;
            tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
                _ = int.recv() => tracing::info!("SIGINT received, shutting down"),
            }
            Ok(())
        })
    }

    /// Stops accepting, lets calls in flight finish and answer, closes every
    /// connection and scanner, then closes the database (syncing its log).
    pub fn shutdown(mut self) -> basalt::Result<()> {
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
        let result = self.db.close();
        tracing::info!("Thrift1 gateway stopped");
        result
    }
}

async fn expire_scanners(
    scanners: Arc<Scanners>,
    lease: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let period = (lease / 4).clamp(Duration::from_millis(5), Duration::from_secs(5));
    let mut ticker = tokio::time::interval(period);
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                let expired = scanners.expire(Instant::now());
                if expired > 0 {
                    tracing::info!(expired, "scanners expired after their lease");
                }
            }
            _ = shutdown.changed() => return,
        }
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
                    let id = shared.next_connection.fetch_add(1, Ordering::SeqCst);
                    connections.spawn(connection(stream, peer, id, Arc::clone(&shared), shutdown.clone()));
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

/// Why a connection stops.
enum Stop {
    /// The peer closed (between messages) or the server shuts down.
    Clean,
    /// Something to log.
    Error(String),
}

async fn connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    id: u64,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    shared.open_connections.fetch_add(1, Ordering::SeqCst);
    let _ = stream.set_nodelay(true);
    tracing::debug!(%peer, id, "connection opened");
    let result = serve_connection(&mut stream, id, &shared, &mut shutdown).await;
    match result {
        Stop::Clean => tracing::debug!(%peer, id, "connection closed"),
        Stop::Error(e) => tracing::warn!(%peer, id, "closing connection: {e}"),
    }
    let released = shared.scanners.remove_owned_by(id);
    if released > 0 {
        tracing::debug!(%peer, id, released, "released the connection's scanners");
    }
    shared.open_connections.fetch_sub(1, Ordering::SeqCst);
}

/// Reads at least one more byte into `buf`, unless the server shuts down or
/// the peer closes.
async fn fill(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
    wanted: usize,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<bool, Stop> {
    // Never reserve more than the message still needs (bounded by the frame
    // limit by the callers), in slices of at most 64 KiB.
    buf.reserve(wanted.saturating_sub(buf.len()).clamp(1, 64 * 1024));
    if *shutdown.borrow() {
        return Err(Stop::Clean);
    }
    tokio::select! {
        read = stream.read_buf(buf) => match read {
            Ok(0) => Ok(false),
            Ok(_) => Ok(true),
            Err(e) => Err(Stop::Error(format!("read failed: {e}"))),
        },
        _ = shutdown.changed() => Err(Stop::Clean),
    }
}

async fn serve_connection(
    stream: &mut TcpStream,
    id: u64,
    shared: &Shared,
    shutdown: &mut watch::Receiver<bool>,
) -> Stop {
    let mut buf = BytesMut::with_capacity(4096);
    while buf.len() < 5 {
        match fill(stream, &mut buf, 5, shutdown).await {
            Ok(true) => {}
            Ok(false) if buf.is_empty() => return Stop::Clean,
            Ok(false) => return Stop::Error("closed before a whole message header".into()),
            Err(stop) => return stop,
        }
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
        let message = match read_message(stream, &mut buf, wire, shared.max_frame, shutdown).await {
            Ok(Some(m)) => m,
            Ok(None) => return Stop::Clean,
            Err(stop) => return stop,
        };
        match message {
            Incoming::Call { header, body } => {
                let oneway = header.kind == MessageType::Oneway;
                let outcome = if matches!(header.kind, MessageType::Call | MessageType::Oneway) {
                    let service = Arc::clone(&shared.service);
                    let name = header.name.clone();
                    match tokio::task::spawn_blocking(move || service.call(id, &name, body)).await {
                        Ok(outcome) => outcome,
                        Err(e) => Outcome::Application(
                            app_error::INTERNAL_ERROR,
                            format!("Internal error processing {}: {e}", header.name),
                        ),
                    }
                } else {
                    Outcome::Application(
                        app_error::INVALID_MESSAGE_TYPE,
                        format!("message type {:?} cannot be a request", header.kind),
                    )
                };
                if oneway {
                    continue;
                }
                if let Err(e) = reply(stream, wire, &header, outcome).await {
                    return Stop::Error(format!("write failed: {e}"));
                }
            }
            Incoming::Malformed {
                header,
                error,
                resync,
            } => {
                tracing::warn!(id, "malformed message: {error}");
                if let Some(header) = header {
                    let outcome = Outcome::Application(app_error::PROTOCOL_ERROR, error.clone());
                    if let Err(e) = reply(stream, wire, &header, outcome).await {
                        return Stop::Error(format!("write failed: {e}"));
                    }
                }
                if !resync {
                    // Without a frame boundary there is no telling where the
                    // next message starts.
                    return Stop::Error(error);
                }
            }
        }
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
async fn read_message(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
    wire: Wire,
    max_frame: usize,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Option<Incoming>, Stop> {
    // Wait for the first byte of the message (or the peer closing).
    while buf.is_empty() {
        match fill(stream, buf, 1, shutdown).await? {
            true => {}
            false => return Ok(None),
        }
    }
    if wire.framed {
        while buf.len() < 4 {
            if !fill(stream, buf, 4, shutdown).await? {
                return Err(Stop::Error("closed inside a frame header".into()));
            }
        }
        let declared = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        let Ok(len) = usize::try_from(declared) else {
            return Err(Stop::Error(format!("negative frame length {declared}")));
        };
        if len > max_frame {
            return Err(Stop::Error(format!(
                "frame of {len} bytes is over the {max_frame}-byte limit"
            )));
        }
        while buf.len() < 4 + len {
            if !fill(stream, buf, 4 + len, shutdown).await? {
                return Err(Stop::Error(format!(
                    "closed inside a frame ({} of {len} bytes)",
                    buf.len() - 4
                )));
            }
        }
        let frame = &buf[4..4 + len];
        let incoming = match decode_message(wire.protocol, frame) {
            Ok((header, body, _)) => Incoming::Call { header, body },
            Err((header, e)) => Incoming::Malformed {
                header: header.or_else(|| decode_header(wire.protocol, frame).ok()),
                error: match e {
                    DecodeError::Incomplete { .. } => {
                        format!("truncated message: the {len}-byte frame ends inside it")
                    }
                    DecodeError::Invalid(m) => m,
                },
                resync: true,
            },
        };
        buf.advance(4 + len);
        return Ok(Some(incoming));
    }
    loop {
        match decode_message(wire.protocol, &buf[..]) {
            Ok((header, body, used)) => {
                buf.advance(used);
                return Ok(Some(Incoming::Call { header, body }));
            }
            Err((header, DecodeError::Invalid(error))) => {
                return Ok(Some(Incoming::Malformed {
                    header,
                    error,
                    resync: false,
                }));
            }
            Err((header, DecodeError::Incomplete { needed })) => {
                if needed > max_frame {
                    let error = format!(
                        "message of at least {needed} bytes is over the {max_frame}-byte limit"
                    );
                    return Ok(Some(Incoming::Malformed {
                        header,
                        error,
                        resync: false,
                    }));
                }
                while buf.len() < needed {
                    if !fill(stream, buf, needed, shutdown).await? {
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

async fn reply(
    stream: &mut TcpStream,
    wire: Wire,
    request: &MessageHeader,
    outcome: Outcome,
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
    stream.write_all(&out).await?;
    stream.flush().await
}
