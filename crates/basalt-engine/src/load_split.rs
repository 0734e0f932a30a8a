//! Load-based split: a region whose request rate stays high splits at the
//! row that divides its recent load in half, not at the middle of its data
//! (`docs/load-split.md` has the design, the defaults and why).
//!
//! The pipeline, per region:
//! 1. **Record.** Every request records its row key in the region's
//!    [`LoadSplitRecorder`]: a get its row, a scan the row it starts at (in
//!    its direction), each row mutation its row. A request costs a clock
//!    read and two relaxed atomic additions; about one request in `stride`
//!    also takes a short lock to keep its key as a sample. Which ones is
//!    decided by a hash of the request's number, not by every `stride`-th,
//!    so a workload with a period of its own (round-robin clients) cannot
//!    alias with the sampling. The stride doubles whenever a window's
//!    samples reach their bound (the samples the doubled stride would not
//!    have picked are dropped, so the rest stay an even sample), and the
//!    next window starts at a stride for half the bound at the rate the
//!    last one saw: memory per window is bounded and the lock is taken at
//!    most about `samples` times per window whatever the rate.
//! 2. **Close the window.** The first request after a window's end closes
//!    it: its request and byte rates are compared with the thresholds. A
//!    hot window joins the streak; a cold one (or a whole window without a
//!    request) ends it.
//! 3. **Ask.** When the streak reaches `windows` windows, the recorder
//!    calls its notifier once (the region server's scheduler), outside its
//!    lock.
//! 4. **Decide.** The scheduler takes the decision
//!    ([`LoadSplitRecorder::decide`]), which ends the streak (a further
//!    decision needs a new one): the split row is the sampled row that best
//!    balances the requests below it against those at or above it (the
//!    weighted median), strictly inside the region's range; refused when
//!    even that row leaves less than `min_balance` of the load on one side
//!    (a single hot row, which no split can divide).
//! 5. **Split.** The database splits through the same path as size splits
//!    and keeps the decision, split or refused, in a bounded
//!    [`LoadSplitLog`] for the UI; new decisions are logged at info.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use basalt_types::cell::escape_bytes;
use basalt_types::Cell;

use crate::clock::Clock;
use crate::region::RegionInfo;
use crate::scan::RowRange;

/// When a region counts as hot, and how its split row is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadSplitConfig {
    /// A window is hot when its requests per second (reads and writes)
    /// reach this; 0: requests never make a window hot.
    pub qps_threshold: u64,
    /// ... or when its bytes per second (read and written) reach this; 0:
    /// bytes never make a window hot.
    pub bytes_threshold: u64,
    /// The length of a window, in milliseconds (at least 1).
    pub window_ms: i64,
    /// Consecutive hot windows before a split is decided (at least 1).
    pub windows: usize,
    /// The least share of the sampled load the lighter side of a split
    /// must get (0 to 0.5): a split that leaves less is refused.
    pub min_balance: f64,
    /// Samples kept per window: the bound of the recorder's memory and
    /// the number of locks taken per window.
    pub samples: usize,
}

impl Default for LoadSplitConfig {
    /// TiKV's rates (3,000 requests or 30 MiB per second), over three
    /// windows of 10 s; see `docs/load-split.md`.
    fn default() -> Self {
        LoadSplitConfig {
            qps_threshold: 3_000,
            bytes_threshold: 30 * 1024 * 1024,
            window_ms: 10_000,
            windows: 3,
            min_balance: 0.25,
            samples: 512,
        }
    }
}

impl LoadSplitConfig {
    /// True unless both thresholds are 0 (load-based split off).
    pub fn enabled(&self) -> bool {
        self.qps_threshold > 0 || self.bytes_threshold > 0
    }

    /// The configuration with every value in its range.
    fn clamped(mut self) -> Self {
        self.window_ms = self.window_ms.max(1);
        self.windows = self.windows.max(1);
        self.min_balance = if self.min_balance.is_nan() {
            0.0
        } else {
            self.min_balance.clamp(0.0, 0.5)
        };
        // Two samples at least: thinning halves them.
        self.samples = self.samples.max(2);
        self
    }

    fn is_hot(&self, requests: u64, bytes: u64, span_ms: i64) -> bool {
        let secs = span_ms.max(1) as f64 / 1000.0;
        (self.qps_threshold > 0 && requests as f64 / secs >= self.qps_threshold as f64)
            || (self.bytes_threshold > 0 && bytes as f64 / secs >= self.bytes_threshold as f64)
    }
}

