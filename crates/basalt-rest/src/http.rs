//! The HTTP/1.1 serving loop Basalt's HTTP servers share: the REST
//! gateway and the info server (`basalt-info`) differ in what they answer,
//! not in how they accept and bound connections.
//!
//! 1. [`accept_loop`] accepts connections until shutdown; past the
//!    [`ConnectionGate`]'s limit a connection is accepted and closed at once
//!    (counted and logged), so a flood costs a descriptor for an instant,
//!    never a task.
//! 2. A listener with TLS takes each connection through
//!    `basalt::tls::accept` (the handshake counts against the first
//!    request's deadline; a failed one is summarized in the refusal log),
//!    and hyper serves the TLS stream as it would the socket.
//!    Each connection runs on hyper's HTTP/1.1 server with a header read
//!    timeout (a client that never finishes its headers is dropped), a
//!    first-request deadline (a connection that sends nothing gives its
//!    slot back in seconds) and a write timeout (a client that reads
//!    nothing of its answer is dropped, and the answer with it), and hands
//!    every request to the server's [`Handler`]. Answers go out in chunks
//!    of [`ANSWER_CHUNK`] bytes ([`AnswerBody`]), holding their room in the
//!    process's answer budget until the last chunk has left.
//!    Every answer carries the web security headers (`nosniff`, a CSP,
//!    frame refusal); a request naming a `Host` that is neither an IP
//!    literal nor an allowed name is refused (DNS rebinding), and a `POST`
//!    without a same-origin signal and with no or a form-like content type
//!    is refused (a cross-site form or bodyless POST must not change state).
//! 3. Shutdown lets each connection finish the request it is serving
//!    (hyper's graceful shutdown), then the loop waits for every
//!    connection task before it returns.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use basalt::guard::{AddressSlots, AnswerBytes, RefusalLog, Slot, SlotLimits, WriteTimeout};
use basalt::tls::{Refused, TlsServer};

/// What a server answers a request with.
pub type Handler = Arc<
    dyn Fn(hyper::Request<Incoming>) -> Pin<Box<dyn Future<Output = Response> + Send>>
        + Send
        + Sync,
>;

/// A response with its whole body.
pub type Response = hyper::Response<AnswerBody>;

/// Where a request came from, in its extensions: the peer's address (for
/// proxy-user host rules and audit lines) and whether it came over TLS
/// (a cookie set over HTTPS is marked `Secure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// The client's address.
    pub peer: std::net::SocketAddr,
    /// Whether the connection speaks TLS.
    pub tls: bool,
}

/// Largest piece of an answer handed to the connection at once. hyper
/// queues at most 16 pieces before it waits for the socket, so this bounds
/// what a connection holds outside the answer budget (256 KiB).
pub const ANSWER_CHUNK: usize = 16 * 1024;

/// An answer's bytes, handed out in pieces of at most [`ANSWER_CHUNK`]
/// (copies, so the whole answer is freed once the last piece has left),
/// holding its room in the answer budget until then or until the
/// connection is dropped.
#[derive(Debug, Default)]
pub struct AnswerBody {
    data: Bytes,
    sent: usize,
    room: AnswerBytes,
}

impl AnswerBody {
    /// A body of `data` holding `room` in the answer budget.
    pub fn new(data: impl Into<Bytes>, room: AnswerBytes) -> AnswerBody {
        AnswerBody {
            data: data.into(),
            sent: 0,
            room,
        }
    }
}

impl From<Bytes> for AnswerBody {
    fn from(data: Bytes) -> AnswerBody {
        AnswerBody::new(data, AnswerBytes::none())
    }
}

impl From<Vec<u8>> for AnswerBody {
    fn from(data: Vec<u8>) -> AnswerBody {
        AnswerBody::new(data, AnswerBytes::none())
    }
}

impl Body for AnswerBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let len = this.data.len();
        if this.sent >= len {
            this.room = AnswerBytes::none();
            return Poll::Ready(None);
        }
        let piece = if this.sent == 0 && len <= ANSWER_CHUNK {
            this.data.clone()
        } else {
            let end = len.min(this.sent + ANSWER_CHUNK);
            Bytes::copy_from_slice(&this.data[this.sent..end])
        };
        this.sent += piece.len();
        if this.sent >= len {
            // The last piece is with the connection: the answer is gone.
            this.data = Bytes::new();
            this.sent = 0;
            this.room = AnswerBytes::none();
        }
        Poll::Ready(Some(Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.sent >= self.data.len()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.len().saturating_sub(self.sent) as u64)
    }
}

