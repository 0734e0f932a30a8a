//! Thrift2's scanners: openScanner, getScannerRows, closeScanner and
//! getScannerResults with TScan's options, in every transport and protocol.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use basalt_thrift::thrift2::types::{TResult, TScan};
use basalt_thrift::Protocol;
use common::thrift2::*;
use common::{TestServer, WIRES};

fn rows(results: &[TResult]) -> Vec<String> {
    results
        .iter()
        .map(|r| String::from_utf8_lossy(r.row.as_deref().unwrap_or(b"")).into_owned())
        .collect()
}

fn filled(server: &TestServer) {
    let mut c = server.client2(false, Protocol::Compact);
    create(&mut c, "t", &["cf"]);
    for i in 0..10 {
        let row = format!("r{i}");
        c.put(
            b"t",
            put(
                row.as_bytes(),
                vec![cell(b"cf", b"a", b"x"), cell(b"cf", b"b", row.as_bytes())],
            ),
        )
        .unwrap();
    }
}

#[test]
fn a_scanner_pages_through_a_row_range_in_every_transport_and_protocol() {
    let server = TestServer::thrift2();
    filled(&server);
    for (framed, protocol) in WIRES {
        let mut c = server.client2(framed, protocol);
        let scan = TScan {
            start_row: b(b"r2"),
            stop_row: b(b"r7"),
            ..TScan::default()
        };
        let id = c.open_scanner(b"t", scan).unwrap();
        assert_eq!(rows(&c.get_scanner_rows(id, 2).unwrap()), ["r2", "r3"]);
        assert_eq!(
            rows(&c.get_scanner_rows(id, 10).unwrap()),
            ["r4", "r5", "r6"]
        );
        assert!(c.get_scanner_rows(id, 10).unwrap().is_empty());
        c.close_scanner(id).unwrap();
        assert_eq!(server.server().open_scanners(), 0);
    }
}

#[test]
fn scan_options_reverse_limit_select_and_filter() {
    let server = TestServer::thrift2();
    filled(&server);
    let mut c = server.client2(true, Protocol::Binary { strict: true });
    let reversed = TScan {
        start_row: b(b"r5"),
        reversed: Some(true),
        limit: Some(3),
        ..TScan::default()
    };
    assert_eq!(
        rows(&c.scan_all(b"t", reversed, 2).unwrap()),
        ["r5", "r4", "r3"]
    );

    let narrow = TScan {
        columns: Some(vec![column(b"cf", Some(b"b"))]),
        filter_string: b(b"ValueFilter(=, 'binary:r8')"),
        ..TScan::default()
    };
    let found = c.scan_all(b"t", narrow, 5).unwrap();
    assert_eq!(rows(&found), ["r8"]);
    assert_eq!(cells(&found[0]), vec![("cf:b".into(), "r8".into())]);

    let batched = TScan {
        start_row: b(b"r0"),
        stop_row: b(b"r1"),
        batch_size: Some(1),
        ..TScan::default()
    };
    // One cell per result: the row comes back in two parts.
    assert_eq!(rows(&c.scan_all(b"t", batched, 10).unwrap()), ["r0", "r0"]);
}

#[test]
fn get_scanner_results_answers_at_most_num_rows_and_keeps_no_scanner() {
    let server = TestServer::thrift2();
    filled(&server);
    let mut c = server.client2(false, Protocol::Binary { strict: false });
    let got = c.get_scanner_results(b"t", TScan::default(), 4).unwrap();
    assert_eq!(rows(&got), ["r0", "r1", "r2", "r3"]);
    assert_eq!(server.server().open_scanners(), 0);
}

#[test]
fn a_connection_s_scanners_close_with_it() {
    let server = TestServer::thrift2();
    filled(&server);
    let mut c = server.client2(false, Protocol::Compact);
    c.open_scanner(b"t", TScan::default()).unwrap();
    c.open_scanner(b"t", TScan::default()).unwrap();
    assert_eq!(server.server().open_scanners(), 2);
    drop(c);
    common::eventually("the scanners to close", || {
        server.server().open_scanners() == 0
    });
}
