//! The narrow file interface that store files (and later manifests) sit on.
//!
//! Everything above this module sees files the way an object store does:
//! a file is **created whole and published once** ([`FileStore::create`],
//! [`FileWriter::finish`]), then only **read by byte range**, **listed** and
//! **deleted**. Nothing is appended to or modified after publication, and
//! there is no rename: object stores have no atomic one. A local-disk store
//! ([`LocalFileStore`]) and an in-memory one ([`MemFileStore`]) implement
//! the interface here; the `basalt-object-store` crate implements it on S3,
//! S3-compatible servers and shared directories (`ObjectFileStore`), with a
//! disk cache in front (`CachedFileStore`), and runs one contract suite
//! against all of them.
//!
//! [`FaultyFileStore`] wraps any store and makes chosen calls fail, for
//! crash and error-path tests.
//!
//! One exception to "published once": a store that can append in place
//! (a shared POSIX directory; memory when asked) says so with
//! [`FileStore::can_append`], and the write-ahead log then keeps its
//! batches in [`AppendableFile`] segments instead of one object each, as
//! HBase's log appends to a file on HDFS. Nothing else appends.
//!
//! # Publication semantics (every implementation)
//!
//! - `create(path)` fails if `path` already exists. Until `finish` returns,
//!   nothing is visible at `path`: `size`, `read_range`, `exists` and `list`
//!   behave as if the file did not exist.
//! - `finish` publishes the file atomically and **create-if-absent**: if
//!   another writer published the same path first, `finish` fails with an
//!   `AlreadyExists` I/O error and the first file stays. So a manifest can
//!   be versioned by creating `manifest.N+1`: two writers cannot both win.
//! - After `finish` returns `Ok`, the file's bytes and its name are durable
//!   (for the local store: the file is fsynced, linked into place and the
//!   directory fsynced).
//! - A writer dropped without `finish` (an error, an abandoned compaction)
//!   publishes nothing. A process crash before `finish` may leave a hidden
//!   temporary file behind in the local store; [`FileStore::list`] never
//!   shows those, and [`LocalFileStore::remove_temp_files`] deletes them.
//! - `delete` of a missing file succeeds (object stores delete
//!   idempotently; it also makes retried cleanups harmless).
//! - `list_dirs(dir)` names the "directories" directly inside `dir`: for
//!   an object store, the common prefixes of the names below it; for the
//!   local store, its subdirectories (an empty one included, so nothing a
//!   crash leaves is invisible to the code that cleans up after it).
//! - `list_prefix(dir)` lists every published file below `dir`, at any
//!   depth; `delete_prefix(dir)` deletes them all (and, locally, the
//!   directories). Both treat a missing `dir` as empty, and a deletion
//!   interrupted by a crash can simply be run again.
//! - Names are never reused: a path that was deleted must not be created
//!   again while any reader may still hold it open (the local store caches
//!   open file handles by path).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ffi::OsString;
use std::fmt::Debug;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use basalt_types::{Error, Result};

/// Where immutable files live: local disk, memory, later object storage.
pub trait FileStore: Send + Sync + Debug {
    /// Starts a new file at `path` (missing parent directories are implied).
    /// Fails if `path` already exists. Nothing is visible until
    /// [`FileWriter::finish`].
    fn create(&self, path: &Path) -> Result<Box<dyn FileWriter>>;

    /// Creates `path` holding `bytes` in one step, create-if-absent (an
    /// existing `path` is the same `AlreadyExists` error as
    /// [`FileWriter::finish`] gives). For small files written whole, such
    /// as log objects: a store may skip what `create` does to fail fast
    /// before a large upload (an object store's existence check costs a
    /// round trip on every log publication).
    fn publish(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let mut writer = self.create(path)?;
        writer.write_all(bytes)?;
        writer.finish()?;
        Ok(())
    }

    /// [`FileStore::publish`], except that the file needs only be
    /// **visible** to every reader of the store when this returns: durable
    /// against this process's crash (another process reads it), but
    /// perhaps not yet against the machine's, until
    /// [`FileStore::sync_published`] names it. This is HBase's `hflush`
    /// beside `hsync`: the log publishes every batch this way and syncs
    /// only for writers that asked for `FSYNC_WAL`, as the local log
    /// fsyncs only for them. Stores whose publication is durable anyway
    /// (object storage: an acknowledged `PUT` is durable) keep the
    /// default, which is `publish`.
    fn publish_visible(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.publish(path, bytes)
    }

    /// Makes files published with [`FileStore::publish_visible`] durable
    /// against a machine crash (for a shared directory: each file and its
    /// directory fsynced). A file deleted since needs nothing (the log
    /// retires only what every region has flushed). The default does
    /// nothing, matching the default `publish_visible`.
    fn sync_published(&self, _paths: &[PathBuf]) -> Result<()> {
        Ok(())
    }

    /// True when the store can append to a file it published
    /// ([`FileStore::create_appendable`]): a shared POSIX directory can,
    /// object storage cannot (objects are immutable). The default is false.
    fn can_append(&self) -> bool {
        false
    }

    /// Creates `path`, create-if-absent (`AlreadyExists` if present), and
    /// keeps it open for appending: every [`AppendableFile::append`] is
    /// visible to every reader of the store when it returns. Only where
    /// [`FileStore::can_append`]; elsewhere the default refuses.
    fn create_appendable(&self, path: &Path) -> Result<Box<dyn AppendableFile>> {
        Err(Error::io(
            path,
            io::Error::new(
                io::ErrorKind::Unsupported,
                "this storage cannot append to a file (objects are written whole)",
            ),
        ))
    }

    /// Reads exactly `len` bytes at `offset`. Reading past the end of the
    /// file is an error.
    fn read_range(&self, path: &Path, offset: u64, len: usize) -> Result<Bytes>;

    /// The size of a published file.
    fn size(&self, path: &Path) -> Result<u64>;

    /// True when a file is published at `path`.
    fn exists(&self, path: &Path) -> Result<bool>;

    /// The published files directly inside `dir` (not in subdirectories),
    /// sorted by path. A missing directory lists as empty: object stores
    /// have no directories, only name prefixes.
    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>>;

