//! The master: HBase's catalog-keeping role. It owns the catalog (every
//! table's descriptor, state and regions, HBase's `hbase:meta`), runs DDL
//! and the split/merge hand-over, tells the region server which regions to
//! open, close or destroy, and publishes the new locations to the
//! [`RegionLocator`].
//!
//! Every change follows one order, so a crash at any point leaves a data
//! set the next start serves correctly:
//! 1. compute the new catalog from a copy of the current one;
//! 2. commit it (one write-once catalog version: the commit point);
//! 3. only then change what is served (open, close, destroy regions) and
//!    publish the locations. Files a crash leaves behind are orphans the
//!    next start deletes.
//!
//! DDL is serialized by the catalog lock.

pub(crate) mod handover;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use basalt_engine::fs::FileStore;
use basalt_engine::Clock;
use basalt_types::{Error, NamespaceDescriptor, Result, TableDescriptor};

use crate::catalog::{
    altered_descriptor, fence_catalog, new_region_entry, region_spec, Catalog, FamilyChange,
    RegionEntry, RegionState,
};
use crate::cluster::{MasterAnswer, MasterCall, MasterLink};
use crate::locator::{RegionLocator, TableLocation};
use crate::options::Options;
use crate::region_server::{RecoveryReport, RegionServer, WalPlacement};
use crate::replication::{PeerChange, ReplicationPeer};

use handover::MasterHooks;

/// The catalog-keeping role: catalog, DDL, split and merge.
#[derive(Debug)]
pub struct Master {
    root: PathBuf,
    options: Options,
    clock: Arc<dyn Clock>,
    files: Arc<dyn FileStore>,
    /// The committed catalog; the lock serializes every change of it.
    catalog: Mutex<Catalog>,
    /// The committed catalog as readers share it ([`MasterLink::catalog`]),
    /// replaced whole by each commit.
    published: parking_lot::RwLock<Arc<Catalog>>,
    server: Arc<RegionServer>,
    locator: Arc<RegionLocator>,
    stopped: AtomicBool,
}

impl Master {
    /// Starts the roles over the data set at `root`: loads the catalog,
    /// starts a region server with every serving region (which replays the
    /// log), publishes the locations, and resumes the work a crash may have
    /// interrupted (rewriting links, dropping unlinked retired regions).
    pub fn start(
        root: &Path,
        options: Options,
        clock: Arc<dyn Clock>,
        files: Arc<dyn FileStore>,
        wal: &WalPlacement,
    ) -> Result<(Arc<Master>, RecoveryReport)> {
        let catalog = Catalog::load(files.as_ref(), root)?;
        let mut specs = Vec::new();
        let mut keep = Vec::new();
        for (name, entry) in &catalog.tables {
            specs.extend(
                entry
                    .regions
                    .iter()
                    .map(|r| region_spec(name, &entry.descriptor, r)),
            );
            // Retired regions stay while serving ones link to their files.
            keep.extend(entry.retired.iter().map(|r| (name.clone(), r.id)));
        }
        let (server, recovery) = RegionServer::start(
            root,
            options.clone(),
            Arc::clone(&clock),
            Arc::clone(&files),
            specs,
            &keep,
            wal,
        )?;
        let mut catalog = catalog;
        if let Some(fence) = server.fence() {
            fence_catalog(&mut catalog, files.as_ref(), root, fence)?;
        }
        let server = Arc::new(server);
        let locator = Arc::new(RegionLocator::new());
        for entry in catalog.tables.values() {
            let regions = entry
                .regions
                .iter()
                .filter_map(|r| server.region(r.id))
                .collect();
            locator.publish(Arc::new(TableLocation::new(
                entry.descriptor.clone(),
                entry.enabled,
                regions,
            )));
        }
        let master = Arc::new(Master {
            root: root.to_path_buf(),
            options,
            clock,
            files,
            published: parking_lot::RwLock::new(Arc::new(catalog.clone())),
            catalog: Mutex::new(catalog),
            server: Arc::clone(&server),
            locator,
            stopped: AtomicBool::new(false),
        });
        server.set_hooks(Arc::new(MasterHooks {
            master: Arc::downgrade(&master),
        }));
        // Regions that opened with links go on rewriting them; parents
        // nobody links to any more (a crash came before the janitor) go.
        for region in server.online_regions() {
            if region.has_links() {
                server.request_compaction(region.info().id);
            }
        }
        master.collect_retired_regions()?;
        Ok((master, recovery))
    }

