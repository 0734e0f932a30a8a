//! File metadata: what a store file holds, summarised for planning reads,
//! flushes and compactions without touching data blocks.
//!
//! Encoded as a list of tagged fields, `tag varint | length varint | bytes`,
//! so later versions can add fields that older readers skip. Integers
//! inside fields are fixed-width little endian; keys use the encoded key
//! layout of data blocks (with a row length varint in front).

use std::collections::BTreeMap;

use bytes::Bytes;

use basalt_types::{BloomType, Cell, CellType, Compression, DataBlockEncoding};

use super::format::{decode_key, encode_key, put_varint, DecodeResult, Decoder, MAX_BLOCK_LEN};

/// Cells of each type in a file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CellTypeCounts {
    /// Put cells.
    pub puts: u64,
    /// Delete (one version) markers.
    pub deletes: u64,
    /// DeleteFamilyVersion markers.
    pub delete_family_versions: u64,
    /// DeleteColumn markers.
    pub delete_columns: u64,
    /// DeleteFamily markers.
    pub delete_families: u64,
}

impl CellTypeCounts {
    /// Counts one cell of type `t`.
    pub fn count(&mut self, t: CellType) {
        let slot = match t {
            CellType::Put => &mut self.puts,
            CellType::Delete => &mut self.deletes,
            CellType::DeleteFamilyVersion => &mut self.delete_family_versions,
            CellType::DeleteColumn => &mut self.delete_columns,
            CellType::DeleteFamily => &mut self.delete_families,
        };
        *slot += 1;
    }

    /// Every delete marker, of any kind.
    pub fn delete_markers(&self) -> u64 {
        self.deletes + self.delete_family_versions + self.delete_columns + self.delete_families
    }

    /// Family-wide markers (DeleteFamily and DeleteFamilyVersion), which a
    /// ROWCOL bloom lookup of one column must also consider.
    pub fn family_markers(&self) -> u64 {
        self.delete_family_versions + self.delete_families
    }
}

/// Everything a store file says about itself (its meta block), plus its
/// size on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreFileMeta {
    /// Format version of the file.
    pub format_version: u32,
    /// The column family every cell of the file belongs to.
    pub family: Bytes,
    /// The first cell's key (value empty); `None` for a file without cells.
    pub first_key: Option<Cell>,
    /// The last cell's key (value empty).
    pub last_key: Option<Cell>,
    /// Smallest cell timestamp (`i64::MAX` when empty).
    pub min_timestamp: i64,
    /// Largest cell timestamp (`i64::MIN` when empty).
    pub max_timestamp: i64,
    /// Smallest sequence id (`u64::MAX` when empty).
    pub min_sequence_id: u64,
    /// Largest sequence id of any cell (0 when empty). A flush may record a
    /// higher flushed-up-to id in `properties`.
    pub max_sequence_id: u64,
    /// Number of cells, all types.
    pub cell_count: u64,
    /// Number of cells per type.
    pub type_counts: CellTypeCounts,
    /// Number of data blocks.
    pub data_block_count: u64,
    /// Sum of the uncompressed sizes of the data blocks.
    pub uncompressed_data_bytes: u64,
    /// Distinct keys in the bloom filter (rows or row+qualifier pairs).
    pub bloom_key_count: u64,
    /// BLOOMFILTER the file was written with.
    pub bloom: BloomType,
    /// COMPRESSION the data blocks were written with (a block that did not
    /// shrink is stored uncompressed).
    pub compression: Compression,
    /// DATA_BLOCK_ENCODING the data blocks were written with.
    pub encoding: DataBlockEncoding,
    /// BLOCKSIZE target the file was written with.
    pub block_size: u32,
    /// When the writer was created, milliseconds since the epoch (from the
    /// caller's clock).
    pub created_at_ms: i64,
    /// Smallest put timestamp (`i64::MAX` with no put); `None` for a file
    /// written before the field existed. A major compaction keeping deleted
    /// cells drops markers older than every put it compacts. A flushed or
    /// minor-compacted file records the smallest among the puts HBase's
    /// flush would have written (see `compaction::KeptPutFloor`).
    pub earliest_put_timestamp: Option<i64>,
    /// Free-form properties set by the flusher or compactor.
    pub properties: BTreeMap<String, Bytes>,
    /// Size of the file in bytes.
    pub file_size: u64,
}

