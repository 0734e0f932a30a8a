//! [`CachedFileStore`]: a bounded on-disk cache of byte ranges in front of
//! a remote [`FileStore`].
//!
//! Published files never change (the `FileStore` contract), so a range
//! once read stays true until its file is deleted. The cache keeps
//! fixed-size, aligned **parts** of files (part `i` of a file is bytes
//! `i * part_bytes .. (i + 1) * part_bytes`, the last one shorter) as files
//! under a local directory, and forgets the least recently used parts when
//! their total passes the byte budget. The block cache above the file store
//! keeps decoded blocks in memory; this one saves the remote requests of
//! everything that falls out of it, and keeps serving while the remote store
//! is unreachable.
//!
//! # Layout of the cache directory
//!
//! ```text
//! <cache dir>/
//!   IDENTITY                      the store the cache belongs to (its URL)
//!                                 and the part size
//!   parts/<path below the root>/<part index>-<length>
//!   tmp/<n>.part                  parts being written
//! ```
//!
//! A cache directory serves one store with one part size: when `IDENTITY`
//! names another store or part size (a part index means another range
//! then), every part is dropped at open.
//!
//! # A read, step by step
//!
//! 1. The range is cut into the parts it touches.
//! 2. Each part found in the index is read from its file, after checking
//!    that the file's length is the one in its name (a torn or truncated file
//!    is deleted and counts as missing). Hits move the part to the front of
//!    the recency order.
//! 3. Each run of consecutive missing parts is fetched from the remote store
//!    in one ranged read (bounded by the file's size, which is asked for once
//!    and remembered: files never change size).
//! 4. Fetched parts are written to `tmp/`, renamed into place (a reader never
//!    sees a partial part file) and indexed; then the least recently used
//!    parts are deleted until the total is within the budget.
//! 5. The requested bytes are cut out of the parts.
//!
//! So a read whose parts are all cached makes no remote request at all, and
//! one that needs the remote store while it is down fails with the remote
//! store's (time-bounded) error.
//!
//! Writes, listings, `exists` and deletes go to the remote store; deleting
//! a file (or a prefix) also drops its cached parts. The index is rebuilt
//! from the directory at open, so the budget holds across restarts.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;

use basalt_engine::fs::{past_end, AppendableFile, FileCacheStats, FileStore, FileWriter};
use basalt_engine::wal::object::OBJECT_WAL_DIR;
use basalt_types::{Error, Result};

const IDENTITY_FILE: &str = "IDENTITY";
const PARTS_DIR: &str = "parts";
const TMP_DIR: &str = "tmp";

/// Settings of a [`CachedFileStore`].
#[derive(Debug, Clone)]
pub struct DiskCacheConfig {
    /// The local directory of the cache (created when missing).
    pub dir: PathBuf,
    /// The budget: cached parts beyond this many bytes are evicted, least
    /// recently used first.
    pub capacity_bytes: u64,
    /// The size of a part (the unit cached and fetched).
    pub part_bytes: u64,
    /// What the cache caches (the storage URL); a cache directory found
    /// holding another store's parts is emptied.
    pub identity: String,
}

/// Counters of a [`CachedFileStore`] since it opened, and its size now:
/// the engine's [`FileCacheStats`], which `FileStore::cache_stats` carries
/// to the database's metrics.
pub type DiskCacheStats = FileCacheStats;

/// One cached part: a file (by its path below the root) and a part index.
type PartId = (PathBuf, u64);

#[derive(Debug, Clone, Copy)]
struct Entry {
    len: u64,
    /// Recency: larger is more recent.
    tick: u64,
}

#[derive(Debug, Default)]
struct Index {
    entries: BTreeMap<PartId, Entry>,
    by_tick: BTreeMap<u64, PartId>,
    next_tick: u64,
    bytes: u64,
}

impl Index {
    fn touch(&mut self, id: &PartId) -> Option<u64> {
        let tick = self.next_tick;
        let entry = self.entries.get_mut(id)?;
        self.by_tick.remove(&entry.tick);
        entry.tick = tick;
        self.by_tick.insert(tick, id.clone());
        self.next_tick += 1;
        Some(entry.len)
    }

    fn insert(&mut self, id: PartId, len: u64) {
        self.remove(&id);
        let tick = self.next_tick;
        self.next_tick += 1;
        self.by_tick.insert(tick, id.clone());
        self.entries.insert(id, Entry { len, tick });
        self.bytes += len;
    }

    fn remove(&mut self, id: &PartId) -> Option<Entry> {
        let entry = self.entries.remove(id)?;
        self.by_tick.remove(&entry.tick);
        self.bytes -= entry.len;
        Some(entry)
    }

    /// The least recently used part.
    fn oldest(&self) -> Option<PartId> {
        self.by_tick.values().next().cloned()
    }

