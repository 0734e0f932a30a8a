//! The catalog: every table's descriptor, state and regions, kept in
//! `catalog.json` in the data directory.
//!
//! Like HBase's `hbase:meta`, it records every region of every table with
//! its state: the serving (`OPEN`) regions, which cover the table's key
//! space without gap or overlap, and the regions retired by a split or a
//! merge (`SPLIT`, `MERGED`), kept until no serving region links to their
//! files any more. A split or merge commits by writing the catalog, so a
//! crash leaves either the old regions serving or the new ones, never both
//! and never neither.
//!
//! The catalog is stored through the [`FileStore`] as write-once numbered
//! versions (`catalog/<version>.json`, see `basalt_engine::layout`): an
//! update creates the next version (create-if-absent, so two writers can
//! never both commit the same version), then deletes the one before. A
//! crash leaves the old version or the new one, never a mix; loading takes
//! the newest and deletes older leftovers. Catalogs of formats 1 and 2 were
//! one `catalog.json` file: it is read when no version exists, and deleted
//! once the first version is written. See `docs/catalog-format.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use basalt_engine::fence::Fence;
use basalt_engine::fs::FileStore;
use basalt_engine::layout;
use basalt_engine::manifest::is_already_exists;
use basalt_engine::FamilyState;
use basalt_types::descriptor::validate_family_name;
use basalt_types::descriptor::{namespace_of, validate_namespace_name, RESERVED_NAMESPACES};
use basalt_types::{ColumnFamilyDescriptor, Error, NamespaceDescriptor, Result, TableDescriptor};

use crate::access::Permissions;
use crate::region_server::RegionSpec;
use crate::replication::{PeerChange, ReplicationPeer};

/// Version of the catalog layout. Version 2 added region states and
/// retired regions; version 3 stores numbered write-once versions through
/// the file store instead of one `catalog.json` replaced by rename.
/// Versions 1 and 2 are read (and rewritten as 3).
pub const CATALOG_FORMAT_VERSION: u32 = 3;

/// HBase's `MasterSwitchType`: which of the two switches that gate the
/// splits and merges clients ask for ([`crate::Database::split_or_merge_switch`]); kept in the
/// catalog ([`Catalog::split_off`], [`Catalog::merge_off`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitOrMerge {
    /// Splits ([`crate::AdminRequest::Split`]).
    Split,
    /// Merges ([`crate::AdminRequest::Merge`]).
    Merge,
}

impl SplitOrMerge {
    /// `split` or `merge`, as messages name it.
    pub fn name(self) -> &'static str {
        match self {
            SplitOrMerge::Split => "split",
            SplitOrMerge::Merge => "merge",
        }
    }
}

/// The persistent catalog.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Catalog {
    /// Layout version, checked on load.
    pub format_version: u32,
    /// The last region id handed out (ids are creation times in ms, bumped
    /// to stay unique).
    pub last_region_id: u64,
    /// Tables by name.
    pub tables: BTreeMap<String, TableEntry>,
    /// Namespaces created by users, with their properties. The reserved
    /// `default` and `hbase` always exist and are not stored. Catalogs
    /// written before namespaces were kept have none: loading adds the
    /// namespace of every table they hold.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub namespaces: BTreeMap<String, NamespaceEntry>,
    /// The epoch of the process that stored this version, on shared
    /// storage (0: a local data directory). A process at a lower epoch
    /// that finds it is fenced (`docs/object-storage.md`, "Fencing").
    #[serde(default, skip_serializing_if = "is_zero")]
    pub epoch: u64,
    /// Cluster mode: the last region epoch the master handed out. Every
    /// opening of a region takes the next one, so a region's epochs only
    /// grow across servers (`docs/cluster.md`, "Fencing"). 0 outside a
    /// cluster.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub last_region_epoch: u64,
    /// Cluster mode: servers that died and whose recovery is not over
    /// (their log still holds edits of regions not yet reopened), by
    /// HBase server name (`host,port,startcode`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dead_servers: BTreeMap<String, DeadServer>,
    /// Cluster mode: procedures a master began and a successor must
    /// finish, by id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub procedures: BTreeMap<u64, Procedure>,
    /// The last procedure id handed out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub last_procedure_id: u64,
    /// Cluster mode: the balancer switch is off (`balance_switch false`):
    /// no periodic balancing, and `balancer` runs only when forced. Kept
    /// here rather than in process memory so a master that takes over
    /// honours what the user set (HBase keeps it in a znode for the same
    /// reason).
    #[serde(default, skip_serializing_if = "is_false")]
    pub balancer_off: bool,
    /// The normalizer switch is on (`normalizer_switch true`): off by
    /// default, as HBase's is, so regions merge or split by size only when
    /// the user asked. Kept here for the balancer switch's reason.
    #[serde(default, skip_serializing_if = "is_false")]
    pub normalizer_on: bool,
    /// HBase's split switch is off (`SetSplitOrMergeEnabled`): the splits
    /// clients ask for are refused. Kept here for the balancer switch's
    /// reason, and so that every process of a cluster refuses alike.
    #[serde(default, skip_serializing_if = "is_false")]
    pub split_off: bool,
    /// HBase's merge switch is off: the merges clients ask for are refused.
    #[serde(default, skip_serializing_if = "is_false")]
    pub merge_off: bool,
    /// Every grant of HBase's access control (`crate::access`; HBase keeps
    /// them in `hbase:acl`). Kept here so a grant or revoke carries the
    /// catalog's fencing and reaches every process of a cluster with the
    /// catalog's next version.
    #[serde(default, skip_serializing_if = "Permissions::is_empty")]
    pub permissions: Permissions,
    /// Replication peers by id (HBase's `add_peer`), with their state and
    /// configuration (`crate::replication`). Kept here, as the switches
    /// are, so every process of a cluster and a master that takes over
    /// answer the same. Basalt ships no edits to them yet.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replication_peers: BTreeMap<String, ReplicationPeer>,
    /// HBase 2.6's replication peer modification switch is off: peers can
    /// be listed but not added, removed, enabled, disabled or updated. On
    /// by default, as HBase's.
    #[serde(default, skip_serializing_if = "is_false")]
    pub replication_peer_modification_off: bool,
    /// The snapshot cleanup switch is off (`snapshot_cleanup_switch
    /// false`): snapshots whose TTL has passed are kept. On by default, as
    /// HBase's; kept here for the balancer switch's reason.
    #[serde(default, skip_serializing_if = "is_false")]
    pub snapshot_cleanup_off: bool,
    /// The stored version this catalog was loaded from or last stored as
    /// (0: never stored). Not part of the document: the file name says it.
    #[serde(skip)]
    pub version: u64,
}

