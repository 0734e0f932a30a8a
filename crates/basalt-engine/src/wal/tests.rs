//! Tests of the log as a whole: concurrency, crash recovery, corruption,
//! rolling and the durability levels. Codec tests live in `format.rs`.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_types::{Cell, CellType, Durability, Error, Result};
use bytes::Bytes;

use super::format::{self, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN};
use super::segment::segment_file_name;
use super::{ReplayReport, SegmentInfo, Wal, WalEdit, WalOptions};

/// Injected I/O failures, armed by tests and consumed by the next write or
/// fsync of the leader.
#[derive(Debug, Default)]
pub(super) struct Faults {
    partial_write: AtomicBool,
    fail_fsync: AtomicBool,
    fail_seal: AtomicBool,
    fail_roll: AtomicBool,
}

impl Faults {
    /// When armed, writes the first half of `bytes` and then fails like a
    /// full disk, leaving a partial record at the end of the segment.
    pub(super) fn before_write(&self, file: &mut File, bytes: &[u8]) -> Option<io::Error> {
        if !self.partial_write.swap(false, Ordering::SeqCst) {
            return None;
        }
        if let Err(e) = file.write_all(&bytes[..bytes.len() / 2]) {
            return Some(e);
        }
        Some(io::Error::new(
            io::ErrorKind::StorageFull,
            "injected: no space left on device",
        ))
    }

    /// When armed, the truncation of a failed segment fails once.
    pub(super) fn before_seal(&self) -> Option<io::Error> {
        self.fail_seal
            .swap(false, Ordering::SeqCst)
            .then(|| io::Error::other("injected: truncate failed"))
    }

    /// When armed, the roll of a repair fails once, like a full disk.
    pub(super) fn before_roll(&self) -> Option<io::Error> {
        self.fail_roll.swap(false, Ordering::SeqCst).then(|| {
            io::Error::new(
                io::ErrorKind::StorageFull,
                "injected: no space left on device",
            )
        })
    }

    pub(super) fn before_fsync(&self) -> Option<io::Error> {
        self.fail_fsync
            .swap(false, Ordering::SeqCst)
            .then(|| io::Error::other("injected: fsync failed"))
    }
}

fn edit(region_id: u64, sequence_id: u64, row: &str, cells: usize) -> WalEdit {
    let row = Bytes::copy_from_slice(row.as_bytes());
    WalEdit {
        region_id,
        sequence_id,
        cells: (0..cells)
            .map(|i| Cell {
                row: row.clone(),
                family: Bytes::from_static(b"cf"),
                qualifier: Bytes::from(format!("q{i}")),
                timestamp: 1_700_000_000_000 + i as i64,
                cell_type: if i % 4 == 3 {
                    CellType::DeleteColumn
                } else {
                    CellType::Put
                },
                sequence_id,
                value: Bytes::from(format!("value-{region_id}-{sequence_id}-{i}")),
                ttl_millis: None,
            })
            .collect(),
    }
}

fn wal_dir(tmp: &tempfile::TempDir) -> PathBuf {
    tmp.path().join("wal")
}

/// Opens the log and collects what replay applied.
fn open_collect(dir: &Path, options: WalOptions) -> Result<(Arc<Wal>, Vec<WalEdit>, ReplayReport)> {
    let mut replayed = Vec::new();
    let (wal, report) = Wal::open(dir, options, |e| {
        replayed.push(e);
        Ok(())
    })?;
    Ok((wal, replayed, report))
}

fn reopen(dir: &Path) -> (Vec<WalEdit>, ReplayReport) {
    let (wal, replayed, report) = open_collect(dir, WalOptions::default()).unwrap();
    wal.close().unwrap();
    assert_eq!(report.records as usize, replayed.len());
    (replayed, report)
}

/// Segment files in `dir`, in order.
fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    files.sort();
    files
}

