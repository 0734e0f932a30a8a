//! The block cache: decompressed store-file blocks shared by every store.
//!
//! Blocks are keyed by `(file id, block offset)`; file ids come from
//! [`next_file_id`] so no two open files share one. The cache is split into
//! shards, each behind its own lock, chosen by a hash of the key.
//!
//! # Eviction
//!
//! Each shard keeps three LRU tiers, like HBase's LRU cache priorities:
//!
//! - **single**: blocks read once (every new block of an ordinary family);
//! - **multi**: blocks read again after being cached (promoted on a hit);
//! - **in-memory**: blocks of IN_MEMORY families, and every file's leaf
//!   index and bloom blocks (never demoted or promoted; see
//!   `StoreFileReader`'s `read_block` for why index and bloom blocks are
//!   kept here).
//!
//! When a shard is over its capacity it evicts the least recently used
//! block of the first tier in this order that applies:
//!
//! 1. single, if it holds more than a quarter of the shard or multi is
//!    empty: a long scan churns through single blocks and leaves the hot
//!    multi set alone;
//! 2. multi: single keeps at least a quarter of the shard for new blocks,
//!    so a changed workload can still promote its blocks;
//! 3. single (whatever is left of it);
//! 4. in-memory: only once nothing else is left.
//!
//! A block bigger than a shard's capacity is not cached at all.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;

/// Process-wide source of store-file ids for block cache keys: unique for
/// the life of the process, so a deleted file's blocks can never be
/// mistaken for a new file's.
pub fn next_file_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// How a block competes for space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockPriority {
    /// An ordinary block: single-access until hit again.
    Normal,
    /// A block of an IN_MEMORY family, or an index or bloom block:
    /// evicted last.
    InMemory,
}

/// Bytes charged per cached block beyond its payload (map entry, tier
/// entry, `Bytes` header): keeps many tiny blocks from overrunning memory.
const ENTRY_OVERHEAD: usize = 96;

/// A shard is at least this big before the cache splits into more shards,
/// so typical blocks (64 KB) stay far below a shard's capacity.
const MIN_SHARD_BYTES: usize = 4 << 20;

const MAX_SHARDS: usize = 16;

type Key = (u64, u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    Single = 0,
    Multi = 1,
    Memory = 2,
}

#[derive(Debug)]
struct Entry {
    data: Bytes,
    charge: usize,
    tier: Tier,
    /// The entry's key in its tier's LRU order.
    tick: u64,
    /// When it was last used: `tick` or later. A hit only sets this (a
    /// hash lookup and a store, no reordering under the shard's lock); the
    /// entry is moved to its place when eviction reaches its old one.
    used: u64,
}

/// One shard. Invariant: every map entry appears exactly once in the order
/// of its tier, under its `tick` (which is at most its `used`), and
/// `bytes[t]` is the sum of the charges of tier `t`'s entries. The first
/// entry of an order whose `used` is past its `tick` was used since it was
/// placed: eviction re-places it under `used` instead of evicting it, so
/// blocks still leave in least-recently-used order.
#[derive(Debug, Default)]
struct Shard {
    /// Fx-hashed: keys are numbers the process hands out, so there is no
    /// flooding to resist, and SipHash was a visible part of a cached get.
    map: HashMap<Key, Entry, rustc_hash::FxBuildHasher>,
    order: [BTreeMap<u64, Key>; 3],
    bytes: [usize; 3],
    tick: u64,
}

