//! Snapshots, clones and restores on the master (`docs/snapshots.md`):
//! one implementation for one process and a cluster, reached through
//! [`MasterCall`](super::MasterCall) like every DDL.
//!
//! **Snapshot** (under the master's lock, so no split, merge or DDL
//! changes the table's regions meanwhile; writes go on):
//! 1. a pending marker `snapshots/<id>-<name>.pending` is published: from
//!    now on no store file of the table is deleted (a compaction may be
//!    replacing a file the snapshot is about to list);
//! 2. each serving region's files are listed: for an enabled table by the
//!    server holding it (flushed first unless `skip_flush`), for a
//!    disabled one from its stores' manifests on the storage;
//! 3. the manifest is published whole as `snapshots/<id>-<name>.snapshot`
//!    (create-if-absent): that is the commit point, so a half snapshot is
//!    never listed;
//! 4. the marker goes. A crash before step 4 leaves a marker, which the
//!    next master removes at start (the snapshot was not taken).
//!
//! **Clone** seeds the new table's regions with links naming the
//! snapshot's files (the split mechanism's links, with the table they
//! live in), publishes a *hold* for them, and only then commits the table;
//! **restore** does the same into the snapshot's own (disabled) table,
//! replacing its regions with new ones and deleting the old regions'
//! files but those the snapshot (or any other) references. A hold outlives
//! the snapshot: the janitor releases it once no store of its table links
//! to any of its files (compactions rewrite links into the table's own
//! files).
//!
//! **Delete** removes the manifest, then deletes each of its files that no
//! other snapshot or hold references and no store still lists.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use basalt_engine::layout::{self, SnapshotEntry};
use basalt_engine::manifest::{ManifestLog, StoreManifest};
use basalt_engine::snapshot::{
    check_snapshot_name, read_manifest, write_manifest, PendingSnapshot, SnapshotFile,
    SnapshotKind, SnapshotManifest, SnapshotRegion, SnapshotStore,
};
use basalt_engine::Store;
use basalt_types::{ColumnFamilyDescriptor, Error, Result, TableDescriptor};

use super::control::{SnapshotInfo, SnapshotRegionRequest};
use super::master::{ClusterMaster, State};
use crate::catalog::{new_region_entry, Procedure, RegionState};
use crate::region_server::RegionServer;

/// One entry of the snapshot directory.
struct Listed {
    path: PathBuf,
    entry: SnapshotEntry,
}

impl ClusterMaster {
    fn snapshot_entries(&self) -> Result<Vec<Listed>> {
        Ok(self
            .files
            .list(&layout::snapshot_dir(&self.root))?
            .into_iter()
            .filter_map(|path| layout::snapshot_entry_of(&path).map(|entry| Listed { path, entry }))
            .collect())
    }

    fn read_snapshot(&self, path: &Path) -> Result<SnapshotManifest> {
        read_manifest(
            self.files.as_ref(),
            path,
            self.snapshot_manifest_max_bytes(),
        )
    }

    /// The completed snapshot `name`: its path and manifest.
    fn find_snapshot(&self, name: &str) -> Result<(PathBuf, SnapshotManifest)> {
        for listed in self.snapshot_entries()? {
            if matches!(&listed.entry, SnapshotEntry::Snapshot(_, n) if n == name) {
                let manifest = self.read_snapshot(&listed.path)?;
                return Ok((listed.path, manifest));
            }
        }
        Err(Error::SnapshotNotFound(name.to_string()))
    }

    /// A number above every entry's and the last one handed out: entry
    /// paths are never reused (a process caches entries by path).
    fn next_snapshot_id(&self, listed: &[Listed]) -> u64 {
        let highest = listed
            .iter()
            .map(|l| match &l.entry {
                SnapshotEntry::Snapshot(id, _) | SnapshotEntry::Pending(id, _) => *id,
                SnapshotEntry::Hold(id) => *id,
            })
            .max()
            .unwrap_or(0);
        let now = u64::try_from(self.clock.now_millis()).unwrap_or(0);
        let mut last = self.last_snapshot_id.lock();
        *last = now.max(highest.max(*last).saturating_add(1));
        *last
    }

