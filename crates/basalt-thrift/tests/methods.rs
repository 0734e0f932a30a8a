//! Every method of the Thrift1 service, over every transport and protocol,
//! with HBase's semantics; then the error cases.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use bytes::Bytes;

use basalt_thrift::client::{delete, family, put};
use basalt_thrift::types::{
    BatchMutation, ColumnDescriptor, TAppend, TCell, TIncrement, TRowResult, TScan,
};
use basalt_thrift::{Client, ClientError};

use common::{TestServer, WIRES};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn values(cells: &[TCell]) -> Vec<(Vec<u8>, i64)> {
    cells
        .iter()
        .map(|c| (c.value.clone().unwrap().to_vec(), c.timestamp.unwrap()))
        .collect()
}

/// `column -> value` of a row result.
fn columns(row: &TRowResult) -> BTreeMap<String, String> {
    row.columns
        .as_ref()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                String::from_utf8(k.to_vec()).unwrap(),
                String::from_utf8(v.value.clone().unwrap().to_vec()).unwrap(),
            )
        })
        .collect()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn row_keys(rows: &[TRowResult]) -> Vec<String> {
    rows.iter()
        .map(|r| String::from_utf8(r.row.clone().unwrap().to_vec()).unwrap())
        .collect()
}

fn is_io(r: Result<impl std::fmt::Debug, ClientError>, needle: &str) {
    match r {
        Err(ClientError::Io(m)) => assert!(m.contains(needle), "IOError {m:?} lacks {needle:?}"),
        other => panic!("expected IOError containing {needle:?}, got {other:?}"),
    }
}

fn is_ia(r: Result<impl std::fmt::Debug, ClientError>) {
    assert!(
        matches!(r, Err(ClientError::IllegalArgument(_))),
        "expected IllegalArgument, got {r:?}"
    );
}

fn administration(c: &mut Client, t: &[u8], port: u16) {
    let cf2 = ColumnDescriptor {
        max_versions: Some(1),
        ..family("cf2")
    };
    c.create_table(t, vec![family("cf1"), cf2]).unwrap();
    assert!(matches!(
        c.create_table(t, vec![family("cf1")]),
        Err(ClientError::AlreadyExists(_))
    ));
    assert!(c
        .get_table_names()
        .unwrap()
        .contains(&Bytes::copy_from_slice(t)));
    assert_eq!(
        c.get_table_names_with_is_table_enabled().unwrap().get(t),
        Some(&true)
    );

    assert!(c.is_table_enabled(t).unwrap());
    c.disable_table(t).unwrap();
    assert!(!c.is_table_enabled(t).unwrap());
    is_io(c.disable_table(t), "TableNotEnabledException");
    is_io(c.get_row(t, b"x"), "TableNotEnabledException");
    c.enable_table(t).unwrap();
    is_io(c.enable_table(t), "TableNotDisabledException");
    assert!(c.is_table_enabled(t).unwrap());

    let families = c.get_column_descriptors(t).unwrap();
    let names: Vec<&[u8]> = families.keys().map(|k| &k[..]).collect();
    assert_eq!(names, vec![&b"cf1:"[..], &b"cf2:"[..]]);
    let cf1 = &families[&b("cf1:")];
    assert_eq!(cf1.name.as_deref(), Some(&b"cf1:"[..]));
    assert_eq!(cf1.max_versions, Some(3));
    assert_eq!(cf1.time_to_live, Some(i32::MAX));
    assert_eq!(cf1.compression.as_deref(), Some("NONE"));
    assert_eq!(families[&b("cf2:")].max_versions, Some(1));

    let regions = c.get_table_regions(t).unwrap();
    assert_eq!(regions.len(), 1);
    let region = &regions[0];
    assert_eq!(region.start_key.as_deref(), Some(&b""[..]));
    assert_eq!(region.end_key.as_deref(), Some(&b""[..]));
    assert_eq!(region.port, Some(i32::from(port)));
    let name = region.name.clone().unwrap();
    let mut prefix = t.to_vec();
    prefix.extend_from_slice(b",,");
    assert!(
        name.starts_with(&prefix) && name.ends_with(b"."),
        "{name:?}"
    );

    let mut meta_row = t.to_vec();
    meta_row.extend_from_slice(b",some-row,99999999999999");
    assert_eq!(&c.get_region_info(&meta_row).unwrap(), region);

    c.compact(t).unwrap();
    c.major_compact(t).unwrap();
    c.compact(&name).unwrap();
    c.major_compact(&name).unwrap();
    let mut unknown = t.to_vec();
    unknown.extend_from_slice(b",,1.00000000000000000000000000000000.");
    let err = c.compact(&unknown).unwrap_err().to_string();
    assert!(err.contains("unknown region"), "{err}");
}

