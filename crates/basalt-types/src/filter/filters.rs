//! The stateful evaluators behind [`Filter::build`]: one type per filter,
//! each following the HBase 2.x filter of the same name.
//!
//! One convention differs in form (not in effect) from HBase. Several HBase
//! filters answer `NEXT_ROW` for a cell that only rules out the rest of the
//! cell's *family* (ColumnPrefixFilter past its prefix, FamilyFilter on a
//! failing family, ...): HBase's store scanners run one family each, so
//! there `NEXT_ROW` only ends the current family and the row's next family is
//! still offered to the filter. [`ReturnCode::NextRow`] is documented here as
//! "skip the rest of the row", so those filters instead answer
//! [`ReturnCode::SeekNextUsingHint`] with a hint at the first key of the next
//! family. Filters that answer `NextRow` from row-level state (PrefixFilter,
//! FirstKeyOnlyFilter, SingleColumnValueFilter, ...) keep answering it for
//! every later family too, so they are correct whichever scope the scanner
//! gives `NextRow`.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashSet};

use bytes::Bytes;

use super::{
    CellFilter, Comparator, CompareOp, Filter, FuzzyKey, ListOperator, ReturnCode,
    SingleColumnValue,
};
use crate::cell::{compare_version, Cell, CellType, LATEST_TIMESTAMP};

#[cfg(test)]
mod tests;

/// Builds the evaluator for `filter`; `reversed` tells row-range filters
/// which way rows arrive.
pub(super) fn build(filter: &Filter, reversed: bool) -> Box<dyn CellFilter> {
    match filter {
        Filter::KeyOnly { length_as_value } => Box::new(KeyOnly {
            length_as_value: *length_as_value,
        }),
        Filter::FirstKeyOnly => Box::new(FirstKeyOnly { found: false }),
        Filter::Prefix(prefix) => Box::new(PrefixRows {
            prefix: prefix.clone(),
            reversed,
            passed_prefix: false,
            filter_out_row: true,
        }),
        Filter::ColumnPrefix(prefix) => {
            Box::new(ColumnSelector::new(ColumnSelection::Prefixes(vec![
                prefix.clone()
            ])))
        }
        Filter::MultipleColumnPrefix(prefixes) => {
            // Sorted and distinct so the next prefix to seek to is the first
            // one above the qualifier.
            let sorted: BTreeSet<Bytes> = prefixes.iter().cloned().collect();
            Box::new(ColumnSelector::new(ColumnSelection::Prefixes(
                sorted.into_iter().collect(),
            )))
        }
        Filter::ColumnCountGet(limit) => Box::new(ColumnCountGet {
            limit: u64::from(*limit),
            count: 0,
        }),
        Filter::Page(page_size) => Box::new(Page {
            page_size: *page_size,
            rows_accepted: 0,
        }),
        Filter::ColumnPagination { limit, offset } => Box::new(ColumnPagination {
            limit: u64::from(*limit),
            offset: u64::from(*offset),
            count: 0,
        }),
        Filter::InclusiveStop(stop) => Box::new(InclusiveStop {
            stop: stop.clone(),
            reversed,
            done: false,
        }),
        Filter::Timestamps(timestamps) => {
            let timestamps: BTreeSet<i64> = timestamps.iter().copied().collect();
            let min = timestamps.first().copied().unwrap_or(i64::MAX);
            Box::new(Timestamps { timestamps, min })
        }
        Filter::Row(op, comparator) => Box::new(RowCompare {
            op: *op,
            comparator: comparator.clone(),
            filter_out_row: false,
        }),
        Filter::Family(op, comparator) => Box::new(FamilyCompare {
            op: *op,
            comparator: comparator.clone(),
        }),
        Filter::Qualifier(op, comparator) => Box::new(QualifierCompare {
            op: *op,
            comparator: comparator.clone(),
        }),
        Filter::Value(op, comparator) => Box::new(ValueCompare {
            op: *op,
            comparator: comparator.clone(),
        }),
        Filter::ColumnRange {
            min,
            min_inclusive,
            max,
            max_inclusive,
        } => Box::new(ColumnSelector::new(ColumnSelection::Range {
            min: min.clone(),
            min_inclusive: *min_inclusive,
            max: max.clone(),
            max_inclusive: *max_inclusive,
        })),
        Filter::SingleColumnValue(spec) => Box::new(SingleColumnValueTest::new(spec, false)),
        Filter::SingleColumnValueExclude(spec) => Box::new(SingleColumnValueTest::new(spec, true)),
        Filter::DependentColumn {
            family,
            qualifier,
            drop_dependent_column,
            value_test,
        } => Box::new(DependentColumn {
            family: family.clone(),
            qualifier: qualifier.clone(),
            drop_dependent_column: *drop_dependent_column,
            value_test: value_test.clone(),
            timestamps: HashSet::new(),
        }),
        Filter::ColumnValue {
            family,
            qualifier,
            op,
            comparator,
        } => Box::new(ColumnValue {
            family: family.clone(),
            qualifier: qualifier.clone(),
            op: *op,
            comparator: comparator.clone(),
            column_found: false,
        }),
        Filter::FuzzyRow(keys) => Box::new(FuzzyRows {
            keys: keys.clone(),
            reversed,
            decided: None,
            done: false,
        }),
        Filter::List(operator, members) => {
            let members: Vec<Box<dyn CellFilter>> =
                members.iter().map(|m| build(m, reversed)).collect();
            match operator {
                ListOperator::MustPassAll => Box::new(AllOf::new(members, reversed)),
                ListOperator::MustPassOne => Box::new(AnyOf::new(members, reversed)),
            }
        }
        Filter::Skip(inner) => Box::new(SkipRow {
            inner: build(inner, reversed),
            drop_row: false,
        }),
        Filter::While(inner) => Box::new(WhileMatch {
            inner: build(inner, reversed),
            done: false,
        }),
    }
}

