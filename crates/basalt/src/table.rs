//! Table handles: reads and writes routed to the region owning each row.
//!
//! Each request finds its row's route in the table's location. A local
//! route calls the region directly (one process: no serialisation, no
//! copy); a remote one sends a region call to the server that has the
//! region open (`remote.rs`). Either way the request is routed again while
//! a region refuses it because its rows moved (`TableLocation::on_route`).
//!
//! Every public request method times itself into the database's latency
//! histograms (`metrics.rs`), whatever the route: each gateway and the
//! embedded API go through here, so each request is recorded once.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use basalt_engine::region::scan_range;
use basalt_engine::scan::{RegionScanner, RowRange, ScanMetrics};
use basalt_engine::{Region, RegionInfo};
use basalt_types::filter::CellFilter;
use basalt_types::query::ColumnSelection;
use basalt_types::{
    Append, CheckAndMutate, Delete, Error, ErrorKind, Get, Increment, Mutation, Put, Result,
    RowMutations, RowResult, Scan, TableDescriptor,
};

use crate::access::{AccessCheck, Action, ReadAccess};
use crate::cluster::MasterLink;
use crate::locator::{same_route, RegionRoute, TableLocation};
use crate::metrics::{elapsed_micros, Operation, RequestLatencies};
use crate::remote::{unexpected, RegionAnswer, RegionCall, RemoteError, ServerAddress};

/// A handle for reads and writes on one table. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Table {
    state: Arc<TableLocation>,
    latencies: Arc<RequestLatencies>,
    /// The caller every request is checked for (`crate::access`); `None`
    /// for a trusted handle.
    access: Option<TableAccess>,
}

/// A caller's checks, and where the newest grants are read.
#[derive(Clone)]
struct TableAccess {
    check: AccessCheck,
    grants: Arc<dyn MasterLink>,
}

impl std::fmt::Debug for TableAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableAccess")
            .field("caller", self.check.caller())
            .finish()
    }
}

/// Families and qualifiers a request touches (an empty set: the whole
/// family), as `AccessCheck` takes them.
type Columns = BTreeMap<Bytes, BTreeSet<Bytes>>;

fn columns_of<'a>(pairs: impl IntoIterator<Item = (&'a Bytes, &'a Bytes)>) -> Columns {
    let mut columns = Columns::new();
    for (family, qualifier) in pairs {
        columns
            .entry(family.clone())
            .or_default()
            .insert(qualifier.clone());
    }
    columns
}

fn mutation_columns<'a>(mutations: impl IntoIterator<Item = &'a Mutation>) -> Columns {
    let mut columns = Columns::new();
    for mutation in mutations {
        mutation.visit_columns(|family, qualifier| {
            columns
                .entry(family.clone())
                .or_default()
                .insert(qualifier.clone());
        });
    }
    columns
}

/// A column selection as the checks read it.
fn selection_columns(selection: &ColumnSelection) -> Columns {
    selection
        .families()
        .iter()
        .map(|(family, qualifiers)| (family.clone(), qualifiers.clone().unwrap_or_default()))
        .collect()
}

/// The part of a selection a caller may read.
fn narrowed(families: &BTreeSet<Bytes>, columns: &Columns) -> ColumnSelection {
    let mut selection = ColumnSelection::default();
    for family in families {
        selection.add_family(family.clone());
    }
    for (family, qualifiers) in columns {
        for qualifier in qualifiers {
            selection.add_column(family.clone(), qualifier.clone());
        }
    }
    selection
}

/// What a remote answer must be for each kind of call.
fn expect_done(server: &ServerAddress, call: &str, answer: RegionAnswer) -> Result<()> {
    match answer {
        RegionAnswer::Done => Ok(()),
        other => Err(unexpected(server, call, &other)),
    }
}

fn expect_row(server: &ServerAddress, call: &str, answer: RegionAnswer) -> Result<RowResult> {
    match answer {
        RegionAnswer::Row(row) => Ok(row),
        other => Err(unexpected(server, call, &other)),
    }
}

