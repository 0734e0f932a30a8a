//! Output in the HBase shell's look: `ROW  COLUMN+CELL` listings, bytes as
//! `Bytes.toStringBinary` prints them, `{NAME => 'cf', ...}` family lines.
//!
//! Timestamps print as milliseconds since the epoch, as HBase shells before
//! 2.4 did (later ones print an ISO time); a number survives copy and paste
//! back into `get ... TIMESTAMP => ...`.

use std::time::Duration;

use basalt::admin::{CellReply, ClusterReply, FamilyInfo, ServerReply};
use basalt::keys::advisor;
use basalt::{ColumnFamilyDescriptor, TableDescriptor};

/// Width of the first column (row key or column name), leading space
/// included, before the second starts.
pub const FIRST_COLUMN: usize = 34;

/// Bytes as HBase's `Bytes.toStringBinary` shows them: letters, digits,
/// space and most punctuation as they are, anything else as `\xNN` (the
/// gateways' one implementation).
pub use basalt::gateways::text::escape_bytes as binary;

/// A two-column line: ` first    second`, the first padded to
/// [`FIRST_COLUMN`] (a longer one pushes the second out by one space).
pub fn two_columns(first: &str, second: &str) -> String {
    let first = format!(" {first}");
    if first.chars().count() >= FIRST_COLUMN {
        format!("{first} {second}")
    } else {
        format!("{first:<FIRST_COLUMN$} {second}")
    }
}

/// The header line of a listing (`ROW`/`COLUMN+CELL`, `COLUMN`/`CELL`).
pub fn header(first: &str, second: &str) -> String {
    format!("{first:<FIRST_COLUMN$} {second}")
}

/// The `column=cf:q, timestamp=..., value=...` part of a scan line.
pub fn scan_cell(c: &CellReply) -> String {
    format!(
        "column={}:{}, {}",
        binary(&c.family),
        binary(&c.qualifier),
        get_cell(c)
    )
}

/// The `timestamp=..., value=...` part of a get line (`type=...` instead
/// of the value for delete markers of raw reads).
pub fn get_cell(c: &CellReply) -> String {
    if c.cell_type == "Put" {
        format!("timestamp={}, value={}", c.timestamp, binary(&c.value))
    } else {
        format!("timestamp={}, type={}", c.timestamp, c.cell_type)
    }
}

/// `Took 0.0123 seconds`.
pub fn took(elapsed: Duration) -> String {
    format!("Took {:.4} seconds", elapsed.as_secs_f64())
}

/// The schema warnings of a table whose families are `(name, options)`
/// (options by HBase name, as `create` takes them and `describe` prints
/// them), as `WARNING: ...` lines (`basalt::keys::advisor::schema_warnings`).
pub fn schema_warnings<'a>(
    table: &str,
    families: impl IntoIterator<Item = (&'a str, Vec<(&'a str, &'a str)>)>,
) -> Vec<String> {
    let mut descriptor = TableDescriptor::new(table);
    for (name, options) in families {
        let mut family = ColumnFamilyDescriptor::new(name);
        for (k, v) in options {
            // The server accepted the options; one it accepts and this
            // build does not know only loses its warning.
            let _ = family.set_option(k, v);
        }
        descriptor = descriptor.family(family);
    }
    advisor::schema_warnings(&descriptor)
        .into_iter()
        .map(|w| format!("WARNING: {w}"))
        .collect()
}

/// `1 row(s)`.
pub fn rows(n: u64) -> String {
    format!("{n} row(s)")
}

/// A Ruby array of strings: `["a", "b"]`, bytes escaped.
pub fn ruby_array<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> String {
    let items: Vec<String> = items
        .into_iter()
        .map(|b| format!("\"{}\"", binary(b)))
        .collect();
    format!("[{}]", items.join(", "))
}

/// A family as `describe` prints it: `{NAME => 'cf', BLOOMFILTER => 'ROW', ...}`.
pub fn family(f: &FamilyInfo) -> String {
    let mut parts = vec![format!("NAME => '{}'", f.name)];
    for (k, v) in &f.options {
        let v = if k == "TTL" { ttl(v) } else { v.clone() };
        parts.push(format!("{k} => '{v}'"));
    }
    format!("{{{}}}", parts.join(", "))
}

