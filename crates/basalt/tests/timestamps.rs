//! Server-assigned timestamps: a row's mutations get strictly increasing
//! ones, even when the clock does not move between them; explicit
//! timestamps keep HBase's rules; NEW_VERSION_BEHAVIOR's masking and
//! version counting, before and after flush and major compaction.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use basalt::{ColumnFamilyDescriptor, Delete, Get, Increment, Mutation, Put, Table};
use common::{cells, TestDb};

fn family(versions: u32) -> ColumnFamilyDescriptor {
    ColumnFamilyDescriptor::new("f").max_versions(versions)
}

fn versions(table: &Table, row: &str) -> Vec<String> {
    cells(
        &table
            .get(&Get::new(row.to_string()).max_versions(10))
            .unwrap(),
    )
}

#[test]
fn a_put_after_a_row_delete_in_the_same_millisecond_is_visible() {
    let t = TestDb::new();
    let table = t.table("t", vec![family(3)]);
    table.put(&Put::new("r").add("f", "q", "old")).unwrap();
    table.delete(&Delete::new("r")).unwrap();
    table.put(&Put::new("r").add("f", "q", "new")).unwrap();
    // The clock never moved: the row's server timestamps did instead.
    assert_eq!(versions(&table, "r"), ["f:q=new@1000002"]);
}

#[test]
fn a_put_after_a_column_delete_in_the_same_millisecond_is_visible() {
    let t = TestDb::new();
    let table = t.table("t", vec![family(3)]);
    table.put(&Put::new("r").add("f", "q", "old")).unwrap();
    table.delete(&Delete::new("r").columns("f", "q")).unwrap();
    table.put(&Put::new("r").add("f", "q", "new")).unwrap();
    assert_eq!(versions(&table, "r"), ["f:q=new@1000002"]);
}

#[test]
fn three_puts_in_the_same_millisecond_keep_three_versions() {
    let t = TestDb::new();
    let table = t.table("t", vec![family(3)]);
    for v in ["a", "b", "c"] {
        table.put(&Put::new("r").add("f", "q", v)).unwrap();
    }
    assert_eq!(
        versions(&table, "r"),
        ["f:q=c@1000002", "f:q=b@1000001", "f:q=a@1000000"]
    );
    // They survive a restart (WAL replay) and a flush.
    let mut t = t;
    t.reopen();
    let table = t.db.table("t").unwrap();
    t.db.flush_table("t").unwrap();
    assert_eq!(versions(&table, "r").len(), 3);
}

#[test]
fn a_hot_row_does_not_push_other_rows_timestamps_ahead() {
    let t = TestDb::new();
    let table = t.table("t", vec![family(1)]);
    for i in 0..10_000 {
        table
            .put(&Put::new("hot").add("f", "q", format!("{i}")))
            .unwrap();
    }
    assert_eq!(versions(&table, "hot"), ["f:q=9999@1009999"]);
    table.put(&Put::new("cold").add("f", "q", "x")).unwrap();
    assert_eq!(versions(&table, "cold"), ["f:q=x@1000000"]);
    // Once the clock passes the hot row's timestamps, it follows the clock.
    t.clock.set(1_020_000);
    table.put(&Put::new("hot").add("f", "q", "later")).unwrap();
    assert_eq!(versions(&table, "hot"), ["f:q=later@1020000"]);
}

#[test]
fn mutations_of_a_batch_and_read_modify_writes_follow_the_row_order() {
    let t = TestDb::new();
    let table = t.table("t", vec![family(5)]);
    let results = table.batch(&[
        Mutation::Put(Put::new("r").add("f", "q", "one")),
        Mutation::Put(Put::new("r").add("f", "q", "two")),
    ]);
    assert!(results.iter().all(|r| r.is_ok()));
    assert_eq!(
        versions(&table, "r"),
        ["f:q=two@1000001", "f:q=one@1000000"]
    );
    // An increment is newer than the put before it, a put newer than the
    // increment before it.
    table
        .increment(&Increment::new("c").add("f", "n", 1))
        .unwrap();
    table
        .put(&Put::new("c").add("f", "n", 7i64.to_be_bytes().to_vec()))
        .unwrap();
    table
        .increment(&Increment::new("c").add("f", "n", 1))
        .unwrap();
    let newest = table.get(&Get::new("c")).unwrap();
    assert_eq!(newest.cells[0].value[..], 8i64.to_be_bytes());
    assert_eq!(newest.cells[0].timestamp, 1_000_002);
}

