//! Thrift wire formats: the binary protocol (strict and non-strict message
//! headers) and the compact protocol, over a dynamic [`Value`] tree.
//!
//! Decoding works on a byte buffer that may hold only part of a message (an
//! unframed connection delivers messages in arbitrary pieces): running out of
//! bytes is [`DecodeError::Incomplete`] with the total length known to be
//! needed, so the caller reads more and tries again. Every length and count
//! read from the wire is checked against the bytes present before anything is
//! allocated for it, and nesting is capped, so hostile input costs at most
//! what it sends.

use bytes::{BufMut, Bytes, BytesMut};

/// Deepest nesting of structs and containers accepted. Hbase.thrift nests
/// three levels; the cap keeps recursion (and the stack) bounded.
pub const MAX_DEPTH: usize = 64;

/// Most elements a list, set or map gets room for before any is decoded.
/// A declared count is only checked against the bytes left, and nested
/// containers all draw on the same bytes: trusting each count up front
/// would let a message of n bytes reserve about `MAX_DEPTH * n` elements
/// (50 MB for 20 KB). Past this the vector grows as elements arrive, so
/// what is allocated follows what was actually decoded.
const MAX_RESERVED_ELEMENTS: usize = 16;

/// Thrift's type ids (the binary protocol's numbering; the compact protocol
/// has its own codes, translated at the edge).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TType {
    /// End of a struct's fields.
    Stop,
    /// `bool`.
    Bool,
    /// `byte` (signed 8 bits).
    Byte,
    /// `double`.
    Double,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `string` and `binary`.
    Binary,
    /// A struct (also exceptions and argument lists).
    Struct,
    /// `map<K, V>`.
    Map,
    /// `set<T>`.
    Set,
    /// `list<T>`.
    List,
}

impl TType {
    /// The binary protocol's code.
    pub fn code(self) -> u8 {
        match self {
            TType::Stop => 0,
            TType::Bool => 2,
            TType::Byte => 3,
            TType::Double => 4,
            TType::I16 => 6,
            TType::I32 => 8,
            TType::I64 => 10,
            TType::Binary => 11,
            TType::Struct => 12,
            TType::Map => 13,
            TType::Set => 14,
            TType::List => 15,
        }
    }

    /// Decodes a binary protocol type code.
    pub fn from_code(code: u8) -> Option<TType> {
        Some(match code {
            0 => TType::Stop,
            2 => TType::Bool,
            3 => TType::Byte,
            4 => TType::Double,
            6 => TType::I16,
            8 => TType::I32,
            10 => TType::I64,
            11 => TType::Binary,
            12 => TType::Struct,
            13 => TType::Map,
            14 => TType::Set,
            15 => TType::List,
            _ => return None,
        })
    }

    fn compact_code(self) -> u8 {
        match self {
            TType::Stop => 0,
            TType::Bool => 1,
            TType::Byte => 3,
            TType::I16 => 4,
            TType::I32 => 5,
            TType::I64 => 6,
            TType::Double => 7,
            TType::Binary => 8,
            TType::List => 9,
            TType::Set => 10,
            TType::Map => 11,
            TType::Struct => 12,
        }
    }

    fn from_compact_code(code: u8) -> Option<TType> {
        Some(match code {
            0 => TType::Stop,
            // In a field header 1 and 2 are bool true/false; as an element
            // type both codes mean bool.
            1 | 2 => TType::Bool,
            3 => TType::Byte,
            4 => TType::I16,
            5 => TType::I32,
            6 => TType::I64,
            7 => TType::Double,
            8 => TType::Binary,
            9 => TType::List,
            10 => TType::Set,
            11 => TType::Map,
            12 => TType::Struct,
            _ => return None,
        })
    }

    /// The IDL spelling, for error messages.
    pub fn name(self) -> &'static str {
        match self {
            TType::Stop => "stop",
            TType::Bool => "bool",
            TType::Byte => "byte",
            TType::Double => "double",
            TType::I16 => "i16",
            TType::I32 => "i32",
            TType::I64 => "i64",
            TType::Binary => "binary",
            TType::Struct => "struct",
            TType::Map => "map",
            TType::Set => "set",
            TType::List => "list",
        }
    }
}

/// A decoded Thrift value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `bool`.
    Bool(bool),
    /// `byte`.
    Byte(i8),
    /// `i16`.
    I16(i16),
    /// `i32`.
    I32(i32),
    /// `i64`.
    I64(i64),
    /// `double`.
    Double(f64),
    /// `string` or `binary`.
    Binary(Bytes),
    /// A struct: `(field id, value)` in wire order.
    Struct(Vec<(i16, Value)>),
    /// A map with its declared key and value types.
    Map(TType, TType, Vec<(Value, Value)>),
    /// A set with its declared element type.
    Set(TType, Vec<Value>),
    /// A list with its declared element type.
    List(TType, Vec<Value>),
}

impl Value {
    /// The value's Thrift type.
    pub fn ttype(&self) -> TType {
        match self {
            Value::Bool(_) => TType::Bool,
            Value::Byte(_) => TType::Byte,
            Value::I16(_) => TType::I16,
            Value::I32(_) => TType::I32,
            Value::I64(_) => TType::I64,
            Value::Double(_) => TType::Double,
            Value::Binary(_) => TType::Binary,
            Value::Struct(_) => TType::Struct,
            Value::Map(..) => TType::Map,
            Value::Set(..) => TType::Set,
            Value::List(..) => TType::List,
        }
    }
}

/// The four kinds of Thrift message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageType {
    /// A request expecting a reply.
    Call,
    /// A successful (or declared-exception) answer.
    Reply,
    /// A `TApplicationException` answer.
    Exception,
    /// A request expecting no reply.
    Oneway,
}

impl MessageType {
    fn code(self) -> u8 {
        match self {
            MessageType::Call => 1,
            MessageType::Reply => 2,
            MessageType::Exception => 3,
            MessageType::Oneway => 4,
        }
    }

