//! Open scanners of `ClientService.Scan`: ids, owners, leases, the
//! expected call sequence, and what each still owes its client.
//!
//! Scanner ids are global (HBase's clients send an id on whichever
//! connection they hold), counters from a random start so ids of a restarted
//! server do not collide with stale ones. A scanner unused for a lease
//! (HBase: 60 s) is dropped the next time the table is full or swept; a
//! connection that closes drops the scanners it opened.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_types::Cell;
use bytes::Bytes;
use parking_lot::Mutex;

use crate::error::{RpcError, SERVER_TOO_BUSY, UNKNOWN_SCANNER};

/// The key range a region scanner may return, after the scan's own bounds
/// are cut to the region's: rows outside are never answered (the next
/// region's rows belong to the client's next scanner).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowBounds {
    /// Lowest row, and whether it is included; empty means unbounded.
    pub low: (Bytes, bool),
    /// Highest row, and whether it is included; empty means unbounded.
    pub high: (Bytes, bool),
}

impl RowBounds {
    /// True when `row` is above the low bound.
    pub fn above_low(&self, row: &[u8]) -> bool {
        let (low, inclusive) = &self.low;
        low.is_empty() || row > &low[..] || (*inclusive && row == &low[..])
    }

    /// True when `row` is below the high bound.
    pub fn below_high(&self, row: &[u8]) -> bool {
        let (high, inclusive) = &self.high;
        high.is_empty() || row < &high[..] || (*inclusive && row == &high[..])
    }
}

/// The rows an open scanner answers from, and the work done to find them.
pub trait RowSource: Iterator<Item = basalt::Result<basalt::RowResult>> + Send {
    /// The work so far (what HBase's server-side scan metrics count); none
    /// for rows that were not read through the engine.
    fn metrics(&self) -> basalt::ScanMetrics {
        basalt::ScanMetrics::default()
    }
}

impl RowSource for basalt::Scanner {
    fn metrics(&self) -> basalt::ScanMetrics {
        basalt::Scanner::metrics(self)
    }
}

/// `hbase:meta`'s rows, built in memory.
impl RowSource for std::vec::IntoIter<basalt::Result<basalt::RowResult>> {}

/// What an open scanner holds between calls.
pub struct ScanState {
    /// The engine's scan (across regions: the bounds keep it in one).
    pub rows: Option<Box<dyn RowSource>>,
    /// The work of `rows` once they were dropped ([`ScanState::end_rows`]).
    pub ended_metrics: basalt::ScanMetrics,
    /// The work already reported to the client (it adds each answer's).
    pub reported_metrics: basalt::ScanMetrics,
    /// Rows the scan may return.
    pub bounds: RowBounds,
    /// Rows in descending order.
    pub reversed: bool,
    /// Cells of a row already read but not yet answered (a row cut by the
    /// answer's size limit).
    pub carried: Vec<Cell>,
    /// Rows the whole scan may still return (`None`: no limit).
    pub remaining_limit: Option<u64>,
    /// The `next_call_seq` the next call must carry, when it carries one.
    pub next_call_seq: u64,
    /// Set once the scan has nothing more in this region.
    pub region_exhausted: bool,
    /// Set once the whole scan is over (limit reached): `more_results` false.
    pub scan_done: bool,
    /// Per-family cell cap and skip (`store_limit`, `store_offset`).
    pub store_window: Option<(usize, usize)>,
}

impl ScanState {
    /// Drops the rows (nothing more is read), keeping their work's count.
    pub fn end_rows(&mut self) {
        if let Some(rows) = self.rows.take() {
            self.ended_metrics = rows.metrics();
        }
    }

    /// The work done since the last call to this (what the next answer
    /// reports).
    pub fn unreported_metrics(&mut self) -> basalt::ScanMetrics {
        let now = match &self.rows {
            Some(rows) => rows.metrics(),
            None => self.ended_metrics,
        };
        let reported = self.reported_metrics;
        self.reported_metrics = now;
        basalt::ScanMetrics {
            rows_scanned: now.rows_scanned.saturating_sub(reported.rows_scanned),
            cells_scanned: now.cells_scanned.saturating_sub(reported.cells_scanned),
            rows_returned: now.rows_returned.saturating_sub(reported.rows_returned),
            rows_filtered: now.rows_filtered.saturating_sub(reported.rows_filtered),
            cells_filtered: now.cells_filtered.saturating_sub(reported.cells_filtered),
            bytes_returned: now.bytes_returned.saturating_sub(reported.bytes_returned),
        }
    }
}

