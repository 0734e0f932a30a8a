//! Two hundred concurrent connections, most idle and some scanning: all are
//! served, and the server's thread count stays bounded by its configuration
//! (idle connections cost no thread). Alone in its test binary so no other
//! test's threads blur the count.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use basalt_thrift::client::{family, put};
use basalt_thrift::types::BatchMutation;
use basalt_thrift::ServerConfig;
use bytes::Bytes;

use common::{TestServer, WIRES};

const CONNECTIONS: usize = 200;
const SCANNING: usize = 20;
const CLIENT_THREADS: usize = 4;
const WORKERS: usize = 2;
const MAX_BLOCKING: usize = 8;

fn threads() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn two_hundred_connections_on_a_bounded_number_of_threads() {
    let before = threads();
    let server = TestServer::with_config(ServerConfig {
        port: 0,
        worker_threads: WORKERS,
        max_blocking_threads: MAX_BLOCKING,
        ..ServerConfig::default()
    });
    let mut setup = server.default_client();
    setup.create_table(b"t", vec![family("cf")]).unwrap();
    let batches = (0..500)
        .map(|i| BatchMutation {
            row: Some(Bytes::from(format!("row{i:04}"))),
            mutations: Some(vec![put(b"cf:a", b"value"), put(b"cf:b", b"other")]),
        })
        .collect();
    setup.mutate_rows(b"t", batches).unwrap();

    // Open every connection and make one call on each, so the server holds
    // all of them at once.
    let mut clients: Vec<_> = (0..CONNECTIONS)
        .map(|i| {
            let (framed, protocol) = WIRES[i % WIRES.len()];
            let mut c = server.client(framed, protocol);
            assert!(c.is_table_enabled(b"t").unwrap());
            c
        })
        .collect();
    common::eventually("all connections registered", || {
        server.server().open_connections() > CONNECTIONS
    });

    // Some connections scan (from a few client threads), the rest stay idle.
    let scanning: Vec<_> = clients.drain(..SCANNING).collect();
    let mut per_thread: Vec<Vec<_>> = (0..CLIENT_THREADS).map(|_| Vec::new()).collect();
    for (i, c) in scanning.into_iter().enumerate() {
        per_thread[i % CLIENT_THREADS].push(c);
    }
    let peak = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for group in per_thread.iter_mut() {
            let peak = &peak;
            s.spawn(move || {
                for round in 0..3 {
                    // Every client of the group has a scanner open at once.
                    let ids: Vec<i32> = group
                        .iter_mut()
                        .map(|c| c.scanner_open(b"t", b"", &[]).unwrap())
                        .collect();
                    for (c, id) in group.iter_mut().zip(ids) {
                        let rows = c.scan_all(id, 50 + round).unwrap();
                        assert_eq!(rows.len(), 500);
                        peak.fetch_max(threads(), std::sync::atomic::Ordering::SeqCst);
                    }
                }
            });
        }
    });
    // The idle connections are all still usable.
    for c in clients.iter_mut() {
        assert!(c.is_table_enabled(b"t").unwrap());
    }
    let during = threads().max(peak.load(std::sync::atomic::Ordering::SeqCst));
    // The process: the threads before the server, the server's workers and
    // blocking pool, and the test's client threads (gone by now, but counted
    // at the peak), plus a few for tokio's own bookkeeping.
    let bound = before + WORKERS + MAX_BLOCKING + CLIENT_THREADS + 4;
    println!(
        "threads: {before} before the server, {during} at most with {} connections \
         ({SCANNING} scanning); bound {bound}",
        CONNECTIONS + 1
    );
    assert!(
        during <= bound,
        "{during} threads for {CONNECTIONS} connections (bound {bound})"
    );
    assert_eq!(server.server().open_scanners(), 0);
    drop(clients);
    drop(per_thread);
    common::eventually("connections to close", || {
        server.server().open_connections() == 1
    });
}
