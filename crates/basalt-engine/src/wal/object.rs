//! The write-ahead log on object storage, with writer fencing.
//!
//! Used when the data lives on shared storage (`basalt serve --storage`):
//! the log is a sequence of immutable **log objects** in the same
//! [`FileStore`] as the store files, so another machine can replay a
//! crashed server's edits, and the data directory holds only caches and
//! the lock.
//!
//! ```text
//! <root>/wal/<log id: 20 digits>/<sequence: 20 digits>
//! ```
//!
//! Each opening of the data is an **owner** with an **epoch**; its log id
//! is its epoch. Sequence 0 of a log is its *claim*; the owner's batches
//! follow at 1, 2, 3, ... with no gaps, each object created only if absent.
//! The object format is in `docs/wal-format.md` ("Log objects").
//!
//! # Group commit
//!
//! 1. [`ObjectWal::append`] encodes the edit into the pending batch and
//!    hands back an LSN; no I/O.
//! 2. As soon as the previous object is published, the whole pending
//!    batch is taken and published as the log's next object,
//!    create-if-absent. Edits appended while an object is being written
//!    wait for the next one together: that is the group commit, with no
//!    fixed wait. Without a window (the default) a writer waiting in
//!    [`ObjectWal::sync`] takes and publishes it itself, as the local
//!    log's leader does; the committer thread publishes only edits nobody
//!    waits for (`ASYNC_WAL`), and with a
//!    [`ObjectWalOptions::group_commit_window`] every batch once its
//!    oldest edit is that old.
//! 3. Once the object is published, and every object before it, every
//!    waiter its batch covers is released by [`ObjectWal::sync`]. Each
//!    batch takes the next sequence number when it is taken, so numbers
//!    follow LSN order; up to [`ObjectWalOptions::objects_in_flight`]
//!    objects (default one) are on their way at once, and they are
//!    acknowledged in sequence order whichever lands first (W1). Published is
//!    durable on object storage (the store acknowledged the `PUT`); on a
//!    shared directory it is visible to every process, not yet fsynced
//!    (`FileStore::publish_visible`): an `FSYNC_WAL` writer then syncs
//!    every unsynced object up to its own (`Inner::sync_through`), as the
//!    local log fsyncs only for such writers. A machine crash can tear an
//!    unsynced object; replay ends before it (walk invariant W4).
//!
//! # Segments (a store that appends: a shared directory)
//!
//! Where [`FileStore::can_append`], a batch is not a new object: the
//! writer keeps its newest object open as a segment and appends each
//! batch to it as one more `Records` frame, one `write(2)`, then checks
//! that the number after the segment is still free (a fencer's fence goes
//! there: invariant W1) before it acknowledges the batch. A new segment
//! starts at [`ObjectWalOptions::segment_max_bytes`], or when retirement
//! finds the open one all flushed (the open segment is the newest object,
//! which stays), the previous one synced first. The fencer follows its
//! fence with a `Seal` naming the fenced segment's length (W5), and every
//! replay reads that segment only up to it. A failed append is cut back
//! out of the segment (`AppendableFile::truncate`) before anything else
//! is appended: no `Void` objects are needed.
//!
//! # Failures
//!
//! A publication that fails for another reason than a collision (the
//! store unreachable past its time bound) fails the batch and everything
//! pending: those writers get [`Error::WalFailed`] and appends are refused
//! while the log is failed. Whether the failed object landed is unknown,
//! so the log **resolves** its sequence number before writing again
//! (retried every [`ObjectWalOptions::repair_interval`]): if the object is
//! absent, an empty batch takes the number; if it landed after all (its
//! writers were told it failed), a `Void` object at the next number makes
//! replay skip it. No name is ever written twice. Then the log serves
//! again. A create that finds its name taken by this log's own object (a
//! `PUT` that landed after its answer was lost, or a retry refused by its
//! own first attempt) is no fence: identical bytes are the publication
//! itself, anything else of ours is settled by the repair. Only a fence or
//! another epoch's object fences the writer (`Inner::taken_by`).
//!
//! # Fencing (see `docs/object-storage.md`, "Fencing")
//!
//! Opening the data is [`ObjectWal::claim`] (choose the epoch, create the
//! own log's claim object), then the regions open (each store manifest is
//! fenced with the epoch: `crate::manifest`), then [`ObjectWal::open`]:
//! every older log is replayed and fenced by creating its next object
//! with a fence record, and the own log starts. A writer whose next object
//! collides learns it is fenced: its [`Fence`] trips and every region
//! refuses reads and writes from then on.
//!
//! # Other processes' logs (cluster mode)
//!
//! In a cluster every region server has its own log and never touches the
//! others' at start ([`ObjectWal::open_own`]). When one dies, the master
//! ends its log with [`fence_log`]; each server that reopens one of its
//! regions replays that region's edits with [`replay_log`] (which refuses
//! a log that has not ended); once all of them are reopened and flushed,
//! [`delete_log`] removes it. [`list_logs`] names the logs present. Each
//! is a mode of one walk of a log (`walk_log`), the same that `open`
//! runs over every older log.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use basalt_types::{Durability, Error, Result};
use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use super::format::{self, RECORD_HEADER_LEN};
use super::{ReplayReport, TornTail, WalEdit, WalStats, WriteAheadLog, MAX_RECORD_PAYLOAD};
use crate::coding;
use crate::fence::Fence;
use crate::fs::{AppendableFile, FileStore};
use crate::manifest::is_already_exists;

#[cfg(test)]
#[path = "object_tests.rs"]
mod tests;

/// The directory (key prefix) of every log, below the data set's root.
pub const OBJECT_WAL_DIR: &str = "wal";

const MAGIC: [u8; 8] = *b"BASALTWO";
const OBJECT_FORMAT_VERSION: u32 = 1;
/// Magic, version, kind (+3 reserved), epoch, record count, body length,
/// body checksum, header checksum.
const HEADER_LEN: usize = 48;

/// The most log objects one writer publishes at once
/// ([`ObjectWalOptions::objects_in_flight`] is clamped to it). A protocol
/// constant, not a setting, because readers of the log rely on it without
/// knowing the writer's options: a fencer fences the numbers missing among
/// the newest this many (an object still in flight may land there:
/// invariant W1), and replay holds this many objects back (a `Void` reaches
/// back over one failed window at most).
pub const MAX_OBJECTS_IN_FLIGHT: usize = 16;

/// What a log object holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A batch of edits (possibly none: the filler of a resolved failure).
    Records = 1,
    /// Written by a newer owner at the log's next sequence: the log's
    /// writer can never write again.
    Fence = 2,
    /// Sequence 0 of every log: the owner's claim of its epoch.
    Claim = 3,
    /// The owner closed the log cleanly: no writer of it is left.
    Closed = 4,
    /// Voids a run of objects just before it (batches whose publication
    /// was reported failed but that landed anyway): replay skips them.
    Void = 5,
    /// Written by the fencer right after its fence on a store that
    /// appends: how long the fenced writer's segment was once the fence
    /// existed. Replay reads that segment only up to there.
    Seal = 6,
}

impl Kind {
    fn from_code(code: u8) -> Option<Kind> {
        match code {
            1 => Some(Kind::Records),
            2 => Some(Kind::Fence),
            3 => Some(Kind::Claim),
            4 => Some(Kind::Closed),
            5 => Some(Kind::Void),
            6 => Some(Kind::Seal),
            _ => None,
        }
    }
}

/// Tuning knobs of the object log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectWalOptions {
    /// How long the committer waits after the first edit of a batch before
    /// publishing it, on top of the time the previous object takes. Default
    /// zero: a batch is published as soon as the previous object is, and
    /// the edits that arrive while an object is being written already share
    /// the next one, so a busy log batches by itself while a lone writer
    /// waits for one `PUT` and no more. A window trades latency for fewer
    /// objects (fewer `PUT` requests to pay for on S3) when writers are few
    /// and their edits arrive just apart. A fixed wait of 5 ms bounded 16
    /// writers to about 2,400 writes a second on a shared directory.
    pub group_commit_window: Duration,
    /// After a failed publication, how often the log tries to resolve it
    /// and serve again. Default 1 s.
    pub repair_interval: Duration,
    /// On a store that appends (a shared directory), the size at which the
    /// log starts a new segment. Segments are deleted whole once every
    /// region flushed past them, so this bounds what a quiet log keeps.
    /// Default 64 MiB, as the local log's segments.
    pub segment_max_bytes: u64,
    /// How many log objects may be in flight at once on a store where
    /// each batch is an object of its own (S3, or a shared directory that
    /// does not append): while one `PUT` is on its way the next batch is
    /// published beside it instead of waiting for it, and writers are
    /// acknowledged in sequence order, each once its object and every
    /// earlier one have landed. Where a `PUT` mostly waits on the network,
    /// writers with one in flight split into two halves that take turns;
    /// more in flight overlap the waits (64 writers, 10 ms per `PUT`: 1.45x
    /// the writes with 4, at 2.8x the `PUT`s per write; `benches/object_log.rs`).
    /// Default 1: each `PUT` is paid for, and where the store's `PUT`s are
    /// work rather than waiting (a local S3 server on the same machine)
    /// smaller batches only cost more (moto, 64 clients: 0.6x with 4).
    /// Clamped to 1..=[`MAX_OBJECTS_IN_FLIGHT`]. A store that appends
    /// writes one batch at a time to its segment whatever this says.
    pub objects_in_flight: usize,
}

impl Default for ObjectWalOptions {
    fn default() -> Self {
        ObjectWalOptions {
            group_commit_window: Duration::ZERO,
            repair_interval: Duration::from_secs(1),
            segment_max_bytes: 64 << 20,
            objects_in_flight: 1,
        }
    }
}

/// The path of the directory of log `log_id`.
pub fn log_dir(root: &Path, log_id: u64) -> PathBuf {
    root.join(OBJECT_WAL_DIR).join(format!("{log_id:020}"))
}

/// The path of object `sequence` of log `log_id`.
pub fn object_path(root: &Path, log_id: u64, sequence: u64) -> PathBuf {
    log_dir(root, log_id).join(format!("{sequence:020}"))
}

fn number_of(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.parse().ok())
        .flatten()
}

/// A decoded log object: one frame, or (a segment a store appends to) a
/// run of `Records` frames.
#[derive(Debug)]
struct Decoded {
    kind: Kind,
    epoch: u64,
    edits: Vec<WalEdit>,
    /// For a `Void`: the first and last sequence numbers it voids.
    voids: Option<(u64, u64)>,
    /// For a `Seal`: the sequence number it seals and its length.
    seals: Option<(u64, u64)>,
    /// For a `Claim`: the most objects its writer keeps in flight.
    claimed_in_flight: u64,
    /// Where each whole frame ends in the file, with how many edits the
    /// frames up to it hold (for cutting a segment at its seal).
    frames: Vec<(u64, usize)>,
    /// A segment's last frame that is not whole: where it starts, and why
    /// (a write cut short by a machine crash, or still being appended
    /// when read).
    torn: Option<(u64, String)>,
}

impl Decoded {
    /// Keeps only the frames that end at or before `len` (a seal): a frame
    /// past it was appended after the fence, so its writer never
    /// acknowledged it. A frame crossing `len` was partly written when
    /// the fencer measured: torn, and never acknowledged either.
    fn cut_at(&mut self, len: u64) {
        let kept = self
            .frames
            .iter()
            .take_while(|(end, _)| *end <= len)
            .count();
        let crossing = self.frames.get(kept).map(|&(end, _)| end);
        let kept_end = kept.checked_sub(1).map_or(0, |i| self.frames[i].0);
        let edits = kept.checked_sub(1).map_or(0, |i| self.frames[i].1);
        self.frames.truncate(kept);
        self.edits.truncate(edits);
        if kept_end < len {
            // Part of a frame lies below the seal: what the writer was
            // appending when the fence landed.
            let torn_here = match (&self.torn, crossing) {
                (Some((at, reason)), None) if *at == kept_end => reason.clone(),
                _ => format!("a batch being appended when the log was sealed at byte {len}"),
            };
            self.torn = Some((kept_end, torn_here));
        } else {
            self.torn = None;
        }
    }
}

