//! The embedded database: a data directory, its catalog of tables, the
//! shared write-ahead log, and the regions that serve each table.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};

use basalt_engine::block_cache::{BlockCache, BlockCacheStats};
use basalt_engine::fs::LocalFileStore;
use basalt_engine::wal::{ReplayReport, Wal};
use basalt_engine::{
    Clock, FamilyState, Region, RegionInfo, RegionLoad, Store, StoreContext, StoreStats,
};
use basalt_types::descriptor::validate_family_name;
use basalt_types::{ColumnFamilyDescriptor, Error, Result, TableDescriptor};

use crate::catalog::{Catalog, RegionEntry, RegionState, TableEntry};
use crate::maintenance::{Maintenance, MaintenanceHooks};
use crate::options::Options;
use crate::split::{validate_split_keys, SplitAlgorithm};
use crate::table::{Table, TableState};

mod handover;

use handover::RegionHooks;

const LOCK_FILE: &str = "LOCK";
const WAL_DIR: &str = "wal";
const DATA_DIR: &str = "data";

/// An open Basalt database. Cheap to clone; all clones share the database.
#[derive(Debug, Clone)]
pub struct Database {
    inner: Arc<DbInner>,
}

#[derive(Debug)]
pub(crate) struct DbInner {
    dir: PathBuf,
    options: Options,
    /// Held until `close` (or drop): the OS releases the lock when the
    /// process dies, so a crash never leaves the directory locked.
    lock: Mutex<Option<File>>,
    wal: Arc<Wal>,
    clock: Arc<dyn Clock>,
    context: StoreContext,
    maintenance: Arc<Maintenance>,
    /// DDL is serialized through the catalog; the in-memory table map is
    /// updated only after the catalog change is durable.
    catalog: Mutex<Catalog>,
    tables: RwLock<BTreeMap<String, Arc<TableState>>>,
    closed: AtomicBool,
    recovery: RecoveryReport,
}

/// What opening the database found in its write-ahead log.
#[derive(Debug, Clone, Default)]
pub struct RecoveryReport {
    /// WAL segments read.
    pub segments: usize,
    /// Records replayed into regions.
    pub edits_replayed: u64,
    /// Records of regions that no longer exist (dropped or truncated tables).
    pub edits_skipped: u64,
    /// A record cut short by a crash and dropped: its file and offset.
    pub torn_tail: Option<(PathBuf, u64)>,
}

/// A table's description: what `describe` shows.
#[derive(Debug, Clone)]
pub struct TableInfo {
    /// Name and families.
    pub descriptor: TableDescriptor,
    /// Whether the table serves requests.
    pub enabled: bool,
    /// The table's regions.
    pub regions: Vec<RegionSummary>,
}

/// One region of a table, with its load.
#[derive(Debug, Clone)]
pub struct RegionSummary {
    /// Identity and key range.
    pub info: RegionInfo,
    /// Load counters, recent rates and memstore size.
    pub load: RegionLoad,
    /// Per family: store files, their bytes, memstore bytes.
    pub stores: Vec<(String, StoreStats)>,
}

impl RegionSummary {
    /// Store files over all families.
    pub fn store_files(&self) -> usize {
        self.stores.iter().map(|(_, s)| s.files).sum()
    }

    /// Bytes in store files over all families.
    pub fn store_file_bytes(&self) -> u64 {
        self.stores.iter().map(|(_, s)| s.file_bytes).sum()
    }
}

/// A change to one column family, for [`Database::alter_table`].
#[derive(Debug, Clone)]
pub enum FamilyChange {
    /// Adds a family.
    Add(ColumnFamilyDescriptor),
    /// Replaces the options of an existing family, keeping its data.
    Modify(ColumnFamilyDescriptor),
    /// Deletes a family and all of its data.
    Delete(String),
}

