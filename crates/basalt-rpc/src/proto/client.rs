//! `ClientService`'s messages (HBase's `Client.proto` facts: names and
//! field numbers). Fields Basalt never reads are left out: protobuf
//! decoding skips them.

use super::filter::{Comparator, Filter};
use super::hbase::{Cell, ColumnFamilyTimeRange, NameBytesPair, RegionSpecifier, TimeRange};

/// A family and optionally some of its qualifiers.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Column {
    /// The family.
    #[prost(bytes = "bytes", required, tag = "1")]
    pub family: bytes::Bytes,
    /// Qualifiers; none means the whole family.
    #[prost(bytes = "bytes", repeated, tag = "2")]
    pub qualifier: Vec<bytes::Bytes>,
}

/// A point read.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Get {
    /// The row.
    #[prost(bytes = "bytes", required, tag = "1")]
    pub row: bytes::Bytes,
    /// Columns to read; none means all.
    #[prost(message, repeated, tag = "2")]
    pub column: Vec<Column>,
    /// Operation attributes.
    #[prost(message, repeated, tag = "3")]
    pub attribute: Vec<NameBytesPair>,
    /// A filter.
    #[prost(message, optional, tag = "4")]
    pub filter: Option<Filter>,
    /// Versions in `[from, to)`.
    #[prost(message, optional, tag = "5")]
    pub time_range: Option<TimeRange>,
    /// Versions per column (default 1).
    #[prost(uint32, optional, tag = "6")]
    pub max_versions: Option<u32>,
    /// Whether to fill the block cache.
    #[prost(bool, optional, tag = "7")]
    pub cache_blocks: Option<bool>,
    /// Cells per family at most.
    #[prost(uint32, optional, tag = "8")]
    pub store_limit: Option<u32>,
    /// Cells per family to skip.
    #[prost(uint32, optional, tag = "9")]
    pub store_offset: Option<u32>,
    /// Answer only whether the row has cells.
    #[prost(bool, optional, tag = "10")]
    pub existence_only: Option<bool>,
    /// Old API: the row at or before `row` (answered with an exception).
    #[prost(bool, optional, tag = "11")]
    pub closest_row_before: Option<bool>,
    /// `STRONG` or `TIMELINE`.
    #[prost(int32, optional, tag = "12")]
    pub consistency: Option<i32>,
    /// Per-family time ranges.
    #[prost(message, repeated, tag = "13")]
    pub cf_time_range: Vec<ColumnFamilyTimeRange>,
}

/// A row's cells (in the message, or counted here and carried in the
/// cell block).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Result {
    /// Cells, when they travel inside the message.
    #[prost(message, repeated, tag = "1")]
    pub cell: Vec<Cell>,
    /// Cells of this result in the cell block.
    #[prost(int32, optional, tag = "2")]
    pub associated_cell_count: Option<i32>,
    /// For existence-only reads.
    #[prost(bool, optional, tag = "3")]
    pub exists: Option<bool>,
    /// Read from a replica that may lag.
    #[prost(bool, optional, tag = "4")]
    pub stale: Option<bool>,
    /// Part of a row (more cells follow in the next result).
    #[prost(bool, optional, tag = "5")]
    pub partial: Option<bool>,
}

/// `Get`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetRequest {
    /// The region.
    #[prost(message, optional, tag = "1")]
    pub region: Option<RegionSpecifier>,
    /// The read.
    #[prost(message, optional, tag = "2")]
    pub get: Option<Get>,
}

/// `Get`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetResponse {
    /// The row.
    #[prost(message, optional, tag = "1")]
    pub result: Option<Result>,
}

/// A check-and-mutate condition.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Condition {
    /// The row checked.
    #[prost(bytes = "bytes", required, tag = "1")]
    pub row: bytes::Bytes,
    /// Family of the checked column.
    #[prost(bytes = "bytes", optional, tag = "2")]
    pub family: Option<bytes::Bytes>,
    /// Qualifier of the checked column.
    #[prost(bytes = "bytes", optional, tag = "3")]
    pub qualifier: Option<bytes::Bytes>,
    /// The operator.
    #[prost(int32, optional, tag = "4")]
    pub compare_type: Option<i32>,
    /// The value compared against.
    #[prost(message, optional, tag = "5")]
    pub comparator: Option<Comparator>,
    /// Versions considered.
    #[prost(message, optional, tag = "6")]
    pub time_range: Option<TimeRange>,
    /// A filter instead of a column check (HBase 2.4+).
    #[prost(message, optional, tag = "7")]
    pub filter: Option<Filter>,
}

