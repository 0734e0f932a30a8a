//! Mutations: what a client asks to change in one row.
//!
//! Every mutation is confined to one row and is applied atomically across all
//! of its families (HBase's row-level atomicity). Timestamps left at
//! [`LATEST_TIMESTAMP`] are replaced by the server's clock when the mutation
//! is applied.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::cell::{Cell, CellType, LATEST_TIMESTAMP};
use crate::error::{Error, Result};
use crate::filter::{Comparator, CompareOp};
use crate::query::TimeRange;

/// How a mutation reaches the write-ahead log before it is acknowledged.
/// Ordered from weakest to strongest, so `max` picks what a group of
/// mutations must wait for.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord, Serialize, Deserialize,
)]
pub enum Durability {
    /// Not logged: lost on a crash until the memstore is flushed.
    SkipWal,
    /// Logged in the background: a crash may lose the last moments of writes.
    AsyncWal,
    /// Acknowledged once the log record reached the operating system (default).
    #[default]
    SyncWal,
    /// Acknowledged once the log record was fsynced to the device.
    FsyncWal,
}

/// Largest row key accepted (HBase's limit: the length travels as a short).
pub const MAX_ROW_LENGTH: usize = i16::MAX as usize;

/// Checks a row key as HBase does: non-empty and at most 32767 bytes.
pub fn validate_row(row: &[u8]) -> Result<()> {
    if row.is_empty() {
        return Err(Error::invalid("row key must not be empty"));
    }
    if row.len() > MAX_ROW_LENGTH {
        return Err(Error::invalid(format!(
            "row key is {} bytes; the limit is {MAX_ROW_LENGTH}",
            row.len()
        )));
    }
    Ok(())
}

/// Checks a client-given timestamp: HBase rejects negative ones.
pub fn validate_timestamp(ts: i64) -> Result<()> {
    if ts < 0 {
        return Err(Error::invalid(format!("timestamp {ts} is negative")));
    }
    Ok(())
}

/// Writes one or more cells to a row. Decoding checks that every cell is
/// a value of the put's row, as the builder guarantees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PutFields")]
pub struct Put {
    row: Bytes,
    timestamp: i64,
    cells: Vec<Cell>,
    /// How the write is logged.
    pub durability: Durability,
    /// The cells' own TTL (see [`Put::ttl_millis`]).
    ttl_millis: Option<u64>,
}

impl Put {
    /// A put to `row`; cells without their own timestamp take the server's time.
    pub fn new(row: impl Into<Bytes>) -> Self {
        Put {
            row: row.into(),
            timestamp: LATEST_TIMESTAMP,
            cells: Vec::new(),
            durability: Durability::default(),
            ttl_millis: None,
        }
    }

    /// A put whose cells default to `timestamp` instead of the server time.
    pub fn with_timestamp(row: impl Into<Bytes>, timestamp: i64) -> Self {
        let mut put = Put::new(row);
        put.timestamp = timestamp;
        put
    }

    /// Adds `family:qualifier = value` at the put's default timestamp.
    pub fn add(
        self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        value: impl Into<Bytes>,
    ) -> Self {
        let ts = self.timestamp;
        self.add_at(family, qualifier, ts, value)
    }

    /// Adds `family:qualifier = value` at an explicit timestamp.
    pub fn add_at(
        mut self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: i64,
        value: impl Into<Bytes>,
    ) -> Self {
        self.cells.push(Cell {
            row: self.row.clone(),
            family: family.into(),
            qualifier: qualifier.into(),
            timestamp,
            cell_type: CellType::Put,
            sequence_id: 0,
            value: value.into(),
            ttl_millis: self.ttl_millis,
        });
        self
    }

    /// Builder: durability.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Builder: every cell of the put (those added before and after) lives
    /// `ttl` milliseconds after its timestamp, and never longer than its
    /// family's TTL allows (HBase's `Mutation.setTTL`, a per-cell TTL).
    pub fn ttl_millis(mut self, ttl: u64) -> Self {
        self.ttl_millis = Some(ttl);
        for cell in &mut self.cells {
            cell.ttl_millis = Some(ttl);
        }
        self
    }

    /// The cells' own TTL, if the put sets one.
    pub fn ttl(&self) -> Option<u64> {
        self.ttl_millis
    }

    /// The row.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    /// The cells, in the order they were added.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// True when the put carries no cell (HBase rejects such puts).
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }
}