impl std::fmt::Debug for ScanState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanState")
            .field("bounds", &self.bounds)
            .field("reversed", &self.reversed)
            .field("next_call_seq", &self.next_call_seq)
            .field("region_exhausted", &self.region_exhausted)
            .finish_non_exhaustive()
    }
}

/// One registered scanner.
#[derive(Debug)]
pub struct OpenScanner {
    /// The connection that opened it.
    pub owner: u64,
    /// Held for the length of one call: also keeps the sweeper away.
    pub state: Mutex<ScanState>,
    last_used: Mutex<Instant>,
}

/// The table of open scanners.
#[derive(Debug)]
pub struct Scanners {
    open: Mutex<HashMap<u64, Arc<OpenScanner>>>,
    /// Scanners closed within the last lease, and when: a call on one of
    /// them is answered with an empty answer instead of an exception, as
    /// HBase does (it closes a scanner with nothing more to give by itself,
    /// and clients still send a `next` or a `close` for it).
    recently_closed: Mutex<HashMap<u64, Instant>>,
    capacity: usize,
    lease: Duration,
}

impl Scanners {
    /// A table of at most `capacity` scanners with `lease_ms` leases.
    pub fn new(capacity: usize, lease_ms: u64) -> Scanners {
        Scanners {
            open: Mutex::new(HashMap::new()),
            recently_closed: Mutex::new(HashMap::new()),
            capacity,
            lease: Duration::from_millis(lease_ms),
        }
    }

    /// The lease in whole seconds (what `ScanResponse.ttl` reports).
    pub fn lease_seconds(&self) -> u32 {
        u32::try_from(self.lease.as_secs()).unwrap_or(u32::MAX)
    }

    /// Registers a scanner for `owner`; refuses when the table is full of
    /// scanners still within their lease.
    pub fn register(
        &self,
        owner: u64,
        state: ScanState,
    ) -> Result<(u64, Arc<OpenScanner>), RpcError> {
        let mut open = self.open.lock();
        if open.len() >= self.capacity {
            let lease = self.lease;
            open.retain(|_, s| s.last_used.lock().elapsed() < lease);
        }
        if open.len() >= self.capacity {
            return Err(RpcError::new(
                SERVER_TOO_BUSY,
                format!(
                    "{} scanners are open (the limit, [rpc] max_scanners); close some or wait for their leases",
                    self.capacity
                ),
                false,
            ));
        }
        // Random ids: another client cannot guess one (and `get` refuses
        // it from any other connection anyway).
        let mut id = basalt::guard::random_scanner_id();
        while open.contains_key(&id) {
            id = basalt::guard::random_scanner_id();
        }
        let scanner = Arc::new(OpenScanner {
            owner,
            state: Mutex::new(state),
            last_used: Mutex::new(Instant::now()),
        });
        open.insert(id, Arc::clone(&scanner));
        Ok((id, scanner))
    }

    /// The scanner `id` for the connection `owner`, its lease renewed;
    /// `UnknownScannerException` when it is closed, expired, was never
    /// opened or was opened by another connection (a scanner is bound to
    /// its connection: another client must not read or steal it).
    pub fn get(&self, id: u64, owner: u64) -> Result<Arc<OpenScanner>, RpcError> {
        let mut open = self.open.lock();
        if open.get(&id).is_some_and(|s| s.owner != owner) {
            return Err(unknown_scanner(id));
        }
        if let Some(scanner) = open.get(&id) {
            let mut last_used = scanner.last_used.lock();
            if last_used.elapsed() < self.lease {
                *last_used = Instant::now();
                drop(last_used);
                return Ok(Arc::clone(scanner));
            }
        }
        open.remove(&id);
        Err(unknown_scanner(id))
    }

    /// Closes scanner `id` when `owner` opened it; true when it was open
    /// and is closed now. Another connection's close leaves it open.
    pub fn close_for(&self, id: u64, owner: u64) -> bool {
        let owned = self.open.lock().get(&id).is_some_and(|s| s.owner == owner);
        owned && self.close(id)
    }

    /// Drops every scanner unused for a lease (the server calls it every
    /// half lease, so an abandoned scan's engine state does not wait for
    /// the table to fill); answers how many went.
    pub fn sweep(&self) -> usize {
        let lease = self.lease;
        let mut open = self.open.lock();
        let before = open.len();
        // A scanner in use is locked by its call: its lease was renewed
        // when the call looked it up, so it is never expired here.
        open.retain(|_, s| s.last_used.lock().elapsed() < lease);
        before - open.len()
    }

