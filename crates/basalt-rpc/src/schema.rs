//! HBase's schema messages (`TableSchema`, `ColumnFamilySchema`,
//! `NamespaceDescriptor`) read into Basalt's descriptors and written back.
//!
//! A family's options travel as `BytesBytesPair` attributes: HBase's key
//! (`VERSIONS`, `TTL`, `BLOOMFILTER`...) and the UTF-8 text of the value,
//! exactly as HBase's `ColumnFamilyDescriptorBuilder` stores them. Keys
//! are matched exactly (HBase's are case-sensitive bytes); values are
//! parsed by Basalt's own `set_option`, so the native RPC, the shell and
//! the Thrift gateways accept the same spellings and refuse the same
//! mistakes. An attribute left out takes HBase's default, which is
//! Basalt's for every option but `VERSIONS` (1 in HBase, see
//! [`HBASE_DEFAULT_VERSIONS`]).
//!
//! Attributes Basalt has no counterpart for:
//! - Refused, because ignoring them would silently give weaker guarantees
//!   than asked for: a family's `ENCRYPTION` / `ENCRYPTION_KEY` (Basalt
//!   does not encrypt store files), a table's `READONLY => true` (writes
//!   would be accepted), `REGION_REPLICATION` above 1 (there are no read
//!   replicas), a `DURABILITY` other than `USE_DEFAULT` (each write says
//!   its own durability; the Thrift2 gateway refuses it the same way), and
//!   coprocessors (`coprocessor$N`: Java code Basalt cannot run).
//! - Accepted and not kept: everything else (`REPLICATION_SCOPE`,
//!   `CACHE_DATA_ON_WRITE`, `PREFETCH_BLOCKS_ON_OPEN`, `COMPRESSION_COMPACT`,
//!   `DFS_REPLICATION`, `STORAGE_POLICY`, `IS_MOB`, `MAX_FILESIZE`,
//!   `MEMSTORE_FLUSHSIZE`, `SPLIT_POLICY`, `NORMALIZATION_ENABLED`,
//!   `PRIORITY`, per-family and per-table `configuration`, and names HBase
//!   itself does not know). Basalt's descriptors have a fixed set of
//!   options and no free-form map to keep them in; these tune caching,
//!   file placement and background work, which Basalt sizes server-wide.
//!   HBase keeps keys it does not know as inert text, so a client that
//!   sends such names (hbase-driver's `max_versions`, `time_to_live`...)
//!   sees no difference in behaviour, only in what a describe answers.

use std::collections::BTreeMap;

use basalt::{ColumnFamilyDescriptor, Error, NamespaceDescriptor, TableDescriptor};

use crate::error::RpcError;
use crate::meta::{table_name_proto, table_name_text, META_TABLE};
use crate::proto::hbase as pb;

/// The family attributes Basalt keeps, by HBase's key.
pub const FAMILY_ATTRIBUTES: [&str; 11] = [
    "VERSIONS",
    "MIN_VERSIONS",
    "TTL",
    "KEEP_DELETED_CELLS",
    "BLOOMFILTER",
    "COMPRESSION",
    "BLOCKSIZE",
    "BLOCKCACHE",
    "IN_MEMORY",
    "DATA_BLOCK_ENCODING",
    "NEW_VERSION_BEHAVIOR",
];

/// HBase's default VERSIONS (its `ColumnFamilyDescriptorBuilder`'s): a
/// family created by an HBase client without the attribute keeps one
/// version. Basalt's own default is 3 (Thrift1's), so it is set here for
/// the clients that expect HBase's; every other HBase default is Basalt's.
pub const HBASE_DEFAULT_VERSIONS: u32 = 1;

/// HBase's `FOREVER` TTL on the wire: `Integer.MAX_VALUE` seconds, the
/// number HBase's clients parse (they do not read the word `FOREVER`).
const FOREVER_SECONDS: &str = "2147483647";

/// An `IllegalArgumentException` (final) with `message`: the class every
/// descriptor mistake gets, whether found here or by Basalt's validation.
fn invalid(message: String) -> RpcError {
    RpcError::from(Error::InvalidArgument(message))
}

/// Basalt's message of a validation error, without its kind's prefix.
fn reason(error: Error) -> String {
    match error {
        Error::InvalidArgument(message) => message,
        other => other.to_string(),
    }
}

fn utf8<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, RpcError> {
    std::str::from_utf8(bytes).map_err(|_| invalid(format!("{what} is not UTF-8: {bytes:?}")))
}

