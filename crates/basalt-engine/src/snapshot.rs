//! Snapshots at the storage level: the snapshot manifest (what a snapshot
//! of a table records: its descriptor, its regions and the store files
//! each region's stores held at the cut), and the one check every deletion
//! of a store file goes through, so that a file a snapshot references
//! outlives every region that used it ([`RetainingFileStore`]).
//!
//! A snapshot copies nothing: its manifest names files where they are,
//! `data/<table>/<region>/<family>/<file>.sst`. Three kinds of entries in
//! `snapshots/` keep files (`docs/snapshots.md`):
//!
//! - `<id>-<name>.snapshot`, a completed snapshot: every file it names;
//! - `<id>-<name>.pending`, a snapshot being taken: every store file of
//!   its table, because the snapshot may list a file a compaction is
//!   replacing at that moment (the compaction's deletion then finds the
//!   marker); files kept only by it are orphans its removal leaves, which
//!   the store's next open or the region's deletion removes;
//! - `<id>.hold`, the files a table cloned or restored from a snapshot
//!   links to, kept until no store of that table links to them (the
//!   master's janitor releases it) even when the snapshot is deleted.
//!
//! Every file of these is written whole and never rewritten (create if
//! absent), and ids are never reused, so a process caches what it decoded
//! by path and only lists the directory to see what is current: the check
//! costs one listing per deletion, on local disk and on object storage
//! alike, and works across the processes of a cluster without any
//! message between them.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use basalt_types::{Error, Nonce, Result, TableDescriptor};

use crate::checked;
use crate::fs::{FileCacheStats, FileStore, FileWriter};
use crate::layout::{self, SnapshotEntry};
use crate::manifest::{FileLink, ManifestFile};

/// Layout version of snapshot manifests.
pub const SNAPSHOT_FORMAT_VERSION: u32 = 1;
const MAGIC: &str = "BASALT-SNAPSHOT";

/// The default bound on a snapshot manifest's size (`Options::
/// snapshot_manifest_max_bytes`): a manifest larger than this is refused
/// as damaged before it is read. 256 MiB holds about a million file
/// entries.
pub const DEFAULT_MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;

/// HBase's snapshot types (`SnapshotDescription.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SnapshotKind {
    /// Of a disabled table: its files as its closed regions left them.
    Disabled,
    /// Of an enabled table, each region flushed first.
    Flush,
    /// Of an enabled table without a flush: what is only in memstores is
    /// not in the snapshot.
    Skipflush,
}

impl SnapshotKind {
    /// HBase's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            SnapshotKind::Disabled => "DISABLED",
            SnapshotKind::Flush => "FLUSH",
            SnapshotKind::Skipflush => "SKIPFLUSH",
        }
    }
}

/// One store file a snapshot references, where it lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotFile {
    /// The table whose region wrote the file (for a file the snapshotted
    /// table itself linked to, the table the link names).
    pub table: String,
    /// The region that wrote it.
    pub region_id: u64,
    /// Its id in that region's store of the family.
    pub file_id: u64,
    /// First row of the file that belongs to the snapshot's region
    /// (inclusive; empty: unbounded). Set when the region read the file
    /// through a link.
    #[serde(default, skip_serializing_if = "Bytes::is_empty")]
    pub lower: Bytes,
    /// Row where the region's part of the file ends (exclusive; empty:
    /// unbounded).
    #[serde(default, skip_serializing_if = "Bytes::is_empty")]
    pub upper: Bytes,
    /// Size in bytes.
    pub size: u64,
    /// Highest sequence id of any cell in the file.
    pub max_sequence: u64,
    /// Cells in the file.
    pub cells: u64,
}

impl SnapshotFile {
    /// What a store of `table`'s region `region_id` records of its
    /// manifest entry `entry`: its own file, or the file a link names.
    pub fn from_entry(table: &str, region_id: u64, entry: &ManifestFile) -> SnapshotFile {
        let (table, region_id, file_id, lower, upper) = match &entry.link {
            Some(link) => (
                link.table.clone().unwrap_or_else(|| table.to_string()),
                link.region_id,
                link.file_id,
                link.lower.clone(),
                link.upper.clone(),
            ),
            None => (
                table.to_string(),
                region_id,
                entry.id,
                Bytes::new(),
                Bytes::new(),
            ),
        };
        SnapshotFile {
            table,
            region_id,
            file_id,
            lower,
            upper,
            size: entry.size,
            max_sequence: entry.max_sequence,
            cells: entry.cells,
        }
    }

