//! Cell blocks: cells carried after a call's message instead of inside it,
//! in HBase's KeyValue codec (`org.apache.hadoop.hbase.codec.KeyValueCodec`
//! and `KeyValueCodecWithTags`, which Java clients use by default).
//!
//! One cell (all integers big-endian):
//! ```text
//! u32 length          bytes that follow for this cell
//! u32 key length      u32 value length
//! key:  u16 row length, row, u8 family length, family, qualifier,
//!       i64 timestamp, u8 type
//! value
//! [u16 tags length, tags]   only when length says there is more
//! ```
//! The qualifier's length is what the key length leaves after the other
//! parts. Decoding checks every length against what is left and names the
//! field and offset that failed; tags are read past and dropped but for
//! a per-cell TTL (HBase's TTL tag, which replication sends), kept as the
//! cell's TTL (Basalt
//! keeps no tags).

use basalt_types::{Cell, CellType};
use bytes::{BufMut, Bytes};

use crate::error::RpcError;

/// The codec Java clients name by default.
pub const KEY_VALUE_CODEC: &str = "org.apache.hadoop.hbase.codec.KeyValueCodec";
/// The same format, with tags after the value when present.
pub const KEY_VALUE_CODEC_WITH_TAGS: &str = "org.apache.hadoop.hbase.codec.KeyValueCodecWithTags";

/// The codecs this server reads and writes.
pub fn is_supported_codec(class: &str) -> bool {
    class == KEY_VALUE_CODEC || class == KEY_VALUE_CODEC_WITH_TAGS
}

/// Fixed bytes of a key besides row, family and qualifier: row length (2),
/// family length (1), timestamp (8), type (1).
const KEY_INFRASTRUCTURE: usize = 2 + 1 + 8 + 1;

/// Appends `cells` to `out` in the KeyValue codec (no tags).
pub fn encode(cells: &[Cell], out: &mut Vec<u8>) {
    for cell in cells {
        let key_len =
            KEY_INFRASTRUCTURE + cell.row.len() + cell.family.len() + cell.qualifier.len();
        let value_len = cell.value.len();
        // Lengths fit: rows are bounded to 32 KiB and families to 127 bytes
        // by Basalt's own limits, values by the frame limit.
        out.put_u32((8 + key_len + value_len) as u32);
        out.put_u32(key_len as u32);
        out.put_u32(value_len as u32);
        out.put_u16(cell.row.len() as u16);
        out.put_slice(&cell.row);
        out.put_u8(cell.family.len() as u8);
        out.put_slice(&cell.family);
        out.put_slice(&cell.qualifier);
        out.put_i64(cell.timestamp);
        out.put_u8(cell.cell_type as u8);
        out.put_slice(&cell.value);
    }
}

/// Bytes `cells` take in the codec.
pub fn encoded_len(cells: &[Cell]) -> usize {
    cells
        .iter()
        .map(|c| {
            12 + KEY_INFRASTRUCTURE
                + c.row.len()
                + c.family.len()
                + c.qualifier.len()
                + c.value.len()
        })
        .sum()
}

/// How many cells `block` holds, by their length prefixes alone (to meter
/// its decoded size before decoding); a malformed block counts the cells
/// before the damage (decoding then refuses it).
pub fn count_cells(block: &[u8]) -> usize {
    let mut at = 0usize;
    let mut count = 0usize;
    while let Some(len) = block.get(at..at + 4) {
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        at = match at.checked_add(4 + len) {
            Some(next) if next <= block.len() => next,
            _ => break,
        };
        count += 1;
    }
    count
}

/// A checked reader over a cell block.
struct Reader<'a> {
    block: &'a Bytes,
    at: usize,
    end: usize,
}

impl Reader<'_> {
    fn fail(&self, what: &str) -> RpcError {
        RpcError::do_not_retry(format!(
            "malformed cell block: {what} at offset {} overruns the cell (cell block of {} bytes)",
            self.at,
            self.block.len()
        ))
    }

    fn take(&mut self, n: usize, what: &str) -> Result<Bytes, RpcError> {
        if n > self.end - self.at {
            return Err(self.fail(what));
        }
        let out = self.block.slice(self.at..self.at + n);
        self.at += n;
        Ok(out)
    }

    fn u32(&mut self, what: &str) -> Result<usize, RpcError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
}

