//! HFile blocks: the 33-byte header, the checksums after the data, and the
//! decompressed payload.
//!
//! Header (big-endian): block type magic (8 bytes), on-disk size without
//! the header (4: compressed data plus checksums), uncompressed size
//! without the header (4), offset of the previous block of the same type
//! (8, -1 for none), checksum type (1: 0 none, 1 CRC32, 2 CRC32C), bytes
//! per checksum (4), on-disk data size with the header (4: header plus
//! compressed data, without checksums).
//!
//! Checksums: one 4-byte big-endian checksum for each `bytes_per_checksum`
//! chunk of header plus compressed data (the last chunk may be short), in
//! order, right after the data.

use bytes::Bytes;

use crate::compression::{self, Codec};
use crate::cursor::{Cursor, Decode};

/// The header's size in every block of a v3 file (and v2 with checksums).
pub const HEADER_SIZE: usize = 33;

/// The largest uncompressed block accepted (HBase's blocks are 64 KiB by
/// default, and hold at least one cell, at most 10 MiB by default).
pub const MAX_BLOCK_SIZE: usize = 256 << 20;

/// What a block holds, from its magic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockType {
    /// `DATABLK*`: cells, not encoded.
    Data,
    /// `DATABLKE`: cells in a data block encoding.
    EncodedData,
    /// `IDXLEAF2`: the lowest level of a multi-level data index.
    LeafIndex,
    /// `BLMFBLK2`: one chunk of a compound Bloom filter.
    BloomChunk,
    /// `METABLKc`: a named meta block.
    Meta,
    /// `IDXINTE2`: a middle level of a multi-level data index.
    IntermediateIndex,
    /// `IDXROOT2`: a root index (data or meta).
    RootIndex,
    /// `FILEINF2`: the file-info map.
    FileInfo,
    /// `BLMFMET2`: the general Bloom filter's metadata.
    GeneralBloomMeta,
    /// `DFBLMET2`: the delete-family Bloom filter's metadata.
    DeleteFamilyBloomMeta,
    /// `TRABLK"$`: the trailer (not a block, but shares the magic list).
    Trailer,
    /// `IDXBLK)+`: a version-1 index.
    IndexV1,
}

const MAGICS: [(&[u8; 8], BlockType); 12] = [
    (b"DATABLK*", BlockType::Data),
    (b"DATABLKE", BlockType::EncodedData),
    (b"IDXLEAF2", BlockType::LeafIndex),
    (b"BLMFBLK2", BlockType::BloomChunk),
    (b"METABLKc", BlockType::Meta),
    (b"IDXINTE2", BlockType::IntermediateIndex),
    (b"IDXROOT2", BlockType::RootIndex),
    (b"FILEINF2", BlockType::FileInfo),
    (b"BLMFMET2", BlockType::GeneralBloomMeta),
    (b"DFBLMET2", BlockType::DeleteFamilyBloomMeta),
    (b"TRABLK\"$", BlockType::Trailer),
    (b"IDXBLK)+", BlockType::IndexV1),
];

impl BlockType {
    /// The type with this magic.
    pub fn from_magic(magic: &[u8]) -> Option<BlockType> {
        MAGICS
            .iter()
            .find(|(m, _)| m.as_slice() == magic)
            .map(|&(_, t)| t)
    }

    /// The 8-byte magic.
    pub fn magic(self) -> &'static [u8; 8] {
        MAGICS
            .iter()
            .find(|(_, t)| *t == self)
            .map(|(m, _)| *m)
            .unwrap_or(b"????????")
    }

    /// Data blocks of either kind.
    pub fn is_data(self) -> bool {
        matches!(self, BlockType::Data | BlockType::EncodedData)
    }
}

/// The checksum algorithm of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumType {
    /// 0: no checksums.
    Null,
    /// 1: CRC-32 (`java.util.zip.CRC32`).
    Crc32,
    /// 2: CRC-32C (Castagnoli).
    Crc32c,
}

