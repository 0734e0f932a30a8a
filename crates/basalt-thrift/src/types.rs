//! Typed Thrift values: the [`Thrift`] conversion trait and the structs of
//! HBase's Thrift1 service, written from the wire facts (field ids and
//! types) of the `Hbase` service.
//!
//! Every struct field is an `Option`: Thrift lets a writer leave any field
//! out, and the Thrift1 service gives meaning to absence (a `checkAndPut`
//! without a value checks that the column is missing; `getRowWithColumns`
//! without columns reads them all).

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::protocol::{TType, Value};

/// Conversion between a Rust type and a Thrift [`Value`].
pub trait Thrift: Sized {
    /// The Thrift type this Rust type travels as.
    const TTYPE: TType;
    /// Encodes.
    fn to_value(&self) -> Value;
    /// Decodes, failing on a type mismatch anywhere inside.
    fn from_value(value: Value) -> Result<Self, String>;
}

pub(crate) fn mismatch<T>(expected: TType, got: &Value) -> Result<T, String> {
    Err(format!(
        "expected {}, got {}",
        expected.name(),
        got.ttype().name()
    ))
}

macro_rules! scalar {
    ($t:ty, $variant:ident, $ttype:ident) => {
        impl Thrift for $t {
            const TTYPE: TType = TType::$ttype;
            fn to_value(&self) -> Value {
                Value::$variant(self.clone())
            }
            fn from_value(value: Value) -> Result<Self, String> {
                match value {
                    Value::$variant(v) => Ok(v),
                    other => mismatch(TType::$ttype, &other),
                }
            }
        }
    };
}

scalar!(bool, Bool, Bool);
scalar!(i8, Byte, Byte);
scalar!(i16, I16, I16);
scalar!(i32, I32, I32);
scalar!(i64, I64, I64);
scalar!(f64, Double, Double);
scalar!(Bytes, Binary, Binary);

impl Thrift for String {
    const TTYPE: TType = TType::Binary;
    fn to_value(&self) -> Value {
        Value::Binary(Bytes::copy_from_slice(self.as_bytes()))
    }
    fn from_value(value: Value) -> Result<Self, String> {
        match value {
            // Text from clients is meant to be UTF-8; a stray byte should
            // not fail a whole call, so decode lossily.
            Value::Binary(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
            other => mismatch(TType::Binary, &other),
        }
    }
}

impl<T: Thrift> Thrift for Vec<T> {
    const TTYPE: TType = TType::List;
    fn to_value(&self) -> Value {
        Value::List(T::TTYPE, self.iter().map(Thrift::to_value).collect())
    }
    fn from_value(value: Value) -> Result<Self, String> {
        match value {
            // A set is accepted where a list is declared: same shape.
            Value::List(_, items) | Value::Set(_, items) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| T::from_value(v).map_err(|e| format!("element {i}: {e}")))
                .collect(),
            other => mismatch(TType::List, &other),
        }
    }
}

impl<K: Thrift + Ord, V: Thrift> Thrift for BTreeMap<K, V> {
    const TTYPE: TType = TType::Map;
    fn to_value(&self) -> Value {
        Value::Map(
            K::TTYPE,
            V::TTYPE,
            self.iter()
                .map(|(k, v)| (k.to_value(), v.to_value()))
                .collect(),
        )
    }
    fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::Map(_, _, entries) => entries
                .into_iter()
                .map(|(k, v)| {
                    Ok((
                        K::from_value(k).map_err(|e| format!("map key: {e}"))?,
                        V::from_value(v).map_err(|e| format!("map value: {e}"))?,
                    ))
                })
                .collect(),
            other => mismatch(TType::Map, &other),
        }
    }
}

