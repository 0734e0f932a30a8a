//! Split and merge: regions handing their rows over to new regions.
//!
//! Both follow the same steps, each safe to crash after:
//!
//! 1. Under the catalog lock, the old region(s) close for writes (writers
//!    are refused with `NotServingRegion` and wait in the table layer for
//!    the new regions; readers go on, the data is frozen) and flush, so
//!    their files hold everything.
//! 2. The new regions' stores are seeded with manifests that *link* to the
//!    old regions' files, limited to each new region's rows. Nothing is
//!    copied, so this takes a moment whatever the region's size. A crash
//!    here leaves directories the catalog does not name: the next open
//!    deletes them, and the old regions serve, with their WAL edits.
//! 3. The catalog is written: the new regions `OPEN`, the old ones retired
//!    (`SPLIT` or `MERGED`). This single atomic write is the commit point:
//!    before it the old regions serve, after it the new ones, never both,
//!    never neither. The old regions' WAL edits are all flushed, so
//!    replay has nothing to give them.
//! 4. The new regions open and take the old ones' place in the table.
//! 5. Compactions rewrite the links into the new regions' own files; the
//!    janitor then drops retired regions no serving region links to from
//!    the catalog, and deletes their files.
//!
//! Splits come from three places, all through `Master::split`: by hand,
//! by size after a flush (`maybe_split`), and by load when the region
//! server's scheduler has a split row from the region's recorder
//! (`load_split`, `docs/load-split.md`).

use std::sync::{Arc, Weak};

use bytes::Bytes;

use basalt_engine::load_split::{
    LoadSplitEvent, LoadSplitLog, LoadSplitOutcome, LoadSplitProposal,
};
use basalt_engine::{Region, RegionInfo};
use basalt_types::cell::escape_bytes;
use basalt_types::{Error, Result, TableDescriptor};

use super::Master;
use crate::catalog::{new_region_entry, region_spec};
use crate::catalog::{Catalog, RegionEntry, RegionState};
use crate::handover::{
    choose_split_key, close_all_for_handover, drop_unlinked_retired, retire, seed_successors,
};
use crate::locator::TableLocation;
use crate::maintenance::MaintenanceHooks;

/// Why [`Master::split_region`] found nothing to do.
fn no_split_point(info: &RegionInfo) -> Error {
    Error::invalid(format!(
        "region {} has no row to split at (empty, or a single row)",
        info.encoded_name()
    ))
}

impl Master {
    /// Splits regions of a table by hand (HBase's `split 'table'[, 'key']`):
    /// with a key, the region holding it splits there (the key becomes the
    /// second daughter's first row); without one, every region with at
    /// least two rows of data splits near its middle.
    pub fn split_table(&self, name: &str, split_key: Option<&[u8]>) -> Result<()> {
        self.check_running()?;
        let state = self.locator.table(name)?;
        match split_key {
            Some(key) => {
                let region = state.region_holding(key)?;
                self.split(name, region.info().id, Some(key))?;
            }
            None => {
                for region in state.regions() {
                    self.split(name, region.info().id, None)?;
                }
            }
        }
        Ok(())
    }

    /// Splits one region, named by its full or encoded name, at
    /// `split_key` or, without one, at a row near the middle of its data.
    pub fn split_region(&self, region_name: &[u8], split_key: Option<&[u8]>) -> Result<()> {
        self.check_running()?;
        let (table, info) = self.find_region(region_name)?;
        match self.split(&table, info.id, split_key)? {
            true => Ok(()),
            false => Err(no_split_point(&info)),
        }
    }

    /// Merges two adjacent regions of a table, named by full or encoded
    /// names, into one (HBase's `merge_region`).
    pub fn merge_regions(&self, region_a: &[u8], region_b: &[u8]) -> Result<()> {
        self.check_running()?;
        let (table_a, a) = self.find_region(region_a)?;
        let (table_b, b) = self.find_region(region_b)?;
        if table_a != table_b {
            return Err(Error::invalid(format!(
                "cannot merge regions of different tables ({table_a} and {table_b})"
            )));
        }
        if a.id == b.id {
            return Err(Error::invalid(format!(
                "cannot merge region {} with itself",
                a.encoded_name()
            )));
        }
        let (left, right) = if a.start_key < b.start_key {
            (a, b)
        } else {
            (b, a)
        };
        self.merge(&table_a, left.id, right.id)
    }

