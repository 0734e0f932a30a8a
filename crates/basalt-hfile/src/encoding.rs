//! Data blocks: cells unencoded (`DATABLK*`) or in one of HBase's data
//! block encodings (`DATABLKE`, whose payload starts with the encoding's
//! 2-byte id).
//!
//! After each cell's key and value come, in files that have them, its tags
//! and its memstore timestamp (a Hadoop variable-length long). Unencoded
//! cells and ROW_INDEX_V1 store tags as a 2-byte length and the tags;
//! PREFIX, DIFF and FAST_DIFF as a varint length and the tags, compressed
//! with a per-block dictionary when the file says `TAGS_COMPRESSED`.
//! docs/hfile-format.md describes each encoding's cell layout.

use bytes::Bytes;

use crate::block::BlockType;
use crate::cell::{make_cell, parse_tags, HFileCell, Tag, TagDictionary};
use crate::cursor::{Cursor, Decode};
use crate::key::KEY_INFRASTRUCTURE;

/// HBase's data block encodings, by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataBlockEncoding {
    /// 0: plain `KeyValue`s.
    None,
    /// 2: each key as the length of the prefix it shares with the previous
    /// key and the rest.
    Prefix,
    /// 3: prefix sharing plus flags for repeated lengths and type, and
    /// timestamps as differences.
    Diff,
    /// 4: like DIFF, with timestamp prefixes and repeated values.
    FastDiff,
    /// 7: plain `KeyValue`s with an index of the rows' offsets at the end.
    RowIndexV1,
}

impl DataBlockEncoding {
    /// The encoding with this id (1 was COPY_KEY's and 6 PREFIX_TREE's,
    /// both removed from HBase 2).
    pub fn from_id(id: u16) -> Option<DataBlockEncoding> {
        Some(match id {
            0 => DataBlockEncoding::None,
            2 => DataBlockEncoding::Prefix,
            3 => DataBlockEncoding::Diff,
            4 => DataBlockEncoding::FastDiff,
            7 => DataBlockEncoding::RowIndexV1,
            _ => return None,
        })
    }

    /// The encoding with this name (as in file info's `DATA_BLOCK_ENCODING`).
    pub fn from_name(name: &[u8]) -> Option<DataBlockEncoding> {
        Some(match name {
            b"NONE" => DataBlockEncoding::None,
            b"PREFIX" => DataBlockEncoding::Prefix,
            b"DIFF" => DataBlockEncoding::Diff,
            b"FAST_DIFF" => DataBlockEncoding::FastDiff,
            b"ROW_INDEX_V1" => DataBlockEncoding::RowIndexV1,
            _ => return None,
        })
    }

    /// HBase's name for it.
    pub fn name(self) -> &'static str {
        match self {
            DataBlockEncoding::None => "NONE",
            DataBlockEncoding::Prefix => "PREFIX",
            DataBlockEncoding::Diff => "DIFF",
            DataBlockEncoding::FastDiff => "FAST_DIFF",
            DataBlockEncoding::RowIndexV1 => "ROW_INDEX_V1",
        }
    }
}

/// What a file's cells carry besides key and value (from its file info).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellFormat {
    /// Every cell has a tags length (v3 files with `MAX_TAGS_LEN`).
    pub includes_tags: bool,
    /// Tags in PREFIX/DIFF/FAST_DIFF blocks are dictionary-compressed.
    pub tags_compressed: bool,
    /// Every cell ends with a memstore timestamp (`KEY_VALUE_VERSION` 1).
    pub includes_mvcc: bool,
}

