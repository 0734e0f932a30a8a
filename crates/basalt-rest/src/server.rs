//! The HTTP/1.1 server: hyper on tokio, one task per connection, each
//! request's engine work on the capped blocking pool.
//!
//! What clients can make the server hold is bounded: connections
//! (`max_connections`; one more is accepted and closed at once), the time
//! to send a request's headers (`idle_timeout_ms`), each body
//! (`max_request_bytes`, 413 beyond it), the bodies being read at once
//! (`max_in_flight_bytes`: a request waits for room before its body is
//! read), the cells and bytes of one answer (`max_response_cells`,
//! `max_answer_bytes`), answers being built and written (the process's
//! answer budget, `basalt::guard`), a client that reads nothing of its
//! answer (`write_timeout_ms`), a connection that sends nothing
//! (`first_request_timeout_ms`), the time one scan call reads
//! (`scan_call_timeout_ms`; its work also stops when its client leaves)
//! and open scanners (`max_scanners`, expiring after `scanner_lease_ms`
//! unused).
//!
//! With `tls` (`[rest.tls]`) the port speaks HTTPS (HBase's
//! `hbase.rest.ssl.enabled`), plaintext HTTP beside it only when kept.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body, Incoming};
use hyper::header::{HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use basalt::gateways::scanners::ScannerLimits;
use basalt::guard::AnswerBytes;
use basalt::interrupt::CallControl;
use basalt::tls::{TlsServer, TlsSettings};
use basalt::Database;

use crate::http::{self, AnswerBody, ConnectionGate, ConnectionInfo, ConnectionTimeouts, Handler};
use crate::kerberos::HttpKerberos;
use crate::media::Format;
use crate::resources::{handle, Context, Reply, Request};
use crate::scanners::Scanners;

/// Settings of the REST gateway (the `[rest]` table of the config file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RestConfig {
    /// Serve REST at all (`basalt serve` only; `--no-rest` turns it off).
    /// Default true.
    pub enabled: bool,
    /// Address to listen on. Default `127.0.0.1`.
    pub bind: String,
    /// Port. Default 8080 (HBase REST's). 0 picks a free port.
    pub port: u16,
    /// Async worker threads (connections, HTTP parsing). Default 2.
    pub worker_threads: usize,
    /// Most threads running engine calls at once. Default 32.
    pub max_blocking_threads: usize,
    /// Most connections open at once; one more is accepted and closed at
    /// once. Default 1000.
    pub max_connections: usize,
    /// Host names a request's `Host` header may carry besides IP literals
    /// and `localhost` (the names clients reach this server by); any other
    /// name is refused with 421 so DNS rebinding cannot reach the server
    /// from a browser. Default: none (the bind address, when it is a name,
    /// is added).
    pub allowed_hosts: Vec<String>,
    /// Of `max_connections`, the slots only addresses holding no
    /// connection may take (default a tenth), so one address cannot lock
    /// the others out.
    pub reserved_connections: Option<usize>,
    /// Milliseconds a client may take to send a request's headers (and
    /// so also the longest a connection may sit idle between requests),
    /// and then its body; 0 never times out. Default 60 000.
    pub idle_timeout_ms: u64,
    /// Largest request body, in bytes; a larger one is answered 413
    /// unread. Default 16 MiB.
    pub max_request_bytes: usize,
    /// Memory of requests being read, decoded and served at once. A
    /// request waits for room before its body is read: its declared length
    /// (or `max_request_bytes` when it declares none), times
    /// [`DECODED_PER_BYTE`] for an XML or JSON body, whose decoded form the
    /// garbage-input test measures under that multiple. A request larger
    /// than the whole budget runs alone. Default 64 MiB.
    pub max_in_flight_bytes: usize,
    /// Most cells in one answer: a scanner's batch is capped to it, and a
    /// row-range or multi-row read holding more is refused (400) with
    /// advice to use a scanner. Default 100 000.
    pub max_response_cells: usize,
    /// Most bytes of cells in one answer: a scanner's answer stops there
    /// (as HBase's `max_result_size`), and a row-range or multi-row read
    /// holding more is refused (400) with advice. Default 4 MiB.
    pub max_answer_bytes: usize,
    /// Milliseconds an answer may make no progress to its client before
    /// the connection is dropped, and the answer with it; 0 never. Default
    /// 30 000.
    pub write_timeout_ms: u64,
    /// Milliseconds a new connection has to start its first request; 0:
    /// `idle_timeout_ms`. Default 10 000.
    pub first_request_timeout_ms: u64,
    /// Milliseconds one scanner read (or row-range read) may scan before it
    /// answers the cells it has, or (with none) 503 naming this limit; the
    /// scanner stays where it stopped. 0 never. Default 60 000.
    pub scan_call_timeout_ms: u64,
    /// Most scanners open at once (each holds engine state). Default 4096.
    pub max_scanners: usize,
    /// Milliseconds an unused scanner stays open. Default 60 000.
    pub scanner_lease_ms: u64,
    /// Refuse every change: PUT, POST and DELETE answer 403 (HBase's
    /// `hbase.rest.readonly`). Default false.
    pub read_only: bool,
    /// HTTPS on the port (`[rest.tls]`, docs/security.md). Default none.
    pub tls: Option<TlsSettings>,
}

