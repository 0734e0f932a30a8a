//! An HBase snapshot as HBase 2.x leaves it under its root directory (a
//! live `hbase.rootdir`, or the target of HBase's ExportSnapshot):
//!
//! ```text
//! <root>/.hbase-snapshot/<name>/.snapshotinfo   SnapshotDescription
//! <root>/.hbase-snapshot/<name>/data.manifest   SnapshotDataManifest (format 2)
//! <root>/data/<ns>/<table>/<encoded region>/<family>/<hfile>
//! <root>/archive/data/<ns>/<table>/<encoded region>/<family>/<hfile>
//! ```
//!
//! Both snapshot files are protobuf messages written whole (not
//! length-delimited). A store file the manifest names is found in the
//! table's region directory or, once a compaction or a deletion moved it,
//! in the archive: the importer tries both, as HBase's own readers do.
//! Names take three forms:
//! - an HFile (`<hex>` or a bulk-loaded `<hex>_SeqId_<n>_`);
//! - an HFileLink, `[<ns>=]<table>=<encoded region>-<hfile>` (the table was
//!   itself cloned from a snapshot): the file of that other table;
//! - a reference of a split daughter, `<hfile>.<parent encoded region>`
//!   with the manifest's `reference` set: the top half (rows at and after
//!   the split row) or the bottom half of the parent's file.
//!
//! A region's encoded name is the hex MD5 of `<table>,<start key>,<region
//! id>` (HBase's "new format" region names), the table written `ns:name`,
//! or just `name` in the `default` namespace.

use std::path::{Path, PathBuf};

use basalt_rpc::proto::hbase::{RegionInfo, TableName};
use basalt_rpc::proto::master::SnapshotDescription;
use basalt_rpc::proto::snapshot::{reference::Range, SnapshotDataManifest};
use basalt_types::{Error, Result, TableDescriptor};
use bytes::Bytes;

use basalt_engine::fs::FileStore;

/// Where HBase keeps completed snapshots, below its root.
pub const SNAPSHOT_DIR: &str = ".hbase-snapshot";
/// The description file of a snapshot.
pub const SNAPSHOT_INFO: &str = ".snapshotinfo";
/// The manifest of a format-2 snapshot.
pub const DATA_MANIFEST: &str = "data.manifest";
/// The snapshot format read here (HBase 0.98 and later write it).
pub const SNAPSHOT_FORMAT: i32 = 2;

/// A table's name as HBase writes it in region names and snapshot
/// descriptions: `ns:name`, or `name` in the default namespace (the
/// native RPC's reading of a `TableName`).
pub fn table_name_text(name: &TableName) -> Result<String> {
    basalt_rpc::meta::table_name_text(name).map_err(|e| Error::invalid(e.to_string()))
}

/// The two directory names of a table below `data/`: namespace and name.
fn table_dirs(table: &str) -> (String, String) {
    match table.split_once(':') {
        Some((namespace, qualifier)) => (namespace.to_string(), qualifier.to_string()),
        None => ("default".to_string(), table.to_string()),
    }
}

/// HBase's encoded name of a region: the hex MD5 of `table,start,id`.
pub fn encoded_region_name(table: &str, start_key: &[u8], region_id: u64) -> String {
    use md5::{Digest, Md5};
    let mut hasher = Md5::new();
    hasher.update(table.as_bytes());
    hasher.update(b",");
    hasher.update(start_key);
    hasher.update(b",");
    hasher.update(region_id.to_string().as_bytes());
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Which rows of a file a store reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Half {
    /// The whole file.
    Whole,
    /// Rows at and after this row (a daughter's reference, TOP).
    From(Bytes),
    /// Rows before this row (BOTTOM).
    Before(Bytes),
}

impl Half {
    /// True when `row` is in this part of the file.
    pub fn contains(&self, row: &[u8]) -> bool {
        match self {
            Half::Whole => true,
            Half::From(split) => row >= &split[..],
            Half::Before(split) => row < &split[..],
        }
    }
}

/// One store file of a snapshot region: where its bytes may be and which
/// of its rows the region reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// As the manifest names it.
    pub name: String,
    /// The paths it may be at, in the order tried (live, then archive).
    pub candidates: Vec<PathBuf>,
    /// The rows the region reads.
    pub half: Half,
    /// Its size as the manifest records it (0: not recorded).
    pub size: u64,
}

/// One family of a snapshot region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceStore {
    /// The family's name.
    pub family: String,
    /// Its files.
    pub files: Vec<SourceFile>,
}

