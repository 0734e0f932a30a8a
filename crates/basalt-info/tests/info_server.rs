//! The info server over a real socket: every page and endpoint, the 404
//! and 400 answers, HTML escaping of user bytes, `/metrics` checked
//! against the text format's grammar, and the issue's acceptance test:
//! a monotonic-key workload and a salted one, told apart through the JSON
//! API. Time is a `ManualClock`: minutes pass by `advance`, never by
//! sleeping.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use basalt::{ColumnFamilyDescriptor, Database, ManualClock, Options, Put, TableDescriptor};
use basalt_info::{InfoConfig, InfoServer};
use bytes::Bytes;
use serde_json::Value;

/// 2023-11-14 22:00 UTC: a minute boundary, so minute arithmetic is plain.
const START_MS: i64 = 1_699_999_200_000;

struct Fixture {
    _dir: tempfile::TempDir,
    db: Database,
    clock: Arc<ManualClock>,
    server: Option<InfoServer>,
    addr: SocketAddr,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with_config(InfoConfig {
            port: 0,
            ..InfoConfig::default()
        })
    }

    fn with_config(config: InfoConfig) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(START_MS));
        let db = Database::builder(Options::new(dir.path()))
            .clock(clock.clone())
            .open()
            .unwrap();
        let server = InfoServer::bind(db.clone(), &config).unwrap();
        let addr = server.local_addr();
        db.register_gateway("info", addr);
        Fixture {
            _dir: dir,
            db,
            clock,
            server: Some(server),
            addr,
        }
    }

    fn get(&self, path: &str) -> Response {
        request(self.addr, "GET", path)
    }

    fn json(&self, path: &str) -> Value {
        let r = self.get(path);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert!(r.content_type.starts_with("application/json"), "{path}");
        serde_json::from_str(&r.body).unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
        let _ = self.db.close();
    }
}

#[derive(Debug)]
struct Response {
    status: u16,
    content_type: String,
    body: String,
}

/// One HTTP/1.1 request on its own connection, read to the end.
fn request(addr: SocketAddr, method: &str, path: &str) -> Response {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let content_type = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    Response {
        status,
        content_type,
        body: body.to_string(),
    }
}

fn family(name: &str) -> ColumnFamilyDescriptor {
    ColumnFamilyDescriptor::new(name)
}

fn create(db: &Database, table: &str, splits: &[&[u8]]) {
    let splits: Vec<Bytes> = splits.iter().map(|s| Bytes::copy_from_slice(s)).collect();
    db.create_table_with_splits(
        TableDescriptor::new(table)
            .family(family("d").max_versions(3))
            .family(family("m")),
        &splits,
    )
    .unwrap();
}

fn put(db: &Database, table: &str, row: &[u8]) {
    db.table(table)
        .unwrap()
        .put(&Put::new(Bytes::copy_from_slice(row)).add("d", "q", "value"))
        .unwrap();
}

