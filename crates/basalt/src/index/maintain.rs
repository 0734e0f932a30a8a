//! Keeping a table's indexes with its writes: the region observer that
//! runs steps 1, 2 and 4 of the two-phase scheme (module docs of
//! `crate::index`) around each data write.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use bytes::Bytes;

use basalt_engine::observer::{AfterCommit, PendingWrite, WriteObserver};
use basalt_engine::Region;
use basalt_types::index::{
    covered_qualifier, index_table_name, INDEX_FAMILY, UNVERIFIED, VERIFIED, VERIFIED_QUALIFIER,
};
use basalt_types::{
    Cell, CellType, ColumnFamilyDescriptor, Delete, Error, IndexDescriptor, Put, Result,
    RowMutations,
};

use super::visible::{latest_values, raw_row_scan, Ranked};
use crate::locator::RegionLocator;
use crate::metrics::RequestLatencies;
use crate::region_server::IndexKeeping;
use crate::table::Table;

/// Post-writes (step 4) that failed since the process started: each left
/// an unverified index row that reads check and repair.
static FAILED_POST_WRITES: AtomicU64 = AtomicU64::new(0);

/// How many post-writes failed in this process (`/metrics`:
/// `basalt_index_failed_post_writes_total`).
pub fn failed_post_writes() -> u64 {
    FAILED_POST_WRITES.load(Ordering::Relaxed)
}

/// The observer of one region of an indexed table.
#[derive(Debug)]
pub(crate) struct IndexMaintainer {
    table: String,
    indexes: Vec<IndexDescriptor>,
    /// Every column some index reads (indexed or covered), once.
    columns: Vec<(Bytes, Bytes)>,
    families: BTreeSet<Bytes>,
    /// Where index tables are found; weak, as the locator outlives every
    /// region it routes to.
    routes: Weak<RegionLocator>,
    latencies: Arc<RequestLatencies>,
}

/// The index keeping of a process: observers that write index rows
/// through its routes.
#[derive(Debug)]
pub(crate) struct IndexRoutes(Weak<RegionLocator>);

impl IndexRoutes {
    /// Index rows written through `locator`'s routes (held weakly: the
    /// locator outlives every region it routes to).
    pub(crate) fn new(locator: &Arc<RegionLocator>) -> Self {
        IndexRoutes(Arc::downgrade(locator))
    }
}

impl IndexKeeping for IndexRoutes {
    fn observer(&self, table: &str, indexes: Vec<IndexDescriptor>) -> Arc<dyn WriteObserver> {
        Arc::new(IndexMaintainer::new(table, indexes, self.0.clone()))
    }
}

/// One index row write, in the order a phase sends them.
pub(crate) enum IndexWrite {
    Mutations(RowMutations),
    Put(Put),
    Delete(Delete),
}

impl IndexMaintainer {
    pub(crate) fn new(
        table: &str,
        indexes: Vec<IndexDescriptor>,
        routes: Weak<RegionLocator>,
    ) -> Self {
        let mut columns: Vec<(Bytes, Bytes)> = Vec::new();
        for index in &indexes {
            for column in index.read_columns() {
                if !columns.contains(&column) {
                    columns.push(column);
                }
            }
        }
        let families = columns.iter().map(|(f, _)| f.clone()).collect();
        IndexMaintainer {
            table: table.to_string(),
            indexes,
            columns,
            families,
            routes,
            latencies: Arc::default(),
        }
    }

    /// True when `cell` may change a column some index reads.
    fn touches(&self, cell: &Cell) -> bool {
        match cell.cell_type {
            CellType::DeleteFamily | CellType::DeleteFamilyVersion => {
                self.families.contains(&cell.family)
            }
            _ => self
                .columns
                .iter()
                .any(|(f, q)| *f == cell.family && *q == cell.qualifier),
        }
    }

    fn index_table(&self, index: &IndexDescriptor) -> Result<Table> {
        let routes = self.routes.upgrade().ok_or_else(|| {
            Error::invalid(format!(
                "index '{}' of table '{}': the server is shutting down",
                index.name, self.table
            ))
        })?;
        let name = index_table_name(&self.table, &index.name);
        Ok(Table::new(
            routes.table(&name)?,
            Arc::clone(&self.latencies),
        ))
    }

