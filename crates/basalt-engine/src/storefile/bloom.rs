//! Bloom filters, split into chunks over consecutive key ranges.
//!
//! Keys arrive sorted, so the writer fills one chunk of at most
//! [`MAX_CHUNK_KEYS`] distinct keys at a time, sizes it exactly for the keys
//! it got (about 1% false positives), writes it as a block and starts the
//! next. The bloom index maps each chunk's first key to its block, so a
//! reader loads only the one chunk a lookup needs (through the block
//! cache), and neither writer nor reader ever holds a whole large bloom.
//!
//! Chunk payload: `k (u8) | bit count (u32 LE) | bits`, bit `i` being bit
//! `i % 8` of byte `i / 8`. A key sets bits `(h1 + j * h2) mod m` for `j` in
//! `0..k` (double hashing), where `h1` is the key's 64-bit [`bloom_hash`] and
//! `h2` that hash rotated by 32 bits with the low bit set.

use bytes::Bytes;

use basalt_types::BloomType;

use super::format::{put_varint, DecodeResult};

/// Bits per key: with 7 probes, about 1% false positives.
pub(crate) const BITS_PER_KEY: f64 = 9.6;

/// Distinct keys per chunk at most (a chunk is then about 19.7 KB).
pub(crate) const MAX_CHUNK_KEYS: usize = 16 * 1024;

/// Most probes a reader accepts from a chunk header.
const MAX_PROBES: u8 = 30;

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
const SEED: u64 = 0x5A17_B100_F11E_0001;

/// A strong 64-bit finaliser: every input bit affects every output bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The bloom hash of a key: part of the file format (changing it is a new
/// format version). Words are 8 little-endian bytes, the last zero-padded;
/// the length enters the seed so padding cannot collide.
pub(crate) fn bloom_hash(data: &[u8]) -> u64 {
    let mut h = SEED ^ (data.len() as u64).wrapping_mul(GOLDEN);
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        // `chunks_exact(8)` hands out exactly eight bytes.
        let w = crate::coding::u64_le(c, 0, "bloom hash word").unwrap_or(0);
        h = mix(h ^ w).wrapping_add(GOLDEN);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = mix(h ^ u64::from_le_bytes(w)).wrapping_add(GOLDEN);
    }
    mix(h)
}

/// The bytes a bloom of `bloom` type hashes for a cell: the row for ROW;
/// `varint(row length) ++ row ++ qualifier` for ROWCOL (the length makes the
/// split unambiguous). Nothing for NONE.
pub(crate) fn bloom_key(bloom: BloomType, row: &[u8], qualifier: &[u8], out: &mut Vec<u8>) {
    out.clear();
    match bloom {
        BloomType::None => {}
        BloomType::Row => out.extend_from_slice(row),
        BloomType::RowCol => {
            put_varint(out, row.len() as u64);
            out.extend_from_slice(row);
            out.extend_from_slice(qualifier);
        }
    }
}

/// The [`bloom_hash`] of the [`bloom_key`] of `row` and `qualifier`, for
/// lookups. A ROW key is the row itself, so it is hashed where it lies: a
/// point get asks every store file's bloom, and this keeps those lookups
/// free of allocations.
pub(crate) fn bloom_key_hash(bloom: BloomType, row: &[u8], qualifier: &[u8]) -> u64 {
    match bloom {
        BloomType::Row => bloom_hash(row),
        BloomType::None | BloomType::RowCol => {
            let mut key = Vec::with_capacity(row.len() + qualifier.len() + 5);
            bloom_key(bloom, row, qualifier, &mut key);
            bloom_hash(&key)
        }
    }
}

fn probes(hash: u64, k: u8, bits: u64) -> impl Iterator<Item = u64> {
    let h2 = hash.rotate_left(32) | 1;
    (0..u64::from(k)).map(move |j| hash.wrapping_add(j.wrapping_mul(h2)) % bits)
}

/// Collects the hashes of one chunk's keys.
#[derive(Debug, Default)]
pub(crate) struct BloomChunkBuilder {
    hashes: Vec<u64>,
}

impl BloomChunkBuilder {
    /// A builder expecting about `keys` keys in all (capped at a chunk).
    pub(crate) fn with_expected(keys: u64) -> Self {
        let keys = usize::try_from(keys).unwrap_or(MAX_CHUNK_KEYS);
        BloomChunkBuilder {
            hashes: Vec::with_capacity(keys.min(MAX_CHUNK_KEYS)),
        }
    }

