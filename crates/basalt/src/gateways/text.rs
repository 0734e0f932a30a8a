//! Text forms the gateways, the shell and the tools share, each written
//! once so they cannot drift apart: HBase's binary-escaped bytes, URL
//! percent-encoding both ways, and markup escaping (REST's XML, the info
//! server's HTML).

use std::fmt::Write as _;

/// Bytes as HBase's `Bytes.toStringBinary` writes them (printable ASCII but
/// the backslash as is, every other byte as `\xNN`): the one
/// implementation, kept beside `Cell` because the engine's messages use it
/// too. [`crate::keys::text::unescape_binary`] reads it back.
pub use basalt_types::cell::escape_bytes;

/// Decodes `%XX` escapes (two hex digits, either case), and `+` as a space
/// when `plus_is_space` (form values and HBase REST's row specifications);
/// every other byte stands for itself. A malformed escape is an error
/// naming the text.
pub fn percent_decode(text: &str, plus_is_space: bool) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let byte = bytes
                    .get(i + 1..i + 3)
                    .and_then(|digits| Some((hex_value(digits[0])? << 4) | hex_value(digits[1])?))
                    .ok_or_else(|| format!("malformed percent-escape in {text:?}"))?;
                out.push(byte);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// A hex digit's value. (Not `u8::from_str_radix` on the pair, which takes
/// a sign: `%+1` is not an escape.)
fn hex_value(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|v| u8::try_from(v).ok())
}

/// `text` percent-encoded for one path segment or query value: the
/// unreserved characters (letters, digits, `-._~`) and the bytes of `keep`
/// as they are, every other byte as `%XX` (upper-case hex).
pub fn percent_encode(text: &str, keep: &[u8]) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || keep.contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `text` with the five characters that could open markup or end an
/// attribute as entities, so it can sit in element content and in double-
/// or single-quoted attributes of XML and HTML alike (`'` as `&#39;`,
/// which HTML 4 knows and `&apos;` is not).
pub fn escape_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_decode_in_either_case_and_plus_only_as_asked() {
        assert_eq!(percent_decode("a%2Fb%2fc", false).unwrap(), b"a/b/c");
        assert_eq!(percent_decode("a+b%2B", true).unwrap(), b"a b+");
        assert_eq!(percent_decode("a+b", false).unwrap(), b"a+b");
        assert_eq!(percent_decode("%00%FF", false).unwrap(), [0, 255]);
    }

    #[test]
    fn a_malformed_percent_escape_is_an_error_naming_the_text() {
        for bad in ["%", "%4", "%zz", "a%+1", "%-1"] {
            let e = percent_decode(bad, true).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn percent_encoding_keeps_unreserved_characters_and_the_ones_asked_for() {
        assert_eq!(percent_encode("ns:t-1_a.b~", b""), "ns%3At-1_a.b~");
        assert_eq!(percent_encode("ns:t-1_a.b~", b":"), "ns:t-1_a.b~");
        assert_eq!(percent_encode("a b/&é", b""), "a%20b%2F%26%C3%A9");
        let text = "x/y z:\u{1F600}";
        assert_eq!(
            percent_decode(&percent_encode(text, b""), false).unwrap(),
            text.as_bytes()
        );
    }

    #[test]
    fn markup_escaping_covers_every_character_that_could_open_markup_or_end_an_attribute() {
        assert_eq!(
            escape_markup("<script>alert(\"x\" & 'y')</script>"),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;"
        );
    }

    #[test]
    fn binary_escaping_is_hbase_to_string_binary() {
        assert_eq!(escape_bytes(b"a b:c,d"), "a b:c,d");
        assert_eq!(escape_bytes(&[0x00, 0x7f, 0xff, b'x']), "\\x00\\x7F\\xFFx");
        assert_eq!(escape_bytes(b"back\\slash"), "back\\x5Cslash");
    }
}
