#![allow(clippy::unwrap_used)]

use super::*;
use crate::keys::{encode_u64, reversed_timestamp};

const T0: u64 = 1_763_884_800_123;

fn ts_keys(n: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{}-user{}", T0 + i * 1_013, (i * 7919) % 1000).into_bytes())
        .collect()
}

fn kinds(r: &KeyReport) -> Vec<RecommendationKind> {
    r.recommendations.iter().map(|r| r.kind).collect()
}

#[test]
fn timestamp_prefixed_keys_in_write_order_are_monotonic_and_salting_comes_first() {
    let r = analyze(&KeySample::new(ts_keys(2000), SampleOrder::Write), None);
    let m = r.monotonic.as_ref().unwrap();
    assert_eq!(m.direction, Direction::Increasing);
    assert_eq!(
        m.field.kind,
        FieldKind::EpochDecimal {
            unit: TimeUnit::Millis
        }
    );
    assert_eq!((m.field.start, m.field.end), (0, 13));
    assert!(r.write_order.as_ref().unwrap().new_max_share > 0.99);
    assert_eq!(
        kinds(&r),
        [
            RecommendationKind::Salt,
            RecommendationKind::HashPrefix,
            RecommendationKind::ReversedTimestamp,
            RecommendationKind::PreSplit
        ]
    );
    let salt = &r.recommendations[0];
    assert_eq!(salt.numbers["buckets"], 16.0);
    assert!(salt.numbers["max_share"] < 1.25 / 16.0, "{salt:?}");
    assert!(salt.numbers["min_share"] > 0.75 / 16.0, "{salt:?}");
    assert_eq!(r.split_points, Salt::new(16).unwrap().split_keys());
    assert!(r.splits_clause.starts_with(r#"SPLITS => ["\x01", "\x02""#));
    assert!(r
        .to_text()
        .contains("monotonic increasing prefix: bytes 0..13"));
}

#[test]
fn sorted_timestamp_keys_are_judged_by_their_field() {
    let mut keys = ts_keys(500);
    keys.sort();
    let r = analyze(&KeySample::new(keys, SampleOrder::Key), None);
    assert!(r.write_order.is_none());
    assert_eq!(r.monotonic.unwrap().direction, Direction::Increasing);
}

#[test]
fn salted_keys_report_an_even_spread_and_only_split_points() {
    let salt = Salt::new(16).unwrap();
    let keys: Vec<Vec<u8>> = ts_keys(2000).iter().map(|k| salt.encode(k)).collect();
    let r = analyze(&KeySample::new(keys, SampleOrder::Write), None);
    assert!(r.monotonic.is_none(), "{:?}", r.monotonic);
    let Layout::Spread(s) = &r.layout else {
        panic!("not spread: {:?}", r.layout)
    };
    assert_eq!((s.width, s.distinct), (1, 16));
    assert!(s.max_share / s.min_share <= 1.5, "{s:?}");
    assert_eq!(
        r.leading_field.as_ref().unwrap().kind,
        FieldKind::EpochDecimal {
            unit: TimeUnit::Millis
        }
    );
    assert_eq!(
        kinds(&r),
        [RecommendationKind::KeepAsIs, RecommendationKind::PreSplit]
    );
    assert_eq!(r.split_points, salt.split_keys());
}

#[test]
fn hex_hashed_keys_are_already_spread() {
    let keys: Vec<Vec<u8>> = (0..1000)
        .map(|i: u32| {
            let d = crate::keys::salt::md5(&i.to_be_bytes());
            d.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
                .into_bytes()
        })
        .collect();
    let r = analyze(&KeySample::new(keys, SampleOrder::Write), None);
    assert!(matches!(r.layout, Layout::Spread(_)), "{:?}", r.layout);
    assert!(r.monotonic.is_none());
    assert_eq!(r.recommendations[0].kind, RecommendationKind::KeepAsIs);
}

#[test]
fn raw_hash_prefixes_with_few_keys_are_spread_by_entropy() {
    let hp = HashPrefix::new(4).unwrap();
    let keys: Vec<Vec<u8>> = (0..100)
        .map(|i| hp.encode(format!("id{i}").as_bytes()))
        .collect();
    let r = analyze(&KeySample::new(keys, SampleOrder::Write), None);
    let Layout::Spread(s) = &r.layout else {
        panic!("not spread: {:?}", r.layout)
    };
    assert!(s.high_entropy);
}

#[test]
fn unpadded_counters_are_monotonic_in_key_order_and_padding_is_recommended() {
    let mut keys: Vec<Vec<u8>> = (1..=1000)
        .map(|i| format!("order-{i}").into_bytes())
        .collect();
    keys.sort();
    let r = analyze(&KeySample::new(keys, SampleOrder::Key), None);
    let m = r.monotonic.as_ref().unwrap();
    assert_eq!(m.field.kind, FieldKind::CounterDecimal);
    assert_eq!(m.field.start, 6);
    let w = r.decimal_widths.as_ref().unwrap();
    assert_eq!((w.start, w.min_width, w.max_width), (6, 1, 4));
    let (small, large) = w.misordered.clone().unwrap();
    assert!(small.parse::<u32>().unwrap() < large.parse::<u32>().unwrap());
    assert!(small > large, "{small} should sort after {large}");
    let pad = r
        .recommendations
        .iter()
        .find(|r| r.kind == RecommendationKind::PadDecimal)
        .unwrap();
    assert!(pad.details[0].contains(&format!("'{small}' sorts after '{large}'")));
    assert!(kinds(&r).contains(&RecommendationKind::PadDecimal));
    assert!(kinds(&r).contains(&RecommendationKind::ReverseField));
}

#[test]
fn monotonic_writes_all_go_to_the_region_holding_the_end() {
    let regions = [
        RegionBounds {
            start: vec![],
            end: b"1763884900".to_vec(),
        },
        RegionBounds {
            start: b"1763884900".to_vec(),
            end: b"1763886000".to_vec(),
        },
        RegionBounds {
            start: b"1763886000".to_vec(),
            end: vec![],
        },
    ];
    let r = analyze(
        &KeySample::new(ts_keys(2000), SampleOrder::Write),
        Some(&regions),
    );
    let spread = r.regions.as_ref().unwrap();
    assert_eq!(spread.hot_region, Some(2));
    assert_eq!(spread.recent_share_in_hot, Some(1.0));
    assert!(spread.projection.contains("all new writes go to region 3"));
    // Three regions: three salt buckets.
    assert_eq!(r.recommendations[0].numbers["buckets"], 3.0);
    assert_eq!(r.split_points, vec![vec![1], vec![2]]);
}

#[test]
fn reversed_timestamps_are_decreasing_and_hit_the_first_region() {
    let keys: Vec<Vec<u8>> = (0..500)
        .map(|i| {
            let mut k = reversed_timestamp((T0 + i * 1000) as i64).to_vec();
            k.extend_from_slice(b"evt");
            k
        })
        .collect();
    // Split in the middle: the newer half (smaller keys) in the first.
    let middle = keys[250].clone();
    let regions = [
        RegionBounds {
            start: vec![],
            end: middle.clone(),
        },
        RegionBounds {
            start: middle,
            end: vec![],
        },
    ];
    let r = analyze(&KeySample::new(keys, SampleOrder::Write), Some(&regions));
    let m = r.monotonic.as_ref().unwrap();
    assert_eq!(m.direction, Direction::Decreasing);
    assert_eq!(
        m.field.kind,
        FieldKind::ReversedEpochBinary {
            unit: TimeUnit::Millis
        }
    );
    assert_eq!(r.regions.as_ref().unwrap().hot_region, Some(0));
    assert!(!kinds(&r).contains(&RecommendationKind::ReversedTimestamp));
}

#[test]
fn binary_millis_and_iso_dates_are_recognised_in_key_order() {
    let keys: Vec<Vec<u8>> = (0..300)
        .map(|i| encode_u64(T0 + i * 60_000).to_vec())
        .collect();
    let r = analyze(&KeySample::new(keys, SampleOrder::Key), None);
    assert_eq!(
        r.monotonic.unwrap().field.kind,
        FieldKind::EpochBinary {
            unit: TimeUnit::Millis,
            width: 8,
            sign_flipped: false
        }
    );
    let keys: Vec<Vec<u8>> = (0..300)
        .map(|i| {
            format!(
                "2026-11-{:02}T10:{:02}:00Z#sensor{}",
                1 + i / 12,
                i % 60,
                i % 9
            )
            .into_bytes()
        })
        .collect();
    let r = analyze(&KeySample::new(keys, SampleOrder::Key), None);
    let f = r.monotonic.unwrap().field;
    assert_eq!(f.kind, FieldKind::Date { compact: false });
    assert_eq!((f.start, f.end), (0, 20));
}

#[test]
fn a_time_behind_a_shared_prefix_is_found() {
    let keys: Vec<Vec<u8>> = (0..300)
        .map(|i| format!("events#{}", 1_763_884_800 + i * 30).into_bytes())
        .collect();
    let r = analyze(&KeySample::new(keys, SampleOrder::Key), None);
    let f = r.monotonic.unwrap().field;
    assert_eq!(
        f.kind,
        FieldKind::EpochDecimal {
            unit: TimeUnit::Seconds
        }
    );
    assert_eq!((f.start, f.end), (7, 17));
}

#[test]
fn random_user_ids_are_left_alone_with_split_points() {
    let keys: Vec<Vec<u8>> = (0..1000u64)
        .map(|i| format!("user{}", (i * 2_654_435_761) % 1_000_000_007).into_bytes())
        .collect();
    let r = analyze(&KeySample::new(keys, SampleOrder::Write), None);
    assert!(r.monotonic.is_none(), "{:?}", r.monotonic);
    assert_eq!(r.recommendations[0].kind, RecommendationKind::KeepAsIs);
    assert_eq!(r.split_points.len(), 7);
    assert!(r.split_points.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn host_names_get_the_domain_reversal() {
    let hosts = [
        "www.example.com",
        "mail.example.org",
        "blog.test.net",
        "api.foo.io",
    ];
    let keys: Vec<Vec<u8>> = (0..200)
        // Uneven (50%, 30%, 10%, 10%): not a spread prefix.
        .map(|i| {
            format!(
                "{}/page{}",
                hosts[[0, 0, 0, 0, 0, 1, 1, 1, 2, 3][i % 10]],
                i
            )
            .into_bytes()
        })
        .collect();
    let r = analyze(&KeySample::new(keys, SampleOrder::Key), None);
    assert!(
        kinds(&r).contains(&RecommendationKind::ReverseDomain),
        "{:?}",
        kinds(&r)
    );
}

#[test]
fn quantile_splits_are_short_and_increasing() {
    let keys: Vec<Vec<u8>> = (0..100).map(|i| format!("k{i:03}").into_bytes()).collect();
    let s = quantile_splits(&keys, 4);
    assert_eq!(s, vec![b"k025".to_vec(), b"k05".to_vec(), b"k075".to_vec()]);
}

#[test]
fn an_empty_sample_gives_an_empty_report() {
    let r = analyze(&KeySample::new(Vec::new(), SampleOrder::Write), None);
    assert_eq!(r.keys, 0);
    assert!(r.recommendations.is_empty());
    assert!(r.to_text().contains("0 keys"));
    assert!(r.to_json().contains("\"keys\": 0"));
}

mod garbage {
    use super::*;
    use proptest::prelude::*;

    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..24),
            "[0-9]{0,16}[-#]?[a-z]{0,4}".prop_map(String::into_bytes),
        ]
    }

    proptest! {
        #[test]
        fn any_keys_and_regions_give_a_report_with_increasing_split_points(
            keys in proptest::collection::vec(key(), 0..120),
            sorted in any::<bool>(),
            mut bounds in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..4), 0..5),
            regions in proptest::option::of(2usize..40),
            buckets in proptest::option::of(0u16..300),
        ) {
            let mut keys = keys;
            if sorted {
                keys.sort();
            }
            bounds.sort();
            bounds.dedup();
            let mut starts = vec![Vec::new()];
            starts.extend(bounds);
            let regions_given: Vec<RegionBounds> = starts
                .iter()
                .enumerate()
                .map(|(i, s)| RegionBounds {
                    start: s.clone(),
                    end: starts.get(i + 1).cloned().unwrap_or_default(),
                })
                .collect();
            let order = if sorted { SampleOrder::Key } else { SampleOrder::Write };
            let opts = AnalyzeOptions { regions, buckets, ..AnalyzeOptions::default() };
            let r = analyze_with(&KeySample::new(keys, order), Some(&regions_given), &opts);
            prop_assert!(r.split_points.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(r.split_points.iter().all(|s| !s.is_empty()));
            let _ = (r.to_text(), r.to_json());
        }
    }
}
