//! The catalog: every table's descriptor, state and regions, kept in
//! `catalog.json` in the data directory.
//!
//! Like HBase's `hbase:meta`, it records every region of every table with
//! its state: the serving (`OPEN`) regions, which cover the table's key
//! space without gap or overlap, and the regions retired by a split or a
//! merge (`SPLIT`, `MERGED`), kept until no serving region links to their
//! files any more. A split or merge commits by writing the catalog, so a
//! crash leaves either the old regions serving or the new ones, never both
//! and never neither.
//!
//! Updates write a complete new file beside the old one, fsync it, rename it
//! over the old one and fsync the directory, so a crash leaves either the old
//! or the new catalog, never a mix. See `docs/catalog-format.md`.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use basalt_types::{Error, Result, TableDescriptor};

/// Version of the catalog file layout. Version 2 added region states and
/// retired regions; version 1 catalogs are read (and rewritten as 2).
pub const CATALOG_FORMAT_VERSION: u32 = 2;
const CATALOG_FILE: &str = "catalog.json";

/// The persistent catalog.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Catalog {
    /// Layout version, checked on load.
    pub format_version: u32,
    /// The last region id handed out (ids are creation times in ms, bumped
    /// to stay unique).
    pub last_region_id: u64,
    /// Tables by name.
    pub tables: BTreeMap<String, TableEntry>,
}

/// One table in the catalog.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableEntry {
    /// Name and families.
    pub descriptor: TableDescriptor,
    /// Enabled tables serve reads and writes.
    pub enabled: bool,
    /// Serving regions in key order, covering the whole key space.
    pub regions: Vec<RegionEntry>,
    /// Regions replaced by a split or merge whose files serving regions
    /// still link to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retired: Vec<RegionEntry>,
}

/// A region's state, as `hbase:meta` records it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RegionState {
    /// Serving its key range.
    #[default]
    Open,
    /// Replaced by two daughters.
    Split,
    /// Merged with its neighbour into a new region.
    Merged,
}

/// One region in the catalog.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RegionEntry {
    /// Region id (WAL records carry it).
    pub id: u64,
    /// First row, inclusive; empty for the table start.
    pub start_key: Bytes,
    /// End row, exclusive; empty for the table end.
    pub end_key: Bytes,
    /// Per family, the sequence id from which WAL edits belong to it.
    pub family_first_sequence: BTreeMap<String, u64>,
    /// Serving or retired.
    #[serde(default)]
    pub state: RegionState,
    /// For a retired region: the regions that took its rows over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub successors: Vec<u64>,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog {
            format_version: CATALOG_FORMAT_VERSION,
            last_region_id: 0,
            tables: BTreeMap::new(),
        }
    }
}

impl Catalog {
    fn path(dir: &Path) -> PathBuf {
        dir.join(CATALOG_FILE)
    }

    /// Loads the catalog of `dir`, or an empty one if there is none yet.
    pub fn load(dir: &Path) -> Result<Catalog> {
        let path = Catalog::path(dir);
        let text = match fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Catalog::default()),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let catalog: Catalog = serde_json::from_slice(&text).map_err(|e| Error::Corruption {
            path: path.clone(),
            offset: 0,
            message: format!("catalog does not parse: {e}"),
        })?;
        if !(1..=CATALOG_FORMAT_VERSION).contains(&catalog.format_version) {
            return Err(Error::Corruption {
                path,
                offset: 0,
                message: format!(
                    "catalog format version {} is not supported (expected {})",
                    catalog.format_version, CATALOG_FORMAT_VERSION
                ),
            });
        }
        Ok(Catalog {
            format_version: CATALOG_FORMAT_VERSION,
            ..catalog
        })
    }

    /// Replaces the catalog of `dir` with this one, atomically and durably.
    pub fn store(&self, dir: &Path) -> Result<()> {
        let path = Catalog::path(dir);
        let tmp = dir.join(format!("{CATALOG_FILE}.tmp"));
        let text = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::invalid(format!("catalog does not serialize: {e}")))?;
        let write = || -> std::io::Result<()> {
            let mut file = File::create(&tmp)?;
            file.write_all(&text)?;
            file.sync_all()?;
            Ok(())
        };
        write().map_err(|e| Error::io(&tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        sync_dir(dir)
    }

    /// A new unique region id: the current time in ms unless that was used.
    pub fn next_region_id(&mut self, now_millis: i64) -> u64 {
        let candidate = u64::try_from(now_millis).unwrap_or(0);
        self.last_region_id = candidate.max(self.last_region_id + 1);
        self.last_region_id
    }
}

/// Fsyncs a directory so a rename or file creation in it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt_types::ColumnFamilyDescriptor;

    #[test]
    fn round_trips_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::default();
        let id = c.next_region_id(1000);
        c.tables.insert(
            "t".into(),
            TableEntry {
                descriptor: TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")),
                enabled: true,
                regions: vec![RegionEntry {
                    id,
                    start_key: Bytes::new(),
                    end_key: Bytes::from_static(b"\x00\xff"),
                    family_first_sequence: BTreeMap::from([("f".into(), 1)]),
                    state: RegionState::Open,
                    successors: Vec::new(),
                }],
                retired: vec![RegionEntry {
                    id: id + 1,
                    start_key: Bytes::new(),
                    end_key: Bytes::new(),
                    family_first_sequence: BTreeMap::new(),
                    state: RegionState::Split,
                    successors: vec![id],
                }],
            },
        );
        c.store(dir.path()).unwrap();
        let back = Catalog::load(dir.path()).unwrap();
        assert_eq!(
            back.tables["t"].regions[0].end_key,
            Bytes::from_static(b"\x00\xff")
        );
        assert_eq!(back.last_region_id, 1000);
        assert_eq!(back.tables["t"].retired[0].state, RegionState::Split);
        assert_eq!(back.tables["t"].retired[0].successors, vec![id]);
    }

    #[test]
    fn reads_version_one_catalogs() {
        let dir = tempfile::tempdir().unwrap();
        let v1 = r#"{"format_version": 1, "last_region_id": 5, "tables": {"t": {
            "descriptor": {"name": "t", "families": []}, "enabled": true,
            "regions": [{"id": 5, "start_key": [], "end_key": [],
                         "family_first_sequence": {}}]}}}"#;
        std::fs::write(dir.path().join("catalog.json"), v1).unwrap();
        let c = Catalog::load(dir.path()).unwrap();
        assert_eq!(c.format_version, CATALOG_FORMAT_VERSION);
        assert_eq!(c.tables["t"].regions[0].state, RegionState::Open);
        assert!(c.tables["t"].retired.is_empty());
    }

    #[test]
    fn region_ids_stay_unique_within_one_millisecond() {
        let mut c = Catalog::default();
        assert_eq!(c.next_region_id(5), 5);
        assert_eq!(c.next_region_id(5), 6);
        assert_eq!(c.next_region_id(3), 7);
    }

    #[test]
    fn damaged_catalog_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CATALOG_FILE), b"{ not json").unwrap();
        let err = Catalog::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("catalog.json"), "{err}");
    }
}
