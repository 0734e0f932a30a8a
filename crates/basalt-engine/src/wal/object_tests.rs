#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "object_segment_tests.rs"]
mod segments;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_types::{Cell, CellType, Durability, Error};
use bytes::Bytes;

use super::*;
use crate::fs::{FaultOp, FaultyFileStore, FileStore, MemFileStore};

const ROOT: &str = "/db";

fn edit(region_id: u64, sequence_id: u64, row: &str) -> WalEdit {
    WalEdit {
        region_id,
        sequence_id,
        cells: vec![Cell {
            row: Bytes::copy_from_slice(row.as_bytes()),
            family: Bytes::from_static(b"cf"),
            qualifier: Bytes::from_static(b"q"),
            timestamp: 1_700_000_000_000,
            cell_type: CellType::Put,
            sequence_id,
            value: Bytes::from(format!("v{sequence_id}")),
            ttl_millis: None,
        }],
    }
}

/// A window long enough that nothing is published unless asked: the
/// tests decide when a batch ends, never the clock.
fn manual() -> ObjectWalOptions {
    ObjectWalOptions {
        group_commit_window: Duration::from_secs(3600),
        repair_interval: Duration::from_millis(1),
        ..ObjectWalOptions::default()
    }
}

/// Claims and opens a log over `files`, collecting what replay applies.
fn open(files: Arc<dyn FileStore>, options: ObjectWalOptions) -> (Arc<ObjectWal>, Vec<WalEdit>) {
    let (wal, replayed, _) = try_open(files, options).unwrap();
    (wal, replayed)
}

/// [`open`], also answering the replay's report, or the error that
/// stopped it.
fn try_open(
    files: Arc<dyn FileStore>,
    options: ObjectWalOptions,
) -> basalt_types::Result<(Arc<ObjectWal>, Vec<WalEdit>, ReplayReport)> {
    let claim = ObjectWal::claim_with(files, Path::new(ROOT), options.objects_in_flight)?;
    let mut replayed = Vec::new();
    let (wal, report) = ObjectWal::open(claim, options, |e| {
        replayed.push(e);
        Ok(())
    })?;
    Ok((wal, replayed, report))
}

/// Appends and makes durable one edit, publishing it as its own object.
fn write(wal: &ObjectWal, e: &WalEdit) -> basalt_types::Result<()> {
    write_as(wal, e, Durability::SyncWal)
}

/// [`write`] with `durability`.
fn write_as(wal: &ObjectWal, e: &WalEdit, durability: Durability) -> basalt_types::Result<()> {
    let lsn = wal.append(e)?;
    wal.publish_pending();
    wal.sync(lsn, durability)
}

/// Waits (liveness bound only) until `cond` holds.
fn eventually(mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "condition never became true");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A process "crash": the log is never closed (no `Closed` object).
fn crash(wal: Arc<ObjectWal>) {
    std::mem::forget(wal);
}

#[test]
fn concurrent_appends_of_one_window_become_one_object() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let (wal, _) = open(Arc::clone(&files), manual());
    let writers: Vec<_> = (0..4u64)
        .map(|i| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                let lsn = wal.append(&edit(1, i + 1, &format!("r{i}"))).unwrap();
                wal.sync(lsn, Durability::SyncWal)
            })
        })
        .collect();
    eventually(|| wal.stats().appends == 4);
    wal.publish_pending();
    for w in writers {
        w.join().unwrap().unwrap();
    }
    let objects = wal.objects();
    assert_eq!(objects.len(), 1, "{objects:?}");
    assert_eq!(objects[0].records, 4);
    assert_eq!(objects[0].sequence, 1);
    assert_eq!(wal.stats().writes, 1);
}

/// The default: no window. A lone writer waits for its own object and
/// nothing else (under `manual()` this would wait an hour), and the edits
/// that arrive while that object is being written share the next one.
#[test]
fn without_a_window_edits_appended_while_an_object_is_written_share_the_next_one() {
    let faulty = FaultyFileStore::new(Arc::new(MemFileStore::new()));
    let files: Arc<dyn FileStore> = Arc::new(faulty.clone());
    // One object at a time (the default): the followers wait for the lone
    // edit's object.
    let (wal, _) = open(files, ObjectWalOptions::default());
    assert_eq!(wal.inner.options.objects_in_flight, 1);
    assert_eq!(wal.inner.options.group_commit_window, Duration::ZERO);
    faulty.hold_finishes();
    let sync_writer = |i: u64| {
        let wal = Arc::clone(&wal);
        std::thread::spawn(move || {
            let lsn = wal.append(&edit(1, i, &format!("r{i}"))).unwrap();
            wal.sync(lsn, Durability::SyncWal)
        })
    };
    let lone = sync_writer(1);
    // Its object is being written (the store holds it): nothing waited
    // for company.
    eventually(|| faulty.held_finishes() == 1);
    let followers: Vec<_> = (2..=4).map(sync_writer).collect();
    eventually(|| wal.stats().appends == 4);
    assert_eq!(wal.stats().writes, 0, "nothing is acknowledged yet");
    faulty.release_finishes();
    lone.join().unwrap().unwrap();
    for follower in followers {
        follower.join().unwrap().unwrap();
    }
    let records: Vec<u64> = wal.objects().iter().map(|o| o.records).collect();
    assert_eq!(
        records,
        vec![1, 3],
        "one object for the lone edit, one for the three after it"
    );
    assert_eq!(wal.stats().writes, 2);
}

/// An acknowledgement wakes the writers of its own batch and one writer of
/// the pending batch (to lead it), not every waiting writer: a log-wide
/// wake-up sent half of 64 writers back to sleep at every object.
#[test]
fn an_acknowledged_object_wakes_its_own_writers_and_one_leader_only() {
    let faulty = FaultyFileStore::new(Arc::new(MemFileStore::new()));
    let files: Arc<dyn FileStore> = Arc::new(faulty.clone());
    let (wal, _) = open(files, ObjectWalOptions::default());
    faulty.hold_finishes();
    let lone = spawn_write(&wal, edit(1, 1, "r1"));
    eventually(|| faulty.held_finishes() == 1);
    let followers: Vec<_> = (2..=4)
        .map(|i| spawn_write(&wal, edit(1, i, &format!("r{i}"))))
        .collect();
    let sleeps = || wal.inner.stats.sleeps.load(Ordering::Relaxed);
    // The lone writer leads its object without sleeping; each follower
    // sleeps once, the object in flight being the one allowed.
    eventually(|| sleeps() == 3);
    faulty.release_finishes();
    lone.join().unwrap().unwrap();
    for follower in followers {
        follower.join().unwrap().unwrap();
    }
    assert_eq!(wal.stats().writes, 2);
    // One follower woke to lead the next object and was acknowledged by
    // publishing it; the other two woke once, when it was acknowledged.
    assert_eq!(sleeps(), 3, "no writer went back to sleep");
}

