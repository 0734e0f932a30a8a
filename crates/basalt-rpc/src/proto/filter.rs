//! Filters and comparators as they travel: a Java class name and that
//! class's serialized protobuf message (HBase's `Filter.proto` and
//! `Comparator.proto` facts: names and field numbers).

/// A filter: the Java class name and its serialized message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Filter {
    /// e.g. `org.apache.hadoop.hbase.filter.PrefixFilter`.
    #[prost(string, required, tag = "1")]
    pub name: String,
    /// The class's own message.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub serialized_filter: Option<Vec<u8>>,
}

/// A comparator: the Java class name and its serialized message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Comparator {
    /// e.g. `org.apache.hadoop.hbase.filter.BinaryComparator`.
    #[prost(string, required, tag = "1")]
    pub name: String,
    /// The class's own message.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub serialized_comparator: Option<Vec<u8>>,
}

// ---------------------------------------------------------------------------
// Filters' own messages (HBase's `Filter.proto` facts). Byte fields are
// `Bytes`: decoded from a `Bytes` buffer they share it instead of copying,
// so reading a nested filter list costs its size once, not once per level.
// ---------------------------------------------------------------------------

/// The same message as [`Filter`], held as shared bytes: the form a
/// filter takes inside a list or a wrapper.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NestedFilter {
    /// The Java class name.
    #[prost(string, required, tag = "1")]
    pub name: String,
    /// The class's own message.
    #[prost(bytes = "bytes", optional, tag = "2")]
    pub serialized_filter: Option<bytes::Bytes>,
}

/// `ColumnCountGetFilter`: the first `limit` columns of a row.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ColumnCountGetFilter {
    /// Columns to return.
    #[prost(int32, required, tag = "1")]
    pub limit: i32,
}

/// `ColumnPaginationFilter`: `limit` columns from an offset.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ColumnPaginationFilter {
    /// Columns to return per row.
    #[prost(int32, required, tag = "1")]
    pub limit: i32,
    /// Columns to skip first.
    #[prost(int32, optional, tag = "2")]
    pub offset: Option<i32>,
    /// Start at this qualifier instead of at a column number.
    #[prost(bytes = "bytes", optional, tag = "3")]
    pub column_offset: Option<bytes::Bytes>,
}

/// `ColumnPrefixFilter`: qualifiers starting with a prefix.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ColumnPrefixFilter {
    /// The prefix.
    #[prost(bytes = "bytes", required, tag = "1")]
    pub prefix: bytes::Bytes,
}

/// `ColumnRangeFilter`: qualifiers within bounds.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ColumnRangeFilter {
    /// Lower bound; absent is unbounded.
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub min_column: Option<bytes::Bytes>,
    /// Whether the lower bound is included.
    #[prost(bool, optional, tag = "2")]
    pub min_column_inclusive: Option<bool>,
    /// Upper bound; absent is unbounded.
    #[prost(bytes = "bytes", optional, tag = "3")]
    pub max_column: Option<bytes::Bytes>,
    /// Whether the upper bound is included.
    #[prost(bool, optional, tag = "4")]
    pub max_column_inclusive: Option<bool>,
}

/// The operator and comparator shared by the comparing filters.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CompareFilter {
    /// A [`CompareType`](super::hbase::CompareType).
    #[prost(enumeration = "super::hbase::CompareType", required, tag = "1")]
    pub compare_op: i32,
    /// What to compare with.
    #[prost(message, optional, tag = "2")]
    pub comparator: Option<Comparator>,
}

/// `DependentColumnFilter`: cells whose timestamp a reference column has.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DependentColumnFilter {
    /// The value test on the reference column (comparator optional).
    #[prost(message, optional, tag = "1")]
    pub compare_filter: Option<CompareFilter>,
    /// Reference column family.
    #[prost(bytes = "bytes", optional, tag = "2")]
    pub column_family: Option<bytes::Bytes>,
    /// Reference column qualifier.
    #[prost(bytes = "bytes", optional, tag = "3")]
    pub column_qualifier: Option<bytes::Bytes>,
    /// Leave the reference column out of results.
    #[prost(bool, optional, tag = "4")]
    pub drop_dependent_column: Option<bool>,
}

