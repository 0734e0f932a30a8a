//! HBase's native RPC for Basalt: a Basalt server looks like an HBase 2.x
//! cluster to HBase's own clients (Java, hbase-driver, gohbase...), which
//! find it through ZooKeeper (or `ClientMetaService`) and speak protobuf
//! RPC to its master and region server ports.
//!
//! The pipeline of one call:
//! 1. `server`: accept; read the preamble (`HBas`, version 0, auth SIMPLE)
//!    and the connection header (service, cell-block codec), each bounded.
//! 2. `frame`: read a length-prefixed frame; split it into the request
//!    header, the parameter and the cell block (`cellblock`: HBase's
//!    KeyValue codec).
//! 3. `services`: find the method in the connection's service; run it on
//!    the blocking pool (`client_service`, `master_service`,
//!    `admin_service`, `registry`; `replication_sink` for the edits a
//!    replicating HBase sends; `peer_service` for region calls
//!    between Basalt's own servers), `meta` answering for `hbase:meta`.
//! 4. `server`: write the response header (with the exception, if any),
//!    the answer and its cell block; calls on one connection are answered
//!    in completion order, each tagged with its call id.
//!
//! Formats and the list of served methods: docs/native-rpc.md.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod access_control;
pub mod admin_service;
mod authentication;
pub mod call;
pub mod cellblock;
pub mod client;
pub mod client_service;
pub mod cluster_service;
pub mod context;
pub mod coordination;
pub mod error;
pub mod filters;
pub mod frame;
pub mod master_service;
pub mod meta;
pub mod namespace_table;
pub mod peer_service;
pub mod proto;
pub mod registry;
pub mod replication;
pub mod replication_sink;
pub mod scanners;
pub mod schema;
pub mod server;
pub mod services;
pub mod zk;

pub use context::{Identity, RpcContext, RpcLimits};
pub use coordination::{
    parse_server_name, server_name_text, CoordinationPaths, Coordinator, MasterCandidate,
    SessionState,
};
pub use error::RpcError;
pub use peer_service::RpcRegionCaller;
pub use server::{RpcConfig, RpcServer};
