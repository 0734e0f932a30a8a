//! Store files through the embedded API: flushes, compactions, what the
//! table description reports, the block cache, and how many data blocks a
//! point get reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use basalt::*;

fn options(dir: &std::path::Path) -> Options {
    let mut o = Options::new(dir);
    // Deterministic: flushes and compactions only when the test asks.
    o.background_threads = 0;
    o.compaction_min_files = 100;
    o.compaction_max_files = 100;
    o
}

fn store_totals(db: &Database, table: &str) -> StoreStats {
    let info = db.describe_table(table).unwrap();
    let mut total = StoreStats::default();
    for region in &info.regions {
        for (_, s) in &region.stores {
            total.files += s.files;
            total.file_bytes += s.file_bytes;
            total.memstore_bytes += s.memstore_bytes;
            total.data_blocks_read += s.data_blocks_read;
            total.data_blocks_from_disk += s.data_blocks_from_disk;
            total.point_read_files += s.point_read_files;
            total.point_read_skips += s.point_read_skips;
        }
    }
    total
}

const ROWS: usize = 4000;
const FILES: usize = 4;

/// Four store files whose key ranges all overlap, each holding every
/// fourth row; a fifth holding updates of every tenth row.
fn write_overlapping_files(db: &Database, bloom: BloomType) {
    db.create_table(
        TableDescriptor::new("t").family(
            ColumnFamilyDescriptor::new("f")
                .bloom_filter(bloom)
                .block_size(1024),
        ),
    )
    .unwrap();
    let table = db.table("t").unwrap();
    for file in 0..FILES {
        for i in (file..ROWS).step_by(FILES) {
            table
                .put(&Put::new(format!("row{i:06}")).add(
                    "f",
                    "q",
                    format!("value {i} from file {file}"),
                ))
                .unwrap();
        }
        db.flush_table("t").unwrap();
    }
    for i in (0..ROWS).step_by(10) {
        table
            .put(&Put::new(format!("row{i:06}")).add("f", "q", format!("update {i}")))
            .unwrap();
    }
    db.flush_table("t").unwrap();
}

/// Cold point gets; returns (gets, data blocks read, files holding the
/// rows, files the gets consulted). Checks per get that no more blocks were
/// read than files consulted (files key range and bloom could not rule out).
fn cold_gets(db: &Database) -> (u64, u64, u64, u64) {
    let table = db.table("t").unwrap();
    let (mut gets, mut blocks, mut holders, mut consulted) = (0u64, 0u64, 0u64, 0u64);
    for n in 0..500 {
        let i = (n * 7919) % ROWS;
        let before = store_totals(db, "t");
        let result = table.get(&Get::new(format!("row{i:06}"))).unwrap();
        let after = store_totals(db, "t");
        let read = after.data_blocks_read - before.data_blocks_read;
        let may_hold = after.point_read_files - before.point_read_files;
        assert!(
            read <= may_hold,
            "row {i}: {read} blocks from {may_hold} candidate files"
        );
        consulted += may_hold;
        let expected = if i.is_multiple_of(10) {
            format!("update {i}")
        } else {
            format!("value {i} from file {}", i % FILES)
        };
        assert_eq!(
            result.value(b"f", b"q").map(|v| v.to_vec()),
            Some(expected.into_bytes())
        );
        // The row is in one file, or two when it was updated.
        let files_holding = if i.is_multiple_of(10) { 2 } else { 1 };
        gets += 1;
        blocks += read;
        holders += files_holding;
    }
    (gets, blocks, holders, consulted)
}

#[test]
fn point_gets_read_at_most_one_block_per_file_that_may_hold_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(options(dir.path())).unwrap();
    write_overlapping_files(&db, BloomType::Row);
    assert_eq!(store_totals(&db, "t").files, FILES + 1);
    db.close().unwrap();

    // Reopened: an empty block cache, every file cold.
    let db = Database::open_with(options(dir.path())).unwrap();
    let table = db.table("t").unwrap();
    let (gets, blocks, holders, consulted) = cold_gets(&db);
    let skipped = store_totals(&db, "t").point_read_skips;
    println!(
        "ROW bloom: {gets} cold gets over {} files: {blocks} data blocks read ({:.3} per get); \
         {holders} files held the rows, {consulted} were consulted, {skipped} skipped by range or bloom",
        FILES + 1,
        blocks as f64 / gets as f64
    );
    assert_eq!(blocks, consulted, "exactly one block per consulted file");
    // Bloom false positives (about 1%) are the only consulted files that
    // do not hold the row.
    assert!(
        consulted - holders <= (gets * FILES as u64) / 25,
        "{consulted} consulted, {holders} hold"
    );
    // A row that is nowhere costs no data block at all.
    let before = store_totals(&db, "t").data_blocks_read;
    assert!(table.get(&Get::new("row999999x")).unwrap().is_empty());
    assert!(table.get(&Get::new("row000001x")).unwrap().is_empty());
    assert_eq!(store_totals(&db, "t").data_blocks_read - before, 0);
    let cache = db.block_cache_stats();
    println!(
        "block cache: {} hits, {} misses, {} bytes cached",
        cache.hits, cache.misses, cache.bytes
    );
    assert!(cache.misses > 0);
}

