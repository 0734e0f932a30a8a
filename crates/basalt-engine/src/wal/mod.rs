//! The write-ahead log.
//!
//! One log per database, shared by every region (like HBase's
//! per-RegionServer WAL). Each record is one row mutation of one region, so
//! replay is atomic per row mutation. The log is a directory of numbered
//! segment files; the on-disk format is described in `docs/wal-format.md`.
//!
//! Writers call [`Wal::append`], which only encodes the edit into an
//! in-memory buffer and hands back a log sequence number (LSN), then
//! [`Wal::sync`] with the durability they need. Syncers take turns as the
//! *leader* of a group commit: the leader takes everything buffered so far,
//! writes it with one `write(2)` (plus one `fdatasync` if anyone in the
//! group asked for [`Durability::FsyncWal`]) while new appends keep filling
//! the next buffer, then wakes every waiter its write covered.
//!
//! A failed write or fsync puts the log in a permanent failed state: the
//! bytes that reached the file are unknown (and after a failed fsync Linux
//! may have dropped dirty pages), so retrying could hide a gap. Every later
//! append and sync fails with [`Error::WalFailed`].

mod format;
pub mod inspect;
mod segment;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use basalt_types::{Cell, Durability, Error, Result};
use parking_lot::{Condvar, Mutex, MutexGuard};

pub use format::{FORMAT_VERSION, MAX_RECORD_PAYLOAD};
use segment::SegmentWriter;

/// Tuning knobs of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalOptions {
    /// Once the current segment reaches this size (after a group write), it
    /// is fsynced and a new segment is started. A segment may overshoot by
    /// one group's worth of records. Default 64 MiB.
    pub segment_max_bytes: u64,
    /// How often the background thread writes data appended with
    /// [`Durability::AsyncWal`] (and anything else still buffered).
    /// Default 100 ms; values under 1 ms are treated as 1 ms.
    pub async_flush_interval: Duration,
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions {
            segment_max_bytes: 64 << 20,
            async_flush_interval: Duration::from_millis(100),
        }
    }
}

/// One logged row mutation of one region. All cells have the same row.
///
/// The row is stored once per record, and cells carry no sequence id of
/// their own in the log: decoding sets every cell's `row` and `sequence_id`
/// from the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalEdit {
    /// The region the mutation belongs to.
    pub region_id: u64,
    /// The region's sequence id for this mutation.
    pub sequence_id: u64,
    /// The cells written; all in one row.
    pub cells: Vec<Cell>,
}

/// The incomplete last record that replay dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// The segment it was in (always the last one).
    pub path: PathBuf,
    /// Where the dropped record started; the file now ends here.
    pub offset: u64,
    /// How many bytes were truncated away.
    pub dropped_bytes: u64,
    /// Why the record was judged torn.
    pub reason: String,
}

/// What [`Wal::open`] found in the existing log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// Segment files replayed.
    pub segments: usize,
    /// Records (edits) passed to `apply`.
    pub records: u64,
    /// The torn last record that was dropped, if there was one.
    pub torn_tail: Option<TornTail>,
}

/// What the log knows about one segment file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Segment id (the number in the file name).
    pub id: u64,
    /// The file.
    pub path: PathBuf,
    /// Bytes written to the file, header included.
    pub size_bytes: u64,
    /// Records written to the file.
    pub records: u64,
    /// For every region with records in this segment, the highest sequence
    /// id among them. A segment can be deleted once every region listed has
    /// flushed its memstore past that id (see docs/wal-format.md).
    pub max_sequence_ids: BTreeMap<u64, u64>,
    /// True for the segment new records go to; all others are complete and
    /// fsynced.
    pub active: bool,
}

/// Counters of the log's work since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalStats {
    /// Edits appended.
    pub appends: u64,
    /// Group writes: one `write_all` of a leader's whole batch.
    pub writes: u64,
    /// Records those writes carried.
    pub records_written: u64,
    /// Bytes those writes carried.
    pub bytes_written: u64,
    /// `fdatasync` calls on segments.
    pub fsyncs: u64,
    /// Segments started because the previous one was full.
    pub rolls: u64,
}

/// The write-ahead log. Shared by many threads through `Arc<Wal>`.
pub struct Wal {
    inner: Arc<Inner>,
    /// The background flusher; taken (and joined) by `close`.
    flusher: Mutex<Option<JoinHandle<()>>>,
}