    /// The file's path in the data set at `root`, in the store of `family`.
    pub fn path(&self, root: &Path, family: &str) -> PathBuf {
        layout::store_file_path(
            &layout::store_dir(
                &layout::region_dir(root, &self.table, self.region_id),
                family,
            ),
            self.file_id,
        )
    }

    /// The manifest entry of a store that reads this file by reference (a
    /// region of a clone or a restore): a link naming its table.
    pub fn link(&self) -> ManifestFile {
        ManifestFile {
            id: 0,
            size: self.size,
            max_sequence: self.max_sequence,
            cells: self.cells,
            major: false,
            link: Some(FileLink {
                table: Some(self.table.clone()),
                region_id: self.region_id,
                file_id: self.file_id,
                lower: self.lower.clone(),
                upper: self.upper.clone(),
            }),
        }
    }
}

/// One store of a region in a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotStore {
    /// Family name.
    pub family: String,
    /// Its files at the cut.
    pub files: Vec<SnapshotFile>,
}

/// One region of the snapshotted table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRegion {
    /// The region's id when the snapshot was taken.
    pub id: u64,
    /// First row (inclusive; empty: the table's start).
    pub start_key: Bytes,
    /// Row where it ends (exclusive; empty: the table's end).
    pub end_key: Bytes,
    /// Its stores, by family.
    pub stores: Vec<SnapshotStore>,
}

/// A snapshot manifest, or a hold (the same record naming the table that
/// links to its files).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotManifest {
    /// The snapshot's name (for a hold, the snapshot it was made from).
    pub name: String,
    /// The snapshotted table.
    pub table: String,
    /// When the snapshot was taken (ms since the epoch).
    pub created_ms: i64,
    /// Seconds after `created_ms` at which the snapshot expires; 0 or less:
    /// never (HBase's snapshot TTL).
    #[serde(default)]
    pub ttl_secs: i64,
    /// How it was taken.
    pub kind: SnapshotKind,
    /// The table's descriptor (families and their settings) at the cut.
    pub descriptor: TableDescriptor,
    /// The table's serving regions at the cut, in key order.
    pub regions: Vec<SnapshotRegion>,
    /// Set on a hold: the table (cloned or restored from the snapshot)
    /// whose links keep these files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_for: Option<String>,
    /// The user who took the snapshot (HBase's snapshot owner: it may list
    /// and delete it, restore it with ADMIN on its table, and clone it
    /// under its table's name). `None`: taken without authorization, or
    /// before Basalt recorded owners.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Set on a hold taken by a process outside the master (an export of
    /// the snapshot): the time (ms since the epoch) until which it keeps
    /// the files. Its taker renews it by publishing a new hold; once it has
    /// passed, the janitor releases the hold, so a killed export does not
    /// pin files for ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until_ms: Option<i64>,
    /// The nonce of the request that took it: the same request sent again
    /// (its answer lost with a master that died) is answered as done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<Nonce>,
}

impl SnapshotManifest {
    /// True once the snapshot's TTL has passed at `now_ms` (HBase's rule:
    /// a positive TTL, and creation plus TTL before now).
    pub fn expired(&self, now_ms: i64) -> bool {
        self.ttl_secs > 0
            && self
                .created_ms
                .saturating_add(self.ttl_secs.saturating_mul(1000))
                < now_ms
    }

    /// Every file it references, with its family.
    pub fn files(&self) -> impl Iterator<Item = (&str, &SnapshotFile)> {
        self.regions.iter().flat_map(|r| {
            r.stores
                .iter()
                .flat_map(|s| s.files.iter().map(move |f| (s.family.as_str(), f)))
        })
    }

    /// The paths of every file it references, in the data set at `root`.
    pub fn paths(&self, root: &Path) -> HashSet<PathBuf> {
        self.files()
            .map(|(family, f)| f.path(root, family))
            .collect()
    }

    /// Bytes of the files it references.
    pub fn file_bytes(&self) -> u64 {
        self.files().map(|(_, f)| f.size).sum()
    }

