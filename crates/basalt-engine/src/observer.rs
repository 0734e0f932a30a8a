//! Write observers: work a region runs around each row's write, as HBase's
//! region coprocessors (`preBatchMutate` / `postBatchMutate`) do.
//!
//! The engine knows nothing of what an observer does; the database layer
//! installs one to keep secondary indexes (`basalt::index`). The contract
//! is what makes an index consistent with its data through a crash:
//!
//! 1. [`WriteObserver::before_commit`] runs with the row's lock held, once
//!    the mutation is resolved (final cells, final timestamps) and before
//!    anything reaches the log. An error fails the mutation with nothing
//!    written to the row.
//! 2. The write commits (log, memstore, visible).
//! 3. The [`AfterCommit`] it returned runs once the write has committed,
//!    after the row lock is released. When the commit fails it is dropped
//!    without running: whatever step 1 prepared is left for the observer's
//!    own repair.
//!
//! Every mutation of a row through an observed region gets an order
//! timestamp strictly above the row's previous one, even when all its
//! cells carry client timestamps ([`PendingWrite::order_ts`]): observers
//! stamp what they write with it, so a later mutation's work always wins
//! over an earlier one's, in whatever order their steps land. It is kept
//! apart from the cells' server timestamps: observing a region changes no
//! cell's timestamp.

use std::fmt;

use bytes::Bytes;

use basalt_types::{Cell, Result};

use crate::region::Region;

/// One row's write as the observer sees it before the log.
#[derive(Debug)]
pub struct PendingWrite<'a> {
    /// The row.
    pub row: &'a Bytes,
    /// The cells this mutation writes (puts and delete markers), with
    /// their final timestamps.
    pub cells: &'a [Cell],
    /// Cells of the same row written by earlier mutations of the same
    /// batch, not yet committed: the row's state is what the region holds
    /// plus these, then `cells`.
    pub earlier: &'a [Cell],
    /// The mutation's order timestamp: strictly above every earlier
    /// mutation's of the row in this region (since it opened), and not
    /// below its own server timestamp. An observer may raise it (never
    /// lower it), to a floor only it knows (what earlier openings of the
    /// region wrote); the region's later mutations of the row then get
    /// larger ones.
    pub order_ts: i64,
}

/// What an observer runs after a commit (step 3 of the module docs).
pub struct AfterCommit(Box<dyn FnOnce() + Send>);

impl AfterCommit {
    /// Wraps the work.
    pub fn new(work: impl FnOnce() + Send + 'static) -> Self {
        AfterCommit(Box::new(work))
    }

    /// Runs it.
    pub fn run(self) {
        (self.0)()
    }
}

impl fmt::Debug for AfterCommit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AfterCommit")
    }
}

/// Work around each write of a region; see the module docs for when each
/// part runs and what its failure means.
pub trait WriteObserver: Send + Sync + fmt::Debug {
    /// Step 1. `region` is the region written, readable as it is before
    /// the write (its row lock is held by the caller, so no other write
    /// of the row runs meanwhile).
    fn before_commit(
        &self,
        region: &Region,
        write: &mut PendingWrite<'_>,
    ) -> Result<Option<AfterCommit>>;
}

/// Runs after-commit work in order.
pub(crate) fn run_all(work: Vec<AfterCommit>) {
    for item in work {
        item.run();
    }
}
