//! From snapshots to the rows on screen:
//! 1. rates per region ([`region_rates`]): the growth of its totals between
//!    the previous snapshot and this one over the time between them (as
//!    hbtop does between refreshes); the server's own last-minute rates
//!    when there is no previous snapshot of the region (the first refresh,
//!    a region born since, counters that restarted with a reopen); zero
//!    when the server reports none;
//! 2. records per mode ([`Mode`]): one per region, or regions summed per
//!    table or per region server;
//! 3. the drill-down and the filter keep some records ([`crate::filter`]);
//! 4. a stable sort on one column, ties in table and key order.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

use crate::filter::Filter;
use crate::format;
use crate::source::{RegionSample, Snapshot};

/// What one row of the table stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// One row per region.
    Region,
    /// One row per table.
    Table,
    /// One row per region server.
    Server,
}

impl Mode {
    /// Every mode, in the order `m` cycles through them.
    pub const ALL: [Mode; 3] = [Mode::Region, Mode::Table, Mode::Server];

    /// The mode's name, as `-m` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Region => "region",
            Mode::Table => "table",
            Mode::Server => "server",
        }
    }

    /// The mode `m` switches to.
    pub fn next(self) -> Mode {
        match self {
            Mode::Region => Mode::Table,
            Mode::Table => Mode::Server,
            Mode::Server => Mode::Region,
        }
    }

    /// The columns of the mode, in display order; `RS` in region mode
    /// only in a cluster (one process holds every region itself).
    pub fn fields(self, cluster: bool) -> Vec<Field> {
        use Field::*;
        match self {
            Mode::Region => {
                let mut f = vec![Namespace, Table, Region];
                if cluster {
                    f.push(Server);
                }
                f.extend([
                    Requests,
                    Reads,
                    FilteredReads,
                    Writes,
                    StoreFileSize,
                    StoreFiles,
                    Memstore,
                    CompactionProgress,
                    LastMajorCompaction,
                    StartKey,
                    EndKey,
                ]);
                f
            }
            Mode::Table => vec![
                Namespace,
                Table,
                Regions,
                Requests,
                Reads,
                FilteredReads,
                Writes,
                StoreFileSize,
                StoreFiles,
                Memstore,
            ],
            Mode::Server => vec![
                Server,
                Regions,
                Requests,
                Reads,
                FilteredReads,
                Writes,
                StoreFileSize,
                StoreFiles,
                Memstore,
            ],
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown mode {s:?}: expected region, table or server"))
    }
}

/// A column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    /// `NAMESPACE`.
    Namespace,
    /// `TABLE`.
    Table,
    /// `REGION`.
    Region,
    /// `RS`.
    Server,
    /// `#REGION`.
    Regions,
    /// `#REQ/S`.
    Requests,
    /// `#READ/S`.
    Reads,
    /// `#FREAD/S`.
    FilteredReads,
    /// `#WRITE/S`.
    Writes,
    /// `SF`.
    StoreFileSize,
    /// `#SF`.
    StoreFiles,
    /// `MEMSTORE`.
    Memstore,
    /// `%COMP`.
    CompactionProgress,
    /// `LASTMCOMP`.
    LastMajorCompaction,
    /// `SKEY`.
    StartKey,
    /// `EKEY`.
    EndKey,
}

impl Field {
    /// Every column.
    pub const ALL: [Field; 16] = [
        Field::Namespace,
        Field::Table,
        Field::Region,
        Field::Server,
        Field::Regions,
        Field::Requests,
        Field::Reads,
        Field::FilteredReads,
        Field::Writes,
        Field::StoreFileSize,
        Field::StoreFiles,
        Field::Memstore,
        Field::CompactionProgress,
        Field::LastMajorCompaction,
        Field::StartKey,
        Field::EndKey,
    ];

