//! The global memstore budget seen from one region: writes reserve room,
//! a writer held at the limit is released by the flush that makes room,
//! and a flush returns exactly what its snapshot held.
//!
//! The pressure handler here only counts its calls: nothing flushes unless
//! the test does, so every step is decided by the test, never by timing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use basalt_engine::compaction::CompactionPolicy;
use basalt_engine::fence::Fence;
use basalt_engine::fs::MemFileStore;
use basalt_engine::memory::{BudgetLimits, MemstoreBudget};
use basalt_engine::wal::{Wal, WalOptions};
use basalt_engine::{FamilyState, Region, RegionConfig, RegionInfo, StoreContext, SystemClock};
use basalt_types::{ColumnFamilyDescriptor, Durability, Get, Put};

const LIMIT: usize = 64 * 1024;

struct Fixture {
    region: Arc<Region>,
    budget: Arc<MemstoreBudget>,
    pressure_calls: Arc<AtomicUsize>,
    _wal: Arc<Wal>,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    fixture_fenced_by(None)
}

fn fixture_fenced_by(fence: Option<Arc<Fence>>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let budget = MemstoreBudget::new(BudgetLimits::new(LIMIT, 0.5, Duration::ZERO));
    let pressure_calls = Arc::new(AtomicUsize::new(0));
    {
        let calls = Arc::clone(&pressure_calls);
        budget.set_pressure_handler(Arc::new(move |_target| {
            calls.fetch_add(1, Ordering::SeqCst);
        }));
    }
    let context = StoreContext {
        files: Arc::new(MemFileStore::new()),
        cache: None,
        policy: CompactionPolicy::default(),
        memory: Some(Arc::clone(&budget)),
        fence,
        work: Default::default(),
    };
    let info = RegionInfo {
        id: 7,
        table: "default:t".into(),
        start_key: Default::default(),
        end_key: Default::default(),
    };
    let family = FamilyState {
        descriptor: ColumnFamilyDescriptor::new("f"),
        first_sequence: 0,
    };
    let config = RegionConfig {
        // Only the global budget is at work.
        memstore_flush_bytes: usize::MAX / 4,
        memstore_block_bytes: usize::MAX / 2,
        ..RegionConfig::default()
    };
    let mut region = Region::open(
        info,
        vec![family],
        dir.path().join("region"),
        context,
        Arc::new(SystemClock),
        config,
    )
    .unwrap();
    region.finish_recovery(0);
    let (wal, _) = Wal::open(&dir.path().join("wal"), WalOptions::default(), |_| Ok(())).unwrap();
    region.attach_wal(wal.clone());
    Fixture {
        region: Arc::new(region),
        budget,
        pressure_calls,
        _wal: wal,
        _dir: dir,
    }
}

fn put(row: usize) -> Put {
    Put::new(format!("row{row:06}"))
        .add("f", "q", vec![b'v'; 1000])
        .durability(Durability::SkipWal)
}

/// Writes rows until the next one would not fit under the limit.
fn fill_to_the_limit(f: &Fixture) -> usize {
    let mut row = 0;
    while f.budget.total() + 1100 <= LIMIT {
        f.region.put(&put(row)).unwrap();
        row += 1;
    }
    row
}

/// Fills the budget, then starts a writer that the limit holds; returns
/// the row it writes and its thread, once it is held.
fn hold_a_writer(f: &Fixture) -> (usize, std::thread::JoinHandle<basalt_types::Result<()>>) {
    let rows = fill_to_the_limit(f);
    let writer = {
        let region = Arc::clone(&f.region);
        std::thread::spawn(move || region.put(&put(rows).add("f", "more", vec![b'w'; 1000])))
    };
    while f.budget.held_writes() == 0 {
        std::thread::yield_now();
    }
    (rows, writer)
}

#[test]
fn memstore_bytes_are_counted_until_their_flush_commits() {
    let f = fixture();
    f.region.put(&put(0)).unwrap();
    let (active, snapshot) = f.region.memstore_parts();
    assert_eq!(snapshot, 0);
    assert_eq!(
        f.budget.total(),
        active,
        "the budget holds the memstore's bytes"
    );
    f.region.flush().unwrap();
    assert_eq!(f.budget.total(), 0, "the committed flush returned them");
    assert_eq!(f.budget.high_water_bytes(), active);
}

#[test]
fn writes_past_the_low_water_mark_ask_for_flushes() {
    let f = fixture();
    let rows = fill_to_the_limit(&f);
    assert!(f.budget.above_low_water());
    assert!(f.pressure_calls.load(Ordering::SeqCst) > 0);
    assert!(
        f.budget.slowed_writes() > 0,
        "the writes past it were slowed"
    );
    assert!(f.budget.high_water_bytes() <= LIMIT);
    for row in 0..rows {
        assert!(!f
            .region
            .get(&Get::new(format!("row{row:06}")))
            .unwrap()
            .is_empty());
    }
}

#[test]
fn a_writer_held_at_the_limit_is_released_when_a_flush_completes() {
    let f = fixture();
    let rows = fill_to_the_limit(&f);
    let (done_tx, done_rx) = mpsc::channel();
    let writer = {
        let region = Arc::clone(&f.region);
        std::thread::spawn(move || {
            let result = region.put(&put(rows).add("f", "more", vec![b'w'; 1000]));
            done_tx.send(()).unwrap();
            result
        })
    };
    // Held, not failed: the counter says it waits, and it has not finished.
    while f.budget.held_writes() == 0 {
        std::thread::yield_now();
    }
    assert!(done_rx.try_recv().is_err());
    assert!(f.budget.high_water_bytes() <= LIMIT);

    f.region.flush().unwrap();
    done_rx.recv().unwrap();
    writer.join().unwrap().unwrap();
    let row = f.region.get(&Get::new(format!("row{rows:06}"))).unwrap();
    assert_eq!(row.cells.len(), 2, "the held write was applied in full");
    assert!(f.budget.high_water_bytes() <= LIMIT);
}

#[test]
fn a_closed_budget_fails_a_held_writer_instead_of_leaving_it_waiting() {
    let f = fixture();
    let (rows, writer) = hold_a_writer(&f);
    f.budget.close();
    let err = writer.join().unwrap().unwrap_err();
    assert!(matches!(err, basalt_types::Error::Closed(_)), "{err}");
    assert!(
        f.region
            .get(&Get::new(format!("row{rows:06}")))
            .unwrap()
            .is_empty(),
        "nothing of the refused write was applied"
    );
}

#[test]
fn a_writer_held_when_a_newer_owner_fences_the_process_is_told_fenced_not_too_busy() {
    let fence = Arc::new(Fence::new(1));
    let f = fixture_fenced_by(Some(Arc::clone(&fence)));
    let (rows, writer) = hold_a_writer(&f);
    // A newer owner took the region over: this process's flushes cannot
    // commit, so room never comes, and the held writer must hear why.
    fence.trip(2, "a newer owner committed the store's manifest");
    let flushed = f.region.flush();
    assert!(flushed.is_err(), "a fenced region cannot flush");
    f.budget.flush_failed("fenced");
    let err = writer.join().unwrap().unwrap_err();
    assert!(
        matches!(err, basalt_types::Error::Fenced { epoch: 2, .. }),
        "{err}"
    );
    assert!(f.region.get(&Get::new(format!("row{rows:06}"))).is_err());
}
