//! The point-get path: one row read without the scanner machinery.
//!
//! A scan positions a merged source per family over every part of the
//! store (a source per memstore and store file, a seek of each, a merge
//! that picks the smallest head per cell) and, once a row is read, seeks
//! every source past it. A get names its row, so none of that is needed:
//! each store hands over the row's cells directly ([`Store::row_cells`]:
//! one skip-list search per memstore; per store file its bloom filter, its
//! index, one cached block and a binary search over the block's restart
//! points, with cells that are views of the block), and they go through
//! the very code scans use for the rules: [`RowRules`] per family (delete
//! markers, versions, TTL, MIN_VERSIONS, KEEP_DELETED_CELLS, time range,
//! column selection) and [`read_row`] for the read's filter and max
//! versions. Only how the cells are found differs, so the answers cannot.
//!
//! Every get takes this path: a get is never raw, never reversed and has
//! no batch, the only read shapes this path leaves to the scanner.
//!
//! [`Store::row_cells`]: crate::store::Store::row_cells

use bytes::Bytes;

use basalt_types::filter::CellFilter;
use basalt_types::{Cell, Result};

use crate::scan::{read_row, FamilyCandidates, RowRules, RowShape, ScanMetrics, Verdict};

/// One family's cells of the row, with the family's rules.
#[derive(Debug)]
pub(crate) struct FamilyRow {
    /// The row's visible cells in KeyValue order, not yet judged.
    cells: std::vec::IntoIter<Cell>,
    rules: RowRules,
}

impl FamilyRow {
    /// `cells`: the row's cells in this family visible to the read, in
    /// KeyValue order (see `Store::row_cells`).
    pub(crate) fn new(cells: Vec<Cell>, rules: RowRules) -> Self {
        FamilyRow {
            cells: cells.into_iter(),
            rules,
        }
    }
}

impl FamilyCandidates for FamilyRow {
    fn holds_row(&self, _row: &Bytes) -> bool {
        // Every cell is of the row: the store collected only those.
        !self.cells.as_slice().is_empty()
    }

    fn next_candidate(&mut self, _row: &Bytes) -> Result<Option<Cell>> {
        for cell in self.cells.by_ref() {
            match self.rules.judge(&cell) {
                Verdict::Candidate => return Ok(Some(cell)),
                Verdict::Skip => {}
                Verdict::EndColumn => {
                    self.rules.end_column(&cell);
                }
            }
        }
        Ok(None)
    }

    fn skip_column(&mut self, cell: &Cell) -> Result<()> {
        // The column's remaining cells are still judged (a few at most for
        // one row), and none of them can be a candidate once it has ended;
        // a scanner steps over them instead, which changes nothing else:
        // markers of an ended column only matter to that column.
        self.rules.end_column(cell);
        Ok(())
    }

    fn counts_versions_before_filter(&self) -> bool {
        self.rules.new_version_behavior()
    }
}

/// Reads `row` from its families' cells (in family order) through the
/// read's filter and max versions, as a [`crate::scan::RegionScanner`]
/// limited to that one row would: the filter may end the read before the
/// row (`filter_all_remaining`), a row no family holds is not looked at,
/// and the rest is [`read_row`]. Returns the cells (`None`: nothing of the
/// row is returned) and the work done, for the region's load counters.
pub(crate) fn read_one_row(
    families: &mut [FamilyRow],
    row: &Bytes,
    mut filter: Option<Box<dyn CellFilter>>,
    max_versions: u32,
) -> Result<(Option<Vec<Cell>>, ScanMetrics)> {
    let mut metrics = ScanMetrics::default();
    if filter.as_mut().is_some_and(|f| f.filter_all_remaining()) {
        return Ok((None, metrics));
    }
    if !families.iter().any(|f| f.holds_row(row)) {
        return Ok((None, metrics));
    }
    metrics.rows_scanned += 1;
    let shape = RowShape {
        max_versions: max_versions.max(1),
        raw: false,
        batch: None,
    };
    let cells = read_row(families, row, filter.as_deref_mut(), shape, &mut metrics)?;
    if cells.is_some() {
        metrics.rows_returned += 1;
    }
    Ok((cells, metrics))
}