/// Decodes every cell of a data block's payload.
pub(crate) fn decode_data_block(
    block_type: BlockType,
    payload: &Bytes,
    format: &CellFormat,
) -> Decode<(DataBlockEncoding, Vec<HFileCell>)> {
    match block_type {
        BlockType::Data => Ok((DataBlockEncoding::None, plain_cells(payload, format)?)),
        BlockType::EncodedData => {
            let mut c = Cursor::new(payload);
            let id = c.u16("data block encoding id")?;
            let encoding = DataBlockEncoding::from_id(id)
                .ok_or_else(|| format!("unknown data block encoding id {id}"))?;
            let body = payload.slice(2..);
            let cells = match encoding {
                DataBlockEncoding::None => {
                    return Err("an encoded data block names encoding NONE".to_string())
                }
                DataBlockEncoding::RowIndexV1 => row_index_cells(&body, format),
                other => delta_cells(other, &body, format),
            }
            .map_err(|e| {
                format!(
                    "{} block: {e} (positions from the payload's byte 2)",
                    encoding.name()
                )
            })?;
            Ok((encoding, cells))
        }
        other => Err(format!("a {other:?} block is not a data block")),
    }
}

/// Plain `KeyValue`s: key length (4), value length (4), key, value, then
/// tags (2-byte length) and memstore timestamp where the file has them.
fn plain_cells(buf: &Bytes, format: &CellFormat) -> Decode<Vec<HFileCell>> {
    let mut c = Cursor::new(buf);
    let mut cells = Vec::new();
    while !c.is_empty() {
        let at = c.pos();
        let cell = (|| {
            let key_len = c.len32("key length")?;
            let value_len = c.len32("value length")?;
            let key = c.take(key_len, "key")?;
            let value = c.take(value_len, "value")?;
            let tags = if format.includes_tags {
                let n = c.u16("tags length")? as usize;
                parse_tags(c.take(n, "tags")?)?
            } else {
                Vec::new()
            };
            let mvcc = if format.includes_mvcc {
                c.hadoop_vlong("memstore timestamp")?
            } else {
                0
            };
            make_cell(buf, key, value, tags, mvcc)
        })()
        .map_err(|e| format!("cell at byte {at}: {e}"))?;
        cells.push(cell);
    }
    Ok(cells)
}

/// ROW_INDEX_V1: plain cells, then the number of rows (4), each row's
/// offset in the cells (4 each), and the cells' size (4).
fn row_index_cells(body: &Bytes, format: &CellFormat) -> Decode<Vec<HFileCell>> {
    if body.len() < 8 {
        return Err(format!("{} bytes is too short for a row index", body.len()));
    }
    let size_at = body.len() - 4;
    let size = Cursor::at(body, size_at).len32("cells size")?;
    if size > size_at - 4 {
        return Err(format!(
            "cells size {size} exceeds the block ({} bytes)",
            body.len()
        ));
    }
    let mut c = Cursor::at(body, size);
    let rows = c.len32("row count")?;
    let index_len = rows
        .checked_mul(4)
        .filter(|&n| n == size_at - c.pos())
        .ok_or_else(|| {
            format!(
                "{rows} rows need {} bytes of row offsets, {} are there",
                rows.saturating_mul(4),
                size_at - c.pos()
            )
        })?;
    let mut index = Cursor::new(c.take(index_len, "row offsets")?);
    let mut last = None;
    for _ in 0..rows {
        let o = index.len32("row offset")?;
        if o >= size || last.is_some_and(|l| o <= l) {
            return Err(format!(
                "row offset {o} is not increasing within {size} bytes"
            ));
        }
        last = Some(o);
    }
    // Plain cells with 2-byte tag lengths: the ROW_INDEX_V1 encoder never
    // compresses tags, whatever the file info says.
    let plain = CellFormat {
        tags_compressed: false,
        ..*format
    };
    plain_cells(&body.slice(..size), &plain)
}

const DIFF_SAME_KEY_LENGTH: u8 = 1;
const DIFF_SAME_VALUE_LENGTH: u8 = 1 << 1;
const DIFF_SAME_TYPE: u8 = 1 << 2;
const DIFF_TIMESTAMP_IS_DIFF: u8 = 1 << 3;
const DIFF_TIMESTAMP_SIGN: u8 = 1 << 7;

