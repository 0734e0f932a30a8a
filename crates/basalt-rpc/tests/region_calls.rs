//! Region calls between two servers: database A routes the rows from "m"
//! on to database B, which serves them over native RPC's
//! `BasaltRegionService`; A's `Table` must behave as if it held them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use basalt::{
    Append, CheckAndMutate, ColumnFamilyDescriptor, Comparator, CompareOp, Database, Delete,
    ErrorKind, Filter, Get, Increment, Mutation, Put, RegionAnswer, RegionCall, RegionCaller,
    RegionInfo, RegionRoute, RowMutations, Scan, ServerAddress, TableDescriptor, TableLocation,
};
use basalt_rpc::{RpcConfig, RpcRegionCaller, RpcServer};
use bytes::Bytes;

const TABLE: &str = "t";

/// One database served on loopback, its table split at "m".
struct Node {
    db: Database,
    server: Option<RpcServer>,
    address: ServerAddress,
    _dir: tempfile::TempDir,
}

fn node() -> Node {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    db.create_table_with_splits(
        TableDescriptor::new(TABLE).family(ColumnFamilyDescriptor::new("cf")),
        &[Bytes::from("m")],
    )
    .unwrap();
    let config = RpcConfig {
        master_port: 0,
        region_server_port: 0,
        ..RpcConfig::default()
    };
    let server = RpcServer::bind(&config)
        .unwrap()
        .serve(db.clone(), "cluster".into())
        .unwrap();
    let address = ServerAddress::from(server.region_server_addr());
    Node {
        db,
        server: Some(server),
        address,
        _dir: dir,
    }
}

impl Node {
    /// This node's region holding `row`.
    fn region_info(&self, row: &[u8]) -> RegionInfo {
        self.db.locator().route(TABLE, row).unwrap().info().clone()
    }

    /// A row as this node holds it itself.
    fn value(&self, row: &str) -> Option<Bytes> {
        self.db
            .table(TABLE)
            .unwrap()
            .get(&Get::new(row.to_string()))
            .unwrap()
            .value(b"cf", b"q")
            .cloned()
    }
}

/// A's routes: its own region below "m", and `remote` (on B) from "m".
fn publish_routes(a: &Node, remote: RegionInfo, server: &ServerAddress) {
    let location = a.db.locator().table(TABLE).unwrap();
    let own = location.routes()[0].clone();
    let descriptor = a.db.table(TABLE).unwrap().descriptor();
    a.db.locator().publish(Arc::new(TableLocation::with_routes(
        descriptor,
        true,
        vec![
            own,
            RegionRoute::Remote {
                info: remote,
                server: server.clone(),
            },
        ],
    )));
}

/// A and B, A routing [m, +inf) to B.
fn pair() -> (Node, Node) {
    let a = node();
    let b = node();
    a.db.locator()
        .set_caller(Arc::new(RpcRegionCaller::new(Duration::from_secs(10))))
        .unwrap();
    publish_routes(&a, b.region_info(b"m"), &b.address);
    (a, b)
}

fn put(row: &str, value: &str) -> Put {
    Put::new(row.to_string()).add("cf", "q", value.to_string())
}

fn rows(scan: &Scan, a: &Node) -> Vec<String> {
    a.db.table(TABLE)
        .unwrap()
        .scan(scan)
        .unwrap()
        .map(|r| String::from_utf8(r.unwrap().row.to_vec()).unwrap())
        .collect()
}

