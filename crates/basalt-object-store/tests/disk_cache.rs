//! The disk cache in front of object storage: a warm working set is read
//! without requests, the cache stays within its budget, damaged part files
//! are never served, cached ranges stay readable while the store is down,
//! and an uncached read then fails with a clear error instead of hanging.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use bytes::Bytes;

use basalt_engine::fs::{FaultOp, FaultyFileStore, FileStore, MemFileStore};
use basalt_object_store::{open_storage, CachedFileStore, DiskCacheConfig};

mod common;
use common::{moto, moto_config};

/// Hang guard for calls that must fail by themselves (the storage timeout
/// in these tests is 3 s).
const LIVENESS: Duration = Duration::from_secs(120);

const PART: u64 = 1000;

fn data(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| ((i * 31 + seed) % 253) as u8)
        .collect()
}

fn write(store: &dyn FileStore, path: &Path, bytes: &[u8]) {
    let mut w = store.create(path).unwrap();
    w.write_all(bytes).unwrap();
    w.finish().unwrap();
}

/// A cache over a memory store whose reads are counted.
fn cached_mem(cache_dir: &Path, capacity: u64) -> (CachedFileStore, FaultyFileStore) {
    let remote = FaultyFileStore::new(Arc::new(MemFileStore::new()));
    let cache = CachedFileStore::open(
        Arc::new(remote.clone()),
        "/db",
        DiskCacheConfig {
            dir: cache_dir.to_path_buf(),
            capacity_bytes: capacity,
            part_bytes: PART,
            identity: "mem://test".into(),
        },
    )
    .unwrap();
    (cache, remote)
}

fn part_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.join("parts")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn a_warm_working_set_is_read_without_remote_requests() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, remote) = cached_mem(dir.path(), 1 << 20);
    let f = Path::new("/db/data/t/f.sst");
    let bytes = data(10_500, 1);
    write(&cache, f, &bytes);
    let ranges = [(0u64, 100usize), (950, 100), (3_000, 2_500), (10_400, 100)];
    for (offset, len) in ranges {
        let got = cache.read_range(f, offset, len).unwrap();
        assert_eq!(&got[..], &bytes[offset as usize..offset as usize + len]);
    }
    let cold = cache.stats();
    let reads = remote.calls(FaultOp::Read);
    assert!(cold.misses > 0 && cold.fetched_bytes > 0);
    for _ in 0..3 {
        for (offset, len) in ranges {
            let got = cache.read_range(f, offset, len).unwrap();
            assert_eq!(&got[..], &bytes[offset as usize..offset as usize + len]);
        }
    }
    let warm = cache.stats();
    assert_eq!(
        remote.calls(FaultOp::Read),
        reads,
        "no remote read once warm"
    );
    assert_eq!(warm.misses, cold.misses);
    assert_eq!(warm.fetched_bytes, cold.fetched_bytes);
    assert!(warm.hits > cold.hits);
    assert!(warm.hit_ratio() > cold.hit_ratio());
    // Consecutive missing parts were fetched in one remote read: the
    // 3 000..5 500 range spans parts 3, 4 and 5.
    assert_eq!(reads, 4, "one remote read per run of missing parts");
}

#[test]
fn the_file_store_trait_reports_the_caches_counters_and_only_a_cache_has_them() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, remote) = cached_mem(dir.path(), 2 * PART);
    let f = Path::new("/db/data/t/c.sst");
    let bytes = data(4 * PART as usize, 3);
    write(&cache, f, &bytes);
    for part in 0..4u64 {
        cache.read_range(f, part * PART, 10).unwrap();
    }
    cache.read_range(f, 3 * PART, 10).unwrap();
    // What the database sees, through the trait object.
    let as_store: Arc<dyn FileStore> = Arc::new(cache);
    let stats = as_store
        .cache_stats()
        .expect("a cache reports its counters");
    assert_eq!((stats.hits, stats.misses), (1, 4));
    assert_eq!(stats.evictions, 2, "a budget of two parts");
    assert_eq!((stats.parts, stats.bytes), (2, 2 * PART));
    assert_eq!(stats.capacity_bytes, 2 * PART);
    assert_eq!(stats.hit_bytes, 10);
    assert_eq!(stats.fetched_bytes, 4 * PART);
    // A fault-injecting wrapper reports the cache it wraps.
    let wrapped = FaultyFileStore::new(Arc::clone(&as_store));
    assert_eq!(wrapped.cache_stats(), Some(stats));
    // The stores behind a cache have none.
    assert_eq!(remote.cache_stats(), None);
    assert_eq!(MemFileStore::new().cache_stats(), None);
}