/// Writes `edits` with SyncWal into a fresh log and closes it. Returns the
/// one segment holding them and each record's start offset plus the file's
/// end offset.
fn write_one_segment(dir: &Path, edits: &[WalEdit]) -> (PathBuf, Vec<u64>) {
    let (wal, _, _) = open_collect(dir, WalOptions::default()).unwrap();
    for e in edits {
        wal.log(e, Durability::SyncWal).unwrap();
    }
    let path = wal.segments().last().unwrap().path.clone();
    wal.close().unwrap();
    let mut offsets = vec![SEGMENT_HEADER_LEN as u64];
    for e in edits {
        let mut rec = Vec::new();
        format::encode_record(e, &mut rec).unwrap();
        offsets.push(offsets.last().unwrap() + rec.len() as u64);
    }
    assert_eq!(fs::metadata(&path).unwrap().len(), *offsets.last().unwrap());
    (path, offsets)
}

fn flip_byte(path: &Path, at: u64) {
    let mut data = fs::read(path).unwrap();
    data[at as usize] ^= 0x5a;
    fs::write(path, data).unwrap();
}

fn expect_corruption(dir: &Path, want_path: &Path, want_offset: u64) -> String {
    match open_collect(dir, WalOptions::default()) {
        Err(Error::Corruption {
            path,
            offset,
            message,
        }) => {
            assert_eq!(path, want_path, "{message}");
            assert_eq!(offset, want_offset, "{message}");
            message
        }
        Err(other) => panic!("expected corruption, got {other}"),
        Ok((_, _, report)) => panic!("expected corruption, got {report:?}"),
    }
}

