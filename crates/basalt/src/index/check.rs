//! Comparing an index with a rebuild of it from its table, and repairing
//! what interrupted writes left (the scrubber pass).
//!
//! The comparison is exact only while no write runs: it reads the data
//! table, then the index table. Run it on a quiet table, or read an
//! inconsistency it reports as "possibly a write in flight".

use std::collections::BTreeMap;

use bytes::Bytes;

use basalt_types::index::{INDEX_FAMILY, VERIFIED, VERIFIED_QUALIFIER};
use basalt_types::{IndexDescriptor, Result, Scan};

use super::build::index_put;
use super::scan::settle_unverified;
use crate::table::Table;

/// What [`Database::check_index`](crate::Database::check_index) found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IndexCheckReport {
    /// Data rows with an index key.
    pub data_rows: u64,
    /// Index rows read.
    pub index_rows: u64,
    /// Keys a rebuild has and the index table lacks (invariant I1 broken).
    pub missing: Vec<Bytes>,
    /// Verified index rows a rebuild does not have (invariant I2 broken).
    pub stale_verified: Vec<Bytes>,
    /// Verified index rows whose covered cells differ from the data's.
    pub covered_differs: Vec<Bytes>,
    /// Unverified rows that name their data row's current key (an
    /// interrupted step 4): verified by a repair.
    pub unverified_current: Vec<Bytes>,
    /// Unverified rows that do not (a write that failed or crashed before
    /// its commit): deleted by a repair.
    pub unverified_stale: Vec<Bytes>,
}

impl IndexCheckReport {
    /// True when the invariants hold: nothing missing, no stale or
    /// differing verified row. Unverified rows are allowed (reads check
    /// them).
    pub fn is_consistent(&self) -> bool {
        self.missing.is_empty() && self.stale_verified.is_empty() && self.covered_differs.is_empty()
    }

    /// True when the index table is exactly its rebuild: consistent, and
    /// no unverified row left.
    pub fn equals_rebuild(&self) -> bool {
        self.is_consistent()
            && self.unverified_current.is_empty()
            && self.unverified_stale.is_empty()
    }
}

/// The covered cells of an index row (every cell but the flag), by
/// qualifier.
fn covered_cells(cells: &[basalt_types::Cell]) -> BTreeMap<Bytes, Bytes> {
    cells
        .iter()
        .filter(|c| c.family == INDEX_FAMILY && c.qualifier != VERIFIED_QUALIFIER)
        .map(|c| (c.qualifier.clone(), c.value.clone()))
        .collect()
}

/// Compares index `index` of `data` with a rebuild from `data`; with
/// `repair`, settles every unverified row as a read does (`scan.rs`:
/// after the data row's in-flight write, verified or deleted at its own
/// timestamp). `checks` is a trusted handle on the data table.
pub(crate) fn check(
    data: &Table,
    checks: &Table,
    index_table: &Table,
    index: &IndexDescriptor,
    repair: bool,
) -> Result<IndexCheckReport> {
    let mut report = IndexCheckReport::default();
    let mut scan = Scan::new();
    for (family, qualifier) in index.read_columns() {
        scan.columns.add_column(family, qualifier);
    }
    let mut rebuilt: BTreeMap<Bytes, BTreeMap<Bytes, Bytes>> = BTreeMap::new();
    for row in data.scan(&scan)? {
        if let Some(put) = index_put(index, &row?, 0) {
            report.data_rows += 1;
            rebuilt.insert(put.row().clone(), covered_cells(put.cells()));
        }
    }
    for entry in index_table.scan(&Scan::new())? {
        let entry = entry?;
        report.index_rows += 1;
        let flag = entry
            .cells
            .iter()
            .find(|c| c.family == INDEX_FAMILY && c.qualifier == VERIFIED_QUALIFIER);
        let expected = rebuilt.remove(&entry.row);
        match (flag, expected) {
            (Some(flag), Some(covered)) if flag.value == VERIFIED => {
                if covered_cells(&entry.cells) != covered {
                    report.covered_differs.push(entry.row.clone());
                }
            }
            (Some(flag), None) if flag.value == VERIFIED => {
                report.stale_verified.push(entry.row.clone())
            }
            (flag, expected) => {
                let current = if repair {
                    let stamp = flag
                        .map(|f| f.timestamp)
                        .or_else(|| entry.cells.iter().map(|c| c.timestamp).max())
                        .unwrap_or(0);
                    let data_row = index.data_row(&entry.row)?;
                    settle_unverified(index, checks, index_table, &entry.row, &data_row, stamp)?
                } else {
                    expected.is_some()
                };
                if current {
                    report.unverified_current.push(entry.row.clone());
                } else {
                    report.unverified_stale.push(entry.row.clone());
                }
            }
        }
    }
    report.missing = rebuilt.into_keys().collect();
    Ok(report)
}
