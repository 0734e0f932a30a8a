//! The wire encoding of Basalt's administration API ([`basalt::admin`]) on
//! the Thrift gateway: what `basalt shell` needs that HBase's Thrift1
//! service cannot say (split keys, every family option, alter, truncate
//! keeping splits, regions with their load, flush, split and merge, reads
//! with versions, time ranges or raw cells).
//!
//! It is one extra method on the same port and protocol,
//! `basaltAdmin(1: binary request) -> binary`, whose request and response
//! are versioned JSON documents ([`Request`], [`Response`]); see
//! `docs/admin-protocol.md`. The operation inside a request is the serde
//! form of a [`basalt::AdminRequest`] and a successful answer that of a
//! [`basalt::AdminReply`]; this module adds the version envelope and the
//! error document ([`AdminError`], whose [`ErrorKind`] is the protocol's own
//! fixed set, coarser than [`basalt::ErrorKind`]). Failures of an operation
//! travel inside the response (so the caller learns what kind of failure it
//! was); only a request that is not JSON of a known version is refused as a
//! whole.
//!
//! The server runs a request with [`basalt::Admin::execute`] on its
//! database, so the answers are those of a data directory opened in-process.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use basalt::admin::Admin;
use basalt::{Database, Error};

use crate::client::{Client, ClientError, ClientResult};
use crate::protocol::Value;

/// Version 1's names for the typed API's types: the documents are their
/// serde form.
pub use basalt::admin::{
    AdminReply as Reply, AdminRequest as Op, AlterChange as Change, CellReply, ClusterReply,
    FamilyInfo, FamilySpec, ProcedureReply, ReadSpec, RegionInfoReply, RowReply, ServerLoadReply,
    ServerReply, StatusReply, TableReply, MAX_PAGE_BYTES, MAX_PAGE_ROWS,
};

/// The Thrift method name of the admin extension.
pub const METHOD: &str = "basaltAdmin";
/// The protocol version this build speaks (requests must carry it).
pub const VERSION: u32 = 1;

/// One admin request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    /// Protocol version; must be [`VERSION`].
    pub version: u32,
    /// The operation.
    #[serde(flatten)]
    pub op: Op,
}

/// What kind of failure an operation met, as version 1 names them.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The table does not exist.
    TableNotFound,
    /// The table exists already.
    TableExists,
    /// The table is disabled.
    TableDisabled,
    /// The table is enabled (and must not be).
    TableEnabled,
    /// A family the table does not have.
    NoSuchFamily,
    /// A malformed argument.
    InvalidArgument,
    /// The request's version is not served.
    UnsupportedVersion,
    /// The request is not a valid document of its version.
    BadRequest,
    /// Anything else (I/O, corruption, ...).
    Other,
}

/// A failed operation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AdminError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// The table or family name for the kinds that concern one.
    #[serde(default)]
    pub subject: Option<String>,
    /// The table of a `no_such_family`.
    #[serde(default)]
    pub table: Option<String>,
    /// A human-readable message.
    pub message: String,
}

impl std::fmt::Display for AdminError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AdminError {}

impl AdminError {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        AdminError {
            kind,
            subject: None,
            table: None,
            message: message.into(),
        }
    }
}

impl From<Error> for AdminError {
    /// Version 1 names five kinds of failure; the rest travel as
    /// `invalid_argument` (a filter that does not parse) or `other`.
    fn from(e: Error) -> Self {
        let core = e.kind();
        let kind = match core {
            basalt::ErrorKind::TableNotFound => ErrorKind::TableNotFound,
            basalt::ErrorKind::TableExists => ErrorKind::TableExists,
            basalt::ErrorKind::TableDisabled => ErrorKind::TableDisabled,
            basalt::ErrorKind::TableEnabled => ErrorKind::TableEnabled,
            basalt::ErrorKind::NoSuchFamily => ErrorKind::NoSuchFamily,
            basalt::ErrorKind::InvalidArgument | basalt::ErrorKind::FilterSyntax => {
                ErrorKind::InvalidArgument
            }
            _ => ErrorKind::Other,
        };
        AdminError {
            kind,
            subject: e.subject().map(str::to_string),
            // Version 1 fills `table` for `no_such_family` only.
            table: (core == basalt::ErrorKind::NoSuchFamily)
                .then(|| e.table().map(str::to_string))
                .flatten(),
            message: e.detail(),
        }
    }
}

