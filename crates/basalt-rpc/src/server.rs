//! The native RPC server: HBase's master port (16000) and region server
//! port (16020) in one process, as HBase's standalone mode runs them. Either
//! port serves every service; the connection header names the one its
//! calls are for.
//!
//! 1. Accept (beyond `max_connections` a connection is closed at once).
//! 2. Read the 6-byte preamble and the connection header, each within the
//!    idle timeout; refuse an unknown service or an unsupported codec with
//!    an exception frame, then close.
//! 3. Per frame: wait for room for its bytes in the in-flight budget,
//!    read it, split it (`frame`), decode its cell block (`cellblock`).
//! 4. Run the method on the blocking pool (engine calls block on the
//!    write-ahead log); at most `max_calls_per_connection` at once per
//!    connection. Answers go back in completion order, each tagged with its
//!    call id (HBase's clients match them by id).
//! 5. A connection that closes releases its scanners.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use basalt::guard::{AddressSlots, AnswerBytes, RefusalLog, SlotLimits, WriteTimeout};
use basalt::interrupt::CallControl;
use basalt::Database;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Semaphore};

use crate::authentication::{self, Authenticated, KerberosServer, Negotiated};
use crate::call::Call;
use crate::cellblock;
use crate::context::{Identity, RpcContext, RpcLimits};
use crate::error::{RpcError, BAD_REQUEST, UNKNOWN_SERVICE};
use crate::frame::{self, NO_CALL};
use crate::proto::rpc::ConnectionHeader;
use crate::services;

/// `[rpc]` of the configuration file: HBase's native RPC gateway.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RpcConfig {
    /// Serve native RPC (also turned on by `--zookeeper` and
    /// `--native-rpc`).
    pub enabled: bool,
    /// Address to listen on.
    pub bind: String,
    /// The master's port (HBase's `hbase.master.port`, 16000; 0 picks a
    /// free one).
    pub master_port: u16,
    /// The region server's port (HBase's `hbase.regionserver.port`, 16020;
    /// 0 picks a free one).
    pub region_server_port: u16,
    /// The host name announced to clients (ZooKeeper, `hbase:meta`); by
    /// default the bind address, or the machine's name when binding every
    /// interface.
    pub hostname: Option<String>,
    /// Async worker threads.
    pub worker_threads: usize,
    /// Engine calls running at once, over all connections.
    pub max_blocking_threads: usize,
    /// Bytes of request frames held at once, over all connections: a frame
    /// waits for room before its body is read.
    pub max_in_flight_bytes: usize,
    /// Largest request frame.
    pub max_frame_bytes: usize,
    /// Open connections at most.
    pub max_connections: usize,
    /// A connection silent this long is closed (0: never).
    pub idle_timeout_ms: u64,
    /// Open scanners at most.
    pub max_scanners: usize,
    /// Scanner lease.
    pub scanner_lease_ms: u64,
    /// Rows per scan answer when the client asks for none.
    pub default_scan_rows: usize,
    /// Bytes per scan answer when the client sets no limit.
    pub max_scan_answer_bytes: usize,
    /// Bytes per scan answer at most, whatever the client asks (HBase's
    /// `max_result_size`, lowered to this). Default 4 MiB.
    pub max_answer_bytes: usize,
    /// A connection whose answer makes no progress this long is dropped,
    /// with its calls, scanners and answers (0: never). Default 30 000.
    pub write_timeout_ms: u64,
    /// A scan call reads at most this long before it answers what it has,
    /// or a heartbeat (0: never). Default 60 000.
    pub scan_call_timeout_ms: u64,
    /// Calls answered at once per connection.
    pub max_calls_per_connection: usize,
    /// A new connection must send its preamble and connection header
    /// within this long (0: the idle timeout), so silent connections do not
    /// hold slots for the whole idle timeout.
    pub handshake_timeout_ms: u64,
    /// Connections one peer address may hold (0: no limit of its own; the
    /// reserved slots still keep room for other addresses).
    pub max_connections_per_address: usize,
    /// Slots of `max_connections` only addresses holding no connection may
    /// take (default a tenth), so one address cannot lock others out.
    pub reserved_connections: Option<usize>,
    /// TLS on both ports (`[rpc.tls]`, docs/security.md): HBase 2.6's
    /// clients connect with `hbase.client.netty.tls.enabled`.
    pub tls: Option<basalt::tls::TlsSettings>,
}