/// What the recorder calls when a decision is due (the scheduler).
pub type LoadSplitNotifier = Arc<dyn Fn() + Send + Sync>;

/// A closed hot window.
#[derive(Debug, Clone)]
struct Window {
    span_ms: i64,
    requests: u64,
    bytes: u64,
    samples: Vec<Bytes>,
}

#[derive(Debug, Default)]
struct State {
    /// A window is open (the first request opens the first one).
    started: bool,
    window_start: i64,
    /// (the request's number in the window, its row): every `stride`-th.
    samples: Vec<(u64, Bytes)>,
    stride: u64,
    /// The current streak of hot windows, oldest first.
    hot: VecDeque<Window>,
    /// The notifier was called and the decision not taken yet.
    due: bool,
}

/// One region's load sampler (step 1-3 of the module docs). Off until
/// [`LoadSplitRecorder::enable`]: then recording is a single check.
pub struct LoadSplitRecorder {
    config: OnceLock<LoadSplitConfig>,
    notifier: OnceLock<LoadSplitNotifier>,
    /// When the open window ends; `i64::MIN` before the first request.
    window_end: AtomicI64,
    requests: AtomicU64,
    bytes: AtomicU64,
    /// A copy of `State::stride`, read without the lock.
    stride: AtomicU64,
    state: Mutex<State>,
}