fn is_include(code: ReturnCode) -> bool {
    matches!(
        code,
        ReturnCode::Include | ReturnCode::IncludeAndNextCol | ReturnCode::IncludeAndSeekNextRow
    )
}

fn is_column(cell: &Cell, family: &[u8], qualifier: &[u8]) -> bool {
    cell.family[..] == *family && cell.qualifier[..] == *qualifier
}

/// The smallest key of column `qualifier` in the cell's row and family: the
/// newest timestamp, the type that sorts first and the highest sequence.
fn first_on_column(cell: &Cell, qualifier: Bytes) -> Cell {
    Cell {
        row: cell.row.clone(),
        family: cell.family.clone(),
        qualifier,
        timestamp: LATEST_TIMESTAMP,
        cell_type: CellType::DeleteFamily,
        sequence_id: u64::MAX,
        value: Bytes::new(),
        ttl_millis: None,
    }
}

/// The smallest key after every key of the cell's family in its row: the
/// family name followed by a zero byte is the next possible family.
fn first_on_next_family(cell: &Cell) -> Cell {
    let mut family = Vec::with_capacity(cell.family.len() + 1);
    family.extend_from_slice(&cell.family);
    family.push(0);
    Cell {
        row: cell.row.clone(),
        family: Bytes::from(family),
        qualifier: Bytes::new(),
        timestamp: LATEST_TIMESTAMP,
        cell_type: CellType::DeleteFamily,
        sequence_id: u64::MAX,
        value: Bytes::new(),
        ttl_millis: None,
    }
}

/// Key order as the scan meets keys: rows run backwards in a reversed scan
/// while the cells inside a row keep their forward order.
fn compare_in_scan_order(a: &Cell, b: &Cell, reversed: bool) -> Ordering {
    let rows = a.row.cmp(&b.row);
    let rows = if reversed { rows.reverse() } else { rows };
    rows.then_with(|| a.family.cmp(&b.family))
        .then_with(|| a.qualifier.cmp(&b.qualifier))
        .then_with(|| compare_version(a, b))
}

// ---------------------------------------------------------------------------
// Simple filters
// ---------------------------------------------------------------------------

/// KeyOnlyFilter: empties values, or replaces them by their length.
#[derive(Debug)]
struct KeyOnly {
    length_as_value: bool,
}

impl CellFilter for KeyOnly {
    fn transform_cell(&mut self, mut cell: Cell) -> Cell {
        cell.value = if self.length_as_value {
            // HBase writes a Java int; values never come near 4 GiB, the
            // saturation only keeps the conversion total.
            let len = u32::try_from(cell.value.len()).unwrap_or(u32::MAX);
            Bytes::copy_from_slice(&len.to_be_bytes())
        } else {
            Bytes::new()
        };
        cell
    }
}

/// FirstKeyOnlyFilter: the first cell the row offers, then nothing.
#[derive(Debug)]
struct FirstKeyOnly {
    found: bool,
}

impl CellFilter for FirstKeyOnly {
    fn reset(&mut self) {
        self.found = false;
    }

    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        if self.found {
            return ReturnCode::NextRow;
        }
        self.found = true;
        ReturnCode::Include
    }
}

/// PrefixFilter: rows starting with a prefix; ends the scan once rows have
/// moved past every row that could start with it.
#[derive(Debug)]
struct PrefixRows {
    prefix: Bytes,
    reversed: bool,
    passed_prefix: bool,
    /// As in HBase, true until `filter_row_key` has seen a matching row.
    filter_out_row: bool,
}

impl CellFilter for PrefixRows {
    fn reset(&mut self) {
        self.filter_out_row = true;
    }

    fn filter_all_remaining(&mut self) -> bool {
        self.passed_prefix
    }

    fn filter_row_key(&mut self, row: &[u8]) -> bool {
        if row.starts_with(&self.prefix) {
            self.filter_out_row = false;
        } else {
            self.filter_out_row = true;
            // A row without the prefix sorts either below every row with
            // it or above all of them, so comparing with the bare prefix
            // tells which side of the range the scan is on.
            let ordering = row.cmp(&self.prefix[..]);
            let past = if self.reversed {
                ordering == Ordering::Less
            } else {
                ordering == Ordering::Greater
            };
            if past {
                self.passed_prefix = true;
            }
        }
        self.filter_out_row
    }

    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        if self.filter_out_row {
            ReturnCode::NextRow
        } else {
            ReturnCode::Include
        }
    }

    fn filter_row(&mut self) -> bool {
        self.filter_out_row
    }
}