    fn from_code(code: u8) -> Option<MessageType> {
        Some(match code {
            1 => MessageType::Call,
            2 => MessageType::Reply,
            3 => MessageType::Exception,
            4 => MessageType::Oneway,
            _ => return None,
        })
    }
}

/// What precedes a message's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageHeader {
    /// The method name.
    pub name: String,
    /// Call, reply, exception or oneway.
    pub kind: MessageType,
    /// The client's sequence id, echoed in the reply.
    pub seqid: i32,
}

/// A protocol: how values are laid out in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// TBinaryProtocol. `strict` is the versioned header (`0x80 0x01`);
    /// without it the header starts with the method name's length.
    Binary {
        /// Whether message headers carry the version word.
        strict: bool,
    },
    /// TCompactProtocol (varints, field-id deltas; header byte `0x82`).
    Compact,
}

/// Why bytes did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The buffer ends before the message does; at least `needed` bytes in
    /// all are required to go on.
    #[error("message incomplete: at least {needed} bytes needed")]
    Incomplete {
        /// Total buffer length known to be required.
        needed: usize,
    },
    /// The bytes cannot be a valid message.
    #[error("{0}")]
    Invalid(String),
}

type DResult<T> = Result<T, DecodeError>;

fn invalid<T>(message: impl Into<String>) -> DResult<T> {
    Err(DecodeError::Invalid(message.into()))
}

/// Decodes one message from the start of `buf`: its header, its body (a
/// struct) and the number of bytes it took. The decoded tree is not
/// bounded beyond the buffer's own bounds; a server decodes through
/// [`decode_message_within`].
pub fn decode_message(
    protocol: Protocol,
    buf: &[u8],
) -> Result<(MessageHeader, Value, usize), (Option<MessageHeader>, DecodeError)> {
    decode_message_within(protocol, buf, usize::MAX).map(|d| (d.header, d.body, d.len))
}

/// A message decoded by [`decode_message_within`].
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The message header.
    pub header: MessageHeader,
    /// The body (a [`Value::Struct`]).
    pub body: Value,
    /// Bytes of `buf` the message took.
    pub len: usize,
    /// Heap bytes the decoded tree holds, as charged against the limit.
    pub cost: usize,
}

/// A decoded container's vector capacity after growing from `capacity`
/// once: doubling, from 2.
fn grown(capacity: usize) -> usize {
    capacity.saturating_add(capacity.max(2))
}

/// The capacity a container's vector has once it holds `n` elements,
/// having started with room for `reserved`.
fn capacity_for(reserved: usize, n: usize) -> usize {
    let mut capacity = reserved;
    while capacity < n {
        capacity = grown(capacity);
    }
    capacity
}

/// What one element of a decoded tree costs beyond its bytes: the slot it
/// takes in its container's vector. Charged by capacity, as allocated.
const VALUE_SLOT: usize = std::mem::size_of::<Value>();
const FIELD_SLOT: usize = std::mem::size_of::<(i16, Value)>();
const ENTRY_SLOT: usize = std::mem::size_of::<(Value, Value)>();

/// Decodes one message like [`decode_message`], refusing it (as
/// [`DecodeError::Invalid`]) once its decoded tree would hold more than
/// `max_cost` heap bytes. Every container slot and every string's bytes
/// are charged as they are allocated, so a message of many tiny elements
/// (one byte on the wire, a 40-byte [`Value`] decoded) stops at the limit
/// instead of growing the process by forty times its size.
pub fn decode_message_within(
    protocol: Protocol,
    buf: &[u8],
    max_cost: usize,
) -> Result<Decoded, (Option<MessageHeader>, DecodeError)> {
    let mut reader = Reader::new(protocol, buf);
    reader.max_cost = max_cost;
    let header = reader.read_message_header().map_err(|e| (None, e))?;
    let body = reader
        .read_value(TType::Struct)
        .map_err(|e| (Some(header.clone()), e))?;
    Ok(Decoded {
        header,
        body,
        len: reader.pos,
        cost: reader.cost,
    })
}

/// Decodes just a message header (for replying to a message whose body is
/// broken).
pub fn decode_header(protocol: Protocol, buf: &[u8]) -> DResult<MessageHeader> {
    Reader::new(protocol, buf).read_message_header()
}

/// Encodes a message whose body is `body` (a [`Value::Struct`]).
pub fn encode_message(
    protocol: Protocol,
    header: &MessageHeader,
    body: &Value,
    out: &mut BytesMut,
) {
    let mut writer = Writer {
        protocol,
        out,
        last_field: Vec::new(),
    };
    writer.write_message_header(header);
    writer.write_value(body);
}

/// A cursor over a buffer holding (part of) a message.
struct Reader<'a> {
    protocol: Protocol,
    buf: &'a [u8],
    pos: usize,
    depth: usize,
    /// Compact protocol: the last field id of each open struct.
    last_field: Vec<i16>,
    /// Heap bytes the values decoded so far hold.
    cost: usize,
    /// Most heap bytes the decoded values may hold.
    max_cost: usize,
}

impl<'a> Reader<'a> {
    fn new(protocol: Protocol, buf: &'a [u8]) -> Self {
        Reader {
            protocol,
            buf,
            pos: 0,
            depth: 0,
            last_field: Vec::new(),
            cost: 0,
            max_cost: usize::MAX,
        }
    }

    /// Charges `bytes` of heap to the message, refusing it past its limit.
    fn charge(&mut self, bytes: usize) -> DResult<()> {
        self.cost = self.cost.saturating_add(bytes);
        if self.cost > self.max_cost {
            return invalid(format!(
                "message refused: decoding it would take more than {} bytes of memory \
                 (at byte {} of it); send fewer, larger elements or split the request",
                self.max_cost, self.pos
            ));
        }
        Ok(())
    }