#[test]
fn concurrent_mixed_durability_replays_each_acknowledged_edit_once() {
    const THREADS: u64 = 8;
    const PER_THREAD: u64 = 500;
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let (wal, _, report) = open_collect(&dir, WalOptions::default()).unwrap();
    assert_eq!(report, ReplayReport::default());

    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                for seq in 1..=PER_THREAD {
                    let durability = if seq % 3 == 0 {
                        Durability::FsyncWal
                    } else {
                        Durability::SyncWal
                    };
                    let e = edit(t, seq, &format!("row-{t}-{seq}"), 1 + (seq % 3) as usize);
                    let lsn = wal.append(&e).unwrap();
                    wal.sync(lsn, durability).unwrap();
                    // Acknowledged: the promise must already hold.
                    assert!(wal.written_lsn() >= lsn);
                    if durability == Durability::FsyncWal {
                        assert!(wal.synced_lsn() >= lsn);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }

    let stats = wal.stats();
    let total = THREADS * PER_THREAD;
    assert_eq!(stats.appends, total);
    assert_eq!(stats.records_written, total);
    assert!(
        stats.writes < total,
        "group commit never grouped: {} writes for {total} records",
        stats.writes
    );
    assert!(stats.fsyncs >= 1 && stats.fsyncs <= stats.writes);
    let info = wal.segments();
    let active = info.last().unwrap();
    assert_eq!(active.records, total);
    assert_eq!(
        active.max_sequence_ids,
        (0..THREADS)
            .map(|t| (t, PER_THREAD))
            .collect::<BTreeMap<_, _>>()
    );
    wal.close().unwrap();

    let (replayed, report) = reopen(&dir);
    assert_eq!(report.records, total);
    assert_eq!(report.torn_tail, None);
    // Each thread appended in sequence order, so per region the log must
    // hold 1..=PER_THREAD exactly once and in order.
    let mut per_region: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for e in &replayed {
        assert_eq!(
            e,
            &edit(
                e.region_id,
                e.sequence_id,
                &format!("row-{}-{}", e.region_id, e.sequence_id),
                1 + (e.sequence_id % 3) as usize
            )
        );
        per_region
            .entry(e.region_id)
            .or_default()
            .push(e.sequence_id);
    }
    assert_eq!(per_region.len() as u64, THREADS);
    for seqs in per_region.values() {
        assert_eq!(seqs, &(1..=PER_THREAD).collect::<Vec<_>>());
    }
}

#[test]
fn torn_tail_at_every_cut_point_is_dropped_and_truncated() {
    let edits: Vec<WalEdit> = (1..=8)
        .map(|s| edit(1 + s % 2, s, "row", 1 + (s % 2) as usize))
        .collect();
    let src_tmp = tempfile::tempdir().unwrap();
    let (src, offsets) = write_one_segment(&wal_dir(&src_tmp), &edits);
    let full = fs::read(&src).unwrap();
    let end = *offsets.last().unwrap();

    // Every byte of the last two records, every third byte before.
    let dense_from = offsets[offsets.len() - 3];
    let cuts = (SEGMENT_HEADER_LEN as u64..end).filter(|&c| c >= dense_from || c % 3 == 0);
    let mut checked = 0;
    for cut in cuts {
        let tmp = tempfile::tempdir().unwrap();
        let dir = wal_dir(&tmp);
        fs::create_dir_all(&dir).unwrap();
        let seg = dir.join(src.file_name().unwrap());
        fs::write(&seg, &full[..cut as usize]).unwrap();

        let complete = offsets.iter().filter(|&&o| o <= cut).count() - 1;
        let boundary = offsets[complete];
        let (replayed, report) = reopen(&dir);
        assert_eq!(replayed, edits[..complete], "cut at {cut}");
        if cut == boundary {
            assert_eq!(report.torn_tail, None, "cut at {cut}");
        } else {
            let torn = report
                .torn_tail
                .unwrap_or_else(|| panic!("cut at {cut}: no torn tail"));
            assert_eq!(torn.path, seg);
            assert_eq!(torn.offset, boundary, "cut at {cut}");
            assert_eq!(torn.dropped_bytes, cut - boundary, "cut at {cut}");
        }
        if complete > 0 {
            assert_eq!(fs::metadata(&seg).unwrap().len(), boundary, "cut at {cut}");
        } else {
            assert!(!seg.exists(), "an emptied segment is deleted");
        }

        // The old segment is no longer the last one: it must now be clean.
        let (again, report) = reopen(&dir);
        assert_eq!(again, edits[..complete], "second open, cut at {cut}");
        assert_eq!(report.torn_tail, None, "second open, cut at {cut}");
        checked += 1;
    }
    assert!(checked > 100);
}

#[test]
fn bad_checksum_of_the_last_record_is_a_torn_tail() {
    let edits: Vec<WalEdit> = (1..=4).map(|s| edit(7, s, "r", 2)).collect();
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let (seg, offsets) = write_one_segment(&dir, &edits);
    let last = offsets[3];
    flip_byte(&seg, last + RECORD_HEADER_LEN as u64 + 5);
    let (replayed, report) = reopen(&dir);
    assert_eq!(replayed, edits[..3]);
    let torn = report.torn_tail.unwrap();
    assert_eq!((torn.offset, torn.dropped_bytes), (last, offsets[4] - last));
    assert!(torn.reason.contains("checksum"), "{}", torn.reason);
}

#[test]
fn zero_filled_tail_is_a_torn_tail() {
    let edits: Vec<WalEdit> = (1..=3).map(|s| edit(7, s, "r", 2)).collect();
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let (seg, offsets) = write_one_segment(&dir, &edits);
    let mut f = OpenOptions::new().append(true).open(&seg).unwrap();
    f.write_all(&[0u8; 5000]).unwrap();
    drop(f);
    let (replayed, report) = reopen(&dir);
    assert_eq!(replayed, edits);
    let torn = report.torn_tail.unwrap();
    assert_eq!((torn.offset, torn.dropped_bytes), (offsets[3], 5000));
    assert_eq!(fs::metadata(&seg).unwrap().len(), offsets[3]);
}

#[test]
fn flipped_byte_in_the_middle_is_corruption_at_that_record() {
    let edits: Vec<WalEdit> = (1..=10).map(|s| edit(3, s, "row", 3)).collect();
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let (seg, offsets) = write_one_segment(&dir, &edits);
    let pristine = fs::read(&seg).unwrap();

    // In a payload.
    let target = offsets[4];
    flip_byte(&seg, target + RECORD_HEADER_LEN as u64 + 20);
    let msg = expect_corruption(&dir, &seg, target);
    assert!(msg.contains("checksum"), "{msg}");

    // In a record header (its length field).
    fs::write(&seg, &pristine).unwrap();
    let target = offsets[6];
    flip_byte(&seg, target + 1);
    let msg = expect_corruption(&dir, &seg, target);
    assert!(msg.contains("header checksum"), "{msg}");

    // Nothing was truncated or changed by the failed opens.
    fs::write(&seg, &pristine).unwrap();
    let (replayed, report) = reopen(&dir);
    assert_eq!(replayed, edits);
    assert_eq!(report.torn_tail, None);
}

#[test]
fn damage_in_an_earlier_segment_is_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let options = WalOptions {
        segment_max_bytes: 300,
        ..WalOptions::default()
    };
    let (wal, _, _) = open_collect(&dir, options).unwrap();
    for s in 1..=30 {
        wal.log(&edit(1, s, "row", 2), Durability::SyncWal).unwrap();
    }
    wal.close().unwrap();
    let files = segment_files(&dir);
    assert!(files.len() > 3);
    let victim = &files[1];
    let pristine = fs::read(victim).unwrap();

    // A cut-short record is only forgivable in the last segment.
    let len = pristine.len() as u64;
    OpenOptions::new()
        .write(true)
        .open(victim)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    // Offset of the victim's last record: walk the record headers.
    let mut last_record = SEGMENT_HEADER_LEN as u64;
    let mut offset = last_record;
    while offset < len {
        last_record = offset;
        let mut h = [0u8; RECORD_HEADER_LEN];
        h.copy_from_slice(&pristine[offset as usize..offset as usize + RECORD_HEADER_LEN]);
        let h = format::decode_record_header(&h).unwrap();
        offset += (RECORD_HEADER_LEN + h.len as usize) as u64;
    }
    let msg = expect_corruption(&dir, victim, last_record);
    assert!(msg.contains("not the last"), "{msg}");

    // A bad checksum at the very end of an earlier segment, too.
    fs::write(victim, &pristine).unwrap();
    flip_byte(victim, len - 1);
    let msg = expect_corruption(&dir, victim, last_record);
    assert!(msg.contains("not the last"), "{msg}");
}

