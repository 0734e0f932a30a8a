//! `BasaltClusterService`: how the processes of a Basalt cluster talk to
//! each other about the cluster itself (not about rows: that is
//! `BasaltRegionService`). It rides on the native RPC server every
//! process already runs, so a cluster needs no extra port.
//!
//! | method | served by | does |
//! |---|---|---|
//! | `MasterCall` | every process (a region server passes it on to the active master) | DDL, move, assign, balance, status: `basalt::cluster::MasterCall` |
//! | `OpenRegion` | region servers | opens a region as the catalog assigns it to this server |
//! | `CloseRegion` | region servers | flushes and closes a region |
//! | `PrepareSplit` | region servers | step b of a split: closes the parent for writes, flushes it, seeds the daughters (`basalt::cluster::PrepareSplit` → `SplitPlan`) |
//! | `PrepareMerge` | region servers | step b of a merge (`basalt::cluster::PrepareMerge`) |
//! | `SnapshotRegion` | region servers | what a snapshot records of a region held there: flushed if asked, its files per family (`basalt::cluster::SnapshotRegionRequest`, docs/snapshots.md) |
//! | `RegionLoads` | region servers | the request rates and sizes of the regions held there (`basalt::cluster::RegionLoadReport`), for the balancer |
//! | `ClosedThrough` | region servers | the sequence id a region the master closed there (move, alter, disable) was flushed through (`null` if it was not), so a family added later counts log edits only from above it |
//!
//! Each request and answer is one protobuf message with one `bytes`
//! field (1) holding JSON: the request's fields, and the answer
//! `{"ok": ...}` or `{"err": {"kind": ..., "message": ...}}` with the
//! error's stable kind (`docs/cluster.md`, "Wire").

use std::collections::HashMap;
use std::net::ToSocketAddrs;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use basalt::cluster::{
    MasterAnswer, MasterCall, MasterControl, PrepareMerge, PrepareSplit, RegionLoadReport,
    RegionServerControl, ServerName, SnapshotRegionRequest, SplitPlan,
};
use basalt_types::{Error, ErrorKind, Result};

use crate::call::{Call, Method};
use crate::client::RpcClient;
use crate::error::RpcError;

/// The service's name in the connection header.
pub const CLUSTER_SERVICE: &str = "BasaltClusterService";

/// The methods.
pub const METHODS: &[Method] = &[
    Method {
        name: "MasterCall",
        handler: master_call,
    },
    Method {
        name: "OpenRegion",
        handler: open_region,
    },
    Method {
        name: "CloseRegion",
        handler: close_region,
    },
    Method {
        name: "PrepareSplit",
        handler: prepare_split,
    },
    Method {
        name: "PrepareMerge",
        handler: prepare_merge,
    },
    Method {
        name: "RegionLoads",
        handler: region_loads,
    },
    Method {
        name: "ClosedThrough",
        handler: closed_through,
    },
    Method {
        name: "SnapshotRegion",
        handler: snapshot_region,
    },
];

/// The one message of the service: JSON in field 1.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClusterPayload {
    /// The JSON document.
    #[prost(bytes = "vec", tag = "1")]
    pub json: Vec<u8>,
}

/// Which region to open or close.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RegionRequest {
    table: String,
    region: u64,
}

/// An error as it travels: its kind and message.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct WireError {
    kind: ErrorKind,
    message: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum WireResult<T> {
    Ok(T),
    Err(WireError),
}

fn decode_json<T: DeserializeOwned>(param: &[u8], what: &str) -> Result<T, RpcError> {
    let payload: ClusterPayload = Call::decode(param, what)?;
    serde_json::from_slice(&payload.json).map_err(|e| RpcError::undecodable(what, e))
}

fn answer<T: Serialize>(result: Result<T>) -> Result<Vec<u8>, RpcError> {
    let wire = match result {
        Ok(value) => WireResult::Ok(value),
        // The kind's own text (`kind_message`), not `to_string`: the
        // receiver's `from_kind` rebuilds the same error, whose display
        // would otherwise repeat its prefix ("table not found: table not
        // found: t"). A receiver of an earlier version reads it alike.
        Err(e) => WireResult::Err(WireError {
            kind: e.kind(),
            message: e.kind_message(),
        }),
    };
    let json = serde_json::to_vec(&wire)
        .map_err(|e| RpcError::do_not_retry(format!("answer does not serialize: {e}")))?;
    Ok(prost::Message::encode_to_vec(&ClusterPayload { json }))
}

