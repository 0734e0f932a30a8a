//! [`ObjectFileStore`]: the [`FileStore`] contract on an object store.
//!
//! # Key mapping
//!
//! The store is rooted at a local path, the database's data directory: the
//! engine names every file by an absolute path built by
//! `basalt_engine::layout` under that directory, and the part of the path
//! below the root becomes the object's key below the URL's prefix:
//!
//! ```text
//! root    /var/lib/basalt                      (the --data-dir)
//! path    /var/lib/basalt/data/default/t/7/cf/00000000000000000012.sst
//! key     PREFIX/data/default/t/7/cf/00000000000000000012.sst
//! ```
//!
//! So a second server with another data directory finds the same objects.
//! A path outside the root, or with a component that is not UTF-8, `.` or
//! `..`, or holds a control character, is refused: keys are the path's
//! components as they are, never escaped, so listing maps them back
//! exactly.
//!
//! # How each call is made
//!
//! | call | request |
//! | --- | --- |
//! | `create` | `HEAD` (fail fast on an existing name), then a writer that buffers in memory |
//! | `finish` | one `PUT` with `If-None-Match: *` (`PutMode::Create`); a refusal is `AlreadyExists` |
//! | `publish` | that `PUT` alone, no `HEAD` (log objects: small, and one round trip fewer per write) |
//! | `publish_visible` | `publish`; on a shared directory, the same create-if-absent publication without its fsyncs (see below) |
//! | `sync_published` | nothing (an acknowledged `PUT` is durable); on a shared directory, an fsync of each file and its directory |
//! | `read_range` | one ranged `GET`; a short answer is a read past the end |
//! | `size`, `exists` | `HEAD` |
//! | `list`, `list_dirs` | a delimiter listing of the directory's prefix |
//! | `list_prefix` | a listing without delimiter |
//! | `delete` | `DELETE` (a missing object is fine) |
//! | `delete_prefix` | a listing, then deletes (batched where the store can) |
//!
//! A writer holds the whole object in memory until `finish`, because the
//! publication is one create-if-absent `PUT` (S3 has no atomic
//! create-if-absent rename for a multipart upload). Objects larger than
//! [`ObjectStoreConfig::max_object_bytes`] are refused by `write_all` with
//! an error naming the limit; S3 itself takes at most 5 GiB in one `PUT`.
//!
//! # Visible before durable (shared directories)
//!
//! A shared directory publishes a file by writing a staging file, fsyncing
//! it, hard-linking it to its name (create-if-absent) and fsyncing the
//! directory. For a log object that is 2-4 ms of fsyncs on every batch,
//! where the local log writes its batch to the OS and fsyncs only for
//! `FSYNC_WAL` writers. So a store made with
//! [`ObjectFileStore::on_shared_directory`] keeps a second handle on the
//! directory that does not fsync: `publish_visible` is the same staging
//! file and create-if-absent link, visible to every process reading the
//! directory (a region server recovering a dead one's log) as soon as it
//! returns, and `sync_published` fsyncs what an `FSYNC_WAL` writer needs.
//! Store files, manifests and the catalog are always published durably.
//!
//! # Time bounds
//!
//! Every call is bounded: the client retries failed requests (connection
//! errors, 5xx answers, throttling) with exponential backoff, and the call
//! as a whole gives up after [`ObjectStoreConfig::request_timeout`] plus the
//! time its payload needs at [`ObjectStoreConfig::min_bytes_per_sec`]. The
//! error then names the operation, the key and the store, and has the I/O
//! kind `TimedOut`.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use object_store::path::{Path as Key, PathPart};
use object_store::{
    GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    PutPayloadMut,
};

use basalt_engine::fs::{already_exists, past_end, AppendableFile, FileStore, FileWriter};
use basalt_types::{Error, Result};

use crate::bridge::{Bridge, Interrupted};

