//! Filters and comparators arriving as Java class name + serialized
//! message, read into Basalt's declarative `Filter` and `Comparator`.
//!
//! Classes are `org.apache.hadoop.hbase.filter.<Name>`:
//!
//! | HBase class                              | Basalt                                   |
//! |------------------------------------------|------------------------------------------|
//! | `KeyOnlyFilter`                          | `KeyOnly { length_as_value }`            |
//! | `FirstKeyOnlyFilter`                     | `FirstKeyOnly`                           |
//! | `PrefixFilter`                           | `Prefix`                                 |
//! | `ColumnPrefixFilter`                     | `ColumnPrefix`                           |
//! | `MultipleColumnPrefixFilter`             | `MultipleColumnPrefix`                   |
//! | `ColumnCountGetFilter`                   | `ColumnCountGet`                         |
//! | `PageFilter`                             | `Page`                                   |
//! | `ColumnPaginationFilter` (by offset)     | `ColumnPagination`                       |
//! | `InclusiveStopFilter`                    | `InclusiveStop`                          |
//! | `TimestampsFilter`                       | `Timestamps` (`can_hint` is only speed)  |
//! | `RowFilter`, `FamilyFilter`, `QualifierFilter`, `ValueFilter` | `Row`, `Family`, `Qualifier`, `Value` |
//! | `ColumnRangeFilter`                      | `ColumnRange`                            |
//! | `SingleColumnValueFilter`                | `SingleColumnValue`                      |
//! | `SingleColumnValueExcludeFilter`         | `SingleColumnValueExclude`               |
//! | `DependentColumnFilter`                  | `DependentColumn`                        |
//! | `ColumnValueFilter`                      | `ColumnValue`                            |
//! | `FilterList`                             | `List`                                   |
//! | `SkipFilter`, `WhileMatchFilter`         | `Skip`, `While`                          |
//! | `FilterWrapper`                          | the wrapped filter                       |
//! | `MultiRowRangeFilter`                    | `List(MustPassOne)` of `Row` bounds      |
//! | `FuzzyRowFilter`                         | `FuzzyRow` (either mask form)            |
//!
//! Refused with a `DoNotRetryIOException` naming the class:
//! `RandomRowFilter`, `FirstKeyValueMatchingQualifiersFilter`,
//! `FilterAllFilter`, a `ColumnPaginationFilter` paging from a qualifier
//! (`column_offset`), and any class Basalt does not know (custom filters).
//!
//! Comparators: `BinaryComparator` → `Binary`, `BinaryPrefixComparator` →
//! `BinaryPrefix`, `RegexStringComparator` → `Regex` (Java's pattern flags
//! as inline flags), `SubstringComparator` → `Substring`, `NullComparator`
//! → `None`. `LongComparator`, `BitComparator`, `BigDecimalComparator` and
//! `BinaryComponentComparator` are refused.
//!
//! Two HBase comparisons have no operator or comparator of their own in
//! Basalt but a constant outcome, which Basalt expresses exactly:
//! `NO_OP` fails every cell, and `NullComparator` compares as greater than
//! every (never null) cell, so `LESS`, `LESS_OR_EQUAL` and `NOT_EQUAL` pass
//! every cell and the other operators none. Both become the filter's own
//! comparison against an empty `BinaryPrefix` (which every cell equals)
//! with `=` (always passes) or `!=` (never passes), so the filter keeps
//! its kind and its row-, column- or cell-level behaviour.

use std::fmt::Display;
use std::sync::Arc;

use bytes::Bytes;
use prost::Message;

use basalt::{Comparator, CompareOp, Filter, ListOperator, SingleColumnValue};

use crate::error::RpcError;
use crate::proto;
use crate::proto::filter as pb;
use crate::proto::hbase::CompareType;

/// The Java package of every filter and comparator Basalt reads.
pub const PACKAGE: &str = "org.apache.hadoop.hbase.filter.";

/// Deepest nesting of lists and wrappers accepted. Decoding recurses once
/// per level, and so do building, comparing and dropping the resulting
/// [`Filter`]: an untrusted request must not exhaust a thread's stack.
pub const MAX_DEPTH: usize = 64;

/// Most filters one request may hold, wrappers and a `MultiRowRangeFilter`'s
/// ranges included: every row of a scan runs through all of them.
pub const MAX_FILTERS: usize = 10_000;

/// Longest piece of a client's text (a class name, a pattern) quoted back
/// in an error.
const MAX_SHOWN_CHARS: usize = 100;

/// Reads a filter; a class Basalt does not have is a `DoNotRetryIOException`
/// naming it.
pub fn decode_filter(filter: &proto::filter::Filter) -> Result<Filter, RpcError> {
    // One copy of the outermost bytes; nested filters share it.
    let bytes = Bytes::copy_from_slice(filter.serialized_filter.as_deref().unwrap_or_default());
    let mut budget = Budget { left: MAX_FILTERS };
    decode_at(&filter.name, bytes, 1, &mut budget)
}

/// Reads a comparator; `None` for `NullComparator` (the column must be
/// absent or empty, as HBase's check-and-mutate reads it).
pub fn decode_comparator(
    comparator: &proto::filter::Comparator,
) -> Result<Option<Comparator>, RpcError> {
    let name = comparator.name.as_str();
    let bytes = comparator
        .serialized_comparator
        .as_deref()
        .unwrap_or_default();
    let Some(short) = name.strip_prefix(PACKAGE) else {
        return Err(unknown("comparator", name));
    };
    match short {
        "BinaryComparator" => {
            let message: pb::BinaryComparator = decode(name, bytes)?;
            Ok(Some(Comparator::Binary(comparable(
                name,
                message.comparable,
            )?)))
        }
        "BinaryPrefixComparator" => {
            let message: pb::BinaryPrefixComparator = decode(name, bytes)?;
            Ok(Some(Comparator::BinaryPrefix(comparable(
                name,
                message.comparable,
            )?)))
        }
        "NullComparator" => {
            let _: pb::NullComparator = decode(name, bytes)?;
            Ok(None)
        }
        "RegexStringComparator" => regex(name, decode(name, bytes)?).map(Some),
        "SubstringComparator" => {
            let message: pb::SubstringComparator = decode(name, bytes)?;
            Ok(Some(Comparator::substring(&message.substr)))
        }
        "LongComparator" | "BigDecimalComparator" => Err(not_supported(
            name,
            "Basalt compares bytes, not decoded numbers",
        )),
        "BitComparator" => Err(not_supported(name, "Basalt has no bitwise comparison")),
        "BinaryComponentComparator" => Err(not_supported(
            name,
            "Basalt has no comparison of a slice at an offset",
        )),
        _ => Err(unknown("comparator", name)),
    }
}

// ---------------------------------------------------------------------------
// Filters
// ---------------------------------------------------------------------------

/// What is left of [`MAX_FILTERS`] for the rest of one request.
struct Budget {
    left: usize,
}

impl Budget {
    fn take(&mut self, n: usize, name: &str) -> Result<(), RpcError> {
        match self.left.checked_sub(n) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => Err(RpcError::do_not_retry(format!(
                "{name}: more than {MAX_FILTERS} filters in one request"
            ))),
        }
    }
}

