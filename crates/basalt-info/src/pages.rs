//! The HTML pages, each drawn from the value its `/api/...` twin serves.
//! Server-rendered, no script: sorting the regions table is a link per
//! column header (`?sort=&order=`), the heatmap is inline SVG and its
//! metric switch is three links.

use std::fmt::Write as _;

use basalt::Database;

use crate::heatmap::{self, range_text, Heatmap, Metric};
use crate::html::{self, bytes, escape, page, rate, url_component};
use crate::model::{RegionRow, Servers, Status, TableDetail, TableSummary, REGION_COLUMNS};
use crate::routes::{Failure, Query};

/// The status page.
pub fn status(s: &Status, extras: &[crate::ExtraGroup]) -> String {
    let mut body = String::new();
    body.push_str(&html::pairs(
        "server",
        &[
            ("Version", s.version.clone()),
            (
                "Server",
                s.server
                    .clone()
                    .unwrap_or_else(|| "this process (one node)".into()),
            ),
            ("Started", html::timestamp(s.started_at_ms)),
            ("Uptime", html::duration(s.uptime_seconds)),
            ("Tables", s.tables.to_string()),
            ("Regions", s.regions.to_string()),
            ("Regions not open", s.regions_not_open.to_string()),
            ("Corruption errors", s.corruption_errors.to_string()),
        ],
    ));
    body.push_str("<h2>Requests</h2>");
    body.push_str(&html::pairs(
        "requests",
        &[
            ("Requests/s (last minute)", rate(s.requests_per_second)),
            ("Reads/s", rate(s.read_requests_per_second)),
            ("Writes/s", rate(s.write_requests_per_second)),
            ("Reads served", s.read_requests.to_string()),
            ("Writes applied", s.write_requests.to_string()),
        ],
    ));
    body.push_str("<h2>Memory</h2>");
    let c = &s.memory.block_cache;
    let limit = if s.memory.memstore_limit_bytes == 0 {
        "-".to_string()
    } else {
        bytes(s.memory.memstore_limit_bytes)
    };
    body.push_str(&html::pairs(
        "memory",
        &[
            ("Memstores", bytes(s.memory.memstore_bytes)),
            ("Memstore limit", limit),
            (
                "Block cache",
                format!("{} of {}", bytes(c.bytes), bytes(c.capacity_bytes)),
            ),
            ("Block cache blocks", c.blocks.to_string()),
            (
                "Block cache hits / misses",
                format!(
                    "{} / {} ({:.1}% hits)",
                    c.hits,
                    c.misses,
                    c.hit_ratio * 100.0
                ),
            ),
            ("Block cache evictions", c.evictions.to_string()),
        ],
    ));
    if let Some(f) = &s.memory.file_cache {
        body.push_str("<h2>Disk cache of object storage</h2>");
        body.push_str(&html::pairs(
            "file-cache",
            &[
                (
                    "Cached",
                    format!("{} of {}", bytes(f.bytes), bytes(f.capacity_bytes)),
                ),
                ("Parts cached", f.parts.to_string()),
                (
                    "Hits / misses (parts)",
                    format!(
                        "{} / {} ({:.1}% hits)",
                        f.hits,
                        f.misses,
                        f.hit_ratio * 100.0
                    ),
                ),
                ("Read from the cache", bytes(f.hit_bytes)),
                ("Fetched from object storage", bytes(f.fetched_bytes)),
                ("Evictions", f.evictions.to_string()),
                ("Damaged parts dropped", f.discarded.to_string()),
            ],
        ));
    }
    body.push_str("<h2>Write-ahead log and background work</h2>");
    body.push_str(&html::pairs(
        "wal",
        &[
            ("WAL appends", s.wal.appends.to_string()),
            ("WAL syncs", s.wal.syncs.to_string()),
            ("WAL bytes written", bytes(s.wal.bytes_written)),
            ("Flush queue", s.flush_queue.to_string()),
            ("Compaction queue", s.compaction_queue.to_string()),
        ],
    ));
    body.push_str("<h2>Gateways</h2>");
    if s.gateways.is_empty() {
        body.push_str("<p class=\"muted\">No gateway registered (an embedded database).</p>");
    } else {
        body.push_str("<table id=\"gateways\"><thead><tr><th>Protocol</th><th>Address</th></tr></thead><tbody>");
        for g in &s.gateways {
            let _ = write!(
                body,
                "<tr><td>{}</td><td><code>{}</code></td></tr>",
                escape(&g.protocol),
                escape(&g.address)
            );
        }
        body.push_str("</tbody></table>");
    }
    for group in extras {
        let _ = write!(body, "<h2>{}</h2>", escape(&group.title));
        let rows: Vec<(&str, String)> = group
            .samples
            .iter()
            .map(|sample| (sample.label.as_str(), number(sample.value)))
            .collect();
        body.push_str(&html::pairs(&group.key, &rows));
    }
    body.push_str("<p class=\"muted\">JSON: <a href=\"/api/status\">/api/status</a>, <a href=\"/api/server-metrics\">/api/server-metrics</a>; Prometheus: <a href=\"/metrics\">/metrics</a>.</p>");
    page("Status", "/", &body)
}

