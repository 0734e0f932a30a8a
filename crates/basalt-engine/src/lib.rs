//! Basalt's storage engine: the write-ahead log, memstores, MVCC, the read
//! path and the region (a key range of a table with one store per family).
//!
//! See `ARCHITECTURE.md` at the repository root for how the pieces fit.

// No crate of the workspace needs unsafe code; the compiler keeps it so.
#![forbid(unsafe_code)]
// Every public item is documented: this crate is a library others read.
#![warn(missing_docs)]

pub mod block_cache;
pub mod checked;
pub mod clock;
mod coding;
pub mod compaction;
pub mod fence;
pub mod fs;
pub mod interrupt;
pub mod key_load;
pub mod layout;
pub mod load;
pub mod load_split;
pub mod manifest;
pub mod memory;
pub mod memstore;
pub mod mvcc;
pub mod observer;
mod point_get;
pub mod read_tier;
pub mod region;
pub mod row_lock;
pub mod scan;
pub mod snapshot;
pub mod source;
pub mod store;
pub mod storefile;
mod version_limit;
pub mod wal;

pub use clock::{Clock, ManualClock, SystemClock};
pub use key_load::{KeyLoadBucket, KeyLoadConfig, KeyLoadMinute};
pub use load::RegionLoad;
pub use region::{FamilyState, FlushRequester, OpenFailure, Region, RegionConfig, RegionInfo};
pub use store::{CompactionState, Store, StoreContext, StoreStats};
