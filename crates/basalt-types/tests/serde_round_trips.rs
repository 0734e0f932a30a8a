//! Every structure a region call carries between servers (basalt's
//! `remote.rs`) survives serialisation unchanged: through postcard, the
//! encoding on the wire, and through JSON, a self-describing one that
//! catches a field serialised under the wrong shape. Decoding refuses what
//! the builders never produce, naming it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use basalt_types::filter::{FuzzyKey, ListOperator, SingleColumnValue};
use basalt_types::query::ColumnSelection;
use basalt_types::{
    Append, Cell, CellType, CheckAndMutate, Comparator, CompareOp, Delete, Durability, Filter, Get,
    Increment, Mutation, Put, RowMutations, RowResult, Scan, TimeRange,
};
use bytes::Bytes;
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Both encodings give back an equal value.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) {
    let wire = postcard::to_stdvec(value).unwrap();
    let back: T = postcard::from_bytes(&wire).unwrap();
    assert_eq!(&back, value, "postcard");
    let json = serde_json::to_string(value).unwrap();
    let back: T = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, value, "json");
}

fn bytes(max: usize) -> impl Strategy<Value = Bytes> {
    prop::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from)
}

fn row() -> impl Strategy<Value = Bytes> {
    prop::collection::vec(any::<u8>(), 1..8).prop_map(Bytes::from)
}

fn durability() -> impl Strategy<Value = Durability> {
    prop::sample::select(vec![
        Durability::SkipWal,
        Durability::AsyncWal,
        Durability::SyncWal,
        Durability::FsyncWal,
    ])
}

fn cell_type() -> impl Strategy<Value = CellType> {
    prop::sample::select(vec![
        CellType::Put,
        CellType::Delete,
        CellType::DeleteFamilyVersion,
        CellType::DeleteColumn,
        CellType::DeleteFamily,
    ])
}

fn cell() -> impl Strategy<Value = Cell> {
    (
        row(),
        bytes(4),
        bytes(4),
        any::<i64>(),
        cell_type(),
        any::<u64>(),
        bytes(16),
    )
        .prop_map(
            |(row, family, qualifier, timestamp, cell_type, sequence_id, value)| Cell {
                row,
                family,
                qualifier,
                timestamp,
                cell_type,
                sequence_id,
                value,
                ttl_millis: None,
            },
        )
}

fn time_range() -> impl Strategy<Value = TimeRange> {
    (0..i64::MAX, 0..i64::MAX).prop_map(|(a, b)| TimeRange::new(a.min(b), a.max(b)).unwrap())
}

fn compare_op() -> impl Strategy<Value = CompareOp> {
    prop::sample::select(vec![
        CompareOp::Less,
        CompareOp::LessOrEqual,
        CompareOp::Equal,
        CompareOp::NotEqual,
        CompareOp::GreaterOrEqual,
        CompareOp::Greater,
    ])
}

fn comparator() -> impl Strategy<Value = Comparator> {
    prop_oneof![
        bytes(6).prop_map(Comparator::Binary),
        bytes(6).prop_map(Comparator::BinaryPrefix),
        prop::sample::select(vec!["a+b", "^row-[0-9]{2}$", "(x|y)z*", ""])
            .prop_map(|p| Comparator::regex(p).unwrap()),
        "[a-zA-Z ]{0,8}".prop_map(|s| Comparator::substring(&s)),
    ]
}

