//! Hostile clients (issue 32) against native RPC in this process: a client
//! that reads nothing of its answers, one that leaves in the middle of a
//! costly scan, a scan call out of time, and another connection's scanner
//! id. Each asserts an outcome; times are printed and bounded generously.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use basalt::{ColumnFamilyDescriptor, Put, TableDescriptor};
use basalt_rpc::client::RpcClient;
use basalt_rpc::filters::PACKAGE;
use basalt_rpc::proto::client::{Scan, ScanRequest, ScanResponse};
use basalt_rpc::proto::filter as pb;
use basalt_rpc::proto::hbase::{CompareType, RegionSpecifier};
use basalt_rpc::RpcConfig;
use bytes::Bytes;
use prost::Message;

mod common;
use common::Fixture;

/// A server over a database holding `t` (family `cf`), with `config`'s
/// limits.
fn start(config: RpcConfig) -> Fixture {
    common::start_serving_with(config, |db| {
        db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")))
            .unwrap();
    })
}

fn client(f: &Fixture) -> RpcClient {
    common::client(f, false)
}

/// Writes `rows` rows of one `value_len`-byte cell each into `t`.
fn fill(f: &Fixture, rows: usize, value_len: usize) {
    let table = f.db.table("t").unwrap();
    let value = vec![b'a'; value_len];
    for i in 0..rows {
        table
            .put(&Put::new(format!("row{i:07}")).add("cf", "q", value.clone()))
            .unwrap();
    }
}

/// The name of `t`'s only region.
fn region_name(f: &Fixture) -> Option<RegionSpecifier> {
    let info = f.db.describe_table("t").unwrap();
    common::region(&info.regions[0].info.region_name())
}

/// A scan of the whole region asking for every row and no size limit, with
/// `filter` if given.
fn open_everything(f: &Fixture, filter: Option<pb::Filter>) -> ScanRequest {
    ScanRequest {
        region: region_name(f),
        scan: Some(Scan {
            max_result_size: Some(1 << 62),
            filter,
            ..Default::default()
        }),
        number_of_rows: Some(u32::MAX >> 1),
        ..Default::default()
    }
}

fn filter(short: &str, message: impl Message) -> pb::Filter {
    pb::Filter {
        name: format!("{PACKAGE}{short}"),
        serialized_filter: Some(message.encode_to_vec()),
    }
}

/// A filter list of `n` value filters that each test every cell with a
/// regular expression that must read the whole value to fail.
fn costly_filter(n: usize) -> pb::Filter {
    let one = |i: usize| {
        let comparator = pb::Comparator {
            name: format!("{PACKAGE}RegexStringComparator"),
            serialized_comparator: Some(
                pb::RegexStringComparator {
                    pattern: format!("^a.*z{i}$"),
                    pattern_flags: 0,
                    charset: "UTF-8".into(),
                    engine: None,
                }
                .encode_to_vec(),
            ),
        };
        let f = filter(
            "ValueFilter",
            pb::ValueFilter {
                compare_filter: Some(pb::CompareFilter {
                    compare_op: CompareType::Equal as i32,
                    comparator: Some(comparator),
                }),
            },
        );
        pb::NestedFilter {
            name: f.name,
            serialized_filter: f.serialized_filter.map(Bytes::from),
        }
    };
    filter(
        "FilterList",
        pb::FilterList {
            operator: pb::FilterListOperator::MustPassOne as i32,
            filters: (0..n).map(one).collect(),
        },
    )
}