    /// The row's cells as the region holds them now: every version and
    /// marker of the families an index reads.
    fn read_raw(&self, region: &Region, row: &Bytes) -> Result<Vec<Cell>> {
        let mut scan = raw_row_scan(row);
        for family in &self.families {
            scan.columns.add_family(family.clone());
        }
        let mut scanner = region.scanner(&scan)?;
        let mut cells = Vec::new();
        while let Some(result) = scanner.next_result()? {
            cells.extend(result.cells);
        }
        Ok(cells)
    }

    fn family_rules(&self, region: &Region) -> BTreeMap<Bytes, ColumnFamilyDescriptor> {
        region
            .stores()
            .iter()
            .map(|store| store.descriptor())
            .filter(|d| self.families.contains(d.name().as_bytes()))
            .map(|d| (Bytes::copy_from_slice(d.name().as_bytes()), (*d).clone()))
            .collect()
    }
}

/// What a phase of one index does.
struct IndexPhases {
    table: Table,
    index: String,
    pre: Vec<IndexWrite>,
    post: Vec<IndexWrite>,
}

impl WriteObserver for IndexMaintainer {
    fn before_commit(
        &self,
        region: &Region,
        write: &mut PendingWrite<'_>,
    ) -> Result<Option<AfterCommit>> {
        if !write.cells.iter().any(|c| self.touches(c)) {
            return Ok(None);
        }
        let existing = self.read_raw(region, write.row)?;
        // Pending cells rank above every written one, in write order.
        let pending_rank = u64::MAX / 2;
        let mut ranked: Vec<Ranked<'_>> = existing
            .iter()
            .map(|cell| Ranked {
                cell,
                rank: cell.sequence_id,
            })
            .collect();
        for (i, cell) in write.earlier.iter().enumerate() {
            ranked.push(Ranked {
                cell,
                rank: pending_rank + i as u64,
            });
        }
        let before_len = ranked.len();
        for (i, cell) in write.cells.iter().enumerate() {
            ranked.push(Ranked {
                cell,
                rank: pending_rank + (write.earlier.len() + i) as u64,
            });
        }
        let rules = self.family_rules(region);
        let now = write.order_ts;
        let before = latest_values(&ranked[..before_len], &self.columns, &rules, now);
        let after = latest_values(&ranked, &self.columns, &rules, now);
        let value_of = |values: &[Option<Bytes>], family: &Bytes, qualifier: &Bytes| {
            self.columns
                .iter()
                .position(|(f, q)| f == family && q == qualifier)
                .and_then(|i| values[i].clone())
        };
        // Which index rows change: (index, its table, old key, new key,
        // covered values after).
        let mut changes = Vec::new();
        for index in &self.indexes {
            let key_of = |values: &[Option<Bytes>]| {
                let indexed: Vec<Option<Bytes>> = index
                    .columns
                    .iter()
                    .map(|c| value_of(values, &c.family, &c.qualifier))
                    .collect();
                let borrowed: Vec<Option<&[u8]>> = indexed.iter().map(|v| v.as_deref()).collect();
                index.key(&borrowed, write.row)
            };
            let covered_of = |values: &[Option<Bytes>]| -> Vec<Option<Bytes>> {
                index
                    .covered
                    .iter()
                    .map(|(f, q)| value_of(values, f, q))
                    .collect()
            };
            let (old_key, new_key) = (key_of(&before), key_of(&after));
            let covered = covered_of(&after);
            if old_key == new_key && (new_key.is_none() || covered == covered_of(&before)) {
                continue;
            }
            let old_key = old_key.filter(|old| Some(old) != new_key.as_ref());
            changes.push((index, self.index_table(index)?, old_key, new_key, covered));
        }
        if changes.is_empty() {
            return Ok(None);
        }
        // Every index row this write touches only ever holds writes of this
        // data row, made under its lock: a stamp above the newest cell each
        // one holds keeps each row's stamps increasing in write order,
        // whatever the clocks did since an earlier opening of the region.
        for (_, table, old_key, new_key, _) in &changes {
            for key in old_key.iter().chain(new_key) {
                if let Some(newest) = newest_stamp(table, key)? {
                    write.order_ts = write.order_ts.max(newest.saturating_add(1));
                }
            }
        }
        let t = write.order_ts;
        let mut phases = Vec::new();
        for (index, table, old_key, new_key, covered) in changes {
            let mut pre = Vec::new();
            let mut post = Vec::new();
            if let Some(key) = &new_key {
                pre.push(index_row_write(index, key, t, UNVERIFIED, &covered)?);
                post.push(IndexWrite::Put(Put::new(key.clone()).add_at(
                    INDEX_FAMILY,
                    VERIFIED_QUALIFIER,
                    t,
                    VERIFIED,
                )));
            }
            if let Some(key) = old_key {
                pre.push(IndexWrite::Put(Put::new(key.clone()).add_at(
                    INDEX_FAMILY,
                    VERIFIED_QUALIFIER,
                    t,
                    UNVERIFIED,
                )));
                post.push(IndexWrite::Delete(Delete::with_timestamp(key, t)));
            }
            phases.push(IndexPhases {
                table,
                index: index.name.clone(),
                pre,
                post,
            });
        }

        // Step 2: the pre-writes land before the data commits, or the
        // mutation fails with nothing written to its row.
        for phase in &phases {
            for write in &phase.pre {
                apply(&phase.table, write).inspect_err(|e| {
                    tracing::warn!(
                        table = %self.table,
                        index = %phase.index,
                        error = %e,
                        "an index pre-write failed; the data write is refused"
                    );
                })?;
            }
        }
        let table = self.table.clone();
        Ok(Some(AfterCommit::new(move || {
            // Step 4: a failure leaves unverified rows, which reads check
            // and repair; the data write stands.
            for phase in phases {
                for write in &phase.post {
                    if let Err(e) = apply(&phase.table, write) {
                        FAILED_POST_WRITES.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(
                            table = %table,
                            index = %phase.index,
                            error = %e,
                            "an index post-write failed; reads will check and repair the row"
                        );
                    }
                }
            }
        })))
    }
}

