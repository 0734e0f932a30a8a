//! HBase's bulk load at the region: loaded cells get one fresh sequence id,
//! so they win over what was written before at the same coordinates and
//! lose to what is written after; they survive a reopen without any log,
//! and a reopened region still orders new writes after them; a row
//! outside the region fails the load and commits nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use bytes::Bytes;

use basalt_engine::compaction::{CellStream, CompactionPolicy};
use basalt_engine::fs::{FileStore, LocalFileStore};
use basalt_engine::wal::{Wal, WalOptions};
use basalt_engine::{FamilyState, ManualClock, Region, RegionConfig, RegionInfo, StoreContext};
use basalt_types::{Cell, CellType, ColumnFamilyDescriptor, Get, Put, Result};

struct Cells(std::vec::IntoIter<Cell>);

impl CellStream for Cells {
    fn next_cell(&mut self) -> Result<Option<Cell>> {
        Ok(self.0.next())
    }
}

fn cell(row: &str, ts: i64, value: &str, sequence_id: u64) -> Cell {
    Cell {
        row: Bytes::copy_from_slice(row.as_bytes()),
        family: Bytes::from_static(b"f"),
        qualifier: Bytes::from_static(b"q"),
        timestamp: ts,
        cell_type: CellType::Put,
        sequence_id,
        value: Bytes::copy_from_slice(value.as_bytes()),
        ttl_millis: None,
    }
}

fn context() -> StoreContext {
    StoreContext {
        files: Arc::new(LocalFileStore::new()) as Arc<dyn FileStore>,
        cache: None,
        policy: CompactionPolicy::default(),
        memory: None,
        fence: None,
        work: Default::default(),
    }
}

fn open(dir: &std::path::Path, end_key: &'static [u8]) -> Region {
    let info = RegionInfo {
        id: 1,
        table: "default:t".into(),
        start_key: Bytes::new(),
        end_key: Bytes::from_static(end_key),
    };
    let mut region = Region::open(
        info,
        vec![FamilyState {
            descriptor: ColumnFamilyDescriptor::new("f").max_versions(1),
            first_sequence: 0,
        }],
        dir.join("region"),
        context(),
        Arc::new(ManualClock::new(1_000_000)),
        RegionConfig::default(),
    )
    .unwrap();
    // No log edits to replay here: the test's log is fresh each open.
    region.finish_recovery(0);
    let (wal, _) = Wal::open(&dir.join("wal"), WalOptions::default(), |_| Ok(())).unwrap();
    region.attach_wal(wal);
    region
}

fn value(region: &Region, row: &str) -> String {
    let result = region.get(&Get::new(row.to_string())).unwrap();
    String::from_utf8(result.cells[0].value.to_vec()).unwrap()
}

#[test]
fn loaded_cells_win_over_earlier_writes_and_lose_to_later_ones_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let region = open(dir.path(), b"");
        region
            .put(&Put::new("a").add_at("f", "q", 5, "written before"))
            .unwrap();
        let s = region.bulk_load_sequence().unwrap();
        let entry = region
            .bulk_load(
                b"f",
                &mut Cells(vec![cell("a", 5, "loaded", s), cell("b", 5, "loaded", s)].into_iter()),
            )
            .unwrap()
            .unwrap();
        assert_eq!(entry.cells, 2);
        assert_eq!(
            value(&region, "a"),
            "loaded",
            "same coordinates: the load wins"
        );
        region
            .put(&Put::new("b").add_at("f", "q", 5, "written after"))
            .unwrap();
        assert_eq!(value(&region, "b"), "written after");
        region.flush().unwrap();
    }
    // Reopened with a fresh log: the loaded file is the cells' only record,
    // and a new write must still be ordered after them.
    std::fs::remove_dir_all(dir.path().join("wal")).unwrap();
    let region = open(dir.path(), b"");
    assert_eq!(value(&region, "a"), "loaded");
    assert_eq!(value(&region, "b"), "written after");
    region
        .put(&Put::new("a").add_at("f", "q", 5, "after the reopen"))
        .unwrap();
    assert_eq!(value(&region, "a"), "after the reopen");
}

#[test]
fn a_row_outside_the_region_fails_the_load_and_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let region = open(dir.path(), b"m");
    let s = region.bulk_load_sequence().unwrap();
    let err = region
        .bulk_load(
            b"f",
            &mut Cells(vec![cell("a", 5, "in", s), cell("z", 5, "out", s)].into_iter()),
        )
        .unwrap_err();
    assert!(err.to_string().contains("outside region"), "{err}");
    assert!(region.get(&Get::new("a")).unwrap().cells.is_empty());
    let missing = region
        .bulk_load(b"nope", &mut Cells(vec![cell("a", 5, "x", s)].into_iter()))
        .unwrap_err();
    assert!(missing.to_string().contains("nope"), "{missing}");
}

#[test]
fn a_region_reopened_after_only_a_load_orders_new_writes_after_the_loaded_cells() {
    let dir = tempfile::tempdir().unwrap();
    {
        let region = open(dir.path(), b"");
        let s = region.bulk_load_sequence().unwrap();
        region
            .bulk_load(
                b"f",
                &mut Cells(vec![cell("a", 5, "loaded", s)].into_iter()),
            )
            .unwrap();
    }
    // Nothing flushed, nothing logged: only the loaded file says how far
    // the region's sequence ids went.
    std::fs::remove_dir_all(dir.path().join("wal")).unwrap();
    let region = open(dir.path(), b"");
    region
        .put(&Put::new("a").add_at("f", "q", 5, "newer"))
        .unwrap();
    assert_eq!(value(&region, "a"), "newer");
}

#[test]
fn a_region_handed_over_for_a_split_refuses_a_bulk_load() {
    let dir = tempfile::tempdir().unwrap();
    let region = open(dir.path(), b"");
    let s = region.bulk_load_sequence().unwrap();
    region.close_for_handover().unwrap();
    let refused = region
        .bulk_load(b"f", &mut Cells(vec![cell("a", 5, "late", s)].into_iter()))
        .unwrap_err();
    assert!(
        matches!(refused, basalt_types::Error::NotServingRegion(_)),
        "{refused}"
    );
    assert!(region.bulk_load_sequence().is_err());
}
