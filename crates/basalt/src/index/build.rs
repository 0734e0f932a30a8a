//! Creating an index on a table that has rows: the index table, and the
//! backfill of the rows written before the index existed.
//!
//! The order (the master runs steps 1 and 2 as one call, the caller of
//! `Database::create_index` runs 3 and 4):
//!
//! 1. the index table is created (one family, one version);
//! 2. the data table's descriptor gains the index in state `Building`,
//!    stamped with its creation time `c`, and every region of the table
//!    reopens with it (the alter procedure of `cluster/alter.rs`), so
//!    every write from then on keeps the index, with order timestamps at
//!    or above `c`;
//! 3. the backfill reads every row's current values and writes its index
//!    row, verified, at `c - 1`. A write that kept the index has a newer
//!    timestamp, so its rows win over the backfill's in whichever order
//!    they land: a backfilled row made stale meanwhile is hidden by that
//!    write's unverified flag or its delete;
//! 4. the index becomes `Active`: reads may use it.
//!
//! The backfill writes the same cells each time it runs over the same
//! data, so an interrupted build is resumed by running it again.

use basalt_types::index::{covered_qualifier, INDEX_FAMILY, VERIFIED, VERIFIED_QUALIFIER};
use basalt_types::{
    BloomType, ColumnFamilyDescriptor, IndexDescriptor, Mutation, Put, Result, RowResult, Scan,
    TableDescriptor,
};

use super::visible::key_and_covered;
use crate::table::Table;

/// Index rows written per batch by the backfill.
const BACKFILL_BATCH_ROWS: usize = 512;

/// The descriptor of the table that holds index `index` of `table`.
pub(crate) fn index_table_descriptor(
    table: &TableDescriptor,
    index: &IndexDescriptor,
) -> TableDescriptor {
    let mut family = ColumnFamilyDescriptor::new(String::from_utf8_lossy(INDEX_FAMILY));
    // One version: an index row's history is not the data's (each
    // mutation restamps it), and older flags would only be read past.
    family.max_versions = 1;
    family.bloom_filter = BloomType::Row;
    // A delete marker hides only what was written before it: a row's
    // index writes after a reopen may carry the same order timestamp as
    // writes before it (the order clock restarts with the region), and
    // must still win over them in the order they were made.
    family.new_version_behavior = true;
    TableDescriptor::new(basalt_types::index::index_table_name(
        table.name(),
        &index.name,
    ))
    .family(family)
}

/// The index row of data row `row` as the backfill writes it (verified,
/// at `stamp`), or `None` when the row has no value for the first indexed
/// column.
pub(crate) fn index_put(index: &IndexDescriptor, row: &RowResult, stamp: i64) -> Option<Put> {
    let (key, covered) = key_and_covered(index, &row.cells, &row.row);
    let mut put = Put::new(key?).add_at(INDEX_FAMILY, VERIFIED_QUALIFIER, stamp, VERIFIED);
    for ((family, qualifier), value) in index.covered.iter().zip(covered) {
        if let Some(v) = value {
            put = put.add_at(INDEX_FAMILY, covered_qualifier(family, qualifier), stamp, v);
        }
    }
    Some(put)
}

/// Step 3: writes the index row of every row of `data` to `index_table`;
/// returns how many rows it indexed. `progress` is told the count after
/// each batch.
pub(crate) fn backfill(
    data: &Table,
    index_table: &Table,
    index: &IndexDescriptor,
    progress: &mut dyn FnMut(u64),
) -> Result<u64> {
    let mut scan = Scan::new();
    for (family, qualifier) in index.read_columns() {
        scan.columns.add_column(family, qualifier);
    }
    scan.caching = Some(BACKFILL_BATCH_ROWS);
    let stamp = index.created_at_ms.saturating_sub(1);
    let mut batch: Vec<Mutation> = Vec::with_capacity(BACKFILL_BATCH_ROWS);
    let mut indexed = 0u64;
    let write = |batch: &mut Vec<Mutation>, indexed: &mut u64| -> Result<()> {
        for result in index_table.batch(batch) {
            result?;
        }
        *indexed += batch.len() as u64;
        batch.clear();
        Ok(())
    };
    for row in data.scan(&scan)? {
        if let Some(put) = index_put(index, &row?, stamp) {
            batch.push(Mutation::Put(put));
        }
        if batch.len() >= BACKFILL_BATCH_ROWS {
            write(&mut batch, &mut indexed)?;
            progress(indexed);
        }
    }
    write(&mut batch, &mut indexed)?;
    progress(indexed);
    Ok(indexed)
}
