//! Administration of a [`Database`] as a typed API: create, alter,
//! truncate and describe tables, list regions with their load, flush,
//! compact, split and merge, server status (with the whole cluster's in a
//! cluster member), moving, assigning and balancing regions in a cluster,
//! and reads with every scan option (versions, time ranges, raw cells) in
//! pages.
//!
//! A request is an [`AdminRequest`], its answer an [`AdminReply`], and
//! anything that can carry them out implements [`Admin`]: [`Database`] does
//! here, in-process; a client of a remote server implements the same trait
//! over its connection. The trait is object-safe (`&dyn Admin`) so a caller
//! (the shell) need not know which it has.
//!
//! Every type is serde-serialisable, and its serde form *is* the body of
//! Basalt's admin protocol version 1 (`docs/admin-protocol.md`): the Thrift
//! gateway's `basaltAdmin` method and its client only add the version
//! envelope and the error document. Renaming a field or variant here is
//! therefore a protocol change; the gateway's tests pin the documents.
//!
//! Failures are [`Error`]s; callers classify them with [`Error::kind`].
//!
//! ```no_run
//! use basalt::admin::{Admin, AdminReply, AdminRequest, FamilySpec};
//! # fn main() -> basalt::Result<()> {
//! let db = basalt::Database::open("basalt-data")?;
//! db.execute(AdminRequest::Create {
//!     table: "t1".into(),
//!     families: vec![FamilySpec { name: "f".into(), ..FamilySpec::default() }],
//!     splits: vec!["m".into()],
//!     num_regions: None,
//!     split_algo: None,
//! })?;
//! if let AdminReply::Splits { keys } = db.execute(AdminRequest::GetSplits { table: "t1".into() })? {
//!     assert_eq!(keys.len(), 1);
//! }
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use basalt_types::column::parse_column;
use basalt_types::query::RowResult;

use crate::cluster::{
    BalancerRun, ClusterStatus, MasterAnswer, MasterCall, RegionLoadReport, RegionTransition,
    ServerName,
};
use crate::{
    Cell, ColumnFamilyDescriptor, Database, Error, FamilyChange, Filter, NamespaceDescriptor,
    RegionState, RegionSummary, Result, Scan, SplitAlgorithm, SplitOrMerge, TableDescriptor,
    TimeRange,
};

/// Rows one [`AdminRequest::Read`] answers at most; the caller asks again
/// with [`ReadSpec::after_row`].
pub const MAX_PAGE_ROWS: usize = 1000;
/// Key and value bytes after which a read page ends early: a page must stay
/// well under a wire protocol's frame limit (JSON spells a byte in up to
/// four characters).
pub const MAX_PAGE_BYTES: usize = 2 * 1024 * 1024;

