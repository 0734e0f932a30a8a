//! Media types: which representation a client asked for (`Accept`) and which
//! one it sent (`Content-Type`).
//!
//! Each resource lists the formats it produces in HBase's order; the first
//! is what a client gets when it accepts anything (`*/*` or no `Accept`):
//! plain text for the table list, version and schema, XML for cells.

/// A representation the gateway reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `text/xml` (also read as `application/xml`).
    Xml,
    /// `application/json`.
    Json,
    /// `text/plain`.
    Text,
    /// `application/octet-stream`: a cell's raw value.
    Binary,
    /// `application/x-protobuf` (also `application/protobuf`). Recognised
    /// so that a client asking only for it is told 406, not given XML.
    Protobuf,
}

impl Format {
    /// The `Content-Type` the gateway writes for this format.
    pub fn mime(self) -> &'static str {
        match self {
            Format::Xml => "text/xml",
            Format::Json => "application/json",
            Format::Text => "text/plain",
            Format::Binary => "application/octet-stream",
            Format::Protobuf => "application/x-protobuf",
        }
    }

    /// The format of a media type (parameters such as `charset` ignored).
    pub fn from_mime(mime: &str) -> Option<Format> {
        let essence = mime.split(';').next().unwrap_or("").trim();
        let essence = essence.to_ascii_lowercase();
        Some(match essence.as_str() {
            "text/xml" | "application/xml" => Format::Xml,
            "application/json" => Format::Json,
            "text/plain" => Format::Text,
            "application/octet-stream" => Format::Binary,
            "application/x-protobuf" | "application/protobuf" => Format::Protobuf,
            _ => return None,
        })
    }

    fn matches(self, range: &str) -> bool {
        match range {
            "*/*" | "*" => true,
            "text/*" => matches!(self, Format::Xml | Format::Text),
            "application/*" => matches!(self, Format::Json | Format::Binary | Format::Protobuf),
            other => Format::from_mime(other) == Some(self),
        }
    }
}

/// The format to answer in: the client's most preferred media range (by
/// `q`, then order) that matches one of `produces`, taking the first
/// match in `produces`. `None` when nothing acceptable can be written
/// (HTTP 406). No `Accept` header accepts anything.
pub fn negotiate(accept: Option<&str>, produces: &[Format]) -> Option<Format> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return produces.first().copied();
    };
    let mut ranges: Vec<(f32, usize, String)> = accept
        .split(',')
        .enumerate()
        .filter_map(|(i, part)| {
            let mut pieces = part.split(';');
            let range = pieces.next()?.trim().to_ascii_lowercase();
            if range.is_empty() {
                return None;
            }
            let mut q = 1.0f32;
            for parameter in pieces {
                if let Some((k, v)) = parameter.split_once('=') {
                    if k.trim().eq_ignore_ascii_case("q") {
                        q = v.trim().parse().unwrap_or(0.0);
                    }
                }
            }
            (q > 0.0).then_some((q, i, range))
        })
        .collect();
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranges
        .iter()
        .find_map(|(_, _, range)| produces.iter().copied().find(|f| f.matches(range)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CELLS: &[Format] = &[Format::Xml, Format::Json, Format::Protobuf, Format::Binary];

    #[test]
    fn no_accept_header_gets_the_first_produced_format() {
        assert_eq!(negotiate(None, CELLS), Some(Format::Xml));
        assert_eq!(negotiate(Some("*/*"), CELLS), Some(Format::Xml));
    }

    #[test]
    fn the_highest_quality_acceptable_range_wins() {
        assert_eq!(
            negotiate(Some("text/xml;q=0.5, application/json"), CELLS),
            Some(Format::Json)
        );
        assert_eq!(
            negotiate(Some("application/octet-stream"), CELLS),
            Some(Format::Binary)
        );
    }

    #[test]
    fn protobuf_is_chosen_by_either_name_and_unproduced_types_are_not() {
        assert_eq!(
            negotiate(Some("application/x-protobuf"), CELLS),
            Some(Format::Protobuf)
        );
        assert_eq!(
            negotiate(Some("application/protobuf"), CELLS),
            Some(Format::Protobuf)
        );
        assert_eq!(negotiate(Some("text/plain"), CELLS), None);
    }

    #[test]
    fn content_types_ignore_parameters_and_case() {
        assert_eq!(
            Format::from_mime("Application/JSON; charset=utf-8"),
            Some(Format::Json)
        );
        assert_eq!(Format::from_mime("image/png"), None);
    }
}