/// Reads filter `name` from `bytes`, `depth` levels deep.
fn decode_at(
    name: &str,
    bytes: Bytes,
    depth: usize,
    budget: &mut Budget,
) -> Result<Filter, RpcError> {
    if depth > MAX_DEPTH {
        return Err(RpcError::do_not_retry(format!(
            "{name}: filters nested more than {MAX_DEPTH} levels deep"
        )));
    }
    budget.take(1, name)?;
    let Some(short) = name.strip_prefix(PACKAGE) else {
        return Err(unknown("filter", name));
    };
    let filter = match short {
        "KeyOnlyFilter" => {
            let m: pb::KeyOnlyFilter = decode(name, bytes)?;
            Filter::KeyOnly {
                length_as_value: m.len_as_val,
            }
        }
        "FirstKeyOnlyFilter" => {
            let _: pb::FirstKeyOnlyFilter = decode(name, bytes)?;
            Filter::FirstKeyOnly
        }
        "PrefixFilter" => {
            let m: pb::PrefixFilter = decode(name, bytes)?;
            // HBase keeps no row at all without a prefix; no client sends
            // one on purpose, so refusing is clearer than an empty answer.
            Filter::Prefix(m.prefix.ok_or_else(|| missing(name, "prefix"))?)
        }
        "ColumnPrefixFilter" => {
            let m: pb::ColumnPrefixFilter = decode(name, bytes)?;
            Filter::ColumnPrefix(m.prefix)
        }
        "MultipleColumnPrefixFilter" => {
            let m: pb::MultipleColumnPrefixFilter = decode(name, bytes)?;
            Filter::MultipleColumnPrefix(m.sorted_prefixes)
        }
        "ColumnCountGetFilter" => {
            let m: pb::ColumnCountGetFilter = decode(name, bytes)?;
            Filter::ColumnCountGet(non_negative(name, "limit", m.limit)?)
        }
        "PageFilter" => {
            let m: pb::PageFilter = decode(name, bytes)?;
            Filter::Page(non_negative(name, "page_size", m.page_size)?)
        }
        "ColumnPaginationFilter" => {
            let m: pb::ColumnPaginationFilter = decode(name, bytes)?;
            if m.column_offset.is_some() {
                return Err(not_supported(
                    name,
                    "paging from a qualifier (column_offset) is not available in Basalt; \
                     page by column count (offset) instead",
                ));
            }
            Filter::ColumnPagination {
                limit: non_negative(name, "limit", m.limit)?,
                offset: non_negative(name, "offset", m.offset.unwrap_or(0))?,
            }
        }
        "InclusiveStopFilter" => {
            let m: pb::InclusiveStopFilter = decode(name, bytes)?;
            Filter::InclusiveStop(
                m.stop_row_key
                    .ok_or_else(|| missing(name, "stop_row_key"))?,
            )
        }
        "TimestampsFilter" => {
            let m: pb::TimestampsFilter = decode(name, bytes)?;
            if let Some(t) = m.timestamps.iter().find(|t| **t < 0) {
                return Err(RpcError::do_not_retry(format!(
                    "{name}: timestamps must not be negative, found {t}"
                )));
            }
            Filter::Timestamps(m.timestamps)
        }
        "RowFilter" => {
            let m: pb::RowFilter = decode(name, bytes)?;
            let (op, c) = compare_filter(name, m.compare_filter)?;
            Filter::Row(op, c)
        }
        "FamilyFilter" => {
            let m: pb::FamilyFilter = decode(name, bytes)?;
            let (op, c) = compare_filter(name, m.compare_filter)?;
            Filter::Family(op, c)
        }
        "QualifierFilter" => {
            let m: pb::QualifierFilter = decode(name, bytes)?;
            let (op, c) = compare_filter(name, m.compare_filter)?;
            Filter::Qualifier(op, c)
        }
        "ValueFilter" => {
            let m: pb::ValueFilter = decode(name, bytes)?;
            let (op, c) = compare_filter(name, m.compare_filter)?;
            Filter::Value(op, c)
        }
        "ColumnRangeFilter" => {
            let m: pb::ColumnRangeFilter = decode(name, bytes)?;
            // An absent bound is unbounded; a present empty one is kept as
            // HBase keeps it (the filter language alone reads '' as absent).
            Filter::ColumnRange {
                min: m.min_column,
                min_inclusive: m.min_column_inclusive.unwrap_or(false),
                max: m.max_column,
                max_inclusive: m.max_column_inclusive.unwrap_or(false),
            }
        }
        "SingleColumnValueFilter" => {
            let m: pb::SingleColumnValueFilter = decode(name, bytes)?;
            Filter::SingleColumnValue(single_column_value(name, m)?)
        }
        "SingleColumnValueExcludeFilter" => {
            let m: pb::SingleColumnValueExcludeFilter = decode(name, bytes)?;
            let inner = m
                .single_column_value_filter
                .ok_or_else(|| missing(name, "single_column_value_filter"))?;
            Filter::SingleColumnValueExclude(single_column_value(name, inner)?)
        }
        "DependentColumnFilter" => {
            let m: pb::DependentColumnFilter = decode(name, bytes)?;
            let compare = m
                .compare_filter
                .ok_or_else(|| missing(name, "compare_filter"))?;
            let op = compare_type(name, "compare_filter.compare_op", compare.compare_op)?;
            // Without a comparator HBase tests no value, whatever the
            // operator (its two- and three-argument forms send NO_OP).
            let value_test = match compare.comparator {
                None => None,
                Some(c) => Some(test(name, "compare_filter.comparator", op, &c)?),
            };
            Filter::DependentColumn {
                // HBase matches an absent family or qualifier as empty.
                family: m.column_family.unwrap_or_default(),
                qualifier: m.column_qualifier.unwrap_or_default(),
                drop_dependent_column: m.drop_dependent_column.unwrap_or(false),
                value_test,
            }
        }
        "ColumnValueFilter" => {
            let m: pb::ColumnValueFilter = decode(name, bytes)?;
            let op = compare_type(name, "compare_op", m.compare_op)?;
            let c = m.comparator.ok_or_else(|| missing(name, "comparator"))?;
            let (op, comparator) = test(name, "comparator", op, &c)?;
            Filter::ColumnValue {
                family: m.family,
                qualifier: m.qualifier,
                op,
                comparator,
            }
        }
        "FilterList" => {
            let m: pb::FilterList = decode(name, bytes)?;
            let operator = match pb::FilterListOperator::try_from(m.operator) {
                Ok(pb::FilterListOperator::MustPassAll) => ListOperator::MustPassAll,
                Ok(pb::FilterListOperator::MustPassOne) => ListOperator::MustPassOne,
                Err(_) => {
                    return Err(RpcError::do_not_retry(format!(
                        "{name}: operator {} is neither MUST_PASS_ALL (1) nor MUST_PASS_ONE (2)",
                        m.operator
                    )))
                }
            };
            // Refuse an oversized list before decoding any member of it.
            if m.filters.len() > budget.left {
                return Err(RpcError::do_not_retry(format!(
                    "{name}: more than {MAX_FILTERS} filters in one request"
                )));
            }
            let mut members = Vec::with_capacity(m.filters.len());
            for (i, member) in m.filters.into_iter().enumerate() {
                members.push(nested(name, &format!("filter {i}"), member, depth, budget)?);
            }
            Filter::List(operator, members)
        }
        "FilterWrapper" => {
            let m: pb::FilterWrapper = decode(name, bytes)?;
            // The wrapper only adapts old filter interfaces inside HBase's
            // server: the wrapped filter alone has the same effect.
            let inner = m.filter.ok_or_else(|| missing(name, "filter"))?;
            nested(name, "filter", inner, depth, budget)?
        }
        "SkipFilter" => {
            let m: pb::SkipFilter = decode(name, bytes)?;
            let inner = m.filter.ok_or_else(|| missing(name, "filter"))?;
            Filter::Skip(Box::new(nested(name, "filter", inner, depth, budget)?))
        }
        "WhileMatchFilter" => {
            let m: pb::WhileMatchFilter = decode(name, bytes)?;
            let inner = m.filter.ok_or_else(|| missing(name, "filter"))?;
            Filter::While(Box::new(nested(name, "filter", inner, depth, budget)?))
        }
        "MultiRowRangeFilter" => {
            let m: pb::MultiRowRangeFilter = decode(name, bytes)?;
            budget.take(m.row_range_list.len(), name)?;
            multi_row_range(name, m.row_range_list)?
        }
        "FuzzyRowFilter" => {
            let m: pb::FuzzyRowFilter = decode(name, bytes)?;
            budget.take(m.fuzzy_keys_data.len(), name)?;
            let mut keys = Vec::with_capacity(m.fuzzy_keys_data.len());
            for (i, pair) in m.fuzzy_keys_data.into_iter().enumerate() {
                let key =
                    basalt::FuzzyKey::from_hbase_mask(pair.first, &pair.second).map_err(|e| {
                        RpcError::do_not_retry(format!("{name}: fuzzy_keys_data {i}: {e}"))
                    })?;
                keys.push(key);
            }
            Filter::FuzzyRow(keys)
        }
        "RandomRowFilter" => return Err(not_supported(name, "Basalt has no random row sampling")),
        "FirstKeyValueMatchingQualifiersFilter" => {
            return Err(not_supported(
                name,
                "Basalt has no equivalent (HBase deprecated it; use FirstKeyOnlyFilter)",
            ))
        }
        "FilterAllFilter" => {
            return Err(not_supported(
                name,
                "Basalt has no filter that drops every row",
            ))
        }
        _ => return Err(unknown("filter", name)),
    };
    Ok(filter)
}

