//! A store's manifest: which store files make up the store, and up to which
//! sequence id the store's data is in them.
//!
//! The manifest is never rewritten in place. Every change writes a complete
//! new version, `MANIFEST-<version>`, as a new file (create-if-absent, the
//! one primitive object stores offer too), and only once that file is
//! durable are older versions deleted. Opening picks the newest version that
//! passes its checksum; a newest version that fails it was cut short by a
//! crash before it was committed (its commit never returned), so the version
//! before it is still there and still the truth. See
//! `docs/manifest-format.md`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use basalt_types::{Error, Result};

use crate::fence::Fence;
use crate::fs::FileStore;
use crate::layout;

/// How far a new owner moves a store's next file id past the old owner's
/// when it fences the store (invariant M3 in `ManifestLog::load_and_fence`).
pub const FENCE_FILE_ID_GAP: u64 = 1 << 20;

/// True for the error `finish` reports when the name was taken.
pub fn is_already_exists(error: &Error) -> bool {
    matches!(error, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists)
}

/// Layout version of manifest files. Version 2 added file links; version 3
/// links that name another table (a table cloned or restored from a
/// snapshot reads the files the snapshot references). A manifest with no
/// such link is still written as version 2, so a data set without clones
/// stays readable by the versions before; versions 1 (no links) and 2 are
/// read.
pub const MANIFEST_FORMAT_VERSION: u32 = 3;
/// The version of a manifest none of whose links names a table.
const MANIFEST_FORMAT_WITHOUT_TABLE_LINKS: u32 = 2;
const READABLE_FORMAT_VERSIONS: [u32; 3] = [1, 2, 3];
const MAGIC: &str = "BASALT-STORE-MANIFEST";

/// One store file as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// File id, unique within the store; the file is `<id>.sst`.
    pub id: u64,
    /// Size in bytes.
    pub size: u64,
    /// Highest sequence id of any cell in the file.
    pub max_sequence: u64,
    /// Cells in the file.
    pub cells: u64,
    /// Written by a major compaction (holds no delete markers unless the
    /// family keeps deleted cells).
    pub major: bool,
    /// Set when the entry is a reference to a file of another region of
    /// the same table (a split daughter or merged region reading its
    /// parent's file until a compaction rewrites it). Such a file is never
    /// deleted by this store: it belongs to the region that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<FileLink>,
}

/// A reference to a store file written by another region of the table,
/// limited to the rows this region owns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileLink {
    /// The table whose region wrote the file, when it is not the linking
    /// store's own table or the link comes from a snapshot (a clone or a
    /// restore): such a file is kept by the snapshot's references, not by
    /// a retired region of this table. `None`: a sibling region of the
    /// same table (a split or merge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// The region that wrote (and owns) the file.
    pub region_id: u64,
    /// The file's id in that region's store of the same family.
    pub file_id: u64,
    /// First row visible through the link (inclusive; empty: unbounded).
    pub lower: bytes::Bytes,
    /// Row where the link stops (exclusive; empty: unbounded).
    pub upper: bytes::Bytes,
}

impl FileLink {
    /// The linked file's path, given the linking store's directory
    /// (`<table dir>/<region id>/<family>`): regions of a table are siblings.
    pub fn path(&self, store_dir: &Path) -> Result<PathBuf> {
        let path = match &self.table {
            Some(table) => {
                layout::other_table_store_file(store_dir, table, self.region_id, self.file_id)
            }
            None => layout::linked_store_file(store_dir, self.region_id, self.file_id),
        };
        path.ok_or_else(|| {
            Error::invalid(format!(
                "store directory {} is not inside a table directory",
                store_dir.display()
            ))
        })
    }
}

impl ManifestFile {
    /// The file's name within the store directory.
    pub fn file_name(&self) -> String {
        store_file_name(self.id)
    }

    /// The file's path: in `store_dir` for the store's own files, in the
    /// owning region's store for links.
    pub fn path(&self, store_dir: &Path) -> Result<PathBuf> {
        match &self.link {
            Some(link) => link.path(store_dir),
            None => Ok(store_dir.join(self.file_name())),
        }
    }
}

pub use crate::layout::store_file_name;

