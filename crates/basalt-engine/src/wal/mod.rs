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
//! A failed write, fsync or roll puts the log in a failed state. The bytes
//! that reached the file are unknown (and after a failed fsync Linux may
//! have dropped dirty pages or marked them clean), so the log never just
//! retries the write. Instead:
//!
//! 1. Every record not yet acknowledged fails: its writer gets
//!    [`Error::WalFailed`] and the buffer is dropped. After a failed write
//!    or roll that is every record not yet written; after a failed fsync,
//!    every record since the segment's last successful fsync (those
//!    already acknowledged as `SyncWal` stay acknowledged: see below).
//! 2. The active segment is *sealed*: truncated back to the end of the last
//!    fully written batch (after a failed fsync: to the last fsynced
//!    offset) and fsynced, so the failed records' bytes are gone from the
//!    file and cannot come back at replay. Shrinking a file needs no free
//!    space, so this usually works even on a full disk; if it does not, it
//!    is retried.
//! 3. Appends are refused with [`Error::WalFailed`] while the log is
//!    failed. At most once per [`WalOptions::repair_interval`] an append
//!    tries to repair it: seal (if not done yet), then roll to a new
//!    segment. The truncated segment is never written again (its file
//!    position is past its end). Once the roll succeeds, the log serves
//!    again.
//!
//! After a failed fsync the log follows what PostgreSQL and RocksDB learned
//! ("fsyncgate"): the kernel's page cache no longer tells what is on disk,
//! and a later fsync may succeed without writing the lost pages, so the
//! data written since the last good fsync is treated as lost and truncated
//! away rather than fsynced again. `SyncWal` writers acknowledged in that
//! window (after write(2), before the fsync failed) keep their cells in the
//! memstores, which the next flush persists; until then they have no WAL
//! copy, so a process crash before that flush loses them.

mod format;
pub mod inspect;
pub mod object;
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
use std::time::{Duration, Instant};

use basalt_types::{Cell, Durability, Error, Result};
use parking_lot::{Condvar, Mutex, MutexGuard};

pub use format::{FORMAT_VERSION, MAX_RECORD_PAYLOAD};
pub use object::{LogClaim, ObjectWal, ObjectWalOptions, MAX_OBJECTS_IN_FLIGHT};
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
    /// After a failure, how long the log waits between attempts to repair
    /// itself (seal the failed segment and roll to a new one). Each attempt
    /// is made by an append; meanwhile appends fail at once. Default 1 s.
    pub repair_interval: Duration,
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions {
            segment_max_bytes: 64 << 20,
            async_flush_interval: Duration::from_millis(100),
            repair_interval: Duration::from_secs(1),
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
    /// Write, fsync or roll failures.
    pub failures: u64,
    /// Repairs after a failure (the log served again).
    pub repairs: u64,
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
    /// Bytes of the active segment known to be fsynced (its header
    /// included): where a failed fsync truncates it back to.
    synced_bytes: AtomicU64,
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
    failures: AtomicU64,
    repairs: AtomicU64,
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
    /// Set while the log is failed; cleared by a repair.
    failed: Option<Failure>,
    /// LSN ranges (inclusive) whose records failed, with the cause: never
    /// acknowledged, never in the log. One entry per failure, and a failure
    /// needs a repair before the next one, so this stays tiny.
    lost: Vec<(u64, u64, Arc<str>)>,
    /// `close` was called: appends are refused.
    closed: bool,
}

/// Why and how the log failed, and how far its repair has got.
#[derive(Debug, Clone)]
struct Failure {
    /// The error, as every refused caller is told.
    cause: String,
    /// An fsync failed: the active segment is sealed at its last fsynced
    /// offset instead of at its last written one.
    fsync_failed: bool,
    /// The active segment has been truncated and fsynced: only the roll is
    /// left to do.
    sealed: bool,
    /// When the last repair was tried (or the failure happened).
    last_attempt: Instant,
}