    /// The column's header, as hbtop names it.
    pub fn header(self) -> &'static str {
        match self {
            Field::Namespace => "NAMESPACE",
            Field::Table => "TABLE",
            Field::Region => "REGION",
            Field::Server => "RS",
            Field::Regions => "#REGION",
            Field::Requests => "#REQ/S",
            Field::Reads => "#READ/S",
            Field::FilteredReads => "#FREAD/S",
            Field::Writes => "#WRITE/S",
            Field::StoreFileSize => "SF",
            Field::StoreFiles => "#SF",
            Field::Memstore => "MEMSTORE",
            Field::CompactionProgress => "%COMP",
            Field::LastMajorCompaction => "LASTMCOMP",
            Field::StartKey => "SKEY",
            Field::EndKey => "EKEY",
        }
    }

    /// What the column means (the help screen and docs/top.md).
    pub fn description(self) -> &'static str {
        match self {
            Field::Namespace => "namespace of the table",
            Field::Table => "table name (without its namespace)",
            Field::Region => "encoded region name",
            Field::Server => "region server holding it",
            Field::Regions => "number of regions",
            Field::Requests => "requests (reads + writes) per second",
            Field::Reads => "gets and scans per second",
            Field::FilteredReads => "reads whose filter dropped rows or cells, per second",
            Field::Writes => "row mutations per second",
            Field::StoreFileSize => "bytes in store files",
            Field::StoreFiles => "number of store files",
            Field::Memstore => "bytes in memstores",
            Field::CompactionProgress => "progress of the running compaction",
            Field::LastMajorCompaction => "when the last major compaction finished (UTC)",
            Field::StartKey => "first row (inclusive), escaped",
            Field::EndKey => "end row (exclusive), escaped",
        }
    }

    /// The column named `name`: its header in any case, or without the
    /// leading `#` or `%` (`req/s`, `#REQ/S`, `comp`). An exact header
    /// wins, since `SF` and `#SF` (`REGION`, `#REGION`) differ by the sign.
    pub fn parse(name: &str) -> Option<Field> {
        let name = name.trim();
        let bare = |s: &str| s.trim_start_matches(['#', '%']).to_ascii_uppercase();
        Field::ALL
            .into_iter()
            .find(|f| f.header().eq_ignore_ascii_case(name))
            .or_else(|| {
                let wanted = bare(name);
                Field::ALL.into_iter().find(|f| bare(f.header()) == wanted)
            })
    }

    /// Whether larger is more interesting: numbers sort descending first.
    pub fn descending_by_default(self) -> bool {
        !matches!(
            self,
            Field::Namespace
                | Field::Table
                | Field::Region
                | Field::Server
                | Field::StartKey
                | Field::EndKey
        )
    }

    /// Whether the column's values are right-aligned numbers.
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            Field::Regions
                | Field::Requests
                | Field::Reads
                | Field::FilteredReads
                | Field::Writes
                | Field::StoreFileSize
                | Field::StoreFiles
                | Field::Memstore
                | Field::CompactionProgress
        )
    }
}

/// One cell's value, typed so it sorts and filters as what it is.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A name.
    Text(String),
    /// A row key (shown escaped, compared as bytes).
    Key(Bytes),
    /// Per second.
    Rate(f64),
    /// Bytes.
    Size(u64),
    /// A count.
    Count(u64),
    /// A fraction 0.0-1.0; `None` when idle.
    Percent(Option<f64>),
    /// Milliseconds since the epoch; `None` for never.
    Time(Option<i64>),
}

impl Value {
    /// The text shown.
    pub fn display(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::Key(k) => format::key(k),
            Value::Rate(r) => format::rate(*r),
            Value::Size(b) => format::size(*b),
            Value::Count(n) => n.to_string(),
            Value::Percent(p) => format::percent(*p),
            Value::Time(t) => format::timestamp(*t),
        }
    }

    /// The value as a number a filter compares with, for numeric values
    /// (a percentage as 0-100, as shown).
    pub fn number(&self) -> Option<f64> {
        match self {
            Value::Rate(r) => Some(*r),
            Value::Size(b) => Some(*b as f64),
            Value::Count(n) => Some(*n as f64),
            Value::Percent(p) => Some(p.unwrap_or(0.0) * 100.0),
            Value::Text(_) | Value::Key(_) | Value::Time(_) => None,
        }
    }

    /// The sort order of two values of one column (`None`s first).
    pub fn compare(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Text(a), Value::Text(b)) => a.cmp(b),
            (Value::Key(a), Value::Key(b)) => a.cmp(b),
            (Value::Rate(a), Value::Rate(b)) => a.total_cmp(b),
            (Value::Size(a), Value::Size(b)) | (Value::Count(a), Value::Count(b)) => a.cmp(b),
            (Value::Percent(a), Value::Percent(b)) => match (a, b) {
                (Some(a), Some(b)) => a.total_cmp(b),
                _ => a.is_some().cmp(&b.is_some()),
            },
            (Value::Time(a), Value::Time(b)) => a.cmp(b),
            _ => Ordering::Equal,
        }
    }
}

