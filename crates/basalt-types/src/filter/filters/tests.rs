//! Drives every filter through the scanner's call order (see the `filter`
//! module docs) on small hand-made rows.

use bytes::Bytes;

use super::{merge_all, merge_any};
use crate::cell::{Cell, CellType};
use crate::filter::{
    CellFilter, Comparator, CompareOp, Filter, FuzzyKey, ListOperator, ReturnCode,
    SingleColumnValue,
};

use ReturnCode::*;

/// How the test scanner applies NextRow. HBase's own scope is the family
/// (one store scanner per family); the module docs say the row. The filters
/// must give the same answer either way.
#[derive(Debug, Clone, Copy, PartialEq)]
enum NextRowScope {
    Row,
    Family,
}

fn cell(row: &str, family: &str, qualifier: &str, ts: i64, value: &str) -> Cell {
    Cell::put(
        Bytes::copy_from_slice(row.as_bytes()),
        Bytes::copy_from_slice(family.as_bytes()),
        Bytes::copy_from_slice(qualifier.as_bytes()),
        ts,
        Bytes::copy_from_slice(value.as_bytes()),
    )
}

/// Groups `(row, family, qualifier, ts, value)` tuples into rows, keeping
/// the row order given (reversed scans list rows high to low) and sorting
/// each row's cells into KeyValue order.
fn table(cells: &[(&str, &str, &str, i64, &str)]) -> Vec<Vec<Cell>> {
    let mut rows: Vec<Vec<Cell>> = Vec::new();
    for &(r, f, q, ts, v) in cells {
        let c = cell(r, f, q, ts, v);
        match rows.last_mut() {
            Some(last) if last[0].row == c.row => last.push(c),
            _ => rows.push(vec![c]),
        }
    }
    for row in &mut rows {
        row.sort();
    }
    rows
}

/// The scanner loop of the module docs, with an explicit NextRow scope.
fn scan_scoped(
    filter: &Filter,
    reversed: bool,
    scope: NextRowScope,
    rows: &[Vec<Cell>],
) -> Vec<Vec<Cell>> {
    let mut f = filter.build(reversed);
    let mut out = Vec::new();
    for row in rows {
        if f.filter_all_remaining() {
            break;
        }
        f.reset();
        if f.filter_row_key(&row[0].row) {
            continue;
        }
        let mut kept = Vec::new();
        let mut i = 0;
        while let Some(current) = row.get(i) {
            let code = f.filter_cell(current);
            if matches!(code, Include | IncludeAndNextCol | IncludeAndSeekNextRow) {
                kept.push(f.transform_cell(current.clone()));
            }
            match code {
                Include | Skip => i += 1,
                IncludeAndNextCol | NextCol => {
                    while row.get(i).is_some_and(|c| c.same_column(current)) {
                        i += 1;
                    }
                }
                IncludeAndSeekNextRow | NextRow => match scope {
                    NextRowScope::Row => break,
                    NextRowScope::Family => {
                        while row.get(i).is_some_and(|c| c.family == current.family) {
                            i += 1;
                        }
                    }
                },
                SeekNextUsingHint => {
                    let hint = f.next_cell_hint(current).expect("a seek comes with a hint");
                    assert_eq!(
                        hint.compare_key(current),
                        std::cmp::Ordering::Greater,
                        "hint {hint:?} does not move past {current:?}"
                    );
                    while row
                        .get(i)
                        .is_some_and(|c| c.compare_key(&hint) == std::cmp::Ordering::Less)
                    {
                        i += 1;
                    }
                }
            }
        }
        if f.has_filter_row() {
            f.filter_row_cells(&mut kept);
        }
        if kept.is_empty() || f.filter_row() {
            continue;
        }
        out.push(kept);
    }
    out
}

/// Scans with both NextRow scopes, checks they agree, and renders the
/// surviving cells as `row/family:qualifier@ts=value`.
fn scan_dir(filter: &Filter, reversed: bool, rows: &[Vec<Cell>]) -> Vec<String> {
    let by_row = scan_scoped(filter, reversed, NextRowScope::Row, rows);
    let by_family = scan_scoped(filter, reversed, NextRowScope::Family, rows);
    assert_eq!(by_row, by_family, "NextRow scope changed the result");
    render(&by_row)
}

fn scan(filter: &Filter, rows: &[Vec<Cell>]) -> Vec<String> {
    scan_dir(filter, false, rows)
}

