//! The in-memory reference: every cell ever written in a flat list, each
//! answer recomputed from scratch with HBase's rules (see the crate docs).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use basalt::{CellType, CompareOp, ListOperator};
use bytes::Bytes;

use crate::operations::*;
use crate::stat;

// ------------------------------------------------------------------ shared helpers

/// A half-open time range, the model's own.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Range {
    pub(crate) min: i64,
    pub(crate) max: i64,
}

impl Range {
    pub(crate) const ALL: Range = Range {
        min: 0,
        max: i64::MAX,
    };

    pub(crate) fn contains(self, ts: i64) -> bool {
        self.min <= ts && ts < self.max
    }
}

pub(crate) fn model_range(tr: TrSpec, now: i64) -> Range {
    match tr {
        TrSpec::All => Range::ALL,
        TrSpec::Range(t, span) => {
            let min = t.at(now);
            Range {
                min,
                max: min + span,
            }
        }
        TrSpec::At(t) => {
            let min = t.at(now);
            Range { min, max: min + 1 }
        }
        TrSpec::Before(t) => Range {
            min: 0,
            max: t.at(now),
        },
    }
}

/// `left op right`, from the ordering of left against right.
pub(crate) fn op_holds(op: CompareOp, ord: Ordering) -> bool {
    match op {
        CompareOp::Less => ord == Ordering::Less,
        CompareOp::LessOrEqual => ord != Ordering::Greater,
        CompareOp::Equal => ord == Ordering::Equal,
        CompareOp::NotEqual => ord != Ordering::Equal,
        CompareOp::GreaterOrEqual => ord != Ordering::Less,
        CompareOp::Greater => ord == Ordering::Greater,
    }
}

pub(crate) fn escape(bytes: &[u8]) -> String {
    let mut s = String::new();
    if bytes.len() > 40 {
        // Long values (the model's grow only by appends at the end): the
        // ends and the length tell them apart.
        let n = bytes.len();
        return format!(
            "{}..{}({n} bytes)",
            escape(&bytes[..12]),
            escape(&bytes[n - 12..])
        );
    }
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02X}"));
        }
    }
    s
}

/// What the comparison looks at in a cell: everything but the sequence id.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct View {
    pub(crate) row: Bytes,
    pub(crate) family: Bytes,
    pub(crate) qualifier: Bytes,
    pub(crate) ts: i64,
    pub(crate) kind: CellType,
    pub(crate) value: Bytes,
}

impl fmt::Debug for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}:{}/{}/{}={}",
            escape(&self.row),
            escape(&self.family),
            escape(&self.qualifier),
            self.ts,
            self.kind,
            escape(&self.value)
        )
    }
}

/// A returned row (or batch of one): its key and cells.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RowView {
    pub(crate) row: Bytes,
    pub(crate) cells: Vec<View>,
}

impl fmt::Debug for RowView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ", escape(&self.row))?;
        f.debug_list().entries(&self.cells).finish()
    }
}

// ------------------------------------------------------------------ the reference

/// A cell as the model stores it.
#[derive(Clone, Debug)]
pub(crate) struct MCell {
    pub(crate) row: Bytes,
    pub(crate) fam: usize,
    pub(crate) qual: Bytes,
    pub(crate) ts: i64,
    pub(crate) kind: CellType,
    /// Write number: orders writes (the later one wins at equal coordinates).
    pub(crate) seq: u64,
    pub(crate) value: Bytes,
}

impl MCell {
    pub(crate) fn view(&self) -> View {
        View {
            row: self.row.clone(),
            family: Fam(self.fam).name(),
            qualifier: self.qual.clone(),
            ts: self.ts,
            kind: self.kind,
            value: self.value.clone(),
        }
    }

    pub(crate) fn put(row: &Bytes, fam: usize, qual: &Bytes, ts: i64, value: Bytes) -> MCell {
        MCell {
            row: row.clone(),
            fam,
            qual: qual.clone(),
            ts,
            kind: CellType::Put,
            seq: 0,
            value,
        }
    }

    pub(crate) fn marker(row: &Bytes, fam: usize, qual: &Bytes, ts: i64, kind: CellType) -> MCell {
        MCell {
            row: row.clone(),
            fam,
            qual: qual.clone(),
            ts,
            kind,
            seq: 0,
            value: Bytes::new(),
        }
    }
}

/// Column selection: family -> `None` (all qualifiers) or a set; empty = all.
pub(crate) type Sel = BTreeMap<usize, Option<BTreeSet<Bytes>>>;