    /// Makes room for one more element in `items`, charging what the
    /// vector allocates. Growth is explicit (see [`grown`]) so that the
    /// charge is what is really allocated, and what the scanner predicts.
    fn grow<T>(&mut self, items: &mut Vec<T>, slot: usize) -> DResult<()> {
        if items.len() == items.capacity() {
            let extra = grown(items.capacity()) - items.capacity();
            self.charge(extra.saturating_mul(slot))?;
            items.reserve_exact(extra);
        }
        Ok(())
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Takes `n` bytes, or reports how many the buffer must hold.
    fn take(&mut self, n: usize) -> DResult<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or_else(|| {
            DecodeError::Invalid(format!("length {n} overflows the buffer position"))
        })?;
        if end > self.buf.len() {
            return Err(DecodeError::Incomplete { needed: end });
        }
        let buf: &'a [u8] = self.buf;
        let slice = &buf[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    /// Values are copied out of the read buffer, which is then reused.
    fn take_bytes(&mut self, n: usize) -> DResult<Bytes> {
        let bytes = self.take(n)?;
        self.charge(n)?;
        Ok(Bytes::copy_from_slice(bytes))
    }

    fn u8(&mut self) -> DResult<u8> {
        Ok(self.take(1)?[0])
    }

    fn fixed<const N: usize>(&mut self) -> DResult<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn be_i16(&mut self) -> DResult<i16> {
        Ok(i16::from_be_bytes(self.fixed()?))
    }

    fn be_i32(&mut self) -> DResult<i32> {
        Ok(i32::from_be_bytes(self.fixed()?))
    }

    fn be_i64(&mut self) -> DResult<i64> {
        Ok(i64::from_be_bytes(self.fixed()?))
    }

    fn varint(&mut self, max_bytes: usize) -> DResult<u64> {
        let mut result = 0u64;
        for i in 0..max_bytes {
            let byte = self.u8()?;
            result |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(result);
            }
        }
        invalid(format!("varint longer than {max_bytes} bytes"))
    }

    fn zigzag_i64(&mut self) -> DResult<i64> {
        let n = self.varint(10)?;
        Ok((n >> 1) as i64 ^ -((n & 1) as i64))
    }

    fn zigzag_i32(&mut self) -> DResult<i32> {
        let n = self.varint(5)?;
        let n =
            u32::try_from(n).map_err(|_| DecodeError::Invalid("i32 varint overflows".into()))?;
        Ok((n >> 1) as i32 ^ -((n & 1) as i32))
    }

    /// A length or count, checked against what the buffer can still hold:
    /// every element takes at least one byte, so a count above the bytes
    /// that follow cannot be satisfied yet and nothing is allocated for it.
    fn length(&mut self, what: &str) -> DResult<usize> {
        let n: i64 = match self.protocol {
            Protocol::Binary { .. } => i64::from(self.be_i32()?),
            Protocol::Compact => self.varint(5)? as i64,
        };
        if n < 0 {
            return invalid(format!("negative {what} {n}"));
        }
        let n = n as usize;
        if n > self.remaining() {
            return Err(DecodeError::Incomplete {
                needed: self.pos.saturating_add(n),
            });
        }
        Ok(n)
    }

    fn read_message_header(&mut self) -> DResult<MessageHeader> {
        match self.protocol {
            Protocol::Binary { strict: true } => {
                let word = self.be_i32()? as u32;
                if word & 0xffff_0000 != 0x8001_0000 {
                    return invalid(format!("bad binary protocol version word 0x{word:08x}"));
                }
                let kind = self.message_type((word & 0xff) as u8)?;
                let name = self.method_name()?;
                let seqid = self.be_i32()?;
                Ok(MessageHeader { name, kind, seqid })
            }
            Protocol::Binary { strict: false } => {
                let name = self.method_name()?;
                let kind = self.u8()?;
                let kind = self.message_type(kind)?;
                let seqid = self.be_i32()?;
                Ok(MessageHeader { name, kind, seqid })
            }
            Protocol::Compact => {
                let id = self.u8()?;
                if id != 0x82 {
                    return invalid(format!("bad compact protocol id 0x{id:02x}"));
                }
                let version_and_type = self.u8()?;
                if version_and_type & 0x1f != 1 {
                    return invalid(format!(
                        "unsupported compact protocol version {}",
                        version_and_type & 0x1f
                    ));
                }
                let kind = self.message_type(version_and_type >> 5)?;
                let seqid = self.varint(5)? as u32 as i32;
                let name = self.method_name()?;
                Ok(MessageHeader { name, kind, seqid })
            }
        }
    }

    fn message_type(&self, code: u8) -> DResult<MessageType> {
        MessageType::from_code(code)
            .ok_or_else(|| DecodeError::Invalid(format!("unknown message type {code}")))
    }

    fn method_name(&mut self) -> DResult<String> {
        let len = self.length("method name length")?;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| DecodeError::Invalid("method name is not UTF-8".into()))
    }