    /// Deletes a file; deleting a missing file succeeds.
    fn delete(&self, path: &Path) -> Result<()>;

    /// The directories (name prefixes) directly inside `dir`, sorted. A
    /// missing directory lists as empty.
    fn list_dirs(&self, dir: &Path) -> Result<Vec<PathBuf>>;

    /// Every published file below `dir`, at any depth, sorted by path.
    fn list_prefix(&self, dir: &Path) -> Result<Vec<PathBuf>>;

    /// Deletes every file below `dir` (and the directories, where the store
    /// has them). Deleting a missing prefix succeeds; a deletion cut short
    /// can be repeated.
    fn delete_prefix(&self, dir: &Path) -> Result<()>;

    /// Removes what writers that never finished (a crash mid-write) left in
    /// `dir`; returns how many. Only call it while no writer is active in
    /// `dir`. Stores without such leftovers keep the default.
    fn remove_unfinished(&self, _dir: &Path) -> Result<usize> {
        Ok(0)
    }

    /// The counters of the local cache this store keeps of a slower
    /// store's files (the object store's disk cache), or `None` when it
    /// keeps none (the default: local disk and memory need no cache).
    ///
    /// Contract: cheap enough for every metrics scrape (no I/O, at most a
    /// short lock); the counters ([`FileCacheStats::hits`] and the others
    /// named "since it opened") never go down while the store lives; a
    /// store that wraps another (fault injection, a cache in front of a
    /// cache) reports the one it wraps unless it is the cache itself.
    fn cache_stats(&self) -> Option<FileCacheStats> {
        None
    }

    /// Reads a whole (small) file, e.g. a manifest.
    fn read_all(&self, path: &Path) -> Result<Bytes> {
        let size = self.size(path)?;
        let len = usize::try_from(size).map_err(|_| {
            Error::io(
                path,
                io::Error::new(io::ErrorKind::InvalidData, "file too large for memory"),
            )
        })?;
        self.read_range(path, 0, len)
    }
}

/// What a [`FileStore`]'s local cache of another store's files counted
/// since it opened, and its size now ([`FileStore::cache_stats`]). The
/// unit cached is a part: an aligned range of a file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileCacheStats {
    /// Parts read from the cache.
    pub hits: u64,
    /// Parts that had to be fetched from the store behind it.
    pub misses: u64,
    /// Bytes read from cached parts.
    pub hit_bytes: u64,
    /// Bytes fetched from the store behind it into parts.
    pub fetched_bytes: u64,
    /// Parts evicted to stay within the budget.
    pub evictions: u64,
    /// Part files found damaged (wrong length) or missing, and dropped.
    pub discarded: u64,
    /// Parts cached now.
    pub parts: u64,
    /// Bytes cached now.
    pub bytes: u64,
    /// The budget in bytes.
    pub capacity_bytes: u64,
}

impl FileCacheStats {
    /// Hits over all part lookups (0 before any).
    pub fn hit_ratio(&self) -> f64 {
        let total = self.hits.saturating_add(self.misses);
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

/// A file being written. Dropping it without [`FileWriter::finish`]
/// discards it.
pub trait FileWriter: Send + Debug {
    /// Appends `buf`.
    fn write_all(&mut self, buf: &[u8]) -> Result<()>;

    /// Bytes written so far.
    fn bytes_written(&self) -> u64;

    /// Makes the file durable and publishes it at its path (create-if-absent,
    /// see the module docs); returns its size.
    fn finish(self: Box<Self>) -> Result<u64>;
}

/// A file kept open for appending ([`FileStore::create_appendable`]): a
/// write-ahead log segment on a shared directory.
///
/// Contract: `append` writes its bytes after everything appended before
/// (one `write(2)` where the store is a file system) and, once it returns
/// `Ok`, every reader of the store sees them (`size`, `read_range`); they
/// survive this process's crash but not the machine's until `sync`. An
/// `append` that fails may have left part of its bytes: the caller cuts
/// the file back with `truncate` before appending again, so that no
/// reader ever finds a partial write between whole ones.
pub trait AppendableFile: Send + Debug {
    /// Appends `bytes` at the end of the file.
    fn append(&mut self, bytes: &[u8]) -> Result<()>;

    /// Cuts the file back to `len` bytes (undoing a failed append).
    fn truncate(&mut self, len: u64) -> Result<()>;

    /// Makes every byte appended so far (and the file's name) survive a
    /// machine crash.
    fn sync(&mut self) -> Result<()>;
}

/// The error of a `create` (or `finish`) whose path is already taken: an
/// `AlreadyExists` I/O error on `path`. Shared by every [`FileStore`]
/// implementation, so they all fail the same way.
pub fn already_exists(path: &Path) -> Error {
    Error::io(
        path,
        io::Error::new(io::ErrorKind::AlreadyExists, "file already exists"),
    )
}

/// The error of a call on a file that does not exist: a `NotFound` I/O
/// error on `path`.
pub fn not_found(path: &Path) -> Error {
    Error::io(
        path,
        io::Error::new(io::ErrorKind::NotFound, "no such file"),
    )
}

/// The error of a read of `len` bytes at `offset` that goes past the end
/// of `path`, a file of `size` bytes: an `UnexpectedEof` I/O error naming
/// the range and the size.
pub fn past_end(path: &Path, offset: u64, len: usize, size: u64) -> Error {
    Error::io(
        path,
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("read of {len} bytes at offset {offset} past the end of a {size}-byte file"),
        ),
    )
}

/// Reads exactly `len` bytes of `file` at `offset` into a new buffer.
///
/// Unlike `read_exact_at` it reads into the buffer's spare capacity: a
/// point get reads one block from the file, and zeroing its bytes first
/// (`vec![0; len]`) cost about a tenth of a cached-file get (a 4 KiB
/// `calloc` plus `memset`, profiled in bench/results/2026-11-27-read-path.md).
fn read_exact_at_uninit(file: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(len);
    while buf.len() < len {
        let at = offset + buf.len() as u64;
        match rustix::io::pread(file, rustix::buffer::spare_capacity(&mut buf), at) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    // `with_capacity` may give more room than asked, and a read fills all
    // of it that the file has.
    buf.truncate(len);
    Ok(buf)
}

// ---------------------------------------------------------------------------
// Local disk
// ---------------------------------------------------------------------------

/// Open file handles kept for positional reads; past this many the cache is
/// simply emptied (files are reopened on demand).
const MAX_CACHED_HANDLES: usize = 4096;

/// Prefix and suffix of the hidden file a local writer fills before
/// publishing; [`FileStore::list`] skips such names.
const TEMP_PREFIX: &str = ".";
const TEMP_SUFFIX: &str = ".tmp";

/// Files on the local file system.
///
/// Reads are positional (`pread`) on cached handles, so concurrent readers
/// of one file never contend on a file offset. A writer fills a hidden
/// temporary file beside the target, fsyncs it, hard-links it to the target
/// name (which fails if the name exists: create-if-absent), removes the
/// temporary name and fsyncs the directory.
#[derive(Debug, Default)]
pub struct LocalFileStore {
    /// Keyed by the path's bytes: `Path`'s own hash walks its components,
    /// which showed in every point get's profile.
    handles: Mutex<HashMap<OsString, Arc<File>, rustc_hash::FxBuildHasher>>,
    temp_counter: AtomicU64,
}

impl LocalFileStore {
    /// A store over the local file system (paths are used as given).
    pub fn new() -> Self {
        LocalFileStore::default()
    }

    fn handle(&self, path: &Path) -> Result<Arc<File>> {
        if let Some(f) = self.handles.lock().get(path.as_os_str()) {
            return Ok(Arc::clone(f));
        }
        let file = Arc::new(File::open(path).map_err(|e| Error::io(path, e))?);
        let mut handles = self.handles.lock();
        if handles.len() >= MAX_CACHED_HANDLES {
            handles.clear();
        }
        handles.insert(path.as_os_str().to_owned(), Arc::clone(&file));
        Ok(file)
    }

    fn forget(&self, path: &Path) {
        self.handles.lock().remove(path.as_os_str());
    }

    /// Deletes leftover temporary files of writers that never finished
    /// (a crash mid-write) in `dir`; returns how many. Only call it when no
    /// writer is active in `dir` (e.g. when a region opens).
    pub fn remove_temp_files(&self, dir: &Path) -> Result<usize> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(Error::io(dir, e)),
        };
        let mut removed = 0;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            if is_temp_name(&entry.file_name().to_string_lossy()) {
                fs::remove_file(entry.path()).map_err(|e| Error::io(entry.path(), e))?;
                removed += 1;
            }
        }
        if removed > 0 {
            sync_dir(dir)?;
        }
        Ok(removed)
    }
}

fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX)
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

fn parent_of(path: &Path) -> Result<&Path> {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => Ok(p),
        Some(_) => Ok(Path::new(".")),
        None => Err(Error::invalid(format!(
            "{} is not a file path",
            path.display()
        ))),
    }
}

impl FileStore for LocalFileStore {
    fn remove_unfinished(&self, dir: &Path) -> Result<usize> {
        self.remove_temp_files(dir)
    }

    fn create(&self, path: &Path) -> Result<Box<dyn FileWriter>> {
        let name = path
            .file_name()
            .ok_or_else(|| Error::invalid(format!("{} is not a file path", path.display())))?
            .to_string_lossy()
            .into_owned();
        if is_temp_name(&name) {
            return Err(Error::invalid(format!(
                "{}: names starting with '{TEMP_PREFIX}' and ending with '{TEMP_SUFFIX}' are reserved",
                path.display()
            )));
        }
        let dir = parent_of(path)?;
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        // Fail fast; `finish` re-checks atomically with the hard link.
        if path.exists() {
            return Err(already_exists(path));
        }
        let n = self.temp_counter.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(
            "{TEMP_PREFIX}{name}.{}.{n}{TEMP_SUFFIX}",
            std::process::id()
        ));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| Error::io(&temp, e))?;
        Ok(Box::new(LocalFileWriter {
            path: path.to_path_buf(),
            temp,
            out: Some(io::BufWriter::with_capacity(256 * 1024, file)),
            written: 0,
        }))
    }

    fn read_range(&self, path: &Path, offset: u64, len: usize) -> Result<Bytes> {
        if len == 0 {
            return Ok(Bytes::new());
        }
        let file = self.handle(path)?;
        match read_exact_at_uninit(&file, offset, len) {
            Ok(buf) => Ok(Bytes::from(buf)),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                let size = file.metadata().map(|m| m.len()).unwrap_or(0);
                Err(past_end(path, offset, len, size))
            }
            Err(e) => Err(Error::io(path, e)),
        }
    }

    fn size(&self, path: &Path) -> Result<u64> {
        fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| Error::io(path, e))
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        match fs::metadata(path) {
            Ok(m) => Ok(m.is_file()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let file_type = entry.file_type().map_err(|e| Error::io(entry.path(), e))?;
            if file_type.is_file() && !is_temp_name(&entry.file_name().to_string_lossy()) {
                out.push(entry.path());
            }
        }
        out.sort();
        Ok(out)
    }

    fn delete(&self, path: &Path) -> Result<()> {
        self.forget(path);
        match fs::remove_file(path) {
            Ok(()) => sync_dir(parent_of(path)?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    fn list_dirs(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let file_type = entry.file_type().map_err(|e| Error::io(entry.path(), e))?;
            if file_type.is_dir() {
                out.push(entry.path());
            }
        }
        out.sort();
        Ok(out)
    }

    fn list_prefix(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let mut out = self.list(dir)?;
        for sub in self.list_dirs(dir)? {
            out.extend(self.list_prefix(&sub)?);
        }
        out.sort();
        Ok(out)
    }

    fn delete_prefix(&self, dir: &Path) -> Result<()> {
        // Cached handles stay: a scan that began before a retired region
        // went keeps reading its (unlinked) files through them, as readers
        // of an object store keep a snapshot. Names are never reused, so a
        // stale handle is only an open descriptor until the cache empties.
        match fs::remove_dir_all(dir) {
            Ok(()) => sync_dir(parent_of(dir)?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(dir, e)),
        }
    }
}

/// A local file being written under a temporary name.
#[derive(Debug)]
struct LocalFileWriter {
    path: PathBuf,
    temp: PathBuf,
    /// `None` once finished (so `Drop` knows not to clean up).
    out: Option<io::BufWriter<File>>,
    written: u64,
}

impl FileWriter for LocalFileWriter {
    fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::invalid("write after finish"))?;
        out.write_all(buf).map_err(|e| Error::io(&self.temp, e))?;
        self.written += buf.len() as u64;
        Ok(())
    }

    fn bytes_written(&self) -> u64 {
        self.written
    }

    fn finish(mut self: Box<Self>) -> Result<u64> {
        let out = self
            .out
            .take()
            .ok_or_else(|| Error::invalid("finish called twice"))?;
        let result = (|| {
            let file = out
                .into_inner()
                .map_err(|e| Error::io(&self.temp, e.into_error()))?;
            file.sync_all().map_err(|e| Error::io(&self.temp, e))?;
            drop(file);
            // A hard link fails with AlreadyExists when the name is taken:
            // that is the create-if-absent publication.
            match fs::hard_link(&self.temp, &self.path) {
                Ok(()) => Ok(()),
                // File systems without hard links: check, then rename. Not
                // atomic against a concurrent writer of the same name, but
                // still never exposes a partial file.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Unsupported | io::ErrorKind::PermissionDenied
                    ) =>
                {
                    if self.path.exists() {
                        return Err(already_exists(&self.path));
                    }
                    fs::rename(&self.temp, &self.path).map_err(|e| Error::io(&self.path, e))
                }
                Err(e) => Err(Error::io(&self.path, e)),
            }
        })();
        // The temporary name goes in every case; a failure here only leaves
        // a hidden file that `remove_temp_files` deletes later.
        let _ = fs::remove_file(&self.temp);
        result?;
        sync_dir(parent_of(&self.path)?)?;
        Ok(self.written)
    }
}

