//! Exporting a snapshot to another Basalt's storage (`basalt snapshot
//! export`, docs/snapshots.md "Export"), HBase's ExportSnapshot.
//!
//! The destination is another data set (a data directory, or object
//! storage). The export makes the snapshot a completed snapshot **there**,
//! so that data set's master lists, clones, restores and deletes it like
//! any of its own: nothing new to learn on the other side.
//!
//! Region and file ids are unique only within one data set, so the copies
//! cannot keep their source paths: the destination may serve a table of
//! the same name whose region 42 has a file 7. The files go to a table
//! directory of the export's own, `data/-exports/<name>.<started ms>/`,
//! keeping their region, family and file ids (unique within the source,
//! whose region ids are global). No user table can be named so: a
//! namespace may not start with `-`. The exported manifest names that
//! table for its files, which is how snapshots already name files another
//! table wrote.
//!
//! Steps (each one safe to repeat; the same command resumes):
//! 1. the **plan** `exports/<name>/PLAN` at the destination (checked:
//!    magic, format, crc32c, length) fixes the export's table and the
//!    source snapshot it copies; a resumed export reads it back and
//!    refuses to mix two different source snapshots;
//! 2. a **hold** at the source (`snapshots/<id>.hold`, with a lease it
//!    renews while it runs) keeps the files should the snapshot be deleted
//!    meanwhile; the janitor releases a hold whose lease has passed, so a
//!    killed export pins nothing for ever;
//! 3. a **pending marker** at the destination (`snapshots/<id>-<name>.pending`
//!    naming the export's table) keeps the copies from the destination's
//!    janitor (it sweeps region directories no catalog entry names) and
//!    reserves the name;
//! 4. each file is copied whole, read back, and its crc32c compared with
//!    the source's: a mismatch deletes the copy and copies again (at most
//!    [`ExportOptions::attempts`] times). A verified copy gets a **done
//!    marker** `exports/<name>/done/<n>`, so a resumed export skips it;
//! 5. the manifest is published at the destination as a completed
//!    snapshot (create-if-absent: the commit point), then the marker, the
//!    plan and the source hold go.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_engine::checked::{frame, unframe};
use basalt_engine::fs::FileStore;
use basalt_engine::layout::{self, SnapshotEntry};
use basalt_engine::manifest::is_already_exists;
use basalt_engine::snapshot::{
    read_manifest, write_manifest, PendingSnapshot, SnapshotManifest, DEFAULT_MAX_MANIFEST_BYTES,
};
use basalt_types::{Error, Result};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// The namespace directory of exported files: a namespace no user can
/// create (a name part may not start with `-`).
pub const EXPORT_NAMESPACE: &str = "-exports";

/// The staging directory of exports at a destination root.
const EXPORTS_DIR: &str = "exports";
const PLAN_MAGIC: &str = "BASALT-EXPORT";
const PLAN_FORMAT_VERSION: u32 = 1;
/// Bytes read or written per request while copying.
const CHUNK_BYTES: usize = 8 * 1024 * 1024;

/// One side of an export: a data set's files and the root they live
/// under, as a database opened on it would see them.
#[derive(Clone)]
pub struct ExportSide {
    /// The data set's files.
    pub files: Arc<dyn FileStore>,
    /// Its root (the data directory; with object storage the directory the
    /// store is rooted at).
    pub root: PathBuf,
    /// How to name it to a person (a path or a storage URL).
    pub description: String,
}

impl std::fmt::Debug for ExportSide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportSide")
            .field("root", &self.root)
            .field("description", &self.description)
            .finish()
    }
}

/// How an export runs.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Files copied at once.
    pub parallel: usize,
    /// How long the source hold keeps the files without a renewal; it is
    /// renewed every third of it while the export runs.
    pub lease: Duration,
    /// Copies of one file tried before the export stops with an error
    /// naming it (a copy whose checksum differs from the source's).
    pub attempts: u32,
    /// Largest snapshot manifest read (`snapshot_manifest_max_bytes`).
    pub max_manifest_bytes: u64,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            parallel: 4,
            lease: Duration::from_secs(600),
            attempts: 3,
            max_manifest_bytes: DEFAULT_MAX_MANIFEST_BYTES,
        }
    }
}

