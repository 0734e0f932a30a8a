//! `basalt import hbase-snapshot`: an HBase snapshot becomes a completed
//! Basalt snapshot of the destination data set, which is then cloned into
//! a table (the CLI does that step, through a running server or the data
//! set opened in place).
//!
//! Importing as a snapshot rather than as a table reuses everything a
//! snapshot already has: the table comes out with HBase's descriptor and
//! exactly its region boundaries (a clone keeps the snapshot's regions),
//! the clone is one catalog commit whether one process or a cluster
//! serves the data, and the imported files are kept by the snapshot's
//! references until both the snapshot and the clone are gone. Nothing
//! goes through puts, the log or the memstore: each HBase store file is
//! rewritten into one Basalt store file (`convert`), in parallel.
//!
//! Steps (each safe to repeat; the same command resumes, as an export
//! does, `basalt::export`):
//! 1. the **plan** `imports/<name>/PLAN` (checked: magic, format, crc32c,
//!    length) fixes the import's table (`-imports:<name>.<ms>`) and the
//!    HBase snapshot it reads; a resumed import refuses another source;
//! 2. a **pending marker** naming the import's table keeps its files from
//!    the destination's janitor and reserves the snapshot name;
//! 3. each HBase file is converted into
//!    `data/-imports/<name>.<ms>/<region>/<family>/<file>.sst` and gets a
//!    **done marker** `imports/<name>/done/<n>` recording what was written
//!    (size, highest sequence id, cells), so a resumed run skips it;
//! 4. the manifest is published as a completed snapshot (create-if-absent:
//!    the commit point), then the marker and the plan go.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use basalt::export::{
    check_staging_table, completed_snapshot, decode_checked_json, delete_if_present,
    encode_checked_json, ensure_pending_marker, publish_with_new_id, remove_pending_markers,
    size_if_present, staged_done_path, staged_plan_path, ExportSide,
};
use basalt_engine::layout;
use basalt_engine::manifest::is_already_exists;
use basalt_engine::snapshot::{
    check_snapshot_name, read_manifest, write_manifest, SnapshotFile, SnapshotKind,
    SnapshotManifest, SnapshotRegion, SnapshotStore, DEFAULT_MAX_MANIFEST_BYTES,
};
use basalt_types::{Error, Result};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::convert::{convert_file, Converted};
use crate::hbase::{HBaseSnapshot, SourceFile};

/// The namespace directory of imported files: no user table can be named
/// so (a name part may not start with `-`).
pub const IMPORT_NAMESPACE: &str = "-imports";

const IMPORTS_DIR: &str = "imports";
const PLAN_MAGIC: &str = "BASALT-IMPORT";
const PLAN_FORMAT_VERSION: u32 = 1;
const DONE_MAGIC: &str = "BASALT-IMPORTED";
const DONE_FORMAT_VERSION: u32 = 1;

/// How an import runs.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Files converted at once.
    pub parallel: usize,
    /// The Basalt snapshot's name (default: the HBase snapshot's).
    pub snapshot_name: Option<String>,
    /// Largest manifest read, HBase's or Basalt's.
    pub max_manifest_bytes: u64,
    /// Bytes of an HBase file read at once: a conversion holds about this
    /// much of its file, and reads it in ranges of this size (a `GET`
    /// each on object storage).
    pub read_ahead: usize,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            parallel: 2,
            snapshot_name: None,
            max_manifest_bytes: DEFAULT_MAX_MANIFEST_BYTES,
            read_ahead: basalt_hfile::DEFAULT_READ_AHEAD,
        }
    }
}

/// Progress, for a progress bar: HBase bytes converted so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportProgress {
    /// Files converted or found done.
    pub files_done: u64,
    /// Files the snapshot names.
    pub files_total: u64,
    /// Their HBase bytes so far.
    pub bytes_done: u64,
    /// Every file's HBase bytes (as the manifest records them).
    pub bytes_total: u64,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// The Basalt snapshot made.
    pub snapshot: String,
    /// The HBase table it is of.
    pub table: String,
    /// Its regions.
    pub regions: usize,
    /// HBase store files read (by this run or one before).
    pub files: usize,
    /// Files this run converted.
    pub converted: usize,
    /// Files a run before had converted.
    pub skipped: usize,
    /// Cells in the imported files (every run).
    pub cells: u64,
    /// Delete markers among them.
    pub markers: u64,
    /// Tags left out (not a TTL).
    pub tags_dropped: u64,
    /// HBase bytes read by this run.
    pub bytes_read: u64,
    /// Basalt bytes in the imported files.
    pub bytes_written: u64,
    /// The snapshot's manifest at the destination.
    pub snapshot_path: PathBuf,
    /// The table directory its files live in.
    pub import_table: String,
}

