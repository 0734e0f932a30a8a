//! Open scanners (work in progress in this change).

/// Open scanners.
#[derive(Debug)]
pub struct Scanners {
    capacity: usize,
    lease_ms: u64,
}

impl Scanners {
    /// A table of at most `capacity` scanners with `lease_ms` leases.
    pub fn new(capacity: usize, lease_ms: u64) -> Scanners {
        Scanners { capacity, lease_ms }
    }

    /// The lease in milliseconds.
    pub fn lease_ms(&self) -> u64 {
        self.lease_ms
    }

    /// The capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}
