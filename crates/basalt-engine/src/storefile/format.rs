//! The byte-level pieces of a store file: varints, the encoded cell key,
//! block framing with its checksum, block handles and the trailer.
//! `docs/store-file-format.md` is the normative description; keep the two
//! in step.
//!
//! Decoding never trusts a length it reads: every length is checked against
//! the bytes actually present before anything is sliced or allocated.

use std::cmp::Ordering;

use basalt_types::{Cell, CellType};

use super::compression;
use crate::coding::{self, put_u32_le, put_u64_be, set_u32_le, set_u64_le};

/// Last eight bytes of every store file.
pub const MAGIC: [u8; 8] = *b"BASALTSF";

/// Version of the layout written by this code; readers reject others.
pub const FORMAT_VERSION: u32 = 1;

/// Size of the fixed trailer at the end of the file.
pub const TRAILER_LEN: usize = 64;

/// Block header: kind, codec, reserved, uncompressed length, stored length.
pub(crate) const BLOCK_HEADER_LEN: usize = 12;

/// Header plus the trailing checksum: what a block costs beyond its payload.
pub(crate) const BLOCK_OVERHEAD: usize = BLOCK_HEADER_LEN + 4;

/// Largest uncompressed block payload. The writer refuses a cell that
/// would need a bigger block; a reader treats a bigger length as
/// corruption, so damage can never make it allocate more than this.
pub const MAX_BLOCK_LEN: usize = 512 << 20;

/// Bytes of an encoded key after the row and qualifier: timestamp (8),
/// type (1), sequence id (8).
pub(crate) const KEY_SUFFIX_LEN: usize = 17;

/// What a block holds; stored in its header so a handle pointing at the
/// wrong kind of block is caught.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum BlockKind {
    Data = 1,
    LeafIndex = 2,
    RootIndex = 3,
    Bloom = 4,
    BloomIndex = 5,
    Meta = 6,
}

impl BlockKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            BlockKind::Data => "data",
            BlockKind::LeafIndex => "leaf index",
            BlockKind::RootIndex => "root index",
            BlockKind::Bloom => "bloom",
            BlockKind::BloomIndex => "bloom index",
            BlockKind::Meta => "meta",
        }
    }
}

/// Where a block is: its offset and its size on disk (framing included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BlockHandle {
    pub offset: u64,
    pub size: u32,
}

// ---------------------------------------------------------------------------
// A bounds-checked decoder over the shared byte coding
// ---------------------------------------------------------------------------

pub(crate) use crate::coding::put_varint;

/// Reads fields out of a byte slice; every read checks what is left.
/// Errors are messages for `Error::Corruption`.
#[derive(Debug)]
pub(crate) struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

pub(crate) type DecodeResult<T> = std::result::Result<T, String>;

