//! A full disk: writes fail cleanly (ENOSPC, nothing acknowledged that is
//! not logged), DDL that cannot be persisted fails without changing
//! anything, flushes keep the data in memory, and everything recovers by
//! itself once space is freed, without a restart. The real-disk test mounts
//! a 4 MiB tmpfs and needs root; the catalog test uses a fault-injecting
//! file store and runs everywhere.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt::fs::{FaultOp, FaultyFileStore, FileStore, LocalFileStore};
use basalt::{ColumnFamilyDescriptor, Database, FamilyChange, Get, Options, Put, TableDescriptor};

/// A tmpfs mounted for the test; unmounted on drop, panics included.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` at a fresh directory under `parent`, or
    /// says why it cannot.
    fn mount(parent: &Path, size: &str) -> Result<Tmpfs, String> {
        let uid = Command::new("id").arg("-u").output();
        let root = uid.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        if !root {
            return Err("not running as root".into());
        }
        let dir = parent.join("tmpfs");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .map_err(|e| format!("mount could not run: {e}"))?;
        if !status.success() {
            return Err(format!("mount failed: {status}"));
        }
        Ok(Tmpfs { dir })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

fn options(dir: &Path) -> Options {
    let mut options = Options::new(dir);
    // No background threads: flushes run (and fail) in the writing thread,
    // so the test sees every outcome.
    options.background_threads = 0;
    options
}

fn put(row: &str) -> Put {
    Put::new(row.to_string()).add("f", "q", vec![b'x'; 512])
}

fn present(db: &Database, row: &str) -> bool {
    let table = db.table("t").unwrap();
    !table.get(&Get::new(row.to_string())).unwrap().is_empty()
}

/// Fills the file system at `dir` with one file until it is full.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).unwrap();
    let chunk = vec![0u8; 64 << 10];
    loop {
        if let Err(e) = file.write_all(&chunk) {
            assert_eq!(e.raw_os_error(), Some(28), "{e}");
            break;
        }
    }
    // Whatever fits of one byte more, so not even a page is left.
    while file.write_all(&[0]).is_ok() {}
    path
}

#[test]
fn writes_fail_cleanly_on_a_full_disk_and_recover_once_space_is_freed() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = match Tmpfs::mount(tmp.path(), "4m") {
        Ok(fs) => fs,
        Err(why) => {
            println!("skipped: a real full disk needs a tmpfs mount ({why})");
            return;
        }
    };
    let data = fs.dir.join("data");
    let db = Database::open_with(options(&data)).unwrap();
    db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    let table = db.table("t").unwrap();
    let mut acked = Vec::new();
    for i in 0..20 {
        let row = format!("before-{i:03}");
        table.put(&put(&row)).unwrap();
        acked.push(row);
    }

    let filler = fill(&fs.dir);
    // Writes may still fit in pages the log already has; soon they fail,
    // with an error that names the cause, and are not applied.
    let mut failed = Vec::new();
    for i in 0..10_000 {
        let row = format!("full-{i:05}");
        match table.put(&put(&row)) {
            Ok(()) => acked.push(row),
            Err(e) => {
                let message = e.to_string();
                assert!(
                    message.contains("No space left on device") || message.contains("os error 28"),
                    "{message}"
                );
                failed.push(row);
                if failed.len() == 5 {
                    break;
                }
            }
        }
    }
    assert_eq!(failed.len(), 5, "writes never failed on a full disk");
    for row in &failed {
        assert!(!present(&db, row), "{row} failed but is visible");
    }
    // DDL that cannot be persisted fails and changes nothing.
    let ddl = db.create_table(TableDescriptor::new("t2").family(ColumnFamilyDescriptor::new("f")));
    assert!(ddl.is_err(), "a table was created on a full disk");
    assert!(!db.table_exists("t2"));
    // A flush fails but keeps the data in the memstores.
    assert!(db.flush_table("t").is_err());
    for row in &acked {
        assert!(present(&db, row), "{row} lost by a failed flush");
    }

    // Space comes back: writes succeed again by themselves.
    std::fs::remove_file(&filler).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut i = 0;
    loop {
        let row = format!("after-{i:03}");
        match table.put(&put(&row)) {
            Ok(()) => {
                acked.push(row);
                break;
            }
            // The log retries its repair at most once a second.
            Err(_) if Instant::now() < deadline => {
                failed.push(row);
                i += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("writes did not recover after space was freed: {e}"),
        }
    }
    for i in 100..120 {
        let row = format!("after-{i:03}");
        table.put(&put(&row)).unwrap();
        acked.push(row);
    }
    db.create_table(TableDescriptor::new("t2").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    db.flush_table("t").unwrap();
    db.close().unwrap();
    drop(db);

    // After a restart every acknowledged write is there, no failed one.
    let db = Database::open_with(options(&data)).unwrap();
    for row in &acked {
        assert!(present(&db, row), "acknowledged {row} lost");
    }
    for row in &failed {
        assert!(!present(&db, row), "failed {row} reappeared");
    }
    assert!(db.table_exists("t2"));
    db.close().unwrap();
}

#[test]
fn ddl_that_cannot_write_the_catalog_fails_without_changing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let files = FaultyFileStore::new(Arc::new(LocalFileStore::new()));
    let open = |files: &FaultyFileStore| {
        Database::builder(options(tmp.path()))
            .file_store(Arc::new(files.clone()) as Arc<dyn FileStore>)
            .open()
            .unwrap()
    };
    let db = open(&files);
    db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    db.table("t").unwrap().put(&put("r")).unwrap();
    let before = db.describe_table("t").unwrap().descriptor;

    // The disk is full for the catalog: no new version can be published.
    files.fail_from(FaultOp::Finish, 1);
    let family = FamilyChange::Add(ColumnFamilyDescriptor::new("g"));
    assert!(db.alter_table("t", &[family]).is_err());
    assert_eq!(db.describe_table("t").unwrap().descriptor, before);
    let created =
        db.create_table(TableDescriptor::new("u").family(ColumnFamilyDescriptor::new("f")));
    assert!(created.is_err());
    assert!(!db.table_exists("u"));
    assert!(db.disable_table("t").is_err());
    assert!(db.is_table_enabled("t").unwrap());
    assert!(db.drop_table("t").is_err());
    assert!(db.table_exists("t"));
    assert!(present(&db, "r"));

    // Space back: DDL works again, without a restart.
    files.clear();
    db.create_table(TableDescriptor::new("u").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    db.close().unwrap();
    drop(db);
    let db = open(&files);
    assert!(db.table_exists("u"));
    assert_eq!(db.describe_table("t").unwrap().descriptor, before);
    assert!(present(&db, "r"));
    db.close().unwrap();
}