pub(crate) fn model_sel(items: &[SelItem]) -> Sel {
    let mut sel = Sel::new();
    for item in items {
        match item {
            SelItem::Family(f) => {
                sel.insert(f.0, None);
            }
            SelItem::Column(f, q) => {
                let entry = sel.entry(f.0).or_insert(None);
                match entry {
                    Some(set) => {
                        set.insert(q.clone());
                    }
                    None => *entry = Some(BTreeSet::from([q.clone()])),
                }
            }
        }
    }
    sel
}

pub(crate) fn sel_family(sel: &Sel, fam: usize) -> bool {
    sel.is_empty() || sel.contains_key(&fam)
}

pub(crate) fn sel_column(sel: &Sel, fam: usize, qual: &Bytes) -> bool {
    if sel.is_empty() {
        return true;
    }
    match sel.get(&fam) {
        None => false,
        Some(None) => true,
        Some(Some(set)) => set.contains(qual),
    }
}

/// Row bounds of a scan, the model's own reading of start/stop/prefix/reversed.
pub(crate) struct RowBounds {
    pub(crate) start: Bytes,
    pub(crate) stop: Bytes,
    pub(crate) prefix: Option<Bytes>,
    pub(crate) reversed: bool,
}

impl RowBounds {
    pub(crate) fn contains(&self, row: &[u8]) -> bool {
        let (low, low_inclusive, high, high_inclusive) = if self.reversed {
            (&self.stop, false, &self.start, true)
        } else {
            (&self.start, true, &self.stop, false)
        };
        let above = low.is_empty()
            || if low_inclusive {
                row >= &low[..]
            } else {
                row > &low[..]
            };
        let below = high.is_empty()
            || if high_inclusive {
                row <= &high[..]
            } else {
                row < &high[..]
            };
        let prefixed = self.prefix.as_ref().is_none_or(|p| row.starts_with(p));
        above && below && prefixed
    }
}

/// What a (non-raw) read asks for.
pub(crate) struct ReadReq {
    pub(crate) sel: Sel,
    pub(crate) max_versions: usize,
    pub(crate) tr: Range,
    pub(crate) filter: Option<RFilter>,
    pub(crate) limit: Option<usize>,
    pub(crate) batch: Option<usize>,
}

pub(crate) fn filter_drops_row_key(f: &RFilter, row: &[u8]) -> bool {
    match f {
        RFilter::Prefix(p) => !row.starts_with(p),
        RFilter::List(ListOperator::MustPassAll, fs) => {
            fs.iter().any(|f| filter_drops_row_key(f, row))
        }
        RFilter::List(ListOperator::MustPassOne, fs) => {
            fs.iter().all(|f| filter_drops_row_key(f, row))
        }
        _ => false,
    }
}

/// Whether a stateless filter keeps a cell (FirstKeyOnly and Page keep state
/// and are handled by the read loop).
pub(crate) fn filter_keeps_cell(f: &RFilter, c: &MCell) -> bool {
    match f {
        RFilter::Value(op, v) => op_holds(*op, c.value[..].cmp(&v[..])),
        RFilter::Prefix(p) => c.row.starts_with(p),
        RFilter::ColumnPrefix(p) => c.qual.starts_with(p),
        RFilter::KeyOnly | RFilter::Page(_) | RFilter::FirstKeyOnly => true,
        RFilter::Timestamps(ts) => ts.contains(&c.ts),
        RFilter::List(ListOperator::MustPassAll, fs) => fs.iter().all(|f| filter_keeps_cell(f, c)),
        RFilter::List(ListOperator::MustPassOne, fs) => fs.iter().any(|f| filter_keeps_cell(f, c)),
    }
}

pub(crate) fn filter_transform(f: &RFilter, mut c: MCell) -> MCell {
    match f {
        RFilter::KeyOnly => {
            c.value = Bytes::new();
            c
        }
        RFilter::List(_, fs) => fs.iter().fold(c, |c, f| filter_transform(f, c)),
        _ => c,
    }
}

pub(crate) fn split_batches(rows: Vec<(Bytes, Vec<MCell>)>, batch: Option<usize>) -> Vec<RowView> {
    let mut out = Vec::new();
    for (row, cells) in rows {
        let views: Vec<View> = cells.iter().map(MCell::view).collect();
        match batch {
            Some(n) => {
                for chunk in views.chunks(n) {
                    out.push(RowView {
                        row: row.clone(),
                        cells: chunk.to_vec(),
                    });
                }
            }
            None => out.push(RowView { row, cells: views }),
        }
    }
    out
}

