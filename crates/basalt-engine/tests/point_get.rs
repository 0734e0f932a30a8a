//! The point-get path (`Region::get`) answers exactly as the general
//! scanner does for the same one-row read.
//!
//! The property test writes random puts and deletes of every kind, at
//! explicit and server timestamps, into two families with random storage
//! options (VERSIONS, MIN_VERSIONS, TTL, KEEP_DELETED_CELLS,
//! NEW_VERSION_BEHAVIOR, bloom type, block encoding, small blocks so rows
//! span several), flushes and compacts between writes so a row's cells
//! spread over the memstore and several store files, lets the clock move
//! (TTL), and at random points compares random gets (families, columns,
//! max versions, time ranges, filters) with a scan of that one row:
//! `[row, row + \0)`, which goes through `StoreScanner`, `MergedSource`
//! and `RegionScanner` and reads every store file (no bloom filters).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use bytes::Bytes;
use proptest::prelude::*;

use basalt_engine::block_cache::BlockCache;
use basalt_engine::compaction::CompactionPolicy;
use basalt_engine::fs::MemFileStore;
use basalt_engine::wal::{Wal, WalOptions};
use basalt_engine::{FamilyState, ManualClock, Region, RegionConfig, RegionInfo, StoreContext};
use basalt_types::descriptor::KeepDeletedCells;
use basalt_types::{
    BloomType, ColumnFamilyDescriptor, DataBlockEncoding, Delete, Durability, Filter, Get, Put,
    RowResult, Scan, TimeRange,
};

/// The clock's start; timestamps are spread around it.
const NOW: i64 = 1_000_000;
/// Explicit timestamps: `TS_BASE + i * TS_STEP` for i in `0..TIMESTAMPS`,
/// so equal timestamps, TTL expiry (a few seconds) and time ranges all
/// happen often.
const TS_BASE: i64 = NOW - 4_000;
const TS_STEP: i64 = 500;
const TIMESTAMPS: u8 = 10;
const ROWS: u8 = 4;
const FAMILIES: [&str; 2] = ["a", "b"];
/// The empty qualifier is where family markers live: it must be covered.
const QUALIFIERS: [&str; 4] = ["", "q0", "q1", "q2"];

fn ts(i: u8) -> i64 {
    TS_BASE + i64::from(i) * TS_STEP
}

fn row(i: u8) -> Bytes {
    Bytes::from(format!("r{i}"))
}

/// Filters in HBase's filter language, each tried against both paths.
fn filters() -> Vec<String> {
    vec![
        "KeyOnlyFilter()".into(),
        "FirstKeyOnlyFilter()".into(),
        "ColumnPrefixFilter('q')".into(),
        "ColumnCountGetFilter(1)".into(),
        "PageFilter(1)".into(),
        "ColumnPaginationFilter(1, 1)".into(),
        format!("TimestampsFilter({}, {}, {})", ts(2), ts(5), ts(8)),
        "ValueFilter(=, 'binaryprefix:v1')".into(),
        "QualifierFilter(<, 'binary:q1')".into(),
        "FamilyFilter(=, 'binary:b')".into(),
        "ColumnRangeFilter('q0', true, 'q2', false)".into(),
        "MultipleColumnPrefixFilter('q0', 'q2')".into(),
        "SingleColumnValueFilter('a', 'q0', =, 'binaryprefix:v1')".into(),
        "SingleColumnValueFilter('a', 'q0', =, 'binaryprefix:v1', true, false)".into(),
        "SingleColumnValueExcludeFilter('b', 'q1', !=, 'binaryprefix:v2')".into(),
        "DependentColumnFilter('a', 'q0')".into(),
        "DependentColumnFilter('b', 'q1', true)".into(),
        "SKIP ValueFilter(!=, 'binaryprefix:v0')".into(),
        "WHILE QualifierFilter(!=, 'binary:q2')".into(),
        "ValueFilter(=, 'binaryprefix:v1') OR QualifierFilter(=, 'binary:q2')".into(),
        "FirstKeyOnlyFilter() AND KeyOnlyFilter()".into(),
        "RowFilter(=, 'binary:r1')".into(),
        "PrefixFilter('r2')".into(),
        "InclusiveStopFilter('r1')".into(),
    ]
}

#[derive(Debug, Clone)]
struct FamilyOptions {
    max_versions: u32,
    min_versions: u32,
    ttl_seconds: Option<u64>,
    keep_deleted: KeepDeletedCells,
    new_version_behavior: bool,
    bloom: BloomType,
    encoding: DataBlockEncoding,
}

