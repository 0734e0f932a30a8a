//! Table handles: reads and writes routed to the region owning each row.

use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use basalt_engine::region::scan_range;
use basalt_engine::scan::{RegionScanner, RowRange};
use basalt_engine::Region;
use basalt_types::filter::CellFilter;
use basalt_types::{
    Append, CheckAndMutate, Delete, Error, Get, Increment, Mutation, Put, Result, RowMutations,
    RowResult, Scan, TableDescriptor,
};

use crate::locator::{TableLocation, HANDOVER_WAIT};

/// A handle for reads and writes on one table. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Table {
    state: Arc<TableLocation>,
}

impl Table {
    pub(crate) fn new(state: Arc<TableLocation>) -> Self {
        Table { state }
    }

    /// The table name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// The table's current descriptor.
    pub fn descriptor(&self) -> TableDescriptor {
        self.state.descriptor()
    }

    /// Reads one row. A missing row gives an empty result, not an error.
    pub fn get(&self, get: &Get) -> Result<RowResult> {
        // Reads are never refused: a closing region's data is frozen.
        let result = self.state.region_for(&get.row).and_then(|r| r.get(get));
        self.state.note_corruption(result)
    }

    /// True when the get would return at least one cell.
    pub fn exists(&self, get: &Get) -> Result<bool> {
        Ok(!self.get(get)?.is_empty())
    }

    /// Writes cells to one row atomically.
    pub fn put(&self, put: &Put) -> Result<()> {
        self.state.on_region(put.row(), |r| r.put(put))
    }

    /// Deletes a row, families, columns or versions.
    pub fn delete(&self, delete: &Delete) -> Result<()> {
        self.state.on_region(delete.row(), |r| r.delete(delete))
    }

    /// Applies puts and deletes of one row atomically.
    pub fn mutate_row(&self, mutations: &RowMutations) -> Result<()> {
        self.state
            .on_region(mutations.row(), |r| r.mutate_row(mutations))
    }

    /// Adds to 8-byte big-endian counters; returns the new values.
    pub fn increment(&self, increment: &Increment) -> Result<RowResult> {
        self.state
            .on_region(increment.row(), |r| r.increment(increment))
    }

    /// Adds `delta` to one counter and returns its new value.
    pub fn increment_column(
        &self,
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        delta: i64,
    ) -> Result<i64> {
        let result = self.increment(&Increment::new(row).add(family, qualifier, delta))?;
        let value = result
            .cells
            .first()
            .map(|c| c.value.clone())
            .ok_or_else(|| Error::invalid("increment returned no cell"))?;
        let bytes: [u8; 8] = value[..]
            .try_into()
            .map_err(|_| Error::NotALong { len: value.len() })?;
        Ok(i64::from_be_bytes(bytes))
    }

    /// Appends to values; returns the new values.
    pub fn append(&self, append: &Append) -> Result<RowResult> {
        self.state.on_region(append.row(), |r| r.append(append))
    }

    /// Applies the mutations if the check holds, atomically; returns whether
    /// they were applied.
    pub fn check_and_mutate(&self, check: &CheckAndMutate) -> Result<bool> {
        self.state
            .on_region(&check.row, |r| r.check_and_mutate(check))
    }

    /// Applies many mutations: each is atomic on its row, the batch is not.
    /// Mutations going to the same region share one log sync.
    pub fn batch(&self, mutations: &[Mutation]) -> Vec<Result<()>> {
        let mut results: Vec<Option<Result<()>>> = (0..mutations.len()).map(|_| None).collect();
        let mut pending: Vec<usize> = (0..mutations.len()).collect();
        let deadline = Instant::now() + HANDOVER_WAIT;
        // Mutations refused by a region handing its rows over go round
        // again once the regions have changed.
        while !pending.is_empty() {
            let epoch = self.state.region_epoch.load(Ordering::SeqCst);
            let mut by_region: Vec<(Arc<Region>, Vec<usize>)> = Vec::new();
            for &i in &pending {
                match self.state.region_for(mutations[i].row()) {
                    Ok(region) => match by_region.iter_mut().find(|(r, _)| Arc::ptr_eq(r, &region))
                    {
                        Some((_, indices)) => indices.push(i),
                        None => by_region.push((region, vec![i])),
                    },
                    Err(e) => results[i] = Some(Err(e)),
                }
            }
            let mut refused = Vec::new();
            let mut refusal = String::new();
            for (region, indices) in by_region {
                let group: Vec<Mutation> = indices.iter().map(|&i| mutations[i].clone()).collect();
                for (i, result) in indices.into_iter().zip(region.batch(&group)) {
                    match result {
                        Err(Error::NotServingRegion(m)) => {
                            refused.push(i);
                            refusal = m;
                        }
                        other => results[i] = Some(other),
                    }
                }
            }
            if !refused.is_empty() {
                if let Err(e) = self.state.wait_for_region_change(epoch, deadline, refusal) {
                    for &i in &refused {
                        results[i] = Some(Err(Error::NotServingRegion(e.to_string())));
                    }
                    break;
                }
            }
            pending = refused;
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Error::invalid("mutation was not processed"))))
            .collect()
    }

    /// Scans rows; the iterator yields results in row order (reversed for a
    /// reversed scan), crossing region boundaries.
    pub fn scan(&self, scan: &Scan) -> Result<Scanner> {
        self.state.check_serving()?;
        scan.validate()?;
        let filter = scan.filter.as_ref().map(|f| f.build(scan.reversed));
        Ok(Scanner {
            state: Arc::clone(&self.state),
            range: scan_range(scan),
            scan: scan.clone(),
            filter,
            current: None,
            cursor: Cursor::Start,
            rows_returned: 0,
        })
    }
}