/// One region of the snapshot, in key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRegion {
    /// First row (inclusive; empty: the table's start).
    pub start_key: Bytes,
    /// End row (exclusive; empty: the table's end).
    pub end_key: Bytes,
    /// HBase's encoded name of the region.
    pub encoded_name: String,
    /// Its stores.
    pub stores: Vec<SourceStore>,
}

/// An HBase snapshot, read and checked.
#[derive(Debug, Clone)]
pub struct HBaseSnapshot {
    /// Its name.
    pub name: String,
    /// The table it is of (`ns:name`, or `name` in `default`).
    pub table: String,
    /// When it was taken (ms since the epoch; 0 if not recorded).
    pub created_ms: i64,
    /// The table's descriptor, as Basalt reads HBase's schema.
    pub descriptor: TableDescriptor,
    /// The regions, in key order, tiling the key space.
    pub regions: Vec<SourceRegion>,
}

impl HBaseSnapshot {
    /// Reads snapshot `name` under HBase root `root`; refuses what it
    /// cannot import whole (another format, regions that do not tile the
    /// key space, a schema Basalt cannot serve), naming why.
    pub fn read(
        files: &dyn FileStore,
        root: &Path,
        name: &str,
        max_manifest_bytes: u64,
    ) -> Result<HBaseSnapshot> {
        if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
            return Err(Error::invalid(format!(
                "'{}' is not an HBase snapshot name",
                name.escape_debug()
            )));
        }
        let dir = root.join(SNAPSHOT_DIR).join(name);
        let info_path = dir.join(SNAPSHOT_INFO);
        if !files.exists(&info_path)? {
            return Err(Error::SnapshotNotFound(format!(
                "{name}: no HBase snapshot at {} (looked for {})",
                root.display(),
                info_path.display()
            )));
        }
        let info_bytes = read_bounded(files, &info_path, max_manifest_bytes)?;
        let description = <SnapshotDescription as prost::Message>::decode(&info_bytes[..])
            .map_err(|e| corrupt(&info_path, format!("not a SnapshotDescription: {e}")))?;
        let version = description.version.unwrap_or(0);
        if version != SNAPSHOT_FORMAT {
            return Err(Error::invalid(format!(
                "HBase snapshot {name} has format {version}; only format {SNAPSHOT_FORMAT} (HBase 0.98 and later) is imported"
            )));
        }
        let manifest_path = dir.join(DATA_MANIFEST);
        if !files.exists(&manifest_path)? {
            return Err(Error::invalid(format!(
                "HBase snapshot {name} has no {DATA_MANIFEST}: it is unfinished (a snapshot being taken keeps its region manifests apart until it completes)"
            )));
        }
        let manifest_bytes = read_bounded(files, &manifest_path, max_manifest_bytes)?;
        let manifest = <SnapshotDataManifest as prost::Message>::decode(&manifest_bytes[..])
            .map_err(|e| corrupt(&manifest_path, format!("not a SnapshotDataManifest: {e}")))?;
        parse(root, name, &description, &manifest, &manifest_path)
    }
}

/// The snapshot's model from its two decoded messages (no I/O: the file
/// paths are candidates, looked up when each file is read).
pub fn parse(
    root: &Path,
    name: &str,
    description: &SnapshotDescription,
    manifest: &SnapshotDataManifest,
    manifest_path: &Path,
) -> Result<HBaseSnapshot> {
    let schema = manifest
        .table_schema
        .as_ref()
        .ok_or_else(|| corrupt(manifest_path, "no table schema (field 1)".into()))?;
    let table_name = schema
        .table_name
        .as_ref()
        .ok_or_else(|| corrupt(manifest_path, "the table schema names no table".into()))?;
    let table = table_name_text(table_name)?;
    let descriptor = basalt_rpc::schema::table_descriptor(schema).map_err(|e| {
        Error::invalid(format!(
            "the schema of table {table} in HBase snapshot {name} cannot be served by Basalt: {e}"
        ))
    })?;
    let mut regions = Vec::new();
    for (index, region) in manifest.region_manifests.iter().enumerate() {
        let info = region.region_info.as_ref().ok_or_else(|| {
            corrupt(
                manifest_path,
                format!("region manifest {index} has no region info"),
            )
        })?;
        if info.replica_id.unwrap_or(0) != 0 || info.split.unwrap_or(false) {
            // A read replica holds no files of its own; a split parent's
            // rows are its daughters' (whose references name its files).
            continue;
        }
        regions.push(source_region(root, &table, info, region)?);
    }
    regions.sort_by(|a, b| a.start_key.cmp(&b.start_key));
    check_tiling(name, &regions)?;
    for region in &regions {
        for store in &region.stores {
            if !descriptor
                .families()
                .iter()
                .any(|f| f.name() == store.family)
            {
                return Err(corrupt(
                    manifest_path,
                    format!(
                        "region {} has files of family '{}', which the schema does not declare",
                        region.encoded_name, store.family
                    ),
                ));
            }
        }
    }
    Ok(HBaseSnapshot {
        name: name.to_string(),
        table,
        created_ms: description.creation_time.unwrap_or(0),
        descriptor,
        regions,
    })
}