#[test]
fn every_page_answers_with_its_tables_and_headings() {
    let f = Fixture::new();
    create(&f.db, "users", &[b"m"]);
    for row in [&b"alice"[..], b"bob", b"zed"] {
        put(&f.db, "users", row);
    }
    let pages: &[(&str, &[&str])] = &[
        (
            "/",
            &[
                "<h1>Status</h1>",
                "id=\"gateways\"",
                "Block cache",
                "Uptime",
                "Memstores",
            ],
        ),
        (
            "/tables",
            &["id=\"tables\"", "href=\"/table/users\"", "VERSIONS =&gt; 3"],
        ),
        (
            "/table/users",
            &[
                "id=\"regions\"",
                "#REQ/S",
                "#READ/S",
                "#FREAD/S",
                "#WRITE/S",
                "SF",
                "#SF",
                "MEMSTORE",
                "%COMP",
                "LASTMCOMP",
                "STARTKEY",
                "ENDKEY",
                "heatmap-link",
            ],
        ),
        (
            "/table/users/heatmap",
            &[
                "id=\"heatmap\"",
                "id=\"metric-switch\"",
                "id=\"hottest\"",
                "id=\"legend\"",
            ],
        ),
        (
            "/table/users/heatmap?metric=bytes&rows=8",
            &["data-metric=\"bytes\""],
        ),
        ("/load-splits", &["id=\"load-splits\""]),
    ];
    for (path, wanted) in pages {
        let r = f.get(path);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert!(
            r.content_type.starts_with("text/html"),
            "{path}: {}",
            r.content_type
        );
        for w in *wanted {
            assert!(r.body.contains(w), "{path} lacks {w:?}");
        }
    }
    let status = f.json("/api/status");
    assert_eq!(status["tables"], 1);
    assert_eq!(status["regions"], 2);
    assert_eq!(status["write_requests"], 3);
    let gateways = status["gateways"].as_array().unwrap();
    assert!(gateways
        .iter()
        .any(|g| g["protocol"] == "info" && g["address"] == f.addr.to_string()));
    let tables = f.json("/api/tables");
    assert_eq!(tables[0]["name"], "users");
    assert_eq!(tables[0]["families"][0]["options"]["VERSIONS"], "3");
    let table = f.json("/api/tables/users");
    let regions = table["region_list"].as_array().unwrap();
    assert_eq!(regions.len(), 2);
    assert_eq!(regions[0]["end_key"], "m");
    assert_eq!(regions[1]["start_key"], "m");
    assert_eq!(
        regions
            .iter()
            .map(|r| r["write_requests"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![2, 1]
    );
    let heatmap = f.json("/api/tables/users/heatmap?metric=writes&rows=16");
    assert_eq!(heatmap["table"], "users");
    assert_eq!(heatmap["metric"], "writes");
    assert!(f.json("/api/load-splits").is_array());
    assert!(f.json("/api/server-metrics").is_object());
    let metrics = f.get("/metrics");
    assert_eq!(metrics.status, 200);
    assert!(
        metrics
            .content_type
            .starts_with("text/plain; version=0.0.4"),
        "{}",
        metrics.content_type
    );
}

#[test]
fn unknown_tables_and_paths_are_404_and_bad_parameters_are_400_saying_why() {
    let f = Fixture::new();
    create(&f.db, "t", &[]);
    let cases: &[(&str, u16, &str)] = &[
        ("/table/nope", 404, "nope"),
        ("/table/nope/heatmap", 404, "nope"),
        ("/nowhere", 404, "no page at /nowhere"),
        (
            "/table/t/heatmap?metric=heat",
            400,
            "metric \"heat\" is not one of writes, reads, bytes",
        ),
        (
            "/table/t/heatmap?rows=0",
            400,
            "rows \"0\" is not a number from 1 to 512",
        ),
        ("/table/t/heatmap?rows=100000", 400, "max_heatmap_rows"),
        ("/table/t?sort=bogus", 400, "sort column \"bogus\""),
        (
            "/table/t?sort=store_files&order=up",
            400,
            "order \"up\" is not asc or desc",
        ),
        (
            "/tables?verbose=1",
            400,
            "unknown query parameter \"verbose\"",
        ),
        (
            "/table/t/heatmap?metric=reads&metric=writes",
            400,
            "given twice",
        ),
    ];
    for (path, status, says) in cases {
        let r = f.get(path);
        assert_eq!(r.status, *status, "{path}: {}", r.body);
        assert!(r.content_type.starts_with("text/html"), "{path}");
        assert!(
            r.body.contains(&says.replace('"', "&quot;")),
            "{path}: {}",
            r.body
        );
    }
    for (path, status) in [
        ("/api/tables/nope", 404),
        ("/api/tables/nope/heatmap", 404),
        ("/api/nothing", 404),
        ("/api/tables/t/heatmap?metric=x", 400),
    ] {
        let r = f.get(path);
        assert_eq!(r.status, status, "{path}: {}", r.body);
        let body: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["status"], status);
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{path}"
        );
    }
    let r = request(f.addr, "POST", "/tables");
    assert_eq!(r.status, 405);
    let r = request(f.addr, "HEAD", "/tables");
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty(), "HEAD has no body");
}

