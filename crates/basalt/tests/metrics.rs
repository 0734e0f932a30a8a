//! The numbers the info server and `basalt top` show, counted where the
//! work happens: region load (filtered reads, bytes read and written),
//! compaction progress and the last major compaction, request latency
//! histograms, server and table sums, and the key heatmap.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use basalt::admin::{region_reply, AdminReply, AdminRequest, RegionInfoReply};
use basalt::metrics::{Operation, LATENCY_BOUNDS_SECONDS};
use basalt::Admin;
use basalt::*;

const T0: i64 = 1_700_000_000_000;

/// A database with a manual clock and background work inline, so what a
/// test asks for has happened when the call returns.
fn open(dir: &std::path::Path, clock: &ManualClock) -> Database {
    let mut options = Options::new(dir);
    options.background_threads = 0;
    Database::builder(options)
        .clock(Arc::new(clock.clone()))
        .open()
        .unwrap()
}

fn create(db: &Database, name: &str, splits: &[&str]) -> Table {
    let splits: Vec<bytes::Bytes> = splits
        .iter()
        .map(|s| bytes::Bytes::copy_from_slice(s.as_bytes()))
        .collect();
    db.create_table_with_splits(
        TableDescriptor::new(name).family(ColumnFamilyDescriptor::new("f")),
        &splits,
    )
    .unwrap();
    db.table(name).unwrap()
}

/// What one cell weighs in the load counters: `Cell::heap_size`.
fn cell_bytes(row: &str, qualifier: &str, value: &str) -> u64 {
    (row.len() + "f".len() + qualifier.len() + value.len() + 48) as u64
}

fn only_region(db: &Database, table: &str) -> RegionSummary {
    let mut regions = db.list_regions(table).unwrap();
    assert_eq!(regions.len(), 1);
    regions.remove(0)
}

#[test]
fn region_load_counts_filtered_reads_and_the_bytes_read_and_written() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let db = open(dir.path(), &clock);
    let table = create(&db, "t", &[]);
    let mut written = 0;
    for i in 0..10 {
        let (row, value) = (format!("row{i}"), format!("value{i}"));
        table
            .put(&Put::new(row.clone()).add("f", "q", value.clone()))
            .unwrap();
        written += cell_bytes(&row, "q", &value);
    }
    let load = only_region(&db, "t").load;
    assert_eq!(load.write_requests, 10);
    assert_eq!(load.bytes_written, written);
    assert_eq!((load.read_requests, load.bytes_read), (0, 0));

    // A plain get: one read, its cell's bytes, nothing filtered.
    table.get(&Get::new("row3")).unwrap();
    let load = only_region(&db, "t").load;
    assert_eq!(load.read_requests, 1);
    assert_eq!(load.bytes_read, cell_bytes("row3", "q", "value3"));
    assert_eq!(load.filtered_read_requests, 0);

    // A scan whose filter drops all rows but one: one filtered read
    // (a scan counts once per region), only the kept row's bytes.
    let filter = Filter::parse("ValueFilter(=, 'binary:value7')").unwrap();
    let rows: Vec<RowResult> = table
        .scan(&Scan::new().filter(filter))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(rows.len(), 1);
    let load = only_region(&db, "t").load;
    assert_eq!(load.read_requests, 2);
    assert_eq!(load.filtered_read_requests, 1);
    assert_eq!(
        load.bytes_read,
        cell_bytes("row3", "q", "value3") + cell_bytes("row7", "q", "value7")
    );

    // A get whose filter drops its row is a filtered read too; a scan
    // without a filter is not.
    let drop_all = Filter::parse("ValueFilter(=, 'binary:nothing')").unwrap();
    assert!(table
        .get(&Get::new("row1").filter(drop_all))
        .unwrap()
        .is_empty());
    assert_eq!(table.scan(&Scan::new()).unwrap().count(), 10);
    let load = only_region(&db, "t").load;
    assert_eq!(load.read_requests, 4);
    assert_eq!(load.filtered_read_requests, 2);

    // Rates over the last minute: the clock moved 10 s since the writes.
    clock.advance(10_000);
    let load = only_region(&db, "t").load;
    assert!(load.bytes_written_per_sec > 0.0, "{load:?}");
    assert!(load.bytes_read_per_sec > 0.0, "{load:?}");
    assert!(load.filtered_read_requests_per_sec > 0.0, "{load:?}");

    // The admin reply carries hbtop's columns.
    let reply = region_reply(&only_region(&db, "t"));
    assert_eq!(reply.filtered_read_requests, 2);
    assert_eq!(reply.bytes_written, written);
    assert!(
        (reply.requests_per_sec - (reply.read_requests_per_sec + reply.write_requests_per_sec))
            .abs()
            < 1e-9
    );
    assert_eq!(reply.server, None, "one process: no holder");
}

