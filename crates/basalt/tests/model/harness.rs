//! The engine side: the database under test beside the reference, one step
//! at a time, every read and returned value compared.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use basalt::fs::FileStore;
use basalt::{
    BloomType, CellType, Clock, ColumnFamilyDescriptor, Compression, DataBlockEncoding, Database,
    Error, Get, IndexColumn, IndexDescriptor, IndexTransform, KeepDeletedCells, ManualClock,
    Mutation, Options, RowResult, Scan, Table, TableDescriptor, TimeRange,
};
use bytes::Bytes;

use crate::operations::*;
use crate::reference::*;
use crate::stat;

// ------------------------------------------------------------------ the engine side

/// A family's store-file options, chosen per case. They must never change
/// what a read returns.
#[derive(Clone, Debug)]
pub(crate) struct FamFormat {
    pub(crate) compression: Compression,
    pub(crate) bloom: BloomType,
    pub(crate) encoding: DataBlockEncoding,
    pub(crate) block_size: u32,
    pub(crate) block_cache: bool,
    pub(crate) in_memory: bool,
}

impl Default for FamFormat {
    fn default() -> Self {
        FamFormat {
            compression: Compression::None,
            bloom: BloomType::Row,
            encoding: DataBlockEncoding::None,
            block_size: 1024,
            block_cache: true,
            in_memory: false,
        }
    }
}

/// The database options of one case: small thresholds, so that every case
/// flushes and compacts often and files have several blocks.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// `Options::memstore_flush_bytes` (a cell of the model weighs ~50-500 bytes).
    pub(crate) flush_bytes: usize,
    pub(crate) cache_bytes: usize,
    pub(crate) min_files: usize,
    pub(crate) max_files: usize,
    pub(crate) ratio: f64,
    /// One per family of [`FAMS`].
    pub(crate) formats: Vec<FamFormat>,
    /// `Options::region_split_bytes` (0: no automatic splits).
    pub(crate) split_bytes: u64,
    /// `Options::global_memstore_bytes`: the default (never reached by a
    /// case), or one flush size, so the global budget's flushes of the
    /// largest memstores (and its slowed and held writers) happen before
    /// the regions' own flushes.
    pub(crate) global_memstore_bytes: usize,
    /// Where store files, manifests and the catalog live (`None`: the
    /// local disk under the data directory). The fault run hands in one
    /// that fails on demand; reopening uses the same store.
    pub(crate) files: Option<Arc<dyn FileStore>>,
    /// Makes the file store for the case's data directory when `files` is
    /// `None` (object storage is rooted at the data directory, which the
    /// harness creates); `None`: the local disk.
    pub(crate) storage: Option<StorageFactory>,
}

/// Makes a file store rooted at a data directory (object storage runs).
#[derive(Clone)]
pub(crate) struct StorageFactory(pub(crate) Arc<MakeFileStore>);

/// What a [`StorageFactory`] calls.
/// Per region bounds: the kept-deleted store's recorded oldest put and
/// its compactions so far.
pub(crate) type KeptDeletedStats = std::collections::BTreeMap<(Bytes, Bytes), (i64, u64)>;

pub(crate) type MakeFileStore = dyn Fn(&std::path::Path) -> Arc<dyn FileStore> + Send + Sync;

impl fmt::Debug for StorageFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StorageFactory")
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            flush_bytes: 1024,
            cache_bytes: 16 * 1024,
            min_files: 2,
            max_files: 4,
            ratio: 1.2,
            formats: vec![FamFormat::default(); FAMS.len()],
            split_bytes: 0,
            global_memstore_bytes: Options::default().global_memstore_bytes,
            files: None,
            storage: None,
        }
    }
}

impl Config {
    pub(crate) fn open(
        &self,
        dir: &std::path::Path,
        clock: &ManualClock,
    ) -> basalt::Result<Database> {
        let builder = Database::builder(self.options(dir)).clock(Arc::new(clock.clone()));
        let builder = match &self.files {
            Some(files) => builder.file_store(Arc::clone(files)),
            None => builder,
        };
        let builder = if self.storage.is_some() {
            // As `basalt serve --storage`: the log is on the storage too.
            // No group-commit window: the model writes one edit at a time.
            builder.wal_in_file_store(basalt::ObjectWalOptions {
                group_commit_window: std::time::Duration::ZERO,
                ..basalt::ObjectWalOptions::default()
            })
        } else {
            builder
        };
        builder.open()
    }

    pub(crate) fn options(&self, dir: &std::path::Path) -> Options {
        let mut o = Options::new(dir);
        o.memstore_flush_bytes = self.flush_bytes;
        o.memstore_block_multiplier = 4;
        o.block_cache_bytes = self.cache_bytes;
        o.compaction_min_files = self.min_files;
        o.compaction_max_files = self.max_files;
        o.compaction_ratio = self.ratio;
        o.region_split_bytes = self.split_bytes;
        o.global_memstore_bytes = self.global_memstore_bytes;
        // No wall-clock wait between the low-water mark and the limit.
        o.global_memstore_slowdown_ms = 0;
        // Flushes and the compactions they trigger run in the writing
        // thread: deterministic.
        o.background_threads = 0;
        o
    }
}

