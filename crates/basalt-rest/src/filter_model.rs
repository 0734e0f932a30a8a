//! HBase REST's `FilterModel`: a scanner's filter written as JSON, read
//! into Basalt's [`Filter`].
//!
//! A scanner's `filter` (and the stateless scan's `filter` parameter) is a
//! JSON object such as
//! `{"type":"RowFilter","op":"EQUAL","comparator":{"type":"BinaryComparator","value":"cm93LTE="}}`.
//! Field names and their meaning are HBase's: byte strings (`value` of a
//! row-range filter, `family`, `qualifier`, prefixes, column bounds, a
//! binary comparator's value) are base64; a regex or substring
//! comparator's `value` is the plain pattern; numbers may be JSON numbers
//! or decimal strings (HBase writes `PageFilter`'s size as a string).
//!
//! Every filter type Basalt evaluates is read; a type Basalt does not have
//! (`RandomRowFilter`, ...) or a comparator it does not
//! have (`NullComparator`, `BitComparator`, `LongComparator`) is an error
//! naming it, which the gateway answers with 400. The whole table is in
//! `docs/rest-protocol.md`.
//!
//! A filter that does not start with `{` is read as HBase's filter language
//! (the Thrift gateway's filter strings), so either form works.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::Bytes;
use serde_json::{Map, Value};

use basalt::{Comparator, CompareOp, Filter, ListOperator, SingleColumnValue};

/// Why a filter could not be read; the text is meant for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFilter(pub String);

impl std::fmt::Display for BadFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type Read<T> = Result<T, BadFilter>;

fn bad(message: impl Into<String>) -> BadFilter {
    BadFilter(message.into())
}

/// The filter types [`parse`] reads, by HBase's name.
pub const FILTER_TYPES: &[&str] = &[
    "FilterList",
    "PrefixFilter",
    "RowFilter",
    "FamilyFilter",
    "QualifierFilter",
    "ValueFilter",
    "SingleColumnValueFilter",
    "SingleColumnValueExcludeFilter",
    "ColumnValueFilter",
    "ColumnPrefixFilter",
    "MultipleColumnPrefixFilter",
    "ColumnRangeFilter",
    "ColumnCountGetFilter",
    "ColumnPaginationFilter",
    "PageFilter",
    "KeyOnlyFilter",
    "FirstKeyOnlyFilter",
    "InclusiveStopFilter",
    "TimestampsFilter",
    "WhileMatchFilter",
    "SkipFilter",
    "DependentColumnFilter",
    "FuzzyRowFilter",
];

/// The comparator types [`parse`] reads, by HBase's name.
pub const COMPARATOR_TYPES: &[&str] = &[
    "BinaryComparator",
    "BinaryPrefixComparator",
    "RegexStringComparator",
    "SubstringComparator",
];

/// Reads a scanner's filter: a JSON `FilterModel`, or (when the text does
/// not start with `{`) HBase's filter language.
pub fn parse(text: &str) -> Read<Filter> {
    let trimmed = text.trim();
    if !trimmed.starts_with('{') {
        return Filter::parse(trimmed).map_err(|e| bad(format!("filter: {e}")));
    }
    // The same density check as request bodies: a filter arrives inside
    // one.
    let value: Value = crate::model::parse_json(trimmed.as_bytes(), "filter")
        .map_err(|e| bad(format!("filter is not valid JSON: {e}")))?;
    filter(&value, "filter")
}

fn object<'a>(value: &'a Value, what: &str) -> Read<&'a Map<String, Value>> {
    value
        .as_object()
        .ok_or_else(|| bad(format!("{what} is not a JSON object")))
}

fn text<'a>(fields: &'a Map<String, Value>, name: &str, what: &str) -> Read<&'a str> {
    match fields.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(bad(format!("{what}: {name} is not a string"))),
        None => Err(bad(format!("{what} has no {name}"))),
    }
}

fn b64_value(value: &Value, what: &str) -> Read<Bytes> {
    let text = value
        .as_str()
        .ok_or_else(|| bad(format!("{what} is not a base64 string")))?;
    BASE64
        .decode(text.trim())
        .map(Bytes::from)
        .map_err(|e| bad(format!("{what} is not base64: {e}")))
}

fn bytes(fields: &Map<String, Value>, name: &str, what: &str) -> Read<Bytes> {
    let value = fields
        .get(name)
        .ok_or_else(|| bad(format!("{what} has no {name}")))?;
    b64_value(value, &format!("{what}: {name}"))
}

