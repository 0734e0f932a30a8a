//! Region calls between servers: what one region server asks another
//! about one region it does not serve itself.
//!
//! In a cluster every region server runs every gateway, and a gateway's
//! [`Table`](crate::Table) must serve rows whose region is open on another
//! server. The locator then holds a [`RegionRoute::Remote`] for that
//! region (the cluster layer publishes routes after each catalog change),
//! and the table sends the request as a [`RegionCall`] through the
//! [`RegionCaller`] the cluster layer installed:
//!
//! 1. `Table` finds the route of the row; a local route calls the region
//!    directly (no serialisation: one process behaves and performs as
//!    before).
//! 2. A remote route becomes one `RegionCall` naming the table and the
//!    region id; the caller carries it to the server (basalt-rpc's
//!    `BasaltRegionService`, docs/region-calls.md).
//! 3. The serving server runs it on the region only if that region is open
//!    there ([`Database::serve_region_call`](crate::Database::serve_region_call)),
//!    and answers a [`RegionAnswer`] or a [`RemoteError`].
//! 4. `NotServingRegion` (the region moved) or a transport failure makes
//!    the table ask the cluster layer to refresh the table's routes and
//!    send the call again along the new route, within the hand-over
//!    deadline the local path already uses.
//!
//! Scans open a scanner on the serving server ([`RegionCall::OpenScanner`])
//! and page through it ([`RegionCall::NextRows`]); the server keeps it
//! under a lease (see `region_calls.rs`).

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use basalt_types::{
    Append, CheckAndMutate, Delete, Error, ErrorKind, Get, Increment, Mutation, Put, Result,
    RowMutations, RowResult, Scan,
};

/// One request about one region. The table and the region id travel
/// beside it (see [`RegionCaller::call`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RegionCall {
    /// [`Table::get`](crate::Table::get): answers [`RegionAnswer::Row`].
    Get(Get),
    /// [`Table::put`](crate::Table::put): answers [`RegionAnswer::Done`].
    Put(Put),
    /// [`Table::delete`](crate::Table::delete): answers `Done`.
    Delete(Delete),
    /// [`Table::mutate_row`](crate::Table::mutate_row): answers `Row`
    /// (its increments' and appends' new values).
    MutateRow(RowMutations),
    /// [`Table::increment`](crate::Table::increment): answers `Row`.
    Increment(Increment),
    /// [`Table::append`](crate::Table::append): answers `Row`.
    Append(Append),
    /// [`Table::check_and_mutate`](crate::Table::check_and_mutate):
    /// answers [`RegionAnswer::Applied`].
    CheckAndMutate(CheckAndMutate),
    /// The mutations of a [`Table::batch`](crate::Table::batch) that fall
    /// in this region: answers [`RegionAnswer::Batch`], one entry each.
    Batch(Vec<Mutation>),
    /// Opens a scanner over the scan's rows within the region's range:
    /// answers [`RegionAnswer::Rows`] with the scanner's id and no rows.
    OpenScanner {
        /// The scan; its `limit` is what the whole scan may still return.
        scan: Scan,
    },
    /// The next results of an open scanner: answers `Rows`.
    NextRows {
        /// The id `OpenScanner` answered.
        scanner: u64,
        /// At most this many results.
        rows: usize,
    },
    /// Closes a scanner (unknown ids too): answers `Done`.
    CloseScanner {
        /// The id `OpenScanner` answered.
        scanner: u64,
    },
    /// Flushes the region's memstores (`flush` of a table in a cluster
    /// reaches every region's server): answers `Done`.
    Flush,
    /// Compacts the region (`compact` / `major_compact`): answers `Done`.
    Compact {
        /// Every file, rather than the policy's choice.
        major: bool,
    },
    /// Bulk-loads the part of an HFile from row `from` to the region's end
    /// as a new store file of `family` (`basalt import hfiles` in a
    /// cluster; the holder reads `path`, so it must see it: the same
    /// machine or a shared mount): answers [`RegionAnswer::BulkLoaded`].
    BulkLoad {
        /// The family the file is of.
        family: String,
        /// The HFile, as the holder reads it.
        path: std::path::PathBuf,
        /// The first row to load (the region's start, or later).
        from: bytes::Bytes,
    },
}

