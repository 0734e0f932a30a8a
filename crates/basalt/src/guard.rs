//! Protections every gateway shares (REST, the info server, Thrift1,
//! Thrift2, native RPC), written once so the gateways agree and a later
//! shared listener can take them over whole.
//!
//! - Scanners live in one table, `gateways::scanners` (random ids bound to
//!   their owner, leases, limits).
//! - [`AddressSlots`] caps the connections one peer address may hold and
//!   keeps slots that only other addresses may take, so one abusive address
//!   cannot lock everyone else out.
//! - [`RefusalLog`] turns refusals into one summary line per interval
//!   instead of one line per refusal (a flood would otherwise flood the log).
//! - [`AnswerBudget`] counts the bytes of answers being built and waiting
//!   to be written, over every gateway of the process: an answer takes its
//!   room before it is built and keeps it until its last byte is written,
//!   so clients that do not read cannot make the server hold more than the
//!   budget.
//! - [`WriteTimeout`] fails a connection's write that makes no progress for
//!   the write timeout, so a client that stops reading is dropped and gives
//!   back everything its connection held.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The per-address connection limits of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotLimits {
    /// Connections the listener holds at once, from all addresses.
    pub total: usize,
    /// Connections one peer address may hold at once.
    pub per_address: usize,
    /// Of `total`, the slots an address that already holds connections
    /// cannot take: they are kept for addresses holding none, so a client
    /// that is not the flooder still gets in.
    pub reserved: usize,
}

/// Why [`AddressSlots::acquire`] refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotRefusal {
    /// The listener holds `total` connections.
    Full,
    /// This address holds `per_address` connections.
    PerAddress,
    /// Only reserved slots remain and this address already holds some.
    Reserved,
}

impl SlotRefusal {
    /// A short reason for logs and refusal answers.
    pub fn reason(self) -> &'static str {
        match self {
            SlotRefusal::Full => "the listener is at its connection limit",
            SlotRefusal::PerAddress => "this address is at its per-address connection limit",
            SlotRefusal::Reserved => {
                "the remaining slots are reserved for addresses holding no connection"
            }
        }
    }
}

#[derive(Debug, Default)]
struct SlotState {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// Connection slots counted per peer address (see [`SlotLimits`]).
#[derive(Debug, Clone)]
pub struct AddressSlots {
    limits: SlotLimits,
    state: Arc<Mutex<SlotState>>,
}

/// One connection's slot, given back when dropped.
#[derive(Debug)]
pub struct Slot {
    address: IpAddr,
    state: Arc<Mutex<SlotState>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = self.state.lock();
        state.total = state.total.saturating_sub(1);
        if let Some(n) = state.by_address.get_mut(&self.address) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                state.by_address.remove(&self.address);
            }
        }
    }
}

