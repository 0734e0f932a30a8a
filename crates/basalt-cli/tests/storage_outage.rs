//! `basalt serve --storage s3://...` while S3 is unreachable: moto is
//! frozen with SIGSTOP. A Thrift client's write waits for the log object
//! and then fails with an `IOError` naming the storage and the time bound
//! (`request_timeout_ms`, set low here); once moto is thawed, writes
//! succeed again without a restart. The server is then killed (SIGKILL)
//! and a second one on a fresh data directory holds every acknowledged
//! row.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use basalt_thrift::client::family;

mod common;
use common::{start_with_env, thrift_client as client, thrift_write as write};

#[path = "../../../test-support/moto.rs"]
mod moto;

/// Hang guard only.
const RECOVERY_LIMIT: Duration = Duration::from_secs(180);

#[test]
fn writes_fail_clearly_while_s3_is_frozen_and_resume_when_it_thaws() {
    let Some(mut moto) =
        moto::start_or_skip("writes_fail_clearly_while_s3_is_frozen_and_resume_when_it_thaws")
    else {
        return;
    };
    let bucket = format!("outage-{}", std::process::id());
    moto.create_bucket(&bucket);
    let env = moto.aws_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("basalt.toml");
    std::fs::write(
        &config,
        format!("[storage]\nurl = \"s3://{bucket}/db\"\nrequest_timeout_ms = 2000\n"),
    )
    .unwrap();
    let serve = |data: &str| {
        let data = dir.path().join(data);
        start_with_env(
            &[
                "--config",
                config.to_str().unwrap(),
                "--data-dir",
                data.to_str().unwrap(),
                "--thrift-port",
                "0",
            ],
            None,
            &env,
        )
    };

    let server = serve("first");
    let mut c = client(&server);
    c.create_table(b"t", vec![family("cf")]).unwrap();
    let mut acknowledged = Vec::new();
    for i in 0..30 {
        let row = format!("before-{i:03}");
        write(&mut c, &row).unwrap();
        acknowledged.push(row);
    }

    moto.pause();
    let err = write(&mut c, "during").unwrap_err().to_string();
    assert!(err.contains("write-ahead log is unavailable"), "{err}");
    assert!(err.contains("did not complete within 2s"), "{err}");
    moto.resume();

    let deadline = Instant::now() + RECOVERY_LIMIT;
    while let Err(e) = write(&mut c, "after-000") {
        assert!(
            Instant::now() < deadline,
            "writes never resumed after S3 came back: {e}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    acknowledged.push("after-000".to_owned());
    for i in 1..30 {
        let row = format!("after-{i:03}");
        write(&mut c, &row).unwrap();
        acknowledged.push(row);
    }
    drop(c);
    // A crash: the log objects on S3 are all the next server has.
    drop(server);

    let server = serve("second");
    let mut c = client(&server);
    for row in &acknowledged {
        let got = c.get_row(b"t", row.as_bytes()).unwrap();
        assert_eq!(got.len(), 1, "acknowledged row {row} lost");
    }
}
