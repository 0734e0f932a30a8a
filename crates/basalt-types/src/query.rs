//! Reads: gets, scans, time ranges and their results.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::cell::Cell;
use crate::error::{Error, Result};
use crate::filter::Filter;

/// A half-open time range `[min, max)` in milliseconds. Decoding checks
/// the bounds as [`TimeRange::new`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "TimeRangeFields")]
pub struct TimeRange {
    /// Inclusive lower bound.
    pub min: i64,
    /// Exclusive upper bound.
    pub max: i64,
}

impl TimeRange {
    /// Every timestamp: `[0, i64::MAX)`.
    pub const fn all() -> Self {
        TimeRange {
            min: 0,
            max: i64::MAX,
        }
    }

    /// `[min, max)`; `min > max` or a negative bound is an error.
    pub fn new(min: i64, max: i64) -> Result<Self> {
        if min < 0 || max < 0 || min > max {
            return Err(Error::invalid(format!(
                "invalid time range [{min}, {max}): bounds must be non-negative and min <= max"
            )));
        }
        Ok(TimeRange { min, max })
    }

    /// Exactly one timestamp.
    pub fn at(ts: i64) -> Result<Self> {
        TimeRange::new(ts, ts.saturating_add(1))
    }

    /// Everything before `ts`: the meaning of Thrift's `*Ts` calls.
    pub fn before(ts: i64) -> Result<Self> {
        TimeRange::new(0, ts)
    }

    /// True when `ts` lies in the range.
    pub fn contains(&self, ts: i64) -> bool {
        self.min <= ts && ts < self.max
    }

    /// True when this is the whole time line.
    pub fn is_all(&self) -> bool {
        *self == TimeRange::all()
    }
}

/// A time range as decoded, before its bounds are checked.
#[derive(Deserialize)]
struct TimeRangeFields {
    min: i64,
    max: i64,
}

impl TryFrom<TimeRangeFields> for TimeRange {
    type Error = Error;

    fn try_from(fields: TimeRangeFields) -> Result<TimeRange> {
        TimeRange::new(fields.min, fields.max)
    }
}

impl Default for TimeRange {
    fn default() -> Self {
        TimeRange::all()
    }
}

/// Which columns a read returns: family -> `None` for the whole family, or
/// the set of qualifiers. Empty means every family.
///
/// Serialised as a list of `(family, qualifiers)` pairs: byte-string keys
/// are not map keys in every encoding (JSON's must be text).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ColumnSelectionFields", into = "ColumnSelectionFields")]
pub struct ColumnSelection {
    families: BTreeMap<Bytes, Option<BTreeSet<Bytes>>>,
}

/// A column selection as it travels.
#[derive(Serialize, Deserialize)]
struct ColumnSelectionFields {
    families: Vec<(Bytes, Option<Vec<Bytes>>)>,
}

impl From<ColumnSelection> for ColumnSelectionFields {
    fn from(s: ColumnSelection) -> Self {
        ColumnSelectionFields {
            families: s
                .families
                .into_iter()
                .map(|(f, q)| (f, q.map(|q| q.into_iter().collect())))
                .collect(),
        }
    }
}

impl From<ColumnSelectionFields> for ColumnSelection {
    fn from(f: ColumnSelectionFields) -> Self {
        ColumnSelection {
            families: f
                .families
                .into_iter()
                .map(|(f, q)| (f, q.map(|q| q.into_iter().collect())))
                .collect(),
        }
    }
}

impl ColumnSelection {
    /// Selects a whole family (replacing any qualifiers chosen before).
    pub fn add_family(&mut self, family: Bytes) {
        self.families.insert(family, None);
    }

    /// Selects one column. As in HBase, this narrows a family that was
    /// selected whole to the listed qualifiers.
    pub fn add_column(&mut self, family: Bytes, qualifier: Bytes) {
        match self.families.entry(family) {
            Entry::Vacant(v) => {
                v.insert(Some(BTreeSet::from([qualifier])));
            }
            Entry::Occupied(mut o) => match o.get_mut() {
                Some(set) => {
                    set.insert(qualifier);
                }
                none => *none = Some(BTreeSet::from([qualifier])),
            },
        }
    }

    /// True when nothing was selected: every family is read.
    pub fn is_all(&self) -> bool {
        self.families.is_empty()
    }

