//! Protections every gateway shares (REST, the info server, Thrift1,
//! Thrift2, native RPC), written once so the gateways agree and a later
//! shared listener can take them over whole.
//!
//! - Scanner ids are random, not sequential: a client cannot guess the id
//!   of a scanner another client opened (the gateways also bind each id to
//!   the connection that opened it).
//! - [`AddressSlots`] caps the connections one peer address may hold and
//!   keeps slots that only other addresses may take, so one abusive address
//!   cannot lock everyone else out.
//! - [`RefusalLog`] turns refusals into one summary line per interval
//!   instead of one line per refusal (a flood would otherwise flood the log).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A random scanner id for protocols that carry a 64-bit id (native RPC).
/// Never zero, and below 2^52 so clients that hold ids as doubles keep
/// them exact; 52 random bits are not guessable in any useful time.
pub fn random_scanner_id() -> u64 {
    (rand::random::<u64>() >> 12).max(1)
}

/// A random, non-negative scanner id for protocols that carry a 32-bit
/// signed id (Thrift1, Thrift2). 31 bits can be enumerated, so the
/// gateways also refuse an id from any connection but its owner.
pub fn random_scanner_id_i32() -> i32 {
    (rand::random::<u32>() >> 1) as i32
}

/// A random scanner token for URLs (REST): 128 bits, as 32 hex digits.
pub fn random_scanner_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The per-address connection limits of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotLimits {
    /// Connections the listener holds at once, from all addresses.
    pub total: usize,
    /// Connections one peer address may hold at once.
    pub per_address: usize,
    /// Of `total`, the slots an address that already holds connections
    /// cannot take: they are kept for addresses holding none, so a client
    /// that is not the flooder still gets in.
    pub reserved: usize,
}

/// Why [`AddressSlots::acquire`] refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotRefusal {
    /// The listener holds `total` connections.
    Full,
    /// This address holds `per_address` connections.
    PerAddress,
    /// Only reserved slots remain and this address already holds some.
    Reserved,
}

impl SlotRefusal {
    /// A short reason for logs and refusal answers.
    pub fn reason(self) -> &'static str {
        match self {
            SlotRefusal::Full => "the listener is at its connection limit",
            SlotRefusal::PerAddress => "this address is at its per-address connection limit",
            SlotRefusal::Reserved => {
                "the remaining slots are reserved for addresses holding no connection"
            }
        }
    }
}

#[derive(Debug, Default)]
struct SlotState {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// Connection slots counted per peer address (see [`SlotLimits`]).
#[derive(Debug, Clone)]
pub struct AddressSlots {
    limits: SlotLimits,
    state: Arc<Mutex<SlotState>>,
}

/// One connection's slot, given back when dropped.
#[derive(Debug)]
pub struct Slot {
    address: IpAddr,
    state: Arc<Mutex<SlotState>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = self.state.lock();
        state.total = state.total.saturating_sub(1);
        if let Some(n) = state.by_address.get_mut(&self.address) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                state.by_address.remove(&self.address);
            }
        }
    }
}

impl AddressSlots {
    /// Slots under `limits` (a `per_address` of 0 is read as 1, and
    /// `reserved` is kept below `total` so someone can always connect).
    pub fn new(limits: SlotLimits) -> Self {
        let total = limits.total.max(1);
        AddressSlots {
            limits: SlotLimits {
                total,
                per_address: limits.per_address.max(1),
                reserved: limits.reserved.min(total - 1),
            },
            state: Arc::default(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> SlotLimits {
        self.limits
    }

    /// A slot for a connection from `address`, or why not.
    pub fn acquire(&self, address: IpAddr) -> Result<Slot, SlotRefusal> {
        let mut state = self.state.lock();
        if state.total >= self.limits.total {
            return Err(SlotRefusal::Full);
        }
        let held = state.by_address.get(&address).copied().unwrap_or(0);
        if held >= self.limits.per_address {
            return Err(SlotRefusal::PerAddress);
        }
        if held > 0 && state.total >= self.limits.total - self.limits.reserved {
            return Err(SlotRefusal::Reserved);
        }
        state.total += 1;
        *state.by_address.entry(address).or_insert(0) += 1;
        Ok(Slot {
            address,
            state: Arc::clone(&self.state),
        })
    }

    /// Connections held now.
    pub fn in_use(&self) -> usize {
        self.state.lock().total
    }
}

/// Counts refusals and logs one summary line per interval.
#[derive(Debug)]
pub struct RefusalLog {
    what: &'static str,
    interval: Duration,
    /// When a line was last logged, and the refusals since.
    state: Mutex<(Option<Instant>, u64)>,
}

impl RefusalLog {
    /// A log for the listener `what`, summarizing every `interval`.
    pub fn new(what: &'static str, interval: Duration) -> Self {
        RefusalLog {
            what,
            interval,
            state: Mutex::new((None, 0)),
        }
    }

    /// Records one refusal and logs a summary line when none was logged
    /// for an interval; answers that line (tests read it).
    pub fn refused(&self, reason: &str) -> Option<String> {
        let mut state = self.state.lock();
        state.1 += 1;
        if state.0.is_some_and(|at| at.elapsed() < self.interval) {
            return None;
        }
        let line = format!(
            "{}: refused {} connection(s) since the last report (one line per {:?} at most); latest: {}",
            self.what, state.1, self.interval, reason
        );
        *state = (Some(Instant::now()), 0);
        tracing::warn!("{line}");
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn scanner_ids_are_not_sequential_and_stay_in_range() {
        let ids: Vec<u64> = (0..64).map(|_| random_scanner_id()).collect();
        assert!(ids.iter().all(|&id| id > 0 && id < 1 << 52));
        assert!(ids.windows(2).any(|w| w[1] != w[0] + 1));
        assert!((0..64).all(|_| random_scanner_id_i32() >= 0));
        assert_eq!(random_scanner_token().len(), 32);
        assert_ne!(random_scanner_token(), random_scanner_token());
    }

    #[test]
    fn one_address_cannot_take_the_reserved_slots() {
        let slots = AddressSlots::new(SlotLimits {
            total: 10,
            per_address: 100,
            reserved: 3,
        });
        let flood: Vec<Slot> = (0..7).map_while(|_| slots.acquire(ip(1)).ok()).collect();
        assert_eq!(flood.len(), 7);
        assert_eq!(slots.acquire(ip(1)).unwrap_err(), SlotRefusal::Reserved);
        let other = slots.acquire(ip(2));
        assert!(other.is_ok(), "another address is served");
        drop(flood);
        assert_eq!(slots.in_use(), 1);
    }

    #[test]
    fn an_address_is_held_to_its_own_limit_and_slots_come_back() {
        let slots = AddressSlots::new(SlotLimits {
            total: 100,
            per_address: 2,
            reserved: 0,
        });
        let a = slots.acquire(ip(1)).unwrap();
        let _b = slots.acquire(ip(1)).unwrap();
        assert_eq!(slots.acquire(ip(1)).unwrap_err(), SlotRefusal::PerAddress);
        drop(a);
        assert!(slots.acquire(ip(1)).is_ok());
    }

    #[test]
    fn refusals_are_summarized_once_per_interval() {
        let log = RefusalLog::new("test", Duration::from_secs(3600));
        assert!(log.refused("full").is_some(), "the first refusal is logged");
        let logged = (0..1000).filter(|_| log.refused("full").is_some()).count();
        assert_eq!(logged, 0);
    }
}
