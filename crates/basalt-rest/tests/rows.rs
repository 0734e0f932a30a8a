//! Cells through `/<table>/<row>/...`: writes as cell sets (XML, JSON) and
//! raw values, reads in every format, versions, timestamps, ranges,
//! multiget and deletes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{b64, json_cells, json_row, unb64, Fixture};

const JSON: &str = "application/json";
const XML: &str = "text/xml";
const BINARY: &str = "application/octet-stream";

#[test]
fn a_json_cell_set_written_to_a_row_reads_back_in_json() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let reply = f.put(
        "/t/r1",
        JSON,
        &json_row(
            b"r1",
            &[(b"cf:a", Some(5), b"one"), (b"cf:b", None, b"two")],
        ),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());

    let reply = f.get("/t/r1", JSON);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some(JSON));
    let cells = json_cells(&reply);
    assert_eq!(cells.len(), 2);
    assert_eq!(
        cells[0],
        (b"r1".to_vec(), b"cf:a".to_vec(), 5, b"one".to_vec())
    );
    assert_eq!(
        (cells[1].1.as_slice(), cells[1].3.as_slice()),
        (&b"cf:b"[..], &b"two"[..])
    );
    assert!(
        cells[1].2 > 5,
        "a cell without a timestamp takes the server's clock"
    );
}

#[test]
fn an_xml_cell_set_writes_several_rows_and_reads_back_as_xml() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let body = format!(
        r#"<?xml version="1.0"?><CellSet><Row key="{}"><Cell column="{}" timestamp="3">{}</Cell></Row><Row key="{}"><Cell column="{}">{}</Cell></Row></CellSet>"#,
        b64(b"a"),
        b64(b"cf:q"),
        b64(b"<&>"),
        b64(b"b"),
        b64(b"cf:q"),
        b64(b"\x00\xff")
    );
    // The URL's row is a placeholder when the body names its rows.
    assert_eq!(f.put("/t/fakerow", XML, body.as_bytes()).status, 200);

    let reply = f.get("/t/a", XML);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some(XML));
    let text = reply.text();
    assert!(
        text.contains(&format!(
            r#"<Row key="{}"><Cell column="{}" timestamp="3">{}</Cell></Row>"#,
            b64(b"a"),
            b64(b"cf:q"),
            b64(b"<&>")
        )),
        "{text}"
    );
    let reply = f.get("/t/b/cf:q", BINARY);
    assert_eq!(reply.body, b"\x00\xff");
}

#[test]
fn with_no_accept_header_a_row_is_xml() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    f.put("/t/r", JSON, &json_row(b"r", &[(b"cf:a", None, b"v")]));
    let reply = f.send("GET", "/t/r", &[], b"");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some(XML));
    assert!(reply.text().starts_with("<?xml"));
}

#[test]
fn a_raw_value_is_written_and_read_as_octet_stream_with_its_timestamp() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    assert_eq!(
        f.send(
            "PUT",
            "/t/r/cf:q",
            &[("Content-Type", BINARY), ("X-Timestamp", "77")],
            b"raw\x01"
        )
        .status,
        200
    );
    let reply = f.get("/t/r/cf:q", BINARY);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, b"raw\x01");
    assert_eq!(reply.header("x-timestamp"), Some("77"));
    assert_eq!(reply.header("content-type"), Some(BINARY));
}

#[test]
fn a_binary_read_of_a_whole_row_is_refused_with_advice() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    f.put("/t/r", JSON, &json_row(b"r", &[(b"cf:a", None, b"v")]));
    let reply = f.get("/t/r", BINARY);
    assert_eq!(reply.status, 400);
    assert!(
        reply.text().contains("exactly one column"),
        "{}",
        reply.text()
    );
}

#[test]
fn versions_and_timestamps_select_cells() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    for ts in [10, 20, 30] {
        f.put(
            "/t/r",
            JSON,
            &json_row(b"r", &[(b"cf:a", Some(ts), format!("v{ts}").as_bytes())]),
        );
    }
    let stamps =
        |path: &str| -> Vec<i64> { json_cells(&f.get(path, JSON)).iter().map(|c| c.2).collect() };
    assert_eq!(stamps("/t/r/cf:a"), vec![30]);
    assert_eq!(stamps("/t/r/cf:a?v=3"), vec![30, 20, 10]);
    assert_eq!(
        stamps("/t/r/cf:a/20"),
        vec![10],
        "one timestamp ends the range, as in HBase's RowSpec: the newest version before it"
    );
    assert_eq!(stamps("/t/r/cf:a/21"), vec![20]);
    assert_eq!(
        stamps("/t/r/cf:a/10,30?v=5"),
        vec![20, 10],
        "a range is [start, end)"
    );
}

#[test]
fn a_column_list_reads_only_those_columns_and_a_family_reads_all_of_it() {
    let f = Fixture::new();
    f.create_table("t", &["cf", "other"]);
    f.put(
        "/t/r",
        JSON,
        &json_row(
            b"r",
            &[
                (b"cf:a", None, b"1"),
                (b"cf:b", None, b"2"),
                (b"other:c", None, b"3"),
            ],
        ),
    );
    let columns = |path: &str| -> Vec<Vec<u8>> {
        json_cells(&f.get(path, JSON))
            .into_iter()
            .map(|c| c.1)
            .collect()
    };
    assert_eq!(
        columns("/t/r/cf:a,other:c"),
        vec![b"cf:a".to_vec(), b"other:c".to_vec()]
    );
    assert_eq!(columns("/t/r/cf"), vec![b"cf:a".to_vec(), b"cf:b".to_vec()]);
}