/// Whether delete marker `m` hides a put at `ts` of its family (whatever
/// the put's column: the caller checks that).
pub(crate) fn marker_hides(m: &MCell, ts: i64) -> bool {
    match m.kind {
        CellType::DeleteFamily | CellType::DeleteColumn => ts <= m.ts,
        CellType::DeleteFamilyVersion | CellType::Delete => ts == m.ts,
        CellType::Put => false,
    }
}

/// Whether marker `m` is about column `qual` of `row`/`fam`.
pub(crate) fn marker_covers(m: &MCell, row: &[u8], fam: usize, qual: &[u8]) -> bool {
    m.row == row
        && m.fam == fam
        && m.kind != CellType::Put
        && (matches!(
            m.kind,
            CellType::DeleteFamily | CellType::DeleteFamilyVersion
        ) || m.qual == qual)
}

/// A mutation's cells and, when it took a server timestamp, the row and
/// timestamp to record once it is applied.
pub(crate) type ResolvedMutation = (Vec<MCell>, Option<(Bytes, i64)>);

#[derive(Clone, Default)]
pub(crate) struct Model {
    pub(crate) cells: Vec<MCell>,
    pub(crate) seq: u64,
    /// The server timestamp each row was last given, while it is not
    /// before the clock (issue 12's rule: a row's server timestamps
    /// strictly increase in the order its writes are applied). The engine
    /// keeps it in memory only, so a reopen forgets it; splits and merges
    /// hand it over.
    pub(crate) row_clock: BTreeMap<Bytes, i64>,
    /// Markers major compactions dropped (only to count, in [`STATS`], the
    /// puts they would have masked).
    pub(crate) dropped_markers: Vec<MCell>,
}

impl Model {
    /// Applies one write (one write number for all its cells). Identical
    /// coordinates within the write: the last one wins.
    pub(crate) fn apply(&mut self, cells: Vec<MCell>) {
        self.seq += 1;
        let seq = self.seq;
        for mut c in cells {
            c.seq = seq;
            if c.kind == CellType::Put
                && self
                    .dropped_markers
                    .iter()
                    .any(|m| marker_covers(m, &c.row, c.fam, &c.qual) && marker_hides(m, c.ts))
            {
                stat("write: put a major-compacted marker would have masked");
            }
            self.cells.retain(|o| {
                !(o.seq == seq
                    && o.row == c.row
                    && o.fam == c.fam
                    && o.qual == c.qual
                    && o.ts == c.ts
                    && o.kind == c.kind)
            });
            self.cells.push(c);
        }
    }

    /// The versions of a column that survive deletes, duplicate timestamps,
    /// VERSIONS and TTL/MIN_VERSIONS, newest first, before the read's time
    /// range selects among them. `tr` matters only for KEEP_DELETED_CELLS.
    pub(crate) fn versions(
        &self,
        row: &[u8],
        fam: usize,
        qual: &[u8],
        tr: Range,
        now: i64,
    ) -> Vec<&MCell> {
        let spec = &FAMS[fam];
        let markers: Vec<&MCell> = self
            .cells
            .iter()
            .filter(|c| c.row == row && c.fam == fam && c.kind != CellType::Put)
            .filter(|c| {
                matches!(
                    c.kind,
                    CellType::DeleteFamily | CellType::DeleteFamilyVersion
                ) || c.qual == qual
            })
            .filter(|c| !spec.keep_deleted || tr.contains(c.ts))
            .collect();
        let hides = marker_hides;
        let deleted = |ts: i64| markers.iter().any(|m| hides(m, ts));
        let mut puts: Vec<&MCell> = self
            .cells
            .iter()
            .filter(|c| c.row == row && c.fam == fam && c.qual == qual && c.kind == CellType::Put)
            .collect();
        // Newest timestamp first; at one timestamp the latest write first.
        puts.sort_by(|a, b| b.ts.cmp(&a.ts).then(b.seq.cmp(&a.seq)));
        let before_dedup = puts.len();
        puts.dedup_by_key(|c| c.ts);
        if puts.len() < before_dedup {
            stat("read: same-timestamp puts collapsed");
        }
        if puts
            .iter()
            .any(|p| markers.iter().any(|m| m.seq < p.seq && hides(m, p.ts)))
        {
            stat("read: put hidden by an earlier-written marker");
        }
        let mut kept = Vec::new();
        for (i, c) in puts.into_iter().filter(|c| !deleted(c.ts)).enumerate() {
            let k = i + 1;
            if k > spec.versions {
                stat("read: versions beyond VERSIONS dropped");
                break;
            }
            let expired = spec.ttl_ms.is_some_and(|ttl| c.ts < now - ttl);
            if expired && k <= spec.min_versions {
                stat("read: expired version kept by MIN_VERSIONS");
            }
            if k > spec.min_versions && expired {
                stat("read: expired versions dropped");
                break;
            }
            kept.push(c);
        }
        kept
    }