/// ColumnCountGetFilter. HBase quirk kept on purpose: the count is per row
/// but `filter_all_remaining` turns true as soon as a row has more columns
/// than the limit, which ends a scan after that row.
#[derive(Debug)]
struct ColumnCountGet {
    limit: u64,
    count: u64,
}

impl CellFilter for ColumnCountGet {
    fn reset(&mut self) {
        self.count = 0;
    }

    fn filter_all_remaining(&mut self) -> bool {
        self.count > self.limit
    }

    fn filter_row_key(&mut self, _row: &[u8]) -> bool {
        self.filter_all_remaining()
    }

    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        self.count = self.count.saturating_add(1);
        if self.filter_all_remaining() {
            ReturnCode::NextCol
        } else {
            ReturnCode::IncludeAndNextCol
        }
    }
}

/// PageFilter: counts the rows that reach `filter_row`.
#[derive(Debug)]
struct Page {
    page_size: u64,
    rows_accepted: u64,
}

impl CellFilter for Page {
    fn filter_all_remaining(&mut self) -> bool {
        self.rows_accepted >= self.page_size
    }

    fn filter_row_key(&mut self, _row: &[u8]) -> bool {
        self.filter_all_remaining()
    }

    fn has_filter_row(&self) -> bool {
        true
    }

    fn filter_row(&mut self) -> bool {
        self.rows_accepted = self.rows_accepted.saturating_add(1);
        self.rows_accepted > self.page_size
    }
}

/// ColumnPaginationFilter with a numeric offset: columns are counted once
/// each (the newest version) across the row's families.
#[derive(Debug)]
struct ColumnPagination {
    limit: u64,
    offset: u64,
    count: u64,
}

impl CellFilter for ColumnPagination {
    fn reset(&mut self) {
        self.count = 0;
    }

    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        if self.count >= self.offset.saturating_add(self.limit) {
            return ReturnCode::NextRow;
        }
        let code = if self.count < self.offset {
            ReturnCode::NextCol
        } else {
            ReturnCode::IncludeAndNextCol
        };
        self.count += 1;
        code
    }
}

/// InclusiveStopFilter: rows up to and including the stop row in scan
/// direction, then the scan ends.
#[derive(Debug)]
struct InclusiveStop {
    stop: Bytes,
    reversed: bool,
    done: bool,
}

impl CellFilter for InclusiveStop {
    fn filter_all_remaining(&mut self) -> bool {
        self.done
    }

    fn filter_row_key(&mut self, row: &[u8]) -> bool {
        let ordering = self.stop[..].cmp(row);
        self.done = if self.reversed {
            ordering == Ordering::Greater
        } else {
            ordering == Ordering::Less
        };
        self.done
    }

    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        if self.done {
            ReturnCode::NextRow
        } else {
            ReturnCode::Include
        }
    }
}

/// TimestampsFilter: only the listed versions.
#[derive(Debug)]
struct Timestamps {
    timestamps: BTreeSet<i64>,
    min: i64,
}

impl CellFilter for Timestamps {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if self.timestamps.contains(&cell.timestamp) {
            ReturnCode::Include
        } else if cell.timestamp < self.min {
            // Versions come newest first: every later one is older still.
            ReturnCode::NextCol
        } else {
            ReturnCode::Skip
        }
    }
}

/// RowFilter: decides from the row key, remembers it for the row's cells.
#[derive(Debug)]
struct RowCompare {
    op: CompareOp,
    comparator: Comparator,
    filter_out_row: bool,
}

impl CellFilter for RowCompare {
    fn reset(&mut self) {
        self.filter_out_row = false;
    }

    fn filter_row_key(&mut self, row: &[u8]) -> bool {
        if !self.comparator.cell_passes(self.op, row) {
            self.filter_out_row = true;
        }
        self.filter_out_row
    }

    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        if self.filter_out_row {
            ReturnCode::NextRow
        } else {
            ReturnCode::Include
        }
    }

    fn filter_row(&mut self) -> bool {
        self.filter_out_row
    }
}

/// FamilyFilter: a failing family is skipped as a whole.
#[derive(Debug)]
struct FamilyCompare {
    op: CompareOp,
    comparator: Comparator,
}

impl FamilyCompare {
    fn fails(&self, cell: &Cell) -> bool {
        // HBase lets cells without a family through untested.
        !cell.family.is_empty() && !self.comparator.cell_passes(self.op, &cell.family)
    }
}

impl CellFilter for FamilyCompare {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if self.fails(cell) {
            ReturnCode::SeekNextUsingHint
        } else {
            ReturnCode::Include
        }
    }

    fn next_cell_hint(&mut self, cell: &Cell) -> Option<Cell> {
        self.fails(cell).then(|| first_on_next_family(cell))
    }
}

/// QualifierFilter.
#[derive(Debug)]
struct QualifierCompare {
    op: CompareOp,
    comparator: Comparator,
}