/// Everything the background flusher shares with the `Wal`.
struct Inner {
    dir: PathBuf,
    options: WalOptions,
    /// The append mutex. Never held across I/O.
    state: Mutex<State>,
    /// Notified whenever a leader publishes a new written or synced LSN,
    /// finishes its round, or fails.
    round_done: Condvar,
    /// The current segment; `None` once closed. Only the leader locks it
    /// (`State::leader_active` already guarantees there is one leader; the
    /// mutex is how that exclusivity is expressed without `unsafe`).
    writer: Mutex<Option<SegmentWriter>>,
    /// Replayed and written segments, oldest first; the last is active.
    segments: Mutex<Vec<SegmentInfo>>,
    /// Set by `close` to stop the flusher; paired with `stop_signal`.
    stop: Mutex<bool>,
    stop_signal: Condvar,
    stats: Counters,
    #[cfg(test)]
    faults: tests::Faults,
}

#[derive(Default)]
struct Counters {
    appends: AtomicU64,
    writes: AtomicU64,
    records_written: AtomicU64,
    bytes_written: AtomicU64,
    fsyncs: AtomicU64,
    rolls: AtomicU64,
}

/// Group-commit state, under the append mutex.
///
/// Invariants: `synced_lsn <= written_lsn < next_lsn`; `buf` holds exactly
/// the records with LSNs `written_lsn + 1 ..= next_lsn - 1` that no leader
/// has taken yet, in LSN order (a leader's batch in flight is the gap
/// between `written_lsn` and the first LSN left in `buf`).
struct State {
    /// LSN the next append gets. LSNs start at 1 on every open; 0 means
    /// "nothing".
    next_lsn: u64,
    /// Encoded records waiting for a leader.
    buf: Vec<u8>,
    /// Records in `buf`.
    buf_records: u64,
    /// Highest sequence id per region among the records in `buf`.
    buf_regions: HashMap<u64, u64>,
    /// A drained buffer kept to avoid reallocating on every round.
    spare: Vec<u8>,
    /// Every LSN up to this one has been handed to the OS.
    written_lsn: u64,
    /// Every LSN up to this one has been fdatasynced.
    synced_lsn: u64,
    /// Highest LSN some waiter needs fsynced.
    fsync_wanted: u64,
    /// A leader is doing I/O right now.
    leader_active: bool,
    /// Why the log failed; sticky.
    failed: Option<String>,
    /// `close` was called: appends are refused.
    closed: bool,
}

/// A drained batch larger than this is freed instead of kept as `spare`,
/// so one burst does not pin memory for the life of the log.
const MAX_SPARE_CAPACITY: usize = 4 << 20;

impl Wal {
    /// Opens (creating if needed) the log directory, replays every existing
    /// segment in order, calling `apply` for each edit, then starts a fresh
    /// segment for new appends.
    ///
    /// A torn last record of the last segment is truncated away and
    /// reported; any other damage fails with [`Error::Corruption`]. An error
    /// from `apply` stops replay and is returned as is (edits before it
    /// have been applied). Segments left without records are deleted.
    pub fn open(
        dir: &Path,
        options: WalOptions,
        mut apply: impl FnMut(WalEdit) -> Result<()>,
    ) -> Result<(Arc<Wal>, ReplayReport)> {
        if !dir.exists() {
            fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                segment::sync_dir(parent)?;
            }
        }

        let listed = segment::list_segments(dir)?;
        let mut report = ReplayReport::default();
        let mut segments = Vec::with_capacity(listed.len() + 1);
        for (i, (id, path)) in listed.iter().enumerate() {
            let is_last = i + 1 == listed.len();
            let scanned = segment::replay_segment(path, *id, is_last, &mut apply)?;
            report.segments += 1;
            report.records += scanned.info.records;
            if scanned.torn_tail.is_some() {
                report.torn_tail = scanned.torn_tail;
            }
            segments.push(scanned.info);
        }

        // Empty segments hold nothing to replay or to wait for; without this
        // every open/close cycle would leave one behind.
        let before = segments.len();
        let mut kept = Vec::with_capacity(before + 1);
        for info in segments {
            if info.records == 0 {
                fs::remove_file(&info.path).map_err(|e| Error::io(&info.path, e))?;
            } else {
                kept.push(info);
            }
        }
        if kept.len() != before {
            segment::sync_dir(dir)?;
        }