impl StoreFileMeta {
    /// Metadata of a file without cells yet.
    pub(crate) fn empty(family: Bytes) -> Self {
        StoreFileMeta {
            format_version: super::format::FORMAT_VERSION,
            family,
            first_key: None,
            last_key: None,
            min_timestamp: i64::MAX,
            max_timestamp: i64::MIN,
            min_sequence_id: u64::MAX,
            max_sequence_id: 0,
            cell_count: 0,
            type_counts: CellTypeCounts::default(),
            data_block_count: 0,
            uncompressed_data_bytes: 0,
            bloom_key_count: 0,
            bloom: BloomType::None,
            compression: Compression::None,
            encoding: DataBlockEncoding::None,
            block_size: 0,
            created_at_ms: 0,
            earliest_put_timestamp: None,
            properties: BTreeMap::new(),
            file_size: 0,
        }
    }
}

// Field tags. Never renumber: they are the format.
const T_FAMILY: u64 = 1;
const T_FIRST_KEY: u64 = 2;
const T_LAST_KEY: u64 = 3;
const T_TIMESTAMPS: u64 = 4;
const T_SEQUENCE_IDS: u64 = 5;
const T_CELL_COUNT: u64 = 6;
const T_TYPE_COUNTS: u64 = 7;
const T_DATA_BLOCKS: u64 = 8;
const T_BLOOM_KEYS: u64 = 9;
const T_OPTIONS: u64 = 10;
const T_CREATED_AT: u64 = 11;
const T_PROPERTY: u64 = 12;
const T_EARLIEST_PUT: u64 = 13;

fn field(out: &mut Vec<u8>, tag: u64, body: &[u8]) {
    put_varint(out, tag);
    put_varint(out, body.len() as u64);
    out.extend_from_slice(body);
}

fn key_field(out: &mut Vec<u8>, tag: u64, cell: &Cell, scratch: &mut Vec<u8>) {
    scratch.clear();
    put_varint(scratch, cell.row.len() as u64);
    encode_key(cell, scratch);
    field(out, tag, scratch);
}

fn u64s(values: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 * values.len());
    for &v in values {
        crate::coding::put_u64_le(&mut out, v);
    }
    out
}

fn bloom_code(b: BloomType) -> u8 {
    match b {
        BloomType::None => 0,
        BloomType::Row => 1,
        BloomType::RowCol => 2,
    }
}

fn encoding_code(e: DataBlockEncoding) -> u8 {
    match e {
        DataBlockEncoding::None => 0,
        DataBlockEncoding::Prefix => 1,
        DataBlockEncoding::Diff => 2,
        DataBlockEncoding::FastDiff => 3,
        DataBlockEncoding::RowIndexV1 => 4,
    }
}