#[test]
fn compaction_progress_reads_idle_and_a_major_compaction_sets_the_last_one() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let db = open(dir.path(), &clock);
    let table = create(&db, "t", &[]);
    for round in 0..2 {
        for i in 0..20 {
            table
                .put(&Put::new(format!("row{i:02}")).add("f", "q", format!("v{round}")))
                .unwrap();
        }
        db.flush_table("t").unwrap();
    }
    let region = only_region(&db, "t");
    let stats = &region.stores[0].1;
    assert_eq!(
        (stats.compacting_cells_total, stats.compacted_cells),
        (0, 0)
    );
    assert_eq!(stats.flushes_completed, 2);
    let reply = region_reply(&region);
    assert_eq!(reply.compaction_progress, None, "idle");
    assert_eq!(reply.last_major_compaction_ms, 0, "never");

    clock.set(T0 + 5_000);
    db.compact_table("t", true).unwrap();
    let region = only_region(&db, "t");
    let stats = &region.stores[0].1;
    assert_eq!(stats.files, 1);
    assert_eq!(stats.compactions_completed, 1);
    assert_eq!(stats.last_major_compaction_ms, T0 + 5_000);
    let reply = region_reply(&region);
    assert_eq!(reply.compaction_progress, None, "idle again");
    assert_eq!(reply.last_major_compaction_ms, T0 + 5_000);

    let metrics = db.server_metrics();
    assert_eq!(metrics.flushes_completed, 2);
    assert_eq!(metrics.compactions_completed, 1);
    assert_eq!(metrics.major_compactions_completed, 1);
    assert_eq!(
        (metrics.flush_queue_length, metrics.compaction_queue_length),
        (0, 0)
    );

    // Derived from the major-compacted file: it survives a restart.
    db.close().unwrap();
    let db = open(dir.path(), &clock);
    let reply = region_reply(&only_region(&db, "t"));
    assert_eq!(reply.last_major_compaction_ms, T0 + 5_000);
}

#[test]
fn every_request_method_records_its_latency_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let db = open(dir.path(), &clock);
    let table = create(&db, "t", &["m"]);
    for row in ["a", "b", "x", "y"] {
        table.put(&Put::new(row).add("f", "q", "v")).unwrap();
    }
    table.get(&Get::new("a")).unwrap();
    assert!(table.exists(&Get::new("zz")).is_ok());
    table.delete(&Delete::new("b")).unwrap();
    table.increment_column("c", "f", "n", 1).unwrap();
    table
        .append(&Append::new("c").add("f", "s", "tail"))
        .unwrap();
    table
        .check_and_mutate(
            &CheckAndMutate::new("a", "f", "r")
                .if_absent()
                .then(Put::new("a").add("f", "r", "1"))
                .unwrap(),
        )
        .unwrap();
    table
        .mutate_row(
            &RowMutations::new("d")
                .add(Put::new("d").add("f", "q", "1"))
                .unwrap(),
        )
        .unwrap();
    let results = table.batch(&[
        Mutation::Put(Put::new("e").add("f", "q", "1")),
        Mutation::Put(Put::new("z").add("f", "q", "1")),
    ]);
    assert!(results.iter().all(|r| r.is_ok()));
    // Rows a, c, d, e | x, y, z: seven rows and the call that ends the scan.
    assert_eq!(table.scan(&Scan::new()).unwrap().count(), 7);

    let metrics = db.server_metrics();
    let count = |op: Operation| {
        metrics
            .latencies
            .iter()
            .find(|l| l.operation == op.name())
            .unwrap()
            .count
    };
    assert_eq!(count(Operation::Put), 4);
    assert_eq!(count(Operation::Get), 2, "exists is a get");
    assert_eq!(count(Operation::Delete), 1);
    assert_eq!(count(Operation::Increment), 1);
    assert_eq!(count(Operation::Append), 1);
    assert_eq!(count(Operation::CheckAndMutate), 1);
    assert_eq!(count(Operation::MutateRow), 1);
    assert_eq!(count(Operation::Batch), 1, "a batch is one request");
    assert_eq!(count(Operation::ScanNext), 8);
    assert_eq!(metrics.latencies.len(), Operation::ALL.len());
    for latency in &metrics.latencies {
        let bounds: Vec<f64> = latency.buckets.iter().map(|b| b.le_seconds).collect();
        assert_eq!(bounds, LATENCY_BOUNDS_SECONDS);
        // Cumulative, and no request of a test takes ten seconds.
        assert!(latency.buckets.windows(2).all(|w| w[0].count <= w[1].count));
        assert_eq!(latency.buckets.last().unwrap().count, latency.count);
        assert!(latency.count == 0 || latency.sum_micros >= latency.count);
        assert!(latency.p50_micros <= latency.p99_micros);
        assert!(latency.p99_micros <= latency.p999_micros);
    }
}

