//! Split and merge, in a cluster and in one process (a cluster of one,
//! `cluster::in_process`): the master drives, the server
//! hosting the region does the file work (as HBase does), and the change
//! is a procedure persisted in the catalog, so a master that takes over
//! finishes it or rolls it back.
//!
//! A split of region P of table T, hosted by server S (a merge is the same
//! with two old regions on one server and one new region):
//! a. **Procedure.** The master hands out the daughters' ids and commits
//!    `SplitRegion { table, parent, key, daughters }` before anything else.
//! b. **Prepare** (on S, `RegionServerControl::prepare_split`): P closes
//!    for writes and flushes, the split row is chosen if none was given
//!    (the parent's split point), and the daughters' store manifests are
//!    seeded with links to P's files (`crate::handover`). Nothing is
//!    copied.
//! c. **Commit.** The catalog retires P (`SPLIT`, with its successors) and
//!    lists the daughters `OPENING` on S, each at a new region epoch. This
//!    is the commit point: before it P is the region, after it the
//!    daughters are.
//! d. **Open.** The master asks S to open each daughter (`open_region`;
//!    S opens the seeded directories, takes over P's row clock and closes
//!    P once both daughters serve), then commits them `OPEN`.
//! e. **Done.** The procedure is removed.
//!
//! Rollback rule (`ClusterMaster::resume_handovers`, run by every
//! reconciliation): a procedure whose old regions are still serving in the
//! catalog (c never happened) is rolled back: each old region is closed on
//! its server (a region closed for the hand-over accepts that: it is
//! flushed) and thereby reassigned at a new epoch by the normal assignment,
//! the seeded directories are deleted and the procedure removed. One whose
//! commit happened is finished by the normal assignment: its new regions
//! are `OPENING` or, after a failed open, `FAILED_OPEN`/`OFFLINE`. A
//! hosting server that died meanwhile goes through the crash path (its
//! regions, old or new, reopen elsewhere from its fenced log).
//!
//! The janitor (`ClusterMaster::collect_retired_regions`, also run by
//! reconciliation): retired regions no serving region links to any more
//! leave the catalog and their files are deleted. The master opens no
//! region, so it reads what serving regions link to from their newest
//! store manifests on the storage; a manifest it cannot read keeps every
//! retired region of the table (the one-process rule for `FAILED_OPEN`).
//!
//! Automatic splits: a member's region server runs [`MemberHooks`]: after
//! a flush, a region past the split size asks the master for its split,
//! from a thread of its own (never under a region's lock: the master's
//! prepare step flushes the region). A load-based split asks the same
//! way, with the row the load chose (`docs/load-split.md`).

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Weak};

use bytes::Bytes;
use parking_lot::Mutex;

use basalt_engine::layout;
use basalt_engine::load_split::{
    LoadSplitEvent, LoadSplitLog, LoadSplitOutcome, LoadSplitProposal,
};
use basalt_engine::manifest::StoreManifest;
use basalt_engine::{Region, RegionInfo};
use basalt_types::cell::escape_bytes;
use basalt_types::{Error, Result};

use super::control::{MasterCall, PrepareMerge, PrepareSplit, SplitPlan};
use super::master::ClusterMaster;
use super::master::State;
use super::member::ClusterMember;
use crate::catalog::{Catalog, Procedure, RegionEntry, RegionState};
use crate::handover::{
    choose_split_key, close_all_for_handover, drop_unlinked_retired, retire, seed_successors,
};
use crate::locator::RegionLocator;
use crate::maintenance::MaintenanceHooks;
use crate::options::Options;
use crate::region_server::RegionServer;

