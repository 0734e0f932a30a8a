//! Which row keys of a region were read and written, minute by minute: the
//! data of the key heatmap (load drawn against the key space over time).
//!
//! 1. The current minute is `clock millis / 60_000`, so a `ManualClock`
//!    drives it. During it the region keeps exact totals (reads, writes,
//!    bytes read, bytes written) and a bounded sample of the row keys the
//!    requests touched: at most `sample_keys` keys, each with its own
//!    counts. A request on a key already in the sample adds to it. Any
//!    other request is a candidate for the reservoir (Vitter's algorithm
//!    R over candidate requests): while the sample has room the key joins;
//!    after that it replaces a random key with probability
//!    `sample_keys / candidates seen`, the replaced key's counts leaving
//!    with it. So the sample stays a fair draw of the minute's requests,
//!    keys that keep being hit keep their counts growing, and memory stays
//!    bounded whatever the key count. The key is copied on entry, so the
//!    sample never keeps a request's buffer alive.
//! 2. When the minute rolls (seen by the next request or by a snapshot),
//!    the minute is compressed into at most `buckets` buckets. Their start
//!    keys are quantiles of the sampled keys in key order (each distinct
//!    key counts once: boundaries follow where keys were touched); a bucket
//!    covers `[its start, the next bucket's start)`, the last one up to
//!    and including the largest sampled key (`last_key`). Each bucket
//!    carries its sampled keys' share of the minute's *exact* totals, each
//!    metric scaled on its own and rounded by largest remainders, so the
//!    buckets of a minute add up to its exact totals. (Requests on keys
//!    below the first sampled key count in the first bucket.)
//! 3. The last `minutes` minutes are kept (the current one included);
//!    older ones drop, by time, so a region idle for an hour keeps nothing.
//!    Memory per region is bounded by about
//!    `minutes x buckets x (key length + 64 bytes)` for the compressed
//!    minutes (a bucket's key handle and four counters) plus
//!    `sample_keys x (key length + 112 bytes)` for the current one (the
//!    entry and its index): with the defaults (60, 32, 256) and 20-byte
//!    keys, about 160 KiB plus 35 KiB.
//! 4. `buckets = 0` turns it off: requests then cost nothing here.
//! 5. A region made by a split or merge takes over its predecessors'
//!    minutes for its own keys (the buckets starting in its range), so
//!    the heatmap keeps their history across the hand-over. A minute
//!    then holds the buckets of each predecessor and its own: up to a few
//!    times `buckets`, for the `minutes` after a hand-over at most.
//!
//! What it does not know: which keys inside a bucket were hot (the
//! heatmap's resolution is a bucket), and, for a scan, more than where it
//! started: a scan counts as one read at the first row it returned in the
//! region, with all the bytes it returned.

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// One minute in milliseconds.
pub const MINUTE_MS: i64 = 60_000;

/// The bounds of a region's key load. Defaults: 32 buckets, 60 minutes,
/// 256 sampled keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyLoadConfig {
    /// Buckets a minute is compressed into (0: no key load is kept).
    pub buckets: usize,
    /// Minutes kept, the current one included.
    pub minutes: usize,
    /// Keys sampled during the current minute.
    pub sample_keys: usize,
}

impl Default for KeyLoadConfig {
    fn default() -> Self {
        KeyLoadConfig {
            buckets: 32,
            minutes: 60,
            sample_keys: 256,
        }
    }
}

/// One bucket of a minute: the load on the keys from `start_key` up to the
/// next bucket's start (the last bucket: up to the minute's `last_key`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyLoadBucket {
    /// The first key of the bucket (a row key seen in that minute).
    pub start_key: Bytes,
    /// Reads (gets; scans at the first row they returned here).
    pub reads: u64,
    /// Row mutations.
    pub writes: u64,
    /// Bytes of cells returned by the reads.
    pub bytes_read: u64,
    /// Bytes of cells written.
    pub bytes_written: u64,
}

/// One minute of a region's key load.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyLoadMinute {
    /// Clock millis at which the minute started (a multiple of 60 000).
    pub minute_start_ms: i64,
    /// In key order; their counts add up to the minute's totals.
    pub buckets: Vec<KeyLoadBucket>,
    /// The largest key sampled in the minute: the last bucket ends there
    /// (inclusive).
    pub last_key: Bytes,
}

