//! The key heatmap: the table's key space on the vertical axis (rows
//! labelled with key ranges, region boundaries drawn), minutes on the
//! horizontal one, each cell coloured by the reads, writes or bytes of
//! that key range in that minute.
//!
//! 1. The core gives the matrix (`Database::key_heatmap`): rows whose
//!    boundaries follow where the recorded load was (and every region's
//!    start key), minutes, and per metric a `[minute][row]` table.
//! 2. [`build`] keeps the chosen metric's table, adds each row's total,
//!    each region's total (the rows are cut at every region start, so a
//!    region's rows hold exactly its load) and the hottest rows.
//! 3. [`svg`] draws it as inline SVG, no script: one rectangle per
//!    non-zero cell over a zero-coloured plot, a line at each region
//!    start, a legend of the colour scale.
//!
//! The colour scale is linear from 0 to the busiest cell, so a monotonic
//! workload (one bright cell per minute, climbing the key axis in the last
//! region) and a salted one (every row alike, all bright) look as
//! different as they are; a logarithmic scale would lift the monotonic
//! map's faint cells and blur that difference.

use std::fmt::Write as _;

use serde::Serialize;

use basalt::Database;

use crate::html::{clock_minute, escape};
use crate::routes::{Context, Failure, Query};

/// What a cell's colour counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Gets and scans that touched the range.
    Reads,
    /// Row mutations in the range.
    Writes,
    /// Bytes read and written in the range.
    Bytes,
}

impl Metric {
    /// Every metric, in the switch's order.
    pub const ALL: [Metric; 3] = [Metric::Writes, Metric::Reads, Metric::Bytes];

    /// The name in URLs and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Reads => "reads",
            Metric::Writes => "writes",
            Metric::Bytes => "bytes",
        }
    }

    fn parse(text: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == text)
    }

    fn of(self, reads: u64, writes: u64, bytes: u64) -> u64 {
        match self {
            Metric::Reads => reads,
            Metric::Writes => writes,
            Metric::Bytes => bytes,
        }
    }
}

/// A heatmap request's parameters (`?metric=` and `?rows=`).
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// The metric drawn. Default writes.
    pub metric: Metric,
    /// Key-axis rows asked for.
    pub rows: usize,
}

impl Request {
    /// Reads `metric` and `rows` from the query (400 for a bad value).
    pub fn from_query(query: &mut Query, context: &Context) -> Result<Request, Failure> {
        let metric = match query.take("metric") {
            None => Metric::Writes,
            Some(m) => Metric::parse(&m).ok_or_else(|| {
                Failure::bad_request(format!("metric {m:?} is not one of writes, reads, bytes"))
            })?,
        };
        let rows = match query.take("rows") {
            None => context.heatmap_rows,
            Some(r) => match r.parse::<usize>() {
                Ok(n) if (1..=context.max_heatmap_rows).contains(&n) => n,
                _ => {
                    return Err(Failure::bad_request(format!(
                        "rows {r:?} is not a number from 1 to {} (max_heatmap_rows)",
                        context.max_heatmap_rows
                    )))
                }
            },
        };
        Ok(Request { metric, rows })
    }
}

/// One row of the key axis: a key range `[start_key, end_key)`.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// First key of the range (`Bytes.toStringBinary` text).
    pub start_key: String,
    /// End of the range, exclusive; empty: the end of the table.
    pub end_key: String,
    /// True when a region starts at `start_key` (a boundary is drawn).
    pub region_start: bool,
    /// Encoded name of the region holding the range.
    pub region: String,
}

/// One region's load over the whole span of the map.
#[derive(Debug, Clone, Serialize)]
pub struct RegionTotal {
    /// Encoded region name.
    pub region: String,
    /// The region's first key.
    pub start_key: String,
    /// The region's end key (empty: the end of the table).
    pub end_key: String,
    /// Reads over the span.
    pub reads: u64,
    /// Writes over the span.
    pub writes: u64,
    /// Bytes read and written over the span.
    pub bytes: u64,
}

/// A key range and its load over the whole span.
#[derive(Debug, Clone, Serialize)]
pub struct HotRange {
    /// First key of the range.
    pub start_key: String,
    /// End of the range, exclusive (empty: the end of the table).
    pub end_key: String,
    /// Encoded name of the region holding it.
    pub region: String,
    /// Reads over the span.
    pub reads: u64,
    /// Writes over the span.
    pub writes: u64,
    /// Bytes over the span.
    pub bytes: u64,
}

