//! The read path above the sources: what a get or scan returns.
//!
//! Two layers, as in HBase:
//!
//! - [`StoreScanner`] reads one family's merged sources row by row and
//!   applies the storage rules: delete markers (including HBase's masking of
//!   later-written puts with older timestamps), duplicate timestamps (the
//!   later write wins), the family's VERSIONS, TTL and MIN_VERSIONS, then the
//!   read's column selection and time range. What comes out is a column's
//!   surviving versions, newest first: the *candidates*.
//! - [`RegionScanner`] walks rows across the region's families (in family
//!   order), feeds candidates to the read's filter, counts the read's max
//!   versions over the cells the filter let through, and applies row bounds,
//!   limit and batch, forwards or in reverse.
//!
//! Families with NEW_VERSION_BEHAVIOR follow HBase 2's mvcc-aware rules
//! instead (see [`StoreScanner`]'s `new_version_visible` and
//! docs/hbase-semantics.md): a marker masks only puts written before it, and
//! versions are counted as of every delete.
//!
//! Family VERSIONS and TTL are applied over all versions before the read's
//! time range is looked at, so a read returns what it would return after a
//! major compaction had dropped the surplus versions. (HBase counts versions
//! only inside the time range and so answers differently before and after
//! compaction; Basalt answers as HBase does after it.)

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use basalt_types::descriptor::{ColumnFamilyDescriptor, KeepDeletedCells};
use basalt_types::filter::{CellFilter, ReturnCode};
use basalt_types::query::TimeRange;
use basalt_types::{Cell, CellType, Error, Result, RowResult};

use crate::source::{first_on_row, last_on_column, CellSource, MergedSource};

/// Cells of a finished column stepped over before a skip falls back to a
/// seek.
const STEPS_BEFORE_SEEK: usize = 4;

/// What a read asks of every store it touches.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Versions per column to return.
    pub max_versions: u32,
    /// Only versions in this range.
    pub time_range: TimeRange,
    /// Return markers and deleted cells too.
    pub raw: bool,
    /// The read's "now", for TTL.
    pub now: i64,
}

/// One family's part of a read: the storage rules over its merged sources.
pub struct StoreScanner {
    source: MergedSource,
    /// The row whose state `rules` holds.
    current_row: Option<Bytes>,
    rules: RowRules,
}

impl std::fmt::Debug for StoreScanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreScanner")
            .field("family", &self.rules.family.name())
            .field("source", &self.source)
            .finish()
    }
}

/// The storage rules of one family, applied to one row's cells met in
/// KeyValue order: which of them are candidates (see the module comment).
///
/// Both read paths feed cells through it: [`StoreScanner`] from its merged
/// sources, the point-get path (`point_get.rs`) from the few cells of one
/// row it collects. Sharing it is what keeps their answers the same.
#[derive(Debug)]
pub(crate) struct RowRules {
    family: Arc<ColumnFamilyDescriptor>,
    /// `None` reads every qualifier.
    qualifiers: Option<BTreeSet<Bytes>>,
    time_range: TimeRange,
    raw: bool,
    /// Puts older than this are expired (`i64::MIN` without a TTL).
    oldest_unexpired: i64,
    /// The read's time, for puts with their own TTL.
    now: i64,
    row: RowDeletes,
    column: ColumnState,
}

/// What [`RowRules::judge`] decides about one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A candidate: the read's filter and versions decide next.
    Candidate,
    /// Not returned; the next cell may be.
    Skip,
    /// Not returned, and no later version of its column can be: the
    /// caller ends the column ([`RowRules::end_column`]) and may step over
    /// the rest of it.
    EndColumn,
}

/// Family-wide delete markers seen so far in the current row.
#[derive(Debug, Default)]
struct RowDeletes {
    /// Highest DeleteFamily timestamp: hides every put at or below it.
    family_deleted_up_to: Option<i64>,
    /// DeleteFamilyVersion timestamps: hide puts at exactly these.
    family_versions_deleted: Vec<i64>,
    /// NEW_VERSION_BEHAVIOR: the family markers, with their sequence ids.
    family_markers: Vec<Marker>,
}

/// A delete marker as NEW_VERSION_BEHAVIOR needs it.
#[derive(Debug, Clone, Copy)]
struct Marker {
    ts: i64,
    seq: u64,
    /// DeleteFamily / DeleteColumn (every version at or below `ts`), as
    /// opposed to Delete / DeleteFamilyVersion (the version at `ts` only).
    up_to: bool,
}

impl Marker {
    /// True when the marker masks a put written at `seq` with timestamp
    /// `ts`: the put is not newer than the marker (markers of the same
    /// mutation, which share its sequence id, mask it too, as in HBase).
    fn masks(&self, ts: i64, seq: u64) -> bool {
        self.seq >= seq
            && if self.up_to {
                ts <= self.ts
            } else {
                ts == self.ts
            }
    }
}

/// State of the column being read.
#[derive(Debug, Default)]
struct ColumnState {
    qualifier: Option<Bytes>,
    /// Highest DeleteColumn timestamp in this column.
    deleted_up_to: Option<i64>,
    /// Delete (one version) timestamps in this column.
    versions_deleted: Vec<i64>,
    /// Timestamp of the last put accepted as a version: an equal timestamp
    /// after it is an older write of the same version.
    last_version_ts: Option<i64>,
    /// Versions counted against the family's VERSIONS.
    versions: u32,
    /// No more puts of this column can be candidates.
    exhausted: bool,
    /// NEW_VERSION_BEHAVIOR: the column markers, with their sequence ids.
    markers: Vec<Marker>,
    /// NEW_VERSION_BEHAVIOR: for each point of the column's history (just
    /// before the marker with this sequence id; `u64::MAX` is now), the
    /// sequence ids of the puts counted as visible versions there.
    history: BTreeMap<u64, Vec<u64>>,
    /// NEW_VERSION_BEHAVIOR: timestamp and sequence id of the last put
    /// seen; a put at the same timestamp after it was overwritten by it.
    previous_put: Option<(i64, u64)>,
    /// Raw reads: timestamp and type of the last cell seen; a cell with
    /// the same ones after it is an older write of the same coordinates
    /// (a put or marker written twice, as a resent replication batch
    /// does), which HBase's raw scans skip (`sameAsPreviousTSAndType`).
    raw_previous: Option<(i64, CellType)>,
}