#[test]
fn bad_segment_headers_are_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let (seg, _) = write_one_segment(&dir, &[edit(1, 1, "r", 1)]);
    let pristine = fs::read(&seg).unwrap();

    flip_byte(&seg, 2);
    assert!(expect_corruption(&dir, &seg, 0).contains("magic"));

    fs::write(&seg, &pristine).unwrap();
    flip_byte(&seg, 9);
    assert!(expect_corruption(&dir, &seg, 0).contains("checksum"));

    fs::write(&seg, &pristine[..10]).unwrap();
    assert!(expect_corruption(&dir, &seg, 0).contains("truncated"));

    fs::write(&seg, b"").unwrap();
    assert!(expect_corruption(&dir, &seg, 0).contains("truncated"));

    // A segment whose header belongs to another file name.
    fs::write(&seg, &pristine).unwrap();
    let renamed = dir.join(segment_file_name(999));
    fs::rename(&seg, &renamed).unwrap();
    assert!(expect_corruption(&dir, &renamed, 0).contains("file name"));
}

#[test]
fn oversized_length_with_a_valid_header_is_corruption_without_allocating() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let (seg, offsets) = write_one_segment(&dir, &[edit(1, 1, "r", 1), edit(1, 2, "r", 1)]);
    let mut data = fs::read(&seg).unwrap();
    let at = offsets[1] as usize;
    let mut h = [0u8; RECORD_HEADER_LEN];
    h[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
    let crc = crc32c::crc32c(&h[0..8]);
    h[8..12].copy_from_slice(&crc.to_le_bytes());
    data[at..at + RECORD_HEADER_LEN].copy_from_slice(&h);
    fs::write(&seg, data).unwrap();
    let msg = expect_corruption(&dir, &seg, offsets[1]);
    assert!(msg.contains("exceeds"), "{msg}");
}

