//! Recognising the leading field of a sample of keys: times (decimal or
//! binary epochs, ISO-8601 and compact dates, reversed timestamps),
//! counters (dense decimal or binary integers), an even spread over a
//! small alphabet (a salt or hash prefix), decimal fields of varying width
//! and domain names. Each detector looks at one byte offset of every key
//! and accepts a field only when enough keys agree
//! ([`AnalyzeOptions::field_share`]).

use std::collections::HashMap;

use super::{AnalyzeOptions, DecimalWidths, FieldKind, FieldMatch, SpreadStats, TimeUnit};

/// Most decimal digits read as one number (a u128 holds 38).
const MAX_DECIMAL_DIGITS: usize = 38;

/// The most common value of `items`, with its count (the smallest value
/// among equally common ones, so the choice does not depend on order).
fn mode<T: Copy + Ord + std::hash::Hash>(items: impl Iterator<Item = T>) -> Option<(T, usize)> {
    let mut counts: HashMap<T, usize> = HashMap::new();
    for i in items {
        *counts.entry(i).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
}

/// The number of ASCII digits at `key[o..]`.
fn digit_run(key: &[u8], o: usize) -> usize {
    key.get(o..)
        .map_or(0, |k| k.iter().take_while(|b| b.is_ascii_digit()).count())
}

/// The decimal value of ASCII digits (at most [`MAX_DECIMAL_DIGITS`]).
fn decimal(digits: &[u8]) -> Option<u128> {
    if digits.is_empty() || digits.len() > MAX_DECIMAL_DIGITS {
        return None;
    }
    digits.iter().try_fold(0u128, |acc, d| {
        d.is_ascii_digit().then(|| acc * 10 + u128::from(d - b'0'))
    })
}

/// Whether a share `count / total` reaches `share`.
fn enough(count: usize, total: usize, share: f64) -> bool {
    total > 0 && count as f64 >= share * total as f64
}

/// Days from 1970-01-01 to a civil date (proleptic Gregorian).
pub(crate) fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count from 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Epoch seconds as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn format_epoch(secs: i64) -> String {
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// A valid date `yyyy`, `mm`, `dd` in the plausible range, as epoch
/// seconds at midnight.
fn date_secs(y: u128, m: u128, d: u128, opts: &AnalyzeOptions) -> Option<i64> {
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let secs = days_from_civil(y as i64, m as i64, d as i64) * 86_400;
    (opts.epoch_from_secs..opts.epoch_to_secs)
        .contains(&secs)
        .then_some(secs)
}

/// An ISO-8601 date (`YYYY-MM-DD`, optionally `THH:MM[:SS[.fff]][Z]`) at
/// the start of `s`: its length and epoch seconds at that day.
fn iso_date(s: &[u8], opts: &AnalyzeOptions) -> Option<(usize, i64)> {
    if s.len() < 10 || s[4] != b'-' || s[7] != b'-' {
        return None;
    }
    let secs = date_secs(
        decimal(&s[0..4])?,
        decimal(&s[5..7])?,
        decimal(&s[8..10])?,
        opts,
    )?;
    let mut len = 10;
    if matches!(s.get(10), Some(b'T' | b' ')) && s.get(11).is_some_and(u8::is_ascii_digit) {
        len = 11;
        while s
            .get(len)
            .is_some_and(|b| b.is_ascii_digit() || *b == b':' || *b == b'.')
        {
            len += 1;
        }
        if s.get(len) == Some(&b'Z') {
            len += 1;
        }
    }
    Some((len, secs))
}

/// A compact date (`yyyyMMdd`, optionally with `HHmm`, `HHmmss` or
/// `HHmmssSSS` digits, or `T` and a time) at the start of `s`.
fn compact_date(s: &[u8], opts: &AnalyzeOptions) -> Option<(usize, i64)> {
    let run = digit_run(s, 0);
    let timed = run == 8 && s.get(8) == Some(&b'T');
    if !(matches!(run, 8 | 12 | 14 | 17) || timed) {
        return None;
    }
    let secs = date_secs(
        decimal(&s[0..4])?,
        decimal(&s[4..6])?,
        decimal(&s[6..8])?,
        opts,
    )?;
    let len = if timed { 9 + digit_run(s, 9) } else { run };
    Some((len, secs))
}

/// The unit whose plausible range holds `value`, if one does.
fn epoch_unit(value: u128, opts: &AnalyzeOptions) -> Option<TimeUnit> {
    [TimeUnit::Seconds, TimeUnit::Millis, TimeUnit::Micros]
        .into_iter()
        .find(|unit| {
            let scale = unit.per_second() as u128;
            let (from, to) = (opts.epoch_from_secs as u128, opts.epoch_to_secs as u128);
            (from * scale..to * scale).contains(&value)
        })
}

/// Whether most keys have printable ASCII in `key[o..o + width]`: text,
/// which binary detectors must not read as integers (`"user"` is a
/// plausible big-endian epoch second).
fn printable_window(keys: &[&[u8]], o: usize, width: usize, opts: &AnalyzeOptions) -> bool {
    let printable = keys
        .iter()
        .filter(|k| {
            k.get(o..o + width)
                .is_some_and(|w| w.iter().all(|b| (0x20..0x7f).contains(b)))
        })
        .count();
    enough(printable, keys.len(), opts.field_share)
}

/// A time field at offset `o`: decimal epochs of 10, 13 or 16 digits,
/// ISO-8601 or compact dates, 8- or 4-byte big-endian epochs (plain,
/// sign-flipped, or reversed as `i64::MAX - ts`).
pub(crate) fn time_field(keys: &[&[u8]], o: usize, opts: &AnalyzeOptions) -> Option<FieldMatch> {
    let n = keys.len();
    let share = opts.field_share;
    let finish = |kind: FieldKind, end: usize, secs: Vec<i64>| {
        let (min, max) = (secs.iter().min().copied()?, secs.iter().max().copied()?);
        let distinct = secs.iter().collect::<std::collections::HashSet<_>>().len();
        Some(FieldMatch {
            kind,
            start: o,
            end,
            share: secs.len() as f64 / n as f64,
            distinct,
            min: format_epoch(min),
            max: format_epoch(max),
        })
    };

    // Decimal epochs.
    if let Some((run, _)) = mode(keys.iter().map(|k| digit_run(k, o))) {
        if matches!(run, 10 | 13 | 16) {
            let mut secs = Vec::new();
            let mut unit_seen = None;
            for k in keys {
                if digit_run(k, o) != run {
                    continue;
                }
                let Some(v) = k.get(o..o + run).and_then(decimal) else {
                    continue;
                };
                let Some(unit) = epoch_unit(v, opts) else {
                    continue;
                };
                // 10 digits are seconds, 13 millis, 16 micros.
                let expected = match run {
                    10 => TimeUnit::Seconds,
                    13 => TimeUnit::Millis,
                    _ => TimeUnit::Micros,
                };
                if unit == expected {
                    unit_seen = Some(unit);
                    secs.push((v / unit.per_second() as u128) as i64);
                }
            }
            if let (true, Some(unit)) = (enough(secs.len(), n, share), unit_seen) {
                return finish(FieldKind::EpochDecimal { unit }, o + run, secs);
            }
        }
    }

    // Dates.
    for compact in [false, true] {
        let found: Vec<(usize, i64)> = keys
            .iter()
            .filter_map(|k| {
                let s = k.get(o..)?;
                if compact {
                    compact_date(s, opts)
                } else {
                    iso_date(s, opts)
                }
            })
            .collect();
        if enough(found.len(), n, share) {
            let (len, _) = mode(found.iter().map(|f| f.0))?;
            return finish(
                FieldKind::Date { compact },
                o + len,
                found.iter().map(|f| f.1).collect(),
            );
        }
    }

    // Big-endian epochs: 8 bytes, then 4.
    if !printable_window(keys, o, 8, opts) {
        let mut found: Vec<(FieldKind, i64)> = Vec::new();
        for k in keys {
            let Some(w) = k.get(o..o + 8) else { continue };
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            let v = u64::from_be_bytes(b);
            let candidates = [
                (v, false, false),
                (v ^ (1 << 63), true, false),
                // reversed: i64::MAX - ts, only for values below 2^63.
                ((i64::MAX as u64).wrapping_sub(v), false, true),
            ];
            for (value, sign_flipped, reversed) in candidates {
                if reversed && v > i64::MAX as u64 {
                    continue;
                }
                if let Some(unit) = epoch_unit(u128::from(value), opts) {
                    let kind = if reversed {
                        FieldKind::ReversedEpochBinary { unit }
                    } else {
                        FieldKind::EpochBinary {
                            unit,
                            width: 8,
                            sign_flipped,
                        }
                    };
                    found.push((kind, (value / unit.per_second()) as i64));
                    break;
                }
            }
        }
        if let Some((kind, count)) = mode(found.iter().map(|f| f.0)) {
            if enough(count, n, share) {
                let secs = found.iter().filter(|f| f.0 == kind).map(|f| f.1).collect();
                return finish(kind, o + 8, secs);
            }
        }
    }
    if !printable_window(keys, o, 4, opts) {
        let secs: Vec<i64> = keys
            .iter()
            .filter_map(|k| {
                let w = k.get(o..o + 4)?;
                let v = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
                (epoch_unit(u128::from(v), opts) == Some(TimeUnit::Seconds)).then_some(i64::from(v))
            })
            .collect();
        // Three quarters of all u32 values are plausible epoch seconds:
        // ask for at least two distinct values within 50 years as well.
        let span_ok = match (secs.iter().min(), secs.iter().max()) {
            (Some(min), Some(max)) => max > min && max - min <= 50 * 365 * 86_400,
            _ => false,
        };
        if enough(secs.len(), n, share) && span_ok {
            return finish(
                FieldKind::EpochBinary {
                    unit: TimeUnit::Seconds,
                    width: 4,
                    sign_flipped: false,
                },
                o + 4,
                secs,
            );
        }
    }
    None
}

/// A counter at offset `o`: decimal digits or a big-endian 8- or 4-byte
/// integer whose values are dense (their range is at most
/// `counter_density` times the rows the sample stands for) and mostly
/// distinct (a salt bucket is dense too, but repeats).
pub(crate) fn counter_field(
    keys: &[&[u8]],
    o: usize,
    population: u64,
    opts: &AnalyzeOptions,
) -> Option<FieldMatch> {
    let n = keys.len();
    let dense = |values: &[u128]| -> bool {
        let (Some(min), Some(max)) = (values.iter().min(), values.iter().max()) else {
            return false;
        };
        let distinct = values
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len();
        distinct >= 2
            && distinct as f64 >= opts.counter_distinct_share * values.len() as f64
            && ((max - min + 1) as f64) <= opts.counter_density * population.max(1) as f64
    };
    let finish = |kind: FieldKind, end: usize, values: &[u128]| FieldMatch {
        kind,
        start: o,
        end,
        share: values.len() as f64 / n as f64,
        distinct: values
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        min: values
            .iter()
            .min()
            .map_or_else(String::new, u128::to_string),
        max: values
            .iter()
            .max()
            .map_or_else(String::new, u128::to_string),
    };

    let decimals: Vec<(usize, u128)> = keys
        .iter()
        .filter_map(|k| {
            let run = digit_run(k, o);
            decimal(k.get(o..o + run)?).map(|v| (run, v))
        })
        .collect();
    if enough(decimals.len(), n, opts.field_share) {
        let values: Vec<u128> = decimals.iter().map(|d| d.1).collect();
        if dense(&values) {
            let (run, _) = mode(decimals.iter().map(|d| d.0))?;
            return Some(finish(FieldKind::CounterDecimal, o + run, &values));
        }
    }
    for width in [8usize, 4] {
        if printable_window(keys, o, width, opts) {
            continue;
        }
        let values: Vec<u128> = keys
            .iter()
            .filter_map(|k| {
                let w = k.get(o..o + width)?;
                Some(w.iter().fold(0u128, |acc, b| acc << 8 | u128::from(*b)))
            })
            .collect();
        if enough(values.len(), n, opts.field_share) && dense(&values) {
            let top = 1u128 << (width * 8 - 1);
            let sign_flipped = values.iter().all(|v| v & top != 0);
            return Some(finish(
                FieldKind::CounterBinary {
                    width: width as u8,
                    sign_flipped,
                },
                o + width,
                &values,
            ));
        }
    }
    None
}

/// Chi-square test and max/min ratio: whether `counts` (over `distinct`
/// observed values) are even. Even when the largest share is within
/// `even_tolerance` of the smallest, or the spread is what sampling a
/// uniform distribution gives (chi-square within three standard
/// deviations of its mean).
pub(crate) fn is_even(counts: &[usize], opts: &AnalyzeOptions) -> bool {
    let d = counts.len();
    let n: usize = counts.iter().sum();
    if d < 2 || n == 0 {
        return false;
    }
    let (min, max) = (
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    );
    if min > 0 && max as f64 <= (1.0 + opts.even_tolerance) * min as f64 {
        return true;
    }
    let e = n as f64 / d as f64;
    let chi2: f64 = counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
    let df = (d - 1) as f64;
    chi2 <= df + 3.0 * (2.0 * df).sqrt()
}

/// Shares (largest, smallest) of `counts` in `n`.
pub(crate) fn extreme_shares(counts: &[usize], n: usize) -> (f64, f64) {
    let n = n.max(1) as f64;
    (
        counts.iter().max().copied().unwrap_or(0) as f64 / n,
        counts.iter().min().copied().unwrap_or(0) as f64 / n,
    )
}

/// Leading bytes spread evenly: the first 1, 2 or 4 bytes take between 2
/// and 256 values with even counts and at least four keys a value (a salt
/// or a hash prefix), or the first byte has nearly the entropy of a
/// uniform byte (a raw hash with too few keys for the count test).
pub(crate) fn spread(keys: &[&[u8]], opts: &AnalyzeOptions) -> Option<SpreadStats> {
    let n = keys.len();
    for width in [1usize, 2, 4] {
        let mut counts: HashMap<&[u8], usize> = HashMap::new();
        for k in keys {
            if let Some(p) = k.get(..width) {
                *counts.entry(p).or_default() += 1;
            }
        }
        let d = counts.len();
        let covered: usize = counts.values().sum();
        if !(2..=256).contains(&d) || n < 4 * d || !enough(covered, n, opts.field_share) {
            continue;
        }
        let counts: Vec<usize> = counts.into_values().collect();
        if is_even(&counts, opts) {
            let (max_share, min_share) = extreme_shares(&counts, covered);
            return Some(SpreadStats {
                width,
                distinct: d,
                max_share,
                min_share,
                high_entropy: false,
            });
        }
    }
    let mut counts = [0usize; 256];
    for k in keys {
        if let Some(b) = k.first() {
            counts[usize::from(*b)] += 1;
        }
    }
    let total: usize = counts.iter().sum();
    let seen: Vec<usize> = counts.iter().copied().filter(|c| *c > 0).collect();
    if total == 0 || seen.len() < 16 {
        return None;
    }
    let entropy: f64 = seen
        .iter()
        .map(|&c| {
            let p = c as f64 / total as f64;
            -p * p.log2()
        })
        .sum();
    let ceiling = (total.min(256) as f64).log2();
    if entropy >= 0.9 * ceiling {
        let (max_share, min_share) = extreme_shares(&seen, total);
        return Some(SpreadStats {
            width: 1,
            distinct: seen.len(),
            max_share,
            min_share,
            high_entropy: true,
        });
    }
    None
}

/// The longest prefix length (up to the shortest key, at most 64) whose
/// prefixes do not decrease (or, `decreasing`, do not increase) between
/// consecutive keys in at least 95% of the pairs.
pub(crate) fn ordered_prefix(keys: &[&[u8]], decreasing: bool) -> usize {
    let shortest = keys.iter().map(|k| k.len()).min().unwrap_or(0).min(64);
    let pairs = keys.len().saturating_sub(1);
    if pairs == 0 {
        return 0;
    }
    let mut best = 0;
    for len in 1..=shortest {
        let ordered = keys
            .windows(2)
            .filter(|w| {
                let (a, b) = (&w[0][..len], &w[1][..len]);
                if decreasing {
                    a >= b
                } else {
                    a <= b
                }
            })
            .count();
        if ordered as f64 >= 0.95 * pairs as f64 {
            best = len;
        } else {
            break;
        }
    }
    best
}

/// Where to look for a field after a prefix every key shares: after the
/// last delimiter (a byte that is not a letter or digit) inside the
/// common prefix, if any.
pub(crate) fn after_common_prefix(keys: &[&[u8]]) -> Option<usize> {
    let first = keys.first()?;
    let mut lcp = first.len().min(64);
    for k in keys {
        lcp = lcp.min(
            first
                .iter()
                .zip(k.iter())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    first[..lcp]
        .iter()
        .rposition(|b| !b.is_ascii_alphanumeric())
        .map(|i| i + 1)
}

/// A decimal field at offset `o` whose digits vary in width between keys
/// (so `9` sorts after `10`), with an example pair of values that sort out
/// of order if the sample has one.
pub(crate) fn varying_decimal(
    keys: &[&[u8]],
    o: usize,
    opts: &AnalyzeOptions,
) -> Option<DecimalWidths> {
    let fields: Vec<(usize, u128)> = keys
        .iter()
        .filter_map(|k| {
            let run = digit_run(k, o);
            decimal(k.get(o..o + run)?).map(|v| (run, v))
        })
        .collect();
    if !enough(fields.len(), keys.len(), opts.field_share) {
        return None;
    }
    let min_width = fields.iter().map(|f| f.0).min()?;
    let max_width = fields.iter().map(|f| f.0).max()?;
    if min_width == max_width {
        return None;
    }
    // The largest short value against the smallest long one: if even they
    // sort out of numeric order as text, the sample shows the problem.
    let short = fields
        .iter()
        .filter(|f| f.0 == min_width)
        .map(|f| f.1)
        .max();
    let long = fields
        .iter()
        .filter(|f| f.0 == max_width)
        .map(|f| f.1)
        .min();
    let misordered = short
        .zip(long)
        .map(|(s, l)| (s.to_string(), l.to_string()))
        .filter(|(s, l)| s > l);
    Some(DecimalWidths {
        start: o,
        min_width,
        max_width,
        misordered,
    })
}

/// Keys that start with a host name (`www.example.com/...`): most keys'
/// first field (up to `/`, `:`, `|`, `#`, `,` or the end) is two or more
/// dot-separated labels ending in a 2 to 6 letter top-level domain.
/// Returns the number of such keys.
pub(crate) fn domain_keys(keys: &[&[u8]], opts: &AnalyzeOptions) -> Option<usize> {
    let is_domain = |k: &&[u8]| {
        let end = k
            .iter()
            .position(|b| matches!(b, b'/' | b':' | b'|' | b'#' | b','))
            .unwrap_or(k.len());
        let labels: Vec<&[u8]> = k[..end].split(|b| *b == b'.').collect();
        labels.len() >= 2
            && labels
                .iter()
                .all(|l| !l.is_empty() && l.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-'))
            && labels.last().is_some_and(|t| {
                (2..=6).contains(&t.len()) && t.iter().all(u8::is_ascii_alphabetic)
            })
    };
    let count = keys.iter().filter(|k| is_domain(k)).count();
    enough(count, keys.len(), opts.field_share).then_some(count)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn civil_dates_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(format_epoch(1_763_884_800), "2025-11-23T08:00:00Z");
        assert_eq!(format_epoch(0), "1970-01-01T00:00:00Z");
        for d in [-1000i64, 0, 10_957, 20_000, 47_482] {
            let (y, m, dd) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, dd), d);
        }
    }

    fn refs(keys: &[Vec<u8>]) -> Vec<&[u8]> {
        keys.iter().map(Vec::as_slice).collect()
    }

    #[test]
    fn decimal_millis_are_recognised_with_their_bytes() {
        let keys: Vec<Vec<u8>> = (0..100)
            .map(|i| format!("{}-user{}", 1_763_884_800_123u64 + i * 997, i % 7).into_bytes())
            .collect();
        let f = time_field(&refs(&keys), 0, &AnalyzeOptions::default()).unwrap();
        assert_eq!(
            f.kind,
            FieldKind::EpochDecimal {
                unit: TimeUnit::Millis
            }
        );
        assert_eq!((f.start, f.end), (0, 13));
    }

    #[test]
    fn text_is_not_read_as_a_binary_epoch() {
        let keys: Vec<Vec<u8>> = (0..100).map(|i| format!("user{i}").into_bytes()).collect();
        assert!(time_field(&refs(&keys), 0, &AnalyzeOptions::default()).is_none());
    }

    #[test]
    fn a_salt_bucket_is_not_a_counter() {
        let keys: Vec<Vec<u8>> = (0..320)
            .map(|i| format!("{:02}-{}", i % 16, 1_000 + i).into_bytes())
            .collect();
        assert!(counter_field(&refs(&keys), 0, 320, &AnalyzeOptions::default()).is_none());
        let s = spread(&refs(&keys), &AnalyzeOptions::default()).unwrap();
        assert_eq!((s.width, s.distinct), (2, 16));
    }
}
