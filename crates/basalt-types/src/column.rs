//! Column names as HBase's text interfaces write them: `family` or
//! `family:qualifier`.
//!
//! Thrift1 clients, the shell and the admin protocol all name columns this
//! way, so the rule lives here once: the name splits at the **first** `:`
//! (a family name never holds one, a qualifier may), a name without a colon
//! is the whole family, and `family:` is the family's empty qualifier.

use bytes::Bytes;

use crate::query::{Get, Scan};

/// A parsed column name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Column {
    /// `family`: every column of the family.
    Family(Bytes),
    /// `family:qualifier` (the qualifier may be empty: `family:`).
    Qualified(Bytes, Bytes),
}

/// Splits a column name at its first `:`; see the [module](self) docs.
///
/// The parts share `column`'s buffer (no copy).
pub fn parse_column(column: &Bytes) -> Column {
    match column.iter().position(|&b| b == b':') {
        None => Column::Family(column.clone()),
        Some(i) => Column::Qualified(column.slice(..i), column.slice(i + 1..)),
    }
}

impl Column {
    /// [`parse_column`] of a borrowed name (copies it once).
    pub fn parse(column: &[u8]) -> Column {
        parse_column(&Bytes::copy_from_slice(column))
    }

    /// The family.
    pub fn family(&self) -> &Bytes {
        match self {
            Column::Family(f) | Column::Qualified(f, _) => f,
        }
    }

    /// For writes, which need a qualifier: a bare family means its empty
    /// qualifier, as in HBase's shell.
    pub fn family_qualifier(self) -> (Bytes, Bytes) {
        match self {
            Column::Family(f) => (f, Bytes::new()),
            Column::Qualified(f, q) => (f, q),
        }
    }

    /// Restricts a get to this column (or family).
    pub fn select_in_get(self, get: Get) -> Get {
        match self {
            Column::Family(f) => get.family(f),
            Column::Qualified(f, q) => get.column(f, q),
        }
    }

    /// Restricts a scan to this column (or family).
    pub fn select_in_scan(self, scan: Scan) -> Scan {
        match self {
            Column::Family(f) => scan.family(f),
            Column::Qualified(f, q) => scan.column(f, q),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Column {
        parse_column(&Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn a_name_without_a_colon_is_the_whole_family() {
        assert_eq!(parse("cf"), Column::Family(Bytes::from_static(b"cf")));
    }

    #[test]
    fn a_trailing_colon_is_the_empty_qualifier() {
        assert_eq!(
            parse("cf:"),
            Column::Qualified(Bytes::from_static(b"cf"), Bytes::new())
        );
    }

    #[test]
    fn the_name_splits_at_the_first_colon_only() {
        assert_eq!(
            parse("cf:a:b"),
            Column::Qualified(Bytes::from_static(b"cf"), Bytes::from_static(b"a:b"))
        );
        assert_eq!(Column::parse(b"cf:a:b"), parse("cf:a:b"));
    }

    #[test]
    fn writes_to_a_bare_family_use_the_empty_qualifier() {
        assert_eq!(
            parse("cf").family_qualifier(),
            (Bytes::from_static(b"cf"), Bytes::new())
        );
        assert_eq!(parse("cf:q").family(), &Bytes::from_static(b"cf"));
    }

    #[test]
    fn selecting_a_family_or_column_restricts_the_scan() {
        let scan = parse("f:q").select_in_scan(parse("g").select_in_scan(Scan::new()));
        assert_eq!(scan.columns.families().len(), 2);
    }
}
