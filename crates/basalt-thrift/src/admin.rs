//! Basalt's admin extension of the Thrift gateway: what `basalt shell` needs
//! that HBase's Thrift1 service cannot say (split keys, every family option,
//! alter, truncate keeping splits, regions with their load, flush, split and
//! merge, reads with versions, time ranges or raw cells).
//!
//! It is one extra method on the same port and protocol,
//! `basaltAdmin(1: binary request) -> binary`, whose request and response
//! are versioned JSON documents ([`Request`], [`Response`]); see
//! `docs/admin-protocol.md`. Failures of an operation travel inside the
//! response (so the caller learns what kind of failure it was); only a
//! request that is not JSON of a known version is refused as a whole.
//!
//! [`handle`] runs one operation on a [`Database`]: the server calls it for
//! remote clients and the shell calls it directly for a data directory it
//! opened itself, so both give the same answers.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use basalt::{
    ColumnFamilyDescriptor, Database, Error, FamilyChange, Filter, RegionSummary, Scan,
    SplitAlgorithm, TableDescriptor, TimeRange,
};

use crate::client::{Client, ClientError, ClientResult};
use crate::protocol::Value;

/// The Thrift method name of the admin extension.
pub const METHOD: &str = "basaltAdmin";
/// The protocol version this build speaks (requests must carry it).
pub const VERSION: u32 = 1;
/// Rows one `read` answers at most; the caller asks again with `after_row`.
pub const MAX_PAGE_ROWS: usize = 1000;
/// Key and value bytes after which a `read` page ends early: JSON spells a
/// byte in up to four characters, and the reply must stay well under the
/// server's frame limit.
pub const MAX_PAGE_BYTES: usize = 2 * 1024 * 1024;

/// One admin request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    /// Protocol version; must be [`VERSION`].
    pub version: u32,
    /// The operation.
    #[serde(flatten)]
    pub op: Op,
}

/// A column family with options by their HBase names (`VERSIONS`,
/// `BLOOMFILTER`, ...), values as the HBase shell writes them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct FamilySpec {
    /// Family name.
    pub name: String,
    /// Options to set; the rest keep their defaults (or, for `alter`, their
    /// current values).
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

/// One change of `alter`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Change {
    /// Adds the family, or changes the given options of an existing one.
    Set {
        /// The family and the options to set.
        family: FamilySpec,
    },
    /// Deletes the family and its data.
    Delete {
        /// Family name.
        name: String,
    },
}

/// What a `read` returns: a scan with every option of the embedded API.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReadSpec {
    /// First row (inclusive; the high end for a reversed read).
    #[serde(default)]
    pub start_row: Bytes,
    /// Row to stop before (exclusive).
    #[serde(default)]
    pub stop_row: Bytes,
    /// Only rows starting with this.
    #[serde(default)]
    pub prefix: Option<Bytes>,
    /// `family` or `family:qualifier` names; empty reads every column.
    #[serde(default)]
    pub columns: Vec<Bytes>,
    /// A filter in HBase's filter language.
    #[serde(default)]
    pub filter: Option<String>,
    /// Half-open time range `[min, max)`.
    #[serde(default)]
    pub time_range: Option<(i64, i64)>,
    /// Versions per column (default 1).
    #[serde(default)]
    pub versions: Option<u32>,
    /// Newest row first.
    #[serde(default)]
    pub reversed: bool,
    /// Return delete markers and deleted cells too.
    #[serde(default)]
    pub raw: bool,
    /// At most this many rows in all.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Resume after this row (the last row of the previous page).
    #[serde(default)]
    pub after_row: Option<Bytes>,
}

