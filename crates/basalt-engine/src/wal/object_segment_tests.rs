//! The log on a store that appends (a shared directory): batches go to
//! segments, a fence is followed by its seal (invariant W5).

use super::*;

fn appending() -> (MemFileStore, Arc<dyn FileStore>) {
    let mem = MemFileStore::appending();
    let files: Arc<dyn FileStore> = Arc::new(mem.clone());
    (mem, files)
}

/// The objects of log `log_id`, each with its kind as it decodes.
fn kinds(files: &dyn FileStore, log_id: u64) -> Vec<Kind> {
    files
        .list(&log_dir(Path::new(ROOT), log_id))
        .unwrap()
        .iter()
        .map(|p| read_object(files, p).unwrap().unwrap().kind)
        .collect()
}

fn replayed(files: &dyn FileStore, log_id: u64) -> (Vec<WalEdit>, ReplayReport) {
    let mut edits = Vec::new();
    let report = replay_log(files, Path::new(ROOT), log_id, |e| {
        edits.push(e);
        Ok(())
    })
    .unwrap();
    (edits, report)
}

#[test]
fn on_a_store_that_appends_every_batch_goes_to_one_segment_and_replays_in_order() {
    let (_mem, files) = appending();
    let (wal, _) = open(Arc::clone(&files), manual());
    let written: Vec<WalEdit> = (1..=5).map(|i| edit(i % 2, i, "r")).collect();
    for e in &written {
        write(&wal, e).unwrap();
    }
    let log = wal.log_id();
    // The claim and one segment holding five batches.
    assert_eq!(kinds(files.as_ref(), log), vec![Kind::Claim, Kind::Records]);
    assert_eq!(wal.stats().writes, 5);
    let objects = wal.objects();
    assert_eq!(objects.len(), 1);
    assert_eq!(objects[0].records, 5);
    assert_eq!(
        objects[0].max_sequence_ids,
        BTreeMap::from([(0, 4), (1, 5)])
    );
    crash(wal);

    // The next owner fences and seals the log, then replays all of it.
    let (next, replayed, report) = try_open(Arc::clone(&files), manual()).unwrap();
    assert_eq!(replayed, written);
    assert!(report.torn_tail.is_none());
    assert_eq!(
        kinds(files.as_ref(), log),
        vec![Kind::Claim, Kind::Records, Kind::Fence, Kind::Seal]
    );
    write(&next, &edit(1, 6, "s")).unwrap();
}

#[test]
fn a_fenced_writer_learns_it_from_the_number_after_its_segment_and_its_late_batch_is_never_replayed(
) {
    let (_mem, files) = appending();
    let root = Path::new(ROOT);
    let claim = ObjectWal::claim(Arc::clone(&files), root).unwrap();
    let stale = ObjectWal::open_own(claim, manual()).unwrap();
    write(&stale, &edit(1, 1, "a")).unwrap();
    let log = stale.log_id();

    fence_log(files.as_ref(), root, log, 40).unwrap();
    // Fencing twice adds nothing.
    fence_log(files.as_ref(), root, log, 41).unwrap();
    assert_eq!(
        kinds(files.as_ref(), log),
        vec![Kind::Claim, Kind::Records, Kind::Fence, Kind::Seal]
    );

    // The stale writer's next batch lands in its segment, past the seal,
    // and its check finds the fence: refused, and the process is fenced.
    let err = write(&stale, &edit(1, 2, "b")).unwrap_err();
    assert!(matches!(err, Error::Fenced { epoch: 40, .. }), "{err}");
    assert!(stale.fence().is_tripped());
    let segment = object_path(root, log, 1);
    let seal = read_object(files.as_ref(), &object_path(root, log, 3))
        .unwrap()
        .unwrap();
    let (sealed, sealed_len) = seal.seals.unwrap();
    assert_eq!(sealed, 1);
    assert!(
        files.size(&segment).unwrap() > sealed_len,
        "the late batch is in the file"
    );

    // Every replay, however late, stops at the seal.
    for _ in 0..2 {
        let (edits, report) = replayed(files.as_ref(), log);
        assert_eq!(edits, vec![edit(1, 1, "a")]);
        assert!(report.torn_tail.is_none());
    }
    // Appends are refused from then on.
    assert!(matches!(
        stale.append(&edit(1, 3, "c")),
        Err(Error::Fenced { .. })
    ));
}