/// Settings of an [`ObjectFileStore`].
#[derive(Debug, Clone)]
pub struct ObjectStoreConfig {
    /// The bound of one call without payload (and the base of a call's
    /// bound with one), retries included.
    pub request_timeout: Duration,
    /// The slowest transfer rate a call's bound allows for its payload:
    /// a call moving `n` bytes may take `request_timeout + n / rate`.
    pub min_bytes_per_sec: u64,
    /// The largest object a writer accepts (it is buffered in memory and
    /// sent in one `PUT`).
    pub max_object_bytes: u64,
    /// Worker threads of the store's own runtime.
    pub runtime_threads: usize,
}

impl Default for ObjectStoreConfig {
    fn default() -> Self {
        ObjectStoreConfig {
            request_timeout: Duration::from_secs(30),
            min_bytes_per_sec: 1024 * 1024,
            max_object_bytes: 5 * 1024 * 1024 * 1024,
            runtime_threads: 2,
        }
    }
}

/// Files as objects of an `object_store` store (S3, an S3-compatible
/// server, a local or shared directory). See the module docs.
#[derive(Debug, Clone)]
pub struct ObjectFileStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Arc<dyn ObjectStore>,
    /// A shared directory's handle without fsync, and the directory
    /// (module docs, "Visible before durable"); `None` on object storage.
    shared_directory: Option<SharedDirectory>,
    bridge: Bridge,
    /// The local path keys are relative to.
    root: PathBuf,
    /// The key prefix's segments (from the URL).
    prefix: Vec<String>,
    /// How the store is named in errors (the storage URL).
    name: String,
    config: ObjectStoreConfig,
}

#[derive(Debug)]
struct SharedDirectory {
    /// The same directory as `Inner::store`, publishing without fsync.
    unsynced: Arc<dyn ObjectStore>,
    /// The directory keys are relative to.
    dir: PathBuf,
    /// The log may append to its segments here.
    appends: bool,
}

/// Whether the write-ahead log may append to segments in `dir` and trust
/// a `stat` to see a fence another process created (invariant W1 in
/// docs/object-storage.md): true on the local file systems whose every
/// process shares one coherent view of names (ext2/3/4, XFS, btrfs,
/// tmpfs, ZFS, F2FS, bcachefs, overlayfs), false elsewhere. An NFS, SMB or
/// FUSE client may answer a `stat` of a name it looked up before from its
/// cache for seconds (NFS's negative lookup cache, attribute timeouts), so
/// a fenced writer there could acknowledge writes after the fence; those
/// directories keep one create-if-absent object per batch, which the
/// server arbitrates. `[storage] wal_append` overrides the choice.
pub fn appends_safely(dir: &Path) -> bool {
    const LOCAL_FILE_SYSTEMS: [u64; 10] = [
        0xEF53,      // ext2, ext3, ext4
        0x5846_5342, // XFS
        0x9123_683E, // btrfs
        0x0102_1994, // tmpfs
        0x2FC1_2FC1, // ZFS
        0xF2F5_2010, // F2FS
        0xCA45_1A4E, // bcachefs
        0x794C_7630, // overlayfs
        0x8584_58F6, // ramfs
        0x4244,      // HFS (macOS-formatted disks on Linux)
    ];
    match rustix::fs::statfs(dir) {
        Ok(stat) => {
            // `f_type` is a signed word on some targets: compare its
            // 32-bit pattern, which is what the magic numbers are.
            let magic = u64::from(stat.f_type as u32);
            LOCAL_FILE_SYSTEMS.contains(&magic)
        }
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e,
                "cannot tell the shared directory's file system; the log publishes one object per batch");
            false
        }
    }
}

impl ObjectFileStore {
    /// A file store over `store`: paths below `root` map to keys below
    /// `prefix` (segments separated by `/`, may be empty); `name` names the
    /// store in errors (the storage URL).
    pub fn new(
        store: Arc<dyn ObjectStore>,
        root: impl Into<PathBuf>,
        prefix: &str,
        name: impl Into<String>,
        config: ObjectStoreConfig,
    ) -> Result<ObjectFileStore> {
        Self::build(store, None, root, prefix, name, config)
    }