/// Defines a Thrift struct: every field optional, with its wire id.
macro_rules! thrift_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $id:literal : $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                #[doc = concat!("\n\nWire field id ", stringify!($id), "; `None` when absent.")]
                pub $field: Option<$ty>,
            )*
        }

        impl $crate::types::Thrift for $name {
            const TTYPE: $crate::protocol::TType = $crate::protocol::TType::Struct;

            fn to_value(&self) -> $crate::protocol::Value {
                #[allow(unused_mut)]
                let mut fields = Vec::new();
                $( if let Some(v) = &self.$field { fields.push(($id, $crate::types::Thrift::to_value(v))); } )*
                $crate::protocol::Value::Struct(fields)
            }

            fn from_value(value: $crate::protocol::Value) -> Result<Self, String> {
                let $crate::protocol::Value::Struct(fields) = value else {
                    return $crate::types::mismatch($crate::protocol::TType::Struct, &value);
                };
                #[allow(unused_mut)]
                let mut out = Self::default();
                #[allow(unused_variables)]
                for (id, value) in fields {
                    match id {
                        $( $id => {
                            out.$field = Some(<$ty as $crate::types::Thrift>::from_value(value).map_err(|e| {
                                format!("field {} (id {}): {}", stringify!($field), $id, e)
                            })?);
                        } )*
                        // Unknown fields are skipped, as every Thrift reader
                        // does, so newer clients keep working.
                        _ => {}
                    }
                }
                Ok(out)
            }
        }
    };
}

// Thrift2's structs (`thrift2::types`) are declared the same way.
pub(crate) use thrift_struct;

/// Attributes of an operation (sent by clients, ignored by Basalt).
pub type Attributes = BTreeMap<Bytes, Bytes>;

thrift_struct! {
    /// A value with its timestamp.
    pub struct TCell {
        1: value: Bytes,
        2: timestamp: i64,
    }
}

thrift_struct! {
    /// A column family's options as Thrift1 describes them. Names end in
    /// `:` on the way out; on the way in, everything from the first `:` on
    /// is ignored.
    pub struct ColumnDescriptor {
        1: name: Bytes,
        2: max_versions: i32,
        3: compression: String,
        4: in_memory: bool,
        5: bloom_filter_type: String,
        6: bloom_filter_vector_size: i32,
        7: bloom_filter_nb_hashes: i32,
        8: block_cache_enabled: bool,
        9: time_to_live: i32,
    }
}

thrift_struct! {
    /// A region: key range, id, name and where it is served.
    pub struct TRegionInfo {
        1: start_key: Bytes,
        2: end_key: Bytes,
        3: id: i64,
        4: name: Bytes,
        5: version: i8,
        6: server_name: Bytes,
        7: port: i32,
    }
}

thrift_struct! {
    /// A put (or, with `is_delete`, a delete) of one column or family.
    pub struct Mutation {
        1: is_delete: bool,
        2: column: Bytes,
        3: value: Bytes,
        4: write_to_wal: bool,
    }
}

thrift_struct! {
    /// Mutations of one row.
    pub struct BatchMutation {
        1: row: Bytes,
        2: mutations: Vec<Mutation>,
    }
}

thrift_struct! {
    /// One counter increment (the field name's spelling is HBase's).
    pub struct TIncrement {
        1: table: Bytes,
        2: row: Bytes,
        3: column: Bytes,
        4: ammount: i64,
    }
}

thrift_struct! {
    /// A column name with its cell (the sorted form of a row).
    pub struct TColumn {
        1: column_name: Bytes,
        2: cell: TCell,
    }
}

thrift_struct! {
    /// A row: columns as a map, or (when the scan asked for sorted columns)
    /// as a list in column order.
    pub struct TRowResult {
        1: row: Bytes,
        2: columns: BTreeMap<Bytes, TCell>,
        3: sorted_columns: Vec<TColumn>,
    }
}

thrift_struct! {
    /// Scanner parameters for `scannerOpenWithScan`.
    pub struct TScan {
        1: start_row: Bytes,
        2: stop_row: Bytes,
        /// Only cells with timestamps in `[0, timestamp)`.
        3: timestamp: i64,
        4: columns: Vec<Bytes>,
        5: caching: i32,
        6: filter_string: Bytes,
        7: batch_size: i32,
        8: sort_columns: bool,
        9: reversed: bool,
        10: cache_blocks: bool,
    }
}

thrift_struct! {
    /// Appends values to columns of one row.
    pub struct TAppend {
        1: table: Bytes,
        2: row: Bytes,
        3: columns: Vec<Bytes>,
        4: values: Vec<Bytes>,
    }
}

thrift_struct! {
    /// The general error of the service.
    pub struct IOError {
        1: message: String,
        2: can_retry: bool,
    }
}

