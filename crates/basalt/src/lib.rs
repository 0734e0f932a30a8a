//! Basalt: an HBase-compatible wide-column database, as an embeddable
//! library.
//!
//! ```no_run
//! use basalt::{ColumnFamilyDescriptor, Database, Get, Put, Scan, TableDescriptor};
//!
//! # fn main() -> basalt::Result<()> {
//! let db = Database::open("basalt-data")?;
//! db.create_table(
//!     TableDescriptor::new("users").family(ColumnFamilyDescriptor::new("info").max_versions(3)),
//! )?;
//! let users = db.table("users")?;
//! users.put(&Put::new("alice").add("info", "email", "alice@example.com"))?;
//! let row = users.get(&Get::new("alice"))?;
//! assert_eq!(row.value(b"info", b"email").map(|v| &v[..]), Some(&b"alice@example.com"[..]));
//! for row in users.scan(&Scan::new().prefix("a"))? {
//!     let row = row?;
//!     println!("{:?}", row.row);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! The data model, operations and their exact semantics follow HBase 2;
//! see `ARCHITECTURE.md` for how the crates fit together.
//!
//! Administration (create with splits, alter, truncate, regions and their
//! load, flush, compact, split, merge, paged reads) is also available as a
//! typed request/reply API in [`admin`], which the gateways encode.

// No crate of the workspace needs unsafe code; the compiler keeps it so.
#![forbid(unsafe_code)]
// Every public item is documented: this crate is a library others read.
#![warn(missing_docs)]

pub mod access;
pub mod admin;
mod authorize;
pub mod bulk_load;
mod catalog;
pub mod check;
pub mod cluster;
mod database;
pub mod export;
pub mod gateways;
pub mod guard;
mod handover;
pub mod index;
pub mod keys;
mod locator;
mod maintenance;
pub use maintenance::MaintenanceActivity;
pub mod metrics;
pub mod normalizer;
mod options;
mod region_calls;
mod region_server;
pub mod remote;
pub mod replication;
mod split;
mod table;
pub mod tls;

pub use access::{
    Action, Actions, Authentication, Caller, Grant, PermissionChange, PermissionQuery, Permissions,
    Scope, SecurityOptions,
};
pub use admin::{Admin, AdminReply, AdminRequest};
/// Whether a file store error says the file exists already (a
/// create-if-absent collision).
pub use basalt_engine::manifest::is_already_exists;
pub use catalog::{catalog_document, catalog_file, CheckpointPolicy};
pub use catalog::{FamilyChange, SplitOrMerge};
pub use database::{
    Database, DatabaseBuilder, MemberConfig, RegionState, RegionSummary, TableInfo,
};
pub use gateways::Gateway;
pub use locator::{FilterScanStats, RegionLocator, RegionRoute, RouteRefresher, TableLocation};
pub use normalizer::{NormalizationPlan, NormalizerRun};
pub use options::{Options, RegionSplitPolicy};
pub use region_calls::{REGION_CALL_MAX_ROWS, REGION_CALL_SCANNER_CAP, REGION_CALL_SCANNER_LEASE};
pub use region_server::{RecoveryReport, RegionAssignment, RegionServer, RegionSpec, WalPlacement};
pub use remote::{RegionAnswer, RegionCall, RegionCaller, RemoteError, ServerAddress};
pub use split::{validate_split_keys, SplitAlgorithm};
pub use table::{Scanner, Table};

pub use basalt_engine::block_cache::BlockCacheStats;
/// The write-ahead log's contract and today's local implementation.
pub use basalt_engine::fence::Fence;
/// The file stores a database can be opened over (see [`DatabaseBuilder`]).
pub use basalt_engine::fs;
/// Stopping a call's scan work when its client leaves or its time runs out.
pub use basalt_engine::interrupt;
/// Where every file and directory of a data set lives.
pub use basalt_engine::layout;
/// Load-based split: its settings and the decisions `Database::load_split_events` lists.
pub use basalt_engine::load_split::{LoadSplitConfig, LoadSplitEvent, LoadSplitOutcome};
/// Memory-only reads for gateways (see the module).
pub use basalt_engine::read_tier;
/// A row built in memory rather than stored, read through a read's filter
/// and max versions exactly as stored rows are (the native RPC gateway's
/// system tables).
pub use basalt_engine::scan::read_held_row;
/// Rows between two bounds, each inclusive, exclusive or open
/// ([`Table::scan_within`]).
pub use basalt_engine::scan::RowRange;
/// Counters of the work a scan did (rows and cells looked at, filtered
/// and returned): [`Scanner::metrics`].
pub use basalt_engine::scan::ScanMetrics;
/// Snapshot manifests and the references that keep store files
/// (docs/snapshots.md).
pub use basalt_engine::snapshot;
/// Other region servers' logs on shared storage (cluster mode): list them,
/// fence a dead server's, replay an ended one, delete one no longer needed.
pub use basalt_engine::wal::object::{delete_log, fence_log, list_logs, replay_log};
/// The write-ahead log's contract, the local log and the log on a file store.
pub use basalt_engine::wal::{ObjectWal, ObjectWalOptions, Wal, WriteAheadLog};
pub use basalt_engine::{
    Clock, CompactionState, FamilyState, ManualClock, OpenFailure, Region, RegionInfo, RegionLoad,
    StoreStats, SystemClock,
};
pub use basalt_types::column;
pub use basalt_types::descriptor::{
    namespace_of, BloomType, ColumnFamilyDescriptor, Compression, DataBlockEncoding,
    KeepDeletedCells, NamespaceDescriptor, TableDescriptor, DEFAULT_NAMESPACE,
    MAX_FAMILY_NAME_BYTES, MAX_TABLE_NAME_PART_BYTES, RESERVED_NAMESPACES,
};
pub use basalt_types::filter::{
    set_filter_limits, Comparator, CompareOp, Filter, FuzzyKey, ListOperator, SingleColumnValue,
    DEFAULT_MAX_FILTERS, DEFAULT_MAX_FILTER_DEPTH,
};
/// Index row keys and the layout of index tables (`basalt_types::index`).
pub use basalt_types::index as index_types;
pub use basalt_types::mutation::{
    Append, CheckAndMutate, Condition, Delete, Durability, Increment, Mutation, Nonce, Put,
    RowMutations,
};
pub use basalt_types::query::{Get, RowResult, Scan, TimeRange};
pub use basalt_types::{Cell, CellType, Error, ErrorKind, Result, LATEST_TIMESTAMP};
pub use basalt_types::{IndexColumn, IndexDescriptor, IndexState, IndexTransform};