/// Which step of a group commit failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Write,
    Fsync,
    Roll,
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
        let synced_bytes = AtomicU64::new(writer.size);
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
                lost: Vec::new(),
                closed: false,
            }),
            round_done: Condvar::new(),
            writer: Mutex::new(Some(writer)),
            segments: Mutex::new(kept),
            synced_bytes,
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
    /// or the edit exceeds [`MAX_RECORD_PAYLOAD`], [`Error::WalFailed`]
    /// while the log is failed (an append tries to repair it at most once
    /// per [`WalOptions::repair_interval`]) and [`Error::Closed`] after
    /// [`Wal::close`].
    pub fn append(&self, edit: &WalEdit) -> Result<u64> {
        // Encode before taking the append mutex: only the copy happens
        // under it.
        let mut record = Vec::new();
        format::encode_record(edit, &mut record)?;

        let mut st = self.inner.state.lock();
        if st.closed {
            return Err(closed_error());
        }
        if st.failed.is_some() {
            self.inner.try_repair(&mut st);
            if let Some(failure) = &st.failed {
                return Err(Error::WalFailed(failure.cause.clone()));
            }
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
    /// Fails with [`Error::WalFailed`] when the edit's record failed (see
    /// the module docs), and with [`Error::InvalidArgument`] for an LSN that
    /// `append` never returned. After [`Wal::close`] every LSN that did not
    /// fail is durable, so this succeeds.
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
    /// no-op; closing a failed log seals its active segment if that was not
    /// done yet (so failed records cannot reappear) and returns its
    /// [`Error::WalFailed`].
    pub fn close(&self) -> Result<()> {
        let (last, failed) = {
            let mut st = self.inner.state.lock();
            st.closed = true;
            let last = st.next_lsn - 1;
            // Records that failed are not waited for: they are not in the
            // log and never will be.
            let last = if is_lost(&st, last) { 0 } else { last };
            (last, st.failed.is_some())
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
        let result = if failed {
            self.inner.close_failed()
        } else if last == 0 {
            Ok(())
        } else {
            self.inner.wait_durable(last, true)
        };
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

    /// Starts a new segment when every record of the active one is in
    /// store files (`flushed` says so), so that it can be retired like any
    /// complete segment. Without this an idle database kept its last
    /// segment, all flushed, until it next wrote: a crash then left a log
    /// that recovery did not need but whose damage could still refuse the
    /// start. Returns whether it rolled.
    ///
    /// Safe against concurrent writers: records reach a segment only under
    /// the writer lock, and the segment's record of its regions is updated
    /// under it too, so what `flushed` sees is exactly what the file holds;
    /// a batch not yet written waits for the lock and goes to the new
    /// segment. The old segment is fsynced first (replay forgives damage
    /// only in the last segment), and it is deleted only afterwards, by
    /// [`Wal::retire_segments`], never before the next one exists.
    pub fn roll_if_flushed(&self, flushed: impl Fn(&SegmentInfo) -> bool) -> Result<bool> {
        // The lock order of the failure path: state, then writer.
        let st = self.inner.state.lock();
        if st.failed.is_some() || st.closed {
            // A failed log is repaired (sealed and rolled) by its own path.
            return Ok(false);
        }
        let mut guard = self.inner.writer.lock();
        drop(st);
        let Some(w) = guard.as_mut() else {
            return Ok(false);
        };
        {
            let segments = self.inner.segments.lock();
            match segments.last() {
                Some(active)
                    if active.active
                        && active.id == w.id
                        && active.records > 0
                        && flushed(active) => {}
                _ => return Ok(false),
            }
        }
        if let Err(e) = self.inner.fsync(w) {
            // Nothing acknowledged depends on this segment (its records are
            // in store files): keep writing to it, and try again after the
            // next flush.
            tracing::warn!(error = %e, "could not fsync a flushed WAL segment; it is kept for now");
            return Ok(false);
        }
        self.inner.roll(w)?;
        Ok(true)
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
            failures: c.failures.load(Ordering::Relaxed),
            repairs: c.repairs.load(Ordering::Relaxed),
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
/// - A write whose `sync` failed is never replayed: after a failed write
///   the log makes sure its bytes are gone (or unreadable) before it takes
///   new appends, and refuses appends until then; the error says why. It
///   may recover by itself once the cause (e.g. a full disk) is gone.
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
        let flushed = |segment: &SegmentInfo| {
            segment
                .max_sequence_ids
                .iter()
                .all(|(&region, &max)| flushed_through(region).is_none_or(|f| f >= max))
        };
        // An all-flushed active segment becomes a complete one first, so
        // the log keeps nothing recovery does not need.
        self.roll_if_flushed(flushed)?;
        self.retire_segments(flushed)
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

/// Why the record at `lsn` failed, if it did (see [`Inner::fail`]).
fn lost_cause(st: &State, lsn: u64) -> Option<&str> {
    st.lost
        .iter()
        .find(|(from, to, _)| (*from..=*to).contains(&lsn))
        .map(|(_, _, cause)| &**cause)
}

fn is_lost(st: &State, lsn: u64) -> bool {
    lost_cause(st, lsn).is_some()
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
            if let Some(cause) = lost_cause(&st, lsn) {
                return Err(Error::WalFailed(format!(
                    "the record was not written to the log: {cause}"
                )));
            }
            if let Some(failure) = &st.failed {
                // Every LSN handed out before the failure is lost or
                // durable, so this one is lost... unless it is durable.
                let done = if fsync {
                    st.synced_lsn >= lsn
                } else {
                    st.written_lsn >= lsn
                };
                if done {
                    return Ok(());
                }
                return Err(Error::WalFailed(failure.cause.clone()));
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
            Err(e) => Err((e, Step::Write)),
        };

        match result {
            Ok(true) => st.synced_lsn = end,
            Ok(false) => {}
            Err((e, step)) => self.fail(st, &e, step),
        }
        st.leader_active = false;
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
    /// is full. Returns whether everything written so far is now fsynced;
    /// an error says which step failed.
    fn sync_and_roll(&self, fsync: bool) -> std::result::Result<bool, (Error, Step)> {
        let mut guard = self.writer.lock();
        let Some(w) = guard.as_mut() else {
            return Err((closed_error(), Step::Roll));
        };
        let mut synced = false;
        if fsync {
            self.fsync(w).map_err(|e| (e, Step::Fsync))?;
            synced = true;
        }
        if w.size < self.options.segment_max_bytes {
            return Ok(synced);
        }
        // The finished segment must be complete and durable before the next
        // exists: replay only forgives damage in the last segment.
        if !synced {
            self.fsync(w).map_err(|e| (e, Step::Fsync))?;
            synced = true;
        }
        self.roll(w).map_err(|e| (e, Step::Roll))?;
        Ok(synced)
    }

    /// Starts the next segment and makes it the active one. The caller has
    /// made the current one complete and durable.
    fn roll(&self, w: &mut SegmentWriter) -> Result<()> {
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
        self.synced_bytes.store(next.size, Ordering::Release);
        *w = next;
        self.stats.rolls.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Puts the log in the failed state after `step` failed (the caller is
    /// the leader): fails every record not yet acknowledged, drops the
    /// buffer, and seals the active segment so those records' bytes are
    /// gone from the file.
    fn fail(&self, st: &mut MutexGuard<'_, State>, error: &Error, step: Step) {
        let cause = error.to_string();
        tracing::error!(error = %cause, ?step, "write-ahead log failed; refusing writes until it is repaired");
        self.stats.failures.fetch_add(1, Ordering::Relaxed);
        let fsync_failed =
            step == Step::Fsync || st.failed.as_ref().is_some_and(|f| f.fsync_failed);
        // After a failed fsync nothing since the last good fsync is known
        // to be on disk; otherwise everything written is (in the OS).
        let first_lost = if fsync_failed {
            st.synced_lsn + 1
        } else {
            st.written_lsn + 1
        };
        let last_lost = st.next_lsn - 1;
        if first_lost <= last_lost {
            st.lost
                .push((first_lost, last_lost, Arc::from(cause.as_str())));
        }
        // Every LSN handed out is now durable or lost: nothing is pending.
        st.buf.clear();
        st.buf_records = 0;
        st.buf_regions.clear();
        st.written_lsn = last_lost;
        st.synced_lsn = last_lost;
        st.fsync_wanted = 0;
        let sealed = MutexGuard::unlocked(st, || match self.seal(fsync_failed) {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "could not truncate the failed write-ahead log segment; will retry");
                false
            }
        });
        st.failed = Some(Failure {
            cause,
            fsync_failed,
            sealed,
            last_attempt: Instant::now(),
        });
    }

    /// Truncates the active segment back to its last good offset (the end
    /// of the last fully written batch, or after a failed fsync the last
    /// fsynced offset) and fsyncs it, so no failed record can be replayed.
    /// The segment takes no more writes: the next step is a roll.
    fn seal(&self, fsync_failed: bool) -> Result<()> {
        let mut guard = self.writer.lock();
        let Some(w) = guard.as_mut() else {
            return Err(closed_error());
        };
        // `size` only grows after a whole batch was written, so it is the
        // end of the last complete one.
        let good = if fsync_failed {
            self.synced_bytes.load(Ordering::Acquire)
        } else {
            w.size
        };
        #[cfg(test)]
        if let Some(e) = self.faults.before_seal() {
            return Err(Error::io(&w.path, e));
        }
        w.file
            .set_len(good)
            .and_then(|()| w.file.sync_all())
            .map_err(|e| Error::io(&w.path, e))?;
        w.size = good;
        self.synced_bytes.store(good, Ordering::Release);
        if let Some(info) = self.segments.lock().iter_mut().rev().find(|s| s.id == w.id) {
            // Records and sequence ids stay as counted: an over-estimate,
            // which only keeps the segment a little longer.
            info.size_bytes = good;
        }
        tracing::warn!(segment = %w.path.display(), offset = good, "truncated the failed write-ahead log segment");
        Ok(())
    }

    /// With the append mutex held and the log failed: if no leader is busy
    /// and the last attempt is old enough, seals the active segment (if
    /// needed) and rolls to a new one. On success the log serves again.
    fn try_repair(&self, st: &mut MutexGuard<'_, State>) {
        let Some(failure) = st.failed.clone() else {
            return;
        };
        if st.leader_active || failure.last_attempt.elapsed() < self.options.repair_interval {
            return;
        }
        st.leader_active = true;
        let mut sealed = failure.sealed;
        let result = MutexGuard::unlocked(st, || {
            if !sealed {
                self.seal(failure.fsync_failed)?;
                sealed = true;
            }
            let mut guard = self.writer.lock();
            let Some(w) = guard.as_mut() else {
                return Err(closed_error());
            };
            #[cfg(test)]
            if let Some(e) = self.faults.before_roll() {
                return Err(Error::io(&w.path, e));
            }
            self.roll(w)
        });
        st.leader_active = false;
        match result {
            Ok(()) => {
                tracing::info!(cause = %failure.cause, "the write-ahead log is repaired and takes writes again");
                self.stats.repairs.fetch_add(1, Ordering::Relaxed);
                st.failed = None;
            }
            Err(e) => {
                tracing::warn!(error = %e, "repairing the write-ahead log failed; will retry");
                if let Some(f) = st.failed.as_mut() {
                    // A seal that got done stays done: only the roll is left.
                    f.sealed = sealed;
                    f.last_attempt = Instant::now();
                }
            }
        }
        self.round_done.notify_all();
    }

    /// `close` of a failed log: makes sure the failed records are truncated
    /// away, then reports the failure.
    fn close_failed(&self) -> Result<()> {
        let failure = self.state.lock().failed.clone();
        let Some(failure) = failure else {
            return Ok(());
        };
        if !failure.sealed {
            if let Err(e) = self.seal(failure.fsync_failed) {
                tracing::error!(error = %e, "could not truncate the failed write-ahead log segment at close");
            }
        }
        Err(Error::WalFailed(failure.cause))
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
        self.synced_bytes.store(w.size, Ordering::Release);
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
                // A failed log's buffer is empty; repairs are left to appends.
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
