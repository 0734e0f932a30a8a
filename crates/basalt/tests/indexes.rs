//! Secondary indexes through the embedded API (issue 36): every kind of
//! write keeps them equal to a rebuild from the data, reads by an index
//! answer data rows in index order, and the read path repairs what an
//! interrupted write left.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use basalt::index_types::{index_table_name, INDEX_FAMILY, UNVERIFIED, VERIFIED_QUALIFIER};
use basalt::*;
use common::{index_and_rebuild, TestDb};

/// The seeds' orders table: `o:buyer`, `o:seller`, `o:ts`, `o:total`.
fn orders(t: &TestDb) -> Table {
    t.table("orders", vec![ColumnFamilyDescriptor::new("o")])
}

fn order(id: &str, buyer: &str, seller: &str, ts: &str, total: &str) -> Put {
    Put::new(id.to_string())
        .add("o", "buyer", buyer.to_string())
        .add("o", "seller", seller.to_string())
        .add("o", "ts", ts.to_string())
        .add("o", "total", total.to_string())
}

fn by_buyer() -> IndexDescriptor {
    IndexDescriptor::new(
        "by_buyer",
        vec![
            IndexColumn::new("o", "buyer"),
            IndexColumn::new("o", "ts").transform(IndexTransform::Reversed),
        ],
    )
    .cover("o", "total")
}

fn assert_consistent(t: &TestDb, index: &str) {
    let (actual, rebuilt) = index_and_rebuild(&t.db, "orders", index);
    assert_eq!(actual, rebuilt, "index {index} differs from its rebuild");
}

/// The data rows an index read returns, by row key.
fn read_by(t: &TestDb, index: &str, scan: &Scan) -> Vec<String> {
    t.db.scan_index("orders", index, scan)
        .unwrap()
        .map(|r| String::from_utf8_lossy(&r.unwrap().row).into_owned())
        .collect()
}

fn equal_to(t: &TestDb, index: &str, values: &[&str]) -> Scan {
    let descriptor =
        t.db.table("orders")
            .unwrap()
            .descriptor()
            .get_index(index)
            .cloned()
            .unwrap();
    let values: Vec<&[u8]> = values.iter().map(|v| v.as_bytes()).collect();
    Scan::new().prefix(descriptor.equal_prefix(&values).unwrap())
}

#[test]
fn an_index_created_on_rows_is_backfilled_and_read_in_index_order() {
    let t = TestDb::new();
    let table = orders(&t);
    table
        .put(&order("o1", "alice", "s1", "2024-01", "10"))
        .unwrap();
    table
        .put(&order("o2", "bob", "s1", "2024-02", "20"))
        .unwrap();
    table
        .put(&order("o3", "alice", "s2", "2024-03", "30"))
        .unwrap();
    table.put(&Put::new("o4").add("o", "seller", "s3")).unwrap();
    assert_eq!(t.db.create_index("orders", by_buyer()).unwrap(), 3);
    assert_consistent(&t, "by_buyer");
    // Newest order first: `o:ts` is reversed.
    assert_eq!(
        read_by(&t, "by_buyer", &equal_to(&t, "by_buyer", &["alice"])),
        ["o3", "o1"]
    );
    assert_eq!(read_by(&t, "by_buyer", &Scan::new()), ["o3", "o1", "o2"]);
    assert_eq!(
        read_by(&t, "by_buyer", &Scan::new().reversed(true)),
        ["o2", "o1", "o3"]
    );
    assert_eq!(read_by(&t, "by_buyer", &Scan::new().limit(2)), ["o3", "o1"]);
    let described = t.db.describe_table("orders").unwrap();
    assert_eq!(described.descriptor.indexes()[0].state, IndexState::Active);
}

