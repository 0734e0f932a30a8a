//! The number generators of YCSB's CoreWorkload, written from its
//! documented behaviour: FNV-1a 64 key hashing, the Gray et al. zipfian
//! generator (with the incremental zeta YCSB uses when the item count
//! grows), the scrambled zipfian, the skewed "latest" generator and the
//! acknowledged insert counter of workload D.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rand::Rng;

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// The item count of YCSB's scrambled zipfian generator: values are drawn
/// from a zipfian over this many items, then hashed into the key range, so
/// popular keys are spread over the whole key space.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;

/// zeta(SCRAMBLED_ITEM_COUNT, 0.99), the constant YCSB uses so that it never
/// sums ten billion terms.
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// FNV-1a over the eight bytes of `value`, least significant first, made
/// non-negative as a Java `long` by `Math.abs` (which leaves `i64::MIN` as
/// it is): the hash YCSB's `Utils.fnvhash64` computes.
pub fn fnv_hash64(value: i64) -> i64 {
    let mut val = value as u64;
    let mut hash = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        hash ^= val & 0xff;
        hash = hash.wrapping_mul(FNV_PRIME_64);
        val >>= 8;
    }
    (hash as i64).wrapping_abs()
}

/// The key of record `keynum`: `user` followed by the decimal FNV hash of
/// the record number (YCSB's hashed, not ordered, inserts).
pub fn build_key(keynum: u64) -> String {
    format!("user{}", fnv_hash64(keynum as i64))
}

/// zeta(n, theta) summed from item `start` (exclusive count) to `n`, added
/// to `initial`: lets the generator extend zeta when the item count grows.
fn zeta_from(start: u64, n: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in start..n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// Zipfian-distributed integers in `[base, base + items)`: item `base` is
/// the most popular. Draws follow Gray et al., "Quickly Generating
/// Billion-Record Synthetic Databases" (SIGMOD 1994), as YCSB does.
#[derive(Debug, Clone)]
pub struct Zipfian {
    base: u64,
    items: u64,
    theta: f64,
    alpha: f64,
    zeta2theta: f64,
    zetan: f64,
    eta: f64,
    /// The item count `zetan` was computed for.
    count_for_zeta: u64,
}

impl Zipfian {
    /// Over `[min, max]` with YCSB's constant 0.99.
    pub fn new(min: u64, max: u64) -> Self {
        let items = max.saturating_sub(min) + 1;
        let zetan = zeta_from(0, items, ZIPFIAN_CONSTANT, 0.0);
        Self::with_zetan(min, max, ZIPFIAN_CONSTANT, zetan)
    }

    /// Over `[min, max]` with `theta` and a precomputed zeta(items, theta).
    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Self {
        let items = max.saturating_sub(min) + 1;
        let zeta2theta = zeta_from(0, 2, theta, 0.0);
        let mut z = Zipfian {
            base: min,
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2theta,
            zetan,
            eta: 0.0,
            count_for_zeta: items,
        };
        z.eta = z.eta_for(items);
        z
    }

    fn eta_for(&self, items: u64) -> f64 {
        (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan)
    }

    /// The number of items.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// A draw from the first `item_count` items. When the count grew since
    /// the last call, zeta is extended by the new terms only (YCSB's
    /// incremental zeta); when it shrank, it is recomputed from scratch.
    pub fn next_with_count<R: Rng + ?Sized>(&mut self, rng: &mut R, item_count: u64) -> u64 {
        let item_count = item_count.max(1);
        if item_count != self.count_for_zeta {
            self.zetan = if item_count > self.count_for_zeta {
                zeta_from(self.count_for_zeta, item_count, self.theta, self.zetan)
            } else {
                zeta_from(0, item_count, self.theta, 0.0)
            };
            self.count_for_zeta = item_count;
            self.eta = self.eta_for(item_count);
        }
        let u: f64 = rng.random();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        let offset = (item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        self.base + offset.min(item_count - 1)
    }

    /// A draw over all the items.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        self.next_with_count(rng, self.items)
    }
}

/// Zipfian popularity with the popular items scattered over `[min, max]`
/// by hashing: YCSB's request distribution `zipfian` for workloads A, B, C,
/// E and F.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    min: u64,
    items: u64,
    gen: Zipfian,
}

impl ScrambledZipfian {
    /// Over `[min, max]`.
    pub fn new(min: u64, max: u64) -> Self {
        ScrambledZipfian {
            min,
            items: max.saturating_sub(min) + 1,
            gen: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN),
        }
    }

    /// The next value.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        let v = self.gen.next(rng);
        self.min + (fnv_hash64(v as i64) as u64) % self.items
    }
}

/// Recently inserted items are the most popular: YCSB's `latest`
/// distribution (workload D). Draws `latest - zipfian(latest)`.
#[derive(Debug, Clone)]
pub struct SkewedLatest {
    gen: Zipfian,
}

impl SkewedLatest {
    /// For a key space whose newest acknowledged item is `latest`.
    pub fn new(latest: u64) -> Self {
        SkewedLatest {
            gen: Zipfian::new(0, latest.max(1) - 1),
        }
    }

    /// The next value given the newest acknowledged item.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R, latest: u64) -> u64 {
        let count = latest.max(1);
        latest - self.gen.next_with_count(rng, count).min(latest)
    }
}

