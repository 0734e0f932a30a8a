//! The process's answer budget holds calls back (issue 32): with the
//! budget full (answers waiting for clients that do not read), a call that
//! would build a large answer waits for room, then fails as busy naming the
//! limit, and is served once room comes back. Its own test binary: the
//! budget is process-wide, and this test fills it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use basalt_thrift::client::{family, put};
use basalt_thrift::types::BatchMutation;
use basalt_thrift::{ClientError, ServerConfig};
use bytes::Bytes;

use common::TestServer;

#[test]
fn a_full_answer_budget_holds_reads_of_many_rows_back_until_room_comes() {
    let server = TestServer::with_config(ServerConfig {
        port: 0,
        write_timeout_ms: 200,
        ..ServerConfig::default()
    });
    let mut c = server.default_client();
    c.create_table(b"t", vec![family("cf")]).unwrap();
    let batches = (0..10)
        .map(|i| BatchMutation {
            row: Some(Bytes::from(format!("r{i}"))),
            mutations: Some(vec![put(b"cf:q", b"v")]),
        })
        .collect();
    c.mutate_rows(b"t", batches).unwrap();
    let budget = basalt::guard::answer_budget();
    let full = budget.force(budget.total());
    let rows: Vec<&[u8]> = vec![b"r1", b"r2"];
    match c.get_rows(b"t", &rows) {
        Err(ClientError::Io(message)) => {
            assert!(message.contains("max_answer_bytes_in_flight"), "{message}")
        }
        other => panic!("expected the busy answer, got {other:?}"),
    }
    let id = c.scanner_open(b"t", b"", &[]).unwrap();
    assert!(matches!(
        c.scanner_get_list(id, 10),
        Err(ClientError::Io(m)) if m.contains("busy")
    ));
    // A single row is never held back (it is counted, not waited for).
    assert_eq!(c.get_row(b"t", b"r1").unwrap().len(), 1);
    drop(full);
    assert_eq!(c.get_rows(b"t", &rows).unwrap().len(), 2);
    assert_eq!(c.scanner_get_list(id, 10).unwrap().len(), 10);
    assert_eq!(budget.in_use(), 0, "every answer gave its room back");
}