impl Table {
    pub(crate) fn new(state: Arc<TableLocation>, latencies: Arc<RequestLatencies>) -> Self {
        Table {
            state,
            latencies,
            access: None,
        }
    }

    /// The same table, every request checked for `check`'s caller
    /// against the grants `grants` holds.
    pub(crate) fn checked(mut self, check: AccessCheck, grants: Arc<dyn MasterLink>) -> Self {
        self.access = Some(TableAccess { check, grants });
        self
    }

    /// Refuses a write of the columns `columns` lists (for `action`) the
    /// caller may not do. The list is made only for a checked handle: a
    /// trusted one's writes pay nothing.
    fn check_write(
        &self,
        operation: &str,
        action: Action,
        columns: impl FnOnce() -> Columns,
    ) -> Result<()> {
        match &self.access {
            None => Ok(()),
            Some(access) => access.check.require_columns(
                &access.grants.catalog().permissions,
                operation,
                action,
                &self.state.name,
                &columns(),
            ),
        }
    }

    /// The part of `selection` the caller may read: `None` for all of
    /// it, the narrowed selection, or a refusal when none is readable.
    fn readable(
        &self,
        operation: &str,
        selection: &ColumnSelection,
    ) -> Result<Option<ColumnSelection>> {
        let Some(access) = &self.access else {
            return Ok(None);
        };
        let families: Vec<Bytes> = self
            .state
            .descriptor()
            .families()
            .iter()
            .map(|family| Bytes::copy_from_slice(family.name().as_bytes()))
            .collect();
        match access.check.read_access(
            &access.grants.catalog().permissions,
            operation,
            &self.state.name,
            &selection_columns(selection),
            &families,
        )? {
            ReadAccess::All => Ok(None),
            ReadAccess::Only { families, columns } => Ok(Some(narrowed(&families, &columns))),
        }
    }

    /// The table name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// The table's current descriptor.
    pub fn descriptor(&self) -> TableDescriptor {
        self.state.descriptor()
    }

    /// Runs a request on the route of `row`: `local` on a region here, or
    /// the call `remote` builds, sent to the server, its answer read by
    /// `answer`.
    fn route<T>(
        &self,
        row: &[u8],
        local: impl Fn(&Region) -> Result<T>,
        remote: impl Fn() -> RegionCall,
        answer: impl Fn(&ServerAddress, &str, RegionAnswer) -> Result<T>,
    ) -> Result<T> {
        self.state.on_route(row, |route| match route {
            RegionRoute::Local(region) => local(region),
            RegionRoute::Remote { info, server } => {
                let call = remote();
                let name = call.name();
                answer(server, name, self.state.call_remote(info, server, call)?)
            }
            RegionRoute::Offline { info } => Err(RegionRoute::offline_error(info)),
        })
    }

    /// Reads one row. A missing row gives an empty result, not an error.
    pub fn get(&self, get: &Get) -> Result<RowResult> {
        if let Some(filter) = &get.filter {
            filter.check_limits()?;
        }
        let narrowed;
        let get = match self.readable("get", &get.columns)? {
            None => get,
            Some(columns) => {
                narrowed = Get {
                    columns,
                    ..get.clone()
                };
                &narrowed
            }
        };
        self.latencies.time(Operation::Get, || {
            // Reads are never refused by a local region (a closing
            // region's data is frozen); a remote one may have moved.
            let result = self.route(
                &get.row,
                |r| r.get(get),
                || RegionCall::Get(get.clone()),
                expect_row,
            );
            self.state.note_corruption(result)
        })
    }

    /// True when the get would return at least one cell.
    pub fn exists(&self, get: &Get) -> Result<bool> {
        Ok(!self.get(get)?.is_empty())
    }