fn optional_bytes(fields: &Map<String, Value>, name: &str, what: &str) -> Read<Option<Bytes>> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => b64_value(value, &format!("{what}: {name}")).map(Some),
    }
}

/// A JSON number or a decimal string.
fn integer(value: &Value, what: &str) -> Read<i64> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| bad(format!("{what} is not an integer: {n}"))),
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| bad(format!("{what} is not an integer: {s:?}"))),
        _ => Err(bad(format!("{what} is not an integer"))),
    }
}

fn count<T: TryFrom<i64>>(fields: &Map<String, Value>, name: &str, what: &str) -> Read<T> {
    let value = fields
        .get(name)
        .ok_or_else(|| bad(format!("{what} has no {name}")))?;
    let n = integer(value, &format!("{what}: {name}"))?;
    T::try_from(n).map_err(|_| bad(format!("{what}: {name} is out of range: {n}")))
}

fn flag(fields: &Map<String, Value>, name: &str, default: bool, what: &str) -> Read<bool> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(false),
        Some(_) => Err(bad(format!("{what}: {name} is not true or false"))),
    }
}

fn compare_op(fields: &Map<String, Value>, what: &str) -> Read<CompareOp> {
    let op = text(fields, "op", what)?;
    Ok(match op {
        "LESS" => CompareOp::Less,
        "LESS_OR_EQUAL" => CompareOp::LessOrEqual,
        "EQUAL" => CompareOp::Equal,
        "NOT_EQUAL" => CompareOp::NotEqual,
        "GREATER_OR_EQUAL" => CompareOp::GreaterOrEqual,
        "GREATER" => CompareOp::Greater,
        other => {
            return Err(bad(format!(
                "{what}: unknown op {other:?} (LESS, LESS_OR_EQUAL, EQUAL, NOT_EQUAL, \
                 GREATER_OR_EQUAL, GREATER)"
            )))
        }
    })
}

fn comparator(fields: &Map<String, Value>, what: &str) -> Read<Comparator> {
    let value = fields
        .get("comparator")
        .ok_or_else(|| bad(format!("{what} has no comparator")))?;
    let what = format!("{what}: comparator");
    let fields = object(value, &what)?;
    let kind = text(fields, "type", &what)?;
    match kind {
        "BinaryComparator" => Ok(Comparator::Binary(bytes(fields, "value", &what)?)),
        "BinaryPrefixComparator" => Ok(Comparator::BinaryPrefix(bytes(fields, "value", &what)?)),
        "RegexStringComparator" => Comparator::regex(text(fields, "value", &what)?)
            .map_err(|e| bad(format!("{what}: {e}"))),
        "SubstringComparator" => Ok(Comparator::substring(text(fields, "value", &what)?)),
        other => Err(bad(format!(
            "{what}: comparator type {other:?} is not supported; Basalt has {}",
            COMPARATOR_TYPES.join(", ")
        ))),
    }
}

fn compare(fields: &Map<String, Value>, what: &str) -> Read<(CompareOp, Comparator)> {
    Ok((compare_op(fields, what)?, comparator(fields, what)?))
}

fn inner_filters(fields: &Map<String, Value>, what: &str) -> Read<Vec<Filter>> {
    let list = match fields.get("filters") {
        Some(Value::Array(list)) => list,
        Some(_) => return Err(bad(format!("{what}: filters is not a list"))),
        None => return Err(bad(format!("{what} has no filters"))),
    };
    list.iter()
        .enumerate()
        .map(|(i, f)| filter(f, &format!("{what} filter {i}")))
        .collect()
}

fn one_inner(fields: &Map<String, Value>, what: &str) -> Read<Box<Filter>> {
    let mut inner = inner_filters(fields, what)?;
    if inner.len() != 1 {
        return Err(bad(format!(
            "{what} wraps exactly one filter, not {}",
            inner.len()
        )));
    }
    inner
        .pop()
        .map(Box::new)
        .ok_or_else(|| bad(format!("{what} wraps no filter")))
}

fn single_column_value(fields: &Map<String, Value>, what: &str) -> Read<SingleColumnValue> {
    let (op, comparator) = compare(fields, what)?;
    Ok(SingleColumnValue {
        family: bytes(fields, "family", what)?,
        qualifier: optional_bytes(fields, "qualifier", what)?.unwrap_or_default(),
        op,
        comparator,
        filter_if_missing: flag(fields, "ifMissing", false, what)?,
        latest_version_only: flag(fields, "latestVersion", true, what)?,
    })
}

