//! `basalt shell` as a process: transcripts run through standard input
//! against a live `basalt serve` and against a data directory must both
//! print exactly the transcript (timestamps, region ids and elapsed times
//! masked); `-e`, script files and exit statuses; split and merge.
//!
//! A transcript (`tests/transcripts/*.txt`) is what `basalt shell --echo`
//! prints: each input line as `> line`, then its output. Set
//! `BASALT_BLESS=1` to rewrite the files from the server run (then review
//! the diff).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use regex::Regex;

use common::{remote_args, serve, shell};

/// Masks what changes from run to run: the current time in timestamps,
/// region ids and snapshot creation times, region encoded names, elapsed
/// times, and the gateways
/// (a server's free ports; an embedded shell has none). The gateway lines
/// themselves are checked by `status_and_list_regions_name_the_gateways`.
fn mask(text: &str) -> String {
    let took = Regex::new(r"Took \d+\.\d{4} seconds").unwrap();
    let now = Regex::new(r"timestamp=1\d{12}\b").unwrap();
    let region = Regex::new(r",1\d{12}\.[0-9a-f]{32}\.").unwrap();
    let gateways = Regex::new(r"gateways: .*").unwrap();
    let created = Regex::new(r"\(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)").unwrap();
    let text = took.replace_all(text, "Took <T> seconds");
    let text = created.replace_all(&text, "(<CREATED>)");
    let text = now.replace_all(&text, "timestamp=<NOW>");
    let text = gateways.replace_all(&text, "gateways: <GATEWAYS>");
    region.replace_all(&text, ",<ID>.<ENC>.").into_owned()
}

#[test]
fn status_and_list_regions_name_the_gateways() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"));
    let mut args: Vec<String> = remote_args(&server);
    args.extend([
        "-e".into(),
        "create 't', 'f'; status; list_regions 't'".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = shell(&args, "");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{stdout}");
    let thrift = format!("thrift 127.0.0.1:{}", server.port);
    let status_line = stdout
        .lines()
        .find(|l| l.starts_with("gateways: "))
        .unwrap_or_else(|| panic!("no gateways line in status: {stdout}"));
    assert!(status_line.contains(&thrift), "{status_line}");
    let served_by = stdout
        .lines()
        .find(|l| l.starts_with(" served by gateways: "))
        .unwrap_or_else(|| panic!("no served-by line in list_regions: {stdout}"));
    assert!(served_by.contains(&thrift), "{served_by}");

    // The embedded shell has no network gateways and says so.
    let data = dir.path().join("embedded");
    let out = shell(&["--data-dir", data.to_str().unwrap(), "-e", "status"], "");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("gateways: none (embedded database)"),
        "{stdout}"
    );
}

fn transcript_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/transcripts")
        .join(format!("{name}.txt"))
}

/// The input lines of a transcript.
fn script_of(transcript: &str) -> String {
    transcript
        .lines()
        .filter_map(|l| l.strip_prefix("> ").or_else(|| (l == ">").then_some("")))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn run_transcript(name: &str) {
    let path = transcript_path(name);
    let mut expected = std::fs::read_to_string(&path).unwrap();
    let script = script_of(&expected);

    // Against a live server.
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"));
    let mut args: Vec<String> = remote_args(&server);
    args.extend(["--echo".into(), "--keep-going".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = shell(&args, &script);
    let remote = mask(&String::from_utf8(out.stdout).unwrap());
    drop(server);
    if std::env::var_os("BASALT_BLESS").is_some() {
        std::fs::write(&path, &remote).unwrap();
        expected = remote.clone();
    }
    assert_eq!(remote, expected, "{name}: output over Thrift differs");
    let expect_errors = expected.lines().any(|l| l.starts_with("ERROR: "));
    assert_eq!(
        out.status.success(),
        !expect_errors,
        "{name}: exit status {:?}; stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );

    // Against a data directory opened by the shell itself.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = shell(
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "--echo",
            "--keep-going",
        ],
        &script,
    );
    let embedded = mask(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(
        embedded, remote,
        "{name}: the embedded shell prints differently from the remote one"
    );
    assert_eq!(out.status.success(), !expect_errors);
}

#[test]
fn transcript_snapshots() {
    run_transcript("snapshots");
}

/// Without access control, the security commands say it is off.
#[test]
fn transcript_security() {
    run_transcript("security");
}

#[test]
fn transcript_seeds() {
    run_transcript("seeds");
}

/// The seeds' orders with buyer and seller index tables, kept by the
/// database (issue 36).
#[test]
fn transcript_indexes() {
    run_transcript("indexes");
}

#[test]
fn transcript_general() {
    run_transcript("general");
}

#[test]
fn transcript_ddl() {
    run_transcript("ddl");
}

#[test]
fn transcript_dml() {
    run_transcript("dml");
}

#[test]
fn transcript_tools() {
    run_transcript("tools");
}

#[test]
fn transcript_namespaces() {
    run_transcript("namespaces");
}

#[test]
fn transcript_bad_input() {
    run_transcript("bad_input");
}

#[test]
fn execute_flag_stops_at_the_first_error() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let out = shell(
        &[
            "--data-dir",
            data,
            "-e",
            "create 't', 'f'; bogus 1; create 'u', 'f'",
        ],
        "",
    );
    assert!(!out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("Created table t"), "{stdout}");
    assert!(
        stdout.contains("ERROR: Unknown command 'bogus'"),
        "{stdout}"
    );
    assert!(!stdout.contains("Created table u"), "{stdout}");

    // The same from a script file, which also stops at its first error.
    let script = dir.path().join("script.rb");
    std::fs::write(&script, "list\nput 't', 'r'\ncreate 'v', 'f'\n").unwrap();
    let out = shell(&["--data-dir", data, script.to_str().unwrap()], "");
    assert!(!out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("=> [\"t\"]"), "{stdout}");
    assert!(
        stdout.contains("ERROR: wrong number of arguments (2 for 4 to 5)"),
        "{stdout}"
    );
    assert!(!stdout.contains("Created table v"), "{stdout}");

    // A clean script exits 0; `exit` ends it early.
    let out = shell(
        &[
            "--data-dir",
            data,
            "-e",
            "exists 't'; exit; create 'w', 'f'",
        ],
        "",
    );
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("Table t does exist"), "{stdout}");
    assert!(!stdout.contains("Created table w"), "{stdout}");
}

#[test]
fn data_directory_held_by_a_server_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = serve(&data);
    let out = shell(&["--data-dir", data.to_str().unwrap(), "-e", "list"], "");
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("locked"), "{stderr}");
    assert!(stderr.contains("--host/--port"), "{stderr}");
    drop(server);

    // No server at all: a clear connection error.
    let out = shell(&["--port", "1", "-e", "list"], "");
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("cannot connect to a Basalt server at 127.0.0.1:1"),
        "{stderr}"
    );
}