/// Where Enter on a record leads: region mode, kept to its table or its
/// server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drill {
    /// The regions of one table (full name).
    Table(String),
    /// The regions one server holds.
    Server(String),
}

impl Drill {
    /// How the drill-down is shown.
    pub fn describe(&self) -> String {
        match self {
            Drill::Table(t) => format!("regions of table {t}"),
            Drill::Server(s) => format!("regions on {s}"),
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The values, one per column of the mode.
    pub values: Vec<(Field, Value)>,
    /// What Enter on this row shows, when anything.
    pub drill: Option<Drill>,
}

impl Record {
    /// The value of a column, if the record has it.
    pub fn get(&self, field: Field) -> Option<&Value> {
        self.values
            .iter()
            .find_map(|(f, v)| (*f == field).then_some(v))
    }
}

/// Rates of one region (or a sum of them), per second.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rates {
    /// Reads and writes (`#REQ/S`). Kept apart from the two because a
    /// cluster member learns only this sum of another server's regions.
    pub requests: f64,
    /// Gets and scans.
    pub read: f64,
    /// Filtered reads.
    pub filtered_read: f64,
    /// Row mutations.
    pub write: f64,
}

impl Rates {
    /// Rates whose requests are the reads and writes given.
    pub fn of(read: f64, filtered_read: f64, write: f64) -> Rates {
        Rates {
            requests: read + write,
            read,
            filtered_read,
            write,
        }
    }

    fn add(&mut self, other: Rates) {
        self.requests += other.requests;
        self.read += other.read;
        self.filtered_read += other.filtered_read;
        self.write += other.write;
    }
}

/// Where a region's rates came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateBasis {
    /// Growth of its totals between the last two snapshots.
    Delta,
    /// The server's own rate over its last minute.
    Reported,
    /// Neither: shown as zero.
    Unknown,
}

/// Each region's rates (parallel to `current.regions`) and where they
/// came from; see the module's step 1.
pub fn region_rates(previous: Option<&Snapshot>, current: &Snapshot) -> Vec<(Rates, RateBasis)> {
    let before: HashMap<&str, &RegionSample> = previous
        .map(|p| {
            p.regions
                .iter()
                .map(|r| (r.encoded_name.as_str(), r))
                .collect()
        })
        .unwrap_or_default();
    let seconds = previous
        .map(|p| current.at_ms.saturating_sub(p.at_ms) as f64 / 1000.0)
        .unwrap_or(0.0);
    current
        .regions
        .iter()
        .map(|r| {
            let delta = before.get(r.encoded_name.as_str()).and_then(|old| {
                // Totals that went down belong to a region reopened since
                // (counters start again at zero): no delta to take.
                let grew = r.read_requests >= old.read_requests
                    && r.write_requests >= old.write_requests
                    && r.filtered_read_requests >= old.filtered_read_requests;
                (seconds > 0.0 && grew).then(|| {
                    Rates::of(
                        (r.read_requests - old.read_requests) as f64 / seconds,
                        (r.filtered_read_requests - old.filtered_read_requests) as f64 / seconds,
                        (r.write_requests - old.write_requests) as f64 / seconds,
                    )
                })
            });
            match (delta, r.reported) {
                (Some(rates), _) => (rates, RateBasis::Delta),
                (None, Some(reported)) => (reported, RateBasis::Reported),
                (None, None) => (Rates::default(), RateBasis::Unknown),
            }
        })
        .collect()
}

/// How the table is built: mode, drill-down, filter, sort.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewOptions {
    /// What a row stands for.
    pub mode: Mode,
    /// Region mode kept to one table or server.
    pub drill: Option<Drill>,
    /// Rows must match it.
    pub filter: Filter,
    /// The sort column.
    pub sort: Field,
    /// Largest (or last) first.
    pub descending: bool,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions {
            mode: Mode::Region,
            drill: None,
            filter: Filter::default(),
            sort: Field::Requests,
            descending: true,
        }
    }
}

impl ViewOptions {
    /// The sort column in effect: the chosen one if the mode has it, else
    /// `#REQ/S` (which every mode has).
    pub fn effective_sort(&self, fields: &[Field]) -> (Field, bool) {
        if fields.contains(&self.sort) {
            (self.sort, self.descending)
        } else {
            (Field::Requests, true)
        }
    }
}

