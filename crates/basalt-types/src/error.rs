//! The one error type shared by every Basalt crate.
//!
//! Errors cross crate boundaries constantly (a corrupt WAL record surfaces
//! through the embedded API and then through Thrift), so one enum avoids a
//! ladder of conversions and keeps messages identical everywhere.

use std::path::PathBuf;

/// Result alias used throughout Basalt.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in Basalt, with messages worded like HBase's
/// where HBase has a counterpart.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A caller passed something malformed (bad descriptor option, negative
    /// timestamp, empty row key, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// The table does not exist.
    #[error("table not found: {0}")]
    TableNotFound(String),

    /// `create_table` on a name that is taken.
    #[error("table already exists: {0}")]
    TableExists(String),

    /// Reads and writes on a disabled table.
    #[error("table is disabled: {0}")]
    TableDisabled(String),

    /// Operations that need a disabled table (drop, truncate) on an enabled one.
    #[error("table {0} is enabled. Disable it first.")]
    TableEnabled(String),

    /// A mutation or query named a family the table does not have.
    #[error("column family {family} does not exist in table {table}")]
    NoSuchFamily {
        /// Table name.
        table: String,
        /// The family that was asked for, printed lossily.
        family: String,
    },

    /// Increment of a cell whose value is not an 8-byte big-endian long.
    #[error("Field is not a long, it's {len} bytes wide")]
    NotALong {
        /// Length of the value found.
        len: usize,
    },

    /// A filter string that does not parse.
    #[error("filter syntax error at position {position}: {message}")]
    FilterSyntax {
        /// Byte offset into the filter string where the problem was found.
        position: usize,
        /// What was expected or found.
        message: String,
    },

    /// A persistent file failed its checksum or structural checks.
    #[error("corruption in {path} at offset {offset}: {message}")]
    Corruption {
        /// The damaged file.
        path: PathBuf,
        /// Byte offset of the damaged record or block.
        offset: u64,
        /// What check failed.
        message: String,
    },

    /// Another process holds the data directory.
    #[error("data directory {path} is locked by another process")]
    Locked {
        /// The lock file.
        path: PathBuf,
    },

    /// The write-ahead log failed earlier and refuses further writes: writes
    /// cannot be acknowledged without it.
    #[error("write-ahead log is unavailable: {0}")]
    WalFailed(String),

    /// An I/O error, with the path it concerned.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The database or region has been closed.
    #[error("closed: {0}")]
    Closed(String),

    /// The region no longer takes writes: it is being split or merged, or
    /// has been (HBase's `NotServingRegionException`). The table layer
    /// routes the request again to the regions that replaced it.
    #[error("region is not serving: {0}")]
    NotServingRegion(String),
}

impl Error {
    /// Wraps an I/O error with the path it concerned.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }
}
