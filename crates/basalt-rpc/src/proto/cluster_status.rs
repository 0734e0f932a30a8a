//! The cluster's status and the servers' and regions' loads (HBase's
//! `ClusterStatus.proto` facts, and `FS.proto`'s version message: names
//! and field numbers). Required fields are `Option`s, always set in
//! answers (see [`super::master`]).

use super::hbase::{ClusterId, RegionInfo, RegionSpecifier, ServerName, TableName};

/// What `GetClusterStatus` is asked to fill in (none: everything).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum StatusOption {
    /// `hbase_version`.
    HbaseVersion = 0,
    /// `cluster_id`.
    ClusterId = 1,
    /// `live_servers`.
    LiveServers = 2,
    /// `dead_servers`.
    DeadServers = 3,
    /// `master`.
    Master = 4,
    /// `backup_masters`.
    BackupMasters = 5,
    /// `master_coprocessors`.
    MasterCoprocessors = 6,
    /// `regions_in_transition`.
    RegionsInTransition = 7,
    /// `balancer_on`.
    BalancerOn = 8,
    /// `master_info_port`.
    MasterInfoPort = 9,
    /// `servers_name`.
    ServersName = 10,
    /// `table_region_states_count`.
    TableToRegionsCount = 11,
    /// `master_tasks`.
    Tasks = 12,
    /// `unknown_servers`.
    UnknownServers = 13,
}

/// The software version (HBase's `HBaseVersionFileContent`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct HBaseVersionFileContent {
    /// The version string.
    #[prost(string, optional, tag = "1")]
    pub version: Option<String>,
}

/// A region's state (for regions in transition).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionState {
    /// The region.
    #[prost(message, optional, tag = "1")]
    pub region_info: Option<RegionInfo>,
    /// Its state ([`region_state::State`]).
    #[prost(enumeration = "region_state::State", optional, tag = "2")]
    pub state: Option<i32>,
    /// Since when (milliseconds).
    #[prost(uint64, optional, tag = "3")]
    pub stamp: Option<u64>,
}

/// Nested types of [`RegionState`].
pub mod region_state {
    /// The states a region can be in (only those Basalt reports).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum State {
        /// Not served.
        Offline = 0,
        /// Served.
        Open = 3,
        /// Closed.
        Closed = 6,
        /// Its files could not be opened.
        FailedOpen = 9,
    }
}

/// A region that is not simply open.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionInTransition {
    /// The region's name.
    #[prost(message, optional, tag = "1")]
    pub spec: Option<RegionSpecifier>,
    /// Its state.
    #[prost(message, optional, tag = "2")]
    pub region_state: Option<RegionState>,
}

/// One region's load.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionLoad {
    /// The region, by full name.
    #[prost(message, optional, tag = "1")]
    pub region_specifier: Option<RegionSpecifier>,
    /// Stores (families).
    #[prost(uint32, optional, tag = "2")]
    pub stores: Option<u32>,
    /// Store files.
    #[prost(uint32, optional, tag = "3")]
    pub storefiles: Option<u32>,
    /// Store file bytes before compression, in MiB.
    #[prost(uint32, optional, tag = "4")]
    pub store_uncompressed_size_mb: Option<u32>,
    /// Store file bytes, in MiB.
    #[prost(uint32, optional, tag = "5")]
    pub storefile_size_mb: Option<u32>,
    /// Memstore bytes, in MiB.
    #[prost(uint32, optional, tag = "6")]
    pub mem_store_size_mb: Option<u32>,
    /// Reads served.
    #[prost(uint64, optional, tag = "8")]
    pub read_requests_count: Option<u64>,
    /// Writes applied.
    #[prost(uint64, optional, tag = "9")]
    pub write_requests_count: Option<u64>,
    /// Fraction of the data on local disks.
    #[prost(float, optional, tag = "16")]
    pub data_locality: Option<f32>,
    /// Reads whose filter dropped at least one row or cell (HBase 2's
    /// filtered read requests).
    #[prost(uint64, optional, tag = "19")]
    pub filtered_read_requests_count: Option<u64>,
}

