//! The admin extension (`basaltAdmin`) over the wire: every operation, in
//! every transport and protocol, and the refusal of documents of unknown
//! versions or operations.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use bytes::Bytes;

use basalt_thrift::admin::{
    AdminCallError, Change, ErrorKind, FamilySpec, Op, ReadSpec, Reply, METHOD,
};
use basalt_thrift::client::put;
use basalt_thrift::protocol::Value;
use basalt_thrift::{Client, ClientError};

use common::{TestServer, WIRES};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn family(name: &str, options: &[(&str, &str)]) -> FamilySpec {
    FamilySpec {
        name: name.into(),
        options: options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn admin_error(r: Result<Reply, AdminCallError>) -> basalt_thrift::admin::AdminError {
    match r {
        Err(AdminCallError::Admin(e)) => e,
        other => panic!("expected an admin error, got {other:?}"),
    }
}

/// Sends a raw request document and decodes the raw response.
fn raw(client: &mut Client, doc: &str) -> serde_json::Value {
    let answer: Bytes = client
        .call(
            METHOD,
            Value::Struct(vec![(
                1,
                Value::Binary(Bytes::copy_from_slice(doc.as_bytes())),
            )]),
        )
        .unwrap();
    serde_json::from_slice(&answer).unwrap()
}

#[test]
fn every_operation_over_every_wire() {
    for (i, (framed, protocol)) in WIRES.into_iter().enumerate() {
        let server = TestServer::start();
        let mut c = server.client(framed, protocol);
        let table = format!("t{i}");

        c.admin(Op::Create {
            table: table.clone(),
            families: vec![
                family("f", &[("VERSIONS", "5"), ("BLOOMFILTER", "ROWCOL")]),
                family("g", &[]),
            ],
            splits: vec![b("m")],
            num_regions: None,
            split_algo: None,
        })
        .unwrap();
        let Reply::Table(t) = c
            .admin(Op::Describe {
                table: table.clone(),
            })
            .unwrap()
        else {
            panic!("describe answers a table")
        };
        assert!(t.enabled);
        assert_eq!(t.regions.len(), 2);
        let f = &t.families[0];
        assert_eq!(f.name, "f");
        let opts: BTreeMap<_, _> = f.options.iter().cloned().collect();
        assert_eq!(opts["VERSIONS"], "5");
        assert_eq!(opts["BLOOMFILTER"], "ROWCOL");

        // alter: change one option (others kept), add, delete.
        c.admin(Op::Alter {
            table: table.clone(),
            changes: vec![
                Change::Set {
                    family: family("f", &[("MIN_VERSIONS", "1")]),
                },
                Change::Set {
                    family: family("h", &[("IN_MEMORY", "true")]),
                },
                Change::Delete { name: "g".into() },
            ],
        })
        .unwrap();
        let Reply::Table(t) = c
            .admin(Op::Describe {
                table: table.clone(),
            })
            .unwrap()
        else {
            panic!("describe answers a table")
        };
        let names: Vec<&str> = t.families.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["f", "h"]);
        let opts: BTreeMap<_, _> = t.families[0].options.iter().cloned().collect();
        assert_eq!(opts["VERSIONS"], "5");
        assert_eq!(opts["MIN_VERSIONS"], "1");

        // Data through Thrift1, read back with versions and a time range.
        for ts in [10, 20, 30] {
            c.mutate_row_ts(table.as_bytes(), b"a", vec![put(b"f:q", b"v")], ts)
                .unwrap();
        }
        c.mutate_row_ts(table.as_bytes(), b"z", vec![put(b"f:q", b"w")], 10)
            .unwrap();
        let read = ReadSpec {
            versions: Some(5),
            time_range: Some((15, 40)),
            ..ReadSpec::default()
        };
        let Reply::Rows { rows, more, .. } = c
            .admin(Op::Read {
                table: table.clone(),
                read,
            })
            .unwrap()
        else {
            panic!("read answers rows")
        };
        assert!(!more);
        assert_eq!(rows.len(), 1);
        let ts: Vec<i64> = rows[0].cells.iter().map(|c| c.timestamp).collect();
        assert_eq!(ts, [30, 20]);

        let Reply::Splits { keys } = c
            .admin(Op::GetSplits {
                table: table.clone(),
            })
            .unwrap()
        else {
            panic!("get_splits answers keys")
        };
        assert_eq!(keys, [b("m")]);

        c.admin(Op::Flush {
            table: table.clone(),
        })
        .unwrap();
        c.admin(Op::Compact {
            table: table.clone(),
            major: true,
        })
        .unwrap();
        let Reply::Regions { regions } = c
            .admin(Op::ListRegions {
                table: table.clone(),
            })
            .unwrap()
        else {
            panic!("list_regions answers regions")
        };
        assert_eq!(regions.len(), 2);
        assert_eq!(regions[0].end_key, b("m"));
        assert_eq!(regions[1].start_key, b("m"));
        assert_eq!(regions.iter().map(|r| r.store_files).sum::<usize>(), 2);
        assert!(regions.iter().all(|r| r.write_requests > 0));
        assert!(regions[0].name.starts_with(format!("{table},,").as_bytes()));

        let Reply::Status(s) = c.admin(Op::Status).unwrap() else {
            panic!("status answers counts")
        };
        assert_eq!((s.tables, s.regions), (1, 2));

        // HBase's truncate: an enabled table is refused; a disabled one is
        // emptied and comes back enabled, here keeping its regions.
        let truncate = |preserve_splits| Op::Truncate {
            table: table.clone(),
            preserve_splits,
        };
        let refused = c.admin(truncate(true)).unwrap_err();
        assert!(refused.to_string().contains("enabled"), "{refused}");
        c.disable_table(table.as_bytes()).unwrap();
        c.admin(truncate(true)).unwrap();
        assert!(c.is_table_enabled(table.as_bytes()).unwrap());
        let Reply::Rows { rows, .. } = c
            .admin(Op::Read {
                table: table.clone(),
                read: ReadSpec::default(),
            })
            .unwrap()
        else {
            panic!("read answers rows")
        };
        assert!(rows.is_empty());
        let Reply::Splits { keys } = c
            .admin(Op::GetSplits {
                table: table.clone(),
            })
            .unwrap()
        else {
            panic!("get_splits answers keys")
        };
        assert_eq!(keys, [b("m")]);
        // Without preserve_splits it comes back as one region.
        c.disable_table(table.as_bytes()).unwrap();
        c.admin(truncate(false)).unwrap();
        assert!(c.is_table_enabled(table.as_bytes()).unwrap());
        let Reply::Splits { keys } = c.admin(Op::GetSplits { table }).unwrap() else {
            panic!("get_splits answers keys")
        };
        assert!(keys.is_empty(), "{keys:?}");
    }
}

#[test]
fn reads_page_through_large_tables() {
    let server = TestServer::start();
    let mut c = server.default_client();
    c.admin(Op::Create {
        table: "t".into(),
        families: vec![family("f", &[])],
        splits: vec![],
        num_regions: Some(3),
        split_algo: Some("HexStringSplit".into()),
    })
    .unwrap();
    let total = basalt_thrift::admin::MAX_PAGE_ROWS + 500;
    let batches: Vec<_> = (0..total)
        .map(|i| basalt_thrift::types::BatchMutation {
            row: Some(Bytes::from(format!("{i:08x}"))),
            mutations: Some(vec![put(b"f:q", b"v")]),
        })
        .collect();
    for chunk in batches.chunks(500) {
        c.mutate_rows(b"t", chunk.to_vec()).unwrap();
    }
    for reversed in [false, true] {
        let mut read = ReadSpec {
            raw: true,
            reversed,
            ..ReadSpec::default()
        };
        let mut seen = Vec::new();
        loop {
            let Reply::Rows { rows, more, .. } = c
                .admin(Op::Read {
                    table: "t".into(),
                    read: read.clone(),
                })
                .unwrap()
            else {
                panic!("read answers rows")
            };
            seen.extend(rows.iter().map(|r| r.row.clone()));
            if !more {
                break;
            }
            read.after_row = rows.last().map(|r| r.row.clone());
        }
        let mut expected: Vec<Bytes> = (0..total)
            .map(|i| Bytes::from(format!("{i:08x}")))
            .collect();
        if reversed {
            expected.reverse();
        }
        assert_eq!(seen, expected, "reversed={reversed}");
    }

    // Large values end a page before its row count does.
    let big = vec![7u8; 512 * 1024];
    for i in 0..10 {
        c.mutate_row(b"t", format!("big{i}").as_bytes(), vec![put(b"f:q", &big)])
            .unwrap();
    }
    let mut read = ReadSpec {
        prefix: Some(b("big")),
        ..ReadSpec::default()
    };
    let mut pages = 0;
    let mut seen = 0;
    loop {
        let Reply::Rows { rows, more, .. } = c
            .admin(Op::Read {
                table: "t".into(),
                read: read.clone(),
            })
            .unwrap()
        else {
            panic!("read answers rows")
        };
        pages += 1;
        seen += rows.len();
        assert!(rows.iter().all(|r| r.cells[0].value.len() == big.len()));
        if !more {
            break;
        }
        read.after_row = rows.last().map(|r| r.row.clone());
    }
    assert_eq!(seen, 10);
    assert!(pages >= 2, "10 rows of 512 KiB came in {pages} page(s)");
}

#[test]
fn failures_carry_their_kind() {
    let server = TestServer::start();
    let mut c = server.default_client();
    let e = admin_error(c.admin(Op::Describe {
        table: "nope".into(),
    }));
    assert_eq!(e.kind, ErrorKind::TableNotFound);
    assert_eq!(e.subject.as_deref(), Some("nope"));

    let create = Op::Create {
        table: "t".into(),
        families: vec![family("f", &[])],
        splits: vec![],
        num_regions: None,
        split_algo: None,
    };
    c.admin(create.clone()).unwrap();
    assert_eq!(admin_error(c.admin(create)).kind, ErrorKind::TableExists);

    let e = admin_error(c.admin(Op::Create {
        table: "u".into(),
        families: vec![family("f", &[("BLOOMFILTER", "HUGE")])],
        splits: vec![],
        num_regions: None,
        split_algo: None,
    }));
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.contains("BLOOMFILTER"), "{e}");

    let e = admin_error(c.admin(Op::Alter {
        table: "t".into(),
        changes: vec![Change::Delete {
            name: "nope".into(),
        }],
    }));
    assert_eq!(e.kind, ErrorKind::NoSuchFamily);

    // split of a name that is neither a table nor a region.
    let e = admin_error(c.admin(Op::Split {
        target: b("nope"),
        key: None,
    }));
    assert_eq!(e.kind, ErrorKind::TableNotFound);

    let e = admin_error(c.admin(Op::Read {
        table: "t".into(),
        read: ReadSpec {
            filter: Some("Nope()".into()),
            ..ReadSpec::default()
        },
    }));
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
}