    /// The region server this master assigns regions to.
    pub fn region_server(&self) -> &Arc<RegionServer> {
        &self.server
    }

    /// The locator this master publishes locations to.
    pub fn locator(&self) -> &Arc<RegionLocator> {
        &self.locator
    }

    /// Refuses further DDL and region changes (the database is closing).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    fn check_running(&self) -> Result<()> {
        if self.stopped.load(Ordering::SeqCst) {
            return Err(Error::Closed(format!("database {}", self.root.display())));
        }
        Ok(())
    }

    /// Commits `updated` as the new catalog (the commit point of every
    /// change) and makes it the current one.
    fn commit(&self, catalog: &mut Catalog, mut updated: Catalog) -> Result<()> {
        updated.store_fenced(
            self.files.as_ref(),
            &self.root,
            self.server.fence().map(|f| &**f),
        )?;
        self.install(catalog, updated);
        Ok(())
    }

    /// Makes the committed `updated` the current catalog, for DDL (which
    /// holds `catalog`, the lock's guard) and for readers.
    fn install(&self, catalog: &mut Catalog, updated: Catalog) {
        *self.published.write() = Arc::new(updated.clone());
        *catalog = updated;
    }

    /// Creates a table pre-split at `split_keys` (sorted, distinct,
    /// non-empty): `n` keys make `n + 1` regions.
    pub fn create_table(&self, descriptor: TableDescriptor, split_keys: &[Bytes]) -> Result<()> {
        self.check_running()?;
        let mut catalog = self.catalog.lock();
        let mut updated = catalog.clone();
        let (descriptor, entries) =
            updated.add_table(descriptor, split_keys, self.clock.now_millis())?;
        let name = descriptor.name().to_string();
        for entry in updated
            .tables
            .get_mut(&name)
            .into_iter()
            .flat_map(|t| t.regions.iter_mut())
        {
            entry.state = RegionState::Open;
        }
        self.commit(&mut catalog, updated)?;
        let regions = entries
            .iter()
            .map(|e| self.server.open_region(region_spec(&name, &descriptor, e)))
            .collect::<Result<Vec<_>>>()?;
        self.locator
            .publish(Arc::new(TableLocation::new(descriptor, true, regions)));
        Ok(())
    }

    /// Lets a table serve (`true`) or stops it (`false`).
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<()> {
        self.check_running()?;
        let location = self.locator.table(name)?;
        let mut catalog = self.catalog.lock();
        let mut updated = catalog.clone();
        let entry = updated
            .tables
            .get_mut(name)
            .ok_or_else(|| Error::TableNotFound(name.to_string()))?;
        if entry.enabled == enabled {
            // HBase answers TableNotDisabled / TableNotEnabled here.
            return Err(if enabled {
                Error::TableEnabled(name.to_string())
            } else {
                Error::TableDisabled(name.to_string())
            });
        }
        entry.enabled = enabled;
        self.commit(&mut catalog, updated)?;
        location.set_enabled(enabled);
        Ok(())
    }

    /// Deletes a disabled table and its data.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.check_running()?;
        let location = self.locator.table(name)?;
        if location.is_enabled() {
            return Err(Error::TableEnabled(name.to_string()));
        }
        let mut catalog = self.catalog.lock();
        let mut updated = catalog.clone();
        let retired = updated
            .tables
            .remove(name)
            .map(|e| e.retired)
            .unwrap_or_default();
        self.commit(&mut catalog, updated)?;
        self.locator.forget(name);
        for region in location.regions() {
            self.server.destroy_region(name, region.info().id);
        }
        for r in &retired {
            self.server.destroy_region(name, r.id);
        }
        Ok(())
    }

    /// Empties a disabled table, keeping its descriptor and region
    /// boundaries; the table stays disabled (as HBase's Admin does).
    pub fn truncate_table(&self, name: &str) -> Result<()> {
        self.check_running()?;
        let location = self.locator.table(name)?;
        if location.is_enabled() {
            return Err(Error::TableEnabled(name.to_string()));
        }
        let descriptor = location.descriptor();
        let mut catalog = self.catalog.lock();
        let now = self.clock.now_millis();
        let mut updated = catalog.clone();
        let old_regions = updated
            .tables
            .get(name)
            .map(|e| e.regions.clone())
            .ok_or_else(|| Error::TableNotFound(name.to_string()))?;
        let new_entries: Vec<RegionEntry> = old_regions
            .iter()
            .map(|r| {
                new_region_entry(
                    &mut updated,
                    &descriptor,
                    r.start_key.clone(),
                    r.end_key.clone(),
                    now,
                )
            })
            .collect();
        let retired = match updated.tables.get_mut(name) {
            Some(entry) => {
                entry.regions = new_entries.clone();
                std::mem::take(&mut entry.retired)
            }
            None => Vec::new(),
        };
        // Fresh region ids: the old regions' WAL edits no longer match any
        // region and are skipped on replay.
        self.commit(&mut catalog, updated)?;
        let regions = new_entries
            .iter()
            .map(|e| self.server.open_region(region_spec(name, &descriptor, e)))
            .collect::<Result<Vec<_>>>()?;
        let old = location.regions();
        location.replace_regions(regions);
        for region in old {
            self.server.destroy_region(name, region.info().id);
        }
        for r in &retired {
            self.server.destroy_region(name, r.id);
        }
        Ok(())
    }

    /// Adds, modifies or deletes column families; works on enabled tables.
    pub fn alter_table(&self, name: &str, changes: &[FamilyChange]) -> Result<()> {
        self.check_running()?;
        let location = self.locator.table(name)?;
        let mut catalog = self.catalog.lock();
        let descriptor = altered_descriptor(name, location.descriptor(), changes)?;
        // Apply to the live regions first: adding a family fixes the sequence
        // id from which its WAL edits count, which the catalog must record.
        let regions = location.regions();
        for region in &regions {
            for change in changes {
                match change {
                    FamilyChange::Add(f) => {
                        region.add_family(f.clone())?;
                    }
                    FamilyChange::Modify(f) => region.modify_family(f.clone())?,
                    FamilyChange::Delete(f) => region.remove_family(f.as_bytes())?,
                }
            }
        }
        let mut updated = catalog.clone();
        if let Some(entry) = updated.tables.get_mut(name) {
            entry.descriptor = descriptor.clone();
            for (entry_region, region) in entry.regions.iter_mut().zip(&regions) {
                entry_region.family_first_sequence = region
                    .stores()
                    .iter()
                    .map(|s| (s.descriptor().name().to_string(), s.first_sequence()))
                    .collect();
            }
        }
        self.commit(&mut catalog, updated)?;
        location.set_descriptor(descriptor);
        Ok(())
    }
}