/// Something that carries out administration requests: a [`Database`] in
/// this process, or a client of a remote one.
pub trait Admin {
    /// Carries out one request and returns its answer.
    fn execute(&self, request: AdminRequest) -> Result<AdminReply>;
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
pub enum AlterChange {
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
    /// Resume after this row (the last row of the previous page; of a
    /// read by index, the reply's `next`).
    #[serde(default)]
    pub after_row: Option<Bytes>,
    /// Read by this secondary index (`crate::index`): `start_row`,
    /// `stop_row`, `prefix` and `after_row` are then index keys, and the
    /// rows come in index order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
}

impl ReadSpec {
    /// The embedded API's scan for this read (without `after_row`, which
    /// [`read_page`] applies).
    pub fn to_scan(&self) -> Result<Scan> {
        let mut scan = Scan::new()
            .start_row(self.start_row.clone())
            .stop_row(self.stop_row.clone())
            .reversed(self.reversed)
            .raw(self.raw);
        if let Some(p) = &self.prefix {
            scan = scan.prefix(p.clone());
        }
        for c in &self.columns {
            scan = parse_column(c).select_in_scan(scan);
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

/// One administration request.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum AdminRequest {
    /// Table and region counts and the load of the server; in a cluster
    /// member also the cluster as its active master sees it
    /// ([`StatusReply::cluster`]).
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
        changes: Vec<AlterChange>,
    },
    /// HBase's `Admin.truncateTable`: empties a disabled table (an enabled
    /// one is refused with `TableEnabled`), keeping its descriptor, and
    /// leaves it enabled. With `preserve_splits` its regions keep their
    /// boundaries; without, it comes back as one region. The one truncate
    /// of every gateway and the shell (whose `truncate` disables first).
    Truncate {
        /// Table name.
        table: String,
        /// Keep the region boundaries (HBase's `preserveSplits`; the
        /// shell's `truncate_preserve`).
        #[serde(default)]
        preserve_splits: bool,
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
    /// Creates a secondary index and fills it (`Database::create_index`):
    /// answers [`AdminReply::IndexBuilt`].
    CreateIndex {
        /// The data table.
        table: String,
        /// The index (its state and creation time are the master's).
        index: basalt_types::IndexDescriptor,
    },
    /// Compares an index with a rebuild from its table, and with
    /// `repair` settles the rows interrupted writes left
    /// (`Database::check_index`): answers [`AdminReply::IndexCheck`].
    CheckIndex {
        /// The data table.
        table: String,
        /// Index name.
        index: String,
        /// Settle unverified rows too.
        #[serde(default)]
        repair: bool,
    },
    /// The table's scans whose filter tested a column's value
    /// (`Database::filter_scans`): answers [`AdminReply::FilterScans`].
    FilterScans {
        /// Table name.
        table: String,
    },
    /// Drops a secondary index (`Database::drop_index`).
    DropIndex {
        /// The data table.
        table: String,
        /// Index name.
        name: String,
    },
    /// Reads rows with options Thrift1's `TScan` lacks.
    Read {
        /// Table name.
        table: String,
        /// What to read.
        read: ReadSpec,
    },
    /// Creates a namespace with properties.
    CreateNamespace {
        /// The namespace and its properties.
        namespace: NamespaceDescriptor,
    },
    /// Sets and removes properties of a namespace.
    AlterNamespace {
        /// Namespace name.
        name: String,
        /// Properties to add or replace.
        #[serde(default)]
        set: BTreeMap<String, String>,
        /// Property keys to remove.
        #[serde(default)]
        unset: Vec<String>,
    },
    /// Drops an empty namespace.
    DropNamespace {
        /// Namespace name.
        name: String,
    },
    /// One namespace and its properties.
    DescribeNamespace {
        /// Namespace name.
        name: String,
    },
    /// Every namespace with its properties.
    ListNamespaces,
    /// The tables of a namespace.
    ListNamespaceTables {
        /// Namespace name.
        name: String,
    },
    /// Cluster only: moves a region to a named server, or to one the
    /// master picks.
    Move {
        /// Encoded region name (a full region name is accepted too).
        region: String,
        /// HBase server name `host,port,startcode`; `None`: any other
        /// live server.
        #[serde(default)]
        server: Option<String>,
    },
    /// Runs the balancer (`balancer`): in a cluster it evens the number of
    /// regions per live server, then their load; in one process it has
    /// nothing to move. It does not run while the switch is off, nor,
    /// without `force`, while regions are in transition.
    Balance {
        /// Run even with regions in transition (HBase's `balancer 'force'`).
        #[serde(default, skip_serializing_if = "is_false")]
        force: bool,
    },
    /// Sets the balancer switch (`balance_switch`); answers the value
    /// before. Kept in the catalog: it outlives the process and the master.
    BalanceSwitch {
        /// The new value.
        on: bool,
    },
    /// Reads the balancer switch (`balancer_enabled`).
    BalancerEnabled,
    /// Runs the region normalizer once now (`normalize`): merges small
    /// cold neighbours, splits oversized regions (docs/normalizer.md).
    /// Does nothing while its switch is off.
    Normalize,
    /// Sets the normalizer switch (`normalizer_switch`); answers the value
    /// before. Off by default; kept in the catalog.
    NormalizerSwitch {
        /// The new value.
        on: bool,
    },
    /// Reads the normalizer switch (`normalizer_enabled`).
    NormalizerEnabled,
    /// Takes a snapshot of a table (`snapshot`, docs/snapshots.md): its
    /// files referenced, not copied.
    Snapshot {
        /// Table name.
        table: String,
        /// The snapshot's name.
        name: String,
        /// Without flushing first (`SKIP_FLUSH => true`).
        #[serde(default)]
        skip_flush: bool,
        /// Seconds until it expires (`TTL`; 0: never).
        #[serde(default)]
        ttl_secs: i64,
        /// The client's nonce (HBase's `SnapshotRequest.nonce`): the same
        /// request sent again is answered as the snapshot it took.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nonce: Option<basalt_types::Nonce>,
    },
    /// The completed snapshots (`list_snapshots`), those whose whole name
    /// matches `pattern` if given.
    ListSnapshots {
        /// A regular expression.
        #[serde(default)]
        pattern: Option<String>,
    },
    /// Deletes a snapshot (`delete_snapshot`).
    DeleteSnapshot {
        /// The snapshot's name.
        name: String,
    },
    /// Creates a table from a snapshot, sharing its files (`clone_snapshot`).
    CloneSnapshot {
        /// The snapshot's name.
        name: String,
        /// The new table.
        table: String,
    },
    /// Bulk-loads a directory of HFiles (`DIR/<family>/<hfile>`, HBase's
    /// `BulkLoadHFiles`) into a table this server holds: `basalt import
    /// hfiles --server`. `dir` is read by the server: a directory on its
    /// machine.
    BulkLoad {
        /// The table.
        table: String,
        /// Where the HFiles are.
        dir: String,
    },
    /// Returns a disabled table to its snapshot (`restore_snapshot`).
    RestoreSnapshot {
        /// The snapshot's name.
        name: String,
    },
    /// Sets the snapshot cleanup switch (`snapshot_cleanup_switch`);
    /// answers the value before.
    SnapshotCleanupSwitch {
        /// The new value.
        on: bool,
    },
    /// Reads the snapshot cleanup switch (`snapshot_cleanup_enabled`).
    SnapshotCleanupEnabled,
    /// Grants or revokes permissions (`grant`, `revoke`;
    /// docs/security.md).
    ChangePermission {
        /// The change.
        change: crate::access::PermissionChange,
    },
    /// The grants of one scope (`user_permission`), answered by
    /// [`AdminReply::Permissions`].
    UserPermissions {
        /// Which grants.
        query: crate::access::PermissionQuery,
    },
    /// Cluster only: opens a region that is assigned nowhere.
    Assign {
        /// Encoded region name (a full region name is accepted too).
        region: String,
    },
    /// Cluster only: closes a region. The master's reconciliation opens
    /// a closed region of an enabled table again (on its next round), as
    /// `assign` does at once.
    Unassign {
        /// Encoded region name (a full region name is accepted too).
        region: String,
    },
}

impl AdminRequest {
    /// HBase's `modifyNamespace` (Thrift2's, REST's `PUT /namespaces/<ns>`,
    /// native RPC's): the namespace's properties become exactly `wanted`'s,
    /// so keys it does not name are removed (the shell's `alter_namespace`
    /// is the call that sets or unsets single keys). `current` is the
    /// namespace as it is now; the answer is the one [`AdminRequest::AlterNamespace`]
    /// every gateway sends for it.
    pub fn modify_namespace(
        current: &NamespaceDescriptor,
        wanted: NamespaceDescriptor,
    ) -> AdminRequest {
        let unset = current
            .properties
            .keys()
            .filter(|k| !wanted.properties.contains_key(*k))
            .cloned()
            .collect();
        AdminRequest::AlterNamespace {
            name: wanted.name,
            set: wanted.properties,
            unset,
        }
    }
}

/// A family and its options in HBase's order and spelling.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FamilyInfo {
    /// Family name.
    pub name: String,
    /// `(option, value)` pairs, as `describe` prints them.
    pub options: Vec<(String, String)>,
}

impl FamilyInfo {
    /// The family's name and every option as text, as gateways describe
    /// a family.
    pub fn of(family: &ColumnFamilyDescriptor) -> FamilyInfo {
        FamilyInfo {
            name: family.name().to_string(),
            options: family
                .options()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        }
    }
}

/// One region and its load: hbtop's region columns.
///
/// The fields after `state_reason` came later: they default when absent,
/// so an older server's encoding still decodes (with zero rates).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
    /// HBase's region state: `OPEN` (left out of the encoding) or
    /// `FAILED_OPEN`.
    #[serde(default = "open_state", skip_serializing_if = "is_open_state")]
    pub state: String,
    /// Why the region is not `OPEN`: the error naming the damaged file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_reason: Option<String>,
    /// Reads and writes per second over the last minute (hbtop's `#REQ/S`).
    #[serde(default)]
    pub requests_per_sec: f64,
    /// Reads per second over the last minute (`#READ/S`).
    #[serde(default)]
    pub read_requests_per_sec: f64,
    /// Filtered reads per second over the last minute (`#FREAD/S`).
    #[serde(default)]
    pub filtered_read_requests_per_sec: f64,
    /// Writes per second over the last minute (`#WRITE/S`).
    #[serde(default)]
    pub write_requests_per_sec: f64,
    /// Reads whose filter dropped at least one row or cell.
    #[serde(default)]
    pub filtered_read_requests: u64,
    /// Bytes of cells returned by reads.
    #[serde(default)]
    pub bytes_read: u64,
    /// Bytes of cells written.
    #[serde(default)]
    pub bytes_written: u64,
    /// The running compaction's progress, 0.0 to 1.0 (hbtop's `%COMP`);
    /// null when no compaction runs.
    #[serde(default)]
    pub compaction_progress: Option<f64>,
    /// Clock millis of the region's last major compaction (`LASTMCOMP`);
    /// 0 when none is known.
    #[serde(default)]
    pub last_major_compaction_ms: i64,
    /// Cluster mode: the HBase name of the server holding the region;
    /// null in one process.
    #[serde(default)]
    pub server: Option<String>,
}

/// An `OPEN` region with no name, range or load: a base to fill in.
impl Default for RegionInfoReply {
    fn default() -> Self {
        RegionInfoReply {
            name: Bytes::new(),
            encoded_name: String::new(),
            start_key: Bytes::new(),
            end_key: Bytes::new(),
            store_files: 0,
            store_file_bytes: 0,
            memstore_bytes: 0,
            read_requests: 0,
            write_requests: 0,
            state: open_state(),
            state_reason: None,
            requests_per_sec: 0.0,
            read_requests_per_sec: 0.0,
            filtered_read_requests_per_sec: 0.0,
            write_requests_per_sec: 0.0,
            filtered_read_requests: 0,
            bytes_read: 0,
            bytes_written: 0,
            compaction_progress: None,
            last_major_compaction_ms: 0,
            server: None,
        }
    }
}

fn open_state() -> String {
    "OPEN".to_string()
}

fn is_open_state(state: &str) -> bool {
    state == "OPEN"
}

/// A table as `describe` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TableReply {
    /// Table name.
    pub name: String,
    /// Whether it serves requests.
    pub enabled: bool,
    /// Families in name order.
    pub families: Vec<FamilyInfo>,
    /// Regions in key order.
    pub regions: Vec<RegionInfoReply>,
    /// Secondary indexes, in the order created.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<basalt_types::IndexDescriptor>,
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
    /// Regions that could not be opened (`FAILED_OPEN`).
    #[serde(default)]
    pub failed_regions: usize,
    /// Reads that met damaged data since the server started.
    #[serde(default)]
    pub corruption_errors: u64,
    /// The gateways serving this database, in the order they started;
    /// empty for an embedded database (and from a version-1 server that
    /// did not report them).
    #[serde(default)]
    pub gateways: Vec<GatewayReply>,
    /// A cluster member's view of the whole cluster; absent in one process
    /// (and from servers that predate cluster mode), so the field is left
    /// out of the encoding then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterReply>,
    /// Clock millis at which the server started (0 from older servers,
    /// as every field below).
    #[serde(default)]
    pub started_at_ms: i64,
    /// Milliseconds since then.
    #[serde(default)]
    pub uptime_ms: i64,
    /// Reads per second over the last minute, across regions.
    #[serde(default)]
    pub read_requests_per_second: f64,
    /// Writes per second over the last minute, across regions.
    #[serde(default)]
    pub write_requests_per_second: f64,
    /// Reads whose filter dropped at least one row or cell.
    #[serde(default)]
    pub filtered_read_requests: u64,
    /// Bytes in memstores, across regions.
    #[serde(default)]
    pub memstore_bytes: u64,
    /// Store files, across regions.
    #[serde(default)]
    pub store_files: usize,
    /// Bytes in store files, across regions.
    #[serde(default)]
    pub store_file_bytes: u64,
    /// Flushes waiting for a background thread.
    #[serde(default)]
    pub flush_queue_length: usize,
    /// Compactions waiting for a background thread.
    #[serde(default)]
    pub compaction_queue_length: usize,
}

