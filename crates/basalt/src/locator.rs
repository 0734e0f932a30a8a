//! The region locator: HBase's client role. It knows, per table, which
//! region serves which key range, and `Table` and `Scanner` ask it where a
//! row lives. When a region refuses a request because it moved (a split or
//! merge handed its rows over: `NotServingRegion`), the locator waits for
//! the new locations and routes the request again, as HBase's client
//! re-reads `hbase:meta` and retries.
//!
//! A location is a [`RegionRoute`]: in one process always the region
//! itself (`RegionRoute::Local`, an `Arc<Region>` called directly); in a
//! cluster, a region open on another server (`RegionRoute::Remote`), which
//! the table reaches through the [`RegionCaller`] installed here
//! (`remote.rs`). The master publishes changes when it commits them to
//! the catalog ([`RegionLocator::publish`], [`TableLocation::swap_regions`]);
//! the cluster layer publishes routes read from the catalog
//! ([`TableLocation::with_routes`]) and, asked through the refresher, again
//! when a remote server says a region moved.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};

use basalt_engine::{Region, RegionInfo};
use basalt_types::{Error, ErrorKind, Result, TableDescriptor};

use crate::region_calls::ServedScanners;
use crate::remote::{RegionAnswer, RegionCall, RegionCaller, ServerAddress};

/// Where one region of a table is served.
#[derive(Debug, Clone)]
pub enum RegionRoute {
    /// Open in this process: called directly.
    Local(Arc<Region>),
    /// Open on another region server: reached by region calls.
    Remote {
        /// The region's identity and key range.
        info: RegionInfo,
        /// The server that has it open.
        server: ServerAddress,
    },
    /// Open nowhere right now (cluster mode: being assigned, or its
    /// server died and it is being recovered): requests wait for a route.
    Offline {
        /// The region's identity and key range.
        info: RegionInfo,
    },
}

impl RegionRoute {
    /// The region's identity and key range.
    pub fn info(&self) -> &RegionInfo {
        match self {
            RegionRoute::Local(region) => region.info(),
            RegionRoute::Remote { info, .. } | RegionRoute::Offline { info } => info,
        }
    }

    /// The region, when it is open in this process.
    pub fn local(&self) -> Option<&Arc<Region>> {
        match self {
            RegionRoute::Local(region) => Some(region),
            RegionRoute::Remote { .. } | RegionRoute::Offline { .. } => None,
        }
    }

    /// The server, when the region is open on another one.
    pub fn server(&self) -> Option<&ServerAddress> {
        match self {
            RegionRoute::Local(_) | RegionRoute::Offline { .. } => None,
            RegionRoute::Remote { server, .. } => Some(server),
        }
    }

    /// True when the routes come from a cluster's catalog (the region is
    /// elsewhere or nowhere): a refusal asks the cluster for fresh routes.
    fn is_routed(&self) -> bool {
        !matches!(self, RegionRoute::Local(_))
    }

    /// The refusal of a request on a region open nowhere.
    pub(crate) fn offline_error(info: &RegionInfo) -> Error {
        Error::NotServingRegion(format!(
            "region {} of table {} is not open on any server right now (being assigned)",
            info.encoded_name(),
            info.table
        ))
    }
}

/// Called with a table's name when its routes turned out stale.
pub type RouteRefresher = Arc<dyn Fn(&str) + Send + Sync>;

/// What remote routes need, shared by the locator and every table it
/// published: the caller and the refresher the cluster layer installed.
#[derive(Default)]
struct RemoteHooks {
    caller: OnceLock<Arc<dyn RegionCaller>>,
    refresher: RwLock<Option<RouteRefresher>>,
    /// How long a request whose server cannot be reached waits for the
    /// routes to change (milliseconds; 0: it fails at once).
    unreachable_wait_ms: AtomicU64,
}