impl KeyLoadMinute {
    /// The minute's totals: (reads, writes, bytes read, bytes written).
    pub fn totals(&self) -> (u64, u64, u64, u64) {
        self.buckets.iter().fold((0, 0, 0, 0), |t, b| {
            (
                t.0 + b.reads,
                t.1 + b.writes,
                t.2 + b.bytes_read,
                t.3 + b.bytes_written,
            )
        })
    }
}

/// The four counts a key or a minute carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    reads: u64,
    writes: u64,
    bytes_read: u64,
    bytes_written: u64,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.reads += other.reads;
        self.writes += other.writes;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
    }

    fn is_empty(&self) -> bool {
        self.reads == 0 && self.writes == 0
    }
}

/// The minute being counted.
#[derive(Debug, Default)]
struct Current {
    minute: i64,
    totals: Counts,
    /// Sampled keys and their counts; `index` finds a key's entry.
    keys: Vec<(Bytes, Counts)>,
    index: HashMap<Bytes, usize>,
    /// Requests that were candidates for the reservoir (not on a key
    /// already in it).
    candidates: u64,
}

#[derive(Debug, Default)]
struct State {
    current: Current,
    /// Compressed minutes, oldest first.
    history: VecDeque<KeyLoadMinute>,
    /// The reservoir's random numbers (xorshift: cheap, and the same run
    /// twice samples the same keys, which tests rely on).
    rng: u64,
}

/// A region's key load (see the module docs).
#[derive(Debug)]
pub(crate) struct KeyLoad {
    config: KeyLoadConfig,
    state: Mutex<State>,
}

impl KeyLoad {
    pub(crate) fn new(config: KeyLoadConfig) -> Self {
        KeyLoad {
            config,
            state: Mutex::new(State {
                rng: 0x9E37_79B9_7F4A_7C15,
                ..State::default()
            }),
        }
    }

    fn enabled(&self) -> bool {
        self.config.buckets > 0 && self.config.minutes > 0 && self.config.sample_keys > 0
    }

    /// A read of `row` that returned `bytes`.
    pub(crate) fn record_read(&self, row: &[u8], bytes: u64, now_ms: i64) {
        self.record(
            row,
            Counts {
                reads: 1,
                bytes_read: bytes,
                ..Counts::default()
            },
            now_ms,
        );
    }

    /// A mutation of `row` that wrote `bytes`.
    pub(crate) fn record_write(&self, row: &[u8], bytes: u64, now_ms: i64) {
        self.record(
            row,
            Counts {
                writes: 1,
                bytes_written: bytes,
                ..Counts::default()
            },
            now_ms,
        );
    }

    fn record(&self, row: &[u8], counts: Counts, now_ms: i64) {
        if !self.enabled() {
            return;
        }
        let mut state = self.state.lock();
        self.roll(&mut state, now_ms.div_euclid(MINUTE_MS));
        let State { current, rng, .. } = &mut *state;
        current.totals.add(&counts);
        if let Some(&i) = current.index.get(row) {
            current.keys[i].1.add(&counts);
            return;
        }
        current.candidates += 1;
        if current.keys.len() < self.config.sample_keys {
            let key = Bytes::copy_from_slice(row);
            current.index.insert(key.clone(), current.keys.len());
            current.keys.push((key, counts));
            return;
        }
        // Algorithm R: keep this request with probability k / candidates,
        // in place of a random sampled key.
        let pick = next_random(rng) % current.candidates;
        if pick < current.keys.len() as u64 {
            let slot = pick as usize;
            let key = Bytes::copy_from_slice(row);
            let (old, _) = std::mem::replace(&mut current.keys[slot], (key.clone(), counts));
            current.index.remove(&old);
            current.index.insert(key, slot);
        }
    }

    /// Moves to `minute`: the current minute, if it is older and saw
    /// requests, is compressed into the history; minutes out of the window
    /// drop.
    fn roll(&self, state: &mut State, minute: i64) {
        if minute > state.current.minute {
            let done = std::mem::take(&mut state.current);
            if !done.totals.is_empty() {
                let done = compress(&done, self.config.buckets);
                match state.history.back_mut() {
                    // A minute adopted from a predecessor (step 5).
                    Some(last) if last.minute_start_ms == done.minute_start_ms => {
                        absorb(last, done);
                    }
                    _ => state.history.push_back(done),
                }
            }
            state.current.minute = minute;
        }
        // The window: this minute and the `minutes - 1` before it.
        let oldest = (minute - self.config.minutes as i64 + 1).saturating_mul(MINUTE_MS);
        while state
            .history
            .front()
            .is_some_and(|m| m.minute_start_ms < oldest)
        {
            state.history.pop_front();
        }
    }