fn source_region(
    root: &Path,
    table: &str,
    info: &RegionInfo,
    region: &basalt_rpc::proto::snapshot::SnapshotRegionManifest,
) -> Result<SourceRegion> {
    let start_key = Bytes::from(info.start_key.clone().unwrap_or_default());
    let end_key = Bytes::from(info.end_key.clone().unwrap_or_default());
    let encoded_name = encoded_region_name(table, &start_key, info.region_id);
    let (namespace, qualifier) = table_dirs(table);
    let mut stores = Vec::new();
    for family in &region.family_files {
        let family_name = String::from_utf8(family.family_name.clone()).map_err(|_| {
            Error::invalid(format!("region {encoded_name}: a family name is not UTF-8"))
        })?;
        let mut files = Vec::new();
        for file in &family.store_files {
            files.push(source_file(
                root,
                (&namespace, &qualifier),
                &encoded_name,
                &family_name,
                file,
            )?);
        }
        stores.push(SourceStore {
            family: family_name,
            files,
        });
    }
    Ok(SourceRegion {
        start_key,
        end_key,
        encoded_name,
        stores,
    })
}

/// The live and archived paths of `file` in a region's family directory.
fn family_paths(
    root: &Path,
    table: (&str, &str),
    region: &str,
    family: &str,
    file: &str,
) -> Vec<PathBuf> {
    let tail = Path::new(table.0)
        .join(table.1)
        .join(region)
        .join(family)
        .join(file);
    vec![
        root.join("data").join(&tail),
        root.join("archive").join("data").join(&tail),
    ]
}

fn check_file_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains(['/', '\\']) || name == "." || name == ".." {
        return Err(Error::invalid(format!(
            "'{}' is not a store file name",
            name.escape_debug()
        )));
    }
    Ok(())
}

fn source_file(
    root: &Path,
    table: (&str, &str),
    region: &str,
    family: &str,
    file: &basalt_rpc::proto::snapshot::SnapshotStoreFile,
) -> Result<SourceFile> {
    check_file_name(&file.name)?;
    let size = file.file_size.unwrap_or(0);
    if let Some(reference) = &file.reference {
        // `<hfile>.<parent region>`: half of the parent's file.
        let (hfile, parent) = file.name.rsplit_once('.').ok_or_else(|| {
            Error::invalid(format!(
                "store file {} is a reference but its name names no parent region",
                file.name
            ))
        })?;
        let split = basalt_hfile::parse_key(&reference.splitkey)
            .map(|key| Bytes::copy_from_slice(key.row))
            .map_err(|e| {
                Error::invalid(format!(
                    "the split key of reference {} does not parse: {e}",
                    file.name
                ))
            })?;
        let half = match Range::try_from(reference.range) {
            Ok(Range::Top) => Half::From(split),
            Ok(Range::Bottom) => Half::Before(split),
            Err(_) => {
                return Err(Error::invalid(format!(
                    "reference {} has range {}, neither top (0) nor bottom (1)",
                    file.name, reference.range
                )))
            }
        };
        let mut resolved = resolve_name(root, table, parent, family, hfile)?;
        resolved.half = half;
        resolved.name = file.name.clone();
        resolved.size = size;
        return Ok(resolved);
    }
    let mut resolved = resolve_name(root, table, region, family, &file.name)?;
    resolved.size = size;
    Ok(resolved)
}

/// A plain HFile name or an HFileLink, in `region`'s family directory.
fn resolve_name(
    root: &Path,
    table: (&str, &str),
    region: &str,
    family: &str,
    name: &str,
) -> Result<SourceFile> {
    check_file_name(name)?;
    let candidates = match parse_link(name) {
        Some(link) => family_paths(
            root,
            (&link.namespace, &link.table),
            &link.region,
            family,
            &link.hfile,
        ),
        None => family_paths(root, table, region, family, name),
    };
    Ok(SourceFile {
        name: name.to_string(),
        candidates,
        half: Half::Whole,
        size: 0,
    })
}

/// The parts of an HFileLink's name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Link {
    namespace: String,
    table: String,
    region: String,
    hfile: String,
}

