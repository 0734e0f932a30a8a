//! Every resource that HBase serves as protobuf answers in
//! `application/x-protobuf` (and `application/protobuf`), and the bodies
//! it reads (cell sets, scanners, schemas, namespace properties) are read
//! from protobuf. Messages are built and read with the gateway's own codec,
//! field numbers spelled out here as HBase's clients use them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use basalt_rest::protobuf::{Reader, Value, Writer};
use common::Fixture;

const PB: &str = "application/x-protobuf";

/// Every field of a message, in order.
fn fields(body: &[u8]) -> Vec<(u32, Value<'_>)> {
    let mut reader = Reader::new(body);
    let mut out = Vec::new();
    while let Some(field) = reader.next_field().unwrap() {
        out.push(field);
    }
    out
}

fn strings(body: &[u8], number: u32) -> Vec<String> {
    fields(body)
        .into_iter()
        .filter(|(n, _)| *n == number)
        .map(|(_, v)| v.string("s").unwrap())
        .collect()
}

/// A row key and its (column, value) cells.
type Row<'a> = (&'a [u8], &'a [(&'a [u8], &'a [u8])]);

fn cell_set(rows: &[Row<'_>]) -> Vec<u8> {
    let mut set = Writer::new();
    for (key, cells) in rows {
        let mut row = Writer::new();
        row.bytes(1, key);
        for (column, value) in *cells {
            let mut cell = Writer::new();
            cell.bytes(2, column);
            cell.bytes(4, value);
            row.message(2, cell);
        }
        set.message(1, row);
    }
    set.finish()
}

/// (row, column, value) of every cell of a protobuf CellSet.
fn read_cell_set(body: &[u8]) -> Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for (_, row) in fields(body) {
        let row = fields(row.bytes("row").unwrap());
        let key = row
            .iter()
            .find(|(n, _)| *n == 1)
            .map(|(_, v)| v.bytes("key").unwrap().to_vec())
            .unwrap();
        for (_, cell) in row.iter().filter(|(n, _)| *n == 2) {
            let cell = fields(cell.bytes("cell").unwrap());
            let get = |n: u32| {
                cell.iter()
                    .find(|(f, _)| *f == n)
                    .map(|(_, v)| v.bytes("b").unwrap().to_vec())
                    .unwrap()
            };
            assert!(
                cell.iter().any(|(f, _)| *f == 3),
                "a cell carries its timestamp"
            );
            out.push((key.clone(), get(2), get(4)));
        }
    }
    out
}

#[test]
fn cells_are_written_and_read_as_protobuf_under_either_name() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let body = cell_set(&[
        (b"r1", &[(b"cf:a", b"1"), (b"cf:b", b"2")]),
        (b"r2", &[(b"cf:a", b"3")]),
    ]);
    assert_eq!(f.put("/t/fakerow", PB, &body).status, 200);
    for accept in [PB, "application/protobuf"] {
        let reply = f.get("/t/r1", accept);
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("Content-Type"), Some(PB));
        assert_eq!(
            read_cell_set(&reply.body),
            vec![
                (b"r1".to_vec(), b"cf:a".to_vec(), b"1".to_vec()),
                (b"r1".to_vec(), b"cf:b".to_vec(), b"2".to_vec())
            ]
        );
    }
    let both = f.get("/t/multiget?row=r1&row=r2", PB);
    assert_eq!(read_cell_set(&both.body).len(), 3);
    let bad = f.put("/t/fakerow", "application/protobuf", &[0x0a, 0x09, 0x0a]);
    assert_eq!(bad.status, 400);
    assert!(bad.text().contains("protobuf CellSet"), "{}", bad.text());
}

#[test]
fn a_protobuf_scanner_reads_its_rows_columns_and_filter() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let body = cell_set(&[
        (b"a1", &[(b"cf:x", b"1"), (b"cf:y", b"2")]),
        (b"a2", &[(b"cf:x", b"3")]),
        (b"b1", &[(b"cf:x", b"4")]),
    ]);
    assert_eq!(f.put("/t/fakerow", PB, &body).status, 200);
    let mut scanner = Writer::new();
    scanner.bytes(1, b"a");
    scanner.bytes(2, b"z");
    scanner.bytes(3, b"cf:x");
    scanner.int(4, 10);
    scanner.string(8, r#"{"type":"PrefixFilter","value":"YQ=="}"#);
    let created = f.put("/t/scanner", PB, &scanner.finish());
    assert_eq!(created.status, 201, "{}", created.text());
    let location = created.header("Location").unwrap();
    let path = &location[location.find("/t/").unwrap()..];
    let batch = f.get(path, PB);
    assert_eq!(batch.status, 200);
    let cells = read_cell_set(&batch.body);
    let rows: Vec<&[u8]> = cells.iter().map(|c| c.0.as_slice()).collect();
    assert_eq!(rows, [b"a1".as_slice(), b"a2"]);
    assert!(cells.iter().all(|c| c.1 == b"cf:x"));
    assert_eq!(f.get(path, PB).status, 204);
}

