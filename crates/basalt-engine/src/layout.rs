//! Where everything lives: the one place that names the files and
//! directories of a Basalt data set.
//!
//! ```text
//! <root>/
//!   LOCK                                   the process lock (local only)
//!   wal/<segment>.log                      the local write-ahead log
//!   wal/<log id>/<sequence>                or, on object storage, its
//!                                          log objects (`wal::object`)
//!   cache/                                 the disk cache of object
//!                                          storage (local only)
//!   catalog/<version: 20 digits>.json      catalog versions, write-once
//!                                          (checkpoints and deltas alike)
//!   catalog.json                           the catalog of format 1 and 2
//!                                          (read, then superseded)
//!   snapshots/<id: 20 digits>-<name>.snapshot  a completed snapshot's
//!                                          manifest, write-once
//!   snapshots/<id>-<name>.pending          a snapshot being taken (its
//!                                          table's files are all kept)
//!   snapshots/<id>.hold                    the files a cloned or restored
//!                                          table links to
//!   data/<namespace>/<table>/<region id>/<family>/
//!       MANIFEST-<version: 20 digits>      the store's manifest versions
//!       <file id: 20 digits>.sst           its store files
//! ```
//!
//! Regions are named by id, files by id and version number, both never
//! reused. A store linking to a parent region's file (after a split or a
//! merge) finds it in the sibling region directory of the same table,
//! which is why a region directory is always `<table dir>/<region id>`.
//!
//! Every other module asks this one for a path instead of joining names
//! itself, so a later change of layout (directories named by table id) is
//! made here and checked by the format fixtures.
//!
//! On object storage (`basalt-object-store`) the same paths name objects:
//! a path's part below `<root>` becomes the object's key below the
//! storage URL's prefix (`data/default/t/7/cf/...sst`), so the tree above
//! is the key layout too, less what stays local (`LOCK`, `cache/`); the
//! log there is `wal/<log id>/<sequence>` objects.

use std::path::{Path, PathBuf};

/// The process lock file of a local data directory.
pub const LOCK_FILE: &str = "LOCK";
/// The directory of the local write-ahead log's segments.
pub const WAL_DIR: &str = "wal";
/// The directory of the catalog's versions (catalog format 3 on).
pub const CATALOG_DIR: &str = "catalog";
/// The single catalog file of catalog formats 1 and 2.
pub const LEGACY_CATALOG_FILE: &str = "catalog.json";
/// The directory under which every table's regions live.
pub const DATA_DIR: &str = "data";
/// The local directory of the object storage disk cache.
pub const OBJECT_CACHE_DIR: &str = "cache";
/// Where `basalt repair` moves damaged files it takes out of service
/// (never read by the database, never deleted by it).
pub const QUARANTINE_DIR: &str = "quarantine";
/// The namespace of tables named without one (HBase's `default`).
pub const DEFAULT_NAMESPACE: &str = "default";
/// Names of manifest versions start with this.
pub const MANIFEST_PREFIX: &str = "MANIFEST-";
/// Names of store files end with this.
pub const STORE_FILE_SUFFIX: &str = ".sst";
const CATALOG_SUFFIX: &str = ".json";
/// The directory of snapshot manifests, pending snapshots and holds
/// (`crate::snapshot`).
pub const SNAPSHOT_DIR: &str = "snapshots";
/// Names of completed snapshot manifests end with this.
pub const SNAPSHOT_SUFFIX: &str = ".snapshot";
/// Names of the markers of snapshots being taken end with this.
pub const PENDING_SNAPSHOT_SUFFIX: &str = ".pending";
/// Names of holds (files a cloned or restored table links to) end with this.
pub const HOLD_SUFFIX: &str = ".hold";

/// The lock file of the data directory `root`.
pub fn lock_file(root: &Path) -> PathBuf {
    root.join(LOCK_FILE)
}

/// The local write-ahead log's directory.
pub fn wal_dir(root: &Path) -> PathBuf {
    root.join(WAL_DIR)
}

/// The default directory of the disk cache in front of object storage.
pub fn object_cache_dir(root: &Path) -> PathBuf {
    root.join(OBJECT_CACHE_DIR)
}

/// The directory holding the catalog's versions.
pub fn catalog_dir(root: &Path) -> PathBuf {
    root.join(CATALOG_DIR)
}

/// Catalog version `version`.
pub fn catalog_version_path(root: &Path, version: u64) -> PathBuf {
    catalog_dir(root).join(format!("{version:020}{CATALOG_SUFFIX}"))
}

/// The version a catalog file's path names, if it names one.
pub fn catalog_version_of(path: &Path) -> Option<u64> {
    parse_numbered(path, "", CATALOG_SUFFIX)
}

