//! A region's compaction state, as HBase's `getCompactionState` reports it
//! to clients that wait for compactions: a split daughter's rewrite of its
//! links to the parent's files is a compaction due until it is done.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use bytes::Bytes;

use basalt_engine::compaction::CompactionPolicy;
use basalt_engine::fs::{FileStore, MemFileStore};
use basalt_engine::wal::{Wal, WalOptions};
use basalt_engine::{
    layout, CompactionState, FamilyState, ManualClock, Region, RegionConfig, RegionInfo, Store,
    StoreContext,
};
use basalt_types::{ColumnFamilyDescriptor, Put};

fn open_region(
    context: &StoreContext,
    dir: &std::path::Path,
    id: u64,
    start_key: &'static [u8],
) -> Region {
    let info = RegionInfo {
        id,
        table: "default:t".into(),
        start_key: Bytes::from_static(start_key),
        end_key: Bytes::new(),
    };
    let families = vec![FamilyState {
        descriptor: ColumnFamilyDescriptor::new("f"),
        first_sequence: 0,
    }];
    let mut region = Region::open(
        info,
        families,
        dir.to_path_buf(),
        context.clone(),
        Arc::new(ManualClock::new(1_000_000)),
        RegionConfig::default(),
    )
    .unwrap();
    region.finish_recovery(0);
    region
}

#[test]
fn a_split_daughter_reports_a_minor_compaction_until_its_links_are_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let files: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let context = StoreContext {
        files: Arc::clone(&files),
        cache: None,
        policy: CompactionPolicy::default(),
        memory: None,
        fence: None,
        work: Default::default(),
    };
    // Regions are siblings named by id: a link names its parent by id.
    let parent_dir = dir.path().join("1");
    let parent = open_region(&context, &parent_dir, 1, b"");
    let (wal, _) = Wal::open(&dir.path().join("wal"), WalOptions::default(), |_| Ok(())).unwrap();
    parent.attach_wal(wal);
    for row in ["a", "k", "m", "x"] {
        parent.put(&Put::new(row).add("f", "q", "v")).unwrap();
    }
    parent.flush().unwrap();
    assert_eq!(parent.compaction_state(), CompactionState::None);

    // The upper daughter [m, end) starts with links to the parent's files.
    let through = parent.close_for_handover().unwrap();
    let daughter_dir = dir.path().join("2");
    for (family, links) in parent.links_for(&Bytes::from_static(b"m"), &Bytes::new()) {
        Store::seed(
            &files,
            &layout::store_dir(&daughter_dir, &family),
            links,
            through,
            None,
        )
        .unwrap();
    }
    let daughter = open_region(&context, &daughter_dir, 2, b"m");
    assert!(daughter.has_parent_links());
    assert_eq!(daughter.compaction_state(), CompactionState::Minor);

    assert!(daughter.compact(false).unwrap());
    assert!(!daughter.has_parent_links());
    assert_eq!(daughter.compaction_state(), CompactionState::None);
}