/// A write: put, delete, increment or append.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MutationProto {
    /// The row.
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub row: Option<bytes::Bytes>,
    /// Which kind of write.
    #[prost(int32, optional, tag = "2")]
    pub mutate_type: Option<i32>,
    /// Cells, when they travel inside the message.
    #[prost(message, repeated, tag = "3")]
    pub column_value: Vec<mutation_proto::ColumnValue>,
    /// Default timestamp of the cells.
    #[prost(uint64, optional, tag = "4")]
    pub timestamp: Option<u64>,
    /// Operation attributes.
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<NameBytesPair>,
    /// WAL durability.
    #[prost(int32, optional, tag = "6")]
    pub durability: Option<i32>,
    /// For increments and appends: versions read.
    #[prost(message, optional, tag = "7")]
    pub time_range: Option<TimeRange>,
    /// Cells of this mutation in the cell block.
    #[prost(int32, optional, tag = "8")]
    pub associated_cell_count: Option<i32>,
    /// Idempotence nonce.
    #[prost(uint64, optional, tag = "9")]
    pub nonce: Option<u64>,
}

/// Nested types of [`MutationProto`].
pub mod mutation_proto {
    /// Write kinds.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum MutationType {
        /// Append to values.
        Append = 0,
        /// Add to 8-byte counters.
        Increment = 1,
        /// Write values.
        Put = 2,
        /// Delete.
        Delete = 3,
    }

    /// Delete kinds.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum DeleteType {
        /// One version of a column.
        DeleteOneVersion = 0,
        /// A column's versions up to a time.
        DeleteMultipleVersions = 1,
        /// A family's columns up to a time.
        DeleteFamily = 2,
        /// A family's columns at exactly a time.
        DeleteFamilyVersion = 3,
    }

    /// WAL durability levels.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum Durability {
        /// The table's default.
        UseDefault = 0,
        /// No WAL.
        SkipWal = 1,
        /// WAL written later.
        AsyncWal = 2,
        /// WAL written before the answer.
        SyncWal = 3,
        /// WAL synced to disk before the answer.
        FsyncWal = 4,
    }

    /// One family's cells.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ColumnValue {
        /// The family.
        #[prost(bytes = "bytes", required, tag = "1")]
        pub family: bytes::Bytes,
        /// Its cells.
        #[prost(message, repeated, tag = "2")]
        pub qualifier_value: Vec<column_value::QualifierValue>,
    }

    /// Nested types of [`ColumnValue`].
    pub mod column_value {
        /// One cell.
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct QualifierValue {
            /// Qualifier.
            #[prost(bytes = "bytes", optional, tag = "1")]
            pub qualifier: Option<bytes::Bytes>,
            /// Value (for increments: an 8-byte big-endian amount).
            #[prost(bytes = "bytes", optional, tag = "2")]
            pub value: Option<bytes::Bytes>,
            /// Timestamp.
            #[prost(uint64, optional, tag = "3")]
            pub timestamp: Option<u64>,
            /// For deletes: which kind.
            #[prost(int32, optional, tag = "4")]
            pub delete_type: Option<i32>,
            /// Tags (not kept).
            #[prost(bytes = "bytes", optional, tag = "5")]
            pub tags: Option<bytes::Bytes>,
        }
    }
}

/// `Mutate`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MutateRequest {
    /// The region.
    #[prost(message, optional, tag = "1")]
    pub region: Option<RegionSpecifier>,
    /// The write.
    #[prost(message, optional, tag = "2")]
    pub mutation: Option<MutationProto>,
    /// Makes it a check-and-mutate.
    #[prost(message, optional, tag = "3")]
    pub condition: Option<Condition>,
    /// Nonce group.
    #[prost(uint64, optional, tag = "4")]
    pub nonce_group: Option<u64>,
}

