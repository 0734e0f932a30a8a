//! The row filter of `/` and `--filter`: terms separated by spaces, every
//! one of which a row must match.
//!
//! - `COLUMN==VALUE`: the value shown equals VALUE;
//! - `COLUMN=VALUE`: the value shown contains VALUE (numbers: equals);
//! - `COLUMN<VALUE`, `<=`, `>`, `>=`: numbers compare as numbers (sizes
//!   take units, `SF>1.5MB`; `%COMP>50`), text as text (a key, a time);
//! - `!` before a term negates it (`!TABLE==audit`);
//! - a bare word matches a row where any column shows it, in any case.
//!
//! A term on a column the mode does not show is ignored, so one filter
//! carries across modes (`TABLE==t` in region and table mode).

use std::cmp::Ordering;

use crate::format;
use crate::model::{Field, Record, Value};

/// A parsed filter; the default matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    text: String,
    terms: Vec<Term>,
}

#[derive(Debug, Clone, PartialEq)]
struct Term {
    negated: bool,
    test: Test,
}

#[derive(Debug, Clone, PartialEq)]
enum Test {
    /// A bare word, lower-cased.
    Anywhere(String),
    /// A column compared with a value.
    Column {
        field: Field,
        op: Op,
        /// The value as typed.
        text: String,
        /// The value as a number, for a numeric column.
        number: Option<f64>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Equals,
    Contains,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

impl Op {
    fn holds(self, order: Ordering) -> bool {
        match self {
            Op::Equals | Op::Contains => order == Ordering::Equal,
            Op::Less => order == Ordering::Less,
            Op::LessOrEqual => order != Ordering::Greater,
            Op::Greater => order == Ordering::Greater,
            Op::GreaterOrEqual => order != Ordering::Less,
        }
    }
}

impl Filter {
    /// Parses a filter; the error names the term that is wrong and why.
    pub fn parse(text: &str) -> Result<Filter, String> {
        let terms = text
            .split_whitespace()
            .map(parse_term)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Filter {
            text: text.trim().to_string(),
            terms,
        })
    }

    /// The filter as typed.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// True when it keeps every row.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether a row passes every term.
    pub fn matches(&self, record: &Record) -> bool {
        self.terms.iter().all(|t| t.matches(record) != t.negated)
    }
}

fn parse_term(term: &str) -> Result<Term, String> {
    let (negated, body) = match term.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, term),
    };
    let Some(at) = body.find(['=', '<', '>']) else {
        if body.is_empty() {
            return Err(format!("{term:?}: nothing after '!'"));
        }
        return Ok(Term {
            negated,
            test: Test::Anywhere(body.to_lowercase()),
        });
    };
    let (name, rest) = body.split_at(at);
    let (op, value) = [
        ("==", Op::Equals),
        ("<=", Op::LessOrEqual),
        (">=", Op::GreaterOrEqual),
        ("=", Op::Contains),
        ("<", Op::Less),
        (">", Op::Greater),
    ]
    .into_iter()
    .find_map(|(sign, op)| rest.strip_prefix(sign).map(|v| (op, v)))
    .ok_or_else(|| format!("{term:?}: no operator"))?;
    let field = Field::parse(name).ok_or_else(|| {
        let known: Vec<&str> = Field::ALL.iter().map(|f| f.header()).collect();
        format!(
            "{term:?}: unknown column {name:?}; the columns are {}",
            known.join(" ")
        )
    })?;
    let number =
        if field.is_numeric() {
            let parsed = match field {
                Field::StoreFileSize | Field::Memstore => format::parse_size(value),
                Field::CompactionProgress => value.trim_end_matches('%').parse().ok(),
                _ => value.parse().ok(),
            };
            Some(parsed.ok_or_else(|| {
                format!("{term:?}: {} takes a number, not {value:?}", field.header())
            })?)
        } else {
            None
        };
    Ok(Term {
        negated,
        test: Test::Column {
            field,
            op,
            text: value.to_string(),
            number,
        },
    })
}