impl CellFilter for QualifierCompare {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if self.comparator.cell_passes(self.op, &cell.qualifier) {
            ReturnCode::Include
        } else {
            ReturnCode::Skip
        }
    }
}

/// ValueFilter.
#[derive(Debug)]
struct ValueCompare {
    op: CompareOp,
    comparator: Comparator,
}

impl CellFilter for ValueCompare {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if self.comparator.cell_passes(self.op, &cell.value) {
            ReturnCode::Include
        } else {
            ReturnCode::Skip
        }
    }
}

// ---------------------------------------------------------------------------
// Qualifier selections: ColumnPrefix, MultipleColumnPrefix, ColumnRange
// ---------------------------------------------------------------------------

/// Which qualifiers a column-selecting filter keeps.
#[derive(Debug)]
enum ColumnSelection {
    /// Any of these prefixes (sorted, distinct; empty keeps everything).
    Prefixes(Vec<Bytes>),
    /// A qualifier range; `None` bounds are open.
    Range {
        min: Option<Bytes>,
        min_inclusive: bool,
        max: Option<Bytes>,
        max_inclusive: bool,
    },
}

/// What a selection says about one qualifier.
enum ColumnDecision {
    Include,
    NextCol,
    /// Nothing passes before this qualifier in the family.
    SeekTo(Bytes),
    /// Nothing else passes in the family.
    SkipFamily,
}

/// The evaluator shared by the qualifier-selecting filters. It holds no
/// per-row state: the hint is recomputed from whatever cell it is asked
/// about, which FilterList relies on.
#[derive(Debug)]
struct ColumnSelector {
    selection: ColumnSelection,
}

impl ColumnSelector {
    fn new(selection: ColumnSelection) -> Self {
        ColumnSelector { selection }
    }

    fn decide(&self, qualifier: &[u8]) -> ColumnDecision {
        match &self.selection {
            ColumnSelection::Prefixes(prefixes) => {
                if prefixes.is_empty() || prefixes.iter().any(|p| qualifier.starts_with(p)) {
                    return ColumnDecision::Include;
                }
                // A prefix at or below a qualifier that does not start with
                // it cannot match any later qualifier either, so the next
                // candidate is the first prefix above the qualifier.
                match prefixes.iter().find(|p| p[..] > *qualifier) {
                    Some(next) => ColumnDecision::SeekTo(next.clone()),
                    None => ColumnDecision::SkipFamily,
                }
            }
            ColumnSelection::Range {
                min,
                min_inclusive,
                max,
                max_inclusive,
            } => {
                if let Some(min) = min {
                    match qualifier.cmp(&min[..]) {
                        Ordering::Less => return ColumnDecision::SeekTo(min.clone()),
                        Ordering::Equal if !min_inclusive => return ColumnDecision::NextCol,
                        _ => {}
                    }
                }
                let Some(max) = max else {
                    return ColumnDecision::Include;
                };
                let below_max = match qualifier.cmp(&max[..]) {
                    Ordering::Less => true,
                    Ordering::Equal => *max_inclusive,
                    Ordering::Greater => false,
                };
                if below_max {
                    ColumnDecision::Include
                } else {
                    ColumnDecision::SkipFamily
                }
            }
        }
    }
}

impl CellFilter for ColumnSelector {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        match self.decide(&cell.qualifier) {
            ColumnDecision::Include => ReturnCode::Include,
            ColumnDecision::NextCol => ReturnCode::NextCol,
            ColumnDecision::SeekTo(_) | ColumnDecision::SkipFamily => ReturnCode::SeekNextUsingHint,
        }
    }

    fn next_cell_hint(&mut self, cell: &Cell) -> Option<Cell> {
        match self.decide(&cell.qualifier) {
            ColumnDecision::SeekTo(qualifier) => Some(first_on_column(cell, qualifier)),
            ColumnDecision::SkipFamily => Some(first_on_next_family(cell)),
            ColumnDecision::Include | ColumnDecision::NextCol => None,
        }
    }
}

// ---------------------------------------------------------------------------
// Column value filters
// ---------------------------------------------------------------------------

/// SingleColumnValueFilter and, with `exclude`, its Exclude variant.
#[derive(Debug)]
struct SingleColumnValueTest {
    family: Bytes,
    qualifier: Bytes,
    op: CompareOp,
    comparator: Comparator,
    filter_if_missing: bool,
    latest_version_only: bool,
    exclude: bool,
    found_column: bool,
    matched_column: bool,
}

impl SingleColumnValueTest {
    fn new(spec: &SingleColumnValue, exclude: bool) -> Self {
        SingleColumnValueTest {
            family: spec.family.clone(),
            qualifier: spec.qualifier.clone(),
            op: spec.op,
            comparator: spec.comparator.clone(),
            filter_if_missing: spec.filter_if_missing,
            latest_version_only: spec.latest_version_only,
            exclude,
            found_column: false,
            matched_column: false,
        }
    }
}

