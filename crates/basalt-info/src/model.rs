//! What the pages show, as the JSON API serves it: each `/api/...` answer
//! is one of these types serialized, and each HTML page is drawn from the
//! same value, so the two cannot disagree.
//!
//! Keys and region names are user bytes: they appear as HBase's
//! `Bytes.toStringBinary` text (printable ASCII as is, backslash and every
//! other byte as `\xNN`), which is readable and reversible.

use std::collections::BTreeMap;

use serde::Serialize;

use basalt::admin::FamilyInfo;
use basalt::cluster::{ClusterStatus, MasterAnswer, MasterCall, RegionLoadReport};
use basalt::{Database, RegionSummary};
use basalt_types::cell::escape_bytes;

use crate::routes::Failure;

/// `/api/status`: the server at a glance.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// Basalt's version.
    pub version: String,
    /// Cluster mode: this server's HBase name (`host,port,startcode`);
    /// absent in one process.
    pub server: Option<String>,
    /// When the server started, in milliseconds since the epoch.
    pub started_at_ms: i64,
    /// Seconds since the server started.
    pub uptime_seconds: u64,
    /// Tables.
    pub tables: usize,
    /// Regions across tables.
    pub regions: usize,
    /// Regions not serving (`FAILED_OPEN`, or offline in a cluster).
    pub regions_not_open: usize,
    /// Reads and writes per second over the last minute.
    pub requests_per_second: f64,
    /// Reads per second over the last minute.
    pub read_requests_per_second: f64,
    /// Writes per second over the last minute.
    pub write_requests_per_second: f64,
    /// Gets and scans served since the process started (regions that
    /// left it included).
    pub read_requests: u64,
    /// Row mutations applied since the process started.
    pub write_requests: u64,
    /// Reads that met damaged data since the server started.
    pub corruption_errors: u64,
    /// Memory: memstores and the block cache.
    pub memory: Memory,
    /// The write-ahead log.
    pub wal: Wal,
    /// Flushes waiting to run.
    pub flush_queue: u64,
    /// Compactions waiting to run.
    pub compaction_queue: u64,
    /// The gateways serving this database and their addresses.
    pub gateways: Vec<Gateway>,
}

/// Memory held by memstores and the block cache.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Memory {
    /// Bytes in every memstore of the server.
    pub memstore_bytes: u64,
    /// The global memstore limit (writers are held above it).
    pub memstore_limit_bytes: u64,
    /// The block cache.
    pub block_cache: BlockCache,
    /// The disk cache of object storage; absent when the files are on
    /// local disk (no cache).
    pub file_cache: Option<basalt::metrics::FileCacheMetrics>,
}

/// The block cache shared by every store.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BlockCache {
    /// Lookups that found their block.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Blocks pushed out to make room.
    pub evictions: u64,
    /// Blocks cached now.
    pub blocks: u64,
    /// Bytes cached now.
    pub bytes: u64,
    /// Capacity in bytes.
    pub capacity_bytes: u64,
    /// hits / (hits + misses); 0 before any lookup.
    pub hit_ratio: f64,
}

/// The write-ahead log's counters since the server started.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Wal {
    /// Records appended.
    pub appends: u64,
    /// Syncs to durable storage.
    pub syncs: u64,
    /// Bytes written.
    pub bytes_written: u64,
}

/// One gateway.
#[derive(Debug, Clone, Serialize)]
pub struct Gateway {
    /// `thrift`, `thrift2`, `rest`, `hbase-master`, `hbase-regionserver`,
    /// `info`.
    pub protocol: String,
    /// `host:port`.
    pub address: String,
}

/// A column family and every option, in HBase's order and spelling.
#[derive(Debug, Clone, Serialize)]
pub struct Family {
    /// Family name.
    pub name: String,
    /// Option name to value, as `describe` prints them.
    pub options: BTreeMap<String, String>,
}

impl Family {
    fn of(info: FamilyInfo) -> Family {
        Family {
            name: info.name,
            options: info.options.into_iter().collect(),
        }
    }
}

