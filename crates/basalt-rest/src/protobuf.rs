//! A small protocol-buffers codec for HBase REST's protobuf
//! representations (`application/x-protobuf`, `application/protobuf`).
//!
//! The gateway needs only a handful of flat messages (strings, bytes,
//! integers, one double, nested messages), so they are written and read by
//! hand rather than through generated code: [`Writer`] appends fields;
//! [`Reader`] walks a message's fields, skipping unknown ones as protobuf
//! requires, and refuses anything malformed (truncated varints and
//! lengths, lengths past the end, unknown wire types, group wire types)
//! with a message instead of panicking. Nothing is allocated beyond the
//! fields kept, and nested messages are read as sub-slices of the input.
//!
//! The messages and their field numbers are listed in
//! `docs/rest-protocol.md` (they are HBase's, so its clients read them).

/// Why a protobuf body could not be read.
pub type Read<T> = Result<T, String>;

/// Appends fields to a message.
#[derive(Debug, Default)]
pub struct Writer {
    out: Vec<u8>,
}

impl Writer {
    /// An empty message.
    pub fn new() -> Writer {
        Writer::default()
    }

    /// The encoded message.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }

    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.out.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.out.push(value as u8);
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire));
    }

    /// A length-delimited field: bytes, a string or a nested message.
    pub fn bytes(&mut self, field: u32, value: &[u8]) {
        self.key(field, 2);
        self.varint(value.len() as u64);
        self.out.extend_from_slice(value);
    }

    /// A string field.
    pub fn string(&mut self, field: u32, value: &str) {
        self.bytes(field, value.as_bytes());
    }

    /// An `int32`/`int64` field (negative numbers as ten-byte varints, as
    /// protobuf encodes them).
    pub fn int(&mut self, field: u32, value: i64) {
        self.key(field, 0);
        self.varint(value as u64);
    }

    /// A `bool` field.
    pub fn boolean(&mut self, field: u32, value: bool) {
        self.int(field, i64::from(value));
    }

    /// A `double` field.
    pub fn double(&mut self, field: u32, value: f64) {
        self.key(field, 1);
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    /// A nested message.
    pub fn message(&mut self, field: u32, message: Writer) {
        self.bytes(field, &message.out);
    }
}

/// One field's value as read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: bytes, a string, a nested message or a packed list.
    Bytes(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

impl<'a> Value<'a> {
    /// The value of an integer field.
    pub fn int(self, what: &str) -> Read<i64> {
        match self {
            Value::Varint(v) => Ok(v as i64),
            _ => Err(format!("{what} is not an integer field")),
        }
    }

    /// The value of an `int32` field.
    pub fn int32(self, what: &str) -> Read<i32> {
        let v = self.int(what)?;
        // An int32's negative values arrive sign-extended to 64 bits.
        i32::try_from(v).map_err(|_| format!("{what} is out of range for an int32: {v}"))
    }

    /// The value of a bytes or message field.
    pub fn bytes(self, what: &str) -> Read<&'a [u8]> {
        match self {
            Value::Bytes(b) => Ok(b),
            _ => Err(format!("{what} is not a length-delimited field")),
        }
    }

    /// The value of a string field.
    pub fn string(self, what: &str) -> Read<String> {
        let bytes = self.bytes(what)?;
        std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|_| format!("{what} is not UTF-8"))
    }

    /// The value of a `bool` field.
    pub fn boolean(self, what: &str) -> Read<bool> {
        Ok(self.int(what)? != 0)
    }
}

/// Walks the fields of one message.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over a whole message.
    pub fn new(message: &'a [u8]) -> Reader<'a> {
        Reader { rest: message }
    }

    fn varint(&mut self) -> Read<u64> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some((&byte, rest)) = self.rest.split_first() else {
                return Err("truncated varint".into());
            };
            self.rest = rest;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint longer than ten bytes".into())
    }

    fn take(&mut self, n: usize) -> Read<&'a [u8]> {
        if n > self.rest.len() {
            return Err(format!(
                "a field claims {n} bytes but only {} remain",
                self.rest.len()
            ));
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }

    /// The next field (number and value), `None` at the end.
    pub fn next_field(&mut self) -> Read<Option<(u32, Value<'a>)>> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let field =
            u32::try_from(key >> 3).map_err(|_| format!("field number too large: {key}"))?;
        if field == 0 {
            return Err("field number 0".into());
        }
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Value::Fixed64(u64::from_le_bytes(a))
            }
            2 => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| format!("length too large: {len}"))?;
                Value::Bytes(self.take(len)?)
            }
            5 => {
                let b = self.take(4)?;
                let mut a = [0u8; 4];
                a.copy_from_slice(b);
                Value::Fixed32(u32::from_le_bytes(a))
            }
            wire => return Err(format!("unsupported wire type {wire} in field {field}")),
        };
        Ok(Some((field, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_fields_read_back_in_order() {
        let mut w = Writer::new();
        w.string(1, "name");
        w.int(2, -5);
        w.int(3, 300);
        w.double(4, 2.5);
        let mut inner = Writer::new();
        inner.bytes(1, b"\x00\xff");
        w.message(5, inner);
        let body = w.finish();
        let mut r = Reader::new(&body);
        let (f, v) = r.next_field().unwrap().unwrap();
        assert_eq!((f, v.string("s").unwrap().as_str()), (1, "name"));
        let (f, v) = r.next_field().unwrap().unwrap();
        assert_eq!((f, v.int("i").unwrap()), (2, -5));
        assert_eq!(v.int32("i").unwrap(), -5);
        let (f, v) = r.next_field().unwrap().unwrap();
        assert_eq!((f, v.int("i").unwrap()), (3, 300));
        let (f, v) = r.next_field().unwrap().unwrap();
        assert_eq!((f, v), (4, Value::Fixed64(2.5f64.to_bits())));
        let (f, v) = r.next_field().unwrap().unwrap();
        assert_eq!(f, 5);
        let mut inner = Reader::new(v.bytes("m").unwrap());
        let (_, v) = inner.next_field().unwrap().unwrap();
        assert_eq!(v.bytes("b").unwrap(), b"\x00\xff");
        assert!(r.next_field().unwrap().is_none());
    }

    #[test]
    fn truncated_and_malformed_messages_are_refused_with_a_reason() {
        assert!(Reader::new(&[0x0a, 0x05, b'a'])
            .next_field()
            .unwrap_err()
            .contains("claims 5 bytes"));
        assert!(Reader::new(&[0x08, 0x80])
            .next_field()
            .unwrap_err()
            .contains("truncated"));
        assert!(Reader::new(&[0x0b])
            .next_field()
            .unwrap_err()
            .contains("wire type 3"));
        assert!(Reader::new(&[0x00])
            .next_field()
            .unwrap_err()
            .contains("field number 0"));
        assert!(Reader::new(&[0x08; 12]).next_field().is_ok());
        let long = [0xffu8; 11];
        assert!(Reader::new(&[&[0x08u8][..], &long].concat())
            .next_field()
            .unwrap_err()
            .contains("ten bytes"));
    }
}
