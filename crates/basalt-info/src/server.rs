//! The HTTP/1.1 server: hyper on tokio through the serving loop the REST
//! gateway uses too (`basalt_rest::http`), each page built on the blocking
//! pool (building one reads every region's counters and, for the heatmap,
//! every region's key load).
//!
//! What clients can make the server hold is bounded: connections
//! (`max_connections`; one more is accepted and closed at once), the time
//! to send a request's headers (`idle_timeout_ms`) and a first request
//! (`first_request_timeout_ms`), and the time a page may wait for a client
//! that reads nothing (`write_timeout_ms`). Requests have no
//! body worth reading: only GET and HEAD are served, and a body sent
//! anyway is never read into memory. With `tls` (`[info.tls]`) the UI is
//! served over HTTPS (HBase's `hbase.ssl.enabled`).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::HeaderValue;
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::sync::watch;

use basalt::tls::{TlsServer, TlsSettings};
use basalt::Database;
use basalt_rest::http::{self, AnswerBody, ConnectionGate, ConnectionTimeouts, Handler};
use basalt_rest::kerberos::HttpKerberos;

use crate::routes::{handle, Context, Reply};

/// Settings of the info server (the `[info]` table of the config file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InfoConfig {
    /// Serve the info server at all (`--no-info` turns it off). Default
    /// true.
    pub enabled: bool,
    /// Address to listen on. Default `127.0.0.1`.
    pub bind: String,
    /// Port. Default 16010 (HBase's master UI; `basalt regionserver` uses
    /// 16030, HBase's region server UI). 0 picks a free port.
    pub port: u16,
    /// When `port` is taken, listen on a free port instead (with a
    /// warning naming it) rather than refusing to start: the UI is for
    /// looking, and a second server on one machine should not fail for
    /// it. `--info-port` on the command line turns this off (a port asked
    /// for by number must be that port). HBase's
    /// `hbase.*.info.port.auto`. Default true.
    pub port_auto: bool,
    /// Async worker threads (connections, HTTP parsing). Default 1.
    pub worker_threads: usize,
    /// Most pages being built at once. Default 4.
    pub max_blocking_threads: usize,
    /// Most connections open at once; one more is accepted and closed at
    /// once. Default 64.
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
    /// Milliseconds a client may take to send a request's headers (and so
    /// the longest a connection may sit idle between requests); 0 never
    /// times out. Default 30 000.
    pub idle_timeout_ms: u64,
    /// Milliseconds a new connection has to start its first request; 0:
    /// `idle_timeout_ms`. Default 10 000.
    pub first_request_timeout_ms: u64,
    /// Milliseconds a page may make no progress to its client before the
    /// connection is dropped; 0 never. Default 30 000.
    pub write_timeout_ms: u64,
    /// Key-axis rows of a heatmap when the request names none. Default 64.
    pub heatmap_rows: usize,
    /// Most key-axis rows a request may ask for (`?rows=`); more is a 400.
    /// Default 512.
    pub max_heatmap_rows: usize,
    /// HTTPS on the port (`[info.tls]`, docs/security.md). Default none.
    pub tls: Option<TlsSettings>,
}

impl Default for InfoConfig {
    fn default() -> Self {
        InfoConfig {
            enabled: true,
            bind: "127.0.0.1".into(),
            port: DEFAULT_PORT,
            port_auto: true,
            worker_threads: 1,
            max_blocking_threads: 4,
            max_connections: 64,
            allowed_hosts: Vec::new(),
            reserved_connections: None,
            idle_timeout_ms: 30_000,
            first_request_timeout_ms: basalt::guard::DEFAULT_FIRST_REQUEST_TIMEOUT_MS,
            write_timeout_ms: basalt::guard::DEFAULT_WRITE_TIMEOUT_MS,
            heatmap_rows: 64,
            max_heatmap_rows: 512,
            tls: None,
        }
    }
}

/// The info port of `basalt serve` and `basalt master` (HBase's master UI).
pub const DEFAULT_PORT: u16 = 16010;
/// The info port of `basalt regionserver` (HBase's region server UI).
pub const DEFAULT_REGION_SERVER_PORT: u16 = 16030;

#[derive(Debug)]
struct Shared {
    context: Arc<Context>,
    connections: Arc<ConnectionGate>,
    idle_timeout: Option<Duration>,
    /// With `[security] authentication = "kerberos"`, every page, the JSON
    /// API and `/metrics` need an authenticated client, as HBase's info
    /// server protects all of them with `hbase.security.authentication.ui
    /// = kerberos`; any authenticated user may look.
    kerberos: Option<HttpKerberos>,
}

/// The port, bound but not yet serving: [`InfoServer::listen`] then
/// [`Bound::serve`] finds a taken port before a data directory is opened.
#[derive(Debug)]
pub struct Bound {
    runtime: tokio::runtime::Runtime,
    listener: TcpListener,
    config: InfoConfig,
    /// The TLS files, loaded before the port is bound so unusable ones
    /// fail the start before a data directory is opened.
    tls: Option<Arc<TlsServer>>,
}

impl Bound {
    /// The address the port is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Starts serving `db`; returns once the server accepts connections.
    pub fn serve(self, db: Database) -> io::Result<InfoServer> {
        InfoServer::serve_bound(self, db, Vec::new())
    }

    /// [`Bound::serve`], also showing numbers the process keeps outside
    /// the database (a gateway's own counters; see [`crate::extra`]).
    pub fn serve_with(
        self,
        db: Database,
        extras: Vec<crate::ExtraMetrics>,
    ) -> io::Result<InfoServer> {
        InfoServer::serve_bound(self, db, extras)
    }
}

