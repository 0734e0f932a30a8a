//! The key heatmap of a table: load drawn against the key space (rows of
//! the matrix) and time (its columns, one per minute), from the key load
//! each region keeps (`basalt_engine::key_load`).
//!
//! 1. Gather every minute of key load of the table's regions held here,
//!    within the asked window; a region held by another server has none
//!    here (the heatmap, like HBase's UI, is per process).
//! 2. The key axis. Byte strings have no distance, so the key space is
//!    measured in *ranks*: every bucket boundary retained (each bucket's
//!    start key, and each minute's largest key), of every region and
//!    minute, sorted; rank `r` stands for the keys between the `r`-th
//!    boundary and the next. Each bucket counts as one point of key space
//!    spread evenly over the ranks it covers (so a bucket start is one
//!    quantile of its minute's keys, as the region made it). The axis has
//!    `rows` rows whose boundaries are the quantiles of those points, the
//!    first moved to the start of the table; every region's start key is
//!    added as a boundary and flagged. So keys touched over the whole span
//!    share the axis evenly: a monotonic workload, whose buckets climb
//!    minute after minute, draws a diagonal band, and a salted one spreads
//!    over every row. Rows are only as fine as the boundaries allow: a few
//!    per row at least (an hour of 32 buckets a minute gives about 30 per
//!    row of 64).
//! 3. Each bucket covers `[its start, the next bucket's start)` (the last
//!    one of a minute up to and including the minute's largest key). Its
//!    counts are spread over the axis rows that range overlaps, in
//!    proportion to the ranks each row holds of it (evenly over ranks): an
//!    approximation (nothing says where inside a bucket the keys were),
//!    whose error is at most a bucket's share moved between the rows it
//!    overlaps. Counts stay whole numbers and add up to the bucket's.
//! 4. Totals per row over the span give the hottest ranges (the 10 with
//!    the most reads and writes), and totals per region the table's
//!    spread over its regions.

use std::ops::Range;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use basalt_engine::key_load::{apportion, MINUTE_MS};
use basalt_engine::KeyLoadMinute;
use basalt_types::cell::escape_bytes;

/// How many of the hottest rows [`KeyHeatmap::hottest`] lists.
pub const HOTTEST_RANGES: usize = 10;

/// What [`Database::key_heatmap`] draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HeatmapQuery {
    /// Rows of the key axis before region boundaries are added (they add
    /// at most one row each). Default 64; at least 1.
    pub rows: usize,
    /// Only the last this many minutes (the current one included);
    /// `None`: every minute the regions keep (`key_load_minutes`).
    pub minutes: Option<usize>,
}

impl Default for HeatmapQuery {
    fn default() -> Self {
        HeatmapQuery {
            rows: 64,
            minutes: None,
        }
    }
}

/// One row of the key axis: the keys `[start_key, end_key)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeatmapRow {
    /// First key (inclusive); empty is the start of the table.
    pub start_key: Bytes,
    /// End key (exclusive); empty is the end of the table.
    pub end_key: Bytes,
    /// The start key, printable (HBase's escaping: `\xNN` for bytes that
    /// are not printable ASCII).
    pub label: String,
    /// True when a region starts at `start_key` (a region boundary).
    pub region_start: bool,
    /// Encoded name of the region holding the row's first key.
    pub region: String,
}

/// A range of keys and its load over the whole span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HotRange {
    /// First key (inclusive); empty is the start of the table.
    pub start_key: Bytes,
    /// End key (exclusive); empty is the end of the table.
    pub end_key: Bytes,
    /// Reads.
    pub reads: u64,
    /// Writes.
    pub writes: u64,
    /// Bytes read and written.
    pub bytes: u64,
}

/// One region's load over the heatmap's span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionKeyLoad {
    /// Encoded region name.
    pub region: String,
    /// First key (inclusive).
    pub start_key: Bytes,
    /// End key (exclusive; empty: the end of the table).
    pub end_key: Bytes,
    /// True when the region is open here: only then is its load known.
    pub here: bool,
    /// Reads.
    pub reads: u64,
    /// Writes.
    pub writes: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
}

