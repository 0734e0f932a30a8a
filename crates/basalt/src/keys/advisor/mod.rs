//! The row-key advisor: looks at a sample of row keys and says, with
//! numbers, whether writes will pile onto one region and what to change.
//!
//! [`analyze`] is pure: keys (and optionally the table's region bounds) in,
//! a [`KeyReport`] out. The pipeline:
//!
//! 1. statistics: key lengths (min, p50, p99, max), distinct first bytes,
//!    the most common 1-, 2- and 4-byte prefixes with their shares;
//! 2. in write order only: the share of keys above every key before them
//!    (a new maximum; about 1.0 for a monotonic key, about `ln(n)/n` for
//!    random ones) and the rank correlation of position and key (robust to
//!    writers interleaving a little out of order);
//! 3. the leading field ([`detect`]): a time (decimal or binary epoch,
//!    ISO-8601 or compact date, reversed timestamp) or a dense counter at
//!    offset 0; otherwise leading bytes spread evenly over a small
//!    alphabet or with high entropy (a salt or a hash prefix: the layout is
//!    [`Layout::Spread`]) and the field behind them; otherwise a field
//!    after a prefix every key shares (`events#1763...`);
//! 4. the verdict: monotonic when the sample's write order says so, or, in
//!    key order, when the leading field is a time or a counter; never
//!    when the leading bytes are already spread;
//! 5. with region bounds: the sample's share per region and, for a
//!    monotonic key, the region every new write goes to;
//! 6. recommendations, ranked, each computed on the sample (salting it,
//!    hashing it, reversing the field), and split points: quantiles of the
//!    transformed sample, as the shell's `SPLITS => [...]`.
//!
//! Every threshold is a field of [`AnalyzeOptions`], documented there and
//! in docs/row-keys.md.

mod detect;
mod render;
pub mod schema;

use std::collections::{BTreeMap, HashMap};

use serde::{Serialize, Serializer};

use crate::keys::salt::{HashPrefix, Salt, MAX_SALT_BUCKETS};
use crate::keys::text::{escape_bytes, splits_clause};

pub use schema::{
    index_suggestions, row_warnings, schema_warnings, schema_warnings_with, RowShape, SchemaLimits,
};

/// What the order of a sample's keys means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleOrder {
    /// The order the keys are (or will be) written in: a log of arriving
    /// keys.
    Write,
    /// Sorted, as read from a table: order says nothing about writes.
    Key,
}

/// The keys to analyse, and what their order means.
#[derive(Debug, Clone)]
pub struct KeySample {
    keys: Vec<Vec<u8>>,
    order: SampleOrder,
    population: Option<u64>,
}

impl KeySample {
    /// A sample of `keys` in `order`.
    pub fn new(keys: Vec<Vec<u8>>, order: SampleOrder) -> KeySample {
        KeySample {
            keys,
            order,
            population: None,
        }
    }

    /// Builder: the number of rows the sample was drawn from (a table's
    /// row count when it was sampled one row in k). Counter detection
    /// compares a field's range with it; without it, the sample's size.
    pub fn population(mut self, rows: u64) -> KeySample {
        self.population = Some(rows);
        self
    }

    /// The keys, in the order given.
    pub fn keys(&self) -> &[Vec<u8>] {
        &self.keys
    }

    /// What the order means.
    pub fn order(&self) -> SampleOrder {
        self.order
    }

    /// Rows the sample stands for (at least its own size).
    pub fn rows(&self) -> u64 {
        self.population.unwrap_or(0).max(self.keys.len() as u64)
    }
}

/// One region of the table the keys are (or will be) written to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegionBounds {
    /// First row (inclusive); empty for the table's start.
    #[serde(serialize_with = "ser_key")]
    pub start: Vec<u8>,
    /// End row (exclusive); empty for the table's end.
    #[serde(serialize_with = "ser_key")]
    pub end: Vec<u8>,
}

impl RegionBounds {
    /// `[start, end)` as the shell prints keys.
    pub fn label(&self) -> String {
        let end = if self.end.is_empty() {
            "+inf".to_string()
        } else {
            format!("'{}'", escape_bytes(&self.end))
        };
        format!("['{}', {end})", escape_bytes(&self.start))
    }
}

