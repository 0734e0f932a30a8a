//! The memstore: a store's recent writes, in a concurrent sorted map.
//!
//! Writers insert without locking readers out (a lock-free skip list);
//! readers see only cells whose sequence id is at or below their MVCC read
//! point, which is what keeps row mutations atomic for them (see `mvcc.rs`).
//!
//! Memory. A cell is one skip-list node holding a [`MemKey`] (80 bytes) and
//! its bytes (row, qualifier and value) copied into the memstore's arena:
//! chunks of [`ARENA_CHUNK_BYTES`] shared by many cells (HBase's MSLAB). A
//! cell kept as the write brought it costs far more: three separately
//! allocated buffers (each rounded up to an allocator size class), a
//! shared header per buffer once cloned, and, for cells decoded from a
//! request, the request's whole buffer kept alive by a slice of it.
//! Measured on YCSB's cells (about 130 bytes of data), the arena and the
//! compact key take a cell from about 400 bytes resident to about 230.
//! A reader's cells share the arena's chunks, so a chunk lives until the
//! last cell read from it is dropped, as long as the memstore at most for
//! the gateways, which write their answers out and drop them.
//!
//! Accounting. The memstore counts each cell at [`entry_size`]: its bytes
//! and the node's fixed cost, which is what it really holds (HBase adds
//! its skip list's entry overhead to each cell's size likewise). The
//! global budget and the flush size therefore bound resident memory, not
//! an estimate of half of it.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use crossbeam_skiplist::SkipMap;
use parking_lot::Mutex;

use basalt_types::{Cell, CellType, Result};

use crate::memory::{MemstoreBudget, Reservation};
use crate::source::CellSource;
use crate::version_limit::ColumnVersionLimit;

/// Size of an arena chunk. Big enough that a chunk serves thousands of
/// typical cells; small enough that the one partly filled chunk each
/// memstore holds, and a chunk kept by a reader's cells, cost little.
pub const ARENA_CHUNK_BYTES: usize = 512 * 1024;

/// Cells with more bytes than this get an allocation of their own rather
/// than a chunk's space (a few of them would waste most of a chunk).
const ARENA_LARGEST_COPY: usize = 64 * 1024;

/// A skip-list node's cost beside its key: the reference count and height
/// word, and the tower of next pointers, two on average (a node's height
/// is 1 + the number of trailing zeros of a random number).
const SKIP_LIST_NODE_OVERHEAD: usize = 8 + 2 * 8;

/// What a memstore holds for one cell beside its row, qualifier and value.
pub const ENTRY_OVERHEAD: usize = std::mem::size_of::<MemKey>() + SKIP_LIST_NODE_OVERHEAD;

/// The bytes a memstore counts for `cell`: its row, qualifier and value
/// (the family is the store's) and the fixed cost of its entry. Writers
/// reserve this much in the global budget before inserting.
pub fn entry_size(cell: &Cell) -> usize {
    cell.row.len() + cell.qualifier.len() + cell.value.len() + ENTRY_OVERHEAD
}

/// The memstore's entry: a cell's coordinates without the family, which is
/// the same for the whole store, with its row, qualifier and value in one
/// slice of the arena.
#[derive(Debug, Clone)]
struct MemKey {
    /// Row, qualifier and value, in that order.
    data: Bytes,
    row_len: usize,
    /// Where the value starts in `data` (the qualifier ends there).
    value_start: usize,
    timestamp: i64,
    sequence_id: u64,
    /// The cell's TTL when `has_ttl` (an `Option<u64>` would cost 8 bytes
    /// more in every entry).
    ttl_millis: u64,
    cell_type: CellType,
    has_ttl: bool,
}

impl MemKey {
    /// The cell, sharing the arena's bytes (`row` when the caller has the
    /// row's bytes already).
    fn cell(&self, family: &Bytes, row: Option<&Bytes>) -> Cell {
        Cell {
            row: row
                .cloned()
                .unwrap_or_else(|| self.data.slice(..self.row_len)),
            family: family.clone(),
            qualifier: self.data.slice(self.row_len..self.value_start),
            timestamp: self.timestamp,
            cell_type: self.cell_type,
            sequence_id: self.sequence_id,
            value: self.data.slice(self.value_start..),
            ttl_millis: self.has_ttl.then_some(self.ttl_millis),
        }
    }
}

/// A key's coordinates, borrowed: how the skip list is searched with a
/// cell's coordinates without copying them into an arena first.
trait KeyParts {
    fn row(&self) -> &[u8];
    fn qualifier(&self) -> &[u8];
    fn timestamp(&self) -> i64;
    fn cell_type(&self) -> CellType;
    fn sequence_id(&self) -> u64;
}

impl KeyParts for MemKey {
    fn row(&self) -> &[u8] {
        &self.data[..self.row_len]
    }
    fn qualifier(&self) -> &[u8] {
        &self.data[self.row_len..self.value_start]
    }
    fn timestamp(&self) -> i64 {
        self.timestamp
    }
    fn cell_type(&self) -> CellType {
        self.cell_type
    }
    fn sequence_id(&self) -> u64 {
        self.sequence_id
    }
}