/// A parsed block header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    /// The block's type.
    pub block_type: BlockType,
    /// Bytes after the header on disk: compressed data and checksums.
    pub on_disk_size_without_header: usize,
    /// Bytes of the payload once decompressed.
    pub uncompressed_size_without_header: usize,
    /// Offset of the previous block of this type, -1 for none.
    pub prev_block_offset: i64,
    /// The checksum algorithm.
    pub checksum_type: ChecksumType,
    /// Bytes covered by each checksum.
    pub bytes_per_checksum: usize,
    /// Header plus compressed data, without checksums.
    pub on_disk_data_size_with_header: usize,
}

impl BlockHeader {
    /// The whole block's size on disk.
    pub fn on_disk_size(&self) -> usize {
        HEADER_SIZE + self.on_disk_size_without_header
    }
}

/// Parses and checks a header's fields against each other.
pub(crate) fn parse_header(buf: &[u8]) -> Decode<BlockHeader> {
    let mut c = Cursor::new(buf);
    let magic = c.take(8, "block magic")?;
    let block_type = BlockType::from_magic(magic).ok_or_else(|| {
        format!(
            "unknown block magic {:?}",
            String::from_utf8_lossy(magic).escape_default().to_string()
        )
    })?;
    let on_disk = c.len32("on-disk size without header")?;
    let uncompressed = c.len32("uncompressed size without header")?;
    let prev_block_offset = c.i64("previous block offset")?;
    let checksum_type = match c.u8("checksum type")? {
        0 => ChecksumType::Null,
        1 => ChecksumType::Crc32,
        2 => ChecksumType::Crc32c,
        t => return Err(format!("unknown checksum type {t}")),
    };
    let bytes_per_checksum = c.len32("bytes per checksum")?;
    let data_with_header = c.len32("on-disk data size with header")?;
    if uncompressed > MAX_BLOCK_SIZE {
        return Err(format!(
            "uncompressed size {uncompressed} is over the {MAX_BLOCK_SIZE}-byte limit"
        ));
    }
    if data_with_header < HEADER_SIZE || data_with_header > HEADER_SIZE + on_disk {
        return Err(format!(
            "on-disk data size with header {data_with_header} is outside [{HEADER_SIZE}, {}]",
            HEADER_SIZE + on_disk
        ));
    }
    let checksum_bytes = HEADER_SIZE + on_disk - data_with_header;
    let expected = match checksum_type {
        ChecksumType::Null => 0,
        _ => {
            if bytes_per_checksum == 0 {
                return Err("bytes per checksum is 0".to_string());
            }
            data_with_header.div_ceil(bytes_per_checksum) * 4
        }
    };
    if checksum_bytes != expected {
        return Err(format!(
            "{checksum_bytes} checksum bytes after the data, {expected} expected for {data_with_header} bytes in chunks of {bytes_per_checksum}"
        ));
    }
    Ok(BlockHeader {
        block_type,
        on_disk_size_without_header: on_disk,
        uncompressed_size_without_header: uncompressed,
        prev_block_offset,
        checksum_type,
        bytes_per_checksum,
        on_disk_data_size_with_header: data_with_header,
    })
}

/// Checks a whole block's checksums (`raw` is the block as on disk).
pub(crate) fn verify_checksums(h: &BlockHeader, raw: &[u8]) -> Decode<()> {
    if h.checksum_type == ChecksumType::Null {
        return Ok(());
    }
    let data = raw
        .get(..h.on_disk_data_size_with_header)
        .ok_or("block shorter than its data")?;
    let sums = raw
        .get(h.on_disk_data_size_with_header..h.on_disk_size())
        .ok_or("block shorter than its checksums")?;
    for (i, (chunk, sum)) in data
        .chunks(h.bytes_per_checksum)
        .zip(sums.chunks_exact(4))
        .enumerate()
    {
        let stored = u32::from_be_bytes([sum[0], sum[1], sum[2], sum[3]]);
        let computed = match h.checksum_type {
            ChecksumType::Crc32c => crc32c::crc32c(chunk),
            _ => {
                let mut crc = flate2::Crc::new();
                crc.update(chunk);
                crc.sum()
            }
        };
        if stored != computed {
            return Err(format!(
                "{:?} checksum of chunk {i} (block bytes {}..{}) is {computed:#010x}, stored {stored:#010x}",
                h.checksum_type,
                i * h.bytes_per_checksum,
                i * h.bytes_per_checksum + chunk.len()
            ));
        }
    }
    Ok(())
}