impl AddressSlots {
    /// Slots under `limits` (a `per_address` of 0 is read as 1, and
    /// `reserved` is kept below `total` so someone can always connect).
    pub fn new(limits: SlotLimits) -> Self {
        let total = limits.total.max(1);
        AddressSlots {
            limits: SlotLimits {
                total,
                per_address: limits.per_address.max(1),
                reserved: limits.reserved.min(total - 1),
            },
            state: Arc::default(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> SlotLimits {
        self.limits
    }

    /// A slot for a connection from `address`, or why not.
    pub fn acquire(&self, address: IpAddr) -> Result<Slot, SlotRefusal> {
        let mut state = self.state.lock();
        if state.total >= self.limits.total {
            return Err(SlotRefusal::Full);
        }
        let held = state.by_address.get(&address).copied().unwrap_or(0);
        if held >= self.limits.per_address {
            return Err(SlotRefusal::PerAddress);
        }
        if held > 0 && state.total >= self.limits.total - self.limits.reserved {
            return Err(SlotRefusal::Reserved);
        }
        state.total += 1;
        *state.by_address.entry(address).or_insert(0) += 1;
        Ok(Slot {
            address,
            state: Arc::clone(&self.state),
        })
    }

    /// Connections held now.
    pub fn in_use(&self) -> usize {
        self.state.lock().total
    }
}

/// Counts refusals and logs one summary line per interval.
#[derive(Debug)]
pub struct RefusalLog {
    what: &'static str,
    interval: Duration,
    /// When a line was last logged, and the refusals since.
    state: Mutex<(Option<Instant>, u64)>,
}

impl RefusalLog {
    /// A log for the listener `what`, summarizing every `interval`.
    pub fn new(what: &'static str, interval: Duration) -> Self {
        RefusalLog {
            what,
            interval,
            state: Mutex::new((None, 0)),
        }
    }

    /// Records one refusal and logs a summary line when none was logged
    /// for an interval; answers that line (tests read it).
    pub fn refused(&self, reason: &str) -> Option<String> {
        let mut state = self.state.lock();
        state.1 += 1;
        if state.0.is_some_and(|at| at.elapsed() < self.interval) {
            return None;
        }
        let line = format!(
            "{}: refused {} connection(s) since the last report (one line per {:?} at most); latest: {}",
            self.what, state.1, self.interval, reason
        );
        *state = (Some(Instant::now()), 0);
        tracing::warn!("{line}");
        Some(line)
    }
}

/// Default of the process-wide answer budget ([`answer_budget`]):
/// 128 MiB of answers built or waiting to be written at once, over every
/// gateway.
pub const DEFAULT_ANSWER_BUDGET_BYTES: usize = 128 << 20;

/// Default largest answer of one call on every gateway, whatever the
/// client asks (HBase's `max_result_size`): 4 MiB. An answer stops at the
/// first row that reaches it (a single larger row is still answered whole,
/// or cut where the protocol allows partial rows).
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 4 << 20;

/// Default write timeout of every gateway: a connection whose answer makes
/// no progress for this long is dropped.
pub const DEFAULT_WRITE_TIMEOUT_MS: u64 = 30_000;

/// Default deadline of a new connection's first request (or handshake) on
/// every gateway.
pub const DEFAULT_FIRST_REQUEST_TIMEOUT_MS: u64 = 10_000;

/// Default longest one scan call may read before it answers with what it
/// has (or, holding nothing, fails with a time-out naming the limit).
pub const DEFAULT_SCAN_CALL_TIMEOUT_MS: u64 = 60_000;

/// Estimated bytes an answer takes in memory while it is built, for rows
/// whose cells hold `cell_bytes` of keys and values in `cells` cells: the
/// cells themselves, the gateway's model of them and the encoded bytes (a
/// copy each), plus a fixed cost per cell for the structures around them.
pub fn answer_estimate(cell_bytes: usize, cells: usize) -> usize {
    cell_bytes
        .saturating_mul(3)
        .saturating_add(cells.saturating_mul(200))
}

/// Bytes of answers the process holds at once (see the module docs).
#[derive(Debug)]
pub struct AnswerBudget {
    total: AtomicUsize,
    used: Mutex<usize>,
    freed: Condvar,
    waits: AtomicU64,
    refusals: AtomicU64,
}

/// Why an answer could not take room in the budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetFull {
    /// The budget's size in bytes.
    pub total: usize,
    /// How long the answer waited.
    pub waited: Duration,
}

impl std::fmt::Display for BudgetFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the server is busy: answers waiting for their clients fill the answer budget \
             ({} bytes, [limits] max_answer_bytes_in_flight) and none finished within {} ms; \
             retry",
            self.total,
            self.waited.as_millis()
        )
    }
}

static ANSWER_BUDGET: LazyLock<Arc<AnswerBudget>> =
    LazyLock::new(|| AnswerBudget::new(DEFAULT_ANSWER_BUDGET_BYTES));

/// The answer budget every gateway of this process shares.
pub fn answer_budget() -> Arc<AnswerBudget> {
    Arc::clone(&ANSWER_BUDGET)
}

/// Sets the size of the process-wide answer budget (the server does so
/// from `[limits] max_answer_bytes_in_flight` before it serves).
pub fn set_answer_budget_bytes(total: usize) {
    ANSWER_BUDGET.total.store(total.max(1), Ordering::SeqCst);
    ANSWER_BUDGET.freed.notify_all();
}