        // Continue after the highest id seen, including just-deleted ones,
        // so a name is not reused for different contents while it may
        // still be in someone's log output.
        let next_id = match listed.last() {
            None => 1,
            Some((id, _)) => id
                .checked_add(1)
                .ok_or_else(|| Error::WalFailed("segment ids exhausted".into()))?,
        };
        let writer = SegmentWriter::create(dir, next_id)?;
        kept.push(SegmentInfo {
            id: writer.id,
            path: writer.path.clone(),
            size_bytes: writer.size,
            records: 0,
            max_sequence_ids: BTreeMap::new(),
            active: true,
        });

        let mut options = options;
        options.async_flush_interval = options.async_flush_interval.max(Duration::from_millis(1));
        let inner = Arc::new(Inner {
            dir: dir.to_path_buf(),
            options,
            state: Mutex::new(State {
                next_lsn: 1,
                buf: Vec::new(),
                buf_records: 0,
                buf_regions: HashMap::new(),
                spare: Vec::new(),
                written_lsn: 0,
                synced_lsn: 0,
                fsync_wanted: 0,
                leader_active: false,
                failed: None,
                closed: false,
            }),
            round_done: Condvar::new(),
            writer: Mutex::new(Some(writer)),
            segments: Mutex::new(kept),
            stop: Mutex::new(false),
            stop_signal: Condvar::new(),
            stats: Counters::default(),
            #[cfg(test)]
            faults: tests::Faults::default(),
        });

        let flusher_inner = Arc::clone(&inner);
        let flusher = std::thread::Builder::new()
            .name("basalt-wal-flush".into())
            .spawn(move || flusher_inner.run_flusher())
            .map_err(|e| Error::io(dir, e))?;