impl std::fmt::Debug for RemoteHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteHooks")
            .field("caller", &self.caller.get())
            .field("refresher", &self.refresher.read().is_some())
            .finish()
    }
}

/// Where every table's regions are: the client role.
#[derive(Debug, Default)]
pub struct RegionLocator {
    tables: RwLock<BTreeMap<String, Arc<TableLocation>>>,
    hooks: Arc<RemoteHooks>,
    /// The serving half of region calls: scanners other servers opened
    /// here (`region_calls.rs`). Kept beside the caller so one object holds
    /// this process's part of the protocol.
    pub(crate) served: ServedScanners,
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

    /// The region serving `row` of `table` when it is open in this
    /// process; `NotServingRegion` when another server has it.
    pub fn locate(&self, table: &str, row: &[u8]) -> Result<Arc<Region>> {
        self.table(table)?.region_for(row)
    }

    /// Where the region holding `row` of `table` is served.
    pub fn route(&self, table: &str, row: &[u8]) -> Result<RegionRoute> {
        self.table(table)?.route_for(row)
    }

    /// Makes a table's locations known: a new table, start-up, or (the
    /// cluster layer, after a catalog change) new routes of a known table.
    /// A known table keeps its `TableLocation`, which takes the new one's
    /// descriptor, state and routes, so handles already given out see them
    /// and requests waiting for a region to move wake up.
    pub fn publish(&self, location: Arc<TableLocation>) {
        let mut tables = self.tables.write();
        match tables.get(&location.name) {
            Some(known) if !Arc::ptr_eq(known, &location) => known.adopt(&location),
            _ => {
                let _ = location.hooks.set(Arc::clone(&self.hooks));
                tables.insert(location.name.clone(), location);
            }
        }
    }

    /// Installs the caller that carries region calls to other servers.
    /// Once: a second call is refused (a caller may hold connections that
    /// calls in flight use).
    pub fn set_caller(&self, caller: Arc<dyn RegionCaller>) -> Result<()> {
        self.hooks
            .caller
            .set(caller)
            .map_err(|_| Error::invalid("the locator's region caller is set already"))
    }

    /// Installs what is called, with the table's name, when a remote
    /// server answers that it does not serve a region (it moved) or cannot
    /// be reached: it should re-read the catalog and [`publish`] fresh
    /// routes, before returning or soon after. Replaces an earlier one.
    ///
    /// [`publish`]: RegionLocator::publish
    pub fn set_refresher(&self, refresher: RouteRefresher) {
        *self.hooks.refresher.write() = Some(refresher);
    }

    /// How long a request whose server cannot be reached (a transport
    /// failure) waits for fresh routes before it fails: a cluster member
    /// sets it above its ZooKeeper session timeout, so a gateway's callers
    /// see a dead server's regions reopen elsewhere as a pause. Default 0:
    /// ask for fresh routes once, then fail with the error.
    pub fn set_unreachable_wait(&self, wait: Duration) {
        let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
        self.hooks.unreachable_wait_ms.store(ms, Ordering::SeqCst);
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
    routes: RwLock<Vec<RegionRoute>>,
    /// The locator's caller and refresher, set when it is published.
    hooks: OnceLock<Arc<RemoteHooks>>,
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
    /// Scans with a filter on a column's value through this process, by
    /// tested column: what `basalt keys analyze` turns into index advice.
    filter_scans: Mutex<BTreeMap<(Bytes, Bytes), FilterScanStats>>,
}

/// The filtered scans of a table that tested one column's value
/// (`Filter::tested_columns`), as this process served them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FilterScanStats {
    /// The tested column's family.
    pub family: Bytes,
    /// The tested column's qualifier.
    pub qualifier: Bytes,
    /// Scans that ended.
    pub scans: u64,
    /// Rows they read (in regions this process serves).
    pub rows_scanned: u64,
    /// Rows they returned.
    pub rows_returned: u64,
}

