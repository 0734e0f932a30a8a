//! Prefixes that spread keys over the key space: a salt bucket (one byte,
//! `hash % buckets`) and a hash prefix (the first bytes of the key's MD5).
//!
//! Both are deterministic: the prefix is computed from the key alone, so a
//! point read can compute it again (HBase's "deterministic salting"; a
//! random salt would cost one read per bucket for every get).
//!
//! The hash is MD5 and is frozen. A salt bucket is the first four bytes
//! of `md5(key)` read as a big-endian `u32`, modulo the bucket count. Data
//! written with one version of Basalt must be found by every later one,
//! so neither the hash, nor the bytes taken, nor the reduction may ever
//! change; the known-vector tests below fail if they do. MD5 is used for
//! its spread, not its security: every bit of it depends on every input
//! byte, so consecutive ids land in unrelated buckets (a multiply-xor hash
//! such as FNV-1a reduced modulo a power of two keeps only the low bits of
//! each input byte, and decimal counters then fill the buckets unevenly).

use bytes::Bytes;
use md5::{Digest, Md5};

use basalt_types::cell::escape_bytes;
use basalt_types::{Error, Result};

/// The most salt buckets: the bucket is one byte.
pub const MAX_SALT_BUCKETS: u16 = 256;

/// The most hash-prefix bytes: an MD5 digest has 16.
pub const MAX_HASH_PREFIX_BYTES: usize = 16;

/// MD5 of `key`.
pub(crate) fn md5(key: &[u8]) -> [u8; 16] {
    Md5::digest(key).into()
}

/// The first four bytes of `md5(key)` as a big-endian `u32`: the salt's
/// frozen hash.
pub fn salt_hash(key: &[u8]) -> u32 {
    let d = md5(key);
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// A deterministic salt: one leading byte, `salt_hash(key) % buckets`,
/// so rows whose keys increase spread over `buckets` key ranges (and the
/// regions pre-split at [`Salt::split_keys`]).
///
/// ```
/// use basalt::keys::Salt;
/// # fn main() -> basalt::Result<()> {
/// let salt = Salt::new(16)?;
/// let salted = salt.encode(b"1763884800123-user42");
/// assert!(salted[0] < 16);
/// assert_eq!(salt.decode(&salted)?, b"1763884800123-user42");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Salt {
    buckets: u16,
}

impl Salt {
    /// A salt of `buckets` buckets, 1 to [`MAX_SALT_BUCKETS`] (the bucket
    /// is one byte; one bucket salts every key with `0x00`).
    pub fn new(buckets: u16) -> Result<Salt> {
        if !(1..=MAX_SALT_BUCKETS).contains(&buckets) {
            return Err(Error::invalid(format!(
                "salt buckets must be 1 to {MAX_SALT_BUCKETS} (one prefix byte), got {buckets}"
            )));
        }
        Ok(Salt { buckets })
    }

    /// A salt of `buckets` brought into 1 to [`MAX_SALT_BUCKETS`].
    pub(crate) fn clamped(buckets: u16) -> Salt {
        Salt {
            buckets: buckets.clamp(1, MAX_SALT_BUCKETS),
        }
    }

    /// The number of buckets.
    pub fn buckets(&self) -> u16 {
        self.buckets
    }

    /// The key's bucket: `salt_hash(key) % buckets`.
    pub fn prefix(&self, key: &[u8]) -> u8 {
        // buckets <= 256, so the remainder fits a byte.
        (salt_hash(key) % u32::from(self.buckets)) as u8
    }

    /// The salted key: the bucket byte, then the key.
    pub fn encode(&self, key: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(key.len() + 1);
        out.push(self.prefix(key));
        out.extend_from_slice(key);
        out
    }