impl fmt::Debug for LoadSplitRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadSplitRecorder")
            .field("config", &self.config.get())
            .field("requests", &self.requests.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Default for LoadSplitRecorder {
    fn default() -> Self {
        LoadSplitRecorder {
            config: OnceLock::new(),
            notifier: OnceLock::new(),
            window_end: AtomicI64::new(i64::MIN),
            requests: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            stride: AtomicU64::new(1),
            state: Mutex::new(State {
                stride: 1,
                ..State::default()
            }),
        }
    }
}

impl LoadSplitRecorder {
    /// Starts recording with `config`, calling `notifier` when a decision
    /// is due. Once per region (a later call changes nothing); a `config`
    /// with both thresholds 0 leaves the recorder off.
    pub fn enable(&self, config: LoadSplitConfig, notifier: Option<LoadSplitNotifier>) {
        if !config.enabled() {
            return;
        }
        if let Some(notifier) = notifier {
            let _ = self.notifier.set(notifier);
        }
        let _ = self.config.set(config.clamped());
    }

    /// True once enabled.
    pub fn is_enabled(&self) -> bool {
        self.config.get().is_some()
    }

    /// Records a get of `row` that returned `cells`.
    pub fn record_get(&self, row: &Bytes, cells: Option<&[Cell]>, clock: &dyn Clock) {
        if let Some(config) = self.config.get() {
            let bytes = cells.map_or(0, |c| c.iter().map(|c| c.heap_size() as u64).sum());
            self.record(config, row, bytes, clock.now_millis());
        }
    }

    /// Records a scan over `range` (already clipped to the region) at the
    /// row it starts at: the lower bound, or the upper one when `reversed`
    /// (the region's `start_key` when that side is open). Its bytes are not
    /// known when it opens and are not counted.
    pub fn record_scan(
        &self,
        range: &RowRange,
        reversed: bool,
        start_key: &Bytes,
        clock: &dyn Clock,
    ) {
        let Some(config) = self.config.get() else {
            return;
        };
        let bound = |b: &std::ops::Bound<Bytes>| match b {
            std::ops::Bound::Included(k) | std::ops::Bound::Excluded(k) => Some(k.clone()),
            std::ops::Bound::Unbounded => None,
        };
        let first = if reversed {
            bound(&range.upper).or_else(|| bound(&range.lower))
        } else {
            bound(&range.lower)
        };
        let row = first.unwrap_or_else(|| start_key.clone());
        self.record(config, &row, 0, clock.now_millis());
    }

    /// Records applied writes: each row mutation (the cells of one row) is
    /// one request with its bytes.
    pub fn record_writes(&self, writes: &[Vec<Cell>], clock: &dyn Clock) {
        let Some(config) = self.config.get() else {
            return;
        };
        let now = clock.now_millis();
        for cells in writes {
            if let Some(first) = cells.first() {
                let bytes = cells.iter().map(|c| c.heap_size() as u64).sum();
                self.record(config, &first.row, bytes, now);
            }
        }
    }

    fn record(&self, config: &LoadSplitConfig, row: &Bytes, bytes: u64, now: i64) {
        if now >= self.window_end.load(Ordering::Acquire) && self.roll(config, now) {
            if let Some(notify) = self.notifier.get() {
                notify();
            }
        }
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        if bytes > 0 {
            self.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        if picked(n, self.stride.load(Ordering::Relaxed)) {
            self.sample(config, n, row);
        }
    }

    /// Keeps request `n`'s row, thinning the samples at their bound.
    fn sample(&self, config: &LoadSplitConfig, n: u64, row: &Bytes) {
        let mut state = self.state.lock();
        // The stride may have doubled since the caller read it.
        if !picked(n, state.stride) {
            return;
        }
        // A copy, not a view: a row read from a request's buffer would
        // keep the whole buffer alive for as long as the sample.
        state.samples.push((n, Bytes::copy_from_slice(row)));
        while state.samples.len() >= config.samples {
            let stride = state.stride.saturating_mul(2);
            state.samples.retain(|(i, _)| picked(*i, stride));
            state.stride = stride;
            self.stride.store(stride, Ordering::Relaxed);
        }
    }

    /// Step 2: closes the window that ended at or before `now` and opens
    /// the next. True when the streak just reached its length.
    fn roll(&self, config: &LoadSplitConfig, now: i64) -> bool {
        let mut state = self.state.lock();
        let end = self.window_end.load(Ordering::Acquire);
        if now < end {
            return false; // another request closed it meanwhile
        }
        let requests = self.requests.swap(0, Ordering::Relaxed);
        let bytes = self.bytes.swap(0, Ordering::Relaxed);
        let samples = std::mem::take(&mut state.samples);
        let next_start = if !state.started {
            state.started = true;
            now
        } else {
            let span_ms = end - state.window_start;
            // A whole window passed without a request: it was cold.
            let gap = now >= end.saturating_add(config.window_ms);
            if config.is_hot(requests, bytes, span_ms) && !gap {
                state.hot.push_back(Window {
                    span_ms,
                    requests,
                    bytes,
                    samples: samples.into_iter().map(|(_, row)| row).collect(),
                });
                while state.hot.len() > config.windows {
                    state.hot.pop_front();
                }
            } else {
                state.hot.clear();
            }
            if gap {
                now
            } else {
                end
            }
        };
        // The next window aims at half the bound at this one's rate,
        // leaving room for the rate to grow before samples are dropped.
        let stride = (requests / (config.samples as u64 / 2).max(1)).max(1);
        state.stride = stride;
        self.stride.store(stride, Ordering::Relaxed);
        state.window_start = next_start;
        self.window_end.store(
            next_start.saturating_add(config.window_ms),
            Ordering::Release,
        );
        let due = state.hot.len() >= config.windows && !state.due;
        if due {
            state.due = true;
        }
        due
    }

    /// Step 4: the decision for a region over `[start_key, end_key)`, if
    /// one is due; taking it ends the streak. `None` when none is due (or
    /// the recorder is off).
    pub fn decide(&self, start_key: &[u8], end_key: &[u8]) -> Option<LoadSplitDecision> {
        let config = self.config.get()?;
        let (mut windows, at) = {
            let mut state = self.state.lock();
            if !state.due {
                return None;
            }
            state.due = false;
            (
                std::mem::take(&mut state.hot),
                self.window_end.load(Ordering::Acquire) - config.window_ms,
            )
        };
        Some(propose(
            windows.make_contiguous(),
            start_key,
            end_key,
            config,
            at,
        ))
    }
}

/// True when request `n` is one of the samples at `stride`: about one
/// request in `stride`, chosen by a hash of `n` (splitmix64's finalizer)
/// so the choice has no period. A request picked at `2 * stride` is also
/// picked at `stride`, which is what thinning relies on.
fn picked(n: u64, stride: u64) -> bool {
    if stride <= 1 {
        return true;
    }
    let mut z = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    z.is_multiple_of(stride)
}

/// A decision: split at a row, or why not.
pub type LoadSplitDecision = Result<LoadSplitProposal, LoadSplitRefusal>;

/// The load a decision was taken on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadSummary {
    /// Requests per second over the streak.
    pub requests_per_sec: f64,
    /// Bytes per second over the streak.
    pub bytes_per_sec: f64,
    /// Windows in the streak.
    pub windows: usize,
    /// The length of a window, in seconds.
    pub window_secs: f64,
    /// The byte rate made the windows hot, not the request rate.
    pub by_bytes: bool,
}

impl fmt::Display for LoadSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = thousands(self.requests_per_sec.round() as u64);
        if self.by_bytes {
            let mib = self.bytes_per_sec / (1024.0 * 1024.0);
            write!(f, "{mib:.1} MiB/s ({rate} req/s)")?;
        } else {
            write!(f, "{rate} req/s")?;
        }
        write!(
            f,
            " over {} window{} of {} s",
            self.windows,
            if self.windows == 1 { "" } else { "s" },
            self.window_secs
        )
    }
}