    /// Compacts one region, named by its full or encoded name (HBase's
    /// `compact 'region'` / `major_compact 'region'`).
    pub fn compact_region(&self, region_name: &[u8], major: bool) -> Result<()> {
        self.check_running()?;
        let (table, info) = self.find_region(region_name)?;
        let state = self.locator.table(&table)?;
        if let Some(region) = state.regions().into_iter().find(|r| r.info().id == info.id) {
            region.compact(major)?;
        }
        self.collect_retired_regions()
    }

    /// The serving region with this full or encoded name, and its table.
    fn find_region(&self, name: &[u8]) -> Result<(String, RegionInfo)> {
        for (table, state) in self.locator.tables() {
            for region in state.regions() {
                let info = region.info();
                if &info.region_name()[..] == name || info.encoded_name().as_bytes() == name {
                    return Ok((table, info.clone()));
                }
            }
        }
        Err(Error::invalid(format!(
            "unknown region {}",
            String::from_utf8_lossy(name)
        )))
    }

    /// Splits region `id` of `table` at `split_key` or its midpoint.
    /// Returns false when, without a key, the region has no row to split
    /// at.
    pub(crate) fn split(&self, table: &str, id: u64, split_key: Option<&[u8]>) -> Result<bool> {
        let mut catalog = self.catalog.lock();
        let state = self.enabled_state(table)?;
        let parent = serving_region(&state, table, id)?;
        let info = parent.info().clone();
        let Some(key) = choose_split_key(&parent, split_key)? else {
            return Ok(false);
        };
        let ranges = [
            (info.start_key.clone(), key.clone()),
            (key.clone(), info.end_key.clone()),
        ];
        let daughters = self.hand_over(
            &mut catalog,
            table,
            &state,
            &[parent],
            &ranges,
            RegionState::Split,
        )?;
        drop(catalog);
        tracing::info!(
            table,
            parent = %info.encoded_name(),
            split_key = %escape_bytes(&key),
            "region split"
        );
        for daughter in daughters {
            self.server.request_compaction(daughter);
        }
        Ok(true)
    }

    /// Merges the adjacent regions `left` and `right` of `table`.
    fn merge(&self, table: &str, left: u64, right: u64) -> Result<()> {
        let mut catalog = self.catalog.lock();
        let state = self.enabled_state(table)?;
        let (l, r) = (
            serving_region(&state, table, left)?,
            serving_region(&state, table, right)?,
        );
        let (left_name, right_name) = (l.info().encoded_name(), r.info().encoded_name());
        if l.info().end_key != r.info().start_key || l.info().end_key.is_empty() {
            return Err(Error::invalid(format!(
                "regions {left_name} and {right_name} are not adjacent"
            )));
        }
        let range = (l.info().start_key.clone(), r.info().end_key.clone());
        let merged = self.hand_over(
            &mut catalog,
            table,
            &state,
            &[l, r],
            &[range],
            RegionState::Merged,
        )?;
        drop(catalog);
        tracing::info!(table, left = %left_name, right = %right_name, "regions merged");
        for region in merged {
            self.server.request_compaction(region);
        }
        Ok(())
    }

    /// The table, which must be enabled to split or merge its regions.
    fn enabled_state(&self, table: &str) -> Result<Arc<TableLocation>> {
        let state = self.locator.table(table)?;
        if !state.is_enabled() {
            return Err(Error::TableDisabled(table.to_string()));
        }
        Ok(state)
    }

