//! The bytes of a WAL segment: segment header, record framing and the
//! payload encoding of one [`WalEdit`]. `docs/wal-format.md` is the
//! normative description; keep the two in step.
//!
//! Decoding never trusts a length it reads: every length is checked against
//! the bytes that are actually left before anything is sliced or allocated,
//! so a damaged file yields an error message, never a panic or a huge
//! allocation.

use basalt_types::{Cell, CellType, Error, Result};
use bytes::Bytes;

use super::WalEdit;
use crate::coding::{self, put_u64_le, put_varint, set_u32_le, set_u64_le};

/// First eight bytes of every segment file.
pub(crate) const SEGMENT_MAGIC: [u8; 8] = *b"BASALTWL";

/// Version of the segment layout written by this code. Readers reject any
/// other version rather than guess.
pub const FORMAT_VERSION: u32 = 1;

/// Size of the segment header: magic, version, segment id, checksum.
pub(crate) const SEGMENT_HEADER_LEN: usize = 24;

/// Size of the header in front of every record: payload length, payload
/// checksum, header checksum.
pub(crate) const RECORD_HEADER_LEN: usize = 12;

/// Largest payload a record may have. The writer refuses bigger edits and
/// the reader treats a bigger length as corruption, so a damaged length
/// field can never make replay allocate more than this.
pub const MAX_RECORD_PAYLOAD: usize = 256 << 20;

/// Payload kind: one row mutation of one region. The kind byte leaves room
/// for other record kinds (region open/close or flush markers) without a
/// new segment format version.
const KIND_ROW_MUTATION: u8 = 1;

/// Smallest possible encoding of one cell: three empty length-prefixed
/// fields (one byte each), the timestamp and the type code. Used to reject
/// cell counts that cannot fit in the remaining payload before allocating.
const MIN_CELL_LEN: usize = 1 + 1 + 8 + 1 + 1;

/// Set in a cell's type byte when the cell carries its own TTL: an 8-byte
/// little-endian count of milliseconds follows the type byte. No type
/// code uses this bit, and logs written before it existed never set it.
const TTL_FLAG: u8 = 0x80;

/// The header of segment `id`.
pub(crate) fn encode_segment_header(id: u64) -> [u8; SEGMENT_HEADER_LEN] {
    let mut h = [0u8; SEGMENT_HEADER_LEN];
    h[0..8].copy_from_slice(&SEGMENT_MAGIC);
    set_u32_le(&mut h, 8, FORMAT_VERSION);
    set_u64_le(&mut h, 12, id);
    let crc = crc32c::crc32c(&h[0..20]);
    set_u32_le(&mut h, 20, crc);
    h
}

/// Checks a segment header read from the file named for segment
/// `expected_id`; the error is a message for [`Error::Corruption`].
pub(crate) fn check_segment_header(
    h: &[u8; SEGMENT_HEADER_LEN],
    expected_id: u64,
) -> std::result::Result<(), String> {
    if h[0..8] != SEGMENT_MAGIC {
        return Err("bad segment magic: not a Basalt WAL segment".to_string());
    }
    let crc = coding::u32_le(h, 20, "segment header checksum")?;
    if crc32c::crc32c(&h[0..20]) != crc {
        return Err("segment header checksum mismatch".to_string());
    }
    let version = coding::u32_le(h, 8, "segment format version")?;
    if version != FORMAT_VERSION {
        return Err(format!(
            "unsupported WAL format version {version} (this build reads {FORMAT_VERSION})"
        ));
    }
    let id = coding::u64_le(h, 12, "segment id")?;
    if id != expected_id {
        return Err(format!(
            "segment header names segment {id} but the file name says {expected_id}"
        ));
    }
    Ok(())
}

/// A record header whose own checksum matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordHeader {
    /// Payload length in bytes (not yet checked against
    /// [`MAX_RECORD_PAYLOAD`]).
    pub len: u32,
    /// crc32c of the payload.
    pub payload_crc: u32,
}

