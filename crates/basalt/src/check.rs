//! The offline checker and repair tool (`basalt check`, `basalt repair`),
//! in the spirit of HBase's `hbck` and RocksDB's `ldb` / `sst_dump`.
//!
//! [`check`] reads every file of a data directory that no server holds
//! and verifies every checksum (store files: every data block, index and
//! bloom block, the metadata and the trailer; manifests; the catalog;
//! every WAL record) and the invariants that tie them together (serving
//! regions chain from -inf to +inf; manifests list files that exist;
//! links point at files of regions the catalog still has; no orphan
//! files). It changes nothing.
//!
//! Repairs never delete: [`quarantine_store_file`] moves a damaged store
//! file into `<root>/quarantine/` and commits manifests without it;
//! [`recover_wal`] applies a recovery mode to the log (RocksDB's WAL
//! recovery modes), moving what it drops into the quarantine too.
//! See docs/check-and-repair.md.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use basalt_engine::block_cache::next_file_id;
use basalt_engine::fs::{FileStore, LocalFileStore};
use basalt_engine::layout;
use basalt_engine::manifest::{ManifestLog, StoreManifest};
use basalt_engine::source::{first_on_row, CellSource};
use basalt_engine::storefile::StoreFileReader;
use basalt_engine::wal::inspect::{self, SegmentScan};
use basalt_types::cell::escape_bytes;
use basalt_types::{Error, Result};

use crate::catalog::{Catalog, CatalogFiles};
use crate::database::lock_directory;

/// One thing found wrong: the file, where in it (when known) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The damaged, missing or orphaned file or directory.
    pub file: PathBuf,
    /// Byte offset of the damage, when the check knows it.
    pub offset: Option<u64>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(offset) => write!(
                f,
                "{} at offset {offset}: {}",
                self.file.display(),
                self.message
            ),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

/// What [`check`] looked at and found.
#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    /// Everything wrong; empty when the data directory is healthy.
    pub problems: Vec<Problem>,
    /// Harmless findings a start-up deals with by itself (a torn last WAL
    /// record left by a crash).
    pub notes: Vec<Problem>,
    /// Tables in the catalog.
    pub tables: usize,
    /// Serving regions.
    pub regions: usize,
    /// Store files verified.
    pub store_files: usize,
    /// Manifest versions verified.
    pub manifests: usize,
    /// WAL segments verified.
    pub wal_segments: usize,
    /// WAL records verified.
    pub wal_records: u64,
    /// Snapshot manifests and holds verified (docs/snapshots.md).
    pub snapshots: usize,
}

impl CheckReport {
    /// True when nothing is wrong.
    pub fn is_healthy(&self) -> bool {
        self.problems.is_empty()
    }

    /// One line: what was checked and how many problems were found.
    pub fn summary(&self) -> String {
        format!(
            "{}: {} tables, {} regions, {} store files, {} manifests, {} WAL segments ({} records) checked; {} problem{} found",
            if self.is_healthy() { "OK" } else { "DAMAGED" },
            self.tables,
            self.regions,
            self.store_files,
            self.manifests,
            self.wal_segments,
            self.wal_records,
            self.problems.len(),
            if self.problems.len() == 1 { "" } else { "s" },
        )
    }

    fn problem(&mut self, file: impl Into<PathBuf>, offset: Option<u64>, message: String) {
        self.problems.push(Problem {
            file: file.into(),
            offset,
            message,
        });
    }

    fn error(&mut self, fallback: &Path, error: &Error) {
        let (file, offset) = match error {
            Error::Corruption { path, offset, .. } => (path.clone(), Some(*offset)),
            Error::Io { path, .. } => (path.clone(), None),
            _ => (fallback.to_path_buf(), None),
        };
        self.problem(file, offset, error.to_string());
    }
}

