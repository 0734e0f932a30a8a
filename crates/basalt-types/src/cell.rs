//! Cells and HBase's KeyValue ordering.
//!
//! A cell's coordinates are `(row, family, qualifier, timestamp, type)`.
//! Cells sort by row, family and qualifier ascending (unsigned bytes,
//! component by component, so keys may hold any byte), then timestamp
//! *descending*, then type code descending, then write sequence descending:
//! the newest version of a column comes first and, at one timestamp, a delete
//! marker comes before the put it covers.

use std::cmp::Ordering;
use std::fmt;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// The timestamp HBase uses to mean "the server's current time".
pub const LATEST_TIMESTAMP: i64 = i64::MAX;

/// Type codes, with HBase's numeric values (they also travel in the WAL).
///
/// Serialised as the numeric code, so the encoding is HBase's and a code
/// nobody knows fails to decode, naming it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "u8", try_from = "u8")]
#[repr(u8)]
pub enum CellType {
    /// A value.
    Put = 4,
    /// Deletes the one version of a column at exactly the marker's timestamp.
    Delete = 8,
    /// Deletes every column of a family at exactly the marker's timestamp.
    DeleteFamilyVersion = 10,
    /// Deletes all versions of a column with timestamp <= the marker's.
    DeleteColumn = 12,
    /// Deletes all columns of a family with timestamp <= the marker's.
    DeleteFamily = 14,
}

impl CellType {
    /// Decodes a type code.
    pub fn from_code(code: u8) -> Option<CellType> {
        Some(match code {
            4 => CellType::Put,
            8 => CellType::Delete,
            10 => CellType::DeleteFamilyVersion,
            12 => CellType::DeleteColumn,
            14 => CellType::DeleteFamily,
            _ => return None,
        })
    }

    /// The numeric code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// True for every kind of delete marker.
    pub fn is_delete(self) -> bool {
        self != CellType::Put
    }

    /// True for the markers that apply to a whole family.
    pub fn is_family_delete(self) -> bool {
        matches!(self, CellType::DeleteFamily | CellType::DeleteFamilyVersion)
    }

    /// HBase's name for the type, as printed by the shell.
    pub fn name(self) -> &'static str {
        match self {
            CellType::Put => "Put",
            CellType::Delete => "Delete",
            CellType::DeleteFamilyVersion => "DeleteFamilyVersion",
            CellType::DeleteColumn => "DeleteColumn",
            CellType::DeleteFamily => "DeleteFamily",
        }
    }
}

impl From<CellType> for u8 {
    fn from(t: CellType) -> u8 {
        t.code()
    }
}

impl TryFrom<u8> for CellType {
    type Error = String;

    fn try_from(code: u8) -> Result<CellType, String> {
        CellType::from_code(code).ok_or_else(|| format!("unknown cell type code {code}"))
    }
}

impl fmt::Display for CellType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One cell: a value (or delete marker) at full coordinates.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cell {
    /// Row key.
    pub row: Bytes,
    /// Column family name.
    pub family: Bytes,
    /// Column qualifier (empty for family delete markers).
    pub qualifier: Bytes,
    /// Milliseconds since the epoch.
    pub timestamp: i64,
    /// Put or one of the delete markers.
    pub cell_type: CellType,
    /// Write sequence number within the region (0 when not yet assigned).
    /// Orders writes to identical coordinates: the later write wins.
    pub sequence_id: u64,
    /// The value (empty for delete markers).
    pub value: Bytes,
    /// A put's own time to live, in milliseconds after its timestamp
    /// (HBase's per-cell TTL, a Mutation's `setTTL`): the cell expires once
    /// `timestamp + ttl_millis < now`. It never outlives its family's TTL
    /// (both apply). `None` for most cells.
    pub ttl_millis: Option<u64>,
}

impl Cell {
    /// True when the cell's own TTL has passed at `now` (HBase: expired
    /// once `timestamp + ttl < now`; never for a cell without one).
    pub fn ttl_expired(&self, now: i64) -> bool {
        self.ttl_millis.is_some_and(|ttl| {
            let ttl = i64::try_from(ttl).unwrap_or(i64::MAX);
            self.timestamp.saturating_add(ttl) < now
        })
    }

    /// A put cell.
    pub fn put(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: i64,
        value: impl Into<Bytes>,
    ) -> Cell {
        Cell {
            row: row.into(),
            family: family.into(),
            qualifier: qualifier.into(),
            timestamp,
            cell_type: CellType::Put,
            sequence_id: 0,
            value: value.into(),
            ttl_millis: None,
        }
    }

