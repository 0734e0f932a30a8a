//! Garbage input never panics the Thrift protocol decoder, and never makes
//! it allocate more than a small multiple of the input.
//!
//! Every protocol (binary strict, binary non-strict, compact) and both
//! transports (framed: a 4-byte big-endian length first; buffered: the
//! message alone) get arbitrary bytes and mutated valid messages (bytes
//! flipped, inserted, deleted, or the tail cut off). The bytes go through
//! what the server does with a connection's first bytes: `detect_wire`,
//! then the frame length when framed, then `decode_message` and, for a
//! broken body, `decode_header`. A case passes when that yields a message
//! or an error without panicking, and the most bytes allocated at once stay
//! under [`FACTOR`] times the input plus [`CONSTANT`], measured by the
//! counting global allocator of this test binary.
//!
//! Failing cases are persisted in `garbage_input.proptest-regressions`
//! beside this file; commit that file when it appears.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use basalt_thrift::protocol::{
    decode_header, decode_message, detect_wire, encode_message, MessageHeader, MessageType, TType,
    Value,
};
use basalt_thrift::Protocol;

// The proptest settings, the counting global allocator, the bound check
// and the byte mutations are shared by every crate's garbage-input test.
#[path = "../../../test-support/garbage.rs"]
mod garbage;
use garbage::{arb_mutations, check_bounded, config, mutate, peak_while};
/// A decoded value tree costs more than its encoding: a one-byte compact
/// bool field becomes a 40-byte `(i16, Value)`, and vectors grow by
/// doubling. 128 covers both (at most 64 bytes per element, twice over).
const FACTOR: usize = 128;
/// What does not grow with the input: a declared element count is trusted
/// for at most 16 elements up front (of at most 64 bytes each) at each of
/// the at most 64 nesting levels, 64 KiB in all, plus error messages.
const CONSTANT: usize = 96 << 10;

const PROTOCOLS: [Protocol; 3] = [
    Protocol::Binary { strict: true },
    Protocol::Binary { strict: false },
    Protocol::Compact,
];

/// Values that survive a round trip in every protocol: finite doubles,
/// typed containers whose elements match their declared type, no empty
/// maps (binary writers may leave their types at zero).
fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        any::<i8>().prop_map(Value::Byte),
        any::<i16>().prop_map(Value::I16),
        any::<i32>().prop_map(Value::I32),
        any::<i64>().prop_map(Value::I64),
        (-1e9f64..1e9).prop_map(Value::Double),
        proptest::collection::vec(any::<u8>(), 0..12).prop_map(|b| Value::Binary(Bytes::from(b))),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec((any::<i16>(), inner.clone()), 0..6).prop_map(Value::Struct),
            proptest::collection::vec(any::<i32>(), 0..8)
                .prop_map(|v| Value::List(TType::I32, v.into_iter().map(Value::I32).collect())),
            proptest::collection::vec(any::<bool>(), 0..8)
                .prop_map(|v| Value::Set(TType::Bool, v.into_iter().map(Value::Bool).collect())),
            proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| {
                Value::List(
                    TType::Struct,
                    v.into_iter().map(|x| Value::Struct(vec![(1, x)])).collect(),
                )
            }),
            proptest::collection::vec((any::<i64>(), inner), 1..4).prop_map(|v| {
                Value::Map(
                    TType::I64,
                    TType::Struct,
                    v.into_iter()
                        .map(|(k, x)| (Value::I64(k), Value::Struct(vec![(2, x)])))
                        .collect(),
                )
            }),
        ]
    })
}

fn arb_message() -> impl Strategy<Value = (MessageHeader, Value)> {
    let kind = prop_oneof![
        Just(MessageType::Call),
        Just(MessageType::Reply),
        Just(MessageType::Exception),
        Just(MessageType::Oneway),
    ];
    (
        "[a-zA-Z]{1,12}",
        kind,
        any::<i32>(),
        proptest::collection::vec((any::<i16>(), arb_value()), 0..6),
    )
        .prop_map(|(name, kind, seqid, fields)| {
            (MessageHeader { name, kind, seqid }, Value::Struct(fields))
        })
}

fn arb_protocol() -> impl Strategy<Value = Protocol> {
    proptest::sample::select(PROTOCOLS.to_vec())
}

fn encode(protocol: Protocol, header: &MessageHeader, body: &Value, framed: bool) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode_message(protocol, header, body, &mut out);
    if framed {
        let mut framed = (out.len() as u32).to_be_bytes().to_vec();
        framed.extend_from_slice(&out);
        framed
    } else {
        out.to_vec()
    }
}

/// What the server does with the first message of a connection whose
/// first bytes are `buf`, when `wire` is `None`; with a known wire (a later
/// message of the connection) it skips detection.
fn serve_decode(buf: &[u8], known: Option<(Protocol, bool)>) -> Option<(MessageHeader, Value)> {
    let (protocol, framed) = match known {
        Some(k) => k,
        None => {
            let first: [u8; 5] = buf.get(..5)?.try_into().ok()?;
            let wire = detect_wire(&first)?;
            (wire.protocol, wire.framed)
        }
    };
    let message = if framed {
        let len = u32::from_be_bytes(buf.get(..4)?.try_into().ok()?) as usize;
        buf.get(4..4usize.checked_add(len)?)?
    } else {
        buf
    };
    match decode_message(protocol, message) {
        Ok((header, body, _)) => Some((header, body)),
        Err((header, _)) => {
            // The server answers a broken body by the header, read again.
            let _ = header.or_else(|| decode_header(protocol, message).ok());
            None
        }
    }
}

