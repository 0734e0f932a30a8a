//! Pre-splitting a table at creation: explicit split keys, or a number of
//! regions spread by one of HBase's split algorithms.

use bytes::Bytes;

use basalt_types::cell::escape_bytes;
use basalt_types::{Error, Result};

/// HBase's `SPLITALGO` choices for `NUMREGIONS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitAlgorithm {
    /// Keys are 8 lowercase hex digits, spread uniformly over
    /// `00000000..ffffffff` (for row keys that start with a hex hash).
    HexString,
    /// Keys are 8 decimal digits, spread over `00000000..99999999`.
    DecimalString,
    /// Keys are 8 raw bytes, spread uniformly over the whole byte range.
    Uniform,
}

impl std::str::FromStr for SplitAlgorithm {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "HexStringSplit" => Ok(SplitAlgorithm::HexString),
            "DecimalStringSplit" => Ok(SplitAlgorithm::DecimalString),
            "UniformSplit" => Ok(SplitAlgorithm::Uniform),
            other => Err(Error::invalid(format!(
                "unknown split algorithm '{other}'; expected HexStringSplit, DecimalStringSplit or UniformSplit"
            ))),
        }
    }
}

impl SplitAlgorithm {
    /// The `regions - 1` split keys that cut the algorithm's key space into
    /// `regions` equal parts: key `i` is `i * space / regions`.
    pub fn split_keys(self, regions: usize) -> Result<Vec<Bytes>> {
        if regions < 2 {
            return Err(Error::invalid(format!(
                "NUMREGIONS must be at least 2 to pre-split, got {regions}"
            )));
        }
        let (space, digits): (u128, usize) = match self {
            SplitAlgorithm::HexString => (1 << 32, 8),
            SplitAlgorithm::DecimalString => (100_000_000, 8),
            SplitAlgorithm::Uniform => (1 << 64, 8),
        };
        if regions as u128 > space {
            return Err(Error::invalid(format!(
                "NUMREGIONS {regions} is more than the split algorithm has keys"
            )));
        }
        Ok((1..regions as u128)
            .map(|i| {
                let point = i * space / regions as u128;
                match self {
                    SplitAlgorithm::HexString => Bytes::from(format!("{point:0digits$x}")),
                    SplitAlgorithm::DecimalString => Bytes::from(format!("{point:0digits$}")),
                    // `point` < 2^64 because i < regions.
                    SplitAlgorithm::Uniform => {
                        Bytes::copy_from_slice(&(point as u64).to_be_bytes())
                    }
                }
            })
            .collect())
    }
}

/// Checks explicit split keys: non-empty and strictly increasing.
pub fn validate_split_keys(keys: &[Bytes]) -> Result<()> {
    if let Some(i) = keys.iter().position(|k| k.is_empty()) {
        return Err(Error::invalid(format!("split key {i} is empty")));
    }
    for (i, pair) in keys.windows(2).enumerate() {
        if pair[0] == pair[1] {
            return Err(Error::invalid(format!(
                "duplicate split key '{}'",
                escape_bytes(&pair[0])
            )));
        }
        if pair[0] > pair[1] {
            return Err(Error::invalid(format!(
                "split keys must be sorted: '{}' (key {i}) comes after '{}' (key {})",
                escape_bytes(&pair[0]),
                escape_bytes(&pair[1]),
                i + 1
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(keys: Vec<Bytes>) -> Vec<String> {
        keys.iter().map(|k| escape_bytes(k)).collect()
    }

    #[test]
    fn hex_string_split_matches_hbase() {
        let keys = SplitAlgorithm::HexString.split_keys(4).unwrap();
        assert_eq!(strings(keys), ["40000000", "80000000", "c0000000"]);
        let keys = SplitAlgorithm::HexString.split_keys(2).unwrap();
        assert_eq!(strings(keys), ["80000000"]);
    }

    #[test]
    fn decimal_string_split_spreads_over_eight_digits() {
        let keys = SplitAlgorithm::DecimalString.split_keys(4).unwrap();
        assert_eq!(strings(keys), ["25000000", "50000000", "75000000"]);
        let keys = SplitAlgorithm::DecimalString.split_keys(3).unwrap();
        assert_eq!(strings(keys), ["33333333", "66666666"]);
    }

    #[test]
    fn uniform_split_spreads_raw_bytes() {
        let keys = SplitAlgorithm::Uniform.split_keys(4).unwrap();
        assert_eq!(
            strings(keys),
            [
                "@\\x00\\x00\\x00\\x00\\x00\\x00\\x00",
                "\\x80\\x00\\x00\\x00\\x00\\x00\\x00\\x00",
                "\\xC0\\x00\\x00\\x00\\x00\\x00\\x00\\x00"
            ]
        );
    }

    #[test]
    fn every_algorithm_gives_sorted_distinct_keys() {
        for algo in [
            SplitAlgorithm::HexString,
            SplitAlgorithm::DecimalString,
            SplitAlgorithm::Uniform,
        ] {
            for regions in [2, 3, 7, 16, 100] {
                let keys = algo.split_keys(regions).unwrap();
                assert_eq!(keys.len(), regions - 1);
                validate_split_keys(&keys).unwrap();
            }
        }
    }

    #[test]
    fn bad_requests_are_clear_errors() {
        assert!(SplitAlgorithm::HexString
            .split_keys(1)
            .unwrap_err()
            .to_string()
            .contains("at least 2"));
        assert!("NoSuchSplit".parse::<SplitAlgorithm>().is_err());
        assert_eq!(
            "HexStringSplit".parse::<SplitAlgorithm>().unwrap(),
            SplitAlgorithm::HexString
        );
        let unsorted = [Bytes::from_static(b"b"), Bytes::from_static(b"a")];
        assert!(validate_split_keys(&unsorted)
            .unwrap_err()
            .to_string()
            .contains("must be sorted"));
        let duplicate = [Bytes::from_static(b"a"), Bytes::from_static(b"a")];
        assert!(validate_split_keys(&duplicate)
            .unwrap_err()
            .to_string()
            .contains("duplicate split key"));
        let empty = [Bytes::new()];
        assert!(validate_split_keys(&empty)
            .unwrap_err()
            .to_string()
            .contains("empty"));
    }
}
