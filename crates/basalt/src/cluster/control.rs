//! The vocabulary between the cluster's roles: what the master asks of
//! region servers ([`RegionServerControl`]), what members ask of the
//! master ([`MasterCall`] over [`MasterControl`], answered with
//! [`MasterAnswer`]), and how a `Database` reaches its master in either
//! mode ([`MasterLink`]).

use std::collections::BTreeMap;
use std::fmt;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use basalt_types::{NamespaceDescriptor, Result, TableDescriptor};

use crate::locator::RegionLocator;

/// What the master asks of region servers: open or close one region as
/// the catalog now assigns it. Implemented over the network by the
/// serving crate; in tests, in-process.
pub trait RegionServerControl: Send + Sync + fmt::Debug {
    /// Asks `server` (HBase server name) to open region `region` of
    /// `table`; returns once it serves it (or why it could not).
    fn open_region(&self, server: &str, table: &str, region: u64) -> Result<()>;
    /// Asks `server` to close region `region` of `table` (flush, then stop
    /// serving); returns once closed.
    fn close_region(&self, server: &str, table: &str, region: u64) -> Result<()>;

    /// Asks `server`, which hosts the parent, for step (b) of a split
    /// (`cluster::split`): close the parent for writes and flush it, pick
    /// the split row if none was given, seed the daughters' manifests with
    /// links to the parent's files. Refused unless the parent is open there
    /// at `request.epoch`. On error nothing is seeded and the parent serves
    /// again, unless the answer was lost: the master then rolls back.
    /// Controls that cannot split refuse.
    fn prepare_split(&self, server: &str, request: &PrepareSplit) -> Result<SplitPlan> {
        Err(basalt_types::Error::invalid(format!(
            "region server control cannot split region {} on {server}",
            request.region
        )))
    }

    /// As [`RegionServerControl::prepare_split`], for a merge: both regions
    /// close for writes and flush, and the merged region is seeded.
    fn prepare_merge(&self, server: &str, request: &PrepareMerge) -> Result<()> {
        Err(basalt_types::Error::invalid(format!(
            "region server control cannot merge regions {:?} on {server}",
            request.regions
        )))
    }

    /// Asks `server` for the load of the regions it holds (HBase's region
    /// server load report), which the balancer weighs after region counts
    /// and status shows. Answers within a short bound (a paused server
    /// must not stall status). Controls that cannot report refuse: the
    /// balancer then evens counts only.
    fn region_loads(&self, server: &str) -> Result<Vec<RegionLoadReport>> {
        Err(basalt_types::Error::invalid(format!(
            "region server control cannot ask {server} for its load"
        )))
    }

    /// Asks `server`, which holds region `request.region` open at
    /// `request.epoch`, for what a snapshot records of it: with
    /// `request.flush` it flushes first; then, per family, the files its
    /// stores hold (`crate::cluster::snapshot`). Writes go on. Controls
    /// that cannot snapshot refuse.
    fn snapshot_region(
        &self,
        server: &str,
        request: &SnapshotRegionRequest,
    ) -> Result<Vec<basalt_engine::snapshot::SnapshotStore>> {
        Err(basalt_types::Error::SnapshotFailed(format!(
            "region server control cannot snapshot region {} on {server}",
            request.region
        )))
    }

    /// The sequence id region `region`, closed on `server` by the master
    /// (a move, an alter, a disable), was flushed through: no edit of it at
    /// or below that is only in `server`'s log. `None` when the control
    /// cannot say (the default). Every close records it in the catalog, so
    /// that a family an alter adds counts log edits only from above it:
    /// edits of a deleted family of the same name, still in a log that is
    /// replayed later, stay dead.
    fn closed_through(&self, server: &str, region: u64) -> Result<Option<u64>> {
        let _ = (server, region);
        Ok(None)
    }
}

/// One region's load as its server reports it to the master.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RegionLoadReport {
    /// Table name.
    pub table: String,
    /// Region id.
    pub region: u64,
    /// Reads and writes per second over the last minute.
    pub requests_per_sec: f64,
    /// Gets and scans served since it opened there.
    #[serde(default)]
    pub read_requests: u64,
    /// Row mutations applied since it opened there.
    #[serde(default)]
    pub write_requests: u64,
    /// Bytes in its memstores.
    pub memstore_bytes: u64,
    /// Its store files.
    #[serde(default)]
    pub store_files: usize,
    /// Bytes in its store files.
    pub store_file_bytes: u64,
    /// Reads per second over the last minute. The fields from here on are
    /// `None` from a server that predates them, so a reader shows them as
    /// unknown rather than as 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_requests_per_sec: Option<f64>,
    /// Writes per second over the last minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_requests_per_sec: Option<f64>,
    /// Filtered reads per second over the last minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filtered_read_requests_per_sec: Option<f64>,
    /// Reads whose filter dropped at least one row or cell, since it
    /// opened there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filtered_read_requests: Option<u64>,
    /// Bytes of cells returned by reads, since it opened there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_read: Option<u64>,
    /// Bytes of cells written, since it opened there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_written: Option<u64>,
}

