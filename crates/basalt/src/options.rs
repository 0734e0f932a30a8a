//! Configuration of an embedded database: one typed structure with
//! documented defaults (the server loads it from TOML and flags later).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use basalt_engine::compaction::CompactionPolicy;
use basalt_engine::load_split::LoadSplitConfig;
use basalt_engine::memory::BudgetLimits;
use basalt_engine::wal::{ObjectWalOptions, WalOptions};
use basalt_engine::{KeyLoadConfig, RegionConfig};

/// Options of [`Database::open_with`](crate::Database::open_with): pure
/// configuration. The parts a database is built from (file store, clock)
/// are handed to [`Database::builder`](crate::Database::builder).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// The data directory (created if missing). Default `./basalt-data`.
    pub data_dir: PathBuf,
    /// WAL segment size before rolling to a new file. Default 64 MiB. The
    /// same for the log on a shared directory (its segments there).
    pub wal_segment_bytes: u64,
    /// How often ASYNC_WAL writes reach the log, in milliseconds. Default 100.
    pub wal_async_flush_ms: u64,
    /// Largest value accepted in one cell, in bytes. Default 10 MiB (HBase's
    /// `hbase.client.keyvalue.maxsize`).
    pub max_value_bytes: usize,
    /// Flush a region's memstores to store files when together they pass
    /// this size. Default 128 MiB (HBase's `hbase.hregion.memstore.flush.size`).
    pub memstore_flush_bytes: usize,
    /// Writers of a region wait while its memstores hold this many times the
    /// flush size (flushes are behind). Default 4 (HBase's block multiplier).
    pub memstore_block_multiplier: usize,
    /// The memstores of all regions of the server together may hold at
    /// most this many bytes (HBase's `hbase.regionserver.global.memstore.size`,
    /// there a fraction of the heap). Past the low-water mark the largest
    /// memstores are flushed first and writers are slowed; at this limit
    /// writers wait (never fail) until flushes make room. Default 256 MiB:
    /// two of HBase's 128 MiB flushes (one region filling while one
    /// flushes), and a fixed amount whatever the machine, like RocksDB's
    /// write buffers, so a load's memory is set by the configuration rather
    /// than by how far flushes fall behind. Counted as HBase counts
    /// memstores (cell sizes plus a fixed overhead per cell), so the process
    /// holds somewhat more than this for them. Memory in all:
    /// `global_memstore_bytes + block_cache_bytes` plus what requests in
    /// flight and open files hold; `memory_total_bytes` sets both at once.
    pub global_memstore_bytes: usize,
    /// The low-water mark as a fraction of `global_memstore_bytes`: above
    /// it, flushes of the largest memstores are requested until the total
    /// is under it again. Default 0.95 (HBase's
    /// `hbase.regionserver.global.memstore.size.lower.limit`); values
    /// outside 0..=1 are clamped.
    pub global_memstore_low_water: f64,
    /// Between the low-water mark and the limit, a writer waits once for at
    /// most this many milliseconds (less when a flush completes first)
    /// before it writes, so flushes can catch up before writers reach the
    /// limit. 0: no slowdown. Default 10.
    pub global_memstore_slowdown_ms: u64,
    /// Size of the block cache shared by all stores. Default: a fifth of the
    /// machine's memory (256 MiB where that cannot be read).
    pub block_cache_bytes: usize,
    /// One total for the server's two big memory users: when set, the block
    /// cache gets 40% of it and the memstores of all regions 40% (HBase's
    /// defaults: `hfile.block.cache.size` 0.4 and
    /// `hbase.regionserver.global.memstore.size` 0.4 of the heap, which
    /// HBase requires to add up to at most 0.8), replacing
    /// `block_cache_bytes` and `global_memstore_bytes`; the other 20% is
    /// headroom for requests in flight, indexes and bloom filters of open
    /// files, and the process. Default: unset (the two options apply).
    pub memory_total_bytes: Option<usize>,
    /// Fewest store files a minor compaction merges. Default 3.
    pub compaction_min_files: usize,
    /// Most store files a minor compaction merges. Default 10.
    pub compaction_max_files: usize,
    /// Size ratio of the compaction policy. Default 1.2.
    pub compaction_ratio: f64,
    /// Split a region when its largest store's files pass this size.
    /// Default 10 GiB (HBase's `hbase.hregion.max.filesize`); 0 turns
    /// automatic splits off.
    pub region_split_bytes: u64,
    /// When a region splits by itself. Default `stepping`, HBase 2's
    /// default: the only region of a table splits early, at twice the
    /// memstore flush size (so a new table spreads soon), every other at
    /// `region_split_bytes`. `constant_size` always uses `region_split_bytes`.
    pub region_split_policy: RegionSplitPolicy,
    /// Threads for background flushes and compactions. With 0 they run in
    /// the writing thread, which makes tests deterministic. Default 2.
    pub background_threads: usize,
    /// The CPU nice value (Linux, 0 to 19) of the background threads that
    /// compact; the first of two or more threads only flushes and keeps
    /// the process's priority. On a machine with few cores a compaction
    /// then runs on the CPU that foreground requests leave, instead of
    /// taking whole time slices from them (a read waiting milliseconds
    /// for a core). 0 leaves every thread at the process's priority.
    /// Default 0: on the 2-core machine's YCSB runs (issue 30) 10 changed
    /// neither throughput nor the tail (bench/results/2026-11-28-read-tail.md);
    /// RocksDB, too, lowers its compaction pool only when asked.
    pub compaction_nice: i32,
    // The key heatmap's data (`basalt_engine::key_load`), per region: each
    // minute is compressed into `key_load_buckets` buckets of row keys,
    // the last `key_load_minutes` minutes are kept, and the current minute
    // samples at most `key_load_sample_keys` keys. Memory per region is
    // about `minutes x buckets x (key length + 64)` bytes plus
    // `sample_keys x (key length + 112)`: with the defaults and 20-byte
    // keys, about 195 KiB.
    /// Buckets a region's minute of key load is compressed into; 0 turns
    /// the key load (and the heatmap) off. Default 32.
    pub key_load_buckets: usize,
    /// Minutes of key load kept per region, the current one included.
    /// Default 60.
    pub key_load_minutes: usize,
    /// Row keys a region samples during the current minute. Default 256.
    pub key_load_sample_keys: usize,
    // Load-based split (docs/load-split.md): one block, the defaults and
    // why are there.
    /// A region whose requests per second (reads and row mutations) reach
    /// this for `load_split_windows` consecutive windows splits at the row
    /// that halves its recent load. Default 3,000 (TiKV's
    /// `split.qps-threshold`). With `load_split_bytes_threshold` also 0,
    /// load-based split is off.
    pub load_split_qps_threshold: u64,
    /// ... or whose bytes per second (cells read by gets and written)
    /// reach this. Default 30 MiB (TiKV's `split.byte-threshold`); 0: bytes
    /// never make a region hot.
    pub load_split_bytes_threshold: u64,
    /// The length of a load window, in seconds. Default 10.
    pub load_split_window_secs: u64,
    /// Consecutive hot windows before a region splits by load. Default 3
    /// (half a minute: a burst does not split, a steady load does).
    pub load_split_windows: usize,
    /// The least share of the load the lighter daughter must get, 0 to
    /// 0.5; a split row that leaves less is refused (a single hot row
    /// cannot be divided). Default 0.25 (TiKV's `split-balance-score`).
    pub load_split_min_balance: f64,
    /// Row keys sampled per region per window: the memory bound of the
    /// sampler (with the windows: `samples x windows` keys per hot
    /// region). Default 512.
    pub load_split_samples: usize,
    /// A table with this many regions no longer splits by load (so a load
    /// that crawls over the key space cannot split a table without end).
    /// Default 1,000; 0: no limit.
    pub load_split_max_regions: usize,
    /// Load-based split decisions kept for
    /// [`Database::load_split_events`](crate::Database::load_split_events).
    /// Default 100.
    pub load_split_events_kept: usize,
    /// Cluster mode: how often the active master runs the balancer while
    /// its switch is on, in milliseconds; 0: only when asked. Default
    /// 300,000 (HBase's `hbase.balancer.period`). The first run comes a
    /// period after a master becomes active.
    pub balancer_period_ms: u64,
    /// Cluster mode: how often the active master deletes region
    /// directories no catalog region names (left by a master that died
    /// mid-drop or mid-truncate, or a split rolled back while its server
    /// was seeding), in milliseconds; 0: never. Default 300,000 (HBase's
    /// `hbase.catalogjanitor.interval`).
    pub janitor_period_ms: u64,
    /// The active master writes a whole catalog checkpoint after this many
    /// deltas (docs/catalog-format.md, "Checkpoints and deltas"): it
    /// bounds how many files a process starting cold reads. Default 512.
    pub catalog_checkpoint_deltas: u64,
    /// ... or once the deltas since the last checkpoint would exceed this
    /// percentage of its size: it bounds the bytes a process starting cold
    /// reads, and keeps checkpoints' cost in proportion to what changed.
    /// Default 50. Both limits are four times higher while regions are in
    /// transition (a recovery writes deltas; the checkpoint follows it).
    pub catalog_checkpoint_percent: u64,
    /// The largest snapshot manifest (or hold) a process reads, in bytes:
    /// a bigger one is refused as damaged before it is read, and while it
    /// is there no store file is deleted (docs/snapshots.md). Default 256
    /// MiB, about a million file entries.
    pub snapshot_manifest_max_bytes: u64,
    /// How long a snapshot may take, in milliseconds, retries included: a
    /// region whose server died is tried again once it is reassigned, and
    /// a master that takes over completes the snapshot its predecessor
    /// left half taken, until this has passed since the request (then the
    /// snapshot fails and its marker goes). Default 300,000, HBase's
    /// `hbase.snapshot.master.timeout.millis`.
    pub snapshot_timeout_ms: u64,
    // The region normalizer (docs/normalizer.md): off until its switch is
    // turned on (`normalizer_switch`, kept in the catalog); one block, the
    // defaults and why are there.
    /// How often the normalizer runs while its switch is on, in
    /// milliseconds (the cluster's active master; `basalt serve` in one
    /// process); 0: only when asked (`normalize`). Default 300,000
    /// (HBase's `hbase.normalizer.period`).
    pub normalizer_period_ms: u64,
    /// A table with fewer regions is never normalized. Default 3 (HBase's
    /// `hbase.normalizer.min.region.count`).
    pub normalizer_min_region_count: usize,
    /// A region younger than this (its id is its creation time) never
    /// merges, so a table just pre-split keeps its regions until its load
    /// arrives. Default 259,200,000 (3 days, HBase's
    /// `hbase.normalizer.merge.min_region_age.days`).
    pub normalizer_merge_min_age_ms: u64,
    /// A region with fewer bytes (store files and memstores) counts as
    /// empty and may merge with a neighbour whatever their combined size.
    /// Default 1 MiB (HBase's `hbase.normalizer.merge.min_region_size.mb`).
    pub normalizer_merge_min_size_bytes: u64,
    /// Two neighbours merge only while their combined requests per second
    /// stay below this. Default 300: a tenth of
    /// `load_split_qps_threshold`, so a merged region is far from being
    /// split again by load; a value at or above that threshold is lowered
    /// to a tenth of it.
    pub normalizer_merge_max_qps: u64,
    /// Plans (splits and merges) carried out per table per run. Default 10.
    pub normalizer_max_plans: usize,
    /// Access control (`crate::access`): off by default. Not part of the
    /// `[database]` section: the server reads it from `[security]` (one
    /// place for it), so it is skipped here.
    #[serde(skip)]
    pub security: crate::access::SecurityOptions,
}

