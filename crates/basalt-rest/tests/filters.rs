//! A REST scanner with a FilterModel filter returns exactly what the same
//! filter, written in the filter language, returns over Thrift1: both
//! gateways serve one database, and every filter is run through both.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use basalt::{Put, TableDescriptor};
use basalt_thrift::types::TScan;
use basalt_thrift::{Client, Protocol, ServerConfig};
use bytes::Bytes;
use common::{b64, unb64, Fixture};

/// One cell as both gateways report it: row, column, timestamp, value.
type Cell = (Vec<u8>, Vec<u8>, i64, Vec<u8>);

/// Twenty rows in two families, each cell at a known timestamp so the
/// timestamp filters have something to pick.
fn load(f: &Fixture) {
    f.db.create_table(
        TableDescriptor::new("t")
            .family(basalt::ColumnFamilyDescriptor::new("cf"))
            .family(basalt::ColumnFamilyDescriptor::new("cf2")),
    )
    .unwrap();
    let table = f.db.table("t").unwrap();
    for i in 0..20i64 {
        let put = Put::new(Bytes::from(format!("r{i:02}")))
            .add_at("cf", "a", 100 + i % 3, Bytes::from(format!("va{i}")))
            .add_at(
                "cf",
                "b",
                100 + i % 2,
                Bytes::from(format!("{:03}", i * 7 % 20)),
            )
            .add_at(
                "cf2",
                "c",
                300,
                Bytes::from(if i % 2 == 0 { "even" } else { "odd" }),
            );
        table.put(&put).unwrap();
    }
}

fn rest_scan(f: &Fixture, filter: &str) -> Vec<Cell> {
    let body = serde_json::json!({ "batch": 7, "filter": filter }).to_string();
    let created = f.put("/t/scanner", "application/json", body.as_bytes());
    assert_eq!(created.status, 201, "{filter}: {}", created.text());
    let location = created.header("Location").unwrap().to_string();
    let path = location
        .split_once("//")
        .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_string()))
        .unwrap_or(location);
    let mut cells = Vec::new();
    loop {
        let batch = f.get(&path, "application/json");
        if batch.status == 204 {
            break;
        }
        assert_eq!(batch.status, 200, "{}", batch.text());
        for row in batch.json()["Row"].as_array().unwrap() {
            let key = unb64(row["key"].as_str().unwrap());
            for cell in row["Cell"].as_array().unwrap() {
                cells.push((
                    key.clone(),
                    unb64(cell["column"].as_str().unwrap()),
                    cell["timestamp"].as_i64().unwrap(),
                    unb64(cell["$"].as_str().unwrap()),
                ));
            }
        }
    }
    assert_eq!(f.delete(&path).status, 200);
    cells
}

fn thrift_scan(client: &mut Client, filter: &str) -> Vec<Cell> {
    let scan = TScan {
        filter_string: Some(Bytes::from(filter.to_string())),
        sort_columns: Some(true),
        ..TScan::default()
    };
    let id = client.scanner_open_with_scan(b"t", scan).unwrap();
    let mut cells = Vec::new();
    for row in client.scan_all(id, 5).unwrap() {
        for column in row.sorted_columns.unwrap_or_default() {
            let cell = column.cell.unwrap();
            cells.push((
                row.row.clone().unwrap().to_vec(),
                column.column_name.unwrap().to_vec(),
                cell.timestamp.unwrap(),
                cell.value.unwrap().to_vec(),
            ));
        }
    }
    cells
}

fn binary(op: &str, value: &str) -> serde_json::Value {
    serde_json::json!({"op": op, "comparator": {"type": "BinaryComparator", "value": b64(value.as_bytes())}})
}

fn with_type(mut model: serde_json::Value, kind: &str) -> serde_json::Value {
    model["type"] = serde_json::json!(kind);
    model
}