/// A number as text: whole numbers without a fraction.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value:.3}")
    }
}

fn family_options(t: &TableSummary) -> String {
    let mut out = String::new();
    for f in &t.families {
        let options: Vec<String> = f
            .options
            .iter()
            .map(|(k, v)| format!("{} =&gt; {}", escape(k), escape(v)))
            .collect();
        let _ = write!(
            out,
            "<div class=\"family\"><code>{{NAME =&gt; {}, {}}}</code></div>",
            escape(&f.name),
            options.join(", ")
        );
    }
    out
}

fn table_link(name: &str) -> String {
    format!(
        "<a href=\"/table/{}\">{}</a>",
        url_component(name),
        escape(name)
    )
}

/// The tables page: every table with its families and totals.
pub fn tables(tables: &[TableSummary]) -> String {
    let mut body = String::new();
    if tables.is_empty() {
        body.push_str("<p class=\"muted\">No tables.</p>");
    }
    body.push_str(
        "<table id=\"tables\"><thead><tr><th>Table</th><th>Enabled</th><th>Regions</th>\
         <th>Store files</th><th>Store file size</th><th>Memstore</th><th>Requests/s</th>\
         <th>Reads</th><th>Writes</th><th>Families</th></tr></thead><tbody>",
    );
    for t in tables {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            table_link(&t.name),
            t.enabled,
            t.regions,
            t.store_files,
            bytes(t.store_file_bytes),
            bytes(t.memstore_bytes),
            rate(t.requests_per_second),
            t.read_requests,
            t.write_requests,
            family_options(t)
        );
    }
    body.push_str("</tbody></table>");
    page("Tables", "/tables", &body)
}

/// How the regions table is sorted (`?sort=<column>&order=asc|desc`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionSort {
    /// A key of [`REGION_COLUMNS`].
    pub column: String,
    /// Descending.
    pub descending: bool,
}

impl RegionSort {
    /// Reads `sort` and `order`; default key order, ascending; numbers
    /// sort busiest first unless `order=asc`.
    pub fn from_query(query: &mut Query) -> Result<RegionSort, Failure> {
        let column = query.take("sort").unwrap_or_else(|| "start_key".into());
        if !REGION_COLUMNS.iter().any(|(k, _)| *k == column) {
            let known: Vec<&str> = REGION_COLUMNS.iter().map(|(k, _)| *k).collect();
            return Err(Failure::bad_request(format!(
                "sort column {column:?} is not one of {}",
                known.join(", ")
            )));
        }
        let descending = match query.take("order").as_deref() {
            None => !is_text_column(&column),
            Some("asc") => false,
            Some("desc") => true,
            Some(other) => {
                return Err(Failure::bad_request(format!(
                    "order {other:?} is not asc or desc"
                )))
            }
        };
        Ok(RegionSort { column, descending })
    }
}

fn is_text_column(column: &str) -> bool {
    matches!(column, "start_key" | "end_key" | "encoded_name" | "state")
}

