//! The byte layout of a native RPC connection (facts from HBase 2.x):
//!
//! ```text
//! client -> server, once:
//!   "HBas" u8 version (0) u8 auth (80 SIMPLE, 81 KERBEROS, 82 DIGEST)
//!   u32 length, ConnectionHeader
//! client -> server, per call:
//!   u32 length, varint length + RequestHeader, [varint length + parameter],
//!   [cell block of RequestHeader.cell_block_meta.length bytes]
//! server -> client, per call:
//!   u32 length, varint length + ResponseHeader, [varint length + answer],
//!   [cell block]
//! ```
//! Every length is checked against what is left of the frame before it is
//! used; failures name the part and offset.

use bytes::{Buf, BufMut, Bytes};
use prost::Message;

use crate::error::RpcError;
use crate::proto::rpc::{CellBlockMeta, ExceptionResponse, RequestHeader, ResponseHeader};

/// The preamble's magic.
pub const MAGIC: &[u8; 4] = b"HBas";
/// The only RPC version HBase 2.x speaks.
pub const RPC_VERSION: u8 = 0;
/// Auth byte for SIMPLE (the client is trusted to say who it is).
pub const AUTH_SIMPLE: u8 = 80;
/// The call id HBase uses for answers that belong to no call (a bad
/// preamble or header, just before the connection is closed).
pub const NO_CALL: u32 = u32::MAX;
/// Largest connection header accepted (HBase's are a few hundred bytes).
pub const MAX_CONNECTION_HEADER_BYTES: usize = 64 << 10;

/// The preamble an HBase 2.6+ client's `RpcConnectionRegistry` sends in
/// place of `HBas`, version and auth, to learn the cluster id before any
/// connection header (HBASE-25051). It is answered with one
/// [`encode_registry_response`] and the connection closes, as HBase does.
pub const REGISTRY_PREAMBLE: &[u8; 6] = b"Regist";

/// The answer to [`REGISTRY_PREAMBLE`]: a response frame with call id -1
/// holding a `GetConnectionRegistryResponse` (the cluster id).
pub fn encode_registry_response(cluster_id: &str) -> Vec<u8> {
    let message = crate::proto::registry::GetConnectionRegistryResponse {
        cluster_id: Some(cluster_id.to_string()),
    }
    .encode_to_vec();
    encode_response(NO_CALL, Ok((message.as_slice(), &[][..])))
}

/// Auth byte for KERBEROS (SASL GSSAPI).
pub const AUTH_KERBEROS: u8 = 81;
/// Auth byte for DIGEST (SASL DIGEST-MD5 with an HBase delegation token).
pub const AUTH_DIGEST: u8 = 82;

/// The preamble an HBase 2.6+ client sends, before its real one, to ask
/// which principal the server runs as when a service has several
/// candidates (HBASE-28321). Answered with
/// [`encode_security_preamble_response`]; the connection stays open.
pub const SECURITY_PREAMBLE: &[u8; 6] = b"Securi";

/// How a connection's client authenticates, from its preamble's last byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// The client names its user.
    Simple,
    /// SASL GSSAPI.
    Kerberos,
    /// SASL DIGEST-MD5 with a delegation token.
    Digest,
}

/// What a server without security answers a client that starts SASL:
/// SUCCESS then HBase's `SWITCH_TO_SIMPLE_AUTH` (-88); the client then
/// goes on as SIMPLE (if it allows falling back) after its first token,
/// which the server reads and drops.
pub const SWITCH_TO_SIMPLE_AUTH: [u8; 8] = [0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xA8];

/// Largest SASL token either side takes (HBase's decoder caps its fields
/// at 1 MiB; Kerberos tokens are a few KiB).
pub const MAX_SASL_TOKEN_BYTES: usize = 1 << 20;

/// The preamble's version and auth method; why it is refused otherwise
/// (the answer then closes the connection).
pub fn check_preamble(preamble: &[u8; 6]) -> Result<AuthMethod, RpcError> {
    if &preamble[..4] != MAGIC {
        return Err(RpcError::new(
            crate::error::BAD_REQUEST,
            format!(
                "expected the preamble \"HBas\", got {:?}",
                String::from_utf8_lossy(&preamble[..4])
            ),
            true,
        ));
    }
    if preamble[4] != RPC_VERSION {
        return Err(RpcError::new(
            crate::error::BAD_REQUEST,
            format!("RPC version {} is not supported (only 0)", preamble[4]),
            true,
        ));
    }
    match preamble[5] {
        AUTH_SIMPLE => Ok(AuthMethod::Simple),
        AUTH_KERBEROS => Ok(AuthMethod::Kerberos),
        AUTH_DIGEST => Ok(AuthMethod::Digest),
        other => Err(RpcError::new(
            "org.apache.hadoop.hbase.ipc.BadAuthException",
            format!(
                "authentication method {other} is not known: SIMPLE (80), KERBEROS (81) or DIGEST (82)"
            ),
            true,
        )),
    }
}