/// The cluster as its active master sees it, for `status 'detailed'`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ClusterReply {
    /// The active master's server name.
    pub master: String,
    /// Standby masters, by server name.
    #[serde(default)]
    pub backup_masters: Vec<String>,
    /// Live region servers in name order.
    pub servers: Vec<ServerReply>,
    /// Servers declared dead whose recovery is not over.
    #[serde(default)]
    pub dead_servers: Vec<String>,
    /// Regions not `OPEN` on a live server.
    #[serde(default)]
    pub in_transition: Vec<RegionTransition>,
    /// Procedures begun and not finished.
    #[serde(default)]
    pub procedures: Vec<ProcedureReply>,
    /// The catalog version the master answered from.
    #[serde(default)]
    pub catalog_version: u64,
}

/// One live region server.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerReply {
    /// HBase server name `host,port,startcode`.
    pub name: String,
    /// The regions assigned to it, in table and key order. Their load
    /// counters are meaningful only when `load` is present.
    pub regions: Vec<RegionInfoReply>,
    /// The load this server reports: present for the server that answered
    /// the request (it knows its own regions' counters; the others' travel
    /// in no message Basalt has yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<ServerLoadReply>,
}

/// What a region server reports of its load, summed over its regions.
/// The fields after `store_file_bytes` default when absent (older servers).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerLoadReply {
    /// Reads and writes per second over the last minute.
    pub requests_per_second: f64,
    /// Gets and scans served.
    pub read_requests: u64,
    /// Row mutations applied.
    pub write_requests: u64,
    /// Bytes in memstores.
    pub memstore_bytes: u64,
    /// Store files.
    pub store_files: usize,
    /// Bytes in store files.
    pub store_file_bytes: u64,
    /// Reads per second over the last minute.
    #[serde(default)]
    pub read_requests_per_second: f64,
    /// Writes per second over the last minute.
    #[serde(default)]
    pub write_requests_per_second: f64,
    /// Reads whose filter dropped at least one row or cell.
    #[serde(default)]
    pub filtered_read_requests: u64,
}

/// A procedure the master has not finished.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProcedureReply {
    /// Its id.
    pub id: u64,
    /// What it does.
    pub description: String,
}

/// One gateway of the server, for `status` and `list_regions`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct GatewayReply {
    /// The protocol: `thrift`, `thrift2`, `rest`.
    pub protocol: String,
    /// `host:port` it listens on.
    pub address: String,
}

/// The answer to an [`AdminRequest`].
// `Status` is a few hundred bytes larger than the other variants: a reply
// is built once per request and moved once or twice, so boxing it would
// save nothing worth changing every gateway's match on it.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum AdminReply {
    /// The operation was carried out.
    Done,
    /// What a bulk load did.
    BulkLoaded(crate::bulk_load::BulkLoadReport),
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
    /// `describe_namespace`, `list_namespace`: namespaces with their
    /// properties.
    Namespaces {
        /// In name order.
        namespaces: Vec<NamespaceDescriptor>,
    },
    /// `list_namespace_tables`: full table names.
    Tables {
        /// In name order.
        tables: Vec<String>,
    },
    /// `balance`: whether the balancer ran and how many regions it moved.
    Balanced {
        /// Regions moved (zero when the counts were even already).
        moved: usize,
        /// False when it did not run (switch off, regions in transition).
        #[serde(default = "yes")]
        ran: bool,
        /// Why it did not run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// `normalize`: whether the normalizer ran and the plans it carried
    /// out.
    Normalized(crate::normalizer::NormalizerRun),
    /// `balance_switch`, `balancer_enabled`, `normalizer_switch`,
    /// `normalizer_enabled`: the switch's value before the call.
    Switch {
        /// The value before (for a read, the value).
        previous: bool,
    },
    /// `user_permission`: the grants asked for.
    Permissions {
        /// Each grant.
        grants: Vec<crate::access::Grant>,
    },
    /// `list_snapshots`: the completed snapshots, oldest first.
    Snapshots {
        /// Each snapshot.
        snapshots: Vec<crate::cluster::SnapshotInfo>,
    },
    /// `read`: one page of rows.
    Rows {
        /// The rows.
        rows: Vec<RowReply>,
        /// True when more rows may follow: ask again with `after_row` set
        /// to `next`, or to the last row when `next` is absent.
        more: bool,
        /// Where the next page starts when that is not the last row's key
        /// (a read by index: the last index key).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next: Option<Bytes>,
    },
    /// `create_index`: the index is built and active.
    IndexBuilt {
        /// Rows the backfill indexed.
        rows: u64,
    },
    /// `check_index`: what the comparison found.
    IndexCheck(crate::index::IndexCheckReport),
    /// `filter_scans`: by tested column.
    FilterScans {
        /// One entry per tested column.
        scans: Vec<crate::FilterScanStats>,
    },
}

/// Administration in this process, through `Database`'s public methods.
impl Admin for Database {
    fn execute(&self, request: AdminRequest) -> Result<AdminReply> {
        execute_on(self, request)
    }
}

