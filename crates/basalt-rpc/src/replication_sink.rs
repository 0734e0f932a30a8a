//! `AdminService.ReplicateWALEntry`: Basalt as a replication peer (a
//! "sink") of a real HBase cluster.
//!
//! HBase's replication source reads its write-ahead log, keeps the edits
//! of families with `REPLICATION_SCOPE => 1`, finds the peer's region
//! servers in the peer's ZooKeeper (`<parent>/rs`) and calls this method
//! on one of them with a batch of WAL entries: each a `WALKey` (table,
//! source region, write time, the clusters that have the edit) and a count
//! of cells that travel in the call's cell block (codec
//! `KeyValueCodecWithTags`). What this does follows HBase 2.6's
//! `ReplicationSink.replicateEntries`:
//!
//! - the edits are applied by table (the sink table has the WALKey's
//!   table name; regions do not matter), each cell as it is, with its
//!   timestamp: runs of cells of one row and one type become one `Put` or
//!   one `Delete` (HBase's `isNewRowOrType`), applied in the log's order;
//!   a per-cell TTL (HBase's TTL tag) stays the cell's TTL;
//! - a table that does not exist here is `TableNotFoundException`, a
//!   family the table lacks `NoSuchColumnFamilyException`; nothing of the
//!   call is applied then and the source retries the whole batch (HBase's
//!   source retries every failed batch, and with
//!   `hbase.replication.drop.on.deleted.table` /
//!   `...drop.on.deleted.columnfamily` drops edits for tables and families
//!   the peer lacks, which it checks through `MasterService`);
//! - WAL meta cells (family `METAFAMILY`: compaction, flush, region event
//!   and replication markers) are skipped, as HBase's sink skips
//!   replication markers unless its sink tracker is on, and its source
//!   never ships the others; a bulk-load marker asking to be replicated is
//!   refused (`DoNotRetryIOException` naming it): Basalt cannot fetch the
//!   source's HFiles, so the source must not replicate bulk loads
//!   (`hbase.replication.bulkload.enabled`, off by default);
//! - a batch sent again changes nothing visible: every cell keeps its
//!   timestamp, so a put lands on the version it already wrote and a
//!   delete marker on itself. The answer is sent once every mutation is
//!   in Basalt's write-ahead log (HBase's promise: "durable on the slave
//!   cluster if this method returns without any exception").
//!
//! The counters ([`SinkMetrics`]) are HBase's `MetricsSink`: batches,
//! entries and cells applied, and the age of the last applied edit.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use basalt::{Delete, Mutation, Put};
use basalt_types::{Cell, CellType};
use serde::{Deserialize, Serialize};

use crate::admin_service::now_millis;
use crate::call::{encode, Call};
use crate::error::RpcError;
use crate::proto::wal::{BulkLoadDescriptor, ReplicateWalEntryRequest, ReplicateWalEntryResponse};

/// The family of HBase's WAL meta cells (`WALEdit.METAFAMILY`).
pub const META_FAMILY: &[u8] = b"METAFAMILY";
/// The qualifier of a bulk-load marker (`WALEdit.BULK_LOAD`).
pub const BULK_LOAD: &[u8] = b"HBASE::BULK_LOAD";

/// What the sink has done since the process started (HBase's
/// `MetricsSink`). Shared by every connection; read by the info server.
#[derive(Debug, Default)]
pub struct SinkMetrics {
    batches: AtomicU64,
    failed_batches: AtomicU64,
    entries: AtomicU64,
    cells: AtomicU64,
    skipped_cells: AtomicU64,
    last_write_time_ms: AtomicU64,
    last_applied_at_ms: AtomicU64,
    age_of_last_applied_ms: AtomicU64,
}