#[test]
fn server_and_table_metrics_sum_the_regions_open_here() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let db = open(dir.path(), &clock);
    let a = create(&db, "a", &["m"]);
    let b = create(&db, "b", &[]);
    for i in 0..6 {
        a.put(&Put::new(format!("k{i}")).add("f", "q", "v"))
            .unwrap();
    }
    b.put(&Put::new("k").add("f", "q", "v")).unwrap();
    b.get(&Get::new("k")).unwrap();
    clock.advance(30_000);

    let metrics = db.server_metrics();
    assert_eq!(metrics.started_at_ms, T0);
    assert_eq!(metrics.uptime_ms, 30_000);
    assert_eq!((metrics.tables, metrics.regions), (2, 3));
    assert_eq!(metrics.requests.write_requests, 7);
    assert_eq!(metrics.requests.read_requests, 1);
    assert!(metrics.wal.appends >= 7);
    assert!(metrics.wal.bytes_written > 0 && metrics.wal.syncs > 0);
    assert!(metrics.block_cache.capacity_bytes > 0);
    assert!(metrics.memstore.bytes > 0 && metrics.memstore.limit_bytes > 0);
    assert_eq!(metrics.server, None);

    let tables = db.table_metrics();
    let names: Vec<&str> = tables.iter().map(|t| t.table.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!((tables[0].regions, tables[0].regions_here), (2, 2));
    assert_eq!(tables[0].requests.write_requests, 6);
    assert_eq!(tables[1].requests.read_requests, 1);
    assert!(tables[0].memstore_bytes > 0);

    // Both serialise (the info server's JSON).
    let json = serde_json::to_string(&metrics).unwrap();
    assert!(json.contains("\"scan_next\""), "{json}");
    serde_json::to_string(&tables).unwrap();

    // Status carries the server-level section.
    let AdminReply::Status(status) = db.execute(AdminRequest::Status).unwrap() else {
        panic!("not a status");
    };
    assert_eq!(status.uptime_ms, 30_000);
    assert_eq!(status.store_files, 0);
    assert!(status.memstore_bytes > 0);
}

/// The server's and table `t`'s request totals: (reads, writes, bytes written).
fn totals(db: &Database) -> ((u64, u64, u64), (u64, u64, u64)) {
    let server = db.server_metrics().requests;
    let table = db
        .table_metrics()
        .into_iter()
        .find(|t| t.table == "t")
        .map(|t| t.requests)
        .unwrap_or_default();
    (
        (
            server.read_requests,
            server.write_requests,
            server.bytes_written,
        ),
        (
            table.read_requests,
            table.write_requests,
            table.bytes_written,
        ),
    )
}

#[test]
fn request_totals_never_go_down_when_regions_split_merge_move_or_are_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let db = open(dir.path(), &clock);
    let table = create(&db, "t", &[]);
    // (reads, writes, bytes written) done so far.
    let mut done = (0, 0, 0);
    let work = |table: &Table, round: usize, done: &mut (u64, u64, u64)| {
        for i in 0..10 {
            let row = format!("r{i}");
            let value = format!("v{round}");
            table
                .put(&Put::new(row.clone()).add("f", "q", value.clone()))
                .unwrap();
            table.get(&Get::new(row.clone())).unwrap();
            done.0 += 1;
            done.1 += 1;
            done.2 += cell_bytes(&row, "q", &value);
        }
    };
    let mut last = ((0, 0, 0), (0, 0, 0));
    let mut check = |db: &Database, step: &str, done: (u64, u64, u64)| {
        let now = totals(db);
        assert!(
            now.0 >= last.0 && now.1 >= last.1,
            "{step}: went down from {last:?} to {now:?}"
        );
        assert_eq!(now.0, done, "{step}: server");
        assert_eq!(now.1, done, "{step}: table");
        last = now;
    };

    work(&table, 0, &mut done);
    check(&db, "written", done);

    db.split_table("t", Some(b"r5")).unwrap();
    assert_eq!(db.list_regions("t").unwrap().len(), 2);
    check(&db, "split", done);
    work(&table, 1, &mut done);
    check(&db, "written after the split", done);

    let names: Vec<Vec<u8>> = db
        .list_regions("t")
        .unwrap()
        .iter()
        .map(|r| r.info.region_name().to_vec())
        .collect();
    db.merge_regions(&names[0], &names[1]).unwrap();
    assert_eq!(db.list_regions("t").unwrap().len(), 1);
    check(&db, "merged", done);
    work(&table, 2, &mut done);
    check(&db, "written after the merge", done);

    // A region closed for a move (the master then opens it elsewhere).
    let id = only_region(&db, "t").info.id;
    db.region_server().close_for_move(id).unwrap();
    assert_eq!(db.server_metrics().regions, 0);
    check(&db, "moved away", done);

    // Truncation replaces the (here closed) regions with empty ones.
    db.disable_table("t").unwrap();
    db.truncate_table("t").unwrap();
    check(&db, "truncated", done);
    db.enable_table("t").unwrap();
    work(&db.table("t").unwrap(), 3, &mut done);
    check(&db, "written after the truncation", done);

    // The server's totals outlive a dropped table; its series go.
    db.disable_table("t").unwrap();
    db.drop_table("t").unwrap();
    let server = db.server_metrics().requests;
    assert_eq!(
        (
            server.read_requests,
            server.write_requests,
            server.bytes_written
        ),
        done
    );
    assert!(db.table_metrics().is_empty());
}