/// Step (b) of a split, as the master asks it of the parent's server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrepareSplit {
    /// Table name.
    pub table: String,
    /// The parent's region id.
    pub region: u64,
    /// The region epoch the catalog says the parent is open at: a server
    /// holding another opening of it refuses (a request from a master that
    /// lost its place arriving after the parent moved).
    pub epoch: u64,
    /// The row to split at; `None`: near the middle of the parent's data.
    #[serde(default)]
    pub key: Option<Bytes>,
    /// The two daughters' region ids (the master hands them out).
    pub daughters: [u64; 2],
}

/// What the parent's server did in step (b) of a split.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitPlan {
    /// The row the second daughter starts at; `None`: the parent has no
    /// row to split at (empty, or a single row), nothing was done and the
    /// parent serves on.
    pub key: Option<Bytes>,
}

/// What the master asks of a region's server for a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRegionRequest {
    /// Table name.
    pub table: String,
    /// Region id.
    pub region: u64,
    /// The region epoch the catalog says it is open at (another opening
    /// of it refuses).
    pub epoch: u64,
    /// Flush the region first (HBase's `FLUSH` snapshot type).
    pub flush: bool,
}

/// One snapshot as listed (HBase's `SnapshotDescription`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    /// The snapshot's name.
    pub name: String,
    /// The snapshotted table.
    pub table: String,
    /// When it was taken (ms since the epoch).
    pub created_ms: i64,
    /// Its TTL in seconds (0: forever).
    pub ttl_secs: i64,
    /// HBase's type name: `FLUSH`, `SKIPFLUSH` or `DISABLED`.
    pub kind: String,
    /// Bytes of the store files it references (shared, not copied).
    pub file_bytes: u64,
    /// Store files it references.
    pub files: usize,
    /// The user who took it, when one was recorded.
    #[serde(default)]
    pub owner: Option<String>,
}

/// Step (b) of a merge, as the master asks it of the regions' server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrepareMerge {
    /// Table name.
    pub table: String,
    /// The adjacent regions merging, in key order, each with the region
    /// epoch the catalog says it is open at.
    pub regions: Vec<(u64, u64)>,
    /// The merged region's id (the master hands it out).
    pub merged: u64,
}

/// What members ask of the active master.
pub trait MasterControl: Send + Sync + fmt::Debug {
    /// Runs one call on the active master.
    fn call(&self, call: MasterCall) -> Result<MasterAnswer>;
}

/// The master as a [`crate::Database`] reaches it, whichever the mode: the
/// in-process [`crate::Master`] of `basalt serve` and the embedded library,
/// or a cluster's active master over its [`MasterControl`]
/// ([`member::MemberLink`]). The database runs every DDL and region
/// operation through [`MasterLink::call`] and reads the catalog through
/// [`MasterLink::catalog`], so none of its operations asks which mode it
/// runs in.
///
/// Contract: when [`MasterLink::call`] returns `Ok`, the routes this
/// process publishes show the call's outcome (a table created is found, a
/// split's daughters are routed to); [`MasterLink::catalog`] is at least
/// as new as the routes.
pub(crate) trait MasterLink: Send + Sync + fmt::Debug {
    /// Runs one call on the master.
    fn call(&self, call: MasterCall) -> Result<MasterAnswer>;

    /// The newest catalog this process knows (shared, not copied: status
    /// and `list_regions` read it for every table).
    fn catalog(&self) -> std::sync::Arc<crate::catalog::Catalog>;

    /// Reads the catalog again and publishes its routes, when another
    /// process writes it (a cluster member told of a new version); the
    /// in-process master publishes as it commits, so nothing to do there.
    fn refresh(&self) -> Result<()>;

    /// The database closes: the master refuses every further change.
    fn stop(&self);
}

