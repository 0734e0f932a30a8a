//! The little XML the REST models need: a writer that escapes, and a reader
//! into a bounded element tree.
//!
//! Requests carry small documents (a cell set, a schema, a scanner), so
//! they are read whole into [`Element`]s; the tree can never be deeper than
//! [`MAX_DEPTH`], holds at most one element or attribute per
//! [`BYTES_PER_NODE`] bytes of the document and no more than its bytes of
//! text, so a hostile document costs at most a small multiple of its size
//! (the garbage-input test measures it).

use quick_xml::events::Event;
use quick_xml::Reader;

/// The deepest element nesting accepted. The models nest three levels
/// (`CellSet` / `Row` / `Cell`); anything much deeper is not one of them.
pub const MAX_DEPTH: usize = 16;

/// A document may hold one element or attribute per this many of its
/// bytes (plus [`FREE_NODES`]). The smallest element the models use,
/// `<column>..</column>`, takes twenty; a document of `<a/>` takes four
/// per element and would otherwise cost fifty times its size in tree.
pub const BYTES_PER_NODE: usize = 8;

/// Elements and attributes every document may hold whatever its size.
pub const FREE_NODES: usize = 64;

/// One element: its name, attributes in document order, text and children.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Element {
    /// The local name (any namespace prefix removed).
    pub name: String,
    /// Attributes, unescaped.
    pub attributes: Vec<(String, String)>,
    /// The text directly inside the element, unescaped and concatenated.
    pub text: String,
    /// Child elements in order.
    pub children: Vec<Element>,
}

impl Element {
    /// The value of the attribute `name`, if present.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The children named `name`.
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> {
        self.children.iter().filter(move |c| c.name == name)
    }
}

/// Parses a document into its root element. Errors say what was wrong and
/// at which byte. Entities other than XML's five and character references
/// are refused (quick-xml expands nothing else), so no document can expand
/// beyond its size.
pub fn parse(body: &[u8]) -> Result<Element, String> {
    let mut reader = Reader::from_reader(body);
    reader.config_mut().trim_text(true);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let mut buf = Vec::new();
    let max_nodes = body.len() / BYTES_PER_NODE + FREE_NODES;
    let mut nodes = 0usize;
    loop {
        let position = reader.buffer_position();
        let malformed =
            |e: &dyn std::fmt::Display| format!("malformed XML at byte {position}: {e}");
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| malformed(&e))?;
        match &event {
            Event::Start(start) | Event::Empty(start) => {
                if root.is_some() {
                    return Err(malformed(&"a second root element"));
                }
                if stack.len() >= MAX_DEPTH {
                    return Err(malformed(&format!(
                        "elements nested deeper than {MAX_DEPTH}"
                    )));
                }
                nodes += 1;
                let mut element = Element {
                    name: String::from_utf8_lossy(start.local_name().as_ref()).into_owned(),
                    ..Element::default()
                };
                for attribute in start.attributes() {
                    nodes += 1;
                    if nodes > max_nodes {
                        break;
                    }
                    let attribute = attribute.map_err(|e| malformed(&e))?;
                    let value = attribute.unescape_value().map_err(|e| malformed(&e))?;
                    element.attributes.push((
                        String::from_utf8_lossy(attribute.key.local_name().as_ref()).into_owned(),
                        value.into_owned(),
                    ));
                }
                if nodes > max_nodes {
                    return Err(malformed(&format!(
                        "more than one element or attribute per {BYTES_PER_NODE} bytes"
                    )));
                }
                if matches!(event, Event::Empty(_)) {
                    close(element, &mut stack, &mut root);
                } else {
                    stack.push(element);
                }
            }
            Event::End(_) => {
                let element = stack
                    .pop()
                    .ok_or_else(|| malformed(&"an end tag without its start"))?;
                close(element, &mut stack, &mut root);
            }
            Event::Text(text) => {
                let text = text.unescape().map_err(|e| malformed(&e))?;
                match stack.last_mut() {
                    Some(top) => top.text.push_str(&text),
                    None if text.trim().is_empty() => {}
                    None => return Err(malformed(&"text outside the root element")),
                }
            }
            Event::CData(data) => match stack.last_mut() {
                Some(top) => top.text.push_str(&String::from_utf8_lossy(data)),
                None => return Err(malformed(&"text outside the root element")),
            },
            Event::Eof => break,
            // The declaration, comments, processing instructions and a
            // doctype carry nothing the models read.
            _ => {}
        }
        buf.clear();
    }
    if let Some(open) = stack.last() {
        return Err(format!(
            "malformed XML: element <{}> is not closed",
            open.name
        ));
    }
    root.ok_or_else(|| "empty XML document".to_string())
}

/// Attaches a finished element to its parent, or makes it the root.
fn close(element: Element, stack: &mut [Element], root: &mut Option<Element>) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(element),
        None => *root = Some(element),
    }
}

/// Escapes text for an attribute value or element content (the gateways'
/// one markup escaping).
pub use basalt::gateways::text::escape_markup as escape;

/// The XML declaration every document starts with.
pub const DECLARATION: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#;
