//! `ClientMetaService`'s messages (HBase's `Registry.proto` facts: names
//! and field numbers). Required fields are `Option`s, always set in
//! answers (see [`super::master`]).

use super::hbase::{RegionInfo, ServerName};

/// The answer to the connection registry preamble (`Regist`), sent by
/// HBase 2.6+ clients before any connection header.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetConnectionRegistryResponse {
    /// The cluster id.
    #[prost(string, optional, tag = "1")]
    pub cluster_id: Option<String>,
}

/// `GetClusterId`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetClusterIdResponse {
    /// The cluster id.
    #[prost(string, optional, tag = "1")]
    pub cluster_id: Option<String>,
}

/// `GetActiveMaster`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetActiveMasterResponse {
    /// The active master.
    #[prost(message, optional, tag = "1")]
    pub server_name: Option<ServerName>,
}

/// One master of `GetMasters`' answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetMastersResponseEntry {
    /// The master.
    #[prost(message, optional, tag = "1")]
    pub server_name: Option<ServerName>,
    /// Whether it is the active one.
    #[prost(bool, optional, tag = "2")]
    pub is_active: Option<bool>,
}

/// `GetMasters`' answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetMastersResponse {
    /// Every master.
    #[prost(message, repeated, tag = "1")]
    pub master_servers: Vec<GetMastersResponseEntry>,
}

/// Where a region is served (HBase's `RegionLocation`, with the required
/// sequence number always written: a plain prost field would leave out
/// the 0 `hbase:meta` answers with).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionLocation {
    /// The region.
    #[prost(message, optional, tag = "1")]
    pub region_info: Option<RegionInfo>,
    /// Its server.
    #[prost(message, optional, tag = "2")]
    pub server_name: Option<ServerName>,
    /// Sequence number at open.
    #[prost(int64, optional, tag = "3")]
    pub seq_num: Option<i64>,
}

/// `GetMetaRegionLocations`' answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetMetaRegionLocationsResponse {
    /// Where `hbase:meta`'s regions are.
    #[prost(message, repeated, tag = "1")]
    pub meta_locations: Vec<RegionLocation>,
}

/// `GetBootstrapNodes`' answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetBootstrapNodesResponse {
    /// Servers a client may ask next time instead of the configured ones.
    #[prost(message, repeated, tag = "1")]
    pub server_name: Vec<ServerName>,
}