/// The answer to [`SECURITY_PREAMBLE`]: the server's principal, or, with
/// security off, HBase's `SecurityNotEnabledException`.
pub fn encode_security_preamble_response(principal: Option<&str>) -> Vec<u8> {
    match principal {
        Some(principal) => {
            let message = crate::proto::rpc::SecurityPreambleResponse {
                server_principal: principal.to_string(),
            }
            .encode_to_vec();
            encode_response(NO_CALL, Ok((message.as_slice(), &[][..])))
        }
        None => encode_response(
            NO_CALL,
            Err(&RpcError::new(
                "org.apache.hadoop.hbase.ipc.SecurityNotEnabledException",
                "security is not enabled on this server".to_string(),
                true,
            )),
        ),
    }
}

/// A SASL challenge to the client: SUCCESS (0), then the token.
pub fn encode_sasl_challenge(token: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + token.len());
    out.put_u32(0);
    out.put_u32(token.len() as u32);
    out.put_slice(token);
    out
}

/// A failed SASL exchange: ERROR (1), the exception's class and message,
/// each a length then UTF-8 (HBase's client refuses empty ones).
pub fn encode_sasl_error(class: &str, message: &str) -> Vec<u8> {
    let message = if message.is_empty() {
        "SASL authentication failed"
    } else {
        message
    };
    let mut out = Vec::with_capacity(12 + class.len() + message.len());
    out.put_u32(1);
    out.put_u32(class.len() as u32);
    out.put_slice(class.as_bytes());
    out.put_u32(message.len() as u32);
    out.put_slice(message.as_bytes());
    out
}

/// A call split into its parts.
#[derive(Debug)]
pub struct Request {
    /// The header.
    pub header: RequestHeader,
    /// The parameter's bytes (empty when the header says there is none).
    pub param: Bytes,
    /// The cell block's bytes (empty when none).
    pub cell_block: Bytes,
}

fn bad(what: &str, at: usize, len: usize) -> RpcError {
    RpcError::new(
        crate::error::BAD_REQUEST,
        format!("malformed request: {what} at offset {at} of a {len}-byte frame"),
        true,
    )
}

/// Reads a varint length and the bytes it counts from `frame` at `*at`.
/// With `overrun_reads_rest`, a length beyond the frame reads the rest of
/// it instead (see [`parameter`]).
fn delimited(
    frame: &Bytes,
    at: &mut usize,
    what: &str,
    overrun_reads_rest: bool,
) -> Result<Bytes, RpcError> {
    let mut rest = &frame[*at..];
    let before = rest.len();
    let len = prost::encoding::decode_varint(&mut rest)
        .map_err(|_| bad(&format!("{what} length"), *at, frame.len()))?;
    *at += before - rest.len();
    let left = frame.len() - *at;
    let len = match usize::try_from(len) {
        Ok(len) if len <= left => len,
        _ if overrun_reads_rest => left,
        _ => return Err(bad(what, *at, frame.len())),
    };
    let out = frame.slice(*at..*at + len);
    *at += len;
    Ok(out)
}

/// Reads the parameter: a varint length and that many bytes.
///
/// A length that overruns the frame when no cell block follows is read as
/// "the rest of the frame", which is what HBase's server does: its protobuf
/// reader stops at the end of the buffer whatever limit it was given. One
/// client relies on it: hbase-driver 1.1.1 writes the parameter's length
/// through a text round trip that turns every varint byte >= 0x80 into two
/// bytes, so any parameter of 128 bytes or more arrives with an inflated
/// length (the frame length itself is right).
fn parameter(frame: &Bytes, at: &mut usize, cell_block_len: usize) -> Result<Bytes, RpcError> {
    delimited(frame, at, "parameter", cell_block_len == 0)
}

