//! Load-based split through `Database`, driven with a manual clock: the
//! tests advance time between requests (no sleeps, no timing), and with
//! no background threads the split runs in the request that closes the
//! last hot window, so the outcome is deterministic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use bytes::Bytes;

use basalt::{
    ColumnFamilyDescriptor, Database, Get, LoadSplitOutcome, ManualClock, Options, Put, Scan,
    TableDescriptor,
};

const WINDOW_MS: i64 = 10_000;

struct Fixture {
    _dir: tempfile::TempDir,
    clock: ManualClock,
    db: Database,
}

/// A database whose regions split by load at 200 requests per second
/// over three windows of 10 s, and never by size.
fn fixture(tune: impl FnOnce(&mut Options)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000_000);
    let mut options = Options::new(dir.path());
    options.background_threads = 0;
    options.region_split_bytes = 0;
    options.load_split_qps_threshold = 200;
    options.load_split_bytes_threshold = 0;
    options.load_split_window_secs = 10;
    options.load_split_windows = 3;
    tune(&mut options);
    let db = Database::builder(options)
        .clock(Arc::new(clock.clone()))
        .open()
        .unwrap();
    db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    Fixture {
        _dir: dir,
        clock,
        db,
    }
}

fn row(i: usize) -> Bytes {
    Bytes::from(format!("row{i:03}"))
}

fn row_number(key: &[u8]) -> usize {
    std::str::from_utf8(&key[3..]).unwrap().parse().unwrap()
}

/// Rows `row000`..`row999`; the first hundred hold 20 KiB each, the rest
/// 100 bytes, so the middle of the data is among the first hundred rows.
fn load_rows(f: &Fixture) {
    let t = f.db.table("t").unwrap();
    for i in 0..1000 {
        let size = if i < 100 { 20 * 1024 } else { 100 };
        t.put(&Put::new(row(i)).add("f", "q", vec![b'v'; size]))
            .unwrap();
    }
    f.db.flush_table("t").unwrap();
    f.db.compact_table("t", true).unwrap();
    // Those writes had a window of their own (cold: 100 per second).
    f.clock.advance(WINDOW_MS);
}

/// Runs `requests` spread evenly over one window; `request(i)` makes the
/// i-th (numbered across windows by `first`).
fn one_window(f: &Fixture, first: usize, requests: usize, request: &impl Fn(&Fixture, usize)) {
    let step = WINDOW_MS / requests as i64;
    for i in first..first + requests {
        request(f, i);
        f.clock.advance(step);
    }
    // The rest of the window, so windows stay aligned.
    f.clock.advance(WINDOW_MS - step * requests as i64);
}

fn regions(f: &Fixture) -> Vec<basalt::RegionInfo> {
    f.db.list_regions("t")
        .unwrap()
        .into_iter()
        .map(|r| r.info)
        .collect()
}

/// Nine gets in ten on rows 700-999, one on rows 0-699: half the load is
/// below about row 833 (0.1 + 0.9 x 133/300 = 0.5).
fn skewed_get(f: &Fixture, i: usize) {
    let r = if i.is_multiple_of(10) {
        row((i / 10 * 7) % 700)
    } else {
        row(700 + (i * 37) % 300)
    };
    let got = f.db.table("t").unwrap().get(&Get::new(r.clone())).unwrap();
    assert_eq!(got.row, r, "every row stays readable");
}

fn assert_every_row_readable(f: &Fixture) {
    let t = f.db.table("t").unwrap();
    let scanned: Vec<Bytes> = t
        .scan(&Scan::new())
        .unwrap()
        .map(|r| r.unwrap().row)
        .collect();
    assert_eq!(scanned, (0..1000).map(row).collect::<Vec<_>>());
    for i in 0..1000 {
        let got = t.get(&Get::new(row(i))).unwrap();
        let size = if i < 100 { 20 * 1024 } else { 100 };
        assert_eq!(got.cells.len(), 1, "{i}");
        assert_eq!(got.cells[0].value.len(), size, "{i}");
    }
}

