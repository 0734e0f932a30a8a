//! Stopping a read call's work from outside it: a client that leaves, or a
//! call that has read for its whole time budget.
//!
//! Why: a scan whose filter rejects row after row can read a whole table
//! inside one call, and without this it goes on after its client has gone
//! (HBase checks the caller's connection and the call's time limit between
//! rows for the same reason).
//!
//! Contract:
//! 1. A gateway makes one [`CallControl`] per call (sharing its connection's
//!    cancel flag, see [`CallControl::with_deadline`]) and runs the call's
//!    work inside [`CallControl::run`], on whatever thread it runs.
//! 2. Scanners call [`check`] before each row they examine; it fails with
//!    [`Error::Cancelled`] once the control is cancelled and with
//!    [`Error::TimedOut`] once its deadline has passed. Outside a control it
//!    always passes (embedded use and background work are never stopped).
//! 3. A scanner stopped this way is between rows: its state is intact, and
//!    a later call may continue it.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_types::{Error, Result};

/// Rows between two clock readings of [`check`] (the cancel flag is read
/// at every row; reading the clock that often would cost more than a row).
const ROWS_PER_CLOCK_CHECK: u32 = 64;

/// The cancel flag and deadline of one call.
#[derive(Debug, Clone, Default)]
pub struct CallControl {
    cancelled: Arc<AtomicBool>,
    deadline: Option<(Instant, Duration)>,
}

impl CallControl {
    /// A control with nothing set: never cancelled until [`cancel`] is
    /// called, no deadline.
    ///
    /// [`cancel`]: CallControl::cancel
    pub fn new() -> CallControl {
        CallControl::default()
    }

    /// A control sharing this one's cancel flag (a connection's, say), with
    /// a deadline `budget` from now (`None`: no deadline).
    pub fn with_deadline(&self, budget: Option<Duration>) -> CallControl {
        CallControl {
            cancelled: Arc::clone(&self.cancelled),
            deadline: budget.map(|b| (Instant::now() + b, b)),
        }
    }

    /// Stops the work of every call sharing this control's flag at its next
    /// row.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }

    /// True once [`CallControl::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Runs `f` with this control in force on the current thread (the
    /// previous one, if any, is restored afterwards, also on a panic).
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        let previous = CURRENT.with(|c| c.replace(Some(self.clone())));
        let _restore = Restore(Some(previous));
        f()
    }

    fn check(&self, read_clock: bool) -> Result<()> {
        if self.is_cancelled() {
            return Err(Error::Cancelled(
                "the client went away; the server stopped its scan".into(),
            ));
        }
        if let Some((deadline, budget)) = self.deadline {
            if read_clock && Instant::now() >= deadline {
                return Err(Error::TimedOut(format!(
                    "the scan read for {} ms without filling its answer (scan_call_timeout_ms); \
                     narrow it with a row range or a more selective start, or raise the limit",
                    budget.as_millis()
                )));
            }
        }
        Ok(())
    }
}

thread_local! {
    static CURRENT: RefCell<Option<CallControl>> = const { RefCell::new(None) };
    static ROWS: Cell<u32> = const { Cell::new(0) };
}

/// Puts the previous control back when dropped.
struct Restore(Option<Option<CallControl>>);

impl Drop for Restore {
    fn drop(&mut self) {
        if let Some(previous) = self.0.take() {
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
}

/// Called by scanners before each row they examine (see the module docs).
pub fn check() -> Result<()> {
    let read_clock = ROWS.with(|r| {
        let n = r.get().wrapping_add(1);
        r.set(n);
        n % ROWS_PER_CLOCK_CHECK == 0
    });
    CURRENT.with(|c| match c.borrow().as_ref() {
        Some(control) => control.check(read_clock),
        None => Ok(()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt_types::ErrorKind;

    #[test]
    fn work_outside_a_control_is_never_stopped() {
        for _ in 0..1000 {
            assert!(check().is_ok());
        }
    }

    #[test]
    fn a_cancelled_call_stops_at_its_next_row() {
        let connection = CallControl::new();
        let call = connection.with_deadline(None);
        call.run(|| {
            assert!(check().is_ok());
            connection.cancel();
            let error = check().unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Cancelled);
        });
        assert!(check().is_ok(), "the control ends with the call");
    }

    #[test]
    fn a_call_past_its_deadline_times_out_naming_the_limit() {
        let call = CallControl::new().with_deadline(Some(Duration::ZERO));
        let error = call.run(|| {
            (0..=ROWS_PER_CLOCK_CHECK)
                .find_map(|_| check().err())
                .unwrap()
        });
        assert_eq!(error.kind(), ErrorKind::TimedOut);
        assert!(
            error.to_string().contains("scan_call_timeout_ms"),
            "{error}"
        );
    }
}
