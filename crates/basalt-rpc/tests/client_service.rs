//! `ClientService` over a real socket, as HBase's native clients call it:
//! region lookups in `hbase:meta`, reads, writes, scans, batches, splits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use basalt::{ColumnFamilyDescriptor, Database, TableDescriptor};
use basalt_rpc::client::RpcClient;
use basalt_rpc::proto::client::{
    mutation_proto::{column_value::QualifierValue, ColumnValue, MutationType},
    Action, Column, Condition, Get, GetRequest, GetResponse, MultiRequest, MultiResponse,
    MutateRequest, MutateResponse, MutationProto, RegionAction, Scan, ScanRequest, ScanResponse,
};
use basalt_rpc::proto::filter::Comparator;
use basalt_rpc::proto::hbase::{CompareType, RegionInfo, RegionSpecifier};
use basalt_rpc::{RpcConfig, RpcServer};
use bytes::Bytes;
use prost::Message;

use common::{client, region, Fixture};

fn start() -> Fixture {
    common::start_serving(|db| {
        db.create_table(
            TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf").max_versions(3)),
        )
        .unwrap();
    })
}

fn meta() -> Option<RegionSpecifier> {
    region(b"hbase:meta,,1")
}

fn put(row: &str, q: &str, v: &str) -> MutationProto {
    MutationProto {
        row: Some(Bytes::from(row.to_string())),
        mutate_type: Some(MutationType::Put as i32),
        column_value: vec![ColumnValue {
            family: Bytes::from_static(b"cf"),
            qualifier_value: vec![QualifierValue {
                qualifier: Some(Bytes::from(q.to_string())),
                value: Some(Bytes::from(v.to_string())),
                ..Default::default()
            }],
        }],
        ..Default::default()
    }
}

/// An increment of `cf:q` by `amount` in `row`.
fn increment(row: &str, q: &str, amount: i64) -> MutationProto {
    let mut m = put(row, q, "");
    m.mutate_type = Some(MutationType::Increment as i32);
    m.column_value[0].qualifier_value[0].value =
        Some(Bytes::copy_from_slice(&amount.to_be_bytes()));
    m
}