#[test]
fn row_keys_with_reserved_characters_travel_percent_encoded() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    assert_eq!(
        f.send(
            "PUT",
            "/t/a%2Fb%2Cc%20d/cf:q",
            &[("Content-Type", BINARY)],
            b"v"
        )
        .status,
        200
    );
    let row =
        f.db.table("t")
            .unwrap()
            .get(&basalt::Get::new("a/b,c d"))
            .unwrap();
    assert_eq!(row.cells.len(), 1);
    assert_eq!(
        json_cells(&f.get("/t/a%2Fb%2Cc%20d", JSON))[0].0,
        b"a/b,c d"
    );
}

#[test]
fn a_range_and_a_prefix_read_many_rows() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    for row in ["a1", "a2", "b1", "c1"] {
        f.put(
            &format!("/t/{row}"),
            JSON,
            &json_row(row.as_bytes(), &[(b"cf:q", None, b"v")]),
        );
    }
    let rows = |path: &str| -> Vec<Vec<u8>> {
        json_cells(&f.get(path, JSON))
            .into_iter()
            .map(|c| c.0)
            .collect()
    };
    assert_eq!(rows("/t/a*"), vec![b"a1".to_vec(), b"a2".to_vec()]);
    assert_eq!(rows("/t/a2,c1"), vec![b"a2".to_vec(), b"b1".to_vec()]);
}

#[test]
fn a_missing_row_table_or_family_is_not_found() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let reply = f.get("/t/nothing", JSON);
    assert_eq!(reply.status, 404);
    assert_eq!(reply.text(), "Not found\r\n");
    let reply = f.get("/missing/r", JSON);
    assert_eq!(reply.status, 404);
    assert!(
        reply.text().contains("TableNotFoundException"),
        "{}",
        reply.text()
    );
    let reply = f.put("/t/r", JSON, &json_row(b"r", &[(b"nope:q", None, b"v")]));
    assert_eq!(reply.status, 404);
    assert!(
        reply.text().contains("NoSuchColumnFamilyException"),
        "{}",
        reply.text()
    );
}

#[test]
fn a_malformed_body_is_a_bad_request_naming_the_field() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let reply = f.put(
        "/t/r",
        JSON,
        br#"{"Row":[{"key":"cg==","Cell":[{"column":"%%%","$":"dg=="}]}]}"#,
    );
    assert_eq!(reply.status, 400);
    assert!(
        reply.text().contains("Row 0 Cell 0 column is not base64"),
        "{}",
        reply.text()
    );
    let reply = f.put("/t/r", XML, b"<CellSet><Row>");
    assert_eq!(reply.status, 400);
    assert!(reply.text().contains("not closed"), "{}", reply.text());
}

#[test]
fn unsupported_media_types_are_refused_with_what_is_accepted() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let reply = f.put("/t/r", "image/png", b"x");
    assert_eq!(reply.status, 415);
    assert!(
        reply.text().contains("application/json"),
        "{}",
        reply.text()
    );
    let reply = f.get("/t/r", "text/plain");
    assert_eq!(reply.status, 406);
}

#[test]
fn deletes_remove_a_column_a_family_older_versions_or_the_row() {
    let f = Fixture::new();
    f.create_table("t", &["cf", "g"]);
    for ts in [1, 2, 3] {
        f.put(
            "/t/r",
            JSON,
            &json_row(
                b"r",
                &[
                    (b"cf:a", Some(ts), b"x"),
                    (b"cf:b", Some(ts), b"y"),
                    (b"g:c", Some(ts), b"z"),
                ],
            ),
        );
    }
    assert_eq!(f.delete("/t/r/cf:a/2").status, 200);
    let stamps: Vec<i64> = json_cells(&f.get("/t/r/cf:a?v=5", JSON))
        .iter()
        .map(|c| c.2)
        .collect();
    assert_eq!(
        stamps,
        vec![3],
        "versions at or before the timestamp are gone"
    );

    assert_eq!(f.delete("/t/r/g").status, 200);
    assert_eq!(f.get("/t/r/g", JSON).status, 404);

    assert_eq!(f.delete("/t/r").status, 200);
    assert_eq!(f.get("/t/r", JSON).status, 404);
}

#[test]
fn multiget_returns_the_rows_that_exist() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    for row in ["a", "b&c"] {
        f.put(
            "/t/x",
            JSON,
            &json_row(row.as_bytes(), &[(b"cf:q", None, row.as_bytes())]),
        );
    }
    let reply = f.get("/t/multiget?row=a&row=missing&row=b%26c", JSON);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let rows: Vec<Vec<u8>> = json_cells(&reply).into_iter().map(|c| c.0).collect();
    assert_eq!(rows, vec![b"a".to_vec(), b"b&c".to_vec()]);
    assert_eq!(f.get("/t/multiget?row=missing", JSON).status, 404);
}

#[test]
fn cell_values_are_base64_in_json() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    f.send("PUT", "/t/r/cf:q", &[("Content-Type", BINARY)], b"\xfe\x00");
    let value = f.get("/t/r", JSON).json();
    assert_eq!(
        unb64(value["Row"][0]["Cell"][0]["$"].as_str().unwrap()),
        b"\xfe\x00"
    );
}
