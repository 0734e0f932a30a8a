//! Shared by the garbage-input tests of the engine, core and Thrift crates
//! (each includes it with `#[path]`; it is not a crate of its own because
//! it must install the including test binary's global allocator):
//! proptest settings that persist failing cases, a counting global
//! allocator measuring what decoding allocates, the bound check, and byte
//! mutations of valid encodings.
#![allow(dead_code)]

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

pub fn config(cases: u32) -> ProptestConfig {
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

pub use meter::peak_while;

/// Fails the case when decoding `input_len` bytes allocated more than
/// `factor * input_len + constant` bytes at its peak.
pub fn check_bounded(what: &str, peak: usize, input_len: usize, factor: usize, constant: usize) {
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
pub enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

pub fn arb_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 1u8..).prop_map(|(at, mask)| Mutation::Flip(at, mask)),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Insert(at, b)),
        2 => any::<usize>().prop_map(Mutation::Delete),
        1 => any::<usize>().prop_map(Mutation::Truncate),
    ]
}

pub fn arb_mutations() -> impl Strategy<Value = Vec<Mutation>> {
    proptest::collection::vec(arb_mutation(), 1..4)
}

pub fn mutate(bytes: &mut Vec<u8>, mutations: &[Mutation]) {
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

#[test]
fn the_allocation_meter_sees_what_is_allocated() {
    let (v, peak) = peak_while(|| vec![0u8; 10_000]);
    assert!(peak >= 10_000, "peak {peak}");
    drop(v);
}
