//! Garbage in a data directory's `catalog.json` never panics
//! `Database::open`, and opening it never allocates more than a small
//! multiple of the file plus the fixed cost of opening a database.
//!
//! Arbitrary bytes must be refused with an error. Mutated copies of a real
//! catalog (bytes flipped, inserted, deleted, or the tail cut off) may
//! still describe a database that opens; either way there is no panic. The
//! peak is measured on the opening thread by the counting global allocator
//! of this test binary, against [`FACTOR`] times the catalog's length plus
//! [`CONSTANT`].
//!
//! Failing cases are persisted in `garbage_input.proptest-regressions`
//! beside this file; commit that file when it appears.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

use basalt::{ColumnFamilyDescriptor, Database, ManualClock, Options, TableDescriptor};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------
// Allocation meter: a counting global allocator. Counts are per thread, so
// tests running in parallel in this binary do not see each other's
// allocations; a decoder runs on the calling thread.
// ---------------------------------------------------------------------------

mod meter {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    /// Wraps the system allocator and keeps, per thread, the bytes live
    /// and the highest that has been since the last [`peak_while`].
    pub struct Meter;

    thread_local! {
        static LIVE: Cell<isize> = const { Cell::new(0) };
        static PEAK: Cell<isize> = const { Cell::new(0) };
    }

    fn note(delta: isize) {
        // `try_with`: allocations during thread teardown are not counted.
        let _ = LIVE.try_with(|live| {
            let now = live.get() + delta;
            live.set(now);
            let _ = PEAK.try_with(|peak| {
                if now > peak.get() {
                    peak.set(now);
                }
            });
        });
    }

    // SAFETY: every method forwards to `System` unchanged and only adds
    // bookkeeping in thread-local cells, which never allocate.
    unsafe impl GlobalAlloc for Meter {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: the caller's contract is passed on unchanged.
            let p = unsafe { System.alloc(layout) };
            if !p.is_null() {
                note(layout.size() as isize);
            }
            p
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: as for `alloc`.
            let p = unsafe { System.alloc_zeroed(layout) };
            if !p.is_null() {
                note(layout.size() as isize);
            }
            p
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: as for `alloc`.
            unsafe { System.dealloc(ptr, layout) };
            note(-(layout.size() as isize));
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: as for `alloc`.
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            if !p.is_null() {
                note(new_size as isize - layout.size() as isize);
            }
            p
        }
    }

    /// Runs `f` and returns its result with the most bytes that were
    /// allocated at once on this thread while it ran, beyond what was live
    /// when it started (the result itself included).
    pub fn peak_while<T>(f: impl FnOnce() -> T) -> (T, usize) {
        let base = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(base));
        let out = f();
        let peak = PEAK.with(Cell::get);
        (out, (peak - base).max(0) as usize)
    }
}

#[global_allocator]
static METER: meter::Meter = meter::Meter;

use meter::peak_while;

/// Fails the case when decoding `input_len` bytes allocated more than
/// `factor * input_len + constant` bytes at its peak.
fn check_bounded(what: &str, peak: usize, input_len: usize, factor: usize, constant: usize) {
    let bound = factor * input_len + constant;
    assert!(
        peak <= bound,
        "{what}: decoding {input_len} bytes allocated {peak} bytes at the peak, \
         over the bound of {factor} x input + {constant} = {bound}"
    );
}

// ---------------------------------------------------------------------------
// Mutations of valid encodings
// ---------------------------------------------------------------------------

/// One change to an encoding; positions are taken modulo its length.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn arb_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 1u8..).prop_map(|(at, mask)| Mutation::Flip(at, mask)),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Insert(at, b)),
        2 => any::<usize>().prop_map(Mutation::Delete),
        1 => any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn arb_mutations() -> impl Strategy<Value = Vec<Mutation>> {
    proptest::collection::vec(arb_mutation(), 1..4)
}