impl<'a> Decoder<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }

    pub(crate) fn at(buf: &'a [u8], pos: usize) -> Self {
        Decoder { buf, pos }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> DecodeResult<u64> {
        coding::get_varint(self.buf, &mut self.pos)
    }

    /// A varint that must fit in `usize` and be at most `max`.
    #[inline]
    pub(crate) fn len(&mut self, max: usize, what: &str) -> DecodeResult<usize> {
        let v = self.varint()?;
        usize::try_from(v)
            .ok()
            .filter(|&n| n <= max)
            .ok_or_else(|| format!("{what} {v} out of bounds (at most {max})"))
    }

    pub(crate) fn bytes(&mut self, n: usize) -> DecodeResult<&'a [u8]> {
        if n > self.remaining() {
            return Err(format!(
                "field of {n} bytes runs past the end ({} left)",
                self.remaining()
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
}

// ---------------------------------------------------------------------------
// Encoded keys
// ---------------------------------------------------------------------------

/// Appends a cell's encoded key: `row ++ qualifier ++ timestamp (8, big
/// endian) ++ type (1) ++ sequence id (8, big endian)`. The row length
/// travels separately. Big endian puts the high, slowly changing bytes
/// first, which is what prefix compression shares between neighbours.
pub(crate) fn encode_key(cell: &Cell, out: &mut Vec<u8>) {
    out.extend_from_slice(&cell.row);
    out.extend_from_slice(&cell.qualifier);
    put_u64_be(out, cell.timestamp as u64);
    let flag = if cell.ttl_millis.is_some() {
        TTL_FLAG
    } else {
        0
    };
    out.push(cell.cell_type.code() | flag);
    put_u64_be(out, cell.sequence_id);
}

/// Set in a key's type byte when the cell carries its own TTL; its value
/// area then starts with the TTL (8 bytes, big endian, milliseconds). No
/// type code uses this bit, and files written before it existed never set
/// it, so they read as before.
pub(crate) const TTL_FLAG: u8 = 0x80;

/// A decoded key borrowing from a block (the family is the file's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyRef<'a> {
    pub row: &'a [u8],
    pub qualifier: &'a [u8],
    pub timestamp: i64,
    pub cell_type: CellType,
    pub sequence_id: u64,
    /// The cell carries its own TTL (in front of its value).
    pub has_ttl: bool,
}

/// Splits an encoded key whose row is `row_len` bytes long.
pub(crate) fn decode_key(key: &[u8], row_len: usize) -> DecodeResult<KeyRef<'_>> {
    if key.len() < KEY_SUFFIX_LEN || row_len > key.len() - KEY_SUFFIX_LEN {
        return Err(format!(
            "key of {} bytes cannot hold a {row_len}-byte row and the {KEY_SUFFIX_LEN}-byte suffix",
            key.len()
        ));
    }
    let suffix = key.len() - KEY_SUFFIX_LEN;
    let flagged = key[suffix + 8];
    let code = flagged & !TTL_FLAG;
    let cell_type =
        CellType::from_code(code).ok_or_else(|| format!("unknown cell type code {code}"))?;
    Ok(KeyRef {
        row: &key[..row_len],
        qualifier: &key[row_len..suffix],
        timestamp: coding::u64_be(key, suffix, "key timestamp")? as i64,
        cell_type,
        sequence_id: coding::u64_be(key, suffix + 9, "key sequence id")?,
        has_ttl: flagged & TTL_FLAG != 0,
    })
}

impl KeyRef<'_> {
    /// The key as a cell of `family` with an empty value.
    pub(crate) fn to_cell(self, family: &bytes::Bytes) -> Cell {
        Cell {
            row: bytes::Bytes::copy_from_slice(self.row),
            family: family.clone(),
            qualifier: bytes::Bytes::copy_from_slice(self.qualifier),
            timestamp: self.timestamp,
            cell_type: self.cell_type,
            sequence_id: self.sequence_id,
            value: bytes::Bytes::new(),
            ttl_millis: None,
        }
    }
}

/// Compares `target` with a key of a file whose family is `family`, by the
/// KeyValue order of [`Cell::compare_key`] (the target's family counts, so
/// a `first_on_row` key with an empty family sorts before the whole row).
pub(crate) fn compare_target(target: &Cell, family: &[u8], key: &KeyRef<'_>) -> Ordering {
    target
        .row
        .as_ref()
        .cmp(key.row)
        .then_with(|| target.family.as_ref().cmp(family))
        .then_with(|| target.qualifier.as_ref().cmp(key.qualifier))
        .then_with(|| key.timestamp.cmp(&target.timestamp))
        .then_with(|| key.cell_type.cmp(&target.cell_type))
        .then_with(|| key.sequence_id.cmp(&target.sequence_id))
}

// ---------------------------------------------------------------------------
// Block framing
// ---------------------------------------------------------------------------

/// The checksum of a block: CRC-32C seeded with the block's file offset
/// (8 bytes little endian), then header and payload. The seed makes a
/// handle that points at a valid block in the wrong place fail too.
fn block_crc(offset: u64, header_and_payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&offset.to_le_bytes()), header_and_payload)
}

/// Frames `payload` as a block of `kind` at file offset `offset`,
/// compressing it with `codec` unless that does not make it smaller;
/// appends the block to `out` (cleared first).
pub(crate) fn encode_block(
    kind: BlockKind,
    codec: basalt_types::Compression,
    payload: &[u8],
    offset: u64,
    out: &mut Vec<u8>,
) -> basalt_types::Result<()> {
    if payload.len() > MAX_BLOCK_LEN {
        return Err(basalt_types::Error::invalid(format!(
            "a {} block of {} bytes exceeds the {MAX_BLOCK_LEN}-byte limit (cell too large)",
            kind.name(),
            payload.len()
        )));
    }
    out.clear();
    out.resize(BLOCK_HEADER_LEN, 0);
    let mut used = basalt_types::Compression::None;
    if codec != basalt_types::Compression::None {
        compression::compress(codec, payload, out)?;
        if out.len() - BLOCK_HEADER_LEN < payload.len() {
            used = codec;
        } else {
            out.truncate(BLOCK_HEADER_LEN);
        }
    }
    if used == basalt_types::Compression::None {
        out.extend_from_slice(payload);
    }
    let stored = out.len() - BLOCK_HEADER_LEN;
    out[0] = kind as u8;
    out[1] = compression::codec_id(used);
    // out[2..4] reserved, zero.
    // Both fit: the payload is at most MAX_BLOCK_LEN and compression is
    // only kept when it is smaller.
    set_u32_le(out, 4, payload.len() as u32);
    set_u32_le(out, 8, stored as u32);
    let crc = block_crc(offset, out);
    put_u32_le(out, crc);
    Ok(())
}