#[test]
fn the_cache_stays_within_its_budget_evicting_the_least_recently_used() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, remote) = cached_mem(dir.path(), 5 * PART);
    let f = Path::new("/db/data/t/big.sst");
    let bytes = data(20 * PART as usize, 2);
    write(&cache, f, &bytes);
    // Part 0 is used again and again; the others once each.
    for part in 1..20u64 {
        cache.read_range(f, 0, 10).unwrap();
        cache.read_range(f, part * PART, 10).unwrap();
        let stats = cache.stats();
        assert!(stats.bytes <= 5 * PART, "{stats:?}");
        let on_disk: u64 = part_files(dir.path())
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum();
        assert!(on_disk <= 5 * PART, "{on_disk} bytes of part files");
    }
    let stats = cache.stats();
    assert_eq!(stats.parts, 5);
    assert_eq!(stats.evictions, 15);
    // The hot part survived; an early cold one did not.
    let reads = remote.calls(FaultOp::Read);
    cache.read_range(f, 0, 10).unwrap();
    assert_eq!(remote.calls(FaultOp::Read), reads, "part 0 is still cached");
    cache.read_range(f, PART, 10).unwrap();
    assert_eq!(remote.calls(FaultOp::Read), reads + 1, "part 1 was evicted");
}

#[test]
fn a_zero_budget_caches_nothing_and_reads_only_the_range_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, remote) = cached_mem(dir.path(), 0);
    let f = Path::new("/db/f");
    let bytes = data(3_000, 10);
    write(&cache, f, &bytes);
    for _ in 0..3 {
        assert_eq!(
            &cache.read_range(f, 1_500, 20).unwrap()[..],
            &bytes[1_500..1_520]
        );
    }
    assert_eq!(remote.calls(FaultOp::Read), 3);
    assert_eq!(cache.stats(), Default::default());
    assert!(part_files(dir.path()).is_empty());
}

#[test]
fn a_torn_part_file_is_never_served() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, remote) = cached_mem(dir.path(), 1 << 20);
    let f = Path::new("/db/f");
    let bytes = data(2_500, 3);
    write(&cache, f, &bytes);
    cache.read_range(f, 0, 2_500).unwrap();
    for part in part_files(dir.path()) {
        let len = std::fs::metadata(&part).unwrap().len();
        let torn = std::fs::read(&part).unwrap();
        std::fs::write(&part, &torn[..len as usize / 2]).unwrap();
    }
    let reads = remote.calls(FaultOp::Read);
    assert_eq!(&cache.read_range(f, 0, 2_500).unwrap()[..], &bytes[..]);
    assert!(remote.calls(FaultOp::Read) > reads, "fetched again");
    assert_eq!(cache.stats().discarded, 3);
    // Torn files found at open are dropped too.
    let victim = part_files(dir.path()).pop().unwrap();
    std::fs::write(&victim, b"x").unwrap();
    drop(cache);
    let (cache, _) = cached_mem(dir.path(), 1 << 20);
    assert_eq!(cache.stats().discarded, 1);
    assert_eq!(cache.stats().parts, 2);
}

#[test]
fn the_cache_outlives_a_restart_a_smaller_budget_trims_it_and_a_new_part_size_empties_it() {
    let dir = tempfile::tempdir().unwrap();
    let remote = Arc::new(MemFileStore::new());
    let config = |capacity| DiskCacheConfig {
        dir: dir.path().to_path_buf(),
        capacity_bytes: capacity,
        part_bytes: PART,
        identity: "mem://one".into(),
    };
    let f = Path::new("/db/f");
    let bytes = data(8 * PART as usize, 4);
    {
        let cache = CachedFileStore::open(remote.clone(), "/db", config(1 << 20)).unwrap();
        write(&cache, f, &bytes);
        cache.read_range(f, 0, bytes.len()).unwrap();
        assert_eq!(cache.stats().parts, 8);
    }
    // The remote store fails every read now: the cache alone answers.
    let failing = FaultyFileStore::new(remote.clone());
    failing.fail_from(FaultOp::Read, 1);
    let cache = CachedFileStore::open(Arc::new(failing.clone()), "/db", config(1 << 20)).unwrap();
    assert_eq!(cache.stats().parts, 8);
    assert_eq!(
        &cache.read_range(f, 10, 7_000).unwrap()[..],
        &bytes[10..7_010]
    );
    drop(cache);
    let cache = CachedFileStore::open(Arc::new(failing), "/db", config(3 * PART)).unwrap();
    assert_eq!(cache.stats().parts, 3);
    assert!(cache.stats().bytes <= 3 * PART);
    // With another part size, a part index means another range: the
    // cache starts empty, and reads are right.
    drop(cache);
    let mut resized = config(1 << 20);
    resized.part_bytes = PART / 4;
    let cache = CachedFileStore::open(remote.clone(), "/db", resized).unwrap();
    assert_eq!(cache.stats().parts, 0);
    assert_eq!(
        &cache.read_range(f, 3_000, 10).unwrap()[..],
        &bytes[3_000..3_010]
    );
    // A cache directory of another store starts empty.
    drop(cache);
    let mut other = config(1 << 20);
    other.identity = "mem://two".into();
    let cache = CachedFileStore::open(remote, "/db", other).unwrap();
    assert_eq!(cache.stats().parts, 0);
    assert!(part_files(dir.path()).is_empty());
}