    /// A master that starts removes the markers of snapshots a crashed one
    /// left half taken: they were never completed, and a marker keeps
    /// every file of its table.
    pub(super) fn remove_abandoned_snapshots(&self) -> Result<()> {
        for listed in self.snapshot_entries()? {
            if let SnapshotEntry::Pending(_, name) = &listed.entry {
                tracing::warn!(snapshot = %name, "removing a snapshot a crash left half taken");
                self.files.delete(&listed.path)?;
            }
        }
        Ok(())
    }

    /// Takes snapshot `name` of `table` (the module docs' steps), recording
    /// `owner` as the user who took it.
    pub(super) fn take_snapshot(
        &self,
        table: &str,
        name: &str,
        skip_flush: bool,
        ttl_secs: i64,
        owner: Option<String>,
    ) -> Result<()> {
        check_snapshot_name(name)?;
        let state = self.state.lock();
        self.check_running()?;
        self.expire_snapshots(&state);
        let listed = self.snapshot_entries()?;
        if listed.iter().any(|l| {
            matches!(&l.entry, SnapshotEntry::Snapshot(_, n) | SnapshotEntry::Pending(_, n) if n == name)
        }) {
            return Err(Error::SnapshotExists(name.to_string()));
        }
        if table.starts_with("hbase:") {
            return Err(Error::invalid(format!(
                "system table snapshots are not allowed: {table}"
            )));
        }
        let entry = state.catalog.tables.get(table).ok_or_else(|| {
            Error::SnapshotFailed(format!(
                "Table '{table}' doesn't exist, can't take snapshot."
            ))
        })?;
        let id = self.next_snapshot_id(&listed);
        let pending = layout::pending_snapshot_path(&self.root, id, name);
        let marker = serde_json::to_vec(&PendingSnapshot {
            table: table.to_string(),
        })
        .map_err(|e| Error::invalid(format!("pending snapshot marker: {e}")))?;
        self.files.publish(&pending, &marker)?;
        let kind = match (entry.enabled, skip_flush) {
            (false, _) => SnapshotKind::Disabled,
            (true, false) => SnapshotKind::Flush,
            (true, true) => SnapshotKind::Skipflush,
        };
        let taken = (|| -> Result<SnapshotManifest> {
            let mut regions = Vec::with_capacity(entry.regions.len());
            for region in &entry.regions {
                let stores = if entry.enabled {
                    match (region.state, &region.server) {
                        (RegionState::Open, Some(server)) => self.servers.snapshot_region(
                            server,
                            &SnapshotRegionRequest {
                                table: table.to_string(),
                                region: region.id,
                                epoch: region.epoch,
                                flush: !skip_flush,
                            },
                        )?,
                        _ => {
                            return Err(Error::SnapshotFailed(format!(
                            "region {} of table {table} is {} and not open: try the snapshot again",
                            region.id,
                            super::master::state_name(region.state)
                        )))
                        }
                    }
                } else {
                    self.stored_region_files(table, &entry.descriptor, region.id)?
                };
                regions.push(SnapshotRegion {
                    id: region.id,
                    start_key: region.start_key.clone(),
                    end_key: region.end_key.clone(),
                    stores,
                });
            }
            let manifest = SnapshotManifest {
                name: name.to_string(),
                table: table.to_string(),
                created_ms: self.clock.now_millis(),
                ttl_secs: ttl_secs.max(0),
                kind,
                descriptor: entry.descriptor.clone(),
                regions,
                held_for: None,
                lease_until_ms: None,
                owner,
            };
            write_manifest(
                self.files.as_ref(),
                &layout::snapshot_path(&self.root, id, name),
                &manifest,
            )?;
            Ok(manifest)
        })();
        if let Err(e) = self.files.delete(&pending) {
            // Left, it keeps the table's files until the next master start.
            tracing::warn!(path = %pending.display(), error = %e, "could not remove a pending snapshot marker");
        }
        let manifest = taken.map_err(|e| match e {
            e @ (Error::SnapshotFailed(_) | Error::Fenced { .. } | Error::Closed(_)) => e,
            e => Error::SnapshotFailed(format!("snapshot '{name}' of table {table} failed: {e}")),
        })?;
        tracing::info!(
            snapshot = name,
            table,
            regions = manifest.regions.len(),
            files = manifest.files().count(),
            bytes = manifest.file_bytes(),
            "snapshot taken"
        );
        Ok(())
    }