/// Takes the data directory's lock, so neither tool runs beside a server:
/// a server holding it is refused with a sentence saying so.
fn lock(root: &Path) -> Result<File> {
    if !root.is_dir() {
        return Err(Error::invalid(format!(
            "{} is not a data directory",
            root.display()
        )));
    }
    lock_directory(root).map_err(|e| match e {
        Error::Locked { path } => Error::invalid(format!(
            "{} is in use by a running server (lock {} is held); stop it first",
            root.display(),
            path.display()
        )),
        other => other,
    })
}

/// Checks the data directory `root` (on the local disk) and reports what
/// is wrong; changes nothing. Refuses while a server holds the directory.
pub fn check(root: &Path) -> Result<CheckReport> {
    let _lock = lock(root)?;
    let files = LocalFileStore::new();
    let mut report = CheckReport::default();
    let catalog = read_catalog(&files, root, &mut report)?;
    let referenced = check_snapshots(&files, root, &mut report)?;
    check_regions(&files, root, catalog.as_ref(), &referenced, &mut report)?;
    check_wal(root, &mut report)?;
    Ok(report)
}

/// The newest catalog version, read without the clean-up `Catalog::load`
/// does; `None` (and a problem) when it cannot be read.
fn read_catalog(
    files: &dyn FileStore,
    root: &Path,
    report: &mut CheckReport,
) -> Result<Option<Catalog>> {
    let Some((_, newest)) = CatalogFiles::find(files, root)?.newest else {
        return Ok(Some(Catalog::default()));
    };
    // Reading applies every delta after the newest checkpoint and checks
    // the regions' key-space invariant; an error names the file at fault.
    match Catalog::read_newest(files, root) {
        Ok(catalog) => Ok(Some(catalog)),
        Err(e) => {
            report.error(&newest, &e);
            Ok(None)
        }
    }
}

/// Every snapshot manifest and hold: each decodes and passes its checks,
/// and every store file it references exists. Returns the referenced
/// files: they are no orphans, wherever they lie.
fn check_snapshots(
    files: &dyn FileStore,
    root: &Path,
    report: &mut CheckReport,
) -> Result<HashSet<PathBuf>> {
    let mut referenced = HashSet::new();
    for path in files.list(&layout::snapshot_dir(root))? {
        match layout::snapshot_entry_of(&path) {
            Some(layout::SnapshotEntry::Snapshot(..) | layout::SnapshotEntry::Hold(_)) => {}
            Some(layout::SnapshotEntry::Pending(_, name)) => {
                report.notes.push(Problem {
                    file: path.clone(),
                    offset: None,
                    message: format!(
                        "snapshot '{name}' was being taken when its master stopped; the next start removes the marker"
                    ),
                });
                continue;
            }
            None => continue,
        }
        report.snapshots += 1;
        match basalt_engine::snapshot::read_manifest(
            files,
            &path,
            basalt_engine::snapshot::DEFAULT_MAX_MANIFEST_BYTES,
        ) {
            Ok(manifest) => {
                for file in manifest.paths(root) {
                    if !files.exists(&file)? {
                        report.problem(
                            &file,
                            None,
                            format!("referenced by {} but missing", path.display()),
                        );
                    }
                    referenced.insert(file);
                }
            }
            Err(e) => report.error(&path, &e),
        }
    }
    Ok(referenced)
}

/// Every region directory: the catalog's regions' stores (manifests,
/// listed files, links), orphans, and every store file's checksums. A
/// region directory the catalog does not name, and a store file no
/// manifest lists, are no problem when a snapshot references their files.
fn check_regions(
    files: &dyn FileStore,
    root: &Path,
    catalog: Option<&Catalog>,
    referenced: &HashSet<PathBuf>,
    report: &mut CheckReport,
) -> Result<()> {
    // Region directories the catalog knows, with the families they have.
    let mut known: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    if let Some(catalog) = catalog {
        report.tables = catalog.tables.len();
        for (name, entry) in &catalog.tables {
            report.regions += entry.regions.len();
            let families: BTreeSet<String> = entry
                .descriptor
                .families()
                .iter()
                .map(|f| f.name().to_string())
                .collect();
            for region in entry.regions.iter().chain(&entry.retired) {
                known.insert(layout::region_dir(root, name, region.id), families.clone());
            }
        }
    }
    for namespace in files.list_dirs(&layout::data_dir(root))? {
        for table in files.list_dirs(&namespace)? {
            for region in files.list_dirs(&table)? {
                let families = known.get(&region);
                let kept = referenced.iter().any(|p| p.starts_with(&region));
                if catalog.is_some() && families.is_none() && !kept {
                    report.problem(
                        &region,
                        None,
                        "orphan region directory: the catalog has no such region".into(),
                    );
                }
                for store in files.list_dirs(&region)? {
                    let family = store
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    if families.is_some_and(|f| !f.contains(&family)) {
                        report.problem(
                            &store,
                            None,
                            format!("orphan store directory: the table has no family {family}"),
                        );
                    }
                    check_store(files, &store, &known, referenced, report)?;
                }
            }
        }
    }
    Ok(())
}