/// `/api/tables`: one entry per table.
#[derive(Debug, Clone, Serialize)]
pub struct TableSummary {
    /// Table name (`namespace:table` outside the default namespace).
    pub name: String,
    /// Whether it serves requests.
    pub enabled: bool,
    /// Families with every option.
    pub families: Vec<Family>,
    /// Regions.
    pub regions: usize,
    /// Store files over every region and family.
    pub store_files: usize,
    /// Bytes in store files.
    pub store_file_bytes: u64,
    /// Bytes in memstores.
    pub memstore_bytes: u64,
    /// Reads and writes per second over the last minute.
    pub requests_per_second: f64,
    /// Gets and scans served.
    pub read_requests: u64,
    /// Reads whose filter dropped rows or cells.
    pub filtered_read_requests: u64,
    /// Row mutations applied.
    pub write_requests: u64,
    /// Rows looked at by reads.
    pub rows_scanned: u64,
    /// Bytes of cells returned by reads.
    pub bytes_read: u64,
    /// Bytes of cells written.
    pub bytes_written: u64,
    /// Cluster mode: regions whose server sent no load (the sums above
    /// leave them out).
    pub regions_without_load: usize,
}

/// `/api/tables/<name>`: the schema and every region with hbtop's columns.
#[derive(Debug, Clone, Serialize)]
pub struct TableDetail {
    /// The table's summary (families, totals).
    #[serde(flatten)]
    pub summary: TableSummary,
    /// Regions in key order.
    pub region_list: Vec<RegionRow>,
}

/// One region with hbtop's columns (in brackets).
#[derive(Debug, Clone, Serialize)]
pub struct RegionRow {
    /// Position in key order (regions never overlap, so start and end
    /// keys sort alike; their escaped text would not sort as bytes).
    #[serde(skip)]
    pub index: usize,
    /// Full region name (`<table>,<start>,<id>.<encoded>.`).
    pub name: String,
    /// Encoded name (the MD5 hex part).
    pub encoded_name: String,
    /// First row, inclusive (empty: the table's start) [STARTKEY].
    pub start_key: String,
    /// End row, exclusive (empty: the table's end) [ENDKEY].
    pub end_key: String,
    /// `OPEN`, `FAILED_OPEN` or `OFFLINE`.
    pub state: String,
    /// Cluster mode: the server holding it.
    pub server: Option<String>,
    /// Where the load columns come from: `here` (this process holds the
    /// region), `report` (its server reported it to the master for this
    /// page) or `none` (its server did not answer, or the master could not
    /// be asked). A column a source does not carry is null, shown as "—",
    /// never as a 0 that pretends to be data.
    pub load_from: &'static str,
    /// Reads and writes per second over the last minute [#REQ/S].
    pub requests_per_second: Option<f64>,
    /// Reads per second [#READ/S].
    pub read_requests_per_second: Option<f64>,
    /// Filtered reads per second [#FREAD/S].
    pub filtered_read_requests_per_second: Option<f64>,
    /// Writes per second [#WRITE/S].
    pub write_requests_per_second: Option<f64>,
    /// Gets and scans served.
    pub read_requests: Option<u64>,
    /// Reads whose filter dropped rows or cells.
    pub filtered_read_requests: Option<u64>,
    /// Row mutations applied.
    pub write_requests: Option<u64>,
    /// Bytes of cells returned by reads.
    pub bytes_read: Option<u64>,
    /// Bytes of cells written.
    pub bytes_written: Option<u64>,
    /// Bytes in store files [SF].
    pub store_file_bytes: Option<u64>,
    /// Store files [#SF].
    pub store_files: Option<usize>,
    /// Bytes in memstores [MEMSTORE].
    pub memstore_bytes: Option<u64>,
    /// The running compaction's progress, 0.0 to 1.0; absent when none
    /// runs, or not known (`load_from` other than `here`) [%COMP].
    pub compaction_progress: Option<f64>,
    /// When the last major compaction finished, milliseconds since the
    /// epoch; 0 never (since the region opened); null when not known
    /// (`load_from` other than `here`) [LASTMCOMP].
    pub last_major_compaction_ms: Option<i64>,
}