/// `[ns=]table=region-hfile`, or `None` for a name that is no link.
fn parse_link(name: &str) -> Option<Link> {
    let parts: Vec<&str> = name.split('=').collect();
    let (namespace, table, rest) = match parts.as_slice() {
        [table, rest] => ("default", *table, *rest),
        [namespace, table, rest] => (*namespace, *table, *rest),
        _ => return None,
    };
    let (region, hfile) = rest.split_once('-')?;
    let ok = |s: &str| !s.is_empty() && !s.contains(['/', '\\']) && s != "." && s != "..";
    (ok(namespace) && ok(table) && ok(region) && ok(hfile)).then(|| Link {
        namespace: namespace.to_string(),
        table: table.to_string(),
        region: region.to_string(),
        hfile: hfile.to_string(),
    })
}

/// The regions must cover the key space once, in order: a snapshot of a
/// table in the middle of a split or merge may not.
fn check_tiling(name: &str, regions: &[SourceRegion]) -> Result<()> {
    let Some(first) = regions.first() else {
        return Err(Error::invalid(format!(
            "HBase snapshot {name} has no regions"
        )));
    };
    if !first.start_key.is_empty() {
        return Err(Error::invalid(format!(
            "HBase snapshot {name}: no region starts the table (the first starts at {:?})",
            first.start_key
        )));
    }
    for pair in regions.windows(2) {
        if pair[0].end_key != pair[1].start_key {
            return Err(Error::invalid(format!(
                "HBase snapshot {name}: region {} ends at {:?} but the next, {}, starts at {:?} (a snapshot taken in the middle of a split or merge?)",
                pair[0].encoded_name, pair[0].end_key, pair[1].encoded_name, pair[1].start_key
            )));
        }
    }
    if let Some(last) = regions.last() {
        if !last.end_key.is_empty() {
            return Err(Error::invalid(format!(
                "HBase snapshot {name}: no region ends the table (the last ends at {:?})",
                last.end_key
            )));
        }
    }
    Ok(())
}

fn read_bounded(files: &dyn FileStore, path: &Path, max: u64) -> Result<Bytes> {
    let size = files.size(path)?;
    if size > max {
        return Err(Error::invalid(format!(
            "{} is {size} bytes, more than the {max} read (snapshot_manifest_max_bytes)",
            path.display()
        )));
    }
    files.read_all(path)
}

fn corrupt(path: &Path, message: String) -> Error {
    Error::Corruption {
        path: path.to_path_buf(),
        offset: 0,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_encoded_region_name_is_the_md5_of_table_start_and_id() {
        // Expected values from `printf 't,,1' | md5sum` and
        // `printf 'ns:t,a,1700000000000' | md5sum`.
        assert_eq!(
            encoded_region_name("t", b"", 1),
            "7b520268c67d8870e20f6d880327ab7e"
        );
        assert_eq!(
            encoded_region_name("ns:t", b"a", 1_700_000_000_000),
            "4334595ca2c2d1caec1a79ab17c30ed4"
        );
    }

    #[test]
    fn a_link_name_splits_into_table_region_and_file() {
        assert_eq!(
            parse_link("ns=orders=0123abcd-fedc98"),
            Some(Link {
                namespace: "ns".into(),
                table: "orders".into(),
                region: "0123abcd".into(),
                hfile: "fedc98".into(),
            })
        );
        assert_eq!(
            parse_link("orders=0123abcd-fedc98").map(|l| l.namespace),
            Some("default".into())
        );
        assert_eq!(parse_link("fedc98"), None);
        assert_eq!(parse_link("a=b=c=d-e"), None);
        assert_eq!(parse_link("orders=..-x"), None);
    }

    #[test]
    fn regions_with_a_gap_are_refused_naming_it() {
        let region = |start: &'static [u8], end: &'static [u8]| SourceRegion {
            start_key: Bytes::from_static(start),
            end_key: Bytes::from_static(end),
            encoded_name: format!("{start:?}"),
            stores: vec![],
        };
        assert!(check_tiling("s", &[region(b"", b"m"), region(b"m", b"")]).is_ok());
        let gap = check_tiling("s", &[region(b"", b"k"), region(b"m", b"")]).unwrap_err();
        assert!(gap.to_string().contains("ends at"), "{gap}");
        assert!(check_tiling("s", &[region(b"a", b"")]).is_err());
        assert!(check_tiling("s", &[region(b"", b"z")]).is_err());
        assert!(check_tiling("s", &[]).is_err());
    }

    #[test]
    fn a_half_keeps_the_rows_on_its_side_of_the_split() {
        let top = Half::From(Bytes::from_static(b"m"));
        let bottom = Half::Before(Bytes::from_static(b"m"));
        assert!(top.contains(b"m") && top.contains(b"z") && !top.contains(b"a"));
        assert!(bottom.contains(b"a") && !bottom.contains(b"m"));
        assert!(Half::Whole.contains(b""));
    }
}
