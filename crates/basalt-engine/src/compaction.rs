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

use basalt_types::descriptor::{ColumnFamilyDescriptor, KeepDeletedCells};
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

/// A major compaction's output with KEEP_DELETED_CELLS (TRUE, or TTL with
/// the markers its TTL has not expired), by HBase's rules for such a
/// compaction, so the same writes leave the same cells on both:
///
/// - A delete marker older than every put in the compacted files
///   (`earliest_put`) can mask nothing: it goes, with the rest of its
///   column (which, being older still, can only be markers). A put older
///   than that goes too: the files record the oldest put HBase's flush
///   would have written (`KeptPutFloor`), so an older one was a surplus
///   version HBase's flush dropped.
/// - Deleted puts are kept but count as versions: a column keeps at most
///   VERSIONS puts, deleted or not; what is beyond goes, markers included.
///   So the compaction changes what some reads return, as in HBase (a
///   delete that hid newer versions makes older ones disappear).
/// - A cell with the timestamp and type of the cell kept before it in its
///   column is an older write of the same thing: it goes.
/// - TTL: without MIN_VERSIONS a column ends at its first expired cell; a
///   put past its own TTL goes. With KEEP_DELETED_CELLS => TTL, a marker
///   the TTL has expired goes and still masks (classic rules) the puts it
///   covers.
///
/// Classic families count markers as no version. NEW_VERSION_BEHAVIOR
/// families follow HBase's `NewVersionBehaviorTracker` as a compaction
/// drives it: markers count as versions, a put at the timestamp of the put
/// before it is dropped, at most VERSIONS puts are counted per column,
/// and, as in HBase, the count is reset only by a column's first put (the
/// markers in front of it count against the column before). See
/// docs/hbase-semantics.md ("Major compactions with KEEP_DELETED_CELLS").
#[derive(Debug)]
pub struct Retaining {
    merged: MergedSource,
    rules: RetainRules,
}

impl Retaining {
    /// Retains from `merged` (positioned at its start) under `family`'s
    /// rules at time `now`. `earliest_put` is the oldest put the compacted
    /// files record (`i64::MIN` when unknown: no marker is dropped for being
    /// older than every put).
    pub fn new(
        merged: MergedSource,
        family: &ColumnFamilyDescriptor,
        now: i64,
        earliest_put: i64,
    ) -> Self {
        Retaining {
            merged,
            rules: RetainRules::new(family, now, earliest_put),
        }
    }
}

impl CellStream for Retaining {
    fn next_cell(&mut self) -> Result<Option<Cell>> {
        while let Some(cell) = self.merged.next_cell()? {
            if self.rules.keep(&cell) {
                return Ok(Some(cell));
            }
        }
        Ok(None)
    }
}

/// What [`RetainRules`] decides about one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retain {
    Keep,
    Drop,
    /// Drop this cell and every later cell of its column.
    DropColumn,
    /// Keep this cell, drop every later cell of its column.
    KeepEndColumn,
}

/// The per-cell state of [`Retaining`]: cells of one store, in KeyValue
/// order.
#[derive(Debug)]
struct RetainRules {
    max_versions: u32,
    min_versions: u32,
    /// Cells older than this are expired (`i64::MIN` without a TTL).
    oldest_unexpired: i64,
    /// KEEP_DELETED_CELLS => TTL: expired markers are dropped.
    markers_expire: bool,
    new_version_behavior: bool,
    now: i64,
    earliest_put: i64,
    /// Where the compaction is in the current row (all reset by a new row).
    at: RowProgress,
}

/// [`RetainRules`]' state within one row.
#[derive(Debug, Default)]
struct RowProgress {
    row: Option<Bytes>,
    /// The column (qualifier) whose remaining cells are dropped.
    dropping_column: Option<Bytes>,
    /// Classic: the column being counted, its put count and the timestamp
    /// and type of the last cell kept in it.
    column: Option<Bytes>,
    count: u32,
    last_kept: Option<(i64, CellType)>,
    /// Classic, KEEP_DELETED_CELLS => TTL: expired markers still mask.
    expired_markers: ExpiredMarkers,
    /// NEW_VERSION_BEHAVIOR: the column of the last put seen, its
    /// timestamp, and the puts counted in that column.
    last_put: Option<(Bytes, i64)>,
    puts_counted: u32,
}

/// Expired markers of the current row (family ones) and column.
#[derive(Debug, Default)]
struct ExpiredMarkers {
    family_up_to: Option<i64>,
    family_versions: Vec<i64>,
    qualifier: Option<Bytes>,
    column_up_to: Option<i64>,
    column_versions: Vec<i64>,
}