/// A search key: a cell's coordinates.
struct Probe<'a> {
    row: &'a [u8],
    qualifier: &'a [u8],
    timestamp: i64,
    cell_type: CellType,
    sequence_id: u64,
}

impl<'a> Probe<'a> {
    fn of(cell: &'a Cell) -> Self {
        Probe {
            row: &cell.row,
            qualifier: &cell.qualifier,
            timestamp: cell.timestamp,
            cell_type: cell.cell_type,
            sequence_id: cell.sequence_id,
        }
    }

    /// Sorts before every key of `row` (see `first_on_row`).
    fn first_on_row(row: &'a [u8]) -> Self {
        Probe {
            row,
            qualifier: &[],
            timestamp: i64::MAX,
            cell_type: CellType::DeleteFamily,
            sequence_id: u64::MAX,
        }
    }
}

impl KeyParts for Probe<'_> {
    fn row(&self) -> &[u8] {
        self.row
    }
    fn qualifier(&self) -> &[u8] {
        self.qualifier
    }
    fn timestamp(&self) -> i64 {
        self.timestamp
    }
    fn cell_type(&self) -> CellType {
        self.cell_type
    }
    fn sequence_id(&self) -> u64 {
        self.sequence_id
    }
}

/// KeyValue order without the family: row, qualifier, then timestamp,
/// type and sequence id descending.
fn compare_keys(a: &dyn KeyParts, b: &dyn KeyParts) -> Ordering {
    a.row()
        .cmp(b.row())
        .then_with(|| a.qualifier().cmp(b.qualifier()))
        .then_with(|| b.timestamp().cmp(&a.timestamp()))
        .then_with(|| b.cell_type().cmp(&a.cell_type()))
        .then_with(|| b.sequence_id().cmp(&a.sequence_id()))
}

impl<'a> Borrow<dyn KeyParts + 'a> for MemKey {
    fn borrow(&self) -> &(dyn KeyParts + 'a) {
        self
    }
}

impl Ord for dyn KeyParts + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_keys(self, other)
    }
}

impl PartialOrd for dyn KeyParts + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for dyn KeyParts + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for dyn KeyParts + '_ {}

// The map's order is the borrowed form's (`Borrow` requires it).
impl Ord for MemKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_keys(self, other)
    }
}

impl PartialOrd for MemKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for MemKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for MemKey {}

/// Where a memstore's cells keep their bytes: chunks that many cells
/// share (see the module docs).
#[derive(Debug, Default)]
struct Arena {
    /// The unused rest of the current chunk (empty before the first cell).
    free: Mutex<BytesMut>,
}

impl Arena {
    /// `parts` copied one after another into one slice.
    fn copy(&self, parts: [&[u8]; 3]) -> Bytes {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > ARENA_LARGEST_COPY {
            let mut own = BytesMut::with_capacity(len);
            parts.iter().for_each(|p| own.extend_from_slice(p));
            return own.freeze();
        }
        let mut free = self.free.lock();
        if free.capacity() < len {
            *free = BytesMut::with_capacity(ARENA_CHUNK_BYTES);
        }
        // Within capacity: no reallocation, the chunk is not moved.
        parts.iter().for_each(|p| free.extend_from_slice(p));
        free.split_to(len).freeze()
    }
}