impl Default for RpcConfig {
    fn default() -> Self {
        let limits = RpcLimits::default();
        RpcConfig {
            enabled: false,
            bind: "127.0.0.1".to_string(),
            master_port: 16000,
            region_server_port: 16020,
            hostname: None,
            worker_threads: 2,
            max_blocking_threads: 32,
            max_in_flight_bytes: 256 << 20,
            max_frame_bytes: limits.max_frame_bytes,
            max_connections: limits.max_connections,
            idle_timeout_ms: limits.idle_timeout_ms,
            max_scanners: limits.max_scanners,
            scanner_lease_ms: limits.scanner_lease_ms,
            default_scan_rows: limits.default_scan_rows,
            max_scan_answer_bytes: limits.max_scan_answer_bytes,
            max_calls_per_connection: limits.max_calls_per_connection,
            max_answer_bytes: limits.max_answer_bytes,
            write_timeout_ms: limits.write_timeout_ms,
            scan_call_timeout_ms: limits.scan_call_timeout_ms,
            handshake_timeout_ms: basalt::guard::DEFAULT_FIRST_REQUEST_TIMEOUT_MS,
            max_connections_per_address: 0,
            reserved_connections: None,
            tls: None,
        }
    }
}

impl RpcConfig {
    fn limits(&self) -> RpcLimits {
        RpcLimits {
            max_frame_bytes: self.max_frame_bytes.max(1024),
            max_connections: self.max_connections.max(1),
            idle_timeout_ms: self.idle_timeout_ms,
            max_scanners: self.max_scanners.max(1),
            scanner_lease_ms: self.scanner_lease_ms.max(1),
            default_scan_rows: self.default_scan_rows.max(1),
            max_scan_answer_bytes: self.max_scan_answer_bytes.max(1024),
            max_calls_per_connection: self.max_calls_per_connection.max(1),
            max_answer_bytes: self.max_answer_bytes.max(1024),
            scan_call_timeout_ms: self.scan_call_timeout_ms,
            write_timeout_ms: self.write_timeout_ms,
        }
    }
}

/// The two ports, bound but not serving yet (so a taken port fails before
/// the data directory is opened).
#[derive(Debug)]
pub struct RpcBound {
    runtime: tokio::runtime::Runtime,
    master: TcpListener,
    region_server: TcpListener,
    config: RpcConfig,
    /// The start code to announce; `None`: the start time in ms.
    start_code: Option<u64>,
}

impl RpcBound {
    /// The master port's address.
    pub fn master_addr(&self) -> io::Result<SocketAddr> {
        self.master.local_addr()
    }

    /// The region server port's address.
    pub fn region_server_addr(&self) -> io::Result<SocketAddr> {
        self.region_server.local_addr()
    }

    /// The runtime the server runs on (ZooKeeper registration runs there
    /// too).
    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }

    /// Announces `code` as the start code (HBase's third part of a server
    /// name) instead of the start time: a cluster region server announces
    /// its log id, so its name says which log to fence if it dies.
    pub fn start_code(mut self, code: u64) -> RpcBound {
        self.start_code = Some(code);
        self
    }

    /// The host name announced to clients: the configured `hostname`, or
    /// the bind address (this machine's name when bound to all addresses).
    pub fn announced_host(&self) -> io::Result<String> {
        let master_addr = self.master.local_addr()?;
        Ok(match &self.config.hostname {
            Some(h) => h.clone(),
            None if master_addr.ip().is_unspecified() => local_hostname(),
            None => master_addr.ip().to_string(),
        })
    }

    /// Starts serving `db` with `cluster_id`; returns once both ports
    /// accept calls.
    pub fn serve(self, db: Database, cluster_id: String) -> io::Result<RpcServer> {
        let host = self.announced_host()?;
        let RpcBound {
            runtime,
            master,
            region_server,
            config,
            start_code,
        } = self;
        let master_addr = master.local_addr()?;
        let rs_addr = region_server.local_addr()?;
        let identity = Identity {
            host,
            master_port: master_addr.port(),
            region_server_port: rs_addr.port(),
            start_code: start_code.unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(1, |d| d.as_millis() as u64)
            }),
            cluster_id,
        };
        let limits = config.limits();
        let tls = config
            .tls
            .clone()
            .map(basalt::tls::TlsServer::load)
            .transpose()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        // `_HOST` in the principal is the name clients reach this server
        // by, the one it announces.
        let kerberos = KerberosServer::new(db.security(), &identity.host)?;
        let budget = config
            .max_in_flight_bytes
            .clamp(1024, Semaphore::MAX_PERMITS);
        let shared = Arc::new(Shared {
            ctx: RpcContext::new(Arc::new(db.clone()), identity, limits.clone()),
            budget: Arc::new(Semaphore::new(budget)),
            decoded: Arc::new(Semaphore::new(budget)),
            budget_size: budget,
            next_connection: AtomicU64::new(1),
            open_connections: AtomicUsize::new(0),
            slots: AddressSlots::new(SlotLimits {
                total: limits.max_connections,
                per_address: match config.max_connections_per_address {
                    0 => usize::MAX,
                    n => n,
                },
                reserved: config
                    .reserved_connections
                    .unwrap_or(limits.max_connections / 10),
            }),
            refusals: RefusalLog::new("native RPC", Duration::from_secs(10)),
            handshake: (config.handshake_timeout_ms > 0)
                .then(|| Duration::from_millis(config.handshake_timeout_ms)),
            write_timeouts: AtomicU64::new(0),
            cancelled_calls: AtomicU64::new(0),
            tls,
            kerberos,
        });
        let (shutdown, shutdown_rx) = watch::channel(false);
        // Abandoned scanners go after their lease even when nobody opens
        // another one.
        let sweeper = shared.ctx.scanners.table().spawn_reaper(
            runtime.handle(),
            shutdown_rx.clone(),
            "native RPC",
        );
        let loops = vec![
            sweeper,
            runtime.spawn(accept_loop(
                master,
                Arc::clone(&shared),
                shutdown_rx.clone(),
            )),
            runtime.spawn(accept_loop(region_server, Arc::clone(&shared), shutdown_rx)),
        ];
        // One line per port, as every gateway says where it listens.
        tracing::info!(
            address = %master_addr,
            host = %shared.ctx.identity.host,
            "HBase native RPC master listening"
        );
        tracing::info!(
            address = %rs_addr,
            host = %shared.ctx.identity.host,
            "HBase native RPC region server listening"
        );
        Ok(RpcServer {
            runtime: Some(runtime),
            shared,
            shutdown,
            loops,
            master_addr,
            region_server_addr: rs_addr,
        })
    }
}

