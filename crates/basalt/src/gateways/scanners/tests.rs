use std::cell::RefCell;
use std::sync::atomic::AtomicBool;

use basalt_engine::ManualClock;

use super::*;

const LEASE: Duration = Duration::from_millis(1000);

fn limits(max_open: usize, max_per_connection: usize) -> ScannerLimits {
    ScannerLimits {
        max_open,
        max_per_connection,
        lease: LEASE,
    }
}

fn table(
    max_open: usize,
    max_per_connection: usize,
) -> (ScannerTable<u64, &'static str>, ManualClock) {
    let clock = ManualClock::new(1_000_000);
    let table = ScannerTable::with_clock(
        limits(max_open, max_per_connection),
        Arc::new(clock.clone()),
    );
    (table, clock)
}

const A: Owner = Owner::Connection(1);
const B: Owner = Owner::Connection(2);

#[test]
fn a_scanner_unused_for_its_lease_is_unknown_and_one_used_in_time_lives_on() {
    let (table, clock) = table(8, 8);
    let (stale, _) = table.open(A, "stale").unwrap();
    let (used, _) = table.open(A, "used").unwrap();
    clock.advance(999);
    assert!(table.get(&used, A).is_some(), "a lookup renews the lease");
    clock.advance(1);
    assert!(table.get(&stale, A).is_none(), "past its lease");
    assert_eq!(table.len(), 1, "the lookup dropped the expired scanner");
    clock.advance(998);
    assert_eq!(*table.get(&used, A).unwrap().lock(), "used");
}

#[test]
fn reaping_drops_expired_scanners_but_not_one_in_a_call() {
    let (table, clock) = table(8, 8);
    let (_, idle) = table.open(A, "idle").unwrap();
    let (busy, scanner) = table.open(A, "busy").unwrap();
    drop(idle);
    let call = scanner.lock();
    clock.advance(5_000);
    assert_eq!(table.reap(), 1, "only the idle one");
    drop(call);
    // The call's end started the lease again.
    clock.advance(999);
    assert_eq!(table.reap(), 0);
    assert!(table.get(&busy, A).is_some());
    clock.advance(1_000);
    assert_eq!(table.reap(), 1);
    assert!(table.is_empty());
}

#[test]
fn the_server_limit_refuses_with_the_limit_named_until_a_scanner_expires() {
    let (table, clock) = table(2, 8);
    table.open(A, "1").unwrap();
    table.open(B, "2").unwrap();
    let refused = table.open(B, "3").unwrap_err();
    assert_eq!(refused, Refused::Server { limit: 2 });
    assert_eq!(refused.limit(), 2);
    let message = refused.message("scannerClose");
    assert!(
        message.contains("limit 2")
            && message.contains("max_scanners")
            && message.contains("scannerClose"),
        "{message}"
    );
    // A full table drops expired scanners before it refuses.
    clock.advance(1_000);
    assert!(table.open(B, "3").is_ok());
    assert_eq!(table.len(), 1);
}

#[test]
fn the_connection_limit_counts_each_connection_alone() {
    let (table, _) = table(8, 2);
    let (first, _) = table.open(A, "1").unwrap();
    table.open(A, "2").unwrap();
    let refused = table.open(A, "3").unwrap_err();
    assert_eq!(refused, Refused::Connection { limit: 2 });
    assert!(refused
        .message("closeScanner")
        .contains("max_scanners_per_connection"));
    assert!(table.open(B, "other connection").is_ok());
    assert!(table.open(Owner::Anyone, "no connection").is_ok());
    assert!(table.close(&first, A));
    assert!(
        table.open(A, "3").is_ok(),
        "a closed scanner frees its place"
    );
}

#[test]
fn another_owner_can_neither_use_nor_close_a_scanner() {
    let (table, _) = table(8, 8);
    let (id, _) = table.open(A, "mine").unwrap();
    assert!(table.get(&id, B).is_none());
    assert!(table.get(&id, Owner::Anyone).is_none());
    assert!(!table.close(&id, B));
    assert!(table.get(&id, A).is_some(), "the owner still has it");
    assert!(table.close(&id, A));
    assert!(!table.close(&id, A), "closed once");
}

#[test]
fn a_scanner_anyone_may_use_is_found_by_any_caller() {
    let (table, _) = table(8, 1);
    let (id, _) = table.open(Owner::Anyone, "url").unwrap();
    table.open(Owner::Anyone, "another").unwrap();
    assert!(table.get(&id, Owner::Anyone).is_some());
    assert!(table.close(&id, Owner::Anyone));
}

