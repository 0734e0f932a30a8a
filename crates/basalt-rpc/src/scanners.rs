//! Open scanners of `ClientService.Scan`: what each carries between calls
//! (the expected call sequence, its region's bounds, what it still owes
//! its client), in the gateways' one scanner table.
//!
//! The table (`basalt::gateways::scanners`) gives random 52-bit ids bound
//! to the connection that opened them, leases (HBase: 60 s; a scanner past
//! its lease is unknown, and reaped), the `max_scanners` cap, and release
//! when the connection closes; this module answers its refusals as HBase's
//! exceptions.

use std::sync::Arc;
use std::time::Duration;

use basalt::gateways::scanners::{Owner, ScannerLimits, ScannerTable};
use basalt_types::Cell;
use bytes::Bytes;

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

    /// The same rows as the engine's range.
    pub fn row_range(&self) -> basalt::RowRange {
        use std::ops::Bound;
        let bound = |(row, inclusive): &(Bytes, bool)| match (row.is_empty(), inclusive) {
            (true, _) => Bound::Unbounded,
            (false, true) => Bound::Included(row.clone()),
            (false, false) => Bound::Excluded(row.clone()),
        };
        basalt::RowRange {
            lower: bound(&self.low),
            upper: bound(&self.high),
        }
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

/// A read by a secondary index (`basalt.index`, see `client_service.rs`).
impl RowSource for basalt::index::IndexScanner {}

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
    /// The `next_call_seq` the next call must carry, when it carries one.
    pub next_call_seq: u64,
    /// Set once the scan has nothing more in this region.
    pub region_exhausted: bool,
    /// Set once the whole scan is over (limit reached): `more_results` false.
    pub scan_done: bool,
    /// `rows` is the whole scan, not one region's part (a read by index):
    /// when it ends, the scan is over, and the client asks no other
    /// region.
    pub whole_scan: bool,
    /// Per-family cell cap and skip (`store_limit`, `store_offset`).
    pub store_window: Option<(usize, usize)>,
    /// The scan has a batch: `rows` answers a wide row in parts, each a
    /// result of its own.
    pub batched: bool,
    /// What `rows` gave after the last part answered, read to learn
    /// whether that part ended its row.
    pub lookahead: Option<basalt::Result<basalt::RowResult>>,
    /// The batch `carried` is the rest of has more of its row after it.
    pub carried_more_in_row: bool,
}

impl ScanState {
    /// Drops the rows (nothing more is read), keeping their work's count.
    pub fn end_rows(&mut self) {
        self.lookahead = None;
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

/// The table of open scanners: the gateways' one table
/// (`basalt::gateways::scanners`), its answers in HBase's exceptions.
#[derive(Debug)]
pub struct Scanners(Arc<ScannerTable<u64, ScanState>>);

/// One registered scanner; its state is held (`lock`) for one call.
pub type OpenScanner = basalt::gateways::scanners::OpenScanner<ScanState>;

impl Scanners {
    /// A table of at most `capacity` scanners with `lease_ms` leases, and no
    /// per-connection cap of its own.
    pub fn new(capacity: usize, lease_ms: u64) -> Scanners {
        Scanners(Arc::new(ScannerTable::new(ScannerLimits {
            max_open: capacity,
            max_per_connection: usize::MAX,
            lease: Duration::from_millis(lease_ms),
        })))
    }

    /// The lease.
    pub fn lease(&self) -> Duration {
        self.0.lease()
    }

    /// The lease in whole seconds (what `ScanResponse.ttl` reports).
    pub fn lease_seconds(&self) -> u32 {
        u32::try_from(self.0.lease().as_secs()).unwrap_or(u32::MAX)
    }

    /// Registers a scanner for the connection `owner`; refuses with
    /// `ServerTooBusyException` when the table is full of scanners still
    /// within their lease.
    pub fn register(
        &self,
        owner: u64,
        state: ScanState,
    ) -> Result<(u64, Arc<OpenScanner>), RpcError> {
        self.0
            .open(Owner::Connection(owner), state)
            .map_err(|refused| {
                RpcError::new(
                    SERVER_TOO_BUSY,
                    format!(
                        "{} scanners are open (the limit, [rpc] max_scanners); close some or wait for their leases",
                        refused.limit()
                    ),
                    false,
                )
            })
    }

    /// The scanner `id` for the connection `owner`, its lease renewed;
    /// `UnknownScannerException` when it is closed, expired, was never
    /// opened or was opened by another connection (a scanner is bound to
    /// its connection: another client must not read or steal it).
    pub fn get(&self, id: u64, owner: u64) -> Result<Arc<OpenScanner>, RpcError> {
        self.0
            .get(&id, Owner::Connection(owner))
            .ok_or_else(|| unknown_scanner(id))
    }

    /// Closes scanner `id` when `owner` opened it; true when it was open
    /// and is closed now. Another connection's close leaves it open.
    pub fn close(&self, id: u64, owner: u64) -> bool {
        self.0.close(&id, Owner::Connection(owner))
    }

    /// True when scanner `id` was closed less than a lease ago: a call on
    /// it is answered with an empty answer instead of an exception, as
    /// HBase does (it closes a scanner with nothing more to give by itself,
    /// and clients still send a `next` or a `close` for it).
    pub fn was_recently_closed(&self, id: u64) -> bool {
        self.0.was_recently_closed(&id)
    }

    /// Closes every scanner `owner` opened (its connection went away).
    pub fn close_owned_by(&self, owner: u64) {
        self.0.close_owned_by(owner);
    }

    /// The table itself (the server runs its reaper).
    pub fn table(&self) -> &Arc<ScannerTable<u64, ScanState>> {
        &self.0
    }

    /// Open scanners now.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when none is open.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
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
            next_call_seq: 0,
            region_exhausted: false,
            scan_done: false,
            whole_scan: false,
            store_window: None,
            batched: false,
            lookahead: None,
            carried_more_in_row: false,
        }
    }

    #[test]
    fn a_closed_scanner_is_unknown() {
        let scanners = Scanners::new(4, 60_000);
        let (id, _) = scanners.register(1, state()).unwrap();
        assert!(scanners.get(id, 1).is_ok());
        assert!(scanners.close(id, 1));
        assert_eq!(scanners.get(id, 1).unwrap_err().class, UNKNOWN_SCANNER);
    }

    #[test]
    fn another_connection_cannot_use_or_close_a_scanner() {
        let scanners = Scanners::new(4, 60_000);
        let (id, _) = scanners.register(1, state()).unwrap();
        let (next, _) = scanners.register(1, state()).unwrap();
        assert_ne!(next, id + 1, "ids are not sequential");
        assert_eq!(scanners.get(id, 2).unwrap_err().class, UNKNOWN_SCANNER);
        assert!(!scanners.close(id, 2));
        assert!(scanners.get(id, 1).is_ok(), "the owner still has it");
        assert!(scanners.close(id, 1));
    }

    #[test]
    fn a_closed_scanner_is_remembered_for_a_lease() {
        let scanners = Scanners::new(4, 60_000);
        let (id, _) = scanners.register(1, state()).unwrap();
        assert!(!scanners.was_recently_closed(id));
        scanners.close(id, 1);
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
        assert_eq!(scanners.table().reap(), 1);
        let scanners = Scanners::new(8, 60_000);
        scanners.register(1, state()).unwrap();
        assert_eq!(scanners.table().reap(), 0);
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
