//! Basalt's info server: what HBase's master and region server web UIs
//! show, on one port (`--info-port`, default 16010), as HTML pages, a JSON
//! API and Prometheus `/metrics`.
//!
//! A request, in order:
//! 1. `server.rs`: hyper reads the request line (connections and header
//!    time bounded); the page is built on the blocking pool;
//! 2. `routes.rs`: the path names a route, the query is checked strictly
//!    (an unknown parameter or a bad value is a 400 naming it);
//! 3. `model.rs` (and `heatmap.rs`) read the database's counters into the
//!    values the JSON API serves;
//! 4. `pages.rs` draws the same values as HTML (every user byte escaped),
//!    `prometheus.rs` writes them in the text format.
//!
//! The pages and endpoints are described in `docs/web-ui.md`.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let db = basalt::Database::open("basalt-data")?;
//! let config = basalt_info::InfoConfig { port: 0, ..Default::default() };
//! let server = basalt_info::InfoServer::bind(db.clone(), &config)?;
//! db.register_gateway("info", server.local_addr());
//! // ... serve until asked to stop ...
//! server.shutdown();
//! db.close()?;
//! # Ok(())
//! # }
//! ```

// No crate of the workspace needs unsafe code; the compiler keeps it so.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod extra;
pub mod heatmap;
pub mod html;
pub mod model;
mod pages;
pub mod prometheus;
mod routes;
mod server;

pub use extra::{ExtraGroup, ExtraMetrics, ExtraSample};
pub use routes::Failure;
pub use server::{Bound, InfoConfig, InfoServer, DEFAULT_PORT, DEFAULT_REGION_SERVER_PORT};
