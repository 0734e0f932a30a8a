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
//! 4. the marker goes.
//!
//! The marker records the request, so the snapshot is a procedure: a
//! region that does not serve fails one attempt, and the master tries
//! again with its lock let go (the region can be reassigned) until
//! `snapshot_timeout`; a master that starts completes the markers its
//! predecessor left; a request sent again with the same nonce is answered
//! as the snapshot taken (`ClusterMaster::take_snapshot`).
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
    check_snapshot_name, read_manifest, write_manifest, PendingRequest, PendingSnapshot,
    SnapshotFile, SnapshotKind, SnapshotManifest, SnapshotRegion, SnapshotStore,
};
use basalt_engine::Store;
use basalt_types::index::index_table_name;
use basalt_types::{ColumnFamilyDescriptor, Error, IndexState, Nonce, Result, TableDescriptor};

use super::control::{SnapshotInfo, SnapshotRegionRequest};
use super::master::{ClusterMaster, State};
use crate::catalog::{new_region_entry, Procedure, RegionState};
use crate::region_server::RegionServer;

/// A snapshot being taken: its marker and what it completes.
struct Taking {
    marker: PathBuf,
    id: u64,
    name: String,
    table: String,
    request: PendingRequest,
    /// When this master began driving it (ms): the request's time for a
    /// snapshot asked of it, the takeover's for one a master before it
    /// left half taken. `snapshot_timeout` counts from here: the time the
    /// cluster had no master is no attempt's fault (a marker from long
    /// ago would otherwise be given up at the first failed attempt).
    started_ms: i64,
}

/// Between two attempts of a snapshot whose regions did not all serve.
const SNAPSHOT_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(250);