impl StoreScanner {
    /// A scanner over `source` (not yet positioned) for `family`.
    pub fn new(
        source: MergedSource,
        family: Arc<ColumnFamilyDescriptor>,
        qualifiers: Option<BTreeSet<Bytes>>,
        options: &ReadOptions,
    ) -> Self {
        StoreScanner {
            source,
            current_row: None,
            rules: RowRules::new(family, qualifiers, options),
        }
    }

    /// The row the scanner is positioned in.
    pub fn peek_row(&self) -> Option<&Bytes> {
        self.source.peek().map(|c| &c.row)
    }

    /// Positions at the first cell at or after `key` and forgets row state.
    pub fn seek(&mut self, key: &Cell) -> Result<()> {
        self.reset_row();
        self.source.seek(key)
    }

    /// Positions at the start of the greatest row below `row`.
    pub fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        self.reset_row();
        self.source.seek_before_row(row)
    }

    /// Moves past every remaining cell of `row`.
    pub fn skip_row(&mut self, row: &[u8]) -> Result<()> {
        if self.peek_row().is_some_and(|r| &r[..] == row) {
            let mut next = Vec::with_capacity(row.len() + 1);
            next.extend_from_slice(row);
            next.push(0);
            self.seek(&first_on_row(&next))?;
        }
        Ok(())
    }

    fn reset_row(&mut self) {
        self.current_row = None;
        self.rules.start_row();
    }

    /// Stops returning versions of the column of `cell` (the filter or the
    /// read's max versions are done with it).
    pub fn skip_column(&mut self, cell: &Cell) -> Result<()> {
        if !self.rules.end_column(cell) {
            return Ok(());
        }
        // Family markers share the empty qualifier and must still be seen, so
        // only non-empty columns are skipped.
        if cell.qualifier.is_empty() {
            return Ok(());
        }
        // Most columns have few versions left, often none (VERSIONS=1): a
        // few steps are far cheaper than a seek of every source, which
        // searches each store file's index and refills the memstore's
        // chunk (HBase's "skip instead of seek" for near columns).
        let same_column = |next: &Cell| {
            next.row == cell.row && next.family == cell.family && next.qualifier == cell.qualifier
        };
        for _ in 0..STEPS_BEFORE_SEEK {
            match self.source.peek() {
                Some(next) if same_column(next) => self.source.advance()?,
                _ => return Ok(()),
            }
        }
        if self.source.peek().is_some_and(same_column) {
            self.source
                .seek(&last_on_column(&cell.row, &cell.family, &cell.qualifier))?;
        }
        Ok(())
    }

    /// The next candidate cell of `row`, or `None` when the row is done here.
    pub fn next_candidate(&mut self, row: &Bytes) -> Result<Option<Cell>> {
        if self.current_row.as_ref() != Some(row) {
            self.reset_row();
            self.current_row = Some(row.clone());
        }
        loop {
            let Some(cell) = self.source.peek() else {
                return Ok(None);
            };
            if cell.row != *row {
                return Ok(None);
            }
            let cell = cell.clone();
            self.source.advance()?;
            match self.rules.judge(&cell) {
                Verdict::Candidate => return Ok(Some(cell)),
                Verdict::Skip => {}
                Verdict::EndColumn => self.skip_column(&cell)?,
            }
        }
    }
}

impl RowRules {
    /// The rules of `family` for a read with `options`, reading only
    /// `qualifiers` (every qualifier when `None`).
    pub(crate) fn new(
        family: Arc<ColumnFamilyDescriptor>,
        qualifiers: Option<BTreeSet<Bytes>>,
        options: &ReadOptions,
    ) -> Self {
        let oldest_unexpired = family
            .ttl_millis()
            .map_or(i64::MIN, |ttl| options.now.saturating_sub(ttl));
        RowRules {
            family,
            qualifiers,
            time_range: options.time_range,
            raw: options.raw,
            oldest_unexpired,
            now: options.now,
            row: RowDeletes::default(),
            column: ColumnState::default(),
        }
    }

    /// Whether the family follows NEW_VERSION_BEHAVIOR's rules.
    pub(crate) fn new_version_behavior(&self) -> bool {
        self.family.new_version_behavior
    }

    /// Forgets the markers and column state of the row before.
    pub(crate) fn start_row(&mut self) {
        self.row = RowDeletes::default();
        self.column = ColumnState::default();
    }

    /// Ends the column of `cell` if it is the one being read: none of its
    /// later versions is a candidate. False when `cell` is of another
    /// column (nothing changes then).
    pub(crate) fn end_column(&mut self, cell: &Cell) -> bool {
        if self.column.qualifier.as_ref() != Some(&cell.qualifier) {
            return false;
        }
        self.column.exhausted = true;
        true
    }

