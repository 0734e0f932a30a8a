//! A free loopback port for a server a test starts, chosen below the
//! kernel's ephemeral port range (scripts/ports.py, the suites' twin, says
//! why at length): a port the kernel picks for `bind(0)` comes from the
//! range every outgoing connection's local port comes from, so between the
//! probe's close and the server's bind a client connection can take it.
//! Ports below the range are never handed to outgoing connections.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::{Ipv4Addr, TcpListener};

/// The lowest port picked: above services that may run on a developer's
/// machine in the low thousands.
const LOWEST: u16 = 10_000;
const TRIES: u64 = 200;

pub fn free_port() -> u16 {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(49_152);
    if ephemeral_low > LOWEST + 1 {
        // RandomState is seeded per process and per instance: enough
        // randomness for spreading picks, without a dependency.
        let random = RandomState::new();
        let span = u64::from(ephemeral_low - LOWEST);
        for attempt in 0..TRIES {
            let mut hasher = random.build_hasher();
            hasher.write_u64(attempt);
            let port = LOWEST + (hasher.finish() % span) as u16;
            if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
                return port;
            }
        }
    }
    // No room below the range on this machine: the kernel's pick.
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free loopback port")
}