impl ReadSpec {
    /// The embedded API's scan for this read (without `after_row`, which
    /// [`handle`] applies).
    pub fn to_scan(&self) -> basalt::Result<Scan> {
        let mut scan = Scan::new()
            .start_row(self.start_row.clone())
            .stop_row(self.stop_row.clone())
            .reversed(self.reversed)
            .raw(self.raw);
        if let Some(p) = &self.prefix {
            scan = scan.prefix(p.clone());
        }
        for c in &self.columns {
            scan = match c.iter().position(|&b| b == b':') {
                None => scan.family(c.clone()),
                Some(i) => scan.column(c.slice(..i), c.slice(i + 1..)),
            };
        }
        if let Some(f) = &self.filter {
            scan = scan.filter(Filter::parse(f)?);
        }
        if let Some((min, max)) = self.time_range {
            scan = scan.time_range(TimeRange::new(min, max)?);
        }
        if let Some(v) = self.versions {
            scan = scan.max_versions(v);
        }
        if let Some(l) = self.limit {
            scan = scan.limit(l);
        }
        scan.validate()?;
        Ok(scan)
    }
}

/// The operations of protocol version 1.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Table and region counts and the load of the server.
    Status,
    /// Creates a table, optionally pre-split.
    Create {
        /// Table name.
        table: String,
        /// Its families.
        families: Vec<FamilySpec>,
        /// Explicit split keys.
        #[serde(default)]
        splits: Vec<Bytes>,
        /// Number of regions for `split_algo`.
        #[serde(default)]
        num_regions: Option<usize>,
        /// `HexStringSplit`, `DecimalStringSplit` or `UniformSplit`.
        #[serde(default)]
        split_algo: Option<String>,
    },
    /// A table's state, families with every option, and regions.
    Describe {
        /// Table name.
        table: String,
    },
    /// Adds, changes or deletes families.
    Alter {
        /// Table name.
        table: String,
        /// The changes, applied together.
        changes: Vec<Change>,
    },
    /// Empties a table, keeping its families and region boundaries; a
    /// table that was enabled is disabled for it and enabled again.
    Truncate {
        /// Table name.
        table: String,
    },
    /// The table's regions with their load.
    ListRegions {
        /// Table name.
        table: String,
    },
    /// The table's split keys (region start keys but the first).
    GetSplits {
        /// Table name.
        table: String,
    },
    /// Flushes a table's memstores.
    Flush {
        /// Table name.
        table: String,
    },
    /// Compacts a table's stores.
    Compact {
        /// Table name.
        table: String,
        /// Major (all files) rather than minor.
        #[serde(default)]
        major: bool,
    },
    /// Splits a table's regions, or one region named in full or encoded.
    Split {
        /// A table name or a region name.
        target: Bytes,
        /// Where to split; without it, near the middle.
        #[serde(default)]
        key: Option<Bytes>,
    },
    /// Merges two adjacent regions (full or encoded names).
    Merge {
        /// One region.
        region_a: Bytes,
        /// The other region.
        region_b: Bytes,
    },
    /// Reads rows with options Thrift1's `TScan` lacks.
    Read {
        /// Table name.
        table: String,
        /// What to read.
        read: ReadSpec,
    },
}

/// A family and its options in HBase's order and spelling.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FamilyInfo {
    /// Family name.
    pub name: String,
    /// `(option, value)` pairs, as `describe` prints them.
    pub options: Vec<(String, String)>,
}

/// One region and its load.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RegionInfoReply {
    /// Full region name (`<table>,<start>,<id>.<encoded>.`).
    pub name: Bytes,
    /// Encoded name (the MD5 hex part).
    pub encoded_name: String,
    /// First row (inclusive); empty is the start of the table.
    pub start_key: Bytes,
    /// End row (exclusive); empty is the end of the table.
    pub end_key: Bytes,
    /// Store files across families.
    pub store_files: usize,
    /// Bytes in store files.
    pub store_file_bytes: u64,
    /// Bytes in memstores.
    pub memstore_bytes: u64,
    /// Gets and scans served.
    pub read_requests: u64,
    /// Row mutations applied.
    pub write_requests: u64,
}