    /// Decides about the next cell of the row (cells must come in KeyValue
    /// order, all of one row and family, each exactly once).
    pub(crate) fn judge(&mut self, cell: &Cell) -> Verdict {
        if self.column.qualifier.as_ref() != Some(&cell.qualifier) {
            self.column = ColumnState {
                qualifier: Some(cell.qualifier.clone()),
                ..ColumnState::default()
            };
            if self.family.new_version_behavior {
                // The family markers are points of every column's history.
                let points = self.row.family_markers.iter().map(|m| m.seq);
                self.column.history = points
                    .chain([u64::MAX])
                    .map(|seq| (seq, Vec::new()))
                    .collect();
            }
        }
        // A put past its own TTL is gone for every read, raw ones too, and
        // is not a version (HBase skips it before any other rule).
        if cell.cell_type == CellType::Put && cell.ttl_expired(self.now) {
            return Verdict::Skip;
        }
        if self.raw {
            let coordinates = (cell.timestamp, cell.cell_type);
            if self.column.raw_previous.replace(coordinates) == Some(coordinates) {
                return Verdict::Skip;
            }
            // Raw reads track no deletes, so a column the read is done
            // with ends for markers too (the empty qualifier included).
            if !self.column.exhausted && self.raw_candidate(cell) {
                return Verdict::Candidate;
            }
            return Verdict::Skip;
        }
        if cell.cell_type.is_delete() {
            self.track_marker(cell);
            return Verdict::Skip;
        }
        if self.column.exhausted || !self.selected(&cell.qualifier) {
            // The empty qualifier is also where family markers live: its
            // column is never ended early, so they are all seen.
            return if cell.qualifier.is_empty() {
                Verdict::Skip
            } else {
                Verdict::EndColumn
            };
        }
        if self.family.new_version_behavior {
            if !self.new_version_visible(cell) {
                return Verdict::Skip;
            }
        } else if self.is_deleted(cell.timestamp)
            || self.column.last_version_ts == Some(cell.timestamp)
        {
            return Verdict::Skip;
        }
        self.column.last_version_ts = Some(cell.timestamp);
        self.column.versions += 1;
        let beyond_versions = self.column.versions > self.family.max_versions;
        let expired = self.column.versions > self.family.min_versions
            && cell.timestamp < self.oldest_unexpired;
        if beyond_versions || expired {
            // Older versions are older still: beyond the limit or expired too.
            return Verdict::EndColumn;
        }
        if self.time_range.contains(cell.timestamp) {
            Verdict::Candidate
        } else {
            Verdict::Skip
        }
    }

    fn selected(&self, qualifier: &Bytes) -> bool {
        self.qualifiers
            .as_ref()
            .is_none_or(|set| set.contains(qualifier))
    }

    fn raw_candidate(&self, cell: &Cell) -> bool {
        if !self.time_range.contains(cell.timestamp) {
            return false;
        }
        cell.cell_type.is_family_delete() || self.selected(&cell.qualifier)
    }

    fn track_marker(&mut self, marker: &Cell) {
        // With KEEP_DELETED_CELLS a read that looks at a time range ending
        // before a delete still sees what the delete covers.
        let keep_deleted = self.family.keep_deleted_cells != KeepDeletedCells::False;
        if keep_deleted && !self.time_range.contains(marker.timestamp) {
            return;
        }
        let ts = marker.timestamp;
        if self.family.new_version_behavior {
            let tracked = Marker {
                ts,
                seq: marker.sequence_id,
                up_to: matches!(
                    marker.cell_type,
                    CellType::DeleteFamily | CellType::DeleteColumn
                ),
            };
            if marker.cell_type.is_family_delete() {
                self.row.family_markers.push(tracked);
            } else {
                self.column.markers.push(tracked);
            }
            self.add_history_point(tracked.seq);
            return;
        }
        match marker.cell_type {
            CellType::DeleteFamily => {
                self.row.family_deleted_up_to = self.row.family_deleted_up_to.max(Some(ts));
            }
            CellType::DeleteFamilyVersion => self.row.family_versions_deleted.push(ts),
            CellType::DeleteColumn => {
                self.column.deleted_up_to = self.column.deleted_up_to.max(Some(ts));
            }
            CellType::Delete => self.column.versions_deleted.push(ts),
            CellType::Put => {}
        }
    }

    /// NEW_VERSION_BEHAVIOR: a new point of the column's history, just
    /// before a marker written at `seq`. The versions visible there are
    /// those counted at the next later point that were written before it.
    fn add_history_point(&mut self, seq: u64) {
        if self.column.history.contains_key(&seq) {
            return;
        }
        let before: Vec<u64> = self
            .column
            .history
            .range(seq..)
            .next()
            .map(|(_, counted)| counted.iter().copied().filter(|&s| s < seq).collect())
            .unwrap_or_default();
        self.column.history.insert(seq, before);
    }

    /// NEW_VERSION_BEHAVIOR (HBase 2's `NewVersionBehaviorTracker` rules):
    /// is this put (met in cell order: timestamp descending, then sequence
    /// id descending) a visible version now?
    ///
    /// The put lives from its own write until the first later write that
    /// ends it: a marker that masks it (see [`Marker::masks`]) or a put at
    /// the same timestamp (an overwrite). At each point of history in that
    /// span it is counted as a version, after the versions with newer
    /// timestamps already counted there; if VERSIONS of them are already
    /// counted at some point, it was beyond VERSIONS then and stays gone
    /// (a compaction at that moment could have dropped it), even if later
    /// deletes removed the newer versions. It is visible when it is still
    /// alive now and was never beyond VERSIONS.
    fn new_version_visible(&mut self, cell: &Cell) -> bool {
        let (ts, seq) = (cell.timestamp, cell.sequence_id);
        let overwritten_at = match self.column.previous_put {
            Some((previous_ts, previous_seq)) if previous_ts == ts => Some(previous_seq),
            _ => None,
        };
        self.column.previous_put = Some((ts, seq));
        let masked_at = self
            .row
            .family_markers
            .iter()
            .chain(&self.column.markers)
            .filter(|m| m.masks(ts, seq))
            .map(|m| m.seq)
            .min();
        let ended_at = overwritten_at.into_iter().chain(masked_at).min();
        let max_versions = self.family.max_versions as usize;
        for (_, counted) in self
            .column
            .history
            .range_mut(seq..=ended_at.unwrap_or(u64::MAX))
        {
            if counted.len() >= max_versions {
                return false;
            }
            counted.push(seq);
        }
        ended_at.is_none()
    }