        let wal = Arc::new(Wal {
            inner,
            flusher: Mutex::new(Some(flusher)),
        });
        Ok((wal, report))
    }

    /// Buffers one edit (cheap, no I/O) and returns its log position (an
    /// LSN, monotonically increasing within this open log).
    ///
    /// Fails with [`Error::InvalidArgument`] if the cells span several rows
    /// or the edit exceeds [`MAX_RECORD_PAYLOAD`], [`Error::WalFailed`] after
    /// a write failure and [`Error::Closed`] after [`Wal::close`].
    pub fn append(&self, edit: &WalEdit) -> Result<u64> {
        // Encode before taking the append mutex: only the copy happens
        // under it.
        let mut record = Vec::new();
        format::encode_record(edit, &mut record)?;

        let mut st = self.inner.state.lock();
        if let Some(cause) = &st.failed {
            return Err(Error::WalFailed(cause.clone()));
        }
        if st.closed {
            return Err(closed_error());
        }
        st.buf.extend_from_slice(&record);
        st.buf_records += 1;
        let max = st.buf_regions.entry(edit.region_id).or_insert(0);
        *max = (*max).max(edit.sequence_id);
        let lsn = st.next_lsn;
        st.next_lsn += 1;
        self.inner.stats.appends.fetch_add(1, Ordering::Relaxed);
        Ok(lsn)
    }

    /// Waits until the edit at `lsn` is durable as `durability` asks:
    /// `SkipWal`/`AsyncWal` return at once (`AsyncWal` data is written by a
    /// background thread within `async_flush_interval`), `SyncWal` waits
    /// until the bytes were written to the OS (write(2) done), `FsyncWal`
    /// until they are fsynced (fdatasync).
    ///
    /// Fails with [`Error::WalFailed`] once the log has failed, and with
    /// [`Error::InvalidArgument`] for an LSN that `append` never returned.
    /// After [`Wal::close`] every LSN is durable, so this succeeds.
    pub fn sync(&self, lsn: u64, durability: Durability) -> Result<()> {
        match durability {
            Durability::SkipWal | Durability::AsyncWal => Ok(()),
            Durability::SyncWal => self.inner.wait_durable(lsn, false),
            Durability::FsyncWal => self.inner.wait_durable(lsn, true),
        }
    }

    /// `append` + `sync`. `SkipWal` does nothing at all.
    pub fn log(&self, edit: &WalEdit, durability: Durability) -> Result<()> {
        if durability == Durability::SkipWal {
            return Ok(());
        }
        let lsn = self.append(edit)?;
        self.sync(lsn, durability)
    }

    /// Writes and fsyncs everything buffered and stops the background
    /// thread. Later appends fail with [`Error::Closed`]. Closing again is a
    /// no-op; closing a failed log returns its [`Error::WalFailed`].
    pub fn close(&self) -> Result<()> {
        let last = {
            let mut st = self.inner.state.lock();
            st.closed = true;
            st.next_lsn - 1
        };
        // `take` makes the join happen once even with concurrent closers.
        let flusher = self.flusher.lock().take();
        if let Some(handle) = flusher {
            *self.inner.stop.lock() = true;
            self.inner.stop_signal.notify_all();
            if handle.join().is_err() {
                tracing::error!("the WAL flusher thread panicked");
            }
        }
        // No append can slip in after `closed`, so `last` covers everything.
        let result = self.inner.wait_durable(last, true);
        let mut writer = self.inner.writer.lock();
        if writer.take().is_some() {
            if let Some(active) = self.inner.segments.lock().last_mut() {
                active.active = false;
            }
        }
        result
    }

    /// The segments of the log, oldest first; the last one is the active
    /// segment (unless the log is closed).
    pub fn segments(&self) -> Vec<SegmentInfo> {
        self.inner.segments.lock().clone()
    }

    /// Deletes the complete (non-active) segments for which `flushed` says
    /// every region with records in them has flushed past those records.
    /// Returns how many segments were deleted. Replay never needs a deleted
    /// segment: each of its edits is in a store file (or its region is gone).
    pub fn retire_segments(&self, flushed: impl Fn(&SegmentInfo) -> bool) -> Result<usize> {
        let mut segments = self.inner.segments.lock();
        let mut retired = 0;
        let mut index = 0;
        while index < segments.len() {
            let segment = &segments[index];
            if segment.active || !flushed(segment) {
                index += 1;
                continue;
            }
            match std::fs::remove_file(&segment.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&segment.path, e)),
            }
            tracing::debug!(segment = segment.id, "retired a flushed WAL segment");
            segments.remove(index);
            retired += 1;
        }
        Ok(retired)
    }

    /// Counters of the work done since open.
    pub fn stats(&self) -> WalStats {
        let c = &self.inner.stats;
        WalStats {
            appends: c.appends.load(Ordering::Relaxed),
            writes: c.writes.load(Ordering::Relaxed),
            records_written: c.records_written.load(Ordering::Relaxed),
            bytes_written: c.bytes_written.load(Ordering::Relaxed),
            fsyncs: c.fsyncs.load(Ordering::Relaxed),
            rolls: c.rolls.load(Ordering::Relaxed),
        }
    }

    /// Every LSN up to this one has been written to the OS.
    pub fn written_lsn(&self) -> u64 {
        self.inner.state.lock().written_lsn
    }

    /// Every LSN up to this one has been fsynced.
    pub fn synced_lsn(&self) -> u64 {
        self.inner.state.lock().synced_lsn
    }

    /// The log directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }
}

/// A write-ahead log as the regions and the region server use it: the
/// contract every implementation keeps (today's local segment log, [`Wal`];
/// later one on object storage).
///
/// - `append` orders edits: an edit appended after another is never
///   replayed before it. It does no I/O that a writer must wait for.
/// - `sync(lsn, d)` returns only once the edit at `lsn` (and every edit
///   appended before it) is as durable as `d` asks; an acknowledged write
///   is one whose `sync` returned `Ok`.
/// - After a failed write the log refuses every later append and sync
///   (the bytes that reached storage are unknown, so going on could hide a
///   gap); the error says why.
/// - `retire_flushed` may delete only what replay can no longer need:
///   records of a region at or below its flushed sequence id, or of
///   regions that no longer exist.
/// - Opening and replaying belong to each implementation's constructor:
///   replay happens before any region takes writes.
pub trait WriteAheadLog: Send + Sync + fmt::Debug {
    /// Buffers one edit and returns its log position (LSN), increasing
    /// within this open log.
    fn append(&self, edit: &WalEdit) -> Result<u64>;

    /// Waits until the edit at `lsn` is durable as `durability` asks.
    fn sync(&self, lsn: u64, durability: Durability) -> Result<()>;

    /// Deletes what every region has flushed past. `flushed_through(region
    /// id)` is the region's flushed sequence id, or `None` when the region
    /// is gone. Returns how many log files were deleted.
    fn retire_flushed(&self, flushed_through: &dyn Fn(u64) -> Option<u64>) -> Result<usize>;

