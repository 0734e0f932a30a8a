//! An HBase snapshot laid out as HBase 2.x leaves it (description,
//! manifest, store files written by HBase 2.6.4 itself: the basalt-hfile
//! fixtures) imports as a Basalt snapshot whose clone reads every cell
//! back; split references, archived files and HFileLinks are followed; a
//! killed import resumes; bad manifests are refused naming what is wrong.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use basalt::export::ExportSide;
use basalt::{Database, Scan};
use basalt_engine::fs::{FileStore, LocalFileStore};
use basalt_engine::snapshot::read_manifest;
use basalt_engine::source::CellSource;
use basalt_engine::storefile::StoreFileReader;
use basalt_import::hbase::{encoded_region_name, SNAPSHOT_DIR};
use basalt_import::{import_hbase_snapshot, ImportOptions};
use basalt_rpc::proto::hbase::{
    BytesBytesPair, ColumnFamilySchema, RegionInfo, TableName, TableSchema,
};
use basalt_rpc::proto::master::SnapshotDescription;
use basalt_rpc::proto::snapshot::{
    reference::Range, FamilyFiles, Reference, SnapshotDataManifest, SnapshotRegionManifest,
    SnapshotStoreFile,
};
use basalt_types::{Cell, CellType};
use prost::Message;
use serde_json::Value;

const FIXTURE: &str = "none-none";
const TABLE: &str = "orders";
const REGION_ID: u64 = 1_700_000_000_000;
const ARCHIVED_HFILE: &str = "0123456789abcdef0123456789abcdef";
const LIVE_HFILE: &str = "fedcba9876543210fedcba9876543210";

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../basalt-hfile/tests/fixtures")
}

fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') {
            out.push(u8::from_str_radix(&s[i + 2..i + 4], 16).unwrap());
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// The fixture's cells as HBase's own reader listed them.
fn expected_cells(fixture: &str) -> Vec<Value> {
    let text =
        std::fs::read_to_string(fixture_dir().join(format!("{fixture}.expected.json"))).unwrap();
    let listing: Value = serde_json::from_str(&text).unwrap();
    listing["cells"].as_array().unwrap().clone()
}

fn type_name(t: CellType) -> &'static str {
    match t {
        CellType::Put => "Put",
        CellType::Delete => "Delete",
        CellType::DeleteColumn => "DeleteColumn",
        CellType::DeleteFamily => "DeleteFamily",
        CellType::DeleteFamilyVersion => "DeleteFamilyVersion",
    }
}

fn region_info(start: &[u8], end: &[u8]) -> RegionInfo {
    RegionInfo {
        region_id: REGION_ID,
        table_name: Some(table_name()),
        start_key: Some(start.to_vec()),
        end_key: Some(end.to_vec()),
        offline: None,
        split: None,
        replica_id: None,
    }
}

fn table_name() -> TableName {
    TableName {
        namespace: b"default".to_vec(),
        qualifier: TABLE.as_bytes().to_vec(),
    }
}

/// HBase's serialized key of the first cell on `row` (a reference's split
/// key): row length, row, empty family and qualifier, LATEST timestamp,
/// type Maximum.
fn first_key_on(row: &[u8]) -> Vec<u8> {
    let mut key = Vec::new();
    key.extend_from_slice(&(row.len() as u16).to_be_bytes());
    key.extend_from_slice(row);
    key.push(0);
    key.extend_from_slice(&i64::MAX.to_be_bytes());
    key.push(255);
    key
}

struct HBaseRoot {
    _dir: tempfile::TempDir,
    root: PathBuf,
    /// The row the table is split at.
    split: Vec<u8>,
}

/// An HBase root with snapshot `snap` of table `orders` (family `cf`, 3
/// versions): two daughter regions reading halves of their parent's files
/// through references, the bottom one's file archived (as after the
/// parent is gone), the top one's still live (`LIVE_HFILE`).
fn hbase_root(snap: &str) -> HBaseRoot {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("hbase");
    let cells = expected_cells(FIXTURE);
    let split = unescape(cells[cells.len() / 2]["row"].as_str().unwrap());
    let parent = encoded_region_name(TABLE, b"", REGION_ID - 1);
    for (area, hfile) in [("archive/data", ARCHIVED_HFILE), ("data", LIVE_HFILE)] {
        let family_dir = root
            .join(area)
            .join("default")
            .join(TABLE)
            .join(&parent)
            .join("cf");
        std::fs::create_dir_all(&family_dir).unwrap();
        std::fs::copy(
            fixture_dir().join(format!("{FIXTURE}.hfile")),
            family_dir.join(hfile),
        )
        .unwrap();
    }
    let reference = |hfile: &str, range: Range| SnapshotStoreFile {
        name: format!("{hfile}.{parent}"),
        reference: Some(Reference {
            splitkey: first_key_on(&split),
            range: range as i32,
        }),
        file_size: None,
    };
    let region = |start: &[u8], end: &[u8], range: Range| SnapshotRegionManifest {
        version: Some(2),
        region_info: Some(region_info(start, end)),
        family_files: vec![FamilyFiles {
            family_name: b"cf".to_vec(),
            store_files: vec![reference(
                if range == Range::Top {
                    LIVE_HFILE
                } else {
                    ARCHIVED_HFILE
                },
                range,
            )],
        }],
    };
    let manifest = SnapshotDataManifest {
        table_schema: Some(TableSchema {
            table_name: Some(table_name()),
            attributes: vec![],
            column_families: vec![ColumnFamilySchema {
                name: b"cf".to_vec(),
                attributes: vec![BytesBytesPair {
                    first: b"VERSIONS".to_vec(),
                    second: b"3".to_vec(),
                }],
                configuration: vec![],
            }],
            configuration: vec![],
        }),
        region_manifests: vec![
            // Out of key order on purpose: the importer sorts.
            region(&split, b"", Range::Top),
            region(b"", &split, Range::Bottom),
        ],
    };
    write_snapshot(&root, snap, &manifest, 2);
    HBaseRoot {
        _dir: dir,
        root,
        split,
    }
}