/// A region server that died, while its regions are being recovered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadServer {
    /// Its write-ahead log (the server's start code): fenced first, then
    /// replayed by every server that reopens one of its regions, then
    /// deleted once none of them needs it.
    pub log_id: u64,
    /// When the master declared it dead (ms).
    pub since_ms: i64,
    /// Whether its log has been fenced (a dead server's regions are
    /// reopened only after that).
    #[serde(default)]
    pub log_fenced: bool,
}

/// A multi-step change the master persists before its first step, so a
/// master that takes over finishes it (HBase's procedures). The region
/// states say how far each got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Procedure {
    /// A table was created: its regions are being assigned.
    CreateTable {
        /// Table name.
        table: String,
    },
    /// A table is being enabled (regions assigned) or disabled (closed).
    SetTableState {
        /// Table name.
        table: String,
        /// The state being reached.
        enabled: bool,
    },
    /// A region server died: its log is fenced and its regions reopened
    /// elsewhere from it.
    ServerCrash {
        /// HBase server name of the dead server.
        server: String,
    },
    /// A region moves (move, balancer, unassign + assign).
    MoveRegion {
        /// Table name.
        table: String,
        /// Region id.
        region: u64,
        /// Where it goes (`None`: wherever the master chooses; for an
        /// unassign, nowhere).
        target: Option<String>,
    },
    /// Cluster mode: a region splits in two (`cluster::split`). Until the
    /// catalog retires the parent, a master that takes over rolls it back;
    /// after, the daughters' assignment finishes it.
    SplitRegion {
        /// Table name.
        table: String,
        /// The region splitting.
        parent: u64,
        /// The row asked for (`None`: the hosting server picks one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<Bytes>,
        /// The daughters' region ids, handed out before the first step so
        /// that a rollback knows which directories to delete.
        daughters: Vec<u64>,
    },
    /// Cluster mode: adjacent regions merge into one (`cluster::split`),
    /// rolled back or finished as [`Procedure::SplitRegion`].
    MergeRegions {
        /// Table name.
        table: String,
        /// The regions merging, in key order.
        regions: Vec<u64>,
        /// The merged region's id.
        merged: u64,
    },
    /// A table's families changed: every region reopens with the new
    /// descriptor (those opened at an epoch above `epoch_floor` have), the
    /// deleted families' files go first.
    AlterTable {
        /// Table name.
        table: String,
        /// Families deleted: their store directories are removed before
        /// each region reopens.
        #[serde(default)]
        deleted: Vec<String>,
        /// The last region epoch handed out before the change.
        epoch_floor: u64,
    },
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// One user-created namespace in the catalog.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceEntry {
    /// Free-form properties (HBase's namespace configuration).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, String>,
}

/// One table in the catalog.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableEntry {
    /// Name and families.
    pub descriptor: TableDescriptor,
    /// Enabled tables serve reads and writes.
    pub enabled: bool,
    /// Serving regions in key order, covering the whole key space.
    pub regions: Vec<RegionEntry>,
    /// Regions replaced by a split or merge whose files serving regions
    /// still link to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retired: Vec<RegionEntry>,
}

/// A region's state, as `hbase:meta` records it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RegionState {
    /// Serving its key range.
    #[default]
    Open,
    /// Replaced by two daughters.
    Split,
    /// Merged with its neighbour into a new region.
    Merged,
    /// Cluster mode: assigned to no server (a new table's regions before
    /// assignment, a dead server's before recovery, an unassigned one).
    Offline,
    /// Cluster mode: its server was told to open it.
    Opening,
    /// Cluster mode: its server was told to close it (flush, then stop).
    Closing,
    /// Cluster mode: closed cleanly (a disabled table's regions); all its
    /// edits are in store files.
    Closed,
    /// Cluster mode: no server could open it; the master tries again.
    FailedOpen,
}

