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
use basalt_types::{Error, IndexState, Result, TableDescriptor};

use super::control::IndexChange;
use super::master::{least_loaded, ClusterMaster, State};
use crate::catalog::{altered_descriptor, new_region_entry, FamilyChange};
use crate::catalog::{Procedure, RegionState};

impl ClusterMaster {
    /// Step 1, then step 2 at once.
    pub(super) fn alter_table(&self, table: &str, changes: &[FamilyChange]) -> Result<()> {
        let deleted: Vec<String> = changes
            .iter()
            .filter_map(|c| match c {
                FamilyChange::Delete(f) => Some(f.clone()),
                _ => None,
            })
            .collect();
        self.alter_descriptor(table, deleted, |descriptor| {
            altered_descriptor(table, descriptor, changes)
        })
    }

    /// The alter procedure for any descriptor change `change` makes (its
    /// families, its indexes): every region reopens with the new
    /// descriptor. `deleted` names the families whose files go.
    pub(super) fn alter_descriptor(
        &self,
        table: &str,
        deleted: Vec<String>,
        change: impl FnOnce(TableDescriptor) -> Result<TableDescriptor>,
    ) -> Result<()> {
        let mut state = self.state.lock();
        self.check_running()?;
        let entry = state
            .catalog
            .tables
            .get(table)
            .ok_or_else(|| Error::TableNotFound(table.to_string()))?;
        let descriptor = change(entry.descriptor.clone())?;
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

    /// Adds, activates or drops an index (`crate::index::build` says in
    /// which order the steps go and why).
    pub(super) fn change_indexes(&self, table: &str, change: IndexChange) -> Result<()> {
        let descriptor = {
            let state = self.state.lock();
            state
                .catalog
                .tables
                .get(table)
                .ok_or_else(|| Error::TableNotFound(table.to_string()))?
                .descriptor
                .clone()
        };
        match change {
            IndexChange::Add { mut index } => {
                if let Some(existing) = descriptor.get_index(&index.name) {
                    // The same definition again: a build to resume.
                    if existing.columns == index.columns && existing.covered == index.covered {
                        return Ok(());
                    }
                    return Err(Error::invalid(format!(
                        "table '{table}' already has an index named '{}' on other columns",
                        index.name
                    )));
                }
                index.state = IndexState::Building;
                index.created_at_ms = self.clock.now_millis();
                // Checked before the index table exists.
                descriptor.clone().add_index(index.clone())?;
                let index_table = crate::index::build::index_table_descriptor(&descriptor, &index);
                if self
                    .state
                    .lock()
                    .catalog
                    .tables
                    .contains_key(index_table.name())
                {
                    return Err(Error::TableExists(format!(
                        "{}: the table that index '{}' of '{table}' would use exists already (a build interrupted before the index was recorded leaves it; drop it first)",
                        index_table.name(),
                        index.name
                    )));
                }
                self.create_index_table(index_table)?;
                self.alter_descriptor(table, Vec::new(), |mut d| {
                    d.add_index(index)?;
                    Ok(d)
                })
            }
            IndexChange::Activate { name } => self.catalog_change(|catalog| {
                let entry = catalog
                    .tables
                    .get_mut(table)
                    .ok_or_else(|| Error::TableNotFound(table.to_string()))?;
                if entry.descriptor.set_index_state(&name, IndexState::Active) {
                    Ok(())
                } else {
                    Err(no_such_index(table, &name))
                }
            }),
            IndexChange::Drop { name } => {
                if descriptor.get_index(&name).is_none() {
                    return Err(no_such_index(table, &name));
                }
                // Maintenance stops first (the regions reopen without it),
                // so no write reaches the index table once it goes.
                self.alter_descriptor(table, Vec::new(), |mut d| {
                    d.remove_index(&name);
                    Ok(d)
                })?;
                self.drop_index_table(&basalt_types::index::index_table_name(table, &name))
            }
        }
    }
}

fn no_such_index(table: &str, name: &str) -> Error {
    Error::invalid(format!("table '{table}' has no index named '{name}'"))
}