#[test]
fn every_kind_of_write_keeps_the_index_equal_to_its_rebuild() {
    let t = TestDb::new();
    let table = orders(&t);
    t.db.create_index("orders", by_buyer()).unwrap();
    table.put(&order("o1", "alice", "s1", "1", "10")).unwrap();
    assert_consistent(&t, "by_buyer");
    // The indexed value changes: the old entry goes.
    table
        .put(&Put::new("o1").add("o", "buyer", "carol"))
        .unwrap();
    assert_consistent(&t, "by_buyer");
    // A covered column changes alone.
    table.put(&Put::new("o1").add("o", "total", "11")).unwrap();
    assert_consistent(&t, "by_buyer");
    // A covered column deleted: the index row loses it.
    table
        .delete(&Delete::new("o1").columns("o", "total"))
        .unwrap();
    assert_consistent(&t, "by_buyer");
    // Deleting the latest version brings the previous buyer back.
    table
        .delete(&Delete::new("o1").column("o", "buyer"))
        .unwrap();
    assert_consistent(&t, "by_buyer");
    assert_eq!(read_by(&t, "by_buyer", &Scan::new()), ["o1"]);
    // Appends, increments, row mutations, checks and batches.
    table
        .append(&Append::new("o1").add("o", "buyer", "-x"))
        .unwrap();
    assert_consistent(&t, "by_buyer");
    table
        .put(&Put::new("o1").add("o", "ts", 7i64.to_be_bytes().to_vec()))
        .unwrap();
    table
        .increment(&Increment::new("o1").add("o", "ts", 1))
        .unwrap();
    assert_consistent(&t, "by_buyer");
    let both = RowMutations::new("o1")
        .add(Put::new("o1").add("o", "buyer", "dave"))
        .unwrap()
        .add(Delete::new("o1").columns("o", "ts"))
        .unwrap();
    table.mutate_row(&both).unwrap();
    assert_consistent(&t, "by_buyer");
    let applied = table
        .check_and_mutate(
            &CheckAndMutate::new("o1", "o", "buyer")
                .if_equals("dave")
                .then(Put::new("o1").add("o", "buyer", "erin"))
                .unwrap(),
        )
        .unwrap();
    assert!(applied);
    assert_consistent(&t, "by_buyer");
    let results = table.batch(&[
        Mutation::Put(order("o2", "alice", "s1", "5", "1")),
        Mutation::Put(Put::new("o2").add("o", "buyer", "frank")),
        Mutation::Delete(Delete::new("o1")),
        Mutation::Put(order("o3", "gina", "s2", "6", "2")),
    ]);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_consistent(&t, "by_buyer");
    assert_eq!(read_by(&t, "by_buyer", &Scan::new()), ["o2", "o3"]);
    // Client timestamps below the row's newest: the newest value stays.
    table
        .put(&Put::new("o3").add_at("o", "buyer", 5, "older"))
        .unwrap();
    assert_consistent(&t, "by_buyer");
    // A whole-row delete at a timestamp: only older cells go.
    table.delete(&Delete::with_timestamp("o3", 5)).unwrap();
    assert_consistent(&t, "by_buyer");
}

#[test]
fn writes_to_columns_no_index_reads_leave_the_index_alone() {
    let t = TestDb::new();
    let table = orders(&t);
    t.db.create_index("orders", by_buyer()).unwrap();
    table.put(&order("o1", "alice", "s1", "1", "10")).unwrap();
    let index_table = t.db.table(&index_table_name("orders", "by_buyer")).unwrap();
    let before = common::dump(&index_table);
    table.put(&Put::new("o1").add("o", "seller", "s9")).unwrap();
    assert_eq!(common::dump(&index_table), before);
}

#[test]
fn reads_verify_a_current_unverified_entry_and_remove_a_stale_one() {
    let t = TestDb::new();
    let table = orders(&t);
    t.db.create_index("orders", by_buyer()).unwrap();
    table.put(&order("o1", "alice", "s1", "1", "10")).unwrap();
    let descriptor = table.descriptor().get_index("by_buyer").cloned().unwrap();
    let index_table = t.db.table(&index_table_name("orders", "by_buyer")).unwrap();
    // What a crash after step 2 leaves: the current entry unverified, and
    // the entry of a write that never committed.
    let current = descriptor
        .key(&[Some(b"alice"), Some(b"1")], b"o1")
        .unwrap();
    let stale = descriptor.key(&[Some(b"zed"), Some(b"9")], b"o1").unwrap();
    for key in [&current, &stale] {
        index_table
            .put(&Put::new(key.clone()).add_at(
                INDEX_FAMILY,
                VERIFIED_QUALIFIER,
                2_000_000,
                UNVERIFIED,
            ))
            .unwrap();
    }
    let mut scanner = t.db.scan_index("orders", "by_buyer", &Scan::new()).unwrap();
    let rows: Vec<_> = scanner.by_ref().map(|r| r.unwrap().row).collect();
    assert_eq!(rows, [&b"o1"[..]]);
    let stats = scanner.stats();
    assert_eq!((stats.entries, stats.verified, stats.removed), (2, 1, 1));
    assert_consistent(&t, "by_buyer");
}