/// The sink's counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SinkSnapshot {
    /// `ReplicateWALEntry` calls applied.
    pub batches: u64,
    /// Calls refused or failed (the source sends them again).
    pub failed_batches: u64,
    /// WAL entries applied.
    pub entries: u64,
    /// Cells applied (puts and delete markers).
    pub cells: u64,
    /// WAL meta cells skipped (markers that carry no data).
    pub skipped_cells: u64,
    /// Write time on the source of the last entry of the last applied
    /// batch, milliseconds since the epoch; 0 before the first.
    pub last_write_time_ms: u64,
    /// When that batch was applied here, milliseconds since the epoch; 0
    /// before the first.
    pub last_applied_at_ms: u64,
    /// HBase's `ageOfLastAppliedOp`: how old that entry was when it was
    /// applied (applied at minus write time), milliseconds.
    pub age_of_last_applied_ms: u64,
}

impl SinkMetrics {
    /// The counters now.
    pub fn snapshot(&self) -> SinkSnapshot {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        SinkSnapshot {
            batches: get(&self.batches),
            failed_batches: get(&self.failed_batches),
            entries: get(&self.entries),
            cells: get(&self.cells),
            skipped_cells: get(&self.skipped_cells),
            last_write_time_ms: get(&self.last_write_time_ms),
            last_applied_at_ms: get(&self.last_applied_at_ms),
            age_of_last_applied_ms: get(&self.age_of_last_applied_ms),
        }
    }

    fn applied(&self, entries: u64, cells: u64, skipped: u64, last_write_time: Option<u64>) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.entries.fetch_add(entries, Ordering::Relaxed);
        self.cells.fetch_add(cells, Ordering::Relaxed);
        self.skipped_cells.fetch_add(skipped, Ordering::Relaxed);
        if let Some(written) = last_write_time {
            let now = now_millis();
            self.last_write_time_ms.store(written, Ordering::Relaxed);
            self.last_applied_at_ms.store(now, Ordering::Relaxed);
            self.age_of_last_applied_ms
                .store(now.saturating_sub(written), Ordering::Relaxed);
        }
    }
}

/// One table's share of a call: its mutations in log order.
#[derive(Debug, Default)]
struct TableEdits {
    mutations: Vec<Mutation>,
    /// Families named by its cells (checked against the table first).
    families: Vec<bytes::Bytes>,
}

/// What a call asks, decoded and grouped, before anything is applied.
#[derive(Debug, Default)]
struct Batch {
    tables: BTreeMap<String, TableEdits>,
    entries: u64,
    cells: u64,
    skipped: u64,
    last_write_time: Option<u64>,
}

/// The Basalt name of a WALKey's table (`TableName.getName()` bytes):
/// `namespace:qualifier`, the default namespace without its prefix.
fn table_name(bytes: &[u8]) -> Result<String, RpcError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| RpcError::do_not_retry("WALKey.table_name is not UTF-8"))?;
    let name = match text.split_once(':') {
        Some((namespace, qualifier)) if namespace == basalt::DEFAULT_NAMESPACE => qualifier,
        _ => text,
    };
    if name.is_empty() || name.ends_with(':') {
        return Err(RpcError::do_not_retry(format!(
            "WALKey.table_name {text:?} names no table"
        )));
    }
    Ok(name.to_string())
}

/// A bulk-load marker: skipped when it says not to replicate, refused
/// otherwise (Basalt cannot read the source's HFiles).
fn bulk_load_marker(table: &str, cell: &Cell) -> Result<(), RpcError> {
    let descriptor = <BulkLoadDescriptor as prost::Message>::decode(cell.value.clone())
        .map_err(|e| RpcError::undecodable("BulkLoadDescriptor of a bulk-load marker", e))?;
    if !descriptor.replicate.unwrap_or(true) {
        return Ok(());
    }
    let files: usize = descriptor.stores.iter().map(|s| s.store_file.len()).sum();
    Err(RpcError::do_not_retry(format!(
        "a replicated bulk load of table {table} ({files} HFiles) cannot be applied: \
         Basalt does not fetch the source's HFiles; turn hbase.replication.bulkload.enabled \
         off on the source cluster and import the files with basalt import"
    )))
}

/// The row, type and per-cell TTL of the last cell added: a cell that
/// differs in any starts a new mutation.
type Run = Option<(bytes::Bytes, CellType, Option<u64>)>;