impl CellFilter for SingleColumnValueTest {
    fn reset(&mut self) {
        self.found_column = false;
        self.matched_column = false;
    }

    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if self.matched_column {
            return ReturnCode::Include;
        }
        if self.latest_version_only && self.found_column {
            // The newest version was tested and failed: the row is lost.
            return ReturnCode::NextRow;
        }
        if !is_column(cell, &self.family, &self.qualifier) {
            return ReturnCode::Include;
        }
        self.found_column = true;
        if !self.comparator.cell_passes(self.op, &cell.value) {
            return if self.latest_version_only {
                ReturnCode::NextRow
            } else {
                ReturnCode::Include
            };
        }
        self.matched_column = true;
        ReturnCode::Include
    }

    fn has_filter_row(&self) -> bool {
        true
    }

    fn filter_row_cells(&mut self, cells: &mut Vec<Cell>) {
        if self.exclude {
            cells.retain(|c| !is_column(c, &self.family, &self.qualifier));
        }
    }

    fn filter_row(&mut self) -> bool {
        if self.found_column {
            !self.matched_column
        } else {
            self.filter_if_missing
        }
    }
}

/// DependentColumnFilter: keeps cells whose timestamp one of the reference
/// column's (passing) cells has.
#[derive(Debug)]
struct DependentColumn {
    family: Bytes,
    qualifier: Bytes,
    drop_dependent_column: bool,
    value_test: Option<(CompareOp, Comparator)>,
    timestamps: HashSet<i64>,
}

impl CellFilter for DependentColumn {
    fn reset(&mut self) {
        self.timestamps.clear();
    }

    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if !is_column(cell, &self.family, &self.qualifier) {
            // Kept for now; filter_row_cells decides once all stamps are known.
            return ReturnCode::Include;
        }
        if let Some((op, comparator)) = &self.value_test {
            if !comparator.cell_passes(*op, &cell.value) {
                return ReturnCode::Skip;
            }
        }
        self.timestamps.insert(cell.timestamp);
        if self.drop_dependent_column {
            ReturnCode::Skip
        } else {
            ReturnCode::Include
        }
    }

    fn has_filter_row(&self) -> bool {
        true
    }

    fn filter_row_cells(&mut self, cells: &mut Vec<Cell>) {
        cells.retain(|c| self.timestamps.contains(&c.timestamp));
    }
}

/// ColumnValueFilter: only the named column's cells whose value passes.
#[derive(Debug)]
struct ColumnValue {
    family: Bytes,
    qualifier: Bytes,
    op: CompareOp,
    comparator: Comparator,
    column_found: bool,
}

impl CellFilter for ColumnValue {
    fn reset(&mut self) {
        self.column_found = false;
    }

    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if !is_column(cell, &self.family, &self.qualifier) {
            // Columns sort within a row, so after the wanted one nothing else
            // of the row can pass.
            return if self.column_found {
                ReturnCode::NextRow
            } else {
                ReturnCode::NextCol
            };
        }
        self.column_found = true;
        if self.comparator.cell_passes(self.op, &cell.value) {
            ReturnCode::Include
        } else {
            ReturnCode::Skip
        }
    }
}

// ---------------------------------------------------------------------------
// FilterList
// ---------------------------------------------------------------------------

/// MUST_PASS_ALL: each cell takes the largest step any member asks for
/// (HBase's FilterListWithAND).
#[derive(Debug)]
struct AllOf {
    members: Vec<Box<dyn CellFilter>>,
    reversed: bool,
    /// Members that answered SeekNextUsingHint for the last cell.
    seeking: Vec<usize>,
}

impl AllOf {
    fn new(members: Vec<Box<dyn CellFilter>>, reversed: bool) -> Self {
        AllOf {
            members,
            reversed,
            seeking: Vec::new(),
        }
    }
}

/// Merges the codes of two AND members: the larger skip wins, in the order
/// Include < Skip < IncludeAndNextCol < NextCol < IncludeAndSeekNextRow <
/// NextRow < SeekNextUsingHint, except that a skip and an include of the same
/// reach make the non-including variant.
fn merge_all(merged: ReturnCode, local: ReturnCode) -> ReturnCode {
    use ReturnCode::*;
    match (merged, local) {
        (SeekNextUsingHint, _) | (_, SeekNextUsingHint) => SeekNextUsingHint,
        (m, Include) => m,
        (Include | IncludeAndNextCol, IncludeAndNextCol) => IncludeAndNextCol,
        (IncludeAndSeekNextRow, IncludeAndNextCol) => IncludeAndSeekNextRow,
        (Skip | NextCol, IncludeAndNextCol) => NextCol,
        (NextRow, IncludeAndNextCol) => NextRow,
        (Include | IncludeAndNextCol | IncludeAndSeekNextRow, IncludeAndSeekNextRow) => {
            IncludeAndSeekNextRow
        }
        (Skip | NextCol | NextRow, IncludeAndSeekNextRow) => NextRow,
        (Include | Skip, Skip) => Skip,
        (IncludeAndNextCol | NextCol, Skip) => NextCol,
        (IncludeAndSeekNextRow | NextRow, Skip) => NextRow,
        (Include | IncludeAndNextCol | Skip | NextCol, NextCol) => NextCol,
        (IncludeAndSeekNextRow | NextRow, NextCol) => NextRow,
        (_, NextRow) => NextRow,
    }
}