/// One FilterModel object.
fn filter(value: &Value, what: &str) -> Read<Filter> {
    let fields = object(value, what)?;
    let kind = text(fields, "type", what)?;
    let what = format!("{what} ({kind})");
    let what = what.as_str();
    Ok(match kind {
        "FilterList" => {
            let op = match fields.get("op").and_then(Value::as_str) {
                None | Some("MUST_PASS_ALL") => ListOperator::MustPassAll,
                Some("MUST_PASS_ONE") => ListOperator::MustPassOne,
                Some(other) => {
                    return Err(bad(format!(
                        "{what}: op {other:?} is neither MUST_PASS_ALL nor MUST_PASS_ONE"
                    )))
                }
            };
            Filter::List(op, inner_filters(fields, what)?)
        }
        "PrefixFilter" => Filter::Prefix(bytes(fields, "value", what)?),
        "RowFilter" => {
            let (op, c) = compare(fields, what)?;
            Filter::Row(op, c)
        }
        "FamilyFilter" => {
            let (op, c) = compare(fields, what)?;
            Filter::Family(op, c)
        }
        "QualifierFilter" => {
            let (op, c) = compare(fields, what)?;
            Filter::Qualifier(op, c)
        }
        "ValueFilter" => {
            let (op, c) = compare(fields, what)?;
            Filter::Value(op, c)
        }
        "SingleColumnValueFilter" => Filter::SingleColumnValue(single_column_value(fields, what)?),
        "SingleColumnValueExcludeFilter" => {
            Filter::SingleColumnValueExclude(single_column_value(fields, what)?)
        }
        "ColumnValueFilter" => {
            let (op, comparator) = compare(fields, what)?;
            Filter::ColumnValue {
                family: bytes(fields, "family", what)?,
                qualifier: optional_bytes(fields, "qualifier", what)?.unwrap_or_default(),
                op,
                comparator,
            }
        }
        "ColumnPrefixFilter" => Filter::ColumnPrefix(bytes(fields, "value", what)?),
        "MultipleColumnPrefixFilter" => {
            let prefixes = match fields.get("prefixes") {
                Some(Value::Array(list)) => list
                    .iter()
                    .enumerate()
                    .map(|(i, p)| b64_value(p, &format!("{what}: prefix {i}")))
                    .collect::<Read<Vec<_>>>()?,
                Some(_) => return Err(bad(format!("{what}: prefixes is not a list"))),
                None => return Err(bad(format!("{what} has no prefixes"))),
            };
            Filter::MultipleColumnPrefix(prefixes)
        }
        "ColumnRangeFilter" => Filter::ColumnRange {
            min: optional_bytes(fields, "minColumn", what)?,
            min_inclusive: flag(fields, "minColumnInclusive", true, what)?,
            max: optional_bytes(fields, "maxColumn", what)?,
            max_inclusive: flag(fields, "maxColumnInclusive", false, what)?,
        },
        "ColumnCountGetFilter" => Filter::ColumnCountGet(count(fields, "limit", what)?),
        "ColumnPaginationFilter" => Filter::ColumnPagination {
            limit: count(fields, "limit", what)?,
            offset: count(fields, "offset", what)?,
        },
        // HBase writes the page size as the model's `value`, a decimal string.
        "PageFilter" => Filter::Page(count(fields, "value", what)?),
        "KeyOnlyFilter" => Filter::KeyOnly {
            length_as_value: flag(fields, "lenAsVal", false, what)?,
        },
        "FirstKeyOnlyFilter" => Filter::FirstKeyOnly,
        "InclusiveStopFilter" => Filter::InclusiveStop(bytes(fields, "value", what)?),
        "TimestampsFilter" => {
            let stamps = match fields.get("timestamps") {
                Some(Value::Array(list)) => list
                    .iter()
                    .enumerate()
                    .map(|(i, t)| integer(t, &format!("{what}: timestamp {i}")))
                    .collect::<Read<Vec<_>>>()?,
                Some(_) => return Err(bad(format!("{what}: timestamps is not a list"))),
                None => return Err(bad(format!("{what} has no timestamps"))),
            };
            Filter::Timestamps(stamps)
        }
        // HBase's REST model: `fuzzyKeys`, each `{key, mask}` in base64,
        // the mask in either form HBase's FuzzyRowFilter reads.
        "FuzzyRowFilter" => {
            let keys = match fields.get("fuzzyKeys") {
                Some(Value::Array(list)) => list
                    .iter()
                    .enumerate()
                    .map(|(i, k)| {
                        let what = format!("{what}: fuzzy key {i}");
                        let pair = k
                            .as_object()
                            .ok_or_else(|| bad(format!("{what} is not an object")))?;
                        let key = bytes(pair, "key", &what)?;
                        let mask = bytes(pair, "mask", &what)?;
                        basalt::FuzzyKey::from_hbase_mask(key, &mask)
                            .map_err(|e| bad(format!("{what}: {e}")))
                    })
                    .collect::<Read<Vec<_>>>()?,
                Some(_) => return Err(bad(format!("{what}: fuzzyKeys is not a list"))),
                None => return Err(bad(format!("{what} has no fuzzyKeys"))),
            };
            Filter::FuzzyRow(keys)
        }
        "WhileMatchFilter" => Filter::While(one_inner(fields, what)?),
        "SkipFilter" => Filter::Skip(one_inner(fields, what)?),
        "DependentColumnFilter" => {
            // The comparison is optional: without one, every reference
            // cell counts.
            let value_test = if fields.contains_key("comparator") {
                Some(compare(fields, what)?)
            } else {
                None
            };
            Filter::DependentColumn {
                family: bytes(fields, "family", what)?,
                qualifier: optional_bytes(fields, "qualifier", what)?.unwrap_or_default(),
                drop_dependent_column: flag(fields, "dropDependentColumn", false, what)?,
                value_test,
            }
        }
        other => {
            return Err(bad(format!(
                "{what}: filter type {other:?} is not supported; Basalt has {}",
                FILTER_TYPES.join(", ")
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(text: &str) -> String {
        BASE64.encode(text)
    }

    #[test]
    fn a_fuzzy_row_filter_reads_its_keys_and_masks() {
        let json = format!(
            r#"{{"type":"FuzzyRowFilter","fuzzyKeys":[{{"key":"{}","mask":"{}"}}]}}"#,
            b64("a?c"),
            BASE64.encode([0u8, 1, 0])
        );
        let Filter::FuzzyRow(keys) = parse(&json).unwrap() else {
            panic!("not a fuzzy row filter");
        };
        assert_eq!(keys[0].fixed(), [true, false, true]);
        let uneven = format!(
            r#"{{"type":"FuzzyRowFilter","fuzzyKeys":[{{"key":"{}","mask":"{}"}}]}}"#,
            b64("ab"),
            BASE64.encode([0u8])
        );
        assert!(parse(&uneven).unwrap_err().0.contains("fuzzy key 0"));
    }

    #[test]
    fn a_prefix_filter_reads_its_base64_value() {
        let json = format!(r#"{{"type":"PrefixFilter","value":"{}"}}"#, b64("row-8"));
        assert_eq!(parse(&json).unwrap(), Filter::Prefix(Bytes::from("row-8")));
    }

    #[test]
    fn a_row_filter_reads_its_op_and_binary_comparator() {
        let json = format!(
            r#"{{"op":"EQUAL","type":"RowFilter","comparator":{{"value":"{}","type":"BinaryComparator"}}}}"#,
            b64("row-1")
        );
        assert_eq!(
            parse(&json).unwrap(),
            Filter::Row(CompareOp::Equal, Comparator::binary("row-1"))
        );
    }

    #[test]
    fn substring_and_regex_comparators_take_plain_text() {
        let json = r#"{"op":"EQUAL","type":"ValueFilter","comparator":{"value":"This","type":"SubstringComparator"}}"#;
        assert_eq!(
            parse(json).unwrap(),
            Filter::Value(CompareOp::Equal, Comparator::substring("this"))
        );
        let json = r#"{"op":"EQUAL","type":"RowFilter","comparator":{"value":".+-2","type":"RegexStringComparator"}}"#;
        assert!(matches!(
            parse(json).unwrap(),
            Filter::Row(CompareOp::Equal, Comparator::Regex(_))
        ));
    }

    #[test]
    fn a_single_column_value_filter_reads_if_missing_and_latest_version() {
        let json = format!(
            r#"{{"type":"SingleColumnValueFilter","op":"LESS","family":"{}","qualifier":"{}",
                "latestVersion":true,"ifMissing":true,
                "comparator":{{"type":"BinaryComparator","value":"{}"}}}}"#,
            b64("cf"),
            b64("age"),
            BASE64.encode(10i64.to_be_bytes())
        );
        let Filter::SingleColumnValue(scv) = parse(&json).unwrap() else {
            panic!("not a SingleColumnValueFilter");
        };
        assert_eq!(scv.family, Bytes::from("cf"));
        assert_eq!(scv.qualifier, Bytes::from("age"));
        assert_eq!(scv.op, CompareOp::Less);
        assert!(scv.filter_if_missing);
        assert!(scv.latest_version_only);
    }

    #[test]
    fn filter_lists_nest_and_wrappers_take_one_filter() {
        let json = r#"{"type":"FilterList","op":"MUST_PASS_ONE","filters":[
            {"type":"KeyOnlyFilter"},
            {"type":"SkipFilter","filters":[{"type":"FirstKeyOnlyFilter"}]},
            {"type":"WhileMatchFilter","filters":[{"type":"PageFilter","value":"10"}]}]}"#;
        assert_eq!(
            parse(json).unwrap(),
            Filter::List(
                ListOperator::MustPassOne,
                vec![
                    Filter::KeyOnly {
                        length_as_value: false
                    },
                    Filter::Skip(Box::new(Filter::FirstKeyOnly)),
                    Filter::While(Box::new(Filter::Page(10))),
                ]
            )
        );
        let two = r#"{"type":"SkipFilter","filters":[{"type":"KeyOnlyFilter"},{"type":"KeyOnlyFilter"}]}"#;
        assert!(parse(two).unwrap_err().0.contains("exactly one"));
    }

    #[test]
    fn column_filters_read_their_bounds_counts_and_prefixes() {
        let json = format!(
            r#"{{"type":"ColumnRangeFilter","minColumn":"{}","minColumnInclusive":true,"maxColumn":"{}","maxColumnInclusive":false}}"#,
            b64("a"),
            b64("c")
        );
        assert_eq!(
            parse(&json).unwrap(),
            Filter::ColumnRange {
                min: Some(Bytes::from("a")),
                min_inclusive: true,
                max: Some(Bytes::from("c")),
                max_inclusive: false
            }
        );
        let json = r#"{"type":"ColumnPaginationFilter","limit":2,"offset":"1"}"#;
        assert_eq!(
            parse(json).unwrap(),
            Filter::ColumnPagination {
                limit: 2,
                offset: 1
            }
        );
        let json = format!(
            r#"{{"type":"MultipleColumnPrefixFilter","prefixes":["{}","{}"]}}"#,
            b64("a"),
            b64("b")
        );
        assert_eq!(
            parse(&json).unwrap(),
            Filter::MultipleColumnPrefix(vec![Bytes::from("a"), Bytes::from("b")])
        );
        let json = r#"{"type":"TimestampsFilter","timestamps":[5,"7"]}"#;
        assert_eq!(parse(json).unwrap(), Filter::Timestamps(vec![5, 7]));
        let json = r#"{"type":"ColumnCountGetFilter","limit":3}"#;
        assert_eq!(parse(json).unwrap(), Filter::ColumnCountGet(3));
    }

    #[test]
    fn a_dependent_column_filter_may_leave_out_its_comparison() {
        let json = format!(
            r#"{{"type":"DependentColumnFilter","family":"{}","qualifier":"{}","dropDependentColumn":true}}"#,
            b64("cf"),
            b64("q")
        );
        assert_eq!(
            parse(&json).unwrap(),
            Filter::DependentColumn {
                family: Bytes::from("cf"),
                qualifier: Bytes::from("q"),
                drop_dependent_column: true,
                value_test: None
            }
        );
    }

    #[test]
    fn the_filter_language_is_read_when_the_text_is_not_json() {
        assert_eq!(
            parse("PrefixFilter('row')").unwrap(),
            Filter::Prefix(Bytes::from("row"))
        );
    }

    #[test]
    fn unknown_types_and_malformed_fields_are_named_in_the_error() {
        let unknown = parse(r#"{"type":"RandomRowFilter","chance":0.5}"#).unwrap_err();
        assert!(unknown.0.contains("RandomRowFilter"), "{unknown}");
        let comparator =
            parse(r#"{"type":"ValueFilter","op":"EQUAL","comparator":{"type":"NullComparator"}}"#)
                .unwrap_err();
        assert!(comparator.0.contains("NullComparator"), "{comparator}");
        let op = parse(
            r#"{"type":"RowFilter","op":"SIMILAR","comparator":{"type":"BinaryComparator","value":""}}"#,
        )
        .unwrap_err();
        assert!(op.0.contains("SIMILAR"), "{op}");
        assert!(parse(r#"{"type":"PrefixFilter","value":"***"}"#)
            .unwrap_err()
            .0
            .contains("base64"));
        assert!(parse(r#"{"value":"x"}"#).unwrap_err().0.contains("type"));
        assert!(parse("{").unwrap_err().0.contains("JSON"));
        assert!(parse(r#"{"type":"PageFilter","value":"-1"}"#)
            .unwrap_err()
            .0
            .contains("out of range"));
    }
}