/// Adds one cell to the table's mutations: a new `Put` or `Delete` when
/// the row or the type changes (HBase's `isNewRowOrType`; and when a put's
/// per-cell TTL changes, a TTL being Basalt's per put), else the current
/// one grows.
fn add_cell(edits: &mut TableEdits, previous: &mut Run, cell: Cell) {
    if !edits.families.contains(&cell.family) {
        edits.families.push(cell.family.clone());
    }
    let same = previous.as_ref().is_some_and(|(row, t, ttl)| {
        *row == cell.row && *t == cell.cell_type && *ttl == cell.ttl_millis
    });
    let last = edits.mutations.last_mut().filter(|_| same);
    *previous = Some((cell.row.clone(), cell.cell_type, cell.ttl_millis));
    let Cell {
        row,
        family,
        qualifier,
        timestamp,
        cell_type,
        value,
        ttl_millis,
        ..
    } = cell;
    match (cell_type, last) {
        (CellType::Put, Some(Mutation::Put(put))) => {
            // The same TTL (a different one starts a new put), which the
            // put gives every cell it adds.
            let grown = std::mem::replace(put, Put::new(bytes::Bytes::new()));
            *put = grown.add_at(family, qualifier, timestamp, value);
        }
        (CellType::Put, _) => {
            let put = match ttl_millis {
                Some(ttl) => Put::new(row).ttl_millis(ttl),
                None => Put::new(row),
            };
            edits.mutations.push(Mutation::Put(
                put.add_at(family, qualifier, timestamp, value),
            ));
        }
        (t, last) => {
            let marker = |delete: Delete| match t {
                CellType::Delete => delete.column_at(family, qualifier, timestamp),
                CellType::DeleteColumn => delete.columns_at(family, qualifier, timestamp),
                CellType::DeleteFamily => delete.family_at(family, timestamp),
                // `Put` is handled above; what is left is the family version.
                _ => delete.family_version(family, timestamp),
            };
            match last {
                Some(Mutation::Delete(delete)) => {
                    let grown = std::mem::replace(delete, Delete::new(bytes::Bytes::new()));
                    *delete = marker(grown);
                }
                _ => edits
                    .mutations
                    .push(Mutation::Delete(marker(Delete::new(row)))),
            }
        }
    }
}

/// Decodes the entries and takes their cells from the cell block, in
/// order; every count is checked before anything is applied.
fn decode_batch(call: &mut Call<'_>, request: ReplicateWalEntryRequest) -> Result<Batch, RpcError> {
    let mut batch = Batch::default();
    for (index, entry) in request.entry.into_iter().enumerate() {
        let key = entry
            .key
            .ok_or_else(|| RpcError::missing(&format!("WALEntry.key of entry {index}")))?;
        let table =
            table_name(key.table_name.as_deref().ok_or_else(|| {
                RpcError::missing(&format!("WALKey.table_name of entry {index}"))
            })?)?;
        if !entry.key_value_bytes.is_empty() {
            return Err(RpcError::do_not_retry(format!(
                "entry {index} carries its cells in WALEntry.key_value_bytes; \
                 HBase 2 sends them in the cell block, and only those are read"
            )));
        }
        let count = entry.associated_cell_count.unwrap_or(0);
        let count = usize::try_from(count).map_err(|_| {
            RpcError::do_not_retry(format!(
                "entry {index} has a negative associated_cell_count ({count})"
            ))
        })?;
        let cells = call.take_request_cells(count).map_err(|e| {
            RpcError::do_not_retry(format!("entry {index} of table {table}: {}", e.message))
        })?;
        let edits = batch.tables.entry(table.clone()).or_default();
        let mut previous = None;
        for cell in cells {
            if cell.family == META_FAMILY {
                if cell.qualifier == BULK_LOAD {
                    bulk_load_marker(&table, &cell)?;
                }
                batch.skipped += 1;
                continue;
            }
            batch.cells += 1;
            add_cell(edits, &mut previous, cell);
        }
        batch.entries += 1;
        if let Some(t) = key.write_time {
            batch.last_write_time = Some(t);
        }
    }
    let left = call.request_cells_left();
    if left > 0 {
        return Err(RpcError::do_not_retry(format!(
            "the cell block holds {left} cells more than the entries count"
        )));
    }
    Ok(batch)
}

