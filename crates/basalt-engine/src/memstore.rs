//! The memstore: a store's recent writes, in a concurrent sorted map.
//!
//! Writers insert without locking readers out (a lock-free skip list);
//! readers see only cells whose sequence id is at or below their MVCC read
//! point, which is what keeps row mutations atomic for them (see `mvcc.rs`).

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use bytes::Bytes;
use crossbeam_skiplist::SkipMap;

use basalt_types::{Cell, CellType, Result};

use crate::memory::{MemstoreBudget, Reservation};
use crate::source::{first_on_row, CellSource};
use crate::version_limit::ColumnVersionLimit;

/// The memstore's key: a cell's coordinates without the family, which is
/// the same for the whole store.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MemKey {
    row: Bytes,
    qualifier: Bytes,
    timestamp: i64,
    cell_type: CellType,
    sequence_id: u64,
}

impl MemKey {
    fn of(cell: &Cell) -> Self {
        MemKey {
            row: cell.row.clone(),
            qualifier: cell.qualifier.clone(),
            timestamp: cell.timestamp,
            cell_type: cell.cell_type,
            sequence_id: cell.sequence_id,
        }
    }
}

impl Ord for MemKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.row
            .cmp(&other.row)
            .then_with(|| self.qualifier.cmp(&other.qualifier))
            .then_with(|| other.timestamp.cmp(&self.timestamp))
            .then_with(|| other.cell_type.cmp(&self.cell_type))
            .then_with(|| other.sequence_id.cmp(&self.sequence_id))
    }
}

impl PartialOrd for MemKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// What a memstore keeps beside a cell's key.
#[derive(Debug, Clone)]
struct MemValue {
    value: Bytes,
    ttl_millis: Option<u64>,
}

/// One store's in-memory sorted cells.
#[derive(Debug)]
pub struct MemStore {
    family: Bytes,
    cells: SkipMap<MemKey, MemValue>,
    heap_size: AtomicUsize,
    /// The server's global memstore budget, when there is one, and the
    /// bytes of this memstore it counts: from insertion until the flush
    /// that wrote them commits (`release_budget`) or the memstore drops.
    budget: Option<Arc<MemstoreBudget>>,
    counted: AtomicUsize,
}

impl MemStore {
    /// An empty memstore for `family`.
    pub fn new(family: Bytes) -> Self {
        MemStore::with_budget(family, None)
    }

    /// An empty memstore for `family` whose bytes `budget` counts.
    pub fn with_budget(family: Bytes, budget: Option<Arc<MemstoreBudget>>) -> Self {
        MemStore {
            family,
            cells: SkipMap::new(),
            heap_size: AtomicUsize::new(0),
            budget,
            counted: AtomicUsize::new(0),
        }
    }

    /// Adds a cell (its sequence id must be set). The family is implied.
    /// The budget counts it at once, without waiting: this is for WAL
    /// replay; writes reserve first and use [`MemStore::insert_reserved`].
    pub fn insert(&self, cell: &Cell) {
        let size = cell.heap_size();
        if let Some(budget) = &self.budget {
            budget.charge(size);
            self.counted.fetch_add(size, AtomicOrdering::SeqCst);
        }
        self.add(cell, size);
    }

    /// Adds a cell whose bytes `reservation` holds: they move to this
    /// memstore, and the budget's total does not change.
    pub fn insert_reserved(&self, cell: &Cell, reservation: &mut Reservation) {
        let size = cell.heap_size();
        match &self.budget {
            Some(budget) if Arc::ptr_eq(budget, reservation.budget()) => {
                reservation.transfer(size);
                self.counted.fetch_add(size, AtomicOrdering::SeqCst);
            }
            Some(budget) => {
                // Not reserved in this memstore's budget (a caller bug):
                // count it anyway; the reservation returns its own bytes.
                budget.charge(size);
                self.counted.fetch_add(size, AtomicOrdering::SeqCst);
            }
            None => {}
        }
        self.add(cell, size);
    }

    fn add(&self, cell: &Cell, size: usize) {
        self.heap_size.fetch_add(size, AtomicOrdering::Relaxed);
        self.cells.insert(
            MemKey::of(cell),
            MemValue {
                value: cell.value.clone(),
                ttl_millis: cell.ttl_millis,
            },
        );
    }

    /// Returns this memstore's bytes to the budget: its flush committed, so
    /// the store files hold them (readers still holding the memstore keep
    /// reading it; it is no longer what writers wait for).
    pub fn release_budget(&self) {
        if let Some(budget) = &self.budget {
            budget.release(self.counted.swap(0, AtomicOrdering::SeqCst));
        }
    }