/// Builds a log object: header, then the framed records (as in segments).
fn encode_object(kind: Kind, epoch: u64, records: u64, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(&MAGIC);
    coding::put_u32_le(&mut out, OBJECT_FORMAT_VERSION);
    out.extend_from_slice(&[kind as u8, 0, 0, 0]);
    coding::put_u64_le(&mut out, epoch);
    coding::put_u64_le(&mut out, records);
    coding::put_u64_le(&mut out, body.len() as u64);
    coding::put_u32_le(&mut out, crc32c::crc32c(body));
    let header_crc = crc32c::crc32c(&out);
    coding::put_u32_le(&mut out, header_crc);
    out.extend_from_slice(body);
    out
}

/// Decodes a log object; the error says what is wrong (for
/// [`Error::Corruption`]). Object stores publish whole objects; only a
/// machine crash can tear one published visible on a shared directory,
/// which walks tell apart first ([`torn_reason`]). A `Records` object may
/// be followed by more `Records` frames of the same epoch (a segment the
/// log appends to, on a store that can): their edits follow in order, and
/// a last frame that is not whole is noted in `torn`, not an error.
fn decode_object(bytes: &Bytes) -> std::result::Result<Decoded, String> {
    let (mut decoded, mut at) = decode_frame(bytes, 0)?;
    decoded.frames.push((at as u64, decoded.edits.len()));
    while at < bytes.len() {
        if decoded.kind != Kind::Records {
            return Err(format!(
                "{} bytes after a {:?} object",
                bytes.len() - at,
                decoded.kind
            ));
        }
        if let Some(reason) = torn_reason(&bytes[at..]) {
            decoded.torn = Some((at as u64, reason));
            break;
        }
        let (frame, end) =
            decode_frame(bytes, at).map_err(|e| format!("frame at byte {at}: {e}"))?;
        if frame.kind != Kind::Records || frame.epoch != decoded.epoch {
            return Err(format!(
                "frame at byte {at} is a {:?} of epoch {} in a segment of epoch {}",
                frame.kind, frame.epoch, decoded.epoch
            ));
        }
        decoded.edits.extend(frame.edits);
        decoded.frames.push((end as u64, decoded.edits.len()));
        at = end;
    }
    Ok(decoded)
}

/// Decodes the frame (header and body) at byte `at`; returns it and where
/// it ends.
fn decode_frame(bytes: &Bytes, at: usize) -> std::result::Result<(Decoded, usize), String> {
    let rest = bytes.get(at..).unwrap_or_default();
    let header = rest
        .get(..HEADER_LEN)
        .ok_or_else(|| format!("{} bytes is shorter than the header", rest.len()))?;
    if header[..8] != MAGIC {
        return Err("bad magic".into());
    }
    let header_crc = coding::u32_le(header, 44, "header checksum")?;
    if crc32c::crc32c(&header[..44]) != header_crc {
        return Err("header checksum mismatch".into());
    }
    let version = coding::u32_le(header, 8, "format version")?;
    if version != OBJECT_FORMAT_VERSION {
        return Err(format!("unsupported log object format {version}"));
    }
    let kind = Kind::from_code(header[12]).ok_or_else(|| format!("unknown kind {}", header[12]))?;
    let epoch = coding::u64_le(header, 16, "epoch")?;
    let records = coding::u64_le(header, 24, "record count")?;
    let body_len = coding::u64_le(header, 32, "body length")?;
    let body_crc = coding::u32_le(header, 40, "body checksum")?;
    let body_start = at + HEADER_LEN;
    let available = (bytes.len() - body_start) as u64;
    if available < body_len {
        return Err(format!("body is {available} bytes, header says {body_len}"));
    }
    let end = body_start + body_len as usize;
    let body = bytes.slice(body_start..end);
    if crc32c::crc32c(&body) != body_crc {
        return Err("body checksum mismatch".into());
    }
    let frame = |edits, voids, seals| Decoded {
        kind,
        epoch,
        edits,
        voids,
        seals,
        claimed_in_flight: 1,
        frames: Vec::new(),
        torn: None,
    };
    match kind {
        Kind::Void => {
            // The body is the voided sequence number, or the first and last
            // of a run of them, nothing else.
            if !matches!(body.len(), 8 | 16) || records != 0 {
                return Err(format!("a void object of {} body bytes", body.len()));
            }
            let first = coding::u64_le(&body, 0, "first voided sequence")?;
            let last = if body.len() == 16 {
                coding::u64_le(&body, 8, "last voided sequence")?
            } else {
                first
            };
            // A void reaches back over one failed window of publications
            // at most: replay holds no more than that many objects back.
            if last < first || last - first >= MAX_OBJECTS_IN_FLIGHT as u64 {
                return Err(format!("a void object of sequences {first} to {last}"));
            }
            return Ok((frame(Vec::new(), Some((first, last)), None), end));
        }
        Kind::Claim => {
            // Empty (one object in flight), or how many its writer keeps.
            let claimed = match body.len() {
                0 => 1,
                8 => coding::u64_le(&body, 0, "objects in flight")?,
                len => return Err(format!("a claim object of {len} body bytes")),
            };
            if records != 0 || !(1..=MAX_OBJECTS_IN_FLIGHT as u64).contains(&claimed) {
                return Err(format!(
                    "a claim object of {records} records and {claimed} objects in flight"
                ));
            }
            let mut claim = frame(Vec::new(), None, None);
            claim.claimed_in_flight = claimed;
            return Ok((claim, end));
        }
        Kind::Seal => {
            // The sealed sequence number and its length.
            if body.len() != 16 || records != 0 {
                return Err(format!("a seal object of {} body bytes", body.len()));
            }
            let sealed = coding::u64_le(&body, 0, "sealed sequence")?;
            let len = coding::u64_le(&body, 8, "sealed length")?;
            return Ok((frame(Vec::new(), None, Some((sealed, len))), end));
        }
        _ => {}
    }
    // Bounded: every record takes at least a header.
    if records > (body.len() / RECORD_HEADER_LEN) as u64 {
        return Err(format!(
            "{records} records cannot fit in {} bytes",
            body.len()
        ));
    }
    let mut edits = Vec::with_capacity(records as usize);
    let mut at = 0usize;
    while at < body.len() {
        let head: [u8; RECORD_HEADER_LEN] = coding::array(&body, at, "record header")?;
        let record = format::decode_record_header(&head)
            .ok_or_else(|| format!("record header at body byte {at} fails its checksum"))?;
        let len = record.len as usize;
        if len > MAX_RECORD_PAYLOAD {
            return Err(format!("record at body byte {at} claims {len} bytes"));
        }
        let start = at + RECORD_HEADER_LEN;
        let record_end = start
            .checked_add(len)
            .filter(|&e| e <= body.len())
            .ok_or_else(|| format!("record at body byte {at} runs past the end"))?;
        let payload = body.slice(start..record_end);
        if crc32c::crc32c(&payload) != record.payload_crc {
            return Err(format!("record at body byte {at} fails its checksum"));
        }
        edits.push(
            format::decode_payload(payload)
                .map_err(|e| format!("record at body byte {at}: {e}"))?,
        );
        at = record_end;
    }
    if edits.len() as u64 != records {
        return Err(format!(
            "header says {records} records, body holds {}",
            edits.len()
        ));
    }
    Ok((frame(edits, None, None), end))
}

/// Builds a `Void` object voiding sequences `first..=last` (one number
/// keeps the older, shorter body).
fn encode_void(epoch: u64, first: u64, last: u64) -> Vec<u8> {
    let mut body = Vec::with_capacity(16);
    coding::put_u64_le(&mut body, first);
    if last != first {
        coding::put_u64_le(&mut body, last);
    }
    encode_object(Kind::Void, epoch, 0, &body)
}

/// Builds a `Seal` object: the fenced log's segment `sealed` is read up
/// to `len`.
fn encode_seal(epoch: u64, sealed: u64, len: u64) -> Vec<u8> {
    let mut body = Vec::with_capacity(16);
    coding::put_u64_le(&mut body, sealed);
    coding::put_u64_le(&mut body, len);
    encode_object(Kind::Seal, epoch, 0, &body)
}

/// One published object the log keeps track of (for retirement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogObject {
    /// The log (its owner's epoch).
    pub log_id: u64,
    /// The object's sequence number in the log.
    pub sequence: u64,
    /// The object's path.
    pub path: PathBuf,
    /// Records in it.
    pub records: u64,
    /// For every region with records in it, the highest sequence id.
    pub max_sequence_ids: BTreeMap<u64, u64>,
}

impl LogObject {
    /// True when replay can no longer need it: every region with records
    /// in it has flushed past them (`flushed_through(region)`), or is gone.
    fn flushed(&self, flushed_through: &dyn Fn(u64) -> Option<u64>) -> bool {
        self.max_sequence_ids
            .iter()
            .all(|(&region, &max)| flushed_through(region).is_none_or(|f| f >= max))
    }
}

/// An older log found at open, and how it ended.
#[derive(Debug, Clone)]
struct OldLog {
    id: u64,
    /// Its claim, fence and closed objects: kept while it may have a live
    /// writer (see `retire`).
    markers: Vec<PathBuf>,
    /// It ended with a `Closed` object: its writer is gone for good, so
    /// the whole log may go once its records are flushed.
    closed: bool,
}

/// The epoch this process claimed, between [`ObjectWal::claim`] and
/// [`ObjectWal::open`].
#[derive(Debug)]
pub struct LogClaim {
    files: Arc<dyn FileStore>,
    root: PathBuf,
    fence: Arc<Fence>,
    /// The most objects the log will have in flight, as its claim records.
    objects_in_flight: usize,
}

impl LogClaim {
    /// The fence of the claimed epoch: hand it to the stores (through the
    /// store context) before they open.
    pub fn fence(&self) -> &Arc<Fence> {
        &self.fence
    }
}

/// The log on object storage. See the module docs.
pub struct ObjectWal {
    inner: Arc<Inner>,
    committer: Mutex<Option<JoinHandle<()>>>,
}

struct Inner {
    files: Arc<dyn FileStore>,
    root: PathBuf,
    fence: Arc<Fence>,
    options: ObjectWalOptions,
    state: Mutex<State>,
    /// Wakes the committer: new edits, a hurry, close.
    work: Condvar,
    /// Taken by the one caller of `sync_through` at a time.
    sync_turn: Mutex<()>,
    /// Published objects with records (own and older logs'), oldest first.
    objects: Mutex<Vec<LogObject>>,
    old_logs: Mutex<Vec<OldLog>>,
    stats: Counters,
    /// The store appends: batches go to segments (see "Segments").
    appends: bool,
    /// The own segment batches are appended to; used only by the one
    /// publisher at a time (`Inner::max_in_flight` is one there), `sync_through` and
    /// the repair.
    segment: Mutex<Option<OpenSegment>>,
    /// Retirement found the open segment all flushed: the next batch
    /// starts a new one, so that this one can go.
    roll_requested: AtomicBool,
}

/// The own log's segment open for appending.
struct OpenSegment {
    file: Box<dyn AppendableFile>,
    sequence: u64,
    path: PathBuf,
    /// Bytes of whole batches in it. A failed append is cut back to this.
    len: u64,
    /// An append failed and its bytes may be partly there: cut the file
    /// back to `len` before anything else is appended.
    needs_cut: bool,
}

#[derive(Default)]
struct Counters {
    appends: AtomicU64,
    writes: AtomicU64,
    records_written: AtomicU64,
    bytes_written: AtomicU64,
    failures: AtomicU64,
    repairs: AtomicU64,
    fsyncs: AtomicU64,
    /// Times a writer went to sleep waiting for its edit: with wake-ups
    /// aimed at one batch's writers, about one per waiting write.
    sleeps: AtomicU64,
}