// ---- the balancer switch ----
impl Master {
    /// Reads the balancer switch and, with `on`, commits its new value;
    /// answers the value before. One region server holds every region, so
    /// the balancer never has anything to move, but the switch is kept in
    /// the catalog as in a cluster: a client reads back what it set, after
    /// a restart too (HBase's standalone mode does the same).
    pub fn balancer_switch(&self, on: Option<bool>) -> Result<bool> {
        self.check_running()?;
        let mut catalog = self.catalog.lock();
        let previous = !catalog.balancer_off;
        if let Some(on) = on {
            if on != previous {
                let mut updated = catalog.clone();
                updated.balancer_off = !on;
                self.commit(&mut catalog, updated)?;
            }
        }
        Ok(previous)
    }
}

// ---- replication peers ----
impl Master {
    /// Adds, removes, enables, disables or updates a replication peer
    /// (`crate::replication`), committed in the catalog so it survives a
    /// restart. Basalt ships no edits to peers yet.
    pub fn change_replication_peer(&self, change: PeerChange) -> Result<()> {
        self.check_running()?;
        let mut catalog = self.catalog.lock();
        let mut updated = catalog.clone();
        updated.change_replication_peer(change)?;
        self.commit(&mut catalog, updated)
    }

    /// Every replication peer, by id.
    pub fn replication_peers(&self) -> BTreeMap<String, ReplicationPeer> {
        self.catalog.lock().replication_peers.clone()
    }

    /// Reads the replication peer modification switch and, with `on`,
    /// commits its new value; answers the value before. On by default.
    pub fn replication_peer_modification_switch(&self, on: Option<bool>) -> Result<bool> {
        self.check_running()?;
        let mut catalog = self.catalog.lock();
        let previous = !catalog.replication_peer_modification_off;
        if let Some(on) = on {
            if on != previous {
                let mut updated = catalog.clone();
                updated.replication_peer_modification_off = !on;
                self.commit(&mut catalog, updated)?;
            }
        }
        Ok(previous)
    }
}