/// Polls `condition` until it holds; panics after a hang guard.
fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_client_that_reads_nothing_is_dropped_after_the_write_timeout() {
    let f = start(RpcConfig {
        write_timeout_ms: 300,
        ..RpcConfig::default()
    });
    // 8 MiB of rows; every answer is capped at max_answer_bytes (4 MiB)
    // whatever the client asks, far more than the kernel buffers for a
    // client that does not read.
    fill(&f, 2000, 4096);
    let mut c = client(&f);
    for _ in 0..4 {
        c.send_call("Scan", &open_everything(&f, None)).unwrap();
    }
    let started = Instant::now();
    eventually("the server to drop the client that reads nothing", || {
        f.server.write_timeouts() == 1
    });
    eprintln!(
        "dropped {} ms after the requests",
        started.elapsed().as_millis()
    );
    eventually("its scanners to go", || {
        f.server.context().scanners.is_empty()
    });
    drop(c);
}

#[test]
fn a_scan_answer_stops_at_max_answer_bytes_whatever_the_client_asks() {
    let f = start(RpcConfig {
        max_answer_bytes: 64 * 1024,
        ..RpcConfig::default()
    });
    fill(&f, 100, 4096);
    let mut c = client(&f);
    let first: ScanResponse = c
        .call("Scan", &open_everything(&f, None), &[])
        .unwrap()
        .decode()
        .unwrap();
    assert!(
        first.results.len() <= 17,
        "{} rows of 4 KiB in one answer",
        first.results.len()
    );
    assert_eq!(first.more_results_in_region, Some(true));
}

#[test]
fn a_costly_scan_stops_soon_after_its_client_leaves() {
    let f = start(RpcConfig::default());
    fill(&f, 20_000, 200);
    let mut c = client(&f);
    let mut request = open_everything(&f, Some(costly_filter(999)));
    request.number_of_rows = Some(10);
    c.send_call("Scan", &request).unwrap();
    // The scan is under way (it needs far longer than this to finish).
    std::thread::sleep(Duration::from_millis(300));
    drop(c);
    let left = Instant::now();
    eventually("the scan to stop", || f.server.cancelled_calls() == 1);
    let took = left.elapsed();
    eprintln!(
        "the scan stopped {} ms after its client left",
        took.as_millis()
    );
    assert!(
        took < Duration::from_secs(10),
        "the scan went on for {took:?} after its client left"
    );
}

#[test]
fn a_scan_call_out_of_time_answers_a_heartbeat_and_the_scan_goes_on() {
    let f = start(RpcConfig {
        scan_call_timeout_ms: 50,
        ..RpcConfig::default()
    });
    fill(&f, 20_000, 200);
    let mut c = client(&f);
    let mut request = open_everything(&f, Some(costly_filter(999)));
    request.client_handles_heartbeats = Some(true);
    request.number_of_rows = Some(10);
    let answer: ScanResponse = c.call("Scan", &request, &[]).unwrap().decode().unwrap();
    assert_eq!(answer.heartbeat_message, Some(true));
    assert!(answer.results.is_empty());
    assert_eq!(answer.more_results_in_region, Some(true));
    // A client that takes no heartbeats is told which limit it met.
    let mut request = open_everything(&f, Some(costly_filter(999)));
    request.number_of_rows = Some(10);
    let refused = c.call("Scan", &request, &[]).unwrap_err();
    assert!(
        refused.to_string().contains("scan_call_timeout_ms"),
        "{refused}"
    );
}

#[test]
fn another_connection_cannot_use_a_scanner_id() {
    let f = start(RpcConfig::default());
    fill(&f, 10, 10);
    let mut owner = client(&f);
    let mut request = open_everything(&f, None);
    request.number_of_rows = Some(1);
    let opened: ScanResponse = owner.call("Scan", &request, &[]).unwrap().decode().unwrap();
    let id = opened.scanner_id.unwrap();
    let mut other = client(&f);
    let next = ScanRequest {
        scanner_id: Some(id),
        number_of_rows: Some(1),
        ..Default::default()
    };
    let refused = other.call("Scan", &next, &[]).unwrap_err();
    assert!(
        refused.to_string().contains("UnknownScannerException"),
        "{refused}"
    );
    let mine: ScanResponse = owner.call("Scan", &next, &[]).unwrap().decode().unwrap();
    assert_eq!(mine.results.len(), 1);
}
