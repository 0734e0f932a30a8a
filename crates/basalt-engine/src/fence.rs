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
//! In a cluster, each *opening of a region* also gets its own epoch (a
//! region epoch, allocated by the master), and the region's stores fence
//! their manifests with it: a [`Fence::child`] of the server's fence. A
//! newer opening of that one region elsewhere trips only the child; the
//! server's log being fenced trips the parent, and so every region of the
//! server.
//!
//! The protocol and its invariants are in `docs/object-storage.md`
//! ("Fencing"); each invariant is also stated beside the code enforcing it.

use std::sync::{Arc, OnceLock};

use basalt_types::{Error, Result};

/// This process's epoch (or one region opening's), and whether a newer
/// owner has fenced it. Shared (`Arc`) by the write-ahead log and every
/// store.
#[derive(Debug)]
pub struct Fence {
    epoch: u64,
    /// Set once, at the first collision: the newer epoch (0 when the
    /// collision did not say) and what collided.
    tripped: OnceLock<(u64, String)>,
    /// For a region's fence: the fence of the server hosting it. Checked
    /// too, never tripped through the child.
    parent: Option<Arc<Fence>>,
}

impl Fence {
    /// A fence for a process that opened the data at `epoch`.
    pub fn new(epoch: u64) -> Fence {
        Fence {
            epoch,
            tripped: OnceLock::new(),
            parent: None,
        }
    }

    /// A fence for one opening of a region at region epoch `epoch`, on the
    /// server whose fence is `parent`. It refuses once either has tripped:
    /// the server's log fenced ends every region it hosts (their writes
    /// could never become durable), while a newer opening of this region
    /// elsewhere (a manifest collision in one of its stores) trips only
    /// this fence, and the server's other regions go on.
    pub fn child(epoch: u64, parent: Arc<Fence>) -> Fence {
        Fence {
            epoch,
            tripped: OnceLock::new(),
            parent: Some(parent),
        }
    }

    /// The epoch this process (or region opening) opened the data at.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Fails with [`Error::Fenced`] once this fence, or its parent, has
    /// tripped (this fence's own cause first).
    pub fn check(&self) -> Result<()> {
        match self.tripped.get() {
            None => match &self.parent {
                None => Ok(()),
                Some(parent) => parent.check(),
            },
            Some((epoch, what)) => Err(self.error(*epoch, what)),
        }
    }

    /// True once a newer owner has fenced this process (or, for a region's
    /// fence, this opening of the region or its server).
    pub fn is_tripped(&self) -> bool {
        self.tripped.get().is_some() || self.parent.as_ref().is_some_and(|p| p.is_tripped())
    }

    /// Records that a newer owner (at `newer_epoch`, 0 if unknown) fenced
    /// this process (a region's fence: this opening of the region only),
    /// as `what` showed, and returns the error to report. The first trip
    /// wins; it is logged once.
    pub fn trip(&self, newer_epoch: u64, what: impl Into<String>) -> Error {
        let what = what.into();
        let mut first = false;
        let (epoch, what) = self.tripped.get_or_init(|| {
            first = true;
            (newer_epoch, what)
        });
        if first {
            if self.parent.is_some() {
                tracing::error!(
                    own_epoch = self.epoch,
                    newer_epoch = *epoch,
                    cause = %what,
                    "fenced: the region was opened again elsewhere; its reads and writes are refused here from now on"
                );
            } else {
                tracing::error!(
                    own_epoch = self.epoch,
                    newer_epoch = *epoch,
                    cause = %what,
                    "fenced: another process opened this data; every read and write is refused from now on"
                );
            }
        }
        self.error(*epoch, what)
    }

    fn error(&self, epoch: u64, what: &str) -> Error {
        let who = if self.parent.is_some() {
            "this server opened the region"
        } else {
            "this process opened it"
        };
        Error::Fenced {
            epoch,
            message: format!(
                "{who} at epoch {} and serves nothing more ({what})",
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

    #[test]
    fn a_region_fence_refuses_once_its_server_fence_trips() {
        let server = Arc::new(Fence::new(4));
        let region = Fence::child(10, Arc::clone(&server));
        assert_eq!(region.epoch(), 10);
        assert!(region.check().is_ok());
        server.trip(6, "log object 3 exists");
        assert!(region.is_tripped());
        let Err(Error::Fenced { epoch, message }) = region.check() else {
            panic!("a region of a fenced server must refuse");
        };
        assert_eq!(epoch, 6);
        assert!(message.contains("log object 3 exists"), "{message}");
    }

    #[test]
    fn tripping_a_region_fence_leaves_its_server_and_sibling_regions_serving() {
        let server = Arc::new(Fence::new(4));
        let moved = Fence::child(10, Arc::clone(&server));
        let sibling = Fence::child(11, Arc::clone(&server));
        let err = moved.trip(12, "manifest version 3 was committed at epoch 12");
        let Error::Fenced { epoch: 12, message } = err else {
            panic!("the trip reports the newer epoch");
        };
        assert!(
            message.contains("opened the region at epoch 10"),
            "{message}"
        );
        assert!(moved.check().is_err());
        assert!(server.check().is_ok());
        assert!(!server.is_tripped());
        assert!(sibling.check().is_ok());
    }

    #[test]
    fn a_tripped_region_fence_names_its_own_cause_before_its_servers() {
        let server = Arc::new(Fence::new(4));
        let region = Fence::child(10, Arc::clone(&server));
        region.trip(12, "the region's own collision");
        server.trip(6, "the log's collision");
        let Err(Error::Fenced { epoch, message }) = region.check() else {
            panic!("must refuse");
        };
        assert_eq!(epoch, 12);
        assert!(message.contains("the region's own collision"), "{message}");
    }
}