#[test]
fn a_closed_connection_releases_only_its_scanners() {
    let (table, _) = table(8, 2);
    table.open(A, "1").unwrap();
    table.open(A, "2").unwrap();
    let (kept, _) = table.open(B, "3").unwrap();
    assert_eq!(table.close_owned_by(1), 2);
    assert_eq!(table.close_owned_by(1), 0);
    assert_eq!(table.len(), 1);
    assert!(table.get(&kept, B).is_some());
    table.open(A, "4").unwrap();
    assert!(table.open(A, "5").is_ok(), "its count went back to zero");
}

#[test]
fn a_closed_id_is_remembered_for_a_lease() {
    let (table, clock) = table(8, 8);
    let (id, _) = table.open(A, "x").unwrap();
    assert!(!table.was_recently_closed(&id));
    table.close(&id, A);
    assert!(table.was_recently_closed(&id));
    assert!(table.get(&id, A).is_none());
    clock.advance(1_000);
    assert!(!table.was_recently_closed(&id));
    table.reap();
    assert!(table.inner.lock().closed.is_empty(), "reaping forgets it");
}

#[test]
fn a_lease_set_later_applies_to_open_scanners() {
    let (table, clock) = table(8, 8);
    let (id, _) = table.open(A, "x").unwrap();
    table.set_lease(Duration::from_millis(10));
    assert_eq!(table.lease(), Duration::from_millis(10));
    clock.advance(10);
    assert!(table.get(&id, A).is_none());
}

thread_local! {
    /// The ids [`Few`] hands out next, in order.
    static NEXT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// An id type whose "random" draws a test chooses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Few(u8);

impl ScannerId for Few {
    fn random() -> Few {
        NEXT.with(|next| Few(next.borrow_mut().remove(0)))
    }
}

#[test]
fn an_id_open_or_closed_within_a_lease_is_not_handed_out_again() {
    NEXT.with(|next| *next.borrow_mut() = vec![1, 1, 2, 1, 2, 3, 1]);
    let clock = ManualClock::new(0);
    let table: ScannerTable<Few, ()> =
        ScannerTable::with_clock(limits(8, 8), Arc::new(clock.clone()));
    let (first, _) = table.open(A, ()).unwrap();
    let (second, _) = table.open(A, ()).unwrap();
    assert_eq!((first.clone(), second), (Few(1), Few(2)));
    assert!(table.close(&first, A));
    let (third, _) = table.open(A, ()).unwrap();
    assert_eq!(third, Few(3), "1 was closed a moment ago, 2 is open");
    // A lease later the closed id is forgotten and may be drawn again.
    clock.advance(1_000);
    table.reap();
    NEXT.with(|next| *next.borrow_mut() = vec![1]);
    table.set_lease(Duration::from_secs(60));
    assert_eq!(table.open(A, ()).unwrap().0, Few(1));
}

#[test]
fn random_ids_are_not_sequential_and_stay_in_their_wire_range() {
    let ids: Vec<u64> = (0..64).map(|_| u64::random()).collect();
    assert!(ids.iter().all(|&id| id > 0 && id < 1 << 52));
    assert!(ids.windows(2).any(|w| w[1] != w[0] + 1));
    assert!((0..64).all(|_| i32::random() >= 0));
    let token = String::random();
    assert_eq!(token.len(), 32);
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_ne!(token, String::random());
}

/// A payload that notes, when dropped, whether the table was locked.
struct Probe {
    table: Arc<ScannerTable<u64, Probe>>,
    dropped_unlocked: Arc<AtomicBool>,
}

impl Drop for Probe {
    fn drop(&mut self) {
        let unlocked = self.table.inner.try_lock().is_some();
        self.dropped_unlocked.store(unlocked, Ordering::SeqCst);
    }
}

#[test]
fn closed_and_expired_scanners_end_outside_the_tables_lock() {
    let clock = ManualClock::new(0);
    let table = Arc::new(ScannerTable::with_clock(
        limits(8, 8),
        Arc::new(clock.clone()),
    ));
    let probe = |flag: &Arc<AtomicBool>| Probe {
        table: Arc::clone(&table),
        dropped_unlocked: Arc::clone(flag),
    };
    let closed = Arc::new(AtomicBool::new(false));
    let (id, _) = table.open(A, probe(&closed)).unwrap();
    table.close(&id, A);
    assert!(closed.load(Ordering::SeqCst));
    let reaped = Arc::new(AtomicBool::new(false));
    table.open(A, probe(&reaped)).unwrap();
    clock.advance(1_000);
    assert_eq!(table.reap(), 1);
    assert!(reaped.load(Ordering::SeqCst));
    let released = Arc::new(AtomicBool::new(false));
    table.open(B, probe(&released)).unwrap();
    table.close_owned_by(2);
    assert!(released.load(Ordering::SeqCst));
}