    /// Hands the rows of the serving regions `predecessors` over to new
    /// regions with the key `ranges`, the steps of the module docs; the
    /// predecessors are retired as `retired_as`. Called with the catalog
    /// locked. Returns the new regions' ids.
    fn hand_over(
        &self,
        catalog: &mut Catalog,
        table: &str,
        state: &TableLocation,
        predecessors: &[Arc<Region>],
        ranges: &[(Bytes, Bytes)],
        retired_as: RegionState,
    ) -> Result<Vec<u64>> {
        let through = match close_all_for_handover(predecessors) {
            Ok(through) => through,
            Err(e) => {
                state.announce_region_change();
                return Err(e);
            }
        };
        let descriptor = state.descriptor();
        let now = self.clock.now_millis();
        let mut updated = catalog.clone();
        let successors: Vec<RegionEntry> = ranges
            .iter()
            .map(|(start, end)| {
                new_region_entry(&mut updated, &descriptor, start.clone(), end.clone(), now)
            })
            .collect();
        let old: Vec<u64> = predecessors.iter().map(|r| r.info().id).collect();
        let committed = seed_successors(
            &self.files,
            &self.root,
            table,
            &successors,
            predecessors,
            through,
            self.server.store_context().fence.clone(),
        )
        .and_then(|()| {
            retire(&mut updated, table, &old, &successors, retired_as)?;
            updated.store_fenced(
                self.files.as_ref(),
                &self.root,
                self.server.fence().map(|f| &**f),
            )
        });
        if let Err(e) = committed {
            self.abandon_handover(table, &successors, predecessors, state);
            return Err(e);
        }
        self.install(catalog, updated);
        self.install_successors(table, &descriptor, &successors, predecessors, state)?;
        Ok(successors.iter().map(|s| s.id).collect())
    }

    /// Undoes a hand-over that failed before its commit: the old regions
    /// serve again and the new ones' files go.
    fn abandon_handover(
        &self,
        table: &str,
        successors: &[RegionEntry],
        predecessors: &[Arc<Region>],
        state: &TableLocation,
    ) {
        for successor in successors {
            self.server.destroy_region(table, successor.id);
        }
        for predecessor in predecessors {
            predecessor.reopen_after_failed_handover();
        }
        state.announce_region_change();
    }

    /// Opens committed successors and puts them in their predecessors'
    /// place. If one cannot open, the table keeps the closed predecessors
    /// (writes wait, then fail) until the database is reopened, which
    /// serves the successors from the catalog.
    fn install_successors(
        &self,
        table: &str,
        descriptor: &TableDescriptor,
        successors: &[RegionEntry],
        predecessors: &[Arc<Region>],
        state: &TableLocation,
    ) -> Result<()> {
        let opened = successors
            .iter()
            .map(|e| self.server.open_region(region_spec(table, descriptor, e)))
            .collect::<Result<Vec<_>>>()?;
        // The predecessors are closed for writes: their per-row timestamp
        // records are final, and the successors continue them.
        for predecessor in predecessors {
            for successor in &opened {
                successor.adopt_row_clock(predecessor);
            }
        }
        let old: Vec<u64> = predecessors.iter().map(|r| r.info().id).collect();
        state.swap_regions(&old, opened);
        for id in old {
            self.server.close_region(id);
        }
        Ok(())
    }

    /// Drops retired regions that no serving region links to any more from
    /// the catalog, then deletes their files.
    pub(crate) fn collect_retired_regions(&self) -> Result<()> {
        let mut catalog = self.catalog.lock();
        let mut updated = catalog.clone();
        let mut doomed = Vec::new();
        {
            for (name, entry) in updated.tables.iter_mut() {
                if entry.retired.is_empty() {
                    continue;
                }
                let regions = self
                    .locator
                    .table(name)
                    .map(|state| state.regions())
                    .unwrap_or_default();
                // A FAILED_OPEN region's manifest could not be read, so what
                // it links to is unknown: keep every retired region.
                let linked = if regions.iter().any(|r| r.open_failure().is_some()) {
                    None
                } else {
                    Some(regions.iter().flat_map(|r| r.linked_regions()).collect())
                };
                for id in drop_unlinked_retired(entry, linked.as_ref()) {
                    doomed.push((name.clone(), id));
                }
            }
        }
        if doomed.is_empty() {
            return Ok(());
        }
        // Catalog first: a crash before the files are gone leaves orphans,
        // which the next open deletes. The files go before the lock is
        // released, so once a caller's janitor pass returns, what it
        // dropped is gone.
        self.commit(&mut catalog, updated)?;
        for (table, id) in doomed {
            self.server.destroy_region(&table, id);
        }
        Ok(())
    }

    /// Splits `region` if its largest store passed the split size and it
    /// reads no parent's files (as HBase, a region with references waits
    /// for its compaction first).
    fn maybe_split(&self, region: &Arc<Region>) {
        let table = region.info().table.clone();
        let Ok(state) = self.locator.table(&table) else {
            return;
        };
        let Some(limit) = self.options.split_size(state.regions().len()) else {
            return;
        };
        if !region.is_serving()
            || region.has_links()
            || region.largest_store_bytes() < limit
            || self.check_running().is_err()
        {
            return;
        }
        match self.split(&table, region.info().id, None) {
            Ok(_) => {}
            // Split or merged meanwhile, or the table was disabled: fine.
            Err(Error::NotServingRegion(_) | Error::TableDisabled(_) | Error::TableNotFound(_)) => {
            }
            Err(e) => {
                tracing::warn!(table, region = %region.info().encoded_name(), error = %e, "automatic split failed")
            }
        }
    }
}

