//! The serving side of region calls: another server's [`RegionCall`] run
//! on a region open here.
//!
//! 1. Find the region by id among the regions this process's region server
//!    has open, and check it belongs to the named table; otherwise the
//!    caller's route is stale: `NotServingRegion`, and it asks for fresh
//!    routes.
//! 2. Check the row of a row call lies in the region's range (a stale
//!    route after a split would otherwise write outside it): also
//!    `NotServingRegion`.
//! 3. Run the call on the region, as a local `Table` would.
//! 4. Scanners opened by calls live in [`ServedScanners`]: ids, a lease, a
//!    cap, each bounded to its region's key range.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use basalt_engine::scan::{RegionScanner, RowRange};
use basalt_engine::Region;
use basalt_types::{Error, Result, RowResult};

use crate::database::Database;
use crate::remote::{RegionAnswer, RegionCall, RemoteError};

/// How long a scanner opened by a region call lives without a call on it
/// (HBase's scanner lease, `hbase.client.scanner.timeout.period`, 60 s).
/// A caller that pages slower than this loses its scanner. Changed per
/// database with [`Database::set_region_call_scanner_lease`].
pub const REGION_CALL_SCANNER_LEASE: Duration = Duration::from_secs(60);

/// Scanners open at once for region calls, per database; one more is
/// refused with `RegionTooBusy` (after the expired ones are dropped), so
/// callers that never close cannot hold the server's memory.
pub const REGION_CALL_SCANNER_CAP: usize = 4096;

/// Results one `NextRows` answers at most, whatever it asks: one answer
/// stays a bounded message.
pub const REGION_CALL_MAX_ROWS: usize = 10_000;

/// The scanners region calls opened on this server.
#[derive(Debug)]
pub(crate) struct ServedScanners {
    open: Mutex<HashMap<u64, Arc<Mutex<Served>>>>,
    next_id: AtomicU64,
    lease_ms: AtomicU64,
    cap: usize,
}

/// One open scanner: its region (by which the caller names it too), the
/// engine's scanner, and when it was last called.
struct Served {
    table: String,
    region: Arc<Region>,
    scanner: RegionScanner,
    last_used: Instant,
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("table", &self.table)
            .field("region", &self.region.info().id)
            .field("last_used", &self.last_used)
            .finish_non_exhaustive()
    }
}

impl Default for ServedScanners {
    fn default() -> Self {
        ServedScanners {
            open: Mutex::new(HashMap::new()),
            // Ids start at 1: 0 means "the scan has ended" in answers.
            next_id: AtomicU64::new(1),
            lease_ms: AtomicU64::new(REGION_CALL_SCANNER_LEASE.as_millis() as u64),
            cap: REGION_CALL_SCANNER_CAP,
        }
    }
}

impl ServedScanners {
    fn lease(&self) -> Duration {
        Duration::from_millis(self.lease_ms.load(Ordering::Relaxed))
    }

    /// Scanners open now.
    pub(crate) fn len(&self) -> usize {
        self.open.lock().len()
    }

    /// Drops scanners past their lease (skipping ones in a call now).
    fn sweep(&self) {
        let lease = self.lease();
        let expired: Vec<Arc<Mutex<Served>>> = {
            let mut open = self.open.lock();
            let ids: Vec<u64> = open
                .iter()
                .filter(|(_, s)| s.try_lock().is_some_and(|s| s.last_used.elapsed() > lease))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| open.remove(id)).collect()
        };
        // Outside the table's lock: recording the read takes the region's.
        for served in expired {
            let served = served.lock();
            served.region.record_read(&served.scanner);
        }
    }

    fn insert(&self, served: Served) -> Result<u64> {
        if self.len() >= self.cap {
            self.sweep();
        }
        let mut open = self.open.lock();
        if open.len() >= self.cap {
            return Err(Error::RegionTooBusy(format!(
                "{} scanners opened by region calls are open, the most one server keeps: \
                 close scanners, or wait for idle ones to pass their lease",
                self.cap
            )));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        open.insert(id, Arc::new(Mutex::new(served)));
        Ok(id)
    }

    /// The scanner `id` of region `region_id` of `table`, if open and
    /// within its lease; one past its lease is dropped here.
    fn get(&self, table: &str, region_id: u64, id: u64) -> Result<Arc<Mutex<Served>>> {
        let unknown = || {
            Error::invalid(format!(
                "unknown region-call scanner {id} on region {region_id} of table {table}: \
                 closed, past its lease of {} ms, or never opened here",
                self.lease().as_millis()
            ))
        };
        let served = self.open.lock().get(&id).cloned().ok_or_else(unknown)?;
        let expired = {
            let s = served.lock();
            if s.table != table || s.region.info().id != region_id {
                return Err(unknown());
            }
            s.last_used.elapsed() > self.lease()
        };
        if expired {
            self.remove(id);
            return Err(unknown());
        }
        Ok(served)
    }

    fn remove(&self, id: u64) {
        let removed = self.open.lock().remove(&id);
        if let Some(served) = removed {
            let served = served.lock();
            served.region.record_read(&served.scanner);
        }
    }
}