fn write_snapshot(root: &Path, snap: &str, manifest: &SnapshotDataManifest, version: i32) {
    let dir = root.join(SNAPSHOT_DIR).join(snap);
    std::fs::create_dir_all(&dir).unwrap();
    let description = SnapshotDescription {
        name: Some(snap.into()),
        table: Some(TABLE.into()),
        creation_time: Some(1_700_000_123_000),
        r#type: None,
        version: Some(version),
        owner: None,
        ttl: None,
        max_file_size: None,
    };
    std::fs::write(dir.join(".snapshotinfo"), description.encode_to_vec()).unwrap();
    std::fs::write(dir.join("data.manifest"), manifest.encode_to_vec()).unwrap();
}

fn side(root: &Path) -> ExportSide {
    ExportSide {
        files: Arc::new(LocalFileStore::new()) as Arc<dyn FileStore>,
        root: root.to_path_buf(),
        description: root.display().to_string(),
    }
}

/// Imports HBase snapshot `name` under `hbase_root` into the data set at
/// `data`.
fn import(
    hbase_root: &Path,
    name: &str,
    data: &Path,
    options: &ImportOptions,
) -> basalt_types::Result<basalt_import::ImportReport> {
    import_hbase_snapshot(&side(hbase_root), name, &side(data), options, &|_| {})
}

/// Every cell of a Basalt store file, in file order.
fn file_cells(path: &Path) -> Vec<Cell> {
    let files: Arc<dyn FileStore> = Arc::new(LocalFileStore::new());
    let reader = StoreFileReader::open(files, path, 1, None).unwrap();
    let mut source = reader.source();
    source
        .seek(&basalt_engine::source::first_on_row(b""))
        .unwrap();
    let mut out = Vec::new();
    while let Some(cell) = source.peek() {
        out.push(cell.clone());
        source.advance().unwrap();
    }
    out
}

