//! Writer fencing: which process may write a data set on shared storage.
//!
//! When the data lives on object storage, two processes with different
//! data directories can open the same data (a paused server and the one
//! that replaced it). Every opening takes a new **epoch**, higher than any
//! before it (claimed by creating its own log, see [`crate::wal::object`]).
//! The newer owner *fences* everything the older one could still write:
//! its write-ahead log (by creating the log's next object itself) and every
//! store manifest (by committing a new version that records the new epoch).
//! A stale writer learns it is fenced when one of its create-if-absent
//! writes collides with a fence; the [`Fence`] it shares between its log
//! and its stores then *trips*, and from that moment every read and write
//! of every region fails with [`Error::Fenced`].
//!
//! The protocol and its invariants are in `docs/object-storage.md`
//! ("Fencing"); each invariant is also stated beside the code enforcing it.

use std::sync::OnceLock;

use basalt_types::{Error, Result};

/// This process's epoch, and whether a newer owner has fenced it. Shared
/// (`Arc`) by the write-ahead log and every store.
#[derive(Debug)]
pub struct Fence {
    epoch: u64,
    /// Set once, at the first collision: the newer epoch (0 when the
    /// collision did not say) and what collided.
    tripped: OnceLock<(u64, String)>,
}

impl Fence {
    /// A fence for a process that opened the data at `epoch`.
    pub fn new(epoch: u64) -> Fence {
        Fence {
            epoch,
            tripped: OnceLock::new(),
        }
    }

    /// The epoch this process opened the data at.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Fails with [`Error::Fenced`] once the fence has tripped.
    pub fn check(&self) -> Result<()> {
        match self.tripped.get() {
            None => Ok(()),
            Some((epoch, what)) => Err(self.error(*epoch, what)),
        }
    }

    /// True once a newer owner has fenced this process.
    pub fn is_tripped(&self) -> bool {
        self.tripped.get().is_some()
    }

    /// Records that a newer owner (at `newer_epoch`, 0 if unknown) fenced
    /// this process, as `what` showed, and returns the error to report. The
    /// first trip wins; it is logged once.
    pub fn trip(&self, newer_epoch: u64, what: impl Into<String>) -> Error {
        let what = what.into();
        let mut first = false;
        let (epoch, what) = self.tripped.get_or_init(|| {
            first = true;
            (newer_epoch, what)
        });
        if first {
            tracing::error!(
                own_epoch = self.epoch,
                newer_epoch = *epoch,
                cause = %what,
                "fenced: another process opened this data; every read and write is refused from now on"
            );
        }
        self.error(*epoch, what)
    }

    fn error(&self, epoch: u64, what: &str) -> Error {
        Error::Fenced {
            epoch,
            message: format!(
                "this process opened it at epoch {} and serves nothing more ({what})",
                self.epoch
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_passes_until_it_trips_and_then_always_fails_naming_the_first_cause() {
        let fence = Fence::new(3);
        assert!(fence.check().is_ok());
        let err = fence.trip(5, "log object 7 exists");
        assert!(matches!(err, Error::Fenced { epoch: 5, .. }));
        fence.trip(9, "a later collision");
        let Err(Error::Fenced { epoch, message }) = fence.check() else {
            panic!("a tripped fence must refuse");
        };
        assert_eq!(epoch, 5);
        assert!(message.contains("log object 7 exists"), "{message}");
        assert!(message.contains("epoch 3"), "{message}");
    }
}