thrift_struct! {
    /// An invalid argument.
    pub struct IllegalArgument {
        1: message: String,
    }
}

thrift_struct! {
    /// `createTable` of a name in use.
    pub struct AlreadyExists {
        1: message: String,
    }
}

thrift_struct! {
    /// The protocol-level error (unknown method, malformed message, ...).
    pub struct TApplicationException {
        1: message: String,
        2: kind: i32,
    }
}

/// `TApplicationException` type codes.
pub mod app_error {
    /// Unspecified.
    pub const UNKNOWN: i32 = 0;
    /// The method does not exist.
    pub const UNKNOWN_METHOD: i32 = 1;
    /// A message type other than call or oneway.
    pub const INVALID_MESSAGE_TYPE: i32 = 2;
    /// The reply names another method.
    pub const WRONG_METHOD_NAME: i32 = 3;
    /// The reply's sequence id does not match.
    pub const BAD_SEQUENCE_ID: i32 = 4;
    /// The reply carries neither a result nor an exception.
    pub const MISSING_RESULT: i32 = 5;
    /// The server failed while handling the call.
    pub const INTERNAL_ERROR: i32 = 6;
    /// The message is malformed (truncated, wrong field types, ...).
    pub const PROTOCOL_ERROR: i32 = 7;
}

/// Argument structs of every method of the service, by wire id.
pub mod args {
    use super::*;

