//! Secondary indexes the database keeps (issue 36; design in
//! `docs/secondary-indexes.md`).
//!
//! An index is declared in its table's descriptor
//! ([`basalt_types::IndexDescriptor`]) and its rows live in a table of
//! their own, `<table>.<index>`, one row per indexed data row, keyed by
//! the encoded indexed values and the data row key
//! ([`basalt_types::index`]). That table is split, moved and balanced like
//! any other, so nothing here depends on where a region is served: index
//! rows are written and read through [`crate::Table`] handles, which route
//! to a local region or to the server holding it.
//!
//! **Writing** (`maintain.rs`): every region of an indexed table runs an
//! [`IndexMaintainer`](maintain::IndexMaintainer) as its write observer
//! (`basalt_engine::observer`). For one mutation of data row `r` with
//! order timestamp `t` (strictly above every earlier mutation's of `r`):
//!
//! 1. under `r`'s row lock, `r`'s values before and after the mutation
//!    give each index's old key and new key;
//! 2. **pre-write**: the new key gets `_v = unverified` and its covered
//!    values at `t`, and an old key that is not the new one gets
//!    `_v = unverified` at `t`; a failure fails the mutation, with nothing
//!    written to `r`;
//! 3. the mutation commits (the acknowledgement point);
//! 4. **post-write**, after the row lock is released: the new key gets
//!    `_v = verified` at `t`, the old key is deleted at `t`. A failure
//!    leaves unverified rows that reads check and repair.
//!
//! **The invariant**, which every change here must keep:
//!
//! > **I1.** For every index and every data row `r` whose committed values
//! > give index key `k`, the index table holds row `k` (verified or not).
//! >
//! > **I2.** A *verified* index row `k`, read at any time, names a data row
//! > whose committed values give `k` at that time, unless a mutation of
//! > that row which changes its key is between its steps 2 and 4 (then
//! > the row is unverified at a newer timestamp, and a read of the flag
//! > after that pre-write sees unverified).
//!
//! I1 holds because step 2 finishes before step 3, and the only deletes
//! of index rows are step 4 for a key the committed mutation made stale,
//! and the read repair of an entry checked stale while no write of its row
//! was in flight (`scan.rs`). I2 holds because a key is verified only
//! after the commit that made it current (step 4 after step 3), and a
//! later mutation that makes it stale marks it unverified (step 2) before
//! its commit. Timestamps make the steps commute: step 4 of mutation `n`
//! (at `t_n`) landing after step 2 of mutation `n + 1` (at `t_{n+1} >
//! t_n`) is hidden by it, whatever the network does. A crash between any
//! two steps leaves only unverified rows behind.
//!
//! **Reading** (`scan.rs`): an index range's rows, each turned into its
//! data row; verified rows are trusted, unverified ones checked against
//! the data row (and verified or deleted at their own timestamp).
//!
//! **Building** (`build.rs`): the descriptor gains the index in state
//! `Building` (every region reopens with it, so every later write keeps
//! it), a backfill writes the rows written before, just below the
//! creation time, and the index becomes `Active`.

pub(crate) mod build;
pub(crate) mod check;
pub(crate) mod maintain;
pub mod scan;
mod visible;

pub use check::IndexCheckReport;
pub use maintain::failed_post_writes;
pub use scan::{IndexScanStats, IndexScanner};
