//! `?check=put|delete|increment|append`, single-timestamp reads and the
//! stateless scan's query parameters.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{json_row, unb64, Fixture};

fn value_of(f: &Fixture, path: &str) -> Option<Vec<u8>> {
    let reply = f.get(path, "application/json");
    if reply.status == 404 {
        return None;
    }
    let json = reply.json();
    Some(unb64(json["Row"][0]["Cell"][0]["$"].as_str().unwrap()))
}

#[test]
fn check_put_writes_only_when_the_last_cell_matches_and_answers_304_otherwise() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let seed = json_row(b"r", &[(b"cf:a", None, b"1")]);
    assert_eq!(f.put("/t/r", "application/json", &seed).status, 200);

    let body = json_row(
        b"r",
        &[
            (b"cf:a", None, b"2"),
            (b"cf:b", None, b"x"),
            (b"cf:a", None, b"1"),
        ],
    );
    assert_eq!(
        f.put("/t/r?check=put", "application/json", &body).status,
        200
    );
    assert_eq!(value_of(&f, "/t/r/cf:a").unwrap(), b"2");
    assert_eq!(value_of(&f, "/t/r/cf:b").unwrap(), b"x");

    // The check value is now stale.
    let body = json_row(b"r", &[(b"cf:a", None, b"3"), (b"cf:a", None, b"1")]);
    assert_eq!(
        f.post("/t/r?check=put", "application/json", &body).status,
        304
    );
    assert_eq!(value_of(&f, "/t/r/cf:a").unwrap(), b"2");

    // An empty check value means "only if the column is absent".
    let body = json_row(b"r", &[(b"cf:c", None, b"new"), (b"cf:c", None, b"")]);
    assert_eq!(
        f.put("/t/r?check=put", "application/json", &body).status,
        200
    );
    assert_eq!(value_of(&f, "/t/r/cf:c").unwrap(), b"new");
    assert_eq!(
        f.put("/t/r?check=put", "application/json", &body).status,
        304
    );

    // HBase requires the checked column among the cells written.
    let body = json_row(b"r", &[(b"cf:b", None, b"y"), (b"cf:a", None, b"2")]);
    assert_eq!(
        f.put("/t/r?check=put", "application/json", &body).status,
        400
    );
}

#[test]
fn check_delete_deletes_only_when_the_check_cell_matches() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let seed = json_row(b"r", &[(b"cf:a", None, b"1"), (b"cf:b", None, b"2")]);
    assert_eq!(f.put("/t/r", "application/json", &seed).status, 200);

    let miss = json_row(b"r", &[(b"cf:b", None, b""), (b"cf:a", None, b"nope")]);
    let reply = f.send(
        "DELETE",
        "/t/r?check=delete",
        &[("Content-Type", "application/json")],
        &miss,
    );
    assert_eq!(reply.status, 304);
    assert!(value_of(&f, "/t/r/cf:b").is_some());

    let hit = json_row(b"r", &[(b"cf:b", None, b""), (b"cf:a", None, b"1")]);
    let reply = f.send(
        "DELETE",
        "/t/r?check=delete",
        &[("Content-Type", "application/json")],
        &hit,
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(value_of(&f, "/t/r/cf:b").is_none());
    assert!(value_of(&f, "/t/r/cf:a").is_some());

    // A lone check cell deletes its own column.
    let alone = json_row(b"r", &[(b"cf:a", None, b"1")]);
    let reply = f.send(
        "DELETE",
        "/t/r?check=delete",
        &[("Content-Type", "application/json")],
        &alone,
    );
    assert_eq!(reply.status, 200);
    assert!(value_of(&f, "/t/r/cf:a").is_none());
}

#[test]
fn check_increment_and_append_change_counters_and_can_return_the_result() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let inc = json_row(b"r", &[(b"cf:n", None, b"5")]);
    assert_eq!(
        f.put("/t/r?check=increment", "application/json", &inc)
            .status,
        200
    );
    let reply = f.send(
        "POST",
        "/t/r?check=increment&rr=true",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
        ],
        &inc,
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let value = unb64(reply.json()["Row"][0]["Cell"][0]["$"].as_str().unwrap());
    assert_eq!(value, 10i64.to_be_bytes());

    let app = json_row(b"r", &[(b"cf:s", None, b"ab")]);
    assert_eq!(
        f.put("/t/r?check=append", "application/json", &app).status,
        200
    );
    assert_eq!(
        f.put("/t/r?check=append", "application/json", &app).status,
        200
    );
    assert_eq!(value_of(&f, "/t/r/cf:s").unwrap(), b"abab");

    let bad = json_row(b"r", &[(b"cf:n", None, b"five")]);
    assert_eq!(
        f.put("/t/r?check=increment", "application/json", &bad)
            .status,
        400
    );
    assert_eq!(
        f.put("/t/r?check=swap", "application/json", &inc).status,
        400
    );
    assert_eq!(f.get("/t/r?check=put", "application/json").status, 200);
}

#[test]
fn one_timestamp_in_the_path_reads_the_newest_version_before_it() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    for (ts, v) in [(10, "old"), (20, "new")] {
        let body = json_row(b"r", &[(b"cf:a", Some(ts), v.as_bytes())]);
        assert_eq!(f.put("/t/r", "application/json", &body).status, 200);
    }
    assert_eq!(value_of(&f, "/t/r/cf:a/20").unwrap(), b"old");
    assert_eq!(value_of(&f, "/t/r/cf:a/21").unwrap(), b"new");
    assert!(value_of(&f, "/t/r/cf:a/10").is_none());
    let both = f.get("/t/r/cf:a/?v=3", "application/json").json();
    assert_eq!(both["Row"][0]["Cell"].as_array().unwrap().len(), 2);
}

#[test]
fn a_stateless_scan_takes_rows_columns_limit_and_reversed_from_the_query() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    for i in 0..5 {
        let row = format!("row-{i}");
        let body = json_row(
            row.as_bytes(),
            &[(b"cf:a", None, b"x"), (b"cf:b", None, b"y")],
        );
        assert_eq!(f.put("/t/fakerow", "application/json", &body).status, 200);
    }
    let keys = |path: &str| -> Vec<String> {
        let json = f.get(path, "application/json").json();
        json["Row"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| String::from_utf8(unb64(r["key"].as_str().unwrap())).unwrap())
            .collect()
    };
    assert_eq!(
        keys("/t/*?startrow=row-3&endrow=row-1&reversed=true"),
        ["row-3", "row-2"]
    );
    assert_eq!(keys("/t/*?startrow=row-1&limit=2"), ["row-1", "row-2"]);
    let one_column = f
        .get("/t/*?column=cf:b&endrow=row-1", "application/json")
        .json();
    assert_eq!(one_column["Row"][0]["Cell"].as_array().unwrap().len(), 1);
    let filtered = keys("/t/*?filter=PrefixFilter('row-4')");
    assert_eq!(filtered, ["row-4"]);
    assert_eq!(f.get("/t/*?reversed=maybe", "application/json").status, 400);
}