/// Sorts the regions as asked (a stable sort: ties stay in key order).
pub fn sort_regions(detail: &mut TableDetail, sort: &RegionSort, _db: &Database) {
    detail.region_list.sort_by(|a, b| {
        let order = RegionRow::compare(&sort.column, a, b).unwrap_or(std::cmp::Ordering::Equal);
        if sort.descending {
            order.reverse()
        } else {
            order
        }
    });
}

/// A table's page: totals, families and the regions table.
pub fn table(t: &TableDetail, sort: &RegionSort) -> String {
    let s = &t.summary;
    let path = format!("/table/{}", url_component(&s.name));
    let mut body = String::new();
    let _ = write!(
        body,
        "<p><a id=\"heatmap-link\" href=\"{path}/heatmap\">Key heatmap</a> \u{00b7} \
         JSON: <a href=\"/api/tables/{name}\">/api/tables/{ename}</a></p>",
        name = url_component(&s.name),
        ename = escape(&s.name),
    );
    body.push_str(&html::pairs(
        "summary",
        &[
            ("Enabled", s.enabled.to_string()),
            ("Regions", s.regions.to_string()),
            ("Store files", s.store_files.to_string()),
            ("Store file size", bytes(s.store_file_bytes)),
            ("Memstore", bytes(s.memstore_bytes)),
            ("Requests/s", rate(s.requests_per_second)),
            (
                "Reads / filtered reads / writes",
                format!(
                    "{} / {} / {}",
                    s.read_requests, s.filtered_read_requests, s.write_requests
                ),
            ),
        ],
    ));
    body.push_str("<h2>Families</h2>");
    body.push_str(&family_options(s));
    body.push_str("<h2>Regions</h2><table id=\"regions\"><thead><tr>");
    for (key, header) in REGION_COLUMNS {
        let (order, mark) = if sort.column == *key {
            if sort.descending {
                ("asc", " \u{25bc}")
            } else {
                ("desc", " \u{25b2}")
            }
        } else if is_text_column(key) {
            ("asc", "")
        } else {
            ("desc", "")
        };
        let _ = write!(
            body,
            "<th data-column=\"{key}\"><a href=\"{path}?sort={key}&amp;order={order}\">{}</a>{mark}</th>",
            escape(header)
        );
    }
    body.push_str("</tr></thead><tbody>");
    for r in &t.region_list {
        // "-": known to be nothing (no compaction runs); "—": not known
        // here (another server's region without that column in its report).
        let comp = match (r.load_from, r.compaction_progress) {
            (_, Some(p)) => format!("{:.0}%", p * 100.0),
            ("here", None) => "-".to_string(),
            _ => UNKNOWN.to_string(),
        };
        let _ = write!(
            body,
            "<tr><td class=\"key\">{}</td><td class=\"key\">{}</td><td title=\"{}\"><code>{}</code></td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>",
            escape(&r.start_key),
            escape(&r.end_key),
            escape(&r.name),
            escape(&r.encoded_name),
            known(r.requests_per_second, rate),
            known(r.read_requests_per_second, rate),
            known(r.filtered_read_requests_per_second, rate),
            known(r.write_requests_per_second, rate),
            known(r.store_file_bytes, bytes),
            known(r.store_files, |n| n.to_string()),
            known(r.memstore_bytes, bytes),
            comp,
            known(r.last_major_compaction_ms, html::timestamp),
            escape(&r.state),
        );
    }
    body.push_str("</tbody></table>");
    if s.regions_without_load > 0 {
        let _ = write!(
            body,
            "<p class=\"muted\" id=\"no-load\">{} region(s) show {UNKNOWN}: their server sent the master no load for this page (see <a href=\"/servers\">Servers</a>).</p>",
            s.regions_without_load
        );
    }
    page(&format!("Table {}", s.name), "/tables", &body)
}

/// How a value not known here is shown.
const UNKNOWN: &str = "\u{2014}";

/// `value` drawn by `show`, or "—" when it is not known.
fn known<T>(value: Option<T>, show: impl Fn(T) -> String) -> String {
    value.map_or_else(|| UNKNOWN.to_string(), show)
}

