//! HBase REST's representations (its "models"), written as XML, JSON or
//! text and read from XML or JSON.
//!
//! Element and field names are HBase's, so its clients read them
//! unchanged: row keys, column names and values are base64 in both XML and
//! JSON; a cell's value is the element's text in XML and the `$` field in
//! JSON; attributes in XML are fields in JSON. The full layout is in
//! `docs/rest-protocol.md`.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::Bytes;
use serde_json::{json, Map, Value};

use crate::json::{CellSetJson, ScannerJson, SchemaJson};
use crate::media::Format;
use crate::protobuf::{Reader, Writer};
use crate::xml::{self, escape, Element, DECLARATION};

/// Why a request body could not be read as a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadBody(pub String);

impl std::fmt::Display for BadBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type Read<T> = Result<T, BadBody>;

fn bad(message: impl Into<String>) -> BadBody {
    BadBody(message.into())
}

fn b64(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

fn unb64(text: &str, what: &str) -> Read<Bytes> {
    BASE64
        .decode(text.trim())
        .map(Bytes::from)
        .map_err(|e| bad(format!("{what} is not base64: {e}")))
}

/// One cell of a cell set. A written cell may leave out its column (the
/// URL names it) and its timestamp (the server's clock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellModel {
    /// `family:qualifier`.
    pub column: Option<Bytes>,
    /// Milliseconds; absent means now.
    pub timestamp: Option<i64>,
    /// The value.
    pub value: Bytes,
}

/// One row of a cell set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowModel {
    /// The row key; absent in a written row means the URL's row.
    pub key: Option<Bytes>,
    /// Its cells in order.
    pub cells: Vec<CellModel>,
}

/// HBase's `CellSet`: rows of cells, the answer to reads and the body of
/// writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CellSet {
    /// The rows in order.
    pub rows: Vec<RowModel>,
}

