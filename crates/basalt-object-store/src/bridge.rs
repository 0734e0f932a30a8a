//! Calling async `object_store` code from the synchronous
//! [`FileStore`](basalt_engine::fs::FileStore) interface, from any thread.
//!
//! The database calls its file store from plain threads, from the worker
//! threads of the gateways' tokio runtimes and from their `spawn_blocking`
//! threads. `Handle::block_on` would panic (or starve the caller's runtime)
//! on a runtime thread, so the bridge never blocks on a future itself:
//!
//! 1. the future is wrapped in the call's time bound (`tokio::time::timeout`)
//!    and spawned on the bridge's own small multi-threaded runtime;
//! 2. the calling thread waits on a std channel for the outcome, which works
//!    the same whether or not that thread belongs to some runtime;
//! 3. the wait itself is bounded too (the call's bound plus a grace period),
//!    so even a wedged runtime cannot hang a caller.
//!
//! The runtime's threads never call back into a `FileStore`, so a call can
//! never wait on the thread it occupies. Dropping the bridge shuts its
//! runtime down in the background: the last handle of a database may well
//! be dropped on a runtime thread, where a blocking shutdown would panic.

use std::future::Future;
use std::sync::mpsc;
use std::time::Duration;

use tokio::runtime::{Builder, Handle, Runtime};

/// Extra time the caller waits past a call's own bound before giving up on
/// the runtime itself (it should have answered with a timeout by then).
const GRACE: Duration = Duration::from_secs(5);

/// Why a bridged call produced no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupted {
    /// The call's time bound passed.
    TimedOut,
    /// The runtime is shutting down (the store is being dropped).
    ShutDown,
}

/// A dedicated runtime for one store's requests.
#[derive(Debug)]
pub(crate) struct Bridge {
    /// `None` once dropped (taken to shut it down without blocking).
    runtime: Option<Runtime>,
    handle: Handle,
}

impl Bridge {
    /// Starts a runtime with `threads` worker threads (at least one).
    pub(crate) fn new(threads: usize) -> std::io::Result<Bridge> {
        let runtime = Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("basalt-object-store")
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(Bridge {
            runtime: Some(runtime),
            handle,
        })
    }

    /// Runs `future` on the bridge's runtime and waits for it, at most
    /// `bound` (plus the grace period when the runtime does not answer).
    pub(crate) fn run<T, F>(&self, bound: Duration, future: F) -> Result<T, Interrupted>
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let outcome = tokio::time::timeout(bound, future)
                .await
                .map_err(|_| Interrupted::TimedOut);
            // The caller may have given up already; nothing to tell then.
            let _ = tx.send(outcome);
        });
        match rx.recv_timeout(bound.saturating_add(GRACE)) {
            Ok(outcome) => outcome,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(Interrupted::TimedOut),
            // The task was dropped unfinished: the runtime is going away.
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(Interrupted::ShutDown),
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_call_returns_its_value_from_a_plain_thread() {
        let bridge = Bridge::new(1).unwrap();
        assert_eq!(bridge.run(Duration::from_secs(30), async { 7 }), Ok(7));
    }

    #[test]
    fn a_call_works_from_inside_another_runtimes_worker_and_blocking_threads() {
        let bridge = std::sync::Arc::new(Bridge::new(1).unwrap());
        let outer = Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let b = std::sync::Arc::clone(&bridge);
        let on_worker = outer.block_on(async move {
            // A worker thread of `outer`: block_on here would panic.
            let worker = tokio::spawn(async move { b.run(Duration::from_secs(30), async { 1 }) });
            worker.await.unwrap()
        });
        assert_eq!(on_worker, Ok(1));
        let b = std::sync::Arc::clone(&bridge);
        let on_blocking = outer.block_on(async move {
            tokio::task::spawn_blocking(move || b.run(Duration::from_secs(30), async { 2 }))
                .await
                .unwrap()
        });
        assert_eq!(on_blocking, Ok(2));
        // Dropping the bridge on a runtime thread must not panic either.
        outer.block_on(async move { drop(bridge) });
    }

    #[test]
    fn a_call_that_never_finishes_times_out() {
        let bridge = Bridge::new(1).unwrap();
        let outcome = bridge.run(Duration::from_millis(50), std::future::pending::<()>());
        assert_eq!(outcome, Err(Interrupted::TimedOut));
    }
}
