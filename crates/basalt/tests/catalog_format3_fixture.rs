//! The committed catalog-format-3 data directory
//! (`tests/fixtures/catalog-format-3/`) still opens, serves what it holds,
//! and is migrated to today's catalog format by its first change.
//!
//! Format 3 stored every catalog version as the whole document. Format 4
//! (`docs/catalog-format.md`) stores checkpoints and deltas; a format-3
//! version is read as a checkpoint, and the first version written after
//! the upgrade is a checkpoint of the new format, after which the format-3
//! file is deleted.
//!
//! The fixture must never be regenerated to follow a format change (see
//! `tests/fixtures/format-v1/README.md`): [`regenerate`] documents how it
//! was made, with the build of format 3.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use basalt::{
    ColumnFamilyDescriptor, Database, ManualClock, NamespaceDescriptor, Options, Put, Scan,
    SplitOrMerge, TableDescriptor,
};

/// The clock of the generating database (region ids are creation times).
const CLOCK_MS: i64 = 1_798_761_600_000;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalog-format-3/data")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The catalog's files, by name.
fn catalog_files(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join("catalog"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn rows(db: &Database, table: &str) -> Vec<(String, String)> {
    let text = |b: &Bytes| String::from_utf8(b.to_vec()).unwrap();
    db.table(table)
        .unwrap()
        .scan(&Scan::new())
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            (text(&row.row), text(&row.cells[0].value))
        })
        .collect()
}

fn expected_orders() -> Vec<(String, String)> {
    ["a1", "g7", "m3", "t9", "z0"]
        .iter()
        .map(|r| (r.to_string(), format!("order {r}")))
        .collect()
}

/// The newest catalog document's `format_version`, resolved as readers do.
fn catalog_format(root: &Path) -> u64 {
    let text = basalt::catalog_document(&basalt::fs::LocalFileStore::new(), root)
        .unwrap()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&text).unwrap();
    value["format_version"].as_u64().unwrap()
}

/// The catalog's files are a format-4 checkpoint followed by deltas of it,
/// and possibly a restatement (a checkpoint of the version before it,
/// unchanged) with deltas of its own.
fn assert_chain(root: &Path, names: &[String]) {
    let read = |name: &String| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(root.join("catalog").join(name)).unwrap()).unwrap()
    };
    let version = |name: &String| name[..20].parse::<u64>().unwrap();
    let checkpoint = read(&names[0]);
    assert_eq!(checkpoint["format_version"], 4, "{names:?}");
    assert!(
        checkpoint.get("kind").is_none(),
        "a checkpoint: {checkpoint}"
    );
    let mut current = version(&names[0]);
    for name in &names[1..] {
        let document = read(name);
        if document.get("kind").is_none() {
            assert_eq!(document["restates"], version(name) - 1, "{name}: {names:?}");
            current = version(name);
            continue;
        }
        assert_eq!(document["kind"], "delta", "{name}: {document}");
        assert_eq!(document["checkpoint"], current, "{name}: {document}");
    }
}

#[test]
fn the_catalog_format_3_fixture_opens_and_its_first_change_migrates_it_to_a_new_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture_dir(), dir.path());
    let before = catalog_files(dir.path());
    assert_eq!(before.len(), 1, "one format-3 version: {before:?}");
    let old_text = std::fs::read_to_string(dir.path().join("catalog").join(&before[0])).unwrap();
    assert!(old_text.contains("\"format_version\": 3"), "{old_text}");

    let db = Database::open(dir.path()).unwrap();
    assert_eq!(db.list_tables(), vec!["events", "ns:orders"]);
    assert_eq!(db.list_regions("ns:orders").unwrap().len(), 3);
    assert_eq!(rows(&db, "ns:orders"), expected_orders());
    assert_eq!(
        rows(&db, "events"),
        vec![("e1".to_string(), "start".to_string())]
    );
    let ns = db.describe_namespace("ns").unwrap();
    assert_eq!(
        ns.properties,
        BTreeMap::from([("owner".to_string(), "ops".to_string())])
    );
    // The switches the fixture turned off are still off.
    assert!(!db.split_or_merge_switch(SplitOrMerge::Merge, None).unwrap());
    assert!(db.normalizer_switch(None).unwrap());

    // The first change is the first version this build writes: a
    // checkpoint of the new format, which supersedes the format-3 file.
    db.create_table(TableDescriptor::new("later").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    let after_change = catalog_files(dir.path());
    assert!(!after_change.contains(&before[0]), "{after_change:?}");
    // The create commits several versions (the table, then its region's
    // assignment): the first is the checkpoint, deltas follow it (and, the
    // catalog being tiny, soon another checkpoint: the policy's share).
    let first_version = |name: &str| name[..20].parse::<u64>().unwrap();
    assert!(first_version(&after_change[0]) >= 16, "{after_change:?}");
    assert_chain(dir.path(), &after_change);
    assert_eq!(catalog_format(dir.path()), 4);

    // Changes from now on are deltas, and the data set reopens from them.
    db.disable_table("later").unwrap();
    db.enable_table("later").unwrap();
    db.table("ns:orders")
        .unwrap()
        .put(&Put::new("b2").add("f", "v", "order b2"))
        .unwrap();
    db.close().unwrap();
    assert_chain(dir.path(), &catalog_files(dir.path()));

    let db = Database::open(dir.path()).unwrap();
    assert_eq!(db.list_tables(), vec!["events", "later", "ns:orders"]);
    let mut expected = expected_orders();
    expected.insert(1, ("b2".to_string(), "order b2".to_string()));
    assert_eq!(rows(&db, "ns:orders"), expected);
    assert!(!db.split_or_merge_switch(SplitOrMerge::Merge, None).unwrap());
    db.close().unwrap();
}

/// Recreates the fixture. Only with the build of catalog format 3: see the
/// module docs and the fixture's README.
#[test]
#[ignore = "writes the committed fixture; never run it for a format change"]
fn regenerate() {
    let dir = fixture_dir();
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::create_dir_all(&dir).unwrap();
    let mut options = Options::new(&dir);
    options.background_threads = 0;
    let db = Database::builder(options)
        .clock(Arc::new(ManualClock::new(CLOCK_MS)))
        .open()
        .unwrap();
    db.create_namespace(NamespaceDescriptor {
        name: "ns".into(),
        properties: BTreeMap::from([("owner".into(), "ops".into())]),
    })
    .unwrap();
    db.create_table_with_splits(
        TableDescriptor::new("ns:orders").family(ColumnFamilyDescriptor::new("f").max_versions(2)),
        &[Bytes::from_static(b"g"), Bytes::from_static(b"p")],
    )
    .unwrap();
    db.create_table(TableDescriptor::new("events").family(ColumnFamilyDescriptor::new("e")))
        .unwrap();
    db.split_or_merge_switch(SplitOrMerge::Merge, Some(false))
        .unwrap();
    db.normalizer_switch(Some(true)).unwrap();
    let orders = db.table("ns:orders").unwrap();
    for row in ["a1", "g7", "m3", "t9", "z0"] {
        orders
            .put(&Put::new(row).add_at("f", "v", 100, format!("order {row}")))
            .unwrap();
    }
    db.table("events")
        .unwrap()
        .put(&Put::new("e1").add_at("e", "kind", 100, "start"))
        .unwrap();
    db.close().unwrap();
}
