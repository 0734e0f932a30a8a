//! Byte coding shared by the WAL and store-file formats: unsigned LEB128
//! varints and fixed-width little- and big-endian integers.
//!
//! Every format module encodes and decodes its integers through here, so
//! there is one place where a read is checked against the bytes present.
//! Reads never panic on short or hostile input: they return an error
//! message (the callers wrap it in `Error::Corruption`) that names the
//! field being read and the byte offset where it was expected.
//!
//! Varints: 7 bits per byte, least significant group first, high bit set on
//! every byte but the last, at most ten bytes for a `u64`.

/// Result of a checked read; the error is a message naming what failed and
/// where.
pub(crate) type CodingResult<T> = std::result::Result<T, String>;

/// Longest varint encoding of a `u64`.
pub(crate) const MAX_VARINT_LEN: usize = 10;

/// Appends `v` as a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decodes the varint at `*pos` and moves `*pos` past it. Input is
/// untrusted: a truncated, over-long or overflowing varint is an error
/// naming the offset it started at, and `*pos` is then unspecified.
#[inline]
pub(crate) fn get_varint(buf: &[u8], pos: &mut usize) -> CodingResult<u64> {
    // Most varints of the formats are lengths under 128: one byte, taken
    // here without entering the loop (block reads decode four per cell).
    if let Some(&b) = buf.get(*pos) {
        if b < 0x80 {
            *pos += 1;
            return Ok(u64::from(b));
        }
    }
    get_long_varint(buf, pos)
}