#[test]
fn a_fencer_stopped_between_its_fence_and_its_seal_is_finished_by_the_next_one() {
    let (_mem, files) = appending();
    let root = Path::new(ROOT);
    let claim = ObjectWal::claim(Arc::clone(&files), root).unwrap();
    let dead = ObjectWal::open_own(claim, manual()).unwrap();
    write(&dead, &edit(1, 1, "a")).unwrap();
    let log = dead.log_id();
    crash(dead);
    // A fence without its seal, as a fencer that stopped right after it
    // leaves the log.
    files
        .publish(
            &object_path(root, log, 2),
            &encode_object(Kind::Fence, 40, 0, &[]),
        )
        .unwrap();
    // Replay reads the segment whole then (no seal to stop at).
    assert_eq!(replayed(files.as_ref(), log).0, vec![edit(1, 1, "a")]);
    fence_log(files.as_ref(), root, log, 41).unwrap();
    assert_eq!(
        kinds(files.as_ref(), log),
        vec![Kind::Claim, Kind::Records, Kind::Fence, Kind::Seal]
    );
    assert_eq!(replayed(files.as_ref(), log).0, vec![edit(1, 1, "a")]);
}

#[test]
fn a_failed_append_is_cut_out_of_the_segment_and_the_log_takes_writes_again() {
    let mem = MemFileStore::appending();
    let faulty = FaultyFileStore::new(Arc::new(mem.clone()));
    faulty.set_partial_writes(true);
    let files: Arc<dyn FileStore> = Arc::new(faulty.clone());
    let (wal, _) = open(Arc::clone(&files), manual());
    write(&wal, &edit(1, 1, "a")).unwrap();
    faulty.fail_nth(FaultOp::Append, 1);
    let err = write(&wal, &edit(1, 2, "b")).unwrap_err();
    assert!(matches!(err, Error::WalFailed(_)), "{err}");
    // Half of the batch landed; the repair cuts it out before the next.
    eventually(|| write(&wal, &edit(1, 3, "c")).is_ok());
    assert_eq!(wal.stats().failures, 1);
    let log = wal.log_id();
    crash(wal);

    let (_next, replayed, report) = try_open(Arc::new(mem.clone()), manual()).unwrap();
    assert_eq!(replayed, vec![edit(1, 1, "a"), edit(1, 3, "c")]);
    assert!(report.torn_tail.is_none(), "{:?}", report.torn_tail);
    assert_eq!(kinds(&mem, log)[1], Kind::Records);
}

#[test]
fn segments_start_anew_at_their_size_and_retire_whole_once_every_region_flushed() {
    let (_mem, files) = appending();
    let options = ObjectWalOptions {
        // Every batch fills its segment.
        segment_max_bytes: 1,
        ..manual()
    };
    let (wal, _) = open(Arc::clone(&files), options);
    for i in 1..=3 {
        write(&wal, &edit(1, i, "r")).unwrap();
    }
    let log = wal.log_id();
    assert_eq!(
        kinds(files.as_ref(), log).len(),
        4,
        "the claim and three segments"
    );

    // All flushed: retirement starts a new, empty segment, so every one
    // holding batches goes; the new one stays (W1).
    assert_eq!(wal.retire_flushed(&|_| Some(10)).unwrap(), 3);
    assert_eq!(kinds(files.as_ref(), log), vec![Kind::Claim, Kind::Records]);
    // The empty segment takes the next batch; not flushed, it stays.
    write(&wal, &edit(1, 11, "r")).unwrap();
    assert_eq!(wal.retire_flushed(&|_| Some(10)).unwrap(), 0);
    assert_eq!(kinds(files.as_ref(), log), vec![Kind::Claim, Kind::Records]);
    let log_before = log;
    crash(wal);
    let (_next, replayed, _) = try_open(Arc::clone(&files), manual()).unwrap();
    assert_eq!(replayed, vec![edit(1, 11, "r")]);
    assert_eq!(kinds(files.as_ref(), log_before)[0], Kind::Claim);
}

#[test]
fn after_a_machine_crash_replay_keeps_a_segments_synced_batches_and_ends_at_its_torn_tail() {
    let (mem, files) = appending();
    let (wal, _) = open(Arc::clone(&files), manual());
    write_as(&wal, &edit(1, 1, "a"), Durability::FsyncWal).unwrap();
    write_as(&wal, &edit(1, 2, "b"), Durability::SyncWal).unwrap();
    write_as(&wal, &edit(1, 3, "c"), Durability::SyncWal).unwrap();
    let segment = wal.objects()[0].path.clone();
    crash(wal);
    // The crash lost what was not synced.
    assert_eq!(mem.unsynced_count(), 1);
    let whole = mem.read_all(&segment).unwrap();
    assert_eq!(mem.lose_unsynced(), 1);
    let synced = mem.read_all(&segment).unwrap();
    assert!(synced.len() < whole.len());
    // And part of the next batch's bytes made it to the disk.
    let torn_len = synced.len() + 30;
    mem.set_contents(&segment, whole.slice(..torn_len));

    let (_next, replayed, report) = try_open(Arc::clone(&files), manual()).unwrap();
    assert_eq!(replayed, vec![edit(1, 1, "a")]);
    let tail = report.torn_tail.expect("the partial batch is reported");
    assert_eq!(tail.path, segment);
    assert_eq!(tail.offset, synced.len() as u64);
}