/// A split row chosen by load.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSplitProposal {
    /// The split row: the second daughter's first row.
    pub key: Bytes,
    /// The share of the sampled load below `key`.
    pub left_share: f64,
    /// The load it was chosen on.
    pub load: LoadSummary,
    /// When the streak ended (ms since the epoch, the engine's clock).
    pub at_millis: i64,
}

impl LoadSplitProposal {
    /// The reason, as logged: `load: 4,100 req/s over 3 windows of 10 s,
    /// left 49% / right 51%`.
    pub fn reason(&self) -> String {
        let left = (self.left_share * 100.0).round() as u32;
        format!(
            "load: {}, left {left}% / right {}%",
            self.load,
            100u32.saturating_sub(left)
        )
    }
}

/// Why the load gave no split row.
#[derive(Debug, Clone, PartialEq)]
pub enum RefusalCause {
    /// No request was sampled inside the region's range (beyond its first row).
    NoSamples,
    /// One row takes so much of the load that no split balances it.
    SingleHotRow {
        /// The row.
        row: Bytes,
        /// Its share of the sampled load.
        share: f64,
    },
    /// The best row found still leaves too little on one side.
    Unbalanced {
        /// The best row.
        key: Bytes,
        /// The share of the load below it.
        left_share: f64,
    },
}

impl RefusalCause {
    /// A short stable code: `no_samples`, `single_hot_row`, `unbalanced`.
    pub fn code(&self) -> &'static str {
        match self {
            RefusalCause::NoSamples => "no_samples",
            RefusalCause::SingleHotRow { .. } => "single_hot_row",
            RefusalCause::Unbalanced { .. } => "unbalanced",
        }
    }
}

/// A hot region the load gave no split row for.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSplitRefusal {
    /// Why.
    pub cause: RefusalCause,
    /// The load.
    pub load: LoadSummary,
    /// When the streak ended.
    pub at_millis: i64,
}

impl LoadSplitRefusal {
    /// The reason, as logged.
    pub fn reason(&self) -> String {
        let pct = |share: f64| (share * 100.0).round() as u32;
        match &self.cause {
            RefusalCause::NoSamples => format!(
                "load: {}, but no sampled row lies inside the region past its first row",
                self.load
            ),
            RefusalCause::SingleHotRow { row, share } => format!(
                "load: {}, but the single row '{}' takes {}% of it: a row cannot be split",
                self.load,
                escape_bytes(row),
                pct(*share)
            ),
            RefusalCause::Unbalanced { key, left_share } => format!(
                "load: {}, but the best split row '{}' leaves left {}% / right {}%",
                self.load,
                escape_bytes(key),
                pct(*left_share),
                100u32.saturating_sub(pct(*left_share))
            ),
        }
    }
}