#[test]
fn an_hbase_snapshot_imports_cell_for_cell_and_its_clone_has_hbases_regions() {
    let hbase = hbase_root("snap1");
    let data = tempfile::tempdir().unwrap();
    let report = import(&hbase.root, "snap1", data.path(), &ImportOptions::default()).unwrap();
    let expected = expected_cells(FIXTURE);
    assert_eq!(report.regions, 2);
    assert_eq!(report.files, 2);
    assert_eq!(report.converted, 2);
    assert_eq!(report.cells, expected.len() as u64, "{report:?}");

    // The two halves, read back in key order, are the HBase file's cells.
    let manifest = read_manifest(
        &LocalFileStore::new(),
        &report.snapshot_path,
        basalt_engine::snapshot::DEFAULT_MAX_MANIFEST_BYTES,
    )
    .unwrap();
    assert_eq!(manifest.table, TABLE);
    assert_eq!(manifest.regions.len(), 2);
    assert!(manifest.regions[0].start_key.is_empty());
    assert_eq!(&manifest.regions[0].end_key[..], &hbase.split[..]);
    assert_eq!(&manifest.regions[1].start_key[..], &hbase.split[..]);
    let mut got = Vec::new();
    for region in &manifest.regions {
        for store in &region.stores {
            for file in &store.files {
                let cells = file_cells(&file.path(data.path(), &store.family));
                assert!(cells
                    .iter()
                    .all(|c| region.start_key.is_empty() || c.row >= region.start_key));
                got.extend(cells);
            }
        }
    }
    assert_eq!(got.len(), expected.len());
    for (i, (cell, want)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(
            &cell.row[..],
            unescape(want["row"].as_str().unwrap()),
            "cell {i} row"
        );
        assert_eq!(
            &cell.qualifier[..],
            unescape(want["qualifier"].as_str().unwrap()),
            "cell {i} qualifier"
        );
        assert_eq!(
            cell.timestamp,
            want["timestamp"].as_i64().unwrap(),
            "cell {i} ts"
        );
        assert_eq!(
            type_name(cell.cell_type),
            want["type"].as_str().unwrap(),
            "cell {i} type"
        );
        assert_eq!(
            &cell.value[..],
            unescape(want["value"].as_str().unwrap()),
            "cell {i} value"
        );
        assert_eq!(
            cell.sequence_id,
            want["seq_id"].as_u64().unwrap(),
            "cell {i} sequence"
        );
        let ttl_tag = want["tags"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"].as_u64() == Some(8))
            .map(|t| {
                let bytes: [u8; 8] = unescape(t["value"].as_str().unwrap()).try_into().unwrap();
                i64::from_be_bytes(bytes) as u64
            });
        if cell.cell_type == CellType::Put {
            assert_eq!(cell.ttl_millis, ttl_tag, "cell {i} ttl");
        }
    }

    // Cloned, the table has HBase's boundaries and serves the rows.
    let db = Database::open(data.path()).unwrap();
    db.clone_snapshot("snap1", "orders_copy").unwrap();
    let table = db.table("orders_copy").unwrap();
    let rows: Vec<_> = table
        .scan(&Scan::new())
        .unwrap()
        .collect::<basalt_types::Result<Vec<_>>>()
        .unwrap();
    assert!(!rows.is_empty());
    let regions = db.list_regions("orders_copy").unwrap();
    assert_eq!(regions.len(), 2, "{regions:?}");
}

#[test]
fn an_import_that_stopped_half_way_resumes_and_converts_only_what_was_left() {
    let hbase = hbase_root("snap2");
    let data = tempfile::tempdir().unwrap();
    let live = hbase
        .root
        .join("data/default")
        .join(TABLE)
        .join(encoded_region_name(TABLE, b"", REGION_ID - 1))
        .join("cf")
        .join(LIVE_HFILE);
    let aside = hbase.root.join("aside");
    std::fs::rename(&live, &aside).unwrap();
    let one_at_a_time = ImportOptions {
        parallel: 1,
        ..ImportOptions::default()
    };
    // The bottom region's file converts, the top's is missing: stopped.
    let stopped = import(&hbase.root, "snap2", data.path(), &one_at_a_time).unwrap_err();
    assert!(stopped.to_string().contains(LIVE_HFILE), "{stopped}");
    let staging = basalt_import::snapshot_import::import_dir(data.path(), "snap2");
    assert!(staging.join("done/00000000").exists());
    std::fs::rename(&aside, &live).unwrap();
    let resumed = import(&hbase.root, "snap2", data.path(), &one_at_a_time).unwrap();
    assert_eq!((resumed.converted, resumed.skipped), (1, 1), "{resumed:?}");
    assert_eq!(resumed.cells, expected_cells(FIXTURE).len() as u64);
    assert!(!staging.exists(), "the staging directory is cleaned up");
    let again = import(&hbase.root, "snap2", data.path(), &one_at_a_time).unwrap_err();
    assert!(again.to_string().contains("already a snapshot"), "{again}");
}

#[test]
fn a_file_found_nowhere_is_named_in_the_error() {
    let hbase = hbase_root("snap3");
    std::fs::remove_dir_all(hbase.root.join("archive")).unwrap();
    let data = tempfile::tempdir().unwrap();
    let err = import(&hbase.root, "snap3", data.path(), &ImportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains(ARCHIVED_HFILE), "{err}");
    assert!(err.contains("archive"), "{err}");
}

#[test]
fn garbage_snapshot_files_and_other_formats_are_refused_with_a_reason() {
    let hbase = hbase_root("snap4");
    let data = tempfile::tempdir().unwrap();
    let run = |snap: &str| {
        import(&hbase.root, snap, data.path(), &ImportOptions::default())
            .unwrap_err()
            .to_string()
    };
    let missing = run("nope");
    assert!(missing.contains("no HBase snapshot"), "{missing}");

    let dir = hbase.root.join(SNAPSHOT_DIR).join("snap4");
    let good = std::fs::read(dir.join("data.manifest")).unwrap();
    std::fs::write(dir.join("data.manifest"), [0xff, 0xff, 0xff]).unwrap();
    let garbage = run("snap4");
    assert!(garbage.contains("SnapshotDataManifest"), "{garbage}");
    for cut in [1, good.len() / 2, good.len() - 1] {
        std::fs::write(dir.join("data.manifest"), &good[..cut]).unwrap();
        let _ = run("snap4"); // an error, never a panic
    }
    std::fs::remove_file(dir.join("data.manifest")).unwrap();
    let unfinished = run("snap4");
    assert!(unfinished.contains("unfinished"), "{unfinished}");

    let v1 = SnapshotDataManifest::decode(&good[..]).unwrap();
    write_snapshot(&hbase.root, "old", &v1, 0);
    let old = run("old");
    assert!(old.contains("format 0"), "{old}");

    let mut gap = v1.clone();
    gap.region_manifests.truncate(1);
    write_snapshot(&hbase.root, "gap", &gap, 2);
    let gap = run("gap");
    assert!(gap.contains("no region starts the table"), "{gap}");
}
