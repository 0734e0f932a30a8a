//! `ClientMetaService`: how HBase 2.5+ clients bootstrap without
//! ZooKeeper (`hbase.client.registry.impl` = the RPC registry). They ask
//! any server they know for the cluster id, the masters and where
//! `hbase:meta` is; Basalt is one process, so every answer names it.
//!
//! Every method of the service is served.

use crate::call::{encode, Call, Method};
use crate::error::RpcError;
use crate::meta;
use crate::proto::hbase::EmptyMsg;
use crate::proto::registry as pb;

/// The methods served.
pub const METHODS: &[Method] = &[
    Method {
        name: "GetClusterId",
        handler: get_cluster_id,
    },
    Method {
        name: "GetActiveMaster",
        handler: get_active_master,
    },
    Method {
        name: "GetMasters",
        handler: get_masters,
    },
    Method {
        name: "GetMetaRegionLocations",
        handler: get_meta_region_locations,
    },
    Method {
        name: "GetBootstrapNodes",
        handler: get_bootstrap_nodes,
    },
];

fn get_cluster_id(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    Call::decode::<EmptyMsg>(param, "GetClusterIdRequest")?;
    Ok(encode(&pb::GetClusterIdResponse {
        cluster_id: Some(call.ctx.identity.cluster_id.clone()),
    }))
}

fn get_active_master(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    Call::decode::<EmptyMsg>(param, "GetActiveMasterRequest")?;
    Ok(encode(&pb::GetActiveMasterResponse {
        server_name: Some(call.ctx.identity.master()),
    }))
}

/// One master, the active one: there are no standbys.
fn get_masters(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    Call::decode::<EmptyMsg>(param, "GetMastersRequest")?;
    Ok(encode(&pb::GetMastersResponse {
        master_servers: vec![pb::GetMastersResponseEntry {
            server_name: Some(call.ctx.identity.master()),
            is_active: Some(true),
        }],
    }))
}

/// `hbase:meta` is served by this process's region server (built from
/// Basalt's catalog on every read, see [`crate::meta`]).
fn get_meta_region_locations(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    Call::decode::<EmptyMsg>(param, "GetMetaRegionLocationsRequest")?;
    Ok(encode(&pb::GetMetaRegionLocationsResponse {
        meta_locations: vec![pb::RegionLocation {
            region_info: Some(meta::meta_region_info()),
            server_name: Some(call.ctx.identity.region_server()),
            seq_num: Some(0),
        }],
    }))
}

/// The region server is the one node a client can bootstrap from next
/// time (the master port serves the same registry, but HBase hands out
/// region servers here).
fn get_bootstrap_nodes(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    Call::decode::<EmptyMsg>(param, "GetBootstrapNodesRequest")?;
    Ok(encode(&pb::GetBootstrapNodesResponse {
        server_name: vec![call.ctx.identity.region_server()],
    }))
}