#[test]
fn a_region_under_a_skewed_read_load_splits_at_the_load_s_median_row_not_at_the_size_midpoint() {
    let f = fixture(|_| {});
    load_rows(&f);
    let id = regions(&f)[0].id;
    let region = f.db.region_server().region(id).unwrap();
    let size_midpoint = region.split_point().unwrap().unwrap();
    assert!(
        row_number(&size_midpoint) < 100,
        "the data's middle is among the big rows: {size_midpoint:?}"
    );

    // 300 gets per second: three hot windows, then the first request of
    // the fourth closes the third and the region splits.
    let mut first = 0;
    for window in 0..3 {
        one_window(&f, first, 3_000, &skewed_get);
        first += 3_000;
        assert_eq!(regions(&f).len(), 1, "not split during window {window}");
    }
    skewed_get(&f, first);
    let after = regions(&f);
    assert_eq!(after.len(), 2, "{after:?}");
    let boundary = row_number(&after[1].start_key);
    assert_eq!(after[0].end_key, after[1].start_key);
    assert!(
        (808..=858).contains(&boundary),
        "split at row {boundary}, expected within 25 rows of the load's median (833)"
    );
    assert!(boundary > row_number(&size_midpoint) + 500);
    assert_every_row_readable(&f);

    let events = f.db.load_split_events();
    assert_eq!(events.len(), 1, "{events:?}");
    let event = &events[0];
    assert_eq!(event.outcome, LoadSplitOutcome::Split);
    assert_eq!(event.cause, "load");
    assert_eq!(event.table, "t");
    assert_eq!(event.region, region.info().encoded_name());
    assert_eq!(
        event.split_key.as_deref(),
        Some(&*String::from_utf8_lossy(&after[1].start_key))
    );
    assert!(
        event
            .reason
            .starts_with("load: 300 req/s over 3 windows of 10 s, left "),
        "{}",
        event.reason
    );
    assert_eq!(event.at_millis, 1_000_000 + 4 * WINDOW_MS);
}

#[test]
fn a_load_below_the_threshold_never_splits() {
    let f = fixture(|_| {});
    load_rows(&f);
    let mut first = 0;
    for _ in 0..8 {
        // 190 gets per second: just under the threshold.
        one_window(&f, first, 1_900, &skewed_get);
        first += 1_900;
    }
    skewed_get(&f, first);
    assert_eq!(regions(&f).len(), 1);
    assert_eq!(f.db.load_split_events(), []);
}

#[test]
fn a_single_hot_row_is_not_split_and_the_refusal_is_noted_once() {
    let f = fixture(|_| {});
    load_rows(&f);
    let hot = |f: &Fixture, i: usize| {
        let r = if i.is_multiple_of(50) {
            row(i % 1000)
        } else {
            row(500)
        };
        f.db.table("t").unwrap().get(&Get::new(r)).unwrap();
    };
    let mut first = 0;
    for _ in 0..6 {
        one_window(&f, first, 3_000, &hot);
        first += 3_000;
    }
    hot(&f, first);
    assert_eq!(regions(&f).len(), 1);
    let events = f.db.load_split_events();
    assert_eq!(events.len(), 1, "one event, repeated: {events:?}");
    assert_eq!(events[0].outcome, LoadSplitOutcome::Refused);
    assert_eq!(events[0].cause, "single_hot_row");
    assert_eq!(events[0].split_key.as_deref(), Some("row500"));
    assert_eq!(events[0].repeats, 1, "decided after windows 3 and 6");
    assert!(
        events[0].reason.contains("a row cannot be split"),
        "{}",
        events[0].reason
    );
}

#[test]
fn a_write_load_splits_from_the_writing_request_and_keeps_every_write() {
    let f = fixture(|_| {});
    // Writes only, spread evenly over rows 0-999 (all 100 bytes).
    let write = |f: &Fixture, i: usize| {
        let r = row((i * 7919) % 1000);
        f.db.table("t")
            .unwrap()
            .put(&Put::new(r).add("f", "q", format!("{i}")))
            .unwrap();
    };
    let mut first = 0;
    for _ in 0..3 {
        one_window(&f, first, 3_000, &write);
        first += 3_000;
    }
    write(&f, first);
    let after = regions(&f);
    assert_eq!(after.len(), 2, "{after:?}");
    let boundary = row_number(&after[1].start_key);
    assert!((450..=550).contains(&boundary), "{boundary}");
    // The last value of every row survived the split.
    let t = f.db.table("t").unwrap();
    let last = first;
    for i in last.saturating_sub(999)..=last {
        let got = t.get(&Get::new(row((i * 7919) % 1000))).unwrap();
        let value: usize = std::str::from_utf8(&got.cells[0].value)
            .unwrap()
            .parse()
            .unwrap();
        assert!(value >= i, "row {} lost write {i}", (i * 7919) % 1000);
    }
}

