//! The one table of open scanners every gateway keeps (Thrift1, Thrift2,
//! REST, native RPC, and region calls between servers): ids, owners,
//! leases, limits, reaping and closing. A gateway only chooses its id type
//! and what each scanner carries between calls (the payload `T`: the
//! engine's scanner plus the gateway's own state, such as native RPC's
//! call sequence or REST's batch size), and encodes the table's answers in
//! its wire form.
//!
//! - Ids are random ([`ScannerId`]): a client cannot guess another's. A new
//!   id is never one that is open or was closed less than a lease ago, so a
//!   late call for a closed scanner cannot reach a new one.
//! - A scanner belongs to its [`Owner`]: the connection that opened it
//!   (Thrift, native RPC), whose closing releases it, or anyone (a REST
//!   scanner is a URL; a region call comes on any pooled connection). A
//!   caller that is not the owner is told the id is unknown.
//! - A scanner not used for a lease expires: a lookup refuses it, and
//!   [`ScannerTable::reap`] (run every quarter lease by the gateway,
//!   [`ScannerTable::reap_until_stopped`]) drops it. A scanner in a call
//!   (its state locked) never expires, and its lease starts again when the
//!   call ends.
//! - Limits ([`ScannerLimits`]): scanners open on the server, and per
//!   connection. A full table first drops expired scanners, then refuses
//!   ([`Refused`], which names the limit).

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};
use tokio::sync::watch;

use basalt_engine::Clock;

/// A scanner id of one wire form, drawn at random.
pub trait ScannerId: Clone + Eq + Hash + fmt::Debug + Send + Sync + 'static {
    /// A new random id.
    fn random() -> Self;
}

/// Native RPC and region calls carry a 64-bit id. Never zero (region calls
/// answer 0 for "the scan has ended"), and below 2^52 so clients that hold
/// ids as doubles keep them exact; 52 random bits are not guessable in any
/// useful time.
impl ScannerId for u64 {
    fn random() -> u64 {
        (rand::random::<u64>() >> 12).max(1)
    }
}

/// Thrift1 and Thrift2 carry a 32-bit signed id: non-negative, since
/// clients read a negative one as an error. 31 bits can be enumerated, so
/// their scanners are also bound to their connection.
impl ScannerId for i32 {
    fn random() -> i32 {
        (rand::random::<u32>() >> 1) as i32
    }
}

/// REST hands a scanner out as a URL any connection may read (HBase's
/// design), so the id is its only secret: 128 random bits as 32 hex
/// digits, which nobody guesses and a restarted server does not hand out
/// again.
impl ScannerId for String {
    fn random() -> String {
        format!("{:032x}", rand::random::<u128>())
    }
}

/// Who may use a scanner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Owner {
    /// Only the connection with this id (a gateway's own numbering); the
    /// per-connection limit counts these.
    Connection(u64),
    /// Any caller that knows the id.
    Anyone,
}

/// The limits of one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScannerLimits {
    /// Scanners open at once on the server (`max_scanners`): each holds
    /// engine state, so clients together must not open them without end.
    pub max_open: usize,
    /// Scanners one connection may hold open
    /// (`max_scanners_per_connection`); `usize::MAX` for none of its own.
    pub max_per_connection: usize,
    /// How long a scanner lives without a call (`scanner_lease_ms`).
    pub lease: Duration,
}

/// Why a scanner was not opened: the limit it hit. Each gateway words the
/// refusal for its clients; [`Refused::message`] is the common wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The server holds `limit` scanners within their lease.
    Server {
        /// `max_scanners`.
        limit: usize,
    },
    /// The connection holds `limit` scanners.
    Connection {
        /// `max_scanners_per_connection`.
        limit: usize,
    },
}

impl Refused {
    /// The limit that was hit.
    pub fn limit(self) -> usize {
        match self {
            Refused::Server { limit } | Refused::Connection { limit } => limit,
        }
    }

    /// The refusal naming the limit and its configuration key; `close` is
    /// how the client closes a scanner (a method name, a request).
    pub fn message(self, close: &str) -> String {
        match self {
            Refused::Connection { limit } => format!(
                "too many open scanners on this connection (limit {limit}, \
                 max_scanners_per_connection); close some ({close})"
            ),
            Refused::Server { limit } => format!(
                "too many open scanners on the server (limit {limit}, max_scanners); \
                 close some ({close}) or wait for unused ones to expire"
            ),
        }
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message("close the scanner"))
    }
}

