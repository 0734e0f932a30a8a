//! Compaction: which files to merge, and what a major compaction may drop.
//!
//! Minor compactions merge a few files and drop nothing: a file outside the
//! selection may hold a delete marker or a newer version that changes what
//! the selected cells mean. A major compaction sees every file of the store
//! and applies the rules a read applies (`scan.rs`): it keeps exactly the
//! cells a read of all versions would return, so no later read can tell it
//! happened. Families with KEEP_DELETED_CELLS keep deleted cells and markers
//! for time-travel reads; for them only cells no read can ever return are
//! dropped.
//!
//! What a major compaction cannot preserve is HBase's masking quirk: a
//! delete marker it drops no longer hides puts written later with older
//! timestamps, exactly as in HBase.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use basalt_types::descriptor::ColumnFamilyDescriptor;
use basalt_types::query::TimeRange;
use basalt_types::{Cell, CellType, Result};

use crate::scan::{ReadOptions, StoreScanner};
use crate::source::{CellSource, MergedSource};

/// Cells in KeyValue order, one at a time.
pub trait CellStream {
    /// The next cell, or `None` at the end.
    fn next_cell(&mut self) -> Result<Option<Cell>>;
}

impl<S: CellSource + ?Sized> CellStream for S {
    fn next_cell(&mut self) -> Result<Option<Cell>> {
        let cell = self.peek().cloned();
        if cell.is_some() {
            self.advance()?;
        }
        Ok(cell)
    }
}

/// When and what to compact: a ratio-based exploring policy in the manner
/// of HBase's ExploringCompactionPolicy.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPolicy {
    /// Fewest files a minor compaction merges.
    pub min_files: usize,
    /// Most files a minor compaction merges.
    pub max_files: usize,
    /// A file joins a selection only if it is at most `ratio` times the size
    /// of the others in it together: big old files are not rewritten to
    /// absorb small new ones.
    pub ratio: f64,
    /// With this many files, compact the cheapest window even if no window
    /// satisfies the ratio, so the file count stays bounded.
    pub max_files_before_forced: usize,
}

impl Default for CompactionPolicy {
    fn default() -> Self {
        CompactionPolicy {
            min_files: 3,
            max_files: 10,
            ratio: 1.2,
            max_files_before_forced: 16,
        }
    }
}

impl CompactionPolicy {
    /// Picks a contiguous run of files (sizes oldest first) to merge, or
    /// `None`. Among valid runs it prefers more files, then fewer bytes.
    pub fn select(&self, sizes: &[u64]) -> Option<Range<usize>> {
        let n = sizes.len();
        let min = self.min_files.max(2);
        if n < min {
            return None;
        }
        let mut best: Option<(Range<usize>, u64)> = None;
        let mut cheapest: Option<(Range<usize>, u64)> = None;
        for start in 0..n {
            for end in (start + min)..=(start + self.max_files).min(n) {
                let window = &sizes[start..end];
                let total: u64 = window.iter().sum();
                if cheapest.as_ref().is_none_or(|(_, t)| total < *t) && end - start == min {
                    cheapest = Some((start..end, total));
                }
                let in_ratio = window
                    .iter()
                    .all(|&s| s as f64 <= self.ratio * (total - s) as f64);
                if !in_ratio {
                    continue;
                }
                let better = match &best {
                    None => true,
                    Some((r, t)) => {
                        (end - start) > r.len() || ((end - start) == r.len() && total < *t)
                    }
                };
                if better {
                    best = Some((start..end, total));
                }
            }
        }
        best.or(if n >= self.max_files_before_forced {
            cheapest
        } else {
            None
        })
        .map(|(r, _)| r)
    }
}

/// A major compaction's output without KEEP_DELETED_CELLS: the cells a read
/// of every version would return (delete markers, deleted and surplus
/// versions, expired cells and overwritten duplicates gone).
#[derive(Debug)]
pub struct Collecting {
    scanner: StoreScanner,
    row: Option<Bytes>,
}

impl Collecting {
    /// Collects from `merged` (positioned at its start) under `family`'s
    /// rules at time `now`.
    pub fn new(merged: MergedSource, family: Arc<ColumnFamilyDescriptor>, now: i64) -> Self {
        let options = ReadOptions {
            max_versions: u32::MAX,
            time_range: TimeRange::all(),
            raw: false,
            now,
        };
        Collecting {
            scanner: StoreScanner::new(merged, family, None, &options),
            row: None,
        }
    }
}

impl CellStream for Collecting {
    fn next_cell(&mut self) -> Result<Option<Cell>> {
        loop {
            let row = match &self.row {
                Some(r) => r.clone(),
                None => match self.scanner.peek_row() {
                    Some(r) => {
                        self.row = Some(r.clone());
                        r.clone()
                    }
                    None => return Ok(None),
                },
            };
            match self.scanner.next_candidate(&row)? {
                Some(cell) => return Ok(Some(cell)),
                // The row is done; the scanner already sits in the next one.
                None => self.row = None,
            }
        }
    }
}