fn single_column_value() -> impl Strategy<Value = SingleColumnValue> {
    (
        bytes(4),
        bytes(4),
        compare_op(),
        comparator(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(family, qualifier, op, comparator, filter_if_missing, latest_version_only)| {
                SingleColumnValue {
                    family,
                    qualifier,
                    op,
                    comparator,
                    filter_if_missing,
                    latest_version_only,
                }
            },
        )
}

/// Every filter form, nested up to three levels.
fn filter() -> impl Strategy<Value = Filter> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(|length_as_value| Filter::KeyOnly { length_as_value }),
        Just(Filter::FirstKeyOnly),
        bytes(4).prop_map(Filter::Prefix),
        bytes(4).prop_map(Filter::ColumnPrefix),
        prop::collection::vec(bytes(4), 0..3).prop_map(Filter::MultipleColumnPrefix),
        any::<u32>().prop_map(Filter::ColumnCountGet),
        any::<u64>().prop_map(Filter::Page),
        (any::<u32>(), any::<u32>())
            .prop_map(|(limit, offset)| Filter::ColumnPagination { limit, offset }),
        bytes(4).prop_map(Filter::InclusiveStop),
        prop::collection::vec(
            prop::collection::vec((any::<u8>(), any::<bool>()), 0..4).prop_map(|pairs| {
                let (key, fixed): (Vec<u8>, Vec<bool>) = pairs.into_iter().unzip();
                FuzzyKey::new(key, fixed).unwrap()
            }),
            0..3
        )
        .prop_map(Filter::FuzzyRow),
        prop::collection::vec(any::<i64>(), 0..4).prop_map(Filter::Timestamps),
        (compare_op(), comparator()).prop_map(|(o, c)| Filter::Row(o, c)),
        (compare_op(), comparator()).prop_map(|(o, c)| Filter::Family(o, c)),
        (compare_op(), comparator()).prop_map(|(o, c)| Filter::Qualifier(o, c)),
        (compare_op(), comparator()).prop_map(|(o, c)| Filter::Value(o, c)),
        (
            prop::option::of(bytes(4)),
            any::<bool>(),
            prop::option::of(bytes(4)),
            any::<bool>()
        )
            .prop_map(
                |(min, min_inclusive, max, max_inclusive)| Filter::ColumnRange {
                    min,
                    min_inclusive,
                    max,
                    max_inclusive,
                }
            ),
        single_column_value().prop_map(Filter::SingleColumnValue),
        single_column_value().prop_map(Filter::SingleColumnValueExclude),
        (
            bytes(4),
            bytes(4),
            any::<bool>(),
            prop::option::of((compare_op(), comparator()))
        )
            .prop_map(|(family, qualifier, drop_dependent_column, value_test)| {
                Filter::DependentColumn {
                    family,
                    qualifier,
                    drop_dependent_column,
                    value_test,
                }
            }),
        (bytes(4), bytes(4), compare_op(), comparator()).prop_map(
            |(family, qualifier, op, comparator)| Filter::ColumnValue {
                family,
                qualifier,
                op,
                comparator,
            }
        ),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            (
                prop::sample::select(vec![ListOperator::MustPassAll, ListOperator::MustPassOne]),
                prop::collection::vec(inner.clone(), 0..4)
            )
                .prop_map(|(op, filters)| Filter::List(op, filters)),
            inner.clone().prop_map(|f| Filter::Skip(Box::new(f))),
            inner.prop_map(|f| Filter::While(Box::new(f))),
        ]
    })
}

fn columns() -> impl Strategy<Value = ColumnSelection> {
    prop::collection::vec((bytes(3), prop::option::of(bytes(3))), 0..4).prop_map(|picks| {
        let mut selection = ColumnSelection::default();
        for (family, qualifier) in picks {
            match qualifier {
                Some(q) => selection.add_column(family, q),
                None => selection.add_family(family),
            }
        }
        selection
    })
}

fn get() -> impl Strategy<Value = Get> {
    (
        row(),
        columns(),
        1..5u32,
        time_range(),
        prop::option::of(filter()),
    )
        .prop_map(|(row, columns, max_versions, time_range, filter)| Get {
            row,
            columns,
            max_versions,
            time_range,
            filter,
        })
}

fn scan() -> impl Strategy<Value = Scan> {
    (
        (
            bytes(4),
            bytes(4),
            prop::option::of(bytes(3)),
            any::<bool>(),
        ),
        (columns(), 1..5u32, time_range(), prop::option::of(filter())),
        (
            prop::option::of(1..100usize),
            prop::option::of(1..100usize),
            prop::option::of(0..100usize),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (start_row, stop_row, row_prefix, reversed),
                (columns, max_versions, time_range, filter),
                (batch, caching, limit, raw),
            )| Scan {
                start_row,
                stop_row,
                row_prefix,
                reversed,
                columns,
                max_versions,
                time_range,
                filter,
                batch,
                caching,
                limit,
                raw,
            },
        )
}