    /// A file store over a shared directory: `durable` and `unsynced` are
    /// two handles on `dir` (keys relative to it, no prefix), the first
    /// fsyncing every publication, the second none (module docs, "Visible
    /// before durable").
    ///
    /// `appends` lets the write-ahead log append to its segments in the
    /// directory ([`FileStore::can_append`]); see [`appends_safely`] for
    /// where that is safe.
    pub fn on_shared_directory(
        durable: Arc<dyn ObjectStore>,
        unsynced: Arc<dyn ObjectStore>,
        dir: impl Into<PathBuf>,
        root: impl Into<PathBuf>,
        name: impl Into<String>,
        config: ObjectStoreConfig,
        appends: bool,
    ) -> Result<ObjectFileStore> {
        let shared = SharedDirectory {
            unsynced,
            dir: dir.into(),
            appends,
        };
        Self::build(durable, Some(shared), root, "", name, config)
    }

    fn build(
        store: Arc<dyn ObjectStore>,
        shared_directory: Option<SharedDirectory>,
        root: impl Into<PathBuf>,
        prefix: &str,
        name: impl Into<String>,
        config: ObjectStoreConfig,
    ) -> Result<ObjectFileStore> {
        let name = name.into();
        let prefix: Vec<String> = prefix
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        for segment in &prefix {
            PathPart::parse(segment)
                .map_err(|e| Error::invalid(format!("object storage {name}: key prefix: {e}")))?;
        }
        let bridge = Bridge::new(config.runtime_threads).map_err(|e| {
            Error::io(
                &name,
                io::Error::new(
                    e.kind(),
                    format!("cannot start the object storage runtime: {e}"),
                ),
            )
        })?;
        Ok(ObjectFileStore {
            inner: Arc::new(Inner {
                store,
                shared_directory,
                bridge,
                root: root.into(),
                prefix,
                name,
                config,
            }),
        })
    }

    /// The name the store goes by in errors (the storage URL).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The key a path maps to (see the module docs).
    pub fn key_of(&self, path: &Path) -> Result<Key> {
        self.inner.key_of(path)
    }
}

impl Inner {
    fn key_of(&self, path: &Path) -> Result<Key> {
        let relative = path.strip_prefix(&self.root).map_err(|_| {
            Error::invalid(format!(
                "{} is outside {}, the root of object storage {}",
                path.display(),
                self.root.display(),
                self.name
            ))
        })?;
        let mut parts: Vec<PathPart<'static>> = Vec::new();
        for segment in &self.prefix {
            parts.push(part(segment).map_err(|e| self.bad_path(path, &e))?);
        }
        for component in relative.components() {
            let Component::Normal(name) = component else {
                return Err(self.bad_path(path, "only plain names may follow the root"));
            };
            let name = name
                .to_str()
                .ok_or_else(|| self.bad_path(path, "a name is not UTF-8"))?;
            parts.push(part(name).map_err(|e| self.bad_path(path, &e))?);
        }
        Ok(Key::from_iter(parts))
    }

    /// The path a listed key names; `None` for a key outside the prefix.
    fn path_of(&self, key: &Key) -> Option<PathBuf> {
        let mut parts = key.parts();
        for segment in &self.prefix {
            if parts.next()?.as_ref() != segment {
                return None;
            }
        }
        let mut path = self.root.clone();
        for part in parts {
            path.push(part.as_ref());
        }
        Some(path)
    }

