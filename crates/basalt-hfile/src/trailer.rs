//! The fixed file trailer: the last bytes of every HFile, which say where
//! everything else is.
//!
//! Its last four bytes are the version, `(minor << 24) | major`, which
//! fixes the trailer's size: 4096 bytes in version 3 (212 in version 2).
//! It starts with the magic `TRABLK"$`, then (versions 2.2+ and 3) a
//! length-delimited protobuf message whose fields, by number, are listed in
//! [`Trailer`]; zero padding fills the rest.

use crate::compression::Codec;
use crate::cursor::{Cursor, Decode};
use crate::proto::{self, Value};

/// The trailer's magic.
pub const TRAILER_MAGIC: &[u8; 8] = b"TRABLK\"$";

/// The most index levels a file may claim (HBase's files have a handful;
/// the cap keeps a hostile file from making a lookup recurse for long).
pub const MAX_INDEX_LEVELS: u32 = 32;

/// What the trailer says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trailer {
    /// Major version (3 for the files HBase 2.x writes).
    pub major_version: u32,
    /// Minor version (3 for HBase 2.x: protobuf trailer, checksums).
    pub minor_version: u32,
    /// Byte offset where the trailer starts.
    pub offset: u64,
    /// Field 1: offset of the file-info block.
    pub file_info_offset: u64,
    /// Field 2: offset of the load-on-open section (the root data index).
    pub load_on_open_offset: u64,
    /// Field 3: uncompressed size of the whole data index.
    pub uncompressed_data_index_size: u64,
    /// Field 4: uncompressed size of every block.
    pub total_uncompressed_bytes: u64,
    /// Field 5: entries in the root data index.
    pub data_index_count: u32,
    /// Field 6: entries in the meta index.
    pub meta_index_count: u32,
    /// Field 7: cells in the file.
    pub entry_count: u64,
    /// Field 8: levels of the data index (1: the root points at data blocks).
    pub num_data_index_levels: u32,
    /// Field 9: offset of the first data block.
    pub first_data_block_offset: u64,
    /// Field 10: offset of the last data block.
    pub last_data_block_offset: u64,
    /// Field 11: the comparator's Java class name.
    pub comparator_class_name: String,
    /// Field 12: the compression algorithm's ordinal.
    pub compression: Codec,
    /// Field 13: present when the file is encrypted.
    pub encrypted: bool,
}

/// The trailer's size for a major version, or `None` for versions this
/// reader does not know.
fn trailer_size(major: u32) -> Option<u64> {
    match major {
        2 => Some(212),
        3 => Some(4096),
        _ => None,
    }
}

/// Parses the trailer from its bytes, which are the file's last
/// `trailer_size` bytes; `file_len` is the file's length. Errors carry the
/// offset within the file.
pub(crate) fn parse(tail: &[u8], file_len: u64) -> Result<Trailer, (u64, String)> {
    let tail_start = file_len - tail.len() as u64;
    if tail.len() < 4 {
        return Err((
            0,
            format!("{file_len} bytes is too short for an HFile trailer"),
        ));
    }
    let version_at = tail.len() - 4;
    let mut v = Cursor::at(tail, version_at);
    let version = v.u32("trailer version").map_err(|m| (file_len - 4, m))?;
    let major = version & 0x00ff_ffff;
    let minor = version >> 24;
    let Some(size) = trailer_size(major) else {
        return Err((
            file_len - 4,
            format!("unknown HFile major version {major} (minor {minor}) in the last 4 bytes: not an HFile v2/v3"),
        ));
    };
    if major == 2 && minor < 2 {
        return Err((
            file_len - 4,
            format!("HFile v2.{minor} has a Writable trailer, which this reader does not read"),
        ));
    }
    if (tail.len() as u64) < size {
        return Err((
            0,
            format!("file of {file_len} bytes is shorter than its {size}-byte v{major} trailer"),
        ));
    }
    let start = tail.len() - size as usize;
    let offset = tail_start + start as u64;
    let body = &tail[start..version_at];
    if &body[..8] != TRAILER_MAGIC {
        return Err((
            offset,
            format!("trailer magic is {:?}, expected TRABLK\"$", &body[..8]),
        ));
    }
    let at = |m: String| (offset + 8, format!("trailer protobuf: {m}"));
    let (msg, _) = proto::delimited(&body[8..], "trailer message").map_err(at)?;
    let mut t = Trailer {
        major_version: major,
        minor_version: minor,
        offset,
        file_info_offset: 0,
        load_on_open_offset: 0,
        uncompressed_data_index_size: 0,
        total_uncompressed_bytes: 0,
        data_index_count: 0,
        meta_index_count: 0,
        entry_count: 0,
        num_data_index_levels: 1,
        first_data_block_offset: 0,
        last_data_block_offset: 0,
        comparator_class_name: String::new(),
        compression: Codec::None,
        encrypted: false,
    };
    for (number, value) in proto::fields(msg, "trailer message").map_err(at)? {
        read_field(&mut t, number, &value).map_err(at)?;
    }
    check(&t).map_err(|m| (offset, m))?;
    Ok(t)
}