/// The table of one refresh.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// The columns, in order.
    pub fields: Vec<Field>,
    /// The rows, filtered and sorted.
    pub records: Vec<Record>,
    /// How the rates were come by, summed over regions.
    pub rates: RateSummary,
}

/// The aggregate of the regions' rates, for the summary lines.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RateSummary {
    /// Summed over every region (filters do not apply).
    pub total: Rates,
    /// Regions whose rates are deltas.
    pub delta_regions: usize,
    /// Regions whose rates the server reported.
    pub reported_regions: usize,
    /// Seconds between the two snapshots, when there were two.
    pub interval_seconds: Option<f64>,
}

/// Builds the table of `current` (rates against `previous`).
pub fn build_view(previous: Option<&Snapshot>, current: &Snapshot, options: &ViewOptions) -> View {
    let rates = region_rates(previous, current);
    let cluster = current.summary.cluster.is_some();
    let mode = options.mode;
    let fields = mode.fields(cluster);
    let mut summary = RateSummary {
        interval_seconds: previous.map(|p| current.at_ms.saturating_sub(p.at_ms) as f64 / 1000.0),
        ..RateSummary::default()
    };
    for (r, basis) in &rates {
        summary.total.add(*r);
        match basis {
            RateBasis::Delta => summary.delta_regions += 1,
            RateBasis::Reported => summary.reported_regions += 1,
            RateBasis::Unknown => {}
        }
    }
    let regions: Vec<(&RegionSample, Rates)> = current
        .regions
        .iter()
        .zip(rates.iter().map(|(r, _)| *r))
        .filter(|(region, _)| match &options.drill {
            Some(Drill::Table(t)) => &region.table == t,
            Some(Drill::Server(s)) => server_of(region, current) == s,
            None => true,
        })
        .collect();
    let mut records = match mode {
        Mode::Region => regions
            .iter()
            .map(|(r, rates)| region_record(r, *rates, cluster, current))
            .collect(),
        Mode::Table => table_records(&regions),
        Mode::Server => server_records(&regions, current),
    };
    records.retain(|r| options.filter.matches(r));
    let (sort, descending) = options.effective_sort(&fields);
    // Stable: equal values keep table and key order.
    records.sort_by(|a, b| {
        let order = match (a.get(sort), b.get(sort)) {
            (Some(x), Some(y)) => x.compare(y),
            _ => Ordering::Equal,
        };
        if descending {
            order.reverse()
        } else {
            order
        }
    });
    View {
        fields,
        records,
        rates: summary,
    }
}

/// The region server a region counts under: its holder in a cluster, this
/// process (named by its location) otherwise.
fn server_of<'a>(region: &'a RegionSample, snapshot: &'a Snapshot) -> &'a str {
    region
        .server
        .as_deref()
        .unwrap_or(&snapshot.summary.location)
}

/// A full table name as (namespace, table).
pub(crate) fn split_table(full: &str) -> (&str, &str) {
    full.split_once(':').unwrap_or(("default", full))
}

fn rate_values(rates: Rates) -> [(Field, Value); 4] {
    [
        (Field::Requests, Value::Rate(rates.requests)),
        (Field::Reads, Value::Rate(rates.read)),
        (Field::FilteredReads, Value::Rate(rates.filtered_read)),
        (Field::Writes, Value::Rate(rates.write)),
    ]
}

fn region_record(r: &RegionSample, rates: Rates, cluster: bool, snapshot: &Snapshot) -> Record {
    let (namespace, table) = split_table(&r.table);
    let mut values = vec![
        (Field::Namespace, Value::Text(namespace.to_string())),
        (Field::Table, Value::Text(table.to_string())),
        (Field::Region, Value::Text(r.encoded_name.clone())),
    ];
    if cluster {
        values.push((
            Field::Server,
            Value::Text(server_of(r, snapshot).to_string()),
        ));
    }
    values.extend(rate_values(rates));
    values.extend([
        (Field::StoreFileSize, Value::Size(r.store_file_bytes)),
        (Field::StoreFiles, Value::Count(r.store_files as u64)),
        (Field::Memstore, Value::Size(r.memstore_bytes)),
        (
            Field::CompactionProgress,
            Value::Percent(r.compaction_progress),
        ),
        (
            Field::LastMajorCompaction,
            Value::Time(r.last_major_compaction_ms),
        ),
        (Field::StartKey, Value::Key(r.start_key.clone())),
        (Field::EndKey, Value::Key(r.end_key.clone())),
    ]);
    Record {
        values,
        drill: None,
    }
}