#[test]
fn filter_models_select_what_the_same_filter_strings_select_over_thrift1() {
    let f = Fixture::new();
    load(&f);
    let thrift = basalt_thrift::Server::start(
        f.db.clone(),
        &ServerConfig {
            port: 0,
            ..ServerConfig::default()
        },
    )
    .unwrap();
    let mut client = Client::connect(
        thrift.local_addr(),
        false,
        Protocol::Binary { strict: true },
    )
    .unwrap();

    let cases: Vec<(serde_json::Value, &str)> = vec![
        (
            serde_json::json!({"type": "PrefixFilter", "value": b64(b"r1")}),
            "PrefixFilter('r1')",
        ),
        (
            with_type(binary("LESS", "r05"), "RowFilter"),
            "RowFilter(<, 'binary:r05')",
        ),
        (
            serde_json::json!({"type": "ValueFilter", "op": "EQUAL",
                "comparator": {"type": "SubstringComparator", "value": "VA1"}}),
            "ValueFilter(=, 'substring:va1')",
        ),
        (
            serde_json::json!({"type": "QualifierFilter", "op": "EQUAL",
                "comparator": {"type": "RegexStringComparator", "value": "^[ac]$"}}),
            "QualifierFilter(=, 'regexstring:^[ac]$')",
        ),
        (
            serde_json::json!({"type": "SingleColumnValueFilter", "op": "GREATER_OR_EQUAL",
                "family": b64(b"cf"), "qualifier": b64(b"b"), "ifMissing": true, "latestVersion": true,
                "comparator": {"type": "BinaryComparator", "value": b64(b"010")}}),
            "SingleColumnValueFilter('cf', 'b', >=, 'binary:010', true, true)",
        ),
        (
            serde_json::json!({"type": "SingleColumnValueExcludeFilter", "op": "EQUAL",
                "family": b64(b"cf2"), "qualifier": b64(b"c"),
                "comparator": {"type": "BinaryComparator", "value": b64(b"odd")}}),
            "SingleColumnValueExcludeFilter('cf2', 'c', =, 'binary:odd')",
        ),
        (
            serde_json::json!({"type": "FilterList", "op": "MUST_PASS_ONE", "filters": [
                with_type(binary("EQUAL", "a"), "QualifierFilter"),
                with_type(binary("EQUAL", "cf2"), "FamilyFilter"),
            ]}),
            "QualifierFilter(=, 'binary:a') OR FamilyFilter(=, 'binary:cf2')",
        ),
        (
            serde_json::json!({"type": "FilterList", "op": "MUST_PASS_ALL", "filters": [
                {"type": "PrefixFilter", "value": b64(b"r0")},
                {"type": "KeyOnlyFilter"},
                {"type": "ColumnPrefixFilter", "value": b64(b"b")},
            ]}),
            "PrefixFilter('r0') AND KeyOnlyFilter() AND ColumnPrefixFilter('b')",
        ),
        (
            serde_json::json!({"type": "ColumnRangeFilter", "minColumn": b64(b"a"),
                "minColumnInclusive": false, "maxColumn": b64(b"c"), "maxColumnInclusive": true}),
            "ColumnRangeFilter('a', false, 'c', true)",
        ),
        (
            serde_json::json!({"type": "MultipleColumnPrefixFilter", "prefixes": [b64(b"a"), b64(b"c")]}),
            "MultipleColumnPrefixFilter('a', 'c')",
        ),
        (
            serde_json::json!({"type": "ColumnPaginationFilter", "limit": 1, "offset": 1}),
            "ColumnPaginationFilter(1, 1)",
        ),
        (
            serde_json::json!({"type": "ColumnCountGetFilter", "limit": 2}),
            "ColumnCountGetFilter(2)",
        ),
        (
            serde_json::json!({"type": "PageFilter", "value": "4"}),
            "PageFilter(4)",
        ),
        (
            serde_json::json!({"type": "FirstKeyOnlyFilter"}),
            "FirstKeyOnlyFilter()",
        ),
        (
            serde_json::json!({"type": "InclusiveStopFilter", "value": b64(b"r03")}),
            "InclusiveStopFilter('r03')",
        ),
        (
            serde_json::json!({"type": "TimestampsFilter", "timestamps": [101, 300]}),
            "TimestampsFilter(101, 300)",
        ),
        (
            serde_json::json!({"type": "WhileMatchFilter", "filters": [with_type(binary("NOT_EQUAL", "r07"), "RowFilter")]}),
            "WHILE RowFilter(!=, 'binary:r07')",
        ),
        (
            serde_json::json!({"type": "SkipFilter", "filters": [with_type(binary("NOT_EQUAL", "odd"), "ValueFilter")]}),
            "SKIP ValueFilter(!=, 'binary:odd')",
        ),
        (
            serde_json::json!({"type": "DependentColumnFilter", "family": b64(b"cf"), "qualifier": b64(b"a"),
                "dropDependentColumn": true}),
            "DependentColumnFilter('cf', 'a', true)",
        ),
    ];
    for (model, language) in cases {
        let over_thrift = thrift_scan(&mut client, language);
        let over_rest = rest_scan(&f, &model.to_string());
        assert!(
            !over_thrift.is_empty(),
            "{language} selects nothing: a weak case"
        );
        assert_eq!(over_rest, over_thrift, "{model} versus {language}");
        // The filter language is read by the REST scanner too.
        assert_eq!(rest_scan(&f, language), over_thrift, "{language} over REST");
    }
    thrift.shutdown().unwrap();
}

#[test]
fn an_unknown_filter_type_is_a_readable_400() {
    let f = Fixture::new();
    load(&f);
    let body =
        serde_json::json!({"filter": r#"{"type":"RandomRowFilter","chance":0.5}"#}).to_string();
    let reply = f.put("/t/scanner", "application/json", body.as_bytes());
    assert_eq!(reply.status, 400);
    assert!(reply.text().contains("RandomRowFilter"), "{}", reply.text());
}
