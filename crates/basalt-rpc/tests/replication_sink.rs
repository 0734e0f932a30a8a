//! `AdminService.ReplicateWALEntry` over a socket, as HBase's replication
//! source sends it: WAL entries in the message, their cells in the call's
//! cell block. Cells land with their own timestamps and types, a batch
//! sent again changes nothing, failures name what failed and leave the
//! connection serving.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use basalt::{ColumnFamilyDescriptor, Database, Get, NamespaceDescriptor, Scan, TableDescriptor};
use basalt_rpc::client::RpcClient;
use basalt_rpc::proto::wal::{
    BulkLoadDescriptor, ReplicateWalEntryRequest, ReplicateWalEntryResponse, StoreDescriptor,
    WalEntry, WalKey,
};
use basalt_rpc::RpcError;
use basalt_types::{Cell, CellType};
use prost::Message;

mod common;
use common::{start_serving, Fixture};

const TABLE_NOT_FOUND: &str = "org.apache.hadoop.hbase.TableNotFoundException";
const NO_SUCH_FAMILY: &str = "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException";
const DO_NOT_RETRY: &str = "org.apache.hadoop.hbase.DoNotRetryIOException";

fn prepare(db: &Database) {
    let families = |name: &str| {
        TableDescriptor::new(name)
            .family(ColumnFamilyDescriptor::new("f").max_versions(10))
            .family(ColumnFamilyDescriptor::new("g").max_versions(10))
    };
    db.create_table_with_splits(families("t"), &["m".into()])
        .unwrap();
    db.create_table(families("other")).unwrap();
    db.create_namespace(NamespaceDescriptor::new("ns")).unwrap();
    db.create_table(families("ns:t")).unwrap();
}

fn admin(f: &Fixture) -> RpcClient {
    RpcClient::connect(f.server.region_server_addr(), "AdminService", true).unwrap()
}

fn cell(row: &str, family: &str, qualifier: &str, ts: i64, t: CellType, value: &str) -> Cell {
    let mut c = Cell::put(
        row.to_string(),
        family.to_string(),
        qualifier.to_string(),
        ts,
        value.to_string(),
    );
    c.cell_type = t;
    c
}

fn put(row: &str, q: &str, ts: i64, value: &str) -> Cell {
    cell(row, "f", q, ts, CellType::Put, value)
}

/// One WAL entry of `table` written at `write_time`, counting `cells`.
fn entry(table: &str, write_time: u64, cells: usize) -> WalEntry {
    WalEntry {
        key: Some(WalKey {
            encoded_region_name: Some(b"0123456789abcdef0123456789abcdef".to_vec()),
            table_name: Some(table.as_bytes().to_vec()),
            log_sequence_number: Some(7),
            write_time: Some(write_time),
            ..Default::default()
        }),
        key_value_bytes: Vec::new(),
        associated_cell_count: Some(cells as i32),
    }
}

/// A request of entries, each `(table, cells)`, and the cell block.
fn request(entries: &[(&str, Vec<Cell>)]) -> (ReplicateWalEntryRequest, Vec<Cell>) {
    let now = now_millis();
    let mut block = Vec::new();
    let mut out = ReplicateWalEntryRequest {
        replication_cluster_id: Some("source-cluster".into()),
        ..Default::default()
    };
    for (table, cells) in entries {
        out.entry.push(entry(table, now - 1000, cells.len()));
        block.extend(cells.iter().cloned());
    }
    (out, block)
}

fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn replicate(client: &mut RpcClient, entries: &[(&str, Vec<Cell>)]) -> Result<(), RpcError> {
    let (req, cells) = request(entries);
    let answer = client.call("ReplicateWALEntry", &req, &cells)?;
    answer.decode::<ReplicateWalEntryResponse>()?;
    Ok(())
}

/// Every cell of `table`, all versions, delete markers included.
fn raw(db: &Database, table: &str) -> Vec<(String, String, String, i64, CellType, String)> {
    let t = db.table(table).unwrap();
    let mut out = Vec::new();
    for row in t.scan(&Scan::new().raw(true).max_versions(100)).unwrap() {
        for c in row.unwrap().cells {
            out.push(describe(&c));
        }
    }
    out
}

