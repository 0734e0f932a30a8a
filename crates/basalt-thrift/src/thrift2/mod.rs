//! HBase's Thrift2 gateway: the `THBaseService` service over the same
//! protocols, transports, server and limits as Thrift1 (see
//! `docs/thrift2-protocol.md`).
//!
//! - [`types`]: the service's structs and method arguments by wire id;
//! - [`client`]: a blocking client for every method (tests use it);
//! - the handler (each method on the embedded and admin APIs) is private
//!   to the server, which runs it with [`Flavour::Thrift2`](crate::server::Flavour).

pub mod client;
pub(crate) mod handler;
pub mod types;

pub use client::Client2;