impl Default for RestConfig {
    fn default() -> Self {
        RestConfig {
            enabled: true,
            bind: "127.0.0.1".into(),
            port: 8080,
            worker_threads: 2,
            max_blocking_threads: 32,
            max_connections: 1000,
            allowed_hosts: Vec::new(),
            reserved_connections: None,
            idle_timeout_ms: 60_000,
            max_request_bytes: 16 * 1024 * 1024,
            max_in_flight_bytes: 64 * 1024 * 1024,
            max_response_cells: 100_000,
            max_answer_bytes: basalt::guard::DEFAULT_MAX_ANSWER_BYTES,
            write_timeout_ms: basalt::guard::DEFAULT_WRITE_TIMEOUT_MS,
            first_request_timeout_ms: basalt::guard::DEFAULT_FIRST_REQUEST_TIMEOUT_MS,
            scan_call_timeout_ms: basalt::guard::DEFAULT_SCAN_CALL_TIMEOUT_MS,
            max_scanners: 4096,
            scanner_lease_ms: 60_000,
            read_only: false,
            tls: None,
        }
    }
}

/// Room an XML or JSON body holds in the in-flight budget per byte: its
/// decoded tree and models cost at most about 27 times its size (the
/// densest documents the decoders accept, measured by
/// `tests/garbage_input.rs`).
pub const DECODED_PER_BYTE: usize = 32;

/// Counters for tests: what the server refused.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RestStats {
    /// Connections refused for being over `max_connections`.
    pub refused_connections: u64,
    /// Requests refused for a body over `max_request_bytes`.
    pub refused_bodies: u64,
    /// Connections dropped for reading nothing of an answer for
    /// `write_timeout_ms`.
    pub write_timeouts: u64,
    /// Connections closed for starting no request within
    /// `first_request_timeout_ms`.
    pub first_request_timeouts: u64,
    /// Requests whose client left while they ran (their scans stopped at
    /// the next row).
    pub cancelled_calls: u64,
}

#[derive(Debug)]
struct Shared {
    context: Arc<Context>,
    connections: Arc<ConnectionGate>,
    idle_timeout: Option<Duration>,
    max_request_bytes: usize,
    budget: Arc<Semaphore>,
    budget_size: usize,
    refused_bodies: AtomicU64,
    /// The longest one scan call reads.
    scan_call_timeout: Option<Duration>,
    /// How long an answer waits for room in the answer budget.
    answer_patience: Duration,
    cancelled_calls: AtomicU64,
    /// Kerberos, when `[security] authentication = "kerberos"`.
    kerberos: Option<RestKerberos>,
}

/// The REST server's Kerberos: who a request is, and whom it may act for.
#[derive(Debug)]
struct RestKerberos {
    gate: HttpKerberos,
    /// `?doAs=` is allowed at all (`rest_support_proxyuser`).
    support_proxyuser: bool,
    proxy: basalt_kerberos::ProxyUsers,
}

/// The port, bound but not yet serving: [`RestServer::bind`] then
/// [`Bound::serve`] finds a taken port before a data directory is opened.
#[derive(Debug)]
pub struct Bound {
    runtime: tokio::runtime::Runtime,
    listener: TcpListener,
    config: RestConfig,
    /// The TLS files, loaded at bind so unusable ones fail the start
    /// before a data directory is opened.
    tls: Option<Arc<TlsServer>>,
}