/// Checks every table exists and has every family its cells name, before
/// anything is applied.
fn check_tables(call: &Call<'_>, batch: &Batch) -> Result<Vec<(basalt::Table, usize)>, RpcError> {
    let mut tables = Vec::new();
    for (name, edits) in &batch.tables {
        if edits.mutations.is_empty() {
            continue;
        }
        let table = call.db.table(name)?;
        let descriptor = table.descriptor();
        for family in &edits.families {
            if descriptor.get_family(family).is_none() {
                return Err(basalt::Error::NoSuchFamily {
                    table: name.clone(),
                    family: String::from_utf8_lossy(family).into_owned(),
                }
                .into());
            }
        }
        tables.push((table, edits.mutations.len()));
    }
    Ok(tables)
}

fn apply(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request = Call::decode::<ReplicateWalEntryRequest>(param, "ReplicateWALEntryRequest")?;
    let batch = decode_batch(call, request)?;
    let tables = check_tables(call, &batch)?;
    for ((table, _), edits) in tables.iter().zip(
        batch
            .tables
            .values()
            .filter(|edits| !edits.mutations.is_empty()),
    ) {
        // Applied in the log's order, grouped per region by the table;
        // the first failure fails the call (the source sends the batch
        // again, which is harmless for what did land).
        for result in table.batch(&edits.mutations) {
            result?;
        }
    }
    call.ctx.replication_sink.applied(
        batch.entries,
        batch.cells,
        batch.skipped,
        batch.last_write_time,
    );
    Ok(encode(&ReplicateWalEntryResponse {}))
}

/// The handler of `AdminService.ReplicateWALEntry`.
pub fn replicate_wal_entry(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let result = apply(call, param);
    if let Err(e) = &result {
        call.ctx
            .replication_sink
            .failed_batches
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(error = %e, "a replicated batch was not applied; the source sends it again");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_drop_the_default_namespace_only() {
        assert_eq!(table_name(b"t").unwrap(), "t");
        assert_eq!(table_name(b"default:t").unwrap(), "t");
        assert_eq!(table_name(b"ns:t").unwrap(), "ns:t");
        assert!(table_name(b"").is_err());
        assert!(table_name(b"default:").is_err());
        assert!(table_name(&[0xff, 0xfe]).is_err());
    }

    fn cell(row: &str, t: CellType, ts: i64) -> Cell {
        let mut c = Cell::put(row.to_string(), "f", "q", ts, "v");
        c.cell_type = t;
        c
    }

    #[test]
    fn runs_of_one_row_and_type_make_one_mutation() {
        let mut edits = TableEdits::default();
        let mut previous = None;
        for c in [
            cell("a", CellType::Put, 1),
            cell("a", CellType::Put, 2),
            cell("a", CellType::DeleteColumn, 3),
            cell("a", CellType::DeleteColumn, 4),
            cell("a", CellType::DeleteFamily, 5),
            cell("b", CellType::DeleteFamily, 5),
            cell("b", CellType::Put, 6),
        ] {
            add_cell(&mut edits, &mut previous, c);
        }
        let shapes: Vec<(String, usize)> = edits
            .mutations
            .iter()
            .map(|m| match m {
                Mutation::Put(p) => (format!("put {:?}", p.row()), p.cells().len()),
                Mutation::Delete(d) => (format!("delete {:?}", d.row()), d.markers().len()),
                _ => ("other".into(), 0),
            })
            .collect();
        assert_eq!(
            shapes,
            vec![
                ("put b\"a\"".into(), 2),
                ("delete b\"a\"".into(), 2),
                ("delete b\"a\"".into(), 1),
                ("delete b\"b\"".into(), 1),
                ("put b\"b\"".into(), 1),
            ]
        );
        assert_eq!(edits.families, vec![bytes::Bytes::from_static(b"f")]);
    }
}