    /// The selected families and their qualifier sets.
    pub fn families(&self) -> &BTreeMap<Bytes, Option<BTreeSet<Bytes>>> {
        &self.families
    }

    /// True when the family is read at all.
    pub fn includes_family(&self, family: &[u8]) -> bool {
        self.is_all() || self.families.contains_key(family)
    }

    /// True when the column is read.
    pub fn includes(&self, family: &[u8], qualifier: &[u8]) -> bool {
        if self.is_all() {
            return true;
        }
        match self.families.get(family) {
            None => false,
            Some(None) => true,
            Some(Some(set)) => set.contains(qualifier),
        }
    }

    /// The qualifiers selected in `family`, or `None` for all of them.
    pub fn qualifiers(&self, family: &[u8]) -> Option<&BTreeSet<Bytes>> {
        self.families.get(family).and_then(|q| q.as_ref())
    }
}

/// Reads one row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Get {
    /// The row.
    pub row: Bytes,
    /// Columns to return.
    pub columns: ColumnSelection,
    /// Versions per column to return (default 1).
    pub max_versions: u32,
    /// Only versions in this range.
    pub time_range: TimeRange,
    /// Server-side filter.
    pub filter: Option<Filter>,
}

impl Get {
    /// The latest version of every column of `row`.
    pub fn new(row: impl Into<Bytes>) -> Self {
        Get {
            row: row.into(),
            columns: ColumnSelection::default(),
            max_versions: 1,
            time_range: TimeRange::all(),
            filter: None,
        }
    }

    /// Restricts to a family.
    pub fn family(mut self, family: impl Into<Bytes>) -> Self {
        self.columns.add_family(family.into());
        self
    }

    /// Restricts to a column.
    pub fn column(mut self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Self {
        self.columns.add_column(family.into(), qualifier.into());
        self
    }

    /// Returns up to `versions` versions per column.
    pub fn max_versions(mut self, versions: u32) -> Self {
        self.max_versions = versions;
        self
    }

    /// Only the versions at exactly `ts`.
    pub fn timestamp(mut self, ts: i64) -> Result<Self> {
        self.time_range = TimeRange::at(ts)?;
        Ok(self)
    }

    /// Only the versions in `range`.
    pub fn time_range(mut self, range: TimeRange) -> Self {
        self.time_range = range;
        self
    }

    /// A server-side filter.
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = Some(filter);
        self
    }
}

/// Reads a range of rows.
///
/// Forward scans run from `start_row` (inclusive) to `stop_row` (exclusive).
/// Reversed scans run from `start_row` (inclusive, the high end) down to
/// `stop_row` (exclusive, the low end). Empty bounds are open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scan {
    /// First row (inclusive); empty for the table's start (or end, reversed).
    pub start_row: Bytes,
    /// Last row (exclusive); empty for the table's end (or start, reversed).
    pub stop_row: Bytes,
    /// Only rows starting with this prefix.
    pub row_prefix: Option<Bytes>,
    /// Newest row first.
    pub reversed: bool,
    /// Columns to return.
    pub columns: ColumnSelection,
    /// Versions per column to return (default 1).
    pub max_versions: u32,
    /// Only versions in this range.
    pub time_range: TimeRange,
    /// Server-side filter.
    pub filter: Option<Filter>,
    /// At most this many cells per returned result: wide rows come back in
    /// pieces.
    pub batch: Option<usize>,
    /// Rows fetched per round trip by remote clients (a hint).
    pub caching: Option<usize>,
    /// At most this many rows in all.
    pub limit: Option<usize>,
    /// Return delete markers and deleted cells too.
    pub raw: bool,
}

impl Default for Scan {
    fn default() -> Self {
        Scan::new()
    }
}

impl Scan {
    /// A scan of the whole table.
    pub fn new() -> Self {
        Scan {
            start_row: Bytes::new(),
            stop_row: Bytes::new(),
            row_prefix: None,
            reversed: false,
            columns: ColumnSelection::default(),
            max_versions: 1,
            time_range: TimeRange::all(),
            filter: None,
            batch: None,
            caching: None,
            limit: None,
            raw: false,
        }
    }

    /// Builder: start row (inclusive).
    pub fn start_row(mut self, row: impl Into<Bytes>) -> Self {
        self.start_row = row.into();
        self
    }

    /// Builder: stop row (exclusive).
    pub fn stop_row(mut self, row: impl Into<Bytes>) -> Self {
        self.stop_row = row.into();
        self
    }

