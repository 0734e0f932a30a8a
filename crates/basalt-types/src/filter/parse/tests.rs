//! The filter language: every filter, operator and comparator, precedence,
//! lexical details, and error positions.

use bytes::Bytes;
use proptest::prelude::*;

use super::{parse_filter, parse_long, NumberError, MAX_DEPTH};
use crate::error::Error;
use crate::filter::{Comparator, CompareOp, Filter, ListOperator, SingleColumnValue};

fn parse(text: &str) -> Filter {
    match parse_filter(text) {
        Ok(filter) => filter,
        Err(e) => panic!("{text:?} should parse: {e}"),
    }
}

/// The position and message of the syntax error `text` must produce.
fn error(text: &str) -> (usize, String) {
    match parse_filter(text) {
        Err(Error::FilterSyntax { position, message }) => (position, message),
        other => panic!("{text:?} should be a syntax error, got {other:?}"),
    }
}

/// Asserts a syntax error at the first occurrence of `at` in `text`, with a
/// message containing `needle`.
fn assert_error_at(text: &str, at: &str, needle: &str) {
    let (position, message) = error(text);
    let expected = text.find(at).expect("marker in text");
    assert_eq!(position, expected, "{text:?}: {message}");
    assert!(
        message.contains(needle),
        "{text:?}: message {message:?} lacks {needle:?}"
    );
}