/// `FamilyFilter`: compares the family name.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FamilyFilter {
    /// Operator and comparator.
    #[prost(message, optional, tag = "1")]
    pub compare_filter: Option<CompareFilter>,
}

/// How a `FilterList` combines its members.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum FilterListOperator {
    /// Every member must pass (AND).
    MustPassAll = 1,
    /// One member passing is enough (OR).
    MustPassOne = 2,
}

/// `FilterList`: filters combined with AND or OR.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FilterList {
    /// A [`FilterListOperator`].
    #[prost(enumeration = "FilterListOperator", required, tag = "1")]
    pub operator: i32,
    /// The members.
    #[prost(message, repeated, tag = "2")]
    pub filters: Vec<NestedFilter>,
}

/// `FilterWrapper`: a filter wrapped by HBase's server-side adapter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FilterWrapper {
    /// The wrapped filter.
    #[prost(message, optional, tag = "1")]
    pub filter: Option<NestedFilter>,
}

/// `FirstKeyOnlyFilter`: no fields.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FirstKeyOnlyFilter {}

/// `InclusiveStopFilter`: rows up to and including a stop row.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InclusiveStopFilter {
    /// The stop row.
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub stop_row_key: Option<bytes::Bytes>,
}

/// `KeyOnlyFilter`: strips values.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyOnlyFilter {
    /// Replace each value by its length.
    #[prost(bool, required, tag = "1")]
    pub len_as_val: bool,
}

/// `MultipleColumnPrefixFilter`: qualifiers starting with any prefix.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MultipleColumnPrefixFilter {
    /// The prefixes (HBase sends them sorted).
    #[prost(bytes = "bytes", repeated, tag = "1")]
    pub sorted_prefixes: Vec<bytes::Bytes>,
}

/// `PageFilter`: at most `page_size` rows.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PageFilter {
    /// Rows to return.
    #[prost(int64, required, tag = "1")]
    pub page_size: i64,
}

/// `PrefixFilter`: rows starting with a prefix.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PrefixFilter {
    /// The prefix.
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub prefix: Option<bytes::Bytes>,
}

/// `QualifierFilter`: compares the qualifier.
#[derive(Clone, PartialEq, prost::Message)]
pub struct QualifierFilter {
    /// Operator and comparator.
    #[prost(message, optional, tag = "1")]
    pub compare_filter: Option<CompareFilter>,
}

/// `RowFilter`: compares the row key.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RowFilter {
    /// Operator and comparator.
    #[prost(message, optional, tag = "1")]
    pub compare_filter: Option<CompareFilter>,
}

/// `SingleColumnValueFilter`: keeps rows by one column's value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SingleColumnValueFilter {
    /// Column family tested.
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub column_family: Option<bytes::Bytes>,
    /// Column qualifier tested.
    #[prost(bytes = "bytes", optional, tag = "2")]
    pub column_qualifier: Option<bytes::Bytes>,
    /// A [`CompareType`](super::hbase::CompareType).
    #[prost(enumeration = "super::hbase::CompareType", required, tag = "3")]
    pub compare_op: i32,
    /// What to compare with.
    #[prost(message, optional, tag = "4")]
    pub comparator: Option<Comparator>,
    /// Drop rows that lack the column.
    #[prost(bool, optional, tag = "5")]
    pub filter_if_missing: Option<bool>,
    /// Test only the newest version.
    #[prost(bool, optional, tag = "6")]
    pub latest_version_only: Option<bool>,
}

/// `SingleColumnValueExcludeFilter`: the same test, leaving the tested
/// column out.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SingleColumnValueExcludeFilter {
    /// The test.
    #[prost(message, optional, tag = "1")]
    pub single_column_value_filter: Option<SingleColumnValueFilter>,
}

/// `SkipFilter`: drops a row when the inner filter drops any of its cells.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SkipFilter {
    /// The inner filter.
    #[prost(message, optional, tag = "1")]
    pub filter: Option<NestedFilter>,
}

/// `TimestampsFilter`: only cells with one of these timestamps.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimestampsFilter {
    /// The timestamps.
    #[prost(int64, repeated, tag = "1")]
    pub timestamps: Vec<i64>,
    /// Whether the filter may seek (an optimisation only).
    #[prost(bool, optional, tag = "2")]
    pub can_hint: Option<bool>,
}