#[test]
fn row_keys_are_escaped_on_every_page_that_shows_them() {
    let f = Fixture::new();
    // HBase table names cannot hold markup; row keys (split points,
    // region start keys, heatmap labels) can hold anything.
    let nasty: &[u8] = b"<script>alert(\"x\")</script>\x01";
    create(&f.db, "t", &[nasty]);
    put(&f.db, "t", nasty);
    put(&f.db, "t", b"\"quoted\" <b>");
    f.clock.advance(60_000);
    for path in [
        "/table/t",
        "/table/t/heatmap",
        "/table/t/heatmap?metric=bytes",
    ] {
        let r = f.get(path);
        assert_eq!(r.status, 200, "{path}");
        assert!(!r.body.contains("<script>"), "{path} carries raw markup");
        assert!(!r.body.contains("<b>"), "{path} carries raw markup");
        assert!(
            r.body
                .contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;\\x01"),
            "{path}"
        );
    }
    let table = f.json("/api/tables/t");
    assert_eq!(
        table["region_list"][1]["start_key"], "<script>alert(\"x\")</script>\\x01",
        "JSON keys are Bytes.toStringBinary text"
    );
    // A table in a namespace: its name goes into URLs percent-encoded.
    f.db.create_namespace(basalt::NamespaceDescriptor::new("ns"))
        .unwrap();
    create(&f.db, "ns:t2", &[]);
    let tables = f.get("/tables");
    assert!(
        tables.body.contains("href=\"/table/ns%3At2\""),
        "{}",
        tables.body
    );
    assert_eq!(f.get("/table/ns%3At2").status, 200);
    assert_eq!(f.get("/table/ns:t2/heatmap").status, 200);
}

#[test]
fn the_regions_table_sorts_by_a_clicked_column() {
    let f = Fixture::new();
    create(&f.db, "t", &[b"b", b"c", b"d"]);
    // Region [c, d) is the busiest, then [a.., b).
    for i in 0..30 {
        put(&f.db, "t", format!("c{i:03}").as_bytes());
    }
    for i in 0..10 {
        put(&f.db, "t", format!("a{i:03}").as_bytes());
    }
    for row in [b"d1", b"d2", b"d3"] {
        put(&f.db, "t", row);
    }
    f.clock.advance(10_000);
    let starts = |path: &str| -> Vec<String> {
        f.json(path)["region_list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["start_key"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        starts("/api/tables/t"),
        ["", "b", "c", "d"],
        "key order by default"
    );
    assert_eq!(
        starts("/api/tables/t?sort=write_requests_per_second"),
        ["c", "", "d", "b"],
        "numbers sort busiest first"
    );
    assert_eq!(
        starts("/api/tables/t?sort=write_requests_per_second&order=asc"),
        ["b", "d", "", "c"]
    );
    assert_eq!(
        starts("/api/tables/t?sort=start_key&order=desc"),
        ["d", "c", "b", ""]
    );
    let page = f.get("/table/t?sort=requests_per_second&order=desc");
    assert!(page.body.contains(
        "<th data-column=\"requests_per_second\"><a href=\"/table/t?sort=requests_per_second&amp;order=asc\">#REQ/S</a> \u{25bc}</th>"
    ), "the sorted column is marked and its link reverses the order");
    let first_row = page.body.split("<tbody>").last().unwrap();
    assert!(
        first_row.starts_with("<tr><td class=\"key\">c</td>"),
        "{first_row}"
    );
}

#[test]
fn connections_over_the_limit_are_closed_at_once() {
    let f = Fixture::with_config(InfoConfig {
        port: 0,
        max_connections: 1,
        ..InfoConfig::default()
    });
    let _held = TcpStream::connect(f.addr).unwrap();
    // The held connection is counted once the server accepted it.
    let server = f.server.as_ref().unwrap();
    while server.open_connections() < 1 {
        std::thread::yield_now();
    }
    let mut refused = TcpStream::connect(f.addr).unwrap();
    refused
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let _ = refused.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut buf = Vec::new();
    let _ = refused.read_to_end(&mut buf);
    assert!(buf.is_empty(), "closed without an answer");
    assert_eq!(server.refused_connections(), 1);
}

/// One sample: its name, labels and value.
type Sample = (String, BTreeMap<String, String>, f64);
/// Family name -> (type, samples).
type Families = BTreeMap<String, (String, Vec<Sample>)>;

/// A strict reading of the text format 0.0.4: the families in order, each
/// with HELP and TYPE before its samples, every sample line well formed,
/// counters ending in `_total`, histograms cumulative up to `+Inf` which
/// equals `_count`. Returns family name -> samples (name with labels ->
/// value).
fn parse_exposition(text: &str) -> Families {
    let mut families = Families::new();
    let mut helped = BTreeSet::new();
    let mut current: Option<String> = None;
    let name_ok = |n: &str| {
        let mut chars = n.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    assert!(text.ends_with('\n'), "the exposition ends with a line feed");
    for line in text.lines() {
        assert!(!line.is_empty(), "no blank lines");
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, _) = rest.split_once(' ').unwrap();
            assert!(name_ok(name), "{line}");
            assert!(helped.insert(name.to_string()), "HELP twice for {name}");
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(helped.contains(name), "TYPE before HELP for {name}");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            if kind == "counter" {
                assert!(
                    name.ends_with("_total"),
                    "counter {name} does not end in _total"
                );
            }
            assert!(!families.contains_key(name), "family {name} declared twice");
            families.insert(name.to_string(), (kind.to_string(), Vec::new()));
            current = Some(name.to_string());
            continue;
        }
        assert!(!line.starts_with('#'), "unexpected comment {line}");
        // name{labels} value
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("bad value in {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series.to_string(), BTreeMap::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').unwrap_or_else(|| panic!("{line}"));
                (name.to_string(), parse_labels(body, line))
            }
        };
        assert!(name_ok(&name), "{line}");
        let family = current
            .clone()
            .unwrap_or_else(|| panic!("sample before any TYPE: {line}"));
        let (kind, samples) = families.get_mut(&family).unwrap();
        let belongs = if kind == "histogram" {
            [
                format!("{family}_bucket"),
                format!("{family}_sum"),
                format!("{family}_count"),
            ]
            .contains(&name)
        } else {
            name == family
        };
        assert!(belongs, "{name} outside its family {family}");
        samples.push((name, labels, value));
    }
    for (name, (kind, samples)) in &families {
        if kind != "histogram" {
            continue;
        }
        let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        let mut counts = BTreeMap::new();
        for (n, labels, v) in samples {
            let mut key = labels.clone();
            let le = key.remove("le");
            let key = format!("{key:?}");
            if n.ends_with("_bucket") {
                let le = le.unwrap_or_else(|| panic!("{name} bucket without le"));
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                };
                series.entry(key).or_default().push((le, *v));
            } else if n.ends_with("_count") {
                counts.insert(key, *v);
            }
        }
        for (key, buckets) in &series {
            assert!(
                buckets
                    .windows(2)
                    .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
                "{name}{key} not cumulative"
            );
            let last = buckets.last().unwrap();
            assert_eq!(last.0, f64::INFINITY, "{name}{key} lacks +Inf");
            assert_eq!(
                Some(&last.1),
                counts.get(key),
                "{name}{key}: +Inf is not _count"
            );
        }
    }
    families
}