/// Most bytes hyper buffers per connection: the longest request head, and
/// the answer pieces waiting for the socket.
pub const MAX_CONNECTION_BUFFER: usize = 64 * 1024;

/// The time limits of a server's connections.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnectionTimeouts {
    /// Time to send a request's headers, and so the longest a connection
    /// may sit idle between requests.
    pub header: Option<Duration>,
    /// Time a new connection has to start its first request.
    pub first_request: Option<Duration>,
    /// Time an answer may make no progress before its connection is
    /// dropped.
    pub write: Option<Duration>,
}

/// The open connections of one server and their limit.
#[derive(Debug)]
pub struct ConnectionGate {
    /// Names the server in log lines (`REST`, `info`).
    server: &'static str,
    open: AtomicUsize,
    refused: AtomicU64,
    /// Connections dropped for reading nothing of an answer.
    write_timeouts: AtomicU64,
    /// Connections closed for sending no request in time.
    first_request_timeouts: AtomicU64,
    /// Per-address limits with reserved slots, so one address flooding
    /// the server cannot lock every other client out.
    slots: AddressSlots,
    /// One summary line per interval instead of a WARN per refusal.
    refusals: RefusalLog,
    /// Host names (besides IP literals and the defaults) a request may
    /// name in `Host`.
    allowed_hosts: parking_lot::RwLock<Vec<String>>,
    /// False for a server none of whose requests change state (the web
    /// UI): its router answers a POST 405, so no cross-site check applies.
    accepts_writes: std::sync::atomic::AtomicBool,
}

/// The security headers every answer of an HTTP server carries: no MIME
/// sniffing of API answers, no framing (clickjacking), and a policy that
/// lets the UI's pages load only their own resources (and `data:` images:
/// the pages' empty favicon is one, so browsers ask for no /favicon.ico).
pub const SECURITY_HEADERS: [(&str, &str); 4] = [
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    (
        "content-security-policy",
        "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
         frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    ("referrer-policy", "no-referrer"),
];

/// The names a `Host` header may carry without being configured.
const DEFAULT_ALLOWED_HOSTS: [&str; 1] = ["localhost"];

impl ConnectionGate {
    /// A gate admitting at most `max` connections at once (at least one).
    /// A tenth of them are kept for addresses holding none, so one
    /// address can take the rest but never lock others out (see
    /// [`ConnectionGate::with_limits`]).
    pub fn new(server: &'static str, max: usize) -> Arc<ConnectionGate> {
        let max = max.max(1);
        Self::with_limits(server, max, max, max / 10, &[])
    }

    /// A gate admitting `max` connections, at most `per_address` from one
    /// peer address, `reserved` of them only for addresses holding none;
    /// `allowed_hosts` are the host names (besides `localhost` and any IP
    /// literal) requests may name in `Host`.
    pub fn with_limits(
        server: &'static str,
        max: usize,
        per_address: usize,
        reserved: usize,
        allowed_hosts: &[String],
    ) -> Arc<ConnectionGate> {
        let max = max.max(1);
        Arc::new(ConnectionGate {
            server,
            open: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            write_timeouts: AtomicU64::new(0),
            first_request_timeouts: AtomicU64::new(0),
            slots: AddressSlots::new(SlotLimits {
                total: max,
                per_address,
                reserved,
            }),
            refusals: RefusalLog::new(server, Duration::from_secs(10)),
            allowed_hosts: parking_lot::RwLock::new(
                allowed_hosts
                    .iter()
                    .map(|h| h.to_ascii_lowercase())
                    .collect(),
            ),
            accepts_writes: std::sync::atomic::AtomicBool::new(true),
        })
    }

    /// The gate of an HTTP listener from its settings: one address may take
    /// every slot but the reserved ones (a tenth when not set), and the
    /// bind address is always an allowed `Host`.
    pub fn for_listener(
        server: &'static str,
        max_connections: usize,
        reserved: Option<usize>,
        allowed_hosts: &[String],
        bind: &str,
    ) -> Arc<ConnectionGate> {
        let hosts: Vec<String> = allowed_hosts
            .iter()
            .cloned()
            .chain(std::iter::once(bind.to_string()))
            .collect();
        Self::with_limits(
            server,
            max_connections,
            max_connections,
            reserved.unwrap_or(max_connections / 10),
            &hosts,
        )
    }

    /// Marks the server as one whose requests never change state.
    pub fn serves_no_writes(&self) {
        self.accepts_writes.store(false, Ordering::SeqCst);
    }

    /// Allows one more host name in `Host` (the server's configured name).
    pub fn allow_host(&self, name: &str) {
        self.allowed_hosts.write().push(name.to_ascii_lowercase());
    }

    /// True when a request may name `host` (a `Host` header value, port
    /// included or not): an IP literal (DNS rebinding needs a name), or a
    /// name that is allowed.
    pub fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host).to_ascii_lowercase();
        if name.parse::<std::net::IpAddr>().is_ok() {
            return true;
        }
        DEFAULT_ALLOWED_HOSTS.contains(&name.as_str()) || self.allowed_hosts.read().contains(&name)
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Connections closed at once for being over the limit.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }

    /// Connections dropped because their client read nothing of an answer
    /// for the write timeout.
    pub fn write_timeouts(&self) -> u64 {
        self.write_timeouts.load(Ordering::SeqCst)
    }

    /// Connections closed for starting no request by the first-request
    /// deadline.
    pub fn first_request_timeouts(&self) -> u64 {
        self.first_request_timeouts.load(Ordering::SeqCst)
    }
}