    /// Makes everything appended durable and refuses later appends.
    fn close(&self) -> Result<()>;

    /// Counters of the log's work since it was opened.
    fn stats(&self) -> WalStats;
}

impl WriteAheadLog for Wal {
    fn append(&self, edit: &WalEdit) -> Result<u64> {
        Wal::append(self, edit)
    }

    fn sync(&self, lsn: u64, durability: Durability) -> Result<()> {
        Wal::sync(self, lsn, durability)
    }

    fn retire_flushed(&self, flushed_through: &dyn Fn(u64) -> Option<u64>) -> Result<usize> {
        self.retire_segments(|segment| {
            segment
                .max_sequence_ids
                .iter()
                .all(|(&region, &max)| flushed_through(region).is_none_or(|f| f >= max))
        })
    }

    fn close(&self) -> Result<()> {
        Wal::close(self)
    }

    fn stats(&self) -> WalStats {
        Wal::stats(self)
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        let already_closed = self.inner.writer.lock().is_none();
        if already_closed {
            return;
        }
        if let Err(e) = self.close() {
            tracing::error!(error = %e, "closing the write-ahead log on drop failed");
        }
    }
}

impl fmt::Debug for Wal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.state.lock();
        f.debug_struct("Wal")
            .field("dir", &self.inner.dir)
            .field("next_lsn", &st.next_lsn)
            .field("written_lsn", &st.written_lsn)
            .field("synced_lsn", &st.synced_lsn)
            .field("failed", &st.failed)
            .field("closed", &st.closed)
            .finish()
    }
}

fn closed_error() -> Error {
    Error::Closed("write-ahead log".into())
}

/// One leader's batch, taken from `State`.
struct Batch {
    bytes: Vec<u8>,
    records: u64,
    regions: HashMap<u64, u64>,
    fsync: bool,
}

impl Inner {
    /// Blocks until `lsn` is written (and fsynced if `fsync`), leading group
    /// commits as needed.
    fn wait_durable(&self, lsn: u64, fsync: bool) -> Result<()> {
        let mut st = self.state.lock();
        if lsn >= st.next_lsn {
            return Err(Error::invalid(format!(
                "WAL position {lsn} has not been handed out (next is {})",
                st.next_lsn
            )));
        }
        loop {
            if let Some(cause) = &st.failed {
                return Err(Error::WalFailed(cause.clone()));
            }
            let done = if fsync {
                st.synced_lsn >= lsn
            } else {
                st.written_lsn >= lsn
            };
            if done {
                return Ok(());
            }
            if fsync {
                st.fsync_wanted = st.fsync_wanted.max(lsn);
            }
            if st.leader_active {
                // The current leader may not cover `lsn` (it was appended
                // after the leader took its batch); re-check when it is done.
                self.round_done.wait(&mut st);
                continue;
            }
            self.lead_round(&mut st);
        }
    }

    /// Runs one group commit as leader: takes the whole buffer, writes it
    /// without the append mutex, publishes the written LSN (waking SyncWal
    /// waiters before any fsync), then fsyncs and/or rolls if needed and
    /// publishes the synced LSN.
    ///
    /// Called only when this thread's own target is not met and no leader
    /// is active, so there is always something to do: unwritten records in
    /// `buf`, or a wanted fsync.
    fn lead_round(&self, st: &mut MutexGuard<'_, State>) {
        st.leader_active = true;
        let fresh = std::mem::take(&mut st.spare);
        let batch = Batch {
            bytes: std::mem::replace(&mut st.buf, fresh),
            records: std::mem::take(&mut st.buf_records),
            regions: std::mem::take(&mut st.buf_regions),
            // Everything up to `end` will have been written before the
            // fsync, so one fsync serves every waiter up to `end`.
            fsync: st.fsync_wanted > st.synced_lsn,
        };
        let fsync = batch.fsync;
        let end = st.next_lsn - 1;

        let (written, mut bytes) = MutexGuard::unlocked(st, || {
            let result = self.write_batch(&batch);
            (result, batch.bytes)
        });
        let result = match written {
            Ok(()) => {
                st.written_lsn = end;
                self.round_done.notify_all();
                MutexGuard::unlocked(st, || self.sync_and_roll(fsync))
            }
            Err(e) => Err(e),
        };

        st.leader_active = false;
        match result {
            Ok(true) => st.synced_lsn = end,
            Ok(false) => {}
            Err(e) => {
                let cause = e.to_string();
                tracing::error!(error = %cause, "write-ahead log failed; refusing further writes");
                st.failed = Some(cause);
            }
        }
        if bytes.capacity() <= MAX_SPARE_CAPACITY {
            bytes.clear();
            st.spare = bytes;
        }
        self.round_done.notify_all();
    }