/// A table as `describe` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TableReply {
    /// Table name.
    pub name: String,
    /// Whether it serves requests.
    pub enabled: bool,
    /// Families in name order.
    pub families: Vec<FamilyInfo>,
    /// Regions in key order.
    pub regions: Vec<RegionInfoReply>,
}

/// One cell of a `read`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CellReply {
    /// Family.
    pub family: Bytes,
    /// Qualifier.
    pub qualifier: Bytes,
    /// Timestamp in milliseconds.
    pub timestamp: i64,
    /// HBase's type name: `Put`, `Delete`, `DeleteColumn`, ...
    pub cell_type: String,
    /// Value.
    pub value: Bytes,
}

/// One row of a `read`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RowReply {
    /// Row key.
    pub row: Bytes,
    /// Cells in HBase's order.
    pub cells: Vec<CellReply>,
}

/// Server-wide counts for `status`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StatusReply {
    /// Tables.
    pub tables: usize,
    /// Regions across tables.
    pub regions: usize,
    /// Gets and scans served, across regions.
    pub read_requests: u64,
    /// Row mutations applied, across regions.
    pub write_requests: u64,
    /// Reads and writes per second over the last minute, across regions.
    #[serde(default)]
    pub requests_per_second: f64,
}

/// A successful answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    /// The operation was carried out.
    Done,
    /// `status`.
    Status(StatusReply),
    /// `describe`.
    Table(TableReply),
    /// `list_regions`.
    Regions {
        /// Regions in key order.
        regions: Vec<RegionInfoReply>,
    },
    /// `get_splits`.
    Splits {
        /// Split keys in order.
        keys: Vec<Bytes>,
    },
    /// `read`: one page of rows.
    Rows {
        /// The rows.
        rows: Vec<RowReply>,
        /// True when more rows may follow: ask again with `after_row` set
        /// to the last row.
        more: bool,
    },
}

/// What kind of failure an operation met.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The table does not exist.
    TableNotFound,
    /// The table exists already.
    TableExists,
    /// The table is disabled.
    TableDisabled,
    /// The table is enabled (and must not be).
    TableEnabled,
    /// A family the table does not have.
    NoSuchFamily,
    /// A malformed argument.
    InvalidArgument,
    /// The request's version is not served.
    UnsupportedVersion,
    /// The request is not a valid document of its version.
    BadRequest,
    /// Anything else (I/O, corruption, ...).
    Other,
}

/// A failed operation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AdminError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// The table or family name for the kinds that concern one.
    #[serde(default)]
    pub subject: Option<String>,
    /// The table of a `no_such_family`.
    #[serde(default)]
    pub table: Option<String>,
    /// A human-readable message.
    pub message: String,
}

impl std::fmt::Display for AdminError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AdminError {}

impl AdminError {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        AdminError {
            kind,
            subject: None,
            table: None,
            message: message.into(),
        }
    }
}

impl From<Error> for AdminError {
    fn from(e: Error) -> Self {
        let message = e.to_string();
        let (kind, subject, table) = match e {
            Error::TableNotFound(t) => (ErrorKind::TableNotFound, Some(t), None),
            Error::TableExists(t) => (ErrorKind::TableExists, Some(t), None),
            Error::TableDisabled(t) => (ErrorKind::TableDisabled, Some(t), None),
            Error::TableEnabled(t) => (ErrorKind::TableEnabled, Some(t), None),
            Error::NoSuchFamily { table, family } => {
                (ErrorKind::NoSuchFamily, Some(family), Some(table))
            }
            Error::InvalidArgument(m) => {
                return AdminError::new(ErrorKind::InvalidArgument, m);
            }
            Error::FilterSyntax { .. } => (ErrorKind::InvalidArgument, None, None),
            _ => (ErrorKind::Other, None, None),
        };
        AdminError {
            kind,
            subject,
            table,
            message,
        }
    }
}