impl Drop for LocalFileWriter {
    fn drop(&mut self) {
        if self.out.take().is_some() {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------

/// Files in memory: fast tests, and the behaviour of an object store
/// (nothing visible before `finish`, no directories).
///
/// It also models a store whose publication can be visible before it is
/// durable (a shared directory without fsync): files published with
/// [`FileStore::publish_visible`] and not yet named to
/// [`FileStore::sync_published`] are what [`MemFileStore::lose_unsynced`]
/// drops, as a machine crash would.
///
/// [`MemFileStore::appending`] makes one that can also append in place, as
/// a shared directory can: a machine crash then also cuts every appendable
/// file back to what was synced of it.
#[derive(Debug, Default, Clone)]
pub struct MemFileStore {
    files: Arc<Mutex<BTreeMap<PathBuf, Bytes>>>,
    unsynced: Arc<Mutex<BTreeSet<PathBuf>>>,
    appends: bool,
    /// Each appendable file, with how much of it was synced (`None`: not
    /// even its name).
    appended: Arc<Mutex<BTreeMap<PathBuf, Option<u64>>>>,
}

impl MemFileStore {
    /// An empty store.
    pub fn new() -> Self {
        MemFileStore::default()
    }

    /// An empty store that can append ([`FileStore::can_append`]).
    pub fn appending() -> Self {
        MemFileStore {
            appends: true,
            ..MemFileStore::default()
        }
    }

    /// Replaces a published file's bytes. Files are otherwise immutable:
    /// this exists so tests can simulate damage (a flipped bit, a
    /// truncation).
    pub fn set_contents(&self, path: &Path, contents: Bytes) {
        self.files.lock().insert(path.to_path_buf(), contents);
    }

    /// A machine crash: every file published visible and not synced since
    /// is gone. Returns how many.
    ///
    /// Appendable files are cut back to their synced length (removed if
    /// never synced); those count too when they lose bytes.
    pub fn lose_unsynced(&self) -> usize {
        let lost = std::mem::take(&mut *self.unsynced.lock());
        let appended = std::mem::take(&mut *self.appended.lock());
        let mut files = self.files.lock();
        let mut count = lost.iter().filter(|p| files.remove(*p).is_some()).count();
        for (path, synced) in appended {
            let Some(bytes) = files.get(&path).cloned() else {
                continue;
            };
            match synced {
                None => {
                    files.remove(&path);
                    count += 1;
                }
                Some(len) if (len as usize) < bytes.len() => {
                    files.insert(path, bytes.slice(..len as usize));
                    count += 1;
                }
                Some(_) => {}
            }
        }
        count
    }

    /// How many files are published visible and not synced (appendable
    /// files with unsynced bytes included).
    pub fn unsynced_count(&self) -> usize {
        let files = self.files.lock();
        let appended_unsynced = self
            .appended
            .lock()
            .iter()
            .filter(|(path, synced)| {
                let len = files.get(*path).map_or(0, |b| b.len() as u64);
                synced.is_none_or(|s| s < len)
            })
            .count();
        self.unsynced.lock().len() + appended_unsynced
    }

    fn get(&self, path: &Path) -> Result<Bytes> {
        self.files
            .lock()
            .get(path)
            .cloned()
            .ok_or_else(|| not_found(path))
    }
}

impl FileStore for MemFileStore {
    fn create(&self, path: &Path) -> Result<Box<dyn FileWriter>> {
        if self.files.lock().contains_key(path) {
            return Err(already_exists(path));
        }
        Ok(Box::new(MemFileWriter {
            files: Arc::clone(&self.files),
            path: path.to_path_buf(),
            buf: Vec::new(),
        }))
    }

    fn publish_visible(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.publish(path, bytes)?;
        self.unsynced.lock().insert(path.to_path_buf());
        Ok(())
    }

    fn sync_published(&self, paths: &[PathBuf]) -> Result<()> {
        let mut unsynced = self.unsynced.lock();
        let files = self.files.lock();
        let mut appended = self.appended.lock();
        for path in paths {
            unsynced.remove(path);
            if let Some(synced) = appended.get_mut(path) {
                *synced = files.get(path).map(|b| b.len() as u64);
            }
        }
        Ok(())
    }

    fn can_append(&self) -> bool {
        self.appends
    }

    fn create_appendable(&self, path: &Path) -> Result<Box<dyn AppendableFile>> {
        if !self.appends {
            return Err(Error::io(
                path,
                io::Error::new(
                    io::ErrorKind::Unsupported,
                    "this memory store does not append",
                ),
            ));
        }
        let mut files = self.files.lock();
        if files.contains_key(path) {
            return Err(already_exists(path));
        }
        files.insert(path.to_path_buf(), Bytes::new());
        self.appended.lock().insert(path.to_path_buf(), None);
        Ok(Box::new(MemAppendableFile {
            store: self.clone(),
            path: path.to_path_buf(),
        }))
    }

    fn read_range(&self, path: &Path, offset: u64, len: usize) -> Result<Bytes> {
        let data = self.get(path)?;
        let size = data.len() as u64;
        let start = usize::try_from(offset)
            .ok()
            .filter(|&s| s.checked_add(len).is_some_and(|end| end <= data.len()))
            .ok_or_else(|| past_end(path, offset, len, size))?;
        Ok(data.slice(start..start + len))
    }

    fn size(&self, path: &Path) -> Result<u64> {
        Ok(self.get(path)?.len() as u64)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        Ok(self.files.lock().contains_key(path))
    }

    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        Ok(self
            .files
            .lock()
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .cloned()
            .collect())
    }

    fn delete(&self, path: &Path) -> Result<()> {
        self.files.lock().remove(path);
        self.unsynced.lock().remove(path);
        self.appended.lock().remove(path);
        Ok(())
    }

    fn list_dirs(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        // Object-store semantics: a "directory" exists while a name below
        // it does.
        let mut out: Vec<PathBuf> = self
            .files
            .lock()
            .keys()
            .filter_map(|p| {
                let rest = p.strip_prefix(dir).ok()?;
                let mut parts = rest.components();
                let first = parts.next()?;
                parts.next().map(|_| dir.join(first))
            })
            .collect();
        out.dedup();
        Ok(out)
    }

    fn list_prefix(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        Ok(self
            .files
            .lock()
            .keys()
            .filter(|p| p.starts_with(dir) && p.as_path() != dir)
            .cloned()
            .collect())
    }

    fn delete_prefix(&self, dir: &Path) -> Result<()> {
        self.files
            .lock()
            .retain(|p, _| !p.starts_with(dir) || p.as_path() == dir);
        self.unsynced
            .lock()
            .retain(|p| !p.starts_with(dir) || p.as_path() == dir);
        Ok(())
    }
}

/// An appendable file of a [`MemFileStore::appending`] store. Appending to
/// a file deleted meanwhile succeeds and changes nothing, as writing to an
/// unlinked file does.
#[derive(Debug)]
struct MemAppendableFile {
    store: MemFileStore,
    path: PathBuf,
}

impl AppendableFile for MemAppendableFile {
    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        let mut files = self.store.files.lock();
        if let Some(old) = files.get(&self.path) {
            let mut grown = Vec::with_capacity(old.len() + bytes.len());
            grown.extend_from_slice(old);
            grown.extend_from_slice(bytes);
            files.insert(self.path.clone(), Bytes::from(grown));
        }
        Ok(())
    }

    fn truncate(&mut self, len: u64) -> Result<()> {
        let mut files = self.store.files.lock();
        if let Some(old) = files.get(&self.path) {
            let cut = old.slice(..(len as usize).min(old.len()));
            files.insert(self.path.clone(), cut);
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.store.sync_published(std::slice::from_ref(&self.path))
    }
}

#[derive(Debug)]
struct MemFileWriter {
    files: Arc<Mutex<BTreeMap<PathBuf, Bytes>>>,
    path: PathBuf,
    buf: Vec<u8>,
}

impl FileWriter for MemFileWriter {
    fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(buf);
        Ok(())
    }

    fn bytes_written(&self) -> u64 {
        self.buf.len() as u64
    }

    fn finish(self: Box<Self>) -> Result<u64> {
        let mut files = self.files.lock();
        if files.contains_key(&self.path) {
            return Err(already_exists(&self.path));
        }
        let size = self.buf.len() as u64;
        files.insert(self.path, Bytes::from(self.buf));
        Ok(size)
    }
}

// ---------------------------------------------------------------------------
// Fault injection
// ---------------------------------------------------------------------------

/// The calls a [`FaultyFileStore`] can make fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultOp {
    /// [`FileStore::create`].
    Create,
    /// [`FileWriter::write_all`], counted across all writers of the store.
    Write,
    /// [`FileWriter::finish`]: the file is not published.
    Finish,
    /// [`FileStore::read_range`] (and so `read_all`).
    Read,
    /// [`FileStore::size`].
    Size,
    /// [`FileStore::list`].
    List,
    /// [`FileStore::delete`]: the file is not deleted.
    Delete,
    /// [`AppendableFile::append`] (with partial writes on, half of the
    /// bytes land first).
    Append,
}