impl Database {
    /// Runs a region call another server sent about region `region_id` of
    /// `table`, on that region if it is open here (see the module docs).
    /// A region not open here, or of another table, or a row outside its
    /// range, is `NotServingRegion`: the caller refreshes its routes.
    pub fn serve_region_call(
        &self,
        table: &str,
        region_id: u64,
        call: RegionCall,
    ) -> Result<RegionAnswer> {
        let scanners = &self.locator().served;
        match call {
            // Scanner calls name their scanner; it holds its region.
            RegionCall::NextRows { scanner, rows } => {
                let served = scanners.get(table, region_id, scanner)?;
                let mut served = served.lock();
                next_rows(scanners, scanner, &mut served, rows)
            }
            RegionCall::CloseScanner { scanner } => {
                // Only a scanner of this region and table is closed; an
                // unknown one is closed already.
                if scanners.get(table, region_id, scanner).is_ok() {
                    scanners.remove(scanner);
                }
                Ok(RegionAnswer::Done)
            }
            RegionCall::Flush => {
                self.region_here(table, region_id)?;
                self.region_server().flush_region(region_id)?;
                Ok(RegionAnswer::Done)
            }
            RegionCall::Compact { major } => {
                // Whether it compacted anything does not travel: the caller
                // asked for the policy's decision, not a promise of work.
                let _compacted = self.region_here(table, region_id)?.compact(major)?;
                Ok(RegionAnswer::Done)
            }
            call => {
                let region = self.region_here(table, region_id)?;
                serve_on_region(scanners, table, &region, call)
            }
        }
    }

    /// Sets how long a scanner opened by a region call lives without a
    /// call on it (default [`REGION_CALL_SCANNER_LEASE`]).
    pub fn set_region_call_scanner_lease(&self, lease: Duration) {
        let ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX).max(1);
        self.locator().served.lease_ms.store(ms, Ordering::Relaxed);
    }

    /// Scanners opened by region calls and still open on this server.
    pub fn region_call_scanners(&self) -> usize {
        self.locator().served.len()
    }

    /// Region `region_id` if this process serves it for `table`.
    fn region_here(&self, table: &str, region_id: u64) -> Result<Arc<Region>> {
        self.region_server()
            .region(region_id)
            .filter(|r| r.info().table == table)
            .ok_or_else(|| {
                Error::NotServingRegion(format!(
                    "region {region_id} of table {table} is not open on this server"
                ))
            })
    }
}

