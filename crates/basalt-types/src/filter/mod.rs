//! Server-side filters.
//!
//! A [`Filter`] is the declarative description a client sends (built in code
//! or parsed from HBase's filter language by [`Filter::parse`]). Reads turn it
//! into a stateful [`CellFilter`] with [`Filter::build`] and drive it from
//! inside the scan path, cell by cell, exactly where HBase calls its filters:
//!
//! ```text
//! for each row:
//!     if filter_all_remaining()          -> stop the scan
//!     reset()
//!     if filter_row_key(row)             -> skip the row
//!     for each cell the version/delete/TTL logic lets through
//!         (columns newest first, after the family's VERSIONS limit, before
//!          the request's max versions):
//!         code = filter_cell(cell)       -> include / skip / next column / next row / seek
//!         included cells pass through transform_cell()
//!     filter_row_cells(&mut cells)       (only if has_filter_row())
//!     if cells are non-empty and filter_row() -> drop the row
//! ```
//!
//! Comparison direction: a filter with operator `op` and comparator value `v`
//! keeps a cell when `cell_value op v` holds (`ValueFilter(<, 'binary:5')`
//! keeps values below "5"). Regex and substring comparators only support `=`
//! and `!=`: "matches" and "does not match".

mod comparator;
mod filters;
mod parse;

use std::fmt;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::cell::Cell;
use crate::error::Result;

pub use comparator::Comparator;

/// The six comparison operators of HBase's `CompareOperator`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CompareOp {
    /// `<`
    Less,
    /// `<=`
    LessOrEqual,
    /// `=`
    Equal,
    /// `!=`
    NotEqual,
    /// `>=`
    GreaterOrEqual,
    /// `>`
    Greater,
}

impl CompareOp {
    /// Does `ordering` (left compared with right) satisfy `left op right`?
    pub fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            CompareOp::Less => ordering == Less,
            CompareOp::LessOrEqual => ordering != Greater,
            CompareOp::Equal => ordering == Equal,
            CompareOp::NotEqual => ordering != Equal,
            CompareOp::GreaterOrEqual => ordering != Less,
            CompareOp::Greater => ordering == Greater,
        }
    }

    /// The operator as written in the filter language.
    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::Less => "<",
            CompareOp::LessOrEqual => "<=",
            CompareOp::Equal => "=",
            CompareOp::NotEqual => "!=",
            CompareOp::GreaterOrEqual => ">=",
            CompareOp::Greater => ">",
        }
    }

    /// HBase's enum name (`LESS`, `GREATER_OR_EQUAL`, ...).
    pub fn hbase_name(self) -> &'static str {
        match self {
            CompareOp::Less => "LESS",
            CompareOp::LessOrEqual => "LESS_OR_EQUAL",
            CompareOp::Equal => "EQUAL",
            CompareOp::NotEqual => "NOT_EQUAL",
            CompareOp::GreaterOrEqual => "GREATER_OR_EQUAL",
            CompareOp::Greater => "GREATER",
        }
    }
}

/// How a [`FilterList`](Filter::List) combines its members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ListOperator {
    /// Every member must pass (`AND`, HBase's MUST_PASS_ALL).
    MustPassAll,
    /// One member passing is enough (`OR`, HBase's MUST_PASS_ONE).
    MustPassOne,
}