/// The advisor's thresholds. Defaults in [`AnalyzeOptions::default`].
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzeOptions {
    /// Salt buckets to recommend. Default: the table's region count when
    /// region bounds are given and there are at least 2, else
    /// `default_buckets`.
    pub buckets: Option<u16>,
    /// Regions to pre-split into (split points: one fewer). Default: the
    /// salt's bucket count when salting is recommended, the distinct
    /// leading values of keys already spread (when at most 256), else
    /// `default_regions`.
    pub regions: Option<usize>,
    /// Salt buckets when nothing else says: 16.
    pub default_buckets: u16,
    /// Regions to pre-split into when nothing else says: 8.
    pub default_regions: usize,
    /// Share of keys a field must match to be reported: 0.9.
    pub field_share: f64,
    /// Earliest plausible time for epoch fields, epoch seconds:
    /// 2000-01-01 (946684800).
    pub epoch_from_secs: i64,
    /// Latest plausible time (exclusive), epoch seconds: 2100-01-01
    /// (4102444800).
    pub epoch_to_secs: i64,
    /// A counter's values span at most this many times the rows the sample
    /// stands for: 4.0.
    pub counter_density: f64,
    /// A counter's values are at least this share distinct: 0.5.
    pub counter_distinct_share: f64,
    /// Write order: monotonic when at least this share of keys is above
    /// every key before: 0.5.
    pub monotonic_new_max_share: f64,
    /// Write order: monotonic when position and key rank correlate at
    /// least this much (Spearman): 0.9.
    pub monotonic_rank_correlation: f64,
    /// Leading values count as even when the largest share is within this
    /// fraction of the smallest (or a chi-square test finds the spread is
    /// sampling noise): 0.2.
    pub even_tolerance: f64,
    /// Most common prefixes listed per width: 3.
    pub top_prefixes: usize,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            buckets: None,
            regions: None,
            default_buckets: 16,
            default_regions: 8,
            field_share: 0.9,
            epoch_from_secs: 946_684_800,
            epoch_to_secs: 4_102_444_800,
            counter_density: 4.0,
            counter_distinct_share: 0.5,
            monotonic_new_max_share: 0.5,
            monotonic_rank_correlation: 0.9,
            even_tolerance: 0.2,
            top_prefixes: 3,
        }
    }
}

/// A unit of an epoch field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeUnit {
    /// Seconds since 1970-01-01.
    Seconds,
    /// Milliseconds (Java's and HBase's timestamps).
    Millis,
    /// Microseconds.
    Micros,
}

impl TimeUnit {
    /// Units in a second.
    pub fn per_second(self) -> u64 {
        match self {
            TimeUnit::Seconds => 1,
            TimeUnit::Millis => 1_000,
            TimeUnit::Micros => 1_000_000,
        }
    }

    fn name(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "seconds",
            TimeUnit::Millis => "milliseconds",
            TimeUnit::Micros => "microseconds",
        }
    }
}

/// What a leading field is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FieldKind {
    /// Epoch time as decimal digits (10 for seconds, 13 millis, 16 micros).
    EpochDecimal {
        /// Its unit.
        unit: TimeUnit,
    },
    /// Epoch time as a big-endian integer.
    EpochBinary {
        /// Its unit.
        unit: TimeUnit,
        /// 8 or 4 bytes.
        width: u8,
        /// With the sign bit flipped (`keys::encode_i64`).
        sign_flipped: bool,
    },
    /// `i64::MAX - ts`, 8 bytes big-endian (`keys::reversed_timestamp`):
    /// newest first, so every new write goes to the table's first region.
    ReversedEpochBinary {
        /// Its unit.
        unit: TimeUnit,
    },
    /// A date: ISO-8601 (`2026-11-23T10:15:00Z`) or compact (`20261123...`).
    Date {
        /// `yyyyMMdd...` rather than `yyyy-MM-dd...`.
        compact: bool,
    },
    /// Decimal digits whose values are dense: a sequence number.
    CounterDecimal,
    /// A big-endian integer whose values are dense.
    CounterBinary {
        /// 8 or 4 bytes.
        width: u8,
        /// With the sign bit flipped.
        sign_flipped: bool,
    },
    /// No known encoding, but the keys' leading bytes increase (or
    /// decrease) in write order.
    Ordered,
}

impl FieldKind {
    /// Whether this is a time.
    pub fn is_time(self) -> bool {
        matches!(
            self,
            FieldKind::EpochDecimal { .. }
                | FieldKind::EpochBinary { .. }
                | FieldKind::ReversedEpochBinary { .. }
                | FieldKind::Date { .. }
        )
    }

    /// Whether this is a counter.
    pub fn is_counter(self) -> bool {
        matches!(
            self,
            FieldKind::CounterDecimal | FieldKind::CounterBinary { .. }
        )
    }

    /// A phrase for reports.
    pub fn describe(self) -> String {
        match self {
            FieldKind::EpochDecimal { unit } => {
                let digits = match unit {
                    TimeUnit::Seconds => 10,
                    TimeUnit::Millis => 13,
                    TimeUnit::Micros => 16,
                };
                format!("epoch {} as {digits} decimal digits", unit.name())
            }
            FieldKind::EpochBinary {
                unit,
                width,
                sign_flipped,
            } => format!(
                "epoch {} as a {width}-byte big-endian integer{}",
                unit.name(),
                if sign_flipped {
                    " (sign bit flipped)"
                } else {
                    ""
                }
            ),
            FieldKind::ReversedEpochBinary { unit } => format!(
                "a reversed timestamp (i64::MAX - epoch {}), 8 bytes big-endian",
                unit.name()
            ),
            FieldKind::Date { compact: false } => "an ISO-8601 date".to_string(),
            FieldKind::Date { compact: true } => "a compact date (yyyyMMdd...)".to_string(),
            FieldKind::CounterDecimal => "a counter in decimal digits".to_string(),
            FieldKind::CounterBinary {
                width,
                sign_flipped,
            } => format!(
                "a counter as a {width}-byte big-endian integer{}",
                if sign_flipped {
                    " (sign bit flipped)"
                } else {
                    ""
                }
            ),
            FieldKind::Ordered => "ordered bytes of no known encoding".to_string(),
        }
    }
}