#[derive(Debug, Clone, Copy)]
enum Trigger {
    /// Exactly the call with this (1-based, absolute) number.
    At(u64),
    /// Every call from this number on.
    From(u64),
}

#[derive(Debug, Default)]
struct FaultState {
    calls: HashMap<FaultOp, u64>,
    rules: Vec<(FaultOp, Trigger)>,
    partial_writes: bool,
    injected: u64,
    /// Finishes wait (the store is slow) until released.
    holding: bool,
    /// Finishes of these paths wait until released one by one.
    held_paths: HashSet<PathBuf>,
    /// How long every finish waits before it publishes: a store far away
    /// (a request's network round trip), with no limit on requests at once.
    finish_latency: std::time::Duration,
    /// Up to this much more, different for each path (a hash of it), so
    /// that publications overtake each other.
    finish_jitter: std::time::Duration,
    /// Finishes waiting now.
    held: u64,
    /// Finish call numbers that publish but answer as a retried
    /// create-if-absent would (`AlreadyExists`).
    answers_lost: Vec<u64>,
    /// Finish call numbers that answer an error and publish later.
    landing_late: Vec<u64>,
    /// Writers of files that land late, with their paths.
    late: Vec<(PathBuf, Box<dyn FileWriter>)>,
}

/// What a [`FileWriter::finish`] of a [`FaultyFileStore`] does.
enum FinishFate {
    Publish,
    Fail,
    PublishAndAnswerExists,
    LandLate,
}