/// `/api/tables/<name>/heatmap`: the map of one metric.
#[derive(Debug, Clone, Serialize)]
pub struct Heatmap {
    /// The table.
    pub table: String,
    /// The metric of `values`, `row_totals` and the colours.
    pub metric: Metric,
    /// The key axis, from the table's start down to its end.
    pub rows: Vec<Row>,
    /// The time axis: each minute's start, ms since the epoch, oldest
    /// first (the last one may still be running).
    pub minutes: Vec<i64>,
    /// `values[minute][row]`: the metric's count in that row and minute.
    pub values: Vec<Vec<u64>>,
    /// Per row, the metric over every minute.
    pub row_totals: Vec<u64>,
    /// The busiest cell (the top of the colour scale).
    pub max: u64,
    /// Per region in key order, every metric over every minute.
    pub regions: Vec<RegionTotal>,
    /// The busiest rows by the metric, busiest first (at most
    /// [`HOTTEST`]; rows with none left out).
    pub hottest: Vec<HotRange>,
}

/// Most ranges in [`Heatmap::hottest`].
pub const HOTTEST: usize = 10;

/// What the core hands over: the three matrices over one key axis.
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// The table.
    pub table: String,
    /// The key axis.
    pub rows: Vec<Row>,
    /// Minute starts.
    pub minutes: Vec<i64>,
    /// `[minute][row]` reads.
    pub reads: Vec<Vec<u64>>,
    /// `[minute][row]` writes.
    pub writes: Vec<Vec<u64>>,
    /// `[minute][row]` bytes.
    pub bytes: Vec<Vec<u64>>,
}

fn cell(matrix: &[Vec<u64>], minute: usize, row: usize) -> u64 {
    matrix
        .get(minute)
        .and_then(|m| m.get(row))
        .copied()
        .unwrap_or(0)
}

impl Heatmap {
    /// Step 2 of the module docs: the chosen metric, totals and hottest
    /// rows from the core's matrices.
    pub fn from_source(source: Source, metric: Metric) -> Heatmap {
        let (n_rows, n_minutes) = (source.rows.len(), source.minutes.len());
        let total = |matrix: &[Vec<u64>], row: usize| -> u64 {
            (0..n_minutes).map(|m| cell(matrix, m, row)).sum()
        };
        let per_row: Vec<(u64, u64, u64)> = (0..n_rows)
            .map(|r| {
                (
                    total(&source.reads, r),
                    total(&source.writes, r),
                    total(&source.bytes, r),
                )
            })
            .collect();
        let values: Vec<Vec<u64>> = (0..n_minutes)
            .map(|m| {
                (0..n_rows)
                    .map(|r| {
                        metric.of(
                            cell(&source.reads, m, r),
                            cell(&source.writes, m, r),
                            cell(&source.bytes, m, r),
                        )
                    })
                    .collect()
            })
            .collect();
        let max = values.iter().flatten().copied().max().unwrap_or(0);
        let row_totals: Vec<u64> = per_row
            .iter()
            .map(|&(r, w, b)| metric.of(r, w, b))
            .collect();
        // Regions in key order: a new one at every region start (and at
        // the first row).
        let mut regions: Vec<RegionTotal> = Vec::new();
        for (i, row) in source.rows.iter().enumerate() {
            let (r, w, b) = per_row[i];
            match regions.last_mut() {
                Some(last) if !row.region_start && last.region == row.region => {
                    last.end_key = row.end_key.clone();
                    last.reads += r;
                    last.writes += w;
                    last.bytes += b;
                }
                _ => regions.push(RegionTotal {
                    region: row.region.clone(),
                    start_key: row.start_key.clone(),
                    end_key: row.end_key.clone(),
                    reads: r,
                    writes: w,
                    bytes: b,
                }),
            }
        }
        let mut order: Vec<usize> = (0..n_rows).filter(|&i| row_totals[i] > 0).collect();
        // Busiest first; equal ones in key order.
        order.sort_by(|&a, &b| row_totals[b].cmp(&row_totals[a]).then(a.cmp(&b)));
        let hottest = order
            .into_iter()
            .take(HOTTEST)
            .map(|i| HotRange {
                start_key: source.rows[i].start_key.clone(),
                end_key: source.rows[i].end_key.clone(),
                region: source.rows[i].region.clone(),
                reads: per_row[i].0,
                writes: per_row[i].1,
                bytes: per_row[i].2,
            })
            .collect();
        Heatmap {
            table: source.table,
            metric,
            rows: source.rows,
            minutes: source.minutes,
            values,
            row_totals,
            max,
            regions,
            hottest,
        }
    }
}

/// Step 1 and 2: the map of `table` as `request` asks; an unknown table
/// is a 404.
pub fn build(db: &Database, table: &str, request: &Request) -> Result<Heatmap, Failure> {
    let source = crate::model::heatmap_source(db, table, request.rows)?;
    Ok(Heatmap::from_source(source, request.metric))
}

