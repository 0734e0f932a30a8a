//! The server's numbers, gathered where the work happens, for the info
//! server (web UI, JSON API, Prometheus `/metrics`) and `basalt top`.
//!
//! 1. Request latencies: every public request method of [`Table`] (and
//!    each `next` of its [`Scanner`]) times itself and records the
//!    duration in its operation's histogram ([`RequestLatencies`]), so
//!    every gateway and the embedded API are covered by one recorder.
//! 2. Region and store counters live in the engine (`RegionLoad`,
//!    `StoreStats`) and are summed here per server
//!    ([`Database::server_metrics`]) and per table
//!    ([`Database::table_metrics`]); the request totals add those of the
//!    regions that left this process ([`RetiredLoad`]), so they never go
//!    down.
//! 3. Server-wide parts (block cache, write-ahead log, memstore budget,
//!    flush and compaction queues, finished flushes and compactions) are
//!    read from the region server at the moment of the call.
//! 4. The key heatmap (which row keys were read and written, minute by
//!    minute) is built by [`Database::key_heatmap`] from the regions' key
//!    load (`heatmap.rs`).
//!
//! Everything here describes this process: in a cluster member only the
//! regions held here have loads (as each HBase region server reports its
//! own), and the other regions of a table are not counted.
//!
//! [`Table`]: crate::Table
//! [`Scanner`]: crate::Scanner

pub(crate) mod heatmap;

use std::collections::HashMap;
use std::time::Instant;

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use basalt_engine::block_cache::BlockCacheStats;
use basalt_engine::fs::FileCacheStats;
use basalt_engine::wal::WalStats;

pub use heatmap::{HeatmapQuery, HeatmapRow, HotRange, KeyHeatmap, RegionKeyLoad, HOTTEST_RANGES};

/// The request operations whose latency is recorded, one histogram each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// `Table::get` (and `exists`, which is a get).
    Get,
    /// One `next` of a `Scanner`: one row (or one batch of a wide row),
    /// opening the next region's scanner when the last one ran out.
    ScanNext,
    /// `Table::put`.
    Put,
    /// `Table::delete`.
    Delete,
    /// `Table::increment` (and `increment_column`).
    Increment,
    /// `Table::append`.
    Append,
    /// `Table::check_and_mutate`.
    CheckAndMutate,
    /// `Table::mutate_row`: puts and deletes of one row, atomically.
    MutateRow,
    /// `Table::batch`: many mutations in one call (HBase's multi).
    Batch,
}

impl Operation {
    /// Every operation, in the order metrics list them.
    pub const ALL: [Operation; 9] = [
        Operation::Get,
        Operation::ScanNext,
        Operation::Put,
        Operation::Delete,
        Operation::Increment,
        Operation::Append,
        Operation::CheckAndMutate,
        Operation::MutateRow,
        Operation::Batch,
    ];

