//! A region that handed its rows over (a split or merge closed it) keeps
//! answering reads from its frozen files until the janitor deletes them,
//! once no successor links to them. A caller still holding the old route
//! (a batch routes once, and its first group's flush may split the region
//! its next group goes to) must then be told to route again
//! (`NotServingRegion`), never shown an I/O error about a deleted file:
//! the model test found a batch failing so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use basalt_engine::compaction::CompactionPolicy;
use basalt_engine::fs::{FileStore, MemFileStore};
use basalt_engine::wal::{Wal, WalOptions};
use basalt_engine::{FamilyState, ManualClock, Region, RegionConfig, RegionInfo, StoreContext};
use basalt_types::{
    CheckAndMutate, ColumnFamilyDescriptor, Error, ErrorKind, Get, Increment, Mutation, Put,
};

/// A region over `[ "", "" )` with one family and rows `a` and `m` flushed
/// to a file.
fn region_with_a_file(files: &Arc<dyn FileStore>, dir: &Path) -> Region {
    let context = StoreContext {
        files: Arc::clone(files),
        cache: None,
        policy: CompactionPolicy::default(),
        memory: None,
        fence: None,
        work: Default::default(),
    };
    let info = RegionInfo {
        id: 1,
        table: "default:t".into(),
        start_key: Bytes::new(),
        end_key: Bytes::new(),
    };
    let families = vec![FamilyState {
        descriptor: ColumnFamilyDescriptor::new("f"),
        first_sequence: 0,
    }];
    let mut region = Region::open(
        info,
        families,
        dir.join("1"),
        context,
        Arc::new(ManualClock::new(1_000_000)),
        RegionConfig::default(),
    )
    .unwrap();
    region.finish_recovery(0);
    let (wal, _) = Wal::open(&dir.join("wal"), WalOptions::default(), |_| Ok(())).unwrap();
    region.attach_wal(wal);
    for row in ["a", "m"] {
        region
            .put(&Put::new(row).add("f", "q", 7i64.to_be_bytes().to_vec()))
            .unwrap();
    }
    region.flush().unwrap();
    region
}

fn assert_routed_again(what: &str, error: Error) {
    assert!(
        matches!(error, Error::NotServingRegion(_)),
        "{what} on a retired region whose files are gone: expected NotServingRegion, got {error}"
    );
}

#[test]
fn a_retired_region_whose_files_are_gone_tells_every_caller_to_route_again() {
    let dir = tempfile::tempdir().unwrap();
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let region = region_with_a_file(&files, dir.path());
    region.close_for_handover().unwrap();
    // Its frozen data still answers an old route's read.
    assert!(!region.get(&Get::new("a")).unwrap().is_empty());

    // The janitor deletes the region once no successor links to it.
    files.delete_prefix(&dir.path().join("1")).unwrap();

    assert_routed_again("a get", region.get(&Get::new("a")).unwrap_err());
    assert_routed_again(
        "an increment",
        region
            .increment(&Increment::new("a").add("f", "q", 1))
            .unwrap_err(),
    );
    let check = CheckAndMutate::new("m", "f", "q")
        .if_equals(7i64.to_be_bytes().to_vec())
        .then(Put::new("m").add("f", "q", "new"))
        .unwrap();
    assert_routed_again(
        "a check-and-mutate",
        region.check_and_mutate(&check).unwrap_err(),
    );
    let batch = vec![
        Mutation::Put(Put::new("a").add("f", "q", "new")),
        Mutation::Increment(Increment::new("m").add("f", "q", 1)),
    ];
    for result in region.batch(&batch) {
        assert_routed_again("a batch's mutation", result.unwrap_err());
    }
}

#[test]
fn a_serving_region_missing_a_file_reports_the_io_error() {
    // The mapping is for retired regions only: a serving region that
    // lost a file has a real problem, and the error names the file.
    let dir = tempfile::tempdir().unwrap();
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let region = region_with_a_file(&files, dir.path());
    files.delete_prefix(&dir.path().join("1")).unwrap();

    let error = region.get(&Get::new("a")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Io, "got {error}");
    assert!(error.to_string().contains(".sst"), "got {error}");
}