/// Options for the tests of objects in flight: no window (writers lead
/// their batches), four in flight, repairs at once.
fn in_flight() -> ObjectWalOptions {
    ObjectWalOptions {
        repair_interval: Duration::from_millis(1),
        objects_in_flight: 4,
        ..ObjectWalOptions::default()
    }
}

/// A writer thread: appends `e` and waits until it is published.
fn spawn_write(
    wal: &Arc<ObjectWal>,
    e: WalEdit,
) -> std::thread::JoinHandle<basalt_types::Result<()>> {
    let wal = Arc::clone(wal);
    std::thread::spawn(move || {
        let lsn = wal.append(&e)?;
        wal.sync(lsn, Durability::SyncWal)
    })
}

/// Writes `slow` as the log's object 1, held by the store, then `landed`
/// as object 2, which lands at once: the two writers and object 1's path.
/// `files` is the store behind `faulty` (where object 2 is looked for).
fn slow_object_and_one_landed_behind_it(
    wal: &Arc<ObjectWal>,
    faulty: &FaultyFileStore,
    files: &dyn FileStore,
    slow: WalEdit,
    landed: WalEdit,
) -> (
    std::thread::JoinHandle<basalt_types::Result<()>>,
    std::thread::JoinHandle<basalt_types::Result<()>>,
    std::path::PathBuf,
) {
    let epoch = wal.log_id();
    let slow_path = object_path(Path::new(ROOT), epoch, 1);
    faulty.hold_finishes_of(&slow_path);
    let first = spawn_write(wal, slow);
    eventually(|| faulty.held_finishes() == 1);
    let second = spawn_write(wal, landed);
    eventually(|| {
        files
            .exists(&object_path(Path::new(ROOT), epoch, 2))
            .unwrap()
    });
    (first, second, slow_path)
}

#[test]
fn a_batch_goes_out_beside_a_slow_one_and_is_acknowledged_only_after_it() {
    let faulty = FaultyFileStore::new(Arc::new(MemFileStore::new()));
    let files: Arc<dyn FileStore> = Arc::new(faulty.clone());
    let (wal, _) = open(Arc::clone(&files), in_flight());
    assert!(wal.inner.options.objects_in_flight > 1);
    // The second batch does not wait for the first object: it is
    // published beside it, and lands first.
    let (first, second, slow) = slow_object_and_one_landed_behind_it(
        &wal,
        &faulty,
        files.as_ref(),
        edit(1, 1, "first"),
        edit(1, 2, "second"),
    );
    // Acknowledged in order: nothing yet, with number 1 still missing.
    assert_eq!(wal.published_lsn(), 0);
    assert!(!second.is_finished());
    assert_eq!(wal.stats().writes, 0);
    faulty.release_finishes_of(&slow);
    first.join().unwrap().unwrap();
    second.join().unwrap().unwrap();
    assert_eq!(wal.published_lsn(), 2);
    let sequences: Vec<u64> = wal.objects().iter().map(|o| o.sequence).collect();
    assert_eq!(sequences, vec![1, 2]);
    crash(wal);
    let (_next, replayed) = open(files, manual());
    assert_eq!(replayed, vec![edit(1, 1, "first"), edit(1, 2, "second")]);
}

#[test]
fn a_failed_object_fails_the_landed_ones_behind_it_and_the_repair_voids_them_all() {
    let faulty = FaultyFileStore::new(Arc::new(MemFileStore::new()));
    let files: Arc<dyn FileStore> = Arc::new(faulty.clone());
    let (wal, _) = open(Arc::clone(&files), in_flight());
    let epoch = wal.log_id();
    let landed = object_path(Path::new(ROOT), epoch, 2);
    let (first, second, slow) = slow_object_and_one_landed_behind_it(
        &wal,
        &faulty,
        files.as_ref(),
        edit(1, 1, "fails"),
        edit(1, 2, "behind it"),
    );
    // The slow request times out: its outcome is unknown.
    faulty.fail_nth(FaultOp::Finish, 1);
    faulty.release_finishes_of(&slow);
    let first = first.join().unwrap().unwrap_err();
    let second = second.join().unwrap().unwrap_err();
    assert!(matches!(first, Error::WalFailed(_)), "{first}");
    // Its object landed, but behind a number that may stay missing: it is
    // never acknowledged.
    assert!(matches!(second, Error::WalFailed(_)), "{second}");
    eventually(|| wal.stats().repairs == 1);
    // The repair filled number 1 and voided both after the window.
    let filler = read_object(files.as_ref(), &slow).unwrap().unwrap();
    assert_eq!((filler.kind, filler.edits.len()), (Kind::Records, 0));
    let void = read_object(files.as_ref(), &object_path(Path::new(ROOT), epoch, 3))
        .unwrap()
        .unwrap();
    assert_eq!((void.kind, void.voids), (Kind::Void, Some((1, 2))));
    write(&wal, &edit(1, 3, "after")).unwrap();
    assert_eq!(wal.objects().last().map(|o| o.sequence), Some(4));
    crash(wal);
    let (next, replayed) = open(Arc::clone(&files), manual());
    assert_eq!(replayed, vec![edit(1, 3, "after")]);
    // Retirement deletes the voided window, and its void after it.
    next.retire_flushed(&|_| Some(u64::MAX)).unwrap();
    assert!(!files.exists(&landed).unwrap());
    assert!(!files.exists(&slow).unwrap());
}

#[test]
fn a_fencer_fences_a_missing_number_where_a_slow_object_would_land() {
    // The stale writer's requests are slow, the newer owner's are not.
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let faulty = FaultyFileStore::new(Arc::clone(&files));
    let (stale, _) = open(Arc::new(faulty.clone()), in_flight());
    let epoch = stale.log_id();
    let (first, second, slow) = slow_object_and_one_landed_behind_it(
        &stale,
        &faulty,
        files.as_ref(),
        edit(1, 1, "slow"),
        edit(1, 2, "landed"),
    );
    // A newer owner opens meanwhile: number 1 is missing and may still
    // land, so it is fenced too, not only the number after the newest.
    let (newer, replayed) = open(Arc::clone(&files), manual());
    let gap = read_object(files.as_ref(), &slow).unwrap().unwrap();
    assert_eq!(gap.kind, Kind::Fence);
    // The unacknowledged batch that did land is replayed: the outcome of
    // a write cut off by a fence is unknown (as in HBase).
    assert_eq!(replayed, vec![edit(1, 2, "landed")]);
    faulty.release_finishes_of(&slow);
    // The slow object collides with the fence: neither write is
    // acknowledged, and the stale writer is fenced.
    assert!(matches!(first.join().unwrap(), Err(Error::Fenced { .. })));
    assert!(second.join().unwrap().is_err());
    assert!(stale.fence().is_tripped());
    // Deleting the log keeps the gap's fence: a publication of the stale
    // writer still on its way there must keep colliding.
    crash(stale);
    newer.retire_flushed(&|_| Some(u64::MAX)).unwrap();
    delete_log(files.as_ref(), Path::new(ROOT), epoch).unwrap();
    assert!(files.exists(&slow).unwrap());
}

