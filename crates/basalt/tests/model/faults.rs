//! The model over a file store that fails on demand.
//!
//! The database runs over `FaultyFileStore::new(Arc::new(MemFileStore::new()))`
//! (store files, manifests and the catalog; the lock file and the WAL stay
//! on local disk), with the manual clock and `background_threads = 0`, so
//! every flush and compaction runs inside the step that causes it. Before a
//! step, the run may arm a fault (the n-th `create`, `write_all`, `finish`
//! or `read_range` from now fails, once or from then on) or clear them all.
//! The operations are the model's own (`strategies::step`); everything, the
//! operations and the faults, comes from one `u64` seed.
//!
//! # Rules
//!
//! - An operation that hits a fault fails with an `Err`: never a panic, and
//!   an `Err` is only acceptable when the store injected a fault during the
//!   operation. A read that succeeds must equal the reference.
//! - A write that returned `Ok` is acknowledged: the reference applies it,
//!   and every later comparison (after crashes and closes too) holds the
//!   engine to it.
//! - A write that returned `Err` may or may not have been applied. The run
//!   clears the faults at once and compares the engine's full reads (all
//!   versions, and raw reads of the families raw scans are modelled for)
//!   with each legal state in turn: not applied first, then applied (for a
//!   batch, every subset of its failed mutations); the first one that
//!   matches becomes the reference. None matching is a failure: a partly
//!   applied write.
//! - Flushes and minor compactions that fail need nothing: they never
//!   change what a read returns. A major compaction that fails may have
//!   rewritten some stores and not others; the run completes it with the
//!   faults cleared (at the same clock time, so the result is the same), and
//!   then the reference drops what it drops.
//! - A reopen closes (when the step says so; a failing close is fine) or
//!   just drops the database (a crash), then opens it over the same store;
//!   an open that fails is retried with the faults cleared. Then, faults
//!   cleared, everything is compared. Every [`CHECKPOINT_STEPS`] steps and
//!   at the end the run does the same with a crash, so acknowledged writes
//!   are checked through WAL replay and the store's files regularly.
//!
//! # Replay
//!
//! Each outcome goes into a trace (the step, what the store was told to
//! fail, what came back); the same seed gives the same trace, which a test
//! checks. A failure prints its seed; `MODEL_SEED=<n>` runs just that seed.

use std::sync::Arc;

use basalt::fs::{FaultOp, FaultyFileStore, FileStore, MemFileStore};
use basalt::{Error, Mutation};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::harness::*;
use crate::operations::*;
use crate::reference::*;
use crate::strategies::*;

/// Steps between the crash-and-compare checkpoints.
pub(crate) const CHECKPOINT_STEPS: usize = 25;

/// The faults a run injects.
const FAULT_OPS: [FaultOp; 4] = [
    FaultOp::Create,
    FaultOp::Write,
    FaultOp::Finish,
    FaultOp::Read,
];

/// What one seed's run did.
pub(crate) struct FaultRun {
    /// One line per fault armed or cleared and per step with its outcome.
    pub(crate) trace: Vec<String>,
    /// Faults the store injected.
    pub(crate) injected: u64,
}

/// The database under test over the faulty store, and the trace.
struct Run {
    h: Harness,
    store: FaultyFileStore,
    trace: Vec<String>,
}

/// Runs one seed; the error tells what went wrong, with the end of the
/// trace and the reference's cells.
pub(crate) fn run_seed(seed: u64) -> Result<FaultRun, String> {
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        ProptestConfig::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let mut config = config()
        .new_tree(&mut runner)
        .map_err(|e| e.to_string())?
        .current();
    let steps = vec(step(), 60..140)
        .new_tree(&mut runner)
        .map_err(|e| e.to_string())?
        .current();
    // The faults draw from their own generator, so the steps of a seed do
    // not depend on how the faults are chosen.
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed_fa17);

    let store = FaultyFileStore::new(Arc::new(MemFileStore::new()));
    config.files = Some(Arc::new(store.clone()) as Arc<dyn FileStore>);
    let mut run = Run {
        h: Harness::new(config),
        store,
        trace: Vec::new(),
    };
    let result = (|| {
        for (i, step) in steps.iter().enumerate() {
            run.arm_faults(&mut rng);
            run.h.clock.advance(step.advance);
            let now = run.h.now();
            let outcome = run
                .run_op(&step.op, now)
                .map_err(|e| format!("step {i} (now={now}) {step:?}\n{e}"))?;
            let line = format!("{i} {step:?} -> {outcome}");
            run.trace.push(run.normalize(&line));
            if (i + 1) % CHECKPOINT_STEPS == 0 {
                run.checkpoint()
                    .map_err(|e| format!("checkpoint after step {i}: {e}"))?;
            }
        }
        run.checkpoint()
            .map_err(|e| format!("final checkpoint: {e}"))
    })();
    match result {
        Ok(()) => Ok(FaultRun {
            injected: run.store.injected(),
            trace: run.trace,
        }),
        Err(e) => {
            let tail = run.trace.len().saturating_sub(40);
            Err(format!(
                "{e}\nlast steps:\n{}\nmodel cells:\n{}",
                run.trace[tail..].join("\n"),
                run.h.model.dump()
            ))
        }
    }
}