fn render(rows: &[Vec<Cell>]) -> Vec<String> {
    rows.iter()
        .flatten()
        .map(|c| {
            format!(
                "{}/{}:{}@{}={}",
                String::from_utf8_lossy(&c.row),
                String::from_utf8_lossy(&c.family),
                String::from_utf8_lossy(&c.qualifier),
                c.timestamp,
                crate::cell::escape_bytes(&c.value)
            )
        })
        .collect()
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn bin(s: &str) -> Comparator {
    Comparator::binary(b(s))
}

fn and(members: Vec<Filter>) -> Filter {
    Filter::List(ListOperator::MustPassAll, members)
}

fn or(members: Vec<Filter>) -> Filter {
    Filter::List(ListOperator::MustPassOne, members)
}

fn scv(family: &str, qualifier: &str, op: CompareOp, value: &str) -> SingleColumnValue {
    SingleColumnValue {
        family: b(family),
        qualifier: b(qualifier),
        op,
        comparator: bin(value),
        filter_if_missing: false,
        latest_version_only: true,
    }
}

/// Three rows, two families, several versions.
fn sample() -> Vec<Vec<Cell>> {
    table(&[
        ("r1", "f", "a", 2, "x"),
        ("r1", "f", "a", 1, "y"),
        ("r1", "f", "b", 1, "z"),
        ("r1", "g", "a", 1, "w"),
        ("r2", "f", "b", 3, "x"),
        ("r2", "g", "c", 3, "v"),
        ("r3", "g", "a", 5, "x"),
    ])
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

// ---------------------------------------------------------------------------

#[test]
fn no_filter_semantics_baseline() {
    // An empty AND list passes everything, in KeyValue order.
    assert_eq!(
        scan(&and(vec![]), &sample()),
        strs(&[
            "r1/f:a@2=x",
            "r1/f:a@1=y",
            "r1/f:b@1=z",
            "r1/g:a@1=w",
            "r2/f:b@3=x",
            "r2/g:c@3=v",
            "r3/g:a@5=x"
        ])
    );
    assert_eq!(scan(&or(vec![]), &sample()), scan(&and(vec![]), &sample()));
}

#[test]
fn key_only_strips_values() {
    let got = scan(
        &Filter::KeyOnly {
            length_as_value: false,
        },
        &table(&[("r1", "f", "a", 1, "hello"), ("r1", "f", "b", 1, "")]),
    );
    assert_eq!(got, strs(&["r1/f:a@1=", "r1/f:b@1="]));
}

#[test]
fn key_only_length_as_value_is_four_byte_big_endian() {
    let got = scan(
        &Filter::KeyOnly {
            length_as_value: true,
        },
        &table(&[("r1", "f", "a", 1, "hello"), ("r1", "f", "b", 1, "")]),
    );
    assert_eq!(
        got,
        strs(&[
            "r1/f:a@1=\\x00\\x00\\x00\\x05",
            "r1/f:b@1=\\x00\\x00\\x00\\x00"
        ])
    );
}

#[test]
fn first_key_only_keeps_the_first_cell_of_each_row() {
    assert_eq!(
        scan(&Filter::FirstKeyOnly, &sample()),
        strs(&["r1/f:a@2=x", "r2/f:b@3=x", "r3/g:a@5=x"])
    );
}

#[test]
fn prefix_filter_keeps_matching_rows_and_ends_past_the_prefix() {
    let rows = table(&[
        ("a", "f", "q", 1, "1"),
        ("ab1", "f", "q", 1, "2"),
        ("ab2", "f", "q", 1, "3"),
        ("b", "f", "q", 1, "4"),
        ("ab3", "f", "q", 1, "unreachable: scan already ended"),
    ]);
    let filter = Filter::Prefix(b("ab"));
    assert_eq!(scan(&filter, &rows), strs(&["ab1/f:q@1=2", "ab2/f:q@1=3"]));

    let mut f = filter.build(false);
    f.reset();
    assert!(f.filter_row_key(b"a"));
    assert!(!f.filter_all_remaining(), "'a' sorts before the prefix");
    f.reset();
    assert!(
        f.filter_row_key(b"a"),
        "shorter row that is a prefix of the prefix"
    );
    assert!(!f.filter_all_remaining());
    f.reset();
    assert!(!f.filter_row_key(b"ab"));
    f.reset();
    assert!(f.filter_row_key(b"ac"));
    assert!(f.filter_all_remaining());
}

#[test]
fn prefix_filter_reversed_ends_below_the_prefix() {
    let rows = table(&[
        ("c", "f", "q", 1, "1"),
        ("ab2", "f", "q", 1, "2"),
        ("ab1", "f", "q", 1, "3"),
        ("ab", "f", "q", 1, "4"),
        ("a", "f", "q", 1, "5"),
        ("ab0", "f", "q", 1, "unreachable"),
    ]);
    let filter = Filter::Prefix(b("ab"));
    assert_eq!(
        scan_dir(&filter, true, &rows),
        strs(&["ab2/f:q@1=2", "ab1/f:q@1=3", "ab/f:q@1=4"])
    );
    let mut f = filter.build(true);
    f.reset();
    assert!(f.filter_row_key(b"c"));
    assert!(
        !f.filter_all_remaining(),
        "reversed: 'c' is before the prefix"
    );
    f.reset();
    assert!(f.filter_row_key(b"a"));
    assert!(f.filter_all_remaining());
}

#[test]
fn empty_prefix_matches_every_row() {
    assert_eq!(scan(&Filter::Prefix(Bytes::new()), &sample()).len(), 7);
}

#[test]
fn column_prefix_filter_works_per_family() {
    let rows = table(&[
        ("r1", "f", "a", 1, "1"),
        ("r1", "f", "ba", 2, "2"),
        ("r1", "f", "ba", 1, "3"),
        ("r1", "f", "bb", 1, "4"),
        ("r1", "f", "c", 1, "5"),
        ("r1", "g", "b", 1, "6"),
        ("r1", "g", "d", 1, "7"),
        ("r2", "f", "x", 1, "8"),
    ]);
    assert_eq!(
        scan(&Filter::ColumnPrefix(b("b")), &rows),
        strs(&["r1/f:ba@2=2", "r1/f:ba@1=3", "r1/f:bb@1=4", "r1/g:b@1=6"])
    );
}

#[test]
fn column_prefix_hints_seek_to_prefix_or_next_family() {
    let mut f = Filter::ColumnPrefix(b("m")).build(false);
    let before = cell("r", "f", "a", 1, "");
    assert_eq!(f.filter_cell(&before), SeekNextUsingHint);
    let hint = f.next_cell_hint(&before).unwrap();
    assert_eq!(&hint.qualifier[..], b"m");
    assert_eq!(&hint.family[..], b"f");
    assert!(hint.compare_key(&cell("r", "f", "m", i64::MAX, "")) != std::cmp::Ordering::Greater);

    let after = cell("r", "f", "z", 1, "");
    assert_eq!(f.filter_cell(&after), SeekNextUsingHint);
    let hint = f.next_cell_hint(&after).unwrap();
    // Past every cell of family "f", before any cell of the next family.
    assert_eq!(
        hint.compare_key(&cell("r", "f", "\u{7f}\u{7f}", 0, "")),
        std::cmp::Ordering::Greater
    );
    assert_eq!(
        hint.compare_key(&cell("r", "f\0", "", i64::MAX, "")),
        std::cmp::Ordering::Less
    );
    assert_eq!(f.filter_cell(&cell("r", "f", "mm", 1, "")), Include);
    assert_eq!(f.next_cell_hint(&cell("r", "f", "mm", 1, "")), None);
}

#[test]
fn multiple_column_prefix_filter_keeps_any_prefix() {
    let rows = table(&[
        ("r1", "f", "a", 1, "1"),
        ("r1", "f", "b1", 1, "2"),
        ("r1", "f", "c", 1, "3"),
        ("r1", "f", "d1", 1, "4"),
        ("r1", "f", "e", 1, "5"),
        ("r1", "g", "d", 1, "6"),
    ]);
    let filter = Filter::MultipleColumnPrefix(vec![b("d"), b("b"), b("d")]);
    assert_eq!(
        scan(&filter, &rows),
        strs(&["r1/f:b1@1=2", "r1/f:d1@1=4", "r1/g:d@1=6"])
    );
}

#[test]
fn multiple_column_prefix_with_overlapping_prefixes() {
    // HBase only checks the largest prefix below the qualifier and would
    // drop "ac" here; any matching prefix keeps the column.
    let rows = table(&[
        ("r1", "f", "a", 1, "1"),
        ("r1", "f", "ab", 1, "2"),
        ("r1", "f", "ac", 1, "3"),
        ("r1", "f", "b", 1, "4"),
    ]);
    let filter = Filter::MultipleColumnPrefix(vec![b("a"), b("ab")]);
    assert_eq!(
        scan(&filter, &rows),
        strs(&["r1/f:a@1=1", "r1/f:ab@1=2", "r1/f:ac@1=3"])
    );
}

#[test]
fn multiple_column_prefix_without_prefixes_keeps_everything() {
    assert_eq!(
        scan(&Filter::MultipleColumnPrefix(vec![]), &sample()).len(),
        7
    );
}

#[test]
fn column_count_get_returns_first_columns_and_ends_the_scan() {
    let rows = table(&[
        ("r1", "f", "a", 2, "1"),
        ("r1", "f", "a", 1, "2"),
        ("r1", "f", "b", 1, "3"),
        ("r2", "f", "a", 1, "4"),
        ("r2", "f", "b", 1, "5"),
        ("r2", "f", "c", 1, "6"),
        ("r3", "f", "a", 1, "7"),
    ]);
    // r1 has 2 columns (not more than the limit): the scan goes on; r2 has
    // three, so its first two come back and the scan stops.
    assert_eq!(
        scan(&Filter::ColumnCountGet(2), &rows),
        strs(&["r1/f:a@2=1", "r1/f:b@1=3", "r2/f:a@1=4", "r2/f:b@1=5"])
    );
}

#[test]
fn column_count_get_zero_keeps_nothing_and_stops() {
    let rows = sample();
    assert_eq!(
        scan(&Filter::ColumnCountGet(0), &rows),
        Vec::<String>::new()
    );
    let mut f = Filter::ColumnCountGet(0).build(false);
    f.reset();
    assert!(!f.filter_row_key(b"r1"));
    assert_eq!(f.filter_cell(&rows[0][0]), NextCol);
    assert!(f.filter_all_remaining());
}

#[test]
fn page_filter_limits_rows() {
    assert_eq!(
        scan(&Filter::Page(2), &sample()),
        strs(&[
            "r1/f:a@2=x",
            "r1/f:a@1=y",
            "r1/f:b@1=z",
            "r1/g:a@1=w",
            "r2/f:b@3=x",
            "r2/g:c@3=v"
        ])
    );
    assert!(scan(&Filter::Page(0), &sample()).is_empty());
    let mut f = Filter::Page(1).build(false);
    assert!(f.has_filter_row());
    assert!(!f.filter_all_remaining());
    assert!(!f.filter_row());
    assert!(f.filter_all_remaining());
}

#[test]
fn page_filter_counts_only_rows_earlier_members_kept() {
    // AND stops asking at the first member that drops the row, so the page
    // counts rows that survive the value test.
    let filter = and(vec![
        Filter::SingleColumnValue(SingleColumnValue {
            filter_if_missing: true,
            ..scv("g", "a", CompareOp::Equal, "x")
        }),
        Filter::Page(1),
    ]);
    assert_eq!(scan(&filter, &sample()), strs(&["r3/g:a@5=x"]));
}

#[test]
fn column_pagination_pages_columns_across_families() {
    let rows = table(&[
        ("r1", "f", "a", 2, "1"),
        ("r1", "f", "a", 1, "2"),
        ("r1", "f", "b", 1, "3"),
        ("r1", "g", "c", 1, "4"),
        ("r1", "g", "d", 1, "5"),
        ("r2", "f", "a", 1, "6"),
        ("r2", "f", "b", 1, "7"),
    ]);
    assert_eq!(
        scan(
            &Filter::ColumnPagination {
                limit: 2,
                offset: 1
            },
            &rows
        ),
        strs(&["r1/f:b@1=3", "r1/g:c@1=4", "r2/f:b@1=7"])
    );
    assert!(scan(
        &Filter::ColumnPagination {
            limit: 0,
            offset: 0
        },
        &rows
    )
    .is_empty());
    assert_eq!(
        scan(
            &Filter::ColumnPagination {
                limit: u32::MAX,
                offset: u32::MAX
            },
            &rows
        ),
        Vec::<String>::new()
    );
}

#[test]
fn inclusive_stop_includes_the_stop_row() {
    let rows = table(&[
        ("a", "f", "q", 1, "1"),
        ("b", "f", "q", 1, "2"),
        ("c", "f", "q", 1, "3"),
        ("b", "f", "q", 2, "unreachable"),
    ]);
    assert_eq!(
        scan(&Filter::InclusiveStop(b("b")), &rows),
        strs(&["a/f:q@1=1", "b/f:q@1=2"])
    );
}

#[test]
fn inclusive_stop_reversed() {
    let rows = table(&[
        ("c", "f", "q", 1, "1"),
        ("b", "f", "q", 1, "2"),
        ("a", "f", "q", 1, "3"),
    ]);
    assert_eq!(
        scan_dir(&Filter::InclusiveStop(b("b")), true, &rows),
        strs(&["c/f:q@1=1", "b/f:q@1=2"])
    );
}

#[test]
fn timestamps_filter_keeps_listed_versions() {
    let rows = table(&[
        ("r1", "f", "a", 5, "1"),
        ("r1", "f", "a", 4, "2"),
        ("r1", "f", "a", 3, "3"),
        ("r1", "f", "a", 2, "4"),
        ("r1", "f", "a", 1, "5"),
        ("r1", "f", "b", 4, "6"),
    ]);
    assert_eq!(
        scan(&Filter::Timestamps(vec![4, 2]), &rows),
        strs(&["r1/f:a@4=2", "r1/f:a@2=4", "r1/f:b@4=6"])
    );
    let mut f = Filter::Timestamps(vec![4, 2]).build(false);
    assert_eq!(f.filter_cell(&rows[0][0]), Skip);
    assert_eq!(
        f.filter_cell(&rows[0][4]),
        NextCol,
        "older than every listed ts"
    );
    assert!(scan(&Filter::Timestamps(vec![]), &rows).is_empty());
}

#[test]
fn row_filter_compares_row_keys() {
    let rows = sample();
    assert_eq!(
        scan(&Filter::Row(CompareOp::Greater, bin("r1")), &rows),
        strs(&["r2/f:b@3=x", "r2/g:c@3=v", "r3/g:a@5=x"])
    );
    assert_eq!(
        scan(&Filter::Row(CompareOp::LessOrEqual, bin("r1")), &rows).len(),
        4
    );
    assert_eq!(
        scan(&Filter::Row(CompareOp::NotEqual, bin("r2")), &rows).len(),
        5
    );
    assert_eq!(
        scan(
            &Filter::Row(CompareOp::Equal, Comparator::regex("^r[23]$").unwrap()),
            &rows
        )
        .len(),
        3
    );
    assert_eq!(
        scan(
            &Filter::Row(CompareOp::Equal, Comparator::BinaryPrefix(b("r"))),
            &rows
        )
        .len(),
        7
    );
}

#[test]
fn family_filter_skips_failing_families() {
    let rows = sample();
    assert_eq!(
        scan(&Filter::Family(CompareOp::Equal, bin("g")), &rows),
        strs(&["r1/g:a@1=w", "r2/g:c@3=v", "r3/g:a@5=x"])
    );
    assert_eq!(
        scan(&Filter::Family(CompareOp::Less, bin("g")), &rows),
        strs(&["r1/f:a@2=x", "r1/f:a@1=y", "r1/f:b@1=z", "r2/f:b@3=x"])
    );
}

#[test]
fn qualifier_filter_with_each_operator() {
    let rows = table(&[
        ("r", "f", "a", 1, ""),
        ("r", "f", "b", 1, ""),
        ("r", "f", "c", 1, ""),
    ]);
    let names = |op| {
        scan(&Filter::Qualifier(op, bin("b")), &rows)
            .iter()
            .map(|s| s[4..5].to_string())
            .collect::<String>()
    };
    assert_eq!(names(CompareOp::Less), "a");
    assert_eq!(names(CompareOp::LessOrEqual), "ab");
    assert_eq!(names(CompareOp::Equal), "b");
    assert_eq!(names(CompareOp::NotEqual), "ac");
    assert_eq!(names(CompareOp::GreaterOrEqual), "bc");
    assert_eq!(names(CompareOp::Greater), "c");
}

#[test]
fn value_filter_with_each_comparator() {
    let rows = table(&[
        ("r", "f", "a", 1, "apple"),
        ("r", "f", "b", 1, "Banana"),
        ("r", "f", "c", 1, "cherry"),
    ]);
    let quals = |f: Filter| {
        scan(&f, &rows)
            .iter()
            .map(|s| s[4..5].to_string())
            .collect::<String>()
    };
    assert_eq!(quals(Filter::Value(CompareOp::Equal, bin("apple"))), "a");
    assert_eq!(
        quals(Filter::Value(
            CompareOp::Equal,
            Comparator::BinaryPrefix(b("ch"))
        )),
        "c"
    );
    assert_eq!(
        quals(Filter::Value(
            CompareOp::Equal,
            Comparator::regex("an+a").unwrap()
        )),
        "b"
    );
    assert_eq!(
        quals(Filter::Value(
            CompareOp::NotEqual,
            Comparator::regex("an+a").unwrap()
        )),
        "ac"
    );
    assert_eq!(
        quals(Filter::Value(
            CompareOp::Equal,
            Comparator::substring("BAN")
        )),
        "b"
    );
    assert_eq!(
        quals(Filter::Value(CompareOp::Greater, bin("b"))),
        "c",
        "'Banana' < 'b' in unsigned byte order"
    );
}

#[test]
fn value_filter_skips_only_the_failing_version() {
    let rows = table(&[("r", "f", "a", 2, "new"), ("r", "f", "a", 1, "old")]);
    assert_eq!(
        scan(&Filter::Value(CompareOp::Equal, bin("old")), &rows),
        strs(&["r/f:a@1=old"])
    );
}

fn range(min: Option<&str>, min_inclusive: bool, max: Option<&str>, max_inclusive: bool) -> Filter {
    Filter::ColumnRange {
        min: min.map(b),
        min_inclusive,
        max: max.map(b),
        max_inclusive,
    }
}

#[test]
fn column_range_bounds() {
    let rows = table(&[
        ("r", "f", "a", 1, ""),
        ("r", "f", "b", 2, ""),
        ("r", "f", "b", 1, ""),
        ("r", "f", "c", 1, ""),
        ("r", "f", "d", 1, ""),
        ("r", "g", "b", 1, ""),
        ("r", "g", "e", 1, ""),
    ]);
    let cols = |f: Filter| {
        scan(&f, &rows)
            .iter()
            .map(|s| format!("{}{}", &s[2..3], &s[4..5]))
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(cols(range(Some("b"), true, Some("c"), true)), "fb,fb,fc,gb");
    assert_eq!(cols(range(Some("b"), false, Some("d"), false)), "fc");
    assert_eq!(cols(range(None, true, Some("b"), false)), "fa");
    assert_eq!(cols(range(Some("d"), true, None, true)), "fd,ge");
    assert_eq!(
        cols(range(None, false, None, false)),
        "fa,fb,fb,fc,fd,gb,ge"
    );
    assert_eq!(cols(range(Some("c"), true, Some("b"), true)), "");
}

#[test]
fn single_column_value_filter_decides_the_row() {
    let rows = table(&[
        ("r1", "f", "a", 1, "1"),
        ("r1", "f", "s", 1, "yes"),
        ("r1", "g", "z", 1, "2"),
        ("r2", "f", "a", 1, "3"),
        ("r2", "f", "s", 1, "no"),
        ("r2", "g", "z", 1, "4"),
        ("r3", "f", "a", 1, "5"),
    ]);
    let filter = Filter::SingleColumnValue(scv("f", "s", CompareOp::Equal, "yes"));
    assert_eq!(
        scan(&filter, &rows),
        strs(&["r1/f:a@1=1", "r1/f:s@1=yes", "r1/g:z@1=2", "r3/f:a@1=5"])
    );
    let filter = Filter::SingleColumnValue(SingleColumnValue {
        filter_if_missing: true,
        ..scv("f", "s", CompareOp::Equal, "yes")
    });
    assert_eq!(
        scan(&filter, &rows),
        strs(&["r1/f:a@1=1", "r1/f:s@1=yes", "r1/g:z@1=2"])
    );
    assert!(filter.build(false).has_filter_row());
}

#[test]
fn single_column_value_latest_version_only() {
    let rows = table(&[
        ("r1", "f", "s", 2, "no"),
        ("r1", "f", "s", 1, "yes"),
        ("r1", "f", "t", 1, "other"),
    ]);
    let latest = Filter::SingleColumnValue(scv("f", "s", CompareOp::Equal, "yes"));
    assert!(scan(&latest, &rows).is_empty(), "newest version fails");
    let any = Filter::SingleColumnValue(SingleColumnValue {
        latest_version_only: false,
        ..scv("f", "s", CompareOp::Equal, "yes")
    });
    assert_eq!(
        scan(&any, &rows),
        strs(&["r1/f:s@2=no", "r1/f:s@1=yes", "r1/f:t@1=other"])
    );
}

#[test]
fn single_column_value_exclude_drops_the_tested_column() {
    let rows = table(&[
        ("r1", "f", "a", 1, "1"),
        ("r1", "f", "s", 2, "yes"),
        ("r1", "f", "s", 1, "old"),
        ("r1", "g", "s", 1, "other family"),
        ("r2", "f", "s", 1, "no"),
    ]);
    let filter = Filter::SingleColumnValueExclude(SingleColumnValue {
        latest_version_only: false,
        ..scv("f", "s", CompareOp::Equal, "yes")
    });
    assert_eq!(
        scan(&filter, &rows),
        strs(&["r1/f:a@1=1", "r1/g:s@1=other family"])
    );
}

#[test]
fn dependent_column_keeps_matching_timestamps() {
    let rows = table(&[
        ("r1", "f", "a", 3, "a3"),
        ("r1", "f", "a", 2, "a2"),
        ("r1", "f", "a", 1, "a1"),
        ("r1", "f", "dep", 3, "yes"),
        ("r1", "f", "dep", 1, "no"),
        ("r1", "g", "b", 1, "b1"),
        ("r2", "f", "a", 1, "x"),
    ]);
    let dependent =
        |drop: bool, value_test: Option<(CompareOp, Comparator)>| Filter::DependentColumn {
            family: b("f"),
            qualifier: b("dep"),
            drop_dependent_column: drop,
            value_test,
        };
    assert_eq!(
        scan(&dependent(false, None), &rows),
        strs(&[
            "r1/f:a@3=a3",
            "r1/f:a@1=a1",
            "r1/f:dep@3=yes",
            "r1/f:dep@1=no",
            "r1/g:b@1=b1"
        ])
    );
    assert_eq!(
        scan(&dependent(true, None), &rows),
        strs(&["r1/f:a@3=a3", "r1/f:a@1=a1", "r1/g:b@1=b1"])
    );
    assert_eq!(
        scan(
            &dependent(false, Some((CompareOp::Equal, bin("yes")))),
            &rows
        ),
        strs(&["r1/f:a@3=a3", "r1/f:dep@3=yes"])
    );
}

#[test]
fn column_value_filter_returns_only_that_column() {
    let rows = table(&[
        ("r1", "f", "a", 1, "1"),
        ("r1", "f", "c", 3, "5"),
        ("r1", "f", "c", 2, "2"),
        ("r1", "f", "c", 1, "7"),
        ("r1", "f", "d", 1, "9"),
        ("r1", "g", "c", 1, "9"),
        ("r2", "f", "a", 1, "9"),
    ]);
    let filter = Filter::ColumnValue {
        family: b("f"),
        qualifier: b("c"),
        op: CompareOp::GreaterOrEqual,
        comparator: bin("5"),
    };
    assert_eq!(scan(&filter, &rows), strs(&["r1/f:c@3=5", "r1/f:c@1=7"]));
}

// ---------------------------------------------------------------------------
// FilterList
// ---------------------------------------------------------------------------

#[test]
fn and_list_requires_every_member() {
    let filter = and(vec![
        Filter::Prefix(b("r1")),
        Filter::Value(CompareOp::Equal, bin("x")),
    ]);
    assert_eq!(scan(&filter, &sample()), strs(&["r1/f:a@2=x"]));
}

#[test]
fn or_list_takes_either_member() {
    let filter = or(vec![
        Filter::Qualifier(CompareOp::Equal, bin("b")),
        Filter::Value(CompareOp::Equal, bin("w")),
    ]);
    assert_eq!(
        scan(&filter, &sample()),
        strs(&["r1/f:b@1=z", "r1/g:a@1=w", "r2/f:b@3=x"])
    );
}

#[test]
fn or_list_of_row_filters_unions_rows() {
    let filter = or(vec![Filter::Prefix(b("r1")), Filter::Prefix(b("r3"))]);
    assert_eq!(
        scan(&filter, &sample()),
        strs(&[
            "r1/f:a@2=x",
            "r1/f:a@1=y",
            "r1/f:b@1=z",
            "r1/g:a@1=w",
            "r3/g:a@5=x"
        ])
    );
}

#[test]
fn or_list_does_not_reask_a_member_about_columns_it_skipped() {
    // ColumnPagination(2, 0) answers IncludeAndNextCol for a@2; the other
    // member wants every version, so the list moves one cell on. Asking the
    // pagination filter about a@1 would count column "a" twice.
    let rows = table(&[
        ("r", "f", "a", 2, "1"),
        ("r", "f", "a", 1, "2"),
        ("r", "f", "b", 1, "3"),
        ("r", "f", "c", 2, "4"),
        ("r", "f", "c", 1, "5"),
        ("r", "f", "d", 1, "6"),
    ]);
    let filter = or(vec![
        Filter::ColumnPagination {
            limit: 2,
            offset: 0,
        },
        Filter::Qualifier(CompareOp::Equal, bin("c")),
    ]);
    assert_eq!(
        scan(&filter, &rows),
        strs(&["r/f:a@2=1", "r/f:b@1=3", "r/f:c@2=4", "r/f:c@1=5"])
    );
}

#[test]
fn or_list_reasks_a_family_skipping_member_in_the_next_family() {
    let rows = table(&[
        ("r", "f", "a", 1, "1"),
        ("r", "f", "z", 1, "2"),
        ("r", "g", "b", 1, "3"),
        ("r", "g", "c", 1, "4"),
    ]);
    let filter = or(vec![
        range(None, true, Some("b"), true),
        Filter::Value(CompareOp::Equal, bin("4")),
    ]);
    assert_eq!(
        scan(&filter, &rows),
        strs(&["r/f:a@1=1", "r/g:b@1=3", "r/g:c@1=4"])
    );
}

#[test]
fn or_list_applies_only_including_members_transforms() {
    let rows = table(&[
        ("r", "f", "a", 1, "x"),
        ("r", "f", "b", 1, "x"),
        ("r", "f", "a", 0, "y"),
        ("r", "f", "c", 1, "y"),
    ]);
    let filter = or(vec![
        and(vec![
            Filter::KeyOnly {
                length_as_value: false,
            },
            Filter::Qualifier(CompareOp::Equal, bin("a")),
        ]),
        Filter::Value(CompareOp::Equal, bin("x")),
    ]);
    assert_eq!(
        scan(&filter, &rows),
        strs(&["r/f:a@1=", "r/f:a@0=", "r/f:b@1=x"])
    );
}

#[test]
fn and_list_transforms_after_all_members_tested_the_original() {
    let rows = table(&[("r", "f", "a", 1, "abc"), ("r", "f", "b", 1, "xyz")]);
    let filter = and(vec![
        Filter::KeyOnly {
            length_as_value: true,
        },
        Filter::Value(CompareOp::Equal, bin("abc")),
    ]);
    assert_eq!(
        scan(&filter, &rows),
        strs(&["r/f:a@1=\\x00\\x00\\x00\\x03"])
    );
}

#[test]
fn and_list_stops_asking_after_a_rejection() {
    // The value test rejects r1's cells before pagination counts them.
    let rows = table(&[
        ("r", "f", "a", 1, "no"),
        ("r", "f", "b", 1, "yes"),
        ("r", "f", "c", 1, "yes"),
        ("r", "f", "d", 1, "yes"),
    ]);
    let filter = and(vec![
        Filter::Value(CompareOp::Equal, bin("yes")),
        Filter::ColumnPagination {
            limit: 1,
            offset: 1,
        },
    ]);
    assert_eq!(scan(&filter, &rows), strs(&["r/f:c@1=yes"]));
}

#[test]
fn and_list_ends_the_scan_when_a_member_does() {
    let filter = and(vec![
        Filter::InclusiveStop(b("r2")),
        Filter::Qualifier(CompareOp::NotEqual, bin("zzz")),
    ]);
    assert_eq!(scan(&filter, &sample()).len(), 6);
    let mut f = filter.build(false);
    f.reset();
    assert!(f.filter_row_key(b"r3"));
    assert!(f.filter_all_remaining());
}

#[test]
fn or_list_ends_only_when_every_member_does() {
    let filter = or(vec![
        Filter::InclusiveStop(b("r1")),
        Filter::Prefix(b("r3")),
    ]);
    assert_eq!(
        scan(&filter, &sample()),
        strs(&[
            "r1/f:a@2=x",
            "r1/f:a@1=y",
            "r1/f:b@1=z",
            "r1/g:a@1=w",
            "r3/g:a@5=x"
        ])
    );
    let mut f = filter.build(false);
    f.reset();
    assert!(f.filter_row_key(b"r4"));
    assert!(f.filter_all_remaining());
}

#[test]
fn lists_combine_whole_row_decisions() {
    let rows = table(&[
        ("r1", "f", "s", 1, "yes"),
        ("r1", "f", "t", 1, "yes"),
        ("r2", "f", "s", 1, "yes"),
        ("r2", "f", "t", 1, "no"),
        ("r3", "f", "s", 1, "no"),
        ("r3", "f", "t", 1, "no"),
    ]);
    let s = Filter::SingleColumnValue(scv("f", "s", CompareOp::Equal, "yes"));
    let t = Filter::SingleColumnValue(scv("f", "t", CompareOp::Equal, "yes"));
    let rows_of = |f: Filter| {
        let mut rows: Vec<String> = scan(&f, &rows).iter().map(|c| c[..2].to_string()).collect();
        rows.dedup();
        rows.join(",")
    };
    assert_eq!(rows_of(and(vec![s.clone(), t.clone()])), "r1");
    assert_eq!(rows_of(or(vec![s.clone(), t.clone()])), "r1,r2");
    assert!(and(vec![s.clone(), Filter::FirstKeyOnly])
        .build(false)
        .has_filter_row());
    assert!(!and(vec![Filter::FirstKeyOnly])
        .build(false)
        .has_filter_row());
}

#[test]
fn or_list_exclude_member_still_edits_row_cells() {
    // As in HBase, filter_row_cells runs for every member of an OR list.
    let rows = table(&[("r1", "f", "a", 1, "1"), ("r1", "f", "s", 1, "yes")]);
    let filter = or(vec![
        Filter::SingleColumnValueExclude(scv("f", "s", CompareOp::Equal, "yes")),
        Filter::Qualifier(CompareOp::Equal, bin("s")),
    ]);
    assert_eq!(scan(&filter, &rows), strs(&["r1/f:a@1=1"]));
}

#[test]
fn and_list_seeks_to_the_farthest_hint() {
    let filter = and(vec![
        Filter::ColumnPrefix(b("c")),
        range(Some("b"), true, None, true),
    ]);
    let mut f = filter.build(false);
    let a = cell("r", "f", "a", 1, "");
    assert_eq!(f.filter_cell(&a), SeekNextUsingHint);
    // Only the first seeking member is asked (AND stops at a rejection), so
    // the hint is at least that member's.
    let hint = f.next_cell_hint(&a).unwrap();
    assert!(hint.qualifier[..] >= b"b"[..]);
    let rows = table(&[
        ("r", "f", "a", 1, "1"),
        ("r", "f", "b", 1, "2"),
        ("r", "f", "c", 1, "3"),
        ("r", "f", "ca", 1, "4"),
        ("r", "f", "d", 1, "5"),
    ]);
    assert_eq!(scan(&filter, &rows), strs(&["r/f:c@1=3", "r/f:ca@1=4"]));
}

#[test]
fn or_list_seeks_to_the_nearest_hint_or_not_at_all() {
    let filter = or(vec![
        Filter::ColumnPrefix(b("d")),
        Filter::ColumnPrefix(b("c")),
    ]);
    let mut f = filter.build(false);
    let a = cell("r", "f", "a", 1, "");
    assert_eq!(f.filter_cell(&a), SeekNextUsingHint);
    assert_eq!(&f.next_cell_hint(&a).unwrap().qualifier[..], b"c");

    let filter = or(vec![
        Filter::ColumnPrefix(b("d")),
        Filter::Qualifier(CompareOp::Equal, bin("q")),
    ]);
    let mut f = filter.build(false);
    assert_eq!(f.filter_cell(&a), Skip);
    assert_eq!(f.next_cell_hint(&a), None);
    let rows = table(&[
        ("r", "f", "a", 1, "1"),
        ("r", "f", "d1", 1, "2"),
        ("r", "f", "q", 1, "3"),
        ("r", "f", "z", 1, "4"),
    ]);
    assert_eq!(scan(&filter, &rows), strs(&["r/f:d1@1=2", "r/f:q@1=3"]));
}

#[test]
fn nested_lists() {
    // (Prefix r1 OR Prefix r2) AND (qualifier b OR value v)
    let filter = and(vec![
        or(vec![Filter::Prefix(b("r1")), Filter::Prefix(b("r2"))]),
        or(vec![
            Filter::Qualifier(CompareOp::Equal, bin("b")),
            Filter::Value(CompareOp::Equal, bin("v")),
        ]),
    ]);
    assert_eq!(
        scan(&filter, &sample()),
        strs(&["r1/f:b@1=z", "r2/f:b@3=x", "r2/g:c@3=v"])
    );
}

#[test]
fn merge_tables_follow_hbase() {
    let all = [
        Include,
        IncludeAndNextCol,
        IncludeAndSeekNextRow,
        Skip,
        NextCol,
        NextRow,
        SeekNextUsingHint,
    ];
    for &x in &all {
        assert_eq!(merge_all(Include, x), x);
        assert_eq!(merge_all(x, Include), x);
        assert_eq!(merge_all(x, SeekNextUsingHint), SeekNextUsingHint);
        assert_eq!(merge_any(None, x), x);
        assert_eq!(merge_any(Some(Include), x), Include);
        assert_eq!(merge_any(Some(x), Include), Include);
        assert_eq!(merge_all(x, x), x);
        assert_eq!(merge_any(Some(x), x), x);
    }
    assert_eq!(merge_all(IncludeAndNextCol, Skip), NextCol);
    assert_eq!(merge_all(IncludeAndSeekNextRow, NextCol), NextRow);
    assert_eq!(
        merge_all(IncludeAndNextCol, IncludeAndSeekNextRow),
        IncludeAndSeekNextRow
    );
    assert_eq!(merge_any(Some(IncludeAndNextCol), Skip), Include);
    assert_eq!(merge_any(Some(NextRow), NextCol), NextCol);
    assert_eq!(
        merge_any(Some(IncludeAndSeekNextRow), NextCol),
        IncludeAndNextCol
    );
    assert_eq!(merge_any(Some(SeekNextUsingHint), NextRow), Skip);
    assert_eq!(
        merge_any(Some(IncludeAndNextCol), SeekNextUsingHint),
        Include
    );
}

// ---------------------------------------------------------------------------
// SKIP and WHILE
// ---------------------------------------------------------------------------

#[test]
fn skip_drops_rows_with_any_rejected_cell() {
    let rows = table(&[
        ("r1", "f", "a", 1, "1"),
        ("r1", "f", "b", 1, "0"),
        ("r2", "f", "a", 1, "2"),
        ("r2", "f", "b", 1, "3"),
        ("r3", "f", "a", 1, "0"),
    ]);
    let filter = Filter::Skip(Box::new(Filter::Value(CompareOp::NotEqual, bin("0"))));
    assert_eq!(scan(&filter, &rows), strs(&["r2/f:a@1=2", "r2/f:b@1=3"]));
}

#[test]
fn skip_forwards_row_key_and_transform() {
    let filter = Filter::Skip(Box::new(Filter::Prefix(b("r2"))));
    assert_eq!(
        scan(&filter, &sample()),
        strs(&["r2/f:b@3=x", "r2/g:c@3=v"])
    );
    let filter = Filter::Skip(Box::new(Filter::KeyOnly {
        length_as_value: false,
    }));
    assert!(scan(&filter, &sample()).iter().all(|c| c.ends_with('=')));
}

#[test]
fn skip_counts_include_and_next_col_as_a_rejection() {
    // HBase's rule: any code but Include marks the row.
    let filter = Filter::Skip(Box::new(Filter::ColumnPagination {
        limit: 10,
        offset: 0,
    }));
    assert!(scan(&filter, &sample()).is_empty());
}

#[test]
fn while_ends_the_scan_at_the_first_rejected_row() {
    let rows = table(&[
        ("a", "f", "q", 1, "1"),
        ("b", "f", "q", 1, "2"),
        ("c", "f", "q", 1, "3"),
        ("a2", "f", "q", 1, "unreachable"),
    ]);
    let filter = Filter::While(Box::new(Filter::Row(CompareOp::Less, bin("c"))));
    assert_eq!(scan(&filter, &rows), strs(&["a/f:q@1=1", "b/f:q@1=2"]));
}

#[test]
fn while_stops_in_the_middle_of_a_row() {
    let rows = table(&[
        ("r1", "f", "a", 1, "ok"),
        ("r1", "f", "b", 1, "ok"),
        ("r2", "f", "a", 1, "ok"),
        ("r2", "f", "b", 1, "bad"),
        ("r2", "f", "c", 1, "ok"),
        ("r3", "f", "a", 1, "ok"),
    ]);
    let filter = Filter::While(Box::new(Filter::Value(CompareOp::Equal, bin("ok"))));
    assert_eq!(
        scan(&filter, &rows),
        strs(&["r1/f:a@1=ok", "r1/f:b@1=ok", "r2/f:a@1=ok"])
    );
    // Plain skip of the same value test keeps going.
    let plain = Filter::Value(CompareOp::Equal, bin("ok"));
    assert_eq!(scan(&plain, &rows).len(), 5);
}

#[test]
fn while_on_a_whole_row_decision() {
    let rows = table(&[
        ("r1", "f", "s", 1, "yes"),
        ("r2", "f", "s", 1, "no"),
        ("r3", "f", "s", 1, "yes"),
    ]);
    let filter = Filter::While(Box::new(Filter::SingleColumnValue(scv(
        "f",
        "s",
        CompareOp::Equal,
        "yes",
    ))));
    assert_eq!(scan(&filter, &rows), strs(&["r1/f:s@1=yes"]));
}

#[test]
fn skip_inside_and_with_while() {
    let rows = table(&[
        ("r1", "f", "a", 1, "1"),
        ("r2", "f", "a", 1, "0"),
        ("r3", "f", "a", 1, "3"),
        ("r4", "f", "a", 1, "4"),
    ]);
    let filter = and(vec![
        Filter::Skip(Box::new(Filter::Value(CompareOp::NotEqual, bin("0")))),
        Filter::While(Box::new(Filter::Row(CompareOp::LessOrEqual, bin("r3")))),
    ]);
    assert_eq!(scan(&filter, &rows), strs(&["r1/f:a@1=1", "r3/f:a@1=3"]));
}

#[test]
fn filters_ignore_delete_marker_type_when_matching_columns() {
    // Column identity is family + qualifier whatever the cell type.
    let mut marker = cell("r", "f", "s", 5, "");
    marker.cell_type = CellType::Delete;
    let mut f = Filter::ColumnValue {
        family: b("f"),
        qualifier: b("s"),
        op: CompareOp::Equal,
        comparator: bin(""),
    }
    .build(false);
    assert_eq!(f.filter_cell(&marker), Include);
}

#[test]
fn every_filter_survives_reset_between_rows() {
    // Reusing one evaluator for many rows must not leak state: scanning the
    // same row twice gives the same cells twice.
    let one = table(&[
        ("r", "f", "a", 2, "x"),
        ("r", "f", "a", 1, "y"),
        ("r", "f", "s", 1, "yes"),
    ]);
    let filters = vec![
        Filter::FirstKeyOnly,
        Filter::ColumnPagination {
            limit: 1,
            offset: 1,
        },
        Filter::SingleColumnValue(scv("f", "s", CompareOp::Equal, "yes")),
        Filter::DependentColumn {
            family: b("f"),
            qualifier: b("s"),
            drop_dependent_column: false,
            value_test: None,
        },
        Filter::ColumnValue {
            family: b("f"),
            qualifier: b("a"),
            op: CompareOp::Equal,
            comparator: bin("y"),
        },
        Filter::Skip(Box::new(Filter::Value(CompareOp::NotEqual, bin("q")))),
        or(vec![
            Filter::FirstKeyOnly,
            Filter::Qualifier(CompareOp::Equal, bin("s")),
        ]),
    ];
    for filter in filters {
        let mut f: Box<dyn CellFilter> = filter.build(false);
        let run = |f: &mut Box<dyn CellFilter>| {
            f.reset();
            let mut kept = Vec::new();
            for c in &one[0] {
                if matches!(f.filter_cell(c), Include | IncludeAndNextCol) {
                    kept.push(c.clone());
                }
            }
            kept
        };
        let first = run(&mut f);
        let second = run(&mut f);
        assert_eq!(first, second, "{filter:?}");
    }
}

/// `????_99` as HBase's docs write a fuzzy pattern: `?` free, the rest fixed.
fn fuzzy(pattern: &str) -> FuzzyKey {
    let fixed = pattern.bytes().map(|b| b != b'?').collect();
    FuzzyKey::new(Bytes::copy_from_slice(pattern.as_bytes()), fixed).unwrap()
}

#[test]
fn fuzzy_row_filter_keeps_rows_matching_any_pattern_at_their_fixed_bytes() {
    let rows = table(&[
        ("u001_01_x", "f", "q", 1, "1"),
        ("u001_99_x", "f", "q", 1, "2"),
        ("u002_99", "f", "q", 1, "3"),
        ("u003_98", "f", "q", 1, "4"),
        ("u004_77", "f", "q", 1, "5"),
        (
            "u00",
            "f",
            "q",
            1,
            "6: shorter than the pattern, matching as far as it goes",
        ),
    ]);
    let filter = Filter::FuzzyRow(vec![fuzzy("u???_99"), fuzzy("u???_77")]);
    assert_eq!(
        scan(&filter, &rows),
        strs(&[
            "u001_99_x/f:q@1=2",
            "u002_99/f:q@1=3",
            "u004_77/f:q@1=5",
            "u00/f:q@1=6: shorter than the pattern, matching as far as it goes"
        ])
    );
    assert_eq!(
        scan_dir(&filter, true, &rows),
        scan(&filter, &rows),
        "the same rows, whichever way the scan runs (one row per entry here)"
    );
}

#[test]
fn fuzzy_row_filter_ends_a_forward_scan_once_no_later_row_can_match() {
    let filter = Filter::FuzzyRow(vec![fuzzy("ab?d")]);
    let mut f = filter.build(false);
    let at = |f: &mut Box<dyn CellFilter>, row: &str| {
        f.reset();
        f.filter_cell(&cell(row, "f", "q", 1, "v"))
    };
    assert_eq!(at(&mut f, "aa"), NextRow);
    assert!(!f.filter_all_remaining(), "'ab..' rows still lie ahead");
    assert_eq!(at(&mut f, "abxd"), Include);
    assert_eq!(at(&mut f, "abxe"), NextRow);
    assert!(!f.filter_all_remaining(), "'aby d' still lies ahead");
    assert_eq!(at(&mut f, "ac"), NextRow);
    assert!(f.filter_all_remaining(), "a fixed 'b' can never come back");
    let mut reversed = filter.build(true);
    assert_eq!(at(&mut reversed, "ac"), NextRow);
    assert!(!reversed.filter_all_remaining(), "a reversed scan goes on");
}

#[test]
fn fuzzy_keys_read_both_forms_of_hbase_masks_and_refuse_mismatched_lengths() {
    // A client's own form: 0 fixed, 1 free.
    let own = FuzzyKey::from_hbase_mask(b("ab"), &[0, 1]).unwrap();
    assert_eq!(own.fixed(), [true, false]);
    // What HBase's Java client sends after preprocessing: 0xFF fixed.
    let sent = FuzzyKey::from_hbase_mask(b("ab"), &[0xFF, 2]).unwrap();
    assert_eq!(sent.fixed(), [true, false]);
    let v1 = FuzzyKey::from_hbase_mask(b("ab"), &[0, 0xFF]).unwrap();
    assert_eq!(v1.fixed(), [false, true]);
    let err = FuzzyKey::from_hbase_mask(b("abc"), &[0, 1]).unwrap_err();
    assert!(err.to_string().contains("3 bytes"), "{err}");
}