const FAST_SAME_KEY_LENGTH: u8 = 1 << 3;
const FAST_SAME_VALUE_LENGTH: u8 = 1 << 4;
const FAST_SAME_TYPE: u8 = 1 << 5;
const FAST_SAME_VALUE: u8 = 1 << 6;

/// The previous cell, as the delta encodings refer to it.
struct Previous {
    key: Vec<u8>,
    value: Vec<u8>,
}

/// PREFIX, DIFF and FAST_DIFF: a 4-byte unencoded size, then cells each
/// followed by tags (varint length) and the memstore timestamp.
fn delta_cells(
    encoding: DataBlockEncoding,
    body: &[u8],
    format: &CellFormat,
) -> Decode<Vec<HFileCell>> {
    let mut c = Cursor::new(body);
    c.i32("unencoded size")?;
    let mut dict = TagDictionary::default();
    let mut prev: Option<Previous> = None;
    // DIFF writes the family once, before the first cell.
    let mut diff_family: Vec<u8> = Vec::new();
    let mut cells = Vec::new();
    while !c.is_empty() {
        let at = c.pos();
        let cell = (|| {
            let (key, value) = match encoding {
                DataBlockEncoding::Prefix => prefix_cell(&mut c, prev.as_ref())?,
                DataBlockEncoding::Diff => {
                    if prev.is_none() {
                        let n = c.u8("family length")? as usize;
                        diff_family = c.take(n, "family")?.to_vec();
                    }
                    diff_cell(&mut c, prev.as_ref(), &diff_family)?
                }
                _ => fast_diff_cell(&mut c, prev.as_ref())?,
            };
            let tags = if format.includes_tags {
                let n = c.varint_len("tags length")?;
                if n == 0 {
                    Vec::new()
                } else if format.tags_compressed {
                    parse_tags(&dict.uncompress(&mut c, n)?)?
                } else {
                    parse_tags(c.take(n, "tags")?)?
                }
            } else {
                Vec::<Tag>::new()
            };
            let mvcc = if format.includes_mvcc {
                c.hadoop_vlong("memstore timestamp")?
            } else {
                0
            };
            // Key and value are rebuilt from deltas: nothing to share.
            let cell = make_cell(&Bytes::new(), &key, &value, tags, mvcc)?;
            Ok::<_, String>((cell, Previous { key, value }))
        })()
        .map_err(|e| format!("cell at byte {at}: {e}"))?;
        cells.push(cell.0);
        prev = Some(cell.1);
    }
    Ok(cells)
}

/// PREFIX: varints (key length - shared prefix), value length, shared
/// prefix; the key's unshared bytes; the value.
fn prefix_cell(c: &mut Cursor<'_>, prev: Option<&Previous>) -> Decode<(Vec<u8>, Vec<u8>)> {
    let suffix_len = c.varint_len("key suffix length")?;
    let value_len = c.varint_len("value length")?;
    let common = c.varint_len("shared key prefix")?;
    let prev_key: &[u8] = prev.map(|p| p.key.as_slice()).unwrap_or(&[]);
    if common > prev_key.len() {
        return Err(format!(
            "shared prefix {common} is longer than the previous key ({})",
            prev_key.len()
        ));
    }
    let mut key = Vec::with_capacity(common + suffix_len.min(c.remaining()));
    key.extend_from_slice(&prev_key[..common]);
    key.extend_from_slice(c.take(suffix_len, "key suffix")?);
    let value = c.take(value_len, "value")?.to_vec();
    Ok((key, value))
}