/// A listener's TLS from its settings (`None` without); files that do not
/// load are an `InvalidInput` error naming the file.
pub fn load_tls(
    settings: Option<&basalt::tls::TlsSettings>,
) -> std::io::Result<Option<Arc<TlsServer>>> {
    settings
        .map(|s| TlsServer::load(s.clone()).map(Arc::new))
        .transpose()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))
}

/// One admitted connection; gives its place back when its task ends.
struct Admitted(Arc<ConnectionGate>, #[allow(dead_code)] Slot);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Resolves once shutdown is asked for (at once if it already was).
pub async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    // A closed channel means the server is gone: stop too.
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// Steps 1 and 3 of the module docs: serves `listener` until `shutdown`
/// says true, then waits for its connections to finish.
/// `tls`: the listener's TLS, when it has some.
pub async fn accept_loop(
    listener: TcpListener,
    gate: Arc<ConnectionGate>,
    timeouts: ConnectionTimeouts,
    tls: Option<Arc<TlsServer>>,
    handler: Handler,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let slot = match gate.slots.acquire(peer.ip()) {
                        Ok(slot) => slot,
                        Err(refusal) => {
                            gate.refused.fetch_add(1, Ordering::SeqCst);
                            gate.refusals.refused(refusal.reason());
                            drop(stream);
                            continue;
                        }
                    };
                    gate.open.fetch_add(1, Ordering::SeqCst);
                    let admitted = Admitted(Arc::clone(&gate), slot);
                    connections.spawn(serve_connection(
                        stream,
                        peer,
                        admitted,
                        timeouts,
                        tls.clone(),
                        Arc::clone(&handler),
                        shutdown.clone(),
                    ));
                }
                Err(e) => {
                    // Out of descriptors or a connection reset before
                    // accept: pause instead of spinning.
                    tracing::warn!(error = %e, server = gate.server, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = stopped(&mut shutdown) => break,
        }
    }
    while connections.join_next().await.is_some() {}
}