/// Splits one frame (without its 4-byte length) into header, parameter and
/// cell block. The header is decoded; an error carries the call id when
/// the header was readable (`Err((Some(id), e))`) so the answer can name
/// the call.
pub fn split_request(frame: Bytes) -> Result<Request, (Option<u32>, RpcError)> {
    let mut at = 0;
    let header_bytes =
        delimited(&frame, &mut at, "request header", false).map_err(|e| (None, e))?;
    let header = RequestHeader::decode(header_bytes)
        .map_err(|e| (None, bad(&format!("request header ({e})"), 0, frame.len())))?;
    let call_id = header.call_id;
    let cell_block_len = header
        .cell_block_meta
        .as_ref()
        .and_then(|m| m.length)
        .unwrap_or(0) as usize;
    let param = if header.request_param.unwrap_or(false) {
        parameter(&frame, &mut at, cell_block_len).map_err(|e| (call_id, e))?
    } else {
        Bytes::new()
    };
    if cell_block_len != frame.len() - at {
        return Err((
            call_id,
            bad(
                &format!(
                    "cell block of {cell_block_len} bytes (the frame has {} left)",
                    frame.len() - at
                ),
                at,
                frame.len(),
            ),
        ));
    }
    let cell_block = frame.slice(at..);
    Ok(Request {
        header,
        param,
        cell_block,
    })
}

/// One answer, framed: the 4-byte length, the header, the message (when
/// the call succeeded) and the cell block.
pub fn encode_response(call_id: u32, outcome: Result<(&[u8], &[u8]), &RpcError>) -> Vec<u8> {
    let header = match outcome {
        Ok((_, cells)) => ResponseHeader {
            call_id: Some(call_id),
            exception: None,
            cell_block_meta: (!cells.is_empty()).then_some(CellBlockMeta {
                length: Some(cells.len() as u32),
            }),
        },
        Err(error) => ResponseHeader {
            call_id: Some(call_id),
            exception: Some(ExceptionResponse {
                exception_class_name: Some(error.class.clone()),
                stack_trace: Some(error.message.clone()),
                hostname: None,
                port: None,
                do_not_retry: Some(error.do_not_retry),
                server_overloaded: None,
            }),
            cell_block_meta: None,
        },
    };
    let header_len = header.encoded_len();
    let (message, cells) = match outcome {
        Ok((message, cells)) => (Some(message), cells),
        Err(_) => (None, &[][..]),
    };
    let body_len = prost::length_delimiter_len(header_len)
        + header_len
        + message.map_or(0, |m| prost::length_delimiter_len(m.len()) + m.len())
        + cells.len();
    let mut out = Vec::with_capacity(4 + body_len);
    out.put_u32(body_len as u32);
    // Encoding into a Vec cannot run out of room.
    let _ = header.encode_length_delimited(&mut out);
    if let Some(message) = message {
        prost::encoding::encode_varint(message.len() as u64, &mut out);
        out.put_slice(message);
    }
    out.put_slice(cells);
    out
}

/// Reads a whole response frame (tests and clients): header, message and
/// cell block.
pub fn split_response(mut frame: Bytes) -> Result<(ResponseHeader, Bytes, Bytes), RpcError> {
    let total = frame.len();
    let header = ResponseHeader::decode_length_delimited(&mut frame)
        .map_err(|e| bad(&format!("response header ({e})"), 0, total))?;
    if header.exception.is_some() {
        return Ok((header, Bytes::new(), Bytes::new()));
    }
    let cells_len = header
        .cell_block_meta
        .as_ref()
        .and_then(|m| m.length)
        .unwrap_or(0) as usize;
    if cells_len > frame.len() {
        return Err(bad("cell block", total - frame.len(), total));
    }
    let message_part = frame.split_to(frame.len() - cells_len);
    let mut m = message_part;
    let message = if m.has_remaining() {
        let len = prost::encoding::decode_varint(&mut m)
            .map_err(|_| bad("answer length", 0, total))? as usize;
        if len > m.len() {
            return Err(bad("answer", 0, total));
        }
        m.split_to(len)
    } else {
        Bytes::new()
    };
    Ok((header, message, frame))
}

/// One request, framed (tests and clients).
pub fn encode_request(
    call_id: u32,
    method: &str,
    param: &impl Message,
    cell_block: &[u8],
) -> Vec<u8> {
    let header = RequestHeader {
        call_id: Some(call_id),
        method_name: Some(method.to_string()),
        request_param: Some(true),
        cell_block_meta: (!cell_block.is_empty()).then_some(CellBlockMeta {
            length: Some(cell_block.len() as u32),
        }),
        priority: None,
        timeout: None,
    };
    let mut body = Vec::new();
    let _ = header.encode_length_delimited(&mut body);
    let _ = param.encode_length_delimited(&mut body);
    body.extend_from_slice(cell_block);
    let mut out = Vec::with_capacity(4 + body.len());
    out.put_u32(body.len() as u32);
    out.extend_from_slice(&body);
    out
}