    /// A major compaction of every store at `now`, all cells being in the
    /// files it rewrites (see the module docs).
    /// A major compaction of every region, after a flush (every cell is in
    /// the compacted files). `kept_deleted` is what the engine's stores of
    /// the family keeping deleted cells were, one per region (see
    /// [`KeptDeletedStore`]): which of them the compaction rewrote, and
    /// against which recorded oldest put.
    pub(crate) fn major_compact(
        &mut self,
        now: i64,
        kept_deleted: &[KeptDeletedStore],
    ) -> Result<(), String> {
        let mut kept: Vec<MCell> = Vec::new();
        let columns: BTreeSet<(Bytes, usize, Bytes)> = self
            .cells
            .iter()
            .filter(|c| c.kind == CellType::Put)
            .map(|c| (c.row.clone(), c.fam, c.qual.clone()))
            .collect();
        for (fam, spec) in FAMS.iter().enumerate() {
            if spec.keep_deleted {
                assert!(
                    spec.ttl_ms.is_none(),
                    "the model keeps deleted cells only without a TTL"
                );
                for store in kept_deleted {
                    let in_region = |c: &&MCell| {
                        c.fam == fam
                            && c.row >= store.start
                            && (store.end.is_empty() || c.row < store.end)
                    };
                    let cells: Vec<MCell> = self.cells.iter().filter(in_region).cloned().collect();
                    let Some(recorded) = store.earliest_put else {
                        stat("major compaction: KDC store left as it was");
                        kept.extend(cells);
                        continue;
                    };
                    // The files' record may be older than the region's
                    // oldest put within its column's versions (a split
                    // daughter's links record their parent's), never
                    // younger. Puts past a column's versions may be older
                    // than the record: HBase's flush would not have written
                    // them, and the record is what it would have written.
                    let oldest = oldest_put_within_versions(&cells, spec.versions);
                    if recorded > oldest {
                        return Err(format!(
                            "region [{}, {}) records its oldest put at {recorded}, \
                             but holds one within its column's versions at {oldest}",
                            escape(&store.start),
                            escape(&store.end)
                        ));
                    }
                    if recorded < oldest {
                        stat("major compaction: KDC store measured by an older record");
                    }
                    kept.extend(keep_deleted_compaction(cells, spec.versions, recorded));
                }
            } else {
                for (row, _, qual) in columns.iter().filter(|(_, f, _)| *f == fam) {
                    kept.extend(
                        self.versions(row, fam, qual, Range::ALL, now)
                            .into_iter()
                            .cloned(),
                    );
                }
                let markers = self
                    .cells
                    .iter()
                    .filter(|c| c.fam == fam && c.kind != CellType::Put);
                for m in markers {
                    stat("major compaction: marker dropped");
                    self.dropped_markers.push(m.clone());
                }
            }
        }
        let puts_before = self
            .cells
            .iter()
            .filter(|c| c.kind == CellType::Put)
            .count();
        let puts_after = kept.iter().filter(|c| c.kind == CellType::Put).count();
        if puts_after < puts_before {
            stat("major compaction: puts dropped");
        }
        self.cells = kept;
        Ok(())
    }

    /// The newest visible value of a column within `tr`.
    pub(crate) fn latest(
        &self,
        row: &[u8],
        fam: usize,
        qual: &[u8],
        tr: Range,
        now: i64,
    ) -> Option<&MCell> {
        self.versions(row, fam, qual, tr, now)
            .into_iter()
            .find(|c| tr.contains(c.ts))
    }

    pub(crate) fn rows(&self) -> BTreeSet<Bytes> {
        self.cells.iter().map(|c| c.row.clone()).collect()
    }

    /// Turns a put or delete into cells, reading the state as it is now
    /// (before the mutation). `latest_counts` numbers the "latest version"
    /// deletes of each column within one resolution.
    /// The timestamp a write of `row` without one gets at `now`: `now`, or
    /// one past the row's last server timestamp when that is not before it.
    pub(crate) fn next_server_ts(&self, row: &Bytes, now: i64) -> i64 {
        match self.row_clock.get(row) {
            Some(&last) if last >= now => last + 1,
            _ => now,
        }
    }

    /// Notes that an applied write gave `row` the server timestamp `ts`.
    pub(crate) fn record_server_ts(&mut self, row: &Bytes, ts: i64, now: i64) {
        if ts >= now {
            let last = self.row_clock.entry(row.clone()).or_insert(ts);
            *last = (*last).max(ts);
        }
    }

