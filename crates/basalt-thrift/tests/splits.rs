//! Issue 12, defect 9: writes over Thrift never fail while regions split
//! by themselves or are split and merged by hand. Before the fix, batched
//! writes (`mutateRows`, what YCSB loads and happybase's batches send) that
//! met a closing region came back as `IOError: write-ahead log is
//! unavailable: region is not serving`, and 2.6% of a load was lost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use basalt::{Database, Options};
use basalt_thrift::types::{BatchMutation, ColumnDescriptor, Mutation};
use basalt_thrift::{Client, Protocol, Server, ServerConfig};
use bytes::Bytes;

const CLIENTS: usize = 8;
const BATCHES: usize = 40;
const ROWS_PER_BATCH: usize = 20;

fn row_key(n: usize) -> Bytes {
    // Spread over the key space so batches span the regions splits create.
    Bytes::from(format!("{:04x}-{n:06}", (n * 2_654_435_761) % 65_536))
}

#[test]
fn batched_and_single_writes_over_thrift_never_fail_during_splits_and_merges() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = Options::new(dir.path());
    // Small enough that the table splits by itself several times.
    options.memstore_flush_bytes = 32 * 1024;
    options.region_split_bytes = 96 * 1024;
    let db = Database::open_with(options).unwrap();
    let server = Server::start(
        db.clone(),
        &ServerConfig {
            port: 0,
            ..ServerConfig::default()
        },
    )
    .unwrap();
    let addr = server.local_addr();
    let connect = || {
        let client = Client::connect(addr, false, Protocol::Binary { strict: true }).unwrap();
        client.set_timeout(Some(Duration::from_secs(120))).unwrap();
        client
    };
    connect()
        .create_table(
            b"t",
            vec![ColumnDescriptor {
                name: Some(Bytes::from_static(b"f:")),
                ..ColumnDescriptor::default()
            }],
        )
        .unwrap();

    let writers_done = AtomicBool::new(false);
    let failures: Vec<String> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..CLIENTS)
            .map(|c| {
                s.spawn(move || {
                    let mut client = connect();
                    let mut failures = Vec::new();
                    for b in 0..BATCHES {
                        let batches = (0..ROWS_PER_BATCH)
                            .map(|i| BatchMutation {
                                row: Some(row_key((b * ROWS_PER_BATCH + i) * CLIENTS + c)),
                                mutations: Some(vec![Mutation {
                                    column: Some(Bytes::from_static(b"f:q")),
                                    value: Some(Bytes::from(vec![b'v'; 200])),
                                    ..Mutation::default()
                                }]),
                            })
                            .collect();
                        if let Err(e) = client.mutate_rows(b"t", batches) {
                            failures.push(format!("{e:?}"));
                        }
                    }
                    failures
                })
            })
            .collect();
        // Meanwhile, by hand: split at keys and merge neighbours.
        let handovers = s.spawn(|| {
            let mut attempt = 0usize;
            while !writers_done.load(SeqCst) {
                attempt += 1;
                let regions = db.list_regions("t").unwrap();
                let _ = if regions.len() < 6 {
                    db.split_table("t", Some(&row_key(attempt * 7919)[..]))
                } else {
                    db.merge_regions(
                        regions[1].info.encoded_name().as_bytes(),
                        regions[2].info.encoded_name().as_bytes(),
                    )
                };
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let failures = writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        writers_done.store(true, SeqCst);
        handovers.join().unwrap();
        failures
    });
    assert!(
        failures.is_empty(),
        "{} mutateRows calls failed, first: {:?}",
        failures.len(),
        failures.first()
    );

    // Every acknowledged row is there, read back over Thrift.
    let mut client = connect();
    let id = client.scanner_open(b"t", b"", &[]).unwrap();
    let mut seen = 0;
    loop {
        let rows = client.scanner_get_list(id, 1000).unwrap();
        if rows.is_empty() {
            break;
        }
        seen += rows.len();
    }
    assert_eq!(seen, CLIENTS * BATCHES * ROWS_PER_BATCH);
    assert!(db.list_regions("t").unwrap().len() > 1, "the table split");
    server.shutdown().unwrap();
}