    /// The paths listed keys name, sorted; keys outside the prefix are
    /// left out.
    fn sorted_paths<'a>(&self, keys: impl IntoIterator<Item = &'a Key>) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = keys.into_iter().filter_map(|k| self.path_of(k)).collect();
        out.sort();
        out
    }

    fn bad_path(&self, path: &Path, why: &str) -> Error {
        Error::invalid(format!(
            "{} cannot be stored in object storage {}: {why}",
            path.display(),
            self.name
        ))
    }

    /// The bound of a call moving `payload` bytes.
    fn bound(&self, payload: u64) -> Duration {
        let rate = self.config.min_bytes_per_sec.max(1);
        self.config
            .request_timeout
            .saturating_add(Duration::from_secs(payload / rate))
    }

    /// Runs one call on the bridge and turns every failure into an
    /// [`Error::Io`] on `path` that names the operation, key and store.
    fn call<T, F>(&self, op: &str, path: &Path, key: &Key, payload: u64, future: F) -> Result<T>
    where
        T: Send + 'static,
        F: std::future::Future<Output = object_store::Result<T>> + Send + 'static,
    {
        let bound = self.bound(payload);
        let started = Instant::now();
        let timed_out = |detail: String| {
            Error::io(
                path,
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "object storage {}: {op} of key {key} did not complete within {bound:?} \
                         (the store is unreachable or too slow; the bound is the storage \
                         request timeout){detail}",
                        self.name
                    ),
                ),
            )
        };
        match self.bridge.run(bound, future) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                let error = self.failed(op, path, key, &e);
                // The client gives up by itself once its retries have used
                // the request timeout: that is a timeout too, whatever the
                // last attempt's error was.
                let retried_out = matches!(&error, Error::Io { source, .. } if source.kind() == io::ErrorKind::Other)
                    && started.elapsed() >= self.config.request_timeout;
                if retried_out {
                    Err(timed_out(format!("; last error: {e}")))
                } else {
                    Err(error)
                }
            }
            Err(Interrupted::TimedOut) => Err(timed_out(String::new())),
            Err(Interrupted::ShutDown) => Err(Error::io(
                path,
                io::Error::other(format!(
                    "object storage {}: {op} of key {key} interrupted: the store is closing",
                    self.name
                )),
            )),
        }
    }

    fn failed(&self, op: &str, path: &Path, key: &Key, e: &object_store::Error) -> Error {
        let kind = match e {
            object_store::Error::NotFound { .. } => io::ErrorKind::NotFound,
            object_store::Error::AlreadyExists { .. }
            | object_store::Error::Precondition { .. } => io::ErrorKind::AlreadyExists,
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. } => io::ErrorKind::PermissionDenied,
            _ => io::ErrorKind::Other,
        };
        Error::io(
            path,
            io::Error::new(
                kind,
                format!(
                    "object storage {}: {op} of key {key} failed: {e}",
                    self.name
                ),
            ),
        )
    }

    fn list_dir(&self, dir: &Path) -> Result<object_store::ListResult> {
        let key = self.key_of(dir)?;
        let store = Arc::clone(&self.store);
        let prefix = key.clone();
        self.call("LIST", dir, &key, 0, async move {
            let prefix = (!prefix.as_ref().is_empty()).then_some(prefix);
            store.list_with_delimiter(prefix.as_ref()).await
        })
    }

    fn list_all(&self, dir: &Path) -> Result<Vec<Key>> {
        let key = self.key_of(dir)?;
        let store = Arc::clone(&self.store);
        let prefix = key.clone();
        self.call("LIST", dir, &key, 0, async move {
            let prefix = (!prefix.as_ref().is_empty()).then_some(prefix);
            let metas: Vec<_> = store.list(prefix.as_ref()).try_collect().await?;
            Ok(metas.into_iter().map(|m| m.location).collect())
        })
    }

    fn head(&self, path: &Path) -> Result<Option<u64>> {
        let key = self.key_of(path)?;
        let store = Arc::clone(&self.store);
        let location = key.clone();
        let meta = self.call("HEAD", path, &key, 0, async move {
            match store.head(&location).await {
                Ok(meta) => Ok(Some(meta.size)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        })?;
        Ok(meta)
    }

    fn not_found(&self, path: &Path) -> Error {
        Error::io(
            path,
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no such object in object storage {}", self.name),
            ),
        )
    }
}