/// One region in the catalog.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RegionEntry {
    /// Region id (WAL records carry it).
    pub id: u64,
    /// First row, inclusive; empty for the table start.
    pub start_key: Bytes,
    /// End row, exclusive; empty for the table end.
    pub end_key: Bytes,
    /// Per family, the sequence id from which WAL edits belong to it.
    pub family_first_sequence: BTreeMap<String, u64>,
    /// Serving or retired.
    #[serde(default)]
    pub state: RegionState,
    /// For a retired region: the regions that took its rows over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub successors: Vec<u64>,
    /// Cluster mode: the server it is assigned to (HBase server name,
    /// `host,port,startcode`), while `Opening`, `Open` or `Closing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Cluster mode: the epoch of its latest opening, which its store
    /// manifests record (a server holding an older opening is fenced).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub epoch: u64,
    /// Cluster mode: logs of dead servers that may hold edits of this
    /// region not yet in its store files; the server opening it replays
    /// them first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recover_from: Vec<u64>,
    /// Cluster mode: closed by an operator (`unassign`): it stays `CLOSED`
    /// until `assign` (or `move`), as in HBase.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unassigned: bool,
}

/// Which files hold the catalog of a data set.
#[derive(Debug)]
pub(crate) struct CatalogFiles {
    /// The catalog: the newest version and its number, or the format 1/2
    /// `catalog.json` (version 0) when no version exists; `None` for a
    /// data set without a catalog yet.
    pub(crate) newest: Option<(u64, PathBuf)>,
    /// What the newest version superseded and a crash left behind (older
    /// versions, the format 1/2 file): never read, deleted by a load.
    pub(crate) superseded: Vec<PathBuf>,
}

impl CatalogFiles {
    /// Lists the catalog's files of the data set at `root`.
    pub(crate) fn find(files: &dyn FileStore, root: &Path) -> Result<CatalogFiles> {
        let mut versions: Vec<(u64, PathBuf)> = files
            .list(&layout::catalog_dir(root))?
            .into_iter()
            .filter_map(|p| layout::catalog_version_of(&p).map(|v| (v, p)))
            .collect();
        versions.sort_unstable_by_key(|(v, _)| *v);
        let legacy = layout::legacy_catalog_path(root);
        Ok(match versions.pop() {
            Some(newest) => CatalogFiles {
                newest: Some(newest),
                // Deleting a missing file succeeds: no need to ask first.
                superseded: versions
                    .into_iter()
                    .map(|(_, p)| p)
                    .chain(std::iter::once(legacy))
                    .collect(),
            },
            None if files.exists(&legacy)? => CatalogFiles {
                newest: Some((0, legacy)),
                superseded: Vec::new(),
            },
            None => CatalogFiles {
                newest: None,
                superseded: Vec::new(),
            },
        })
    }
}

/// The file holding the catalog of the data set at `root` (the newest
/// committed version), for tools and tests that read it; `None` before the
/// first table is created.
pub fn catalog_file(files: &dyn FileStore, root: &Path) -> Result<Option<PathBuf>> {
    Ok(CatalogFiles::find(files, root)?
        .newest
        .map(|(_, path)| path))
}

/// Advances `last` (the last region epoch handed out) above `floor` and
/// returns the new epoch.
pub(crate) fn next_epoch(last: &mut u64, floor: u64) -> u64 {
    *last = (*last).max(floor) + 1;
    *last
}

impl RegionEntry {
    /// The region's identity and key range, as the engine names it.
    pub fn info(&self, table: &str) -> basalt_engine::RegionInfo {
        basalt_engine::RegionInfo {
            id: self.id,
            table: table.to_string(),
            start_key: self.start_key.clone(),
            end_key: self.end_key.clone(),
        }
    }
}

impl TableEntry {
    /// The serving regions chain from -inf to +inf with no gap or overlap
    /// (the invariant every catalog change keeps).
    pub fn regions_chain(&self) -> bool {
        covers_key_space(
            self.regions
                .iter()
                .map(|r| (&r.start_key[..], &r.end_key[..])),
        )
    }
}

/// The invariant of a table's serving regions, given their `(start, end)`
/// keys in order: from -inf (empty start) to +inf (empty end), each ending
/// where the next starts, so no row is in a gap or in two regions. The
/// catalog keeps it in every version; the locator in every change of its
/// region lists.
pub(crate) fn covers_key_space<'a>(mut ranges: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> bool {
    let Some((first_start, mut end)) = ranges.next() else {
        return false;
    };
    for (start, next_end) in ranges {
        if start != end {
            return false;
        }
        end = next_end;
    }
    first_start.is_empty() && end.is_empty()
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog {
            format_version: CATALOG_FORMAT_VERSION,
            last_region_id: 0,
            tables: BTreeMap::new(),
            namespaces: BTreeMap::new(),
            epoch: 0,
            last_region_epoch: 0,
            dead_servers: BTreeMap::new(),
            procedures: BTreeMap::new(),
            last_procedure_id: 0,
            balancer_off: false,
            snapshot_cleanup_off: false,
            normalizer_on: false,
            split_off: false,
            merge_off: false,
            permissions: Permissions::default(),
            replication_peers: BTreeMap::new(),
            replication_peer_modification_off: false,
            version: 0,
        }
    }
}

impl Catalog {
    /// Loads the newest catalog of the data set at `root`, or an empty one
    /// if there is none yet; deletes versions a crash left behind it.
    pub fn load(files: &dyn FileStore, root: &Path) -> Result<Catalog> {
        let found = CatalogFiles::find(files, root)?;
        let Some((version, path)) = found.newest else {
            return Ok(Catalog::default());
        };
        let catalog = Catalog::parse(&files.read_all(&path)?, &path, version)?;
        // Only the newest version is ever read; older ones are leftovers of
        // a crash between a store and its clean-up.
        for old in found.superseded {
            files.delete(&old)?;
        }
        Ok(catalog)
    }