/// A region server's load.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerLoad {
    /// Requests per second.
    #[prost(uint64, optional, tag = "1")]
    pub number_of_requests: Option<u64>,
    /// Requests since start.
    #[prost(uint64, optional, tag = "2")]
    pub total_number_of_requests: Option<u64>,
    /// Heap in use, in MiB.
    #[prost(uint32, optional, tag = "3")]
    pub used_heap_mb: Option<u32>,
    /// Heap available, in MiB.
    #[prost(uint32, optional, tag = "4")]
    pub max_heap_mb: Option<u32>,
    /// Its regions' loads.
    #[prost(message, repeated, tag = "5")]
    pub region_loads: Vec<RegionLoad>,
    /// Start of the period reported (milliseconds).
    #[prost(uint64, optional, tag = "7")]
    pub report_start_time: Option<u64>,
    /// End of the period reported (milliseconds).
    #[prost(uint64, optional, tag = "8")]
    pub report_end_time: Option<u64>,
    /// Web UI port.
    #[prost(uint32, optional, tag = "9")]
    pub info_server_port: Option<u32>,
}

/// A live region server and its load.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LiveServerInfo {
    /// The server.
    #[prost(message, optional, tag = "1")]
    pub server: Option<ServerName>,
    /// Its load.
    #[prost(message, optional, tag = "2")]
    pub server_load: Option<ServerLoad>,
}

/// A table's regions counted by state.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionStatesCount {
    /// Open.
    #[prost(uint32, optional, tag = "1")]
    pub open_regions: Option<u32>,
    /// Split (retired parents).
    #[prost(uint32, optional, tag = "2")]
    pub split_regions: Option<u32>,
    /// Closed (a disabled table's).
    #[prost(uint32, optional, tag = "3")]
    pub closed_regions: Option<u32>,
    /// In transition (failed to open).
    #[prost(uint32, optional, tag = "4")]
    pub regions_in_transition: Option<u32>,
    /// All.
    #[prost(uint32, optional, tag = "5")]
    pub total_regions: Option<u32>,
}

/// One table's [`RegionStatesCount`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableRegionStatesCount {
    /// The table.
    #[prost(message, optional, tag = "1")]
    pub table_name: Option<TableName>,
    /// Its counts.
    #[prost(message, optional, tag = "2")]
    pub region_states_count: Option<RegionStatesCount>,
}

/// The cluster as the master sees it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClusterStatus {
    /// The software version.
    #[prost(message, optional, tag = "1")]
    pub hbase_version: Option<HBaseVersionFileContent>,
    /// Region servers serving.
    #[prost(message, repeated, tag = "2")]
    pub live_servers: Vec<LiveServerInfo>,
    /// Region servers lost.
    #[prost(message, repeated, tag = "3")]
    pub dead_servers: Vec<ServerName>,
    /// Regions not simply open.
    #[prost(message, repeated, tag = "4")]
    pub regions_in_transition: Vec<RegionInTransition>,
    /// The cluster's id.
    #[prost(message, optional, tag = "5")]
    pub cluster_id: Option<ClusterId>,
    /// The active master.
    #[prost(message, optional, tag = "7")]
    pub master: Option<ServerName>,
    /// Standby masters.
    #[prost(message, repeated, tag = "8")]
    pub backup_masters: Vec<ServerName>,
    /// Whether the balancer is on.
    #[prost(bool, optional, tag = "9")]
    pub balancer_on: Option<bool>,
    /// The master's web UI port (-1: none).
    #[prost(int32, optional, tag = "10")]
    pub master_info_port: Option<i32>,
    /// Every region server's name.
    #[prost(message, repeated, tag = "11")]
    pub servers_name: Vec<ServerName>,
    /// Per table, its regions counted by state.
    #[prost(message, repeated, tag = "12")]
    pub table_region_states_count: Vec<TableRegionStatesCount>,
    /// Servers holding regions the master does not know.
    #[prost(message, repeated, tag = "14")]
    pub unknown_servers: Vec<ServerName>,
}

/// `GetClusterStatus`' parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetClusterStatusRequest {
    /// What to fill in ([`StatusOption`]); none: everything.
    #[prost(enumeration = "StatusOption", repeated, tag = "1")]
    pub options: Vec<i32>,
}

/// `GetClusterStatus`' answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetClusterStatusResponse {
    /// The status.
    #[prost(message, optional, tag = "1")]
    pub cluster_status: Option<ClusterStatus>,
}