    /// The bytes of a manifest file: a header line (magic, format version,
    /// body checksum, body length) and the JSON body, as store manifests
    /// are written.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let body = serde_json::to_vec(self)
            .map_err(|e| Error::invalid(format!("snapshot manifest does not serialize: {e}")))?;
        Ok(checked::frame(MAGIC, SNAPSHOT_FORMAT_VERSION, &body))
    }

    /// Decodes a manifest file's bytes. Input is untrusted: a defect is an
    /// error saying what is wrong and where (the byte offset in the file),
    /// never a panic, and nothing is allocated beyond a small multiple of
    /// the input.
    pub fn decode(bytes: &[u8]) -> std::result::Result<SnapshotManifest, (u64, String)> {
        let framed = checked::unframe(
            bytes,
            MAGIC,
            &[SNAPSHOT_FORMAT_VERSION],
            "snapshot manifest",
        )?;
        let (body_at, body) = (framed.body_at, framed.body);
        let manifest: SnapshotManifest = serde_json::from_slice(body).map_err(|e| {
            // serde_json counts lines and columns; the body is one line.
            (
                body_at + e.column().saturating_sub(1) as u64,
                format!("body does not parse: {e}"),
            )
        })?;
        manifest.validate().map_err(|m| (body_at, m))?;
        Ok(manifest)
    }

    /// What a decoded manifest must satisfy besides parsing: a valid name,
    /// regions in key order covering the table without gap or overlap,
    /// stores only of the descriptor's families.
    fn validate(&self) -> std::result::Result<(), String> {
        check_snapshot_name(&self.name).map_err(|e| e.to_string())?;
        if self.table.is_empty() || self.descriptor.name() != self.table {
            return Err(format!(
                "table '{}' does not match its descriptor's name '{}'",
                self.table.escape_debug(),
                self.descriptor.name().escape_debug()
            ));
        }
        let mut expected_start = Bytes::new();
        for (i, region) in self.regions.iter().enumerate() {
            if region.start_key != expected_start {
                return Err(format!(
                    "region {i} (id {}) does not start where region {} ends",
                    region.id,
                    i.saturating_sub(1)
                ));
            }
            let last = i + 1 == self.regions.len();
            if region.end_key.is_empty() != last
                || (!region.end_key.is_empty() && region.end_key <= region.start_key)
            {
                return Err(format!(
                    "region {i} (id {}) has bad bounds for its place",
                    region.id
                ));
            }
            for store in &region.stores {
                if self
                    .descriptor
                    .get_family(store.family.as_bytes())
                    .is_none()
                {
                    return Err(format!(
                        "region {i} (id {}) has a store of family '{}', which the descriptor lacks",
                        region.id,
                        store.family.escape_debug()
                    ));
                }
                for file in &store.files {
                    if file.table.is_empty() {
                        return Err(format!(
                            "region {i} (id {}), family '{}': a file names no table",
                            region.id,
                            store.family.escape_debug()
                        ));
                    }
                }
            }
            expected_start = region.end_key.clone();
        }
        if self.regions.is_empty() {
            return Err("the snapshot has no region".into());
        }
        Ok(())
    }
}

/// HBase's rule for snapshot names (a table qualifier's): letters, digits,
/// `_`, `-` and `.`, not starting with `.` or `-`.
pub fn check_snapshot_name(name: &str) -> Result<()> {
    let Some(first) = name.chars().next() else {
        return Err(Error::invalid("snapshot name must not be empty"));
    };
    if first == '.' || first == '-' {
        return Err(Error::invalid(format!(
            "illegal first character '{first}' in snapshot name '{name}': a snapshot name starts with a letter, digit or '_'"
        )));
    }
    if let Some((at, c)) = name
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(Error::invalid(format!(
            "illegal character '{}' at {at} in snapshot name '{}': only letters, digits, '_', '-' and '.' are allowed",
            c.escape_debug(),
            name.escape_debug()
        )));
    }
    Ok(())
}

/// Reads and decodes the snapshot manifest (or hold) at `path`, refusing
/// one larger than `max_bytes`.
pub fn read_manifest(
    files: &dyn FileStore,
    path: &Path,
    max_bytes: u64,
) -> Result<SnapshotManifest> {
    let size = files.size(path)?;
    if size > max_bytes {
        return Err(Error::Corruption {
            path: path.to_path_buf(),
            offset: 0,
            message: format!(
                "snapshot manifest of {size} bytes is larger than the limit of {max_bytes} (snapshot_manifest_max_bytes)"
            ),
        });
    }
    let bytes = files.read_all(path)?;
    SnapshotManifest::decode(&bytes).map_err(|(offset, message)| Error::Corruption {
        path: path.to_path_buf(),
        offset,
        message,
    })
}