/// `Mutate`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MutateResponse {
    /// For increments and appends: the new values.
    #[prost(message, optional, tag = "1")]
    pub result: Option<Result>,
    /// For conditional writes: whether the condition held.
    #[prost(bool, optional, tag = "2")]
    pub processed: Option<bool>,
}

/// A scan's definition.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Scan {
    /// Columns to read; none means all.
    #[prost(message, repeated, tag = "1")]
    pub column: Vec<Column>,
    /// Operation attributes.
    #[prost(message, repeated, tag = "2")]
    pub attribute: Vec<NameBytesPair>,
    /// First row.
    #[prost(bytes = "bytes", optional, tag = "3")]
    pub start_row: Option<bytes::Bytes>,
    /// Row to stop at.
    #[prost(bytes = "bytes", optional, tag = "4")]
    pub stop_row: Option<bytes::Bytes>,
    /// A filter.
    #[prost(message, optional, tag = "5")]
    pub filter: Option<Filter>,
    /// Versions in `[from, to)`.
    #[prost(message, optional, tag = "6")]
    pub time_range: Option<TimeRange>,
    /// Versions per column (default 1).
    #[prost(uint32, optional, tag = "7")]
    pub max_versions: Option<u32>,
    /// Whether to fill the block cache.
    #[prost(bool, optional, tag = "8")]
    pub cache_blocks: Option<bool>,
    /// Cells per result at most (rows split into partial results).
    #[prost(uint32, optional, tag = "9")]
    pub batch_size: Option<u32>,
    /// Bytes per answer at most.
    #[prost(uint64, optional, tag = "10")]
    pub max_result_size: Option<u64>,
    /// Cells per family at most.
    #[prost(uint32, optional, tag = "11")]
    pub store_limit: Option<u32>,
    /// Cells per family to skip.
    #[prost(uint32, optional, tag = "12")]
    pub store_offset: Option<u32>,
    /// Load families lazily.
    #[prost(bool, optional, tag = "13")]
    pub load_column_families_on_demand: Option<bool>,
    /// Old hint for short scans.
    #[prost(bool, optional, tag = "14")]
    pub small: Option<bool>,
    /// Rows in descending order.
    #[prost(bool, optional, tag = "15")]
    pub reversed: Option<bool>,
    /// `STRONG` or `TIMELINE`.
    #[prost(int32, optional, tag = "16")]
    pub consistency: Option<i32>,
    /// Rows per answer.
    #[prost(uint32, optional, tag = "17")]
    pub caching: Option<u32>,
    /// The client accepts partial rows.
    #[prost(bool, optional, tag = "18")]
    pub allow_partial_results: Option<bool>,
    /// Per-family time ranges.
    #[prost(message, repeated, tag = "19")]
    pub cf_time_range: Vec<ColumnFamilyTimeRange>,
    /// Read point to resume at.
    #[prost(uint64, optional, tag = "20")]
    pub mvcc_read_point: Option<u64>,
    /// Whether `start_row` itself is read (default true).
    #[prost(bool, optional, tag = "21")]
    pub include_start_row: Option<bool>,
    /// Whether `stop_row` itself is read (default false).
    #[prost(bool, optional, tag = "22")]
    pub include_stop_row: Option<bool>,
    /// Read type hint.
    #[prost(int32, optional, tag = "23")]
    pub read_type: Option<i32>,
    /// Cursor results wanted.
    #[prost(bool, optional, tag = "24")]
    pub need_cursor_result: Option<bool>,
}

/// `Scan`'s parameter: open (region + scan), next (scanner id) or close.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScanRequest {
    /// The region (open).
    #[prost(message, optional, tag = "1")]
    pub region: Option<RegionSpecifier>,
    /// The scan (open).
    #[prost(message, optional, tag = "2")]
    pub scan: Option<Scan>,
    /// The scanner (next, close).
    #[prost(uint64, optional, tag = "3")]
    pub scanner_id: Option<u64>,
    /// Rows wanted in this answer.
    #[prost(uint32, optional, tag = "4")]
    pub number_of_rows: Option<u32>,
    /// Close after this answer.
    #[prost(bool, optional, tag = "5")]
    pub close_scanner: Option<bool>,
    /// Sequence number of this next call (retries are detected).
    #[prost(uint64, optional, tag = "6")]
    pub next_call_seq: Option<u64>,
    /// The client can assemble partial rows.
    #[prost(bool, optional, tag = "7")]
    pub client_handles_partials: Option<bool>,
    /// The client understands heartbeats.
    #[prost(bool, optional, tag = "8")]
    pub client_handles_heartbeats: Option<bool>,
    /// Scan metrics wanted.
    #[prost(bool, optional, tag = "9")]
    pub track_scan_metrics: Option<bool>,
    /// Only renew the lease.
    #[prost(bool, optional, tag = "10")]
    pub renew: Option<bool>,
    /// Rows the whole scan may still return (0: no limit).
    #[prost(uint32, optional, tag = "11")]
    pub limit_of_rows: Option<u32>,
}