fn part(name: &str) -> std::result::Result<PathPart<'static>, String> {
    PathPart::parse(name)
        .map(|p| PathPart::from(p.as_ref().to_owned()))
        .map_err(|e| e.to_string())
        .and_then(|owned| {
            // `PathPart::from(String)` escapes; a name it would change is
            // one that cannot round-trip through a listing.
            if owned.as_ref() == name {
                Ok(owned)
            } else {
                Err(format!("{name:?} holds characters object keys avoid"))
            }
        })
}

impl FileStore for ObjectFileStore {
    fn create(&self, path: &Path) -> Result<Box<dyn FileWriter>> {
        let key = self.inner.key_of(path)?;
        // Fail fast; `finish` re-checks atomically with its conditional PUT.
        if self.inner.head(path)?.is_some() {
            return Err(already_exists(path));
        }
        Ok(Box::new(ObjectWriter {
            inner: Arc::clone(&self.inner),
            path: path.to_path_buf(),
            key,
            buffer: Some(PutPayloadMut::new()),
            written: 0,
        }))
    }

    /// The conditional `PUT` alone: no `HEAD` first, which on every log
    /// publication cost a round trip (a refusal is the same
    /// `AlreadyExists`).
    fn publish(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let len = bytes.len() as u64;
        let key = self.inner.key_of(path)?;
        self.inner.check_object_size(path, &key, len)?;
        let payload = PutPayload::from(Bytes::copy_from_slice(bytes));
        self.inner.put_if_absent(path, &key, payload, len)
    }

    /// On a shared directory, the publication without fsyncs (module
    /// docs, "Visible before durable"); elsewhere `publish`.
    fn publish_visible(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let Some(shared) = &self.inner.shared_directory else {
            return self.publish(path, bytes);
        };
        let len = bytes.len() as u64;
        let key = self.inner.key_of(path)?;
        self.inner.check_object_size(path, &key, len)?;
        let payload = PutPayload::from(Bytes::copy_from_slice(bytes));
        self.inner
            .put_if_absent_on(&shared.unsynced, path, &key, payload, len)
    }

    /// A shared directory appends in place (the log's segments); object
    /// storage cannot.
    fn can_append(&self) -> bool {
        self.inner
            .shared_directory
            .as_ref()
            .is_some_and(|shared| shared.appends)
    }