/// The sortable columns of the regions table: (key in `?sort=`, header).
pub const REGION_COLUMNS: &[(&str, &str)] = &[
    ("start_key", "STARTKEY"),
    ("end_key", "ENDKEY"),
    ("encoded_name", "REGION"),
    ("requests_per_second", "#REQ/S"),
    ("read_requests_per_second", "#READ/S"),
    ("filtered_read_requests_per_second", "#FREAD/S"),
    ("write_requests_per_second", "#WRITE/S"),
    ("store_file_bytes", "SF"),
    ("store_files", "#SF"),
    ("memstore_bytes", "MEMSTORE"),
    ("compaction_progress", "%COMP"),
    ("last_major_compaction_ms", "LASTMCOMP"),
    ("state", "STATE"),
];

impl RegionRow {
    /// Orders two regions by the column named `key` (one of
    /// [`REGION_COLUMNS`]); `None` for an unknown column. An unknown value
    /// sorts below every known one.
    pub fn compare(key: &str, a: &RegionRow, b: &RegionRow) -> Option<std::cmp::Ordering> {
        use std::cmp::Ordering;
        let f = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
            (x, y) => x.is_some().cmp(&y.is_some()),
        };
        Some(match key {
            "start_key" | "end_key" => a.index.cmp(&b.index),
            "encoded_name" => a.encoded_name.cmp(&b.encoded_name),
            "requests_per_second" => f(a.requests_per_second, b.requests_per_second),
            "read_requests_per_second" => f(a.read_requests_per_second, b.read_requests_per_second),
            "filtered_read_requests_per_second" => f(
                a.filtered_read_requests_per_second,
                b.filtered_read_requests_per_second,
            ),
            "write_requests_per_second" => {
                f(a.write_requests_per_second, b.write_requests_per_second)
            }
            "store_file_bytes" => a.store_file_bytes.cmp(&b.store_file_bytes),
            "store_files" => a.store_files.cmp(&b.store_files),
            "memstore_bytes" => a.memstore_bytes.cmp(&b.memstore_bytes),
            "compaction_progress" => f(
                a.compaction_progress.or(Some(-1.0)),
                b.compaction_progress.or(Some(-1.0)),
            ),
            "last_major_compaction_ms" => {
                a.last_major_compaction_ms.cmp(&b.last_major_compaction_ms)
            }
            "state" => a.state.cmp(&b.state),
            _ => return None,
        })
    }
}

/// Bytes as `Bytes.toStringBinary` shows them.
pub fn key_text(bytes: &[u8]) -> String {
    escape_bytes(bytes)
}

/// The loads of the regions other servers hold, as the master's cluster
/// status carries them: fetched once per page, and only in cluster mode.
#[derive(Debug, Default)]
pub struct RemoteLoads {
    /// This process's server name (its regions' loads are read here).
    me: Option<String>,
    /// Per live server, its regions' reports by region id; `None` when it
    /// did not answer the master in time.
    servers: BTreeMap<String, Option<BTreeMap<u64, RegionLoadReport>>>,
}

impl RemoteLoads {
    /// Asks the master for the cluster's status when `db` is a cluster
    /// member; empty otherwise, or when the master cannot be asked (then
    /// every other server's regions show no load).
    pub fn fetch(db: &Database) -> RemoteLoads {
        let me = db.server_name().map(str::to_string);
        if db.cluster().is_none() {
            return RemoteLoads::default();
        }
        match db.master_call(MasterCall::Status) {
            Ok(MasterAnswer::Status(status)) => RemoteLoads::of(&status, me),
            Ok(_) => RemoteLoads {
                me,
                ..RemoteLoads::default()
            },
            Err(e) => {
                tracing::debug!(error = %e, "the master could not be asked for the cluster's loads");
                RemoteLoads {
                    me,
                    ..RemoteLoads::default()
                }
            }
        }
    }