/// Parses a record header; `None` when its checksum does not match, which
/// means the length cannot be trusted.
pub(crate) fn decode_record_header(h: &[u8; RECORD_HEADER_LEN]) -> Option<RecordHeader> {
    // The array type fixes the length, so none of these reads can fail.
    let field = |at| coding::u32_le(h, at, "record header").ok();
    if crc32c::crc32c(&h[0..8]) != field(8)? {
        return None;
    }
    Some(RecordHeader {
        len: field(0)?,
        payload_crc: field(4)?,
    })
}

/// Appends one framed record (header and payload) for `edit` to `out`.
///
/// Fails with [`Error::InvalidArgument`] when the cells are not all in one
/// row or the payload would exceed [`MAX_RECORD_PAYLOAD`]; `out` is left as
/// it was in that case.
pub(crate) fn encode_record(edit: &WalEdit, out: &mut Vec<u8>) -> Result<()> {
    let row: &[u8] = edit.cells.first().map_or(&[][..], |c| &c.row[..]);
    if let Some(other) = edit.cells.iter().find(|c| c.row[..] != *row) {
        return Err(Error::invalid(format!(
            "a WAL edit must stay in one row: '{}' and '{}'",
            basalt_types::cell::escape_bytes(row),
            basalt_types::cell::escape_bytes(&other.row)
        )));
    }

    let start = out.len();
    out.extend_from_slice(&[0u8; RECORD_HEADER_LEN]);
    let payload_start = out.len();
    out.push(KIND_ROW_MUTATION);
    put_u64_le(out, edit.region_id);
    put_u64_le(out, edit.sequence_id);
    put_bytes(out, row);
    put_varint(out, edit.cells.len() as u64);
    for cell in &edit.cells {
        put_bytes(out, &cell.family);
        put_bytes(out, &cell.qualifier);
        put_u64_le(out, cell.timestamp as u64);
        match cell.ttl_millis {
            None => out.push(cell.cell_type.code()),
            Some(ttl) => {
                out.push(cell.cell_type.code() | TTL_FLAG);
                put_u64_le(out, ttl);
            }
        }
        put_bytes(out, &cell.value);
    }

    let payload_len = out.len() - payload_start;
    if payload_len > MAX_RECORD_PAYLOAD {
        out.truncate(start);
        return Err(Error::invalid(format!(
            "WAL edit encodes to {payload_len} bytes; the limit is {MAX_RECORD_PAYLOAD}"
        )));
    }
    // Fits: MAX_RECORD_PAYLOAD < u32::MAX.
    let len = payload_len as u32;
    let payload_crc = crc32c::crc32c(&out[payload_start..]);
    let header = &mut out[start..payload_start];
    set_u32_le(header, 0, len);
    set_u32_le(header, 4, payload_crc);
    let header_crc = crc32c::crc32c(&header[0..8]);
    set_u32_le(header, 8, header_crc);
    Ok(())
}

/// Decodes a payload whose checksum already matched. Cells share the
/// payload's buffer (no copies); each gets the record's row and sequence id.
/// The error is a message for [`Error::Corruption`].
pub(crate) fn decode_payload(payload: Bytes) -> std::result::Result<WalEdit, String> {
    let mut r = Decoder {
        buf: payload,
        pos: 0,
    };
    let kind = r.u8("record kind")?;
    if kind != KIND_ROW_MUTATION {
        return Err(format!("unknown record kind {kind}"));
    }
    let region_id = r.u64("region id")?;
    let sequence_id = r.u64("sequence id")?;
    let row = r.bytes("row")?;
    let count = r.varint("cell count")?;
    let room = (r.remaining() / MIN_CELL_LEN) as u64;
    if count > room {
        return Err(format!(
            "cell count {count} cannot fit in the {} payload bytes left",
            r.remaining()
        ));
    }
    // Bounded by the check above: at most payload length / MIN_CELL_LEN.
    let mut cells = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let family = r.bytes("family")?;
        let qualifier = r.bytes("qualifier")?;
        let timestamp = r.u64("timestamp")? as i64;
        let code = r.u8("cell type")?;
        let ttl_millis = if code & TTL_FLAG != 0 {
            Some(r.u64("cell TTL")?)
        } else {
            None
        };
        let code = code & !TTL_FLAG;
        let cell_type =
            CellType::from_code(code).ok_or_else(|| format!("unknown cell type code {code}"))?;
        let value = r.bytes("value")?;
        cells.push(Cell {
            row: row.clone(),
            family,
            qualifier,
            timestamp,
            cell_type,
            sequence_id,
            value,
            ttl_millis,
        });
    }
    if r.remaining() != 0 {
        return Err(format!(
            "{} unexpected bytes after the last cell",
            r.remaining()
        ));
    }
    Ok(WalEdit {
        region_id,
        sequence_id,
        cells,
    })
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Cursor over a payload. Invariant: `pos <= buf.len()`; every method checks
/// the bytes it needs against `remaining()` before touching them.
struct Decoder {
    buf: Bytes,
    pos: usize,
}

