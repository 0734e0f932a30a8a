//! Filters as HBase's native RPC sends them select, in a live database,
//! exactly what the same filter written in the filter language selects:
//! every case scans one table twice (forward, reversed, and with three
//! versions), once with the decoded filter and once with the parsed one.
//! Filters the language cannot write (MultiRowRangeFilter, NullComparator,
//! NO_OP, regex flags) are checked against rows known to match.
//!
//! Garbage never panics the decoder: random bytes under every class name,
//! mutated encodings and random nested lists come back as a filter or as a
//! `DoNotRetryIOException` naming what failed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use basalt::{ColumnFamilyDescriptor, Database, Filter, Put, Scan, Table, TableDescriptor};
use basalt_rpc::filters::{decode_comparator, decode_filter, PACKAGE};
use basalt_rpc::proto::filter as pb;
use basalt_rpc::proto::hbase::CompareType;
use bytes::Bytes;
use proptest::prelude::*;
use prost::Message;

// The proptest settings (failing cases persisted beside this file) and the
// byte mutations are shared by every crate's garbage-input test.
#[path = "../../../test-support/garbage.rs"]
mod garbage;
use garbage::{arb_mutations, config, mutate};

// ---------------------------------------------------------------------------
// Building messages
// ---------------------------------------------------------------------------

fn filter(short: &str, message: impl Message) -> pb::Filter {
    pb::Filter {
        name: format!("{PACKAGE}{short}"),
        serialized_filter: Some(message.encode_to_vec()),
    }
}

fn nested(f: pb::Filter) -> pb::NestedFilter {
    pb::NestedFilter {
        name: f.name,
        serialized_filter: f.serialized_filter.map(Bytes::from),
    }
}

fn comparator(short: &str, message: impl Message) -> pb::Comparator {
    pb::Comparator {
        name: format!("{PACKAGE}{short}"),
        serialized_comparator: Some(message.encode_to_vec()),
    }
}

fn binary(value: &str) -> pb::Comparator {
    comparator(
        "BinaryComparator",
        pb::BinaryComparator {
            comparable: Some(pb::ByteArrayComparable {
                value: Some(b(value)),
            }),
        },
    )
}

fn b(text: &str) -> Bytes {
    Bytes::copy_from_slice(text.as_bytes())
}

fn compare(op: CompareType, c: pb::Comparator) -> Option<pb::CompareFilter> {
    Some(pb::CompareFilter {
        compare_op: op as i32,
        comparator: Some(c),
    })
}

fn list(op: pb::FilterListOperator, members: Vec<pb::Filter>) -> pb::Filter {
    filter(
        "FilterList",
        pb::FilterList {
            operator: op as i32,
            filters: members.into_iter().map(nested).collect(),
        },
    )
}

fn row_filter(op: CompareType, c: pb::Comparator) -> pb::Filter {
    filter(
        "RowFilter",
        pb::RowFilter {
            compare_filter: compare(op, c),
        },
    )
}

fn value_filter(op: CompareType, c: pb::Comparator) -> pb::Filter {
    filter(
        "ValueFilter",
        pb::ValueFilter {
            compare_filter: compare(op, c),
        },
    )
}

fn single_column_value(
    family: &str,
    qualifier: &str,
    op: CompareType,
    c: pb::Comparator,
    if_missing: bool,
) -> pb::SingleColumnValueFilter {
    pb::SingleColumnValueFilter {
        column_family: Some(b(family)),
        column_qualifier: Some(b(qualifier)),
        compare_op: op as i32,
        comparator: Some(c),
        filter_if_missing: Some(if_missing),
        latest_version_only: Some(true),
    }
}

fn row_range(start: &str, start_inclusive: bool, stop: &str, stop_inclusive: bool) -> pb::RowRange {
    pb::RowRange {
        start_row: Some(b(start)),
        start_row_inclusive: Some(start_inclusive),
        stop_row: Some(b(stop)),
        stop_row_inclusive: Some(stop_inclusive),
    }
}

// ---------------------------------------------------------------------------
// The database
// ---------------------------------------------------------------------------

/// One cell as a scan returns it: row, family, qualifier, timestamp, value.
type Cell = (Bytes, Bytes, Bytes, i64, Bytes);

