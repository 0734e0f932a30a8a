//! Fencing through the embedded API, on a shared directory: database A
//! takes writes; database B opens the same storage from another data
//! directory and takes the data over. A's next flush would publish a store
//! manifest version over B's fence: it is refused, and from then on A
//! refuses every read and write with the fenced error, while B (and any
//! later owner) holds everything A acknowledged before the takeover.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use basalt::{ColumnFamilyDescriptor, Database, Error, Get, Options, Put, Scan, TableDescriptor};
use basalt_object_store::{open_storage, StorageConfig};

mod common;
use common::file_config;

fn open(config: &StorageConfig, dir: &Path) -> Database {
    let storage = open_storage(config, dir).unwrap().unwrap();
    let mut options = Options::new(dir);
    options.background_threads = 0;
    Database::builder(options)
        .file_store(storage.file_store())
        .wal_in_file_store(storage.wal_options())
        .open()
        .unwrap()
}

fn rows(db: &Database) -> Vec<String> {
    db.table("t")
        .unwrap()
        .scan(&Scan::new())
        .unwrap()
        .map(|r| String::from_utf8(r.unwrap().row.to_vec()).unwrap())
        .collect()
}

fn is_fenced(error: &Error, by: u64) -> bool {
    matches!(error, Error::Fenced { epoch, .. } if *epoch == by)
}

#[test]
fn a_stale_database_cannot_flush_read_or_write_once_another_opened_its_storage() {
    let shared = tempfile::tempdir().unwrap();
    let config = file_config(shared.path());
    let dirs = tempfile::tempdir().unwrap();

    let a = open(&config, &dirs.path().join("a"));
    a.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    let table_a = a.table("t").unwrap();
    let mut acknowledged = Vec::new();
    for i in 0..20 {
        let row = format!("a-{i:02}");
        table_a
            .put(&Put::new(row.clone()).add("f", "q", "v"))
            .unwrap();
        acknowledged.push(row);
    }
    // Half of them in a store file, half only in A's log.
    a.flush_table("t").unwrap();
    for i in 20..40 {
        let row = format!("a-{i:02}");
        table_a
            .put(&Put::new(row.clone()).add("f", "q", "v"))
            .unwrap();
        acknowledged.push(row);
    }
    let epoch_a = a.region_server().fence().unwrap().epoch();

    let b = open(&config, &dirs.path().join("b"));
    let epoch_b = b.region_server().fence().unwrap().epoch();
    assert!(epoch_b > epoch_a);
    assert_eq!(rows(&b), acknowledged);

    // A's flush collides with B's manifest version: fenced, nothing
    // published.
    let err = a.flush_table("t").unwrap_err();
    assert!(is_fenced(&err, epoch_b), "{err}");
    assert!(a.region_server().fence().unwrap().is_tripped());
    let err = table_a.get(&Get::new("a-00")).unwrap_err();
    assert!(is_fenced(&err, epoch_b), "{err}");
    let err = table_a
        .put(&Put::new("a-late").add("f", "q", "v"))
        .unwrap_err();
    assert!(is_fenced(&err, epoch_b), "{err}");
    assert!(err
        .to_string()
        .starts_with("fenced: another process opened this data at epoch"));

    // B goes on; a later owner sees exactly what was acknowledged.
    let table_b = b.table("t").unwrap();
    table_b.put(&Put::new("b-00").add("f", "q", "v")).unwrap();
    b.flush_table("t").unwrap();
    acknowledged.push("b-00".to_owned());
    b.close().unwrap();
    assert!(a.close().is_err(), "a fenced database cannot close cleanly");
    let c = open(&config, &dirs.path().join("c"));
    assert_eq!(rows(&c), acknowledged);
    c.close().unwrap();
}
