//! Field encodings that sort like their values: fixed-width big-endian
//! integers (signed ones with the sign bit flipped), reversed timestamps,
//! byte reversal and fixed-width decimal padding.
//!
//! Row keys compare as unsigned bytes, left to right. A field sorts like
//! its value only if every value has the same width and its most
//! significant byte comes first: that is what each encoder here produces.
//! Every decoder checks the length it is given and names the field it
//! expected in its error.

use basalt_types::{Error, Result};

/// The sign bit of a 64-bit integer.
const SIGN_64: u64 = 1 << 63;
/// The sign bit of a 32-bit integer.
const SIGN_32: u32 = 1 << 31;

/// `value` as 8 big-endian bytes: sorts like the value.
pub fn encode_u64(value: u64) -> [u8; 8] {
    value.to_be_bytes()
}

/// `value` as 4 big-endian bytes: sorts like the value.
pub fn encode_u32(value: u32) -> [u8; 4] {
    value.to_be_bytes()
}

/// `value` as 8 big-endian bytes with the sign bit flipped, so negative
/// values sort before positive ones (two's complement alone would put
/// them after: `-1` is `ff ff ...`).
pub fn encode_i64(value: i64) -> [u8; 8] {
    ((value as u64) ^ SIGN_64).to_be_bytes()
}

/// `value` as 4 big-endian bytes with the sign bit flipped (see
/// [`encode_i64`]).
pub fn encode_i32(value: i32) -> [u8; 4] {
    ((value as u32) ^ SIGN_32).to_be_bytes()
}

/// Exactly `N` bytes, or an error naming what was expected.
fn exact<const N: usize>(bytes: &[u8], what: &str) -> Result<[u8; N]> {
    <[u8; N]>::try_from(bytes).map_err(|_| {
        Error::invalid(format!(
            "{what} must be exactly {N} bytes, got {}",
            bytes.len()
        ))
    })
}

/// Reads [`encode_u64`]'s 8 bytes.
pub fn decode_u64(bytes: &[u8]) -> Result<u64> {
    Ok(u64::from_be_bytes(exact(bytes, "a big-endian u64")?))
}

/// Reads [`encode_u32`]'s 4 bytes.
pub fn decode_u32(bytes: &[u8]) -> Result<u32> {
    Ok(u32::from_be_bytes(exact(bytes, "a big-endian u32")?))
}

/// Reads [`encode_i64`]'s 8 bytes.
pub fn decode_i64(bytes: &[u8]) -> Result<i64> {
    Ok((u64::from_be_bytes(exact(bytes, "a sign-flipped big-endian i64")?) ^ SIGN_64) as i64)
}

/// Reads [`encode_i32`]'s 4 bytes.
pub fn decode_i32(bytes: &[u8]) -> Result<i32> {
    Ok((u32::from_be_bytes(exact(bytes, "a sign-flipped big-endian i32")?) ^ SIGN_32) as i32)
}

/// A timestamp as 8 bytes that sort newest first: for every timestamp
/// HBase accepts (`ts >= 0`) this is `i64::MAX - ts` big-endian, HBase's
/// `Long.MAX_VALUE - ts`.
///
/// It is computed as the bitwise complement of [`encode_i64`], which
/// equals `i64::MAX - ts` for `ts >= 0` and, unlike the subtraction,
/// cannot overflow: negative inputs keep the newest-first order too
/// (they sort after every non-negative one).
pub fn reversed_timestamp(ts_millis: i64) -> [u8; 8] {
    (!((ts_millis as u64) ^ SIGN_64)).to_be_bytes()
}

/// Reads [`reversed_timestamp`]'s 8 bytes back into the timestamp.
pub fn decode_reversed_timestamp(bytes: &[u8]) -> Result<i64> {
    let v = u64::from_be_bytes(exact(bytes, "a reversed timestamp")?);
    Ok(((!v) ^ SIGN_64) as i64)
}

/// The field's bytes in reverse order: the fast-changing end of a counter
/// or phone number leads, so consecutive values land far apart. Its own
/// inverse. Range scans over the original field's order are lost.
pub fn reverse(field: &[u8]) -> Vec<u8> {
    field.iter().rev().copied().collect()
}

/// `n` in decimal, zero-padded to `width` digits, so that decimal text
/// sorts like the numbers (`"09" < "10"`, where `"9" > "10"`). A value
/// with more digits than `width` is an error: it would sort out of order.
pub fn pad_decimal(n: u64, width: usize) -> Result<String> {
    let text = n.to_string();
    if text.len() > width {
        return Err(Error::invalid(format!(
            "{n} has {} digits, more than the padded width {width}",
            text.len()
        )));
    }
    Ok(format!("{n:0width$}"))
}

