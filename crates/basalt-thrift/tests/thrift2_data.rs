//! Thrift2's data methods (get, put, deletes, checks, increment, append,
//! mutateRow) with HBase's semantics, in every transport and protocol.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use basalt_thrift::thrift2::types::{
    compare_op, delete_type, TAppend, TColumnIncrement, TIncrement, TMutation, TRowMutations,
    TTimeRange,
};
use common::thrift2::*;
use common::{TestServer, WIRES};

#[test]
fn puts_and_gets_round_trip_in_every_transport_and_protocol() {
    let server = TestServer::thrift2();
    let mut admin = server.client2(false, basalt_thrift::Protocol::Compact);
    create(&mut admin, "t", &["cf"]);
    for (i, (framed, protocol)) in WIRES.into_iter().enumerate() {
        let mut c = server.client2(framed, protocol);
        let row = format!("row{i}");
        c.put(
            b"t",
            put(
                row.as_bytes(),
                vec![cell(b"cf", b"q", b"v"), cell(b"cf", b"r", b"w")],
            ),
        )
        .unwrap();
        let got = c.get(b"t", get(row.as_bytes())).unwrap();
        assert_eq!(
            got.row.as_deref(),
            Some(row.as_bytes()),
            "{protocol:?} framed={framed}"
        );
        assert_eq!(
            cells(&got),
            vec![("cf:q".into(), "v".into()), ("cf:r".into(), "w".into())]
        );
        assert!(c.exists(b"t", get(row.as_bytes())).unwrap());
    }
}

#[test]
fn a_missing_row_is_an_empty_result_and_get_multiple_keeps_positions() {
    let server = TestServer::thrift2();
    let mut c = server.client2(true, basalt_thrift::Protocol::Binary { strict: true });
    create(&mut c, "t", &["cf"]);
    c.put(b"t", put(b"a", vec![cell(b"cf", b"q", b"1")]))
        .unwrap();
    let missing = c.get(b"t", get(b"zz")).unwrap();
    assert_eq!(missing.row, None);
    assert_eq!(missing.column_values, Some(vec![]));
    let many = c.get_multiple(b"t", vec![get(b"zz"), get(b"a")]).unwrap();
    assert_eq!(many.len(), 2);
    assert_eq!(many[0].row, None);
    assert_eq!(value(&many[1]).as_deref(), Some(&b"1"[..]));
    assert_eq!(
        c.exists_all(b"t", vec![get(b"a"), get(b"zz")]).unwrap(),
        vec![true, false]
    );
}

#[test]
fn timestamps_time_ranges_and_versions_select_cells_as_hbase_does() {
    let server = TestServer::thrift2();
    let mut c = server.client2(false, basalt_thrift::Protocol::Compact);
    c.create_table(descriptor("t", &[]).clone_with_family("cf", 5), Vec::new())
        .unwrap();
    for ts in [10, 20, 30] {
        let mut p = put(b"r", vec![cell(b"cf", b"q", format!("v{ts}").as_bytes())]);
        p.timestamp = Some(ts);
        c.put(b"t", p).unwrap();
    }
    // A cell's own timestamp wins over the put's.
    let mut p = put(
        b"r",
        vec![{
            let mut x = cell(b"cf", b"own", b"x");
            x.timestamp = Some(7);
            x
        }],
    );
    p.timestamp = Some(99);
    c.put(b"t", p).unwrap();
    let mut g = get(b"r");
    g.columns = Some(vec![column(b"cf", Some(b"own"))]);
    let r = c.get(b"t", g).unwrap();
    assert_eq!(r.column_values.unwrap()[0].timestamp, Some(7));

    let mut g = get(b"r");
    g.columns = Some(vec![column(b"cf", Some(b"q"))]);
    g.max_versions = Some(5);
    g.time_range = Some(TTimeRange {
        min_stamp: Some(10),
        max_stamp: Some(30),
    });
    // Half-open: [10, 30).
    let r = c.get(b"t", g.clone()).unwrap();
    let stamps: Vec<i64> = r
        .column_values
        .unwrap()
        .iter()
        .map(|c| c.timestamp.unwrap())
        .collect();
    assert_eq!(stamps, vec![20, 10]);
    // A timestamp wins over the range.
    g.timestamp = Some(30);
    let r = c.get(b"t", g).unwrap();
    assert_eq!(value(&r).as_deref(), Some(&b"v30"[..]));
}