/// The machine's host name, for announcing a server bound to every
/// interface; `localhost` when it cannot be read.
fn local_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

#[derive(Debug)]
struct Shared {
    ctx: RpcContext,
    /// Wire bytes of requests held.
    budget: Arc<Semaphore>,
    /// Bytes requests take once decoded (a bound measured before decoding,
    /// as the Thrift gateway meters): a request of many tiny elements
    /// cannot grow the process far beyond what the wire budget says.
    decoded: Arc<Semaphore>,
    budget_size: usize,
    next_connection: AtomicU64,
    open_connections: AtomicUsize,
    /// Per-address connection slots (both ports share them).
    slots: AddressSlots,
    /// Refusals, summarized once per interval.
    refusals: RefusalLog,
    /// Deadline for the preamble and connection header.
    handshake: Option<Duration>,
    /// Connections dropped for reading nothing of an answer.
    write_timeouts: AtomicU64,
    /// Calls whose work stopped because their client left.
    cancelled_calls: AtomicU64,
    /// TLS, when configured.
    tls: Option<basalt::tls::TlsServer>,
    /// Kerberos, with `[security] authentication = "kerberos"`.
    kerberos: Option<KerberosServer>,
}

/// A running native RPC server.
#[derive(Debug)]
pub struct RpcServer {
    runtime: Option<tokio::runtime::Runtime>,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    loops: Vec<tokio::task::JoinHandle<()>>,
    master_addr: SocketAddr,
    region_server_addr: SocketAddr,
}

impl RpcServer {
    /// Binds both ports as configured.
    pub fn bind(config: &RpcConfig) -> io::Result<RpcBound> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.worker_threads.max(1))
            .max_blocking_threads(config.max_blocking_threads.max(1))
            .thread_name("basalt-rpc")
            .enable_io()
            .enable_time()
            .build()?;
        let master = runtime.block_on(TcpListener::bind((
            config.bind.as_str(),
            config.master_port,
        )))?;
        let region_server = runtime.block_on(TcpListener::bind((
            config.bind.as_str(),
            config.region_server_port,
        )))?;
        Ok(RpcBound {
            runtime,
            master,
            region_server,
            config: config.clone(),
            start_code: None,
        })
    }

    /// The master port's address.
    pub fn master_addr(&self) -> SocketAddr {
        self.master_addr
    }

    /// The region server port's address.
    pub fn region_server_addr(&self) -> SocketAddr {
        self.region_server_addr
    }

    /// Who this server says it is.
    pub fn identity(&self) -> &Identity {
        &self.shared.ctx.identity
    }

    /// The shared state (tests, ZooKeeper registration).
    pub fn context(&self) -> &RpcContext {
        &self.shared.ctx
    }

    /// The server's runtime (cluster processes run their ZooKeeper
    /// watchers on it).
    pub fn runtime(&self) -> Option<&tokio::runtime::Runtime> {
        self.runtime.as_ref()
    }

    /// Runs `future` on the server's runtime.
    pub fn block_on<F: std::future::Future>(&self, future: F) -> Option<F::Output> {
        self.runtime.as_ref().map(|r| r.block_on(future))
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.shared.open_connections.load(Ordering::SeqCst)
    }

    /// Bytes of requests held now (tests: the budget drains).
    pub fn in_flight_bytes(&self) -> usize {
        self.shared.budget_size - self.shared.budget.available_permits()
    }

    /// Connections dropped because their client read nothing of an answer
    /// for `write_timeout_ms` (tests).
    pub fn write_timeouts(&self) -> u64 {
        self.shared.write_timeouts.load(Ordering::SeqCst)
    }

    /// Calls whose work stopped because their client left (tests).
    pub fn cancelled_calls(&self) -> u64 {
        self.shared.cancelled_calls.load(Ordering::SeqCst)
    }

    /// Decoded bytes reserved by requests now (tests: the budget drains).
    pub fn decoded_bytes_reserved(&self) -> usize {
        self.shared.budget_size - self.shared.decoded.available_permits()
    }

    /// Stops accepting and closes every connection; the database stays
    /// open (the process's other gateways share it).
    pub fn stop(mut self) {
        self.stop_serving();
        tracing::info!("native HBase RPC stopped");
    }

    fn stop_serving(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(runtime) = self.runtime.take() {
            for l in self.loops.drain(..) {
                let _ = runtime.block_on(l);
            }
            runtime.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

impl Drop for RpcServer {
    fn drop(&mut self) {
        self.stop_serving();
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else { continue };
                let slot = match shared.slots.acquire(peer.ip()) {
                    Ok(slot) => slot,
                    Err(refusal) => {
                        shared.refusals.refused(refusal.reason());
                        drop(stream);
                        continue;
                    }
                };
                shared.open_connections.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_nodelay(true);
                let id = shared.next_connection.fetch_add(1, Ordering::Relaxed);
                let shared = Arc::clone(&shared);
                let shutdown = shutdown.clone();
                tokio::spawn(async move {
                    if let Err(e) = secured(stream, id, &shared, shutdown).await {
                        tracing::debug!(connection = id, error = %e, "native RPC connection ended");
                    }
                    shared.ctx.scanners.close_owned_by(id);
                    shared.open_connections.fetch_sub(1, Ordering::SeqCst);
                    drop(slot);
                });
            }
        }
    }
}