    /// A reopen: the engine's record is in memory only.
    pub(crate) fn forget_server_ts(&mut self) {
        self.row_clock.clear();
    }

    /// Resolves a batch's mutations against the state before it: each gets
    /// the cells it writes and, when it used a server timestamp, the row
    /// and timestamp to record once it is applied. A row's later mutation
    /// in the batch gets a later timestamp than its earlier ones.
    pub(crate) fn resolve_batch(&self, muts: &[MutSpec], now: i64) -> Vec<ResolvedMutation> {
        let mut staged: BTreeMap<Bytes, i64> = BTreeMap::new();
        muts.iter()
            .map(|m| {
                let row = m.row().clone();
                let next = self.next_server_ts(&row, now);
                let server_ts = staged
                    .get(&row)
                    .map_or(next, |&earlier| next.max(earlier + 1));
                let (cells, used) = self.resolve(m, now, server_ts, &mut BTreeMap::new());
                if used {
                    staged.insert(row.clone(), server_ts);
                    (cells, Some((row, server_ts)))
                } else {
                    (cells, None)
                }
            })
            .collect()
    }

    /// Returns the cells and whether a server timestamp was used.
    pub(crate) fn resolve(
        &self,
        m: &MutSpec,
        now: i64,
        server_ts: i64,
        latest_counts: &mut BTreeMap<(usize, Bytes), usize>,
    ) -> (Vec<MCell>, bool) {
        let mut used = false;
        let cells = match m {
            MutSpec::Put(p) => p
                .cells
                .iter()
                .map(|(f, q, ts, v)| {
                    let ts = match ts.or(p.ts) {
                        Some(t) => t.at(now),
                        None => {
                            used = true;
                            server_ts
                        }
                    };
                    MCell::put(&p.row, f.0, q, ts, v.clone())
                })
                .collect(),
            MutSpec::Delete(d) => {
                let row = &d.row;
                let dts = d.ts.map_or(server_ts, |t| t.at(now));
                // Only markers that take the delete's own timestamp use it.
                let takes_dts = d.entries.is_empty()
                    || d.entries
                        .iter()
                        .any(|e| matches!(e, DelEntry::Family(_) | DelEntry::Columns(..)));
                used |= d.ts.is_none() && takes_dts;
                let empty = Bytes::new();
                if d.entries.is_empty() {
                    let markers = (0..FAMS.len())
                        .map(|f| MCell::marker(row, f, &empty, dts, CellType::DeleteFamily))
                        .collect();
                    return (markers, used);
                }
                d.entries
                    .iter()
                    .map(|e| match e {
                        DelEntry::Family(f) => {
                            MCell::marker(row, f.0, &empty, dts, CellType::DeleteFamily)
                        }
                        DelEntry::FamilyAt(f, t) => {
                            MCell::marker(row, f.0, &empty, t.at(now), CellType::DeleteFamily)
                        }
                        DelEntry::FamilyVersion(f, t) => MCell::marker(
                            row,
                            f.0,
                            &empty,
                            t.at(now),
                            CellType::DeleteFamilyVersion,
                        ),
                        DelEntry::Columns(f, q) => {
                            MCell::marker(row, f.0, q, dts, CellType::DeleteColumn)
                        }
                        DelEntry::ColumnsAt(f, q, t) => {
                            MCell::marker(row, f.0, q, t.at(now), CellType::DeleteColumn)
                        }
                        DelEntry::Column(f, q) => {
                            let k = latest_counts.entry((f.0, q.clone())).or_insert(0);
                            *k += 1;
                            let ts = match self.versions(row, f.0, q, Range::ALL, now).get(*k - 1) {
                                Some(c) => {
                                    stat("delete: latest version resolved to a version");
                                    c.ts
                                }
                                None => {
                                    stat("delete: latest version with none, marker at now");
                                    used = true;
                                    server_ts
                                }
                            };
                            MCell::marker(row, f.0, q, ts, CellType::Delete)
                        }
                        DelEntry::ColumnAt(f, q, t) => {
                            MCell::marker(row, f.0, q, t.at(now), CellType::Delete)
                        }
                    })
                    .collect()
            }
        };
        (cells, used)
    }

