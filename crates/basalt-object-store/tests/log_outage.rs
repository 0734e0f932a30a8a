//! The write-ahead log on S3 while S3 is unreachable: moto is frozen with
//! SIGSTOP (connections hang, nothing answers), the way a partitioned or
//! hung store looks. A write then waits for its log object, fails after
//! the storage time bound with an error naming the log and the timeout
//! (never acknowledged), and later writes are refused with that error
//! while the log is down; reads of what the memstores and caches hold go
//! on; once S3 answers again the log repairs itself and writes resume. A
//! database opened afterwards on a new data directory holds every
//! acknowledged row.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use basalt::{
    ColumnFamilyDescriptor, Database, ErrorKind, Get, ObjectWalOptions, Options, Put,
    TableDescriptor,
};
use basalt_object_store::{open_storage, StorageConfig};

mod common;
use common::{moto, moto_config};

/// Hang guard for the recovery, not a speed check.
const RECOVERY_LIMIT: Duration = Duration::from_secs(180);

fn open(config: &StorageConfig, dir: &std::path::Path) -> Database {
    let storage = open_storage(config, dir).unwrap().unwrap();
    let mut options = Options::new(dir);
    options.background_threads = 0;
    Database::builder(options)
        .file_store(storage.file_store())
        .wal_in_file_store(ObjectWalOptions {
            repair_interval: Duration::from_millis(200),
            ..storage.wal_options()
        })
        .open()
        .unwrap()
}

fn put(row: &str) -> Put {
    Put::new(row.to_owned()).add("f", "q", format!("value of {row}"))
}

#[test]
fn writes_fail_clearly_while_s3_is_unreachable_and_resume_when_it_returns() {
    let Some(mut moto) = moto::start_or_skip(
        "writes_fail_clearly_while_s3_is_unreachable_and_resume_when_it_returns",
    ) else {
        return;
    };
    let mut config = moto_config(&moto, "log-outage", "db");
    config.request_timeout_ms = 2_000;
    let dir = tempfile::tempdir().unwrap();
    let db = open(&config, dir.path());
    db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    let table = db.table("t").unwrap();
    let mut acknowledged = Vec::new();
    for i in 0..100 {
        let row = format!("before-{i:03}");
        table.put(&put(&row)).unwrap();
        acknowledged.push(row);
    }

    moto.pause();
    // The first write waits for its log object, then fails: not
    // acknowledged, with an error naming the storage and the time bound.
    let err = table.put(&put("during-0")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WalUnavailable, "{err}");
    let text = err.to_string();
    assert!(text.contains("object storage s3://"), "{text}");
    assert!(text.contains("did not complete within"), "{text}");
    // Later writes are refused while the log is down (at once, or after
    // the bound of the repair in progress): never acknowledged.
    for i in 1..4 {
        let err = table.put(&put(&format!("during-{i}"))).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::WalUnavailable, "{err}");
    }
    // Reads of what the memstores hold go on.
    let got = table.get(&Get::new("before-042")).unwrap();
    assert_eq!(&got.value(b"f", b"q").unwrap()[..], b"value of before-042");

    moto.resume();
    // The log repairs itself (retried every repair interval): writes
    // resume without a restart.
    let deadline = Instant::now() + RECOVERY_LIMIT;
    loop {
        match table.put(&put("after-000")) {
            Ok(()) => break,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::WalUnavailable, "{e}");
                assert!(
                    Instant::now() < deadline,
                    "writes never resumed after S3 came back: {e}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    acknowledged.push("after-000".to_owned());
    for i in 1..50 {
        let row = format!("after-{i:03}");
        table.put(&put(&row)).unwrap();
        acknowledged.push(row);
    }
    // A crash: nothing flushed, the log objects are all there is.
    std::mem::forget(table);
    std::mem::forget(db);

    let other = tempfile::tempdir().unwrap();
    let db = open(&config, other.path());
    let table = db.table("t").unwrap();
    for row in &acknowledged {
        let got = table.get(&Get::new(row.clone())).unwrap();
        assert_eq!(
            got.value(b"f", b"q").map(|v| v.to_vec()),
            Some(format!("value of {row}").into_bytes()),
            "acknowledged row {row} lost"
        );
    }
    db.close().unwrap();
}