impl Run {
    /// Maybe clears the faults, maybe arms one (the n-th call from now of
    /// an operation fails, once or from then on).
    fn arm_faults(&mut self, rng: &mut StdRng) {
        if rng.random_bool(0.15) {
            self.store.clear();
            self.trace.push("faults cleared".into());
        }
        if rng.random_bool(0.3) {
            let op = FAULT_OPS[rng.random_range(0..FAULT_OPS.len())];
            let n = rng.random_range(1..=8);
            // Persistent faults on any operation (a full disk, a store that
            // refuses reads): while flushes keep failing, a write over the
            // memstore blocking size fails with `RegionTooBusy` instead of
            // waiting forever (it did, until the fault run found it).
            if rng.random_bool(0.7) {
                self.store.fail_nth(op, n);
                self.trace.push(format!("fail {op:?} call {n} from now"));
            } else {
                self.store.fail_from(op, n);
                self.trace.push(format!("fail every {op:?} from call {n}"));
            }
        }
    }

    /// The data directory (a temporary one) out of messages, so traces of
    /// two runs compare.
    fn normalize(&self, s: &str) -> String {
        s.replace(&*self.h.dir.path().to_string_lossy(), "<dir>")
    }

    /// Accepts an engine error only when the store injected a fault since
    /// `before` (its injection count then).
    fn faulted(
        &self,
        before: u64,
        what: &str,
        e: &dyn std::fmt::Display,
    ) -> Result<String, String> {
        if self.store.injected() > before {
            Ok(format!("err: {}", self.normalize(&e.to_string())))
        } else {
            Err(format!("{what} failed without an injected fault: {e}"))
        }
    }

    /// A read through the harness, which compares it with the reference:
    /// a mismatch fails the run, an engine error needs an injected fault.
    fn read(&self, before: u64, r: Result<(), String>) -> Result<String, String> {
        match r {
            Ok(()) => Ok("ok".into()),
            Err(e) if e.contains("engine and model differ") => Err(e),
            Err(e) => self.faulted(before, "a read", &e),
        }
    }

    /// After a failed write: clears the faults and adopts the first of the
    /// legal reference states the engine's full reads match.
    fn resolve(&mut self, candidates: Vec<(&str, Model)>) -> Result<String, String> {
        self.store.clear();
        let mut misses = Vec::new();
        for (label, model) in candidates {
            let previous = std::mem::replace(&mut self.h.model, model);
            match self.h.check_everything() {
                Ok(()) => return Ok(format!("resolved: {label}")),
                Err(e) => {
                    misses.push(format!("{label}: {e}"));
                    self.h.model = previous;
                }
            }
        }
        Err(format!(
            "after a failed write the engine shows none of its legal states:\n{}",
            misses.join("\n")
        ))
    }

    /// The reference without and with a failed single write.
    fn resolve_one(&mut self, apply: impl FnOnce(&mut Model)) -> Result<String, String> {
        let unchanged = self.h.model.clone();
        let mut applied = self.h.model.clone();
        apply(&mut applied);
        self.resolve(vec![("not applied", unchanged), ("applied", applied)])
    }