    /// Applies mutations of one row as one atomic write.
    pub(crate) fn apply_row_mutations(&mut self, muts: &[MutSpec], now: i64) {
        let Some(row) = muts.first().map(|m| m.row().clone()) else {
            return;
        };
        // One atomic mutation shares one server timestamp.
        let server_ts = self.next_server_ts(&row, now);
        let mut counts = BTreeMap::new();
        let mut used = false;
        let mut cells = Vec::new();
        for m in muts {
            let (resolved, u) = self.resolve(m, now, server_ts, &mut counts);
            used |= u;
            cells.extend(resolved);
        }
        self.apply(cells);
        if used {
            self.record_server_ts(&row, server_ts, now);
        }
    }

    /// A batch: every mutation is resolved against the state before the
    /// batch, then each is written in order.
    pub(crate) fn apply_batch(&mut self, muts: &[MutSpec], now: i64) {
        for (cells, stamp) in self.resolve_batch(muts, now) {
            self.apply(cells);
            if let Some((row, ts)) = stamp {
                self.record_server_ts(&row, ts, now);
            }
        }
    }

    /// Increment: `Err(len)` for a latest value that is not 8 bytes.
    pub(crate) fn increment(
        &mut self,
        row: &Bytes,
        cols: &[(Fam, Bytes, i64)],
        now: i64,
    ) -> Result<Vec<View>, usize> {
        let row_now = self.next_server_ts(row, now);
        let mut newest = row_now;
        let mut cells = Vec::new();
        for (f, q, delta) in cols {
            let (old, ts) = match self.latest(row, f.0, q, Range::ALL, now) {
                Some(c) => {
                    let bytes: [u8; 8] = c.value[..].try_into().map_err(|_| c.value.len())?;
                    (i64::from_be_bytes(bytes), row_now.max(c.ts + 1))
                }
                None => (0, row_now),
            };
            newest = newest.max(ts);
            let value = Bytes::copy_from_slice(&old.wrapping_add(*delta).to_be_bytes());
            cells.push(MCell::put(row, f.0, q, ts, value));
        }
        let views = self.apply_returning(cells);
        self.record_server_ts(row, newest, now);
        Ok(views)
    }

    pub(crate) fn append(
        &mut self,
        row: &Bytes,
        cols: &[(Fam, Bytes, Bytes)],
        now: i64,
    ) -> Vec<View> {
        let row_now = self.next_server_ts(row, now);
        let mut newest = row_now;
        let mut cells = Vec::new();
        for (f, q, suffix) in cols {
            let (value, ts) = match self.latest(row, f.0, q, Range::ALL, now) {
                Some(c) => {
                    let mut v = c.value.to_vec();
                    v.extend_from_slice(suffix);
                    (Bytes::from(v), row_now.max(c.ts + 1))
                }
                None => (suffix.clone(), row_now),
            };
            newest = newest.max(ts);
            cells.push(MCell::put(row, f.0, q, ts, value));
        }
        let views = self.apply_returning(cells);
        self.record_server_ts(row, newest, now);
        views
    }

    /// Applies the cells and returns them in column order (what increment
    /// and append answer).
    pub(crate) fn apply_returning(&mut self, cells: Vec<MCell>) -> Vec<View> {
        let mut views: Vec<View> = cells.iter().map(MCell::view).collect();
        views.sort_by(|a, b| (&a.family, &a.qualifier).cmp(&(&b.family, &b.qualifier)));
        self.apply(cells);
        views
    }

    pub(crate) fn check(
        &self,
        row: &Bytes,
        fam: Fam,
        qual: &Bytes,
        cond: &CondSpec,
        tr: Range,
        now: i64,
    ) -> bool {
        let current = self.latest(row, fam.0, qual, tr, now);
        match (cond, current) {
            (CondSpec::Absent, current) => current.is_none(),
            // HBase: an empty expected value tests for an absent or empty
            // cell; NOT_EQUAL negates (HBASE-26742).
            (CondSpec::Compare(op, CmpSpec::Binary(v) | CmpSpec::BinaryPrefix(v)), current)
                if v.is_empty() =>
            {
                current.as_ref().is_none_or(|c| c.value.is_empty()) == (*op != CompareOp::NotEqual)
            }
            (CondSpec::Compare(..), None) => false,
            (CondSpec::Compare(op, cmp), Some(c)) => {
                let ord = match cmp {
                    CmpSpec::Binary(v) => v[..].cmp(&c.value[..]),
                    CmpSpec::BinaryPrefix(v) => {
                        let n = v.len().min(c.value.len());
                        v[..].cmp(&c.value[..n])
                    }
                };
                op_holds(*op, ord)
            }
        }
    }