/// Removes a whole row, families, columns or single versions.
///
/// With no entries added, the whole row is deleted: one DeleteFamily marker
/// per family, at the delete's timestamp.
///
/// Decoding checks that every marker is a delete marker of the row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "DeleteFields")]
pub struct Delete {
    row: Bytes,
    timestamp: i64,
    markers: Vec<Cell>,
    /// How the delete is logged.
    pub durability: Durability,
}

impl Delete {
    /// Deletes everything in `row` up to now (add entries to narrow it).
    pub fn new(row: impl Into<Bytes>) -> Self {
        Delete {
            row: row.into(),
            timestamp: LATEST_TIMESTAMP,
            markers: Vec::new(),
            durability: Durability::default(),
        }
    }

    /// Deletes everything in `row` with timestamp <= `timestamp`; also the
    /// default timestamp of family and column entries added afterwards.
    pub fn with_timestamp(row: impl Into<Bytes>, timestamp: i64) -> Self {
        let mut delete = Delete::new(row);
        delete.timestamp = timestamp;
        delete
    }

    fn marker(mut self, family: Bytes, qualifier: Bytes, timestamp: i64, t: CellType) -> Self {
        self.markers.push(Cell {
            row: self.row.clone(),
            family,
            qualifier,
            timestamp,
            cell_type: t,
            sequence_id: 0,
            value: Bytes::new(),
            ttl_millis: None,
        });
        self
    }

    /// Deletes every column of `family` with timestamp <= the delete's timestamp.
    pub fn family(self, family: impl Into<Bytes>) -> Self {
        let ts = self.timestamp;
        self.marker(family.into(), Bytes::new(), ts, CellType::DeleteFamily)
    }

    /// Deletes every column of `family` with timestamp <= `timestamp`.
    pub fn family_at(self, family: impl Into<Bytes>, timestamp: i64) -> Self {
        self.marker(
            family.into(),
            Bytes::new(),
            timestamp,
            CellType::DeleteFamily,
        )
    }

    /// Deletes every column of `family` at exactly `timestamp`.
    pub fn family_version(self, family: impl Into<Bytes>, timestamp: i64) -> Self {
        self.marker(
            family.into(),
            Bytes::new(),
            timestamp,
            CellType::DeleteFamilyVersion,
        )
    }

    /// Deletes all versions of a column (with timestamp <= the delete's).
    pub fn columns(self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Self {
        let ts = self.timestamp;
        self.marker(family.into(), qualifier.into(), ts, CellType::DeleteColumn)
    }

    /// Deletes all versions of a column with timestamp <= `timestamp`.
    pub fn columns_at(
        self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: i64,
    ) -> Self {
        self.marker(
            family.into(),
            qualifier.into(),
            timestamp,
            CellType::DeleteColumn,
        )
    }

    /// Deletes the latest version of a column (resolved when the delete runs).
    pub fn column(self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Self {
        self.marker(
            family.into(),
            qualifier.into(),
            LATEST_TIMESTAMP,
            CellType::Delete,
        )
    }

    /// Deletes the version of a column at exactly `timestamp`.
    pub fn column_at(
        self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: i64,
    ) -> Self {
        self.marker(family.into(), qualifier.into(), timestamp, CellType::Delete)
    }

    /// Builder: durability.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The row.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    /// The delete's own timestamp (used for whole-row deletes).
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }

    /// The markers added; empty means the whole row.
    pub fn markers(&self) -> &[Cell] {
        &self.markers
    }
}

/// Adds deltas to 8-byte big-endian counters, atomically per row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Increment {
    row: Bytes,
    columns: Vec<(Bytes, Bytes, i64)>,
    /// How the write is logged.
    pub durability: Durability,
    /// The new cells' own TTL, in milliseconds after their timestamp
    /// (HBase's `Mutation.setTTL`).
    pub ttl_millis: Option<u64>,
}

impl Increment {
    /// An increment of `row`.
    pub fn new(row: impl Into<Bytes>) -> Self {
        Increment {
            row: row.into(),
            columns: Vec::new(),
            durability: Durability::default(),
            ttl_millis: None,
        }
    }

    /// Adds `delta` to `family:qualifier` (a missing cell counts as 0).
    pub fn add(
        mut self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        delta: i64,
    ) -> Self {
        self.columns.push((family.into(), qualifier.into(), delta));
        self
    }

    /// Builder: durability.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The row.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    /// `(family, qualifier, delta)` triples.
    pub fn columns(&self) -> &[(Bytes, Bytes, i64)] {
        &self.columns
    }
}