#[test]
fn explicit_timestamps_keep_hbases_rules() {
    let t = TestDb::new();
    let table = t.table("t", vec![family(3)]);
    // A delete marker at T masks a put at T written after it.
    table
        .delete(&Delete::new("r").column_at("f", "q", 500))
        .unwrap();
    table
        .put(&Put::new("r").add_at("f", "q", 500, "masked"))
        .unwrap();
    assert!(versions(&table, "r").is_empty());
    // Two puts at the same explicit timestamp are one version: the later wins.
    table
        .put(&Put::new("s").add_at("f", "q", 7, "first"))
        .unwrap();
    table
        .put(&Put::new("s").add_at("f", "q", 7, "second"))
        .unwrap();
    assert_eq!(versions(&table, "s"), ["f:q=second@7"]);
    // Explicit timestamps do not move the row's server timestamps.
    table
        .put(&Put::new("s").add_at("f", "q", 5_000_000, "future"))
        .unwrap();
    table.put(&Put::new("s").add("f", "q", "now")).unwrap();
    assert_eq!(
        versions(&table, "s"),
        ["f:q=future@5000000", "f:q=now@1000000", "f:q=second@7"]
    );
}

/// A family with NEW_VERSION_BEHAVIOR set through its HBase option name.
fn new_behavior(versions: u32) -> ColumnFamilyDescriptor {
    let mut f = family(versions);
    f.set_option("NEW_VERSION_BEHAVIOR", "true").unwrap();
    assert!(f.new_version_behavior);
    f
}

/// A put at 50, column delete at 200, family delete at 300, then (later)
/// puts at 100 and 300: NEW_VERSION_BEHAVIOR shows the later puts and hides
/// the one before the deletes; HBase's classic rules hide all three.
fn delete_then_older_put(table: &Table) {
    table
        .put(&Put::new("r").add_at("f", "q", 50, "before"))
        .unwrap();
    table
        .delete(&Delete::new("r").columns_at("f", "q", 200))
        .unwrap();
    table.delete(&Delete::new("r").family_at("f", 300)).unwrap();
    table
        .put(&Put::new("r").add_at("f", "q", 100, "after"))
        .unwrap();
    table
        .put(&Put::new("r").add_at("f", "p", 300, "after-family"))
        .unwrap();
}

#[test]
fn new_version_behavior_shows_a_put_written_after_a_delete_with_an_older_timestamp() {
    let t = TestDb::new();
    let classic = t.table("classic", vec![family(3)]);
    let newer = t.table("newer", vec![new_behavior(3)]);
    delete_then_older_put(&classic);
    delete_then_older_put(&newer);
    let want = ["f:p=after-family@300", "f:q=after@100"];
    assert!(versions(&classic, "r").is_empty());
    assert_eq!(versions(&newer, "r"), want);

    // The same after a restart (sequence ids come back from the WAL)...
    let mut t = t;
    t.reopen();
    let (classic, newer) = (t.db.table("classic").unwrap(), t.db.table("newer").unwrap());
    assert!(versions(&classic, "r").is_empty());
    assert_eq!(versions(&newer, "r"), want);
    // ...after a flush (store files keep them)...
    t.db.flush_table("newer").unwrap();
    t.db.flush_table("classic").unwrap();
    assert!(versions(&classic, "r").is_empty());
    assert_eq!(versions(&newer, "r"), want);
    // ...and a major compaction keeps exactly what reads return.
    t.db.compact_table("newer", true).unwrap();
    t.db.compact_table("classic", true).unwrap();
    assert!(versions(&classic, "r").is_empty());
    assert_eq!(versions(&newer, "r"), want);
}