/// The store's durable state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreManifest {
    /// Version of this manifest (0: nothing committed yet).
    pub version: u64,
    /// Every edit of this store with a sequence id at or below this is in
    /// the files: WAL replay skips it.
    pub flushed_sequence: u64,
    /// The id the next store file gets.
    pub next_file_id: u64,
    /// The live store files.
    pub files: Vec<ManifestFile>,
    /// The epoch of the process that committed this version (0: a local
    /// data directory, where nothing is fenced). A writer whose own epoch
    /// is lower than a version it finds is fenced (see `crate::fence`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub epoch: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl StoreManifest {
    /// The bytes of a manifest file holding this manifest: the header line
    /// (magic, format version, body checksum, body length) and the JSON
    /// body.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let body = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::invalid(format!("manifest does not serialize: {e}")))?;
        let format = if self
            .files
            .iter()
            .any(|f| f.link.as_ref().is_some_and(|l| l.table.is_some()))
        {
            MANIFEST_FORMAT_VERSION
        } else {
            MANIFEST_FORMAT_WITHOUT_TABLE_LINKS
        };
        Ok(crate::checked::frame(MAGIC, format, &body))
    }

    /// Decodes the bytes of the manifest file named for `version`. Input is
    /// untrusted: any defect is an error message saying what is wrong
    /// (never a panic), and nothing is allocated beyond a small multiple of
    /// the input.
    pub fn decode(bytes: &[u8], version: u64) -> std::result::Result<StoreManifest, String> {
        let body = crate::checked::unframe(bytes, MAGIC, &READABLE_FORMAT_VERSIONS, "manifest")
            .map_err(|(_, why)| why)?
            .body;
        let manifest: StoreManifest =
            serde_json::from_slice(body).map_err(|e| format!("body does not parse: {e}"))?;
        if manifest.version != version {
            return Err(format!(
                "file is named version {version} but holds version {}",
                manifest.version
            ));
        }
        Ok(manifest)
    }
}

/// Reads and commits the manifest versions of one store directory.
#[derive(Debug, Clone)]
pub struct ManifestLog {
    fs: Arc<dyn FileStore>,
    dir: PathBuf,
    /// Set on shared storage: commits record its epoch and are refused once
    /// a newer owner committed a version.
    fence: Option<Arc<Fence>>,
}

/// What loading found besides the manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestLoad {
    /// Newer versions that failed their checksum (cut short by a crash) and
    /// were removed.
    pub discarded_versions: Vec<u64>,
}

impl ManifestLog {
    /// The manifest log of store directory `dir`.
    pub fn new(fs: Arc<dyn FileStore>, dir: impl Into<PathBuf>) -> Self {
        ManifestLog {
            fs,
            dir: dir.into(),
            fence: None,
        }
    }

    /// The same log, fenced by `fence` (none: unfenced, as locally).
    pub fn with_fence(mut self, fence: Option<Arc<Fence>>) -> Self {
        self.fence = fence;
        self
    }