/// One store's in-memory sorted cells.
#[derive(Debug)]
pub struct MemStore {
    family: Bytes,
    cells: SkipMap<MemKey, ()>,
    arena: Arena,
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
            arena: Arena::default(),
            heap_size: AtomicUsize::new(0),
            budget,
            counted: AtomicUsize::new(0),
        }
    }

    /// Adds a cell (its sequence id must be set). The family is implied.
    /// The budget counts it at once, without waiting: this is for WAL
    /// replay; writes reserve first and use [`MemStore::insert_reserved`].
    pub fn insert(&self, cell: &Cell) {
        let size = entry_size(cell);
        if let Some(budget) = &self.budget {
            budget.charge(size);
            self.counted.fetch_add(size, AtomicOrdering::SeqCst);
        }
        self.add(cell, size);
    }

    /// Adds a cell whose bytes (its [`entry_size`]) `reservation` holds:
    /// they move to this memstore, and the budget's total does not change.
    pub fn insert_reserved(&self, cell: &Cell, reservation: &mut Reservation) {
        let size = entry_size(cell);
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
        let data = self.arena.copy([&cell.row, &cell.qualifier, &cell.value]);
        self.cells.insert(
            MemKey {
                data,
                row_len: cell.row.len(),
                value_start: cell.row.len() + cell.qualifier.len(),
                timestamp: cell.timestamp,
                sequence_id: cell.sequence_id,
                ttl_millis: cell.ttl_millis.unwrap_or(0),
                cell_type: cell.cell_type,
                has_ttl: cell.ttl_millis.is_some(),
            },
            (),
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

    /// Bytes held ([`entry_size`] of every cell), for flush decisions.
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
        let start = Probe::first_on_row(row);
        let from: &dyn KeyParts = &start;
        for entry in self
            .cells
            .range::<dyn KeyParts, _>((Bound::Included(from), Bound::Unbounded))
        {
            let key = entry.key();
            if key.row() != &row[..] {
                break;
            }
            if key.sequence_id > read_point {
                continue;
            }
            if let Some(limit) = limit.as_deref_mut() {
                if !limit.admits(key.qualifier(), key.cell_type) {
                    continue;
                }
            }
            let cell = key.cell(&self.family, Some(row));
            if let Some(limit) = limit.as_deref_mut() {
                limit.collected(&cell);
            }
            out.push(cell);
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
    fn fill(&mut self, from: Bound<&dyn KeyParts>) {
        self.buffer.clear();
        let mut last = None;
        let mut done = true;
        for entry in self
            .store
            .cells
            .range::<dyn KeyParts, _>((from, Bound::Unbounded))
        {
            if self.buffer.len() >= self.chunk {
                done = false;
                break;
            }
            let key = entry.key();
            if key.sequence_id <= self.read_point {
                self.buffer.push_back(key.cell(&self.store.family, None));
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
                Some(after) => self.fill(Bound::Excluded(&after)),
                None => self.exhausted = true,
            }
        }
    }

    fn seek_key(&mut self, key: &dyn KeyParts) {
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
        self.seek_key(&Probe::of(key));
        Ok(())
    }

    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        let visible = |e: &crossbeam_skiplist::map::Entry<'_, MemKey, ()>| {
            e.key().sequence_id <= self.read_point
        };
        let previous_row = match row {
            Some(row) => {
                let before = Probe::first_on_row(row);
                let before: &dyn KeyParts = &before;
                let found = self
                    .store
                    .cells
                    .range::<dyn KeyParts, _>((Bound::Unbounded, Bound::Excluded(before)))
                    .rev()
                    .find(visible)
                    .map(|e| e.key().clone());
                found
            }
            None => self
                .store
                .cells
                .iter()
                .rev()
                .find(visible)
                .map(|e| e.key().clone()),
        };
        match previous_row {
            Some(key) => self.seek_key(&Probe::first_on_row(key.row())),
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
    use crate::source::first_on_row;

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

    fn all_cells(m: &Arc<MemStore>) -> Vec<Cell> {
        let mut s = m.source(u64::MAX);
        s.seek(&first_on_row(b"")).unwrap();
        let mut out = vec![];
        while let Some(c) = s.peek() {
            out.push(c.clone());
            s.advance().unwrap();
        }
        out
    }

    #[test]
    fn cells_come_back_whole_from_the_arena_small_large_with_and_without_ttl() {
        let m = Arc::new(MemStore::new(Bytes::from_static(b"f")));
        let mut small = cell("a", "q", 1, 1);
        small.ttl_millis = Some(0);
        let mut large = cell("b", "q", 1, 2);
        large.value = Bytes::from(vec![7u8; ARENA_LARGEST_COPY + 1]);
        large.ttl_millis = Some(5_000);
        let mut empty = cell("c", "", 1, 3);
        empty.value = Bytes::new();
        // Enough cells to fill several chunks.
        let many: Vec<Cell> = (0..2 * ARENA_CHUNK_BYTES / 1000)
            .map(|i| {
                let mut c = cell(&format!("d{i:05}"), "q", 1, 4 + i as u64);
                c.value = Bytes::from(vec![i as u8; 1000]);
                c
            })
            .collect();
        let mut expected = vec![small, large, empty];
        expected.extend(many);
        for c in &expected {
            m.insert(c);
        }
        assert_eq!(all_cells(&m), expected);
        let mut row = vec![];
        m.row_cells(&Bytes::from_static(b"b"), u64::MAX, &mut row);
        assert_eq!(row, vec![expected[1].clone()]);
    }

    #[test]
    fn a_read_cell_outlives_its_memstore() {
        let m = Arc::new(MemStore::new(Bytes::from_static(b"f")));
        m.insert(&cell("a", "q", 1, 1));
        let read = all_cells(&m);
        drop(m);
        assert_eq!(read, vec![cell("a", "q", 1, 1)]);
    }

    #[test]
    fn a_memstore_counts_each_cell_at_its_bytes_and_entry_cost() {
        let m = MemStore::new(Bytes::from_static(b"f"));
        let c = cell("row", "qual", 1, 1);
        m.insert(&c);
        let bytes = c.row.len() + c.qualifier.len() + c.value.len();
        assert_eq!(m.heap_size(), bytes + ENTRY_OVERHEAD);
        assert_eq!(entry_size(&c), bytes + ENTRY_OVERHEAD);
        // The family is the store's: it is not counted per cell.
        let mut other_family = c.clone();
        other_family.family = Bytes::from_static(b"a much longer family name");
        assert_eq!(entry_size(&other_family), entry_size(&c));
    }

    #[test]
    fn the_entry_stays_compact() {
        // Every cell in memory pays for its key: a field added here costs
        // each of them (the module docs' figures assume 80 bytes).
        assert_eq!(std::mem::size_of::<MemKey>(), 80);
    }
}