impl RegionCall {
    /// The call's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            RegionCall::Get(_) => "Get",
            RegionCall::Put(_) => "Put",
            RegionCall::Delete(_) => "Delete",
            RegionCall::MutateRow(_) => "MutateRow",
            RegionCall::Increment(_) => "Increment",
            RegionCall::Append(_) => "Append",
            RegionCall::CheckAndMutate(_) => "CheckAndMutate",
            RegionCall::Batch(_) => "Batch",
            RegionCall::OpenScanner { .. } => "OpenScanner",
            RegionCall::NextRows { .. } => "NextRows",
            RegionCall::CloseScanner { .. } => "CloseScanner",
            RegionCall::Flush => "Flush",
            RegionCall::Compact { .. } => "Compact",
            RegionCall::BulkLoad { .. } => "BulkLoad",
        }
    }
}

/// The answer to a [`RegionCall`] that succeeded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RegionAnswer {
    /// A write or a close that returns nothing.
    Done,
    /// A get's row, or an increment's or append's new values.
    Row(RowResult),
    /// Whether a check-and-mutate applied its mutations, and then the new
    /// values of its increments and appends.
    Applied {
        /// The check held and the mutations were applied.
        applied: bool,
        /// The increments' and appends' new values (empty otherwise).
        result: RowResult,
    },
    /// Per mutation of a batch, in order: `None` when it applied.
    Batch(Vec<Option<RemoteError>>),
    /// Rows of a scanner.
    Rows {
        /// The scanner's id while it is open or its region's rows are
        /// merely exhausted; 0 once the scan as a whole has ended (its row
        /// limit was reached or a filter ended it): later regions must not
        /// be read.
        scanner: u64,
        /// The results, in scan order (pieces of a row with `batch`).
        rows: Vec<RowResult>,
        /// True while the scanner may have more: ask `NextRows` again.
        /// False once it has none; the server has then closed it.
        more: bool,
    },
    /// What a `BulkLoad` loaded.
    BulkLoaded {
        /// Cells loaded.
        cells: u64,
        /// Tags left out (not a TTL).
        tags_dropped: u64,
        /// Whether a store file was added (false: no cells in range).
        added: bool,
    },
}

/// A failure as it crosses servers: its kind and the text that rebuilds
/// it ([`Error::kind_message`] / [`Error::from_kind`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteError {
    /// The class of failure.
    pub kind: ErrorKind,
    /// The text that, with the kind, rebuilds the error.
    pub message: String,
}

impl RemoteError {
    /// The error of that kind again.
    pub fn into_error(self) -> Error {
        Error::from_kind(self.kind, self.message)
    }
}

impl From<&Error> for RemoteError {
    fn from(error: &Error) -> Self {
        RemoteError {
            kind: error.kind(),
            message: error.kind_message(),
        }
    }
}

impl From<Error> for RemoteError {
    fn from(error: Error) -> Self {
        RemoteError::from(&error)
    }
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.clone().into_error(), f)
    }
}

/// Where a region server takes region calls: the host and port of its
/// native RPC (region server) port. Printed `host:port` (`[v6]:port`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerAddress {
    host: String,
    port: u16,
}

impl ServerAddress {
    /// The server at `host` (a name or an address) and `port`.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        let host: String = host.into();
        // Kept without brackets; Display adds them for IPv6 literals.
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .map(str::to_string)
            .unwrap_or(host);
        ServerAddress { host, port }
    }

    /// The host name or address.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl From<SocketAddr> for ServerAddress {
    fn from(addr: SocketAddr) -> Self {
        ServerAddress::new(addr.ip().to_string(), addr.port())
    }
}

impl FromStr for ServerAddress {
    type Err = Error;

    /// Reads `host:port` or `[v6]:port`.
    fn from_str(text: &str) -> Result<Self> {
        let bad = |why: &str| Error::invalid(format!("server address {text:?}: {why}"));
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| bad("expected host:port"))?;
        if host.is_empty() || host == "[]" {
            return Err(bad("the host is empty"));
        }
        if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
            return Err(bad("an IPv6 address is written in brackets: [addr]:port"));
        }
        let port = port
            .parse::<u16>()
            .map_err(|_| bad("the port is not a number from 0 to 65535"))?;
        Ok(ServerAddress::new(host, port))
    }
}

