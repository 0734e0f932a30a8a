//! Sorted cell sources and their merge: the bottom of the read path.
//!
//! A store's data lives in several sorted sources (the memstore now; the
//! memstore snapshot being flushed and the store files next). Each implements
//! [`CellSource`]; [`MergedSource`] combines them into one sorted stream,
//! which the store scanner (`scan.rs`) turns into what a read returns.
//!
//! Reverse scans move row by row with [`CellSource::seek_before_row`] and
//! read each row forwards, as HBase's reversed scanners do, so every source
//! only needs forward iteration plus that one backwards step.

use bytes::Bytes;

use basalt_types::{Cell, CellType, Result};

/// A sorted, seekable stream of cells in KeyValue order.
pub trait CellSource: Send {
    /// The current cell, or `None` when exhausted.
    fn peek(&self) -> Option<&Cell>;

    /// Moves to the next cell.
    fn advance(&mut self) -> Result<()>;

    /// Positions at the first cell that sorts at or after `key` (only the
    /// key's coordinates matter).
    fn seek(&mut self, key: &Cell) -> Result<()>;

    /// Positions at the first cell of the greatest row strictly below `row`
    /// (of the last row when `row` is `None`), or exhausts the source when
    /// there is none.
    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()>;
}

/// A key that sorts before every cell of `row`.
pub fn first_on_row(row: &[u8]) -> Cell {
    key(
        Bytes::copy_from_slice(row),
        Bytes::new(),
        Bytes::new(),
        i64::MAX,
        CellType::DeleteFamily,
        u64::MAX,
    )
}

/// A key that sorts after every cell of one column and before the next
/// column (no real cell has a negative timestamp).
pub fn last_on_column(row: &Bytes, family: &Bytes, qualifier: &Bytes) -> Cell {
    key(
        row.clone(),
        family.clone(),
        qualifier.clone(),
        i64::MIN,
        CellType::Put,
        0,
    )
}

fn key(row: Bytes, family: Bytes, qualifier: Bytes, ts: i64, t: CellType, seq: u64) -> Cell {
    Cell {
        row,
        family,
        qualifier,
        timestamp: ts,
        cell_type: t,
        sequence_id: seq,
        value: Bytes::new(),
        ttl_millis: None,
    }
}

/// Several sources merged into one sorted stream.
///
/// Sources are few (a memstore or two and a handful of files, which
/// compaction keeps low), so a linear pick of the smallest head beats a heap.
pub struct MergedSource {
    sources: Vec<Box<dyn CellSource>>,
    current: Option<usize>,
}

impl std::fmt::Debug for MergedSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergedSource")
            .field("sources", &self.sources.len())
            .field("current", &self.peek())
            .finish()
    }
}

impl MergedSource {
    /// Merges `sources` (not yet positioned: seek before reading).
    pub fn new(sources: Vec<Box<dyn CellSource>>) -> Self {
        MergedSource {
            sources,
            current: None,
        }
    }

    fn pick_smallest(&mut self) {
        let mut best: Option<(usize, &Cell)> = None;
        for (i, source) in self.sources.iter().enumerate() {
            if let Some(cell) = source.peek() {
                match best {
                    Some((_, b)) if b.compare_key(cell).is_le() => {}
                    _ => best = Some((i, cell)),
                }
            }
        }
        self.current = best.map(|(i, _)| i);
    }
}

impl CellSource for MergedSource {
    fn peek(&self) -> Option<&Cell> {
        self.current.and_then(|i| self.sources[i].peek())
    }

    fn advance(&mut self) -> Result<()> {
        if let Some(i) = self.current {
            self.sources[i].advance()?;
            self.pick_smallest();
        }
        Ok(())
    }

