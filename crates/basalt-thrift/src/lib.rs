//! Basalt's HBase Thrift1 gateway: what `basalt serve` runs so that
//! happybase and other HBase Thrift clients work unchanged.
//!
//! - [`protocol`]: the binary (strict and non-strict) and compact protocols
//!   over a dynamic value tree, with transport detection;
//! - [`types`]: the structs of HBase's `Hbase` service and the argument
//!   struct of each method, by wire field id;
//! - [`server`]: the async server (tokio), one port for buffered and framed
//!   transports and both protocols;
//! - [`client`]: a blocking client for every method, in every transport and
//!   protocol;
//! - [`admin`]: Basalt's own admin extension on the same port
//!   (`basaltAdmin`, versioned JSON) for what Thrift1 cannot say; see
//!   `docs/admin-protocol.md`;
//! - [`exception`]: Basalt errors as HBase's exceptions over Thrift1, and
//!   back;
//! - [`sasl`]: Kerberos on the port, Thrift's SASL transport with GSSAPI
//!   (`[security] authentication = "kerberos"`);
//! - [`thrift2`]: HBase's Thrift2 service (`THBaseService`), run by the same
//!   server ([`server::Flavour::Thrift2`]), and its client.
//!
//! The service itself (each method on the embedded database) is private to
//! the server.

// No crate of the workspace needs unsafe code; the compiler keeps it so.
#![forbid(unsafe_code)]
// Every public item is documented: this crate is a library others read.
#![warn(missing_docs)]

pub mod admin;
pub mod client;
pub mod exception;
mod handler;
pub mod protocol;
pub mod sasl;
mod scanners;
pub mod server;
pub mod thrift2;
pub mod types;

pub use client::{Client, ClientError};
pub use protocol::Protocol;
pub use server::{Bound, Flavour, Server, ServerConfig};
pub use thrift2::Client2;