/// Twenty rows `r00`..`r19` in two families, each cell at a known
/// timestamp, `cf:a` with two versions; and rows `s0`, `s1` without
/// `cf:b`, for the filters that care about a missing column.
fn load(dir: &std::path::Path) -> (Database, Table) {
    let db = Database::open(dir).unwrap();
    db.create_table(
        TableDescriptor::new("t")
            .family(ColumnFamilyDescriptor::new("cf").max_versions(3))
            .family(ColumnFamilyDescriptor::new("cf2")),
    )
    .unwrap();
    let table = db.table("t").unwrap();
    for i in 0..20i64 {
        let put = Put::new(Bytes::from(format!("r{i:02}")))
            .add_at("cf", "a", 50, Bytes::from(format!("old{i}")))
            .add_at("cf", "a", 100 + i % 3, Bytes::from(format!("va{i}")))
            .add_at(
                "cf",
                "b",
                100 + i % 2,
                Bytes::from(format!("{:03}", i * 7 % 20)),
            )
            .add_at(
                "cf2",
                "c",
                300,
                Bytes::from(if i % 2 == 0 { "even" } else { "odd" }),
            );
        table.put(&put).unwrap();
    }
    for row in ["s0", "s1"] {
        table
            .put(
                &Put::new(row)
                    .add_at("cf", "a", 100, "VA-s")
                    .add_at("cf2", "c", 300, "odd"),
            )
            .unwrap();
    }
    (db, table)
}

/// The scans every case runs: forward, reversed, three versions.
fn scans() -> [Scan; 3] {
    [
        Scan::new(),
        Scan::new().reversed(true),
        Scan::new().max_versions(3),
    ]
}

fn cells(table: &Table, scan: Scan, filter: Option<Filter>) -> Vec<Cell> {
    let scan = match filter {
        Some(f) => scan.filter(f),
        None => scan,
    };
    let mut out = Vec::new();
    for row in table.scan(&scan).unwrap() {
        for c in row.unwrap().cells {
            out.push((c.row, c.family, c.qualifier, c.timestamp, c.value));
        }
    }
    out
}

fn rows_of(cells: &[Cell]) -> Vec<String> {
    let mut rows: Vec<String> = cells
        .iter()
        .map(|c| String::from_utf8_lossy(&c.0).into_owned())
        .collect();
    rows.dedup();
    rows
}

// ---------------------------------------------------------------------------
// Decoded filters against parsed ones
// ---------------------------------------------------------------------------

