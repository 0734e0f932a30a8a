//! Unsigned LEB128 varints, the one integer encoding shared by the WAL and
//! store-file formats: 7 bits per byte, least significant group first, high
//! bit set on every byte but the last, at most ten bytes for a `u64`.

/// Appends `v`.
pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decodes the varint at `*pos` and moves `*pos` past it. Input is
/// untrusted: a truncated, over-long or overflowing varint is an error.
pub(crate) fn get(buf: &[u8], pos: &mut usize) -> Result<u64, &'static str> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(*pos).ok_or("varint runs past the end")?;
        *pos += 1;
        // The tenth byte may only carry the top bit of a u64, and no
        // continuation.
        if i == 9 && b > 1 {
            return Err("varint overflows 64 bits");
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint longer than 10 bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_bad_input() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut b = vec![];
            put(&mut b, v);
            let mut pos = 0;
            assert_eq!(get(&b, &mut pos), Ok(v));
            assert_eq!(pos, b.len());
        }
        assert!(get(&[0x80], &mut 0).is_err(), "truncated");
        assert!(get(&[0xff; 11], &mut 0).is_err(), "too long");
        let overflow = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(get(&overflow, &mut 0).is_err(), "overflow");
    }
}
