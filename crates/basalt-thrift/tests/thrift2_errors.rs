//! Thrift2's answers to bad input: unknown tables and families, refused
//! features, arguments of the wrong type, unknown methods and malformed
//! frames get an exception with a readable message, never a dropped call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;

use bytes::Bytes;

use basalt_thrift::protocol::Value;
use basalt_thrift::thrift2::types::TScan;
use basalt_thrift::types::app_error;
use basalt_thrift::{ClientError, Protocol};
use common::thrift2::*;
use common::{TestServer, WIRES};

fn io_message(e: ClientError) -> String {
    match e {
        ClientError::Io(m) => m,
        other => panic!("expected a TIOError, got {other:?}"),
    }
}

#[test]
fn an_unknown_table_or_family_is_a_tio_error_naming_hbase_s_exception() {
    let server = TestServer::thrift2();
    for (framed, protocol) in WIRES {
        let mut c = server.client2(framed, protocol);
        let m = io_message(c.get(b"nope", get(b"r")).unwrap_err());
        assert!(
            m.starts_with("org.apache.hadoop.hbase.TableNotFoundException: nope"),
            "{m}"
        );
    }
    let mut c = server.client2(false, Protocol::Compact);
    create(&mut c, "t", &["cf"]);
    let m = io_message(
        c.put(b"t", put(b"r", vec![cell(b"zz", b"q", b"v")]))
            .unwrap_err(),
    );
    assert!(
        m.contains("NoSuchColumnFamilyException") && m.contains("zz"),
        "{m}"
    );
}

#[test]
fn features_basalt_lacks_are_refused_with_the_reason() {
    let server = TestServer::thrift2();
    let mut c = server.client2(true, Protocol::Binary { strict: true });
    create(&mut c, "t", &["cf"]);
    let mut g = get(b"r");
    g.filter_bytes = b(b"\x0a\x01");
    let m = io_message(c.get(b"t", g).unwrap_err());
    assert!(m.contains("filterBytes is not supported"), "{m}");

    let scan = TScan {
        col_fam_time_range_map: Some(
            [(Bytes::from_static(b"cf"), Default::default())]
                .into_iter()
                .collect(),
        ),
        ..TScan::default()
    };
    let m = io_message(c.open_scanner(b"t", scan).unwrap_err());
    assert!(m.contains("colFamTimeRangeMap"), "{m}");

    let mut p = put(b"r", vec![cell(b"cf", b"q", b"v")]);
    p.cell_visibility = Some(basalt_thrift::thrift2::types::TCellVisibility {
        expression: Some("secret".into()),
    });
    let m = io_message(c.put(b"t", p).unwrap_err());
    assert!(m.contains("cell visibility"), "{m}");

    let m = io_message(c.call_void("grant", Value::Struct(vec![])).unwrap_err());
    assert!(m.contains("access control"), "{m}");
}

#[test]
fn an_invalid_scanner_id_is_an_illegal_argument() {
    let server = TestServer::thrift2();
    let mut c = server.client2(false, Protocol::Binary { strict: false });
    match c.get_scanner_rows(12345, 1).unwrap_err() {
        ClientError::IllegalArgument(m) => assert!(m.contains("12345"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        c.close_scanner(12345).unwrap_err(),
        ClientError::IllegalArgument(_)
    ));
}

#[test]
fn arguments_of_the_wrong_type_and_unknown_methods_are_application_errors() {
    let server = TestServer::thrift2();
    let mut c = server.client2(true, Protocol::Compact);
    // `table` (id 1) must be binary.
    let wrong = Value::Struct(vec![(1, Value::I32(7))]);
    match c.call_void("get", wrong).unwrap_err() {
        ClientError::Application { kind, message } => {
            assert_eq!(kind, app_error::PROTOCOL_ERROR);
            assert!(
                message.contains("table") && message.contains("expected binary"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    // A required argument left out is named.
    match c.call_void("get", Value::Struct(vec![])).unwrap_err() {
        ClientError::Application { message, .. } => assert!(message.contains("table"), "{message}"),
        other => panic!("{other:?}"),
    }
    match c
        .call_void("getRowWithColumns", Value::Struct(vec![]))
        .unwrap_err()
    {
        ClientError::Application { kind, .. } => assert_eq!(kind, app_error::UNKNOWN_METHOD),
        other => panic!("{other:?}"),
    }
    // The connection still serves.
    assert_eq!(c.get_thrift_server_type().unwrap(), 2);
}

#[test]
fn a_malformed_frame_is_answered_and_the_connection_goes_on() {
    let server = TestServer::thrift2();
    let mut c = server.client2(true, Protocol::Binary { strict: true });
    // A framed strict-binary call of `get` whose body claims a field of an
    // unknown type (0x42).
    let mut body = vec![0x80, 0x01, 0x00, 0x01];
    body.extend_from_slice(&3u32.to_be_bytes());
    body.extend_from_slice(b"get");
    body.extend_from_slice(&9i32.to_be_bytes());
    body.extend_from_slice(&[0x42, 0x00, 0x01, 0x00]);
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    c.connection().stream().write_all(&frame).unwrap();
    let (header, reply) = c.connection().read_reply().unwrap();
    assert_eq!(header.name, "get");
    assert_eq!(header.seqid, 9);
    let text = format!("{reply:?}");
    assert!(
        text.contains("Binary"),
        "an exception with a message: {text}"
    );
    assert_eq!(c.get_thrift_server_type().unwrap(), 2);
}