/// A new connection, in TLS or plaintext as configured
/// (`basalt::tls::accept`, the handshake within the handshake deadline);
/// a plaintext one is split into its owned halves, as without TLS.
async fn secured(
    stream: TcpStream,
    id: u64,
    shared: &Arc<Shared>,
    shutdown: watch::Receiver<bool>,
) -> io::Result<()> {
    let peer = stream.peer_addr().ok().map(|a| a.ip().to_string());
    let limit = shared.handshake.unwrap_or(Duration::from_millis(
        basalt::guard::DEFAULT_FIRST_REQUEST_TIMEOUT_MS,
    ));
    match basalt::tls::accept(shared.tls.as_ref(), stream, limit).await {
        Ok(basalt::tls::Accepted::Plain(stream)) => {
            let (reader, writer) = stream.into_split();
            connection(reader, writer, peer, id, shared, shutdown).await
        }
        Ok(basalt::tls::Accepted::Tls(stream)) => {
            let (reader, writer) = tokio::io::split(*stream);
            connection(reader, writer, peer, id, shared, shutdown).await
        }
        Err(refused) => {
            shared.refusals.refused(refused.reason());
            Err(refused.into())
        }
    }
}

/// Reads exactly `buf.len()` bytes within the idle timeout.
async fn read_within<R: tokio::io::AsyncRead + Unpin>(
    stream: &mut R,
    buf: &mut [u8],
    idle: Option<Duration>,
) -> io::Result<()> {
    match idle {
        Some(idle) => match tokio::time::timeout(idle, stream.read_exact(buf)).await {
            Ok(r) => r.map(|_| ()),
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "idle timeout")),
        },
        None => stream.read_exact(buf).await.map(|_| ()),
    }
}

/// Writes a fatal answer (no call) and gives up on the connection.
async fn fatal<W: tokio::io::AsyncWrite + Unpin>(
    writer: &mut W,
    call_id: u32,
    error: &RpcError,
) -> io::Result<()> {
    let frame = frame::encode_response(call_id, Err(error));
    writer.write_all(&frame).await?;
    writer.flush().await?;
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        error.to_string(),
    ))
}

/// When the handshake (preamble, authentication, connection header) must
/// be over: a silent connection gives its slot back in seconds, not an
/// idle timeout.
#[derive(Debug, Clone, Copy)]
struct Handshake {
    started: tokio::time::Instant,
    budget: Option<Duration>,
}

impl Handshake {
    /// What is left of the budget (at least a millisecond).
    fn left(&self) -> Option<Duration> {
        self.budget.map(|b| {
            b.saturating_sub(self.started.elapsed())
                .max(Duration::from_millis(1))
        })
    }
}