    /// Approximate bytes held, for flush decisions.
    pub fn heap_size(&self) -> usize {
        self.heap_size.load(AtomicOrdering::Relaxed)
    }

    /// Number of cells (all versions and markers).
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Appends the cells of `row` visible at `read_point` to `out`, in
    /// KeyValue order: the point-get path's read of a memstore, one search
    /// of the skip list and no buffering. The cells share `row` and the
    /// memstore's qualifier and value bytes (no copies).
    pub fn row_cells(&self, row: &Bytes, read_point: u64, out: &mut Vec<Cell>) {
        self.row_cells_limited(row, read_point, out, None);
    }

    /// [`MemStore::row_cells`], dropping what `limit` refuses (the point
    /// get's version limit, `version_limit.rs`).
    pub(crate) fn row_cells_limited(
        &self,
        row: &Bytes,
        read_point: u64,
        out: &mut Vec<Cell>,
        mut limit: Option<&mut ColumnVersionLimit>,
    ) {
        let start = MemKey {
            row: row.clone(),
            // Sorts before every key of the row (see `first_on_row`).
            qualifier: Bytes::new(),
            timestamp: i64::MAX,
            cell_type: CellType::DeleteFamily,
            sequence_id: u64::MAX,
        };
        for entry in self.cells.range(start..) {
            let key = entry.key();
            if key.row != *row {
                break;
            }
            if key.sequence_id > read_point {
                continue;
            }
            if let Some(limit) = limit.as_deref_mut() {
                if !limit.admits(&key.qualifier, key.cell_type) {
                    continue;
                }
            }
            {
                let cell = Cell {
                    row: row.clone(),
                    family: self.family.clone(),
                    qualifier: key.qualifier.clone(),
                    timestamp: key.timestamp,
                    cell_type: key.cell_type,
                    sequence_id: key.sequence_id,
                    value: entry.value().value.clone(),
                    ttl_millis: entry.value().ttl_millis,
                };
                if let Some(limit) = limit.as_deref_mut() {
                    limit.collected(&cell);
                }
                out.push(cell);
            }
        }
    }

    /// A source over the cells visible at `read_point`.
    pub fn source(self: &Arc<Self>, read_point: u64) -> MemStoreSource {
        MemStoreSource {
            store: Arc::clone(self),
            read_point,
            buffer: VecDeque::new(),
            resume_after: None,
            exhausted: true,
            chunk: FIRST_CHUNK,
        }
    }
}

impl Drop for MemStore {
    fn drop(&mut self) {
        // A region closed or dropped with data in memory: its bytes leave
        // the budget with it.
        self.release_budget();
    }
}

/// How many visible cells a source copies out of the skip list at a time:
/// one skip-list search per chunk instead of one per cell, without holding a
/// borrow of the map between calls. The first chunk after a seek is small
/// (point reads and the column skips of a scan want a few cells, and every
/// copied cell costs reference-count traffic), and each further chunk
/// doubles while the caller keeps reading on, up to the largest.
const FIRST_CHUNK: usize = 4;
const LARGEST_CHUNK: usize = 128;

/// A [`CellSource`] over a memstore at a fixed read point.
pub struct MemStoreSource {
    store: Arc<MemStore>,
    read_point: u64,
    buffer: VecDeque<Cell>,
    /// Where the next chunk starts (after this key); `None` before a seek.
    resume_after: Option<MemKey>,
    exhausted: bool,
    /// Cells the next chunk copies.
    chunk: usize,
}

impl std::fmt::Debug for MemStoreSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemStoreSource")
            .field("read_point", &self.read_point)
            .field("buffered", &self.buffer.len())
            .finish()
    }
}

impl MemStoreSource {
    fn fill(&mut self, from: Bound<MemKey>) {
        self.buffer.clear();
        let mut last = None;
        let mut done = true;
        for entry in self.store.cells.range((from, Bound::Unbounded)) {
            if self.buffer.len() >= self.chunk {
                done = false;
                break;
            }
            let key = entry.key();
            if key.sequence_id <= self.read_point {
                self.buffer.push_back(Cell {
                    row: key.row.clone(),
                    family: self.store.family.clone(),
                    qualifier: key.qualifier.clone(),
                    timestamp: key.timestamp,
                    cell_type: key.cell_type,
                    sequence_id: key.sequence_id,
                    value: entry.value().value.clone(),
                    ttl_millis: entry.value().ttl_millis,
                });
            }
            last = Some(entry);
        }
        self.exhausted = done;
        // Only the last key is kept (cloning each one would cost the
        // reference counting the small chunks save).
        self.resume_after = last.map(|e| e.key().clone());
        self.chunk = (self.chunk * 2).min(LARGEST_CHUNK);
    }