#[test]
fn tiny_segments_roll_and_replay_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let options = WalOptions {
        segment_max_bytes: 200,
        ..WalOptions::default()
    };
    let (wal, _, _) = open_collect(&dir, options.clone()).unwrap();
    let edits: Vec<WalEdit> = (1..=300)
        .map(|s| edit(s % 3, s, &format!("row{s}"), 1 + (s % 2) as usize))
        .collect();
    for (i, e) in edits.iter().enumerate() {
        let d = if i % 2 == 0 {
            Durability::SyncWal
        } else {
            Durability::FsyncWal
        };
        wal.log(e, d).unwrap();
    }
    let stats = wal.stats();
    assert!(stats.rolls > 50, "{stats:?}");
    let infos = wal.segments();
    assert_eq!(infos.len() as u64, stats.rolls + 1);
    assert!(infos[..infos.len() - 1]
        .iter()
        .all(|s| !s.active && s.records > 0));
    assert!(infos.last().unwrap().active);
    // Per-segment maxima agree with what each segment holds.
    let mut next = edits.iter();
    for info in &infos {
        let mut want = BTreeMap::new();
        for e in next.by_ref().take(info.records as usize) {
            let m = want.entry(e.region_id).or_insert(0);
            *m = e.sequence_id.max(*m);
        }
        assert_eq!(info.max_sequence_ids, want, "segment {}", info.id);
        assert_eq!(fs::metadata(&info.path).unwrap().len(), info.size_bytes);
    }
    wal.close().unwrap();
    let files = segment_files(&dir);
    // The empty active segment left by close is not counted by replay.
    let (wal, replayed, report) = open_collect(&dir, options).unwrap();
    assert_eq!(report.segments, files.len());
    assert_eq!(replayed, edits);
    // Replayed segments keep their per-region maxima for the deletion rule.
    let reopened = wal.segments();
    assert_eq!(
        reopened[..reopened.len() - 1]
            .iter()
            .map(|s| (s.id, s.records, s.max_sequence_ids.clone()))
            .collect::<Vec<_>>(),
        infos
            .iter()
            .filter(|s| s.records > 0)
            .map(|s| (s.id, s.records, s.max_sequence_ids.clone()))
            .collect::<Vec<_>>()
    );
    wal.close().unwrap();
}

#[test]
fn async_wal_data_is_durable_after_close() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let options = WalOptions {
        async_flush_interval: Duration::from_secs(3600),
        ..WalOptions::default()
    };
    let (wal, _, _) = open_collect(&dir, options).unwrap();
    let edits: Vec<WalEdit> = (1..=20).map(|s| edit(2, s, "r", 1)).collect();
    for e in &edits {
        wal.log(e, Durability::AsyncWal).unwrap();
    }
    assert_eq!(wal.written_lsn(), 0, "AsyncWal must not wait for I/O");
    wal.close().unwrap();
    assert_eq!(wal.synced_lsn(), 20);
    assert_eq!(reopen(&dir).0, edits);
}

#[test]
fn async_wal_data_is_written_in_the_background() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let options = WalOptions {
        async_flush_interval: Duration::from_millis(10),
        ..WalOptions::default()
    };
    let (wal, _, _) = open_collect(&dir, options).unwrap();
    let lsn = wal.append(&edit(1, 1, "r", 1)).unwrap();
    wal.sync(lsn, Durability::AsyncWal).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while wal.written_lsn() < lsn {
        assert!(Instant::now() < deadline, "background flush never happened");
        std::thread::sleep(Duration::from_millis(5));
    }
    let seg = &wal.segments().last().unwrap().path.clone();
    assert!(fs::metadata(seg).unwrap().len() > SEGMENT_HEADER_LEN as u64);
    wal.close().unwrap();
}

