//! Table and column-family descriptors, with HBase's options and defaults.
//!
//! Options can be set through typed builder methods or by HBase's option
//! names (`set_option("BLOOMFILTER", "ROWCOL")`), which is what the shell and
//! the gateways use; both paths share one validation.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::index::{IndexDescriptor, IndexState};

/// Smallest and largest BLOCKSIZE accepted (HBase allows 1 KiB .. 16 MiB).
pub const MIN_BLOCK_SIZE: u32 = 1024;
/// See [`MIN_BLOCK_SIZE`].
pub const MAX_BLOCK_SIZE: u32 = 16 * 1024 * 1024;

macro_rules! option_enum {
    ($(#[$meta:meta])* $name:ident, $option:literal { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every accepted value, in HBase's spelling.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// HBase's spelling of the value.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                let upper = s.trim().to_ascii_uppercase();
                $(if upper == $text { return Ok($name::$variant); })+
                Err(Error::invalid(format!(
                    "unknown {} value '{}'; expected one of {}",
                    $option,
                    s,
                    [$($text),+].join(", ")
                )))
            }
        }
    };
}

option_enum!(
    /// BLOOMFILTER: what the per-file bloom filter is keyed on.
    BloomType, "BLOOMFILTER" {
        /// No bloom filter.
        None => "NONE",
        /// Keyed on the row key (HBase's default).
        #[default]
        Row => "ROW",
        /// Keyed on row + family + qualifier.
        RowCol => "ROWCOL",
    }
);

option_enum!(
    /// COMPRESSION: block compression of store files.
    Compression, "COMPRESSION" {
        /// Uncompressed (default).
        #[default]
        None => "NONE",
        /// Snappy.
        Snappy => "SNAPPY",
        /// LZ4.
        Lz4 => "LZ4",
        /// Zstandard.
        Zstd => "ZSTD",
        /// Gzip / deflate.
        Gz => "GZ",
    }
);

option_enum!(
    /// DATA_BLOCK_ENCODING: key prefix compression inside data blocks.
    DataBlockEncoding, "DATA_BLOCK_ENCODING" {
        /// Keys stored whole (default).
        #[default]
        None => "NONE",
        /// Shared key prefix with the previous key elided.
        Prefix => "PREFIX",
        /// Prefix plus timestamp/type deltas.
        Diff => "DIFF",
        /// Diff with cheaper decoding.
        FastDiff => "FAST_DIFF",
        /// HBase's keys-whole blocks with a row index: Basalt stores keys
        /// whole, its blocks' restart points already index them.
        RowIndexV1 => "ROW_INDEX_V1",
    }
);

option_enum!(
    /// KEEP_DELETED_CELLS: keep deleted cells for time-travel reads.
    KeepDeletedCells, "KEEP_DELETED_CELLS" {
        /// Deleted cells are gone for every read (default).
        #[default]
        False => "FALSE",
        /// Reads whose time range ends before a delete still see what it covers.
        True => "TRUE",
        /// Like TRUE, but deleted cells also expire by TTL.
        Ttl => "TTL",
    }
);

/// Options of one column family (a store, in HBase's terms).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnFamilyDescriptor {
    name: String,
    /// VERSIONS: versions kept per column.
    pub max_versions: u32,
    /// MIN_VERSIONS: versions kept even when expired by TTL.
    pub min_versions: u32,
    /// TTL in seconds; `None` is FOREVER.
    pub ttl_seconds: Option<u64>,
    /// KEEP_DELETED_CELLS.
    pub keep_deleted_cells: KeepDeletedCells,
    /// BLOOMFILTER.
    pub bloom_filter: BloomType,
    /// COMPRESSION.
    pub compression: Compression,
    /// BLOCKSIZE in bytes (uncompressed target size of a data block).
    pub block_size: u32,
    /// BLOCKCACHE: cache this family's data blocks.
    pub block_cache: bool,
    /// IN_MEMORY: priority in the block cache.
    pub in_memory: bool,
    /// DATA_BLOCK_ENCODING.
    pub data_block_encoding: DataBlockEncoding,
    /// NEW_VERSION_BEHAVIOR (HBase 2, HBASE-15968): a delete marker masks
    /// only puts written before it (lower sequence id), and versions are
    /// counted as of each delete, so a delete never brings back a version
    /// that was already beyond VERSIONS. Default false (HBase's classic
    /// rules). Catalogs written before the option existed read as false.
    #[serde(default)]
    pub new_version_behavior: bool,
}