    /// The operation's name in metrics (`get`, `scan_next`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Operation::Get => "get",
            Operation::ScanNext => "scan_next",
            Operation::Put => "put",
            Operation::Delete => "delete",
            Operation::Increment => "increment",
            Operation::Append => "append",
            Operation::CheckAndMutate => "check_and_mutate",
            Operation::MutateRow => "mutate_row",
            Operation::Batch => "batch",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The fixed upper bounds, in seconds, of the latency buckets every
/// operation reports (a Prometheus histogram's `le` values, the last
/// bucket `+Inf` being the count).
pub const LATENCY_BOUNDS_SECONDS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// Longest latency a histogram tells apart (one hour); longer ones are
/// recorded as this.
const LATENCY_MAX_MICROS: u64 = 3_600_000_000;

/// Significant digits of the histograms: values are kept within 1%,
/// about 30 KiB per operation over 1 us .. 1 h.
const LATENCY_SIGNIFICANT_DIGITS: u8 = 2;

/// One operation's recorded latencies.
#[derive(Debug)]
struct OperationRecord {
    /// `None` only if the histogram could not be built (it can with these
    /// constant bounds; then the operation is counted, not timed).
    histogram: Option<Histogram<u64>>,
    count: u64,
    sum_micros: u64,
}

impl OperationRecord {
    fn new() -> Self {
        OperationRecord {
            histogram: Histogram::new_with_bounds(
                1,
                LATENCY_MAX_MICROS,
                LATENCY_SIGNIFICANT_DIGITS,
            )
            .ok(),
            count: 0,
            sum_micros: 0,
        }
    }
}

/// The latency histograms of a database's requests, one per [`Operation`].
///
/// Each operation's histogram sits behind its own `parking_lot` mutex: a
/// record is an index computation and an increment (tens of nanoseconds)
/// inside an uncontended lock, against requests that take microseconds at
/// least, and requests of different operations never meet. Per-thread
/// histograms would avoid even that lock but need a registry of threads,
/// merging at every read and care when gateway threads come and go; the
/// gateways run requests on a small pool, so the simple choice is kept.
#[derive(Debug)]
pub struct RequestLatencies {
    operations: Vec<Mutex<OperationRecord>>,
}

impl Default for RequestLatencies {
    fn default() -> Self {
        RequestLatencies {
            operations: Operation::ALL
                .iter()
                .map(|_| Mutex::new(OperationRecord::new()))
                .collect(),
        }
    }
}

impl RequestLatencies {
    /// Records one request of `operation` that took `micros`.
    pub fn record(&self, operation: Operation, micros: u64) {
        let Some(record) = self.operations.get(operation.index()) else {
            return;
        };
        let mut record = record.lock();
        record.count += 1;
        record.sum_micros = record.sum_micros.saturating_add(micros);
        if let Some(h) = record.histogram.as_mut() {
            h.saturating_record(micros.clamp(1, LATENCY_MAX_MICROS));
        }
    }

    /// Runs `f`, recording its duration as one request of `operation`.
    pub(crate) fn time<T>(&self, operation: Operation, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let result = f();
        self.record(operation, elapsed_micros(start));
        result
    }

    /// Every operation's latencies now, in [`Operation::ALL`] order.
    pub fn snapshot(&self) -> Vec<OperationLatency> {
        Operation::ALL
            .iter()
            .zip(&self.operations)
            .map(|(&op, record)| {
                let record = record.lock();
                let (buckets, p50, p99, p999, max) = match &record.histogram {
                    Some(h) => (
                        LATENCY_BOUNDS_SECONDS
                            .iter()
                            .map(|&le| LatencyBucket {
                                le_seconds: le,
                                count: h.count_between(0, (le * 1e6) as u64),
                            })
                            .collect(),
                        h.value_at_quantile(0.5),
                        h.value_at_quantile(0.99),
                        h.value_at_quantile(0.999),
                        h.max(),
                    ),
                    None => (Vec::new(), 0, 0, 0, 0),
                };
                OperationLatency {
                    operation: op.name().to_string(),
                    count: record.count,
                    sum_micros: record.sum_micros,
                    buckets,
                    p50_micros: p50,
                    p99_micros: p99,
                    p999_micros: p999,
                    max_micros: max,
                }
            })
            .collect()
    }
}

/// Microseconds since `start`, at least 1 (a request took some time).
pub(crate) fn elapsed_micros(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_micros())
        .unwrap_or(u64::MAX)
        .max(1)
}

/// One operation's latency distribution since the database opened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationLatency {
    /// The operation's name ([`Operation::name`]).
    pub operation: String,
    /// Requests recorded.
    pub count: u64,
    /// Their durations added up, in microseconds.
    pub sum_micros: u64,
    /// Cumulative counts at [`LATENCY_BOUNDS_SECONDS`]: requests that took
    /// at most `le_seconds` (within the histogram's 1%).
    pub buckets: Vec<LatencyBucket>,
    /// Median, in microseconds (0 with no requests).
    pub p50_micros: u64,
    /// 99th percentile, in microseconds.
    pub p99_micros: u64,
    /// 99.9th percentile, in microseconds.
    pub p999_micros: u64,
    /// Slowest, in microseconds.
    pub max_micros: u64,
}

/// One cumulative bucket of a latency histogram.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyBucket {
    /// Upper bound in seconds (Prometheus' `le`).
    pub le_seconds: f64,
    /// Requests that took at most that long.
    pub count: u64,
}