    /// Every part of files at or below `prefix`.
    fn below(&self, prefix: &Path) -> Vec<PartId> {
        self.entries
            .range((prefix.to_path_buf(), 0)..)
            .take_while(|((path, _), _)| path.starts_with(prefix))
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// A [`FileStore`] that caches ranges of another store's files on local
/// disk. See the module docs.
#[derive(Debug)]
pub struct CachedFileStore {
    inner: Arc<dyn FileStore>,
    /// Paths below this are cached (by their part below it).
    root: PathBuf,
    config: DiskCacheConfig,
    parts_dir: PathBuf,
    tmp_dir: PathBuf,
    index: Mutex<Index>,
    /// Sizes of files seen: files never change, so one request each.
    sizes: Mutex<HashMap<PathBuf, u64>>,
    tmp_counter: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    hit_bytes: AtomicU64,
    fetched_bytes: AtomicU64,
    evictions: AtomicU64,
    discarded: AtomicU64,
}

/// Most entries kept in the size memo before it is emptied (it refills
/// with one request per file).
const MAX_REMEMBERED_SIZES: usize = 1 << 20;

impl CachedFileStore {
    /// Opens the cache in `config.dir` in front of `inner`, for files below
    /// `root`: rebuilds the index from the parts found there (dropping
    /// damaged ones, and all of them if the cache belonged to another
    /// store), then evicts down to the budget.
    pub fn open(
        inner: Arc<dyn FileStore>,
        root: impl Into<PathBuf>,
        config: DiskCacheConfig,
    ) -> Result<CachedFileStore> {
        if config.part_bytes == 0 {
            return Err(Error::invalid("the disk cache's part size must not be 0"));
        }
        let dir = config.dir.clone();
        let parts_dir = dir.join(PARTS_DIR);
        let tmp_dir = dir.join(TMP_DIR);
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let identity_path = dir.join(IDENTITY_FILE);
        let expected = format!("{}\npart_bytes {}\n", config.identity, config.part_bytes);
        let identity = match fs::read_to_string(&identity_path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io(&identity_path, e)),
        };
        if identity.as_deref() != Some(expected.as_str()) {
            remove_dir_if_present(&parts_dir)?;
            fs::write(&identity_path, &expected).map_err(|e| Error::io(&identity_path, e))?;
        }
        // Parts being written when the process stopped are incomplete.
        remove_dir_if_present(&tmp_dir)?;
        fs::create_dir_all(&tmp_dir).map_err(|e| Error::io(&tmp_dir, e))?;
        fs::create_dir_all(&parts_dir).map_err(|e| Error::io(&parts_dir, e))?;
        let store = CachedFileStore {
            inner,
            root: root.into(),
            config,
            parts_dir,
            tmp_dir,
            index: Mutex::new(Index::default()),
            sizes: Mutex::new(HashMap::new()),
            tmp_counter: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            hit_bytes: AtomicU64::new(0),
            fetched_bytes: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
        };
        store.rebuild_index()?;
        store.evict();
        Ok(store)
    }

    /// The store behind the cache.
    pub fn inner(&self) -> &Arc<dyn FileStore> {
        &self.inner
    }

    /// Counters and current size.
    pub fn stats(&self) -> DiskCacheStats {
        let (parts, bytes) = {
            let index = self.index.lock();
            (index.entries.len() as u64, index.bytes)
        };
        DiskCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            hit_bytes: self.hit_bytes.load(Ordering::Relaxed),
            fetched_bytes: self.fetched_bytes.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            discarded: self.discarded.load(Ordering::Relaxed),
            parts,
            bytes,
            capacity_bytes: self.config.capacity_bytes,
        }
    }

    /// The part of `path` below the root, when it is cacheable.
    /// The path below the root of a file the cache may keep parts and the
    /// size of: not the write-ahead log's, which a shared directory's log
    /// appends to (a cached part or size would go stale) and which only
    /// recovery reads, once.
    fn relative(&self, path: &Path) -> Option<PathBuf> {
        let relative = path.strip_prefix(&self.root).ok()?;
        let plain = relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
        let in_log =
            relative.components().next() == Some(Component::Normal(OBJECT_WAL_DIR.as_ref()));
        (plain && !in_log && relative.components().next().is_some()).then(|| relative.to_path_buf())
    }

    fn part_file(&self, id: &PartId, len: u64) -> PathBuf {
        self.parts_dir.join(&id.0).join(format!("{}-{len}", id.1))
    }