/// Reads a list member or a wrapped filter one level below `parent`; its
/// errors say where it sits.
fn nested(
    parent: &str,
    field: &str,
    filter: pb::NestedFilter,
    depth: usize,
    budget: &mut Budget,
) -> Result<Filter, RpcError> {
    let bytes = filter.serialized_filter.unwrap_or_default();
    decode_at(&filter.name, bytes, depth + 1, budget)
        .map_err(|e| within(e, format!("{parent} {field}")))
}

/// The operator and comparator of a Row/Family/Qualifier/ValueFilter.
fn compare_filter(
    name: &str,
    compare: Option<pb::CompareFilter>,
) -> Result<(CompareOp, Comparator), RpcError> {
    let compare = compare.ok_or_else(|| missing(name, "compare_filter"))?;
    let op = compare_type(name, "compare_filter.compare_op", compare.compare_op)?;
    if op == CompareType::NoOp {
        // HBase fails such a comparison before it reads the comparator.
        return Ok(constant(false));
    }
    let c = compare
        .comparator
        .ok_or_else(|| missing(name, "compare_filter.comparator"))?;
    test(name, "compare_filter.comparator", op, &c)
}

/// The fields of a SingleColumnValue(Exclude)Filter.
fn single_column_value(
    name: &str,
    m: pb::SingleColumnValueFilter,
) -> Result<SingleColumnValue, RpcError> {
    let op = compare_type(name, "compare_op", m.compare_op)?;
    if op == CompareType::NoOp {
        // HBase accepts it and then fails the scan ("Unknown Compare op").
        return Err(RpcError::do_not_retry(format!(
            "{name}: compare_op NO_OP cannot test a column value"
        )));
    }
    let c = m.comparator.ok_or_else(|| missing(name, "comparator"))?;
    let (op, comparator) = test(name, "comparator", op, &c)?;
    Ok(SingleColumnValue {
        // HBase matches an absent family or qualifier as empty.
        family: m.column_family.unwrap_or_default(),
        qualifier: m.column_qualifier.unwrap_or_default(),
        op,
        comparator,
        // Absent booleans read as protobuf's default, false, as in HBase
        // (whose own client always sends both).
        filter_if_missing: m.filter_if_missing.unwrap_or(false),
        latest_version_only: m.latest_version_only.unwrap_or(false),
    })
}

/// The comparison `op` against the comparator `c` in field `field` of
/// filter `name`.
fn test(
    name: &str,
    field: &str,
    op: CompareType,
    c: &proto::filter::Comparator,
) -> Result<(CompareOp, Comparator), RpcError> {
    let op = match op {
        CompareType::Less => CompareOp::Less,
        CompareType::LessOrEqual => CompareOp::LessOrEqual,
        CompareType::Equal => CompareOp::Equal,
        CompareType::NotEqual => CompareOp::NotEqual,
        CompareType::GreaterOrEqual => CompareOp::GreaterOrEqual,
        CompareType::Greater => CompareOp::Greater,
        CompareType::NoOp => return Ok(constant(false)),
    };
    match decode_comparator(c).map_err(|e| within(e, format!("{name} {field}")))? {
        Some(comparator) => Ok((op, comparator)),
        // NullComparator: every cell compares as less than it.
        None => Ok(constant(op.holds(std::cmp::Ordering::Less))),
    }
}

/// A comparison with a constant outcome: every cell equals an empty
/// binary prefix, so `=` always holds and `!=` never does.
fn constant(passes: bool) -> (CompareOp, Comparator) {
    let op = if passes {
        CompareOp::Equal
    } else {
        CompareOp::NotEqual
    };
    (op, Comparator::BinaryPrefix(Bytes::new()))
}

fn compare_type(name: &str, field: &str, value: i32) -> Result<CompareType, RpcError> {
    CompareType::try_from(value).map_err(|_| {
        RpcError::do_not_retry(format!(
            "{name}: {field} {value} is not a CompareType (LESS=0 ... NO_OP=6)"
        ))
    })
}

/// A `MultiRowRangeFilter`: rows in any of the ranges, as an OR of
/// row-key bounds. The rows kept are HBase's; HBase seeks from range to
/// range, Basalt tests each row against the bounds.
fn multi_row_range(name: &str, ranges: Vec<pb::RowRange>) -> Result<Filter, RpcError> {
    if ranges.is_empty() {
        return Err(RpcError::do_not_retry(format!(
            "{name}: row_range_list has no ranges"
        )));
    }
    let mut members = Vec::with_capacity(ranges.len());
    for (i, range) in ranges.into_iter().enumerate() {
        // Absent and empty rows are both unbounded, as in HBase.
        let start = range.start_row.unwrap_or_default();
        let stop = range.stop_row.unwrap_or_default();
        let start_inclusive = range.start_row_inclusive.unwrap_or(false);
        let stop_inclusive = range.stop_row_inclusive.unwrap_or(false);
        // HBase refuses a range whose start is after its stop, or equal to
        // an excluded stop.
        if !start.is_empty() && !stop.is_empty() {
            let order = start.cmp(&stop);
            if order.is_gt() || (order.is_eq() && !stop_inclusive) {
                return Err(RpcError::do_not_retry(format!(
                    "{name}: row_range_list {i} is invalid: its start row is after its stop row"
                )));
            }
        }
        let mut bounds = Vec::with_capacity(2);
        if !start.is_empty() {
            let op = if start_inclusive {
                CompareOp::GreaterOrEqual
            } else {
                CompareOp::Greater
            };
            bounds.push(Filter::Row(op, Comparator::Binary(start)));
        }
        if !stop.is_empty() {
            let op = if stop_inclusive {
                CompareOp::LessOrEqual
            } else {
                CompareOp::Less
            };
            bounds.push(Filter::Row(op, Comparator::Binary(stop)));
        }
        members.push(match bounds.len() {
            0 => {
                let (op, c) = constant(true);
                Filter::Row(op, c)
            }
            1 => bounds.remove(0),
            _ => Filter::List(ListOperator::MustPassAll, bounds),
        });
    }
    Ok(if members.len() == 1 {
        members.remove(0)
    } else {
        Filter::List(ListOperator::MustPassOne, members)
    })
}

// ---------------------------------------------------------------------------
// Comparators
// ---------------------------------------------------------------------------

fn comparable(name: &str, comparable: Option<pb::ByteArrayComparable>) -> Result<Bytes, RpcError> {
    comparable
        .map(|c| c.value.unwrap_or_default())
        .ok_or_else(|| missing(name, "comparable"))
}