/// A cursor (the row a heartbeat stopped at).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Cursor {
    /// The row.
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub row: Option<bytes::Bytes>,
}

/// `Scan`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScanResponse {
    /// Cells per result, when cells travel in the cell block.
    #[prost(uint32, repeated, packed = "false", tag = "1")]
    pub cells_per_result: Vec<u32>,
    /// The scanner.
    #[prost(uint64, optional, tag = "2")]
    pub scanner_id: Option<u64>,
    /// False when the whole scan is over (limit or filter).
    #[prost(bool, optional, tag = "3")]
    pub more_results: Option<bool>,
    /// Lease in seconds.
    #[prost(uint32, optional, tag = "4")]
    pub ttl: Option<u32>,
    /// Rows, when cells travel inside the message.
    #[prost(message, repeated, tag = "5")]
    pub results: Vec<Result>,
    /// Read from a replica.
    #[prost(bool, optional, tag = "6")]
    pub stale: Option<bool>,
    /// Per result: partial or not.
    #[prost(bool, repeated, packed = "false", tag = "7")]
    pub partial_flag_per_result: Vec<bool>,
    /// False when this region has no more rows for the scan.
    #[prost(bool, optional, tag = "8")]
    pub more_results_in_region: Option<bool>,
    /// An answer sent only to keep the scan alive.
    #[prost(bool, optional, tag = "9")]
    pub heartbeat_message: Option<bool>,
    /// The server side's scan metrics of this call, when the request asked
    /// for them (`track_scan_metrics`); the client adds them up.
    #[prost(message, optional, tag = "10")]
    pub scan_metrics: Option<ScanMetrics>,
    /// The read point (so a reopened scanner sees the same data).
    #[prost(uint64, optional, tag = "11")]
    pub mvcc_read_point: Option<u64>,
    /// Cursor.
    #[prost(message, optional, tag = "12")]
    pub cursor: Option<Cursor>,
}

/// Named counters of a scan (HBase's `MapReduce.proto` `ScanMetrics`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScanMetrics {
    /// The counters; HBase leaves out those at zero.
    #[prost(message, repeated, tag = "1")]
    pub metrics: Vec<super::hbase::NameInt64Pair>,
}

/// One action of a multi call.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Action {
    /// Index in the client's list: answers carry it back.
    #[prost(uint32, optional, tag = "1")]
    pub index: Option<u32>,
    /// A write.
    #[prost(message, optional, tag = "2")]
    pub mutation: Option<MutationProto>,
    /// A read.
    #[prost(message, optional, tag = "3")]
    pub get: Option<Get>,
    /// A coprocessor call (not served).
    #[prost(message, optional, tag = "4")]
    pub service_call: Option<CoprocessorServiceCall>,
}

/// A coprocessor call (only decoded to refuse it by name).
#[derive(Clone, PartialEq, prost::Message)]
pub struct CoprocessorServiceCall {
    /// The row.
    #[prost(bytes = "vec", required, tag = "1")]
    pub row: Vec<u8>,
    /// Service.
    #[prost(string, required, tag = "2")]
    pub service_name: String,
    /// Method.
    #[prost(string, required, tag = "3")]
    pub method_name: String,
}

/// The actions for one region.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionAction {
    /// The region.
    #[prost(message, optional, tag = "1")]
    pub region: Option<RegionSpecifier>,
    /// All or nothing (a row mutation).
    #[prost(bool, optional, tag = "2")]
    pub atomic: Option<bool>,
    /// The actions.
    #[prost(message, repeated, tag = "3")]
    pub action: Vec<Action>,
    /// Makes the atomic group conditional (HBase 2.4+).
    #[prost(message, optional, tag = "4")]
    pub condition: Option<Condition>,
}