/// One store directory: its manifests, the files they list, its store files.
fn check_store(
    files: &dyn FileStore,
    store: &Path,
    known: &BTreeMap<PathBuf, BTreeSet<String>>,
    referenced: &HashSet<PathBuf>,
    report: &mut CheckReport,
) -> Result<()> {
    let listing = files.list(store)?;
    let mut versions: Vec<(u64, &PathBuf)> = listing
        .iter()
        .filter_map(|p| layout::manifest_version_of(p).map(|v| (v, p)))
        .collect();
    versions.sort_unstable_by_key(|(v, _)| std::cmp::Reverse(*v));
    let mut manifest: Option<StoreManifest> = None;
    for (version, path) in &versions {
        report.manifests += 1;
        let decoded = files.read_all(path).and_then(|bytes| {
            StoreManifest::decode(&bytes, *version).map_err(|message| Error::Corruption {
                path: (*path).clone(),
                offset: 0,
                message,
            })
        });
        match decoded {
            Ok(m) => {
                manifest.get_or_insert(m);
            }
            Err(e) => report.error(path, &e),
        }
    }
    let mut listed: HashSet<String> = HashSet::new();
    if let Some(manifest) = &manifest {
        for entry in &manifest.files {
            let path = match entry.path(store) {
                Ok(path) => path,
                Err(e) => {
                    report.error(store, &e);
                    continue;
                }
            };
            match &entry.link {
                None => {
                    listed.insert(entry.file_name());
                }
                Some(link) => {
                    let owner = path
                        .parent()
                        .and_then(Path::parent)
                        .map(Path::to_path_buf)
                        .unwrap_or_default();
                    // A link naming a table reads a file a snapshot's hold
                    // keeps, whether or not its region still exists.
                    let held = link.table.is_some() && referenced.contains(&path);
                    if !known.is_empty() && !known.contains_key(&owner) && !held {
                        report.problem(
                            store,
                            None,
                            format!(
                                "links to file {} of region {}, which the catalog no longer has",
                                link.file_id, link.region_id
                            ),
                        );
                    }
                }
            }
            if !files.exists(&path)? {
                report.problem(
                    &path,
                    None,
                    format!("listed by the manifest of {} but missing", store.display()),
                );
            }
        }
    }
    for path in listing.iter().filter(|p| layout::is_store_file(p)) {
        report.store_files += 1;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if manifest.is_some() && !listed.contains(&name) && !referenced.contains(path) {
            report.problem(
                path,
                None,
                "orphan store file: no manifest lists it (the next open deletes it)".into(),
            );
        }
        if let Err(e) = verify_store_file(Arc::new(LocalFileStore::new()), path) {
            report.error(path, &e);
        }
    }
    Ok(())
}

/// The rows a store file holds: its first and last row and cell count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreFileSummary {
    /// First row.
    pub first_row: Option<Bytes>,
    /// Last row.
    pub last_row: Option<Bytes>,
    /// Cells read.
    pub cells: u64,
}