/// The colour scale's stops, from 0 (dark) to the busiest cell (pale
/// yellow): dark blue, purple, orange, yellow, so that brightness alone
/// reads as load.
const STOPS: [(u8, u8, u8); 4] = [
    (12, 14, 44),
    (120, 28, 109),
    (237, 105, 37),
    (252, 255, 164),
];

/// The colour of `value` on a scale to `max`, as `#rrggbb`.
pub fn colour(value: u64, max: u64) -> String {
    if value == 0 || max == 0 {
        let (r, g, b) = STOPS[0];
        return format!("#{r:02x}{g:02x}{b:02x}");
    }
    // A non-zero cell is never drawn as zero: at least a tenth of the way.
    let t = (value as f64 / max as f64).clamp(0.0, 1.0) * 0.9 + 0.1;
    let span = t * (STOPS.len() - 1) as f64;
    let i = (span.floor() as usize).min(STOPS.len() - 2);
    let f = span - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// A key shortened for a label: at most `max` characters, an ellipsis
/// marking a cut.
fn short(key: &str, max: usize) -> String {
    if key.chars().count() <= max {
        key.to_string()
    } else {
        let mut s: String = key.chars().take(max.saturating_sub(1)).collect();
        s.push('\u{2026}');
        s
    }
}

/// A range as people read it: `[start, end)`, the open ends named.
pub fn range_text(start: &str, end: &str) -> String {
    let start = if start.is_empty() { "(start)" } else { start };
    let end = if end.is_empty() { "(end)" } else { end };
    format!("[{start}, {end})")
}

/// Step 3: the map as inline SVG (every key escaped).
pub fn svg(map: &Heatmap) -> String {
    const LABEL_W: usize = 300;
    const TOP: usize = 10;
    const AXIS_H: usize = 40;
    const RIGHT: usize = 90;
    let n_rows = map.rows.len().max(1);
    let n_minutes = map.minutes.len().max(1);
    let cell_w = (900 / n_minutes).clamp(4, 28);
    let cell_h = (640 / n_rows).clamp(3, 16);
    let plot_w = cell_w * n_minutes;
    let plot_h = cell_h * n_rows;
    let legend_h = 50;
    let width = LABEL_W + plot_w + RIGHT;
    let height = TOP + plot_h + AXIS_H + legend_h;
    let unit = match map.metric {
        Metric::Reads => "reads",
        Metric::Writes => "writes",
        Metric::Bytes => "bytes",
    };
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg id=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         data-rows=\"{}\" data-minutes=\"{}\" data-metric=\"{}\" font-family=\"monospace\" font-size=\"10\">",
        map.rows.len(),
        map.minutes.len(),
        map.metric.name()
    );
    // The plot's background is the zero colour; only non-zero cells are
    // drawn over it.
    let _ = write!(
        out,
        "<rect class=\"plot\" x=\"{LABEL_W}\" y=\"{TOP}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"{}\"/>",
        colour(0, 0)
    );
    // Row labels: every row while they fit, else every k-th.
    let every = (9 / cell_h.max(1)).max(1);
    for (i, row) in map.rows.iter().enumerate() {
        if i % every != 0 {
            continue;
        }
        let y = TOP + i * cell_h + cell_h / 2 + 3;
        let label = format!(
            "{} \u{2026} {}",
            short(&row.start_key, 20),
            short(&row.end_key, 20)
        );
        let _ = write!(
            out,
            "<text class=\"row-label\" x=\"{}\" y=\"{y}\" text-anchor=\"end\" font-size=\"{}\">{}<title>{}</title></text>",
            LABEL_W - 6,
            cell_h.clamp(6, 10),
            escape(&label),
            escape(&range_text(&row.start_key, &row.end_key))
        );
    }
    for (m, minute) in map.values.iter().enumerate() {
        for (r, &value) in minute.iter().enumerate() {
            if value == 0 {
                continue;
            }
            let Some(row) = map.rows.get(r) else { continue };
            let _ = write!(
                out,
                "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{cell_w}\" height=\"{cell_h}\" fill=\"{}\"><title>{} {} {value} {unit}</title></rect>",
                LABEL_W + m * cell_w,
                TOP + r * cell_h,
                colour(value, map.max),
                escape(&range_text(&row.start_key, &row.end_key)),
                map.minutes.get(m).map_or_else(String::new, |&ms| clock_minute(ms)),
            );
        }
    }
    // Region boundaries: a line at the top of every row a region starts
    // at, with the region's short name at the right.
    for (i, row) in map.rows.iter().enumerate() {
        if !row.region_start {
            continue;
        }
        let y = TOP + i * cell_h;
        let _ = write!(
            out,
            "<line class=\"region-boundary\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#2ec4d6\" stroke-width=\"1.5\"/>\
             <text x=\"{}\" y=\"{}\" fill=\"#1a7f8c\">{}</text>",
            LABEL_W - 4,
            LABEL_W + plot_w + 4,
            LABEL_W + plot_w + 6,
            y + 10,
            escape(&short(&row.region, 10))
        );
    }
    // The time axis: a tick label about every 10 minutes' width.
    let label_every = (60 / cell_w).max(1);
    for (m, &ms) in map.minutes.iter().enumerate() {
        if m % label_every != 0 && m + 1 != map.minutes.len() {
            continue;
        }
        let _ = write!(
            out,
            "<text class=\"minute-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            LABEL_W + m * cell_w + cell_w / 2,
            TOP + plot_h + 14,
            clock_minute(ms)
        );
    }
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">time (UTC, one column per minute) \u{2192}</text>",
        LABEL_W + plot_w / 2,
        TOP + plot_h + 30
    );
    // The legend: the scale from 0 to the busiest cell.
    let legend_y = TOP + plot_h + AXIS_H;
    out.push_str("<defs><linearGradient id=\"scale\">");
    for (i, _) in STOPS.iter().enumerate() {
        let at = i as f64 / (STOPS.len() - 1) as f64;
        let value = (at * 1000.0) as u64;
        let _ = write!(
            out,
            "<stop offset=\"{:.0}%\" stop-color=\"{}\"/>",
            at * 100.0,
            colour(value.max(1), 1000)
        );
    }
    out.push_str("</linearGradient></defs>");
    let _ = write!(
        out,
        "<g id=\"legend\"><rect x=\"{LABEL_W}\" y=\"{legend_y}\" width=\"200\" height=\"12\" fill=\"url(#scale)\"/>\
         <text x=\"{LABEL_W}\" y=\"{}\">0</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{} {unit} / minute</text></g>",
        legend_y + 26,
        LABEL_W + 200,
        legend_y + 26,
        map.max
    );
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(start: &str, end: &str, region_start: bool, region: &str) -> Row {
        Row {
            start_key: start.into(),
            end_key: end.into(),
            region_start,
            region: region.into(),
        }
    }

    fn source() -> Source {
        Source {
            table: "t".into(),
            rows: vec![
                row("", "b", true, "r1"),
                row("b", "c", false, "r1"),
                row("c", "", true, "r2"),
            ],
            minutes: vec![0, 60_000],
            reads: vec![vec![1, 0, 0], vec![0, 0, 2]],
            writes: vec![vec![0, 5, 1], vec![0, 0, 9]],
            bytes: vec![vec![10, 50, 10], vec![0, 0, 90]],
        }
    }

    #[test]
    fn a_map_keeps_the_chosen_metric_and_totals_rows_and_regions() {
        let map = Heatmap::from_source(source(), Metric::Writes);
        assert_eq!(map.values, vec![vec![0, 5, 1], vec![0, 0, 9]]);
        assert_eq!(map.row_totals, vec![0, 5, 10]);
        assert_eq!(map.max, 9);
        assert_eq!(map.regions.len(), 2);
        assert_eq!((map.regions[0].writes, map.regions[0].reads), (5, 1));
        assert_eq!(map.regions[0].end_key, "c");
        assert_eq!(map.regions[1].writes, 10);
        let hottest: Vec<&str> = map.hottest.iter().map(|h| h.start_key.as_str()).collect();
        assert_eq!(hottest, vec!["c", "b"], "busiest first, idle rows left out");
    }

    #[test]
    fn colours_run_from_dark_at_zero_to_pale_at_the_busiest_cell() {
        assert_eq!(colour(0, 10), "#0c0e2c");
        assert_eq!(colour(10, 10), "#fcffa4");
        assert_ne!(colour(1, 10), colour(0, 10), "a little load still shows");
    }

    #[test]
    fn the_svg_escapes_keys_and_draws_rows_cells_and_region_boundaries() {
        let mut s = source();
        s.rows[1].start_key = "<b\"".into();
        let svg = svg(&Heatmap::from_source(s, Metric::Writes));
        assert!(!svg.contains("<b\""), "keys escaped");
        assert!(svg.contains("&lt;b&quot;"));
        assert_eq!(svg.matches("class=\"row-label\"").count(), 3);
        assert_eq!(
            svg.matches("class=\"cell\"").count(),
            3,
            "only non-zero cells"
        );
        assert_eq!(svg.matches("class=\"region-boundary\"").count(), 2);
    }
}
