//! The cells an HFile yields.

use basalt_types::CellType;
use bytes::Bytes;

use crate::cursor::{Cursor, Decode};
use crate::key::parse_key;

/// One tag of a cell (HBase v3 tags: TTL, ACL, visibility labels,
/// application tags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// The tag type (HBase reserves 1-64; 65 and up are custom).
    pub tag_type: u8,
    /// The tag's value.
    pub value: Bytes,
}

/// One cell as stored in an HFile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HFileCell {
    /// The row.
    pub row: Bytes,
    /// The column family.
    pub family: Bytes,
    /// The qualifier.
    pub qualifier: Bytes,
    /// The timestamp.
    pub timestamp: i64,
    /// Put or one of the delete markers.
    pub cell_type: CellType,
    /// The value (empty for delete markers).
    pub value: Bytes,
    /// The tags, in stored order.
    pub tags: Vec<Tag>,
    /// The memstore timestamp (sequence id) when the file stores them
    /// (`KEY_VALUE_VERSION` 1), else 0.
    pub seq_id: u64,
}

/// HBase's tag type of a cell's own time to live (`TagType.TTL_TAG_TYPE`):
/// the value is the TTL in milliseconds, an 8-byte big-endian long.
pub const TTL_TAG_TYPE: u8 = 8;

impl HFileCell {
    /// The cell's own TTL in milliseconds (HBase's `Mutation.setTTL`), and
    /// how many of its tags are something else (ACL, visibility labels).
    /// A TTL tag that is not 8 bytes is an error naming the row.
    pub fn ttl_and_other_tags(&self) -> Result<(Option<u64>, u64), String> {
        let mut ttl = None;
        let mut others = 0;
        for tag in &self.tags {
            if tag.tag_type == TTL_TAG_TYPE {
                let bytes: [u8; 8] = tag.value[..].try_into().map_err(|_| {
                    format!(
                        "a TTL tag of row {:?} holds {} bytes, not 8",
                        self.row,
                        tag.value.len()
                    )
                })?;
                ttl = Some(u64::try_from(i64::from_be_bytes(bytes)).unwrap_or(0));
            } else {
                others += 1;
            }
        }
        Ok((ttl, others))
    }
}

/// Turns an HFile's cells, in file order, into Basalt cells: the TTL tag
/// becomes the put's own TTL, other tags are left out and counted, and
/// each cell gets the sequence id its caller chose, except that a cell
/// with the same key (row, family, qualifier, timestamp, type) as the one
/// before it, which HBase ranks after it, gets the id just below: Basalt's
/// files order one key's cells by sequence id, descending. Shared by the
/// snapshot import and the bulk load, whose ids differ (HBase's own, or
/// one fresh id of the region).
#[derive(Debug, Default)]
pub struct CellConverter {
    /// Key and sequence id of the previous cell.
    previous: Option<(HFileCell, u64)>,
    /// Tags left out so far (not a TTL).
    pub tags_dropped: u64,
}

impl CellConverter {
    /// The Basalt cell for `cell`, which follows the previous one in the
    /// file. An error names what is wrong (a TTL tag that is not 8 bytes,
    /// more cells of one key than ids below `sequence_id`).
    pub fn convert(
        &mut self,
        cell: HFileCell,
        sequence_id: u64,
    ) -> Result<basalt_types::Cell, String> {
        let (ttl, others) = cell.ttl_and_other_tags()?;
        self.tags_dropped += others;
        let mut sequence_id = sequence_id;
        if let Some((prev, prev_sequence)) = &self.previous {
            let same_key = prev.row == cell.row
                && prev.family == cell.family
                && prev.qualifier == cell.qualifier
                && prev.timestamp == cell.timestamp
                && prev.cell_type == cell.cell_type;
            if same_key && sequence_id >= *prev_sequence {
                sequence_id = prev_sequence.saturating_sub(1);
                if sequence_id == 0 {
                    return Err(format!(
                        "too many cells of one key (row {:?}, timestamp {}) to keep their order",
                        cell.row, cell.timestamp
                    ));
                }
            }
        }
        let converted = basalt_types::Cell {
            ttl_millis: ttl.filter(|_| cell.cell_type == CellType::Put),
            row: cell.row.clone(),
            family: cell.family.clone(),
            qualifier: cell.qualifier.clone(),
            timestamp: cell.timestamp,
            cell_type: cell.cell_type,
            sequence_id,
            value: cell.value,
        };
        self.previous = Some((
            HFileCell {
                value: Bytes::new(),
                tags: Vec::new(),
                ..cell
            },
            sequence_id,
        ));
        Ok(converted)
    }
}