impl Bound {
    /// The address the port is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Starts serving `db`; returns once the server accepts connections.
    pub fn serve(self, db: Database) -> io::Result<RestServer> {
        RestServer::serve_bound(self, db)
    }
}

/// A running REST gateway. It serves a database it does not own: stopping
/// it leaves the database open for its owner to close.
#[derive(Debug)]
pub struct RestServer {
    runtime: Option<tokio::runtime::Runtime>,
    local_addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    accept_loop: Option<tokio::task::JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl RestServer {
    /// Binds the port and serves `db` on it.
    pub fn start(db: Database, config: &RestConfig) -> io::Result<RestServer> {
        RestServer::bind(config)?.serve(db)
    }

    /// Binds the configured port (and builds the runtime that will serve
    /// it) without serving anything yet; loads the TLS files, if any.
    pub fn bind(config: &RestConfig) -> io::Result<Bound> {
        let tls = http::load_tls(config.tls.as_ref())?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.worker_threads.max(1))
            .max_blocking_threads(config.max_blocking_threads.max(1))
            .thread_name("basalt-rest")
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

    fn serve_bound(bound: Bound, db: Database) -> io::Result<RestServer> {
        let Bound {
            runtime,
            listener,
            config,
            tls,
        } = bound;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let local_addr = listener.local_addr()?;
        let lease = Duration::from_millis(config.scanner_lease_ms.max(1));
        let host = if local_addr.ip().is_unspecified() {
            "localhost".to_string()
        } else {
            local_addr.ip().to_string()
        };
        let kerberos = rest_kerberos(db.security())?;
        let context = Arc::new(Context {
            db,
            scanners: Arc::new(Scanners::new(ScannerLimits {
                max_open: config.max_scanners,
                // A REST scanner is a URL, not a connection's.
                max_per_connection: usize::MAX,
                lease,
            })),
            max_response_cells: config.max_response_cells.max(1),
            max_answer_bytes: config.max_answer_bytes.max(1),
            read_only: config.read_only,
            location: format!("{host}:{}", local_addr.port()),
            user: None,
        });
        let budget_size = config
            .max_in_flight_bytes
            .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        let millis = |ms: u64| (ms > 0).then(|| Duration::from_millis(ms));
        let shared = Arc::new(Shared {
            context,
            connections: ConnectionGate::for_listener(
                "REST",
                config.max_connections,
                config.reserved_connections,
                &config.allowed_hosts,
                &config.bind,
            ),
            idle_timeout: (config.idle_timeout_ms > 0)
                .then(|| Duration::from_millis(config.idle_timeout_ms)),
            max_request_bytes: config.max_request_bytes,
            budget: Arc::new(Semaphore::new(budget_size)),
            budget_size,
            refused_bodies: AtomicU64::new(0),
            scan_call_timeout: millis(config.scan_call_timeout_ms),
            answer_patience: millis(config.write_timeout_ms).unwrap_or(Duration::from_millis(
                basalt::guard::DEFAULT_WRITE_TIMEOUT_MS,
            )),
            cancelled_calls: AtomicU64::new(0),
            kerberos,
        });
        let (shutdown, shutdown_rx) = watch::channel(false);
        shared
            .context
            .scanners
            .spawn_reaper(runtime.handle(), shutdown_rx.clone(), "REST");
        let handler: Handler = {
            let shared = Arc::clone(&shared);
            let host = shared.context.location.clone();
            Arc::new(move |request| Box::pin(respond(Arc::clone(&shared), request, host.clone())))
        };
        let timeouts = ConnectionTimeouts {
            header: shared.idle_timeout,
            first_request: millis(config.first_request_timeout_ms).or(shared.idle_timeout),
            write: millis(config.write_timeout_ms),
        };
        let accept_loop = runtime.spawn(http::accept_loop(
            listener,
            Arc::clone(&shared.connections),
            timeouts,
            tls,
            handler,
            shutdown_rx,
        ));
        tracing::info!(address = %local_addr, scheme, "REST gateway listening");
        Ok(RestServer {
            runtime: Some(runtime),
            local_addr,
            shutdown,
            accept_loop: Some(accept_loop),
            shared,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Scanners currently open.
    pub fn open_scanners(&self) -> usize {
        self.shared.context.scanners.len()
    }

    /// Connections currently open.
    pub fn open_connections(&self) -> usize {
        self.shared.connections.open()
    }

    /// What the server refused, for tests.
    #[doc(hidden)]
    pub fn stats(&self) -> RestStats {
        RestStats {
            refused_connections: self.shared.connections.refused(),
            refused_bodies: self.shared.refused_bodies.load(Ordering::SeqCst),
            write_timeouts: self.shared.connections.write_timeouts(),
            first_request_timeouts: self.shared.connections.first_request_timeouts(),
            cancelled_calls: self.shared.cancelled_calls.load(Ordering::SeqCst),
        }
    }

    /// Stops accepting, lets requests in flight answer, closes every
    /// connection and scanner. The database stays open.
    pub fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let (Some(runtime), Some(accept_loop)) = (self.runtime.take(), self.accept_loop.take()) {
            if let Err(e) = runtime.block_on(accept_loop) {
                tracing::warn!(error = %e, "REST accept loop ended abnormally");
            }
            runtime.shutdown_timeout(Duration::from_secs(5));
        }
        self.shared.context.scanners.clear();
        tracing::info!("REST gateway stopped");
    }
}

/// The REST server's Kerberos when `security` turns it on; an error (the
/// server does not start) when the HTTP principal's key is missing or the
/// proxy-user rules do not compile.
fn rest_kerberos(security: &basalt::SecurityOptions) -> io::Result<Option<RestKerberos>> {
    let Some(gate) = HttpKerberos::for_security(security, "REST")? else {
        return Ok(None);
    };
    let support_proxyuser = security
        .kerberos
        .as_ref()
        .is_some_and(|k| k.rest_support_proxyuser);
    let proxy = basalt_kerberos::ProxyUsers::new(&security.proxy_users)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    Ok(Some(RestKerberos {
        gate,
        support_proxyuser,
        proxy,
    }))
}

/// Splits `doAs=<user>` (HBase's proxy-user parameter; the name's case
/// does not matter) from a query: the user, and the query without it.
fn take_do_as(query: Option<&str>) -> Result<(Option<String>, Option<String>), String> {
    let Some(query) = query else {
        return Ok((None, None));
    };
    let mut do_as = None;
    let mut rest = Vec::new();
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key.eq_ignore_ascii_case("doas") {
            let user = crate::path::percent_decode(value, true)?;
            let user = String::from_utf8(user).map_err(|_| "doAs is not UTF-8".to_string())?;
            do_as = Some(user);
        } else {
            rest.push(pair);
        }
    }
    let rest = (!rest.is_empty()).then(|| rest.join("&"));
    Ok((do_as, rest))
}

impl RestKerberos {
    /// The caller a request acts as: the authenticated user, or the
    /// `doAs` user when the proxy-user rules let it. The refusal is 403
    /// with HBase's words (HBase answers 500, a `ServletException`), with
    /// an audit line.
    fn caller(
        &self,
        security: &basalt::SecurityOptions,
        user: &str,
        do_as: Option<String>,
        peer: Option<std::net::SocketAddr>,
        request: &str,
    ) -> Result<basalt::Caller, Reply> {
        let address = peer.map(|p| p.ip());
        let caller = |name: &str| {
            let mut caller = security.caller(name);
            caller.address = address.map(|a| a.to_string());
            caller
        };
        let Some(effective) = do_as.filter(|d| d != user) else {
            return Ok(caller(user));
        };
        let refused = if !self.support_proxyuser {
            Some("Support for proxyuser is not configured".to_string())
        } else {
            let groups = security.caller(&effective).groups;
            self.proxy
                .authorize(user, user, &effective, &groups, address)
                .err()
        };
        if let Some(why) = refused {
            basalt::access::audit(
                &caller(user),
                false,
                request,
                &format!("doAs={effective}: {why}"),
            );
            return Err(Reply::text(403, "Forbidden", Some(&why)));
        }
        Ok(caller(&effective))
    }
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

async fn respond(
    shared: Arc<Shared>,
    request: hyper::Request<Incoming>,
    local: String,
) -> http::Response {
    let (parts, body) = request.into_parts();
    // Who is asking comes first: an unauthenticated request gets nothing
    // else, not even a read of its body.
    let mut identity = match &shared.kerberos {
        Some(kerberos) => match kerberos.gate.authenticate(&parts).await {
            Ok(identity) => Some(identity),
            Err(refusal) => return refusal,
        },
        None => None,
    };
    // The mutual-authentication token and the cookie go on whatever the
    // answer is.
    let headers = identity
        .as_mut()
        .map(|i| std::mem::take(&mut i.headers))
        .unwrap_or_default();
    let mut response = respond_as(&shared, parts, body, local, identity).await;
    crate::kerberos::add_headers(&mut response, &headers);
    response
}

/// Serves a request: as the server's database without Kerberos; with it,
/// as the authenticated user (or the `doAs` user the proxy-user rules let
/// it act for), whose grants decide.
async fn respond_as(
    shared: &Arc<Shared>,
    parts: hyper::http::request::Parts,
    body: Incoming,
    local: String,
    identity: Option<basalt_kerberos::HttpIdentity>,
) -> http::Response {
    let mut query = parts.uri.query().map(str::to_string);
    let context = match (&shared.kerberos, identity) {
        (Some(kerberos), Some(identity)) => {
            let (do_as, rest) = match take_do_as(query.as_deref()) {
                Ok(split) => split,
                Err(e) => return into_response(Reply::bad_request(&e)),
            };
            query = rest;
            let peer = parts.extensions.get::<ConnectionInfo>().map(|i| i.peer);
            let security = shared.context.db.security();
            let request = format!("REST {} {}", parts.method, parts.uri.path());
            let caller = match kerberos.caller(security, &identity.user, do_as, peer, &request) {
                Ok(caller) => caller,
                Err(reply) => return into_response(reply),
            };
            let user = caller.user.clone();
            Arc::new(
                shared
                    .context
                    .for_user(shared.context.db.acting_as(caller), user),
            )
        }
        _ => Arc::clone(&shared.context),
    };
    // Exact for a Content-Length body and for no body at all (a GET);
    // unknown only for a chunked one.
    let declared = body
        .size_hint()
        .upper()
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    if declared.is_some_and(|n| n > shared.max_request_bytes) {
        shared.refused_bodies.fetch_add(1, Ordering::SeqCst);
        return into_response(too_large(shared.max_request_bytes));
    }
    // Room in the in-flight budget before the body is read; a lone
    // request larger than the whole budget still passes once it is free,
    // and a request without a body takes none.
    let decoded = parts
        .headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(Format::from_mime)
        .is_some_and(|f| matches!(f, Format::Xml | Format::Json | Format::Protobuf));
    let per_byte = if decoded { DECODED_PER_BYTE } else { 1 };
    // A gzipped body may inflate up to max_request_bytes: its room is
    // reserved for that size, not for what arrives on the wire.
    let gzipped = header_text(&parts.headers, "content-encoding")
        .is_some_and(|e| e.trim().eq_ignore_ascii_case("gzip"));
    let wanted = declared
        .filter(|_| !gzipped)
        .unwrap_or(shared.max_request_bytes)
        .saturating_mul(per_byte)
        .min(shared.budget_size);
    let _held = if wanted == 0 {
        None
    } else {
        let permits = u32::try_from(wanted).unwrap_or(u32::MAX);
        match Arc::clone(&shared.budget).acquire_many_owned(permits).await {
            Ok(permit) => Some(permit),
            Err(_) => return into_response(Reply::text(503, "Unavailable", Some("shutting down"))),
        }
    };
    // A body that stops coming would hold its room forever: the idle
    // timeout bounds the whole body as it bounds the headers.
    let collect = Limited::new(body, shared.max_request_bytes).collect();
    let collected = match shared.idle_timeout {
        Some(timeout) => match tokio::time::timeout(timeout, collect).await {
            Ok(collected) => collected,
            Err(_) => {
                return into_response(Reply::text(
                    408,
                    "Request timeout",
                    Some("the body did not arrive within idle_timeout_ms"),
                ))
            }
        },
        None => collect.await,
    };
    let body = match collected {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            if e.is::<http_body_util::LengthLimitError>() {
                shared.refused_bodies.fetch_add(1, Ordering::SeqCst);
                return into_response(too_large(shared.max_request_bytes));
            }
            return into_response(Reply::bad_request(&format!(
                "the request body could not be read: {e}"
            )));
        }
    };
    let body = if gzipped {
        match gunzip(&body, shared.max_request_bytes) {
            Ok(Some(body)) => body,
            Ok(None) => {
                shared.refused_bodies.fetch_add(1, Ordering::SeqCst);
                return into_response(too_large(shared.max_request_bytes));
            }
            Err(e) => {
                return into_response(Reply::bad_request(&format!(
                    "the gzip body could not be inflated: {e}"
                )))
            }
        }
    } else {
        body
    };
    let headers = &parts.headers;
    let gzip_answer = header_text(headers, "accept-encoding").is_some_and(|e| accepts_gzip(&e));
    // HEAD is answered as GET would be; hyper sends the headers (with the
    // body's Content-Length) and leaves the body out.
    let method = match parts.method.as_str() {
        "HEAD" => "GET".to_string(),
        other => other.to_string(),
    };
    let request = Request {
        method,
        path: parts.uri.path().to_string(),
        query,
        accept: header_text(headers, "accept"),
        content_type: header_text(headers, "content-type"),
        host: header_text(headers, "host").or(Some(local)),
        x_row: headers.get("x-row").map(|v| v.as_bytes().to_vec()),
        x_column: headers.get("x-column").map(|v| v.as_bytes().to_vec()),
        x_timestamp: header_text(headers, "x-timestamp"),
        body,
    };
    // A client that leaves drops this future (hyper drops the call of a
    // connection that is gone): the guard then stops the call's scan work
    // at its next row.
    let control = CallControl::new().with_deadline(shared.scan_call_timeout);
    let cancel_on_drop = CancelOnDrop(Some(control.clone()));
    let patience = shared.answer_patience;
    // A read whose data is in memstores and the block cache is answered
    // here, without the blocking pool's hand-off; one that needs a file
    // goes to the pool (see `basalt::read_tier`).
    if is_read_only(&request) {
        if let Some((reply, room)) = control.run(|| {
            basalt::read_tier::memory_only(|| answer(&context, &request, gzip_answer, patience))
        }) {
            cancel_on_drop.disarm();
            return answer_response(reply, room);
        }
    }
    let work_shared = Arc::clone(shared);
    let work_control = control.clone();
    let work = move || {
        let out = work_control.run(|| answer(&context, &request, gzip_answer, patience));
        if work_control.is_cancelled() {
            work_shared.cancelled_calls.fetch_add(1, Ordering::SeqCst);
        }
        out
    };
    let (reply, room) = match tokio::task::spawn_blocking(work).await {
        Ok(answered) => answered,
        Err(e) => {
            tracing::error!(error = %e, "REST request handler failed");
            (
                Reply::text(500, "Internal server error", None),
                AnswerBytes::none(),
            )
        }
    };
    cancel_on_drop.disarm();
    answer_response(reply, room)
}

/// Cancels a call's work when dropped before [`CancelOnDrop::disarm`]:
/// the request future was dropped because its client left.
struct CancelOnDrop(Option<CallControl>);

impl CancelOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(control) = self.0.take() {
            control.cancel();
        }
    }
}