    /// The loads in `status`, seen from server `me`.
    pub fn of(status: &ClusterStatus, me: Option<String>) -> RemoteLoads {
        RemoteLoads {
            me,
            servers: status
                .servers
                .iter()
                .map(|s| {
                    let reports = s
                        .region_loads
                        .as_ref()
                        .map(|l| l.iter().map(|r| (r.region, r.clone())).collect());
                    (s.name.clone(), reports)
                })
                .collect(),
        }
    }

    /// The row of region `r`: its own load when this process holds it
    /// (one process: always), its server's report otherwise.
    fn row(&self, index: usize, r: &RegionSummary) -> RegionRow {
        match &r.server {
            Some(server) if Some(server) != self.me.as_ref() => {
                let report = self
                    .servers
                    .get(server)
                    .and_then(|reports| reports.as_ref())
                    .and_then(|reports| reports.get(&r.info.id));
                match report {
                    Some(report) => reported_row(index, r, report),
                    None => unknown_row(index, r),
                }
            }
            _ => region_row(index, r),
        }
    }
}

/// The columns every row has, whatever its load's source.
fn bare_row(index: usize, r: &RegionSummary, load_from: &'static str) -> RegionRow {
    RegionRow {
        index,
        name: key_text(&r.info.region_name()),
        encoded_name: r.info.encoded_name(),
        start_key: key_text(&r.info.start_key),
        end_key: key_text(&r.info.end_key),
        state: r.state.name().to_string(),
        server: r.server.clone(),
        load_from,
        requests_per_second: None,
        read_requests_per_second: None,
        filtered_read_requests_per_second: None,
        write_requests_per_second: None,
        read_requests: None,
        filtered_read_requests: None,
        write_requests: None,
        bytes_read: None,
        bytes_written: None,
        store_file_bytes: None,
        store_files: None,
        memstore_bytes: None,
        compaction_progress: None,
        last_major_compaction_ms: None,
    }
}

/// A region held here: every column.
fn region_row(index: usize, r: &RegionSummary) -> RegionRow {
    let load = &r.load;
    RegionRow {
        requests_per_second: Some(load.read_requests_per_sec + load.write_requests_per_sec),
        read_requests_per_second: Some(load.read_requests_per_sec),
        filtered_read_requests_per_second: Some(load.filtered_read_requests_per_sec),
        write_requests_per_second: Some(load.write_requests_per_sec),
        read_requests: Some(load.read_requests),
        filtered_read_requests: Some(load.filtered_read_requests),
        write_requests: Some(load.write_requests),
        bytes_read: Some(load.bytes_read),
        bytes_written: Some(load.bytes_written),
        store_file_bytes: Some(r.store_file_bytes()),
        store_files: Some(r.store_files()),
        memstore_bytes: Some(load.memstore_bytes),
        compaction_progress: r.compaction_progress(),
        last_major_compaction_ms: Some(r.last_major_compaction_ms()),
        ..bare_row(index, r, "here")
    }
}

/// A region another server holds, from what that server reported: the
/// columns a report carries (compaction progress and the last major
/// compaction it does not).
fn reported_row(index: usize, r: &RegionSummary, report: &RegionLoadReport) -> RegionRow {
    RegionRow {
        requests_per_second: Some(report.requests_per_sec),
        read_requests_per_second: report.read_requests_per_sec,
        filtered_read_requests_per_second: report.filtered_read_requests_per_sec,
        write_requests_per_second: report.write_requests_per_sec,
        read_requests: Some(report.read_requests),
        filtered_read_requests: report.filtered_read_requests,
        write_requests: Some(report.write_requests),
        bytes_read: report.bytes_read,
        bytes_written: report.bytes_written,
        store_file_bytes: Some(report.store_file_bytes),
        store_files: Some(report.store_files),
        memstore_bytes: Some(report.memstore_bytes),
        ..bare_row(index, r, "report")
    }
}

/// A region another server holds that sent no report.
fn unknown_row(index: usize, r: &RegionSummary) -> RegionRow {
    bare_row(index, r, "none")
}