/// The catalog file of formats 1 and 2.
pub fn legacy_catalog_path(root: &Path) -> PathBuf {
    root.join(LEGACY_CATALOG_FILE)
}

/// The quarantine of the data directory `root`: damaged files moved aside
/// by `basalt repair`, under their path relative to `root`.
pub fn quarantine_dir(root: &Path) -> PathBuf {
    root.join(QUARANTINE_DIR)
}

/// The directory of every table's regions.
pub fn data_dir(root: &Path) -> PathBuf {
    root.join(DATA_DIR)
}

/// The directory of a table's regions. `ns:name` tables live under their
/// namespace, others under `default`.
pub fn table_dir(root: &Path, table: &str) -> PathBuf {
    let (namespace, qualifier) = table.split_once(':').unwrap_or((DEFAULT_NAMESPACE, table));
    data_dir(root).join(namespace).join(qualifier)
}

/// The directory of region `region_id` of `table`.
pub fn region_dir(root: &Path, table: &str, region_id: u64) -> PathBuf {
    table_dir(root, table).join(region_id.to_string())
}

/// The region id a region directory's path names, if it names one.
pub fn region_id_of(region_dir: &Path) -> Option<u64> {
    region_dir.file_name()?.to_str()?.parse().ok()
}

/// The directory of a region's store of `family`.
pub fn store_dir(region_dir: &Path, family: &str) -> PathBuf {
    region_dir.join(family)
}

/// The name of store file `file_id` inside its store directory.
pub fn store_file_name(file_id: u64) -> String {
    format!("{file_id:020}{STORE_FILE_SUFFIX}")
}

/// Store file `file_id` of the store in `store_dir`.
pub fn store_file_path(store_dir: &Path, file_id: u64) -> PathBuf {
    store_dir.join(store_file_name(file_id))
}

/// True when `path` names a store file (by its suffix).
pub fn is_store_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(STORE_FILE_SUFFIX))
}

/// Store file `file_id` of region `region_id`'s store of the same family
/// as the store in `store_dir`: how a link after a split or merge finds
/// its parent's file. `None` when `store_dir` is not inside a table
/// directory.
pub fn linked_store_file(store_dir: &Path, region_id: u64, file_id: u64) -> Option<PathBuf> {
    let family = store_dir.file_name()?;
    let table_dir = store_dir.parent()?.parent()?;
    Some(store_file_path(
        &table_dir.join(region_id.to_string()).join(family),
        file_id,
    ))
}

/// Store file `file_id` of region `region_id` of `table`, in the store of
/// the same family as the store in `store_dir`: how a link of a table
/// cloned or restored from a snapshot finds a file another table (or an
/// earlier region of its own) wrote. `None` when `store_dir` is not
/// `<root>/data/<namespace>/<table>/<region>/<family>`.
pub fn other_table_store_file(
    linking_store: &Path,
    table: &str,
    region_id: u64,
    file_id: u64,
) -> Option<PathBuf> {
    let family = linking_store.file_name()?.to_str()?;
    let data = linking_store.parent()?.parent()?.parent()?.parent()?;
    if data.file_name()?.to_str()? != DATA_DIR {
        return None;
    }
    let root = data.parent()?;
    Some(store_file_path(
        &store_dir(&region_dir(root, table, region_id), family),
        file_id,
    ))
}

/// The directory of snapshot manifests, pending snapshots and holds.
pub fn snapshot_dir(root: &Path) -> PathBuf {
    root.join(SNAPSHOT_DIR)
}

/// The manifest of completed snapshot `name`, numbered `id` (ids are never
/// reused, so a name taken again after a delete is a new path).
pub fn snapshot_path(root: &Path, id: u64, name: &str) -> PathBuf {
    snapshot_dir(root).join(format!("{id:020}-{name}{SNAPSHOT_SUFFIX}"))
}

/// The marker of snapshot `name` (number `id`) while it is taken.
pub fn pending_snapshot_path(root: &Path, id: u64, name: &str) -> PathBuf {
    snapshot_dir(root).join(format!("{id:020}-{name}{PENDING_SNAPSHOT_SUFFIX}"))
}

/// Hold number `id`.
pub fn hold_path(root: &Path, id: u64) -> PathBuf {
    snapshot_dir(root).join(format!("{id:020}{HOLD_SUFFIX}"))
}

/// What an entry of the snapshot directory is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotEntry {
    /// A completed snapshot: its number and name.
    Snapshot(u64, String),
    /// A snapshot being taken: its number and name.
    Pending(u64, String),
    /// A hold: its number.
    Hold(u64),
}