fn parse_labels(body: &str, line: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut chars = body.chars().peekable();
    while chars.peek().is_some() {
        let name: String = chars.by_ref().take_while(|&c| c != '=').collect();
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
        assert_eq!(chars.next(), Some('"'), "{line}");
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('\\') => match chars.next() {
                    Some('\\') => value.push('\\'),
                    Some('"') => value.push('"'),
                    Some('n') => value.push('\n'),
                    other => panic!("bad escape {other:?} in {line}"),
                },
                Some('"') => break,
                Some('\n') | None => panic!("unterminated label in {line}"),
                Some(c) => value.push(c),
            }
        }
        assert!(
            labels.insert(name, value).is_none(),
            "label twice in {line}"
        );
        match chars.next() {
            Some(',') | None => {}
            other => panic!("unexpected {other:?} in {line}"),
        }
    }
    labels
}

#[test]
fn metrics_are_well_formed_text_format_with_the_issues_families() {
    let f = Fixture::new();
    create(&f.db, "t1", &[b"k"]);
    create(&f.db, "t2", &[]);
    for i in 0..5 {
        put(&f.db, "t1", format!("row{i}").as_bytes());
    }
    let t = f.db.table("t1").unwrap();
    t.get(&basalt::Get::new("row1")).unwrap();
    f.db.flush_table("t1").unwrap();
    let r = f.get("/metrics");
    assert_eq!(r.status, 200);
    let families = parse_exposition(&r.body);
    for name in [
        "basalt_read_requests_total",
        "basalt_write_requests_total",
        "basalt_filtered_read_requests_total",
        "basalt_bytes_read_total",
        "basalt_bytes_written_total",
        "basalt_rows_scanned_total",
        "basalt_memstore_bytes",
        "basalt_store_files",
        "basalt_store_file_bytes",
        "basalt_regions",
        "basalt_block_cache_hits_total",
        "basalt_block_cache_misses_total",
        "basalt_block_cache_evictions_total",
        "basalt_block_cache_bytes",
        "basalt_request_duration_seconds",
        "basalt_wal_syncs_total",
        "basalt_wal_fsyncs_total",
        "basalt_index_failed_post_writes_total",
        "basalt_wal_bytes_written_total",
        "basalt_flush_queue_length",
        "basalt_compaction_queue_length",
        "basalt_flushes_running",
        "basalt_compactions_running",
        "basalt_uptime_seconds",
    ] {
        assert!(families.contains_key(name), "/metrics lacks {name}");
    }
    assert_eq!(families["basalt_request_duration_seconds"].0, "histogram");
    let count = |op: &str| -> f64 {
        families["basalt_request_duration_seconds"]
            .1
            .iter()
            .find(|(n, l, _)| n.ends_with("_count") && l.get("op").map(String::as_str) == Some(op))
            .map(|(_, _, v)| *v)
            .unwrap_or_else(|| panic!("no latency series for {op}"))
    };
    assert_eq!(count("put"), 5.0, "each put timed once");
    assert_eq!(count("get"), 1.0);
    assert!(value_of(&families, "basalt_wal_syncs_total") >= 1.0);
    assert!(value_of(&families, "basalt_wal_bytes_written_total") > 0.0);
    let value = |family: &str, table: &str| -> f64 {
        families[family]
            .1
            .iter()
            .find(|(_, l, _)| l.get("table").map(String::as_str) == Some(table))
            .map(|(_, _, v)| *v)
            .unwrap_or_else(|| panic!("{family} has no series for {table}"))
    };
    assert_eq!(value("basalt_write_requests_total", "t1"), 5.0);
    assert_eq!(value("basalt_write_requests_total", "t2"), 0.0);
    assert_eq!(value("basalt_regions", "t1"), 2.0);
    assert_eq!(value("basalt_read_requests_total", "t1"), 1.0);
    assert!(value("basalt_store_files", "t1") >= 1.0);
    // No series is per region: the only labels are table, op and le.
    for (_, samples) in families.values() {
        for (_, labels, _) in samples {
            for k in labels.keys() {
                assert!(["table", "op", "le"].contains(&k.as_str()), "label {k}");
            }
        }
    }
}