    /// Fencing at open (step 3 of the protocol in `docs/object-storage.md`):
    /// makes sure the newest version records this process's epoch, so that
    /// a stale writer's next commit collides. Loads the newest version;
    /// while its epoch is lower than ours, commits the same content as the
    /// next version with our epoch, create-if-absent. Losing that race
    /// means a stale writer committed in between (a flush or compaction it
    /// began before it was fenced): load again and retry, so nothing it
    /// published is dropped. A version with a *higher* epoch means a newer
    /// owner exists: we are fenced ourselves. Without a fence, this is
    /// [`ManifestLog::load`].
    pub fn load_and_fence(&self) -> Result<(StoreManifest, ManifestLoad)> {
        let Some(fence) = &self.fence else {
            return self.load();
        };
        // Each lost race means the stale writer published a version; it can
        // publish only while unfenced, so this ends quickly. The bound turns
        // a bug into an error instead of a hang.
        for _ in 0..64 {
            fence.check()?;
            let (manifest, report) = self.load()?;
            if manifest.epoch > fence.epoch() {
                return Err(fence.trip(
                    manifest.epoch,
                    format!(
                        "manifest version {} of {} was committed at epoch {}",
                        manifest.version,
                        self.dir.display(),
                        manifest.epoch
                    ),
                ));
            }
            if manifest.epoch == fence.epoch() {
                return Ok((manifest, report));
            }
            let mut next = manifest.clone();
            next.version = manifest.version + 1;
            next.epoch = fence.epoch();
            // Fencing invariant M3: the new owner's file ids start above any
            // the stale writer may still use. It allocates ids from its own
            // copy of the manifest, and can still write the file of each
            // flush or compaction it began before it learned it was fenced
            // (then the commit collides, the fence trips, and
            // `Store::write_file` refuses to start another); those few ids
            // are far below the gap, so no name is ever written twice.
            next.next_file_id = manifest
                .next_file_id
                .max(1)
                .saturating_add(FENCE_FILE_ID_GAP);
            match self.publish(&next) {
                Ok(()) => {
                    self.delete_older(next.version)?;
                    return Ok((next, report));
                }
                Err(e) if is_already_exists(&e) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::Corruption {
            path: self.dir.clone(),
            offset: 0,
            message: "could not fence the store manifest: new versions kept appearing".into(),
        })
    }

    fn path(&self, version: u64) -> PathBuf {
        layout::manifest_path(&self.dir, version)
    }

    /// The newest manifest version of the store, read without writing or
    /// deleting anything (the store may belong to a region open elsewhere:
    /// the master's janitor and snapshot code read it so). `None` for a
    /// store with no version. A newest version that fails its checks is an
    /// error: a reader that is not the owner cannot tell a torn commit from
    /// damage, and callers keep what they would otherwise delete.
    pub fn read_newest(&self) -> Result<Option<StoreManifest>> {
        match self.versions()?.first() {
            Some(&version) => self.read_version(version).map(Some),
            None => Ok(None),
        }
    }

    /// Versions present in the directory, newest first.
    fn versions(&self) -> Result<Vec<u64>> {
        let mut versions: Vec<u64> = self
            .fs
            .list(&self.dir)?
            .iter()
            .filter_map(|p| layout::manifest_version_of(p))
            .collect();
        versions.sort_unstable_by(|a, b| b.cmp(a));
        Ok(versions)
    }

    /// Loads the newest committed manifest (an empty one for a new store)
    /// and removes versions that are not it.
    pub fn load(&self) -> Result<(StoreManifest, ManifestLoad)> {
        let versions = self.versions()?;
        let mut report = ManifestLoad::default();
        let mut chosen: Option<StoreManifest> = None;
        let mut first_error: Option<Error> = None;
        for &version in &versions {
            if chosen.is_some() {
                // Superseded: a crash came between committing the newer
                // version and deleting this one.
                self.fs.delete(&self.path(version))?;
                continue;
            }
            match self.read_version(version) {
                Ok(manifest) => chosen = Some(manifest),
                // Only a version that was read and failed its checks can be
                // one that was never committed. An I/O error says nothing
                // about the file: discarding (and deleting) the newest
                // version on a transient read error silently dropped its
                // flush, whose log segments may already be gone.
                Err(e @ (Error::Io { .. } | Error::WalFailed(_) | Error::Closed(_))) => {
                    return Err(e)
                }
                Err(e) => {
                    tracing::warn!(path = %self.path(version).display(), error = %e,
                        "discarding a manifest version that was never committed");
                    report.discarded_versions.push(version);
                    first_error.get_or_insert(e);
                }
            }
        }
        match chosen {
            Some(manifest) => {
                for &version in &report.discarded_versions {
                    self.fs.delete(&self.path(version))?;
                }
                Ok((manifest, report))
            }
            // Only version 1 can be torn with nothing before it: the store's
            // first commit never completed, so the store holds no files yet
            // (its data is still in the WAL). Anything else lost its last
            // committed version: refuse to guess.
            None if versions.is_empty() || versions == [1] => {
                if let Some(&v) = versions.first() {
                    self.fs.delete(&self.path(v))?;
                }
                Ok((StoreManifest::default(), report))
            }
            None => Err(first_error.unwrap_or_else(|| Error::Corruption {
                path: self.dir.clone(),
                offset: 0,
                message: "no readable manifest version".into(),
            })),
        }
    }

    fn read_version(&self, version: u64) -> Result<StoreManifest> {
        let path = self.path(version);
        let size = self.fs.size(&path)?;
        let corrupt = |message: String| Error::Corruption {
            path: path.clone(),
            offset: 0,
            message,
        };
        if size > 64 * 1024 * 1024 {
            return Err(corrupt(format!(
                "manifest of {size} bytes is implausibly large"
            )));
        }
        let bytes = self.fs.read_range(&path, 0, size as usize)?;
        StoreManifest::decode(&bytes, version).map_err(corrupt)
    }

    /// Commits `manifest` as the next version after `previous` and removes
    /// the older version. On return the new version is durable.
    pub fn commit(
        &self,
        previous: &StoreManifest,
        mut manifest: StoreManifest,
    ) -> Result<StoreManifest> {
        // A store's files only ever cover more of its edits, and file ids
        // are never reused: replay and file naming rely on both.
        debug_assert!(manifest.flushed_sequence >= previous.flushed_sequence);
        debug_assert!(manifest.next_file_id >= previous.next_file_id);
        debug_assert!(manifest
            .files
            .iter()
            .all(|f| f.link.is_some() || f.id < manifest.next_file_id));
        // Never reuse a number, not even one a discarded torn version had.
        let newest_on_disk = self.versions()?.first().copied().unwrap_or(0);
        if let Some(fence) = &self.fence {
            fence.check()?;
            // Fencing invariant M1: a writer never commits over a version it
            // did not load or write itself without first checking who wrote
            // it. A newer version from a higher epoch is a newer owner's
            // fence (or later work): committing after it would make this
            // stale writer's flush visible to that owner.
            if newest_on_disk > previous.version {
                self.check_not_newer(newest_on_disk, fence)?;
            }
            manifest.epoch = fence.epoch();
        }
        manifest.version = previous.version.max(newest_on_disk) + 1;
        match self.publish(&manifest) {
            Ok(()) => {}
            // Fencing invariant M2: losing the create-if-absent race for a
            // version to a higher epoch fences this writer; the version it
            // tried to write is never published.
            Err(e) if is_already_exists(&e) => {
                if let Some(fence) = &self.fence {
                    self.check_not_newer(manifest.version, fence)?;
                }
                return Err(e);
            }
            Err(e) => return Err(e),
        }
        self.delete_older(manifest.version)?;
        Ok(manifest)
    }

    /// Writes `manifest` as its version's file, create-if-absent.
    fn publish(&self, manifest: &StoreManifest) -> Result<()> {
        let bytes = manifest.encode()?;
        let path = self.path(manifest.version);
        let mut writer = self.fs.create(&path)?;
        writer.write_all(&bytes)?;
        writer.finish()?;
        Ok(())
    }

    fn delete_older(&self, version: u64) -> Result<()> {
        for old in self.versions()? {
            if old < version {
                self.fs.delete(&self.path(old))?;
            }
        }
        Ok(())
    }

    /// Trips `fence` if version `version` was committed at a higher epoch.
    fn check_not_newer(&self, version: u64, fence: &Fence) -> Result<()> {
        match self.read_version(version) {
            Ok(found) if found.epoch > fence.epoch() => Err(fence.trip(
                found.epoch,
                format!(
                    "manifest version {version} of {} was committed at epoch {}",
                    self.dir.display(),
                    found.epoch
                ),
            )),
            Ok(_) => Ok(()),
            // Unreadable: not a newer owner's commit (those are whole);
            // the commit goes on and the next load judges it.
            Err(Error::Corruption { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::LocalFileStore;

    fn log(dir: &Path) -> ManifestLog {
        ManifestLog::new(Arc::new(LocalFileStore::new()), dir)
    }

    fn file(id: u64) -> ManifestFile {
        ManifestFile {
            id,
            size: 100,
            max_sequence: id * 10,
            cells: 5,
            major: false,
            link: None,
        }
    }

    #[test]
    fn new_store_has_an_empty_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let (m, report) = log(dir.path()).load().unwrap();
        assert_eq!(m, StoreManifest::default());
        assert!(report.discarded_versions.is_empty());
    }

    #[test]
    fn commits_replace_older_versions() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        let (m0, _) = log.load().unwrap();
        let m1 = log
            .commit(
                &m0,
                StoreManifest {
                    flushed_sequence: 7,
                    next_file_id: 2,
                    files: vec![file(1)],
                    ..m0.clone()
                },
            )
            .unwrap();
        let m2 = log
            .commit(
                &m1,
                StoreManifest {
                    flushed_sequence: 9,
                    next_file_id: 3,
                    files: vec![file(1), file(2)],
                    ..m1.clone()
                },
            )
            .unwrap();
        assert_eq!(m2.version, 2);
        let (loaded, _) = log.load().unwrap();
        assert_eq!(loaded, m2);
        assert_eq!(
            log.versions().unwrap(),
            vec![2],
            "older versions are removed"
        );
    }

    #[test]
    fn a_torn_newest_version_falls_back_to_the_previous() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        let (m0, _) = log.load().unwrap();
        let m1 = log
            .commit(
                &m0,
                StoreManifest {
                    files: vec![file(1)],
                    next_file_id: 2,
                    ..m0.clone()
                },
            )
            .unwrap();
        // A crash while writing version 2: a partial file with the final name.
        std::fs::write(log.path(2), b"BASALT-STORE-MANIFEST 1 0000").unwrap();
        let (loaded, report) = log.load().unwrap();
        assert_eq!(loaded, m1);
        assert_eq!(report.discarded_versions, vec![2]);
        // The next commit does not reuse the torn number.
        let m3 = log.commit(&loaded, loaded.clone()).unwrap();
        assert_eq!(m3.version, 2);
        assert_eq!(log.load().unwrap().0.version, 2);
    }

    #[test]
    fn a_read_error_on_the_newest_version_fails_the_load_and_deletes_nothing() {
        use crate::fs::{FaultOp, FaultyFileStore, MemFileStore};
        let faulty = Arc::new(FaultyFileStore::new(Arc::new(MemFileStore::new())));
        let log = ManifestLog::new(faulty.clone(), "/store");
        let (m0, _) = log.load().unwrap();
        let m1 = log.commit(&m0, m0.clone()).unwrap();
        // A crash between committing version 2 and deleting version 1
        // leaves both; then reading version 2 fails once.
        let m2 = StoreManifest {
            version: 2,
            next_file_id: 5,
            ..m1.clone()
        };
        let mut w = faulty.create(&log.path(2)).unwrap();
        w.write_all(&m2.encode().unwrap()).unwrap();
        w.finish().unwrap();
        faulty.fail_nth(FaultOp::Read, faulty.calls(FaultOp::Read) + 1);
        let err = log.load().unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err}");
        assert!(
            faulty.exists(&log.path(2)).unwrap(),
            "the newest version stays"
        );
        let (loaded, report) = log.load().unwrap();
        assert_eq!(
            loaded.next_file_id, 5,
            "the newest version is the one loaded"
        );
        assert!(report.discarded_versions.is_empty());
    }

    #[test]
    fn a_torn_first_version_means_no_files_yet() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        std::fs::write(log.path(1), b"BASALT-STORE").unwrap();
        let (loaded, _) = log.load().unwrap();
        assert_eq!(loaded, StoreManifest::default());
    }

