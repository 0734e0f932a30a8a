//! Basalt's REST gateway: HBase's REST server ("Stargate") over the
//! embedded database.
//!
//! HBase REST clients (its Java `RemoteHTable`, curl scripts, the Python
//! and JavaScript REST clients) read and write tables through URLs such as
//! `/<table>/<row>/<family:qualifier>` and `/<table>/scanner/<id>`, in XML,
//! JSON or raw bytes. Each resource is a thin translation onto
//! [`basalt::Database`] and [`basalt::Table`]; errors are classified by the
//! one error-kind table (`basalt::Error::kind`).
//!
//! The wire layout (URLs, methods, status codes, every representation) is
//! in `docs/rest-protocol.md`.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let db = basalt::Database::open("basalt-data")?;
//! let config = basalt_rest::RestConfig { port: 8080, ..Default::default() };
//! let server = basalt_rest::RestServer::start(db.clone(), &config)?;
//! // ... serve until asked to stop ...
//! server.shutdown();
//! db.close()?;
//! # Ok(())
//! # }
//! ```

// No crate of the workspace needs unsafe code; the compiler keeps it so.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cluster;
pub mod filter_model;
pub mod http;
mod json;
pub mod kerberos;
pub mod media;
pub mod model;
pub mod path;
pub mod protobuf;
pub(crate) mod resources;
mod scanners;
mod server;
pub mod xml;

pub use resources::{CLUSTER_VERSION, IGNORED_FAMILY_OPTIONS, REST_VERSION};
pub use server::{Bound, RestConfig, RestServer, RestStats, DECODED_PER_BYTE};
