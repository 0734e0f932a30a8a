//! SIGTERM and SIGINT as a request to stop cleanly.
//!
//! The handlers are installed when a command starts, before anything
//! listens: a process that announces it serves must already treat SIGTERM
//! as "stop cleanly". Installed only when the command waits for it, a
//! SIGTERM sent right after the announcement found the default action and
//! killed the process (exit by signal, nothing flushed).

use tokio::runtime::Runtime;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// Both stop signals, caught from [`StopSignals::install`] on; a signal
/// that arrives before [`StopSignals::wait`] makes the wait return at once.
pub struct StopSignals {
    // A runtime of its own: the servers' runtimes may not exist yet when
    // the handlers go in, and waiting must not depend on which gateways run.
    runtime: Runtime,
    terminate: Signal,
    interrupt: Signal,
}

impl StopSignals {
    pub fn install() -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .map_err(|e| format!("cannot install the signal handlers: {e}"))?;
        let (terminate, interrupt) = {
            let _context = runtime.enter();
            let terminate = signal(SignalKind::terminate());
            let interrupt = signal(SignalKind::interrupt());
            (terminate, interrupt)
        };
        let terminate =
            terminate.map_err(|e| format!("cannot install the SIGTERM handler: {e}"))?;
        let interrupt = interrupt.map_err(|e| format!("cannot install the SIGINT handler: {e}"))?;
        Ok(StopSignals {
            runtime,
            terminate,
            interrupt,
        })
    }

    /// Blocks until SIGTERM or SIGINT (or returns at once when one came
    /// since [`StopSignals::install`]).
    pub fn wait(self) {
        let StopSignals {
            runtime,
            mut terminate,
            mut interrupt,
        } = self;
        runtime.block_on(async {
            tokio::select! {
                _ = terminate.recv() => tracing::info!("SIGTERM received, shutting down"),
                _ = interrupt.recv() => tracing::info!("SIGINT received, shutting down"),
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_sent_before_the_wait_is_not_lost() {
        let signals = StopSignals::install().unwrap();
        // SIGINT to ourselves: with the handler installed this is caught,
        // not fatal, and the wait below returns instead of blocking.
        let status = std::process::Command::new("kill")
            .args(["-INT", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        signals.wait();
    }
}