fn summary_of(name: &str, info: &basalt::TableInfo, rows: &[RegionRow]) -> TableSummary {
    let loads = info.regions.iter().map(|r| &r.load);
    TableSummary {
        name: name.to_string(),
        enabled: info.enabled,
        families: info
            .descriptor
            .families()
            .iter()
            .map(|f| Family::of(FamilyInfo::of(f)))
            .collect(),
        regions: info.regions.len(),
        store_files: rows.iter().filter_map(|r| r.store_files).sum(),
        store_file_bytes: rows.iter().filter_map(|r| r.store_file_bytes).sum(),
        memstore_bytes: rows.iter().filter_map(|r| r.memstore_bytes).sum(),
        requests_per_second: rows.iter().filter_map(|r| r.requests_per_second).sum(),
        read_requests: rows.iter().filter_map(|r| r.read_requests).sum(),
        filtered_read_requests: rows.iter().filter_map(|r| r.filtered_read_requests).sum(),
        write_requests: rows.iter().filter_map(|r| r.write_requests).sum(),
        rows_scanned: loads.map(|l| l.rows_scanned).sum(),
        bytes_read: rows.iter().filter_map(|r| r.bytes_read).sum(),
        bytes_written: rows.iter().filter_map(|r| r.bytes_written).sum(),
        regions_without_load: rows.iter().filter(|r| r.load_from == "none").count(),
    }
}

/// One table's schema and regions; a table that does not exist is a 404.
/// In a cluster, the regions other servers hold show what those servers
/// reported to the master.
pub fn table_detail(db: &Database, name: &str) -> Result<TableDetail, Failure> {
    table_detail_with(db, name, &RemoteLoads::fetch(db))
}

fn table_detail_with(
    db: &Database,
    name: &str,
    remote: &RemoteLoads,
) -> Result<TableDetail, Failure> {
    let info = db
        .describe_table(name)
        .map_err(|e| Failure::from_error(&e))?;
    let region_list: Vec<RegionRow> = info
        .regions
        .iter()
        .enumerate()
        .map(|(i, r)| remote.row(i, r))
        .collect();
    Ok(TableDetail {
        summary: summary_of(name, &info, &region_list),
        region_list,
    })
}

/// Every table's summary, in name order. A table dropped while the list
/// is read is left out.
pub fn tables(db: &Database) -> Vec<TableSummary> {
    let mut names = db.list_tables();
    names.sort();
    let remote = RemoteLoads::fetch(db);
    names
        .iter()
        .filter_map(|name| table_detail_with(db, name, &remote).ok())
        .map(|t| t.summary)
        .collect()
}

/// The server at a glance, from the core's server metrics.
pub fn status(db: &Database) -> Status {
    let m = db.server_metrics();
    let c = &m.block_cache;
    Status {
        version: env!("CARGO_PKG_VERSION").to_string(),
        server: m.server.clone(),
        started_at_ms: m.started_at_ms,
        uptime_seconds: u64::try_from(m.uptime_ms / 1000).unwrap_or(0),
        tables: m.tables,
        regions: m.regions,
        regions_not_open: m.failed_regions,
        requests_per_second: m.requests.requests_per_sec,
        read_requests_per_second: m.requests.read_requests_per_sec,
        write_requests_per_second: m.requests.write_requests_per_sec,
        read_requests: m.requests.read_requests,
        write_requests: m.requests.write_requests,
        corruption_errors: m.corruption_errors,
        memory: Memory {
            memstore_bytes: m.memstore.bytes,
            memstore_limit_bytes: m.memstore.limit_bytes,
            block_cache: BlockCache {
                hits: c.hits,
                misses: c.misses,
                evictions: c.evictions,
                blocks: c.blocks,
                bytes: c.bytes,
                capacity_bytes: c.capacity_bytes,
                hit_ratio: c.hit_ratio,
            },
            file_cache: m.file_cache,
        },
        wal: Wal {
            appends: m.wal.appends,
            syncs: m.wal.syncs,
            bytes_written: m.wal.bytes_written,
        },
        flush_queue: m.flush_queue_length as u64,
        compaction_queue: m.compaction_queue_length as u64,
        gateways: m
            .gateways
            .iter()
            .map(|g| Gateway {
                protocol: g.protocol.clone(),
                address: g.address.clone(),
            })
            .collect(),
    }
}

