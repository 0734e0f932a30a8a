//! Time, from a source tests can control.
//!
//! Every timestamp the engine makes (server-side cell timestamps, TTL
//! expiry) comes from a [`Clock`], so tests can move time deliberately
//! instead of sleeping.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of "now" in milliseconds since the epoch.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time in milliseconds since the epoch.
    fn now_millis(&self) -> i64;
}

/// The machine's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            // A clock set before 1970 is a broken machine; 0 keeps timestamps valid.
            .unwrap_or(0)
    }
}

/// A clock that only moves when told to; clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock showing `now_millis`.
    pub fn new(now_millis: i64) -> Self {
        ManualClock {
            now: Arc::new(AtomicI64::new(now_millis)),
        }
    }

    /// Sets the time.
    pub fn set(&self, now_millis: i64) {
        self.now.store(now_millis, Ordering::SeqCst);
    }

    /// Moves the time forward by `millis`.
    pub fn advance(&self, millis: i64) {
        self.now.fetch_add(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(1000);
        let shared = c.clone();
        assert_eq!(c.now_millis(), 1000);
        shared.advance(5);
        assert_eq!(c.now_millis(), 1005);
        c.set(7);
        assert_eq!(shared.now_millis(), 7);
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_millis() > 1_577_836_800_000);
    }
}