/// The default VERSIONS: 3, as in Thrift1's `ColumnDescriptor`.
pub const DEFAULT_MAX_VERSIONS: u32 = 3;
/// HBase's default BLOCKSIZE.
pub const DEFAULT_BLOCK_SIZE: u32 = 65536;

impl ColumnFamilyDescriptor {
    /// A family with every option at its default. The name is checked by
    /// [`ColumnFamilyDescriptor::validate`] (and by table validation).
    pub fn new(name: impl Into<String>) -> Self {
        ColumnFamilyDescriptor {
            name: name.into(),
            max_versions: DEFAULT_MAX_VERSIONS,
            min_versions: 0,
            ttl_seconds: None,
            keep_deleted_cells: KeepDeletedCells::False,
            bloom_filter: BloomType::Row,
            compression: Compression::None,
            block_size: DEFAULT_BLOCK_SIZE,
            block_cache: true,
            in_memory: false,
            data_block_encoding: DataBlockEncoding::None,
            new_version_behavior: false,
        }
    }

    /// The family name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Builder: VERSIONS.
    pub fn max_versions(mut self, versions: u32) -> Self {
        self.max_versions = versions;
        self
    }

    /// Builder: MIN_VERSIONS.
    pub fn min_versions(mut self, versions: u32) -> Self {
        self.min_versions = versions;
        self
    }

    /// Builder: TTL in seconds.
    pub fn ttl_seconds(mut self, seconds: u64) -> Self {
        self.ttl_seconds = Some(seconds);
        self
    }

    /// Builder: KEEP_DELETED_CELLS.
    pub fn keep_deleted_cells(mut self, keep: KeepDeletedCells) -> Self {
        self.keep_deleted_cells = keep;
        self
    }

    /// Builder: BLOOMFILTER.
    pub fn bloom_filter(mut self, bloom: BloomType) -> Self {
        self.bloom_filter = bloom;
        self
    }

    /// Builder: COMPRESSION.
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Builder: BLOCKSIZE.
    pub fn block_size(mut self, bytes: u32) -> Self {
        self.block_size = bytes;
        self
    }

    /// Builder: BLOCKCACHE.
    pub fn block_cache(mut self, enabled: bool) -> Self {
        self.block_cache = enabled;
        self
    }

    /// Builder: IN_MEMORY.
    pub fn in_memory(mut self, enabled: bool) -> Self {
        self.in_memory = enabled;
        self
    }

    /// Builder: DATA_BLOCK_ENCODING.
    pub fn data_block_encoding(mut self, encoding: DataBlockEncoding) -> Self {
        self.data_block_encoding = encoding;
        self
    }

    /// Builder: NEW_VERSION_BEHAVIOR.
    pub fn new_version_behavior(mut self, enabled: bool) -> Self {
        self.new_version_behavior = enabled;
        self
    }

    /// TTL in milliseconds, if any.
    pub fn ttl_millis(&self) -> Option<i64> {
        self.ttl_seconds
            .map(|s| i64::try_from(s.saturating_mul(1000)).unwrap_or(i64::MAX))
    }