    /// Builder: only rows starting with `prefix`.
    pub fn prefix(mut self, prefix: impl Into<Bytes>) -> Self {
        self.row_prefix = Some(prefix.into());
        self
    }

    /// Builder: scan newest row first.
    pub fn reversed(mut self, reversed: bool) -> Self {
        self.reversed = reversed;
        self
    }

    /// Builder: restrict to a family.
    pub fn family(mut self, family: impl Into<Bytes>) -> Self {
        self.columns.add_family(family.into());
        self
    }

    /// Builder: restrict to a column.
    pub fn column(mut self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Self {
        self.columns.add_column(family.into(), qualifier.into());
        self
    }

    /// Builder: versions per column.
    pub fn max_versions(mut self, versions: u32) -> Self {
        self.max_versions = versions;
        self
    }

    /// Builder: time range.
    pub fn time_range(mut self, range: TimeRange) -> Self {
        self.time_range = range;
        self
    }

    /// Builder: filter.
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Builder: at most `cells` cells per result.
    pub fn batch(mut self, cells: usize) -> Self {
        self.batch = Some(cells);
        self
    }

    /// Builder: rows per round trip (remote clients).
    pub fn caching(mut self, rows: usize) -> Self {
        self.caching = Some(rows);
        self
    }

    /// Builder: at most `rows` rows.
    pub fn limit(mut self, rows: usize) -> Self {
        self.limit = Some(rows);
        self
    }

    /// Builder: raw scan.
    pub fn raw(mut self, raw: bool) -> Self {
        self.raw = raw;
        self
    }

    /// Checks the options that have invalid values.
    pub fn validate(&self) -> Result<()> {
        if self.max_versions == 0 {
            return Err(Error::invalid("max versions must be at least 1"));
        }
        if self.batch == Some(0) {
            return Err(Error::invalid("batch must be at least 1"));
        }
        if let Some(filter) = &self.filter {
            filter.check_limits()?;
        }
        Ok(())
    }
}

/// The smallest key greater than every key starting with `prefix`, or empty
/// when there is none (the prefix is all `0xff`).
pub fn prefix_successor(prefix: &[u8]) -> Bytes {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last != 0xff {
            end.push(last + 1);
            return Bytes::from(end);
        }
    }
    Bytes::new()
}

/// The cells returned for one row (or one batch of a wide row), in KeyValue
/// order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowResult {
    /// The row key (empty for an empty result).
    pub row: Bytes,
    /// The cells.
    pub cells: Vec<Cell>,
}

impl RowResult {
    /// True when the row had no cells to return.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The newest value of `family:qualifier` in this result.
    pub fn value(&self, family: &[u8], qualifier: &[u8]) -> Option<&Bytes> {
        self.cells
            .iter()
            .find(|c| &c.family[..] == family && &c.qualifier[..] == qualifier)
            .map(|c| &c.value)
    }

    /// Every returned version of `family:qualifier`, newest first.
    pub fn versions<'a>(
        &'a self,
        family: &'a [u8],
        qualifier: &'a [u8],
    ) -> impl Iterator<Item = &'a Cell> + 'a {
        self.cells
            .iter()
            .filter(move |c| &c.family[..] == family && &c.qualifier[..] == qualifier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_ranges_are_half_open() {
        let r = TimeRange::new(5, 10).unwrap();
        assert!(r.contains(5) && r.contains(9));
        assert!(!r.contains(10) && !r.contains(4));
        assert!(TimeRange::new(10, 5).is_err());
        assert!(TimeRange::at(7).unwrap().contains(7));
        assert!(!TimeRange::before(7).unwrap().contains(7));
    }

    #[test]
    fn column_after_family_narrows_it() {
        let mut s = ColumnSelection::default();
        s.add_family(Bytes::from_static(b"f"));
        assert!(s.includes(b"f", b"anything"));
        s.add_column(Bytes::from_static(b"f"), Bytes::from_static(b"q"));
        assert!(s.includes(b"f", b"q"));
        assert!(!s.includes(b"f", b"other"));
        assert!(!s.includes_family(b"g"));
    }

    #[test]
    fn prefix_successor_carries_over_ff() {
        assert_eq!(&prefix_successor(b"ab")[..], b"ac");
        assert_eq!(&prefix_successor(b"a\xff")[..], b"b");
        assert!(prefix_successor(b"\xff\xff").is_empty());
    }
}
