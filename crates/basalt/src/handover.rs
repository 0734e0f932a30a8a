//! The steps of a split or merge that do the work on files and regions,
//! on the server hosting the old regions (`cluster::split` documents the
//! protocol): closing the old
//! regions for the hand-over, choosing a split row, seeding the new
//! regions with links to the old files, retiring the old regions in the
//! catalog, and dropping the retired regions nothing links to any more.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use basalt_engine::fence::Fence;
use basalt_engine::fs::FileStore;
use basalt_engine::layout;
use basalt_engine::{Region, Store};
use basalt_types::cell::escape_bytes;
use basalt_types::{Error, Result};

use crate::catalog::{Catalog, RegionEntry, RegionState, TableEntry};

/// Moves the regions `old` of `table` from the serving list to the retired
/// one (with `state` and the successors), putting `successors` in their
/// place.
pub(crate) fn retire(
    catalog: &mut Catalog,
    table: &str,
    old: &[u64],
    successors: &[RegionEntry],
    state: RegionState,
) -> Result<()> {
    let entry = catalog
        .tables
        .get_mut(table)
        .ok_or_else(|| Error::TableNotFound(table.to_string()))?;
    let at = entry
        .regions
        .iter()
        .position(|r| old.contains(&r.id))
        .ok_or_else(|| Error::invalid(format!("regions {old:?} are not in the catalog")))?;
    let (retired, serving): (Vec<RegionEntry>, Vec<RegionEntry>) =
        std::mem::take(&mut entry.regions)
            .into_iter()
            .partition(|r| old.contains(&r.id));
    entry.regions = serving;
    let tail = entry.regions.split_off(at);
    entry.regions.extend(successors.iter().cloned());
    entry.regions.extend(tail);
    for mut r in retired {
        r.state = state;
        r.successors = successors.iter().map(|s| s.id).collect();
        entry.retired.push(r);
    }
    Ok(())
}

/// Step 1 for every predecessor: closes each for the hand-over (writes
/// refused, flushed). Returns the highest sequence id their data is flushed
/// through; on failure the ones already closed serve again.
pub(crate) fn close_all_for_handover(predecessors: &[Arc<Region>]) -> Result<u64> {
    let mut through = 0;
    for (closed, predecessor) in predecessors.iter().enumerate() {
        match predecessor.close_for_handover() {
            Ok(t) => through = through.max(t),
            Err(e) => {
                for earlier in &predecessors[..closed] {
                    earlier.reopen_after_failed_handover();
                }
                return Err(e);
            }
        }
    }
    Ok(through)
}

/// The row `parent` splits at: `split_key`, which must lie strictly inside
/// its range (the second daughter starts there), or, without one, a row
/// near the middle of its data; `None` when it has no row to split at.
pub(crate) fn choose_split_key(parent: &Region, split_key: Option<&[u8]>) -> Result<Option<Bytes>> {
    let info = parent.info();
    match split_key {
        Some(key) => {
            let inside =
                key > &info.start_key[..] && (info.end_key.is_empty() || key < &info.end_key[..]);
            if !inside {
                return Err(Error::invalid(format!(
                    "split key '{}' is not inside region {} [{}, {})",
                    escape_bytes(key),
                    info.encoded_name(),
                    escape_bytes(&info.start_key),
                    escape_bytes(&info.end_key)
                )));
            }
            Ok(Some(Bytes::copy_from_slice(key)))
        }
        None => parent.split_point(),
    }
}

/// Step 2: writes each successor's store manifests, links to the files of
/// the (closed, flushed) predecessors within the successor's rows, fenced
/// with `fence` (the epoch the predecessors' manifests carry, so a later
/// opening of the successor at a higher epoch supersedes them).
pub(crate) fn seed_successors(
    files: &Arc<dyn FileStore>,
    root: &Path,
    table: &str,
    successors: &[RegionEntry],
    predecessors: &[Arc<Region>],
    through: u64,
    fence: Option<Arc<Fence>>,
) -> Result<()> {
    for successor in successors {
        let dir = layout::region_dir(root, table, successor.id);
        let mut families: BTreeMap<String, Vec<_>> = BTreeMap::new();
        for predecessor in predecessors {
            for (family, links) in predecessor.links_for(&successor.start_key, &successor.end_key) {
                families.entry(family).or_default().extend(links);
            }
        }
        for (family, links) in families {
            Store::seed(
                files,
                &layout::store_dir(&dir, &family),
                links,
                through,
                fence.clone(),
            )?;
        }
    }
    Ok(())
}

/// The janitor's rule (step 5), shared by one process and the cluster's
/// master: removes from `entry` the retired regions no serving region links
/// to and returns their ids. `linked` is what serving regions link to;
/// `None` when that is unknown (a manifest could not be read), which keeps
/// every retired region.
pub(crate) fn drop_unlinked_retired(
    entry: &mut TableEntry,
    linked: Option<&HashSet<u64>>,
) -> Vec<u64> {
    let Some(linked) = linked else {
        return Vec::new();
    };
    let mut doomed = Vec::new();
    entry.retired.retain(|r| {
        let keep = linked.contains(&r.id);
        if !keep {
            doomed.push(r.id);
        }
        keep
    });
    doomed
}