/// The heatmap's matrices for `table` with about `rows` key-axis rows.
///
/// Until the core records key load per bucket, every table's map is
/// empty: its key axis is the regions, with no minute recorded.
pub fn heatmap_source(
    db: &Database,
    table: &str,
    rows: usize,
) -> Result<crate::heatmap::Source, Failure> {
    let query = basalt::metrics::HeatmapQuery {
        rows,
        ..Default::default()
    };
    let map = db
        .key_heatmap(table, query)
        .map_err(|e| Failure::from_error(&e))?;
    Ok(crate::heatmap::Source {
        table: map.table,
        rows: map
            .rows
            .iter()
            .map(|r| crate::heatmap::Row {
                start_key: key_text(&r.start_key),
                end_key: key_text(&r.end_key),
                region_start: r.region_start,
                region: r.region.clone(),
            })
            .collect(),
        minutes: map.minutes,
        reads: map.reads,
        writes: map.writes,
        bytes: map.bytes,
    })
}

/// The recent load-based split decisions, oldest first, each as the core
/// reports it (`basalt::LoadSplitEvent`; its fields are described in
/// docs/load-split.md).
pub fn load_splits(db: &Database) -> Vec<serde_json::Value> {
    db.load_split_events()
        .iter()
        .filter_map(|event| serde_json::to_value(event).ok())
        .collect()
}

/// `/api/server-metrics`: the core's server metrics as they are
/// (`basalt::metrics::ServerMetrics`).
pub fn server_metrics(db: &Database) -> basalt::metrics::ServerMetrics {
    db.server_metrics()
}

/// `/api/servers`: the region servers with their load, as HBase's master
/// lists them ("Region Servers"), the backup masters and the dead
/// servers. Any process of a cluster shows the whole cluster (from the
/// master's status); one process shows itself.
#[derive(Debug, Clone, Serialize)]
pub struct Servers {
    /// Cluster mode; false in one process (which is then the only server).
    pub cluster: bool,
    /// The active master's server name (cluster mode).
    pub master: Option<String>,
    /// Standby masters.
    pub backup_masters: Vec<String>,
    /// Live region servers, in name order.
    pub servers: Vec<ServerRow>,
    /// Servers declared dead whose recovery is not over.
    pub dead_servers: Vec<String>,
    /// Why the cluster's status could not be read (the list is then
    /// empty): the master unreachable, say.
    pub error: Option<String>,
}

/// One live region server.
#[derive(Debug, Clone, Serialize)]
pub struct ServerRow {
    /// HBase server name `host,port,startcode` (one process: `this
    /// process`).
    pub name: String,
    /// Whether it is the process serving this page.
    pub this_process: bool,
    /// Regions open there.
    pub regions: usize,
    /// Its load summed over its regions; null when it did not answer the
    /// master in time ("no report").
    pub load: Option<ServerLoad>,
}

/// A region server's load, summed over its regions' reports. A sum is
/// null when a region's report lacks the field (a server of an older
/// version), rather than a sum of what is known.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerLoad {
    /// Reads and writes per second over the last minute.
    pub requests_per_second: f64,
    /// Reads per second.
    pub read_requests_per_second: Option<f64>,
    /// Writes per second.
    pub write_requests_per_second: Option<f64>,
    /// Gets and scans served (in one process: since it started; in a
    /// cluster: since each region opened there, as HBase reports them).
    pub read_requests: u64,
    /// Reads whose filter dropped rows or cells.
    pub filtered_read_requests: Option<u64>,
    /// Row mutations applied.
    pub write_requests: u64,
    /// Bytes in memstores.
    pub memstore_bytes: u64,
    /// Store files.
    pub store_files: usize,
    /// Bytes in store files.
    pub store_file_bytes: u64,
}

/// The sum of `values`, or `None` when any is unknown.
fn sum_known<T: std::iter::Sum<T>>(values: impl Iterator<Item = Option<T>>) -> Option<T> {
    values
        .collect::<Option<Vec<T>>>()
        .map(|v| v.into_iter().sum())
}