impl AnswerBudget {
    /// A budget of `total` bytes (at least one).
    pub fn new(total: usize) -> Arc<AnswerBudget> {
        Arc::new(AnswerBudget {
            total: AtomicUsize::new(total.max(1)),
            used: Mutex::new(0),
            freed: Condvar::new(),
            waits: AtomicU64::new(0),
            refusals: AtomicU64::new(0),
        })
    }

    /// The budget's size in bytes.
    pub fn total(&self) -> usize {
        self.total.load(Ordering::SeqCst)
    }

    /// Bytes held now.
    pub fn in_use(&self) -> usize {
        *self.used.lock()
    }

    /// Times an answer waited for room, and times it gave up (tests).
    pub fn waits_and_refusals(&self) -> (u64, u64) {
        (
            self.waits.load(Ordering::SeqCst),
            self.refusals.load(Ordering::SeqCst),
        )
    }

    /// Room for `bytes` if there is some now.
    pub fn try_take(self: &Arc<Self>, bytes: usize) -> Option<AnswerBytes> {
        let mut used = self.used.lock();
        if *used > 0 && used.saturating_add(bytes) > self.total() {
            return None;
        }
        *used = used.saturating_add(bytes);
        Some(self.held(bytes))
    }

    /// Room for `bytes`, waiting up to `patience` for answers in flight to
    /// be written. An answer larger than the whole budget gets in once
    /// nothing else is held, so any one answer can be served. Never waits
    /// on a thread in memory-only mode (a gateway's runtime thread): the
    /// attempt is marked as missed instead, to be run again on the pool.
    pub fn take(
        self: &Arc<Self>,
        bytes: usize,
        patience: Duration,
    ) -> Result<AnswerBytes, BudgetFull> {
        let started = Instant::now();
        let mut used = self.used.lock();
        let mut waited = false;
        while *used > 0 && used.saturating_add(bytes) > self.total() {
            if crate::read_tier::is_memory_only() {
                crate::read_tier::give_up();
                break;
            }
            if !waited {
                waited = true;
                self.waits.fetch_add(1, Ordering::SeqCst);
            }
            let left = patience.saturating_sub(started.elapsed());
            if left.is_zero() || self.freed.wait_for(&mut used, left).timed_out() {
                if *used == 0 || used.saturating_add(bytes) <= self.total() {
                    break;
                }
                self.refusals.fetch_add(1, Ordering::SeqCst);
                return Err(BudgetFull {
                    total: self.total(),
                    waited: started.elapsed(),
                });
            }
        }
        *used = used.saturating_add(bytes);
        Ok(self.held(bytes))
    }

    /// Counts `bytes` whether or not there is room: for an answer already
    /// built (a small one that did not take room first), so that answers
    /// waiting for their clients are all counted.
    pub fn force(self: &Arc<Self>, bytes: usize) -> AnswerBytes {
        let mut used = self.used.lock();
        *used = used.saturating_add(bytes);
        self.held(bytes)
    }

    fn held(self: &Arc<Self>, bytes: usize) -> AnswerBytes {
        AnswerBytes {
            budget: Some(Arc::clone(self)),
            held: bytes,
        }
    }

    fn release(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let mut used = self.used.lock();
        *used = used.saturating_sub(bytes);
        drop(used);
        self.freed.notify_all();
    }
}

/// Room one answer holds in an [`AnswerBudget`], given back when dropped
/// (once the answer is written, or its connection is gone).
#[derive(Debug, Default)]
pub struct AnswerBytes {
    budget: Option<Arc<AnswerBudget>>,
    held: usize,
}

impl AnswerBytes {
    /// Holds nothing (an answer outside any budget).
    pub fn none() -> AnswerBytes {
        AnswerBytes::default()
    }

    /// Bytes held.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Holds what `other` held as well (both rooms of one budget).
    pub fn absorb(&mut self, mut other: AnswerBytes) {
        if self.budget.is_none() {
            self.budget = other.budget.take();
            self.held = other.held;
        } else {
            self.held = self.held.saturating_add(other.held);
            other.budget = None;
        }
        other.held = 0;
    }

    /// Takes `more` bytes if there is room now.
    pub fn try_grow(&mut self, more: usize) -> bool {
        let Some(budget) = &self.budget else {
            return true;
        };
        let mut used = budget.used.lock();
        if used.saturating_add(more) > budget.total() {
            return false;
        }
        *used = used.saturating_add(more);
        self.held = self.held.saturating_add(more);
        true
    }