#[test]
fn replay_returns_every_acknowledged_edit_in_order_and_fences_the_log() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let (first, _) = open(Arc::clone(&files), manual());
    let written: Vec<WalEdit> = (1..=5).map(|i| edit(i % 2, i, &format!("r{i}"))).collect();
    for e in &written {
        write(&first, e).unwrap();
    }
    assert_eq!(first.objects().len(), 5);
    let old_log = first.log_id();
    crash(first);

    let (second, replayed) = open(Arc::clone(&files), manual());
    assert_eq!(replayed, written);
    assert!(second.log_id() > old_log);
    // The old log ends with a fence naming the new epoch, right after its
    // last batch.
    let fence_path = object_path(Path::new(ROOT), old_log, 6);
    let fence = read_object(files.as_ref(), &fence_path).unwrap().unwrap();
    assert_eq!(fence.kind, Kind::Fence);
    assert_eq!(fence.epoch, second.log_id());
}

#[test]
fn a_stale_writer_whose_next_object_collides_is_fenced_and_never_acknowledges() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let (stale, _) = open(Arc::clone(&files), manual());
    write(&stale, &edit(1, 1, "before")).unwrap();

    let (owner, replayed) = open(Arc::clone(&files), manual());
    assert_eq!(replayed, vec![edit(1, 1, "before")]);

    let err = write(&stale, &edit(1, 2, "after")).unwrap_err();
    assert!(
        matches!(err, Error::Fenced { epoch, .. } if epoch == owner.log_id()),
        "{err}"
    );
    assert!(err
        .to_string()
        .contains("fenced: another process opened this data at epoch"));
    assert!(stale.fence().is_tripped());
    // Every later append is refused the same way, and nothing is retired.
    assert!(matches!(
        stale.append(&edit(1, 3, "later")),
        Err(Error::Fenced { .. })
    ));
    assert_eq!(stale.retire_flushed(&|_| Some(u64::MAX)).unwrap(), 0);

    // The edit refused to the stale writer is not in the log: a third
    // owner replays only what was acknowledged.
    write(&owner, &edit(1, 3, "owner")).unwrap();
    crash(owner);
    let (_third, replayed) = open(Arc::clone(&files), manual());
    assert_eq!(replayed, vec![edit(1, 1, "before"), edit(1, 3, "owner")]);
}

#[test]
fn two_processes_claiming_at_once_get_different_epochs() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let a = ObjectWal::claim(Arc::clone(&files), Path::new(ROOT)).unwrap();
    let b = ObjectWal::claim(Arc::clone(&files), Path::new(ROOT)).unwrap();
    assert_ne!(a.fence().epoch(), b.fence().epoch());
    // The same epoch taken by another claim first: the next one is used.
    let taken = b.fence().epoch() + 1;
    publish(
        files.as_ref(),
        &object_path(Path::new(ROOT), taken, 0),
        &encode_object(Kind::Claim, taken, 0, &[]),
    )
    .unwrap();
    let c = ObjectWal::claim(Arc::clone(&files), Path::new(ROOT)).unwrap();
    assert_eq!(c.fence().epoch(), taken + 1);
}

#[test]
fn a_corrupt_log_object_is_an_error_naming_it() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let (wal, _) = open(Arc::clone(&files), manual());
    write(&wal, &edit(1, 1, "a")).unwrap();
    let path = wal.objects()[0].path.clone();
    crash(wal);
    let good = files.read_all(&path).unwrap();
    let mut bad = good.to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 0x40;
    files.delete(&path).unwrap();
    publish(files.as_ref(), &path, &bad).unwrap();

    let claim = ObjectWal::claim(Arc::clone(&files), Path::new(ROOT)).unwrap();
    let err = ObjectWal::open(claim, manual(), |_| Ok(())).unwrap_err();
    match err {
        Error::Corruption {
            path: p, message, ..
        } => {
            assert_eq!(p, path);
            assert!(message.contains("checksum"), "{message}");
        }
        other => panic!("expected corruption, got {other}"),
    }
}

#[test]
fn garbage_objects_are_refused_whatever_their_bytes() {
    for bytes in [
        &b""[..],
        b"BASALTWO",
        b"not a log object at all, just text long enough for a header ..",
    ] {
        assert!(decode_object(&Bytes::copy_from_slice(bytes)).is_err());
    }
    // A valid header claiming more records than the body can hold.
    let lying = encode_object(Kind::Records, 1, 1000, &[]);
    let err = decode_object(&Bytes::from(lying)).unwrap_err();
    assert!(err.contains("cannot fit"), "{err}");
}

#[test]
fn a_void_names_one_number_or_a_run_no_longer_than_the_objects_in_flight() {
    let decode = |bytes: Vec<u8>| decode_object(&Bytes::from(bytes));
    assert_eq!(decode(encode_void(1, 7, 7)).unwrap().voids, Some((7, 7)));
    assert_eq!(decode(encode_void(1, 7, 9)).unwrap().voids, Some((7, 9)));
    let longest = 7 + MAX_OBJECTS_IN_FLIGHT as u64 - 1;
    assert_eq!(
        decode(encode_void(1, 7, longest)).unwrap().voids,
        Some((7, longest))
    );
    // Longer than replay holds back, backwards, or of a body of another
    // size: refused, naming what is wrong.
    let run = |first: u64, last: u64| {
        let mut body = Vec::new();
        coding::put_u64_le(&mut body, first);
        coding::put_u64_le(&mut body, last);
        encode_object(Kind::Void, 1, 0, &body)
    };
    for (first, last) in [(7, longest + 1), (9, 7), (0, u64::MAX)] {
        let err = decode(run(first, last)).unwrap_err();
        assert!(err.contains("void object of sequences"), "{err}");
    }
    let err = decode(encode_object(Kind::Void, 1, 0, &[0; 12])).unwrap_err();
    assert!(err.contains("12 body bytes"), "{err}");
}

#[test]
fn retirement_deletes_only_objects_every_region_has_flushed_past() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let (wal, _) = open(Arc::clone(&files), manual());
    write(&wal, &edit(1, 5, "a")).unwrap();
    write(&wal, &edit(2, 9, "b")).unwrap();
    let objects = wal.objects();
    // Region 1 flushed past its edit, region 2 not yet.
    let retired = wal
        .retire_flushed(&|region| Some(if region == 1 { 5 } else { 8 }))
        .unwrap();
    assert_eq!(retired, 1);
    assert!(!files.exists(&objects[0].path).unwrap());
    assert!(files.exists(&objects[1].path).unwrap());
    // A region that no longer exists needs nothing; but the newest object
    // of an open log stays (see the next test), until a newer one exists.
    assert_eq!(wal.retire_flushed(&|_| None).unwrap(), 0);
    write(&wal, &edit(3, 1, "c")).unwrap();
    assert_eq!(wal.retire_flushed(&|_| None).unwrap(), 1);
    assert!(!files.exists(&objects[1].path).unwrap());
}

