//! A row's latest visible values from its raw cells: what a get would
//! answer once a pending write commits; and the two reads every part of
//! indexing shares (a raw read of one row, and the index key and covered
//! values a row's latest cells give), kept in this leaf module so the
//! maintainer, the backfill and the index scan depend on it and not on
//! each other or on `index/mod.rs`.
//!
//! Index maintenance needs a row's indexed values after a mutation before
//! the mutation reaches the log (step 1 of `maintain.rs`), so it cannot
//! read them back: it reads the row raw (every version and delete marker)
//! and applies HBase's read rules to those cells plus the pending ones.
//! The rules are the ones `docs/hbase-semantics.md` states for a get of
//! the latest version:
//!
//! - a `DeleteFamily` at `t` hides the family's cells at or before `t`, a
//!   `DeleteFamilyVersion` at `t` those at exactly `t`, a `DeleteColumn`
//!   at `t` the column's at or before `t`, a `Delete` at `t` the column's
//!   at exactly `t`;
//! - under NEW_VERSION_BEHAVIOR a marker hides only cells written before
//!   it (a put written after a delete of its timestamp is visible);
//!   classic families let a marker hide later puts too (HBase's "deletes
//!   mask puts" rule);
//! - an expired cell (family TTL, or the cell's own TTL) is not visible,
//!   unless the family keeps a minimum of versions, which keeps the
//!   newest;
//! - of the visible puts of a column the newest timestamp wins, and of two
//!   at one timestamp the one written later.

use std::collections::BTreeMap;

use bytes::Bytes;

use basalt_types::{Cell, CellType, ColumnFamilyDescriptor, IndexDescriptor, Scan};

/// A cell and when it was written relative to the others: existing cells
/// carry their sequence ids, pending ones rank above every existing one,
/// in the order the row's mutations were made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ranked<'a> {
    pub cell: &'a Cell,
    pub rank: u64,
}

/// The newest visible value of each of `columns` (`None` when the column
/// has none), at time `now_ms`. `families` gives each family's rules; a
/// family it does not name has the defaults (classic, no TTL).
pub(crate) fn latest_values(
    cells: &[Ranked<'_>],
    columns: &[(Bytes, Bytes)],
    families: &BTreeMap<Bytes, ColumnFamilyDescriptor>,
    now_ms: i64,
) -> Vec<Option<Bytes>> {
    columns
        .iter()
        .map(|(family, qualifier)| {
            let descriptor = families.get(family);
            latest_of_column(cells, family, qualifier, descriptor, now_ms)
        })
        .collect()
}

fn latest_of_column(
    cells: &[Ranked<'_>],
    family: &[u8],
    qualifier: &[u8],
    descriptor: Option<&ColumnFamilyDescriptor>,
    now_ms: i64,
) -> Option<Bytes> {
    let new_version_behavior = descriptor.is_some_and(|d| d.new_version_behavior);
    let keeps_newest = descriptor.is_some_and(|d| d.min_versions > 0);
    let family_ttl_ms = descriptor
        .and_then(|d| d.ttl_seconds)
        .map(|s| i64::try_from(s.saturating_mul(1000)).unwrap_or(i64::MAX));
    let markers: Vec<&Ranked<'_>> = cells
        .iter()
        .filter(|r| r.cell.family == family && r.cell.cell_type != CellType::Put)
        .collect();
    let hidden = |put: &Ranked<'_>| {
        markers.iter().any(|m| {
            let reaches = match m.cell.cell_type {
                CellType::DeleteFamily => put.cell.timestamp <= m.cell.timestamp,
                CellType::DeleteFamilyVersion => put.cell.timestamp == m.cell.timestamp,
                CellType::DeleteColumn => {
                    m.cell.qualifier == qualifier && put.cell.timestamp <= m.cell.timestamp
                }
                CellType::Delete => {
                    m.cell.qualifier == qualifier && put.cell.timestamp == m.cell.timestamp
                }
                CellType::Put => false,
            };
            reaches && (!new_version_behavior || m.rank >= put.rank)
        })
    };
    let expired = |put: &Ranked<'_>| {
        let ttl = match (family_ttl_ms, put.cell.ttl_millis) {
            (Some(f), Some(c)) => Some(f.min(i64::try_from(c).unwrap_or(i64::MAX))),
            (Some(f), None) => Some(f),
            (None, Some(c)) => Some(i64::try_from(c).unwrap_or(i64::MAX)),
            (None, None) => None,
        };
        ttl.is_some_and(|ttl| put.cell.timestamp.saturating_add(ttl) <= now_ms)
    };
    let newest = cells
        .iter()
        .filter(|r| {
            r.cell.cell_type == CellType::Put
                && r.cell.family == family
                && r.cell.qualifier == qualifier
                && !hidden(r)
        })
        .max_by_key(|r| (r.cell.timestamp, r.rank))?;
    if expired(newest) && !keeps_newest {
        return None;
    }
    Some(newest.cell.value.clone())
}

/// A raw read of row `row` alone: every version and delete marker (what
/// the maintainer reads of a data row, and of the index rows it stamps).
pub(crate) fn raw_row_scan(row: &Bytes) -> Scan {
    let mut scan = Scan::new();
    scan.start_row = row.clone();
    let mut stop = row.to_vec();
    stop.push(0);
    scan.stop_row = Bytes::from(stop);
    scan.raw = true;
    scan.max_versions = u32::MAX;
    scan
}

