//! `basalt bench`: the benchmark tool. YCSB's core workloads A-F (load and
//! run phases, client threads, an optional target rate, HdrHistogram
//! latencies per operation type), micro benchmarks compatible with RocksDB's
//! `db_bench`, and `compare`, which runs Basalt against RocksDB and fjall and
//! writes `bench/results/<date>.md`.
//!
//! Without the default `basalt-targets` feature the crate holds only the
//! workloads and the runner, which the peers binary (`bench/peers`) reuses
//! for fjall without compiling Basalt.

// No crate of the workspace needs unsafe code; the compiler keeps it so.
#![forbid(unsafe_code)]
// Every public item is documented: this crate is a library others read.
#![warn(missing_docs)]

pub mod cli;
pub mod dbbench;
pub mod generator;
pub mod stats;
pub mod timeline;
pub mod workload;
pub mod ycsb;

#[cfg(feature = "basalt-targets")]
pub mod command;
#[cfg(feature = "basalt-targets")]
pub mod compare;
#[cfg(feature = "basalt-targets")]
pub mod indexes;
#[cfg(feature = "basalt-targets")]
pub mod snapshot;
#[cfg(feature = "basalt-targets")]
pub mod targets;

use std::fmt;

/// A benchmark failure, with a message for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchError(String);

impl BenchError {
    /// An error with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        BenchError(message.into())
    }
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BenchError {}

/// Result alias of the crate.
pub type BenchResult<T> = Result<T, BenchError>;
