//! Scanners: created with a description, read in batches until 204, read
//! cell by cell as raw values, deleted; bounded in number.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{b64, json_cells, json_row, Fixture};

const JSON: &str = "application/json";
const XML: &str = "text/xml";

fn fill(f: &Fixture, rows: &[&str]) {
    f.create_table("t", &["cf"]);
    for row in rows {
        f.put(
            "/t/x",
            JSON,
            &json_row(
                row.as_bytes(),
                &[(b"cf:a", None, b"1"), (b"cf:b", None, b"2")],
            ),
        );
    }
}

/// Creates a scanner and returns its path (from the Location header).
fn open(f: &Fixture, content_type: &str, body: &[u8]) -> String {
    let reply = f.put("/t/scanner", content_type, body);
    assert_eq!(reply.status, 201, "{}", reply.text());
    let location = reply.header("location").unwrap().to_string();
    let prefix = format!("http://{}", f.addr);
    assert!(location.starts_with(&prefix), "{location}");
    location[prefix.len()..].to_string()
}

#[test]
fn a_scanner_reads_its_range_in_batches_then_answers_no_content() {
    let f = Fixture::new();
    fill(&f, &["a", "b", "c", "d"]);
    let body = format!(
        r#"<Scanner batch="3" startRow="{}" endRow="{}"/>"#,
        b64(b"b"),
        b64(b"d")
    );
    let scanner = open(&f, XML, body.as_bytes());

    let first = json_cells(&f.get(&scanner, JSON));
    let keys: Vec<(&[u8], &[u8])> = first.iter().map(|c| (&c.0[..], &c.1[..])).collect();
    assert_eq!(
        keys,
        vec![(&b"b"[..], &b"cf:a"[..]), (b"b", b"cf:b"), (b"c", b"cf:a")],
        "a batch may end inside a row"
    );
    let second = json_cells(&f.get(&scanner, JSON));
    assert_eq!(second.len(), 1);
    assert_eq!(
        (&second[0].0[..], &second[0].1[..]),
        (&b"c"[..], &b"cf:b"[..])
    );
    let done = f.get(&scanner, JSON);
    assert_eq!(done.status, 204);
    assert!(done.body.is_empty());
    assert_eq!(f.delete(&scanner).status, 200);
    assert_eq!(f.get(&scanner, JSON).status, 404);
}

#[test]
fn a_json_scanner_with_columns_reads_only_them() {
    let f = Fixture::new();
    fill(&f, &["a", "b"]);
    let body = format!(r#"{{"column":["{}"]}}"#, b64(b"cf:b"));
    let scanner = open(&f, JSON, body.as_bytes());
    let cells = json_cells(&f.get(&scanner, JSON));
    let columns: Vec<&[u8]> = cells.iter().map(|c| &c.1[..]).collect();
    assert_eq!(columns, vec![&b"cf:b"[..], b"cf:b"]);
}

#[test]
fn the_n_parameter_limits_rows_per_answer() {
    let f = Fixture::new();
    fill(&f, &["a", "b", "c"]);
    let scanner = open(&f, JSON, b"{}");
    let rows: Vec<Vec<u8>> = json_cells(&f.get(&format!("{scanner}?n=2"), JSON))
        .into_iter()
        .map(|c| c.0)
        .collect();
    assert_eq!(
        rows,
        vec![b"a".to_vec(), b"a".to_vec(), b"b".to_vec(), b"b".to_vec()]
    );
    let rows: Vec<Vec<u8>> = json_cells(&f.get(&scanner, JSON))
        .into_iter()
        .map(|c| c.0)
        .collect();
    assert_eq!(rows, vec![b"c".to_vec(), b"c".to_vec()]);
}

#[test]
fn a_binary_scanner_read_gives_one_cell_with_its_coordinates_in_headers() {
    let f = Fixture::new();
    fill(&f, &["r"]);
    let scanner = open(&f, JSON, b"{}");
    let reply = f.get(&scanner, "application/octet-stream");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, b"1");
    assert_eq!(reply.header("x-row"), Some(b64(b"r").as_str()));
    assert_eq!(reply.header("x-column"), Some(b64(b"cf:a").as_str()));
    assert!(reply.header("x-timestamp").is_some());
    assert_eq!(f.get(&scanner, "application/octet-stream").body, b"2");
    assert_eq!(f.get(&scanner, "application/octet-stream").status, 204);
}

#[test]
fn scanners_read_every_version_unless_told_otherwise() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    for ts in [1, 2] {
        f.put("/t/r", JSON, &json_row(b"r", &[(b"cf:a", Some(ts), b"v")]));
    }
    let all = open(&f, JSON, b"{}");
    assert_eq!(json_cells(&f.get(&all, JSON)).len(), 2);
    let latest = open(&f, JSON, br#"{"maxVersions":1}"#);
    assert_eq!(json_cells(&f.get(&latest, JSON)).len(), 1);
}

#[test]
fn a_scanner_on_a_missing_table_is_not_found_and_a_malformed_filter_is_refused() {
    let f = Fixture::new();
    assert_eq!(f.put("/missing/scanner", JSON, b"{}").status, 404);
    f.create_table("t", &["cf"]);
    let reply = f.put(
        "/t/scanner",
        JSON,
        br#"{"filter":"{\"type\":\"PrefixFilter\",\"value\":\"@@\"}"}"#,
    );
    assert_eq!(reply.status, 400);
    assert!(reply.text().contains("not base64"), "{}", reply.text());
    assert_eq!(f.server().open_scanners(), 0);
}

#[test]
fn a_scanner_id_does_not_serve_another_table() {
    let f = Fixture::new();
    fill(&f, &["a"]);
    f.create_table("u", &["cf"]);
    let scanner = open(&f, JSON, b"{}");
    let other = scanner.replacen("/t/", "/u/", 1);
    assert_eq!(f.get(&other, JSON).status, 404);
}

#[test]
fn scanners_beyond_max_scanners_are_refused_until_one_is_deleted() {
    let f = Fixture::with(basalt_rest::RestConfig {
        max_scanners: 2,
        ..Default::default()
    });
    fill(&f, &["a"]);
    let first = open(&f, JSON, b"{}");
    open(&f, JSON, b"{}");
    let refused = f.put("/t/scanner", JSON, b"{}");
    assert_eq!(refused.status, 503);
    assert!(
        refused.text().contains("max_scanners"),
        "{}",
        refused.text()
    );
    f.delete(&first);
    open(&f, JSON, b"{}");
    assert_eq!(f.server().open_scanners(), 2);
}