/// Reads [`pad_decimal`]'s text: exactly `width` ASCII digits.
pub fn decode_padded_decimal(text: &[u8], width: usize) -> Result<u64> {
    if text.len() != width {
        return Err(Error::invalid(format!(
            "a padded decimal must be exactly {width} digits, got {} bytes",
            text.len()
        )));
    }
    if let Some(i) = text.iter().position(|b| !b.is_ascii_digit()) {
        return Err(Error::invalid(format!(
            "a padded decimal has a non-digit byte 0x{:02x} at offset {i}",
            text[i]
        )));
    }
    // Only ASCII digits, so the text is valid UTF-8 and parses unless it
    // overflows a u64.
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::invalid("a padded decimal does not fit in a u64"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reversed_timestamp_is_hbase_long_max_minus_ts() {
        for ts in [0i64, 1, 1_763_884_800_123, i64::MAX] {
            assert_eq!(reversed_timestamp(ts), (i64::MAX - ts).to_be_bytes());
        }
    }

    #[test]
    fn decoders_name_the_field_and_the_length() {
        let e = decode_u64(&[1, 2, 3]).unwrap_err().to_string();
        assert!(e.contains("u64") && e.contains("got 3"), "{e}");
        let e = decode_i32(&[]).unwrap_err().to_string();
        assert!(e.contains("i32") && e.contains("got 0"), "{e}");
        let e = decode_reversed_timestamp(&[0; 9]).unwrap_err().to_string();
        assert!(e.contains("reversed timestamp"), "{e}");
        assert!(pad_decimal(1000, 3).is_err());
        assert!(decode_padded_decimal(b"12a", 3).is_err());
        assert!(decode_padded_decimal(b"12", 3).is_err());
    }

    #[test]
    fn padding_makes_nine_sort_before_ten() {
        assert!("9" > "10");
        assert!(pad_decimal(9, 4).unwrap() < pad_decimal(10, 4).unwrap());
        assert_eq!(pad_decimal(42, 6).unwrap(), "000042");
        assert_eq!(decode_padded_decimal(b"000042", 6).unwrap(), 42);
    }

    proptest! {
        #[test]
        fn unsigned_encodings_sort_like_their_values(a: u64, b: u64) {
            prop_assert_eq!(a < b, encode_u64(a) < encode_u64(b));
            let (a32, b32) = (a as u32, b as u32);
            prop_assert_eq!(a32 < b32, encode_u32(a32) < encode_u32(b32));
        }

        #[test]
        fn signed_encodings_sort_like_their_values(a: i64, b: i64) {
            prop_assert_eq!(a < b, encode_i64(a) < encode_i64(b));
            let (a32, b32) = (a as i32, b as i32);
            prop_assert_eq!(a32 < b32, encode_i32(a32) < encode_i32(b32));
        }

        #[test]
        fn reversed_timestamps_sort_newest_first(a: i64, b: i64) {
            prop_assert_eq!(a < b, reversed_timestamp(a) > reversed_timestamp(b));
        }

        #[test]
        fn integer_encodings_round_trip(v: i64) {
            prop_assert_eq!(decode_u64(&encode_u64(v as u64)).unwrap(), v as u64);
            prop_assert_eq!(decode_u32(&encode_u32(v as u32)).unwrap(), v as u32);
            prop_assert_eq!(decode_i64(&encode_i64(v)).unwrap(), v);
            prop_assert_eq!(decode_i32(&encode_i32(v as i32)).unwrap(), v as i32);
            prop_assert_eq!(decode_reversed_timestamp(&reversed_timestamp(v)).unwrap(), v);
        }

        #[test]
        fn reversal_is_its_own_inverse(field in proptest::collection::vec(any::<u8>(), 0..40)) {
            prop_assert_eq!(reverse(&reverse(&field)), field);
        }

        #[test]
        fn padded_decimals_sort_like_their_values_and_round_trip(a in 0u64..1_000_000, b in 0u64..1_000_000) {
            let (pa, pb) = (pad_decimal(a, 7).unwrap(), pad_decimal(b, 7).unwrap());
            prop_assert_eq!(a < b, pa < pb);
            prop_assert_eq!(decode_padded_decimal(pa.as_bytes(), 7).unwrap(), a);
        }
    }
}
