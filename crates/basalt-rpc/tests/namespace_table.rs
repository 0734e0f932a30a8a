//! HBase 2's `hbase:namespace` over a real socket, read as HBase's Java
//! client reads it: its region found in `hbase:meta`, then gets, exists,
//! scans and batches on that region; writes refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use basalt::NamespaceDescriptor as BasaltNamespace;
use basalt_rpc::client::RpcClient;
use basalt_rpc::filters::PACKAGE;
use basalt_rpc::proto::client::{
    mutation_proto::{column_value::QualifierValue, ColumnValue, MutationType},
    Action, Column, Get, GetRequest, GetResponse, MultiRequest, MultiResponse, MutateRequest,
    MutationProto, RegionAction, Scan, ScanRequest, ScanResponse,
};
use basalt_rpc::proto::filter as fpb;
use basalt_rpc::proto::hbase::{
    table_state::State as TableStateCode, NamespaceDescriptor, RegionInfo, TableState,
};
use bytes::Bytes;
use prost::Message;

use common::{client, region, Fixture};

const DO_NOT_RETRY: &str = "org.apache.hadoop.hbase.DoNotRetryIOException";

fn start() -> Fixture {
    common::start_serving(|_| {})
}

/// Every cell of a get or scan answer as (row, family, qualifier, value),
/// from the message or its cell block.
type Cells = Vec<(Bytes, Bytes, Bytes, Bytes)>;

fn cells_of(results: &[basalt_rpc::proto::client::Result], block: &[basalt::Cell]) -> Cells {
    if !block.is_empty() {
        return block
            .iter()
            .map(|c| {
                (
                    c.row.clone(),
                    c.family.clone(),
                    c.qualifier.clone(),
                    c.value.clone(),
                )
            })
            .collect();
    }
    results
        .iter()
        .flat_map(|r| r.cell.iter())
        .map(|c| {
            (
                c.row.clone().unwrap(),
                c.family.clone().unwrap(),
                c.qualifier.clone().unwrap(),
                c.value.clone().unwrap(),
            )
        })
        .collect()
}