fn execute_on(db: &Database, request: AdminRequest) -> Result<AdminReply> {
    match request {
        AdminRequest::Status => {
            let mut status = StatusReply {
                tables: 0,
                regions: 0,
                read_requests: 0,
                write_requests: 0,
                requests_per_second: 0.0,
                failed_regions: 0,
                corruption_errors: db.corruption_errors(),
                gateways: db
                    .gateways()
                    .into_iter()
                    .map(|g| GatewayReply {
                        protocol: g.protocol,
                        address: g.address.to_string(),
                    })
                    .collect(),
                cluster: None,
                started_at_ms: db.started_at_ms(),
                uptime_ms: (db.clock().now_millis() - db.started_at_ms()).max(0),
                read_requests_per_second: 0.0,
                write_requests_per_second: 0.0,
                filtered_read_requests: 0,
                memstore_bytes: 0,
                store_files: 0,
                store_file_bytes: 0,
                flush_queue_length: 0,
                compaction_queue_length: 0,
            };
            let activity = db.region_server().maintenance_activity();
            status.flush_queue_length = activity.queued_flushes;
            status.compaction_queue_length = activity.queued_compactions;
            let mut everywhere = Vec::new();
            for name in db.list_tables() {
                // A table dropped between the listing and here is not counted.
                let Ok(regions) = db.list_regions(&name) else {
                    continue;
                };
                status.tables += 1;
                status.regions += regions.len();
                // A disabled table's regions are closed, not failed.
                let enabled = db.is_table_enabled(&name).unwrap_or(false);
                for r in &regions {
                    if r.state != RegionState::Open && enabled {
                        status.failed_regions += 1;
                    }
                    status.read_requests += r.load.read_requests;
                    status.write_requests += r.load.write_requests;
                    status.requests_per_second +=
                        r.load.read_requests_per_sec + r.load.write_requests_per_sec;
                    status.read_requests_per_second += r.load.read_requests_per_sec;
                    status.write_requests_per_second += r.load.write_requests_per_sec;
                    status.filtered_read_requests += r.load.filtered_read_requests;
                    status.memstore_bytes += r.load.memstore_bytes;
                    status.store_files += r.store_files();
                    status.store_file_bytes += r.store_file_bytes();
                }
                everywhere.extend(regions);
            }
            if db.cluster().is_some() {
                let MasterAnswer::Status(cluster) = db.master_call(MasterCall::Status)? else {
                    return Err(Error::invalid("the master answered status with no status"));
                };
                status.cluster = Some(cluster_reply(cluster, &everywhere, db.server_name()));
            }
            Ok(AdminReply::Status(status))
        }
        AdminRequest::Move { region, server } => {
            let region = encoded_region(&region)?;
            if let Some(s) = &server {
                // Checked here so a typo is named before the master is asked.
                ServerName::parse(s)?;
            }
            let call = MasterCall::Move {
                region,
                target: server,
            };
            db.master_call(call).map(|_| AdminReply::Done)
        }
        AdminRequest::Assign { region } => {
            let call = MasterCall::Assign {
                region: encoded_region(&region)?,
            };
            db.master_call(call).map(|_| AdminReply::Done)
        }
        AdminRequest::Unassign { region } => {
            let call = MasterCall::Unassign {
                region: encoded_region(&region)?,
            };
            db.master_call(call).map(|_| AdminReply::Done)
        }
        AdminRequest::Balance { force } => Ok(match db.balance(force)? {
            BalancerRun::Moved(moved) => AdminReply::Balanced {
                moved,
                ran: true,
                reason: None,
            },
            BalancerRun::NotRun(reason) => AdminReply::Balanced {
                moved: 0,
                ran: false,
                reason: Some(reason),
            },
        }),
        AdminRequest::BalanceSwitch { on } => Ok(AdminReply::Switch {
            previous: db.balancer_switch(Some(on))?,
        }),
        AdminRequest::BalancerEnabled => Ok(AdminReply::Switch {
            previous: db.balancer_switch(None)?,
        }),
        AdminRequest::Normalize => Ok(AdminReply::Normalized(db.normalize()?)),
        AdminRequest::NormalizerSwitch { on } => Ok(AdminReply::Switch {
            previous: db.normalizer_switch(Some(on))?,
        }),
        AdminRequest::NormalizerEnabled => Ok(AdminReply::Switch {
            previous: db.normalizer_switch(None)?,
        }),
        AdminRequest::Snapshot {
            table,
            name,
            skip_flush,
            ttl_secs,
            nonce,
        } => {
            db.snapshot_once(&table, &name, skip_flush, ttl_secs, nonce)?;
            Ok(AdminReply::Done)
        }
        AdminRequest::ListSnapshots { pattern } => Ok(AdminReply::Snapshots {
            snapshots: db.list_snapshots(pattern.as_deref())?,
        }),
        AdminRequest::DeleteSnapshot { name } => {
            db.delete_snapshot(&name)?;
            Ok(AdminReply::Done)
        }
        AdminRequest::CloneSnapshot { name, table } => {
            db.clone_snapshot(&name, &table)?;
            Ok(AdminReply::Done)
        }
        AdminRequest::RestoreSnapshot { name } => {
            db.restore_snapshot(&name)?;
            Ok(AdminReply::Done)
        }
        AdminRequest::BulkLoad { table, dir } => {
            let (files, root) = crate::bulk_load::source_of(&dir)?;
            Ok(AdminReply::BulkLoaded(
                db.bulk_load_hfiles(&table, &files, &root)?,
            ))
        }
        AdminRequest::SnapshotCleanupSwitch { on } => Ok(AdminReply::Switch {
            previous: db.snapshot_cleanup_switch(Some(on))?,
        }),
        AdminRequest::SnapshotCleanupEnabled => Ok(AdminReply::Switch {
            previous: db.snapshot_cleanup_switch(None)?,
        }),
        AdminRequest::ChangePermission { change } => {
            db.change_permission(change)?;
            Ok(AdminReply::Done)
        }
        AdminRequest::UserPermissions { query } => Ok(AdminReply::Permissions {
            grants: db.user_permissions(&query)?,
        }),

        AdminRequest::Create {
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
                        return Err(Error::invalid(
                            "give SPLITS or NUMREGIONS with SPLITALGO, not both",
                        ));
                    }
                    let algo: SplitAlgorithm = algo.parse()?;
                    db.create_table_presplit(descriptor, n, algo)?;
                }
                (None, None) => db.create_table_with_splits(descriptor, &splits)?,
                _ => {
                    return Err(Error::invalid(
                        "NUMREGIONS and SPLITALGO must be given together",
                    ))
                }
            }
            Ok(AdminReply::Done)
        }
        AdminRequest::Describe { table } => {
            let info = db.describe_table(&table)?;
            let mut families: Vec<FamilyInfo> = info
                .descriptor
                .families()
                .iter()
                .map(FamilyInfo::of)
                .collect();
            families.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(AdminReply::Table(TableReply {
                name: table,
                enabled: info.enabled,
                families,
                regions: info.regions.iter().map(region_reply).collect(),
                indexes: info.descriptor.indexes().to_vec(),
            }))
        }
        AdminRequest::Alter { table, changes } => {
            let current = db.describe_table(&table)?.descriptor;
            let mut out = Vec::with_capacity(changes.len());
            for change in &changes {
                out.push(match change {
                    AlterChange::Set { family } => match current.get_family(family.name.as_bytes())
                    {
                        Some(existing) => {
                            FamilyChange::Modify(family_descriptor(Some(existing.clone()), family)?)
                        }
                        None => FamilyChange::Add(family_descriptor(None, family)?),
                    },
                    AlterChange::Delete { name } => FamilyChange::Delete(name.clone()),
                });
            }
            db.alter_table(&table, &out)?;
            Ok(AdminReply::Done)
        }
        AdminRequest::Truncate {
            table,
            preserve_splits,
        } => {
            truncate(db, &table, preserve_splits)?;
            Ok(AdminReply::Done)
        }
        AdminRequest::CreateNamespace { namespace } => {
            db.create_namespace(namespace)?;
            Ok(AdminReply::Done)
        }
        AdminRequest::AlterNamespace { name, set, unset } => {
            db.alter_namespace(&name, set, &unset)?;
            Ok(AdminReply::Done)
        }
        AdminRequest::DropNamespace { name } => {
            db.drop_namespace(&name)?;
            Ok(AdminReply::Done)
        }
        AdminRequest::DescribeNamespace { name } => Ok(AdminReply::Namespaces {
            namespaces: vec![db.describe_namespace(&name)?],
        }),
        AdminRequest::ListNamespaces => Ok(AdminReply::Namespaces {
            namespaces: db.list_namespaces(),
        }),
        AdminRequest::ListNamespaceTables { name } => Ok(AdminReply::Tables {
            tables: db.list_namespace_tables(&name)?,
        }),
        AdminRequest::ListRegions { table } => Ok(AdminReply::Regions {
            regions: db.list_regions(&table)?.iter().map(region_reply).collect(),
        }),
        AdminRequest::GetSplits { table } => Ok(AdminReply::Splits {
            keys: db
                .list_regions(&table)?
                .iter()
                .skip(1)
                .map(|r| r.info.start_key.clone())
                .collect(),
        }),
        AdminRequest::Flush { table } => {
            db.flush_table(&table)?;
            Ok(AdminReply::Done)
        }
        AdminRequest::Compact { table, major } => {
            db.compact_table(&table, major)?;
            Ok(AdminReply::Done)
        }
        AdminRequest::Split { target, key } => {
            // HBase's master refuses a client's split while the switch is
            // off, whichever client (gateway) asks.
            db.check_split_or_merge(SplitOrMerge::Split)?;
            // A full region name holds a comma (a table name never does) and
            // an encoded one is 32 hex digits; anything else names a table.
            if target.contains(&b',') || (is_encoded_name(&target) && !is_table_name(db, &target)) {
                db.split_region(&target, key.as_deref())?;
            } else {
                let name = String::from_utf8_lossy(&target).into_owned();
                if !db.table_exists(&name) {
                    return Err(Error::TableNotFound(name));
                }
                db.split_table(&name, key.as_deref())?;
            }
            Ok(AdminReply::Done)
        }
        AdminRequest::Merge { region_a, region_b } => {
            db.check_split_or_merge(SplitOrMerge::Merge)?;
            db.merge_regions(&region_a, &region_b)?;
            Ok(AdminReply::Done)
        }
        AdminRequest::Read { table, read } => match &read.index {
            Some(index) => {
                let (rows, next) = read_index_page(db, &table, index, &read, MAX_PAGE_ROWS)?;
                Ok(AdminReply::Rows {
                    rows,
                    more: next.is_some(),
                    next,
                })
            }
            None => {
                let (rows, more) = read_page(db, &table, &read, MAX_PAGE_ROWS)?;
                Ok(AdminReply::Rows {
                    rows,
                    more,
                    next: None,
                })
            }
        },
        AdminRequest::CreateIndex { table, index } => Ok(AdminReply::IndexBuilt {
            rows: db.create_index(&table, index)?,
        }),
        AdminRequest::CheckIndex {
            table,
            index,
            repair,
        } => Ok(AdminReply::IndexCheck(
            db.check_index(&table, &index, repair)?,
        )),
        AdminRequest::FilterScans { table } => Ok(AdminReply::FilterScans {
            scans: db.filter_scans(&table)?,
        }),
        AdminRequest::DropIndex { table, name } => {
            db.drop_index(&table, &name)?;
            Ok(AdminReply::Done)
        }
    }
}