#[test]
fn an_open_log_keeps_its_newest_object_so_a_writer_that_retired_everything_is_still_fenced() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let (stale, _) = open(Arc::clone(&files), manual());
    for i in 1..=3 {
        write(&stale, &edit(1, i, "x")).unwrap();
    }
    // Everything is flushed: all but the newest object go.
    assert_eq!(stale.retire_flushed(&|_| Some(u64::MAX)).unwrap(), 2);
    let newest = object_path(Path::new(ROOT), stale.log_id(), 3);
    assert!(files.exists(&newest).unwrap());

    // The fence lands after the newest object, at the writer's next
    // number, not in a slot retirement freed.
    let (owner, replayed) = open(Arc::clone(&files), manual());
    assert_eq!(replayed, vec![edit(1, 3, "x")]);
    let err = write(&stale, &edit(1, 4, "after")).unwrap_err();
    assert!(
        matches!(err, Error::Fenced { epoch, .. } if epoch == owner.log_id()),
        "{err}"
    );
}

#[test]
fn a_closed_log_keeps_nothing_but_its_claim_and_closed_object_once_flushed() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let (wal, _) = open(Arc::clone(&files), manual());
    write(&wal, &edit(1, 1, "a")).unwrap();
    wal.close().unwrap();
    assert_eq!(wal.retire_flushed(&|_| Some(u64::MAX)).unwrap(), 1);
    let left = files.list(&log_dir(Path::new(ROOT), wal.log_id())).unwrap();
    assert_eq!(left.len(), 2, "{left:?}");
}

#[test]
fn a_fence_that_landed_in_a_retired_slot_ends_nothing_and_the_log_is_fenced_after_its_newest_object(
) {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let root = Path::new(ROOT);
    let (stale, _) = open(Arc::clone(&files), manual());
    for i in 1..=3 {
        write(&stale, &edit(1, i, "x")).unwrap();
    }
    stale.retire_flushed(&|_| Some(u64::MAX)).unwrap();
    let log = stale.log_id();
    // A fencer that listed the log when object 1 was its newest, and was
    // paused while the writer published 2 and 3 and retired 1 and 2,
    // creates its fence at 2: a slot the writer no longer uses.
    publish(
        files.as_ref(),
        &object_path(root, log, 2),
        &encode_object(Kind::Fence, 99, 0, &[]),
    )
    .unwrap();
    write(&stale, &edit(1, 4, "still acknowledged")).unwrap();

    // Fencing again sees objects after that fence, and fences after the
    // newest one; a replay skips the stray fence and misses nothing.
    fence_log(files.as_ref(), root, log, 100).unwrap();
    let err = write(&stale, &edit(1, 5, "refused")).unwrap_err();
    assert!(matches!(err, Error::Fenced { epoch: 100, .. }), "{err}");
    let mut replayed = Vec::new();
    replay_log(files.as_ref(), root, log, |e| {
        replayed.push(e);
        Ok(())
    })
    .unwrap();
    assert_eq!(
        replayed,
        vec![edit(1, 3, "x"), edit(1, 4, "still acknowledged")]
    );
}

#[test]
fn a_crashed_servers_log_is_listed_fenced_once_replayed_and_deleted_by_other_processes() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let root = Path::new(ROOT);
    let (dead, _) = open(Arc::clone(&files), manual());
    let written: Vec<WalEdit> = (1..=3).map(|i| edit(i, i, "r")).collect();
    for e in &written {
        write(&dead, e).unwrap();
    }
    let dead_log = dead.log_id();
    crash(dead);
    // A member server starts its own log beside it without touching it.
    let claim = ObjectWal::claim(Arc::clone(&files), root).unwrap();
    let member = ObjectWal::open_own(claim, manual()).unwrap();
    write(&member, &edit(9, 1, "own")).unwrap();
    assert_eq!(
        list_logs(files.as_ref(), root).unwrap(),
        vec![dead_log, member.log_id()]
    );

    // Replaying a log that may still be written is refused, naming it.
    let err = replay_log(files.as_ref(), root, dead_log, |_| Ok(())).unwrap_err();
    assert!(
        matches!(&err, Error::WalFailed(m) if m.contains(&dead_log.to_string())),
        "{err}"
    );
    assert!(matches!(
        delete_log(files.as_ref(), root, dead_log),
        Err(Error::WalFailed(_))
    ));

    fence_log(files.as_ref(), root, dead_log, 7).unwrap();
    let before = files.list(&log_dir(root, dead_log)).unwrap();
    fence_log(files.as_ref(), root, dead_log, 8).unwrap();
    assert_eq!(
        files.list(&log_dir(root, dead_log)).unwrap(),
        before,
        "fencing twice adds nothing"
    );
    let fence = read_object(files.as_ref(), before.last().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!((fence.kind, fence.epoch), (Kind::Fence, 7));

    let mut replayed = Vec::new();
    let report = replay_log(files.as_ref(), root, dead_log, |e| {
        replayed.push(e);
        Ok(())
    })
    .unwrap();
    assert_eq!(replayed, written);
    assert_eq!((report.segments, report.records), (3, 3));

    delete_log(files.as_ref(), root, dead_log).unwrap();
    assert_eq!(
        list_logs(files.as_ref(), root).unwrap(),
        vec![member.log_id()]
    );
    // Only the fence is left: the directory keeps the log id taken.
    let left = files.list(&log_dir(root, dead_log)).unwrap();
    assert_eq!(left, vec![before.last().unwrap().clone()]);
    // The member's own log was never fenced.
    write(&member, &edit(9, 2, "own")).unwrap();
}

#[test]
fn a_deleted_log_still_fences_its_paused_writer_and_keeps_epochs_growing() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let root = Path::new(ROOT);
    let (older, _) = open(Arc::clone(&files), manual());
    let claim = ObjectWal::claim(Arc::clone(&files), root).unwrap();
    let paused = ObjectWal::open_own(claim, manual()).unwrap();
    write(&paused, &edit(1, 1, "a")).unwrap();
    let paused_log = paused.log_id();
    assert!(paused_log > older.log_id());

    fence_log(files.as_ref(), root, paused_log, 50).unwrap();
    delete_log(files.as_ref(), root, paused_log).unwrap();
    // Fencing invariant W1: the paused writer's next number is still the fence.
    let err = write(&paused, &edit(1, 2, "b")).unwrap_err();
    assert!(matches!(err, Error::Fenced { epoch: 50, .. }), "{err}");
    // Fencing invariant E1: the deleted log was the highest; the next claim
    // still goes above it.
    let next = ObjectWal::claim(Arc::clone(&files), root).unwrap();
    assert!(next.fence().epoch() > paused_log);
}

