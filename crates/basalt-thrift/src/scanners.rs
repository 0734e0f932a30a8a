//! Open scanners: ids handed to clients, who owns them, and their leases.
//!
//! Scanner ids are random and bound to the connection that opened them:
//! another connection that learns or guesses an id is told it is invalid,
//! and a connection that goes away releases its scanners at once. Scanners
//! nobody closes expire after the lease (HBase: 60 s) without being used.

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

impl OpenScanner {
    /// The next rows with cells (see [`take_rows`]). Both gateways'
    /// "next rows" calls read through this.
    pub(crate) fn next_rows(
        &self,
        rows: usize,
        limits: AnswerLimits,
    ) -> Result<Vec<basalt::RowResult>, basalt::Error> {
        take_rows(&mut self.state.lock(), rows, limits)
    }
}

/// How large one answer of rows may grow.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AnswerLimits {
    /// Soft cap on the cell bytes of one answer (`max_answer_bytes`, and at
    /// most half the frame limit): fewer rows than asked come back rather
    /// than a reply over it.
    pub max_bytes: usize,
    /// How long an answer waits for room in the process's answer budget
    /// before the call fails as busy.
    pub patience: Duration,
}

/// Counts a row's share of the answer being built in the call's answer
/// room (see `basalt::guard::count_answer`); returns the row's bytes, what
/// `max_answer_bytes` counts.
pub(crate) fn count_row(result: &basalt::RowResult) -> usize {
    let bytes = result
        .cells
        .iter()
        .map(|c| c.value.len() + c.qualifier.len() + c.family.len() + 16)
        .sum::<usize>();
    basalt::guard::count_answer(basalt::guard::answer_estimate(bytes, result.cells.len()));
    bytes
}

/// Before a read of several rows: room in the answer budget, waiting while
/// the budget is full (as a scanner answer does before its first row). The
/// rows are then answered whole, each counted.
pub(crate) fn room_for_rows(limits: AnswerLimits) -> Result<(), basalt::Error> {
    basalt::guard::take_answer_room(FIRST_ROOM, limits.patience)
        .map_err(|full| basalt::Error::TimedOut(full.to_string()))
}

/// Room an answer takes in the answer budget before its first row is read:
/// enough for an ordinary answer, so a full budget holds the call back
/// before it reads anything.
const FIRST_ROOM: usize = 64 * 1024;

/// The next rows with cells of `state`'s scanner, at most `rows` of them
/// and stopping once about `limits.max_bytes` of cells are collected (so a
/// reply stays under the frame limit), or once the process's answer budget
/// is full and some rows are collected; fewer (or none) once the scanner
/// runs out, which (as an error does) leaves `state` empty. A call stopped
/// by its time budget answers the rows it has, or fails with nothing,
/// leaving the scanner where it stopped. Registered scanners and Thrift2's
/// one-call `getScannerResults` share it.
pub(crate) fn take_rows(
    state: &mut Option<basalt::Scanner>,
    rows: usize,
    limits: AnswerLimits,
) -> Result<Vec<basalt::RowResult>, basalt::Error> {
    let budget = basalt::guard::answer_budget();
    // Held in the call's room while the answer is built, encoded and
    // written (the server holds the room until then).
    basalt::guard::take_answer_room(FIRST_ROOM, limits.patience)
        .map_err(|full| basalt::Error::TimedOut(full.to_string()))?;
    let mut out = Vec::new();
    let mut bytes = 0usize;
    while out.len() < rows && bytes < limits.max_bytes {
        if !out.is_empty() && budget.in_use() >= budget.total() {
            break;
        }
        let Some(scanner) = state.as_mut() else {
            break;
        };
        match scanner.next() {
            Some(Ok(result)) => {
                bytes += count_row(&result);
                if !result.is_empty() {
                    out.push(result);
                }
            }
            Some(Err(e)) if e.kind() == basalt::ErrorKind::TimedOut && !out.is_empty() => break,
            // Stopped between rows: the scanner may go on later.
            Some(Err(e))
                if matches!(
                    e.kind(),
                    basalt::ErrorKind::TimedOut | basalt::ErrorKind::Cancelled
                ) =>
            {
                return Err(e)
            }
            Some(Err(e)) => {
                *state = None;
                return Err(e);
            }
            // Exhausted: later calls answer with no rows.
            None => *state = None,
        }
    }
    Ok(out)
}

/// Why a scanner could not be registered: which cap it hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The connection holds this many already.
    Connection(usize),
    /// The server holds this many already.
    Server(usize),
}