    /// Sets an option by its HBase name (case-insensitive), parsing the value
    /// the way the HBase shell does. TTL accepts seconds or `FOREVER`.
    pub fn set_option(&mut self, option: &str, value: &str) -> Result<()> {
        let value = value.trim();
        match option.trim().to_ascii_uppercase().as_str() {
            "VERSIONS" | "MAX_VERSIONS" => self.max_versions = parse_number(option, value)?,
            "MIN_VERSIONS" => self.min_versions = parse_number(option, value)?,
            "TTL" => {
                self.ttl_seconds = if value.eq_ignore_ascii_case("FOREVER") {
                    None
                } else {
                    let seconds: u64 = parse_number(option, value)?;
                    // HBase stores FOREVER as Integer.MAX_VALUE seconds.
                    (seconds < i32::MAX as u64).then_some(seconds)
                }
            }
            "KEEP_DELETED_CELLS" => self.keep_deleted_cells = value.parse()?,
            "BLOOMFILTER" => self.bloom_filter = value.parse()?,
            "COMPRESSION" => self.compression = value.parse()?,
            "BLOCKSIZE" => self.block_size = parse_number(option, value)?,
            "BLOCKCACHE" => self.block_cache = parse_bool(option, value)?,
            "IN_MEMORY" => self.in_memory = parse_bool(option, value)?,
            "DATA_BLOCK_ENCODING" => self.data_block_encoding = value.parse()?,
            "NEW_VERSION_BEHAVIOR" => self.new_version_behavior = parse_bool(option, value)?,
            _ => {
                return Err(Error::invalid(format!(
                    "unknown column family option '{option}'"
                )))
            }
        }
        Ok(())
    }

    /// The options in HBase's order and spelling, as `describe` prints them.
    pub fn options(&self) -> Vec<(&'static str, String)> {
        let mut options = vec![
            ("BLOOMFILTER", self.bloom_filter.to_string()),
            ("IN_MEMORY", self.in_memory.to_string()),
            ("VERSIONS", self.max_versions.to_string()),
            ("KEEP_DELETED_CELLS", self.keep_deleted_cells.to_string()),
            ("DATA_BLOCK_ENCODING", self.data_block_encoding.to_string()),
            (
                "TTL",
                self.ttl_seconds
                    .map_or_else(|| "FOREVER".to_string(), |s| s.to_string()),
            ),
            ("COMPRESSION", self.compression.to_string()),
            ("MIN_VERSIONS", self.min_versions.to_string()),
            ("BLOCKCACHE", self.block_cache.to_string()),
            ("BLOCKSIZE", self.block_size.to_string()),
        ];
        // Listed only when set, so descriptions of families that do not use
        // it read exactly as before.
        if self.new_version_behavior {
            options.push(("NEW_VERSION_BEHAVIOR", "true".to_string()));
        }
        options
    }

    /// Checks the name and every option.
    pub fn validate(&self) -> Result<()> {
        validate_family_name(self.name.as_bytes())?;
        if self.max_versions == 0 {
            return Err(Error::invalid(format!(
                "family '{}': VERSIONS must be at least 1",
                self.name
            )));
        }
        if self.min_versions > self.max_versions {
            return Err(Error::invalid(format!(
                "family '{}': MIN_VERSIONS ({}) must not exceed VERSIONS ({})",
                self.name, self.min_versions, self.max_versions
            )));
        }
        if self.ttl_seconds == Some(0) {
            return Err(Error::invalid(format!(
                "family '{}': TTL must be positive",
                self.name
            )));
        }
        if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&self.block_size) {
            return Err(Error::invalid(format!(
                "family '{}': BLOCKSIZE {} is outside {}..={}",
                self.name, self.block_size, MIN_BLOCK_SIZE, MAX_BLOCK_SIZE
            )));
        }
        Ok(())
    }
}

/// Checks a column family name: non-empty, printable, no `:` (it separates
/// family from qualifier in every text protocol), not starting with `.`.
pub fn validate_family_name(name: &[u8]) -> Result<()> {
    let shown = String::from_utf8_lossy(name);
    if name.is_empty() {
        return Err(Error::invalid("column family name must not be empty"));
    }
    if name.len() > MAX_FAMILY_NAME_BYTES {
        return Err(Error::invalid(format!(
            "column family name '{}...' is {} bytes long; the limit is {MAX_FAMILY_NAME_BYTES}",
            String::from_utf8_lossy(&name[..16]),
            name.len()
        )));
    }
    if name[0] == b'.' {
        return Err(Error::invalid(format!(
            "column family name '{shown}' must not start with '.'"
        )));
    }
    if let Some(&bad) = name
        .iter()
        .find(|&&b| !(0x20..0x7f).contains(&b) || b == b':' || b == b'\\' || b == b'/')
    {
        return Err(Error::invalid(format!(
            "column family name '{shown}' contains an illegal character (byte 0x{bad:02x}); \
             names must be printable and must not contain ':', '\\' or '/'"
        )));
    }
    Ok(())
}

