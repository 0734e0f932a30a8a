//! HTML building blocks: escaping, the page frame, tables, numbers in
//! human units. Every piece of user data (table names, row keys, region
//! names, reasons) goes through [`escape`] before it reaches a page.

use std::fmt::Write as _;

/// `text` with the five HTML-special characters as entities, so it can sit
/// in element content and in double- or single-quoted attributes alike.
pub use basalt::gateways::text::escape_markup as escape;

/// `text` percent-encoded for one path segment or query value: unreserved
/// characters as they are, every other byte as `%XX`.
pub fn url_component(text: &str) -> String {
    basalt::gateways::text::percent_encode(text, b"")
}

/// The pages in the navigation bar: (path, label).
const NAV: &[(&str, &str)] = &[
    ("/", "Status"),
    ("/tables", "Tables"),
    ("/servers", "Servers"),
    ("/load-splits", "Load splits"),
    ("/metrics", "Metrics"),
];

const STYLE: &str = "body{font-family:sans-serif;margin:0;color:#222}\
header{background:#2b3a42;color:#fff;padding:8px 16px}\
header a{color:#cfe3ee;margin-right:16px;text-decoration:none}\
header a.on{color:#fff;font-weight:bold}\
main{padding:8px 16px}\
table{border-collapse:collapse;margin:8px 0}\
th,td{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}\
th{background:#eef2f4}td.n{text-align:right;font-variant-numeric:tabular-nums}\
th a{color:inherit}code,.key{font-family:monospace}\
.muted{color:#777}.hot{background:#fde2d8}\
nav.switch a{margin-right:12px}nav.switch a.on{font-weight:bold;text-decoration:none;color:#222}";

/// A whole page: the frame (title, navigation with `active` marked) around
/// `body`, which the caller has escaped.
pub fn page(title: &str, active: &str, body: &str) -> String {
    let mut nav = String::new();
    for (path, label) in NAV {
        let class = if *path == active { " class=\"on\"" } else { "" };
        let _ = write!(nav, "<a href=\"{path}\"{class}>{label}</a>");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<link rel=\"icon\" href=\"data:,\">\
<title>{title} - Basalt</title><style>{STYLE}</style></head>\
<body><header><strong style=\"margin-right:24px\">Basalt</strong>{nav}</header>\
<main><h1>{title}</h1>\n{body}\n</main></body></html>\n",
        title = escape(title),
    )
}

/// A two-column table of (name, value) pairs; both escaped here.
pub fn pairs(id: &str, rows: &[(&str, String)]) -> String {
    let mut out = format!("<table id=\"{id}\"><tbody>");
    for (name, value) in rows {
        let _ = write!(
            out,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(name),
            escape(value)
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// Bytes in binary units (`1.5 MiB`), exact below 1 KiB.
pub fn bytes(n: u64) -> String {
    const UNITS: &[&str] = &["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A rate with one decimal (`12.5`).
pub fn rate(r: f64) -> String {
    format!("{r:.1}")
}

/// A duration in seconds as `3d 4h 5m 6s`, leading zero units left out.
pub fn duration(seconds: u64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m {s}s"),
        _ => format!("{d}d {h}h {m}m {s}s"),
    }
}

/// Milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS` UTC; 0 (never)
/// as `-`.
pub fn timestamp(ms: i64) -> String {
    if ms <= 0 {
        return "-".into();
    }
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, mo, d) = civil_from_days(days);
    format!(
        "{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// Minutes since the epoch as `HH:MM` UTC (the heatmap's time axis).
pub fn clock_minute(ms: i64) -> String {
    let minute = ms.div_euclid(60_000).rem_euclid(1440);
    format!("{:02}:{:02}", minute / 60, minute % 60)
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's published algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_every_character_that_could_open_markup_or_end_an_attribute() {
        assert_eq!(
            escape("<script>alert(\"x\" & 'y')</script>"),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;"
        );
    }

    #[test]
    fn url_components_keep_unreserved_characters_and_encode_the_rest() {
        assert_eq!(url_component("ns:t-1_a.b~"), "ns%3At-1_a.b~");
        assert_eq!(url_component("a b/&"), "a%20b%2F%26");
    }

    #[test]
    fn sizes_durations_and_times_read_as_people_write_them() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 * 1024 * 1024 * 1024), "3.0 GiB");
        assert_eq!(duration(59), "59s");
        assert_eq!(duration(3_725), "1h 2m 5s");
        assert_eq!(duration(90_061), "1d 1h 1m 1s");
        assert_eq!(timestamp(0), "-");
        assert_eq!(timestamp(1_700_000_000_000), "2023-11-14 22:13:20");
        assert_eq!(clock_minute(1_700_000_000_000), "22:13");
    }
}
