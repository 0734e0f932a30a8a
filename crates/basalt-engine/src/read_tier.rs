//! Memory-only reads: a thread may ask that reads it makes be answered
//! from memory (memstores and the block cache) or not at all, as RocksDB's
//! block-cache read tier does.
//!
//! Why: a network gateway hands every call to a blocking pool so that a
//! read that waits on a disk (or on object storage) never stalls the
//! threads that serve connections. For a read whose data is in memory the
//! hand-off (a thread wake-up there and one back) costs more than the read
//! itself. With this module a gateway first runs a read-only call on its
//! own thread in memory-only mode and hands it to the pool only when the
//! read needed a file.
//!
//! Contract:
//! 1. [`memory_only`] runs a closure with the mode on for the current
//!    thread and returns `None` when any read inside it needed a file; the
//!    closure's result is then dropped, so it must have had no effect (a
//!    read-only call), and the caller runs it again the normal way.
//! 2. Every place that would read a file on a read path calls
//!    [`before_file_read`] first; in memory-only mode it records the miss
//!    and returns an error that ends the read at once.
//! 3. The mode is per thread and ends with the closure, also when it
//!    panics (a guard restores the previous state), so a pool thread or a
//!    later call is never left in it.

use std::cell::Cell;
use std::io;
use std::path::Path;

use basalt_types::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Normal,
    MemoryOnly { missed: bool },
}

thread_local! {
    static MODE: Cell<Mode> = const { Cell::new(Mode::Normal) };
}

/// Restores the thread's previous mode when dropped.
struct Restore(Mode);

impl Drop for Restore {
    fn drop(&mut self) {
        MODE.with(|m| m.set(self.0));
    }
}

/// Runs `f` with memory-only reads on this thread; `None` when a read in it
/// needed a file (its result is dropped; see the module docs).
pub fn memory_only<R>(f: impl FnOnce() -> R) -> Option<R> {
    let previous = MODE.with(|m| m.replace(Mode::MemoryOnly { missed: false }));
    let _restore = Restore(previous);
    let result = f();
    match MODE.with(Cell::get) {
        Mode::MemoryOnly { missed: true } => None,
        _ => Some(result),
    }
}

/// True while the current thread is in memory-only mode.
pub fn is_memory_only() -> bool {
    matches!(MODE.with(Cell::get), Mode::MemoryOnly { .. })
}

/// Ends a memory-only attempt that would have to wait (for room in a
/// budget, say): in memory-only mode it records a miss, so the caller runs
/// the call again on its blocking pool, and returns true; otherwise false.
pub fn give_up() -> bool {
    MODE.with(|m| match m.get() {
        Mode::Normal => false,
        Mode::MemoryOnly { .. } => {
            m.set(Mode::MemoryOnly { missed: true });
            true
        }
    })
}

/// Called before a read path reads `path`: in memory-only mode, records the
/// miss and fails the read (`WouldBlock`); otherwise does nothing.
pub fn before_file_read(path: &Path) -> Result<()> {
    MODE.with(|m| match m.get() {
        Mode::Normal => Ok(()),
        Mode::MemoryOnly { .. } => {
            m.set(Mode::MemoryOnly { missed: true });
            Err(Error::io(
                path,
                io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "memory-only read: the block is not cached",
                ),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closure_without_file_reads_keeps_its_result() {
        assert_eq!(memory_only(|| 7), Some(7));
        assert!(!is_memory_only(), "the mode ends with the closure");
    }

    #[test]
    fn a_file_read_in_memory_only_mode_fails_and_drops_the_result() {
        let got = memory_only(|| {
            assert!(is_memory_only());
            before_file_read(Path::new("/f")).is_err()
        });
        assert_eq!(got, None);
        assert!(
            before_file_read(Path::new("/f")).is_ok(),
            "normal reads again"
        );
    }

    #[test]
    fn a_miss_swallowed_by_the_closure_still_counts() {
        // A caller that turns the error into an empty answer must not have
        // that answer used.
        let got = memory_only(|| before_file_read(Path::new("/f")).unwrap_or(()));
        assert_eq!(got, None);
    }

    #[test]
    fn the_mode_ends_when_the_closure_panics() {
        let caught = std::panic::catch_unwind(|| {
            memory_only(|| -> () { panic!("boom") });
        });
        assert!(caught.is_err());
        assert!(!is_memory_only());
    }
}