impl AdminError {
    /// The core kind this failure stands for; `None` for the protocol's own
    /// kinds (`unsupported_version`, `bad_request`) and for `other`, which
    /// version 1 does not break down.
    pub fn core_kind(&self) -> Option<basalt::ErrorKind> {
        match self.kind {
            ErrorKind::TableNotFound => Some(basalt::ErrorKind::TableNotFound),
            ErrorKind::TableExists => Some(basalt::ErrorKind::TableExists),
            ErrorKind::TableDisabled => Some(basalt::ErrorKind::TableDisabled),
            ErrorKind::TableEnabled => Some(basalt::ErrorKind::TableEnabled),
            ErrorKind::NoSuchFamily => Some(basalt::ErrorKind::NoSuchFamily),
            ErrorKind::InvalidArgument => Some(basalt::ErrorKind::InvalidArgument),
            ErrorKind::UnsupportedVersion | ErrorKind::BadRequest | ErrorKind::Other => None,
        }
    }
}

/// The response document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Response {
    /// The version the server answered in.
    pub version: u32,
    /// The answer, when the operation succeeded.
    #[serde(default)]
    pub ok: Option<Reply>,
    /// The failure, when it did not.
    #[serde(default)]
    pub error: Option<AdminError>,
}

/// Decodes a request document, runs it and encodes the response. Errors of
/// the document itself (not JSON, unknown version or operation) are
/// answered in the response too, with kind `unsupported_version` or
/// `bad_request`.
pub fn execute(db: &Database, request: &[u8]) -> Vec<u8> {
    let outcome = decode_request(request).and_then(|op| db.execute(op).map_err(AdminError::from));
    let response = match outcome {
        Ok(reply) => Response {
            version: VERSION,
            ok: Some(reply),
            error: None,
        },
        Err(e) => Response {
            version: VERSION,
            ok: None,
            error: Some(e),
        },
    };
    serde_json::to_vec(&response).unwrap_or_else(|e| {
        format!(
            r#"{{"version":{VERSION},"error":{{"kind":"other","message":"cannot encode the response: {}"}}}}"#,
            e.to_string().replace(['"', '\\'], "'")
        )
        .into_bytes()
    })
}

fn decode_request(request: &[u8]) -> Result<Op, AdminError> {
    let doc: serde_json::Value = serde_json::from_slice(request).map_err(|e| {
        AdminError::new(
            ErrorKind::BadRequest,
            format!("admin request is not JSON: {e}"),
        )
    })?;
    match doc.get("version").and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(v) => {
            return Err(AdminError::new(
                ErrorKind::UnsupportedVersion,
                format!(
                "admin protocol version {v} is not supported; this server speaks version {VERSION}"
            ),
            ))
        }
        None => {
            return Err(AdminError::new(
                ErrorKind::BadRequest,
                "admin request has no numeric \"version\"",
            ))
        }
    }
    let request: Request = serde_json::from_value(doc)
        .map_err(|e| AdminError::new(ErrorKind::BadRequest, format!("bad admin request: {e}")))?;
    Ok(request.op)
}

/// Why a remote admin call failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminCallError {
    /// The call did not get through (connection, Thrift errors).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The server carried out the call and the operation failed.
    #[error(transparent)]
    Admin(#[from] AdminError),
}

impl Client {
    /// Sends one admin operation (`basaltAdmin`) and returns its reply.
    pub fn admin(&mut self, op: Op) -> Result<Reply, AdminCallError> {
        let request = Request {
            version: VERSION,
            op,
        };
        let body = serde_json::to_vec(&request)
            .map_err(|e| ClientError::Protocol(format!("cannot encode admin request: {e}")))?;
        let answer: ClientResult<Bytes> = self.call(
            METHOD,
            Value::Struct(vec![(1, Value::Binary(Bytes::from(body)))]),
        );
        let answer = answer?;
        let response: Response = serde_json::from_slice(&answer)
            .map_err(|e| ClientError::Protocol(format!("bad admin response: {e}")))?;
        match (response.ok, response.error) {
            (Some(reply), None) => Ok(reply),
            (_, Some(e)) => Err(AdminCallError::Admin(e)),
            (None, None) => Err(ClientError::Protocol("empty admin response".into()).into()),
        }
    }
}