/// Encodes the meta block payload (everything but `file_size` and
/// `format_version`, which the trailer and the file itself give).
pub(crate) fn encode(meta: &StoreFileMeta) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    let mut scratch = Vec::new();
    field(&mut out, T_FAMILY, &meta.family);
    if let Some(k) = &meta.first_key {
        key_field(&mut out, T_FIRST_KEY, k, &mut scratch);
    }
    if let Some(k) = &meta.last_key {
        key_field(&mut out, T_LAST_KEY, k, &mut scratch);
    }
    field(
        &mut out,
        T_TIMESTAMPS,
        &u64s(&[meta.min_timestamp as u64, meta.max_timestamp as u64]),
    );
    field(
        &mut out,
        T_SEQUENCE_IDS,
        &u64s(&[meta.min_sequence_id, meta.max_sequence_id]),
    );
    field(&mut out, T_CELL_COUNT, &u64s(&[meta.cell_count]));
    let c = &meta.type_counts;
    field(
        &mut out,
        T_TYPE_COUNTS,
        &u64s(&[
            c.puts,
            c.deletes,
            c.delete_family_versions,
            c.delete_columns,
            c.delete_families,
        ]),
    );
    field(
        &mut out,
        T_DATA_BLOCKS,
        &u64s(&[meta.data_block_count, meta.uncompressed_data_bytes]),
    );
    field(&mut out, T_BLOOM_KEYS, &u64s(&[meta.bloom_key_count]));
    let mut opts = vec![
        bloom_code(meta.bloom),
        super::compression::codec_id(meta.compression),
        encoding_code(meta.encoding),
    ];
    crate::coding::put_u32_le(&mut opts, meta.block_size);
    field(&mut out, T_OPTIONS, &opts);
    field(&mut out, T_CREATED_AT, &u64s(&[meta.created_at_ms as u64]));
    if let Some(ts) = meta.earliest_put_timestamp {
        field(&mut out, T_EARLIEST_PUT, &u64s(&[ts as u64]));
    }
    for (k, v) in &meta.properties {
        scratch.clear();
        put_varint(&mut scratch, k.len() as u64);
        scratch.extend_from_slice(k.as_bytes());
        scratch.extend_from_slice(v);
        field(&mut out, T_PROPERTY, &scratch);
    }
    out
}

fn fixed_u64s<const N: usize>(body: &[u8], what: &str) -> DecodeResult<[u64; N]> {
    if body.len() != 8 * N {
        return Err(format!("meta field {what} has {} bytes", body.len()));
    }
    let mut out = [0u64; N];
    for (i, v) in out.iter_mut().enumerate() {
        *v = crate::coding::u64_le(body, 8 * i, what)?;
    }
    Ok(out)
}

fn decode_key_field(body: &[u8], family: &Bytes) -> DecodeResult<Cell> {
    let mut d = Decoder::new(body);
    let row_len = d.len(MAX_BLOCK_LEN, "row length")?;
    let key = d.bytes(d.remaining())?;
    Ok(decode_key(key, row_len)?.to_cell(family))
}

