//! The HTTP/1.1 serving loop Basalt's HTTP servers share: the REST
//! gateway and the info server (`basalt-info`) differ in what they answer,
//! not in how they accept and bound connections.
//!
//! 1. [`accept_loop`] accepts connections until shutdown; past the
//!    [`ConnectionGate`]'s limit a connection is accepted and closed at once
//!    (counted and logged), so a flood costs a descriptor for an instant,
//!    never a task.
//! 2. Each connection runs on hyper's HTTP/1.1 server with a header read
//!    timeout (a client that never finishes its headers is dropped) and
//!    hands every request to the server's [`Handler`].
//! 3. Shutdown lets each connection finish the request it is serving
//!    (hyper's graceful shutdown), then the loop waits for every
//!    connection task before it returns.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// What a server answers a request with.
pub type Handler = Arc<
    dyn Fn(hyper::Request<Incoming>) -> Pin<Box<dyn Future<Output = Response> + Send>>
        + Send
        + Sync,
>;

/// A response with its whole body.
pub type Response = hyper::Response<Full<Bytes>>;

/// The open connections of one server and their limit.
#[derive(Debug)]
pub struct ConnectionGate {
    /// Names the server in log lines (`REST`, `info`).
    server: &'static str,
    max: usize,
    open: AtomicUsize,
    refused: AtomicU64,
}

impl ConnectionGate {
    /// A gate admitting at most `max` connections at once (at least one).
    pub fn new(server: &'static str, max: usize) -> Arc<ConnectionGate> {
        Arc::new(ConnectionGate {
            server,
            max: max.max(1),
            open: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Connections closed at once for being over the limit.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }
}

/// One admitted connection; gives its place back when its task ends.
struct Admitted(Arc<ConnectionGate>);

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
pub async fn accept_loop(
    listener: TcpListener,
    gate: Arc<ConnectionGate>,
    header_timeout: Option<Duration>,
    handler: Handler,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if gate.open.load(Ordering::SeqCst) >= gate.max {
                        gate.refused.fetch_add(1, Ordering::SeqCst);
                        tracing::warn!(%peer, max = gate.max, server = gate.server, "connection refused: max_connections reached");
                        drop(stream);
                        continue;
                    }
                    gate.open.fetch_add(1, Ordering::SeqCst);
                    let admitted = Admitted(Arc::clone(&gate));
                    connections.spawn(serve_connection(
                        stream,
                        admitted,
                        header_timeout,
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
    admitted: Admitted,
    header_timeout: Option<Duration>,
    handler: Handler,
    mut shutdown: watch::Receiver<bool>,
) {
    let service = service_fn(move |request| {
        let answer = handler(request);
        async move { Ok::<_, Infallible>(answer.await) }
    });
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new());
    if let Some(timeout) = header_timeout {
        builder.header_read_timeout(timeout);
    }
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(e) = result {
                tracing::debug!(error = %e, server = admitted.0.server, "connection ended with an error");
            }
        }
        _ = stopped(&mut shutdown) => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
    drop(admitted);
}
