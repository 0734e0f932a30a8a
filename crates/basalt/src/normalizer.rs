//! The region normalizer: the planner that steps back after load cools
//! (small cold neighbours merge) and evens sizes (an oversized region
//! splits), as HBase's `SimpleRegionNormalizer` does, with Basalt's load
//! rule on top. Off by default: its switch lives in the catalog
//! (`Database::normalizer_switch`).
//!
//! [`plan_table`] is pure: it sees one table's regions in key order with
//! their size, request rate and age, and answers the moves. Per table:
//! 1. **Too few regions.** A table with fewer than
//!    [`NormalizerConfig::min_region_count`] regions is left alone.
//! 2. **Target.** The target size is the table's average region size.
//! 3. **Splits.** A region larger than twice the target splits at its
//!    size midpoint (the split-by-hand path without a key), unless it is
//!    hot by load-based split's threshold: load-based split owns a hot
//!    region and splits it where its load, not its bytes, is halved.
//! 4. **Merges.** Walking left to right, two ADJACENT regions, neither
//!    planned already, merge when both are old enough
//!    ([`NormalizerConfig::merge_min_age_ms`]; a region id is its creation
//!    time), their combined size is below the target (or one of them is
//!    so small it counts as empty), and both are COLD: their combined
//!    request rate is below [`NormalizerConfig::merge_max_qps`].
//! 5. **Cap.** At most [`NormalizerConfig::max_plans`] plans per table per
//!    run, splits first.
//!
//! The caller (`Master::normalize` in one process, the cluster master's
//! normalizer chore) gathers the facts, carries out each plan through the
//! ordinary split and merge paths and logs it with [`NormalizationPlan::reason`].

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::options::Options;

/// The planner's limits, from [`Options`]'s `normalizer_*` keys.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NormalizerConfig {
    /// A table with fewer regions is left alone (HBase's
    /// `hbase.normalizer.min.region.count`, 3).
    pub min_region_count: usize,
    /// A region younger than this never merges (HBase's
    /// `hbase.normalizer.merge.min_region_age.days`, 3 days): a table just
    /// pre-split is not folded back before its load arrives.
    pub merge_min_age_ms: u64,
    /// A region smaller than this counts as empty: it may merge with a
    /// neighbour whatever their combined size (HBase's
    /// `hbase.normalizer.merge.min_region_size.mb`, 1 MiB).
    pub merge_min_size_bytes: u64,
    /// Two regions merge only while their combined requests per second
    /// stay below this.
    pub merge_max_qps: f64,
    /// Load-based split's request threshold (0: off): a region at or above
    /// it is hot and never split by the normalizer.
    pub hot_qps: f64,
    /// Plans per table per run.
    pub max_plans: usize,
}

impl Default for NormalizerConfig {
    fn default() -> Self {
        NormalizerConfig::from_options(&Options::default())
    }
}

impl NormalizerConfig {
    /// The planner's limits from the options.
    pub fn from_options(options: &Options) -> NormalizerConfig {
        let hot_qps = options.load_split_qps_threshold as f64;
        let mut merge_max_qps = options.normalizer_merge_max_qps as f64;
        // A merged region must stay well under load-based split's
        // threshold, or load-based split would split it again at once and
        // the two would undo each other every period: a cap set at or
        // above the threshold is lowered to a tenth of it.
        if hot_qps > 0.0 && merge_max_qps >= hot_qps {
            merge_max_qps = hot_qps / 10.0;
        }
        NormalizerConfig {
            min_region_count: options.normalizer_min_region_count,
            merge_min_age_ms: options.normalizer_merge_min_age_ms,
            merge_min_size_bytes: options.normalizer_merge_min_size_bytes,
            merge_max_qps,
            hot_qps,
            max_plans: options.normalizer_max_plans,
        }
    }
}

/// What the planner knows of one region.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionFacts {
    /// Region id: its creation time in ms.
    pub id: u64,
    /// First row.
    pub start_key: Bytes,
    /// First row after it (empty: the table's end).
    pub end_key: Bytes,
    /// Store file bytes plus memstore bytes.
    pub size_bytes: u64,
    /// Reads and writes per second over the last minute.
    pub requests_per_sec: f64,
}

/// One move the normalizer plans (and, once carried out, reports).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "plan", rename_all = "snake_case")]
pub enum NormalizationPlan {
    /// Split a region at its size midpoint.
    Split {
        /// Table name.
        table: String,
        /// Region id.
        region: u64,
        /// Its size in bytes.
        size_bytes: u64,
        /// The table's target region size (its average).
        target_bytes: u64,
        /// Its requests per second.
        requests_per_sec: f64,
    },
    /// Merge two adjacent regions.
    Merge {
        /// Table name.
        table: String,
        /// The region holding the lower keys.
        left: u64,
        /// Its right neighbour.
        right: u64,
        /// Their combined size in bytes.
        size_bytes: u64,
        /// The table's target region size (its average).
        target_bytes: u64,
        /// Their combined requests per second.
        requests_per_sec: f64,
    },
}