#[test]
fn indexes_survive_a_reopen_and_a_split_and_go_with_their_table() {
    let mut t = TestDb::new();
    let table = orders(&t);
    t.db.create_index("orders", by_buyer()).unwrap();
    for i in 0..20 {
        table
            .put(&order(
                &format!("o{i:02}"),
                &format!("b{}", i % 3),
                "s",
                &i.to_string(),
                "1",
            ))
            .unwrap();
    }
    t.reopen();
    let table = t.db.table("orders").unwrap();
    table
        .put(&Put::new("o05").add("o", "buyer", "moved"))
        .unwrap();
    assert_consistent(&t, "by_buyer");
    t.db.split_table("orders", Some(b"o10")).unwrap();
    table
        .put(&Put::new("o15").add("o", "buyer", "moved"))
        .unwrap();
    table
        .put(&Put::new("o01").add("o", "buyer", "moved"))
        .unwrap();
    assert_consistent(&t, "by_buyer");
    assert_eq!(
        read_by(&t, "by_buyer", &equal_to(&t, "by_buyer", &["moved"])),
        // Reversed text order of `o:ts`: "5", "15", "1".
        ["o05", "o15", "o01"]
    );
    // A family an index reads cannot be deleted under it.
    let refused =
        t.db.alter_table("orders", &[FamilyChange::Delete("o".into())])
            .unwrap_err();
    assert!(
        refused.to_string().contains("read by index 'by_buyer'"),
        "{refused}"
    );
    t.db.drop_index("orders", "by_buyer").unwrap();
    assert!(!t.db.table_exists(&index_table_name("orders", "by_buyer")));
    table
        .put(&Put::new("o02").add("o", "buyer", "after the drop"))
        .unwrap();
    t.db.create_index("orders", by_buyer()).unwrap();
    assert_consistent(&t, "by_buyer");
    t.db.disable_table("orders").unwrap();
    t.db.drop_table("orders").unwrap();
    assert!(!t.db.table_exists(&index_table_name("orders", "by_buyer")));
}

#[test]
fn bad_index_definitions_are_refused_with_the_reason() {
    let t = TestDb::new();
    orders(&t);
    for (index, expected) in [
        (
            IndexDescriptor::new("x", vec![IndexColumn::new("nope", "a")]),
            "does not have",
        ),
        (
            IndexDescriptor::new("bad.name", vec![IndexColumn::new("o", "a")]),
            "holds '.'",
        ),
        (IndexDescriptor::new("x", vec![]), "names no column"),
    ] {
        let e = t.db.create_index("orders", index).unwrap_err().to_string();
        assert!(e.contains(expected), "{e}");
    }
    let e =
        t.db.scan_index("orders", "missing", &Scan::new())
            .unwrap_err()
            .to_string();
    assert!(e.contains("no index named 'missing'"), "{e}");
    t.db.create_index("orders", by_buyer()).unwrap();
    let other = IndexDescriptor::new("by_buyer", vec![IndexColumn::new("o", "seller")]);
    let e = t.db.create_index("orders", other).unwrap_err().to_string();
    assert!(e.contains("on other columns"), "{e}");
    // The same definition again is a resumed build: nothing to do.
    assert_eq!(t.db.create_index("orders", by_buyer()).unwrap(), 0);
}

