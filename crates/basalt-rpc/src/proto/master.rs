//! `MasterService`'s messages (HBase's `Master.proto` facts: names and
//! field numbers). Fields Basalt never reads are left out: protobuf
//! decoding skips them.
//!
//! Every field HBase declares `required` is an `Option` here and is always
//! set in answers: prost leaves a plain scalar out when it holds its
//! default (`false`, `0`, an enum's first value), and HBase's clients
//! refuse a message that lacks a required field.

use super::hbase::{
    ColumnFamilySchema, NameStringPair, NamespaceDescriptor, RegionInfo, RegionSpecifier,
    TableName, TableSchema,
};

/// A table's state with its required field always written (HBase's
/// `TableState`: `ENABLED` is 0, which a plain prost enum field would
/// leave out).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableState {
    /// The state ([`super::hbase::table_state::State`]).
    #[prost(enumeration = "super::hbase::table_state::State", optional, tag = "1")]
    pub state: Option<i32>,
}

/// An answer that carries only a procedure id (every DDL answer).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcIdResponse {
    /// The procedure that did the work.
    #[prost(uint64, optional, tag = "1")]
    pub proc_id: Option<u64>,
}

/// An empty request or answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Empty {}

/// `CreateTable`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CreateTableRequest {
    /// The table and its families.
    #[prost(message, optional, tag = "1")]
    pub table_schema: Option<TableSchema>,
    /// Keys the table is pre-split at.
    #[prost(bytes = "vec", repeated, tag = "2")]
    pub split_keys: Vec<Vec<u8>>,
}

/// The parameter of `DeleteTable`, `EnableTable`, `DisableTable`,
/// `GetTableState` and `GetSchemaAlterStatus`: a table name in field 1.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableRequest {
    /// The table.
    #[prost(message, optional, tag = "1")]
    pub table_name: Option<TableName>,
}

/// `truncateTable`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TruncateTableRequest {
    /// The table.
    #[prost(message, optional, tag = "1")]
    pub table_name: Option<TableName>,
    /// Keep the region boundaries (default false: one region).
    #[prost(bool, optional, tag = "2")]
    pub preserve_splits: Option<bool>,
}

/// `ModifyTable`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModifyTableRequest {
    /// The table.
    #[prost(message, optional, tag = "1")]
    pub table_name: Option<TableName>,
    /// Its new schema.
    #[prost(message, optional, tag = "2")]
    pub table_schema: Option<TableSchema>,
}

/// The parameter of `AddColumn` and `ModifyColumn`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ColumnRequest {
    /// The table.
    #[prost(message, optional, tag = "1")]
    pub table_name: Option<TableName>,
    /// The family (HBase names the field in the plural; it holds one).
    #[prost(message, optional, tag = "2")]
    pub column_families: Option<ColumnFamilySchema>,
}

/// `DeleteColumn`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeleteColumnRequest {
    /// The table.
    #[prost(message, optional, tag = "1")]
    pub table_name: Option<TableName>,
    /// The family's name.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub column_name: Option<Vec<u8>>,
}

/// `GetTableDescriptors`' parameter: by names, or by pattern.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetTableDescriptorsRequest {
    /// Tables asked for by name (missing ones are left out of the answer).
    #[prost(message, repeated, tag = "1")]
    pub table_names: Vec<TableName>,
    /// A Java regular expression the whole table name must match.
    #[prost(string, optional, tag = "2")]
    pub regex: Option<String>,
    /// Whether tables of the `hbase` namespace are listed.
    #[prost(bool, optional, tag = "3")]
    pub include_sys_tables: Option<bool>,
    /// Only tables of this namespace.
    #[prost(string, optional, tag = "4")]
    pub namespace: Option<String>,
}

/// `GetTableDescriptors`' answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetTableDescriptorsResponse {
    /// The schemas.
    #[prost(message, repeated, tag = "1")]
    pub table_schema: Vec<TableSchema>,
}

