//! `/metrics` in Prometheus' text exposition format 0.0.4.
//!
//! Naming follows Prometheus' conventions: a `basalt_` prefix, base units
//! (seconds, bytes), counters ending in `_total`. Series are per server or
//! per table (label `table`), never per region: regions come and go with
//! splits, and a label per region would grow the series without bound.
//! Per-region numbers are in the JSON API (`/api/tables/<name>`).
//!
//! Every family is written whole (`# HELP`, `# TYPE`, then its samples)
//! by [`Exposition`], so a family cannot lose its header or be split.

use std::fmt::Write as _;

use basalt::Database;

/// A Prometheus metric type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only grows (resets at restart).
    Counter,
    /// Goes up and down.
    Gauge,
    /// Buckets, sum and count.
    Histogram,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// The text being written.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
}

/// A label value escaped as the format asks: backslash, double quote and
/// line feed.
pub fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// HELP text escaped: backslash and line feed.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value: integers exactly, the special floats by the format's
/// names.
pub fn value_text(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

fn labels_text(labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    format!("{{{}}}", parts.join(","))
}

impl Exposition {
    /// Writes one family: its header, then `samples` as (labels, value).
    pub fn family(
        &mut self,
        name: &str,
        kind: Kind,
        help: &str,
        samples: &[(Vec<(&str, &str)>, f64)],
    ) {
        debug_assert!(kind != Kind::Counter || name.ends_with("_total"));
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {}", kind.name());
        for (labels, value) in samples {
            let _ = writeln!(
                self.out,
                "{name}{} {}",
                labels_text(labels),
                value_text(*value)
            );
        }
    }

    /// One unlabelled sample in a family of its own.
    pub fn single(&mut self, name: &str, kind: Kind, help: &str, value: f64) {
        self.family(name, kind, help, &[(Vec::new(), value)]);
    }

    /// A histogram family: per label set, cumulative `(upper bound,
    /// count)` buckets (the `+Inf` bucket is added from `count`), the sum
    /// and the count.
    pub fn histogram(&mut self, name: &str, help: &str, series: &[Histogram<'_>]) {
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} histogram");
        for h in series {
            for (le, count) in &h.buckets {
                let mut labels = h.labels.clone();
                let le = value_text(*le);
                labels.push(("le", &le));
                let _ = writeln!(self.out, "{name}_bucket{} {count}", labels_text(&labels));
            }
            let mut labels = h.labels.clone();
            labels.push(("le", "+Inf"));
            let _ = writeln!(
                self.out,
                "{name}_bucket{} {}",
                labels_text(&labels),
                h.count
            );
            let _ = writeln!(
                self.out,
                "{name}_sum{} {}",
                labels_text(&h.labels),
                value_text(h.sum)
            );
            let _ = writeln!(
                self.out,
                "{name}_count{} {}",
                labels_text(&h.labels),
                h.count
            );
        }
    }

    /// The text.
    pub fn finish(self) -> String {
        self.out
    }
}

/// One labelled series of a histogram.
#[derive(Debug, Clone)]
pub struct Histogram<'a> {
    /// Its labels (`le` is added per bucket).
    pub labels: Vec<(&'a str, &'a str)>,
    /// Cumulative counts at each upper bound, ascending, without `+Inf`.
    pub buckets: Vec<(f64, u64)>,
    /// Sum of the observations (seconds).
    pub sum: f64,
    /// Observations.
    pub count: u64,
}

/// Every family `/metrics` serves, from the database's counters now.
pub fn render(db: &Database) -> String {
    render_with(db, &[])
}

