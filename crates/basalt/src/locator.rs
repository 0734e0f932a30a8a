//! The region locator: HBase's client role. It knows, per table, which
//! region serves which key range, and `Table` and `Scanner` ask it where a
//! row lives. When a region refuses a request because it moved (a split or
//! merge handed its rows over: `NotServingRegion`), the locator waits for
//! the new locations and routes the request again, as HBase's client
//! re-reads `hbase:meta` and retries.
//!
//! In one process a location is the region itself (`Arc<Region>`); the
//! master publishes changes here when it commits them to the catalog
//! ([`RegionLocator::publish`], [`TableLocation::swap_regions`]). A gateway
//! in a later cluster mode keeps the same interface over locations read
//! from the catalog and answered by remote region servers.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use basalt_engine::Region;
use basalt_types::{Error, Result, TableDescriptor};

/// Where every table's regions are: the client role.
#[derive(Debug, Default)]
pub struct RegionLocator {
    tables: RwLock<BTreeMap<String, Arc<TableLocation>>>,
}

impl RegionLocator {
    /// A locator that knows no table yet.
    pub fn new() -> Self {
        RegionLocator::default()
    }

    /// The table's locations, or `TableNotFound`.
    pub fn table(&self, name: &str) -> Result<Arc<TableLocation>> {
        self.tables
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::TableNotFound(name.to_string()))
    }

    /// Names of the tables it knows, sorted.
    pub fn table_names(&self) -> Vec<String> {
        self.tables.read().keys().cloned().collect()
    }

    /// True when it knows the table.
    pub fn contains(&self, name: &str) -> bool {
        self.tables.read().contains_key(name)
    }

    /// Every table's locations, in name order.
    pub fn tables(&self) -> Vec<(String, Arc<TableLocation>)> {
        self.tables
            .read()
            .iter()
            .map(|(n, t)| (n.clone(), Arc::clone(t)))
            .collect()
    }

    /// The region serving `row` of `table`.
    pub fn locate(&self, table: &str, row: &[u8]) -> Result<Arc<Region>> {
        self.table(table)?.region_for(row)
    }

    /// Makes a table's locations known (a new table, or at start-up).
    pub fn publish(&self, location: Arc<TableLocation>) {
        self.tables.write().insert(location.name.clone(), location);
    }

    /// Forgets a table (dropped); its handles answer `TableNotFound`.
    pub fn forget(&self, name: &str) -> Option<Arc<TableLocation>> {
        let removed = self.tables.write().remove(name);
        if let Some(location) = &removed {
            location.mark_dropped();
        }
        removed
    }
}

const ENABLED: u8 = 0;
const DISABLED: u8 = 1;
const DROPPED: u8 = 2;
const CLOSED: u8 = 3;

/// How long a request waits for a split or merge to finish before it gives
/// up with the `NotServingRegion` error (HBase's client retries similarly).
pub(crate) const HANDOVER_WAIT: Duration = Duration::from_secs(60);

/// The locator's view of one table: its descriptor, whether it serves, and
/// where each key range is served. Shared by every handle to the table.
#[derive(Debug)]
pub struct TableLocation {
    pub(crate) name: String,
    descriptor: RwLock<TableDescriptor>,
    status: AtomicU8,
    /// Sorted by start key; they cover the key space without gaps.
    regions: RwLock<Vec<Arc<Region>>>,
    /// Bumped whenever the regions change (or a hand-over is abandoned):
    /// requests refused by a closing region wait for it to move. Every
    /// write reads it, so it is an atomic; the mutex only pairs with the
    /// condition variable for the (rare) waits.
    pub(crate) region_epoch: AtomicU64,
    epoch_lock: Mutex<()>,
    regions_changed: Condvar,
    /// Reads that met damaged data (a checksum or structure failure, or a
    /// `FAILED_OPEN` region): `status` reports the sum over tables.
    corruption_errors: AtomicU64,
}

impl TableLocation {
    pub(crate) fn new(
        descriptor: TableDescriptor,
        enabled: bool,
        regions: Vec<Arc<Region>>,
    ) -> Self {
        debug_assert!(covers_key_space(&regions));
        TableLocation {
            name: descriptor.name().to_string(),
            descriptor: RwLock::new(descriptor),
            status: AtomicU8::new(if enabled { ENABLED } else { DISABLED }),
            regions: RwLock::new(regions),
            region_epoch: AtomicU64::new(0),
            epoch_lock: Mutex::new(()),
            regions_changed: Condvar::new(),
            corruption_errors: AtomicU64::new(0),
        }
    }