/// Pairs of a native filter and the filter-language string that means the
/// same; all select something.
fn same_as_language() -> Vec<(pb::Filter, &'static str)> {
    use CompareType::*;
    let regex = |pattern: &str, flags: i32| {
        comparator(
            "RegexStringComparator",
            pb::RegexStringComparator {
                pattern: pattern.to_string(),
                pattern_flags: flags,
                charset: "UTF-8".to_string(),
                engine: Some("JAVA".to_string()),
            },
        )
    };
    vec![
        (
            filter(
                "PrefixFilter",
                pb::PrefixFilter {
                    prefix: Some(b("r1")),
                },
            ),
            "PrefixFilter('r1')",
        ),
        (
            row_filter(Less, binary("r05")),
            "RowFilter(<, 'binary:r05')",
        ),
        (
            value_filter(
                Equal,
                comparator(
                    "SubstringComparator",
                    pb::SubstringComparator {
                        substr: "VA1".to_string(),
                    },
                ),
            ),
            "ValueFilter(=, 'substring:va1')",
        ),
        (
            filter(
                "QualifierFilter",
                pb::QualifierFilter {
                    // CASE_INSENSITIVE | DOTALL, as a Java client sends
                    // Pattern.CASE_INSENSITIVE.
                    compare_filter: compare(Equal, regex("^[AC]$", 2 | 32)),
                },
            ),
            "QualifierFilter(=, 'regexstring:(?is)^[AC]$')",
        ),
        (
            value_filter(NotEqual, regex("^va1", 0)),
            "ValueFilter(!=, 'regexstring:^va1')",
        ),
        (
            filter(
                "FamilyFilter",
                pb::FamilyFilter {
                    compare_filter: compare(
                        Equal,
                        comparator(
                            "BinaryPrefixComparator",
                            pb::BinaryPrefixComparator {
                                comparable: Some(pb::ByteArrayComparable {
                                    value: Some(b("cf2")),
                                }),
                            },
                        ),
                    ),
                },
            ),
            "FamilyFilter(=, 'binaryprefix:cf2')",
        ),
        (
            filter(
                "SingleColumnValueFilter",
                single_column_value("cf", "b", GreaterOrEqual, binary("010"), true),
            ),
            "SingleColumnValueFilter('cf', 'b', >=, 'binary:010', true, true)",
        ),
        (
            filter(
                "SingleColumnValueFilter",
                single_column_value("cf", "b", Less, binary("005"), false),
            ),
            "SingleColumnValueFilter('cf', 'b', <, 'binary:005')",
        ),
        (
            filter(
                "SingleColumnValueExcludeFilter",
                pb::SingleColumnValueExcludeFilter {
                    single_column_value_filter: Some(single_column_value(
                        "cf2",
                        "c",
                        Equal,
                        binary("odd"),
                        false,
                    )),
                },
            ),
            "SingleColumnValueExcludeFilter('cf2', 'c', =, 'binary:odd')",
        ),
        (
            list(
                pb::FilterListOperator::MustPassOne,
                vec![
                    filter(
                        "QualifierFilter",
                        pb::QualifierFilter {
                            compare_filter: compare(Equal, binary("a")),
                        },
                    ),
                    filter(
                        "FamilyFilter",
                        pb::FamilyFilter {
                            compare_filter: compare(Equal, binary("cf2")),
                        },
                    ),
                ],
            ),
            "QualifierFilter(=, 'binary:a') OR FamilyFilter(=, 'binary:cf2')",
        ),
        (
            list(
                pb::FilterListOperator::MustPassAll,
                vec![
                    filter(
                        "PrefixFilter",
                        pb::PrefixFilter {
                            prefix: Some(b("r0")),
                        },
                    ),
                    filter("KeyOnlyFilter", pb::KeyOnlyFilter { len_as_val: false }),
                    filter(
                        "ColumnPrefixFilter",
                        pb::ColumnPrefixFilter { prefix: b("b") },
                    ),
                ],
            ),
            "PrefixFilter('r0') AND KeyOnlyFilter() AND ColumnPrefixFilter('b')",
        ),
        (
            filter(
                "ColumnRangeFilter",
                pb::ColumnRangeFilter {
                    min_column: Some(b("a")),
                    min_column_inclusive: Some(false),
                    max_column: Some(b("c")),
                    max_column_inclusive: Some(true),
                },
            ),
            "ColumnRangeFilter('a', false, 'c', true)",
        ),
        (
            filter(
                "MultipleColumnPrefixFilter",
                pb::MultipleColumnPrefixFilter {
                    sorted_prefixes: vec![b("a"), b("c")],
                },
            ),
            "MultipleColumnPrefixFilter('a', 'c')",
        ),
        (
            filter(
                "ColumnPaginationFilter",
                pb::ColumnPaginationFilter {
                    limit: 1,
                    offset: Some(1),
                    column_offset: None,
                },
            ),
            "ColumnPaginationFilter(1, 1)",
        ),
        (
            filter(
                "ColumnCountGetFilter",
                pb::ColumnCountGetFilter { limit: 2 },
            ),
            "ColumnCountGetFilter(2)",
        ),
        (
            filter("PageFilter", pb::PageFilter { page_size: 4 }),
            "PageFilter(4)",
        ),
        (
            filter("FirstKeyOnlyFilter", pb::FirstKeyOnlyFilter {}),
            "FirstKeyOnlyFilter()",
        ),
        (
            filter("KeyOnlyFilter", pb::KeyOnlyFilter { len_as_val: true }),
            "KeyOnlyFilter(true)",
        ),
        (
            filter(
                "InclusiveStopFilter",
                pb::InclusiveStopFilter {
                    stop_row_key: Some(b("r03")),
                },
            ),
            "InclusiveStopFilter('r03')",
        ),
        (
            filter(
                "TimestampsFilter",
                pb::TimestampsFilter {
                    timestamps: vec![300, 50, 101],
                    can_hint: Some(true),
                },
            ),
            "TimestampsFilter(50, 101, 300)",
        ),
        (
            filter(
                "DependentColumnFilter",
                pb::DependentColumnFilter {
                    compare_filter: Some(pb::CompareFilter {
                        compare_op: NoOp as i32,
                        comparator: None,
                    }),
                    column_family: Some(b("cf")),
                    column_qualifier: Some(b("b")),
                    drop_dependent_column: Some(false),
                },
            ),
            "DependentColumnFilter('cf', 'b', false)",
        ),
        (
            filter(
                "DependentColumnFilter",
                pb::DependentColumnFilter {
                    compare_filter: compare(Greater, binary("010")),
                    column_family: Some(b("cf")),
                    column_qualifier: Some(b("b")),
                    drop_dependent_column: Some(true),
                },
            ),
            "DependentColumnFilter('cf', 'b', true, >, 'binary:010')",
        ),
        (
            filter(
                "ColumnValueFilter",
                pb::ColumnValueFilter {
                    family: b("cf"),
                    qualifier: b("b"),
                    compare_op: Greater as i32,
                    comparator: Some(binary("010")),
                },
            ),
            "ColumnValueFilter('cf', 'b', >, 'binary:010')",
        ),
        (
            filter(
                "SkipFilter",
                pb::SkipFilter {
                    filter: Some(nested(value_filter(NotEqual, binary("even")))),
                },
            ),
            "SKIP ValueFilter(!=, 'binary:even')",
        ),
        (
            filter(
                "WhileMatchFilter",
                pb::WhileMatchFilter {
                    filter: Some(nested(row_filter(Less, binary("r07")))),
                },
            ),
            "WHILE RowFilter(<, 'binary:r07')",
        ),
        (
            filter(
                "FilterWrapper",
                pb::FilterWrapper {
                    filter: Some(nested(filter(
                        "PrefixFilter",
                        pb::PrefixFilter {
                            prefix: Some(b("r1")),
                        },
                    ))),
                },
            ),
            "PrefixFilter('r1')",
        ),
        (
            filter(
                "MultiRowRangeFilter",
                pb::MultiRowRangeFilter {
                    row_range_list: vec![
                        row_range("r02", true, "r05", false),
                        row_range("r10", false, "r12", true),
                    ],
                },
            ),
            "(RowFilter(>=, 'binary:r02') AND RowFilter(<, 'binary:r05')) \
             OR (RowFilter(>, 'binary:r10') AND RowFilter(<=, 'binary:r12'))",
        ),
    ]
}