impl NormalizationPlan {
    /// The table the plan is for.
    pub fn table(&self) -> &str {
        match self {
            NormalizationPlan::Split { table, .. } | NormalizationPlan::Merge { table, .. } => {
                table
            }
        }
    }

    /// The regions the plan acts on.
    pub fn regions(&self) -> Vec<u64> {
        match self {
            NormalizationPlan::Split { region, .. } => vec![*region],
            NormalizationPlan::Merge { left, right, .. } => vec![*left, *right],
        }
    }

    /// Why, for the log and the shell.
    pub fn reason(&self) -> String {
        match self {
            NormalizationPlan::Split {
                table,
                region,
                size_bytes,
                target_bytes,
                requests_per_sec,
            } => format!(
                "split region {region} of {table}: {size_bytes} bytes, more than twice the \
                 table's average of {target_bytes}, at {requests_per_sec:.0} requests/s"
            ),
            NormalizationPlan::Merge {
                table,
                left,
                right,
                size_bytes,
                target_bytes,
                requests_per_sec,
            } => format!(
                "merge regions {left} and {right} of {table}: {size_bytes} bytes together \
                 (table average {target_bytes}), cold at {requests_per_sec:.0} requests/s"
            ),
        }
    }
}

/// What one normalizer run did (`Database::normalize`, the cluster
/// master's chore).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NormalizerRun {
    /// False when it did not run (the switch is off, a server could not
    /// report its load, regions are in transition).
    pub ran: bool,
    /// Why it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The plans carried out, in order.
    #[serde(default)]
    pub plans: Vec<NormalizationPlan>,
    /// Plans that failed (each logged; the regions changed meanwhile, or
    /// a region had no row to split at): planned again next run.
    #[serde(default)]
    pub failed: usize,
}

impl NormalizerRun {
    /// A run that did not happen, and why.
    pub fn not_run(reason: impl Into<String>) -> NormalizerRun {
        NormalizerRun {
            ran: false,
            reason: Some(reason.into()),
            plans: Vec::new(),
            failed: 0,
        }
    }
}

