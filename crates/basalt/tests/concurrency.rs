//! Row-level atomicity under concurrency: writers apply multi-family row
//! mutations while readers get and scan; no reader may ever see part of a
//! mutation. Every mutation writes one generation number into four columns
//! across two families, so a mixed row is a visible tear.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use basalt::*;
use common::TestDb;

const ROWS: usize = 16;
const COLUMNS: [(&str, &str); 4] = [("a", "x"), ("a", "y"), ("b", "x"), ("b", "y")];

/// Generation `g` deletes at timestamp 2g and writes at 2g + 1: a delete and
/// a put at the *same* timestamp would mask the put (HBase's rule), so the
/// rewrite must be newer than the delete.
fn mutation(row: &str, generation: u64, with_delete: bool) -> RowMutations {
    let value = generation.to_string();
    let ts = i64::try_from(generation).unwrap() * 2;
    let mut put = Put::with_timestamp(row.to_string(), ts + 1);
    for (family, qualifier) in COLUMNS {
        put = put.add(family, qualifier, value.clone());
    }
    let mut rm = RowMutations::new(row.to_string());
    if with_delete {
        // Delete then rewrite in one atomic step: readers must never see the gap.
        rm = rm.add(Delete::with_timestamp(row.to_string(), ts)).unwrap();
    }
    rm.add(put).unwrap()
}

/// Checks one row as a reader saw it: all four columns, one generation.
fn check_row(result: &RowResult) -> u64 {
    assert_eq!(result.cells.len(), COLUMNS.len(), "partial row: {result:?}");
    let generations: BTreeSet<&[u8]> = result.cells.iter().map(|c| &c.value[..]).collect();
    assert_eq!(generations.len(), 1, "torn row mutation: {result:?}");
    String::from_utf8_lossy(&result.cells[0].value)
        .parse()
        .unwrap()
}

#[test]
fn readers_never_see_partial_row_mutations() {
    let t = TestDb::new();
    let table = t.table(
        "atomic",
        vec![
            ColumnFamilyDescriptor::new("a").max_versions(1),
            ColumnFamilyDescriptor::new("b").max_versions(1),
        ],
    );
    let rows: Vec<String> = (0..ROWS).map(|i| format!("row{i:02}")).collect();
    for row in &rows {
        table.mutate_row(&mutation(row, 0, false)).unwrap();
    }
    let generation = AtomicU64::new(1);
    let stop = AtomicBool::new(false);
    let reads = AtomicU64::new(0);

    std::thread::scope(|s| {
        for writer in 0..4 {
            let (table, rows, generation, stop) = (&table, &rows, &generation, &stop);
            s.spawn(move || {
                let mut i = writer;
                while !stop.load(Ordering::Relaxed) {
                    let row = &rows[i % ROWS];
                    let g = generation.fetch_add(1, Ordering::Relaxed);
                    let durability = if i.is_multiple_of(7) {
                        Durability::SyncWal
                    } else {
                        Durability::AsyncWal
                    };
                    let rm = mutation(row, g, i.is_multiple_of(3));
                    if durability == Durability::SyncWal {
                        table.mutate_row(&rm).unwrap();
                    } else {
                        // Batches go through the same pipeline with one shared sync.
                        let batch: Vec<Mutation> = rm.mutations().to_vec();
                        if batch.len() == 1 {
                            for r in table.batch(&batch) {
                                r.unwrap();
                            }
                        } else {
                            table.mutate_row(&rm).unwrap();
                        }
                    }
                    i += 4;
                }
            });
        }
        for reader in 0..3 {
            let (table, rows, stop, reads) = (&table, &rows, &stop, &reads);
            s.spawn(move || {
                let mut last_seen = [0u64; ROWS];
                let mut n = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    if (n + reader).is_multiple_of(4) {
                        let results: Vec<RowResult> = table
                            .scan(&Scan::new())
                            .unwrap()
                            .map(|r| r.unwrap())
                            .collect();
                        assert_eq!(results.len(), ROWS, "a row vanished mid-mutation");
                        for r in &results {
                            check_row(r);
                        }
                    } else {
                        let i = n % ROWS;
                        let g = check_row(&table.get(&Get::new(rows[i].clone())).unwrap());
                        // Reads never go back in time for one row.
                        assert!(
                            g >= last_seen[i] || g == 0,
                            "row {i} went from {} to {g}",
                            last_seen[i]
                        );
                        last_seen[i] = last_seen[i].max(g);
                    }
                    n += 1;
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        // Bounded by work, not by time: stop after enough writes were made.
        while generation.load(Ordering::Relaxed) < 20_000 {
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert!(reads.load(Ordering::Relaxed) > 100, "readers barely ran");
    for row in &rows {
        check_row(&table.get(&Get::new(row.clone())).unwrap());
    }
}