/// Every visible cell of `table`, all versions.
fn visible(db: &Database, table: &str) -> Vec<(String, String, String, i64, CellType, String)> {
    let t = db.table(table).unwrap();
    let mut out = Vec::new();
    for row in t.scan(&Scan::new().max_versions(100)).unwrap() {
        for c in row.unwrap().cells {
            out.push(describe(&c));
        }
    }
    out
}

fn describe(c: &Cell) -> (String, String, String, i64, CellType, String) {
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        s(&c.row),
        s(&c.family),
        s(&c.qualifier),
        c.timestamp,
        c.cell_type,
        s(&c.value),
    )
}

/// A mixed batch: puts on both sides of the split, then each kind of
/// delete, each with its own timestamp.
fn mixed() -> Vec<(&'static str, Vec<Cell>)> {
    vec![
        (
            "t",
            vec![
                put("a", "q1", 10, "a-10"),
                put("a", "q1", 20, "a-20"),
                put("a", "q2", 10, "a2-10"),
                cell("a", "g", "x", 10, CellType::Put, "ag-10"),
                cell("a", "g", "x", 11, CellType::Put, "ag-11"),
            ],
        ),
        (
            "t",
            vec![
                put("z", "q1", 10, "z-10"),
                put("z", "q1", 20, "z-20"),
                put("z", "q1", 30, "z-30"),
            ],
        ),
        // Delete the version at 20 of a:q1, every version <= 10 of a:q2.
        (
            "t",
            vec![
                cell("a", "f", "q1", 20, CellType::Delete, ""),
                cell("a", "f", "q2", 10, CellType::DeleteColumn, ""),
            ],
        ),
        // Family g of row a at exactly 11; family f of row z up to 20.
        (
            "t",
            vec![
                cell("a", "g", "", 11, CellType::DeleteFamilyVersion, ""),
                cell("z", "f", "", 20, CellType::DeleteFamily, ""),
            ],
        ),
    ]
}

#[test]
fn puts_and_every_kind_of_delete_land_with_their_timestamps() {
    let f = start_serving(prepare);
    let mut client = admin(&f);
    replicate(&mut client, &mixed()).unwrap();
    let s = |x: &str| x.to_string();
    assert_eq!(
        visible(&f.db, "t"),
        vec![
            (s("a"), s("f"), s("q1"), 10, CellType::Put, s("a-10")),
            (s("a"), s("g"), s("x"), 10, CellType::Put, s("ag-10")),
            (s("z"), s("f"), s("q1"), 30, CellType::Put, s("z-30")),
        ]
    );
    // The markers are there as HBase wrote them.
    let markers: Vec<_> = raw(&f.db, "t")
        .into_iter()
        .filter(|c| c.4 != CellType::Put)
        .collect();
    assert_eq!(
        markers,
        vec![
            (s("a"), s("f"), s("q1"), 20, CellType::Delete, s("")),
            (s("a"), s("f"), s("q2"), 10, CellType::DeleteColumn, s("")),
            (
                s("a"),
                s("g"),
                s(""),
                11,
                CellType::DeleteFamilyVersion,
                s("")
            ),
            (s("z"), s("f"), s(""), 20, CellType::DeleteFamily, s("")),
        ]
    );
    let m = f.server.context().replication_sink.snapshot();
    assert_eq!((m.batches, m.entries, m.cells), (1, 4, 12));
    assert_eq!(m.failed_batches, 0);
    assert!(m.last_write_time_ms > 0 && m.last_applied_at_ms >= m.last_write_time_ms);
    assert!(m.age_of_last_applied_ms >= 1000, "{m:?}");
}

#[test]
fn a_batch_sent_again_changes_nothing_visible() {
    let f = start_serving(prepare);
    let mut client = admin(&f);
    replicate(&mut client, &mixed()).unwrap();
    let visible_once = visible(&f.db, "t");
    let raw_once = raw(&f.db, "t");
    // The source resends after a lost answer; and again after a flush.
    replicate(&mut client, &mixed()).unwrap();
    assert_eq!(visible(&f.db, "t"), visible_once);
    assert_eq!(raw(&f.db, "t"), raw_once);
    f.db.flush_table("t").unwrap();
    replicate(&mut client, &mixed()).unwrap();
    assert_eq!(visible(&f.db, "t"), visible_once);
    assert_eq!(raw(&f.db, "t"), raw_once);
    f.db.compact_table("t", true).unwrap();
    assert_eq!(visible(&f.db, "t"), visible_once);
    assert_eq!(f.server.context().replication_sink.snapshot().batches, 3);
}