/// Checks and unpacks the block read at `handle`: size, checksum, kind,
/// lengths, then decompresses. Errors are corruption messages.
pub(crate) fn decode_block(
    raw: &bytes::Bytes,
    handle: BlockHandle,
    kind: BlockKind,
) -> DecodeResult<bytes::Bytes> {
    if raw.len() != handle.size as usize || raw.len() < BLOCK_OVERHEAD {
        return Err(format!(
            "{} block of {} bytes is too short or not the size its handle says ({})",
            kind.name(),
            raw.len(),
            handle.size
        ));
    }
    let body = raw.len() - 4;
    let stored_crc = coding::u32_le(raw, body, "block checksum")?;
    if block_crc(handle.offset, &raw[..body]) != stored_crc {
        return Err(format!("{} block checksum mismatch", kind.name()));
    }
    if raw[0] != kind as u8 {
        return Err(format!(
            "expected a {} block, found block kind {}",
            kind.name(),
            raw[0]
        ));
    }
    if raw[2] != 0 || raw[3] != 0 {
        return Err("non-zero reserved bytes in a block header".to_string());
    }
    let uncompressed = coding::u32_le(raw, 4, "block uncompressed length")? as usize;
    let stored = coding::u32_le(raw, 8, "block stored length")? as usize;
    if stored != body - BLOCK_HEADER_LEN {
        return Err(format!(
            "block header says {stored} stored bytes, the block holds {}",
            body - BLOCK_HEADER_LEN
        ));
    }
    if uncompressed > MAX_BLOCK_LEN {
        return Err(format!(
            "block length {uncompressed} exceeds the {MAX_BLOCK_LEN}-byte limit"
        ));
    }
    if raw[1] == compression::codec_id(basalt_types::Compression::None) {
        if uncompressed != stored {
            return Err(format!(
                "uncompressed block says {uncompressed} bytes but stores {stored}"
            ));
        }
        // Zero copy: the payload stays a view of what was read.
        return Ok(raw.slice(BLOCK_HEADER_LEN..body));
    }
    compression::decompress(raw[1], &raw[BLOCK_HEADER_LEN..body], uncompressed)
}

// ---------------------------------------------------------------------------
// Trailer
// ---------------------------------------------------------------------------

/// The fixed-size record at the end of every file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Trailer {
    pub root_index: BlockHandle,
    pub meta: BlockHandle,
    /// Size 0 when the file has no bloom filter.
    pub bloom_index: BlockHandle,
    pub data_block_count: u64,
    /// 1: the root indexes data blocks; 2: the root indexes leaf index
    /// blocks, which index data blocks.
    pub index_levels: u8,
}

impl Trailer {
    pub(crate) fn encode(&self) -> [u8; TRAILER_LEN] {
        let mut t = [0u8; TRAILER_LEN];
        set_u64_le(&mut t, 0, self.root_index.offset);
        set_u32_le(&mut t, 8, self.root_index.size);
        set_u64_le(&mut t, 12, self.meta.offset);
        set_u32_le(&mut t, 20, self.meta.size);
        set_u64_le(&mut t, 24, self.bloom_index.offset);
        set_u32_le(&mut t, 32, self.bloom_index.size);
        set_u64_le(&mut t, 36, self.data_block_count);
        t[44] = self.index_levels;
        // 45..48 reserved, zero.
        set_u32_le(&mut t, 52, FORMAT_VERSION);
        t[56..64].copy_from_slice(&MAGIC);
        let crc = trailer_crc(&t);
        set_u32_le(&mut t, 48, crc);
        t
    }

    /// Decodes and checks a trailer; `data_end` is where the trailer starts
    /// (every handle must end at or before it).
    pub(crate) fn decode(t: &[u8], data_end: u64) -> DecodeResult<Trailer> {
        if t.len() != TRAILER_LEN {
            return Err("trailer has the wrong size".to_string());
        }
        if t[56..64] != MAGIC {
            return Err("bad trailer magic: not a Basalt store file".to_string());
        }
        if trailer_crc(t) != coding::u32_le(t, 48, "trailer checksum")? {
            return Err("trailer checksum mismatch".to_string());
        }
        let version = coding::u32_le(t, 52, "trailer format version")?;
        if version != FORMAT_VERSION {
            return Err(format!(
                "unsupported store file format version {version} (this build reads {FORMAT_VERSION})"
            ));
        }
        let handle = |o: usize, what: &str| -> DecodeResult<BlockHandle> {
            Ok(BlockHandle {
                offset: coding::u64_le(t, o, what)?,
                size: coding::u32_le(t, o + 8, what)?,
            })
        };
        let trailer = Trailer {
            root_index: handle(0, "trailer's root index handle")?,
            meta: handle(12, "trailer's meta handle")?,
            bloom_index: handle(24, "trailer's bloom index handle")?,
            data_block_count: coding::u64_le(t, 36, "trailer's data block count")?,
            index_levels: t[44],
        };
        if t[45..48] != [0, 0, 0] {
            return Err("non-zero reserved bytes in the trailer".to_string());
        }
        if !(1..=2).contains(&trailer.index_levels) {
            return Err(format!(
                "index levels {} not supported (1 or 2)",
                trailer.index_levels
            ));
        }
        for (name, h, optional) in [
            ("root index", trailer.root_index, false),
            ("meta", trailer.meta, false),
            ("bloom index", trailer.bloom_index, true),
        ] {
            if optional && h.size == 0 && h.offset == 0 {
                continue;
            }
            check_handle(h, data_end).map_err(|m| format!("trailer's {name} handle: {m}"))?;
        }
        Ok(trailer)
    }
}