    /// The lease.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// Closes scanner `id`; true when it was open.
    pub fn close(&self, id: u64) -> bool {
        let was_open = self.open.lock().remove(&id).is_some();
        if was_open {
            let mut closed = self.recently_closed.lock();
            // Bounded: entries older than a lease go when the map is full.
            if closed.len() >= self.capacity {
                let lease = self.lease;
                closed.retain(|_, at| at.elapsed() < lease);
            }
            if closed.len() < self.capacity.saturating_mul(2) {
                closed.insert(id, Instant::now());
            }
        }
        was_open
    }

    /// True when scanner `id` was closed less than a lease ago.
    pub fn was_recently_closed(&self, id: u64) -> bool {
        self.recently_closed
            .lock()
            .get(&id)
            .is_some_and(|at| at.elapsed() < self.lease)
    }

    /// Closes every scanner `owner` opened (its connection went away).
    pub fn close_owned_by(&self, owner: u64) {
        self.open.lock().retain(|_, s| s.owner != owner);
    }

    /// Open scanners now.
    pub fn len(&self) -> usize {
        self.open.lock().len()
    }

    /// True when none is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn unknown_scanner(id: u64) -> RpcError {
    RpcError::new(
        UNKNOWN_SCANNER,
        format!("unknown scanner {id}: closed, expired after its lease, or never opened on this connection"),
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> ScanState {
        ScanState {
            rows: None,
            ended_metrics: basalt::ScanMetrics::default(),
            reported_metrics: basalt::ScanMetrics::default(),
            bounds: RowBounds {
                low: (Bytes::new(), true),
                high: (Bytes::new(), false),
            },
            reversed: false,
            carried: Vec::new(),
            remaining_limit: None,
            next_call_seq: 0,
            region_exhausted: false,
            scan_done: false,
            store_window: None,
        }
    }

    #[test]
    fn a_closed_scanner_is_unknown() {
        let scanners = Scanners::new(4, 60_000);
        let (id, _) = scanners.register(1, state()).unwrap();
        assert!(scanners.get(id, 1).is_ok());
        assert!(scanners.close(id));
        assert_eq!(scanners.get(id, 1).unwrap_err().class, UNKNOWN_SCANNER);
    }

    #[test]
    fn another_connection_cannot_use_or_close_a_scanner() {
        let scanners = Scanners::new(4, 60_000);
        let (id, _) = scanners.register(1, state()).unwrap();
        let (next, _) = scanners.register(1, state()).unwrap();
        assert_ne!(next, id + 1, "ids are not sequential");
        assert_eq!(scanners.get(id, 2).unwrap_err().class, UNKNOWN_SCANNER);
        assert!(!scanners.close_for(id, 2));
        assert!(scanners.get(id, 1).is_ok(), "the owner still has it");
        assert!(scanners.close_for(id, 1));
    }

    #[test]
    fn a_closed_scanner_is_remembered_for_a_lease() {
        let scanners = Scanners::new(4, 60_000);
        let (id, _) = scanners.register(1, state()).unwrap();
        assert!(!scanners.was_recently_closed(id));
        scanners.close(id);
        assert!(scanners.was_recently_closed(id));
        assert!(!scanners.was_recently_closed(id + 1));
    }

    #[test]
    fn a_full_table_refuses_until_a_lease_runs_out() {
        let scanners = Scanners::new(1, 0);
        scanners.register(1, state()).unwrap();
        // A zero lease: the first scanner has expired by the second open.
        assert!(scanners.register(1, state()).is_ok());
        let scanners = Scanners::new(1, 60_000);
        scanners.register(1, state()).unwrap();
        assert_eq!(
            scanners.register(1, state()).unwrap_err().class,
            SERVER_TOO_BUSY
        );
    }

    #[test]
    fn a_sweep_drops_only_scanners_past_their_lease() {
        let scanners = Scanners::new(8, 0);
        scanners.register(1, state()).unwrap();
        assert_eq!(scanners.sweep(), 1);
        let scanners = Scanners::new(8, 60_000);
        scanners.register(1, state()).unwrap();
        assert_eq!(scanners.sweep(), 0);
        assert_eq!(scanners.len(), 1);
    }

    #[test]
    fn a_closed_connection_releases_its_scanners() {
        let scanners = Scanners::new(8, 60_000);
        scanners.register(1, state()).unwrap();
        scanners.register(2, state()).unwrap();
        scanners.close_owned_by(1);
        assert_eq!(scanners.len(), 1);
    }

    #[test]
    fn bounds_honour_inclusiveness() {
        let b = RowBounds {
            low: (Bytes::from_static(b"b"), false),
            high: (Bytes::from_static(b"d"), true),
        };
        assert!(!b.above_low(b"b"));
        assert!(b.above_low(b"c"));
        assert!(b.below_high(b"d"));
        assert!(!b.below_high(b"e"));
    }
}