impl ExpiredMarkers {
    fn track(&mut self, marker: &Cell) {
        self.enter_column(&marker.qualifier);
        let ts = marker.timestamp;
        match marker.cell_type {
            CellType::DeleteFamily => self.family_up_to = self.family_up_to.max(Some(ts)),
            CellType::DeleteFamilyVersion => self.family_versions.push(ts),
            CellType::DeleteColumn => self.column_up_to = self.column_up_to.max(Some(ts)),
            CellType::Delete => self.column_versions.push(ts),
            CellType::Put => {}
        }
    }

    fn enter_column(&mut self, qualifier: &Bytes) {
        if self.qualifier.as_ref() != Some(qualifier) {
            self.qualifier = Some(qualifier.clone());
            self.column_up_to = None;
            self.column_versions.clear();
        }
    }

    /// How an expired marker affects `put`: all of its column from here
    /// (`DropColumn`), this version (`Drop`) or nothing (`Keep`).
    fn verdict(&mut self, put: &Cell) -> Retain {
        self.enter_column(&put.qualifier);
        let ts = put.timestamp;
        if self.family_up_to.is_some_and(|d| ts <= d) || self.column_up_to.is_some_and(|d| ts <= d)
        {
            Retain::DropColumn
        } else if self.family_versions.contains(&ts) || self.column_versions.contains(&ts) {
            Retain::Drop
        } else {
            Retain::Keep
        }
    }
}

impl RetainRules {
    fn new(family: &ColumnFamilyDescriptor, now: i64, earliest_put: i64) -> Self {
        RetainRules {
            max_versions: family.max_versions,
            min_versions: family.min_versions,
            oldest_unexpired: family
                .ttl_millis()
                .map_or(i64::MIN, |ttl| now.saturating_sub(ttl)),
            markers_expire: family.keep_deleted_cells == KeepDeletedCells::Ttl,
            new_version_behavior: family.new_version_behavior,
            now,
            earliest_put,
            at: RowProgress::default(),
        }
    }

    fn keep(&mut self, cell: &Cell) -> bool {
        if self.at.row.as_ref() != Some(&cell.row) {
            self.at = RowProgress {
                row: Some(cell.row.clone()),
                ..RowProgress::default()
            };
        }
        if self.at.dropping_column.as_ref() == Some(&cell.qualifier) {
            return false;
        }
        self.at.dropping_column = None;
        match self.judge(cell) {
            Retain::Keep => true,
            Retain::Drop => false,
            Retain::DropColumn => {
                self.at.dropping_column = Some(cell.qualifier.clone());
                false
            }
            Retain::KeepEndColumn => {
                self.at.dropping_column = Some(cell.qualifier.clone());
                true
            }
        }
    }

    fn expired(&self, ts: i64) -> bool {
        ts < self.oldest_unexpired
    }

    fn judge(&mut self, cell: &Cell) -> Retain {
        let ts = cell.timestamp;
        // Without MIN_VERSIONS an expired cell ends its column: every later
        // one is older. (HBase's new-version tracker never ends early.)
        if !self.new_version_behavior && self.min_versions == 0 && self.expired(ts) {
            return Retain::DropColumn;
        }
        if cell.ttl_expired(self.now) {
            return Retain::Drop;
        }
        if cell.cell_type.is_delete() {
            if self.markers_expire && self.expired(ts) {
                if !self.new_version_behavior {
                    self.at.expired_markers.track(cell);
                }
                return Retain::Drop;
            }
            if ts < self.earliest_put {
                return Retain::DropColumn;
            }
        } else if ts < self.earliest_put {
            // Older than every put the files' flushes would have written
            // in HBase (`KeptPutFloor`): a version past its column's
            // VERSIONS when it was flushed, which HBase never wrote.
            return Retain::Drop;
        } else if !self.new_version_behavior {
            let masked = self.at.expired_markers.verdict(cell);
            if masked != Retain::Keep {
                return masked;
            }
        }
        if self.new_version_behavior {
            self.count_new_version_behavior(cell)
        } else {
            self.count_classic(cell)
        }
    }

    fn count_classic(&mut self, cell: &Cell) -> Retain {
        let ts = cell.timestamp;
        if self.at.column.as_ref() != Some(&cell.qualifier) {
            self.at.column = Some(cell.qualifier.clone());
            self.at.count = 0;
            self.at.last_kept = None;
        } else if self.at.last_kept == Some((ts, cell.cell_type)) {
            return Retain::Drop;
        }
        if !cell.cell_type.is_delete() {
            self.at.count += 1;
        }
        if self.at.count > self.max_versions {
            Retain::DropColumn
        } else if self.at.count <= self.min_versions || !self.expired(ts) {
            self.at.last_kept = Some((ts, cell.cell_type));
            Retain::Keep
        } else {
            Retain::DropColumn
        }
    }