/// A change of a table's secondary indexes ([`MasterCall::Indexes`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum IndexChange {
    /// Creates the index table and adds the index in state `Building`
    /// (every region reopens and keeps it from then on). The same
    /// definition again is accepted as is: a build being resumed.
    Add {
        /// The index; its state and creation time are the master's.
        index: basalt_types::IndexDescriptor,
    },
    /// Marks a built index `Active`: reads may use it.
    Activate {
        /// Index name.
        name: String,
    },
    /// Removes the index (every region reopens without it), then drops
    /// its table.
    Drop {
        /// Index name.
        name: String,
    },
}

/// A request to the active master (DDL and assignment).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum MasterCall {
    /// Creates a table pre-split at `splits`.
    CreateTable {
        /// Name and families.
        descriptor: TableDescriptor,
        /// Split keys (sorted, distinct, non-empty).
        #[serde(default)]
        splits: Vec<Bytes>,
        /// The user creating it, when access control is on: HBase gives a
        /// table's creator every action on it, in the same commit here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
    },
    /// Enables or disables a table.
    SetEnabled {
        /// Table name.
        table: String,
        /// Enabled after the call.
        enabled: bool,
    },
    /// Drops a disabled table.
    DropTable {
        /// Table name.
        table: String,
    },
    /// Adds, modifies or deletes families: every region reopens with the
    /// new descriptor.
    Alter {
        /// Table name.
        table: String,
        /// The changes, applied together.
        changes: Vec<crate::FamilyChange>,
    },
    /// Adds, activates or drops a secondary index (`crate::index`).
    Indexes {
        /// The data table.
        table: String,
        /// What changes.
        change: IndexChange,
    },
    /// Empties a disabled table, keeping its region boundaries.
    Truncate {
        /// Table name.
        table: String,
    },
    /// Creates a namespace.
    CreateNamespace {
        /// The namespace and its properties.
        descriptor: NamespaceDescriptor,
    },
    /// Sets and removes properties of a namespace.
    AlterNamespace {
        /// Namespace name.
        name: String,
        /// Properties to add or replace.
        #[serde(default)]
        set: BTreeMap<String, String>,
        /// Keys to remove.
        #[serde(default)]
        unset: Vec<String>,
    },
    /// Drops an empty namespace.
    DropNamespace {
        /// Namespace name.
        name: String,
    },
    /// Moves a region (by encoded name) to a server, or to one the master
    /// picks.
    Move {
        /// Encoded region name.
        region: String,
        /// HBase server name, or any server.
        #[serde(default)]
        target: Option<String>,
    },
    /// Assigns a region that is assigned nowhere.
    Assign {
        /// Encoded region name.
        region: String,
    },
    /// Closes a region and leaves it assigned nowhere.
    Unassign {
        /// Encoded region name.
        region: String,
    },
    /// Splits a region (encoded or full name) at `key`, or at a row near
    /// the middle of its data (HBase's `split 'region'[, 'key']`).
    Split {
        /// Encoded or full region name.
        region: String,
        /// The split row (the second daughter's first).
        #[serde(default)]
        key: Option<Bytes>,
    },
    /// Splits the region of `table` holding `key` there or, without a key,
    /// every region of the table with a row to split at.
    SplitTable {
        /// Table name.
        table: String,
        /// The split row.
        #[serde(default)]
        key: Option<Bytes>,
    },
    /// Merges two adjacent regions (encoded or full names) into one.
    Merge {
        /// One region.
        region_a: String,
        /// Its neighbour.
        region_b: String,
    },
    /// Evens the number of regions per live server, then their load. Does
    /// not run while the balancer switch is off, nor while regions are in
    /// transition unless `force` (HBase's `balancer 'force'`).
    Balance {
        /// Run even with regions in transition.
        #[serde(default)]
        force: bool,
    },
    /// Reads the balancer switch and, with `on`, sets it (HBase's
    /// `balance_switch`). The switch is kept in the catalog, so it
    /// survives the master: a standby that takes over reads it.
    BalancerSwitch {
        /// The new value; `None` only reads.
        #[serde(default)]
        on: Option<bool>,
    },
    /// Reads the normalizer switch and, with `on`, sets it (HBase's
    /// `normalizer_switch`). Kept in the catalog, off by default.
    NormalizerSwitch {
        /// The new value; `None` only reads.
        #[serde(default)]
        on: Option<bool>,
    },
    /// Reads HBase's split or merge switch and, with `on`, sets it
    /// (`SetSplitOrMergeEnabled`). Kept in the catalog, on by default.
    SplitOrMergeSwitch {
        /// Which switch.
        which: crate::SplitOrMerge,
        /// The new value; `None` only reads.
        #[serde(default)]
        on: Option<bool>,
    },
    /// Grants or revokes permissions (HBase's `grant` and `revoke`,
    /// `crate::access`).
    Permission {
        /// The change.
        change: crate::access::PermissionChange,
    },
    /// Runs the normalizer once now (HBase's `normalize`): merges small
    /// cold neighbours and splits oversized regions (`crate::normalizer`).
    /// Does not run while its switch is off.
    Normalize,
    /// Adds, removes, enables, disables or updates a replication peer
    /// (`crate::replication`); kept in the catalog.
    ReplicationPeer {
        /// The change.
        change: crate::replication::PeerChange,
    },
    /// Every replication peer (answered with
    /// [`MasterAnswer::ReplicationPeers`]).
    ReplicationPeers,
    /// Reads the replication peer modification switch and, with `on`,
    /// sets it (HBase 2.6's `replicationPeerModificationSwitch`). Kept in
    /// the catalog, on by default.
    ReplicationPeerModificationSwitch {
        /// The new value; `None` only reads.
        #[serde(default)]
        on: Option<bool>,
    },
    /// Servers, regions, transitions and procedures.
    Status,
    /// Takes a snapshot of a table (HBase's `snapshot`): its descriptor,
    /// its regions and the store files they hold, referenced, not copied
    /// (`docs/snapshots.md`).
    Snapshot {
        /// Table name.
        table: String,
        /// The snapshot's name.
        name: String,
        /// Record only what is in store files, without flushing first
        /// (HBase's `SKIP_FLUSH`).
        #[serde(default)]
        skip_flush: bool,
        /// Seconds after which the snapshot expires (0: never; HBase's
        /// `TTL`).
        #[serde(default)]
        ttl_secs: i64,
        /// The user taking it, when access control is on (HBase's snapshot
        /// owner, recorded in the manifest).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
        /// The client's nonce: the same request sent again (its master
        /// died with the answer) is answered as the snapshot it took.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nonce: Option<basalt_types::Nonce>,
    },
    /// The completed snapshots, those whose name matches `pattern` (a
    /// regular expression matched against the whole name) if given
    /// (answered with [`MasterAnswer::Snapshots`]).
    ListSnapshots {
        /// The pattern; `None`: every snapshot.
        #[serde(default)]
        pattern: Option<String>,
    },
    /// Deletes a snapshot; files nothing else references are deleted.
    DeleteSnapshot {
        /// The snapshot's name.
        name: String,
    },
    /// Creates table `table` from a snapshot, sharing its files (HBase's
    /// `clone_snapshot`).
    CloneSnapshot {
        /// The snapshot's name.
        name: String,
        /// The new table.
        table: String,
    },
    /// Returns the snapshot's table, which must be disabled, to exactly
    /// the snapshot's descriptor, regions and cells (HBase's
    /// `restore_snapshot`). The table stays disabled.
    RestoreSnapshot {
        /// The snapshot's name.
        name: String,
    },
    /// Reads the snapshot cleanup switch and, with `on`, sets it (HBase's
    /// `snapshot_cleanup_switch`): while on, snapshots whose TTL has
    /// passed are deleted. Kept in the catalog, on by default.
    SnapshotCleanupSwitch {
        /// The new value; `None` only reads.
        #[serde(default)]
        on: Option<bool>,
    },
    /// Runs the catalog janitor now (HBase's `catalogjanitor_run`):
    /// retired regions no serving region links to any more leave the
    /// catalog and their files are deleted. The master also runs it by
    /// itself; `compact` asks for it at once, since a compaction is what
    /// rewrites the links.
    CatalogJanitor,
}