#[test]
fn without_blooms_every_overlapping_file_costs_a_block() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(options(dir.path())).unwrap();
    write_overlapping_files(&db, BloomType::None);
    db.close().unwrap();
    let db = Database::open_with(options(dir.path())).unwrap();
    let (gets, blocks, holders, _) = cold_gets(&db);
    println!(
        "no bloom: {gets} cold gets over {} files read {blocks} data blocks ({:.3} per get)",
        FILES + 1,
        blocks as f64 / gets as f64
    );
    // Every file's key range covers every row: each may hold it.
    assert!(blocks > holders, "blooms are what save the reads");
    assert!(blocks <= gets * (FILES as u64 + 1));
}

#[test]
fn flush_and_compactions_keep_reads_and_shrink_the_file_count() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(options(dir.path())).unwrap();
    write_overlapping_files(&db, BloomType::RowCol);
    let table = db.table("t").unwrap();
    table.delete(&Delete::new("row000004")).unwrap();
    db.flush_table("t").unwrap();
    let before: Vec<RowResult> = table
        .scan(&Scan::new().max_versions(5))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let raw_before = table
        .scan(&Scan::new().raw(true).max_versions(10))
        .unwrap()
        .count();
    assert_eq!(store_totals(&db, "t").files, FILES + 2);

    db.compact_table("t", false).unwrap();
    assert_eq!(
        store_totals(&db, "t").files,
        FILES + 2,
        "policy minimums not met: nothing to do"
    );
    db.compact_table("t", true).unwrap();
    let after_major = store_totals(&db, "t");
    assert_eq!(
        after_major.files, 1,
        "a major compaction leaves one file per store"
    );
    assert_eq!(after_major.memstore_bytes, 0);
    let after: Vec<RowResult> = table
        .scan(&Scan::new().max_versions(5))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(
        before, after,
        "compaction never changes what a read returns"
    );
    let raw_after = table.scan(&Scan::new().raw(true).max_versions(10)).unwrap();
    let raw_rows: Vec<RowResult> = raw_after.map(|r| r.unwrap()).collect();
    assert!(
        raw_rows.len() < raw_before,
        "the deleted row and its marker are gone"
    );
    assert!(raw_rows
        .iter()
        .flat_map(|r| &r.cells)
        .all(|c| c.cell_type == CellType::Put));

    // Survives a restart: the manifest lists the one file.
    db.close().unwrap();
    let db = Database::open_with(options(dir.path())).unwrap();
    assert_eq!(store_totals(&db, "t").files, 1);
    let reopened: Vec<RowResult> = db
        .table("t")
        .unwrap()
        .scan(&Scan::new().max_versions(5))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(before, reopened);
}

#[test]
fn a_region_opened_with_too_many_files_is_compacted_without_a_write() {
    // HBase checks for a compaction after every region open: a region that
    // is only read after a restart would otherwise keep every file its
    // last close flushed.
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(options(dir.path())).unwrap();
    write_overlapping_files(&db, BloomType::Row);
    let files = store_totals(&db, "t").files;
    assert!(files >= 4, "{files} files");
    let before: Vec<RowResult> = db
        .table("t")
        .unwrap()
        .scan(&Scan::new())
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    db.close().unwrap();

    let mut o = Options::new(dir.path());
    o.background_threads = 1;
    o.compaction_min_files = 3;
    o.compaction_max_files = 10;
    let db = Database::open_with(o).unwrap();
    // A liveness bound, not a speed check: the background worker gets a
    // minute to do what takes milliseconds.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while store_totals(&db, "t").files >= files {
        assert!(
            std::time::Instant::now() < deadline,
            "no compaction after the open"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let after: Vec<RowResult> = db
        .table("t")
        .unwrap()
        .scan(&Scan::new())
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(before, after);
}

#[test]
fn automatic_flushes_and_minor_compactions_bound_the_file_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::new(dir.path());
    o.background_threads = 0;
    o.memstore_flush_bytes = 16 * 1024;
    o.compaction_min_files = 3;
    o.compaction_max_files = 6;
    let db = Database::open_with(o).unwrap();
    db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    let table = db.table("t").unwrap();
    let mut most_files = 0;
    for i in 0..20_000 {
        table
            .put(&Put::new(format!("k{:08}", (i * 7919) % 20_000)).add("f", "q", format!("v{i}")))
            .unwrap();
        if i % 500 == 0 {
            most_files = most_files.max(store_totals(&db, "t").files);
        }
    }
    let totals = store_totals(&db, "t");
    println!(
        "{} files, {} bytes; at most {most_files} files at once",
        totals.files, totals.file_bytes
    );
    assert!(totals.file_bytes > 0, "memstores were flushed");
    assert!(
        most_files <= 16,
        "minor compactions keep the file count bounded ({most_files})"
    );
    assert_eq!(table.scan(&Scan::new()).unwrap().count(), 20_000);
}