    /// Compares two cells by HBase's KeyValue order (see the module docs).
    pub fn compare_key(&self, other: &Cell) -> Ordering {
        self.row
            .cmp(&other.row)
            .then_with(|| self.family.cmp(&other.family))
            .then_with(|| self.qualifier.cmp(&other.qualifier))
            .then_with(|| compare_version(self, other))
    }

    /// True when both cells are in the same row, family and qualifier.
    pub fn same_column(&self, other: &Cell) -> bool {
        self.row == other.row && self.family == other.family && self.qualifier == other.qualifier
    }

    /// Approximate size: the bytes and a fixed cost. Load statistics and
    /// scan metrics count cells so; a memstore counts what it really holds
    /// (`basalt_engine::memstore::entry_size`).
    pub fn heap_size(&self) -> usize {
        self.row.len() + self.family.len() + self.qualifier.len() + self.value.len() + 48
    }
}

/// Orders two versions of one column: timestamp, type and sequence, all
/// descending.
pub fn compare_version(a: &Cell, b: &Cell) -> Ordering {
    b.timestamp
        .cmp(&a.timestamp)
        .then_with(|| b.cell_type.cmp(&a.cell_type))
        .then_with(|| b.sequence_id.cmp(&a.sequence_id))
}

impl PartialOrd for Cell {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Cell {
    /// KeyValue order first; the value only breaks ties between otherwise
    /// identical cells so that `Ord` agrees with `Eq`.
    fn cmp(&self, other: &Self) -> Ordering {
        self.compare_key(other)
            .then_with(|| self.value.cmp(&other.value))
    }
}

impl fmt::Debug for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}:{}/{}/{}/seq={} = {}",
            escape_bytes(&self.row),
            escape_bytes(&self.family),
            escape_bytes(&self.qualifier),
            self.timestamp,
            self.cell_type,
            self.sequence_id,
            escape_bytes(&self.value)
        )
    }
}

/// Renders bytes the way HBase's `Bytes.toStringBinary` does: printable ASCII
/// as is, everything else as `\xNN`.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(row: &str, q: &str, ts: i64, t: CellType, seq: u64) -> Cell {
        Cell {
            row: Bytes::copy_from_slice(row.as_bytes()),
            family: Bytes::from_static(b"f"),
            qualifier: Bytes::copy_from_slice(q.as_bytes()),
            timestamp: ts,
            cell_type: t,
            sequence_id: seq,
            value: Bytes::new(),
            ttl_millis: None,
        }
    }

    #[test]
    fn newest_version_sorts_first() {
        let old = cell("r", "q", 1, CellType::Put, 1);
        let new = cell("r", "q", 2, CellType::Put, 1);
        assert_eq!(new.compare_key(&old), Ordering::Less);
    }

    #[test]
    fn marker_sorts_before_put_at_same_timestamp() {
        let put = cell("r", "q", 5, CellType::Put, 9);
        let del = cell("r", "q", 5, CellType::Delete, 1);
        assert_eq!(del.compare_key(&put), Ordering::Less);
    }

    #[test]
    fn later_write_sorts_first_at_same_coordinates() {
        let first = cell("r", "q", 5, CellType::Put, 1);
        let second = cell("r", "q", 5, CellType::Put, 2);
        assert_eq!(second.compare_key(&first), Ordering::Less);
    }

    #[test]
    fn family_marker_sorts_before_columns() {
        let marker = cell("r", "", 1, CellType::DeleteFamily, 1);
        let put = cell("r", "a", 100, CellType::Put, 2);
        assert_eq!(marker.compare_key(&put), Ordering::Less);
    }

    #[test]
    fn rows_compare_component_wise_not_by_separator() {
        // "a" + "\x00b" must not be confused with "a\x00" + "b".
        let short_row = Cell::put("a", "f", "\u{0}b", 1, "");
        let long_row = Cell::put("a\u{0}", "f", "b", 1, "");
        assert_eq!(short_row.compare_key(&long_row), Ordering::Less);
    }

    #[test]
    fn type_codes_round_trip() {
        for t in [
            CellType::Put,
            CellType::Delete,
            CellType::DeleteFamilyVersion,
            CellType::DeleteColumn,
            CellType::DeleteFamily,
        ] {
            assert_eq!(CellType::from_code(t.code()), Some(t));
        }
        assert_eq!(CellType::from_code(0), None);
    }

    #[test]
    fn escape_matches_hbase_binary_strings() {
        assert_eq!(escape_bytes(b"ab\x00\xff"), "ab\\x00\\xFF");
    }
}