fn reads_and_writes(c: &mut Client, t: &[u8]) {
    c.mutate_row_ts(t, b"r1", vec![put(b"cf1:a", b"v1")], 100)
        .unwrap();
    c.mutate_row_ts(t, b"r1", vec![put(b"cf1:a", b"v2")], 200)
        .unwrap();
    c.mutate_row(t, b"r1", vec![put(b"cf1:b", b"x"), put(b"cf2:c", b"y")])
        .unwrap();

    // get / getVer / getVerTs: `family:qualifier` or a whole family.
    assert_eq!(
        values(&c.get(t, b"r1", b"cf1:a").unwrap()),
        vec![(b"v2".to_vec(), 200)]
    );
    let family_cells = c.get(t, b"r1", b"cf1").unwrap();
    assert_eq!(family_cells.len(), 2, "{family_cells:?}");
    assert_eq!(
        values(&c.get_ver(t, b"r1", b"cf1:a", 5).unwrap()),
        vec![(b"v2".to_vec(), 200), (b"v1".to_vec(), 100)]
    );
    // Half-open: [0, 200) excludes the version at 200.
    assert_eq!(
        values(&c.get_ver_ts(t, b"r1", b"cf1:a", 200, 5).unwrap()),
        vec![(b"v1".to_vec(), 100)]
    );
    assert_eq!(
        values(&c.get_ver_ts(t, b"r1", b"cf1:a", 201, 1).unwrap()),
        vec![(b"v2".to_vec(), 200)]
    );
    assert!(c.get(t, b"missing", b"cf1:a").unwrap().is_empty());

    // getRow*: rows without cells are left out.
    let row = c.get_row(t, b"r1").unwrap();
    assert_eq!(row.len(), 1);
    assert_eq!(row[0].row.as_deref(), Some(&b"r1"[..]));
    assert_eq!(
        columns(&row[0]),
        map(&[("cf1:a", "v2"), ("cf1:b", "x"), ("cf2:c", "y")])
    );
    assert!(c.get_row(t, b"missing").unwrap().is_empty());
    let row = c
        .get_row_with_columns(t, b"r1", &[b"cf1:a", b"cf2"])
        .unwrap();
    assert_eq!(columns(&row[0]), map(&[("cf1:a", "v2"), ("cf2:c", "y")]));
    let row = c.get_row_ts(t, b"r1", 200).unwrap();
    assert_eq!(columns(&row[0]), map(&[("cf1:a", "v1")]));
    let row = c.get_row_with_columns_ts(t, b"r1", &[b"cf1"], 201).unwrap();
    assert_eq!(columns(&row[0]), map(&[("cf1:a", "v2")]));
    assert!(c.get_row_ts(t, b"r1", 100).unwrap().is_empty());

    // mutateRows / mutateRowsTs.
    c.mutate_rows(
        t,
        vec![
            BatchMutation {
                row: Some(b("r2")),
                mutations: Some(vec![put(b"cf1:a", b"two"), put(b"cf1:", b"empty-q")]),
            },
            BatchMutation {
                row: Some(b("r3")),
                mutations: Some(vec![put(b"cf1:a", b"three")]),
            },
        ],
    )
    .unwrap();
    c.mutate_rows_ts(
        t,
        vec![BatchMutation {
            row: Some(b("r3")),
            mutations: Some(vec![put(b"cf1:old", b"fifty")]),
        }],
        50,
    )
    .unwrap();
    let rows = c.get_rows(t, &[b"r1", b"missing", b"r2"]).unwrap();
    assert_eq!(row_keys(&rows), vec!["r1", "r2"]);
    assert_eq!(
        columns(&rows[1]),
        map(&[("cf1:", "empty-q"), ("cf1:a", "two")])
    );
    let rows = c
        .get_rows_with_columns(t, &[b"r2", b"r3"], &[b"cf1:a"])
        .unwrap();
    assert_eq!(columns(&rows[1]), map(&[("cf1:a", "three")]));
    let rows = c.get_rows_ts(t, &[b"r2", b"r3"], 51).unwrap();
    assert_eq!(row_keys(&rows), vec!["r3"]);
    assert_eq!(columns(&rows[0]), map(&[("cf1:old", "fifty")]));
    let rows = c
        .get_rows_with_columns_ts(t, &[b"r1", b"r3"], &[b"cf1:a"], 150)
        .unwrap();
    assert_eq!(row_keys(&rows), vec!["r1"]);
    assert_eq!(columns(&rows[0]), map(&[("cf1:a", "v1")]));

    // A mutateRow delete of a family and a put in one call.
    c.mutate_row(t, b"r2", vec![delete(b"cf1:"), put(b"cf2:new", b"n")])
        .unwrap();
    assert_eq!(
        columns(&c.get_row(t, b"r2").unwrap()[0]),
        map(&[("cf1:a", "two"), ("cf2:new", "n")])
    );

    // Counters.
    assert_eq!(c.atomic_increment(t, b"cnt", b"cf1:n", 5).unwrap(), 5);
    assert_eq!(c.atomic_increment(t, b"cnt", b"cf1:n", -2).unwrap(), 3);
    c.mutate_row(t, b"cnt", vec![put(b"cf1:n", &0i64.to_be_bytes())])
        .unwrap();
    assert_eq!(c.atomic_increment(t, b"cnt", b"cf1:n", 1).unwrap(), 1);
    let inc = |row: &str, amount| TIncrement {
        table: Some(Bytes::copy_from_slice(t)),
        row: Some(b(row)),
        column: Some(b("cf1:n")),
        ammount: Some(amount),
    };
    c.increment(inc("cnt", 10)).unwrap();
    c.increment_rows(vec![inc("cnt", 100), inc("cnt2", 7)])
        .unwrap();
    assert_eq!(c.atomic_increment(t, b"cnt", b"cf1:n", 0).unwrap(), 111);
    assert_eq!(c.atomic_increment(t, b"cnt2", b"cf1:n", 0).unwrap(), 7);

    // append.
    let appended = c
        .append(TAppend {
            table: Some(Bytes::copy_from_slice(t)),
            row: Some(b("r1")),
            columns: Some(vec![b("cf1:b"), b("cf1:fresh")]),
            values: Some(vec![b("-more"), b("new")]),
        })
        .unwrap();
    let mut got: Vec<Vec<u8>> = values(&appended).into_iter().map(|(v, _)| v).collect();
    got.sort();
    assert_eq!(got, vec![b"new".to_vec(), b"x-more".to_vec()]);

    // checkAndPut: absent, equal, different.
    assert!(c
        .check_and_put(t, b"cap", b"cf1:q", None, put(b"cf1:q", b"first"))
        .unwrap());
    assert!(!c
        .check_and_put(t, b"cap", b"cf1:q", None, put(b"cf1:q", b"again"))
        .unwrap());
    assert!(c
        .check_and_put(
            t,
            b"cap",
            b"cf1:q",
            Some(b"first"),
            put(b"cf1:q", b"second")
        )
        .unwrap());
    assert!(!c
        .check_and_put(t, b"cap", b"cf1:q", Some(b"first"), put(b"cf1:q", b"third"))
        .unwrap());
    assert_eq!(values(&c.get(t, b"cap", b"cf1:q").unwrap())[0].0, b"second");

    // Deletes: deleteAllTs removes versions <= ts (inclusive, unlike reads).
    c.delete_all_ts(t, b"r1", b"cf1:a", 100).unwrap();
    assert_eq!(
        values(&c.get_ver(t, b"r1", b"cf1:a", 5).unwrap()),
        vec![(b"v2".to_vec(), 200)]
    );
    c.delete_all(t, b"r1", b"cf1:b").unwrap();
    assert!(c.get(t, b"r1", b"cf1:b").unwrap().is_empty());
    c.delete_all(t, b"r1", b"cf2").unwrap();
    assert!(c.get(t, b"r1", b"cf2:c").unwrap().is_empty());
    c.delete_all_row_ts(t, b"r3", 50).unwrap();
    assert_eq!(
        columns(&c.get_row(t, b"r3").unwrap()[0]),
        map(&[("cf1:a", "three")])
    );
    c.delete_all_row(t, b"r3").unwrap();
    assert!(c.get_row(t, b"r3").unwrap().is_empty());
}

