//! The report as text: the recommendation first, then the findings, the
//! key statistics, the regions and the warnings, each a short section.

use std::fmt::Write;

use super::{Direction, KeyReport, Layout, SampleOrder};
use crate::keys::text::escape_bytes;

fn pct(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

pub(super) fn text(r: &KeyReport) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored.
    let order = match r.order {
        SampleOrder::Write => "in write order",
        SampleOrder::Key => "in key order",
    };
    let _ = writeln!(
        out,
        "Row-key analysis: {} keys {order}, standing for {} rows",
        r.keys, r.rows
    );
    if !r.source.is_empty() {
        let _ = writeln!(out, "  from {}", r.source);
    }

    let _ = writeln!(out, "\nRECOMMENDATION");
    if r.recommendations.is_empty() {
        let _ = writeln!(out, "  none: no keys to judge");
    }
    for (i, rec) in r.recommendations.iter().enumerate() {
        let _ = writeln!(out, "  {}. {}", i + 1, rec.title);
        for d in &rec.details {
            let _ = writeln!(out, "     {d}");
        }
    }

    let _ = writeln!(out, "\nFINDINGS");
    match &r.monotonic {
        Some(m) => {
            let dir = match m.direction {
                Direction::Increasing => "increasing",
                Direction::Decreasing => "decreasing",
            };
            let _ = writeln!(
                out,
                "  monotonic {dir} prefix: bytes {}..{}",
                m.field.start, m.field.end
            );
            let _ = writeln!(out, "    {}", m.evidence);
        }
        None => {
            let _ = writeln!(out, "  no monotonic prefix");
        }
    }
    match &r.layout {
        Layout::Spread(s) => {
            let _ = writeln!(
                out,
                "  even spread: the first {} byte(s) take {} values, largest share {}, smallest {} \
                 (max/min {:.2}){}",
                s.width,
                s.distinct,
                pct(s.max_share),
                pct(s.min_share),
                if s.min_share > 0.0 {
                    s.max_share / s.min_share
                } else {
                    f64::INFINITY
                },
                if s.high_entropy {
                    "; high entropy, as a hash"
                } else {
                    ""
                }
            );
            if let Some(f) = &r.leading_field {
                let _ = writeln!(
                    out,
                    "    behind it, bytes {}..{}: {} ({} to {})",
                    f.start,
                    f.end,
                    f.kind.describe(),
                    f.min,
                    f.max
                );
            }
        }
        Layout::Plain => {
            if r.monotonic.is_none() {
                if let Some(f) = &r.leading_field {
                    let _ = writeln!(
                        out,
                        "  leading field: bytes {}..{}, {} ({} to {})",
                        f.start,
                        f.end,
                        f.kind.describe(),
                        f.min,
                        f.max
                    );
                }
            }
        }
    }
    if let (Some(w), None) = (&r.write_order, &r.monotonic) {
        let _ = writeln!(
            out,
            "  write order: {} of keys above every key before them, {} below; rank correlation {:.2}",
            pct(w.new_max_share),
            pct(w.new_min_share),
            w.rank_correlation
        );
    }
    if let Some(w) = &r.decimal_widths {
        let _ = writeln!(
            out,
            "  decimal field at byte {} varies from {} to {} digits",
            w.start, w.min_width, w.max_width
        );
    }

    let _ = writeln!(out, "\nKEYS");
    let l = &r.lengths;
    let _ = writeln!(
        out,
        "  length: min {}, p50 {}, p99 {}, max {} bytes (mean {:.1})",
        l.min, l.p50, l.p99, l.max, l.mean
    );
    let _ = writeln!(out, "  distinct first bytes: {}", r.distinct_first_bytes);
    for p in &r.prefixes {
        let top: Vec<String> = p
            .top
            .iter()
            .map(|t| format!("'{}' {}", escape_bytes(&t.prefix), pct(t.share)))
            .collect();
        let _ = writeln!(
            out,
            "  {}-byte prefixes: {} distinct; most common: {}",
            p.width,
            p.distinct,
            top.join(", ")
        );
    }

    if let Some(spread) = &r.regions {
        let _ = writeln!(out, "\nREGIONS ({})", spread.regions.len());
        let labels: Vec<String> = spread.regions.iter().map(|s| s.region.label()).collect();
        let width = labels.iter().map(String::len).max().unwrap_or(5).max(5);
        let _ = writeln!(
            out,
            "  {:>3}  {:<width$}  {:>8}  {:>6}",
            "#", "range", "keys", "share"
        );
        for (i, (s, label)) in spread.regions.iter().zip(&labels).enumerate() {
            let hot = if spread.hot_region == Some(i) {
                "  <- new writes"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  {:>3}  {label:<width$}  {:>8}  {:>6}{hot}",
                i + 1,
                s.keys,
                pct(s.share)
            );
        }
        let _ = writeln!(out, "  {}", spread.projection);
    }

    if !r.warnings.is_empty() {
        let _ = writeln!(out, "\nSCHEMA");
        for w in &r.warnings {
            let _ = writeln!(out, "  WARNING: {w}");
        }
    }
    out
}
