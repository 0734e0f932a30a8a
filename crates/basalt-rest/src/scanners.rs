//! The REST gateway's open scanners: ids in URLs, cells carried over
//! between answers, leases.
//!
//! HBase REST hands a scanner out as a URL (`/<table>/scanner/<id>`) that
//! any connection may read, so scanners belong to the server, not to a
//! connection. An answer holds at most `batch` cells, which may end inside
//! a row: the rest of that row waits in the scanner for the next answer.
//! Scanners nobody reads or deletes expire after the lease.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use basalt::{Cell, Scanner};

use crate::model::{CellModel, RowModel};

/// What one scanner has still to give.
pub(crate) struct ScanState {
    /// The engine's scanner; `None` once it has run out of rows.
    scanner: Option<Scanner>,
    /// Cells of a row an earlier answer stopped inside.
    pending: VecDeque<Cell>,
}

impl std::fmt::Debug for ScanState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanState")
            .field("exhausted", &self.scanner.is_none())
            .field("pending", &self.pending.len())
            .finish()
    }
}

impl ScanState {
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

/// One open scanner.
#[derive(Debug)]
pub(crate) struct OpenScanner {
    /// The table it reads (a URL naming another table does not find it).
    pub table: String,
    /// Most cells in one answer.
    pub batch: usize,
    /// Held locked for one answer, which also keeps the sweeper away from
    /// a scanner in use.
    pub state: Mutex<ScanState>,
    last_used: Mutex<Instant>,
}

/// Every open scanner of a server.
#[derive(Debug)]
pub(crate) struct Scanners {
    lease: Duration,
    /// Most scanners open at once: each holds engine state, and nothing
    /// ties a scanner to a connection that could release it.
    max: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    open: HashMap<String, Arc<OpenScanner>>,
}

impl Scanners {
    pub fn new(lease: Duration, max: usize) -> Scanners {
        Scanners {
            lease,
            max,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Registers a scanner; `Err(max)` when the server holds `max` already.
    pub fn open(&self, table: &str, scanner: Scanner, batch: usize) -> Result<String, usize> {
        let mut inner = self.inner.lock();
        if inner.open.len() >= self.max {
            return Err(self.max);
        }
        // A REST scanner is a URL that any connection may use (HBase's
        // design), so the id is its only secret: 128 random bits, which
        // nobody guesses and a restarted server does not hand out again.
        let mut id = basalt::guard::random_scanner_token();
        while inner.open.contains_key(&id) {
            id = basalt::guard::random_scanner_token();
        }
        inner.open.insert(
            id.clone(),
            Arc::new(OpenScanner {
                table: table.to_string(),
                batch: batch.max(1),
                state: Mutex::new(ScanState {
                    scanner: Some(scanner),
                    pending: VecDeque::new(),
                }),
                last_used: Mutex::new(Instant::now()),
            }),
        );
        Ok(id)
    }

    /// The scanner with this id, its lease renewed.
    pub fn get(&self, id: &str) -> Option<Arc<OpenScanner>> {
        let scanner = self.inner.lock().open.get(id).cloned()?;
        *scanner.last_used.lock() = Instant::now();
        Some(scanner)
    }

    /// Closes a scanner; false when there was none with this id.
    pub fn remove(&self, id: &str) -> bool {
        self.inner.lock().open.remove(id).is_some()
    }

    /// Closes the scanners unused for longer than the lease; how many.
    pub fn expire(&self, now: Instant) -> usize {
        let mut inner = self.inner.lock();
        let before = inner.open.len();
        inner.open.retain(|_, s| {
            // A scanner being read holds its state lock: it is in use.
            let Some(_in_use) = s.state.try_lock() else {
                return true;
            };
            now.saturating_duration_since(*s.last_used.lock()) < self.lease
        });
        before - inner.open.len()
    }

    pub fn len(&self) -> usize {
        self.inner.lock().open.len()
    }

    pub fn clear(&self) {
        self.inner.lock().open.clear();
    }
}