/// Room a read takes in the answer budget before it reads anything: a full
/// budget holds it back (and, after `patience`, answers 503) before it
/// builds more.
const FIRST_ROOM: usize = 64 * 1024;

/// Answers smaller than this are not counted in the answer budget while
/// they are written: a thousand connections' worth is a few megabytes.
const COUNTED_ANSWER_BYTES: usize = 16 * 1024;

/// Builds the reply with its room in the answer budget: reads take room
/// first and count what they build; the finished body then holds room for
/// its size until it is written.
fn answer(
    context: &Context,
    request: &Request,
    gzip_answer: bool,
    patience: Duration,
) -> (Reply, AnswerBytes) {
    let budget = basalt::guard::answer_budget();
    let room = if request.method == "GET" {
        match budget.take(FIRST_ROOM, patience) {
            Ok(room) => room,
            Err(full) => {
                return (
                    Reply::text(503, "Unavailable", Some(&full.to_string())),
                    AnswerBytes::none(),
                )
            }
        }
    } else {
        budget.force(0)
    };
    let (reply, mut room) = basalt::guard::with_answer_room(room, || handle(context, request));
    let reply = if gzip_answer {
        gzip_reply(reply)
    } else {
        reply
    };
    if reply.body.len() >= COUNTED_ANSWER_BYTES {
        room.resize(reply.body.len());
    } else {
        room = AnswerBytes::none();
    }
    (reply, room)
}