/// The plan of an import, fixed by its first run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportPlan {
    /// The Basalt snapshot's name.
    pub name: String,
    /// The HBase snapshot read.
    pub hbase_snapshot: String,
    /// Where it is (the HBase root), for people and for a resumed run.
    pub source: String,
    /// The table (under [`IMPORT_NAMESPACE`]) the files are written to.
    pub import_table: String,
    /// When the import began (ms since the epoch).
    pub started_ms: i64,
}

impl ImportPlan {
    /// The plan file's bytes: a checked header line, then JSON.
    pub fn encode(&self) -> Result<Vec<u8>> {
        encode_checked_json(PLAN_MAGIC, PLAN_FORMAT_VERSION, "import plan", self)
    }

    /// Decodes a plan file. Untrusted input: a defect is (offset, what).
    pub fn decode(bytes: &[u8]) -> std::result::Result<ImportPlan, (u64, String)> {
        let (plan, body_at): (ImportPlan, u64) =
            decode_checked_json(bytes, PLAN_MAGIC, &[PLAN_FORMAT_VERSION], "import plan")?;
        check_snapshot_name(&plan.name).map_err(|e| (body_at, e.to_string()))?;
        check_staging_table(&plan.import_table, IMPORT_NAMESPACE, "import", body_at)?;
        Ok(plan)
    }
}

/// What a done marker records of one converted file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Done {
    size: u64,
    max_sequence: u64,
    cells: u64,
    markers: u64,
    tags_dropped: u64,
}

impl Done {
    fn encode(&self) -> Result<Vec<u8>> {
        encode_checked_json(DONE_MAGIC, DONE_FORMAT_VERSION, "done marker", self)
    }

    fn decode(bytes: &[u8]) -> std::result::Result<Done, (u64, String)> {
        decode_checked_json(bytes, DONE_MAGIC, &[DONE_FORMAT_VERSION], "done marker")
            .map(|(done, _)| done)
    }
}

/// The staging directory of import `name` at a destination root.
pub fn import_dir(root: &Path, name: &str) -> PathBuf {
    root.join(IMPORTS_DIR).join(name)
}

fn plan_path(root: &Path, name: &str) -> PathBuf {
    staged_plan_path(&import_dir(root, name))
}

fn done_path(root: &Path, name: &str, index: usize) -> PathBuf {
    staged_done_path(&import_dir(root, name), index)
}

/// One HBase file to convert.
#[derive(Debug)]
struct Job {
    index: usize,
    region: usize,
    family: String,
    source: SourceFile,
    /// Where the Basalt file goes, and how the manifest names it.
    file: SnapshotFile,
}