/// The block cache shared by every store of the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockCacheMetrics {
    /// Lookups that found their block.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Hits over lookups (0 with none).
    pub hit_ratio: f64,
    /// Blocks pushed out to make room.
    pub evictions: u64,
    /// Blocks added.
    pub inserts: u64,
    /// Blocks cached now.
    pub blocks: u64,
    /// Bytes charged now.
    pub bytes: u64,
    /// The configured capacity in bytes.
    pub capacity_bytes: u64,
}

impl From<BlockCacheStats> for BlockCacheMetrics {
    fn from(s: BlockCacheStats) -> Self {
        BlockCacheMetrics {
            hits: s.hits,
            misses: s.misses,
            hit_ratio: s.hit_ratio(),
            evictions: s.evictions,
            inserts: s.inserts,
            blocks: s.blocks,
            bytes: s.bytes,
            capacity_bytes: s.capacity,
        }
    }
}

/// The file store's local cache of object storage (`FileStore::cache_stats`):
/// present only when the database's files are on object storage behind
/// the disk cache. A part is an aligned range of a file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FileCacheMetrics {
    /// Parts read from the cache.
    pub hits: u64,
    /// Parts fetched from object storage.
    pub misses: u64,
    /// Hits over lookups (0 with none).
    pub hit_ratio: f64,
    /// Bytes read from cached parts.
    pub hit_bytes: u64,
    /// Bytes fetched from object storage into parts.
    pub fetched_bytes: u64,
    /// Parts evicted to stay within the budget.
    pub evictions: u64,
    /// Part files found damaged or missing, and dropped.
    pub discarded: u64,
    /// Parts cached now.
    pub parts: u64,
    /// Bytes cached now.
    pub bytes: u64,
    /// The budget in bytes (`[storage] cache_bytes`).
    pub capacity_bytes: u64,
}

impl From<FileCacheStats> for FileCacheMetrics {
    fn from(s: FileCacheStats) -> Self {
        FileCacheMetrics {
            hits: s.hits,
            misses: s.misses,
            hit_ratio: s.hit_ratio(),
            hit_bytes: s.hit_bytes,
            fetched_bytes: s.fetched_bytes,
            evictions: s.evictions,
            discarded: s.discarded,
            parts: s.parts,
            bytes: s.bytes,
            capacity_bytes: s.capacity_bytes,
        }
    }
}

/// The server's write-ahead log since it opened (the local segment log or
/// the log on object storage, through `WriteAheadLog::stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalMetrics {
    /// Edits appended.
    pub appends: u64,
    /// Group commits: each wrote a batch of appended edits out at once
    /// (one `write` of a segment, or one log object published), making
    /// them as durable as the log makes anything; HBase's WAL syncs.
    pub syncs: u64,
    /// `fdatasync` calls (local log only; an object is durable once
    /// published).
    pub fsyncs: u64,
    /// Bytes written to the log.
    pub bytes_written: u64,
    /// Segments started because the previous one was full.
    pub rolls: u64,
    /// Write, sync or roll failures.
    pub failures: u64,
}

impl From<WalStats> for WalMetrics {
    fn from(s: WalStats) -> Self {
        WalMetrics {
            appends: s.appends,
            syncs: s.writes,
            fsyncs: s.fsyncs,
            bytes_written: s.bytes_written,
            rolls: s.rolls,
            failures: s.failures,
        }
    }
}

/// The memstores of every region of the server against their budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemstoreMetrics {
    /// Bytes the memstores hold now (with reservations of writes in flight).
    pub bytes: u64,
    /// The global limit (`global_memstore_bytes`).
    pub limit_bytes: u64,
    /// Past this, the largest memstores are flushed and writers slowed.
    pub low_water_bytes: u64,
    /// The most they held at once since the server started.
    pub high_water_bytes: u64,
    /// Writes that waited at the limit.
    pub held_writes: u64,
    /// Writes slowed between the low-water mark and the limit.
    pub slowed_writes: u64,
}

/// A gateway serving the database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayMetrics {
    /// `thrift`, `thrift2`, `rest`, ...
    pub protocol: String,
    /// `host:port` it listens on.
    pub address: String,
}