#[test]
fn writes_from_m_on_land_in_the_other_server_and_the_rest_stays_here() {
    let (a, b) = pair();
    let t = a.db.table(TABLE).unwrap();
    t.put(&put("apple", "1")).unwrap();
    t.put(&put("zebra", "2")).unwrap();
    assert_eq!(a.value("apple").as_deref(), Some(&b"1"[..]));
    assert_eq!(b.value("zebra").as_deref(), Some(&b"2"[..]));
    assert_eq!(b.value("apple"), None, "rows below m stay in A");
    // Reads through A see B's row.
    let got = t.get(&Get::new("zebra")).unwrap();
    assert_eq!(got.value(b"cf", b"q").map(|v| &v[..]), Some(&b"2"[..]));
    assert!(t.exists(&Get::new("zebra")).unwrap());
    assert!(!t.exists(&Get::new("nothing")).unwrap());

    t.delete(&Delete::new("zebra")).unwrap();
    assert_eq!(b.value("zebra"), None);

    assert_eq!(t.increment_column("score", "cf", "n", 5).unwrap(), 5);
    let inc = t
        .increment(&Increment::new("score").add("cf", "n", 2))
        .unwrap();
    assert_eq!(&inc.cells[0].value[..], &7i64.to_be_bytes());
    let stored = b.db.table(TABLE).unwrap().get(&Get::new("score")).unwrap();
    assert_eq!(&stored.value(b"cf", b"n").unwrap()[..], &7i64.to_be_bytes());

    t.put(&put("name", "ba")).unwrap();
    let appended = t
        .append(&Append::new("name").add("cf", "q", "salt"))
        .unwrap();
    assert_eq!(&appended.cells[0].value[..], b"basalt");
    assert_eq!(b.value("name").as_deref(), Some(&b"basalt"[..]));

    let check = CheckAndMutate::new("name", "cf", "q")
        .if_equals("basalt")
        .then(put("name", "granite"))
        .unwrap();
    assert!(t.check_and_mutate(&check).unwrap());
    assert!(!t.check_and_mutate(&check).unwrap(), "the value changed");
    assert_eq!(b.value("name").as_deref(), Some(&b"granite"[..]));

    let both = RowMutations::new("row-m")
        .add(put("row-m", "x"))
        .unwrap()
        .add(Put::new("row-m").add("cf", "other", "y"))
        .unwrap();
    // "row-m" sorts after "m": B's.
    t.mutate_row(&both).unwrap();
    assert_eq!(b.value("row-m").as_deref(), Some(&b"x"[..]));

    // A batch across both servers: one result per mutation, in order.
    let batch: Vec<Mutation> = vec![
        put("b1", "1").into(),
        put("x1", "2").into(),
        put("y1", "3").into(),
        Put::new("x2").add("nofamily", "q", "v").into(),
        Delete::new("apple").into(),
    ];
    let results = t.batch(&batch);
    assert!(results[0].is_ok() && results[1].is_ok() && results[2].is_ok());
    assert_eq!(
        results[3].as_ref().unwrap_err().kind(),
        ErrorKind::NoSuchFamily,
        "a remote failure keeps its kind"
    );
    assert!(results[4].is_ok());
    assert_eq!(a.value("b1").as_deref(), Some(&b"1"[..]));
    assert_eq!(b.value("x1").as_deref(), Some(&b"2"[..]));
    assert_eq!(b.value("y1").as_deref(), Some(&b"3"[..]));
    assert_eq!(a.value("apple"), None);

    // A remote write's failure comes back with its kind too.
    let error = t
        .put(&Put::new("zz").add("nofamily", "q", "v"))
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoSuchFamily);
}

#[test]
fn a_scan_from_a_returns_both_servers_rows_in_order() {
    let (a, b) = pair();
    let t = a.db.table(TABLE).unwrap();
    let keys = ["a", "c", "e", "g", "m", "n", "p", "r", "t"];
    for (i, k) in keys.iter().enumerate() {
        t.put(&put(k, &format!("v{i}"))).unwrap();
    }
    let all: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    assert_eq!(rows(&Scan::new(), &a), all);
    // One row per round trip: the remote scanner pages.
    assert_eq!(rows(&Scan::new().caching(1), &a), all);
    let mut reversed = all.clone();
    reversed.reverse();
    assert_eq!(rows(&Scan::new().reversed(true), &a), reversed);
    assert_eq!(rows(&Scan::new().reversed(true).caching(2), &a), reversed);

    // Limits, across the boundary both ways.
    assert_eq!(rows(&Scan::new().limit(6), &a), all[..6].to_vec());
    assert_eq!(
        rows(&Scan::new().reversed(true).limit(6), &a),
        reversed[..6].to_vec()
    );
    assert_eq!(
        rows(&Scan::new().limit(2).start_row("n"), &a),
        vec!["n", "p"]
    );

    // Bounds inside B only, and spanning both.
    assert_eq!(
        rows(&Scan::new().start_row("f").stop_row("q"), &a),
        vec!["g", "m", "n", "p"]
    );
    assert_eq!(
        rows(&Scan::new().reversed(true).start_row("q").stop_row("f"), &a),
        vec!["p", "n", "m", "g"]
    );

    // Filters run on the server that has the rows.
    let odd = Filter::parse("ValueFilter(=, 'regexstring:[13579]$')").unwrap();
    assert_eq!(rows(&Scan::new().filter(odd), &a), vec!["c", "g", "n", "r"]);
    assert_eq!(rows(&Scan::new().prefix("p"), &a), vec!["p"]);

    // A scan ended by the server's filter ends here too: WhileMatch stops
    // at "p" in B; reversed, A's rows below (which pass the inner filter)
    // must not come back.
    let below_p = Filter::While(Box::new(Filter::Row(
        CompareOp::NotEqual,
        Comparator::binary("p"),
    )));
    assert_eq!(
        rows(&Scan::new().reversed(true).filter(below_p), &a),
        vec!["t", "r"]
    );

    // Wide rows in pieces.
    t.put(
        &Put::new("wide")
            .add("cf", "a", "1")
            .add("cf", "b", "2")
            .add("cf", "c", "3"),
    )
    .unwrap();
    let pieces: Vec<usize> = t
        .scan(&Scan::new().start_row("wide").batch(2))
        .unwrap()
        .map(|r| r.unwrap().cells.len())
        .collect();
    assert_eq!(pieces, vec![2, 1]);

    // Every remote scanner was closed when its region was done.
    assert_eq!(b.db.region_call_scanners(), 0);
    // And one dropped half way is closed by the drop.
    let mut scanner = t.scan(&Scan::new().start_row("m").caching(1)).unwrap();
    assert!(scanner.next().is_some());
    assert_eq!(b.db.region_call_scanners(), 1);
    drop(scanner);
    assert_eq!(b.db.region_call_scanners(), 0);
}

