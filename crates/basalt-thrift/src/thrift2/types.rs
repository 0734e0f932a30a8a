//! The structs of HBase's Thrift2 service (`THBaseService`) by wire field
//! id, and the argument struct of each method.
//!
//! Written from the wire facts of the service (names, ids, types); every
//! field is an `Option` as in Thrift1's structs, so the handler decides
//! what absence means (HBase's defaults) and reports a missing required
//! field by name. Thrift enums travel as `i32`; the constants below name
//! their values.

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::types::{thrift_struct, Attributes};

/// `TDurability` values.
pub mod durability {
    /// The family's (for Basalt: the database's) default.
    pub const USE_DEFAULT: i32 = 0;
    /// Not logged.
    pub const SKIP_WAL: i32 = 1;
    /// Logged in the background.
    pub const ASYNC_WAL: i32 = 2;
    /// Logged before the call returns.
    pub const SYNC_WAL: i32 = 3;
    /// Logged and fsynced before the call returns.
    pub const FSYNC_WAL: i32 = 4;
}

/// `TDeleteType` values.
pub mod delete_type {
    /// One version of a column (the newest, or the one at the timestamp).
    pub const DELETE_COLUMN: i32 = 0;
    /// Every version of a column up to the timestamp (the default).
    pub const DELETE_COLUMNS: i32 = 1;
    /// Every column of a family up to the timestamp.
    pub const DELETE_FAMILY: i32 = 2;
    /// Every column of a family at exactly the timestamp.
    pub const DELETE_FAMILY_VERSION: i32 = 3;
}

/// `TCompareOperator` values.
pub mod compare_op {
    /// `<`
    pub const LESS: i32 = 0;
    /// `<=`
    pub const LESS_OR_EQUAL: i32 = 1;
    /// `==`
    pub const EQUAL: i32 = 2;
    /// `!=`
    pub const NOT_EQUAL: i32 = 3;
    /// `>=`
    pub const GREATER_OR_EQUAL: i32 = 4;
    /// `>`
    pub const GREATER: i32 = 5;
    /// No comparison.
    pub const NO_OP: i32 = 6;
}

/// `TThriftServerType.TWO`: what `getThriftServerType` answers here.
pub const SERVER_TYPE_TWO: i32 = 2;

thrift_struct! {
    /// A half-open time range `[min_stamp, max_stamp)`.
    pub struct TTimeRange {
        1: min_stamp: i64,
        2: max_stamp: i64,
    }
}

thrift_struct! {
    /// A family, or a column, optionally at one timestamp.
    pub struct TColumn {
        1: family: Bytes,
        2: qualifier: Bytes,
        3: timestamp: i64,
    }
}

thrift_struct! {
    /// One cell: its column, value, timestamp and type code.
    pub struct TColumnValue {
        1: family: Bytes,
        2: qualifier: Bytes,
        3: value: Bytes,
        4: timestamp: i64,
        5: tags: Bytes,
        6: cell_type: i8,
    }
}

thrift_struct! {
    /// A column and how much to add to it (HBase's default amount is 1).
    pub struct TColumnIncrement {
        1: family: Bytes,
        2: qualifier: Bytes,
        3: amount: i64,
    }
}

thrift_struct! {
    /// A row's cells; a row not found has neither row nor cells.
    pub struct TResult {
        1: row: Bytes,
        2: column_values: Vec<TColumnValue>,
        3: stale: bool,
        4: partial: bool,
    }
}

thrift_struct! {
    /// Visibility labels a read may see.
    pub struct TAuthorization {
        1: labels: Vec<String>,
    }
}

thrift_struct! {
    /// A visibility expression for written cells.
    pub struct TCellVisibility {
        1: expression: String,
    }
}

thrift_struct! {
    /// A read of one row.
    pub struct TGet {
        1: row: Bytes,
        2: columns: Vec<TColumn>,
        3: timestamp: i64,
        4: time_range: TTimeRange,
        5: max_versions: i32,
        6: filter_string: Bytes,
        7: attributes: Attributes,
        8: authorizations: TAuthorization,
        9: consistency: i32,
        10: target_replica_id: i32,
        11: cache_blocks: bool,
        12: store_limit: i32,
        13: store_offset: i32,
        14: existence_only: bool,
        15: filter_bytes: Bytes,
    }
}