/// A table's load against its key space, minute by minute.
///
/// In a cluster member only the regions held by this process have key
/// load: rows of regions held elsewhere read zero (their `RegionKeyLoad`
/// says `here: false`), as each HBase region server's UI shows only its
/// own regions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyHeatmap {
    /// The table.
    pub table: String,
    /// The matrices, in this order: `reads`, `writes`, `bytes`.
    pub metric_names: Vec<String>,
    /// The key axis, in key order.
    pub rows: Vec<HeatmapRow>,
    /// The time axis: each minute's start in clock millis, oldest first.
    pub minutes: Vec<i64>,
    /// `reads[minute][row]`.
    pub reads: Vec<Vec<u64>>,
    /// `writes[minute][row]`.
    pub writes: Vec<Vec<u64>>,
    /// Bytes read and written, `bytes[minute][row]`.
    pub bytes: Vec<Vec<u64>>,
    /// The rows with the most reads and writes over the span, hottest
    /// first (at most [`HOTTEST_RANGES`], none without load).
    pub hottest: Vec<HotRange>,
    /// Every region of the table in key order, with its load over the span.
    pub regions: Vec<RegionKeyLoad>,
}

/// A region as the heatmap sees it.
pub(crate) struct RegionInput {
    pub(crate) name: String,
    pub(crate) start: Bytes,
    pub(crate) end: Bytes,
    pub(crate) here: bool,
    pub(crate) minutes: Vec<KeyLoadMinute>,
}