/// A family descriptor from its schema: HBase's defaults, then every attribute
/// Basalt keeps, checked as a whole.
pub fn family_descriptor(
    schema: &pb::ColumnFamilySchema,
) -> Result<ColumnFamilyDescriptor, RpcError> {
    let name = utf8(&schema.name, "a column family name")?;
    let mut family = ColumnFamilyDescriptor::new(name).max_versions(HBASE_DEFAULT_VERSIONS);
    for pair in &schema.attributes {
        let key = String::from_utf8_lossy(&pair.first);
        let key = key.as_ref();
        if key == "ENCRYPTION" || key == "ENCRYPTION_KEY" {
            if pair.second.is_empty() {
                continue;
            }
            return Err(RpcError::do_not_retry(format!(
                "column family '{name}': attribute {key} is refused: Basalt does not encrypt \
                 store files, and would otherwise keep this family's data in the clear"
            )));
        }
        if !FAMILY_ATTRIBUTES.contains(&key) {
            continue;
        }
        let value = std::str::from_utf8(&pair.second).map_err(|_| {
            invalid(format!(
                "column family '{name}': attribute {key} has a value that is not UTF-8: {:?}",
                pair.second
            ))
        })?;
        family.set_option(key, value).map_err(|e| {
            invalid(format!(
                "column family '{name}': attribute {key} = '{value}': {}",
                reason(e)
            ))
        })?;
    }
    family
        .validate()
        .map_err(|e| invalid(format!("column family '{name}': {}", reason(e))))?;
    Ok(family)
}

/// A family's schema: every option Basalt keeps, as HBase's clients
/// parse them.
pub fn family_schema(family: &ColumnFamilyDescriptor) -> pb::ColumnFamilySchema {
    let attributes = basalt::admin::FamilyInfo::of(family)
        .options
        .into_iter()
        .map(|(key, value)| {
            let value = if key == "TTL" && value == "FOREVER" {
                FOREVER_SECONDS.to_string()
            } else {
                value
            };
            pb::BytesBytesPair {
                first: key.into_bytes(),
                second: value.into_bytes(),
            }
        })
        .collect();
    pb::ColumnFamilySchema {
        name: family.name().as_bytes().to_vec(),
        attributes,
        configuration: Vec::new(),
    }
}

/// Refuses the table attributes Basalt cannot honour (see the module
/// documentation); the others are accepted and not kept.
fn check_table_attributes(table: &str, attributes: &[pb::BytesBytesPair]) -> Result<(), RpcError> {
    for pair in attributes {
        let key = String::from_utf8_lossy(&pair.first);
        let value = String::from_utf8_lossy(&pair.second);
        let value = value.trim();
        let why = match key.as_ref() {
            "READONLY" if value.eq_ignore_ascii_case("true") => {
                "Basalt has no read-only tables; writes would be accepted"
            }
            "REGION_REPLICATION" if value != "1" => {
                "Basalt serves each region once and has no read replicas"
            }
            "DURABILITY" if !value.eq_ignore_ascii_case("USE_DEFAULT") => {
                "Basalt's tables have no durability of their own; each write chooses its own"
            }
            k if k.starts_with("coprocessor$") => "Basalt cannot run Java coprocessors",
            _ => continue,
        };
        return Err(RpcError::do_not_retry(format!(
            "table '{table}': attribute {key} = '{value}' is refused: {why}"
        )));
    }
    Ok(())
}

/// A table descriptor from its schema (name included), its families read
/// by [`family_descriptor`]. The families are not checked as a set here:
/// Basalt's create and alter do that.
pub fn table_descriptor(schema: &pb::TableSchema) -> Result<TableDescriptor, RpcError> {
    let name = table_name_text(
        schema
            .table_name
            .as_ref()
            .ok_or_else(|| RpcError::missing("TableSchema.table_name"))?,
    )?;
    check_table_attributes(&name, &schema.attributes)?;
    let mut descriptor = TableDescriptor::new(name);
    for family in &schema.column_families {
        descriptor = descriptor.family(family_descriptor(family)?);
    }
    Ok(descriptor)
}

/// A table's schema: its name and every family; no table attributes
/// (Basalt keeps none; HBase's clients fill in their defaults).
pub fn table_schema(descriptor: &TableDescriptor) -> pb::TableSchema {
    pb::TableSchema {
        table_name: Some(table_name_proto(descriptor.name())),
        attributes: Vec::new(),
        column_families: descriptor.families().iter().map(family_schema).collect(),
        configuration: Vec::new(),
    }
}

/// `hbase:meta`'s schema as HBase describes it: the families `info` and
/// `table` that Basalt's `hbase:meta` rows use, in memory, small blocks.
pub fn meta_table_schema() -> pb::TableSchema {
    let family = |name: &str| {
        ColumnFamilyDescriptor::new(name)
            .in_memory(true)
            .block_size(8192)
            .bloom_filter(basalt::BloomType::RowCol)
    };
    table_schema(
        &TableDescriptor::new(META_TABLE)
            .family(family("info"))
            .family(family("table")),
    )
}