impl CellSet {
    /// The cell set as XML or JSON.
    pub fn encode(&self, format: Format) -> Vec<u8> {
        match format {
            Format::Protobuf => {
                // CellSet: rows = 1; Row: key = 1, values = 2; Cell: row = 1
                // (unused inside a set), column = 2, timestamp = 3, data = 4.
                let mut set = Writer::new();
                for row in &self.rows {
                    let mut r = Writer::new();
                    r.bytes(1, row.key.as_deref().unwrap_or_default());
                    for cell in &row.cells {
                        let mut c = Writer::new();
                        if let Some(column) = &cell.column {
                            c.bytes(2, column);
                        }
                        if let Some(ts) = cell.timestamp {
                            c.int(3, ts);
                        }
                        c.bytes(4, &cell.value);
                        r.message(2, c);
                    }
                    set.message(1, r);
                }
                set.finish()
            }
            Format::Json => {
                let rows: Vec<Value> = self
                    .rows
                    .iter()
                    .map(|row| {
                        let cells: Vec<Value> = row
                            .cells
                            .iter()
                            .map(|cell| {
                                let mut object = Map::new();
                                if let Some(column) = &cell.column {
                                    object.insert("column".into(), json!(b64(column)));
                                }
                                if let Some(ts) = cell.timestamp {
                                    object.insert("timestamp".into(), json!(ts));
                                }
                                object.insert("$".into(), json!(b64(&cell.value)));
                                Value::Object(object)
                            })
                            .collect();
                        json!({
                            "key": b64(row.key.as_deref().unwrap_or_default()),
                            "Cell": cells,
                        })
                    })
                    .collect();
                json!({ "Row": rows }).to_string().into_bytes()
            }
            _ => {
                let mut out = String::from(DECLARATION);
                out.push_str("<CellSet>");
                for row in &self.rows {
                    out.push_str(&format!(
                        r#"<Row key="{}">"#,
                        b64(row.key.as_deref().unwrap_or_default())
                    ));
                    for cell in &row.cells {
                        out.push_str("<Cell");
                        if let Some(column) = &cell.column {
                            out.push_str(&format!(r#" column="{}""#, b64(column)));
                        }
                        if let Some(ts) = cell.timestamp {
                            out.push_str(&format!(r#" timestamp="{ts}""#));
                        }
                        out.push('>');
                        out.push_str(&b64(&cell.value));
                        out.push_str("</Cell>");
                    }
                    out.push_str("</Row>");
                }
                out.push_str("</CellSet>");
                out.into_bytes()
            }
        }
    }

    /// Reads a cell set written as XML or JSON.
    pub fn decode(format: Format, body: &[u8]) -> Read<CellSet> {
        match format {
            Format::Json => {
                let set: CellSetJson = parse_json(body, "CellSet")?;
                let rows = set
                    .rows
                    .0
                    .into_iter()
                    .enumerate()
                    .map(|(i, row)| {
                        let what = format!("Row {i}");
                        let key = row
                            .key
                            .map(|k| unb64(&k, &format!("{what} key")))
                            .transpose()?;
                        let cells = row
                            .cells
                            .0
                            .into_iter()
                            .enumerate()
                            .map(|(j, cell)| {
                                let what = format!("{what} Cell {j}");
                                Ok(CellModel {
                                    column: cell
                                        .column
                                        .map(|c| unb64(&c, &format!("{what} column")))
                                        .transpose()?,
                                    timestamp: cell
                                        .timestamp
                                        .map(|t| parse_i64(&t.0, &format!("{what} timestamp")))
                                        .transpose()?,
                                    value: match cell.value {
                                        Some(v) => unb64(&v, &format!("{what} value"))?,
                                        None => Bytes::new(),
                                    },
                                })
                            })
                            .collect::<Read<Vec<_>>>()?;
                        Ok(RowModel { key, cells })
                    })
                    .collect::<Read<Vec<_>>>()?;
                Ok(CellSet { rows })
            }
            Format::Xml => {
                let root = parse_xml(body, "CellSet")?;
                let rows = root
                    .children_named("Row")
                    .enumerate()
                    .map(|(i, row)| {
                        let what = format!("Row {i}");
                        let key = row
                            .attribute("key")
                            .map(|k| unb64(k, &format!("{what} key")))
                            .transpose()?;
                        let cells = row
                            .children_named("Cell")
                            .enumerate()
                            .map(|(j, cell)| {
                                let what = format!("{what} Cell {j}");
                                Ok(CellModel {
                                    column: cell
                                        .attribute("column")
                                        .map(|c| unb64(c, &format!("{what} column")))
                                        .transpose()?,
                                    timestamp: cell
                                        .attribute("timestamp")
                                        .map(|t| parse_i64(t, &format!("{what} timestamp")))
                                        .transpose()?,
                                    value: unb64(&cell.text, &format!("{what} value"))?,
                                })
                            })
                            .collect::<Read<Vec<_>>>()?;
                        Ok(RowModel { key, cells })
                    })
                    .collect::<Read<Vec<_>>>()?;
                Ok(CellSet { rows })
            }
            Format::Protobuf => {
                decode_cell_set_protobuf(body).map_err(|e| bad(format!("protobuf CellSet: {e}")))
            }
            other => Err(bad(format!(
                "a cell set cannot be read as {}",
                other.mime()
            ))),
        }
    }
}

/// HBase's `TableList`.
pub fn encode_table_list(names: &[String], format: Format) -> Vec<u8> {
    match format {
        // TableList: name = 1 (repeated).
        Format::Protobuf => strings_message(1, names),
        Format::Json => {
            let tables: Vec<Value> = names.iter().map(|n| json!({ "name": n })).collect();
            json!({ "table": tables }).to_string().into_bytes()
        }
        Format::Xml => {
            let mut out = String::from(DECLARATION);
            out.push_str("<TableList>");
            for name in names {
                out.push_str(&format!(r#"<table name="{}"/>"#, escape(name)));
            }
            out.push_str("</TableList>");
            out.into_bytes()
        }
        _ => names
            .iter()
            .map(|n| format!("{n}\n"))
            .collect::<String>()
            .into_bytes(),
    }
}

/// A column family's schema: its name and HBase's options by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ColumnSchema {
    /// The family name.
    pub name: String,
    /// Options (`VERSIONS`, `TTL`, ...) as text, in order.
    pub options: Vec<(String, String)>,
}

/// HBase's `TableSchema`: the table's name and options and its families.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableSchema {
    /// The table name.
    pub name: String,
    /// Table options as text (`IS_META`, ...).
    pub options: Vec<(String, String)>,
    /// The families.
    pub columns: Vec<ColumnSchema>,
}

impl TableSchema {
    /// The schema as XML, JSON or HBase's text form.
    pub fn encode(&self, format: Format) -> Vec<u8> {
        match format {
            Format::Protobuf => {
                // TableSchema: name = 1, attrs = 2 (name = 1, value = 2),
                // columns = 3; ColumnSchema: name = 1, attrs = 2, ttl = 3,
                // maxVersions = 4, compression = 5.
                let mut schema = Writer::new();
                schema.string(1, &self.name);
                for (k, v) in &self.options {
                    schema.message(2, attribute(k, v));
                }
                for c in &self.columns {
                    let mut column = Writer::new();
                    column.string(1, &c.name);
                    for (k, v) in &c.options {
                        column.message(2, attribute(k, v));
                    }
                    for (k, v) in &c.options {
                        match k.as_str() {
                            "TTL" => {
                                if let Ok(ttl) = v.parse::<i32>() {
                                    column.int(3, i64::from(ttl));
                                }
                            }
                            "VERSIONS" => {
                                if let Ok(n) = v.parse::<i32>() {
                                    column.int(4, i64::from(n));
                                }
                            }
                            "COMPRESSION" => column.string(5, v),
                            _ => {}
                        }
                    }
                    schema.message(3, column);
                }
                schema.finish()
            }
            Format::Json => {
                let mut object = Map::new();
                object.insert("name".into(), json!(self.name));
                for (k, v) in &self.options {
                    object.insert(k.clone(), json!(v));
                }
                let columns: Vec<Value> = self
                    .columns
                    .iter()
                    .map(|c| {
                        let mut column = Map::new();
                        column.insert("name".into(), json!(c.name));
                        for (k, v) in &c.options {
                            column.insert(k.clone(), json!(v));
                        }
                        Value::Object(column)
                    })
                    .collect();
                object.insert("ColumnSchema".into(), Value::Array(columns));
                Value::Object(object).to_string().into_bytes()
            }
            Format::Xml => {
                let mut out = String::from(DECLARATION);
                out.push_str(&format!(r#"<TableSchema name="{}""#, escape(&self.name)));
                for (k, v) in &self.options {
                    out.push_str(&format!(r#" {k}="{}""#, escape(v)));
                }
                out.push('>');
                for c in &self.columns {
                    out.push_str(&format!(r#"<ColumnSchema name="{}""#, escape(&c.name)));
                    for (k, v) in &c.options {
                        out.push_str(&format!(r#" {k}="{}""#, escape(v)));
                    }
                    out.push_str("/>");
                }
                out.push_str("</TableSchema>");
                out.into_bytes()
            }
            _ => {
                let pairs = |name: &str, options: &[(String, String)]| {
                    let mut parts = vec![format!("NAME => '{name}'")];
                    parts.extend(options.iter().map(|(k, v)| format!("{k} => '{v}'")));
                    parts.join(", ")
                };
                let columns: Vec<String> = self
                    .columns
                    .iter()
                    .map(|c| format!("{{ {} }}", pairs(&c.name, &c.options)))
                    .collect();
                format!(
                    "{{ {}, COLUMNS => [ {} ] }}\n",
                    pairs(&self.name, &self.options),
                    columns.join(", ")
                )
                .into_bytes()
            }
        }
    }

    /// Reads a schema written as XML or JSON. The table's name in the body
    /// is not needed (the URL names the table).
    pub fn decode(format: Format, body: &[u8]) -> Read<TableSchema> {
        match format {
            Format::Json => {
                let json: SchemaJson = parse_json(body, "TableSchema")?;
                let mut schema = TableSchema::default();
                for (k, v) in json.fields {
                    if k == "name" {
                        schema.name = v;
                    } else {
                        schema.options.push((k, v));
                    }
                }
                for (i, column) in json.columns.into_iter().enumerate() {
                    let mut family = ColumnSchema::default();
                    for (k, v) in column.0 {
                        if k == "name" {
                            family.name = v;
                        } else {
                            family.options.push((k, v));
                        }
                    }
                    if family.name.is_empty() {
                        return Err(bad(format!("ColumnSchema {i} has no name")));
                    }
                    schema.columns.push(family);
                }
                Ok(schema)
            }
            Format::Xml => {
                let root = parse_xml(body, "TableSchema")?;
                let split = |element: &Element| {
                    let mut name = String::new();
                    let mut options = Vec::new();
                    for (k, v) in &element.attributes {
                        if k == "name" {
                            name = v.clone();
                        } else {
                            options.push((k.clone(), v.clone()));
                        }
                    }
                    (name, options)
                };
                let (name, options) = split(&root);
                let columns = root
                    .children_named("ColumnSchema")
                    .map(|c| {
                        let (name, options) = split(c);
                        ColumnSchema { name, options }
                    })
                    .collect();
                Ok(TableSchema {
                    name,
                    options,
                    columns,
                })
            }
            Format::Protobuf => {
                decode_schema_protobuf(body).map_err(|e| bad(format!("protobuf TableSchema: {e}")))
            }
            other => Err(bad(format!("a schema cannot be read as {}", other.mime()))),
        }
    }
}

/// HBase's `Version` (of the REST service itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionModel {
    /// The REST protocol's version.
    pub rest: String,
    /// HBase reports its JVM here; Basalt reports its runtime.
    pub jvm: String,
    /// The operating system.
    pub os: String,
    /// The server software.
    pub server: String,
    /// HBase reports its Jersey version; Basalt reports its HTTP library.
    pub jersey: String,
}

impl VersionModel {
    /// The version as XML, JSON or HBase's text line.
    pub fn encode(&self, format: Format) -> Vec<u8> {
        match format {
            Format::Protobuf => {
                // Version: restVersion = 1, jvmVersion = 2, osVersion = 3,
                // serverVersion = 4, jerseyVersion = 5.
                let mut w = Writer::new();
                w.string(1, &self.rest);
                w.string(2, &self.jvm);
                w.string(3, &self.os);
                w.string(4, &self.server);
                w.string(5, &self.jersey);
                w.finish()
            }
            Format::Json => json!({
                "REST": self.rest,
                "JVM": self.jvm,
                "OS": self.os,
                "Server": self.server,
                "Jersey": self.jersey,
            })
            .to_string()
            .into_bytes(),
            Format::Xml => format!(
                r#"{DECLARATION}<Version REST="{}" JVM="{}" OS="{}" Server="{}" Jersey="{}"/>"#,
                escape(&self.rest),
                escape(&self.jvm),
                escape(&self.os),
                escape(&self.server),
                escape(&self.jersey)
            )
            .into_bytes(),
            _ => format!(
                "rest {} [JVM: {}] [OS: {}] [Server: {}] [Jersey: {}]\n",
                self.rest, self.jvm, self.os, self.server, self.jersey
            )
            .into_bytes(),
        }
    }
}

/// HBase's `ClusterVersion`: the version of HBase the cluster speaks.
pub fn encode_cluster_version(version: &str, format: Format) -> Vec<u8> {
    match format {
        Format::Json => json!({ "Version": version }).to_string().into_bytes(),
        Format::Xml => format!(
            r#"{DECLARATION}<ClusterVersion Version="{}"/>"#,
            escape(version)
        )
        .into_bytes(),
        _ => format!("{version}\n").into_bytes(),
    }
}

/// One region in HBase's `TableInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionModel {
    /// The region id.
    pub id: u64,
    /// First row (inclusive).
    pub start_key: Bytes,
    /// End row (exclusive; empty is the end of the table).
    pub end_key: Bytes,
    /// `host:port` of the server hosting it.
    pub location: String,
    /// HBase's region name.
    pub name: Bytes,
}

/// HBase's `TableInfo`: a table's regions.
pub fn encode_table_info(table: &str, regions: &[RegionModel], format: Format) -> Vec<u8> {
    match format {
        Format::Protobuf => {
            // TableInfo: name = 1, regions = 2; Region: name = 1,
            // startKey = 2, endKey = 3, id = 4, location = 5.
            let mut info = Writer::new();
            info.string(1, table);
            for r in regions {
                let mut region = Writer::new();
                region.string(1, &String::from_utf8_lossy(&r.name));
                region.bytes(2, &r.start_key);
                region.bytes(3, &r.end_key);
                region.int(4, i64::try_from(r.id).unwrap_or(i64::MAX));
                region.string(5, &r.location);
                info.message(2, region);
            }
            info.finish()
        }
        Format::Json => {
            let regions: Vec<Value> = regions
                .iter()
                .map(|r| {
                    json!({
                        "id": r.id,
                        "startKey": b64(&r.start_key),
                        "endKey": b64(&r.end_key),
                        "location": r.location,
                        "name": String::from_utf8_lossy(&r.name),
                    })
                })
                .collect();
            json!({ "name": table, "Region": regions })
                .to_string()
                .into_bytes()
        }
        Format::Xml => {
            let mut out = String::from(DECLARATION);
            out.push_str(&format!(r#"<TableInfo name="{}">"#, escape(table)));
            for r in regions {
                out.push_str(&format!(
                    r#"<Region id="{}" startKey="{}" endKey="{}" location="{}" name="{}"/>"#,
                    r.id,
                    b64(&r.start_key),
                    b64(&r.end_key),
                    escape(&r.location),
                    escape(&String::from_utf8_lossy(&r.name))
                ));
            }
            out.push_str("</TableInfo>");
            out.into_bytes()
        }
        _ => {
            let mut out = String::new();
            for r in regions {
                out.push_str(&format!(
                    "{} [{}, {}) id={} location={}\n",
                    String::from_utf8_lossy(&r.name),
                    b64(&r.start_key),
                    b64(&r.end_key),
                    r.id,
                    r.location
                ));
            }
            out.into_bytes()
        }
    }
}

/// HBase's `Scanner`: what a new scanner reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannerModel {
    /// First row (inclusive); empty is the start of the table.
    pub start_row: Bytes,
    /// End row (exclusive); empty is the end of the table.
    pub end_row: Bytes,
    /// Columns (`family` or `family:qualifier`); none is every column.
    pub columns: Vec<Bytes>,
    /// Most cells in one answer; absent is as many as the server allows.
    pub batch: Option<u64>,
    /// Oldest timestamp read (inclusive).
    pub start_time: i64,
    /// Newest timestamp read (exclusive).
    pub end_time: i64,
    /// Versions per column; absent is all (HBase's default for scanners).
    pub max_versions: Option<u32>,
    /// HBase's JSON filter description, if any.
    pub filter: Option<String>,
    /// Rows to read in all; absent is no limit.
    pub limit: Option<u64>,
}

impl Default for ScannerModel {
    fn default() -> Self {
        ScannerModel {
            start_row: Bytes::new(),
            end_row: Bytes::new(),
            columns: Vec::new(),
            batch: None,
            start_time: 0,
            end_time: i64::MAX,
            max_versions: None,
            filter: None,
            limit: None,
        }
    }
}

impl ScannerModel {
    /// Reads a scanner description written as XML or JSON.
    pub fn decode(format: Format, body: &[u8]) -> Read<ScannerModel> {
        let mut model = ScannerModel::default();
        match format {
            Format::Json => {
                let json: ScannerJson = parse_json(body, "Scanner")?;
                for (k, v) in &json.fields {
                    model.set(k, v)?;
                }
                for (i, c) in json.columns.iter().enumerate() {
                    model
                        .columns
                        .push(unb64(c, &format!("Scanner column {i}"))?);
                }
            }
            Format::Xml => {
                let root = parse_xml(body, "Scanner")?;
                for (k, v) in &root.attributes {
                    model.set(k, v)?;
                }
                for (i, c) in root.children_named("column").enumerate() {
                    model
                        .columns
                        .push(unb64(&c.text, &format!("Scanner column {i}"))?);
                }
                let filter = root.children_named("filter").next();
                model.filter = filter.map(|f| f.text.clone());
            }
            Format::Protobuf => {
                decode_scanner_protobuf(body, &mut model)
                    .map_err(|e| bad(format!("protobuf Scanner: {e}")))?;
            }
            other => return Err(bad(format!("a scanner cannot be read as {}", other.mime()))),
        }
        Ok(model)
    }

    /// Sets one field from its text. Fields Basalt has no use for
    /// (`caching`, `cacheBlocks`, `labels`) are accepted and ignored, as
    /// they change nothing in what a scanner returns.
    fn set(&mut self, field: &str, text: &str) -> Read<()> {
        let what = format!("Scanner {field}");
        match field {
            "startRow" => self.start_row = unb64(text, &what)?,
            "endRow" => self.end_row = unb64(text, &what)?,
            "batch" => self.batch = Some(parse_positive(text, &what)?),
            "startTime" => self.start_time = parse_i64(text, &what)?,
            "endTime" => self.end_time = parse_i64(text, &what)?,
            "maxVersions" => {
                let n = parse_positive(text, &what)?;
                self.max_versions = Some(u32::try_from(n).unwrap_or(u32::MAX));
            }
            "filter" => self.filter = Some(text.to_string()),
            "limit" => self.limit = Some(parse_positive(text, &what)?),
            "caching" | "cacheBlocks" | "labels" | "includeStartRow" | "includeStopRow" => {}
            other => return Err(bad(format!("unknown Scanner field {other:?}"))),
        }
        Ok(())
    }
}

fn parse_xml(body: &[u8], root: &str) -> Read<Element> {
    let element = xml::parse(body).map_err(BadBody)?;
    if element.name != root {
        return Err(bad(format!(
            "expected a <{root}> document, found <{}>",
            element.name
        )));
    }
    Ok(element)
}

/// A JSON document may hold one structural character (`{`, `[`, `,`,
/// `:`) outside strings per this many of its bytes (plus
/// [`FREE_JSON_NODES`]). The smallest cell the models take,
/// `{"column":"..","$":".."}`, has one per seven; `[0,0,0,...]` has one
/// per two and would cost thirty times its size as a value tree.
pub const BYTES_PER_JSON_NODE: usize = 4;

/// Structural characters every JSON document may hold whatever its size.
pub const FREE_JSON_NODES: usize = 64;

pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8], what: &str) -> Read<T> {
    // Counted before parsing, so a dense document is refused before its
    // tree is built.
    let mut nodes = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in body {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' | b'[' | b',' | b':' => nodes += 1,
                _ => {}
            }
        }
    }
    if nodes > body.len() / BYTES_PER_JSON_NODE + FREE_JSON_NODES {
        return Err(bad(format!(
            "JSON denser than one element per {BYTES_PER_JSON_NODE} bytes"
        )));
    }
    serde_json::from_slice(body).map_err(|e| bad(format!("malformed JSON {what}: {e}")))
}

fn parse_i64(text: &str, what: &str) -> Read<i64> {
    text.trim()
        .parse()
        .map_err(|_| bad(format!("{what} is not an integer: {text:?}")))
}

fn parse_positive(text: &str, what: &str) -> Read<u64> {
    match text.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(bad(format!("{what} is not a positive integer: {text:?}"))),
    }
}

/// A message of one repeated string field.
pub(crate) fn strings_message(field: u32, values: &[String]) -> Vec<u8> {
    let mut w = Writer::new();
    for v in values {
        w.string(field, v);
    }
    w.finish()
}

/// A schema attribute: name = 1, value = 2.
fn attribute(name: &str, value: &str) -> Writer {
    let mut a = Writer::new();
    a.string(1, name);
    a.string(2, value);
    a
}

fn decode_cell_set_protobuf(body: &[u8]) -> crate::protobuf::Read<CellSet> {
    // As for JSON: a row or cell per BYTES_PER_JSON_NODE bytes at most (a
    // cell holding a value takes four), counted before anything is built,
    // so two-byte empty cells cannot make the models cost forty times the
    // body.
    let mut nodes = 0usize;
    let mut set = Reader::new(body);
    while let Some((field, value)) = set.next_field()? {
        if field == 1 {
            nodes += 1;
            let mut row = Reader::new(value.bytes("Row")?);
            while let Some((field, _)) = row.next_field()? {
                nodes += usize::from(field == 2);
            }
        }
    }
    if nodes > body.len() / BYTES_PER_JSON_NODE + FREE_JSON_NODES {
        return Err(format!(
            "denser than one row or cell per {BYTES_PER_JSON_NODE} bytes"
        ));
    }
    let mut rows = Vec::new();
    let mut set = Reader::new(body);
    while let Some((field, value)) = set.next_field()? {
        if field != 1 {
            continue;
        }
        let mut row = RowModel {
            key: None,
            cells: Vec::new(),
        };
        let mut r = Reader::new(value.bytes("Row")?);
        while let Some((field, value)) = r.next_field()? {
            match field {
                1 => row.key = Some(Bytes::copy_from_slice(value.bytes("Row key")?)),
                2 => {
                    let mut cell = CellModel {
                        column: None,
                        timestamp: None,
                        value: Bytes::new(),
                    };
                    let mut c = Reader::new(value.bytes("Cell")?);
                    while let Some((field, value)) = c.next_field()? {
                        match field {
                            2 => cell.column = Some(Bytes::copy_from_slice(value.bytes("column")?)),
                            3 => cell.timestamp = Some(value.int("timestamp")?),
                            4 => cell.value = Bytes::copy_from_slice(value.bytes("data")?),
                            _ => {}
                        }
                    }
                    row.cells.push(cell);
                }
                _ => {}
            }
        }
        rows.push(row);
    }
    Ok(CellSet { rows })
}

fn decode_attribute(bytes: &[u8]) -> crate::protobuf::Read<(String, String)> {
    let (mut name, mut value) = (String::new(), String::new());
    let mut a = Reader::new(bytes);
    while let Some((field, v)) = a.next_field()? {
        match field {
            1 => name = v.string("attribute name")?,
            2 => value = v.string("attribute value")?,
            _ => {}
        }
    }
    Ok((name, value))
}

fn decode_schema_protobuf(body: &[u8]) -> crate::protobuf::Read<TableSchema> {
    let mut schema = TableSchema::default();
    let mut r = Reader::new(body);
    while let Some((field, value)) = r.next_field()? {
        match field {
            1 => schema.name = value.string("name")?,
            2 => schema
                .options
                .push(decode_attribute(value.bytes("attrs")?)?),
            3 => {
                let mut column = ColumnSchema::default();
                let mut c = Reader::new(value.bytes("ColumnSchema")?);
                while let Some((field, value)) = c.next_field()? {
                    let mut set = |k: &str, v: String| {
                        if !column.options.iter().any(|(name, _)| name == k) {
                            column.options.push((k.to_string(), v));
                        }
                    };
                    match field {
                        1 => column.name = value.string("ColumnSchema name")?,
                        2 => {
                            let (k, v) = decode_attribute(value.bytes("ColumnSchema attrs")?)?;
                            column.options.retain(|(name, _)| *name != k);
                            column.options.push((k, v));
                        }
                        3 => set("TTL", value.int32("ttl")?.to_string()),
                        4 => set("VERSIONS", value.int32("maxVersions")?.to_string()),
                        5 => set("COMPRESSION", value.string("compression")?),
                        _ => {}
                    }
                }
                if column.name.is_empty() {
                    return Err(format!("ColumnSchema {} has no name", schema.columns.len()));
                }
                schema.columns.push(column);
            }
            // inMemory (4) is a family option in Basalt; readOnly (5) is
            // refused when set, like the READONLY attribute.
            5 if value.boolean("readOnly")? => {
                schema.options.push(("READONLY".into(), "true".into()));
            }
            _ => {}
        }
    }
    Ok(schema)
}

fn decode_scanner_protobuf(body: &[u8], model: &mut ScannerModel) -> crate::protobuf::Read<()> {
    let positive = |v: i64, what: &str| -> crate::protobuf::Read<u64> {
        u64::try_from(v)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("{what} is not a positive integer: {v}"))
    };
    let mut r = Reader::new(body);
    while let Some((field, value)) = r.next_field()? {
        match field {
            1 => model.start_row = Bytes::copy_from_slice(value.bytes("startRow")?),
            2 => model.end_row = Bytes::copy_from_slice(value.bytes("endRow")?),
            3 => model
                .columns
                .push(Bytes::copy_from_slice(value.bytes("columns")?)),
            4 => model.batch = Some(positive(i64::from(value.int32("batch")?), "batch")?),
            5 => model.start_time = value.int("startTime")?,
            6 => model.end_time = value.int("endTime")?,
            7 => {
                let n = positive(i64::from(value.int32("maxVersions")?), "maxVersions")?;
                model.max_versions = Some(u32::try_from(n).unwrap_or(u32::MAX));
            }
            8 => model.filter = Some(value.string("filter")?),
            12 => model.limit = Some(positive(i64::from(value.int32("limit")?), "limit")?),
            // caching (9), labels (10), cacheBlocks (11) change nothing in
            // what a scanner returns.
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CellSet {
        CellSet {
            rows: vec![RowModel {
                key: Some(Bytes::from_static(b"row\x00<1>")),
                cells: vec![CellModel {
                    column: Some(Bytes::from_static(b"cf:q")),
                    timestamp: Some(7),
                    value: Bytes::from_static(b"\xffvalue&"),
                }],
            }],
        }
    }

    #[test]
    fn a_cell_set_reads_back_what_was_written_in_xml_and_json() {
        for format in [Format::Xml, Format::Json] {
            let body = sample().encode(format);
            assert_eq!(CellSet::decode(format, &body), Ok(sample()), "{format:?}");
        }
    }

    #[test]
    fn cell_set_xml_uses_hbase_names_and_base64() {
        let body = String::from_utf8(sample().encode(Format::Xml)).unwrap_or_default();
        assert!(body.contains(r#"<CellSet><Row key="cm93ADwxPg=="><Cell column="Y2Y6cQ==" timestamp="7">/3ZhbHVlJg==</Cell></Row></CellSet>"#), "{body}");
    }

    #[test]
    fn json_accepts_a_single_row_object_in_place_of_a_list() {
        let body = br#"{"Row":{"key":"cg==","Cell":{"column":"Y2Y6cQ==","$":"dg=="}}}"#;
        let set = CellSet::decode(Format::Json, body).unwrap_or_default();
        assert_eq!(set.rows.len(), 1);
        assert_eq!(set.rows[0].cells[0].value, Bytes::from_static(b"v"));
        assert_eq!(set.rows[0].cells[0].timestamp, None);
    }

    #[test]
    fn bad_base64_names_the_field_that_held_it() {
        let body = br#"<CellSet><Row key="!!"><Cell column="Y2Y6cQ==">dg==</Cell></Row></CellSet>"#;
        let err = CellSet::decode(Format::Xml, body).err().map(|e| e.0);
        assert!(
            err.as_deref()
                .is_some_and(|e| e.starts_with("Row 0 key is not base64")),
            "{err:?}"
        );
    }

    #[test]
    fn a_schema_reads_its_families_and_options_from_xml_and_json() {
        let xml = br#"<TableSchema name="t"><ColumnSchema name="cf" VERSIONS="3"/></TableSchema>"#;
        let json = br#"{"name":"t","ColumnSchema":[{"name":"cf","VERSIONS":3}]}"#;
        for (format, body) in [(Format::Xml, &xml[..]), (Format::Json, &json[..])] {
            let schema = TableSchema::decode(format, body).unwrap_or_default();
            assert_eq!(schema.name, "t");
            assert_eq!(
                schema.columns,
                vec![ColumnSchema {
                    name: "cf".into(),
                    options: vec![("VERSIONS".into(), "3".into())]
                }]
            );
        }
    }

    #[test]
    fn a_scanner_reads_rows_columns_and_batch() {
        let xml =
            br#"<Scanner startRow="YQ==" endRow="Yw==" batch="5"><column>Y2Y=</column></Scanner>"#;
        let json = br#"{"startRow":"YQ==","endRow":"Yw==","batch":5,"column":["Y2Y="]}"#;
        for (format, body) in [(Format::Xml, &xml[..]), (Format::Json, &json[..])] {
            let model = ScannerModel::decode(format, body).unwrap_or_default();
            assert_eq!(model.start_row, Bytes::from_static(b"a"));
            assert_eq!(model.end_row, Bytes::from_static(b"c"));
            assert_eq!(model.batch, Some(5));
            assert_eq!(model.columns, vec![Bytes::from_static(b"cf")]);
        }
    }

    #[test]
    fn a_scanner_refuses_a_zero_batch() {
        let err = ScannerModel::decode(Format::Json, br#"{"batch":0}"#).err();
        assert!(err.is_some_and(|e| e.0.contains("Scanner batch")));
    }
}