// ---- the normalizer ----
impl Master {
    /// Reads the normalizer switch and, with `on`, commits its new value;
    /// answers the value before. Off by default; kept in the catalog like
    /// the balancer switch, so it survives a restart.
    pub fn normalizer_switch(&self, on: Option<bool>) -> Result<bool> {
        self.check_running()?;
        let mut catalog = self.catalog.lock();
        let previous = catalog.normalizer_on;
        if let Some(on) = on {
            if on != previous {
                let mut updated = catalog.clone();
                updated.normalizer_on = on;
                self.commit(&mut catalog, updated)?;
                tracing::info!(on, "normalizer switch");
            }
        }
        Ok(previous)
    }

    /// One normalizer pass over every enabled table (`crate::normalizer`):
    /// plans from the regions' sizes (store files and memstores) and
    /// request rates, then carries each plan out through the split-by-hand
    /// path without a key and the merge of two regions. Does nothing while
    /// the switch is off. A table with a region that is not serving
    /// (`FAILED_OPEN`) is skipped: its size is unknown.
    pub fn normalize(&self) -> Result<crate::normalizer::NormalizerRun> {
        use crate::normalizer::{plan_table, NormalizationPlan, NormalizerRun, RegionFacts};
        self.check_running()?;
        if !self.catalog.lock().normalizer_on {
            return Ok(NormalizerRun::not_run("the normalizer switch is off"));
        }
        let config = crate::normalizer::NormalizerConfig::from_options(&self.options);
        let now = self.clock.now_millis();
        let mut run = NormalizerRun {
            ran: true,
            ..NormalizerRun::default()
        };
        for (table, location) in self.locator.tables() {
            if !location.is_enabled() {
                continue;
            }
            let mut facts = Vec::new();
            let mut names = std::collections::HashMap::new();
            for region in location.regions() {
                if region.open_failure().is_some() {
                    facts.clear();
                    break;
                }
                let load = region.load();
                let file_bytes: u64 = region.store_stats().iter().map(|(_, s)| s.file_bytes).sum();
                let info = region.info();
                names.insert(info.id, info.encoded_name());
                facts.push(RegionFacts {
                    id: info.id,
                    start_key: info.start_key.clone(),
                    end_key: info.end_key.clone(),
                    size_bytes: file_bytes.saturating_add(load.memstore_bytes),
                    requests_per_sec: load.read_requests_per_sec + load.write_requests_per_sec,
                });
            }
            for plan in plan_table(&table, &facts, now, &config) {
                let done = match &plan {
                    NormalizationPlan::Split { region, .. } => {
                        self.split(&table, *region, None).and_then(|split| {
                            if split {
                                Ok(())
                            } else {
                                Err(Error::invalid("the region has no row to split at"))
                            }
                        })
                    }
                    NormalizationPlan::Merge { left, right, .. } => {
                        let name = |id: &u64| names.get(id).cloned().unwrap_or_default();
                        self.merge_regions(name(left).as_bytes(), name(right).as_bytes())
                    }
                };
                match done {
                    Ok(()) => {
                        tracing::info!(table, reason = %plan.reason(), "normalizer");
                        run.plans.push(plan);
                    }
                    Err(e) => {
                        tracing::warn!(table, reason = %plan.reason(), error = %e, "normalizer: plan failed; planned again next run");
                        run.failed += 1;
                    }
                }
            }
        }
        Ok(run)
    }
}

// ---- namespaces ----
impl Master {
    /// Creates a namespace with its properties (HBase's `create_namespace`).
    pub fn create_namespace(&self, descriptor: NamespaceDescriptor) -> Result<()> {
        self.check_running()?;
        let mut catalog = self.catalog.lock();
        let mut updated = catalog.clone();
        updated.add_namespace(descriptor)?;
        self.commit(&mut catalog, updated)
    }

    /// Sets the properties in `set` and removes the keys in `unset`
    /// (HBase's `alter_namespace` with METHOD => 'set' / 'unset'). The
    /// reserved namespaces keep no properties: altering them is refused.
    pub fn alter_namespace(
        &self,
        name: &str,
        set: BTreeMap<String, String>,
        unset: &[String],
    ) -> Result<()> {
        self.check_running()?;
        let mut catalog = self.catalog.lock();
        let mut updated = catalog.clone();
        updated.alter_namespace(name, set, unset)?;
        self.commit(&mut catalog, updated)
    }