impl Database {
    /// Opens (creating if needed) the database in `dir` with default options.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Database> {
        Database::open_with(Options::new(dir))
    }

    /// Opens the database described by `options`: takes the directory lock,
    /// loads the catalog and replays the write-ahead log.
    pub fn open_with(options: Options) -> Result<Database> {
        let dir = options.data_dir.clone();
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let lock = lock_directory(&dir)?;
        let catalog = Catalog::load(&dir)?;
        let clock = Arc::clone(&options.clock);
        let context = StoreContext {
            files: Arc::new(LocalFileStore::new()),
            cache: Some(Arc::new(BlockCache::new(options.block_cache_bytes))),
            policy: options.compaction_policy(),
        };
        remove_orphaned_regions(&dir, &catalog)?;

        // Regions open first, empty, and the log replays into them; they get
        // the log handle for new writes only once replay is over.
        let mut regions: HashMap<u64, Region> = HashMap::new();
        for (name, entry) in &catalog.tables {
            for r in &entry.regions {
                let region =
                    region_for(&dir, name, &entry.descriptor, r, &context, &clock, &options)?;
                regions.insert(r.id, region);
            }
        }
        let mut replayed_max: HashMap<u64, u64> = HashMap::new();
        let mut skipped = 0u64;
        let mut replayed = 0u64;
        let (wal, report) = Wal::open(&dir.join(WAL_DIR), options.wal_options(), |edit| {
            match regions.get(&edit.region_id) {
                Some(region) => {
                    region.replay(&edit);
                    let max = replayed_max.entry(edit.region_id).or_insert(0);
                    *max = (*max).max(edit.sequence_id);
                    replayed += 1;
                }
                None => skipped += 1,
            }
            Ok(())
        })?;
        let mut pending: HashMap<u64, Region> = regions
            .into_iter()
            .map(|(id, mut region)| {
                region.finish_recovery(replayed_max.get(&id).copied().unwrap_or(0));
                region.attach_wal(Arc::clone(&wal));
                (id, region)
            })
            .collect();

        let maintenance = Maintenance::start(Arc::clone(&wal), options.background_threads);
        let mut tables = BTreeMap::new();
        for (name, entry) in &catalog.tables {
            let mut regions = Vec::with_capacity(entry.regions.len());
            for r in &entry.regions {
                if let Some(region) = pending.remove(&r.id) {
                    let region = Arc::new(region);
                    maintenance.register(&region);
                    regions.push(region);
                }
            }
            tables.insert(
                name.clone(),
                Arc::new(TableState::new(
                    entry.descriptor.clone(),
                    entry.enabled,
                    regions,
                )),
            );
        }
        let recovery = recovery_report(&report, replayed, skipped);
        if recovery.edits_replayed > 0 || recovery.torn_tail.is_some() {
            tracing::info!(
                dir = %dir.display(),
                replayed = recovery.edits_replayed,
                skipped = recovery.edits_skipped,
                torn_tail = ?recovery.torn_tail,
                "recovered from the write-ahead log"
            );
        }
        let db = Database {
            inner: Arc::new(DbInner {
                dir,
                options,
                lock: Mutex::new(Some(lock)),
                wal,
                clock,
                context,
                maintenance,
                catalog: Mutex::new(catalog),
                tables: RwLock::new(tables),
                closed: AtomicBool::new(false),
                recovery,
            }),
        };
        db.inner.maintenance.set_hooks(Arc::new(RegionHooks {
            db: Arc::downgrade(&db.inner),
        }));
        // Regions that opened with links go on rewriting them; parents
        // nobody links to any more (a crash came before the janitor) go.
        for state in db.inner.tables.read().values() {
            for region in state.regions() {
                if region.has_links() {
                    db.inner.maintenance.request_compaction(region.info().id);
                }
            }
        }
        db.collect_retired_regions()?;
        Ok(db)
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// What opening found in the write-ahead log.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.inner.recovery
    }

    /// Creates a table.
    pub fn create_table(&self, descriptor: TableDescriptor) -> Result<()> {
        self.create_table_with_splits(descriptor, &[])
    }

    /// Creates a table pre-split at `split_keys`: `n` keys make `n + 1`
    /// regions, `[-inf, k1), [k1, k2), ..., [kn, +inf)`. The keys must be
    /// non-empty, sorted and distinct.
    pub fn create_table_with_splits(
        &self,
        mut descriptor: TableDescriptor,
        split_keys: &[Bytes],
    ) -> Result<()> {
        self.check_open()?;
        descriptor.validate()?;
        validate_split_keys(split_keys)?;
        let name = descriptor.name().to_string();
        let mut catalog = self.inner.catalog.lock();
        if catalog.tables.contains_key(&name) {
            return Err(Error::TableExists(name));
        }
        let mut updated = catalog.clone();
        let now = self.inner.clock.now_millis();
        let starts = std::iter::once(Bytes::new()).chain(split_keys.iter().cloned());
        let ends = split_keys
            .iter()
            .cloned()
            .chain(std::iter::once(Bytes::new()));
        let entries: Vec<RegionEntry> = starts
            .zip(ends)
            .map(|(start, end)| new_region_entry(&mut updated, &descriptor, start, end, now))
            .collect();
        updated.tables.insert(
            name.clone(),
            TableEntry {
                descriptor: descriptor.clone(),
                enabled: true,
                regions: entries.clone(),
                retired: Vec::new(),
            },
        );
        updated.store(&self.inner.dir)?;
        *catalog = updated;
        let regions = entries
            .iter()
            .map(|e| self.open_region(&name, &descriptor, e))
            .collect::<Result<Vec<_>>>()?;
        self.inner
            .tables
            .write()
            .insert(name, Arc::new(TableState::new(descriptor, true, regions)));
        Ok(())
    }

    /// Creates a table pre-split into `regions` regions by a split
    /// algorithm (HBase's `NUMREGIONS` and `SPLITALGO`).
    pub fn create_table_presplit(
        &self,
        descriptor: TableDescriptor,
        regions: usize,
        algorithm: SplitAlgorithm,
    ) -> Result<()> {
        self.create_table_with_splits(descriptor, &algorithm.split_keys(regions)?)
    }

    /// Names of all tables, sorted.
    pub fn list_tables(&self) -> Vec<String> {
        self.inner.tables.read().keys().cloned().collect()
    }

    /// True when the table exists.
    pub fn table_exists(&self, name: &str) -> bool {
        self.inner.tables.read().contains_key(name)
    }

    /// A handle for reads and writes on a table.
    pub fn table(&self, name: &str) -> Result<Table> {
        self.check_open()?;
        let state = self.state(name)?;
        Ok(Table::new(state))
    }

    /// The table's descriptor, state and regions.
    pub fn describe_table(&self, name: &str) -> Result<TableInfo> {
        let state = self.state(name)?;
        Ok(TableInfo {
            descriptor: state.descriptor(),
            enabled: state.is_enabled(),
            regions: state
                .regions()
                .iter()
                .map(|r| RegionSummary {
                    info: r.info().clone(),
                    load: r.load(),
                    stores: r.store_stats(),
                })
                .collect(),
        })
    }

    /// The table's regions in key order, with their load (HBase's
    /// `list_regions`).
    pub fn list_regions(&self, name: &str) -> Result<Vec<RegionSummary>> {
        Ok(self.describe_table(name)?.regions)
    }

    /// True when the table serves requests.
    pub fn is_table_enabled(&self, name: &str) -> Result<bool> {
        Ok(self.state(name)?.is_enabled())
    }

    /// Lets a disabled table serve requests again.
    pub fn enable_table(&self, name: &str) -> Result<()> {
        self.set_enabled(name, true)
    }

    /// Stops a table from serving requests (needed before drop or truncate).
    pub fn disable_table(&self, name: &str) -> Result<()> {
        self.set_enabled(name, false)
    }

    fn set_enabled(&self, name: &str, enabled: bool) -> Result<()> {
        self.check_open()?;
        let state = self.state(name)?;
        let mut catalog = self.inner.catalog.lock();
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
        updated.store(&self.inner.dir)?;
        *catalog = updated;
        state.set_enabled(enabled);
        Ok(())
    }

    /// Deletes a disabled table and its data.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
        let state = self.state(name)?;
        if state.is_enabled() {
            return Err(Error::TableEnabled(name.to_string()));
        }
        let mut catalog = self.inner.catalog.lock();
        let mut updated = catalog.clone();
        let retired = updated
            .tables
            .remove(name)
            .map(|e| e.retired)
            .unwrap_or_default();
        updated.store(&self.inner.dir)?;
        *catalog = updated;
        self.inner.tables.write().remove(name);
        state.mark_dropped();
        self.discard_regions(&state.regions());
        self.discard_retired(name, &retired);
        Ok(())
    }

    /// Empties a disabled table, keeping its descriptor and region
    /// boundaries; the table stays disabled (as HBase's Admin does).
    pub fn truncate_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
        let state = self.state(name)?;
        if state.is_enabled() {
            return Err(Error::TableEnabled(name.to_string()));
        }
        let descriptor = state.descriptor();
        let mut catalog = self.inner.catalog.lock();
        let now = self.inner.clock.now_millis();
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
        updated.store(&self.inner.dir)?;
        *catalog = updated;
        let regions = new_entries
            .iter()
            .map(|e| self.open_region(name, &descriptor, e))
            .collect::<Result<Vec<_>>>()?;
        let old = state.regions();
        state.replace_regions(regions);
        self.discard_regions(&old);
        self.discard_retired(name, &retired);
        Ok(())
    }

    /// Adds, modifies or deletes column families; works on enabled tables.
    pub fn alter_table(&self, name: &str, changes: &[FamilyChange]) -> Result<()> {
        self.check_open()?;
        let state = self.state(name)?;
        let mut catalog = self.inner.catalog.lock();
        let mut descriptor = state.descriptor();
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
                    if !descriptor.remove_family(f) {
                        return Err(no_such_family(name, f));
                    }
                }
            }
        }
        descriptor.validate()?;
        // Apply to the live regions first: adding a family fixes the sequence
        // id from which its WAL edits count, which the catalog must record.
        let regions = state.regions();
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
        updated.store(&self.inner.dir)?;
        *catalog = updated;
        state.set_descriptor(descriptor);
        Ok(())
    }

    /// Flushes every memstore of the table to store files, now.
    pub fn flush_table(&self, name: &str) -> Result<()> {
        self.check_open()?;
        for region in self.state(name)?.regions() {
            self.inner.maintenance.flush_region(region.info().id)?;
        }
        Ok(())
    }

    /// Compacts every store of the table, now: a major compaction rewrites
    /// all files of each store and drops deleted cells, delete markers,
    /// surplus versions and expired cells; a minor one merges the files the
    /// compaction policy picks.
    pub fn compact_table(&self, name: &str, major: bool) -> Result<()> {
        self.check_open()?;
        for region in self.state(name)?.regions() {
            region.compact(major)?;
        }
        self.collect_retired_regions()
    }

    /// Hits, misses and size of the block cache shared by all stores.
    pub fn block_cache_stats(&self) -> BlockCacheStats {
        self.inner
            .context
            .cache
            .as_ref()
            .map(|c| c.stats())
            .unwrap_or_default()
    }

    /// Writes out everything buffered in the log and closes it. Later calls
    /// on this database or its tables fail with [`Error::Closed`]. Dropping
    /// the last handle without closing is safe too: acknowledged writes are
    /// already in the log.
    pub fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.inner.maintenance.shutdown();
        for state in self.inner.tables.read().values() {
            state.mark_closed();
            // As HBase does when closing a region: the next open replays less.
            for region in state.regions() {
                if let Err(e) = region.flush() {
                    tracing::warn!(region = region.info().id, error = %e, "flush at close failed; the WAL keeps the data");
                }
            }
        }
        if let Err(e) = self.inner.maintenance.retire_wal() {
            tracing::warn!(error = %e, "could not retire WAL segments at close");
        }
        let closed = self.inner.wal.close();
        // Only now may another process (or handle) open the directory.
        self.inner.lock.lock().take();
        closed
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(Error::Closed(format!(
                "database {}",
                self.inner.dir.display()
            )));
        }
        Ok(())
    }

    fn state(&self, name: &str) -> Result<Arc<TableState>> {
        self.inner
            .tables
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::TableNotFound(name.to_string()))
    }

    fn open_region(
        &self,
        table: &str,
        descriptor: &TableDescriptor,
        entry: &RegionEntry,
    ) -> Result<Arc<Region>> {
        let inner = &self.inner;
        let mut region = region_for(
            &inner.dir,
            table,
            descriptor,
            entry,
            &inner.context,
            &inner.clock,
            &inner.options,
        )?;
        region.finish_recovery(0);
        region.attach_wal(Arc::clone(&inner.wal));
        let region = Arc::new(region);
        inner.maintenance.register(&region);
        Ok(region)
    }

    /// Deletes the files of retired regions (their table was dropped or
    /// truncated).
    fn discard_retired(&self, table: &str, retired: &[RegionEntry]) {
        for r in retired {
            remove_region_dir(&region_dir(&self.inner.dir, table, r.id));
        }
    }

    /// Forgets regions that left the catalog and deletes their files.
    fn discard_regions(&self, regions: &[Arc<Region>]) {
        for region in regions {
            self.inner.maintenance.unregister(region.info().id);
            remove_region_dir(region.dir());
        }
    }
}

