//! Pre-split tables: region boundaries, routing of every operation to the
//! owning region, scans crossing region boundaries in both directions, and
//! per-region load counters that show where the writes go.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::hash::{Hash, Hasher};

use basalt::*;
use bytes::Bytes;
use common::{rows, TestDb};

fn keys(list: &[&str]) -> Vec<Bytes> {
    list.iter()
        .map(|k| Bytes::copy_from_slice(k.as_bytes()))
        .collect()
}

fn presplit(t: &TestDb, name: &str, splits: &[&str]) -> Table {
    t.db.create_table_with_splits(
        TableDescriptor::new(name).family(ColumnFamilyDescriptor::new("f")),
        &keys(splits),
    )
    .unwrap();
    t.db.table(name).unwrap()
}

fn writes_per_region(db: &Database, table: &str) -> Vec<u64> {
    db.describe_table(table)
        .unwrap()
        .regions
        .iter()
        .map(|r| r.load.write_requests)
        .collect()
}

#[test]
fn split_keys_define_the_regions() {
    let t = TestDb::new();
    presplit(&t, "t", &["g", "n", "t"]);
    let regions = t.db.describe_table("t").unwrap().regions;
    let bounds: Vec<(String, String)> = regions
        .iter()
        .map(|r| {
            (
                String::from_utf8_lossy(&r.info.start_key).into_owned(),
                String::from_utf8_lossy(&r.info.end_key).into_owned(),
            )
        })
        .collect();
    assert_eq!(
        bounds,
        [
            ("".into(), "g".into()),
            ("g".into(), "n".into()),
            ("n".into(), "t".into()),
            ("t".into(), "".into())
        ]
    );
    let ids: std::collections::BTreeSet<u64> = regions.iter().map(|r| r.info.id).collect();
    assert_eq!(ids.len(), 4, "every region has its own id");

    t.db.create_table_presplit(
        TableDescriptor::new("hex").family(ColumnFamilyDescriptor::new("f")),
        4,
        SplitAlgorithm::HexString,
    )
    .unwrap();
    let starts: Vec<String> =
        t.db.describe_table("hex")
            .unwrap()
            .regions
            .iter()
            .map(|r| String::from_utf8_lossy(&r.info.start_key).into_owned())
            .collect();
    assert_eq!(starts, ["", "40000000", "80000000", "c0000000"]);
}

#[test]
fn bad_split_keys_are_clear_errors() {
    let t = TestDb::new();
    let desc = || TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f"));
    let unsorted =
        t.db.create_table_with_splits(desc(), &keys(&["m", "c"]))
            .unwrap_err();
    assert!(
        unsorted.to_string().contains("must be sorted"),
        "{unsorted}"
    );
    let duplicate =
        t.db.create_table_with_splits(desc(), &keys(&["c", "c"]))
            .unwrap_err();
    assert!(
        duplicate.to_string().contains("duplicate split key"),
        "{duplicate}"
    );
    let empty =
        t.db.create_table_with_splits(desc(), &[Bytes::new()])
            .unwrap_err();
    assert!(empty.to_string().contains("empty"), "{empty}");
    assert!(!t.db.table_exists("t"), "nothing created");
}