/// A filter as a client describes it. Cheap to clone; holds no scan state,
/// so it serialises (region calls between servers carry it; each read
/// builds its own [`CellFilter`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Filter {
    /// Strips values; with `length_as_value`, the value becomes the original
    /// value's length as a 4-byte big-endian integer.
    KeyOnly {
        /// Return the value length instead of an empty value.
        length_as_value: bool,
    },
    /// Only the first cell of each row.
    FirstKeyOnly,
    /// Rows starting with a prefix.
    Prefix(Bytes),
    /// Columns whose qualifier starts with a prefix.
    ColumnPrefix(Bytes),
    /// Columns whose qualifier starts with any of the prefixes.
    MultipleColumnPrefix(Vec<Bytes>),
    /// The first `n` columns of a row (and, as in HBase, the scan ends after
    /// the first row that has more).
    ColumnCountGet(u32),
    /// At most `n` rows.
    Page(u64),
    /// `limit` columns per row starting at column number `offset`.
    ColumnPagination {
        /// Columns to return per row.
        limit: u32,
        /// Columns to skip first.
        offset: u32,
    },
    /// Rows up to and including a stop row.
    InclusiveStop(Bytes),
    /// Only cells with one of these timestamps.
    Timestamps(Vec<i64>),
    /// Compares the row key.
    Row(CompareOp, Comparator),
    /// Compares the family name.
    Family(CompareOp, Comparator),
    /// Compares the qualifier.
    Qualifier(CompareOp, Comparator),
    /// Compares the value.
    Value(CompareOp, Comparator),
    /// Qualifiers within a range.
    ColumnRange {
        /// Lower bound; `None` is unbounded.
        min: Option<Bytes>,
        /// Whether `min` itself is included.
        min_inclusive: bool,
        /// Upper bound; `None` is unbounded.
        max: Option<Bytes>,
        /// Whether `max` itself is included.
        max_inclusive: bool,
    },
    /// Keeps a row when one column's value passes a test.
    SingleColumnValue(SingleColumnValue),
    /// Like `SingleColumnValue`, and leaves the tested column out of results.
    SingleColumnValueExclude(SingleColumnValue),
    /// Keeps only cells whose timestamp matches one of a reference column's.
    DependentColumn {
        /// Reference column family.
        family: Bytes,
        /// Reference column qualifier.
        qualifier: Bytes,
        /// Leave the reference column out of results.
        drop_dependent_column: bool,
        /// Only reference cells whose value passes this test count.
        value_test: Option<(CompareOp, Comparator)>,
    },
    /// Only the cells of one column whose value passes a test.
    ColumnValue {
        /// Column family.
        family: Bytes,
        /// Column qualifier.
        qualifier: Bytes,
        /// Operator.
        op: CompareOp,
        /// Comparator.
        comparator: Comparator,
    },
    /// A list of filters combined with AND or OR.
    List(ListOperator, Vec<Filter>),
    /// Drops a whole row when the inner filter drops any cell of it.
    Skip(Box<Filter>),
    /// Ends the scan at the first cell or row the inner filter drops.
    While(Box<Filter>),
    /// Rows whose key matches any of several patterns with fixed and
    /// "any byte" positions (HBase's `FuzzyRowFilter`).
    FuzzyRow(Vec<FuzzyKey>),
}

/// One pattern of [`Filter::FuzzyRow`]: a row matches when every fixed
/// position its key has (positions past the row's end or past the
/// pattern's end are not compared, as in HBase) holds the pattern's byte.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "FuzzyKeyFields")]
pub struct FuzzyKey {
    key: Bytes,
    mask: Vec<bool>,
}

/// The serialised form of a [`FuzzyKey`], checked on decoding.
#[derive(Deserialize)]
struct FuzzyKeyFields {
    key: Bytes,
    mask: Vec<bool>,
}

impl TryFrom<FuzzyKeyFields> for FuzzyKey {
    type Error = crate::Error;

    fn try_from(fields: FuzzyKeyFields) -> crate::Result<Self> {
        FuzzyKey::new(fields.key, fields.mask)
    }
}

impl FuzzyKey {
    /// A pattern: `fixed[i]` says whether byte `i` of a matching row must
    /// equal `key[i]` (true) or may be anything (false). The two must be
    /// equally long, as HBase requires.
    pub fn new(key: impl Into<Bytes>, fixed: Vec<bool>) -> crate::Result<Self> {
        let key = key.into();
        if key.len() != fixed.len() {
            return Err(crate::Error::invalid(format!(
                "a fuzzy row key of {} bytes needs a mask of as many bytes, got {}",
                key.len(),
                fixed.len()
            )));
        }
        Ok(FuzzyKey { key, mask: fixed })
    }

    /// From HBase's fuzzy info bytes: a client's own form (0 = fixed, 1 =
    /// any) or the form HBase's Java client sends after preprocessing it
    /// (0xFF = fixed, anything else = any), told apart by the 0xFF bytes
    /// only the preprocessed form has.
    pub fn from_hbase_mask(key: impl Into<Bytes>, mask: &[u8]) -> crate::Result<Self> {
        let preprocessed = mask.contains(&0xFF);
        let fixed = mask
            .iter()
            .map(|&b| if preprocessed { b == 0xFF } else { b == 0 })
            .collect();
        FuzzyKey::new(key, fixed)
    }