    fn is_deleted(&self, ts: i64) -> bool {
        self.row.family_deleted_up_to.is_some_and(|d| ts <= d)
            || self.column.deleted_up_to.is_some_and(|d| ts <= d)
            || self.row.family_versions_deleted.contains(&ts)
            || self.column.versions_deleted.contains(&ts)
    }
}

/// Counters of the work one read did, for per-region load metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ScanMetrics {
    /// Rows looked at (including rows a filter dropped).
    pub rows_scanned: u64,
    /// Candidate cells looked at.
    pub cells_scanned: u64,
    /// Rows returned.
    pub rows_returned: u64,
    /// Rows the filter dropped whole (`filter_row_key`, `filter_row`).
    pub rows_filtered: u64,
    /// Cells the filter excluded (its code for the cell, or
    /// `filter_row_cells` taking them out).
    pub cells_filtered: u64,
    /// Bytes of the cells returned (`Cell::heap_size`, as writes count).
    pub bytes_returned: u64,
}

impl ScanMetrics {
    /// Adds another read's counters to these (a scan over several regions).
    pub fn add(&mut self, other: &ScanMetrics) {
        self.rows_scanned += other.rows_scanned;
        self.cells_scanned += other.cells_scanned;
        self.rows_returned += other.rows_returned;
        self.rows_filtered += other.rows_filtered;
        self.cells_filtered += other.cells_filtered;
        self.bytes_returned += other.bytes_returned;
    }

    /// True when the read's filter dropped at least one row or cell: the
    /// read counts as a filtered read request.
    pub fn filtered(&self) -> bool {
        self.rows_filtered > 0 || self.cells_filtered > 0
    }
}

/// The rows a read covers: a lower and an upper bound on row keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowRange {
    /// Lower bound.
    pub lower: Bound<Bytes>,
    /// Upper bound.
    pub upper: Bound<Bytes>,
}

impl RowRange {
    /// Every row.
    pub fn all() -> Self {
        RowRange {
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }

    /// Exactly one row.
    pub fn single(row: Bytes) -> Self {
        RowRange {
            lower: Bound::Included(row.clone()),
            upper: Bound::Included(row),
        }
    }

    /// True when `row` is above the lower bound.
    pub fn above_lower(&self, row: &[u8]) -> bool {
        match &self.lower {
            Bound::Unbounded => true,
            Bound::Included(b) => row >= &b[..],
            Bound::Excluded(b) => row > &b[..],
        }
    }

    /// True when `row` is below the upper bound.
    pub fn below_upper(&self, row: &[u8]) -> bool {
        match &self.upper {
            Bound::Unbounded => true,
            Bound::Included(b) => row <= &b[..],
            Bound::Excluded(b) => row < &b[..],
        }
    }

    /// The intersection of two ranges.
    pub fn intersect(&self, other: &RowRange) -> RowRange {
        RowRange {
            lower: tighter(&self.lower, &other.lower, true),
            upper: tighter(&self.upper, &other.upper, false),
        }
    }
}

fn tighter(a: &Bound<Bytes>, b: &Bound<Bytes>, lower: bool) -> Bound<Bytes> {
    use std::cmp::Ordering::*;
    match (a, b) {
        (Bound::Unbounded, x) | (x, Bound::Unbounded) => x.clone(),
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            match (x.cmp(y), lower) {
                (Greater, true) | (Less, false) => a.clone(),
                (Less, true) | (Greater, false) => b.clone(),
                // Same key: exclusive is the tighter bound.
                (Equal, _) => {
                    if matches!(a, Bound::Excluded(_)) {
                        a.clone()
                    } else {
                        b.clone()
                    }
                }
            }
        }
    }
}

/// A read over one region's families: rows with the filter, versions,
/// bounds, limit and batch applied.
pub struct RegionScanner {
    stores: Vec<StoreScanner>,
    filter: Option<Box<dyn CellFilter>>,
    range: RowRange,
    reversed: bool,
    max_versions: u32,
    raw: bool,
    batch: Option<usize>,
    limit: Option<usize>,
    started: bool,
    done: bool,
    /// Batches of a wide row not handed out yet.
    pending: VecDeque<RowResult>,
    metrics: ScanMetrics,
    /// The first row returned: where the region's key load places the
    /// scan (`key_load.rs`).
    first_row: Option<Bytes>,
}

impl std::fmt::Debug for RegionScanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionScanner")
            .field("stores", &self.stores.len())
            .field("range", &self.range)
            .field("reversed", &self.reversed)
            .field("metrics", &self.metrics)
            .finish()
    }
}

/// How a [`RegionScanner`] walks its rows.
#[derive(Debug, Clone)]
pub struct ScanShape {
    /// Which rows.
    pub range: RowRange,
    /// Greatest row first.
    pub reversed: bool,
    /// Versions per column to return.
    pub max_versions: u32,
    /// Return markers and deleted cells.
    pub raw: bool,
    /// Cells per result.
    pub batch: Option<usize>,
    /// Rows in all.
    pub limit: Option<usize>,
}

