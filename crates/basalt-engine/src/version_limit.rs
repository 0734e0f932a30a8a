//! A point get's early end of a column within one part of a store (a
//! memstore or a store file).
//!
//! Basalt keeps every version of a column until a major compaction (see
//! docs/hbase-semantics.md, "Only a major compaction changes what is
//! stored"), so a row updated thousands of times since holds thousands of
//! versions in the memstore and in each file flushed since. A get used to
//! collect all of them, sort them and judge them one by one, although the
//! family's VERSIONS let it return only the newest few: a zipfian
//! workload's hottest rows took milliseconds per read (issue 30's read
//! tail: 2% of YCSB C's reads after A and B over 1 ms, none of them during
//! a flush or compaction).
//!
//! The rule, for families with the classic version behaviour: within one
//! part, once a column has `limit` puts with distinct timestamps and no
//! TTL of their own, its older puts there cannot be returned, provided no
//! delete marker of the row exists anywhere. Each counted put is newer,
//! unmasked (no markers) and a version in every read ([`crate::scan`]'s
//! `RowRules` counts distinct timestamps, skips a put whose own TTL
//! expired without counting it, and applies the family's VERSIONS before
//! the read's time range and filter), so at least `limit` versions come
//! before any dropped put, whatever the other parts hold. Delete markers
//! are always kept, so the store sees whether the row has any; when it
//! does and a part dropped puts, the store collects the row again without
//! the limit ([`crate::store::Store::row_cells`]). NEW_VERSION_BEHAVIOR
//! families (versions tied to sequence ids and markers) never use it.

use basalt_types::{Cell, CellType};

/// One part's count of the current column's versions.
#[derive(Debug)]
pub(crate) struct ColumnVersionLimit {
    limit: u32,
    qualifier: Vec<u8>,
    counted: u32,
    last_counted_timestamp: Option<i64>,
    dropped: bool,
}

impl ColumnVersionLimit {
    /// A limit of `limit` versions per column (at least 1).
    pub(crate) fn new(limit: u32) -> Self {
        Self {
            limit: limit.max(1),
            qualifier: Vec::new(),
            counted: 0,
            last_counted_timestamp: None,
            dropped: false,
        }
    }

    /// Starts the next part (a part's cells are in KeyValue order; the
    /// next part starts over).
    pub(crate) fn next_part(&mut self) {
        self.qualifier.clear();
        self.counted = 0;
        self.last_counted_timestamp = None;
    }

    /// Whether the part's next cell (of `qualifier`, a `cell_type`) is
    /// collected; `false` drops it. Called in the part's order.
    pub(crate) fn admits(&mut self, qualifier: &[u8], cell_type: CellType) -> bool {
        if self.qualifier != qualifier {
            self.qualifier.clear();
            self.qualifier.extend_from_slice(qualifier);
            self.counted = 0;
            self.last_counted_timestamp = None;
        }
        if cell_type != CellType::Put || self.counted < self.limit {
            return true;
        }
        self.dropped = true;
        false
    }

    /// Notes a collected cell (one `admits` let through).
    pub(crate) fn collected(&mut self, cell: &Cell) {
        if cell.cell_type == CellType::Put
            && cell.ttl_millis.is_none()
            && self.last_counted_timestamp != Some(cell.timestamp)
        {
            self.counted += 1;
            self.last_counted_timestamp = Some(cell.timestamp);
        }
    }

    /// Whether any part dropped a put.
    pub(crate) fn dropped_any(&self) -> bool {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn cell(qualifier: &'static str, timestamp: i64, cell_type: CellType) -> Cell {
        Cell {
            row: Bytes::from_static(b"r"),
            family: Bytes::from_static(b"f"),
            qualifier: Bytes::from_static(qualifier.as_bytes()),
            timestamp,
            cell_type,
            sequence_id: 1,
            value: Bytes::new(),
            ttl_millis: None,
        }
    }

    /// The cells of one part the limit lets through.
    fn collect(limit: &mut ColumnVersionLimit, part: &[Cell]) -> Vec<(String, i64)> {
        limit.next_part();
        let mut out = Vec::new();
        for c in part {
            if limit.admits(&c.qualifier, c.cell_type) {
                limit.collected(c);
                out.push((
                    String::from_utf8_lossy(&c.qualifier).into_owned(),
                    c.timestamp,
                ));
            }
        }
        out
    }

    #[test]
    fn a_column_keeps_its_newest_versions_and_each_column_starts_over() {
        let mut limit = ColumnVersionLimit::new(2);
        let part = [
            cell("a", 9, CellType::Put),
            cell("a", 8, CellType::Put),
            cell("a", 7, CellType::Put),
            cell("b", 5, CellType::Put),
        ];
        assert_eq!(
            collect(&mut limit, &part),
            [("a".into(), 9), ("a".into(), 8), ("b".into(), 5)]
        );
        assert!(limit.dropped_any());
    }

    #[test]
    fn markers_are_always_kept_and_do_not_count() {
        let mut limit = ColumnVersionLimit::new(1);
        let part = [
            cell("a", 9, CellType::Put),
            cell("a", 8, CellType::Delete),
            cell("a", 7, CellType::Put),
        ];
        assert_eq!(
            collect(&mut limit, &part),
            [("a".into(), 9), ("a".into(), 8)]
        );
    }

    #[test]
    fn equal_timestamps_and_puts_with_their_own_ttl_count_once_or_not_at_all() {
        let mut limit = ColumnVersionLimit::new(1);
        let mut with_ttl = cell("a", 10, CellType::Put);
        with_ttl.ttl_millis = Some(5);
        let part = [
            with_ttl,
            cell("a", 9, CellType::Put),
            // The same version again (an older sequence id): not counted twice.
            cell("a", 9, CellType::Put),
            cell("a", 8, CellType::Put),
        ];
        assert_eq!(
            collect(&mut limit, &part),
            [("a".into(), 10), ("a".into(), 9)]
        );
        // Only `limit` distinct versions, then nothing: the second 9 had
        // already met a full count.
    }

    #[test]
    fn every_part_counts_on_its_own() {
        let mut limit = ColumnVersionLimit::new(1);
        let first = [cell("a", 9, CellType::Put), cell("a", 8, CellType::Put)];
        let second = [cell("a", 7, CellType::Put), cell("a", 6, CellType::Put)];
        assert_eq!(collect(&mut limit, &first), [("a".into(), 9)]);
        assert_eq!(collect(&mut limit, &second), [("a".into(), 7)]);
    }
}