    /// Walks `parts/` and indexes every part file whose length matches its
    /// name, oldest (by modification time) first; deletes the others.
    fn rebuild_index(&self) -> Result<()> {
        let mut found: Vec<(std::time::SystemTime, PartId, u64)> = Vec::new();
        let mut stack = vec![self.parts_dir.clone()];
        while let Some(dir) = stack.pop() {
            let entries = fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?;
            for entry in entries {
                let entry = entry.map_err(|e| Error::io(&dir, e))?;
                let path = entry.path();
                let meta = entry.metadata().map_err(|e| Error::io(&path, e))?;
                if meta.is_dir() {
                    stack.push(path);
                    continue;
                }
                let parsed = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(parse_part_name);
                let file_dir = dir.strip_prefix(&self.parts_dir).ok();
                match (parsed, file_dir) {
                    (Some((index, len)), Some(file)) if meta.len() == len => {
                        let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
                        found.push((modified, (file.to_path_buf(), index), len));
                    }
                    _ => {
                        fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
                        self.discarded.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        found.sort_by_key(|entry| entry.0);
        let mut index = self.index.lock();
        for (_, id, len) in found {
            index.insert(id, len);
        }
        Ok(())
    }

    /// A cached part's bytes `from..to` (relative to the part), or `None`
    /// when it is not cached (or its file is damaged: then it is dropped).
    fn read_cached(&self, id: &PartId, from: u64, to: u64) -> Option<Bytes> {
        let len = self.index.lock().touch(id)?;
        let file = self.part_file(id, len);
        let to = to.min(len);
        let read = || -> io::Result<Bytes> {
            let f = File::open(&file)?;
            if f.metadata()?.len() != len {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "part file has the wrong length",
                ));
            }
            let mut buf = vec![0u8; usize::try_from(to.saturating_sub(from)).unwrap_or(0)];
            f.read_exact_at(&mut buf, from)?;
            Ok(Bytes::from(buf))
        };
        match read() {
            Ok(bytes) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                self.hit_bytes
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                Some(bytes)
            }
            Err(e) => {
                // Evicted meanwhile (NotFound) or damaged: fetch it again.
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::warn!(file = %file.display(), error = %e, "dropping a damaged disk cache part");
                    let _ = fs::remove_file(&file);
                }
                self.index.lock().remove(id);
                self.discarded.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Stores a fetched part: written under `tmp/`, renamed into place,
    /// indexed, then the cache evicts down to its budget. A part that cannot
    /// be stored (a full local disk) is simply not cached.
    fn store_part(&self, id: PartId, bytes: &[u8]) {
        let len = bytes.len() as u64;
        if len > self.config.capacity_bytes {
            return;
        }
        let n = self.tmp_counter.fetch_add(1, Ordering::Relaxed);
        let tmp = self.tmp_dir.join(format!("{n}.part"));
        let target = self.part_file(&id, len);
        let written = (|| -> io::Result<()> {
            fs::write(&tmp, bytes)?;
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::rename(&tmp, &target)
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            tracing::warn!(file = %target.display(), error = %e, "cannot write a disk cache part; reading on without caching it");
            return;
        }
        self.index.lock().insert(id, len);
        self.evict();
    }

    fn evict(&self) {
        loop {
            let victim = {
                let mut index = self.index.lock();
                if index.bytes <= self.config.capacity_bytes {
                    return;
                }
                let Some(id) = index.oldest() else { return };
                index.remove(&id).map(|entry| (id, entry.len))
            };
            if let Some((id, len)) = victim {
                let _ = fs::remove_file(self.part_file(&id, len));
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Drops the cached parts (and remembered sizes) of files at or below
    /// `relative`.
    fn forget(&self, path: &Path, relative: &Path) {
        let victims = {
            let mut index = self.index.lock();
            let ids = index.below(relative);
            ids.into_iter()
                .filter_map(|id| index.remove(&id).map(|e| (id, e.len)))
                .collect::<Vec<_>>()
        };
        for (id, len) in victims {
            let _ = fs::remove_file(self.part_file(&id, len));
        }
        let _ = fs::remove_dir_all(self.parts_dir.join(relative));
        self.sizes.lock().retain(|p, _| !p.starts_with(path));
    }

    fn remembered_size(&self, path: &Path) -> Result<u64> {
        if self.relative(path).is_none() {
            // Outside the cache's files (the log's may grow): ask each time.
            return self.inner.size(path);
        }
        if let Some(&size) = self.sizes.lock().get(path) {
            return Ok(size);
        }
        let size = self.inner.size(path)?;
        let mut sizes = self.sizes.lock();
        if sizes.len() >= MAX_REMEMBERED_SIZES {
            sizes.clear();
        }
        sizes.insert(path.to_path_buf(), size);
        Ok(size)
    }
}

fn parse_part_name(name: &str) -> Option<(u64, u64)> {
    let (index, len) = name.split_once('-')?;
    Some((index.parse().ok()?, len.parse().ok()?))
}

fn remove_dir_if_present(dir: &Path) -> Result<()> {
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(dir, e)),
    }
}

impl FileStore for CachedFileStore {
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

    fn can_append(&self) -> bool {
        self.inner.can_append()
    }

    fn create_appendable(&self, path: &Path) -> Result<Box<dyn AppendableFile>> {
        self.inner.create_appendable(path)
    }

    fn read_range(&self, path: &Path, offset: u64, len: usize) -> Result<Bytes> {
        if len == 0 {
            return Ok(Bytes::new());
        }
        // A zero budget caches nothing: read just the range, not its parts.
        let cacheable = self
            .relative(path)
            .filter(|_| self.config.capacity_bytes > 0);
        let Some(relative) = cacheable else {
            return self.inner.read_range(path, offset, len);
        };
        let part = self.config.part_bytes;
        let end = offset
            .checked_add(len as u64)
            .ok_or_else(|| past_end(path, offset, len, u64::MAX))?;
        let first = offset / part;
        let last = (end - 1) / part;
        // Part `index`'s start in the file, and the requested bytes
        // `from..to` within it.
        let cut = |index: u64| {
            let part_start = index * part;
            let from = offset.max(part_start) - part_start;
            let to = end.min(part_start + part) - part_start;
            (part_start, from, to)
        };
        // Step 2: what the cache has, each part cut to the requested range.
        let mut pieces: Vec<Option<Bytes>> = Vec::new();
        for index in first..=last {
            let (_, from, to) = cut(index);
            let id = (relative.clone(), index);
            pieces.push(self.read_cached(&id, from, to));
        }
        // A cached part shorter than the range asks for is the file's last:
        // the read goes past its end.
        for (i, piece) in pieces.iter().enumerate() {
            let (part_start, from, to) = cut(first + i as u64);
            if let Some(bytes) = piece {
                if (bytes.len() as u64) < to - from {
                    let size = part_start + from + bytes.len() as u64;
                    return Err(past_end(path, offset, len, size));
                }
            }
        }
        // Step 3: runs of missing parts, one remote read each.
        let mut i = 0;
        while i < pieces.len() {
            if pieces[i].is_some() {
                i += 1;
                continue;
            }
            let mut j = i;
            while j + 1 < pieces.len() && pieces[j + 1].is_none() {
                j += 1;
            }
            let size = self.remembered_size(path)?;
            let run_start = (first + i as u64) * part;
            let run_end = ((first + j as u64 + 1) * part).min(size);
            if run_start >= size || end > size {
                return Err(past_end(path, offset, len, size));
            }
            let run_len = usize::try_from(run_end - run_start)
                .map_err(|_| past_end(path, offset, len, size))?;
            let fetched = self.inner.read_range(path, run_start, run_len)?;
            self.misses.fetch_add((j - i + 1) as u64, Ordering::Relaxed);
            self.fetched_bytes
                .fetch_add(fetched.len() as u64, Ordering::Relaxed);
            // Step 4: keep each part; step 5 cuts the requested bytes.
            for (k, piece) in pieces.iter_mut().enumerate().take(j + 1).skip(i) {
                let index = first + k as u64;
                let (part_start, from, to) = cut(index);
                let within = part_start - run_start;
                let part_end = (part_start + part).min(size) - run_start;
                let bytes = fetched.slice(within as usize..part_end as usize);
                self.store_part((relative.clone(), index), &bytes);
                *piece = Some(bytes.slice(from as usize..to as usize));
            }
            i = j + 1;
        }
        if pieces.len() == 1 {
            if let Some(Some(bytes)) = pieces.pop() {
                return Ok(bytes);
            }
        }
        let mut out = BytesMut::with_capacity(len);
        for piece in pieces.into_iter().flatten() {
            out.extend_from_slice(&piece);
        }
        Ok(out.freeze())
    }

    fn size(&self, path: &Path) -> Result<u64> {
        self.remembered_size(path)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        self.inner.exists(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        self.inner.list(dir)
    }

    fn delete(&self, path: &Path) -> Result<()> {
        self.inner.delete(path)?;
        match self.relative(path) {
            Some(relative) => self.forget(path, &relative),
            None => {
                self.sizes.lock().remove(path);
            }
        }
        Ok(())
    }

    fn list_dirs(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        self.inner.list_dirs(dir)
    }

    fn list_prefix(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        self.inner.list_prefix(dir)
    }

    fn delete_prefix(&self, dir: &Path) -> Result<()> {
        self.inner.delete_prefix(dir)?;
        match self.relative(dir) {
            Some(relative) => self.forget(dir, &relative),
            None => self.sizes.lock().retain(|p, _| !p.starts_with(dir)),
        }
        Ok(())
    }

    fn remove_unfinished(&self, dir: &Path) -> Result<usize> {
        self.inner.remove_unfinished(dir)
    }

    /// This cache's counters (not the store's behind it: the cache is the
    /// one that counts).
    fn cache_stats(&self) -> Option<FileCacheStats> {
        Some(self.stats())
    }
}
