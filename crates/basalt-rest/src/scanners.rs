//! What a REST scanner carries between answers: its table, its batch, and
//! the cells of a row an answer stopped inside.
//!
//! HBase REST hands a scanner out as a URL (`/<table>/scanner/<id>`) that
//! any connection may read, so scanners belong to the server, not to a
//! connection: they live in the gateways' one table
//! (`basalt::gateways::scanners`) with no owner, under 128-bit random ids,
//! and expire after the lease when nobody reads or deletes them. An answer
//! holds at most `batch` cells, which may end inside a row: the rest of
//! that row waits in the scanner for the next answer.

use std::collections::VecDeque;

use basalt::gateways::scanners::ScannerTable;
use basalt::{Cell, Scanner};

use crate::model::{CellModel, RowModel};

/// The open scanners of the REST server, by their URL ids.
pub(crate) type Scanners = ScannerTable<String, ScanState>;

/// What one scanner has still to give.
pub(crate) struct ScanState {
    /// The table it reads (a URL naming another table does not find it).
    pub table: String,
    /// Most cells in one answer.
    pub batch: usize,
    /// The engine's scanner; `None` once it has run out of rows.
    scanner: Option<Scanner>,
    /// Cells of a row an earlier answer stopped inside.
    pending: VecDeque<Cell>,
    /// The Kerberos-authenticated user who opened it, if any: only that
    /// user may read or delete it (its id alone is not enough).
    owner: Option<String>,
}

impl std::fmt::Debug for ScanState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanState")
            .field("table", &self.table)
            .field("batch", &self.batch)
            .field("exhausted", &self.scanner.is_none())
            .field("pending", &self.pending.len())
            .finish()
    }
}

impl ScanState {
    /// A scanner of `table` over `scanner`, answering at most `batch` cells
    /// at a time (at least one), opened by `owner` (the authenticated
    /// user; `None` without Kerberos).
    pub fn new(table: &str, scanner: Scanner, batch: usize, owner: Option<String>) -> ScanState {
        ScanState {
            table: table.to_string(),
            batch: batch.max(1),
            scanner: Some(scanner),
            pending: VecDeque::new(),
            owner,
        }
    }

    /// Whether `user` (the request's authenticated user) may use it.
    pub fn opened_by(&self, user: Option<&str>) -> bool {
        self.owner.is_none() || self.owner.as_deref() == user
    }

    /// The next answer: at most `max_cells` cells, in at most `max_rows`
    /// rows when given, stopping once about `max_bytes` of cells are in it
    /// or once the process's answer budget is full (its cells are counted
    /// in the call's answer room as they are added). Empty when the scan
    /// is over. A call stopped by its time budget answers what it has, or
    /// fails with nothing; the scanner stays where it stopped.
    pub fn fetch(
        &mut self,
        max_cells: usize,
        max_rows: Option<usize>,
        max_bytes: usize,
    ) -> basalt::Result<Vec<RowModel>> {
        let budget = basalt::guard::answer_budget();
        let mut rows: Vec<RowModel> = Vec::new();
        let mut cells = 0;
        let mut bytes = 0usize;
        while cells < max_cells && bytes < max_bytes {
            if cells > 0 && budget.in_use() >= budget.total() {
                break;
            }
            let Some(cell) = self.pending.front() else {
                let Some(scanner) = self.scanner.as_mut() else {
                    break;
                };
                match scanner.next() {
                    Some(Ok(row)) => self.pending.extend(row.cells),
                    Some(Err(e)) if e.kind() == basalt::ErrorKind::TimedOut && cells > 0 => break,
                    Some(Err(e)) => return Err(e),
                    None => self.scanner = None,
                }
                continue;
            };
            let same_row = rows
                .last()
                .is_some_and(|r| r.key.as_deref() == Some(&cell.row[..]));
            if !same_row {
                if max_rows.is_some_and(|n| rows.len() >= n) {
                    break;
                }
                rows.push(RowModel {
                    key: Some(cell.row.clone()),
                    cells: Vec::new(),
                });
            }
            let Some(cell) = self.pending.pop_front() else {
                break;
            };
            let size = cell_bytes(&cell);
            bytes += size;
            basalt::guard::count_answer(basalt::guard::answer_estimate(size, 1));
            if let Some(row) = rows.last_mut() {
                row.cells.push(cell_model(&cell));
            }
            cells += 1;
        }
        Ok(rows)
    }

    /// The next single cell, for a binary read.
    pub fn next_cell(&mut self) -> basalt::Result<Option<Cell>> {
        loop {
            if let Some(cell) = self.pending.pop_front() {
                return Ok(Some(cell));
            }
            let Some(scanner) = self.scanner.as_mut() else {
                return Ok(None);
            };
            match scanner.next() {
                Some(row) => self.pending.extend(row?.cells),
                None => self.scanner = None,
            }
        }
    }
}

/// The bytes of a cell an answer carries (keys and value, and a little for
/// the rest).
pub(crate) fn cell_bytes(cell: &Cell) -> usize {
    cell.row.len() + cell.family.len() + cell.qualifier.len() + cell.value.len() + 16
}

/// A cell as the models write it: `family:qualifier`, timestamp, value.
pub(crate) fn cell_model(cell: &Cell) -> CellModel {
    let mut column = Vec::with_capacity(cell.family.len() + 1 + cell.qualifier.len());
    column.extend_from_slice(&cell.family);
    column.push(b':');
    column.extend_from_slice(&cell.qualifier);
    CellModel {
        column: Some(column.into()),
        timestamp: Some(cell.timestamp),
        value: cell.value.clone(),
    }
}