/// Longest column family name, in bytes: HBase stores a family's length in
/// one signed byte of every cell (KeyValue), so it refuses longer names;
/// the name is also one directory name of the data set.
pub const MAX_FAMILY_NAME_BYTES: usize = 127;

/// Longest namespace and longest table qualifier, in bytes each. Each is
/// one directory name of the data set, and 255 bytes is the longest name
/// Linux file systems (and HDFS by default) accept: a longer accepted name
/// could never be flushed. Checked at creation, so an accepted name is
/// always storable.
pub const MAX_TABLE_NAME_PART_BYTES: usize = 255;

/// Checks a table name: `[namespace:]qualifier`, each part of letters,
/// digits, `_`, `-` and `.`, not starting with `.` or `-`, and at most
/// [`MAX_TABLE_NAME_PART_BYTES`] long.
pub fn validate_table_name(name: &str) -> Result<()> {
    let parts: Vec<&str> = name.split(':').collect();
    if parts.len() > 2 {
        return Err(Error::invalid(format!(
            "table name '{name}' has more than one ':'"
        )));
    }
    for part in parts {
        check_name_part("table name", name, part)?;
    }
    Ok(())
}

/// One part of a table name (or a namespace name, `what` says which for
/// the messages): non-empty, at most [`MAX_TABLE_NAME_PART_BYTES`], of
/// letters, digits, `_`, `-` and `.`, not starting with `.` or `-`.
fn check_name_part(what: &str, name: &str, part: &str) -> Result<()> {
    if part.is_empty() {
        return Err(Error::invalid(format!("{what} '{name}' has an empty part")));
    }
    if part.len() > MAX_TABLE_NAME_PART_BYTES {
        return Err(Error::invalid(format!(
            "{what} '{}...' has a part of {} bytes; the limit is \
             {MAX_TABLE_NAME_PART_BYTES} for the namespace and for the table",
            name.chars().take(16).collect::<String>(),
            part.len()
        )));
    }
    if part.starts_with('.') || part.starts_with('-') {
        return Err(Error::invalid(format!(
            "{what} '{name}' must not start with '.' or '-'"
        )));
    }
    if let Some(bad) = part
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(Error::invalid(format!(
            "illegal character '{bad}' in {what} '{name}'; \
             use letters, digits, '_', '-' and '.'"
        )));
    }
    Ok(())
}

/// The namespace every table without one (`t1`, not `ns:t1`) is in.
pub const DEFAULT_NAMESPACE: &str = "default";
/// HBase's namespace of system tables; like `default`, it always exists.
pub const SYSTEM_NAMESPACE: &str = "hbase";
/// The namespaces that exist without being created and cannot be dropped.
pub const RESERVED_NAMESPACES: [&str; 2] = [DEFAULT_NAMESPACE, SYSTEM_NAMESPACE];

/// The namespace of a table name: the part before `:`, or `default`.
pub fn namespace_of(table: &str) -> &str {
    table
        .split_once(':')
        .map_or(DEFAULT_NAMESPACE, |(namespace, _)| namespace)
}

/// Checks a namespace name: the rules of a table name's namespace part
/// (letters, digits, `_`, `-`, `.`; at most
/// [`MAX_TABLE_NAME_PART_BYTES`] bytes), since every table of the
/// namespace is named with it.
pub fn validate_namespace_name(name: &str) -> Result<()> {
    // A namespace is valid exactly when it can be a table name's first part.
    check_name_part("namespace name", name, name)
}

/// A namespace: its name and free-form properties (HBase's
/// `NamespaceDescriptor`; HBase reads quota keys such as
/// `hbase.namespace.quota.maxtables` from them, Basalt keeps them for the
/// clients that set and read them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceDescriptor {
    /// The name.
    pub name: String,
    /// Properties, by key.
    #[serde(default)]
    pub properties: std::collections::BTreeMap<String, String>,
}

impl NamespaceDescriptor {
    /// A namespace with no properties.
    pub fn new(name: impl Into<String>) -> Self {
        NamespaceDescriptor {
            name: name.into(),
            properties: Default::default(),
        }
    }

    /// Adds or replaces a property.
    pub fn property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.insert(key.into(), value.into());
        self
    }
}