    /// Writes cells to one row atomically.
    pub fn put(&self, put: &Put) -> Result<()> {
        self.check_write("put", Action::Write, || {
            columns_of(put.cells().iter().map(|c| (&c.family, &c.qualifier)))
        })?;
        self.latencies.time(Operation::Put, || {
            self.route(
                put.row(),
                |r| r.put(put),
                || RegionCall::Put(put.clone()),
                expect_done,
            )
        })
    }

    /// Deletes a row, families, columns or versions.
    pub fn delete(&self, delete: &Delete) -> Result<()> {
        self.check_write("delete", Action::Write, || {
            columns_of(delete.markers().iter().map(|c| (&c.family, &c.qualifier)))
        })?;
        self.latencies.time(Operation::Delete, || {
            self.route(
                delete.row(),
                |r| r.delete(delete),
                || RegionCall::Delete(delete.clone()),
                expect_done,
            )
        })
    }

    /// Applies puts, deletes, increments and appends of one row
    /// atomically; returns the new values of its increments and appends
    /// (empty when it has none), as HBase 2.4+'s `mutateRow` does.
    pub fn mutate_row(&self, mutations: &RowMutations) -> Result<RowResult> {
        self.check_write("mutateRow", Action::Write, || {
            mutation_columns(mutations.mutations())
        })?;
        self.latencies.time(Operation::MutateRow, || {
            self.route(
                mutations.row(),
                |r| r.mutate_row(mutations),
                || RegionCall::MutateRow(mutations.clone()),
                expect_row,
            )
        })
    }

    /// Adds to 8-byte big-endian counters; returns the new values.
    pub fn increment(&self, increment: &Increment) -> Result<RowResult> {
        self.check_write("increment", Action::Write, || {
            columns_of(increment.columns().iter().map(|(f, q, _)| (f, q)))
        })?;
        self.latencies.time(Operation::Increment, || {
            self.route(
                increment.row(),
                |r| r.increment(increment),
                || RegionCall::Increment(increment.clone()),
                expect_row,
            )
        })
    }

    /// Adds `delta` to one counter and returns its new value.
    pub fn increment_column(
        &self,
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        delta: i64,
    ) -> Result<i64> {
        let result = self.increment(&Increment::new(row).add(family, qualifier, delta))?;
        let value = result
            .cells
            .first()
            .map(|c| c.value.clone())
            .ok_or_else(|| Error::invalid("increment returned no cell"))?;
        let bytes: [u8; 8] = value[..]
            .try_into()
            .map_err(|_| Error::NotALong { len: value.len() })?;
        Ok(i64::from_be_bytes(bytes))
    }

    /// Appends to values; returns the new values.
    pub fn append(&self, append: &Append) -> Result<RowResult> {
        self.check_write("append", Action::Write, || {
            columns_of(append.columns().iter().map(|(f, q, _)| (f, q)))
        })?;
        self.latencies.time(Operation::Append, || {
            self.route(
                append.row(),
                |r| r.append(append),
                || RegionCall::Append(append.clone()),
                expect_row,
            )
        })
    }

    /// Applies the mutations if the check holds, atomically; returns whether
    /// they were applied.
    pub fn check_and_mutate(&self, check: &CheckAndMutate) -> Result<bool> {
        self.check_and_mutate_returning(check)
            .map(|(applied, _)| applied)
    }

    /// [`Table::check_and_mutate`], also returning the new values of the
    /// mutations' increments and appends when they were applied (HBase's
    /// `CheckAndMutateResult`).
    pub fn check_and_mutate_returning(&self, check: &CheckAndMutate) -> Result<(bool, RowResult)> {
        // HBase needs READ and WRITE on the checked column, and the
        // mutations are writes of their own columns.
        let checked = || columns_of([(&check.family, &check.qualifier)]);
        self.check_write("checkAndMutate", Action::Read, checked)?;
        self.check_write("checkAndMutate", Action::Write, checked)?;
        self.check_write("checkAndMutate", Action::Write, || {
            mutation_columns(check.mutations.mutations())
        })?;
        self.latencies.time(Operation::CheckAndMutate, || {
            self.route(
                &check.row,
                |r| r.check_and_mutate_returning(check),
                || RegionCall::CheckAndMutate(check.clone()),
                |server, call, answer| match answer {
                    RegionAnswer::Applied { applied, result } => Ok((applied, result)),
                    other => Err(unexpected(server, call, &other)),
                },
            )
        })
    }