/// What [`crate::Database::balance`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BalancerRun {
    /// The balancer ran and moved this many regions.
    Moved(usize),
    /// It did not run, and why.
    NotRun(String),
}

/// The master's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum MasterAnswer {
    /// Done.
    Done,
    /// How many regions a balancer run moved.
    Moved {
        /// Regions moved.
        regions: usize,
    },
    /// The balancer did not run, and why (the switch is off, regions are
    /// in transition).
    NotRun {
        /// Why, for the log and the shell.
        reason: String,
    },
    /// A switch's value before the call.
    Switch {
        /// The value before the call.
        previous: bool,
    },
    /// What a normalizer run did.
    Normalized(crate::normalizer::NormalizerRun),
    /// The replication peers, by id.
    ReplicationPeers {
        /// Every peer.
        peers: BTreeMap<String, crate::replication::ReplicationPeer>,
    },
    /// The cluster's state.
    Status(ClusterStatus),
    /// The completed snapshots, oldest first.
    Snapshots {
        /// Each snapshot.
        snapshots: Vec<SnapshotInfo>,
    },
}

/// The cluster as the active master sees it (`status 'detailed'`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterStatus {
    /// The active master's server name.
    pub master: String,
    /// Standby masters waiting to take over (HBase's backup masters), as
    /// the process wiring last saw them in ZooKeeper.
    #[serde(default)]
    pub backup_masters: Vec<String>,
    /// Live region servers with the regions assigned to each.
    pub servers: Vec<ServerStatus>,
    /// Servers declared dead whose recovery is not over.
    pub dead_servers: Vec<String>,
    /// Regions in transition: `(encoded name, table, state, server)`.
    pub in_transition: Vec<RegionTransition>,
    /// Procedures not finished: `(id, description)`.
    pub procedures: Vec<(u64, String)>,
    /// The catalog version the answer was read from.
    pub catalog_version: u64,
}