#[test]
fn scans_count_at_their_start_row() {
    let f = fixture(|_| {});
    load_rows(&f);
    // Short scans starting in rows 200-399: the split lands among them.
    let scan = |f: &Fixture, i: usize| {
        let start = row(200 + (i * 13) % 200);
        let rows =
            f.db.table("t")
                .unwrap()
                .scan(&Scan::new().start_row(start).limit(3))
                .unwrap()
                .count();
        assert_eq!(rows, 3);
    };
    let mut first = 0;
    for _ in 0..3 {
        one_window(&f, first, 2_500, &scan);
        first += 2_500;
    }
    scan(&f, first);
    let after = regions(&f);
    assert_eq!(after.len(), 2, "{after:?}");
    let boundary = row_number(&after[1].start_key);
    assert!((280..=320).contains(&boundary), "{boundary}");
    assert_every_row_readable(&f);
}

#[test]
fn thresholds_of_zero_turn_load_based_split_off() {
    let f = fixture(|o| {
        o.load_split_qps_threshold = 0;
        o.load_split_bytes_threshold = 0;
    });
    load_rows(&f);
    let mut first = 0;
    for _ in 0..4 {
        one_window(&f, first, 3_000, &skewed_get);
        first += 3_000;
    }
    assert_eq!(regions(&f).len(), 1);
    assert_eq!(f.db.load_split_events(), []);
}

#[test]
fn a_table_at_its_load_split_region_limit_is_refused_quietly() {
    let f = fixture(|o| o.load_split_max_regions = 1);
    load_rows(&f);
    let mut first = 0;
    for _ in 0..3 {
        one_window(&f, first, 3_000, &skewed_get);
        first += 3_000;
    }
    skewed_get(&f, first);
    assert_eq!(regions(&f).len(), 1);
    let events = f.db.load_split_events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].outcome, LoadSplitOutcome::Refused);
    assert_eq!(events[0].cause, "max_regions");
    assert!(
        events[0].reason.contains("load_split_max_regions 1"),
        "{}",
        events[0].reason
    );
}

// ------------------------------------------------------------ cluster mode
//
// A `ClusterMaster` and one member `Database` on a shared directory, wired
// by in-process stand-ins for the RPCs, as `cluster_assignment.rs` does
// (only what a split needs). The member's clock is manual; its question
// to the master goes from a thread of its own, so the test waits for the
// answer by polling the catalog (never asserting on time).

mod cluster {
    use std::collections::BTreeMap;
    use std::path::Path;

    use parking_lot::RwLock;

    use basalt::cluster::{
        ClusterMaster, MasterAnswer, MasterCall, MasterControl, PrepareMerge, PrepareSplit,
        RegionServerControl, SplitPlan,
    };
    use basalt::fs::FileStore;
    use basalt::{
        Error, MemberConfig, ObjectWalOptions, RegionAnswer, RegionCall, RegionCaller, Result,
        ServerAddress, SystemClock,
    };
    use basalt_object_store::{open_storage, StorageConfig};

    use super::*;

    #[derive(Debug, Default)]
    struct Members(RwLock<BTreeMap<String, Database>>);

    impl Members {
        fn by_name(&self, name: &str) -> Result<Database> {
            self.0
                .read()
                .get(name)
                .cloned()
                .ok_or_else(|| Error::NotServingRegion(format!("{name} is unreachable")))
        }
    }

    #[derive(Debug)]
    struct Control(Arc<Members>);

    impl RegionServerControl for Control {
        fn open_region(&self, server: &str, table: &str, region: u64) -> Result<()> {
            self.0.by_name(server)?.open_assigned_region(table, region)
        }
        fn close_region(&self, server: &str, _table: &str, region: u64) -> Result<()> {
            self.0.by_name(server)?.close_assigned_region(region)
        }
        fn prepare_split(&self, server: &str, request: &PrepareSplit) -> Result<SplitPlan> {
            self.0.by_name(server)?.prepare_split_region(request)
        }
        fn prepare_merge(&self, server: &str, request: &PrepareMerge) -> Result<()> {
            self.0.by_name(server)?.prepare_merge_regions(request)
        }
    }