/// A leading field found in the keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldMatch {
    /// What it is.
    pub kind: FieldKind,
    /// Its first byte in the key.
    pub start: usize,
    /// One past its last byte (in most keys).
    pub end: usize,
    /// Share of the sample's keys that have it.
    pub share: f64,
    /// Distinct values seen.
    pub distinct: usize,
    /// Smallest value (a UTC time for times, the number for counters).
    pub min: String,
    /// Largest value.
    pub max: String,
}

/// Leading bytes spread evenly: a salt, a hash prefix, or random keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpreadStats {
    /// Bytes of the spread prefix (1, 2 or 4).
    pub width: usize,
    /// Distinct values of those bytes.
    pub distinct: usize,
    /// The most common value's share of the keys.
    pub max_share: f64,
    /// The least common (seen) value's share.
    pub min_share: f64,
    /// Recognised by the first byte's entropy rather than counts.
    pub high_entropy: bool,
}

/// How the keys begin.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "layout", rename_all = "snake_case")]
pub enum Layout {
    /// Nothing spreads the leading bytes.
    Plain,
    /// The leading bytes are already spread evenly.
    Spread(SpreadStats),
}

/// Key lengths in bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LengthStats {
    /// Shortest.
    pub min: usize,
    /// Median.
    pub p50: usize,
    /// 99th percentile.
    pub p99: usize,
    /// Longest.
    pub max: usize,
    /// Mean.
    pub mean: f64,
}

/// One common prefix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrefixShare {
    /// The prefix.
    #[serde(serialize_with = "ser_key")]
    pub prefix: Vec<u8>,
    /// Keys starting with it.
    pub keys: usize,
    /// Their share of the sample.
    pub share: f64,
}

/// The most common prefixes of one width.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrefixStats {
    /// Prefix width in bytes.
    pub width: usize,
    /// Distinct prefixes of this width.
    pub distinct: usize,
    /// The most common, most common first.
    pub top: Vec<PrefixShare>,
}

/// Order statistics of a write-order sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WriteOrderStats {
    /// Share of keys (after the first) above every key before them.
    pub new_max_share: f64,
    /// Share of keys (after the first) below every key before them.
    pub new_min_share: f64,
    /// Spearman correlation of position and key rank (1: increasing).
    pub rank_correlation: f64,
}

/// The direction of a monotonic key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// New keys sort after the old: writes go to the last region.
    Increasing,
    /// New keys sort before the old (reversed timestamps): writes go to
    /// the first region.
    Decreasing,
}

/// The verdict that new keys pile onto one end of the key space.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Monotonic {
    /// Which way.
    pub direction: Direction,
    /// The bytes that make it so.
    pub field: FieldMatch,
    /// Why the advisor thinks so, with numbers.
    pub evidence: String,
}

/// A decimal field of varying width.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecimalWidths {
    /// The field's first byte.
    pub start: usize,
    /// Fewest digits.
    pub min_width: usize,
    /// Most digits.
    pub max_width: usize,
    /// Two sampled values that sort out of numeric order as text (the
    /// smaller number first: it sorts after the larger), if the sample
    /// has them.
    pub misordered: Option<(String, String)>,
}

/// The sample's keys in one region.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegionShare {
    /// The region.
    pub region: RegionBounds,
    /// Sampled keys in it.
    pub keys: usize,
    /// Their share of the sample.
    pub share: f64,
}

/// How the sample spreads over the table's regions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegionSpread {
    /// Per region, in key order.
    pub regions: Vec<RegionShare>,
    /// For a monotonic key: the region (index) every new write goes to.
    pub hot_region: Option<usize>,
    /// Write order: the newest tenth of the sample's share in that region.
    pub recent_share_in_hot: Option<f64>,
    /// One sentence on where writes go.
    pub projection: String,
}

/// What a recommendation proposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecommendationKind {
    /// Prefix a salt bucket ([`Salt`]).
    Salt,
    /// Prefix `md5(key)[0..4]` ([`HashPrefix`]).
    HashPrefix,
    /// Store `i64::MAX - ts` for newest-first reads.
    ReversedTimestamp,
    /// Reverse a counter's bytes.
    ReverseField,
    /// Reverse a host name's labels.
    ReverseDomain,
    /// Pad decimal fields to a fixed width.
    PadDecimal,
    /// Pre-split at the computed split points.
    PreSplit,
    /// The keys are fine as they are.
    KeepAsIs,
}