/// CRC-32C of the trailer with its checksum field left out.
fn trailer_crc(t: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&t[0..48]), &t[52..64])
}

/// Checks that a handle read from the file lies inside the block area and
/// is big enough to be a block.
pub(crate) fn check_handle(h: BlockHandle, data_end: u64) -> DecodeResult<()> {
    if (h.size as usize) < BLOCK_OVERHEAD {
        return Err(format!("block size {} is below the minimum", h.size));
    }
    if (h.size as usize) > MAX_BLOCK_LEN + BLOCK_OVERHEAD {
        return Err(format!("block size {} exceeds the maximum", h.size));
    }
    match h.offset.checked_add(u64::from(h.size)) {
        Some(end) if end <= data_end => Ok(()),
        _ => Err(format!(
            "block at {} of {} bytes runs past the block area ending at {data_end}",
            h.offset, h.size
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_overflow() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut b = vec![];
            put_varint(&mut b, v);
            let mut d = Decoder::new(&b);
            assert_eq!(d.varint().unwrap(), v);
            assert!(d.is_empty());
        }
        assert!(Decoder::new(&[0xff; 11]).varint().is_err());
        assert!(
            Decoder::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02])
                .varint()
                .is_err()
        );
        assert!(Decoder::new(&[0x80]).varint().is_err());
    }

    #[test]
    fn keys_round_trip() {
        let mut c = Cell::put("row", "f", "qual", -5, "");
        c.cell_type = CellType::DeleteColumn;
        c.sequence_id = 77;
        let mut k = vec![];
        encode_key(&c, &mut k);
        let r = decode_key(&k, 3).unwrap();
        assert_eq!(r.to_cell(&c.family), c);
        assert_eq!(compare_target(&c, b"f", &r), Ordering::Equal);
        assert!(decode_key(&k, k.len()).is_err());
        assert!(decode_key(&k[..5], 0).is_err());
    }

    #[test]
    fn blocks_detect_damage_and_misplacement() {
        let payload = vec![7u8; 1000];
        let mut buf = vec![];
        encode_block(
            BlockKind::Data,
            basalt_types::Compression::Lz4,
            &payload,
            4096,
            &mut buf,
        )
        .unwrap();
        let raw = bytes::Bytes::from(buf);
        assert!(raw.len() < 200, "compressible payload was compressed");
        let h = BlockHandle {
            offset: 4096,
            size: raw.len() as u32,
        };
        assert_eq!(
            &decode_block(&raw, h, BlockKind::Data).unwrap()[..],
            &payload[..]
        );
        assert!(decode_block(&raw, h, BlockKind::Meta).is_err());
        let moved = BlockHandle { offset: 0, ..h };
        assert!(decode_block(&raw, moved, BlockKind::Data).is_err());
        for i in 0..raw.len() {
            let mut bad = raw.to_vec();
            bad[i] ^= 0x10;
            let bad = bytes::Bytes::from(bad);
            assert!(decode_block(&bad, h, BlockKind::Data).is_err(), "byte {i}");
        }
    }

    #[test]
    fn trailer_round_trips_and_checks_handles() {
        let t = Trailer {
            root_index: BlockHandle {
                offset: 100,
                size: 50,
            },
            meta: BlockHandle {
                offset: 10,
                size: 90,
            },
            bloom_index: BlockHandle::default(),
            data_block_count: 3,
            index_levels: 1,
        };
        let enc = t.encode();
        assert_eq!(Trailer::decode(&enc, 150).unwrap(), t);
        assert!(Trailer::decode(&enc, 149).is_err());
        let mut bad = enc;
        bad[3] ^= 1;
        assert!(Trailer::decode(&bad, 150).is_err());
    }
}
