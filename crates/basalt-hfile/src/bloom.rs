//! Compound Bloom filters: the metadata block in the load-on-open section
//! (`BLMFMET2` for the general filter, `DFBLMET2` for delete-family) and
//! the chunks (`BLMFBLK2`, bit arrays) among the data blocks.
//!
//! Metadata (big-endian): version (4, = 3), total byte size (8), hash
//! count (4), hash type (4: 0 Jenkins, 1 Murmur2, 2 Murmur3), key count
//! (8), maximum keys (8), chunk count (4), the comparator's class name
//! (Hadoop vint length and bytes; empty for raw byte order), then a root
//! index of the chunks (see `index`) keyed by each chunk's first key.
//!
//! A key is in a chunk when, with `h1 = hash(key, 0)` and
//! `h2 = hash(key, h1)`, the bits `|(h1 + i * h2) mod bits|` for
//! `i < hash count` are all set (32-bit wrapping arithmetic, Java's signed
//! remainder; bit `n` is bit `n % 8` of byte `n / 8`).

use crate::cursor::{Cursor, Decode};
use crate::index::{parse_root, IndexEntry};

/// A Bloom filter's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BloomMeta {
    /// Format version (3).
    pub version: i32,
    /// Bytes of all chunks together.
    pub total_byte_size: i64,
    /// Hash functions per key.
    pub hash_count: i32,
    /// 0 Jenkins, 1 Murmur2 (HBase's default), 2 Murmur3.
    pub hash_type: i32,
    /// Keys added.
    pub key_count: i64,
    /// Keys the filter was sized for.
    pub max_keys: i64,
    /// The comparator's Java class name (empty: raw bytes).
    pub comparator: String,
    /// The chunks, by first key.
    pub chunks: Vec<IndexEntry>,
}

/// The largest hash count accepted (HBase derives it from the error rate:
/// a few; the cap bounds a lookup on a hostile file).
const MAX_HASH_COUNT: i32 = 64;

impl BloomMeta {
    /// Parses a Bloom metadata block's payload.
    pub(crate) fn parse(payload: &[u8]) -> Decode<BloomMeta> {
        let mut c = Cursor::new(payload);
        let version = c.i32("bloom version")?;
        if version != 3 {
            return Err(format!("bloom metadata version {version}, 3 expected"));
        }
        let total_byte_size = c.i64("bloom total byte size")?;
        let hash_count = c.i32("bloom hash count")?;
        if !(1..=MAX_HASH_COUNT).contains(&hash_count) {
            return Err(format!(
                "bloom hash count {hash_count} outside 1..={MAX_HASH_COUNT}"
            ));
        }
        let hash_type = c.i32("bloom hash type")?;
        let key_count = c.i64("bloom key count")?;
        let max_keys = c.i64("bloom max keys")?;
        let chunk_count = c.len32("bloom chunk count")?;
        let comparator = String::from_utf8_lossy(c.hadoop_bytes("bloom comparator")?).into_owned();
        let chunks = parse_root(&mut c, chunk_count)?;
        Ok(BloomMeta {
            version,
            total_byte_size,
            hash_count,
            hash_type,
            key_count,
            max_keys,
            comparator,
            chunks,
        })
    }

    /// The chunk that would hold `key` (raw byte order of first keys), or
    /// `None` when `key` sorts before every chunk.
    pub(crate) fn chunk_for(&self, key: &[u8]) -> Option<&IndexEntry> {
        let n = self.chunks.partition_point(|e| e.key.as_slice() <= key);
        n.checked_sub(1).map(|i| &self.chunks[i])
    }

    /// Whether `key` may be in `bits` (a chunk's payload).
    pub(crate) fn chunk_contains(&self, bits: &[u8], key: &[u8]) -> Decode<bool> {
        let hash: fn(&[u8], i32) -> i32 = match self.hash_type {
            1 => murmur2,
            2 => murmur3,
            0 => jenkins,
            t => return Err(format!("unknown bloom hash type {t}")),
        };
        let bit_count = i32::try_from(bits.len() * 8)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("bloom chunk of {} bytes", bits.len()))?;
        let h1 = hash(key, 0);
        let h2 = hash(key, h1);
        let mut composite = h1;
        for _ in 0..self.hash_count {
            let bit = (composite.wrapping_rem(bit_count)).unsigned_abs() as usize;
            composite = composite.wrapping_add(h2);
            if bits[bit >> 3] & (1 << (bit & 7)) == 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// HBase's `MurmurHash` (32-bit MurmurHash2; the tail bytes are taken as
/// signed Java bytes).
pub(crate) fn murmur2(data: &[u8], seed: i32) -> i32 {
    const M: i32 = 0x5bd1_e995;
    let mut h = seed ^ data.len() as i32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= ((k as u32) >> 24) as i32;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        if tail.len() >= 3 {
            h ^= i32::from(tail[2] as i8) << 16;
        }
        if tail.len() >= 2 {
            h ^= i32::from(tail[1] as i8) << 8;
        }
        h ^= i32::from(tail[0] as i8);
        h = h.wrapping_mul(M);
    }
    h ^= ((h as u32) >> 13) as i32;
    h = h.wrapping_mul(M);
    h ^= ((h as u32) >> 15) as i32;
    h
}

/// HBase's `MurmurHash3` (x86, 32-bit).
pub(crate) fn murmur3(data: &[u8], seed: i32) -> i32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut h = seed as u32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = chunks.remainder();
    let mut k: u32 = 0;
    for (i, &b) in tail.iter().enumerate() {
        k ^= u32::from(b) << (8 * i);
    }
    if !tail.is_empty() {
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
    }
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h as i32
}