/// A region of a table, by position in the catalog: the entry and where
/// it is open.
fn open_on(catalog: &Catalog, table: &str, id: u64) -> Result<(RegionEntry, String)> {
    let entry = catalog
        .tables
        .get(table)
        .ok_or_else(|| Error::TableNotFound(table.to_string()))?;
    if !entry.enabled {
        return Err(Error::TableDisabled(table.to_string()));
    }
    let region = entry.regions.iter().find(|r| r.id == id).ok_or_else(|| {
        Error::NotServingRegion(format!(
            "region {id} of table {table} was split or merged meanwhile"
        ))
    })?;
    match (&region.state, &region.server) {
        (RegionState::Open, Some(server)) => Ok((region.clone(), server.clone())),
        _ => Err(Error::NotServingRegion(format!(
            "region {id} of table {table} is not open ({}); try again once it is",
            super::master::state_name(region.state)
        ))),
    }
}

/// A new region's catalog entry, `OPENING` on `server` at a new epoch.
fn new_entry(
    catalog: &mut Catalog,
    table: &str,
    id: u64,
    range: (Bytes, Bytes),
    server: &str,
    floor: u64,
) -> Result<RegionEntry> {
    let descriptor = catalog
        .tables
        .get(table)
        .map(|t| t.descriptor.clone())
        .ok_or_else(|| Error::TableNotFound(table.to_string()))?;
    let mut entry = crate::catalog::new_region_entry(catalog, &descriptor, range.0, range.1, 0);
    // The id was handed out with the procedure (step a); the call above
    // took a fresh one, which is merely skipped.
    entry.id = id;
    entry.state = RegionState::Opening;
    entry.server = Some(server.to_string());
    entry.epoch = catalog.next_region_epoch(floor);
    Ok(entry)
}