    pub(crate) fn add(&mut self, hash: u64) {
        self.hashes.push(hash);
    }

    pub(crate) fn len(&self) -> usize {
        self.hashes.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Sizes the chunk for its keys and returns its payload; the builder is
    /// empty afterwards.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let n = self.hashes.len().max(1);
        let bits = ((n as f64 * BITS_PER_KEY).ceil() as u64).max(64);
        let k = ((bits as f64 / n as f64) * std::f64::consts::LN_2).round() as u8;
        let k = k.clamp(1, MAX_PROBES);
        let mut out = vec![0u8; 5 + bits.div_ceil(8) as usize];
        out[0] = k;
        // At most MAX_CHUNK_KEYS * BITS_PER_KEY bits: fits a u32.
        crate::coding::set_u32_le(&mut out, 1, bits as u32);
        for &h in &self.hashes {
            for p in probes(h, k, bits) {
                out[5 + (p / 8) as usize] |= 1 << (p % 8);
            }
        }
        self.hashes.clear();
        out
    }
}

/// A chunk read from a file.
#[derive(Debug, Clone)]
pub(crate) struct BloomChunk {
    data: Bytes,
    k: u8,
    bits: u64,
}

impl BloomChunk {
    pub(crate) fn new(data: Bytes) -> DecodeResult<Self> {
        if data.len() < 5 {
            return Err("bloom chunk shorter than its header".to_string());
        }
        let k = data[0];
        let bits = u64::from(crate::coding::u32_le(&data, 1, "bloom chunk bit count")?);
        if k == 0 || k > MAX_PROBES {
            return Err(format!("bloom chunk with {k} probes"));
        }
        if bits == 0 || bits.div_ceil(8) != (data.len() - 5) as u64 {
            return Err(format!(
                "bloom chunk of {bits} bits stored in {} bytes",
                data.len() - 5
            ));
        }
        Ok(BloomChunk { data, k, bits })
    }

    pub(crate) fn may_contain(&self, hash: u64) -> bool {
        probes(hash, self.k, self.bits)
            .all(|p| self.data[5 + (p / 8) as usize] & (1 << (p % 8)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_about_one_percent_false_positives() {
        let mut b = BloomChunkBuilder::default();
        let n = MAX_CHUNK_KEYS;
        for i in 0..n {
            b.add(bloom_hash(format!("row-{i}").as_bytes()));
        }
        let chunk = BloomChunk::new(Bytes::from(b.finish())).unwrap();
        for i in 0..n {
            assert!(chunk.may_contain(bloom_hash(format!("row-{i}").as_bytes())));
        }
        let trials = 200_000;
        let fp = (0..trials)
            .filter(|i| chunk.may_contain(bloom_hash(format!("absent-{i}").as_bytes())))
            .count();
        let rate = fp as f64 / trials as f64;
        assert!(rate < 0.02, "false positive rate {rate}");
    }

    #[test]
    fn hash_spreads_similar_keys() {
        assert_ne!(bloom_hash(b""), bloom_hash(b"\0"));
        assert_ne!(bloom_hash(b"a"), bloom_hash(b"a\0"));
        assert_ne!(bloom_hash(b"12345678"), bloom_hash(b"12345679"));
    }

    #[test]
    fn rowcol_keys_are_unambiguous() {
        let mut a = vec![];
        let mut b = vec![];
        bloom_key(BloomType::RowCol, b"ab", b"c", &mut a);
        bloom_key(BloomType::RowCol, b"a", b"bc", &mut b);
        assert_ne!(a, b);
    }

    #[test]
    fn bad_chunks_are_rejected() {
        assert!(BloomChunk::new(Bytes::from_static(&[7, 64, 0, 0, 0])).is_err());
        assert!(BloomChunk::new(Bytes::from_static(&[0, 8, 0, 0, 0, 0])).is_err());
        assert!(BloomChunk::new(Bytes::from_static(&[7, 8, 0, 0, 0, 0])).is_ok());
    }

    #[test]
    fn lookup_hashes_are_the_hashes_of_the_keys_the_writer_adds() {
        let mut key = Vec::new();
        for bloom in BloomType::ALL.iter().copied() {
            for (row, qualifier) in [(&b"row"[..], &b"q"[..]), (b"", b""), (b"a-longer-row", b"")] {
                bloom_key(bloom, row, qualifier, &mut key);
                assert_eq!(bloom_key_hash(bloom, row, qualifier), bloom_hash(&key));
            }
        }
    }
}
