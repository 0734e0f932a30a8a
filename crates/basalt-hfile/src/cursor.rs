//! Checked reads over a byte slice: every read is bounded by the bytes
//! present and fails with a message naming the field and the position
//! where it was expected, never with a panic.
//!
//! The integer forms of the format: big-endian fixed-width integers (Java's
//! `DataOutput`), unsigned LEB128 varints (protobuf, and HBase's
//! "compressed ints" in encoded data blocks) and Hadoop's `WritableUtils`
//! variable-length longs (memstore timestamps, index key lengths).

/// A decoding failure: a message naming what was read and where.
pub(crate) type Decode<T> = std::result::Result<T, String>;

/// A position in a byte slice, advanced by each read.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`.
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    /// A cursor at `pos` in `buf` (a position past the end fails on the
    /// first read).
    pub(crate) fn at(buf: &'a [u8], pos: usize) -> Self {
        Cursor { buf, pos }
    }

    /// The position of the next read.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left after the position.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// Whether every byte has been read.
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Decode<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let out = &self.buf[self.pos..end];
                self.pos = end;
                Ok(out)
            }
            None => Err(format!(
                "{what}: {n} bytes at byte {} run past the end ({} bytes)",
                self.pos,
                self.buf.len()
            )),
        }
    }

    /// Moves past `n` bytes.
    pub(crate) fn skip(&mut self, n: usize, what: &str) -> Decode<()> {
        self.take(n, what).map(|_| ())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Decode<[u8; N]> {
        let b = self.take(N, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Decode<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &str) -> Decode<u16> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u32(&mut self, what: &str) -> Decode<u32> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i32(&mut self, what: &str) -> Decode<i32> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i64(&mut self, what: &str) -> Decode<i64> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    /// A non-negative big-endian `int` as a length or count.
    pub(crate) fn len32(&mut self, what: &str) -> Decode<usize> {
        let at = self.pos;
        let v = self.i32(what)?;
        usize::try_from(v).map_err(|_| format!("{what} at byte {at} is negative ({v})"))
    }

    /// An unsigned LEB128 varint of at most 64 bits.
    pub(crate) fn varint(&mut self, what: &str) -> Decode<u64> {
        let start = self.pos;
        let mut v: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(format!(
                    "{what}: varint at byte {start} runs past the end ({} bytes)",
                    self.buf.len()
                ));
            };
            self.pos += 1;
            if i == 9 && b > 1 {
                return Err(format!("{what}: varint at byte {start} overflows 64 bits"));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("{what}: varint at byte {start} is over 10 bytes"))
    }

    /// A LEB128 varint that must fit a Java `int` and be non-negative, as
    /// a length (HBase's `putCompressedInt` writes the int's 32 bits).
    pub(crate) fn varint_len(&mut self, what: &str) -> Decode<usize> {
        let start = self.pos;
        let v = self.varint(what)?;
        if v > i32::MAX as u64 {
            return Err(format!("{what} at byte {start} is out of range ({v})"));
        }
        Ok(v as usize)
    }

    /// Hadoop's `WritableUtils` variable-length long: one byte for
    /// -112..=127, else a byte giving sign and length, then 1-8 bytes
    /// big-endian (one's complement for negatives).
    pub(crate) fn hadoop_vlong(&mut self, what: &str) -> Decode<i64> {
        let start = self.pos;
        let first = self.u8(what)? as i8;
        if first >= -112 {
            return Ok(i64::from(first));
        }
        let negative = first < -120;
        let len = if negative {
            -(i32::from(first) + 120)
        } else {
            -(i32::from(first) + 112)
        } as usize;
        // len is 1..=8 for every first byte below -112.
        let bytes = self
            .take(len, what)
            .map_err(|e| format!("{e} (variable-length long at byte {start})"))?;
        let mut v: i64 = 0;
        for &b in bytes {
            v = (v << 8) | i64::from(b);
        }
        Ok(if negative { !v } else { v })
    }

    /// A Hadoop variable-length int (the long form, range-checked).
    pub(crate) fn hadoop_vint(&mut self, what: &str) -> Decode<i32> {
        let start = self.pos;
        let v = self.hadoop_vlong(what)?;
        i32::try_from(v).map_err(|_| format!("{what} at byte {start} does not fit an int ({v})"))
    }

    /// A Hadoop vint length followed by that many bytes (HBase's
    /// `Bytes.writeByteArray`).
    pub(crate) fn hadoop_bytes(&mut self, what: &str) -> Decode<&'a [u8]> {
        let at = self.pos;
        let len = self.hadoop_vint(what)?;
        let len = usize::try_from(len)
            .map_err(|_| format!("{what}: negative length {len} at byte {at}"))?;
        self.take(len, what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hadoop's encoder, written from its description, for round trips.
    fn write_vlong(out: &mut Vec<u8>, mut i: i64) {
        if (-112..=127).contains(&i) {
            out.push(i as u8);
            return;
        }
        let mut len: i32 = -112;
        if i < 0 {
            i = !i;
            len = -120;
        }
        let mut tmp = i;
        while tmp != 0 {
            tmp >>= 8;
            len -= 1;
        }
        out.push(len as u8);
        let len = if len < -120 {
            -(len + 120)
        } else {
            -(len + 112)
        };
        for idx in (1..=len).rev() {
            out.push((i >> ((idx - 1) * 8)) as u8);
        }
    }

    #[test]
    fn hadoop_vlongs_round_trip_across_the_range() {
        for v in [
            0i64,
            1,
            -1,
            127,
            128,
            -112,
            -113,
            255,
            256,
            65_535,
            1 << 40,
            i64::MAX,
            i64::MIN,
            -1_000_000,
        ] {
            let mut buf = Vec::new();
            write_vlong(&mut buf, v);
            let mut c = Cursor::new(&buf);
            assert_eq!(c.hadoop_vlong("v"), Ok(v), "value {v}");
            assert!(c.is_empty());
        }
    }

    #[test]
    fn a_truncated_vlong_names_its_offset() {
        let mut buf = Vec::new();
        write_vlong(&mut buf, 1 << 40);
        buf.truncate(3);
        let err = Cursor::new(&buf).hadoop_vlong("mvcc").unwrap_err();
        assert!(err.contains("at byte 0"), "{err}");
    }

    #[test]
    fn varints_reject_overflow_and_truncation() {
        assert_eq!(Cursor::new(&[0x96, 0x01]).varint("x"), Ok(150));
        assert!(Cursor::new(&[0x96]).varint("x").is_err());
        assert!(Cursor::new(&[0xff; 11]).varint("x").is_err());
        assert!(Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0x0f])
            .varint_len("x")
            .is_err());
    }

    #[test]
    fn a_read_past_the_end_fails_without_moving() {
        let mut c = Cursor::new(&[1, 2, 3]);
        assert!(c.u32("int").is_err());
        assert_eq!(c.u16("short"), Ok(0x0102));
        assert!(c.take(usize::MAX, "huge").is_err());
    }
}