async fn connection<R, W>(
    mut reader: R,
    mut writer: W,
    peer: Option<String>,
    id: u64,
    shared: &Arc<Shared>,
    shutdown: watch::Receiver<bool>,
) -> io::Result<()>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let limits = &shared.ctx.limits;
    let idle = (limits.idle_timeout_ms > 0).then(|| Duration::from_millis(limits.idle_timeout_ms));
    // 1. Preamble, authentication and connection header, under the
    // handshake deadline.
    let handshake = Handshake {
        started: tokio::time::Instant::now(),
        budget: shared.handshake.or(idle),
    };
    let mut preamble = [0u8; 6];
    read_within(&mut reader, &mut preamble, handshake.left()).await?;
    if &preamble == frame::REGISTRY_PREAMBLE {
        // HBase 2.6+ `RpcConnectionRegistry`: the cluster id, then close.
        let answer = frame::encode_registry_response(&shared.ctx.identity.cluster_id);
        writer.write_all(&answer).await?;
        writer.flush().await?;
        return Ok(());
    }
    if &preamble == frame::SECURITY_PREAMBLE {
        // Which principal this server runs as; the real preamble follows.
        let principal = shared.kerberos.as_ref().map(|k| k.principal());
        writer
            .write_all(&frame::encode_security_preamble_response(principal))
            .await?;
        writer.flush().await?;
        read_within(&mut reader, &mut preamble, handshake.left()).await?;
    }
    let method = match frame::check_preamble(&preamble) {
        Ok(method) => method,
        Err(e) => return fatal(&mut writer, NO_CALL, &e).await,
    };
    let negotiated = authentication::negotiate(
        &mut reader,
        &mut writer,
        method,
        shared.kerberos.as_ref(),
        handshake.left(),
    )
    .await?;
    let address = peer.as_deref().and_then(|p| p.parse().ok());
    let (who, layer) = match negotiated {
        Negotiated::Plain(who) => (who, None),
        Negotiated::Wrapped(who, layer) => (who, Some(layer)),
    };
    let connection = AuthenticatedConnection {
        who,
        peer,
        address,
        id,
    };
    match layer {
        None => serve_connection(reader, writer, connection, shared, shutdown, handshake).await,
        Some(layer) => {
            // A wrapped token may hold a whole flush of frames.
            let max_token = limits
                .max_frame_bytes
                .saturating_mul(2)
                .saturating_add(1 << 20);
            let plain = authentication::wrap_streams(reader, writer, layer, max_token);
            let (reader, writer) = tokio::io::split(plain);
            serve_connection(reader, writer, connection, shared, shutdown, handshake).await
        }
    }
}

/// A connection whose client has been authenticated.
struct AuthenticatedConnection {
    who: Authenticated,
    /// The client's address as text, for the audit log.
    peer: Option<String>,
    /// The client's address, for proxy-user rules.
    address: Option<std::net::IpAddr>,
    id: u64,
}

