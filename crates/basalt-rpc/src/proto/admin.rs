//! `AdminService`'s messages (HBase's `Admin.proto` facts: names and field
//! numbers). Required fields are `Option`s, always set in answers (see
//! [`super::master`]).

use super::cluster_status::RegionLoad;
use super::hbase::{RegionInfo, RegionSpecifier, ServerName, TableName};

/// `GetRegionInfo`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetRegionInfoRequest {
    /// The region.
    #[prost(message, optional, tag = "1")]
    pub region: Option<RegionSpecifier>,
    /// Also answer the compaction state.
    #[prost(bool, optional, tag = "2")]
    pub compaction_state: Option<bool>,
    /// Also answer the row a split would happen at.
    #[prost(bool, optional, tag = "3")]
    pub best_split_row: Option<bool>,
}

/// `GetRegionInfo`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetRegionInfoResponse {
    /// The region.
    #[prost(message, optional, tag = "1")]
    pub region_info: Option<RegionInfo>,
    /// Compaction running now ([`get_region_info_response::CompactionState`]).
    #[prost(
        enumeration = "get_region_info_response::CompactionState",
        optional,
        tag = "2"
    )]
    pub compaction_state: Option<i32>,
    /// Whether it can split.
    #[prost(bool, optional, tag = "4")]
    pub splittable: Option<bool>,
    /// Whether it can merge.
    #[prost(bool, optional, tag = "5")]
    pub mergeable: Option<bool>,
    /// The row a split without a key would happen at.
    #[prost(bytes = "vec", optional, tag = "6")]
    pub best_split_row: Option<Vec<u8>>,
}

/// Nested types of [`GetRegionInfoResponse`].
pub mod get_region_info_response {
    /// Which compaction runs.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum CompactionState {
        /// None.
        None = 0,
        /// A minor one.
        Minor = 1,
        /// A major one.
        Major = 2,
        /// Both.
        MajorAndMinor = 3,
    }
}

/// `GetOnlineRegion`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetOnlineRegionResponse {
    /// Every region served.
    #[prost(message, repeated, tag = "1")]
    pub region_info: Vec<RegionInfo>,
}

/// `FlushRegion`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FlushRegionRequest {
    /// The region.
    #[prost(message, optional, tag = "1")]
    pub region: Option<RegionSpecifier>,
    /// Flush only if the last flush is older than this (milliseconds).
    #[prost(uint64, optional, tag = "2")]
    pub if_older_than_ts: Option<u64>,
    /// Write a flush marker to the WAL.
    #[prost(bool, optional, tag = "3")]
    pub write_flush_wal_marker: Option<bool>,
    /// Only this family.
    #[prost(bytes = "vec", optional, tag = "4")]
    pub family: Option<Vec<u8>>,
}

/// `FlushRegion`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FlushRegionResponse {
    /// When the region was last flushed (milliseconds).
    #[prost(uint64, optional, tag = "1")]
    pub last_flush_time: Option<u64>,
    /// Whether this call flushed.
    #[prost(bool, optional, tag = "2")]
    pub flushed: Option<bool>,
    /// Whether a WAL marker was written.
    #[prost(bool, optional, tag = "3")]
    pub wrote_flush_wal_marker: Option<bool>,
}

/// `CompactRegion`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CompactRegionRequest {
    /// The region.
    #[prost(message, optional, tag = "1")]
    pub region: Option<RegionSpecifier>,
    /// A major compaction (else minor).
    #[prost(bool, optional, tag = "2")]
    pub major: Option<bool>,
    /// Only this family.
    #[prost(bytes = "vec", optional, tag = "3")]
    pub family: Option<Vec<u8>>,
}

/// A server's name and web UI port.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerInfo {
    /// The server.
    #[prost(message, optional, tag = "1")]
    pub server_name: Option<ServerName>,
    /// Web UI port.
    #[prost(uint32, optional, tag = "2")]
    pub webui_port: Option<u32>,
}

/// `GetServerInfo`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetServerInfoResponse {
    /// The server.
    #[prost(message, optional, tag = "1")]
    pub server_info: Option<ServerInfo>,
}

/// `GetRegionLoad`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetRegionLoadRequest {
    /// Only this table's regions (absent: all).
    #[prost(message, optional, tag = "1")]
    pub table_name: Option<TableName>,
}

/// `GetRegionLoad`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetRegionLoadResponse {
    /// The loads.
    #[prost(message, repeated, tag = "1")]
    pub region_loads: Vec<RegionLoad>,
}