/// `ValueFilter`: compares the value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueFilter {
    /// Operator and comparator.
    #[prost(message, optional, tag = "1")]
    pub compare_filter: Option<CompareFilter>,
}

/// `WhileMatchFilter`: ends the scan at the first thing the inner filter
/// drops.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WhileMatchFilter {
    /// The inner filter.
    #[prost(message, optional, tag = "1")]
    pub filter: Option<NestedFilter>,
}

/// One range of a `MultiRowRangeFilter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RowRange {
    /// First row; absent or empty is unbounded.
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub start_row: Option<bytes::Bytes>,
    /// Whether the first row is included.
    #[prost(bool, optional, tag = "2")]
    pub start_row_inclusive: Option<bool>,
    /// Last row; absent or empty is unbounded.
    #[prost(bytes = "bytes", optional, tag = "3")]
    pub stop_row: Option<bytes::Bytes>,
    /// Whether the last row is included.
    #[prost(bool, optional, tag = "4")]
    pub stop_row_inclusive: Option<bool>,
}

/// `MultiRowRangeFilter`: rows within any of several ranges.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MultiRowRangeFilter {
    /// The ranges.
    #[prost(message, repeated, tag = "1")]
    pub row_range_list: Vec<RowRange>,
}

/// `FuzzyRowFilter`: rows matching any of several patterns.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FuzzyRowFilter {
    /// Each pattern: `first` the key bytes, `second` the mask.
    #[prost(message, repeated, tag = "1")]
    pub fuzzy_keys_data: Vec<super::hbase::BytesBytesPair>,
    /// Newer clients say which preprocessed mask form they send; the mask
    /// bytes alone tell Basalt (see `FuzzyKey::from_hbase_mask`).
    #[prost(bool, optional, tag = "2")]
    pub is_mask_v2: Option<bool>,
}

/// `ColumnValueFilter`: only the cells of one column whose value passes.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ColumnValueFilter {
    /// Column family.
    #[prost(bytes = "bytes", required, tag = "1")]
    pub family: bytes::Bytes,
    /// Column qualifier.
    #[prost(bytes = "bytes", required, tag = "2")]
    pub qualifier: bytes::Bytes,
    /// A [`CompareType`](super::hbase::CompareType).
    #[prost(enumeration = "super::hbase::CompareType", required, tag = "3")]
    pub compare_op: i32,
    /// What to compare with.
    #[prost(message, optional, tag = "4")]
    pub comparator: Option<Comparator>,
}

// ---------------------------------------------------------------------------
// Comparators' own messages (HBase's `Comparator.proto` facts).
// ---------------------------------------------------------------------------

/// The byte string most comparators hold.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ByteArrayComparable {
    /// The bytes; absent is empty.
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub value: Option<bytes::Bytes>,
}

/// `BinaryComparator`: lexicographic comparison.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BinaryComparator {
    /// The value compared with.
    #[prost(message, optional, tag = "1")]
    pub comparable: Option<ByteArrayComparable>,
}

/// `BinaryPrefixComparator`: lexicographic comparison of a prefix.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BinaryPrefixComparator {
    /// The value compared with.
    #[prost(message, optional, tag = "1")]
    pub comparable: Option<ByteArrayComparable>,
}

/// `NullComparator`: no fields.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NullComparator {}

/// `RegexStringComparator`: a Java regular expression.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegexStringComparator {
    /// The pattern.
    #[prost(string, required, tag = "1")]
    pub pattern: String,
    /// `java.util.regex.Pattern` flags.
    #[prost(int32, required, tag = "2")]
    pub pattern_flags: i32,
    /// The charset cell bytes are decoded with.
    #[prost(string, required, tag = "3")]
    pub charset: String,
    /// `JAVA` (the default) or `JONI`.
    #[prost(string, optional, tag = "4")]
    pub engine: Option<String>,
}

/// `SubstringComparator`: case-insensitive "contains".
#[derive(Clone, PartialEq, prost::Message)]
pub struct SubstringComparator {
    /// The needle (HBase's client sends it lower-cased).
    #[prost(string, required, tag = "1")]
    pub substr: String,
}