/// One open scanner: its owner, its state, its lease.
pub struct OpenScanner<T> {
    owner: Owner,
    /// Locked for the length of one call: a locked scanner is in use, and
    /// neither a lookup nor a reap expires it.
    state: Mutex<T>,
    /// When its lease started, on the table's clock.
    last_used: AtomicI64,
    clock: Arc<dyn Clock>,
}

impl<T> OpenScanner<T> {
    /// Who may use it.
    pub fn owner(&self) -> Owner {
        self.owner
    }

    /// Its state for one call; the lease starts again when the guard is
    /// dropped, so a call longer than the lease does not leave an expired
    /// scanner behind.
    pub fn lock(&self) -> ScannerGuard<'_, T> {
        ScannerGuard {
            state: self.state.lock(),
            scanner: self,
        }
    }

    fn renew(&self) {
        self.last_used
            .store(self.clock.now_millis(), Ordering::Relaxed);
    }

    /// Past its lease at `now` and not in a call.
    fn expired(&self, now: i64, lease_ms: i64) -> bool {
        now.saturating_sub(self.last_used.load(Ordering::Relaxed)) >= lease_ms
            && !self.state.is_locked()
    }
}

impl<T> fmt::Debug for OpenScanner<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenScanner")
            .field("owner", &self.owner)
            .field("in_use", &self.state.is_locked())
            .field("last_used", &self.last_used.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A scanner's state held for one call (see [`OpenScanner::lock`]).
pub struct ScannerGuard<'a, T> {
    state: MutexGuard<'a, T>,
    scanner: &'a OpenScanner<T>,
}

impl<T> fmt::Debug for ScannerGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScannerGuard")
            .field("owner", &self.scanner.owner)
            .finish_non_exhaustive()
    }
}

impl<T> Deref for ScannerGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.state
    }
}

impl<T> DerefMut for ScannerGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.state
    }
}

impl<T> Drop for ScannerGuard<'_, T> {
    fn drop(&mut self) {
        self.scanner.renew();
    }
}

/// Every open scanner of one gateway (see the module docs).
pub struct ScannerTable<I, T> {
    max_open: usize,
    max_per_connection: usize,
    /// Changeable while serving (region calls' lease is set per database).
    lease_ms: AtomicU64,
    clock: Arc<dyn Clock>,
    inner: Mutex<Inner<I, T>>,
}

struct Inner<I, T> {
    open: HashMap<I, Arc<OpenScanner<T>>>,
    /// Open scanners per owning connection.
    per_connection: HashMap<u64, usize>,
    /// Ids closed less than a lease ago, and when: a call on one is told so
    /// (native RPC answers it empty, as HBase does), and no new scanner
    /// gets the id.
    closed: HashMap<I, i64>,
}

impl<I: ScannerId, T> Inner<I, T> {
    /// Takes `id` out of the table, keeping the per-connection counts.
    fn take(&mut self, id: &I) -> Option<Arc<OpenScanner<T>>> {
        let scanner = self.open.remove(id)?;
        if let Owner::Connection(connection) = scanner.owner {
            if let Some(n) = self.per_connection.get_mut(&connection) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.per_connection.remove(&connection);
                }
            }
        }
        Some(scanner)
    }

    /// Takes out every scanner `drop` picks. The caller lets them go after
    /// releasing the table's lock: dropping a scanner ends engine work.
    fn take_where(
        &mut self,
        mut drop: impl FnMut(&OpenScanner<T>) -> bool,
    ) -> Vec<Arc<OpenScanner<T>>> {
        let ids: Vec<I> = self
            .open
            .iter()
            .filter(|(_, s)| drop(s))
            .map(|(id, _)| id.clone())
            .collect();
        ids.iter().filter_map(|id| self.take(id)).collect()
    }
}

impl<I: ScannerId, T> ScannerTable<I, T> {
    /// An empty table with `limits`, timed by the machine's monotonic
    /// clock (a wall clock set back would stretch every lease).
    pub fn new(limits: ScannerLimits) -> Self {
        Self::with_clock(limits, Arc::new(Monotonic::default()))
    }