/// A running info server. It serves a database it does not own: stopping
/// it leaves the database open for its owner to close.
#[derive(Debug)]
pub struct InfoServer {
    runtime: Option<tokio::runtime::Runtime>,
    local_addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    accept_loop: Option<tokio::task::JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl InfoServer {
    /// Binds the configured port and serves `db` on it.
    pub fn bind(db: Database, config: &InfoConfig) -> io::Result<InfoServer> {
        InfoServer::listen(config)?.serve(db)
    }

    /// Binds the configured port (and builds the runtime that will serve
    /// it) without serving anything yet. A taken port with `port_auto`
    /// set falls back to a free one. Loads the TLS files, if any.
    pub fn listen(config: &InfoConfig) -> io::Result<Bound> {
        let tls = http::load_tls(config.tls.as_ref())?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.worker_threads.max(1))
            .max_blocking_threads(config.max_blocking_threads.max(1))
            .thread_name("basalt-info")
            .enable_io()
            .enable_time()
            .build()?;
        let bind = config.bind.as_str();
        let listener = match runtime.block_on(TcpListener::bind((bind, config.port))) {
            Ok(listener) => listener,
            Err(e) if e.kind() == io::ErrorKind::AddrInUse && config.port_auto => {
                let listener = runtime.block_on(TcpListener::bind((bind, 0)))?;
                tracing::warn!(
                    port = config.port,
                    instead = listener.local_addr()?.port(),
                    "info port taken; the info server listens on a free port instead (port_auto)"
                );
                listener
            }
            Err(e) => return Err(e),
        };
        Ok(Bound {
            runtime,
            listener,
            config: config.clone(),
            tls,
        })
    }

    fn serve_bound(
        bound: Bound,
        db: Database,
        extras: Vec<crate::ExtraMetrics>,
    ) -> io::Result<InfoServer> {
        let Bound {
            runtime,
            listener,
            config,
            tls,
        } = bound;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let local_addr = listener.local_addr()?;
        let kerberos = HttpKerberos::for_security(db.security(), "info")?;
        let shared = Arc::new(Shared {
            context: Arc::new(Context {
                extras: crate::extra::Extras(extras),
                ..Context::new(db, &config)
            }),
            connections: ConnectionGate::for_listener(
                "info",
                config.max_connections,
                config.reserved_connections,
                &config.allowed_hosts,
                &config.bind,
            ),
            idle_timeout: (config.idle_timeout_ms > 0)
                .then(|| Duration::from_millis(config.idle_timeout_ms)),
            kerberos,
        });
        // The UI and its API only read: a POST is answered 405 by the router.
        shared.connections.serves_no_writes();
        let (shutdown, shutdown_rx) = watch::channel(false);
        let handler: Handler = {
            let shared = Arc::clone(&shared);
            Arc::new(move |request| Box::pin(respond(Arc::clone(&shared), request)))
        };
        let millis = |ms: u64| (ms > 0).then(|| Duration::from_millis(ms));
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
        // `local-cluster` reads the port back from this line (`address=`).
        tracing::info!(address = %local_addr, scheme, "info server listening");
        Ok(InfoServer {
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

    /// Connections currently open.
    pub fn open_connections(&self) -> usize {
        self.shared.connections.open()
    }

    /// Connections refused for being over `max_connections`.
    pub fn refused_connections(&self) -> u64 {
        self.shared.connections.refused()
    }

    /// Stops accepting, lets requests in flight answer and closes every
    /// connection. The database stays open.
    pub fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let (Some(runtime), Some(accept_loop)) = (self.runtime.take(), self.accept_loop.take()) {
            if let Err(e) = runtime.block_on(accept_loop) {
                tracing::warn!(error = %e, "info server accept loop ended abnormally");
            }
            runtime.shutdown_timeout(Duration::from_secs(5));
        }
        tracing::info!("info server stopped");
    }
}

async fn respond(shared: Arc<Shared>, request: hyper::Request<Incoming>) -> http::Response {
    let (parts, _body) = request.into_parts();
    let headers = match &shared.kerberos {
        Some(kerberos) => match kerberos.authenticate(&parts).await {
            Ok(identity) => identity.headers,
            Err(refusal) => return refusal,
        },
        None => Vec::new(),
    };
    // HEAD is answered as GET would be; hyper sends the headers (with the
    // body's Content-Length) and leaves the body out.
    let method = match parts.method.as_str() {
        "HEAD" => "GET".to_string(),
        other => other.to_string(),
    };
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().map(str::to_string);
    let context = Arc::clone(&shared.context);
    let answer = move || handle(&context, &method, &path, query.as_deref());
    let reply = match tokio::task::spawn_blocking(answer).await {
        Ok(reply) => reply,
        Err(e) => {
            tracing::error!(error = %e, "info page handler failed");
            Reply::text(500, "the page could not be built")
        }
    };
    let mut response = into_response(reply);
    // The mutual-authentication token and the cookie of a Negotiate
    // exchange.
    basalt_rest::kerberos::add_headers(&mut response, &headers);
    response
}

fn into_response(reply: Reply) -> http::Response {
    let mut response = hyper::Response::new(AnswerBody::from(Bytes::from(reply.body)));
    *response.status_mut() = hyper::StatusCode::from_u16(reply.status)
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static(reply.content_type),
    );
    // Every page is computed from live counters: never cache one.
    headers.insert(
        hyper::header::CACHE_CONTROL,
        HeaderValue::from_static("no-store"),
    );
    if reply.status == 405 {
        headers.insert(hyper::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    response
}