#[test]
fn decoded_filters_select_what_the_same_filter_strings_select() {
    let dir = tempfile::tempdir().unwrap();
    let (db, table) = load(dir.path());
    for (native, text) in same_as_language() {
        let decoded = decode_filter(&native).unwrap_or_else(|e| panic!("{text}: {e}"));
        let parsed = Filter::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        for (i, scan) in scans().into_iter().enumerate() {
            let expected = cells(&table, scan.clone(), Some(parsed.clone()));
            // Forward, every case selects something; reversed, WHILE may
            // stop at the first row.
            assert!(i > 0 || !expected.is_empty(), "{text} selects nothing");
            assert_eq!(
                cells(&table, scan.clone(), Some(decoded.clone())),
                expected,
                "{text}, reversed: {}, versions: {}",
                scan.reversed,
                scan.max_versions
            );
        }
    }
    db.close().unwrap();
}

#[test]
fn a_multi_row_range_filter_selects_the_rows_of_its_ranges_in_either_direction() {
    let dir = tempfile::tempdir().unwrap();
    let (db, table) = load(dir.path());
    let native = filter(
        "MultiRowRangeFilter",
        pb::MultiRowRangeFilter {
            // Unsorted and overlapping, as a client may send them.
            row_range_list: vec![
                row_range("r17", true, "", false),
                row_range("r02", true, "r05", false),
                row_range("r03", false, "r04", true),
                pb::RowRange {
                    start_row: None,
                    start_row_inclusive: None,
                    stop_row: Some(b("r01")),
                    stop_row_inclusive: Some(true),
                },
            ],
        },
    );
    let decoded = decode_filter(&native).unwrap();
    let forward = rows_of(&cells(&table, Scan::new(), Some(decoded.clone())));
    assert_eq!(
        forward,
        ["r00", "r01", "r02", "r03", "r04", "r17", "r18", "r19", "s0", "s1"]
    );
    let mut backward = rows_of(&cells(&table, Scan::new().reversed(true), Some(decoded)));
    backward.reverse();
    assert_eq!(backward, forward);
    db.close().unwrap();
}