/// The response document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Response {
    /// The version the server answered in.
    pub version: u32,
    /// The answer, when the operation succeeded.
    #[serde(default)]
    pub ok: Option<Reply>,
    /// The failure, when it did not.
    #[serde(default)]
    pub error: Option<AdminError>,
}

/// Runs one operation on the database.
pub fn handle(db: &Database, op: Op) -> Result<Reply, AdminError> {
    match op {
        Op::Status => {
            let mut status = StatusReply {
                tables: 0,
                regions: 0,
                read_requests: 0,
                write_requests: 0,
                requests_per_second: 0.0,
            };
            for name in db.list_tables() {
                // A table dropped between the listing and here is not counted.
                let Ok(regions) = db.list_regions(&name) else {
                    continue;
                };
                status.tables += 1;
                status.regions += regions.len();
                for r in &regions {
                    status.read_requests += r.load.read_requests;
                    status.write_requests += r.load.write_requests;
                    status.requests_per_second +=
                        r.load.read_requests_per_sec + r.load.write_requests_per_sec;
                }
            }
            Ok(Reply::Status(status))
        }
        Op::Create {
            table,
            families,
            splits,
            num_regions,
            split_algo,
        } => {
            let mut descriptor = TableDescriptor::new(table);
            for f in &families {
                descriptor = descriptor.family(family_descriptor(None, f)?);
            }
            match (num_regions, split_algo) {
                (Some(n), Some(algo)) => {
                    if !splits.is_empty() {
                        return Err(AdminError::new(
                            ErrorKind::InvalidArgument,
                            "give SPLITS or NUMREGIONS with SPLITALGO, not both",
                        ));
                    }
                    let algo: SplitAlgorithm = algo.parse()?;
                    db.create_table_presplit(descriptor, n, algo)?;
                }
                (None, None) => db.create_table_with_splits(descriptor, &splits)?,
                _ => {
                    return Err(AdminError::new(
                        ErrorKind::InvalidArgument,
                        "NUMREGIONS and SPLITALGO must be given together",
                    ))
                }
            }
            Ok(Reply::Done)
        }
        Op::Describe { table } => {
            let info = db.describe_table(&table)?;
            let mut families: Vec<FamilyInfo> = info
                .descriptor
                .families()
                .iter()
                .map(|f| FamilyInfo {
                    name: f.name().to_string(),
                    options: f
                        .options()
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect(),
                })
                .collect();
            families.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(Reply::Table(TableReply {
                name: table,
                enabled: info.enabled,
                families,
                regions: info.regions.iter().map(region_reply).collect(),
            }))
        }
        Op::Alter { table, changes } => {
            let current = db.describe_table(&table)?.descriptor;
            let mut out = Vec::with_capacity(changes.len());
            for change in &changes {
                out.push(match change {
                    Change::Set { family } => match current.get_family(family.name.as_bytes()) {
                        Some(existing) => {
                            FamilyChange::Modify(family_descriptor(Some(existing.clone()), family)?)
                        }
                        None => FamilyChange::Add(family_descriptor(None, family)?),
                    },
                    Change::Delete { name } => FamilyChange::Delete(name.clone()),
                });
            }
            db.alter_table(&table, &out)?;
            Ok(Reply::Done)
        }
        Op::Truncate { table } => {
            let was_enabled = db.is_table_enabled(&table)?;
            if was_enabled {
                db.disable_table(&table)?;
            }
            let truncated = db.truncate_table(&table);
            if was_enabled {
                db.enable_table(&table)?;
            }
            truncated?;
            Ok(Reply::Done)
        }
        Op::ListRegions { table } => Ok(Reply::Regions {
            regions: db.list_regions(&table)?.iter().map(region_reply).collect(),
        }),
        Op::GetSplits { table } => Ok(Reply::Splits {
            keys: db
                .list_regions(&table)?
                .iter()
                .skip(1)
                .map(|r| r.info.start_key.clone())
                .collect(),
        }),
        Op::Flush { table } => {
            db.flush_table(&table)?;
            Ok(Reply::Done)
        }
        Op::Compact { table, major } => {
            db.compact_table(&table, major)?;
            Ok(Reply::Done)
        }
        Op::Split { target, key } => {
            // A full region name holds a comma (a table name never does) and
            // an encoded one is 32 hex digits; anything else names a table.
            if target.contains(&b',') || (is_encoded_name(&target) && !is_table_name(db, &target)) {
                db.split_region(&target, key.as_deref())?;
            } else {
                let name = String::from_utf8_lossy(&target).into_owned();
                if !db.table_exists(&name) {
                    return Err(Error::TableNotFound(name).into());
                }
                db.split_table(&name, key.as_deref())?;
            }
            Ok(Reply::Done)
        }
        Op::Merge { region_a, region_b } => {
            db.merge_regions(&region_a, &region_b)?;
            Ok(Reply::Done)
        }
        Op::Read { table, read } => {
            let (rows, more) = read_page(db, &table, &read, MAX_PAGE_ROWS)?;
            Ok(Reply::Rows { rows, more })
        }
    }
}