impl FamilyOptions {
    fn descriptor(&self, name: &str) -> ColumnFamilyDescriptor {
        let mut d = ColumnFamilyDescriptor::new(name)
            .max_versions(self.max_versions)
            .min_versions(self.min_versions.min(self.max_versions))
            .keep_deleted_cells(self.keep_deleted)
            .new_version_behavior(self.new_version_behavior)
            .bloom_filter(self.bloom)
            .data_block_encoding(self.encoding)
            // The smallest blocks there are: with the long values below, a
            // row spans several blocks of a file.
            .block_size(1024);
        if let Some(ttl) = self.ttl_seconds {
            d = d.ttl_seconds(ttl);
        }
        d
    }
}

fn family_options() -> impl Strategy<Value = FamilyOptions> {
    (
        1u32..=3,
        0u32..=1,
        prop::option::of(2u64..=4),
        prop::sample::select(KeepDeletedCells::ALL.to_vec()),
        any::<bool>(),
        prop::sample::select(BloomType::ALL.to_vec()),
        prop::sample::select(vec![DataBlockEncoding::None, DataBlockEncoding::Prefix]),
    )
        .prop_map(
            |(max_versions, min_versions, ttl_seconds, keep_deleted, nvb, bloom, encoding)| {
                FamilyOptions {
                    max_versions,
                    min_versions,
                    ttl_seconds,
                    keep_deleted,
                    new_version_behavior: nvb,
                    bloom,
                    encoding,
                }
            },
        )
}

/// Which columns a get reads.
#[derive(Debug, Clone)]
enum Columns {
    All,
    Family(u8),
    Some(Vec<(u8, u8)>),
    /// A whole family and some columns of the other.
    Mixed(u8, Vec<u8>),
}

#[derive(Debug, Clone)]
struct GetSpec {
    row: u8,
    columns: Columns,
    max_versions: u32,
    time_range: Option<(u8, u8)>,
    filter: Option<usize>,
}

impl GetSpec {
    fn get(&self, filters: &[String]) -> Get {
        let mut get = Get::new(row(self.row)).max_versions(self.max_versions);
        match &self.columns {
            Columns::All => {}
            Columns::Family(f) => get = get.family(FAMILIES[*f as usize]),
            Columns::Some(columns) => {
                for &(f, q) in columns {
                    get = get.column(FAMILIES[f as usize], QUALIFIERS[q as usize]);
                }
            }
            Columns::Mixed(f, qualifiers) => {
                get = get.family(FAMILIES[*f as usize]);
                let other = FAMILIES[1 - *f as usize];
                for &q in qualifiers {
                    get = get.column(other, QUALIFIERS[q as usize]);
                }
            }
        }
        if let Some((a, b)) = self.time_range {
            let (lo, hi) = (a.min(b), a.max(b) + 1);
            get = get.time_range(TimeRange::new(ts(lo), ts(hi)).unwrap());
        }
        if let Some(i) = self.filter {
            get = get.filter(Filter::parse(&filters[i]).unwrap());
        }
        get
    }
}

fn get_spec() -> impl Strategy<Value = GetSpec> {
    let family = 0u8..2;
    let qualifier = 0u8..QUALIFIERS.len() as u8;
    let columns = prop_oneof![
        3 => Just(Columns::All),
        2 => family.clone().prop_map(Columns::Family),
        3 => prop::collection::vec((family.clone(), qualifier.clone()), 1..4).prop_map(Columns::Some),
        1 => (family, prop::collection::vec(qualifier, 1..3)).prop_map(|(f, q)| Columns::Mixed(f, q)),
    ];
    (
        // One row past the written ones: a get of a row nobody wrote.
        0..=ROWS,
        columns,
        1u32..=4,
        prop::option::weighted(0.3, (0..TIMESTAMPS, 0..TIMESTAMPS)),
        prop::option::weighted(0.5, 0..filters().len()),
    )
        .prop_map(|(row, columns, max_versions, time_range, filter)| GetSpec {
            row,
            columns,
            max_versions,
            time_range,
            filter,
        })
}