impl fmt::Display for ServerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Carries region calls to other servers: the cluster layer installs one
/// in the locator ([`RegionLocator::set_caller`](crate::RegionLocator::set_caller)).
///
/// Contract:
/// - `call` sends `call` about region `region_id` of `table` to `server`
///   and returns the server's answer, or its failure rebuilt with the same
///   kind ([`RemoteError::into_error`]).
/// - A failure to reach the server or to hear its answer (refused, reset,
///   timed out) is an [`ErrorKind::Io`] error whose message names the
///   server's address; the table then asks for fresh routes and may send
///   the call again, so a caller must not retry a call that may have been
///   applied.
/// - It returns within its own timeout: a server that stopped answering
///   must not hold a gateway's thread longer.
pub trait RegionCaller: Send + Sync + fmt::Debug {
    /// Sends one call and waits for its answer.
    fn call(
        &self,
        server: &ServerAddress,
        table: &str,
        region_id: u64,
        call: RegionCall,
    ) -> Result<RegionAnswer>;
}

/// The answer was not the kind the call expects: a peer that does not
/// follow the protocol (a different version, most likely).
pub(crate) fn unexpected(server: &ServerAddress, call: &str, answer: &RegionAnswer) -> Error {
    let shape = match answer {
        RegionAnswer::Done => "Done",
        RegionAnswer::Row(_) => "Row",
        RegionAnswer::Applied { .. } => "Applied",
        RegionAnswer::Batch(_) => "Batch",
        RegionAnswer::Rows { .. } => "Rows",
        RegionAnswer::BulkLoaded { .. } => "BulkLoaded",
    };
    Error::invalid(format!(
        "region server {server} answered a {call} call with {shape}: \
         do both servers run the same Basalt version?"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_addresses_read_and_print_host_and_port() {
        let a: ServerAddress = "rs1.example:16020"
            .parse()
            .unwrap_or_else(|_| ServerAddress::new("", 0));
        assert_eq!(a, ServerAddress::new("rs1.example", 16020));
        assert_eq!(a.to_string(), "rs1.example:16020");
        let v6: ServerAddress = "[::1]:7"
            .parse()
            .unwrap_or_else(|_| ServerAddress::new("", 0));
        assert_eq!(v6.host(), "::1");
        assert_eq!(v6.to_string(), "[::1]:7");
        assert!("nohost".parse::<ServerAddress>().is_err());
        assert!(":1".parse::<ServerAddress>().is_err());
        assert!("h:99999".parse::<ServerAddress>().is_err());
        assert!("::1:7".parse::<ServerAddress>().is_err());
    }

    #[test]
    fn a_remote_error_becomes_the_error_of_its_kind_again() {
        let original = Error::NoSuchFamily {
            table: "t".into(),
            family: "x".into(),
        };
        let back = RemoteError::from(&original).into_error();
        assert_eq!(back.kind(), ErrorKind::NoSuchFamily);
        assert_eq!(back.to_string(), original.to_string());
    }

    #[test]
    fn calls_and_answers_survive_the_wire_encoding() {
        let call = RegionCall::OpenScanner {
            scan: Scan::new().start_row("m").reversed(true),
        };
        let wire = postcard::to_stdvec(&("t", 7u64, &call)).unwrap_or_default();
        let back: Option<(String, u64, RegionCall)> = postcard::from_bytes(&wire).ok();
        assert_eq!(back, Some(("t".to_string(), 7, call)));
        let answer: std::result::Result<RegionAnswer, RemoteError> = Ok(RegionAnswer::Batch(vec![
            None,
            Some(RemoteError::from(Error::NotServingRegion("r".into()))),
        ]));
        let wire = postcard::to_stdvec(&answer).unwrap_or_default();
        let back: Option<std::result::Result<RegionAnswer, RemoteError>> =
            postcard::from_bytes(&wire).ok();
        assert_eq!(back, Some(answer));
    }
}