fn parse_number<T: FromStr>(option: &str, value: &str) -> Result<T> {
    value
        .parse()
        .map_err(|_| Error::invalid(format!("option {option}: '{value}' is not a valid number")))
}

fn parse_bool(option: &str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Error::invalid(format!(
            "option {option}: '{value}' is not true or false"
        ))),
    }
}

/// A table: its name and its column families.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDescriptor {
    name: String,
    families: Vec<ColumnFamilyDescriptor>,
    /// Its secondary indexes (`crate::index`), in the order created.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    indexes: Vec<IndexDescriptor>,
}

impl TableDescriptor {
    /// A table with no families yet (add them with [`TableDescriptor::family`]).
    pub fn new(name: impl Into<String>) -> Self {
        TableDescriptor {
            name: name.into(),
            families: Vec::new(),
            indexes: Vec::new(),
        }
    }

    /// Builder: adds a family.
    pub fn family(mut self, family: ColumnFamilyDescriptor) -> Self {
        self.families.push(family);
        self
    }

    /// The table name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The families, sorted by name once validated.
    pub fn families(&self) -> &[ColumnFamilyDescriptor] {
        &self.families
    }

    /// Looks a family up by name.
    pub fn get_family(&self, name: &[u8]) -> Option<&ColumnFamilyDescriptor> {
        self.families.iter().find(|f| f.name.as_bytes() == name)
    }

    /// Adds or replaces a family (for `alter`).
    pub fn upsert_family(&mut self, family: ColumnFamilyDescriptor) {
        match self.families.iter_mut().find(|f| f.name == family.name) {
            Some(existing) => *existing = family,
            None => {
                self.families.push(family);
                self.families.sort_by(|a, b| a.name.cmp(&b.name));
            }
        }
    }

    /// Removes a family; false if there was none of that name.
    pub fn remove_family(&mut self, name: &str) -> bool {
        let before = self.families.len();
        self.families.retain(|f| f.name != name);
        self.families.len() != before
    }

    /// The secondary indexes.
    pub fn indexes(&self) -> &[IndexDescriptor] {
        &self.indexes
    }

    /// Looks an index up by name.
    pub fn get_index(&self, name: &str) -> Option<&IndexDescriptor> {
        self.indexes.iter().find(|i| i.name == name)
    }

    /// Adds an index after checking it: a new name, and every column in
    /// one of the table's families, none of which keeps deleted cells.
    pub fn add_index(&mut self, index: IndexDescriptor) -> Result<()> {
        index.validate()?;
        if self.get_index(&index.name).is_some() {
            return Err(Error::invalid(format!(
                "table '{}' already has an index named '{}'",
                self.name, index.name
            )));
        }
        let families = index
            .columns
            .iter()
            .map(|c| &c.family)
            .chain(index.covered.iter().map(|(family, _)| family));
        for family in families {
            let Some(descriptor) = self.get_family(family) else {
                return Err(Error::invalid(format!(
                    "index '{}' names family '{}', which table '{}' does not have",
                    index.name,
                    String::from_utf8_lossy(family),
                    self.name
                )));
            };
            // A major compaction there can bring a deleted cell back with
            // no write: HBase counts a family delete marker as a version of
            // the empty qualifier and drops it once VERSIONS newer ones
            // exist, while the deleted cells of other columns are kept. No
            // index can follow a change no write announces (the reference
            // model's fault run found one going stale this way).
            if descriptor.keep_deleted_cells != KeepDeletedCells::False {
                return Err(Error::invalid(format!(
                    "index '{}' reads family '{}', which keeps deleted cells \
                     (KEEP_DELETED_CELLS => {}): a major compaction there can bring a \
                     deleted cell back without a write, which an index cannot follow; \
                     index columns of a family that does not keep deleted cells",
                    index.name,
                    String::from_utf8_lossy(family),
                    descriptor.keep_deleted_cells
                )));
            }
        }
        self.indexes.push(index);
        Ok(())
    }

    /// Replaces the state of an index; false if there is none of that name.
    pub fn set_index_state(&mut self, name: &str, state: IndexState) -> bool {
        match self.indexes.iter_mut().find(|i| i.name == name) {
            Some(index) => {
                index.state = state;
                true
            }
            None => false,
        }
    }