/// The servers page: the live region servers with their load, the
/// backup masters and the dead servers.
pub fn servers(s: &Servers) -> String {
    let mut body = String::new();
    if let Some(error) = &s.error {
        let _ = write!(body, "<p id=\"error\">{}</p>", escape(error));
    }
    if s.cluster {
        body.push_str(&html::pairs(
            "masters",
            &[
                (
                    "Active master",
                    s.master.clone().unwrap_or_else(|| UNKNOWN.into()),
                ),
                (
                    "Backup masters",
                    if s.backup_masters.is_empty() {
                        "none".into()
                    } else {
                        s.backup_masters.join(", ")
                    },
                ),
            ],
        ));
    } else {
        body.push_str("<p class=\"muted\">One process: it is the only server.</p>");
    }
    body.push_str("<h2>Region servers</h2>");
    body.push_str(
        "<table id=\"servers\"><thead><tr><th>Server</th><th>Regions</th><th>Requests/s</th>\
         <th>Reads/s</th><th>Writes/s</th><th>Reads</th><th>Filtered reads</th><th>Writes</th>\
         <th>Memstore</th><th>Store files</th><th>Store file size</th></tr></thead><tbody>",
    );
    for server in &s.servers {
        let name = if server.this_process {
            format!("{} (this process)", escape(&server.name))
        } else {
            escape(&server.name)
        };
        let _ = write!(
            body,
            "<tr><td><code>{name}</code></td><td class=\"n\">{}</td>",
            server.regions
        );
        match &server.load {
            Some(l) => {
                let _ = write!(
                    body,
                    "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                     <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                     <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                    rate(l.requests_per_second),
                    known(l.read_requests_per_second, rate),
                    known(l.write_requests_per_second, rate),
                    l.read_requests,
                    known(l.filtered_read_requests, |n| n.to_string()),
                    l.write_requests,
                    bytes(l.memstore_bytes),
                    l.store_files,
                    bytes(l.store_file_bytes),
                );
            }
            None => body.push_str(
                "<td colspan=\"9\" class=\"muted no-report\">no report (the server did not answer the master in time)</td></tr>",
            ),
        }
    }
    body.push_str("</tbody></table>");
    if s.cluster {
        body.push_str("<h2>Dead servers</h2>");
        if s.dead_servers.is_empty() {
            body.push_str("<p class=\"muted\" id=\"dead-servers\">None.</p>");
        } else {
            body.push_str("<ul id=\"dead-servers\">");
            for d in &s.dead_servers {
                let _ = write!(body, "<li><code>{}</code></li>", escape(d));
            }
            body.push_str("</ul>");
        }
    }
    body.push_str("<p class=\"muted\">JSON: <a href=\"/api/servers\">/api/servers</a>.</p>");
    page("Servers", "/servers", &body)
}