/// Publishes `manifest` at `path`, whole and create-if-absent: before the
/// call returns nothing is at `path`, after it the complete manifest is.
pub fn write_manifest(
    files: &dyn FileStore,
    path: &Path,
    manifest: &SnapshotManifest,
) -> Result<()> {
    let bytes = manifest.encode()?;
    let mut writer: Box<dyn FileWriter> = files.create(path)?;
    writer.write_all(&bytes)?;
    writer.finish()?;
    Ok(())
}

/// The body of a pending snapshot's marker: the table whose files it
/// keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingSnapshot {
    /// The table being snapshotted.
    pub table: String,
    /// What was asked, so that a master taking over after the one taking
    /// it died completes it. Absent in an export's marker and in markers
    /// of earlier versions: those a starting master removes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<PendingRequest>,
}

/// The request a pending snapshot completes (see [`PendingSnapshot`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingRequest {
    /// Record only what is in store files (HBase's `SKIP_FLUSH`).
    #[serde(default)]
    pub skip_flush: bool,
    /// Seconds until it expires (0: never).
    #[serde(default)]
    pub ttl_secs: i64,
    /// The user taking it, with access control on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The client's nonce, recognizing the request sent again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<Nonce>,
    /// When it was asked (ms since the epoch, the master's clock): a
    /// master taking over gives up once the snapshot timeout has passed
    /// since then.
    pub requested_ms: i64,
}

/// What one entry of the snapshot directory keeps.
#[derive(Debug)]
enum Kept {
    /// These files.
    Files(HashSet<PathBuf>),
    /// Every store file below this table directory.
    Table(PathBuf),
}

/// The references of every snapshot, pending snapshot and hold of a data
/// set, read from its snapshot directory (see the module docs).
#[derive(Debug)]
pub struct References {
    root: PathBuf,
    max_manifest_bytes: AtomicU64,
    /// Decoded entries by path: entries are never rewritten.
    cache: Mutex<HashMap<PathBuf, Arc<Kept>>>,
}

impl References {
    /// The references of the data set at `root`.
    pub fn new(root: &Path, max_manifest_bytes: u64) -> References {
        References {
            root: root.to_path_buf(),
            max_manifest_bytes: AtomicU64::new(max_manifest_bytes),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Sets the largest manifest read (`Options::snapshot_manifest_max_bytes`).
    pub fn set_max_manifest_bytes(&self, bytes: u64) {
        self.max_manifest_bytes.store(bytes, Ordering::Relaxed);
    }

    /// The largest manifest read.
    pub fn max_manifest_bytes(&self) -> u64 {
        self.max_manifest_bytes.load(Ordering::Relaxed)
    }

    /// What every current entry keeps. Entries that vanished leave the
    /// cache.
    fn current(&self, files: &dyn FileStore) -> Result<Vec<Arc<Kept>>> {
        let listed = files.list(&layout::snapshot_dir(&self.root))?;
        let mut cache = self.cache.lock();
        cache.retain(|path, _| listed.contains(path));
        let mut kept = Vec::with_capacity(listed.len());
        for path in listed {
            let Some(entry) = layout::snapshot_entry_of(&path) else {
                continue;
            };
            if let Some(k) = cache.get(&path) {
                kept.push(Arc::clone(k));
                continue;
            }
            let k = Arc::new(match entry {
                SnapshotEntry::Snapshot(..) | SnapshotEntry::Hold(_) => Kept::Files(
                    read_manifest(files, &path, self.max_manifest_bytes())?.paths(&self.root),
                ),
                SnapshotEntry::Pending(..) => {
                    let bytes = files.read_all(&path)?;
                    let pending: PendingSnapshot =
                        serde_json::from_slice(&bytes).map_err(|e| Error::Corruption {
                            path: path.clone(),
                            offset: 0,
                            message: format!("pending snapshot marker does not parse: {e}"),
                        })?;
                    Kept::Table(layout::table_dir(&self.root, &pending.table))
                }
            });
            cache.insert(path, Arc::clone(&k));
            kept.push(k);
        }
        Ok(kept)
    }

    /// The paths among `candidates` that some entry keeps. On an error
    /// reading the entries every candidate is kept: a file is deleted only
    /// when it is known that nothing references it.
    pub fn kept_among<'a>(
        &self,
        files: &dyn FileStore,
        candidates: impl IntoIterator<Item = &'a PathBuf>,
    ) -> HashSet<PathBuf> {
        let candidates: Vec<&PathBuf> = candidates.into_iter().collect();
        let kept = match self.current(files) {
            Ok(kept) => kept,
            Err(e) => {
                tracing::warn!(error = %e, "snapshot references could not be read: no store file is deleted");
                return candidates.into_iter().cloned().collect();
            }
        };
        candidates
            .into_iter()
            .filter(|path| {
                kept.iter().any(|k| match k.as_ref() {
                    Kept::Files(set) => set.contains(*path),
                    Kept::Table(dir) => path.starts_with(dir),
                })
            })
            .cloned()
            .collect()
    }

    /// True when `path` is a store file some entry keeps.
    pub fn keeps(&self, files: &dyn FileStore, path: &Path) -> bool {
        let path = path.to_path_buf();
        !self.kept_among(files, [&path]).is_empty()
    }
}

/// The file store every deletion of store files goes through: a store
/// file a snapshot, a pending snapshot or a hold references is not deleted
/// (see the module docs), whichever path asks (a compaction's replaced
/// inputs, a store's open removing what its manifest does not list, a
/// dropped family, a dropped, truncated or restored table, the janitor's
/// retired and orphaned regions). Everything else passes through.
#[derive(Debug)]
pub struct RetainingFileStore {
    inner: Arc<dyn FileStore>,
    root: PathBuf,
    references: References,
}

impl RetainingFileStore {
    /// Wraps `inner`, the store of the data set at `root`.
    pub fn new(inner: Arc<dyn FileStore>, root: &Path, max_manifest_bytes: u64) -> Self {
        RetainingFileStore {
            inner,
            root: root.to_path_buf(),
            references: References::new(root, max_manifest_bytes),
        }
    }