/// `GetTableNames`' parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetTableNamesRequest {
    /// A Java regular expression the whole table name must match.
    #[prost(string, optional, tag = "1")]
    pub regex: Option<String>,
    /// Whether tables of the `hbase` namespace are listed.
    #[prost(bool, optional, tag = "2")]
    pub include_sys_tables: Option<bool>,
    /// Only tables of this namespace.
    #[prost(string, optional, tag = "3")]
    pub namespace: Option<String>,
}

/// The answer of `GetTableNames` and `ListTableNamesByNamespace`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableNamesResponse {
    /// The names.
    #[prost(message, repeated, tag = "1")]
    pub table_names: Vec<TableName>,
}

/// `GetTableState`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetTableStateResponse {
    /// The state.
    #[prost(message, optional, tag = "1")]
    pub table_state: Option<TableState>,
}

/// `GetSchemaAlterStatus`' answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetSchemaAlterStatusResponse {
    /// Regions not yet on the new schema.
    #[prost(uint32, optional, tag = "1")]
    pub yet_to_update_regions: Option<u32>,
    /// Regions of the table.
    #[prost(uint32, optional, tag = "2")]
    pub total_regions: Option<u32>,
}

/// The parameter of `CreateNamespace` and `ModifyNamespace`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamespaceRequest {
    /// The namespace and its properties.
    #[prost(message, optional, tag = "1")]
    pub namespace_descriptor: Option<NamespaceDescriptor>,
}

/// The parameter of `DeleteNamespace`, `GetNamespaceDescriptor`,
/// `ListTableDescriptorsByNamespace` and `ListTableNamesByNamespace`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamespaceNameRequest {
    /// The namespace.
    #[prost(string, optional, tag = "1")]
    pub namespace_name: Option<String>,
}

/// `GetNamespaceDescriptor`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetNamespaceDescriptorResponse {
    /// The namespace.
    #[prost(message, optional, tag = "1")]
    pub namespace_descriptor: Option<NamespaceDescriptor>,
}

/// `ListNamespaceDescriptors`' answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListNamespaceDescriptorsResponse {
    /// Every namespace.
    #[prost(message, repeated, tag = "1")]
    pub namespace_descriptor: Vec<NamespaceDescriptor>,
}

/// `ListNamespaces`' answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListNamespacesResponse {
    /// Every namespace's name.
    #[prost(string, repeated, tag = "1")]
    pub namespace_name: Vec<String>,
}

/// `ListTableDescriptorsByNamespace`' answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListTableDescriptorsByNamespaceResponse {
    /// The schemas.
    #[prost(message, repeated, tag = "1")]
    pub table_schema: Vec<TableSchema>,
}

/// An answer that is one required boolean in field 1
/// (`IsMasterRunning`, `IsBalancerEnabled`, `IsNormalizerEnabled`,
/// `IsCatalogJanitorEnabled`, `IsCleanerChoreEnabled`,
/// `IsSnapshotCleanupEnabled`, `IsSplitOrMergeEnabled`,
/// `IsMasterInMaintenanceMode`, `Normalize`, `RunCleanerChore`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct BoolResponse {
    /// The value.
    #[prost(bool, optional, tag = "1")]
    pub value: Option<bool>,
}

/// A request that is one boolean in field 1 (`SetBalancerRunning`,
/// `SetNormalizerRunning`, `EnableCatalogJanitor`,
/// `SetCleanerChoreRunning`, `SwitchSnapshotCleanup`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SwitchRequest {
    /// The new value.
    #[prost(bool, optional, tag = "1")]
    pub on: Option<bool>,
}

/// `Balance`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BalanceRequest {
    /// Balance even with regions in transition.
    #[prost(bool, optional, tag = "1")]
    pub ignore_rit: Option<bool>,
    /// Plan the moves without making them.
    #[prost(bool, optional, tag = "2")]
    pub dry_run: Option<bool>,
}

/// `Balance`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BalanceResponse {
    /// Whether the balancer ran.
    #[prost(bool, optional, tag = "1")]
    pub balancer_ran: Option<bool>,
    /// Moves it planned.
    #[prost(uint32, optional, tag = "2")]
    pub moves_calculated: Option<u32>,
    /// Moves it made.
    #[prost(uint32, optional, tag = "3")]
    pub moves_executed: Option<u32>,
}