/// Standard input is served a line at a time, and a shell whose server
/// restarted reports the broken connection once and then reconnects.
#[test]
fn stdin_lines_run_as_they_come_and_the_shell_reconnects() {
    use std::io::{BufRead, BufReader};

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = serve(&data);
    let port = server.port;
    let mut child = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["shell", "--keep-going", "--port", &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut read_until = |needle: &str| {
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "output ended before {needle:?}: {seen}"
            );
            seen.push_str(&line);
            if line.contains(needle) {
                return seen;
            }
        }
    };
    writeln!(stdin, "create 't', 'f'").unwrap();
    read_until("=> Hbase::Table - t");

    drop(server);
    let server = common::serve_on(&data, port);
    writeln!(stdin, "list").unwrap();
    let seen = read_until("ERROR: ");
    assert!(seen.contains("lost the connection to the server"), "{seen}");
    writeln!(stdin, "list").unwrap();
    read_until("=> [\"t\"]");

    drop(stdin);
    assert!(!child.wait().unwrap().success(), "one command failed");
    drop(server);
}

/// Reads longer than one admin page (1000 rows) and Thrift scanner pages
/// print the same over Thrift as from the data directory.
#[test]
fn paged_reads_print_the_same_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut load = String::from("create 't', 'f', SPLITS => ['k01000', 'k02000']\n");
    for i in 0..2500 {
        load.push_str(&format!("put 't', 'k{i:05}', 'f:q', 'v{i}', 10\n"));
    }
    let queries = [
        "scan 't', {VERSIONS => 2, ROWPREFIXFILTER => 'k01'}",
        "scan 't', {VERSIONS => 2, ROWPREFIXFILTER => 'k01', REVERSED => true}",
        "scan 't', {VERSIONS => 2, REVERSED => true, LIMIT => 1500}",
        "scan 't', {RAW => true, STARTROW => 'k00500', STOPROW => 'k02100'}",
        "scan 't', {CACHE => 7, STARTROW => 'k00990'}",
        "count 't', INTERVAL => 1000, CACHE => 300",
    ];
    let script = queries.join("\n");
    let server = serve(&data);
    let args = remote_args(&server);
    let mut remote: Vec<&str> = args.iter().map(String::as_str).collect();
    remote.push("--echo");
    let out = shell(&remote, &load);
    assert!(out.status.success());
    let over_thrift = shell(&remote, &script);
    assert!(over_thrift.status.success());
    drop(server);
    let embedded = shell(&["--data-dir", data.to_str().unwrap(), "--echo"], &script);
    assert!(embedded.status.success());
    let over_thrift = mask(&String::from_utf8(over_thrift.stdout).unwrap());
    let embedded = mask(&String::from_utf8(embedded.stdout).unwrap());
    assert_eq!(over_thrift, embedded);
    for (rows, what) in [
        ("1000 row(s)", "the k01 prefix"),
        ("1500 row(s)", "the reversed limit"),
        ("1600 row(s)", "the raw range"),
        ("1510 row(s)", "the scan from k00990"),
        ("2500 row(s)", "the count"),
    ] {
        assert!(embedded.contains(rows), "{what}: no {rows:?}");
    }
    assert!(embedded.contains("Current count: 2000, row: k01999"));
}

