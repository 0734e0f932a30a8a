//! Writer fencing with two real `basalt serve` processes on one storage
//! (a shared directory, and S3 on moto): server A takes writes and is
//! frozen with SIGSTOP; server B starts on another data directory with the
//! same storage, takes the data over (replaying A's log) and takes writes;
//! A is thawed and a client asks it for DDL, then keeps writing to it.
//! The DDL and every write A answers after the takeover fail with the
//! fenced error, and nothing written to A after the takeover is ever
//! visible through B, also after B restarts; everything either server
//! acknowledged before is.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use basalt_thrift::client::family;
use basalt_thrift::Client;
use bytes::Bytes;

mod common;
use common::{start_with_env, thrift_client as client, thrift_write as write, Server};

#[path = "../../../test-support/moto.rs"]
mod moto;

fn signal(server: &Server, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn all_rows(c: &mut Client) -> Vec<String> {
    let id = c.scanner_open(b"t", b"", &[]).unwrap();
    c.scan_all(id, 1000)
        .unwrap()
        .into_iter()
        .map(|r| String::from_utf8(r.row.unwrap().to_vec()).unwrap())
        .collect()
}

fn serve(storage: &str, dir: &std::path::Path, env: &[(&str, &str)]) -> Server {
    let data = dir.to_str().unwrap().to_string();
    start_with_env(
        &[
            "--data-dir",
            &data,
            "--storage",
            storage,
            "--thrift-port",
            "0",
        ],
        None,
        env,
    )
}

fn a_stale_server_is_fenced_by_the_one_that_took_over(storage: &str, env: &[(&str, &str)]) {
    let dirs = tempfile::tempdir().unwrap();

    // A takes writes (acknowledged, in its log on the storage, unflushed).
    let a = serve(storage, &dirs.path().join("a"), env);
    let mut to_a = client(&a);
    to_a.create_table(b"t", vec![family("cf")]).unwrap();
    let mut acknowledged: Vec<String> = Vec::new();
    for i in 0..50 {
        let row = format!("a-before-{i:03}");
        write(&mut to_a, &row).unwrap();
        acknowledged.push(row);
    }
    drop(to_a);
    signal(&a, "STOP");

    // B opens the same storage: it replays A's log and fences it.
    let b = serve(storage, &dirs.path().join("b"), env);
    let mut to_b = client(&b);
    assert_eq!(all_rows(&mut to_b), acknowledged, "B replayed A's log");
    for i in 0..50 {
        let row = format!("b-{i:03}");
        write(&mut to_b, &row).unwrap();
        acknowledged.push(row);
    }

    // A wakes up. Its first request is DDL: the catalog version it would
    // store was stored by B at open, so it is fenced.
    signal(&a, "CONT");
    let mut to_a = client(&a);
    let err = to_a.create_table(b"late", vec![family("cf")]).unwrap_err();
    assert!(err.to_string().contains("fenced"), "{err}");
    // Every write fails, fenced.
    let mut answered_by_a = Vec::new();
    for i in 0..20 {
        let row = format!("a-after-{i:03}");
        match write(&mut to_a, &row) {
            Ok(()) => answered_by_a.push(row),
            Err(e) => assert!(
                e.to_string()
                    .contains("fenced: another process opened this data at epoch"),
                "A's write {i} failed otherwise: {e}"
            ),
        }
    }
    assert!(
        answered_by_a.is_empty(),
        "the fenced server acknowledged {answered_by_a:?}"
    );
    // Reads are refused the same way: A's view may be stale.
    let err = to_a.get_row(b"t", b"a-before-000").unwrap_err();
    assert!(err.to_string().contains("fenced"), "{err}");
    // B keeps serving, and sees nothing written to A after the takeover.
    for i in 50..60 {
        let row = format!("b-{i:03}");
        write(&mut to_b, &row).unwrap();
        acknowledged.push(row);
    }
    acknowledged.sort();
    assert_eq!(all_rows(&mut to_b), acknowledged);
    assert_eq!(to_b.get_table_names().unwrap(), vec![Bytes::from("t")]);
    drop(to_b);
    drop(to_a);

    // B restarts (a crash: SIGKILL, so its log is replayed, not its
    // flushes): still every acknowledged row and none written to A late.
    drop(b);
    let b = serve(storage, &dirs.path().join("b"), env);
    let mut to_b = client(&b);
    assert_eq!(all_rows(&mut to_b), acknowledged);
    // And a clean stop, then a third data directory.
    drop(to_b);
    signal(&b, "TERM");
    let mut b = b;
    assert!(b.child.wait().unwrap().success());
    let c = serve(storage, &dirs.path().join("c"), env);
    let mut to_c = client(&c);
    assert_eq!(all_rows(&mut to_c), acknowledged);
    assert_eq!(to_c.get_table_names().unwrap(), vec![Bytes::from("t")]);
    // A, fenced, is still running and keeps answering with the error.
    let mut to_a = client(&a);
    let err = write(&mut to_a, "a-late").unwrap_err();
    assert!(err.to_string().contains("fenced"), "{err}");
}

#[test]
fn a_stale_server_is_fenced_on_a_shared_directory() {
    let shared = tempfile::tempdir().unwrap();
    a_stale_server_is_fenced_by_the_one_that_took_over(
        &format!("file://{}", shared.path().display()),
        &[],
    );
}

#[test]
fn a_stale_server_is_fenced_on_s3() {
    let Some(moto) = moto::start_or_skip("a_stale_server_is_fenced_on_s3") else {
        return;
    };
    let bucket = format!("fence-{}", std::process::id());
    moto.create_bucket(&bucket);
    let env = moto.aws_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    a_stale_server_is_fenced_by_the_one_that_took_over(&format!("s3://{bucket}/basalt"), &env);
}