/// [`AdminRequest::Truncate`]. Without `preserve_splits` the emptied
/// regions are merged two by two, each merge a committed step, so a crash
/// at any point leaves the table there, empty and enabled, only in more
/// regions than asked; dropping and creating it again (what Thrift2 once
/// did) could lose the table to a crash in between.
fn truncate(db: &Database, table: &str, preserve_splits: bool) -> Result<()> {
    // `truncate_table` checks this too; checked first so that a table the
    // caller forgot to disable is not enabled below.
    if db.is_table_enabled(table)? {
        return Err(Error::TableEnabled(table.to_string()));
    }
    db.truncate_table(table)?;
    db.enable_table(table)?;
    if !preserve_splits {
        loop {
            let regions = db.list_regions(table)?;
            let [first, second, ..] = regions.as_slice() else {
                break;
            };
            db.merge_regions(
                first.info.encoded_name().as_bytes(),
                second.info.encoded_name().as_bytes(),
            )?;
        }
    }
    Ok(())
}

/// The encoded name of a region given by encoded name (32 hex digits) or
/// by full name (`<table>,<start>,<id>.<encoded>.`), as HBase's shell
/// accepts either.
pub fn encoded_region(name: &str) -> Result<String> {
    let bad = || {
        Error::invalid(format!(
            "{name:?} is not a region name: expected the encoded name (32 hex digits) or a full name ending in .<encoded>."
        ))
    };
    let encoded = match name.strip_suffix('.') {
        Some(full) => full.rsplit('.').next().ok_or_else(bad)?,
        None => name,
    };
    if !is_encoded_name(encoded.as_bytes()) {
        return Err(bad());
    }
    Ok(encoded.to_ascii_lowercase())
}