/// Encoded region names of a table, in key order, from `list_regions`.
fn encoded_regions(args: &[&str], table: &str) -> Vec<String> {
    let mut full: Vec<&str> = args.to_vec();
    let command = format!("list_regions '{table}'");
    full.extend(["-e", &command]);
    let out = shell(&full, "");
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let re = Regex::new(r",\d{13}\.([0-9a-f]{32})\.").unwrap();
    re.captures_iter(&stdout)
        .map(|c| c[1].to_string())
        .collect()
}

fn split_then_merge(args: &[&str]) {
    let mut setup: Vec<&str> = args.to_vec();
    setup.extend([
        "-e",
        "create 's', 'f'; put 's', 'a', 'f:q', '1'; put 's', 'm', 'f:q', '2'; put 's', 'z', 'f:q', '3'; split 's', 'm'",
    ]);
    let out = shell(&setup, "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let regions = encoded_regions(args, "s");
    assert_eq!(regions.len(), 2, "split 's', 'm' makes two regions");
    let mut splits: Vec<&str> = args.to_vec();
    splits.extend(["-e", "get_splits 's'"]);
    let out = shell(&splits, "");
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("=> [\"m\"]"));

    let merge = format!("merge_region '{}', '{}'", regions[0], regions[1]);
    let mut m: Vec<&str> = args.to_vec();
    m.extend(["-e", &merge]);
    let out = shell(&m, "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        encoded_regions(args, "s").len(),
        1,
        "merge makes one region"
    );
    let mut count: Vec<&str> = args.to_vec();
    count.extend(["-e", "count 's'"]);
    let out = shell(&count, "");
    assert!(String::from_utf8(out.stdout).unwrap().contains("=> 3"));

    // Splitting a table that does not exist or merging unknown regions
    // prints an error and fails the script.
    for bad in ["split 'nope'", "merge_region 'aaaa', 'bbbb'"] {
        let mut b: Vec<&str> = args.to_vec();
        b.extend(["-e", bad]);
        let out = shell(&b, "");
        assert!(!out.status.success(), "{bad} succeeded");
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(stdout.starts_with("ERROR: "), "{bad}: {stdout}");
    }
}

#[test]
fn split_and_merge_region_remote() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"));
    let args = remote_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    split_then_merge(&args);
}

#[test]
fn split_and_merge_region_embedded() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    split_then_merge(&["--data-dir", data.to_str().unwrap()]);
}

/// The security commands against a server with access control on: the
/// shell over Thrift acts as the server user, a superuser.
#[test]
fn grant_revoke_and_user_permission_manage_a_servers_grants() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("basalt.toml");
    std::fs::write(
        &config,
        "[security]\nauthorization = true\nserver_user = \"admin\"\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let server = common::start(
        &[
            "--thrift-port",
            "0",
            "--data-dir",
            data.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        None,
    );
    let mut args: Vec<String> = remote_args(&server);
    args.extend(["--keep-going".into(), "-e".into()]);
    args.push(
        [
            "create 'acl_t', 'f'",
            "grant 'bob', 'RW', 'acl_t'",
            "grant '@devs', 'R', 'acl_t', 'f', 'q'",
            "grant 'carol', 'C', '@default'",
            "user_permission 'acl_.*'",
            "user_permission '@def.*'",
            "user_permission",
            "revoke 'bob', 'acl_t'",
            "user_permission 'acl_t'",
            "grant 'bob', 'RZ', 'acl_t'",
        ]
        .join("; "),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = shell(&args, "");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected_lines = [
        " bob                               default,acl_t,,: [Permission: actions=READ,WRITE]",
        " @devs                             default,acl_t,f,q: [Permission: actions=READ]",
        " carol                             default,,,: [Permission: actions=CREATE]",
        " admin                             ,,,: [Permission: actions=READ,WRITE,EXEC,CREATE,ADMIN]",
    ];
    for line in expected_lines {
        assert!(
            stdout.lines().any(|l| l == line),
            "no line {line:?} in:\n{stdout}\n{stderr}"
        );
    }
    // The table's creator (the server user the shell acts as) owns it;
    // after the revoke bob is gone from the table's grants.
    let last_listing = stdout
        .rsplit("Namespace,Table,Family,Qualifier:Permission")
        .next()
        .unwrap();
    assert!(!last_listing.contains(" bob "), "{last_listing}");
    assert!(last_listing.contains(" admin                             default,acl_t,,: [Permission: actions=READ,WRITE,EXEC,CREATE,ADMIN]"), "{last_listing}");
    assert!(last_listing.contains("2 row(s)"), "{last_listing}");
    assert!(
        format!("{stdout}{stderr}").contains("'Z' at 1 of permissions 'RZ'"),
        "{stdout}\n{stderr}"
    );
}
