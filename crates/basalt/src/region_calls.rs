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
//! 4. Scanners opened by calls live in [`ServedScanners`], the gateways'
//!    scanner table: random ids, a lease, a cap, each bounded to its
//!    region's key range.

use std::sync::Arc;
use std::time::Duration;

use basalt_engine::scan::{RegionScanner, RowRange};
use basalt_engine::Region;
use basalt_types::{Error, Result, RowResult};

use crate::gateways::scanners::{OpenScanner, Owner, ScannerLimits, ScannerTable};
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

/// The scanners region calls opened on this server: the gateways' scanner
/// table, with no owner (a caller's calls come on any pooled connection)
/// and each scanner bounded to its region.
#[derive(Debug)]
pub(crate) struct ServedScanners(ScannerTable<u64, Served>);

/// One open scanner: its region (by which the caller names it too) and the
/// engine's scanner.
pub(crate) struct Served {
    table: String,
    region: Arc<Region>,
    scanner: RegionScanner,
    /// Set once the table holds it: from then on its end (closed, done,
    /// failed, expired) adds its work to the region's load, once.
    registered: bool,
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.registered {
            self.region.record_read(&self.scanner);
        }
    }
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("table", &self.table)
            .field("region", &self.region.info().id)
            .finish_non_exhaustive()
    }
}

impl Default for ServedScanners {
    fn default() -> Self {
        ServedScanners(ScannerTable::new(ScannerLimits {
            max_open: REGION_CALL_SCANNER_CAP,
            max_per_connection: usize::MAX,
            lease: REGION_CALL_SCANNER_LEASE,
        }))
    }
}

impl ServedScanners {
    /// Sets how long a scanner lives without a call on it.
    pub(crate) fn set_lease(&self, lease: Duration) {
        self.0.set_lease(lease);
    }

    /// Scanners open now.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn insert(&self, served: Served) -> Result<u64> {
        let (id, scanner) = self.0.open(Owner::Anyone, served).map_err(|refused| {
            Error::RegionTooBusy(format!(
                "{} scanners opened by region calls are open, the most one server keeps: \
                 close scanners, or wait for idle ones to pass their lease",
                refused.limit()
            ))
        })?;
        scanner.lock().registered = true;
        Ok(id)
    }

    /// The scanner `id` of region `region_id` of `table`, if open and
    /// within its lease; one past its lease is dropped here.
    pub(crate) fn get(
        &self,
        table: &str,
        region_id: u64,
        id: u64,
    ) -> Result<Arc<OpenScanner<Served>>> {
        let unknown = || {
            Error::invalid(format!(
                "unknown region-call scanner {id} on region {region_id} of table {table}: \
                 closed, past its lease of {} ms, or never opened here",
                self.0.lease().as_millis()
            ))
        };
        let scanner = self.0.get(&id, Owner::Anyone).ok_or_else(unknown)?;
        let ours = {
            let served = scanner.lock();
            served.table == table && served.region.info().id == region_id
        };
        if ours {
            Ok(scanner)
        } else {
            Err(unknown())
        }
    }

    pub(crate) fn remove(&self, id: u64) {
        self.0.close(&id, Owner::Anyone);
    }
}

/// Runs a call that names a row or opens a scanner.
pub(crate) fn serve_on_region(
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
                registered: false,
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
        | RegionCall::Compact { .. }
        | RegionCall::BulkLoad { .. } => Err(Error::invalid(format!(
            "a {} call reached the row-call path (a bug in region_calls.rs)",
            call.name()
        ))),
    }
}

/// Up to `wanted` results of an open scanner; closes it once it has no
/// more.
pub(crate) fn next_rows(
    scanners: &ServedScanners,
    id: u64,
    served: &mut Served,
    wanted: usize,
) -> Result<RegionAnswer> {
    let wanted = wanted.clamp(1, REGION_CALL_MAX_ROWS);
    let mut rows: Vec<RowResult> = Vec::with_capacity(wanted.min(1024));
    while rows.len() < wanted {
        match served.scanner.next_result() {
            Ok(Some(row)) => rows.push(row),
            Ok(None) => {
                let ended = served.scanner.ended_for_good();
                // Its work is recorded when the caller lets it go.
                scanners.remove(id);
                return Ok(RegionAnswer::Rows {
                    scanner: if ended { 0 } else { id },
                    rows,
                    more: false,
                });
            }
            Err(e) => {
                scanners.remove(id);
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
