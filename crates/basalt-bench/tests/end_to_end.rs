//! A tiny YCSB load and run, and a tiny db_bench sequence, against Basalt
//! embedded: operation counts add up and reads find the records.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use basalt_bench::dbbench::{run_benchmark, Benchmark, DbBenchConfig, KvStore};
use basalt_bench::targets::{BasaltEmbedded, BasaltKv};
use basalt_bench::workload::{key_bytes, OpKind, Workload, FIELD_COUNT};
use basalt_bench::ycsb::{run_phase, Phase, PhaseConfig, YcsbStore};

fn config(workload: Workload, records: u64, ops: u64) -> PhaseConfig {
    PhaseConfig {
        workload,
        record_count: records,
        operation_count: ops,
        threads: 2,
        target_ops: None,
        progress: false,
        seed: 1,
        timeline: false,
    }
}

#[test]
fn a_timeline_counts_every_operation_once_and_samples_basalts_background_work() {
    let dir = tempfile::tempdir().unwrap();
    let store = BasaltEmbedded::open(dir.path().to_path_buf(), Some(8 << 20), Some(4096)).unwrap();
    let with_timeline = PhaseConfig {
        timeline: true,
        ..config(Workload::A, 2_000, 0)
    };
    let load = run_phase(&store, Phase::Load, &with_timeline).unwrap();
    assert_eq!(load.timeline.iter().map(|s| s.ops).sum::<u64>(), 2_000);
    let account = load
        .tail_account
        .clone()
        .expect("an account with the timeline");
    assert_eq!(account.seconds, load.timeline.len() as u64);
    assert_eq!(account.busy_ops + account.quiet_ops, 2_000);
    // The last second is always sampled (at the phase's end); embedded
    // Basalt reports its background work.
    let last = load.timeline.last().expect("at least one second");
    assert!(last.background.is_some() && last.background_busy.is_some());
    let text = load.timeline_text();
    assert!(text.contains("[TIMELINE], 0, ") && text.contains("[TAIL], operations >= 1,024 us"));
    // Without the option nothing is kept or printed.
    let run = run_phase(&store, Phase::Run, &config(Workload::C, 2_000, 500)).unwrap();
    assert!(run.timeline.is_empty() && run.tail_account.is_none());
    assert!(run.timeline_text().is_empty());
    store.finish().unwrap();
}

#[test]
fn ycsb_load_and_run_against_basalt_embedded() {
    let dir = tempfile::tempdir().unwrap();
    let store = BasaltEmbedded::open(dir.path().to_path_buf(), Some(8 << 20), Some(4096)).unwrap();
    let load = run_phase(&store, Phase::Load, &config(Workload::A, 500, 0)).unwrap();
    assert_eq!(load.operations, 500);
    assert_eq!(load.op(OpKind::Insert).map(|s| s.operations), Some(500));
    assert_eq!(load.op(OpKind::Insert).map(|s| s.errors), Some(0));

    // Every loaded record is there with all of its fields.
    let mut session = store.session().unwrap();
    for n in [0u64, 1, 250, 499] {
        assert_eq!(session.read(&key_bytes(n)).unwrap(), FIELD_COUNT);
    }
    assert_eq!(session.read(b"user-not-loaded").unwrap(), 0);

    for (workload, kinds) in [
        (Workload::A, vec![OpKind::Read, OpKind::Update]),
        (Workload::E, vec![OpKind::Scan, OpKind::Insert]),
        (Workload::F, vec![OpKind::Read, OpKind::ReadModifyWrite]),
        (Workload::D, vec![OpKind::Read, OpKind::Insert]),
    ] {
        let run = run_phase(&store, Phase::Run, &config(workload, 500, 400)).unwrap();
        assert_eq!(run.operations, 400, "{workload}");
        assert_eq!(
            run.reads_not_found, 0,
            "{workload}: reads found every record"
        );
        let counted: u64 = kinds
            .iter()
            .filter_map(|k| run.op(*k))
            .map(|s| s.operations)
            .sum();
        assert_eq!(counted, 400, "{workload}: only the mix's operations ran");
        for (_, s) in &run.ops {
            assert_eq!(s.errors, 0);
        }
    }
    // Scans return full ranges: 100 records from the smallest key.
    assert_eq!(session.scan(b"user", 100).unwrap(), 100);
    store.finish().unwrap();
}

#[test]
fn db_bench_sequence_against_basalt_embedded() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = BasaltKv::open(
        dir.path().to_path_buf(),
        Some(8 << 20),
        basalt::Compression::None,
        4096,
        false,
    )
    .unwrap();
    let cfg = DbBenchConfig {
        num: 300,
        reads: None,
        writes: None,
        key_size: 24,
        value_size: 100,
        threads: 2,
        seek_nexts: 10,
        seed: 3,
        use_existing_db: false,
    };
    let (fill, _) = run_benchmark(&mut store, Benchmark::FillSeq, &cfg).unwrap();
    assert_eq!(fill.operations, 600, "each thread runs the whole benchmark");
    let (read, _) = run_benchmark(&mut store, Benchmark::ReadRandom, &cfg).unwrap();
    assert_eq!(read.found, Some((600, 600)), "fillseq wrote every key");
    let (seek, _) = run_benchmark(&mut store, Benchmark::SeekRandom, &cfg).unwrap();
    assert_eq!(seek.found, Some((600, 600)));
    let (seq, _) = run_benchmark(&mut store, Benchmark::ReadSeq, &cfg).unwrap();
    assert_eq!(seq.operations, 600, "two threads each read the 300 entries");
    // fillrandom starts over: some keys are drawn twice, so fewer exist.
    let (_, _) = run_benchmark(&mut store, Benchmark::FillRandom, &cfg).unwrap();
    let (seq, _) = run_benchmark(
        &mut store,
        Benchmark::ReadSeq,
        &DbBenchConfig {
            threads: 1,
            ..cfg.clone()
        },
    )
    .unwrap();
    assert!(
        seq.operations > 0 && seq.operations < 300,
        "{}",
        seq.operations
    );
    let sync_cfg = DbBenchConfig {
        writes: Some(5),
        ..cfg.clone()
    };
    let (sync, _) = run_benchmark(&mut store, Benchmark::FillSync, &sync_cfg).unwrap();
    assert_eq!(sync.operations, 10, "--writes per thread");
    assert!(store.get(b"definitely not a key").unwrap().is_none());
    store.close().unwrap();
}