impl FaultState {
    /// Counts a call of `op` and says whether it must fail.
    fn hit(&mut self, op: FaultOp) -> bool {
        let n = self.calls.entry(op).or_insert(0);
        *n += 1;
        let n = *n;
        let fail = self.rules.iter().any(|&(o, t)| {
            o == op
                && match t {
                    Trigger::At(k) => k == n,
                    Trigger::From(k) => n >= k,
                }
        });
        if fail {
            self.injected += 1;
        }
        fail
    }

    /// Counts a finish and says what it does.
    fn finish_fate(&mut self) -> FinishFate {
        if self.hit(FaultOp::Finish) {
            return FinishFate::Fail;
        }
        let n = self.calls.get(&FaultOp::Finish).copied().unwrap_or(0);
        if self.answers_lost.contains(&n) {
            self.injected += 1;
            FinishFate::PublishAndAnswerExists
        } else if self.landing_late.contains(&n) {
            self.injected += 1;
            FinishFate::LandLate
        } else {
            FinishFate::Publish
        }
    }
}

fn injected(op: FaultOp, path: &Path) -> Error {
    Error::io(path, io::Error::other(format!("injected {op:?} fault")))
}

/// Wraps a [`FileStore`] and makes chosen calls fail with an I/O error.
///
/// Calls are counted per [`FaultOp`] from the store's creation; the rules
/// say which call numbers fail. Clones share counters and rules.
///
/// ```
/// # use std::sync::Arc;
/// # use basalt_engine::fs::{FaultOp, FaultyFileStore, MemFileStore};
/// let store = FaultyFileStore::new(Arc::new(MemFileStore::new()));
/// store.fail_nth(FaultOp::Write, 3); // the third write from now fails
/// store.fail_from(FaultOp::Finish, 1); // and every finish ("disk full")
/// ```
#[derive(Debug, Clone)]
pub struct FaultyFileStore {
    inner: Arc<dyn FileStore>,
    state: Arc<Mutex<FaultState>>,
    /// Signalled when held finishes are released.
    released: Arc<Condvar>,
}

impl FaultyFileStore {
    /// Wraps `inner`; no call fails until a rule is added.
    pub fn new(inner: Arc<dyn FileStore>) -> Self {
        FaultyFileStore {
            inner,
            state: Arc::new(Mutex::new(FaultState::default())),
            released: Arc::new(Condvar::new()),
        }
    }

    /// Makes the `n`-th call of `op` from now fail (1 = the next one).
    pub fn fail_nth(&self, op: FaultOp, n: u64) {
        let mut s = self.state.lock();
        let base = s.calls.get(&op).copied().unwrap_or(0);
        s.rules.push((op, Trigger::At(base + n.max(1))));
    }

    /// Makes every call of `op` fail from the `n`-th from now on.
    pub fn fail_from(&self, op: FaultOp, n: u64) {
        let mut s = self.state.lock();
        let base = s.calls.get(&op).copied().unwrap_or(0);
        s.rules.push((op, Trigger::From(base + n.max(1))));
    }

    /// When a write fails, first pass half of its buffer to the inner
    /// writer (a torn write) instead of nothing.
    pub fn set_partial_writes(&self, partial: bool) {
        self.state.lock().partial_writes = partial;
    }

    /// Makes every [`FileWriter::finish`] from now on wait, its file not
    /// yet published, until [`FaultyFileStore::release_finishes`]: a store
    /// slow to acknowledge, so a test decides when a publication lands.
    pub fn hold_finishes(&self) {
        self.state.lock().holding = true;
    }

    /// Makes the `n`-th finish from now publish its file but answer
    /// `AlreadyExists`, as an object store does to a retried
    /// create-if-absent whose first attempt landed although its answer
    /// was lost.
    pub fn lose_answer_nth(&self, n: u64) {
        let mut s = self.state.lock();
        let base = s.calls.get(&FaultOp::Finish).copied().unwrap_or(0);
        s.answers_lost.push(base + n.max(1));
    }

    /// Makes the `n`-th finish from now answer an error (a request that
    /// timed out) and publish nothing yet: its file lands when its path is
    /// next created or read, as a slow store's request does after the
    /// client gave up on it.
    pub fn land_late_nth(&self, n: u64) {
        let mut s = self.state.lock();
        let base = s.calls.get(&FaultOp::Finish).copied().unwrap_or(0);
        s.landing_late.push(base + n.max(1));
    }

    /// Publishes the files of `path` landing late.
    fn land(&self, path: &Path) -> Result<()> {
        let landing: Vec<_> = {
            let mut s = self.state.lock();
            let (landing, kept) = std::mem::take(&mut s.late)
                .into_iter()
                .partition(|(late, _)| late == path);
            s.late = kept;
            landing
        };
        for (_, writer) in landing {
            writer.finish()?;
        }
        Ok(())
    }

    /// Makes the finish of `path` wait, its file not yet published, until
    /// [`FaultyFileStore::release_finishes_of`]: one slow request among
    /// others that are not, so a test decides the order publications land.
    pub fn hold_finishes_of(&self, path: &Path) {
        self.state.lock().held_paths.insert(path.to_path_buf());
    }

    /// Lets the held finish of `path` go on.
    pub fn release_finishes_of(&self, path: &Path) {
        self.state.lock().held_paths.remove(path);
        self.released.notify_all();
    }

    /// Makes every finish from now on wait `latency` (outside every lock,
    /// so finishes overlap) before it publishes: object storage's round
    /// trip, for benchmarks of what waits on it.
    pub fn set_finish_latency(&self, latency: std::time::Duration) {
        self.state.lock().finish_latency = latency;
    }

    /// Adds up to `jitter` to each finish's latency, the same for a path
    /// every time (so a run is repeatable) and different between paths:
    /// requests sent in one order land in another.
    pub fn set_finish_jitter(&self, jitter: std::time::Duration) {
        self.state.lock().finish_jitter = jitter;
    }

    /// Lets every held finish (and every later one) go on.
    pub fn release_finishes(&self) {
        self.state.lock().holding = false;
        self.released.notify_all();
    }