/// Appends bytes to the latest value of columns, atomically per row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Append {
    row: Bytes,
    columns: Vec<(Bytes, Bytes, Bytes)>,
    /// How the write is logged.
    pub durability: Durability,
    /// The new cells' own TTL, in milliseconds after their timestamp
    /// (HBase's `Mutation.setTTL`).
    pub ttl_millis: Option<u64>,
}

impl Append {
    /// An append to `row`.
    pub fn new(row: impl Into<Bytes>) -> Self {
        Append {
            row: row.into(),
            columns: Vec::new(),
            durability: Durability::default(),
            ttl_millis: None,
        }
    }

    /// Appends `suffix` to `family:qualifier` (a missing cell counts as empty).
    pub fn add(
        mut self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        suffix: impl Into<Bytes>,
    ) -> Self {
        self.columns
            .push((family.into(), qualifier.into(), suffix.into()));
        self
    }

    /// Builder: durability.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The row.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    /// `(family, qualifier, suffix)` triples.
    pub fn columns(&self) -> &[(Bytes, Bytes, Bytes)] {
        &self.columns
    }
}

/// One write of a row: the parts of a [`RowMutations`] or a batch.
///
/// An increment or append in a [`RowMutations`] reads the row as it was
/// before the whole row mutation (HBase 2.4+ computes their new values
/// before it applies any of the mutations), and its new values are the
/// row mutation's result. In a batch its new values are not returned: call
/// `increment` or `append` for them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mutation {
    /// A put.
    Put(Put),
    /// A delete.
    Delete(Delete),
    /// An increment of 8-byte counters.
    Increment(Increment),
    /// An append to values.
    Append(Append),
}

impl Mutation {
    /// The row the mutation applies to.
    pub fn row(&self) -> &Bytes {
        match self {
            Mutation::Put(p) => p.row(),
            Mutation::Delete(d) => d.row(),
            Mutation::Increment(i) => i.row(),
            Mutation::Append(a) => a.row(),
        }
    }

    /// Calls `visit` with the family and qualifier of every cell the
    /// mutation writes (a family delete marker's qualifier is empty; a
    /// whole-row delete visits nothing), as HBase's family map lists them
    /// for its permission checks.
    pub fn visit_columns(&self, mut visit: impl FnMut(&Bytes, &Bytes)) {
        match self {
            Mutation::Put(p) => p
                .cells()
                .iter()
                .for_each(|c| visit(&c.family, &c.qualifier)),
            Mutation::Delete(d) => d
                .markers()
                .iter()
                .for_each(|c| visit(&c.family, &c.qualifier)),
            Mutation::Increment(i) => i.columns().iter().for_each(|(f, q, _)| visit(f, q)),
            Mutation::Append(a) => a.columns().iter().for_each(|(f, q, _)| visit(f, q)),
        }
    }

    /// The mutation's durability.
    pub fn durability(&self) -> Durability {
        match self {
            Mutation::Put(p) => p.durability,
            Mutation::Delete(d) => d.durability,
            Mutation::Increment(i) => i.durability,
            Mutation::Append(a) => a.durability,
        }
    }
}

impl From<Put> for Mutation {
    fn from(put: Put) -> Self {
        Mutation::Put(put)
    }
}

impl From<Delete> for Mutation {
    fn from(delete: Delete) -> Self {
        Mutation::Delete(delete)
    }
}

impl From<Increment> for Mutation {
    fn from(increment: Increment) -> Self {
        Mutation::Increment(increment)
    }
}

impl From<Append> for Mutation {
    fn from(append: Append) -> Self {
        Mutation::Append(append)
    }
}

/// Puts, deletes, increments and appends on one row, applied together
/// atomically (HBase 2.4+'s `RowMutations`). Decoding checks that every
/// mutation is on the row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RowMutationsFields")]
pub struct RowMutations {
    row: Bytes,
    mutations: Vec<Mutation>,
}

impl RowMutations {
    /// An empty set of mutations on `row`.
    pub fn new(row: impl Into<Bytes>) -> Self {
        RowMutations {
            row: row.into(),
            mutations: Vec::new(),
        }
    }

    /// Adds a put, delete, increment or append; it must be on the same row. (Named after
    /// HBase's `RowMutations.add`, not `std::ops::Add`.)
    #[allow(clippy::should_implement_trait)]
    pub fn add(mut self, mutation: impl Into<Mutation>) -> Result<Self> {
        let mutation = mutation.into();
        if mutation.row() != &self.row {
            return Err(Error::invalid(format!(
                "row mutations on '{}' cannot include a mutation of row '{}'",
                crate::cell::escape_bytes(&self.row),
                crate::cell::escape_bytes(mutation.row())
            )));
        }
        self.mutations.push(mutation);
        Ok(self)
    }