/// A block read and checked: its header and decompressed payload.
#[derive(Debug, Clone)]
pub struct Block {
    /// The block's offset in the file.
    pub offset: u64,
    /// Its header.
    pub header: BlockHeader,
    /// The payload, decompressed (an encoded data block's starts with the
    /// encoding id). Uncompressed, it is a view of the bytes read.
    pub payload: Bytes,
}

/// Checks and decompresses a block whose on-disk bytes are `raw`.
pub(crate) fn decode(offset: u64, h: BlockHeader, raw: &Bytes, codec: Codec) -> Decode<Block> {
    verify_checksums(&h, raw)?;
    let data = raw
        .get(HEADER_SIZE..h.on_disk_data_size_with_header)
        .ok_or("block shorter than its data")?;
    if codec == Codec::None && data.len() != h.uncompressed_size_without_header {
        return Err(format!(
            "uncompressed block holds {} bytes of data, its header says {}",
            data.len(),
            h.uncompressed_size_without_header
        ));
    }
    // Uncompressed, the payload is the data as read: no copy, so cells
    // read from it can share its bytes.
    let payload = if codec == Codec::None {
        raw.slice(HEADER_SIZE..h.on_disk_data_size_with_header)
    } else {
        Bytes::from(compression::decompress(
            codec,
            data,
            h.uncompressed_size_without_header,
        )?)
    };
    Ok(Block {
        offset,
        header: h,
        payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block as HBase lays it out, CRC32C in chunks of `bpc`.
    pub(crate) fn make_block(t: BlockType, data: &[u8], bpc: usize) -> Vec<u8> {
        let chunks = (HEADER_SIZE + data.len()).div_ceil(bpc);
        let mut b = t.magic().to_vec();
        b.extend_from_slice(&((data.len() + 4 * chunks) as u32).to_be_bytes());
        b.extend_from_slice(&(data.len() as u32).to_be_bytes());
        b.extend_from_slice(&(-1i64).to_be_bytes());
        b.push(2);
        b.extend_from_slice(&(bpc as u32).to_be_bytes());
        b.extend_from_slice(&((HEADER_SIZE + data.len()) as u32).to_be_bytes());
        b.extend_from_slice(data);
        let sums: Vec<u8> = b
            .chunks(bpc)
            .flat_map(|c| crc32c::crc32c(c).to_be_bytes())
            .collect();
        b.extend_from_slice(&sums);
        b
    }

    #[test]
    fn a_block_with_chunked_checksums_decodes() {
        let data: Vec<u8> = (0..200u8).collect();
        let raw = make_block(BlockType::Meta, &data, 64);
        let h = parse_header(&raw).unwrap();
        assert_eq!(h.block_type, BlockType::Meta);
        let b = decode(0, h, &Bytes::from(raw), Codec::None).unwrap();
        assert_eq!(b.payload, data);
    }

    #[test]
    fn a_flipped_data_byte_fails_its_chunk_checksum() {
        let data: Vec<u8> = (0..200u8).collect();
        let mut raw = make_block(BlockType::Meta, &data, 64);
        raw[100] ^= 1;
        let h = parse_header(&raw).unwrap();
        let err = decode(0, h, &Bytes::from(raw), Codec::None).unwrap_err();
        assert!(err.contains("chunk 1"), "{err}");
    }

    #[test]
    fn headers_with_inconsistent_sizes_are_refused() {
        let raw = make_block(BlockType::Data, &[1, 2, 3], 512);
        let mut bad = raw.clone();
        bad[11] = bad[11].wrapping_add(4); // on-disk size: checksum room disagrees
        assert!(parse_header(&bad).is_err());
        let mut bad = raw.clone();
        bad[0] = b'X';
        assert!(parse_header(&bad).is_err());
        let mut bad = raw;
        bad[24] = 9; // checksum type
        assert!(parse_header(&bad).is_err());
    }
}