#[test]
fn new_version_behavior_does_not_bring_back_a_version_beyond_versions() {
    let t = TestDb::new();
    let classic = t.table("classic", vec![family(1)]);
    let newer = t.table("newer", vec![new_behavior(1)]);
    for table in [&classic, &newer] {
        table.put(&Put::new("r").add_at("f", "q", 1, "v1")).unwrap();
        table.put(&Put::new("r").add_at("f", "q", 2, "v2")).unwrap();
        table
            .delete(&Delete::new("r").column_at("f", "q", 2))
            .unwrap();
    }
    // Classic rules count versions after deletes: v1 shows again.
    assert_eq!(versions(&classic, "r"), ["f:q=v1@1"]);
    // With the option, v1 was beyond VERSIONS before the delete: gone.
    assert!(versions(&newer, "r").is_empty());
    t.db.flush_table("newer").unwrap();
    t.db.compact_table("newer", true).unwrap();
    assert!(versions(&newer, "r").is_empty());
    // A put written after the delete at the deleted timestamp is visible.
    newer
        .put(&Put::new("r").add_at("f", "q", 2, "again"))
        .unwrap();
    assert_eq!(versions(&newer, "r"), ["f:q=again@2"]);
}

#[test]
fn new_version_behavior_is_an_option_of_describe_and_alter() {
    let t = TestDb::new();
    t.table("t", vec![family(1)]);
    let info = t.db.describe_table("t").unwrap();
    let f = &info.descriptor.families()[0];
    assert!(!f.new_version_behavior);
    assert!(!f
        .options()
        .iter()
        .any(|(k, _)| *k == "NEW_VERSION_BEHAVIOR"));
    let f = new_behavior(1);
    assert!(f
        .options()
        .contains(&("NEW_VERSION_BEHAVIOR", "true".to_string())));
}

/// HBase's `NewVersionBehaviorTracker` counts a read's versions itself,
/// before the filter, where the classic trackers count what the filter lets
/// through: with NEW_VERSION_BEHAVIOR a newest version the filter drops
/// still takes the read's one version, so an older one that passes is not
/// returned (found by the differential campaign against HBase 2.6.4).
#[test]
fn new_version_behavior_counts_a_reads_versions_before_its_filter() {
    let t = TestDb::new();
    let classic = t.table("classic", vec![family(3)]);
    let newer = t.table("newer", vec![new_behavior(3)]);
    let filter = || basalt::Filter::parse("ValueFilter(!=, 'binary:v3')").unwrap();
    for table in [&classic, &newer] {
        table
            .put(&Put::new("r").add_at("f", "q", 55, "v34"))
            .unwrap();
        table
            .put(&Put::new("r").add_at("f", "q", 57, "v3"))
            .unwrap();
    }
    let newest_passing = |table: &Table| {
        cells(
            &table
                .get(&Get::new("r").max_versions(1).filter(filter()))
                .unwrap(),
        )
    };
    assert_eq!(newest_passing(&classic), ["f:q=v34@55"]);
    assert!(newest_passing(&newer).is_empty());
    // Scans (the other read path) and two versions agree.
    let scanned = |table: &Table, versions: u32| -> Vec<String> {
        table
            .scan(&basalt::Scan::new().max_versions(versions).filter(filter()))
            .unwrap()
            .flat_map(|row| cells(&row.unwrap()))
            .collect()
    };
    assert!(scanned(&newer, 1).is_empty());
    assert_eq!(scanned(&newer, 2), ["f:q=v34@55"]);
    assert_eq!(scanned(&classic, 1), ["f:q=v34@55"]);
    // And the same from store files.
    t.db.flush_table("newer").unwrap();
    assert!(newest_passing(&newer).is_empty());
}