#[test]
fn table_lists_schemas_regions_and_versions_answer_in_protobuf() {
    let f = Fixture::new();
    // A schema written as protobuf: a family with an attribute and the
    // maxVersions shortcut.
    let mut column = Writer::new();
    column.string(1, "cf");
    let mut attr = Writer::new();
    attr.string(1, "BLOCKSIZE");
    attr.string(2, "65537");
    column.message(2, attr);
    column.int(4, 3);
    let mut schema = Writer::new();
    schema.string(1, "t");
    schema.message(3, column);
    let created = f.put("/t/schema", PB, &schema.finish());
    assert_eq!(created.status, 201, "{}", created.text());

    assert_eq!(strings(&f.get("/", PB).body, 1), ["t"]);

    let schema = f.get("/t/schema", PB);
    assert_eq!(schema.status, 200);
    let top = fields(&schema.body);
    assert_eq!(top[0].1.string("name").unwrap(), "t");
    let column = top
        .iter()
        .find(|(n, _)| *n == 3)
        .unwrap()
        .1
        .bytes("c")
        .unwrap();
    let column = fields(column);
    assert_eq!(column[0].1.string("name").unwrap(), "cf");
    let versions = column
        .iter()
        .find(|(n, _)| *n == 4)
        .unwrap()
        .1
        .int("v")
        .unwrap();
    assert_eq!(versions, 3);
    let attrs: Vec<Vec<String>> = column
        .iter()
        .filter(|(n, _)| *n == 2)
        .map(|(_, a)| {
            strings(a.bytes("a").unwrap(), 1)
                .into_iter()
                .chain(strings(a.bytes("a").unwrap(), 2))
                .collect()
        })
        .collect();
    assert!(
        attrs.contains(&vec!["BLOCKSIZE".to_string(), "65537".to_string()]),
        "{attrs:?}"
    );

    let regions = f.get("/t/regions", PB);
    let top = fields(&regions.body);
    assert_eq!(top[0].1.string("name").unwrap(), "t");
    let region = fields(top[1].1.bytes("region").unwrap());
    assert!(region[0].1.string("name").unwrap().starts_with("t,"));
    assert_eq!(region[4].1.string("location").unwrap(), f.addr.to_string());

    let version = f.get("/version", PB);
    assert_eq!(strings(&version.body, 1), [basalt_rest::REST_VERSION]);
    // HBase has no protobuf form of the cluster version.
    assert_eq!(f.get("/version/cluster", PB).status, 406);
}

#[test]
fn the_cluster_status_and_namespaces_answer_in_protobuf() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let status = f.get("/status/cluster", PB);
    assert_eq!(status.status, 200);
    let top = fields(&status.body);
    let node = fields(
        top.iter()
            .find(|(n, _)| *n == 1)
            .unwrap()
            .1
            .bytes("node")
            .unwrap(),
    );
    assert_eq!(node[0].1.string("name").unwrap(), f.addr.to_string());
    assert_eq!(node.iter().filter(|(n, _)| *n == 6).count(), 1);
    assert_eq!(
        top.iter()
            .find(|(n, _)| *n == 3)
            .unwrap()
            .1
            .int("regions")
            .unwrap(),
        1
    );
    assert!(matches!(
        top.iter().find(|(n, _)| *n == 5).unwrap().1,
        Value::Fixed64(_)
    ));

    let mut props = Writer::new();
    let mut p = Writer::new();
    p.string(1, "owner");
    p.string(2, "ops");
    props.message(1, p);
    assert_eq!(f.post("/namespaces/ns", PB, &props.finish()).status, 201);
    assert_eq!(
        strings(&f.get("/namespaces", PB).body, 1),
        ["default", "hbase", "ns"]
    );
    let described = f.get("/namespaces/ns", "application/protobuf");
    let prop = fields(&described.body);
    assert_eq!(strings(prop[0].1.bytes("p").unwrap(), 1), ["owner"]);
    assert_eq!(strings(prop[0].1.bytes("p").unwrap(), 2), ["ops"]);
    assert!(strings(&f.get("/namespaces/default/tables", PB).body, 1).contains(&"t".to_string()));
}