/// Every open scanner of a server.
#[derive(Debug)]
pub(crate) struct Scanners {
    lease: Duration,
    /// Most scanners one connection may hold open: each holds engine state,
    /// so a client must not be able to open them without limit.
    per_connection: usize,
    /// Most scanners open on the server at once: the per-connection cap
    /// alone lets many connections together hold gigabytes.
    total: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    open: HashMap<i32, Arc<OpenScanner>>,
    /// Open scanners per owning connection.
    owned: HashMap<u64, usize>,
}

impl Inner {
    fn forget(&mut self, owner: u64) {
        if let Some(n) = self.owned.get_mut(&owner) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.owned.remove(&owner);
            }
        }
    }

    fn retain(&mut self, mut keep: impl FnMut(&OpenScanner) -> bool) -> usize {
        let before = self.open.len();
        let mut dropped = Vec::new();
        self.open.retain(|_, s| {
            let kept = keep(s);
            if !kept {
                dropped.push(s.owner);
            }
            kept
        });
        for owner in dropped {
            self.forget(owner);
        }
        before - self.open.len()
    }
}

impl Refused {
    /// What the client is told; `close` is the service's method that
    /// closes a scanner.
    pub(crate) fn message(self, close: &str) -> String {
        match self {
            Refused::Connection(limit) => format!(
                "too many open scanners on this connection (limit {limit}, \
                 max_scanners_per_connection); close some ({close})"
            ),
            Refused::Server(limit) => format!(
                "too many open scanners on the server (limit {limit}, max_scanners); \
                 close some ({close}) or wait for unused ones to expire"
            ),
        }
    }
}

impl Scanners {
    pub(crate) fn new(lease: Duration, per_connection: usize, total: usize) -> Self {
        Scanners {
            lease,
            per_connection,
            total,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Registers a scanner and returns its id; refused when the connection
    /// or the server already holds as many as it may.
    pub(crate) fn insert(
        &self,
        owner: u64,
        scanner: basalt::Scanner,
        sorted: bool,
    ) -> Result<i32, Refused> {
        let entry = Arc::new(OpenScanner {
            owner,
            sorted,
            state: Mutex::new(Some(scanner)),
            last_used: Mutex::new(Instant::now()),
        });
        let mut inner = self.inner.lock();
        if inner.open.len() >= self.total {
            return Err(Refused::Server(self.total));
        }
        let owned = inner.owned.entry(owner).or_insert(0);
        if *owned >= self.per_connection {
            return Err(Refused::Connection(self.per_connection));
        }
        *owned += 1;
        // Random ids (not sequential): a client cannot guess another's,
        // and `get` refuses an id from any connection but its owner.
        let mut id = basalt::guard::random_scanner_id_i32();
        while inner.open.contains_key(&id) {
            id = basalt::guard::random_scanner_id_i32();
        }
        inner.open.insert(id, entry);
        Ok(id)
    }

    /// The scanner with this id, its lease renewed; `None` when it is
    /// unknown or another connection than `owner` opened it.
    pub(crate) fn get(&self, id: i32, owner: u64) -> Option<Arc<OpenScanner>> {
        let entry = self
            .inner
            .lock()
            .open
            .get(&id)
            .filter(|s| s.owner == owner)
            .cloned()?;
        *entry.last_used.lock() = Instant::now();
        Some(entry)
    }

    /// Closes a scanner; false when the id is unknown or another
    /// connection than `owner` opened it.
    pub(crate) fn remove(&self, id: i32, owner: u64) -> bool {
        let mut inner = self.inner.lock();
        if inner.open.get(&id).is_none_or(|s| s.owner != owner) {
            return false;
        }
        match inner.open.remove(&id) {
            Some(s) => {
                inner.forget(s.owner);
                true
            }
            None => false,
        }
    }

    /// Closes every scanner a connection opened; returns how many.
    pub(crate) fn remove_owned_by(&self, owner: u64) -> usize {
        self.inner.lock().retain(|s| s.owner != owner)
    }

    /// Closes the scanners unused for longer than the lease (and not in use
    /// right now); returns how many.
    pub(crate) fn expire(&self, now: Instant) -> usize {
        let lease = self.lease;
        self.inner.lock().retain(|s| {
            let idle = now.saturating_duration_since(*s.last_used.lock());
            idle < lease || s.state.try_lock().is_none()
        })
    }

    /// How many scanners are open.
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().open.len()
    }

    /// Closes everything (server shutdown).
    pub(crate) fn clear(&self) {
        let mut inner = self.inner.lock();
        inner.open.clear();
        inner.owned.clear();
    }
}
