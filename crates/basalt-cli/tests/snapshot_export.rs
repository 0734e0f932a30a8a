//! `basalt snapshot export` to S3 (moto): an export killed with SIGKILL
//! midway resumes with the same command without copying a verified file
//! again, and a second Basalt serving that bucket clones the snapshot
//! with exactly its cells.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use bytes::Bytes;

mod common;
use common::{start_with_env, thrift_client};

#[path = "../../../test-support/moto.rs"]
mod moto;

/// Twelve regions of table `t`, flushed twice: some fifty store files.
fn source_with_snapshot(dir: &Path) -> Vec<(Bytes, Bytes)> {
    let db = basalt::Database::open(dir).unwrap();
    let splits: Vec<Bytes> = (1..12)
        .map(|i| Bytes::from(format!("row{:03}", i * 25)))
        .collect();
    db.create_table_with_splits(
        basalt::TableDescriptor::new("t")
            .family(basalt::ColumnFamilyDescriptor::new("cf"))
            .family(basalt::ColumnFamilyDescriptor::new("cg")),
        &splits,
    )
    .unwrap();
    let table = db.table("t").unwrap();
    let mut expected = Vec::new();
    for round in 0..2 {
        for i in 0..300 {
            let row = format!("row{i:03}");
            let value = format!("{round}-{i}");
            table
                .put(
                    &basalt::Put::new(row.clone())
                        .add("cf", "q", value.clone())
                        .add("cg", "q", "x"),
                )
                .unwrap();
            if round == 1 {
                expected.push((Bytes::from(row), Bytes::from(value)));
            }
        }
        db.flush_table("t").unwrap();
    }
    db.snapshot("t", "s1", false, 0).unwrap();
    db.close().unwrap();
    expected
}

fn export_command(source: &Path, to: &str, env: &[(&'static str, String)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_basalt"));
    command
        .args([
            "snapshot",
            "export",
            "s1",
            "--parallel",
            "1",
            "--to",
            to,
            "--data-dir",
        ])
        .arg(source)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null());
    command
}

#[test]
fn an_export_to_s3_killed_midway_resumes_and_a_second_basalt_clones_it() {
    let Some(moto) =
        moto::start_or_skip("an_export_to_s3_killed_midway_resumes_and_a_second_basalt_clones_it")
    else {
        return;
    };
    let bucket = format!("export-{}", std::process::id());
    moto.create_bucket(&bucket);
    let env = moto.aws_env();
    let source = tempfile::tempdir().unwrap();
    let expected = source_with_snapshot(source.path());
    let to = format!("s3://{bucket}/other");

    // Killed (SIGKILL) after its third verified copy.
    let mut child = export_command(source.path(), &to, &env)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut progress_lines = 0;
    for line in stderr.lines() {
        if line.unwrap().starts_with("exported ") {
            progress_lines += 1;
            if progress_lines == 3 {
                child.kill().unwrap();
                break;
            }
        }
    }
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the export was killed before it finished"
    );
    assert_eq!(progress_lines, 3);

    let resumed = export_command(source.path(), &to, &env).output().unwrap();
    let stdout = String::from_utf8_lossy(&resumed.stdout);
    assert!(
        resumed.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let before: usize = stdout
        .split(", ")
        .find_map(|part| part.strip_suffix(" copied before"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        before >= 3,
        "the resumed export copied verified files again: {stdout}"
    );

    // A second Basalt on that bucket clones it.
    let data = tempfile::tempdir().unwrap();
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = start_with_env(
        &[
            "--data-dir",
            data.path().join("d").to_str().unwrap(),
            "--storage",
            &to,
            "--thrift-port",
            "0",
        ],
        None,
        &env_refs,
    );
    let shell = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["shell", "--port", &server.port.to_string(), "-e"])
        .arg("list_snapshots; clone_snapshot 's1', 'copy'")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&shell.stdout);
    assert!(
        shell.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&shell.stderr)
    );
    assert!(said.contains("s1"), "{said}");
    let mut c = thrift_client(&server);
    let id = c.scanner_open(b"copy", b"", &[b"cf:q"]).unwrap();
    let rows: Vec<(Bytes, Bytes)> = c
        .scan_all(id, 1000)
        .unwrap()
        .into_iter()
        .map(|r| {
            let value = r
                .columns
                .unwrap()
                .into_values()
                .next()
                .unwrap()
                .value
                .unwrap();
            (r.row.unwrap(), value)
        })
        .collect();
    assert_eq!(rows, expected);
}