/// Decodes `buf` by detection and by every protocol and transport,
/// checking the allocation bound of each.
fn decode_every_way(buf: &[u8]) {
    let mut ways: Vec<Option<(Protocol, bool)>> = vec![None];
    for p in PROTOCOLS {
        ways.push(Some((p, false)));
        ways.push(Some((p, true)));
    }
    for way in ways {
        let (_, peak) = peak_while(|| serve_decode(buf, way));
        check_bounded(&format!("{way:?}"), peak, buf.len(), FACTOR, CONSTANT);
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn valid_messages_decode_by_detection_and_round_trip(
        (header, body) in arb_message(),
        protocol in arb_protocol(),
        framed in any::<bool>(),
    ) {
        let bytes = encode(protocol, &header, &body, framed);
        let (_, peak) = peak_while(|| serve_decode(&bytes, Some((protocol, framed))));
        check_bounded("valid message", peak, bytes.len(), FACTOR, CONSTANT);
        prop_assert_eq!(serve_decode(&bytes, Some((protocol, framed))), Some((header.clone(), body.clone())));
        // Detection can only tell a non-strict binary message from a
        // framed one by the name's first letter, which ours always has.
        prop_assert_eq!(serve_decode(&bytes, None), Some((header, body)));
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_thrift_decoder(
        data in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        decode_every_way(&data);
    }

    #[test]
    fn mutated_thrift_messages_decode_or_fail_cleanly(
        (header, body) in arb_message(),
        protocol in arb_protocol(),
        framed in any::<bool>(),
        mutations in arb_mutations(),
    ) {
        let mut bytes = encode(protocol, &header, &body, framed);
        mutate(&mut bytes, &mutations);
        decode_every_way(&bytes);
    }
}

/// Nested containers that each declare as many elements as bytes remain:
/// trusting those counts up front would reserve room for all of them at
/// every level at once.
fn nested_overclaiming_lists(protocol: Protocol, depth: usize, tail: usize) -> Vec<u8> {
    let header = MessageHeader {
        name: "m".into(),
        kind: MessageType::Call,
        seqid: 1,
    };
    let mut out = BytesMut::new();
    encode_message(protocol, &header, &Value::Struct(vec![]), &mut out);
    // Drop the empty struct's stop byte; open field 1 as a list instead.
    let mut bytes = out.to_vec();
    bytes.pop();
    // Every count is below the bytes that follow, so none is refused as
    // incomplete before its list is started.
    let count = tail;
    match protocol {
        Protocol::Binary { .. } => {
            bytes.extend_from_slice(&[15, 0, 1]);
            for _ in 0..depth {
                bytes.push(15); // element type: list
                bytes.extend_from_slice(&(count as i32).to_be_bytes());
            }
        }
        Protocol::Compact => {
            bytes.push(0x19); // field delta 1, type list
            for _ in 0..depth {
                bytes.push(0xf9); // long count form, element type list
                let mut n = count as u64;
                while n >= 0x80 {
                    bytes.push((n as u8) | 0x80);
                    n >>= 7;
                }
                bytes.push(n as u8);
            }
        }
    }
    bytes.resize(bytes.len() + tail, 0xff);
    bytes
}

#[test]
fn nested_lists_that_overclaim_their_counts_allocate_little() {
    for protocol in PROTOCOLS {
        let bytes = nested_overclaiming_lists(protocol, 63, 20_000);
        let (decoded, peak) = peak_while(|| decode_message(protocol, &bytes).is_ok());
        assert!(!decoded);
        check_bounded(&format!("{protocol:?}"), peak, bytes.len(), 2, CONSTANT);
    }
}

/// Every Thrift2 argument struct's decoder on one body: a struct or an
/// error naming the field, never a panic.
fn decode_as_every_thrift2_call(body: &Value) {
    use basalt_thrift::thrift2::types::args;
    use basalt_thrift::types::Thrift;
    fn one<T: Thrift>(body: &Value) {
        let _ = T::from_value(body.clone());
    }
    one::<args::TableGet>(body);
    one::<args::TableGets>(body);
    one::<args::Put>(body);
    one::<args::PutMultiple>(body);
    one::<args::DeleteSingle>(body);
    one::<args::DeleteMultiple>(body);
    one::<args::CheckAndPut>(body);
    one::<args::CheckAndDelete>(body);
    one::<args::CheckAndMutate>(body);
    one::<args::Increment>(body);
    one::<args::Append>(body);
    one::<args::MutateRow>(body);
    one::<args::OpenScanner>(body);
    one::<args::GetScannerRows>(body);
    one::<args::GetScannerResults>(body);
    one::<args::GetRegionLocation>(body);
    one::<args::TableName>(body);
    one::<args::TableNames>(body);
    one::<args::Pattern>(body);
    one::<args::CreateTable>(body);
    one::<args::ModifyTable>(body);
    one::<args::TruncateTable>(body);
    one::<args::TableWithSplits>(body);
    one::<args::Family>(body);
    one::<args::FamilyName>(body);
    one::<args::Namespace>(body);
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn thrift2_struct_decoders_take_arbitrary_values_without_panicking(
        fields in proptest::collection::vec((1i16..4, arb_value()), 0..4),
    ) {
        decode_as_every_thrift2_call(&Value::Struct(fields));
    }

    #[test]
    fn thrift2_struct_decoders_take_garbage_bytes_without_panicking(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
        protocol in arb_protocol(),
    ) {
        if let Ok((_, body, _)) = decode_message(protocol, &bytes) {
            decode_as_every_thrift2_call(&body);
        }
    }
}