/// Step 2 of the module docs.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    admitted: Admitted,
    timeouts: ConnectionTimeouts,
    tls: Option<Arc<TlsServer>>,
    handler: Handler,
    mut shutdown: watch::Receiver<bool>,
) {
    // The first request's deadline runs from the accept: a TLS handshake
    // counts against it.
    let first_deadline = timeouts
        .first_request
        .map(|t| tokio::time::Instant::now() + t);
    let handshake = first_deadline.map_or(
        Duration::from_millis(basalt::guard::DEFAULT_FIRST_REQUEST_TIMEOUT_MS),
        |deadline| deadline.saturating_duration_since(tokio::time::Instant::now()),
    );
    let stream = match basalt::tls::accept(tls.as_deref(), stream, handshake).await {
        Ok(stream) => stream,
        Err(refused) => {
            if matches!(refused, Refused::TimedOut) {
                admitted
                    .0
                    .first_request_timeouts
                    .fetch_add(1, Ordering::SeqCst);
            }
            admitted.0.refusals.refused(refused.reason());
            tracing::debug!(error = %refused, server = admitted.0.server, "connection refused");
            return;
        }
    };
    let info = ConnectionInfo {
        peer,
        tls: stream.is_tls(),
    };
    let gate = Arc::clone(&admitted.0);
    let counters = Arc::clone(&admitted.0);
    let asked = Arc::new(AtomicBool::new(false));
    let asked_by_service = Arc::clone(&asked);
    let service = service_fn(move |mut request: hyper::Request<Incoming>| {
        asked_by_service.store(true, Ordering::SeqCst);
        request.extensions_mut().insert(info);
        let refusal = refuse_unsafe(&gate, request.headers(), request.method());
        let answer = refusal.is_none().then(|| handler(request));
        async move {
            let mut response = match (refusal, answer) {
                (Some(refusal), _) => refusal,
                (None, Some(answer)) => answer.await,
                (None, None) => plain(hyper::StatusCode::INTERNAL_SERVER_ERROR, "no answer"),
            };
            let headers = response.headers_mut();
            for (name, value) in SECURITY_HEADERS {
                headers.insert(name, hyper::header::HeaderValue::from_static(value));
            }
            Ok::<_, Infallible>(response)
        }
    });
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new());
    // hyper's own buffer per connection (request heads, answer pieces
    // queued for the socket) sits outside the answer budget: kept small.
    builder.max_buf_size(MAX_CONNECTION_BUFFER);
    if let Some(timeout) = timeouts.header {
        builder.header_read_timeout(timeout);
    }
    let io = TokioIo::new(WriteTimeout::new(stream, timeouts.write));
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    // The first request must have arrived by its deadline (a request under
    // way counts: its headers have their own timeout).
    let first_request = async {
        match first_deadline {
            Some(deadline) => {
                tokio::time::sleep_until(deadline).await;
                if asked.load(Ordering::SeqCst) {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(e) = result {
                if is_write_timeout(&e) {
                    counters.write_timeouts.fetch_add(1, Ordering::SeqCst);
                }
                tracing::debug!(error = %e, server = admitted.0.server, "connection ended with an error");
            }
        }
        _ = first_request => {
            counters.first_request_timeouts.fetch_add(1, Ordering::SeqCst);
            tracing::debug!(server = admitted.0.server, "closing a connection that sent no request within first_request_timeout_ms");
        }
        _ = stopped(&mut shutdown) => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
    drop(admitted);
}

/// True when hyper's error came from the write timeout.
fn is_write_timeout(e: &hyper::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return io.kind() == std::io::ErrorKind::TimedOut;
        }
        source = cause.source();
    }
    false
}

/// The host part of a `Host` value: `name`, `name:port`, `[v6]:port`.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            name
        }
        _ => host,
    }
}

fn plain(status: hyper::StatusCode, message: &str) -> Response {
    let mut response = hyper::Response::new(AnswerBody::from(Bytes::from(format!("{message}\n"))));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain"),
    );
    response
}

/// True when a request carries what every browser adds and a page's script
/// cannot take away: the `Sec-Fetch-*` metadata (every current browser),
/// an `Origin` (every cross-origin or state-changing request), or a
/// `Mozilla/` user agent (every browser, older ones too).
fn from_a_browser(headers: &hyper::HeaderMap) -> bool {
    headers.contains_key("sec-fetch-site")
        || headers.contains_key("sec-fetch-mode")
        || headers.contains_key("sec-fetch-dest")
        || headers.contains_key(hyper::header::ORIGIN)
        || headers
            .get(hyper::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|agent| agent.trim_start().starts_with("Mozilla/"))
}

/// The content types a cross-site HTML form (or a "simple" cross-origin
/// request) can send without a CORS preflight.
const FORM_TYPES: [&str; 3] = [
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "text/plain",
];