/// The heatmap page: the metric switch, the SVG, the hottest ranges and
/// each region's share.
pub fn heatmap(map: &Heatmap) -> String {
    let name = url_component(&map.table);
    let mut body = String::new();
    let _ = write!(
        body,
        "<p><a href=\"/table/{name}\">Back to the table</a> \u{00b7} JSON: \
         <a href=\"/api/tables/{name}/heatmap?metric={m}\">/api/tables/{ename}/heatmap?metric={m}</a></p>",
        ename = escape(&map.table),
        m = map.metric.name()
    );
    body.push_str("<nav class=\"switch\" id=\"metric-switch\">Colour: ");
    for m in Metric::ALL {
        let class = if m == map.metric { " class=\"on\"" } else { "" };
        let _ = write!(
            body,
            "<a href=\"/table/{name}/heatmap?metric={n}\"{class}>{n}</a>",
            n = m.name()
        );
    }
    body.push_str("</nav>");
    body.push_str(
        "<p class=\"muted\">Key space top (table start) to bottom (table end), one row per key range; \
         one column per minute; lines mark where regions start. Brighter is busier.</p>",
    );
    if map.minutes.is_empty() {
        body.push_str(
            "<p id=\"no-load\" class=\"muted\">No key load recorded yet for this table.</p>",
        );
    }
    // The figure (caption and map) is what the docs' screenshots show.
    let _ = write!(
        body,
        "<figure id=\"heatmap-figure\" style=\"margin:8px 0\"><figcaption><strong>{}</strong>: {} per key range per minute</figcaption>{}</figure>",
        escape(&map.table),
        map.metric.name(),
        heatmap::svg(map)
    );
    let metric = map.metric.name();
    let _ = write!(
        body,
        "<h2>Hottest ranges (by {metric})</h2><table id=\"hottest\"><thead><tr><th>#</th><th>Key range</th>\
         <th>Region</th><th>Reads</th><th>Writes</th><th>Bytes</th></tr></thead><tbody>"
    );
    for (i, h) in map.hottest.iter().enumerate() {
        let _ = write!(
            body,
            "<tr><td class=\"n\">{}</td><td class=\"key\">{}</td><td><code>{}</code></td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            i + 1,
            escape(&range_text(&h.start_key, &h.end_key)),
            escape(&h.region),
            h.reads,
            h.writes,
            h.bytes
        );
    }
    body.push_str("</tbody></table>");
    let total: u64 = map
        .regions
        .iter()
        .map(|r| pick(map.metric, r.reads, r.writes, r.bytes))
        .sum();
    body.push_str(
        "<h2>Per region</h2><table id=\"region-totals\"><thead><tr><th>Key range</th><th>Region</th>\
         <th>Reads</th><th>Writes</th><th>Bytes</th><th>Share</th></tr></thead><tbody>",
    );
    for r in &map.regions {
        let share = if total == 0 {
            0.0
        } else {
            pick(map.metric, r.reads, r.writes, r.bytes) as f64 * 100.0 / total as f64
        };
        let _ = write!(
            body,
            "<tr><td class=\"key\">{}</td><td><code>{}</code></td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{share:.1}%</td></tr>",
            escape(&range_text(&r.start_key, &r.end_key)),
            escape(&r.region),
            r.reads,
            r.writes,
            r.bytes
        );
    }
    body.push_str("</tbody></table>");
    page(&format!("Key heatmap of {}", map.table), "/tables", &body)
}

fn pick(metric: Metric, reads: u64, writes: u64, bytes: u64) -> u64 {
    match metric {
        Metric::Reads => reads,
        Metric::Writes => writes,
        Metric::Bytes => bytes,
    }
}

/// The load-split page: the recent decisions, one row each, the columns
/// being the fields the core reports.
pub fn load_splits(events: &[serde_json::Value]) -> String {
    let mut body = String::new();
    body.push_str(
        "<p class=\"muted\">Regions split by load (not size): each decision, split or refused, with its reason, newest last. \
         JSON: <a href=\"/api/load-splits\">/api/load-splits</a>.</p>",
    );
    let mut columns: Vec<String> = Vec::new();
    for e in events {
        if let Some(object) = e.as_object() {
            for k in object.keys() {
                if !columns.contains(k) {
                    columns.push(k.clone());
                }
            }
        }
    }
    if events.is_empty() {
        body.push_str("<p id=\"no-events\">No load-based split decision yet.</p>");
    }
    body.push_str("<table id=\"load-splits\"><thead><tr>");
    for c in &columns {
        let _ = write!(body, "<th>{}</th>", escape(c));
    }
    body.push_str("</tr></thead><tbody>");
    for e in events {
        body.push_str("<tr>");
        for c in &columns {
            let cell = match e.get(c) {
                None | Some(serde_json::Value::Null) => String::new(),
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(v) if (c.ends_with("_ms") || c.ends_with("_millis")) && v.is_i64() => {
                    html::timestamp(v.as_i64().unwrap_or(0))
                }
                Some(v) => v.to_string(),
            };
            let _ = write!(body, "<td>{}</td>", escape(&cell));
        }
        body.push_str("</tr>");
    }
    body.push_str("</tbody></table>");
    page("Load-based splits", "/load-splits", &body)
}
