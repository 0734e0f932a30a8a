//! Store-file tests: round trips against `VecSource`, the index, blooms,
//! corruption, the block cache and block-read counts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use proptest::prelude::*;

use basalt_types::{BloomType, Cell, CellType, Compression, DataBlockEncoding, Error};

use super::format::{decode_block, BlockHandle, BlockKind, Trailer, TRAILER_LEN};
use super::index::IndexBlock;
use super::*;
use crate::block_cache::{next_file_id, BlockCache};
use crate::fs::{FaultOp, FaultyFileStore, FileStore, LocalFileStore, MemFileStore};
use crate::source::tests::VecSource;
use crate::source::{first_on_row, last_on_column, CellSource};

const FAMILY: &[u8] = b"cf";

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn value_of(len: usize, seed: u8) -> Bytes {
    // Half pattern, half noise: compressible but not trivially.
    Bytes::from(
        (0..len)
            .map(|i| {
                if i % 2 == 0 {
                    seed.wrapping_add((i / 64) as u8)
                } else {
                    (i as u8).wrapping_mul(31) ^ seed
                }
            })
            .collect::<Vec<u8>>(),
    )
}

fn cell(row: &[u8], q: &[u8], ts: i64, t: CellType, seq: u64, value: Bytes) -> Cell {
    Cell {
        row: Bytes::copy_from_slice(row),
        family: Bytes::from_static(FAMILY),
        qualifier: Bytes::copy_from_slice(q),
        timestamp: ts,
        cell_type: t,
        sequence_id: seq,
        value,
        ttl_millis: None,
    }
}

const TYPES: [CellType; 5] = [
    CellType::Put,
    CellType::Delete,
    CellType::DeleteFamilyVersion,
    CellType::DeleteColumn,
    CellType::DeleteFamily,
];

/// Sorts and drops cells whose keys repeat (a file's keys are unique).
fn normalise(mut cells: Vec<Cell>) -> Vec<Cell> {
    cells.sort_by(|a, b| a.compare_key(b));
    cells.dedup_by(|a, b| a.compare_key(b).is_eq());
    cells
}

/// Random cells: random rows (some arbitrary bytes), qualifiers (some
/// empty), every type, several versions, small and medium values.
fn random_cells(rng: &mut Rng, n: usize) -> Vec<Cell> {
    let mut cells = Vec::with_capacity(n);
    for _ in 0..n {
        let row = if rng.below(4) == 0 {
            let len = rng.below(6) as usize;
            rng.bytes(len)
        } else {
            format!("row{:05}", rng.below(n as u64 / 3 + 1)).into_bytes()
        };
        let q = match rng.below(4) {
            0 => vec![],
            1 => {
                let len = rng.below(4) as usize;
                rng.bytes(len)
            }
            _ => format!("q{}", rng.below(5)).into_bytes(),
        };
        let value = match rng.below(20) {
            0 => value_of(rng.below(10 * 1024) as usize, rng.next() as u8),
            _ => value_of(rng.below(100) as usize, rng.next() as u8),
        };
        cells.push(cell(
            &row,
            &q,
            rng.below(6) as i64,
            TYPES[rng.below(5) as usize],
            rng.below(4),
            value,
        ));
    }
    normalise(cells)
}

fn options(
    compression: Compression,
    encoding: DataBlockEncoding,
    bloom: BloomType,
    block_size: usize,
) -> WriterOptions {
    WriterOptions {
        compression,
        encoding,
        bloom,
        block_size,
        expected_cells: 0,
        created_at_ms: 1_700_000_000_000,
        ..WriterOptions::new(Bytes::from_static(FAMILY))
    }
}

fn write(
    store: &Arc<dyn FileStore>,
    path: &Path,
    cells: &[Cell],
    opts: WriterOptions,
) -> StoreFileMeta {
    let mut w = StoreFileWriter::new(Arc::clone(store), path, opts).unwrap();
    for c in cells {
        w.add(c).unwrap();
    }
    w.finish().unwrap()
}

fn open(store: &Arc<dyn FileStore>, path: &Path) -> Arc<StoreFileReader> {
    StoreFileReader::open(Arc::clone(store), path, next_file_id(), None).unwrap()
}

/// A reader of the file at `path` whose blocks go through `cache`.
fn open_cached(
    store: &Arc<dyn FileStore>,
    path: &Path,
    cache: &Arc<BlockCache>,
) -> Arc<StoreFileReader> {
    StoreFileReader::open(
        Arc::clone(store),
        path,
        next_file_id(),
        Some(Arc::clone(cache)),
    )
    .unwrap()
}

fn drain(s: &mut dyn CellSource) -> basalt_types::Result<Vec<Cell>> {
    let mut out = vec![];
    while let Some(c) = s.peek() {
        out.push(c.clone());
        s.advance()?;
    }
    Ok(out)
}

fn scan_all(reader: &Arc<StoreFileReader>) -> basalt_types::Result<Vec<Cell>> {
    let mut s = reader.source();
    s.seek(&first_on_row(b""))?;
    drain(&mut s)
}

/// Keys around the file's cells: the cells themselves, neighbours in every
/// component, row and column boundaries, other families, unknown rows.
fn seek_targets(rng: &mut Rng, cells: &[Cell], n: usize) -> Vec<Cell> {
    let mut out = vec![
        first_on_row(b""),
        first_on_row(b"\xff\xff\xff\xff\xff\xff\xff"),
    ];
    for _ in 0..n {
        let base = if cells.is_empty() {
            cell(b"r", b"q", 1, CellType::Put, 0, Bytes::new())
        } else {
            cells[rng.below(cells.len() as u64) as usize].clone()
        };
        let mut k = Cell {
            value: Bytes::new(),
            ..base
        };
        match rng.below(9) {
            0 => {}
            1 => k.timestamp += 1,
            2 => k.timestamp -= 1,
            3 => k = first_on_row(&k.row),
            4 => k = last_on_column(&k.row, &k.family, &k.qualifier),
            5 => {
                let mut q = k.qualifier.to_vec();
                q.push(0);
                k.qualifier = Bytes::from(q);
            }
            6 => k.family = Bytes::from_static(if rng.below(2) == 0 { b"a" } else { b"z" }),
            7 => {
                let mut r = k.row.to_vec();
                r.push(rng.next() as u8);
                k = first_on_row(&r);
            }
            _ => {
                k.sequence_id = k.sequence_id.wrapping_add(1);
            }
        }
        out.push(k);
    }
    out
}