#[test]
fn a_restored_table_gets_its_indexes_rebuilt_at_enable_and_a_clone_gets_none() {
    let t = TestDb::new();
    let table = orders(&t);
    t.db.create_index("orders", by_buyer()).unwrap();
    table.put(&order("o1", "alice", "s1", "1", "10")).unwrap();
    t.db.snapshot("orders", "before", false, 0).unwrap();
    table.put(&Put::new("o1").add("o", "buyer", "bob")).unwrap();
    table.put(&order("o2", "carol", "s1", "2", "20")).unwrap();
    t.db.disable_table("orders").unwrap();
    t.db.restore_snapshot("before").unwrap();
    let building = t.db.describe_table("orders").unwrap().descriptor;
    assert_eq!(building.indexes()[0].state, IndexState::Building);
    t.db.enable_table("orders").unwrap();
    assert_consistent(&t, "by_buyer");
    assert_eq!(read_by(&t, "by_buyer", &Scan::new()), ["o1"]);
    let report = t.db.check_index("orders", "by_buyer", false).unwrap();
    assert!(report.equals_rebuild(), "{report:?}");
    t.db.clone_snapshot("before", "orders_copy").unwrap();
    let copy = t.db.describe_table("orders_copy").unwrap().descriptor;
    assert!(copy.indexes().is_empty());
}

#[test]
fn the_check_finds_what_a_crash_left_and_its_repair_settles_it() {
    let t = TestDb::new();
    let table = orders(&t);
    t.db.create_index("orders", by_buyer()).unwrap();
    table.put(&order("o1", "alice", "s1", "1", "10")).unwrap();
    let descriptor = table.descriptor().get_index("by_buyer").cloned().unwrap();
    let index_table = t.db.table(&index_table_name("orders", "by_buyer")).unwrap();
    let stale = descriptor.key(&[Some(b"zed"), Some(b"9")], b"o1").unwrap();
    index_table
        .put(&Put::new(stale.clone()).add_at(
            INDEX_FAMILY,
            VERIFIED_QUALIFIER,
            2_000_000,
            UNVERIFIED,
        ))
        .unwrap();
    let report = t.db.check_index("orders", "by_buyer", false).unwrap();
    assert!(
        report.is_consistent() && !report.equals_rebuild(),
        "{report:?}"
    );
    assert_eq!(report.unverified_stale, std::slice::from_ref(&stale));
    let repaired = t.db.check_index("orders", "by_buyer", true).unwrap();
    assert_eq!(repaired.unverified_stale, [stale]);
    let after = t.db.check_index("orders", "by_buyer", false).unwrap();
    assert!(after.equals_rebuild(), "{after:?}");
    // A verified row naming a value the data does not hold is the broken
    // invariant the check exists to find.
    let wrong = descriptor.key(&[Some(b"yan"), Some(b"9")], b"o1").unwrap();
    index_table
        .put(&Put::new(wrong.clone()).add(INDEX_FAMILY, VERIFIED_QUALIFIER, &b"\x01"[..]))
        .unwrap();
    let broken = t.db.check_index("orders", "by_buyer", false).unwrap();
    assert_eq!(broken.stale_verified, [wrong]);
}

#[test]
fn a_repair_rewrites_the_covered_cells_a_failed_write_left_on_a_current_key() {
    // Found by the model's fault run: a write failed after its pre-write,
    // leaving its covered value on the row's current key; verifying the
    // flag alone kept that value.
    let t = TestDb::new();
    let table = orders(&t);
    t.db.create_index("orders", by_buyer()).unwrap();
    table.put(&order("o1", "alice", "s1", "1", "10")).unwrap();
    let descriptor = table.descriptor().get_index("by_buyer").cloned().unwrap();
    let index_table = t.db.table(&index_table_name("orders", "by_buyer")).unwrap();
    let current = descriptor
        .key(&[Some(b"alice"), Some(b"1")], b"o1")
        .unwrap();
    index_table
        .put(
            &Put::new(current)
                .add_at(INDEX_FAMILY, VERIFIED_QUALIFIER, 2_000_000, UNVERIFIED)
                .add_at(INDEX_FAMILY, "o:total", 2_000_000, "999"),
        )
        .unwrap();
    assert_eq!(read_by(&t, "by_buyer", &Scan::new()), ["o1"]);
    assert_consistent(&t, "by_buyer");
}