/// The request totals of regions: what a region that leaves this process
/// leaves behind in [`RetiredLoad`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestTotals {
    /// Gets and scans.
    pub read_requests: u64,
    /// Reads whose filter dropped at least one row or cell.
    pub filtered_read_requests: u64,
    /// Row mutations.
    pub write_requests: u64,
    /// Rows looked at by reads.
    pub rows_scanned: u64,
    /// Cells looked at by reads.
    pub cells_scanned: u64,
    /// Bytes of cells returned by reads.
    pub bytes_read: u64,
    /// Bytes of cells written.
    pub bytes_written: u64,
}

impl RequestTotals {
    /// The totals of one region's load.
    pub fn of(load: &basalt_engine::RegionLoad) -> Self {
        RequestTotals {
            read_requests: load.read_requests,
            filtered_read_requests: load.filtered_read_requests,
            write_requests: load.write_requests,
            rows_scanned: load.rows_scanned,
            cells_scanned: load.cells_scanned,
            bytes_read: load.bytes_read,
            bytes_written: load.bytes_written,
        }
    }

    fn add(&mut self, other: &RequestTotals) {
        self.read_requests = self.read_requests.saturating_add(other.read_requests);
        self.filtered_read_requests = self
            .filtered_read_requests
            .saturating_add(other.filtered_read_requests);
        self.write_requests = self.write_requests.saturating_add(other.write_requests);
        self.rows_scanned = self.rows_scanned.saturating_add(other.rows_scanned);
        self.cells_scanned = self.cells_scanned.saturating_add(other.cells_scanned);
        self.bytes_read = self.bytes_read.saturating_add(other.bytes_read);
        self.bytes_written = self.bytes_written.saturating_add(other.bytes_written);
    }
}

/// The final request totals of every region that left this process since
/// it started (closed for a move or an unassignment, a split or merge
/// parent retired, a table disabled, truncated or dropped), per server and
/// per table. The server and table totals add them to the regions open
/// now, so they never go down while the process lives (Prometheus reads a
/// drop in a counter as a restart).
///
/// The region server folds a region in at the moment it leaves the open
/// set, under the same lock ([`RegionServer::close_region`]), so a reader
/// never sees a region in both or in neither. A table's entry outlives the
/// table: a table created again under the same name goes on from it, as
/// one series of `/metrics` would. Work a handle still held does in a
/// closed region after that (a scanner's last rows) is not counted.
///
/// [`RegionServer::close_region`]: crate::RegionServer::close_region
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetiredLoad {
    /// Over every table.
    pub server: RequestTotals,
    /// Per table name.
    pub tables: HashMap<String, RequestTotals>,
}

impl RetiredLoad {
    /// Folds in the final load of a region of `table` that left.
    pub fn fold(&mut self, table: &str, load: &basalt_engine::RegionLoad) {
        let totals = RequestTotals::of(load);
        self.server.add(&totals);
        self.tables
            .entry(table.to_string())
            .or_default()
            .add(&totals);
    }
}

/// Request counts and rates summed over regions.
///
/// Counts are totals since the process started: those of the regions open
/// here now (each since it opened) plus the final counts of the regions
/// that left ([`RetiredLoad`]), so they never go down. A region's own
/// counts start at 0 when it opens, as HBase's per-region counters do.
/// Rates are over the last minute, over the regions open now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestMetrics {
    /// Gets and scans (a scan once per region it read).
    pub read_requests: u64,
    /// Reads whose filter dropped at least one row or cell.
    pub filtered_read_requests: u64,
    /// Row mutations.
    pub write_requests: u64,
    /// Rows looked at by reads.
    pub rows_scanned: u64,
    /// Cells looked at by reads.
    #[serde(default)]
    pub cells_scanned: u64,
    /// Bytes of cells returned by reads.
    pub bytes_read: u64,
    /// Bytes of cells written.
    pub bytes_written: u64,
    /// Reads and writes per second.
    pub requests_per_sec: f64,
    /// Reads per second.
    pub read_requests_per_sec: f64,
    /// Filtered reads per second.
    pub filtered_read_requests_per_sec: f64,
    /// Writes per second.
    pub write_requests_per_sec: f64,
    /// Bytes read per second.
    pub bytes_read_per_sec: f64,
    /// Bytes written per second.
    pub bytes_written_per_sec: f64,
}