impl ServerLoad {
    /// The sum of one server's region reports.
    pub fn of(reports: &[RegionLoadReport]) -> ServerLoad {
        ServerLoad {
            requests_per_second: reports.iter().map(|r| r.requests_per_sec).sum(),
            read_requests_per_second: sum_known(reports.iter().map(|r| r.read_requests_per_sec)),
            write_requests_per_second: sum_known(reports.iter().map(|r| r.write_requests_per_sec)),
            read_requests: reports.iter().map(|r| r.read_requests).sum(),
            filtered_read_requests: sum_known(reports.iter().map(|r| r.filtered_read_requests)),
            write_requests: reports.iter().map(|r| r.write_requests).sum(),
            memstore_bytes: reports.iter().map(|r| r.memstore_bytes).sum(),
            store_files: reports.iter().map(|r| r.store_files).sum(),
            store_file_bytes: reports.iter().map(|r| r.store_file_bytes).sum(),
        }
    }
}

/// The servers page's value from a cluster's status, seen from server
/// `me`.
pub fn servers_of(status: &ClusterStatus, me: Option<&str>) -> Servers {
    let mut servers: Vec<ServerRow> = status
        .servers
        .iter()
        .map(|s| ServerRow {
            name: s.name.clone(),
            this_process: me == Some(s.name.as_str()),
            regions: s.regions.len(),
            load: s.region_loads.as_deref().map(ServerLoad::of),
        })
        .collect();
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    Servers {
        cluster: true,
        master: Some(status.master.clone()),
        backup_masters: status.backup_masters.clone(),
        servers,
        dead_servers: status.dead_servers.clone(),
        error: None,
    }
}

/// The servers page's value: the cluster's region servers (from the
/// master's status, which asks each for its regions' loads), or this one
/// process.
pub fn servers(db: &Database) -> Servers {
    if db.cluster().is_none() {
        let m = db.server_metrics();
        let r = &m.requests;
        return Servers {
            cluster: false,
            master: None,
            backup_masters: Vec::new(),
            servers: vec![ServerRow {
                name: m.server.clone().unwrap_or_else(|| "this process".into()),
                this_process: true,
                regions: m.regions,
                load: Some(ServerLoad {
                    requests_per_second: r.requests_per_sec,
                    read_requests_per_second: Some(r.read_requests_per_sec),
                    write_requests_per_second: Some(r.write_requests_per_sec),
                    read_requests: r.read_requests,
                    filtered_read_requests: Some(r.filtered_read_requests),
                    write_requests: r.write_requests,
                    memstore_bytes: m.memstore.bytes,
                    store_files: m.store_files,
                    store_file_bytes: m.store_file_bytes,
                }),
            }],
            dead_servers: Vec::new(),
            error: None,
        };
    }
    match db.master_call(MasterCall::Status) {
        Ok(MasterAnswer::Status(status)) => servers_of(&status, db.server_name()),
        Ok(_) => unreachable_cluster("the master answered status with no status".into()),
        Err(e) => unreachable_cluster(format!("the master could not be asked: {e}")),
    }
}

