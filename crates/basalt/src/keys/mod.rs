//! Row-key design: codecs that keep writes off a single region, the
//! salted scan that reads such keys back in order, and the advisor that
//! looks at sample keys and says what to change (see docs/row-keys.md).
//!
//! Row keys sort as unsigned bytes, and a region holds a contiguous range
//! of them: keys that only grow (timestamps, sequence ids) send every new
//! write to the last region while the others idle. The cures, each here:
//!
//! - [`Salt`]: one leading byte, `md5(key)[0..4] as u32 % buckets`, so
//!   new keys spread over `buckets` ranges (pre-split with
//!   [`Salt::split_keys`]); [`SaltedScan::scan_salted`] reads a range
//!   back in unsalted order;
//! - [`HashPrefix`]: the first bytes of `md5(id)` in front of the id, for
//!   tables read only by id;
//! - [`reverse`]: a field's bytes reversed (the fast-changing end first);
//! - [`reversed_timestamp`]: `i64::MAX - ts`, for newest-first reads;
//! - [`encode_u64`], [`encode_i64`] and the 32-bit forms: integers as
//!   fixed-width big-endian bytes that sort like their values;
//!   [`pad_decimal`]: fixed-width decimal text.
//!
//! The salt's hash is frozen (see [`salt`]): keys written today are found
//! by every later version.

pub mod advisor;
mod codec;
pub mod salt;
mod scan;
pub mod text;

pub use codec::{
    decode_i32, decode_i64, decode_padded_decimal, decode_reversed_timestamp, decode_u32,
    decode_u64, encode_i32, encode_i64, encode_u32, encode_u64, pad_decimal, reverse,
    reversed_timestamp,
};
pub use salt::{salt_hash, HashPrefix, Salt, MAX_HASH_PREFIX_BYTES, MAX_SALT_BUCKETS};
pub use scan::{SaltedRow, SaltedScan, SaltedScanner};
