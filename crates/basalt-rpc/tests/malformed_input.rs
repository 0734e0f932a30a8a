//! Bad bytes on a native RPC connection get an HBase exception or a close,
//! never a crash, a hang or unbounded memory; the server keeps serving.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use basalt::{ColumnFamilyDescriptor, Database, TableDescriptor};
use basalt_rpc::client::RpcClient;
use basalt_rpc::frame;
use basalt_rpc::proto::hbase::TableName;
use basalt_rpc::proto::rpc::{ConnectionHeader, ResponseHeader};
use basalt_rpc::{RpcConfig, RpcServer};
use bytes::{BufMut, Bytes};
use proptest::prelude::*;
use prost::Message;

fn start() -> (tempfile::TempDir, Database, RpcServer) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")))
        .unwrap();
    let config = RpcConfig {
        master_port: 0,
        region_server_port: 0,
        max_frame_bytes: 1 << 20,
        ..RpcConfig::default()
    };
    let server = RpcServer::bind(&config)
        .unwrap()
        .serve(db.clone(), "c".into())
        .unwrap();
    (dir, db, server)
}

fn raw(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

fn hello(service: &str) -> Vec<u8> {
    let header = ConnectionHeader {
        service_name: Some(service.to_string()),
        ..Default::default()
    }
    .encode_to_vec();
    let mut out = b"HBas\x00\x50".to_vec();
    out.put_u32(header.len() as u32);
    out.extend_from_slice(&header);
    out
}

/// Reads one answer frame and then expects the server to close.
fn exception_then_close(stream: &mut TcpStream) -> (ResponseHeader, String) {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).unwrap();
    let (header, _, _) = frame::split_response(Bytes::from(body)).unwrap();
    let class = header
        .exception
        .as_ref()
        .and_then(|e| e.exception_class_name.clone())
        .unwrap();
    let mut rest = Vec::new();
    // The server closes: the read ends (EOF) instead of hanging.
    let _ = stream.read_to_end(&mut rest);
    assert!(rest.is_empty());
    (header, class)
}

/// The server still answers a well-formed call.
fn still_serving(server: &RpcServer) {
    let mut c = RpcClient::connect(server.master_addr(), "ClientService", false).unwrap();
    let error = c
        .call("NoSuchMethod", &TableName::default(), &[])
        .unwrap_err();
    assert_eq!(error.class, "org.apache.hadoop.hbase.DoNotRetryIOException");
}

#[test]
fn a_preamble_that_is_not_hbases_gets_an_exception_and_a_close() {
    let (_d, _db, server) = start();
    for preamble in [&b"GET / "[..], b"HBas\x01\x50", b"HBas\x00\x53"] {
        let mut s = raw(server.region_server_addr());
        s.write_all(preamble).unwrap();
        let (header, class) = exception_then_close(&mut s);
        assert_eq!(header.call_id, Some(frame::NO_CALL));
        assert!(class.ends_with("Exception"), "{class}");
    }
    still_serving(&server);
}

#[test]
fn an_unknown_service_gets_an_exception_and_a_close() {
    let (_d, _db, server) = start();
    let mut s = raw(server.region_server_addr());
    s.write_all(&hello("RegionServerStatusService")).unwrap();
    let (_, class) = exception_then_close(&mut s);
    assert_eq!(class, "org.apache.hadoop.hbase.ipc.UnknownServiceException");
}

#[test]
fn an_unknown_method_is_named_and_the_connection_stays_usable() {
    let (_d, _db, server) = start();
    let mut c = RpcClient::connect(server.region_server_addr(), "ClientService", false).unwrap();
    let error = c
        .call("ExecService", &TableName::default(), &[])
        .unwrap_err();
    assert!(
        error.message.contains("ClientService.ExecService"),
        "{}",
        error.message
    );
    assert!(error.do_not_retry);
    let error = c
        .call("Get", &basalt_rpc::proto::hbase::EmptyMsg {}, &[])
        .unwrap_err();
    assert!(error.message.contains("missing"), "{}", error.message);
}

#[test]
fn an_absurd_frame_length_is_refused_before_any_allocation() {
    let (_d, _db, server) = start();
    let mut s = raw(server.region_server_addr());
    s.write_all(&hello("ClientService")).unwrap();
    s.write_all(&u32::MAX.to_be_bytes()).unwrap();
    let (_, class) = exception_then_close(&mut s);
    assert_eq!(
        class,
        "org.apache.hadoop.hbase.exceptions.RequestTooBigException"
    );
    assert_eq!(server.in_flight_bytes(), 0);
    still_serving(&server);
}