/// Sends one region action of `mutations` (unnumbered, as the Java client
/// sends a row mutation) and answers its result.
fn region_action_of(
    c: &mut RpcClient,
    name: &[u8],
    atomic: bool,
    mutations: Vec<MutationProto>,
) -> basalt_rpc::proto::client::RegionActionResult {
    let request = MultiRequest {
        region_action: vec![RegionAction {
            region: region(name),
            atomic: Some(atomic),
            action: mutations
                .into_iter()
                .map(|m| Action {
                    mutation: Some(m),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut response: MultiResponse = c.call("Multi", &request, &[]).unwrap().decode().unwrap();
    response.region_action_result.remove(0)
}

/// The region serving `row` of table `t`, found as hbase-driver finds it:
/// a reversed scan of `hbase:meta` from `t,<row>,`.
fn locate(c: &mut RpcClient, row: &[u8]) -> (Vec<u8>, RegionInfo) {
    let mut start = b"t,".to_vec();
    start.extend_from_slice(row);
    start.extend_from_slice(b",99999999999999");
    let answer = c
        .call(
            "Scan",
            &ScanRequest {
                region: meta(),
                scan: Some(Scan {
                    start_row: Some(Bytes::from(start)),
                    reversed: Some(true),
                    column: vec![Column {
                        family: Bytes::from_static(b"info"),
                        qualifier: vec![],
                    }],
                    ..Default::default()
                }),
                number_of_rows: Some(1),
                close_scanner: Some(true),
                ..Default::default()
            },
            &[],
        )
        .unwrap();
    let response: ScanResponse = answer.decode().unwrap();
    // Cells inside the message, or (cell blocks) counted per result.
    let cells: Vec<(Bytes, Bytes, Bytes)> = if c.uses_cell_blocks() {
        let n = response.cells_per_result[0] as usize;
        answer.cells[..n]
            .iter()
            .map(|c| (c.row.clone(), c.qualifier.clone(), c.value.clone()))
            .collect()
    } else {
        response.results[0]
            .cell
            .iter()
            .map(|c| {
                (
                    c.row.clone().unwrap(),
                    c.qualifier.clone().unwrap(),
                    c.value.clone().unwrap(),
                )
            })
            .collect()
    };
    let (row, _, value) = cells
        .iter()
        .find(|(_, q, _)| &q[..] == b"regioninfo")
        .unwrap();
    assert_eq!(&value[..4], b"PBUF");
    let info = RegionInfo::decode(&value[4..]).unwrap();
    (row.to_vec(), info)
}

/// One `Scan` call that must succeed, its answer decoded.
fn scan_call(c: &mut RpcClient, request: ScanRequest) -> ScanResponse {
    c.call("Scan", &request, &[]).unwrap().decode().unwrap()
}

fn do_put(c: &mut RpcClient, name: &[u8], row: &str, v: &str) {
    let answer = c
        .call(
            "Mutate",
            &MutateRequest {
                region: region(name),
                mutation: Some(put(row, "q", v)),
                ..Default::default()
            },
            &[],
        )
        .unwrap();
    let _: MutateResponse = answer.decode().unwrap();
}

fn do_get(
    c: &mut RpcClient,
    name: &[u8],
    row: &str,
) -> Result<Vec<(Bytes, Bytes)>, basalt_rpc::RpcError> {
    let answer = c.call(
        "Get",
        &GetRequest {
            region: region(name),
            get: Some(Get {
                row: Bytes::from(row.to_string()),
                ..Default::default()
            }),
        },
        &[],
    )?;
    let response: GetResponse = answer.decode()?;
    let result = response.result.unwrap_or_default();
    if c.uses_cell_blocks() {
        assert_eq!(
            result.associated_cell_count.unwrap_or(0) as usize,
            answer.cells.len()
        );
        return Ok(answer
            .cells
            .iter()
            .map(|c| (c.qualifier.clone(), c.value.clone()))
            .collect());
    }
    Ok(result
        .cell
        .iter()
        .map(|c| (c.qualifier.clone().unwrap(), c.value.clone().unwrap()))
        .collect())
}

#[test]
fn a_row_found_through_meta_is_written_and_read_back() {
    let f = start();
    let mut c = client(&f, false);
    let (name, info) = locate(&mut c, b"row1");
    assert_eq!(info.table_name.unwrap().qualifier, b"t");
    assert_eq!(
        name,
        f.db.list_regions("t").unwrap()[0]
            .info
            .region_name()
            .to_vec()
    );
    do_put(&mut c, &name, "row1", "v1");
    assert_eq!(
        do_get(&mut c, &name, "row1").unwrap(),
        vec![(Bytes::from_static(b"q"), Bytes::from_static(b"v1"))]
    );
}

#[test]
fn answers_carry_cells_in_a_key_value_cell_block_when_asked() {
    let f = start();
    let mut c = client(&f, true);
    let (name, _) = locate(&mut c, b"r");
    do_put(&mut c, &name, "r", "value");
    assert_eq!(
        do_get(&mut c, &name, "r").unwrap(),
        vec![(Bytes::from_static(b"q"), Bytes::from_static(b"value"))]
    );
}

#[test]
fn a_scan_answers_one_region_and_says_when_it_is_done() {
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    for i in 0..25 {
        do_put(&mut c, &name, &format!("row{i:02}"), "v");
    }
    let open = scan_call(
        &mut c,
        ScanRequest {
            region: region(&name),
            scan: Some(Scan {
                start_row: Some(Bytes::from_static(b"row05")),
                stop_row: Some(Bytes::from_static(b"row20")),
                include_stop_row: Some(true),
                ..Default::default()
            }),
            number_of_rows: Some(10),
            ..Default::default()
        },
    );
    assert_eq!(open.results.len(), 10);
    assert_eq!(open.more_results_in_region, Some(true));
    let next = scan_call(
        &mut c,
        ScanRequest {
            scanner_id: open.scanner_id,
            number_of_rows: Some(10),
            next_call_seq: Some(0),
            ..Default::default()
        },
    );
    // row05..=row20: 16 rows, the stop row included.
    assert_eq!(next.results.len(), 6);
    assert_eq!(next.results[5].cell[0].row.as_deref(), Some(&b"row20"[..]));
    assert_eq!(next.more_results_in_region, Some(false));
    // The exhausted scanner was closed, as HBase does; a later call on it
    // gets an empty answer (as from HBase), not rows and not an error.
    let again: ScanResponse = scan_call(
        &mut c,
        ScanRequest {
            scanner_id: open.scanner_id,
            number_of_rows: Some(10),
            ..Default::default()
        },
    );
    assert!(again.results.is_empty());
    assert_ne!(again.more_results_in_region, Some(true));
}

#[test]
fn a_batched_scan_marks_the_parts_of_a_row_and_its_limit_counts_whole_rows() {
    // Found by the differential test: with a batch and a limit, HBase's
    // limit counts rows, and every part but a row's last says "may have
    // more cells in row" (the Java client counts rows by that flag).
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    let mutate = |c: &mut RpcClient, mutation: MutationProto| {
        let request = MutateRequest {
            region: region(&name),
            mutation: Some(mutation),
            ..Default::default()
        };
        let _: MutateResponse = c.call("Mutate", &request, &[]).unwrap().decode().unwrap();
    };
    // Two rows of three cells each.
    let mut m = put("wide1", "a", "v");
    let more = m.column_value[0].qualifier_value[0].clone();
    for q in ["b", "c"] {
        let mut value = more.clone();
        value.qualifier = Some(Bytes::from(q.to_string()));
        m.column_value[0].qualifier_value.push(value);
    }
    mutate(&mut c, m.clone());
    m.row = Some(Bytes::from_static(b"wide2"));
    mutate(&mut c, m);
    let answer = scan_call(
        &mut c,
        ScanRequest {
            region: region(&name),
            scan: Some(Scan {
                start_row: Some(Bytes::from_static(b"wide")),
                batch_size: Some(2),
                ..Default::default()
            }),
            number_of_rows: Some(100),
            limit_of_rows: Some(2),
            ..Default::default()
        },
    );
    // Two rows of three cells in batches of two: four parts, two rows.
    let sizes: Vec<usize> = answer.results.iter().map(|r| r.cell.len()).collect();
    assert_eq!(sizes, vec![2, 1, 2, 1]);
    assert_eq!(
        answer.partial_flag_per_result,
        vec![true, false, true, false]
    );
    assert_eq!(answer.more_results, Some(false));
}

#[test]
fn a_reversed_scan_with_a_limit_ends_the_whole_scan() {
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    for i in 0..10 {
        do_put(&mut c, &name, &format!("k{i}"), "v");
    }
    let open = scan_call(
        &mut c,
        ScanRequest {
            region: region(&name),
            scan: Some(Scan {
                start_row: Some(Bytes::from_static(b"k7")),
                reversed: Some(true),
                ..Default::default()
            }),
            number_of_rows: Some(100),
            limit_of_rows: Some(3),
            ..Default::default()
        },
    );
    let rows: Vec<_> = open
        .results
        .iter()
        .map(|r| r.cell[0].row.clone().unwrap())
        .collect();
    assert_eq!(
        rows,
        vec![
            Bytes::from_static(b"k7"),
            Bytes::from_static(b"k6"),
            Bytes::from_static(b"k5")
        ]
    );
    assert_eq!(open.more_results, Some(false));
}

/// HBase's client sends what is left of a scan's limit with every call, and
/// HBase's server counts each call's rows against that, from zero (found
/// by the differential test: with a batch, the Java client counts some rows
/// twice, and HBase's answer then ends a row earlier than a limit kept for
/// the whole scanner would).
#[test]
fn each_call_counts_its_rows_against_the_limit_it_carries() {
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    for i in 0..10 {
        do_put(&mut c, &name, &format!("n{i}"), "v");
    }
    let rows_of = |answer: &ScanResponse| -> Vec<Bytes> {
        answer
            .results
            .iter()
            .map(|r| r.cell[0].row.clone().unwrap())
            .collect()
    };
    let open = scan_call(
        &mut c,
        ScanRequest {
            region: region(&name),
            scan: Some(Scan {
                start_row: Some(Bytes::from_static(b"n")),
                ..Default::default()
            }),
            number_of_rows: Some(2),
            limit_of_rows: Some(5),
            ..Default::default()
        },
    );
    assert_eq!(rows_of(&open), [&b"n0"[..], b"n1"]);
    assert_eq!(open.more_results, Some(true));
    // The client says 2 are left: this call may end two rows.
    let second = scan_call(
        &mut c,
        ScanRequest {
            scanner_id: open.scanner_id,
            number_of_rows: Some(2),
            next_call_seq: Some(0),
            limit_of_rows: Some(2),
            ..Default::default()
        },
    );
    assert_eq!(rows_of(&second), [&b"n2"[..], b"n3"]);
    assert_eq!(second.more_results, Some(false));
    assert_eq!(second.more_results_in_region, Some(true));
}

#[test]
fn a_batch_answers_each_action_with_its_own_result_or_exception() {
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    let mut bad = put("b", "q", "v");
    bad.column_value[0].family = Bytes::from_static(b"nosuch");
    let request = MultiRequest {
        region_action: vec![RegionAction {
            region: region(&name),
            action: vec![
                Action {
                    index: Some(0),
                    mutation: Some(put("a", "q", "1")),
                    ..Default::default()
                },
                Action {
                    index: Some(1),
                    mutation: Some(bad),
                    ..Default::default()
                },
                Action {
                    index: Some(2),
                    get: Some(Get {
                        row: Bytes::from_static(b"a"),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }],
        ..Default::default()
    };
    let response: MultiResponse = c.call("Multi", &request, &[]).unwrap().decode().unwrap();
    let results = &response.region_action_result[0].result_or_exception;
    assert_eq!(results.len(), 3);
    assert!(results[0].exception.is_none());
    assert_eq!(
        results[1].exception.as_ref().unwrap().name,
        "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException"
    );
    // As in HBase, the puts of a region action are applied together after
    // its gets, unless an increment or append comes between them.
    assert!(results[2].result.as_ref().unwrap().cell.is_empty());
    assert_eq!(do_get(&mut c, &name, "a").unwrap().len(), 1);
}

#[test]
fn a_get_sees_the_puts_before_it_in_a_region_action_only_past_an_increment() {
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    let get = |row: &'static [u8]| Action {
        get: Some(Get {
            row: Bytes::from_static(row),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut actions = vec![
        Action {
            mutation: Some(put("g1", "q", "before")),
            ..Default::default()
        },
        get(b"g1"),
        Action {
            mutation: Some(increment("g2", "n", 1)),
            ..Default::default()
        },
        get(b"g1"),
    ];
    for (i, a) in actions.iter_mut().enumerate() {
        a.index = Some(i as u32);
    }
    let request = MultiRequest {
        region_action: vec![RegionAction {
            region: region(&name),
            action: actions,
            ..Default::default()
        }],
        ..Default::default()
    };
    let response: MultiResponse = c.call("Multi", &request, &[]).unwrap().decode().unwrap();
    let results = &response.region_action_result[0].result_or_exception;
    let cells = |i: usize| results[i].result.as_ref().unwrap().cell.len();
    assert_eq!(
        cells(1),
        0,
        "the put is still gathered when the first get runs"
    );
    assert_eq!(cells(2), 1, "the increment answers its new value");
    assert_eq!(cells(3), 1, "the increment applied the gathered put first");
}

#[test]
fn check_and_put_increment_and_append_follow_hbase() {
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    // A null comparator with EQUAL: put only while the column is absent.
    let absent = Condition {
        row: Bytes::from_static(b"c"),
        family: Some(Bytes::from_static(b"cf")),
        qualifier: Some(Bytes::from_static(b"q")),
        compare_type: Some(2),
        comparator: Some(Comparator {
            name: "org.apache.hadoop.hbase.filter.NullComparator".into(),
            serialized_comparator: Some(Vec::new()),
        }),
        ..Default::default()
    };
    let check = |c: &mut RpcClient| -> Result<bool, basalt_rpc::RpcError> {
        let r: MutateResponse = c
            .call(
                "Mutate",
                &MutateRequest {
                    region: region(&name),
                    mutation: Some(put("c", "q", "first")),
                    condition: Some(absent.clone()),
                    ..Default::default()
                },
                &[],
            )?
            .decode()?;
        Ok(r.processed.unwrap_or(false))
    };
    assert!(check(&mut c).unwrap());
    assert!(!check(&mut c).unwrap());
    let increment = MutationProto {
        row: Some(Bytes::from_static(b"n")),
        mutate_type: Some(MutationType::Increment as i32),
        column_value: vec![ColumnValue {
            family: Bytes::from_static(b"cf"),
            qualifier_value: vec![QualifierValue {
                qualifier: Some(Bytes::from_static(b"count")),
                value: Some(Bytes::copy_from_slice(&5i64.to_be_bytes())),
                ..Default::default()
            }],
        }],
        ..Default::default()
    };
    for expected in [5i64, 10] {
        let r: MutateResponse = c
            .call(
                "Mutate",
                &MutateRequest {
                    region: region(&name),
                    mutation: Some(increment.clone()),
                    ..Default::default()
                },
                &[],
            )
            .unwrap()
            .decode()
            .unwrap();
        let value = r.result.unwrap().cell[0].value.clone().unwrap();
        assert_eq!(value[..], expected.to_be_bytes());
    }
    let mut append = put("p", "q", "abc");
    append.mutate_type = Some(MutationType::Append as i32);
    for expected in ["abc", "abcabc"] {
        let r: MutateResponse = c
            .call(
                "Mutate",
                &MutateRequest {
                    region: region(&name),
                    mutation: Some(append.clone()),
                    ..Default::default()
                },
                &[],
            )
            .unwrap()
            .decode()
            .unwrap();
        assert_eq!(
            r.result.unwrap().cell[0].value.as_deref(),
            Some(expected.as_bytes())
        );
    }
}

#[test]
fn after_a_split_the_old_region_is_not_served_and_meta_leads_to_every_row() {
    let f = start();
    let mut c = client(&f, true);
    let (old, _) = locate(&mut c, b"a");
    let rows: Vec<String> = (0..40).map(|i| format!("row{i:03}")).collect();
    for r in &rows {
        do_put(&mut c, &old, r, r);
    }
    f.db.split_table("t", Some(b"row0205")).unwrap();
    let stale = do_get(&mut c, &old, "row001").unwrap_err();
    assert_eq!(
        stale.class,
        "org.apache.hadoop.hbase.NotServingRegionException"
    );
    assert!(!stale.do_not_retry);
    // A client that re-reads hbase:meta finds each row's new region.
    let mut regions = std::collections::BTreeSet::new();
    for r in &rows {
        let (name, info) = locate(&mut c, r.as_bytes());
        assert!(info.start_key.as_deref().unwrap_or_default() <= r.as_bytes());
        regions.insert(name.clone());
        assert_eq!(
            do_get(&mut c, &name, r).unwrap()[0].1,
            Bytes::from(r.clone())
        );
    }
    assert_eq!(regions.len(), 2);
}

#[test]
fn a_row_outside_the_named_region_is_refused_as_wrong_region() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    db.create_table_with_splits(
        TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")),
        &[Bytes::from_static(b"m")],
    )
    .unwrap();
    let config = RpcConfig {
        master_port: 0,
        region_server_port: 0,
        ..RpcConfig::default()
    };
    let server = RpcServer::bind(&config)
        .unwrap()
        .serve(db.clone(), "c".into())
        .unwrap();
    let mut c = RpcClient::connect(server.region_server_addr(), "ClientService", false).unwrap();
    let first = db.list_regions("t").unwrap()[0].info.region_name();
    let error = do_get(&mut c, &first, "z").unwrap_err();
    assert_eq!(
        error.class,
        "org.apache.hadoop.hbase.regionserver.WrongRegionException"
    );
}

#[test]
fn an_abandoned_scanner_expires_after_its_lease() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")))
        .unwrap();
    let config = RpcConfig {
        master_port: 0,
        region_server_port: 0,
        scanner_lease_ms: 200,
        ..RpcConfig::default()
    };
    let server = RpcServer::bind(&config)
        .unwrap()
        .serve(db.clone(), "c".into())
        .unwrap();
    let mut c = RpcClient::connect(server.region_server_addr(), "ClientService", false).unwrap();
    let (name, _) = locate(&mut c, b"a");
    for i in 0..5 {
        do_put(&mut c, &name, &format!("r{i}"), "v");
    }
    let open: ScanResponse = scan_call(
        &mut c,
        ScanRequest {
            region: region(&name),
            scan: Some(Scan::default()),
            number_of_rows: Some(1),
            ..Default::default()
        },
    );
    assert_eq!(open.more_results_in_region, Some(true));
    // The sweeper runs every half lease; wait (generously) until it has.
    let mut gone = false;
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if server.context().scanners.is_empty() {
            gone = true;
            break;
        }
    }
    assert!(gone, "the scanner outlived its lease");
    let next = c.call(
        "Scan",
        &ScanRequest {
            scanner_id: open.scanner_id,
            number_of_rows: Some(1),
            ..Default::default()
        },
        &[],
    );
    assert_eq!(
        next.unwrap_err().class,
        "org.apache.hadoop.hbase.UnknownScannerException"
    );
}

#[test]
fn a_get_of_rows_only_in_files_is_answered_cold_and_warm() {
    // A Get runs first with memory-only reads on the connection's thread;
    // one whose block is not cached yet must still be answered (on the
    // blocking pool), and answered the same once the block is cached.
    let f = start();
    let mut c = client(&f, true);
    let (name, _) = locate(&mut c, b"row1");
    for i in 0..50 {
        do_put(&mut c, &name, &format!("row{i:02}"), &format!("v{i}"));
    }
    f.db.flush_table("t").unwrap();
    let before = f.db.block_cache_stats();
    for round in 0..2 {
        for i in (0..50).step_by(7) {
            assert_eq!(
                do_get(&mut c, &name, &format!("row{i:02}")).unwrap(),
                vec![(Bytes::from_static(b"q"), Bytes::from(format!("v{i}")))],
                "round {round}"
            );
        }
    }
    let after = f.db.block_cache_stats();
    assert!(
        after.hits > before.hits,
        "the second round read cached blocks"
    );
}

#[test]
fn a_raw_scan_answers_delete_markers_and_the_cells_they_mask() {
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    do_put(&mut c, &name, "row1", "v1");
    let delete = MutationProto {
        row: Some(Bytes::from_static(b"row1")),
        mutate_type: Some(MutationType::Delete as i32),
        column_value: vec![ColumnValue {
            family: Bytes::from_static(b"cf"),
            qualifier_value: vec![QualifierValue {
                qualifier: Some(Bytes::from_static(b"q")),
                delete_type: Some(
                    basalt_rpc::proto::client::mutation_proto::DeleteType::DeleteMultipleVersions
                        as i32,
                ),
                ..Default::default()
            }],
        }],
        ..Default::default()
    };
    let _: MutateResponse = c
        .call(
            "Mutate",
            &MutateRequest {
                region: region(&name),
                mutation: Some(delete),
                ..Default::default()
            },
            &[],
        )
        .unwrap()
        .decode()
        .unwrap();
    let scan = |raw: bool, c: &mut RpcClient| {
        scan_call(
            c,
            ScanRequest {
                region: region(&name),
                scan: Some(Scan {
                    // HBase's client says raw in an attribute: `Bytes.toBytes(true)` is 0xFF.
                    attribute: vec![basalt_rpc::proto::hbase::NameBytesPair {
                        name: "_raw_".into(),
                        value: Some(vec![if raw { 0xFF } else { 0 }]),
                    }],
                    max_versions: Some(10),
                    ..Default::default()
                }),
                number_of_rows: Some(10),
                ..Default::default()
            },
        )
    };
    assert!(scan(false, &mut c).results.is_empty());
    let raw = scan(true, &mut c);
    assert_eq!(raw.results.len(), 1);
    let types: Vec<_> = raw.results[0]
        .cell
        .iter()
        .map(|cell| cell.cell_type)
        .collect();
    // HBase's CellType codes: DeleteColumn (12) sorts before the Put (4) it masks.
    assert_eq!(types, vec![Some(12), Some(4)]);
}

#[test]
fn a_raw_scan_naming_a_qualifier_is_refused_as_hbase_refuses_it() {
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    let raw_with = |column: Column, c: &mut RpcClient| {
        c.call(
            "Scan",
            &ScanRequest {
                region: region(&name),
                scan: Some(Scan {
                    attribute: vec![basalt_rpc::proto::hbase::NameBytesPair {
                        name: "_raw_".into(),
                        value: Some(vec![0xFF]),
                    }],
                    column: vec![column],
                    ..Default::default()
                }),
                number_of_rows: Some(10),
                ..Default::default()
            },
            &[],
        )
    };
    let whole_family = Column {
        family: Bytes::from_static(b"cf"),
        qualifier: vec![],
    };
    assert!(raw_with(whole_family, &mut c).is_ok());
    let one_column = Column {
        family: Bytes::from_static(b"cf"),
        qualifier: vec![Bytes::from_static(b"q")],
    };
    let error = raw_with(one_column, &mut c).unwrap_err().to_string();
    assert!(
        error.contains("Cannot specify any column for a raw scan"),
        "{error}"
    );
}

#[test]
fn a_batched_scan_with_a_whole_row_filter_is_refused_at_open_whatever_the_rows_hold() {
    // Found by the differential test: HBase's server refuses such a scan
    // when it decodes it (Scan.setBatch after the filter), even over rows
    // that would all fit in one batch.
    use basalt_rpc::proto::filter as pf;
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    let page = pf::Filter {
        name: "org.apache.hadoop.hbase.filter.PageFilter".into(),
        serialized_filter: Some(pf::PageFilter { page_size: 1 }.encode_to_vec()),
    };
    let open = |filter: Option<pf::Filter>, batch: Option<u32>, c: &mut RpcClient| {
        c.call(
            "Scan",
            &ScanRequest {
                region: region(&name),
                scan: Some(Scan {
                    filter,
                    batch_size: batch,
                    ..Default::default()
                }),
                number_of_rows: Some(10),
                close_scanner: Some(true),
                ..Default::default()
            },
            &[],
        )
    };
    let error = open(Some(page.clone()), Some(3), &mut c)
        .unwrap_err()
        .to_string();
    assert!(error.contains("IncompatibleFilterException"), "{error}");
    assert!(error.contains("DoNotRetryIOException"), "{error}");
    // Either alone is fine.
    assert!(open(Some(page), None, &mut c).is_ok());
    assert!(open(None, Some(3), &mut c).is_ok());
}

/// A reversed scan moving down from the region above starts at this
/// region's end key, exclusive: that row is not the region's, and a filter
/// that counts rows must not count it (found by the differential test: a
/// reversed PageFilter scan over several regions gave one row fewer per
/// region than HBase).
#[test]
fn a_reversed_page_from_a_regions_exclusive_end_counts_only_the_regions_rows() {
    use basalt_rpc::proto::filter as pf;
    let f = start();
    f.db.create_table_with_splits(
        TableDescriptor::new("p").family(ColumnFamilyDescriptor::new("cf")),
        &[Bytes::from_static(b"k5")],
    )
    .unwrap();
    let table = f.db.table("p").unwrap();
    for i in 0..10 {
        table
            .put(&basalt::Put::new(format!("k{i}")).add("cf", "q", "v"))
            .unwrap();
    }
    let mut c = client(&f, false);
    let lower = f.db.list_regions("p").unwrap()[0].info.region_name();
    let page = pf::Filter {
        name: "org.apache.hadoop.hbase.filter.PageFilter".into(),
        serialized_filter: Some(pf::PageFilter { page_size: 2 }.encode_to_vec()),
    };
    let answer = scan_call(
        &mut c,
        ScanRequest {
            region: region(&lower),
            scan: Some(Scan {
                start_row: Some(Bytes::from_static(b"k5")),
                include_start_row: Some(false),
                reversed: Some(true),
                filter: Some(page),
                ..Default::default()
            }),
            number_of_rows: Some(10),
            ..Default::default()
        },
    );
    let rows: Vec<Bytes> = answer
        .results
        .iter()
        .map(|r| r.cell[0].row.clone().unwrap())
        .collect();
    assert_eq!(rows, [&b"k4"[..], b"k3"]);
}

/// The rows of `hbase:meta` a scan from `start` to `stop` answers, as the
/// Java client's `Admin.getRegions` sends it (forward, family `info`).
fn meta_rows_between(c: &mut RpcClient, start: &[u8], stop: &[u8]) -> Vec<Bytes> {
    let response = scan_call(
        c,
        ScanRequest {
            region: meta(),
            scan: Some(Scan {
                start_row: Some(Bytes::copy_from_slice(start)),
                stop_row: Some(Bytes::copy_from_slice(stop)),
                column: vec![Column {
                    family: Bytes::from_static(b"info"),
                    qualifier: vec![],
                }],
                ..Default::default()
            }),
            number_of_rows: Some(100),
            close_scanner: Some(true),
            ..Default::default()
        },
    );
    response
        .results
        .iter()
        .map(|r| r.cell[0].row.clone().unwrap())
        .collect()
}

#[test]
fn get_regions_meta_scan_answers_every_region_of_a_presplit_table_including_after_split_and_merge()
{
    let f = start();
    f.db.create_table_with_splits(
        TableDescriptor::new("s").family(ColumnFamilyDescriptor::new("cf")),
        &[
            Bytes::from_static(b"b"),
            Bytes::from_static(b"d"),
            Bytes::from_static(b"f"),
        ],
    )
    .unwrap();
    let mut c = client(&f, false);
    // HBase's ClientMetaTableAccessor: start `s,,`, stop `s ,,` (a space
    // sorts below the delimiter, so every `s,...` row is inside).
    let rows = meta_rows_between(&mut c, b"s,,", b"s ,,");
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert!(rows[0].starts_with(b"s,,"), "the first region is kept");
    assert!(rows.iter().all(|r| r.starts_with(b"s,")));

    f.db.split_table("s", Some(b"c")).unwrap();
    assert_eq!(meta_rows_between(&mut c, b"s,,", b"s ,,").len(), 5);

    let regions = f.db.list_regions("s").unwrap();
    let (a, b) = (regions[0].info.region_name(), regions[1].info.region_name());
    f.db.merge_regions(&a, &b).unwrap();
    assert_eq!(meta_rows_between(&mut c, b"s,,", b"s ,,").len(), 4);
    // Table `t`'s rows stay out of `s`'s range, and the reverse.
    assert_eq!(meta_rows_between(&mut c, b"t,,", b"t ,,").len(), 1);
}

#[test]
fn a_check_and_put_whose_expected_value_is_empty_writes_while_the_cell_is_absent() {
    use basalt_rpc::proto::filter::{BinaryComparator, ByteArrayComparable};
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"e");
    // What the Java client sends for `ifEquals(family, qualifier, new byte[0])`:
    // a BinaryComparator whose comparable has no value.
    let condition = |compare_type: CompareType| Condition {
        row: Bytes::from_static(b"e"),
        family: Some(Bytes::from_static(b"cf")),
        qualifier: Some(Bytes::from_static(b"q")),
        compare_type: Some(compare_type as i32),
        comparator: Some(Comparator {
            name: "org.apache.hadoop.hbase.filter.BinaryComparator".into(),
            serialized_comparator: Some(
                BinaryComparator {
                    comparable: Some(ByteArrayComparable { value: None }),
                }
                .encode_to_vec(),
            ),
        }),
        ..Default::default()
    };
    let mut check = |compare_type: CompareType, v: &str| -> bool {
        let r: MutateResponse = c
            .call(
                "Mutate",
                &MutateRequest {
                    region: region(&name),
                    mutation: Some(put("e", "q", v)),
                    condition: Some(condition(compare_type)),
                    ..Default::default()
                },
                &[],
            )
            .unwrap()
            .decode()
            .unwrap();
        r.processed.unwrap()
    };
    assert!(
        !check(CompareType::NotEqual, "no"),
        "absent is not NOT_EQUAL"
    );
    assert!(check(CompareType::Equal, "first"), "absent: written");
    assert!(!check(CompareType::Equal, "second"), "present now");
    assert!(check(CompareType::NotEqual, "third"));
    let cells = do_get(&mut c, &name, "e").unwrap();
    assert_eq!(&cells[0].1[..], b"third");
}

#[test]
fn the_connection_registry_preamble_answers_the_cluster_id_then_closes() {
    use std::io::{Read, Write};
    let f = start();
    for addr in [f.server.region_server_addr(), f.server.master_addr()] {
        let mut socket = std::net::TcpStream::connect(addr).unwrap();
        socket
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        // HBase 2.6's RpcConnectionRegistry: `Regist` instead of `HBas`.
        socket.write_all(b"Regist").unwrap();
        let mut answer = Vec::new();
        socket.read_to_end(&mut answer).unwrap();
        let len = u32::from_be_bytes(answer[..4].try_into().unwrap()) as usize;
        assert_eq!(len, answer.len() - 4, "one frame, then the server closes");
        let (header, message, _) =
            basalt_rpc::frame::split_response(Bytes::from(answer[4..].to_vec())).unwrap();
        assert_eq!(header.call_id, Some(u32::MAX), "call id -1");
        assert!(header.exception.is_none());
        let response =
            basalt_rpc::proto::registry::GetConnectionRegistryResponse::decode(&message[..])
                .unwrap();
        assert_eq!(response.cluster_id.as_deref(), Some("test-cluster"));
    }
}

#[test]
fn a_check_and_mutate_with_a_filter_condition_applies_when_the_filter_matches_the_row() {
    use basalt_rpc::proto::filter as pf;
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"fc");
    do_put(&mut c, &name, "fc", "v1");
    let value_is = |v: &str| pf::Filter {
        name: "org.apache.hadoop.hbase.filter.ValueFilter".into(),
        serialized_filter: Some(
            pf::ValueFilter {
                compare_filter: Some(pf::CompareFilter {
                    compare_op: CompareType::Equal as i32,
                    comparator: Some(Comparator {
                        name: "org.apache.hadoop.hbase.filter.BinaryComparator".into(),
                        serialized_comparator: Some(
                            pf::BinaryComparator {
                                comparable: Some(pf::ByteArrayComparable {
                                    value: Some(Bytes::from(v.to_string())),
                                }),
                            }
                            .encode_to_vec(),
                        ),
                    }),
                }),
            }
            .encode_to_vec(),
        ),
    };
    let mut check =
        |filter: pf::Filter, range: Option<basalt_rpc::proto::hbase::TimeRange>, q: &str| -> bool {
            let r: MutateResponse = c
                .call(
                    "Mutate",
                    &MutateRequest {
                        region: region(&name),
                        mutation: Some(put("fc", q, "written")),
                        condition: Some(Condition {
                            row: Bytes::from_static(b"fc"),
                            filter: Some(filter),
                            time_range: range,
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                    &[],
                )
                .unwrap()
                .decode()
                .unwrap();
            r.processed.unwrap()
        };
    assert!(!check(value_is("other"), None, "no"));
    assert!(check(value_is("v1"), None, "yes"));
    // A time range that holds no version of the matching cell: no match.
    let before = basalt_rpc::proto::hbase::TimeRange {
        from: Some(0),
        to: Some(1),
    };
    assert!(!check(value_is("v1"), Some(before), "old"));
    let cells = do_get(&mut c, &name, "fc").unwrap();
    let qualifiers: Vec<&[u8]> = cells.iter().map(|(q, _)| &q[..]).collect();
    assert_eq!(qualifiers, [&b"q"[..], &b"yes"[..]]);
}

#[test]
fn a_row_mutation_answers_each_unnumbered_mutation_by_position() {
    // HBase's Table.mutateRow sends its mutations unnumbered in one atomic
    // region action and reads one answer per position: answers all numbered
    // 0 left the others unanswered, and the client retried them (writing
    // them again) until it gave up. `processed` says the mutation applied
    // (hbase-driver reads it).
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    let mut delete = put("r", "old", "");
    delete.mutate_type = Some(MutationType::Delete as i32);
    let answer = &region_action_of(&mut c, &name, true, vec![put("r", "new", "y"), delete]);
    assert_eq!(answer.processed, Some(true));
    let indices: Vec<_> = answer.result_or_exception.iter().map(|r| r.index).collect();
    assert_eq!(indices, vec![Some(0), Some(1)]);
    assert!(answer
        .result_or_exception
        .iter()
        .all(|r| r.exception.is_none()));
    let cells = do_get(&mut c, &name, "r").unwrap();
    assert_eq!(
        cells,
        vec![(Bytes::from_static(b"new"), Bytes::from_static(b"y"))]
    );
}

#[test]
fn a_row_mutation_with_an_increment_answers_its_new_value_in_the_first_position() {
    // HBase 2.4+'s client reads a mutateRow's Result (the increments' and
    // appends' new values) from the first answer of the atomic action.
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    let answer = &region_action_of(
        &mut c,
        &name,
        true,
        vec![put("ri", "p", "v"), increment("ri", "n", 9)],
    );
    assert_eq!(answer.processed, Some(true));
    let first = answer.result_or_exception[0].result.as_ref().unwrap();
    let values: Vec<&[u8]> = first
        .cell
        .iter()
        .map(|cell| cell.value.as_deref().unwrap_or_default())
        .collect();
    assert_eq!(values, vec![&9i64.to_be_bytes()[..]]);
    let second = answer.result_or_exception[1].result.as_ref().unwrap();
    assert!(second.cell.is_empty());
    let cells = do_get(&mut c, &name, "ri").unwrap();
    assert_eq!(cells.len(), 2);
}

#[test]
fn a_scan_tracking_metrics_reports_each_calls_rows_scanned_and_filtered() {
    // HBase's client adds up the server's counters of every answer
    // (`Scan.setScanMetricsEnabled`), so each answer reports only its own.
    use basalt_rpc::proto::filter as pf;
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    for i in 0..10 {
        do_put(&mut c, &name, &format!("row{i:02}"), "v");
    }
    let counter = |answer: &ScanResponse, wanted: &str| -> i64 {
        answer
            .scan_metrics
            .as_ref()
            .expect("an answer to a scan tracking metrics carries them")
            .metrics
            .iter()
            .filter(|m| m.name.as_deref() == Some(wanted))
            .filter_map(|m| m.value)
            .sum()
    };
    let scan_with = |c: &mut RpcClient, filter: Option<pf::Filter>| -> (i64, i64, usize) {
        let mut answer = scan_call(
            c,
            ScanRequest {
                region: region(&name),
                scan: Some(Scan {
                    filter,
                    ..Default::default()
                }),
                number_of_rows: Some(4),
                track_scan_metrics: Some(true),
                ..Default::default()
            },
        );
        let (mut scanned, mut filtered, mut rows) = (0, 0, 0);
        loop {
            scanned += counter(&answer, "ROWS_SCANNED");
            filtered += counter(&answer, "ROWS_FILTERED");
            rows += answer.results.len();
            if answer.more_results_in_region != Some(true) {
                return (scanned, filtered, rows);
            }
            answer = scan_call(
                c,
                ScanRequest {
                    scanner_id: answer.scanner_id,
                    number_of_rows: Some(4),
                    track_scan_metrics: Some(true),
                    ..Default::default()
                },
            );
        }
    };
    assert_eq!(scan_with(&mut c, None), (10, 0, 10));
    let only_row_3 = pf::Filter {
        name: "org.apache.hadoop.hbase.filter.RowFilter".into(),
        serialized_filter: Some(
            pf::RowFilter {
                compare_filter: Some(pf::CompareFilter {
                    compare_op: CompareType::Equal as i32,
                    comparator: Some(Comparator {
                        name: "org.apache.hadoop.hbase.filter.BinaryComparator".into(),
                        serialized_comparator: Some(
                            pf::BinaryComparator {
                                comparable: Some(pf::ByteArrayComparable {
                                    value: Some(Bytes::from_static(b"row03")),
                                }),
                            }
                            .encode_to_vec(),
                        ),
                    }),
                }),
            }
            .encode_to_vec(),
        ),
    };
    assert_eq!(scan_with(&mut c, Some(only_row_3)), (10, 9, 1));
    // Without asking, no metrics travel.
    let plain = scan_call(
        &mut c,
        ScanRequest {
            region: region(&name),
            scan: Some(Scan::default()),
            number_of_rows: Some(20),
            ..Default::default()
        },
    );
    assert!(plain.scan_metrics.is_none());
}

#[test]
fn a_put_with_a_ttl_attribute_expires_and_a_malformed_one_is_refused() {
    // HBase's `Mutation.setTTL` travels as the `_ttl` attribute, an 8-byte
    // big-endian count of milliseconds.
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"a");
    let mutate = |c: &mut RpcClient, row: &str, ttl: Vec<u8>| {
        let mut m = put(row, "q", "v");
        m.attribute = vec![basalt_rpc::proto::hbase::NameBytesPair {
            name: "_ttl".into(),
            value: Some(ttl),
        }];
        c.call(
            "Mutate",
            &MutateRequest {
                region: region(&name),
                mutation: Some(m),
                ..Default::default()
            },
            &[],
        )
    };
    mutate(&mut c, "brief", 1i64.to_be_bytes().to_vec()).unwrap();
    mutate(&mut c, "lasting", i64::MAX.to_be_bytes().to_vec()).unwrap();
    // Expiry needs the clock to pass timestamp + 1 ms: a few ms of sleep
    // decide nothing about speed.
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert!(do_get(&mut c, &name, "brief").unwrap().is_empty());
    assert_eq!(do_get(&mut c, &name, "lasting").unwrap().len(), 1);
    let refused = mutate(&mut c, "bad", vec![1, 2, 3]).unwrap_err();
    assert!(refused.to_string().contains("_ttl"), "{refused}");
    let negative = mutate(&mut c, "bad", (-5i64).to_be_bytes().to_vec()).unwrap_err();
    assert!(negative.to_string().contains("negative"), "{negative}");
}

/// A scan with the `basalt.index` attribute reads by a secondary index
/// (issue 36): whichever region the client asks, the answer is the whole
/// index range's data rows in index order, and `more_results` false ends
/// the scan, so HBase's client asks no other region.
#[test]
fn a_scan_with_the_index_attribute_answers_the_rows_in_index_order_and_ends_the_scan() {
    let f = common::start_serving(|db| {
        db.create_table_with_splits(
            TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")),
            &[Bytes::from_static(b"m")],
        )
        .unwrap();
        let table = db.table("t").unwrap();
        for (row, buyer) in [("a1", "zed"), ("b2", "amy"), ("n3", "amy"), ("z4", "bob")] {
            table
                .put(&basalt::Put::new(row).add("cf", "buyer", buyer))
                .unwrap();
        }
        db.create_index(
            "t",
            basalt::IndexDescriptor::new("by_buyer", vec![basalt::IndexColumn::new("cf", "buyer")]),
        )
        .unwrap();
    });
    let descriptor =
        f.db.table("t")
            .unwrap()
            .descriptor()
            .get_index("by_buyer")
            .cloned()
            .unwrap();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"z");
    let attribute = basalt_rpc::proto::hbase::NameBytesPair {
        name: "basalt.index".into(),
        value: Some(b"by_buyer".to_vec()),
    };
    let open = scan_call(
        &mut c,
        ScanRequest {
            region: region(&name),
            scan: Some(Scan {
                start_row: Some(descriptor.bound(&[b"amy"]).unwrap()),
                stop_row: Some(descriptor.bound(&[b"zed"]).unwrap()),
                attribute: vec![attribute.clone()],
                ..Default::default()
            }),
            number_of_rows: Some(10),
            ..Default::default()
        },
    );
    let rows: Vec<&[u8]> = open
        .results
        .iter()
        .map(|r| r.cell[0].row.as_deref().unwrap())
        .collect();
    // amy's two orders (by row), then bob's; zed is past the stop value.
    assert_eq!(rows, [&b"b2"[..], b"n3", b"z4"]);
    assert_eq!(open.more_results, Some(false));
    let unknown = c.call(
        "Scan",
        &ScanRequest {
            region: region(&name),
            scan: Some(Scan {
                attribute: vec![basalt_rpc::proto::hbase::NameBytesPair {
                    name: "basalt.index".into(),
                    value: Some(b"nope".to_vec()),
                }],
                ..Default::default()
            }),
            number_of_rows: Some(10),
            ..Default::default()
        },
        &[],
    );
    let Err(e) = unknown else {
        panic!("an unknown index is refused");
    };
    let e = e.to_string();
    assert!(e.contains("no index named 'nope'"), "{e}");
}