pub(crate) fn descriptor(f: &FamSpec, format: &FamFormat) -> ColumnFamilyDescriptor {
    let mut d = ColumnFamilyDescriptor::new(f.name)
        .max_versions(f.versions as u32)
        .min_versions(f.min_versions as u32)
        .compression(format.compression)
        .bloom_filter(format.bloom)
        .data_block_encoding(format.encoding)
        .block_size(format.block_size)
        .block_cache(format.block_cache)
        .in_memory(format.in_memory);
    if let Some(ttl) = f.ttl_ms {
        d = d.ttl_seconds((ttl / 1000) as u64);
    }
    if f.keep_deleted {
        d = d.keep_deleted_cells(KeepDeletedCells::True);
    }
    d
}

/// The indexes every case declares on the model's table: over families
/// with one and several versions, a reversed and a padded value, covered
/// columns in a TTL family. Not over f4, which keeps deleted cells: an
/// index there is refused (`TableDescriptor::add_index` says why; this
/// model's fault run found an index over it going stale when a major
/// compaction brought back a cell its family marker had hidden).
pub(crate) fn model_indexes() -> Vec<IndexDescriptor> {
    vec![
        IndexDescriptor::new("i1", vec![IndexColumn::new("f1", "a")])
            .cover("f2", "b")
            .cover("f2", "a"),
        IndexDescriptor::new(
            "i2",
            vec![
                IndexColumn::new("f2", "b").transform(IndexTransform::Reversed),
                IndexColumn::new("f1", "").transform(IndexTransform::PadLeft(3)),
            ],
        )
        .cover("f3", "a"),
    ]
}

/// The model's table with the case's store-file options.
pub(crate) fn table_descriptor(config: &Config) -> TableDescriptor {
    FAMS.iter()
        .zip(&config.formats)
        .fold(TableDescriptor::new(TABLE), |d, (f, format)| {
            d.family(descriptor(f, format))
        })
}

pub(crate) fn engine_view(r: &RowResult) -> RowView {
    RowView {
        row: r.row.clone(),
        cells: r
            .cells
            .iter()
            .map(|c| View {
                row: c.row.clone(),
                family: c.family.clone(),
                qualifier: c.qualifier.clone(),
                ts: c.timestamp,
                kind: c.cell_type,
                value: c.value.clone(),
            })
            .collect(),
    }
}

pub(crate) fn compare<T: PartialEq + fmt::Debug>(
    what: &str,
    engine: &T,
    model: &T,
) -> Result<(), String> {
    if engine == model {
        Ok(())
    } else {
        Err(format!(
            "{what}: engine and model differ\n engine: {engine:#?}\n  model: {model:#?}"
        ))
    }
}

pub(crate) fn err_kind<T>(r: &basalt::Result<T>) -> String {
    match r {
        Ok(_) => "ok".to_string(),
        Err(e) => format!("{e:?}"),
    }
}

/// The database under test, the reference, and the clock both use.
pub(crate) struct Harness {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) clock: ManualClock,
    pub(crate) config: Config,
    pub(crate) db: Option<Database>,
    pub(crate) table: Option<Table>,
    pub(crate) model: Model,
    /// The snapshots taken (`Op::Snapshot`), each with the reference as
    /// it was then.
    pub(crate) snapshots: Vec<(String, Model)>,
}

/// Per store (family order): store files and memstore bytes.
pub(crate) type StoreState = Vec<(usize, u64)>;