    thrift_struct! {
        /// Arguments of the methods taking only a table name.
        pub struct TableName {
            1: table_name: Bytes,
        }
    }
    thrift_struct! {
        /// No arguments.
        pub struct Empty {}
    }
    thrift_struct! {
        /// `createTable`.
        pub struct CreateTable {
            1: table_name: Bytes,
            2: column_families: Vec<ColumnDescriptor>,
        }
    }
    thrift_struct! {
        /// `get`.
        pub struct Get {
            1: table_name: Bytes,
            2: row: Bytes,
            3: column: Bytes,
            4: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `getVer`.
        pub struct GetVer {
            1: table_name: Bytes,
            2: row: Bytes,
            3: column: Bytes,
            4: num_versions: i32,
            5: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `getVerTs`.
        pub struct GetVerTs {
            1: table_name: Bytes,
            2: row: Bytes,
            3: column: Bytes,
            4: timestamp: i64,
            5: num_versions: i32,
            6: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `getRow` and `deleteAllRow`.
        pub struct Row {
            1: table_name: Bytes,
            2: row: Bytes,
            3: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `getRowWithColumns`.
        pub struct RowWithColumns {
            1: table_name: Bytes,
            2: row: Bytes,
            3: columns: Vec<Bytes>,
            4: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `getRowTs` and `deleteAllRowTs`.
        pub struct RowTs {
            1: table_name: Bytes,
            2: row: Bytes,
            3: timestamp: i64,
            4: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `getRowWithColumnsTs`.
        pub struct RowWithColumnsTs {
            1: table_name: Bytes,
            2: row: Bytes,
            3: columns: Vec<Bytes>,
            4: timestamp: i64,
            5: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `getRows`.
        pub struct Rows {
            1: table_name: Bytes,
            2: rows: Vec<Bytes>,
            3: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `getRowsWithColumns`.
        pub struct RowsWithColumns {
            1: table_name: Bytes,
            2: rows: Vec<Bytes>,
            3: columns: Vec<Bytes>,
            4: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `getRowsTs`.
        pub struct RowsTs {
            1: table_name: Bytes,
            2: rows: Vec<Bytes>,
            3: timestamp: i64,
            4: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `getRowsWithColumnsTs`.
        pub struct RowsWithColumnsTs {
            1: table_name: Bytes,
            2: rows: Vec<Bytes>,
            3: columns: Vec<Bytes>,
            4: timestamp: i64,
            5: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `mutateRow`.
        pub struct MutateRow {
            1: table_name: Bytes,
            2: row: Bytes,
            3: mutations: Vec<Mutation>,
            4: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `mutateRowTs`.
        pub struct MutateRowTs {
            1: table_name: Bytes,
            2: row: Bytes,
            3: mutations: Vec<Mutation>,
            4: timestamp: i64,
            5: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `mutateRows`.
        pub struct MutateRows {
            1: table_name: Bytes,
            2: row_batches: Vec<BatchMutation>,
            3: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `mutateRowsTs`.
        pub struct MutateRowsTs {
            1: table_name: Bytes,
            2: row_batches: Vec<BatchMutation>,
            3: timestamp: i64,
            4: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `atomicIncrement`.
        pub struct AtomicIncrement {
            1: table_name: Bytes,
            2: row: Bytes,
            3: column: Bytes,
            4: value: i64,
        }
    }
    thrift_struct! {
        /// `deleteAll`.
        pub struct DeleteAll {
            1: table_name: Bytes,
            2: row: Bytes,
            3: column: Bytes,
            4: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `deleteAllTs`.
        pub struct DeleteAllTs {
            1: table_name: Bytes,
            2: row: Bytes,
            3: column: Bytes,
            4: timestamp: i64,
            5: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `increment`.
        pub struct Increment {
            1: increment: TIncrement,
        }
    }
    thrift_struct! {
        /// `incrementRows`.
        pub struct IncrementRows {
            1: increments: Vec<TIncrement>,
        }
    }
    thrift_struct! {
        /// `scannerOpenWithScan`.
        pub struct ScannerOpenWithScan {
            1: table_name: Bytes,
            2: scan: TScan,
            3: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `scannerOpen`.
        pub struct ScannerOpen {
            1: table_name: Bytes,
            2: start_row: Bytes,
            3: columns: Vec<Bytes>,
            4: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `scannerOpenWithStop`.
        pub struct ScannerOpenWithStop {
            1: table_name: Bytes,
            2: start_row: Bytes,
            3: stop_row: Bytes,
            4: columns: Vec<Bytes>,
            5: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `scannerOpenWithPrefix`.
        pub struct ScannerOpenWithPrefix {
            1: table_name: Bytes,
            2: start_and_prefix: Bytes,
            3: columns: Vec<Bytes>,
            4: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `scannerOpenTs`.
        pub struct ScannerOpenTs {
            1: table_name: Bytes,
            2: start_row: Bytes,
            3: columns: Vec<Bytes>,
            4: timestamp: i64,
            5: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `scannerOpenWithStopTs`.
        pub struct ScannerOpenWithStopTs {
            1: table_name: Bytes,
            2: start_row: Bytes,
            3: stop_row: Bytes,
            4: columns: Vec<Bytes>,
            5: timestamp: i64,
            6: attributes: Attributes,
        }
    }
    thrift_struct! {
        /// `scannerGet` and `scannerClose`.
        pub struct ScannerId {
            1: id: i32,
        }
    }
    thrift_struct! {
        /// `scannerGetList`.
        pub struct ScannerGetList {
            1: id: i32,
            2: nb_rows: i32,
        }
    }
    thrift_struct! {
        /// `getRowOrBefore`.
        pub struct GetRowOrBefore {
            1: table_name: Bytes,
            2: row: Bytes,
            3: family: Bytes,
        }
    }
    thrift_struct! {
        /// `getRegionInfo`.
        pub struct GetRegionInfo {
            1: row: Bytes,
        }
    }
    thrift_struct! {
        /// `append`.
        pub struct Append {
            1: append: TAppend,
        }
    }
    thrift_struct! {
        /// `checkAndPut` (id 4 is unused on the wire).
        pub struct CheckAndPut {
            1: table_name: Bytes,
            2: row: Bytes,
            3: column: Bytes,
            5: value: Bytes,
            6: mput: Mutation,
            7: attributes: Attributes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_round_trip_and_check_types() {
        let scan = TScan {
            start_row: Some(Bytes::from_static(b"a")),
            columns: Some(vec![Bytes::from_static(b"cf:q")]),
            sort_columns: Some(true),
            ..TScan::default()
        };
        assert_eq!(TScan::from_value(scan.to_value()).unwrap(), scan);
        let wrong = Value::Struct(vec![(1, Value::I32(3))]);
        let err = TScan::from_value(wrong).unwrap_err();
        assert!(
            err.contains("start_row") && err.contains("expected binary"),
            "{err}"
        );
    }
}