/// Refuses a request naming a host that is not allowed (DNS rebinding) or
/// a state-changing request a browser could have sent cross-site: `None`
/// when it may be served.
pub fn refuse_unsafe(
    gate: &ConnectionGate,
    headers: &hyper::HeaderMap,
    method: &hyper::Method,
) -> Option<Response> {
    let text = |name: hyper::header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    // DNS rebinding is an attack through a browser: only a browser's
    // request is held to the allowed names, so API clients reaching the
    // server by any name (a container's service name, a proxy's upstream)
    // keep working, while a page that rebinds its own name to this server
    // is refused.
    if let Some(host) = text(hyper::header::HOST).filter(|_| from_a_browser(headers)) {
        if !gate.host_allowed(host) {
            return Some(plain(
                hyper::StatusCode::MISDIRECTED_REQUEST,
                &format!(
                    "Host '{}' is not one of this server's names; add it to allowed_hosts",
                    host_name(host)
                ),
            ));
        }
    }
    if *method == hyper::Method::GET
        || *method == hyper::Method::HEAD
        || *method == hyper::Method::OPTIONS
    {
        return None;
    }
    let fetch_site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .map(str::trim);
    if let Some(site) = fetch_site {
        if !matches!(site, "same-origin" | "none") {
            return Some(plain(
                hyper::StatusCode::FORBIDDEN,
                &format!("cross-site {method} refused (Sec-Fetch-Site: {site})"),
            ));
        }
    }
    let origin = text(hyper::header::ORIGIN);
    if let Some(origin) = origin {
        let origin_host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
        let same =
            text(hyper::header::HOST).is_some_and(|host| host.eq_ignore_ascii_case(origin_host));
        if !same {
            return Some(plain(
                hyper::StatusCode::FORBIDDEN,
                &format!("cross-origin {method} refused (Origin: {origin})"),
            ));
        }
    }
    let same_origin_signal = fetch_site.is_some() || origin.is_some();
    let accepts_writes = gate.accepts_writes.load(Ordering::SeqCst);
    if *method == hyper::Method::POST && !same_origin_signal && accepts_writes {
        // PUT and DELETE cannot be sent cross-site without a preflight this
        // server never grants; a POST can, as a form or bodyless.
        let content_type = text(hyper::header::CONTENT_TYPE)
            .map(|t| t.split(';').next().unwrap_or(t).trim().to_ascii_lowercase());
        match content_type {
            None => {
                return Some(plain(
                    hyper::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "POST needs an explicit Content-Type (or a same-origin Origin)",
                ))
            }
            Some(t) if FORM_TYPES.contains(&t.as_str()) => {
                return Some(plain(
                    hyper::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    &format!("POST with Content-Type {t} could be a cross-site form; refused without a same-origin Origin"),
                ))
            }
            Some(_) => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The web UI's pages carry an empty `data:` favicon; a policy without
    /// `img-src data:` made every page log a console error (found by the
    /// web UI suite in headless Chromium).
    #[test]
    fn the_content_security_policy_lets_pages_show_data_images_and_nothing_foreign() {
        let (_, policy) = SECURITY_HEADERS
            .iter()
            .find(|(name, _)| *name == "content-security-policy")
            .unwrap();
        assert!(policy.contains("img-src 'self' data:"), "{policy}");
        assert!(policy.contains("default-src 'self'"), "{policy}");
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> hyper::HeaderMap {
        let mut map = hyper::HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, hyper::header::HeaderValue::from_static(value));
        }
        map
    }

    fn status(
        gate: &ConnectionGate,
        method: hyper::Method,
        pairs: &[(&'static str, &'static str)],
    ) -> u16 {
        refuse_unsafe(gate, &headers(pairs), &method).map_or(200, |r| r.status().as_u16())
    }

    #[test]
    fn a_rebinding_host_name_is_refused_and_ip_literals_pass() {
        let gate = ConnectionGate::with_limits("test", 8, 8, 0, &["db.example".to_string()]);
        for signal in [
            ("sec-fetch-site", "same-origin"),
            ("origin", "http://evil.example:8080"),
            ("user-agent", "Mozilla/5.0 (X11; Linux x86_64)"),
        ] {
            assert_eq!(
                status(
                    &gate,
                    hyper::Method::GET,
                    &[("host", "evil.example:8080"), signal]
                ),
                421,
                "{signal:?}"
            );
        }
        // An API client (no browser's signal) may reach the server by any
        // name: rebinding needs a browser.
        assert_eq!(
            status(
                &gate,
                hyper::Method::GET,
                &[("host", "db.internal:8080"), ("user-agent", "curl/8.5.0")]
            ),
            200
        );
        for host in [
            "127.0.0.1:8080",
            "[::1]:8080",
            "localhost",
            "DB.example:1",
            "10.1.2.3",
        ] {
            assert!(gate.host_allowed(host), "{host}");
        }
    }

    #[test]
    fn a_cross_site_bodyless_post_cannot_change_state() {
        let gate = ConnectionGate::new("test", 8);
        let local = ("host", "127.0.0.1:8080");
        assert_eq!(status(&gate, hyper::Method::POST, &[local]), 415);
        assert_eq!(
            status(
                &gate,
                hyper::Method::POST,
                &[local, ("content-type", "text/plain")]
            ),
            415
        );
        assert_eq!(
            status(
                &gate,
                hyper::Method::POST,
                &[local, ("origin", "http://evil.example")]
            ),
            403
        );
        assert_eq!(
            status(
                &gate,
                hyper::Method::POST,
                &[local, ("sec-fetch-site", "cross-site")]
            ),
            403
        );
        assert_eq!(
            status(
                &gate,
                hyper::Method::POST,
                &[local, ("content-type", "application/json")]
            ),
            200
        );
        assert_eq!(
            status(
                &gate,
                hyper::Method::POST,
                &[local, ("origin", "http://127.0.0.1:8080")]
            ),
            200
        );
        assert_eq!(status(&gate, hyper::Method::DELETE, &[local]), 200);
    }
}