/// HBase's `JenkinsHash`: Bob Jenkins' lookup3 `hashlittle`, 32 bits.
pub(crate) fn jenkins(data: &[u8], seed: i32) -> i32 {
    let word = |s: &[u8]| u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
    let mut a = 0xdead_beef_u32
        .wrapping_add(data.len() as u32)
        .wrapping_add(seed as u32);
    let (mut b, mut c) = (a, a);
    let mut rest = data;
    while rest.len() > 12 {
        a = a.wrapping_add(word(&rest[0..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        a = a.wrapping_sub(c) ^ c.rotate_left(4);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a) ^ a.rotate_left(6);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b) ^ b.rotate_left(8);
        b = b.wrapping_add(a);
        a = a.wrapping_sub(c) ^ c.rotate_left(16);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a) ^ a.rotate_left(19);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b) ^ b.rotate_left(4);
        b = b.wrapping_add(a);
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return c as i32;
    }
    let mut tail = [0u8; 12];
    tail[..rest.len()].copy_from_slice(rest);
    a = a.wrapping_add(word(&tail[0..4]));
    b = b.wrapping_add(word(&tail[4..8]));
    c = c.wrapping_add(word(&tail[8..12]));
    c = (c ^ b).wrapping_sub(b.rotate_left(14));
    a = (a ^ c).wrapping_sub(c.rotate_left(11));
    b = (b ^ a).wrapping_sub(a.rotate_left(25));
    c = (c ^ b).wrapping_sub(b.rotate_left(16));
    a = (a ^ c).wrapping_sub(c.rotate_left(4));
    b = (b ^ a).wrapping_sub(a.rotate_left(14));
    c = (c ^ b).wrapping_sub(b.rotate_left(24));
    c as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur3_matches_the_reference_vectors() {
        // MurmurHash3_x86_32 published test vectors.
        assert_eq!(murmur3(b"", 0), 0);
        assert_eq!(murmur3(b"", 1) as u32, 0x514e_28b7);
        assert_eq!(murmur3(b"Hello, world!", 1234) as u32, 0xfaf6_cdb3);
    }

    #[test]
    fn jenkins_matches_lookup3_reference_vectors() {
        // hashlittle("", 0) and hashlittle("Four score and seven years ago", 0/1).
        assert_eq!(jenkins(b"", 0) as u32, 0xdead_beef);
        assert_eq!(
            jenkins(b"Four score and seven years ago", 0) as u32,
            0x1777_0551
        );
        assert_eq!(
            jenkins(b"Four score and seven years ago", 1) as u32,
            0xcd62_8161
        );
    }

    #[test]
    fn a_bloom_chunk_finds_what_was_added() {
        let meta = BloomMeta {
            version: 3,
            total_byte_size: 64,
            hash_count: 3,
            hash_type: 1,
            key_count: 0,
            max_keys: 0,
            comparator: String::new(),
            chunks: Vec::new(),
        };
        let mut bits = vec![0u8; 64];
        let add = |bits: &mut Vec<u8>, key: &[u8]| {
            let h1 = murmur2(key, 0);
            let h2 = murmur2(key, h1);
            let mut comp = h1;
            for _ in 0..3 {
                let bit = comp.wrapping_rem(512).unsigned_abs() as usize;
                comp = comp.wrapping_add(h2);
                bits[bit >> 3] |= 1 << (bit & 7);
            }
        };
        add(&mut bits, b"alpha");
        add(&mut bits, b"beta");
        assert!(meta.chunk_contains(&bits, b"alpha").unwrap());
        assert!(meta.chunk_contains(&bits, b"beta").unwrap());
        let misses = (0..100)
            .filter(|i| {
                !meta
                    .chunk_contains(&bits, format!("x{i}").as_bytes())
                    .unwrap()
            })
            .count();
        assert!(misses > 90, "{misses}");
    }
}