/// A refresher that publishes B's true route for [m, +inf).
fn refresher(a: &Node, b: &Node, calls: Arc<AtomicUsize>) -> basalt::RouteRefresher {
    let locator = Arc::clone(a.db.locator());
    let own = locator.table(TABLE).unwrap().routes()[0].clone();
    let descriptor = a.db.table(TABLE).unwrap().descriptor();
    let remote = b.region_info(b"m");
    let server = b.address.clone();
    let tables = Mutex::new(Vec::new());
    Arc::new(move |table: &str| {
        calls.fetch_add(1, Ordering::SeqCst);
        tables.lock().unwrap().push(table.to_string());
        assert_eq!(table, TABLE);
        locator.publish(Arc::new(TableLocation::with_routes(
            descriptor.clone(),
            true,
            vec![
                own.clone(),
                RegionRoute::Remote {
                    info: remote.clone(),
                    server: server.clone(),
                },
            ],
        )));
    })
}

#[test]
fn a_call_for_a_region_b_does_not_serve_refreshes_the_routes_and_succeeds() {
    let (a, b) = pair();
    // A stale route: a region id B has never had (a region moved away).
    let mut stale = b.region_info(b"m");
    stale.id += 1_000_000;
    publish_routes(&a, stale.clone(), &b.address);
    let calls = Arc::new(AtomicUsize::new(0));
    a.db.locator()
        .set_refresher(refresher(&a, &b, Arc::clone(&calls)));

    let t = a.db.table(TABLE).unwrap();
    t.put(&put("zebra", "1")).unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the refresher was asked once"
    );
    assert_eq!(b.value("zebra").as_deref(), Some(&b"1"[..]));

    // Scans and batches find their way the same way.
    publish_routes(&a, stale.clone(), &b.address);
    assert_eq!(rows(&Scan::new().start_row("n"), &a), vec!["zebra"]);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    publish_routes(&a, stale, &b.address);
    let results = t.batch(&[put("yak", "2").into(), put("ant", "3").into()]);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(b.value("yak").as_deref(), Some(&b"2"[..]));
    assert_eq!(a.value("ant").as_deref(), Some(&b"3"[..]));
}

#[test]
fn a_refresher_that_finds_the_new_server_only_later_is_asked_again() {
    let (a, b) = pair();
    let mut stale = b.region_info(b"m");
    stale.id += 1_000_000;
    publish_routes(&a, stale.clone(), &b.address);
    // The catalog names the region's new server from the third read on;
    // before that the refresher publishes the stale routes again.
    let calls = Arc::new(AtomicUsize::new(0));
    let fresh = refresher(&a, &b, Arc::new(AtomicUsize::new(0)));
    let locator = Arc::clone(a.db.locator());
    let descriptor = a.db.table(TABLE).unwrap().descriptor();
    let own = locator.table(TABLE).unwrap().routes()[0].clone();
    let server = b.address.clone();
    let counted = Arc::clone(&calls);
    a.db.locator().set_refresher(Arc::new(move |table: &str| {
        if counted.fetch_add(1, Ordering::SeqCst) >= 2 {
            fresh(table);
        } else {
            locator.publish(Arc::new(TableLocation::with_routes(
                descriptor.clone(),
                true,
                vec![
                    own.clone(),
                    RegionRoute::Remote {
                        info: stale.clone(),
                        server: server.clone(),
                    },
                ],
            )));
        }
    }));
    let t = a.db.table(TABLE).unwrap();
    t.put(&put("zebra", "1")).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(b.value("zebra").as_deref(), Some(&b"1"[..]));
}