/// Decodes a meta block payload; unknown tags are skipped.
pub(crate) fn decode(payload: &[u8]) -> DecodeResult<StoreFileMeta> {
    let mut meta = StoreFileMeta::empty(Bytes::new());
    let mut d = Decoder::new(payload);
    let mut seen_family = false;
    let mut keys: Vec<(u64, Vec<u8>)> = Vec::new();
    while !d.is_empty() {
        let tag = d.varint()?;
        let len = d.len(MAX_BLOCK_LEN, "meta field length")?;
        let body = d.bytes(len)?;
        match tag {
            T_FAMILY => {
                meta.family = Bytes::copy_from_slice(body);
                seen_family = true;
            }
            T_FIRST_KEY | T_LAST_KEY => keys.push((tag, body.to_vec())),
            T_TIMESTAMPS => {
                let [a, b] = fixed_u64s::<2>(body, "timestamps")?;
                meta.min_timestamp = a as i64;
                meta.max_timestamp = b as i64;
            }
            T_SEQUENCE_IDS => {
                [meta.min_sequence_id, meta.max_sequence_id] =
                    fixed_u64s::<2>(body, "sequence ids")?;
            }
            T_CELL_COUNT => [meta.cell_count] = fixed_u64s::<1>(body, "cell count")?,
            T_TYPE_COUNTS => {
                let [p, d1, dfv, dc, df] = fixed_u64s::<5>(body, "type counts")?;
                meta.type_counts = CellTypeCounts {
                    puts: p,
                    deletes: d1,
                    delete_family_versions: dfv,
                    delete_columns: dc,
                    delete_families: df,
                };
            }
            T_DATA_BLOCKS => {
                [meta.data_block_count, meta.uncompressed_data_bytes] =
                    fixed_u64s::<2>(body, "data blocks")?;
            }
            T_BLOOM_KEYS => [meta.bloom_key_count] = fixed_u64s::<1>(body, "bloom keys")?,
            T_OPTIONS => {
                if body.len() != 7 {
                    return Err(format!("meta options field has {} bytes", body.len()));
                }
                meta.bloom = match body[0] {
                    0 => BloomType::None,
                    1 => BloomType::Row,
                    2 => BloomType::RowCol,
                    b => return Err(format!("unknown bloom type {b}")),
                };
                meta.compression = match body[1] {
                    0 => Compression::None,
                    1 => Compression::Snappy,
                    2 => Compression::Lz4,
                    3 => Compression::Zstd,
                    4 => Compression::Gz,
                    c => return Err(format!("unknown compression {c}")),
                };
                meta.encoding = match body[2] {
                    0 => DataBlockEncoding::None,
                    1 => DataBlockEncoding::Prefix,
                    2 => DataBlockEncoding::Diff,
                    3 => DataBlockEncoding::FastDiff,
                    4 => DataBlockEncoding::RowIndexV1,
                    e => return Err(format!("unknown data block encoding {e}")),
                };
                meta.block_size = crate::coding::u32_le(body, 3, "meta block size")?;
            }
            T_CREATED_AT => {
                let [t] = fixed_u64s::<1>(body, "creation time")?;
                meta.created_at_ms = t as i64;
            }
            T_EARLIEST_PUT => {
                let [t] = fixed_u64s::<1>(body, "earliest put timestamp")?;
                meta.earliest_put_timestamp = Some(t as i64);
            }
            T_PROPERTY => {
                let mut p = Decoder::new(body);
                let klen = p.len(body.len(), "property name length")?;
                let k = std::str::from_utf8(p.bytes(klen)?)
                    .map_err(|_| "property name is not UTF-8".to_string())?
                    .to_string();
                let v = Bytes::copy_from_slice(p.bytes(p.remaining())?);
                meta.properties.insert(k, v);
            }
            _ => {} // A field from a later writer: skip it.
        }
    }
    if !seen_family {
        return Err("meta block names no family".to_string());
    }
    for (tag, body) in keys {
        let key = decode_key_field(&body, &meta.family)?;
        if tag == T_FIRST_KEY {
            meta.first_key = Some(key);
        } else {
            meta.last_key = Some(key);
        }
    }
    if meta.first_key.is_some() != meta.last_key.is_some()
        || meta.first_key.is_some() != (meta.cell_count > 0)
    {
        return Err("meta block's key range disagrees with its cell count".to_string());
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_round_trips() {
        let mut m = StoreFileMeta::empty(Bytes::from_static(b"cf"));
        m.first_key = Some(Cell::put("a", "cf", "q", 5, ""));
        m.last_key = Some(Cell::put("z", "cf", "", 1, ""));
        m.min_timestamp = 1;
        m.max_timestamp = 5;
        m.min_sequence_id = 3;
        m.max_sequence_id = 9;
        m.cell_count = 10;
        m.type_counts.count(CellType::Put);
        m.type_counts.count(CellType::DeleteFamily);
        m.data_block_count = 2;
        m.uncompressed_data_bytes = 1234;
        m.bloom_key_count = 4;
        m.bloom = BloomType::RowCol;
        m.compression = Compression::Zstd;
        m.encoding = DataBlockEncoding::FastDiff;
        m.block_size = 65536;
        m.created_at_ms = 1_700_000_000_000;
        m.earliest_put_timestamp = Some(-7);
        m.properties
            .insert("compaction".into(), Bytes::from_static(b"major"));
        let enc = encode(&m);
        assert_eq!(decode(&enc).unwrap(), m);
        // A file from before the earliest put field: unknown, not "none".
        let mut legacy = m.clone();
        legacy.earliest_put_timestamp = None;
        assert_eq!(decode(&encode(&legacy)).unwrap(), legacy);
        // An unknown field is skipped.
        let mut extended = enc.clone();
        field(&mut extended, 99, b"future");
        assert_eq!(decode(&extended).unwrap(), m);
        for i in 0..enc.len() {
            let mut bad = enc.clone();
            bad[i] ^= 0x55;
            let _ = decode(&bad);
        }
    }
}