fn scanners(c: &mut Client, t: &[u8]) {
    let batches = (0..20)
        .map(|i| BatchMutation {
            row: Some(b(&format!("s{i:02}"))),
            mutations: Some(vec![put(b"cf1:a", b"A"), put(b"cf2:z", b"Z")]),
        })
        .collect();
    c.mutate_rows_ts(t, batches, 1000).unwrap();
    c.mutate_row_ts(t, b"s05", vec![put(b"cf1:a", b"newer")], 2000)
        .unwrap();

    let id = c.scanner_open(t, b"s15", &[]).unwrap();
    let first = c.scanner_get(id).unwrap();
    assert_eq!(row_keys(&first), vec!["s15"]);
    let rest = c.scanner_get_list(id, 100).unwrap();
    assert_eq!(row_keys(&rest), vec!["s16", "s17", "s18", "s19"]);
    // Exhausted: empty lists, until closed.
    assert!(c.scanner_get_list(id, 10).unwrap().is_empty());
    assert!(c.scanner_get(id).unwrap().is_empty());
    c.scanner_close(id).unwrap();
    is_ia(c.scanner_get(id));
    is_ia(c.scanner_close(id));

    let id = c
        .scanner_open_with_stop(t, b"s03", b"s06", &[b"cf2"])
        .unwrap();
    let rows = c.scan_all(id, 2).unwrap();
    assert_eq!(row_keys(&rows), vec!["s03", "s04", "s05"]);
    assert_eq!(columns(&rows[0]), map(&[("cf2:z", "Z")]));

    let id = c.scanner_open_with_prefix(t, b"s1", &[b"cf1:a"]).unwrap();
    let rows = c.scan_all(id, 3).unwrap();
    assert_eq!(rows.len(), 10);
    assert_eq!(columns(&rows[0]), map(&[("cf1:a", "A")]));

    // *Ts scanners read [0, ts).
    let id = c.scanner_open_ts(t, b"s04", &[b"cf1"], 2000).unwrap();
    let rows = c.scan_all(id, 100).unwrap();
    assert_eq!(rows.len(), 16);
    assert_eq!(
        columns(&rows[1]),
        map(&[("cf1:a", "A")]),
        "s05 at 2000 is excluded"
    );
    let id = c
        .scanner_open_with_stop_ts(t, b"s00", b"s99", &[], 1000)
        .unwrap();
    assert!(c.scan_all(id, 100).unwrap().is_empty());

    // scannerOpenWithScan: every TScan field.
    let scan = TScan {
        start_row: Some(b("s02")),
        stop_row: Some(b("s10")),
        timestamp: Some(2001),
        columns: Some(vec![b("cf1:a"), b("cf2")]),
        caching: Some(5),
        filter_string: Some(b("ValueFilter(=, 'binary:newer')")),
        batch_size: None,
        sort_columns: Some(false),
        reversed: Some(false),
        cache_blocks: Some(true),
    };
    let id = c.scanner_open_with_scan(t, scan).unwrap();
    let rows = c.scan_all(id, 10).unwrap();
    assert_eq!(row_keys(&rows), vec!["s05"]);
    assert_eq!(columns(&rows[0]), map(&[("cf1:a", "newer")]));

    let scan = TScan {
        start_row: Some(b("s03")),
        stop_row: Some(b("s00")),
        reversed: Some(true),
        sort_columns: Some(true),
        ..TScan::default()
    };
    let id = c.scanner_open_with_scan(t, scan).unwrap();
    let rows = c.scan_all(id, 10).unwrap();
    assert_eq!(row_keys(&rows), vec!["s03", "s02", "s01"]);
    assert!(rows[0].columns.is_none());
    let sorted: Vec<Bytes> = rows[0]
        .sorted_columns
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| c.column_name.clone().unwrap())
        .collect();
    assert_eq!(sorted, vec![b("cf1:a"), b("cf2:z")]);

    // batchSize splits a row into results of at most that many cells.
    let scan = TScan {
        start_row: Some(b("s07")),
        stop_row: Some(b("s09")),
        batch_size: Some(1),
        ..TScan::default()
    };
    let id = c.scanner_open_with_scan(t, scan).unwrap();
    let rows = c.scan_all(id, 10).unwrap();
    assert_eq!(row_keys(&rows), vec!["s07", "s07", "s08", "s08"]);

    // getRowOrBefore: the row itself, or the closest one before it.
    let cells = c.get_row_or_before(t, b"s05", b"cf1").unwrap();
    assert_eq!(values(&cells), vec![(b"newer".to_vec(), 2000)]);
    let cells = c.get_row_or_before(t, b"s055", b"cf2:").unwrap();
    assert_eq!(values(&cells), vec![(b"Z".to_vec(), 1000)]);
    assert!(c.get_row_or_before(t, b"a", b"cf1").unwrap().is_empty());
}