#[test]
fn a_region_reply_from_an_older_server_still_decodes() {
    let old = r#"{"name":[116],"encoded_name":"e","start_key":[],"end_key":[],
        "store_files":1,"store_file_bytes":2,"memstore_bytes":3,
        "read_requests":4,"write_requests":5}"#;
    let reply: RegionInfoReply = serde_json::from_str(old).unwrap();
    assert_eq!(reply.read_requests, 4);
    assert_eq!(reply.state, "OPEN");
    assert_eq!(reply.compaction_progress, None);
    assert_eq!(reply.requests_per_sec, 0.0);
}

/// Writes `per_minute` rows a minute for `minutes` minutes through the
/// manual clock, row `n` keyed by `key(n)`.
fn write_minutes(
    table: &Table,
    clock: &ManualClock,
    minutes: usize,
    per_minute: usize,
    key: impl Fn(usize) -> String,
) {
    for m in 0..minutes {
        for i in 0..per_minute {
            let n = m * per_minute + i;
            table.put(&Put::new(key(n)).add("f", "q", "v")).unwrap();
            clock.advance(60_000 / per_minute as i64);
        }
    }
}

/// The rows (by index) of the heatmap that minute `t` wrote to.
fn written_rows(map: &metrics::KeyHeatmap, t: usize) -> Vec<usize> {
    (0..map.rows.len())
        .filter(|&r| map.writes[t][r] > 0)
        .collect()
}

