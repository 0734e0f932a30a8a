//! The little of protobuf's wire format the HFile needs: the fields of a
//! message, by number, in the order they appear. Varint and
//! length-delimited fields are kept; fixed-width fields are skipped;
//! groups (deprecated, never written by HBase) are an error.

use crate::cursor::{Cursor, Decode};

/// One field's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 2.
    Bytes(&'a [u8]),
    /// Wire types 1 and 5 (no HBase field here uses them).
    Fixed,
}

/// The fields of one message: `(number, value)` in wire order.
pub(crate) fn fields<'a>(buf: &'a [u8], what: &str) -> Decode<Vec<(u32, Value<'a>)>> {
    let mut c = Cursor::new(buf);
    let mut out = Vec::new();
    while !c.is_empty() {
        let at = c.pos();
        let key = c.varint(what)?;
        let number = key >> 3;
        if number == 0 || number > u64::from(u32::MAX >> 3) {
            return Err(format!("{what}: field number {number} at byte {at}"));
        }
        let value = match key & 7 {
            0 => Value::Varint(c.varint(what)?),
            1 => {
                c.skip(8, what)?;
                Value::Fixed
            }
            2 => {
                let len = c.varint(what)?;
                let len = usize::try_from(len)
                    .map_err(|_| format!("{what}: length {len} at byte {at}"))?;
                Value::Bytes(c.take(len, what)?)
            }
            5 => {
                c.skip(4, what)?;
                Value::Fixed
            }
            t => {
                return Err(format!(
                "{what}: field {number} at byte {at} has wire type {t}, which HBase never writes"
            ))
            }
        };
        out.push((number as u32, value));
    }
    Ok(out)
}

/// A varint field's value, or an error naming it when it has another type.
pub(crate) fn as_u64(value: &Value<'_>, what: &str) -> Decode<u64> {
    match value {
        Value::Varint(v) => Ok(*v),
        _ => Err(format!("{what} is not a varint")),
    }
}

/// A length-delimited field's bytes.
pub(crate) fn as_bytes<'a>(value: &Value<'a>, what: &str) -> Decode<&'a [u8]> {
    match value {
        Value::Bytes(b) => Ok(b),
        _ => Err(format!("{what} is not length-delimited")),
    }
}

/// A message written with `writeDelimitedTo`: a varint length, then the
/// message. Returns the message and the bytes after it.
pub(crate) fn delimited<'a>(buf: &'a [u8], what: &str) -> Decode<(&'a [u8], &'a [u8])> {
    let mut c = Cursor::new(buf);
    let len = c.varint(what)?;
    let len = usize::try_from(len).map_err(|_| format!("{what}: length {len}"))?;
    let msg = c.take(len, what)?;
    Ok((msg, &buf[c.pos()..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_come_back_by_number_in_wire_order() {
        // 1: varint 150; 2: "hi"; 3: fixed64; 4: fixed32.
        let buf = [
            0x08, 0x96, 0x01, 0x12, 2, b'h', b'i', 0x19, 1, 2, 3, 4, 5, 6, 7, 8, 0x25, 1, 2, 3, 4,
        ];
        let f = fields(&buf, "msg").unwrap();
        assert_eq!(f[0], (1, Value::Varint(150)));
        assert_eq!(f[1], (2, Value::Bytes(b"hi")));
        assert_eq!(f[2], (3, Value::Fixed));
        assert_eq!(f[3], (4, Value::Fixed));
    }

    #[test]
    fn a_length_past_the_end_is_an_error() {
        assert!(fields(&[0x12, 0x7f, 1], "msg").is_err());
        assert!(fields(&[0x12, 0xff, 0xff, 0xff, 0xff, 0x0f], "msg").is_err());
    }

    #[test]
    fn groups_and_field_zero_are_rejected() {
        assert!(fields(&[0x0b], "msg").is_err());
        assert!(fields(&[0x00, 0x01], "msg").is_err());
    }
}
