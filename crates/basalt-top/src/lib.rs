//! `basalt top`: hbtop for Basalt. The load of every region, table or
//! region server of a running server (or a data directory), refreshed
//! every few seconds, in a terminal UI or as plain text.
//!
//! 1. A [`source::Source`] takes a snapshot: the server's summary and every
//!    region of every table, with request totals, sizes and the server's
//!    own rates where it reports them (remote over Thrift1's admin
//!    extension, or embedded).
//! 2. [`model::build_view`] turns the last two snapshots into rows: rates
//!    from the growth of the totals between them (the server's last-minute
//!    rates before there are two), one row per region, or sums per table
//!    or per server; then the drill-down, the [`filter::Filter`] and the
//!    sort.
//! 3. [`summary::lines`] writes the lines above the table.
//! 4. [`batch`] prints refreshes as text; [`tui`] draws them with ratatui
//!    and reads keys between refreshes. Both take their source as a trait
//!    object, so tests drive them with a fake.
//!
//! `docs/top.md` is the user's guide: options, columns, keys, rates.

// No crate of the workspace needs unsafe code; the compiler keeps it so.
#![forbid(unsafe_code)]

pub mod batch;
mod cli;
pub mod filter;
pub mod format;
pub mod model;
pub mod source;
pub mod summary;
pub mod tui;

pub use cli::{run, TopArgs};

/// Why `basalt top` stopped.
#[derive(Debug, thiserror::Error)]
pub enum TopError {
    /// The server could not be reached (or the connection broke).
    #[error("cannot reach a Basalt server at {address}: {reason}")]
    Connect {
        /// `host:port`.
        address: String,
        /// What went wrong.
        reason: String,
    },
    /// The server (or the database) answered with an error.
    #[error("{location}: {message}")]
    Server {
        /// Where the snapshot was taken.
        location: String,
        /// The error.
        message: String,
    },
    /// The data directory could not be opened.
    #[error("cannot open {dir}: {message}")]
    Open {
        /// The directory.
        dir: String,
        /// Why.
        message: String,
    },
    /// An option is wrong.
    #[error("{0}")]
    Usage(String),
    /// The terminal failed.
    #[error("terminal: {0}")]
    Terminal(std::io::Error),
    /// Standard output failed.
    #[error("cannot write the output: {0}")]
    Output(std::io::Error),
}