    /// Applies many mutations: each is atomic on its row, the batch is not.
    /// Mutations going to the same region share one log sync (one region
    /// call for a region on another server).
    pub fn batch(&self, mutations: &[Mutation]) -> Vec<Result<()>> {
        if self.access.is_none() {
            return self
                .latencies
                .time(Operation::Batch, || self.batch_untimed(mutations));
        }
        // Each mutation is checked on its own; a refused one fails alone,
        // as each action of HBase's multi does.
        let checks: Vec<Result<()>> = mutations
            .iter()
            .map(|m| self.check_write("batch", Action::Write, || mutation_columns([m])))
            .collect();
        let allowed: Vec<Mutation> = mutations
            .iter()
            .zip(&checks)
            .filter(|(_, check)| check.is_ok())
            .map(|(m, _)| m.clone())
            .collect();
        let mut done = self
            .latencies
            .time(Operation::Batch, || self.batch_untimed(&allowed))
            .into_iter();
        checks
            .into_iter()
            .map(|check| check.and_then(|()| done.next().unwrap_or(Ok(()))))
            .collect()
    }

    fn batch_untimed(&self, mutations: &[Mutation]) -> Vec<Result<()>> {
        let mut results: Vec<Option<Result<()>>> = (0..mutations.len()).map(|_| None).collect();
        let mut pending: Vec<usize> = (0..mutations.len()).collect();
        let mut deadline = None;
        // Mutations refused by a region handing its rows over (or moved
        // away) go round again once the routes have changed.
        while !pending.is_empty() {
            let epoch = self.state.region_epoch.load(Ordering::SeqCst);
            let mut by_route: Vec<(RegionRoute, Vec<usize>)> = Vec::new();
            for &i in &pending {
                match self.state.route_for(mutations[i].row()) {
                    Ok(route) => match by_route.iter_mut().find(|(r, _)| same_route(r, &route)) {
                        Some((_, indices)) => indices.push(i),
                        None => by_route.push((route, vec![i])),
                    },
                    Err(e) => results[i] = Some(Err(e)),
                }
            }
            // Refused mutations, and the route and error that refused the
            // last of them (what decides whether to go round again).
            let mut refused = Vec::new();
            let mut refusal: Option<(RegionRoute, Error)> = None;
            for (route, indices) in by_route {
                let group: Vec<Mutation> = indices.iter().map(|&i| mutations[i].clone()).collect();
                for (i, result) in indices.into_iter().zip(self.batch_on(&route, group)) {
                    match result {
                        Err(e) if is_refusal(&route, &e) => {
                            refused.push(i);
                            refusal = Some((route.clone(), e));
                        }
                        other => results[i] = Some(other),
                    }
                }
            }
            if let Some((route, error)) = refusal {
                if let Err(e) = self
                    .state
                    .after_failure(&route, epoch, &mut deadline, error)
                {
                    // Errors are not `Clone`: each refused mutation gets
                    // the same error rebuilt from its kind.
                    let last = RemoteError::from(&e);
                    for &i in &refused {
                        results[i] = Some(Err(last.clone().into_error()));
                    }
                    break;
                }
            }
            pending = refused;
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Error::invalid("mutation was not processed"))))
            .collect()
    }

    /// One region's share of a batch: one result per mutation.
    fn batch_on(&self, route: &RegionRoute, group: Vec<Mutation>) -> Vec<Result<()>> {
        let count = group.len();
        let same_for_all = |e: Error| {
            let remote = RemoteError::from(&e);
            (0..count)
                .map(|_| Err(remote.clone().into_error()))
                .collect()
        };
        let (info, server) = match route {
            RegionRoute::Local(region) => return region.batch(&group),
            RegionRoute::Remote { info, server } => (info, server),
            RegionRoute::Offline { info } => return same_for_all(RegionRoute::offline_error(info)),
        };
        match self
            .state
            .call_remote(info, server, RegionCall::Batch(group))
        {
            Ok(RegionAnswer::Batch(answers)) if answers.len() == count => answers
                .into_iter()
                .map(|a| a.map_or(Ok(()), |e| Err(e.into_error())))
                .collect(),
            Ok(other) => same_for_all(unexpected(server, "Batch", &other)),
            Err(e) => same_for_all(e),
        }
    }

    /// Scans rows; the iterator yields results in row order (reversed for a
    /// reversed scan), crossing region boundaries.
    pub fn scan(&self, scan: &Scan) -> Result<Scanner> {
        self.scan_within(scan, &RowRange::all())
    }

    /// Scans the rows of `scan` that are also in `range`. A range says what
    /// a scan's start and stop rows cannot: an exclusive high end of a
    /// reversed scan (HBase's region scans have one), whose row is then
    /// never read in a region held here, so a filter never counts it. A
    /// region on another server is read from the scan's own start and stop
    /// rows: the caller cuts a row outside `range` it may return (the
    /// native RPC gateway, the one caller, serves its own regions).
    pub fn scan_within(&self, scan: &Scan, range: &RowRange) -> Result<Scanner> {
        self.state.check_serving()?;
        scan.validate()?;
        let narrowed;
        let scan = match self.readable("scan", &scan.columns)? {
            None => scan,
            Some(columns) => {
                narrowed = Scan {
                    columns,
                    ..scan.clone()
                };
                &narrowed
            }
        };
        let filter = scan.filter.as_ref().map(|f| f.build(scan.reversed));
        Ok(Scanner {
            state: Arc::clone(&self.state),
            latencies: Arc::clone(&self.latencies),
            range: scan_range(scan).intersect(range),
            scan: scan.clone(),
            filter,
            current: None,
            cursor: Cursor::Start,
            rows_returned: 0,
            finished_metrics: ScanMetrics::default(),
        })
    }
}

