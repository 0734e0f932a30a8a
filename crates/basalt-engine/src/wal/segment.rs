//! Segment files: naming, creation and replay.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use basalt_types::{Error, Result};
use bytes::Bytes;

use super::format::{self, MAX_RECORD_PAYLOAD, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN};
use super::{SegmentInfo, TornTail, WalEdit};

/// Suffix of a finished segment file.
const SEGMENT_SUFFIX: &str = ".log";

/// Suffix of a segment being created. A segment is written under this name
/// and renamed once its header is durable, so a file with the final name
/// always has a complete header; leftovers are deleted at open.
const TMP_SUFFIX: &str = ".log.tmp";

/// Digits in a segment file name: enough for any u64, zero-padded so that
/// names sort in id order.
const ID_DIGITS: usize = 20;

/// The file name of segment `id`, e.g. `00000000000000000001.log`.
pub(crate) fn segment_file_name(id: u64) -> String {
    format!("{id:0width$}{SEGMENT_SUFFIX}", width = ID_DIGITS)
}

fn parse_segment_id(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SEGMENT_SUFFIX)?;
    if digits.len() != ID_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Lists the segments in `dir` in id order and deletes half-created ones.
pub(crate) fn list_segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut segments = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if name.ends_with(TMP_SUFFIX) {
            // Never renamed, so it holds no records (see TMP_SUFFIX).
            fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
            continue;
        }
        match parse_segment_id(&name) {
            Some(id) => segments.push((id, path)),
            None => {
                tracing::debug!(file = %path.display(), "ignoring non-segment file in WAL directory")
            }
        }
    }
    segments.sort_unstable_by_key(|(id, _)| *id);
    Ok(segments)
}

/// Makes directory entry changes (create, rename, delete) in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

/// The segment new records are appended to. Only the group-commit leader
/// touches it.
#[derive(Debug)]
pub(crate) struct SegmentWriter {
    pub id: u64,
    pub path: PathBuf,
    pub file: File,
    /// Bytes in the file, header included. The file position is always here:
    /// the writer only ever appends.
    pub size: u64,
}

impl SegmentWriter {
    /// Creates segment `id` in `dir` with a durable header and directory
    /// entry, so a crash right after leaves either no segment or a valid
    /// empty one.
    pub(crate) fn create(dir: &Path, id: u64) -> Result<SegmentWriter> {
        let path = dir.join(segment_file_name(id));
        let tmp = dir.join(format!("{id:0width$}{TMP_SUFFIX}", width = ID_DIGITS));
        match fs::remove_file(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&tmp, e)),
        }
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, e))?;
        file.write_all(&format::encode_segment_header(id))
            .and_then(|()| file.sync_all())
            .map_err(|e| Error::io(&tmp, e))?;
        if path.exists() {
            // Ids only grow, so this means someone else writes here too.
            return Err(Error::WalFailed(format!(
                "segment {} already exists",
                path.display()
            )));
        }
        fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        sync_dir(dir)?;
        Ok(SegmentWriter {
            id,
            path,
            file,
            size: SEGMENT_HEADER_LEN as u64,
        })
    }
}

/// What replaying one segment found.
#[derive(Debug)]
pub(crate) struct ScannedSegment {
    pub info: SegmentInfo,
    pub torn_tail: Option<TornTail>,
}