#[test]
fn store_limit_and_offset_count_cells_per_family() {
    let server = TestServer::thrift2();
    let mut c = server.client2(false, basalt_thrift::Protocol::Binary { strict: false });
    create(&mut c, "t", &["a", "b"]);
    c.put(
        b"t",
        put(
            b"r",
            vec![
                cell(b"a", b"1", b"x"),
                cell(b"a", b"2", b"x"),
                cell(b"a", b"3", b"x"),
                cell(b"b", b"1", b"x"),
                cell(b"b", b"2", b"x"),
            ],
        ),
    )
    .unwrap();
    let mut g = get(b"r");
    g.store_offset = Some(1);
    g.store_limit = Some(1);
    let names: Vec<String> = cells(&c.get(b"t", g).unwrap())
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, vec!["a:2", "b:2"]);
}

#[test]
fn existence_only_answers_the_row_without_its_cells() {
    let server = TestServer::thrift2();
    let mut c = server.client2(false, basalt_thrift::Protocol::Compact);
    create(&mut c, "t", &["cf"]);
    c.put(b"t", put(b"r", vec![cell(b"cf", b"q", b"v")]))
        .unwrap();
    let mut g = get(b"r");
    g.existence_only = Some(true);
    let r = c.get(b"t", g.clone()).unwrap();
    assert_eq!(r.row.as_deref(), Some(&b"r"[..]));
    assert_eq!(r.column_values, Some(vec![]));
    g.row = b(b"nope");
    assert_eq!(c.get(b"t", g).unwrap().row, None);
}

#[test]
fn a_filter_string_filters_gets() {
    let server = TestServer::thrift2();
    let mut c = server.client2(true, basalt_thrift::Protocol::Compact);
    create(&mut c, "t", &["cf"]);
    c.put(
        b"t",
        put(
            b"r",
            vec![cell(b"cf", b"keep", b"1"), cell(b"cf", b"drop", b"2")],
        ),
    )
    .unwrap();
    let mut g = get(b"r");
    g.filter_string = b(b"QualifierFilter(=, 'binary:keep')");
    assert_eq!(
        cells(&c.get(b"t", g).unwrap()),
        vec![("cf:keep".into(), "1".into())]
    );
}

#[test]
fn deletes_follow_their_delete_type_and_delete_multiple_answers_the_failures() {
    let server = TestServer::thrift2();
    let mut c = server.client2(false, basalt_thrift::Protocol::Binary { strict: true });
    c.create_table(descriptor("t", &[]).clone_with_family("cf", 5), Vec::new())
        .unwrap();
    for ts in [1, 2] {
        let mut p = put(
            b"r",
            vec![cell(b"cf", b"q", b"v"), cell(b"cf", b"other", b"o")],
        );
        p.timestamp = Some(ts);
        c.put(b"t", p).unwrap();
    }
    // DELETE_COLUMN: the newest version only.
    let mut d = delete(b"r", vec![column(b"cf", Some(b"q"))]);
    d.delete_type = Some(delete_type::DELETE_COLUMN);
    c.delete_single(b"t", d).unwrap();
    let mut g = get(b"r");
    g.columns = Some(vec![column(b"cf", Some(b"q"))]);
    g.max_versions = Some(5);
    let r = c.get(b"t", g.clone()).unwrap();
    assert_eq!(
        r.column_values
            .unwrap()
            .iter()
            .map(|c| c.timestamp)
            .collect::<Vec<_>>(),
        vec![Some(1)]
    );
    // The default (DELETE_COLUMNS): every version.
    c.delete_single(b"t", delete(b"r", vec![column(b"cf", Some(b"q"))]))
        .unwrap();
    assert_eq!(c.get(b"t", g).unwrap().row, None);
    // No columns: the whole row.
    c.delete_single(b"t", delete(b"r", vec![])).unwrap();
    assert_eq!(c.get(b"t", get(b"r")).unwrap().row, None);

    c.put(b"t", put(b"x", vec![cell(b"cf", b"q", b"v")]))
        .unwrap();
    let failed = c
        .delete_multiple(b"t", vec![delete(b"x", vec![]), delete(b"", vec![])])
        .unwrap();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].row.as_deref(), Some(&b""[..]));
    assert_eq!(c.get(b"t", get(b"x")).unwrap().row, None);
}