/// The server side: decodes the argument struct and answers field 0.
pub(crate) fn serve(db: &Database, body: Value) -> Result<Value, String> {
    let Value::Struct(fields) = body else {
        return Err("arguments are not a struct".into());
    };
    let request = fields
        .into_iter()
        .find_map(|(id, v)| match (id, v) {
            (1, Value::Binary(b)) => Some(b),
            _ => None,
        })
        .ok_or_else(|| "required argument request (1: binary) is missing".to_string())?;
    Ok(Value::Binary(Bytes::from(execute(db, &request))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(db: &Database, doc: &str) -> serde_json::Value {
        serde_json::from_slice(&execute(db, doc.as_bytes())).unwrap()
    }

    #[test]
    fn cluster_operations_are_version_one_documents_refused_in_one_process() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        for op in [
            r#"{"version":1,"op":"move","region":"0123456789abcdef0123456789abcdef"}"#,
            r#"{"version":1,"op":"move","region":"0123456789abcdef0123456789abcdef","server":"h,1,2"}"#,
            r#"{"version":1,"op":"assign","region":"0123456789abcdef0123456789abcdef"}"#,
            r#"{"version":1,"op":"unassign","region":"0123456789abcdef0123456789abcdef"}"#,
        ] {
            let answer = run(&db, op);
            assert_eq!(
                answer["error"]["kind"], "invalid_argument",
                "{op}: {answer}"
            );
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.contains("needs a cluster"), "{message}");
        }
    }

    #[test]
    fn balance_runs_in_one_process_and_its_switch_travels_as_version_one_documents() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let ran = run(&db, r#"{"version":1,"op":"balance"}"#);
        assert_eq!(ran["ok"]["reply"], "balanced", "{ran}");
        assert_eq!(ran["ok"]["ran"], true);
        assert_eq!(ran["ok"]["moved"], 0);
        let switched = run(&db, r#"{"version":1,"op":"balance_switch","on":false}"#);
        assert_eq!(switched["ok"]["reply"], "switch", "{switched}");
        assert_eq!(switched["ok"]["previous"], true);
        let refused = run(&db, r#"{"version":1,"op":"balance","force":true}"#);
        assert_eq!(refused["ok"]["ran"], false, "{refused}");
        assert!(refused["ok"]["reason"]
            .as_str()
            .unwrap()
            .contains("switch is off"));
        let enabled = run(&db, r#"{"version":1,"op":"balancer_enabled"}"#);
        assert_eq!(enabled["ok"]["previous"], false, "{enabled}");
    }

    #[test]
    fn a_one_process_status_document_has_no_cluster_field() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let answer = run(&db, r#"{"version":1,"op":"status"}"#);
        assert_eq!(answer["ok"]["reply"], "status");
        assert!(answer["ok"].get("cluster").is_none(), "{answer}");
    }

    #[test]
    fn a_cluster_status_document_reads_back_into_the_typed_reply() {
        let doc = r#"{"reply":"status","tables":1,"regions":2,"read_requests":0,"write_requests":0,
            "cluster":{"master":"m,16000,1","servers":[{"name":"rs1,16020,5","regions":[]}],
            "dead_servers":["rs2,16020,4"]}}"#;
        let Reply::Status(status) = serde_json::from_str(doc).unwrap() else {
            panic!("not a status");
        };
        let cluster = status.cluster.unwrap();
        assert_eq!(cluster.servers[0].name, "rs1,16020,5");
        assert_eq!(cluster.servers[0].load, None);
        assert_eq!(cluster.dead_servers, ["rs2,16020,4"]);
        assert!(cluster.in_transition.is_empty());
    }
}
