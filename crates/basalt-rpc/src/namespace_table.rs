//! HBase 2's `hbase:namespace` table as native clients read it.
//!
//! HBase 2.x keeps its namespaces in a system table, one row per namespace
//! (the name as the row key), family `info`, qualifier `d`, the value the
//! serialized `NamespaceDescriptor` message (no `PBUF` prefix). Tools and
//! older clients read it directly; the Java client finds its one region
//! through `hbase:meta` like any table's. Basalt keeps namespaces in its
//! catalog, so, as with `hbase:meta` (`meta.rs`), this module builds the
//! rows from the catalog on every read: they are always current.
//!
//! The table is read-only here: gets (and `exists`), scans and the gets of
//! a batch are served; any write is refused with
//! `DoNotRetryIOException`. HBase's own master is the only writer of its
//! table, through the namespace calls of `MasterService`, which is where
//! Basalt's namespaces are changed too.

use basalt::{Cell, CellType, RegionInfo, RowResult, ScanMetrics};
use bytes::Bytes;

use crate::context::RpcContext;
use crate::error::RpcError;
use crate::proto::hbase as pb;
use crate::schema;

/// The table's name.
pub const NAMESPACE_TABLE: &str = "hbase:namespace";
/// Its one family.
pub const FAMILY: &[u8] = b"info";
/// The qualifier of each row's one cell.
pub const QUALIFIER: &[u8] = b"d";
/// Its one region's id. Fixed, rather than a creation time as HBase's, so
/// the region's name (which clients cache) is the same across restarts
/// and on every server of a cluster.
pub const REGION_ID: u64 = 1;

/// The table's one region: the whole key space.
pub fn region_info() -> RegionInfo {
    RegionInfo {
        id: REGION_ID,
        table: NAMESPACE_TABLE.to_string(),
        start_key: Bytes::new(),
        end_key: Bytes::new(),
    }
}

/// Whether a region name (full or encoded) names the table's region.
pub fn is_region(name: &[u8], encoded: bool) -> bool {
    let info = region_info();
    if encoded {
        info.encoded_name().as_bytes() == name
    } else {
        info.region_name() == name
    }
}

/// The table's descriptor, as HBase 2.6 describes it: family `info`
/// keeping 10 versions, in memory, 8 KiB blocks, a row bloom filter.
pub fn table_schema() -> pb::TableSchema {
    schema::table_schema(
        &basalt::TableDescriptor::new(NAMESPACE_TABLE).family(
            basalt::ColumnFamilyDescriptor::new("info")
                .max_versions(10)
                .in_memory(true)
                .block_size(8192)
                .bloom_filter(basalt::BloomType::Row),
        ),
    )
}

/// The answer to any write of the table.
pub fn read_only() -> RpcError {
    RpcError::do_not_retry(
        "hbase:namespace is served from Basalt's catalog and cannot be written: create, modify and delete namespaces through the Admin API (MasterService)",
    )
}

/// Every row of the table now, in row (byte) order: one per namespace,
/// the reserved `default` and `hbase` included.
pub fn rows(ctx: &RpcContext) -> Vec<RowResult> {
    crate::meta::catch_up(ctx);
    // The server's start code, as for hbase:meta: every read of the same
    // namespaces answers the same cells (Basalt keeps no creation times).
    let ts = i64::try_from(ctx.identity.start_code).unwrap_or(i64::MAX);
    let mut rows: Vec<RowResult> = ctx
        .db
        .list_namespaces()
        .iter()
        .map(|namespace| {
            let row = Bytes::from(namespace.name.clone().into_bytes());
            let value = prost::Message::encode_to_vec(&schema::namespace_message(namespace));
            RowResult {
                row: row.clone(),
                cells: vec![Cell {
                    row,
                    family: Bytes::from_static(FAMILY),
                    qualifier: Bytes::from_static(QUALIFIER),
                    timestamp: ts,
                    cell_type: CellType::Put,
                    sequence_id: 0,
                    value: Bytes::from(value),
                    ttl_millis: None,
                }],
            }
        })
        .collect();
    rows.sort_by(|a, b| a.row.cmp(&b.row));
    rows
}

/// A get of the table: the row's cells cut to the get's columns and time
/// range, then through its filter and versions as a stored row would be.
pub fn get(ctx: &RpcContext, query: &basalt::Get) -> Result<RowResult, RpcError> {
    let Some(row) = rows(ctx).into_iter().find(|r| r.row == query.row) else {
        return Ok(RowResult {
            row: query.row.clone(),
            cells: Vec::new(),
        });
    };
    let mut filter = query.filter.as_ref().map(|f| f.build(false));
    let cells = selected(row.cells, &query.columns, &query.time_range);
    let mut metrics = ScanMetrics::default();
    let cells = basalt::read_held_row(
        &row.row,
        cells,
        filter.as_deref_mut(),
        query.max_versions,
        &mut metrics,
    )?
    .unwrap_or_default();
    Ok(RowResult {
        row: row.row,
        cells,
    })
}

/// A scan of the table, in the scan's direction: every row the scan's
/// columns, time range, filter and versions leave something of. The rows
/// are not cut to the scan's start and stop rows here: the scanner does
/// that as for any region. One filter serves the whole scan, so a filter
/// that counts rows (a page filter) counts across them.
pub fn scan(ctx: &RpcContext, query: &basalt::Scan) -> Result<Vec<RowResult>, RpcError> {
    let mut all = rows(ctx);
    if query.reversed {
        all.reverse();
    }
    let mut filter = query.filter.as_ref().map(|f| f.build(query.reversed));
    let mut metrics = ScanMetrics::default();
    let mut out = Vec::new();
    for row in all {
        if filter.as_mut().is_some_and(|f| f.filter_all_remaining()) {
            break;
        }
        let cells = selected(row.cells, &query.columns, &query.time_range);
        if let Some(cells) = basalt::read_held_row(
            &row.row,
            cells,
            filter.as_deref_mut(),
            query.max_versions,
            &mut metrics,
        )? {
            out.push(RowResult {
                row: row.row,
                cells,
            });
        }
    }
    Ok(out)
}

/// The cells a read's columns and time range select, as a store does
/// before its filter sees them.
fn selected(
    cells: Vec<Cell>,
    columns: &basalt_types::query::ColumnSelection,
    time_range: &basalt::TimeRange,
) -> Vec<Cell> {
    cells
        .into_iter()
        .filter(|c| columns.is_all() || columns.includes(&c.family, &c.qualifier))
        .filter(|c| time_range.contains(c.timestamp))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn the_region_is_named_as_hbase_names_the_one_region_of_a_table() {
        let info = region_info();
        let name = info.region_name();
        assert!(name.starts_with(b"hbase:namespace,,1."));
        assert!(is_region(&name, false));
        assert!(is_region(info.encoded_name().as_bytes(), true));
        assert!(!is_region(b"hbase:meta,,1", false));
    }

    #[test]
    fn the_descriptor_has_hbases_one_family() {
        let schema = table_schema();
        assert_eq!(schema.column_families.len(), 1);
        assert_eq!(schema.column_families[0].name, b"info");
    }
}