/// `part` as [`Bytes`]: a view of `block` when it lies inside it (no
/// copy, no allocation), else a copy (a key a delta encoding rebuilt).
fn share(block: &Bytes, part: &[u8]) -> Bytes {
    let start = block.as_ptr() as usize;
    let at = part.as_ptr() as usize;
    if !part.is_empty() && at >= start && at + part.len() <= start + block.len() {
        block.slice(at - start..at - start + part.len())
    } else {
        Bytes::copy_from_slice(part)
    }
}

/// Builds a cell from a flat key, value, tags and memstore timestamp;
/// what of them lies in `block` is shared with it, not copied.
pub(crate) fn make_cell(
    block: &Bytes,
    key: &[u8],
    value: &[u8],
    tags: Vec<Tag>,
    mvcc: i64,
) -> Decode<HFileCell> {
    let k = parse_key(key)?;
    let cell_type = CellType::from_code(k.type_code).ok_or_else(|| {
        format!(
            "type code {} is not a cell type (Put 4, Delete 8, DeleteFamilyVersion 10, DeleteColumn 12, DeleteFamily 14)",
            k.type_code
        )
    })?;
    let seq_id = u64::try_from(mvcc).map_err(|_| format!("negative memstore timestamp {mvcc}"))?;
    Ok(HFileCell {
        row: share(block, k.row),
        family: share(block, k.family),
        qualifier: share(block, k.qualifier),
        timestamp: k.timestamp,
        cell_type,
        value: share(block, value),
        tags,
        seq_id,
    })
}

/// Splits a cell's serialized tags: each a 2-byte big-endian length
/// (covering type and value), a type byte and the value.
pub(crate) fn parse_tags(raw: &[u8]) -> Decode<Vec<Tag>> {
    let mut c = Cursor::new(raw);
    let mut tags = Vec::new();
    while !c.is_empty() {
        let at = c.pos();
        let len = c.u16("tag length")? as usize;
        if len == 0 {
            return Err(format!(
                "tag at byte {at} of the tags has length 0 (no type)"
            ));
        }
        let tag_type = c.u8("tag type")?;
        let value = c.take(len - 1, "tag value")?;
        tags.push(Tag {
            tag_type,
            value: Bytes::copy_from_slice(value),
        });
    }
    Ok(tags)
}

/// HBase's tag dictionary for compressed tags in encoded data blocks: an
/// LRU of at most 127 entries, cleared at every block. A new entry takes
/// the next free index, or, when full, the least recently used entry's;
/// a lookup makes an entry the most recently used.
#[derive(Debug, Default)]
pub(crate) struct TagDictionary {
    entries: Vec<(Vec<u8>, u64)>,
    clock: u64,
}

/// The dictionary's capacity (`Byte.MAX_VALUE` in HBase's encoders).
const TAG_DICTIONARY_CAPACITY: usize = 127;

impl TagDictionary {
    fn add(&mut self, entry: &[u8]) {
        if entry.is_empty() {
            return;
        }
        self.clock += 1;
        if self.entries.len() < TAG_DICTIONARY_CAPACITY {
            self.entries.push((entry.to_vec(), self.clock));
            return;
        }
        let oldest = self
            .entries
            .iter()
            .enumerate()
            .min_by_key(|(_, (_, used))| *used)
            .map(|(i, _)| i);
        if let Some(i) = oldest {
            self.entries[i] = (entry.to_vec(), self.clock);
        }
    }