/// Sums of regions grouped by a name.
#[derive(Default)]
struct Sums {
    regions: u64,
    rates: Rates,
    store_file_bytes: u64,
    store_files: u64,
    memstore_bytes: u64,
}

impl Sums {
    fn add(&mut self, r: &RegionSample, rates: Rates) {
        self.regions += 1;
        self.rates.add(rates);
        self.store_file_bytes += r.store_file_bytes;
        self.store_files += r.store_files as u64;
        self.memstore_bytes += r.memstore_bytes;
    }

    fn values(&self) -> Vec<(Field, Value)> {
        let mut v = vec![(Field::Regions, Value::Count(self.regions))];
        v.extend(rate_values(self.rates));
        v.extend([
            (Field::StoreFileSize, Value::Size(self.store_file_bytes)),
            (Field::StoreFiles, Value::Count(self.store_files)),
            (Field::Memstore, Value::Size(self.memstore_bytes)),
        ]);
        v
    }
}

fn table_records(regions: &[(&RegionSample, Rates)]) -> Vec<Record> {
    // Namespace, then table: `default`'s tables before `ns:`'s.
    let mut by_table: BTreeMap<(&str, &str), (&str, Sums)> = BTreeMap::new();
    for (r, rates) in regions {
        by_table
            .entry(split_table(&r.table))
            .or_insert_with(|| (&r.table, Sums::default()))
            .1
            .add(r, *rates);
    }
    by_table
        .into_iter()
        .map(|((namespace, table), (full, sums))| {
            let mut values = vec![
                (Field::Namespace, Value::Text(namespace.to_string())),
                (Field::Table, Value::Text(table.to_string())),
            ];
            values.extend(sums.values());
            Record {
                values,
                drill: Some(Drill::Table(full.to_string())),
            }
        })
        .collect()
}