/// Reads a whole store file: trailer, metadata and indexes on open, then
/// every data block (by reading every cell) and every bloom chunk (by
/// asking the bloom about every cell), each checked against its checksum.
pub fn verify_store_file(files: Arc<dyn FileStore>, path: &Path) -> Result<StoreFileSummary> {
    let reader = StoreFileReader::open(files, path, next_file_id(), None)?;
    let mut source = reader.source();
    source.seek(&first_on_row(b""))?;
    let mut summary = StoreFileSummary {
        first_row: None,
        last_row: None,
        cells: 0,
    };
    while let Some(cell) = source.peek() {
        if summary.first_row.is_none() {
            summary.first_row = Some(cell.row.clone());
        }
        if !reader.may_contain_column(&cell.row, &cell.qualifier)? {
            return Err(Error::Corruption {
                path: path.to_path_buf(),
                offset: 0,
                message: format!(
                    "the bloom filter denies a cell of row '{}' that the file holds",
                    escape_bytes(&cell.row)
                ),
            });
        }
        summary.last_row = Some(cell.row.clone());
        summary.cells += 1;
        source.advance()?;
    }
    Ok(summary)
}

/// Every record of every WAL segment.
fn check_wal(root: &Path, report: &mut CheckReport) -> Result<()> {
    let scans = inspect::scan_log(&layout::wal_dir(root))?;
    let last = scans.len().saturating_sub(1);
    for (i, scan) in scans.iter().enumerate() {
        report.wal_segments += 1;
        report.wal_records += scan.records;
        let Some(damage) = &scan.damage else {
            continue;
        };
        let finding = Problem {
            file: scan.path.clone(),
            offset: Some(damage.offset),
            message: damage.message.clone(),
        };
        if damage.torn && i == last {
            report.notes.push(Problem {
                message: format!(
                    "{} (a torn last record left by a crash: the next open drops it)",
                    finding.message
                ),
                ..finding
            });
        } else {
            report.problems.push(finding);
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ repair

/// What [`quarantine_store_file`] did.
#[derive(Debug, Clone)]
pub struct QuarantineReport {
    /// The file taken out of service.
    pub file: PathBuf,
    /// Where it is now.
    pub moved_to: PathBuf,
    /// The rows whose cells in the file are lost: its first and last row
    /// when they could still be read, else the owning region's key range
    /// (`[start, end)`, empty meaning unbounded) as an upper bound.
    pub lost_range: LostRange,
    /// Manifests committed without the file (its store's, and those of
    /// regions that linked to it).
    pub manifests_updated: Vec<PathBuf>,
}

/// The rows a quarantined file held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LostRange {
    /// First and last row of the file, read from it.
    Rows {
        /// First row.
        first: Bytes,
        /// Last row (inclusive).
        last: Bytes,
    },
    /// The file held no cells.
    Empty,
    /// The file could not say: at most the region's rows `[start, end)`.
    AtMostRegion {
        /// Region start (empty: the table start).
        start: Bytes,
        /// Region end (empty: the table end).
        end: Bytes,
    },
}

impl fmt::Display for LostRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LostRange::Rows { first, last } => write!(
                f,
                "rows '{}' to '{}' (inclusive)",
                escape_bytes(first),
                escape_bytes(last)
            ),
            LostRange::Empty => f.write_str("no rows (the file held no cells)"),
            LostRange::AtMostRegion { start, end } => write!(
                f,
                "unknown (the file cannot be read); at most the region's rows ['{}', '{}')",
                escape_bytes(start),
                escape_bytes(end)
            ),
        }
    }
}