    /// The files of a closed region's stores, from their newest manifests
    /// on the storage (a disabled table's regions are flushed and closed).
    fn stored_region_files(
        &self,
        table: &str,
        descriptor: &TableDescriptor,
        region: u64,
    ) -> Result<Vec<SnapshotStore>> {
        let dir = layout::region_dir(&self.root, table, region);
        let mut stores = Vec::new();
        for family in descriptor.families() {
            let manifest = self.newest_manifest(&layout::store_dir(&dir, family.name()))?;
            stores.push(SnapshotStore {
                family: family.name().to_string(),
                files: manifest
                    .files
                    .iter()
                    .map(|f| SnapshotFile::from_entry(table, region, f))
                    .collect(),
            });
        }
        Ok(stores)
    }

    fn newest_manifest(&self, store_dir: &Path) -> Result<StoreManifest> {
        Ok(ManifestLog::new(Arc::clone(&self.files), store_dir)
            .read_newest()?
            .unwrap_or_default())
    }

    /// Every completed snapshot whose name matches `pattern` (the whole
    /// name), oldest first. A manifest that cannot be read is left out
    /// and logged, as HBase skips a corrupted snapshot.
    pub(super) fn list_snapshots(&self, pattern: Option<&str>) -> Result<Vec<SnapshotInfo>> {
        let pattern = pattern
            .map(|p| {
                regex::Regex::new(&format!("^(?:{p})$"))
                    .map_err(|e| Error::invalid(format!("bad snapshot name pattern '{p}': {e}")))
            })
            .transpose()?;
        let state = self.state.lock();
        self.check_running()?;
        self.expire_snapshots(&state);
        let mut out = Vec::new();
        for listed in self.snapshot_entries()? {
            let SnapshotEntry::Snapshot(_, name) = &listed.entry else {
                continue;
            };
            if pattern.as_ref().is_some_and(|p| !p.is_match(name)) {
                continue;
            }
            match self.read_snapshot(&listed.path) {
                Ok(m) => out.push(SnapshotInfo {
                    name: m.name.clone(),
                    table: m.table.clone(),
                    created_ms: m.created_ms,
                    ttl_secs: m.ttl_secs,
                    kind: m.kind.name().to_string(),
                    file_bytes: m.file_bytes(),
                    files: m.files().count(),
                    owner: m.owner.clone(),
                }),
                Err(e) => {
                    tracing::warn!(path = %listed.path.display(), error = %e, "skipping a snapshot whose manifest cannot be read")
                }
            }
        }
        Ok(out)
    }

    /// Deletes snapshot `name` and the files only it referenced.
    pub(super) fn delete_snapshot(&self, name: &str) -> Result<()> {
        let state = self.state.lock();
        self.check_running()?;
        let (path, manifest) = self.find_snapshot(name)?;
        self.files.delete(&path)?;
        self.release_files(&state, &manifest);
        tracing::info!(snapshot = name, "snapshot deleted");
        Ok(())
    }

    /// After `released` (a snapshot or hold) was deleted: deletes each of
    /// its files that no store lists as its own any more. A file some
    /// other snapshot or hold references is kept by the file store's check
    /// (`RetainingFileStore`); a file whose store cannot be read is kept.
    fn release_files(&self, state: &State, released: &SnapshotManifest) {
        let mut own_files: HashMap<PathBuf, Option<HashSet<u64>>> = HashMap::new();
        for (family, file) in released.files() {
            let in_catalog = state.catalog.tables.get(&file.table).is_some_and(|t| {
                t.regions
                    .iter()
                    .chain(&t.retired)
                    .any(|r| r.id == file.region_id)
            }) || state.catalog.procedures.values().any(|p| match p {
                Procedure::SplitRegion {
                    table, daughters, ..
                } => table == &file.table && daughters.contains(&file.region_id),
                Procedure::MergeRegions { table, merged, .. } => {
                    table == &file.table && *merged == file.region_id
                }
                _ => false,
            });
            let path = file.path(&self.root, family);
            if in_catalog {
                let store_dir = layout::store_dir(
                    &layout::region_dir(&self.root, &file.table, file.region_id),
                    family,
                );
                let own = own_files.entry(store_dir.clone()).or_insert_with(|| {
                    match self.newest_manifest(&store_dir) {
                        Ok(m) => Some(
                            m.files
                                .iter()
                                .filter(|f| f.link.is_none())
                                .map(|f| f.id)
                                .collect(),
                        ),
                        Err(e) => {
                            tracing::warn!(dir = %store_dir.display(), error = %e, "a store could not be read: the files a released snapshot referenced in it are kept");
                            None
                        }
                    }
                });
                match own {
                    Some(ids) if !ids.contains(&file.file_id) => {}
                    _ => continue,
                }
            }
            if let Err(e) = self.files.delete(&path) {
                tracing::warn!(path = %path.display(), error = %e, "could not delete a store file a released snapshot referenced");
            }
        }
    }

