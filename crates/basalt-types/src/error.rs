//! The one error type shared by every Basalt crate.
//!
//! Errors cross crate boundaries constantly (a corrupt WAL record surfaces
//! through the embedded API and then through Thrift), so one enum avoids a
//! ladder of conversions and keeps messages identical everywhere.
//!
//! Callers that need to *classify* an error (a gateway choosing the HBase
//! exception to raise, the shell choosing how to word a failure, a wire
//! protocol carrying it) use [`Error::kind`] and [`Error::subject`] rather
//! than matching variants themselves, and [`ErrorKind::java_class`] /
//! [`ErrorKind::from_java_class`] for HBase's exception names: the mapping
//! lives in one table, [`JAVA_EXCEPTION_CLASSES`].

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Result alias used throughout Basalt.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in Basalt, with messages worded like HBase's
/// where HBase has a counterpart.
///
/// `{:?}` prints the message (so `fn main() -> Result<(), basalt::Error>`
/// reports a sentence); `{:#?}` prints the variant and its fields.
#[derive(thiserror::Error)]
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

    /// The namespace does not exist (a table named into it, or a namespace
    /// operation on it).
    #[error("namespace not found: {0}")]
    NamespaceNotFound(String),

    /// `create_namespace` on a name that is taken.
    #[error("namespace already exists: {0}")]
    NamespaceExists(String),

    /// An operation the state of the data forbids, though every argument is
    /// well formed (HBase's `ConstraintException`): dropping a namespace
    /// that still has tables, or one of the two reserved namespaces.
    #[error("{0}")]
    Constraint(String),

    /// A replication peer call named a peer id that is not configured
    /// (HBase's `ReplicationPeerNotFoundException`).
    #[error("replication peer {0} does not exist")]
    ReplicationPeerNotFound(String),

    /// A snapshot of that name exists already (HBase's
    /// `SnapshotExistsException`).
    #[error("Snapshot '{0}' already stored on the filesystem.")]
    SnapshotExists(String),

    /// No snapshot of that name (HBase's `SnapshotDoesNotExistException`).
    #[error("Snapshot '{0}' doesn't exist on the filesystem")]
    SnapshotNotFound(String),

    /// The snapshot's TTL has passed: it can no longer be cloned or
    /// restored (HBase's `SnapshotTTLExpiredException`).
    #[error("Snapshot '{0}' has expired: its TTL has passed")]
    SnapshotExpired(String),

    /// A snapshot could not be taken (HBase's `SnapshotCreationException`):
    /// the table does not exist, a region is not open, a store could not
    /// be read. Nothing was recorded.
    #[error("{0}")]
    SnapshotFailed(String),

    /// The caller lacks a permission the operation needs (HBase's
    /// `AccessDeniedException`, `docs/security.md`). The message says who,
    /// which action and where, worded as HBase's; nothing was done.
    #[error("{0}")]
    AccessDenied(String),

    /// A replication peer change HBase's rules refuse (an id already
    /// taken, a peer already enabled or disabled, an invalid peer id,
    /// cluster key or table and namespace selection), worded as HBase
    /// words it; HBase answers these with its plain
    /// `DoNotRetryIOException`.
    #[error("{0}")]
    ReplicationPeerRefused(String),

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

    /// A write waited for room in a region's full memstores while flushing
    /// them kept failing (a full disk, a store that refuses writes), and
    /// gave up (HBase's `RegionTooBusyException`). Nothing was written;
    /// writes succeed again once a flush does.
    #[error("region is too busy: {0}")]
    RegionTooBusy(String),

    /// The call was abandoned because its client went away (HBase's
    /// `CallerDisconnectedException`): the server stopped the work rather
    /// than finish an answer nobody reads. Nothing was changed.
    #[error("call cancelled: {0}")]
    Cancelled(String),

    /// The call ran into its time budget before it had anything to answer
    /// (a scan whose filter rejects row after row): the message names the
    /// limit. A scanner stays where it stopped; the next call continues.
    #[error("timed out: {0}")]
    TimedOut(String),

    /// Another process opened the same data (on shared object storage) at a
    /// higher epoch and fenced this one: this process must not make any
    /// write visible any more, so it refuses every read and write of every
    /// region (see `docs/object-storage.md`, "Fencing"). Final: only a
    /// restart (which fences the other process in turn) serves again.
    #[error("fenced: another process opened this data at epoch {epoch}: {message}")]
    Fenced {
        /// The epoch of the process that fenced this one (0 when unknown).
        epoch: u64,
        /// What collided, and this process's own epoch.
        message: String,
    },
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