    /// Finishes waiting in [`FaultyFileStore::hold_finishes`] now.
    pub fn held_finishes(&self) -> u64 {
        self.state.lock().held
    }

    /// Removes every rule (counters keep counting).
    pub fn clear(&self) {
        self.state.lock().rules.clear();
    }

    /// Calls of `op` seen so far, failed ones included.
    pub fn calls(&self, op: FaultOp) -> u64 {
        self.state.lock().calls.get(&op).copied().unwrap_or(0)
    }

    /// Faults injected so far.
    pub fn injected(&self) -> u64 {
        self.state.lock().injected
    }

    fn check(&self, op: FaultOp, path: &Path) -> Result<()> {
        if self.state.lock().hit(op) {
            Err(injected(op, path))
        } else {
            Ok(())
        }
    }
}

impl FileStore for FaultyFileStore {
    fn create(&self, path: &Path) -> Result<Box<dyn FileWriter>> {
        self.check(FaultOp::Create, path)?;
        self.land(path)?;
        Ok(Box::new(FaultyWriter {
            inner: self.inner.create(path)?,
            state: Arc::clone(&self.state),
            released: Arc::clone(&self.released),
            path: path.to_path_buf(),
        }))
    }

    fn read_range(&self, path: &Path, offset: u64, len: usize) -> Result<Bytes> {
        self.check(FaultOp::Read, path)?;
        self.land(path)?;
        self.inner.read_range(path, offset, len)
    }

    fn size(&self, path: &Path) -> Result<u64> {
        self.check(FaultOp::Size, path)?;
        self.inner.size(path)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        self.inner.exists(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        self.check(FaultOp::List, dir)?;
        self.inner.list(dir)
    }

    fn delete(&self, path: &Path) -> Result<()> {
        self.check(FaultOp::Delete, path)?;
        self.inner.delete(path)
    }

    fn list_dirs(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        self.check(FaultOp::List, dir)?;
        self.inner.list_dirs(dir)
    }

    fn list_prefix(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        self.check(FaultOp::List, dir)?;
        self.inner.list_prefix(dir)
    }

    fn delete_prefix(&self, dir: &Path) -> Result<()> {
        self.check(FaultOp::Delete, dir)?;
        self.inner.delete_prefix(dir)
    }

    fn remove_unfinished(&self, dir: &Path) -> Result<usize> {
        self.inner.remove_unfinished(dir)
    }

    fn cache_stats(&self) -> Option<FileCacheStats> {
        self.inner.cache_stats()
    }

    fn sync_published(&self, paths: &[PathBuf]) -> Result<()> {
        self.inner.sync_published(paths)
    }

    fn can_append(&self) -> bool {
        self.inner.can_append()
    }

    fn create_appendable(&self, path: &Path) -> Result<Box<dyn AppendableFile>> {
        self.check(FaultOp::Create, path)?;
        Ok(Box::new(FaultyAppendableFile {
            inner: self.inner.create_appendable(path)?,
            state: Arc::clone(&self.state),
            path: path.to_path_buf(),
        }))
    }
}

#[derive(Debug)]
struct FaultyAppendableFile {
    inner: Box<dyn AppendableFile>,
    state: Arc<Mutex<FaultState>>,
    path: PathBuf,
}

impl AppendableFile for FaultyAppendableFile {
    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        let (fail, partial) = {
            let mut s = self.state.lock();
            (s.hit(FaultOp::Append), s.partial_writes)
        };
        if fail {
            if partial {
                self.inner.append(&bytes[..bytes.len() / 2])?;
            }
            return Err(injected(FaultOp::Append, &self.path));
        }
        self.inner.append(bytes)
    }

    fn truncate(&mut self, len: u64) -> Result<()> {
        self.inner.truncate(len)
    }

    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
}

#[derive(Debug)]
struct FaultyWriter {
    inner: Box<dyn FileWriter>,
    state: Arc<Mutex<FaultState>>,
    released: Arc<Condvar>,
    path: PathBuf,
}