    /// One member: every region is local, no call crosses servers.
    #[derive(Debug)]
    struct NoCaller;

    impl RegionCaller for NoCaller {
        fn call(
            &self,
            server: &ServerAddress,
            _table: &str,
            _region_id: u64,
            _call: RegionCall,
        ) -> Result<RegionAnswer> {
            Err(Error::NotServingRegion(format!("{server} is unreachable")))
        }
    }

    #[derive(Debug, Default)]
    struct MasterSlot(RwLock<Option<Arc<ClusterMaster>>>);

    impl MasterControl for MasterSlot {
        fn call(&self, call: MasterCall) -> Result<MasterAnswer> {
            let master = self
                .0
                .read()
                .clone()
                .ok_or_else(|| Error::invalid("no master"))?;
            master.call(call)
        }
    }

    fn files(url: &str, root: &Path) -> Arc<dyn FileStore> {
        open_storage(&StorageConfig::for_url(url), root)
            .unwrap()
            .unwrap()
            .file_store()
    }

    fn settle(master: &ClusterMaster, members: &Members) {
        master
            .servers_changed(members.0.read().keys().cloned().collect())
            .unwrap();
        for db in members.0.read().values() {
            db.refresh_cluster().unwrap();
        }
    }

    #[test]
    fn a_cluster_member_asks_the_master_to_split_its_hot_region_at_the_load_s_median_row() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("storage");
        std::fs::create_dir_all(&shared).unwrap();
        let url = format!("file://{}", shared.display());
        let members = Arc::new(Members::default());
        let slot = Arc::new(MasterSlot::default());
        let master_root = dir.path().join("m1");
        let master = ClusterMaster::start(
            &master_root,
            "m1",
            Arc::new(SystemClock),
            files(&url, &master_root),
            Arc::new(Control(Arc::clone(&members))),
        )
        .unwrap();
        *slot.0.write() = Some(Arc::clone(&master));

        let root = dir.path().join("rs1");
        let mut options = Options::new(&root);
        options.background_threads = 0;
        options.region_split_bytes = 0;
        options.load_split_qps_threshold = 200;
        options.load_split_bytes_threshold = 0;
        let clock = ManualClock::new(1_000_000);
        let db = Database::builder(options)
            .clock(Arc::new(clock.clone()))
            .file_store(files(&url, &root))
            .wal_in_file_store(ObjectWalOptions::default())
            .open_cluster_member(MemberConfig {
                control: Arc::clone(&slot) as Arc<dyn MasterControl>,
                caller: Arc::new(NoCaller),
                host: Some(("rs".to_string(), 1)),
            })
            .unwrap();
        let name = db.server_name().unwrap().to_string();
        members.0.write().insert(name, db.clone());
        settle(&master, &members);
        let answer = master
            .call(MasterCall::CreateTable {
                descriptor: TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")),
                splits: Vec::new(),
                owner: None,
            })
            .unwrap();
        assert!(matches!(answer, MasterAnswer::Done));
        settle(&master, &members);

        let f = Fixture {
            _dir: dir,
            clock,
            db,
        };
        load_rows(&f);
        let mut first = 0;
        for _ in 0..3 {
            one_window(&f, first, 3_000, &skewed_get);
            first += 3_000;
        }
        skewed_get(&f, first);
        // The member asked from a thread of its own: wait for the answer.
        let mut polls = 0;
        while f.db.load_split_events().len() < 2 && polls < 600 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            polls += 1;
        }
        settle(&master, &members);
        let events = f.db.load_split_events();
        let outcomes: Vec<_> = events.iter().map(|e| e.outcome).collect();
        assert_eq!(
            outcomes,
            [LoadSplitOutcome::Asked, LoadSplitOutcome::Split],
            "{events:?}"
        );
        let after = regions(&f);
        assert_eq!(after.len(), 2, "{after:?}");
        let boundary = row_number(&after[1].start_key);
        assert!((808..=858).contains(&boundary), "split at row {boundary}");
        assert_eq!(
            events[1].split_key.as_deref(),
            Some(&*format!("row{boundary:03}"))
        );
        assert_every_row_readable(&f);
        master.stop();
    }
}