#[derive(Debug, Clone)]
enum Op {
    Put {
        row: u8,
        family: u8,
        qualifier: u8,
        /// `None`: the server's timestamp.
        ts: Option<u8>,
        value: u8,
        /// Long values fill the small blocks.
        long: bool,
    },
    /// Delete (one version; `None`: the newest).
    DeleteVersion {
        row: u8,
        family: u8,
        qualifier: u8,
        ts: Option<u8>,
    },
    /// DeleteColumn (every version at or below).
    DeleteColumn {
        row: u8,
        family: u8,
        qualifier: u8,
        ts: Option<u8>,
    },
    /// DeleteFamily (every column at or below).
    DeleteFamily {
        row: u8,
        family: u8,
        ts: Option<u8>,
    },
    /// DeleteFamilyVersion (every column at exactly).
    DeleteFamilyVersion {
        row: u8,
        family: u8,
        ts: u8,
    },
    Flush,
    Compact {
        major: bool,
    },
    /// The clock moves on a second: TTLs expire.
    Tick,
    Check(GetSpec),
}

fn op() -> impl Strategy<Value = Op> {
    let row = 0..ROWS;
    let family = 0u8..2;
    let qualifier = 0u8..QUALIFIERS.len() as u8;
    let ts = prop::option::weighted(0.8, 0..TIMESTAMPS);
    prop_oneof![
        12 => (row.clone(), family.clone(), qualifier.clone(), ts.clone(), 0u8..4, prop::bool::weighted(0.3))
            .prop_map(|(row, family, qualifier, ts, value, long)| Op::Put { row, family, qualifier, ts, value, long }),
        2 => (row.clone(), family.clone(), qualifier.clone(), ts.clone())
            .prop_map(|(row, family, qualifier, ts)| Op::DeleteVersion { row, family, qualifier, ts }),
        2 => (row.clone(), family.clone(), qualifier, ts.clone())
            .prop_map(|(row, family, qualifier, ts)| Op::DeleteColumn { row, family, qualifier, ts }),
        1 => (row.clone(), family.clone(), ts)
            .prop_map(|(row, family, ts)| Op::DeleteFamily { row, family, ts }),
        1 => (row, family, 0..TIMESTAMPS)
            .prop_map(|(row, family, ts)| Op::DeleteFamilyVersion { row, family, ts }),
        2 => Just(Op::Flush),
        1 => any::<bool>().prop_map(|major| Op::Compact { major }),
        1 => Just(Op::Tick),
        4 => get_spec().prop_map(Op::Check),
    ]
}

struct Fixture {
    region: Region,
    clock: Arc<ManualClock>,
    _wal: Arc<Wal>,
    _dir: tempfile::TempDir,
}

fn open(families: &[FamilyOptions], cache: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let context = StoreContext {
        files: Arc::new(MemFileStore::new()),
        cache: cache.then(|| Arc::new(BlockCache::new(1 << 20))),
        policy: CompactionPolicy::default(),
        memory: None,
        fence: None,
        work: Default::default(),
    };
    let info = RegionInfo {
        id: 1,
        table: "default:t".into(),
        start_key: Default::default(),
        end_key: Default::default(),
    };
    let states = families
        .iter()
        .zip(FAMILIES)
        .map(|(options, name)| FamilyState {
            descriptor: options.descriptor(name),
            first_sequence: 0,
        })
        .collect();
    let config = RegionConfig {
        // Flushes happen where the test says.
        memstore_flush_bytes: usize::MAX / 4,
        memstore_block_bytes: usize::MAX / 2,
        ..RegionConfig::default()
    };
    let clock = Arc::new(ManualClock::new(NOW));
    let mut region = Region::open(
        info,
        states,
        dir.path().join("region"),
        context,
        clock.clone(),
        config,
    )
    .unwrap();
    region.finish_recovery(0);
    let (wal, _) = Wal::open(&dir.path().join("wal"), WalOptions::default(), |_| Ok(())).unwrap();
    region.attach_wal(wal.clone());
    Fixture {
        region,
        clock,
        _wal: wal,
        _dir: dir,
    }
}