#[test]
fn a_null_comparator_selects_rows_missing_the_column_or_every_cell() {
    use CompareType::*;
    let dir = tempfile::tempdir().unwrap();
    let (db, table) = load(dir.path());
    let null = comparator("NullComparator", pb::NullComparator {});
    // "cf:b is null": only the rows without the column pass.
    let missing = decode_filter(&filter(
        "SingleColumnValueFilter",
        single_column_value("cf", "b", Equal, null.clone(), false),
    ))
    .unwrap();
    for scan in scans() {
        let mut rows = rows_of(&cells(&table, scan.clone(), Some(missing.clone())));
        rows.sort();
        assert_eq!(rows, ["s0", "s1"]);
    }
    // Every present value is "not null" and "less than null".
    for op in [NotEqual, Less, LessOrEqual] {
        let every = decode_filter(&value_filter(op, null.clone())).unwrap();
        for scan in scans() {
            assert_eq!(
                cells(&table, scan.clone(), Some(every.clone())),
                cells(&table, scan, None)
            );
        }
    }
    for op in [Equal, Greater, GreaterOrEqual] {
        let none = decode_filter(&value_filter(op, null.clone())).unwrap();
        assert!(cells(&table, Scan::new(), Some(none)).is_empty());
    }
    db.close().unwrap();
}

#[test]
fn a_no_op_comparison_selects_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (db, table) = load(dir.path());
    let no_op = |short: &str| {
        filter(
            short,
            pb::RowFilter {
                compare_filter: Some(pb::CompareFilter {
                    compare_op: CompareType::NoOp as i32,
                    comparator: Some(binary("r05")),
                }),
            },
        )
    };
    for short in [
        "RowFilter",
        "FamilyFilter",
        "QualifierFilter",
        "ValueFilter",
    ] {
        let decoded = decode_filter(&no_op(short)).unwrap();
        for scan in scans() {
            assert!(
                cells(&table, scan, Some(decoded.clone())).is_empty(),
                "{short}"
            );
        }
    }
    db.close().unwrap();
}

// ---------------------------------------------------------------------------
// Garbage
// ---------------------------------------------------------------------------

const FILTER_CLASSES: &[&str] = &[
    "KeyOnlyFilter",
    "FirstKeyOnlyFilter",
    "PrefixFilter",
    "ColumnPrefixFilter",
    "MultipleColumnPrefixFilter",
    "ColumnCountGetFilter",
    "PageFilter",
    "ColumnPaginationFilter",
    "InclusiveStopFilter",
    "TimestampsFilter",
    "RowFilter",
    "FamilyFilter",
    "QualifierFilter",
    "ValueFilter",
    "ColumnRangeFilter",
    "SingleColumnValueFilter",
    "SingleColumnValueExcludeFilter",
    "DependentColumnFilter",
    "ColumnValueFilter",
    "FilterList",
    "FilterWrapper",
    "SkipFilter",
    "WhileMatchFilter",
    "MultiRowRangeFilter",
    "FuzzyRowFilter",
    "RandomRowFilter",
    "FirstKeyValueMatchingQualifiersFilter",
    "FilterAllFilter",
    "NoSuchFilter",
];

const COMPARATOR_CLASSES: &[&str] = &[
    "BinaryComparator",
    "BinaryPrefixComparator",
    "NullComparator",
    "RegexStringComparator",
    "SubstringComparator",
    "LongComparator",
    "BitComparator",
    "BigDecimalComparator",
    "BinaryComponentComparator",
    "NoSuchComparator",
];

/// A failure must be final and say which class failed.
fn check_refusal(error: &basalt_rpc::RpcError, short: &str) {
    assert!(error.do_not_retry, "{error}");
    assert_eq!(error.class, "org.apache.hadoop.hbase.DoNotRetryIOException");
    assert!(error.message.contains(short), "{short}: {}", error.message);
}