#[test]
fn writers_wait_for_flushes_instead_of_failing() {
    // A tiny blocking limit with a background flusher: writers are slowed
    // while the flush catches up, and every write succeeds.
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::new(dir.path());
    o.background_threads = 1;
    o.memstore_flush_bytes = 8 * 1024;
    o.memstore_block_multiplier = 2;
    let db = Database::open_with(o).unwrap();
    db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")))
        .unwrap();
    let table = db.table("t").unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let table = table.clone();
            s.spawn(move || {
                for i in 0..2000 {
                    table
                        .put(&Put::new(format!("t{t}-{i:05}")).add("f", "q", vec![b'x'; 200]))
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(table.scan(&Scan::new()).unwrap().count(), 8000);
    assert!(store_totals(&db, "t").files >= 1);
}

#[test]
fn reads_skip_files_older_than_their_time_range() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(options(dir.path())).unwrap();
    db.create_table(
        TableDescriptor::new("t").family(
            ColumnFamilyDescriptor::new("f")
                .max_versions(5)
                .block_size(1024),
        ),
    )
    .unwrap();
    let table = db.table("t").unwrap();
    // An old file (ts 100), then a newer one (ts 1000) with a delete marker.
    for i in 0..500 {
        table
            .put(&Put::new(format!("r{i:04}")).add_at("f", "q", 100, format!("old {i}")))
            .unwrap();
    }
    db.flush_table("t").unwrap();
    for i in 0..500 {
        table
            .put(&Put::new(format!("r{i:04}")).add_at("f", "q", 1000, format!("new {i}")))
            .unwrap();
    }
    table
        .delete(&Delete::new("r0007").column_at("f", "q", 1000))
        .unwrap();
    db.flush_table("t").unwrap();
    db.close().unwrap();

    let db = Database::open_with(options(dir.path())).unwrap();
    let table = db.table("t").unwrap();
    let blocks = |db: &Database| store_totals(db, "t").data_blocks_read;
    let collect =
        |scan: Scan| -> Vec<RowResult> { table.scan(&scan).unwrap().map(|r| r.unwrap()).collect() };

    let before = blocks(&db);
    let recent = collect(Scan::new().time_range(TimeRange::new(500, i64::MAX).unwrap()));
    let recent_blocks = blocks(&db) - before;
    let before = blocks(&db);
    let everything = collect(Scan::new().max_versions(5));
    let all_blocks = blocks(&db) - before;
    println!("time-ranged scan read {recent_blocks} blocks, full scan {all_blocks}");
    assert!(recent_blocks < all_blocks, "the old file was not read");
    assert_eq!(
        recent.len(),
        499,
        "r0007's new version is deleted and the old one is out of range"
    );
    assert!(recent.iter().all(|r| r.cells[0].timestamp == 1000));
    // A range ending before the newer file must still read it: its
    // versions and markers decide what the old file shows.
    let old = collect(
        Scan::new()
            .time_range(TimeRange::new(0, 500).unwrap())
            .max_versions(5),
    );
    assert_eq!(old.len(), 500);
    assert_eq!(everything.len(), 500);
}

#[test]
fn memory_only_reads_answer_from_memstores_and_the_block_cache_and_refuse_the_rest() {
    // What a gateway relies on to answer in-memory reads on its own thread
    // (basalt::read_tier): a memory-only attempt either returns exactly
    // what a normal read returns, or nothing (and a normal read follows).
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(options(dir.path())).unwrap();
    db.create_table(
        TableDescriptor::new("t")
            .family(ColumnFamilyDescriptor::new("f"))
            .family(ColumnFamilyDescriptor::new("nocache").block_cache(false)),
    )
    .unwrap();
    let table = db.table("t").unwrap();
    for i in 0..100 {
        table
            .put(
                &Put::new(format!("r{i:03}"))
                    .add("f", "q", format!("v{i}"))
                    .add("nocache", "q", format!("n{i}")),
            )
            .unwrap();
    }
    db.flush_table("t").unwrap();
    db.close().unwrap();

    // A fresh process: nothing cached.
    let db = Database::open_with(options(dir.path())).unwrap();
    let table = db.table("t").unwrap();
    let get = Get::new("r042").family("f");
    assert!(
        read_tier::memory_only(|| table.get(&get)).is_none(),
        "a cold block needs the file"
    );
    let normal = table.get(&get).unwrap();
    assert_eq!(normal.cells.len(), 1);
    let warm = read_tier::memory_only(|| table.get(&get)).expect("the block is cached now");
    assert_eq!(warm.unwrap(), normal);

    // A family without a block cache always needs its file.
    let uncached = Get::new("r042").family("nocache");
    assert!(table.get(&uncached).unwrap().cells.len() == 1);
    assert!(read_tier::memory_only(|| table.get(&uncached)).is_none());

    // A row only in the memstore needs no file at all (the files' key
    // ranges rule it out).
    table.put(&Put::new("s000").add("f", "q", "fresh")).unwrap();
    let fresh = read_tier::memory_only(|| table.get(&Get::new("s000").family("f")))
        .expect("memstore rows are in memory")
        .unwrap();
    assert_eq!(&fresh.cells[0].value[..], b"fresh");
    assert!(!read_tier::is_memory_only());
}
