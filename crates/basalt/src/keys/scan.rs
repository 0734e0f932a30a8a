//! The salted scan: one scan per salt bucket, merged back into the order
//! of the unsalted keys.
//!
//! 1. The caller's scan is written once per bucket: its row prefix becomes
//!    `[bucket] + prefix` (just `[bucket]` without one), its start and stop
//!    rows, when set, get the bucket byte in front; filters, columns,
//!    versions, time range, batch and limit are kept as they are.
//! 2. Each bucket's scan is a `Table::scan` (lazy: nothing is read until
//!    the merge asks for its first row).
//! 3. A binary heap holds each bucket's next row keyed by its unsalted key
//!    (smallest first; largest first for a reversed scan); the merge pops
//!    the head, returns it and refills from the same bucket.
//! 4. The limit counts rows, not results: the pieces of a wide row (with
//!    `batch`) are consecutive in one bucket, share one key and so come
//!    out together, counting once.
//!
//! Filters run in the regions, on the stored (salted) row keys: a row
//! filter or `PrefixFilter` sees the bucket byte first.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use bytes::Bytes;

use basalt_types::{Result, RowResult, Scan};

use crate::keys::salt::Salt;
use crate::table::{Scanner, Table};

/// One row of a salted scan: the result as stored (its `row` is the salted
/// key) and the unsalted key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaltedRow {
    /// The row as stored: `result.row` is the salted key.
    pub result: RowResult,
}

impl SaltedRow {
    /// The salted key, as stored.
    pub fn salted_key(&self) -> &Bytes {
        &self.result.row
    }

    /// The key without its bucket byte (no copy).
    pub fn key(&self) -> Bytes {
        if self.result.row.is_empty() {
            Bytes::new()
        } else {
            self.result.row.slice(1..)
        }
    }

    /// The bucket byte.
    pub fn bucket(&self) -> u8 {
        self.result.row.first().copied().unwrap_or(0)
    }
}

/// Scans of salted tables, on [`Table`].
pub trait SaltedScan {
    /// Scans a table whose keys were written as `salt.encode(key)`: `scan`
    /// speaks of unsalted keys (start, stop, prefix), and rows come back
    /// in unsalted key order (descending for a reversed scan), each with
    /// both keys. See the module for what is kept of the scan.
    fn scan_salted(&self, salt: &Salt, scan: &Scan) -> Result<SaltedScanner>;
}

impl SaltedScan for Table {
    fn scan_salted(&self, salt: &Salt, scan: &Scan) -> Result<SaltedScanner> {
        scan.validate()?;
        let mut buckets = Vec::with_capacity(usize::from(salt.buckets()));
        for b in 0..salt.buckets() {
            buckets.push(self.scan(&bucket_scan(scan, b as u8))?);
        }
        Ok(SaltedScanner {
            buckets,
            heap: BinaryHeap::new(),
            started: false,
            done: false,
            reversed: scan.reversed,
            limit: scan.limit,
            rows_returned: 0,
            last_row: None,
        })
    }
}

/// The caller's scan, confined to one bucket.
fn bucket_scan(scan: &Scan, bucket: u8) -> Scan {
    let with_bucket = |key: &Bytes| -> Bytes {
        if key.is_empty() {
            Bytes::new()
        } else {
            let mut k = Vec::with_capacity(key.len() + 1);
            k.push(bucket);
            k.extend_from_slice(key);
            Bytes::from(k)
        }
    };
    let mut prefix = vec![bucket];
    if let Some(p) = &scan.row_prefix {
        prefix.extend_from_slice(p);
    }
    let mut s = scan.clone();
    s.start_row = with_bucket(&scan.start_row);
    s.stop_row = with_bucket(&scan.stop_row);
    s.row_prefix = Some(Bytes::from(prefix));
    s
}

/// A bucket's next row in the merge.
#[derive(Debug)]
struct Head {
    /// The unsalted key.
    key: Bytes,
    bucket: usize,
    /// Largest first (a reversed scan).
    descending: bool,
    result: RowResult,
}

impl Head {
    /// The order of the merge: `Greater` pops first.
    fn merge_order(&self, other: &Self) -> Ordering {
        let by_key = self.key.cmp(&other.key);
        let by_key = if self.descending {
            by_key
        } else {
            by_key.reverse()
        };
        // Equal keys (only with data salted inconsistently): lower bucket first.
        by_key.then_with(|| other.bucket.cmp(&self.bucket))
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.merge_order(other) == Ordering::Equal
    }
}

impl Eq for Head {}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        self.merge_order(other)
    }
}

/// An open salted scan (see [`SaltedScan::scan_salted`]). Iterate it for
/// rows; an error ends it.
pub struct SaltedScanner {
    buckets: Vec<Scanner>,
    heap: BinaryHeap<Head>,
    started: bool,
    done: bool,
    reversed: bool,
    limit: Option<usize>,
    rows_returned: usize,
    /// The key of the last row returned: pieces of one row count once.
    last_row: Option<Bytes>,
}

impl std::fmt::Debug for SaltedScanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaltedScanner")
            .field("buckets", &self.buckets.len())
            .field("reversed", &self.reversed)
            .field("rows_returned", &self.rows_returned)
            .finish()
    }
}

impl SaltedScanner {
    /// Reads bucket `bucket`'s next row into the heap.
    fn refill(&mut self, bucket: usize) -> Result<()> {
        let Some(scanner) = self.buckets.get_mut(bucket) else {
            return Ok(());
        };
        if let Some(result) = scanner.next().transpose()? {
            let key = if result.row.is_empty() {
                Bytes::new()
            } else {
                result.row.slice(1..)
            };
            self.heap.push(Head {
                key,
                bucket,
                descending: self.reversed,
                result,
            });
        }
        Ok(())
    }

    fn next_row(&mut self) -> Result<Option<SaltedRow>> {
        if !self.started {
            self.started = true;
            for b in 0..self.buckets.len() {
                self.refill(b)?;
            }
        }
        let Some(head) = self.heap.pop() else {
            return Ok(None);
        };
        let new_row = self.last_row.as_ref() != Some(&head.result.row);
        if new_row {
            if self.limit.is_some_and(|l| self.rows_returned >= l) {
                return Ok(None);
            }
            self.rows_returned += 1;
            self.last_row = Some(head.result.row.clone());
        }
        self.refill(head.bucket)?;
        Ok(Some(SaltedRow {
            result: head.result,
        }))
    }
}

impl Iterator for SaltedScanner {
    type Item = Result<SaltedRow>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_row() {
            Ok(Some(row)) => Some(Ok(row)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_scan_prefixes_every_bound_with_the_bucket() {
        let scan = Scan::new().start_row("b").stop_row("d").prefix("b");
        let s = bucket_scan(&scan, 3);
        assert_eq!(&s.start_row[..], b"\x03b");
        assert_eq!(&s.stop_row[..], b"\x03d");
        assert_eq!(s.row_prefix.as_deref(), Some(&b"\x03b"[..]));
        let open = bucket_scan(&Scan::new(), 7);
        assert!(open.start_row.is_empty() && open.stop_row.is_empty());
        assert_eq!(open.row_prefix.as_deref(), Some(&b"\x07"[..]));
    }
}