fn master_call(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: MasterCall = decode_json(param, "MasterCall")?;
    answer(call.ctx.db.master_call(request))
}

fn open_region(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: RegionRequest = decode_json(param, "OpenRegion")?;
    answer(
        call.ctx
            .db
            .open_assigned_region(&request.table, request.region),
    )
}

fn close_region(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: RegionRequest = decode_json(param, "CloseRegion")?;
    answer(call.ctx.db.close_assigned_region(request.region))
}

fn prepare_split(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: PrepareSplit = decode_json(param, "PrepareSplit")?;
    answer(call.ctx.db.prepare_split_region(&request))
}

fn snapshot_region(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: SnapshotRegionRequest = decode_json(param, "SnapshotRegion")?;
    answer(call.ctx.db.snapshot_region_files(&request))
}

fn prepare_merge(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: PrepareMerge = decode_json(param, "PrepareMerge")?;
    answer(call.ctx.db.prepare_merge_regions(&request))
}

/// The request carries nothing (`{}`); decoding it still refuses garbage.
#[derive(Debug, Default, Serialize, Deserialize)]
struct NoArguments {}

fn region_loads(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let _: NoArguments = decode_json(param, "RegionLoads")?;
    answer(Ok(call.ctx.db.region_load_reports()))
}

fn closed_through(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: RegionRequest = decode_json(param, "ClosedThrough")?;
    answer(call.ctx.db.closed_through(request.region))
}

/// Calls of the service to other processes: one connection per address,
/// reopened after a failure.
#[derive(Debug)]
pub struct ClusterClient {
    connections: Mutex<HashMap<String, Arc<Mutex<Option<RpcClient>>>>>,
    timeout: Duration,
}

impl ClusterClient {
    /// A client whose calls give up after `timeout`.
    pub fn new(timeout: Duration) -> ClusterClient {
        ClusterClient {
            connections: Mutex::new(HashMap::new()),
            timeout,
        }
    }

    /// Calls `method` at `address` (`host:port`) with `request`.
    pub fn call<Q: Serialize, A: DeserializeOwned>(
        &self,
        address: &str,
        method: &str,
        request: &Q,
    ) -> Result<A> {
        let json = serde_json::to_vec(request)
            .map_err(|e| Error::invalid(format!("{method} does not serialize: {e}")))?;
        let slot = Arc::clone(
            self.connections
                .lock()
                .entry(address.to_string())
                .or_default(),
        );
        let mut connection = slot.lock();
        let unreachable = |e: RpcError| {
            Error::NotServingRegion(format!(
                "cluster call {method} to {address} failed: {}",
                e.message
            ))
        };
        if connection.is_none() {
            let socket = address
                .to_socket_addrs()
                .ok()
                .and_then(|mut all| all.next())
                .ok_or_else(|| Error::invalid(format!("cannot resolve {address}")))?;
            let client = RpcClient::connect_timeout(&socket, CLUSTER_SERVICE, false, self.timeout)
                .map_err(unreachable)?;
            *connection = Some(client);
        }
        let Some(client) = connection.as_mut() else {
            return Err(Error::NotServingRegion(format!(
                "no connection to {address}"
            )));
        };
        let result = client.call(method, &ClusterPayload { json }, &[]);
        let answer = match result {
            Ok(answer) => answer,
            Err(e) => {
                // The connection may be broken: the next call reconnects.
                *connection = None;
                return Err(unreachable(e));
            }
        };
        let payload: ClusterPayload = answer.decode().map_err(|e| {
            Error::invalid(format!("{method} answer from {address}: {}", e.message))
        })?;
        let wire: WireResult<A> = serde_json::from_slice(&payload.json).map_err(|e| {
            Error::invalid(format!(
                "{method} answer from {address} does not parse: {e}"
            ))
        })?;
        match wire {
            WireResult::Ok(value) => Ok(value),
            WireResult::Err(e) => Err(Error::from_kind(e.kind, e.message)),
        }
    }
}

/// [`RegionServerControl`] over the network: the master's calls to region
/// servers, addressed by their HBase server names.
#[derive(Debug)]
pub struct RpcRegionServerControl {
    client: ClusterClient,
    /// Load reports on their own connections with a short bound: they
    /// must not queue behind an open that replays a log, nor stall status
    /// on a paused server.
    loads: ClusterClient,
}

/// How long a load report may take before status shows the server
/// without load and the balancer evens counts only.
pub const LOAD_REPORT_TIMEOUT: Duration = Duration::from_secs(2);