    /// The key inside a salted key. Checked: an empty key, a bucket byte
    /// not below the bucket count, and a bucket byte that is not the
    /// key's own bucket (a key written with another bucket count) are
    /// errors naming the key.
    pub fn decode<'a>(&self, salted: &'a [u8]) -> Result<&'a [u8]> {
        let Some((&bucket, key)) = salted.split_first() else {
            return Err(Error::invalid(
                "a salted key is at least one byte (the bucket); got an empty key",
            ));
        };
        if u16::from(bucket) >= self.buckets {
            return Err(Error::invalid(format!(
                "salted key '{}': bucket {bucket} is out of range for {} buckets",
                escape_bytes(salted),
                self.buckets
            )));
        }
        let expected = self.prefix(key);
        if bucket != expected {
            return Err(Error::invalid(format!(
                "salted key '{}': bucket {bucket} is not the key's bucket {expected} of {} \
                 (salted with another bucket count?)",
                escape_bytes(salted),
                self.buckets
            )));
        }
        Ok(key)
    }

    /// The `buckets - 1` keys to pre-split a table at, one region per
    /// bucket: `[0x01], [0x02], ..., [buckets - 1]`.
    pub fn split_keys(&self) -> Vec<Vec<u8>> {
        (1..self.buckets).map(|b| vec![b as u8]).collect()
    }

    /// [`Salt::split_keys`] as `Bytes`, as `Database::create_table_with_splits`
    /// takes them.
    pub fn split_keys_bytes(&self) -> Vec<Bytes> {
        self.split_keys().into_iter().map(Bytes::from).collect()
    }
}

/// A hash prefix: the first `bytes` bytes of `md5(id)`, then the id. Keys
/// spread uniformly over the whole key space (pre-split them with
/// `UniformSplit`), and a get computes the prefix again from the id;
/// range scans over ids are lost (neighbouring ids land far apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HashPrefix {
    bytes: usize,
}

impl HashPrefix {
    /// Four bytes of MD5, the advisor's recommendation.
    pub(crate) const MD5_4: HashPrefix = HashPrefix { bytes: 4 };

    /// A prefix of `bytes` MD5 bytes, 1 to [`MAX_HASH_PREFIX_BYTES`].
    pub fn new(bytes: usize) -> Result<HashPrefix> {
        if !(1..=MAX_HASH_PREFIX_BYTES).contains(&bytes) {
            return Err(Error::invalid(format!(
                "a hash prefix is 1 to {MAX_HASH_PREFIX_BYTES} bytes of MD5, got {bytes}"
            )));
        }
        Ok(HashPrefix { bytes })
    }

    /// The prefix length in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// `md5(id)[0..bytes]`.
    pub fn prefix(&self, id: &[u8]) -> Vec<u8> {
        md5(id)[..self.bytes].to_vec()
    }

