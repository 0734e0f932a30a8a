//! Table administration through the embedded API: create, list, describe,
//! alter, enable/disable, truncate, drop, and the data-directory lock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use basalt::*;
use common::{cells, TestDb};

fn cf(name: &str) -> ColumnFamilyDescriptor {
    ColumnFamilyDescriptor::new(name)
}

#[test]
fn create_list_describe() {
    let t = TestDb::new();
    t.db.create_table(TableDescriptor::new("b").family(cf("x")))
        .unwrap();
    t.db.create_table(
        TableDescriptor::new("a")
            .family(cf("z").max_versions(7))
            .family(cf("y")),
    )
    .unwrap();
    assert_eq!(t.db.list_tables(), ["a", "b"]);
    assert!(t.db.table_exists("a") && !t.db.table_exists("c"));
    let info = t.db.describe_table("a").unwrap();
    let names: Vec<&str> = info
        .descriptor
        .families()
        .iter()
        .map(|f| f.name())
        .collect();
    assert_eq!(names, ["y", "z"], "families sorted by name");
    assert_eq!(info.descriptor.get_family(b"z").unwrap().max_versions, 7);
    assert!(info.enabled);
    assert_eq!(info.regions.len(), 1);
    assert!(info.regions[0].info.start_key.is_empty() && info.regions[0].info.end_key.is_empty());
}

#[test]
fn creation_errors_are_clear() {
    let t = TestDb::new();
    t.db.create_table(TableDescriptor::new("t").family(cf("f")))
        .unwrap();
    let exists =
        t.db.create_table(TableDescriptor::new("t").family(cf("f")))
            .unwrap_err();
    assert!(matches!(exists, Error::TableExists(_)), "{exists}");
    let cases = [
        (TableDescriptor::new("empty"), "at least one column family"),
        (
            TableDescriptor::new("dup").family(cf("f")).family(cf("f")),
            "duplicate column family",
        ),
        (
            TableDescriptor::new("bad name!").family(cf("f")),
            "illegal character",
        ),
        (
            TableDescriptor::new("t2").family(cf("a:b")),
            "must be printable",
        ),
        (
            TableDescriptor::new("t3").family(cf("f").max_versions(0)),
            "VERSIONS must be at least 1",
        ),
    ];
    for (desc, expected) in cases {
        let err = t.db.create_table(desc).unwrap_err().to_string();
        assert!(err.contains(expected), "{err} should mention {expected}");
    }
    assert!(matches!(
        t.db.table("missing").unwrap_err(),
        Error::TableNotFound(_)
    ));
}

#[test]
fn disable_enable_drop_truncate() {
    let t = TestDb::new();
    let table = t.table("t", vec![cf("f")]);
    table.put(&Put::new("r").add("f", "q", "v")).unwrap();

    assert!(
        matches!(t.db.drop_table("t").unwrap_err(), Error::TableEnabled(_)),
        "drop needs disable"
    );
    t.db.disable_table("t").unwrap();
    assert!(!t.db.is_table_enabled("t").unwrap());
    assert!(matches!(
        table.get(&Get::new("r")).unwrap_err(),
        Error::TableDisabled(_)
    ));
    assert!(matches!(
        table.put(&Put::new("r").add("f", "q", "v")).unwrap_err(),
        Error::TableDisabled(_)
    ));
    assert!(t.db.disable_table("t").is_err(), "already disabled");

    t.db.truncate_table("t").unwrap();
    t.db.enable_table("t").unwrap();
    assert!(
        table.get(&Get::new("r")).unwrap().is_empty(),
        "truncate empties the table"
    );
    table.put(&Put::new("r2").add("f", "q", "after")).unwrap();

    t.db.disable_table("t").unwrap();
    t.db.drop_table("t").unwrap();
    assert!(!t.db.table_exists("t"));
    assert!(matches!(
        table.get(&Get::new("r2")).unwrap_err(),
        Error::TableNotFound(_)
    ));
    // The name is free again, and nothing of the old table comes back.
    let again = t.table("t", vec![cf("f")]);
    assert!(again.get(&Get::new("r2")).unwrap().is_empty());
}

#[test]
fn truncated_and_dropped_data_stays_gone_after_reopen() {
    let mut t = TestDb::new();
    let table = t.table("keep", vec![cf("f")]);
    let gone = t.table("gone", vec![cf("f")]);
    let emptied = t.table("emptied", vec![cf("f")]);
    table.put(&Put::new("r").add("f", "q", "kept")).unwrap();
    gone.put(&Put::new("r").add("f", "q", "x")).unwrap();
    emptied.put(&Put::new("r").add("f", "q", "x")).unwrap();
    t.db.disable_table("gone").unwrap();
    t.db.drop_table("gone").unwrap();
    t.db.disable_table("emptied").unwrap();
    t.db.truncate_table("emptied").unwrap();
    t.db.enable_table("emptied").unwrap();
    t.db.create_table(TableDescriptor::new("gone").family(cf("f")))
        .unwrap();

    t.reopen();
    assert_eq!(t.db.list_tables(), ["emptied", "gone", "keep"]);
    assert_eq!(
        cells(&t.db.table("keep").unwrap().get(&Get::new("r")).unwrap()),
        ["f:q=kept@1000000"]
    );
    assert!(t
        .db
        .table("gone")
        .unwrap()
        .get(&Get::new("r"))
        .unwrap()
        .is_empty());
    assert!(t
        .db
        .table("emptied")
        .unwrap()
        .get(&Get::new("r"))
        .unwrap()
        .is_empty());
    // Disabling closed both tables' regions, flushed, as HBase does: the
    // log held nothing of theirs for the reopen to skip.
    assert_eq!(
        t.db.recovery_report().edits_skipped,
        0,
        "{:?}",
        t.db.recovery_report()
    );
}