impl Decoder {
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize, what: &str) -> std::result::Result<&[u8], String> {
        if n > self.remaining() {
            return Err(format!(
                "{what} needs {n} bytes but only {} are left in the payload",
                self.remaining()
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> std::result::Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }

    fn u64(&mut self, what: &str) -> std::result::Result<u64, String> {
        let v = coding::u64_le(&self.buf, self.pos, what)?;
        self.pos += 8;
        Ok(v)
    }

    fn varint(&mut self, what: &str) -> std::result::Result<u64, String> {
        coding::get_varint(&self.buf, &mut self.pos).map_err(|m| format!("{what}: {m}"))
    }

    fn bytes(&mut self, what: &str) -> std::result::Result<Bytes, String> {
        let len = self.varint(what)?;
        if len > self.remaining() as u64 {
            return Err(format!(
                "{what} length {len} exceeds the {} payload bytes left",
                self.remaining()
            ));
        }
        let len = len as usize;
        let b = self.buf.slice(self.pos..self.pos + len);
        self.pos += len;
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cell(row: &[u8], fam: &[u8], q: &[u8], ts: i64, t: CellType, seq: u64, v: &[u8]) -> Cell {
        Cell {
            row: Bytes::copy_from_slice(row),
            family: Bytes::copy_from_slice(fam),
            qualifier: Bytes::copy_from_slice(q),
            timestamp: ts,
            cell_type: t,
            sequence_id: seq,
            value: Bytes::copy_from_slice(v),
            ttl_millis: None,
        }
    }

    /// Splits a framed record into checked header and payload.
    fn unframe(rec: &[u8]) -> (RecordHeader, Bytes) {
        let mut h = [0u8; RECORD_HEADER_LEN];
        h.copy_from_slice(&rec[..RECORD_HEADER_LEN]);
        let header = decode_record_header(&h).expect("header checksum");
        let payload = Bytes::copy_from_slice(&rec[RECORD_HEADER_LEN..]);
        assert_eq!(header.len as usize, payload.len());
        assert_eq!(header.payload_crc, crc32c::crc32c(&payload));
        (header, payload)
    }

    #[test]
    fn record_round_trip_all_cell_types() {
        let seq = 77;
        let edit = WalEdit {
            region_id: u64::MAX,
            sequence_id: seq,
            cells: vec![
                cell(b"r\x00\xff", b"f", b"q", 5, CellType::Put, seq, b"value"),
                cell(b"r\x00\xff", b"f", b"", 0, CellType::DeleteFamily, seq, b""),
                cell(
                    b"r\x00\xff",
                    b"g",
                    b"q",
                    i64::MAX,
                    CellType::Delete,
                    seq,
                    b"",
                ),
                cell(
                    b"r\x00\xff",
                    b"g",
                    b"q2",
                    -1,
                    CellType::DeleteColumn,
                    seq,
                    b"",
                ),
                cell(
                    b"r\x00\xff",
                    b"g",
                    b"",
                    i64::MIN,
                    CellType::DeleteFamilyVersion,
                    seq,
                    &[7u8; 300],
                ),
            ],
        };
        let mut rec = Vec::new();
        encode_record(&edit, &mut rec).unwrap();
        let (_, payload) = unframe(&rec);
        assert_eq!(decode_payload(payload).unwrap(), edit);
    }

    #[test]
    fn decoding_assigns_row_and_sequence_to_every_cell() {
        let edit = WalEdit {
            region_id: 1,
            sequence_id: 9,
            cells: vec![cell(b"row", b"f", b"q", 1, CellType::Put, 0, b"v")],
        };
        let mut rec = Vec::new();
        encode_record(&edit, &mut rec).unwrap();
        let (_, payload) = unframe(&rec);
        let back = decode_payload(payload).unwrap();
        assert_eq!(back.cells[0].sequence_id, 9);
        assert_eq!(&back.cells[0].row[..], b"row");
    }

    #[test]
    fn empty_edit_round_trips() {
        let edit = WalEdit {
            region_id: 3,
            sequence_id: 4,
            cells: vec![],
        };
        let mut rec = Vec::new();
        encode_record(&edit, &mut rec).unwrap();
        let (_, payload) = unframe(&rec);
        assert_eq!(decode_payload(payload).unwrap(), edit);
    }

    #[test]
    fn cells_of_different_rows_are_refused() {
        let edit = WalEdit {
            region_id: 1,
            sequence_id: 1,
            cells: vec![
                cell(b"a", b"f", b"q", 1, CellType::Put, 1, b""),
                cell(b"b", b"f", b"q", 1, CellType::Put, 1, b""),
            ],
        };
        let mut rec = vec![1, 2, 3];
        let err = encode_record(&edit, &mut rec).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert_eq!(rec, vec![1, 2, 3]);
    }

    #[test]
    fn segment_header_checks() {
        let h = encode_segment_header(42);
        assert_eq!(check_segment_header(&h, 42), Ok(()));
        assert!(check_segment_header(&h, 43)
            .unwrap_err()
            .contains("file name"));
        let mut bad = h;
        bad[0] ^= 1;
        assert!(check_segment_header(&bad, 42)
            .unwrap_err()
            .contains("magic"));
        let mut bad = h;
        bad[13] ^= 1;
        assert!(check_segment_header(&bad, 42)
            .unwrap_err()
            .contains("checksum"));
        // A well-formed header of a future version is refused by version.
        let mut future = h;
        future[8..12].copy_from_slice(&2u32.to_le_bytes());
        let crc = crc32c::crc32c(&future[0..20]);
        future[20..24].copy_from_slice(&crc.to_le_bytes());
        assert!(check_segment_header(&future, 42)
            .unwrap_err()
            .contains("version 2"));
    }

    #[test]
    fn damaged_record_header_is_detected() {
        let edit = WalEdit {
            region_id: 1,
            sequence_id: 1,
            cells: vec![cell(b"a", b"f", b"q", 1, CellType::Put, 1, b"v")],
        };
        let mut rec = Vec::new();
        encode_record(&edit, &mut rec).unwrap();
        for i in 0..RECORD_HEADER_LEN {
            let mut h = [0u8; RECORD_HEADER_LEN];
            h.copy_from_slice(&rec[..RECORD_HEADER_LEN]);
            h[i] ^= 0x10;
            assert_eq!(decode_record_header(&h), None, "byte {i}");
        }
    }

    #[test]
    fn malformed_payloads_are_errors() {
        // Unknown kind.
        assert!(decode_payload(Bytes::from_static(&[9]))
            .unwrap_err()
            .contains("kind"));
        // Truncated fixed fields.
        assert!(decode_payload(Bytes::from_static(&[1, 0, 0])).is_err());
        // Cell count far beyond what fits.
        let mut p = vec![1u8];
        p.extend_from_slice(&[0u8; 16]);
        p.push(0); // empty row
        put_varint(&mut p, u64::MAX);
        assert!(decode_payload(Bytes::from(p))
            .unwrap_err()
            .contains("count"));
        // Over-long varint.
        let mut p = vec![1u8];
        p.extend_from_slice(&[0u8; 16]);
        p.extend_from_slice(&[0xff; 11]);
        assert!(decode_payload(Bytes::from(p))
            .unwrap_err()
            .contains("varint"));
        // Row length beyond payload.
        let mut p = vec![1u8];
        p.extend_from_slice(&[0u8; 16]);
        put_varint(&mut p, 1 << 40);
        assert!(decode_payload(Bytes::from(p)).unwrap_err().contains("row"));
        // Bad cell type.
        let edit = WalEdit {
            region_id: 1,
            sequence_id: 1,
            cells: vec![cell(b"a", b"f", b"q", 1, CellType::Put, 1, b"v")],
        };
        let mut rec = Vec::new();
        encode_record(&edit, &mut rec).unwrap();
        let mut payload = rec[RECORD_HEADER_LEN..].to_vec();
        // kind, region, seq, row(2), count(1), family(2), qualifier(2), ts(8): type code next.
        let type_at = 1 + 8 + 8 + 2 + 1 + 2 + 2 + 8;
        assert_eq!(payload[type_at], CellType::Put.code());
        payload[type_at] = 5;
        assert!(decode_payload(Bytes::from(payload.clone()))
            .unwrap_err()
            .contains("cell type"));
        // Trailing garbage.
        payload[type_at] = CellType::Put.code();
        payload.push(0);
        assert!(decode_payload(Bytes::from(payload))
            .unwrap_err()
            .contains("unexpected"));
    }

    fn arb_cell_type() -> impl Strategy<Value = CellType> {
        prop_oneof![
            Just(CellType::Put),
            Just(CellType::Delete),
            Just(CellType::DeleteFamilyVersion),
            Just(CellType::DeleteColumn),
            Just(CellType::DeleteFamily),
        ]
    }

    fn arb_edit() -> impl Strategy<Value = WalEdit> {
        let cell = (
            proptest::collection::vec(any::<u8>(), 0..8),
            proptest::collection::vec(any::<u8>(), 0..12),
            any::<i64>(),
            arb_cell_type(),
            proptest::collection::vec(any::<u8>(), 0..200),
            proptest::option::of(any::<u64>()),
        );
        (
            any::<u64>(),
            any::<u64>(),
            proptest::collection::vec(any::<u8>(), 0..40),
            proptest::collection::vec(cell, 0..8),
        )
            .prop_map(|(region_id, sequence_id, row, cells)| WalEdit {
                region_id,
                sequence_id,
                cells: cells
                    .into_iter()
                    .map(|(f, q, ts, t, v, ttl)| Cell {
                        row: Bytes::from(row.clone()),
                        family: Bytes::from(f),
                        qualifier: Bytes::from(q),
                        timestamp: ts,
                        cell_type: t,
                        sequence_id,
                        value: Bytes::from(v),
                        ttl_millis: ttl,
                    })
                    .collect(),
            })
    }

    proptest! {
        #[test]
        fn prop_round_trip(edit in arb_edit()) {
            let mut rec = Vec::new();
            encode_record(&edit, &mut rec).unwrap();
            let (_, payload) = unframe(&rec);
            prop_assert_eq!(decode_payload(payload).unwrap(), edit);
        }

        /// Any prefix or any single-byte change of a valid payload decodes
        /// to an error or to some edit, never a panic.
        #[test]
        fn prop_damaged_payload_never_panics(
            edit in arb_edit(),
            cut in any::<proptest::sample::Index>(),
            flip in any::<proptest::sample::Index>(),
            mask in 1u8..,
        ) {
            let mut rec = Vec::new();
            encode_record(&edit, &mut rec).unwrap();
            let payload = rec[RECORD_HEADER_LEN..].to_vec();
            let cut_at = cut.index(payload.len() + 1);
            let _ = decode_payload(Bytes::copy_from_slice(&payload[..cut_at]));
            let mut flipped = payload.clone();
            let at = flip.index(flipped.len());
            flipped[at] ^= mask;
            let _ = decode_payload(Bytes::from(flipped));
        }

        #[test]
        fn prop_random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_payload(Bytes::from(data));
        }
    }
}