    /// `md5(id)[0..bytes]` followed by `id`.
    pub fn encode(&self, id: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes + id.len());
        out.extend_from_slice(&md5(id)[..self.bytes]);
        out.extend_from_slice(id);
        out
    }

    /// The id inside a prefixed key. Checked: a key shorter than the
    /// prefix, and a prefix that is not the id's hash, are errors.
    pub fn decode<'a>(&self, key: &'a [u8]) -> Result<&'a [u8]> {
        if key.len() < self.bytes {
            return Err(Error::invalid(format!(
                "hash-prefixed key '{}' is {} bytes, shorter than its {}-byte prefix",
                escape_bytes(key),
                key.len(),
                self.bytes
            )));
        }
        let (prefix, id) = key.split_at(self.bytes);
        if prefix != &md5(id)[..self.bytes] {
            return Err(Error::invalid(format!(
                "hash-prefixed key '{}': the prefix is not md5 of the id",
                escape_bytes(key)
            )));
        }
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use proptest::prelude::*;

    /// RFC 1321's test vectors: the salt's hash must never change.
    #[test]
    fn the_salt_hash_is_frozen_md5_known_vectors() {
        assert_eq!(salt_hash(b""), 0xd41d_8cd9);
        assert_eq!(salt_hash(b"a"), 0x0cc1_75b9);
        assert_eq!(salt_hash(b"abc"), 0x9001_5098);
        assert_eq!(salt_hash(b"message digest"), 0xf96b_697d);
        let salt = Salt::new(16).unwrap();
        assert_eq!(salt.prefix(b"abc"), (0x9001_5098u32 % 16) as u8);
        assert_eq!(salt.prefix(b""), (0xd41d_8cd9u32 % 16) as u8);
        let salt = Salt::new(10).unwrap();
        assert_eq!(salt.prefix(b"abc"), (0x9001_5098u32 % 10) as u8);
        assert_eq!(
            HashPrefix::new(4).unwrap().encode(b"abc"),
            [0x90, 0x01, 0x50, 0x98, b'a', b'b', b'c']
        );
    }

    #[test]
    fn bucket_counts_outside_one_to_256_are_refused() {
        assert!(Salt::new(0).is_err());
        assert!(Salt::new(257).is_err());
        assert_eq!(Salt::new(256).unwrap().split_keys().len(), 255);
        assert!(Salt::new(1).unwrap().split_keys().is_empty());
        assert!(HashPrefix::new(0).is_err());
        assert!(HashPrefix::new(17).is_err());
    }

    #[test]
    fn split_keys_are_the_bucket_boundaries() {
        let salt = Salt::new(4).unwrap();
        assert_eq!(salt.split_keys(), vec![vec![1], vec![2], vec![3]]);
    }

    #[test]
    fn decoding_names_what_failed() {
        let salt = Salt::new(8).unwrap();
        let e = salt.decode(b"").unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
        let e = salt.decode(b"\x09key").unwrap_err().to_string();
        assert!(e.contains("bucket 9 is out of range for 8"), "{e}");
        let mut wrong = salt.encode(b"key");
        wrong[0] = (wrong[0] + 1) % 8;
        let e = salt.decode(&wrong).unwrap_err().to_string();
        assert!(e.contains("not the key's bucket"), "{e}");
        let hp = HashPrefix::new(4).unwrap();
        let e = hp.decode(b"abc").unwrap_err().to_string();
        assert!(e.contains("shorter than its 4-byte prefix"), "{e}");
        let e = hp.decode(b"\0\0\0\0abc").unwrap_err().to_string();
        assert!(e.contains("not md5 of the id"), "{e}");
    }

    #[test]
    fn consecutive_ids_fill_the_buckets_evenly() {
        let salt = Salt::new(8).unwrap();
        let mut counts = [0usize; 8];
        for i in 0..8000 {
            counts[usize::from(salt.prefix(format!("{i}").as_bytes()))] += 1;
        }
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(*max as f64 / *min as f64 <= 1.2, "{counts:?}");
    }

    proptest! {
        #[test]
        fn salting_round_trips(key in proptest::collection::vec(any::<u8>(), 0..64), buckets in 1u16..=256) {
            let salt = Salt::new(buckets).unwrap();
            let salted = salt.encode(&key);
            prop_assert!(u16::from(salted[0]) < buckets);
            prop_assert_eq!(salt.decode(&salted).unwrap(), &key[..]);
        }

        #[test]
        fn garbage_keys_decode_or_fail_never_panic(key in proptest::collection::vec(any::<u8>(), 0..24), buckets in 1u16..=256) {
            let _ = Salt::new(buckets).unwrap().decode(&key);
            let _ = HashPrefix::new(usize::from(buckets % 16) + 1).unwrap().decode(&key);
        }

        #[test]
        fn hash_prefixes_round_trip(id in proptest::collection::vec(any::<u8>(), 0..64), bytes in 1usize..=16) {
            let hp = HashPrefix::new(bytes).unwrap();
            let key = hp.encode(&id);
            prop_assert_eq!(key.len(), id.len() + bytes);
            prop_assert_eq!(hp.decode(&key).unwrap(), &id[..]);
        }
    }
}