#[test]
fn dropping_the_log_flushes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let options = WalOptions {
        async_flush_interval: Duration::from_secs(3600),
        ..WalOptions::default()
    };
    let (wal, _, _) = open_collect(&dir, options).unwrap();
    wal.log(&edit(1, 1, "r", 1), Durability::AsyncWal).unwrap();
    drop(wal);
    assert_eq!(reopen(&dir).0, vec![edit(1, 1, "r", 1)]);
}

#[test]
fn skip_wal_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let (wal, _, _) = open_collect(&dir, WalOptions::default()).unwrap();
    for s in 1..=10 {
        wal.log(&edit(1, s, "r", 2), Durability::SkipWal).unwrap();
    }
    assert_eq!(wal.stats(), super::WalStats::default());
    let seg = wal.segments().last().unwrap().path.clone();
    wal.close().unwrap();
    assert_eq!(fs::metadata(&seg).unwrap().len(), SEGMENT_HEADER_LEN as u64);
    let (replayed, report) = reopen(&dir);
    assert!(replayed.is_empty());
    assert_eq!(report.records, 0);
}

#[test]
fn closed_log_refuses_appends() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let (wal, _, _) = open_collect(&dir, WalOptions::default()).unwrap();
    let lsn = wal.append(&edit(1, 1, "r", 1)).unwrap();
    wal.close().unwrap();
    assert!(matches!(
        wal.append(&edit(1, 2, "r", 1)),
        Err(Error::Closed(_))
    ));
    assert!(matches!(
        wal.log(&edit(1, 2, "r", 1), Durability::FsyncWal),
        Err(Error::Closed(_))
    ));
    // The edit appended before close is durable, so waiting for it is fine.
    wal.sync(lsn, Durability::FsyncWal).unwrap();
    wal.close().unwrap();
    assert_eq!(reopen(&dir).0.len(), 1);
}

#[test]
fn sync_of_an_unknown_position_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (wal, _, _) = open_collect(&wal_dir(&tmp), WalOptions::default()).unwrap();
    assert!(matches!(
        wal.sync(1, Durability::SyncWal),
        Err(Error::InvalidArgument(_))
    ));
    wal.sync(0, Durability::FsyncWal).unwrap();
    wal.close().unwrap();
}

#[test]
fn edit_spanning_rows_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (wal, _, _) = open_collect(&wal_dir(&tmp), WalOptions::default()).unwrap();
    let mut e = edit(1, 1, "a", 2);
    e.cells[1].row = Bytes::from_static(b"b");
    assert!(matches!(
        wal.log(&e, Durability::SyncWal),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(wal.stats().appends, 0);
    wal.close().unwrap();
}

#[test]
fn apply_error_stops_replay_and_is_returned() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    write_one_segment(
        &dir,
        &(1..=5).map(|s| edit(1, s, "r", 1)).collect::<Vec<_>>(),
    );
    let mut seen = 0;
    let result = Wal::open(&dir, WalOptions::default(), |e| {
        seen += 1;
        if e.sequence_id == 3 {
            return Err(Error::invalid("region is gone"));
        }
        Ok(())
    });
    match result {
        Err(Error::InvalidArgument(m)) => assert_eq!(m, "region is gone"),
        other => panic!("expected the apply error, got {other:?}"),
    }
    assert_eq!(seen, 3);
    // Nothing was lost by the failed open.
    assert_eq!(reopen(&dir).0.len(), 5);
}

fn quick_repair() -> WalOptions {
    WalOptions {
        repair_interval: Duration::from_millis(20),
        ..WalOptions::default()
    }
}