/// Runs a call that names a row or opens a scanner.
fn serve_on_region(
    scanners: &ServedScanners,
    table: &str,
    region: &Arc<Region>,
    call: RegionCall,
) -> Result<RegionAnswer> {
    let in_region = |row: &[u8]| -> Result<()> {
        if region.info().contains(row) {
            Ok(())
        } else {
            Err(Error::NotServingRegion(format!(
                "row '{}' is outside region {} of table {table}",
                basalt_types::cell::escape_bytes(row),
                region.info().id
            )))
        }
    };
    match call {
        RegionCall::Get(get) => {
            in_region(&get.row)?;
            region.get(&get).map(RegionAnswer::Row)
        }
        RegionCall::Put(put) => {
            in_region(put.row())?;
            region.put(&put).map(|()| RegionAnswer::Done)
        }
        RegionCall::Delete(delete) => {
            in_region(delete.row())?;
            region.delete(&delete).map(|()| RegionAnswer::Done)
        }
        RegionCall::MutateRow(mutations) => {
            in_region(mutations.row())?;
            region.mutate_row(&mutations).map(RegionAnswer::Row)
        }
        RegionCall::Increment(increment) => {
            in_region(increment.row())?;
            region.increment(&increment).map(RegionAnswer::Row)
        }
        RegionCall::Append(append) => {
            in_region(append.row())?;
            region.append(&append).map(RegionAnswer::Row)
        }
        RegionCall::CheckAndMutate(check) => {
            in_region(&check.row)?;
            region
                .check_and_mutate_returning(&check)
                .map(|(applied, result)| RegionAnswer::Applied { applied, result })
        }
        RegionCall::Batch(mutations) => {
            // Mutations outside the region are refused one by one; the
            // others go to the region together (one log sync).
            let (inside, outside): (Vec<usize>, Vec<usize>) =
                (0..mutations.len()).partition(|&i| region.info().contains(mutations[i].row()));
            let mut answers: Vec<Option<RemoteError>> = vec![None; mutations.len()];
            for i in outside {
                answers[i] = in_region(mutations[i].row()).err().map(RemoteError::from);
            }
            let group: Vec<_> = inside.iter().map(|&i| mutations[i].clone()).collect();
            for (i, result) in inside.into_iter().zip(region.batch(&group)) {
                answers[i] = result.err().map(RemoteError::from);
            }
            Ok(RegionAnswer::Batch(answers))
        }
        RegionCall::OpenScanner { scan } => {
            scan.validate()?;
            let info = region.info();
            // Bounded to the region's rows: the caller's next region is
            // its own next call.
            let clip = RowRange {
                lower: if info.start_key.is_empty() {
                    std::ops::Bound::Unbounded
                } else {
                    std::ops::Bound::Included(info.start_key.clone())
                },
                upper: if info.end_key.is_empty() {
                    std::ops::Bound::Unbounded
                } else {
                    std::ops::Bound::Excluded(info.end_key.clone())
                },
            };
            let filter = scan.filter.as_ref().map(|f| f.build(scan.reversed));
            let scanner = region.scanner_within(&scan, &clip, filter, scan.limit)?;
            let id = scanners.insert(Served {
                table: table.to_string(),
                region: Arc::clone(region),
                scanner,
                last_used: Instant::now(),
            })?;
            Ok(RegionAnswer::Rows {
                scanner: id,
                rows: Vec::new(),
                more: true,
            })
        }
        RegionCall::NextRows { .. }
        | RegionCall::CloseScanner { .. }
        | RegionCall::Flush
        | RegionCall::Compact { .. } => Err(Error::invalid(format!(
            "a {} call reached the row-call path (a bug in region_calls.rs)",
            call.name()
        ))),
    }
}

/// Up to `wanted` results of an open scanner; closes it once it has no
/// more.
fn next_rows(
    scanners: &ServedScanners,
    id: u64,
    served: &mut Served,
    wanted: usize,
) -> Result<RegionAnswer> {
    served.last_used = Instant::now();
    let wanted = wanted.clamp(1, REGION_CALL_MAX_ROWS);
    let mut rows: Vec<RowResult> = Vec::with_capacity(wanted.min(1024));
    while rows.len() < wanted {
        match served.scanner.next_result() {
            Ok(Some(row)) => rows.push(row),
            Ok(None) => {
                let ended = served.scanner.ended_for_good();
                served.region.record_read(&served.scanner);
                // The entry's lock is held by the caller: take it out of
                // the table without recording the read again.
                scanners.open.lock().remove(&id);
                return Ok(RegionAnswer::Rows {
                    scanner: if ended { 0 } else { id },
                    rows,
                    more: false,
                });
            }
            Err(e) => {
                served.region.record_read(&served.scanner);
                scanners.open.lock().remove(&id);
                return Err(e);
            }
        }
    }
    Ok(RegionAnswer::Rows {
        scanner: id,
        rows,
        more: true,
    })
}