/// The key without timestamp and type, from the shared prefix with the
/// previous key, as DIFF and FAST_DIFF write it: when the rows differ,
/// the row length and row past the shared bytes, then the whole
/// qualifier (the family is the previous key's); when the row is shared,
/// the qualifier past the shared bytes.
fn rebuild_key_prefix(
    c: &mut Cursor<'_>,
    prev_key: &[u8],
    family: &[u8],
    common: usize,
    key_len: usize,
) -> Decode<Vec<u8>> {
    let prev_row_len = if prev_key.len() >= 2 {
        usize::from(u16::from_be_bytes([prev_key[0], prev_key[1]]))
    } else {
        0
    };
    let flat_len = key_len
        .checked_sub(9)
        .ok_or_else(|| format!("key length {key_len} is under 9"))?;
    if common < prev_row_len + 2 || prev_key.is_empty() {
        let row_len = match common {
            0 => usize::from(c.u16("row length")?),
            1 => {
                let high = *prev_key
                    .first()
                    .ok_or("shared prefix 1 with no previous key")?;
                usize::from(u16::from_be_bytes([high, c.u8("row length")?]))
            }
            _ => prev_row_len,
        };
        let shared_row = common.saturating_sub(2);
        let shared: &[u8] = if shared_row == 0 {
            &[]
        } else {
            prev_key
                .get(2..2 + shared_row)
                .ok_or_else(|| format!("shared prefix {common} reaches past the previous key"))?
        };
        if shared_row > row_len {
            return Err(format!(
                "shared prefix {common} reaches past the row ({row_len} bytes)"
            ));
        }
        let qualifier_len = key_len
            .checked_sub(KEY_INFRASTRUCTURE + row_len + family.len())
            .ok_or_else(|| {
                format!("key length {key_len} leaves no room for a {row_len}-byte row")
            })?;
        let mut key = Vec::with_capacity(flat_len);
        key.extend_from_slice(&(row_len as u16).to_be_bytes());
        key.extend_from_slice(shared);
        key.extend_from_slice(c.take(row_len - shared_row, "row")?);
        key.push(family.len() as u8);
        key.extend_from_slice(family);
        key.extend_from_slice(c.take(qualifier_len, "qualifier")?);
        Ok(key)
    } else {
        let prev_flat = prev_key.len().saturating_sub(9);
        if common > prev_flat || common > flat_len {
            return Err(format!(
                "shared prefix {common} is longer than the previous key's row, family and qualifier ({prev_flat}) or this key's ({flat_len})"
            ));
        }
        let mut key = Vec::with_capacity(flat_len);
        key.extend_from_slice(&prev_key[..common]);
        key.extend_from_slice(c.take(flat_len - common, "qualifier suffix")?);
        Ok(key)
    }
}

/// The family of a flat key.
fn family_of(key: &[u8]) -> Decode<&[u8]> {
    let mut c = Cursor::new(key);
    let row_len = c.u16("row length")? as usize;
    c.skip(row_len, "row")?;
    let n = c.u8("family length")? as usize;
    c.take(n, "family")
}

fn timestamp_and_type(key: &[u8]) -> (i64, u8) {
    let n = key.len();
    if n < 9 {
        return (0, 0);
    }
    let mut ts = [0u8; 8];
    ts.copy_from_slice(&key[n - 9..n - 1]);
    (i64::from_be_bytes(ts), key[n - 1])
}