thrift_struct! {
    /// A write of cells to one row (id 4 is unused on the wire).
    pub struct TPut {
        1: row: Bytes,
        2: column_values: Vec<TColumnValue>,
        3: timestamp: i64,
        5: attributes: Attributes,
        6: durability: i32,
        7: cell_visibility: TCellVisibility,
    }
}

thrift_struct! {
    /// A delete in one row (id 5 is unused on the wire).
    pub struct TDelete {
        1: row: Bytes,
        2: columns: Vec<TColumn>,
        3: timestamp: i64,
        4: delete_type: i32,
        6: attributes: Attributes,
        7: durability: i32,
    }
}

thrift_struct! {
    /// Counter increments of one row (id 3 is unused on the wire).
    pub struct TIncrement {
        1: row: Bytes,
        2: columns: Vec<TColumnIncrement>,
        4: attributes: Attributes,
        5: durability: i32,
        6: cell_visibility: TCellVisibility,
        7: return_results: bool,
    }
}

thrift_struct! {
    /// Appends to cells of one row.
    pub struct TAppend {
        1: row: Bytes,
        2: columns: Vec<TColumnValue>,
        3: attributes: Attributes,
        4: durability: i32,
        5: cell_visibility: TCellVisibility,
        6: return_results: bool,
    }
}

thrift_struct! {
    /// A scan: row range, columns and every read option.
    pub struct TScan {
        1: start_row: Bytes,
        2: stop_row: Bytes,
        3: columns: Vec<TColumn>,
        4: caching: i32,
        5: max_versions: i32,
        6: time_range: TTimeRange,
        7: filter_string: Bytes,
        8: batch_size: i32,
        9: attributes: Attributes,
        10: authorizations: TAuthorization,
        11: reversed: bool,
        12: cache_blocks: bool,
        13: col_fam_time_range_map: BTreeMap<Bytes, TTimeRange>,
        14: read_type: i32,
        15: limit: i32,
        16: consistency: i32,
        17: target_replica_id: i32,
        18: filter_bytes: Bytes,
    }
}

thrift_struct! {
    /// A put or a delete (a union: exactly one field is set).
    pub struct TMutation {
        1: put: TPut,
        2: delete_single: TDelete,
    }
}

thrift_struct! {
    /// Puts and deletes of one row, applied atomically.
    pub struct TRowMutations {
        1: row: Bytes,
        2: mutations: Vec<TMutation>,
    }
}

thrift_struct! {
    /// A region's identity and key range.
    pub struct THRegionInfo {
        1: region_id: i64,
        2: table_name: Bytes,
        3: start_key: Bytes,
        4: end_key: Bytes,
        5: offline: bool,
        6: split: bool,
        7: replica_id: i32,
    }
}

thrift_struct! {
    /// Where a region is served.
    pub struct TServerName {
        1: host_name: String,
        2: port: i32,
        3: start_code: i64,
    }
}

thrift_struct! {
    /// A region and its server.
    pub struct THRegionLocation {
        1: server_name: TServerName,
        2: region_info: THRegionInfo,
    }
}

thrift_struct! {
    /// A table name in two parts; no namespace means `default`.
    pub struct TTableName {
        1: ns: Bytes,
        2: qualifier: Bytes,
    }
}

thrift_struct! {
    /// A column family's settings (enums as their HBase codes).
    pub struct TColumnFamilyDescriptor {
        1: name: Bytes,
        2: attributes: Attributes,
        3: configuration: BTreeMap<String, String>,
        4: block_size: i32,
        5: bloomn_filter_type: i32,
        6: compression_type: i32,
        7: dfs_replication: i16,
        8: data_block_encoding: i32,
        9: keep_deleted_cells: i32,
        10: max_versions: i32,
        11: min_versions: i32,
        12: scope: i32,
        13: time_to_live: i32,
        14: block_cache_enabled: bool,
        15: cache_blooms_on_write: bool,
        16: cache_data_on_write: bool,
        17: cache_indexes_on_write: bool,
        18: compress_tags: bool,
        19: evict_blocks_on_close: bool,
        20: in_memory: bool,
    }
}