/// The index key data row `row` gives `index` with its latest values
/// `cells` (`None`: no value for the first indexed column), and its
/// covered values, in the order of `index.covered`.
pub(crate) fn key_and_covered(
    index: &IndexDescriptor,
    cells: &[Cell],
    row: &[u8],
) -> (Option<Bytes>, Vec<Option<Bytes>>) {
    let value = |family: &Bytes, qualifier: &Bytes| {
        cells
            .iter()
            .find(|c| c.family == family && c.qualifier == qualifier)
            .map(|c| c.value.clone())
    };
    let indexed: Vec<Option<Bytes>> = index
        .columns
        .iter()
        .map(|c| value(&c.family, &c.qualifier))
        .collect();
    let borrowed: Vec<Option<&[u8]>> = indexed.iter().map(|v| v.as_deref()).collect();
    let covered = index.covered.iter().map(|(f, q)| value(f, q)).collect();
    (index.key(&borrowed, row), covered)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(qualifier: &str, ts: i64, kind: CellType, value: &str) -> Cell {
        Cell {
            row: Bytes::from_static(b"r"),
            family: Bytes::from_static(b"f"),
            qualifier: Bytes::copy_from_slice(qualifier.as_bytes()),
            timestamp: ts,
            cell_type: kind,
            sequence_id: 0,
            value: Bytes::copy_from_slice(value.as_bytes()),
            ttl_millis: None,
        }
    }

    fn value_of(cells: &[Cell], family: ColumnFamilyDescriptor, now: i64) -> Option<Bytes> {
        let ranked: Vec<Ranked<'_>> = cells
            .iter()
            .enumerate()
            .map(|(i, cell)| Ranked {
                cell,
                rank: i as u64,
            })
            .collect();
        let families = BTreeMap::from([(Bytes::from_static(b"f"), family)]);
        let columns = [(Bytes::from_static(b"f"), Bytes::from_static(b"a"))];
        latest_values(&ranked, &columns, &families, now)
            .pop()
            .flatten()
    }

    fn classic() -> ColumnFamilyDescriptor {
        ColumnFamilyDescriptor::new("f")
    }

    #[test]
    fn the_newest_put_wins_and_a_later_write_at_one_timestamp_wins_that() {
        let cells = [
            cell("a", 5, CellType::Put, "old"),
            cell("a", 9, CellType::Put, "new"),
            cell("b", 20, CellType::Put, "other column"),
        ];
        assert_eq!(value_of(&cells, classic(), 10).unwrap(), "new");
        let same_ts = [
            cell("a", 9, CellType::Put, "first"),
            cell("a", 9, CellType::Put, "second"),
        ];
        assert_eq!(value_of(&same_ts, classic(), 10).unwrap(), "second");
    }

    #[test]
    fn each_marker_kind_hides_what_hbase_hides() {
        let versions = || {
            vec![
                cell("a", 1, CellType::Put, "v1"),
                cell("a", 2, CellType::Put, "v2"),
            ]
        };
        for (marker, expected) in [
            (cell("a", 2, CellType::Delete, ""), Some("v1")),
            (cell("a", 1, CellType::Delete, ""), Some("v2")),
            (cell("a", 2, CellType::DeleteColumn, ""), None),
            (cell("a", 1, CellType::DeleteColumn, ""), Some("v2")),
            (cell("", 2, CellType::DeleteFamily, ""), None),
            (cell("", 2, CellType::DeleteFamilyVersion, ""), Some("v1")),
            (cell("b", 2, CellType::DeleteColumn, ""), Some("v2")),
        ] {
            let mut cells = versions();
            cells.push(marker.clone());
            let got = value_of(&cells, classic(), 10);
            assert_eq!(
                got.as_deref(),
                expected.map(str::as_bytes),
                "{:?}",
                marker.cell_type
            );
        }
    }

    #[test]
    fn a_classic_marker_hides_a_later_put_below_it_but_new_version_behavior_does_not() {
        let cells = [
            cell("", 5, CellType::DeleteFamily, ""),
            cell("a", 3, CellType::Put, "written after the delete"),
        ];
        assert_eq!(value_of(&cells, classic(), 10), None);
        let mut nvb = classic();
        nvb.new_version_behavior = true;
        assert_eq!(
            value_of(&cells, nvb, 10).unwrap(),
            "written after the delete"
        );
    }

    #[test]
    fn expired_cells_are_not_visible_unless_a_minimum_of_versions_keeps_them() {
        let mut family = classic();
        family.ttl_seconds = Some(1);
        let cells = [cell("a", 1_000, CellType::Put, "v")];
        assert!(value_of(&cells, family.clone(), 1_999).is_some());
        assert_eq!(value_of(&cells, family.clone(), 2_000), None);
        family.min_versions = 1;
        assert!(value_of(&cells, family, 5_000).is_some());
        let mut own_ttl = cell("a", 1_000, CellType::Put, "v");
        own_ttl.ttl_millis = Some(10);
        assert_eq!(value_of(&[own_ttl], classic(), 1_010), None);
    }
}