/// What an export did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportReport {
    /// Distinct files the snapshot references.
    pub files: usize,
    /// Files copied by this run.
    pub copied: usize,
    /// Files a run before had already copied and verified.
    pub skipped: usize,
    /// Bytes copied by this run.
    pub bytes_copied: u64,
    /// Copies refused on arrival (checksum mismatch) and made again.
    pub recopied: usize,
    /// The exported snapshot's manifest at the destination.
    pub snapshot_path: PathBuf,
    /// The table directory its files live in at the destination.
    pub export_table: String,
}

/// Progress of the copies, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportProgress {
    /// Bytes of the files copied or found done so far.
    pub bytes_done: u64,
    /// Bytes of every file the snapshot references.
    pub bytes_total: u64,
}

/// The plan of an export (`exports/<name>/PLAN`), fixed by its first run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportPlan {
    /// The snapshot's name (at the source and at the destination).
    pub name: String,
    /// The source snapshot's manifest file name: a resumed export copies
    /// the same snapshot, not one taken again under the name.
    pub source_manifest: String,
    /// Where it came from, for people.
    pub source: String,
    /// The table (under [`EXPORT_NAMESPACE`]) the copies live in.
    pub export_table: String,
    /// When the export began (ms since the epoch).
    pub started_ms: i64,
}

impl ExportPlan {
    /// The plan file's bytes: a checked header line, then JSON.
    pub fn encode(&self) -> Result<Vec<u8>> {
        encode_checked_json(PLAN_MAGIC, PLAN_FORMAT_VERSION, "export plan", self)
    }

    /// Decodes a plan file. Untrusted input: a defect is (offset, what),
    /// never a panic.
    pub fn decode(bytes: &[u8]) -> std::result::Result<ExportPlan, (u64, String)> {
        let (plan, body_at): (ExportPlan, u64) =
            decode_checked_json(bytes, PLAN_MAGIC, &[PLAN_FORMAT_VERSION], "export plan")?;
        basalt_engine::snapshot::check_snapshot_name(&plan.name)
            .map_err(|e| (body_at, e.to_string()))?;
        check_staging_table(&plan.export_table, EXPORT_NAMESPACE, "export", body_at)?;
        if layout::snapshot_entry_of(Path::new(&plan.source_manifest)).is_none() {
            return Err((
                body_at,
                format!(
                    "'{}' does not name a snapshot manifest",
                    plan.source_manifest.escape_debug()
                ),
            ));
        }
        Ok(plan)
    }
}

/// A staging file's bytes (an export's or an import's plan, a done
/// marker): a checked header line (`basalt_engine::checked`), then JSON.
pub fn encode_checked_json<T: Serialize>(
    magic: &str,
    version: u32,
    what: &str,
    value: &T,
) -> Result<Vec<u8>> {
    let body = serde_json::to_vec(value)
        .map_err(|e| Error::invalid(format!("{what} does not serialize: {e}")))?;
    Ok(frame(magic, version, &body))
}

/// Decodes what [`encode_checked_json`] wrote: the value and the offset
/// of its body. Untrusted input: a defect is (offset, what).
pub fn decode_checked_json<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    magic: &str,
    versions: &[u32],
    what: &str,
) -> std::result::Result<(T, u64), (u64, String)> {
    let framed = unframe(bytes, magic, versions, what)?;
    let value = serde_json::from_slice(framed.body).map_err(|e| {
        (
            framed.body_at + e.column().saturating_sub(1) as u64,
            format!("body does not parse: {e}"),
        )
    })?;
    Ok((value, framed.body_at))
}