/// True for requests that only read and change nothing: every GET except
/// a scanner's (`/<table>/scanner/<id>` hands out the scanner's next rows),
/// so a memory-only attempt whose answer is dropped can run again.
fn is_read_only(request: &Request) -> bool {
    request.method == "GET" && request.path.split('/').nth(2) != Some("scanner")
}

/// Inflates a gzip body; `None` when it inflates past `max` bytes (a
/// small body must not become a large one unchecked).
fn gunzip(body: &[u8], max: usize) -> std::io::Result<Option<Bytes>> {
    use std::io::Read;
    let mut out = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    flate2::read::GzDecoder::new(body)
        .take(limit)
        .read_to_end(&mut out)?;
    if out.len() > max {
        return Ok(None);
    }
    Ok(Some(Bytes::from(out)))
}

/// Whether `Accept-Encoding` takes gzip (`gzip` or `*`, with a q above 0).
fn accepts_gzip(header: &str) -> bool {
    header.split(',').any(|part| {
        let mut pieces = part.split(';');
        let coding = pieces.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = pieces
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
            .map_or(1.0, |(_, v)| v.trim().parse::<f32>().unwrap_or(0.0));
        (coding == "gzip" || coding == "*") && q > 0.0
    })
}

/// The reply's body gzipped, with `Content-Encoding`; an empty body, or
/// one gzip fails on, goes as it is.
fn gzip_reply(mut reply: Reply) -> Reply {
    use std::io::Write;
    if reply.body.is_empty() {
        return reply;
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let compressed = encoder
        .write_all(&reply.body)
        .and_then(|()| encoder.finish());
    if let Ok(compressed) = compressed {
        reply.body = compressed;
        reply.headers.push(("Content-Encoding", "gzip".into()));
        reply.headers.push(("Vary", "Accept-Encoding".into()));
    }
    reply
}

fn too_large(max: usize) -> Reply {
    Reply::text(
        413,
        "Request entity too large",
        Some(&format!(
            "the body is larger than max_request_bytes ({max})"
        )),
    )
}

fn into_response(reply: Reply) -> http::Response {
    answer_response(reply, AnswerBytes::none())
}

/// The response carrying `reply`, its body holding `room` until written.
fn answer_response(reply: Reply, room: AnswerBytes) -> http::Response {
    let mut response = hyper::Response::new(AnswerBody::new(reply.body, room));
    *response.status_mut() = hyper::StatusCode::from_u16(reply.status)
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    if let Some(content_type) = reply.content_type {
        headers.insert(
            hyper::header::CONTENT_TYPE,
            HeaderValue::from_static(content_type),
        );
    }
    for (name, value) in reply.headers {
        // Values come from the server's own text (base64, numbers, paths
        // it encoded); one that is not a valid header is left out.
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.append(name, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, path: &str) -> Request {
        Request {
            method: method.to_string(),
            path: path.to_string(),
            query: None,
            accept: None,
            content_type: None,
            host: None,
            x_row: None,
            x_column: None,
            x_timestamp: None,
            body: Bytes::new(),
        }
    }

    #[test]
    fn only_gets_other_than_a_scanners_next_rows_are_tried_in_memory() {
        assert!(is_read_only(&request("GET", "/t/row1/cf:q")));
        assert!(is_read_only(&request("GET", "/t/schema")));
        assert!(is_read_only(&request("GET", "/namespaces/ns/tables")));
        assert!(!is_read_only(&request("GET", "/t/scanner/1234")));
        assert!(!is_read_only(&request("PUT", "/t/row1/cf:q")));
        assert!(!is_read_only(&request("DELETE", "/t/row1")));
        assert!(!is_read_only(&request("POST", "/t/scanner")));
    }
}
