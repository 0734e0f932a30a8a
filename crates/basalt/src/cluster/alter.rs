//! Alter and truncate in a cluster.
//!
//! **Alter** (add, modify or delete families), a procedure:
//! 1. the master commits the new descriptor with `AlterTable { table,
//!    deleted, epoch_floor }`, `epoch_floor` being the last region epoch
//!    handed out so far;
//! 2. every region of the table opened at an epoch up to the floor (so
//!    still with the old descriptor) is closed on its server (flushed),
//!    the deleted families' store directories are removed (before the
//!    region reopens, so a family added again later starts empty), and the
//!    region is assigned back to the same server (or, if that one is gone,
//!    the least loaded) at a new epoch: it opens with the new descriptor;
//!    a disabled table's regions only take a new epoch;
//! 3. once every region is above the floor the procedure is removed.
//!
//! A master that takes over runs step 2 from reconciliation: it is
//! idempotent (a region above the floor is done; deleting a removed
//! directory is a no-op). Requests meanwhile wait for each region's brief
//! reopening, as for a move.
//!
//! **Truncate** (a disabled table, regions closed): the catalog replaces
//! every region with a new one over the same key range (fresh ids, so no
//! log edit of an old region can apply to a new one), then the old
//! regions' files are deleted.

use basalt_engine::layout;
use basalt_types::{Error, Result};

use super::master::{least_loaded, ClusterMaster, State};
use crate::catalog::{altered_descriptor, new_region_entry, FamilyChange};
use crate::catalog::{Procedure, RegionState};

impl ClusterMaster {
    /// Step 1, then step 2 at once.
    pub(super) fn alter_table(&self, table: &str, changes: &[FamilyChange]) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        let entry = state
            .catalog
            .tables
            .get(table)
            .ok_or_else(|| Error::TableNotFound(table.to_string()))?;
        let descriptor = altered_descriptor(table, entry.descriptor.clone(), changes)?;
        let deleted: Vec<String> = changes
            .iter()
            .filter_map(|c| match c {
                FamilyChange::Delete(f) => Some(f.clone()),
                _ => None,
            })
            .collect();
        let mut updated = state.catalog.clone();
        // A deleted family's grants go with it, as a dropped table's do.
        for family in &deleted {
            updated
                .permissions
                .forget_table(table, Some(family.as_bytes()));
        }
        let epoch_floor = updated.last_region_epoch;
        if let Some(t) = updated.tables.get_mut(table) {
            t.descriptor = descriptor.clone();
            for region in t.regions.iter_mut() {
                // The families a region opens with are the descriptor's. A
                // new family counts log edits from where the region's
                // families do at the latest: that is above the region's
                // last close (`close_on`), and every edit a family of the
                // same name had before a delete is below it. Its own edits
                // all come after the next open.
                region
                    .family_first_sequence
                    .retain(|f, _| descriptor.get_family(f.as_bytes()).is_some());
                let new_family_first = region
                    .family_first_sequence
                    .values()
                    .copied()
                    .max()
                    .unwrap_or(1);
                for family in descriptor.families() {
                    region
                        .family_first_sequence
                        .entry(family.name().to_string())
                        .or_insert(new_family_first);
                }
            }
        }
        let id = updated.next_procedure_id();
        updated.procedures.insert(
            id,
            Procedure::AlterTable {
                table: table.to_string(),
                deleted,
                epoch_floor,
            },
        );
        self.commit(&mut state, updated)?;
        self.resume_alters(&mut state)?;
        self.require_settled(&state, table)
    }

    /// Step 2 (and 3) for every alter in the catalog.
    pub(super) fn resume_alters(&self, state: &mut State) -> Result<()> {
        let alters: Vec<(String, Vec<String>, u64)> = state
            .catalog
            .procedures
            .values()
            .filter_map(|p| match p {
                Procedure::AlterTable {
                    table,
                    deleted,
                    epoch_floor,
                } => Some((table.clone(), deleted.clone(), *epoch_floor)),
                _ => None,
            })
            .collect();
        for (table, deleted, floor) in alters {
            let Some(entry) = state.catalog.tables.get(&table) else {
                continue;
            };
            let enabled = entry.enabled;
            let stale: Vec<(u64, RegionState, Option<String>)> = entry
                .regions
                .iter()
                .filter(|r| r.epoch <= floor)
                .map(|r| (r.id, r.state, r.server.clone()))
                .collect();
            for (region, region_state, server) in stale {
                if let (
                    RegionState::Open | RegionState::Opening | RegionState::Closing,
                    Some(holder),
                ) = (region_state, &server)
                {
                    // The close also moves every family's first log
                    // sequence above it, an added one included.
                    self.close_on(state, &table, region, holder)?;
                }
                let dir = layout::region_dir(&self.root, &table, region);
                for family in &deleted {
                    self.files.delete_prefix(&layout::store_dir(&dir, family))?;
                }
                let target = server
                    .filter(|s| state.live.contains(s))
                    .or_else(|| least_loaded(&state.catalog, &state.live, None));
                match (enabled, target) {
                    (true, Some(target)) => self.assign_to(state, &table, region, &target)?,
                    (true, None) => {
                        return Err(Error::NotServingRegion(
                            "no live region server to reopen altered regions on".into(),
                        ))
                    }
                    (false, _) => {
                        let floor_now = self.epoch();
                        self.update_region(state, &table, region, |entry, last_epoch| {
                            entry.epoch = crate::catalog::next_epoch(last_epoch, floor_now);
                        })?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Truncate: see the module docs.
    pub(super) fn truncate_table(&self, table: &str) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        let entry = Self::closed_table(&state, table)?;
        let descriptor = entry.descriptor.clone();
        let old: Vec<u64> = entry
            .regions
            .iter()
            .chain(entry.retired.iter())
            .map(|r| r.id)
            .collect();
        let ranges: Vec<_> = entry
            .regions
            .iter()
            .map(|r| (r.start_key.clone(), r.end_key.clone()))
            .collect();
        let now = self.clock.now_millis();
        let mut updated = state.catalog.clone();
        let fresh: Vec<_> = ranges
            .into_iter()
            .map(|(start, end)| {
                let mut region = new_region_entry(&mut updated, &descriptor, start, end, now);
                region.state = RegionState::Closed;
                region
            })
            .collect();
        if let Some(t) = updated.tables.get_mut(table) {
            t.regions = fresh;
            t.retired.clear();
        }
        self.commit(&mut state, updated)?;
        for id in old {
            let dir = layout::region_dir(&self.root, table, id);
            if let Err(e) = self.files.delete_prefix(&dir) {
                tracing::warn!(dir = %dir.display(), error = %e, "could not delete the files of a truncated region");
            }
        }
        Ok(())
    }
}