    #[test]
    fn a_damaged_only_version_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        let (m0, _) = log.load().unwrap();
        let m1 = log.commit(&m0, m0.clone()).unwrap();
        let m2 = log.commit(&m1, m1.clone()).unwrap();
        let path = log.path(m2.version);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 2;
        bytes[last] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        let err = log.load().unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{err}");
        assert!(err.to_string().contains("MANIFEST-"), "{err}");
    }

    #[test]
    fn a_stale_writer_cannot_commit_after_a_newer_epoch_fenced_the_store() {
        let files: Arc<dyn FileStore> = Arc::new(crate::fs::MemFileStore::new());
        let stale_fence = Arc::new(Fence::new(1));
        let stale =
            ManifestLog::new(Arc::clone(&files), "/store").with_fence(Some(stale_fence.clone()));
        let (m0, _) = stale.load_and_fence().unwrap();
        assert_eq!((m0.version, m0.epoch), (1, 1));

        let owner = ManifestLog::new(Arc::clone(&files), "/store")
            .with_fence(Some(Arc::new(Fence::new(2))));
        let (fenced, _) = owner.load_and_fence().unwrap();
        assert_eq!((fenced.version, fenced.epoch), (2, 2));

        let next = StoreManifest {
            next_file_id: m0.next_file_id + 1,
            ..m0.clone()
        };
        let err = stale.commit(&m0, next).unwrap_err();
        assert!(matches!(err, Error::Fenced { epoch: 2, .. }), "{err}");
        assert!(stale_fence.is_tripped());
        // Nothing the stale writer tried is visible: the owner's version is
        // still the newest.
        let (now, _) = owner.load().unwrap();
        assert_eq!(now, fenced);
    }

    #[test]
    fn fencing_a_store_keeps_what_a_stale_writer_committed_just_before() {
        let files: Arc<dyn FileStore> = Arc::new(crate::fs::MemFileStore::new());
        let stale = ManifestLog::new(Arc::clone(&files), "/store")
            .with_fence(Some(Arc::new(Fence::new(1))));
        let (m0, _) = stale.load_and_fence().unwrap();
        let m1 = stale
            .commit(
                &m0,
                StoreManifest {
                    flushed_sequence: 40,
                    next_file_id: m0.next_file_id + 2,
                    ..m0.clone()
                },
            )
            .unwrap();
        let owner = ManifestLog::new(Arc::clone(&files), "/store")
            .with_fence(Some(Arc::new(Fence::new(2))));
        let (fenced, _) = owner.load_and_fence().unwrap();
        assert_eq!(fenced.version, m1.version + 1);
        assert_eq!(fenced.flushed_sequence, 40);
        assert_eq!(fenced.next_file_id, m1.next_file_id + FENCE_FILE_ID_GAP);
        assert_eq!(fenced.epoch, 2);
    }
}