fn unreachable_cluster(error: String) -> Servers {
    Servers {
        cluster: true,
        master: None,
        backup_masters: Vec::new(),
        servers: Vec::new(),
        dead_servers: Vec::new(),
        error: Some(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt::cluster::ServerStatus;

    fn report(region: u64, reads: u64) -> RegionLoadReport {
        RegionLoadReport {
            table: "t".into(),
            region,
            requests_per_sec: 2.0,
            read_requests: reads,
            write_requests: 1,
            memstore_bytes: 100,
            store_files: 1,
            store_file_bytes: 1000,
            read_requests_per_sec: Some(1.5),
            write_requests_per_sec: Some(0.5),
            filtered_read_requests_per_sec: Some(0.0),
            filtered_read_requests: Some(3),
            bytes_read: Some(10),
            bytes_written: Some(20),
        }
    }

    fn status() -> ClusterStatus {
        ClusterStatus {
            master: "m,16000,1".into(),
            backup_masters: vec!["b,16000,2".into()],
            servers: vec![
                ServerStatus {
                    name: "rs2,16020,3".into(),
                    regions: vec!["x".into()],
                    region_loads: None,
                },
                ServerStatus {
                    name: "rs1,16020,4".into(),
                    regions: vec!["a".into(), "b".into()],
                    region_loads: Some(vec![report(1, 10), report(2, 5)]),
                },
            ],
            dead_servers: vec!["rs0,16020,0".into()],
            ..ClusterStatus::default()
        }
    }

    #[test]
    fn servers_sum_their_region_reports_and_a_silent_server_has_no_load() {
        let servers = servers_of(&status(), Some("rs1,16020,4"));
        assert!(servers.cluster);
        assert_eq!(servers.master.as_deref(), Some("m,16000,1"));
        assert_eq!(servers.backup_masters, ["b,16000,2"]);
        assert_eq!(servers.dead_servers, ["rs0,16020,0"]);
        let names: Vec<&str> = servers.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["rs1,16020,4", "rs2,16020,3"]);
        let rs1 = &servers.servers[0];
        assert!(rs1.this_process);
        assert_eq!(rs1.regions, 2);
        let load = rs1.load.as_ref().unwrap();
        assert_eq!((load.read_requests, load.write_requests), (15, 2));
        assert_eq!(load.filtered_read_requests, Some(6));
        assert_eq!(load.read_requests_per_second, Some(3.0));
        assert_eq!((load.store_files, load.store_file_bytes), (2, 2000));
        assert_eq!(servers.servers[1].load, None, "rs2 sent no report");
        assert_eq!(servers.servers[1].regions, 1);
    }

    fn summary(id: u64, server: &str) -> RegionSummary {
        RegionSummary {
            info: basalt::RegionInfo {
                id,
                table: "t".into(),
                start_key: bytes::Bytes::new(),
                end_key: bytes::Bytes::new(),
            },
            state: basalt::RegionState::Open,
            load: basalt::RegionLoad::default(),
            stores: Vec::new(),
            server: Some(server.into()),
        }
    }

    #[test]
    fn another_servers_region_shows_its_report_and_unknown_columns_stay_unknown() {
        let loads = RemoteLoads::of(&status(), Some("rs2,16020,3".into()));
        // Held by rs1, which reported it.
        let reported = loads.row(0, &summary(1, "rs1,16020,4"));
        assert_eq!(reported.load_from, "report");
        assert_eq!(reported.read_requests, Some(10));
        assert_eq!(reported.filtered_read_requests, Some(3));
        assert_eq!(reported.read_requests_per_second, Some(1.5));
        assert_eq!(reported.store_file_bytes, Some(1000));
        assert_eq!(reported.memstore_bytes, Some(100));
        assert_eq!(reported.compaction_progress, None);
        assert_eq!(reported.last_major_compaction_ms, None, "not in a report");
        // Held by rs1 but missing from its report (opened since).
        let missing = loads.row(1, &summary(9, "rs1,16020,4"));
        assert_eq!(missing.load_from, "none");
        assert_eq!(missing.write_requests, None);
        // Held here (rs2): read here, although rs2 sent no report.
        let here = loads.row(2, &summary(5, "rs2,16020,3"));
        assert_eq!(here.load_from, "here");
        assert_eq!(here.write_requests, Some(0));
        assert_eq!(here.last_major_compaction_ms, Some(0));
        // A server the master does not list.
        assert_eq!(loads.row(3, &summary(7, "gone,1,1")).load_from, "none");
    }

    #[test]
    fn a_report_without_the_newer_fields_sums_to_unknown_not_zero() {
        let mut old = report(1, 1);
        old.filtered_read_requests = None;
        old.read_requests_per_sec = None;
        let load = ServerLoad::of(&[old, report(2, 1)]);
        assert_eq!(load.filtered_read_requests, None);
        assert_eq!(load.read_requests_per_second, None);
        assert_eq!(load.write_requests_per_second, Some(1.0));
    }
}