/// Under the state mutex. Invariant: `published_lsn < next_lsn`; `buf` holds
/// the records `taken_lsn + 1 ..= next_lsn - 1` in LSN order.
struct State {
    next_lsn: u64,
    buf: Vec<u8>,
    buf_records: u64,
    buf_regions: HashMap<u64, u64>,
    /// When the first edit of `buf` was appended.
    buf_since: Option<Instant>,
    /// Every LSN up to this one was handed to the committer.
    taken_lsn: u64,
    /// Every LSN up to this one is published (or lost, see `lost`): in
    /// an object every reader of the store sees, which survives this
    /// process's crash (`SYNC_WAL`).
    published_lsn: u64,
    /// Every LSN up to this one is also synced: it survives the machine's
    /// crash (`FSYNC_WAL`; see `FileStore::publish_visible`). At most
    /// `published_lsn`.
    synced_lsn: u64,
    /// Every own object up to this sequence number is synced; the later
    /// ones still in `Inner::objects` are not (retired ones need nothing).
    synced_sequence: u64,
    /// LSN ranges that failed, with the cause: never acknowledged.
    lost: Vec<(u64, u64, Arc<str>)>,
    /// The sequence number the next object of the own log gets. Where
    /// each batch is an object it is taken when the batch is (so several
    /// can be in flight); every number below it is then either
    /// acknowledged (up to `acked_sequence`), in `flights`, or left to the
    /// repair.
    next_sequence: u64,
    /// Every own object up to this sequence number landed, as did every
    /// earlier one, and is in `Inner::objects` (a store where each batch
    /// is an object; the open segment's writer does not use it).
    acked_sequence: u64,
    /// The batches on their way as objects, in sequence order, not yet
    /// acknowledged. Emptied when the log fails or is fenced: the
    /// publications still running then are abandoned to the repair.
    flights: VecDeque<Flight>,
    /// Publications running (abandoned ones too): at most
    /// `Inner::max_in_flight`. The repair waits until none is.
    in_flight: usize,
    /// Set while failed: the cause, and the sequence number left to
    /// resolve.
    failed: Option<Failed>,
    /// Publish the pending batch now, without waiting out the window.
    hurry: bool,
    closing: bool,
    closed: bool,
    /// The writers waiting for edits of the pending batch (not yet taken).
    /// Taking the batch hands these waiters to its `Flight` as they are:
    /// they sleep on until their object is acknowledged.
    pending_waiters: Waiters,
    /// On a store that appends (no flights there): the writers of the
    /// batch being appended to the segment.
    appending_waiters: Waiters,
}

/// Writers waiting for one batch, woken together when it settles.
///
/// One condition variable per batch rather than one for the whole log:
/// with 64 writers in two alternating batches, a log-wide `notify_all`
/// woke every writer at each acknowledgement, and half of them only to go
/// back to sleep, since their batch was still on its way. Each wake-up is a
/// context switch and a turn on the state mutex, which on two cores cost as
/// much CPU as the write itself.
#[derive(Clone, Default)]
struct Waiters(Arc<Condvar>);

impl Waiters {
    fn wake_all(&self) {
        self.0.notify_all();
    }

    /// Wakes one waiter of the pending batch to publish it (it leads).
    fn wake_leader(&self) {
        self.0.notify_one();
    }

    /// Sleeps with this batch's writers, `state` unlocked meanwhile.
    fn wait(&self, state: &mut parking_lot::MutexGuard<'_, State>) {
        self.0.wait(state);
    }
}

/// A batch's object on its way (see `State::flights`).
struct Flight {
    sequence: u64,
    end_lsn: u64,
    /// The writers of this batch (the pending batch's, handed over).
    waiters: Waiters,
    /// Once its object landed: what it publishes, and its size. It is
    /// acknowledged when every earlier flight has landed too.
    landed: Option<(LogObject, usize)>,
}

#[derive(Debug, Clone)]
struct Failed {
    cause: String,
    last_attempt: Instant,
}

impl ObjectWal {
    /// Step 1 of opening shared data: chooses this process's epoch, one
    /// above every log present, and claims it by creating sequence 0 of its
    /// own log (create-if-absent; a process claiming the same epoch at the
    /// same moment makes one of the two move on to the next).
    ///
    /// Fencing invariant E1: epochs only grow. A log's claim is deleted
    /// only by an owner whose own, higher log exists, so the highest log id
    /// never goes down, and every manifest epoch is some log's id.
    pub fn claim(files: Arc<dyn FileStore>, root: &Path) -> Result<LogClaim> {
        ObjectWal::claim_with(files, root, 1)
    }

    /// [`ObjectWal::claim`] for a log that will keep up to
    /// `objects_in_flight` objects on their way (clamped to
    /// 1..=[`MAX_OBJECTS_IN_FLIGHT`]; the log opened with this claim never
    /// keeps more, whatever its options say). The claim records it: a
    /// fencer must fence that many numbers after the newest it lists, and
    /// the missing ones among that many before, for no late publication
    /// to land where replay would miss it (W1) or after the fence (W2).
    /// One, the default, keeps the claim's bytes as they always were.
    pub fn claim_with(
        files: Arc<dyn FileStore>,
        root: &Path,
        objects_in_flight: usize,
    ) -> Result<LogClaim> {
        let objects_in_flight = objects_in_flight.clamp(1, MAX_OBJECTS_IN_FLIGHT);
        let mut body = Vec::new();
        if objects_in_flight > 1 {
            coding::put_u64_le(&mut body, objects_in_flight as u64);
        }
        let dir = root.join(OBJECT_WAL_DIR);
        let highest = files
            .list_dirs(&dir)?
            .iter()
            .filter_map(|d| number_of(d))
            .max()
            .unwrap_or(0);
        let mut epoch = highest + 1;
        for _ in 0..64 {
            let bytes = encode_object(Kind::Claim, epoch, 0, &body);
            match publish(files.as_ref(), &object_path(root, epoch, 0), &bytes) {
                Ok(()) => {
                    tracing::info!(epoch, "claimed an epoch on the shared storage");
                    return Ok(LogClaim {
                        files,
                        root: root.to_path_buf(),
                        fence: Arc::new(Fence::new(epoch)),
                        objects_in_flight,
                    });
                }
                Err(e) if is_already_exists(&e) => epoch += 1,
                Err(e) => return Err(e),
            }
        }
        Err(Error::WalFailed(
            "could not claim an epoch: other processes kept claiming the same ones".into(),
        ))
    }

    /// Step 2: replays every older log (ascending log id, then sequence)
    /// into `apply`, fences each one that is neither fenced nor closed, and
    /// starts the own log after its claim. The stores must already be open
    /// (and so fenced) with the claim's fence.
    ///
    /// A log object that fails its checks is [`Error::Corruption`] naming
    /// it: objects are published whole, so no damage is expected or
    /// forgiven.
    pub fn open(
        claim: LogClaim,
        options: ObjectWalOptions,
        mut apply: impl FnMut(WalEdit) -> Result<()>,
    ) -> Result<(Arc<ObjectWal>, ReplayReport)> {
        let epoch = claim.fence.epoch();
        let mut report = ReplayReport::default();
        let mut objects = Vec::new();
        let mut old_logs = Vec::new();
        for log_dir in claim.files.list_dirs(&claim.root.join(OBJECT_WAL_DIR))? {
            let Some(log_id) = number_of(&log_dir) else {
                continue;
            };
            if log_id == epoch {
                continue;
            }
            if log_id > epoch {
                // A newer owner is opening: it fences us; we never fence
                // (or replay) a newer log.
                continue;
            }
            let walked = walk_log(
                claim.files.as_ref(),
                &claim.root,
                log_id,
                Walk {
                    reading: Reading::Everything,
                    if_unended: IfUnended::Fence(epoch),
                },
                &mut apply,
                &mut objects,
                &mut report,
            )?;
            old_logs.push(walked.old);
        }
        let wal = ObjectWal::start(claim, options, objects, old_logs)?;
        Ok((wal, report))
    }

    /// Starts the own log after its claim without touching any other log:
    /// in a cluster the other logs belong to live region servers (the
    /// master fences a dead one's with [`fence_log`], and the servers that
    /// reopen its regions replay it with [`replay_log`]).
    pub fn open_own(claim: LogClaim, options: ObjectWalOptions) -> Result<Arc<ObjectWal>> {
        ObjectWal::start(claim, options, Vec::new(), Vec::new())
    }

    /// The own log at sequence 1 after its claim, with the objects and
    /// older logs replay found (kept for retirement), and its committer.
    fn start(
        claim: LogClaim,
        options: ObjectWalOptions,
        objects: Vec<LogObject>,
        old_logs: Vec<OldLog>,
    ) -> Result<Arc<ObjectWal>> {
        let LogClaim {
            files,
            root,
            fence,
            objects_in_flight,
        } = claim;
        // Never more in flight than the claim told fencers to expect.
        let options = ObjectWalOptions {
            objects_in_flight: options
                .objects_in_flight
                .clamp(1, MAX_OBJECTS_IN_FLIGHT)
                .min(objects_in_flight),
            ..options
        };
        let files_append = files.can_append();
        let inner = Arc::new(Inner {
            files,
            root,
            fence,
            options,
            state: Mutex::new(State {
                next_lsn: 1,
                buf: Vec::new(),
                buf_records: 0,
                buf_regions: HashMap::new(),
                buf_since: None,
                taken_lsn: 0,
                published_lsn: 0,
                synced_lsn: 0,
                synced_sequence: 0,
                lost: Vec::new(),
                next_sequence: 1,
                acked_sequence: 0,
                flights: VecDeque::new(),
                in_flight: 0,
                failed: None,
                hurry: false,
                closing: false,
                closed: false,
                pending_waiters: Waiters::default(),
                appending_waiters: Waiters::default(),
            }),
            work: Condvar::new(),
            sync_turn: Mutex::new(()),
            objects: Mutex::new(objects),
            old_logs: Mutex::new(old_logs),
            stats: Counters::default(),
            appends: files_append,
            segment: Mutex::new(None),
            roll_requested: AtomicBool::new(false),
        });
        let committer_inner = Arc::clone(&inner);
        let committer = std::thread::Builder::new()
            .name("basalt-wal-commit".into())
            .spawn(move || committer_inner.run_committer())
            .map_err(|e| Error::WalFailed(format!("cannot start the log committer: {e}")))?;
        Ok(Arc::new(ObjectWal {
            inner,
            committer: Mutex::new(Some(committer)),
        }))
    }

    /// This process's epoch and whether it has been fenced.
    pub fn fence(&self) -> &Arc<Fence> {
        &self.inner.fence
    }

    /// The published objects holding records, oldest first.
    pub fn objects(&self) -> Vec<LogObject> {
        self.inner.objects.lock().clone()
    }

    /// The own log's id (the epoch).
    pub fn log_id(&self) -> u64 {
        self.inner.fence.epoch()
    }

    /// Every LSN up to this one is published (or failed).
    pub fn published_lsn(&self) -> u64 {
        self.inner.state.lock().published_lsn
    }

    /// Publishes the pending batch now instead of at the end of the group
    /// commit window (tests and callers that know no more edits are
    /// coming).
    pub fn publish_pending(&self) {
        self.inner.state.lock().hurry = true;
        self.inner.work.notify_all();
    }
}

/// What a walk of a log does when the log does not end with a fence or a
/// close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IfUnended {
    /// Fences it, the fence object naming this epoch (invariant W1).
    Fence(u64),
    /// Fails: its writer may still publish, so a read-only replay could
    /// miss its later edits.
    Refuse,
}

/// Which objects a walk of a log reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Every object, in order, replaying the batches into `apply`.
    Everything,
    /// Only the last object of each listing: enough to find how the log
    /// ends (nothing is replayed).
    EndOnly,
}

/// What one walk of a log does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Walk {
    reading: Reading,
    if_unended: IfUnended,
}

/// A walked log.
#[derive(Debug)]
struct Walked {
    /// What retirement needs to know of it.
    old: OldLog,
    /// The fence, seal or closed object it ends with.
    end: PathBuf,
    end_kind: Kind,
}

