//! More data than the block cache holds: 2 GiB of cells written through the
//! normal write path (flushes and compactions run in the background), then
//! read back by point gets and full scans, every value checked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use basalt::*;

const VALUE_BYTES: usize = 16 * 1024;
const TOTAL_BYTES: usize = 2 << 30;
const ROWS: usize = TOTAL_BYTES / VALUE_BYTES;
const BATCH: usize = 64;

fn row_key(i: usize) -> String {
    // Spread writes over the key space instead of appending.
    format!("row{:08}", (i * 7919) % ROWS)
}

/// A value that can only be right for its own row: a xorshift stream
/// seeded by the row number.
fn value_for(i: usize) -> Vec<u8> {
    let mut state = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(VALUE_BYTES);
    while out.len() < VALUE_BYTES {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(VALUE_BYTES);
    out
}

fn row_number(key: &[u8]) -> usize {
    let pos: usize = std::str::from_utf8(&key[3..]).unwrap().parse().unwrap();
    // Invert the spreading: pos = i * 7919 mod ROWS.
    let inverse = mod_inverse(7919, ROWS);
    (pos * inverse) % ROWS
}

fn mod_inverse(a: usize, m: usize) -> usize {
    (1..m).find(|x| (a * x) % m == 1).unwrap()
}

#[test]
fn two_gibibytes_round_trip_through_store_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = Options::new(dir.path());
    options.block_cache_bytes = 64 << 20;
    options.memstore_flush_bytes = 64 << 20;
    // One region throughout: the test measures its store.
    options.region_split_policy = RegionSplitPolicy::ConstantSize;
    let db = Database::open_with(options).unwrap();
    db.create_table(TableDescriptor::new("big").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    let table = db.table("big").unwrap();

    for start in (0..ROWS).step_by(BATCH) {
        let batch: Vec<Mutation> = (start..(start + BATCH).min(ROWS))
            .map(|i| {
                Put::new(row_key(i))
                    .add("f", "v", value_for(i))
                    .durability(Durability::AsyncWal)
                    .into()
            })
            .collect();
        for result in table.batch(&batch) {
            result.unwrap();
        }
    }
    db.flush_table("big").unwrap();
    let info = db.describe_table("big").unwrap();
    let (files, file_bytes): (usize, u64) = info.regions[0]
        .stores
        .iter()
        .fold((0, 0), |(n, b), (_, s)| (n + s.files, b + s.file_bytes));
    println!("{ROWS} rows of {VALUE_BYTES} bytes in {files} store files, {file_bytes} bytes");
    assert!(
        file_bytes >= TOTAL_BYTES as u64,
        "the data is on disk, not only in memory"
    );
    assert_eq!(info.regions[0].load.memstore_bytes, 0);

    // Full scan: every row once, in order, with its own value.
    let mut seen = 0usize;
    let mut previous: Option<bytes::Bytes> = None;
    for result in table.scan(&Scan::new().caching(256)).unwrap() {
        let result = result.unwrap();
        assert!(
            previous.as_ref().is_none_or(|p| *p < result.row),
            "rows out of order"
        );
        let i = row_number(&result.row);
        assert_eq!(
            result.value(b"f", b"v").map(|v| &v[..]),
            Some(&value_for(i)[..]),
            "row {i}"
        );
        previous = Some(result.row);
        seen += 1;
    }
    assert_eq!(seen, ROWS);

    // Point gets, in an order unrelated to the write or key order.
    for n in 0..ROWS {
        let i = (n * 104_729) % ROWS;
        let result = table.get(&Get::new(row_key(i))).unwrap();
        assert_eq!(
            result.value(b"f", b"v").map(|v| &v[..]),
            Some(&value_for(i)[..]),
            "row {i}"
        );
    }
    db.close().unwrap();
}