/// A namespace from its message: the name as UTF-8 and every
/// configuration pair as a property.
pub fn namespace_descriptor(
    message: &pb::NamespaceDescriptor,
) -> Result<NamespaceDescriptor, RpcError> {
    let name = utf8(&message.name, "a namespace name")?;
    let properties: BTreeMap<String, String> = message
        .configuration
        .iter()
        .map(|p| (p.name.clone(), p.value.clone()))
        .collect();
    Ok(NamespaceDescriptor {
        name: name.to_string(),
        properties,
    })
}

/// A namespace's message.
pub fn namespace_message(namespace: &NamespaceDescriptor) -> pb::NamespaceDescriptor {
    pb::NamespaceDescriptor {
        name: namespace.name.as_bytes().to_vec(),
        configuration: namespace
            .properties
            .iter()
            .map(|(name, value)| pb::NameStringPair {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt::{BloomType, Compression, DataBlockEncoding, KeepDeletedCells};

    fn pair(key: &str, value: &str) -> pb::BytesBytesPair {
        pb::BytesBytesPair {
            first: key.as_bytes().to_vec(),
            second: value.as_bytes().to_vec(),
        }
    }

    fn family_with(attributes: &[(&str, &str)]) -> pb::ColumnFamilySchema {
        pb::ColumnFamilySchema {
            name: b"cf".to_vec(),
            attributes: attributes.iter().map(|(k, v)| pair(k, v)).collect(),
            configuration: Vec::new(),
        }
    }

    fn attribute<'a>(schema: &'a pb::ColumnFamilySchema, key: &str) -> &'a [u8] {
        &schema
            .attributes
            .iter()
            .find(|p| p.first == key.as_bytes())
            .unwrap_or_else(|| panic!("no {key}"))
            .second
    }

    #[test]
    fn every_family_attribute_hbase_sends_is_read_from_its_text() {
        let family = family_descriptor(&family_with(&[
            ("VERSIONS", "5"),
            ("MIN_VERSIONS", "1"),
            ("TTL", "86400"),
            ("KEEP_DELETED_CELLS", "TTL"),
            ("BLOOMFILTER", "ROWCOL"),
            ("COMPRESSION", "ZSTD"),
            ("BLOCKSIZE", "4096"),
            ("BLOCKCACHE", "false"),
            ("IN_MEMORY", "true"),
            ("DATA_BLOCK_ENCODING", "FAST_DIFF"),
            ("NEW_VERSION_BEHAVIOR", "true"),
        ]))
        .unwrap();
        assert_eq!(family.name(), "cf");
        assert_eq!(family.max_versions, 5);
        assert_eq!(family.min_versions, 1);
        assert_eq!(family.ttl_seconds, Some(86400));
        assert_eq!(family.keep_deleted_cells, KeepDeletedCells::Ttl);
        assert_eq!(family.bloom_filter, BloomType::RowCol);
        assert_eq!(family.compression, Compression::Zstd);
        assert_eq!(family.block_size, 4096);
        assert!(!family.block_cache);
        assert!(family.in_memory);
        assert_eq!(family.data_block_encoding, DataBlockEncoding::FastDiff);
        assert!(family.new_version_behavior);
    }

    #[test]
    fn a_family_survives_the_round_trip_through_its_schema() {
        let family = ColumnFamilyDescriptor::new("cf")
            .max_versions(7)
            .min_versions(2)
            .ttl_seconds(3600)
            .bloom_filter(BloomType::None)
            .compression(Compression::Snappy)
            .block_size(131072)
            .in_memory(true)
            .keep_deleted_cells(KeepDeletedCells::True)
            .data_block_encoding(DataBlockEncoding::Prefix);
        assert_eq!(family_descriptor(&family_schema(&family)).unwrap(), family);
        let plain = ColumnFamilyDescriptor::new("p");
        assert_eq!(family_descriptor(&family_schema(&plain)).unwrap(), plain);
    }

    #[test]
    fn forever_travels_as_the_number_hbase_clients_parse() {
        let schema = family_schema(&ColumnFamilyDescriptor::new("cf"));
        assert_eq!(attribute(&schema, "TTL"), b"2147483647");
        assert_eq!(attribute(&schema, "VERSIONS"), b"3");
        assert_eq!(attribute(&schema, "BLOCKCACHE"), b"true");
        let back = family_descriptor(&schema).unwrap();
        assert_eq!(back.ttl_seconds, None);
    }

    #[test]
    fn a_bad_value_is_refused_naming_the_family_the_attribute_and_the_value() {
        for (key, value) in [
            ("VERSIONS", "many"),
            ("COMPRESSION", "LZO"),
            ("BLOOMFILTER", "ROWPREFIX_FIXED_LENGTH"),
            ("IN_MEMORY", "yes"),
            ("TTL", "-1"),
        ] {
            let error = family_descriptor(&family_with(&[(key, value)])).unwrap_err();
            assert_eq!(error.class, "java.lang.IllegalArgumentException");
            assert!(error.do_not_retry);
            assert!(error.message.contains("'cf'"), "{error}");
            assert!(error.message.contains(key), "{error}");
            assert!(error.message.contains(value), "{error}");
        }
    }

    #[test]
    fn inconsistent_options_are_refused_as_a_whole() {
        let error = family_descriptor(&family_with(&[("VERSIONS", "1"), ("MIN_VERSIONS", "2")]))
            .unwrap_err();
        assert!(error.message.contains("MIN_VERSIONS"), "{error}");
    }

    #[test]
    fn unknown_and_lowercase_attributes_are_accepted_and_not_kept() {
        let family = family_descriptor(&family_with(&[
            ("REPLICATION_SCOPE", "1"),
            ("max_versions", "9"),
            ("compression_type", "LZO"),
            ("versions", "4"),
        ]))
        .unwrap();
        assert_eq!(family, ColumnFamilyDescriptor::new("cf").max_versions(1));
    }

    #[test]
    fn a_family_without_attributes_gets_hbases_defaults() {
        let family = family_descriptor(&family_with(&[])).unwrap();
        assert_eq!(family.max_versions, 1);
        assert_eq!(family.ttl_seconds, None);
        assert_eq!(family.bloom_filter, BloomType::Row);
        assert_eq!(family.block_size, 65536);
        assert!(family.block_cache);
    }

    #[test]
    fn encryption_is_refused_rather_than_dropped() {
        let error = family_descriptor(&family_with(&[("ENCRYPTION", "AES")])).unwrap_err();
        assert!(error.message.contains("ENCRYPTION"), "{error}");
        assert!(family_descriptor(&family_with(&[("ENCRYPTION", "")])).is_ok());
    }

    #[test]
    fn table_attributes_basalt_cannot_honour_are_refused() {
        let schema = |key: &str, value: &str| pb::TableSchema {
            table_name: Some(table_name_proto("ns:t")),
            attributes: vec![pair(key, value)],
            column_families: vec![family_with(&[])],
            configuration: Vec::new(),
        };
        for (key, value) in [
            ("READONLY", "true"),
            ("REGION_REPLICATION", "2"),
            ("DURABILITY", "FSYNC_WAL"),
            ("coprocessor$1", "|org.example.Observer|1073741823|"),
        ] {
            let error = table_descriptor(&schema(key, value)).unwrap_err();
            assert!(error.message.contains(key), "{error}");
            assert!(error.message.contains("'ns:t'"), "{error}");
        }
        for (key, value) in [
            ("READONLY", "false"),
            ("REGION_REPLICATION", "1"),
            ("DURABILITY", "USE_DEFAULT"),
            ("MAX_FILESIZE", "10737418240"),
        ] {
            let descriptor = table_descriptor(&schema(key, value)).unwrap();
            assert_eq!(descriptor.name(), "ns:t");
        }
    }

    #[test]
    fn a_table_survives_the_round_trip_through_its_schema() {
        let descriptor = TableDescriptor::new("t1")
            .family(ColumnFamilyDescriptor::new("a").max_versions(1))
            .family(ColumnFamilyDescriptor::new("b").ttl_seconds(60));
        let schema = table_schema(&descriptor);
        let name = schema.table_name.as_ref().unwrap();
        assert_eq!(name.namespace, b"default");
        assert_eq!(name.qualifier, b"t1");
        assert_eq!(table_descriptor(&schema).unwrap(), descriptor);
    }

    #[test]
    fn a_schema_without_a_table_name_is_refused() {
        let error = table_descriptor(&pb::TableSchema::default()).unwrap_err();
        assert!(error.message.contains("table_name"), "{error}");
    }

    #[test]
    fn meta_is_described_with_the_families_its_rows_use() {
        let schema = meta_table_schema();
        let name = schema.table_name.unwrap();
        assert_eq!(name.namespace, b"hbase");
        assert_eq!(name.qualifier, b"meta");
        let families: Vec<&[u8]> = schema.column_families.iter().map(|f| &f.name[..]).collect();
        assert_eq!(families, [&b"info"[..], b"table"]);
    }

    #[test]
    fn a_namespace_survives_the_round_trip_through_its_message() {
        let namespace =
            NamespaceDescriptor::new("ns1").property("hbase.namespace.quota.maxtables", "5");
        let message = namespace_message(&namespace);
        assert_eq!(message.name, b"ns1");
        assert_eq!(namespace_descriptor(&message).unwrap(), namespace);
        let bad = pb::NamespaceDescriptor {
            name: vec![0xff],
            configuration: Vec::new(),
        };
        assert!(namespace_descriptor(&bad).is_err());
    }
}