    /// The cells a read returns for one row, through the filter. `first_key`
    /// is FirstKeyOnly's "already took a cell in this row".
    pub(crate) fn read_row(&self, row: &Bytes, req: &ReadReq, now: i64) -> Vec<MCell> {
        let mut out = Vec::new();
        let mut first_key_taken = false;
        for fam in 0..FAMS.len() {
            if !sel_family(&req.sel, fam) {
                continue;
            }
            let quals: BTreeSet<Bytes> = self
                .cells
                .iter()
                .filter(|c| c.row == row && c.fam == fam && c.kind == CellType::Put)
                .filter(|c| sel_column(&req.sel, fam, &c.qual))
                .map(|c| c.qual.clone())
                .collect();
            for qual in quals {
                let mut included = 0;
                for c in self.versions(row, fam, &qual, req.tr, now) {
                    if !req.tr.contains(c.ts) {
                        continue;
                    }
                    if included >= req.max_versions {
                        break;
                    }
                    let keep = match &req.filter {
                        None => true,
                        Some(RFilter::FirstKeyOnly) => {
                            !std::mem::replace(&mut first_key_taken, true)
                        }
                        Some(f) => filter_keeps_cell(f, c),
                    };
                    if keep {
                        included += 1;
                        let c = c.clone();
                        out.push(match &req.filter {
                            Some(f) => filter_transform(f, c),
                            None => c,
                        });
                    }
                }
            }
        }
        out
    }

    pub(crate) fn read(&self, bounds: &RowBounds, req: &ReadReq, now: i64) -> Vec<RowView> {
        let mut rows: Vec<Bytes> = self
            .rows()
            .into_iter()
            .filter(|r| bounds.contains(r))
            .collect();
        if bounds.reversed {
            rows.reverse();
        }
        let page = match &req.filter {
            Some(RFilter::Page(n)) => Some(*n),
            _ => None,
        };
        let mut results = Vec::new();
        for row in rows {
            if req.limit.is_some_and(|l| results.len() >= l) {
                break;
            }
            if page.is_some_and(|n| results.len() as u64 >= n) {
                break;
            }
            if req
                .filter
                .as_ref()
                .is_some_and(|f| filter_drops_row_key(f, &row))
            {
                continue;
            }
            let cells = self.read_row(&row, req, now);
            if !cells.is_empty() {
                results.push((row, cells));
            }
        }
        split_batches(results, req.batch)
    }

    pub(crate) fn get(&self, row: &Bytes, req: &ReadReq, now: i64) -> RowView {
        let mut stop = row.to_vec();
        stop.push(0);
        let bounds = RowBounds {
            start: row.clone(),
            stop: Bytes::from(stop),
            prefix: None,
            reversed: false,
        };
        self.read(&bounds, req, now)
            .into_iter()
            .next()
            .unwrap_or(RowView {
                row: Bytes::new(),
                cells: Vec::new(),
            })
    }

    /// Raw scan over families without TTL: every put and marker in the time
    /// range; per column the first put beyond `max_versions` ends it.
    pub(crate) fn raw_scan(
        &self,
        bounds: &RowBounds,
        fams: &BTreeSet<usize>,
        max_versions: usize,
        tr: Range,
        limit: Option<usize>,
        batch: Option<usize>,
    ) -> Vec<RowView> {
        let mut rows: Vec<Bytes> = self
            .rows()
            .into_iter()
            .filter(|r| bounds.contains(r))
            .collect();
        if bounds.reversed {
            rows.reverse();
        }
        let mut results = Vec::new();
        for row in rows {
            if limit.is_some_and(|l| results.len() >= l) {
                break;
            }
            let mut out = Vec::new();
            for &fam in fams {
                let mut in_family: Vec<&MCell> = self
                    .cells
                    .iter()
                    .filter(|c| c.row == row && c.fam == fam && tr.contains(c.ts))
                    .collect();
                in_family.sort_by(|a, b| {
                    a.qual
                        .cmp(&b.qual)
                        .then(b.ts.cmp(&a.ts))
                        .then(b.kind.code().cmp(&a.kind.code()))
                        .then(b.seq.cmp(&a.seq))
                });
                let mut column: Option<&Bytes> = None;
                let mut puts = 0;
                let mut column_done = false;
                // HBase's raw scans skip a cell with the timestamp and type
                // of the one before it in its column (an older write of the
                // same coordinates; `sameAsPreviousTSAndType`).
                let mut previous: Option<(i64, CellType)> = None;
                for c in in_family {
                    if column != Some(&c.qual) {
                        column = Some(&c.qual);
                        puts = 0;
                        column_done = false;
                        previous = None;
                    }
                    if column_done {
                        continue;
                    }
                    if previous.replace((c.ts, c.kind)) == Some((c.ts, c.kind)) {
                        continue;
                    }
                    if c.kind == CellType::Put {
                        puts += 1;
                        if puts > max_versions {
                            column_done = true;
                            continue;
                        }
                    }
                    out.push(c.clone());
                }
            }
            if !out.is_empty() {
                results.push((row, out));
            }
        }
        split_batches(results, batch)
    }