/// Step 4 over a streak of hot `windows`: each window's samples weigh its
/// requests evenly, so a busier window counts for more.
fn propose(
    windows: &[Window],
    start_key: &[u8],
    end_key: &[u8],
    config: &LoadSplitConfig,
    at_millis: i64,
) -> LoadSplitDecision {
    let span_ms: i64 = windows.iter().map(|w| w.span_ms).sum();
    let secs = span_ms.max(1) as f64 / 1000.0;
    let requests: u64 = windows.iter().map(|w| w.requests).sum();
    let bytes: u64 = windows.iter().map(|w| w.bytes).sum();
    let load = LoadSummary {
        requests_per_sec: requests as f64 / secs,
        bytes_per_sec: bytes as f64 / secs,
        windows: windows.len(),
        window_secs: config.window_ms as f64 / 1000.0,
        by_bytes: !(config.qps_threshold > 0
            && requests as f64 / secs >= config.qps_threshold as f64),
    };
    let refuse = |cause| {
        Err(LoadSplitRefusal {
            cause,
            load,
            at_millis,
        })
    };
    let mut weighted: Vec<(&Bytes, f64)> = Vec::new();
    for w in windows.iter().filter(|w| !w.samples.is_empty()) {
        let weight = w.requests.max(1) as f64 / w.samples.len() as f64;
        weighted.extend(w.samples.iter().map(|row| (row, weight)));
    }
    weighted.sort_by(|a, b| a.0.cmp(b.0));
    // Distinct rows with their weights, in key order.
    let mut rows: Vec<(&Bytes, f64)> = Vec::new();
    for (row, weight) in weighted {
        match rows.last_mut() {
            Some((last, w)) if *last == row => *w += weight,
            _ => rows.push((row, weight)),
        }
    }
    let total: f64 = rows.iter().map(|(_, w)| w).sum();
    if total <= 0.0 {
        return refuse(RefusalCause::NoSamples);
    }
    // A split at row k puts k on the right: the left is everything before.
    let mut best: Option<(&Bytes, f64)> = None;
    let mut below = 0.0_f64;
    for (row, weight) in &rows {
        let inside = &row[..] > start_key && (end_key.is_empty() || &row[..] < end_key);
        if inside {
            let balance = below.min(total - below) / total;
            if best.is_none_or(|(_, b)| balance > b.min(total - b) / total) {
                best = Some((row, below));
            }
        }
        below += weight;
    }
    let Some((key, left)) = best else {
        return refuse(RefusalCause::NoSamples);
    };
    let left_share = left / total;
    if left_share.min(1.0 - left_share) < config.min_balance {
        let (hot, heaviest) = rows.iter().fold(
            (key, 0.0),
            |(r, m), &(row, w)| if w > m { (row, w) } else { (r, m) },
        );
        if heaviest / total >= 0.5 {
            return refuse(RefusalCause::SingleHotRow {
                row: hot.clone(),
                share: heaviest / total,
            });
        }
        return refuse(RefusalCause::Unbalanced {
            key: key.clone(),
            left_share,
        });
    }
    Ok(LoadSplitProposal {
        key: key.clone(),
        left_share,
        load,
        at_millis,
    })
}

/// `4100` as `4,100`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What became of a load-based split decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadSplitOutcome {
    /// The region split at the row.
    Split,
    /// A cluster member asked the master for the split; the master's
    /// answer follows as another event.
    Asked,
    /// No split: see the cause.
    Refused,
    /// The split was tried and failed.
    Failed,
}

/// One decision, for the UI and `Database::load_split_events`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSplitEvent {
    /// When the decision was taken (ms since the epoch, the engine's clock).
    pub at_millis: i64,
    /// The table.
    pub table: String,
    /// The region's encoded name.
    pub region: String,
    /// The region's first row, escaped (`\xNN` for unprintable bytes).
    pub start_key: String,
    /// The region's end row, escaped; empty is the end of the table.
    pub end_key: String,
    /// The split row, escaped, when one was chosen.
    pub split_key: Option<String>,
    /// What became of it.
    pub outcome: LoadSplitOutcome,
    /// A short stable code for the cause: `load` for a split chosen by
    /// load, else why not (`single_hot_row`, `unbalanced`, `no_samples`,
    /// `table_disabled`, `has_links`, `max_regions`, `split_running`,
    /// `not_serving`, `stopping`, `failed`).
    pub cause: String,
    /// The reason, as logged.
    pub reason: String,
    /// The same decision for the same region again right after this one
    /// (a hot row stays hot): counted here instead of listed.
    pub repeats: u32,
}

impl LoadSplitEvent {
    /// An event about region `info`.
    pub fn new(
        info: &RegionInfo,
        at_millis: i64,
        outcome: LoadSplitOutcome,
        cause: &str,
        split_key: Option<&[u8]>,
        reason: String,
    ) -> LoadSplitEvent {
        LoadSplitEvent {
            at_millis,
            table: info.table.clone(),
            region: info.encoded_name(),
            start_key: escape_bytes(&info.start_key),
            end_key: escape_bytes(&info.end_key),
            split_key: split_key.map(escape_bytes),
            outcome,
            cause: cause.to_string(),
            reason,
            repeats: 0,
        }
    }

