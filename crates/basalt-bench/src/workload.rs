//! YCSB's CoreWorkload: the six standard workloads, their record layout
//! and the choice of the next operation and key.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use rand::Rng;

use crate::generator::{build_key, InsertCounter, ScrambledZipfian, SkewedLatest};
use crate::BenchError;

/// YCSB's table name.
pub const TABLE: &str = "usertable";
/// The column family the fields live in (YCSB's HBase binding default).
pub const FAMILY: &str = "family";
/// Fields per record.
pub const FIELD_COUNT: usize = 10;
/// Bytes per field value.
pub const FIELD_LENGTH: usize = 100;
/// Longest scan of workload E (lengths are uniform in `1..=MAX_SCAN_LENGTH`).
pub const MAX_SCAN_LENGTH: usize = 100;

/// The field names `field0` .. `field9`.
pub fn field_names() -> Vec<String> {
    (0..FIELD_COUNT).map(|i| format!("field{i}")).collect()
}

/// One of the standard workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Update heavy: 50% reads, 50% updates, zipfian.
    A,
    /// Read mostly: 95% reads, 5% updates, zipfian.
    B,
    /// Read only, zipfian.
    C,
    /// Read latest: 95% reads, 5% inserts, reads favour new records.
    D,
    /// Short ranges: 95% scans, 5% inserts, zipfian scan starts.
    E,
    /// Read-modify-write: 50% reads, 50% read-modify-writes, zipfian.
    F,
}

impl Workload {
    /// All six, in YCSB's order.
    pub const ALL: [Workload; 6] = [
        Workload::A,
        Workload::B,
        Workload::C,
        Workload::D,
        Workload::E,
        Workload::F,
    ];

    /// The operation mix.
    pub fn mix(self) -> Mix {
        let (read, update, insert, scan, rmw) = match self {
            Workload::A => (0.5, 0.5, 0.0, 0.0, 0.0),
            Workload::B => (0.95, 0.05, 0.0, 0.0, 0.0),
            Workload::C => (1.0, 0.0, 0.0, 0.0, 0.0),
            Workload::D => (0.95, 0.0, 0.05, 0.0, 0.0),
            Workload::E => (0.0, 0.0, 0.05, 0.95, 0.0),
            Workload::F => (0.5, 0.0, 0.0, 0.0, 0.5),
        };
        Mix {
            read,
            update,
            insert,
            scan,
            read_modify_write: rmw,
        }
    }

    /// Whether keys follow the "latest" distribution (D) rather than the
    /// scrambled zipfian.
    pub fn is_latest(self) -> bool {
        self == Workload::D
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = match self {
            Workload::A => 'a',
            Workload::B => 'b',
            Workload::C => 'c',
            Workload::D => 'd',
            Workload::E => 'e',
            Workload::F => 'f',
        };
        write!(f, "{c}")
    }
}

impl FromStr for Workload {
    type Err = BenchError;

    fn from_str(s: &str) -> Result<Self, BenchError> {
        let name = s.trim().to_ascii_lowercase();
        let name = name.strip_prefix("workload").unwrap_or(&name);
        match name {
            "a" => Ok(Workload::A),
            "b" => Ok(Workload::B),
            "c" => Ok(Workload::C),
            "d" => Ok(Workload::D),
            "e" => Ok(Workload::E),
            "f" => Ok(Workload::F),
            _ => Err(BenchError::new(format!(
                "unknown workload '{s}' (expected a, b, c, d, e or f)"
            ))),
        }
    }
}

/// Operation proportions (they sum to 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mix {
    /// Reads of a whole record.
    pub read: f64,
    /// Updates of one field.
    pub update: f64,
    /// Inserts of new records.
    pub insert: f64,
    /// Scans of 1-100 records.
    pub scan: f64,
    /// A read of the record, then an update of one field.
    pub read_modify_write: f64,
}

/// The operation types YCSB reports on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// READ.
    Read,
    /// UPDATE.
    Update,
    /// INSERT.
    Insert,
    /// SCAN.
    Scan,
    /// READ-MODIFY-WRITE.
    ReadModifyWrite,
}

impl OpKind {
    /// Every kind, in report order.
    pub const ALL: [OpKind; 5] = [
        OpKind::Read,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::ReadModifyWrite,
    ];

    /// YCSB's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "READ",
            OpKind::Update => "UPDATE",
            OpKind::Insert => "INSERT",
            OpKind::Scan => "SCAN",
            OpKind::ReadModifyWrite => "READ-MODIFY-WRITE",
        }
    }

    /// Position in [`OpKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl Mix {
    /// The kind for a uniform draw `u` in `[0, 1)`.
    pub fn choose(&self, u: f64) -> OpKind {
        let mut acc = self.read;
        if u < acc {
            return OpKind::Read;
        }
        acc += self.update;
        if u < acc {
            return OpKind::Update;
        }
        acc += self.insert;
        if u < acc {
            return OpKind::Insert;
        }
        acc += self.scan;
        if u < acc {
            return OpKind::Scan;
        }
        if self.read_modify_write > 0.0 {
            OpKind::ReadModifyWrite
        } else {
            // Rounding at the top of the range: the last non-empty kind.
            [
                (self.scan, OpKind::Scan),
                (self.insert, OpKind::Insert),
                (self.update, OpKind::Update),
            ]
            .into_iter()
            .find(|(p, _)| *p > 0.0)
            .map_or(OpKind::Read, |(_, k)| k)
        }
    }
}

