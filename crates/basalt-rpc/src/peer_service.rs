//! `BasaltRegionService`: region calls between Basalt's own region
//! servers, on the region server port beside HBase's services
//! (docs/region-calls.md).
//!
//! 1. A gateway's `Table` on server A meets a region open on server B and
//!    hands a `RegionCall` to the locator's [`RegionCaller`]: here,
//!    [`RpcRegionCaller`].
//! 2. The caller encodes `(table, region id, call)` with postcard into the
//!    `payload` of one `RegionCallRequest` and sends it as method `Call`
//!    on a pooled connection to B (the blocking [`RpcClient`], with a
//!    timeout on connecting, writing and reading).
//! 3. B's server dispatches it like any call, on its blocking pool;
//!    [`call`] decodes the payload and runs
//!    [`Database::serve_region_call`](basalt::Database::serve_region_call).
//! 4. The answer, `Result<RegionAnswer, RemoteError>`, goes back postcard
//!    encoded in `RegionCallResponse.payload`: engine failures travel
//!    inside it with their kind; an RPC exception means the call itself
//!    could not be read or run.
//!
//! HBase's clients never name this service; only Basalt servers of the
//! same version speak it (postcard is not self-describing: both sides
//! must agree on every type).

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;

use basalt::{Error, RegionAnswer, RegionCall, RegionCaller, RemoteError, Result, ServerAddress};

use crate::call::{encode, Call, Method};
use crate::client::RpcClient;
use crate::error::RpcError;

/// The service's name in the connection header.
pub const SERVICE: &str = "BasaltRegionService";

/// The one method.
pub const CALL: &str = "Call";

/// The methods of `BasaltRegionService`.
pub const METHODS: &[Method] = &[Method {
    name: CALL,
    handler: call,
}];

/// `Call`'s request: the postcard encoding of `(table, region id, call)`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionCallRequest {
    /// `(String, u64, RegionCall)`, postcard encoded.
    #[prost(bytes = "bytes", tag = "1")]
    pub payload: Bytes,
}

/// `Call`'s answer: the postcard encoding of
/// `Result<RegionAnswer, RemoteError>`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionCallResponse {
    /// `Result<RegionAnswer, RemoteError>`, postcard encoded.
    #[prost(bytes = "bytes", tag = "1")]
    pub payload: Bytes,
}

/// Encodes a call's payload.
pub fn encode_call(table: &str, region_id: u64, call: &RegionCall) -> Result<Bytes> {
    postcard::to_stdvec(&(table, region_id, call))
        .map(Bytes::from)
        .map_err(|e| Error::invalid(format!("encoding a region call failed: {e}")))
}

/// Decodes a call's payload, naming what did not decode.
pub fn decode_call(payload: &[u8]) -> std::result::Result<(String, u64, RegionCall), RpcError> {
    postcard::from_bytes(payload)
        .map_err(|e| RpcError::undecodable("BasaltRegionService.Call payload", e))
}

/// Encodes an answer's payload.
pub fn encode_answer(answer: &std::result::Result<RegionAnswer, RemoteError>) -> Result<Bytes> {
    postcard::to_stdvec(answer)
        .map(Bytes::from)
        .map_err(|e| Error::invalid(format!("encoding a region call's answer failed: {e}")))
}

/// Decodes an answer's payload.
pub fn decode_answer(payload: &[u8]) -> Result<std::result::Result<RegionAnswer, RemoteError>> {
    postcard::from_bytes(payload).map_err(|e| {
        Error::invalid(format!(
            "a region call's answer does not decode ({e}): do both servers run the same \
             Basalt version?"
        ))
    })
}

/// `BasaltRegionService.Call`: one region call, run on a region open here.
fn call(call: &mut Call<'_>, param: &[u8]) -> std::result::Result<Vec<u8>, RpcError> {
    let request: RegionCallRequest = Call::decode(param, "RegionCallRequest")?;
    let (table, region_id, region_call) = decode_call(&request.payload)?;
    let answer = call
        .ctx
        .db
        .serve_region_call(&table, region_id, region_call)
        .map_err(RemoteError::from);
    let payload = encode_answer(&answer).map_err(RpcError::from)?;
    Ok(encode(&RegionCallResponse { payload }))
}

/// How long a region call may take by default, connecting included
/// (HBase's `hbase.rpc.timeout` is 60 s; a gateway thread held that long
/// by one dead server is too long here).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Idle connections kept per server: enough for a few gateway threads
/// calling at once; more connect and are closed after their call.
const IDLE_CONNECTIONS_PER_SERVER: usize = 4;

/// Carries region calls over native RPC to other servers'
/// `BasaltRegionService`: the [`RegionCaller`] a cluster installs in its
/// locator.
///
/// Connections are pooled per server (a few idle ones each); one that
/// fails is dropped and the next call connects again. Every call is
/// bounded by the timeout: connecting, sending and each wait for the
/// answer. A failure to reach a server or to hear its answer is an
/// `Io` error naming the server's address, so the locator refreshes its
/// routes; the call is never sent twice by this caller.
#[derive(Debug)]
pub struct RpcRegionCaller {
    idle: Mutex<HashMap<ServerAddress, Vec<RpcClient>>>,
    timeout: Duration,
}