#[test]
fn alter_adds_modifies_and_deletes_families_online() {
    let mut t = TestDb::new();
    let table = t.table("t", vec![cf("f").max_versions(1)]);
    for ts in 1..=3 {
        table
            .put(&Put::new("r").add_at("f", "q", ts, format!("v{ts}")))
            .unwrap();
    }
    t.db.alter_table(
        "t",
        &[
            FamilyChange::Add(cf("g")),
            FamilyChange::Modify(cf("f").max_versions(5)),
        ],
    )
    .unwrap();
    table.put(&Put::new("r").add_at("g", "q", 1, "g1")).unwrap();
    let r = table.get(&Get::new("r").max_versions(5)).unwrap();
    assert_eq!(
        cells(&r),
        ["f:q=v3@3", "f:q=v2@2", "f:q=v1@1", "g:q=g1@1"],
        "more versions become visible"
    );

    t.db.alter_table("t", &[FamilyChange::Delete("g".into())])
        .unwrap();
    assert!(table.put(&Put::new("r").add("g", "q", "x")).is_err());
    // Re-adding the family must not resurrect the deleted family's data,
    // not even after a restart replays the log.
    t.db.alter_table("t", &[FamilyChange::Add(cf("g"))])
        .unwrap();
    assert!(table.get(&Get::new("r").family("g")).unwrap().is_empty());
    t.reopen();
    let table = t.db.table("t").unwrap();
    assert!(table.get(&Get::new("r").family("g")).unwrap().is_empty());
    assert_eq!(
        t.db.describe_table("t")
            .unwrap()
            .descriptor
            .get_family(b"f")
            .unwrap()
            .max_versions,
        5
    );

    let errors = [
        t.db.alter_table("t", &[FamilyChange::Add(cf("f"))])
            .unwrap_err(),
        t.db.alter_table("t", &[FamilyChange::Modify(cf("nope"))])
            .unwrap_err(),
        t.db.alter_table("t", &[FamilyChange::Delete("nope".into())])
            .unwrap_err(),
        t.db.alter_table(
            "t",
            &[
                FamilyChange::Delete("f".into()),
                FamilyChange::Delete("g".into()),
            ],
        )
        .unwrap_err(),
    ];
    assert!(errors[0].to_string().contains("already exists"));
    assert!(matches!(errors[1], Error::NoSuchFamily { .. }));
    assert!(matches!(errors[2], Error::NoSuchFamily { .. }));
    assert!(errors[3].to_string().contains("at least one column family"));
}

#[test]
fn a_second_open_of_the_same_directory_is_refused() {
    let t = TestDb::new();
    let err = Database::open(t.dir.path()).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    assert!(err.to_string().contains("locked by another process"));
    let dir = t.dir.path().to_path_buf();
    t.db.close().unwrap();
    drop(t.db);
    Database::open(&dir).unwrap();
}

#[test]
fn closed_database_refuses_work() {
    let t = TestDb::new();
    let table = t.table("t", vec![cf("f")]);
    t.db.close().unwrap();
    assert!(matches!(
        table.put(&Put::new("r").add("f", "q", "v")).unwrap_err(),
        Error::Closed(_)
    ));
    assert!(matches!(t.db.table("t").unwrap_err(), Error::Closed(_)));
}

/// Issue 12, defect 1: a 256-byte table or family name was accepted, then
/// could never be flushed ("File name too long"), and the next start
/// refused the whole data directory. Names are now checked at creation,
/// and the longest accepted ones go through flush, close and reopen.
#[test]
fn the_longest_accepted_names_are_storable_and_longer_ones_are_refused() {
    let mut t = TestDb::new();
    let table = "t".repeat(basalt::MAX_TABLE_NAME_PART_BYTES);
    let family = "f".repeat(basalt::MAX_FAMILY_NAME_BYTES);
    let namespace = "n".repeat(basalt::MAX_TABLE_NAME_PART_BYTES);
    t.db.create_namespace(NamespaceDescriptor::new(&namespace))
        .unwrap();
    let namespaced = format!("{namespace}:{table}");
    for name in [&table, &namespaced] {
        t.db.create_table(TableDescriptor::new(name).family(ColumnFamilyDescriptor::new(&family)))
            .unwrap();
        t.db.table(name)
            .unwrap()
            .put(&Put::new("row").add(family.clone(), "q", "v"))
            .unwrap();
        t.db.flush_table(name).unwrap();
    }
    t.reopen();
    for name in [&table, &namespaced] {
        let got = t.db.table(name).unwrap().get(&Get::new("row")).unwrap();
        assert_eq!(
            got.value(family.as_bytes(), b"q").map(|v| &v[..]),
            Some(&b"v"[..])
        );
    }

    let too_long_table = format!("{table}t");
    let err =
        t.db.create_table(
            TableDescriptor::new(&too_long_table).family(ColumnFamilyDescriptor::new("f")),
        )
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let too_long_family = format!("{family}f");
    let err =
        t.db.create_table(
            TableDescriptor::new("u").family(ColumnFamilyDescriptor::new(&too_long_family)),
        )
        .unwrap_err();
    assert!(err.to_string().contains("the limit is 127"), "{err}");
    let err =
        t.db.alter_table(
            &table,
            &[FamilyChange::Add(ColumnFamilyDescriptor::new(
                &too_long_family,
            ))],
        )
        .unwrap_err();
    assert!(err.to_string().contains("the limit is 127"), "{err}");
    // Nothing refused reached the catalog: the database still opens.
    t.reopen();
    assert_eq!(t.db.list_tables().len(), 2);
}