    fn seek(&mut self, key: &Cell) -> Result<()> {
        for source in &mut self.sources {
            source.seek(key)?;
        }
        self.pick_smallest();
        Ok(())
    }

    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        for source in &mut self.sources {
            source.seek_before_row(row)?;
        }
        // Sources now sit at the starts of different rows: only the greatest
        // of those rows is the one just before `row`; the others must be
        // re-seeked to it so the merge reads that row from every source.
        let target = self
            .sources
            .iter()
            .filter_map(|s| s.peek().map(|c| c.row.clone()))
            .max();
        match target {
            Some(target_row) => {
                let start = first_on_row(&target_row);
                for source in &mut self.sources {
                    if source.peek().is_some_and(|c| c.row != target_row) {
                        source.seek(&start)?;
                    }
                }
                self.pick_smallest();
            }
            None => self.current = None,
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A cell of row `r`, family `f`, for tests of the layers above sources.
    pub(crate) fn cell(q: &str, ts: i64, t: CellType, seq: u64, v: &str) -> Cell {
        Cell {
            row: Bytes::from_static(b"r"),
            family: Bytes::from_static(b"f"),
            qualifier: Bytes::copy_from_slice(q.as_bytes()),
            timestamp: ts,
            cell_type: t,
            sequence_id: seq,
            value: Bytes::copy_from_slice(v.as_bytes()),
            ttl_millis: None,
        }
    }

    /// A source over a sorted vector, for tests of everything above sources.
    pub(crate) struct VecSource {
        cells: Vec<Cell>,
        pos: usize,
    }

    impl VecSource {
        pub(crate) fn new(mut cells: Vec<Cell>) -> Self {
            cells.sort_by(|a, b| a.compare_key(b));
            let pos = cells.len();
            VecSource { cells, pos }
        }
    }

    impl CellSource for VecSource {
        fn peek(&self) -> Option<&Cell> {
            self.cells.get(self.pos)
        }
        fn advance(&mut self) -> Result<()> {
            self.pos = (self.pos + 1).min(self.cells.len());
            Ok(())
        }
        fn seek(&mut self, key: &Cell) -> Result<()> {
            self.pos = self.cells.partition_point(|c| c.compare_key(key).is_lt());
            Ok(())
        }
        fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
            let end = match row {
                Some(row) => self.cells.partition_point(|c| &c.row[..] < row),
                None => self.cells.len(),
            };
            self.pos = match end.checked_sub(1) {
                Some(last) => {
                    let r = self.cells[last].row.clone();
                    self.cells.partition_point(|c| c.row < r)
                }
                None => self.cells.len(),
            };
            Ok(())
        }
    }

    fn put(row: &str, q: &str, ts: i64) -> Cell {
        Cell::put(row.to_string(), "f", q.to_string(), ts, "v")
    }

    fn drain(s: &mut dyn CellSource) -> Vec<(String, i64)> {
        let mut out = vec![];
        while let Some(c) = s.peek() {
            out.push((
                String::from_utf8_lossy(&c.row).into_owned()
                    + ":"
                    + &String::from_utf8_lossy(&c.qualifier),
                c.timestamp,
            ));
            s.advance().unwrap();
        }
        out
    }

    #[test]
    fn merge_interleaves_sources_in_key_order() {
        let a = VecSource::new(vec![put("a", "x", 1), put("c", "x", 1)]);
        let b = VecSource::new(vec![put("a", "x", 2), put("b", "y", 1)]);
        let mut m = MergedSource::new(vec![Box::new(a), Box::new(b)]);
        m.seek(&first_on_row(b"")).unwrap();
        assert_eq!(
            drain(&mut m),
            vec![
                ("a:x".into(), 2),
                ("a:x".into(), 1),
                ("b:y".into(), 1),
                ("c:x".into(), 1)
            ]
        );
    }

    #[test]
    fn seek_before_row_lands_on_the_previous_row_in_every_source() {
        let a = VecSource::new(vec![put("a", "x", 1), put("c", "z", 1)]);
        let b = VecSource::new(vec![put("b", "y", 1), put("c", "w", 1), put("d", "w", 1)]);
        let mut m = MergedSource::new(vec![Box::new(a), Box::new(b)]);
        m.seek_before_row(Some(b"d")).unwrap();
        let c = m.peek().unwrap();
        assert_eq!((&c.row[..], &c.qualifier[..]), (&b"c"[..], &b"w"[..]));
        m.advance().unwrap();
        assert_eq!(&m.peek().unwrap().qualifier[..], b"z");
        m.seek_before_row(Some(b"c")).unwrap();
        assert_eq!(&m.peek().unwrap().row[..], b"b");
        m.seek_before_row(Some(b"a")).unwrap();
        assert!(m.peek().is_none());
    }
}