thrift_struct! {
    /// A table: its name, families, attributes and durability.
    pub struct TTableDescriptor {
        1: table_name: TTableName,
        2: columns: Vec<TColumnFamilyDescriptor>,
        3: attributes: Attributes,
        4: durability: i32,
    }
}

thrift_struct! {
    /// A namespace and its configuration.
    pub struct TNamespaceDescriptor {
        1: name: String,
        2: configuration: BTreeMap<String, String>,
    }
}

thrift_struct! {
    /// The general error of the service. HBase 2.x added `can_retry`.
    pub struct TIOError {
        1: message: String,
        2: can_retry: bool,
    }
}

thrift_struct! {
    /// An invalid argument (declared by the scanner methods only).
    pub struct TIllegalArgument {
        1: message: String,
    }
}

/// Argument structs of every method of `THBaseService`, by wire id.
pub mod args {
    use super::*;

    thrift_struct! {
        /// `get`, `exists`.
        pub struct TableGet {
            1: table: Bytes,
            2: tget: TGet,
        }
    }
    thrift_struct! {
        /// `getMultiple`, `existsAll`.
        pub struct TableGets {
            1: table: Bytes,
            2: tgets: Vec<TGet>,
        }
    }
    thrift_struct! {
        /// `put`.
        pub struct Put {
            1: table: Bytes,
            2: tput: TPut,
        }
    }
    thrift_struct! {
        /// `putMultiple`.
        pub struct PutMultiple {
            1: table: Bytes,
            2: tputs: Vec<TPut>,
        }
    }
    thrift_struct! {
        /// `deleteSingle`.
        pub struct DeleteSingle {
            1: table: Bytes,
            2: tdelete: TDelete,
        }
    }
    thrift_struct! {
        /// `deleteMultiple`.
        pub struct DeleteMultiple {
            1: table: Bytes,
            2: tdeletes: Vec<TDelete>,
        }
    }
    thrift_struct! {
        /// `checkAndPut`.
        pub struct CheckAndPut {
            1: table: Bytes,
            2: row: Bytes,
            3: family: Bytes,
            4: qualifier: Bytes,
            5: value: Bytes,
            6: tput: TPut,
        }
    }
    thrift_struct! {
        /// `checkAndDelete`.
        pub struct CheckAndDelete {
            1: table: Bytes,
            2: row: Bytes,
            3: family: Bytes,
            4: qualifier: Bytes,
            5: value: Bytes,
            6: tdelete: TDelete,
        }
    }
    thrift_struct! {
        /// `checkAndMutate`.
        pub struct CheckAndMutate {
            1: table: Bytes,
            2: row: Bytes,
            3: family: Bytes,
            4: qualifier: Bytes,
            5: compare_operator: i32,
            6: value: Bytes,
            7: row_mutations: TRowMutations,
        }
    }
    thrift_struct! {
        /// `increment`.
        pub struct Increment {
            1: table: Bytes,
            2: tincrement: TIncrement,
        }
    }
    thrift_struct! {
        /// `append`.
        pub struct Append {
            1: table: Bytes,
            2: tappend: TAppend,
        }
    }
    thrift_struct! {
        /// `mutateRow`.
        pub struct MutateRow {
            1: table: Bytes,
            2: trow_mutations: TRowMutations,
        }
    }
    thrift_struct! {
        /// `openScanner`.
        pub struct OpenScanner {
            1: table: Bytes,
            2: tscan: TScan,
        }
    }
    thrift_struct! {
        /// `getScannerRows`.
        pub struct GetScannerRows {
            1: scanner_id: i32,
            2: num_rows: i32,
        }
    }
    thrift_struct! {
        /// `closeScanner`.
        pub struct CloseScanner {
            1: scanner_id: i32,
        }
    }
    thrift_struct! {
        /// `getScannerResults`.
        pub struct GetScannerResults {
            1: table: Bytes,
            2: tscan: TScan,
            3: num_rows: i32,
        }
    }
    thrift_struct! {
        /// `getRegionLocation`.
        pub struct GetRegionLocation {
            1: table: Bytes,
            2: row: Bytes,
            3: reload: bool,
        }
    }
    thrift_struct! {
        /// `getAllRegionLocations`.
        pub struct Table {
            1: table: Bytes,
        }
    }
    thrift_struct! {
        /// The admin methods that take one `TTableName`.
        pub struct TableName {
            1: table_name: TTableName,
        }
    }
    thrift_struct! {
        /// `getTableDescriptors`.
        pub struct TableNames {
            1: tables: Vec<TTableName>,
        }
    }
    thrift_struct! {
        /// `getTableDescriptorsByPattern`, `getTableNamesByPattern`.
        pub struct Pattern {
            1: regex: String,
            2: include_sys_tables: bool,
        }
    }
    thrift_struct! {
        /// The methods that take a namespace's name.
        pub struct Name {
            1: name: String,
        }
    }
    thrift_struct! {
        /// `createTable`.
        pub struct CreateTable {
            1: desc: TTableDescriptor,
            2: split_keys: Vec<Bytes>,
        }
    }
    thrift_struct! {
        /// `modifyTable`.
        pub struct ModifyTable {
            1: desc: TTableDescriptor,
        }
    }
    thrift_struct! {
        /// `truncateTable`.
        pub struct TruncateTable {
            1: table_name: TTableName,
            2: preserve_splits: bool,
        }
    }
    thrift_struct! {
        /// `isTableAvailableWithSplit`.
        pub struct TableWithSplits {
            1: table_name: TTableName,
            2: split_keys: Vec<Bytes>,
        }
    }
    thrift_struct! {
        /// `addColumnFamily`, `modifyColumnFamily`.
        pub struct Family {
            1: table_name: TTableName,
            2: column: TColumnFamilyDescriptor,
        }
    }
    thrift_struct! {
        /// `deleteColumnFamily`.
        pub struct FamilyName {
            1: table_name: TTableName,
            2: column: Bytes,
        }
    }
    thrift_struct! {
        /// `createNamespace`, `modifyNamespace`.
        pub struct Namespace {
            1: namespace_desc: TNamespaceDescriptor,
        }
    }
    thrift_struct! {
        /// Methods without arguments.
        pub struct Nothing {}
    }
}