/// Reads an entry's file name; `None` for a name that is none of them.
pub fn snapshot_entry_of(path: &Path) -> Option<SnapshotEntry> {
    let name = path.file_name()?.to_str()?;
    let numbered = |rest: &str| -> Option<(u64, String)> {
        let (id, name) = rest.split_once('-')?;
        if id.len() != 20 || name.is_empty() {
            return None;
        }
        Some((id.parse().ok()?, name.to_string()))
    };
    if let Some(rest) = name.strip_suffix(SNAPSHOT_SUFFIX) {
        let (id, name) = numbered(rest)?;
        Some(SnapshotEntry::Snapshot(id, name))
    } else if let Some(rest) = name.strip_suffix(PENDING_SNAPSHOT_SUFFIX) {
        let (id, name) = numbered(rest)?;
        Some(SnapshotEntry::Pending(id, name))
    } else {
        let id = name.strip_suffix(HOLD_SUFFIX)?;
        (id.len() == 20).then_some(())?;
        Some(SnapshotEntry::Hold(id.parse().ok()?))
    }
}

/// Manifest version `version` of the store in `store_dir`.
pub fn manifest_path(store_dir: &Path, version: u64) -> PathBuf {
    store_dir.join(format!("{MANIFEST_PREFIX}{version:020}"))
}

/// The version a manifest's path names, if it names one.
pub fn manifest_version_of(path: &Path) -> Option<u64> {
    parse_numbered(path, MANIFEST_PREFIX, "")
}

fn parse_numbered(path: &Path, prefix: &str, suffix: &str) -> Option<u64> {
    path.file_name()?
        .to_str()?
        .strip_prefix(prefix)?
        .strip_suffix(suffix)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_without_a_namespace_live_in_default() {
        let root = Path::new("/d");
        assert_eq!(
            region_dir(root, "t", 7),
            PathBuf::from("/d/data/default/t/7")
        );
        assert_eq!(region_dir(root, "ns:t", 7), PathBuf::from("/d/data/ns/t/7"));
    }

    #[test]
    fn numbered_names_round_trip() {
        let root = Path::new("/d");
        assert_eq!(
            catalog_version_of(&catalog_version_path(root, 42)),
            Some(42)
        );
        let store = store_dir(&region_dir(root, "t", 1), "f");
        assert_eq!(manifest_version_of(&manifest_path(&store, 9)), Some(9));
        assert!(is_store_file(&store_file_path(&store, 3)));
        assert_eq!(manifest_version_of(&store_file_path(&store, 3)), None);
        assert_eq!(catalog_version_of(Path::new("/d/catalog/x.json")), None);
        assert_eq!(region_id_of(&region_dir(root, "t", 12)), Some(12));
    }

    #[test]
    fn a_link_names_the_sibling_region_of_the_same_family() {
        let store = store_dir(&region_dir(Path::new("/d"), "t", 1), "f");
        assert_eq!(
            linked_store_file(&store, 2, 5),
            Some(store_file_path(
                &store_dir(&region_dir(Path::new("/d"), "t", 2), "f"),
                5
            ))
        );
        assert_eq!(linked_store_file(Path::new("f"), 2, 5), None);
    }

    #[test]
    fn a_link_to_another_table_names_its_region_of_the_same_family() {
        let store = store_dir(&region_dir(Path::new("/d"), "clone", 1), "f");
        assert_eq!(
            other_table_store_file(&store, "ns:src", 2, 5),
            Some(store_file_path(
                &store_dir(&region_dir(Path::new("/d"), "ns:src", 2), "f"),
                5
            ))
        );
        assert_eq!(other_table_store_file(Path::new("/x/f"), "t", 2, 5), None);
    }

    #[test]
    fn snapshot_entries_round_trip_through_their_file_names() {
        let root = Path::new("/d");
        assert_eq!(
            snapshot_entry_of(&snapshot_path(root, 7, "a-b.c")),
            Some(SnapshotEntry::Snapshot(7, "a-b.c".into()))
        );
        assert_eq!(
            snapshot_entry_of(&pending_snapshot_path(root, 8, "s")),
            Some(SnapshotEntry::Pending(8, "s".into()))
        );
        assert_eq!(
            snapshot_entry_of(&hold_path(root, 9)),
            Some(SnapshotEntry::Hold(9))
        );
        for junk in [
            "x.snapshot",
            "-s.snapshot",
            "1.hold",
            "00000000000000000001-.snapshot",
            "a.tmp",
        ] {
            assert_eq!(snapshot_entry_of(Path::new(junk)), None, "{junk}");
        }
    }
}