#[test]
fn unknown_versions_operations_and_garbage_are_refused() {
    let server = TestServer::start();
    let mut c = server.default_client();
    let r = raw(&mut c, r#"{"version": 2, "op": "status"}"#);
    assert_eq!(r["error"]["kind"], "unsupported_version");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("version 2 is not supported"));
    let r = raw(&mut c, r#"{"version": 1, "op": "explode"}"#);
    assert_eq!(r["error"]["kind"], "bad_request");
    assert!(r["error"]["message"].as_str().unwrap().contains("explode"));
    let r = raw(&mut c, r#"{"op": "status"}"#);
    assert_eq!(r["error"]["kind"], "bad_request");
    let r = raw(&mut c, "not json");
    assert_eq!(r["error"]["kind"], "bad_request");
    let r = raw(&mut c, r#"{"version": 1, "op": "status"}"#);
    assert_eq!(r["version"], 1);
    assert_eq!(r["ok"]["reply"], "status");

    // A call without the request field is a protocol error, and the
    // connection stays usable.
    let e = c.call::<Bytes>(METHOD, Value::Struct(vec![])).unwrap_err();
    assert!(
        matches!(e, ClientError::Application { .. }),
        "unexpected {e:?}"
    );
    assert!(c.admin(Op::Status).is_ok());
}