/// Takes store file `file` of the data directory `root` out of service:
/// moves it to `<root>/quarantine/<its path under root>`, then commits a
/// new manifest version of its store without it, and of every store that
/// linked to it (split daughters, merged regions) without the link.
/// Reports the rows whose data in the file is lost. Deletes nothing.
pub fn quarantine_store_file(root: &Path, file: &Path) -> Result<QuarantineReport> {
    let _lock = lock(root)?;
    let files: Arc<dyn FileStore> = Arc::new(LocalFileStore::new());
    let relative = file
        .strip_prefix(root)
        .map_err(|_| {
            Error::invalid(format!(
                "{} is not inside the data directory {}",
                file.display(),
                root.display()
            ))
        })?
        .to_path_buf();
    let file_id = file
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(layout::STORE_FILE_SUFFIX))
        .and_then(|n| n.parse::<u64>().ok());
    let (Some(file_id), Some(store), true) = (
        file_id,
        file.parent(),
        file.starts_with(layout::data_dir(root)),
    ) else {
        return Err(Error::invalid(format!(
            "{} is not a store file of {}",
            file.display(),
            root.display()
        )));
    };
    let region_dir = store.parent().unwrap_or(store);
    let table_dir = region_dir.parent().unwrap_or(region_dir);
    let region_id = layout::region_id_of(region_dir);
    let family = store.file_name().map(|n| n.to_os_string());
    let moved_to = layout::quarantine_dir(root).join(&relative);
    if !file.exists() && !moved_to.exists() {
        return Err(Error::invalid(format!("{} does not exist", file.display())));
    }

    let lost_range = match verify_store_file(Arc::clone(&files), file) {
        Ok(StoreFileSummary {
            first_row: Some(first),
            last_row: Some(last),
            ..
        }) => LostRange::Rows { first, last },
        Ok(_) => LostRange::Empty,
        Err(_) => read_rows_or_region(&files, root, file, region_id),
    };

    // Move first: a crash before the manifests are committed leaves the
    // region FAILED_OPEN (a listed file is missing) and running the repair
    // again finishes it; the other order could let a start-up delete the
    // file as an orphan.
    if file.exists() {
        if let Some(parent) = moved_to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        std::fs::rename(file, &moved_to).map_err(|e| Error::io(file, e))?;
    }

    let mut manifests_updated = Vec::new();
    for region in files.list_dirs(table_dir)? {
        let Some(family) = &family else { break };
        let candidate = region.join(family);
        let own = candidate == store;
        let log = ManifestLog::new(Arc::clone(&files), &candidate);
        if !own && files.list(&candidate)?.is_empty() {
            continue;
        }
        let (previous, _) = log.load()?;
        let mut next = previous.clone();
        next.files.retain(|entry| match &entry.link {
            None => !(own && entry.id == file_id),
            Some(link) => !(Some(link.region_id) == region_id && link.file_id == file_id),
        });
        if next.files.len() != previous.files.len() {
            let committed = log.commit(&previous, next)?;
            manifests_updated.push(layout::manifest_path(&candidate, committed.version));
        }
    }
    tracing::warn!(file = %file.display(), moved_to = %moved_to.display(), lost = %lost_range, "quarantined a store file");
    Ok(QuarantineReport {
        file: file.to_path_buf(),
        moved_to,
        lost_range,
        manifests_updated,
    })
}

/// The lost rows of a file that cannot be read whole: the first and last
/// row from its metadata when that is intact, else its region's range.
fn read_rows_or_region(
    files: &Arc<dyn FileStore>,
    root: &Path,
    file: &Path,
    region_id: Option<u64>,
) -> LostRange {
    if let Ok(reader) = StoreFileReader::open(Arc::clone(files), file, next_file_id(), None) {
        if let Some((first, last)) = reader.key_range() {
            return LostRange::Rows {
                first: first.row.clone(),
                last: last.row.clone(),
            };
        }
    }
    let mut scratch = CheckReport::default();
    let region = read_catalog(files.as_ref(), root, &mut scratch)
        .ok()
        .flatten()
        .and_then(|catalog| {
            catalog.tables.values().find_map(|t| {
                t.regions
                    .iter()
                    .chain(&t.retired)
                    .find(|r| Some(r.id) == region_id)
                    .map(|r| (r.start_key.clone(), r.end_key.clone()))
            })
        });
    let (start, end) = region.unwrap_or_default();
    LostRange::AtMostRegion { start, end }
}

/// How a damaged log is opened (RocksDB's WAL recovery modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalRecovery {
    /// Refuse on any damage but a torn last record (the default, and what
    /// every start-up does): nothing acknowledged is silently lost.
    AbsoluteConsistency,
    /// Keep every record before the first damaged one and drop the rest
    /// (the damaged segment is cut there, later segments are moved to the
    /// quarantine): the database recovers to a consistent point in time.
    PointInTime,
}