/// [`render`], and the numbers the process keeps outside the database
/// (one family each, without labels).
pub fn render_with(db: &Database, extras: &[crate::ExtraGroup]) -> String {
    let tables = db.table_metrics();
    let mut e = Exposition::default();
    let per_table =
        |f: &dyn Fn(&basalt::metrics::TableMetrics) -> f64| -> Vec<(Vec<(&str, &str)>, f64)> {
            tables
                .iter()
                .map(|t| (vec![("table", t.table.as_str())], f(t)))
                .collect()
        };
    e.family(
        "basalt_read_requests_total",
        Kind::Counter,
        "Gets and scans served by the table's regions since the process started (regions that left included).",
        &per_table(&|t| t.requests.read_requests as f64),
    );
    e.family(
        "basalt_filtered_read_requests_total",
        Kind::Counter,
        "Reads whose filter dropped at least one row or cell.",
        &per_table(&|t| t.requests.filtered_read_requests as f64),
    );
    e.family(
        "basalt_write_requests_total",
        Kind::Counter,
        "Row mutations applied to the table's regions (each put, delete, increment or append counts one).",
        &per_table(&|t| t.requests.write_requests as f64),
    );
    e.family(
        "basalt_rows_scanned_total",
        Kind::Counter,
        "Rows looked at by reads.",
        &per_table(&|t| t.requests.rows_scanned as f64),
    );
    e.family(
        "basalt_cells_scanned_total",
        Kind::Counter,
        "Cells looked at by reads.",
        &per_table(&|t| t.requests.cells_scanned as f64),
    );
    e.family(
        "basalt_bytes_read_total",
        Kind::Counter,
        "Bytes of cells returned by reads.",
        &per_table(&|t| t.requests.bytes_read as f64),
    );
    e.family(
        "basalt_bytes_written_total",
        Kind::Counter,
        "Bytes of cells written.",
        &per_table(&|t| t.requests.bytes_written as f64),
    );
    e.family(
        "basalt_memstore_bytes",
        Kind::Gauge,
        "Bytes held in the table's memstores.",
        &per_table(&|t| t.memstore_bytes as f64),
    );
    e.family(
        "basalt_store_files",
        Kind::Gauge,
        "Store files of the table.",
        &per_table(&|t| t.store_files as f64),
    );
    e.family(
        "basalt_store_file_bytes",
        Kind::Gauge,
        "Bytes in the table's store files.",
        &per_table(&|t| t.store_file_bytes as f64),
    );
    e.family(
        "basalt_regions",
        Kind::Gauge,
        "Regions of the table.",
        &per_table(&|t| t.regions as f64),
    );
    let m = db.server_metrics();
    let series: Vec<Histogram<'_>> = m
        .latencies
        .iter()
        .map(|l| Histogram {
            labels: vec![("op", l.operation.as_str())],
            buckets: l.buckets.iter().map(|b| (b.le_seconds, b.count)).collect(),
            sum: l.sum_micros as f64 / 1e6,
            count: l.count,
        })
        .collect();
    e.histogram(
        "basalt_request_duration_seconds",
        "Request latency per operation, as the embedded API (and so every gateway) timed it.",
        &series,
    );
    let server: &[(&str, Kind, &str, f64)] = &[
        (
            "basalt_wal_appends_total",
            Kind::Counter,
            "Edits appended to the write-ahead log.",
            m.wal.appends as f64,
        ),
        (
            "basalt_wal_syncs_total",
            Kind::Counter,
            "Write-ahead log group commits (each made a batch of edits durable).",
            m.wal.syncs as f64,
        ),
        (
            "basalt_wal_fsyncs_total",
            Kind::Counter,
            "Write-ahead log fsyncs: of the local log for FSYNC_WAL writes, of published log objects on a shared directory.",
            m.wal.fsyncs as f64,
        ),
        (
            "basalt_wal_bytes_written_total",
            Kind::Counter,
            "Bytes written to the write-ahead log.",
            m.wal.bytes_written as f64,
        ),
        (
            "basalt_memstore_global_bytes",
            Kind::Gauge,
            "Bytes in every memstore of the server.",
            m.memstore.bytes as f64,
        ),
        (
            "basalt_memstore_global_limit_bytes",
            Kind::Gauge,
            "The global memstore limit: writers are held above it.",
            m.memstore.limit_bytes as f64,
        ),
        (
            "basalt_flush_queue_length",
            Kind::Gauge,
            "Flushes waiting for a background thread.",
            m.flush_queue_length as f64,
        ),
        (
            "basalt_compaction_queue_length",
            Kind::Gauge,
            "Compactions waiting for a background thread.",
            m.compaction_queue_length as f64,
        ),
        (
            "basalt_flushes_running",
            Kind::Gauge,
            "Flushes a background thread is running.",
            m.flushes_running as f64,
        ),
        (
            "basalt_compactions_running",
            Kind::Gauge,
            "Compactions a background thread is running.",
            m.compactions_running as f64,
        ),
        (
            "basalt_flushes_total",
            Kind::Counter,
            "Region flushes finished.",
            m.flushes_completed as f64,
        ),
        (
            "basalt_compactions_total",
            Kind::Counter,
            "Region compactions finished, minor and major.",
            m.compactions_completed as f64,
        ),
        (
            "basalt_major_compactions_total",
            Kind::Counter,
            "Region major compactions finished.",
            m.major_compactions_completed as f64,
        ),
        (
            "basalt_uptime_seconds",
            Kind::Gauge,
            "Seconds since the database opened.",
            m.uptime_ms as f64 / 1000.0,
        ),
    ];
    for (name, kind, help, value) in server {
        e.single(name, *kind, help, *value);
    }
    let cache = &m.block_cache;
    e.single(
        "basalt_block_cache_hits_total",
        Kind::Counter,
        "Block cache lookups that found their block.",
        cache.hits as f64,
    );
    e.single(
        "basalt_block_cache_misses_total",
        Kind::Counter,
        "Block cache lookups that did not.",
        cache.misses as f64,
    );
    e.single(
        "basalt_block_cache_evictions_total",
        Kind::Counter,
        "Blocks pushed out of the block cache to make room.",
        cache.evictions as f64,
    );
    e.single(
        "basalt_block_cache_bytes",
        Kind::Gauge,
        "Bytes in the block cache.",
        cache.bytes as f64,
    );
    e.single(
        "basalt_block_cache_capacity_bytes",
        Kind::Gauge,
        "The block cache's capacity.",
        cache.capacity_bytes as f64,
    );
    // The disk cache of object storage: only when the file store keeps
    // one, so a server on local disk does not report an empty cache.
    if let Some(f) = &m.file_cache {
        let families: &[(&str, Kind, &str, u64)] = &[
            (
                "basalt_file_cache_hits_total",
                Kind::Counter,
                "Parts of files read from the disk cache of object storage.",
                f.hits,
            ),
            (
                "basalt_file_cache_misses_total",
                Kind::Counter,
                "Parts of files the disk cache had to fetch from object storage.",
                f.misses,
            ),
            (
                "basalt_file_cache_hit_bytes_total",
                Kind::Counter,
                "Bytes read from the disk cache.",
                f.hit_bytes,
            ),
            (
                "basalt_file_cache_fetched_bytes_total",
                Kind::Counter,
                "Bytes fetched from object storage into the disk cache.",
                f.fetched_bytes,
            ),
            (
                "basalt_file_cache_evictions_total",
                Kind::Counter,
                "Parts evicted from the disk cache to stay within its budget.",
                f.evictions,
            ),
            (
                "basalt_file_cache_discarded_total",
                Kind::Counter,
                "Damaged or missing part files dropped from the disk cache.",
                f.discarded,
            ),
            (
                "basalt_file_cache_parts",
                Kind::Gauge,
                "Parts in the disk cache.",
                f.parts,
            ),
            (
                "basalt_file_cache_bytes",
                Kind::Gauge,
                "Bytes in the disk cache.",
                f.bytes,
            ),
            (
                "basalt_file_cache_capacity_bytes",
                Kind::Gauge,
                "The disk cache's budget.",
                f.capacity_bytes,
            ),
        ];
        for (name, kind, help, value) in families {
            e.single(name, *kind, help, *value as f64);
        }
    }
    e.single(
        "basalt_corruption_errors_total",
        Kind::Counter,
        "Reads that met damaged data since the server started.",
        m.corruption_errors as f64,
    );
    e.single(
        "basalt_index_failed_post_writes_total",
        Kind::Counter,
        "Secondary-index post-writes that failed after their data write committed (each left an unverified index row that reads repair).",
        m.index_failed_post_writes as f64,
    );
    for group in extras {
        for sample in &group.samples {
            e.single(&sample.name, sample.kind, &sample.help, sample.value);
        }
    }
    e.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_escape_backslash_quote_and_newline() {
        assert_eq!(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    }

    #[test]
    fn a_family_has_help_and_type_before_its_samples() {
        let mut e = Exposition::default();
        e.family(
            "basalt_x_total",
            Kind::Counter,
            "X.",
            &[(vec![("table", "t\"1")], 3.0)],
        );
        assert_eq!(
            e.finish(),
            "# HELP basalt_x_total X.\n# TYPE basalt_x_total counter\nbasalt_x_total{table=\"t\\\"1\"} 3\n"
        );
    }

    #[test]
    fn a_histogram_ends_each_series_with_inf_sum_and_count() {
        let mut e = Exposition::default();
        e.histogram(
            "basalt_d_seconds",
            "D.",
            &[Histogram {
                labels: vec![("op", "get")],
                buckets: vec![(0.001, 1), (0.01, 3)],
                sum: 0.02,
                count: 4,
            }],
        );
        let text = e.finish();
        assert!(text.contains("basalt_d_seconds_bucket{op=\"get\",le=\"0.001\"} 1\n"));
        assert!(text.contains("basalt_d_seconds_bucket{op=\"get\",le=\"+Inf\"} 4\n"));
        assert!(text.contains("basalt_d_seconds_sum{op=\"get\"} 0.02\n"));
        assert!(text.contains("basalt_d_seconds_count{op=\"get\"} 4\n"));
    }
}