    /// Deletes the snapshots whose TTL has passed, while the cleanup
    /// switch is on (HBase's snapshot cleaner chore; Basalt also runs it
    /// before each snapshot operation, so an expired snapshot is gone by
    /// the next one). Failures are logged and retried next time.
    pub(super) fn expire_snapshots(&self, state: &State) {
        if state.catalog.snapshot_cleanup_off {
            return;
        }
        let now = self.clock.now_millis();
        let listed = match self.snapshot_entries() {
            Ok(listed) => listed,
            Err(e) => {
                tracing::warn!(error = %e, "snapshot cleanup: the snapshots could not be listed");
                return;
            }
        };
        for listed in listed {
            if !matches!(listed.entry, SnapshotEntry::Snapshot(..)) {
                continue;
            }
            let Ok(manifest) = self.read_snapshot(&listed.path) else {
                continue;
            };
            if manifest.expired(now) {
                match self.files.delete(&listed.path) {
                    Ok(()) => {
                        tracing::info!(snapshot = %manifest.name, ttl_secs = manifest.ttl_secs, "snapshot expired and deleted");
                        self.release_files(state, &manifest);
                    }
                    Err(e) => {
                        tracing::warn!(snapshot = %manifest.name, error = %e, "could not delete an expired snapshot")
                    }
                }
            }
        }
    }

    /// Reads the snapshot cleanup switch and, with `on`, commits its new
    /// value; answers the value before.
    pub(super) fn snapshot_cleanup_switch(&self, on: Option<bool>) -> Result<bool> {
        let mut state = self.state.lock();
        self.check_running()?;
        let previous = !state.catalog.snapshot_cleanup_off;
        if let Some(on) = on {
            if on != previous {
                let mut updated = state.catalog.clone();
                updated.snapshot_cleanup_off = !on;
                self.commit(&mut state, updated)?;
                tracing::info!(on, "snapshot cleanup switch");
            }
        }
        Ok(previous)
    }

    /// A snapshot that may be cloned or restored: present and not expired.
    fn usable_snapshot(&self, state: &State, name: &str) -> Result<SnapshotManifest> {
        self.expire_snapshots(state);
        let (_, manifest) = self.find_snapshot(name)?;
        if manifest.expired(self.clock.now_millis()) {
            return Err(Error::SnapshotExpired(name.to_string()));
        }
        Ok(manifest)
    }

    /// Seeds each new region's stores with links to the files of the
    /// snapshot region at the same place, and publishes a hold of those
    /// files for `table`. On error, what was written is removed.
    fn seed_from_snapshot(
        &self,
        snapshot: &SnapshotManifest,
        table: &str,
        new_regions: &[u64],
    ) -> Result<PathBuf> {
        let seeded = (|| -> Result<PathBuf> {
            for (id, region) in new_regions.iter().zip(&snapshot.regions) {
                let dir = layout::region_dir(&self.root, table, *id);
                for store in &region.stores {
                    let through = store
                        .files
                        .iter()
                        .map(|f| f.max_sequence)
                        .max()
                        .unwrap_or(0);
                    Store::seed(
                        &self.files,
                        &layout::store_dir(&dir, &store.family),
                        store.files.iter().map(SnapshotFile::link).collect(),
                        through,
                        None,
                    )?;
                }
            }
            let listed = self.snapshot_entries()?;
            let hold = layout::hold_path(&self.root, self.next_snapshot_id(&listed));
            let mut held = snapshot.clone();
            held.held_for = Some(table.to_string());
            write_manifest(self.files.as_ref(), &hold, &held)?;
            Ok(hold)
        })();
        if seeded.is_err() {
            for id in new_regions {
                let dir = layout::region_dir(&self.root, table, *id);
                if let Err(e) = self.files.delete_prefix(&dir) {
                    tracing::warn!(dir = %dir.display(), error = %e, "could not remove a seeded region; the janitor does");
                }
            }
        }
        seeded
    }