    /// The pattern's bytes (any value at the free positions).
    pub fn key(&self) -> &Bytes {
        &self.key
    }

    /// Per position: true when the row's byte must equal the key's.
    pub fn fixed(&self) -> &[bool] {
        &self.mask
    }
}

/// Options of `SingleColumnValueFilter` and its Exclude variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SingleColumnValue {
    /// Column family tested.
    pub family: Bytes,
    /// Column qualifier tested.
    pub qualifier: Bytes,
    /// Operator.
    pub op: CompareOp,
    /// Comparator.
    pub comparator: Comparator,
    /// Drop rows that do not have the column at all (default false: keep them).
    pub filter_if_missing: bool,
    /// Test only the column's newest version (default true).
    pub latest_version_only: bool,
}

impl Filter {
    /// The columns whose value a row must match for this filter to keep
    /// it (`SingleColumnValueFilter`s, alone or in AND lists): the columns
    /// a secondary index could answer the scan from. Empty when the filter
    /// tests no single column's value that way (an OR list among them).
    pub fn tested_columns(&self) -> Vec<(Bytes, Bytes)> {
        match self {
            Filter::SingleColumnValue(c) | Filter::SingleColumnValueExclude(c) => {
                vec![(c.family.clone(), c.qualifier.clone())]
            }
            Filter::List(ListOperator::MustPassAll, members) => {
                let mut columns = Vec::new();
                for member in members {
                    for column in member.tested_columns() {
                        if !columns.contains(&column) {
                            columns.push(column);
                        }
                    }
                }
                columns
            }
            Filter::Skip(inner) | Filter::While(inner) => inner.tested_columns(),
            _ => Vec::new(),
        }
    }

    /// Parses HBase's filter language, for example
    /// `SingleColumnValueFilter('cf1', 'qual1', =, 'binary:val1') AND KeyOnlyFilter()`.
    /// Errors name the byte position of the problem.
    pub fn parse(text: &str) -> Result<Filter> {
        parse::parse_filter(text)
    }

    /// Refuses a filter tree with more than [`max_filters`] filters or
    /// nested deeper than [`max_filter_depth`]: every filter is evaluated
    /// for every cell scanned, so an unbounded list (100,000 `PrefixFilter`
    /// in an OR, a few megabytes of request) would buy minutes of server
    /// CPU. Every filter language (filter string, REST FilterModel,
    /// protobuf, Thrift2) ends here, through `Scan::validate` and the
    /// table's `get`.
    pub fn check_limits(&self) -> Result<()> {
        let (max_count, max_depth) = (max_filters(), max_filter_depth());
        let mut count = 0usize;
        // Iterative, so a deep tree cannot overflow the stack here.
        let mut stack: Vec<(&Filter, usize)> = vec![(self, 1)];
        while let Some((filter, depth)) = stack.pop() {
            count += 1;
            if count > max_count {
                return Err(crate::Error::invalid(format!(
                    "the filter holds more than {max_count} filters (the limit, \
                     max_filters); split the request or simplify the filter"
                )));
            }
            if depth > max_depth {
                return Err(crate::Error::invalid(format!(
                    "the filter is nested more than {max_depth} levels deep \
                     (the limit, max_filter_depth)"
                )));
            }
            match filter {
                Filter::List(_, children) => {
                    stack.extend(children.iter().map(|c| (c, depth + 1)));
                }
                Filter::Skip(inner) | Filter::While(inner) => stack.push((&**inner, depth + 1)),
                _ => {}
            }
        }
        Ok(())
    }

    /// Creates the stateful evaluator for one read. `reversed` tells
    /// row-range filters (Prefix, InclusiveStop) which way the scan runs.
    pub fn build(&self, reversed: bool) -> Box<dyn CellFilter> {
        filters::build(self, reversed)
    }
}