fn apply(fixture: &Fixture, op: &Op) {
    let region = &fixture.region;
    let f = |i: u8| FAMILIES[i as usize];
    let q = |i: u8| QUALIFIERS[i as usize];
    let delete = |r: u8| Delete::new(row(r)).durability(Durability::SkipWal);
    match op {
        Op::Put {
            row: r,
            family,
            qualifier,
            ts: t,
            value,
            long,
        } => {
            let mut v = format!("v{value}").into_bytes();
            if *long {
                v.resize(600, b'.');
            }
            let put = Put::new(row(*r)).durability(Durability::SkipWal);
            let put = match t {
                Some(t) => put.add_at(f(*family), q(*qualifier), ts(*t), v),
                None => put.add(f(*family), q(*qualifier), v),
            };
            region.put(&put).unwrap();
        }
        Op::DeleteVersion {
            row: r,
            family,
            qualifier,
            ts: t,
        } => {
            let d = match t {
                Some(t) => delete(*r).column_at(f(*family), q(*qualifier), ts(*t)),
                None => delete(*r).column(f(*family), q(*qualifier)),
            };
            region.delete(&d).unwrap();
        }
        Op::DeleteColumn {
            row: r,
            family,
            qualifier,
            ts: t,
        } => {
            let d = match t {
                Some(t) => delete(*r).columns_at(f(*family), q(*qualifier), ts(*t)),
                None => delete(*r).columns(f(*family), q(*qualifier)),
            };
            region.delete(&d).unwrap();
        }
        Op::DeleteFamily {
            row: r,
            family,
            ts: t,
        } => {
            let d = match t {
                Some(t) => delete(*r).family_at(f(*family), ts(*t)),
                None => delete(*r).family(f(*family)),
            };
            region.delete(&d).unwrap();
        }
        Op::DeleteFamilyVersion {
            row: r,
            family,
            ts: t,
        } => {
            region
                .delete(&delete(*r).family_version(f(*family), ts(*t)))
                .unwrap();
        }
        Op::Flush => {
            region.flush().unwrap();
        }
        Op::Compact { major } => {
            region.compact(*major).unwrap();
        }
        Op::Tick => fixture.clock.advance(1_000),
        Op::Check(_) => {}
    }
}

/// What the general scanner returns for `get`: a scan of exactly its row.
fn through_scanner(region: &Region, get: &Get) -> RowResult {
    let mut stop = get.row.to_vec();
    stop.push(0);
    let mut scan = Scan::new()
        .start_row(get.row.clone())
        .stop_row(stop)
        .max_versions(get.max_versions)
        .time_range(get.time_range);
    scan.columns = get.columns.clone();
    scan.filter = get.filter.clone();
    let mut scanner = region.scanner(&scan).unwrap();
    let first = scanner.next_result().unwrap();
    assert!(
        scanner.next_result().unwrap().is_none(),
        "a scan of one row returned two results"
    );
    first.unwrap_or_default()
}

fn check(region: &Region, spec: &GetSpec, filters: &[String]) -> Result<(), TestCaseError> {
    let get = spec.get(filters);
    let fast = region.get(&get).unwrap();
    let general = through_scanner(region, &get);
    prop_assert_eq!(fast, general, "get {:?}", get);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    })]

    #[test]
    fn point_gets_return_what_the_general_scanner_returns(
        families in prop::collection::vec(family_options(), 2),
        cache in any::<bool>(),
        ops in prop::collection::vec(op(), 1..60),
        final_gets in prop::collection::vec(get_spec(), 1..12),
    ) {
        let filters = filters();
        let fixture = open(&families, cache);
        for op in &ops {
            match op {
                Op::Check(spec) => check(&fixture.region, spec, &filters)?,
                other => apply(&fixture, other),
            }
        }
        // Every row as it ends up, read plainly and with the random gets.
        for r in 0..=ROWS {
            let all = GetSpec {
                row: r,
                columns: Columns::All,
                max_versions: 4,
                time_range: None,
                filter: None,
            };
            check(&fixture.region, &all, &filters)?;
        }
        for spec in &final_gets {
            check(&fixture.region, spec, &filters)?;
        }
    }
}

