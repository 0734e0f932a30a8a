//! Garbage input: every decoder of request bodies and URLs answers random
//! bytes and damaged documents with an error (or a value), never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use basalt_rest::media::Format;
use basalt_rest::model::{CellSet, ScannerModel, TableSchema};
use basalt_rest::path::{parse_query, RowSpec};
use proptest::prelude::*;

const SAMPLES: &[&[u8]] = &[
    br#"<CellSet><Row key="cg=="><Cell column="Y2Y6cQ==" timestamp="1">dg==</Cell></Row></CellSet>"#,
    br#"{"Row":[{"key":"cg==","Cell":[{"column":"Y2Y6cQ==","timestamp":1,"$":"dg=="}]}]}"#,
    br#"<TableSchema name="t"><ColumnSchema name="cf" VERSIONS="3"/></TableSchema>"#,
    br#"{"name":"t","ColumnSchema":[{"name":"cf","VERSIONS":"3"}]}"#,
    br#"<Scanner batch="2" startRow="YQ=="><column>Y2Y=</column></Scanner>"#,
    br#"{"batch":2,"startRow":"YQ==","column":["Y2Y="]}"#,
];

fn decode_all(body: &[u8]) {
    for format in [Format::Xml, Format::Json, Format::Text, Format::Binary] {
        let _ = CellSet::decode(format, body);
        let _ = TableSchema::decode(format, body);
        let _ = ScannerModel::decode(format, body);
    }
}

proptest! {
    #[test]
    fn random_bytes_never_panic_a_body_decoder(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        decode_all(&body);
    }

    #[test]
    fn damaged_documents_never_panic_a_body_decoder(
        sample in 0..SAMPLES.len(),
        cuts in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut body = SAMPLES[sample].to_vec();
        for (at, byte) in cuts {
            let i = at.index(body.len());
            body[i] = byte;
        }
        decode_all(&body);
        let truncated = &body[..body.len() / 2];
        decode_all(truncated);
    }

    #[test]
    fn random_paths_and_queries_never_panic_the_url_parsers(path in "[a-z0-9%,*:/+.]{0,40}", query in "[a-z0-9%=&+]{0,40}") {
        let segments: Vec<&str> = path.split('/').collect();
        let _ = RowSpec::parse(&segments);
        let _ = parse_query(Some(&query));
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
fn custom_entities_are_not_expanded() {
    let body =
        br#"<!DOCTYPE CellSet [<!ENTITY x "xxxxxxxxxx">]><CellSet><Row key="&x;"/></CellSet>"#;
    assert!(CellSet::decode(Format::Xml, body).is_err());
}
