//! Keys as text: HBase's binary-escaped form (`Bytes.toStringBinary`:
//! printable ASCII as is, every other byte as `\xNN`), hex, and the
//! shell's double-quoted literals for `SPLITS => [...]`.

use basalt_types::{Error, Result};

pub use basalt_types::cell::escape_bytes;

/// Reads HBase's binary-escaped text: `\xNN` (two hex digits, either case)
/// is one byte, any other character stands for its UTF-8 bytes. A
/// backslash not starting a complete `\xNN` is an error naming its
/// offset: the escaped form writes a backslash itself as `\x5C`.
pub fn unescape_binary(text: &str) -> Result<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let digits = bytes.get(i + 2..i + 4);
        let value = match (bytes.get(i + 1), digits) {
            (Some(b'x' | b'X'), Some(d)) => std::str::from_utf8(d)
                .ok()
                .filter(|d| d.bytes().all(|c| c.is_ascii_hexdigit()))
                .and_then(|d| u8::from_str_radix(d, 16).ok()),
            _ => None,
        };
        let Some(value) = value else {
            let shown: String = text[i..].chars().take(4).collect();
            return Err(Error::invalid(format!(
                "undecodable escape '{shown}' at offset {i}: expected \\x and two hex digits"
            )));
        };
        out.push(value);
        i += 4;
    }
    Ok(out)
}

/// Reads hex text (two digits a byte, either case; spaces ignored).
pub fn unhex(text: &str) -> Result<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(Error::invalid(format!(
            "hex text has an odd number of digits ({})",
            digits.len()
        )));
    }
    digits
        .chunks(2)
        .enumerate()
        .map(|(i, pair)| {
            std::str::from_utf8(pair)
                .ok()
                .filter(|p| p.bytes().all(|c| c.is_ascii_hexdigit()))
                .and_then(|p| u8::from_str_radix(p, 16).ok())
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "'{}' at digit {} is not a hex byte",
                        String::from_utf8_lossy(pair),
                        i * 2
                    ))
                })
        })
        .collect()
}

/// `key` as a double-quoted shell (Ruby) literal: printable ASCII as is
/// except `"`, `\` and `#` (which would start an interpolation in Ruby),
/// every other byte as `\xNN`.
pub fn shell_literal(key: &[u8]) -> String {
    let mut out = String::with_capacity(key.len() + 2);
    out.push('"');
    for &b in key {
        if (0x20..0x7f).contains(&b) && !matches!(b, b'"' | b'\\' | b'#') {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out.push('"');
    out
}

/// `SPLITS => ["k1", "k2", ...]`, ready to paste into the shell's `create`.
pub fn splits_clause(keys: &[Vec<u8>]) -> String {
    let items: Vec<String> = keys.iter().map(|k| shell_literal(k)).collect();
    format!("SPLITS => [{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn binary_escapes_read_back_and_bad_ones_name_their_offset() {
        assert_eq!(unescape_binary(r"a\x00\xFFb").unwrap(), b"a\x00\xffb");
        assert_eq!(unescape_binary(r"\x5c").unwrap(), b"\\");
        let e = unescape_binary(r"ab\xZZ").unwrap_err().to_string();
        assert!(e.contains("offset 2"), "{e}");
        assert!(unescape_binary(r"ab\x1").is_err());
        assert!(unescape_binary(r"ab\n").is_err());
        assert!(unescape_binary("ab\\").is_err());
    }

    #[test]
    fn hex_reads_pairs() {
        assert_eq!(unhex("00ff 10").unwrap(), vec![0, 0xff, 0x10]);
        assert!(unhex("abc").is_err());
        assert!(unhex("zz").is_err());
    }

    #[test]
    fn shell_literals_escape_what_ruby_would_read_otherwise() {
        assert_eq!(shell_literal(b"a\x01\"#\\"), r#""a\x01\x22\x23\x5C""#);
        assert_eq!(
            splits_clause(&[vec![1], b"m".to_vec()]),
            r#"SPLITS => ["\x01", "m"]"#
        );
    }

    proptest! {
        #[test]
        fn garbage_text_is_an_error_or_a_key_never_a_panic(text in "\\PC{0,24}|[\\\\x0-9a-fA-FzZ ]{0,12}") {
            let _ = unescape_binary(&text);
            let _ = unhex(&text);
        }

        #[test]
        fn escaped_keys_read_back(key in proptest::collection::vec(any::<u8>(), 0..40)) {
            prop_assert_eq!(unescape_binary(&escape_bytes(&key)).unwrap(), key);
        }
    }
}