/// A major compaction's output with KEEP_DELETED_CELLS: everything, except
/// cells no read can return: older writes at a timestamp a newer write of the
/// same column overwrote, (without MIN_VERSIONS) puts past the family's TTL,
/// and puts past their own TTL.
#[derive(Debug)]
pub struct Retaining {
    merged: MergedSource,
    oldest_unexpired: Option<i64>,
    /// The compaction's time, for puts with their own TTL.
    now: i64,
    last_put: Option<Cell>,
    /// NEW_VERSION_BEHAVIOR: an overwritten put still counts as a version
    /// at points of history before its overwrite, so it is kept.
    keep_overwritten: bool,
}

impl Retaining {
    /// Retains from `merged` (positioned at its start) under `family`'s rules.
    pub fn new(merged: MergedSource, family: &ColumnFamilyDescriptor, now: i64) -> Self {
        let oldest_unexpired = match (family.ttl_millis(), family.min_versions) {
            (Some(ttl), 0) => Some(now.saturating_sub(ttl)),
            _ => None,
        };
        Retaining {
            merged,
            oldest_unexpired,
            now,
            last_put: None,
            keep_overwritten: family.new_version_behavior,
        }
    }
}

impl CellStream for Retaining {
    fn next_cell(&mut self) -> Result<Option<Cell>> {
        while let Some(cell) = self.merged.next_cell()? {
            if cell.cell_type != CellType::Put {
                return Ok(Some(cell));
            }
            let overwritten = !self.keep_overwritten
                && self
                    .last_put
                    .as_ref()
                    .is_some_and(|p| p.same_column(&cell) && p.timestamp == cell.timestamp);
            // A put past its own TTL is expired whatever MIN_VERSIONS says.
            let expired = self
                .oldest_unexpired
                .is_some_and(|oldest| cell.timestamp < oldest)
                || cell.ttl_expired(self.now);
            self.last_put = Some(cell.clone());
            if !overwritten && !expired {
                return Ok(Some(cell));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::first_on_row;
    use crate::source::tests::VecSource;

    #[test]
    fn policy_needs_enough_files() {
        let p = CompactionPolicy::default();
        assert_eq!(p.select(&[10, 10]), None);
        assert_eq!(p.select(&[10, 10, 10]), Some(0..3));
    }

    #[test]
    fn policy_leaves_a_big_old_file_alone() {
        let p = CompactionPolicy::default();
        // 1000 is far more than 1.2x the rest: only the small files merge.
        assert_eq!(p.select(&[1000, 10, 12, 11]), Some(1..4));
    }

    #[test]
    fn policy_caps_the_window_and_forces_when_files_pile_up() {
        let p = CompactionPolicy::default();
        let sizes = vec![10u64; 25];
        assert_eq!(p.select(&sizes).map(|r| r.len()), Some(10));
        // Each file three times the next one never satisfies the ratio
        // (3^k > 1.2 * (3^k - 1) / 2)...
        let steep: Vec<u64> = (0..20).map(|i| 3u64.pow(19 - i)).collect();
        let forced = p.select(&steep).unwrap();
        // ...but with 20 files the cheapest window of three is forced.
        assert_eq!(forced, 17..20);
        assert_eq!(p.select(&steep[..5]), None);
    }

    fn cell(q: &str, ts: i64, t: CellType, seq: u64) -> Cell {
        crate::source::tests::cell(q, ts, t, seq, "v")
    }

    fn drain(stream: &mut dyn CellStream) -> Vec<(String, i64, CellType)> {
        let mut out = vec![];
        while let Some(c) = stream.next_cell().unwrap() {
            out.push((
                String::from_utf8_lossy(&c.qualifier).into_owned(),
                c.timestamp,
                c.cell_type,
            ));
        }
        out
    }

    fn merged(cells: Vec<Cell>) -> MergedSource {
        let mut m = MergedSource::new(vec![Box::new(VecSource::new(cells))]);
        m.seek(&first_on_row(b"")).unwrap();
        m
    }

    #[test]
    fn major_compaction_keeps_what_reads_return() {
        let cells = vec![
            cell("a", 9, CellType::Put, 1),
            cell("a", 8, CellType::Put, 2),
            cell("a", 7, CellType::Put, 3),
            cell("b", 5, CellType::DeleteColumn, 4),
            cell("b", 4, CellType::Put, 5),
            cell("c", 3, CellType::Put, 6),
            cell("c", 3, CellType::Put, 7),
        ];
        let family = Arc::new(ColumnFamilyDescriptor::new("f").max_versions(2));
        let out = drain(&mut Collecting::new(merged(cells), family, 100));
        assert_eq!(
            out,
            vec![
                ("a".into(), 9, CellType::Put),
                ("a".into(), 8, CellType::Put),
                ("c".into(), 3, CellType::Put)
            ]
        );
    }

    #[test]
    fn retaining_keeps_markers_and_drops_only_the_unreadable() {
        let cells = vec![
            cell("a", 50, CellType::DeleteColumn, 4),
            cell("a", 40, CellType::Put, 3),
            cell("a", 40, CellType::Put, 2),
            cell("a", 1, CellType::Put, 1),
        ];
        let family = ColumnFamilyDescriptor::new("f").ttl_seconds(1);
        // now = 1030: ttl 1000 ms, so ts 1 has expired and ts 40 has not.
        let out = drain(&mut Retaining::new(merged(cells), &family, 1030));
        assert_eq!(
            out,
            vec![
                ("a".into(), 50, CellType::DeleteColumn),
                ("a".into(), 40, CellType::Put)
            ]
        );
    }
}
