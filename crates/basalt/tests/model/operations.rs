//! The operations a case runs: the schema they address, their specs (what
//! proptest generates and shrinks), and how a spec becomes an engine request.

use std::fmt;

use basalt::{
    Append, CheckAndMutate, Comparator, CompareOp, Delete, Durability, Filter, Increment,
    ListOperator, Mutation, Put, RowMutations, TimeRange,
};
use bytes::Bytes;

/// Reads with filters take part in the random sequences. Switch off while
/// `Filter::build` is a pass-all placeholder.
pub(crate) const FILTERS_IN_MODEL: bool = true;

pub(crate) const TABLE: &str = "model";
/// The manual clock's start.
pub(crate) const START_MS: i64 = 100_000;

// ------------------------------------------------------------------ schema

pub(crate) struct FamSpec {
    pub(crate) name: &'static str,
    pub(crate) versions: usize,
    pub(crate) min_versions: usize,
    pub(crate) ttl_ms: Option<i64>,
    pub(crate) keep_deleted: bool,
}

/// The table's families, in name order (the order reads return them in).
pub(crate) static FAMS: [FamSpec; 4] = [
    FamSpec {
        name: "f1",
        versions: 1,
        min_versions: 0,
        ttl_ms: None,
        keep_deleted: false,
    },
    FamSpec {
        name: "f2",
        versions: 3,
        min_versions: 0,
        ttl_ms: None,
        keep_deleted: false,
    },
    FamSpec {
        name: "f3",
        versions: 2,
        min_versions: 1,
        ttl_ms: Some(3_000),
        keep_deleted: false,
    },
    FamSpec {
        name: "f4",
        versions: 3,
        min_versions: 0,
        ttl_ms: None,
        keep_deleted: true,
    },
];

/// Families raw scans may read (no TTL).
pub(crate) const RAW_FAMS: [Fam; 3] = [Fam(0), Fam(1), Fam(3)];

// ------------------------------------------------------------------ op specs

/// A family, by index into [`FAMS`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Fam(pub(crate) usize);

impl Fam {
    pub(crate) fn name(self) -> Bytes {
        Bytes::from_static(FAMS[self.0].name.as_bytes())
    }
}

impl fmt::Debug for Fam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(FAMS[self.0].name)
    }
}

/// An explicit timestamp: absolute, or relative to the clock when the op runs.
#[derive(Clone, Copy)]
pub(crate) enum Ts {
    Abs(i64),
    Rel(i64),
}

impl Ts {
    pub(crate) fn at(self, now: i64) -> i64 {
        match self {
            Ts::Abs(t) => t,
            Ts::Rel(o) => (now + o).max(0),
        }
    }
}

impl fmt::Debug for Ts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ts::Abs(t) => write!(f, "{t}"),
            Ts::Rel(o) => write!(f, "now{o:+}"),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct PutSpec {
    pub(crate) row: Bytes,
    /// The put's default timestamp (`Put::with_timestamp`).
    pub(crate) ts: Option<Ts>,
    /// family, qualifier, own timestamp (`add_at`), value.
    pub(crate) cells: Vec<(Fam, Bytes, Option<Ts>, Bytes)>,
    pub(crate) durability: Durability,
}

#[derive(Clone, Debug)]
pub(crate) enum DelEntry {
    Family(Fam),
    FamilyAt(Fam, Ts),
    FamilyVersion(Fam, Ts),
    Columns(Fam, Bytes),
    ColumnsAt(Fam, Bytes, Ts),
    /// The latest version.
    Column(Fam, Bytes),
    ColumnAt(Fam, Bytes, Ts),
}

#[derive(Clone, Debug)]
pub(crate) struct DeleteSpec {
    pub(crate) row: Bytes,
    /// `Delete::with_timestamp`.
    pub(crate) ts: Option<Ts>,
    /// Empty: the whole row.
    pub(crate) entries: Vec<DelEntry>,
    pub(crate) durability: Durability,
}