#[test]
fn the_servers_api_lists_this_one_server_with_its_regions_loads() {
    let f = Fixture::new();
    create(&f.db, "a", &[b"m"]);
    create(&f.db, "b", &[]);
    for row in ["c", "x", "y"] {
        put(&f.db, "a", row.as_bytes());
    }
    put(&f.db, "b", b"k");
    let table = f.db.table("a").unwrap();
    table.get(&basalt::Get::new("c")).unwrap();
    let filter = basalt::Filter::parse("ValueFilter(=, 'binary:nothing')").unwrap();
    table.get(&basalt::Get::new("x").filter(filter)).unwrap();
    f.db.flush_table("a").unwrap();

    let servers = f.json("/api/servers");
    assert_eq!(servers["cluster"], false);
    assert!(servers["error"].is_null());
    let list = servers["servers"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{servers}");
    let me = &list[0];
    assert_eq!(me["this_process"], true);
    assert_eq!(me["regions"], 3);
    let load = &me["load"];
    assert_eq!(load["write_requests"], 4);
    assert_eq!(load["read_requests"], 2);
    assert_eq!(load["filtered_read_requests"], 1);
    assert_eq!(
        load["store_files"], 2,
        "one per region of a after the flush"
    );
    assert!(load["store_file_bytes"].as_u64().unwrap() > 0);
    assert!(
        load["memstore_bytes"].as_u64().unwrap() > 0,
        "b is not flushed"
    );
    // The same numbers as the sum over the tables' regions.
    let regions: Vec<Value> = ["a", "b"]
        .iter()
        .flat_map(|t| {
            f.json(&format!("/api/tables/{t}"))["region_list"]
                .as_array()
                .unwrap()
                .clone()
        })
        .collect();
    let sum = |k: &str| regions.iter().map(|r| r[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(load["write_requests"].as_u64(), Some(sum("write_requests")));
    assert_eq!(load["store_files"].as_u64(), Some(sum("store_files")));
    assert!(regions.iter().all(|r| r["load_from"] == "here"));

    let page = f.get("/servers");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("id=\"servers\""), "{}", page.body);
    assert!(page.body.contains("(this process)"));
    assert!(!page.body.contains("no report"));
}

#[test]
fn metrics_counters_do_not_go_down_when_a_region_splits() {
    let f = Fixture::new();
    create(&f.db, "t", &[]);
    for i in 0..8 {
        put(&f.db, "t", format!("row{i}").as_bytes());
    }
    f.db.table("t")
        .unwrap()
        .get(&basalt::Get::new("row1"))
        .unwrap();
    let counters = |f: &Fixture| -> BTreeMap<String, f64> {
        let families = parse_exposition(&f.get("/metrics").body);
        families
            .iter()
            .filter(|(_, (kind, _))| kind == "counter")
            .flat_map(|(_, (_, samples))| samples.iter())
            .map(|(name, labels, v)| (format!("{name}{labels:?}"), *v))
            .collect()
    };
    let before = counters(&f);
    assert_eq!(before["basalt_write_requests_total{\"table\": \"t\"}"], 8.0);
    f.db.split_table("t", Some(b"row4")).unwrap();
    assert_eq!(f.db.list_regions("t").unwrap().len(), 2);
    let after = counters(&f);
    for (series, value) in &before {
        let now = after.get(series).copied().unwrap_or(0.0);
        assert!(now >= *value, "{series} went from {value} down to {now}");
    }
    assert_eq!(after["basalt_write_requests_total{\"table\": \"t\"}"], 8.0);
    assert_eq!(after["basalt_read_requests_total{\"table\": \"t\"}"], 1.0);
}

/// The disk cache's families in an exposition.
fn file_cache_families(families: &Families) -> Vec<&str> {
    families
        .keys()
        .filter(|k| k.starts_with("basalt_file_cache_"))
        .map(String::as_str)
        .collect()
}

#[test]
fn metrics_and_status_carry_the_disk_cache_only_when_the_store_has_one() {
    // Files on local disk: no cache, no families, no section.
    let f = Fixture::new();
    let families = parse_exposition(&f.get("/metrics").body);
    assert!(file_cache_families(&families).is_empty());
    assert!(f.json("/api/status")["memory"]["file_cache"].is_null());
    assert!(!f.get("/").body.contains("file-cache"));

    // Files behind the object store's disk cache (over a memory store).
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let files = basalt_object_store::CachedFileStore::open(
        Arc::new(basalt::fs::MemFileStore::new()),
        dir.path(),
        basalt_object_store::DiskCacheConfig {
            dir: cache_dir.path().to_path_buf(),
            capacity_bytes: 1 << 20,
            part_bytes: 4096,
            identity: "mem://info-test".into(),
        },
    )
    .unwrap();
    let mut options = Options::new(dir.path());
    // No block cache: reads go to the file store, so the disk cache counts.
    options.block_cache_bytes = 0;
    let db = Database::builder(options)
        .clock(Arc::new(ManualClock::new(START_MS)))
        .file_store(Arc::new(files))
        .open()
        .unwrap();
    create(&db, "t", &[]);
    put(&db, "t", b"row");
    db.flush_table("t").unwrap();
    for _ in 0..3 {
        db.table("t")
            .unwrap()
            .get(&basalt::Get::new("row"))
            .unwrap();
    }
    let server = InfoServer::bind(
        db.clone(),
        &InfoConfig {
            port: 0,
            ..InfoConfig::default()
        },
    )
    .unwrap();
    let addr = server.local_addr();
    let families = parse_exposition(&request(addr, "GET", "/metrics").body);
    assert_eq!(
        file_cache_families(&families),
        [
            "basalt_file_cache_bytes",
            "basalt_file_cache_capacity_bytes",
            "basalt_file_cache_discarded_total",
            "basalt_file_cache_evictions_total",
            "basalt_file_cache_fetched_bytes_total",
            "basalt_file_cache_hit_bytes_total",
            "basalt_file_cache_hits_total",
            "basalt_file_cache_misses_total",
            "basalt_file_cache_parts",
        ]
    );
    let hits = value_of(&families, "basalt_file_cache_hits_total");
    let misses = value_of(&families, "basalt_file_cache_misses_total");
    assert!(hits + misses > 0.0, "reads went through the cache");
    assert_eq!(
        value_of(&families, "basalt_file_cache_capacity_bytes"),
        1048576.0
    );
    let status: Value = serde_json::from_str(&request(addr, "GET", "/api/status").body).unwrap();
    let cache = &status["memory"]["file_cache"];
    assert_eq!(cache["capacity_bytes"], 1 << 20);
    assert_eq!(cache["hits"].as_f64(), Some(hits));
    assert!(request(addr, "GET", "/").body.contains("id=\"file-cache\""));
    server.shutdown();
    db.close().unwrap();
}

fn value_of(families: &Families, name: &str) -> f64 {
    families[name].1[0].2
}

#[test]
fn the_strict_reader_refuses_what_the_format_forbids() {
    let bad = [
        "basalt_x_total 1\n",                                                // no TYPE
        "# HELP basalt_x X.\n# TYPE basalt_x counter\nbasalt_x 1\n",        // counter without _total
        "# HELP a A.\n# TYPE a gauge\na{t=\"x} 1\n",                          // unterminated label
        "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n", // not cumulative
        "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", // no +Inf
    ];
    for text in bad {
        let result = std::panic::catch_unwind(|| parse_exposition(text));
        assert!(result.is_err(), "accepted {text:?}");
    }
}

/// The issue's acceptance 1: writes with monotonic keys and with salted
/// keys against tables pre-split into four regions, told apart through
/// the JSON API, per region and per key-axis row of the heatmap.
#[test]
fn a_monotonic_workload_writes_only_the_last_region_and_a_salted_one_spreads_within_20_percent() {
    const MINUTES: u64 = 10;
    const PER_MINUTE: u64 = 120;
    let f = Fixture::new();
    // Pre-split for counters below 75000; the keys written are past the
    // last split point, as timestamps outgrow a pre-split made earlier.
    create(
        &f.db,
        "monotonic",
        &[b"t00025000", b"t00050000", b"t00075000"],
    );
    create(&f.db, "salted", &[b"1", b"2", b"3"]);
    let mut id = 0u64;
    for _ in 0..MINUTES {
        for _ in 0..PER_MINUTE {
            put(
                &f.db,
                "monotonic",
                format!("t{:08}", 100_000 + id).as_bytes(),
            );
            put(&f.db, "salted", format!("{}{:08}", id % 4, id).as_bytes());
            id += 1;
        }
        f.clock.advance(60_000);
    }
    let total = (MINUTES * PER_MINUTE) as f64;
    let region_writes = |table: &str| -> Vec<f64> {
        f.json(&format!("/api/tables/{table}"))["region_list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["write_requests"].as_f64().unwrap())
            .collect()
    };
    let within = |values: &[f64], mean: f64, what: &str| {
        for (i, v) in values.iter().enumerate() {
            assert!(
                (v - mean).abs() <= 0.2 * mean,
                "{what} {i}: {v} is not within 20% of {mean} ({values:?})"
            );
        }
    };

    // Per region, from the regions table.
    assert_eq!(region_writes("monotonic"), [0.0, 0.0, 0.0, total]);
    within(&region_writes("salted"), total / 4.0, "salted region");

    // Per region and per key-axis row, from the heatmap.
    let heatmap = |table: &str| {
        f.json(&format!(
            "/api/tables/{table}/heatmap?metric=writes&rows=16"
        ))
    };
    let mono = heatmap("monotonic");
    assert_eq!(mono["metric"], "writes");
    assert!(mono["minutes"].as_array().unwrap().len() as u64 >= MINUTES);
    let totals: Vec<f64> = mono["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["writes"].as_f64().unwrap())
        .collect();
    assert_eq!(totals.len(), 4, "{mono}");
    assert_eq!(
        &totals[..3],
        &[0.0, 0.0, 0.0],
        "no write outside the last region"
    );
    assert!(totals[3] > 0.0);
    let rows = mono["rows"].as_array().unwrap();
    let row_totals = mono["row_totals"].as_array().unwrap();
    let last_start = rows
        .iter()
        .rposition(|r| r["region_start"] == true)
        .unwrap();
    assert_eq!(rows[last_start]["start_key"], "t00075000");
    for (i, t) in row_totals.iter().enumerate() {
        if i < last_start {
            assert_eq!(
                t.as_f64(),
                Some(0.0),
                "row {i} ({}) is before the last region",
                rows[i]
            );
        }
    }
    let in_last: f64 = row_totals[last_start..]
        .iter()
        .map(|t| t.as_f64().unwrap())
        .sum();
    let all: f64 = row_totals.iter().map(|t| t.as_f64().unwrap()).sum();
    assert_eq!(
        in_last, all,
        "100% of the heatmap's writes in the last region's rows"
    );
    // The hottest range is in the last region.
    assert_eq!(mono["hottest"][0]["region"], rows[last_start]["region"]);

    let salt = heatmap("salted");
    let totals: Vec<f64> = salt["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["writes"].as_f64().unwrap())
        .collect();
    assert_eq!(totals.len(), 4, "{salt}");
    let sum: f64 = totals.iter().sum();
    within(&totals, sum / 4.0, "salted heatmap region");
    let row_totals: Vec<f64> = salt["row_totals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_f64().unwrap())
        .collect();
    assert!(row_totals.len() >= 4, "{salt}");
    // A row with no load at all is only ever an unused edge of a region:
    // the keys between its start and the lowest key written, or between
    // the highest and the next region's start (region starts are always
    // row boundaries). Every row holding keys is within 20% of the mean
    // of those rows.
    let rows = salt["rows"].as_array().unwrap();
    for (i, t) in row_totals.iter().enumerate() {
        if *t == 0.0 {
            let head = rows[i]["region_start"] == true;
            let tail = rows
                .get(i + 1)
                .is_none_or(|next| next["region_start"] == true);
            assert!(
                head || tail,
                "row {i} ({}) is empty inside a region: {row_totals:?}",
                rows[i]
            );
        }
    }
    let busy: Vec<f64> = row_totals.iter().copied().filter(|t| *t > 0.0).collect();
    assert!(busy.len() >= 4, "{row_totals:?}");
    let mean = busy.iter().sum::<f64>() / busy.len() as f64;
    within(&busy, mean, "salted heatmap row");
}

#[test]
fn numbers_kept_outside_the_database_show_on_every_surface() {
    use basalt_info::prometheus::Kind;
    use basalt_info::{ExtraGroup, ExtraSample};
    use std::sync::atomic::{AtomicU64, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let counter = Arc::new(AtomicU64::new(7));
    let read = Arc::clone(&counter);
    let reader: basalt_info::ExtraMetrics = Arc::new(move || ExtraGroup {
        key: "replication_sink".into(),
        title: "Replication <sink>".into(),
        samples: vec![ExtraSample {
            name: "basalt_replication_sink_batches_total".into(),
            key: "batches".into(),
            label: "Batches applied".into(),
            kind: Kind::Counter,
            help: "Batches.".into(),
            value: read.load(Ordering::SeqCst) as f64,
        }],
    });
    let server = InfoServer::listen(&InfoConfig {
        port: 0,
        ..InfoConfig::default()
    })
    .unwrap()
    .serve_with(db.clone(), vec![reader])
    .unwrap();
    let addr = server.local_addr();
    let families = parse_exposition(&request(addr, "GET", "/metrics").body);
    assert_eq!(
        families["basalt_replication_sink_batches_total"].0,
        "counter"
    );
    assert_eq!(
        value_of(&families, "basalt_replication_sink_batches_total"),
        7.0
    );
    counter.store(9, Ordering::SeqCst);
    let metrics: Value =
        serde_json::from_str(&request(addr, "GET", "/api/server-metrics").body).unwrap();
    assert_eq!(metrics["replication_sink"]["batches"], 9.0);
    assert!(
        metrics["latencies"].is_array(),
        "the database's numbers stay"
    );
    let page = request(addr, "GET", "/").body;
    assert!(page.contains("<h2>Replication &lt;sink&gt;</h2>"), "{page}");
    assert!(page.contains("id=\"replication_sink\""));
    assert!(page.contains("<th>Batches applied</th><td>9</td>"));
    server.shutdown();
    db.close().unwrap();
}