    fn refill_if_empty(&mut self) {
        while self.buffer.is_empty() && !self.exhausted {
            match self.resume_after.take() {
                Some(after) => self.fill(Bound::Excluded(after)),
                None => self.exhausted = true,
            }
        }
    }

    fn seek_key(&mut self, key: MemKey) {
        self.chunk = FIRST_CHUNK;
        self.fill(Bound::Included(key));
        self.refill_if_empty();
    }
}

impl CellSource for MemStoreSource {
    fn peek(&self) -> Option<&Cell> {
        self.buffer.front()
    }

    fn advance(&mut self) -> Result<()> {
        self.buffer.pop_front();
        self.refill_if_empty();
        Ok(())
    }

    fn seek(&mut self, key: &Cell) -> Result<()> {
        self.seek_key(MemKey::of(key));
        Ok(())
    }

    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        let visible = |e: &crossbeam_skiplist::map::Entry<'_, MemKey, MemValue>| {
            e.key().sequence_id <= self.read_point
        };
        let previous_row = match row {
            Some(row) => self
                .store
                .cells
                .range(..MemKey::of(&first_on_row(row)))
                .rev()
                .find(visible),
            None => self.store.cells.iter().rev().find(visible),
        }
        .map(|e| e.key().row.clone());
        match previous_row {
            Some(r) => self.seek_key(MemKey::of(&first_on_row(&r))),
            None => {
                self.buffer.clear();
                self.resume_after = None;
                self.exhausted = true;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(row: &str, q: &str, ts: i64, seq: u64) -> Cell {
        let mut c = Cell::put(
            row.to_string(),
            "f",
            q.to_string(),
            ts,
            format!("{row}{q}{ts}"),
        );
        c.sequence_id = seq;
        c
    }

    fn rows_of(s: &mut MemStoreSource) -> Vec<String> {
        let mut out = vec![];
        while let Some(c) = s.peek() {
            out.push(format!(
                "{}/{}/{}",
                String::from_utf8_lossy(&c.row),
                String::from_utf8_lossy(&c.qualifier),
                c.timestamp
            ));
            s.advance().unwrap();
        }
        out
    }

    #[test]
    fn read_point_hides_later_writes() {
        let m = Arc::new(MemStore::new(Bytes::from_static(b"f")));
        m.insert(&cell("a", "q", 1, 1));
        m.insert(&cell("b", "q", 1, 2));
        let mut s = m.source(1);
        s.seek(&first_on_row(b"")).unwrap();
        assert_eq!(rows_of(&mut s), vec!["a/q/1"]);
    }

    #[test]
    fn iterates_across_many_chunks() {
        let m = Arc::new(MemStore::new(Bytes::from_static(b"f")));
        for i in 0..1000u64 {
            m.insert(&cell(&format!("r{i:04}"), "q", 1, i + 1));
        }
        // Every other write invisible: chunks must skip them without stopping early.
        let mut s = m.source(1000);
        s.seek(&first_on_row(b"r0500")).unwrap();
        assert_eq!(rows_of(&mut s).len(), 500);
    }

    #[test]
    fn seek_before_row_skips_invisible_rows() {
        let m = Arc::new(MemStore::new(Bytes::from_static(b"f")));
        m.insert(&cell("a", "q", 1, 1));
        m.insert(&cell("b", "q", 1, 5)); // not visible at read point 2
        m.insert(&cell("c", "q", 1, 2));
        let mut s = m.source(2);
        s.seek_before_row(Some(b"c")).unwrap();
        assert_eq!(&s.peek().unwrap().row[..], b"a");
        s.seek_before_row(Some(b"a")).unwrap();
        assert!(s.peek().is_none());
    }

    #[test]
    fn versions_come_newest_first() {
        let m = Arc::new(MemStore::new(Bytes::from_static(b"f")));
        m.insert(&cell("a", "q", 1, 1));
        m.insert(&cell("a", "q", 3, 2));
        m.insert(&cell("a", "q", 2, 3));
        let mut s = m.source(10);
        s.seek(&first_on_row(b"a")).unwrap();
        assert_eq!(rows_of(&mut s), vec!["a/q/3", "a/q/2", "a/q/1"]);
    }
}