/// `java.util.regex.Pattern`'s flags.
mod java_flags {
    pub const UNIX_LINES: i32 = 0x01;
    pub const CASE_INSENSITIVE: i32 = 0x02;
    pub const COMMENTS: i32 = 0x04;
    pub const MULTILINE: i32 = 0x08;
    pub const LITERAL: i32 = 0x10;
    pub const DOTALL: i32 = 0x20;
    pub const UNICODE_CASE: i32 = 0x40;
    pub const CANON_EQ: i32 = 0x80;
    pub const UNICODE_CHARACTER_CLASS: i32 = 0x100;
    /// Every flag Java defines.
    pub const ALL: i32 = UNIX_LINES
        | CASE_INSENSITIVE
        | COMMENTS
        | MULTILINE
        | LITERAL
        | DOTALL
        | UNICODE_CASE
        | CANON_EQ
        | UNICODE_CHARACTER_CLASS;
}

/// A `RegexStringComparator` as a Basalt regex: Java's flags become inline
/// flags of the same meaning.
///
/// Basalt's regex engine already behaves as some flags ask: only `\n`
/// ends a line (UNIX_LINES), and case folding and `\w`, `\d`, `\s` are
/// Unicode-aware (UNICODE_CASE, UNICODE_CHARACTER_CLASS); without those
/// flags Java keeps to ASCII there, a difference only for non-ASCII text.
/// CANON_EQ (matching by Unicode canonical equivalence) it cannot do.
fn regex(name: &str, m: pb::RegexStringComparator) -> Result<Comparator, RpcError> {
    use java_flags::*;
    match m.engine.as_deref() {
        None | Some("") | Some("JAVA") => {}
        Some("JONI") => {
            return Err(not_supported(
                name,
                "engine JONI is not available; Basalt evaluates Java (JAVA engine) patterns",
            ))
        }
        Some(other) => {
            return Err(RpcError::do_not_retry(format!(
                "{name}: unknown engine '{}' (JAVA or JONI)",
                shown(other)
            )))
        }
    }
    // Cells are matched as UTF-8 text; another charset would decode their
    // bytes differently. Empty is read as the default rather than refused.
    let charset = m.charset.as_str();
    if !(charset.is_empty()
        || charset.eq_ignore_ascii_case("UTF-8")
        || charset.eq_ignore_ascii_case("UTF8"))
    {
        return Err(not_supported(
            name,
            &format!(
                "charset '{}' is not available; Basalt matches cells as UTF-8",
                shown(charset)
            ),
        ));
    }
    let flags = m.pattern_flags;
    if flags & !ALL != 0 {
        return Err(RpcError::do_not_retry(format!(
            "{name}: pattern_flags {flags:#x} has bits java.util.regex.Pattern does not define"
        )));
    }
    if flags & CANON_EQ != 0 {
        return Err(not_supported(
            name,
            "pattern flag CANON_EQ (128) is not available in Basalt's regex engine",
        ));
    }
    // UNIX_LINES, UNICODE_CASE and UNICODE_CHARACTER_CLASS need nothing:
    // they are how Basalt's engine behaves already (see above).
    let literal = flags & LITERAL != 0;
    let mut inline = String::new();
    if flags & CASE_INSENSITIVE != 0 {
        inline.push('i');
    }
    // A literal pattern has no lines, dots or whitespace syntax to adjust
    // (and Java ignores these flags with LITERAL).
    if !literal {
        if flags & MULTILINE != 0 {
            inline.push('m');
        }
        if flags & DOTALL != 0 {
            inline.push('s');
        }
        if flags & COMMENTS != 0 {
            inline.push('x');
        }
    }
    let body = if literal {
        regex::escape(&m.pattern)
    } else {
        m.pattern
    };
    let pattern = if inline.is_empty() {
        body
    } else {
        format!("(?{inline}){body}")
    };
    match regex::bytes::Regex::new(&pattern) {
        Ok(r) => Ok(Comparator::Regex(Arc::new(r))),
        // The engine's message quotes the whole pattern: keep it short.
        Err(e) => Err(RpcError::do_not_retry(format!(
            "{name}: pattern '{}' is not a regular expression Basalt can evaluate: {}",
            shown(&pattern),
            shown_long(&e.to_string())
        ))),
    }
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Decodes message `M` of class `name`.
fn decode<M: Message + Default>(name: &str, bytes: impl bytes::Buf) -> Result<M, RpcError> {
    M::decode(bytes).map_err(|e| RpcError::undecodable(name, e))
}

fn missing(name: &str, field: &str) -> RpcError {
    RpcError::do_not_retry(format!("{name}: required field {field} is missing"))
}

fn non_negative<T: TryFrom<i64>>(
    name: &str,
    field: &str,
    value: impl Into<i64>,
) -> Result<T, RpcError> {
    let value = value.into();
    T::try_from(value).map_err(|_| {
        RpcError::do_not_retry(format!(
            "{name}: {field} must not be negative, found {value}"
        ))
    })
}

fn not_supported(name: &str, why: &str) -> RpcError {
    RpcError::do_not_retry(format!("{name} is not supported by Basalt: {why}"))
}

fn unknown(kind: &str, name: &str) -> RpcError {
    RpcError::do_not_retry(format!(
        "{kind} class '{}' is not supported by Basalt: it is not one of HBase's \
         {PACKAGE}* {kind}s Basalt evaluates (custom {kind}s cannot run here)",
        shown(name)
    ))
}

/// `error` as it happened inside `context`.
fn within(error: RpcError, context: impl Display) -> RpcError {
    RpcError {
        message: format!("{context}: {}", error.message),
        ..error
    }
}

/// A client's text cut short for an error message.
fn shown(text: &str) -> String {
    cut(text, MAX_SHOWN_CHARS)
}

/// An engine's message cut short.
fn shown_long(text: &str) -> String {
    cut(text, 4 * MAX_SHOWN_CHARS)
}

fn cut(text: &str, max_chars: usize) -> String {
    let mut out: String = text.chars().take(max_chars).collect();
    if out.len() < text.len() {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn name(short: &str) -> String {
        format!("{PACKAGE}{short}")
    }

    fn filter(short: &str, message: impl Message) -> proto::filter::Filter {
        proto::filter::Filter {
            name: name(short),
            serialized_filter: Some(message.encode_to_vec()),
        }
    }

    fn nested(f: proto::filter::Filter) -> pb::NestedFilter {
        pb::NestedFilter {
            name: f.name,
            serialized_filter: f.serialized_filter.map(Bytes::from),
        }
    }

    fn comparator(short: &str, message: impl Message) -> proto::filter::Comparator {
        proto::filter::Comparator {
            name: name(short),
            serialized_comparator: Some(message.encode_to_vec()),
        }
    }

    fn binary(value: &str) -> proto::filter::Comparator {
        comparator(
            "BinaryComparator",
            pb::BinaryComparator {
                comparable: Some(pb::ByteArrayComparable {
                    value: Some(Bytes::copy_from_slice(value.as_bytes())),
                }),
            },
        )
    }

    fn regex_comparator(pattern: &str, flags: i32) -> proto::filter::Comparator {
        comparator(
            "RegexStringComparator",
            pb::RegexStringComparator {
                pattern: pattern.to_string(),
                pattern_flags: flags,
                charset: "UTF-8".to_string(),
                engine: Some("JAVA".to_string()),
            },
        )
    }

    fn compare(op: CompareType, c: proto::filter::Comparator) -> Option<pb::CompareFilter> {
        Some(pb::CompareFilter {
            compare_op: op as i32,
            comparator: Some(c),
        })
    }

    fn b(text: &str) -> Bytes {
        Bytes::copy_from_slice(text.as_bytes())
    }

    fn ok(f: proto::filter::Filter) -> Filter {
        decode_filter(&f).unwrap()
    }

    fn refused(f: proto::filter::Filter) -> String {
        let error = decode_filter(&f).unwrap_err();
        assert!(error.do_not_retry, "{error}");
        assert_eq!(error.class, crate::error::DO_NOT_RETRY);
        error.message
    }

    fn key_only() -> proto::filter::Filter {
        filter("KeyOnlyFilter", pb::KeyOnlyFilter { len_as_val: false })
    }

    fn list(
        op: pb::FilterListOperator,
        members: Vec<proto::filter::Filter>,
    ) -> proto::filter::Filter {
        filter(
            "FilterList",
            pb::FilterList {
                operator: op as i32,
                filters: members.into_iter().map(nested).collect(),
            },
        )
    }

    #[test]
    fn key_only_and_first_key_only_filters_decode_with_their_flag() {
        assert_eq!(
            ok(filter(
                "KeyOnlyFilter",
                pb::KeyOnlyFilter { len_as_val: true }
            )),
            Filter::KeyOnly {
                length_as_value: true
            }
        );
        assert_eq!(
            ok(key_only()),
            Filter::KeyOnly {
                length_as_value: false
            }
        );
        assert_eq!(
            ok(filter("FirstKeyOnlyFilter", pb::FirstKeyOnlyFilter {})),
            Filter::FirstKeyOnly
        );
        // No message at all is an empty one.
        let bare = proto::filter::Filter {
            name: name("FirstKeyOnlyFilter"),
            serialized_filter: None,
        };
        assert_eq!(ok(bare), Filter::FirstKeyOnly);
    }

    #[test]
    fn prefix_and_inclusive_stop_filters_keep_their_rows() {
        assert_eq!(
            ok(filter(
                "PrefixFilter",
                pb::PrefixFilter {
                    prefix: Some(b("row-1"))
                }
            )),
            Filter::Prefix(b("row-1"))
        );
        assert_eq!(
            ok(filter(
                "InclusiveStopFilter",
                pb::InclusiveStopFilter {
                    stop_row_key: Some(b("row-9"))
                }
            )),
            Filter::InclusiveStop(b("row-9"))
        );
    }

    #[test]
    fn a_prefix_or_inclusive_stop_filter_without_its_row_is_refused() {
        let m = refused(filter("PrefixFilter", pb::PrefixFilter { prefix: None }));
        assert!(m.contains("PrefixFilter") && m.contains("prefix"), "{m}");
        let m = refused(filter(
            "InclusiveStopFilter",
            pb::InclusiveStopFilter { stop_row_key: None },
        ));
        assert!(
            m.contains("InclusiveStopFilter") && m.contains("stop_row_key"),
            "{m}"
        );
    }

    #[test]
    fn column_filters_decode_their_prefixes_ranges_counts_and_pages() {
        assert_eq!(
            ok(filter(
                "ColumnPrefixFilter",
                pb::ColumnPrefixFilter { prefix: b("q") }
            )),
            Filter::ColumnPrefix(b("q"))
        );
        assert_eq!(
            ok(filter(
                "MultipleColumnPrefixFilter",
                pb::MultipleColumnPrefixFilter {
                    sorted_prefixes: vec![b("a"), b("c")]
                }
            )),
            Filter::MultipleColumnPrefix(vec![b("a"), b("c")])
        );
        assert_eq!(
            ok(filter(
                "ColumnRangeFilter",
                pb::ColumnRangeFilter {
                    min_column: Some(b("a")),
                    min_column_inclusive: Some(true),
                    max_column: None,
                    max_column_inclusive: Some(true),
                }
            )),
            Filter::ColumnRange {
                min: Some(b("a")),
                min_inclusive: true,
                max: None,
                max_inclusive: true
            }
        );
        assert_eq!(
            ok(filter(
                "ColumnRangeFilter",
                pb::ColumnRangeFilter {
                    min_column: Some(Bytes::new()),
                    max_column: Some(b("z")),
                    ..Default::default()
                }
            )),
            Filter::ColumnRange {
                min: Some(Bytes::new()),
                min_inclusive: false,
                max: Some(b("z")),
                max_inclusive: false
            }
        );
        assert_eq!(
            ok(filter(
                "ColumnCountGetFilter",
                pb::ColumnCountGetFilter { limit: 3 }
            )),
            Filter::ColumnCountGet(3)
        );
        assert_eq!(
            ok(filter("PageFilter", pb::PageFilter { page_size: 1 << 40 })),
            Filter::Page(1 << 40)
        );
        assert_eq!(
            ok(filter(
                "ColumnPaginationFilter",
                pb::ColumnPaginationFilter {
                    limit: 2,
                    offset: Some(5),
                    column_offset: None
                }
            )),
            Filter::ColumnPagination {
                limit: 2,
                offset: 5
            }
        );
        assert_eq!(
            ok(filter(
                "ColumnPaginationFilter",
                pb::ColumnPaginationFilter {
                    limit: 2,
                    ..Default::default()
                }
            )),
            Filter::ColumnPagination {
                limit: 2,
                offset: 0
            }
        );
        assert_eq!(
            ok(filter(
                "TimestampsFilter",
                pb::TimestampsFilter {
                    timestamps: vec![7, 3],
                    can_hint: Some(false)
                }
            )),
            Filter::Timestamps(vec![7, 3])
        );
    }

    #[test]
    fn negative_counts_sizes_offsets_and_timestamps_are_refused() {
        let cases = [
            (
                filter(
                    "ColumnCountGetFilter",
                    pb::ColumnCountGetFilter { limit: -1 },
                ),
                "limit",
            ),
            (
                filter("PageFilter", pb::PageFilter { page_size: -5 }),
                "page_size",
            ),
            (
                filter(
                    "ColumnPaginationFilter",
                    pb::ColumnPaginationFilter {
                        limit: -2,
                        ..Default::default()
                    },
                ),
                "limit",
            ),
            (
                filter(
                    "ColumnPaginationFilter",
                    pb::ColumnPaginationFilter {
                        limit: 2,
                        offset: Some(-1),
                        column_offset: None,
                    },
                ),
                "offset",
            ),
            (
                filter(
                    "TimestampsFilter",
                    pb::TimestampsFilter {
                        timestamps: vec![1, -3],
                        can_hint: None,
                    },
                ),
                "-3",
            ),
        ];
        for (f, field) in cases {
            let class = f.name.clone();
            let m = refused(f);
            assert!(m.contains(&class) && m.contains(field), "{m}");
            assert!(m.contains("negative"), "{m}");
        }
    }

    #[test]
    fn a_column_pagination_filter_paging_from_a_qualifier_is_refused() {
        let m = refused(filter(
            "ColumnPaginationFilter",
            pb::ColumnPaginationFilter {
                limit: 2,
                offset: None,
                column_offset: Some(b("q")),
            },
        ));
        assert!(
            m.contains("ColumnPaginationFilter") && m.contains("column_offset"),
            "{m}"
        );
    }

    #[test]
    fn compare_filters_decode_every_operator_with_their_comparator() {
        let ops = [
            (CompareType::Less, CompareOp::Less),
            (CompareType::LessOrEqual, CompareOp::LessOrEqual),
            (CompareType::Equal, CompareOp::Equal),
            (CompareType::NotEqual, CompareOp::NotEqual),
            (CompareType::GreaterOrEqual, CompareOp::GreaterOrEqual),
            (CompareType::Greater, CompareOp::Greater),
        ];
        for (wire, op) in ops {
            let c = Comparator::binary("v");
            assert_eq!(
                ok(filter(
                    "RowFilter",
                    pb::RowFilter {
                        compare_filter: compare(wire, binary("v"))
                    }
                )),
                Filter::Row(op, c.clone())
            );
            assert_eq!(
                ok(filter(
                    "FamilyFilter",
                    pb::FamilyFilter {
                        compare_filter: compare(wire, binary("v"))
                    }
                )),
                Filter::Family(op, c.clone())
            );
            assert_eq!(
                ok(filter(
                    "QualifierFilter",
                    pb::QualifierFilter {
                        compare_filter: compare(wire, binary("v"))
                    }
                )),
                Filter::Qualifier(op, c.clone())
            );
            assert_eq!(
                ok(filter(
                    "ValueFilter",
                    pb::ValueFilter {
                        compare_filter: compare(wire, binary("v"))
                    }
                )),
                Filter::Value(op, c)
            );
        }
    }

    #[test]
    fn a_compare_filter_without_its_comparison_or_comparator_is_refused() {
        let m = refused(filter(
            "RowFilter",
            pb::RowFilter {
                compare_filter: None,
            },
        ));
        assert!(
            m.contains("RowFilter") && m.contains("compare_filter"),
            "{m}"
        );
        let m = refused(filter(
            "ValueFilter",
            pb::ValueFilter {
                compare_filter: Some(pb::CompareFilter {
                    compare_op: CompareType::Equal as i32,
                    comparator: None,
                }),
            },
        ));
        assert!(m.contains("ValueFilter") && m.contains("comparator"), "{m}");
        let m = refused(filter(
            "ValueFilter",
            pb::ValueFilter {
                compare_filter: Some(pb::CompareFilter {
                    compare_op: 9,
                    comparator: Some(binary("x")),
                }),
            },
        ));
        assert!(m.contains("compare_op") && m.contains('9'), "{m}");
    }

    #[test]
    fn a_no_op_comparison_never_passes_and_needs_no_comparator() {
        let never = Filter::Value(CompareOp::NotEqual, Comparator::BinaryPrefix(Bytes::new()));
        let f = ok(filter(
            "ValueFilter",
            pb::ValueFilter {
                compare_filter: Some(pb::CompareFilter {
                    compare_op: CompareType::NoOp as i32,
                    comparator: None,
                }),
            },
        ));
        assert_eq!(f, never);
        let Filter::Value(op, c) = f else {
            unreachable!()
        };
        for cell in [&b""[..], b"a", b"\xff\xff"] {
            assert!(!c.cell_passes(op, cell));
        }
        // A single column value test with NO_OP fails in HBase itself.
        let m = refused(filter(
            "SingleColumnValueFilter",
            pb::SingleColumnValueFilter {
                compare_op: CompareType::NoOp as i32,
                comparator: Some(binary("x")),
                ..Default::default()
            },
        ));
        assert!(m.contains("NO_OP"), "{m}");
    }

    #[test]
    fn a_null_comparator_in_a_filter_passes_every_cell_only_for_less_less_or_equal_and_not_equal() {
        let null = comparator("NullComparator", pb::NullComparator {});
        let expected = [
            (CompareType::Less, true),
            (CompareType::LessOrEqual, true),
            (CompareType::Equal, false),
            (CompareType::NotEqual, true),
            (CompareType::GreaterOrEqual, false),
            (CompareType::Greater, false),
        ];
        for (wire, passes) in expected {
            let Filter::Qualifier(op, c) = ok(filter(
                "QualifierFilter",
                pb::QualifierFilter {
                    compare_filter: compare(wire, null.clone()),
                },
            )) else {
                panic!("not a QualifierFilter");
            };
            for cell in [&b""[..], b"q", b"\xff"] {
                assert_eq!(c.cell_passes(op, cell), passes, "{wire:?} on {cell:?}");
            }
        }
    }

    #[test]
    fn single_column_value_filters_decode_every_field() {
        let m = pb::SingleColumnValueFilter {
            column_family: Some(b("cf")),
            column_qualifier: Some(b("q")),
            compare_op: CompareType::GreaterOrEqual as i32,
            comparator: Some(binary("010")),
            filter_if_missing: Some(true),
            latest_version_only: Some(true),
        };
        let scv = SingleColumnValue {
            family: b("cf"),
            qualifier: b("q"),
            op: CompareOp::GreaterOrEqual,
            comparator: Comparator::binary("010"),
            filter_if_missing: true,
            latest_version_only: true,
        };
        assert_eq!(
            ok(filter("SingleColumnValueFilter", m.clone())),
            Filter::SingleColumnValue(scv.clone())
        );
        assert_eq!(
            ok(filter(
                "SingleColumnValueExcludeFilter",
                pb::SingleColumnValueExcludeFilter {
                    single_column_value_filter: Some(m)
                }
            )),
            Filter::SingleColumnValueExclude(scv)
        );
    }

    #[test]
    fn a_single_column_value_filter_reads_absent_fields_as_hbase_does() {
        assert_eq!(
            ok(filter(
                "SingleColumnValueFilter",
                pb::SingleColumnValueFilter {
                    compare_op: CompareType::Equal as i32,
                    comparator: Some(binary("x")),
                    ..Default::default()
                }
            )),
            Filter::SingleColumnValue(SingleColumnValue {
                family: Bytes::new(),
                qualifier: Bytes::new(),
                op: CompareOp::Equal,
                comparator: Comparator::binary("x"),
                filter_if_missing: false,
                latest_version_only: false,
            })
        );
        let m = refused(filter(
            "SingleColumnValueFilter",
            pb::SingleColumnValueFilter {
                compare_op: CompareType::Equal as i32,
                ..Default::default()
            },
        ));
        assert!(
            m.contains("SingleColumnValueFilter") && m.contains("comparator"),
            "{m}"
        );
        let m = refused(filter(
            "SingleColumnValueExcludeFilter",
            pb::SingleColumnValueExcludeFilter {
                single_column_value_filter: None,
            },
        ));
        assert!(m.contains("single_column_value_filter"), "{m}");
    }

    #[test]
    fn a_dependent_column_filter_tests_values_only_when_it_has_a_comparator() {
        let without = pb::DependentColumnFilter {
            compare_filter: Some(pb::CompareFilter {
                compare_op: CompareType::NoOp as i32,
                comparator: None,
            }),
            column_family: Some(b("cf")),
            column_qualifier: Some(b("ts")),
            drop_dependent_column: Some(true),
        };
        assert_eq!(
            ok(filter("DependentColumnFilter", without.clone())),
            Filter::DependentColumn {
                family: b("cf"),
                qualifier: b("ts"),
                drop_dependent_column: true,
                value_test: None
            }
        );
        let with = pb::DependentColumnFilter {
            compare_filter: compare(CompareType::Less, binary("5")),
            drop_dependent_column: None,
            ..without
        };
        assert_eq!(
            ok(filter("DependentColumnFilter", with)),
            Filter::DependentColumn {
                family: b("cf"),
                qualifier: b("ts"),
                drop_dependent_column: false,
                value_test: Some((CompareOp::Less, Comparator::binary("5")))
            }
        );
        let m = refused(filter(
            "DependentColumnFilter",
            pb::DependentColumnFilter::default(),
        ));
        assert!(m.contains("compare_filter"), "{m}");
    }

    #[test]
    fn a_column_value_filter_decodes_its_column_and_test() {
        assert_eq!(
            ok(filter(
                "ColumnValueFilter",
                pb::ColumnValueFilter {
                    family: b("cf"),
                    qualifier: b("q"),
                    compare_op: CompareType::NotEqual as i32,
                    comparator: Some(binary("v")),
                }
            )),
            Filter::ColumnValue {
                family: b("cf"),
                qualifier: b("q"),
                op: CompareOp::NotEqual,
                comparator: Comparator::binary("v")
            }
        );
    }

    #[test]
    fn filter_lists_nest_and_wrappers_take_their_filter() {
        let skip = filter(
            "SkipFilter",
            pb::SkipFilter {
                filter: Some(nested(key_only())),
            },
        );
        let while_match = filter(
            "WhileMatchFilter",
            pb::WhileMatchFilter {
                filter: Some(nested(filter(
                    "PageFilter",
                    pb::PageFilter { page_size: 2 },
                ))),
            },
        );
        let wrapper = filter(
            "FilterWrapper",
            pb::FilterWrapper {
                filter: Some(nested(list(
                    pb::FilterListOperator::MustPassAll,
                    vec![skip, while_match],
                ))),
            },
        );
        let outer = list(
            pb::FilterListOperator::MustPassOne,
            vec![
                wrapper,
                filter("FirstKeyOnlyFilter", pb::FirstKeyOnlyFilter {}),
            ],
        );
        assert_eq!(
            ok(outer),
            Filter::List(
                ListOperator::MustPassOne,
                vec![
                    Filter::List(
                        ListOperator::MustPassAll,
                        vec![
                            Filter::Skip(Box::new(Filter::KeyOnly {
                                length_as_value: false
                            })),
                            Filter::While(Box::new(Filter::Page(2))),
                        ]
                    ),
                    Filter::FirstKeyOnly,
                ]
            )
        );
        assert_eq!(
            ok(list(pb::FilterListOperator::MustPassAll, vec![])),
            Filter::List(ListOperator::MustPassAll, vec![])
        );
    }

    #[test]
    fn a_filter_list_with_an_unknown_operator_or_a_wrapper_without_its_filter_is_refused() {
        let m = refused(filter(
            "FilterList",
            pb::FilterList {
                operator: 3,
                filters: vec![],
            },
        ));
        assert!(m.contains("FilterList") && m.contains("operator 3"), "{m}");
        for short in ["SkipFilter", "WhileMatchFilter", "FilterWrapper"] {
            let m = refused(filter(short, pb::SkipFilter { filter: None }));
            assert!(m.contains(short) && m.contains("filter"), "{m}");
        }
    }

    #[test]
    fn an_error_inside_a_list_names_the_member_and_its_class() {
        let bad = filter("PageFilter", pb::PageFilter { page_size: -1 });
        let m = refused(list(
            pb::FilterListOperator::MustPassAll,
            vec![key_only(), bad],
        ));
        assert!(
            m.starts_with(&format!("{} filter 1: ", name("FilterList"))),
            "{m}"
        );
        assert!(
            m.contains(&name("PageFilter")) && m.contains("page_size"),
            "{m}"
        );
    }

    /// `levels` filters nested: SkipFilters around a KeyOnlyFilter.
    fn nested_skips(levels: usize) -> proto::filter::Filter {
        let mut f = key_only();
        for _ in 1..levels {
            f = filter(
                "SkipFilter",
                pb::SkipFilter {
                    filter: Some(nested(f)),
                },
            );
        }
        f
    }

    #[test]
    fn filters_nested_as_deep_as_the_limit_decode_and_deeper_ones_are_refused() {
        let mut f = ok(nested_skips(MAX_DEPTH));
        let mut levels = 1;
        while let Filter::Skip(inner) = f {
            f = *inner;
            levels += 1;
        }
        assert_eq!(levels, MAX_DEPTH);
        let m = refused(nested_skips(MAX_DEPTH + 1));
        assert!(m.contains("nested more than 64 levels"), "{m}");
        // Far deeper input stops at the limit too, without exhausting the
        // stack.
        let m = refused(nested_skips(5_000));
        assert!(m.contains("nested more than 64 levels"), "{m}");
    }

    #[test]
    fn more_filters_than_the_limit_are_refused() {
        let wide = |n: usize| list(pb::FilterListOperator::MustPassOne, vec![key_only(); n]);
        // The list itself counts as one filter.
        assert!(decode_filter(&wide(MAX_FILTERS - 1)).is_ok());
        let m = refused(wide(MAX_FILTERS));
        assert!(m.contains("more than 10000 filters"), "{m}");
        // Spread over nested lists, the total still counts.
        let half = list(
            pb::FilterListOperator::MustPassAll,
            vec![key_only(); MAX_FILTERS / 2],
        );
        let m = refused(list(
            pb::FilterListOperator::MustPassAll,
            vec![half.clone(), half],
        ));
        assert!(m.contains("more than 10000 filters"), "{m}");
    }

    fn range(start: &str, start_inclusive: bool, stop: &str, stop_inclusive: bool) -> pb::RowRange {
        pb::RowRange {
            start_row: Some(b(start)),
            start_row_inclusive: Some(start_inclusive),
            stop_row: Some(b(stop)),
            stop_row_inclusive: Some(stop_inclusive),
        }
    }

    #[test]
    fn a_multi_row_range_filter_becomes_an_or_of_row_bounds() {
        let f = ok(filter(
            "MultiRowRangeFilter",
            pb::MultiRowRangeFilter {
                row_range_list: vec![
                    range("b", true, "d", false),
                    range("f", false, "", false),
                    range("", false, "a", true),
                ],
            },
        ));
        assert_eq!(
            f,
            Filter::List(
                ListOperator::MustPassOne,
                vec![
                    Filter::List(
                        ListOperator::MustPassAll,
                        vec![
                            Filter::Row(CompareOp::GreaterOrEqual, Comparator::binary("b")),
                            Filter::Row(CompareOp::Less, Comparator::binary("d")),
                        ]
                    ),
                    Filter::Row(CompareOp::Greater, Comparator::binary("f")),
                    Filter::Row(CompareOp::LessOrEqual, Comparator::binary("a")),
                ]
            )
        );
        // One unbounded range keeps every row.
        let Filter::Row(op, c) = ok(filter(
            "MultiRowRangeFilter",
            pb::MultiRowRangeFilter {
                row_range_list: vec![pb::RowRange::default()],
            },
        )) else {
            panic!("not a RowFilter");
        };
        assert!(c.cell_passes(op, b"any row"));
    }

    #[test]
    fn a_fuzzy_row_filter_decodes_from_the_mask_the_java_client_sends() {
        // HBase's Java client preprocesses the mask before it sends it:
        // 0xFF for a fixed byte, 2 for a free one.
        let pair = |key: &str, mask: &[u8]| crate::proto::hbase::BytesBytesPair {
            first: key.as_bytes().to_vec(),
            second: mask.to_vec(),
        };
        let decoded = ok(filter(
            "FuzzyRowFilter",
            pb::FuzzyRowFilter {
                fuzzy_keys_data: vec![pair("a\0c", &[0xFF, 2, 0xFF]), pair("x?", &[0, 1])],
                is_mask_v2: Some(true),
            },
        ));
        let Filter::FuzzyRow(keys) = decoded else {
            panic!("not a fuzzy row filter: {decoded:?}");
        };
        assert_eq!(keys[0].fixed(), [true, false, true]);
        assert_eq!(keys[1].fixed(), [true, false]);
        let m = refused(filter(
            "FuzzyRowFilter",
            pb::FuzzyRowFilter {
                fuzzy_keys_data: vec![pair("ab", &[0])],
                is_mask_v2: None,
            },
        ));
        assert!(m.contains("fuzzy_keys_data 0"), "{m}");
    }

    #[test]
    fn an_empty_or_reversed_multi_row_range_filter_is_refused() {
        let m = refused(filter(
            "MultiRowRangeFilter",
            pb::MultiRowRangeFilter {
                row_range_list: vec![],
            },
        ));
        assert!(m.contains("no ranges"), "{m}");
        let m = refused(filter(
            "MultiRowRangeFilter",
            pb::MultiRowRangeFilter {
                row_range_list: vec![range("a", true, "b", false), range("d", true, "c", true)],
            },
        ));
        assert!(m.contains("row_range_list 1"), "{m}");
        // Equal bounds make a range of one row only when the stop is in it.
        assert!(decode_filter(&filter(
            "MultiRowRangeFilter",
            pb::MultiRowRangeFilter {
                row_range_list: vec![range("c", true, "c", true)],
            },
        ))
        .is_ok());
        refused(filter(
            "MultiRowRangeFilter",
            pb::MultiRowRangeFilter {
                row_range_list: vec![range("c", true, "c", false)],
            },
        ));
    }

    #[test]
    fn filters_basalt_does_not_have_are_refused_naming_the_class() {
        for short in [
            "RandomRowFilter",
            "FirstKeyValueMatchingQualifiersFilter",
            "FilterAllFilter",
            "NoSuchFilter",
        ] {
            let m = refused(proto::filter::Filter {
                name: name(short),
                serialized_filter: Some(vec![]),
            });
            assert!(m.contains(&name(short)), "{m}");
            assert!(m.contains("not supported by Basalt"), "{m}");
        }
        let m = refused(proto::filter::Filter {
            name: "com.example.MyFilter".to_string(),
            serialized_filter: None,
        });
        assert!(
            m.contains("com.example.MyFilter") && m.contains("custom"),
            "{m}"
        );
    }

    #[test]
    fn malformed_filter_messages_are_refused_naming_the_class() {
        let m = refused(proto::filter::Filter {
            name: name("PageFilter"),
            serialized_filter: Some(vec![0x08, 0xff]),
        });
        assert!(
            m.starts_with(&format!("malformed {}", name("PageFilter"))),
            "{m}"
        );
    }

    fn decode_c(c: proto::filter::Comparator) -> Option<Comparator> {
        decode_comparator(&c).unwrap()
    }

    fn refused_c(c: proto::filter::Comparator) -> String {
        let error = decode_comparator(&c).unwrap_err();
        assert!(error.do_not_retry, "{error}");
        error.message
    }

    #[test]
    fn binary_comparators_keep_their_bytes() {
        assert_eq!(decode_c(binary("abc")), Some(Comparator::binary("abc")));
        assert_eq!(
            decode_c(comparator(
                "BinaryPrefixComparator",
                pb::BinaryPrefixComparator {
                    comparable: Some(pb::ByteArrayComparable {
                        value: Some(b("ab"))
                    })
                }
            )),
            Some(Comparator::BinaryPrefix(b("ab")))
        );
        // An absent value is empty, as protobuf reads it.
        assert_eq!(
            decode_c(comparator(
                "BinaryComparator",
                pb::BinaryComparator {
                    comparable: Some(pb::ByteArrayComparable { value: None })
                }
            )),
            Some(Comparator::binary(""))
        );
        let m = refused_c(comparator(
            "BinaryComparator",
            pb::BinaryComparator { comparable: None },
        ));
        assert!(
            m.contains("BinaryComparator") && m.contains("comparable"),
            "{m}"
        );
    }

    #[test]
    fn a_null_comparator_decodes_to_none() {
        assert_eq!(
            decode_c(comparator("NullComparator", pb::NullComparator {})),
            None
        );
    }

    #[test]
    fn a_substring_comparator_ignores_case() {
        let c = decode_c(comparator(
            "SubstringComparator",
            pb::SubstringComparator {
                substr: "HeLLo".to_string(),
            },
        ))
        .unwrap();
        assert_eq!(c, Comparator::substring("hello"));
        assert!(c.cell_passes(CompareOp::Equal, b"say HELLO"));
    }

    fn matches(c: &Comparator, cell: &[u8]) -> bool {
        c.cell_passes(CompareOp::Equal, cell)
    }

    #[test]
    fn a_regex_comparator_honours_javas_pattern_flags() {
        use java_flags::*;
        let plain = decode_c(regex_comparator("^a.c$", 0)).unwrap();
        assert!(matches(&plain, b"abc") && !matches(&plain, b"ABC") && !matches(&plain, b"a\nc"));
        let insensitive = decode_c(regex_comparator("^a.c$", CASE_INSENSITIVE)).unwrap();
        assert!(matches(&insensitive, b"ABC"));
        // DOTALL is what HBase's client sends by default.
        let dotall = decode_c(regex_comparator("^a.c$", DOTALL)).unwrap();
        assert!(matches(&dotall, b"a\nc"));
        let multiline = decode_c(regex_comparator("^b$", MULTILINE)).unwrap();
        assert!(matches(&multiline, b"a\nb\nc"));
        assert!(!matches(&plain_regex("^b$"), b"a\nb\nc"));
        let comments = decode_c(regex_comparator("a b # a comment", COMMENTS)).unwrap();
        assert!(matches(&comments, b"xaby"));
        let literal = decode_c(regex_comparator(
            "a.c (",
            LITERAL | CASE_INSENSITIVE | COMMENTS,
        ))
        .unwrap();
        assert!(matches(&literal, b"xA.C (y") && !matches(&literal, b"abc ("));
        let unicode = decode_c(regex_comparator(
            "^\\w+$",
            UNIX_LINES | UNICODE_CASE | UNICODE_CHARACTER_CLASS,
        ))
        .unwrap();
        assert!(matches(&unicode, "héllo".as_bytes()));
    }

    fn plain_regex(pattern: &str) -> Comparator {
        decode_c(regex_comparator(pattern, 0)).unwrap()
    }

    #[test]
    fn a_regex_comparator_accepts_the_default_engine_and_charset_spelled_any_way() {
        for (charset, engine) in [("UTF-8", None), ("utf8", Some("")), ("", Some("JAVA"))] {
            let c = comparator(
                "RegexStringComparator",
                pb::RegexStringComparator {
                    pattern: "x".to_string(),
                    pattern_flags: 0,
                    charset: charset.to_string(),
                    engine: engine.map(str::to_string),
                },
            );
            assert!(decode_c(c).is_some());
        }
    }

    #[test]
    fn a_regex_comparator_refuses_what_basalt_cannot_match_the_same_way() {
        let with = |charset: &str, engine: Option<&str>, flags: i32, pattern: &str| {
            comparator(
                "RegexStringComparator",
                pb::RegexStringComparator {
                    pattern: pattern.to_string(),
                    pattern_flags: flags,
                    charset: charset.to_string(),
                    engine: engine.map(str::to_string),
                },
            )
        };
        let m = refused_c(with("UTF-8", Some("JONI"), 0, "x"));
        assert!(
            m.contains("RegexStringComparator") && m.contains("JONI"),
            "{m}"
        );
        let m = refused_c(with("UTF-8", Some("PCRE"), 0, "x"));
        assert!(m.contains("unknown engine 'PCRE'"), "{m}");
        let m = refused_c(with("ISO-8859-1", None, 0, "x"));
        assert!(m.contains("charset 'ISO-8859-1'"), "{m}");
        let m = refused_c(with("UTF-8", None, java_flags::CANON_EQ, "x"));
        assert!(m.contains("CANON_EQ"), "{m}");
        let m = refused_c(with("UTF-8", None, 0x200, "x"));
        assert!(m.contains("pattern_flags 0x200"), "{m}");
        // Java syntax Basalt's engine lacks (a back-reference) is refused,
        // with a long pattern cut short in the message.
        let long = format!("(a)\\1{}", "b".repeat(10_000));
        let m = refused_c(with("UTF-8", None, 0, &long));
        assert!(
            m.contains("RegexStringComparator") && m.contains("not a regular expression"),
            "{m}"
        );
        assert!(m.len() < 1_000, "{} bytes", m.len());
    }

    #[test]
    fn comparators_basalt_does_not_have_are_refused_naming_the_class() {
        for short in [
            "LongComparator",
            "BitComparator",
            "BigDecimalComparator",
            "BinaryComponentComparator",
            "NoSuchComparator",
        ] {
            let m = refused_c(proto::filter::Comparator {
                name: name(short),
                serialized_comparator: Some(vec![]),
            });
            assert!(
                m.contains(&name(short)) && m.contains("not supported by Basalt"),
                "{m}"
            );
        }
    }

    #[test]
    fn an_unsupported_comparator_inside_a_filter_names_the_filter_and_the_field() {
        let long = proto::filter::Comparator {
            name: name("LongComparator"),
            serialized_comparator: None,
        };
        let m = refused(filter(
            "SingleColumnValueFilter",
            pb::SingleColumnValueFilter {
                compare_op: CompareType::Equal as i32,
                comparator: Some(long),
                ..Default::default()
            },
        ));
        assert!(
            m.starts_with(&format!("{} comparator: ", name("SingleColumnValueFilter"))),
            "{m}"
        );
        assert!(m.contains("LongComparator"), "{m}");
    }
}