/// The class of a failure: what a caller can act on, independent of the
/// message's wording. Stable and serialisable (snake_case names), so it can
/// travel in protocols; new kinds may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// A malformed argument ([`Error::InvalidArgument`]).
    InvalidArgument,
    /// The table does not exist.
    TableNotFound,
    /// The table exists already.
    TableExists,
    /// The table is disabled and the operation needs it enabled.
    TableDisabled,
    /// The table is enabled and the operation needs it disabled.
    TableEnabled,
    /// The namespace does not exist.
    NamespaceNotFound,
    /// The namespace exists already.
    NamespaceExists,
    /// The state of the data forbids the operation (a namespace with
    /// tables cannot be dropped).
    Constraint,
    /// A replication peer id that is not configured.
    ReplicationPeerNotFound,
    /// A replication peer change refused by HBase's rules.
    ReplicationPeerRefused,
    /// A snapshot of that name exists.
    SnapshotExists,
    /// No snapshot of that name.
    SnapshotNotFound,
    /// The snapshot's TTL has passed.
    SnapshotExpired,
    /// A snapshot could not be taken.
    SnapshotFailed,
    /// The caller lacks a permission the operation needs.
    AccessDenied,
    /// A family the table does not have.
    NoSuchFamily,
    /// An increment of a value that is not an 8-byte long.
    NotALong,
    /// A filter string that does not parse.
    FilterSyntax,
    /// A persistent file failed its checks.
    Corruption,
    /// Another process holds the data directory.
    Locked,
    /// The write-ahead log failed and refuses writes.
    WalUnavailable,
    /// An operating-system I/O failure.
    Io,
    /// The database or region is closed.
    Closed,
    /// The region is being split or merged, or has been.
    NotServingRegion,
    /// The region's memstores are full and cannot be flushed.
    RegionTooBusy,
    /// Another process took the data over (a higher epoch): this one
    /// serves nothing more.
    Fenced,
    /// The client went away and the server stopped the call's work.
    Cancelled,
    /// The call used up its time budget before it had an answer.
    TimedOut,
}

/// HBase's Java exception class for each [`ErrorKind`]: the one place that
/// says which exception a Basalt failure is in HBase's terms. Where several
/// kinds share a class, the first row is the kind the class maps back to
/// ([`ErrorKind::from_java_class`]).
pub const JAVA_EXCEPTION_CLASSES: &[(ErrorKind, &str)] = &[
    (
        ErrorKind::InvalidArgument,
        "java.lang.IllegalArgumentException",
    ),
    (
        ErrorKind::FilterSyntax,
        "java.lang.IllegalArgumentException",
    ),
    (
        ErrorKind::TableNotFound,
        "org.apache.hadoop.hbase.TableNotFoundException",
    ),
    (
        ErrorKind::TableExists,
        "org.apache.hadoop.hbase.TableExistsException",
    ),
    (
        ErrorKind::TableDisabled,
        "org.apache.hadoop.hbase.TableNotEnabledException",
    ),
    (
        ErrorKind::TableEnabled,
        "org.apache.hadoop.hbase.TableNotDisabledException",
    ),
    (
        ErrorKind::NamespaceNotFound,
        "org.apache.hadoop.hbase.NamespaceNotFoundException",
    ),
    (
        ErrorKind::NamespaceExists,
        "org.apache.hadoop.hbase.NamespaceExistException",
    ),
    (
        ErrorKind::Constraint,
        "org.apache.hadoop.hbase.constraint.ConstraintException",
    ),
    (
        ErrorKind::NoSuchFamily,
        "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException",
    ),
    (
        ErrorKind::NotALong,
        "org.apache.hadoop.hbase.DoNotRetryIOException",
    ),
    (
        ErrorKind::ReplicationPeerRefused,
        "org.apache.hadoop.hbase.DoNotRetryIOException",
    ),
    (
        ErrorKind::ReplicationPeerNotFound,
        "org.apache.hadoop.hbase.ReplicationPeerNotFoundException",
    ),
    (
        ErrorKind::SnapshotExists,
        "org.apache.hadoop.hbase.snapshot.SnapshotExistsException",
    ),
    (
        ErrorKind::SnapshotNotFound,
        "org.apache.hadoop.hbase.snapshot.SnapshotDoesNotExistException",
    ),
    (
        ErrorKind::SnapshotExpired,
        "org.apache.hadoop.hbase.snapshot.SnapshotTTLExpiredException",
    ),
    (
        ErrorKind::SnapshotFailed,
        "org.apache.hadoop.hbase.snapshot.SnapshotCreationException",
    ),
    (
        ErrorKind::AccessDenied,
        "org.apache.hadoop.hbase.security.AccessDeniedException",
    ),
    (
        ErrorKind::NotServingRegion,
        "org.apache.hadoop.hbase.NotServingRegionException",
    ),
    (
        ErrorKind::RegionTooBusy,
        "org.apache.hadoop.hbase.RegionTooBusyException",
    ),
    (ErrorKind::Io, "java.io.IOException"),
    (ErrorKind::Corruption, "java.io.IOException"),
    (ErrorKind::Locked, "java.io.IOException"),
    (ErrorKind::WalUnavailable, "java.io.IOException"),
    (ErrorKind::Closed, "java.io.IOException"),
    // HBase tells a region server that the cluster has declared it dead
    // (its regions are served elsewhere) with this exception.
    (
        ErrorKind::Fenced,
        "org.apache.hadoop.hbase.YouAreDeadException",
    ),
    (
        ErrorKind::Cancelled,
        "org.apache.hadoop.hbase.ipc.CallerDisconnectedException",
    ),
    (
        ErrorKind::TimedOut,
        "org.apache.hadoop.hbase.exceptions.TimeoutIOException",
    ),
];