impl TTableName {
    /// `ns:qualifier`, or the qualifier alone in the default namespace.
    pub fn of(name: &str) -> TTableName {
        let (ns, qualifier) = match name.split_once(':') {
            Some((ns, q)) => (ns, q),
            None => ("default", name),
        };
        TTableName {
            ns: Some(Bytes::copy_from_slice(ns.as_bytes())),
            qualifier: Some(Bytes::copy_from_slice(qualifier.as_bytes())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Value;
    use crate::types::Thrift;

    #[test]
    fn a_get_round_trips_and_a_wrong_field_type_names_the_field() {
        let get = TGet {
            row: Some(Bytes::from_static(b"r")),
            columns: Some(vec![TColumn {
                family: Some(Bytes::from_static(b"f")),
                ..TColumn::default()
            }]),
            existence_only: Some(true),
            ..TGet::default()
        };
        assert_eq!(TGet::from_value(get.to_value()).unwrap(), get);
        let wrong = Value::Struct(vec![(5, Value::Binary(Bytes::from_static(b"x")))]);
        let err = TGet::from_value(wrong).unwrap_err();
        assert!(
            err.contains("max_versions") && err.contains("expected i32"),
            "{err}"
        );
    }

    #[test]
    fn table_names_split_at_the_namespace() {
        let t = TTableName::of("ns1:t");
        assert_eq!(t.ns.as_deref(), Some(&b"ns1"[..]));
        assert_eq!(t.qualifier.as_deref(), Some(&b"t"[..]));
        assert_eq!(TTableName::of("t").ns.as_deref(), Some(&b"default"[..]));
    }
}