/// An index as `describe` prints it, in the words `create_index` takes:
/// `{NAME => 'by_buyer', COLUMNS => ['o:buyer', 'o:ts/REVERSED'], COVER => ['o:total'], STATE => 'ACTIVE'}`.
pub fn index(index: &basalt::IndexDescriptor) -> String {
    let quoted = |items: Vec<String>| {
        items
            .iter()
            .map(|i| format!("'{i}'"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let columns = quoted(index.columns.iter().map(ToString::to_string).collect());
    let mut parts = vec![
        format!("NAME => '{}'", index.name),
        format!("COLUMNS => [{columns}]"),
    ];
    if !index.covered.is_empty() {
        let covered = quoted(
            index
                .covered
                .iter()
                .map(|(f, q)| {
                    format!(
                        "{}:{}",
                        String::from_utf8_lossy(f),
                        String::from_utf8_lossy(q)
                    )
                })
                .collect(),
        );
        parts.push(format!("COVER => [{covered}]"));
    }
    let state = match index.state {
        basalt::IndexState::Building => "BUILDING",
        basalt::IndexState::Active => "ACTIVE",
    };
    parts.push(format!("STATE => '{state}'"));
    format!("{{{}}}", parts.join(", "))
}

/// TTL seconds as HBase describes them: `86400 SECONDS (1 DAY)`.
fn ttl(value: &str) -> String {
    let Ok(seconds) = value.parse::<u64>() else {
        return value.to_string();
    };
    let mut rest = seconds;
    let mut parts = Vec::new();
    for (unit, size) in [
        ("DAY", 86_400),
        ("HOUR", 3_600),
        ("MINUTE", 60),
        ("SECOND", 1),
    ] {
        let n = rest / size;
        rest %= size;
        if n > 0 {
            parts.push(format!("{n} {unit}{}", if n == 1 { "" } else { "S" }));
        }
    }
    format!("{seconds} SECONDS ({})", parts.join(" "))
}

/// A table with a header, columns right-aligned and separated by ` | `
/// (HBase's `list_regions` look).
pub fn grid(headers: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = String::new();
        for (cell, w) in cells.iter().zip(&widths) {
            s.push_str(&format!(" {cell:>w$} |"));
        }
        s
    };
    let mut out = vec![line(headers.iter().map(|h| h.to_string()).collect())];
    out.push(line(widths.iter().map(|w| "-".repeat(*w)).collect()));
    for row in rows {
        out.push(line(row.clone()));
    }
    out
}

/// A server name as HBase's `status` prints it: `host:port startcode`
/// (anything that is not `host,port,startcode` as it is).
pub fn server(name: &str) -> String {
    match basalt::cluster::ServerName::parse(name) {
        Ok(n) => format!("{} {}", n.address(), n.start_code),
        Err(_) => name.to_string(),
    }
}

/// `status 'summary'` of a cluster: HBase's one line.
pub fn cluster_summary(c: &ClusterReply) -> String {
    let regions: usize = c.servers.iter().map(|s| s.regions.len()).sum();
    let average = if c.servers.is_empty() {
        0.0
    } else {
        regions as f64 / c.servers.len() as f64
    };
    format!(
        "1 active master, {} backup masters, {} servers, {} dead, {average:.4} average load",
        c.backup_masters.len(),
        c.servers.len(),
        c.dead_servers.len()
    )
}

/// HBase's backup-masters lines: the count, then each standby.
fn backup_masters(c: &ClusterReply) -> Vec<String> {
    let mut out = vec![format!("{} backup masters", c.backup_masters.len())];
    out.extend(
        c.backup_masters
            .iter()
            .map(|b| format!("    {}", server(b))),
    );
    out
}

/// The load line of a server: what it reports, or only its region count
/// when the answering server does not know its load.
fn server_load(s: &ServerReply) -> String {
    match &s.load {
        Some(l) => format!(
            "requestsPerSecond={:.1}, numberOfOnlineRegions={}, numberOfStorefiles={}, storefileSizeMB={}, memstoreSizeMB={}, readRequestsCount={}, writeRequestsCount={}",
            l.requests_per_second,
            s.regions.len(),
            l.store_files,
            l.store_file_bytes >> 20,
            l.memstore_bytes >> 20,
            l.read_requests,
            l.write_requests
        ),
        None => format!("numberOfOnlineRegions={}", s.regions.len()),
    }
}

/// `status 'simple'` of a cluster, in HBase's layout: the master, each
/// live server with its load, the dead servers, the aggregate.
pub fn cluster_simple(c: &ClusterReply) -> Vec<String> {
    let mut out = vec![format!("active master:  {}", server(&c.master))];
    out.extend(backup_masters(c));
    out.push(format!("{} live servers", c.servers.len()));
    for s in &c.servers {
        out.push(format!("    {}", server(&s.name)));
        out.push(format!("        {}", server_load(s)));
    }
    out.push(format!("{} dead servers", c.dead_servers.len()));
    for d in &c.dead_servers {
        out.push(format!("    {}", server(d)));
    }
    let requests: u64 = c
        .servers
        .iter()
        .filter_map(|s| s.load.as_ref())
        .map(|l| l.read_requests + l.write_requests)
        .sum();
    let regions: usize = c.servers.iter().map(|s| s.regions.len()).sum();
    out.push(format!("Aggregate load: {requests}, regions: {regions}"));
    out
}

/// `status 'detailed'` of a cluster, in HBase's layout: regions in
/// transition first, then the master, each live server with its load and
/// every region it holds (quoted full names; their loads where known),
/// then the dead servers; Basalt adds the master's unfinished procedures.
pub fn cluster_detailed(c: &ClusterReply) -> Vec<String> {
    let mut out = vec![
        format!("version {}", env!("CARGO_PKG_VERSION")),
        format!("{} regionsInTransition", c.in_transition.len()),
    ];
    for t in &c.in_transition {
        out.push(format!(
            "    {} state={}, table={}, server={}",
            t.region,
            t.state,
            t.table,
            t.server
                .as_deref()
                .map_or_else(|| "none".to_string(), server)
        ));
    }
    out.push(format!("active master:  {}", server(&c.master)));
    out.extend(backup_masters(c));
    out.push(format!("{} live servers", c.servers.len()));
    for s in &c.servers {
        out.push(format!("    {}", server(&s.name)));
        out.push(format!("        {}", server_load(s)));
        for r in &s.regions {
            out.push(format!("        \"{}\"", binary(&r.name)));
            if s.load.is_some() {
                out.push(format!(
                    "            numberOfStorefiles={}, storefileSizeMB={}, memstoreSizeMB={}, readRequestsCount={}, writeRequestsCount={}",
                    r.store_files,
                    r.store_file_bytes >> 20,
                    r.memstore_bytes >> 20,
                    r.read_requests,
                    r.write_requests
                ));
            }
        }
    }
    out.push(format!("{} dead servers", c.dead_servers.len()));
    for d in &c.dead_servers {
        out.push(format!("    {}", server(d)));
    }
    out.push(format!("{} procedures", c.procedures.len()));
    for p in &c.procedures {
        out.push(format!("    pid={}: {}", p.id, p.description));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt::admin::{ProcedureReply, RegionInfoReply, ServerLoadReply};
    use basalt::cluster::RegionTransition;
    use bytes::Bytes;

    fn region(name: &str) -> RegionInfoReply {
        RegionInfoReply {
            name: Bytes::from(name.to_string()),
            encoded_name: name.rsplit('.').nth(1).unwrap_or(name).to_string(),
            start_key: Bytes::new(),
            end_key: Bytes::new(),
            store_files: 2,
            store_file_bytes: 3 << 20,
            memstore_bytes: 0,
            read_requests: 5,
            write_requests: 6,
            state: "OPEN".into(),
            state_reason: None,
            ..RegionInfoReply::default()
        }
    }

    fn cluster() -> ClusterReply {
        ClusterReply {
            backup_masters: Vec::new(),
            master: "m1,16000,1".into(),
            servers: vec![
                ServerReply {
                    name: "rs1,16020,11".into(),
                    regions: vec![region("t,,1.aaa."), region("t,m,1.bbb.")],
                    load: Some(ServerLoadReply {
                        requests_per_second: 1.5,
                        read_requests: 5,
                        write_requests: 6,
                        memstore_bytes: 0,
                        store_files: 2,
                        store_file_bytes: 3 << 20,
                        ..ServerLoadReply::default()
                    }),
                },
                ServerReply {
                    name: "rs2,16020,12".into(),
                    regions: vec![region("t,x,1.ccc.")],
                    load: None,
                },
            ],
            dead_servers: vec!["rs3,16020,9".into()],
            in_transition: vec![RegionTransition {
                region: "ddd".into(),
                table: "t".into(),
                state: "OPENING".into(),
                server: Some("rs2,16020,12".into()),
            }],
            procedures: vec![ProcedureReply {
                id: 7,
                description: "MoveRegion ddd".into(),
            }],
            catalog_version: 3,
        }
    }

    #[test]
    fn the_summary_counts_servers_and_averages_regions() {
        assert_eq!(
            cluster_summary(&cluster()),
            "1 active master, 0 backup masters, 2 servers, 1 dead, 1.5000 average load"
        );
    }

    #[test]
    fn the_simple_status_lists_each_server_with_its_load() {
        let out = cluster_simple(&cluster());
        assert_eq!(out[0], "active master:  m1:16000 1");
        assert_eq!(out[2], "2 live servers");
        assert_eq!(out[3], "    rs1:16020 11");
        assert!(out[4].starts_with("        requestsPerSecond=1.5, numberOfOnlineRegions=2,"));
        assert_eq!(out[6], "        numberOfOnlineRegions=1");
        assert_eq!(out[7], "1 dead servers");
        assert_eq!(out[8], "    rs3:16020 9");
        assert_eq!(out[9], "Aggregate load: 11, regions: 3");
    }

    #[test]
    fn the_statuses_count_and_list_the_standby_masters() {
        let mut c = cluster();
        c.backup_masters = vec!["m2,16000,4".into(), "m3,16000,5".into()];
        assert!(cluster_summary(&c).starts_with("1 active master, 2 backup masters, 2 servers"));
        for out in [cluster_simple(&c), cluster_detailed(&c)] {
            let at = out.iter().position(|l| l == "2 backup masters").unwrap();
            assert_eq!(out[at + 1], "    m2:16000 4");
            assert_eq!(out[at + 2], "    m3:16000 5");
            assert_eq!(out[at + 3], "2 live servers");
        }
    }

    #[test]
    fn the_detailed_status_lists_transitions_servers_regions_and_procedures() {
        let out = cluster_detailed(&cluster());
        let expected = [
            "1 regionsInTransition",
            "    ddd state=OPENING, table=t, server=rs2:16020 12",
            "active master:  m1:16000 1",
            "0 backup masters",
            "2 live servers",
            "    rs1:16020 11",
        ];
        assert_eq!(&out[1..7], &expected);
        assert_eq!(out[8], "        \"t,,1.aaa.\"");
        assert!(out[9].starts_with("            numberOfStorefiles=2, storefileSizeMB=3,"));
        // A server whose load is not known shows its regions without loads.
        let rs2 = out.iter().position(|l| l == "    rs2:16020 12").unwrap();
        assert_eq!(out[rs2 + 2], "        \"t,x,1.ccc.\"");
        assert_eq!(out[rs2 + 3], "1 dead servers");
        assert_eq!(out.last().unwrap(), "    pid=7: MoveRegion ddd");
    }

    #[test]
    fn bytes_print_like_to_string_binary() {
        assert_eq!(binary(b"row-1 a:b"), "row-1 a:b");
        assert_eq!(binary(b"\x00\xff\\\n"), "\\x00\\xFF\\x5C\\x0A");
    }

    #[test]
    fn ttl_is_spelled_out() {
        assert_eq!(ttl("86400"), "86400 SECONDS (1 DAY)");
        assert_eq!(
            ttl("90061"),
            "90061 SECONDS (1 DAY 1 HOUR 1 MINUTE 1 SECOND)"
        );
        assert_eq!(ttl("FOREVER"), "FOREVER");
    }

    #[test]
    fn columns_line_up() {
        assert_eq!(two_columns("r1", "x").find('x'), Some(FIRST_COLUMN + 1));
        assert_eq!(
            header("ROW", "COLUMN+CELL").find('C'),
            Some(FIRST_COLUMN + 1)
        );
        let long = "r".repeat(40);
        assert_eq!(two_columns(&long, "x"), format!(" {long} x"));
    }

    #[test]
    fn schema_warnings_are_warning_lines_and_lean_schemas_have_none() {
        let lean = schema_warnings("t", [("f", vec![("VERSIONS", "5")])]);
        assert!(lean.is_empty(), "{lean:?}");
        let w = schema_warnings(
            "t",
            [
                ("a", vec![]),
                ("b", vec![]),
                ("c", vec![]),
                (
                    "information",
                    vec![("VERSIONS", "1000"), ("TTL", "FOREVER")],
                ),
            ],
        );
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w.iter().all(|l| l.starts_with("WARNING: ")));
        assert!(w[2].contains("1000 versions with TTL FOREVER"));
        let with_ttl = schema_warnings("t", [("f", vec![("VERSIONS", "1000"), ("TTL", "86400")])]);
        assert!(with_ttl.is_empty(), "{with_ttl:?}");
    }
}