impl CellFilter for AllOf {
    fn reset(&mut self) {
        for member in &mut self.members {
            member.reset();
        }
        self.seeking.clear();
    }

    fn filter_all_remaining(&mut self) -> bool {
        self.members.iter_mut().any(|m| m.filter_all_remaining())
    }

    fn filter_row_key(&mut self, row: &[u8]) -> bool {
        // Every member sees the key (no short cut): some record row state in
        // filter_row_key and would misjudge the row's cells otherwise.
        let mut drop = false;
        for member in &mut self.members {
            if member.filter_all_remaining() || member.filter_row_key(row) {
                drop = true;
            }
        }
        drop
    }

    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        self.seeking.clear();
        let mut merged = ReturnCode::Include;
        for (i, member) in self.members.iter_mut().enumerate() {
            if member.filter_all_remaining() {
                return ReturnCode::NextRow;
            }
            let local = member.filter_cell(cell);
            if local == ReturnCode::SeekNextUsingHint {
                self.seeking.push(i);
            }
            merged = merge_all(merged, local);
            // Later members only see cells that are still included, so
            // counting filters (pagination, page) are not advanced by cells
            // an earlier member already rejected.
            if !is_include(merged) {
                return merged;
            }
        }
        merged
    }

    fn transform_cell(&mut self, cell: Cell) -> Cell {
        self.members
            .iter_mut()
            .fold(cell, |cell, member| member.transform_cell(cell))
    }

    fn has_filter_row(&self) -> bool {
        self.members.iter().any(|m| m.has_filter_row())
    }

    fn filter_row_cells(&mut self, cells: &mut Vec<Cell>) {
        for member in &mut self.members {
            member.filter_row_cells(cells);
        }
    }

    fn filter_row(&mut self) -> bool {
        self.members.iter_mut().any(|m| m.filter_row())
    }

    fn next_cell_hint(&mut self, cell: &Cell) -> Option<Cell> {
        // The farthest hint: every seeking member rejects everything before
        // its own hint.
        let mut best: Option<Cell> = None;
        for &i in &self.seeking {
            let Some(member) = self.members.get_mut(i) else {
                continue;
            };
            if member.filter_all_remaining() {
                continue;
            }
            let Some(hint) = member.next_cell_hint(cell) else {
                continue;
            };
            best = match best {
                Some(b) if compare_in_scan_order(&b, &hint, self.reversed) != Ordering::Less => {
                    Some(b)
                }
                _ => Some(hint),
            };
        }
        best
    }
}

/// MUST_PASS_ONE: each cell takes the smallest step any member asks for
/// (HBase's FilterListWithOR).
#[derive(Debug)]
struct AnyOf {
    members: Vec<Box<dyn CellFilter>>,
    reversed: bool,
    /// Per member, its last code and the cell it answered, when that code
    /// lets later cells be answered without asking the member again.
    previous: Vec<Option<(ReturnCode, Cell)>>,
    /// Per member, whether it included the last cell (its transform applies).
    included: Vec<bool>,
}

impl AnyOf {
    fn new(members: Vec<Box<dyn CellFilter>>, reversed: bool) -> Self {
        let n = members.len();
        AnyOf {
            members,
            reversed,
            previous: vec![None; n],
            included: vec![false; n],
        }
    }
}

/// Merges the codes of two OR members: the smaller step wins; see
/// [`merge_all`] for the order.
fn merge_any(merged: Option<ReturnCode>, local: ReturnCode) -> ReturnCode {
    use ReturnCode::*;
    let Some(merged) = merged else {
        return local;
    };
    match (merged, local) {
        (_, Include) => Include,
        (Include | Skip | SeekNextUsingHint, IncludeAndNextCol) => Include,
        (IncludeAndNextCol | IncludeAndSeekNextRow | NextCol | NextRow, IncludeAndNextCol) => {
            IncludeAndNextCol
        }
        (Include | Skip | SeekNextUsingHint, IncludeAndSeekNextRow) => Include,
        (IncludeAndNextCol | NextCol, IncludeAndSeekNextRow) => IncludeAndNextCol,
        (IncludeAndSeekNextRow | NextRow, IncludeAndSeekNextRow) => IncludeAndSeekNextRow,
        (Include | IncludeAndNextCol | IncludeAndSeekNextRow, Skip) => Include,
        (Skip | NextCol | NextRow | SeekNextUsingHint, Skip) => Skip,
        (Include, NextCol) => Include,
        (NextCol | NextRow, NextCol) => NextCol,
        (IncludeAndNextCol | IncludeAndSeekNextRow, NextCol) => IncludeAndNextCol,
        (Skip | SeekNextUsingHint, NextCol) => Skip,
        (Include, NextRow) => Include,
        (IncludeAndNextCol, NextRow) => IncludeAndNextCol,
        (IncludeAndSeekNextRow, NextRow) => IncludeAndSeekNextRow,
        (Skip | SeekNextUsingHint, NextRow) => Skip,
        (NextCol, NextRow) => NextCol,
        (NextRow, NextRow) => NextRow,
        (Include | IncludeAndNextCol | IncludeAndSeekNextRow, SeekNextUsingHint) => Include,
        (Skip | NextCol | NextRow, SeekNextUsingHint) => Skip,
        (SeekNextUsingHint, SeekNextUsingHint) => SeekNextUsingHint,
    }
}

