//! Configuration of an embedded database: one typed structure with
//! documented defaults (the server loads it from TOML and flags later).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use basalt_engine::wal::WalOptions;
use basalt_engine::{Clock, RegionConfig, SystemClock};

/// Options of [`Database::open_with`](crate::Database::open_with).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// The data directory (created if missing). Default `./basalt-data`.
    pub data_dir: PathBuf,
    /// WAL segment size before rolling to a new file. Default 64 MiB.
    pub wal_segment_bytes: u64,
    /// How often ASYNC_WAL writes reach the log, in milliseconds. Default 100.
    pub wal_async_flush_ms: u64,
    /// Largest value accepted in one cell, in bytes. Default 10 MiB (HBase's
    /// `hbase.client.keyvalue.maxsize`).
    pub max_value_bytes: usize,
    /// Where "now" comes from (server timestamps, TTL). Tests substitute a
    /// [`ManualClock`](basalt_engine::ManualClock).
    #[serde(skip, default = "system_clock")]
    pub clock: Arc<dyn Clock>,
}

fn system_clock() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

impl Default for Options {
    fn default() -> Self {
        Options {
            data_dir: PathBuf::from("basalt-data"),
            wal_segment_bytes: 64 * 1024 * 1024,
            wal_async_flush_ms: 100,
            max_value_bytes: RegionConfig::default().max_value_bytes,
            clock: system_clock(),
        }
    }
}

impl Options {
    /// Default options for the data directory `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Options {
            data_dir: dir.into(),
            ..Options::default()
        }
    }

    /// Builder: the clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    pub(crate) fn wal_options(&self) -> WalOptions {
        WalOptions {
            segment_max_bytes: self.wal_segment_bytes,
            async_flush_interval: Duration::from_millis(self.wal_async_flush_ms.max(1)),
        }
    }

    pub(crate) fn region_config(&self) -> RegionConfig {
        RegionConfig {
            max_value_bytes: self.max_value_bytes,
            ..RegionConfig::default()
        }
    }
}