/// A staging table must be `<namespace>:<name>` (a namespace no user can
/// create), so a plan can never point the copies at a user's table.
pub fn check_staging_table(
    table: &str,
    namespace: &str,
    what: &str,
    body_at: u64,
) -> std::result::Result<(), (u64, String)> {
    let qualifier = table
        .strip_prefix(namespace)
        .and_then(|rest| rest.strip_prefix(':'));
    if qualifier.is_some_and(|q| !q.is_empty() && !q.contains(['/', ':'])) {
        return Ok(());
    }
    Err((
        body_at,
        format!(
            "{what} table '{}' is not in namespace {namespace}",
            table.escape_debug()
        ),
    ))
}

/// The staging directory of export `name` at a destination root.
pub fn export_dir(root: &Path, name: &str) -> PathBuf {
    root.join(EXPORTS_DIR).join(name)
}

/// A staging directory's plan (an export's or an import's).
pub fn staged_plan_path(staging: &Path) -> PathBuf {
    staging.join("PLAN")
}

/// A staging directory's done marker of job `index`.
pub fn staged_done_path(staging: &Path, index: usize) -> PathBuf {
    staging.join("done").join(format!("{index:08}"))
}

fn plan_path(root: &Path, name: &str) -> PathBuf {
    staged_plan_path(&export_dir(root, name))
}

fn done_path(root: &Path, name: &str, index: usize) -> PathBuf {
    staged_done_path(&export_dir(root, name), index)
}

/// One distinct file to copy: its family and paths on both sides.
#[derive(Debug)]
struct CopyJob {
    index: usize,
    source: PathBuf,
    dest: PathBuf,
    size: u64,
}

/// Exports snapshot `name` from `source` to `dest` (the module docs'
/// steps); `progress` is told after each file.
pub fn export_snapshot(
    name: &str,
    source: &ExportSide,
    dest: &ExportSide,
    options: &ExportOptions,
    progress: &(dyn Fn(ExportProgress) + Sync),
) -> Result<ExportReport> {
    basalt_engine::snapshot::check_snapshot_name(name)?;
    let (source_path, manifest) = find_snapshot(source, name, options.max_manifest_bytes)?;
    let source_manifest = file_name(&source_path)?;
    let plan = match read_plan(dest, name)? {
        Some(plan) if plan.source_manifest == source_manifest => plan,
        Some(plan) => {
            return Err(Error::invalid(format!(
                "an export of snapshot {name} from {} ({}) was begun at {} and is unfinished; \
                 the source's snapshot of that name is now {source_manifest}. Delete {} there to start over",
                plan.source,
                plan.source_manifest,
                dest.description,
                export_dir(&dest.root, name).display()
            )))
        }
        None => {
            let started_ms = now_ms();
            let plan = ExportPlan {
                name: name.to_string(),
                source_manifest,
                source: source.description.clone(),
                export_table: format!("{EXPORT_NAMESPACE}:{name}.{started_ms}"),
                started_ms,
            };
            // Refused before anything is written when the name is taken.
            if let Some(taken) = completed_snapshot(dest, name)? {
                return Err(Error::SnapshotExists(format!(
                    "{name} (already a snapshot at {}: {})",
                    dest.description,
                    taken.display()
                )));
            }
            match dest.files.publish(&plan_path(&dest.root, name), &plan.encode()?) {
                Ok(()) => plan,
                // Another export of the same name began at once: use its plan.
                Err(e) if is_already_exists(&e) => read_plan(dest, name)?.ok_or(e)?,
                Err(e) => return Err(e),
            }
        }
    };
    if let Some(done) = completed_snapshot(dest, name)? {
        let exported = read_manifest(dest.files.as_ref(), &done, options.max_manifest_bytes)?;
        if exported.files().all(|(_, f)| f.table == plan.export_table) {
            // A run before committed and stopped before cleaning up.
            finish_cleanup(dest, name, None)?;
            return Ok(report_of(&exported, plan.export_table, done, 0, 0, 0));
        }
        return Err(Error::SnapshotExists(format!(
            "{name} (already a snapshot at {})",
            dest.description
        )));
    }

    let hold = SourceHold::take(source, &manifest, options)?;
    let result = copy_and_commit(name, source, dest, &manifest, &plan, options, progress);
    hold.end(source, name);
    result
}

