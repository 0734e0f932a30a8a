//! Garbage input never panics a REST decoder, and never makes one allocate
//! more than a small multiple of the input.
//!
//! Every body decoder (cell sets, schemas and scanners, as XML and JSON)
//! gets arbitrary bytes, mutated valid documents (bytes flipped, inserted,
//! deleted, or the tail cut off) and the densest documents each format
//! allows; the URL parsers get arbitrary paths and queries. A case passes
//! when decoding yields a value or an error without panicking and the most
//! bytes allocated at once stay under [`FACTOR`] times the input plus
//! [`CONSTANT`], measured by the counting global allocator of this test
//! binary.
//!
//! Failing cases are persisted in `garbage_input.proptest-regressions`
//! beside this file; commit that file when it appears.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use basalt_rest::cluster::decode_namespace_properties;
use basalt_rest::filter_model;
use basalt_rest::media::Format;
use basalt_rest::model::{CellSet, ScannerModel, TableSchema};
use basalt_rest::path::{parse_query, RowSpec};
use proptest::prelude::*;

// The proptest settings, the counting global allocator, the bound check
// and the byte mutations are shared by every crate's garbage-input test.
#[path = "../../../test-support/garbage.rs"]
mod garbage;
use garbage::{arb_mutations, check_bounded, config, mutate, peak_while};

/// What a decoded document may cost per byte: at most one element or
/// attribute per 8 bytes (XML) or one JSON value per 4 bytes, each a
/// small struct in a vector that grows by doubling, then the model built
/// from the tree while the tree is alive. The densest documents measure
/// under 30 (`the_densest_documents_stay_within_the_bound` prints them).
const FACTOR: usize = 40;
/// What does not grow with the input: the parsers' buffers, the 64 free
/// nodes, error messages.
const CONSTANT: usize = 32 << 10;

