//! `basalt keys analyze` as a process: a file of timestamp-prefixed keys
//! gets the monotonic prefix and salting with split points; salted keys
//! get an even spread; a live server's table is read with its regions;
//! a data directory too, with the schema warnings; bad input is an error
//! message and exit status 2 (1 for a table that cannot be read), never a
//! panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use basalt::keys::text::escape_bytes;
use basalt::keys::Salt;
use basalt::{ColumnFamilyDescriptor, Database, Put, TableDescriptor};

use common::serve;

const T0: u64 = 1_763_884_800_123;

fn basalt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// Timestamp-prefixed keys in write order: `1763884800123-user42`.
fn timestamp_keys(n: u64) -> Vec<String> {
    (0..n)
        .map(|i| format!("{}-user{}", T0 + i * 1_013, (i * 7_919) % 1_000))
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn timestamp_prefixed_keys_get_the_monotonic_prefix_and_salting_with_split_points() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.txt");
    write_lines(&file, &timestamp_keys(3_000));
    let out = basalt(&["keys", "analyze", "--file", file.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    // The recommendation comes first.
    let first = text.lines().position(|l| l.starts_with("  1. ")).unwrap();
    assert!(
        text.lines()
            .nth(first)
            .unwrap()
            .contains("Salt the keys into 16 buckets"),
        "{text}"
    );
    assert!(first < text.lines().position(|l| l == "FINDINGS").unwrap());
    assert!(
        text.contains("monotonic increasing prefix: bytes 0..13"),
        "{text}"
    );
    assert!(
        text.contains("epoch milliseconds as 13 decimal digits"),
        "{text}"
    );
    assert!(
        text.contains("100.0% of keys are above every key before them"),
        "{text}"
    );
    assert!(
        text.contains(r#"SPLITS => ["\x01", "\x02", "\x03""#),
        "{text}"
    );

    let out = basalt(&[
        "keys",
        "analyze",
        "--file",
        file.to_str().unwrap(),
        "--json",
        "--regions",
        "8",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["monotonic"]["direction"], "increasing");
    assert_eq!(json["monotonic"]["field"]["kind"]["kind"], "epoch_decimal");
    assert_eq!(json["monotonic"]["field"]["kind"]["unit"], "millis");
    assert_eq!(json["monotonic"]["field"]["end"], 13);
    assert_eq!(json["recommendations"][0]["kind"], "salt");
    let max = json["recommendations"][0]["numbers"]["max_share"]
        .as_f64()
        .unwrap();
    assert!(max < 1.3 / 16.0, "{max}");
    // --regions 8 with 16 buckets: 7 split points from the salted sample.
    assert_eq!(json["split_points"].as_array().unwrap().len(), 7);
}

#[test]
fn already_salted_keys_get_an_even_spread_and_no_cure() {
    let dir = tempfile::tempdir().unwrap();
    let salt = Salt::new(16).unwrap();
    let lines: Vec<String> = timestamp_keys(3_000)
        .iter()
        .map(|k| escape_bytes(&salt.encode(k.as_bytes())))
        .collect();
    let file = dir.path().join("salted.txt");
    write_lines(&file, &lines);
    let path = file.to_str().unwrap();
    let out = basalt(&[
        "keys",
        "analyze",
        "--file",
        path,
        "--format",
        "binary-escaped",
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(
        text.contains("1. Keep the keys: their leading bytes already spread"),
        "{text}"
    );
    assert!(
        text.contains("even spread: the first 1 byte(s) take 16 values"),
        "{text}"
    );
    assert!(text.contains("no monotonic prefix"), "{text}");
    assert!(!text.contains("Salt the keys"), "{text}");

    let out = basalt(&[
        "keys",
        "analyze",
        "--file",
        path,
        "--format",
        "binary-escaped",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["layout"]["layout"], "spread");
    assert_eq!(json["layout"]["distinct"], 16);
    assert!(json["monotonic"].is_null());
    let (max, min) = (
        json["layout"]["max_share"].as_f64().unwrap(),
        json["layout"]["min_share"].as_f64().unwrap(),
    );
    assert!(max / min < 1.5, "{max} / {min}");
    assert_eq!(json["split_points"].as_array().unwrap().len(), 15);
}

#[test]
fn a_servers_table_is_read_with_its_region_spread() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"));
    let port = server.port.to_string();
    let mut script =
        String::from("create 'events', 'd', SPLITS => ['1763884800500', '1763884801000']\n");
    for k in timestamp_keys(300) {
        script.push_str(&format!("put 'events', '{k}', 'd:q', 'v'\n"));
    }
    let out = basalt(&["shell", "--port", &port, "-e", &script]);
    assert!(out.status.success(), "{}", stderr(&out));

    let out = basalt(&["keys", "analyze", "--table", "events", "--port", &port]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(
        text.contains("from table 'events' on server 127.0.0.1:"),
        "{text}"
    );
    assert!(text.contains("(300 rows scanned)"), "{text}");
    assert!(text.contains("REGIONS (3)"), "{text}");
    assert!(
        text.contains("all new writes go to region 3 ['1763884801000', +inf)"),
        "{text}"
    );
    let hot = text.lines().find(|l| l.contains("<- new writes")).unwrap();
    assert!(hot.trim_start().starts_with("3 "), "{hot}");
    // Three regions: three buckets, split at their boundaries.
    assert!(text.contains("Salt the keys into 3 buckets"), "{text}");
    assert!(text.contains(r#"SPLITS => ["\x01", "\x02"]"#), "{text}");

    // A file of keys judged against the table's regions.
    let file = dir.path().join("next.txt");
    write_lines(&file, &timestamp_keys(1_000)[500..]);
    let out = basalt(&[
        "keys",
        "analyze",
        "--file",
        file.to_str().unwrap(),
        "--table",
        "events",
        "--port",
        &port,
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["regions"]["hot_region"], 2);
    assert_eq!(json["regions"]["recent_share_in_hot"], 1.0);
    assert_eq!(json["regions"]["regions"][2]["share"], 1.0);

    let out = basalt(&["keys", "analyze", "--table", "nope", "--port", &port]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("table not found: nope"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_data_directory_is_read_with_the_schema_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let salt = Salt::new(4).unwrap();
    {
        let db = Database::open(&data).unwrap();
        let mut desc = TableDescriptor::new("wide");
        for f in ["a", "b", "c", "information"] {
            desc = desc.family(ColumnFamilyDescriptor::new(f));
        }
        db.create_table_with_splits(desc, &salt.split_keys_bytes())
            .unwrap();
        let table = db.table("wide").unwrap();
        for i in 0..400u64 {
            let key = salt.encode(format!("{:08}", i).as_bytes());
            let mut put = Put::new(key);
            // A few rows are very wide: rows growing without bound.
            let cells = if i % 50 == 7 { 2_000 } else { 3 };
            for q in 0..cells {
                put = put.add("a", format!("q{q}"), "v");
            }
            table.put(&put).unwrap();
        }
        db.close().unwrap();
    }
    let out = basalt(&[
        "keys",
        "analyze",
        "--data-dir",
        data.to_str().unwrap(),
        "--table",
        "wide",
        "--shape-rows",
        "400",
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(
        text.contains("from table 'wide' on data directory"),
        "{text}"
    );
    assert!(
        text.contains("even spread: the first 1 byte(s) take 4 values"),
        "{text}"
    );
    assert!(
        text.contains("WARNING: table wide has 4 column families"),
        "{text}"
    );
    assert!(
        text.contains("WARNING: family 'information' is 11 bytes long"),
        "{text}"
    );
    assert!(
        text.contains("WARNING: sampled rows grow without bound"),
        "{text}"
    );
}

#[test]
fn bad_input_is_a_clear_error_and_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let check = |args: &[&str], code: i32, message: &str| {
        let out = basalt(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    };
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "\n\n").unwrap();
    check(
        &["keys", "analyze", "--file", empty.to_str().unwrap()],
        2,
        "holds no keys",
    );
    let escaped = dir.path().join("escaped.txt");
    std::fs::write(&escaped, "good\\x01\nbad\\xZZ\n").unwrap();
    check(
        &[
            "keys",
            "analyze",
            "--file",
            escaped.to_str().unwrap(),
            "--format",
            "binary-escaped",
        ],
        2,
        "line 2: undecodable escape '\\xZZ' at offset 3",
    );
    check(
        &[
            "keys",
            "analyze",
            "--file",
            escaped.to_str().unwrap(),
            "--format",
            "hex",
        ],
        2,
        "line 1:",
    );
    check(
        &["keys", "analyze", "--file", "/no/such/file"],
        2,
        "cannot read /no/such/file",
    );
    check(&["keys", "analyze"], 2, "--file");
    check(
        &[
            "keys",
            "analyze",
            "--file",
            empty.to_str().unwrap(),
            "--buckets",
            "0",
        ],
        2,
        "--buckets",
    );
    // No server listens on port 1.
    check(
        &["keys", "analyze", "--table", "t", "--port", "1"],
        1,
        "cannot connect",
    );
    let data = dir.path().join("none");
    check(
        &[
            "keys",
            "analyze",
            "--table",
            "missing",
            "--data-dir",
            data.to_str().unwrap(),
        ],
        1,
        "table not found: missing",
    );
}

/// Issue 36: a filter that reads the whole table for a few rows gets an
/// index suggestion with the shell command, until the index exists.
#[test]
fn value_filters_that_read_the_whole_table_get_an_index_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"));
    let port = server.port.to_string();
    let mut script = String::from("create 'orders', 'o'\n");
    for i in 0..1_200 {
        script.push_str(&format!(
            "put 'orders', 'order-{i:05}', 'o:buyer', 'buyer-{}'\n",
            i % 400
        ));
    }
    script.push_str(
        "scan 'orders', {FILTER => \"SingleColumnValueFilter('o', 'buyer', =, 'binary:buyer-7')\"}\n",
    );
    let out = basalt(&["shell", "--port", &port, "-e", &script]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = basalt(&["keys", "analyze", "--table", "orders", "--port", &port]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(
        text.contains("filtering on o:buyer read 1200 rows to return 3")
            && text.contains("create_index 'orders', 'by_buyer', {COLUMNS => ['o:buyer']}"),
        "{text}"
    );
    let out = basalt(&[
        "shell",
        "--port",
        &port,
        "-e",
        "create_index 'orders', 'by_buyer', {COLUMNS => ['o:buyer']}",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = basalt(&["keys", "analyze", "--table", "orders", "--port", &port]);
    assert!(!stdout(&out).contains("create_index"), "{}", stdout(&out));
}