/// HBase's answer for a snapshot of a table that does not exist.
fn table_gone(table: &str) -> Error {
    Error::SnapshotFailed(format!(
        "Table '{table}' doesn't exist, can't take snapshot."
    ))
}

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

    /// A master that starts takes over the snapshots a master before it
    /// left half taken: a marker recording its request is completed
    /// ([`ClusterMaster::drive_snapshot`], on a thread of its own, so the
    /// regions it needs can be assigned meanwhile); a marker without one
    /// (an earlier version's, or an export's) is removed, as it keeps every
    /// file of its table.
    pub(super) fn take_over_snapshots(self: &Arc<Self>) -> Result<()> {
        for listed in self.snapshot_entries()? {
            let SnapshotEntry::Pending(id, name) = &listed.entry else {
                continue;
            };
            let pending = match self.read_pending(&listed.path) {
                Ok(pending) => pending,
                Err(e) => {
                    tracing::warn!(path = %listed.path.display(), error = %e, "removing an unreadable pending snapshot marker");
                    self.files.delete(&listed.path)?;
                    continue;
                }
            };
            let Some(request) = pending.request else {
                tracing::warn!(snapshot = %name, "removing a snapshot a crash left half taken (its marker records no request to complete)");
                self.files.delete(&listed.path)?;
                continue;
            };
            tracing::info!(snapshot = %name, table = %pending.table, "completing a snapshot the previous master left half taken");
            let master = Arc::clone(self);
            let taken = Taking {
                marker: listed.path.clone(),
                id: *id,
                name: name.clone(),
                table: pending.table,
                started_ms: self.clock.now_millis().max(request.requested_ms),
                request,
            };
            std::thread::Builder::new()
                .name("snapshot-takeover".into())
                .spawn(move || {
                    if let Err(e) = master.join_or_drive(&taken) {
                        tracing::warn!(snapshot = %taken.name, error = %e, "the snapshot left half taken could not be completed");
                    }
                })
                .map_err(|e| Error::io(&listed.path, e))?;
        }
        Ok(())
    }

    fn read_pending(&self, path: &Path) -> Result<PendingSnapshot> {
        let bytes = self.files.read_all(path)?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Corruption {
            path: path.to_path_buf(),
            offset: 0,
            message: format!("pending snapshot marker does not parse: {e}"),
        })
    }

    /// Takes snapshot `name` of `table` (the module docs' steps), recording
    /// `owner` as the user who took it. A request carrying `nonce` that
    /// was already taken (or is being taken) under that name is answered
    /// as that one: a client sends it again when its master died with the
    /// answer.
    pub(super) fn take_snapshot(
        &self,
        table: &str,
        name: &str,
        skip_flush: bool,
        ttl_secs: i64,
        owner: Option<String>,
        nonce: Option<Nonce>,
    ) -> Result<()> {
        check_snapshot_name(name)?;
        let taking = {
            let state = self.state.lock();
            self.check_running()?;
            self.expire_snapshots(&state);
            let listed = self.snapshot_entries()?;
            for l in &listed {
                match &l.entry {
                    SnapshotEntry::Snapshot(_, n) if n == name => {
                        if nonce.is_some() && self.read_snapshot(&l.path)?.nonce == nonce {
                            return Ok(());
                        }
                        return Err(Error::SnapshotExists(name.to_string()));
                    }
                    SnapshotEntry::Pending(id, n) if n == name => {
                        let pending = self.read_pending(&l.path)?;
                        match pending.request {
                            Some(request) if nonce.is_some() && request.nonce == nonce => {
                                let taking = Taking {
                                    marker: l.path.clone(),
                                    id: *id,
                                    name: name.to_string(),
                                    table: pending.table,
                                    started_ms: request.requested_ms,
                                    request,
                                };
                                drop(state);
                                return self.join_or_drive(&taking);
                            }
                            _ => return Err(Error::SnapshotExists(name.to_string())),
                        }
                    }
                    _ => {}
                }
            }
            if table.starts_with("hbase:") {
                return Err(Error::invalid(format!(
                    "system table snapshots are not allowed: {table}"
                )));
            }
            if !state.catalog.tables.contains_key(table) {
                return Err(table_gone(table));
            }
            let id = self.next_snapshot_id(&listed);
            let marker = layout::pending_snapshot_path(&self.root, id, name);
            let request = PendingRequest {
                skip_flush,
                ttl_secs: ttl_secs.max(0),
                owner,
                nonce,
                requested_ms: self.clock.now_millis(),
            };
            let body = serde_json::to_vec(&PendingSnapshot {
                table: table.to_string(),
                request: Some(request.clone()),
            })
            .map_err(|e| Error::invalid(format!("pending snapshot marker: {e}")))?;
            self.files.publish(&marker, &body)?;
            Taking {
                marker,
                id,
                name: name.to_string(),
                table: table.to_string(),
                started_ms: request.requested_ms,
                request,
            }
        };
        self.join_or_drive(&taking)
    }

    /// Drives `taking` to its end, or, when another thread of this master
    /// already does, waits for that one and answers its outcome.
    fn join_or_drive(&self, taking: &Taking) -> Result<()> {
        {
            let mut driven = self.snapshots_driven.lock();
            if driven.contains(&taking.marker) {
                while driven.contains(&taking.marker) {
                    self.snapshot_driven.wait(&mut driven);
                }
                drop(driven);
                let completed = layout::snapshot_path(&self.root, taking.id, &taking.name);
                return match self.read_snapshot(&completed) {
                    Ok(_) => Ok(()),
                    Err(_) => Err(Error::SnapshotFailed(format!(
                        "snapshot '{}' of table {} was not taken",
                        taking.name, taking.table
                    ))),
                };
            }
            driven.insert(taking.marker.clone());
        }
        let outcome = self.drive_snapshot(taking);
        self.snapshots_driven.lock().remove(&taking.marker);
        self.snapshot_driven.notify_all();
        outcome
    }

    /// Takes the snapshot `taking` describes, its marker published: each
    /// attempt lists every region's files under the master's lock (no
    /// split, merge or DDL meanwhile) and publishes the manifest. A region
    /// not serving (its server died, the region is being assigned) fails
    /// the attempt; the lock is let go, so the region can be assigned, and
    /// the snapshot tried again, until `snapshot_timeout` has passed since
    /// this master began driving it (`Taking::started_ms`). The marker goes when the snapshot is taken or given
    /// up; a master that stops leaves it for the next one.
    fn drive_snapshot(&self, taking: &Taking) -> Result<()> {
        let name = taking.name.as_str();
        let table = taking.table.as_str();
        let timeout_ms = i64::try_from(self.snapshot_timeout().as_millis()).unwrap_or(i64::MAX);
        let mut attempts = 0u32;
        let outcome = loop {
            attempts += 1;
            let attempt = {
                let state = self.state.lock();
                // A master stopping leaves the marker: the next one
                // completes the snapshot.
                self.check_running()?;
                self.snapshot_attempt(&state, taking)
            };
            match attempt {
                Ok(manifest) => break Ok(manifest),
                Err(e @ (Error::Fenced { .. } | Error::Closed(_))) => return Err(e),
                // The table is gone: no attempt can succeed.
                Err(e @ Error::SnapshotFailed(_)) => break Err(e),
                Err(e) => {
                    let waited = self.clock.now_millis().saturating_sub(taking.started_ms);
                    if waited >= timeout_ms {
                        break Err(Error::SnapshotFailed(format!(
                            "snapshot '{name}' of table {table} failed after {attempts} attempts in {waited} ms \
                             (snapshot_timeout_ms is {timeout_ms}): {e}"
                        )));
                    }
                    tracing::info!(snapshot = name, table, attempt = attempts, error = %e, "a snapshot attempt failed; trying again once the table's regions serve");
                    std::thread::sleep(SNAPSHOT_RETRY_PAUSE);
                }
            }
        };
        if let Err(e) = self.files.delete(&taking.marker) {
            // Left, it keeps the table's files until the next master start.
            tracing::warn!(path = %taking.marker.display(), error = %e, "could not remove a pending snapshot marker");
        }
        let manifest = outcome.map_err(|e| match e {
            e @ Error::SnapshotFailed(_) => e,
            e => Error::SnapshotFailed(format!("snapshot '{name}' of table {table} failed: {e}")),
        })?;
        tracing::info!(
            snapshot = name,
            table,
            regions = manifest.regions.len(),
            files = manifest.files().count(),
            bytes = manifest.file_bytes(),
            attempts,
            "snapshot taken"
        );
        Ok(())
    }

    /// One attempt of [`ClusterMaster::drive_snapshot`], under the lock.
    fn snapshot_attempt(&self, state: &State, taking: &Taking) -> Result<SnapshotManifest> {
        let (name, table) = (taking.name.as_str(), taking.table.as_str());
        let entry = state
            .catalog
            .tables
            .get(table)
            .ok_or_else(|| table_gone(table))?;
        let skip_flush = taking.request.skip_flush;
        let kind = match (entry.enabled, skip_flush) {
            (false, _) => SnapshotKind::Disabled,
            (true, false) => SnapshotKind::Flush,
            (true, true) => SnapshotKind::Skipflush,
        };
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
                        return Err(Error::NotServingRegion(format!(
                            "region {} of table {table} is {} and not open",
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
            ttl_secs: taking.request.ttl_secs,
            kind,
            descriptor: entry.descriptor.clone(),
            regions,
            held_for: None,
            lease_until_ms: None,
            nonce: taking.request.nonce,
            owner: taking.request.owner.clone(),
        };
        let path = layout::snapshot_path(&self.root, taking.id, name);
        match write_manifest(self.files.as_ref(), &path, &manifest) {
            Ok(()) => Ok(manifest),
            // An attempt before this one published it, then lost the
            // answer: taken.
            Err(e) if basalt_engine::manifest::is_already_exists(&e) => self.read_snapshot(&path),
            Err(e) => Err(e),
        }
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

    /// Returns the snapshot's table (disabled) to the snapshot. The
    /// table keeps its current indexes (a snapshot holds data, not index
    /// definitions), emptied and marked `Building` first: the next enable
    /// backfills them from the restored rows (`Database::enable_table`).
    /// In that order a crash anywhere leaves indexes that are either
    /// complete for the data, or `Building` (never read) and refilled.
    pub(super) fn restore_snapshot(&self, name: &str) -> Result<()> {
        self.empty_indexes_for_restore(name)?;
        self.restore_snapshot_data(name)
    }

    fn empty_indexes_for_restore(&self, name: &str) -> Result<()> {
        let (table, indexes) = {
            let state = self.state.lock();
            let snapshot = self.usable_snapshot(&state, name)?;
            let entry = Self::closed_table(&state, &snapshot.table)?;
            for index in entry.descriptor.indexes() {
                for (family, _) in index.read_columns() {
                    if snapshot.descriptor.get_family(&family).is_none() {
                        return Err(Error::invalid(format!(
                            "snapshot {name} has no family '{}', which index '{}' of table '{}' reads; drop the index first",
                            String::from_utf8_lossy(&family),
                            index.name,
                            snapshot.table
                        )));
                    }
                }
            }
            (snapshot.table.clone(), entry.descriptor.indexes().to_vec())
        };
        if indexes.is_empty() {
            return Ok(());
        }
        self.catalog_change(|catalog| {
            if let Some(entry) = catalog.tables.get_mut(&table) {
                for index in &indexes {
                    entry
                        .descriptor
                        .set_index_state(&index.name, IndexState::Building);
                }
            }
            Ok(())
        })?;
        for index in &indexes {
            let index_table = index_table_name(&table, &index.name);
            match self.set_enabled(&index_table, false) {
                Ok(()) | Err(Error::TableDisabled(_)) => {}
                Err(Error::TableNotFound(_)) => continue,
                Err(e) => return Err(e),
            }
            self.truncate_table(&index_table)?;
            self.set_enabled(&index_table, true)?;
        }
        Ok(())
    }

    fn restore_snapshot_data(&self, name: &str) -> Result<()> {
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
        // The snapshot's families with the table's indexes (now `Building`).
        let mut descriptor = TableDescriptor::new(table.clone());
        for family in snapshot.descriptor.families() {
            descriptor = descriptor.family(ColumnFamilyDescriptor::clone(family));
        }
        for index in entry.descriptor.indexes() {
            descriptor.add_index(index.clone())?;
        }
        if let Some(t) = updated.tables.get_mut(&table) {
            t.descriptor = descriptor;
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