    /// Writes a batch to the active segment with one `write_all` and
    /// accounts it to that segment.
    fn write_batch(&self, batch: &Batch) -> Result<()> {
        if batch.bytes.is_empty() {
            return Ok(());
        }
        let mut guard = self.writer.lock();
        let Some(w) = guard.as_mut() else {
            return Err(closed_error());
        };
        self.write_all(w, &batch.bytes)?;
        w.size += batch.bytes.len() as u64;
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        self.stats
            .records_written
            .fetch_add(batch.records, Ordering::Relaxed);
        self.stats
            .bytes_written
            .fetch_add(batch.bytes.len() as u64, Ordering::Relaxed);
        let mut segments = self.segments.lock();
        if let Some(info) = segments.iter_mut().rev().find(|s| s.id == w.id) {
            info.size_bytes = w.size;
            info.records += batch.records;
            for (&region, &seq) in &batch.regions {
                let max = info.max_sequence_ids.entry(region).or_insert(0);
                *max = (*max).max(seq);
            }
        }
        Ok(())
    }

    /// Fsyncs the active segment if asked, and rolls to a new segment if it
    /// is full. Returns whether everything written so far is now fsynced.
    fn sync_and_roll(&self, fsync: bool) -> Result<bool> {
        let mut guard = self.writer.lock();
        let Some(w) = guard.as_mut() else {
            return Err(closed_error());
        };
        let mut synced = false;
        if fsync {
            self.fsync(w)?;
            synced = true;
        }
        if w.size < self.options.segment_max_bytes {
            return Ok(synced);
        }
        // The finished segment must be complete and durable before the next
        // exists: replay only forgives damage in the last segment.
        if !synced {
            self.fsync(w)?;
            synced = true;
        }
        let next_id =
            w.id.checked_add(1)
                .ok_or_else(|| Error::WalFailed("segment ids exhausted".into()))?;
        let next = SegmentWriter::create(&self.dir, next_id)?;
        let mut segments = self.segments.lock();
        if let Some(info) = segments.last_mut() {
            info.active = false;
        }
        segments.push(SegmentInfo {
            id: next.id,
            path: next.path.clone(),
            size_bytes: next.size,
            records: 0,
            max_sequence_ids: BTreeMap::new(),
            active: true,
        });
        drop(segments);
        tracing::debug!(segment = %next.path.display(), "rolled the write-ahead log");
        *w = next;
        self.stats.rolls.fetch_add(1, Ordering::Relaxed);
        Ok(synced)
    }

    fn write_all(&self, w: &mut SegmentWriter, bytes: &[u8]) -> Result<()> {
        #[cfg(test)]
        if let Some(e) = self.faults.before_write(&mut w.file, bytes) {
            return Err(Error::io(&w.path, e));
        }
        w.file.write_all(bytes).map_err(|e| Error::io(&w.path, e))
    }

    fn fsync(&self, w: &mut SegmentWriter) -> Result<()> {
        #[cfg(test)]
        if let Some(e) = self.faults.before_fsync() {
            return Err(Error::io(&w.path, e));
        }
        w.file.sync_data().map_err(|e| Error::io(&w.path, e))?;
        self.stats.fsyncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The background flusher: every `async_flush_interval`, writes what is
    /// buffered (without fsync), so `AsyncWal` edits reach the OS promptly.
    fn run_flusher(&self) {
        loop {
            {
                let mut stop = self.stop.lock();
                if *stop {
                    return;
                }
                self.stop_signal
                    .wait_for(&mut stop, self.options.async_flush_interval);
                if *stop {
                    return;
                }
            }
            let target = {
                let st = self.state.lock();
                let last = st.next_lsn - 1;
                (st.failed.is_none() && last > st.written_lsn).then_some(last)
            };
            if let Some(lsn) = target {
                // A failure is recorded in `State::failed` and reported to
                // every caller; the flusher has no one to report to.
                let _ = self.wait_durable(lsn, false);
            }
        }
    }
}