impl Term {
    fn matches(&self, record: &Record) -> bool {
        match &self.test {
            Test::Anywhere(word) => record
                .values
                .iter()
                .any(|(_, v)| v.display().to_lowercase().contains(word.as_str())),
            Test::Column {
                field,
                op,
                text,
                number,
            } => {
                // A column this mode lacks: the term does not apply (and a
                // negated one must not exclude the row either).
                let Some(value) = record.get(*field) else {
                    return !self.negated;
                };
                compare(value, *op, text, *number)
            }
        }
    }
}

fn compare(value: &Value, op: Op, text: &str, number: Option<f64>) -> bool {
    if let (Some(have), Some(want)) = (value.number(), number) {
        return op.holds(have.total_cmp(&want));
    }
    let shown = value.display();
    match op {
        Op::Contains => shown.contains(text),
        _ => op.holds(shown.as_str().cmp(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn row(table: &str, requests: f64, store_bytes: u64, key: &str) -> Record {
        Record {
            values: vec![
                (Field::Table, Value::Text(table.into())),
                (Field::Requests, Value::Rate(requests)),
                (Field::StoreFileSize, Value::Size(store_bytes)),
                (Field::CompactionProgress, Value::Percent(Some(0.6))),
                (
                    Field::StartKey,
                    Value::Key(Bytes::copy_from_slice(key.as_bytes())),
                ),
            ],
            drill: None,
        }
    }

    fn keeps(filter: &str, record: &Record) -> bool {
        Filter::parse(filter).unwrap().matches(record)
    }

    #[test]
    fn equals_is_exact_and_single_equals_contains() {
        let r = row("orders", 1.0, 0, "k");
        assert!(keeps("TABLE==orders", &r));
        assert!(!keeps("TABLE==order", &r));
        assert!(keeps("TABLE=rde", &r));
        assert!(keeps("table=ord", &r));
        assert!(!keeps("!TABLE==orders", &r));
    }

    #[test]
    fn numbers_compare_as_numbers_and_sizes_take_units() {
        let r = row("t", 120.0, 3 << 20, "k");
        assert!(keeps("#REQ/S>100", &r));
        assert!(!keeps("#REQ/S<100", &r));
        assert!(keeps("#REQ/S>=120", &r));
        assert!(keeps("req/s==120", &r));
        assert!(keeps("SF>2MB", &r));
        assert!(!keeps("SF>3MB", &r));
        assert!(keeps("SF<=3MB", &r));
        assert!(keeps("%COMP>50", &r));
        assert!(keeps("%COMP<=60%", &r));
    }

    #[test]
    fn every_term_must_match_and_a_bare_word_matches_any_column_in_any_case() {
        let r = row("Orders", 5.0, 0, "user42");
        assert!(keeps("orders", &r));
        assert!(keeps("USER4", &r));
        assert!(keeps("orders #REQ/S>1", &r));
        assert!(!keeps("orders #REQ/S>10", &r));
        assert!(keeps("SKEY>user1", &r));
        assert!(keeps("", &r));
    }

    #[test]
    fn a_term_on_a_column_the_mode_lacks_is_ignored_negated_or_not() {
        let r = row("t", 1.0, 0, "k");
        assert!(keeps("RS==somewhere", &r));
        assert!(keeps("!RS==somewhere", &r));
    }

    #[test]
    fn mistakes_are_named() {
        let e = Filter::parse("NOPE==1").unwrap_err();
        assert!(e.contains("unknown column \"NOPE\""), "{e}");
        let e = Filter::parse("#REQ/S>lots").unwrap_err();
        assert!(e.contains("#REQ/S takes a number"), "{e}");
        assert!(Filter::parse("!").is_err());
        assert!(Filter::parse("   ").unwrap().is_empty());
        assert_eq!(Filter::parse(" a  b ").unwrap().text(), "a  b");
    }
}
