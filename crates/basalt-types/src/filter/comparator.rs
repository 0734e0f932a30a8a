//! The four comparators of the filter language.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use regex::bytes::Regex;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// What a filter or check-and-mutate compares a cell's bytes with.
///
/// Serialised by what it holds (a regular expression as its pattern), and
/// decoding compiles the pattern again: an invalid one fails, naming it.
#[derive(Clone, Serialize, Deserialize)]
#[serde(into = "ComparatorFields", try_from = "ComparatorFields")]
pub enum Comparator {
    /// Lexicographic comparison of unsigned bytes (`binary:`).
    Binary(Bytes),
    /// Lexicographic comparison with only the first `len(value)` bytes of the
    /// cell (`binaryprefix:`).
    BinaryPrefix(Bytes),
    /// Matches when the regular expression finds a match anywhere in the
    /// bytes (`regexstring:`). Only `=` and `!=` make sense with it.
    Regex(Arc<Regex>),
    /// Case-insensitive "contains" (`substring:`); holds the lower-cased
    /// needle. Only `=` and `!=` make sense with it.
    Substring(String),
}

impl Comparator {
    /// A binary comparator.
    pub fn binary(value: impl Into<Bytes>) -> Self {
        Comparator::Binary(value.into())
    }

    /// A regex comparator; an invalid pattern is an error.
    pub fn regex(pattern: &str) -> Result<Self> {
        Regex::new(pattern)
            .map(|r| Comparator::Regex(Arc::new(r)))
            .map_err(|e| Error::invalid(format!("invalid regular expression '{pattern}': {e}")))
    }

    /// A case-insensitive substring comparator.
    pub fn substring(needle: &str) -> Self {
        Comparator::Substring(needle.to_lowercase())
    }

    /// True when the comparator's value is empty. HBase's check-and-mutate
    /// then tests for an absent or empty cell instead of comparing (its
    /// `valueIsNull`).
    pub fn value_is_empty(&self) -> bool {
        match self {
            Comparator::Binary(v) | Comparator::BinaryPrefix(v) => v.is_empty(),
            Comparator::Regex(r) => r.as_str().is_empty(),
            Comparator::Substring(needle) => needle.is_empty(),
        }
    }

    /// True for the comparators that only answer "matches or not".
    pub fn is_match_only(&self) -> bool {
        matches!(self, Comparator::Regex(_) | Comparator::Substring(_))
    }

    /// HBase's `compareTo`: the comparator's value compared with `cell`.
    /// Match-only comparators give `Equal` on a match and `Greater` otherwise.
    pub fn compare_to(&self, cell: &[u8]) -> Ordering {
        match self {
            Comparator::Binary(v) => v[..].cmp(cell),
            Comparator::BinaryPrefix(v) => {
                let n = v.len().min(cell.len());
                v[..].cmp(&cell[..n])
            }
            Comparator::Regex(r) => {
                if r.is_match(cell) {
                    Ordering::Equal
                } else {
                    Ordering::Greater
                }
            }
            Comparator::Substring(needle) => {
                if String::from_utf8_lossy(cell)
                    .to_lowercase()
                    .contains(needle.as_str())
                {
                    Ordering::Equal
                } else {
                    Ordering::Greater
                }
            }
        }
    }

    /// The filter rule: does `cell op comparator` hold?
    pub fn cell_passes(&self, op: super::CompareOp, cell: &[u8]) -> bool {
        op.holds(self.compare_to(cell).reverse())
    }

    /// The comparator as the filter language writes it, for messages.
    pub fn describe(&self) -> String {
        match self {
            Comparator::Binary(v) => format!("binary:{}", crate::cell::escape_bytes(v)),
            Comparator::BinaryPrefix(v) => {
                format!("binaryprefix:{}", crate::cell::escape_bytes(v))
            }
            Comparator::Regex(r) => format!("regexstring:{}", r.as_str()),
            Comparator::Substring(s) => format!("substring:{s}"),
        }
    }
}

/// A comparator as it travels: the regular expression as its text.
#[derive(Serialize, Deserialize)]
enum ComparatorFields {
    Binary(Bytes),
    BinaryPrefix(Bytes),
    Regex(String),
    Substring(String),
}

impl From<Comparator> for ComparatorFields {
    fn from(c: Comparator) -> Self {
        match c {
            Comparator::Binary(v) => ComparatorFields::Binary(v),
            Comparator::BinaryPrefix(v) => ComparatorFields::BinaryPrefix(v),
            Comparator::Regex(r) => ComparatorFields::Regex(r.as_str().to_string()),
            Comparator::Substring(s) => ComparatorFields::Substring(s),
        }
    }
}

impl TryFrom<ComparatorFields> for Comparator {
    type Error = Error;

    fn try_from(fields: ComparatorFields) -> Result<Comparator> {
        Ok(match fields {
            ComparatorFields::Binary(v) => Comparator::Binary(v),
            ComparatorFields::BinaryPrefix(v) => Comparator::BinaryPrefix(v),
            ComparatorFields::Regex(pattern) => Comparator::regex(&pattern)?,
            // Kept as sent: the needle was lower-cased when it was built.
            ComparatorFields::Substring(s) => Comparator::Substring(s),
        })
    }
}

impl PartialEq for Comparator {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Comparator::Binary(a), Comparator::Binary(b)) => a == b,
            (Comparator::BinaryPrefix(a), Comparator::BinaryPrefix(b)) => a == b,
            (Comparator::Regex(a), Comparator::Regex(b)) => a.as_str() == b.as_str(),
            (Comparator::Substring(a), Comparator::Substring(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Comparator {}

impl fmt::Debug for Comparator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_comparator_with_no_value_counts_as_empty() {
        assert!(Comparator::binary("").value_is_empty());
        assert!(Comparator::substring("").value_is_empty());
        assert!(!Comparator::binary("x").value_is_empty());
        assert!(!Comparator::BinaryPrefix(Bytes::from_static(b"x")).value_is_empty());
    }
    use crate::filter::CompareOp;

    #[test]
    fn binary_filter_direction_is_cell_op_value() {
        let c = Comparator::binary("5");
        assert!(c.cell_passes(CompareOp::Less, b"4"));
        assert!(!c.cell_passes(CompareOp::Less, b"5"));
        assert!(c.cell_passes(CompareOp::GreaterOrEqual, b"5"));
        assert!(c.cell_passes(CompareOp::NotEqual, b"6"));
    }

    #[test]
    fn binary_prefix_compares_only_the_prefix() {
        let c = Comparator::BinaryPrefix(Bytes::from_static(b"ab"));
        assert!(c.cell_passes(CompareOp::Equal, b"abc"));
        assert!(c.cell_passes(CompareOp::Greater, b"ac"));
        assert!(c.cell_passes(CompareOp::Less, b"a"));
    }

    #[test]
    fn regex_finds_anywhere_and_substring_ignores_case() {
        let r = Comparator::regex("b+c").unwrap();
        assert!(r.cell_passes(CompareOp::Equal, b"abbbcd"));
        assert!(r.cell_passes(CompareOp::NotEqual, b"xyz"));
        let s = Comparator::substring("HeLLo");
        assert!(s.cell_passes(CompareOp::Equal, b"say hello!"));
        assert!(!s.cell_passes(CompareOp::Equal, b"bye"));
        assert!(Comparator::regex("(").is_err());
    }
}