    fn get(&mut self, index: usize) -> Option<&[u8]> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(index).map(|(e, used)| {
            *used = clock;
            e.as_slice()
        })
    }

    /// Decodes compressed tags whose uncompressed form is `total` bytes:
    /// per tag, either 0xFF, a varint length and the tag (type and value),
    /// which joins the dictionary, or a 2-byte big-endian dictionary index.
    pub(crate) fn uncompress(&mut self, c: &mut Cursor<'_>, total: usize) -> Decode<Vec<u8>> {
        let mut raw = Vec::with_capacity(total.min(c.remaining() * 4 + 64));
        while raw.len() < total {
            let at = c.pos();
            let status = c.u8("compressed tag status")?;
            let entry: Vec<u8> = if status == 0xff {
                let len = c.varint_len("compressed tag length")?;
                let tag = c.take(len, "compressed tag")?;
                self.add(tag);
                tag.to_vec()
            } else {
                let low = c.u8("tag dictionary index")?;
                let index = usize::from(u16::from_be_bytes([status, low]));
                self.get(index)
                    .ok_or_else(|| {
                        format!(
                            "tag dictionary index {index} at byte {at} is not in the dictionary"
                        )
                    })?
                    .to_vec()
            };
            let len = u16::try_from(entry.len())
                .map_err(|_| format!("tag at byte {at} is {} bytes long", entry.len()))?;
            raw.extend_from_slice(&len.to_be_bytes());
            raw.extend_from_slice(&entry);
        }
        if raw.len() != total {
            return Err(format!(
                "compressed tags decode to {} bytes, their length says {total}",
                raw.len()
            ));
        }
        Ok(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_inside_the_block_is_shared_and_one_outside_is_copied() {
        let block = Bytes::from_static(b"row1value");
        let inside = share(&block, &block[4..]);
        assert_eq!(inside, Bytes::from_static(b"value"));
        assert_eq!(inside.as_ptr(), block[4..].as_ptr(), "a view, not a copy");
        let rebuilt = b"value".to_vec();
        let outside = share(&block, &rebuilt);
        assert_eq!(outside, Bytes::from_static(b"value"));
        assert_ne!(outside.as_ptr(), rebuilt.as_ptr());
        assert!(share(&block, &[]).is_empty());
    }

    fn put(row: &'static str, ts: i64, seq_id: u64, tags: Vec<Tag>) -> HFileCell {
        HFileCell {
            row: Bytes::from_static(row.as_bytes()),
            family: Bytes::from_static(b"f"),
            qualifier: Bytes::from_static(b"q"),
            timestamp: ts,
            cell_type: CellType::Put,
            value: Bytes::from_static(b"v"),
            tags,
            seq_id,
        }
    }

    #[test]
    fn a_converted_cell_keeps_its_ttl_tag_and_counts_the_others() {
        let mut converter = CellConverter::default();
        let ttl = Tag {
            tag_type: TTL_TAG_TYPE,
            value: Bytes::copy_from_slice(&10_000i64.to_be_bytes()),
        };
        let acl = Tag {
            tag_type: 1,
            value: Bytes::from_static(b"x"),
        };
        let cell = converter
            .convert(put("a", 5, 0, vec![ttl, acl]), 7)
            .unwrap();
        assert_eq!((cell.ttl_millis, cell.sequence_id), (Some(10_000), 7));
        assert_eq!(converter.tags_dropped, 1);
        let short = Tag {
            tag_type: TTL_TAG_TYPE,
            value: Bytes::from_static(b"123"),
        };
        assert!(converter.convert(put("b", 5, 0, vec![short]), 7).is_err());
    }

    #[test]
    fn a_second_cell_of_one_key_ranks_below_the_first_and_others_keep_their_id() {
        let mut converter = CellConverter::default();
        assert_eq!(
            converter
                .convert(put("a", 5, 0, vec![]), 3)
                .unwrap()
                .sequence_id,
            3
        );
        assert_eq!(
            converter
                .convert(put("a", 5, 0, vec![]), 3)
                .unwrap()
                .sequence_id,
            2
        );
        assert_eq!(
            converter
                .convert(put("a", 5, 0, vec![]), 3)
                .unwrap()
                .sequence_id,
            1
        );
        assert!(
            converter.convert(put("a", 5, 0, vec![]), 3).is_err(),
            "no id left below 1"
        );
        // Another timestamp is another key: its own id.
        assert_eq!(
            converter
                .convert(put("a", 4, 0, vec![]), 3)
                .unwrap()
                .sequence_id,
            3
        );
        // A lower id than the previous one's is already in order.
        assert_eq!(
            converter
                .convert(put("a", 4, 0, vec![]), 1)
                .unwrap()
                .sequence_id,
            1
        );
    }

    #[test]
    fn tags_split_by_their_lengths() {
        let raw = [0, 3, 8, 0xaa, 0xbb, 0, 1, 65];
        let tags = parse_tags(&raw).unwrap();
        assert_eq!(tags.len(), 2);
        assert_eq!(tags[0].tag_type, 8);
        assert_eq!(&tags[0].value[..], &[0xaa, 0xbb]);
        assert_eq!(tags[1].tag_type, 65);
        assert!(tags[1].value.is_empty());
        assert!(parse_tags(&[0, 5, 1]).is_err());
        assert!(parse_tags(&[0, 0]).is_err());
    }

    #[test]
    fn compressed_tags_refer_back_to_the_dictionary() {
        // A new tag (type 8, value 1), then the same by index 0.
        let buf = [0xff, 2, 8, 1, 0, 0];
        let mut d = TagDictionary::default();
        let mut c = Cursor::new(&buf);
        let raw = d.uncompress(&mut c, 8).unwrap();
        assert_eq!(raw, vec![0, 2, 8, 1, 0, 2, 8, 1]);
        let mut c = Cursor::new(&[0, 5]);
        assert!(d.uncompress(&mut c, 4).is_err());
    }

    #[test]
    fn a_full_tag_dictionary_reuses_the_least_recently_used_index() {
        let mut d = TagDictionary::default();
        for i in 0..TAG_DICTIONARY_CAPACITY {
            d.add(&[i as u8]);
        }
        // Touch entry 0 so entry 1 is the oldest.
        assert!(d.get(0).is_some());
        d.add(b"new");
        assert_eq!(d.get(1), Some(&b"new"[..]));
        assert_eq!(d.get(0), Some(&[0u8][..]));
    }
}