    /// The refusal's event.
    pub fn refused(info: &RegionInfo, refusal: &LoadSplitRefusal) -> LoadSplitEvent {
        let key = match &refusal.cause {
            RefusalCause::Unbalanced { key, .. } => Some(&key[..]),
            RefusalCause::SingleHotRow { row, .. } => Some(&row[..]),
            RefusalCause::NoSamples => None,
        };
        LoadSplitEvent::new(
            info,
            refusal.at_millis,
            LoadSplitOutcome::Refused,
            refusal.cause.code(),
            key,
            refusal.reason(),
        )
    }
}

/// The last decisions of a region server, oldest first, at most `kept`
/// (memory: `kept` events of a few hundred bytes each).
#[derive(Debug)]
pub struct LoadSplitLog {
    kept: usize,
    events: Mutex<VecDeque<LoadSplitEvent>>,
}

impl LoadSplitLog {
    /// A log keeping the last `kept` decisions (0 keeps none).
    pub fn new(kept: usize) -> LoadSplitLog {
        LoadSplitLog {
            kept,
            events: Mutex::new(VecDeque::new()),
        }
    }

    /// Keeps `event` and logs it, at info (a failure at warn), or at debug
    /// when `quiet` (a refusal that says nothing about the load, such as a
    /// disabled table). The same decision for the same region as the last
    /// one kept is counted in its `repeats` and not logged again, so a hot
    /// row that cannot be split is said once.
    pub fn note(&self, event: LoadSplitEvent, quiet: bool) {
        {
            let mut events = self.events.lock();
            if let Some(last) = events.back_mut() {
                if last.region == event.region
                    && last.outcome == event.outcome
                    && last.cause == event.cause
                    && last.split_key == event.split_key
                {
                    last.repeats = last.repeats.saturating_add(1);
                    last.at_millis = event.at_millis;
                    last.reason = event.reason;
                    return;
                }
            }
            if self.kept > 0 {
                if events.len() >= self.kept {
                    events.pop_front();
                }
                events.push_back(event.clone());
            }
        }
        let key = event.split_key.as_deref().unwrap_or("");
        let (table, region, reason) = (&event.table, &event.region, &event.reason);
        match event.outcome {
            _ if quiet => {
                tracing::debug!(
                    table,
                    region,
                    split_key = key,
                    reason,
                    "load-based split not done"
                )
            }
            LoadSplitOutcome::Split => {
                tracing::info!(table, region, split_key = key, reason, "load-based split")
            }
            LoadSplitOutcome::Asked => tracing::info!(
                table,
                region,
                split_key = key,
                reason,
                "load-based split asked of the master"
            ),
            LoadSplitOutcome::Refused => {
                tracing::info!(table, region, reason, "load-based split refused")
            }
            LoadSplitOutcome::Failed => {
                tracing::warn!(
                    table,
                    region,
                    split_key = key,
                    reason,
                    "load-based split failed"
                )
            }
        }
    }

