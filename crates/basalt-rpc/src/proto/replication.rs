//! The replication peer messages of `MasterService` (HBase 2.6's
//! `Replication.proto` facts: names and field numbers), written for
//! Basalt. As in `master.rs`, every field HBase declares `required` is an
//! `Option` here and always set in answers.

use super::hbase::{BytesBytesPair, NameStringPair, TableName};

/// A table and the families of it a peer takes (none: every family).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableCf {
    /// The table.
    #[prost(message, optional, tag = "1")]
    pub table_name: Option<TableName>,
    /// Its families.
    #[prost(bytes = "vec", repeated, tag = "2")]
    pub families: Vec<Vec<u8>>,
}

/// A peer's configuration (HBase's `ReplicationPeer` message).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReplicationPeer {
    /// `quorum:port:/znode-parent` of the peer cluster.
    #[prost(string, optional, tag = "1")]
    pub clusterkey: Option<String>,
    /// A replication endpoint's class name.
    #[prost(string, optional, tag = "2")]
    pub replication_endpoint_impl: Option<String>,
    /// Opaque peer data.
    #[prost(message, repeated, tag = "3")]
    pub data: Vec<BytesBytesPair>,
    /// Configuration overrides.
    #[prost(message, repeated, tag = "4")]
    pub configuration: Vec<NameStringPair>,
    /// Tables (and families) replicated.
    #[prost(message, repeated, tag = "5")]
    pub table_cfs: Vec<TableCf>,
    /// Namespaces replicated.
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub namespaces: Vec<Vec<u8>>,
    /// Bytes per second (0: no limit).
    #[prost(int64, optional, tag = "7")]
    pub bandwidth: Option<i64>,
    /// Every user table but the exclusions.
    #[prost(bool, optional, tag = "8")]
    pub replicate_all: Option<bool>,
    /// Tables (and families) left out.
    #[prost(message, repeated, tag = "9")]
    pub exclude_table_cfs: Vec<TableCf>,
    /// Namespaces left out.
    #[prost(bytes = "vec", repeated, tag = "10")]
    pub exclude_namespaces: Vec<Vec<u8>>,
    /// Serial replication.
    #[prost(bool, optional, tag = "11")]
    pub serial: Option<bool>,
}

/// A peer's state, its required field always written (`ENABLED` is 0).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReplicationState {
    /// The state ([`replication_state::State`]).
    #[prost(enumeration = "replication_state::State", optional, tag = "1")]
    pub state: Option<i32>,
}

/// Nested types of [`ReplicationState`].
pub mod replication_state {
    /// A peer's states.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum State {
        /// Edits would be shipped.
        Enabled = 0,
        /// Edits would be held.
        Disabled = 1,
    }
}

/// One peer as `ListReplicationPeers` answers it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReplicationPeerDescription {
    /// The peer's id.
    #[prost(string, optional, tag = "1")]
    pub id: Option<String>,
    /// Enabled or disabled.
    #[prost(message, optional, tag = "2")]
    pub state: Option<ReplicationState>,
    /// Its configuration.
    #[prost(message, optional, tag = "3")]
    pub config: Option<ReplicationPeer>,
}

/// `AddReplicationPeer`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AddReplicationPeerRequest {
    /// The new peer's id.
    #[prost(string, optional, tag = "1")]
    pub peer_id: Option<String>,
    /// Its configuration.
    #[prost(message, optional, tag = "2")]
    pub peer_config: Option<ReplicationPeer>,
    /// Whether it starts enabled.
    #[prost(message, optional, tag = "3")]
    pub peer_state: Option<ReplicationState>,
}

/// The parameter of `RemoveReplicationPeer`, `EnableReplicationPeer`,
/// `DisableReplicationPeer`, `GetReplicationPeerConfig` and
/// `IsReplicationPeerEnabled`: a peer id in field 1.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PeerIdRequest {
    /// The peer's id.
    #[prost(string, optional, tag = "1")]
    pub peer_id: Option<String>,
}

/// `GetReplicationPeerConfig`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetReplicationPeerConfigResponse {
    /// The peer's id.
    #[prost(string, optional, tag = "1")]
    pub peer_id: Option<String>,
    /// Its configuration.
    #[prost(message, optional, tag = "2")]
    pub peer_config: Option<ReplicationPeer>,
}

/// `UpdateReplicationPeerConfig`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UpdateReplicationPeerConfigRequest {
    /// The peer's id.
    #[prost(string, optional, tag = "1")]
    pub peer_id: Option<String>,
    /// The new configuration.
    #[prost(message, optional, tag = "2")]
    pub peer_config: Option<ReplicationPeer>,
}

/// `ListReplicationPeers`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListReplicationPeersRequest {
    /// A Java pattern the whole id must match; absent: every peer.
    #[prost(string, optional, tag = "1")]
    pub regex: Option<String>,
}

/// `ListReplicationPeers`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListReplicationPeersResponse {
    /// The peers.
    #[prost(message, repeated, tag = "1")]
    pub peer_desc: Vec<ReplicationPeerDescription>,
}

/// `IsReplicationPeerEnabled`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetReplicationPeerStateResponse {
    /// Whether the peer is enabled.
    #[prost(bool, optional, tag = "1")]
    pub is_enabled: Option<bool>,
}

/// `ReplicationPeerModificationSwitch`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReplicationPeerModificationSwitchRequest {
    /// The new value.
    #[prost(bool, optional, tag = "1")]
    pub on: Option<bool>,
}

/// `ReplicationPeerModificationSwitch`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReplicationPeerModificationSwitchResponse {
    /// The value before the call.
    #[prost(bool, optional, tag = "1")]
    pub previous_value: Option<bool>,
}

/// `IsReplicationPeerModificationEnabled`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct IsReplicationPeerModificationEnabledResponse {
    /// Whether peers can be changed.
    #[prost(bool, optional, tag = "1")]
    pub enabled: Option<bool>,
}

/// `GetReplicationPeerModificationProcedures`'s answer: the peer
/// procedures still running (HBase's `Procedure` messages; Basalt's peer
/// changes are done when their call answers, so there are never any).
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetReplicationPeerModificationProceduresResponse {}