/// Imports HBase snapshot `hbase_name` found under HBase's root `source`
/// into `dest` as a completed Basalt snapshot (the module docs' steps).
pub fn import_hbase_snapshot(
    source: &ExportSide,
    hbase_name: &str,
    dest: &ExportSide,
    options: &ImportOptions,
    progress: &(dyn Fn(ImportProgress) + Sync),
) -> Result<ImportReport> {
    let snapshot = HBaseSnapshot::read(
        source.files.as_ref(),
        &source.root,
        hbase_name,
        options.max_manifest_bytes,
    )?;
    let name = options
        .snapshot_name
        .clone()
        .unwrap_or_else(|| hbase_name.to_string());
    check_snapshot_name(&name)?;
    let plan = begin(source, hbase_name, &name, dest)?;
    if let Some(done) = completed_snapshot(dest, &name)? {
        let imported = read_manifest(dest.files.as_ref(), &done, options.max_manifest_bytes)?;
        if imported.files().all(|(_, f)| f.table == plan.import_table) {
            // A run before committed and stopped before cleaning up.
            finish_cleanup(dest, &name, None)?;
            return Ok(ImportReport {
                snapshot: name,
                table: snapshot.table,
                regions: imported.regions.len(),
                files: imported.files().count(),
                converted: 0,
                skipped: imported.files().count(),
                cells: imported.files().map(|(_, f)| f.cells).sum(),
                markers: 0,
                tags_dropped: 0,
                bytes_read: 0,
                bytes_written: imported.file_bytes(),
                snapshot_path: done,
                import_table: plan.import_table,
            });
        }
        return Err(Error::SnapshotExists(format!(
            "{name} (already a snapshot at {})",
            dest.description
        )));
    }
    let marker = ensure_pending_marker(dest, &name, &plan.import_table)?;
    let jobs = plan_jobs(&snapshot, &plan);
    let results = convert_all(source, dest, &name, &snapshot, &jobs, options, progress)?;
    let manifest = manifest_of(&snapshot, &name, &jobs, &results);
    let path = publish_with_new_id(
        dest,
        |id| layout::snapshot_path(&dest.root, id, &name),
        |files, path| write_manifest(files, path, &manifest),
    )?;
    finish_cleanup(dest, &name, Some(&marker))?;
    let mut report = ImportReport {
        snapshot: name,
        table: snapshot.table.clone(),
        regions: snapshot.regions.len(),
        files: jobs.len(),
        converted: 0,
        skipped: 0,
        cells: 0,
        markers: 0,
        tags_dropped: 0,
        bytes_read: 0,
        bytes_written: 0,
        snapshot_path: path,
        import_table: plan.import_table,
    };
    for (done, outcome) in &results {
        report.cells += done.cells;
        report.markers += done.markers;
        report.tags_dropped += done.tags_dropped;
        report.bytes_written += done.size;
        match outcome {
            Outcome::Before => report.skipped += 1,
            Outcome::Now { bytes_read } => {
                report.converted += 1;
                report.bytes_read += bytes_read;
            }
        }
    }
    Ok(report)
}

/// The plan: read back for a resumed import, else published.
fn begin(
    source: &ExportSide,
    hbase_name: &str,
    name: &str,
    dest: &ExportSide,
) -> Result<ImportPlan> {
    let path = plan_path(&dest.root, name);
    if let Some(plan) = read_plan(dest, &path)? {
        if plan.hbase_snapshot == hbase_name && plan.source == source.description {
            return Ok(plan);
        }
        return Err(Error::invalid(format!(
            "an import named {name} of HBase snapshot {} from {} was begun at {} and is unfinished; \
             delete {} there to start over",
            plan.hbase_snapshot,
            plan.source,
            dest.description,
            import_dir(&dest.root, name).display()
        )));
    }
    if let Some(taken) = completed_snapshot(dest, name)? {
        return Err(Error::SnapshotExists(format!(
            "{name} (already a snapshot at {}: {}; --as names the import otherwise)",
            dest.description,
            taken.display()
        )));
    }
    let started_ms = now_ms();
    let plan = ImportPlan {
        name: name.to_string(),
        hbase_snapshot: hbase_name.to_string(),
        source: source.description.clone(),
        import_table: format!("{IMPORT_NAMESPACE}:{name}.{started_ms}"),
        started_ms,
    };
    match dest.files.publish(&path, &plan.encode()?) {
        Ok(()) => Ok(plan),
        // Another import of the same name began at once: follow its plan.
        Err(e) if is_already_exists(&e) => read_plan(dest, &path)?.ok_or(e),
        Err(e) => Err(e),
    }
}

fn read_plan(dest: &ExportSide, path: &Path) -> Result<Option<ImportPlan>> {
    if size_if_present(dest.files.as_ref(), path)?.is_none() {
        return Ok(None);
    }
    let bytes = dest.files.read_all(path)?;
    ImportPlan::decode(&bytes)
        .map(Some)
        .map_err(|(offset, message)| Error::Corruption {
            path: path.to_path_buf(),
            offset,
            message,
        })
}