    /// Holds exactly `bytes` from now on: the excess is given back, or the
    /// shortfall counted whether or not there is room (the answer exists
    /// already; this only counts it).
    pub fn resize(&mut self, bytes: usize) {
        let Some(budget) = &self.budget else {
            return;
        };
        if bytes < self.held {
            budget.release(self.held - bytes);
        } else {
            let mut used = budget.used.lock();
            *used = used.saturating_add(bytes - self.held);
        }
        self.held = bytes;
    }
}

impl Drop for AnswerBytes {
    fn drop(&mut self) {
        if let Some(budget) = &self.budget {
            budget.release(self.held);
        }
    }
}

thread_local! {
    static ROOM: std::cell::RefCell<Option<AnswerBytes>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `room` as the answer room of the call running on this
/// thread, so the code that builds the answer can count what it adds
/// ([`count_answer`]) without passing the room down; returns `f`'s result
/// and the room, grown by what was counted.
/// Gateways pass `answer_budget().force(0)`: an empty room of the
/// budget, which [`take_answer_room`] and [`count_answer`] then grow.
pub fn with_answer_room<R>(room: AnswerBytes, f: impl FnOnce() -> R) -> (R, AnswerBytes) {
    /// Puts the previous room back, also when `f` panics.
    struct Restore(Option<Option<AnswerBytes>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(previous) = self.0.take() {
                ROOM.with(|r| *r.borrow_mut() = previous);
            }
        }
    }
    let previous = ROOM.with(|r| r.replace(Some(room)));
    let mut restore = Restore(Some(previous));
    let result = f();
    let room = ROOM.with(|r| r.borrow_mut().take());
    if let Some(previous) = restore.0.take() {
        ROOM.with(|r| *r.borrow_mut() = previous);
    }
    (result, room.unwrap_or_default())
}

/// Waits for room for `bytes` in the process's answer budget (see
/// [`AnswerBudget::take`]) and adds it to the current call's room, which
/// holds it until the answer is written: a call that answers rows takes
/// room before it reads the first.
pub fn take_answer_room(bytes: usize, patience: Duration) -> Result<(), BudgetFull> {
    let taken = answer_budget().take(bytes, patience)?;
    ROOM.with(|r| {
        if let Some(room) = r.borrow_mut().as_mut() {
            room.absorb(taken);
        }
    });
    Ok(())
}

/// Counts `bytes` more of the answer being built in the current call's
/// room (see [`with_answer_room`]; nothing outside one).
pub fn count_answer(bytes: usize) {
    ROOM.with(|r| {
        if let Some(room) = r.borrow_mut().as_mut() {
            room.resize(room.held().saturating_add(bytes));
        }
    });
}