#[test]
fn replaying_an_ended_log_skips_a_batch_its_writer_voided() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let root = Path::new(ROOT);
    let (wal, _) = open(Arc::clone(&files), manual());
    let epoch = wal.log_id();
    write(&wal, &edit(1, 1, "ok")).unwrap();
    // A batch that landed although its publication was reported failed,
    // then the void the repair writes after it.
    let mut body = Vec::new();
    format::encode_record(&edit(1, 2, "failed"), &mut body).unwrap();
    publish(
        files.as_ref(),
        &object_path(root, epoch, 2),
        &encode_object(Kind::Records, epoch, 1, &body),
    )
    .unwrap();
    let mut voided = Vec::new();
    coding::put_u64_le(&mut voided, 2);
    publish(
        files.as_ref(),
        &object_path(root, epoch, 3),
        &encode_object(Kind::Void, epoch, 0, &voided),
    )
    .unwrap();
    crash(wal);
    fence_log(files.as_ref(), root, epoch, epoch + 1).unwrap();
    let mut replayed = Vec::new();
    replay_log(files.as_ref(), root, epoch, |e| {
        replayed.push(e);
        Ok(())
    })
    .unwrap();
    assert_eq!(replayed, vec![edit(1, 1, "ok")]);
}

#[test]
fn replaying_or_deleting_a_log_that_does_not_exist_is_an_error() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let root = Path::new(ROOT);
    assert!(matches!(
        replay_log(files.as_ref(), root, 42, |_| Ok(())),
        Err(Error::WalFailed(_))
    ));
    assert!(matches!(
        delete_log(files.as_ref(), root, 42),
        Err(Error::WalFailed(_))
    ));
    assert!(list_logs(files.as_ref(), root).unwrap().is_empty());
}

#[test]
fn a_cleanly_closed_log_is_deleted_whole_once_flushed_but_a_fenced_one_keeps_its_fence() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let (closed, _) = open(Arc::clone(&files), manual());
    write(&closed, &edit(1, 1, "a")).unwrap();
    let closed_log = closed.log_id();
    closed.close().unwrap();
    drop(closed);
    let (crashed, replayed) = open(Arc::clone(&files), manual());
    assert_eq!(replayed.len(), 1);
    write(&crashed, &edit(1, 2, "b")).unwrap();
    let crashed_log = crashed.log_id();
    crash(crashed);

    let (owner, replayed) = open(Arc::clone(&files), manual());
    assert_eq!(replayed.len(), 2);
    owner.retire_flushed(&|_| Some(u64::MAX)).unwrap();
    let root = Path::new(ROOT);
    assert!(files.list(&log_dir(root, closed_log)).unwrap().is_empty());
    // The crashed log keeps its claim and the fence: its writer may only
    // be paused, and would publish at the fence's number next.
    let kept = files.list(&log_dir(root, crashed_log)).unwrap();
    assert_eq!(kept.len(), 2, "{kept:?}");
    let fence = read_object(files.as_ref(), &kept[1]).unwrap().unwrap();
    assert_eq!(fence.kind, Kind::Fence);
}

#[test]
fn a_failed_publication_fails_its_writers_then_the_log_repairs_itself() {
    let faulty = FaultyFileStore::new(Arc::new(MemFileStore::new()));
    let files: Arc<dyn FileStore> = Arc::new(faulty.clone());
    let (wal, _) = open(Arc::clone(&files), manual());
    write(&wal, &edit(1, 1, "ok")).unwrap();
    faulty.fail_nth(FaultOp::Finish, 1);
    let err = write(&wal, &edit(1, 2, "lost")).unwrap_err();
    assert!(matches!(err, Error::WalFailed(_)), "{err}");
    // Repaired by the committer within its interval; writes resume.
    eventually(|| wal.stats().repairs == 1);
    write(&wal, &edit(1, 3, "after")).unwrap();
    crash(wal);

    let (_next, replayed) = open(files, manual());
    assert_eq!(replayed, vec![edit(1, 1, "ok"), edit(1, 3, "after")]);
}

#[test]
fn a_failed_publication_that_landed_anyway_is_not_replayed() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let (wal, _) = open(Arc::clone(&files), manual());
    write(&wal, &edit(1, 1, "ok")).unwrap();
    // What an unacknowledged PUT that reached the store leaves behind: the
    // log's next object, written by the log itself, while the log believes
    // the publication failed.
    let epoch = wal.log_id();
    let landed = object_path(Path::new(ROOT), epoch, 2);
    let mut body = Vec::new();
    format::encode_record(&edit(1, 2, "failed"), &mut body).unwrap();
    publish(
        files.as_ref(),
        &landed,
        &encode_object(Kind::Records, epoch, 1, &body),
    )
    .unwrap();
    {
        let inner = &wal.inner;
        let mut st = inner.state.lock();
        // The failed publication took number 2.
        st.next_sequence += 1;
        st.failed = Some(Failed {
            cause: "injected: the PUT timed out".into(),
            last_attempt: Instant::now(),
        });
    }
    wal.inner.work.notify_all();
    eventually(|| wal.stats().repairs == 1);
    write(&wal, &edit(1, 3, "after")).unwrap();
    crash(wal);
    // The landed batch stays (names are never reused); the object after
    // it voids it.
    let void = read_object(files.as_ref(), &object_path(Path::new(ROOT), epoch, 3))
        .unwrap()
        .unwrap();
    assert_eq!((void.kind, void.voids), (Kind::Void, Some((2, 2))));
    assert!(files.exists(&landed).unwrap());
    let (next, replayed) = open(Arc::clone(&files), manual());
    assert_eq!(replayed, vec![edit(1, 1, "ok"), edit(1, 3, "after")]);
    // Retirement deletes the voided batch, and its void after it.
    next.retire_flushed(&|_| Some(u64::MAX)).unwrap();
    assert!(!files.exists(&landed).unwrap());
}

#[test]
fn a_publication_refused_by_its_own_landed_first_attempt_is_acknowledged_not_fenced() {
    let faulty = FaultyFileStore::new(Arc::new(MemFileStore::new()));
    let files: Arc<dyn FileStore> = Arc::new(faulty.clone());
    let (wal, _) = open(Arc::clone(&files), manual());
    // An object store that retries a conditional PUT whose first attempt
    // landed answers the retry "already exists", with the log's own object.
    faulty.lose_answer_nth(1);
    write(&wal, &edit(1, 1, "landed")).unwrap();
    assert!(!wal.fence().is_tripped());
    assert_eq!(wal.stats().failures, 0);
    write(&wal, &edit(1, 2, "next")).unwrap();
    crash(wal);

    let (_next, replayed) = open(files, manual());
    assert_eq!(replayed, vec![edit(1, 1, "landed"), edit(1, 2, "next")]);
}