    /// The minutes kept, oldest first, the current (partial) one last if it
    /// saw requests.
    pub(crate) fn snapshot(&self, now_ms: i64) -> Vec<KeyLoadMinute> {
        if !self.enabled() {
            return Vec::new();
        }
        let mut state = self.state.lock();
        self.roll(&mut state, now_ms.div_euclid(MINUTE_MS));
        let mut minutes: Vec<KeyLoadMinute> = state.history.iter().cloned().collect();
        if !state.current.totals.is_empty() {
            merge_minute(&mut minutes, compress(&state.current, self.config.buckets));
        }
        minutes
    }

    /// Takes over `predecessor`'s minutes for the keys in `[lower, upper)`
    /// (`upper` empty: no end): step 5 of the module docs.
    pub(crate) fn adopt(&self, predecessor: &KeyLoad, lower: &[u8], upper: &[u8], now_ms: i64) {
        if !self.enabled() {
            return;
        }
        let inside = |key: &[u8]| key >= lower && (upper.is_empty() || key < upper);
        let adopted: Vec<KeyLoadMinute> = predecessor
            .snapshot(now_ms)
            .into_iter()
            .filter_map(|mut minute| {
                minute.buckets.retain(|b| inside(&b.start_key));
                let last = minute.buckets.last()?.start_key.clone();
                if !inside(&minute.last_key) {
                    // The last bucket went on past the range: it now ends
                    // at its own start, as far as anything is known.
                    minute.last_key = last;
                }
                Some(minute)
            })
            .collect();
        let mut state = self.state.lock();
        let mut history: Vec<KeyLoadMinute> = state.history.drain(..).collect();
        for minute in adopted {
            merge_minute(&mut history, minute);
        }
        state.history = history.into();
    }
}

/// Adds `minute` to `minutes` (in time order): beside a minute with the
/// same start, its buckets join that minute's in key order.
fn merge_minute(minutes: &mut Vec<KeyLoadMinute>, minute: KeyLoadMinute) {
    let at = minutes.partition_point(|m| m.minute_start_ms < minute.minute_start_ms);
    match minutes.get_mut(at) {
        Some(same) if same.minute_start_ms == minute.minute_start_ms => absorb(same, minute),
        _ => minutes.insert(at, minute),
    }
}

/// Joins `other`'s buckets (of the same minute) to `minute`'s, in key order.
fn absorb(minute: &mut KeyLoadMinute, other: KeyLoadMinute) {
    minute.buckets.extend(other.buckets);
    minute.buckets.sort_by(|a, b| a.start_key.cmp(&b.start_key));
    if other.last_key > minute.last_key {
        minute.last_key = other.last_key;
    }
}

fn next_random(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    x
}

/// Compresses a minute into at most `buckets` buckets (step 2 of the
/// module docs).
fn compress(current: &Current, buckets: usize) -> KeyLoadMinute {
    let mut keys: Vec<&(Bytes, Counts)> = current.keys.iter().collect();
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    let n = keys.len();
    let buckets = buckets.max(1).min(n.max(1));
    // Bucket i holds sorted keys [starts[i], starts[i + 1]).
    let mut starts: Vec<usize> = (0..buckets).map(|i| i * n / buckets).collect();
    starts.dedup();
    let mut sampled: Vec<(Bytes, Counts)> = starts
        .iter()
        .enumerate()
        .map(|(i, &from)| {
            let to = starts.get(i + 1).copied().unwrap_or(n);
            let mut counts = Counts::default();
            for (_, c) in &keys[from..to] {
                counts.add(c);
            }
            let start = keys.get(from).map(|(k, _)| k.clone()).unwrap_or_default();
            (start, counts)
        })
        .collect();
    if sampled.is_empty() {
        sampled.push((Bytes::new(), Counts::default()));
    }
    let totals = current.totals;
    let weights = |f: fn(&Counts) -> u64| -> Vec<u64> {
        let w: Vec<u64> = sampled.iter().map(|(_, c)| f(c)).collect();
        if w.iter().any(|&x| x > 0) {
            w
        } else {
            // The sample lost every key of this kind (evicted): spread by
            // all sampled requests instead, or all in the first bucket.
            let all: Vec<u64> = sampled.iter().map(|(_, c)| c.reads + c.writes).collect();
            if all.iter().any(|&x| x > 0) {
                all
            } else {
                (0..sampled.len()).map(|i| u64::from(i == 0)).collect()
            }
        }
    };
    let reads = apportion(totals.reads, &weights(|c| c.reads));
    let writes = apportion(totals.writes, &weights(|c| c.writes));
    let bytes_read = apportion(totals.bytes_read, &weights(|c| c.bytes_read));
    let bytes_written = apportion(totals.bytes_written, &weights(|c| c.bytes_written));
    KeyLoadMinute {
        minute_start_ms: current.minute.saturating_mul(MINUTE_MS),
        buckets: sampled
            .into_iter()
            .enumerate()
            .map(|(i, (start_key, _))| KeyLoadBucket {
                start_key,
                reads: reads[i],
                writes: writes[i],
                bytes_read: bytes_read[i],
                bytes_written: bytes_written[i],
            })
            .collect(),
        last_key: keys.last().map(|(k, _)| k.clone()).unwrap_or_default(),
    }
}