    /// The row.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    /// The mutations in order.
    pub fn mutations(&self) -> &[Mutation] {
        &self.mutations
    }

    /// The strongest durability any of the mutations asks for.
    pub fn durability(&self) -> Durability {
        self.mutations
            .iter()
            .map(Mutation::durability)
            .max()
            .unwrap_or_default()
    }
}

/// What a [`CheckAndMutate`] tests before it applies its mutations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Condition {
    /// The column has no visible value.
    Absent,
    /// `comparator OP latest value` holds. As in HBase, the given value is on
    /// the left: `Less` with `binary:5` applies when 5 < the current value.
    Compare {
        /// The operator.
        op: CompareOp,
        /// The value (and how to compare it).
        comparator: Comparator,
    },
    /// The row read through this filter (newest versions in the time
    /// range) has at least one cell: HBase 2.4+'s `Condition.filter`. The
    /// check's family and qualifier are then unused.
    Filter(crate::filter::Filter),
}

/// Tests one column's latest value and applies mutations if the test holds,
/// atomically. Decoding checks that the mutations are on the checked row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "CheckAndMutateFields")]
pub struct CheckAndMutate {
    /// The row (the mutations must be on it too).
    pub row: Bytes,
    /// The family of the checked column.
    pub family: Bytes,
    /// The qualifier of the checked column.
    pub qualifier: Bytes,
    /// The test.
    pub condition: Condition,
    /// Only versions in this range count as the column's latest value.
    pub time_range: TimeRange,
    /// What to apply when the test holds.
    pub mutations: RowMutations,
}

impl CheckAndMutate {
    /// A check of `family:qualifier` in `row`; set the condition and the
    /// mutations with the builder methods.
    pub fn new(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
    ) -> Self {
        let row = row.into();
        CheckAndMutate {
            mutations: RowMutations::new(row.clone()),
            row,
            family: family.into(),
            qualifier: qualifier.into(),
            condition: Condition::Absent,
            time_range: TimeRange::all(),
        }
    }

    /// Applies only if the column has no value.
    pub fn if_absent(mut self) -> Self {
        self.condition = Condition::Absent;
        self
    }

    /// Applies only if the latest value equals `value`.
    pub fn if_equals(self, value: impl Into<Bytes>) -> Self {
        self.if_matches(CompareOp::Equal, Comparator::Binary(value.into()))
    }

    /// Applies only if `comparator OP latest value` holds.
    pub fn if_matches(mut self, op: CompareOp, comparator: Comparator) -> Self {
        self.condition = Condition::Compare { op, comparator };
        self
    }

    /// Applies only if the row, read through `filter`, has a cell.
    pub fn if_filter_matches(mut self, filter: crate::filter::Filter) -> Self {
        self.condition = Condition::Filter(filter);
        self
    }

    /// Restricts which versions count as the latest.
    pub fn time_range(mut self, range: TimeRange) -> Self {
        self.time_range = range;
        self
    }

    /// The mutation(s) to apply when the check holds.
    pub fn then(mut self, mutation: impl Into<Mutation>) -> Result<Self> {
        self.mutations = self.mutations.add(mutation)?;
        Ok(self)
    }
}

// Decoding: each structure whose builder keeps an invariant is read into
// its fields first (same names and order as the derived encoding), then
// checked; the error names the row and what broke.

/// A decoded cell that must belong to `row` and be of an allowed type.
fn check_cell(
    what: &str,
    row: &Bytes,
    cell: &Cell,
    allowed: impl Fn(CellType) -> bool,
) -> Result<()> {
    if cell.row != row {
        return Err(Error::invalid(format!(
            "a {what} of row '{}' carries a cell of row '{}'",
            crate::cell::escape_bytes(row),
            crate::cell::escape_bytes(&cell.row)
        )));
    }
    if !allowed(cell.cell_type) {
        return Err(Error::invalid(format!(
            "a {what} of row '{}' carries a {} cell",
            crate::cell::escape_bytes(row),
            cell.cell_type
        )));
    }
    Ok(())
}

#[derive(Deserialize)]
struct PutFields {
    row: Bytes,
    timestamp: i64,
    cells: Vec<Cell>,
    durability: Durability,
    ttl_millis: Option<u64>,
}

impl TryFrom<PutFields> for Put {
    type Error = Error;