impl Shard {
    fn total(&self) -> usize {
        self.bytes.iter().sum()
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    fn victim_tier(&self, capacity: usize) -> Option<Tier> {
        let single = !self.order[Tier::Single as usize].is_empty();
        let multi = !self.order[Tier::Multi as usize].is_empty();
        if single && (self.bytes[Tier::Single as usize] > capacity / 4 || !multi) {
            Some(Tier::Single)
        } else if multi {
            Some(Tier::Multi)
        } else if !self.order[Tier::Memory as usize].is_empty() {
            Some(Tier::Memory)
        } else {
            None
        }
    }

    /// Evicts until the shard fits `capacity`; the evicted blocks go into
    /// `out`, for the caller to drop once the shard's lock is released
    /// (freeing a block's memory is the slow part of an eviction).
    fn evict(&mut self, capacity: usize, out: &mut Vec<Bytes>) -> u64 {
        let mut evicted = 0;
        while self.total() > capacity {
            let Some(tier) = self.victim_tier(capacity) else {
                break;
            };
            let Some((_, key)) = self.order[tier as usize].pop_first() else {
                break;
            };
            if let Some(e) = self.map.get_mut(&key) {
                if e.used > e.tick {
                    // Used since it was placed: to its place, not out.
                    e.tick = e.used;
                    self.order[tier as usize].insert(e.tick, key);
                    continue;
                }
            }
            if let Some(e) = self.map.remove(&key) {
                self.bytes[tier as usize] -= e.charge;
                evicted += 1;
                out.push(e.data);
            }
        }
        evicted
    }

    fn remove(&mut self, key: &Key) -> bool {
        match self.map.remove(key) {
            Some(e) => {
                self.order[e.tier as usize].remove(&e.tick);
                self.bytes[e.tier as usize] -= e.charge;
                true
            }
            None => false,
        }
    }
}

/// Counters of a [`BlockCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockCacheStats {
    /// Lookups that found their block.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Blocks added.
    pub inserts: u64,
    /// Blocks pushed out to make room.
    pub evictions: u64,
    /// Blocks refused because they are bigger than a shard.
    pub rejected: u64,
    /// Blocks cached now.
    pub blocks: u64,
    /// Bytes charged now (payloads plus a fixed overhead per block).
    pub bytes: u64,
    /// Of which blocks in the in-memory tier.
    pub in_memory_bytes: u64,
    /// The configured capacity in bytes.
    pub capacity: u64,
}

impl BlockCacheStats {
    /// Hits over lookups (0 when there were none).
    pub fn hit_ratio(&self) -> f64 {
        let lookups = self.hits + self.misses;
        if lookups == 0 {
            0.0
        } else {
            self.hits as f64 / lookups as f64
        }
    }
}

/// A bounded, sharded cache of decompressed blocks shared by all stores.
#[derive(Debug)]
pub struct BlockCache {
    shards: Box<[Mutex<Shard>]>,
    shard_capacity: usize,
    capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    inserts: AtomicU64,
    evictions: AtomicU64,
    rejected: AtomicU64,
}

impl BlockCache {
    /// A cache holding at most `capacity_bytes`.
    pub fn new(capacity_bytes: usize) -> Self {
        let mut shards = 1;
        while shards < MAX_SHARDS && capacity_bytes / (shards * 2) >= MIN_SHARD_BYTES {
            shards *= 2;
        }
        BlockCache {
            shards: (0..shards).map(|_| Mutex::new(Shard::default())).collect(),
            shard_capacity: capacity_bytes / shards,
            capacity: capacity_bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            inserts: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
        }
    }

