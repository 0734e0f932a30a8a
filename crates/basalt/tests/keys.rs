//! Salted tables end to end through `Database`: a table pre-split at the
//! salt's bucket boundaries takes monotonic ids evenly across its regions,
//! and `scan_salted` reads them back in unsalted order (ranges, prefixes,
//! limits, reversed, batches).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use basalt::keys::{encode_u64, Salt, SaltedScan};
use basalt::{ColumnFamilyDescriptor, Put, Scan, TableDescriptor};
use bytes::Bytes;

use common::TestDb;

const BUCKETS: u16 = 8;
const ROWS: u64 = 4000;

/// The monotonic id of row `i`: a sequence number, fixed-width decimal.
fn id(i: u64) -> Vec<u8> {
    format!("{i:010}").into_bytes()
}

/// A table pre-split at the salt's boundaries, with `ROWS` monotonic ids
/// written salted.
fn salted_table(t: &TestDb, salt: &Salt) -> basalt::Table {
    t.db.create_table_with_splits(
        TableDescriptor::new("events").family(ColumnFamilyDescriptor::new("d")),
        &salt.split_keys_bytes(),
    )
    .unwrap();
    let table = t.db.table("events").unwrap();
    for i in 0..ROWS {
        table
            .put(&Put::new(salt.encode(&id(i))).add("d", "n", i.to_string()))
            .unwrap();
    }
    table
}

/// Rows per region, counted by scanning each region's key range.
fn rows_per_region(t: &TestDb, table: &basalt::Table) -> Vec<usize> {
    t.db.list_regions(table.name())
        .unwrap()
        .iter()
        .map(|r| {
            let scan = Scan::new()
                .start_row(r.info.start_key.clone())
                .stop_row(r.info.end_key.clone());
            table.scan(&scan).unwrap().count()
        })
        .collect()
}

#[test]
fn monotonic_ids_salted_spread_evenly_over_the_presplit_regions() {
    let t = TestDb::new();
    let salt = Salt::new(BUCKETS).unwrap();
    let table = salted_table(&t, &salt);
    let counts = rows_per_region(&t, &table);
    assert_eq!(counts.len(), usize::from(BUCKETS));
    assert_eq!(counts.iter().sum::<usize>() as u64, ROWS);
    let even = ROWS as f64 / f64::from(BUCKETS);
    for c in &counts {
        assert!(
            (*c as f64 - even).abs() <= 0.2 * even,
            "a region holds {c} rows, more than 20% off {even}: {counts:?}"
        );
    }

    // The same ids unsalted all land in the last region.
    t.db.create_table_with_splits(
        TableDescriptor::new("plain").family(ColumnFamilyDescriptor::new("d")),
        &salt.split_keys_bytes(),
    )
    .unwrap();
    let plain = t.db.table("plain").unwrap();
    for i in 0..ROWS {
        plain.put(&Put::new(id(i)).add("d", "n", "x")).unwrap();
    }
    let counts = rows_per_region(&t, &plain);
    assert_eq!(counts.last().copied(), Some(ROWS as usize), "{counts:?}");
}

#[test]
fn a_salted_scan_returns_every_row_in_unsalted_order_with_both_keys() {
    let t = TestDb::new();
    let salt = Salt::new(BUCKETS).unwrap();
    let table = salted_table(&t, &salt);
    let rows: Vec<_> = table
        .scan_salted(&salt, &Scan::new())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len() as u64, ROWS);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(&row.key()[..], &id(i as u64)[..]);
        assert_eq!(&row.salted_key()[..], &salt.encode(&id(i as u64))[..]);
        assert_eq!(row.bucket(), salt.prefix(&id(i as u64)));
        assert_eq!(salt.decode(row.salted_key()).unwrap(), &row.key()[..]);
        assert_eq!(
            row.result.value(b"d", b"n").map(|v| &v[..]),
            Some(i.to_string().as_bytes())
        );
    }
}

#[test]
fn a_salted_scan_honours_ranges_prefixes_limits_and_reversal() {
    let t = TestDb::new();
    let salt = Salt::new(BUCKETS).unwrap();
    let table = salted_table(&t, &salt);
    let keys = |scan: Scan| -> Vec<Bytes> {
        table
            .scan_salted(&salt, &scan)
            .unwrap()
            .map(|r| r.unwrap().key())
            .collect()
    };
    let ids =
        |range: std::ops::Range<u64>| -> Vec<Bytes> { range.map(|i| Bytes::from(id(i))).collect() };

    // A range of unsalted keys.
    assert_eq!(
        keys(Scan::new().start_row(id(100)).stop_row(id(250))),
        ids(100..250)
    );
    // A prefix of unsalted keys.
    assert_eq!(keys(Scan::new().prefix("00000012")), ids(1200..1300));
    // A limit counts rows across buckets.
    assert_eq!(keys(Scan::new().start_row(id(10)).limit(25)), ids(10..35));
    // Reversed: largest first, from the start row down to the stop row.
    let mut expected = ids(101..301);
    expected.reverse();
    assert_eq!(
        keys(
            Scan::new()
                .reversed(true)
                .start_row(id(300))
                .stop_row(id(100))
        ),
        expected
    );
    let newest: Vec<Bytes> = keys(Scan::new().reversed(true).limit(5));
    assert_eq!(
        newest,
        (ROWS - 5..ROWS)
            .rev()
            .map(|i| Bytes::from(id(i)))
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_salted_scan_keeps_the_pieces_of_wide_rows_together_and_counts_them_once() {
    let t = TestDb::new();
    let salt = Salt::new(4).unwrap();
    t.db.create_table_with_splits(
        TableDescriptor::new("wide").family(ColumnFamilyDescriptor::new("d")),
        &salt.split_keys_bytes(),
    )
    .unwrap();
    let table = t.db.table("wide").unwrap();
    for i in 0..20u64 {
        let mut put = Put::new(salt.encode(&encode_u64(i)));
        for q in 0..5 {
            put = put.add("d", format!("q{q}"), "v");
        }
        table.put(&put).unwrap();
    }
    let results: Vec<_> = table
        .scan_salted(&salt, &Scan::new().batch(2).limit(3))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // Three rows of five cells in pieces of two: 3 pieces each.
    assert_eq!(results.len(), 9);
    let keys: Vec<Bytes> = results.iter().map(|r| r.key()).collect();
    for (i, chunk) in keys.chunks(3).enumerate() {
        assert!(
            chunk.iter().all(|k| k[..] == encode_u64(i as u64)),
            "{keys:?}"
        );
    }
    let cells: usize = results.iter().map(|r| r.result.cells.len()).sum();
    assert_eq!(cells, 15);
}

#[test]
fn a_salted_scan_refuses_what_a_scan_refuses() {
    let t = TestDb::new();
    let salt = Salt::new(2).unwrap();
    let table = t.table("t", vec![ColumnFamilyDescriptor::new("d")]);
    assert!(table.scan_salted(&salt, &Scan::new().batch(0)).is_err());
    assert!(table
        .scan_salted(&salt, &Scan::new().max_versions(0))
        .is_err());
}