#[test]
fn the_heatmap_tells_a_monotonic_workload_from_a_salted_one() {
    let dir = tempfile::tempdir().unwrap();
    // Minutes are clock millis / 60 000: start on a minute.
    let clock = ManualClock::new(T0 - T0 % 60_000);
    let db = open(dir.path(), &clock);
    // Four regions: [, 4) [4, 8) [8, c) [c, ): hex salts spread evenly.
    let mono = create(&db, "mono", &["4", "8", "c"]);
    let salted = create(&db, "salted", &["4", "8", "c"]);
    // Timestamp-like keys: each above the last, all above "c".
    write_minutes(&mono, &clock, 10, 200, |n| {
        format!("t{:012}", T0 + n as i64)
    });
    // The same keys behind a one-hex-digit salt from a hash of the key.
    write_minutes(&salted, &clock, 10, 200, |n| {
        let salt = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60;
        format!("{salt:x}{:012}", T0 + n as i64)
    });

    let map = db
        .key_heatmap("mono", metrics::HeatmapQuery::default())
        .unwrap();
    let last = map.regions.last().unwrap().region.clone();
    let writes: Vec<u64> = map.regions.iter().map(|r| r.writes).collect();
    assert_eq!(writes, [0, 0, 0, 2_000], "every write in the last region");
    assert_eq!(map.minutes.len(), 10);
    assert_eq!(map.metric_names, ["reads", "writes", "bytes"]);
    let flagged = map.rows.iter().filter(|r| r.region_start).count();
    assert_eq!(flagged, 4, "each region start is a row boundary");
    let mut previous_top = 0;
    for t in 0..map.minutes.len() {
        let rows = written_rows(&map, t);
        let (low, high) = (rows[0], *rows.last().unwrap());
        assert_eq!(rows.len(), high - low + 1, "minute {t}: one band {rows:?}");
        assert!(
            high - low <= map.rows.len() / 5,
            "minute {t}: narrow {rows:?}"
        );
        assert!(t == 0 || low >= previous_top, "minute {t}: rising {rows:?}");
        assert!(rows.iter().all(|&r| map.rows[r].region == last));
        assert_eq!(map.writes[t].iter().sum::<u64>(), 200);
        previous_top = high;
    }
    assert!(!map.hottest.is_empty());
    assert!(map.hottest.iter().all(|h| h.writes > 0));

    let map = db
        .key_heatmap("salted", metrics::HeatmapQuery::default())
        .unwrap();
    let even = 2_000.0 / 4.0;
    for region in &map.regions {
        assert!(region.here);
        assert!(
            (region.writes as f64 - even).abs() <= 0.2 * even,
            "{:?}",
            map.regions
        );
    }
    // Every minute writes all over the key space, every region included.
    for t in 0..map.minutes.len() {
        for region in &map.regions {
            let here: u64 = (0..map.rows.len())
                .filter(|&r| map.rows[r].region == region.region)
                .map(|r| map.writes[t][r])
                .sum();
            assert!(here > 0, "minute {t}, region {}", region.region);
        }
        assert_eq!(map.writes[t].iter().sum::<u64>(), 200);
    }

    // The JSON the info server hands on decodes to the same heatmap.
    let json = serde_json::to_string(&map).unwrap();
    let back: metrics::KeyHeatmap = serde_json::from_str(&json).unwrap();
    assert_eq!(back, map);

    // A window of the last three minutes: the clock is at the start of
    // the minute after the last writes, so two of them saw writes.
    let query = metrics::HeatmapQuery {
        minutes: Some(3),
        ..metrics::HeatmapQuery::default()
    };
    let recent = db.key_heatmap("salted", query).unwrap();
    assert_eq!(recent.minutes[..], map.minutes[8..]);
    assert!(db.key_heatmap("nope", query).is_err());
}

#[test]
fn reads_count_in_the_heatmap_where_they_happen_and_the_key_load_can_be_off() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let db = open(dir.path(), &clock);
    let table = create(&db, "t", &["m"]);
    for row in ["a", "b", "x", "y"] {
        table.put(&Put::new(row).add("f", "q", "v")).unwrap();
    }
    for _ in 0..5 {
        table.get(&Get::new("x")).unwrap();
    }
    // A scan counts once per region, where it started.
    assert_eq!(table.scan(&Scan::new()).unwrap().count(), 4);
    let map = db
        .key_heatmap("t", metrics::HeatmapQuery::default())
        .unwrap();
    let reads: Vec<u64> = map.regions.iter().map(|r| r.reads).collect();
    assert_eq!(reads, [1, 6]);
    let bytes: u64 = map.regions.iter().map(|r| r.bytes_read).sum();
    assert_eq!(bytes, 9 * cell_bytes("x", "q", "v"));
    db.close().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let mut options = Options::new(dir.path());
    options.key_load_buckets = 0;
    let db = Database::builder(options)
        .clock(Arc::new(clock.clone()))
        .open()
        .unwrap();
    let table = create(&db, "t", &[]);
    table.put(&Put::new("a").add("f", "q", "v")).unwrap();
    let map = db
        .key_heatmap("t", metrics::HeatmapQuery::default())
        .unwrap();
    assert!(map.minutes.is_empty() && map.hottest.is_empty());
    assert_eq!(map.regions[0].writes, 0);
}

#[test]
fn a_split_keeps_the_key_load_history_of_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0 - T0 % 60_000);
    let db = open(dir.path(), &clock);
    let table = create(&db, "t", &[]);
    write_minutes(&table, &clock, 3, 100, |n| {
        format!(
            "{:02}-{n:05}",
            (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58
        )
    });
    let before = db
        .key_heatmap("t", metrics::HeatmapQuery::default())
        .unwrap();
    assert_eq!(before.regions.len(), 1);
    assert_eq!(before.regions[0].writes, 300);

    db.split_table("t", Some(b"32")).unwrap();
    let after = db
        .key_heatmap("t", metrics::HeatmapQuery::default())
        .unwrap();
    assert_eq!(after.regions.len(), 2);
    assert_eq!(after.minutes, before.minutes);
    let writes: Vec<u64> = after.regions.iter().map(|r| r.writes).collect();
    assert_eq!(writes.iter().sum::<u64>(), 300, "{writes:?}");
    assert!(writes.iter().all(|&w| w > 50), "both daughters: {writes:?}");
}