    fn try_from(f: PutFields) -> Result<Put> {
        for cell in &f.cells {
            check_cell("put", &f.row, cell, |t| t == CellType::Put)?;
        }
        Ok(Put {
            row: f.row,
            timestamp: f.timestamp,
            cells: f.cells,
            durability: f.durability,
            ttl_millis: f.ttl_millis,
        })
    }
}

#[derive(Deserialize)]
struct DeleteFields {
    row: Bytes,
    timestamp: i64,
    markers: Vec<Cell>,
    durability: Durability,
}

impl TryFrom<DeleteFields> for Delete {
    type Error = Error;

    fn try_from(f: DeleteFields) -> Result<Delete> {
        for cell in &f.markers {
            check_cell("delete", &f.row, cell, CellType::is_delete)?;
        }
        Ok(Delete {
            row: f.row,
            timestamp: f.timestamp,
            markers: f.markers,
            durability: f.durability,
        })
    }
}

#[derive(Deserialize)]
struct RowMutationsFields {
    row: Bytes,
    mutations: Vec<Mutation>,
}

impl TryFrom<RowMutationsFields> for RowMutations {
    type Error = Error;

    fn try_from(f: RowMutationsFields) -> Result<RowMutations> {
        f.mutations
            .into_iter()
            .try_fold(RowMutations::new(f.row), RowMutations::add)
    }
}

#[derive(Deserialize)]
struct CheckAndMutateFields {
    row: Bytes,
    family: Bytes,
    qualifier: Bytes,
    condition: Condition,
    time_range: TimeRange,
    mutations: RowMutations,
}

impl TryFrom<CheckAndMutateFields> for CheckAndMutate {
    type Error = Error;

    fn try_from(f: CheckAndMutateFields) -> Result<CheckAndMutate> {
        if f.mutations.row() != &f.row {
            return Err(Error::invalid(format!(
                "a check-and-mutate of row '{}' carries mutations of row '{}'",
                crate::cell::escape_bytes(&f.row),
                crate::cell::escape_bytes(f.mutations.row())
            )));
        }
        Ok(CheckAndMutate {
            row: f.row,
            family: f.family,
            qualifier: f.qualifier,
            condition: f.condition,
            time_range: f.time_range,
            mutations: f.mutations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_builders_make_hbase_markers() {
        let d = Delete::with_timestamp("r", 10)
            .family("f")
            .columns("f", "a")
            .column("f", "b")
            .column_at("f", "c", 3)
            .family_version("g", 7);
        let kinds: Vec<(CellType, i64)> = d
            .markers()
            .iter()
            .map(|c| (c.cell_type, c.timestamp))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (CellType::DeleteFamily, 10),
                (CellType::DeleteColumn, 10),
                (CellType::Delete, LATEST_TIMESTAMP),
                (CellType::Delete, 3),
                (CellType::DeleteFamilyVersion, 7),
            ]
        );
    }

    #[test]
    fn row_mutations_reject_other_rows() {
        let err = RowMutations::new("a")
            .add(Put::new("b").add("f", "q", "v"))
            .unwrap_err();
        assert!(err.to_string().contains("cannot include"), "{err}");
    }

    #[test]
    fn row_mutations_take_strongest_durability() {
        let rm = RowMutations::new("a")
            .add(
                Put::new("a")
                    .add("f", "q", "v")
                    .durability(Durability::SkipWal),
            )
            .unwrap()
            .add(Delete::new("a").durability(Durability::FsyncWal))
            .unwrap();
        assert_eq!(rm.durability(), Durability::FsyncWal);
    }

    #[test]
    fn rows_and_timestamps_are_validated() {
        assert!(validate_row(b"").is_err());
        assert!(validate_row(&vec![b'x'; MAX_ROW_LENGTH + 1]).is_err());
        assert!(validate_row(b"ok").is_ok());
        assert!(validate_timestamp(-1).is_err());
        assert!(validate_timestamp(0).is_ok());
    }
}

/// A client's mark on one request, so that the same request sent again
/// (its answer lost, or its master gone mid-way) is recognized and not
/// run twice: HBase's nonce group (one per client) and nonce (one per
/// request). A zero nonce means none was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Nonce {
    /// The client's group.
    pub group: u64,
    /// The request's number within it.
    pub nonce: u64,
}

impl Nonce {
    /// The nonce HBase's fields carry, `None` when the client sent none
    /// (a zero nonce, their default).
    pub fn from_fields(group: Option<u64>, nonce: Option<u64>) -> Option<Nonce> {
        match nonce {
            Some(nonce) if nonce != 0 => Some(Nonce {
                group: group.unwrap_or(0),
                nonce,
            }),
            _ => None,
        }
    }
}