/// What a filter tells the scanner to do with a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReturnCode {
    /// Include the cell.
    Include,
    /// Include the cell and skip the column's remaining versions.
    IncludeAndNextCol,
    /// Include the cell and skip the rest of the row.
    IncludeAndSeekNextRow,
    /// Leave the cell out.
    Skip,
    /// Leave the cell out and skip the column's remaining versions.
    NextCol,
    /// Leave the cell out and skip the rest of the row.
    NextRow,
    /// Leave the cell out and skip ahead to [`CellFilter::next_cell_hint`].
    SeekNextUsingHint,
}

/// A filter's per-read state machine. See the module docs for the call order.
///
/// Every method has a pass-everything default so implementations only
/// override what they use.
pub trait CellFilter: Send + fmt::Debug {
    /// Called before each row.
    fn reset(&mut self) {}

    /// True once no further row can pass: the scan stops.
    fn filter_all_remaining(&mut self) -> bool {
        false
    }

    /// True to drop the row from its key alone.
    fn filter_row_key(&mut self, _row: &[u8]) -> bool {
        false
    }

    /// Decides about one cell.
    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        ReturnCode::Include
    }

    /// Rewrites an included cell (KeyOnlyFilter strips the value).
    fn transform_cell(&mut self, cell: Cell) -> Cell {
        cell
    }

    /// True when the filter needs [`filter_row_cells`](Self::filter_row_cells)
    /// or [`filter_row`](Self::filter_row): whole-row decisions. Such filters
    /// cannot be combined with a scan `batch`.
    fn has_filter_row(&self) -> bool {
        false
    }

    /// Edits the cells collected for a row before it is returned.
    fn filter_row_cells(&mut self, _cells: &mut Vec<Cell>) {}

    /// True to drop the (non-empty) row after all its cells were seen.
    fn filter_row(&mut self) -> bool {
        false
    }

    /// For [`ReturnCode::SeekNextUsingHint`]: a key (only row, family,
    /// qualifier, timestamp and type matter) at or before the next cell that
    /// could pass. Cells sorting before it are skipped.
    fn next_cell_hint(&mut self, _cell: &Cell) -> Option<Cell> {
        None
    }
}

/// Default of [`max_filters`].
pub const DEFAULT_MAX_FILTERS: usize = 1_000;
/// Default of [`max_filter_depth`].
pub const DEFAULT_MAX_FILTER_DEPTH: usize = 32;

static MAX_FILTERS: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(DEFAULT_MAX_FILTERS);
static MAX_FILTER_DEPTH: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(DEFAULT_MAX_FILTER_DEPTH);

/// Most filters one request's filter tree may hold (process-wide; the
/// server sets it from its configuration at start).
pub fn max_filters() -> usize {
    MAX_FILTERS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Deepest nesting of one request's filter tree.
pub fn max_filter_depth() -> usize {
    MAX_FILTER_DEPTH.load(std::sync::atomic::Ordering::Relaxed)
}

/// Sets the process-wide filter limits (each at least 1).
pub fn set_filter_limits(max_filters: usize, max_depth: usize) {
    MAX_FILTERS.store(max_filters.max(1), std::sync::atomic::Ordering::Relaxed);
    MAX_FILTER_DEPTH.store(max_depth.max(1), std::sync::atomic::Ordering::Relaxed);
}

#[cfg(test)]
mod limit_tests {
    use super::*;

    fn prefixes(n: usize) -> Filter {
        let text = (0..n)
            .map(|i| format!("PrefixFilter('p{i}')"))
            .collect::<Vec<_>>()
            .join(" OR ");
        Filter::parse(&text).unwrap()
    }

    #[test]
    fn a_hundred_thousand_filters_are_refused_with_a_clear_error() {
        let error = prefixes(100_000).check_limits().unwrap_err().to_string();
        assert!(error.contains("more than 1000 filters"), "{error}");
        assert!(prefixes(10).check_limits().is_ok());
    }

    #[test]
    fn a_deeply_nested_filter_is_refused() {
        let mut text = "KeyOnlyFilter()".to_string();
        for _ in 0..40 {
            text = format!("SKIP ({text})");
        }
        let error = Filter::parse(&text)
            .unwrap()
            .check_limits()
            .unwrap_err()
            .to_string();
        assert!(error.contains("nested more than 32"), "{error}");
    }
}