/// Decodes a whole cell block; `max_cells` bounds the count so a block of
/// tiny cells cannot grow the process far beyond its bytes (each cell is
/// at least 20 bytes on the wire, so the caller's frame limit already
/// bounds it; the cap is a second line).
pub fn decode(block: &Bytes, max_cells: usize) -> Result<Vec<Cell>, RpcError> {
    let mut cells = Vec::new();
    let mut outer = Reader {
        block,
        at: 0,
        end: block.len(),
    };
    while outer.at < outer.end {
        if cells.len() >= max_cells {
            return Err(RpcError::do_not_retry(format!(
                "cell block holds more than {max_cells} cells"
            )));
        }
        let length = outer.u32("cell length")?;
        if length > outer.end - outer.at {
            return Err(outer.fail("cell"));
        }
        let mut r = Reader {
            block,
            at: outer.at,
            end: outer.at + length,
        };
        outer.at += length;
        let key_len = r.u32("key length")?;
        let value_len = r.u32("value length")?;
        if key_len < KEY_INFRASTRUCTURE {
            return Err(r.fail("key shorter than its fixed fields"));
        }
        let key_end =
            r.at.checked_add(key_len)
                .filter(|&e| e <= r.end)
                .ok_or_else(|| r.fail("key"))?;
        let row_len = {
            let b = r.take(2, "row length")?;
            usize::from(u16::from_be_bytes([b[0], b[1]]))
        };
        let row = r.take(row_len, "row")?;
        let family_len = usize::from(r.take(1, "family length")?[0]);
        let family = r.take(family_len, "family")?;
        let qualifier_len = key_end
            .checked_sub(r.at + 9)
            .ok_or_else(|| r.fail("qualifier"))?;
        let qualifier = r.take(qualifier_len, "qualifier")?;
        let ts = r.take(8, "timestamp")?;
        let timestamp =
            i64::from_be_bytes([ts[0], ts[1], ts[2], ts[3], ts[4], ts[5], ts[6], ts[7]]);
        let code = r.take(1, "type")?[0];
        let cell_type = CellType::from_code(code).ok_or_else(|| {
            RpcError::do_not_retry(format!(
                "malformed cell block: unknown cell type {code} at offset {}",
                r.at - 1
            ))
        })?;
        let value = r.take(value_len, "value")?;
        let mut ttl_millis = None;
        if r.at < r.end {
            let b = r.take(2, "tags length")?;
            let tags_len = usize::from(u16::from_be_bytes([b[0], b[1]]));
            let tags = r.take(tags_len, "tags")?;
            if r.at != r.end {
                return Err(r.fail("bytes after the tags"));
            }
            ttl_millis = ttl_tag(&tags).map_err(|what| {
                RpcError::do_not_retry(format!(
                    "malformed cell block: {what} in the tags ending at offset {}",
                    r.at
                ))
            })?;
        }
        cells.push(Cell {
            row,
            family,
            qualifier,
            timestamp,
            cell_type,
            sequence_id: 0,
            value,
            ttl_millis,
        });
    }
    Ok(cells)
}

/// HBase's tag type of a per-cell TTL (`TagType.TTL_TAG_TYPE`): the value
/// is the TTL in milliseconds, an 8-byte big-endian long.
const TTL_TAG_TYPE: u8 = 8;