impl RpcRegionServerControl {
    /// Calls that give up after `timeout` (an open replays logs and
    /// flushes: allow seconds).
    pub fn new(timeout: Duration) -> RpcRegionServerControl {
        RpcRegionServerControl {
            client: ClusterClient::new(timeout),
            loads: ClusterClient::new(LOAD_REPORT_TIMEOUT.min(timeout)),
        }
    }

    fn region_call(&self, server: &str, method: &str, table: &str, region: u64) -> Result<()> {
        let address = ServerName::parse(server)?.address();
        let request = RegionRequest {
            table: table.to_string(),
            region,
        };
        self.client.call(&address, method, &request)
    }
}

impl RegionServerControl for RpcRegionServerControl {
    fn open_region(&self, server: &str, table: &str, region: u64) -> Result<()> {
        self.region_call(server, "OpenRegion", table, region)
    }

    fn close_region(&self, server: &str, table: &str, region: u64) -> Result<()> {
        self.region_call(server, "CloseRegion", table, region)
    }

    fn prepare_split(&self, server: &str, request: &PrepareSplit) -> Result<SplitPlan> {
        let address = ServerName::parse(server)?.address();
        self.client.call(&address, "PrepareSplit", request)
    }

    fn prepare_merge(&self, server: &str, request: &PrepareMerge) -> Result<()> {
        let address = ServerName::parse(server)?.address();
        self.client.call(&address, "PrepareMerge", request)
    }

    fn region_loads(&self, server: &str) -> Result<Vec<RegionLoadReport>> {
        let address = ServerName::parse(server)?.address();
        self.loads.call(&address, "RegionLoads", &NoArguments {})
    }

    fn closed_through(&self, server: &str, region: u64) -> Result<Option<u64>> {
        let address = ServerName::parse(server)?.address();
        let request = RegionRequest {
            table: String::new(),
            region,
        };
        match self.client.call(&address, "ClosedThrough", &request) {
            Ok(through) => Ok(through),
            // A server of an earlier version (a rolling upgrade) cannot
            // say: the close goes on as it did before this call existed.
            Err(e) if e.to_string().contains("is not served by Basalt") => {
                tracing::warn!(server, region, error = %e, "region server cannot say what a closed region was flushed through");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    fn snapshot_region(
        &self,
        server: &str,
        request: &SnapshotRegionRequest,
    ) -> Result<Vec<basalt::snapshot::SnapshotStore>> {
        let address = ServerName::parse(server)?.address();
        self.client.call(&address, "SnapshotRegion", request)
    }
}

/// [`MasterControl`] over the network: a member's calls to the active
/// master, found by `locate` (ZooKeeper's `/hbase/master` in a cluster).
pub struct RpcMasterControl {
    client: ClusterClient,
    locate: Box<dyn Fn() -> Option<String> + Send + Sync>,
}

impl std::fmt::Debug for RpcMasterControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcMasterControl").finish_non_exhaustive()
    }
}

impl RpcMasterControl {
    /// Calls the master whose `host:port` `locate` answers (none: no
    /// active master right now), giving up after `timeout`.
    pub fn new(
        timeout: Duration,
        locate: impl Fn() -> Option<String> + Send + Sync + 'static,
    ) -> RpcMasterControl {
        RpcMasterControl {
            client: ClusterClient::new(timeout),
            locate: Box::new(locate),
        }
    }
}

impl MasterControl for RpcMasterControl {
    fn call(&self, call: MasterCall) -> Result<MasterAnswer> {
        let Some(address) = (self.locate)() else {
            return Err(Error::NotServingRegion(
                "no active master (none registered in ZooKeeper)".into(),
            ));
        };
        self.client.call(&address, "MasterCall", &call)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// What `ClusterClient::call` does with an answer's bytes.
    fn received<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
        let payload: ClusterPayload = prost::Message::decode(bytes).unwrap();
        match serde_json::from_slice::<WireResult<T>>(&payload.json).unwrap() {
            WireResult::Ok(value) => Ok(value),
            WireResult::Err(e) => Err(Error::from_kind(e.kind, e.message)),
        }
    }

    #[test]
    fn an_error_crosses_the_cluster_wire_and_reads_as_it_was_raised() {
        let raised = [
            Error::TableNotFound("t".into()),
            Error::NoSuchFamily {
                table: "t".into(),
                family: "f".into(),
            },
            Error::NotServingRegion("region r is closing".into()),
        ];
        for error in raised {
            let text = error.to_string();
            let bytes = answer::<()>(Err(error)).unwrap();
            let back = received::<()>(&bytes).unwrap_err();
            assert_eq!(back.to_string(), text);
        }
    }
}