#[test]
fn the_logs_order_holds_within_a_row() {
    let f = start_serving(prepare);
    let mut client = admin(&f);
    // Two writes of one version: the later wins, in one entry and across
    // entries of one batch.
    replicate(
        &mut client,
        &[
            (
                "t",
                vec![put("r", "q", 5, "first"), put("r", "q", 5, "second")],
            ),
            ("t", vec![put("s", "q", 5, "first")]),
            ("t", vec![put("s", "q", 5, "second")]),
        ],
    )
    .unwrap();
    let value = |row: &str| {
        let got =
            f.db.table("t")
                .unwrap()
                .get(&Get::new(row.to_string()))
                .unwrap();
        String::from_utf8_lossy(&got.cells[0].value).into_owned()
    };
    assert_eq!(value("r"), "second");
    assert_eq!(value("s"), "second");
}

#[test]
fn namespaced_and_default_qualified_table_names_are_found() {
    let f = start_serving(prepare);
    let mut client = admin(&f);
    replicate(
        &mut client,
        &[
            ("ns:t", vec![put("r", "q", 1, "in ns")]),
            ("default:other", vec![put("r", "q", 1, "in default")]),
        ],
    )
    .unwrap();
    assert_eq!(visible(&f.db, "ns:t").len(), 1);
    assert_eq!(visible(&f.db, "other").len(), 1);
    assert!(visible(&f.db, "t").is_empty());
}