    pub(crate) fn dump(&self) -> String {
        let mut cells: Vec<&MCell> = self.cells.iter().collect();
        cells.sort_by(|a, b| {
            (&a.row, a.fam, &a.qual)
                .cmp(&(&b.row, b.fam, &b.qual))
                .then(b.ts.cmp(&a.ts))
                .then(b.kind.code().cmp(&a.kind.code()))
                .then(b.seq.cmp(&a.seq))
        });
        cells
            .iter()
            .map(|c| format!("  {:?} seq={}\n", c.view(), c.seq))
            .collect()
    }
}

/// One region's store of the family keeping deleted cells, as a major
/// compaction found it: its bounds (`[start, end)`, empty meaning open) and
/// the oldest put its files recorded, `None` when the compaction left it
/// as it was (one major-compacted file and nothing new, as in HBase).
pub(crate) struct KeptDeletedStore {
    pub(crate) start: Bytes,
    pub(crate) end: Bytes,
    pub(crate) earliest_put: Option<i64>,
}

/// The oldest put among the first `versions` puts of each column (newest
/// first, a repeated timestamp counted once): the oldest put any flush of
/// these cells keeps, whatever files they were flushed in.
fn oldest_put_within_versions(cells: &[MCell], versions: usize) -> i64 {
    let mut puts: Vec<&MCell> = cells.iter().filter(|c| c.kind == CellType::Put).collect();
    puts.sort_by(|a, b| {
        (&a.row, &a.qual)
            .cmp(&(&b.row, &b.qual))
            .then(b.ts.cmp(&a.ts))
    });
    let mut oldest = i64::MAX;
    let mut column: Option<(&Bytes, &Bytes)> = None;
    let mut seen: Vec<i64> = Vec::new();
    for c in puts {
        if column != Some((&c.row, &c.qual)) {
            column = Some((&c.row, &c.qual));
            seen.clear();
        }
        if !seen.contains(&c.ts) {
            seen.push(c.ts);
        }
        if seen.len() <= versions {
            oldest = oldest.min(c.ts);
        }
    }
    oldest
}

/// HBase's major compaction of one store (region and family) keeping
/// deleted cells, classic version rules (see `compaction::Retaining` for the
/// engine's): per column in KeyValue order, a marker older than the
/// store's recorded oldest put ends the column, and a put older than it goes
/// (a surplus version HBase's flush dropped); a cell with the timestamp and type
/// of the last one kept goes; puts count as versions deleted or not
/// (markers do not) and the column ends past `versions`.
fn keep_deleted_compaction(
    mut cells: Vec<MCell>,
    versions: usize,
    earliest_put: i64,
) -> Vec<MCell> {
    cells.sort_by(|a, b| {
        (&a.row, &a.qual)
            .cmp(&(&b.row, &b.qual))
            .then(b.ts.cmp(&a.ts))
            .then(b.kind.code().cmp(&a.kind.code()))
            .then(b.seq.cmp(&a.seq))
    });
    let mut kept = Vec::new();
    let mut column: Option<(Bytes, Bytes)> = None;
    let mut ended = false;
    let mut count = 0;
    let mut last_kept: Option<(i64, CellType)> = None;
    for c in cells {
        let key = (c.row.clone(), c.qual.clone());
        if column.as_ref() != Some(&key) {
            column = Some(key);
            ended = false;
            count = 0;
            last_kept = None;
        }
        if ended {
            continue;
        }
        if c.kind != CellType::Put && c.ts < earliest_put {
            stat("major compaction: KDC marker older than every put dropped");
            ended = true;
            continue;
        }
        if c.kind == CellType::Put && c.ts < earliest_put {
            // A version past its column's VERSIONS when flushed: HBase's
            // flush never wrote it.
            stat("major compaction: KDC put older than the recorded oldest dropped");
            continue;
        }
        if last_kept == Some((c.ts, c.kind)) {
            stat("major compaction: KDC repeated timestamp and type dropped");
            continue;
        }
        if c.kind == CellType::Put {
            count += 1;
        }
        if count > versions {
            stat("major compaction: KDC versions beyond VERSIONS dropped");
            ended = true;
            continue;
        }
        last_kept = Some((c.ts, c.kind));
        kept.push(c);
    }
    kept
}