#[test]
fn a_request_of_many_tiny_elements_is_refused_by_its_decoded_size() {
    use basalt_rpc::proto::client::{Action, MultiRequest, RegionAction};
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let config = RpcConfig {
        master_port: 0,
        region_server_port: 0,
        max_in_flight_bytes: 4 << 20,
        ..RpcConfig::default()
    };
    let server = RpcServer::bind(&config)
        .unwrap()
        .serve(db.clone(), "c".into())
        .unwrap();
    // ~400 KB on the wire, hundreds of MB as decoded structs.
    let request = MultiRequest {
        region_action: vec![RegionAction {
            action: vec![Action::default(); 200_000],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut c = RpcClient::connect(server.region_server_addr(), "ClientService", false).unwrap();
    let error = c.call("Multi", &request, &[]).unwrap_err();
    assert_eq!(
        error.class,
        "org.apache.hadoop.hbase.exceptions.RequestTooBigException"
    );
    assert!(error.message.contains("decoded"), "{}", error.message);
    // The connection goes on; nothing stays reserved.
    let error = c
        .call("NoSuchMethod", &TableName::default(), &[])
        .unwrap_err();
    assert_eq!(error.class, "org.apache.hadoop.hbase.DoNotRetryIOException");
    assert_eq!(server.decoded_bytes_reserved(), 0);
    assert_eq!(server.in_flight_bytes(), 0);
}

#[test]
fn an_absurd_connection_header_length_is_refused() {
    let (_d, _db, server) = start();
    let mut s = raw(server.region_server_addr());
    s.write_all(b"HBas\x00\x50\x7f\xff\xff\xff").unwrap();
    let (_, class) = exception_then_close(&mut s);
    assert_eq!(
        class,
        "org.apache.hadoop.hbase.ipc.FatalConnectionException"
    );
}

#[test]
fn unsupported_codecs_and_compressors_are_refused_by_name() {
    let (_d, _db, server) = start();
    for (codec, compressor) in [
        (Some("com.example.Codec"), None),
        (None, Some("org.apache.hadoop.io.compress.GzipCodec")),
    ] {
        let header = ConnectionHeader {
            service_name: Some("ClientService".into()),
            cell_block_codec_class: codec.map(String::from),
            cell_block_compressor_class: compressor.map(String::from),
            ..Default::default()
        }
        .encode_to_vec();
        let mut s = raw(server.region_server_addr());
        let mut out = b"HBas\x00\x50".to_vec();
        out.put_u32(header.len() as u32);
        out.extend_from_slice(&header);
        s.write_all(&out).unwrap();
        let (_, class) = exception_then_close(&mut s);
        assert!(class.contains("Unsupported"), "{class}");
    }
}

#[test]
fn a_connection_cut_mid_frame_leaves_the_server_serving() {
    let (_d, _db, server) = start();
    let mut s = raw(server.region_server_addr());
    s.write_all(&hello("ClientService")).unwrap();
    s.write_all(&1000u32.to_be_bytes()).unwrap();
    s.write_all(&[1, 2, 3]).unwrap();
    drop(s);
    still_serving(&server);
    // The cut frame's bytes went back to the budget.
    for _ in 0..100 {
        if server.in_flight_bytes() == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.in_flight_bytes(), 0);
}

#[test]
fn pipelined_calls_are_each_answered_under_their_own_call_id() {
    let (_d, _db, server) = start();
    let mut s = raw(server.region_server_addr());
    s.write_all(&hello("ClientService")).unwrap();
    for id in [11u32, 12, 13] {
        s.write_all(&frame::encode_request(
            id,
            "NoSuchMethod",
            &TableName::default(),
            &[],
        ))
        .unwrap();
    }
    let mut ids = Vec::new();
    for _ in 0..3 {
        let mut len = [0u8; 4];
        s.read_exact(&mut len).unwrap();
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        s.read_exact(&mut body).unwrap();
        let (header, _, _) = frame::split_response(Bytes::from(body)).unwrap();
        ids.push(header.call_id.unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, vec![11, 12, 13]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn garbage_after_a_good_handshake_never_takes_the_server_down(
        frames in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 1..4),
    ) {
        let (_d, _db, server) = start();
        let mut s = raw(server.region_server_addr());
        s.write_all(&hello("ClientService")).unwrap();
        for body in &frames {
            let mut out = Vec::new();
            out.put_u32(body.len() as u32);
            out.extend_from_slice(body);
            if s.write_all(&out).is_err() {
                break;
            }
        }
        drop(s);
        still_serving(&server);
    }
}