    /// Logs and counts a read that failed on damaged data; passes every
    /// result through unchanged.
    pub(crate) fn note_corruption<T>(&self, result: Result<T>) -> Result<T> {
        if let Err(Error::Corruption {
            path,
            offset,
            message,
        }) = &result
        {
            self.corruption_errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                table = %self.name,
                file = %path.display(),
                offset,
                error = %message,
                "a read met damaged data"
            );
        }
        result
    }

    /// Reads of this table that failed on damaged data since it opened.
    pub(crate) fn corruption_errors(&self) -> u64 {
        self.corruption_errors.load(Ordering::Relaxed)
    }

    pub(crate) fn descriptor(&self) -> TableDescriptor {
        self.descriptor.read().clone()
    }

    pub(crate) fn set_descriptor(&self, descriptor: TableDescriptor) {
        *self.descriptor.write() = descriptor;
    }

    pub(crate) fn is_enabled(&self) -> bool {
        self.status.load(Ordering::SeqCst) == ENABLED
    }

    pub(crate) fn set_enabled(&self, enabled: bool) {
        self.status
            .store(if enabled { ENABLED } else { DISABLED }, Ordering::SeqCst);
    }

    pub(crate) fn mark_dropped(&self) {
        self.status.store(DROPPED, Ordering::SeqCst);
    }

    pub(crate) fn mark_closed(&self) {
        self.status.store(CLOSED, Ordering::SeqCst);
    }

    /// The serving region with this id.
    pub(crate) fn region_by_id(&self, id: u64) -> Option<Arc<Region>> {
        self.regions
            .read()
            .iter()
            .find(|r| r.info().id == id)
            .cloned()
    }

    pub(crate) fn regions(&self) -> Vec<Arc<Region>> {
        self.regions.read().clone()
    }

    pub(crate) fn replace_regions(&self, regions: Vec<Arc<Region>>) {
        debug_assert!(
            covers_key_space(&regions),
            "regions of {} must cover the key space",
            self.name
        );
        *self.regions.write() = regions;
        self.announce_region_change();
    }

    /// Puts `replacements` in the place of the regions with ids `old`
    /// (adjacent ones), keeping the key order.
    pub(crate) fn swap_regions(&self, old: &[u64], replacements: Vec<Arc<Region>>) {
        {
            let mut regions = self.regions.write();
            let Some(at) = regions.iter().position(|r| old.contains(&r.info().id)) else {
                return;
            };
            regions.retain(|r| !old.contains(&r.info().id));
            let tail = regions.split_off(at);
            regions.extend(replacements);
            regions.extend(tail);
            debug_assert!(
                covers_key_space(&regions),
                "a hand-over of {} must leave its key space covered",
                self.name
            );
        }
        self.announce_region_change();
    }

    /// Wakes requests waiting for a split or merge to end.
    pub(crate) fn announce_region_change(&self) {
        // Under the lock, so a waiter between its check and its wait cannot
        // miss the change.
        let _guard = self.epoch_lock.lock();
        self.region_epoch.fetch_add(1, Ordering::SeqCst);
        self.regions_changed.notify_all();
    }

    /// Runs `op` on the region owning `row`, routing it again while a
    /// region refuses it because it is handing its rows over.
    pub(crate) fn on_region<T>(&self, row: &[u8], op: impl Fn(&Region) -> Result<T>) -> Result<T> {
        let deadline = Instant::now() + HANDOVER_WAIT;
        loop {
            let epoch = self.region_epoch.load(Ordering::SeqCst);
            let region = self.region_for(row)?;
            match op(&region) {
                Err(Error::NotServingRegion(m)) => {
                    self.wait_for_region_change(epoch, deadline, m)?
                }
                other => return other,
            }
        }
    }

    pub(crate) fn wait_for_region_change(
        &self,
        epoch: u64,
        deadline: Instant,
        message: String,
    ) -> Result<()> {
        let mut guard = self.epoch_lock.lock();
        while self.region_epoch.load(Ordering::SeqCst) == epoch {
            if Instant::now() >= deadline {
                return Err(Error::NotServingRegion(message));
            }
            // Bounded: a missed wake-up costs at most this.
            self.regions_changed
                .wait_for(&mut guard, Duration::from_millis(20));
        }
        Ok(())
    }

    /// The serving region holding `row`.
    pub(crate) fn region_holding(&self, row: &[u8]) -> Result<Arc<Region>> {
        self.region_for(row)
    }

    pub(crate) fn check_serving(&self) -> Result<()> {
        match self.status.load(Ordering::SeqCst) {
            ENABLED => Ok(()),
            DISABLED => Err(Error::TableDisabled(self.name.clone())),
            DROPPED => Err(Error::TableNotFound(self.name.clone())),
            _ => Err(Error::Closed(format!("table {}", self.name))),
        }
    }

    /// The region owning `row`.
    pub(crate) fn region_for(&self, row: &[u8]) -> Result<Arc<Region>> {
        self.check_serving()?;
        let regions = self.regions.read();
        // The last region whose start key is <= row.
        let index = regions
            .partition_point(|r| &r.info().start_key[..] <= row)
            .saturating_sub(1);
        regions
            .get(index)
            .filter(|r| r.info().contains(row))
            .cloned()
            .ok_or_else(|| {
                Error::invalid(format!("no region of table {} holds the row", self.name))
            })
    }
}

/// The key-space invariant of the catalog, over live regions: a table's
/// region list is only ever swapped whole, so every change can be checked.
fn covers_key_space(regions: &[Arc<Region>]) -> bool {
    crate::catalog::covers_key_space(
        regions
            .iter()
            .map(|r| (&r.info().start_key[..], &r.info().end_key[..])),
    )
}