#[test]
fn deleting_files_drops_their_cached_parts() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, _) = cached_mem(dir.path(), 1 << 20);
    let a = Path::new("/db/data/t/1/cf/a");
    let b = Path::new("/db/data/t/2/cf/b");
    for (path, seed) in [(a, 5), (b, 6)] {
        write(&cache, path, &data(1_500, seed));
        cache.read_range(path, 0, 1_500).unwrap();
    }
    assert_eq!(cache.stats().parts, 4);
    cache.delete(a).unwrap();
    assert_eq!(cache.stats().parts, 2);
    assert!(cache.read_range(a, 0, 1).is_err(), "no stale part served");
    cache.delete_prefix(Path::new("/db/data/t/2")).unwrap();
    assert_eq!(cache.stats().parts, 0);
    assert!(part_files(dir.path()).is_empty());
}

#[test]
fn reads_past_the_end_fail_from_the_cache_as_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, _) = cached_mem(dir.path(), 1 << 20);
    let f = Path::new("/db/f");
    write(&cache, f, &data(1_500, 7));
    cache.read_range(f, 0, 1_500).unwrap();
    for (offset, len) in [(1_400, 200), (1_500, 1), (2_000, 10), (900, 700)] {
        let err = cache.read_range(f, offset, len).unwrap_err().to_string();
        assert!(err.contains("past the end of a 1500-byte file"), "{err}");
    }
}

/// Runs `f` on a thread and waits at most [`LIVENESS`] for it.
fn within_liveness<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(LIVENESS)
        .expect("the call hung instead of failing within its timeout")
}

#[test]
fn cached_ranges_stay_readable_while_s3_is_down_and_uncached_reads_fail_clearly() {
    let Some(mut moto) = moto::start_or_skip(
        "cached_ranges_stay_readable_while_s3_is_down_and_uncached_reads_fail_clearly",
    ) else {
        return;
    };
    let data_dir = tempfile::tempdir().unwrap();
    let mut config = moto_config(&moto, "down", "db");
    config.part_bytes = PART;
    let storage = open_storage(&config, data_dir.path()).unwrap().unwrap();
    let files = storage.file_store();
    let warm = data_dir.path().join("data/t/warm.sst");
    let cold = data_dir.path().join("data/t/cold.sst");
    let warm_bytes = data(5 * PART as usize, 8);
    write(files.as_ref(), &warm, &warm_bytes);
    write(files.as_ref(), &cold, &data(100, 9));
    assert_eq!(
        &files.read_range(&warm, 0, warm_bytes.len()).unwrap()[..],
        &warm_bytes[..]
    );
    let before = storage.cache_stats();
    assert_eq!(before.misses, 5);

    moto.stop();
    let got = within_liveness({
        let files = Arc::clone(&files);
        let warm = warm.clone();
        move || files.read_range(&warm, 1_234, 2_000)
    })
    .unwrap();
    assert_eq!(got, Bytes::copy_from_slice(&warm_bytes[1_234..3_234]));
    assert_eq!(storage.cache_stats().misses, before.misses);

    let err = within_liveness({
        let files = Arc::clone(&files);
        let cold = cold.clone();
        move || files.read_range(&cold, 0, 10)
    })
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(&format!("object storage {}", storage.url)),
        "{err}"
    );
    assert!(
        err.contains("db/data/t/cold.sst"),
        "the key is named: {err}"
    );
    assert!(
        err.contains("HEAD") || err.contains("GET"),
        "the operation is named: {err}"
    );
}

#[test]
fn a_hung_s3_server_makes_calls_time_out_with_a_clear_error() {
    let Some(mut moto) =
        moto::start_or_skip("a_hung_s3_server_makes_calls_time_out_with_a_clear_error")
    else {
        return;
    };
    let data_dir = tempfile::tempdir().unwrap();
    let config = moto_config(&moto, "hung", "");
    let storage = open_storage(&config, data_dir.path()).unwrap().unwrap();
    let files = storage.file_store();
    let f = data_dir.path().join("f");
    write(files.as_ref(), &f, b"published before the hang");
    moto.pause();
    let outcome = within_liveness({
        let files = Arc::clone(&files);
        let f = f.clone();
        move || files.read_range(&f, 0, 5)
    });
    moto.resume();
    let err = outcome.unwrap_err();
    let text = err.to_string();
    match &err {
        basalt_types::Error::Io { source, .. } => {
            assert_eq!(source.kind(), std::io::ErrorKind::TimedOut, "{text}");
        }
        other => panic!("not an I/O error: {other:?}"),
    }
    assert!(text.contains("did not complete within"), "{text}");
    // Once the server answers again, so does the store.
    assert_eq!(&files.read_range(&f, 0, 9).unwrap()[..], b"published");
}