/// `RunCatalogScan`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RunCatalogScanResponse {
    /// Regions the scan cleaned up.
    #[prost(int32, optional, tag = "1")]
    pub scan_result: Option<i32>,
}

/// Which switch of `SetSplitOrMergeEnabled` / `IsSplitOrMergeEnabled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum MasterSwitchType {
    /// Splits asked for by clients.
    Split = 0,
    /// Merges asked for by clients.
    Merge = 1,
}

/// `SetSplitOrMergeEnabled`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SetSplitOrMergeEnabledRequest {
    /// The new value.
    #[prost(bool, optional, tag = "1")]
    pub enabled: Option<bool>,
    /// Wait for running splits or merges (nothing runs in the background).
    #[prost(bool, optional, tag = "2")]
    pub synchronous: Option<bool>,
    /// The switches to set.
    #[prost(enumeration = "MasterSwitchType", repeated, tag = "3")]
    pub switch_types: Vec<i32>,
}

/// `SetSplitOrMergeEnabled`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SetSplitOrMergeEnabledResponse {
    /// Each switch's previous value, in the order asked.
    #[prost(bool, repeated, packed = "false", tag = "1")]
    pub prev_value: Vec<bool>,
}

/// `IsSplitOrMergeEnabled`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct IsSplitOrMergeEnabledRequest {
    /// The switch.
    #[prost(enumeration = "MasterSwitchType", optional, tag = "1")]
    pub switch_type: Option<i32>,
}

/// `SplitRegion`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SplitTableRegionRequest {
    /// The region to split.
    #[prost(message, optional, tag = "1")]
    pub region_info: Option<RegionInfo>,
    /// Where (the second daughter's first row); absent: near the middle.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub split_row: Option<Vec<u8>>,
}

/// `MergeTableRegions`' parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MergeTableRegionsRequest {
    /// The regions, at least two.
    #[prost(message, repeated, tag = "1")]
    pub region: Vec<RegionSpecifier>,
    /// Merge regions that are not adjacent (refused by Basalt).
    #[prost(bool, optional, tag = "3")]
    pub forcible: Option<bool>,
}

/// The parameter of `AssignRegion`, `UnassignRegion` and `MoveRegion`:
/// a region in field 1 (their other fields do not matter with one server).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionRequest {
    /// The region.
    #[prost(message, optional, tag = "1")]
    pub region: Option<RegionSpecifier>,
}

/// `GetProcedureResult`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetProcedureResultRequest {
    /// The procedure.
    #[prost(uint64, optional, tag = "1")]
    pub proc_id: Option<u64>,
}

/// `GetProcedureResult`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetProcedureResultResponse {
    /// Where the procedure is.
    #[prost(
        enumeration = "get_procedure_result_response::State",
        optional,
        tag = "1"
    )]
    pub state: Option<i32>,
    /// When it was submitted (milliseconds).
    #[prost(uint64, optional, tag = "2")]
    pub submitted_time: Option<u64>,
    /// When it last changed (milliseconds).
    #[prost(uint64, optional, tag = "3")]
    pub last_update: Option<u64>,
}

/// Nested types of [`GetProcedureResultResponse`].
pub mod get_procedure_result_response {
    /// A procedure's states.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum State {
        /// Unknown id (or forgotten).
        NotFound = 0,
        /// Still running.
        Running = 1,
        /// Done.
        Finished = 2,
    }
}

/// A procedure run by name (`ExecProcedure`, `IsProcedureDone`;
/// HBase's `ProcedureDescription`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcedureDescription {
    /// Which procedure (`flush-table-proc`, `online-snapshot`...).
    #[prost(string, optional, tag = "1")]
    pub signature: Option<String>,
    /// What it works on (for `flush-table-proc`: the table's name).
    #[prost(string, optional, tag = "2")]
    pub instance: Option<String>,
    /// When it was created.
    #[prost(int64, optional, tag = "3")]
    pub creation_time: Option<i64>,
    /// Its options.
    #[prost(message, repeated, tag = "4")]
    pub configuration: Vec<NameStringPair>,
}

/// The parameter of `ExecProcedure` and `ExecProcedureWithRet`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExecProcedureRequest {
    /// The procedure.
    #[prost(message, optional, tag = "1")]
    pub procedure: Option<ProcedureDescription>,
}