impl AnyOf {
    /// When the list moved on by less than a member asked for, the member
    /// sees cells it already ruled out. This answers them from the member's
    /// previous code without asking it again (asking would disturb counting
    /// filters); `None` means the member must be asked.
    fn answer_from_previous(
        member: &mut dyn CellFilter,
        previous: &Option<(ReturnCode, Cell)>,
        cell: &Cell,
        reversed: bool,
    ) -> Option<ReturnCode> {
        let (code, prev_cell) = previous.as_ref()?;
        match code {
            ReturnCode::Include | ReturnCode::Skip => None,
            ReturnCode::SeekNextUsingHint => {
                let hint = member.next_cell_hint(prev_cell)?;
                (compare_in_scan_order(cell, &hint, reversed) == Ordering::Less)
                    .then_some(ReturnCode::SeekNextUsingHint)
            }
            ReturnCode::NextCol | ReturnCode::IncludeAndNextCol => {
                cell.same_column(prev_cell).then_some(ReturnCode::NextCol)
            }
            // NextRow is honoured within the family only, as HBase does:
            // the member is asked again about the row's next family.
            ReturnCode::NextRow | ReturnCode::IncludeAndSeekNextRow => (cell.row == prev_cell.row
                && cell.family == prev_cell.family)
                .then_some(ReturnCode::NextRow),
        }
    }
}

impl CellFilter for AnyOf {
    fn reset(&mut self) {
        for member in &mut self.members {
            member.reset();
        }
        self.previous.iter_mut().for_each(|p| *p = None);
        self.included.iter_mut().for_each(|i| *i = false);
    }

    fn filter_all_remaining(&mut self) -> bool {
        !self.members.is_empty() && self.members.iter_mut().all(|m| m.filter_all_remaining())
    }

    fn filter_row_key(&mut self, row: &[u8]) -> bool {
        if self.members.is_empty() {
            return false;
        }
        // Every live member sees the key; see AllOf::filter_row_key.
        let mut drop = true;
        for member in &mut self.members {
            if !member.filter_all_remaining() && !member.filter_row_key(row) {
                drop = false;
            }
        }
        drop
    }

    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if self.members.is_empty() {
            return ReturnCode::Include;
        }
        let mut merged: Option<ReturnCode> = None;
        let reversed = self.reversed;
        for ((member, previous), included) in self
            .members
            .iter_mut()
            .zip(self.previous.iter_mut())
            .zip(self.included.iter_mut())
        {
            *included = false;
            if member.filter_all_remaining() {
                continue;
            }
            let local = match Self::answer_from_previous(member.as_mut(), previous, cell, reversed)
            {
                Some(code) => code,
                None => member.filter_cell(cell),
            };
            *previous = match local {
                ReturnCode::Include | ReturnCode::Skip => None,
                _ => Some((local, cell.clone())),
            };
            merged = Some(merge_any(merged, local));
            *included = is_include(local);
        }
        // Every member is done with the scan: nothing of this cell passes.
        merged.unwrap_or(ReturnCode::Skip)
    }

    fn transform_cell(&mut self, cell: Cell) -> Cell {
        let mut cell = cell;
        for (member, included) in self.members.iter_mut().zip(&self.included) {
            if *included {
                cell = member.transform_cell(cell);
            }
        }
        cell
    }

    fn has_filter_row(&self) -> bool {
        self.members.iter().any(|m| m.has_filter_row())
    }

    fn filter_row_cells(&mut self, cells: &mut Vec<Cell>) {
        for member in &mut self.members {
            member.filter_row_cells(cells);
        }
    }

    fn filter_row(&mut self) -> bool {
        !self.members.is_empty() && self.members.iter_mut().all(|m| m.filter_row())
    }

    fn next_cell_hint(&mut self, cell: &Cell) -> Option<Cell> {
        // The nearest hint, and none at all if a live member has none: any
        // member could accept what lies before the others' hints.
        let mut best: Option<Cell> = None;
        for member in &mut self.members {
            if member.filter_all_remaining() {
                continue;
            }
            let hint = member.next_cell_hint(cell)?;
            best = match best {
                Some(b) if compare_in_scan_order(&b, &hint, self.reversed) != Ordering::Greater => {
                    Some(b)
                }
                _ => Some(hint),
            };
        }
        best
    }
}

// ---------------------------------------------------------------------------
// Wrappers
// ---------------------------------------------------------------------------

/// SkipFilter: any cell the inner filter does not plainly include (HBase
/// counts every code but Include, so IncludeAndNextCol too) drops the row.
///
/// Unlike HBase, every other hook is forwarded to the inner filter: HBase's
/// SkipFilter never passes on the row key, which leaves a wrapped RowFilter
/// untested and a wrapped PrefixFilter rejecting every row.
#[derive(Debug)]
struct SkipRow {
    inner: Box<dyn CellFilter>,
    drop_row: bool,
}