    /// The references it checks.
    pub fn references(&self) -> &References {
        &self.references
    }

    fn is_data(&self, path: &Path) -> bool {
        path.starts_with(layout::data_dir(&self.root))
    }
}

impl FileStore for RetainingFileStore {
    fn create(&self, path: &Path) -> Result<Box<dyn FileWriter>> {
        self.inner.create(path)
    }

    fn publish(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.inner.publish(path, bytes)
    }

    fn publish_visible(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.inner.publish_visible(path, bytes)
    }

    fn sync_published(&self, paths: &[PathBuf]) -> Result<()> {
        self.inner.sync_published(paths)
    }

    fn read_range(&self, path: &Path, offset: u64, len: usize) -> Result<Bytes> {
        self.inner.read_range(path, offset, len)
    }

    fn size(&self, path: &Path) -> Result<u64> {
        self.inner.size(path)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        self.inner.exists(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        self.inner.list(dir)
    }

    fn delete(&self, path: &Path) -> Result<()> {
        if layout::is_store_file(path)
            && self.is_data(path)
            && self.references.keeps(self.inner.as_ref(), path)
        {
            tracing::debug!(path = %path.display(), "store file kept: a snapshot references it");
            return Ok(());
        }
        self.inner.delete(path)
    }

    fn list_dirs(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        self.inner.list_dirs(dir)
    }

    fn list_prefix(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        self.inner.list_prefix(dir)
    }

    /// Deletes everything below `dir` but the store files a reference
    /// keeps (and, with them, the directories that hold them).
    fn delete_prefix(&self, dir: &Path) -> Result<()> {
        if !(self.is_data(dir) || layout::data_dir(&self.root).starts_with(dir)) {
            return self.inner.delete_prefix(dir);
        }
        let below = self.inner.list_prefix(dir)?;
        let store_files: Vec<&PathBuf> =
            below.iter().filter(|p| layout::is_store_file(p)).collect();
        let kept = self
            .references
            .kept_among(self.inner.as_ref(), store_files.iter().copied());
        if kept.is_empty() {
            return self.inner.delete_prefix(dir);
        }
        tracing::debug!(dir = %dir.display(), kept = kept.len(), "deleting a directory but the store files snapshots reference");
        for path in below.iter().filter(|p| !kept.contains(*p)) {
            self.inner.delete(path)?;
        }
        Ok(())
    }

    fn remove_unfinished(&self, dir: &Path) -> Result<usize> {
        self.inner.remove_unfinished(dir)
    }

    fn cache_stats(&self) -> Option<FileCacheStats> {
        self.inner.cache_stats()
    }

    fn read_all(&self, path: &Path) -> Result<Bytes> {
        self.inner.read_all(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFileStore;
    use basalt_types::ColumnFamilyDescriptor;

    fn manifest(name: &str, table: &str) -> SnapshotManifest {
        let descriptor = TableDescriptor::new(table).family(ColumnFamilyDescriptor::new("f"));
        SnapshotManifest {
            name: name.into(),
            table: table.into(),
            created_ms: 1_000,
            ttl_secs: 0,
            kind: SnapshotKind::Flush,
            descriptor,
            regions: vec![SnapshotRegion {
                id: 7,
                start_key: Bytes::new(),
                end_key: Bytes::new(),
                stores: vec![SnapshotStore {
                    family: "f".into(),
                    files: vec![SnapshotFile {
                        table: table.into(),
                        region_id: 7,
                        file_id: 3,
                        lower: Bytes::new(),
                        upper: Bytes::new(),
                        size: 10,
                        max_sequence: 5,
                        cells: 2,
                    }],
                }],
            }],
            held_for: None,
            lease_until_ms: None,
            nonce: None,
            owner: None,
        }
    }

    #[test]
    fn a_manifest_round_trips_and_a_changed_byte_is_refused() {
        let m = manifest("s1", "t");
        let bytes = m.encode().unwrap();
        assert_eq!(SnapshotManifest::decode(&bytes).unwrap(), m);
        let mut bad = bytes.clone();
        let last = bad.len() - 2;
        bad[last] ^= 1;
        let (offset, message) = SnapshotManifest::decode(&bad).unwrap_err();
        assert!(message.contains("checksum"), "{message}");
        assert!(offset > 0);
    }

    #[test]
    fn an_expired_snapshot_is_one_whose_ttl_has_passed() {
        let mut m = manifest("s", "t");
        assert!(!m.expired(i64::MAX), "no TTL: never");
        m.ttl_secs = 2;
        assert!(!m.expired(3_000));
        assert!(m.expired(3_001));
    }

    #[test]
    fn snapshot_names_follow_hbase_rules() {
        for good in ["s", "a.b-c_d", "9x"] {
            check_snapshot_name(good).unwrap();
        }
        for bad in ["", ".s", "-s", "a b", "a/b", "a:b", "é"] {
            assert!(check_snapshot_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_referenced_store_file_survives_delete_and_delete_prefix() {
        let root = Path::new("/d");
        let inner: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
        let store = RetainingFileStore::new(Arc::clone(&inner), root, DEFAULT_MAX_MANIFEST_BYTES);
        let m = manifest("s", "t");
        let kept = m.regions[0].stores[0].files[0].path(root, "f");
        let other = kept.with_file_name(layout::store_file_name(4));
        let manifest_file = kept.with_file_name("MANIFEST-00000000000000000001");
        for p in [&kept, &other, &manifest_file] {
            inner.publish(p, b"x").unwrap();
        }
        let snapshot = layout::snapshot_path(root, 1, "s");
        write_manifest(inner.as_ref(), &snapshot, &m).unwrap();
        store.delete(&kept).unwrap();
        assert!(inner.exists(&kept).unwrap());
        store.delete_prefix(&layout::table_dir(root, "t")).unwrap();
        assert!(inner.exists(&kept).unwrap());
        assert!(!inner.exists(&other).unwrap());
        assert!(!inner.exists(&manifest_file).unwrap());
        inner.delete(&snapshot).unwrap();
        store.delete(&kept).unwrap();
        assert!(!inner.exists(&kept).unwrap(), "the last reference went");
    }

    #[test]
    fn a_pending_snapshot_keeps_every_file_of_its_table() {
        let root = Path::new("/d");
        let inner: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
        let store = RetainingFileStore::new(Arc::clone(&inner), root, DEFAULT_MAX_MANIFEST_BYTES);
        let file = layout::store_file_path(
            &layout::store_dir(&layout::region_dir(root, "t", 1), "f"),
            1,
        );
        let elsewhere = layout::store_file_path(
            &layout::store_dir(&layout::region_dir(root, "u", 1), "f"),
            1,
        );
        inner.publish(&file, b"x").unwrap();
        inner.publish(&elsewhere, b"x").unwrap();
        let marker = serde_json::to_vec(&PendingSnapshot {
            table: "t".into(),
            request: None,
        })
        .unwrap();
        inner
            .publish(&layout::pending_snapshot_path(root, 1, "s"), &marker)
            .unwrap();
        store.delete(&file).unwrap();
        store.delete(&elsewhere).unwrap();
        assert!(inner.exists(&file).unwrap());
        assert!(!inner.exists(&elsewhere).unwrap());
    }
}