/// [`get_varint`] for the general case, out of line so the one-byte case
/// stays small enough to inline.
#[inline(never)]
fn get_long_varint(buf: &[u8], pos: &mut usize) -> CodingResult<u64> {
    let start = *pos;
    let mut v: u64 = 0;
    for i in 0..MAX_VARINT_LEN {
        let Some(&b) = buf.get(*pos) else {
            return Err(format!(
                "varint at byte {start} runs past the end ({} bytes)",
                buf.len()
            ));
        };
        *pos += 1;
        // The tenth byte may only carry the top bit of a u64, and no
        // continuation.
        if i == MAX_VARINT_LEN - 1 && b > 1 {
            return Err(format!("varint at byte {start} overflows 64 bits"));
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    // Unreachable in practice (the tenth byte either ends the varint or
    // overflows), kept so the loop needs no proof.
    Err(format!(
        "varint at byte {start} is longer than {MAX_VARINT_LEN} bytes"
    ))
}

/// The `N` bytes at `at`, or an error naming `what` and the offset.
#[inline]
pub(crate) fn array<const N: usize>(buf: &[u8], at: usize, what: &str) -> CodingResult<[u8; N]> {
    at.checked_add(N)
        .and_then(|end| buf.get(at..end))
        .and_then(|s| <[u8; N]>::try_from(s).ok())
        .ok_or_else(|| {
            format!(
                "{what}: {N} bytes at byte {at} run past the end ({} bytes)",
                buf.len()
            )
        })
}

/// Reads a little-endian `u32` at `at`.
pub(crate) fn u32_le(buf: &[u8], at: usize, what: &str) -> CodingResult<u32> {
    array(buf, at, what).map(u32::from_le_bytes)
}

/// Reads a little-endian `u64` at `at`.
pub(crate) fn u64_le(buf: &[u8], at: usize, what: &str) -> CodingResult<u64> {
    array(buf, at, what).map(u64::from_le_bytes)
}

/// Reads a big-endian `u64` at `at`.
pub(crate) fn u64_be(buf: &[u8], at: usize, what: &str) -> CodingResult<u64> {
    array(buf, at, what).map(u64::from_be_bytes)
}

/// Appends `v` little endian.
pub(crate) fn put_u32_le(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` little endian.
pub(crate) fn put_u64_le(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` big endian.
pub(crate) fn put_u64_be(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// Overwrites the four bytes at `at` of a buffer this code laid out itself
/// (a header being filled in) with `v` little endian. The caller owns the
/// layout, so `at + 4 <= buf.len()` is its invariant, not input to check.
pub(crate) fn set_u32_le(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Like [`set_u32_le`] for a `u64`.
pub(crate) fn set_u64_le(buf: &mut [u8], at: usize, v: u64) {
    buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varints_round_trip_and_reject_bad_input() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut b = vec![];
            put_varint(&mut b, v);
            let mut pos = 0;
            assert_eq!(get_varint(&b, &mut pos), Ok(v));
            assert_eq!(pos, b.len());
        }
        let err = get_varint(&[0x80], &mut 0).unwrap_err();
        assert!(err.contains("past the end"), "{err}");
        assert!(get_varint(&[0xff; 11], &mut 0).is_err(), "too long");
        let overflow = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        let err = get_varint(&overflow, &mut 0).unwrap_err();
        assert!(err.contains("overflows"), "{err}");
        let mut pos = 3;
        let err = get_varint(&[0, 0, 0, 0x80], &mut pos).unwrap_err();
        assert!(err.contains("at byte 3"), "{err}");
    }

    #[test]
    fn fixed_width_reads_name_the_field_and_offset_when_short() {
        let b = [1u8, 0, 0, 0, 0, 0, 0, 0, 9];
        assert_eq!(u32_le(&b, 0, "x"), Ok(1));
        assert_eq!(u64_le(&b, 0, "x"), Ok(1));
        assert_eq!(u64_be(&b, 0, "x"), Ok(1 << 56));
        let err = u64_le(&b, 4, "segment id").unwrap_err();
        assert!(err.contains("segment id"), "{err}");
        assert!(err.contains("byte 4"), "{err}");
        assert!(u32_le(&b, usize::MAX - 1, "huge offset").is_err());
    }

    #[test]
    fn setters_and_appenders_agree_with_the_readers() {
        let mut out = vec![];
        put_u32_le(&mut out, 0xdead_beef);
        put_u64_le(&mut out, 7);
        put_u64_be(&mut out, 8);
        assert_eq!(u32_le(&out, 0, "a"), Ok(0xdead_beef));
        assert_eq!(u64_le(&out, 4, "b"), Ok(7));
        assert_eq!(u64_be(&out, 12, "c"), Ok(8));
        set_u32_le(&mut out, 0, 5);
        set_u64_le(&mut out, 4, 6);
        assert_eq!(u32_le(&out, 0, "a"), Ok(5));
        assert_eq!(u64_le(&out, 4, "b"), Ok(6));
    }

    proptest! {
        #[test]
        fn every_u64_round_trips_through_every_encoding(v in any::<u64>(), lead in 0usize..4) {
            let mut out = vec![0xaa; lead];
            put_varint(&mut out, v);
            let mut pos = lead;
            prop_assert_eq!(get_varint(&out, &mut pos), Ok(v));
            prop_assert_eq!(pos, out.len());
            prop_assert!(out.len() - lead <= MAX_VARINT_LEN);
            let at = out.len();
            put_u64_le(&mut out, v);
            put_u64_be(&mut out, v);
            put_u32_le(&mut out, v as u32);
            prop_assert_eq!(u64_le(&out, at, "le"), Ok(v));
            prop_assert_eq!(u64_be(&out, at + 8, "be"), Ok(v));
            prop_assert_eq!(u32_le(&out, at + 16, "le32"), Ok(v as u32));
        }

        #[test]
        fn arbitrary_bytes_never_panic_any_reader(
            data in proptest::collection::vec(any::<u8>(), 0..32),
            at in 0usize..40,
        ) {
            let mut pos = at;
            if let Ok(v) = get_varint(&data, &mut pos) {
                // A varint that decodes re-encodes to at most what it read.
                let mut again = vec![];
                put_varint(&mut again, v);
                prop_assert!(again.len() <= pos - at);
            }
            let _ = u32_le(&data, at, "u32");
            let _ = u64_le(&data, at, "u64");
            let _ = u64_be(&data, at, "u64 be");
            let _ = array::<3>(&data, at, "three");
        }
    }
}
