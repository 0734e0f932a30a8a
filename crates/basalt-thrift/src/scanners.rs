//! Open scanners: ids handed to clients, who owns them, and their leases.
//!
//! Scanner ids are global (as in HBase, any connection may use an id it
//! learned), but each scanner remembers the connection that opened it so a
//! connection that goes away releases its scanners at once. Scanners nobody
//! closes expire after the lease (HBase: 60 s) without being used.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// One open scanner.
#[derive(Debug)]
pub(crate) struct OpenScanner {
    /// The connection that opened it.
    pub owner: u64,
    /// Results carry `sortedColumns` instead of the column map.
    pub sorted: bool,
    /// The engine's scanner; `None` once it has run out of rows. Held
    /// locked for the duration of one fetch, which also keeps the lease
    /// sweeper away from a scanner in use.
    pub state: Mutex<Option<basalt::Scanner>>,
    last_used: Mutex<Instant>,
}

/// Every open scanner of a server.
#[derive(Debug)]
pub(crate) struct Scanners {
    lease: Duration,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: i32,
    open: HashMap<i32, Arc<OpenScanner>>,
}

impl Scanners {
    pub(crate) fn new(lease: Duration) -> Self {
        Scanners {
            lease,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Registers a scanner and returns its id.
    pub(crate) fn insert(&self, owner: u64, scanner: basalt::Scanner, sorted: bool) -> i32 {
        let entry = Arc::new(OpenScanner {
            owner,
            sorted,
            state: Mutex::new(Some(scanner)),
            last_used: Mutex::new(Instant::now()),
        });
        let mut inner = self.inner.lock();
        // Ids wrap around after 2^31 scanners; skip any still open.
        let mut id = inner.next_id;
        while inner.open.contains_key(&id) {
            id = id.checked_add(1).unwrap_or(0);
        }
        inner.next_id = id.checked_add(1).unwrap_or(0);
        inner.open.insert(id, entry);
        id
    }

    /// The scanner with this id, its lease renewed.
    pub(crate) fn get(&self, id: i32) -> Option<Arc<OpenScanner>> {
        let entry = self.inner.lock().open.get(&id).cloned()?;
        *entry.last_used.lock() = Instant::now();
        Some(entry)
    }

    /// Closes a scanner; false when the id is unknown.
    pub(crate) fn remove(&self, id: i32) -> bool {
        self.inner.lock().open.remove(&id).is_some()
    }

    /// Closes every scanner a connection opened; returns how many.
    pub(crate) fn remove_owned_by(&self, owner: u64) -> usize {
        let mut inner = self.inner.lock();
        let before = inner.open.len();
        inner.open.retain(|_, s| s.owner != owner);
        before - inner.open.len()
    }

    /// Closes the scanners unused for longer than the lease (and not in use
    /// right now); returns how many.
    pub(crate) fn expire(&self, now: Instant) -> usize {
        let mut inner = self.inner.lock();
        let before = inner.open.len();
        let lease = self.lease;
        inner.open.retain(|_, s| {
            let idle = now.saturating_duration_since(*s.last_used.lock());
            idle < lease || s.state.try_lock().is_none()
        });
        before - inner.open.len()
    }

    /// How many scanners are open.
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().open.len()
    }

    /// Closes everything (server shutdown).
    pub(crate) fn clear(&self) {
        self.inner.lock().open.clear();
    }
}
