//! Shared types (HBase's `HBase.proto`, `Cell.proto` and `ZooKeeper.proto`
//! facts: names and field numbers).

/// HBase's comparison operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum CompareType {
    /// `<`
    Less = 0,
    /// `<=`
    LessOrEqual = 1,
    /// `=`
    Equal = 2,
    /// `!=`
    NotEqual = 3,
    /// `>=`
    GreaterOrEqual = 4,
    /// `>`
    Greater = 5,
    /// Never matches.
    NoOp = 6,
}

/// A table's name in two parts.
#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct TableName {
    /// The namespace (`default` for unqualified names).
    #[prost(bytes = "vec", required, tag = "1")]
    pub namespace: Vec<u8>,
    /// The table's name inside its namespace.
    #[prost(bytes = "vec", required, tag = "2")]
    pub qualifier: Vec<u8>,
}

/// A table descriptor.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableSchema {
    /// The table.
    #[prost(message, optional, tag = "1")]
    pub table_name: Option<TableName>,
    /// Table attributes (`IS_META`, `MAX_FILESIZE`...).
    #[prost(message, repeated, tag = "2")]
    pub attributes: Vec<BytesBytesPair>,
    /// Its families.
    #[prost(message, repeated, tag = "3")]
    pub column_families: Vec<ColumnFamilySchema>,
    /// Configuration overrides.
    #[prost(message, repeated, tag = "4")]
    pub configuration: Vec<NameStringPair>,
}

/// A table's state, as `hbase:meta` keeps it in `table:state`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableState {
    /// The state.
    #[prost(enumeration = "table_state::State", required, tag = "1")]
    pub state: i32,
}

/// Nested types of [`TableState`].
pub mod table_state {
    /// A table's states.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum State {
        /// Serving.
        Enabled = 0,
        /// Not serving.
        Disabled = 1,
        /// Being disabled.
        Disabling = 2,
        /// Being enabled.
        Enabling = 3,
    }
}

/// A family descriptor: its name and options as text pairs.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ColumnFamilySchema {
    /// The family name.
    #[prost(bytes = "vec", required, tag = "1")]
    pub name: Vec<u8>,
    /// Options (`VERSIONS`, `TTL`, `BLOOMFILTER`...), name and value as bytes.
    #[prost(message, repeated, tag = "2")]
    pub attributes: Vec<BytesBytesPair>,
    /// Configuration overrides.
    #[prost(message, repeated, tag = "3")]
    pub configuration: Vec<NameStringPair>,
}

/// A region's identity and key range.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionInfo {
    /// HBase's region id (creation time in milliseconds).
    #[prost(uint64, required, tag = "1")]
    pub region_id: u64,
    /// The table.
    #[prost(message, optional, tag = "2")]
    pub table_name: Option<TableName>,
    /// First row (inclusive).
    #[prost(bytes = "vec", optional, tag = "3")]
    pub start_key: Option<Vec<u8>>,
    /// End row (exclusive; empty is the end of the table).
    #[prost(bytes = "vec", optional, tag = "4")]
    pub end_key: Option<Vec<u8>>,
    /// True once the region is offline.
    #[prost(bool, optional, tag = "5")]
    pub offline: Option<bool>,
    /// True once the region has split.
    #[prost(bool, optional, tag = "6")]
    pub split: Option<bool>,
    /// Replica number (0: the primary).
    #[prost(int32, optional, tag = "7")]
    pub replica_id: Option<i32>,
}

/// Which region a call is for.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionSpecifier {
    /// How `value` names the region.
    #[prost(
        enumeration = "region_specifier::RegionSpecifierType",
        required,
        tag = "1"
    )]
    pub r#type: i32,
    /// The full region name or the encoded name.
    #[prost(bytes = "vec", required, tag = "2")]
    pub value: Vec<u8>,
}

/// Nested types of [`RegionSpecifier`].
pub mod region_specifier {
    /// How a region is named.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum RegionSpecifierType {
        /// `<table>,<start key>,<id>.<encoded>.`
        RegionName = 1,
        /// The MD5 hex part only.
        EncodedRegionName = 2,
    }
}

/// A time range `[from, to)` in milliseconds.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeRange {
    /// Inclusive lower bound.
    #[prost(uint64, optional, tag = "1")]
    pub from: Option<u64>,
    /// Exclusive upper bound.
    #[prost(uint64, optional, tag = "2")]
    pub to: Option<u64>,
}

/// A per-family time range.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ColumnFamilyTimeRange {
    /// The family.
    #[prost(bytes = "vec", required, tag = "1")]
    pub column_family: Vec<u8>,
    /// Its range.
    #[prost(message, optional, tag = "2")]
    pub time_range: Option<TimeRange>,
}

/// A server: host, port and start code (its incarnation).
#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct ServerName {
    /// Host name clients connect to.
    #[prost(string, required, tag = "1")]
    pub host_name: String,
    /// RPC port.
    #[prost(uint32, optional, tag = "2")]
    pub port: Option<u32>,
    /// Start time in milliseconds: tells restarts apart.
    #[prost(uint64, optional, tag = "3")]
    pub start_code: Option<u64>,
}