/// One job per HBase file; regions are numbered from 1 in key order and
/// files from 1 within each store (ids unique within the import's table).
fn plan_jobs(snapshot: &HBaseSnapshot, plan: &ImportPlan) -> Vec<Job> {
    let mut jobs = Vec::new();
    for (r, region) in snapshot.regions.iter().enumerate() {
        for store in &region.stores {
            for (f, source) in store.files.iter().enumerate() {
                jobs.push(Job {
                    index: jobs.len(),
                    region: r,
                    family: store.family.clone(),
                    source: source.clone(),
                    file: SnapshotFile {
                        table: plan.import_table.clone(),
                        region_id: r as u64 + 1,
                        file_id: f as u64 + 1,
                        lower: bytes::Bytes::new(),
                        upper: bytes::Bytes::new(),
                        size: 0,
                        max_sequence: 0,
                        cells: 0,
                    },
                });
            }
        }
    }
    jobs
}

#[derive(Debug, Clone, Copy)]
enum Outcome {
    Before,
    Now { bytes_read: u64 },
}

fn convert_all(
    source: &ExportSide,
    dest: &ExportSide,
    name: &str,
    snapshot: &HBaseSnapshot,
    jobs: &[Job],
    options: &ImportOptions,
    progress: &(dyn Fn(ImportProgress) + Sync),
) -> Result<Vec<(Done, Outcome)>> {
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    let results: Mutex<Vec<Option<(Done, Outcome)>>> = Mutex::new(vec![None; jobs.len()]);
    let bytes_total: u64 = jobs.iter().map(|j| j.source.size).sum();
    let files_done = AtomicU64::new(0);
    let bytes_done = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..options.parallel.clamp(1, 64) {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = usize::try_from(i).ok().and_then(|i| jobs.get(i)) else {
                        break;
                    };
                    match convert_one(source, dest, name, snapshot, job, options.read_ahead) {
                        Ok(result) => {
                            results.lock()[job.index] = Some(result);
                            progress(ImportProgress {
                                files_done: files_done.fetch_add(1, Ordering::Relaxed) + 1,
                                files_total: jobs.len() as u64,
                                bytes_done: bytes_done
                                    .fetch_add(job.source.size, Ordering::Relaxed)
                                    + job.source.size,
                                bytes_total,
                            });
                        }
                        Err(e) => {
                            stop.store(true, Ordering::Relaxed);
                            failed.lock().get_or_insert(e);
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = failed.into_inner() {
        return Err(e);
    }
    results
        .into_inner()
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.ok_or_else(|| Error::invalid(format!("import job {i} did not run"))))
        .collect()
}

/// Converts one file unless a run before did (its done marker, and the
/// file it records, are there).
fn convert_one(
    source: &ExportSide,
    dest: &ExportSide,
    name: &str,
    snapshot: &HBaseSnapshot,
    job: &Job,
    read_ahead: usize,
) -> Result<(Done, Outcome)> {
    let files = dest.files.as_ref();
    let marker = done_path(&dest.root, name, job.index);
    let dest_path = job.file.path(&dest.root, &job.family);
    if size_if_present(files, &marker)?.is_some() {
        let recorded = Done::decode(&files.read_all(&marker)?).ok();
        if let Some(done) = recorded {
            let present = size_if_present(files, &dest_path)?;
            if (done.size == 0 && present.is_none()) || present == Some(done.size) {
                return Ok((done, Outcome::Before));
            }
        }
        // A marker that does not match what is there: convert again.
        delete_if_present(files, &marker)?;
    }
    // A file a killed run published but did not mark.
    delete_if_present(files, &dest_path)?;
    let (path, bytes_read) = find_source(source, &job.source)?;
    let reader = basalt::bulk_load::open_hfile(&source.files, &path, bytes_read, read_ahead)?;
    let family = snapshot
        .descriptor
        .families()
        .iter()
        .find(|f| f.name() == job.family)
        .ok_or_else(|| Error::invalid(format!("family {} is not in the schema", job.family)))?;
    let file_name = job
        .source
        .candidates
        .first()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or(&job.source.name)
        .to_string();
    let converted: Converted = convert_file(
        &reader,
        &file_name,
        &job.source.half,
        family,
        &dest.files,
        &dest_path,
        now_ms(),
    )?;
    let done = Done {
        size: converted.size,
        max_sequence: converted.max_sequence,
        cells: converted.cells,
        markers: converted.markers,
        tags_dropped: converted.tags_dropped,
    };
    match files.publish(&marker, &done.encode()?) {
        Err(e) if !is_already_exists(&e) => return Err(e),
        _ => {}
    }
    tracing::debug!(region = job.region, family = %job.family, file = %job.source.name, cells = done.cells, "converted");
    Ok((done, Outcome::Now { bytes_read }))
}

/// Where an HBase file is, and its size: its live path, else its
/// archived one.
fn find_source(source: &ExportSide, file: &SourceFile) -> Result<(PathBuf, u64)> {
    for path in &file.candidates {
        let Some(size) = size_if_present(source.files.as_ref(), path)? else {
            continue;
        };
        if file.size > 0 && size != file.size && matches!(file.half, crate::hbase::Half::Whole) {
            return Err(Error::Corruption {
                path: path.clone(),
                offset: 0,
                message: format!(
                    "the snapshot records {} bytes for this file, the source holds {size}",
                    file.size
                ),
            });
        }
        return Ok((path.clone(), size));
    }
    Err(Error::invalid(format!(
        "store file {} of the snapshot is at none of {}",
        file.name,
        file.candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

fn manifest_of(
    snapshot: &HBaseSnapshot,
    name: &str,
    jobs: &[Job],
    results: &[(Done, Outcome)],
) -> SnapshotManifest {
    let mut regions: Vec<SnapshotRegion> = snapshot
        .regions
        .iter()
        .enumerate()
        .map(|(r, region)| SnapshotRegion {
            id: r as u64 + 1,
            start_key: region.start_key.clone(),
            end_key: region.end_key.clone(),
            stores: Vec::new(),
        })
        .collect();
    for (job, (done, _)) in jobs.iter().zip(results) {
        if done.size == 0 {
            // The part of the file the region reads held no cells.
            continue;
        }
        let mut file = job.file.clone();
        file.size = done.size;
        file.max_sequence = done.max_sequence;
        file.cells = done.cells;
        let Some(region) = regions.get_mut(job.region) else {
            continue;
        };
        match region.stores.iter_mut().find(|s| s.family == job.family) {
            Some(store) => store.files.push(file),
            None => region.stores.push(SnapshotStore {
                family: job.family.clone(),
                files: vec![file],
            }),
        }
    }
    SnapshotManifest {
        name: name.to_string(),
        table: snapshot.table.clone(),
        created_ms: if snapshot.created_ms > 0 {
            snapshot.created_ms
        } else {
            now_ms()
        },
        ttl_secs: 0,
        kind: SnapshotKind::Flush,
        descriptor: snapshot.descriptor.clone(),
        regions,
        held_for: None,
        owner: None,
        lease_until_ms: None,
        nonce: None,
    }
}

/// After the commit: the pending marker, then the plan and done markers.
fn finish_cleanup(dest: &ExportSide, name: &str, marker: Option<&Path>) -> Result<()> {
    remove_pending_markers(dest, name, marker)?;
    dest.files.delete_prefix(&import_dir(&dest.root, name))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> ImportPlan {
        ImportPlan {
            name: "orders-snap".into(),
            hbase_snapshot: "orders-snap".into(),
            source: "/var/hbase".into(),
            import_table: format!("{IMPORT_NAMESPACE}:orders-snap.1700000000000"),
            started_ms: 1_700_000_000_000,
        }
    }

    #[test]
    fn a_plan_round_trips_and_a_changed_byte_is_refused() {
        let bytes = plan().encode().unwrap();
        assert_eq!(ImportPlan::decode(&bytes).unwrap(), plan());
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            assert!(
                ImportPlan::decode(&bad).is_err(),
                "byte {i} changed and accepted"
            );
        }
        assert!(ImportPlan::decode(&bytes[..bytes.len() - 1]).is_err());
    }

    #[test]
    fn a_plan_writing_outside_the_import_namespace_is_refused() {
        let mut p = plan();
        p.import_table = "default:orders".into();
        let (_, why) = ImportPlan::decode(&p.encode().unwrap()).unwrap_err();
        assert!(why.contains(IMPORT_NAMESPACE), "{why}");
    }

    #[test]
    fn a_done_marker_round_trips_and_garbage_is_refused() {
        let done = Done {
            size: 10,
            max_sequence: 7,
            cells: 3,
            markers: 1,
            tags_dropped: 0,
        };
        assert_eq!(Done::decode(&done.encode().unwrap()).unwrap(), done);
        assert!(Done::decode(b"").is_err());
        assert!(Done::decode(b"BASALT-IMPORTED 1 00000000 2\n{}").is_err());
    }
}
