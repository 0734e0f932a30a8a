//! `basalt serve --storage`: rows written through Thrift to a server
//! keeping its data on S3 (moto, reached through the AWS_* environment
//! variables) or a shared directory are read back by a second server that
//! starts on a fresh data directory with the same storage; the first
//! server's data directory holds only its lock and cache (the log is on
//! the storage too). A bad
//! storage URL fails at start with a sentence naming it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use basalt_thrift::client::family;
use basalt_thrift::Client;
use bytes::Bytes;

mod common;
use common::{run_to_exit, start_with_env, thrift_client as client, write_rows, Server};

#[path = "../../../test-support/moto.rs"]
mod moto;

fn terminate(mut server: Server) {
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        server.child.wait().unwrap().success(),
        "a clean stop exits 0"
    );
}

fn rows(c: &mut Client) -> Vec<(Bytes, Bytes)> {
    let id = c.scanner_open(b"t", b"", &[]).unwrap();
    c.scan_all(id, 1000)
        .unwrap()
        .into_iter()
        .map(|r| {
            let row = r.row.unwrap();
            let value = r
                .columns
                .unwrap()
                .into_values()
                .next()
                .unwrap()
                .value
                .unwrap();
            (row, value)
        })
        .collect()
}

/// Two servers one after the other on `storage`, each with its own data
/// directory.
fn hand_over(storage: &str, env: &[(&str, &str)]) {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let args = |dir: &tempfile::TempDir| {
        vec![
            "--data-dir".to_string(),
            dir.path().join("data").to_str().unwrap().to_string(),
            "--storage".to_string(),
            storage.to_string(),
            "--thrift-port".to_string(),
            "0".to_string(),
        ]
    };
    let first_args = args(&first);
    let first_args: Vec<&str> = first_args.iter().map(String::as_str).collect();
    let server = start_with_env(&first_args, None, env);
    let mut c = client(&server);
    c.create_table(b"t", vec![family("cf")]).unwrap();
    write_rows(&mut c, 0, 700);
    drop(c);
    terminate(server);

    let second_args = args(&second);
    let second_args: Vec<&str> = second_args.iter().map(String::as_str).collect();
    let server = start_with_env(&second_args, None, env);
    let mut c = client(&server);
    let got = rows(&mut c);
    assert_eq!(got.len(), 700);
    for (i, (row, value)) in got.iter().enumerate() {
        assert_eq!(&row[..], format!("row{i:05}").as_bytes());
        assert_eq!(&value[..], format!("value{i}").as_bytes());
    }
    write_rows(&mut c, 700, 710);
    drop(c);
    terminate(server);
    // The first directory's own state: its lock and its cache. The log is
    // on the storage too.
    for entry in std::fs::read_dir(first.path().join("data")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            ["LOCK", "cache", "cluster-id"]
                .iter()
                .any(|n| name.starts_with(n)),
            "{name}"
        );
    }
}

#[test]
fn a_second_server_on_a_fresh_data_directory_reads_what_the_first_wrote_to_s3() {
    let Some(moto) = moto::start_or_skip(
        "a_second_server_on_a_fresh_data_directory_reads_what_the_first_wrote_to_s3",
    ) else {
        return;
    };
    let bucket = format!("cli-{}", std::process::id());
    moto.create_bucket(&bucket);
    let env = moto.aws_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    hand_over(&format!("s3://{bucket}/basalt"), &env);
}

#[test]
fn a_second_server_on_a_fresh_data_directory_reads_what_the_first_wrote_to_a_shared_directory() {
    let shared = tempfile::tempdir().unwrap();
    hand_over(&format!("file://{}", shared.path().display()), &[]);
    assert!(shared.path().join("catalog").is_dir());
}

#[test]
fn a_malformed_storage_url_fails_at_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (code, stderr) = run_to_exit(
        &[
            "serve",
            "--data-dir",
            data.to_str().unwrap(),
            "--storage",
            "s3://No_Such_Bucket",
            "--thrift-port",
            "0",
            "--thrift2-port",
            "0",
            "--rest-port",
            "0",
        ],
        &[],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("storage URL \"s3://No_Such_Bucket\""),
        "{stderr}"
    );
}

#[test]
fn the_storage_section_of_the_config_file_is_read_and_the_flag_overrides_it() {
    let dir = tempfile::tempdir().unwrap();
    let from_file = dir.path().join("from-file");
    let from_flag = dir.path().join("from-flag");
    let config = dir.path().join("basalt.toml");
    std::fs::write(
        &config,
        format!(
            "[storage]\nurl = \"file://{}\"\ncache_bytes = 1048576\npart_bytes = 65536\n\
             request_timeout_ms = 10000\n",
            from_file.display()
        ),
    )
    .unwrap();
    let data = dir.path().join("data");
    let base = [
        "--config",
        config.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
        "--thrift-port",
        "0",
    ];
    let server = start_with_env(&base, None, &[]);
    let mut c = client(&server);
    c.create_table(b"t", vec![family("cf")]).unwrap();
    write_rows(&mut c, 0, 10);
    drop(c);
    terminate(server);
    assert!(from_file.join("data/default/t").is_dir());

    let flag = format!("file://{}", from_flag.display());
    let mut args = base.to_vec();
    args.extend(["--storage", &flag]);
    let server = start_with_env(&args, None, &[]);
    let mut c = client(&server);
    assert!(
        c.get_table_names().unwrap().is_empty(),
        "a new, empty storage"
    );
    c.create_table(b"u", vec![family("cf")]).unwrap();
    drop(c);
    terminate(server);
    let listing = format!("{:?}", walk(&from_flag));
    assert!(from_flag.join("catalog").is_dir(), "{listing}");
    assert!(!from_file.join("data/default/u").exists());
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries {
            let p = e.unwrap().path();
            out.extend(walk(&p));
            out.push(p);
        }
    }
    out
}