    /// An empty table timed by `clock` (tests move a manual clock).
    pub fn with_clock(limits: ScannerLimits, clock: Arc<dyn Clock>) -> Self {
        ScannerTable {
            max_open: limits.max_open.max(1),
            max_per_connection: limits.max_per_connection.max(1),
            lease_ms: AtomicU64::new(millis(limits.lease)),
            clock,
            inner: Mutex::new(Inner {
                open: HashMap::new(),
                per_connection: HashMap::new(),
                closed: HashMap::new(),
            }),
        }
    }

    /// The lease.
    pub fn lease(&self) -> Duration {
        Duration::from_millis(self.lease_ms.load(Ordering::Relaxed))
    }

    /// Changes the lease of every scanner, open ones included.
    pub fn set_lease(&self, lease: Duration) {
        self.lease_ms.store(millis(lease), Ordering::Relaxed);
    }

    fn lease_ms(&self) -> i64 {
        i64::try_from(self.lease_ms.load(Ordering::Relaxed)).unwrap_or(i64::MAX)
    }

    /// Registers a scanner holding `state` for `owner`; answers its new id
    /// and the scanner. A full table first drops the scanners past their
    /// lease; still full, or the owner at its own limit, it refuses.
    pub fn open(&self, owner: Owner, state: T) -> Result<(I, Arc<OpenScanner<T>>), Refused> {
        let now = self.clock.now_millis();
        let lease = self.lease_ms();
        let mut inner = self.inner.lock();
        let expired = if inner.open.len() >= self.max_open {
            inner.take_where(|s| s.expired(now, lease))
        } else {
            Vec::new()
        };
        let refused = if inner.open.len() >= self.max_open {
            Some(Refused::Server {
                limit: self.max_open,
            })
        } else {
            match owner {
                Owner::Connection(c)
                    if inner.per_connection.get(&c).copied().unwrap_or(0)
                        >= self.max_per_connection =>
                {
                    Some(Refused::Connection {
                        limit: self.max_per_connection,
                    })
                }
                _ => None,
            }
        };
        if let Some(refused) = refused {
            drop(inner);
            drop(expired);
            return Err(refused);
        }
        let mut id = I::random();
        while inner.open.contains_key(&id) || inner.closed.contains_key(&id) {
            id = I::random();
        }
        let scanner = Arc::new(OpenScanner {
            owner,
            state: Mutex::new(state),
            last_used: AtomicI64::new(now),
            clock: Arc::clone(&self.clock),
        });
        inner.open.insert(id.clone(), Arc::clone(&scanner));
        if let Owner::Connection(c) = owner {
            *inner.per_connection.entry(c).or_insert(0) += 1;
        }
        drop(inner);
        drop(expired);
        Ok((id, scanner))
    }