    /// Drops an empty namespace (HBase's `drop_namespace`): one that still
    /// has tables, and the reserved ones, are refused.
    pub fn drop_namespace(&self, name: &str) -> Result<()> {
        self.check_running()?;
        let mut catalog = self.catalog.lock();
        let mut updated = catalog.clone();
        updated.remove_namespace(name)?;
        self.commit(&mut catalog, updated)
    }

    /// Every namespace, the reserved ones included, in name order.
    pub fn namespaces(&self) -> Vec<NamespaceDescriptor> {
        self.catalog.lock().namespace_list()
    }

    /// One namespace and its properties.
    pub fn namespace(&self, name: &str) -> Result<NamespaceDescriptor> {
        self.catalog.lock().namespace(name)
    }

    /// The tables of a namespace, in name order (full names, `ns:t`).
    pub fn namespace_tables(&self, name: &str) -> Result<Vec<String>> {
        self.catalog.lock().namespace_tables(name)
    }
}

// ---- the in-process link ----

/// The database of one process reaches its master as a cluster member
/// reaches the active master, with the same calls; here each runs at once
/// on the caller's thread, and routes are published as each commits.
impl MasterLink for Master {
    fn call(&self, call: MasterCall) -> Result<MasterAnswer> {
        let done = |r: Result<()>| r.map(|()| MasterAnswer::Done);
        let switch = |r: Result<bool>| r.map(|previous| MasterAnswer::Switch { previous });
        match call {
            MasterCall::CreateTable { descriptor, splits } => {
                done(self.create_table(descriptor, &splits))
            }
            MasterCall::SetEnabled { table, enabled } => done(self.set_enabled(&table, enabled)),
            MasterCall::DropTable { table } => done(self.drop_table(&table)),
            MasterCall::Alter { table, changes } => done(self.alter_table(&table, &changes)),
            MasterCall::Truncate { table } => done(self.truncate_table(&table)),
            MasterCall::CreateNamespace { descriptor } => done(self.create_namespace(descriptor)),
            MasterCall::AlterNamespace { name, set, unset } => {
                done(self.alter_namespace(&name, set, &unset))
            }
            MasterCall::DropNamespace { name } => done(self.drop_namespace(&name)),
            MasterCall::Split { region, key } => {
                done(self.split_region(region.as_bytes(), key.as_deref()))
            }
            MasterCall::SplitTable { table, key } => done(self.split_table(&table, key.as_deref())),
            MasterCall::Merge { region_a, region_b } => {
                done(self.merge_regions(region_a.as_bytes(), region_b.as_bytes()))
            }
            // One region server holds every region: a balancer run has
            // nothing to move, but it still honours its switch.
            MasterCall::Balance { force: _ } => Ok(if self.balancer_switch(None)? {
                MasterAnswer::Moved { regions: 0 }
            } else {
                MasterAnswer::NotRun {
                    reason: "the balancer switch is off".into(),
                }
            }),
            MasterCall::BalancerSwitch { on } => switch(self.balancer_switch(on)),
            MasterCall::NormalizerSwitch { on } => switch(self.normalizer_switch(on)),
            MasterCall::Normalize => self.normalize().map(MasterAnswer::Normalized),
            MasterCall::ReplicationPeer { change } => done(self.change_replication_peer(change)),
            MasterCall::ReplicationPeers => Ok(MasterAnswer::ReplicationPeers {
                peers: self.replication_peers(),
            }),
            MasterCall::ReplicationPeerModificationSwitch { on } => {
                switch(self.replication_peer_modification_switch(on))
            }
            MasterCall::CatalogJanitor => done(self.collect_retired_regions()),
            MasterCall::Move { .. } => Err(needs_a_cluster("move")),
            MasterCall::Assign { .. } => Err(needs_a_cluster("assign")),
            MasterCall::Unassign { .. } => Err(needs_a_cluster("unassign")),
            MasterCall::Status => Err(needs_a_cluster("the cluster's status")),
        }
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.published.read())
    }

    fn refresh(&self) -> Result<()> {
        Ok(())
    }

    fn stop(&self) {
        Master::stop(self);
    }
}

/// A region operation of a cluster's master, refused in one process (whose
/// one region server holds every region: there is nowhere to move,
/// assign or balance to) with a message saying so.
fn needs_a_cluster(what: &str) -> Error {
    Error::invalid(format!(
        "{what} needs a cluster: this database runs in one process, whose one region server holds every region"
    ))
}