fn copy_and_commit(
    name: &str,
    source: &ExportSide,
    dest: &ExportSide,
    manifest: &SnapshotManifest,
    plan: &ExportPlan,
    options: &ExportOptions,
    progress: &(dyn Fn(ExportProgress) + Sync),
) -> Result<ExportReport> {
    let mut seen = HashSet::new();
    let mut jobs = Vec::new();
    for (family, file) in manifest.files() {
        let source_path = file.path(&source.root, family);
        if !seen.insert(source_path.clone()) {
            continue;
        }
        let mut copied = file.clone();
        copied.table = plan.export_table.clone();
        jobs.push(CopyJob {
            index: jobs.len(),
            source: source_path,
            dest: copied.path(&dest.root, family),
            size: file.size,
        });
    }
    let bytes_total = jobs.iter().map(|j| j.size).sum();
    let counters = Counters::default();
    // Twice at most: a destination master that restarted meanwhile
    // removed the marker, and its janitor may have swept copies; the
    // second pass copies them again under a new marker.
    for pass in 0..2 {
        let marker = ensure_pending_marker(dest, name, &plan.export_table)?;
        if pass == 1 {
            counters.bytes_done.store(0, Ordering::Relaxed);
        }
        copy_all(
            dest,
            source,
            name,
            &jobs,
            options,
            bytes_total,
            &counters,
            progress,
        )?;
        let missing = missing_copies(dest, &jobs)?;
        if missing.is_empty() {
            let mut exported = manifest.clone();
            for region in &mut exported.regions {
                for store in &mut region.stores {
                    for file in &mut store.files {
                        file.table = plan.export_table.clone();
                    }
                }
            }
            exported.held_for = None;
            exported.lease_until_ms = None;
            let path = publish_with_new_id(
                dest,
                |id| layout::snapshot_path(&dest.root, id, name),
                |files, path| write_manifest(files, path, &exported),
            )?;
            finish_cleanup(dest, name, Some(&marker))?;
            return Ok(report_of(
                &exported,
                plan.export_table.clone(),
                path,
                counters.copied.load(Ordering::Relaxed),
                counters.bytes_copied.load(Ordering::Relaxed),
                counters.recopied.load(Ordering::Relaxed),
            ));
        }
        tracing::warn!(missing = missing.len(), "copies went missing at the destination (its master restarted and swept them?); copying them again");
        for index in missing {
            delete_if_present(dest.files.as_ref(), &done_path(&dest.root, name, index))?;
        }
    }
    Err(Error::invalid(format!(
        "copies of snapshot {name} keep going missing at {}: is a process deleting them?",
        dest.description
    )))
}

#[derive(Default)]
struct Counters {
    bytes_done: AtomicU64,
    copied: AtomicU64,
    bytes_copied: AtomicU64,
    recopied: AtomicU64,
}