fn put_of(row: Bytes) -> impl Strategy<Value = Put> {
    (
        any::<bool>(),
        prop::collection::vec((bytes(3), bytes(3), 0..i64::MAX, bytes(8)), 0..4),
        durability(),
    )
        .prop_map(move |(stamped, cells, durability)| {
            let start = if stamped {
                Put::with_timestamp(row.clone(), 42)
            } else {
                Put::new(row.clone())
            };
            cells
                .into_iter()
                .fold(start, |p, (f, q, ts, v)| p.add_at(f, q, ts, v))
                .durability(durability)
        })
}

fn delete_of(row: Bytes) -> impl Strategy<Value = Delete> {
    (
        prop::collection::vec((0..4u8, bytes(3), bytes(3), 0..i64::MAX), 0..4),
        durability(),
    )
        .prop_map(move |(markers, durability)| {
            markers
                .into_iter()
                .fold(Delete::new(row.clone()), |d, (kind, f, q, ts)| match kind {
                    0 => d.family(f),
                    1 => d.family_version(f, ts),
                    2 => d.column(f, q),
                    _ => d.column_at(f, q, ts),
                })
                .durability(durability)
        })
}

fn mutation_of(row: Bytes) -> impl Strategy<Value = Mutation> {
    prop_oneof![
        put_of(row.clone()).prop_map(Mutation::Put),
        delete_of(row).prop_map(Mutation::Delete),
    ]
}

fn row_mutations() -> impl Strategy<Value = RowMutations> {
    row().prop_flat_map(|row| {
        prop::collection::vec(mutation_of(row.clone()), 0..4).prop_map(move |ms| {
            ms.into_iter()
                .try_fold(RowMutations::new(row.clone()), RowMutations::add)
                .unwrap()
        })
    })
}

