//! Output in the HBase shell's look: `ROW  COLUMN+CELL` listings, bytes as
//! `Bytes.toStringBinary` prints them, `{NAME => 'cf', ...}` family lines.
//!
//! Timestamps print as milliseconds since the epoch, as HBase shells before
//! 2.4 did (later ones print an ISO time); a number survives copy and paste
//! back into `get ... TIMESTAMP => ...`.

use std::time::Duration;

use basalt::admin::{CellReply, FamilyInfo};

/// Width of the first column (row key or column name), leading space
/// included, before the second starts.
pub const FIRST_COLUMN: usize = 34;

/// Bytes as HBase's `Bytes.toStringBinary` shows them: letters, digits,
/// space and most punctuation as they are, anything else as `\xNN`.
pub fn binary(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b" `~!@#$%^&*()-_=+[]{}|;:'\",.<>/?".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

/// A two-column line: ` first    second`, the first padded to
/// [`FIRST_COLUMN`] (a longer one pushes the second out by one space).
pub fn two_columns(first: &str, second: &str) -> String {
    let first = format!(" {first}");
    if first.chars().count() >= FIRST_COLUMN {
        format!("{first} {second}")
    } else {
        format!("{first:<FIRST_COLUMN$} {second}")
    }
}

/// The header line of a listing (`ROW`/`COLUMN+CELL`, `COLUMN`/`CELL`).
pub fn header(first: &str, second: &str) -> String {
    format!("{first:<FIRST_COLUMN$} {second}")
}

/// The `column=cf:q, timestamp=..., value=...` part of a scan line.
pub fn scan_cell(c: &CellReply) -> String {
    format!(
        "column={}:{}, {}",
        binary(&c.family),
        binary(&c.qualifier),
        get_cell(c)
    )
}

/// The `timestamp=..., value=...` part of a get line (`type=...` instead
/// of the value for delete markers of raw reads).
pub fn get_cell(c: &CellReply) -> String {
    if c.cell_type == "Put" {
        format!("timestamp={}, value={}", c.timestamp, binary(&c.value))
    } else {
        format!("timestamp={}, type={}", c.timestamp, c.cell_type)
    }
}

/// `Took 0.0123 seconds`.
pub fn took(elapsed: Duration) -> String {
    format!("Took {:.4} seconds", elapsed.as_secs_f64())
}

/// `1 row(s)`.
pub fn rows(n: u64) -> String {
    format!("{n} row(s)")
}

/// A Ruby array of strings: `["a", "b"]`, bytes escaped.
pub fn ruby_array<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> String {
    let items: Vec<String> = items
        .into_iter()
        .map(|b| format!("\"{}\"", binary(b)))
        .collect();
    format!("[{}]", items.join(", "))
}

/// A family as `describe` prints it: `{NAME => 'cf', BLOOMFILTER => 'ROW', ...}`.
pub fn family(f: &FamilyInfo) -> String {
    let mut parts = vec![format!("NAME => '{}'", f.name)];
    for (k, v) in &f.options {
        let v = if k == "TTL" { ttl(v) } else { v.clone() };
        parts.push(format!("{k} => '{v}'"));
    }
    format!("{{{}}}", parts.join(", "))
}

/// TTL seconds as HBase describes them: `86400 SECONDS (1 DAY)`.
fn ttl(value: &str) -> String {
    let Ok(seconds) = value.parse::<u64>() else {
        return value.to_string();
    };
    let mut rest = seconds;
    let mut parts = Vec::new();
    for (unit, size) in [
        ("DAY", 86_400),
        ("HOUR", 3_600),
        ("MINUTE", 60),
        ("SECOND", 1),
    ] {
        let n = rest / size;
        rest %= size;
        if n > 0 {
            parts.push(format!("{n} {unit}{}", if n == 1 { "" } else { "S" }));
        }
    }
    format!("{seconds} SECONDS ({})", parts.join(" "))
}

/// A table with a header, columns right-aligned and separated by ` | `
/// (HBase's `list_regions` look).
pub fn grid(headers: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = String::new();
        for (cell, w) in cells.iter().zip(&widths) {
            s.push_str(&format!(" {cell:>w$} |"));
        }
        s
    };
    let mut out = vec![line(headers.iter().map(|h| h.to_string()).collect())];
    out.push(line(widths.iter().map(|w| "-".repeat(*w)).collect()));
    for row in rows {
        out.push(line(row.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_print_like_to_string_binary() {
        assert_eq!(binary(b"row-1 a:b"), "row-1 a:b");
        assert_eq!(binary(b"\x00\xff\\\n"), "\\x00\\xFF\\x5C\\x0A");
    }

    #[test]
    fn ttl_is_spelled_out() {
        assert_eq!(ttl("86400"), "86400 SECONDS (1 DAY)");
        assert_eq!(
            ttl("90061"),
            "90061 SECONDS (1 DAY 1 HOUR 1 MINUTE 1 SECOND)"
        );
        assert_eq!(ttl("FOREVER"), "FOREVER");
    }

    #[test]
    fn columns_line_up() {
        assert_eq!(two_columns("r1", "x").find('x'), Some(FIRST_COLUMN + 1));
        assert_eq!(
            header("ROW", "COLUMN+CELL").find('C'),
            Some(FIRST_COLUMN + 1)
        );
        let long = "r".repeat(40);
        assert_eq!(two_columns(&long, "x"), format!(" {long} x"));
    }
}