/// Writes the seal after the fence at `fence` of log `log_id` (invariant
/// W5): the length of the object before the fence, measured now that the
/// fence exists. Another fencer's seal already there is as good.
fn seal(
    files: &dyn FileStore,
    root: &Path,
    log_id: u64,
    fence: &Path,
    fencer_epoch: u64,
) -> Result<()> {
    let fence_sequence = number_of(fence)
        .ok_or_else(|| Error::invalid(format!("{} is not a log object name", fence.display())))?;
    let len = match fence_sequence.checked_sub(1) {
        None => 0,
        Some(sealed) => match files.size(&object_path(root, log_id, sealed)) {
            Ok(len) => len,
            // Retired by its writer: nothing of it is replayed anyway.
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
        },
    };
    let sealed = fence_sequence.saturating_sub(1);
    let path = object_path(root, log_id, fence_sequence + 1);
    match publish(files, &path, &encode_seal(fencer_epoch, sealed, len)) {
        Ok(()) => {
            tracing::info!(log = log_id, sealed, len, "sealed a fenced write-ahead log");
            Ok(())
        }
        Err(e) if is_already_exists(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Walks log `log_id` of another owner in sequence order until it ends
/// with a fence or a close, replaying its batches into `apply` (with
/// `Reading::Everything`); the one implementation behind `ObjectWal::open`
/// (replay and fence every older log), [`fence_log`], [`replay_log`] and
/// [`delete_log`].
///
/// 1. List the log's objects after those walked so far; read them (with
///    `Reading::EndOnly`, the last one only).
/// 2. A fence or closed object with nothing listed after it ends the log:
///    done. A fence with objects after it filled a slot its writer had
///    already published and retired (see W1 below): it ended nothing, and
///    the walk goes on.
/// 3. Unended: refuse (`IfUnended::Refuse`), or create the next sequence
///    number as a fence object and list again (`IfUnended::Fence`): the
///    next listing shows the fence as the end, or what the writer
///    published first, or that the fence landed in a retired slot.
fn walk_log<F: FnMut(WalEdit) -> Result<()>>(
    files: &dyn FileStore,
    root: &Path,
    log_id: u64,
    walk: Walk,
    apply: &mut F,
    objects: &mut Vec<LogObject>,
    report: &mut ReplayReport,
) -> Result<Walked> {
    let mut walk = walk;
    if let (Reading::Everything, IfUnended::Fence(fencer_epoch)) = (walk.reading, walk.if_unended) {
        if files.can_append() {
            // A segment can grow until the fence lands: end the log (fence
            // and seal) before reading any of it, then read what the seal
            // says.
            fence_log(files, root, log_id, fencer_epoch)?;
            walk.if_unended = IfUnended::Refuse;
        }
    }
    let dir = log_dir(root, log_id);
    let mut replay = Replay {
        log_id,
        appends: files.can_append(),
        torn: false,
        old: OldLog {
            id: log_id,
            markers: Vec::new(),
            closed: false,
        },
        pending: VecDeque::new(),
        objects,
        report,
        apply,
    };
    // The highest sequence number listed so far.
    let mut walked: Option<u64> = None;
    // Where a writer may have objects in flight (a store where each batch
    // is an object, and a claim saying more than one: see W1 below), how
    // many, every number listed so far, and the missing ones this walk has
    // fenced.
    let reach = match walk.if_unended {
        IfUnended::Fence(_) => claimed_in_flight(files, root, log_id)?,
        IfUnended::Refuse => 1,
    };
    let fence_gaps = reach > 1 && !files.can_append();
    let mut seen = BTreeSet::new();
    let mut gaps_fenced = BTreeSet::new();
    // The fence, seal or closed object met last, with nothing listed after
    // it.
    let mut end: Option<(PathBuf, Kind)> = None;
    // Each round that does not end the walk created a fence that was then
    // found not to end the log: its writer kept publishing. The bound turns
    // a bug into an error instead of a loop.
    for _ in 0..1024 {
        let listed: Vec<(u64, PathBuf)> = files
            .list(&dir)?
            .into_iter()
            .filter_map(|p| number_of(&p).map(|n| (n, p)))
            .collect();
        if let (true, IfUnended::Fence(fencer_epoch)) = (fence_gaps, walk.if_unended) {
            seen.extend(listed.iter().map(|(n, _)| *n));
            let gaps = gaps_to_fence(&seen, &gaps_fenced, reach);
            if !gaps.is_empty() {
                // Fencing invariant W1 with objects in flight: a number
                // missing among the newest may be a publication still on
                // its way, which its writer would acknowledge once it
                // lands (every earlier one has). A fence there makes it
                // collide instead. Then list again: what won the race is
                // read in order with the rest. (A gap left by retirement
                // takes a fence harmlessly: its writer never publishes
                // there again.)
                for gap in gaps {
                    gaps_fenced.insert(gap);
                    place_fence(files, root, log_id, gap, fencer_epoch)?;
                }
                continue;
            }
        }
        let listed: Vec<(u64, PathBuf)> = listed
            .into_iter()
            .filter(|(n, _)| walked.is_none_or(|w| *n > w))
            .collect();
        let count = listed.len();
        for (index, (sequence, path)) in listed.into_iter().enumerate() {
            walked = Some(sequence);
            // Only `Reading::Everything` reads past an end (an end-only
            // walk reads the last object of a listing, and lists again only
            // when that did not end the log).
            let after_end = end.take();
            if walk.reading == Reading::EndOnly && index + 1 < count {
                continue;
            }
            let read = read_object_or_torn(files, &path)?;
            if let Some((end_path, kind)) = after_end {
                let seal_of_fence = kind == Kind::Fence
                    && matches!(&read, Some(Read::Whole { decoded, .. }) if decoded.kind == Kind::Seal);
                // The run of fences after the newest number of a log with
                // objects in flight (W2).
                let fence_run = kind == Kind::Fence
                    && matches!(&read, Some(Read::Whole { decoded, .. }) if decoded.kind == Kind::Fence);
                if kind != Kind::Fence {
                    // Its writer publishes nothing after closing, and a
                    // fencer never fences a closed log nor follows a seal.
                    return Err(Error::Corruption {
                        path,
                        offset: 0,
                        message: format!(
                            "write-ahead log object after the log's {kind:?} object {}",
                            end_path.display()
                        ),
                    });
                }
                if !seal_of_fence && !fence_run {
                    tracing::warn!(
                        log = log_id,
                        fence = %end_path.display(),
                        "a fence of this log landed in a slot its writer had already retired or never filled; the log goes on after it"
                    );
                }
            }
            match read {
                // Fencing invariant W3: an object listed but gone by the
                // time it is read was retired by its writer, which retires
                // only objects whose every edit is in a store file that the
                // (already fenced) manifests of a newer opening include.
                // Nothing is lost by skipping it.
                None => continue,
                // Invariant W4 (a machine crash): a torn object ends what
                // the log replays. Only objects published visible and
                // never synced can tear, and the writer syncs its objects
                // in sequence order (`Inner::sync_through`), so the torn
                // one and every later one were promised to survive a
                // process crash only; replaying a later one without it
                // would apply edits out of their order.
                Some(Read::Torn { reason, len }) => {
                    replay.finish()?;
                    tracing::error!(log = log_id, object = %path.display(), %reason,
                        "a write-ahead log object was torn by a machine crash: \
                         replay ends before it (its edits were never synced)");
                    replay.report.torn_tail.get_or_insert(TornTail {
                        path: path.clone(),
                        offset: 0,
                        dropped_bytes: 0,
                        reason,
                    });
                    replay.torn = true;
                    replay.dropped(sequence, path, len);
                }
                Some(Read::Whole { decoded, len })
                    if replay.torn && matches!(decoded.kind, Kind::Records | Kind::Void) =>
                {
                    replay.dropped(sequence, path, len);
                }
                Some(Read::Whole { decoded, .. }) => {
                    let kind = decoded.kind;
                    if replay.object(decoded, sequence, path.clone())? {
                        end = Some((path, kind));
                    }
                }
            }
        }
        if let Some((end, kind)) = end.take() {
            let fence_to_seal = kind == Kind::Fence && files.can_append();
            match (fence_to_seal, walk.if_unended) {
                // Invariant W5: on a store that appends, the fencer seals
                // what it fenced. The fenced writer's segment may still
                // grow (a batch it appends after the fence is refused by
                // its own check, W1), so replay needs the length the
                // segment had once the fence existed: every batch its
                // writer acknowledged lies below it.
                (true, IfUnended::Fence(fencer_epoch)) => {
                    seal(files, root, log_id, &end, fencer_epoch)?;
                    continue;
                }
                (true, IfUnended::Refuse) => tracing::warn!(
                    log = log_id,
                    fence = %end.display(),
                    "this log is fenced but not sealed (its fencer stopped in between); \
                     replaying its last segment whole"
                ),
                _ => {}
            }
            replay.finish()?;
            return Ok(Walked {
                old: replay.old,
                end,
                end_kind: kind,
            });
        }
        let fencer_epoch = match walk.if_unended {
            IfUnended::Fence(epoch) => epoch,
            IfUnended::Refuse if walked.is_none() => {
                return Err(Error::WalFailed(format!(
                    "write-ahead log {log_id} has no objects: there is nothing to replay"
                )))
            }
            IfUnended::Refuse => {
                return Err(Error::WalFailed(format!(
                    "write-ahead log {log_id} has not ended (neither fenced nor closed): \
                     its writer may still publish edits a replay now would miss; fence it first"
                )))
            }
        };
        // Fencing invariant W1: the log's writer publishes its objects at
        // consecutive sequence numbers, create-if-absent, acknowledges a
        // batch only once its object and every earlier one exist (the
        // missing numbers among the newest were fenced above, where a
        // store publishes an object a batch), and keeps its newest
        // acknowledged object while the log is open (`Inner::retire`). Creating
        // the number after the newest listed one therefore ends the log
        // (every batch it acknowledged is at a lower number, and its next
        // publication collides), unless the writer published after the
        // listing: then the creation collides, or (the writer having
        // retired that number too) succeeds in a slot the writer left, and
        // the next listing shows the writer's newer objects after it. A
        // pending batch is applied only once the fence is seen as the end
        // (step 2): until then its writer may still void it.
        // With objects in flight, the numbers a publication already on
        // its way may take after the newest are fenced too, so that
        // nothing lands after the fence that ends the log (W2).
        let next = walked.map_or(0, |w| w + 1);
        let last = if fence_gaps { next + reach - 1 } else { next };
        for sequence in next..=last {
            place_fence(files, root, log_id, sequence, fencer_epoch)?;
        }
    }
    Err(Error::WalFailed(format!(
        "could not fence log {log_id}: its writer kept publishing"
    )))
}

/// Creates a fence of `fencer_epoch` at number `sequence` of log `log_id`.
/// Finding the number taken is no error: the log's writer (or another
/// fencer) won the race, and the next listing reads what it published.
fn place_fence(
    files: &dyn FileStore,
    root: &Path,
    log_id: u64,
    sequence: u64,
    fencer_epoch: u64,
) -> Result<()> {
    let path = object_path(root, log_id, sequence);
    match publish(
        files,
        &path,
        &encode_object(Kind::Fence, fencer_epoch, 0, &[]),
    ) {
        Ok(()) => {
            tracing::info!(
                log = log_id,
                sequence,
                epoch = fencer_epoch,
                "fenced a write-ahead log"
            );
            Ok(())
        }
        Err(e) if is_already_exists(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

/// How many objects the writer of log `log_id` keeps in flight at most,
/// as its claim says (one when the claim is gone: a deleted log).
fn claimed_in_flight(files: &dyn FileStore, root: &Path, log_id: u64) -> Result<u64> {
    Ok(read_object(files, &object_path(root, log_id, 0))?
        .filter(|claim| claim.kind == Kind::Claim)
        .map_or(1, |claim| claim.claimed_in_flight))
}

/// The numbers missing among the newest `reach` of a log's listed ones
/// (`seen`), above its lowest, that have not been fenced yet: where a
/// writer keeping `reach` objects in flight may still have one on its way.
fn gaps_to_fence(seen: &BTreeSet<u64>, fenced: &BTreeSet<u64>, reach: u64) -> Vec<u64> {
    let (Some(&lowest), Some(&newest)) = (seen.first(), seen.last()) else {
        return Vec::new();
    };
    let from = lowest.max(newest.saturating_sub(reach.saturating_sub(1)));
    (from..=newest)
        .filter(|n| !seen.contains(n) && !fenced.contains(n))
        .collect()
}

/// The logs on the storage (each a region server's or process's, its id
/// the epoch it claimed), ascending; logs deleted with [`delete_log`] are
/// left out. A log is listed from its claim on, fenced or closed too,
/// until it is deleted.
pub fn list_logs(files: &dyn FileStore, root: &Path) -> Result<Vec<u64>> {
    let mut ids = Vec::new();
    for dir in files.list_dirs(&root.join(OBJECT_WAL_DIR))? {
        let Some(id) = number_of(&dir) else {
            continue;
        };
        // A deleted log keeps only its end marker (see `delete_log`): the
        // claim is what tells a log that is still there.
        if files.exists(&object_path(root, id, 0))? {
            ids.push(id);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// Ends log `log_id` (another process's: the master calls it for a dead
/// region server's log, before any of its regions reopens elsewhere) by
/// creating its next sequence number as a fence object naming
/// `fencer_epoch`: from then on its writer, if it is still alive, can
/// acknowledge nothing more (invariant W1), and its first publication
/// fails, which trips its fence: every region it hosts refuses reads and
/// writes.
///
/// Idempotent: a log already ending with a fence or closed object is left
/// as it is. A race with the log's writer is handled as at open: a
/// collision means the writer published first, and the next number is
/// tried. Reads only the newest object of each listing, not the batches.
/// A log id nobody claimed yet gets a fence as its claim object: no
/// process can claim that id afterwards.
pub fn fence_log(files: &dyn FileStore, root: &Path, log_id: u64, fencer_epoch: u64) -> Result<()> {
    walk_log(
        files,
        root,
        log_id,
        Walk {
            reading: Reading::EndOnly,
            if_unended: IfUnended::Fence(fencer_epoch),
        },
        &mut |_| Ok(()),
        &mut Vec::new(),
        &mut ReplayReport::default(),
    )?;
    Ok(())
}

/// Replays the ended log `log_id` (fenced with [`fence_log`], or closed)
/// into `apply`, in order, without writing anything: batches a `Void`
/// object voids are skipped, as at open. A region server opening a region
/// that a dead server hosted calls it with the dead server's log and
/// applies that region's edits only.
///
/// A log that has not ended is [`Error::WalFailed`] naming it: its writer
/// may still publish, so a replay now could miss its later edits. An
/// object that fails its checks is [`Error::Corruption`] naming it.
pub fn replay_log(
    files: &dyn FileStore,
    root: &Path,
    log_id: u64,
    mut apply: impl FnMut(WalEdit) -> Result<()>,
) -> Result<ReplayReport> {
    let mut report = ReplayReport::default();
    walk_log(
        files,
        root,
        log_id,
        Walk {
            reading: Reading::Everything,
            if_unended: IfUnended::Refuse,
        },
        &mut apply,
        &mut Vec::new(),
        &mut report,
    )?;
    Ok(report)
}

/// Deletes the ended log `log_id` (fenced or closed; an unended one is
/// [`Error::WalFailed`]): every object but the fence or closed object it
/// ends with, its claim last. [`list_logs`] no longer lists it.
///
/// The caller guarantees that nothing needs the log any more: every
/// region with edits in it was reopened elsewhere (after replaying it)
/// and flushed since, so its edits are all in store files.
///
/// The end marker stays, a few bytes, as a tombstone: the log's directory
/// remains, so the highest log id never goes down while this log is the
/// highest one (fencing invariant E1: a later claim still takes a higher
/// epoch; with a higher log present, that one keeps the highest id
/// anyway); and a fenced writer that is only paused still finds the fence
/// at its next number (W1) instead of a freed name.
pub fn delete_log(files: &dyn FileStore, root: &Path, log_id: u64) -> Result<()> {
    let walked = walk_log(
        files,
        root,
        log_id,
        Walk {
            reading: Reading::EndOnly,
            if_unended: IfUnended::Refuse,
        },
        &mut |_| Ok(()),
        &mut Vec::new(),
        &mut ReplayReport::default(),
    )?;
    let claim = object_path(root, log_id, 0);
    // A seal keeps its fence: a fenced writer that is only paused looks
    // for the fence at the number after its segment (W1).
    let fence_of_seal = (walked.end_kind == Kind::Seal)
        .then(|| number_of(&walked.end).and_then(|n| n.checked_sub(1)))
        .flatten()
        .map(|n| object_path(root, log_id, n));
    // With objects in flight, the fences just before the end (in the
    // numbers that were missing, and after the newest) stay too: a stale
    // writer's publication still on its way there must keep colliding (W1).
    let reach = claimed_in_flight(files, root, log_id)?;
    let end_number = number_of(&walked.end).unwrap_or(0);
    let near_end = end_number.saturating_sub(2 * reach)..end_number;
    for path in files.list(&log_dir(root, log_id))? {
        if path == walked.end || path == claim || Some(&path) == fence_of_seal.as_ref() {
            continue;
        }
        let gap_fence = reach > 1
            && !files.can_append()
            && number_of(&path).is_some_and(|n| near_end.contains(&n))
            && matches!(read_object(files, &path), Ok(Some(found)) if found.kind == Kind::Fence);
        if !gap_fence {
            files.delete(&path)?;
        }
    }
    // Last: until the claim goes, the log is listed, and an interrupted
    // deletion is simply run again.
    if walked.end != claim {
        files.delete(&claim)?;
    }
    tracing::info!(log = log_id, "deleted a write-ahead log");
    Ok(())
}

/// Replay of one older log. A batch is applied only once the object after
/// it is known not to void it (or the log ends).
struct Replay<'a, F> {
    log_id: u64,
    /// The store appends: the log's newest batch object may be a segment
    /// still growing when a fence lands, read only up to its seal.
    appends: bool,
    /// A torn object or frame was met: nothing after it is replayed
    /// (invariant W4).
    torn: bool,
    old: OldLog,
    /// The last batches read, oldest first, not applied yet: a `Void`
    /// after them may still void some (at most [`MAX_OBJECTS_IN_FLIGHT`]
    /// back), and a seal may still cut the newest.
    pending: VecDeque<(u64, PathBuf, Decoded)>,
    objects: &'a mut Vec<LogObject>,
    report: &'a mut ReplayReport,
    apply: &'a mut F,
}

impl<F: FnMut(WalEdit) -> Result<()>> Replay<'_, F> {
    /// Takes the next object; true when it ends the log (a fence or a
    /// close).
    fn object(&mut self, decoded: Decoded, sequence: u64, path: PathBuf) -> Result<bool> {
        if decoded.kind == Kind::Void {
            if let Some((first, last)) = decoded.voids {
                let (voided, kept): (VecDeque<_>, VecDeque<_>) = std::mem::take(&mut self.pending)
                    .into_iter()
                    .partition(|(seq, _, _)| (first..=last).contains(seq));
                self.pending = kept;
                for (voided, voided_path, _) in voided {
                    tracing::debug!(
                        log = self.log_id,
                        sequence = voided,
                        "skipping a voided log object"
                    );
                    self.listed(voided, voided_path, 0, BTreeMap::new());
                }
            }
            // Kept until the voided objects are gone (retirement order).
            self.listed(sequence, path, 0, BTreeMap::new());
            return Ok(false);
        }
        if decoded.kind == Kind::Seal {
            // Invariant W5: the segment before the fence counts up to the
            // length the fencer measured once its fence existed.
            if let (Some((pending_sequence, _, segment)), Some((sealed, len))) =
                (self.pending.back_mut(), decoded.seals)
            {
                if *pending_sequence == sealed {
                    segment.cut_at(len);
                }
            }
            self.finish()?;
            self.old.markers.push(path);
            return Ok(true);
        }
        let growing_segment = self.appends
            && decoded.kind == Kind::Fence
            && self
                .pending
                .back()
                .is_some_and(|(_, _, pending)| pending.kind == Kind::Records);
        if !growing_segment && decoded.kind != Kind::Records {
            self.finish()?;
        }
        match decoded.kind {
            Kind::Claim => {
                self.old.markers.push(path);
                Ok(false)
            }
            Kind::Fence => {
                // Fencing invariant W2: nothing follows the fences that
                // end a log but its seal (W5). Its writer could not
                // publish at these numbers, and publishes only within K
                // (its claim's objects in flight) of its oldest
                // unacknowledged number, so it published nothing later. On
                // a store that appends, the batch before it waits for the
                // seal.
                self.old.markers.push(path);
                Ok(true)
            }
            Kind::Closed => {
                self.old.markers.push(path);
                self.old.closed = true;
                Ok(true)
            }
            Kind::Records | Kind::Void => {
                self.pending.push_back((sequence, path, decoded));
                // Past a void's reach nothing can void the oldest any
                // more. A store that appends publishes one batch at a
                // time, so its voids reach one object back.
                let reach = if self.appends {
                    1
                } else {
                    MAX_OBJECTS_IN_FLIGHT
                };
                while self.pending.len() > reach {
                    self.apply_oldest()?;
                }
                Ok(false)
            }
            Kind::Seal => Ok(true),
        }
    }

    /// Applies every pending batch, in order.
    fn finish(&mut self) -> Result<()> {
        while !self.pending.is_empty() {
            self.apply_oldest()?;
        }
        Ok(())
    }

    /// Applies the oldest pending batch.
    fn apply_oldest(&mut self) -> Result<()> {
        let Some((sequence, path, decoded)) = self.pending.pop_front() else {
            return Ok(());
        };
        self.report.segments += 1;
        let mut regions = BTreeMap::new();
        let records = decoded.edits.len() as u64;
        for edit in decoded.edits {
            let max = regions.entry(edit.region_id).or_insert(0);
            *max = (*max).max(edit.sequence_id);
            (self.apply)(edit)?;
            self.report.records += 1;
        }
        if let Some((offset, reason)) = decoded.torn {
            // A segment's last batch was cut short (a machine crash before
            // it was synced, or a writer cut off by its fence): it was never
            // acknowledged, and replay ends there (invariant W4).
            tracing::warn!(log = self.log_id, segment = %path.display(), offset, %reason,
                "a write-ahead log segment ends with a partial batch: replay ends before it");
            self.report.torn_tail.get_or_insert(TornTail {
                path: path.clone(),
                offset,
                dropped_bytes: 0,
                reason,
            });
            self.torn = true;
        }
        self.listed(sequence, path, records, regions);
        Ok(())
    }

    /// An object after a torn one (or the torn one): not applied, and
    /// listed so that the log's retirement deletes it with the rest.
    fn dropped(&mut self, sequence: u64, path: PathBuf, len: u64) {
        if let Some(torn) = &mut self.report.torn_tail {
            torn.dropped_bytes += len;
        }
        self.listed(sequence, path, 0, BTreeMap::new());
    }

    fn listed(&mut self, sequence: u64, path: PathBuf, records: u64, regions: BTreeMap<u64, u64>) {
        self.objects.push(LogObject {
            log_id: self.log_id,
            sequence,
            path,
            records,
            max_sequence_ids: regions,
        });
    }
}

/// Reads and decodes one object; `None` when it is gone.
fn read_object(files: &dyn FileStore, path: &Path) -> Result<Option<Decoded>> {
    match read_object_or_torn(files, path)? {
        None => Ok(None),
        Some(Read::Whole { decoded, .. }) => Ok(Some(decoded)),
        Some(Read::Torn { reason, .. }) => Err(Error::Corruption {
            path: path.to_path_buf(),
            offset: 0,
            message: format!("write-ahead log object: {reason}"),
        }),
    }
}

/// One object as a walk reads it.
enum Read {
    Whole {
        decoded: Decoded,
        len: u64,
    },
    /// What a machine crash leaves of an object published visible before
    /// durable (see [`torn_reason`]).
    Torn {
        reason: String,
        len: u64,
    },
}

/// [`read_object`], telling a torn object from a corrupt one.
fn read_object_or_torn(files: &dyn FileStore, path: &Path) -> Result<Option<Read>> {
    let bytes = match files.read_all(path) {
        Ok(bytes) => bytes,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    if bytes.is_empty() && files.can_append() {
        // A segment created and not yet appended to (or whose first batch
        // failed and was cut back): an empty batch.
        return Ok(Some(Read::Whole {
            decoded: Decoded {
                kind: Kind::Records,
                epoch: 0,
                edits: Vec::new(),
                voids: None,
                seals: None,
                claimed_in_flight: 1,
                frames: Vec::new(),
                torn: None,
            },
            len: 0,
        }));
    }
    if let Some(reason) = torn_reason(&bytes) {
        return Ok(Some(Read::Torn {
            reason,
            len: bytes.len() as u64,
        }));
    }
    decode_object(&bytes)
        .map(|decoded| {
            Some(Read::Whole {
                decoded,
                len: bytes.len() as u64,
            })
        })
        .map_err(|message| Error::Corruption {
            path: path.to_path_buf(),
            offset: 0,
            message: format!("write-ahead log object: {message}"),
        })
}

/// Why `bytes` is a **torn** object, if it is one: what a machine crash
/// can leave of an object published visible and never synced
/// (`FileStore::publish_visible` on a shared directory). File systems
/// persist a new file's size no later than its data (ext4's ordered mode,
/// XFS), so such an object is a prefix of the whole (often empty), or
/// reads as zeros where its blocks were never written. Anything else that
/// does not decode (a whole-length object failing its checksum) is
/// corruption, never silently dropped.
fn torn_reason(bytes: &[u8]) -> Option<String> {
    let Some(header) = bytes.get(..HEADER_LEN) else {
        return Some(format!("{} bytes is shorter than the header", bytes.len()));
    };
    if header.iter().all(|&b| b == 0) {
        return Some("the header reads as zeros".into());
    }
    let header_crc = coding::u32_le(header, 44, "header checksum").ok()?;
    if header[..8] != MAGIC || crc32c::crc32c(&header[..44]) != header_crc {
        return None;
    }
    let body_len = coding::u64_le(header, 32, "body length").ok()?;
    let body = (bytes.len() - HEADER_LEN) as u64;
    (body < body_len).then(|| format!("body is {body} bytes, header says {body_len}"))
}

/// Creates `path` holding `bytes`, create-if-absent.
fn publish(files: &dyn FileStore, path: &Path, bytes: &[u8]) -> Result<()> {
    files.publish(path, bytes)
}

/// What holds a log object's name that a create-if-absent found taken
/// (see `Inner::taken_by`).
enum TakenBy {
    /// This very publication: its `PUT` landed, the answer was lost.
    ThisPublication,
    /// Another object of this log's own epoch (a batch reported failed
    /// that landed later), or an unreadable one: not a fence.
    OwnEarlierBatch,
    /// A fence, or an object of another epoch: a newer owner ended the log.
    NewerOwner(u64),
}

/// What creating one of the repair's objects found (`publish_resolving`).
enum Resolved {
    Published,
    OwnBatch,
    Fenced,
}

/// Why a new segment could not be started.
enum Roll {
    /// A newer owner's object holds the number: the log is fenced.
    Fenced(Error),
    /// Anything else, at the path: the log fails until repaired.
    Failed(PathBuf, String),
}

/// One batch taken by the committer.
struct Batch {
    bytes: Vec<u8>,
    records: u64,
    regions: HashMap<u64, u64>,
    end_lsn: u64,
    /// Its object's number, where each batch is an object (a segment's
    /// writer numbers nothing per batch).
    sequence: Option<u64>,
}

impl Inner {
    fn run_committer(&self) {
        loop {
            let batch = {
                let mut st = self.state.lock();
                loop {
                    if st.in_flight >= self.max_in_flight() {
                        // Woken when a publication is done.
                        self.work.wait(&mut st);
                        continue;
                    }
                    if st.failed.is_some() && !self.fence.is_tripped() {
                        if st.in_flight > 0 {
                            // The repair reads every number the failed
                            // window took: once nothing is on its way.
                            self.work.wait(&mut st);
                            continue;
                        }
                        let due = st
                            .failed
                            .as_ref()
                            .map(|f| f.last_attempt + self.options.repair_interval)
                            .unwrap_or_else(Instant::now);
                        let now = Instant::now();
                        if now >= due {
                            break None;
                        }
                        if st.closing {
                            return;
                        }
                        self.work.wait_for(&mut st, due - now);
                        continue;
                    }
                    if st.buf_records > 0 {
                        // Closing publishes at once: nothing more joins.
                        if st.closing || st.hurry {
                            break Some(self.take_batch(&mut st));
                        }
                        // Without a window, waiting writers lead their
                        // batches; the committer publishes when hurried
                        // (an `ASYNC_WAL` write, nobody waiting for it).
                        if !self.writers_lead() {
                            let since = st.buf_since.unwrap_or_else(Instant::now);
                            let due = since + self.options.group_commit_window;
                            let now = Instant::now();
                            if now >= due {
                                break Some(self.take_batch(&mut st));
                            }
                            self.work.wait_for(&mut st, due - now);
                            continue;
                        }
                    }
                    if st.closing || self.fence.is_tripped() {
                        return;
                    }
                    self.work.wait(&mut st);
                }
            };
            match batch {
                Some(batch) => self.commit(batch),
                None => self.repair(),
            }
        }
    }

    /// With no group-commit window, a writer waiting for its edit
    /// publishes the pending batch itself when no other is in flight
    /// (`wait_published`), as the local log's leader does: a hand-off to
    /// the committer thread and back cost two context switches a batch,
    /// most of a small write's time on two cores.
    fn writers_lead(&self) -> bool {
        self.options.group_commit_window.is_zero()
    }

    /// How many publications may run at once: one on a store that
    /// appends (a segment takes one batch at a time), else
    /// `objects_in_flight`.
    fn max_in_flight(&self) -> usize {
        if self.appends {
            1
        } else {
            self.options
                .objects_in_flight
                .clamp(1, MAX_OBJECTS_IN_FLIGHT)
        }
    }

    /// Takes the pending batch to publish (and, where each batch is an
    /// object, its number); the caller must then `commit` it.
    fn take_batch(&self, st: &mut State) -> Batch {
        let end_lsn = st.next_lsn - 1;
        if self.appends {
            st.appending_waiters = std::mem::take(&mut st.pending_waiters);
        }
        let sequence = (!self.appends).then(|| {
            let sequence = st.next_sequence;
            st.next_sequence += 1;
            st.flights.push_back(Flight {
                sequence,
                end_lsn,
                waiters: std::mem::take(&mut st.pending_waiters),
                landed: None,
            });
            sequence
        });
        let batch = Batch {
            bytes: std::mem::take(&mut st.buf),
            records: std::mem::take(&mut st.buf_records),
            regions: std::mem::take(&mut st.buf_regions),
            end_lsn,
            sequence,
        };
        st.buf_since = None;
        st.hurry = false;
        st.taken_lsn = end_lsn;
        st.in_flight += 1;
        batch
    }

    /// Publishes a batch `take_batch` took, then lets the next one go:
    /// wakes the writers it settled (`published` wakes those of
    /// acknowledged flights; a segment's batch settles here), one writer of
    /// the pending batch to lead it, and the committer.
    fn commit(&self, batch: Batch) {
        self.publish_batch(batch);
        let mut st = self.state.lock();
        st.in_flight -= 1;
        if self.appends {
            std::mem::take(&mut st.appending_waiters).wake_all();
        }
        // With a window the committer takes every batch: nobody to lead.
        if st.buf_records > 0 && self.writers_lead() {
            st.pending_waiters.wake_leader();
        }
        drop(st);
        self.work.notify_one();
    }

    /// Wakes every waiting writer, whatever it waits for: after a failure,
    /// a fence or a repair, each looks at the log's state again.
    fn wake_every_writer(&self, st: &State) {
        st.pending_waiters.wake_all();
        st.appending_waiters.wake_all();
        for flight in &st.flights {
            flight.waiters.wake_all();
        }
    }

    /// [`Inner::wake_every_writer`] when the state is not locked.
    fn wake_every_writer_unlocked(&self) {
        self.wake_every_writer(&self.state.lock());
    }

    /// Publishes a batch as the own log's next object (group-commit steps
    /// 2 and 3), or fails it.
    fn publish_batch(&self, batch: Batch) {
        if let Err(fenced) = self.fence.check() {
            // Fenced through another path (a manifest or catalog
            // collision): nothing more is published.
            let mut st = self.state.lock();
            self.fail_pending(&mut st, &fenced.to_string());
            return;
        }
        let Some(sequence) = batch.sequence else {
            self.append_batch(batch);
            return;
        };
        let epoch = self.fence.epoch();
        let path = object_path(&self.root, epoch, sequence);
        let bytes = encode_object(Kind::Records, epoch, batch.records, &batch.bytes);
        // Visible first; synced only for the writers that ask for it
        // (`sync_through`), as the local log fsyncs only for them.
        let result = self.files.publish_visible(&path, &bytes);
        let mut st = self.state.lock();
        if !st.flights.iter().any(|f| f.sequence == sequence) {
            // Abandoned: the log failed or was fenced while this was on
            // its way, and its writers were told. Whatever it did, the
            // repair reads the number before the log writes again.
            return;
        }
        match result {
            Ok(()) => self.published(&mut st, batch, sequence, path, bytes.len()),
            Err(e) if is_already_exists(&e) => {
                drop(st);
                let taken = self.taken_by(&path, &bytes);
                st = self.state.lock();
                match taken {
                    // Our own PUT landed although its answer was lost (a
                    // retried conditional PUT is refused by its own first
                    // attempt): the batch is in the log, exactly as written.
                    Ok(TakenBy::ThisPublication) => {
                        self.published(&mut st, batch, sequence, path, bytes.len())
                    }
                    // Fencing invariant W1 seen from the stale writer: our
                    // next number is taken by a newer owner's fence. The
                    // batch is never acknowledged (its object does not
                    // exist), and nothing is written again.
                    Ok(TakenBy::NewerOwner(newer)) => {
                        drop(st);
                        let error = self.fence.trip(
                            newer,
                            format!("log object {} already exists", path.display()),
                        );
                        st = self.state.lock();
                        self.fail_pending(&mut st, &error.to_string());
                    }
                    // Not a fence: an earlier batch of ours that was
                    // reported failed landed since. The repair voids it.
                    Ok(TakenBy::OwnEarlierBatch) => self.fail_publication(
                        &mut st,
                        &path,
                        format!(
                            "log object {} holds an earlier batch of this log",
                            path.display()
                        ),
                    ),
                    Err(read) => self.fail_publication(&mut st, &path, read.to_string()),
                }
            }
            Err(e) => self.fail_publication(&mut st, &path, e.to_string()),
        }
    }

    /// Appends a batch to the open segment (starting one first when there
    /// is none, it is full, or retirement asked for a new one), then looks
    /// at the number after the segment: the batch is acknowledged only if
    /// no fence is there (invariant W1 on a store that appends).
    fn append_batch(&self, batch: Batch) {
        let epoch = self.fence.epoch();
        let frame = encode_object(Kind::Records, epoch, batch.records, &batch.bytes);
        let mut segment = self.segment.lock();
        let roll = self.roll_requested.load(Ordering::Relaxed)
            || segment
                .as_ref()
                .is_none_or(|open| open.len >= self.options.segment_max_bytes);
        if roll {
            if let Err(cause) = self.start_segment(&mut segment) {
                drop(segment);
                let mut st = self.state.lock();
                match cause {
                    Roll::Fenced(error) => self.fail_pending(&mut st, &error.to_string()),
                    Roll::Failed(path, cause) => self.fail_publication(&mut st, &path, cause),
                }
                return;
            }
        }
        let Some(open) = segment.as_mut() else {
            return;
        };
        if let Err(e) = open.file.append(&frame) {
            open.needs_cut = true;
            let path = open.path.clone();
            drop(segment);
            let mut st = self.state.lock();
            self.fail_publication(&mut st, &path, e.to_string());
            return;
        }
        let start = open.len;
        open.len += frame.len() as u64;
        let next = object_path(&self.root, epoch, open.sequence + 1);
        match self.files.exists(&next) {
            Ok(false) => {
                // Recorded before the segment's lock goes: a retirement
                // that rolls the segment must see this batch's edits in it,
                // or it would delete the segment as all flushed.
                let sequence = open.sequence;
                let mut st = self.state.lock();
                self.appended(&mut st, batch, sequence, frame.len());
                drop(st);
                drop(segment);
            }
            Ok(true) => {
                // A fencer ended the log after the segment. The batch may
                // lie below its seal (a newer owner replays it) or past it;
                // its writers are told it failed either way: the outcome of
                // a write cut off by a fence is unknown, as in HBase.
                let path = next.clone();
                drop(segment);
                let newer = match read_object(self.files.as_ref(), &path) {
                    Ok(Some(found)) => found.epoch,
                    _ => epoch,
                };
                let error = self.fence.trip(
                    newer,
                    format!(
                        "log object {} exists after the open segment",
                        path.display()
                    ),
                );
                let mut st = self.state.lock();
                self.fail_pending(&mut st, &error.to_string());
            }
            Err(e) => {
                // Not known to be safe: cut the batch back out.
                open.len = start;
                open.needs_cut = true;
                let path = open.path.clone();
                drop(segment);
                let mut st = self.state.lock();
                self.fail_publication(&mut st, &path, e.to_string());
            }
        }
    }

    /// Starts the own log's next segment at the next sequence number,
    /// create-if-absent. The previous one is synced first: only the
    /// newest segment can then be torn by a machine crash, so replay never
    /// skips a synced segment behind a torn one (invariant W4).
    fn start_segment(&self, segment: &mut Option<OpenSegment>) -> std::result::Result<(), Roll> {
        if let Some(previous) = segment.as_mut() {
            if previous.needs_cut {
                return Err(Roll::Failed(
                    previous.path.clone(),
                    "the segment still holds a failed batch".into(),
                ));
            }
            previous
                .file
                .sync()
                .map_err(|e| Roll::Failed(previous.path.clone(), e.to_string()))?;
        }
        let epoch = self.fence.epoch();
        let sequence = self.state.lock().next_sequence;
        let path = object_path(&self.root, epoch, sequence);
        let file = match self.files.create_appendable(&path) {
            Ok(file) => file,
            Err(e) if is_already_exists(&e) => {
                return Err(match read_object(self.files.as_ref(), &path) {
                    Ok(Some(found)) if found.kind == Kind::Fence || found.epoch != epoch => {
                        Roll::Fenced(self.fence.trip(
                            found.epoch,
                            format!("log object {} already exists", path.display()),
                        ))
                    }
                    _ => Roll::Failed(
                        path.clone(),
                        format!("log object {} already exists", path.display()),
                    ),
                })
            }
            Err(e) => return Err(Roll::Failed(path, e.to_string())),
        };
        // Synced segments before this one stay synced.
        let mut st = self.state.lock();
        st.next_sequence = sequence + 1;
        if segment.is_some() {
            st.synced_sequence = st.synced_sequence.max(sequence - 1);
        }
        drop(st);
        self.objects.lock().push(LogObject {
            log_id: epoch,
            sequence,
            path: path.clone(),
            records: 0,
            max_sequence_ids: BTreeMap::new(),
        });
        self.roll_requested.store(false, Ordering::Relaxed);
        *segment = Some(OpenSegment {
            file,
            sequence,
            path,
            len: 0,
            needs_cut: false,
        });
        Ok(())
    }

    /// On a store that appends: when every batch in the open segment is
    /// flushed, starts a new (empty) segment now, so that this retirement
    /// deletes the old one. The open segment is the log's newest object,
    /// which stays while the log is open (W1): without the roll, a region
    /// that moved away would keep its edits in this log until the segment
    /// filled. A roll that fails is left to the next batch.
    fn roll_if_flushed(&self, flushed_through: &dyn Fn(u64) -> Option<u64>) {
        let mut segment = self.segment.lock();
        let Some(open) = segment.as_ref() else {
            return;
        };
        if open.needs_cut {
            return;
        }
        let own = self.fence.epoch();
        let flushed = self
            .objects
            .lock()
            .iter()
            .find(|o| o.log_id == own && o.sequence == open.sequence)
            .is_some_and(|o| o.records > 0 && o.flushed(flushed_through));
        let closing = {
            let st = self.state.lock();
            st.closing || st.closed || st.failed.is_some()
        };
        if !flushed || closing || self.fence.is_tripped() {
            return;
        }
        if let Err(cause) = self.start_segment(&mut segment) {
            let cause = match cause {
                Roll::Fenced(error) => error.to_string(),
                Roll::Failed(_, cause) => cause,
            };
            tracing::warn!(error = %cause, "starting a new log segment for retirement failed; the next batch tries again");
            self.roll_requested.store(true, Ordering::Relaxed);
        }
    }

    /// Counts one batch written (an object or an append) of `records`
    /// records in `len` bytes.
    fn count_write(&self, records: u64, len: usize) {
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        self.stats
            .records_written
            .fetch_add(records, Ordering::Relaxed);
        self.stats
            .bytes_written
            .fetch_add(len as u64, Ordering::Relaxed);
    }

    /// Records `batch` as appended to the own segment `sequence`.
    fn appended(&self, st: &mut State, batch: Batch, sequence: u64, len: usize) {
        st.published_lsn = batch.end_lsn;
        self.count_write(batch.records, len);
        let own = self.fence.epoch();
        let mut objects = self.objects.lock();
        if let Some(object) = objects
            .iter_mut()
            .rev()
            .find(|o| o.log_id == own && o.sequence == sequence)
        {
            object.records += batch.records;
            for (region, max) in batch.regions {
                let entry = object.max_sequence_ids.entry(region).or_insert(0);
                *entry = (*entry).max(max);
            }
        }
    }

    /// The repair on a store that appends: cuts the failed batch's bytes
    /// out of the open segment (its writers were told it failed, so no
    /// reader may find it), then takes writes again.
    fn repair_segment(&self) {
        let mut segment = self.segment.lock();
        if let Some(open) = segment.as_mut() {
            if open.needs_cut {
                if let Err(e) = open.file.truncate(open.len) {
                    drop(segment);
                    self.repair_failed(&e.to_string());
                    return;
                }
                open.needs_cut = false;
            }
        }
        drop(segment);
        let mut st = self.state.lock();
        if let Some(failed) = st.failed.take() {
            tracing::info!(cause = %failed.cause, "the write-ahead log is repaired and takes writes again");
        }
        self.stats.repairs.fetch_add(1, Ordering::Relaxed);
        drop(st);
        self.wake_every_writer_unlocked();
    }

    /// Records that `batch`'s object `sequence` landed at `path`, and
    /// acknowledges every flight that now has all earlier ones landed
    /// too: in sequence order, so that an acknowledged batch never sits
    /// after a number that may stay missing (invariant W1).
    fn published(&self, st: &mut State, batch: Batch, sequence: u64, path: PathBuf, len: usize) {
        let object = LogObject {
            log_id: self.fence.epoch(),
            sequence,
            path,
            records: batch.records,
            max_sequence_ids: batch.regions.into_iter().collect(),
        };
        if let Some(flight) = st.flights.iter_mut().find(|f| f.sequence == sequence) {
            flight.landed = Some((object, len));
        }
        while st.flights.front().is_some_and(|f| f.landed.is_some()) {
            let Some(Flight {
                sequence,
                end_lsn,
                waiters,
                landed: Some((object, len)),
            }) = st.flights.pop_front()
            else {
                break;
            };
            waiters.wake_all();
            st.published_lsn = end_lsn;
            st.acked_sequence = sequence;
            self.count_write(object.records, len);
            self.objects.lock().push(object);
        }
    }

    /// Fails the batch in flight and what is pending behind it; the log
    /// refuses appends until [`Inner::repair`] resolves the number.
    fn fail_publication(&self, st: &mut State, path: &Path, cause: String) {
        tracing::error!(object = %path.display(), error = %cause,
            "publishing a write-ahead log object failed; refusing writes until the log is repaired");
        self.stats.failures.fetch_add(1, Ordering::Relaxed);
        self.fail_pending(st, &cause);
        st.failed = Some(Failed {
            cause,
            last_attempt: Instant::now(),
        });
    }

    /// What holds `path`, which our create-if-absent of `bytes` found
    /// taken. Only a fence (written by a newer owner) or an object naming
    /// another epoch means this log was ended: a store that kept a `PUT`
    /// whose answer was lost, or retried one that had landed, refuses the
    /// attempt with the log's own object, and that must not fence the
    /// process.
    fn taken_by(&self, path: &Path, bytes: &[u8]) -> Result<TakenBy> {
        let found = self.files.read_all(path)?;
        if found.as_ref() == bytes {
            return Ok(TakenBy::ThisPublication);
        }
        Ok(match decode_object(&found) {
            Ok(decoded) if decoded.kind == Kind::Fence || decoded.epoch != self.fence.epoch() => {
                TakenBy::NewerOwner(decoded.epoch)
            }
            // Ours, or unreadable: a newer owner's fence is written whole,
            // so a torn object can only be one of our own publications.
            Ok(_) | Err(_) => TakenBy::OwnEarlierBatch,
        })
    }

    /// Fails every LSN handed out and not yet durable.
    fn fail_pending(&self, st: &mut State, cause: &str) {
        let first = st.published_lsn + 1;
        let last = st.next_lsn - 1;
        if first <= last {
            st.lost.push((first, last, Arc::from(cause)));
        }
        st.buf.clear();
        st.buf_records = 0;
        st.buf_regions.clear();
        st.buf_since = None;
        st.taken_lsn = last;
        st.published_lsn = last;
        self.wake_every_writer(st);
        st.flights.clear();
    }

    /// Resolves the numbers of a failed window of publications (every
    /// one taken after the last acknowledged object) before the log writes
    /// again. A number still absent gets an empty batch, so that nothing
    /// lands there later. If any held a batch after all (its `PUT` landed
    /// although its writers were told it failed, or landed behind a failed
    /// one), a `Void` after the window makes replay skip the whole window.
    /// Names are never reused (the `FileStore` contract): nothing is
    /// deleted and written again. An attempt that stops half-way is simply
    /// made again: its empty batches read as landed and are voided too.
    fn repair(&self) {
        if self.appends {
            self.repair_segment();
            return;
        }
        let epoch = self.fence.epoch();
        let (first, last) = {
            let st = self.state.lock();
            (st.acked_sequence + 1, st.next_sequence - 1)
        };
        let mut any_landed = false;
        for sequence in first..=last {
            let path = object_path(&self.root, epoch, sequence);
            match read_object(self.files.as_ref(), &path) {
                Ok(Some(found)) if found.kind == Kind::Fence => {
                    self.fence.trip(
                        found.epoch,
                        format!("log object {} is a fence", path.display()),
                    );
                    self.wake_every_writer_unlocked();
                    return;
                }
                // Only we write batches to this log: it is ours.
                Ok(Some(_)) | Err(Error::Corruption { .. }) => any_landed = true,
                Ok(None) => {
                    let empty = encode_object(Kind::Records, epoch, 0, &[]);
                    match self.publish_resolving(&path, &empty) {
                        Ok(Resolved::Published) => {}
                        // The failed batch landed between our look and our
                        // create: voided below with the rest.
                        Ok(Resolved::OwnBatch) => any_landed = true,
                        Ok(Resolved::Fenced) => return,
                        Err(cause) => {
                            self.repair_failed(&cause);
                            return;
                        }
                    }
                }
                Err(e) => {
                    self.repair_failed(&e.to_string());
                    return;
                }
            }
        }
        let mut used: Vec<(u64, PathBuf)> = (first..=last)
            .map(|sequence| (sequence, object_path(&self.root, epoch, sequence)))
            .collect();
        if any_landed {
            let void_path = object_path(&self.root, epoch, last + 1);
            match self.publish_resolving(&void_path, &encode_void(epoch, first, last)) {
                Ok(Resolved::Published) => used.push((last + 1, void_path)),
                Ok(Resolved::OwnBatch) => {
                    self.repair_failed(&format!(
                        "log object {} holds a batch of this log",
                        void_path.display()
                    ));
                    return;
                }
                Ok(Resolved::Fenced) => return,
                Err(cause) => {
                    self.repair_failed(&cause);
                    return;
                }
            }
        }
        let mut st = self.state.lock();
        st.next_sequence = used.last().map_or(first, |(sequence, _)| sequence + 1);
        st.acked_sequence = st.next_sequence - 1;
        // Listed so that retirement deletes them, in order: the voided
        // batches before their void.
        let mut objects = self.objects.lock();
        for (sequence, path) in used {
            objects.push(LogObject {
                log_id: epoch,
                sequence,
                path,
                records: 0,
                max_sequence_ids: BTreeMap::new(),
            });
        }
        drop(objects);
        if let Some(failed) = st.failed.take() {
            tracing::info!(cause = %failed.cause, "the write-ahead log is repaired and takes writes again");
        }
        self.stats.repairs.fetch_add(1, Ordering::Relaxed);
        drop(st);
        self.wake_every_writer_unlocked();
    }

    /// Creates one of the repair's objects: `Published` also when its own
    /// earlier attempt landed (identical bytes); `OwnBatch` when a batch
    /// of this log holds the name; `Fenced` (the fence tripped) when a
    /// newer owner's object does.
    fn publish_resolving(
        &self,
        path: &Path,
        bytes: &[u8],
    ) -> std::result::Result<Resolved, String> {
        match publish(self.files.as_ref(), path, bytes) {
            Ok(()) => Ok(Resolved::Published),
            Err(e) if is_already_exists(&e) => match self.taken_by(path, bytes) {
                Ok(TakenBy::ThisPublication) => Ok(Resolved::Published),
                Ok(TakenBy::NewerOwner(newer)) => {
                    self.fence.trip(
                        newer,
                        format!("log object {} already exists", path.display()),
                    );
                    self.wake_every_writer_unlocked();
                    Ok(Resolved::Fenced)
                }
                Ok(TakenBy::OwnEarlierBatch) => Ok(Resolved::OwnBatch),
                Err(read) => Err(read.to_string()),
            },
            Err(e) => Err(e.to_string()),
        }
    }

    /// A repair attempt that did not resolve the number: the log stays
    /// failed and the committer tries again after the repair interval.
    fn repair_failed(&self, cause: &str) {
        tracing::warn!(error = %cause, "repairing the write-ahead log failed; will retry");
        let mut st = self.state.lock();
        if let Some(failed) = st.failed.as_mut() {
            failed.last_attempt = Instant::now();
        }
        drop(st);
        self.wake_every_writer_unlocked();
    }

    fn wait_published(&self, lsn: u64) -> Result<()> {
        let mut st = self.state.lock();
        if lsn >= st.next_lsn {
            return Err(Error::invalid(format!(
                "WAL position {lsn} has not been handed out (next is {})",
                st.next_lsn
            )));
        }
        loop {
            if let Some((_, _, cause)) = st
                .lost
                .iter()
                .find(|(from, to, _)| (*from..=*to).contains(&lsn))
            {
                self.fence.check()?;
                return Err(Error::WalFailed(format!(
                    "the record was not written to the log: {cause}"
                )));
            }
            if st.published_lsn >= lsn {
                return Ok(());
            }
            let lead = self.writers_lead()
                && st.in_flight < self.max_in_flight()
                && st.failed.is_none()
                && st.taken_lsn < lsn
                && st.buf_records > 0;
            if lead {
                let batch = self.take_batch(&mut st);
                drop(st);
                self.commit(batch);
                st = self.state.lock();
                continue;
            }
            // Sleep with the writers of the same batch: woken when it
            // settles (or, for the pending batch, to lead it).
            let waiters = if lsn > st.taken_lsn {
                Some(st.pending_waiters.clone())
            } else {
                st.flights
                    .iter()
                    .find(|f| f.end_lsn >= lsn)
                    .map(|f| f.waiters.clone())
            };
            // Else the batch being appended to a segment (no flights there).
            let waiters = waiters.unwrap_or_else(|| st.appending_waiters.clone());
            self.stats.sleeps.fetch_add(1, Ordering::Relaxed);
            waiters.wait(&mut st);
        }
    }

    /// Makes every published object up to the one holding `lsn` survive
    /// a machine crash (`FSYNC_WAL`). Objects are synced in sequence
    /// order, every earlier unsynced one with the one asked for, so the
    /// synced objects are always a prefix of the log: what walk invariant
    /// W4 relies on. One caller syncs at a time; those who wait behind it
    /// usually find their object synced by it.
    fn sync_through(&self, lsn: u64) -> Result<()> {
        let _turn = self.sync_turn.lock();
        // Every object below `before` is in `objects` by now: the
        // segment's writer records it there when it starts it, and
        // `published` each acknowledged object, under the state lock.
        let (through_lsn, after, before) = {
            let st = self.state.lock();
            if st.synced_lsn >= lsn {
                return Ok(());
            }
            let before = if self.appends {
                st.next_sequence
            } else {
                st.acked_sequence + 1
            };
            (st.published_lsn, st.synced_sequence, before)
        };
        let own = self.fence.epoch();
        let paths: Vec<PathBuf> = self
            .objects
            .lock()
            .iter()
            .filter(|o| o.log_id == own && o.sequence > after && o.sequence < before)
            .map(|o| o.path.clone())
            .collect();
        if !paths.is_empty() {
            self.files.sync_published(&paths)?;
            self.stats.fsyncs.fetch_add(1, Ordering::Relaxed);
        }
        let mut st = self.state.lock();
        st.synced_lsn = st.synced_lsn.max(through_lsn);
        // The open segment (the newest object, on a store that appends)
        // takes more batches: it is synced again next time.
        let settled = if self.appends {
            before.saturating_sub(2)
        } else {
            before - 1
        };
        st.synced_sequence = st.synced_sequence.max(settled);
        Ok(())
    }

    /// Deletes what replay can no longer need (see `retire_flushed`).
    fn retire(&self, flushed_through: &dyn Fn(u64) -> Option<u64>) -> Result<usize> {
        if self.appends {
            self.roll_if_flushed(flushed_through);
        }
        let own = self.fence.epoch();
        // Read before the objects' lock: the committer takes the state's
        // lock, then the objects'.
        let closed = self.state.lock().closed;
        let mut retired = 0;
        let mut objects = self.objects.lock();
        // Fencing invariant W1 (the fencer's side, `walk_log`): while the
        // own log is open its newest object stays, so a fencer listing the
        // log sees the highest number taken and fences the one after it,
        // never a number freed by retirement below the writer's next one.
        // (The committer may have published a newer one not listed here
        // yet: then that one exists, which is as good.) Once closed, the
        // closed object is the newest and no writer is left.
        let newest_own = if closed {
            None
        } else {
            objects
                .iter()
                .filter(|o| o.log_id == own)
                .map(|o| o.sequence)
                .max()
        };
        let mut index = 0;
        while index < objects.len() {
            let object = &objects[index];
            let newest = object.log_id == own && Some(object.sequence) == newest_own;
            let flushed = object.flushed(flushed_through);
            if !flushed || newest {
                index += 1;
                continue;
            }
            self.files.delete(&object.path)?;
            tracing::debug!(object = %object.path.display(), "retired a flushed write-ahead log object");
            objects.remove(index);
            retired += 1;
        }
        // An older log whose records are all gone: if its writer closed it,
        // no writer is left, and the whole log goes. A fenced log keeps its
        // markers: deleting its fence would free the number its stale
        // writer (maybe only paused) publishes at next.
        let mut old_logs = self.old_logs.lock();
        let mut kept = Vec::with_capacity(old_logs.len());
        for old in old_logs.drain(..) {
            let empty = !objects.iter().any(|o| o.log_id == old.id);
            if empty && old.closed {
                // Fencing invariant E1: our own log (higher) exists, so the
                // highest log id stays.
                for marker in &old.markers {
                    self.files.delete(marker)?;
                }
                retired += old.markers.len();
            } else {
                kept.push(old);
            }
        }
        *old_logs = kept;
        Ok(retired)
    }

    /// Publishes the `Closed` object at the end of the own log.
    fn publish_closed(&self) -> Result<()> {
        let epoch = self.fence.epoch();
        let sequence = self.state.lock().next_sequence;
        let path = object_path(&self.root, epoch, sequence);
        let bytes = encode_object(Kind::Closed, epoch, 0, &[]);
        let published = match publish(self.files.as_ref(), &path, &bytes) {
            Err(e) if is_already_exists(&e) => match self.taken_by(&path, &bytes)? {
                TakenBy::ThisPublication => Ok(()),
                TakenBy::NewerOwner(newer) => Err(self.fence.trip(
                    newer,
                    format!("log object {} already exists", path.display()),
                )),
                TakenBy::OwnEarlierBatch => Err(Error::WalFailed(format!(
                    "could not close the log: object {} holds a batch published late",
                    path.display()
                ))),
            },
            other => other,
        };
        published?;
        self.state.lock().next_sequence += 1;
        Ok(())
    }
}

impl WriteAheadLog for ObjectWal {
    /// Buffers the edit for the next object. Refused with
    /// [`Error::Fenced`] once fenced, [`Error::WalFailed`] while a failed
    /// publication is unresolved, [`Error::Closed`] after close.
    fn append(&self, edit: &WalEdit) -> Result<u64> {
        let mut record = Vec::new();
        format::encode_record(edit, &mut record)?;
        self.inner.fence.check()?;
        let mut st = self.inner.state.lock();
        if st.closing || st.closed {
            return Err(Error::Closed("write-ahead log".into()));
        }
        if let Some(failed) = &st.failed {
            return Err(Error::WalFailed(failed.cause.clone()));
        }
        st.buf.extend_from_slice(&record);
        st.buf_records += 1;
        let max = st.buf_regions.entry(edit.region_id).or_insert(0);
        *max = (*max).max(edit.sequence_id);
        if st.buf_since.is_none() {
            st.buf_since = Some(Instant::now());
            // Without a window the writers lead, or `sync` hurries the
            // committer for an `ASYNC_WAL` write.
            if !self.inner.writers_lead() {
                self.inner.work.notify_one();
            }
        }
        let lsn = st.next_lsn;
        st.next_lsn += 1;
        self.inner.stats.appends.fetch_add(1, Ordering::Relaxed);
        Ok(lsn)
    }

    /// `SyncWal` waits until the edit's object is published (on object
    /// storage the store acknowledged it: durable; on a shared directory
    /// every process sees it), `FsyncWal` also until it is synced (a
    /// no-op on object storage); `AsyncWal` returns at once. A failed sync
    /// is an I/O error although the object stays in the log and replays:
    /// the outcome of that write is unknown, as after a timeout.
    fn sync(&self, lsn: u64, durability: Durability) -> Result<()> {
        match durability {
            Durability::SkipWal => Ok(()),
            Durability::AsyncWal => {
                // Nobody waits for it: the committer publishes it (at once
                // when writers lead, else when the window ends).
                if self.inner.writers_lead() {
                    let mut st = self.inner.state.lock();
                    if st.taken_lsn < lsn {
                        st.hurry = true;
                        self.inner.work.notify_one();
                    }
                }
                Ok(())
            }
            Durability::SyncWal => self.inner.wait_published(lsn),
            Durability::FsyncWal => {
                self.inner.wait_published(lsn)?;
                self.inner.sync_through(lsn)
            }
        }
    }

    fn retire_flushed(&self, flushed_through: &dyn Fn(u64) -> Option<u64>) -> Result<usize> {
        if self.inner.fence.is_tripped() {
            // A fenced writer deletes nothing: the newer owner may still
            // need these objects (it replays what it listed).
            return Ok(0);
        }
        self.inner.retire(flushed_through)
    }

    /// Publishes what is pending, then the `Closed` object (a later owner
    /// then knows no writer of this log is left).
    fn close(&self) -> Result<()> {
        let last = {
            let mut st = self.inner.state.lock();
            if st.closed {
                return Ok(());
            }
            st.closing = true;
            st.next_lsn - 1
        };
        self.inner.work.notify_all();
        let waited = if last == 0 {
            Ok(())
        } else {
            self.inner.wait_published(last)
        };
        let handle = self.committer.lock().take();
        if let Some(handle) = handle {
            self.inner.work.notify_all();
            if handle.join().is_err() {
                tracing::error!("the log committer thread panicked");
            }
        }
        let failed = self.inner.state.lock().failed.clone();
        let result = match (waited, failed) {
            (Err(e), _) => Err(e),
            (Ok(()), Some(failed)) => Err(Error::WalFailed(failed.cause)),
            (Ok(()), None) => {
                self.inner.fence.check()?;
                // A cleanly closed log survives the machine's crash whole:
                // a closed log is never torn (invariant W4).
                if last > 0 {
                    self.inner.sync_through(last)?;
                }
                self.inner.publish_closed()
            }
        };
        self.inner.state.lock().closed = true;
        result
    }

    fn stats(&self) -> WalStats {
        let c = &self.inner.stats;
        WalStats {
            appends: c.appends.load(Ordering::Relaxed),
            writes: c.writes.load(Ordering::Relaxed),
            records_written: c.records_written.load(Ordering::Relaxed),
            bytes_written: c.bytes_written.load(Ordering::Relaxed),
            fsyncs: c.fsyncs.load(Ordering::Relaxed),
            rolls: 0,
            failures: c.failures.load(Ordering::Relaxed),
            repairs: c.repairs.load(Ordering::Relaxed),
        }
    }
}

impl Drop for ObjectWal {
    fn drop(&mut self) {
        let open = !self.inner.state.lock().closed;
        if open {
            if let Err(e) = WriteAheadLog::close(self) {
                tracing::warn!(error = %e, "closing the object write-ahead log on drop failed");
            }
        }
    }
}

impl fmt::Debug for ObjectWal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.state.lock();
        f.debug_struct("ObjectWal")
            .field("root", &self.inner.root)
            .field("epoch", &self.inner.fence.epoch())
            .field("next_lsn", &st.next_lsn)
            .field("published_lsn", &st.published_lsn)
            .field("next_sequence", &st.next_sequence)
            .field("failed", &st.failed)
            .finish()
    }
}