/// True for a failure after which a request may be routed again: a
/// region refusing it, or (remote) a server that could not be reached.
fn is_refusal(route: &RegionRoute, error: &Error) -> bool {
    matches!(error, Error::NotServingRegion(_))
        || (route.server().is_some() && error.kind() == basalt_types::ErrorKind::Io)
}

/// Results asked of a remote scanner per call when the scan sets no
/// `caching` (HBase's clients fetch 100 rows per round trip too).
const REMOTE_SCAN_ROWS: usize = 100;

/// An open scan. Iterate it for row results.
///
/// Local regions are read through the engine's region scanner, one filter
/// state carried from region to region. A region on another server is
/// read through a scanner opened there (`OpenScanner`, then `NextRows`
/// pages of `caching` results), closed when it is done or the scan is
/// dropped; that server builds the filter afresh for its region, as
/// HBase's region servers each do, and says when the scan has ended for
/// good (row limit, or a filter ending it), which ends it here too.
pub struct Scanner {
    state: Arc<TableLocation>,
    latencies: Arc<RequestLatencies>,
    scan: Scan,
    range: RowRange,
    /// The filter between local regions (inside one, the region scanner
    /// holds it).
    filter: Option<Box<dyn CellFilter>>,
    current: Option<Current>,
    cursor: Cursor,
    rows_returned: u64,
    /// The work of the local regions already read (regions on other
    /// servers report none).
    finished_metrics: ScanMetrics,
}

/// The region a scan is reading.
enum Current {
    Local(Arc<Region>, RegionScanner),
    Remote(RemoteScan),
}