fn check_and_mutate() -> impl Strategy<Value = CheckAndMutate> {
    (
        row_mutations(),
        bytes(3),
        bytes(3),
        prop::option::of((compare_op(), comparator())),
        time_range(),
    )
        .prop_map(|(mutations, family, qualifier, test, range)| {
            let check = CheckAndMutate::new(mutations.row().clone(), family, qualifier);
            let check = match test {
                Some((op, c)) => check.if_matches(op, c),
                None => check.if_absent(),
            };
            mutations
                .mutations()
                .iter()
                .cloned()
                .try_fold(check.time_range(range), CheckAndMutate::then)
                .unwrap()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn cells_and_row_results_round_trip(cells in prop::collection::vec(cell(), 0..4), r in row()) {
        for c in &cells {
            round_trip(c);
            round_trip(&c.cell_type);
        }
        round_trip(&RowResult { row: r, cells });
    }

    #[test]
    fn gets_round_trip(g in get()) {
        round_trip(&g);
    }

    #[test]
    fn scans_round_trip(s in scan()) {
        round_trip(&s);
    }

    #[test]
    fn filters_with_every_comparator_round_trip(f in filter()) {
        round_trip(&f);
    }

    #[test]
    fn puts_deletes_and_batches_round_trip(
        p in row().prop_flat_map(put_of),
        d in row().prop_flat_map(delete_of),
    ) {
        round_trip(&p);
        round_trip(&d);
        round_trip(&vec![Mutation::Put(p), Mutation::Delete(d)]);
    }

    #[test]
    fn increments_and_appends_round_trip(
        r in row(),
        cols in prop::collection::vec((bytes(3), bytes(3), any::<i64>(), bytes(4)), 0..4),
        d in durability(),
    ) {
        let inc = cols.iter().fold(Increment::new(r.clone()), |i, (f, q, n, _)| {
            i.add(f.clone(), q.clone(), *n)
        });
        let app = cols.iter().fold(Append::new(r), |a, (f, q, _, v)| {
            a.add(f.clone(), q.clone(), v.clone())
        });
        round_trip(&inc.durability(d));
        round_trip(&app.durability(d));
    }

    #[test]
    fn row_mutations_and_check_and_mutate_round_trip(
        m in row_mutations(),
        c in check_and_mutate(),
    ) {
        round_trip(&m);
        round_trip(&c);
        round_trip(&c.condition);
    }

    #[test]
    fn time_ranges_and_durabilities_round_trip(t in time_range(), d in durability()) {
        round_trip(&t);
        round_trip(&d);
    }
}

/// A JSON document with one field replaced.
fn with_field(value: &impl Serialize, field: &str, new: serde_json::Value) -> String {
    let mut doc = serde_json::to_value(value).unwrap();
    doc[field] = new;
    doc.to_string()
}

#[test]
fn a_put_carrying_a_cell_of_another_row_does_not_decode() {
    let put = Put::new("r1").add("f", "q", "v");
    let other = Put::new("r2").add("f", "q", "v");
    let text = with_field(&put, "cells", serde_json::to_value(other.cells()).unwrap());
    let error = serde_json::from_str::<Put>(&text).unwrap_err().to_string();
    assert!(error.contains("carries a cell of row 'r2'"), "{error}");
}

#[test]
fn a_delete_carrying_a_value_does_not_decode() {
    let delete = Delete::new("r").column("f", "q");
    let put = Put::new("r").add("f", "q", "v");
    let text = with_field(
        &delete,
        "markers",
        serde_json::to_value(put.cells()).unwrap(),
    );
    let error = serde_json::from_str::<Delete>(&text)
        .unwrap_err()
        .to_string();
    assert!(error.contains("carries a Put cell"), "{error}");
}

#[test]
fn row_mutations_of_two_rows_do_not_decode() {
    let mutations = RowMutations::new("a")
        .add(Put::new("a").add("f", "q", "v"))
        .unwrap();
    let text = with_field(
        &mutations,
        "row",
        serde_json::to_value(Bytes::from("b")).unwrap(),
    );
    let error = serde_json::from_str::<RowMutations>(&text)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("cannot include a mutation of row 'a'"),
        "{error}"
    );
}

#[test]
fn a_check_on_another_row_than_its_mutations_does_not_decode() {
    let check = CheckAndMutate::new("a", "f", "q")
        .then(Put::new("a").add("f", "q", "v"))
        .unwrap();
    let text = with_field(
        &check,
        "row",
        serde_json::to_value(Bytes::from("b")).unwrap(),
    );
    let error = serde_json::from_str::<CheckAndMutate>(&text)
        .unwrap_err()
        .to_string();
    assert!(error.contains("carries mutations of row 'a'"), "{error}");
}

#[test]
fn an_inverted_time_range_does_not_decode() {
    let error = serde_json::from_str::<TimeRange>(r#"{"min":9,"max":3}"#)
        .unwrap_err()
        .to_string();
    assert!(error.contains("invalid time range [9, 3)"), "{error}");
}

#[test]
fn an_unknown_cell_type_code_does_not_decode() {
    let error = postcard::from_bytes::<CellType>(&[5]).unwrap_err();
    // postcard reports its own kind of failure; JSON carries the message.
    assert!(matches!(error, postcard::Error::SerdeDeCustom), "{error:?}");
    let error = serde_json::from_str::<CellType>("5")
        .unwrap_err()
        .to_string();
    assert!(error.contains("unknown cell type code 5"), "{error}");
}

#[test]
fn cell_types_travel_as_hbase_codes() {
    assert_eq!(
        postcard::to_stdvec(&CellType::DeleteFamily).unwrap(),
        vec![14]
    );
    assert_eq!(serde_json::to_string(&CellType::Put).unwrap(), "4");
}

#[test]
fn an_invalid_regular_expression_does_not_decode() {
    let error = serde_json::from_str::<Comparator>(r#"{"Regex":"("}"#)
        .unwrap_err()
        .to_string();
    assert!(error.contains("invalid regular expression '('"), "{error}");
}