impl RequestMetrics {
    pub(crate) fn add(&mut self, load: &basalt_engine::RegionLoad) {
        self.add_totals(&RequestTotals::of(load));
        self.requests_per_sec += load.read_requests_per_sec + load.write_requests_per_sec;
        self.read_requests_per_sec += load.read_requests_per_sec;
        self.filtered_read_requests_per_sec += load.filtered_read_requests_per_sec;
        self.write_requests_per_sec += load.write_requests_per_sec;
        self.bytes_read_per_sec += load.bytes_read_per_sec;
        self.bytes_written_per_sec += load.bytes_written_per_sec;
    }

    pub(crate) fn add_totals(&mut self, totals: &RequestTotals) {
        self.read_requests = self.read_requests.saturating_add(totals.read_requests);
        self.filtered_read_requests = self
            .filtered_read_requests
            .saturating_add(totals.filtered_read_requests);
        self.write_requests = self.write_requests.saturating_add(totals.write_requests);
        self.rows_scanned = self.rows_scanned.saturating_add(totals.rows_scanned);
        self.cells_scanned = self.cells_scanned.saturating_add(totals.cells_scanned);
        self.bytes_read = self.bytes_read.saturating_add(totals.bytes_read);
        self.bytes_written = self.bytes_written.saturating_add(totals.bytes_written);
    }
}

/// Everything the server reports about itself: `Database::server_metrics`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerMetrics {
    /// Clock millis when the database opened.
    pub started_at_ms: i64,
    /// Milliseconds since then (by the database's clock).
    pub uptime_ms: i64,
    /// Cluster mode: this region server's HBase name; `None` in one process.
    pub server: Option<String>,
    /// Tables.
    pub tables: usize,
    /// Regions open here.
    pub regions: usize,
    /// Of them, regions that could not be opened (`FAILED_OPEN`).
    pub failed_regions: usize,
    /// The gateways serving this database, in the order they started.
    pub gateways: Vec<GatewayMetrics>,
    /// Requests since the process started (regions open here and those
    /// that left, [`RetiredLoad`]).
    pub requests: RequestMetrics,
    /// Per operation, in [`Operation::ALL`] order.
    pub latencies: Vec<OperationLatency>,
    /// The block cache.
    pub block_cache: BlockCacheMetrics,
    /// The file store's disk cache of object storage; `None` when the
    /// store keeps none (files on local disk).
    #[serde(default)]
    pub file_cache: Option<FileCacheMetrics>,
    /// The write-ahead log.
    pub wal: WalMetrics,
    /// The memstores and their global budget.
    pub memstore: MemstoreMetrics,
    /// Store files over the regions open here.
    pub store_files: usize,
    /// Their bytes.
    pub store_file_bytes: u64,
    /// Flushes waiting for a background thread now.
    pub flush_queue_length: usize,
    /// Compactions waiting for a background thread now.
    pub compaction_queue_length: usize,
    /// Flushes a background thread is running now.
    #[serde(default)]
    pub flushes_running: usize,
    /// Compactions a background thread is running now.
    #[serde(default)]
    pub compactions_running: usize,
    /// Region flushes finished since the server started.
    pub flushes_completed: u64,
    /// Region compactions (minor and major) finished since then.
    pub compactions_completed: u64,
    /// Of them, major compactions.
    pub major_compactions_completed: u64,
    /// Reads that met damaged data since the server started.
    pub corruption_errors: u64,
    /// Secondary-index post-writes (the verification or deletion after a
    /// data write committed) that failed in this process since it
    /// started: each left an unverified index row, which a read by the
    /// index or `check_index` with repair settles.
    #[serde(default)]
    pub index_failed_post_writes: u64,
}

/// One table's numbers over its regions open here (per-table series of
/// the Prometheus endpoint); its request totals also count the regions of
/// the table that left this process ([`RetiredLoad`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableMetrics {
    /// The table.
    pub table: String,
    /// Whether it serves requests.
    pub enabled: bool,
    /// All its regions, wherever they are open.
    pub regions: usize,
    /// Of them, regions open here (whose numbers are below).
    pub regions_here: usize,
    /// Requests over those regions and the table's regions that left.
    pub requests: RequestMetrics,
    /// Store files.
    pub store_files: usize,
    /// Their bytes.
    pub store_file_bytes: u64,
    /// Bytes in memstores.
    pub memstore_bytes: u64,
}