/// One live region server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerStatus {
    /// HBase server name.
    pub name: String,
    /// Encoded names of the regions open there.
    pub regions: Vec<String>,
    /// The load of each region it holds, as it reported it while the
    /// status was taken; `None` when it did not answer in time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_loads: Option<Vec<RegionLoadReport>>,
}

/// A region not `OPEN`, or `OPEN` nowhere.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionTransition {
    /// Encoded region name.
    pub region: String,
    /// Table name.
    pub table: String,
    /// HBase's state name (`OPENING`, `CLOSING`, `OFFLINE`, ...).
    pub state: String,
    /// The server it is assigned to, if any.
    pub server: Option<String>,
}

/// HBase's server name `host,port,startcode`, split. In a Basalt cluster
/// the start code of a region server is its log id (the epoch it claimed
/// on the shared storage), so the master knows which log to fence and
/// replay when the server dies.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerName {
    /// Host clients connect to.
    pub host: String,
    /// Its RPC port.
    pub port: u16,
    /// Start code (the log id).
    pub start_code: u64,
}

impl ServerName {
    /// Parses `host,port,startcode`.
    pub fn parse(text: &str) -> Result<ServerName> {
        let bad = || {
            basalt_types::Error::invalid(format!("server name {text:?} is not host,port,startcode"))
        };
        let mut parts = text.rsplitn(3, ',');
        let start_code = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let port = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let host = parts.next().filter(|h| !h.is_empty()).ok_or_else(bad)?;
        Ok(ServerName {
            host: host.to_string(),
            port,
            start_code,
        })
    }

    /// `host:port`, where its RPC port listens.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for ServerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{},{}", self.host, self.port, self.start_code)
    }
}

/// The load of every region this process serves itself, for
/// [`RegionServerControl::region_loads`]'s serving side.
pub(crate) fn region_load_reports(locator: &RegionLocator) -> Vec<RegionLoadReport> {
    let mut reports = Vec::new();
    for (table, location) in locator.tables() {
        for route in location.routes() {
            if let crate::locator::RegionRoute::Local(region) = route {
                let load = region.load();
                let stores = region.store_stats();
                reports.push(RegionLoadReport {
                    table: table.clone(),
                    region: region.info().id,
                    requests_per_sec: load.read_requests_per_sec + load.write_requests_per_sec,
                    read_requests: load.read_requests,
                    write_requests: load.write_requests,
                    memstore_bytes: load.memstore_bytes,
                    store_files: stores.iter().map(|(_, s)| s.files).sum(),
                    store_file_bytes: stores.iter().map(|(_, s)| s.file_bytes).sum(),
                    read_requests_per_sec: Some(load.read_requests_per_sec),
                    write_requests_per_sec: Some(load.write_requests_per_sec),
                    filtered_read_requests_per_sec: Some(load.filtered_read_requests_per_sec),
                    filtered_read_requests: Some(load.filtered_read_requests),
                    bytes_read: Some(load.bytes_read),
                    bytes_written: Some(load.bytes_written),
                });
            }
        }
    }
    reports
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_name_parses_from_and_prints_as_host_port_startcode() {
        let name = ServerName::parse("rs1.example,16020,42").unwrap();
        assert_eq!(name.host, "rs1.example");
        assert_eq!(name.port, 16020);
        assert_eq!(name.start_code, 42);
        assert_eq!(name.to_string(), "rs1.example,16020,42");
        assert_eq!(name.address(), "rs1.example:16020");
        for bad in ["", "a,b,c", "host,1", ",1,2", "host,70000,1"] {
            assert!(ServerName::parse(bad).is_err(), "{bad}");
        }
    }
}
