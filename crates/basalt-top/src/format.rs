//! How values are written in the table: sizes with one unit (`1.2MB`),
//! rates, percentages, times, and row keys escaped the way HBase's
//! `Bytes.toStringBinary` shows them, so a key copied from `basalt top`
//! reads the same as in the HBase shell.

/// A byte count with the largest binary unit that keeps it at least 1:
/// `0B`, `512B`, `1.2KB`, `3.4MB`, `1.0GB`, ... (one decimal from KB up).
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KB", "MB", "GB", "TB", "PB"];
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    // u64 -> f64 loses precision only past 2^53 bytes; one decimal hides it.
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1}{}", UNITS[unit])
}

/// A size as [`size`] writes it (or a plain number of bytes) read back:
/// `1.2MB`, `512`, `3kb`. For filters on size columns.
pub fn parse_size(text: &str) -> Option<f64> {
    let t = text.trim();
    let upper = t.to_ascii_uppercase();
    let (number, factor) = [
        ("PB", 1u64 << 50),
        ("TB", 1 << 40),
        ("GB", 1 << 30),
        ("MB", 1 << 20),
        ("KB", 1 << 10),
        ("B", 1),
    ]
    .iter()
    .find_map(|(unit, factor)| upper.strip_suffix(unit).map(|n| (n.to_string(), *factor)))
    .unwrap_or((upper.clone(), 1));
    let n: f64 = number.trim().parse().ok()?;
    (n.is_finite() && n >= 0.0).then_some(n * factor as f64)
}

/// Requests per second, one decimal: light loads are fractions of a
/// request per second, and a minute's rate of 0.1/s is still a signal.
pub fn rate(per_second: f64) -> String {
    format!("{per_second:.1}")
}

/// A fraction (0.0-1.0) as a percentage with two decimals; nothing for
/// `None` (no compaction running).
pub fn percent(fraction: Option<f64>) -> String {
    match fraction {
        Some(f) => format!("{:.2}%", f * 100.0),
        None => String::new(),
    }
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS` (UTC);
/// nothing for `None` (never happened). The form sorts as text in time
/// order, which filters rely on.
pub fn timestamp(millis: Option<i64>) -> String {
    let Some(ms) = millis else {
        return String::new();
    };
    let secs = ms.div_euclid(1000);
    let (year, month, day) = civil_date(secs.div_euclid(86_400));
    let of_day = secs.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

/// The time of day (UTC) of a moment, `HH:MM:SS`, for the summary line.
pub fn time_of_day(millis: i64) -> String {
    let of_day = millis.div_euclid(1000).rem_euclid(86_400);
    format!(
        "{:02}:{:02}:{:02}",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

/// A duration in milliseconds as `3d 04:05:06`, `04:05:06` under a day.
pub fn uptime(millis: u64) -> String {
    let secs = millis / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let clock = format!(
        "{:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    );
    if days > 0 {
        format!("{days}d {clock}")
    } else {
        clock
    }
}

/// The proleptic Gregorian date of a day number (days since 1970-01-01).
/// Shifting the year to start in March puts the leap day last, so the
/// month lengths follow the fixed pattern 31,30,31,30,31 that
/// `(153 * m + 2) / 5` counts; 400-year eras of 146,097 days repeat exactly.
fn civil_date(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468; // 0000-03-01 to 1970-01-01
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let march_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * march_month + 2) / 5 + 1;
    let month = if march_month < 10 {
        march_month + 3
    } else {
        march_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    // Both are small and positive by construction (1-12, 1-31).
    (year, month as u32, day as u32)
}

/// A row key as HBase's `Bytes.toStringBinary` writes it: letters, digits
/// and the printable punctuation HBase keeps stay as they are, every other
/// byte (the backslash, controls, bytes over 0x7e) becomes `\xNN` in
/// upper-case hex (the gateways' one implementation).
pub use basalt::gateways::text::escape_bytes as key;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_the_largest_unit_with_one_decimal() {
        assert_eq!(size(0), "0B");
        assert_eq!(size(1023), "1023B");
        assert_eq!(size(1024), "1.0KB");
        assert_eq!(size(1_258_291), "1.2MB");
        assert_eq!(size(5 << 30), "5.0GB");
        assert_eq!(size(u64::MAX), "16384.0PB");
    }

    #[test]
    fn sizes_read_back_with_or_without_a_unit() {
        assert_eq!(parse_size("1.5KB"), Some(1536.0));
        assert_eq!(parse_size("2mb"), Some(2.0 * 1048576.0));
        assert_eq!(parse_size("100"), Some(100.0));
        assert_eq!(parse_size("10B"), Some(10.0));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("-1MB"), None);
    }

    #[test]
    fn keys_are_escaped_like_hbase_to_string_binary() {
        assert_eq!(key(b"row-1"), "row-1");
        assert_eq!(key(b"a b:c,d"), "a b:c,d");
        assert_eq!(key(&[0x00, 0x7f, 0xff, b'x']), "\\x00\\x7F\\xFFx");
        assert_eq!(key(b"back\\slash"), "back\\x5Cslash");
        assert_eq!(key(b"tab\there"), "tab\\x09here");
        assert_eq!(key(b""), "");
    }

    #[test]
    fn percentages_have_two_decimals_and_idle_is_blank() {
        assert_eq!(percent(Some(0.125)), "12.50%");
        assert_eq!(percent(Some(1.0)), "100.00%");
        assert_eq!(percent(None), "");
    }

    #[test]
    fn timestamps_are_utc_dates_that_sort_as_text() {
        assert_eq!(timestamp(Some(0)), "1970-01-01 00:00:00");
        assert_eq!(timestamp(Some(951_782_400_000)), "2000-02-29 00:00:00");
        assert_eq!(timestamp(Some(1_700_000_000_123)), "2023-11-14 22:13:20");
        assert_eq!(timestamp(Some(-1000)), "1969-12-31 23:59:59");
        assert_eq!(timestamp(None), "");
        assert!(timestamp(Some(1_600_000_000_000)) < timestamp(Some(1_700_000_000_000)));
    }

    #[test]
    fn uptime_counts_days_then_a_clock() {
        assert_eq!(uptime(59_000), "00:00:59");
        assert_eq!(uptime(3_723_000), "01:02:03");
        assert_eq!(uptime(2 * 86_400_000 + 61_000), "2d 00:01:01");
        assert_eq!(time_of_day(1_700_000_000_123), "22:13:20");
    }

    #[test]
    fn rates_have_one_decimal() {
        assert_eq!(rate(0.0), "0.0");
        assert_eq!(rate(1234.56), "1234.6");
    }
}