/// The most memory one decoded protobuf field can take besides its bytes:
/// the largest message struct Basalt decodes (a repeated submessage is one
/// such struct per element, however few bytes it arrived in).
const MAX_DECODED_FIELD: usize = {
    use crate::proto::client as c;
    let sizes = [
        std::mem::size_of::<c::Action>(),
        std::mem::size_of::<c::RegionAction>(),
        std::mem::size_of::<c::MutationProto>(),
        std::mem::size_of::<c::Get>(),
        std::mem::size_of::<c::Scan>(),
        std::mem::size_of::<c::Condition>(),
        std::mem::size_of::<crate::proto::hbase::ColumnFamilySchema>(),
        std::mem::size_of::<crate::proto::hbase::TableSchema>(),
    ];
    let mut max = 0;
    let mut i = 0;
    while i < sizes.len() {
        if sizes[i] > max {
            max = sizes[i];
        }
        i += 1;
    }
    max + 64
};

/// An upper bound of the memory `message` takes once decoded, found by one
/// walk of its bytes before anything is decoded (as the Thrift gateway
/// meters its requests): every length-delimited field may be a submessage
/// (it is walked too when its bytes read as one) and is charged the
/// largest struct; scalars are charged 16 bytes (a `Vec` element at most);
/// bytes are charged once more (a copy), at their innermost level only. Nesting deeper than 64 charges
/// the rest as bytes.
pub fn decoded_size_bound(message: &[u8]) -> usize {
    fn walk(mut bytes: &[u8], depth: usize) -> Option<usize> {
        let mut total = 0usize;
        while !bytes.is_empty() {
            let key = prost::encoding::decode_varint(&mut bytes).ok()?;
            match key & 7 {
                0 => {
                    prost::encoding::decode_varint(&mut bytes).ok()?;
                    total += 16;
                }
                1 => {
                    bytes = bytes.get(8..)?;
                    total += 16;
                }
                5 => {
                    bytes = bytes.get(4..)?;
                    total += 16;
                }
                2 => {
                    let len =
                        usize::try_from(prost::encoding::decode_varint(&mut bytes).ok()?).ok()?;
                    let inner = bytes.get(..len)?;
                    bytes = &bytes[len..];
                    let nested = if depth < 64 {
                        walk(inner, depth + 1)
                    } else {
                        None
                    };
                    // A submessage is charged what its fields take; bytes
                    // (or what does not walk as a message) their length:
                    // each byte counts once, at its innermost level.
                    total += MAX_DECODED_FIELD + nested.unwrap_or(len);
                }
                _ => return None,
            }
        }
        Some(total)
    }
    // Bytes that do not walk as a message will not decode as one either;
    // charge them as bytes (the decoder refuses them).
    walk(message, 0).unwrap_or(message.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::hbase::TableName;
    use proptest::prelude::*;

    #[test]
    fn a_request_splits_into_header_parameter_and_cell_block() {
        let param = TableName {
            namespace: b"default".to_vec(),
            qualifier: b"t".to_vec(),
        };
        let framed = encode_request(7, "Get", &param, b"cells");
        let request = split_request(Bytes::from(framed[4..].to_vec())).unwrap();
        assert_eq!(request.header.call_id, Some(7));
        assert_eq!(request.header.method_name.as_deref(), Some("Get"));
        assert_eq!(TableName::decode(request.param).unwrap(), param);
        assert_eq!(&request.cell_block[..], b"cells");
    }

    #[test]
    fn an_answer_reads_back_with_its_cell_block() {
        let framed = encode_response(9, Ok((b"\x08\x01", b"xyz")));
        let (header, message, cells) = split_response(Bytes::from(framed[4..].to_vec())).unwrap();
        assert_eq!(header.call_id, Some(9));
        assert_eq!(&message[..], b"\x08\x01");
        assert_eq!(&cells[..], b"xyz");
    }

    #[test]
    fn a_cell_block_length_that_disagrees_with_the_frame_is_refused_with_the_call_id() {
        let mut framed = encode_request(3, "Get", &TableName::default(), b"abc");
        framed.push(0);
        let (id, error) = split_request(Bytes::from(framed[4..].to_vec())).unwrap_err();
        assert_eq!(id, Some(3));
        assert!(error.message.contains("cell block"), "{}", error.message);
    }

    #[test]
    fn an_overrunning_parameter_length_without_a_cell_block_reads_the_rest_of_the_frame() {
        let param = TableName {
            namespace: vec![b'n'; 100],
            qualifier: vec![b'q'; 100],
        };
        let framed = encode_request(5, "Get", &param, b"");
        let mut body = framed[4..].to_vec();
        // The parameter's varint (2 bytes for ~200) re-encoded the way
        // hbase-driver 1.1.1 does: each byte >= 0x80 as two UTF-8 bytes.
        let header_len = body[0] as usize + 1;
        let varint: Vec<u8> = body[header_len..header_len + 2].to_vec();
        let text: String = varint.iter().map(|&b| char::from(b)).collect();
        body.splice(header_len..header_len + 2, text.into_bytes());
        let request = split_request(Bytes::from(body)).unwrap();
        assert_eq!(TableName::decode(request.param).unwrap(), param);
    }

    #[test]
    fn the_registry_preamble_is_answered_with_the_cluster_id_under_call_id_minus_one() {
        let frame = encode_registry_response("cluster-7");
        let (header, message, cells) = split_response(Bytes::from(frame[4..].to_vec())).unwrap();
        assert_eq!(header.call_id, Some(u32::MAX));
        assert!(header.exception.is_none());
        assert!(cells.is_empty());
        let answer =
            crate::proto::registry::GetConnectionRegistryResponse::decode(&message[..]).unwrap();
        assert_eq!(answer.cluster_id.as_deref(), Some("cluster-7"));
        // It is not a connection preamble: alone it would be refused.
        assert!(check_preamble(REGISTRY_PREAMBLE).is_err());
    }

    #[test]
    fn preambles_name_their_auth_method_and_unknown_ones_are_refused() {
        assert_eq!(check_preamble(b"HBas\x00\x50").unwrap(), AuthMethod::Simple);
        assert_eq!(
            check_preamble(b"HBas\x00\x51").unwrap(),
            AuthMethod::Kerberos
        );
        assert_eq!(check_preamble(b"HBas\x00\x52").unwrap(), AuthMethod::Digest);
        assert!(check_preamble(b"HBaz\x00\x50").is_err());
        assert!(check_preamble(b"HBas\x01\x50").is_err());
        let unknown = check_preamble(b"HBas\x00\x53").unwrap_err();
        assert_eq!(
            unknown.class,
            "org.apache.hadoop.hbase.ipc.BadAuthException"
        );
    }

    #[test]
    fn many_tiny_submessages_are_charged_their_decoded_structs() {
        use crate::proto::client::{Action, MultiRequest, RegionAction};
        let request = MultiRequest {
            region_action: vec![RegionAction {
                action: vec![Action::default(); 1000],
                ..Default::default()
            }],
            ..Default::default()
        };
        let bytes = request.encode_to_vec();
        let bound = decoded_size_bound(&bytes);
        // A few bytes per action on the wire, a whole struct each decoded.
        assert!(bytes.len() < 4 * 1000, "{}", bytes.len());
        assert!(bound >= 1000 * std::mem::size_of::<Action>(), "{bound}");
    }

    #[test]
    fn a_large_value_is_charged_about_its_size_once() {
        use crate::proto::client::mutation_proto::column_value::QualifierValue;
        use crate::proto::client::{mutation_proto::ColumnValue, MutateRequest, MutationProto};
        let value = bytes::Bytes::from(vec![7u8; 1 << 20]);
        let request = MutateRequest {
            mutation: Some(MutationProto {
                row: Some(bytes::Bytes::from_static(b"r")),
                column_value: vec![ColumnValue {
                    family: bytes::Bytes::from_static(b"cf"),
                    qualifier_value: vec![QualifierValue {
                        value: Some(value),
                        ..Default::default()
                    }],
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let bound = decoded_size_bound(&request.encode_to_vec());
        assert!(
            (1 << 20..(1 << 20) + 64 * MAX_DECODED_FIELD).contains(&bound),
            "{bound}"
        );
    }

    proptest! {
        #[test]
        fn decoded_size_bounds_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decoded_size_bound(&bytes);
        }

        #[test]
        fn garbage_frames_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = split_request(Bytes::from(bytes.clone()));
            let _ = split_response(Bytes::from(bytes));
        }
    }
}