impl Drop for DbInner {
    fn drop(&mut self) {
        if !self.closed.load(Ordering::SeqCst) {
            if let Err(e) = self.wal.close() {
                tracing::warn!(error = %e, "closing the write-ahead log failed");
            }
        }
    }
}

fn no_such_family(table: &str, family: &str) -> Error {
    Error::NoSuchFamily {
        table: table.to_string(),
        family: family.to_string(),
    }
}

fn lock_directory(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => Err(Error::Locked { path }),
        Err(fs::TryLockError::Error(e)) => Err(Error::io(&path, e)),
    }
}

fn new_region_entry(
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
    }
}

fn remove_region_dir(dir: &Path) {
    if let Err(e) = fs::remove_dir_all(dir) {
        if e.kind() != std::io::ErrorKind::NotFound {
            // The next open removes it as an orphan.
            tracing::warn!(dir = %dir.display(), error = %e, "could not delete the files of a region");
        }
    }
}

/// Where a region keeps its stores: `data/<namespace>/<table>/<region id>`.
fn region_dir(dir: &Path, table: &str, id: u64) -> PathBuf {
    let (namespace, qualifier) = table.split_once(':').unwrap_or(("default", table));
    dir.join(DATA_DIR)
        .join(namespace)
        .join(qualifier)
        .join(id.to_string())
}

