//! Reading a table by an index: the index rows in a key range, each
//! turned into its data row, in index order.
//!
//! A verified index row is trusted (invariant I2 of `crate::index`); an
//! unverified one is checked against its data row, whose indexed values
//! are read again and encoded: the same key means the entry is current
//! (it is answered, and verified at its own timestamp), another key or
//! none means it is stale (it is skipped, and deleted at its own
//! timestamp). Both repairs are stamped with the entry's timestamp, so a
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
use basalt_types::{CheckAndMutate, Delete, Get, IndexDescriptor, Put, Result, RowResult};

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
        }
    }

    /// What the scan did so far.
    pub fn stats(&self) -> IndexScanStats {
        self.stats
    }

    /// The current key of data row `row` for this index (`None`: it has
    /// none), read once no write of the row is in flight.
    fn current_key(&self, row: &Bytes) -> Result<Option<Bytes>> {
        // An empty check-and-mutate takes the row's lock and applies
        // nothing: the wait of the module docs, wherever the row's region
        // is served.
        let first = self.index.columns.first().ok_or_else(|| {
            basalt_types::Error::invalid(format!("index '{}' names no column", self.index.name))
        })?;
        self.checks.check_and_mutate(
            &CheckAndMutate::new(row.clone(), first.family.clone(), first.qualifier.clone())
                .if_absent(),
        )?;
        let mut get = Get::new(row.clone());
        for column in &self.index.columns {
            get = get.column(column.family.clone(), column.qualifier.clone());
        }
        let cells = self.checks.get(&get)?.cells;
        let values: Vec<Option<&[u8]>> = self
            .index
            .columns
            .iter()
            .map(|c| {
                cells
                    .iter()
                    .find(|cell| cell.family == c.family && cell.qualifier == c.qualifier)
                    .map(|cell| &cell.value[..])
            })
            .collect();
        Ok(self.index.key(&values, row))
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
            let stamp = flag.timestamp;
            if self.current_key(&data_row)?.as_ref() != Some(&entry.row) {
                self.index_table
                    .delete(&Delete::with_timestamp(entry.row.clone(), stamp))?;
                self.stats.removed += 1;
                return Ok(None);
            }
            self.index_table.put(&Put::new(entry.row.clone()).add_at(
                INDEX_FAMILY,
                VERIFIED_QUALIFIER,
                stamp,
                VERIFIED,
            ))?;
            self.stats.verified += 1;
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
            match self.resolve(entry) {
                Ok(Some(result)) => {
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