#[test]
fn a_segment_frame_that_fails_its_checksum_is_corruption_not_a_torn_tail() {
    let (mem, files) = appending();
    let (wal, _) = open(Arc::clone(&files), manual());
    write(&wal, &edit(1, 1, "a")).unwrap();
    write(&wal, &edit(1, 2, "b")).unwrap();
    let segment = wal.objects()[0].path.clone();
    crash(wal);
    let mut bytes = mem.read_all(&segment).unwrap().to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    mem.set_contents(&segment, Bytes::from(bytes));
    let err = try_open(files, manual()).map(|_| ()).unwrap_err();
    assert!(
        matches!(&err, Error::Corruption { path, message, .. }
            if path == &segment && message.contains("checksum")),
        "{err}"
    );
}

#[test]
fn deleting_a_sealed_log_keeps_its_fence_so_a_paused_writer_is_still_fenced() {
    let (_mem, files) = appending();
    let root = Path::new(ROOT);
    let claim = ObjectWal::claim(Arc::clone(&files), root).unwrap();
    let paused = ObjectWal::open_own(claim, manual()).unwrap();
    write(&paused, &edit(1, 1, "a")).unwrap();
    let log = paused.log_id();
    fence_log(files.as_ref(), root, log, 50).unwrap();
    delete_log(files.as_ref(), root, log).unwrap();
    assert_eq!(kinds(files.as_ref(), log), vec![Kind::Fence, Kind::Seal]);
    assert!(list_logs(files.as_ref(), root).unwrap().is_empty());
    // Its segment is gone, but the writer still appends to its open file
    // and then finds the fence (invariant W1).
    let err = write(&paused, &edit(1, 2, "b")).unwrap_err();
    assert!(matches!(err, Error::Fenced { epoch: 50, .. }), "{err}");
}

#[test]
fn a_cleanly_closed_segment_log_replays_whole_with_no_fence() {
    let (_mem, files) = appending();
    let (wal, _) = open(Arc::clone(&files), manual());
    write(&wal, &edit(1, 1, "a")).unwrap();
    write_as(&wal, &edit(1, 2, "b"), Durability::AsyncWal).unwrap();
    let log = wal.log_id();
    wal.close().unwrap();
    assert_eq!(
        kinds(files.as_ref(), log),
        vec![Kind::Claim, Kind::Records, Kind::Closed]
    );
    let (_next, replayed, _) = try_open(Arc::clone(&files), manual()).unwrap();
    assert_eq!(replayed, vec![edit(1, 1, "a"), edit(1, 2, "b")]);
    assert_eq!(
        kinds(files.as_ref(), log),
        vec![Kind::Claim, Kind::Records, Kind::Closed],
        "a closed log is not fenced"
    );
}

#[test]
fn cutting_a_segment_at_its_seal_keeps_the_whole_batches_below_it() {
    let frame = |n: u64| {
        encode_object(Kind::Records, 3, 1, &{
            let mut body = Vec::new();
            format::encode_record(&edit(1, n, "r"), &mut body).unwrap();
            body
        })
    };
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    for n in 1..=3 {
        bytes.extend_from_slice(&frame(n));
        ends.push(bytes.len() as u64);
    }
    let bytes = Bytes::from(bytes);
    let decoded = |len: u64| {
        let mut d = decode_object(&bytes).unwrap();
        d.cut_at(len);
        (d.edits.len(), d.torn.map(|(at, _)| at))
    };
    assert_eq!(decoded(ends[2]), (3, None));
    assert_eq!(decoded(ends[1]), (2, None));
    assert_eq!(
        decoded(ends[1] + 5),
        (2, Some(ends[1])),
        "a batch cut by the seal is torn"
    );
    assert_eq!(decoded(0), (0, None));
    // A prefix of a segment: the partial frame at its end is torn.
    let prefix = bytes.slice(..ends[1] as usize + 20);
    let d = decode_object(&prefix).unwrap();
    assert_eq!(
        (d.edits.len(), d.torn.map(|(at, _)| at)),
        (2, Some(ends[1]))
    );
}