fn server_info_and_drop(c: &mut Client, t: &[u8]) {
    assert_eq!(c.get_thrift_server_type().unwrap(), 1);
    assert!(!c.get_cluster_id().unwrap().is_empty());
    is_io(c.delete_table(t), "TableNotDisabledException");
    c.disable_table(t).unwrap();
    c.delete_table(t).unwrap();
    is_io(c.delete_table(t), "table does not exist");
    assert!(!c
        .get_table_names()
        .unwrap()
        .contains(&Bytes::copy_from_slice(t)));
    assert!(c.get_table_regions(t).unwrap().is_empty());
}

#[test]
fn every_method_over_every_transport_and_protocol() {
    let server = TestServer::start();
    let port = server.addr().port();
    for (i, (framed, protocol)) in WIRES.iter().enumerate() {
        let mut c = server.client(*framed, *protocol);
        let table = format!("t{i}");
        let t = table.as_bytes();
        administration(&mut c, t, port);
        reads_and_writes(&mut c, t);
        scanners(&mut c, t);
        server_info_and_drop(&mut c, t);
    }
}

#[test]
fn errors_are_hbase_exceptions() {
    let server = TestServer::start();
    let mut c = server.default_client();
    c.create_table(b"t", vec![family("cf")]).unwrap();

    // Unknown tables and families: IOError with HBase's exception names.
    is_io(c.get_row(b"nope", b"r"), "TableNotFoundException: nope");
    is_io(c.get(b"nope", b"r", b"cf:q"), "TableNotFoundException");
    is_io(
        c.mutate_row(b"nope", b"r", vec![put(b"cf:q", b"v")]),
        "TableNotFoundException",
    );
    is_io(c.scanner_open(b"nope", b"", &[]), "TableNotFoundException");
    is_io(c.get_column_descriptors(b"nope"), "TableNotFoundException");
    is_io(c.is_table_enabled(b"nope"), "TableNotFoundException");
    is_io(c.enable_table(b"nope"), "TableNotFoundException");
    is_io(
        c.mutate_row(b"t", b"r", vec![put(b"zz:q", b"v")]),
        "NoSuchColumnFamilyException: Column family zz does not exist",
    );
    is_io(c.get(b"t", b"r", b"zz:q"), "NoSuchColumnFamilyException");
    is_io(
        c.atomic_increment(b"t", b"r", b"zz:q", 1),
        "NoSuchColumnFamilyException",
    );
    is_io(c.delete_table(b"nope"), "table does not exist");

    // createTable: IllegalArgument for bad input.
    is_ia(c.create_table(b"t2", vec![]));
    is_ia(c.create_table(b"bad name", vec![family("cf")]));
    is_ia(c.create_table(
        b"t2",
        vec![ColumnDescriptor {
            compression: Some("BROTLI".into()),
            ..family("cf")
        }],
    ));
    is_ia(c.create_table(
        b"t2",
        vec![ColumnDescriptor {
            max_versions: Some(0),
            ..family("cf")
        }],
    ));
    is_ia(c.create_table(
        b"t2",
        vec![ColumnDescriptor {
            name: Some(b("")),
            ..family("cf")
        }],
    ));
    assert!(!c.get_table_names().unwrap().contains(&b("t2")));

    // Mutations: IllegalArgument where HBase raises it.
    is_ia(c.mutate_row(b"t", b"", vec![put(b"cf:q", b"v")]));
    is_ia(c.mutate_rows(
        b"t",
        vec![BatchMutation {
            row: Some(b("r")),
            mutations: Some(vec![put(b"cf", b"no qualifier")]),
        }],
    ));
    // mutateRow skips a put without a qualifier (with a warning).
    c.mutate_row(b"t", b"r", vec![put(b"cf", b"skipped")])
        .unwrap();
    assert!(c.get_row(b"t", b"r").unwrap().is_empty());
    is_ia(c.check_and_put(b"t", b"r", b"cf:q", None, put(b"cf", b"v")));

    // A counter that is not 8 bytes.
    c.mutate_row(b"t", b"r", vec![put(b"cf:s", b"abc")])
        .unwrap();
    is_io(
        c.atomic_increment(b"t", b"r", b"cf:s", 1),
        "Field is not a long",
    );

    // Bad filters, bad versions, bad append, bad increment, bad region row.
    let scan = TScan {
        filter_string: Some(b("NoSuchFilter('x')")),
        ..TScan::default()
    };
    is_io(
        c.scanner_open_with_scan(b"t", scan),
        "IllegalArgumentException",
    );
    is_io(c.get_ver(b"t", b"r", b"cf:s", 0), "numVersions");
    is_io(
        c.append(TAppend {
            table: Some(b("t")),
            row: Some(b("r")),
            columns: Some(vec![b("cf:a"), b("cf:b")]),
            values: Some(vec![b("only one")]),
        }),
        "2 columns but 1 values",
    );
    is_io(
        c.increment(TIncrement {
            table: Some(b("")),
            row: Some(b("r")),
            column: Some(b("cf:n")),
            ammount: Some(1),
        }),
        "Must supply a table and a row key",
    );
    is_io(
        c.get_region_info(b"no-commas"),
        "Cannot find row in hbase:meta",
    );
    is_io(
        c.get_region_info(b"nope,r,1"),
        "Cannot find row in hbase:meta",
    );

    // Scanner ids.
    is_ia(c.scanner_get(12345));
    is_ia(c.scanner_get_list(12345, 10));
    is_ia(c.scanner_close(12345));

    // Reads of a disabled table.
    c.disable_table(b"t").unwrap();
    is_io(c.get(b"t", b"r", b"cf:s"), "TableNotEnabledException");
    is_io(c.scanner_open(b"t", b"", &[]), "TableNotEnabledException");
    // The connection is still fine after all of that.
    assert!(!c.is_table_enabled(b"t").unwrap());
}