#[allow(clippy::too_many_arguments)]
fn copy_all(
    dest: &ExportSide,
    source: &ExportSide,
    name: &str,
    jobs: &[CopyJob],
    options: &ExportOptions,
    bytes_total: u64,
    counters: &Counters,
    progress: &(dyn Fn(ExportProgress) + Sync),
) -> Result<()> {
    let next = AtomicU64::new(0);
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..options.parallel.clamp(1, 64) {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = usize::try_from(i).ok().and_then(|i| jobs.get(i)) else {
                        break;
                    };
                    match copy_one(dest, source, name, job, options.attempts) {
                        Ok(outcome) => {
                            if let Copied::Now { recopied } = outcome {
                                counters.copied.fetch_add(1, Ordering::Relaxed);
                                counters.bytes_copied.fetch_add(job.size, Ordering::Relaxed);
                                counters.recopied.fetch_add(recopied, Ordering::Relaxed);
                            }
                            let done = counters.bytes_done.fetch_add(job.size, Ordering::Relaxed)
                                + job.size;
                            progress(ExportProgress {
                                bytes_done: done,
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
    match failed.into_inner() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

enum Copied {
    /// Copied and verified by an earlier run.
    Before,
    /// Copied now; `recopied` copies were refused on arrival first.
    Now { recopied: u64 },
}

/// Copies one file unless an earlier run did; verifies the copy.
fn copy_one(
    dest: &ExportSide,
    source: &ExportSide,
    name: &str,
    job: &CopyJob,
    attempts: u32,
) -> Result<Copied> {
    let marker = done_path(&dest.root, name, job.index);
    let files = dest.files.as_ref();
    if files.exists(&marker)? && size_if_present(files, &job.dest)? == Some(job.size) {
        return Ok(Copied::Before);
    }
    let source_size = source.files.size(&job.source)?;
    if source_size != job.size {
        return Err(Error::Corruption {
            path: job.source.clone(),
            offset: 0,
            message: format!(
                "the snapshot records {} bytes for this file, the source holds {source_size}",
                job.size
            ),
        });
    }
    // A copy a killed run published but did not mark: verify it as if it
    // had just arrived.
    if size_if_present(files, &job.dest)?.is_some() {
        let expected = crc_of(source.files.as_ref(), &job.source, job.size)?;
        if crc_of(files, &job.dest, job.size).ok() == Some(expected) {
            mark_done(files, &marker, expected)?;
            return Ok(Copied::Before);
        }
        files.delete(&job.dest)?;
    }
    let attempts = attempts.max(1);
    let mut recopied = 0;
    loop {
        let expected = copy_file(
            source.files.as_ref(),
            &job.source,
            files,
            &job.dest,
            job.size,
        )?;
        let why = match crc_of(files, &job.dest, job.size) {
            Ok(crc) if crc == expected => {
                mark_done(files, &marker, expected)?;
                return Ok(Copied::Now { recopied });
            }
            Ok(crc) => format!("crc32c {crc:08x}, the source's is {expected:08x}"),
            Err(e) => e.to_string(),
        };
        recopied += 1;
        tracing::warn!(file = %job.dest.display(), attempt = recopied, why, "a copy was refused on arrival");
        files.delete(&job.dest)?;
        if recopied >= u64::from(attempts) {
            return Err(Error::Corruption {
                path: job.dest.clone(),
                offset: 0,
                message: format!(
                    "the copy of {} did not arrive intact after {recopied} attempts ({why})",
                    job.source.display()
                ),
            });
        }
    }
}

/// Copies `from` (of `size` bytes) to `to`, returning the crc32c of what
/// was read.
fn copy_file(
    from_files: &dyn FileStore,
    from: &Path,
    to_files: &dyn FileStore,
    to: &Path,
    size: u64,
) -> Result<u32> {
    let mut writer = to_files.create(to)?;
    let mut crc = 0u32;
    let mut offset = 0u64;
    while offset < size {
        let len = chunk_len(size - offset);
        let chunk = from_files.read_range(from, offset, len)?;
        crc = crc32c::crc32c_append(crc, &chunk);
        writer.write_all(&chunk)?;
        offset += len as u64;
    }
    writer.finish()?;
    Ok(crc)
}

/// The crc32c of the `size` bytes of `path`.
fn crc_of(files: &dyn FileStore, path: &Path, size: u64) -> Result<u32> {
    let actual = files.size(path)?;
    if actual != size {
        return Err(Error::Corruption {
            path: path.to_path_buf(),
            offset: 0,
            message: format!("{actual} bytes where {size} were expected"),
        });
    }
    let mut crc = 0u32;
    let mut offset = 0u64;
    while offset < size {
        let len = chunk_len(size - offset);
        crc = crc32c::crc32c_append(crc, &files.read_range(path, offset, len)?);
        offset += len as u64;
    }
    Ok(crc)
}

fn chunk_len(left: u64) -> usize {
    usize::try_from(left.min(CHUNK_BYTES as u64)).unwrap_or(CHUNK_BYTES)
}

fn mark_done(files: &dyn FileStore, marker: &Path, crc: u32) -> Result<()> {
    match files.publish(marker, format!("{crc:08x}\n").as_bytes()) {
        Err(e) if !is_already_exists(&e) => Err(e),
        _ => Ok(()),
    }
}

/// The size of `path`, or `None` when it is absent.
pub fn size_if_present(files: &dyn FileStore, path: &Path) -> Result<Option<u64>> {
    match files.size(path) {
        Ok(size) => Ok(Some(size)),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Deletes `path`; an absent file is no error.
pub fn delete_if_present(files: &dyn FileStore, path: &Path) -> Result<()> {
    match files.delete(path) {
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// The jobs whose copy is not at the destination with its size.
fn missing_copies(dest: &ExportSide, jobs: &[CopyJob]) -> Result<Vec<usize>> {
    let mut missing = Vec::new();
    for job in jobs {
        if size_if_present(dest.files.as_ref(), &job.dest)? != Some(job.size) {
            missing.push(job.index);
        }
    }
    Ok(missing)
}

fn snapshot_entries(side: &ExportSide) -> Result<Vec<(PathBuf, SnapshotEntry)>> {
    Ok(side
        .files
        .list(&layout::snapshot_dir(&side.root))?
        .into_iter()
        .filter_map(|path| layout::snapshot_entry_of(&path).map(|entry| (path, entry)))
        .collect())
}

fn find_snapshot(
    side: &ExportSide,
    name: &str,
    max_manifest_bytes: u64,
) -> Result<(PathBuf, SnapshotManifest)> {
    let path = completed_snapshot(side, name)?
        .ok_or_else(|| Error::SnapshotNotFound(format!("{name} (at {})", side.description)))?;
    let manifest = read_manifest(side.files.as_ref(), &path, max_manifest_bytes)?;
    Ok((path, manifest))
}

/// The manifest path of the side's completed snapshot `name`, if any.
pub fn completed_snapshot(side: &ExportSide, name: &str) -> Result<Option<PathBuf>> {
    Ok(snapshot_entries(side)?
        .into_iter()
        .find_map(|(path, entry)| {
            matches!(&entry, SnapshotEntry::Snapshot(_, n) if n == name).then_some(path)
        }))
}

fn read_plan(dest: &ExportSide, name: &str) -> Result<Option<ExportPlan>> {
    let path = plan_path(&dest.root, name);
    let bytes = match dest.files.read_all(&path) {
        Ok(bytes) => bytes,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    ExportPlan::decode(&bytes)
        .map(Some)
        .map_err(|(offset, message)| Error::Corruption {
            path,
            offset,
            message,
        })
}

/// The destination's pending marker of snapshot `name` whose files live
/// in `export_table` (an export's or an import's), published unless it is
/// there (a master that starts removes markers it finds). It keeps the
/// table's directories from the janitor and reserves the name.
pub fn ensure_pending_marker(dest: &ExportSide, name: &str, export_table: &str) -> Result<PathBuf> {
    for (path, entry) in snapshot_entries(dest)? {
        if let SnapshotEntry::Pending(_, n) = &entry {
            if n == name {
                let bytes = dest.files.read_all(&path)?;
                let ours = serde_json::from_slice::<PendingSnapshot>(&bytes)
                    .is_ok_and(|p| p.table == export_table);
                if ours {
                    return Ok(path);
                }
                return Err(Error::SnapshotExists(format!(
                    "{name} (a snapshot of that name is being taken at {})",
                    dest.description
                )));
            }
        }
    }
    let body = serde_json::to_vec(&PendingSnapshot {
        table: export_table.to_string(),
        // No request: a master that starts removes the marker rather than
        // complete a snapshot; the export publishes a new one.
        request: None,
    })
    .map_err(|e| Error::invalid(format!("pending marker does not serialize: {e}")))?;
    publish_with_new_id(
        dest,
        |id| layout::pending_snapshot_path(&dest.root, id, name),
        |files, path| files.publish(path, &body),
    )
}

/// Publishes at `path_of(id)` with an id above every entry of the side's
/// snapshot directory (and the clock), the master's rule: entry paths are
/// never reused. A running master may take the same id at once, so a
/// collision takes the next one.
pub fn publish_with_new_id(
    side: &ExportSide,
    path_of: impl Fn(u64) -> PathBuf,
    publish: impl Fn(&dyn FileStore, &Path) -> Result<()>,
) -> Result<PathBuf> {
    let highest = snapshot_entries(side)?
        .iter()
        .map(|(_, entry)| match entry {
            SnapshotEntry::Snapshot(id, _) | SnapshotEntry::Pending(id, _) => *id,
            SnapshotEntry::Hold(id) => *id,
        })
        .max()
        .unwrap_or(0);
    let mut id = u64::try_from(now_ms())
        .unwrap_or(0)
        .max(highest.saturating_add(1));
    for _ in 0..16 {
        let path = path_of(id);
        match publish(side.files.as_ref(), &path) {
            Ok(()) => return Ok(path),
            Err(e) if is_already_exists(&e) => id = id.saturating_add(1),
            Err(e) => return Err(e),
        }
    }
    Err(Error::invalid(format!(
        "no free entry number in {} after 16 tries",
        layout::snapshot_dir(&side.root).display()
    )))
}

/// After the commit: the marker, then the plan and done markers.
fn finish_cleanup(dest: &ExportSide, name: &str, marker: Option<&Path>) -> Result<()> {
    remove_pending_markers(dest, name, marker)?;
    dest.files.delete_prefix(&export_dir(&dest.root, name))
}

/// Removes snapshot `name`'s pending marker: `marker` when known, else
/// every pending marker of that name (a run that committed and stopped
/// before cleaning up).
pub fn remove_pending_markers(dest: &ExportSide, name: &str, marker: Option<&Path>) -> Result<()> {
    match marker {
        Some(marker) => delete_if_present(dest.files.as_ref(), marker)?,
        None => {
            for (path, entry) in snapshot_entries(dest)? {
                if matches!(&entry, SnapshotEntry::Pending(_, n) if n == name) {
                    delete_if_present(dest.files.as_ref(), &path)?;
                }
            }
        }
    }
    Ok(())
}

fn report_of(
    exported: &SnapshotManifest,
    export_table: String,
    snapshot_path: PathBuf,
    copied: u64,
    bytes_copied: u64,
    recopied: u64,
) -> ExportReport {
    let files = exported
        .files()
        .map(|(family, f)| f.path(Path::new(""), family))
        .collect::<HashSet<_>>()
        .len();
    let copied = usize::try_from(copied).unwrap_or(usize::MAX);
    ExportReport {
        files,
        copied,
        skipped: files.saturating_sub(copied),
        bytes_copied,
        recopied: usize::try_from(recopied).unwrap_or(usize::MAX),
        snapshot_path,
        export_table,
    }
}

/// The export's hold at the source, renewed by a thread while it lives.
struct SourceHold {
    current: Arc<Mutex<PathBuf>>,
    stop: Arc<(Mutex<bool>, parking_lot::Condvar)>,
    renewer: Option<std::thread::JoinHandle<()>>,
}

impl SourceHold {
    fn take(
        source: &ExportSide,
        manifest: &SnapshotManifest,
        options: &ExportOptions,
    ) -> Result<SourceHold> {
        let lease = options.lease.max(Duration::from_secs(1));
        let first = publish_hold(source, manifest, lease)?;
        let current = Arc::new(Mutex::new(first));
        let stop = Arc::new((Mutex::new(false), parking_lot::Condvar::new()));
        let renewer = {
            let current = Arc::clone(&current);
            let stop = Arc::clone(&stop);
            let source = source.clone();
            let manifest = manifest.clone();
            std::thread::Builder::new()
                .name("export-hold".into())
                .spawn(move || {
                    let (stopped, wake) = &*stop;
                    let mut guard = stopped.lock();
                    loop {
                        let due = Instant::now() + lease / 3;
                        while !*guard && Instant::now() < due {
                            wake.wait_until(&mut guard, due);
                        }
                        if *guard {
                            return;
                        }
                        match publish_hold(&source, &manifest, lease) {
                            Ok(renewed) => {
                                let old = std::mem::replace(&mut *current.lock(), renewed);
                                if let Err(e) = delete_if_present(source.files.as_ref(), &old) {
                                    tracing::warn!(hold = %old.display(), error = %e, "could not delete a renewed export hold; its lease ends it");
                                }
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "could not renew the export's hold at the source; retrying")
                            }
                        }
                    }
                })
                .map_err(|e| Error::io(Path::new("export-hold"), e))?
        };
        Ok(SourceHold {
            current,
            stop,
            renewer: Some(renewer),
        })
    }

    /// Ends the hold: deleted while the snapshot still keeps the files;
    /// left to lapse when the snapshot was deleted meanwhile, so that the
    /// janitor releases the files the hold alone kept.
    fn end(mut self, source: &ExportSide, name: &str) {
        {
            let (stopped, wake) = &*self.stop;
            *stopped.lock() = true;
            wake.notify_all();
        }
        if let Some(renewer) = self.renewer.take() {
            let _ = renewer.join();
        }
        let hold = self.current.lock().clone();
        match completed_snapshot(source, name) {
            Ok(Some(_)) => {
                if let Err(e) = delete_if_present(source.files.as_ref(), &hold) {
                    tracing::warn!(hold = %hold.display(), error = %e, "could not delete the export's hold; its lease ends it");
                }
            }
            Ok(None) => {
                tracing::info!(hold = %hold.display(), "the source snapshot was deleted during the export; its hold lapses with its lease")
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not list the source's snapshots; the export's hold lapses with its lease")
            }
        }
    }
}

fn publish_hold(
    source: &ExportSide,
    manifest: &SnapshotManifest,
    lease: Duration,
) -> Result<PathBuf> {
    let mut held = manifest.clone();
    held.held_for = None;
    held.lease_until_ms =
        Some(now_ms().saturating_add(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX)));
    publish_with_new_id(
        source,
        |id| layout::hold_path(&source.root, id),
        |files, path| write_manifest(files, path, &held),
    )
}

fn file_name(path: &Path) -> Result<String> {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| Error::invalid(format!("{} has no file name", path.display())))
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

    fn plan() -> ExportPlan {
        ExportPlan {
            name: "s1".into(),
            source_manifest: "00000000000000000007-s1.snapshot".into(),
            source: "/data/a".into(),
            export_table: "-exports:s1.1700000000000".into(),
            started_ms: 1_700_000_000_000,
        }
    }

    #[test]
    fn a_plan_round_trips_and_a_changed_byte_is_refused() {
        let bytes = plan().encode().unwrap();
        assert_eq!(ExportPlan::decode(&bytes).unwrap(), plan());
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x01;
            assert!(ExportPlan::decode(&bad).is_err(), "flip at {at} accepted");
        }
    }

    #[test]
    fn a_plan_naming_a_table_outside_the_export_namespace_is_refused() {
        let mut p = plan();
        p.export_table = "default:t".into();
        let (_, why) = ExportPlan::decode(&p.encode().unwrap()).unwrap_err();
        assert!(why.contains("-exports"), "{why}");
        let mut p = plan();
        p.source_manifest = "../../etc/passwd".into();
        assert!(ExportPlan::decode(&p.encode().unwrap()).is_err());
    }

    #[test]
    fn garbage_plans_are_refused_without_panicking() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let valid = plan().encode().unwrap();
        for len in 0..600 {
            let mut bytes = Vec::with_capacity(len);
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                bytes.push((state & 0xff) as u8);
            }
            assert!(ExportPlan::decode(&bytes).is_err());
            let cut = len.min(valid.len());
            assert!(cut == valid.len() || ExportPlan::decode(&valid[..cut]).is_err());
        }
    }
}