/// A valid native filter and the Basalt filter it must decode to.
fn arb_filter() -> impl Strategy<Value = (pb::Filter, Filter)> {
    let bytes = || proptest::collection::vec(any::<u8>(), 0..6).prop_map(Bytes::from);
    let ops = [
        (CompareType::Less, basalt::CompareOp::Less),
        (CompareType::LessOrEqual, basalt::CompareOp::LessOrEqual),
        (CompareType::Equal, basalt::CompareOp::Equal),
        (CompareType::NotEqual, basalt::CompareOp::NotEqual),
        (
            CompareType::GreaterOrEqual,
            basalt::CompareOp::GreaterOrEqual,
        ),
        (CompareType::Greater, basalt::CompareOp::Greater),
    ];
    let leaf = prop_oneof![
        any::<bool>().prop_map(|len| (
            filter("KeyOnlyFilter", pb::KeyOnlyFilter { len_as_val: len }),
            Filter::KeyOnly {
                length_as_value: len
            }
        )),
        Just((
            filter("FirstKeyOnlyFilter", pb::FirstKeyOnlyFilter {}),
            Filter::FirstKeyOnly
        )),
        bytes().prop_map(|p| (
            filter(
                "PrefixFilter",
                pb::PrefixFilter {
                    prefix: Some(p.clone())
                }
            ),
            Filter::Prefix(p)
        )),
        bytes().prop_map(|p| (
            filter(
                "ColumnPrefixFilter",
                pb::ColumnPrefixFilter { prefix: p.clone() }
            ),
            Filter::ColumnPrefix(p)
        )),
        any::<u32>().prop_map(|n| (
            filter(
                "PageFilter",
                pb::PageFilter {
                    page_size: n.into()
                }
            ),
            Filter::Page(n.into())
        )),
        proptest::collection::vec(0..i64::MAX, 0..4).prop_map(|t| (
            filter(
                "TimestampsFilter",
                pb::TimestampsFilter {
                    timestamps: t.clone(),
                    can_hint: None
                }
            ),
            Filter::Timestamps(t)
        )),
        (proptest::sample::select(ops.to_vec()), bytes()).prop_map(|((wire, op), v)| (
            filter(
                "RowFilter",
                pb::RowFilter {
                    compare_filter: Some(pb::CompareFilter {
                        compare_op: wire as i32,
                        comparator: Some(pb::Comparator {
                            name: format!("{PACKAGE}BinaryComparator"),
                            serialized_comparator: Some(
                                pb::BinaryComparator {
                                    comparable: Some(pb::ByteArrayComparable {
                                        value: Some(v.clone())
                                    })
                                }
                                .encode_to_vec()
                            ),
                        }),
                    })
                }
            ),
            Filter::Row(op, basalt::Comparator::Binary(v))
        )),
        (proptest::sample::select(ops.to_vec()), "[a-zA-Z ]{0,6}").prop_map(|((wire, op), s)| (
            value_filter(
                wire,
                comparator(
                    "SubstringComparator",
                    pb::SubstringComparator { substr: s.clone() }
                )
            ),
            Filter::Value(op, basalt::Comparator::substring(&s))
        )),
    ];
    leaf.prop_recursive(6, 64, 5, |inner| {
        prop_oneof![
            (
                any::<bool>(),
                proptest::collection::vec(inner.clone(), 0..5)
            )
                .prop_map(|(all, members)| {
                    let (wire, op) = if all {
                        (
                            pb::FilterListOperator::MustPassAll,
                            basalt::ListOperator::MustPassAll,
                        )
                    } else {
                        (
                            pb::FilterListOperator::MustPassOne,
                            basalt::ListOperator::MustPassOne,
                        )
                    };
                    let (natives, expected): (Vec<_>, Vec<_>) = members.into_iter().unzip();
                    (list(wire, natives), Filter::List(op, expected))
                }),
            inner.clone().prop_map(|(f, expected)| (
                filter(
                    "SkipFilter",
                    pb::SkipFilter {
                        filter: Some(nested(f))
                    }
                ),
                Filter::Skip(Box::new(expected))
            )),
            inner.clone().prop_map(|(f, expected)| (
                filter(
                    "WhileMatchFilter",
                    pb::WhileMatchFilter {
                        filter: Some(nested(f))
                    }
                ),
                Filter::While(Box::new(expected))
            )),
            inner.prop_map(|(f, expected)| (
                filter(
                    "FilterWrapper",
                    pb::FilterWrapper {
                        filter: Some(nested(f))
                    }
                ),
                expected
            )),
        ]
    })
}