#[test]
fn a_publication_that_lands_while_the_log_repairs_is_voided_and_the_process_is_not_fenced() {
    let faulty = FaultyFileStore::new(Arc::new(MemFileStore::new()));
    let files: Arc<dyn FileStore> = Arc::new(faulty.clone());
    let (wal, _) = open(Arc::clone(&files), manual());
    write(&wal, &edit(1, 1, "ok")).unwrap();
    // The PUT times out client-side and reaches the store only when the
    // repair, having seen its number free, tries to take it.
    faulty.land_late_nth(1);
    let err = write(&wal, &edit(1, 2, "timed out")).unwrap_err();
    assert!(matches!(err, Error::WalFailed(_)), "{err}");
    eventually(|| wal.stats().repairs == 1);
    assert!(
        !wal.fence().is_tripped(),
        "the log's own late object is no fence"
    );
    write(&wal, &edit(1, 3, "after")).unwrap();
    let epoch = wal.log_id();
    crash(wal);

    let void = read_object(files.as_ref(), &object_path(Path::new(ROOT), epoch, 3))
        .unwrap()
        .unwrap();
    assert_eq!((void.kind, void.voids), (Kind::Void, Some((2, 2))));
    let (_next, replayed) = open(files, manual());
    assert_eq!(replayed, vec![edit(1, 1, "ok"), edit(1, 3, "after")]);
}

#[test]
fn a_repair_refused_by_its_own_landed_attempt_completes() {
    let faulty = FaultyFileStore::new(Arc::new(MemFileStore::new()));
    let files: Arc<dyn FileStore> = Arc::new(faulty.clone());
    let (wal, _) = open(Arc::clone(&files), manual());
    // The batch fails and never lands; the repair's empty batch lands but
    // its answer is lost.
    faulty.fail_nth(FaultOp::Finish, 1);
    faulty.lose_answer_nth(2);
    let err = write(&wal, &edit(1, 1, "lost")).unwrap_err();
    assert!(matches!(err, Error::WalFailed(_)), "{err}");
    eventually(|| wal.stats().repairs == 1);
    assert!(!wal.fence().is_tripped());
    write(&wal, &edit(1, 2, "after")).unwrap();
    crash(wal);

    let (_next, replayed) = open(files, manual());
    assert_eq!(replayed, vec![edit(1, 2, "after")]);
}

#[test]
fn a_newer_owners_fence_at_the_next_number_still_fences_the_writer() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let (stale, _) = open(Arc::clone(&files), manual());
    write(&stale, &edit(1, 1, "before")).unwrap();
    let (owner, replayed) = open(Arc::clone(&files), manual());
    assert_eq!(replayed, vec![edit(1, 1, "before")]);
    let err = write(&stale, &edit(1, 2, "stale")).unwrap_err();
    assert!(
        matches!(err, Error::Fenced { epoch, .. } if epoch == owner.log_id()),
        "{err}"
    );
}

#[test]
fn a_fence_tripped_by_a_store_stops_the_log_publishing_what_is_pending() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let (wal, _) = open(Arc::clone(&files), manual());
    let lsn = wal.append(&edit(1, 1, "pending")).unwrap();
    wal.fence()
        .trip(9, "manifest version 4 was committed at epoch 9");
    wal.publish_pending();
    let err = wal.sync(lsn, Durability::SyncWal).unwrap_err();
    assert!(matches!(err, Error::Fenced { epoch: 9, .. }), "{err}");
    assert!(wal.objects().is_empty());
    assert!(files
        .list(&log_dir(Path::new(ROOT), wal.log_id()))
        .unwrap()
        .iter()
        .all(|p| p.ends_with("00000000000000000000")));
}

fn valid_object() -> Vec<u8> {
    let mut body = Vec::new();
    for i in 1..=3 {
        format::encode_record(&edit(7, i, &format!("row{i}")), &mut body).unwrap();
    }
    encode_object(Kind::Records, 4, 3, &body)
}

proptest::proptest! {
    #[test]
    fn decoding_garbage_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
        let _ = decode_object(&Bytes::from(bytes));
    }

    #[test]
    fn any_flipped_bit_of_a_log_object_is_detected(bit in 0usize..(8 * 400)) {
        let mut bytes = valid_object();
        let bit = bit % (8 * bytes.len());
        bytes[bit / 8] ^= 1 << (bit % 8);
        proptest::prop_assert!(decode_object(&Bytes::from(bytes)).is_err());
    }

    #[test]
    fn a_truncated_log_object_is_refused(keep in 0usize..400) {
        let bytes = valid_object();
        let keep = keep % bytes.len();
        proptest::prop_assert!(decode_object(&Bytes::copy_from_slice(&bytes[..keep])).is_err());
    }
}

#[test]
fn a_valid_log_object_decodes_to_its_edits() {
    let decoded = decode_object(&Bytes::from(valid_object())).unwrap();
    assert_eq!(decoded.kind, Kind::Records);
    assert_eq!(decoded.epoch, 4);
    let expected: Vec<WalEdit> = (1..=3).map(|i| edit(7, i, &format!("row{i}"))).collect();
    assert_eq!(decoded.edits, expected);
}

#[test]
fn a_sync_wal_write_is_only_published_and_an_fsync_wal_write_syncs_every_object_before_it() {
    let mem = MemFileStore::new();
    let (wal, _) = open(Arc::new(mem.clone()), manual());
    write_as(&wal, &edit(1, 1, "a"), Durability::SyncWal).unwrap();
    write_as(&wal, &edit(1, 2, "b"), Durability::SyncWal).unwrap();
    assert_eq!(
        mem.unsynced_count(),
        2,
        "SYNC_WAL objects are visible, not synced"
    );
    assert_eq!(wal.stats().fsyncs, 0);
    write_as(&wal, &edit(1, 3, "c"), Durability::FsyncWal).unwrap();
    assert_eq!(
        mem.unsynced_count(),
        0,
        "the FSYNC_WAL write synced the earlier objects too"
    );
    assert_eq!(wal.stats().fsyncs, 1);
    // Already synced: nothing more to do.
    wal.sync(3, Durability::FsyncWal).unwrap();
    assert_eq!(wal.stats().fsyncs, 1);
}

#[test]
fn a_clean_close_syncs_the_objects_its_writers_did_not() {
    let mem = MemFileStore::new();
    let (wal, _) = open(Arc::new(mem.clone()), manual());
    write_as(&wal, &edit(1, 1, "a"), Durability::SyncWal).unwrap();
    wal.close().unwrap();
    assert_eq!(mem.lose_unsynced(), 0);
    let (_, replayed) = open(Arc::new(mem), manual());
    assert_eq!(replayed, vec![edit(1, 1, "a")]);
}