async fn serve_connection<R, W>(
    mut reader: R,
    mut writer: W,
    connection: AuthenticatedConnection,
    shared: &Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    handshake: Handshake,
) -> io::Result<()>
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let limits = &shared.ctx.limits;
    let idle = (limits.idle_timeout_ms > 0).then(|| Duration::from_millis(limits.idle_timeout_ms));
    let id = connection.id;
    let mut len = [0u8; 4];
    read_within(&mut reader, &mut len, handshake.left()).await?;
    let header_len = u32::from_be_bytes(len) as usize;
    if header_len > frame::MAX_CONNECTION_HEADER_BYTES {
        let e = RpcError::new(
            BAD_REQUEST,
            format!(
                "connection header of {header_len} bytes is over the {}-byte limit",
                frame::MAX_CONNECTION_HEADER_BYTES
            ),
            true,
        );
        return fatal(&mut writer, NO_CALL, &e).await;
    }
    let mut header = vec![0u8; header_len];
    read_within(&mut reader, &mut header, handshake.left()).await?;
    let header = match <ConnectionHeader as prost::Message>::decode(&header[..]) {
        Ok(h) => h,
        Err(e) => {
            return fatal(
                &mut writer,
                NO_CALL,
                &RpcError::undecodable("connection header", e),
            )
            .await
        }
    };
    let requested = header.service_name.as_deref().unwrap_or_default();
    let Some((service, _)) = services::services()
        .into_iter()
        .find(|(name, _)| *name == requested)
    else {
        let e = RpcError::new(UNKNOWN_SERVICE, format!("service {requested:?} is not served (served: ClientService, MasterService, AdminService, ClientMetaService, BasaltRegionService, BasaltClusterService)"), true);
        return fatal(&mut writer, NO_CALL, &e).await;
    };
    // The caller every call of the connection is checked for.
    let caller_db = match caller_of(
        &shared.ctx.db,
        &header,
        service,
        &connection,
        shared.kerberos.as_ref(),
    ) {
        Ok(db) => Arc::new(db),
        Err(e) => return fatal(&mut writer, NO_CALL, &e).await,
    };
    let cell_blocks = match header.cell_block_codec_class.as_deref() {
        None | Some("") => false,
        Some(codec) if cellblock::is_supported_codec(codec) => true,
        Some(codec) => {
            let e = RpcError::new(
                "org.apache.hadoop.hbase.ipc.UnsupportedCellCodecException",
                format!(
                    "cell block codec {codec} is not supported (use {})",
                    cellblock::KEY_VALUE_CODEC
                ),
                true,
            );
            return fatal(&mut writer, NO_CALL, &e).await;
        }
    };
    if let Some(compressor) = header
        .cell_block_compressor_class
        .as_deref()
        .filter(|c| !c.is_empty())
    {
        let e = RpcError::new("org.apache.hadoop.hbase.ipc.UnsupportedCompressionCodecException", format!("cell block compressor {compressor} is not supported: send cell blocks uncompressed"), true);
        return fatal(&mut writer, NO_CALL, &e).await;
    }

    // 4. Answers leave through one writer task, in completion order, each
    // holding its room in the answer budget until it is written. A client
    // that reads nothing for the write timeout is dropped: the writer ends,
    // and with it the connection and its answers.
    let (answers, mut outbox) =
        mpsc::channel::<(Vec<u8>, AnswerBytes)>(limits.max_calls_per_connection);
    let write_timeout =
        (limits.write_timeout_ms > 0).then(|| Duration::from_millis(limits.write_timeout_ms));
    let writer_shared = Arc::clone(shared);
    let writer_task = tokio::spawn(async move {
        let mut writer = WriteTimeout::new(writer, write_timeout);
        while let Some((frame, room)) = outbox.recv().await {
            if let Err(e) = writer.write_all(&frame).await {
                if e.kind() == io::ErrorKind::TimedOut {
                    writer_shared.write_timeouts.fetch_add(1, Ordering::SeqCst);
                    tracing::debug!(connection = id, "dropping a native RPC connection: {e}");
                }
                break;
            }
            drop(room);
        }
        drop(outbox);
        let _ = writer.shutdown().await;
    });
    let calls = Arc::new(Semaphore::new(limits.max_calls_per_connection));
    // Every call shares the connection's cancel flag: once the client is
    // gone, the work of its calls stops at the next row.
    let control = CallControl::new();
    let scan_call_timeout = (limits.scan_call_timeout_ms > 0)
        .then(|| Duration::from_millis(limits.scan_call_timeout_ms));
    let mut stopping = false;
    let result = loop {
        // 3. One frame.
        let mut len = [0u8; 4];
        let read = tokio::select! {
            _ = shutdown.changed() => {
                stopping = true;
                break Ok(());
            }
            _ = answers.closed() => break Err(io::Error::new(io::ErrorKind::TimedOut, "the answers' writer ended")),
            r = read_within(&mut reader, &mut len, idle) => r,
        };
        if let Err(e) = read {
            break if e.kind() == io::ErrorKind::UnexpectedEof {
                Ok(())
            } else {
                Err(e)
            };
        }
        let frame_len = u32::from_be_bytes(len) as usize;
        if frame_len > limits.max_frame_bytes {
            let e = RpcError::new(
                "org.apache.hadoop.hbase.exceptions.RequestTooBigException",
                format!("a request of {frame_len} bytes is over the {}-byte limit ([rpc] max_frame_bytes)", limits.max_frame_bytes),
                true,
            );
            let _ = answers
                .send((
                    frame::encode_response(NO_CALL, Err(&e)),
                    AnswerBytes::none(),
                ))
                .await;
            break Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string()));
        }
        let permits = frame_len.clamp(1, shared.budget_size) as u32;
        let Ok(held) = Arc::clone(&shared.budget).acquire_many_owned(permits).await else {
            break Ok(());
        };
        let mut body = vec![0u8; frame_len];
        if let Err(e) = read_within(&mut reader, &mut body, idle).await {
            break Err(e);
        }
        let request = match frame::split_request(Bytes::from(body)) {
            Ok(r) => r,
            Err((Some(call_id), e)) => {
                let _ = answers
                    .send((
                        frame::encode_response(call_id, Err(&e)),
                        AnswerBytes::none(),
                    ))
                    .await;
                continue;
            }
            Err((None, e)) => {
                let _ = answers
                    .send((
                        frame::encode_response(NO_CALL, Err(&e)),
                        AnswerBytes::none(),
                    ))
                    .await;
                break Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string()));
            }
        };
        let decoded_bound = frame::decoded_size_bound(&request.param)
            + request.cell_block.len()
            + cellblock::count_cells(&request.cell_block)
                * std::mem::size_of::<basalt_types::Cell>();
        if decoded_bound > shared.budget_size {
            let call_id = request.header.call_id.unwrap_or(0);
            let e = RpcError::new(
                "org.apache.hadoop.hbase.exceptions.RequestTooBigException",
                format!(
                    "the request would take up to {decoded_bound} bytes decoded, over [rpc] max_in_flight_bytes ({}); send it in smaller batches",
                    shared.budget_size
                ),
                true,
            );
            let _ = answers
                .send((
                    frame::encode_response(call_id, Err(&e)),
                    AnswerBytes::none(),
                ))
                .await;
            continue;
        }
        let Ok(decoded_held) = Arc::clone(&shared.decoded)
            .acquire_many_owned(decoded_bound.max(1) as u32)
            .await
        else {
            break Ok(());
        };
        let Ok(slot) = Arc::clone(&calls).acquire_owned().await else {
            break Ok(());
        };
        let shared = Arc::clone(shared);
        let caller_db = Arc::clone(&caller_db);
        let answers = answers.clone();
        let call_control = control.with_deadline(scan_call_timeout);
        tokio::spawn(async move {
            let call_id = request.header.call_id.unwrap_or(0);
            // A Get whose data is in memstores and the block cache is
            // answered here, without the blocking pool's hand-off; one that
            // needs a file goes to the pool (see `basalt::read_tier`).
            if is_read_only(service, &request) {
                let (attempt, room) = call_control.run(|| {
                    basalt::guard::with_answer_room(call_room(), || {
                        basalt::read_tier::memory_only(|| {
                            run_call(&shared.ctx, &caller_db, id, service, &request, cell_blocks)
                        })
                    })
                });
                if let Some(answer) = attempt {
                    drop(held);
                    drop(decoded_held);
                    let frame = match answer {
                        Ok((message, cells)) => {
                            frame::encode_response(call_id, Ok((&message, &cells)))
                        }
                        Err(e) => frame::encode_response(call_id, Err(&e)),
                    };
                    let _ = answers.send(counted(frame, room)).await;
                    drop(slot);
                    return;
                }
            }
            let cancelled = Arc::clone(&shared);
            let answered = tokio::task::spawn_blocking(move || {
                let (answer, room) = call_control.run(|| {
                    basalt::guard::with_answer_room(call_room(), || {
                        run_call(&shared.ctx, &caller_db, id, service, &request, cell_blocks)
                    })
                });
                drop(held);
                drop(decoded_held);
                let frame = match answer {
                    Ok((message, cells)) => frame::encode_response(call_id, Ok((&message, &cells))),
                    Err(e) => {
                        if e.is_cancelled() {
                            cancelled.cancelled_calls.fetch_add(1, Ordering::SeqCst);
                        }
                        frame::encode_response(call_id, Err(&e))
                    }
                };
                counted(frame, room)
            })
            .await
            .unwrap_or_else(|e| {
                let error = RpcError::new(
                    "java.io.IOException",
                    format!("the call failed inside the server: {e}"),
                    false,
                );
                (
                    frame::encode_response(call_id, Err(&error)),
                    AnswerBytes::none(),
                )
            });
            let _ = answers.send(answered).await;
            drop(slot);
        });
    };
    // A client that left (or stopped reading) takes its calls' work with
    // it; on shutdown, calls in flight still answer. The writer ends when
    // the last sender (each running call holds one) is gone.
    if !stopping {
        control.cancel();
    }
    drop(answers);
    let _ = writer_task.await;
    result
}