fn mutate(bytes: &mut Vec<u8>, mutations: &[Mutation]) {
    for m in mutations {
        let len = bytes.len();
        match *m {
            Mutation::Flip(at, mask) if len > 0 => bytes[at % len] ^= mask,
            Mutation::Insert(at, b) => bytes.insert(at % (len + 1), b),
            Mutation::Delete(at) if len > 0 => {
                bytes.remove(at % len);
            }
            Mutation::Truncate(at) => bytes.truncate(at % (len + 1)),
            _ => {}
        }
    }
}

/// The catalog is parsed once into maps and vectors that grow by doubling.
const FACTOR: usize = 16;
/// Opening a database at all: the WAL's replay buffer and writer, the block
/// cache's bookkeeping, the options, and what opening the regions a
/// (mutated) catalog still names costs. Measured: about 2 KiB when the
/// catalog is refused, about 80 KiB for a full open and close of the
/// two-region table.
const CONSTANT: usize = 256 << 10;

fn options(dir: &Path) -> Options {
    Options::new(dir)
}

fn open(dir: &Path) -> basalt::Result<Database> {
    Database::builder(options(dir))
        .clock(Arc::new(ManualClock::new(1_000_000)))
        .open()
}

/// The catalog file an open reads: the newest numbered version, or the
/// first one when none was written yet.
fn newest_catalog(dir: &Path) -> std::path::PathBuf {
    let mut versions: Vec<_> = std::fs::read_dir(basalt::layout::catalog_dir(dir))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    versions.retain(|p| basalt::layout::catalog_version_of(p).is_some());
    versions.sort();
    versions
        .pop()
        .unwrap_or_else(|| basalt::layout::catalog_version_path(dir, 1))
}

/// A data directory holding one closed database with a pre-split table
/// of two families.
fn real_data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path()).unwrap();
    db.create_table_with_splits(
        TableDescriptor::new("t")
            .family(ColumnFamilyDescriptor::new("a"))
            .family(ColumnFamilyDescriptor::new("b")),
        &[Bytes::from_static(b"m")],
    )
    .unwrap();
    db.close().unwrap();
    dir
}

/// Writes `catalog` as the catalog file `path` of `dir` and opens it; true
/// when the open succeeded.
fn open_with_catalog(dir: &Path, path: &Path, catalog: &[u8]) -> bool {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, catalog).unwrap();
    let (opened, peak) = peak_while(|| {
        let db = open(dir);
        let ok = db.is_ok();
        if let Ok(db) = db {
            let _ = db.close();
        }
        ok
    });
    check_bounded("catalog", peak, catalog.len(), FACTOR, CONSTANT);
    opened
}

#[test]
fn an_untouched_catalog_opens() {
    let dir = real_data_dir();
    let path = newest_catalog(dir.path());
    let catalog = std::fs::read(&path).unwrap();
    assert!(open_with_catalog(dir.path(), &path, &catalog));
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn arbitrary_bytes_in_the_catalog_make_open_fail_cleanly(
        data in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = newest_catalog(dir.path());
        prop_assert!(!open_with_catalog(dir.path(), &path, &data), "garbage opened");
    }

    #[test]
    fn arbitrary_bytes_in_a_format_2_catalog_make_open_fail_cleanly(
        data in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = basalt::layout::legacy_catalog_path(dir.path());
        prop_assert!(!open_with_catalog(dir.path(), &path, &data), "garbage opened");
    }

    #[test]
    fn a_mutated_catalog_opens_or_fails_cleanly(mutations in arb_mutations()) {
        let dir = real_data_dir();
        let path = newest_catalog(dir.path());
        let mut catalog = std::fs::read(&path).unwrap();
        mutate(&mut catalog, &mutations);
        open_with_catalog(dir.path(), &path, &catalog);
    }
}

#[test]
fn the_allocation_meter_sees_what_is_allocated() {
    let (v, peak) = peak_while(|| vec![0u8; 10_000]);
    assert!(peak >= 10_000, "peak {peak}");
    drop(v);
}