/// One ranked recommendation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// What it proposes.
    pub kind: RecommendationKind,
    /// One line.
    pub title: String,
    /// The reasoning and the numbers, a line each.
    pub details: Vec<String>,
    /// The numbers by name (shares are fractions of the sample).
    pub numbers: BTreeMap<String, f64>,
}

/// What the advisor found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyReport {
    /// Where the keys came from, as the caller describes it (empty from
    /// [`analyze`]).
    pub source: String,
    /// Keys in the sample.
    pub keys: usize,
    /// What their order means.
    pub order: SampleOrder,
    /// Rows the sample stands for.
    pub rows: u64,
    /// Key lengths.
    pub lengths: LengthStats,
    /// Distinct first bytes.
    pub distinct_first_bytes: usize,
    /// The most common 1-, 2- and 4-byte prefixes.
    pub prefixes: Vec<PrefixStats>,
    /// How the keys begin.
    pub layout: Layout,
    /// The leading field (behind the spread prefix, for a spread layout).
    pub leading_field: Option<FieldMatch>,
    /// Write order statistics (write-order samples only).
    pub write_order: Option<WriteOrderStats>,
    /// Whether new keys pile onto one end.
    pub monotonic: Option<Monotonic>,
    /// A decimal field whose width varies.
    pub decimal_widths: Option<DecimalWidths>,
    /// The spread over the given regions.
    pub regions: Option<RegionSpread>,
    /// Ranked, best first.
    pub recommendations: Vec<Recommendation>,
    /// Keys to pre-split at (for the first recommendation's key layout).
    #[serde(serialize_with = "ser_keys")]
    pub split_points: Vec<Vec<u8>>,
    /// [`KeyReport::split_points`] as the shell's `SPLITS => [...]`.
    pub splits_clause: String,
    /// Schema and row-shape warnings (see [`schema`]); callers add them.
    pub warnings: Vec<String>,
}

impl KeyReport {
    /// The report for people: short sections with numbers, the
    /// recommendation first.
    pub fn to_text(&self) -> String {
        render::text(self)
    }

    /// The report as pretty-printed JSON (keys in HBase's escaped form).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

fn ser_key<S: Serializer>(key: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&escape_bytes(key))
}

fn ser_keys<S: Serializer>(keys: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(keys.iter().map(|k| escape_bytes(k)))
}

/// [`analyze_with`] with the default thresholds.
pub fn analyze(sample: &KeySample, regions: Option<&[RegionBounds]>) -> KeyReport {
    analyze_with(sample, regions, &AnalyzeOptions::default())
}

/// Analyses `sample` (and how it spreads over `regions`, in key order,
/// when given). Pure: the same input gives the same report.
pub fn analyze_with(
    sample: &KeySample,
    regions: Option<&[RegionBounds]>,
    opts: &AnalyzeOptions,
) -> KeyReport {
    let keys: Vec<&[u8]> = sample.keys.iter().map(Vec::as_slice).collect();
    let n = keys.len();
    let rows = sample.rows();

    // 1. Statistics.
    let lengths = length_stats(&keys);
    let prefixes: Vec<PrefixStats> = [1, 2, 4]
        .into_iter()
        .map(|w| prefix_stats(&keys, w, opts.top_prefixes))
        .collect();
    let distinct_first_bytes = prefixes.first().map_or(0, |p| p.distinct);

    // 2. Write order.
    let write_order = (sample.order == SampleOrder::Write && n >= 2).then(|| write_stats(&keys));

    // 3. The leading field.
    let at_zero =
        detect::time_field(&keys, 0, opts).or_else(|| detect::counter_field(&keys, 0, rows, opts));
    let (layout, field, field_offset) = match at_zero {
        Some(f) => (Layout::Plain, Some(f), 0),
        None => match detect::spread(&keys, opts) {
            Some(s) => {
                let w = s.width;
                // A delimiter after the salt: `07-...`, `a3|...`.
                let delimited = keys
                    .iter()
                    .filter(|k| k.get(w).is_some_and(|b| !b.is_ascii_alphanumeric()))
                    .count();
                let o = if n > 0 && delimited as f64 >= opts.field_share * n as f64 {
                    w + 1
                } else {
                    w
                };
                let inner = detect::time_field(&keys, o, opts)
                    .or_else(|| detect::counter_field(&keys, o, rows, opts));
                (Layout::Spread(s), inner, o)
            }
            None => {
                let o = detect::after_common_prefix(&keys).unwrap_or(0);
                let f = (o > 0)
                    .then(|| {
                        detect::time_field(&keys, o, opts)
                            .or_else(|| detect::counter_field(&keys, o, rows, opts))
                    })
                    .flatten();
                (Layout::Plain, f, o)
            }
        },
    };

    // 4. The verdict.
    let monotonic = verdict(
        &keys,
        sample.order,
        &layout,
        field.as_ref(),
        write_order.as_ref(),
        opts,
    );
    let decimal_widths = detect::varying_decimal(&keys, field_offset, opts);

    // 5. Regions.
    let mut sorted_regions: Option<Vec<RegionBounds>> = regions.map(<[RegionBounds]>::to_vec);
    if let Some(r) = sorted_regions.as_mut() {
        r.sort_by(|a, b| a.start.cmp(&b.start));
    }
    let region_spread = sorted_regions
        .as_deref()
        .filter(|r| !r.is_empty())
        .map(|r| spread_over(&keys, sample.order, r, monotonic.as_ref()));

    // 6. Recommendations and split points.
    let region_count = sorted_regions.as_ref().map_or(0, Vec::len);
    let (recommendations, split_points) = recommend(
        &keys,
        &layout,
        field.as_ref(),
        monotonic.as_ref(),
        decimal_widths.as_ref(),
        region_count,
        opts,
    );
    let splits_clause = splits_clause(&split_points);
    KeyReport {
        source: String::new(),
        keys: n,
        order: sample.order,
        rows,
        lengths,
        distinct_first_bytes,
        prefixes,
        layout,
        leading_field: field,
        write_order,
        monotonic,
        decimal_widths,
        regions: region_spread,
        recommendations,
        split_points,
        splits_clause,
        warnings: Vec::new(),
    }
}