/// Plans the moves for one table whose regions are `regions`, in key
/// order, at `now_ms` on the clock region ids were taken from (steps 1-5
/// of the module docs). No region appears in two plans.
pub fn plan_table(
    table: &str,
    regions: &[RegionFacts],
    now_ms: i64,
    config: &NormalizerConfig,
) -> Vec<NormalizationPlan> {
    // Step 1.
    if regions.len() < config.min_region_count.max(1) || config.max_plans == 0 {
        return Vec::new();
    }
    // Step 2.
    let total: u128 = regions.iter().map(|r| u128::from(r.size_bytes)).sum();
    let target = u64::try_from(total / regions.len() as u128).unwrap_or(u64::MAX);
    let hot = |r: &RegionFacts| config.hot_qps > 0.0 && r.requests_per_sec >= config.hot_qps;

    // Step 3.
    let mut used = vec![false; regions.len()];
    let mut splits = Vec::new();
    for (i, r) in regions.iter().enumerate() {
        if target > 0 && r.size_bytes / 2 > target && !hot(r) {
            used[i] = true;
            splits.push(NormalizationPlan::Split {
                table: table.to_string(),
                region: r.id,
                size_bytes: r.size_bytes,
                target_bytes: target,
                requests_per_sec: r.requests_per_sec,
            });
        }
    }

    // Step 4.
    let old_enough = |r: &RegionFacts| {
        let age = now_ms.saturating_sub(i64::try_from(r.id).unwrap_or(i64::MAX));
        age >= 0 && age as u64 >= config.merge_min_age_ms
    };
    let empty = |r: &RegionFacts| r.size_bytes < config.merge_min_size_bytes;
    let mut merges = Vec::new();
    let mut i = 0;
    while i + 1 < regions.len() {
        let (a, b) = (&regions[i], &regions[i + 1]);
        let adjacent = !a.end_key.is_empty() && a.end_key == b.start_key;
        let size = a.size_bytes.saturating_add(b.size_bytes);
        let qps = a.requests_per_sec + b.requests_per_sec;
        let mergeable = adjacent
            && !used[i]
            && !used[i + 1]
            && old_enough(a)
            && old_enough(b)
            && (size < target || empty(a) || empty(b))
            && qps < config.merge_max_qps;
        if mergeable {
            used[i] = true;
            used[i + 1] = true;
            merges.push(NormalizationPlan::Merge {
                table: table.to_string(),
                left: a.id,
                right: b.id,
                size_bytes: size,
                target_bytes: target,
                requests_per_sec: qps,
            });
            i += 2;
        } else {
            i += 1;
        }
    }

    // Step 5.
    let mut plans = splits;
    plans.extend(merges);
    plans.truncate(config.max_plans);
    plans
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY_MS: i64 = 24 * 60 * 60 * 1000;
    const NOW: i64 = 100 * DAY_MS;

    fn config() -> NormalizerConfig {
        NormalizerConfig {
            min_region_count: 3,
            merge_min_age_ms: 3 * DAY_MS as u64,
            merge_min_size_bytes: 1024,
            merge_max_qps: 300.0,
            hot_qps: 3000.0,
            max_plans: 10,
        }
    }

    /// Regions with these sizes and rates, made `age_days` ago, with keys
    /// "00", "01", ...
    fn table(regions: &[(u64, f64)], age_days: i64) -> Vec<RegionFacts> {
        let key = |i: usize| Bytes::from(format!("{i:02}"));
        regions
            .iter()
            .enumerate()
            .map(|(i, (size, qps))| RegionFacts {
                id: (NOW - age_days * DAY_MS) as u64 + i as u64,
                start_key: if i == 0 { Bytes::new() } else { key(i) },
                end_key: if i + 1 == regions.len() {
                    Bytes::new()
                } else {
                    key(i + 1)
                },
                size_bytes: *size,
                requests_per_sec: *qps,
            })
            .collect()
    }

    fn merged_pairs(plans: &[NormalizationPlan]) -> Vec<(u64, u64)> {
        plans
            .iter()
            .filter_map(|p| match p {
                NormalizationPlan::Merge { left, right, .. } => Some((*left, *right)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn small_cold_neighbours_merge() {
        let regions = table(
            &[(100_000, 1.0), (100_000, 2.0), (10_000, 0.0), (10_000, 0.0)],
            10,
        );
        let plans = plan_table("t", &regions, NOW, &config());
        assert_eq!(
            merged_pairs(&plans),
            [(regions[2].id, regions[3].id)],
            "only the pair below the average (55,000) merges: {plans:?}"
        );
        assert!(plans[0].reason().contains("cold"), "{}", plans[0].reason());
    }

    #[test]
    fn empty_regions_merge_whatever_the_average() {
        let regions = table(&[(0, 0.0), (0, 0.0), (0, 0.0), (0, 0.0), (0, 0.0)], 10);
        let plans = plan_table("t", &regions, NOW, &config());
        assert_eq!(
            merged_pairs(&plans),
            [
                (regions[0].id, regions[1].id),
                (regions[2].id, regions[3].id)
            ]
        );
    }

    #[test]
    fn a_hot_small_pair_does_not_merge() {
        // Each is below the cap, together they are not.
        let regions = table(&[(0, 200.0), (0, 200.0), (0, 200.0)], 10);
        assert!(plan_table("t", &regions, NOW, &config()).is_empty());
    }

    #[test]
    fn a_young_pair_does_not_merge() {
        let regions = table(&[(0, 0.0), (0, 0.0), (0, 0.0), (0, 0.0)], 2);
        assert!(plan_table("t", &regions, NOW, &config()).is_empty());
    }

    #[test]
    fn an_oversized_region_splits() {
        let regions = table(&[(10_000, 0.0), (10_000, 0.0), (500_000, 50.0)], 10);
        let plans = plan_table("t", &regions, NOW, &config());
        assert!(
            matches!(plans[0], NormalizationPlan::Split { region, .. } if region == regions[2].id),
            "{plans:?}"
        );
        assert!(plans[0].reason().contains("more than twice"));
    }

    #[test]
    fn a_hot_oversized_region_is_left_to_load_split() {
        let regions = table(&[(10_000, 0.0), (10_000, 0.0), (500_000, 3000.0)], 10);
        let plans = plan_table("t", &regions, NOW, &config());
        assert!(
            plans
                .iter()
                .all(|p| !matches!(p, NormalizationPlan::Split { .. })),
            "{plans:?}"
        );
    }

    #[test]
    fn a_two_region_table_is_left_alone() {
        let regions = table(&[(0, 0.0), (1_000_000, 0.0)], 10);
        assert!(plan_table("t", &regions, NOW, &config()).is_empty());
    }

    #[test]
    fn no_region_appears_in_two_plans() {
        let regions = table(
            &[
                (0, 0.0),
                (0, 0.0),
                (0, 0.0),
                (9_000_000, 0.0),
                (0, 0.0),
                (0, 0.0),
                (0, 0.0),
            ],
            10,
        );
        let plans = plan_table("t", &regions, NOW, &config());
        let mut seen = std::collections::HashSet::new();
        for plan in &plans {
            for id in plan.regions() {
                assert!(seen.insert(id), "region {id} in two plans: {plans:?}");
            }
        }
        assert_eq!(plans.len(), 3, "one split and two merges: {plans:?}");
    }

    #[test]
    fn the_plans_per_table_are_capped() {
        let regions = table(&[(0, 0.0); 40], 10);
        let mut config = config();
        config.max_plans = 4;
        assert_eq!(plan_table("t", &regions, NOW, &config).len(), 4);
    }

    #[test]
    fn a_merge_cap_at_or_above_the_load_split_threshold_is_lowered_to_a_tenth_of_it() {
        let options = Options {
            normalizer_merge_max_qps: 5_000,
            ..Options::default()
        };
        let config = NormalizerConfig::from_options(&options);
        assert_eq!(config.merge_max_qps, 300.0);
        assert_eq!(NormalizerConfig::default().merge_max_qps, 300.0);
    }
}