impl RegionScanner {
    /// A scanner over `stores` (one per family read, sorted by family name).
    pub fn new(
        stores: Vec<StoreScanner>,
        filter: Option<Box<dyn CellFilter>>,
        shape: ScanShape,
    ) -> Result<Self> {
        // A batch with a filter that decides on whole rows is refused only
        // when a row has to be cut (`read_row`), as HBase does: rows no
        // wider than the batch are answered.
        Ok(RegionScanner {
            stores,
            filter,
            range: shape.range,
            reversed: shape.reversed,
            max_versions: shape.max_versions.max(1),
            raw: shape.raw,
            batch: shape.batch,
            limit: shape.limit,
            started: false,
            done: false,
            pending: VecDeque::new(),
            metrics: ScanMetrics::default(),
            first_row: None,
        })
    }

    /// What the read has done so far.
    pub fn metrics(&self) -> ScanMetrics {
        self.metrics
    }

    /// The first row the scanner returned, if any.
    pub fn first_row(&self) -> Option<&Bytes> {
        self.first_row.as_ref()
    }

    /// True once the scan has ended for a reason that also ends it in every
    /// later region: the row limit or the filter's `filter_all_remaining`.
    /// (Running out of rows in this region's range is not such a reason.)
    pub fn ended_for_good(&mut self) -> bool {
        self.limit
            .is_some_and(|l| self.metrics.rows_returned >= l as u64)
            || self
                .filter
                .as_mut()
                .is_some_and(|f| f.filter_all_remaining())
    }

    /// Hands the filter (with its state) over to the next region's scanner.
    pub fn take_filter(&mut self) -> Option<Box<dyn CellFilter>> {
        self.filter.take()
    }

    fn position_first(&mut self) -> Result<()> {
        if self.reversed {
            let start: Option<Bytes> = match &self.range.upper {
                Bound::Unbounded => None,
                Bound::Excluded(b) => Some(b.clone()),
                // The greatest row <= b is the greatest row < b + \0.
                Bound::Included(b) => {
                    let mut next = b.to_vec();
                    next.push(0);
                    Some(Bytes::from(next))
                }
            };
            for store in &mut self.stores {
                store.seek_before_row(start.as_deref())?;
            }
        } else {
            let key = match &self.range.lower {
                Bound::Unbounded => first_on_row(b""),
                Bound::Included(b) | Bound::Excluded(b) => first_on_row(b),
            };
            for store in &mut self.stores {
                store.seek(&key)?;
            }
            if let Bound::Excluded(b) = &self.range.lower {
                let b = b.clone();
                for store in &mut self.stores {
                    store.skip_row(&b)?;
                }
            }
        }
        Ok(())
    }

    fn next_row_key(&self) -> Option<Bytes> {
        let rows = self.stores.iter().filter_map(|s| s.peek_row());
        if self.reversed {
            rows.max().cloned()
        } else {
            rows.min().cloned()
        }
    }

    /// Moves the stores that hold `row` past it. Reading a row forwards
    /// leaves a store in the *next* row, so in reverse every store that took
    /// part must seek back before `row`.
    fn move_past(&mut self, row: &Bytes, participants: &[bool]) -> Result<()> {
        for (store, &took_part) in self.stores.iter_mut().zip(participants) {
            if !took_part {
                continue;
            }
            if self.reversed {
                store.seek_before_row(Some(row))?;
            } else {
                store.skip_row(row)?;
            }
        }
        Ok(())
    }

    /// The next result: a row, or the next batch of a wide row. `None` when
    /// the scan is over.
    pub fn next_result(&mut self) -> Result<Option<RowResult>> {
        if let Some(r) = self.pending.pop_front() {
            return Ok(Some(r));
        }
        while !self.done {
            // Between rows: the call may have been cancelled or have run out
            // of time, and the scanner can resume here later.
            crate::interrupt::check()?;
            if !self.started {
                self.started = true;
                self.position_first()?;
            }
            if self
                .limit
                .is_some_and(|l| self.metrics.rows_returned >= l as u64)
            {
                self.done = true;
                break;
            }
            if self
                .filter
                .as_mut()
                .is_some_and(|f| f.filter_all_remaining())
            {
                self.done = true;
                break;
            }
            let Some(row) = self.next_row_key() else {
                self.done = true;
                break;
            };
            let in_range = if self.reversed {
                self.range.above_lower(&row)
            } else {
                self.range.below_upper(&row)
            };
            if !in_range {
                self.done = true;
                break;
            }
            self.metrics.rows_scanned += 1;
            let participants: Vec<bool> = self
                .stores
                .iter()
                .map(|s| s.peek_row() == Some(&row))
                .collect();
            let cells = self.read_row(&row)?;
            self.move_past(&row, &participants)?;
            let Some(cells) = cells else { continue };
            self.metrics.rows_returned += 1;
            if self.first_row.is_none() {
                self.first_row = Some(row.clone());
            }
            match self.batch {
                Some(n) if cells.len() > n => {
                    for chunk in cells.chunks(n) {
                        self.pending.push_back(RowResult {
                            row: row.clone(),
                            cells: chunk.to_vec(),
                        });
                    }
                    return Ok(self.pending.pop_front());
                }
                _ => return Ok(Some(RowResult { row, cells })),
            }
        }
        Ok(None)
    }

    /// Reads one row through the filter; `None` when nothing of it is returned.
    fn read_row(&mut self, row: &Bytes) -> Result<Option<Vec<Cell>>> {
        let shape = RowShape {
            max_versions: self.max_versions,
            raw: self.raw,
            batch: self.batch,
        };
        read_row(
            &mut self.stores,
            row,
            self.filter.as_deref_mut(),
            shape,
            &mut self.metrics,
        )
    }
}