/// A connection whose writes fail with `TimedOut` once one has made no
/// progress for the timeout: a peer that stops reading its answers cannot
/// keep the connection (and the answer, and its room in the budgets) for
/// longer. Reads pass through untouched.
#[derive(Debug)]
pub struct WriteTimeout<S> {
    inner: S,
    timeout: Option<Duration>,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> WriteTimeout<S> {
    /// Wraps `inner`; `None` never times out.
    pub fn new(inner: S, timeout: Option<Duration>) -> WriteTimeout<S> {
        WriteTimeout {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// The wrapped connection.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped connection, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// What a pending write does: waits, until the timeout since the last
    /// progress passes.
    fn pending<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let Some(timeout) = self.timeout else {
            return Poll::Pending;
        };
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the peer read nothing of its answer for {} ms (write_timeout_ms)",
                    timeout.as_millis()
                ),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progress<T>(
        &mut self,
        result: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match result {
            Poll::Pending => self.pending(cx),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteTimeout<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.progress(result, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.progress(result, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_flush(cx);
        this.progress(result, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.progress(result, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn one_address_cannot_take_the_reserved_slots() {
        let slots = AddressSlots::new(SlotLimits {
            total: 10,
            per_address: 100,
            reserved: 3,
        });
        let flood: Vec<Slot> = (0..7).map_while(|_| slots.acquire(ip(1)).ok()).collect();
        assert_eq!(flood.len(), 7);
        assert_eq!(slots.acquire(ip(1)).unwrap_err(), SlotRefusal::Reserved);
        let other = slots.acquire(ip(2));
        assert!(other.is_ok(), "another address is served");
        drop(flood);
        assert_eq!(slots.in_use(), 1);
    }

    #[test]
    fn an_address_is_held_to_its_own_limit_and_slots_come_back() {
        let slots = AddressSlots::new(SlotLimits {
            total: 100,
            per_address: 2,
            reserved: 0,
        });
        let a = slots.acquire(ip(1)).unwrap();
        let _b = slots.acquire(ip(1)).unwrap();
        assert_eq!(slots.acquire(ip(1)).unwrap_err(), SlotRefusal::PerAddress);
        drop(a);
        assert!(slots.acquire(ip(1)).is_ok());
    }

    #[test]
    fn an_answer_waits_for_room_and_gives_up_after_its_patience() {
        let budget = AnswerBudget::new(100);
        let first = budget.try_take(80).unwrap();
        assert!(budget.try_take(30).is_none(), "no room for a second answer");
        let refused = budget.take(30, Duration::from_millis(20)).unwrap_err();
        assert!(refused.to_string().contains("max_answer_bytes_in_flight"));
        let waiter = {
            let budget = Arc::clone(&budget);
            std::thread::spawn(move || budget.take(30, Duration::from_secs(60)).map(|b| b.held()))
        };
        drop(first);
        assert_eq!(waiter.join().unwrap(), Ok(30));
        assert_eq!(budget.in_use(), 0, "every answer gave its room back");
    }

    #[test]
    fn an_answer_larger_than_the_budget_is_served_alone() {
        let budget = AnswerBudget::new(100);
        let big = budget.take(1000, Duration::ZERO).unwrap();
        assert_eq!(budget.in_use(), 1000);
        assert!(budget.try_take(1).is_none());
        drop(big);
        let mut grown = budget.try_take(10).unwrap();
        assert!(grown.try_grow(90));
        assert!(!grown.try_grow(1), "growing stops at the budget");
        grown.resize(5);
        assert_eq!(budget.in_use(), 5);
    }

    #[test]
    fn a_calls_room_holds_what_it_took_and_counted_until_dropped() {
        let budget = answer_budget();
        let before = budget.in_use();
        let ((), room) = with_answer_room(budget.force(0), || {
            take_answer_room(1000, Duration::from_secs(1)).unwrap();
            count_answer(500);
        });
        assert_eq!(room.held(), 1500);
        count_answer(7);
        assert_eq!(room.held(), 1500, "nothing is counted outside a call");
        drop(room);
        assert!(budget.in_use() <= before, "the room was given back");
    }

    #[tokio::test]
    async fn a_write_that_makes_no_progress_fails_after_the_timeout() {
        use tokio::io::AsyncWriteExt;
        let (ours, _theirs) = tokio::io::duplex(64);
        let mut conn = WriteTimeout::new(ours, Some(Duration::from_millis(50)));
        let error = conn.write_all(&[0u8; 4096]).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(error.to_string().contains("write_timeout_ms"), "{error}");
    }

    #[tokio::test]
    async fn a_slow_reader_that_keeps_reading_is_not_cut_off() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (ours, mut theirs) = tokio::io::duplex(64);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut chunk = [0u8; 16];
            loop {
                tokio::time::sleep(Duration::from_millis(2)).await;
                match theirs.read(&mut chunk).await {
                    Ok(0) | Err(_) => return got.len(),
                    Ok(n) => got.extend_from_slice(&chunk[..n]),
                }
            }
        });
        let mut conn = WriteTimeout::new(ours, Some(Duration::from_millis(500)));
        conn.write_all(&[1u8; 2048]).await.unwrap();
        drop(conn);
        assert_eq!(reader.await.unwrap(), 2048);
    }

    #[test]
    fn refusals_are_summarized_once_per_interval() {
        let log = RefusalLog::new("test", Duration::from_secs(3600));
        assert!(log.refused("full").is_some(), "the first refusal is logged");
        let logged = (0..1000).filter(|_| log.refused("full").is_some()).count();
        assert_eq!(logged, 0);
    }
}