    /// Removes an index; false if there was none of that name.
    pub fn remove_index(&mut self, name: &str) -> bool {
        let before = self.indexes.len();
        self.indexes.retain(|i| i.name != name);
        self.indexes.len() != before
    }

    /// Checks the table name and every family, rejects duplicate families and
    /// tables without any, and sorts the families by name.
    pub fn validate(&mut self) -> Result<()> {
        validate_table_name(&self.name)?;
        if self.families.is_empty() {
            return Err(Error::invalid(format!(
                "table '{}' must have at least one column family",
                self.name
            )));
        }
        let mut seen = BTreeSet::new();
        for family in &self.families {
            family.validate()?;
            if !seen.insert(family.name.as_str()) {
                return Err(Error::invalid(format!(
                    "duplicate column family '{}' in table '{}'",
                    family.name, self.name
                )));
            }
        }
        self.families.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_over_a_family_that_keeps_deleted_cells_is_refused_naming_it() {
        use crate::index::IndexColumn;
        for keep in [KeepDeletedCells::True, KeepDeletedCells::Ttl] {
            let mut table = TableDescriptor::new("t")
                .family(ColumnFamilyDescriptor::new("plain"))
                .family(ColumnFamilyDescriptor::new("kept").keep_deleted_cells(keep));
            let by_kept = IndexDescriptor::new("by_kept", vec![IndexColumn::new("kept", "a")]);
            let err = table.add_index(by_kept).unwrap_err().to_string();
            assert!(
                err.contains("'kept'") && err.contains("keeps deleted cells"),
                "{err}"
            );
            let covering = IndexDescriptor::new("covering", vec![IndexColumn::new("plain", "a")])
                .cover("kept", "b");
            assert!(table.add_index(covering).is_err());
            assert!(table.indexes().is_empty());
            let plain = IndexDescriptor::new("plain", vec![IndexColumn::new("plain", "a")]);
            table.add_index(plain).unwrap();
        }
    }

    #[test]
    fn a_table_without_a_namespace_is_in_default() {
        assert_eq!(namespace_of("t1"), "default");
        assert_eq!(namespace_of("ns:t1"), "ns");
    }

    #[test]
    fn namespace_names_follow_the_table_name_rules() {
        assert!(validate_namespace_name("ns_1.a-b").is_ok());
        for bad in ["", "a:b", ".x", "-x", "a b", &"n".repeat(256)] {
            let e = validate_namespace_name(bad).unwrap_err();
            assert!(e.to_string().contains("namespace name"), "{bad}: {e}");
        }
    }

    #[test]
    fn names_at_the_limits_are_accepted_and_longer_ones_refused() {
        let table = "t".repeat(MAX_TABLE_NAME_PART_BYTES);
        assert!(validate_table_name(&table).is_ok());
        assert!(validate_table_name(&format!("{table}t")).is_err());
        let namespace = "n".repeat(MAX_TABLE_NAME_PART_BYTES + 1);
        let err = validate_table_name(&format!("{namespace}:t"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("limit is 255"), "{err}");
        let family = "f".repeat(MAX_FAMILY_NAME_BYTES);
        assert!(validate_family_name(family.as_bytes()).is_ok());
        let err = validate_family_name(format!("{family}f").as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("128 bytes long; the limit is 127"), "{err}");
    }

    #[test]
    fn defaults_match_the_semantics_table() {
        let f = ColumnFamilyDescriptor::new("cf");
        assert_eq!(f.max_versions, 3);
        assert_eq!(f.min_versions, 0);
        assert_eq!(f.ttl_seconds, None);
        assert_eq!(f.bloom_filter, BloomType::Row);
        assert_eq!(f.compression, Compression::None);
        assert_eq!(f.block_size, 65536);
        assert!(f.block_cache);
        assert!(!f.in_memory);
        assert_eq!(f.data_block_encoding, DataBlockEncoding::None);
        assert_eq!(f.keep_deleted_cells, KeepDeletedCells::False);
        f.validate().unwrap();
    }

    #[test]
    fn options_set_by_hbase_name() {
        let mut f = ColumnFamilyDescriptor::new("cf");
        f.set_option("bloomfilter", "rowcol").unwrap();
        f.set_option("VERSIONS", "5").unwrap();
        f.set_option("TTL", "86400").unwrap();
        f.set_option("MIN_VERSIONS", "1").unwrap();
        f.set_option("COMPRESSION", "ZSTD").unwrap();
        f.set_option("IN_MEMORY", "true").unwrap();
        f.set_option("KEEP_DELETED_CELLS", "TTL").unwrap();
        f.set_option("DATA_BLOCK_ENCODING", "FAST_DIFF").unwrap();
        f.set_option("BLOCKSIZE", "4096").unwrap();
        f.set_option("BLOCKCACHE", "false").unwrap();
        assert_eq!(f.bloom_filter, BloomType::RowCol);
        assert_eq!(f.max_versions, 5);
        assert_eq!(f.ttl_seconds, Some(86400));
        assert_eq!(f.compression, Compression::Zstd);
        assert_eq!(f.data_block_encoding, DataBlockEncoding::FastDiff);
        f.validate().unwrap();
        f.set_option("TTL", "FOREVER").unwrap();
        assert_eq!(f.ttl_seconds, None);
    }

    #[test]
    fn a_family_with_hbases_row_index_encoding_is_accepted_and_named_back() {
        // Found importing HBase snapshots: HBase 2.x families may carry
        // ROW_INDEX_V1, which a create or an import must not refuse.
        let mut f = ColumnFamilyDescriptor::new("cf");
        f.set_option("DATA_BLOCK_ENCODING", "ROW_INDEX_V1").unwrap();
        assert_eq!(f.data_block_encoding, DataBlockEncoding::RowIndexV1);
        assert_eq!(f.data_block_encoding.to_string(), "ROW_INDEX_V1");
        f.validate().unwrap();
    }

    #[test]
    fn unknown_option_values_are_clear_errors() {
        let mut f = ColumnFamilyDescriptor::new("cf");
        let err = f
            .set_option("COMPRESSION", "BROTLI")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown COMPRESSION value 'BROTLI'"), "{err}");
        assert!(err.contains("SNAPPY"), "{err}");
        let err = f.set_option("VERSIONS", "many").unwrap_err().to_string();
        assert!(err.contains("not a valid number"), "{err}");
        let err = f.set_option("COLOUR", "red").unwrap_err().to_string();
        assert!(err.contains("unknown column family option"), "{err}");
        let err = f.set_option("IN_MEMORY", "yes").unwrap_err().to_string();
        assert!(err.contains("not true or false"), "{err}");
    }

    #[test]
    fn family_names_must_be_printable() {
        assert!(validate_family_name(b"cf1").is_ok());
        for bad in [&b""[..], b".meta", b"a:b", b"tab\t", b"\xff"] {
            assert!(validate_family_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn table_validation_catches_shape_errors() {
        let mut empty = TableDescriptor::new("t");
        assert!(empty
            .validate()
            .unwrap_err()
            .to_string()
            .contains("at least one"));

        let mut dup = TableDescriptor::new("t")
            .family(ColumnFamilyDescriptor::new("a"))
            .family(ColumnFamilyDescriptor::new("a"));
        assert!(dup
            .validate()
            .unwrap_err()
            .to_string()
            .contains("duplicate"));

        let mut bad_name =
            TableDescriptor::new("no spaces").family(ColumnFamilyDescriptor::new("a"));
        assert!(bad_name.validate().is_err());

        let mut ok = TableDescriptor::new("ns:t-1.x")
            .family(ColumnFamilyDescriptor::new("b"))
            .family(ColumnFamilyDescriptor::new("a"));
        ok.validate().unwrap();
        assert_eq!(ok.families()[0].name(), "a");
    }

    #[test]
    fn option_consistency_is_checked() {
        assert!(ColumnFamilyDescriptor::new("a")
            .max_versions(0)
            .validate()
            .is_err());
        assert!(ColumnFamilyDescriptor::new("a")
            .max_versions(1)
            .min_versions(2)
            .ttl_seconds(10)
            .validate()
            .is_err());
        assert!(ColumnFamilyDescriptor::new("a")
            .block_size(10)
            .validate()
            .is_err());
    }
}
