//! Filters and comparators as they travel: a Java class name and that
//! class's serialized protobuf message (HBase's `Filter.proto` and
//! `Comparator.proto` facts: names and field numbers).

/// A filter: the Java class name and its serialized message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Filter {
    /// e.g. `org.apache.hadoop.hbase.filter.PrefixFilter`.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The class's own message.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub serialized_filter: Option<Vec<u8>>,
}

/// A comparator: the Java class name and its serialized message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Comparator {
    /// e.g. `org.apache.hadoop.hbase.filter.BinaryComparator`.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The class's own message.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub serialized_comparator: Option<Vec<u8>>,
}