/// One action's answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResultOrException {
    /// The action's index.
    #[prost(uint32, optional, tag = "1")]
    pub index: Option<u32>,
    /// Its result.
    #[prost(message, optional, tag = "2")]
    pub result: Option<Result>,
    /// Or its failure: Java class name and message.
    #[prost(message, optional, tag = "3")]
    pub exception: Option<NameBytesPair>,
}

/// One region's answers.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionActionResult {
    /// Per action.
    #[prost(message, repeated, tag = "1")]
    pub result_or_exception: Vec<ResultOrException>,
    /// A failure of the whole region action.
    #[prost(message, optional, tag = "2")]
    pub exception: Option<NameBytesPair>,
    /// For conditional atomic groups: whether the condition held.
    #[prost(bool, optional, tag = "3")]
    pub processed: Option<bool>,
}

/// `Multi`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MultiRequest {
    /// Per region.
    #[prost(message, repeated, tag = "1")]
    pub region_action: Vec<RegionAction>,
    /// Nonce group.
    #[prost(uint64, optional, tag = "2")]
    pub nonce_group: Option<u64>,
    /// Old single condition (HBase 2.0-2.3).
    #[prost(message, optional, tag = "3")]
    pub condition: Option<Condition>,
}

/// `Multi`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MultiResponse {
    /// Per region, in request order.
    #[prost(message, repeated, tag = "1")]
    pub region_action_result: Vec<RegionActionResult>,
    /// For the old single condition.
    #[prost(bool, optional, tag = "2")]
    pub processed: Option<bool>,
}

/// `BulkLoadHFile`'s parameter: whole HFiles for one region.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BulkLoadHFileRequest {
    /// The region the files fit in.
    #[prost(message, optional, tag = "1")]
    pub region: Option<RegionSpecifier>,
    /// The files, by family.
    #[prost(message, repeated, tag = "2")]
    pub family_path: Vec<bulk_load_h_file_request::FamilyPath>,
    /// Give the files a fresh sequence id (HBase's default, and Basalt's
    /// only way).
    #[prost(bool, optional, tag = "3")]
    pub assign_seq_num: Option<bool>,
    /// The token `PrepareBulkLoad` answered.
    #[prost(string, optional, tag = "5")]
    pub bulk_token: Option<String>,
    /// Copy rather than move the files (Basalt always reads them and
    /// leaves them where they are).
    #[prost(bool, optional, tag = "6")]
    pub copy_file: Option<bool>,
}

/// Nested types of [`BulkLoadHFileRequest`].
pub mod bulk_load_h_file_request {
    /// One file and its family.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct FamilyPath {
        /// The family.
        #[prost(bytes = "vec", required, tag = "1")]
        pub family: Vec<u8>,
        /// The file, as a Hadoop path (`file:/...` or a plain path).
        #[prost(string, required, tag = "2")]
        pub path: String,
    }
}

/// `BulkLoadHFile`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BulkLoadHFileResponse {
    /// Whether the files were loaded.
    #[prost(bool, required, tag = "1")]
    pub loaded: bool,
}

/// `PrepareBulkLoad`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PrepareBulkLoadRequest {
    /// The table to load into.
    #[prost(message, optional, tag = "1")]
    pub table_name: Option<super::hbase::TableName>,
    /// A region of it.
    #[prost(message, optional, tag = "2")]
    pub region: Option<RegionSpecifier>,
}

/// `PrepareBulkLoad`'s answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PrepareBulkLoadResponse {
    /// Names the load in the calls that follow.
    #[prost(string, required, tag = "1")]
    pub bulk_token: String,
}

/// `CleanupBulkLoad`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CleanupBulkLoadRequest {
    /// The load's token.
    #[prost(string, required, tag = "1")]
    pub bulk_token: String,
    /// A region of the table.
    #[prost(message, optional, tag = "2")]
    pub region: Option<RegionSpecifier>,
}

/// `CleanupBulkLoad`'s answer (empty).
#[derive(Clone, PartialEq, prost::Message)]
pub struct CleanupBulkLoadResponse {}
