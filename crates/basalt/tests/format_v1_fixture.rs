//! The committed format-v1 data directory (`tests/fixtures/format-v1/`)
//! still opens and reads back exactly what it holds.
//!
//! The fixture is what a database of this format wrote: WAL segments with
//! edits never flushed, store files with compression and bloom filters,
//! store manifests and the catalog. This test copies it to a temporary
//! directory, opens it with `Database::open` and compares every cell
//! (row, family, qualifier, timestamp, value; several versions; cells a
//! delete marker hides are absent) with [`EXPECTED`].
//!
//! The fixture must never be regenerated to follow a format change: a build
//! that can no longer read it has broken every existing data directory. A
//! new format version gets a new fixture beside this one. [`regenerate`]
//! (ignored; `cargo test -p basalt --test format_v1_fixture -- --ignored
//! regenerate`) documents how it was made and can recreate it for the
//! format it was made for, byte for byte in content (fixed timestamps, a
//! manual clock for region ids, no background threads).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use basalt::{
    BloomType, ColumnFamilyDescriptor, Compression, Database, Delete, ManualClock, Options, Put,
    Scan, TableDescriptor,
};

/// Every cell a full scan of each table returns with all versions, in scan
/// order: `(table, row, family, qualifier, timestamp, value)`.
///
/// - `people` is pre-split at `m` (regions `[-inf, m)` and `[m, +inf)`);
///   family `info` is LZ4-compressed with a ROWCOL bloom, `hist` keeps five
///   versions with a ROW bloom.
/// - `alice`'s `hist:score` has four versions: two from the first flush,
///   one from the second, one only in the WAL.
/// - `bob`'s `info:email` is gone (column delete, flushed); `info:name`
///   is gone (column delete only in the WAL); `info:phone` stays.
/// - `nina`'s `info:name` has a version in each flushed file.
/// - `zed`'s `hist` family is gone (family delete, flushed).
/// - `olga` and the whole `events` table exist only in the WAL.
const EXPECTED: &[(&str, &str, &str, &str, i64, &str)] = &[
    ("events", "2026-01-01", "e", "kind", 500, "start"),
    ("events", "2026-01-02", "e", "kind", 600, "stop"),
    ("people", "alice", "hist", "score", 400, "40"),
    ("people", "alice", "hist", "score", 300, "30"),
    ("people", "alice", "hist", "score", 200, "20"),
    ("people", "alice", "hist", "score", 100, "10"),
    ("people", "alice", "info", "email", 100, "alice@example.org"),
    ("people", "alice", "info", "name", 100, "Alice"),
    ("people", "bob", "info", "phone", 100, "555-0100"),
    ("people", "nina", "info", "name", 200, "Nina B."),
    ("people", "nina", "info", "name", 100, "Nina"),
    ("people", "olga", "hist", "score", 100, "7"),
    ("people", "olga", "info", "name", 100, "Olga"),
    ("people", "zed", "info", "name", 100, "Zed"),
];

/// The clock of the generating database (region ids are creation times).
const CLOCK_MS: i64 = 1_767_225_600_000;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-v1/data")
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

fn count_files(dir: &Path, extension: &str) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            n += count_files(&path, extension);
        } else if path.extension().is_some_and(|e| e == extension) {
            n += 1;
        }
    }
    n
}

fn scan_all(db: &Database, table: &str) -> Vec<(String, String, String, String, i64, String)> {
    let text = |b: &Bytes| String::from_utf8(b.to_vec()).unwrap();
    let mut out = vec![];
    for row in db
        .table(table)
        .unwrap()
        .scan(&Scan::new().max_versions(10))
        .unwrap()
    {
        for c in row.unwrap().cells {
            out.push((
                table.to_string(),
                text(&c.row),
                text(&c.family),
                text(&c.qualifier),
                c.timestamp,
                text(&c.value),
            ));
        }
    }
    out
}