#[test]
fn failed_write_is_truncated_away_and_the_log_recovers_by_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let (wal, _, _) = open_collect(&dir, quick_repair()).unwrap();
    let acked: Vec<WalEdit> = (1..=3).map(|s| edit(1, s, "r", 2)).collect();
    for e in &acked {
        wal.log(e, Durability::SyncWal).unwrap();
    }
    let early = wal.append(&edit(1, 4, "r", 1)).unwrap();

    wal.inner.faults.partial_write.store(true, Ordering::SeqCst);
    let err = wal
        .log(&edit(1, 5, "r", 2), Durability::SyncWal)
        .unwrap_err();
    match &err {
        Error::WalFailed(cause) => assert!(cause.contains("no space"), "{cause}"),
        other => panic!("expected WalFailed, got {other}"),
    }
    // The record appended before the failure was in the failed batch: it
    // is not acknowledged either, now or later.
    assert!(matches!(
        wal.sync(early, Durability::SyncWal),
        Err(Error::WalFailed(_))
    ));
    // Appends are refused until the repair interval has passed...
    assert!(matches!(
        wal.append(&edit(1, 6, "r", 1)),
        Err(Error::WalFailed(_))
    ));
    std::thread::sleep(Duration::from_millis(30));
    // ...then the next append repairs the log: a new segment takes writes.
    let after: Vec<WalEdit> = (7..=8).map(|s| edit(1, s, "r", 1)).collect();
    for e in &after {
        wal.log(e, Durability::FsyncWal).unwrap();
    }
    assert!(matches!(
        wal.sync(early, Durability::SyncWal),
        Err(Error::WalFailed(_))
    ));
    assert_eq!((wal.stats().failures, wal.stats().repairs), (1, 1));
    assert_eq!(wal.segments().len(), 2);
    wal.close().unwrap();
    drop(wal);

    // Every acknowledged record is replayed, no failed one, and the failed
    // segment was truncated clean (no torn tail).
    let (replayed, report) = reopen(&dir);
    let mut want = acked.clone();
    want.extend(after);
    assert_eq!(replayed, want);
    assert!(report.torn_tail.is_none(), "{report:?}");
}

#[test]
fn failed_records_stay_out_of_the_log_when_it_is_closed_before_a_repair() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let (wal, _, _) = open_collect(&dir, WalOptions::default()).unwrap();
    wal.log(&edit(1, 1, "r", 2), Durability::SyncWal).unwrap();
    wal.inner.faults.partial_write.store(true, Ordering::SeqCst);
    // The truncation right after the failure fails too: close retries it.
    wal.inner.faults.fail_seal.store(true, Ordering::SeqCst);
    assert!(wal.log(&edit(1, 2, "r", 2), Durability::SyncWal).is_err());
    assert!(matches!(wal.close(), Err(Error::WalFailed(_))));
    drop(wal);
    let (replayed, report) = reopen(&dir);
    assert_eq!(replayed, [edit(1, 1, "r", 2)]);
    assert!(report.torn_tail.is_none(), "{report:?}");
}

#[test]
fn a_failed_repair_is_retried_later() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let (wal, _, _) = open_collect(&dir, quick_repair()).unwrap();
    wal.log(&edit(1, 1, "r", 1), Durability::SyncWal).unwrap();
    wal.inner.faults.partial_write.store(true, Ordering::SeqCst);
    assert!(wal.log(&edit(1, 2, "r", 1), Durability::SyncWal).is_err());
    std::thread::sleep(Duration::from_millis(30));
    // The disk is still full: the roll of the repair fails...
    wal.inner.faults.fail_roll.store(true, Ordering::SeqCst);
    let err = wal.append(&edit(1, 3, "r", 1)).unwrap_err();
    assert!(
        matches!(&err, Error::WalFailed(c) if c.contains("no space")),
        "{err}"
    );
    // ...and is not retried at once...
    assert!(wal.append(&edit(1, 3, "r", 1)).is_err());
    std::thread::sleep(Duration::from_millis(30));
    // ...but after the interval, and then it works.
    wal.log(&edit(1, 4, "r", 1), Durability::SyncWal).unwrap();
    wal.close().unwrap();
    drop(wal);
    assert_eq!(reopen(&dir).0, [edit(1, 1, "r", 1), edit(1, 4, "r", 1)]);
}