/// Answers smaller than this are not counted in the answer budget: a
/// thousand connections' worth of them is a few megabytes.
const COUNTED_ANSWER_BYTES: usize = 16 * 1024;

/// A call's answer room: what building its answer takes in the answer
/// budget (scans take room before their first row and count each row).
fn call_room() -> AnswerBytes {
    basalt::guard::answer_budget().force(0)
}

/// An answer frame with its room in the answer budget, held until the
/// writer has written it: the frame's size from now on (what building it
/// took is given back), nothing for a small one.
fn counted(frame: Vec<u8>, mut room: AnswerBytes) -> (Vec<u8>, AnswerBytes) {
    if frame.len() >= COUNTED_ANSWER_BYTES {
        if room.held() == 0 {
            room = basalt::guard::answer_budget().force(frame.len());
        } else {
            room.resize(frame.len());
        }
    } else {
        room = AnswerBytes::none();
    }
    (frame, room)
}

/// True for calls that only read rows and change nothing (no scanner, no
/// lease), so a memory-only attempt whose answer is dropped can run again.
fn is_read_only(service: &str, request: &frame::Request) -> bool {
    service == "ClientService" && request.header.method_name.as_deref() == Some("Get")
}

/// Decodes the cell block, finds the method, runs it: the answer message
/// and its cell block.
fn run_call(
    ctx: &RpcContext,
    db: &Database,
    connection: u64,
    service: &str,
    request: &frame::Request,
    cell_blocks: bool,
) -> Result<(Vec<u8>, Vec<u8>), RpcError> {
    let method_name = request.header.method_name.as_deref().unwrap_or("");
    let Some(method) = services::find(service, method_name) else {
        return Err(RpcError::unsupported(service, method_name));
    };
    // Every cell takes at least 20 bytes on the wire.
    let cells = if request.cell_block.is_empty() {
        Vec::new()
    } else {
        cellblock::decode(&request.cell_block, request.cell_block.len() / 20 + 1)?
    };
    let mut call = Call::new(ctx, db, connection, cells, cell_blocks);
    let message = (method.handler)(&mut call, &request.param)?;
    let out_cells = call.take_response_cells();
    let mut block = Vec::with_capacity(cellblock::encoded_len(&out_cells));
    cellblock::encode(&out_cells, &mut block);
    Ok((message, block))
}