/// Asserts a syntax error at the end of `text`.
fn assert_error_at_end(text: &str, needle: &str) {
    let (position, message) = error(text);
    assert_eq!(position, text.len(), "{text:?}: {message}");
    assert!(
        message.contains(needle),
        "{text:?}: message {message:?} lacks {needle:?}"
    );
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn bin(s: &str) -> Comparator {
    Comparator::binary(b(s))
}

fn key_only() -> Filter {
    Filter::KeyOnly {
        length_as_value: false,
    }
}

fn prefix(p: &str) -> Filter {
    Filter::Prefix(b(p))
}

fn and(members: Vec<Filter>) -> Filter {
    Filter::List(ListOperator::MustPassAll, members)
}

fn or(members: Vec<Filter>) -> Filter {
    Filter::List(ListOperator::MustPassOne, members)
}

fn skip(inner: Filter) -> Filter {
    Filter::Skip(Box::new(inner))
}

fn while_(inner: Filter) -> Filter {
    Filter::While(Box::new(inner))
}

// ---------------------------------------------------------------------------
// Every filter
// ---------------------------------------------------------------------------

#[test]
fn key_only_filter() {
    assert_eq!(parse("KeyOnlyFilter()"), key_only());
    assert_eq!(
        parse("KeyOnlyFilter(true)"),
        Filter::KeyOnly {
            length_as_value: true
        }
    );
    assert_eq!(parse("KeyOnlyFilter(false)"), key_only());
}

#[test]
fn first_key_only_filter() {
    assert_eq!(parse("FirstKeyOnlyFilter()"), Filter::FirstKeyOnly);
}

#[test]
fn prefix_filters() {
    assert_eq!(parse("PrefixFilter('row')"), prefix("row"));
    assert_eq!(parse("PrefixFilter('')"), prefix(""));
    assert_eq!(
        parse("ColumnPrefixFilter('q')"),
        Filter::ColumnPrefix(b("q"))
    );
    assert_eq!(
        parse("MultipleColumnPrefixFilter('a', 'b','c')"),
        Filter::MultipleColumnPrefix(vec![b("a"), b("b"), b("c")])
    );
    assert_eq!(
        parse("MultipleColumnPrefixFilter()"),
        Filter::MultipleColumnPrefix(vec![])
    );
}

#[test]
fn counting_filters() {
    assert_eq!(parse("ColumnCountGetFilter(3)"), Filter::ColumnCountGet(3));
    assert_eq!(parse("PageFilter(10)"), Filter::Page(10));
    assert_eq!(parse("PageFilter(0)"), Filter::Page(0));
    assert_eq!(
        parse("PageFilter(9223372036854775807)"),
        Filter::Page(i64::MAX as u64)
    );
    assert_eq!(
        parse("ColumnPaginationFilter(5, 2)"),
        Filter::ColumnPagination {
            limit: 5,
            offset: 2
        }
    );
    assert_eq!(
        parse("ColumnCountGetFilter(2147483647)"),
        Filter::ColumnCountGet(i32::MAX as u32)
    );
}

#[test]
fn inclusive_stop_and_timestamps_filters() {
    assert_eq!(
        parse("InclusiveStopFilter('stop')"),
        Filter::InclusiveStop(b("stop"))
    );
    assert_eq!(
        parse("TimestampsFilter(5, 1, 9)"),
        Filter::Timestamps(vec![5, 1, 9])
    );
    assert_eq!(parse("TimestampsFilter()"), Filter::Timestamps(vec![]));
    assert_eq!(parse("TimestampsFilter(0)"), Filter::Timestamps(vec![0]));
}

#[test]
fn compare_filters() {
    assert_eq!(
        parse("RowFilter(=, 'binary:r1')"),
        Filter::Row(CompareOp::Equal, bin("r1"))
    );
    assert_eq!(
        parse("FamilyFilter(!=, 'binary:f')"),
        Filter::Family(CompareOp::NotEqual, bin("f"))
    );
    assert_eq!(
        parse("QualifierFilter(>=, 'binaryprefix:q')"),
        Filter::Qualifier(CompareOp::GreaterOrEqual, Comparator::BinaryPrefix(b("q")))
    );
    assert_eq!(
        parse("ValueFilter(<, 'binary:5')"),
        Filter::Value(CompareOp::Less, bin("5"))
    );
}

#[test]
fn column_range_filter() {
    assert_eq!(
        parse("ColumnRangeFilter('a', true, 'c', false)"),
        Filter::ColumnRange {
            min: Some(b("a")),
            min_inclusive: true,
            max: Some(b("c")),
            max_inclusive: false,
        }
    );
    assert_eq!(
        parse("ColumnRangeFilter('', false, '', TRUE)"),
        Filter::ColumnRange {
            min: None,
            min_inclusive: false,
            max: None,
            max_inclusive: true,
        }
    );
}

#[test]
fn single_column_value_filters() {
    let expected = SingleColumnValue {
        family: b("f"),
        qualifier: b("q"),
        op: CompareOp::Equal,
        comparator: bin("v"),
        filter_if_missing: false,
        latest_version_only: true,
    };
    assert_eq!(
        parse("SingleColumnValueFilter('f', 'q', =, 'binary:v')"),
        Filter::SingleColumnValue(expected.clone())
    );
    assert_eq!(
        parse("SingleColumnValueFilter('f', 'q', =, 'binary:v', true, false)"),
        Filter::SingleColumnValue(SingleColumnValue {
            filter_if_missing: true,
            latest_version_only: false,
            ..expected.clone()
        })
    );
    assert_eq!(
        parse("SingleColumnValueExcludeFilter('f', 'q', =, 'binary:v')"),
        Filter::SingleColumnValueExclude(expected.clone())
    );
    assert_eq!(
        parse("SingleColumnValueExcludeFilter('f','q',=,'binary:v',false,true)"),
        Filter::SingleColumnValueExclude(expected)
    );
}

#[test]
fn dependent_column_filter() {
    let base = |drop, value_test| Filter::DependentColumn {
        family: b("f"),
        qualifier: b("q"),
        drop_dependent_column: drop,
        value_test,
    };
    assert_eq!(parse("DependentColumnFilter('f', 'q')"), base(false, None));
    assert_eq!(
        parse("DependentColumnFilter('f', 'q', true)"),
        base(true, None)
    );
    assert_eq!(
        parse("DependentColumnFilter('f', 'q', false, <=, 'binary:9')"),
        base(false, Some((CompareOp::LessOrEqual, bin("9"))))
    );
}

#[test]
fn column_value_filter() {
    assert_eq!(
        parse("ColumnValueFilter('f', 'q', >, 'binary:5')"),
        Filter::ColumnValue {
            family: b("f"),
            qualifier: b("q"),
            op: CompareOp::Greater,
            comparator: bin("5"),
        }
    );
}

#[test]
fn the_documented_example() {
    assert_eq!(
        parse("SingleColumnValueFilter ('cf1', 'qual1', =, 'binary:val1') AND KeyOnlyFilter()"),
        and(vec![
            Filter::SingleColumnValue(SingleColumnValue {
                family: b("cf1"),
                qualifier: b("qual1"),
                op: CompareOp::Equal,
                comparator: bin("val1"),
                filter_if_missing: false,
                latest_version_only: true,
            }),
            key_only(),
        ])
    );
}

#[test]
fn public_entry_point_parses() {
    assert_eq!(Filter::parse("PrefixFilter('x')").unwrap(), prefix("x"));
    let mut f = Filter::parse("PrefixFilter('r1') AND KeyOnlyFilter()")
        .unwrap()
        .build(false);
    assert!(!f.filter_row_key(b"r1"));
    assert!(f.filter_row_key(b"r2"));
}

// ---------------------------------------------------------------------------
// Operators and comparators
// ---------------------------------------------------------------------------

#[test]
fn every_compare_operator() {
    for (symbol, op) in [
        ("<", CompareOp::Less),
        ("<=", CompareOp::LessOrEqual),
        ("=", CompareOp::Equal),
        ("!=", CompareOp::NotEqual),
        (">=", CompareOp::GreaterOrEqual),
        (">", CompareOp::Greater),
    ] {
        assert_eq!(
            parse(&format!("ValueFilter({symbol}, 'binary:x')")),
            Filter::Value(op, bin("x")),
            "{symbol}"
        );
        assert_eq!(op.symbol(), symbol);
    }
}

#[test]
fn every_comparator_type() {
    assert_eq!(
        parse("ValueFilter(=, 'binary:abc')"),
        Filter::Value(CompareOp::Equal, bin("abc"))
    );
    assert_eq!(
        parse("ValueFilter(=, 'binaryprefix:ab')"),
        Filter::Value(CompareOp::Equal, Comparator::BinaryPrefix(b("ab")))
    );
    assert_eq!(
        parse("ValueFilter(=, 'regexstring:a.*c')"),
        Filter::Value(CompareOp::Equal, Comparator::regex("a.*c").unwrap())
    );
    assert_eq!(
        parse("ValueFilter(!=, 'substring:HeLLo')"),
        Filter::Value(CompareOp::NotEqual, Comparator::substring("hello"))
    );
}

#[test]
fn comparator_splits_at_the_first_colon() {
    assert_eq!(
        parse("ValueFilter(=, 'binary:a:b')"),
        Filter::Value(CompareOp::Equal, bin("a:b"))
    );
    assert_eq!(
        parse("ValueFilter(=, 'binary:')"),
        Filter::Value(CompareOp::Equal, bin(""))
    );
    assert_eq!(
        parse("RowFilter(=, 'regexstring:^a:b$')"),
        Filter::Row(CompareOp::Equal, Comparator::regex("^a:b$").unwrap())
    );
}

#[test]
fn regex_and_substring_only_with_equal_and_not_equal() {
    for op in ["<", "<=", ">=", ">"] {
        let text = format!("ValueFilter({op}, 'regexstring:a')");
        assert_error_at(&text, op, "only work with = and !=");
        let text = format!("RowFilter({op}, 'substring:a')");
        assert_error_at(&text, op, "only work with = and !=");
    }
    let text = "SingleColumnValueFilter('f', 'q', <, 'regexstring:a')";
    assert_error_at(text, "<", "only work with = and !=");
    let text = "ColumnValueFilter('f', 'q', >, 'substring:a')";
    assert_error_at(text, ">", "only work with = and !=");
    let text = "DependentColumnFilter('f', 'q', true, <=, 'substring:a')";
    assert_error_at(text, "<=", "only work with = and !=");
}

// ---------------------------------------------------------------------------
// Precedence and grouping
// ---------------------------------------------------------------------------

#[test]
fn and_binds_tighter_than_or() {
    assert_eq!(
        parse("PrefixFilter('a') AND PrefixFilter('b') OR PrefixFilter('c')"),
        or(vec![and(vec![prefix("a"), prefix("b")]), prefix("c")])
    );
    assert_eq!(
        parse("PrefixFilter('a') OR PrefixFilter('b') AND PrefixFilter('c')"),
        or(vec![prefix("a"), and(vec![prefix("b"), prefix("c")])])
    );
    assert_eq!(
        parse("PrefixFilter('a') AND PrefixFilter('b') OR PrefixFilter('c') AND PrefixFilter('d')"),
        or(vec![
            and(vec![prefix("a"), prefix("b")]),
            and(vec![prefix("c"), prefix("d")])
        ])
    );
}

#[test]
fn chains_become_one_list() {
    assert_eq!(
        parse("PrefixFilter('a') AND PrefixFilter('b') AND PrefixFilter('c')"),
        and(vec![prefix("a"), prefix("b"), prefix("c")])
    );
    assert_eq!(
        parse("PrefixFilter('a') OR PrefixFilter('b') OR PrefixFilter('c')"),
        or(vec![prefix("a"), prefix("b"), prefix("c")])
    );
}

#[test]
fn parentheses_override_precedence() {
    assert_eq!(
        parse("PrefixFilter('a') AND (PrefixFilter('b') OR PrefixFilter('c'))"),
        and(vec![prefix("a"), or(vec![prefix("b"), prefix("c")])])
    );
    assert_eq!(
        parse("(PrefixFilter('a') AND PrefixFilter('b')) AND PrefixFilter('c')"),
        and(vec![and(vec![prefix("a"), prefix("b")]), prefix("c")])
    );
    assert_eq!(parse("((PrefixFilter('a')))"), prefix("a"));
}

#[test]
fn skip_and_while_bind_tighter_than_and() {
    assert_eq!(
        parse("SKIP PrefixFilter('a') AND PrefixFilter('b')"),
        and(vec![skip(prefix("a")), prefix("b")])
    );
    assert_eq!(
        parse("WHILE PrefixFilter('a') OR PrefixFilter('b')"),
        or(vec![while_(prefix("a")), prefix("b")])
    );
    assert_eq!(
        parse("PrefixFilter('a') AND SKIP PrefixFilter('b')"),
        and(vec![prefix("a"), skip(prefix("b"))])
    );
    assert_eq!(
        parse("SKIP (PrefixFilter('a') AND PrefixFilter('b'))"),
        skip(and(vec![prefix("a"), prefix("b")]))
    );
    assert_eq!(
        parse("SKIP WHILE PrefixFilter('a')"),
        skip(while_(prefix("a")))
    );
    assert_eq!(
        parse("WHILE(SKIP(KeyOnlyFilter()))"),
        while_(skip(key_only()))
    );
}

#[test]
fn keywords_are_case_sensitive() {
    assert_error_at(
        "KeyOnlyFilter() and FirstKeyOnlyFilter()",
        "and",
        "upper case",
    );
    assert_error_at(
        "KeyOnlyFilter() Or FirstKeyOnlyFilter()",
        "Or",
        "upper case",
    );
    assert_error_at("skip KeyOnlyFilter()", "skip", "unknown filter name 'skip'");
    assert_error_at("keyonlyfilter()", "keyonlyfilter", "unknown filter name");
}

#[test]
fn keywords_need_word_boundaries() {
    assert_error_at("SKIPKeyOnlyFilter()", "SKIP", "unknown filter name");
    assert_error_at(
        "KeyOnlyFilter() ANDFirstKeyOnlyFilter()",
        "AND",
        "expected AND, OR or end of input",
    );
}

// ---------------------------------------------------------------------------
// Lexical details
// ---------------------------------------------------------------------------

#[test]
fn whitespace_variants() {
    let expected = and(vec![prefix("a"), key_only()]);
    for text in [
        "PrefixFilter('a') AND KeyOnlyFilter()",
        "PrefixFilter ('a') AND KeyOnlyFilter ()",
        "  PrefixFilter( 'a' )   AND\tKeyOnlyFilter( )  ",
        "\nPrefixFilter('a')\r\nAND\nKeyOnlyFilter()\n",
        "PrefixFilter('a')AND KeyOnlyFilter()",
        "PrefixFilter('a') AND(KeyOnlyFilter())",
        "(PrefixFilter('a'))AND(KeyOnlyFilter())",
    ] {
        assert_eq!(parse(text), expected, "{text:?}");
    }
    assert_eq!(
        parse("RowFilter(=,'binary:a')"),
        parse("RowFilter ( = , 'binary:a' )")
    );
}

#[test]
fn doubled_quotes_escape_a_quote() {
    assert_eq!(parse("PrefixFilter('it''s')"), prefix("it's"));
    assert_eq!(parse("PrefixFilter('''')"), prefix("'"));
    assert_eq!(parse("PrefixFilter('''a''')"), prefix("'a'"));
    assert_eq!(parse("PrefixFilter('')"), prefix(""));
    assert_eq!(
        parse("ValueFilter(=, 'binary:don''t')"),
        Filter::Value(CompareOp::Equal, bin("don't"))
    );
}

#[test]
fn quoted_strings_keep_special_characters_and_utf8() {
    assert_eq!(
        parse("PrefixFilter('a AND b (c), OR')"),
        prefix("a AND b (c), OR")
    );
    assert_eq!(parse("PrefixFilter('é日')"), Filter::Prefix(b("é日")));
    assert_eq!(
        parse("PrefixFilter('é')"),
        Filter::Prefix(Bytes::from_static(&[0xc3, 0xa9]))
    );
}

#[test]
fn booleans_in_any_case() {
    for (word, value) in [
        ("true", true),
        ("TRUE", true),
        ("True", true),
        ("tRuE", true),
        ("false", false),
        ("FALSE", false),
        ("False", false),
    ] {
        assert_eq!(
            parse(&format!("KeyOnlyFilter({word})")),
            Filter::KeyOnly {
                length_as_value: value
            },
            "{word}"
        );
    }
    assert_error_at("KeyOnlyFilter(yes)", "yes", "expected true or false");
    assert_error_at("KeyOnlyFilter(1)", "1", "expected true or false");
    assert_error_at("KeyOnlyFilter('true')", "'true'", "expected true or false");
}

#[test]
fn integers() {
    assert!(matches!(parse_long("0"), Ok(0)));
    assert!(matches!(parse_long("007"), Ok(7)));
    assert!(matches!(parse_long("-5"), Ok(-5)));
    assert!(matches!(parse_long("-0"), Ok(0)));
    assert!(matches!(parse_long("9223372036854775807"), Ok(i64::MAX)));
    assert!(matches!(parse_long("-9223372036854775808"), Ok(i64::MIN)));
    assert!(matches!(
        parse_long("9223372036854775808"),
        Err(NumberError::OutOfRange)
    ));
    for bad in ["", "-", "+5", "5x", "--5", "1.5", "٣"] {
        assert!(
            matches!(parse_long(bad), Err(NumberError::NotANumber)),
            "{bad:?}"
        );
    }
}

#[test]
fn negative_numbers_parse_but_counts_reject_them() {
    assert_error_at(
        "PageFilter(-1)",
        "-1",
        "page size must not be negative, found -1",
    );
    assert_error_at(
        "TimestampsFilter(5, -3)",
        "-3",
        "timestamp must not be negative, found -3",
    );
    assert_error_at(
        "ColumnPaginationFilter(2, -1)",
        "-1",
        "offset must not be negative",
    );
    assert_error_at(
        "ColumnCountGetFilter(-7)",
        "-7",
        "limit must not be negative",
    );
    assert_error_at("PageFilter(-x)", "-x", "expected an integer");
}

#[test]
fn integer_range_errors() {
    assert_error_at(
        "ColumnCountGetFilter(2147483648)",
        "2147483648",
        "too large",
    );
    assert_error_at(
        "PageFilter(99999999999999999999)",
        "9999",
        "does not fit in 64 bits",
    );
}

// ---------------------------------------------------------------------------
// Errors and their positions
// ---------------------------------------------------------------------------

#[test]
fn empty_input() {
    assert_eq!(error(""), (0, "empty filter string".to_string()));
    assert_eq!(error("   \t ").0, 5);
}

#[test]
fn unknown_filter_name() {
    assert_error_at(
        "FooFilter()",
        "FooFilter",
        "unknown filter name 'FooFilter'",
    );
    assert_error_at(
        "KeyOnlyFilter() AND BarFilter('x')",
        "BarFilter",
        "unknown filter name",
    );
    assert_error_at("garbage", "garbage", "unknown filter name");
}

#[test]
fn missing_parentheses() {
    assert_error_at_end("(KeyOnlyFilter()", "')' to close the '(' at position 0");
    assert_error_at_end("KeyOnlyFilter(", "an argument of KeyOnlyFilter");
    assert_error_at_end("KeyOnlyFilter", "'(' after KeyOnlyFilter");
    assert_error_at_end("PrefixFilter('a'", "',' or ')'");
    assert_error_at(
        "KeyOnlyFilter AND FirstKeyOnlyFilter()",
        "AND",
        "'(' after KeyOnlyFilter",
    );
    assert_error_at(
        "(KeyOnlyFilter() FirstKeyOnlyFilter())",
        "FirstKeyOnlyFilter",
        "')' to close",
    );
}

#[test]
fn unterminated_quote() {
    assert_error_at("PrefixFilter('abc)", "'", "unterminated quoted string");
    assert_error_at("PrefixFilter('it''s)", "'", "unterminated quoted string");
    assert_error_at(
        "KeyOnlyFilter() AND PrefixFilter('x",
        "'x",
        "unterminated quoted string",
    );
    // An earlier error is reported first.
    assert_error_at("FooFilter('abc", "FooFilter", "unknown filter name");
}

#[test]
fn bad_operator() {
    assert_error_at(
        "RowFilter(=>, 'binary:a')",
        "=>",
        "expected a comparison operator",
    );
    assert_error_at(
        "RowFilter(==, 'binary:a')",
        "==",
        "expected a comparison operator",
    );
    assert_error_at(
        "RowFilter('=', 'binary:a')",
        "'='",
        "expected a comparison operator",
    );
}

#[test]
fn bad_comparator() {
    assert_error_at(
        "ValueFilter(=, 'foo:bar')",
        "'foo",
        "unknown comparator type 'foo'",
    );
    assert_error_at(
        "ValueFilter(=, 'Binary:bar')",
        "'Binary",
        "unknown comparator type",
    );
    assert_error_at("ValueFilter(=, 'bar')", "'bar'", "has no type");
    assert_error_at(
        "ValueFilter(=, binary:bar)",
        "binary",
        "expected a comparator",
    );
    assert_error_at(
        "ValueFilter(=, 'regexstring:(')",
        "'regex",
        "invalid regular expression",
    );
}

#[test]
fn wrong_argument_count() {
    assert_error_at("PrefixFilter()", ")", "expected 1 argument, found 0");
    assert_error_at(
        "PrefixFilter('a', 'b')",
        "'b'",
        "expected 1 argument, found 2",
    );
    assert_error_at(
        "ColumnPaginationFilter(1)",
        ")",
        "expected 2 arguments (limit, offset), found 1",
    );
    assert_error_at("FirstKeyOnlyFilter(true)", "true", "expected no arguments");
    assert_error_at(
        "KeyOnlyFilter(true, false)",
        "false",
        "expected 0 or 1 arguments",
    );
    assert_error_at(
        "SingleColumnValueFilter('f', 'q', =, 'binary:v', true)",
        ")",
        "expected 4 or 6 arguments, found 5",
    );
    assert_error_at(
        "DependentColumnFilter('f', 'q', true, =)",
        ")",
        "expected 2, 3 or 5 arguments, found 4",
    );
    assert_error_at(
        "DependentColumnFilter('f', 'q', true, =, 'binary:x', 'y')",
        "'y'",
        "expected 2, 3 or 5 arguments, found 6",
    );
    assert_error_at(
        "ValueFilter(=)",
        ")",
        "expected 2 arguments (operator, comparator), found 1",
    );
    assert_error_at(
        "ColumnRangeFilter('a', true, 'b')",
        ")",
        "expected 4 arguments",
    );
    assert_error_at(
        "ColumnValueFilter('f', 'q', =)",
        ")",
        "expected 4 arguments",
    );
}

#[test]
fn wrong_argument_type() {
    assert_error_at(
        "PageFilter('5')",
        "'5'",
        "expected an integer, found a quoted string",
    );
    assert_error_at(
        "PrefixFilter(abc)",
        "abc",
        "expected a quoted string, found 'abc'",
    );
    assert_error_at(
        "SingleColumnValueFilter('f', 'q', =, 'binary:v', true, maybe)",
        "maybe",
        "expected true or false",
    );
    assert_error_at(
        "ColumnRangeFilter(a, true, 'b', true)",
        "a,",
        "expected a quoted string",
    );
    assert_error_at(
        "MultipleColumnPrefixFilter('a', b)",
        "b)",
        "expected a quoted string",
    );
}

#[test]
fn argument_list_punctuation() {
    assert_error_at("PrefixFilter('a' 'b')", "'b'", "expected ',' or ')'");
    assert_error_at("PrefixFilter('a',)", ")", "expected an argument");
    assert_error_at("PrefixFilter(,'a')", ",", "expected an argument");
    assert_error_at(
        "PrefixFilter(('a'))",
        "('a'",
        "expected an argument of PrefixFilter, found '('",
    );
    assert_error_at(
        "MultipleColumnPrefixFilter('a', 'b', 'a')",
        "'a')",
        "prefixes must be distinct",
    );
}

#[test]
fn trailing_input() {
    assert_error_at(
        "KeyOnlyFilter() garbage",
        "garbage",
        "expected AND, OR or end of input, found 'garbage'",
    );
    assert_eq!(error("KeyOnlyFilter())"), (15, "unmatched ')'".to_string()));
    assert_error_at("KeyOnlyFilter() 'x'", "'x'", "found a quoted string");
    assert_error_at("KeyOnlyFilter() ,", ",", "found ','");
}

#[test]
fn dangling_operators() {
    assert_error_at_end(
        "KeyOnlyFilter() AND",
        "expected a filter, found end of input",
    );
    assert_error_at_end("KeyOnlyFilter() OR ", "expected a filter");
    assert_error_at(
        "AND KeyOnlyFilter()",
        "AND",
        "expected a filter, found the operator",
    );
    assert_error_at(
        "KeyOnlyFilter() AND OR FirstKeyOnlyFilter()",
        "OR",
        "expected a filter, found the operator",
    );
    assert_error_at_end("SKIP", "expected a filter");
    assert_error_at_end("WHILE ", "expected a filter");
    assert_error_at("()", ")", "expected a filter, found ')'");
    assert_error_at("SKIP 'x'", "'x'", "found a quoted string");
}

#[test]
fn nesting_is_limited_not_fatal() {
    let ok = format!(
        "{}KeyOnlyFilter(){}",
        "(".repeat(MAX_DEPTH),
        ")".repeat(MAX_DEPTH)
    );
    assert_eq!(parse(&ok), key_only());
    let deep = format!(
        "{}KeyOnlyFilter(){}",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    let (position, message) = error(&deep);
    assert_eq!(position, MAX_DEPTH);
    assert!(message.contains("nested"), "{message}");
    let (_, message) = error(&format!("{}KeyOnlyFilter()", "SKIP ".repeat(10_000)));
    assert!(message.contains("nested"), "{message}");
    assert_eq!(
        parse(&format!("{}KeyOnlyFilter()", "WHILE ".repeat(MAX_DEPTH))),
        (0..MAX_DEPTH).fold(key_only(), |f, _| while_(f))
    );
}

#[test]
fn long_chains_are_fine() {
    let text = vec!["KeyOnlyFilter()"; 10_000].join(" AND ");
    match parse(&text) {
        Filter::List(ListOperator::MustPassAll, members) => assert_eq!(members.len(), 10_000),
        other => panic!("{other:?}"),
    }
}

#[test]
fn error_positions_are_byte_offsets() {
    // 'é' is two bytes: the unknown name starts at byte 23, not char 22.
    let text = "PrefixFilter('é') AND Nope()";
    assert_error_at(text, "Nope", "unknown filter name");
    assert_eq!(error(text).0, 23);
}

#[test]
fn long_words_are_shortened_in_messages() {
    let name = "X".repeat(1000);
    let (_, message) = error(&format!("{name}()"));
    assert!(message.len() < 200, "{message}");
    assert!(message.ends_with("...'"), "{message}");
}

// ---------------------------------------------------------------------------
// Robustness
// ---------------------------------------------------------------------------

/// Pieces that make inputs look like filter strings, so random combinations
/// reach deep into the parser.
const PIECES: &[&str] = &[
    "KeyOnlyFilter",
    "PrefixFilter",
    "SingleColumnValueFilter",
    "DependentColumnFilter",
    "TimestampsFilter",
    "ColumnRangeFilter",
    "ValueFilter",
    "MultipleColumnPrefixFilter",
    "(",
    ")",
    ",",
    "'",
    "''",
    "'binary:a'",
    "'regexstring:[a-'",
    "'substring:é'",
    "'f'",
    " ",
    "\t",
    "AND",
    "OR",
    "SKIP",
    "WHILE",
    "=",
    "!=",
    "<",
    ">=",
    "-",
    "-1",
    "9223372036854775808",
    "true",
    "FALSE",
    "é",
    "日本",
    "\u{0}",
];

fn check_no_panic(text: &str) -> Result<(), TestCaseError> {
    match parse_filter(text) {
        Ok(_) => {}
        Err(Error::FilterSyntax { position, message }) => {
            prop_assert!(
                position <= text.len(),
                "{position} past the end of {text:?}"
            );
            prop_assert!(
                text.is_char_boundary(position),
                "{position} inside a character of {text:?}"
            );
            prop_assert!(!message.is_empty());
        }
        Err(other) => prop_assert!(false, "non-syntax error {other} for {text:?}"),
    }
    Ok(())
}

proptest! {
    #[test]
    fn arbitrary_strings_never_panic(text in ".*") {
        check_no_panic(&text)?;
    }

    #[test]
    fn arbitrary_bytes_as_lossy_strings_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        check_no_panic(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn filter_like_strings_never_panic(
        pieces in prop::collection::vec(prop::sample::select(PIECES), 0..40)
    ) {
        check_no_panic(&pieces.concat())?;
    }
}

#[test]
fn maximum_nesting_fits_a_small_stack() {
    // Gateways may parse on threads with small stacks: the deepest accepted
    // input, mixing every nesting form, must parse, build, compare and drop
    // within 256 KiB.
    let levels = MAX_DEPTH / 2;
    let text = format!(
        "{}KeyOnlyFilter(){}",
        "SKIP (".repeat(levels),
        ")".repeat(levels)
    );
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || match parse_filter(&text) {
            Ok(filter) => {
                let mut evaluator = filter.build(false);
                evaluator.reset();
                let kept = !evaluator.filter_row_key(b"row");
                let same = filter == filter.clone();
                drop(filter);
                kept && same
            }
            Err(_) => false,
        })
        .unwrap();
    assert!(handle.join().unwrap());
}