#[test]
fn every_operation_reaches_the_owning_region_and_scans_cross_boundaries() {
    let mut t = TestDb::new();
    let table = presplit(&t, "t", &["c", "f", "i"]);
    let names: Vec<String> = (b'a'..=b'k')
        .map(|c| format!("{}{}", c as char, 1))
        .collect();
    for name in &names {
        table
            .put(&Put::new(name.clone()).add("f", "x", "1").add("f", "y", "2"))
            .unwrap();
    }
    table.increment_column("j1", "f", "n", 3).unwrap();
    table.append(&Append::new("e1").add("f", "x", "+")).unwrap();
    assert!(table
        .check_and_mutate(
            &CheckAndMutate::new("h1", "f", "x")
                .if_equals("1")
                .then(Delete::new("h1"))
                .unwrap()
        )
        .unwrap());
    assert_eq!(writes_per_region(&t.db, "t").iter().sum::<u64>(), 11 + 3);

    let everything: Vec<String> = names.iter().filter(|n| *n != "h1").cloned().collect();
    assert_eq!(rows(table.scan(&Scan::new()).unwrap()), everything);
    let mut reversed = everything.clone();
    reversed.reverse();
    assert_eq!(
        rows(table.scan(&Scan::new().reversed(true)).unwrap()),
        reversed
    );
    assert_eq!(
        rows(
            table
                .scan(&Scan::new().start_row("b").stop_row("g"))
                .unwrap()
        ),
        ["b1", "c1", "d1", "e1", "f1"]
    );
    assert_eq!(
        rows(
            table
                .scan(&Scan::new().reversed(true).start_row("g").stop_row("b"))
                .unwrap()
        ),
        ["f1", "e1", "d1", "c1", "b1"]
    );
    assert_eq!(
        rows(table.scan(&Scan::new().start_row("c").limit(5)).unwrap()),
        ["c1", "d1", "e1", "f1", "g1"]
    );
    assert_eq!(
        rows(
            table
                .scan(&Scan::new().reversed(true).start_row("i1").limit(3))
                .unwrap()
        ),
        ["i1", "g1", "f1"]
    );
    // One filter state across regions: PageFilter counts rows of all regions.
    let page = Scan::new().filter(Filter::parse("PageFilter(4)").unwrap());
    assert_eq!(rows(table.scan(&page).unwrap()), ["a1", "b1", "c1", "d1"]);
    let batches: Vec<usize> = table
        .scan(&Scan::new().batch(1).start_row("e").stop_row("g"))
        .unwrap()
        .map(|r| r.unwrap().cells.len())
        .collect();
    assert_eq!(batches, [1, 1, 1, 1]);

    // Regions and data survive a restart.
    t.reopen();
    let table = t.db.table("t").unwrap();
    assert_eq!(t.db.describe_table("t").unwrap().regions.len(), 4);
    assert_eq!(rows(table.scan(&Scan::new()).unwrap()), everything);
    assert_eq!(table.increment_column("j1", "f", "n", 0).unwrap(), 3);

    // Truncate keeps the boundaries.
    t.db.disable_table("t").unwrap();
    t.db.truncate_table("t").unwrap();
    t.db.enable_table("t").unwrap();
    assert_eq!(t.db.describe_table("t").unwrap().regions.len(), 4);
    assert!(rows(table.scan(&Scan::new()).unwrap()).is_empty());
}

#[test]
fn monotonic_keys_hotspot_the_last_region_and_salting_spreads_them() {
    let t = TestDb::new();
    // A table pre-split on last year's timestamps; new rows keyed by the
    // current, ever-increasing timestamp all sort after the last split.
    let splits: Vec<String> = (1..8)
        .map(|i| format!("{}", 1_700_000_000_000u64 + i * 1_000_000_000))
        .collect();
    let split_refs: Vec<&str> = splits.iter().map(String::as_str).collect();
    let table = presplit(&t, "events", &split_refs);
    for i in 0..4000u64 {
        let key = format!("{}", 1_795_000_000_000u64 + i);
        table.put(&Put::new(key).add("f", "e", "x")).unwrap();
    }
    let writes = writes_per_region(&t.db, "events");
    println!("monotonic keys, writes per region: {writes:?}");
    assert_eq!(
        writes[..7].iter().sum::<u64>(),
        0,
        "no region but the last gets a write"
    );
    assert_eq!(writes[7], 4000);

    // Salting: prefix each key with bucket = hash(key) % 8 on a table split
    // at the bucket boundaries.
    let table = presplit(&t, "salted", &["1", "2", "3", "4", "5", "6", "7"]);
    for i in 0..8000u64 {
        let key = format!("{}", 1_795_000_000_000u64 + i);
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut hasher);
        let bucket = hasher.finish() % 8;
        table
            .put(&Put::new(format!("{bucket}-{key}")).add("f", "e", "x"))
            .unwrap();
    }
    let writes = writes_per_region(&t.db, "salted");
    println!("salted keys, writes per region: {writes:?}");
    let even = 8000.0 / 8.0;
    for (region, &w) in writes.iter().enumerate() {
        let off = (w as f64 - even).abs() / even;
        assert!(
            off <= 0.2,
            "region {region} got {w} writes, {:.0}% off even",
            off * 100.0
        );
    }
    // Reading a salted time range back costs one scan per bucket.
    let mut found = 0;
    for bucket in 0..8 {
        let prefix = format!("{bucket}-179500000");
        found += table.scan(&Scan::new().prefix(prefix)).unwrap().count();
    }
    assert_eq!(found, 8000);
}