/// Splits `total` in proportion to `weights` (not all zero), in whole
/// numbers adding up to `total`: each share rounded down, the remainder
/// handed out one by one to the largest fractional parts (ties: the
/// earlier bucket). All-zero weights give everything to the first.
pub fn apportion(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    if sum == 0 || weights.is_empty() {
        let mut out = vec![0; weights.len()];
        if let Some(first) = out.first_mut() {
            *first = total;
        }
        return out;
    }
    let mut out = Vec::with_capacity(weights.len());
    let mut remainders = Vec::with_capacity(weights.len());
    for (i, &w) in weights.iter().enumerate() {
        let exact = u128::from(total) * u128::from(w);
        out.push((exact / sum) as u64);
        remainders.push((exact % sum, i));
    }
    let handed: u64 = out.iter().sum();
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, i) in remainders.iter().take((total - handed) as usize) {
        out[i] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(buckets: usize, minutes: usize, sample_keys: usize) -> KeyLoadConfig {
        KeyLoadConfig {
            buckets,
            minutes,
            sample_keys,
        }
    }

    const T0: i64 = 1_700_000_040_000; // a minute boundary

    #[test]
    fn the_sample_stays_bounded_whatever_the_number_of_keys() {
        let load = KeyLoad::new(config(8, 5, 16));
        for i in 0..10_000u32 {
            load.record_write(&i.to_be_bytes(), 10, T0);
        }
        let state = load.state.lock();
        assert_eq!(state.current.keys.len(), 16);
        assert_eq!(state.current.index.len(), 16);
        assert_eq!(state.current.totals.writes, 10_000);
        for (i, (key, _)) in state.current.keys.iter().enumerate() {
            assert_eq!(state.current.index.get(key), Some(&i));
        }
    }

    #[test]
    fn bucket_sums_equal_the_exact_totals_of_the_minute() {
        let load = KeyLoad::new(config(7, 5, 50));
        for i in 0..3_000u32 {
            let key = format!("k{:05}", (i * 7919) % 2_000);
            if i % 3 == 0 {
                load.record_read(key.as_bytes(), 100 + u64::from(i % 13), T0 + 10);
            } else {
                load.record_write(key.as_bytes(), 40 + u64::from(i % 5), T0 + 10);
            }
        }
        let minutes = load.snapshot(T0 + 20);
        assert_eq!(minutes.len(), 1);
        let m = &minutes[0];
        assert_eq!(m.minute_start_ms, T0);
        assert!(m.buckets.len() <= 7 && !m.buckets.is_empty());
        assert!(m
            .buckets
            .windows(2)
            .all(|w| w[0].start_key < w[1].start_key));
        assert!(m.buckets.last().is_some_and(|b| b.start_key <= m.last_key));
        let state = load.state.lock();
        let exact = state.current.totals;
        assert_eq!(
            m.totals(),
            (
                exact.reads,
                exact.writes,
                exact.bytes_read,
                exact.bytes_written
            )
        );
        assert_eq!(m.totals().0, 1_000);
        assert_eq!(m.totals().1, 2_000);
    }

    #[test]
    fn a_key_already_sampled_adds_to_its_counts() {
        let load = KeyLoad::new(config(4, 5, 4));
        for _ in 0..10 {
            load.record_write(b"hot", 5, T0);
        }
        load.record_read(b"hot", 7, T0);
        let m = &load.snapshot(T0)[0];
        assert_eq!(m.buckets.len(), 1);
        assert_eq!(
            m.buckets[0],
            KeyLoadBucket {
                start_key: Bytes::from_static(b"hot"),
                reads: 1,
                writes: 10,
                bytes_read: 7,
                bytes_written: 50,
            }
        );
    }

    #[test]
    fn minutes_roll_over_and_the_oldest_drop() {
        let load = KeyLoad::new(config(4, 3, 16));
        for minute in 0..5 {
            let now = T0 + minute * MINUTE_MS + 1_000;
            for _ in 0..=minute {
                load.record_write(format!("m{minute}").as_bytes(), 1, now);
            }
        }
        // At minute 4 the window is minutes 2, 3 and 4 (the current one).
        let minutes = load.snapshot(T0 + 4 * MINUTE_MS + 2_000);
        let starts: Vec<i64> = minutes.iter().map(|m| m.minute_start_ms).collect();
        assert_eq!(
            starts,
            [T0 + 2 * MINUTE_MS, T0 + 3 * MINUTE_MS, T0 + 4 * MINUTE_MS]
        );
        let writes: Vec<u64> = minutes.iter().map(|m| m.totals().1).collect();
        assert_eq!(writes, [3, 4, 5]);
        // Idle for longer than the window: nothing is kept.
        assert!(load.snapshot(T0 + 10 * MINUTE_MS).is_empty());
        assert!(load.state.lock().history.is_empty());
    }

    #[test]
    fn zero_buckets_turn_the_key_load_off() {
        let load = KeyLoad::new(config(0, 60, 256));
        load.record_write(b"k", 1, T0);
        assert!(load.snapshot(T0).is_empty());
        assert!(load.state.lock().current.keys.is_empty());
    }

    #[test]
    fn apportioning_rounds_by_largest_remainders_and_keeps_the_total() {
        assert_eq!(apportion(10, &[1, 1, 1]), [4, 3, 3]);
        assert_eq!(apportion(7, &[0, 5, 0]), [0, 7, 0]);
        assert_eq!(apportion(5, &[0, 0]), [5, 0]);
        assert_eq!(apportion(0, &[3, 4]), [0, 0]);
        let shares = apportion(1_000_003, &[1, 2, 3, 4, 5]);
        assert_eq!(shares.iter().sum::<u64>(), 1_000_003);
    }

    #[test]
    fn a_successor_takes_over_the_minutes_of_its_keys() {
        let parent = KeyLoad::new(config(8, 10, 64));
        for i in 0..100u32 {
            parent.record_write(format!("k{i:03}").as_bytes(), 1, T0 + i64::from(i));
        }
        for i in 0..50u32 {
            parent.record_write(format!("k{i:03}").as_bytes(), 1, T0 + MINUTE_MS);
        }
        let daughter = KeyLoad::new(config(8, 10, 64));
        daughter.adopt(&parent, b"k050", b"", T0 + MINUTE_MS);
        // The current minute's own writes join the adopted partial minute.
        daughter.record_write(b"k070", 1, T0 + MINUTE_MS + 5);
        let minutes = daughter.snapshot(T0 + MINUTE_MS + 10);
        assert_eq!(minutes.len(), 2, "{minutes:?}");
        assert!(minutes[0]
            .buckets
            .iter()
            .all(|b| b.start_key[..] >= b"k050"[..]));
        assert!(minutes[0].totals().1 > 0 && minutes[0].totals().1 < 100);
        assert_eq!(minutes[1].totals().1, 1, "only its own write then");
        assert!(minutes[1]
            .buckets
            .windows(2)
            .all(|w| w[0].start_key <= w[1].start_key));
        // After the minute rolls it stays one minute.
        let later = daughter.snapshot(T0 + 2 * MINUTE_MS);
        assert_eq!(later.len(), 2);
        assert_eq!(later[1].minute_start_ms, T0 + MINUTE_MS);
    }

    #[test]
    fn buckets_follow_a_rising_key_range_minute_after_minute() {
        let load = KeyLoad::new(config(8, 20, 64));
        // Ten minutes of monotonically increasing keys, 500 a minute.
        for minute in 0..10i64 {
            for i in 0..500i64 {
                let key = format!("{:08}", minute * 500 + i);
                load.record_write(key.as_bytes(), 30, T0 + minute * MINUTE_MS + i);
            }
        }
        let minutes = load.snapshot(T0 + 9 * MINUTE_MS + 999);
        assert_eq!(minutes.len(), 10);
        for (minute, m) in minutes.iter().enumerate() {
            let low = format!("{:08}", minute * 500);
            let high = format!("{:08}", minute * 500 + 499);
            assert!(m.buckets[0].start_key >= low.as_bytes(), "{m:?}");
            assert!(m.last_key <= high.as_bytes(), "{m:?}");
            assert_eq!(m.totals().1, 500);
        }
    }
}