    fn read_value(&mut self, ttype: TType) -> DResult<Value> {
        match ttype {
            TType::Stop => invalid("a value cannot have type stop"),
            TType::Bool => {
                let b = self.u8()?;
                Ok(Value::Bool(match self.protocol {
                    // Compact writes bools inside containers as 1 (true) or
                    // 2 (false); older writers used 0/1, so only 1 is true.
                    Protocol::Compact => b == 1,
                    Protocol::Binary { .. } => b != 0,
                }))
            }
            TType::Byte => Ok(Value::Byte(self.u8()? as i8)),
            TType::I16 => Ok(Value::I16(match self.protocol {
                Protocol::Binary { .. } => self.be_i16()?,
                Protocol::Compact => {
                    let v = self.zigzag_i32()?;
                    i16::try_from(v)
                        .map_err(|_| DecodeError::Invalid(format!("i16 out of range: {v}")))?
                }
            })),
            TType::I32 => Ok(Value::I32(match self.protocol {
                Protocol::Binary { .. } => self.be_i32()?,
                Protocol::Compact => self.zigzag_i32()?,
            })),
            TType::I64 => Ok(Value::I64(match self.protocol {
                Protocol::Binary { .. } => self.be_i64()?,
                Protocol::Compact => self.zigzag_i64()?,
            })),
            TType::Double => Ok(Value::Double(match self.protocol {
                Protocol::Binary { .. } => f64::from_bits(self.be_i64()? as u64),
                Protocol::Compact => f64::from_le_bytes(self.fixed()?),
            })),
            TType::Binary => {
                let len = self.length("string length")?;
                Ok(Value::Binary(self.take_bytes(len)?))
            }
            TType::Struct => self.nested(|r| r.read_struct()),
            TType::Map => self.nested(|r| r.read_map()),
            TType::Set => self.nested(|r| {
                let (elem, items) = r.read_list()?;
                Ok(Value::Set(elem, items))
            }),
            TType::List => self.nested(|r| {
                let (elem, items) = r.read_list()?;
                Ok(Value::List(elem, items))
            }),
        }
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self) -> DResult<Value>) -> DResult<Value> {
        if self.depth >= MAX_DEPTH {
            return invalid(format!("nesting deeper than {MAX_DEPTH}"));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn read_struct(&mut self) -> DResult<Value> {
        let mut fields = Vec::new();
        self.last_field.push(0);
        let result = loop {
            match self.read_field()? {
                None => break Ok(Value::Struct(fields)),
                Some(field) => {
                    self.grow(&mut fields, FIELD_SLOT)?;
                    fields.push(field);
                }
            }
        };
        self.last_field.pop();
        result
    }

    /// One field of a struct, or `None` at its end.
    fn read_field(&mut self) -> DResult<Option<(i16, Value)>> {
        let last = self.last_field.last().copied().unwrap_or(0);
        let Some(head) = self.read_field_head(last)? else {
            return Ok(None);
        };
        if let Some(slot) = self.last_field.last_mut() {
            *slot = head.id;
        }
        let value = match head.kind {
            FieldKind::Bool(b) => Value::Bool(b),
            FieldKind::Typed(ttype) => self.read_value(ttype)?,
        };
        Ok(Some((head.id, value)))
    }

    /// A struct field's header, or `None` at the struct's end. The compact
    /// protocol writes ids as deltas from the struct's previous field id,
    /// `last_field`. Shared by the decoder and [`MessageScanner`], so both
    /// read (and refuse) exactly the same headers.
    fn read_field_head(&mut self, last_field: i16) -> DResult<Option<FieldHead>> {
        let byte = self.u8()?;
        if byte == 0 {
            return Ok(None);
        }
        match self.protocol {
            Protocol::Binary { .. } => {
                let ttype = TType::from_code(byte)
                    .ok_or_else(|| DecodeError::Invalid(format!("unknown field type {byte}")))?;
                let id = self.be_i16()?;
                Ok(Some(FieldHead {
                    id,
                    kind: FieldKind::Typed(ttype),
                }))
            }
            Protocol::Compact => {
                let code = byte & 0x0f;
                let delta = byte >> 4;
                let id = if delta == 0 {
                    let v = self.zigzag_i32()?;
                    i16::try_from(v)
                        .map_err(|_| DecodeError::Invalid(format!("field id out of range: {v}")))?
                } else {
                    last_field
                        .checked_add(i16::from(delta))
                        .ok_or_else(|| DecodeError::Invalid("field id overflows".into()))?
                };
                let kind = match code {
                    // A compact bool field lives entirely in its header.
                    1 => FieldKind::Bool(true),
                    2 => FieldKind::Bool(false),
                    _ => FieldKind::Typed(TType::from_compact_code(code).ok_or_else(|| {
                        DecodeError::Invalid(format!("unknown compact field type {code}"))
                    })?),
                };
                Ok(Some(FieldHead { id, kind }))
            }
        }
    }

    fn element_type(&self, code: u8, compact: bool) -> DResult<TType> {
        let t = if compact {
            TType::from_compact_code(code)
        } else {
            TType::from_code(code)
        };
        match t {
            Some(TType::Stop) | None => invalid(format!("unknown element type {code}")),
            Some(t) => Ok(t),
        }
    }

    fn read_list(&mut self) -> DResult<(TType, Vec<Value>)> {
        let (elem, count) = match self.protocol {
            Protocol::Binary { .. } => {
                let code = self.u8()?;
                let elem = self.element_type(code, false)?;
                (elem, self.length("list size")?)
            }
            Protocol::Compact => {
                let byte = self.u8()?;
                let elem = self.element_type(byte & 0x0f, true)?;
                let short = usize::from(byte >> 4);
                let count = if short == 15 {
                    self.length("list size")?
                } else {
                    short
                };
                (elem, count)
            }
        };
        let reserved = count.min(MAX_RESERVED_ELEMENTS);
        self.charge(reserved.saturating_mul(VALUE_SLOT))?;
        let mut items = Vec::with_capacity(reserved);
        for _ in 0..count {
            let item = self.read_value(elem)?;
            self.grow(&mut items, VALUE_SLOT)?;
            items.push(item);
        }
        Ok((elem, items))
    }

    fn read_map(&mut self) -> DResult<Value> {
        let (key, value, count) = match self.protocol {
            Protocol::Binary { .. } => {
                let k = self.u8()?;
                let v = self.u8()?;
                let count = self.length("map size")?;
                if count == 0 {
                    // Some writers leave the types of an empty map at 0.
                    return Ok(Value::Map(TType::Binary, TType::Binary, Vec::new()));
                }
                (
                    self.element_type(k, false)?,
                    self.element_type(v, false)?,
                    count,
                )
            }
            Protocol::Compact => {
                let count = self.length("map size")?;
                if count == 0 {
                    return Ok(Value::Map(TType::Binary, TType::Binary, Vec::new()));
                }
                let types = self.u8()?;
                (
                    self.element_type(types >> 4, true)?,
                    self.element_type(types & 0x0f, true)?,
                    count,
                )
            }
        };
        let reserved = count.min(MAX_RESERVED_ELEMENTS);
        self.charge(reserved.saturating_mul(ENTRY_SLOT))?;
        let mut entries = Vec::with_capacity(reserved);
        for _ in 0..count {
            let k = self.read_value(key)?;
            let v = self.read_value(value)?;
            self.grow(&mut entries, ENTRY_SLOT)?;
            entries.push((k, v));
        }
        Ok(Value::Map(key, value, entries))
    }
}

struct Writer<'a> {
    protocol: Protocol,
    out: &'a mut BytesMut,
    last_field: Vec<i16>,
}