fn length_stats(keys: &[&[u8]]) -> LengthStats {
    let mut lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
    if lens.is_empty() {
        return LengthStats::default();
    }
    lens.sort_unstable();
    let at = |q: f64| lens[((lens.len() - 1) as f64 * q).round() as usize];
    LengthStats {
        min: lens[0],
        p50: at(0.5),
        p99: at(0.99),
        max: lens[lens.len() - 1],
        mean: lens.iter().sum::<usize>() as f64 / lens.len() as f64,
    }
}

fn prefix_stats(keys: &[&[u8]], width: usize, top: usize) -> PrefixStats {
    let mut counts: HashMap<&[u8], usize> = HashMap::new();
    for k in keys {
        *counts.entry(&k[..width.min(k.len())]).or_default() += 1;
    }
    let distinct = counts.len();
    let mut all: Vec<(&[u8], usize)> = counts.into_iter().collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    PrefixStats {
        width,
        distinct,
        top: all
            .into_iter()
            .take(top)
            .map(|(p, c)| PrefixShare {
                prefix: p.to_vec(),
                keys: c,
                share: c as f64 / keys.len().max(1) as f64,
            })
            .collect(),
    }
}

fn write_stats(keys: &[&[u8]]) -> WriteOrderStats {
    let n = keys.len();
    let (mut max, mut min) = (keys[0], keys[0]);
    let (mut new_max, mut new_min) = (0usize, 0usize);
    for k in &keys[1..] {
        if *k > max {
            new_max += 1;
            max = k;
        }
        if *k < min {
            new_min += 1;
            min = k;
        }
    }
    // Spearman: ranks of keys (ties by position), against positions.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| keys[a].cmp(keys[b]).then(a.cmp(&b)));
    let mut d2 = 0f64;
    for (rank, &pos) in order.iter().enumerate() {
        let d = rank as f64 - pos as f64;
        d2 += d * d;
    }
    let nf = n as f64;
    WriteOrderStats {
        new_max_share: new_max as f64 / (nf - 1.0),
        new_min_share: new_min as f64 / (nf - 1.0),
        rank_correlation: 1.0 - 6.0 * d2 / (nf * (nf * nf - 1.0)),
    }
}