/// Fills `buf` with a random printable field value (YCSB writes random
/// ASCII, so values do not compress to nothing).
pub fn random_value<R: Rng + ?Sized>(rng: &mut R, buf: &mut Vec<u8>) {
    buf.clear();
    while buf.len() < FIELD_LENGTH {
        // Eight characters per 64-bit draw keeps value generation cheap.
        let mut bits: u64 = rng.random();
        for _ in 0..8 {
            if buf.len() == FIELD_LENGTH {
                break;
            }
            buf.push(b' ' + (bits % 95) as u8);
            bits >>= 8;
        }
    }
}

/// The state one client thread needs to choose operations and keys: its
/// own generators over the shared insert sequence.
#[derive(Debug)]
pub struct KeyChooser {
    workload: Workload,
    zipf: ScrambledZipfian,
    latest: SkewedLatest,
    inserts: Arc<InsertCounter>,
}

impl KeyChooser {
    /// For a run over `record_count` loaded records expecting up to
    /// `op_count` operations (YCSB sizes the zipfian key space for twice
    /// the expected inserts).
    pub fn new(
        workload: Workload,
        record_count: u64,
        op_count: u64,
        inserts: Arc<InsertCounter>,
    ) -> Self {
        let expected_new = (op_count as f64 * workload.mix().insert * 2.0) as u64;
        KeyChooser {
            workload,
            zipf: ScrambledZipfian::new(0, record_count.max(1) + expected_new - 1),
            latest: SkewedLatest::new(record_count.max(1)),
            inserts,
        }
    }

    /// The record number of an existing record to operate on, or `None`
    /// when no record exists yet.
    pub fn next_existing<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Option<u64> {
        let last = self.inserts.last_value()?;
        if self.workload.is_latest() {
            return Some(self.latest.next(rng, last));
        }
        // Keys beyond the newest acknowledged insert do not exist yet:
        // draw again, as YCSB does.
        loop {
            let k = self.zipf.next(rng);
            if k <= last {
                return Some(k);
            }
        }
    }

    /// The shared insert sequence.
    pub fn inserts(&self) -> &InsertCounter {
        &self.inserts
    }
}

/// The key of record `n` as bytes.
pub fn key_bytes(n: u64) -> Vec<u8> {
    build_key(n).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    #[test]
    fn mixes_sum_to_one() {
        for w in Workload::ALL {
            let m = w.mix();
            let sum = m.read + m.update + m.insert + m.scan + m.read_modify_write;
            assert!((sum - 1.0).abs() < 1e-9, "{w}");
        }
    }

    #[test]
    fn drawn_proportions_follow_the_mix() {
        let mut rng = StdRng::seed_from_u64(11);
        for w in Workload::ALL {
            let m = w.mix();
            let mut counts = [0u32; 5];
            let n = 100_000;
            for _ in 0..n {
                counts[m.choose(rng.random()).index()] += 1;
            }
            let expect = [m.read, m.update, m.insert, m.scan, m.read_modify_write];
            for (kind, (&c, &p)) in OpKind::ALL.iter().zip(counts.iter().zip(expect.iter())) {
                let got = f64::from(c) / f64::from(n);
                assert!((got - p).abs() < 0.01, "{w} {}: {got} vs {p}", kind.name());
            }
        }
    }

    #[test]
    fn workload_names_parse() {
        assert_eq!("a".parse::<Workload>().ok(), Some(Workload::A));
        assert_eq!("workloadE".parse::<Workload>().ok(), Some(Workload::E));
        assert!("g".parse::<Workload>().is_err());
        assert_eq!(Workload::F.to_string(), "f");
    }

    #[test]
    fn values_are_printable_and_sized() {
        let mut rng = StdRng::seed_from_u64(2);
        let mut v = Vec::new();
        random_value(&mut rng, &mut v);
        assert_eq!(v.len(), FIELD_LENGTH);
        assert!(v.iter().all(|b| (b' '..=b'~').contains(b)));
    }

    #[test]
    fn chooser_only_picks_acknowledged_records() {
        let mut rng = StdRng::seed_from_u64(9);
        for w in [Workload::A, Workload::D, Workload::E] {
            let inserts = Arc::new(InsertCounter::new(50));
            let mut c = KeyChooser::new(w, 50, 10_000, inserts.clone());
            for _ in 0..5_000 {
                let k = c.next_existing(&mut rng);
                assert!(matches!(k, Some(k) if k < 50), "{w}: {k:?}");
            }
            let n = inserts.next();
            inserts.acknowledge(n);
            assert!((0..2_000).all(|_| matches!(c.next_existing(&mut rng), Some(k) if k <= 50)));
        }
        let empty = Arc::new(InsertCounter::new(0));
        assert_eq!(
            KeyChooser::new(Workload::C, 0, 10, empty).next_existing(&mut rng),
            None
        );
    }
}