/// The master's status with each region's full name and key range (from
/// the catalog this member reads) and, for the server that answers, the
/// load of its regions.
fn cluster_reply(
    status: ClusterStatus,
    regions: &[RegionSummary],
    me: Option<&str>,
) -> ClusterReply {
    let by_encoded: BTreeMap<String, &RegionSummary> =
        regions.iter().map(|r| (r.info.encoded_name(), r)).collect();
    let mut servers: Vec<ServerReply> = status
        .servers
        .into_iter()
        .map(|s| {
            let mut held: Vec<&RegionSummary> = Vec::new();
            let mut unknown: Vec<RegionInfoReply> = Vec::new();
            for encoded in &s.regions {
                match by_encoded.get(encoded) {
                    Some(r) => held.push(r),
                    // Created after this member last read the catalog: the
                    // encoded name is all there is to show.
                    None => unknown.push(RegionInfoReply {
                        name: Bytes::from(encoded.clone()),
                        encoded_name: encoded.clone(),
                        server: Some(s.name.clone()),
                        ..RegionInfoReply::default()
                    }),
                }
            }
            held.sort_by(|a, b| {
                (&a.info.table, &a.info.start_key).cmp(&(&b.info.table, &b.info.start_key))
            });
            let mine = me == Some(s.name.as_str());
            let reported = s.region_loads.as_ref().filter(|_| !mine);
            let load = mine.then(|| ServerLoadReply {
                requests_per_second: held
                    .iter()
                    .map(|r| r.load.read_requests_per_sec + r.load.write_requests_per_sec)
                    .sum(),
                read_requests: held.iter().map(|r| r.load.read_requests).sum(),
                write_requests: held.iter().map(|r| r.load.write_requests).sum(),
                memstore_bytes: held.iter().map(|r| r.load.memstore_bytes).sum(),
                store_files: held.iter().map(|r| r.store_files()).sum(),
                store_file_bytes: held
                    .iter()
                    .flat_map(|r| r.stores.iter().map(|(_, st)| st.file_bytes))
                    .sum(),
                read_requests_per_second: held.iter().map(|r| r.load.read_requests_per_sec).sum(),
                write_requests_per_second: held.iter().map(|r| r.load.write_requests_per_sec).sum(),
                filtered_read_requests: held.iter().map(|r| r.load.filtered_read_requests).sum(),
            });
            let mut regions: Vec<RegionInfoReply> = held.into_iter().map(region_reply).collect();
            regions.extend(unknown);
            // Another server's numbers: what it reported to the master for
            // this status (`None` when it did not answer in time).
            let load = match reported {
                Some(reports) => {
                    let by_id: BTreeMap<u64, &RegionLoadReport> =
                        reports.iter().map(|r| (r.region, r)).collect();
                    for region in &mut regions {
                        let id = by_encoded.get(&region.encoded_name).map(|r| r.info.id);
                        if let Some(report) = id.and_then(|id| by_id.get(&id)) {
                            region.requests_per_sec = report.requests_per_sec;
                            region.read_requests = report.read_requests;
                            region.write_requests = report.write_requests;
                            region.memstore_bytes = report.memstore_bytes;
                            region.store_files = report.store_files;
                            region.store_file_bytes = report.store_file_bytes;
                            region.read_requests_per_sec =
                                report.read_requests_per_sec.unwrap_or_default();
                            region.write_requests_per_sec =
                                report.write_requests_per_sec.unwrap_or_default();
                            region.filtered_read_requests_per_sec =
                                report.filtered_read_requests_per_sec.unwrap_or_default();
                            region.filtered_read_requests =
                                report.filtered_read_requests.unwrap_or_default();
                            region.bytes_read = report.bytes_read.unwrap_or_default();
                            region.bytes_written = report.bytes_written.unwrap_or_default();
                        }
                    }
                    Some(ServerLoadReply {
                        requests_per_second: reports.iter().map(|r| r.requests_per_sec).sum(),
                        read_requests: reports.iter().map(|r| r.read_requests).sum(),
                        write_requests: reports.iter().map(|r| r.write_requests).sum(),
                        memstore_bytes: reports.iter().map(|r| r.memstore_bytes).sum(),
                        store_files: reports.iter().map(|r| r.store_files).sum(),
                        store_file_bytes: reports.iter().map(|r| r.store_file_bytes).sum(),
                        read_requests_per_second: reports
                            .iter()
                            .filter_map(|r| r.read_requests_per_sec)
                            .sum(),
                        write_requests_per_second: reports
                            .iter()
                            .filter_map(|r| r.write_requests_per_sec)
                            .sum(),
                        filtered_read_requests: reports
                            .iter()
                            .filter_map(|r| r.filtered_read_requests)
                            .sum(),
                    })
                }
                None => load,
            };
            ServerReply {
                name: s.name,
                regions,
                load,
            }
        })
        .collect();
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    ClusterReply {
        master: status.master,
        backup_masters: status.backup_masters,
        servers,
        dead_servers: status.dead_servers,
        in_transition: status.in_transition,
        procedures: status
            .procedures
            .into_iter()
            .map(|(id, description)| ProcedureReply { id, description })
            .collect(),
        catalog_version: status.catalog_version,
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn yes() -> bool {
    true
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
) -> Result<(Vec<RowReply>, bool)> {
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
                last.cells.extend(row.cells.iter().map(CellReply::from));
            }
            continue;
        }
        if rows.len() == page || bytes >= MAX_PAGE_BYTES {
            return Ok((rows, true));
        }
        bytes += answer_bytes(&row);
        rows.push(RowReply::from(&row));
    }
    Ok((rows, false))
}

/// What a row adds to a page's [`MAX_PAGE_BYTES`].
fn answer_bytes(row: &RowResult) -> usize {
    row.cells
        .iter()
        .map(|c| c.row.len() + c.family.len() + c.qualifier.len() + c.value.len())
        .sum()
}

/// A page of a read by index: its rows, and the index key to resume
/// after when more may follow.
pub fn read_index_page(
    db: &Database,
    table: &str,
    index: &str,
    read: &ReadSpec,
    page: usize,
) -> Result<(Vec<RowReply>, Option<Bytes>)> {
    let mut scan = read.to_scan()?;
    if let Some(after) = &read.after_row {
        // Resume at the last index key returned (inclusive both ways) and
        // skip its row.
        scan.start_row = after.clone();
        scan.limit = scan.limit.map(|l| l.saturating_add(1));
    }
    let mut scanner = db.scan_index(table, index, &scan)?;
    let mut rows = Vec::new();
    let mut bytes = 0usize;
    while let Some(row) = scanner.next() {
        let row = row?;
        if read.after_row.is_some() && read.after_row.as_deref() == scanner.last_key() {
            continue;
        }
        bytes += answer_bytes(&row);
        rows.push(RowReply::from(&row));
        if rows.len() == page || bytes >= MAX_PAGE_BYTES {
            return Ok((rows, scanner.last_key().map(Bytes::copy_from_slice)));
        }
    }
    Ok((rows, None))
}

impl From<&Cell> for CellReply {
    fn from(c: &Cell) -> Self {
        CellReply {
            family: c.family.clone(),
            qualifier: c.qualifier.clone(),
            timestamp: c.timestamp,
            cell_type: c.cell_type.name().to_string(),
            value: c.value.clone(),
        }
    }
}

impl From<&RowResult> for RowReply {
    fn from(row: &RowResult) -> Self {
        RowReply {
            row: row.row.clone(),
            cells: row.cells.iter().map(CellReply::from).collect(),
        }
    }
}