fn pct(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

fn verdict(
    keys: &[&[u8]],
    order: SampleOrder,
    layout: &Layout,
    field: Option<&FieldMatch>,
    write: Option<&WriteOrderStats>,
    opts: &AnalyzeOptions,
) -> Option<Monotonic> {
    if matches!(layout, Layout::Spread(_)) {
        return None;
    }
    let described = |f: &FieldMatch| {
        format!(
            "bytes {}..{} are {} ({} of keys, {} to {})",
            f.start,
            f.end,
            f.kind.describe(),
            pct(f.share),
            f.min,
            f.max
        )
    };
    match (order, write) {
        (SampleOrder::Write, Some(w)) => {
            let direction = if w.new_max_share >= opts.monotonic_new_max_share
                || w.rank_correlation >= opts.monotonic_rank_correlation
            {
                Direction::Increasing
            } else if w.new_min_share >= opts.monotonic_new_max_share
                || w.rank_correlation <= -opts.monotonic_rank_correlation
            {
                Direction::Decreasing
            } else {
                return None;
            };
            let field = field.cloned().unwrap_or_else(|| {
                let len = detect::ordered_prefix(keys, direction == Direction::Decreasing);
                FieldMatch {
                    kind: FieldKind::Ordered,
                    start: 0,
                    end: len,
                    share: 1.0,
                    distinct: 0,
                    min: String::new(),
                    max: String::new(),
                }
            });
            let what = if field.kind == FieldKind::Ordered {
                format!("the leading {} bytes increase in write order", field.end)
            } else {
                described(&field)
            };
            Some(Monotonic {
                direction,
                evidence: format!(
                    "{what}; in write order {} of keys are above every key before them \
                     ({} below), rank correlation {:.2}",
                    pct(w.new_max_share),
                    pct(w.new_min_share),
                    w.rank_correlation
                ),
                field,
            })
        }
        _ => {
            let f = field.filter(|f| f.kind.is_time() || f.kind.is_counter())?;
            let direction = if matches!(f.kind, FieldKind::ReversedEpochBinary { .. }) {
                Direction::Decreasing
            } else {
                Direction::Increasing
            };
            let next = if f.kind.is_time() {
                "time only moves on"
            } else {
                "a counter's next value is its largest"
            };
            Some(Monotonic {
                direction,
                evidence: format!("{}; {next}", described(f)),
                field: f.clone(),
            })
        }
    }
}

/// The index of the region holding `key`.
fn region_of(regions: &[RegionBounds], key: &[u8]) -> Option<usize> {
    regions
        .partition_point(|r| r.start.as_slice() <= key)
        .checked_sub(1)
}

fn spread_over(
    keys: &[&[u8]],
    order: SampleOrder,
    regions: &[RegionBounds],
    monotonic: Option<&Monotonic>,
) -> RegionSpread {
    let n = keys.len();
    let mut counts = vec![0usize; regions.len()];
    for k in keys {
        if let Some(i) = region_of(regions, k) {
            counts[i] += 1;
        }
    }
    let shares: Vec<RegionShare> = regions
        .iter()
        .zip(&counts)
        .map(|(r, &c)| RegionShare {
            region: r.clone(),
            keys: c,
            share: c as f64 / n.max(1) as f64,
        })
        .collect();
    let Some(m) = monotonic else {
        let busiest = shares
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.keys.cmp(&b.1.keys).then(b.0.cmp(&a.0)));
        let projection = match busiest {
            Some((i, s)) => format!(
                "writes spread like the sample: the busiest region, {} {}, takes {}",
                i + 1,
                s.region.label(),
                pct(s.share)
            ),
            None => "no keys".to_string(),
        };
        return RegionSpread {
            regions: shares,
            hot_region: None,
            recent_share_in_hot: None,
            projection,
        };
    };
    let edge = match m.direction {
        Direction::Increasing => keys.iter().max(),
        Direction::Decreasing => keys.iter().min(),
    };
    let hot = edge.and_then(|k| region_of(regions, k));
    let recent = match (order, hot) {
        (SampleOrder::Write, Some(h)) if n >= 10 => {
            let tail = &keys[n - n / 10..];
            let inside = tail
                .iter()
                .filter(|k| region_of(regions, k) == Some(h))
                .count();
            Some(inside as f64 / tail.len() as f64)
        }
        _ => None,
    };
    let projection = match hot {
        Some(h) => {
            let (side, end) = match m.direction {
                Direction::Increasing => ("after", "end"),
                Direction::Decreasing => ("before", "start"),
            };
            let mut p = format!(
                "new keys sort {side} every sampled key: all new writes go to region {} {} \
                 (the one holding the key space's {end}), 1 of {} regions",
                h + 1,
                regions[h].label(),
                regions.len()
            );
            if let Some(r) = recent {
                p.push_str(&format!(
                    "; the newest tenth of the sample already lands there: {}",
                    pct(r)
                ));
            }
            p
        }
        None => "no keys".to_string(),
    };
    RegionSpread {
        regions: shares,
        hot_region: hot,
        recent_share_in_hot: recent,
        projection,
    }
}

/// Split points that cut the sorted, distinct `keys` into `regions` parts
/// of equal counts, each the shortest prefix of the first key of its part
/// that still sorts after the key before it.
pub fn quantile_splits(keys: &[Vec<u8>], regions: usize) -> Vec<Vec<u8>> {
    let mut sorted: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let m = sorted.len();
    let mut out: Vec<Vec<u8>> = Vec::new();
    for i in 1..regions {
        let idx = i * m / regions.max(1);
        if idx == 0 || idx >= m {
            continue;
        }
        let (prev, cur) = (sorted[idx - 1], sorted[idx]);
        let common = prev.iter().zip(cur).take_while(|(a, b)| a == b).count();
        let split = cur[..(common + 1).min(cur.len())].to_vec();
        if split.is_empty() || out.last().is_some_and(|l| *l >= split) {
            continue;
        }
        out.push(split);
    }
    out
}

/// Counts of `keys` per bucket of `buckets`, by `bucket_of`.
fn bucket_counts(keys: &[&[u8]], buckets: usize, bucket_of: impl Fn(&[u8]) -> usize) -> Vec<usize> {
    let mut counts = vec![0usize; buckets];
    for k in keys {
        let b = bucket_of(k).min(buckets - 1);
        counts[b] += 1;
    }
    counts
}

fn shares_numbers(counts: &[usize], n: usize) -> BTreeMap<String, f64> {
    let (max, min) = detect::extreme_shares(counts, n);
    BTreeMap::from([
        ("max_share".to_string(), max),
        ("min_share".to_string(), min),
        ("even_share".to_string(), 1.0 / counts.len().max(1) as f64),
    ])
}