/// How the split size of a region is chosen (HBase's region split policies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegionSplitPolicy {
    /// `2 x memstore_flush_bytes` for a table's only region, else
    /// `region_split_bytes` (HBase's `SteppingSplitPolicy`).
    #[default]
    Stepping,
    /// Always `region_split_bytes` (HBase's `ConstantSizeRegionSplitPolicy`).
    ConstantSize,
}

impl Options {
    /// The size past which a region of a table with `table_regions`
    /// regions splits; `None` when automatic splits are off.
    pub fn split_size(&self, table_regions: usize) -> Option<u64> {
        if self.region_split_bytes == 0 {
            return None;
        }
        let early = (self.memstore_flush_bytes as u64).saturating_mul(2);
        Some(match self.region_split_policy {
            RegionSplitPolicy::Stepping if table_regions == 1 => early.min(self.region_split_bytes),
            _ => self.region_split_bytes,
        })
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            data_dir: PathBuf::from("basalt-data"),
            wal_segment_bytes: 64 * 1024 * 1024,
            wal_async_flush_ms: 100,
            max_value_bytes: RegionConfig::default().max_value_bytes,
            memstore_flush_bytes: 128 * 1024 * 1024,
            memstore_block_multiplier: 4,
            global_memstore_bytes: 256 * 1024 * 1024,
            global_memstore_low_water: 0.95,
            global_memstore_slowdown_ms: 10,
            block_cache_bytes: default_block_cache_bytes(),
            memory_total_bytes: None,
            compaction_min_files: 3,
            compaction_max_files: 10,
            compaction_ratio: 1.2,
            region_split_bytes: 10 * 1024 * 1024 * 1024,
            region_split_policy: RegionSplitPolicy::Stepping,
            background_threads: 2,
            compaction_nice: 0,
            key_load_buckets: KeyLoadConfig::default().buckets,
            key_load_minutes: KeyLoadConfig::default().minutes,
            key_load_sample_keys: KeyLoadConfig::default().sample_keys,
            load_split_qps_threshold: 3_000,
            load_split_bytes_threshold: 30 * 1024 * 1024,
            load_split_window_secs: 10,
            load_split_windows: 3,
            load_split_min_balance: 0.25,
            load_split_samples: 512,
            load_split_max_regions: 1_000,
            load_split_events_kept: 100,
            balancer_period_ms: 300_000,
            janitor_period_ms: 300_000,
            catalog_checkpoint_deltas: 512,
            catalog_checkpoint_percent: 50,
            snapshot_manifest_max_bytes: basalt_engine::snapshot::DEFAULT_MAX_MANIFEST_BYTES,
            snapshot_timeout_ms: 300_000,
            normalizer_period_ms: 300_000,
            normalizer_min_region_count: 3,
            normalizer_merge_min_age_ms: 3 * 24 * 60 * 60 * 1000,
            normalizer_merge_min_size_bytes: 1024 * 1024,
            normalizer_merge_max_qps: 300,
            normalizer_max_plans: 10,
            security: crate::access::SecurityOptions::default(),
        }
    }
}