/// Steps 1 to 4 of the module docs.
pub(crate) fn build(
    table: &str,
    mut regions: Vec<RegionInput>,
    query: HeatmapQuery,
    now: i64,
) -> KeyHeatmap {
    // Step 1: the window.
    if let Some(window) = query.minutes {
        let oldest = (now.div_euclid(MINUTE_MS) - window as i64 + 1).saturating_mul(MINUTE_MS);
        for r in &mut regions {
            r.minutes.retain(|m| m.minute_start_ms >= oldest);
        }
    }
    let mut minutes: Vec<i64> = regions
        .iter()
        .flat_map(|r| r.minutes.iter().map(|m| m.minute_start_ms))
        .collect();
    minutes.sort_unstable();
    minutes.dedup();

    // Step 2: the key axis. The ranks of every bucket boundary stand in
    // for the key space (byte strings have no distance); each bucket is
    // one point of it, spread evenly over its ranks.
    let points = RankSpace::new(&regions);
    let mut density = vec![0.0f64; points.len() + 1];
    for minute in regions.iter().flat_map(|r| r.minutes.iter()) {
        for i in 0..minute.buckets.len() {
            let ranks = points.bucket(minute, i);
            let per_rank = 1.0 / ranks.len() as f64;
            density[ranks.start] += per_rank;
            density[ranks.end] -= per_rank;
        }
    }
    // cumulative[r]: the points below rank r.
    let mut cumulative = Vec::with_capacity(points.len() + 1);
    let (mut level, mut sum) = (0.0f64, 0.0f64);
    for d in &density[..points.len()] {
        cumulative.push(sum);
        level += d;
        sum += level;
    }
    cumulative.push(sum);
    let wanted = query.rows.max(1);
    let mut starts: Vec<Bytes> = vec![Bytes::new()];
    if sum > 0.0 {
        for j in 1..wanted {
            let target = sum * j as f64 / wanted as f64;
            // The rank whose cumulative count is nearest the target.
            let above = cumulative.partition_point(|&c| c < target);
            let rank = match above.checked_sub(1) {
                Some(below)
                    if target - cumulative[below]
                        < cumulative[above.min(points.len())] - target =>
                {
                    below
                }
                _ => above,
            };
            if let Some(key) = points.key(rank) {
                starts.push(key.clone());
            }
        }
    }
    starts.extend(regions.iter().map(|r| r.start.clone()));
    starts.sort_unstable();
    starts.dedup();
    let region_of = |key: &Bytes| {
        regions
            .iter()
            .rev()
            .find(|r| r.start <= *key)
            .map_or_else(String::new, |r| r.name.clone())
    };
    let rows: Vec<HeatmapRow> = starts
        .iter()
        .enumerate()
        .map(|(i, start)| HeatmapRow {
            start_key: start.clone(),
            end_key: starts.get(i + 1).cloned().unwrap_or_default(),
            label: escape_bytes(start).to_string(),
            region_start: regions.iter().any(|r| r.start == *start),
            region: region_of(start),
        })
        .collect();
    // Each row's first rank (a row holds the ranks up to the next row's).
    let row_ranks: Vec<usize> = rows.iter().map(|r| points.rank(&r.start_key)).collect();

    // Step 3: each bucket over the rows its ranks fall in, in proportion.
    let zero = || vec![vec![0u64; rows.len()]; minutes.len()];
    let (mut reads, mut writes, mut bytes) = (zero(), zero(), zero());
    let mut per_region = Vec::with_capacity(regions.len());
    for region in &regions {
        let mut load = RegionKeyLoad {
            region: region.name.clone(),
            start_key: region.start.clone(),
            end_key: region.end.clone(),
            here: region.here,
            reads: 0,
            writes: 0,
            bytes_read: 0,
            bytes_written: 0,
        };
        for minute in &region.minutes {
            let Ok(t) = minutes.binary_search(&minute.minute_start_ms) else {
                continue;
            };
            for (i, bucket) in minute.buckets.iter().enumerate() {
                load.reads += bucket.reads;
                load.writes += bucket.writes;
                load.bytes_read += bucket.bytes_read;
                load.bytes_written += bucket.bytes_written;
                let ranks = points.bucket(minute, i);
                let (covered, weights) = overlaps(&row_ranks, points.len(), ranks);
                let spread = |total: u64| apportion(total, &weights);
                let (r, w, b) = (
                    spread(bucket.reads),
                    spread(bucket.writes),
                    spread(bucket.bytes_read + bucket.bytes_written),
                );
                for (k, row) in covered.enumerate() {
                    reads[t][row] += r[k];
                    writes[t][row] += w[k];
                    bytes[t][row] += b[k];
                }
            }
        }
        per_region.push(load);
    }

    // Step 4: the hottest rows over the span.
    let total = |m: &Vec<Vec<u64>>, row: usize| m.iter().map(|minute| minute[row]).sum::<u64>();
    let mut hottest: Vec<HotRange> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| HotRange {
            start_key: row.start_key.clone(),
            end_key: row.end_key.clone(),
            reads: total(&reads, i),
            writes: total(&writes, i),
            bytes: total(&bytes, i),
        })
        .filter(|h| h.reads + h.writes > 0)
        .collect();
    hottest.sort_by_key(|h| std::cmp::Reverse(h.reads + h.writes));
    hottest.truncate(HOTTEST_RANGES);

    KeyHeatmap {
        table: table.to_string(),
        metric_names: ["reads", "writes", "bytes"].map(String::from).to_vec(),
        rows,
        minutes,
        reads,
        writes,
        bytes,
        hottest,
        regions: per_region,
    }
}

/// The distinct bucket boundaries (start keys, and each minute's largest
/// key) of every minute shown, sorted: rank `r` stands for the keys
/// `[keys[r], keys[r + 1])`.
struct RankSpace {
    keys: Vec<Bytes>,
}

