//! The file-info block: a map of byte-string keys to byte-string values,
//! as the magic `PBUF` and a length-delimited protobuf message whose
//! field 1 repeats (key = field 1, value = field 2) pairs.

use std::collections::BTreeMap;

use crate::cursor::Decode;
use crate::proto::{self, Value};

/// The protobuf magic before the file-info message.
pub const PBUF_MAGIC: &[u8; 4] = b"PBUF";

/// The file-info map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileInfo {
    entries: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// Keys HBase writes (the writer's and the store's).
pub mod keys {
    /// Last key of the file (a flat key).
    pub const LAST_KEY: &[u8] = b"hfile.LASTKEY";
    /// Average key length (4-byte int).
    pub const AVG_KEY_LEN: &[u8] = b"hfile.AVG_KEY_LEN";
    /// Average value length (4-byte int).
    pub const AVG_VALUE_LEN: &[u8] = b"hfile.AVG_VALUE_LEN";
    /// Longest tags of a cell (4-byte int); present when cells carry tags.
    pub const MAX_TAGS_LEN: &[u8] = b"hfile.MAX_TAGS_LEN";
    /// Whether encoded blocks compress tags (boolean byte).
    pub const TAGS_COMPRESSED: &[u8] = b"hfile.TAGS_COMPRESSED";
    /// File creation time (8-byte long, ms).
    pub const CREATE_TIME: &[u8] = b"hfile.CREATE_TIME_KEY";
    /// Largest memstore timestamp of a cell (8-byte long).
    pub const MAX_MEMSTORE_TS: &[u8] = b"MAX_MEMSTORE_TS_KEY";
    /// 1 when each cell ends with its memstore timestamp (4-byte int).
    pub const KEY_VALUE_VERSION: &[u8] = b"KEY_VALUE_VERSION";
    /// The data block encoding's name.
    pub const DATA_BLOCK_ENCODING: &[u8] = b"DATA_BLOCK_ENCODING";
    /// The general Bloom filter's type name (ROW, ROWCOL, ...).
    pub const BLOOM_FILTER_TYPE: &[u8] = b"BLOOM_FILTER_TYPE";
    /// The store's largest sequence id (8-byte long).
    pub const MAX_SEQ_ID: &[u8] = b"MAX_SEQ_ID_KEY";
    /// Whether a major compaction wrote the file (boolean byte).
    pub const MAJOR_COMPACTION: &[u8] = b"MAJOR_COMPACTION_KEY";
    /// The time range of the cells (protobuf `TimeRangeTracker`).
    pub const TIMERANGE: &[u8] = b"TIMERANGE";
    /// Number of DeleteFamily markers (8-byte long).
    pub const DELETE_FAMILY_COUNT: &[u8] = b"DELETE_FAMILY_COUNT";
}

impl FileInfo {
    /// Parses the file-info block's payload.
    pub(crate) fn parse(payload: &[u8]) -> Decode<FileInfo> {
        if !payload.starts_with(PBUF_MAGIC) {
            return Err(format!(
                "file info does not start with PBUF (found {:?})",
                &payload[..payload.len().min(4)]
            ));
        }
        let (msg, _) = proto::delimited(&payload[4..], "file-info message")
            .map_err(|e| format!("{e} (after the 4-byte PBUF magic)"))?;
        let mut entries = BTreeMap::new();
        for (number, value) in proto::fields(msg, "file-info message")? {
            if number != 1 {
                continue;
            }
            let pair = proto::as_bytes(&value, "file-info map entry")?;
            let (mut key, mut val) = (None, None);
            for (n, v) in proto::fields(pair, "file-info map entry")? {
                match (n, v) {
                    (1, Value::Bytes(b)) => key = Some(b),
                    (2, Value::Bytes(b)) => val = Some(b),
                    (1 | 2, _) => return Err("file-info entry field is not bytes".to_string()),
                    _ => {}
                }
            }
            let key = key.ok_or("file-info entry without a key")?;
            entries.insert(key.to_vec(), val.unwrap_or_default().to_vec());
        }
        Ok(FileInfo { entries })
    }

    /// The value of `key`.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.entries.get(key).map(Vec::as_slice)
    }

    /// Every entry, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.entries
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
    }

    /// A big-endian long value (`Bytes.toBytes(long)`).
    pub fn get_i64(&self, key: &[u8]) -> Decode<Option<i64>> {
        self.get(key)
            .map(|v| {
                <[u8; 8]>::try_from(v).map(i64::from_be_bytes).map_err(|_| {
                    format!(
                        "file info {} is {} bytes, 8 expected",
                        String::from_utf8_lossy(key),
                        v.len()
                    )
                })
            })
            .transpose()
    }

    /// A big-endian int value.
    pub fn get_i32(&self, key: &[u8]) -> Decode<Option<i32>> {
        self.get(key)
            .map(|v| {
                <[u8; 4]>::try_from(v).map(i32::from_be_bytes).map_err(|_| {
                    format!(
                        "file info {} is {} bytes, 4 expected",
                        String::from_utf8_lossy(key),
                        v.len()
                    )
                })
            })
            .transpose()
    }

    /// A boolean value (`Bytes.toBytes(boolean)`: one byte, non-zero true).
    pub fn get_bool(&self, key: &[u8]) -> Decode<Option<bool>> {
        self.get(key)
            .map(|v| match v {
                [b] => Ok(*b != 0),
                _ => Err(format!(
                    "file info {} is {} bytes, 1 expected",
                    String::from_utf8_lossy(key),
                    v.len()
                )),
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(k: &[u8], v: &[u8]) -> Vec<u8> {
        let mut p = vec![0x0a, k.len() as u8];
        p.extend_from_slice(k);
        p.push(0x12);
        p.push(v.len() as u8);
        p.extend_from_slice(v);
        let mut out = vec![0x0a, p.len() as u8];
        out.extend_from_slice(&p);
        out
    }

    #[test]
    fn file_info_maps_keys_to_values() {
        let mut msg = pair(b"KEY_VALUE_VERSION", &1i32.to_be_bytes());
        msg.extend_from_slice(&pair(b"hfile.TAGS_COMPRESSED", &[0xff]));
        let mut payload = b"PBUF".to_vec();
        payload.push(msg.len() as u8);
        payload.extend_from_slice(&msg);
        let fi = FileInfo::parse(&payload).unwrap();
        assert_eq!(fi.get_i32(keys::KEY_VALUE_VERSION), Ok(Some(1)));
        assert_eq!(fi.get_bool(keys::TAGS_COMPRESSED), Ok(Some(true)));
        assert_eq!(fi.get_i64(keys::MAX_SEQ_ID), Ok(None));
        assert!(fi.get_i64(keys::KEY_VALUE_VERSION).is_err());
    }

    #[test]
    fn file_info_without_its_magic_is_refused() {
        assert!(FileInfo::parse(b"XBUF\x00").is_err());
        assert!(FileInfo::parse(b"PB").is_err());
    }
}