impl CellFilter for SkipRow {
    fn reset(&mut self) {
        self.inner.reset();
        self.drop_row = false;
    }

    fn filter_all_remaining(&mut self) -> bool {
        self.inner.filter_all_remaining()
    }

    fn filter_row_key(&mut self, row: &[u8]) -> bool {
        self.inner.filter_row_key(row)
    }

    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        let code = self.inner.filter_cell(cell);
        if code != ReturnCode::Include {
            self.drop_row = true;
        }
        code
    }

    fn transform_cell(&mut self, cell: Cell) -> Cell {
        self.inner.transform_cell(cell)
    }

    fn has_filter_row(&self) -> bool {
        true
    }

    fn filter_row_cells(&mut self, cells: &mut Vec<Cell>) {
        self.inner.filter_row_cells(cells);
    }

    fn filter_row(&mut self) -> bool {
        let inner_drops = self.inner.filter_row();
        self.drop_row || inner_drops
    }

    fn next_cell_hint(&mut self, cell: &Cell) -> Option<Cell> {
        self.inner.next_cell_hint(cell)
    }
}

/// WhileMatchFilter: the first row key, cell (any code but Include, as in
/// HBase) or row the inner filter rejects ends the scan.
#[derive(Debug)]
struct WhileMatch {
    inner: Box<dyn CellFilter>,
    done: bool,
}

impl CellFilter for WhileMatch {
    fn reset(&mut self) {
        self.inner.reset();
    }

    fn filter_all_remaining(&mut self) -> bool {
        self.done || self.inner.filter_all_remaining()
    }

    fn filter_row_key(&mut self, row: &[u8]) -> bool {
        let drop = self.inner.filter_row_key(row);
        self.done |= drop;
        drop
    }

    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if self.done {
            // HBase's scanner checks filter_all_remaining before every cell
            // and stops in the middle of the row; the rest of the row is
            // dropped here so the result does not depend on the scanner
            // doing the same.
            return ReturnCode::NextRow;
        }
        let code = self.inner.filter_cell(cell);
        if code != ReturnCode::Include {
            self.done = true;
        }
        code
    }

    fn transform_cell(&mut self, cell: Cell) -> Cell {
        self.inner.transform_cell(cell)
    }

    fn has_filter_row(&self) -> bool {
        true
    }

    fn filter_row_cells(&mut self, cells: &mut Vec<Cell>) {
        self.inner.filter_row_cells(cells);
    }

    fn filter_row(&mut self) -> bool {
        let drop = self.inner.filter_row();
        self.done |= drop;
        drop
    }

    fn next_cell_hint(&mut self, cell: &Cell) -> Option<Cell> {
        self.inner.next_cell_hint(cell)
    }
}

// ---------------------------------------------------------------------------
// Fuzzy row keys
// ---------------------------------------------------------------------------

/// FuzzyRowFilter: keeps the rows whose key matches any pattern. The
/// decision is made once per row; a forward scan ends once no later row can
/// match any pattern.
#[derive(Debug)]
struct FuzzyRows {
    keys: Vec<FuzzyKey>,
    reversed: bool,
    /// The row decided last and whether it matched.
    decided: Option<(Bytes, bool)>,
    done: bool,
}

impl FuzzyRows {
    fn row_matches(&mut self, row: &Bytes) -> bool {
        if let Some((decided_row, matched)) = &self.decided {
            if decided_row == row {
                return *matched;
            }
        }
        let matched = self.keys.iter().any(|k| fuzzy_mismatch(row, k).is_none());
        if !matched && !self.reversed {
            // Forward: the scan may stop when no pattern can match a row
            // after this one.
            self.done = self.keys.iter().all(|k| !fuzzy_later_match_exists(row, k));
        }
        self.decided = Some((row.clone(), matched));
        matched
    }
}

impl CellFilter for FuzzyRows {
    fn filter_all_remaining(&mut self) -> bool {
        self.done
    }

    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if self.row_matches(&cell.row) {
            ReturnCode::Include
        } else {
            ReturnCode::NextRow
        }
    }
}

/// The first position where `row` breaks the pattern (a fixed byte that
/// differs), or `None` when it matches. Only positions both have count.
fn fuzzy_mismatch(row: &[u8], pattern: &FuzzyKey) -> Option<usize> {
    row.iter()
        .zip(pattern.key().iter())
        .zip(pattern.fixed())
        .position(|((r, k), &fixed)| fixed && r != k)
}

/// Whether some row sorting after `row` (which does not match) matches the
/// pattern. At the first broken position `p`: a row byte below the
/// pattern's leaves room (raise it to the pattern's byte); a byte above it
/// needs a free position before `p` whose byte can still grow.
fn fuzzy_later_match_exists(row: &[u8], pattern: &FuzzyKey) -> bool {
    let Some(p) = fuzzy_mismatch(row, pattern) else {
        return true;
    };
    if row[p] < pattern.key()[p] {
        return true;
    }
    (0..p).any(|i| !pattern.fixed()[i] && row[i] < u8::MAX)
}