/// One family's candidates in a row, as [`read_row`] consumes them: a
/// [`StoreScanner`] over merged sources, or the point-get path's cells of
/// one row (`point_get.rs`).
pub(crate) trait FamilyCandidates {
    /// True when the family has cells of `row` to read.
    fn holds_row(&self, row: &Bytes) -> bool;

    /// The next candidate cell of `row`, or `None` when the row is done.
    fn next_candidate(&mut self, row: &Bytes) -> Result<Option<Cell>>;

    /// Stops returning versions of the column of `cell`.
    fn skip_column(&mut self, cell: &Cell) -> Result<()>;

    /// True when a read's max versions count the column's candidates
    /// before the filter sees them, not the cells it lets through: HBase's
    /// `NewVersionBehaviorTracker` counts a read's versions itself, where
    /// the classic trackers leave that count to after the filter. So with a
    /// NEW_VERSION_BEHAVIOR family a version the filter drops still takes
    /// its place among the newest `max_versions`.
    fn counts_versions_before_filter(&self) -> bool {
        false
    }
}

impl FamilyCandidates for StoreScanner {
    fn holds_row(&self, row: &Bytes) -> bool {
        self.peek_row() == Some(row)
    }

    fn next_candidate(&mut self, row: &Bytes) -> Result<Option<Cell>> {
        StoreScanner::next_candidate(self, row)
    }

    fn skip_column(&mut self, cell: &Cell) -> Result<()> {
        StoreScanner::skip_column(self, cell)
    }

    fn counts_versions_before_filter(&self) -> bool {
        self.rules.new_version_behavior()
    }
}

/// What [`read_row`] needs of the read besides its filter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowShape {
    /// Versions per column to return.
    pub max_versions: u32,
    /// Markers are returned and do not count as versions.
    pub raw: bool,
    /// A scan's batch: a row with more cells than this, under a filter
    /// that decides on whole rows, cannot be answered.
    pub batch: Option<usize>,
}

/// Reads one row across `families` (in family order) through the read's
/// filter and max versions; `None` when nothing of it is returned.
///
/// The one loop both read paths use (scans through [`RegionScanner`],
/// gets through `point_get.rs`), so a filter sees the same cells in the
/// same order whichever path serves the read.
pub(crate) fn read_row<F: FamilyCandidates>(
    families: &mut [F],
    row: &Bytes,
    mut filter: Option<&mut (dyn CellFilter + 'static)>,
    shape: RowShape,
    metrics: &mut ScanMetrics,
) -> Result<Option<Vec<Cell>>> {
    if let Some(filter) = filter.as_mut() {
        filter.reset();
        if filter.filter_row_key(row) {
            metrics.rows_filtered += 1;
            return Ok(None);
        }
    }
    // A filter that decides on whole rows cannot see a row cut by a batch:
    // as in HBase, the read fails once the batch is full and the row still
    // has a cell to look at, and rows no wider are answered.
    let row_filter_batch = shape
        .batch
        .filter(|_| filter.as_ref().is_some_and(|f| f.has_filter_row()));
    let mut cells = Vec::new();
    let mut seek_hint: Option<Cell> = None;
    let mut included_in_column = 0u32;
    let mut candidates_in_column = 0u32;
    let mut column: Option<(Bytes, Bytes)> = None;
    'families: for family in families.iter_mut() {
        if !family.holds_row(row) {
            continue;
        }
        // Raw reads track no versions of their own in HBase: classic rules.
        let versions_before_filter = !shape.raw && family.counts_versions_before_filter();
        while let Some(cell) = family.next_candidate(row)? {
            if let Some(batch) = row_filter_batch.filter(|&b| cells.len() >= b) {
                return Err(Error::invalid(format!(
                    "row {} has more cells than the scan's batch of {batch}, and a filter \
                     that decides on whole rows cannot see a row cut in parts \
                     (use a scan without batch, or a filter without filterRow)",
                    String::from_utf8_lossy(row)
                )));
            }
            metrics.cells_scanned += 1;
            if let Some(hint) = &seek_hint {
                if cell.compare_key(hint).is_lt() {
                    continue;
                }
                seek_hint = None;
            }
            let same_column = column
                .as_ref()
                .is_some_and(|(f, q)| *f == cell.family && *q == cell.qualifier);
            if !same_column {
                column = Some((cell.family.clone(), cell.qualifier.clone()));
                included_in_column = 0;
                candidates_in_column = 0;
            }
            let counts_as_version = !(shape.raw && cell.cell_type.is_delete());
            // Past the read's versions a filter still sees the column's next
            // versions, as in HBase, whose classic trackers check versions up
            // to the family's VERSIONS when the read has a filter and count
            // the read's own after it: a SingleColumnValueFilter testing
            // every version can match an older one. The first version the
            // filter would take ends the column instead. (Versions counted
            // before the filter end the column below: they are never fewer
            // than those included.)
            let beyond_versions = counts_as_version && included_in_column >= shape.max_versions;
            if beyond_versions && filter.is_none() {
                family.skip_column(&cell)?;
                continue;
            }
            if versions_before_filter {
                if candidates_in_column >= shape.max_versions {
                    family.skip_column(&cell)?;
                    continue;
                }
                candidates_in_column += 1;
            }
            let code = match filter.as_mut() {
                Some(f) => f.filter_cell(&cell),
                None => ReturnCode::Include,
            };
            let include = matches!(
                code,
                ReturnCode::Include
                    | ReturnCode::IncludeAndNextCol
                    | ReturnCode::IncludeAndSeekNextRow
            );
            if beyond_versions && include {
                if code == ReturnCode::IncludeAndSeekNextRow {
                    break 'families;
                }
                family.skip_column(&cell)?;
                continue;
            }
            if !include {
                metrics.cells_filtered += 1;
            }
            // What the code asks of the family is done before the cell
            // moves into the result (it is not needed after): no copy of
            // the cell for the result.
            let mut end_row = false;
            match code {
                ReturnCode::Include | ReturnCode::Skip => {}
                ReturnCode::IncludeAndNextCol | ReturnCode::NextCol => family.skip_column(&cell)?,
                ReturnCode::IncludeAndSeekNextRow | ReturnCode::NextRow => end_row = true,
                ReturnCode::SeekNextUsingHint => {
                    let hint = filter.as_mut().and_then(|f| f.next_cell_hint(&cell));
                    match hint {
                        // Hints follow forward cell order: one outside this
                        // row means nothing more of the row can pass.
                        Some(h) if h.row != *row => end_row = true,
                        Some(h) => seek_hint = Some(h),
                        // No hint: the cell is simply skipped.
                        None => {}
                    }
                }
            }
            if include {
                if counts_as_version {
                    included_in_column += 1;
                }
                let cell = match filter.as_mut() {
                    Some(f) => f.transform_cell(cell),
                    None => cell,
                };
                cells.push(cell);
            }
            if end_row {
                break 'families;
            }
        }
    }
    if let Some(filter) = filter.as_mut() {
        if filter.has_filter_row() {
            let before = cells.len();
            filter.filter_row_cells(&mut cells);
            metrics.cells_filtered += before.saturating_sub(cells.len()) as u64;
        }
        if cells.is_empty() {
            return Ok(None);
        }
        if filter.filter_row() {
            metrics.rows_filtered += 1;
            return Ok(None);
        }
    }
    if cells.is_empty() {
        return Ok(None);
    }
    metrics.bytes_returned += cells.iter().map(|c| c.heap_size() as u64).sum::<u64>();
    Ok(Some(cells))
}