impl RankSpace {
    fn new(regions: &[RegionInput]) -> Self {
        let mut keys: Vec<Bytes> = regions
            .iter()
            .flat_map(|r| r.minutes.iter())
            .flat_map(|m| {
                m.buckets
                    .iter()
                    .map(|b| b.start_key.clone())
                    .chain(std::iter::once(m.last_key.clone()))
            })
            .collect();
        keys.sort_unstable();
        keys.dedup();
        RankSpace { keys }
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    fn key(&self, rank: usize) -> Option<&Bytes> {
        self.keys.get(rank)
    }

    /// The rank of the first boundary at or after `key`.
    fn rank(&self, key: &[u8]) -> usize {
        self.keys.partition_point(|k| &k[..] < key)
    }

    /// The ranks bucket `i` of `minute` covers: from its start to the next
    /// bucket's start, the last one through the minute's largest key.
    /// Never empty (a minute's boundaries are distinct keys).
    fn bucket(&self, minute: &KeyLoadMinute, i: usize) -> Range<usize> {
        let start = minute.buckets.get(i).map_or(0, |b| self.rank(&b.start_key));
        let end = match minute.buckets.get(i + 1) {
            Some(next) => self.rank(&next.start_key),
            None => self.rank(&minute.last_key) + 1,
        };
        start..end.max(start + 1).min(self.len().max(start + 1))
    }
}

/// The rows (by index) whose ranks overlap `ranks`, and by how many ranks
/// each: `row_ranks` are the rows' first ranks in order, the last row
/// reaching `total`.
fn overlaps(row_ranks: &[usize], total: usize, ranks: Range<usize>) -> (Range<usize>, Vec<u64>) {
    let row_end = |i: usize| {
        row_ranks
            .get(i + 1)
            .copied()
            .unwrap_or(total)
            .max(row_ranks[i])
    };
    // The row holding the first rank: the last one starting at or before it.
    let first = row_ranks
        .partition_point(|&r| r <= ranks.start)
        .saturating_sub(1);
    let mut last = first;
    let mut weights = Vec::new();
    for (i, &row_start) in row_ranks.iter().enumerate().skip(first) {
        if i > first && row_start >= ranks.end {
            break;
        }
        let from = ranks.start.max(row_start);
        let to = ranks.end.min(row_end(i).max(from));
        weights.push((to - from) as u64);
        last = i;
    }
    if weights.iter().all(|&w| w == 0) {
        // Rows narrower than a rank: the first one takes it.
        weights = vec![0; last + 1 - first];
        weights[0] = 1;
    }
    (first..last + 1, weights)
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt_engine::KeyLoadBucket;

    const T0: i64 = 1_700_000_040_000;

    fn bucket(key: &str, writes: u64) -> KeyLoadBucket {
        KeyLoadBucket {
            start_key: Bytes::copy_from_slice(key.as_bytes()),
            writes,
            bytes_written: writes * 10,
            ..KeyLoadBucket::default()
        }
    }

    fn one_region(minutes: Vec<KeyLoadMinute>) -> Vec<RegionInput> {
        vec![RegionInput {
            name: "r".into(),
            start: Bytes::new(),
            end: Bytes::new(),
            here: true,
            minutes,
        }]
    }

    /// A minute of `count` keys `key(i)` each written once, compressed as a
    /// region would (32 buckets of equal key counts).
    fn minute(t: i64, count: usize, key: impl Fn(usize) -> String) -> KeyLoadMinute {
        let mut keys: Vec<String> = (0..count).map(key).collect();
        keys.sort();
        let per = count / 32;
        KeyLoadMinute {
            minute_start_ms: t,
            buckets: (0..32)
                .map(|b| bucket(&keys[b * per], per as u64))
                .collect(),
            last_key: Bytes::copy_from_slice(keys[count - 1].as_bytes()),
        }
    }

    #[test]
    fn monotonic_writes_draw_a_band_that_rises_minute_after_minute() {
        let minutes: Vec<KeyLoadMinute> = (0..10)
            .map(|m| {
                minute(T0 + m as i64 * MINUTE_MS, 256, |i| {
                    format!("{:010}", m * 1000 + i)
                })
            })
            .collect();
        let map = build("t", one_region(minutes), HeatmapQuery::default(), T0);
        assert_eq!(map.minutes.len(), 10);
        let mut previous_top = 0;
        for (t, row_writes) in map.writes.iter().enumerate() {
            let written: Vec<usize> = (0..map.rows.len()).filter(|&r| row_writes[r] > 0).collect();
            let (low, high) = (written[0], written[written.len() - 1]);
            assert_eq!(written.len(), high - low + 1, "one band: {written:?}");
            assert!(high - low < map.rows.len() / 5, "narrow: {written:?}");
            assert!(
                t == 0 || low >= previous_top,
                "rising: minute {t} {written:?}"
            );
            previous_top = high;
            assert_eq!(row_writes.iter().sum::<u64>(), 256);
        }
        assert_eq!(map.hottest.len(), HOTTEST_RANGES);
    }

    #[test]
    fn salted_writes_fill_every_row_within_a_fifth_of_the_mean() {
        // Salt = a hash of the sequence number, as a key codec would.
        let salted = |m: usize| {
            move |i: usize| {
                let n = (m * 1000 + i) as u64;
                let salt = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56;
                format!("{salt:02x}-{n:010}")
            }
        };
        // Half an hour: the axis needs several boundaries per row to be
        // even (here about 15; ten minutes give 5, and rows within 20%).
        let minutes: Vec<KeyLoadMinute> = (0..30)
            .map(|m| minute(T0 + m as i64 * MINUTE_MS, 2048, salted(m)))
            .collect();
        let map = build("t", one_region(minutes), HeatmapQuery::default(), T0);
        assert_eq!(map.rows.len(), 64);
        let per_row: Vec<u64> = (0..map.rows.len())
            .map(|r| map.writes.iter().map(|m| m[r]).sum())
            .collect();
        let mean = per_row.iter().sum::<u64>() as f64 / per_row.len() as f64;
        for (r, &w) in per_row.iter().enumerate() {
            assert!(
                (w as f64 - mean).abs() <= 0.2 * mean,
                "row {r}: {w} against a mean of {mean}: {per_row:?}"
            );
        }
    }

    #[test]
    fn region_starts_are_boundaries_and_the_window_keeps_the_last_minutes() {
        let regions = vec![
            RegionInput {
                name: "a".into(),
                start: Bytes::new(),
                end: Bytes::from_static(b"m"),
                here: true,
                minutes: vec![
                    KeyLoadMinute {
                        minute_start_ms: T0,
                        buckets: vec![bucket("c", 5)],
                        last_key: Bytes::from_static(b"c"),
                    },
                    KeyLoadMinute {
                        minute_start_ms: T0 + MINUTE_MS,
                        buckets: vec![bucket("d", 7)],
                        last_key: Bytes::from_static(b"d"),
                    },
                ],
            },
            RegionInput {
                name: "b".into(),
                start: Bytes::from_static(b"m"),
                end: Bytes::new(),
                here: false,
                minutes: Vec::new(),
            },
        ];
        let map = build(
            "t",
            regions,
            HeatmapQuery {
                rows: 4,
                minutes: Some(1),
            },
            T0 + MINUTE_MS,
        );
        assert_eq!(map.minutes, [T0 + MINUTE_MS]);
        // The one key seen is the only quantile; the regions' starts join it.
        let starts: Vec<&[u8]> = map.rows.iter().map(|r| &r.start_key[..]).collect();
        assert_eq!(starts, [&b""[..], b"d", b"m"]);
        let flags: Vec<bool> = map.rows.iter().map(|r| r.region_start).collect();
        assert_eq!(flags, [true, false, true]);
        let names: Vec<&str> = map.rows.iter().map(|r| r.region.as_str()).collect();
        assert_eq!(names, ["a", "a", "b"]);
        assert_eq!(map.rows[1].end_key, Bytes::from_static(b"m"));
        assert_eq!(map.rows[2].end_key, Bytes::new());
        assert_eq!(map.writes, [[0, 7, 0]]);
        assert_eq!(map.regions[0].writes, 7);
        assert!(!map.regions[1].here);
        assert_eq!(map.hottest.len(), 1);
        assert_eq!(map.hottest[0].bytes, 70);
    }
}