/// An open scan. Iterate it for row results.
pub struct Scanner {
    state: Arc<TableLocation>,
    scan: Scan,
    range: RowRange,
    /// The filter between regions (inside one, the region scanner holds it).
    filter: Option<Box<dyn CellFilter>>,
    current: Option<(Arc<Region>, RegionScanner)>,
    cursor: Cursor,
    rows_returned: u64,
}

/// Which region a scan reads next. Regions are found again by key at each
/// step, not remembered, so the scan follows the table's current regions.
#[derive(Debug, Clone)]
enum Cursor {
    /// Nothing read yet.
    Start,
    /// Forward: the next region starts at this key.
    From(Bytes),
    /// Reverse: the next region is the one ending at this key.
    Below(Bytes),
    /// No region left.
    Done,
}

impl std::fmt::Debug for Scanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanner")
            .field("table", &self.state.name)
            .field("range", &self.range)
            .field("cursor", &self.cursor)
            .field("rows_returned", &self.rows_returned)
            .finish()
    }
}

impl Scanner {
    /// The next region the scan covers, if any, and moves the cursor past it.
    fn next_region(&mut self) -> Option<Arc<Region>> {
        let regions = self.state.regions();
        // Index of the last region whose start key is <= key (or < key).
        let last_starting_at_or_before = |key: &[u8]| {
            regions
                .partition_point(|r| &r.info().start_key[..] <= key)
                .checked_sub(1)
        };
        let last_starting_before = |key: &[u8]| {
            regions
                .partition_point(|r| &r.info().start_key[..] < key)
                .checked_sub(1)
        };
        let index = match (&self.cursor, self.scan.reversed) {
            (Cursor::Done, _) => None,
            (Cursor::Start, false) => match &self.range.lower {
                Bound::Unbounded => (!regions.is_empty()).then_some(0),
                Bound::Included(k) | Bound::Excluded(k) => last_starting_at_or_before(k),
            },
            (Cursor::Start, true) => match &self.range.upper {
                Bound::Unbounded => regions.len().checked_sub(1),
                Bound::Included(k) => last_starting_at_or_before(k),
                Bound::Excluded(k) => last_starting_before(k),
            },
            (Cursor::From(k), _) => last_starting_at_or_before(k),
            (Cursor::Below(k), _) => last_starting_before(k),
        };
        let region = index.and_then(|i| regions.get(i)).cloned()?;
        let info = region.info();
        let in_range = if self.scan.reversed {
            // Some row below the region's end must be above the lower bound.
            info.end_key.is_empty()
                || match &self.range.lower {
                    Bound::Unbounded => true,
                    Bound::Included(l) | Bound::Excluded(l) => l < &info.end_key,
                }
        } else {
            self.range.below_upper(&info.start_key)
        };
        if !in_range {
            self.cursor = Cursor::Done;
            return None;
        }
        self.cursor = match self.scan.reversed {
            false if info.end_key.is_empty() => Cursor::Done,
            false => Cursor::From(info.end_key.clone()),
            true if info.start_key.is_empty() => Cursor::Done,
            true => Cursor::Below(info.start_key.clone()),
        };
        Some(region)
    }

    fn open_next_region(&mut self) -> Result<bool> {
        // Where the scan stands: rows on the other side were returned
        // already, even if a merge since made one region span both sides.
        let resume = self.cursor.clone();
        let Some(region) = self.next_region() else {
            return Ok(false);
        };
        let info = region.info();
        let mut clip = RowRange {
            lower: if info.start_key.is_empty() {
                Bound::Unbounded
            } else {
                Bound::Included(info.start_key.clone())
            },
            upper: if info.end_key.is_empty() {
                Bound::Unbounded
            } else {
                Bound::Excluded(info.end_key.clone())
            },
        };
        match resume {
            Cursor::From(k) => {
                clip = clip.intersect(&RowRange {
                    lower: Bound::Included(k),
                    upper: Bound::Unbounded,
                })
            }
            Cursor::Below(k) => {
                clip = clip.intersect(&RowRange {
                    lower: Bound::Unbounded,
                    upper: Bound::Excluded(k),
                })
            }
            Cursor::Start | Cursor::Done => {}
        }
        let remaining = self
            .scan
            .limit
            .map(|l| l.saturating_sub(self.rows_returned as usize));
        let scanner = region.scanner_within(&self.scan, &clip, self.filter.take(), remaining)?;
        self.current = Some((region, scanner));
        Ok(true)
    }

    fn next_result(&mut self) -> Result<Option<RowResult>> {
        loop {
            let Some((region, scanner)) = self.current.as_mut() else {
                if !self.open_next_region()? {
                    return Ok(None);
                }
                continue;
            };
            if let Some(result) = scanner.next_result()? {
                return Ok(Some(result));
            }
            // This region is done: account its work and move on.
            self.rows_returned += scanner.metrics().rows_returned;
            region.record_read(scanner);
            if scanner.ended_for_good() {
                self.cursor = Cursor::Done;
            }
            self.filter = scanner.take_filter();
            self.current = None;
        }
    }
}

impl Iterator for Scanner {
    type Item = Result<RowResult>;

    fn next(&mut self) -> Option<Self::Item> {
        let result = self.next_result();
        match self.state.note_corruption(result) {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => None,
            Err(e) => {
                self.cursor = Cursor::Done;
                self.current = None;
                Some(Err(e))
            }
        }
    }
}

impl Drop for Scanner {
    fn drop(&mut self) {
        if let Some((region, scanner)) = self.current.take() {
            region.record_read(&scanner);
        }
    }
}