impl Options {
    /// Default options for the data directory `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Options {
            data_dir: dir.into(),
            ..Options::default()
        }
    }

    pub(crate) fn wal_options(&self) -> WalOptions {
        WalOptions {
            segment_max_bytes: self.wal_segment_bytes,
            async_flush_interval: Duration::from_millis(self.wal_async_flush_ms.max(1)),
            ..WalOptions::default()
        }
    }

    /// The log on shared storage's options with this configuration's
    /// segment size (used where the store appends: a shared directory).
    pub(crate) fn object_wal_options(&self, wal: &ObjectWalOptions) -> ObjectWalOptions {
        ObjectWalOptions {
            segment_max_bytes: self.wal_segment_bytes,
            ..wal.clone()
        }
    }

    pub(crate) fn region_config(&self) -> RegionConfig {
        RegionConfig {
            max_value_bytes: self.max_value_bytes,
            memstore_flush_bytes: self.memstore_flush_bytes.max(1),
            memstore_block_bytes: self
                .memstore_flush_bytes
                .max(1)
                .saturating_mul(self.memstore_block_multiplier.max(1)),
            key_load: KeyLoadConfig {
                buckets: self.key_load_buckets,
                minutes: self.key_load_minutes,
                sample_keys: self.key_load_sample_keys,
            },
            ..RegionConfig::default()
        }
    }

    /// The block cache's size: `block_cache_bytes`, or its share of
    /// `memory_total_bytes` when that is set.
    pub fn block_cache_size(&self) -> usize {
        match self.memory_total_bytes {
            Some(total) => share_of(total, MEMORY_SHARE_BLOCK_CACHE),
            None => self.block_cache_bytes,
        }
    }

    /// The global memstore limit: `global_memstore_bytes`, or its share of
    /// `memory_total_bytes` when that is set.
    pub fn global_memstore_size(&self) -> usize {
        match self.memory_total_bytes {
            Some(total) => share_of(total, MEMORY_SHARE_MEMSTORES),
            None => self.global_memstore_bytes,
        }
    }

    pub(crate) fn memstore_budget_limits(&self) -> BudgetLimits {
        BudgetLimits::new(
            self.global_memstore_size(),
            self.global_memstore_low_water,
            Duration::from_millis(self.global_memstore_slowdown_ms),
        )
    }

    /// The load-based split settings of every region.
    pub fn load_split_config(&self) -> LoadSplitConfig {
        LoadSplitConfig {
            qps_threshold: self.load_split_qps_threshold,
            bytes_threshold: self.load_split_bytes_threshold,
            window_ms: i64::try_from(self.load_split_window_secs.saturating_mul(1000))
                .unwrap_or(i64::MAX),
            windows: self.load_split_windows,
            min_balance: self.load_split_min_balance,
            samples: self.load_split_samples,
        }
    }

    /// True when a table of `table_regions` regions may still split by load.
    pub(crate) fn load_split_allowed(&self, table_regions: usize) -> bool {
        self.load_split_max_regions == 0 || table_regions < self.load_split_max_regions
    }

    pub(crate) fn compaction_policy(&self) -> CompactionPolicy {
        CompactionPolicy {
            min_files: self.compaction_min_files.max(2),
            max_files: self
                .compaction_max_files
                .max(self.compaction_min_files.max(2)),
            ratio: self.compaction_ratio,
            ..CompactionPolicy::default()
        }
    }
}

