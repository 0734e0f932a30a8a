//! HBase's bulk load into a served table (`Database::bulk_load_hfiles`,
//! `basalt import hfiles`): HFiles HBase 2.6.4 wrote (the basalt-hfile
//! fixtures) laid out as `DIR/<family>/<hfile>` land in the regions their
//! rows belong to, cell for cell, without puts; a loaded cell wins over
//! what was there and loses to what is written after; a directory
//! without HFiles, a family the table lacks and a damaged file are
//! refused with a reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use basalt::{Database, Get, Put, Scan};
use basalt_engine::fs::{FileStore, LocalFileStore};
use basalt_hfile::HFileReader;
use basalt_types::{ColumnFamilyDescriptor, TableDescriptor};
use bytes::Bytes;

const FIXTURE: &str = "none-none";

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../basalt-hfile/tests/fixtures")
        .join(format!("{FIXTURE}.hfile"))
}

/// The fixture's distinct rows, in order.
fn fixture_rows() -> Vec<Bytes> {
    let reader = HFileReader::open(fixture()).unwrap();
    let mut rows: Vec<Bytes> = Vec::new();
    for cell in reader.cells() {
        let cell = cell.unwrap();
        if rows.last() != Some(&cell.row) {
            rows.push(cell.row);
        }
    }
    rows
}

fn local_files() -> std::sync::Arc<dyn FileStore> {
    std::sync::Arc::new(LocalFileStore::new())
}

fn bulk_dir(root: &Path) -> std::path::PathBuf {
    let dir = root.join("bulk");
    std::fs::create_dir_all(dir.join("cf")).unwrap();
    std::fs::create_dir_all(dir.join("_tmp")).unwrap();
    std::fs::copy(fixture(), dir.join("cf").join("0123abcd")).unwrap();
    dir
}

fn table_with_split(db: &Database, split: &Bytes) {
    db.create_table_with_splits(
        TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf").max_versions(10)),
        std::slice::from_ref(split),
    )
    .unwrap();
}

#[test]
fn hfiles_land_in_the_regions_their_rows_belong_to_and_later_writes_win_over_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let rows = fixture_rows();
    let split = rows[rows.len() / 2].clone();
    table_with_split(&db, &split);
    let table = db.table("t").unwrap();
    // A cell written before the load, at a row and timestamp the file
    // also has, and a put written after.
    let entries = HFileReader::open(fixture()).unwrap().entry_count();
    let report = db
        .bulk_load_hfiles("t", &local_files(), &bulk_dir(dir.path()))
        .unwrap();
    assert_eq!(report.files, 1);
    assert_eq!(report.pieces, 2, "the file spans both regions");
    assert_eq!(report.cells, entries);
    let regions = db.list_regions("t").unwrap();
    assert_eq!(regions.len(), 2);
    for region in &regions {
        let files: usize = region.stores.iter().map(|(_, s)| s.files).sum();
        assert_eq!(
            files,
            1,
            "one new store file in {}",
            region.info.encoded_name()
        );
    }
    // Rows of both regions read back.
    let scanned: Vec<_> = table
        .scan(&Scan::new())
        .unwrap()
        .collect::<basalt_types::Result<Vec<_>>>()
        .unwrap();
    assert!(scanned.iter().any(|r| r.row < split));
    assert!(scanned.iter().any(|r| r.row >= split));
    // A later put wins over the loaded cell at the same coordinates.
    let row = scanned[0].row.clone();
    let loaded = scanned[0].cells[0].clone();
    table
        .put(&Put::new(row.clone()).add_at(
            loaded.family.clone(),
            loaded.qualifier.clone(),
            loaded.timestamp,
            "written after",
        ))
        .unwrap();
    let now = table
        .get(&Get::new(row).column(loaded.family, loaded.qualifier))
        .unwrap();
    assert_eq!(&now.cells[0].value[..], b"written after");
}

#[test]
fn a_loaded_cell_wins_over_a_cell_written_before_at_the_same_coordinates() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let rows = fixture_rows();
    table_with_split(&db, &rows[rows.len() / 2]);
    let table = db.table("t").unwrap();
    let reader = HFileReader::open(fixture()).unwrap();
    let first = reader
        .cells()
        .map(|c| c.unwrap())
        .find(|c| c.cell_type == basalt_types::CellType::Put && c.tags.is_empty())
        .unwrap();
    table
        .put(&Put::new(first.row.clone()).add_at(
            first.family.clone(),
            first.qualifier.clone(),
            first.timestamp,
            "written before",
        ))
        .unwrap();
    db.bulk_load_hfiles("t", &local_files(), &bulk_dir(dir.path()))
        .unwrap();
    let got = table
        .get(&Get::new(first.row.clone()).column(first.family.clone(), first.qualifier.clone()))
        .unwrap();
    let at_ts = got
        .cells
        .iter()
        .find(|c| c.timestamp == first.timestamp)
        .unwrap();
    assert_eq!(at_ts.value, first.value, "the load's cell wins");
}

#[test]
fn bad_bulk_load_directories_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let rows = fixture_rows();
    table_with_split(&db, &rows[1]);
    let files = local_files();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let e = db
        .bulk_load_hfiles("t", &files, &empty)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no HFiles"), "{e}");

    let wrong = dir.path().join("wrong");
    std::fs::create_dir_all(wrong.join("other")).unwrap();
    std::fs::copy(fixture(), wrong.join("other").join("f1")).unwrap();
    let e = db
        .bulk_load_hfiles("t", &files, &wrong)
        .unwrap_err()
        .to_string();
    assert!(e.contains("other"), "{e}");

    let damaged = dir.path().join("damaged");
    std::fs::create_dir_all(damaged.join("cf")).unwrap();
    let mut bytes = std::fs::read(fixture()).unwrap();
    let at = bytes.len() / 3;
    bytes[at] ^= 0xff;
    bytes.truncate(bytes.len() - 10);
    std::fs::write(damaged.join("cf").join("f1"), &bytes).unwrap();
    let e = db
        .bulk_load_hfiles("t", &files, &damaged)
        .unwrap_err()
        .to_string();
    assert!(e.contains("f1"), "{e}");
    assert!(db
        .bulk_load_hfiles("nope", &files, &bulk_dir(dir.path()))
        .is_err());
}