    fn count_new_version_behavior(&mut self, cell: &Cell) -> Retain {
        if !cell.cell_type.is_delete() {
            // Only a put moves the tracker to its column (HBase prepares
            // its tracker for puts only when deletes are not tracked).
            let same_column = match &self.at.last_put {
                Some((qualifier, _)) => *qualifier == cell.qualifier,
                // Before the row's first put the tracker's column is the
                // empty qualifier.
                None => cell.qualifier.is_empty(),
            };
            if !same_column {
                self.at.count = 0;
                self.at.puts_counted = 0;
            } else if self
                .at
                .last_put
                .as_ref()
                .is_some_and(|(_, ts)| *ts == cell.timestamp)
            {
                return Retain::Drop;
            }
            self.at.last_put = Some((cell.qualifier.clone(), cell.timestamp));
            if self.at.puts_counted >= self.max_versions {
                return Retain::Drop;
            }
            self.at.puts_counted += 1;
        }
        self.at.count += 1;
        if self.expired(cell.timestamp) {
            if self.at.count == self.min_versions {
                return Retain::KeepEndColumn;
            }
            if self.at.count > self.min_versions {
                return Retain::DropColumn;
            }
        }
        match self.at.count.cmp(&self.max_versions) {
            std::cmp::Ordering::Less => Retain::Keep,
            std::cmp::Ordering::Equal => Retain::KeepEndColumn,
            std::cmp::Ordering::Greater => Retain::DropColumn,
        }
    }
}

/// The oldest put that HBase's flush or minor compaction of the same cells
/// would write: the EARLIEST_PUT_TS its file records, which a later major
/// compaction keeping deleted cells measures markers against.
///
/// Basalt's flushes and minor compactions write every cell ("Only a major
/// compaction changes what is stored", docs/hbase-semantics.md), but
/// HBase's drop the puts past a column's VERSIONS (and past the family's
/// TTL) as they write. A record over every put written would hold a put
/// HBase never wrote, and the next major compaction would keep markers
/// HBase's drops (found by the differential campaign: seeds 303 and 403,
/// family markers kept in a KEEP_DELETED_CELLS family). Fed the cells in
/// store order; markers are let through by HBase's minor rules uncounted,
/// so only puts are looked at. NEW_VERSION_BEHAVIOR families: HBase's
/// flush and minor compaction keep every cell, so every put counts.
#[derive(Debug)]
pub struct KeptPutFloor {
    rules: RetainRules,
    earliest: i64,
}

impl KeptPutFloor {
    /// A floor for cells of `family` written at time `now`.
    pub fn new(family: &ColumnFamilyDescriptor, now: i64) -> Self {
        KeptPutFloor {
            // No marker is judged here: the earliest put is not needed.
            rules: RetainRules::new(family, now, i64::MIN),
            earliest: i64::MAX,
        }
    }

    /// Looks at the next cell written.
    pub fn observe(&mut self, cell: &Cell) {
        if cell.cell_type.is_delete() {
            return;
        }
        if self.rules.new_version_behavior || self.rules.keep(cell) {
            self.earliest = self.earliest.min(cell.timestamp);
        }
    }

    /// The oldest put kept (`i64::MAX` when none was).
    pub fn earliest(&self) -> i64 {
        self.earliest
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
        let out = drain(&mut Retaining::new(merged(cells), &family, 1030, 1));
        assert_eq!(
            out,
            vec![
                ("a".into(), 50, CellType::DeleteColumn),
                ("a".into(), 40, CellType::Put)
            ]
        );
    }

    fn keep_deleted(versions: u32) -> ColumnFamilyDescriptor {
        ColumnFamilyDescriptor::new("f")
            .max_versions(versions)
            .keep_deleted_cells(KeepDeletedCells::True)
    }

    #[test]
    fn a_marker_older_than_every_put_goes_with_the_rest_of_its_column() {
        let cells = vec![
            cell("", 3, CellType::DeleteFamily, 9),
            cell("", 2, CellType::DeleteFamilyVersion, 8),
            cell("a", 20, CellType::Put, 1),
            cell("a", 15, CellType::Delete, 7),
            cell("a", 4, CellType::DeleteColumn, 6),
            cell("a", 3, CellType::Delete, 5),
        ];
        // The oldest put of the compacted files is at 10: markers below it
        // mask nothing that is left.
        let out = drain(&mut Retaining::new(
            merged(cells.clone()),
            &keep_deleted(3),
            100,
            10,
        ));
        assert_eq!(
            out,
            vec![
                ("a".into(), 20, CellType::Put),
                ("a".into(), 15, CellType::Delete)
            ]
        );
        // Unknown (files from before the field existed): every marker stays.
        let out = drain(&mut Retaining::new(
            merged(cells),
            &keep_deleted(3),
            100,
            i64::MIN,
        ));
        assert_eq!(out.len(), 6);
    }