impl Master {
    /// Splits `region` at the row its load chose, unless it cannot split
    /// now; every outcome is noted in `events`. The quiet refusals are the
    /// size check's: a split or merge of it running (it no longer
    /// serves), links to a parent's files (it splits after its
    /// compaction), a disabled table, plus the table's load-split region
    /// limit.
    fn load_split(
        &self,
        region: &Arc<Region>,
        proposal: &LoadSplitProposal,
        events: &LoadSplitLog,
    ) {
        let info = region.info();
        let table = info.table.as_str();
        let key = Some(&proposal.key[..]);
        let event = |outcome, cause: &str, reason: String| {
            LoadSplitEvent::new(info, proposal.at_millis, outcome, cause, key, reason)
        };
        let refuse = |cause: &str, why: &str| {
            let reason = format!("{}; not split: {why}", proposal.reason());
            events.note(event(LoadSplitOutcome::Refused, cause, reason), true);
        };
        let state = match self.locator.table(table) {
            Ok(state) => state,
            Err(_) => return refuse("not_serving", "the table is gone"),
        };
        if self.check_running().is_err() {
            return refuse("stopping", "the database is closing");
        }
        if !state.is_enabled() {
            return refuse("table_disabled", "the table is disabled");
        }
        if !region.is_serving() {
            return refuse("split_running", "a split or merge of the region is running");
        }
        if region.has_links() {
            return refuse(
                "has_links",
                "the region still reads its parent's files (it can split after its compaction)",
            );
        }
        let regions = state.regions().len();
        if !self.options.load_split_allowed(regions) {
            return refuse(
                "max_regions",
                &format!(
                    "the table has {regions} regions (load_split_max_regions {})",
                    self.options.load_split_max_regions
                ),
            );
        }
        match self.split(table, info.id, key) {
            Ok(true) => events.note(
                event(LoadSplitOutcome::Split, "load", proposal.reason()),
                false,
            ),
            Ok(false) => refuse("no_samples", "no row to split at"),
            // Split or merged meanwhile, or the table was disabled: fine.
            Err(Error::NotServingRegion(_) | Error::TableNotFound(_)) => {
                refuse("not_serving", "the region was split or merged meanwhile")
            }
            Err(Error::TableDisabled(_)) => refuse("table_disabled", "the table is disabled"),
            Err(e) => events.note(
                event(
                    LoadSplitOutcome::Failed,
                    "failed",
                    format!("{}; the split failed: {e}", proposal.reason()),
                ),
                false,
            ),
        }
    }
}

/// The serving region `id` of `table`, or `NotServingRegion` when a split
/// or merge retired it meanwhile.
fn serving_region(state: &TableLocation, table: &str, id: u64) -> Result<Arc<Region>> {
    state.region_by_id(id).ok_or_else(|| {
        Error::NotServingRegion(format!(
            "region {id} of table {table} was split or merged meanwhile"
        ))
    })
}

/// The master's side of background work, holding it weakly so the
/// scheduler never keeps a closed database alive.
#[derive(Debug)]
pub(super) struct MasterHooks {
    pub(super) master: Weak<Master>,
}

impl MaintenanceHooks for MasterHooks {
    fn after_flush(&self, region: &Arc<Region>) {
        if let Some(master) = self.master.upgrade() {
            master.maybe_split(region);
        }
    }

    fn after_compaction(&self, _region: &Arc<Region>) {
        if let Some(master) = self.master.upgrade() {
            if let Err(e) = master.collect_retired_regions() {
                tracing::warn!(error = %e, "could not collect retired regions");
            }
        }
    }

    fn load_split(
        &self,
        region: &Arc<Region>,
        proposal: &LoadSplitProposal,
        events: &Arc<LoadSplitLog>,
    ) {
        if let Some(master) = self.master.upgrade() {
            master.load_split(region, proposal, events);
        }
    }
}