fn server_records(regions: &[(&RegionSample, Rates)], snapshot: &Snapshot) -> Vec<Record> {
    let mut by_server: BTreeMap<&str, Sums> = BTreeMap::new();
    // Live servers holding nothing still get their row.
    if let Some(c) = &snapshot.summary.cluster {
        for s in &c.live_servers {
            by_server.entry(s).or_default();
        }
    } else {
        by_server.entry(&snapshot.summary.location).or_default();
    }
    for (r, rates) in regions {
        by_server
            .entry(server_of(r, snapshot))
            .or_default()
            .add(r, *rates);
    }
    by_server
        .into_iter()
        .map(|(server, sums)| {
            let mut values = vec![(Field::Server, Value::Text(server.to_string()))];
            values.extend(sums.values());
            Record {
                values,
                drill: Some(Drill::Server(server.to_string())),
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::source::{ClusterSummary, Summary};

    pub(crate) fn region(table: &str, encoded: &str, start: &str, end: &str) -> RegionSample {
        RegionSample {
            table: table.into(),
            encoded_name: encoded.into(),
            start_key: Bytes::copy_from_slice(start.as_bytes()),
            end_key: Bytes::copy_from_slice(end.as_bytes()),
            state: "OPEN".into(),
            ..RegionSample::default()
        }
    }

    pub(crate) fn snapshot(at_ms: u64, regions: Vec<RegionSample>) -> Snapshot {
        Snapshot {
            at_ms,
            wall_ms: 1_700_000_000_000,
            summary: Summary {
                location: "127.0.0.1:9090".into(),
                tables: 2,
                regions: regions.len(),
                ..Summary::default()
            },
            regions,
        }
    }

    /// Two tables, `t` with three regions and `ns:u` with one.
    pub(crate) fn sample(at_ms: u64, writes: [u64; 4]) -> Snapshot {
        let mut regions = vec![
            region("ns:u", "u0", "", ""),
            region("t", "t0", "", "g"),
            region("t", "t1", "g", "p"),
            region("t", "t2", "p", ""),
        ];
        for (r, w) in regions.iter_mut().zip(writes) {
            r.write_requests = w;
            r.read_requests = w / 2;
            r.store_file_bytes = 1 << 20;
            r.store_files = 2;
            r.memstore_bytes = 1024;
        }
        snapshot(at_ms, regions)
    }

    fn column(view: &View, field: Field) -> Vec<String> {
        view.records
            .iter()
            .map(|r| r.get(field).map(Value::display).unwrap_or_default())
            .collect()
    }

    #[test]
    fn rates_are_deltas_between_two_snapshots_over_the_time_between_them() {
        let a = sample(1_000, [0, 10, 100, 1000]);
        let b = sample(3_000, [0, 30, 100, 3000]);
        let rates = region_rates(Some(&a), &b);
        let writes: Vec<f64> = rates.iter().map(|(r, _)| r.write).collect();
        assert_eq!(writes, [0.0, 10.0, 0.0, 1000.0]);
        assert_eq!(rates[3].0.read, 500.0);
        assert_eq!(rates[3].0.requests, 1500.0);
        assert!(rates.iter().all(|(_, b)| *b == RateBasis::Delta));
    }

    #[test]
    fn without_a_previous_snapshot_the_servers_own_rates_are_used() {
        let mut b = sample(3_000, [0, 0, 0, 0]);
        b.regions[2].reported = Some(Rates::of(1.0, 0.5, 2.0));
        // Another server's region, as a cluster member learns it: the sum.
        b.regions[3].reported = Some(Rates {
            requests: 4.0,
            ..Rates::default()
        });
        let rates = region_rates(None, &b);
        assert_eq!(rates[2].1, RateBasis::Reported);
        assert_eq!(rates[2].0.requests, 3.0);
        assert_eq!(rates[3].0.requests, 4.0);
        assert_eq!(rates[0], (Rates::default(), RateBasis::Unknown));
    }

    #[test]
    fn a_region_new_since_the_last_snapshot_or_with_restarted_counters_gets_no_delta() {
        let a = sample(1_000, [5, 50, 5, 5]);
        let mut b = sample(2_000, [6, 10, 5, 5]);
        b.regions[0].encoded_name = "born-since".into();
        b.regions[1].reported = Some(Rates::of(0.0, 0.0, 7.0));
        let rates = region_rates(Some(&a), &b);
        assert_eq!(rates[0].1, RateBasis::Unknown);
        assert_eq!(rates[1], (Rates::of(0.0, 0.0, 7.0), RateBasis::Reported));
        assert_eq!(rates[2].1, RateBasis::Delta);
    }

    #[test]
    fn two_snapshots_at_the_same_moment_give_no_delta() {
        let a = sample(1_000, [0, 0, 0, 0]);
        let b = sample(1_000, [1, 1, 1, 1]);
        assert!(region_rates(Some(&a), &b)
            .iter()
            .all(|(_, b)| *b == RateBasis::Unknown));
    }

    #[test]
    fn region_mode_sorts_by_requests_per_second_descending_by_default() {
        let a = sample(0, [0, 0, 0, 0]);
        let b = sample(1_000, [5, 40, 1, 9]);
        let view = build_view(Some(&a), &b, &ViewOptions::default());
        assert_eq!(column(&view, Field::Region), ["t0", "t2", "u0", "t1"]);
        assert_eq!(
            column(&view, Field::Requests),
            ["60.0", "13.0", "7.0", "1.0"]
        );
        assert_eq!(
            view.fields[..3],
            [Field::Namespace, Field::Table, Field::Region]
        );
        assert!(
            !view.fields.contains(&Field::Server),
            "no RS out of a cluster"
        );
        assert_eq!(
            column(&view, Field::Namespace),
            ["default", "default", "ns", "default"]
        );
        assert_eq!(view.rates.delta_regions, 4);
        assert_eq!(view.rates.total.write, 55.0);
    }

    #[test]
    fn reversing_and_sorting_on_a_text_column_and_ties_keep_key_order() {
        let b = sample(0, [0, 0, 0, 0]);
        let mut options = ViewOptions::default();
        // All rates tie at zero: table and key order.
        let view = build_view(None, &b, &options);
        assert_eq!(column(&view, Field::Region), ["u0", "t0", "t1", "t2"]);
        options.sort = Field::StartKey;
        options.descending = true;
        let view = build_view(None, &b, &options);
        assert_eq!(column(&view, Field::StartKey), ["p", "g", "", ""]);
        options.descending = false;
        let view = build_view(None, &b, &options);
        assert_eq!(column(&view, Field::Region), ["u0", "t0", "t1", "t2"]);
    }

    #[test]
    fn table_mode_sums_the_regions_of_each_table() {
        let a = sample(0, [0, 0, 0, 0]);
        let b = sample(2_000, [2, 4, 6, 8]);
        let options = ViewOptions {
            mode: Mode::Table,
            ..ViewOptions::default()
        };
        let view = build_view(Some(&a), &b, &options);
        assert_eq!(column(&view, Field::Table), ["t", "u"]);
        assert_eq!(column(&view, Field::Namespace), ["default", "ns"]);
        assert_eq!(column(&view, Field::Regions), ["3", "1"]);
        assert_eq!(column(&view, Field::Writes), ["9.0", "1.0"]);
        assert_eq!(column(&view, Field::StoreFileSize), ["3.0MB", "1.0MB"]);
        assert_eq!(column(&view, Field::StoreFiles), ["6", "2"]);
        assert_eq!(column(&view, Field::Memstore), ["3.0KB", "1.0KB"]);
        assert_eq!(view.records[0].drill, Some(Drill::Table("t".into())));
    }

    #[test]
    fn a_drill_into_a_table_keeps_its_regions_only() {
        let b = sample(0, [0, 0, 0, 0]);
        let options = ViewOptions {
            drill: Some(Drill::Table("ns:u".into())),
            ..ViewOptions::default()
        };
        let view = build_view(None, &b, &options);
        assert_eq!(column(&view, Field::Region), ["u0"]);
    }

    #[test]
    fn server_mode_has_one_row_per_live_server_in_a_cluster_and_one_otherwise() {
        let b = sample(0, [1, 1, 1, 1]);
        let options = ViewOptions {
            mode: Mode::Server,
            ..ViewOptions::default()
        };
        let view = build_view(None, &b, &options);
        assert_eq!(column(&view, Field::Server), ["127.0.0.1:9090"]);
        assert_eq!(column(&view, Field::Regions), ["4"]);

        let mut c = sample(0, [1, 1, 1, 1]);
        c.summary.cluster = Some(ClusterSummary {
            master: "m,16000,1".into(),
            live_servers: vec!["rs1,1,1".into(), "rs2,1,1".into(), "rs3,1,1".into()],
            ..ClusterSummary::default()
        });
        for (r, s) in c
            .regions
            .iter_mut()
            .zip(["rs1,1,1", "rs2,1,1", "rs1,1,1", "rs2,1,1"])
        {
            r.server = Some(s.into());
        }
        let view = build_view(None, &c, &options);
        assert_eq!(
            column(&view, Field::Server),
            ["rs1,1,1", "rs2,1,1", "rs3,1,1"]
        );
        assert_eq!(column(&view, Field::Regions), ["2", "2", "0"]);
        let region_view = build_view(None, &c, &ViewOptions::default());
        assert_eq!(region_view.fields[3], Field::Server);
        // No rates yet: table and key order, so u0 (on rs1) first.
        assert_eq!(column(&region_view, Field::Server)[0], "rs1,1,1");
    }

    #[test]
    fn a_sort_column_the_mode_lacks_falls_back_to_requests() {
        let options = ViewOptions {
            mode: Mode::Table,
            sort: Field::StartKey,
            descending: false,
            ..ViewOptions::default()
        };
        let fields = Mode::Table.fields(false);
        assert_eq!(options.effective_sort(&fields), (Field::Requests, true));
    }

    #[test]
    fn columns_parse_by_header_in_any_case_with_or_without_the_sign() {
        assert_eq!(Field::parse("#REQ/S"), Some(Field::Requests));
        assert_eq!(Field::parse("req/s"), Some(Field::Requests));
        assert_eq!(Field::parse("comp"), Some(Field::CompactionProgress));
        assert_eq!(Field::parse("skey"), Some(Field::StartKey));
        assert_eq!(Field::parse("#SF"), Some(Field::StoreFiles));
        assert_eq!(Field::parse("SF"), Some(Field::StoreFileSize));
        assert_eq!(Field::parse("#region"), Some(Field::Regions));
        assert_eq!(Field::parse("region"), Some(Field::Region));
        assert_eq!(Field::parse("nope"), None);
        assert_eq!("TABLE".parse::<Mode>(), Ok(Mode::Table));
        assert!("cluster".parse::<Mode>().is_err());
    }
}