#[test]
fn the_format_v1_fixture_opens_and_reads_back_exactly_its_content() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture_dir(), dir.path());
    let store_files = count_files(dir.path(), "sst");
    assert!(store_files >= 3, "flushed store files: {store_files}");
    let segments = count_files(dir.path(), "log");
    assert!(segments >= 1, "WAL segments: {segments}");
    let db = Database::open(dir.path()).unwrap();

    let report = db.recovery_report().clone();
    assert!(
        report.edits_replayed > 0,
        "the fixture's WAL holds unflushed edits: {report:?}"
    );
    assert_eq!(db.list_tables(), vec!["events", "people"]);
    let regions = db.list_regions("people").unwrap();
    assert_eq!(regions.len(), 2, "people is pre-split in two");
    let info = db.describe_table("people").unwrap();
    let family = info.descriptor.get_family(b"info").unwrap();
    assert_eq!(family.compression, Compression::Lz4);
    assert_eq!(family.bloom_filter, BloomType::RowCol);

    let mut got = scan_all(&db, "events");
    got.extend(scan_all(&db, "people"));
    let expected: Vec<_> = EXPECTED
        .iter()
        .map(|&(t, r, f, q, ts, v)| {
            (
                t.to_string(),
                r.to_string(),
                f.to_string(),
                q.to_string(),
                ts,
                v.to_string(),
            )
        })
        .collect();
    assert_eq!(got, expected);

    // Point reads go through the bloom filters and the block index.
    let people = db.table("people").unwrap();
    let alice = people
        .get(&basalt::Get::new("alice").column("info", "name"))
        .unwrap();
    assert_eq!(&alice.cells[0].value[..], b"Alice");
    let absent = people.get(&basalt::Get::new("carol")).unwrap();
    assert!(absent.cells.is_empty());
    db.close().unwrap();
}

/// Recreates the fixture. Only for the format it was made for: see the
/// module docs and the fixture's README.
#[test]
#[ignore = "writes the committed fixture; never run it for a format change"]
fn regenerate() {
    let dir = fixture_dir();
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::create_dir_all(&dir).unwrap();
    // It writes today's formats: since catalog format 3 (numbered catalog
    // versions) it no longer reproduces this fixture's `catalog.json`,
    // which is the point of keeping the committed files as they are.
    let mut options = Options::new(&dir);
    options.background_threads = 0;
    options.compaction_min_files = 100;
    let db = Database::builder(options)
        .clock(Arc::new(ManualClock::new(CLOCK_MS)))
        .open()
        .unwrap();

    db.create_table_with_splits(
        TableDescriptor::new("people")
            .family(
                ColumnFamilyDescriptor::new("info")
                    .max_versions(3)
                    .compression(Compression::Lz4)
                    .bloom_filter(BloomType::RowCol),
            )
            .family(
                ColumnFamilyDescriptor::new("hist")
                    .max_versions(5)
                    .bloom_filter(BloomType::Row),
            ),
        &[Bytes::from_static(b"m")],
    )
    .unwrap();
    db.create_table(TableDescriptor::new("events").family(ColumnFamilyDescriptor::new("e")))
        .unwrap();
    let people = db.table("people").unwrap();
    let events = db.table("events").unwrap();

    // First flush: the oldest versions, in both regions.
    for put in [
        Put::new("alice")
            .add_at("info", "name", 100, "Alice")
            .add_at("info", "email", 100, "alice@example.org")
            .add_at("hist", "score", 100, "10")
            .add_at("hist", "score", 200, "20"),
        Put::new("bob")
            .add_at("info", "name", 100, "Bob")
            .add_at("info", "email", 100, "bob@example.org")
            .add_at("info", "phone", 100, "555-0100"),
        Put::new("nina").add_at("info", "name", 100, "Nina"),
        Put::new("zed")
            .add_at("info", "name", 100, "Zed")
            .add_at("hist", "score", 100, "1"),
    ] {
        people.put(&put).unwrap();
    }
    db.flush_table("people").unwrap();

    // Second flush: newer versions and delete markers.
    people
        .put(&Put::new("alice").add_at("hist", "score", 300, "30"))
        .unwrap();
    people
        .put(&Put::new("nina").add_at("info", "name", 200, "Nina B."))
        .unwrap();
    people
        .delete(&Delete::with_timestamp("bob", 150).columns("info", "email"))
        .unwrap();
    people
        .delete(&Delete::with_timestamp("zed", 150).family("hist"))
        .unwrap();
    db.flush_table("people").unwrap();

    // Only in the WAL: never flushed, the database is dropped unclosed.
    people
        .put(&Put::new("alice").add_at("hist", "score", 400, "40"))
        .unwrap();
    people
        .put(
            &Put::new("olga")
                .add_at("info", "name", 100, "Olga")
                .add_at("hist", "score", 100, "7"),
        )
        .unwrap();
    people
        .delete(&Delete::with_timestamp("bob", 100).columns("info", "name"))
        .unwrap();
    events
        .put(&Put::new("2026-01-01").add_at("e", "kind", 500, "start"))
        .unwrap();
    events
        .put(&Put::new("2026-01-02").add_at("e", "kind", 600, "stop"))
        .unwrap();
    drop(people);
    drop(events);
    // Dropped without close(): close would flush the memstores.
    drop(db);
}