    fn floor_of(family: &ColumnFamilyDescriptor, cells: &[Cell]) -> i64 {
        let mut floor = KeptPutFloor::new(family, 100);
        for c in cells {
            floor.observe(c);
        }
        floor.earliest()
    }

    #[test]
    fn a_flush_records_the_oldest_put_within_each_columns_versions() {
        let cells = vec![
            cell("", 15, CellType::DeleteFamily, 9),
            cell("a", 50, CellType::Put, 5),
            cell("a", 40, CellType::Put, 4),
            cell("a", 35, CellType::DeleteColumn, 8),
            cell("a", 30, CellType::Put, 3),
            cell("a", 20, CellType::Put, 2),
            cell("a", 10, CellType::Put, 1),
            cell("b", 25, CellType::Put, 6),
            cell("b", 5, CellType::Delete, 7),
        ];
        // Four versions: HBase's flush writes a:50..20 and b:25, not a:10
        // (markers do not count as versions).
        assert_eq!(floor_of(&keep_deleted(4), &cells), 20);
        // Five versions keep a:10.
        assert_eq!(floor_of(&keep_deleted(5), &cells), 10);
        // NEW_VERSION_BEHAVIOR: HBase's flush keeps every put.
        let nvb = keep_deleted(4).new_version_behavior(true);
        assert_eq!(floor_of(&nvb, &cells), 10);
        // Markers only: no put.
        assert_eq!(floor_of(&keep_deleted(4), &cells[..1]), i64::MAX);
    }

    #[test]
    fn deleted_puts_count_as_versions_and_the_surplus_goes_with_later_markers() {
        let cells = vec![
            cell("a", 9, CellType::Delete, 10),
            cell("a", 9, CellType::Put, 4),
            cell("a", 8, CellType::Put, 3),
            cell("a", 7, CellType::Put, 2),
            cell("a", 6, CellType::Delete, 11),
            cell("a", 5, CellType::Put, 1),
        ];
        let out = drain(&mut Retaining::new(merged(cells), &keep_deleted(2), 100, 5));
        // The deleted put at 9 is the first of the two versions kept.
        assert_eq!(
            out,
            vec![
                ("a".into(), 9, CellType::Delete),
                ("a".into(), 9, CellType::Put),
                ("a".into(), 8, CellType::Put)
            ]
        );
    }

    #[test]
    fn a_second_cell_of_the_same_timestamp_and_type_is_dropped() {
        let cells = vec![
            cell("a", 9, CellType::Delete, 6),
            cell("a", 9, CellType::Delete, 5),
            cell("a", 9, CellType::Put, 4),
            cell("a", 9, CellType::Put, 3),
            cell("a", 8, CellType::Put, 2),
        ];
        for new_version_behavior in [false, true] {
            let family = keep_deleted(5).new_version_behavior(new_version_behavior);
            let out = drain(&mut Retaining::new(merged(cells.clone()), &family, 100, 8));
            let puts = out.iter().filter(|c| c.2 == CellType::Put).count();
            assert_eq!(
                puts, 2,
                "new version behaviour {new_version_behavior}: {out:?}"
            );
        }
    }

    #[test]
    fn new_version_behavior_counts_markers_and_leading_markers_count_against_the_column_before() {
        let cells = vec![
            cell("a", 9, CellType::Put, 1),
            cell("a", 8, CellType::Put, 2),
            // "b" starts with a marker while the count still holds "a"'s
            // two puts: with VERSIONS => 3 it is the third version, kept,
            // and the rest of "b" goes (HBase's tracker counts this way).
            cell("b", 9, CellType::DeleteColumn, 5),
            cell("b", 7, CellType::Put, 3),
            cell("c", 6, CellType::Put, 4),
            cell("c", 5, CellType::Delete, 6),
            cell("c", 4, CellType::Put, 7),
            cell("c", 3, CellType::Put, 8),
        ];
        let family = keep_deleted(3).new_version_behavior(true);
        let out = drain(&mut Retaining::new(merged(cells), &family, 100, 3));
        assert_eq!(
            out,
            vec![
                ("a".into(), 9, CellType::Put),
                ("a".into(), 8, CellType::Put),
                ("b".into(), 9, CellType::DeleteColumn),
                ("c".into(), 6, CellType::Put),
                ("c".into(), 5, CellType::Delete),
                ("c".into(), 4, CellType::Put)
            ]
        );
    }
}