    /// The scanner `id` for `caller`, its lease renewed; `None` when it was
    /// never opened, is closed, is past its lease (it is dropped then), or
    /// belongs to another owner (which keeps it).
    pub fn get<Q>(&self, id: &Q, caller: Owner) -> Option<Arc<OpenScanner<T>>>
    where
        I: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let now = self.clock.now_millis();
        let mut inner = self.inner.lock();
        let (key, scanner) = inner.open.get_key_value(id)?;
        if scanner.owner != caller {
            return None;
        }
        if scanner.expired(now, self.lease_ms()) {
            let key = key.clone();
            let expired = inner.take(&key);
            drop(inner);
            drop(expired);
            return None;
        }
        scanner.renew();
        Some(Arc::clone(scanner))
    }

    /// Closes scanner `id` for `caller`; false when there is none it owns.
    /// The id is remembered for a lease ([`ScannerTable::was_recently_closed`]).
    pub fn close<Q>(&self, id: &Q, caller: Owner) -> bool
    where
        I: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let now = self.clock.now_millis();
        let lease = self.lease_ms();
        let mut inner = self.inner.lock();
        let Some(key) = inner
            .open
            .get_key_value(id)
            .filter(|(_, s)| s.owner == caller)
            .map(|(key, _)| key.clone())
        else {
            return false;
        };
        let closed = inner.take(&key);
        // Bounded: past twice the table's size, entries older than a lease
        // go, and an id that finds no room is simply not remembered.
        if inner.closed.len() >= self.max_open {
            inner.closed.retain(|_, at| now.saturating_sub(*at) < lease);
        }
        if inner.closed.len() < self.max_open.saturating_mul(2) {
            inner.closed.insert(key, now);
        }
        drop(inner);
        drop(closed);
        true
    }

    /// True when scanner `id` was closed less than a lease ago.
    pub fn was_recently_closed<Q>(&self, id: &Q) -> bool
    where
        I: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let now = self.clock.now_millis();
        self.inner
            .lock()
            .closed
            .get(id)
            .is_some_and(|at| now.saturating_sub(*at) < self.lease_ms())
    }

    /// Closes every scanner the connection opened (it went away); answers
    /// how many.
    pub fn close_owned_by(&self, connection: u64) -> usize {
        let mut inner = self.inner.lock();
        if !inner.per_connection.contains_key(&connection) {
            return 0;
        }
        let owned = inner.take_where(|s| s.owner == Owner::Connection(connection));
        drop(inner);
        owned.len()
    }

    /// Drops every scanner past its lease and not in a call; answers how
    /// many.
    pub fn reap(&self) -> usize {
        let now = self.clock.now_millis();
        let lease = self.lease_ms();
        let mut inner = self.inner.lock();
        let expired = inner.take_where(|s| s.expired(now, lease));
        inner.closed.retain(|_, at| now.saturating_sub(*at) < lease);
        drop(inner);
        expired.len()
    }

    /// How often a gateway reaps: a quarter lease, between 5 ms and 5 s,
    /// so an abandoned scanner's engine state goes soon after its lease.
    pub fn reap_period(&self) -> Duration {
        (self.lease() / 4).clamp(Duration::from_millis(5), Duration::from_secs(5))
    }

    /// Reaps every [`ScannerTable::reap_period`] until `shutdown` says true
    /// (or its sender is gone). `gateway` names it in the log.
    async fn reap_until_stopped(&self, mut shutdown: watch::Receiver<bool>, gateway: &str) {
        let mut ticker = tokio::time::interval(self.reap_period());
        loop {
            tokio::select! {
                _ = ticker.tick() => {
                    let expired = self.reap();
                    if expired > 0 {
                        tracing::info!(expired, gateway, "scanners expired after their lease");
                    }
                }
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
        }
    }

    /// Starts the gateway's reaper on `runtime`: every
    /// [`ScannerTable::reap_period`] until `shutdown` says true (or its
    /// sender is gone). `gateway` names it in the log.
    pub fn spawn_reaper(
        self: &Arc<Self>,
        runtime: &tokio::runtime::Handle,
        shutdown: watch::Receiver<bool>,
        gateway: &'static str,
    ) -> tokio::task::JoinHandle<()>
    where
        I: ScannerId,
        T: Send + 'static,
    {
        let table = Arc::clone(self);
        runtime.spawn(async move { table.reap_until_stopped(shutdown, gateway).await })
    }

    /// Scanners open now.
    pub fn len(&self) -> usize {
        self.inner.lock().open.len()
    }

    /// True when none is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes every scanner (the gateway stops).
    pub fn clear(&self) {
        let mut inner = self.inner.lock();
        let open = std::mem::take(&mut inner.open);
        inner.per_connection.clear();
        inner.closed.clear();
        drop(inner);
        drop(open);
    }
}

impl<I, T> fmt::Debug for ScannerTable<I, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScannerTable")
            .field("open", &self.inner.lock().open.len())
            .field("max_open", &self.max_open)
            .field("max_per_connection", &self.max_per_connection)
            .field("lease_ms", &self.lease_ms.load(Ordering::Relaxed))
            .finish()
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Milliseconds since the table was made, from the monotonic clock: only
/// differences of its readings are used.
#[derive(Debug)]
struct Monotonic {
    start: Instant,
}

impl Default for Monotonic {
    fn default() -> Self {
        Monotonic {
            start: Instant::now(),
        }
    }
}

impl Clock for Monotonic {
    fn now_millis(&self) -> i64 {
        i64::try_from(self.start.elapsed().as_millis()).unwrap_or(i64::MAX)
    }
}

#[cfg(test)]
mod tests;