impl Default for RpcRegionCaller {
    fn default() -> Self {
        RpcRegionCaller::new(DEFAULT_CALL_TIMEOUT)
    }
}

impl RpcRegionCaller {
    /// A caller whose calls each give up after `timeout`.
    pub fn new(timeout: Duration) -> Self {
        RpcRegionCaller {
            idle: Mutex::new(HashMap::new()),
            timeout,
        }
    }

    /// The timeout of each call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Idle connections kept to `server` now.
    pub fn idle_connections(&self, server: &ServerAddress) -> usize {
        self.idle.lock().get(server).map_or(0, Vec::len)
    }

    /// An idle connection to `server` that the server has not closed, or a
    /// new one.
    fn connection(&self, server: &ServerAddress) -> Result<RpcClient> {
        loop {
            let pooled = self.idle.lock().get_mut(server).and_then(Vec::pop);
            match pooled {
                // A connection the server closed while it idled (its idle
                // timeout, a restart) is dropped here, before a call is
                // sent on it: a call is never sent twice.
                Some(client) if client.is_open() => return Ok(client),
                Some(_) => continue,
                None => break,
            }
        }
        let addr = resolve(server)?;
        RpcClient::connect_timeout(&addr, SERVICE, false, self.timeout)
            .map_err(|e| transport(server, "connecting", &e.message))
    }

    fn give_back(&self, server: &ServerAddress, client: RpcClient) {
        let mut idle = self.idle.lock();
        let kept = idle.entry(server.clone()).or_default();
        if kept.len() < IDLE_CONNECTIONS_PER_SERVER {
            kept.push(client);
        }
    }
}

impl RegionCaller for RpcRegionCaller {
    fn call(
        &self,
        server: &ServerAddress,
        table: &str,
        region_id: u64,
        call: RegionCall,
    ) -> Result<RegionAnswer> {
        let name = call.name();
        let request = RegionCallRequest {
            payload: encode_call(table, region_id, &call)?,
        };
        let mut client = self.connection(server)?;
        let answer = match client.call(CALL, &request, &[]) {
            Ok(answer) => answer,
            // The connection is dropped: after a failure its state is
            // unknown (a late answer could still arrive on it).
            Err(e) if e.do_not_retry => {
                return Err(Error::invalid(format!(
                    "region server {server} refused the region call {name} on region \
                     {region_id} of table {table}: {e}"
                )))
            }
            Err(e) => {
                return Err(transport(
                    server,
                    &format!("the region call {name} on region {region_id} of table {table}"),
                    &e.message,
                ))
            }
        };
        let response: RegionCallResponse = answer.decode().map_err(|e| {
            Error::invalid(format!(
                "region server {server} answered the region call {name} with a malformed \
                 message: {e}"
            ))
        })?;
        self.give_back(server, client);
        decode_answer(&response.payload)?.map_err(RemoteError::into_error)
    }
}

/// The first address `server`'s host resolves to.
fn resolve(server: &ServerAddress) -> Result<SocketAddr> {
    (server.host(), server.port())
        .to_socket_addrs()
        .map_err(|e| transport(server, "resolving its address", &e.to_string()))?
        .next()
        .ok_or_else(|| transport(server, "resolving its address", "no address found"))
}

/// A failure to reach `server`: `Io`, its path the server's address.
fn transport(server: &ServerAddress, doing: &str, message: &str) -> Error {
    Error::io(
        server.to_string(),
        io::Error::other(format!(
            "region server {server} could not be reached ({doing}): {message}"
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt::{Get, Scan};

    #[test]
    fn a_call_payload_decodes_to_what_was_encoded() {
        let call = RegionCall::OpenScanner {
            scan: Scan::new().start_row("m").limit(3),
        };
        let payload = encode_call("t", 9, &call).unwrap_or_default();
        let decoded = decode_call(&payload).ok();
        assert_eq!(decoded, Some(("t".to_string(), 9, call)));
    }

    #[test]
    fn a_truncated_payload_is_refused_naming_the_payload() {
        let payload = encode_call("t", 9, &RegionCall::Get(Get::new("row"))).unwrap_or_default();
        let error = decode_call(&payload[..payload.len() - 1]).err();
        let message = error.map(|e| e.message).unwrap_or_default();
        assert!(
            message.contains("malformed BasaltRegionService.Call payload"),
            "{message}"
        );
    }

    #[test]
    fn a_server_that_does_not_listen_is_an_io_error_naming_it() {
        // A port from a listener that is closed again: nothing listens.
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .ok();
        let Some(addr) = addr else { return };
        let server = ServerAddress::from(addr);
        let caller = RpcRegionCaller::new(Duration::from_secs(5));
        let error = caller
            .call(&server, "t", 1, RegionCall::Get(Get::new("r")))
            .err();
        let error = error.map(|e| (e.kind(), e.to_string()));
        let (kind, text) = error.unwrap_or((basalt::ErrorKind::InvalidArgument, String::new()));
        assert_eq!(kind, basalt::ErrorKind::Io);
        assert!(text.contains(&server.to_string()), "{text}");
    }
}