fn u32_of(value: &Value<'_>, what: &str) -> Decode<u32> {
    let v = proto::as_u64(value, what)?;
    u32::try_from(v).map_err(|_| format!("{what} is {v}, over 32 bits"))
}

fn read_field(t: &mut Trailer, number: u32, value: &Value<'_>) -> Decode<()> {
    match number {
        1 => t.file_info_offset = proto::as_u64(value, "file_info_offset")?,
        2 => t.load_on_open_offset = proto::as_u64(value, "load_on_open_data_offset")?,
        3 => t.uncompressed_data_index_size = proto::as_u64(value, "uncompressed_data_index_size")?,
        4 => t.total_uncompressed_bytes = proto::as_u64(value, "total_uncompressed_bytes")?,
        5 => t.data_index_count = u32_of(value, "data_index_count")?,
        6 => t.meta_index_count = u32_of(value, "meta_index_count")?,
        7 => t.entry_count = proto::as_u64(value, "entry_count")?,
        8 => t.num_data_index_levels = u32_of(value, "num_data_index_levels")?,
        9 => t.first_data_block_offset = proto::as_u64(value, "first_data_block_offset")?,
        10 => t.last_data_block_offset = proto::as_u64(value, "last_data_block_offset")?,
        11 => {
            let b = proto::as_bytes(value, "comparator_class_name")?;
            t.comparator_class_name = String::from_utf8_lossy(b).into_owned();
        }
        12 => {
            let ordinal = u32_of(value, "compression_codec")?;
            t.compression = Codec::from_ordinal(ordinal)
                .ok_or_else(|| format!("unknown compression codec ordinal {ordinal}"))?;
        }
        13 => t.encrypted = true,
        // Fields a later HBase may add are skipped, as protobuf does.
        _ => {}
    }
    Ok(())
}

/// Cross-checks of the offsets against the trailer's own position.
fn check(t: &Trailer) -> Decode<()> {
    if t.load_on_open_offset >= t.offset {
        return Err(format!(
            "load-on-open offset {} is not before the trailer at {}",
            t.load_on_open_offset, t.offset
        ));
    }
    if t.file_info_offset < t.load_on_open_offset || t.file_info_offset >= t.offset {
        return Err(format!(
            "file-info offset {} is outside the load-on-open section [{}, {})",
            t.file_info_offset, t.load_on_open_offset, t.offset
        ));
    }
    if t.num_data_index_levels == 0 || t.num_data_index_levels > MAX_INDEX_LEVELS {
        return Err(format!(
            "{} data index levels (1 to {MAX_INDEX_LEVELS} expected)",
            t.num_data_index_levels
        ));
    }
    if t.entry_count > 0
        && (t.first_data_block_offset > t.last_data_block_offset
            || t.last_data_block_offset >= t.load_on_open_offset)
    {
        return Err(format!(
            "data blocks [{}, {}] are not before the load-on-open section at {}",
            t.first_data_block_offset, t.last_data_block_offset, t.load_on_open_offset
        ));
    }
    Ok(())
}

/// How many bytes from the end of a file the trailer may need: the
/// largest trailer of any version read here.
pub(crate) const MAX_TRAILER_SIZE: u64 = 4096;