/// A machine crash keeps a prefix of each unsynced object (often none of
/// it). Replay ends before the first torn object, even where a later one
/// survived whole: those edits were never synced, and applying them
/// without the torn ones would apply edits out of their order.
#[test]
fn after_a_machine_crash_replay_keeps_the_synced_objects_and_ends_before_a_torn_one() {
    let mem = MemFileStore::new();
    let (wal, _) = open(Arc::new(mem.clone()), manual());
    write_as(&wal, &edit(1, 1, "a"), Durability::FsyncWal).unwrap();
    write_as(&wal, &edit(1, 2, "b"), Durability::SyncWal).unwrap();
    write_as(&wal, &edit(1, 3, "c"), Durability::SyncWal).unwrap();
    let objects = wal.objects();
    crash(wal);
    // Object 2 kept half of itself; object 3 survived whole.
    let torn = &objects[1].path;
    let bytes = mem.read_all(torn).unwrap();
    mem.set_contents(torn, bytes.slice(..bytes.len() - 10));
    let (_wal, replayed, report) = try_open(Arc::new(mem.clone()), manual()).unwrap();
    assert_eq!(replayed, vec![edit(1, 1, "a")]);
    let tail = report.torn_tail.expect("the torn object is reported");
    assert_eq!(&tail.path, torn);
    assert!(tail.reason.contains("header says"), "{}", tail.reason);
    assert!(tail.dropped_bytes > 0, "object 3 is counted as dropped");
}

#[test]
fn an_object_a_crash_left_empty_or_zeroed_is_torn_but_a_whole_one_with_a_bad_checksum_is_corrupt() {
    for damage in ["empty", "zeros", "flipped"] {
        let mem = MemFileStore::new();
        let (wal, _) = open(Arc::new(mem.clone()), manual());
        write_as(&wal, &edit(1, 1, "a"), Durability::SyncWal).unwrap();
        let path = wal.objects()[0].path.clone();
        crash(wal);
        let whole = mem.read_all(&path).unwrap();
        let damaged = match damage {
            "empty" => Bytes::new(),
            "zeros" => Bytes::from(vec![0u8; whole.len()]),
            _ => {
                let mut flipped = whole.to_vec();
                let last = flipped.len() - 1;
                flipped[last] ^= 0x40;
                Bytes::from(flipped)
            }
        };
        mem.set_contents(&path, damaged);
        match (damage, try_open(Arc::new(mem.clone()), manual())) {
            (
                "flipped",
                Err(Error::Corruption {
                    path: p, message, ..
                }),
            ) => {
                assert_eq!(p, path);
                assert!(message.contains("body checksum"), "{message}");
            }
            ("flipped", Ok(_)) => panic!("a flipped bit must not be taken for a torn object"),
            (_, Ok((_, _, report))) => {
                assert!(report.torn_tail.is_some(), "{damage}: reported as torn")
            }
            (_, Err(e)) => panic!("{damage}: a torn object must not stop recovery: {e}"),
        }
    }
}

/// Records which thread published each log object.
#[derive(Debug, Default)]
struct PublisherThreads {
    files: MemFileStore,
    names: parking_lot::Mutex<Vec<String>>,
}

impl FileStore for PublisherThreads {
    fn create(&self, path: &Path) -> basalt_types::Result<Box<dyn crate::fs::FileWriter>> {
        self.files.create(path)
    }
    fn publish_visible(&self, path: &Path, bytes: &[u8]) -> basalt_types::Result<()> {
        let name = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_string();
        self.names.lock().push(name);
        self.files.publish_visible(path, bytes)
    }
    fn read_range(&self, path: &Path, offset: u64, len: usize) -> basalt_types::Result<Bytes> {
        self.files.read_range(path, offset, len)
    }
    fn size(&self, path: &Path) -> basalt_types::Result<u64> {
        self.files.size(path)
    }
    fn exists(&self, path: &Path) -> basalt_types::Result<bool> {
        self.files.exists(path)
    }
    fn list(&self, dir: &Path) -> basalt_types::Result<Vec<PathBuf>> {
        self.files.list(dir)
    }
    fn delete(&self, path: &Path) -> basalt_types::Result<()> {
        self.files.delete(path)
    }
    fn list_dirs(&self, dir: &Path) -> basalt_types::Result<Vec<PathBuf>> {
        self.files.list_dirs(dir)
    }
    fn list_prefix(&self, dir: &Path) -> basalt_types::Result<Vec<PathBuf>> {
        self.files.list_prefix(dir)
    }
    fn delete_prefix(&self, dir: &Path) -> basalt_types::Result<()> {
        self.files.delete_prefix(dir)
    }
}

/// Without a window a waiting writer publishes its own batch: handing it
/// to the committer thread and back cost two context switches a batch.
#[test]
fn without_a_window_a_waiting_writer_publishes_its_batch_itself() {
    let files = Arc::new(PublisherThreads::default());
    let (wal, _) = open(
        Arc::clone(&files) as Arc<dyn FileStore>,
        ObjectWalOptions::default(),
    );
    let writer = std::thread::Builder::new()
        .name("a-writer".into())
        .spawn({
            let wal = Arc::clone(&wal);
            move || {
                for i in 1..=3u64 {
                    let lsn = wal.append(&edit(1, i, "r")).unwrap();
                    wal.sync(lsn, Durability::SyncWal).unwrap();
                }
            }
        })
        .unwrap();
    writer.join().unwrap();
    assert_eq!(*files.names.lock(), vec!["a-writer"; 3]);
    assert_eq!(wal.objects().len(), 3);
}

/// Nobody waits for an `ASYNC_WAL` edit, so the committer publishes it.
#[test]
fn without_a_window_an_async_edit_is_published_by_the_committer() {
    let files = Arc::new(PublisherThreads::default());
    let (wal, _) = open(
        Arc::clone(&files) as Arc<dyn FileStore>,
        ObjectWalOptions::default(),
    );
    let lsn = wal.append(&edit(1, 1, "r")).unwrap();
    wal.sync(lsn, Durability::AsyncWal).unwrap();
    eventually(|| wal.published_lsn() >= lsn);
    assert_eq!(*files.names.lock(), vec!["basalt-wal-commit"]);
}