/// A scanner open on another server.
struct RemoteScan {
    info: RegionInfo,
    server: ServerAddress,
    id: u64,
    /// Results received and not yet returned.
    buffered: VecDeque<RowResult>,
    /// The server may have more: ask again when `buffered` is empty.
    more: bool,
    /// The server said the whole scan has ended.
    ended_for_good: bool,
    /// A row already returned from the previous region that this one
    /// (merged since) would return again: skipped (reversed scans only;
    /// see `open_remote`).
    skip_row: Option<Bytes>,
    /// The row of the last result returned from this region: pieces of one
    /// row (with `batch`) count once towards the limit.
    last_row: Option<Bytes>,
}

/// Which region a scan reads next. Regions are found again by key at each
/// step, not remembered, so the scan follows the table's current regions.
#[derive(Debug, Clone)]
enum Cursor {
    /// Nothing read yet.
    Start,
    /// Forward: the next region starts at this key.
    From(Bytes),
    /// Reverse: the next region is the one ending at this key.
    Below(Bytes),
    /// No region left.
    Done,
}

impl std::fmt::Debug for Scanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanner")
            .field("table", &self.state.name)
            .field("range", &self.range)
            .field("cursor", &self.cursor)
            .field("rows_returned", &self.rows_returned)
            .finish()
    }
}

impl Scanner {
    /// The work the scan did so far in the regions read here (HBase's
    /// server-side scan metrics: rows scanned and filtered). Regions read
    /// on another server of a cluster are not counted.
    pub fn metrics(&self) -> ScanMetrics {
        let mut metrics = self.finished_metrics;
        if let Some(Current::Local(_, scanner)) = &self.current {
            metrics.add(&scanner.metrics());
        }
        metrics
    }

    /// The next region the scan covers, if any, and moves the cursor past it.
    fn next_region(&mut self) -> Option<RegionRoute> {
        let routes = self.state.routes();
        // Index of the last region whose start key is <= key (or < key).
        let last_starting_at_or_before = |key: &[u8]| {
            routes
                .partition_point(|r| &r.info().start_key[..] <= key)
                .checked_sub(1)
        };
        let last_starting_before = |key: &[u8]| {
            routes
                .partition_point(|r| &r.info().start_key[..] < key)
                .checked_sub(1)
        };
        let index = match (&self.cursor, self.scan.reversed) {
            (Cursor::Done, _) => None,
            (Cursor::Start, false) => match &self.range.lower {
                Bound::Unbounded => (!routes.is_empty()).then_some(0),
                Bound::Included(k) | Bound::Excluded(k) => last_starting_at_or_before(k),
            },
            (Cursor::Start, true) => match &self.range.upper {
                Bound::Unbounded => routes.len().checked_sub(1),
                Bound::Included(k) => last_starting_at_or_before(k),
                Bound::Excluded(k) => last_starting_before(k),
            },
            (Cursor::From(k), _) => last_starting_at_or_before(k),
            (Cursor::Below(k), _) => last_starting_before(k),
        };
        let route = index.and_then(|i| routes.get(i)).cloned()?;
        let info = route.info();
        let in_range = if self.scan.reversed {
            // Some row below the region's end must be above the lower bound.
            info.end_key.is_empty()
                || match &self.range.lower {
                    Bound::Unbounded => true,
                    Bound::Included(l) | Bound::Excluded(l) => l < &info.end_key,
                }
        } else {
            self.range.below_upper(&info.start_key)
        };
        if !in_range {
            self.cursor = Cursor::Done;
            return None;
        }
        self.cursor = match self.scan.reversed {
            false if info.end_key.is_empty() => Cursor::Done,
            false => Cursor::From(info.end_key.clone()),
            true if info.start_key.is_empty() => Cursor::Done,
            true => Cursor::Below(info.start_key.clone()),
        };
        Some(route)
    }

    /// Rows the scan may still return (`None`: no limit).
    fn remaining(&self) -> Option<usize> {
        self.scan
            .limit
            .map(|l| l.saturating_sub(self.rows_returned as usize))
    }