/// `ExecProcedure`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExecProcedureResponse {
    /// How long the client should wait for it (milliseconds).
    #[prost(int64, optional, tag = "1")]
    pub expected_timeout: Option<i64>,
    /// What it returned.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub return_data: Option<Vec<u8>>,
}

/// `IsProcedureDone`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct IsProcedureDoneRequest {
    /// The procedure.
    #[prost(message, optional, tag = "1")]
    pub procedure: Option<ProcedureDescription>,
}

/// `IsProcedureDone`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct IsProcedureDoneResponse {
    /// Whether it is done.
    #[prost(bool, optional, tag = "1")]
    pub done: Option<bool>,
}

/// HBase's description of a snapshot (`SnapshotDescription`, in
/// `Snapshot.proto`): what `Snapshot` asks for and
/// `GetCompletedSnapshots` lists.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SnapshotDescription {
    /// The snapshot's name.
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// The table (`ns:qualifier`, or the qualifier in `default`).
    #[prost(string, optional, tag = "2")]
    pub table: Option<String>,
    /// When it was taken (milliseconds).
    #[prost(int64, optional, tag = "3")]
    pub creation_time: Option<i64>,
    /// How it is taken (default `FLUSH`).
    #[prost(enumeration = "snapshot_description::Type", optional, tag = "4")]
    pub r#type: Option<i32>,
    /// The snapshot format version.
    #[prost(int32, optional, tag = "5")]
    pub version: Option<i32>,
    /// Who took it.
    #[prost(string, optional, tag = "6")]
    pub owner: Option<String>,
    /// Seconds until it expires (0: never).
    #[prost(int64, optional, tag = "8")]
    pub ttl: Option<i64>,
    /// The largest file an export copies at once (unused by Basalt).
    #[prost(int64, optional, tag = "9")]
    pub max_file_size: Option<i64>,
}

/// Nested types of [`SnapshotDescription`].
pub mod snapshot_description {
    /// HBase's snapshot types.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum Type {
        /// Of a disabled table.
        Disabled = 0,
        /// Flushed first.
        Flush = 1,
        /// Without a flush.
        Skipflush = 2,
    }
}

/// A request carrying one snapshot description in field 1 (`Snapshot`,
/// `DeleteSnapshot`, `IsSnapshotDone`, `RestoreSnapshot`; their other
/// fields, nonces and ACL and store file tracker options, are read as
/// unknown fields and ignored).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SnapshotRequest {
    /// The snapshot.
    #[prost(message, optional, tag = "1")]
    pub snapshot: Option<SnapshotDescription>,
    /// The client's nonce group (0: none).
    #[prost(uint64, optional, tag = "2")]
    pub nonce_group: Option<u64>,
    /// The request's nonce (0: none): the same request sent again to a new
    /// master is recognized.
    #[prost(uint64, optional, tag = "3")]
    pub nonce: Option<u64>,
}

/// `Snapshot`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SnapshotResponse {
    /// How long the client should wait before polling (milliseconds).
    #[prost(int64, optional, tag = "1")]
    pub expected_timeout: Option<i64>,
    /// The procedure the client may poll with `getProcedureResult`.
    #[prost(int64, optional, tag = "2")]
    pub proc_id: Option<i64>,
}

/// `GetCompletedSnapshots`' answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetCompletedSnapshotsResponse {
    /// Every completed snapshot.
    #[prost(message, repeated, tag = "1")]
    pub snapshots: Vec<SnapshotDescription>,
}

/// `RestoreSnapshot`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RestoreSnapshotResponse {
    /// The procedure the client polls with `getProcedureResult`.
    #[prost(uint64, optional, tag = "1")]
    pub proc_id: Option<u64>,
}

/// `IsSnapshotDone`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct IsSnapshotDoneResponse {
    /// Whether the snapshot is complete.
    #[prost(bool, optional, tag = "1")]
    pub done: Option<bool>,
    /// The snapshot.
    #[prost(message, optional, tag = "2")]
    pub snapshot: Option<SnapshotDescription>,
}