/// The services only the cluster's own servers call.
const INTERNAL_SERVICES: [&str; 2] = ["BasaltClusterService", "BasaltRegionService"];

/// The database as a connection's caller sees it (`basalt::access`).
/// With authorization off, the trusted database (authentication, if on,
/// was enforced before the header). With it on:
/// - a Kerberos connection's caller is its principal's short name
///   (`auth_to_local`); a header naming another effective user asks to
///   act for that user, which the proxy-user rules decide, as HBase's
///   `ProxyUsers.authorize` does;
/// - a SIMPLE connection's caller is the user its header names, by its
///   short name; a header naming a real user apart from the effective one
///   (impersonation) is accepted from a superuser only;
/// - the internal services accept superusers only (the cluster's
///   processes connect as the server user).
fn caller_of(
    db: &Database,
    header: &ConnectionHeader,
    service: &str,
    connection: &AuthenticatedConnection,
    kerberos: Option<&KerberosServer>,
) -> Result<Database, RpcError> {
    let security = db.security();
    let info = header.user_info.as_ref();
    let named = |user: Option<&String>| {
        user.map(|u| short_user_name(u))
            .filter(|u| !u.is_empty())
            .map(str::to_string)
    };
    let mut proven = None;
    let user = match (&connection.who, kerberos) {
        (Authenticated::Kerberos { principal, user }, Some(kerberos)) => {
            let effective = info
                .and_then(|i| i.effective_user.as_deref())
                .filter(|e| !e.is_empty() && *e != principal && *e != user);
            match effective {
                None => {
                    proven = Some(principal.clone());
                    user.clone()
                }
                Some(effective) => {
                    let effective = if effective.contains('@') {
                        kerberos.short_name(effective).map_err(access_denied)?
                    } else {
                        short_user_name(effective).to_string()
                    };
                    let groups = security.caller(&effective).groups;
                    kerberos
                        .proxy
                        .authorize(user, principal, &effective, &groups, connection.address)
                        .map_err(access_denied)?;
                    effective
                }
            }
        }
        _ => {
            if !security.authorization {
                return Ok(db.clone());
            }
            let Some(user) = named(info.and_then(|i| i.effective_user.as_ref())) else {
                return Err(access_denied(
                    "the connection header names no user: with authorization on, every caller must say who it is".to_string(),
                ));
            };
            if let Some(real) = named(info.and_then(|i| i.real_user.as_ref())) {
                if real != user && !security.is_superuser(&security.caller(&real)) {
                    return Err(access_denied(format!(
                        "user '{real}' may not act as '{user}': only superusers may impersonate"
                    )));
                }
            }
            user
        }
    };
    if !security.authorization {
        return Ok(db.clone());
    }
    let mut caller = security.caller(&user);
    caller.address = connection.peer.clone();
    caller.principal = proven;
    if INTERNAL_SERVICES.contains(&service) && !security.is_superuser(&caller) {
        return Err(access_denied(format!(
            "user '{user}' may not call {service}: only the cluster's own servers (superusers) may"
        )));
    }
    Ok(db.acting_as(caller))
}

/// A principal's short name, as HBase's `User.getShortName` gives it:
/// `alice/host@REALM` is `alice`.
fn short_user_name(principal: &str) -> &str {
    let end = principal.find(['/', '@']).unwrap_or(principal.len());
    &principal[..end]
}

fn access_denied(message: String) -> RpcError {
    RpcError::new(basalt::ErrorKind::AccessDenied.java_class(), message, true)
}

/// A new cluster id: a random version-4 UUID in its text form.
pub fn new_cluster_id() -> String {
    let bytes: [u8; 16] = rand::random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-4{}-{:x}{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        (bytes[8] & 0x3) | 0x8,
        &hex[17..20],
        &hex[20..32]
    )
}

/// The cluster id of the data set in `data_dir` (HBase's `hbase.id`):
/// read from `cluster.id`, or created there once as a random UUID. Clients
/// use it to tell clusters apart, so it must survive restarts.
pub fn load_or_create_cluster_id(data_dir: &std::path::Path) -> io::Result<String> {
    let path = data_dir.join("cluster.id");
    match std::fs::read_to_string(&path) {
        Ok(id) if !id.trim().is_empty() => return Ok(id.trim().to_string()),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let id = new_cluster_id();
    // Written whole then renamed: a crash leaves the old state or the new.
    let tmp = data_dir.join("cluster.id.tmp");
    std::fs::write(&tmp, format!("{id}\n"))?;
    std::fs::rename(&tmp, &path)?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_id_is_created_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create_cluster_id(dir.path()).unwrap();
        assert_eq!(first.len(), 36);
        assert_eq!(load_or_create_cluster_id(dir.path()).unwrap(), first);
    }
}