#[test]
fn check_and_put_check_and_delete_and_check_and_mutate_test_the_value() {
    let server = TestServer::thrift2();
    let mut c = server.client2(true, basalt_thrift::Protocol::Binary { strict: true });
    create(&mut c, "t", &["cf"]);
    let p = put(b"r", vec![cell(b"cf", b"q", b"1")]);
    // No value: the column must be absent.
    assert!(c
        .check_and_put(b"t", b"r", b"cf", b"q", None, p.clone())
        .unwrap());
    assert!(!c.check_and_put(b"t", b"r", b"cf", b"q", None, p).unwrap());
    let p2 = put(b"r", vec![cell(b"cf", b"q", b"2")]);
    assert!(!c
        .check_and_put(b"t", b"r", b"cf", b"q", Some(b"9"), p2.clone())
        .unwrap());
    assert!(c
        .check_and_put(b"t", b"r", b"cf", b"q", Some(b"1"), p2)
        .unwrap());

    let mutations = TRowMutations {
        row: b(b"r"),
        mutations: Some(vec![
            TMutation {
                put: Some(put(b"r", vec![cell(b"cf", b"z", b"new")])),
                delete_single: None,
            },
            TMutation {
                put: None,
                delete_single: Some(delete(b"r", vec![column(b"cf", Some(b"q"))])),
            },
        ]),
    };
    // "1" < "2" holds: the given value is on the left, as in HBase.
    assert!(!c
        .check_and_mutate(
            b"t",
            b"r",
            b"cf",
            b"q",
            compare_op::GREATER,
            Some(b"1"),
            mutations.clone()
        )
        .unwrap());
    assert!(c
        .check_and_mutate(
            b"t",
            b"r",
            b"cf",
            b"q",
            compare_op::LESS,
            Some(b"1"),
            mutations
        )
        .unwrap());
    assert_eq!(
        cells(&c.get(b"t", get(b"r")).unwrap()),
        vec![("cf:z".into(), "new".into())]
    );

    let d = delete(b"r", vec![]);
    assert!(!c
        .check_and_delete(b"t", b"r", b"cf", b"z", Some(b"old"), d.clone())
        .unwrap());
    assert!(c
        .check_and_delete(b"t", b"r", b"cf", b"z", Some(b"new"), d)
        .unwrap());
    assert_eq!(c.get(b"t", get(b"r")).unwrap().row, None);
}

#[test]
fn increment_and_append_return_the_new_cells() {
    let server = TestServer::thrift2();
    let mut c = server.client2(false, basalt_thrift::Protocol::Compact);
    create(&mut c, "t", &["cf"]);
    let inc = |amount| TIncrement {
        row: b(b"r"),
        columns: Some(vec![TColumnIncrement {
            family: b(b"cf"),
            qualifier: b(b"n"),
            amount,
        }]),
        ..TIncrement::default()
    };
    // HBase's default amount is 1.
    let r = c.increment(b"t", inc(None)).unwrap();
    assert_eq!(value(&r).as_deref(), Some(&1i64.to_be_bytes()[..]));
    let r = c.increment(b"t", inc(Some(41))).unwrap();
    assert_eq!(value(&r).as_deref(), Some(&42i64.to_be_bytes()[..]));

    let app = TAppend {
        row: b(b"r"),
        columns: Some(vec![cell(b"cf", b"s", b"ab")]),
        ..TAppend::default()
    };
    c.append(b"t", app.clone()).unwrap();
    let r = c.append(b"t", app).unwrap();
    assert_eq!(value(&r).as_deref(), Some(&b"abab"[..]));
}

#[test]
fn put_multiple_and_mutate_row_apply_every_mutation() {
    let server = TestServer::thrift2();
    let mut c = server.client2(true, basalt_thrift::Protocol::Compact);
    create(&mut c, "t", &["cf"]);
    let puts = (0..20)
        .map(|i| put(format!("r{i:02}").as_bytes(), vec![cell(b"cf", b"q", b"v")]))
        .collect();
    c.put_multiple(b"t", puts).unwrap();
    assert_eq!(
        c.exists_all(b"t", vec![get(b"r00"), get(b"r19")]).unwrap(),
        vec![true, true]
    );
    c.mutate_row(
        b"t",
        TRowMutations {
            row: b(b"r00"),
            mutations: Some(vec![
                TMutation {
                    put: None,
                    delete_single: Some(delete(b"r00", vec![column(b"cf", None)])),
                },
                // A later timestamp than the delete's: in one call both
                // would take the same millisecond, and a family delete
                // hides puts at its own timestamp, as in HBase.
                TMutation {
                    put: Some({
                        let mut p = put(b"r00", vec![cell(b"cf", b"after", b"1")]);
                        p.timestamp = Some(i64::MAX / 2);
                        p
                    }),
                    delete_single: None,
                },
            ]),
        },
    )
    .unwrap();
    assert_eq!(
        cells(&c.get(b"t", get(b"r00")).unwrap()),
        vec![("cf:after".into(), "1".into())]
    );
}

/// A descriptor helper only these tests need: one family keeping
/// `versions` versions.
trait WithFamily {
    fn clone_with_family(&self, name: &str, versions: i32) -> Self;
}

impl WithFamily for basalt_thrift::thrift2::types::TTableDescriptor {
    fn clone_with_family(&self, name: &str, versions: i32) -> Self {
        let mut d = self.clone();
        let mut f = family(name);
        f.max_versions = Some(versions);
        d.columns.get_or_insert_with(Vec::new).push(f);
        d
    }
}
