//! Numbers kept outside the database, by a gateway of the same process
//! (the native RPC gateway's replication sink, say), shown beside the
//! database's own: on the status page, in `/api/server-metrics` (one JSON
//! object per group, under the group's key) and in `/metrics`.
//!
//! The info server knows nothing of the gateways: whoever starts it hands
//! it [`ExtraMetrics`] readers ([`crate::Bound::serve_with`]), each called
//! when a page is built.

use std::sync::Arc;

use crate::prometheus::Kind;

/// One number.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtraSample {
    /// Its Prometheus family name (`basalt_...`, a counter ending in
    /// `_total`).
    pub name: String,
    /// Its key in the group's JSON object.
    pub key: String,
    /// Its label on the status page.
    pub label: String,
    /// Counter or gauge.
    pub kind: Kind,
    /// Prometheus' `# HELP` line.
    pub help: String,
    /// The value now.
    pub value: f64,
}

/// Numbers that belong together.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtraGroup {
    /// The group's key in `/api/server-metrics`.
    pub key: String,
    /// Its heading on the status page.
    pub title: String,
    /// The numbers.
    pub samples: Vec<ExtraSample>,
}

/// Reads a group's numbers now.
pub type ExtraMetrics = Arc<dyn Fn() -> ExtraGroup + Send + Sync>;

/// The readers a server was given.
#[derive(Clone, Default)]
pub struct Extras(pub Vec<ExtraMetrics>);

impl std::fmt::Debug for Extras {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Extras({} readers)", self.0.len())
    }
}

impl Extras {
    /// Every group, read now.
    pub fn read(&self) -> Vec<ExtraGroup> {
        self.0.iter().map(|reader| reader()).collect()
    }
}