    /// Reads the newest catalog without deleting anything: for cluster
    /// members, which never write it (only the active master does). A
    /// version deleted between the listing and the read was superseded by
    /// a newer one: list again.
    pub fn read_newest(files: &dyn FileStore, root: &Path) -> Result<Catalog> {
        let mut attempts = 0;
        loop {
            let found = CatalogFiles::find(files, root)?;
            let Some((version, path)) = found.newest else {
                return Ok(Catalog::default());
            };
            match files.read_all(&path) {
                Ok(bytes) => return Catalog::parse(&bytes, &path, version),
                Err(e) if attempts < 8 && !files.exists(&path).unwrap_or(true) => {
                    attempts += 1;
                    tracing::debug!(path = %path.display(), error = %e, "catalog version superseded while read; listing again");
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Hands out the next region epoch (cluster mode): above every one
    /// before and above `floor` (the master's own epoch, which is above
    /// every epoch a manifest written before the cluster can carry).
    pub fn next_region_epoch(&mut self, floor: u64) -> u64 {
        next_epoch(&mut self.last_region_epoch, floor)
    }

    /// Adds a table pre-split at `split_keys` (sorted, distinct,
    /// non-empty: `n` keys make `n + 1` regions), its regions `Offline`:
    /// the caller opens them (one process) or assigns them (a cluster).
    /// Refuses an invalid descriptor, an existing table and a namespace
    /// nobody created (as HBase does).
    pub fn add_table(
        &mut self,
        mut descriptor: TableDescriptor,
        split_keys: &[Bytes],
        now_millis: i64,
    ) -> Result<(TableDescriptor, Vec<RegionEntry>)> {
        descriptor.validate()?;
        crate::split::validate_split_keys(split_keys)?;
        let name = descriptor.name().to_string();
        if self.tables.contains_key(&name) {
            return Err(Error::TableExists(name));
        }
        let namespace = namespace_of(&name);
        check_not_system_table(&name, namespace)?;
        if !self.has_namespace(namespace) {
            return Err(Error::NamespaceNotFound(namespace.to_string()));
        }
        let starts = std::iter::once(Bytes::new()).chain(split_keys.iter().cloned());
        let ends = split_keys
            .iter()
            .cloned()
            .chain(std::iter::once(Bytes::new()));
        let entries: Vec<RegionEntry> = starts
            .zip(ends)
            .map(|(start, end)| {
                let mut entry = new_region_entry(self, &descriptor, start, end, now_millis);
                entry.state = RegionState::Offline;
                entry
            })
            .collect();
        self.tables.insert(
            name,
            TableEntry {
                descriptor: descriptor.clone(),
                enabled: true,
                regions: entries.clone(),
                retired: Vec::new(),
            },
        );
        Ok((descriptor, entries))
    }

    /// Adds a namespace a user created, with its properties.
    pub fn add_namespace(&mut self, descriptor: NamespaceDescriptor) -> Result<()> {
        validate_namespace_name(&descriptor.name)?;
        if self.has_namespace(&descriptor.name) {
            return Err(Error::NamespaceExists(descriptor.name));
        }
        self.namespaces.insert(
            descriptor.name,
            NamespaceEntry {
                properties: descriptor.properties,
            },
        );
        Ok(())
    }

    /// Sets the properties in `set` and removes the keys in `unset` of a
    /// namespace a user created.
    pub fn alter_namespace(
        &mut self,
        name: &str,
        set: BTreeMap<String, String>,
        unset: &[String],
    ) -> Result<()> {
        self.user_namespace(name, "modified")?;
        let entry = self.namespaces.entry(name.to_string()).or_default();
        entry.properties.extend(set);
        for key in unset {
            entry.properties.remove(key);
        }
        Ok(())
    }

    /// Adds, removes, enables, disables or updates a replication peer
    /// with HBase's checks (`crate::replication`), refused while the
    /// modification switch is off.
    pub fn change_replication_peer(&mut self, change: PeerChange) -> Result<()> {
        change.apply(
            &mut self.replication_peers,
            !self.replication_peer_modification_off,
        )
    }

    /// The table and id of a region named by its encoded name or its full
    /// name (both of which `move`, `split` and `merge_region` accept).
    pub fn region_by_name(&self, region_name: &str) -> Result<(String, u64)> {
        for (name, table) in &self.tables {
            for region in &table.regions {
                let info = region.info(name);
                if info.encoded_name() == region_name
                    || info.region_name()[..] == *region_name.as_bytes()
                {
                    return Ok((name.clone(), region.id));
                }
            }
        }
        Err(Error::invalid(format!("unknown region {region_name}")))
    }

    /// Removes an empty namespace a user created.
    pub fn remove_namespace(&mut self, name: &str) -> Result<()> {
        self.user_namespace(name, "removed")?;
        let tables = self
            .tables
            .keys()
            .filter(|t| namespace_of(t) == name)
            .count();
        if tables > 0 {
            return Err(Error::Constraint(format!(
                "Only empty namespaces can be removed. Namespace {name} has {tables} tables"
            )));
        }
        self.namespaces.remove(name);
        // HBase drops a namespace's grants with it; a namespace of the
        // same name created later starts with none.
        self.permissions.forget_namespace(name);
        Ok(())
    }

    /// Every namespace, the reserved ones included, in name order.
    pub fn namespace_list(&self) -> Vec<NamespaceDescriptor> {
        let mut all: BTreeMap<String, BTreeMap<String, String>> = RESERVED_NAMESPACES
            .iter()
            .map(|n| (n.to_string(), BTreeMap::new()))
            .collect();
        for (name, entry) in &self.namespaces {
            all.insert(name.clone(), entry.properties.clone());
        }
        all.into_iter()
            .map(|(name, properties)| NamespaceDescriptor { name, properties })
            .collect()
    }

    /// One namespace and its properties.
    pub fn namespace(&self, name: &str) -> Result<NamespaceDescriptor> {
        if !self.has_namespace(name) {
            return Err(Error::NamespaceNotFound(name.to_string()));
        }
        Ok(NamespaceDescriptor {
            name: name.to_string(),
            properties: self
                .namespaces
                .get(name)
                .map(|e| e.properties.clone())
                .unwrap_or_default(),
        })
    }

    /// The tables of a namespace, in name order (full names, `ns:t`).
    pub fn namespace_tables(&self, name: &str) -> Result<Vec<String>> {
        if !self.has_namespace(name) {
            return Err(Error::NamespaceNotFound(name.to_string()));
        }
        Ok(self
            .tables
            .keys()
            .filter(|t| namespace_of(t) == name)
            .cloned()
            .collect())
    }

    /// Checks that `name` is a namespace a user created: a reserved one
    /// cannot be `what` (modified, removed), an unknown one is not found.
    fn user_namespace(&self, name: &str, what: &str) -> Result<()> {
        if RESERVED_NAMESPACES.contains(&name) {
            return Err(Error::Constraint(format!(
                "Reserved namespace {name} cannot be {what}"
            )));
        }
        if !self.has_namespace(name) {
            return Err(Error::NamespaceNotFound(name.to_string()));
        }
        Ok(())
    }

    /// Finds a serving region by id: its table's name and the entry.
    pub fn region(&self, id: u64) -> Option<(&str, &TableEntry, &RegionEntry)> {
        self.tables.iter().find_map(|(name, table)| {
            table
                .regions
                .iter()
                .find(|r| r.id == id)
                .map(|r| (name.as_str(), table, r))
        })
    }

    /// Hands out the next procedure id.
    pub fn next_procedure_id(&mut self) -> u64 {
        self.last_procedure_id += 1;
        self.last_procedure_id
    }

    pub(crate) fn parse(text: &[u8], path: &Path, version: u64) -> Result<Catalog> {
        let catalog: Catalog = serde_json::from_slice(text).map_err(|e| Error::Corruption {
            path: path.to_path_buf(),
            offset: 0,
            message: format!("catalog does not parse: {e}"),
        })?;
        if !(1..=CATALOG_FORMAT_VERSION).contains(&catalog.format_version) {
            return Err(Error::Corruption {
                path: path.to_path_buf(),
                offset: 0,
                message: format!(
                    "catalog format version {} is not supported (expected {})",
                    catalog.format_version, CATALOG_FORMAT_VERSION
                ),
            });
        }
        // A catalog that parses can still break the invariant every change
        // keeps (damage, a hand edit): serving it would leave rows no
        // region holds, or two regions holding the same rows.
        if let Some((name, _)) = catalog.tables.iter().find(|(_, t)| !t.regions_chain()) {
            return Err(Error::Corruption {
                path: path.to_path_buf(),
                offset: 0,
                message: format!(
                    "the regions of table {name} do not cover its key space without gap or overlap"
                ),
            });
        }
        let mut catalog = Catalog {
            format_version: CATALOG_FORMAT_VERSION,
            version,
            ..catalog
        };
        // Tables named into a namespace before namespaces were kept: their
        // namespace exists (it was implied by the table).
        let implied: Vec<String> = catalog
            .tables
            .keys()
            .map(|t| namespace_of(t).to_string())
            .filter(|ns| !RESERVED_NAMESPACES.contains(&ns.as_str()))
            .collect();
        for ns in implied {
            catalog.namespaces.entry(ns).or_default();
        }
        Ok(catalog)
    }

    /// Commits this catalog as the next version of the data set at `root`,
    /// durably; the version it replaces is deleted afterwards. On success
    /// `self.version` is the new version.
    pub fn store(&mut self, files: &dyn FileStore, root: &Path) -> Result<()> {
        debug_assert!(
            self.tables.values().all(TableEntry::regions_chain),
            "every table's serving regions must chain from -inf to +inf"
        );
        let next = self.version + 1;
        let path = layout::catalog_version_path(root, next);
        let text = serde_json::to_vec_pretty(&*self)
            .map_err(|e| Error::invalid(format!("catalog does not serialize: {e}")))?;
        let mut writer = files.create(&path)?;
        writer.write_all(&text)?;
        // The commit point: once published, this version is the catalog.
        writer.finish()?;
        let previous = self.version;
        self.version = next;
        let stale = if previous == 0 {
            layout::legacy_catalog_path(root)
        } else {
            layout::catalog_version_path(root, previous)
        };
        // A failed clean-up is harmless: the next load deletes it.
        if let Err(e) = files.delete(&stale) {
            tracing::warn!(path = %stale.display(), error = %e, "could not delete a superseded catalog version");
        }
        Ok(())
    }

    /// [`Catalog::store`] on shared storage, where `fence` says this
    /// process's epoch: the version records it, and losing the
    /// create-if-absent race for the next version to a higher epoch trips
    /// the fence. Without a fence, plain `store`.
    ///
    /// Fencing invariant C1: a process stores a catalog version only as
    /// the successor of the version it holds; a newer owner stored that
    /// successor itself at open (`fence_catalog`), so a stale
    /// process's DDL can never be published after a takeover.
    pub fn store_fenced(
        &mut self,
        files: &dyn FileStore,
        root: &Path,
        fence: Option<&Fence>,
    ) -> Result<()> {
        let Some(fence) = fence else {
            return self.store(files, root);
        };
        fence.check()?;
        self.epoch = fence.epoch();
        match self.store(files, root) {
            Ok(()) => {
                // Invariant C2: a version created in a slot a newer writer
                // had already used and deleted (this process's catalog was
                // older than the newest by more than one version) is not
                // the catalog: readers take the newest, which existed
                // before this one was created. Such a writer is stale: its
                // change must not be reported done.
                let newest = CatalogFiles::find(files, root)?.newest;
                match newest {
                    Some((version, _)) if version > self.version => {
                        let ours = layout::catalog_version_path(root, self.version);
                        if let Err(e) = files.delete(&ours) {
                            tracing::warn!(path = %ours.display(), error = %e, "could not delete a stale catalog version");
                        }
                        let newer = Catalog::read_newest(files, root).map_or(0, |c| c.epoch);
                        Err(fence.trip(
                            newer,
                            format!(
                                "catalog version {version} exists above the version {} this process stored",
                                self.version
                            ),
                        ))
                    }
                    _ => Ok(()),
                }
            }
            Err(e @ Error::Io { .. }) if is_already_exists(&e) => {
                let newer = Catalog::load(files, root).map_or(0, |c| c.epoch);
                if newer > fence.epoch() {
                    Err(fence.trip(
                        newer,
                        format!(
                            "catalog version {} was stored at epoch {newer}",
                            self.version + 1
                        ),
                    ))
                } else {
                    Err(e)
                }
            }
            Err(e) => Err(e),
        }
    }

    /// True when the namespace exists: reserved, or created.
    pub fn has_namespace(&self, name: &str) -> bool {
        RESERVED_NAMESPACES.contains(&name) || self.namespaces.contains_key(name)
    }

    /// A new unique region id: the current time in ms unless that was used.
    pub fn next_region_id(&mut self, now_millis: i64) -> u64 {
        let candidate = u64::try_from(now_millis).unwrap_or(0);
        self.last_region_id = candidate.max(self.last_region_id + 1);
        self.last_region_id
    }
}

/// The tables HBase keeps in its `hbase` namespace. Basalt serves
/// `hbase:meta` from the catalog itself; a user table of the same name would
/// be listed twice and shadow it, so creating any of these answers
/// `TableExistsException`, as HBase does for a table that exists.
pub const SYSTEM_TABLES: [&str; 8] = [
    "hbase:meta",
    "hbase:namespace",
    "hbase:acl",
    "hbase:labels",
    "hbase:quota",
    "hbase:rsgroup",
    "hbase:replication",
    "hbase:slowlog",
];

/// Refuses a user table in the system namespace: HBase's own tables answer
/// `TableExistsException`, any other `hbase:*` name a constraint error, so
/// no gateway can shadow or impersonate a system table.
fn check_not_system_table(name: &str, namespace: &str) -> Result<()> {
    if SYSTEM_TABLES.contains(&name) {
        return Err(Error::TableExists(name.to_string()));
    }
    if namespace == basalt_types::descriptor::SYSTEM_NAMESPACE {
        return Err(Error::Constraint(format!(
            "table {name} is in the reserved namespace {namespace}, \
             which holds only system tables"
        )));
    }
    Ok(())
}

// ---- what DDL computes from the catalog ----

/// A change to one column family, for [`Database::alter_table`](crate::Database::alter_table).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FamilyChange {
    /// Adds a family.
    Add(ColumnFamilyDescriptor),
    /// Replaces the options of an existing family, keeping its data.
    Modify(ColumnFamilyDescriptor),
    /// Deletes a family and all of its data.
    Delete(String),
}

/// `descriptor` of table `name` with `changes` applied, validated: an
/// added family must be new, a modified or deleted one must exist.
pub(crate) fn altered_descriptor(
    name: &str,
    mut descriptor: TableDescriptor,
    changes: &[FamilyChange],
) -> Result<TableDescriptor> {
    for change in changes {
        match change {
            FamilyChange::Add(f) => {
                if descriptor.get_family(f.name().as_bytes()).is_some() {
                    return Err(Error::invalid(format!(
                        "column family {} already exists in table {name}",
                        f.name()
                    )));
                }
                descriptor.upsert_family(f.clone());
            }
            FamilyChange::Modify(f) => {
                if descriptor.get_family(f.name().as_bytes()).is_none() {
                    return Err(no_such_family(name, f.name()));
                }
                descriptor.upsert_family(f.clone());
            }
            FamilyChange::Delete(f) => {
                validate_family_name(f.as_bytes())?;
                if let Some(index) = descriptor.indexes().iter().find(|i| {
                    i.read_columns()
                        .iter()
                        .any(|(family, _)| family == f.as_bytes())
                }) {
                    return Err(Error::invalid(format!(
                        "column family {f} of table {name} is read by index '{}'; drop the index first",
                        index.name
                    )));
                }
                if !descriptor.remove_family(f) {
                    return Err(no_such_family(name, f));
                }
            }
        }
    }
    descriptor.validate()?;
    Ok(descriptor)
}

fn no_such_family(table: &str, family: &str) -> Error {
    Error::NoSuchFamily {
        table: table.to_string(),
        family: family.to_string(),
    }
}

pub(crate) fn new_region_entry(
    catalog: &mut Catalog,
    descriptor: &TableDescriptor,
    start_key: Bytes,
    end_key: Bytes,
    now: i64,
) -> RegionEntry {
    RegionEntry {
        id: catalog.next_region_id(now),
        start_key,
        end_key,
        family_first_sequence: descriptor
            .families()
            .iter()
            .map(|f| (f.name().to_string(), 1))
            .collect(),
        state: RegionState::Open,
        successors: Vec::new(),
        server: None,
        epoch: 0,
        recover_from: Vec::new(),
        unassigned: false,
    }
}

/// What the region server needs to open the catalog's region `entry`.
pub(crate) fn region_spec(
    table: &str,
    descriptor: &TableDescriptor,
    entry: &RegionEntry,
) -> RegionSpec {
    RegionSpec {
        info: entry.info(table),
        families: descriptor
            .families()
            .iter()
            .map(|f| FamilyState {
                descriptor: f.clone(),
                first_sequence: entry
                    .family_first_sequence
                    .get(f.name())
                    .copied()
                    .unwrap_or(1),
            })
            .collect(),
        indexes: descriptor.indexes().to_vec(),
    }
}

/// Fencing at open, for the catalog (step 3 of the protocol in
/// `docs/object-storage.md`): stores the loaded catalog again as the next
/// version, recording this process's epoch, so that a stale process's next
/// DDL collides with it. Losing that race means a stale process changed
/// the catalog after it was loaded here: the start fails (with the
/// collision's error) rather than serve regions of an outdated catalog;
/// starting again succeeds. A catalog stored at a higher epoch means a
/// newer owner exists: this process is fenced.
pub(crate) fn fence_catalog(
    catalog: &mut Catalog,
    files: &dyn FileStore,
    root: &Path,
    fence: &basalt_engine::fence::Fence,
) -> Result<()> {
    if catalog.epoch > fence.epoch() {
        return Err(fence.trip(
            catalog.epoch,
            format!("the catalog was stored at epoch {}", catalog.epoch),
        ));
    }
    if catalog.epoch == fence.epoch() {
        return Ok(());
    }
    let mut fenced = catalog.clone();
    fenced.store_fenced(files, root, Some(fence))?;
    *catalog = fenced;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt_engine::fs::{LocalFileStore, MemFileStore};
    use basalt_types::ColumnFamilyDescriptor;

    #[test]
    fn round_trips_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::default();
        let id = c.next_region_id(1000);
        c.tables.insert(
            "t".into(),
            TableEntry {
                descriptor: TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")),
                enabled: true,
                regions: vec![
                    RegionEntry {
                        id,
                        start_key: Bytes::new(),
                        end_key: Bytes::from_static(b"\x00\xff"),
                        family_first_sequence: BTreeMap::from([("f".into(), 1)]),
                        state: RegionState::Open,
                        successors: Vec::new(),
                        ..RegionEntry::default()
                    },
                    RegionEntry {
                        id: id + 2,
                        start_key: Bytes::from_static(b"\x00\xff"),
                        end_key: Bytes::new(),
                        family_first_sequence: BTreeMap::from([("f".into(), 1)]),
                        state: RegionState::Open,
                        successors: Vec::new(),
                        ..RegionEntry::default()
                    },
                ],
                retired: vec![RegionEntry {
                    id: id + 1,
                    start_key: Bytes::new(),
                    end_key: Bytes::new(),
                    family_first_sequence: BTreeMap::new(),
                    state: RegionState::Split,
                    successors: vec![id],
                    ..RegionEntry::default()
                }],
            },
        );
        let files = LocalFileStore::new();
        c.store(&files, dir.path()).unwrap();
        let back = Catalog::load(&files, dir.path()).unwrap();
        assert_eq!(back.version, 1);
        assert_eq!(
            back.tables["t"].regions[0].end_key,
            Bytes::from_static(b"\x00\xff")
        );
        assert_eq!(back.last_region_id, 1000);
        assert_eq!(back.tables["t"].retired[0].state, RegionState::Split);
        assert_eq!(back.tables["t"].retired[0].successors, vec![id]);
    }

    #[test]
    fn namespaces_round_trip_and_tables_imply_theirs_in_older_catalogs() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::default();
        c.namespaces.insert(
            "empty_ns".into(),
            NamespaceEntry {
                properties: BTreeMap::from([("k".into(), "v".into())]),
            },
        );
        let files = LocalFileStore::new();
        c.store(&files, dir.path()).unwrap();
        let back = Catalog::load(&files, dir.path()).unwrap();
        assert_eq!(back.namespaces["empty_ns"].properties["k"], "v");
        assert!(back.has_namespace("default") && back.has_namespace("hbase"));
        assert!(!back.has_namespace("other"));

        // A catalog written before namespaces were kept names a table in
        // `legacy`: the namespace exists after loading.
        let old = r#"{"format_version": 3, "last_region_id": 5, "tables": {"legacy:t": {
            "descriptor": {"name": "legacy:t", "families": []}, "enabled": true,
            "regions": [{"id": 5, "start_key": [], "end_key": [],
                         "family_first_sequence": {}}]}}}"#;
        let parsed = Catalog::parse(old.as_bytes(), Path::new("c"), 1).unwrap();
        assert!(parsed.has_namespace("legacy"));
        assert!(parsed.namespaces["legacy"].properties.is_empty());
    }

    #[test]
    fn system_tables_and_the_system_namespace_cannot_be_created_by_users() {
        let mut c = Catalog::default();
        let table =
            |name: &str| TableDescriptor::new(name).family(ColumnFamilyDescriptor::new("f"));
        assert!(matches!(
            c.add_table(table("hbase:meta"), &[], 1),
            Err(Error::TableExists(name)) if name == "hbase:meta"
        ));
        assert!(matches!(
            c.add_table(table("hbase:namespace"), &[], 1),
            Err(Error::TableExists(_))
        ));
        assert!(matches!(
            c.add_table(table("hbase:mine"), &[], 1),
            Err(Error::Constraint(message)) if message.contains("reserved namespace hbase")
        ));
        assert!(matches!(
            c.add_namespace(NamespaceDescriptor {
                name: "hbase".into(),
                properties: BTreeMap::new(),
            }),
            Err(Error::NamespaceExists(_))
        ));
        assert!(c.tables.is_empty());
        // A user table whose qualifier merely looks like a system one is fine.
        assert!(c.add_table(table("meta"), &[], 1).is_ok());
    }

    #[test]
    fn reads_version_one_catalogs() {
        let dir = tempfile::tempdir().unwrap();
        let v1 = r#"{"format_version": 1, "last_region_id": 5, "tables": {"t": {
            "descriptor": {"name": "t", "families": []}, "enabled": true,
            "regions": [{"id": 5, "start_key": [], "end_key": [],
                         "family_first_sequence": {}}]}}}"#;
        std::fs::write(dir.path().join("catalog.json"), v1).unwrap();
        let files = LocalFileStore::new();
        let mut c = Catalog::load(&files, dir.path()).unwrap();
        assert_eq!(c.format_version, CATALOG_FORMAT_VERSION);
        assert_eq!(c.tables["t"].regions[0].state, RegionState::Open);
        assert!(c.tables["t"].retired.is_empty());
        // The first store supersedes the old single file.
        c.store(&files, dir.path()).unwrap();
        assert!(!dir.path().join("catalog.json").exists());
        let back = Catalog::load(&files, dir.path()).unwrap();
        assert_eq!(back.tables["t"].regions[0].id, 5);
    }

    #[test]
    fn region_ids_stay_unique_within_one_millisecond() {
        let mut c = Catalog::default();
        assert_eq!(c.next_region_id(5), 5);
        assert_eq!(c.next_region_id(5), 6);
        assert_eq!(c.next_region_id(3), 7);
    }

    #[test]
    fn damaged_catalog_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("catalog.json"), b"{ not json").unwrap();
        let err = Catalog::load(&LocalFileStore::new(), dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("catalog.json"), "{err}");
    }

    #[test]
    fn a_catalog_whose_regions_leave_a_gap_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let gap = r#"{"format_version": 2, "last_region_id": 6, "tables": {"t": {
            "descriptor": {"name": "t", "families": []}, "enabled": true,
            "regions": [{"id": 5, "start_key": [], "end_key": [109],
                         "family_first_sequence": {}},
                        {"id": 6, "start_key": [110], "end_key": [],
                         "family_first_sequence": {}}]}}}"#;
        std::fs::write(dir.path().join("catalog.json"), gap).unwrap();
        let err = Catalog::load(&LocalFileStore::new(), dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("do not cover its key space"), "{err}");
    }

    #[test]
    fn each_store_is_a_new_version_and_the_old_one_goes() {
        let files = MemFileStore::new();
        let root = Path::new("/db");
        let mut c = Catalog::default();
        for expected in 1..=3 {
            c.next_region_id(expected);
            c.store(&files, root).unwrap();
            assert_eq!(c.version, expected as u64);
        }
        assert_eq!(
            files.list(&layout::catalog_dir(root)).unwrap(),
            vec![layout::catalog_version_path(root, 3)]
        );
        assert_eq!(Catalog::load(&files, root).unwrap().last_region_id, 3);
    }

    #[test]
    fn a_stale_writer_cannot_commit_a_version_that_exists() {
        let files = MemFileStore::new();
        let root = Path::new("/db");
        let mut first = Catalog::default();
        let mut second = first.clone();
        first.store(&files, root).unwrap();
        assert!(second.store(&files, root).is_err());
        assert_eq!(second.version, 0, "a failed store keeps the old version");
    }

    #[test]
    fn loading_deletes_versions_older_than_the_newest() {
        let files = MemFileStore::new();
        let root = Path::new("/db");
        let mut c = Catalog::default();
        c.store(&files, root).unwrap();
        // A crash between publishing version 2 and deleting version 1.
        let mut w = files
            .create(&layout::catalog_version_path(root, 2))
            .unwrap();
        c.last_region_id = 99;
        w.write_all(&serde_json::to_vec(&c).unwrap()).unwrap();
        w.finish().unwrap();
        let loaded = Catalog::load(&files, root).unwrap();
        assert_eq!((loaded.version, loaded.last_region_id), (2, 99));
        assert_eq!(files.list(&layout::catalog_dir(root)).unwrap().len(), 1);
    }
}