/// The class for kinds missing from the table (none today; a kind added
/// later reads as a plain I/O failure until it gets a row).
const FALLBACK_JAVA_CLASS: &str = "java.io.IOException";

impl ErrorKind {
    /// HBase's fully qualified exception class for this kind.
    pub fn java_class(self) -> &'static str {
        JAVA_EXCEPTION_CLASSES
            .iter()
            .find(|(kind, _)| *kind == self)
            .map_or(FALLBACK_JAVA_CLASS, |(_, class)| class)
    }

    /// The kind an HBase exception class stands for, by its fully qualified
    /// name; `None` for a class the table does not know.
    pub fn from_java_class(class: &str) -> Option<ErrorKind> {
        JAVA_EXCEPTION_CLASSES
            .iter()
            .find(|(_, c)| *c == class)
            .map(|(kind, _)| *kind)
    }
}

impl Error {
    /// The class of this failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::TableNotFound(_) => ErrorKind::TableNotFound,
            Error::TableExists(_) => ErrorKind::TableExists,
            Error::TableDisabled(_) => ErrorKind::TableDisabled,
            Error::TableEnabled(_) => ErrorKind::TableEnabled,
            Error::NamespaceNotFound(_) => ErrorKind::NamespaceNotFound,
            Error::NamespaceExists(_) => ErrorKind::NamespaceExists,
            Error::Constraint(_) => ErrorKind::Constraint,
            Error::ReplicationPeerNotFound(_) => ErrorKind::ReplicationPeerNotFound,
            Error::ReplicationPeerRefused(_) => ErrorKind::ReplicationPeerRefused,
            Error::SnapshotExists(_) => ErrorKind::SnapshotExists,
            Error::SnapshotNotFound(_) => ErrorKind::SnapshotNotFound,
            Error::SnapshotExpired(_) => ErrorKind::SnapshotExpired,
            Error::SnapshotFailed(_) => ErrorKind::SnapshotFailed,
            Error::AccessDenied(_) => ErrorKind::AccessDenied,
            Error::NoSuchFamily { .. } => ErrorKind::NoSuchFamily,
            Error::NotALong { .. } => ErrorKind::NotALong,
            Error::FilterSyntax { .. } => ErrorKind::FilterSyntax,
            Error::Corruption { .. } => ErrorKind::Corruption,
            Error::Locked { .. } => ErrorKind::Locked,
            Error::WalFailed(_) => ErrorKind::WalUnavailable,
            Error::Io { .. } => ErrorKind::Io,
            Error::Closed(_) => ErrorKind::Closed,
            Error::NotServingRegion(_) => ErrorKind::NotServingRegion,
            Error::RegionTooBusy(_) => ErrorKind::RegionTooBusy,
            Error::Fenced { .. } => ErrorKind::Fenced,
            Error::Cancelled(_) => ErrorKind::Cancelled,
            Error::TimedOut(_) => ErrorKind::TimedOut,
        }
    }

    /// What the error is about, when it names one thing: the table for the
    /// table kinds, the namespace for the namespace kinds, the peer id for
    /// [`ErrorKind::ReplicationPeerNotFound`], the family for [`ErrorKind::NoSuchFamily`] (its table is
    /// [`Error::table`]). `None` for kinds that carry only a message.
    pub fn subject(&self) -> Option<&str> {
        match self {
            Error::TableNotFound(t)
            | Error::TableExists(t)
            | Error::TableDisabled(t)
            | Error::TableEnabled(t)
            | Error::NamespaceNotFound(t)
            | Error::NamespaceExists(t)
            | Error::ReplicationPeerNotFound(t)
            | Error::SnapshotExists(t)
            | Error::SnapshotNotFound(t)
            | Error::SnapshotExpired(t) => Some(t),
            Error::NoSuchFamily { family, .. } => Some(family),
            _ => None,
        }
    }

    /// The table the error concerns, when it names one (for
    /// [`ErrorKind::NoSuchFamily`], the table that lacks the family).
    pub fn table(&self) -> Option<&str> {
        match self {
            Error::NoSuchFamily { table, .. } => Some(table),
            Error::NamespaceNotFound(_)
            | Error::NamespaceExists(_)
            | Error::ReplicationPeerNotFound(_)
            | Error::SnapshotExists(_)
            | Error::SnapshotNotFound(_)
            | Error::SnapshotExpired(_) => None,
            _ => self.subject(),
        }
    }

    /// The text that, with [`Error::kind`], rebuilds this error in another
    /// process through [`Error::from_kind`]: a one-text variant's text as
    /// is; for the others their fields, one per line, in the order
    /// `from_kind` documents.
    pub fn kind_message(&self) -> String {
        match self {
            Error::InvalidArgument(m)
            | Error::TableNotFound(m)
            | Error::TableExists(m)
            | Error::TableDisabled(m)
            | Error::TableEnabled(m)
            | Error::NamespaceNotFound(m)
            | Error::NamespaceExists(m)
            | Error::Constraint(m)
            | Error::ReplicationPeerNotFound(m)
            | Error::ReplicationPeerRefused(m)
            | Error::SnapshotExists(m)
            | Error::SnapshotNotFound(m)
            | Error::SnapshotExpired(m)
            | Error::SnapshotFailed(m)
            | Error::AccessDenied(m)
            | Error::WalFailed(m)
            | Error::Closed(m)
            | Error::NotServingRegion(m)
            | Error::RegionTooBusy(m)
            | Error::Cancelled(m)
            | Error::TimedOut(m) => m.clone(),
            Error::NoSuchFamily { table, family } => format!("{table}\n{family}"),
            Error::NotALong { len } => len.to_string(),
            Error::FilterSyntax { position, message } => format!("{position}\n{message}"),
            Error::Corruption {
                path,
                offset,
                message,
            } => format!("{offset}\n{}\n{message}", path.display()),
            Error::Locked { path } => path.display().to_string(),
            Error::Io { path, source } => format!("{}\n{source}", path.display()),
            Error::Fenced { epoch, message } => format!("{epoch}\n{message}"),
        }
    }

    /// The one place that turns a kind and a message back into an error
    /// (an error that crossed a process boundary): the inverse of
    /// [`Error::kind`] and [`Error::kind_message`]. One-text kinds take the
    /// message whole. The others read their fields from its lines:
    /// `NoSuchFamily` table, family; `NotALong` the length; `FilterSyntax`
    /// position, message; `Corruption` offset, path, message; `Locked` the
    /// path; `Io` path, message (the operating system's error kind is not
    /// carried: `Other`); `Fenced` epoch, message. The last field takes the
    /// rest of the text, and a number that does not read is 0 with the
    /// whole text kept as the message, so nothing said is lost.
    pub fn from_kind(kind: ErrorKind, message: impl Into<String>) -> Error {
        let message: String = message.into();
        // (number, rest) from "number\nrest"; (0, whole) when it does not read.
        let numbered = |text: &str| -> (u64, String) {
            match text.split_once('\n') {
                Some((n, rest)) => match n.parse() {
                    Ok(n) => (n, rest.to_string()),
                    Err(_) => (0, text.to_string()),
                },
                None => (0, text.to_string()),
            }
        };
        let split = |text: &str| -> (String, String) {
            match text.split_once('\n') {
                Some((a, b)) => (a.to_string(), b.to_string()),
                None => (String::new(), text.to_string()),
            }
        };
        match kind {
            ErrorKind::InvalidArgument => Error::InvalidArgument(message),
            ErrorKind::TableNotFound => Error::TableNotFound(message),
            ErrorKind::TableExists => Error::TableExists(message),
            ErrorKind::TableDisabled => Error::TableDisabled(message),
            ErrorKind::TableEnabled => Error::TableEnabled(message),
            ErrorKind::NamespaceNotFound => Error::NamespaceNotFound(message),
            ErrorKind::NamespaceExists => Error::NamespaceExists(message),
            ErrorKind::Constraint => Error::Constraint(message),
            ErrorKind::ReplicationPeerNotFound => Error::ReplicationPeerNotFound(message),
            ErrorKind::ReplicationPeerRefused => Error::ReplicationPeerRefused(message),
            ErrorKind::SnapshotExists => Error::SnapshotExists(message),
            ErrorKind::SnapshotNotFound => Error::SnapshotNotFound(message),
            ErrorKind::SnapshotExpired => Error::SnapshotExpired(message),
            ErrorKind::SnapshotFailed => Error::SnapshotFailed(message),
            ErrorKind::AccessDenied => Error::AccessDenied(message),
            ErrorKind::WalUnavailable => Error::WalFailed(message),
            ErrorKind::Closed => Error::Closed(message),
            ErrorKind::NotServingRegion => Error::NotServingRegion(message),
            ErrorKind::RegionTooBusy => Error::RegionTooBusy(message),
            ErrorKind::Cancelled => Error::Cancelled(message),
            ErrorKind::TimedOut => Error::TimedOut(message),
            ErrorKind::NoSuchFamily => {
                let (table, family) = split(&message);
                Error::NoSuchFamily { table, family }
            }
            ErrorKind::NotALong => Error::NotALong {
                len: message.trim().parse().unwrap_or(0),
            },
            ErrorKind::FilterSyntax => {
                let (position, message) = numbered(&message);
                Error::FilterSyntax {
                    position: usize::try_from(position).unwrap_or(usize::MAX),
                    message,
                }
            }
            ErrorKind::Corruption => {
                let (offset, rest) = numbered(&message);
                let (path, message) = split(&rest);
                Error::Corruption {
                    path: PathBuf::from(path),
                    offset,
                    message,
                }
            }
            ErrorKind::Locked => Error::Locked {
                path: PathBuf::from(message),
            },
            ErrorKind::Io => {
                let (path, message) = split(&message);
                Error::Io {
                    path: PathBuf::from(path),
                    source: std::io::Error::other(message),
                }
            }
            ErrorKind::Fenced => {
                let (epoch, message) = numbered(&message);
                Error::Fenced { epoch, message }
            }
        }
    }

    /// The message without the kind's own prefix, for encodings that carry
    /// the kind separately: an invalid argument's text as the caller wrote
    /// it; every other kind's full message.
    pub fn detail(&self) -> String {
        match self {
            Error::InvalidArgument(m) => m.clone(),
            other => other.to_string(),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !f.alternate() {
            // A `main` returning this error prints `{:?}`: give it the
            // sentence, not a struct dump.
            return fmt::Display::fmt(self, f);
        }
        match self {
            Error::InvalidArgument(m) => f.debug_tuple("InvalidArgument").field(m).finish(),
            Error::TableNotFound(t) => f.debug_tuple("TableNotFound").field(t).finish(),
            Error::TableExists(t) => f.debug_tuple("TableExists").field(t).finish(),
            Error::TableDisabled(t) => f.debug_tuple("TableDisabled").field(t).finish(),
            Error::TableEnabled(t) => f.debug_tuple("TableEnabled").field(t).finish(),
            Error::NamespaceNotFound(n) => f.debug_tuple("NamespaceNotFound").field(n).finish(),
            Error::NamespaceExists(n) => f.debug_tuple("NamespaceExists").field(n).finish(),
            Error::Constraint(m) => f.debug_tuple("Constraint").field(m).finish(),
            Error::ReplicationPeerNotFound(p) => {
                f.debug_tuple("ReplicationPeerNotFound").field(p).finish()
            }
            Error::ReplicationPeerRefused(m) => {
                f.debug_tuple("ReplicationPeerRefused").field(m).finish()
            }
            Error::SnapshotExists(n) => f.debug_tuple("SnapshotExists").field(n).finish(),
            Error::SnapshotNotFound(n) => f.debug_tuple("SnapshotNotFound").field(n).finish(),
            Error::SnapshotExpired(n) => f.debug_tuple("SnapshotExpired").field(n).finish(),
            Error::SnapshotFailed(m) => f.debug_tuple("SnapshotFailed").field(m).finish(),
            Error::AccessDenied(m) => f.debug_tuple("AccessDenied").field(m).finish(),
            Error::NoSuchFamily { table, family } => f
                .debug_struct("NoSuchFamily")
                .field("table", table)
                .field("family", family)
                .finish(),
            Error::NotALong { len } => f.debug_struct("NotALong").field("len", len).finish(),
            Error::FilterSyntax { position, message } => f
                .debug_struct("FilterSyntax")
                .field("position", position)
                .field("message", message)
                .finish(),
            Error::Corruption {
                path,
                offset,
                message,
            } => f
                .debug_struct("Corruption")
                .field("path", path)
                .field("offset", offset)
                .field("message", message)
                .finish(),
            Error::Locked { path } => f.debug_struct("Locked").field("path", path).finish(),
            Error::WalFailed(m) => f.debug_tuple("WalFailed").field(m).finish(),
            Error::Io { path, source } => f
                .debug_struct("Io")
                .field("path", path)
                .field("source", source)
                .finish(),
            Error::Closed(m) => f.debug_tuple("Closed").field(m).finish(),
            Error::NotServingRegion(m) => f.debug_tuple("NotServingRegion").field(m).finish(),
            Error::RegionTooBusy(m) => f.debug_tuple("RegionTooBusy").field(m).finish(),
            Error::Cancelled(m) => f.debug_tuple("Cancelled").field(m).finish(),
            Error::TimedOut(m) => f.debug_tuple("TimedOut").field(m).finish(),
            Error::Fenced { epoch, message } => f
                .debug_struct("Fenced")
                .field("epoch", epoch)
                .field("message", message)
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_prints_the_message_and_alternate_debug_the_structure() {
        let e = Error::Locked {
            path: PathBuf::from("/x"),
        };
        assert_eq!(
            format!("{e:?}"),
            "data directory /x is locked by another process"
        );
        let pretty = format!("{e:#?}");
        assert!(pretty.starts_with("Locked {"), "{pretty}");
        assert!(pretty.contains("path: \"/x\""), "{pretty}");
    }

    #[test]
    fn a_result_unwrapped_in_main_reads_as_a_sentence() {
        fn main_like() -> Result<()> {
            Err(Error::TableNotFound("t1".into()))
        }
        let shown = match main_like() {
            Err(e) => format!("{e:?}"),
            Ok(()) => String::new(),
        };
        assert_eq!(shown, "table not found: t1");
    }

    #[test]
    fn table_not_found_maps_to_hbase_class_name() {
        assert_eq!(
            Error::TableNotFound("t".into()).kind().java_class(),
            "org.apache.hadoop.hbase.TableNotFoundException"
        );
    }

    #[test]
    fn disabled_and_enabled_tables_map_to_the_not_enabled_and_not_disabled_classes() {
        assert_eq!(
            ErrorKind::TableDisabled.java_class(),
            "org.apache.hadoop.hbase.TableNotEnabledException"
        );
        assert_eq!(
            ErrorKind::TableEnabled.java_class(),
            "org.apache.hadoop.hbase.TableNotDisabledException"
        );
    }

    #[test]
    fn every_class_maps_back_to_a_kind_that_maps_to_it() {
        for (kind, class) in JAVA_EXCEPTION_CLASSES {
            let back = ErrorKind::from_java_class(class);
            assert_eq!(back.map(ErrorKind::java_class), Some(*class), "{kind:?}");
        }
    }

    #[test]
    fn shared_classes_map_back_to_their_first_kind() {
        assert_eq!(
            ErrorKind::from_java_class("java.io.IOException"),
            Some(ErrorKind::Io)
        );
        assert_eq!(
            ErrorKind::from_java_class("java.lang.IllegalArgumentException"),
            Some(ErrorKind::InvalidArgument)
        );
        assert_eq!(ErrorKind::from_java_class("com.example.Nope"), None);
        // A plain DoNotRetryIOException stays what it always read as.
        assert_eq!(
            ErrorKind::from_java_class("org.apache.hadoop.hbase.DoNotRetryIOException"),
            Some(ErrorKind::NotALong)
        );
    }

    #[test]
    fn subject_names_the_table_or_the_family() {
        assert_eq!(Error::TableDisabled("t".into()).subject(), Some("t"));
        let e = Error::NoSuchFamily {
            table: "t".into(),
            family: "f".into(),
        };
        assert_eq!(e.kind(), ErrorKind::NoSuchFamily);
        assert_eq!(e.subject(), Some("f"));
        assert_eq!(e.table(), Some("t"));
        assert_eq!(Error::invalid("x").subject(), None);
    }

    #[test]
    fn detail_drops_the_invalid_argument_prefix_only() {
        assert_eq!(Error::invalid("bad").detail(), "bad");
        assert_eq!(
            Error::TableNotFound("t".into()).detail(),
            "table not found: t"
        );
    }

    #[test]
    fn every_error_rebuilt_from_its_kind_and_message_reads_the_same() {
        let errors = vec![
            Error::invalid("bad"),
            Error::TableNotFound("t".into()),
            Error::TableExists("t".into()),
            Error::TableDisabled("t".into()),
            Error::TableEnabled("t".into()),
            Error::NamespaceNotFound("n".into()),
            Error::NamespaceExists("n".into()),
            Error::Constraint("c".into()),
            Error::ReplicationPeerNotFound("p1".into()),
            Error::ReplicationPeerRefused("Replication peer p1 already exists".into()),
            Error::SnapshotExists("s".into()),
            Error::SnapshotNotFound("s".into()),
            Error::SnapshotExpired("s".into()),
            Error::SnapshotFailed("Table 't' doesn't exist, can't take snapshot.".into()),
            Error::AccessDenied(
                "Insufficient permissions for user 'bob' (table=t, action=READ)".into(),
            ),
            Error::NoSuchFamily {
                table: "ns:t".into(),
                family: "f\nwith a line".into(),
            },
            Error::NotALong { len: 3 },
            Error::FilterSyntax {
                position: 7,
                message: "expected ')'".into(),
            },
            Error::Corruption {
                path: PathBuf::from("/data/t/1/f/2.sf"),
                offset: 4096,
                message: "checksum\nmismatch".into(),
            },
            Error::Locked {
                path: PathBuf::from("/data/LOCK"),
            },
            Error::WalFailed("disk full".into()),
            Error::io(
                "10.0.0.1:16020",
                std::io::Error::other("connection refused"),
            ),
            Error::Closed("database /d".into()),
            Error::NotServingRegion("r".into()),
            Error::RegionTooBusy("r".into()),
            Error::Cancelled("the client left".into()),
            Error::TimedOut("scan_call_timeout_ms".into()),
            Error::Fenced {
                epoch: 9,
                message: "epoch 8 met 9".into(),
            },
        ];
        for error in errors {
            let back = Error::from_kind(error.kind(), error.kind_message());
            assert_eq!(back.kind(), error.kind());
            assert_eq!(back.to_string(), error.to_string());
        }
    }

    #[test]
    fn a_message_whose_number_does_not_read_is_kept_whole() {
        let e = Error::from_kind(ErrorKind::Fenced, "no number here");
        assert_eq!(
            e.to_string(),
            Error::Fenced {
                epoch: 0,
                message: "no number here".into()
            }
            .to_string()
        );
    }

    #[test]
    fn kinds_serialise_in_snake_case() {
        let json = serde_json::to_string(&ErrorKind::WalUnavailable).unwrap_or_default();
        assert_eq!(json, "\"wal_unavailable\"");
        let back: ErrorKind = serde_json::from_str("\"table_not_found\"").unwrap_or(ErrorKind::Io);
        assert_eq!(back, ErrorKind::TableNotFound);
    }
}