fn row_targets(rng: &mut Rng, cells: &[Cell], n: usize) -> Vec<Option<Vec<u8>>> {
    let mut out = vec![None, Some(vec![]), Some(vec![0xff; 8])];
    for _ in 0..n {
        let mut r = if cells.is_empty() {
            b"x".to_vec()
        } else {
            cells[rng.below(cells.len() as u64) as usize].row.to_vec()
        };
        match rng.below(3) {
            0 => {}
            1 => r.push(0),
            _ => {
                let len = rng.below(5) as usize;
                r = rng.bytes(len);
            }
        }
        out.push(Some(r));
    }
    out
}

fn peek_n(s: &mut dyn CellSource, n: usize) -> Vec<Cell> {
    let mut out = vec![];
    for _ in 0..n {
        match s.peek() {
            Some(c) => out.push(c.clone()),
            None => break,
        }
        s.advance().unwrap();
    }
    out
}

/// Checks a file against the model: full scan, seeks, seek_before_row and
/// bloom answers for present keys.
fn check_against_model(reader: &Arc<StoreFileReader>, cells: &[Cell], seed: u64) {
    assert_eq!(scan_all(reader).unwrap(), cells);
    let mut rng = Rng(seed | 1);
    let mut file = reader.source();
    let mut model = VecSource::new(cells.to_vec());
    for target in seek_targets(&mut rng, cells, 60) {
        file.seek(&target).unwrap();
        model.seek(&target).unwrap();
        let steps = 1 + rng.below(5) as usize;
        assert_eq!(
            peek_n(&mut file, steps),
            peek_n(&mut model, steps),
            "seek to {target:?}"
        );
    }
    for row in row_targets(&mut rng, cells, 40) {
        file.seek_before_row(row.as_deref()).unwrap();
        model.seek_before_row(row.as_deref()).unwrap();
        assert_eq!(
            peek_n(&mut file, 3),
            peek_n(&mut model, 3),
            "seek_before_row {row:?}"
        );
    }
    // Walking the whole file backwards row by row visits every row.
    let mut rows_back = vec![];
    let mut next: Option<Vec<u8>> = None;
    loop {
        file.seek_before_row(next.as_deref()).unwrap();
        let Some(c) = file.peek() else { break };
        rows_back.push(c.row.to_vec());
        next = Some(c.row.to_vec());
    }
    let mut rows: Vec<Vec<u8>> = cells.iter().map(|c| c.row.to_vec()).collect();
    rows.dedup();
    rows.reverse();
    assert_eq!(rows_back, rows);
    for c in cells {
        assert!(reader.may_contain_row(&c.row).unwrap(), "{c:?}");
        assert!(
            reader.may_contain_column(&c.row, &c.qualifier).unwrap(),
            "{c:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------

fn arb_cell() -> impl Strategy<Value = Cell> {
    let row = prop_oneof![
        3 => "[a-e]{1,3}".prop_map(|s| s.into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..6),
    ];
    let qualifier = prop_oneof![
        1 => Just(vec![]),
        2 => "[xy]{0,2}".prop_map(|s| s.into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..4),
    ];
    let value = prop_oneof![
        40 => (0usize..64, any::<u8>()),
        8 => (0usize..10 * 1024, any::<u8>()),
        1 => (Just(1usize << 20), any::<u8>()),
    ];
    (row, qualifier, 0i64..4, 0usize..5, 0u64..3, value).prop_map(
        |(r, q, ts, t, seq, (len, seed))| cell(&r, &q, ts, TYPES[t], seq, value_of(len, seed)),
    )
}

fn arb_compression() -> impl Strategy<Value = Compression> {
    proptest::sample::select(Compression::ALL.to_vec())
}

fn arb_encoding() -> impl Strategy<Value = DataBlockEncoding> {
    proptest::sample::select(DataBlockEncoding::ALL.to_vec())
}

fn arb_bloom() -> impl Strategy<Value = BloomType> {
    proptest::sample::select(BloomType::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn round_trip_matches_the_model(
        cells in proptest::collection::vec(arb_cell(), 0..250),
        compression in arb_compression(),
        encoding in arb_encoding(),
        bloom in arb_bloom(),
        block_size in prop_oneof![Just(64usize), Just(700), Just(4096), Just(65536)],
        index_block_size in prop_oneof![Just(64usize), Just(65536)],
        seed in any::<u64>(),
    ) {
        let cells = normalise(cells);
        let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
        let path = Path::new("/t/f1");
        let mut opts = options(compression, encoding, bloom, block_size);
        opts.index_block_size = index_block_size;
        let meta = write(&store, path, &cells, opts);
        prop_assert_eq!(meta.cell_count, cells.len() as u64);
        let reader = open(&store, path);
        prop_assert_eq!(reader.meta(), &meta);
        check_against_model(&reader, &cells, seed);
    }
}

#[test]
fn every_compression_encoding_and_bloom_round_trips() {
    let mut rng = Rng(42);
    let mut cells = random_cells(&mut rng, 1500);
    // Huge values: a block never splits a cell, so each makes its own block.
    cells.push(cell(
        b"row99998",
        b"big",
        7,
        CellType::Put,
        1,
        value_of(1 << 20, 3),
    ));
    cells.push(cell(
        b"row99999",
        b"",
        7,
        CellType::Put,
        1,
        value_of(3 << 20, 9),
    ));
    let cells = normalise(cells);
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let mut n = 0;
    for &compression in Compression::ALL {
        for &encoding in DataBlockEncoding::ALL {
            for &bloom in BloomType::ALL {
                n += 1;
                let path = PathBuf::from(format!("/t/{compression}-{encoding}-{bloom}"));
                let meta = write(
                    &store,
                    &path,
                    &cells,
                    options(compression, encoding, bloom, 4096),
                );
                assert_eq!(meta.compression, compression);
                assert_eq!(meta.encoding, encoding);
                assert_eq!(meta.bloom, bloom);
                assert!(meta.data_block_count > 10);
                let cache = Arc::new(BlockCache::new(8 << 20));
                let reader =
                    StoreFileReader::open(Arc::clone(&store), &path, next_file_id(), Some(cache))
                        .unwrap();
                check_against_model(&reader, &cells, n);
            }
        }
    }
    assert_eq!(n, 75);
}

#[test]
fn compression_and_encoding_shrink_files() {
    let mut rng = Rng(5);
    let cells: Vec<Cell> = normalise(
        (0..5000)
            .map(|i| {
                cell(
                    format!("user{:08}", i / 4).as_bytes(),
                    format!("column-{}", i % 4).as_bytes(),
                    1_700_000_000_000 + rng.below(1000) as i64,
                    CellType::Put,
                    i,
                    Bytes::from(format!("some fairly repetitive value number {}", i % 50)),
                )
            })
            .collect(),
    );
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let size = |name: &str, c, e| {
        write(
            &store,
            Path::new(name),
            &cells,
            options(c, e, BloomType::Row, 65536),
        )
        .file_size
    };
    let plain = size("/s/plain", Compression::None, DataBlockEncoding::None);
    let prefix = size("/s/prefix", Compression::None, DataBlockEncoding::Prefix);
    let zstd = size("/s/zstd", Compression::Zstd, DataBlockEncoding::None);
    assert!(prefix < plain * 9 / 10, "prefix {prefix} vs plain {plain}");
    assert!(zstd < plain / 3, "zstd {zstd} vs plain {plain}");
    for &c in Compression::ALL {
        let s = size(&format!("/s/{c}"), c, DataBlockEncoding::FastDiff);
        assert!(s <= prefix, "{c}: {s} > {prefix}");
    }
}

#[test]
fn empty_files_read_as_empty() {
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let path = Path::new("/t/empty");
    let meta = write(
        &store,
        path,
        &[],
        options(
            Compression::Zstd,
            DataBlockEncoding::Prefix,
            BloomType::Row,
            4096,
        ),
    );
    assert_eq!(meta.cell_count, 0);
    assert!(meta.first_key.is_none());
    let reader = open(&store, path);
    assert!(scan_all(&reader).unwrap().is_empty());
    assert!(!reader.may_contain_row(b"x").unwrap());
    assert!(reader.key_range().is_none());
    assert!(reader.time_range().is_none());
    let mut s = reader.source();
    s.seek_before_row(None).unwrap();
    assert!(s.peek().is_none());
}

#[test]
fn metadata_records_what_the_file_holds() {
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let path = Path::new("/t/meta");
    let cells = normalise(vec![
        cell(b"a", b"", 50, CellType::DeleteFamily, 9, Bytes::new()),
        cell(b"a", b"q", 40, CellType::Put, 3, Bytes::from_static(b"v")),
        cell(b"b", b"q", 10, CellType::DeleteColumn, 4, Bytes::new()),
        cell(b"c", b"q", 20, CellType::Put, 5, Bytes::from_static(b"v")),
    ]);
    let mut opts = options(
        Compression::Gz,
        DataBlockEncoding::Diff,
        BloomType::RowCol,
        4096,
    );
    opts.properties
        .insert("origin".into(), Bytes::from_static(b"flush"));
    let mut w = StoreFileWriter::new(Arc::clone(&store), path, opts).unwrap();
    for c in &cells {
        w.add(c).unwrap();
    }
    w.set_property("compaction", Bytes::from_static(b"major"));
    let meta = w.finish().unwrap();
    let reader = open(&store, path);
    let m = reader.meta();
    assert_eq!(m, &meta);
    assert_eq!(m.family, FAMILY);
    assert_eq!(m.cell_count, 4);
    assert_eq!(m.type_counts.puts, 2);
    assert_eq!(m.type_counts.delete_families, 1);
    assert_eq!(m.type_counts.delete_columns, 1);
    assert_eq!(m.type_counts.delete_markers(), 2);
    assert_eq!((m.min_timestamp, m.max_timestamp), (10, 50));
    // Markers aside: the put at 20 is the oldest put.
    assert_eq!(m.earliest_put_timestamp, Some(20));
    assert_eq!((m.min_sequence_id, m.max_sequence_id), (3, 9));
    assert_eq!(m.first_key.as_ref().unwrap().row, "a");
    assert_eq!(m.last_key.as_ref().unwrap().row, "c");
    assert_eq!(m.bloom_key_count, 4);
    assert_eq!(m.created_at_ms, 1_700_000_000_000);
    assert_eq!(m.properties["origin"], "flush");
    assert_eq!(m.properties["compaction"], "major");
    assert_eq!(m.file_size, store.size(path).unwrap());
    assert!(reader.overlaps_rows(b"b", b"c"));
    assert!(!reader.overlaps_rows(b"d", b""));
    assert!(!reader.overlaps_rows(b"", b"a"));
    let tr = |a, b| basalt_types::TimeRange::new(a, b).unwrap();
    assert!(reader.overlaps_time_range(&tr(50, 60)));
    assert!(!reader.overlaps_time_range(&tr(51, 60)));
    assert!(!reader.overlaps_time_range(&tr(0, 10)));
    // A ROWCOL lookup of another column of row "a" must still see the
    // row's DeleteFamily marker.
    assert!(reader.may_contain_column(b"a", b"other").unwrap());
}

#[test]
fn writer_rejects_out_of_order_and_foreign_cells() {
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let path = Path::new("/t/order");
    let mut w = StoreFileWriter::new(
        Arc::clone(&store),
        path,
        options(
            Compression::None,
            DataBlockEncoding::None,
            BloomType::Row,
            4096,
        ),
    )
    .unwrap();
    let a = cell(b"b", b"q", 5, CellType::Put, 2, Bytes::new());
    w.add(&a).unwrap();
    let invalid = |r: basalt_types::Result<()>| matches!(r, Err(Error::InvalidArgument(_)));
    assert!(invalid(w.add(&a)), "duplicate key");
    assert!(invalid(w.add(&cell(
        b"a",
        b"q",
        5,
        CellType::Put,
        2,
        Bytes::new()
    ))));
    assert!(
        invalid(w.add(&cell(b"b", b"q", 6, CellType::Put, 2, Bytes::new()))),
        "newer version after older"
    );
    assert!(
        invalid(w.add(&cell(b"b", b"q", 5, CellType::Put, 3, Bytes::new()))),
        "higher sequence after lower"
    );
    let mut other = cell(b"c", b"q", 5, CellType::Put, 2, Bytes::new());
    other.family = Bytes::from_static(b"other");
    assert!(invalid(w.add(&other)));
    // The writer is still usable after refusing a cell.
    w.add(&cell(b"b", b"q", 5, CellType::Put, 1, Bytes::new()))
        .unwrap();
    w.add(&cell(b"c", b"q", 5, CellType::Put, 1, Bytes::new()))
        .unwrap();
    assert_eq!(w.finish().unwrap().cell_count, 3);
    assert!(
        StoreFileWriter::new(
            Arc::clone(&store),
            path,
            options(
                Compression::None,
                DataBlockEncoding::None,
                BloomType::Row,
                4096
            )
        )
        .is_err(),
        "files are never overwritten"
    );
}

#[test]
fn blocks_end_at_row_boundaries_unless_a_row_is_wide() {
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    // Narrow rows: every block ends where a row ends.
    let narrow = many_rows(3000, 3);
    let path = Path::new("/t/narrow");
    let meta = write(
        &store,
        path,
        &narrow,
        options(
            Compression::None,
            DataBlockEncoding::None,
            BloomType::None,
            1024,
        ),
    );
    let reader = open(&store, path);
    let mut s = reader.source();
    s.seek(&first_on_row(b"")).unwrap();
    let mut prev: Option<Cell> = None;
    while let Some(c) = s.peek().cloned() {
        let loaded = s.blocks_read();
        s.advance().unwrap();
        if s.blocks_read() != loaded {
            assert_ne!(s.peek().unwrap().row, c.row, "row {:?} spans blocks", c.row);
        }
        prev = Some(c);
    }
    assert!(prev.is_some() && meta.data_block_count > 100);
    // One wide row: cut mid-row, each block at most about twice BLOCKSIZE.
    let wide: Vec<Cell> = (0..2000u32)
        .map(|i| {
            cell(
                b"wide",
                format!("q{i:06}").as_bytes(),
                1,
                CellType::Put,
                1,
                value_of(100, 1),
            )
        })
        .collect();
    let path = Path::new("/t/wide");
    let meta = write(
        &store,
        path,
        &wide,
        options(
            Compression::None,
            DataBlockEncoding::None,
            BloomType::Row,
            4096,
        ),
    );
    assert!(meta.data_block_count >= 20, "{}", meta.data_block_count);
    assert!(meta.uncompressed_data_bytes / meta.data_block_count <= 2 * 4096 + 200);
    check_against_model(&open(&store, path), &wide, 3);
}

#[test]
fn two_level_index_with_tiny_blocks() {
    let mut rng = Rng(7);
    let cells = random_cells(&mut rng, 20_000);
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let path = Path::new("/t/two-level");
    let mut opts = options(
        Compression::Lz4,
        DataBlockEncoding::Prefix,
        BloomType::RowCol,
        256,
    );
    opts.index_block_size = 512;
    let meta = write(&store, path, &cells, opts);
    let reader = open(&store, path);
    assert_eq!(reader.index_levels(), 2);
    assert!(meta.data_block_count > 1000, "{}", meta.data_block_count);
    check_against_model(&reader, &cells, 11);
    assert!(reader.stats().index_blocks_read > 0);
    // The same cells with a large index block stay at one level.
    let path1 = Path::new("/t/one-level");
    let mut opts = options(
        Compression::Lz4,
        DataBlockEncoding::Prefix,
        BloomType::RowCol,
        256,
    );
    opts.index_block_size = 64 << 20;
    write(&store, path1, &cells, opts);
    assert_eq!(open(&store, path1).index_levels(), 1);
}

#[test]
fn split_candidates_of_a_file_with_few_leaves_come_from_the_leaves() {
    // A root naming only a few leaves names the ends of huge spans (the
    // last is the file's last row): the middle of those rows is far from
    // the middle of the data, and a region split there leaves one daughter
    // almost empty. The candidates must come from the leaves.
    let mut rng = Rng(11);
    let cells = normalise(random_cells(&mut rng, 20_000));
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let path = Path::new("/t/few-leaves");
    let mut opts = options(
        Compression::None,
        DataBlockEncoding::None,
        BloomType::None,
        256,
    );
    opts.index_block_size = 32 << 10;
    write(&store, path, &cells, opts);
    let reader = open(&store, path);
    assert_eq!(reader.index_levels(), 2);
    let mut rows: Vec<Bytes> = cells.iter().map(|c| c.row.clone()).collect();
    rows.dedup();
    let candidates = reader.index_rows().unwrap();
    assert!(candidates.len() > 100, "{} candidates", candidates.len());
    let middle = &candidates[candidates.len() / 2];
    let position = rows.partition_point(|r| r < middle);
    let share = position as f64 / rows.len() as f64;
    assert!(
        (0.4..=0.6).contains(&share),
        "the middle candidate is at {share:.2} of the rows"
    );
}

#[test]
fn files_work_on_local_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn FileStore> = Arc::new(LocalFileStore::new());
    let path = dir.path().join("region/cf/0001.sf");
    let mut rng = Rng(3);
    let cells = random_cells(&mut rng, 3000);
    let meta = write(
        &store,
        &path,
        &cells,
        options(
            Compression::Snappy,
            DataBlockEncoding::FastDiff,
            BloomType::Row,
            4096,
        ),
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), meta.file_size);
    // A fresh store instance (as after a restart) reads it back.
    let store2: Arc<dyn FileStore> = Arc::new(LocalFileStore::new());
    let reader = open(&store2, &path);
    check_against_model(&reader, &cells, 5);
    assert_eq!(
        store2.list(&dir.path().join("region/cf")).unwrap(),
        vec![path]
    );
}

// ---------------------------------------------------------------------------
// Blooms
// ---------------------------------------------------------------------------

#[test]
fn bloom_has_no_false_negatives_and_about_one_percent_false_positives() {
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    // Present rows are the even numbers, absent ones the odd numbers in
    // between, so the key range never answers for the bloom.
    let n = 60_000u64;
    let row = |i: u64| format!("row{:010}", i).into_bytes();
    let cells: Vec<Cell> = (0..n)
        .flat_map(|i| {
            [b"a", b"b"].map(|q| {
                cell(
                    &row(2 * i),
                    q,
                    1,
                    CellType::Put,
                    1,
                    Bytes::from_static(b"v"),
                )
            })
        })
        .collect();
    for bloom in [BloomType::Row, BloomType::RowCol] {
        let path = PathBuf::from(format!("/b/{bloom}"));
        let meta = write(
            &store,
            &path,
            &cells,
            options(Compression::None, DataBlockEncoding::None, bloom, 65536),
        );
        let keys = if bloom == BloomType::Row { n } else { 2 * n };
        assert_eq!(meta.bloom_key_count, keys);
        let reader = open(&store, &path);
        for i in 0..n {
            assert!(reader.may_contain_row(&row(2 * i)).unwrap());
            assert!(reader.may_contain_column(&row(2 * i), b"a").unwrap());
            assert!(reader.may_contain_column(&row(2 * i), b"b").unwrap());
        }
        let mut fp = 0;
        for i in 0..n - 1 {
            let hit = match bloom {
                BloomType::Row => reader.may_contain_row(&row(2 * i + 1)).unwrap(),
                _ => reader.may_contain_column(&row(2 * i), b"c").unwrap(),
            };
            fp += u64::from(hit);
        }
        let rate = fp as f64 / (n - 1) as f64;
        eprintln!(
            "{bloom} bloom: {keys} keys, false positive rate {:.3}%",
            rate * 100.0
        );
        assert!(rate < 0.02, "{bloom}: false positive rate {rate}");
        assert!(
            rate > 0.002,
            "{bloom}: suspiciously low rate {rate}: is the bloom sized right?"
        );
        assert!(reader.stats().bloom_blocks_read > 0);
    }
}

// ---------------------------------------------------------------------------
// Corruption
// ---------------------------------------------------------------------------

/// Every block of a file, by kind, found through the file's own structures.
fn block_map(data: &Bytes) -> Vec<(BlockKind, BlockHandle)> {
    let data_end = (data.len() - TRAILER_LEN) as u64;
    let t = Trailer::decode(&data[data_end as usize..], data_end).unwrap();
    let block = |h: BlockHandle, kind| {
        let raw = data.slice(h.offset as usize..(h.offset + u64::from(h.size)) as usize);
        decode_block(&raw, h, kind).unwrap()
    };
    let handles = |payload: Bytes| {
        let ix = IndexBlock::new(payload).unwrap();
        (0..ix.len())
            .map(|i| ix.entry(i).unwrap().handle)
            .collect::<Vec<_>>()
    };
    let mut out = vec![
        (BlockKind::Meta, t.meta),
        (BlockKind::RootIndex, t.root_index),
    ];
    let root = handles(block(t.root_index, BlockKind::RootIndex));
    if t.index_levels == 2 {
        for leaf in root {
            out.push((BlockKind::LeafIndex, leaf));
            for d in handles(block(leaf, BlockKind::LeafIndex)) {
                out.push((BlockKind::Data, d));
            }
        }
    } else {
        out.extend(root.into_iter().map(|d| (BlockKind::Data, d)));
    }
    if t.bloom_index.size > 0 {
        out.push((BlockKind::BloomIndex, t.bloom_index));
        for c in handles(block(t.bloom_index, BlockKind::BloomIndex)) {
            out.push((BlockKind::Bloom, c));
        }
    }
    out
}

/// Opens, scans and asks the bloom about every row; the first error, or
/// the cells when everything succeeded.
fn read_everything(
    store: &Arc<dyn FileStore>,
    path: &Path,
    rows: &[Bytes],
) -> basalt_types::Result<Vec<Cell>> {
    let reader = StoreFileReader::open(Arc::clone(store), path, next_file_id(), None)?;
    let cells = scan_all(&reader)?;
    for r in rows {
        reader.may_contain_row(r)?;
    }
    let mut s = reader.source();
    s.seek_before_row(None)?;
    Ok(cells)
}

fn assert_corruption(
    r: basalt_types::Result<Vec<Cell>>,
    path: &Path,
    offset: Option<u64>,
    what: &str,
) {
    match r {
        Err(Error::Corruption {
            path: p,
            offset: o,
            message,
        }) => {
            assert_eq!(p, path, "{what}: {message}");
            if let Some(offset) = offset {
                assert_eq!(o, offset, "{what}: {message}");
            }
        }
        other => panic!("{what}: expected corruption, got {other:?}"),
    }
}

fn corruption_fixture() -> (
    Arc<MemFileStore>,
    Arc<dyn FileStore>,
    PathBuf,
    Vec<Cell>,
    Bytes,
) {
    let mem = Arc::new(MemFileStore::new());
    let store: Arc<dyn FileStore> = mem.clone();
    let path = PathBuf::from("/c/file");
    let mut rng = Rng(99);
    let cells = random_cells(&mut rng, 400);
    let mut opts = options(
        Compression::Lz4,
        DataBlockEncoding::Prefix,
        BloomType::Row,
        512,
    );
    opts.index_block_size = 256;
    write(&store, &path, &cells, opts);
    let data = store.read_all(&path).unwrap();
    (mem, store, path, cells, data)
}

#[test]
fn a_damaged_block_of_each_kind_is_reported_with_its_offset() {
    let (mem, store, path, cells, data) = corruption_fixture();
    let rows: Vec<Bytes> = cells.iter().map(|c| c.row.clone()).collect();
    assert_eq!(read_everything(&store, &path, &rows).unwrap(), cells);
    let map = block_map(&data);
    for kind in [
        BlockKind::Data,
        BlockKind::LeafIndex,
        BlockKind::RootIndex,
        BlockKind::Bloom,
        BlockKind::BloomIndex,
        BlockKind::Meta,
    ] {
        let blocks: Vec<_> = map.iter().filter(|(k, _)| *k == kind).collect();
        assert!(!blocks.is_empty(), "fixture has no {} block", kind.name());
        for &&(_, h) in blocks.iter().take(5) {
            for at in [
                h.offset,
                h.offset + u64::from(h.size) / 2,
                h.offset + u64::from(h.size) - 1,
            ] {
                let mut bad = data.to_vec();
                bad[at as usize] ^= 0x04;
                mem.set_contents(&path, Bytes::from(bad));
                assert_corruption(
                    read_everything(&store, &path, &rows),
                    &path,
                    Some(h.offset),
                    &format!("{} block at {} (byte {at})", kind.name(), h.offset),
                );
            }
        }
    }
    let trailer_at = (data.len() - TRAILER_LEN) as u64;
    for i in 0..TRAILER_LEN {
        let mut bad = data.to_vec();
        bad[trailer_at as usize + i] ^= 0x40;
        mem.set_contents(&path, Bytes::from(bad));
        assert_corruption(
            read_everything(&store, &path, &rows),
            &path,
            Some(trailer_at),
            "trailer",
        );
    }
}

#[test]
fn every_single_byte_flip_is_detected() {
    let (mem, store, path, cells, data) = corruption_fixture();
    let rows: Vec<Bytes> = cells.iter().map(|c| c.row.clone()).collect();
    for i in 0..data.len() {
        let mut bad = data.to_vec();
        bad[i] ^= 1 << (i % 8);
        mem.set_contents(&path, Bytes::from(bad));
        assert_corruption(
            read_everything(&store, &path, &rows),
            &path,
            None,
            &format!("byte {i}"),
        );
    }
}

#[test]
fn truncated_and_garbage_files_are_corruption() {
    let (mem, store, path, cells, data) = corruption_fixture();
    let rows: Vec<Bytes> = cells.iter().map(|c| c.row.clone()).collect();
    for len in [
        0,
        1,
        8,
        TRAILER_LEN - 1,
        TRAILER_LEN,
        100,
        data.len() / 2,
        data.len() - 1,
    ] {
        mem.set_contents(&path, data.slice(..len));
        assert_corruption(
            read_everything(&store, &path, &rows),
            &path,
            None,
            &format!("truncated to {len}"),
        );
    }
    // Extra bytes after a valid file hide the trailer too.
    let mut longer = data.to_vec();
    longer.extend_from_slice(&[0; 10]);
    mem.set_contents(&path, Bytes::from(longer));
    assert_corruption(
        read_everything(&store, &path, &rows),
        &path,
        None,
        "appended bytes",
    );
    let mut rng = Rng(1234);
    for len in [10usize, 64, 65, 1000, 70_000, 200_000] {
        for with_magic in [false, true] {
            let mut garbage = rng.bytes(len);
            if with_magic && len >= 8 {
                garbage[len - 8..].copy_from_slice(&super::format::MAGIC);
            }
            mem.set_contents(&path, Bytes::from(garbage));
            assert_corruption(
                read_everything(&store, &path, &rows),
                &path,
                None,
                &format!("garbage of {len}"),
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Block cache and block counts
// ---------------------------------------------------------------------------

fn many_rows(rows: u64, cells_per_row: u64) -> Vec<Cell> {
    let mut cells = vec![];
    for r in 0..rows {
        for q in 0..cells_per_row {
            cells.push(cell(
                format!("row{r:08}").as_bytes(),
                format!("col{q}").as_bytes(),
                100,
                CellType::Put,
                r,
                value_of(40, r as u8),
            ));
        }
    }
    cells
}

#[test]
fn block_cache_serves_rereads_and_honours_blockcache_false() {
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let path = Path::new("/k/file");
    let cells = many_rows(2000, 3);
    write(
        &store,
        path,
        &cells,
        options(
            Compression::Zstd,
            DataBlockEncoding::Prefix,
            BloomType::Row,
            4096,
        ),
    );
    let cache = Arc::new(BlockCache::new(64 << 20));
    let reader = open_cached(&store, path, &cache);
    let blocks = reader.meta().data_block_count;
    assert_eq!(scan_all(&reader).unwrap(), cells);
    assert_eq!(reader.stats().data_blocks_from_file, blocks);
    assert_eq!(scan_all(&reader).unwrap(), cells);
    let s = reader.stats();
    assert_eq!(s.data_blocks_read, 2 * blocks);
    assert_eq!(
        s.data_blocks_from_file, blocks,
        "second scan served from the cache"
    );
    assert!(cache.stats().hits >= blocks);

    // BLOCKCACHE=false: data blocks bypass the cache (bloom chunks do not).
    let cache2 = Arc::new(BlockCache::new(64 << 20));
    let no_cache = StoreFileReader::open_with(
        Arc::clone(&store),
        path,
        next_file_id(),
        Some(Arc::clone(&cache2)),
        ReaderOptions {
            cache_data_blocks: false,
            in_memory: false,
        },
    )
    .unwrap();
    scan_all(&no_cache).unwrap();
    scan_all(&no_cache).unwrap();
    assert_eq!(no_cache.stats().data_blocks_from_file, 2 * blocks);
    assert!(no_cache.may_contain_row(b"row00000005").unwrap());
    assert_eq!(cache2.stats().inserts, 1, "only the bloom chunk was cached");
    // The option can change while the file is open (ALTER).
    no_cache.set_cache_options(ReaderOptions::default());
    scan_all(&no_cache).unwrap();
    scan_all(&no_cache).unwrap();
    assert_eq!(no_cache.stats().data_blocks_from_file, 3 * blocks);
    assert_eq!(reader.evict_cached_blocks() as u64, blocks);
}

#[test]
fn a_source_that_does_not_fill_the_cache_reads_cached_blocks_and_adds_none() {
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let path = Path::new("/k/compaction-input");
    let cells = many_rows(2000, 3);
    let mut opts = options(
        Compression::None,
        DataBlockEncoding::None,
        BloomType::None,
        4096,
    );
    // One index level: the cache then holds data blocks only, which is
    // what this test counts.
    opts.index_block_size = 64 << 10;
    write(&store, path, &cells, opts);
    let cache = Arc::new(BlockCache::new(64 << 20));
    let reader = open_cached(&store, path, &cache);
    let blocks = reader.meta().data_block_count;
    assert!(blocks > 4);

    // A compaction-like pass: every block read from the file, none cached.
    let mut pass = reader.source();
    pass.set_fill_cache(false);
    pass.seek(&first_on_row(b"")).unwrap();
    assert_eq!(drain(&mut pass).unwrap(), cells);
    assert_eq!(reader.stats().data_blocks_from_file, blocks);
    assert_eq!(cache.stats().blocks, 0, "no data block was cached");

    // Blocks a reader cached are still taken from the cache.
    scan_all(&reader).unwrap();
    assert_eq!(cache.stats().blocks, blocks);
    let from_file = reader.stats().data_blocks_from_file;
    let mut pass = reader.source();
    pass.set_fill_cache(false);
    pass.seek(&first_on_row(b"")).unwrap();
    assert_eq!(drain(&mut pass).unwrap(), cells);
    assert_eq!(reader.stats().data_blocks_from_file, from_file);
}

#[test]
fn index_and_bloom_blocks_survive_a_scan_of_other_data() {
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    // A file with a two-level index and a bloom filter: a point read
    // touches a bloom chunk, a leaf index block and a data block.
    let mut rng = Rng(11);
    let cells = random_cells(&mut rng, 20_000);
    let indexed = Path::new("/k/indexed");
    let mut opts = options(
        Compression::None,
        DataBlockEncoding::None,
        BloomType::Row,
        256,
    );
    opts.index_block_size = 512;
    write(&store, indexed, &cells, opts);
    // Another file whose scan alone is several times the cache.
    let other = Path::new("/k/other");
    let bulk = many_rows(20_000, 3);
    write(
        &store,
        other,
        &bulk,
        options(
            Compression::None,
            DataBlockEncoding::None,
            BloomType::None,
            4096,
        ),
    );
    let cache = Arc::new(BlockCache::new(256 << 10));
    let reader = open_cached(&store, indexed, &cache);
    assert_eq!(reader.index_levels(), 2);
    let scanner = open_cached(&store, other, &cache);
    let row = cells[cells.len() / 2].row.clone();
    let point_read = |reader: &Arc<StoreFileReader>| {
        assert!(reader.may_contain_row(&row).unwrap());
        let mut s = reader.source();
        s.seek(&first_on_row(&row)).unwrap();
        assert_eq!(s.peek().map(|c| c.row.clone()), Some(row.clone()));
    };
    point_read(&reader);
    scan_all(&scanner).unwrap();
    assert!(cache.stats().evictions > 0, "the scan overflowed the cache");
    // Only the data block was pushed out: the second read misses once.
    let misses = cache.stats().misses;
    point_read(&reader);
    assert_eq!(cache.stats().misses - misses, 1);
}

#[test]
fn in_memory_family_blocks_survive_other_traffic() {
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let hot = Path::new("/k/hot");
    let cold = Path::new("/k/cold");
    write(
        &store,
        hot,
        &many_rows(200, 2),
        options(
            Compression::None,
            DataBlockEncoding::None,
            BloomType::None,
            4096,
        ),
    );
    write(
        &store,
        cold,
        &many_rows(20_000, 2),
        options(
            Compression::None,
            DataBlockEncoding::None,
            BloomType::None,
            4096,
        ),
    );
    let cache = Arc::new(BlockCache::new(1 << 20));
    let hot_reader = StoreFileReader::open_with(
        Arc::clone(&store),
        hot,
        next_file_id(),
        Some(Arc::clone(&cache)),
        ReaderOptions {
            cache_data_blocks: true,
            in_memory: true,
        },
    )
    .unwrap();
    let cold_reader = open_cached(&store, cold, &cache);
    scan_all(&hot_reader).unwrap();
    for _ in 0..2 {
        scan_all(&cold_reader).unwrap();
    }
    assert!(cache.stats().evictions > 0);
    let before = hot_reader.stats().data_blocks_from_file;
    scan_all(&hot_reader).unwrap();
    assert_eq!(
        hot_reader.stats().data_blocks_from_file,
        before,
        "in-memory blocks stayed cached"
    );
}

#[test]
fn concurrent_sources_share_a_reader_and_cache() {
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let path = Path::new("/k/shared");
    let mut rng = Rng(77);
    let cells = random_cells(&mut rng, 5000);
    write(
        &store,
        path,
        &cells,
        options(
            Compression::Snappy,
            DataBlockEncoding::Prefix,
            BloomType::Row,
            1024,
        ),
    );
    let cache = Arc::new(BlockCache::new(256 << 10));
    let reader = open_cached(&store, path, &cache);
    let cells = Arc::new(cells);
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let reader = Arc::clone(&reader);
            let cells = Arc::clone(&cells);
            std::thread::spawn(move || {
                let mut rng = Rng(t + 1);
                let mut file = reader.source();
                let mut model = VecSource::new(cells.to_vec());
                for target in seek_targets(&mut rng, &cells, 400) {
                    file.seek(&target).unwrap();
                    model.seek(&target).unwrap();
                    assert_eq!(peek_n(&mut file, 3), peek_n(&mut model, 3));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = cache.stats();
    assert!(s.hits > 0 && s.bytes <= s.capacity);
}

#[test]
fn a_point_lookup_reads_one_data_block() {
    let store: Arc<dyn FileStore> = Arc::new(MemFileStore::new());
    let path = Path::new("/k/points");
    let per_row = 4;
    let cells = many_rows(5000, per_row);
    let meta = write(
        &store,
        path,
        &cells,
        options(
            Compression::Lz4,
            DataBlockEncoding::Prefix,
            BloomType::Row,
            4096,
        ),
    );
    assert!(meta.data_block_count > 100);
    // A cold reader (no cache): every block a lookup touches is read from the file.
    let reader = StoreFileReader::open(Arc::clone(&store), path, next_file_id(), None).unwrap();
    let before = reader.stats();
    let mut one_block = 0;
    let mut total_with_terminator = 0;
    for r in (0..5000).step_by(7) {
        let row = format!("row{r:08}");
        assert!(reader.may_contain_row(row.as_bytes()).unwrap());
        let mut s = reader.source();
        s.seek(&first_on_row(row.as_bytes())).unwrap();
        // Read the row's cells, stopping at its last one.
        for i in 0..per_row {
            assert_eq!(s.peek().unwrap().row, row.as_bytes());
            if i + 1 < per_row {
                s.advance().unwrap();
            }
        }
        // Blocks end at row boundaries, so the row is in one block.
        assert_eq!(s.blocks_read(), 1, "{row}");
        one_block += 1;
        // A scanner also peeks past the row to see it ended.
        s.advance().unwrap();
        total_with_terminator += s.blocks_read();
    }
    let lookups = (0..5000).step_by(7).count() as u64;
    let after = reader.stats();
    assert_eq!(
        after.data_blocks_read - before.data_blocks_read,
        total_with_terminator
    );
    eprintln!(
        "point lookups: {lookups} over {} blocks; {one_block} read exactly one data block; \
         {:.3} blocks per lookup including the peek past the row",
        meta.data_block_count,
        total_with_terminator as f64 / lookups as f64
    );
    assert_eq!(one_block, lookups);
    // An absent row is answered by the bloom without touching data blocks
    // (up to its false positives).
    let mut data_reads = 0;
    for r in 0..1000 {
        let row = format!("row{r:08}x");
        if reader.may_contain_row(row.as_bytes()).unwrap() {
            let mut s = reader.source();
            s.seek(&first_on_row(row.as_bytes())).unwrap();
            data_reads += s.blocks_read();
        }
    }
    assert!(data_reads < 50, "{data_reads}");
}

// ---------------------------------------------------------------------------
// Faults
// ---------------------------------------------------------------------------

#[test]
fn write_faults_publish_nothing_and_read_faults_surface() {
    let mem = Arc::new(MemFileStore::new());
    let faulty = Arc::new(FaultyFileStore::new(mem.clone()));
    let store: Arc<dyn FileStore> = faulty.clone();
    let cells = many_rows(3000, 2);
    let path = Path::new("/f/file");
    faulty.fail_nth(FaultOp::Write, 5);
    let mut w = StoreFileWriter::new(
        Arc::clone(&store),
        path,
        options(
            Compression::None,
            DataBlockEncoding::None,
            BloomType::Row,
            4096,
        ),
    )
    .unwrap();
    let mut failed = false;
    for c in &cells {
        if w.add(c).is_err() {
            failed = true;
            break;
        }
    }
    assert!(failed, "the fifth block write failed");
    assert!(
        w.add(&cells[cells.len() - 1]).is_err(),
        "a failed writer stays failed"
    );
    assert!(w.finish().is_err());
    assert!(!store.exists(path).unwrap());

    faulty.fail_nth(FaultOp::Finish, 1);
    let mut w = StoreFileWriter::new(
        Arc::clone(&store),
        path,
        options(
            Compression::None,
            DataBlockEncoding::None,
            BloomType::Row,
            4096,
        ),
    )
    .unwrap();
    for c in &cells {
        w.add(c).unwrap();
    }
    assert!(w.finish().is_err());
    assert!(!store.exists(path).unwrap());

    write(
        &store,
        path,
        &cells,
        options(
            Compression::None,
            DataBlockEncoding::None,
            BloomType::Row,
            4096,
        ),
    );
    let reader = StoreFileReader::open(Arc::clone(&store), path, next_file_id(), None).unwrap();
    faulty.fail_nth(FaultOp::Read, 3);
    match scan_all(&reader) {
        Err(Error::Io { .. }) => {}
        other => panic!("expected an I/O error, got {:?}", other.map(|c| c.len())),
    }
    assert_eq!(scan_all(&reader).unwrap(), cells);
}

// ---------------------------------------------------------------------------
// Informal throughput (run with --ignored --nocapture)
// ---------------------------------------------------------------------------

#[test]
#[ignore]
fn throughput() {
    let cells = many_rows(200_000, 5);
    let bytes: usize = cells.iter().map(|c| c.heap_size() - 48).sum();
    for (c, e) in [
        (Compression::None, DataBlockEncoding::None),
        (Compression::None, DataBlockEncoding::FastDiff),
        (Compression::Lz4, DataBlockEncoding::FastDiff),
        (Compression::Snappy, DataBlockEncoding::FastDiff),
        (Compression::Zstd, DataBlockEncoding::FastDiff),
        (Compression::Gz, DataBlockEncoding::FastDiff),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn FileStore> = Arc::new(LocalFileStore::new());
        let path = dir.path().join("f");
        let t = std::time::Instant::now();
        let meta = write(&store, &path, &cells, options(c, e, BloomType::Row, 65536));
        let w = t.elapsed();
        let reader = open(&store, &path);
        let t = std::time::Instant::now();
        let n = scan_all(&reader).unwrap().len();
        let r = t.elapsed();
        assert_eq!(n, cells.len());
        let mut rng = Rng(9);
        let t = std::time::Instant::now();
        let gets = 20_000;
        for _ in 0..gets {
            let row = format!("row{:08}", rng.below(200_000));
            let mut s = reader.source();
            s.seek(&first_on_row(row.as_bytes())).unwrap();
        }
        let g = t.elapsed();
        let mb = bytes as f64 / (1 << 20) as f64;
        eprintln!(
            "{c}/{e}: {} cells, {:.0} MB raw -> {:.1} MB file; write {:.0} MB/s, scan {:.0} MB/s, \
             {:.0} cold seeks/s (no cache)",
            cells.len(),
            mb,
            meta.file_size as f64 / (1 << 20) as f64,
            mb / w.as_secs_f64(),
            mb / r.as_secs_f64(),
            gets as f64 / g.as_secs_f64()
        );
    }
}