/// Tested columns remembered per table; past it, new columns are not
/// counted (a table's filters test a handful of columns).
const MAX_FILTER_SCAN_COLUMNS: usize = 64;

impl TableLocation {
    /// A table's locations with each region's route: what the cluster
    /// layer builds from the catalog (local for regions open here, remote
    /// for the others) and hands to [`RegionLocator::publish`]. The routes
    /// must be sorted by start key and cover the key space without gaps.
    pub fn with_routes(
        descriptor: TableDescriptor,
        enabled: bool,
        routes: Vec<RegionRoute>,
    ) -> Self {
        debug_assert!(covers_key_space(&routes));
        TableLocation {
            name: descriptor.name().to_string(),
            descriptor: RwLock::new(descriptor),
            status: AtomicU8::new(if enabled { ENABLED } else { DISABLED }),
            routes: RwLock::new(routes),
            hooks: OnceLock::new(),
            region_epoch: AtomicU64::new(0),
            epoch_lock: Mutex::new(()),
            regions_changed: Condvar::new(),
            corruption_errors: AtomicU64::new(0),
            filter_scans: Mutex::new(BTreeMap::new()),
        }
    }

    /// Counts a scan that ended, whose filter tested `columns`' values.
    pub(crate) fn note_filter_scan(
        &self,
        columns: &[(Bytes, Bytes)],
        rows_scanned: u64,
        rows_returned: u64,
    ) {
        let mut scans = self.filter_scans.lock();
        for (family, qualifier) in columns {
            let key = (family.clone(), qualifier.clone());
            if !scans.contains_key(&key) && scans.len() >= MAX_FILTER_SCAN_COLUMNS {
                continue;
            }
            let stats = scans.entry(key).or_insert_with(|| FilterScanStats {
                family: family.clone(),
                qualifier: qualifier.clone(),
                ..FilterScanStats::default()
            });
            stats.scans += 1;
            stats.rows_scanned += rows_scanned;
            stats.rows_returned += rows_returned;
        }
    }