/// Replays segment `id` at `path`, calling `apply` for each record in order.
///
/// A damaged last record is a torn tail when it is incomplete or when only
/// zero bytes follow it (including nothing at all); in the last segment
/// (`is_last`) it is truncated away and reported, anywhere else it is
/// corruption. Every other defect is [`Error::Corruption`] at the offset of
/// the record (or 0 for the segment header). See docs/wal-format.md.
pub(crate) fn replay_segment(
    path: &Path,
    id: u64,
    is_last: bool,
    apply: &mut dyn FnMut(WalEdit) -> Result<()>,
) -> Result<ScannedSegment> {
    let io_err = |e: io::Error| Error::io(path, e);
    let corrupt = |offset: u64, message: String| Error::Corruption {
        path: path.to_path_buf(),
        offset,
        message,
    };

    let file = File::open(path).map_err(io_err)?;
    let file_len = file.metadata().map_err(io_err)?.len();
    let mut reader = BufReader::with_capacity(64 << 10, file);

    if file_len < SEGMENT_HEADER_LEN as u64 {
        return Err(corrupt(
            0,
            format!("segment header truncated: file has {file_len} bytes"),
        ));
    }
    let mut header = [0u8; SEGMENT_HEADER_LEN];
    reader.read_exact(&mut header).map_err(io_err)?;
    if let Err(m) = format::check_segment_header(&header, id) {
        // The last segment holding nothing but its (damaged) header has no
        // record to recover: it is dropped and reported like a torn tail
        // instead of refusing the start. A segment with bytes past its
        // header may hold acknowledged records: that stays an error.
        if is_last && file_len == SEGMENT_HEADER_LEN as u64 {
            return Ok(ScannedSegment {
                info: SegmentInfo {
                    id,
                    path: path.to_path_buf(),
                    size_bytes: file_len,
                    records: 0,
                    max_sequence_ids: BTreeMap::new(),
                    active: false,
                },
                torn_tail: Some(TornTail {
                    path: path.to_path_buf(),
                    offset: 0,
                    dropped_bytes: file_len,
                    reason: format!("damaged header of a last segment without records: {m}"),
                }),
            });
        }
        return Err(corrupt(0, m));
    }

    let mut info = SegmentInfo {
        id,
        path: path.to_path_buf(),
        size_bytes: file_len,
        records: 0,
        max_sequence_ids: BTreeMap::new(),
        active: false,
    };
    // Invariant: `offset` is the start of the next unread record and the
    // reader is positioned there; everything before it has been applied.
    let mut offset = SEGMENT_HEADER_LEN as u64;
    let torn_reason = loop {
        let remaining = file_len - offset;
        if remaining == 0 {
            break None;
        }
        if remaining < RECORD_HEADER_LEN as u64 {
            break Some(format!(
                "record header cut short ({remaining} of {RECORD_HEADER_LEN} bytes)"
            ));
        }
        let mut rh = [0u8; RECORD_HEADER_LEN];
        reader.read_exact(&mut rh).map_err(io_err)?;
        let Some(rh) = format::decode_record_header(&rh) else {
            if rest_is_zero(&mut reader).map_err(io_err)? {
                break Some("record header checksum mismatch at the end of the file".into());
            }
            return Err(corrupt(offset, "record header checksum mismatch".into()));
        };
        let len = rh.len as usize;
        if len > MAX_RECORD_PAYLOAD {
            // The header checksum matched, so this length was written on
            // purpose by something that is not this code: not a crash.
            return Err(corrupt(
                offset,
                format!("record length {len} exceeds the limit of {MAX_RECORD_PAYLOAD}"),
            ));
        }
        let body = remaining - RECORD_HEADER_LEN as u64;
        if len as u64 > body {
            break Some(format!("record payload cut short ({body} of {len} bytes)"));
        }
        // Bounded by MAX_RECORD_PAYLOAD and by the bytes present in the file.
        let mut payload = vec![0u8; len];
        reader.read_exact(&mut payload).map_err(io_err)?;
        if crc32c::crc32c(&payload) != rh.payload_crc {
            if rest_is_zero(&mut reader).map_err(io_err)? {
                break Some("record checksum mismatch at the end of the file".into());
            }
            return Err(corrupt(offset, "record checksum mismatch".into()));
        }
        let edit = format::decode_payload(Bytes::from(payload))
            .map_err(|m| corrupt(offset, format!("malformed record: {m}")))?;
        info.records += 1;
        let max = info.max_sequence_ids.entry(edit.region_id).or_insert(0);
        *max = (*max).max(edit.sequence_id);
        apply(edit)?;
        offset += (RECORD_HEADER_LEN + len) as u64;
    };

    let Some(reason) = torn_reason else {
        return Ok(ScannedSegment {
            info,
            torn_tail: None,
        });
    };
    if !is_last {
        // Segments are fsynced before the next one is created, so only the
        // last one can have been cut short by a crash.
        return Err(corrupt(
            offset,
            format!("{reason} in a segment that is not the last"),
        ));
    }
    let dropped_bytes = file_len - offset;
    // Truncate so that, once newer segments exist, this segment does not
    // look damaged in the middle of the log.
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(offset).and_then(|()| f.sync_all()))
        .map_err(io_err)?;
    tracing::warn!(
        file = %path.display(),
        offset,
        dropped_bytes,
        reason = %reason,
        "dropped the torn tail of the write-ahead log"
    );
    info.size_bytes = offset;
    Ok(ScannedSegment {
        info,
        torn_tail: Some(TornTail {
            path: path.to_path_buf(),
            offset,
            dropped_bytes,
            reason,
        }),
    })
}

/// True when nothing but zero bytes are left to read. A crash can leave a
/// file whose length was extended but whose last blocks were never written;
/// those read back as zeros.
fn rest_is_zero(reader: &mut impl Read) -> io::Result<bool> {
    let mut buf = [0u8; 8192];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(true),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf[..n].iter().any(|&b| b != 0) {
            return Ok(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_and_parse() {
        assert_eq!(segment_file_name(1), "00000000000000000001.log");
        assert_eq!(segment_file_name(u64::MAX), "18446744073709551615.log");
        assert_eq!(parse_segment_id("00000000000000000042.log"), Some(42));
        assert_eq!(
            parse_segment_id(&segment_file_name(u64::MAX)),
            Some(u64::MAX)
        );
        assert_eq!(parse_segment_id("42.log"), None);
        assert_eq!(parse_segment_id("0000000000000000004x.log"), None);
        assert_eq!(parse_segment_id("99999999999999999999.log"), None);
        assert_eq!(parse_segment_id("00000000000000000042.log.tmp"), None);
        assert!(segment_file_name(9) < segment_file_name(10));
    }
}