    fn run_op(&mut self, op: &Op, now: i64) -> Result<String, String> {
        let before = self.store.injected();
        let outcome = match op {
            Op::Put(p) => match self.h.table().put(&build_put(p, now)) {
                Ok(()) => {
                    let m = [MutSpec::Put(p.clone())];
                    self.h.model.apply_row_mutations(&m, now);
                    "ok".into()
                }
                Err(e) => {
                    let err = self.faulted(before, "put", &e)?;
                    let m = [MutSpec::Put(p.clone())];
                    let r = self.resolve_one(|model| model.apply_row_mutations(&m, now))?;
                    format!("{err}; {r}")
                }
            },
            Op::Delete(d) => match self.h.table().delete(&build_delete(d, now)) {
                Ok(()) => {
                    let m = [MutSpec::Delete(d.clone())];
                    self.h.model.apply_row_mutations(&m, now);
                    "ok".into()
                }
                Err(e) => {
                    let err = self.faulted(before, "delete", &e)?;
                    let m = [MutSpec::Delete(d.clone())];
                    let r = self.resolve_one(|model| model.apply_row_mutations(&m, now))?;
                    format!("{err}; {r}")
                }
            },
            Op::RowMutations { row, muts } => {
                match self
                    .h
                    .table()
                    .mutate_row(&build_row_mutations(row, muts, now))
                {
                    Ok(_) => {
                        self.h.model.apply_row_mutations(muts, now);
                        "ok".into()
                    }
                    Err(e) => {
                        let err = self.faulted(before, "mutate_row", &e)?;
                        let r = self.resolve_one(|model| model.apply_row_mutations(muts, now))?;
                        format!("{err}; {r}")
                    }
                }
            }
            Op::Increment {
                row,
                cols,
                durability,
            } => {
                let inc = build_increment(row, cols, *durability);
                let engine = match self.h.table().increment(&inc) {
                    Ok(r) => Ok(engine_view(&r).cells),
                    Err(Error::NotALong { len }) => Err(len),
                    Err(e) => {
                        let err = self.faulted(before, "increment", &e)?;
                        let r = self.resolve_one(|model| {
                            let _ = model.increment(row, cols, now);
                        })?;
                        return Ok(format!("{err}; {r}"));
                    }
                };
                let model = self.h.model.increment(row, cols, now);
                compare("increment result", &engine, &model)?;
                "ok".into()
            }
            Op::Append {
                row,
                cols,
                durability,
            } => {
                let app = build_append(row, cols, *durability);
                match self.h.table().append(&app) {
                    Ok(r) => {
                        let model = self.h.model.append(row, cols, now);
                        compare("append result", &engine_view(&r).cells, &model)?;
                        "ok".into()
                    }
                    Err(e) => {
                        let err = self.faulted(before, "append", &e)?;
                        let r = self.resolve_one(|model| {
                            model.append(row, cols, now);
                        })?;
                        format!("{err}; {r}")
                    }
                }
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
                let holds = self
                    .h
                    .model
                    .check(row, *fam, qual, cond, model_range(*tr, now), now);
                match self.h.table().check_and_mutate(&cam) {
                    Ok(engine) => {
                        compare("check_and_mutate result", &engine, &holds)?;
                        if holds {
                            self.h.model.apply_row_mutations(muts, now);
                        }
                        format!("ok: {engine}")
                    }
                    Err(e) => {
                        let err = self.faulted(before, "check_and_mutate", &e)?;
                        let r = self.resolve_one(|model| {
                            if holds {
                                model.apply_row_mutations(muts, now);
                            }
                        })?;
                        format!("{err}; {r}")
                    }
                }
            }
            Op::Batch(muts) => self.batch(muts, now, before)?,
            Op::Get(g) => self.read(before, self.h.get(g).map(drop))?,
            Op::Scan(s) => self.read(before, self.h.scan(s).map(drop))?,
            Op::RawScan(s) => self.read(before, self.h.raw_scan(s).map(drop))?,
            // Neither changes what a read returns: a failure needs nothing.
            Op::Flush => match self.h.db().flush_table(TABLE) {
                Ok(()) => "ok".into(),
                Err(e) => self.faulted(before, "flush", &e)?,
            },
            Op::MinorCompact => match self.h.db().compact_table(TABLE, false) {
                Ok(()) => "ok".into(),
                Err(e) => self.faulted(before, "minor compaction", &e)?,
            },
            Op::MajorCompact => {
                let db = self.h.db();
                let mut faults = Vec::new();
                if let Err(e) = db.flush_table(TABLE) {
                    // Compact only once every cell is in a file, as the
                    // reference's compaction assumes: flush again,
                    // faults cleared.
                    faults.push(self.faulted(before, "major compaction's flush", &e)?);
                    self.store.clear();
                    db.flush_table(TABLE)
                        .map_err(|e| format!("flush without faults: {e}"))?;
                }
                let kept_before = Harness::kept_deleted_stores(std::slice::from_ref(db))?;
                if let Err(e) = db.compact_table(TABLE, true) {
                    // Some stores may be compacted and others not: finish
                    // the job, faults cleared. A store the failed attempt
                    // compacted is one major-compacted file now, which the
                    // second attempt leaves be, so each store is compacted
                    // once, against the record taken before.
                    faults.push(self.faulted(before, "major compaction", &e)?);
                    self.store.clear();
                    db.compact_table(TABLE, true)
                        .map_err(|e| format!("major compaction without faults: {e}"))?;
                }
                let kept_after = Harness::kept_deleted_stores(std::slice::from_ref(db))?;
                let stores = Harness::compacted_kept_deleted(&kept_before, &kept_after)?;
                self.h.model.major_compact(now, &stores)?;
                if faults.is_empty() {
                    "ok".to_string()
                } else {
                    format!("{}; completed without faults", faults.join("; "))
                }
            }
            Op::Reopen { close } => self.reopen(*close)?,
            // The fault run keeps one region (see `strategies::step`).
            Op::Split(_)
            | Op::SplitRegion(_)
            | Op::Merge(_)
            | Op::Snapshot
            | Op::Restore(_)
            | Op::Clone(_) => "not in the fault run".into(),
        };
        Ok(outcome)
    }