#[test]
fn an_unknown_table_or_family_fails_the_whole_batch_with_hbases_class() {
    let f = start_serving(prepare);
    let mut client = admin(&f);
    let error = replicate(
        &mut client,
        &[
            ("t", vec![put("r", "q", 1, "v")]),
            ("missing", vec![put("r", "q", 1, "v")]),
        ],
    )
    .unwrap_err();
    assert_eq!(error.class, TABLE_NOT_FOUND, "{error}");
    assert!(error.message.contains("missing"), "{error}");
    let error = replicate(
        &mut client,
        &[
            ("t", vec![put("r", "q", 1, "v")]),
            ("t", vec![cell("r", "nope", "q", 1, CellType::Put, "v")]),
        ],
    )
    .unwrap_err();
    assert_eq!(error.class, NO_SUCH_FAMILY, "{error}");
    assert!(error.message.contains("nope"), "{error}");
    // Nothing of either batch was applied, and both were counted failed.
    assert!(visible(&f.db, "t").is_empty());
    let m = f.server.context().replication_sink.snapshot();
    assert_eq!((m.batches, m.failed_batches), (0, 2));
    // Once the table exists, the source's next try lands.
    f.db.create_table(TableDescriptor::new("missing").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    replicate(
        &mut client,
        &[
            ("t", vec![put("r", "q", 1, "v")]),
            ("missing", vec![put("r", "q", 1, "v")]),
        ],
    )
    .unwrap();
    assert_eq!(visible(&f.db, "missing").len(), 1);
}

#[test]
fn wal_meta_cells_are_skipped_and_replicated_bulk_loads_refused() {
    let f = start_serving(prepare);
    let mut client = admin(&f);
    let marker = |qualifier: &str, value: Vec<u8>| {
        let mut c = cell("r", "METAFAMILY", qualifier, 1, CellType::Put, "");
        c.value = value.into();
        c
    };
    let bulk = |replicate: bool| {
        BulkLoadDescriptor {
            table_name: Some(basalt_rpc::meta::table_name_proto("t")),
            encoded_region_name: Some(b"abc".to_vec()),
            stores: vec![StoreDescriptor {
                family_name: Some(b"f".to_vec()),
                store_home_dir: Some("f".into()),
                store_file: vec!["file1".into(), "file2".into()],
            }],
            bulkload_seq_num: Some(3),
            cluster_ids: Vec::new(),
            replicate: Some(replicate),
        }
        .encode_to_vec()
    };
    replicate(
        &mut client,
        &[(
            "t",
            vec![
                marker("HBASE::REPLICATION_MARKER", b"x".to_vec()),
                put("r", "q", 1, "v"),
                marker("HBASE::BULK_LOAD", bulk(false)),
            ],
        )],
    )
    .unwrap();
    assert_eq!(visible(&f.db, "t").len(), 1);
    let m = f.server.context().replication_sink.snapshot();
    assert_eq!((m.cells, m.skipped_cells), (1, 2));
    let error = replicate(
        &mut client,
        &[("t", vec![marker("HBASE::BULK_LOAD", bulk(true))])],
    )
    .unwrap_err();
    assert_eq!(error.class, DO_NOT_RETRY);
    assert!(error.message.contains("bulk load"), "{error}");
    assert!(error.message.contains("2 HFiles"), "{error}");
    let error = replicate(
        &mut client,
        &[(
            "t",
            vec![marker("HBASE::BULK_LOAD", vec![0xff, 0xff, 0xff])],
        )],
    )
    .unwrap_err();
    assert!(error.message.contains("BulkLoadDescriptor"), "{error}");
}

#[test]
fn garbage_is_refused_naming_what_failed_and_the_connection_serves_on() {
    let f = start_serving(prepare);
    let mut client = admin(&f);
    let check =
        |client: &mut RpcClient, req: &ReplicateWalEntryRequest, cells: &[Cell], says: &str| {
            let error = client.call("ReplicateWALEntry", req, cells).unwrap_err();
            assert!(error.message.contains(says), "expected {says:?} in {error}");
        };
    // Not a ReplicateWALEntryRequest at all.
    let error = client
        .call(
            "ReplicateWALEntry",
            &basalt_rpc::proto::hbase::BytesBytesPair {
                first: vec![0xff; 3],
                second: vec![1],
            },
            &[],
        )
        .unwrap_err();
    assert!(
        error.message.contains("ReplicateWALEntryRequest"),
        "{error}"
    );
    // An entry counting more cells than the block has.
    let (mut req, cells) = request(&[("t", vec![put("r", "q", 1, "v")])]);
    req.entry[0].associated_cell_count = Some(2);
    check(&mut client, &req, &cells, "entry 0 of table t");
    // Cells no entry counts.
    req.entry[0].associated_cell_count = Some(0);
    check(
        &mut client,
        &req,
        &cells,
        "1 cells more than the entries count",
    );
    // A negative count.
    req.entry[0].associated_cell_count = Some(-1);
    check(&mut client, &req, &cells, "negative associated_cell_count");
    // No key; no table name.
    let (mut req, cells) = request(&[("t", vec![put("r", "q", 1, "v")])]);
    req.entry[0].key = None;
    check(&mut client, &req, &cells, "WALEntry.key of entry 0");
    let (mut req, cells) = request(&[("t", vec![put("r", "q", 1, "v")])]);
    if let Some(k) = req.entry[0].key.as_mut() {
        k.table_name = None;
    }
    check(&mut client, &req, &cells, "WALKey.table_name of entry 0");
    // Cells inside the message (HBase 1's key_value_bytes).
    let (mut req, cells) = request(&[("t", vec![put("r", "q", 1, "v")])]);
    req.entry[0].key_value_bytes = vec![vec![0, 0, 0, 1]];
    check(&mut client, &req, &cells, "key_value_bytes");
    // An empty row (HBase's rows are never empty).
    let (req, cells) = request(&[("t", vec![put("", "q", 1, "v")])]);
    let error = client.call("ReplicateWALEntry", &req, &cells).unwrap_err();
    assert!(error.message.contains("row"), "{error}");
    // A malformed cell block: a cell length overrunning the block.
    let (req, _) = request(&[("t", vec![put("r", "q", 1, "v")])]);
    let frame = basalt_rpc::frame::encode_request(99, "ReplicateWALEntry", &req, &[0, 0, 0, 50, 1]);
    client.send_raw(&frame).unwrap();
    let (header, _, _) = client.read_frame().unwrap();
    let exception = header.exception.expect("an exception");
    assert!(exception
        .stack_trace
        .unwrap_or_default()
        .contains("malformed cell block"),);
    // Nothing landed; the connection still serves a good batch.
    assert!(visible(&f.db, "t").is_empty());
    replicate(&mut client, &[("t", vec![put("r", "q", 1, "v")])]).unwrap();
    assert_eq!(visible(&f.db, "t").len(), 1);
}

#[test]
fn random_bytes_as_the_request_never_break_the_server() {
    use rand::{Rng, SeedableRng};
    let f = start_serving(prepare);
    let mut client = admin(&f);
    let mut rng = rand::rngs::StdRng::seed_from_u64(34);
    let (good, cells) = request(&mixed());
    let good = good.encode_to_vec();
    for _ in 0..300 {
        let mut bytes = good.clone();
        for _ in 0..rng.random_range(1..8) {
            let at = rng.random_range(0..bytes.len());
            bytes[at] = rng.random();
        }
        bytes.truncate(rng.random_range(0..=bytes.len()));
        let frame = raw_frame(&bytes, &cells);
        client.send_raw(&frame).unwrap();
        let _ = client.read_frame().unwrap();
    }
    // Still serving.
    replicate(&mut client, &[("other", vec![put("r", "q", 1, "v")])]).unwrap();
}

/// A call frame whose parameter is `param` as given (not re-encoded).
fn raw_frame(param: &[u8], cells: &[Cell]) -> Vec<u8> {
    let mut block = Vec::new();
    basalt_rpc::cellblock::encode(cells, &mut block);
    let header = basalt_rpc::proto::rpc::RequestHeader {
        call_id: Some(5),
        method_name: Some("ReplicateWALEntry".into()),
        request_param: Some(true),
        cell_block_meta: Some(basalt_rpc::proto::rpc::CellBlockMeta {
            length: Some(block.len() as u32),
        }),
        priority: None,
        timeout: None,
    };
    let mut body = Vec::new();
    header.encode_length_delimited(&mut body).unwrap();
    prost::encoding::encode_varint(param.len() as u64, &mut body);
    body.extend_from_slice(param);
    body.extend_from_slice(&block);
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

#[test]
fn a_per_cell_ttl_tag_comes_across() {
    let f = start_serving(prepare);
    let mut client = admin(&f);
    let now = now_millis() as i64;
    // Cells with HBase's TTL tag (type 8, 8-byte milliseconds): one that
    // expired long ago, one that lives a day.
    let mut block = Vec::new();
    for (row, ttl) in [("gone", 1_000i64), ("kept", 86_400_000)] {
        let mut one = Vec::new();
        basalt_rpc::cellblock::encode(&[put(row, "q", now - 60_000, "v")], &mut one);
        let mut tags = vec![0, 9, 8];
        tags.extend_from_slice(&ttl.to_be_bytes());
        let len = u32::from_be_bytes([one[0], one[1], one[2], one[3]]) + 2 + tags.len() as u32;
        one[..4].copy_from_slice(&len.to_be_bytes());
        one.extend_from_slice(&(tags.len() as u16).to_be_bytes());
        one.extend_from_slice(&tags);
        block.extend_from_slice(&one);
    }
    let (req, _) = request(&[(
        "t",
        vec![put("gone", "q", 1, "v"), put("kept", "q", 1, "v")],
    )]);
    let frame = basalt_rpc::frame::encode_request(7, "ReplicateWALEntry", &req, &block);
    client.send_raw(&frame).unwrap();
    let (header, _, _) = client.read_frame().unwrap();
    assert!(header.exception.is_none(), "{:?}", header.exception);
    let rows: Vec<String> = visible(&f.db, "t").into_iter().map(|c| c.0).collect();
    assert_eq!(rows, vec!["kept".to_string()]);
}

#[test]
fn a_disabled_table_is_not_enabled_and_the_source_retries() {
    let f = start_serving(prepare);
    let mut client = admin(&f);
    f.db.disable_table("other").unwrap();
    let error = replicate(&mut client, &[("other", vec![put("r", "q", 1, "v")])]).unwrap_err();
    assert_eq!(
        error.class, "org.apache.hadoop.hbase.TableNotEnabledException",
        "{error}"
    );
    f.db.enable_table("other").unwrap();
    replicate(&mut client, &[("other", vec![put("r", "q", 1, "v")])]).unwrap();
    assert_eq!(visible(&f.db, "other").len(), 1);
}