    /// The file itself, opened with `O_APPEND` and created only if absent
    /// (`O_EXCL`): a log segment's bytes go to the file system one
    /// `write(2)` per batch, with no object-store call on the way.
    fn create_appendable(&self, path: &Path) -> Result<Box<dyn AppendableFile>> {
        let Some(shared) = self.inner.shared_directory.as_ref().filter(|s| s.appends) else {
            return Err(Error::io(
                path,
                io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!(
                        "object storage {} does not append to objects",
                        self.inner.name
                    ),
                ),
            ));
        };
        let key = self.inner.key_of(path)?;
        let file_path = shared.dir.join(key.as_ref());
        let parent = file_path
            .parent()
            .ok_or_else(|| Error::invalid(format!("{} has no directory", file_path.display())))?;
        // The directory may be removed between its creation and the open
        // when the last file in it is deleted (the store cleans up empty
        // directories): create it again and retry.
        let mut attempts = 0;
        let file = loop {
            attempts += 1;
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            match std::fs::OpenOptions::new()
                .append(true)
                .create_new(true)
                .open(&file_path)
            {
                Ok(file) => break file,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(already_exists(path))
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound && attempts < 5 => continue,
                Err(e) => return Err(Error::io(&file_path, e)),
            }
        };
        Ok(Box::new(SharedAppendableFile {
            file,
            path: file_path,
            name_synced: false,
        }))
    }

    fn sync_published(&self, paths: &[PathBuf]) -> Result<()> {
        let Some(shared) = &self.inner.shared_directory else {
            return Ok(());
        };
        let mut dirs = std::collections::BTreeSet::new();
        for path in paths {
            let key = self.inner.key_of(path)?;
            let file = shared.dir.join(key.as_ref());
            match std::fs::File::open(&file).and_then(|f| f.sync_all()) {
                Ok(()) => {}
                // Retired since: every region flushed past it.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(&file, e)),
            }
            if let Some(dir) = file.parent() {
                dirs.insert(dir.to_path_buf());
            }
        }
        for dir in dirs {
            std::fs::File::open(&dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| Error::io(&dir, e))?;
        }
        Ok(())
    }

    fn read_range(&self, path: &Path, offset: u64, len: usize) -> Result<Bytes> {
        if len == 0 {
            return Ok(Bytes::new());
        }
        let key = self.inner.key_of(path)?;
        let end = offset
            .checked_add(len as u64)
            .ok_or_else(|| past_end(path, offset, len, u64::MAX))?;
        let store = Arc::clone(&self.inner.store);
        let location = key.clone();
        let got = self.inner.call("GET", path, &key, len as u64, async move {
            let options = GetOptions {
                range: Some(GetRange::Bounded(offset..end)),
                ..GetOptions::default()
            };
            match store.get_opts(&location, options).await {
                Ok(result) => {
                    let size = result.meta.size;
                    let bytes = result.bytes().await?;
                    Ok(if bytes.len() == len {
                        Ranged::Read(bytes)
                    } else {
                        Ranged::PastEnd(size)
                    })
                }
                Err(object_store::Error::NotFound { .. }) => Ok(Ranged::Missing),
                // A range starting at or past the end is refused (S3
                // answers 416); tell that apart from other failures by the
                // object's size, within the same time bound.
                Err(e) => match store.head(&location).await {
                    Ok(meta) if end > meta.size => Ok(Ranged::PastEnd(meta.size)),
                    _ => Err(e),
                },
            }
        })?;
        match got {
            Ranged::Read(bytes) => Ok(bytes),
            Ranged::PastEnd(size) => Err(past_end(path, offset, len, size)),
            Ranged::Missing => Err(self.inner.not_found(path)),
        }
    }

    fn size(&self, path: &Path) -> Result<u64> {
        self.inner
            .head(path)?
            .ok_or_else(|| self.inner.not_found(path))
    }

    /// On a shared directory a `stat` of the file, without a hop through
    /// the object-store runtime: the log asks after every batch whether
    /// its segment was fenced.
    fn exists(&self, path: &Path) -> Result<bool> {
        if let Some(shared) = &self.inner.shared_directory {
            let key = self.inner.key_of(path)?;
            let file = shared.dir.join(key.as_ref());
            return match std::fs::metadata(&file) {
                Ok(meta) => Ok(meta.is_file()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(Error::io(&file, e)),
            };
        }
        Ok(self.inner.head(path)?.is_some())
    }

    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let listed = self.inner.list_dir(dir)?;
        Ok(self
            .inner
            .sorted_paths(listed.objects.iter().map(|m| &m.location)))
    }

    fn delete(&self, path: &Path) -> Result<()> {
        let key = self.inner.key_of(path)?;
        let store = Arc::clone(&self.inner.store);
        let location = key.clone();
        self.inner.call("DELETE", path, &key, 0, async move {
            match store.delete(&location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        })
    }

    fn list_dirs(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let listed = self.inner.list_dir(dir)?;
        Ok(self.inner.sorted_paths(&listed.common_prefixes))
    }

    fn list_prefix(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        Ok(self.inner.sorted_paths(&self.inner.list_all(dir)?))
    }

    fn delete_prefix(&self, dir: &Path) -> Result<()> {
        let keys = self.inner.list_all(dir)?;
        if keys.is_empty() {
            return Ok(());
        }
        let key = self.inner.key_of(dir)?;
        let store = Arc::clone(&self.inner.store);
        self.inner
            .call("DELETE (prefix)", dir, &key, 0, async move {
                let locations = futures_util::stream::iter(keys.into_iter().map(Ok)).boxed();
                let mut deleted = store.delete_stream(locations);
                while let Some(outcome) = deleted.next().await {
                    match outcome {
                        Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            })
    }
}

/// What a ranged GET found.
enum Ranged {
    /// Exactly the bytes asked for.
    Read(Bytes),
    /// The range ends past the end of the object of this size.
    PastEnd(u64),
    /// No such object.
    Missing,
}

/// An object being written: buffered in memory, published by one PUT.
#[derive(Debug)]
struct ObjectWriter {
    inner: Arc<Inner>,
    path: PathBuf,
    key: Key,
    /// `None` once finished.
    buffer: Option<PutPayloadMut>,
    written: u64,
}

impl FileWriter for ObjectWriter {
    fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        let buffer = self
            .buffer
            .as_mut()
            .ok_or_else(|| Error::invalid("write after finish"))?;
        let total = self.written.saturating_add(buf.len() as u64);
        self.inner.check_object_size(&self.path, &self.key, total)?;
        buffer.extend_from_slice(buf);
        self.written = total;
        Ok(())
    }

    fn bytes_written(&self) -> u64 {
        self.written
    }

    fn finish(mut self: Box<Self>) -> Result<u64> {
        let payload = self
            .buffer
            .take()
            .ok_or_else(|| Error::invalid("finish called twice"))?
            .freeze();
        self.inner
            .put_if_absent(&self.path, &self.key, payload, self.written)?;
        Ok(self.written)
    }
}

impl Inner {
    /// Refuses an object of `total` bytes above `max_object_bytes`: it is
    /// sent in one `PUT`.
    fn check_object_size(&self, path: &Path, key: &Key, total: u64) -> Result<()> {
        let limit = self.config.max_object_bytes;
        if total <= limit {
            return Ok(());
        }
        Err(Error::io(
            path,
            io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!(
                    "object storage {}: key {key} would exceed {limit} bytes, the largest \
                     object written in one PUT (storage setting max_object_bytes)",
                    self.name
                ),
            ),
        ))
    }

    /// One `PUT` with `If-None-Match: *` (`PutMode::Create`): the
    /// create-if-absent publication of `finish` and `publish`.
    fn put_if_absent(&self, path: &Path, key: &Key, payload: PutPayload, len: u64) -> Result<()> {
        self.put_if_absent_on(&self.store, path, key, payload, len)
    }

    fn put_if_absent_on(
        &self,
        store: &Arc<dyn ObjectStore>,
        path: &Path,
        key: &Key,
        payload: PutPayload,
        len: u64,
    ) -> Result<()> {
        let store = Arc::clone(store);
        let location = key.clone();
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        self.call("PUT", path, key, len, async move {
            store.put_opts(&location, payload, options).await
        })?;
        Ok(())
    }
}

/// A log segment on a shared directory ([`ObjectFileStore::create_appendable`]).
#[derive(Debug)]
struct SharedAppendableFile {
    file: std::fs::File,
    path: PathBuf,
    /// The directory entry was fsynced (once is enough).
    name_synced: bool,
}

impl AppendableFile for SharedAppendableFile {
    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        use std::io::Write;
        self.file
            .write_all(bytes)
            .map_err(|e| Error::io(&self.path, e))
    }

    fn truncate(&mut self, len: u64) -> Result<()> {
        self.file.set_len(len).map_err(|e| Error::io(&self.path, e))
    }

    fn sync(&mut self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(&self.path, e))?;
        if !self.name_synced {
            if let Some(dir) = self.path.parent() {
                std::fs::File::open(dir)
                    .and_then(|d| d.sync_all())
                    .map_err(|e| Error::io(dir, e))?;
            }
            self.name_synced = true;
        }
        Ok(())
    }
}