    fn shard(&self, key: &Key) -> &Mutex<Shard> {
        let mut h = key.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ key.1;
        h = (h ^ (h >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^= h >> 29;
        &self.shards[(h as usize) % self.shards.len()]
    }

    /// The cached block at `offset` of file `file_id`, if any. A hit on a
    /// single-access block promotes it to the multi-access tier.
    pub fn get(&self, file_id: u64, offset: u64) -> Option<Bytes> {
        let key = (file_id, offset);
        let mut shard = self.shard(&key).lock();
        let tick = shard.next_tick();
        let found = match shard.map.get_mut(&key) {
            Some(e) => {
                e.used = tick;
                // A first hit promotes a single-access block: it changes
                // tier, so it moves now. Later hits only mark it used.
                let promoted = (e.tier == Tier::Single).then(|| {
                    let old_tick = e.tick;
                    e.tier = Tier::Multi;
                    e.tick = tick;
                    (old_tick, e.charge)
                });
                Some((promoted, e.data.clone()))
            }
            None => None,
        };
        match found {
            Some((promoted, data)) => {
                if let Some((old_tick, charge)) = promoted {
                    shard.order[Tier::Single as usize].remove(&old_tick);
                    shard.order[Tier::Multi as usize].insert(tick, key);
                    shard.bytes[Tier::Single as usize] -= charge;
                    shard.bytes[Tier::Multi as usize] += charge;
                }
                drop(shard);
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(data)
            }
            None => {
                drop(shard);
                self.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Caches a block. A block already cached under the key is left as it
    /// is (two readers racing to load one block both insert it).
    pub fn insert(&self, file_id: u64, offset: u64, data: Bytes, priority: BlockPriority) {
        let charge = data.len() + ENTRY_OVERHEAD;
        if charge > self.shard_capacity {
            self.rejected.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let key = (file_id, offset);
        let tier = match priority {
            BlockPriority::Normal => Tier::Single,
            BlockPriority::InMemory => Tier::Memory,
        };
        let mut shard = self.shard(&key).lock();
        if shard.map.contains_key(&key) {
            return;
        }
        let tick = shard.next_tick();
        shard.map.insert(
            key,
            Entry {
                data,
                charge,
                tier,
                tick,
                used: tick,
            },
        );
        shard.order[tier as usize].insert(tick, key);
        shard.bytes[tier as usize] += charge;
        let mut evicted_blocks = Vec::new();
        let evicted = shard.evict(self.shard_capacity, &mut evicted_blocks);
        drop(shard);
        drop(evicted_blocks);
        self.inserts.fetch_add(1, Ordering::Relaxed);
        if evicted > 0 {
            self.evictions.fetch_add(evicted, Ordering::Relaxed);
        }
    }

    /// True when the block is cached (does not count as an access).
    pub fn contains(&self, file_id: u64, offset: u64) -> bool {
        let key = (file_id, offset);
        self.shard(&key).lock().map.contains_key(&key)
    }

    /// Drops every block of a file (after the file is closed for good,
    /// e.g. replaced by a compaction); returns how many.
    pub fn remove_file(&self, file_id: u64) -> usize {
        let mut removed = 0;
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            let keys: Vec<Key> = shard
                .map
                .keys()
                .filter(|k| k.0 == file_id)
                .copied()
                .collect();
            for k in keys {
                if shard.remove(&k) {
                    removed += 1;
                }
            }
        }
        removed
    }

    /// Current counters.
    pub fn stats(&self) -> BlockCacheStats {
        let mut s = BlockCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            inserts: self.inserts.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            capacity: self.capacity as u64,
            ..BlockCacheStats::default()
        };
        for shard in self.shards.iter() {
            let shard = shard.lock();
            s.blocks += shard.map.len() as u64;
            s.bytes += shard.total() as u64;
            s.in_memory_bytes += shard.bytes[Tier::Memory as usize] as u64;
        }
        s
    }

    /// The configured capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn block(n: usize) -> Bytes {
        Bytes::from(vec![0u8; n])
    }

    #[test]
    fn hits_misses_and_capacity() {
        let cache = BlockCache::new(100 * (1000 + ENTRY_OVERHEAD));
        assert!(cache.get(1, 0).is_none());
        cache.insert(1, 0, block(1000), BlockPriority::Normal);
        assert_eq!(cache.get(1, 0).unwrap().len(), 1000);
        for i in 1..1000 {
            cache.insert(1, i * 1000, block(1000), BlockPriority::Normal);
            assert!(cache.stats().bytes <= cache.capacity() as u64);
        }
        let s = cache.stats();
        assert_eq!((s.hits, s.misses), (1, 1));
        assert_eq!(s.inserts, 1000);
        assert_eq!(s.evictions, 1000 - s.blocks);
        assert!(s.blocks <= 100);
        // The block hit once (multi tier) survived the stream of single blocks.
        assert!(cache.contains(1, 0));
    }

    #[test]
    fn a_block_hit_since_it_was_cached_outlives_blocks_used_less_recently() {
        // Hits only mark a block used; eviction must still take the least
        // recently used one (in a tier without promotion: in-memory).
        let block = Bytes::from(vec![0u8; 1 << 20]);
        let cache = BlockCache::new((7 << 20) / 2);
        for offset in [1, 2, 3] {
            cache.insert(9, offset, block.clone(), BlockPriority::InMemory);
        }
        assert!(cache.get(9, 1).is_some());
        cache.insert(9, 4, block.clone(), BlockPriority::InMemory);
        assert!(cache.contains(9, 1), "used most recently but one");
        assert!(!cache.contains(9, 2), "the least recently used went");
        assert!(cache.contains(9, 3) && cache.contains(9, 4));
        // Block 1 was re-placed under its hit, which came after block 3
        // was cached: 3 is next.
        cache.insert(9, 5, block, BlockPriority::InMemory);
        assert!(!cache.contains(9, 3));
        assert!(cache.contains(9, 1) && cache.contains(9, 4) && cache.contains(9, 5));
    }

    #[test]
    fn in_memory_blocks_outlive_single_access_blocks() {
        let cache = BlockCache::new(20 * (1000 + ENTRY_OVERHEAD));
        for i in 0..5 {
            cache.insert(7, i, block(1000), BlockPriority::InMemory);
        }
        for i in 0..500 {
            cache.insert(8, i, block(1000), BlockPriority::Normal);
        }
        for i in 0..5 {
            assert!(cache.contains(7, i));
        }
        assert_eq!(
            cache.stats().in_memory_bytes,
            5 * (1000 + ENTRY_OVERHEAD) as u64
        );
        // In-memory blocks go only when nothing else is left.
        for i in 0..40 {
            cache.insert(9, i, block(1000), BlockPriority::InMemory);
        }
        assert!(cache.stats().bytes <= cache.capacity() as u64);
        assert!(!(0..500).any(|i| cache.contains(8, i)));
    }

    #[test]
    fn multi_tier_yields_to_new_blocks_eventually() {
        let cap = 10 * (1000 + ENTRY_OVERHEAD);
        let cache = BlockCache::new(cap);
        for i in 0..10 {
            cache.insert(1, i, block(1000), BlockPriority::Normal);
            cache.get(1, i);
        }
        // A new working set, read twice per block, gets promoted and
        // displaces the old multi-access set instead of thrashing.
        for i in 0..10 {
            if cache.get(2, i).is_none() {
                cache.insert(2, i, block(1000), BlockPriority::Normal);
            }
            assert!(cache.get(2, i).is_some());
        }
        assert!((0..10).all(|i| cache.contains(2, i)));
        assert!(!(0..10).any(|i| cache.contains(1, i)));
    }

    #[test]
    fn oversized_blocks_are_refused_and_files_removed() {
        let cache = BlockCache::new(10_000);
        cache.insert(1, 0, block(20_000), BlockPriority::Normal);
        assert_eq!(cache.stats().rejected, 1);
        cache.insert(2, 0, block(100), BlockPriority::Normal);
        cache.insert(2, 1, block(100), BlockPriority::Normal);
        cache.insert(3, 0, block(100), BlockPriority::Normal);
        assert_eq!(cache.remove_file(2), 2);
        assert!(cache.contains(3, 0));
        assert_eq!(cache.stats().blocks, 1);
    }

    #[test]
    fn concurrent_access_keeps_the_books_straight() {
        let cache = Arc::new(BlockCache::new(64 << 20));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let cache = Arc::clone(&cache);
                std::thread::spawn(move || {
                    for i in 0..20_000u64 {
                        let off = (i * 7 + t) % 3000;
                        if cache.get(1, off).is_none() {
                            cache.insert(1, off, block(30_000), BlockPriority::Normal);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = cache.stats();
        assert_eq!(s.hits + s.misses, 80_000);
        assert!(s.bytes <= s.capacity);
        assert!(s.hits > 0 && s.evictions > 0);
        assert!(cache.shards.len() > 1);
        let blocks: usize = cache.shards.iter().map(|s| s.lock().map.len()).sum();
        assert_eq!(blocks as u64, s.blocks);
    }
}