#[derive(Clone, Debug)]
pub(crate) enum MutSpec {
    Put(PutSpec),
    Delete(DeleteSpec),
}

impl MutSpec {
    pub(crate) fn row(&self) -> &Bytes {
        match self {
            MutSpec::Put(p) => &p.row,
            MutSpec::Delete(d) => &d.row,
        }
    }

    pub(crate) fn set_row(&mut self, row: &Bytes) {
        match self {
            MutSpec::Put(p) => p.row = row.clone(),
            MutSpec::Delete(d) => d.row = row.clone(),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum CmpSpec {
    Binary(Bytes),
    BinaryPrefix(Bytes),
}

#[derive(Clone, Debug)]
pub(crate) enum CondSpec {
    Absent,
    Compare(CompareOp, CmpSpec),
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum TrSpec {
    All,
    /// `[ts, ts + span)`.
    Range(Ts, i64),
    At(Ts),
    Before(Ts),
}

#[derive(Clone, Debug)]
pub(crate) enum SelItem {
    Family(Fam),
    Column(Fam, Bytes),
}

#[derive(Clone, Debug)]
pub(crate) enum FilterSpec {
    Value(CompareOp, Bytes),
    Prefix(Bytes),
    ColumnPrefix(Bytes),
    KeyOnly,
    Page(u64),
    Timestamps(Vec<Ts>),
    FirstKeyOnly,
    List(ListOperator, Vec<FilterSpec>),
}

#[derive(Clone, Debug)]
pub(crate) struct GetSpec {
    pub(crate) row: Bytes,
    pub(crate) sel: Vec<SelItem>,
    pub(crate) max_versions: u32,
    pub(crate) tr: TrSpec,
    pub(crate) filter: Option<FilterSpec>,
}

#[derive(Clone, Debug)]
pub(crate) struct ScanSpec {
    pub(crate) start: Bytes,
    pub(crate) stop: Bytes,
    pub(crate) prefix: Option<Bytes>,
    pub(crate) reversed: bool,
    pub(crate) sel: Vec<SelItem>,
    pub(crate) max_versions: u32,
    pub(crate) tr: TrSpec,
    pub(crate) filter: Option<FilterSpec>,
    pub(crate) batch: Option<usize>,
    pub(crate) limit: Option<usize>,
}

#[derive(Clone, Debug)]
pub(crate) struct RawScanSpec {
    pub(crate) start: Bytes,
    pub(crate) stop: Bytes,
    pub(crate) reversed: bool,
    /// Non-empty, families without TTL.
    pub(crate) fams: Vec<Fam>,
    pub(crate) max_versions: u32,
    pub(crate) tr: TrSpec,
    pub(crate) batch: Option<usize>,
    pub(crate) limit: Option<usize>,
}

#[derive(Clone, Debug)]
pub(crate) enum Op {
    Put(PutSpec),
    Delete(DeleteSpec),
    Increment {
        row: Bytes,
        cols: Vec<(Fam, Bytes, i64)>,
        durability: Durability,
    },
    Append {
        row: Bytes,
        cols: Vec<(Fam, Bytes, Bytes)>,
        durability: Durability,
    },
    CheckAndMutate {
        row: Bytes,
        fam: Fam,
        qual: Bytes,
        cond: CondSpec,
        tr: TrSpec,
        muts: Vec<MutSpec>,
    },
    RowMutations {
        row: Bytes,
        muts: Vec<MutSpec>,
    },
    Batch(Vec<MutSpec>),
    Get(GetSpec),
    Scan(Box<ScanSpec>),
    RawScan(Box<RawScanSpec>),
    /// Drop the database (after `close()` when `close`) and open it again.
    Reopen {
        close: bool,
    },
    /// `flush_table`: nothing a read returns changes.
    Flush,
    /// `compact_table(minor)`: nothing a read returns changes.
    MinorCompact,
    /// `flush_table` then `compact_table(major)`: the reference drops what
    /// the major compaction drops.
    MajorCompact,
    /// `split_table` at a key (an error exactly when the key is empty or
    /// already a region boundary) or, without one, every region at its
    /// midpoint: nothing a read returns changes.
    Split(Option<Bytes>),
    /// `split_region` of the `n % regions`-th region at its midpoint, by
    /// encoded name.
    SplitRegion(usize),
    /// `merge_regions` of the `n % (regions - 1)`-th region and the next.
    Merge(usize),
    /// `snapshot` of the table (docs/snapshots.md): the reference keeps a
    /// copy of itself under the snapshot's name.
    Snapshot,
    /// `restore_snapshot` of the `n % snapshots`-th snapshot (the table
    /// disabled around it): the reference becomes that snapshot's copy.
    Restore(usize),
    /// `clone_snapshot` of the `n % snapshots`-th snapshot into a new
    /// table, whose every read must match that snapshot's copy; then the
    /// clone is dropped.
    Clone(usize),
}

/// One step: move the clock forward, then run the op.
#[derive(Clone)]
pub(crate) struct Step {
    pub(crate) advance: i64,
    pub(crate) op: Op,
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "+{}ms {:?}", self.advance, self.op)
    }
}

pub(crate) fn engine_range(tr: TrSpec, now: i64) -> TimeRange {
    match tr {
        TrSpec::All => TimeRange::all(),
        TrSpec::Range(t, span) => {
            let min = t.at(now);
            TimeRange::new(min, min + span).unwrap()
        }
        TrSpec::At(t) => TimeRange::at(t.at(now)).unwrap(),
        TrSpec::Before(t) => TimeRange::before(t.at(now)).unwrap(),
    }
}

/// A filter with its timestamps resolved.
#[derive(Clone, Debug)]
pub(crate) enum RFilter {
    Value(CompareOp, Bytes),
    Prefix(Bytes),
    ColumnPrefix(Bytes),
    KeyOnly,
    Page(u64),
    Timestamps(Vec<i64>),
    FirstKeyOnly,
    List(ListOperator, Vec<RFilter>),
}

pub(crate) fn resolve_filter(f: &FilterSpec, now: i64) -> RFilter {
    match f {
        FilterSpec::Value(op, v) => RFilter::Value(*op, v.clone()),
        FilterSpec::Prefix(p) => RFilter::Prefix(p.clone()),
        FilterSpec::ColumnPrefix(p) => RFilter::ColumnPrefix(p.clone()),
        FilterSpec::KeyOnly => RFilter::KeyOnly,
        FilterSpec::Page(n) => RFilter::Page(*n),
        FilterSpec::Timestamps(ts) => RFilter::Timestamps(ts.iter().map(|t| t.at(now)).collect()),
        FilterSpec::FirstKeyOnly => RFilter::FirstKeyOnly,
        FilterSpec::List(op, fs) => {
            RFilter::List(*op, fs.iter().map(|f| resolve_filter(f, now)).collect())
        }
    }
}

pub(crate) fn engine_filter(f: &RFilter) -> Filter {
    match f {
        RFilter::Value(op, v) => Filter::Value(*op, Comparator::binary(v.clone())),
        RFilter::Prefix(p) => Filter::Prefix(p.clone()),
        RFilter::ColumnPrefix(p) => Filter::ColumnPrefix(p.clone()),
        RFilter::KeyOnly => Filter::KeyOnly {
            length_as_value: false,
        },
        RFilter::Page(n) => Filter::Page(*n),
        RFilter::Timestamps(ts) => Filter::Timestamps(ts.clone()),
        RFilter::FirstKeyOnly => Filter::FirstKeyOnly,
        RFilter::List(op, fs) => Filter::List(*op, fs.iter().map(engine_filter).collect()),
    }
}

pub(crate) fn build_put(p: &PutSpec, now: i64) -> Put {
    let mut put = match p.ts {
        Some(t) => Put::with_timestamp(p.row.clone(), t.at(now)),
        None => Put::new(p.row.clone()),
    };
    for (f, q, ts, v) in &p.cells {
        put = match ts {
            Some(t) => put.add_at(f.name(), q.clone(), t.at(now), v.clone()),
            None => put.add(f.name(), q.clone(), v.clone()),
        };
    }
    put.durability(p.durability)
}

pub(crate) fn build_delete(d: &DeleteSpec, now: i64) -> Delete {
    let mut del = match d.ts {
        Some(t) => Delete::with_timestamp(d.row.clone(), t.at(now)),
        None => Delete::new(d.row.clone()),
    };
    for e in &d.entries {
        del = match e {
            DelEntry::Family(f) => del.family(f.name()),
            DelEntry::FamilyAt(f, t) => del.family_at(f.name(), t.at(now)),
            DelEntry::FamilyVersion(f, t) => del.family_version(f.name(), t.at(now)),
            DelEntry::Columns(f, q) => del.columns(f.name(), q.clone()),
            DelEntry::ColumnsAt(f, q, t) => del.columns_at(f.name(), q.clone(), t.at(now)),
            DelEntry::Column(f, q) => del.column(f.name(), q.clone()),
            DelEntry::ColumnAt(f, q, t) => del.column_at(f.name(), q.clone(), t.at(now)),
        };
    }
    del.durability(d.durability)
}

pub(crate) fn build_mutation(m: &MutSpec, now: i64) -> Mutation {
    match m {
        MutSpec::Put(p) => Mutation::Put(build_put(p, now)),
        MutSpec::Delete(d) => Mutation::Delete(build_delete(d, now)),
    }
}

pub(crate) fn build_row_mutations(row: &Bytes, muts: &[MutSpec], now: i64) -> RowMutations {
    muts.iter().fold(RowMutations::new(row.clone()), |rm, m| {
        rm.add(build_mutation(m, now)).unwrap()
    })
}

pub(crate) fn build_increment(
    row: &Bytes,
    cols: &[(Fam, Bytes, i64)],
    durability: Durability,
) -> Increment {
    cols.iter()
        .fold(Increment::new(row.clone()), |i, (f, q, d)| {
            i.add(f.name(), q.clone(), *d)
        })
        .durability(durability)
}

pub(crate) fn build_append(
    row: &Bytes,
    cols: &[(Fam, Bytes, Bytes)],
    durability: Durability,
) -> Append {
    cols.iter()
        .fold(Append::new(row.clone()), |a, (f, q, s)| {
            a.add(f.name(), q.clone(), s.clone())
        })
        .durability(durability)
}

pub(crate) fn build_check_and_mutate(
    row: &Bytes,
    fam: Fam,
    qual: &Bytes,
    cond: &CondSpec,
    tr: TrSpec,
    muts: &[MutSpec],
    now: i64,
) -> CheckAndMutate {
    let cam = CheckAndMutate::new(row.clone(), fam.name(), qual.clone())
        .time_range(engine_range(tr, now));
    let cam = match cond {
        CondSpec::Absent => cam.if_absent(),
        CondSpec::Compare(op, CmpSpec::Binary(v)) => {
            cam.if_matches(*op, Comparator::Binary(v.clone()))
        }
        CondSpec::Compare(op, CmpSpec::BinaryPrefix(v)) => {
            cam.if_matches(*op, Comparator::BinaryPrefix(v.clone()))
        }
    };
    muts.iter()
        .fold(cam, |cam, m| cam.then(build_mutation(m, now)).unwrap())
}

pub(crate) fn active_filter(f: &Option<FilterSpec>, now: i64) -> Option<RFilter> {
    f.as_ref()
        .filter(|_| FILTERS_IN_MODEL)
        .map(|f| resolve_filter(f, now))
}