/// Shares of `memory_total_bytes`, in percent (HBase's 0.4 and 0.4).
const MEMORY_SHARE_BLOCK_CACHE: usize = 40;
const MEMORY_SHARE_MEMSTORES: usize = 40;

fn share_of(total: usize, percent: usize) -> usize {
    (total / 100).saturating_mul(percent)
}

/// A fifth of the machine's memory, read from /proc/meminfo.
fn default_block_cache_bytes() -> usize {
    let total_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        });
    total_kib.map_or(256 * 1024 * 1024, |kib| kib.saturating_mul(1024) / 5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_total_gives_the_cache_and_the_memstores_two_fifths_each() {
        let mut o = Options::new("d");
        o.block_cache_bytes = 1 << 20;
        o.global_memstore_bytes = 2 << 20;
        assert_eq!(o.block_cache_size(), 1 << 20, "unset: the options apply");
        assert_eq!(o.global_memstore_size(), 2 << 20);
        o.memory_total_bytes = Some(1000 << 20);
        assert_eq!(o.block_cache_size(), 400 << 20);
        assert_eq!(o.global_memstore_size(), 400 << 20);
        assert!(o.block_cache_size() + o.global_memstore_size() <= (800 << 20));
        assert_eq!(o.memstore_budget_limits().limit_bytes, 400 << 20);
    }

    #[test]
    fn the_low_water_mark_defaults_to_hbase_s_lower_limit() {
        let o = Options::new("d");
        let limits = o.memstore_budget_limits();
        assert_eq!(limits.limit_bytes, 256 << 20);
        assert_eq!(limits.low_water_bytes, ((256 << 20) as f64 * 0.95) as usize);
    }

    #[test]
    fn load_split_defaults_are_tikv_s_rates_over_three_windows_of_ten_seconds() {
        let mut o = Options::new("d");
        let c = o.load_split_config();
        assert_eq!(c, LoadSplitConfig::default());
        assert!(c.enabled());
        assert!(o.load_split_allowed(999));
        assert!(!o.load_split_allowed(1_000));
        o.load_split_max_regions = 0;
        assert!(o.load_split_allowed(usize::MAX));
        o.load_split_qps_threshold = 0;
        o.load_split_bytes_threshold = 0;
        assert!(!o.load_split_config().enabled(), "both 0: off");
    }

    #[test]
    fn stepping_splits_a_lone_region_early() {
        let mut o = Options::new("d");
        o.memstore_flush_bytes = 128 << 20;
        assert_eq!(o.split_size(1), Some(256 << 20));
        assert_eq!(o.split_size(2), Some(10 << 30));
        o.region_split_bytes = 100 << 20;
        assert_eq!(
            o.split_size(1),
            Some(100 << 20),
            "never above the split size"
        );
        o.region_split_policy = RegionSplitPolicy::ConstantSize;
        assert_eq!(o.split_size(1), Some(100 << 20));
        o.region_split_bytes = 0;
        assert_eq!(o.split_size(1), None);
        assert_eq!(o.split_size(5), None);
    }
}
