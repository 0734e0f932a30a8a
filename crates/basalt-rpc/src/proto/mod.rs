//! HBase's protobuf messages, written for Basalt from the published field
//! names and numbers (no `.proto` file is copied; no build step). Each
//! module follows one of HBase's `.proto` files; fields Basalt never reads
//! are left out, which protobuf decoding tolerates by design.

pub mod access_control;
pub mod admin;
pub mod client;
pub mod cluster_status;
pub mod filter;
pub mod hbase;
pub mod master;
pub mod registry;
pub mod replication;
pub mod rpc;
pub mod snapshot;
pub mod wal;