    /// The decisions kept, oldest first.
    pub fn events(&self) -> Vec<LoadSplitEvent> {
        self.events.lock().iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::sync::atomic::AtomicUsize;

    fn config(qps: u64) -> LoadSplitConfig {
        LoadSplitConfig {
            qps_threshold: qps,
            bytes_threshold: 0,
            window_ms: 10_000,
            windows: 3,
            min_balance: 0.25,
            samples: 512,
        }
    }

    fn recorder(config: LoadSplitConfig) -> (LoadSplitRecorder, Arc<AtomicUsize>) {
        let recorder = LoadSplitRecorder::default();
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        recorder.enable(
            config,
            Some(Arc::new(move || {
                counted.fetch_add(1, Ordering::SeqCst);
            })),
        );
        (recorder, calls)
    }

    fn row(i: usize) -> Bytes {
        Bytes::from(format!("row{i:04}"))
    }

    /// `per_window` reads of `rows(i)` for the i-th request, spread evenly
    /// over each of `windows` windows, then one read to close the last.
    fn drive(
        recorder: &LoadSplitRecorder,
        clock: &ManualClock,
        windows: usize,
        per_window: usize,
        rows: impl Fn(usize) -> Bytes,
    ) {
        let step = 10_000 / per_window as i64;
        let mut i = 0;
        for _ in 0..windows {
            for _ in 0..per_window {
                recorder.record_get(&rows(i), None, clock);
                clock.advance(step);
                i += 1;
            }
        }
        recorder.record_get(&rows(i), None, clock);
    }

    #[test]
    fn a_load_below_the_threshold_never_asks_for_a_split() {
        let (recorder, calls) = recorder(config(100));
        let clock = ManualClock::new(0);
        // 90 requests per second for ten windows.
        drive(&recorder, &clock, 10, 900, row);
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        assert_eq!(recorder.decide(b"", b""), None);
    }

    #[test]
    fn a_split_is_asked_for_once_after_the_configured_number_of_hot_windows() {
        let (recorder, calls) = recorder(config(100));
        let clock = ManualClock::new(0);
        drive(&recorder, &clock, 2, 2_000, row);
        assert_eq!(calls.load(Ordering::SeqCst), 0, "two windows are not three");
        drive(&recorder, &clock, 2, 2_000, row);
        assert_eq!(calls.load(Ordering::SeqCst), 1, "asked once, not again");
        assert!(matches!(recorder.decide(b"", b""), Some(Ok(_))));
        // Taking the decision ends the streak: three more windows first.
        drive(&recorder, &clock, 2, 2_000, row);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        drive(&recorder, &clock, 1, 2_000, row);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_cold_window_or_an_idle_one_ends_the_streak() {
        let (recorder, calls) = recorder(config(100));
        let clock = ManualClock::new(0);
        drive(&recorder, &clock, 2, 2_000, row);
        drive(&recorder, &clock, 1, 100, row);
        drive(&recorder, &clock, 2, 2_000, row);
        assert_eq!(calls.load(Ordering::SeqCst), 0, "the cold window broke it");
        clock.advance(60_000);
        drive(&recorder, &clock, 2, 2_000, row);
        assert_eq!(calls.load(Ordering::SeqCst), 0, "the idle minute broke it");
        drive(&recorder, &clock, 1, 2_000, row);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_byte_rate_alone_can_make_a_region_hot() {
        let mut c = config(0);
        c.bytes_threshold = 1024;
        let (recorder, calls) = recorder(c);
        let clock = ManualClock::new(0);
        let cell = Cell {
            row: row(1),
            family: Bytes::from_static(b"f"),
            qualifier: Bytes::from_static(b"q"),
            timestamp: 1,
            cell_type: basalt_types::CellType::Put,
            sequence_id: 0,
            value: Bytes::from(vec![0u8; 4096]),
            ttl_millis: None,
        };
        // 10 writes of 4 KiB per second: 40 KiB/s, 10 requests per second.
        for i in 0..401 {
            let mut c = cell.clone();
            c.row = row(i % 40);
            recorder.record_writes(&[vec![c]], &clock);
            clock.advance(100);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let proposal = recorder.decide(b"", b"").unwrap().unwrap();
        assert!(proposal.load.by_bytes);
        assert!(proposal.reason().contains("MiB/s"), "{}", proposal.reason());
    }

    #[test]
    fn the_proposed_row_is_the_weighted_median_of_the_load() {
        let (recorder, _) = recorder(config(100));
        let clock = ManualClock::new(0);
        // Nine requests in ten on rows 700-999, one on rows 0-699: the
        // median is about row 833 (see docs/load-split.md).
        let skewed = |i: usize| {
            if i.is_multiple_of(10) {
                row((i / 10 * 7) % 700)
            } else {
                row(700 + (i * 37) % 300)
            }
        };
        drive(&recorder, &clock, 3, 5_000, skewed);
        let proposal = recorder.decide(b"", b"").unwrap().unwrap();
        let key = String::from_utf8(proposal.key.to_vec()).unwrap();
        let n: usize = key["row".len()..].parse().unwrap();
        assert!((800..=866).contains(&n), "{key}");
        assert!((proposal.left_share - 0.5).abs() < 0.05, "{proposal:?}");
        let reason = proposal.reason();
        assert!(
            reason.starts_with("load: 500 req/s over 3 windows of 10 s, left "),
            "{reason}"
        );
    }

    #[test]
    fn the_samples_stay_bounded_whatever_the_rate() {
        let mut c = config(100);
        c.samples = 64;
        let (recorder, _) = recorder(c);
        let clock = ManualClock::new(0);
        for i in 0..100_000 {
            recorder.record_get(&row(i % 1000), None, &clock);
        }
        let state = recorder.state.lock();
        assert!(state.samples.len() < 64, "{}", state.samples.len());
        assert!(state.stride >= 1_024, "{}", state.stride);
    }

    #[test]
    fn a_single_hot_row_gives_no_split_row() {
        let (recorder, calls) = recorder(config(100));
        let clock = ManualClock::new(0);
        drive(&recorder, &clock, 3, 2_000, |i| {
            if i.is_multiple_of(20) {
                row(i % 1000)
            } else {
                row(500)
            }
        });
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let refusal = recorder.decide(b"", b"").unwrap().unwrap_err();
        match &refusal.cause {
            RefusalCause::SingleHotRow { row: hot, share } => {
                assert_eq!(hot, &row(500));
                assert!(*share > 0.9, "{share}");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            refusal
                .reason()
                .contains("the single row 'row0500' takes 9"),
            "{}",
            refusal.reason()
        );
    }

    #[test]
    fn the_split_row_is_never_the_region_s_first_row_nor_outside_it() {
        let (edge, _) = recorder(config(100));
        let clock = ManualClock::new(0);
        // Half the load on the region's first row, the rest on rows
        // outside the region (stale routes): nothing to split at.
        drive(&edge, &clock, 3, 2_000, |i| {
            if i.is_multiple_of(2) {
                row(100)
            } else {
                row(900 + i % 50)
            }
        });
        let decision = edge.decide(&row(100), &row(200)).unwrap();
        assert_eq!(decision.unwrap_err().cause, RefusalCause::NoSamples);

        // Load spread over rows 100-199: the split row lies inside.
        let (spread, _) = recorder(config(100));
        drive(&spread, &clock, 3, 2_000, |i| row(100 + i % 100));
        let proposal = spread.decide(&row(100), &row(200)).unwrap().unwrap();
        assert!(proposal.key > row(100) && proposal.key < row(200));
        assert!(proposal.key > row(140) && proposal.key < row(160));
    }

    #[test]
    fn an_unbalanced_best_row_is_refused() {
        let mut c = config(100);
        c.min_balance = 0.45;
        let (recorder, _) = recorder(c);
        let clock = ManualClock::new(0);
        // 40% on one row, the rest spread: the best split (just past the
        // hot row) leaves about 58/42, under the 45% asked for, and no
        // row takes half.
        drive(&recorder, &clock, 3, 2_000, |i| {
            if i % 5 < 2 {
                row(300)
            } else {
                row(i % 1000)
            }
        });
        let refusal = recorder.decide(b"", b"").unwrap().unwrap_err();
        assert_eq!(refusal.cause.code(), "unbalanced", "{refusal:?}");
    }

    #[test]
    fn a_recorder_with_both_thresholds_zero_stays_off() {
        let (recorder, calls) = recorder(config(0));
        assert!(!recorder.is_enabled());
        let clock = ManualClock::new(0);
        drive(&recorder, &clock, 5, 2_000, row);
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        assert_eq!(recorder.requests.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn the_log_keeps_the_last_decisions_and_counts_repeats() {
        let log = LoadSplitLog::new(2);
        let info = |id| RegionInfo {
            id,
            table: "t".into(),
            start_key: Bytes::new(),
            end_key: Bytes::new(),
        };
        let event = |id, cause: &str| {
            LoadSplitEvent::new(
                &info(id),
                id as i64,
                LoadSplitOutcome::Refused,
                cause,
                None,
                cause.to_string(),
            )
        };
        log.note(event(1, "single_hot_row"), false);
        log.note(event(1, "single_hot_row"), false);
        log.note(event(1, "single_hot_row"), false);
        assert_eq!(log.events().len(), 1);
        assert_eq!(log.events()[0].repeats, 2);
        log.note(event(2, "unbalanced"), false);
        log.note(event(3, "unbalanced"), false);
        let kept: Vec<i64> = log.events().iter().map(|e| e.at_millis).collect();
        assert_eq!(kept, [2, 3], "the oldest went");
        let json = serde_json::to_string(&log.events()[0]).unwrap();
        assert!(json.contains("\"outcome\":\"refused\""), "{json}");
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(4_100), "4,100");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