const SAMPLES: &[(Format, &[u8])] = &[
    (Format::Xml, br#"<?xml version="1.0"?><CellSet><Row key="cg=="><Cell column="Y2Y6cQ==" timestamp="1">dg==</Cell></Row></CellSet>"#),
    (Format::Json, br#"{"Row":[{"key":"cg==","Cell":[{"column":"Y2Y6cQ==","timestamp":1,"$":"dg=="}]}]}"#),
    (Format::Xml, br#"<TableSchema name="t"><ColumnSchema name="cf" VERSIONS="3"/></TableSchema>"#),
    (Format::Json, br#"{"name":"t","ColumnSchema":[{"name":"cf","VERSIONS":"3"}]}"#),
    (Format::Xml, br#"<Scanner batch="2" startRow="YQ=="><column>Y2Y=</column><filter>x</filter></Scanner>"#),
    (Format::Json, br#"{"batch":2,"startRow":"YQ==","column":["Y2Y="]}"#),
    // A protobuf CellSet: one row "r" with a cell cf:q = v at timestamp 1.
    (Format::Protobuf, b"\x0a\x0f\x0a\x01r\x12\x0a\x12\x04cf:q\x18\x01\x22\x01v"),
    // A protobuf Scanner: startRow, a column, batch, a filter.
    (Format::Protobuf, b"\x0a\x01a\x1a\x02cf\x20\x02\x42\x01x"),
];

/// Decodes `body` as every model in `format`, checking the bound on each.
fn decode_all(format: Format, body: &[u8]) {
    let (_, peak) = peak_while(|| CellSet::decode(format, body));
    check_bounded("CellSet", peak, body.len(), FACTOR, CONSTANT);
    let (_, peak) = peak_while(|| TableSchema::decode(format, body));
    check_bounded("TableSchema", peak, body.len(), FACTOR, CONSTANT);
    let (_, peak) = peak_while(|| ScannerModel::decode(format, body));
    check_bounded("Scanner", peak, body.len(), FACTOR, CONSTANT);
    let (_, peak) = peak_while(|| decode_namespace_properties(format, body));
    check_bounded("NamespaceProperties", peak, body.len(), FACTOR, CONSTANT);
}

/// FilterModel documents, valid, for the mutations to start from.
const FILTERS: &[&str] = &[
    r#"{"type":"PrefixFilter","value":"cm93"}"#,
    r#"{"type":"FilterList","op":"MUST_PASS_ONE","filters":[{"type":"RowFilter","op":"EQUAL","comparator":{"type":"RegexStringComparator","value":".+-2"}},{"type":"KeyOnlyFilter"}]}"#,
    r#"{"type":"SingleColumnValueFilter","op":"LESS","family":"Y2Y=","qualifier":"YQ==","ifMissing":true,"latestVersion":true,"comparator":{"type":"BinaryComparator","value":"MTA="}}"#,
    r#"{"type":"SkipFilter","filters":[{"type":"TimestampsFilter","timestamps":[1,"2"]}]}"#,
    r#"{"type":"ColumnRangeFilter","minColumn":"YQ==","maxColumn":"Yw==","minColumnInclusive":true}"#,
    "PrefixFilter('row') AND KeyOnlyFilter()",
];

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn random_bytes_never_panic_a_body_decoder(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        for format in [Format::Xml, Format::Json, Format::Text, Format::Binary, Format::Protobuf] {
            decode_all(format, &body);
        }
    }

    #[test]
    fn mutated_documents_never_panic_a_body_decoder(
        sample in 0..SAMPLES.len(),
        mutations in arb_mutations(),
    ) {
        let (format, body) = SAMPLES[sample];
        let mut body = body.to_vec();
        mutate(&mut body, &mutations);
        decode_all(format, &body);
    }

    #[test]
    fn random_and_mutated_filter_models_never_panic_the_filter_reader(
        sample in 0..FILTERS.len(),
        mutations in arb_mutations(),
        random in "[ -~]{0,64}",
    ) {
        let mut text = FILTERS[sample].as_bytes().to_vec();
        mutate(&mut text, &mutations);
        // A regular expression's compiled program is not bounded by the
        // input's size (the regex crate caps it), so only panics are
        // checked here.
        let _ = filter_model::parse(&String::from_utf8_lossy(&text));
        let _ = filter_model::parse(&random);
    }

    #[test]
    fn random_paths_and_queries_never_panic_the_url_parsers(path in "[a-z0-9%,*:/+.]{0,40}", query in "[a-z0-9%=&+]{0,40}") {
        let segments: Vec<&str> = path.split('/').collect();
        let _ = RowSpec::parse(&segments);
        let _ = parse_query(Some(&query));
    }
}

/// Documents as dense as each format allows, about 256 KiB each.
fn densest() -> Vec<(&'static str, Format, Vec<u8>)> {
    let n = 1 << 16;
    let wrap = |open: &str, item: &str, close: &str| {
        let mut body = open.to_string();
        body.push_str(&item.repeat(n));
        body.push_str(close);
        body.into_bytes()
    };
    vec![
        (
            "empty XML elements",
            Format::Xml,
            wrap("<CellSet>", "<a/>", "</CellSet>"),
        ),
        (
            "empty XML cells",
            Format::Xml,
            wrap("<CellSet><Row>", "<Cell/>", "</Row></CellSet>"),
        ),
        (
            "XML cells with values",
            Format::Xml,
            wrap("<CellSet><Row>", "<Cell>dg==</Cell>", "</Row></CellSet>"),
        ),
        (
            "empty XML rows",
            Format::Xml,
            wrap("<CellSet>", "<Row/>", "</CellSet>"),
        ),
        (
            "XML attributes",
            Format::Xml,
            wrap("<Scanner ", r#"a="" "#, "/>"),
        ),
        (
            "XML families",
            Format::Xml,
            wrap("<TableSchema>", r#"<ColumnSchema n=""/>"#, "</TableSchema>"),
        ),
        ("JSON numbers", Format::Json, wrap("[", "0,", "0]")),
        (
            "protobuf empty rows",
            Format::Protobuf,
            wrap("", "\x0a\x00", ""),
        ),
        (
            "protobuf empty cells",
            Format::Protobuf,
            // One row holding as many empty cells as 256 KiB allows.
            {
                let cells = "\x12\x00".repeat(n);
                let mut body = vec![0x0a];
                let mut len = cells.len();
                while len >= 0x80 {
                    body.push((len as u8) | 0x80);
                    len >>= 7;
                }
                body.push(len as u8);
                body.extend_from_slice(cells.as_bytes());
                body
            },
        ),
        (
            "protobuf attributes",
            Format::Protobuf,
            wrap("", "\x12\x00", ""),
        ),
        ("JSON empty lists", Format::Json, wrap("[", "[],", "[]]")),
        (
            "JSON cells",
            Format::Json,
            wrap(r#"{"Row":[{"Cell":["#, r#"{"$":"dg=="},"#, "{}]}]}"),
        ),
        (
            "JSON empty cells",
            Format::Json,
            wrap(r#"{"Row":[{"Cell":["#, "{},", "{}]}]}"),
        ),
        (
            "JSON empty rows",
            Format::Json,
            wrap(r#"{"Row":["#, "{},", "{}]}"),
        ),
        (
            "JSON families",
            Format::Json,
            wrap(r#"{"ColumnSchema":["#, r#"{"a":1},"#, "{}]}"),
        ),
        (
            "JSON scanner columns",
            Format::Json,
            wrap(r#"{"column":["#, r#""","#, r#""YQ=="]}"#),
        ),
    ]
}

#[test]
fn the_densest_documents_stay_within_the_bound() {
    for (what, format, body) in densest() {
        let mut worst = 0usize;
        for decode in [
            |f, b: &[u8]| drop(CellSet::decode(f, b)),
            |f, b: &[u8]| drop(TableSchema::decode(f, b)),
            |f, b: &[u8]| drop(ScannerModel::decode(f, b)),
        ] {
            let ((), peak) = peak_while(|| decode(format, &body));
            worst = worst.max(peak);
        }
        eprintln!(
            "{what}: {} bytes, peak {worst} bytes ({:.1} x)",
            body.len(),
            worst as f64 / body.len() as f64
        );
        check_bounded(what, worst, body.len(), FACTOR, CONSTANT);
    }
}

#[test]
fn deeply_nested_xml_is_refused_by_depth_not_by_stack() {
    let depth = 100_000;
    let mut body = "<a>".repeat(depth);
    body.push_str(&"</a>".repeat(depth));
    let err = CellSet::decode(Format::Xml, body.as_bytes()).unwrap_err();
    assert!(err.0.contains("nested deeper"), "{err}");
}

#[test]
fn documents_denser_than_the_models_need_are_refused() {
    let xml = format!("<CellSet>{}</CellSet>", "<a/>".repeat(1000));
    let err = CellSet::decode(Format::Xml, xml.as_bytes()).unwrap_err();
    assert!(err.0.contains("per 8 bytes"), "{err}");
    let json = format!("[{}0]", "0,".repeat(1000));
    let err = CellSet::decode(Format::Json, json.as_bytes()).unwrap_err();
    assert!(err.0.contains("per 4 bytes"), "{err}");
}

#[test]
fn custom_entities_are_not_expanded() {
    let body =
        br#"<!DOCTYPE CellSet [<!ENTITY x "xxxxxxxxxx">]><CellSet><Row key="&x;"/></CellSet>"#;
    assert!(CellSet::decode(Format::Xml, body).is_err());
}
