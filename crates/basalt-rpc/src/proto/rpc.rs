//! The RPC envelope: connection header, request and response headers,
//! exceptions (HBase's `RPC.proto` facts: names and field numbers).

use super::hbase::VersionInfo;

/// Who the client says it is (SIMPLE authentication: taken at its word).
#[derive(Clone, PartialEq, prost::Message)]
pub struct UserInformation {
    /// The user the calls run as.
    #[prost(string, optional, tag = "1")]
    pub effective_user: Option<String>,
    /// The user behind a proxy, if any.
    #[prost(string, optional, tag = "2")]
    pub real_user: Option<String>,
}

/// Sent once, after the preamble: which service the connection calls and
/// how cells travel.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ConnectionHeader {
    /// The caller.
    #[prost(message, optional, tag = "1")]
    pub user_info: Option<UserInformation>,
    /// `ClientService`, `MasterService`, `AdminService`, `ClientMetaService`.
    #[prost(string, optional, tag = "2")]
    pub service_name: Option<String>,
    /// Java class of the cell-block codec; absent means cells go inside
    /// the protobuf messages.
    #[prost(string, optional, tag = "3")]
    pub cell_block_codec_class: Option<String>,
    /// Java class of the cell-block compressor; absent means none.
    #[prost(string, optional, tag = "4")]
    pub cell_block_compressor_class: Option<String>,
    /// The client's version.
    #[prost(message, optional, tag = "5")]
    pub version_info: Option<VersionInfo>,
    /// Transport encryption (not offered).
    #[prost(string, optional, tag = "6")]
    pub rpc_crypto_cipher_transformation: Option<String>,
}

/// The answer to the `Securi` preamble: the principal the server runs as
/// (HBase spells the message `SecurityPreamableResponse`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityPreambleResponse {
    /// The server's full principal, `hbase/host@REALM`.
    #[prost(string, required, tag = "1")]
    pub server_principal: String,
}

/// Where a call's cell block ends.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CellBlockMeta {
    /// Length in bytes of the cell block after the message.
    #[prost(uint32, optional, tag = "1")]
    pub length: Option<u32>,
}

/// A failed call, as HBase's Java client reads it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExceptionResponse {
    /// Java class name, e.g. `org.apache.hadoop.hbase.TableNotFoundException`.
    #[prost(string, optional, tag = "1")]
    pub exception_class_name: Option<String>,
    /// The message (HBase puts the whole stack trace here).
    #[prost(string, optional, tag = "2")]
    pub stack_trace: Option<String>,
    /// Server host (for region-moved answers).
    #[prost(string, optional, tag = "3")]
    pub hostname: Option<String>,
    /// Server port.
    #[prost(int32, optional, tag = "4")]
    pub port: Option<i32>,
    /// True when retrying the same call cannot succeed.
    #[prost(bool, optional, tag = "5")]
    pub do_not_retry: Option<bool>,
    /// True when the server sheds load.
    #[prost(bool, optional, tag = "6")]
    pub server_overloaded: Option<bool>,
}

/// Precedes every call's parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RequestHeader {
    /// The client's id for the call; the answer carries it back.
    #[prost(uint32, optional, tag = "1")]
    pub call_id: Option<u32>,
    /// The method, e.g. `Get`.
    #[prost(string, optional, tag = "3")]
    pub method_name: Option<String>,
    /// True when a parameter message follows.
    #[prost(bool, optional, tag = "4")]
    pub request_param: Option<bool>,
    /// Present when a cell block follows the parameter.
    #[prost(message, optional, tag = "5")]
    pub cell_block_meta: Option<CellBlockMeta>,
    /// Call priority (ignored: one queue).
    #[prost(uint32, optional, tag = "6")]
    pub priority: Option<u32>,
    /// The client's timeout in milliseconds.
    #[prost(uint32, optional, tag = "7")]
    pub timeout: Option<u32>,
}

/// Precedes every answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseHeader {
    /// The call answered.
    #[prost(uint32, optional, tag = "1")]
    pub call_id: Option<u32>,
    /// Present when the call failed (then no message follows).
    #[prost(message, optional, tag = "2")]
    pub exception: Option<ExceptionResponse>,
    /// Present when a cell block follows the message.
    #[prost(message, optional, tag = "3")]
    pub cell_block_meta: Option<CellBlockMeta>,
}