fn is_encoded_name(name: &[u8]) -> bool {
    name.len() == 32 && name.iter().all(|b| b.is_ascii_hexdigit())
}

fn is_table_name(db: &Database, name: &[u8]) -> bool {
    std::str::from_utf8(name).is_ok_and(|n| db.table_exists(n))
}

/// Reads up to `page` rows of `read` (after `read.after_row`); the flag
/// says whether more may follow.
pub fn read_page(
    db: &Database,
    table: &str,
    read: &ReadSpec,
    page: usize,
) -> Result<(Vec<RowReply>, bool), AdminError> {
    let mut scan = read.to_scan()?;
    if let Some(after) = &read.after_row {
        // Resume at the last row returned (inclusive both ways) and skip it.
        scan.start_row = after.clone();
        scan.limit = scan.limit.map(|l| l.saturating_add(1));
    }
    let t = db.table(table)?;
    let mut rows = Vec::new();
    let mut bytes = 0usize;
    for row in t.scan(&scan)? {
        let row = row?;
        if read.after_row.as_ref() == Some(&row.row) {
            continue;
        }
        // A wide row may come in pieces (batch); merge them.
        if rows.last().is_some_and(|r: &RowReply| r.row == row.row) {
            if let Some(last) = rows.last_mut() {
                last.cells.extend(row.cells.iter().map(cell_reply));
            }
            continue;
        }
        if rows.len() == page || bytes >= MAX_PAGE_BYTES {
            return Ok((rows, true));
        }
        bytes += row
            .cells
            .iter()
            .map(|c| c.row.len() + c.family.len() + c.qualifier.len() + c.value.len())
            .sum::<usize>();
        rows.push(RowReply {
            row: row.row.clone(),
            cells: row.cells.iter().map(cell_reply).collect(),
        });
    }
    Ok((rows, false))
}

fn cell_reply(c: &basalt::Cell) -> CellReply {
    CellReply {
        family: c.family.clone(),
        qualifier: c.qualifier.clone(),
        timestamp: c.timestamp,
        cell_type: c.cell_type.name().to_string(),
        value: c.value.clone(),
    }
}

fn family_descriptor(
    base: Option<ColumnFamilyDescriptor>,
    spec: &FamilySpec,
) -> Result<ColumnFamilyDescriptor, AdminError> {
    let mut d = base.unwrap_or_else(|| ColumnFamilyDescriptor::new(spec.name.clone()));
    for (k, v) in &spec.options {
        d.set_option(k, v)?;
    }
    d.validate()?;
    Ok(d)
}