fn family_descriptor(
    base: Option<ColumnFamilyDescriptor>,
    spec: &FamilySpec,
) -> Result<ColumnFamilyDescriptor> {
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
        state: r.state.name().to_string(),
        state_reason: match &r.state {
            RegionState::Open => None,
            RegionState::FailedOpen { reason, .. } => Some(reason.clone()),
            RegionState::Offline => Some("open on no server right now (being assigned)".into()),
        },
        requests_per_sec: r.load.read_requests_per_sec + r.load.write_requests_per_sec,
        read_requests_per_sec: r.load.read_requests_per_sec,
        filtered_read_requests_per_sec: r.load.filtered_read_requests_per_sec,
        write_requests_per_sec: r.load.write_requests_per_sec,
        filtered_read_requests: r.load.filtered_read_requests,
        bytes_read: r.load.bytes_read,
        bytes_written: r.load.bytes_written,
        compaction_progress: r.compaction_progress(),
        last_major_compaction_ms: r.last_major_compaction_ms(),
        server: r.server.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Put, TableDescriptor};

    fn family(name: &str, options: &[(&str, &str)]) -> FamilySpec {
        FamilySpec {
            name: name.into(),
            options: options
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn create(table: &str, families: Vec<FamilySpec>, splits: &[&str]) -> AdminRequest {
        AdminRequest::Create {
            table: table.into(),
            families,
            splits: splits
                .iter()
                .map(|s| Bytes::copy_from_slice(s.as_bytes()))
                .collect(),
            num_regions: None,
            split_algo: None,
        }
    }

    #[test]
    fn a_database_answers_through_the_trait_object() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let admin: &dyn Admin = &db;
        admin
            .execute(create("t", vec![family("f", &[])], &["m"]))
            .unwrap();
        let reply = admin
            .execute(AdminRequest::GetSplits { table: "t".into() })
            .unwrap();
        assert_eq!(
            reply,
            AdminReply::Splits {
                keys: vec![Bytes::from_static(b"m")]
            }
        );
    }

    /// HBase's `Admin.truncateTable`, which every gateway now runs: an
    /// enabled table is refused, a disabled one comes back empty and
    /// enabled, keeping its regions only when asked.
    #[test]
    fn truncate_refuses_an_enabled_table_and_leaves_a_truncated_one_enabled() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        db.execute(create("t", vec![family("f", &[])], &["g", "m", "t"]))
            .unwrap();
        let table = db.table("t").unwrap();
        for row in ["a", "h", "p", "x"] {
            table.put(&Put::new(row).add("f", "q", "v")).unwrap();
        }
        let truncate = |preserve_splits| AdminRequest::Truncate {
            table: "t".into(),
            preserve_splits,
        };
        assert!(matches!(
            db.execute(truncate(true)),
            Err(Error::TableEnabled(_))
        ));
        assert_eq!(db.list_regions("t").unwrap().len(), 4, "nothing changed");
        let rows = |db: &Database| {
            db.table("t")
                .unwrap()
                .scan(&Default::default())
                .unwrap()
                .count()
        };
        assert_eq!(rows(&db), 4);

        db.disable_table("t").unwrap();
        db.execute(truncate(true)).unwrap();
        assert!(db.is_table_enabled("t").unwrap());
        assert_eq!(rows(&db), 0);
        assert_eq!(db.list_regions("t").unwrap().len(), 4);

        table.put(&Put::new("b").add("f", "q", "v")).unwrap();
        db.disable_table("t").unwrap();
        db.execute(truncate(false)).unwrap();
        assert!(db.is_table_enabled("t").unwrap());
        assert_eq!(rows(&db), 0);
        assert_eq!(db.list_regions("t").unwrap().len(), 1);
        assert_eq!(
            db.describe_table("t").unwrap().descriptor.families().len(),
            1,
            "the descriptor is kept"
        );
    }

    /// HBase's `modifyNamespace`, which Thrift2, REST's PUT and native
    /// RPC all send as this one request: the keys not sent go.
    #[test]
    fn modify_namespace_replaces_the_properties_with_those_sent() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let props = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        db.execute(AdminRequest::CreateNamespace {
            namespace: NamespaceDescriptor {
                name: "ns".into(),
                properties: props(&[("owner", "ops"), ("tier", "gold")]),
            },
        })
        .unwrap();
        let current = db.describe_namespace("ns").unwrap();
        let wanted = NamespaceDescriptor {
            name: "ns".into(),
            properties: props(&[("owner", "dev")]),
        };
        db.execute(AdminRequest::modify_namespace(&current, wanted))
            .unwrap();
        assert_eq!(
            db.describe_namespace("ns").unwrap().properties,
            props(&[("owner", "dev")])
        );
    }

    /// The switches gate a client's split and merge through
    /// `Admin::execute`, whichever gateway sent it.
    #[test]
    fn a_split_or_merge_is_refused_while_its_switch_is_off() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        db.execute(create("t", vec![family("f", &[])], &["m"]))
            .unwrap();
        let split = || AdminRequest::Split {
            target: Bytes::from_static(b"t"),
            key: Some(Bytes::from_static(b"g")),
        };
        let merge = |db: &Database| {
            let regions = db.list_regions("t").unwrap();
            AdminRequest::Merge {
                region_a: Bytes::from(regions[0].info.encoded_name()),
                region_b: Bytes::from(regions[1].info.encoded_name()),
            }
        };
        assert!(db
            .split_or_merge_switch(SplitOrMerge::Split, Some(false))
            .unwrap());
        assert!(db
            .split_or_merge_switch(SplitOrMerge::Merge, Some(false))
            .unwrap());
        let e = db.execute(split()).unwrap_err();
        assert!(e.to_string().contains("split switch is off"), "{e}");
        let e = db.execute(merge(&db)).unwrap_err();
        assert!(e.to_string().contains("merge switch is off"), "{e}");
        assert_eq!(db.list_regions("t").unwrap().len(), 2, "nothing changed");

        assert!(!db
            .split_or_merge_switch(SplitOrMerge::Split, Some(true))
            .unwrap());
        assert!(!db
            .split_or_merge_switch(SplitOrMerge::Merge, Some(true))
            .unwrap());
        db.execute(merge(&db)).unwrap();
        db.execute(split()).unwrap();
        assert_eq!(db.list_regions("t").unwrap().len(), 2);
    }

    /// HBase keeps the switches in ZooKeeper; Basalt keeps them in the
    /// catalog, so a restart does not turn them on again.
    #[test]
    fn the_split_and_merge_switches_outlive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Database::open(dir.path()).unwrap();
            assert!(db
                .split_or_merge_switch(SplitOrMerge::Split, Some(false))
                .unwrap());
            assert!(db.split_or_merge_switch(SplitOrMerge::Merge, None).unwrap());
        }
        let db = Database::open(dir.path()).unwrap();
        assert!(!db.split_or_merge_switch(SplitOrMerge::Split, None).unwrap());
        assert!(db.split_or_merge_switch(SplitOrMerge::Merge, None).unwrap());
        db.execute(create("t", vec![family("f", &[])], &[]))
            .unwrap();
        let e = db
            .execute(AdminRequest::Split {
                target: Bytes::from_static(b"t"),
                key: Some(Bytes::from_static(b"g")),
            })
            .unwrap_err();
        assert!(e.to_string().contains("split switch is off"), "{e}");
    }

    #[test]
    fn alter_changes_only_the_options_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        db.execute(create("t", vec![family("f", &[("VERSIONS", "5")])], &[]))
            .unwrap();
        db.execute(AdminRequest::Alter {
            table: "t".into(),
            changes: vec![AlterChange::Set {
                family: family("f", &[("TTL", "100")]),
            }],
        })
        .unwrap();
        let d = db.describe_table("t").unwrap().descriptor;
        let f = d.get_family(b"f").unwrap();
        assert_eq!((f.max_versions, f.ttl_seconds), (5, Some(100)));
    }

    #[test]
    fn failures_are_core_errors_with_their_kind() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let e = db
            .execute(AdminRequest::Describe {
                table: "nope".into(),
            })
            .unwrap_err();
        assert_eq!(
            (e.kind(), e.subject()),
            (crate::ErrorKind::TableNotFound, Some("nope"))
        );
        let e = db
            .execute(AdminRequest::Create {
                table: "t".into(),
                families: vec![family("f", &[])],
                splits: Vec::new(),
                num_regions: Some(3),
                split_algo: None,
            })
            .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
    }

    #[test]
    fn a_read_pages_resume_after_the_last_row() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")))
            .unwrap();
        let t = db.table("t").unwrap();
        for r in ["a", "b", "c"] {
            t.put(&Put::new(r).add("f", "q", "v")).unwrap();
        }
        let mut read = ReadSpec::default();
        let (rows, more) = read_page(&db, "t", &read, 2).unwrap();
        assert_eq!((rows.len(), more), (2, true));
        read.after_row = Some(rows[1].row.clone());
        let (rows, more) = read_page(&db, "t", &read, 2).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((&rows[0].row[..], more), (&b"c"[..], false));
        assert_eq!(rows[0].cells[0].cell_type, "Put");
    }

    #[test]
    fn requests_serialise_as_the_version_one_operation_documents() {
        let json = serde_json::to_string(&AdminRequest::Compact {
            table: "t".into(),
            major: true,
        })
        .unwrap();
        assert_eq!(json, r#"{"op":"compact","table":"t","major":true}"#);
        let reply: AdminReply = serde_json::from_str(r#"{"reply":"done"}"#).unwrap();
        assert_eq!(reply, AdminReply::Done);
    }

    #[test]
    fn region_operations_in_one_process_are_refused_as_needing_a_cluster() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        db.execute(create("t", vec![family("f", &[])], &[]))
            .unwrap();
        let encoded = db.list_regions("t").unwrap()[0].info.encoded_name();
        for request in [
            AdminRequest::Move {
                region: encoded.clone(),
                server: None,
            },
            AdminRequest::Assign {
                region: encoded.clone(),
            },
            AdminRequest::Unassign { region: encoded },
        ] {
            let e = db.execute(request.clone()).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument, "{request:?}");
            assert!(e.to_string().contains("needs a cluster"), "{e}");
        }
    }

    #[test]
    fn the_balancer_switch_in_one_process_is_kept_across_a_restart_and_gates_balance() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let ran =
            |db: &Database, force: bool| match db.execute(AdminRequest::Balance { force }).unwrap()
            {
                AdminReply::Balanced { moved, ran, .. } => {
                    assert_eq!(moved, 0, "one region server: nothing to move");
                    ran
                }
                other => panic!("unexpected {other:?}"),
            };
        assert!(ran(&db, false), "the switch is on by default");
        let switch = |db: &Database, request| match db.execute(request).unwrap() {
            AdminReply::Switch { previous } => previous,
            other => panic!("unexpected {other:?}"),
        };
        assert!(switch(&db, AdminRequest::BalanceSwitch { on: false }));
        assert!(!switch(&db, AdminRequest::BalancerEnabled));
        match db.execute(AdminRequest::Balance { force: false }).unwrap() {
            AdminReply::Balanced { ran, reason, .. } => {
                assert!(!ran);
                assert!(reason.unwrap_or_default().contains("switch is off"));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(!ran(&db, true), "force ignores transitions, not the switch");
        db.close().unwrap();
        let db = Database::open(dir.path()).unwrap();
        assert!(
            !switch(&db, AdminRequest::BalancerEnabled),
            "the switch is in the catalog"
        );
        assert!(!switch(&db, AdminRequest::BalanceSwitch { on: true }));
        assert!(switch(&db, AdminRequest::BalancerEnabled));
    }

    #[test]
    fn the_normalizer_switch_starts_off_and_normalize_says_why_it_did_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let switch = |request| match db.execute(request).unwrap() {
            AdminReply::Switch { previous } => previous,
            other => panic!("unexpected {other:?}"),
        };
        assert!(!switch(AdminRequest::NormalizerEnabled), "off by default");
        match db.execute(AdminRequest::Normalize).unwrap() {
            AdminReply::Normalized(run) => {
                assert!(!run.ran);
                assert!(run.reason.unwrap_or_default().contains("switch is off"));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(!switch(AdminRequest::NormalizerSwitch { on: true }));
        assert!(switch(AdminRequest::NormalizerEnabled));
        match db.execute(AdminRequest::Normalize).unwrap() {
            AdminReply::Normalized(run) => assert!(run.ran && run.plans.is_empty(), "{run:?}"),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            serde_json::to_string(&AdminRequest::NormalizerSwitch { on: true }).unwrap(),
            r#"{"op":"normalizer_switch","on":true}"#
        );
        let json = serde_json::to_string(&db.execute(AdminRequest::Normalize).unwrap()).unwrap();
        assert_eq!(
            json,
            r#"{"reply":"normalized","ran":true,"plans":[],"failed":0}"#
        );
    }

    #[test]
    fn status_in_one_process_carries_no_cluster_and_encodes_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let AdminReply::Status(status) = db.execute(AdminRequest::Status).unwrap() else {
            panic!("not a status");
        };
        assert_eq!(status.cluster, None);
        let json = serde_json::to_string(&AdminReply::Status(status)).unwrap();
        assert!(!json.contains("cluster"), "{json}");
    }

    #[test]
    fn a_region_is_named_by_its_encoded_or_its_full_name() {
        let encoded = "0123456789abcdef0123456789ABCDEF";
        assert_eq!(
            encoded_region(encoded).unwrap(),
            encoded.to_ascii_lowercase()
        );
        let full = format!("t1,m,1700000000000.{encoded}.");
        assert_eq!(encoded_region(&full).unwrap(), encoded.to_ascii_lowercase());
        for bad in ["", "t1", "t1,m,1.xyz.", "0123"] {
            assert!(encoded_region(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_cluster_reply_names_each_servers_regions_in_full_with_load_for_this_server_only() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        db.execute(create("t", vec![family("f", &[])], &["m"]))
            .unwrap();
        let regions = db.list_regions("t").unwrap();
        let (a, b) = (
            regions[0].info.encoded_name(),
            regions[1].info.encoded_name(),
        );
        let status = ClusterStatus {
            master: "m,16000,1".into(),
            backup_masters: Vec::new(),
            servers: vec![
                crate::cluster::ServerStatus {
                    name: "rs2,16020,7".into(),
                    regions: vec![b.clone(), "f".repeat(32)],
                    region_loads: None,
                },
                crate::cluster::ServerStatus {
                    name: "rs1,16020,5".into(),
                    regions: vec![a.clone()],
                    region_loads: None,
                },
            ],
            dead_servers: vec!["rs3,16020,2".into()],
            in_transition: Vec::new(),
            procedures: vec![(4, "MoveRegion".into())],
            catalog_version: 9,
        };
        let reply = cluster_reply(status, &regions, Some("rs1,16020,5"));
        let names: Vec<&str> = reply.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["rs1,16020,5", "rs2,16020,7"]);
        assert_eq!(
            reply.servers[0].regions[0].name,
            regions[0].info.region_name()
        );
        assert!(reply.servers[0].load.is_some());
        assert!(reply.servers[1].load.is_none());
        assert_eq!(reply.servers[1].regions[0].encoded_name, b);
        assert_eq!(reply.servers[1].regions[1].encoded_name, "f".repeat(32));
        assert_eq!(reply.procedures[0].id, 4);
        assert_eq!(reply.dead_servers, ["rs3,16020,2"]);
    }

    #[test]
    fn cluster_requests_serialise_as_operation_documents() {
        let json = serde_json::to_string(&AdminRequest::Move {
            region: "abc".into(),
            server: Some("h,1,2".into()),
        })
        .unwrap();
        assert_eq!(json, r#"{"op":"move","region":"abc","server":"h,1,2"}"#);
        let moved: AdminRequest = serde_json::from_str(r#"{"op":"move","region":"abc"}"#).unwrap();
        assert!(matches!(moved, AdminRequest::Move { server: None, .. }));
        assert_eq!(
            serde_json::to_string(&AdminRequest::Balance { force: false }).unwrap(),
            r#"{"op":"balance"}"#
        );
        let forced: AdminRequest =
            serde_json::from_str(r#"{"op":"balance","force":true}"#).unwrap();
        assert!(matches!(forced, AdminRequest::Balance { force: true }));
        let reply: AdminReply = serde_json::from_str(r#"{"reply":"balanced","moved":2}"#).unwrap();
        assert_eq!(
            reply,
            AdminReply::Balanced {
                moved: 2,
                ran: true,
                reason: None
            }
        );
    }
}
