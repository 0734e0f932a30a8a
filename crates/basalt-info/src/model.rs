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
    /// Gets and scans served since the regions opened.
    pub read_requests: u64,
    /// Row mutations applied since the regions opened.
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
    /// Reads and writes per second over the last minute [#REQ/S].
    pub requests_per_second: f64,
    /// Reads per second [#READ/S].
    pub read_requests_per_second: f64,
    /// Filtered reads per second [#FREAD/S].
    pub filtered_read_requests_per_second: f64,
    /// Writes per second [#WRITE/S].
    pub write_requests_per_second: f64,
    /// Gets and scans served.
    pub read_requests: u64,
    /// Reads whose filter dropped rows or cells.
    pub filtered_read_requests: u64,
    /// Row mutations applied.
    pub write_requests: u64,
    /// Bytes of cells returned by reads.
    pub bytes_read: u64,
    /// Bytes of cells written.
    pub bytes_written: u64,
    /// Bytes in store files [SF].
    pub store_file_bytes: u64,
    /// Store files [#SF].
    pub store_files: usize,
    /// Bytes in memstores [MEMSTORE].
    pub memstore_bytes: u64,
    /// The running compaction's progress, 0.0 to 1.0; absent when none
    /// runs [%COMP].
    pub compaction_progress: Option<f64>,
    /// When the last major compaction finished, milliseconds since the
    /// epoch; 0 never (since the region opened) [LASTMCOMP].
    pub last_major_compaction_ms: i64,
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
    /// [`REGION_COLUMNS`]); `None` for an unknown column.
    pub fn compare(key: &str, a: &RegionRow, b: &RegionRow) -> Option<std::cmp::Ordering> {
        use std::cmp::Ordering;
        let f = |x: f64, y: f64| x.partial_cmp(&y).unwrap_or(Ordering::Equal);
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
                a.compaction_progress.unwrap_or(-1.0),
                b.compaction_progress.unwrap_or(-1.0),
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

fn region_row(index: usize, r: &RegionSummary) -> RegionRow {
    let load = &r.load;
    RegionRow {
        index,
        name: key_text(&r.info.region_name()),
        encoded_name: r.info.encoded_name(),
        start_key: key_text(&r.info.start_key),
        end_key: key_text(&r.info.end_key),
        state: r.state.name().to_string(),
        server: r.server.clone(),
        requests_per_second: load.read_requests_per_sec + load.write_requests_per_sec,
        read_requests_per_second: load.read_requests_per_sec,
        filtered_read_requests_per_second: load.filtered_read_requests_per_sec,
        write_requests_per_second: load.write_requests_per_sec,
        read_requests: load.read_requests,
        filtered_read_requests: load.filtered_read_requests,
        write_requests: load.write_requests,
        bytes_read: load.bytes_read,
        bytes_written: load.bytes_written,
        store_file_bytes: r.store_file_bytes(),
        store_files: r.store_files(),
        memstore_bytes: load.memstore_bytes,
        compaction_progress: basalt::metrics::compaction_progress(r),
        last_major_compaction_ms: basalt::metrics::last_major_compaction_ms(r),
    }
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
        store_files: rows.iter().map(|r| r.store_files).sum(),
        store_file_bytes: rows.iter().map(|r| r.store_file_bytes).sum(),
        memstore_bytes: rows.iter().map(|r| r.memstore_bytes).sum(),
        requests_per_second: rows.iter().map(|r| r.requests_per_second).sum(),
        read_requests: rows.iter().map(|r| r.read_requests).sum(),
        filtered_read_requests: rows.iter().map(|r| r.filtered_read_requests).sum(),
        write_requests: rows.iter().map(|r| r.write_requests).sum(),
        rows_scanned: loads.map(|l| l.rows_scanned).sum(),
        bytes_read: rows.iter().map(|r| r.bytes_read).sum(),
        bytes_written: rows.iter().map(|r| r.bytes_written).sum(),
    }
}

/// One table's schema and regions; a table that does not exist is a 404.
pub fn table_detail(db: &Database, name: &str) -> Result<TableDetail, Failure> {
    let info = db
        .describe_table(name)
        .map_err(|e| Failure::from_error(&e))?;
    let region_list: Vec<RegionRow> = info
        .regions
        .iter()
        .enumerate()
        .map(|(i, r)| region_row(i, r))
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
    names
        .iter()
        .filter_map(|name| table_detail(db, name).ok())
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