/// A name and a text value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NameStringPair {
    /// The name.
    #[prost(string, required, tag = "1")]
    pub name: String,
    /// The value.
    #[prost(string, required, tag = "2")]
    pub value: String,
}

/// A name and a byte value (exceptions in multi answers, attributes).
#[derive(Clone, PartialEq, prost::Message)]
pub struct NameBytesPair {
    /// The name.
    #[prost(string, required, tag = "1")]
    pub name: String,
    /// The value.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub value: Option<Vec<u8>>,
}

/// A name and a 64-bit count (scan metrics).
#[derive(Clone, PartialEq, prost::Message)]
pub struct NameInt64Pair {
    /// The name.
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// The count.
    #[prost(int64, optional, tag = "2")]
    pub value: Option<i64>,
}

/// Two byte strings.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BytesBytesPair {
    /// The first (a name).
    #[prost(bytes = "vec", required, tag = "1")]
    pub first: Vec<u8>,
    /// The second (a value).
    #[prost(bytes = "vec", required, tag = "2")]
    pub second: Vec<u8>,
}

/// A namespace and its properties.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamespaceDescriptor {
    /// The name.
    #[prost(bytes = "vec", required, tag = "1")]
    pub name: Vec<u8>,
    /// Properties.
    #[prost(message, repeated, tag = "2")]
    pub configuration: Vec<NameStringPair>,
}

/// The server's version.
#[derive(Clone, PartialEq, prost::Message)]
pub struct VersionInfo {
    /// Version string.
    #[prost(string, required, tag = "1")]
    pub version: String,
    /// Source URL.
    #[prost(string, required, tag = "2")]
    pub url: String,
    /// Source revision.
    #[prost(string, required, tag = "3")]
    pub revision: String,
    /// Who built it.
    #[prost(string, required, tag = "4")]
    pub user: String,
    /// When.
    #[prost(string, required, tag = "5")]
    pub date: String,
    /// Source checksum.
    #[prost(string, required, tag = "6")]
    pub src_checksum: String,
    /// Major version.
    #[prost(uint32, optional, tag = "7")]
    pub version_major: Option<u32>,
    /// Minor version.
    #[prost(uint32, optional, tag = "8")]
    pub version_minor: Option<u32>,
}

/// Where a region is served.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionLocation {
    /// The region.
    #[prost(message, optional, tag = "1")]
    pub region_info: Option<RegionInfo>,
    /// Its server.
    #[prost(message, optional, tag = "2")]
    pub server_name: Option<ServerName>,
    /// Sequence number at open.
    #[prost(int64, required, tag = "3")]
    pub seq_num: i64,
}

/// An empty message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EmptyMsg {}

/// HBase's cell types on the wire (`Cell.proto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum CellType {
    /// Sorts first.
    Minimum = 0,
    /// A value.
    Put = 4,
    /// Deletes one version.
    Delete = 8,
    /// Deletes one version of every column of a family.
    DeleteFamilyVersion = 10,
    /// Deletes a column's versions up to a time.
    DeleteColumn = 12,
    /// Deletes a family's columns up to a time.
    DeleteFamily = 14,
    /// Sorts last.
    Maximum = 255,
}

/// A cell carried inside a protobuf message (when no cell block is used).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Cell {
    /// Row key.
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub row: Option<bytes::Bytes>,
    /// Family.
    #[prost(bytes = "bytes", optional, tag = "2")]
    pub family: Option<bytes::Bytes>,
    /// Qualifier.
    #[prost(bytes = "bytes", optional, tag = "3")]
    pub qualifier: Option<bytes::Bytes>,
    /// Timestamp in milliseconds.
    #[prost(uint64, optional, tag = "4")]
    pub timestamp: Option<u64>,
    /// Type.
    #[prost(enumeration = "CellType", optional, tag = "5")]
    pub cell_type: Option<i32>,
    /// Value.
    #[prost(bytes = "bytes", optional, tag = "6")]
    pub value: Option<bytes::Bytes>,
    /// Tags (not kept).
    #[prost(bytes = "bytes", optional, tag = "7")]
    pub tags: Option<bytes::Bytes>,
}

/// `/hbase/meta-region-server`: where `hbase:meta` is served.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetaRegionServer {
    /// The server.
    #[prost(message, optional, tag = "1")]
    pub server: Option<ServerName>,
    /// RPC version.
    #[prost(uint32, optional, tag = "2")]
    pub rpc_version: Option<u32>,
    /// Region state (`OPEN` = 3).
    #[prost(int32, optional, tag = "3")]
    pub state: Option<i32>,
}

/// `/hbase/master`: the active master.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Master {
    /// The server.
    #[prost(message, optional, tag = "1")]
    pub master: Option<ServerName>,
    /// RPC version.
    #[prost(uint32, optional, tag = "2")]
    pub rpc_version: Option<u32>,
    /// Web UI port.
    #[prost(uint32, optional, tag = "3")]
    pub info_port: Option<u32>,
}

/// `/hbase/hbaseid`: the cluster id.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClusterId {
    /// A UUID string.
    #[prost(string, required, tag = "1")]
    pub cluster_id: String,
}

/// `/hbase/running`: when the cluster came up.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClusterUp {
    /// A date string.
    #[prost(string, required, tag = "1")]
    pub start_date: String,
}