/// One family's cells of a row held in memory, in cell order, as
/// [`read_row`] consumes them.
struct HeldFamily {
    cells: VecDeque<Cell>,
}

impl FamilyCandidates for HeldFamily {
    fn holds_row(&self, row: &Bytes) -> bool {
        self.cells.front().is_some_and(|c| c.row == *row)
    }

    fn next_candidate(&mut self, row: &Bytes) -> Result<Option<Cell>> {
        if self.holds_row(row) {
            Ok(self.cells.pop_front())
        } else {
            Ok(None)
        }
    }

    fn skip_column(&mut self, cell: &Cell) -> Result<()> {
        while self
            .cells
            .front()
            .is_some_and(|c| c.family == cell.family && c.qualifier == cell.qualifier)
        {
            self.cells.pop_front();
        }
        Ok(())
    }
}

/// Reads one row that is not stored but built in memory (the native RPC
/// gateway's system tables, made from the catalog on every read) through a
/// read's filter and max versions, by the same loop stored rows go
/// through, so a filter answers the same on them. `cells` are the row's
/// candidates: the row's cells in cell order, already cut to the read's
/// columns and time range. `None` when nothing of the row is returned.
pub fn read_held_row(
    row: &Bytes,
    cells: Vec<Cell>,
    filter: Option<&mut (dyn CellFilter + 'static)>,
    max_versions: u32,
    metrics: &mut ScanMetrics,
) -> Result<Option<Vec<Cell>>> {
    let mut families: Vec<HeldFamily> = Vec::new();
    for cell in cells {
        match families.last_mut() {
            Some(family) if family.cells.back().is_some_and(|c| c.family == cell.family) => {
                family.cells.push_back(cell);
            }
            _ => families.push(HeldFamily {
                cells: VecDeque::from([cell]),
            }),
        }
    }
    let shape = RowShape {
        max_versions: max_versions.max(1),
        raw: false,
        batch: None,
    };
    read_row(&mut families, row, filter, shape, metrics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::tests::{cell, VecSource};

    fn read(
        cells: Vec<Cell>,
        family: ColumnFamilyDescriptor,
        options: ReadOptions,
    ) -> Vec<(String, i64, String)> {
        let source = MergedSource::new(vec![Box::new(VecSource::new(cells))]);
        let store = StoreScanner::new(source, Arc::new(family), None, &options);
        let mut scanner = RegionScanner::new(
            vec![store],
            None,
            ScanShape {
                range: RowRange::all(),
                reversed: false,
                max_versions: options.max_versions,
                raw: options.raw,
                batch: None,
                limit: None,
            },
        )
        .unwrap();
        let mut out = vec![];
        while let Some(r) = scanner.next_result().unwrap() {
            for c in r.cells {
                out.push((
                    String::from_utf8_lossy(&c.qualifier).into_owned(),
                    c.timestamp,
                    String::from_utf8_lossy(&c.value).into_owned(),
                ));
            }
        }
        out
    }

    fn opts(max_versions: u32) -> ReadOptions {
        ReadOptions {
            max_versions,
            time_range: TimeRange::all(),
            raw: false,
            now: 1_000_000,
        }
    }

    #[test]
    fn delete_marker_masks_later_written_older_put() {
        let cells = vec![
            cell("q", 10, CellType::DeleteColumn, 1, ""),
            cell("q", 5, CellType::Put, 2, "late"),
            cell("q", 20, CellType::Put, 3, "new"),
        ];
        let got = read(cells, ColumnFamilyDescriptor::new("f"), opts(10));
        assert_eq!(got, vec![("q".into(), 20, "new".into())]);
    }

    #[test]
    fn same_timestamp_later_write_wins() {
        let cells = vec![
            cell("q", 5, CellType::Put, 1, "old"),
            cell("q", 5, CellType::Put, 2, "new"),
        ];
        let got = read(cells, ColumnFamilyDescriptor::new("f"), opts(10));
        assert_eq!(got, vec![("q".into(), 5, "new".into())]);
    }

    #[test]
    fn family_versions_apply_before_time_range() {
        let cells = vec![
            cell("q", 1, CellType::Put, 1, "a"),
            cell("q", 2, CellType::Put, 2, "b"),
        ];
        let family = ColumnFamilyDescriptor::new("f").max_versions(1);
        let mut o = opts(1);
        o.time_range = TimeRange::new(0, 2).unwrap();
        assert!(
            read(cells, family, o).is_empty(),
            "ts=1 is beyond VERSIONS=1"
        );
    }

    #[test]
    fn ttl_hides_expired_but_min_versions_keeps_newest() {
        let cells = vec![
            cell("q", 100, CellType::Put, 1, "old"),
            cell("q", 200, CellType::Put, 2, "newer"),
        ];
        let mut o = opts(5);
        o.now = 1_000_000;
        let ttl = ColumnFamilyDescriptor::new("f").ttl_seconds(10);
        assert!(read(cells.clone(), ttl.clone(), o.clone()).is_empty());
        let kept = read(cells, ttl.min_versions(1), o);
        assert_eq!(kept, vec![("q".into(), 200, "newer".into())]);
    }

    #[test]
    fn family_markers_hide_every_column() {
        let cells = vec![
            cell("", 10, CellType::DeleteFamily, 1, ""),
            cell("a", 10, CellType::Put, 2, "gone"),
            cell("b", 11, CellType::Put, 3, "kept"),
            cell("", 20, CellType::DeleteFamilyVersion, 4, ""),
            cell("c", 20, CellType::Put, 5, "gone too"),
            cell("c", 19, CellType::Put, 6, "older kept"),
        ];
        let got = read(cells, ColumnFamilyDescriptor::new("f"), opts(10));
        assert_eq!(
            got,
            vec![
                ("b".into(), 11, "kept".into()),
                ("c".into(), 19, "older kept".into())
            ]
        );
    }

    #[test]
    fn keep_deleted_cells_serves_time_travel() {
        let cells = vec![
            cell("q", 10, CellType::DeleteColumn, 2, ""),
            cell("q", 5, CellType::Put, 1, "v"),
        ];
        let family = ColumnFamilyDescriptor::new("f").keep_deleted_cells(KeepDeletedCells::True);
        assert!(read(cells.clone(), family.clone(), opts(1)).is_empty());
        let mut before_delete = opts(1);
        before_delete.time_range = TimeRange::new(0, 10).unwrap();
        assert_eq!(read(cells, family, before_delete).len(), 1);
    }

    #[test]
    fn raw_returns_markers_and_deleted_cells() {
        let cells = vec![
            cell("q", 10, CellType::Delete, 2, ""),
            cell("q", 10, CellType::Put, 1, "v"),
        ];
        let mut o = opts(1);
        o.raw = true;
        let got = read(cells, ColumnFamilyDescriptor::new("f"), o);
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn row_range_intersection_prefers_tighter_bounds() {
        let a = RowRange {
            lower: Bound::Included(Bytes::from_static(b"b")),
            upper: Bound::Unbounded,
        };
        let b = RowRange {
            lower: Bound::Excluded(Bytes::from_static(b"b")),
            upper: Bound::Excluded(Bytes::from_static(b"x")),
        };
        let i = a.intersect(&b);
        assert_eq!(i.lower, Bound::Excluded(Bytes::from_static(b"b")));
        assert_eq!(i.upper, Bound::Excluded(Bytes::from_static(b"x")));
    }

    #[test]
    fn a_held_row_goes_through_the_filter_and_max_versions_as_a_stored_one() {
        let in_family = |family: &'static [u8], mut c: Cell| {
            c.family = Bytes::from_static(family);
            c
        };
        let cells = vec![
            in_family(b"a", cell("q", 20, CellType::Put, 2, "keep")),
            in_family(b"a", cell("q", 10, CellType::Put, 1, "old")),
            in_family(b"b", cell("q", 5, CellType::Put, 3, "drop")),
            in_family(b"b", cell("z", 5, CellType::Put, 4, "keep")),
        ];
        let row = Bytes::from_static(b"r");
        let mut filter = basalt_types::filter::Filter::parse("ValueFilter(=, 'binary:keep')")
            .unwrap()
            .build(false);
        let mut metrics = ScanMetrics::default();
        let got = read_held_row(&row, cells.clone(), Some(filter.as_mut()), 1, &mut metrics)
            .unwrap()
            .unwrap();
        let values: Vec<_> = got.iter().map(|c| c.value.clone()).collect();
        assert_eq!(values, vec![Bytes::from("keep"), Bytes::from("keep")]);
        assert_eq!(got[1].family, Bytes::from_static(b"b"));
        // Two versions asked, no filter: both of a:q, and b's cells.
        let got = read_held_row(&row, cells, None, 2, &mut metrics)
            .unwrap()
            .unwrap();
        assert_eq!(got.len(), 4);
        // A row the filter empties is no row.
        let mut none = basalt_types::filter::Filter::parse("ValueFilter(=, 'binary:nothing')")
            .unwrap()
            .build(false);
        let mut metrics = ScanMetrics::default();
        let row_cells = vec![cell("q", 1, CellType::Put, 1, "v")];
        assert!(
            read_held_row(&row, row_cells, Some(none.as_mut()), 1, &mut metrics)
                .unwrap()
                .is_none()
        );
    }
}