#[test]
fn failed_fsync_drops_everything_since_the_last_good_fsync_and_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let (wal, _, _) = open_collect(&dir, quick_repair()).unwrap();
    wal.log(&edit(1, 1, "r", 1), Durability::FsyncWal).unwrap();
    // Written (acknowledged as SyncWal) but never fsynced.
    wal.log(&edit(1, 2, "r", 1), Durability::SyncWal).unwrap();
    wal.inner.faults.fail_fsync.store(true, Ordering::SeqCst);
    let err = wal
        .log(&edit(1, 3, "r", 1), Durability::FsyncWal)
        .unwrap_err();
    assert!(
        matches!(&err, Error::WalFailed(c) if c.contains("fsync failed")),
        "{err}"
    );
    assert!(matches!(
        wal.log(&edit(1, 4, "r", 1), Durability::SyncWal),
        Err(Error::WalFailed(_))
    ));
    std::thread::sleep(Duration::from_millis(30));
    wal.log(&edit(1, 5, "r", 1), Durability::FsyncWal).unwrap();
    wal.close().unwrap();
    drop(wal);
    // After a failed fsync the page cache says nothing about the disk: the
    // segment was cut back to its last good fsync, so the fsync-failed
    // record cannot come back (nor, by the documented trade-off, the
    // SyncWal one written after the last good fsync).
    let (replayed, report) = reopen(&dir);
    assert_eq!(replayed, [edit(1, 1, "r", 1), edit(1, 5, "r", 1)]);
    assert!(report.torn_tail.is_none(), "{report:?}");
}

#[test]
fn repeated_opens_do_not_pile_up_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    write_one_segment(&dir, &[edit(1, 1, "r", 1)]);
    for _ in 0..5 {
        reopen(&dir);
    }
    // The segment with the record plus the empty one of the last open.
    assert_eq!(segment_files(&dir).len(), 2);
    let (replayed, report) = reopen(&dir);
    assert_eq!(replayed.len(), 1);
    assert_eq!(report.segments, 2);
}

#[test]
fn leftover_temp_segments_are_removed_and_strangers_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    write_one_segment(&dir, &[edit(1, 1, "r", 1)]);
    let leftover = dir.join("00000000000000000099.log.tmp");
    fs::write(&leftover, b"half a header").unwrap();
    let stranger = dir.join("README");
    fs::write(&stranger, b"not a segment").unwrap();
    let (replayed, _) = reopen(&dir);
    assert_eq!(replayed.len(), 1);
    assert!(!leftover.exists());
    assert!(stranger.exists());
}

#[test]
fn an_all_flushed_active_segment_rolls_then_retires_and_its_empty_successor_cannot_block_a_start() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = wal_dir(&tmp);
    let (wal, _, _) = open_collect(&dir, WalOptions::default()).unwrap();
    for seq in 1..=3 {
        wal.log(&edit(7, seq, "r", 1), Durability::SyncWal).unwrap();
    }
    // Region 7 has flushed only through 2: the active segment is needed.
    let through =
        |n: u64| move |s: &SegmentInfo| s.max_sequence_ids.get(&7).is_none_or(|&m| m <= n);
    assert!(!wal.roll_if_flushed(through(2)).unwrap());
    assert_eq!(wal.segments().len(), 1);
    // Flushed through 3: it rolls, and the old one retires like any other.
    assert!(wal.roll_if_flushed(through(3)).unwrap());
    assert_eq!(wal.retire_segments(through(3)).unwrap(), 1);
    let segments = wal.segments();
    assert_eq!(segments.len(), 1);
    assert_eq!(segments[0].records, 0);
    assert!(segments[0].active);
    // An empty active segment has nothing to roll.
    assert!(!wal.roll_if_flushed(through(3)).unwrap());
    wal.close().unwrap();

    // A damaged header of a last segment without records is dropped and
    // reported; nothing was in it to recover.
    let files = segment_files(&dir);
    assert_eq!(files.len(), 1);
    flip_byte(&files[0], 9);
    let (replayed, report) = reopen(&dir);
    assert!(replayed.is_empty());
    let torn = report.torn_tail.expect("reported");
    assert!(torn.reason.contains("without records"), "{}", torn.reason);
}