/// The write that makes index row `key` hold `flag` and the covered
/// values `covered` (in the order of `index.covered`; `None`: the data
/// row has none, so an older copy goes), all at `stamp`.
pub(crate) fn index_row_write(
    index: &IndexDescriptor,
    key: &Bytes,
    stamp: i64,
    flag: &[u8],
    covered: &[Option<Bytes>],
) -> Result<IndexWrite> {
    let mut put = Put::new(key.clone()).add_at(
        INDEX_FAMILY,
        VERIFIED_QUALIFIER,
        stamp,
        Bytes::copy_from_slice(flag),
    );
    let mut gone = Delete::new(key.clone());
    for ((family, qualifier), value) in index.covered.iter().zip(covered) {
        let name = covered_qualifier(family, qualifier);
        match value {
            Some(value) => put = put.add_at(INDEX_FAMILY, name, stamp, value.clone()),
            None => gone = gone.columns_at(INDEX_FAMILY, name, stamp),
        }
    }
    Ok(if gone.markers().is_empty() {
        IndexWrite::Put(put)
    } else {
        IndexWrite::Mutations(RowMutations::new(key.clone()).add(put)?.add(gone)?)
    })
}

/// The newest timestamp of any cell (delete markers too) index row `key`
/// holds, `None` for a row that never held one.
fn newest_stamp(table: &Table, key: &Bytes) -> Result<Option<i64>> {
    let scan = raw_row_scan(key);
    let mut newest = None;
    for row in table.scan(&scan)? {
        for cell in row?.cells {
            newest = newest.max(Some(cell.timestamp));
        }
    }
    Ok(newest)
}

pub(crate) fn apply(table: &Table, write: &IndexWrite) -> Result<()> {
    match write {
        IndexWrite::Mutations(mutations) => table.mutate_row(mutations).map(drop),
        IndexWrite::Put(put) => table.put(put),
        IndexWrite::Delete(delete) => table.delete(delete),
    }
}
