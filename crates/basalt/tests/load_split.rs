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