/// The region of `hbase:namespace` holding `row`, found as the Java client
/// finds any region: a reversed scan of `hbase:meta` from
/// `<table>,<row>,99999999999999`, one row.
fn locate(c: &mut RpcClient, row: &[u8]) -> (Vec<u8>, RegionInfo) {
    let mut start = b"hbase:namespace,".to_vec();
    start.extend_from_slice(row);
    start.extend_from_slice(b",99999999999999");
    let answer = c
        .call(
            "Scan",
            &ScanRequest {
                region: region(b"hbase:meta,,1"),
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
    let cells = cells_of(&response.results, &answer.cells);
    let (row, _, _, value) = cells
        .iter()
        .find(|(_, _, q, _)| &q[..] == b"regioninfo")
        .expect("hbase:meta has a region row for hbase:namespace");
    assert_eq!(&value[..4], b"PBUF");
    let state = cells
        .iter()
        .find(|(_, _, q, _)| &q[..] == b"state")
        .unwrap();
    assert_eq!(&state.3[..], b"OPEN");
    (row.to_vec(), RegionInfo::decode(&value[4..]).unwrap())
}

fn get(c: &mut RpcClient, name: &[u8], get: Get) -> Cells {
    let answer = c
        .call(
            "Get",
            &GetRequest {
                region: region(name),
                get: Some(get),
            },
            &[],
        )
        .unwrap();
    let response: GetResponse = answer.decode().unwrap();
    cells_of(
        &response.result.into_iter().collect::<Vec<_>>(),
        &answer.cells,
    )
}

fn scan(c: &mut RpcClient, name: &[u8], scan: Scan) -> Cells {
    let answer = c
        .call(
            "Scan",
            &ScanRequest {
                region: region(name),
                scan: Some(scan),
                number_of_rows: Some(100),
                close_scanner: Some(true),
                ..Default::default()
            },
            &[],
        )
        .unwrap();
    let response: ScanResponse = answer.decode().unwrap();
    assert_eq!(response.more_results_in_region, Some(false));
    cells_of(&response.results, &answer.cells)
}

fn namespace(value: &[u8]) -> (String, BTreeMap<String, String>) {
    let descriptor = NamespaceDescriptor::decode(value).unwrap();
    (
        String::from_utf8(descriptor.name).unwrap(),
        descriptor
            .configuration
            .into_iter()
            .map(|p| (p.name, p.value))
            .collect(),
    )
}

fn put(row: &str) -> MutationProto {
    MutationProto {
        row: Some(Bytes::from(row.to_string())),
        mutate_type: Some(MutationType::Put as i32),
        column_value: vec![ColumnValue {
            family: Bytes::from_static(b"info"),
            qualifier_value: vec![QualifierValue {
                qualifier: Some(Bytes::from_static(b"d")),
                value: Some(Bytes::from_static(b"x")),
                ..Default::default()
            }],
        }],
        ..Default::default()
    }
}

#[test]
fn the_default_row_found_through_meta_holds_the_default_namespace_descriptor() {
    let f = start();
    for cell_blocks in [false, true] {
        let mut c = client(&f, cell_blocks);
        let (name, info) = locate(&mut c, b"default");
        let table = info.table_name.unwrap();
        assert_eq!(
            (&table.namespace[..], &table.qualifier[..]),
            (&b"hbase"[..], &b"namespace"[..])
        );
        assert!(info.start_key.unwrap().is_empty() && info.end_key.unwrap().is_empty());
        let cells = get(
            &mut c,
            &name,
            Get {
                row: Bytes::from_static(b"default"),
                column: vec![Column {
                    family: Bytes::from_static(b"info"),
                    qualifier: vec![],
                }],
                ..Default::default()
            },
        );
        assert_eq!(cells.len(), 1, "{cells:?}");
        let (row, family, qualifier, value) = &cells[0];
        assert_eq!(
            (&row[..], &family[..], &qualifier[..]),
            (&b"default"[..], &b"info"[..], &b"d"[..])
        );
        // The bare message, as HBase 2.6 stores it: no PBUF prefix.
        assert_eq!(namespace(value), ("default".to_string(), BTreeMap::new()));
    }
}

#[test]
fn hbase_meta_says_the_namespace_table_is_enabled() {
    let f = start();
    let mut c = client(&f, false);
    let cells = get(
        &mut c,
        b"hbase:meta,,1",
        Get {
            row: Bytes::from_static(b"hbase:namespace"),
            ..Default::default()
        },
    );
    let (_, family, qualifier, value) = &cells[0];
    assert_eq!(
        (&family[..], &qualifier[..]),
        (&b"table"[..], &b"state"[..])
    );
    assert_eq!(
        TableState::decode(&value[..]).unwrap().state,
        TableStateCode::Enabled as i32
    );
}

#[test]
fn a_scan_lists_every_namespace_in_row_order_and_follows_creates_and_drops() {
    let f = start();
    let mut properties = BTreeMap::new();
    properties.insert("owner".to_string(), "ops".to_string());
    f.db.create_namespace(BasaltNamespace {
        name: "analytics".into(),
        properties: properties.clone(),
    })
    .unwrap();
    let mut c = client(&f, true);
    let (name, _) = locate(&mut c, b"");
    let listed = |c: &mut RpcClient| -> Vec<(String, BTreeMap<String, String>)> {
        scan(c, &name, Scan::default())
            .iter()
            .map(|(row, _, _, value)| {
                let descriptor = namespace(value);
                assert_eq!(row[..], *descriptor.0.as_bytes(), "the row is the name");
                descriptor
            })
            .collect()
    };
    assert_eq!(
        listed(&mut c),
        vec![
            ("analytics".to_string(), properties),
            ("default".to_string(), BTreeMap::new()),
            ("hbase".to_string(), BTreeMap::new()),
        ]
    );
    f.db.drop_namespace("analytics").unwrap();
    let names: Vec<String> = listed(&mut c).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["default", "hbase"]);

    // Start and stop rows, and a reversed scan, as for any region.
    let rows = |cells: Cells| -> Vec<Bytes> { cells.into_iter().map(|c| c.0).collect() };
    let from_e = scan(
        &mut c,
        &name,
        Scan {
            start_row: Some(Bytes::from_static(b"e")),
            ..Default::default()
        },
    );
    assert_eq!(rows(from_e), [Bytes::from_static(b"hbase")]);
    let reversed = scan(
        &mut c,
        &name,
        Scan {
            reversed: Some(true),
            ..Default::default()
        },
    );
    assert_eq!(
        rows(reversed),
        [Bytes::from_static(b"hbase"), Bytes::from_static(b"default")]
    );
}

#[test]
fn a_filter_on_the_namespace_table_is_applied_as_on_any_table() {
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"");
    let prefix = |p: &'static [u8]| fpb::Filter {
        name: format!("{PACKAGE}PrefixFilter"),
        serialized_filter: Some(
            fpb::PrefixFilter {
                prefix: Some(Bytes::from_static(p)),
            }
            .encode_to_vec(),
        ),
    };
    let cells = scan(
        &mut c,
        &name,
        Scan {
            filter: Some(prefix(b"hb")),
            ..Default::default()
        },
    );
    assert_eq!(cells.len(), 1);
    assert_eq!(&cells[0].0[..], b"hbase");
    // A get whose filter drops the row answers no cell.
    let cells = get(
        &mut c,
        &name,
        Get {
            row: Bytes::from_static(b"default"),
            filter: Some(prefix(b"hb")),
            ..Default::default()
        },
    );
    assert!(cells.is_empty());
}