/// Deletes region directories whose region is not in the catalog: left by a
/// crash between a drop or truncate and the deletion of the files.
fn remove_orphaned_regions(dir: &Path, catalog: &Catalog) -> Result<()> {
    let mut live = std::collections::HashSet::new();
    for (name, entry) in &catalog.tables {
        // Retired regions stay while serving ones link to their files.
        for r in entry.regions.iter().chain(&entry.retired) {
            live.insert(region_dir(dir, name, r.id));
        }
    }
    let read = |d: &Path| -> Result<Vec<PathBuf>> {
        match fs::read_dir(d) {
            Ok(entries) => entries
                .map(|e| e.map(|e| e.path()).map_err(|err| Error::io(d, err)))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(Error::io(d, e)),
        }
    };
    for namespace in read(&dir.join(DATA_DIR))? {
        for table in read(&namespace)? {
            for region in read(&table)? {
                if region.is_dir() && !live.contains(&region) {
                    tracing::info!(dir = %region.display(), "removing the files of a region no longer in the catalog");
                    fs::remove_dir_all(&region).map_err(|e| Error::io(&region, e))?;
                }
            }
        }
    }
    Ok(())
}

fn region_for(
    dir: &Path,
    table: &str,
    descriptor: &TableDescriptor,
    entry: &RegionEntry,
    context: &StoreContext,
    clock: &Arc<dyn Clock>,
    options: &Options,
) -> Result<Region> {
    let info = RegionInfo {
        id: entry.id,
        table: table.to_string(),
        start_key: entry.start_key.clone(),
        end_key: entry.end_key.clone(),
    };
    let families = descriptor
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
        .collect();
    Region::open(
        info,
        families,
        region_dir(dir, table, entry.id),
        context.clone(),
        Arc::clone(clock),
        options.region_config(),
    )
}

fn recovery_report(report: &ReplayReport, replayed: u64, skipped: u64) -> RecoveryReport {
    RecoveryReport {
        segments: report.segments,
        edits_replayed: replayed,
        edits_skipped: skipped,
        torn_tail: report
            .torn_tail
            .as_ref()
            .map(|t| (t.path.clone(), t.offset)),
    }
}