impl ClusterMaster {
    /// `MasterCall::Split`.
    pub(super) fn split_region(&self, region: &str, key: Option<Bytes>) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        let (table, id) = Self::region_by_encoded_name(&state.catalog, region)?;
        if self.split_locked(&mut state, &table, id, key)? {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "region {region} has no row to split at (empty, or a single row)"
            )))
        }
    }

    /// `MasterCall::SplitTable`.
    pub(super) fn split_table(&self, table: &str, key: Option<Bytes>) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        let entry = state
            .catalog
            .tables
            .get(table)
            .ok_or_else(|| Error::TableNotFound(table.to_string()))?;
        match key {
            Some(key) => {
                let holder = entry
                    .regions
                    .iter()
                    .find(|r| {
                        r.start_key[..] <= key[..] && (r.end_key.is_empty() || key < r.end_key)
                    })
                    .map(|r| r.id)
                    .ok_or_else(|| Error::invalid(format!("no region of {table} holds the key")))?;
                self.split_locked(&mut state, table, holder, Some(key))
                    .map(drop)
            }
            None => {
                let ids: Vec<u64> = entry.regions.iter().map(|r| r.id).collect();
                for id in ids {
                    self.split_locked(&mut state, table, id, None)?;
                }
                Ok(())
            }
        }
    }

    /// Steps a-e for a split; false when the parent has no row to split at.
    pub(super) fn split_locked(
        &self,
        state: &mut State,
        table: &str,
        parent: u64,
        key: Option<Bytes>,
    ) -> Result<bool> {
        let (entry, server) = open_on(&state.catalog, table, parent)?;
        if let Some(key) = &key {
            let inside = key[..] > entry.start_key[..]
                && (entry.end_key.is_empty() || key[..] < entry.end_key[..]);
            if !inside {
                return Err(Error::invalid(format!(
                    "split key '{}' is not inside region {parent} of {table}",
                    escape_bytes(key)
                )));
            }
        }
        // Step a.
        let mut updated = state.catalog.clone();
        let now = self.clock.now_millis();
        let daughters = [updated.next_region_id(now), updated.next_region_id(now)];
        let procedure = updated.next_procedure_id();
        updated.procedures.insert(
            procedure,
            Procedure::SplitRegion {
                table: table.to_string(),
                parent,
                key: key.clone(),
                daughters: daughters.to_vec(),
            },
        );
        self.commit(state, updated)?;

        // Step b.
        let request = PrepareSplit {
            table: table.to_string(),
            region: parent,
            epoch: entry.epoch,
            key,
            daughters,
        };
        let plan = match self.servers.prepare_split(&server, &request) {
            Ok(plan) => plan,
            Err(e) => {
                // The answer may be lost with the parent closed there.
                self.roll_back(state, procedure)?;
                return Err(e);
            }
        };
        let Some(key) = plan.key else {
            self.remove_procedure(state, procedure)?;
            return Ok(false);
        };

        // Step c.
        let mut updated = state.catalog.clone();
        let floor = self.fence.epoch();
        let ranges = [
            (entry.start_key.clone(), key.clone()),
            (key.clone(), entry.end_key.clone()),
        ];
        let mut successors = Vec::with_capacity(2);
        for (id, range) in daughters.iter().zip(ranges) {
            successors.push(new_entry(&mut updated, table, *id, range, &server, floor)?);
        }
        retire(
            &mut updated,
            table,
            &[parent],
            &successors,
            RegionState::Split,
        )?;
        self.commit(state, updated)?;
        tracing::info!(table, parent, split_key = %escape_bytes(&key), daughters = ?daughters, server = %server, "region split committed");

        // Steps d and e.
        self.open_successors(state, table, &daughters, &server, procedure)?;
        Ok(true)
    }

    /// `MasterCall::Merge`.
    pub(super) fn merge_regions(&self, region_a: &str, region_b: &str) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        let (table_a, a) = Self::region_by_encoded_name(&state.catalog, region_a)?;
        let (table_b, b) = Self::region_by_encoded_name(&state.catalog, region_b)?;
        if table_a != table_b {
            return Err(Error::invalid(format!(
                "cannot merge regions of different tables ({table_a} and {table_b})"
            )));
        }
        if a == b {
            return Err(Error::invalid(format!(
                "cannot merge region {region_a} with itself"
            )));
        }
        let table = table_a;
        let (ea, _) = open_on(&state.catalog, &table, a)?;
        let (eb, _) = open_on(&state.catalog, &table, b)?;
        let (left, right) = if ea.start_key < eb.start_key {
            (ea, eb)
        } else {
            (eb, ea)
        };
        if left.end_key != right.start_key || left.end_key.is_empty() {
            return Err(Error::invalid(format!(
                "regions {region_a} and {region_b} are not adjacent"
            )));
        }
        self.merge_adjacent_locked(&mut state, &table, left.id, right.id)
    }

    /// Merges `left` and its right neighbour `right`, moving `right` to
    /// `left`'s server first: the merged region links to both. Also the
    /// normalizer's merge.
    pub(super) fn merge_adjacent_locked(
        &self,
        state: &mut State,
        table: &str,
        left: u64,
        right: u64,
    ) -> Result<()> {
        let (l, left_server) = open_on(&state.catalog, table, left)?;
        let (r, right_server) = open_on(&state.catalog, table, right)?;
        if l.end_key != r.start_key || l.end_key.is_empty() {
            return Err(Error::invalid(format!(
                "regions {left} and {right} of {table} are not adjacent"
            )));
        }
        if left_server != right_server {
            self.move_locked(state, table, right, Some(left_server.clone()))?;
        }
        self.merge_locked(state, table, left, right)
    }

    /// Steps a-e for a merge of the adjacent regions `left` and `right`,
    /// open on one server.
    fn merge_locked(&self, state: &mut State, table: &str, left: u64, right: u64) -> Result<()> {
        let (l, server) = open_on(&state.catalog, table, left)?;
        let (r, right_server) = open_on(&state.catalog, table, right)?;
        if server != right_server {
            return Err(Error::NotServingRegion(format!(
                "regions {left} and {right} of {table} are not on one server yet; try again"
            )));
        }
        // Step a.
        let mut updated = state.catalog.clone();
        let merged = updated.next_region_id(self.clock.now_millis());
        let procedure = updated.next_procedure_id();
        updated.procedures.insert(
            procedure,
            Procedure::MergeRegions {
                table: table.to_string(),
                regions: vec![left, right],
                merged,
            },
        );
        self.commit(state, updated)?;

        // Step b.
        let request = PrepareMerge {
            table: table.to_string(),
            regions: vec![(left, l.epoch), (right, r.epoch)],
            merged,
        };
        if let Err(e) = self.servers.prepare_merge(&server, &request) {
            self.roll_back(state, procedure)?;
            return Err(e);
        }

        // Step c.
        let mut updated = state.catalog.clone();
        let range = (l.start_key.clone(), r.end_key.clone());
        let entry = new_entry(
            &mut updated,
            table,
            merged,
            range,
            &server,
            self.fence.epoch(),
        )?;
        retire(
            &mut updated,
            table,
            &[left, right],
            &[entry],
            RegionState::Merged,
        )?;
        self.commit(state, updated)?;
        tracing::info!(table, left, right, merged, server = %server, "region merge committed");

        // Steps d and e.
        self.open_successors(state, table, &[merged], &server, procedure)
    }

    /// Steps d and e: opens the committed new regions on `server`. A failed
    /// open leaves the procedure for reconciliation, which assigns the new
    /// region again (its seeded files are on the shared storage).
    fn open_successors(
        &self,
        state: &mut State,
        table: &str,
        new: &[u64],
        server: &str,
        procedure: u64,
    ) -> Result<()> {
        let mut first_error = None;
        for id in new {
            if let Err(e) = self.finish_open(state, table, *id, server) {
                tracing::warn!(table, region = id, error = %e, "a new region did not open; the master assigns it again");
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => {
                self.remove_procedure(state, procedure)?;
                // New regions that already rewrote their links (a server
                // compacting as it opens them, as one process does) free
                // the old ones now rather than at the next round.
                if let Err(e) = self.collect_retired_regions(state) {
                    tracing::warn!(table, error = %e, "catalog janitor failed; retried later");
                }
                Ok(())
            }
        }
    }

    fn remove_procedure(&self, state: &mut State, procedure: u64) -> Result<()> {
        let mut updated = state.catalog.clone();
        updated.procedures.remove(&procedure);
        self.commit(state, updated)
    }

    /// Rolls back procedures whose commit (step c) never happened: the
    /// rollback rule of the module docs.
    pub(super) fn resume_handovers(&self, state: &mut State) -> Result<()> {
        let pending: Vec<u64> = state
            .catalog
            .procedures
            .iter()
            .filter(|(_, p)| {
                matches!(
                    p,
                    Procedure::SplitRegion { .. } | Procedure::MergeRegions { .. }
                )
            })
            .map(|(id, _)| *id)
            .collect();
        let mut first_error = None;
        for procedure in pending {
            if let Err(e) = self.roll_back(state, procedure) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Rolls procedure `procedure` back if it is not committed; a committed
    /// one is left to the assignment.
    fn roll_back(&self, state: &mut State, procedure: u64) -> Result<()> {
        let (table, old, new) = match state.catalog.procedures.get(&procedure) {
            Some(Procedure::SplitRegion {
                table,
                parent,
                daughters,
                ..
            }) => (table.clone(), vec![*parent], daughters.clone()),
            Some(Procedure::MergeRegions {
                table,
                regions,
                merged,
            }) => (table.clone(), regions.clone(), vec![*merged]),
            _ => return Ok(()),
        };
        let committed = new.iter().any(|id| {
            state
                .catalog
                .tables
                .get(&table)
                .is_some_and(|t| t.regions.iter().any(|r| r.id == *id))
        });
        if committed {
            return Ok(());
        }
        // The old regions may be closed for the hand-over where they are
        // open: close them there for good (they are flushed), so the
        // assignment reopens them at a new epoch.
        for id in &old {
            let open_on = state
                .catalog
                .region(*id)
                .and_then(|(_, _, r)| match r.state {
                    RegionState::Open | RegionState::Opening | RegionState::Closing => {
                        r.server.clone()
                    }
                    _ => None,
                });
            if let Some(server) = open_on {
                if state.live.contains(&server) {
                    self.close_on(state, &table, *id, &server)?;
                }
                // A server that is not live is declared dead and its
                // regions reopen elsewhere from its log.
            }
        }
        for id in &new {
            let dir = layout::region_dir(&self.root, &table, *id);
            self.files.delete_prefix(&dir)?;
        }
        tracing::warn!(table = %table, old = ?old, new = ?new, "split or merge rolled back: the old regions reopen");
        self.remove_procedure(state, procedure)
    }

    /// The janitor of the module docs.
    pub(super) fn collect_retired_regions(&self, state: &mut State) -> Result<()> {
        // Holds of tables that no longer link to their files go first: a
        // compaction, which is what runs the janitor, is what rewrote them.
        self.release_holds(state);
        // Without retired regions there is nothing to collect: no need to
        // copy the catalog (every reconciliation comes here).
        if state.catalog.tables.values().all(|t| t.retired.is_empty()) {
            return Ok(());
        }
        let mut updated = state.catalog.clone();
        let mut doomed = Vec::new();
        for (name, entry) in updated.tables.iter_mut() {
            if entry.retired.is_empty() {
                continue;
            }
            let families: Vec<String> = entry
                .descriptor
                .families()
                .iter()
                .map(|f| f.name().to_string())
                .collect();
            let mut linked = HashSet::new();
            let mut known = true;
            'regions: for region in &entry.regions {
                let dir = layout::region_dir(&self.root, name, region.id);
                for family in &families {
                    match self.links_of(&layout::store_dir(&dir, family)) {
                        Ok(ids) => linked.extend(ids),
                        Err(e) => {
                            tracing::debug!(table = %name, region = region.id, error = %e, "janitor: a manifest could not be read; retired regions stay");
                            known = false;
                            break 'regions;
                        }
                    }
                }
            }
            for id in drop_unlinked_retired(entry, known.then_some(&linked)) {
                doomed.push((name.clone(), id));
            }
        }
        if doomed.is_empty() {
            return Ok(());
        }
        // Catalog first: a crash before the files are gone leaves
        // directories nothing names, harmless.
        self.commit(state, updated)?;
        for (table, id) in doomed {
            let dir = layout::region_dir(&self.root, &table, id);
            tracing::info!(table = %table, region = id, "janitor: deleting a retired region no region links to");
            if let Err(e) = self.files.delete_prefix(&dir) {
                tracing::warn!(dir = %dir.display(), error = %e, "could not delete the files of a retired region");
            }
        }
        Ok(())
    }

    /// The regions the newest manifest of the store at `dir` links to,
    /// read without writing anything (the store belongs to a region
    /// server). A store with no manifest links to nothing.
    fn links_of(&self, dir: &std::path::Path) -> Result<Vec<u64>> {
        let newest = self
            .files
            .list(dir)?
            .iter()
            .filter_map(|p| layout::manifest_version_of(p))
            .max();
        let Some(version) = newest else {
            return Ok(Vec::new());
        };
        let path = layout::manifest_path(dir, version);
        let bytes = self.files.read_all(&path)?;
        let manifest =
            StoreManifest::decode(&bytes, version).map_err(|message| Error::Corruption {
                path: path.clone(),
                offset: 0,
                message,
            })?;
        Ok(manifest
            .files
            .iter()
            .filter_map(|f| f.link.as_ref().map(|l| l.region_id))
            .collect())
    }
}

impl ClusterMember {
    /// Step b of a split, on the server hosting the parent.
    pub(crate) fn prepare_split(
        &self,
        server: &RegionServer,
        locator: &RegionLocator,
        request: &PrepareSplit,
    ) -> Result<SplitPlan> {
        let _routing = self.routing.lock();
        let parent = self.handed_over_region(server, request.region, request.epoch)?;
        let Some(key) = choose_split_key(&parent, request.key.as_deref())? else {
            return Ok(SplitPlan { key: None });
        };
        let info = parent.info();
        let successors = [
            successor(request.daughters[0], info.start_key.clone(), key.clone()),
            successor(request.daughters[1], key.clone(), info.end_key.clone()),
        ];
        self.hand_over(
            server,
            locator,
            &request.table,
            &[parent],
            request.epoch,
            &successors,
        )?;
        Ok(SplitPlan { key: Some(key) })
    }

    /// Step b of a merge, on the server hosting both regions.
    pub(crate) fn prepare_merge(
        &self,
        server: &RegionServer,
        locator: &RegionLocator,
        request: &PrepareMerge,
    ) -> Result<()> {
        let _routing = self.routing.lock();
        let [(left, left_epoch), (right, right_epoch)] = request.regions[..] else {
            return Err(Error::invalid(format!(
                "a merge takes two regions, not {:?}",
                request.regions
            )));
        };
        let l = self.handed_over_region(server, left, left_epoch)?;
        let r = self.handed_over_region(server, right, right_epoch)?;
        if l.info().end_key != r.info().start_key || l.info().end_key.is_empty() {
            return Err(Error::invalid(format!(
                "regions {left} and {right} are not adjacent"
            )));
        }
        let merged = successor(
            request.merged,
            l.info().start_key.clone(),
            r.info().end_key.clone(),
        );
        // The seeds carry the higher of the two epochs: the merged
        // region's own epoch is above both.
        self.hand_over(
            server,
            locator,
            &request.table,
            &[l, r],
            left_epoch.max(right_epoch),
            &[merged],
        )
    }

    /// The region `id` open here at `epoch`, which the master wants to
    /// hand over.
    fn handed_over_region(
        &self,
        server: &RegionServer,
        id: u64,
        epoch: u64,
    ) -> Result<Arc<Region>> {
        let region = server.region(id).ok_or_else(|| {
            Error::NotServingRegion(format!("region {id} is not open on this server"))
        })?;
        if server.region_epoch(id) != Some(epoch) {
            return Err(Error::NotServingRegion(format!(
                "region {id} is open here at epoch {:?}, not {epoch}",
                server.region_epoch(id)
            )));
        }
        Ok(region)
    }

    /// Step b on this server (`crate::handover`): close the old regions
    /// for writes and flush them, seed the new ones. On
    /// failure the old regions serve again and no seed is left.
    fn hand_over(
        &self,
        server: &RegionServer,
        locator: &RegionLocator,
        table: &str,
        old: &[Arc<Region>],
        epoch: u64,
        new: &[RegionEntry],
    ) -> Result<()> {
        let through = close_all_for_handover(old)?;
        let fence = server
            .fence()
            .map(|process| server.region_fence(epoch, Arc::clone(process)));
        let files = &server.store_context().files;
        if let Err(e) = seed_successors(files, &self.root, table, new, old, through, fence) {
            for entry in new {
                let dir = layout::region_dir(&self.root, table, entry.id);
                if let Err(e) = files.delete_prefix(&dir) {
                    tracing::warn!(dir = %dir.display(), error = %e, "could not delete a seeded region; the master's rollback does");
                }
            }
            for region in old {
                region.reopen_after_failed_handover();
            }
            if let Ok(location) = locator.table(table) {
                location.announce_region_change();
            }
            return Err(e);
        }
        Ok(())
    }

    /// After a new region of a split or merge opened here: it takes over
    /// the row clocks of the old regions still held here (their timestamp
    /// records are final: they are closed for writes), and old regions
    /// whose every successor now serves here are closed.
    pub(super) fn adopt_predecessors(
        &self,
        server: &RegionServer,
        catalog: &Catalog,
        table: &str,
        id: u64,
    ) {
        let Some(entry) = catalog.tables.get(table) else {
            return;
        };
        let Some(opened) = server.region(id) else {
            return;
        };
        for old in entry.retired.iter().filter(|r| r.successors.contains(&id)) {
            if let Some(predecessor) = server.region(old.id) {
                opened.adopt_row_clock(&predecessor);
                if old.successors.iter().all(|s| server.region(*s).is_some()) {
                    server.close_handed_over(old.id);
                }
            }
        }
    }

    /// Old regions of a committed split or merge still held here whose new
    /// regions open elsewhere (after a failed open) are closed.
    pub(super) fn close_retired(&self, server: &RegionServer, catalog: &Catalog) {
        for (_, entry) in catalog.tables.iter() {
            for old in &entry.retired {
                if server.region(old.id).is_none() {
                    continue;
                }
                let pending_here = old.successors.iter().any(|s| {
                    entry.regions.iter().any(|r| {
                        r.id == *s
                            && r.state == RegionState::Opening
                            && r.server.as_deref() == self.name.as_deref()
                    })
                });
                if !pending_here {
                    server.close_handed_over(old.id);
                }
            }
        }
    }
}

fn successor(id: u64, start_key: Bytes, end_key: Bytes) -> RegionEntry {
    RegionEntry {
        id,
        start_key,
        end_key,
        ..RegionEntry::default()
    }
}

/// A member's background-work hooks: after a flush, the split check by
/// size, and by load when the scheduler has a split row; the master is
/// asked for the split.
#[derive(Debug)]
pub(crate) struct MemberHooks {
    member: Weak<ClusterMember>,
    options: Options,
    /// Regions whose split was asked and not answered: one request each.
    asked: Arc<Mutex<BTreeSet<u64>>>,
    /// Ask the master on the flushing thread rather than a thread of its
    /// own: one process whose maintenance runs in the writing thread
    /// (deterministic tests), where a split must be over when the write
    /// that caused it returns.
    inline: bool,
    /// One process: the master, to run its janitor after a compaction (a
    /// cluster's runs it at every reconciliation round).
    janitor: Option<Weak<ClusterMaster>>,
}

impl MemberHooks {
    pub(crate) fn new(member: &Arc<ClusterMember>, options: Options) -> MemberHooks {
        MemberHooks {
            member: Arc::downgrade(member),
            options,
            asked: Arc::new(Mutex::new(BTreeSet::new())),
            inline: false,
            janitor: None,
        }
    }

    /// The hooks of one process's member (`cluster::in_process`): `inline`
    /// asks on the flushing thread, and `master` runs its janitor after
    /// each compaction.
    pub(crate) fn in_process(
        member: &Arc<ClusterMember>,
        options: Options,
        inline: bool,
        master: &Arc<ClusterMaster>,
    ) -> MemberHooks {
        MemberHooks {
            inline,
            janitor: Some(Arc::downgrade(master)),
            ..MemberHooks::new(member, options)
        }
    }

    /// Runs `ask` (a call to the master) here when inline, else on a thread
    /// of its own; an error when no thread could start.
    fn ask(&self, thread: &str, ask: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        if self.inline {
            ask();
            return Ok(());
        }
        std::thread::Builder::new()
            .name(thread.into())
            .spawn(ask)
            .map(drop)
    }
}

impl MaintenanceHooks for MemberHooks {
    fn after_flush(&self, region: &Arc<Region>) {
        let Some(member) = self.member.upgrade() else {
            return;
        };
        let info: &RegionInfo = region.info();
        let regions = member
            .catalog()
            .tables
            .get(&info.table)
            .map_or(1, |t| t.regions.len());
        let Some(limit) = self.options.split_size(regions) else {
            return;
        };
        // As the one-process check: a region still reading a parent's
        // files waits for its compaction first.
        if !region.is_serving() || region.has_parent_links() || region.largest_store_bytes() < limit
        {
            return;
        }
        let id = info.id;
        if !self.asked.lock().insert(id) {
            return;
        }
        let encoded = info.encoded_name();
        let asked = Arc::clone(&self.asked);
        let control = Arc::clone(member.control());
        let spawned = self.ask("basalt-split-ask", move || {
                let call = MasterCall::Split {
                    region: encoded.clone(),
                    key: None,
                };
                match control.call(call) {
                    Ok(_) => tracing::info!(region = %encoded, "automatic split done"),
                    Err(e) => {
                        tracing::info!(region = %encoded, error = %e, "automatic split not done; asked again after a later flush")
                    }
                }
                asked.lock().remove(&id);
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "could not start a thread to ask for a split");
            self.asked.lock().remove(&id);
        }
    }

    fn after_compaction(&self, _region: &Arc<Region>) {
        // In a cluster the janitor runs on the master, in its
        // reconciliation; one process runs it now, unless the master is
        // busy (and then reconciling: it runs the janitor itself).
        if let Some(master) = self.janitor.as_ref().and_then(Weak::upgrade) {
            master.janitor_if_idle();
        }
    }

    /// The one-process checks against the member's catalog, then the
    /// master is asked from a thread of its own, as for a size split.
    fn load_split(
        &self,
        region: &Arc<Region>,
        proposal: &LoadSplitProposal,
        events: &Arc<LoadSplitLog>,
    ) {
        let Some(member) = self.member.upgrade() else {
            return;
        };
        let info = region.info().clone();
        let at = proposal.at_millis;
        let key = proposal.key.clone();
        let reason = proposal.reason();
        let event = move |outcome, cause: &str, reason: String| {
            LoadSplitEvent::new(&info, at, outcome, cause, Some(&key[..]), reason)
        };
        let refuse = |cause: &str, why: &str| {
            let reason = format!("{reason}; not split: {why}");
            events.note(event(LoadSplitOutcome::Refused, cause, reason), true);
        };
        let (enabled, regions) = match member.catalog().tables.get(&region.info().table) {
            Some(t) => (t.enabled, t.regions.len()),
            None => return refuse("not_serving", "the table is gone"),
        };
        if !enabled {
            return refuse("table_disabled", "the table is disabled");
        }
        if !region.is_serving() {
            return refuse("split_running", "a split or merge of the region is running");
        }
        if region.has_parent_links() {
            return refuse(
                "has_links",
                "the region still reads its parent's files (it can split after its compaction)",
            );
        }
        if !self.options.load_split_allowed(regions) {
            return refuse(
                "max_regions",
                &format!(
                    "the table has {regions} regions (load_split_max_regions {})",
                    self.options.load_split_max_regions
                ),
            );
        }
        let id = region.info().id;
        if !self.asked.lock().insert(id) {
            return refuse("split_running", "a split of the region was asked already");
        }
        // Asked of a master elsewhere, the outcome comes later: note that
        // it was asked. Inline, the outcome is noted at once.
        if !self.inline {
            events.note(
                event(LoadSplitOutcome::Asked, "load", reason.clone()),
                false,
            );
        }
        let asked = Arc::clone(&self.asked);
        let control = Arc::clone(member.control());
        let log = Arc::clone(events);
        let call = MasterCall::Split {
            region: region.info().encoded_name(),
            key: Some(proposal.key.clone()),
        };
        let spawned = self.ask("basalt-load-split-ask", move || {
            let (outcome, cause, reason, quiet) = match control.call(call) {
                Ok(_) => (LoadSplitOutcome::Split, "load", reason, false),
                // Split, merged or disabled meanwhile: fine.
                Err(e @ (Error::NotServingRegion(_) | Error::TableDisabled(_))) => (
                    LoadSplitOutcome::Refused,
                    "not_serving",
                    format!("{reason}; not split: {e}"),
                    true,
                ),
                Err(e) => (
                    LoadSplitOutcome::Failed,
                    "failed",
                    format!("{reason}; the split failed: {e}"),
                    false,
                ),
            };
            log.note(event(outcome, cause, reason), quiet);
            asked.lock().remove(&id);
        });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "could not start a thread to ask for a load-based split");
            self.asked.lock().remove(&id);
        }
    }
}
