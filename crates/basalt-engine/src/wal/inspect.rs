//! Read-only inspection of a log directory, for the offline checker and
//! repair tool (`basalt check`, `basalt repair`): every record of every
//! segment is read and verified, nothing is applied and no file is
//! changed (unlike [`Wal::open`](super::Wal::open), which truncates a torn
//! tail). The rules for what is torn and what is corrupt are replay's (see
//! docs/wal-format.md).

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use basalt_types::{Error, Result};
use bytes::Bytes;

use super::format::{self, MAX_RECORD_PAYLOAD, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN};
use super::segment;

/// The first bad record of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentDamage {
    /// Where the bad record (or the segment header, at 0) starts.
    pub offset: u64,
    /// What check failed.
    pub message: String,
    /// True when it looks cut short by a crash (incomplete, or followed by
    /// nothing but zeros): replay drops it when it ends the last segment.
    pub torn: bool,
}

/// What reading one segment found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentScan {
    /// Segment id (the number in the file name).
    pub id: u64,
    /// The file.
    pub path: PathBuf,
    /// File size in bytes.
    pub size_bytes: u64,
    /// Intact records before any damage.
    pub records: u64,
    /// Per region, the highest sequence id among those records.
    pub max_sequence_ids: BTreeMap<u64, u64>,
    /// Where the intact records end: the first bad record's offset, or the
    /// file size.
    pub valid_bytes: u64,
    /// The first bad record, if any.
    pub damage: Option<SegmentDamage>,
}

/// The segments of the log in `dir`, oldest first (none when the
/// directory does not exist).
pub fn list_segment_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    segment::list_segments(dir)
}

/// Reads and verifies every segment of the log in `dir`, oldest first.
pub fn scan_log(dir: &Path) -> Result<Vec<SegmentScan>> {
    list_segment_files(dir)?
        .into_iter()
        .map(|(id, path)| scan_segment(&path, id))
        .collect()
}

/// Reads and verifies every record of segment `id` at `path`.
pub fn scan_segment(path: &Path, id: u64) -> Result<SegmentScan> {
    let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
    let size = bytes.len() as u64;
    let mut scan = SegmentScan {
        id,
        path: path.to_path_buf(),
        size_bytes: size,
        records: 0,
        max_sequence_ids: BTreeMap::new(),
        valid_bytes: 0,
        damage: None,
    };
    let damage = |offset: usize, message: String, torn: bool| SegmentDamage {
        offset: offset as u64,
        message,
        torn,
    };
    let Some(header) = bytes
        .get(..SEGMENT_HEADER_LEN)
        .and_then(|h| <[u8; SEGMENT_HEADER_LEN]>::try_from(h).ok())
    else {
        scan.damage = Some(damage(
            0,
            format!("segment header truncated: file has {size} bytes"),
            false,
        ));
        return Ok(scan);
    };
    if let Err(m) = format::check_segment_header(&header, id) {
        scan.damage = Some(damage(0, m, false));
        return Ok(scan);
    }
    let zeros_from = |at: usize| {
        bytes
            .get(at..)
            .is_none_or(|rest| rest.iter().all(|&b| b == 0))
    };
    let mut offset = SEGMENT_HEADER_LEN;
    scan.damage = loop {
        let remaining = bytes.len() - offset;
        if remaining == 0 {
            break None;
        }
        let Some(rh) = bytes
            .get(offset..offset + RECORD_HEADER_LEN)
            .and_then(|h| <[u8; RECORD_HEADER_LEN]>::try_from(h).ok())
        else {
            break Some(damage(
                offset,
                format!("record header cut short ({remaining} of {RECORD_HEADER_LEN} bytes)"),
                true,
            ));
        };
        let body_at = offset + RECORD_HEADER_LEN;
        let Some(rh) = format::decode_record_header(&rh) else {
            let torn = zeros_from(body_at);
            break Some(damage(
                offset,
                "record header checksum mismatch".into(),
                torn,
            ));
        };
        let len = rh.len as usize;
        if len > MAX_RECORD_PAYLOAD {
            break Some(damage(
                offset,
                format!("record length {len} exceeds the limit of {MAX_RECORD_PAYLOAD}"),
                false,
            ));
        }
        let Some(payload) = bytes.get(body_at..body_at + len) else {
            break Some(damage(
                offset,
                format!(
                    "record payload cut short ({} of {len} bytes)",
                    bytes.len() - body_at
                ),
                true,
            ));
        };
        if crc32c::crc32c(payload) != rh.payload_crc {
            let torn = zeros_from(body_at + len);
            break Some(damage(offset, "record checksum mismatch".into(), torn));
        }
        match format::decode_payload(Bytes::copy_from_slice(payload)) {
            Ok(edit) => {
                scan.records += 1;
                let max = scan.max_sequence_ids.entry(edit.region_id).or_insert(0);
                *max = (*max).max(edit.sequence_id);
            }
            Err(m) => break Some(damage(offset, format!("malformed record: {m}"), false)),
        }
        offset = body_at + len;
    };
    scan.valid_bytes = scan.damage.as_ref().map_or(size, |d| d.offset);
    Ok(scan)
}

/// Cuts segment `path` to its first `len` bytes and makes that durable:
/// point-in-time recovery drops what follows the first damaged record.
pub fn truncate_segment(path: &Path, len: u64) -> Result<()> {
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(len).and_then(|()| f.sync_all()))
        .map_err(|e| Error::io(path, e))
}