impl FileWriter for FaultyWriter {
    fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        let (fail, partial) = {
            let mut s = self.state.lock();
            (s.hit(FaultOp::Write), s.partial_writes)
        };
        if fail {
            if partial {
                self.inner.write_all(&buf[..buf.len() / 2])?;
            }
            return Err(injected(FaultOp::Write, &self.path));
        }
        self.inner.write_all(buf)
    }

    fn bytes_written(&self) -> u64 {
        self.inner.bytes_written()
    }

    fn finish(self: Box<Self>) -> Result<u64> {
        let latency = {
            let s = self.state.lock();
            let jitter_micros = u64::try_from(s.finish_jitter.as_micros()).unwrap_or(u64::MAX);
            let path_hash = crc32c::crc32c(self.path.as_os_str().as_encoded_bytes());
            let jitter = match jitter_micros {
                0 => 0,
                micros => u64::from(path_hash) % micros,
            };
            s.finish_latency + std::time::Duration::from_micros(jitter)
        };
        if !latency.is_zero() {
            std::thread::sleep(latency);
        }
        {
            let mut s = self.state.lock();
            if s.holding || s.held_paths.contains(&self.path) {
                s.held += 1;
                while s.holding || s.held_paths.contains(&self.path) {
                    self.released.wait(&mut s);
                }
                s.held -= 1;
            }
            match s.finish_fate() {
                FinishFate::Publish => {}
                FinishFate::Fail => return Err(injected(FaultOp::Finish, &self.path)),
                FinishFate::PublishAndAnswerExists => {
                    drop(s);
                    self.inner.finish()?;
                    return Err(Error::io(
                        &self.path,
                        io::Error::new(
                            io::ErrorKind::AlreadyExists,
                            "injected: a retried create-if-absent found its own first attempt",
                        ),
                    ));
                }
                FinishFate::LandLate => {
                    s.late.push((self.path.clone(), self.inner));
                    return Err(injected(FaultOp::Finish, &self.path));
                }
            }
        }
        self.inner.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(store: &dyn FileStore, path: &Path, data: &[u8]) -> Result<u64> {
        let mut w = store.create(path)?;
        w.write_all(data)?;
        w.finish()
    }

    fn exercise(store: &dyn FileStore, dir: &Path) {
        let a = dir.join("sub/a");
        assert!(store.list(&dir.join("sub")).unwrap().is_empty());
        let mut w = store.create(&a).unwrap();
        w.write_all(b"hello ").unwrap();
        w.write_all(b"world").unwrap();
        assert_eq!(w.bytes_written(), 11);
        // Invisible until finished.
        assert!(!store.exists(&a).unwrap());
        assert!(store.list(&dir.join("sub")).unwrap().is_empty());
        assert_eq!(w.finish().unwrap(), 11);
        assert!(store.exists(&a).unwrap());
        assert_eq!(store.size(&a).unwrap(), 11);
        assert_eq!(&store.read_range(&a, 6, 5).unwrap()[..], b"world");
        assert_eq!(&store.read_all(&a).unwrap()[..], b"hello world");
        assert!(store.read_range(&a, 8, 5).is_err());
        assert!(store.create(&a).is_err(), "create of an existing file");

        // Create-if-absent: of two writers of one name, the second finish loses.
        let b = dir.join("sub/b");
        let mut w1 = store.create(&b).unwrap();
        let mut w2 = store.create(&b).unwrap();
        w1.write_all(b"one").unwrap();
        w2.write_all(b"two").unwrap();
        w1.finish().unwrap();
        assert!(w2.finish().is_err());
        assert_eq!(&store.read_all(&b).unwrap()[..], b"one");

        // Abandoned writers publish nothing.
        let c = dir.join("sub/c");
        let mut w = store.create(&c).unwrap();
        w.write_all(b"x").unwrap();
        drop(w);
        assert!(!store.exists(&c).unwrap());
        assert_eq!(store.list(&dir.join("sub")).unwrap(), vec![a.clone(), b]);

        store.delete(&a).unwrap();
        store.delete(&a).unwrap();
        assert!(!store.exists(&a).unwrap());
        assert!(store.read_range(&a, 0, 1).is_err());

        // Prefixes: listing at any depth, the directories one level down,
        // and deletion of everything below a prefix (twice is fine).
        let deep = dir.join("tree/x/y/deep");
        let shallow = dir.join("tree/top");
        let other = dir.join("tree/z/file");
        for path in [&deep, &shallow, &other] {
            write(store, path, b"1").unwrap();
        }
        assert_eq!(
            store.list_prefix(&dir.join("tree")).unwrap(),
            vec![shallow.clone(), deep.clone(), other.clone()]
        );
        assert_eq!(
            store.list_dirs(&dir.join("tree")).unwrap(),
            vec![dir.join("tree/x"), dir.join("tree/z")]
        );
        store.delete_prefix(&dir.join("tree/x")).unwrap();
        store.delete_prefix(&dir.join("tree/x")).unwrap();
        assert!(!store.exists(&deep).unwrap());
        assert_eq!(
            store.list_prefix(&dir.join("tree")).unwrap(),
            vec![shallow, other]
        );
        assert!(store.list_prefix(&dir.join("missing")).unwrap().is_empty());
        assert!(store.list_dirs(&dir.join("missing")).unwrap().is_empty());
    }

    #[test]
    fn local_store_semantics() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalFileStore::new();
        exercise(&store, dir.path());
        // No temporary file is left behind by the abandoned writer.
        let names: Vec<_> = fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn a_local_read_returns_exactly_its_range_and_one_past_the_end_names_the_file_size() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalFileStore::new();
        let path = dir.path().join("blocks");
        // Several pages, so a range can start and end mid-page.
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        write(&store, &path, &data).unwrap();
        for (offset, len) in [(0, 1), (4095, 2), (4096, 4096), (123, 17_000), (19_999, 1)] {
            let read = store.read_range(&path, offset, len).unwrap();
            assert_eq!(&read[..], &data[offset as usize..offset as usize + len]);
        }
        let whole = store.read_range(&path, 0, data.len()).unwrap();
        assert_eq!(&whole[..], &data[..]);
        let err = store.read_range(&path, 19_990, 11).unwrap_err().to_string();
        assert!(
            err.contains("11 bytes at offset 19990") && err.contains("20000-byte file"),
            "{err}"
        );
    }

    #[test]
    fn local_store_cleans_leftover_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalFileStore::new();
        fs::write(dir.path().join(".x.1.2.tmp"), b"partial").unwrap();
        fs::write(dir.path().join("real"), b"data").unwrap();
        assert_eq!(
            store.list(dir.path()).unwrap(),
            vec![dir.path().join("real")]
        );
        assert_eq!(store.remove_temp_files(dir.path()).unwrap(), 1);
        assert!(store.create(&dir.path().join(".y.tmp")).is_err());
    }

    #[test]
    fn mem_store_semantics() {
        exercise(&MemFileStore::new(), Path::new("/m"));
    }

    #[test]
    fn faulty_store_fails_the_chosen_calls() {
        let mem = MemFileStore::new();
        let store = FaultyFileStore::new(Arc::new(mem.clone()));
        let p = Path::new("/d/f");
        store.fail_nth(FaultOp::Write, 2);
        let mut w = store.create(p).unwrap();
        w.write_all(b"ok").unwrap();
        assert!(w.write_all(b"fails").is_err());
        w.write_all(b"ok again").unwrap();
        drop(w);
        assert_eq!(store.calls(FaultOp::Write), 3);
        assert_eq!(store.injected(), 1);

        store.fail_nth(FaultOp::Finish, 1);
        assert!(write(&store, p, b"x").is_err());
        assert!(
            !store.exists(p).unwrap(),
            "a failed finish publishes nothing"
        );
        write(&store, p, b"x").unwrap();

        store.fail_from(FaultOp::Read, 1);
        assert!(store.read_range(p, 0, 1).is_err());
        assert!(store.read_range(p, 0, 1).is_err());
        store.clear();
        assert_eq!(&store.read_range(p, 0, 1).unwrap()[..], b"x");

        store.set_partial_writes(true);
        store.fail_nth(FaultOp::Write, 1);
        let q = Path::new("/d/g");
        let mut w = store.create(q).unwrap();
        assert!(w.write_all(b"abcd").is_err());
        assert_eq!(w.bytes_written(), 2, "half of the failed write got through");
    }
}
