//! Reading a table by an index: the index rows in a key range, each
//! turned into its data row, in index order.
//!
//! An unverified index row is checked against its data row, whose
//! indexed values are read again and encoded: the same key means the
//! entry is current (it is answered, and verified at its own timestamp),
//! another key or none means it is stale (it is skipped, and deleted at
//! its own timestamp). A verified row is trusted to be current when it
//! was written (invariant I2 of `crate::index`), and its key is still
//! compared with the data row as read for the answer: the row may have
//! changed since the flag was read, or its indexed value expired by TTL
//! (which no write announces); such an entry is skipped, not repaired. Both repairs are stamped with the entry's timestamp, so a
//! newer mutation's index writes always win over them.
//!
//! The check first waits for the data row's lock: the mutation that
//! wrote an unverified entry holds that lock from its pre-write until its
//! commit, so once the lock is free it has either committed (the data
//! now gives the entry's key, and the entry is verified) or failed (the
//! entry is stale). Reading the data row without that wait could see it
//! just before such a mutation commits and delete an entry the mutation
//! is about to verify.

use bytes::Bytes;

use basalt_types::index::{INDEX_FAMILY, VERIFIED, VERIFIED_QUALIFIER};
use basalt_types::{CheckAndMutate, Delete, Get, IndexDescriptor, Result, RowResult};

use super::maintain::{apply, index_row_write};
use super::visible::key_and_covered;

use crate::table::{Scanner, Table};

/// What an index scan did besides answering (for tests and the shell's
/// summary).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexScanStats {
    /// Index rows read.
    pub entries: u64,
    /// Unverified entries found current and verified.
    pub verified: u64,
    /// Unverified entries found stale and deleted.
    pub removed: u64,
    /// Verified entries whose data row no longer gives their key when
    /// read (changed meanwhile, or its value expired): skipped.
    pub skipped: u64,
}

/// The data rows of an index range, in index order; see the module docs.
pub struct IndexScanner {
    index: IndexDescriptor,
    entries: Scanner,
    /// The caller's handle on the data table: its reads are checked as
    /// the caller's.
    data: Table,
    /// A trusted handle on the data table, for the checks of unverified
    /// entries (they read the indexed columns whatever the caller may
    /// read, and answer nothing of them).
    checks: Table,
    index_table: Table,
    /// What each data row's get asks for (columns, versions, time range,
    /// filter); its row is replaced per entry.
    template: Get,
    remaining: Option<usize>,
    stats: IndexScanStats,
    /// The index key of the last row answered.
    last_key: Option<Bytes>,
}

impl std::fmt::Debug for IndexScanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexScanner")
            .field("index", &self.index.name)
            .field("stats", &self.stats)
            .finish()
    }
}

impl IndexScanner {
    pub(crate) fn new(
        index: IndexDescriptor,
        entries: Scanner,
        data: Table,
        checks: Table,
        index_table: Table,
        template: Get,
        limit: Option<usize>,
    ) -> Self {
        IndexScanner {
            index,
            entries,
            data,
            checks,
            index_table,
            template,
            remaining: limit,
            stats: IndexScanStats::default(),
            last_key: None,
        }
    }

    /// What the scan did so far.
    pub fn stats(&self) -> IndexScanStats {
        self.stats
    }

    /// The index key of the last row answered: a later scan starting
    /// there (and skipping it) continues this one.
    pub fn last_key(&self) -> Option<&[u8]> {
        self.last_key.as_deref()
    }

    /// One index row: its data row's result, or `None` to skip it.
    fn resolve(&mut self, entry: RowResult) -> Result<Option<RowResult>> {
        self.stats.entries += 1;
        let data_row = self.index.data_row(&entry.row)?;
        let flag = entry
            .cells
            .iter()
            .find(|c| c.family == INDEX_FAMILY && c.qualifier == VERIFIED_QUALIFIER);
        let Some(flag) = flag else {
            // Only covered cells left (a flag deleted by a repair racing a
            // pre-write): nothing vouches for it; the next write or
            // repair settles it.
            return Ok(None);
        };
        if flag.value != VERIFIED {
            let current = settle_unverified(
                &self.index,
                &self.checks,
                &self.index_table,
                &entry.row,
                &data_row,
                flag.timestamp,
            )?;
            if !current {
                self.stats.removed += 1;
                return Ok(None);
            }
            self.stats.verified += 1;
        } else if key_now(&self.index, &self.checks, &data_row)?.as_ref() != Some(&entry.row) {
            // Trusted, and still checked: the row may have changed since
            // the flag was read, or its indexed value expired (TTL).
            self.stats.skipped += 1;
            return Ok(None);
        }
        let get = Get {
            row: data_row,
            ..self.template.clone()
        };
        let result = self.data.get(&get)?;
        Ok((!result.is_empty()).then_some(result))
    }
}

impl Iterator for IndexScanner {
    type Item = Result<RowResult>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.remaining == Some(0) {
                return None;
            }
            let entry = match self.entries.next()? {
                Ok(entry) => entry,
                Err(e) => return Some(Err(e)),
            };
            let key = entry.row.clone();
            match self.resolve(entry) {
                Ok(Some(result)) => {
                    self.last_key = Some(key);
                    if let Some(n) = &mut self.remaining {
                        *n -= 1;
                    }
                    return Some(Ok(result));
                }
                Ok(None) => continue,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// The current key of data row `row` for `index` (`None`: it has none)
/// and its covered values, read once no write of the row is in flight
/// (the wait of the module docs).
fn read_current(
    index: &IndexDescriptor,
    checks: &Table,
    row: &Bytes,
) -> Result<(Option<Bytes>, Vec<Option<Bytes>>)> {
    // An empty check-and-mutate takes the row's lock and applies nothing:
    // the wait, wherever the row's region is served.
    let first = index.columns.first().ok_or_else(|| {
        basalt_types::Error::invalid(format!("index '{}' names no column", index.name))
    })?;
    checks.check_and_mutate(
        &CheckAndMutate::new(row.clone(), first.family.clone(), first.qualifier.clone())
            .if_absent(),
    )?;
    let mut get = Get::new(row.clone());
    for (family, qualifier) in index.read_columns() {
        get = get.column(family, qualifier);
    }
    Ok(key_and_covered(index, &checks.get(&get)?.cells, row))
}

/// The key data row `row` gives `index` as read now.
fn key_now(index: &IndexDescriptor, checks: &Table, row: &Bytes) -> Result<Option<Bytes>> {
    let mut get = Get::new(row.clone());
    for column in &index.columns {
        get = get.column(column.family.clone(), column.qualifier.clone());
    }
    Ok(key_and_covered(index, &checks.get(&get)?.cells, row).0)
}

/// Settles unverified index row `entry` (flag at `stamp`) of data row
/// `data_row`: when the row's current key is `entry`, it is verified and
/// its covered cells rewritten from the row (a write that failed after
/// its pre-write left its own values there) and the answer is true;
/// otherwise it is deleted. Each at `stamp`, so that a newer write's index
/// rows win over the repair.
pub(crate) fn settle_unverified(
    index: &IndexDescriptor,
    checks: &Table,
    index_table: &Table,
    entry: &Bytes,
    data_row: &Bytes,
    stamp: i64,
) -> Result<bool> {
    let (key, covered) = read_current(index, checks, data_row)?;
    if key.as_ref() != Some(entry) {
        index_table.delete(&Delete::with_timestamp(entry.clone(), stamp))?;
        return Ok(false);
    }
    apply(
        index_table,
        &index_row_write(index, entry, stamp, VERIFIED, &covered)?,
    )?;
    Ok(true)
}