impl Harness {
    pub(crate) fn new(mut config: Config) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        if config.files.is_none() {
            if let Some(storage) = &config.storage {
                // One store for the whole case: reopening uses it again.
                config.files = Some((storage.0)(dir.path()));
            }
        }
        let clock = ManualClock::new(START_MS);
        let db = config.open(dir.path(), &clock).unwrap();
        db.create_table(table_descriptor(&config)).unwrap();
        for index in model_indexes() {
            db.create_index(TABLE, index).unwrap();
        }
        let table = db.table(TABLE).unwrap();
        Harness {
            dir,
            clock,
            config,
            db: Some(db),
            table: Some(table),
            model: Model::default(),
            snapshots: Vec::new(),
        }
    }

    /// A harness around a database opened elsewhere (a cluster member),
    /// whose table the caller created; `db` and `table` may be swapped
    /// for another member's between steps (the cluster property).
    pub(crate) fn attached(
        dir: tempfile::TempDir,
        clock: ManualClock,
        config: Config,
        db: Database,
    ) -> Result<Harness, String> {
        let table = db
            .table(TABLE)
            .map_err(|e| format!("table through a member: {e}"))?;
        Ok(Harness {
            dir,
            clock,
            config,
            db: Some(db),
            table: Some(table),
            model: Model::default(),
            snapshots: Vec::new(),
        })
    }

    pub(crate) fn db(&self) -> &Database {
        self.db.as_ref().unwrap()
    }

    /// The kept-deleted family's store in each region `dbs` hold: its
    /// recorded oldest put and compactions so far, by region bounds.
    pub(crate) fn kept_deleted_stores(dbs: &[Database]) -> Result<KeptDeletedStats, String> {
        let Some(family) = FAMS.iter().find(|f| f.keep_deleted) else {
            return Ok(KeptDeletedStats::new());
        };
        let mut out = KeptDeletedStats::new();
        for db in dbs {
            let info = db
                .describe_table(TABLE)
                .map_err(|e| format!("describe_table failed: {e}"))?;
            for region in &info.regions {
                // Only the holder knows a region's stores (cluster mode).
                if let Some((_, stats)) = region.stores.iter().find(|(n, _)| n == family.name) {
                    let bounds = (region.info.start_key.clone(), region.info.end_key.clone());
                    let seen = (stats.earliest_put_timestamp, stats.compactions_completed);
                    out.insert(bounds, seen);
                }
            }
        }
        Ok(out)
    }

    /// What a major compaction did to each kept-deleted store, from their
    /// stats before and after it (see [`KeptDeletedStore`]).
    pub(crate) fn compacted_kept_deleted(
        before: &KeptDeletedStats,
        after: &KeptDeletedStats,
    ) -> Result<Vec<KeptDeletedStore>, String> {
        after
            .iter()
            .map(|((start, end), (_, compactions))| {
                let (earliest, compactions_before) =
                    before.get(&(start.clone(), end.clone())).ok_or_else(|| {
                        format!(
                            "region [{}, {}) appeared during a major compaction",
                            escape(start),
                            escape(end)
                        )
                    })?;
                Ok(KeptDeletedStore {
                    start: start.clone(),
                    end: end.clone(),
                    earliest_put: (compactions > compactions_before).then_some(*earliest),
                })
            })
            .collect()
    }

    /// Files and memstore bytes of each store, in family order.
    pub(crate) fn stores(&self) -> Result<StoreState, String> {
        let info = self
            .db()
            .describe_table(TABLE)
            .map_err(|e| format!("describe_table failed: {e}"))?;
        let mut out = vec![(0usize, 0u64); FAMS.len()];
        for region in &info.regions {
            for (name, stats) in &region.stores {
                let i = FAMS
                    .iter()
                    .position(|f| f.name == name)
                    .ok_or_else(|| format!("unknown store {name}"))?;
                out[i].0 += stats.files;
                out[i].1 += stats.memstore_bytes;
            }
        }
        Ok(out)
    }

    /// Counts automatic flushes and compactions a write caused.
    pub(crate) fn note_maintenance(before: &StoreState, after: &StoreState) {
        let mut flushed = false;
        let mut compacted = false;
        for ((files0, mem0), (files1, mem1)) in before.iter().zip(after) {
            let store_flushed = mem1 < mem0;
            flushed |= store_flushed;
            if *files1 < files0 + usize::from(store_flushed) {
                compacted = true;
            }
        }
        if flushed {
            stat("write: automatic flush");
        }
        if compacted {
            stat("write: automatic minor compaction");
        }
        if after.iter().any(|(files, _)| *files >= 3) {
            stat("step: a store has 3+ files");
        }
    }

    /// What the engine returns for full reads: every version of every
    /// family, the same up to a second ago (KEEP_DELETED_CELLS time travel),
    /// and raw, every family (TTL ones too, which the model does not cover).
    /// Flushes and minor compactions must not change any of it.
    pub(crate) fn engine_snapshot(&self) -> Result<Vec<Vec<RowView>>, String> {
        let now = self.now();
        let mut out = Vec::new();
        for tr in [
            TimeRange::all(),
            TimeRange::before((now - 1).max(1)).unwrap(),
        ] {
            out.push(self.collect_scan(&Scan::new().max_versions(1000).time_range(tr))?);
        }
        out.push(self.collect_scan(&Scan::new().raw(true).max_versions(1000))?);
        Ok(out)
    }

    pub(crate) fn now(&self) -> i64 {
        self.clock.now_millis()
    }

    pub(crate) fn table(&self) -> &Table {
        self.table.as_ref().unwrap()
    }

    pub(crate) fn reopen(&mut self, close: bool) -> Result<(), String> {
        self.table = None;
        // The engine's per-row timestamp record does not survive a reopen.
        self.model.forget_server_ts();
        if let Some(db) = self.db.take() {
            if close {
                db.close().map_err(|e| format!("close failed: {e}"))?;
            }
            drop(db);
        }
        let db = self
            .config
            .open(self.dir.path(), &self.clock)
            .map_err(|e| format!("reopen failed: {e}"))?;
        self.table = Some(
            db.table(TABLE)
                .map_err(|e| format!("table after reopen: {e}"))?,
        );
        self.db = Some(db);
        Ok(())
    }

    pub(crate) fn get(&self, spec: &GetSpec) -> Result<RowView, String> {
        let now = self.now();
        let filter = active_filter(&spec.filter, now);
        let mut get = Get::new(spec.row.clone())
            .max_versions(spec.max_versions)
            .time_range(engine_range(spec.tr, now));
        for item in &spec.sel {
            get = match item {
                SelItem::Family(f) => get.family(f.name()),
                SelItem::Column(f, q) => get.column(f.name(), q.clone()),
            };
        }
        if let Some(f) = &filter {
            get = get.filter(engine_filter(f));
        }
        let engine = self
            .table()
            .get(&get)
            .map(|r| engine_view(&r))
            .map_err(|e| format!("get failed: {e}"))?;
        let req = ReadReq {
            sel: model_sel(&spec.sel),
            max_versions: spec.max_versions as usize,
            tr: model_range(spec.tr, now),
            filter,
            limit: None,
            batch: None,
        };
        let model = self.model.get(&spec.row, &req, now);
        compare("get", &engine, &model)?;
        stat(if engine.cells.is_empty() {
            "get: empty"
        } else {
            "get: non-empty"
        });
        if req.filter.is_some() {
            let unfiltered = ReadReq {
                filter: None,
                ..req
            };
            stat(if self.model.get(&spec.row, &unfiltered, now) == model {
                "get: with filter, same as without"
            } else {
                "get: with filter, changed by it"
            });
        }
        Ok(engine)
    }

    pub(crate) fn scan(&self, spec: &ScanSpec) -> Result<Vec<RowView>, String> {
        let now = self.now();
        let filter = active_filter(&spec.filter, now);
        let mut scan = Scan::new()
            .start_row(spec.start.clone())
            .stop_row(spec.stop.clone())
            .reversed(spec.reversed)
            .max_versions(spec.max_versions)
            .time_range(engine_range(spec.tr, now));
        if let Some(p) = &spec.prefix {
            scan = scan.prefix(p.clone());
        }
        for item in &spec.sel {
            scan = match item {
                SelItem::Family(f) => scan.family(f.name()),
                SelItem::Column(f, q) => scan.column(f.name(), q.clone()),
            };
        }
        if let Some(f) = &filter {
            scan = scan.filter(engine_filter(f));
        }
        if let Some(b) = spec.batch {
            scan = scan.batch(b);
        }
        if let Some(l) = spec.limit {
            scan = scan.limit(l);
        }
        let engine = self.collect_scan(&scan)?;
        let bounds = RowBounds {
            start: spec.start.clone(),
            stop: spec.stop.clone(),
            prefix: spec.prefix.clone(),
            reversed: spec.reversed,
        };
        let req = ReadReq {
            sel: model_sel(&spec.sel),
            max_versions: spec.max_versions as usize,
            tr: model_range(spec.tr, now),
            filter,
            limit: spec.limit,
            batch: spec.batch,
        };
        let model = self.model.read(&bounds, &req, now);
        compare("scan", &engine, &model)?;
        stat(if engine.is_empty() {
            "scan: empty"
        } else {
            "scan: non-empty"
        });
        if req.filter.is_some() {
            let unfiltered = ReadReq {
                filter: None,
                ..req
            };
            stat(if self.model.read(&bounds, &unfiltered, now) == model {
                "scan: with filter, same as without"
            } else {
                "scan: with filter, changed by it"
            });
        }
        Ok(engine)
    }

    pub(crate) fn raw_scan(&self, spec: &RawScanSpec) -> Result<Vec<RowView>, String> {
        let now = self.now();
        let mut scan = Scan::new()
            .raw(true)
            .start_row(spec.start.clone())
            .stop_row(spec.stop.clone())
            .reversed(spec.reversed)
            .max_versions(spec.max_versions)
            .time_range(engine_range(spec.tr, now));
        for f in &spec.fams {
            scan = scan.family(f.name());
        }
        if let Some(b) = spec.batch {
            scan = scan.batch(b);
        }
        if let Some(l) = spec.limit {
            scan = scan.limit(l);
        }
        let engine = self.collect_scan(&scan)?;
        let bounds = RowBounds {
            start: spec.start.clone(),
            stop: spec.stop.clone(),
            prefix: None,
            reversed: spec.reversed,
        };
        let fams: BTreeSet<usize> = spec.fams.iter().map(|f| f.0).collect();
        let model = self.model.raw_scan(
            &bounds,
            &fams,
            spec.max_versions as usize,
            model_range(spec.tr, now),
            spec.limit,
            spec.batch,
        );
        compare("raw scan", &engine, &model)?;
        if engine
            .iter()
            .any(|r| r.cells.iter().any(|c| c.kind != CellType::Put))
        {
            stat("raw scan: returned markers");
        }
        Ok(engine)
    }

    pub(crate) fn collect_scan(&self, scan: &Scan) -> Result<Vec<RowView>, String> {
        let scanner = self
            .table()
            .scan(scan)
            .map_err(|e| format!("scan failed: {e}"))?;
        scanner
            .map(|r| r.map(|r| engine_view(&r)))
            .collect::<basalt::Result<Vec<_>>>()
            .map_err(|e| format!("scan failed: {e}"))
    }

    /// Everything: all versions of all families, and the raw contents of the
    /// families raw scans are modelled for.
    /// Every index of the model's table against a rebuild from the
    /// engine's rows (whose reads the other checks hold to the
    /// reference): invariants I1 and I2 (`basalt::index`) as the steps
    /// left it, equality with the rebuild after the repair pass, and an
    /// index read answering the rows in index key order.
    pub(crate) fn check_indexes(&self) -> Result<(), String> {
        let db = self.db();
        let table = db.table(TABLE).map_err(|e| e.to_string())?;
        for index in table.descriptor().indexes() {
            // As the steps left it: the invariants, unverified rows allowed
            // (a write that failed after its pre-write leaves some).
            let report = db
                .check_index(TABLE, &index.name, false)
                .map_err(|e| format!("check of index {} failed: {e}", index.name))?;
            if !report.is_consistent() {
                let detail = self.index_detail(&table, index, &report)?;
                return Err(format!(
                    "index {} breaks its invariants: {report:#?}\n{detail}",
                    index.name
                ));
            }
            // After the repair pass: exactly its rebuild.
            db.check_index(TABLE, &index.name, true)
                .map_err(|e| format!("repair of index {} failed: {e}", index.name))?;
            let repaired = db
                .check_index(TABLE, &index.name, false)
                .map_err(|e| format!("check of index {} failed: {e}", index.name))?;
            if !repaired.equals_rebuild() {
                return Err(format!(
                    "index {} differs from its rebuild after the repair: {repaired:#?}",
                    index.name
                ));
            }
            let mut expected: Vec<(Bytes, Bytes)> = Vec::new();
            for row in table.scan(&Scan::new()).map_err(|e| e.to_string())? {
                let row = row.map_err(|e| e.to_string())?;
                let values: Vec<Option<&[u8]>> = index
                    .columns
                    .iter()
                    .map(|c| {
                        row.cells
                            .iter()
                            .find(|cell| cell.family == c.family && cell.qualifier == c.qualifier)
                            .map(|cell| &cell.value[..])
                    })
                    .collect();
                if let Some(key) = index.key(&values, &row.row) {
                    expected.push((key, row.row.clone()));
                }
            }
            expected.sort();
            let expected: Vec<Bytes> = expected.into_iter().map(|(_, row)| row).collect();
            let read: Vec<Bytes> = db
                .scan_index(TABLE, &index.name, &Scan::new())
                .map_err(|e| format!("read by index {} failed: {e}", index.name))?
                .map(|r| r.map(|r| r.row))
                .collect::<basalt::Result<_>>()
                .map_err(|e| format!("read by index {} failed: {e}", index.name))?;
            compare(
                &format!("rows read by index {}", index.name),
                &read,
                &expected,
            )?;
        }
        Ok(())
    }

    /// What the index table holds (raw) for the keys a check found at
    /// fault, and each one's data row: the failure's evidence.
    fn index_detail(
        &self,
        table: &Table,
        index: &IndexDescriptor,
        report: &basalt::index::IndexCheckReport,
    ) -> Result<String, String> {
        let index_table = self
            .db()
            .table(&basalt::index_types::index_table_name(TABLE, &index.name))
            .map_err(|e| e.to_string())?;
        let mut detail = String::new();
        let keys = report
            .missing
            .iter()
            .chain(&report.stale_verified)
            .chain(&report.covered_differs);
        for key in keys {
            let mut stop = key.to_vec();
            stop.push(0);
            let raw = Scan::new()
                .start_row(key.clone())
                .stop_row(stop)
                .raw(true)
                .max_versions(100);
            for row in index_table.scan(&raw).map_err(|e| e.to_string())? {
                for c in row.map_err(|e| e.to_string())?.cells {
                    detail.push_str(&format!(
                        "  index {:?} {}/{:?}/seq={} = {:?}\n",
                        String::from_utf8_lossy(&c.qualifier),
                        c.timestamp,
                        c.cell_type,
                        c.sequence_id,
                        c.value
                    ));
                }
            }
            if let Ok(row) = index.data_row(key) {
                let data = table
                    .get(&Get::new(row.clone()).max_versions(10))
                    .map_err(|e| e.to_string())?;
                for c in data.cells {
                    detail.push_str(&format!(
                        "  data {:?} {}:{}/{} = {:?}\n",
                        row,
                        String::from_utf8_lossy(&c.family),
                        String::from_utf8_lossy(&c.qualifier),
                        c.timestamp,
                        c.value
                    ));
                }
            }
        }
        Ok(detail)
    }

    pub(crate) fn check_everything(&self) -> Result<(), String> {
        self.check_indexes()?;
        self.scan(&ScanSpec {
            start: Bytes::new(),
            stop: Bytes::new(),
            prefix: None,
            reversed: false,
            sel: Vec::new(),
            max_versions: 100,
            tr: TrSpec::All,
            filter: None,
            batch: None,
            limit: None,
        })?;
        self.raw_scan(&RawScanSpec {
            start: Bytes::new(),
            stop: Bytes::new(),
            reversed: false,
            fams: RAW_FAMS.to_vec(),
            max_versions: 1000,
            tr: TrSpec::All,
            batch: None,
            limit: None,
        })?;
        Ok(())
    }

    pub(crate) fn step(&mut self, step: &Step) -> Result<(), String> {
        self.clock.advance(step.advance);
        let now = self.now();
        let writes = matches!(
            step.op,
            Op::Put(_)
                | Op::Delete(_)
                | Op::Increment { .. }
                | Op::Append { .. }
                | Op::CheckAndMutate { .. }
                | Op::RowMutations { .. }
                | Op::Batch(_)
        );
        let stores_before = if writes { Some(self.stores()?) } else { None };
        let regions_before = self.region_bounds()?.len();
        self.run_op(&step.op, now)?;
        if let Some(before) = stores_before {
            Self::note_maintenance(&before, &self.stores()?);
        }
        let regions_after = self.region_bounds()?.len();
        if writes && regions_after > regions_before {
            stat("write: automatic split");
        }
        if regions_after >= 4 {
            stat("step: 4+ regions");
        }
        Ok(())
    }

    /// The regions' (start, end) keys, checked to cover the key space with
    /// no gap and no overlap.
    pub(crate) fn region_bounds(&self) -> Result<Vec<(Bytes, Bytes)>, String> {
        let regions = self
            .db()
            .list_regions(TABLE)
            .map_err(|e| format!("list_regions failed: {e}"))?;
        let bounds: Vec<(Bytes, Bytes)> = regions
            .iter()
            .map(|r| (r.info.start_key.clone(), r.info.end_key.clone()))
            .collect();
        let shown = || {
            bounds
                .iter()
                .map(|(s, e)| format!("[{}, {})", escape(s), escape(e)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let first_open = bounds.first().is_some_and(|(s, _)| s.is_empty());
        let last_open = bounds.last().is_some_and(|(_, e)| e.is_empty());
        let chained = bounds.windows(2).all(|w| w[0].1 == w[1].0);
        let nonempty = bounds.iter().all(|(s, e)| e.is_empty() || s < e);
        if !(first_open && last_open && chained && nonempty) {
            return Err(format!("regions do not cover the key space: {}", shown()));
        }
        Ok(bounds)
    }

    pub(crate) fn encoded_region_name(
        &self,
        pick: usize,
    ) -> Result<Option<(String, usize)>, String> {
        let regions = self
            .db()
            .list_regions(TABLE)
            .map_err(|e| format!("list_regions failed: {e}"))?;
        Ok((!regions.is_empty()).then(|| {
            let i = pick % regions.len();
            (regions[i].info.encoded_name(), regions.len())
        }))
    }

    pub(crate) fn flush(&self) -> Result<(), String> {
        self.db()
            .flush_table(TABLE)
            .map_err(|e| format!("flush_table failed: {e}"))?;
        let stores = self.stores()?;
        if stores.iter().any(|(_, mem)| *mem > 0) {
            return Err(format!("memstores not empty after a flush: {stores:?}"));
        }
        Ok(())
    }

    pub(crate) fn run_op(&mut self, op: &Op, now: i64) -> Result<(), String> {
        match op {
            Op::Put(p) => {
                let r = self.table().put(&build_put(p, now));
                compare("put result", &err_kind(&r), &"ok".to_string())?;
                self.model
                    .apply_row_mutations(&[MutSpec::Put(p.clone())], now);
            }
            Op::Delete(d) => {
                let r = self.table().delete(&build_delete(d, now));
                compare("delete result", &err_kind(&r), &"ok".to_string())?;
                self.model
                    .apply_row_mutations(&[MutSpec::Delete(d.clone())], now);
            }
            Op::Increment {
                row,
                cols,
                durability,
            } => {
                let inc = build_increment(row, cols, *durability);
                let engine = match self.table().increment(&inc) {
                    Ok(r) => Ok(engine_view(&r).cells),
                    Err(Error::NotALong { len }) => Err(len),
                    Err(e) => return Err(format!("increment failed: {e}")),
                };
                let model = self.model.increment(row, cols, now);
                compare("increment result", &engine, &model)?;
                stat(if engine.is_ok() {
                    "increment: ok"
                } else {
                    "increment: NotALong"
                });
            }
            Op::Append {
                row,
                cols,
                durability,
            } => {
                let app = build_append(row, cols, *durability);
                let engine = self
                    .table()
                    .append(&app)
                    .map(|r| engine_view(&r).cells)
                    .map_err(|e| format!("append failed: {e}"))?;
                let model = self.model.append(row, cols, now);
                compare("append result", &engine, &model)?;
            }
            Op::CheckAndMutate {
                row,
                fam,
                qual,
                cond,
                tr,
                muts,
            } => {
                let cam = build_check_and_mutate(row, *fam, qual, cond, *tr, muts, now);
                let engine = self
                    .table()
                    .check_and_mutate(&cam)
                    .map_err(|e| format!("check_and_mutate failed: {e}"))?;
                let holds = self
                    .model
                    .check(row, *fam, qual, cond, model_range(*tr, now), now);
                if holds {
                    self.model.apply_row_mutations(muts, now);
                }
                compare("check_and_mutate result", &engine, &holds)?;
                stat(if holds {
                    "check_and_mutate: applied"
                } else {
                    "check_and_mutate: not applied"
                });
            }
            Op::RowMutations { row, muts } => {
                self.table()
                    .mutate_row(&build_row_mutations(row, muts, now))
                    .map_err(|e| format!("mutate_row failed: {e}"))?;
                self.model.apply_row_mutations(muts, now);
            }
            Op::Batch(muts) => {
                let built: Vec<Mutation> = muts.iter().map(|m| build_mutation(m, now)).collect();
                let results: Vec<String> =
                    self.table().batch(&built).iter().map(err_kind).collect();
                compare(
                    "batch results",
                    &results,
                    &vec!["ok".to_string(); muts.len()],
                )?;
                self.model.apply_batch(muts, now);
            }
            Op::Get(g) => {
                self.get(g)?;
            }
            Op::Scan(s) => {
                self.scan(s)?;
            }
            Op::RawScan(s) => {
                self.raw_scan(s)?;
            }
            Op::Reopen { close } => {
                stat("reopen");
                let before = self.engine_snapshot()?;
                self.reopen(*close)?;
                if *close && self.stores()?.iter().any(|(_, mem)| *mem > 0) {
                    return Err("memstores not empty after close and reopen".to_string());
                }
                compare(
                    "engine's full reads after reopening, against before",
                    &self.engine_snapshot()?,
                    &before,
                )?;
                self.check_everything()?;
            }
            Op::Flush => {
                stat("flush");
                let before = self.engine_snapshot()?;
                self.flush()?;
                compare(
                    "engine's full reads after a flush, against before",
                    &self.engine_snapshot()?,
                    &before,
                )?;
            }
            Op::MinorCompact => {
                let before = self.engine_snapshot()?;
                let files_before: usize = self.stores()?.iter().map(|s| s.0).sum();
                self.db()
                    .compact_table(TABLE, false)
                    .map_err(|e| format!("minor compact_table failed: {e}"))?;
                let files_after: usize = self.stores()?.iter().map(|s| s.0).sum();
                stat(if files_after < files_before {
                    "minor compaction: merged files"
                } else {
                    "minor compaction: nothing to do"
                });
                compare(
                    "engine's full reads after a minor compaction, against before",
                    &self.engine_snapshot()?,
                    &before,
                )?;
            }
            Op::Split(key) => {
                let before = self.region_bounds()?;
                let expect_error = key
                    .as_ref()
                    .is_some_and(|k| k.is_empty() || before.iter().any(|(s, _)| s == k));
                let r = self.db().split_table(TABLE, key.as_deref());
                let after = self.region_bounds()?;
                match (r, expect_error) {
                    (Ok(()), false) => {
                        if key.is_some() && after.len() != before.len() + 1 {
                            return Err(format!(
                                "split at a key made {} regions of {}",
                                after.len(),
                                before.len()
                            ));
                        }
                        stat(if after.len() > before.len() {
                            "split: regions split"
                        } else {
                            "split: nothing to split"
                        });
                    }
                    (Err(Error::InvalidArgument(_)), true) => stat("split: bad key refused"),
                    (r, expected) => {
                        return Err(format!(
                            "split_table({key:?}) gave {:?}, expected an error: {expected}",
                            r.map_err(|e| e.to_string())
                        ))
                    }
                }
                self.check_everything()?;
            }
            Op::SplitRegion(pick) => {
                let Some((name, count)) = self.encoded_region_name(*pick)? else {
                    return Err("a table without regions".into());
                };
                match self.db().split_region(name.as_bytes(), None) {
                    Ok(()) => {
                        stat("split region: split");
                        if self.region_bounds()?.len() != count + 1 {
                            return Err("split_region did not add a region".into());
                        }
                    }
                    // A region of one row (or none) has nowhere to split.
                    Err(Error::InvalidArgument(m)) if m.contains("no row to split at") => {
                        stat("split region: no split point")
                    }
                    Err(e) => return Err(format!("split_region failed: {e}")),
                }
                self.check_everything()?;
            }
            Op::Merge(pick) => {
                let regions = self
                    .db()
                    .list_regions(TABLE)
                    .map_err(|e| format!("list_regions failed: {e}"))?;
                if regions.len() < 2 {
                    stat("merge: single region");
                    return Ok(());
                }
                let i = pick % (regions.len() - 1);
                let (a, b) = (
                    regions[i].info.encoded_name(),
                    regions[i + 1].info.encoded_name(),
                );
                // Either order names the same pair.
                let (first, second) = if pick % 2 == 0 { (a, b) } else { (b, a) };
                self.db()
                    .merge_regions(first.as_bytes(), second.as_bytes())
                    .map_err(|e| format!("merge_regions failed: {e}"))?;
                stat("merge: merged");
                if self.region_bounds()?.len() != regions.len() - 1 {
                    return Err("merge did not remove a region".into());
                }
                self.check_everything()?;
            }
            Op::Snapshot => {
                stat("snapshot");
                let name = format!("s{}", self.snapshots.len());
                self.db()
                    .snapshot(TABLE, &name, false, 0)
                    .map_err(|e| format!("snapshot failed: {e}"))?;
                self.snapshots.push((name, self.model.clone()));
            }
            Op::Restore(pick) => {
                if self.snapshots.is_empty() {
                    stat("restore: no snapshot yet");
                    return Ok(());
                }
                stat("restore");
                let (name, model) = self.snapshots[pick % self.snapshots.len()].clone();
                let db = self.db();
                db.disable_table(TABLE)
                    .and_then(|()| db.restore_snapshot(&name))
                    .and_then(|()| db.enable_table(TABLE))
                    .map_err(|e| format!("restore of {name} failed: {e}"))?;
                self.table = Some(db.table(TABLE).map_err(|e| e.to_string())?);
                self.model = model;
                // The restored regions are new: no row's timestamp record
                // carries over (as across a reopen).
                self.model.forget_server_ts();
                self.check_everything()?;
            }
            Op::Clone(pick) => {
                if self.snapshots.is_empty() {
                    stat("clone: no snapshot yet");
                    return Ok(());
                }
                stat("clone");
                let (name, model) = self.snapshots[pick % self.snapshots.len()].clone();
                let clone = format!("clone_{name}_{now}");
                self.db()
                    .clone_snapshot(&name, &clone)
                    .map_err(|e| format!("clone of {name} failed: {e}"))?;
                let source = self.table.take();
                let current = std::mem::replace(&mut self.model, model);
                self.table = self.db().table(&clone).ok();
                let checked = self.check_everything();
                self.table = source;
                self.model = current;
                checked.map_err(|e| format!("the clone of {name} reads otherwise: {e}"))?;
                let db = self.db();
                db.disable_table(&clone)
                    .and_then(|()| db.drop_table(&clone))
                    .map_err(|e| format!("dropping the clone failed: {e}"))?;
            }
            Op::MajorCompact => {
                stat("major compaction");
                self.flush()?;
                let before = Self::kept_deleted_stores(std::slice::from_ref(self.db()))?;
                self.db()
                    .compact_table(TABLE, true)
                    .map_err(|e| format!("major compact_table failed: {e}"))?;
                let info = self
                    .db()
                    .describe_table(TABLE)
                    .map_err(|e| format!("describe_table failed: {e}"))?;
                for region in &info.regions {
                    if region.stores.iter().any(|(_, s)| s.files > 1) {
                        return Err(format!(
                            "a store has several files after a major compaction: {:?}",
                            region.stores
                        ));
                    }
                }
                let after = Self::kept_deleted_stores(std::slice::from_ref(self.db()))?;
                let stores = Self::compacted_kept_deleted(&before, &after)?;
                self.model.major_compact(now, &stores)?;
                self.check_everything()?;
            }
        }
        Ok(())
    }
}

/// Runs the steps, comparing engine and model at each; the error names the
/// failing step and shows the model's cells.
pub(crate) fn run_steps(config: &Config, steps: &[Step]) -> Result<Harness, String> {
    let mut h = Harness::new(config.clone());
    for (i, step) in steps.iter().enumerate() {
        h.step(step).map_err(|e| {
            format!(
                "step {i} (now={}) {step:?}\n{e}\nmodel cells:\n{}",
                h.now(),
                h.model.dump()
            )
        })?;
    }
    h.check_everything().map_err(|e| {
        format!(
            "final check (now={}):\n{e}\nmodel cells:\n{}",
            h.now(),
            h.model.dump()
        )
    })?;
    Ok(h)
}