#[test]
fn a_call_to_a_stopped_server_fails_naming_its_address() {
    let (a, mut b) = pair();
    let t = a.db.table(TABLE).unwrap();
    t.put(&put("zebra", "1")).unwrap();
    // A pooled connection to B exists; B stops.
    b.server.take().unwrap().stop();
    let error = t.get(&Get::new("zebra")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Io);
    assert!(
        error.to_string().contains(&b.address.to_string()),
        "{error}"
    );
    let error = t.put(&put("zebra", "2")).unwrap_err();
    assert!(
        error.to_string().contains(&b.address.to_string()),
        "{error}"
    );
    // A's own rows are unaffected.
    t.put(&put("apple", "1")).unwrap();
    assert_eq!(a.value("apple").as_deref(), Some(&b"1"[..]));
}

#[test]
fn a_region_not_open_here_is_not_serving_on_both_sides_of_the_wire() {
    let b = node();
    let info = b.region_info(b"m");
    let error =
        b.db.serve_region_call(TABLE, info.id + 7, RegionCall::Get(Get::new("z")))
            .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotServingRegion);
    // The right id under another table's name is not served either.
    let error =
        b.db.serve_region_call("other", info.id, RegionCall::Get(Get::new("z")))
            .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotServingRegion);
    // A row outside the region named.
    let error =
        b.db.serve_region_call(TABLE, info.id, RegionCall::Put(put("a", "1")))
            .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotServingRegion);
    // Through the wire, the kind survives.
    let caller = RpcRegionCaller::new(Duration::from_secs(10));
    let error = caller
        .call(
            &b.address,
            TABLE,
            info.id + 7,
            RegionCall::Get(Get::new("z")),
        )
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotServingRegion);
    assert!(
        matches!(
            caller.call(&b.address, TABLE, info.id, RegionCall::Get(Get::new("z"))),
            Ok(RegionAnswer::Row(_))
        ),
        "the region it does serve answers"
    );
    assert_eq!(
        caller.idle_connections(&b.address),
        1,
        "the connection is reused"
    );
}

#[test]
fn a_scanner_past_its_lease_is_gone() {
    let b = node();
    let info = b.region_info(b"m");
    b.db.table(TABLE).unwrap().put(&put("x", "1")).unwrap();
    b.db.set_region_call_scanner_lease(Duration::from_millis(1));
    let open =
        b.db.serve_region_call(
            TABLE,
            info.id,
            RegionCall::OpenScanner { scan: Scan::new() },
        )
        .unwrap();
    let RegionAnswer::Rows { scanner, .. } = open else {
        panic!("OpenScanner answered {open:?}");
    };
    assert_eq!(b.db.region_call_scanners(), 1);
    std::thread::sleep(Duration::from_millis(50));
    let error =
        b.db.serve_region_call(TABLE, info.id, RegionCall::NextRows { scanner, rows: 10 })
            .unwrap_err();
    assert!(
        error.to_string().contains("unknown region-call scanner"),
        "{error}"
    );
    assert_eq!(b.db.region_call_scanners(), 0);
    // Closing it again is harmless.
    assert_eq!(
        b.db.serve_region_call(TABLE, info.id, RegionCall::CloseScanner { scanner })
            .unwrap(),
        RegionAnswer::Done
    );
}

#[test]
fn a_scanner_is_bounded_to_its_region_and_pages() {
    let b = node();
    let t = b.db.table(TABLE).unwrap();
    for k in ["a", "l", "m", "n", "o"] {
        t.put(&put(k, "v")).unwrap();
    }
    let info = b.region_info(b"m");
    let RegionAnswer::Rows { scanner, .. } =
        b.db.serve_region_call(
            TABLE,
            info.id,
            RegionCall::OpenScanner { scan: Scan::new() },
        )
        .unwrap()
    else {
        panic!("not rows");
    };
    let page = |n| {
        b.db.serve_region_call(TABLE, info.id, RegionCall::NextRows { scanner, rows: n })
            .unwrap()
    };
    let RegionAnswer::Rows { rows, more, .. } = page(2) else {
        panic!("not rows");
    };
    assert_eq!(rows.len(), 2);
    assert!(more);
    let RegionAnswer::Rows {
        rows,
        more,
        scanner: id,
    } = page(10)
    else {
        panic!("not rows");
    };
    assert_eq!(rows.len(), 1, "only the region's rows: m, n, o");
    assert!(!more);
    assert_eq!(id, scanner, "the region ran out; the scan did not end");
    assert_eq!(b.db.region_call_scanners(), 0, "closed when done");
}