/// DIFF: flag byte; key length and value length unless the flag says they
/// repeat; the shared prefix; the key's parts (see `rebuild_key_prefix`);
/// the timestamp (1-8 little-endian bytes, itself or the difference from
/// the previous one, with a sign flag); the type unless repeated; the value.
fn diff_cell(
    c: &mut Cursor<'_>,
    prev: Option<&Previous>,
    family: &[u8],
) -> Decode<(Vec<u8>, Vec<u8>)> {
    let flag = c.u8("flag")?;
    let needs_prev =
        DIFF_SAME_KEY_LENGTH | DIFF_SAME_VALUE_LENGTH | DIFF_SAME_TYPE | DIFF_TIMESTAMP_IS_DIFF;
    if prev.is_none() && flag & needs_prev != 0 {
        return Err(format!(
            "first cell's flag {flag:#04x} refers to a previous cell"
        ));
    }
    let prev_key: &[u8] = prev.map(|p| p.key.as_slice()).unwrap_or(&[]);
    let key_len = if flag & DIFF_SAME_KEY_LENGTH != 0 {
        prev_key.len()
    } else {
        c.varint_len("key length")?
    };
    let value_len = if flag & DIFF_SAME_VALUE_LENGTH != 0 {
        prev.map_or(0, |p| p.value.len())
    } else {
        c.varint_len("value length")?
    };
    let common = c.varint_len("shared key prefix")?;
    let mut key = rebuild_key_prefix(c, prev_key, family, common, key_len)?;
    let ts_len = usize::from((flag >> 4) & 0x07) + 1;
    let raw = c.take(ts_len, "timestamp")?;
    let mut v: u64 = 0;
    for (i, &b) in raw.iter().enumerate() {
        v |= u64::from(b) << (8 * i);
    }
    let v = v as i64;
    let (prev_ts, prev_type) = timestamp_and_type(prev_key);
    let ts = if flag & DIFF_TIMESTAMP_IS_DIFF != 0 {
        let diff = if flag & DIFF_TIMESTAMP_SIGN != 0 {
            v.wrapping_neg()
        } else {
            v
        };
        prev_ts.wrapping_sub(diff)
    } else if flag & DIFF_TIMESTAMP_SIGN != 0 {
        v.wrapping_neg()
    } else {
        v
    };
    let type_code = if flag & DIFF_SAME_TYPE != 0 {
        prev_type
    } else {
        c.u8("type")?
    };
    key.extend_from_slice(&ts.to_be_bytes());
    key.push(type_code);
    let value = c.take(value_len, "value")?.to_vec();
    Ok((key, value))
}

/// FAST_DIFF: flag byte; key length and value length unless repeated; the
/// shared prefix. The first cell of a block then has its whole key;
/// the others the key's parts (see `rebuild_key_prefix`), the timestamp's
/// bytes past the ones shared with the previous timestamp (big-endian;
/// the flag's low 3 bits count the shared ones), the type unless repeated.
/// Last the value, unless the flag says it repeats.
fn fast_diff_cell(c: &mut Cursor<'_>, prev: Option<&Previous>) -> Decode<(Vec<u8>, Vec<u8>)> {
    let flag = c.u8("flag")?;
    let Some(prev) = prev else {
        if flag != 0 {
            return Err(format!("first cell's flag is {flag:#04x}, 0 expected"));
        }
        let key_len = c.varint_len("key length")?;
        let value_len = c.varint_len("value length")?;
        let common = c.varint_len("shared key prefix")?;
        if common != 0 {
            return Err(format!(
                "first cell shares {common} bytes with no previous key"
            ));
        }
        let key = c.take(key_len, "key")?.to_vec();
        let value = c.take(value_len, "value")?.to_vec();
        return Ok((key, value));
    };
    let key_len = if flag & FAST_SAME_KEY_LENGTH != 0 {
        prev.key.len()
    } else {
        c.varint_len("key length")?
    };
    let value_len = if flag & FAST_SAME_VALUE_LENGTH != 0 {
        prev.value.len()
    } else {
        c.varint_len("value length")?
    };
    let common = c.varint_len("shared key prefix")?;
    let family = family_of(&prev.key)?.to_vec();
    let mut key = rebuild_key_prefix(c, &prev.key, &family, common, key_len)?;
    let (prev_ts, prev_type) = timestamp_and_type(&prev.key);
    let shared_ts = usize::from(flag & 0x07);
    let mut ts = prev_ts.to_be_bytes();
    ts[shared_ts..].copy_from_slice(c.take(8 - shared_ts, "timestamp")?);
    let type_code = if flag & FAST_SAME_TYPE != 0 {
        prev_type
    } else {
        c.u8("type")?
    };
    key.extend_from_slice(&ts);
    key.push(type_code);
    let value = if flag & FAST_SAME_VALUE != 0 {
        if value_len != prev.value.len() {
            return Err(format!(
                "value repeats the previous one ({} bytes) but its length is {value_len}",
                prev.value.len()
            ));
        }
        prev.value.clone()
    } else {
        c.take(value_len, "value")?.to_vec()
    };
    Ok((key, value))
}