    /// A batch: each mutation that failed may or may not have been applied.
    fn batch(&mut self, muts: &[MutSpec], now: i64, before: u64) -> Result<String, String> {
        let built: Vec<Mutation> = muts.iter().map(|m| build_mutation(m, now)).collect();
        let results = self.h.table().batch(&built);
        let failed: Vec<usize> = (0..results.len())
            .filter(|&i| results[i].is_err())
            .collect();
        if failed.is_empty() {
            self.h.model.apply_batch(muts, now);
            return Ok("ok".into());
        }
        let mut errs = Vec::new();
        for &i in &failed {
            let e = results[i].as_ref().err().unwrap();
            errs.push(self.faulted(before, "a batch mutation", e)?);
        }
        // Every mutation reads the state before the batch (as
        // `Model::apply_batch` does); then each applied one is written in
        // order. A failed mutation that was not applied is as if it was not
        // in the batch: it failed before its timestamp was taken (a read
        // while resolving it) or with its whole region's group (a write).
        let mut candidates = Vec::new();
        for mask in 0u32..(1 << failed.len()) {
            let mut model = self.h.model.clone();
            let subset: Vec<MutSpec> = muts
                .iter()
                .enumerate()
                .filter(|(i, _)| match failed.iter().position(|f| f == i) {
                    Some(k) => mask & (1 << k) != 0,
                    None => true,
                })
                .map(|(_, m)| m.clone())
                .collect();
            model.apply_batch(&subset, now);
            candidates.push((
                if mask == 0 {
                    "none applied"
                } else {
                    "some applied"
                },
                model,
            ));
        }
        let r = self.resolve(candidates)?;
        Ok(format!(
            "{} failed ({}); {r}",
            failed.len(),
            errs.join(", ")
        ))
    }

    /// Closes (or, `close` false, just drops) the database and opens it
    /// again over the same store; then compares everything, faults cleared.
    fn reopen(&mut self, close: bool) -> Result<String, String> {
        let before = self.store.injected();
        let mut outcome = Vec::new();
        self.h.table = None;
        // The engine's per-row timestamp record does not survive a reopen.
        self.h.model.forget_server_ts();
        if let Some(db) = self.h.db.take() {
            if close {
                if let Err(e) = db.close() {
                    outcome.push(format!("close {}", self.faulted(before, "close", &e)?));
                }
            }
            drop(db);
        }
        let opened = self
            .h
            .config
            .open(self.h.dir.path(), &self.h.clock)
            .and_then(|db| match failed_region(&db) {
                // A region whose files could not be read stays FAILED_OPEN
                // while the database serves the rest: under an injected
                // fault that is this open's failure, retried without one.
                Some(reason) => {
                    drop(db);
                    Err(basalt::Error::Io {
                        path: self.h.dir.path().to_path_buf(),
                        source: std::io::Error::other(format!("a region failed to open: {reason}")),
                    })
                }
                None => Ok(db),
            });
        let db = match opened {
            Ok(db) => db,
            Err(e) => {
                outcome.push(format!("open {}", self.faulted(before, "open", &e)?));
                self.store.clear();
                let db = self
                    .h
                    .config
                    .open(self.h.dir.path(), &self.h.clock)
                    .map_err(|e| format!("open without faults failed: {e}"))?;
                if let Some(reason) = failed_region(&db) {
                    return Err(format!("a region failed to open without a fault: {reason}"));
                }
                db
            }
        };
        self.h.table = Some(
            db.table(TABLE)
                .map_err(|e| format!("table after reopen: {e}"))?,
        );
        self.h.db = Some(db);
        self.store.clear();
        self.h.check_everything()?;
        outcome.push("reopened, all reads match".into());
        Ok(self.normalize(&outcome.join("; ")))
    }

    /// Clears the faults, crashes (drops the database without closing it),
    /// reopens and compares everything.
    fn checkpoint(&mut self) -> Result<(), String> {
        self.store.clear();
        let outcome = self.reopen(false)?;
        self.trace.push(format!("checkpoint: {outcome}"));
        Ok(())
    }
}

/// The reason the first region of the model's table that did not open gives,
/// if one did not.
fn failed_region(db: &basalt::Database) -> Option<String> {
    db.list_regions(TABLE)
        .ok()?
        .into_iter()
        .find_map(|r| match r.state {
            basalt::RegionState::Open => None,
            other => Some(format!("{other:?}")),
        })
}