impl Writer<'_> {
    fn varint(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.out.put_u8((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
        self.out.put_u8(n as u8);
    }

    fn zigzag(&mut self, n: i64) {
        self.varint(((n << 1) ^ (n >> 63)) as u64);
    }

    fn length(&mut self, n: usize) {
        match self.protocol {
            // Lengths come from values this process holds; anything above
            // i32::MAX could not be sent by Thrift at all.
            Protocol::Binary { .. } => self.out.put_i32(i32::try_from(n).unwrap_or(i32::MAX)),
            Protocol::Compact => self.varint(n as u64),
        }
    }

    fn binary(&mut self, bytes: &[u8]) {
        self.length(bytes.len());
        self.out.put_slice(bytes);
    }

    fn write_message_header(&mut self, header: &MessageHeader) {
        match self.protocol {
            Protocol::Binary { strict: true } => {
                self.out
                    .put_u32(0x8001_0000 | u32::from(header.kind.code()));
                self.binary(header.name.as_bytes());
                self.out.put_i32(header.seqid);
            }
            Protocol::Binary { strict: false } => {
                self.binary(header.name.as_bytes());
                self.out.put_u8(header.kind.code());
                self.out.put_i32(header.seqid);
            }
            Protocol::Compact => {
                self.out.put_u8(0x82);
                self.out.put_u8((header.kind.code() << 5) | 1);
                self.varint(u64::from(header.seqid as u32));
                self.binary(header.name.as_bytes());
            }
        }
    }

    fn write_value(&mut self, value: &Value) {
        let compact = self.protocol == Protocol::Compact;
        match value {
            Value::Bool(b) => self.out.put_u8(match (compact, b) {
                (true, true) => 1,
                (true, false) => 2,
                (false, b) => u8::from(*b),
            }),
            Value::Byte(b) => self.out.put_i8(*b),
            Value::I16(n) if compact => self.zigzag(i64::from(*n)),
            Value::I16(n) => self.out.put_i16(*n),
            Value::I32(n) if compact => self.zigzag(i64::from(*n)),
            Value::I32(n) => self.out.put_i32(*n),
            Value::I64(n) if compact => self.zigzag(*n),
            Value::I64(n) => self.out.put_i64(*n),
            Value::Double(d) if compact => self.out.put_f64_le(*d),
            Value::Double(d) => self.out.put_f64(*d),
            Value::Binary(b) => self.binary(b),
            Value::Struct(fields) => {
                self.last_field.push(0);
                for (id, v) in fields {
                    self.write_field_header(*id, v);
                    // Compact bool fields live entirely in the header.
                    if !(compact && matches!(v, Value::Bool(_))) {
                        self.write_value(v);
                    }
                }
                self.out.put_u8(0);
                self.last_field.pop();
            }
            Value::List(elem, items) | Value::Set(elem, items) => {
                if compact {
                    if items.len() < 15 {
                        self.out
                            .put_u8(((items.len() as u8) << 4) | elem.compact_code());
                    } else {
                        self.out.put_u8(0xf0 | elem.compact_code());
                        self.varint(items.len() as u64);
                    }
                } else {
                    self.out.put_u8(elem.code());
                    self.length(items.len());
                }
                for item in items {
                    self.write_value(item);
                }
            }
            Value::Map(k, v, entries) => {
                if compact {
                    self.varint(entries.len() as u64);
                    if !entries.is_empty() {
                        self.out.put_u8((k.compact_code() << 4) | v.compact_code());
                    }
                } else {
                    self.out.put_u8(k.code());
                    self.out.put_u8(v.code());
                    self.length(entries.len());
                }
                for (key, value) in entries {
                    self.write_value(key);
                    self.write_value(value);
                }
            }
        }
    }

    fn write_field_header(&mut self, id: i16, value: &Value) {
        match self.protocol {
            Protocol::Binary { .. } => {
                self.out.put_u8(value.ttype().code());
                self.out.put_i16(id);
            }
            Protocol::Compact => {
                let code = match value {
                    Value::Bool(true) => 1,
                    Value::Bool(false) => 2,
                    v => v.ttype().compact_code(),
                };
                let last = self.last_field.last().copied().unwrap_or(0);
                let delta = i32::from(id) - i32::from(last);
                if (1..=15).contains(&delta) {
                    self.out.put_u8(((delta as u8) << 4) | code);
                } else {
                    self.out.put_u8(code);
                    self.zigzag(i64::from(id));
                }
                if let Some(slot) = self.last_field.last_mut() {
                    *slot = id;
                }
            }
        }
    }
}

/// A struct field's header.
#[derive(Debug, Clone, Copy)]
struct FieldHead {
    id: i16,
    kind: FieldKind,
}

/// What follows a field header.
#[derive(Debug, Clone, Copy)]
enum FieldKind {
    /// A value of this type.
    Typed(TType),
    /// Nothing: a compact bool field carries its value in the header.
    Bool(bool),
}

/// Finds where a message ends in a buffer that grows as its bytes arrive,
/// examining each byte once: an unframed connection cannot know a
/// message's length before walking it, and decoding the whole message
/// again on every read costs time quadratic in its size (two 8 MB
/// messages trickled in 1 KB pieces took 16 s of CPU). The walk keeps its
/// place between calls (an explicit stack instead of recursion), allocates
/// nothing per element, and checks types and nesting as it goes, so broken
/// input is found as soon as it arrives. Once it reports the length, the
/// message is decoded once.
#[derive(Debug)]
pub struct MessageScanner {
    protocol: Protocol,
    /// Bytes walked and found well-formed so far.
    pos: usize,
    header: Option<MessageHeader>,
    /// The open structs and containers, innermost last.
    stack: Vec<Frame>,
    /// Bytes looked at over every call, retries of a unit cut short by the
    /// end of the buffer included.
    examined: u64,
    /// Heap bytes the message will take decoded, as the decoder charges it.
    cost: usize,
}

#[derive(Debug, Clone, Copy)]
enum Frame {
    /// A struct, with (compact protocol) its last field id and how many
    /// fields it has had.
    Struct { last_field: i16, fields: usize },
    /// A list or set: the element type and how many elements are left.
    List { elem: TType, left: usize },
    /// A map: key and value types, entries left, and whether a key is next.
    Map {
        key: TType,
        value: TType,
        left: usize,
        key_next: bool,
    },
}

/// How far [`MessageScanner::advance`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scanned {
    /// The message is complete: its length in bytes.
    Complete(usize),
    /// More bytes are needed: at least `needed` in all.
    Incomplete {
        /// Total buffer length known to be required.
        needed: usize,
    },
}