#[test]
fn exists_answers_whether_a_namespace_has_a_row() {
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"");
    for (row, expected) in [(&b"default"[..], true), (&b"nope"[..], false)] {
        let answer: GetResponse = c
            .call(
                "Get",
                &GetRequest {
                    region: region(&name),
                    get: Some(Get {
                        row: Bytes::copy_from_slice(row),
                        existence_only: Some(true),
                        ..Default::default()
                    }),
                },
                &[],
            )
            .unwrap()
            .decode()
            .unwrap();
        assert_eq!(answer.result.unwrap().exists, Some(expected));
    }
}

#[test]
fn writes_to_the_namespace_table_are_refused_and_a_batch_still_answers_its_gets() {
    let f = start();
    let mut c = client(&f, false);
    let (name, _) = locate(&mut c, b"default");
    let error = c
        .call(
            "Mutate",
            &MutateRequest {
                region: region(&name),
                mutation: Some(put("default")),
                ..Default::default()
            },
            &[],
        )
        .unwrap_err();
    assert_eq!(error.class, DO_NOT_RETRY);
    assert!(error.message.contains("hbase:namespace"), "{error}");

    let answer: MultiResponse = c
        .call(
            "Multi",
            &MultiRequest {
                region_action: vec![RegionAction {
                    region: region(&name),
                    action: vec![
                        Action {
                            index: Some(0),
                            get: Some(Get {
                                row: Bytes::from_static(b"hbase"),
                                ..Default::default()
                            }),
                            ..Default::default()
                        },
                        Action {
                            index: Some(1),
                            mutation: Some(put("hbase")),
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            },
            &[],
        )
        .unwrap()
        .decode()
        .unwrap();
    let results = &answer.region_action_result[0].result_or_exception;
    assert_eq!(results.len(), 2);
    let got = results[0].result.as_ref().unwrap();
    assert_eq!(namespace(got.cell[0].value.as_ref().unwrap()).0, "hbase");
    let refused = results[1].exception.as_ref().unwrap();
    assert_eq!(refused.name, DO_NOT_RETRY);

    // An atomic action (a row mutation) is refused whole.
    let answer: MultiResponse = c
        .call(
            "Multi",
            &MultiRequest {
                region_action: vec![RegionAction {
                    region: region(&name),
                    atomic: Some(true),
                    action: vec![Action {
                        mutation: Some(put("hbase")),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            },
            &[],
        )
        .unwrap()
        .decode()
        .unwrap();
    let refused = answer.region_action_result[0].exception.as_ref().unwrap();
    assert_eq!(refused.name, DO_NOT_RETRY);
}