/// The per-cell TTL among a cell's tags (each `u16 length, u8 type,
/// value`), if one is there; the other tags are read past, and bytes that
/// do not parse as tags are ignored, as Basalt always ignored tags (no
/// TTL then). A TTL tag not 8 bytes long, or a negative TTL, is an error.
fn ttl_tag(tags: &[u8]) -> Result<Option<u64>, &'static str> {
    let mut at = 0usize;
    let mut ttl = None;
    while at < tags.len() {
        let Some(len) = tags.get(at..at + 2) else {
            break;
        };
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        let Some((&kind, value)) = tags.get(at + 2..at + 2 + len).and_then(|t| t.split_first())
        else {
            break;
        };
        if kind == TTL_TAG_TYPE {
            let bytes: [u8; 8] = value.try_into().map_err(|_| "a TTL tag not 8 bytes long")?;
            let millis = i64::from_be_bytes(bytes);
            ttl = Some(u64::try_from(millis).map_err(|_| "a negative TTL tag")?);
        }
        at += 2 + len;
    }
    Ok(ttl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cell(row: &str, q: &str, ts: i64, v: &str) -> Cell {
        Cell::put(row.to_string(), "cf", q.to_string(), ts, v.to_string())
    }

    #[test]
    fn cells_survive_an_encode_and_decode() {
        let cells = vec![
            cell("r1", "a", 5, "v1"),
            cell("r2", "", 7, ""),
            cell("", "q", -1, "x"),
        ];
        let mut out = Vec::new();
        encode(&cells, &mut out);
        assert_eq!(out.len(), encoded_len(&cells));
        let back = decode(&Bytes::from(out), 100).unwrap();
        assert_eq!(back, cells);
    }

    #[test]
    fn tags_after_the_value_are_read_past() {
        let c = cell("r", "q", 1, "v");
        let mut out = Vec::new();
        encode(std::slice::from_ref(&c), &mut out);
        // Grow the cell's length by the tags and append them.
        let len = u32::from_be_bytes([out[0], out[1], out[2], out[3]]) + 2 + 3;
        out[..4].copy_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&[0, 3, 1, 2, 3]);
        assert_eq!(decode(&Bytes::from(out), 10).unwrap(), vec![c]);
    }

    #[test]
    fn a_ttl_tag_becomes_the_cells_ttl_and_bad_tags_are_refused() {
        let c = cell("r", "q", 1, "v");
        let with_tags = |tags: &[u8]| {
            let mut out = Vec::new();
            encode(std::slice::from_ref(&c), &mut out);
            let len = u32::from_be_bytes([out[0], out[1], out[2], out[3]]) + 2 + tags.len() as u32;
            out[..4].copy_from_slice(&len.to_be_bytes());
            out.extend_from_slice(&(tags.len() as u16).to_be_bytes());
            out.extend_from_slice(tags);
            decode(&Bytes::from(out), 10)
        };
        // Another tag (type 1, ACL-like), then a TTL of 5000 ms.
        let mut tags = vec![0, 3, 1, 9, 9, 0, 9, TTL_TAG_TYPE];
        tags.extend_from_slice(&5000i64.to_be_bytes());
        let back = with_tags(&tags).unwrap();
        assert_eq!(back[0].ttl_millis, Some(5000));
        assert!(with_tags(&[0, 3, TTL_TAG_TYPE, 0, 1])
            .unwrap_err()
            .message
            .contains("TTL tag not 8 bytes"));
        // Bytes that are not tags are read past, as before.
        assert_eq!(with_tags(&[0, 9, 1]).unwrap()[0].ttl_millis, None);
        let mut negative = vec![0, 9, TTL_TAG_TYPE];
        negative.extend_from_slice(&(-1i64).to_be_bytes());
        assert!(with_tags(&negative).is_err());
    }

    #[test]
    fn a_truncated_block_names_the_field_and_offset() {
        let mut out = Vec::new();
        encode(&[cell("row", "q", 1, "value")], &mut out);
        out.truncate(out.len() - 2);
        let error = decode(&Bytes::from(out), 10).unwrap_err();
        assert!(
            error.message.contains("cell at offset 4"),
            "{}",
            error.message
        );
    }

    #[test]
    fn more_cells_than_allowed_are_refused() {
        let mut out = Vec::new();
        encode(&[cell("a", "q", 1, "v"), cell("b", "q", 1, "v")], &mut out);
        assert!(decode(&Bytes::from(out), 1).is_err());
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode(&Bytes::from(bytes), 1000);
        }
    }
}