/// A native filter tree that may hold garbage anywhere: random classes
/// with random bytes, lists with any operator number.
fn arb_garbage_tree() -> impl Strategy<Value = pb::Filter> {
    let leaf = (
        proptest::sample::select(FILTER_CLASSES),
        proptest::collection::vec(any::<u8>(), 0..48),
    )
        .prop_map(|(short, bytes)| pb::Filter {
            name: format!("{PACKAGE}{short}"),
            serialized_filter: Some(bytes),
        });
    leaf.prop_recursive(8, 128, 6, |inner| {
        prop_oneof![
            (0..4i32, proptest::collection::vec(inner.clone(), 0..6)).prop_map(
                |(operator, members)| filter(
                    "FilterList",
                    pb::FilterList {
                        operator,
                        filters: members.into_iter().map(nested).collect(),
                    }
                )
            ),
            inner.prop_map(|f| filter(
                "SkipFilter",
                pb::SkipFilter {
                    filter: Some(nested(f))
                }
            )),
        ]
    })
}

fn short_name(full: &str) -> &str {
    full.strip_prefix(PACKAGE).unwrap_or(full)
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn random_bytes_under_any_filter_class_decode_or_are_refused_naming_it(
        short in proptest::sample::select(FILTER_CLASSES),
        bytes in proptest::collection::vec(any::<u8>(), 0..96),
    ) {
        let native = pb::Filter {
            name: format!("{PACKAGE}{short}"),
            serialized_filter: Some(bytes),
        };
        if let Err(e) = decode_filter(&native) {
            check_refusal(&e, short);
        }
    }

    #[test]
    fn random_bytes_under_any_comparator_class_decode_or_are_refused_naming_it(
        short in proptest::sample::select(COMPARATOR_CLASSES),
        bytes in proptest::collection::vec(any::<u8>(), 0..96),
    ) {
        let native = pb::Comparator {
            name: format!("{PACKAGE}{short}"),
            serialized_comparator: Some(bytes),
        };
        if let Err(e) = decode_comparator(&native) {
            check_refusal(&e, short);
        }
    }

    #[test]
    fn random_class_names_are_refused(name in "\\PC{0,80}", bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
        let native = pb::Filter { name: name.clone(), serialized_filter: Some(bytes.clone()) };
        let known = name
            .strip_prefix(PACKAGE)
            .is_some_and(|short| FILTER_CLASSES.contains(&short));
        if !known {
            let e = decode_filter(&native).unwrap_err();
            check_refusal(&e, "not supported by Basalt");
        }
        let native = pb::Comparator { name, serialized_comparator: Some(bytes) };
        if let Err(e) = decode_comparator(&native) {
            check_refusal(&e, "not supported by Basalt");
        }
    }

    #[test]
    fn random_nested_lists_of_valid_filters_decode_to_the_same_tree((native, expected) in arb_filter()) {
        prop_assert_eq!(decode_filter(&native).unwrap(), expected);
    }

    #[test]
    fn mutated_filter_trees_decode_or_are_refused_naming_the_outer_class(
        (native, _) in arb_filter(),
        mutations in arb_mutations(),
    ) {
        let mut bytes = native.serialized_filter.clone().unwrap_or_default();
        mutate(&mut bytes, &mutations);
        let mutated = pb::Filter { name: native.name.clone(), serialized_filter: Some(bytes) };
        if let Err(e) = decode_filter(&mutated) {
            check_refusal(&e, short_name(&native.name));
        }
    }

    #[test]
    fn random_nested_lists_holding_garbage_decode_or_are_refused_naming_the_outer_class(
        native in arb_garbage_tree(),
    ) {
        if let Err(e) = decode_filter(&native) {
            check_refusal(&e, short_name(&native.name));
        }
    }
}