    /// The filtered scans counted so far, by tested column.
    pub fn filter_scans(&self) -> Vec<FilterScanStats> {
        self.filter_scans.lock().values().cloned().collect()
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

    pub(crate) fn mark_dropped(&self) {
        self.status.store(DROPPED, Ordering::SeqCst);
    }

    pub(crate) fn mark_closed(&self) {
        self.status.store(CLOSED, Ordering::SeqCst);
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every region's route, in key order.
    pub fn routes(&self) -> Vec<RegionRoute> {
        self.routes.read().clone()
    }

    /// Replaces every route (sorted by start key, covering the key space)
    /// and wakes requests waiting for regions to move.
    pub fn replace_routes(&self, routes: Vec<RegionRoute>) {
        debug_assert!(
            covers_key_space(&routes),
            "routes of {} must cover the key space",
            self.name
        );
        *self.routes.write() = routes;
        self.announce_region_change();
    }

    /// Takes another location's descriptor, state and routes (a publish of
    /// a table already known). Requests waiting for regions to move are
    /// woken only when something changed: a refresher that publishes the
    /// same routes again must not send them round at once.
    fn adopt(&self, other: &TableLocation) {
        self.set_descriptor(other.descriptor());
        let status = other.status.load(Ordering::SeqCst);
        let status_changed = self.status.swap(status, Ordering::SeqCst) != status;
        let routes = other.routes();
        let routes_changed = {
            let mine = self.routes.read();
            mine.len() != routes.len() || mine.iter().zip(&routes).any(|(a, b)| !same_route(a, b))
        };
        if routes_changed {
            self.replace_routes(routes);
        } else if status_changed {
            self.announce_region_change();
        }
    }

    /// Wakes requests waiting for a split or merge to end.
    pub(crate) fn announce_region_change(&self) {
        // Under the lock, so a waiter between its check and its wait cannot
        // miss the change.
        let _guard = self.epoch_lock.lock();
        self.region_epoch.fetch_add(1, Ordering::SeqCst);
        self.regions_changed.notify_all();
    }

    /// Runs `op` on the route of `row`, routing it again while a region
    /// refuses it because it is handing its rows over or has moved.
    pub(crate) fn on_route<T>(
        &self,
        row: &[u8],
        op: impl Fn(&RegionRoute) -> Result<T>,
    ) -> Result<T> {
        // Taken at the first refusal only: the common path reads no clock.
        let mut deadline = None;
        loop {
            let epoch = self.region_epoch.load(Ordering::SeqCst);
            let route = self.route_for(row)?;
            match op(&route) {
                Err(e) => self.after_failure(&route, epoch, &mut deadline, e)?,
                ok => return ok,
            }
        }
    }

    /// Decides what follows a failed request on `route`, sent when the
    /// regions were at `epoch`: `Ok` to route it again, or the error to
    /// return.
    ///
    /// - `NotServingRegion`: the region is handing its rows over (local) or
    ///   has moved (remote: the refresher is asked for fresh routes); wait
    ///   for the routes to change until the hand-over deadline.
    /// - A transport failure on a remote route (`Io`): the same, for at
    ///   most the locator's unreachable wait (default none: fail now with
    ///   the error, which names the server).
    /// - Anything else is the answer.
    pub(crate) fn after_failure(
        &self,
        route: &RegionRoute,
        epoch: u64,
        deadline: &mut Option<Instant>,
        error: Error,
    ) -> Result<()> {
        // A memory-only attempt must neither refresh nor wait: the gateway
        // runs it again on its blocking pool.
        if basalt_engine::read_tier::is_memory_only() {
            return Err(error);
        }
        let remote = route.is_routed();
        // A region that moved (remote `NotServingRegion`) and a server that
        // cannot be reached (remote `Io`: it died, or the region is being
        // reopened elsewhere after its death) both wait for the catalog to
        // name where the region is now: the master reassigns within the
        // ZooKeeper session timeout, so gateway callers see a pause, not
        // an error (`docs/cluster.md`, "Routing").
        let unreachable = route.server().is_some() && error.kind() == ErrorKind::Io;
        let moved = matches!(error, Error::NotServingRegion(_)) || unreachable;
        match error {
            error if remote && moved => {
                let wait = if unreachable {
                    self.unreachable_wait()
                } else {
                    HANDOVER_WAIT
                };
                let deadline = *deadline.get_or_insert_with(|| Instant::now() + wait);
                // The catalog may not name the new server yet (the master
                // is still assigning the region): ask again, less and less
                // often, until the routes change or the deadline passes.
                let mut pause = Duration::from_millis(25);
                loop {
                    self.refresh();
                    let until = (Instant::now() + pause).min(deadline);
                    if self.wait_for_change_until(epoch, until) {
                        return Ok(());
                    }
                    if Instant::now() >= deadline {
                        return Err(error);
                    }
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
            }
            Error::NotServingRegion(message) => {
                let deadline = *deadline.get_or_insert_with(|| Instant::now() + HANDOVER_WAIT);
                self.wait_for_region_change(epoch, deadline, message)
            }
            error => Err(error),
        }
    }

    fn unreachable_wait(&self) -> Duration {
        let ms = self
            .hooks
            .get()
            .map_or(0, |h| h.unreachable_wait_ms.load(Ordering::SeqCst));
        Duration::from_millis(ms)
    }

    /// Asks the cluster layer for fresh routes of this table.
    pub(crate) fn refresh(&self) {
        let refresher = self.hooks.get().and_then(|h| h.refresher.read().clone());
        if let Some(refresh) = refresher {
            refresh(&self.name);
        }
    }

    /// Sends `call` about `info`'s region to `server`.
    pub(crate) fn call_remote(
        &self,
        info: &RegionInfo,
        server: &ServerAddress,
        call: RegionCall,
    ) -> Result<RegionAnswer> {
        // A call to another server is this path's file read: a gateway's
        // memory-only attempt hands it to the blocking pool instead.
        basalt_engine::read_tier::before_file_read(std::path::Path::new(&server.to_string()))?;
        let caller = self
            .hooks
            .get()
            .and_then(|h| h.caller.get())
            .ok_or_else(|| {
                Error::invalid(format!(
                    "region {} of table {} is served by {server}, and this process has no \
                     region caller to reach it (RegionLocator::set_caller)",
                    info.id, self.name
                ))
            })?;
        caller.call(server, &self.name, info.id, call)
    }

    pub(crate) fn wait_for_region_change(
        &self,
        epoch: u64,
        deadline: Instant,
        message: String,
    ) -> Result<()> {
        if self.wait_for_change_until(epoch, deadline) {
            Ok(())
        } else {
            Err(Error::NotServingRegion(message))
        }
    }

    /// Waits until the regions are no longer at `epoch` (true) or `until`
    /// passes (false).
    fn wait_for_change_until(&self, epoch: u64, until: Instant) -> bool {
        let mut guard = self.epoch_lock.lock();
        while self.region_epoch.load(Ordering::SeqCst) == epoch {
            let now = Instant::now();
            if now >= until {
                return false;
            }
            // Bounded: a missed wake-up costs at most this.
            let wait = (until - now).min(Duration::from_millis(20));
            self.regions_changed.wait_for(&mut guard, wait);
        }
        true
    }

    pub(crate) fn check_serving(&self) -> Result<()> {
        match self.status.load(Ordering::SeqCst) {
            ENABLED => Ok(()),
            DISABLED => Err(Error::TableDisabled(self.name.clone())),
            DROPPED => Err(Error::TableNotFound(self.name.clone())),
            _ => Err(Error::Closed(format!("table {}", self.name))),
        }
    }

    /// The region owning `row`, when it is open in this process;
    /// `NotServingRegion` naming the server when another one has it.
    pub(crate) fn region_for(&self, row: &[u8]) -> Result<Arc<Region>> {
        match self.route_for(row)? {
            RegionRoute::Local(region) => Ok(region),
            RegionRoute::Remote { info, server } => Err(Error::NotServingRegion(format!(
                "region {} of table {} is served by {server}, not by this process",
                info.id, self.name
            ))),
            RegionRoute::Offline { info } => Err(RegionRoute::offline_error(&info)),
        }
    }

    /// The route of the region owning `row`.
    pub(crate) fn route_for(&self, row: &[u8]) -> Result<RegionRoute> {
        self.check_serving()?;
        let routes = self.routes.read();
        // The last region whose start key is <= row.
        let index = routes
            .partition_point(|r| &r.info().start_key[..] <= row)
            .saturating_sub(1);
        routes
            .get(index)
            .filter(|r| r.info().contains(row))
            .cloned()
            .ok_or_else(|| {
                Error::invalid(format!("no region of table {} holds the row", self.name))
            })
    }
}

/// True when two routes lead to the same region on the same server.
pub(crate) fn same_route(a: &RegionRoute, b: &RegionRoute) -> bool {
    match (a, b) {
        (RegionRoute::Local(a), RegionRoute::Local(b)) => Arc::ptr_eq(a, b),
        (
            RegionRoute::Remote {
                info: a,
                server: sa,
            },
            RegionRoute::Remote {
                info: b,
                server: sb,
            },
        ) => a == b && sa == sb,
        (RegionRoute::Offline { info: a }, RegionRoute::Offline { info: b }) => a == b,
        _ => false,
    }
}

/// The key-space invariant of the catalog, over live routes: a table's
/// route list is only ever swapped whole, so every change can be checked.
fn covers_key_space(routes: &[RegionRoute]) -> bool {
    crate::catalog::covers_key_space(
        routes
            .iter()
            .map(|r| (&r.info().start_key[..], &r.info().end_key[..])),
    )
}
