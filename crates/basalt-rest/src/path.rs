//! URLs: query strings and HBase's row specification
//! (`/<table>/<row>[/<columns>[/<timestamps>]]`).
//!
//! Each path segment is split before it is decoded, so a row key may hold
//! an encoded `/` (`%2F`) or `,` (`%2C`). As in HBase (which decodes each
//! part as a form value), `+` in a row, column or timestamp means a space;
//! send `%2B` for a plus sign.

use bytes::Bytes;

/// Percent-decoding is the gateways' one implementation.
pub use basalt::gateways::text::percent_decode;

/// A query string's parameters in order, decoded.
pub fn parse_query(query: Option<&str>) -> Result<Vec<(String, Vec<u8>)>, String> {
    let Some(query) = query else {
        return Ok(Vec::new());
    };
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let key = String::from_utf8_lossy(&percent_decode(k, true)?).into_owned();
            Ok((key, percent_decode(v, true)?))
        })
        .collect()
}

/// Which rows a row specification names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rows {
    /// One row.
    Single(Bytes),
    /// `start,end`: rows from `start` (inclusive) to `end` (exclusive).
    Range(Bytes, Bytes),
    /// `prefix*`: every row starting with the prefix.
    Prefix(Bytes),
}

/// The timestamps a row specification names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamps {
    /// Every timestamp.
    All,
    /// Exactly this timestamp (`/<ts>`).
    At(i64),
    /// `[start, end)` (`/<start>,<end>`).
    Range(i64, i64),
}

/// A parsed `<row>[/<columns>[/<timestamps>]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowSpec {
    /// The rows.
    pub rows: Rows,
    /// Columns (`family` or `family:qualifier`) in the order given.
    pub columns: Vec<Bytes>,
    /// The timestamps.
    pub stamps: Stamps,
}

impl RowSpec {
    /// Parses the raw (still encoded) segments after the table name.
    pub fn parse(segments: &[&str]) -> Result<RowSpec, String> {
        let (row, rest) = segments
            .split_first()
            .ok_or_else(|| "the path names no row".to_string())?;
        if rest.len() > 2 {
            return Err(format!(
                "too many path segments after the row: {}",
                rest.join("/")
            ));
        }
        let rows = parse_rows(row)?;
        let columns = match rest.first() {
            None => Vec::new(),
            Some(columns) => parse_columns(columns)?,
        };
        let stamps = match rest.get(1) {
            None => Stamps::All,
            Some(stamps) => parse_stamps(stamps)?,
        };
        Ok(RowSpec {
            rows,
            columns,
            stamps,
        })
    }
}

fn parse_rows(segment: &str) -> Result<Rows, String> {
    if let Some((start, end)) = segment.split_once(',') {
        let start = percent_decode(start, true)?;
        if start.ends_with(b"*") {
            return Err("a row range cannot have a wildcard start row".into());
        }
        return Ok(Rows::Range(
            Bytes::from(start),
            Bytes::from(percent_decode(end, true)?),
        ));
    }
    let row = percent_decode(segment, true)?;
    if row.is_empty() {
        return Err("the row key is empty".into());
    }
    match row.strip_suffix(b"*") {
        Some(prefix) => Ok(Rows::Prefix(Bytes::copy_from_slice(prefix))),
        None => Ok(Rows::Single(Bytes::from(row))),
    }
}

fn parse_columns(segment: &str) -> Result<Vec<Bytes>, String> {
    let mut columns = Vec::new();
    let parts: Vec<&str> = segment.split(',').collect();
    for (i, part) in parts.iter().enumerate() {
        // A trailing comma is allowed (HBase ignores it); an empty name
        // elsewhere is a mistake.
        if part.is_empty() {
            if i + 1 == parts.len() && i > 0 {
                continue;
            }
            return Err(format!("empty column name in {segment:?}"));
        }
        columns.push(Bytes::from(percent_decode(part, true)?));
    }
    Ok(columns)
}

fn parse_stamps(segment: &str) -> Result<Stamps, String> {
    let number = |text: &str| -> Result<i64, String> {
        let decoded = percent_decode(text, true)?;
        String::from_utf8_lossy(&decoded)
            .parse()
            .map_err(|_| format!("timestamp is not an integer: {text:?}"))
    };
    match segment.split_once(',') {
        Some((start, end)) => Ok(Stamps::Range(number(start)?, number(end)?)),
        None => Ok(Stamps::At(number(segment)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(path: &str) -> Result<RowSpec, String> {
        let segments: Vec<&str> = path.split('/').collect();
        RowSpec::parse(&segments)
    }

    #[test]
    fn a_row_column_list_and_timestamp_parse_in_order() {
        let parsed = spec("r%2F1/cf:a,cf:b/42").unwrap();
        assert_eq!(parsed.rows, Rows::Single(Bytes::from_static(b"r/1")));
        assert_eq!(
            parsed.columns,
            vec![Bytes::from_static(b"cf:a"), Bytes::from_static(b"cf:b")]
        );
        assert_eq!(parsed.stamps, Stamps::At(42));
    }

    #[test]
    fn ranges_prefixes_and_timestamp_ranges_parse() {
        assert_eq!(
            spec("a,c").unwrap().rows,
            Rows::Range(Bytes::from_static(b"a"), Bytes::from_static(b"c"))
        );
        assert_eq!(
            spec("user*").unwrap().rows,
            Rows::Prefix(Bytes::from_static(b"user"))
        );
        assert_eq!(spec("r/cf/1,5").unwrap().stamps, Stamps::Range(1, 5));
    }

    #[test]
    fn plus_is_a_space_and_percent_two_b_is_a_plus() {
        assert_eq!(
            spec("a+b%2Bc").unwrap().rows,
            Rows::Single(Bytes::from_static(b"a b+c"))
        );
    }

    #[test]
    fn malformed_specifications_say_what_is_wrong() {
        assert!(spec("r/cf/abc").unwrap_err().contains("timestamp"));
        assert!(spec("r/,cf").unwrap_err().contains("empty column"));
        assert!(spec("r%zz").unwrap_err().contains("percent-escape"));
        assert!(spec("r/cf/1/extra").unwrap_err().contains("too many"));
    }

    #[test]
    fn query_parameters_repeat_and_decode() {
        let query = parse_query(Some("row=a%26b&row=c&v=2")).unwrap();
        assert_eq!(
            query,
            vec![
                ("row".to_string(), b"a&b".to_vec()),
                ("row".to_string(), b"c".to_vec()),
                ("v".to_string(), b"2".to_vec()),
            ]
        );
    }
}