    /// Creates table `table` from snapshot `name`, sharing its files.
    pub(super) fn clone_snapshot(&self, name: &str, table: &str) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        if state.catalog.tables.contains_key(table) {
            return Err(Error::TableExists(table.to_string()));
        }
        let snapshot = self.usable_snapshot(&state, name)?;
        let mut descriptor = TableDescriptor::new(table);
        for family in snapshot.descriptor.families() {
            descriptor = descriptor.family(ColumnFamilyDescriptor::clone(family));
        }
        let splits: Vec<Bytes> = snapshot
            .regions
            .iter()
            .skip(1)
            .map(|r| r.start_key.clone())
            .collect();
        let mut updated = state.catalog.clone();
        let (descriptor, entries) =
            updated.add_table(descriptor, &splits, self.clock.now_millis())?;
        let ids: Vec<u64> = entries.iter().map(|e| e.id).collect();
        let hold = self.seed_from_snapshot(&snapshot, table, &ids)?;
        let procedure = updated.next_procedure_id();
        updated.procedures.insert(
            procedure,
            Procedure::CreateTable {
                table: descriptor.name().to_string(),
            },
        );
        if let Err(e) = self.commit(&mut state, updated) {
            // Not committed: the seeded directories are orphans the janitor
            // removes; the hold goes now.
            if let Err(e) = self.files.delete(&hold) {
                tracing::warn!(path = %hold.display(), error = %e, "could not remove the hold of a failed clone");
            }
            return Err(e);
        }
        tracing::info!(snapshot = name, table, "snapshot cloned");
        self.reconcile(&mut state)?;
        self.require_settled(&state, table)
    }

    /// Returns the snapshot's table (disabled) to the snapshot.
    pub(super) fn restore_snapshot(&self, name: &str) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        let snapshot = self.usable_snapshot(&state, name)?;
        let table = snapshot.table.clone();
        let entry = Self::closed_table(&state, &table)?;
        let old: Vec<u64> = entry
            .regions
            .iter()
            .chain(&entry.retired)
            .map(|r| r.id)
            .collect();
        let mut updated = state.catalog.clone();
        let now = self.clock.now_millis();
        let fresh: Vec<_> = snapshot
            .regions
            .iter()
            .map(|r| {
                let mut region = new_region_entry(
                    &mut updated,
                    &snapshot.descriptor,
                    r.start_key.clone(),
                    r.end_key.clone(),
                    now,
                );
                region.state = RegionState::Closed;
                region
            })
            .collect();
        let ids: Vec<u64> = fresh.iter().map(|r| r.id).collect();
        if let Some(t) = updated.tables.get_mut(&table) {
            t.descriptor = snapshot.descriptor.clone();
            t.regions = fresh;
            t.retired.clear();
        }
        let hold = self.seed_from_snapshot(&snapshot, &table, &ids)?;
        if let Err(e) = self.commit(&mut state, updated) {
            if let Err(e) = self.files.delete(&hold) {
                tracing::warn!(path = %hold.display(), error = %e, "could not remove the hold of a failed restore");
            }
            return Err(e);
        }
        // Committed: the old regions are gone from the catalog. Their files
        // go, but those a snapshot or hold references.
        for id in old {
            let dir = layout::region_dir(&self.root, &table, id);
            if let Err(e) = self.files.delete_prefix(&dir) {
                tracing::warn!(dir = %dir.display(), error = %e, "could not delete the files of a region replaced by a restore; the janitor does");
            }
        }
        self.release_holds(&state);
        tracing::info!(snapshot = name, table = %table, "snapshot restored");
        Ok(())
    }

    /// Releases the holds whose table is gone or no longer links to any of
    /// their files (each store's newest manifest read; a store that cannot
    /// be read keeps the hold), and the leased holds whose lease passed.
    /// Part of the catalog janitor.
    pub(super) fn release_holds(&self, state: &State) {
        let listed = match self.snapshot_entries() {
            Ok(listed) => listed,
            Err(e) => {
                tracing::debug!(error = %e, "janitor: snapshot holds could not be listed");
                return;
            }
        };
        let mut linked_by_table: HashMap<String, Option<HashSet<PathBuf>>> = HashMap::new();
        for listed in listed {
            if !matches!(listed.entry, SnapshotEntry::Hold(_)) {
                continue;
            }
            let hold = match self.read_snapshot(&listed.path) {
                Ok(hold) => hold,
                Err(e) => {
                    tracing::warn!(path = %listed.path.display(), error = %e, "janitor: a hold cannot be read and stays");
                    continue;
                }
            };
            if let Some(lease_until_ms) = hold.lease_until_ms {
                // A leased hold (an export's) keeps its files until the
                // lease passes, whatever links them.
                if self.clock.now_millis() <= lease_until_ms {
                    continue;
                }
                match self.files.delete(&listed.path) {
                    Ok(()) => {
                        tracing::info!(snapshot = %hold.name, "janitor: released a hold whose lease passed");
                        self.release_files(state, &hold);
                    }
                    Err(e) => {
                        tracing::warn!(path = %listed.path.display(), error = %e, "janitor: could not release a hold")
                    }
                }
                continue;
            }
            let Some(table) = hold.held_for.clone() else {
                continue;
            };
            let linked = linked_by_table
                .entry(table.clone())
                .or_insert_with(|| self.table_links(state, &table));
            let Some(linked) = linked else {
                continue;
            };
            if hold.paths(&self.root).iter().any(|p| linked.contains(p)) {
                continue;
            }
            match self.files.delete(&listed.path) {
                Ok(()) => {
                    tracing::info!(table = %table, snapshot = %hold.name, "janitor: released the hold of a table that no longer links to its files");
                    self.release_files(state, &hold);
                }
                Err(e) => {
                    tracing::warn!(path = %listed.path.display(), error = %e, "janitor: could not release a hold")
                }
            }
        }
    }

    /// The files `table`'s stores (serving and retired regions) link to
    /// by table-naming links; empty for a table that is gone; `None` when
    /// a store could not be read.
    fn table_links(&self, state: &State, table: &str) -> Option<HashSet<PathBuf>> {
        let mut linked = HashSet::new();
        let Some(entry) = state.catalog.tables.get(table) else {
            return Some(linked);
        };
        let mut regions: Vec<u64> = entry
            .regions
            .iter()
            .chain(&entry.retired)
            .map(|r| r.id)
            .collect();
        for p in state.catalog.procedures.values() {
            match p {
                Procedure::SplitRegion {
                    table: t,
                    daughters,
                    ..
                } if t == table => regions.extend(daughters.iter().copied()),
                Procedure::MergeRegions {
                    table: t, merged, ..
                } if t == table => regions.push(*merged),
                _ => {}
            }
        }
        for region in regions {
            let dir = layout::region_dir(&self.root, table, region);
            for family in entry.descriptor.families() {
                let store_dir = layout::store_dir(&dir, family.name());
                let manifest = match self.newest_manifest(&store_dir) {
                    Ok(m) => m,
                    Err(e) => {
                        tracing::debug!(dir = %store_dir.display(), error = %e, "janitor: a store could not be read; holds stay");
                        return None;
                    }
                };
                for file in &manifest.files {
                    if let Some(link) = file.link.as_ref().filter(|l| l.table.is_some()) {
                        match link.path(&store_dir) {
                            Ok(path) => {
                                linked.insert(path);
                            }
                            Err(_) => return None,
                        }
                    }
                }
            }
        }
        Some(linked)
    }
}

/// The serving side of [`RegionServerControl::snapshot_region`](super::RegionServerControl::snapshot_region):
/// region `request.region`, open here at `request.epoch`, flushed if asked,
/// then its files per family.
pub(crate) fn snapshot_region(
    server: &RegionServer,
    request: &SnapshotRegionRequest,
) -> Result<Vec<SnapshotStore>> {
    let region = server.region(request.region).ok_or_else(|| {
        Error::NotServingRegion(format!(
            "region {} is not open on this server",
            request.region
        ))
    })?;
    if let Some(epoch) = server.region_epoch(request.region) {
        if epoch != request.epoch {
            return Err(Error::NotServingRegion(format!(
                "region {} is open here at epoch {epoch}, not {}",
                request.region, request.epoch
            )));
        }
    }
    Ok(region
        .snapshot_files(request.flush)?
        .into_iter()
        .map(|(family, entries)| SnapshotStore {
            files: entries
                .iter()
                .map(|e| SnapshotFile::from_entry(&request.table, request.region, e))
                .collect(),
            family,
        })
        .collect())
}