    fn open_next_region(&mut self) -> Result<bool> {
        let mut deadline = None;
        loop {
            // Where the scan stands: rows on the other side were returned
            // already, even if a merge since made one region span both sides.
            let resume = self.cursor.clone();
            let epoch = self.state.region_epoch.load(Ordering::SeqCst);
            let Some(route) = self.next_region() else {
                return Ok(false);
            };
            let opened = match &route {
                RegionRoute::Local(region) => self.open_local(region, &resume),
                RegionRoute::Remote { info, server } => self.open_remote(info, server, &resume),
                RegionRoute::Offline { info } => Err(RegionRoute::offline_error(info)),
            };
            match opened {
                Ok(current) => {
                    self.current = Some(current);
                    return Ok(true);
                }
                Err(e) if is_refusal(&route, &e) => {
                    // Find the region at the same place again once the
                    // routes have changed.
                    self.cursor = resume;
                    self.state.after_failure(&route, epoch, &mut deadline, e)?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn open_local(&mut self, region: &Arc<Region>, resume: &Cursor) -> Result<Current> {
        let info = region.info();
        let mut clip = RowRange {
            lower: if info.start_key.is_empty() {
                Bound::Unbounded
            } else {
                Bound::Included(info.start_key.clone())
            },
            upper: if info.end_key.is_empty() {
                Bound::Unbounded
            } else {
                Bound::Excluded(info.end_key.clone())
            },
        };
        clip = clip.intersect(&self.range);
        match resume {
            Cursor::From(k) => {
                clip = clip.intersect(&RowRange {
                    lower: Bound::Included(k.clone()),
                    upper: Bound::Unbounded,
                })
            }
            Cursor::Below(k) => {
                clip = clip.intersect(&RowRange {
                    lower: Bound::Unbounded,
                    upper: Bound::Excluded(k.clone()),
                })
            }
            Cursor::Start | Cursor::Done => {}
        }
        let remaining = self.remaining();
        let scanner = region.scanner_within(&self.scan, &clip, self.filter.take(), remaining)?;
        Ok(Current::Local(Arc::clone(region), scanner))
    }

    /// Opens a scanner on the server that has the region. The server bounds
    /// it to the region's range; the scan sent is narrowed to where this
    /// scan stands (`resume`).
    fn open_remote(
        &mut self,
        info: &RegionInfo,
        server: &ServerAddress,
        resume: &Cursor,
    ) -> Result<Current> {
        let mut scan = self.scan.clone();
        let mut skip_row = None;
        match resume {
            // Forward: start at the resume key (start rows are inclusive,
            // as the resume key is).
            Cursor::From(k) if scan.start_row.is_empty() || scan.start_row < *k => {
                scan.start_row = k.clone();
            }
            // Reverse: rows below the resume key. The region's own end is
            // that key unless a merge since made it span both sides; then
            // the scan starts at the key (a reversed start row is
            // inclusive) and the key's row, returned already, is skipped.
            Cursor::Below(k)
                if info.end_key != *k && (scan.start_row.is_empty() || scan.start_row >= *k) =>
            {
                scan.start_row = k.clone();
                skip_row = Some(k.clone());
            }
            _ => {}
        }
        scan.limit = self
            .remaining()
            .map(|n| n.saturating_add(usize::from(skip_row.is_some())));
        let answer = self
            .state
            .call_remote(info, server, RegionCall::OpenScanner { scan })?;
        let RegionAnswer::Rows {
            scanner,
            rows,
            more,
        } = answer
        else {
            return Err(unexpected(server, "OpenScanner", &answer));
        };
        Ok(Current::Remote(RemoteScan {
            info: info.clone(),
            server: server.clone(),
            id: scanner,
            buffered: rows.into(),
            more,
            ended_for_good: !more && scanner == 0,
            skip_row,
            last_row: None,
        }))
    }

    fn next_result(&mut self) -> Result<Option<RowResult>> {
        loop {
            let Some(current) = self.current.as_mut() else {
                if !self.open_next_region()? {
                    return Ok(None);
                }
                continue;
            };
            match current {
                Current::Local(region, scanner) => {
                    if let Some(result) = scanner.next_result()? {
                        return Ok(Some(result));
                    }
                    // This region is done: account its work and move on.
                    self.rows_returned += scanner.metrics().rows_returned;
                    self.finished_metrics.add(&scanner.metrics());
                    region.record_read(scanner);
                    if scanner.ended_for_good() {
                        self.cursor = Cursor::Done;
                    }
                    self.filter = scanner.take_filter();
                    self.current = None;
                }
                Current::Remote(remote) => {
                    if let Some(result) = remote.buffered.pop_front() {
                        if remote.skip_row.as_ref() == Some(&result.row) {
                            continue;
                        }
                        if remote.last_row.as_ref() != Some(&result.row) {
                            let limit = self.scan.limit.map_or(u64::MAX, |l| l as u64);
                            if self.rows_returned >= limit {
                                // Only after a skipped row (the server was
                                // asked for one more): the scan is over.
                                self.cursor = Cursor::Done;
                                self.close_remote();
                                return Ok(None);
                            }
                            self.rows_returned += 1;
                            remote.last_row = Some(result.row.clone());
                        }
                        return Ok(Some(result));
                    }
                    if remote.more {
                        let rows = self.scan.caching.unwrap_or(REMOTE_SCAN_ROWS).max(1);
                        let call = RegionCall::NextRows {
                            scanner: remote.id,
                            rows,
                        };
                        let answer = self.state.call_remote(&remote.info, &remote.server, call)?;
                        let RegionAnswer::Rows {
                            scanner,
                            rows,
                            more,
                        } = answer
                        else {
                            return Err(unexpected(&remote.server, "NextRows", &answer));
                        };
                        remote.buffered.extend(rows);
                        remote.more = more;
                        remote.ended_for_good = !more && scanner == 0;
                        continue;
                    }
                    if remote.ended_for_good {
                        self.cursor = Cursor::Done;
                    }
                    self.current = None;
                }
            }
        }
    }

    /// Closes the remote scanner being read, if the server still has it
    /// open; a failure only leaves it to its lease.
    fn close_remote(&mut self) {
        if let Some(Current::Remote(remote)) = self.current.take() {
            if remote.more {
                let call = RegionCall::CloseScanner { scanner: remote.id };
                if let Err(e) = self.state.call_remote(&remote.info, &remote.server, call) {
                    tracing::debug!(
                        table = %self.state.name,
                        server = %remote.server,
                        error = %e,
                        "closing a remote scanner failed; its lease will end it"
                    );
                }
            }
        }
    }
}

impl Iterator for Scanner {
    type Item = Result<RowResult>;

    fn next(&mut self) -> Option<Self::Item> {
        let start = Instant::now();
        let result = self.next_result();
        self.latencies
            .record(Operation::ScanNext, elapsed_micros(start));
        match self.state.note_corruption(result) {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => None,
            // Stopped between rows by its call (the client left, or the
            // call's time ran out): the scan can go on from here.
            Err(e) if matches!(e.kind(), ErrorKind::Cancelled | ErrorKind::TimedOut) => {
                Some(Err(e))
            }
            Err(e) => {
                self.cursor = Cursor::Done;
                self.close_remote();
                self.current = None;
                Some(Err(e))
            }
        }
    }
}

impl Drop for Scanner {
    fn drop(&mut self) {
        if let Some(filter) = &self.scan.filter {
            let columns = filter.tested_columns();
            if !columns.is_empty() {
                let scanned = self.metrics().rows_scanned;
                self.state
                    .note_filter_scan(&columns, scanned, self.rows_returned);
            }
        }
        match self.current.take() {
            Some(Current::Local(region, scanner)) => region.record_read(&scanner),
            remote @ Some(Current::Remote(_)) => {
                self.current = remote;
                self.close_remote();
            }
            None => {}
        }
    }
}
