//! A failed call as HBase's clients read it: a Java exception class name,
//! a message, and whether retrying can help.

use basalt::Error;
use basalt_types::ErrorKind;

/// HBase's base class for failures that a retry cannot fix.
pub const DO_NOT_RETRY: &str = "org.apache.hadoop.hbase.DoNotRetryIOException";
/// The region named is not (or no longer) served here: re-read `hbase:meta`.
pub const NOT_SERVING_REGION: &str = "org.apache.hadoop.hbase.NotServingRegionException";
/// The scanner id is unknown (closed, expired or never opened).
pub const UNKNOWN_SCANNER: &str = "org.apache.hadoop.hbase.UnknownScannerException";
/// A retried `next` whose answer was lost: the scan cannot resume in place.
pub const OUT_OF_ORDER_SCANNER_NEXT: &str =
    "org.apache.hadoop.hbase.exceptions.OutOfOrderScannerNextException";
/// A call on a service this server does not run.
pub const UNKNOWN_SERVICE: &str = "org.apache.hadoop.hbase.ipc.UnknownServiceException";
/// A request that does not decode.
pub const BAD_REQUEST: &str = "org.apache.hadoop.hbase.ipc.FatalConnectionException";
/// The server refuses more work for now.
pub const SERVER_TOO_BUSY: &str = "org.apache.hadoop.hbase.ipc.ServerTooBusyException";

/// A failed call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    /// Fully qualified Java class name.
    pub class: String,
    /// Human-readable message (HBase sends a stack trace here).
    pub message: String,
    /// True when the client should not retry.
    pub do_not_retry: bool,
}

impl RpcError {
    /// True when the call stopped because its client went away.
    pub fn is_cancelled(&self) -> bool {
        self.class == ErrorKind::Cancelled.java_class()
    }

    /// An error of `class`.
    pub fn new(class: &str, message: impl Into<String>, do_not_retry: bool) -> RpcError {
        RpcError {
            class: class.to_string(),
            message: message.into(),
            do_not_retry,
        }
    }

    /// `DoNotRetryIOException` with `message`: the request is wrong or not
    /// served, and sending it again will not change that.
    pub fn do_not_retry(message: impl Into<String>) -> RpcError {
        RpcError::new(DO_NOT_RETRY, message, true)
    }

    /// A method this server does not serve, named in the message.
    pub fn unsupported(service: &str, method: &str) -> RpcError {
        RpcError::do_not_retry(format!(
            "{service}.{method} is not served by Basalt (see docs/native-rpc.md)"
        ))
    }

    /// A parameter that does not decode, naming the message type.
    pub fn undecodable(what: &str, error: impl std::fmt::Display) -> RpcError {
        RpcError::do_not_retry(format!("malformed {what}: {error}"))
    }

    /// A required field left out, naming it.
    pub fn missing(what: &str) -> RpcError {
        RpcError::do_not_retry(format!("missing {what}"))
    }

    /// `NotServingRegionException` for `region`.
    pub fn not_serving(region: &[u8]) -> RpcError {
        RpcError::new(
            NOT_SERVING_REGION,
            format!(
                "region {} is not online on this server",
                String::from_utf8_lossy(region)
            ),
            false,
        )
    }

    /// The exception as a `ResultOrException`/`RegionActionResult` carries
    /// it: the class name and the message bytes.
    pub fn to_name_bytes(&self) -> crate::proto::hbase::NameBytesPair {
        crate::proto::hbase::NameBytesPair {
            name: self.class.clone(),
            value: Some(self.message.clone().into_bytes()),
        }
    }
}

/// Whether a failure of `kind` can go away by itself (the region moves,
/// the memstore drains, the disk recovers): everything else is final, as
/// HBase's `DoNotRetryIOException` subclasses are.
fn retryable(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::NotServingRegion
            | ErrorKind::RegionTooBusy
            | ErrorKind::Io
            | ErrorKind::WalUnavailable
            | ErrorKind::Closed
            | ErrorKind::TimedOut
    )
}

impl From<Error> for RpcError {
    fn from(error: Error) -> RpcError {
        let kind = error.kind();
        RpcError::new(kind.java_class(), error.to_string(), !retryable(kind))
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.class, self.message)
    }
}

impl std::error::Error for RpcError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_table_is_final_and_keeps_hbases_class() {
        let error = RpcError::from(Error::TableNotFound("t".into()));
        assert_eq!(
            error.class,
            "org.apache.hadoop.hbase.TableNotFoundException"
        );
        assert!(error.do_not_retry);
    }

    #[test]
    fn a_region_in_transition_is_retried() {
        let error = RpcError::from(Error::NotServingRegion("r".into()));
        assert_eq!(error.class, NOT_SERVING_REGION);
        assert!(!error.do_not_retry);
    }
}