/// Fencing invariant W1 with objects in flight, under load: writers keep
/// writing through a log whose publications land out of order (each takes
/// its own time) and one of which fails, until a newer owner opens the
/// data mid-stream. Every write the stale log acknowledged, before or
/// after the newer owner's fences, is in what the newer owner replayed.
#[test]
fn every_write_acknowledged_with_objects_in_flight_is_replayed_by_the_owner_that_fences_the_log() {
    for seed in 0..4u64 {
        let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
        let faulty = FaultyFileStore::new(Arc::clone(&files));
        faulty.set_finish_latency(Duration::from_micros(200));
        faulty.set_finish_jitter(Duration::from_millis(3));
        let options = ObjectWalOptions {
            objects_in_flight: 8,
            repair_interval: Duration::from_millis(1),
            ..ObjectWalOptions::default()
        };
        let (stale, _) = open(Arc::new(faulty.clone()), options);
        // One publication times out (its outcome unknown) early on.
        faulty.fail_nth(FaultOp::Finish, 10 + seed * 7);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let acknowledged_so_far = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let writers: Vec<_> = (0..8u64)
            .map(|writer| {
                let (wal, stop) = (Arc::clone(&stale), Arc::clone(&stop));
                let acknowledged_so_far = Arc::clone(&acknowledged_so_far);
                std::thread::spawn(move || {
                    let mut acknowledged = Vec::new();
                    let mut n = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        n += 1;
                        let e = edit(writer, n, &format!("w{writer}-{n}"));
                        let written = wal
                            .append(&e)
                            .and_then(|lsn| wal.sync(lsn, Durability::SyncWal));
                        match written {
                            Ok(()) => {
                                acknowledged.push(e);
                                acknowledged_so_far
                                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Err(Error::Fenced { .. }) => break,
                            // Failed, or refused while the log repairs.
                            Err(_) => std::thread::sleep(Duration::from_micros(100)),
                        }
                    }
                    acknowledged
                })
            })
            .collect();
        // Mid-stream: past the injected failure and its repair, and at a
        // moment that differs between seeds.
        eventually(|| {
            acknowledged_so_far.load(std::sync::atomic::Ordering::Relaxed) >= 40 + seed * 10
        });
        std::thread::sleep(Duration::from_millis(seed * 3));
        let (_newer, replayed) = open(Arc::clone(&files), manual());
        std::thread::sleep(Duration::from_millis(10));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let acknowledged: Vec<WalEdit> = writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        assert!(
            stale.fence().is_tripped(),
            "seed {seed}: the stale log is fenced"
        );
        assert!(!acknowledged.is_empty(), "seed {seed}: nothing was written");
        let replayed_rows: std::collections::HashSet<&Bytes> =
            replayed.iter().map(|e| &e.cells[0].row).collect();
        assert_eq!(
            replayed_rows.len(),
            replayed.len(),
            "seed {seed}: an edit replayed twice"
        );
        for e in &acknowledged {
            assert!(
                replayed.contains(e),
                "seed {seed}: acknowledged {:?} was not replayed",
                e.cells[0].row
            );
        }
        // Each writer's edits replay in the order it wrote them.
        for writer in 0..8u64 {
            let sequences: Vec<u64> = replayed
                .iter()
                .filter(|e| e.region_id == writer)
                .map(|e| e.sequence_id)
                .collect();
            assert!(
                sequences.windows(2).all(|w| w[0] < w[1]),
                "seed {seed}: {sequences:?}"
            );
        }
        crash(stale);
    }
}

/// Fencing invariant W2 with objects in flight: the fencer fences as many
/// numbers after the newest as the writer's claim says it keeps in flight,
/// so a slow publication beyond the newest collides instead of landing
/// after the fence, and a later read-only replay finds the log ended.
#[test]
fn nothing_a_fenced_writer_had_in_flight_lands_after_the_fence_that_ends_its_log() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let faulty = FaultyFileStore::new(Arc::clone(&files));
    let (stale, _) = open(Arc::new(faulty.clone()), in_flight());
    let epoch = stale.log_id();
    let path = |sequence| object_path(Path::new(ROOT), epoch, sequence);
    write(&stale, &edit(1, 1, "acknowledged")).unwrap();
    // Objects 2, 4 and 5 are slow; 3 lands at once.
    for slow in [2, 4, 5] {
        faulty.hold_finishes_of(&path(slow));
    }
    let mut writers = vec![spawn_write(&stale, edit(1, 2, "slow"))];
    eventually(|| faulty.held_finishes() == 1);
    writers.push(spawn_write(&stale, edit(1, 3, "landed")));
    eventually(|| files.exists(&path(3)).unwrap());
    writers.push(spawn_write(&stale, edit(1, 4, "slow too")));
    eventually(|| faulty.held_finishes() == 2);
    writers.push(spawn_write(&stale, edit(1, 5, "beyond the newest")));
    eventually(|| faulty.held_finishes() == 3);
    // The newer owner lists 0, 1 and 3: it fences 2 (missing) and 4 to 7
    // (after the newest, as many as the claim's four in flight).
    fence_log(files.as_ref(), Path::new(ROOT), epoch, epoch + 1).unwrap();
    for fenced in [2, 4, 5, 6, 7] {
        let found = read_object(files.as_ref(), &path(fenced)).unwrap().unwrap();
        assert_eq!(found.kind, Kind::Fence, "number {fenced}");
    }
    for slow in [2, 4, 5] {
        faulty.release_finishes_of(&path(slow));
    }
    for writer in writers {
        assert!(
            writer.join().unwrap().is_err(),
            "nothing after 1 is acknowledged"
        );
    }
    assert!(stale.fence().is_tripped());
    crash(stale);
    // Ended: a read-only replay (the cluster's, after `fence_log`) reads
    // the acknowledged edit and the unacknowledged one that landed.
    let mut replayed = Vec::new();
    replay_log(files.as_ref(), Path::new(ROOT), epoch, |e| {
        replayed.push(e);
        Ok(())
    })
    .unwrap();
    assert_eq!(
        replayed,
        vec![edit(1, 1, "acknowledged"), edit(1, 3, "landed")]
    );
}

#[test]
fn a_claim_says_how_many_objects_its_writer_keeps_in_flight_or_is_refused() {
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let claim = ObjectWal::claim_with(Arc::clone(&files), Path::new(ROOT), 4).unwrap();
    let epoch = claim.fence().epoch();
    let read = read_object(files.as_ref(), &object_path(Path::new(ROOT), epoch, 0))
        .unwrap()
        .unwrap();
    assert_eq!((read.kind, read.claimed_in_flight), (Kind::Claim, 4));
    // One in flight keeps the claim's bytes as they always were: empty.
    let plain = ObjectWal::claim(Arc::clone(&files), Path::new(ROOT)).unwrap();
    let bytes = files
        .read_all(&object_path(Path::new(ROOT), plain.fence().epoch(), 0))
        .unwrap();
    assert_eq!(bytes.len(), HEADER_LEN);
    let claim_of = |in_flight: u64| {
        let mut body = Vec::new();
        coding::put_u64_le(&mut body, in_flight);
        decode_object(&Bytes::from(encode_object(Kind::Claim, 1, 0, &body)))
    };
    assert_eq!(claim_of(16).unwrap().claimed_in_flight, 16);
    for bad in [0, 17, u64::MAX] {
        let err = claim_of(bad).unwrap_err();
        assert!(err.contains("objects in flight"), "{err}");
    }
    let err =
        decode_object(&Bytes::from(encode_object(Kind::Claim, 1, 0, &[1, 2, 3]))).unwrap_err();
    assert!(err.contains("claim object of 3 body bytes"), "{err}");
}