#[allow(clippy::too_many_arguments)]
fn recommend(
    keys: &[&[u8]],
    layout: &Layout,
    field: Option<&FieldMatch>,
    monotonic: Option<&Monotonic>,
    widths: Option<&DecimalWidths>,
    region_count: usize,
    opts: &AnalyzeOptions,
) -> (Vec<Recommendation>, Vec<Vec<u8>>) {
    let n = keys.len();
    let mut recs = Vec::new();
    if n == 0 {
        return (recs, Vec::new());
    }
    let buckets = opts.buckets.unwrap_or(if region_count >= 2 {
        region_count.min(usize::from(MAX_SALT_BUCKETS)) as u16
    } else {
        opts.default_buckets
    });
    let split_points;
    let split_basis;

    if let Some(m) = monotonic {
        let salt = Salt::clamped(buckets);
        let b = usize::from(salt.buckets());
        let counts = bucket_counts(keys, b, |k| usize::from(salt.prefix(k)));
        let mut numbers = shares_numbers(&counts, n);
        numbers.insert("buckets".into(), b as f64);
        let (max, min) = detect::extreme_shares(&counts, n);
        let regions = opts.regions.unwrap_or(b);
        (split_points, split_basis) = if regions == b {
            (
                salt.split_keys(),
                "the salt's bucket boundaries (Salt::split_keys)",
            )
        } else {
            let salted: Vec<Vec<u8>> = keys.iter().map(|k| salt.encode(k)).collect();
            (
                quantile_splits(&salted, regions),
                "quantiles of the salted sample, each cut as short as it can be",
            )
        };
        let hot_side = match m.direction {
            Direction::Increasing => "last",
            Direction::Decreasing => "first",
        };
        recs.push(Recommendation {
            kind: RecommendationKind::Salt,
            title: format!(
                "Salt the keys into {b} buckets: bucket = md5(key)[0..4] as u32 % {b}, one byte in front \
                 (basalt::keys::Salt::new({b}))"
            ),
            details: vec![
                format!(
                    "salting this sample: largest bucket {}, smallest {} (even: {})",
                    pct(max),
                    pct(min),
                    pct(1.0 / b as f64)
                ),
                format!(
                    "writes go to {b} regions at once instead of the {hot_side} one; pre-split at the \
                     bucket boundaries below"
                ),
                "a get computes the bucket from the key (Salt::encode); a range scan fans out \
                 over the buckets and merges them (basalt::keys::SaltedScan::scan_salted)"
                    .to_string(),
            ],
            numbers,
        });

        let hp = HashPrefix::MD5_4;
        let ranges = b;
        let counts = bucket_counts(keys, ranges, |k| {
            usize::from(hp.prefix(k).first().copied().unwrap_or(0)) * ranges / 256
        });
        let (max, min) = detect::extreme_shares(&counts, n);
        let mut numbers = shares_numbers(&counts, n);
        numbers.insert("prefix_bytes".into(), 4.0);
        recs.push(Recommendation {
            kind: RecommendationKind::HashPrefix,
            title: "Or prefix md5(key)[0..4] (basalt::keys::HashPrefix::new(4)), pre-split with \
                    UniformSplit"
                .to_string(),
            details: vec![
                format!(
                    "hashing this sample: over {ranges} equal ranges the largest takes {}, the \
                     smallest {}",
                    pct(max),
                    pct(min)
                ),
                "loses range scans over the key (neighbours land far apart): only for point gets"
                    .to_string(),
            ],
            numbers,
        });

        let f = &m.field;
        if f.kind.is_time() && !matches!(f.kind, FieldKind::ReversedEpochBinary { .. }) {
            recs.push(Recommendation {
                kind: RecommendationKind::ReversedTimestamp,
                title: "For newest-first reads, store the time as i64::MAX - ts \
                        (basalt::keys::reversed_timestamp, HBase's Long.MAX_VALUE - ts)"
                    .to_string(),
                details: vec![
                    format!(
                        "a scan from the start of a prefix then returns the newest row first \
                         (sampled times: {} to {})",
                        f.min, f.max
                    ),
                    "alone it moves the hotspot to the first region: keep a salt or an entity id \
                     in front of it"
                        .to_string(),
                ],
                numbers: BTreeMap::from([("regions_taking_writes_alone".to_string(), 1.0)]),
            });
        } else if f.kind.is_counter() {
            let counts: HashMap<u8, usize> = keys.iter().fold(HashMap::new(), |mut acc, k| {
                if let Some(last) = k.get(f.start..f.end.min(k.len())).and_then(|s| s.last()) {
                    *acc.entry(*last).or_default() += 1;
                }
                acc
            });
            let counts: Vec<usize> = counts.into_values().collect();
            let total: usize = counts.iter().sum();
            let (max, min) = detect::extreme_shares(&counts, total);
            let mut numbers = shares_numbers(&counts, total);
            numbers.insert("leading_values".into(), counts.len() as f64);
            recs.push(Recommendation {
                kind: RecommendationKind::ReverseField,
                title: format!(
                    "Or reverse the counter (bytes {}..{}) so its fastest-changing end leads \
                     (basalt::keys::reverse)",
                    f.start, f.end
                ),
                details: vec![
                    format!(
                        "reversed, this sample's counters start with {} different bytes: largest \
                         share {}, smallest {}",
                        counts.len(),
                        pct(max),
                        pct(min)
                    ),
                    "pad decimal counters to a fixed width first; range scans over the counter \
                     are lost"
                        .to_string(),
                ],
                numbers,
            });
        }
    } else if let Layout::Spread(s) = layout {
        let regions = opts
            .regions
            .unwrap_or(if s.distinct <= 256 && !s.high_entropy {
                s.distinct
            } else {
                opts.default_regions
            });
        (split_points, split_basis) = if regions == s.distinct && !s.high_entropy {
            let mut prefixes: Vec<Vec<u8>> = keys
                .iter()
                .filter_map(|k| k.get(..s.width).map(<[u8]>::to_vec))
                .collect();
            prefixes.sort_unstable();
            prefixes.dedup();
            (
                prefixes.into_iter().skip(1).collect(),
                "each leading value but the first: one region per value",
            )
        } else {
            let owned: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
            (
                quantile_splits(&owned, regions),
                "quantiles of the sampled keys, each cut as short as it can be",
            )
        };
        let inner = field.map_or(String::new(), |f| {
            format!(
                ", followed by {} (bytes {}..{})",
                f.kind.describe(),
                f.start,
                f.end
            )
        });
        recs.push(Recommendation {
            kind: RecommendationKind::KeepAsIs,
            title: "Keep the keys: their leading bytes already spread writes evenly".to_string(),
            details: vec![format!(
                "the first {} byte(s) take {} values{}: largest share {}, smallest {} ({})",
                s.width,
                s.distinct,
                inner,
                pct(s.max_share),
                pct(s.min_share),
                if s.high_entropy {
                    "high entropy, as a hash".to_string()
                } else {
                    format!(
                        "within {} of each other or sampling noise",
                        pct(opts.even_tolerance)
                    )
                }
            )],
            numbers: BTreeMap::from([
                ("distinct_leading_values".to_string(), s.distinct as f64),
                ("max_share".to_string(), s.max_share),
                ("min_share".to_string(), s.min_share),
            ]),
        });
    } else {
        let owned: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
        split_points = quantile_splits(&owned, opts.regions.unwrap_or(opts.default_regions));
        split_basis = "quantiles of the sampled keys, each cut as short as it can be";
        recs.push(Recommendation {
            kind: RecommendationKind::KeepAsIs,
            title: "No write hotspot found: keep the key order".to_string(),
            details: vec![format!(
                "no monotonic leading field; {} distinct first byte(s)",
                detect_distinct_first(keys)
            )],
            numbers: BTreeMap::new(),
        });
        if let Some(count) = detect::domain_keys(keys, opts) {
            recs.push(Recommendation {
                kind: RecommendationKind::ReverseDomain,
                title: "Reverse the host name's labels (www.example.com -> com.example.www) so \
                        a domain's pages sort together"
                    .to_string(),
                details: vec![format!(
                    "{} of keys start with a host name; reversed, one prefix scan reads a whole \
                     domain",
                    pct(count as f64 / n as f64)
                )],
                numbers: BTreeMap::from([("share".to_string(), count as f64 / n as f64)]),
            });
        }
    }

    if let Some(w) = widths {
        let example = w.misordered.as_ref().map_or(String::new(), |(a, b)| {
            format!(": '{a}' sorts after '{b}' today")
        });
        recs.push(Recommendation {
            kind: RecommendationKind::PadDecimal,
            title: format!(
                "Pad the decimal field at byte {} to {} digits (basalt::keys::pad_decimal)",
                w.start, w.max_width
            ),
            details: vec![format!(
                "its width varies from {} to {} digits, so keys do not sort by value{example}",
                w.min_width, w.max_width
            )],
            numbers: BTreeMap::from([
                ("min_width".to_string(), w.min_width as f64),
                ("max_width".to_string(), w.max_width as f64),
            ]),
        });
    }

    if !split_points.is_empty() {
        let basis = split_basis;
        recs.push(Recommendation {
            kind: RecommendationKind::PreSplit,
            title: format!(
                "Pre-split into {} regions at these split points",
                split_points.len() + 1
            ),
            details: vec![format!("split at {basis}"), splits_clause(&split_points)],
            numbers: BTreeMap::from([("regions".to_string(), (split_points.len() + 1) as f64)]),
        });
    }
    (recs, split_points)
}

fn detect_distinct_first(keys: &[&[u8]]) -> usize {
    let mut seen = [false; 256];
    for k in keys {
        if let Some(b) = k.first() {
            seen[usize::from(*b)] = true;
        }
    }
    seen.iter().filter(|s| **s).count()
}

#[cfg(test)]
mod tests;