/// A row cut across several data blocks of one file, with versions in the
/// memstore and in a second file: the get reads on into the next block
/// where the index says the row continues, and merges the parts.
#[test]
fn a_get_reads_a_row_that_spans_blocks_and_files() {
    let options = FamilyOptions {
        max_versions: 3,
        min_versions: 0,
        ttl_seconds: None,
        keep_deleted: KeepDeletedCells::False,
        new_version_behavior: false,
        bloom: BloomType::Row,
        encoding: DataBlockEncoding::Prefix,
    };
    let fixture = open(&[options.clone(), options], true);
    let region = &fixture.region;
    let value = |i: usize| {
        let mut v = format!("value-{i}").into_bytes();
        v.resize(400, b'.');
        v
    };
    let mut put = Put::new("wide").durability(Durability::SkipWal);
    for i in 0..20 {
        put = put.add_at("a", format!("q{i:02}"), ts(1), value(i));
    }
    region.put(&put).unwrap();
    region
        .put(&Put::new("after").add_at("a", "q", ts(1), "x"))
        .unwrap();
    region.flush().unwrap();
    let newer = Put::new("wide").add_at("a", "q05", ts(3), "newer");
    region.put(&newer).unwrap();
    region.flush().unwrap();
    region
        .put(&Put::new("wide").add_at("a", "q07", ts(4), "newest"))
        .unwrap();

    let got = region.get(&Get::new("wide").max_versions(2)).unwrap();
    let cells: Vec<(String, i64)> = got
        .cells
        .iter()
        .map(|c| {
            (
                String::from_utf8_lossy(&c.qualifier).into_owned(),
                c.timestamp,
            )
        })
        .collect();
    let mut expected: Vec<(String, i64)> = (0..20).map(|i| (format!("q{i:02}"), ts(1))).collect();
    expected.insert(5, ("q05".into(), ts(3)));
    expected.insert(8, ("q07".into(), ts(4)));
    assert_eq!(cells, expected);
    assert_eq!(
        got,
        through_scanner(region, &Get::new("wide").max_versions(2))
    );
    assert_eq!(&got.cells[0].value[..], &value(0)[..]);
}

/// The values of column `a:q` a get returns, newest first.
fn values_of_q(region: &Region, get: Get) -> Vec<String> {
    let got = region.get(&get).unwrap();
    assert_eq!(got, through_scanner(region, &get), "get and scan agree");
    got.cells
        .iter()
        .map(|c| String::from_utf8_lossy(&c.value).into_owned())
        .collect()
}

/// A hot row: many versions of one column in each of two files and in
/// the memstore, more than VERSIONS. Each part stops the column at
/// VERSIONS (`version_limit.rs`); a delete marker of the row makes the
/// get collect every part whole again, so the versions it uncovers are
/// still found, and puts with their own TTL never count as versions.
#[test]
fn a_get_of_a_row_with_many_versions_returns_what_the_scanner_returns() {
    let options = FamilyOptions {
        max_versions: 2,
        min_versions: 0,
        ttl_seconds: None,
        keep_deleted: KeepDeletedCells::False,
        new_version_behavior: false,
        bloom: BloomType::Row,
        encoding: DataBlockEncoding::None,
    };
    let fixture = open(&[options.clone(), options], true);
    let region = &fixture.region;
    let put = |t: i64, value: String| {
        region
            .put(
                &Put::new("hot")
                    .add_at("a", "q", t, value)
                    .durability(Durability::SkipWal),
            )
            .unwrap();
    };
    // Versions 1..=300 in the first file, 301..=600 in the second, and
    // 601..=900 in the memstore.
    for part in 0..3 {
        for i in 1..=300 {
            let t = part * 300 + i;
            put(t, format!("v{t}"));
        }
        if part < 2 {
            region.flush().unwrap();
        }
    }
    let all_versions = || Get::new("hot").max_versions(10);
    assert_eq!(values_of_q(region, all_versions()), ["v900", "v899"]);
    // Within the limit's reach: a time range below the newest versions
    // finds nothing, as versions count before the time range.
    let old_range = all_versions().time_range(TimeRange::new(0, 500).unwrap());
    assert!(values_of_q(region, old_range).is_empty());

    // A put with its own TTL, expired, is not a version: the two below it
    // are returned.
    region
        .put(
            &Put::new("hot")
                .add_at("a", "q", 950, "short-lived")
                .ttl_millis(1)
                .durability(Durability::SkipWal),
        )
        .unwrap();
    fixture.clock.advance(10);
    assert_eq!(values_of_q(region, all_versions()), ["v900", "v899"]);

    // Deleting the two newest versions uncovers older ones that the
    // memstore's part alone would have stopped before.
    region
        .delete(
            &Delete::new("hot")
                .column_at("a", "q", 900)
                .column_at("a", "q", 899)
                .durability(Durability::SkipWal),
        )
        .unwrap();
    assert_eq!(values_of_q(region, all_versions()), ["v898", "v897"]);
    // Every version in the memstore and the second file deleted, one by
    // one: the first file's newest two come back.
    let mut delete = Delete::new("hot").durability(Durability::SkipWal);
    for t in 301..=898 {
        delete = delete.column_at("a", "q", t);
    }
    region.delete(&delete).unwrap();
    assert_eq!(values_of_q(region, all_versions()), ["v300", "v299"]);
    region.flush().unwrap();
    assert_eq!(values_of_q(region, all_versions()), ["v300", "v299"]);
}