impl MessageScanner {
    /// A scanner at the start of a message.
    pub fn new(protocol: Protocol) -> Self {
        MessageScanner {
            protocol,
            pos: 0,
            header: None,
            stack: Vec::new(),
            examined: 0,
            cost: 0,
        }
    }

    /// Heap bytes the walked part takes decoded: exactly what
    /// [`decode_message_within`] charges, known before decoding anything.
    pub fn cost(&self) -> usize {
        self.cost
    }

    /// The message header, once it has been read.
    pub fn header(&self) -> Option<&MessageHeader> {
        self.header.as_ref()
    }

    /// Bytes looked at so far: the work done, linear in the message.
    pub fn examined(&self) -> u64 {
        self.examined
    }

    /// Walks on through `buf` (the buffer of the previous call, longer):
    /// where the message ends, or how many bytes it needs at least; an
    /// error when the bytes cannot be a message.
    pub fn advance(&mut self, buf: &[u8]) -> DResult<Scanned> {
        if self.header.is_none() {
            let mut reader = Reader::new(self.protocol, buf);
            let header = reader.read_message_header();
            self.examined += reader.pos as u64;
            match header {
                Ok(header) => {
                    self.header = Some(header);
                    self.pos = reader.pos;
                    self.stack.push(Frame::Struct {
                        last_field: 0,
                        fields: 0,
                    });
                }
                Err(DecodeError::Incomplete { needed }) => {
                    return Ok(Scanned::Incomplete { needed })
                }
                Err(e) => return Err(e),
            }
        }
        loop {
            let mut reader = Reader::new(self.protocol, buf);
            reader.pos = self.pos;
            let step = self.step(&mut reader);
            self.examined += (reader.pos - self.pos) as u64;
            match step {
                Ok(true) => self.pos = reader.pos,
                Ok(false) => {
                    self.pos = reader.pos;
                    return Ok(Scanned::Complete(reader.pos));
                }
                Err(DecodeError::Incomplete { needed }) => {
                    return Ok(Scanned::Incomplete { needed })
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Walks one unit from `reader.pos`: a struct's field header with its
    /// scalar value or container header, a container's element, or an end.
    /// State changes only once the unit is whole, so a unit cut short is
    /// walked again from its start. `false`: the message has ended.
    fn step(&mut self, reader: &mut Reader<'_>) -> DResult<bool> {
        let Some(&top) = self.stack.last() else {
            return Ok(false);
        };
        let opened = match top {
            Frame::Struct { last_field, fields } => {
                let Some(head) = reader.read_field_head(last_field)? else {
                    self.stack.pop();
                    self.cost = self
                        .cost
                        .saturating_add(capacity_for(0, fields).saturating_mul(FIELD_SLOT));
                    return Ok(!self.stack.is_empty());
                };
                let (opened, cost) = match head.kind {
                    FieldKind::Typed(ttype) => self.value(reader, ttype)?,
                    FieldKind::Bool(_) => (None, 0),
                };
                if let Some(Frame::Struct { last_field, fields }) = self.stack.last_mut() {
                    *last_field = head.id;
                    *fields += 1;
                }
                (opened, cost)
            }
            Frame::List { elem, left } => {
                if left == 0 {
                    self.stack.pop();
                    return Ok(true);
                }
                let opened = self.value(reader, elem)?;
                if let Some(Frame::List { left, .. }) = self.stack.last_mut() {
                    *left -= 1;
                }
                opened
            }
            Frame::Map {
                key,
                value,
                left,
                key_next,
            } => {
                if left == 0 {
                    self.stack.pop();
                    return Ok(true);
                }
                let opened = self.value(reader, if key_next { key } else { value })?;
                if let Some(Frame::Map { left, key_next, .. }) = self.stack.last_mut() {
                    if !*key_next {
                        *left -= 1;
                    }
                    *key_next = !*key_next;
                }
                opened
            }
        };
        let (opened, cost) = opened;
        self.cost = self.cost.saturating_add(cost);
        if let Some(frame) = opened {
            self.stack.push(frame);
        }
        Ok(true)
    }

    /// Walks a value of type `ttype`: a scalar or string whole, a
    /// container's header (returned as the frame to open); with what it
    /// costs decoded (a struct's fields are counted when it ends).
    fn value(&self, reader: &mut Reader<'_>, ttype: TType) -> DResult<(Option<Frame>, usize)> {
        let compact = self.protocol == Protocol::Compact;
        let container = matches!(ttype, TType::Struct | TType::List | TType::Set | TType::Map);
        // The same cap as the decoder's: the stack holds the open levels.
        if container && self.stack.len() >= MAX_DEPTH {
            return invalid(format!("nesting deeper than {MAX_DEPTH}"));
        }
        match ttype {
            TType::Stop => invalid("a value cannot have type stop"),
            TType::Bool | TType::Byte => reader.u8().map(|_| (None, 0)),
            TType::I16 | TType::I32 if compact => reader.zigzag_i32().map(|_| (None, 0)),
            TType::I64 if compact => reader.zigzag_i64().map(|_| (None, 0)),
            TType::I16 => reader.take(2).map(|_| (None, 0)),
            TType::I32 => reader.take(4).map(|_| (None, 0)),
            TType::I64 | TType::Double => reader.take(8).map(|_| (None, 0)),
            TType::Binary => {
                let len = reader.length("string length")?;
                reader.take(len).map(|_| (None, len))
            }
            TType::Struct => Ok((
                Some(Frame::Struct {
                    last_field: 0,
                    fields: 0,
                }),
                0,
            )),
            TType::List | TType::Set => {
                let (elem, left) = if compact {
                    let byte = reader.u8()?;
                    let elem = reader.element_type(byte & 0x0f, true)?;
                    let short = usize::from(byte >> 4);
                    let left = if short == 15 {
                        reader.length("list size")?
                    } else {
                        short
                    };
                    (elem, left)
                } else {
                    let code = reader.u8()?;
                    let elem = reader.element_type(code, false)?;
                    (elem, reader.length("list size")?)
                };
                let slots = capacity_for(left.min(MAX_RESERVED_ELEMENTS), left);
                Ok((
                    Some(Frame::List { elem, left }),
                    slots.saturating_mul(VALUE_SLOT),
                ))
            }
            TType::Map => {
                let (key, value, left) = if compact {
                    let left = reader.length("map size")?;
                    if left == 0 {
                        return Ok((None, 0));
                    }
                    let types = reader.u8()?;
                    (
                        reader.element_type(types >> 4, true)?,
                        reader.element_type(types & 0x0f, true)?,
                        left,
                    )
                } else {
                    let k = reader.u8()?;
                    let v = reader.u8()?;
                    let left = reader.length("map size")?;
                    if left == 0 {
                        return Ok((None, 0));
                    }
                    (
                        reader.element_type(k, false)?,
                        reader.element_type(v, false)?,
                        left,
                    )
                };
                let slots = capacity_for(left.min(MAX_RESERVED_ELEMENTS), left);
                Ok((
                    Some(Frame::Map {
                        key,
                        value,
                        left,
                        key_next: true,
                    }),
                    slots.saturating_mul(ENTRY_SLOT),
                ))
            }
        }
    }
}

/// How a connection frames and encodes its messages, told from its first
/// bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wire {
    /// Each message is preceded by its 4-byte big-endian length.
    pub framed: bool,
    /// The protocol inside.
    pub protocol: Protocol,
}

/// Tells a connection's transport and protocol from its first five bytes
/// (`None`: these cannot start any supported message).
///
/// - `0x80 0x01`: unframed strict binary;
/// - `0x82`: unframed compact;
/// - otherwise the first four bytes are a length: either a frame's (and the
///   message inside starts at byte 4 with `0x80`, `0x82`, or a non-strict
///   binary header whose name length begins with `0x00`), or a non-strict
///   binary method name's, followed by the name's first letter.
pub fn detect_wire(first: &[u8; 5]) -> Option<Wire> {
    match first {
        [0x80, 0x01, ..] => Some(Wire {
            framed: false,
            protocol: Protocol::Binary { strict: true },
        }),
        [0x82, ..] => Some(Wire {
            framed: false,
            protocol: Protocol::Compact,
        }),
        [_, _, _, _, 0x80] => Some(Wire {
            framed: true,
            protocol: Protocol::Binary { strict: true },
        }),
        [_, _, _, _, 0x82] => Some(Wire {
            framed: true,
            protocol: Protocol::Compact,
        }),
        [_, _, _, _, 0x00] => Some(Wire {
            framed: true,
            protocol: Protocol::Binary { strict: false },
        }),
        [0x00, _, _, _, c] if c.is_ascii_graphic() => Some(Wire {
            framed: false,
            protocol: Protocol::Binary { strict: false },
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        Value::Struct(vec![
            (1, Value::Binary(Bytes::from_static(b"table"))),
            (2, Value::Bool(true)),
            (3, Value::Bool(false)),
            (4, Value::I64(-1_234_567_890_123)),
            (20, Value::I32(i32::MIN)),
            (
                21,
                Value::List(
                    TType::Binary,
                    (0..20)
                        .map(|i| Value::Binary(Bytes::from(format!("c{i}"))))
                        .collect(),
                ),
            ),
            (
                22,
                Value::Map(
                    TType::Binary,
                    TType::Struct,
                    vec![(
                        Value::Binary(Bytes::from_static(b"k")),
                        Value::Struct(vec![(1, Value::I16(-7)), (9, Value::Double(1.5))]),
                    )],
                ),
            ),
            (
                23,
                Value::List(TType::Bool, vec![Value::Bool(true), Value::Bool(false)]),
            ),
            (-1, Value::Byte(-3)),
        ])
    }

    const EVERY_PROTOCOL: [Protocol; 3] = [
        Protocol::Binary { strict: true },
        Protocol::Binary { strict: false },
        Protocol::Compact,
    ];

    /// A call of `name` carrying [`sample`], encoded in `protocol`.
    fn sample_call(protocol: Protocol, name: &str, seqid: i32) -> (MessageHeader, Bytes) {
        let header = MessageHeader {
            name: name.into(),
            kind: MessageType::Call,
            seqid,
        };
        let mut out = BytesMut::new();
        encode_message(protocol, &header, &sample(), &mut out);
        (header, out.freeze())
    }

    #[test]
    fn every_protocol_round_trips() {
        for protocol in EVERY_PROTOCOL {
            let (header, bytes) = sample_call(protocol, "getRow", 77);
            let (h, v, len) = decode_message(protocol, &bytes).unwrap();
            assert_eq!(h, header);
            assert_eq!(v, sample());
            assert_eq!(len, bytes.len());
            // Every strict prefix is incomplete, never invalid.
            for cut in 0..bytes.len() {
                match decode_message(protocol, &bytes.slice(..cut)) {
                    Err((_, DecodeError::Incomplete { needed })) => assert!(needed > cut),
                    other => panic!("{protocol:?} cut at {cut}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn wire_detection() {
        let strict = [0x80, 0x01, 0x00, 0x01, 0x00];
        assert!(!detect_wire(&strict).unwrap().framed);
        let compact = [0x82, 0x21, 0, 0, 0];
        assert_eq!(detect_wire(&compact).unwrap().protocol, Protocol::Compact);
        let framed_binary = [0, 0, 0, 40, 0x80];
        assert!(detect_wire(&framed_binary).unwrap().framed);
        let framed_compact = [0, 0, 0, 40, 0x82];
        assert_eq!(
            detect_wire(&framed_compact).unwrap(),
            Wire {
                framed: true,
                protocol: Protocol::Compact
            }
        );
        let non_strict = [0, 0, 0, 6, b'g'];
        assert_eq!(
            detect_wire(&non_strict).unwrap(),
            Wire {
                framed: false,
                protocol: Protocol::Binary { strict: false }
            }
        );
        assert!(detect_wire(b"GET /").is_none());
    }

    #[test]
    fn huge_lengths_allocate_nothing() {
        // A list claiming two billion elements in a 12-byte buffer.
        let mut buf = BytesMut::new();
        buf.put_u32(0x8001_0001);
        buf.put_i32(1);
        buf.put_u8(b'x');
        buf.put_i32(0);
        buf.put_u8(15);
        buf.put_i16(1);
        buf.put_u8(11);
        buf.put_i32(2_000_000_000);
        let bytes = buf.freeze();
        match decode_message(Protocol::Binary { strict: true }, &bytes) {
            Err((Some(_), DecodeError::Incomplete { needed })) => assert!(needed > 2_000_000_000),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn deep_nesting_is_rejected() {
        let mut buf = BytesMut::new();
        buf.put_u32(0x8001_0001);
        buf.put_i32(1);
        buf.put_u8(b'x');
        buf.put_i32(0);
        for _ in 0..200 {
            buf.put_u8(12);
            buf.put_i16(1);
        }
        let bytes = buf.freeze();
        match decode_message(Protocol::Binary { strict: true }, &bytes) {
            Err((Some(_), DecodeError::Invalid(m))) => assert!(m.contains("nesting")),
            other => panic!("{other:?}"),
        }
    }
    #[test]
    fn the_scanner_finds_each_message_end_and_examines_each_byte_about_once() {
        for protocol in EVERY_PROTOCOL {
            let (header, bytes) = sample_call(protocol, "mutateRows", 9);
            // Whole at once.
            let mut scanner = MessageScanner::new(protocol);
            assert_eq!(
                scanner.advance(&bytes).unwrap(),
                Scanned::Complete(bytes.len())
            );
            assert_eq!(scanner.header(), Some(&header));
            let decoded = decode_message_within(protocol, &bytes, usize::MAX).unwrap();
            assert_eq!(scanner.cost(), decoded.cost, "{protocol:?}");
            // One byte at a time: incomplete until the last byte, and the
            // work stays a small multiple of the size.
            let mut scanner = MessageScanner::new(protocol);
            for cut in 1..bytes.len() {
                match scanner.advance(&bytes[..cut]).unwrap() {
                    Scanned::Incomplete { needed } => assert!(needed > cut),
                    other => panic!("{protocol:?} cut at {cut}: {other:?}"),
                }
            }
            assert_eq!(
                scanner.advance(&bytes).unwrap(),
                Scanned::Complete(bytes.len())
            );
            assert!(
                scanner.examined() <= 8 * bytes.len() as u64,
                "{protocol:?}: examined {} for {} bytes",
                scanner.examined(),
                bytes.len()
            );
        }
    }

    #[test]
    fn the_scanner_rejects_what_the_decoder_rejects() {
        let mut buf = BytesMut::new();
        buf.put_u32(0x8001_0001);
        buf.put_i32(1);
        buf.put_u8(b'x');
        buf.put_i32(0);
        for _ in 0..200 {
            buf.put_u8(12);
            buf.put_i16(1);
        }
        let mut scanner = MessageScanner::new(Protocol::Binary { strict: true });
        match scanner.advance(&buf) {
            Err(DecodeError::Invalid(m)) => assert!(m.contains("nesting"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn many_tiny_elements_stop_at_the_decoding_limit() {
        // A list of 100 000 one-byte values: 100 KB on the wire, 4 MB as
        // values.
        let mut buf = BytesMut::new();
        buf.put_u32(0x8001_0001);
        buf.put_i32(1);
        buf.put_u8(b'x');
        buf.put_i32(0);
        buf.put_u8(15);
        buf.put_i16(1);
        buf.put_u8(3);
        buf.put_i32(100_000);
        buf.put_slice(&[7u8; 100_000]);
        buf.put_u8(0);
        let protocol = Protocol::Binary { strict: true };
        match decode_message_within(protocol, &buf, 1_000_000) {
            Err((Some(_), DecodeError::Invalid(m))) => assert!(m.contains("memory"), "{m}"),
            other => panic!("{other:?}"),
        }
        let whole = decode_message_within(protocol, &buf, usize::MAX).unwrap();
        assert!(whole.cost >= 100_000 * VALUE_SLOT, "{}", whole.cost);
        assert!(whole.cost <= 2 * 100_000 * VALUE_SLOT, "{}", whole.cost);
    }
}