/// The insert sequence of a run phase: hands out record numbers from a
/// start and tracks which inserts completed, so readers only choose
/// records that exist (YCSB's acknowledged counter).
#[derive(Debug)]
pub struct InsertCounter {
    next: AtomicU64,
    /// Every record number below this has been acknowledged.
    limit: AtomicU64,
    /// Acknowledged numbers above `limit` (completed out of order).
    pending: Mutex<BTreeSet<u64>>,
}

impl InsertCounter {
    /// A sequence whose first number is `start` (records `0..start` exist).
    pub fn new(start: u64) -> Self {
        InsertCounter {
            next: AtomicU64::new(start),
            limit: AtomicU64::new(start),
            pending: Mutex::new(BTreeSet::new()),
        }
    }

    /// The next record number to insert.
    pub fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Marks `n` inserted.
    pub fn acknowledge(&self, n: u64) {
        let mut pending = match self.pending.lock() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        };
        pending.insert(n);
        let mut limit = self.limit.load(Ordering::Acquire);
        while pending.remove(&limit) {
            limit += 1;
        }
        self.limit.store(limit, Ordering::Release);
    }

    /// The newest record number below which every insert completed (the
    /// largest record number a reader may choose), or `None` before any.
    pub fn last_value(&self) -> Option<u64> {
        self.limit.load(Ordering::Acquire).checked_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    /// FNV-1a 64 of the 8 little-endian bytes, computed by hand for 0:
    /// every octet is zero, so the hash is the basis multiplied by the
    /// prime eight times.
    #[test]
    fn fnv_of_zero_is_eight_prime_multiplications() {
        let mut h = FNV_OFFSET_BASIS_64;
        for _ in 0..8 {
            h = h.wrapping_mul(FNV_PRIME_64);
        }
        assert_eq!(fnv_hash64(0), (h as i64).wrapping_abs());
        assert!(fnv_hash64(0) >= 0);
    }

    #[test]
    fn fnv_matches_byte_wise_reference() {
        for v in [1i64, 42, 999_999, 1 << 40, -7] {
            let mut h = FNV_OFFSET_BASIS_64;
            for b in v.to_le_bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(FNV_PRIME_64);
            }
            assert_eq!(fnv_hash64(v), (h as i64).wrapping_abs(), "value {v}");
        }
    }

    #[test]
    fn keys_are_user_and_decimal_hash() {
        let key = build_key(12);
        assert!(key.starts_with("user"));
        assert_eq!(key[4..].parse::<i64>().ok(), Some(fnv_hash64(12)));
        assert_ne!(build_key(1), build_key(2));
    }

    #[test]
    fn zipfian_head_is_popular_and_tail_is_reached() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut z = Zipfian::new(0, 999);
        let mut counts = vec![0u32; 1000];
        let draws = 200_000;
        for _ in 0..draws {
            let v = z.next(&mut rng);
            assert!(v < 1000);
            counts[v as usize] += 1;
        }
        // P(0) = 1/zeta(1000, 0.99), about 0.13; P(1) is about half of it.
        let zeta = zeta_from(0, 1000, 0.99, 0.0);
        let p0 = f64::from(counts[0]) / draws as f64;
        assert!((p0 - 1.0 / zeta).abs() < 0.01, "p0 {p0} vs {}", 1.0 / zeta);
        assert!(counts[0] > counts[1] && counts[1] > counts[10] && counts[10] > counts[500]);
        assert!(counts[900..].iter().any(|&c| c > 0));
    }

    #[test]
    fn incremental_zeta_equals_full_zeta() {
        let mut rng = StdRng::seed_from_u64(1);
        let mut z = Zipfian::new(0, 99);
        z.next_with_count(&mut rng, 500);
        let full = zeta_from(0, 500, 0.99, 0.0);
        assert!((z.zetan - full).abs() < 1e-9);
    }

    #[test]
    fn scrambled_zipfian_stays_in_range_and_spreads_hot_keys() {
        let mut rng = StdRng::seed_from_u64(3);
        let mut z = ScrambledZipfian::new(100, 1099);
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            let v = z.next(&mut rng);
            assert!((100..=1099).contains(&v));
            counts[(v - 100) as usize] += 1;
        }
        let max = counts.iter().copied().max().unwrap_or(0);
        let hottest = counts.iter().position(|&c| c == max).unwrap_or(0);
        // Skewed, and the hottest key is not simply the smallest.
        assert!(max > 100_000 / 1000 * 5);
        assert_ne!(hottest, 0);
    }

    #[test]
    fn latest_prefers_the_newest_items() {
        let mut rng = StdRng::seed_from_u64(5);
        let mut g = SkewedLatest::new(1000);
        let mut newest = 0;
        for _ in 0..10_000 {
            let v = g.next(&mut rng, 999);
            assert!(v <= 999);
            if v >= 990 {
                newest += 1;
            }
        }
        assert!(newest > 3_000, "{newest} of 10000 draws in the newest 10");
        // The range grows with the acknowledged count.
        assert!((0..1000).map(|_| g.next(&mut rng, 5000)).all(|v| v <= 5000));
    }

    #[test]
    fn insert_counter_acknowledges_in_order() {
        let c = InsertCounter::new(10);
        assert_eq!(c.last_value(), Some(9));
        let (a, b, d) = (c.next(), c.next(), c.next());
        assert_eq!((a, b, d), (10, 11, 12));
        c.acknowledge(11);
        assert_eq!(c.last_value(), Some(9), "10 is still in flight");
        c.acknowledge(10);
        assert_eq!(c.last_value(), Some(11));
        c.acknowledge(12);
        assert_eq!(c.last_value(), Some(12));
        assert_eq!(InsertCounter::new(0).last_value(), None);
    }
}
