//! Moving data from HBase into Basalt (docs/migrating-from-hbase.md).
//!
//! - [`hbase`] reads an HBase snapshot as HBase 2.x leaves it (its
//!   description, its manifest, where each store file it names lives);
//! - [`convert`] rewrites one HBase store file (read by `basalt-hfile`) as
//!   one Basalt store file, cell for cell, HBase's order kept;
//! - [`snapshot_import`] makes a whole HBase snapshot a completed Basalt
//!   snapshot of a data set, resumably; a clone of it is the table.
//!
//! The live half of a migration, HBase replicating its edits to Basalt, is
//! the native RPC's replication sink (`basalt_rpc::replication_sink`).

pub mod compare;
pub mod convert;
pub mod hbase;
pub mod snapshot_import;

/// How many bytes of an HBase file an import reads at once by default.
pub use basalt_hfile::DEFAULT_READ_AHEAD;
pub use snapshot_import::{
    import_hbase_snapshot, ImportOptions, ImportProgress, ImportReport, IMPORT_NAMESPACE,
};
