//! The write-ahead-log messages HBase's replication sends to a peer's
//! region server (HBase 2.6's `WAL.proto` and `Admin.proto` facts: names
//! and field numbers), written for Basalt: `AdminService.ReplicateWALEntry`
//! carries WAL entries, each a `WALKey` and a count of cells that travel
//! in the call's cell block. Only what the sink reads is declared; HBase's
//! required fields are `Option`s so that a missing one is named by the
//! handler, not by the decoder.

use super::hbase::TableName;

/// HBase's `UUID` (a cluster id): two 64-bit halves.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Uuid {
    /// The low half.
    #[prost(uint64, optional, tag = "1")]
    pub least_sig_bits: Option<u64>,
    /// The high half.
    #[prost(uint64, optional, tag = "2")]
    pub most_sig_bits: Option<u64>,
}

/// A family's replication scope in a `WALKey`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FamilyScope {
    /// The family.
    #[prost(bytes = "vec", optional, tag = "1")]
    pub family: Option<Vec<u8>>,
    /// 0 local, 1 global, 2 serial.
    #[prost(int32, optional, tag = "2")]
    pub scope_type: Option<i32>,
}

/// The header of one WAL edit: which table and region it belongs to, when
/// it was written, which clusters already have it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WalKey {
    /// The source region's encoded name (required by HBase).
    #[prost(bytes = "vec", optional, tag = "1")]
    pub encoded_region_name: Option<Vec<u8>>,
    /// The table, as `TableName.getName()` bytes: `namespace:qualifier`,
    /// or the bare qualifier in the default namespace (required).
    #[prost(bytes = "vec", optional, tag = "2")]
    pub table_name: Option<Vec<u8>>,
    /// The edit's sequence id in its region (required).
    #[prost(uint64, optional, tag = "3")]
    pub log_sequence_number: Option<u64>,
    /// When the source wrote the edit, milliseconds since the epoch
    /// (required): the sink's lag is measured from it.
    #[prost(uint64, optional, tag = "4")]
    pub write_time: Option<u64>,
    /// HBase 0.94's single cluster id (deprecated).
    #[prost(message, optional, tag = "5")]
    pub cluster_id: Option<Uuid>,
    /// Families' replication scopes.
    #[prost(message, repeated, tag = "6")]
    pub scopes: Vec<FamilyScope>,
    /// Cells following in the log (not used by replication).
    #[prost(uint32, optional, tag = "7")]
    pub following_kv_count: Option<u32>,
    /// The clusters that have consumed this edit (loop prevention).
    #[prost(message, repeated, tag = "8")]
    pub cluster_ids: Vec<Uuid>,
    /// The client's nonce group.
    #[prost(uint64, optional, tag = "9")]
    pub nonce_group: Option<u64>,
    /// The client's nonce.
    #[prost(uint64, optional, tag = "10")]
    pub nonce: Option<u64>,
    /// The sequence id before a region replay.
    #[prost(uint64, optional, tag = "11")]
    pub orig_sequence_number: Option<u64>,
}

/// One WAL entry as replication sends it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WalEntry {
    /// The key (required).
    #[prost(message, optional, tag = "1")]
    pub key: Option<WalKey>,
    /// Cells inside the message, as KeyValue bytes: HBase 2's sink never
    /// reads them (cells come in the cell block), and Basalt refuses an
    /// entry carrying any rather than lose them.
    #[prost(bytes = "vec", repeated, tag = "2")]
    pub key_value_bytes: Vec<Vec<u8>>,
    /// Cells of the call's cell block that belong to this entry, in order.
    #[prost(int32, optional, tag = "3")]
    pub associated_cell_count: Option<i32>,
}

/// `AdminService.ReplicateWALEntry`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReplicateWalEntryRequest {
    /// The entries, in the source's log order.
    #[prost(message, repeated, tag = "1")]
    pub entry: Vec<WalEntry>,
    /// The source cluster's id (for bulk-load file access).
    #[prost(string, optional, tag = "2")]
    pub replication_cluster_id: Option<String>,
    /// The source's data directory (bulk loads).
    #[prost(string, optional, tag = "3")]
    pub source_base_namespace_dir_path: Option<String>,
    /// The source's HFile archive directory (bulk loads).
    #[prost(string, optional, tag = "4")]
    pub source_hfile_archive_dir_path: Option<String>,
}

/// `AdminService.ReplicateWALEntry`'s answer: empty.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReplicateWalEntryResponse {}

/// A store's files in a bulk-load marker.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StoreDescriptor {
    /// The family (required).
    #[prost(bytes = "vec", optional, tag = "1")]
    pub family_name: Option<Vec<u8>>,
    /// The store's directory, relative to the region's (required).
    #[prost(string, optional, tag = "2")]
    pub store_home_dir: Option<String>,
    /// The files, relative to the store's directory.
    #[prost(string, repeated, tag = "3")]
    pub store_file: Vec<String>,
}

/// The value of a bulk-load marker cell (`METAFAMILY:HBASE::BULK_LOAD`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct BulkLoadDescriptor {
    /// The table (required).
    #[prost(message, optional, tag = "1")]
    pub table_name: Option<TableName>,
    /// The region (required).
    #[prost(bytes = "vec", optional, tag = "2")]
    pub encoded_region_name: Option<Vec<u8>>,
    /// The stores and their files.
    #[prost(message, repeated, tag = "3")]
    pub stores: Vec<StoreDescriptor>,
    /// The load's sequence id (required).
    #[prost(int64, optional, tag = "4")]
    pub bulkload_seq_num: Option<i64>,
    /// Clusters that have it.
    #[prost(string, repeated, tag = "5")]
    pub cluster_ids: Vec<String>,
    /// Whether the load is replicated (HBase's default: true).
    #[prost(bool, optional, tag = "6")]
    pub replicate: Option<bool>,
}