impl std::str::FromStr for WalRecovery {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "absolute-consistency" => Ok(WalRecovery::AbsoluteConsistency),
            "point-in-time" => Ok(WalRecovery::PointInTime),
            other => Err(format!(
                "unknown WAL recovery mode '{other}': expected absolute-consistency or point-in-time"
            )),
        }
    }
}

/// What [`recover_wal`] found and did.
#[derive(Debug, Clone, Default)]
pub struct WalRecoveryReport {
    /// The first damaged record: segment, offset, what failed.
    pub damage: Option<Problem>,
    /// Intact records kept.
    pub records_kept: u64,
    /// The damaged segment's bytes from the damage on were cut off (a
    /// whole copy of it is in the quarantine): segment, new length, bytes
    /// dropped.
    pub truncated: Option<(PathBuf, u64, u64)>,
    /// Segments moved whole into the quarantine (after the damage, or
    /// with no intact record at all).
    pub moved: Vec<PathBuf>,
}

/// Applies `mode` to the log of the data directory `root`. With
/// [`WalRecovery::AbsoluteConsistency`] it changes nothing and fails with
/// the corruption, if there is any; with [`WalRecovery::PointInTime`] it
/// drops everything from the first damaged record on, moving it into the
/// quarantine (never deleting), and reports what it dropped.
pub fn recover_wal(root: &Path, mode: WalRecovery) -> Result<WalRecoveryReport> {
    let _lock = lock(root)?;
    let scans = inspect::scan_log(&layout::wal_dir(root))?;
    let mut report = WalRecoveryReport::default();
    let Some(first_bad) = scans.iter().position(|s| s.damage.is_some()) else {
        report.records_kept = scans.iter().map(|s| s.records).sum();
        return Ok(report);
    };
    report.records_kept = scans[..first_bad].iter().map(|s| s.records).sum();
    let bad: &SegmentScan = &scans[first_bad];
    let damage = bad
        .damage
        .clone()
        .unwrap_or_else(|| inspect::SegmentDamage {
            offset: 0,
            message: String::new(),
            torn: false,
        });
    report.damage = Some(Problem {
        file: bad.path.clone(),
        offset: Some(damage.offset),
        message: damage.message.clone(),
    });
    if mode == WalRecovery::AbsoluteConsistency {
        return Err(Error::Corruption {
            path: bad.path.clone(),
            offset: damage.offset,
            message: format!(
                "{} (absolute-consistency refuses any damage; point-in-time drops the log from here)",
                damage.message
            ),
        });
    }
    let quarantine = layout::quarantine_dir(root).join(layout::WAL_DIR);
    std::fs::create_dir_all(&quarantine).map_err(|e| Error::io(&quarantine, e))?;
    let aside = |path: &Path| quarantine.join(path.file_name().unwrap_or_default());
    if bad.records > 0 {
        // Keep a whole copy: the cut bytes are the user's to inspect.
        std::fs::copy(&bad.path, aside(&bad.path)).map_err(|e| Error::io(&bad.path, e))?;
        inspect::truncate_segment(&bad.path, bad.valid_bytes)?;
        report.records_kept += bad.records;
        report.truncated = Some((
            bad.path.clone(),
            bad.valid_bytes,
            bad.size_bytes - bad.valid_bytes,
        ));
    } else {
        std::fs::rename(&bad.path, aside(&bad.path)).map_err(|e| Error::io(&bad.path, e))?;
        report.moved.push(bad.path.clone());
    }
    for later in &scans[first_bad + 1..] {
        std::fs::rename(&later.path, aside(&later.path)).map_err(|e| Error::io(&later.path, e))?;
        report.moved.push(later.path.clone());
    }
    tracing::warn!(damage = ?report.damage, truncated = ?report.truncated, moved = ?report.moved,
        "point-in-time recovery dropped the log from its first damaged record");
    Ok(report)
}