/// The reply form of one region.
pub fn region_reply(r: &RegionSummary) -> RegionInfoReply {
    RegionInfoReply {
        name: r.info.region_name(),
        encoded_name: r.info.encoded_name(),
        start_key: r.info.start_key.clone(),
        end_key: r.info.end_key.clone(),
        store_files: r.stores.iter().map(|(_, s)| s.files).sum(),
        store_file_bytes: r.stores.iter().map(|(_, s)| s.file_bytes).sum(),
        memstore_bytes: r.load.memstore_bytes,
        read_requests: r.load.read_requests,
        write_requests: r.load.write_requests,
    }
}

/// Decodes a request document, runs it and encodes the response. Errors of
/// the document itself (not JSON, unknown version or operation) are
/// answered in the response too, with kind `unsupported_version` or
/// `bad_request`.
pub fn execute(db: &Database, request: &[u8]) -> Vec<u8> {
    let outcome = decode_request(request).and_then(|op| handle(db, op));
    let response = match outcome {
        Ok(reply) => Response {
            version: VERSION,
            ok: Some(reply),
            error: None,
        },
        Err(e) => Response {
            version: VERSION,
            ok: None,
            error: Some(e),
        },
    };
    serde_json::to_vec(&response).unwrap_or_else(|e| {
        format!(
            r#"{{"version":{VERSION},"error":{{"kind":"other","message":"cannot encode the response: {}"}}}}"#,
            e.to_string().replace(['"', '\\'], "'")
        )
        .into_bytes()
    })
}

fn decode_request(request: &[u8]) -> Result<Op, AdminError> {
    let doc: serde_json::Value = serde_json::from_slice(request).map_err(|e| {
        AdminError::new(
            ErrorKind::BadRequest,
            format!("admin request is not JSON: {e}"),
        )
    })?;
    match doc.get("version").and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(v) => {
            return Err(AdminError::new(
                ErrorKind::UnsupportedVersion,
                format!(
                "admin protocol version {v} is not supported; this server speaks version {VERSION}"
            ),
            ))
        }
        None => {
            return Err(AdminError::new(
                ErrorKind::BadRequest,
                "admin request has no numeric \"version\"",
            ))
        }
    }
    let request: Request = serde_json::from_value(doc)
        .map_err(|e| AdminError::new(ErrorKind::BadRequest, format!("bad admin request: {e}")))?;
    Ok(request.op)
}

/// Why a remote admin call failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminCallError {
    /// The call did not get through (connection, Thrift errors).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The server carried out the call and the operation failed.
    #[error(transparent)]
    Admin(#[from] AdminError),
}

impl Client {
    /// Sends one admin operation (`basaltAdmin`) and returns its reply.
    pub fn admin(&mut self, op: Op) -> Result<Reply, AdminCallError> {
        let request = Request {
            version: VERSION,
            op,
        };
        let body = serde_json::to_vec(&request)
            .map_err(|e| ClientError::Protocol(format!("cannot encode admin request: {e}")))?;
        let answer: ClientResult<Bytes> = self.call(
            METHOD,
            Value::Struct(vec![(1, Value::Binary(Bytes::from(body)))]),
        );
        let answer = answer?;
        let response: Response = serde_json::from_slice(&answer)
            .map_err(|e| ClientError::Protocol(format!("bad admin response: {e}")))?;
        match (response.ok, response.error) {
            (Some(reply), None) => Ok(reply),
            (_, Some(e)) => Err(AdminCallError::Admin(e)),
            (None, None) => Err(ClientError::Protocol("empty admin response".into()).into()),
        }
    }
}

/// The server side: decodes the argument struct and answers field 0.
pub(crate) fn serve(db: &Database, body: Value) -> Result<Value, String> {
    let Value::Struct(fields) = body else {
        return Err("arguments are not a struct".into());
    };
    let request = fields
        .into_iter()
        .find_map(|(id, v)| match (id, v) {
            (1, Value::Binary(b)) => Some(b),
            _ => None,
        })
        .ok_or_else(|| "required argument request (1: binary) is missing".to_string())?;
    Ok(Value::Binary(Bytes::from(execute(db, &request))))
}
