//! HBase REST's resources on the embedded API: one function per resource
//! and method, each a thin translation between the URL and body and a
//! `Database` or `Table` call.
//!
//! These run on the blocking pool (engine calls wait for the disk); they
//! see a request already read whole and answer a [`Reply`].

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;

use basalt::admin::FamilyInfo;
use basalt::column::Column;
use basalt::gateways::scanners::Owner;
use basalt::{
    ColumnFamilyDescriptor, Database, Error, ErrorKind, FamilyChange, Get, Mutation, Put, Scan,
    TableDescriptor, TimeRange,
};

use crate::media::{negotiate, Format};
use crate::model::{
    encode_cluster_version, encode_table_info, encode_table_list, CellSet, ColumnSchema,
    RegionModel, RowModel, ScannerModel, TableSchema, VersionModel,
};
use crate::path::{parse_query, percent_decode, RowSpec, Rows, Stamps};
use crate::scanners::{cell_model, ScanState, Scanners};

/// The version of HBase whose REST protocol and semantics the gateway
/// follows, reported by `/version/cluster` (HBase clients check it is a
/// 2.x).
pub const CLUSTER_VERSION: &str = "2.5.0";

/// The REST protocol version HBase's `/version` reports.
pub const REST_VERSION: &str = "0.0.3";

/// HBase column family options that mean nothing in Basalt (replication,
/// HDFS and MOB settings, cache-on-write hints): accepted in a schema and
/// not kept. Any other unknown option is refused.
pub const IGNORED_FAMILY_OPTIONS: &[&str] = &[
    "REPLICATION_SCOPE",
    "CACHE_DATA_ON_WRITE",
    "CACHE_DATA_IN_L1",
    "CACHE_INDEX_ON_WRITE",
    "CACHE_BLOOMS_ON_WRITE",
    "EVICT_BLOCKS_ON_CLOSE",
    "PREFETCH_BLOCKS_ON_OPEN",
    "COMPRESS_TAGS",
    "ENCODE_ON_DISK",
    "IS_MOB",
    "MOB_THRESHOLD",
    "MOB_COMPACT_PARTITION_POLICY",
    "DFS_REPLICATION",
    "STORAGE_POLICY",
    "MIN_VERSIONS_TTL",
];

/// The request as the resources see it: method, raw path and query, the
/// headers they read, and the whole body.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `PUT`, `POST`, `DELETE`, ...
    pub method: String,
    /// The path, still percent-encoded.
    pub path: String,
    /// The query string, still encoded.
    pub query: Option<String>,
    /// `Accept`.
    pub accept: Option<String>,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `Host`, for the scanner URLs handed back.
    pub host: Option<String>,
    /// `X-Row`, `X-Column`, `X-Timestamp`: a binary put's coordinates.
    pub x_row: Option<Vec<u8>>,
    /// See `x_row`.
    pub x_column: Option<Vec<u8>>,
    /// See `x_row`.
    pub x_timestamp: Option<String>,
    /// The body.
    pub body: Bytes,
}

/// The answer: status, body and the headers that go with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Type` of the body, when there is one.
    pub content_type: Option<&'static str>,
    /// Further headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    pub(crate) fn ok(format: Format, body: Vec<u8>) -> Reply {
        Reply {
            status: 200,
            content_type: Some(format.mime()),
            headers: vec![("Cache-Control", "no-cache".into())],
            body,
        }
    }

    pub(crate) fn empty(status: u16) -> Reply {
        Reply {
            status,
            content_type: None,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// HBase's plain-text answers: a word for the status, then the detail.
    pub fn text(status: u16, word: &str, detail: Option<&str>) -> Reply {
        let body = match detail {
            Some(detail) => format!("{word}\r\n{detail}\r\n"),
            None => format!("{word}\r\n"),
        };
        Reply {
            status,
            content_type: Some(Format::Text.mime()),
            headers: Vec::new(),
            body: body.into_bytes(),
        }
    }

    /// 400 with what was wrong.
    pub fn bad_request(detail: &str) -> Reply {
        Reply::text(400, "Bad request", Some(detail))
    }

    pub(crate) fn not_found() -> Reply {
        Reply::text(404, "Not found", None)
    }

    pub(crate) fn not_acceptable(produces: &[Format]) -> Reply {
        let offered: Vec<&str> = produces.iter().map(|f| f.mime()).collect();
        Reply::text(
            406,
            "Not acceptable",
            Some(&format!(
                "this resource is available as {}",
                offered.join(", ")
            )),
        )
    }

    fn unsupported(consumes: &[Format]) -> Reply {
        let accepted: Vec<&str> = consumes.iter().map(|f| f.mime()).collect();
        Reply::text(
            415,
            "Unsupported media type",
            Some(&format!("send the body as {}", accepted.join(", "))),
        )
    }

    pub(crate) fn method_not_allowed(allowed: &str) -> Reply {
        let mut reply = Reply::text(405, "Method not allowed", None);
        reply.headers.push(("Allow", allowed.to_string()));
        reply
    }

    /// An engine error, classified through the one error-kind table: what
    /// the client named does not exist (404), the request was malformed
    /// (400), or the server cannot serve it now (503), as HBase's REST
    /// server answers them; the detail is `<Java class>: <message>`.
    pub fn error(e: &Error) -> Reply {
        let (status, word) = match e.kind() {
            ErrorKind::TableNotFound | ErrorKind::NoSuchFamily | ErrorKind::NamespaceNotFound => {
                (404, "Not found")
            }
            // HBase's REST server forbids creating what exists and dropping
            // a namespace that still holds tables.
            ErrorKind::NamespaceExists | ErrorKind::Constraint => (403, "Forbidden"),
            ErrorKind::InvalidArgument | ErrorKind::FilterSyntax | ErrorKind::NotALong => {
                (400, "Bad request")
            }
            // HBase's REST server answers an AccessDeniedException 403
            // (`ResourceBase.processException`).
            ErrorKind::AccessDenied => (403, "Forbidden"),
            _ => (503, "Unavailable"),
        };
        Reply::text(
            status,
            word,
            Some(&format!("{}: {e}", e.kind().java_class())),
        )
    }
}

/// Everything the resources share.
#[derive(Debug)]
pub(crate) struct Context {
    pub db: Database,
    pub scanners: Arc<Scanners>,
    /// Most cells in one answer.
    pub max_response_cells: usize,
    /// Most bytes of cells in one answer.
    pub max_answer_bytes: usize,
    /// Refuse every change (HBase's `hbase.rest.readonly`).
    pub read_only: bool,
    /// `host:port` reported as every region's location.
    pub location: String,
    /// The user Kerberos authenticated (after `doAs`), when it is on: a
    /// scanner answers only the user who opened it.
    pub user: Option<String>,
}

impl Context {
    /// This context for one request of `user`, through `db` (the server's
    /// database acting as that user).
    pub(crate) fn for_user(&self, db: Database, user: String) -> Context {
        Context {
            db,
            scanners: Arc::clone(&self.scanners),
            max_response_cells: self.max_response_cells,
            max_answer_bytes: self.max_answer_bytes,
            read_only: self.read_only,
            location: self.location.clone(),
            user: Some(user),
        }
    }
}

pub(crate) const CELL_FORMATS: &[Format] =
    &[Format::Xml, Format::Json, Format::Protobuf, Format::Binary];
pub(crate) const MODEL_FORMATS: &[Format] = &[Format::Xml, Format::Json, Format::Protobuf];
pub(crate) const TEXT_FIRST: &[Format] =
    &[Format::Text, Format::Xml, Format::Json, Format::Protobuf];

/// Answers one request.
pub(crate) fn handle(ctx: &Context, request: &Request) -> Reply {
    let trimmed = request.path.trim_matches('/');
    let segments: Vec<&str> = if trimmed.is_empty() {
        Vec::new()
    } else {
        trimmed.split('/').collect()
    };
    let method = request.method.as_str();
    if ctx.read_only && !matches!(method, "GET" | "HEAD") {
        // Reading a scanner is a GET; creating one is not a change but
        // HBase's read-only mode forbids it too.
        return Reply::text(403, "Forbidden", Some("this gateway is read-only"));
    }
    match segments.as_slice() {
        [] => only_get(method, || table_list(ctx, request)),
        ["version"] | ["version", "rest"] => only_get(method, || version(request)),
        ["version", "cluster"] => only_get(method, || cluster_version(request)),
        ["status", "cluster"] => only_get(method, || crate::cluster::status(ctx, request)),
        ["namespaces", rest @ ..] => crate::cluster::namespaces(ctx, request, rest),
        [table, rest @ ..] => {
            let table = match percent_decode(table, false) {
                Ok(name) => String::from_utf8_lossy(&name).into_owned(),
                Err(e) => return Reply::bad_request(&e),
            };
            match rest {
                [] => Reply::not_found(),
                ["schema"] => schema(ctx, request, &table),
                ["regions"] => only_get(method, || regions(ctx, request, &table)),
                ["scanner"] => match method {
                    "PUT" | "POST" => create_scanner(ctx, request, &table),
                    _ => Reply::method_not_allowed("PUT, POST"),
                },
                ["scanner", id] => match method {
                    "GET" => read_scanner(ctx, request, &table, id),
                    "DELETE" => {
                        // Another user's scanner is left alone, and the
                        // answer does not tell it exists.
                        let theirs = ctx
                            .scanners
                            .get(*id, Owner::Anyone)
                            .is_some_and(|s| !s.lock().opened_by(ctx.user.as_deref()));
                        if !theirs {
                            ctx.scanners.close(*id, Owner::Anyone);
                        }
                        Reply::empty(200)
                    }
                    _ => Reply::method_not_allowed("GET, DELETE"),
                },
                ["multiget"] => only_get(method, || multiget(ctx, request, &table)),
                spec => row(ctx, request, &table, spec),
            }
        }
    }
}

fn only_get(method: &str, answer: impl FnOnce() -> Reply) -> Reply {
    match method {
        "GET" => answer(),
        _ => Reply::method_not_allowed("GET"),
    }
}

/// `GET /`: the tables.
fn table_list(ctx: &Context, request: &Request) -> Reply {
    let Some(format) = negotiate(request.accept.as_deref(), TEXT_FIRST) else {
        return Reply::not_acceptable(TEXT_FIRST);
    };
    Reply::ok(format, encode_table_list(&ctx.db.list_tables(), format))
}

/// `GET /version`.
fn version(request: &Request) -> Reply {
    let Some(format) = negotiate(request.accept.as_deref(), TEXT_FIRST) else {
        return Reply::not_acceptable(TEXT_FIRST);
    };
    let model = VersionModel {
        rest: REST_VERSION.into(),
        jvm: "none (Rust)".into(),
        os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        server: format!("basalt/{}", env!("CARGO_PKG_VERSION")),
        jersey: "none (hyper 1)".into(),
    };
    Reply::ok(format, model.encode(format))
}

/// `GET /version/cluster`: HBase has no protobuf form of it.
fn cluster_version(request: &Request) -> Reply {
    const FORMATS: &[Format] = &[Format::Text, Format::Xml, Format::Json];
    let Some(format) = negotiate(request.accept.as_deref(), FORMATS) else {
        return Reply::not_acceptable(FORMATS);
    };
    Reply::ok(format, encode_cluster_version(CLUSTER_VERSION, format))
}

/// `/<table>/schema`: read (GET), create or replace (PUT), create or
/// update (POST), drop (DELETE).
fn schema(ctx: &Context, request: &Request, table: &str) -> Reply {
    match request.method.as_str() {
        "GET" => {
            let Some(format) = negotiate(request.accept.as_deref(), TEXT_FIRST) else {
                return Reply::not_acceptable(TEXT_FIRST);
            };
            match ctx.db.describe_table(table) {
                Ok(info) => Reply::ok(format, schema_model(&info.descriptor).encode(format)),
                Err(e) => Reply::error(&e),
            }
        }
        method @ ("PUT" | "POST") => {
            let model = match read_body(request, MODEL_FORMATS, TableSchema::decode) {
                Ok(model) => model,
                Err(reply) => return reply,
            };
            let families = match model
                .columns
                .iter()
                .map(family_descriptor)
                .collect::<basalt::Result<Vec<_>>>()
                .and_then(|f| check_table_options(&model).map(|()| f))
            {
                Ok(families) => families,
                Err(e) => return Reply::error(&e),
            };
            update_schema(ctx, table, families, method == "PUT")
        }
        "DELETE" => {
            // Dropping needs a disabled table; one already disabled is fine.
            match ctx.db.disable_table(table) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::TableDisabled => {}
                Err(e) => return Reply::error(&e),
            }
            match ctx.db.drop_table(table) {
                Ok(()) => Reply::empty(200),
                Err(e) => Reply::error(&e),
            }
        }
        _ => Reply::method_not_allowed("GET, PUT, POST, DELETE"),
    }
}

/// Creates the table, or changes it: `replace` (PUT) makes its families
/// exactly the listed ones (dropping the others, as HBase's PUT does);
/// otherwise (POST) listed families are added or changed and the others
/// kept. 201 for a new table, 200 (POST) or 201 (PUT) for a changed one.
fn update_schema(
    ctx: &Context,
    table: &str,
    families: Vec<ColumnFamilyDescriptor>,
    replace: bool,
) -> Reply {
    let existing = match ctx.db.describe_table(table) {
        Ok(info) => Some(info.descriptor),
        Err(e) if e.kind() == ErrorKind::TableNotFound => None,
        Err(e) => return Reply::error(&e),
    };
    let Some(existing) = existing else {
        let mut descriptor = TableDescriptor::new(table);
        for family in families {
            descriptor = descriptor.family(family);
        }
        return match ctx.db.create_table(descriptor) {
            Ok(()) => created(table),
            // Someone created it between the look and the create.
            Err(e) if e.kind() == ErrorKind::TableExists => Reply::text(304, "Not modified", None),
            Err(e) => Reply::error(&e),
        };
    };
    let listed: BTreeSet<&str> = families.iter().map(|f| f.name()).collect();
    let mut changes: Vec<FamilyChange> = families
        .iter()
        .map(|f| match existing.get_family(f.name().as_bytes()) {
            Some(_) => FamilyChange::Modify(f.clone()),
            None => FamilyChange::Add(f.clone()),
        })
        .collect();
    if replace {
        changes.extend(
            existing
                .families()
                .iter()
                .filter(|f| !listed.contains(f.name()))
                .map(|f| FamilyChange::Delete(f.name().to_string())),
        );
    }
    match ctx.db.alter_table(table, &changes) {
        Ok(()) if replace => created(table),
        Ok(()) => Reply::empty(200),
        Err(e) => Reply::error(&e),
    }
}

/// 201 with the schema's path as its `Location`.
fn created(table: &str) -> Reply {
    let mut reply = Reply::empty(201);
    reply
        .headers
        .push(("Location", format!("/{}/schema", encode_segment(table))));
    reply
}

/// A family from its schema: known options set through the descriptor,
/// options that mean nothing in Basalt skipped, others refused.
fn family_descriptor(column: &ColumnSchema) -> basalt::Result<ColumnFamilyDescriptor> {
    if column.name.is_empty() {
        return Err(Error::invalid("a ColumnSchema has no name"));
    }
    let mut family = ColumnFamilyDescriptor::new(column.name.as_str());
    for (option, value) in &column.options {
        if IGNORED_FAMILY_OPTIONS
            .iter()
            .any(|o| o.eq_ignore_ascii_case(option))
        {
            continue;
        }
        family.set_option(option, value)?;
    }
    family.validate()?;
    Ok(family)
}

/// Table options: HBase's read-only flags are accepted (a user table is
/// never meta); Basalt has no other table options yet.
fn check_table_options(model: &TableSchema) -> basalt::Result<()> {
    for (option, value) in &model.options {
        match option.to_ascii_uppercase().as_str() {
            "IS_META" | "IS_ROOT" if value.eq_ignore_ascii_case("false") => {}
            _ => {
                return Err(Error::invalid(format!(
                    "unsupported table option {option}={value}"
                )))
            }
        }
    }
    Ok(())
}

fn schema_model(descriptor: &TableDescriptor) -> TableSchema {
    TableSchema {
        name: descriptor.name().to_string(),
        options: vec![("IS_META".into(), "false".into())],
        columns: descriptor
            .families()
            .iter()
            .map(|f| {
                let FamilyInfo { name, options } = FamilyInfo::of(f);
                ColumnSchema { name, options }
            })
            .collect(),
    }
}

/// `GET /<table>/regions`.
fn regions(ctx: &Context, request: &Request, table: &str) -> Reply {
    let Some(format) = negotiate(request.accept.as_deref(), TEXT_FIRST) else {
        return Reply::not_acceptable(TEXT_FIRST);
    };
    match ctx.db.list_regions(table) {
        Ok(regions) => {
            let regions: Vec<RegionModel> = regions
                .iter()
                .map(|r| RegionModel {
                    id: r.info.id,
                    start_key: r.info.start_key.clone(),
                    end_key: r.info.end_key.clone(),
                    location: ctx.location.clone(),
                    name: r.info.region_name(),
                })
                .collect();
            Reply::ok(format, encode_table_info(table, &regions, format))
        }
        Err(e) => Reply::error(&e),
    }
}

/// `/<table>/<row>[/<columns>[/<timestamps>]]`.
fn row(ctx: &Context, request: &Request, table: &str, segments: &[&str]) -> Reply {
    let spec = match RowSpec::parse(segments) {
        Ok(spec) => spec,
        Err(e) => return Reply::bad_request(&e),
    };
    let query = match parse_query(request.query.as_deref()) {
        Ok(query) => query,
        Err(e) => return Reply::bad_request(&e),
    };
    match request.method.as_str() {
        "GET" => read_rows(ctx, request, table, &spec, &query),
        "PUT" | "POST" | "DELETE" if query.iter().any(|(k, _)| k == "check") => {
            check_and_mutate(ctx, request, table, &spec, &query)
        }
        "PUT" | "POST" => write_cells(ctx, request, table, &spec),
        "DELETE" => delete_cells(ctx, table, &spec),
        _ => Reply::method_not_allowed("GET, PUT, POST, DELETE"),
    }
}

/// `v=<n>`: versions per column (default 1).
fn versions(query: &[(String, Vec<u8>)]) -> Result<u32, Reply> {
    match query.iter().rev().find(|(k, _)| k == "v") {
        None => Ok(1),
        Some((_, v)) => match String::from_utf8_lossy(v).parse::<u32>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(Reply::bad_request(&format!(
                "v (versions) is not a positive integer: {:?}",
                String::from_utf8_lossy(v)
            ))),
        },
    }
}

fn time_range(stamps: Stamps) -> basalt::Result<Option<TimeRange>> {
    match stamps {
        Stamps::All => Ok(None),
        // HBase reads one timestamp in a row specification as the END of
        // the time range: the newest versions written before it.
        Stamps::At(ts) => TimeRange::new(0, ts).map(Some),
        Stamps::Range(start, end) => TimeRange::new(start, end).map(Some),
    }
}

/// The scan of a multi-row specification (`<start>,<end>`, `<prefix>*`,
/// `*`) with the query parameters of HBase's stateless scan: `startrow`,
/// `endrow` (plain keys; with `reversed=true` the start is the larger
/// key), `column` (repeatable, `family` or `family:qualifier`),
/// `starttime`, `endtime`, `maxversions`, `limit` (rows), `reversed` and
/// `filter` (a FilterModel or the filter language).
fn stateless_scan(
    rows: &Rows,
    spec: &RowSpec,
    range: Option<TimeRange>,
    versions: u32,
    query: &[(String, Vec<u8>)],
) -> basalt::Result<Scan> {
    let param = |name: &str| -> Option<&Vec<u8>> {
        query.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v)
    };
    let number = |name: &str| -> basalt::Result<Option<i64>> {
        param(name)
            .map(|v| {
                String::from_utf8_lossy(v)
                    .trim()
                    .parse::<i64>()
                    .map_err(|_| {
                        Error::invalid(format!(
                            "{name} is not an integer: {:?}",
                            String::from_utf8_lossy(v)
                        ))
                    })
            })
            .transpose()
    };
    let reversed = match param("reversed").map(|v| String::from_utf8_lossy(v).to_lowercase()) {
        None => false,
        Some(v) if v == "true" => true,
        Some(v) if v == "false" => false,
        Some(v) => {
            return Err(Error::invalid(format!(
                "reversed is neither true nor false: {v:?}"
            )))
        }
    };
    let versions = match number("maxversions")? {
        Some(n) if n > 0 => u32::try_from(n).unwrap_or(u32::MAX),
        Some(n) => {
            return Err(Error::invalid(format!(
                "maxversions is not a positive integer: {n}"
            )))
        }
        None => versions,
    };
    let mut scan = Scan::new().max_versions(versions).reversed(reversed);
    scan = match rows {
        Rows::Range(start, end) => {
            let scan = scan.start_row(start.clone());
            if end.is_empty() {
                scan
            } else {
                scan.stop_row(end.clone())
            }
        }
        Rows::Prefix(prefix) if prefix.is_empty() => scan,
        Rows::Prefix(prefix) => scan.prefix(prefix.clone()),
        Rows::Single(_) => scan,
    };
    if let Some(start) = param("startrow").filter(|v| !v.is_empty()) {
        scan = scan.start_row(Bytes::from(start.clone()));
    }
    if let Some(end) = param("endrow").filter(|v| !v.is_empty()) {
        scan = scan.stop_row(Bytes::from(end.clone()));
    }
    for column in &spec.columns {
        scan = Column::parse(column).select_in_scan(scan);
    }
    for (_, column) in query.iter().filter(|(k, _)| k == "column") {
        for part in column.split(|b| *b == b',').filter(|p| !p.is_empty()) {
            scan = Column::parse(part).select_in_scan(scan);
        }
    }
    let (start_time, end_time) = (number("starttime")?, number("endtime")?);
    if let Some(range) = range {
        scan = scan.time_range(range);
    } else if start_time.is_some() || end_time.is_some() {
        scan = scan.time_range(TimeRange::new(
            start_time.unwrap_or(0),
            end_time.unwrap_or(i64::MAX),
        )?);
    }
    if let Some(limit) = number("limit")? {
        let limit = usize::try_from(limit)
            .map_err(|_| Error::invalid(format!("limit is negative: {limit}")))?;
        scan = scan.limit(limit);
    }
    if let Some(filter) = param("filter") {
        let text = String::from_utf8_lossy(filter);
        scan = scan.filter(crate::filter_model::parse(&text).map_err(|e| Error::invalid(e.0))?);
    }
    Ok(scan)
}

fn read_rows(
    ctx: &Context,
    request: &Request,
    table: &str,
    spec: &RowSpec,
    query: &[(String, Vec<u8>)],
) -> Reply {
    let Some(format) = negotiate(request.accept.as_deref(), CELL_FORMATS) else {
        return Reply::not_acceptable(CELL_FORMATS);
    };
    let versions = match versions(query) {
        Ok(v) => v,
        Err(reply) => return reply,
    };
    if format == Format::Binary
        && (spec.columns.len() != 1 || !matches!(spec.rows, Rows::Single(_)))
    {
        return Reply::bad_request(
            "application/octet-stream returns one cell: name one row and exactly one column \
             (ask for text/xml or application/json to read whole rows)",
        );
    }
    let range = match time_range(spec.stamps) {
        Ok(range) => range,
        Err(e) => return Reply::error(&e),
    };
    let result = ctx.db.table(table).and_then(|t| match &spec.rows {
        Rows::Single(row) => {
            let mut get = Get::new(row.clone()).max_versions(versions);
            for column in &spec.columns {
                get = Column::parse(column).select_in_get(get);
            }
            if let Some(range) = range {
                get = get.time_range(range);
            }
            let result = t.get(&get)?;
            // One row is answered whole (as HBase does), but counted.
            answer_size(&result);
            Ok(if result.is_empty() {
                Vec::new()
            } else {
                vec![result]
            })
        }
        rows => {
            let scan = stateless_scan(rows, spec, range, versions, query)?;
            let mut rows = Vec::new();
            let mut cells = 0;
            let mut bytes = 0;
            for row in t.scan(&scan)? {
                let row = row?;
                cells += row.cells.len();
                bytes += answer_size(&row);
                if cells > ctx.max_response_cells {
                    return Err(Error::invalid(format!(
                        "the rows hold more than {} cells (max_response_cells); \
                         read them with a scanner",
                        ctx.max_response_cells
                    )));
                }
                if bytes > ctx.max_answer_bytes {
                    return Err(Error::invalid(format!(
                        "the rows hold more than {} bytes (max_answer_bytes); \
                         read them with a scanner",
                        ctx.max_answer_bytes
                    )));
                }
                rows.push(row);
            }
            Ok(rows)
        }
    });
    let rows = match result {
        Ok(rows) => rows,
        Err(e) => return Reply::error(&e),
    };
    if rows.is_empty() {
        return Reply::not_found();
    }
    if format == Format::Binary {
        let Some(cell) = rows.first().and_then(|r| r.cells.first()) else {
            return Reply::not_found();
        };
        let mut reply = Reply::ok(Format::Binary, cell.value.to_vec());
        reply
            .headers
            .push(("X-Timestamp", cell.timestamp.to_string()));
        return reply;
    }
    let set = CellSet {
        rows: rows
            .iter()
            .map(|r| RowModel {
                key: Some(r.row.clone()),
                cells: r.cells.iter().map(cell_model).collect(),
            })
            .collect(),
    };
    Reply::ok(format, set.encode(format))
}

/// Reads the body as one of `consumes`, or the reply that says why not.
pub(crate) fn read_body<T>(
    request: &Request,
    consumes: &[Format],
    decode: impl FnOnce(Format, &[u8]) -> Result<T, crate::model::BadBody>,
) -> Result<T, Reply> {
    let format = request
        .content_type
        .as_deref()
        .and_then(Format::from_mime)
        .filter(|f| consumes.contains(f))
        .ok_or_else(|| Reply::unsupported(consumes))?;
    decode(format, &request.body).map_err(|e| Reply::bad_request(&e.0))
}

/// `PUT`/`POST /<table>/<row>[/<column>[/<ts>]]`: a cell set (XML or
/// JSON) or one raw value (`application/octet-stream`).
fn write_cells(ctx: &Context, request: &Request, table: &str, spec: &RowSpec) -> Reply {
    let url_row = match &spec.rows {
        Rows::Single(row) => Some(row.clone()),
        _ => None,
    };
    let url_stamp = match spec.stamps {
        Stamps::At(ts) => Some(ts),
        Stamps::All => None,
        Stamps::Range(..) => return Reply::bad_request("a write takes one timestamp, not a range"),
    };
    let binary =
        request.content_type.as_deref().and_then(Format::from_mime) == Some(Format::Binary);
    let puts = if binary {
        match binary_put(request, spec, url_row, url_stamp) {
            Ok(put) => vec![put],
            Err(reply) => return reply,
        }
    } else {
        let set = match read_body(request, MODEL_FORMATS, CellSet::decode) {
            Ok(set) => set,
            Err(reply) => return reply,
        };
        match cell_set_puts(set, spec, url_row, url_stamp) {
            Ok(puts) => puts,
            Err(reply) => return reply,
        }
    };
    if puts.is_empty() {
        return Reply::bad_request("the cell set holds no cells");
    }
    let table = match ctx.db.table(table) {
        Ok(table) => table,
        Err(e) => return Reply::error(&e),
    };
    let mutations: Vec<Mutation> = puts.into_iter().map(Mutation::Put).collect();
    // One batch: one trip through the log for every row of the cell set.
    for outcome in table.batch(&mutations) {
        if let Err(e) = outcome {
            return Reply::error(&e);
        }
    }
    Reply::empty(200)
}

fn binary_put(
    request: &Request,
    spec: &RowSpec,
    url_row: Option<Bytes>,
    url_stamp: Option<i64>,
) -> Result<Put, Reply> {
    let row = match &request.x_row {
        Some(row) => Bytes::from(row.clone()),
        None => url_row.ok_or_else(|| Reply::bad_request("a binary put names one row"))?,
    };
    let column = match &request.x_column {
        Some(column) => Bytes::from(column.clone()),
        None => spec
            .columns
            .first()
            .cloned()
            .ok_or_else(|| Reply::bad_request("a binary put names its column in the URL"))?,
    };
    let stamp = match &request.x_timestamp {
        Some(text) => Some(text.trim().parse::<i64>().map_err(|_| {
            Reply::bad_request(&format!("X-Timestamp is not an integer: {text:?}"))
        })?),
        None => url_stamp,
    };
    let (family, qualifier) = Column::parse(&column).family_qualifier();
    let put = Put::new(row);
    Ok(match stamp {
        Some(ts) => put.add_at(family, qualifier, ts, request.body.clone()),
        None => put.add(family, qualifier, request.body.clone()),
    })
}

fn cell_set_puts(
    set: CellSet,
    spec: &RowSpec,
    url_row: Option<Bytes>,
    url_stamp: Option<i64>,
) -> Result<Vec<Put>, Reply> {
    let mut puts = Vec::with_capacity(set.rows.len());
    for (i, row) in set.rows.into_iter().enumerate() {
        let key = row.key.or_else(|| url_row.clone()).ok_or_else(|| {
            Reply::bad_request(&format!(
                "Row {i} has no key and the URL names no single row"
            ))
        })?;
        let mut put = Put::new(key);
        for (j, cell) in row.cells.into_iter().enumerate() {
            let column = cell
                .column
                .or_else(|| spec.columns.first().cloned())
                .ok_or_else(|| {
                    Reply::bad_request(&format!(
                        "Row {i} Cell {j} has no column and the URL names none"
                    ))
                })?;
            let (family, qualifier) = Column::parse(&column).family_qualifier();
            put = match cell.timestamp.or(url_stamp) {
                Some(ts) => put.add_at(family, qualifier, ts, cell.value),
                None => put.add(family, qualifier, cell.value),
            };
        }
        if !put.is_empty() {
            puts.push(put);
        }
    }
    Ok(puts)
}

/// `DELETE /<table>/<row>[/<columns>[/<ts>]]`: the row, families or
/// columns; with a timestamp, only versions at or before it.
fn delete_cells(ctx: &Context, table: &str, spec: &RowSpec) -> Reply {
    let Rows::Single(row) = &spec.rows else {
        return Reply::bad_request("a delete names one row");
    };
    let stamp = match spec.stamps {
        Stamps::All => None,
        Stamps::At(ts) => Some(ts),
        Stamps::Range(..) => {
            return Reply::bad_request("a delete takes one timestamp, not a range")
        }
    };
    let mut delete = match stamp {
        Some(ts) => basalt::Delete::with_timestamp(row.clone(), ts),
        None => basalt::Delete::new(row.clone()),
    };
    for column in &spec.columns {
        delete = match (Column::parse(column), stamp) {
            (Column::Family(f), Some(ts)) => delete.family_at(f, ts),
            (Column::Family(f), None) => delete.family(f),
            (Column::Qualified(f, q), Some(ts)) => delete.columns_at(f, q, ts),
            (Column::Qualified(f, q), None) => delete.columns(f, q),
        };
    }
    match ctx.db.table(table).and_then(|t| t.delete(&delete)) {
        Ok(()) => Reply::empty(200),
        Err(e) => Reply::error(&e),
    }
}

/// The bytes of `row`'s cells, counted in the call's answer room as the
/// answer that will carry them.
fn answer_size(row: &basalt::RowResult) -> usize {
    let bytes: usize = row.cells.iter().map(crate::scanners::cell_bytes).sum();
    basalt::guard::count_answer(basalt::guard::answer_estimate(bytes, row.cells.len()));
    bytes
}

/// `GET /<table>/multiget?row=<key>&row=<key>...[&v=<n>]`.
fn multiget(ctx: &Context, request: &Request, table: &str) -> Reply {
    let Some(format) = negotiate(request.accept.as_deref(), MODEL_FORMATS) else {
        return Reply::not_acceptable(MODEL_FORMATS);
    };
    let query = match parse_query(request.query.as_deref()) {
        Ok(query) => query,
        Err(e) => return Reply::bad_request(&e),
    };
    let versions = match versions(&query) {
        Ok(v) => v,
        Err(reply) => return reply,
    };
    let keys: Vec<&Vec<u8>> = query
        .iter()
        .filter(|(k, _)| k == "row")
        .map(|(_, v)| v)
        .collect();
    if keys.is_empty() {
        return Reply::bad_request("multiget names its rows with row=<key> parameters");
    }
    let result = ctx.db.table(table).and_then(|t| {
        let mut rows = Vec::new();
        let mut cells = 0;
        let mut bytes = 0;
        for key in keys {
            let row = t.get(&Get::new(Bytes::from(key.clone())).max_versions(versions))?;
            cells += row.cells.len();
            bytes += answer_size(&row);
            if cells > ctx.max_response_cells {
                return Err(Error::invalid(format!(
                    "the rows hold more than {} cells (max_response_cells)",
                    ctx.max_response_cells
                )));
            }
            if bytes > ctx.max_answer_bytes {
                return Err(Error::invalid(format!(
                    "the rows hold more than {} bytes (max_answer_bytes); \
                     ask for fewer rows at once",
                    ctx.max_answer_bytes
                )));
            }
            if !row.is_empty() {
                rows.push(RowModel {
                    key: Some(row.row.clone()),
                    cells: row.cells.iter().map(cell_model).collect(),
                });
            }
        }
        Ok(rows)
    });
    match result {
        Ok(rows) if rows.is_empty() => Reply::not_found(),
        Ok(rows) => Reply::ok(format, CellSet { rows }.encode(format)),
        Err(e) => Reply::error(&e),
    }
}

/// `PUT`/`POST /<table>/scanner`: opens a scanner; 201 with its URL.
fn create_scanner(ctx: &Context, request: &Request, table: &str) -> Reply {
    let model = match read_body(request, MODEL_FORMATS, ScannerModel::decode) {
        Ok(model) => model,
        Err(reply) => return reply,
    };
    let mut scan = Scan::new().max_versions(model.max_versions.unwrap_or(u32::MAX));
    if let Some(text) = model.filter.as_deref().filter(|t| !t.trim().is_empty()) {
        match crate::filter_model::parse(text) {
            Ok(filter) => scan = scan.filter(filter),
            Err(e) => return Reply::bad_request(&e.0),
        }
    }
    if !model.start_row.is_empty() {
        scan = scan.start_row(model.start_row.clone());
    }
    if !model.end_row.is_empty() {
        scan = scan.stop_row(model.end_row.clone());
    }
    for column in &model.columns {
        scan = Column::parse(column).select_in_scan(scan);
    }
    if model.start_time != 0 || model.end_time != i64::MAX {
        match TimeRange::new(model.start_time, model.end_time) {
            Ok(range) => scan = scan.time_range(range),
            Err(e) => return Reply::error(&e),
        }
    }
    if let Some(limit) = model.limit {
        scan = scan.limit(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    let scanner = match ctx.db.table(table).and_then(|t| t.scan(&scan)) {
        Ok(scanner) => scanner,
        Err(e) => return Reply::error(&e),
    };
    let batch = model
        .batch
        .map_or(ctx.max_response_cells, |b| {
            usize::try_from(b).unwrap_or(usize::MAX)
        })
        .min(ctx.max_response_cells);
    let state = ScanState::new(table, scanner, batch, ctx.user.clone());
    match ctx.scanners.open(Owner::Anyone, state) {
        Ok((id, _)) => {
            let mut reply = Reply::empty(201);
            let path = format!("/{}/scanner/{id}", encode_segment(table));
            let location = match &request.host {
                Some(host) => format!("http://{host}{path}"),
                None => path,
            };
            reply.headers.push(("Location", location));
            reply
        }
        Err(refused) => Reply::text(
            503,
            "Unavailable",
            Some(&format!(
                "{} scanners are open (max_scanners); delete finished ones",
                refused.limit()
            )),
        ),
    }
}

/// `GET /<table>/scanner/<id>[?n=<rows>&c=<cells>]`: the next cells; 204
/// when the scan is over.
fn read_scanner(ctx: &Context, request: &Request, table: &str, id: &str) -> Reply {
    let Some(format) = negotiate(request.accept.as_deref(), CELL_FORMATS) else {
        return Reply::not_acceptable(CELL_FORMATS);
    };
    let Some(scanner) = ctx.scanners.get(id, Owner::Anyone) else {
        return Reply::not_found();
    };
    let mut state = scanner.lock();
    if state.table != table || !state.opened_by(ctx.user.as_deref()) {
        return Reply::not_found();
    }
    let query = match parse_query(request.query.as_deref()) {
        Ok(query) => query,
        Err(e) => return Reply::bad_request(&e),
    };
    let number = |name: &str| -> Result<Option<usize>, Reply> {
        match query.iter().rev().find(|(k, _)| k == name) {
            None => Ok(None),
            Some((_, v)) => match String::from_utf8_lossy(v).parse::<usize>() {
                Ok(0) => Ok(None),
                Ok(n) => Ok(Some(n)),
                Err(_) => Err(Reply::bad_request(&format!(
                    "{name} is not a number: {:?}",
                    String::from_utf8_lossy(v)
                ))),
            },
        }
    };
    let (max_rows, max_cells) = match (number("n"), number("c")) {
        (Ok(rows), Ok(cells)) => (rows, cells),
        (Err(reply), _) | (_, Err(reply)) => return reply,
    };
    if format == Format::Binary {
        return match state.next_cell() {
            Ok(None) => Reply::empty(204),
            Ok(Some(cell)) => {
                let model = cell_model(&cell);
                let mut reply = Reply::ok(Format::Binary, cell.value.to_vec());
                reply.headers.push(("X-Row", b64(&cell.row)));
                reply
                    .headers
                    .push(("X-Column", b64(model.column.as_deref().unwrap_or_default())));
                reply
                    .headers
                    .push(("X-Timestamp", cell.timestamp.to_string()));
                reply
            }
            Err(e) => {
                drop(state);
                ctx.scanners.close(id, Owner::Anyone);
                Reply::error(&e)
            }
        };
    }
    let limit = max_cells.unwrap_or(state.batch).min(ctx.max_response_cells);
    match state.fetch(limit, max_rows, ctx.max_answer_bytes) {
        Ok(rows) if rows.is_empty() => Reply::empty(204),
        Ok(rows) => Reply::ok(format, CellSet { rows }.encode(format)),
        // Stopped between rows (its time ran out, or its client left): the
        // scanner can go on at the next read.
        Err(e) if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::Cancelled) => {
            Reply::error(&e)
        }
        Err(e) => {
            // A scanner that failed cannot say where to resume.
            drop(state);
            ctx.scanners.close(id, Owner::Anyone);
            Reply::error(&e)
        }
    }
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A table name as a URL path segment (`:` kept: `ns:table`, as HBase's
/// URLs write it).
pub(crate) fn encode_segment(text: &str) -> String {
    basalt::gateways::text::percent_encode(text, b":")
}

/// `?check=put|delete|increment|append` on `/<table>/<row>[/<column>]`:
/// HBase's check-and-mutate and atomic counters over REST.
///
/// - `check=put` (PUT/POST): the cell set's row holds the new cells, and
///   its LAST cell is the check: its column's latest value must equal the
///   cell's value. As in HBase the checked column must also be among the
///   cells written. 304 when the check fails.
/// - `check=delete` (DELETE): the last cell is the check; the cells
///   before it name the columns (or families) to delete; a lone check
///   cell deletes its own column. 304 when the check fails.
/// - `check=increment` / `check=append` (PUT/POST): each cell adds its
///   value (a decimal integer as text) to, or appends its value to, its
///   column. With `rr=true` the answer is the new values as a cell set.
fn check_and_mutate(
    ctx: &Context,
    request: &Request,
    table: &str,
    spec: &RowSpec,
    query: &[(String, Vec<u8>)],
) -> Reply {
    let check = query
        .iter()
        .rev()
        .find(|(k, _)| k == "check")
        .map(|(_, v)| String::from_utf8_lossy(v).to_lowercase())
        .unwrap_or_default();
    let return_result = query
        .iter()
        .rev()
        .find(|(k, _)| k == "rr")
        .is_some_and(|(_, v)| v.eq_ignore_ascii_case(b"true"));
    let method = request.method.as_str();
    match (check.as_str(), method) {
        ("put", "PUT" | "POST")
        | ("delete", "DELETE")
        | ("increment", "PUT" | "POST")
        | ("append", "PUT" | "POST") => {}
        ("put" | "increment" | "append", _) => {
            return Reply::method_not_allowed("PUT, POST");
        }
        ("delete", _) => return Reply::method_not_allowed("DELETE"),
        (other, _) => {
            return Reply::bad_request(&format!(
                "check={other} is not one of put, delete, increment, append"
            ))
        }
    }
    let set = match read_body(request, MODEL_FORMATS, CellSet::decode) {
        Ok(set) => set,
        Err(reply) => return reply,
    };
    let url_row = match &spec.rows {
        Rows::Single(row) => Some(row.clone()),
        _ => None,
    };
    let Some(row) = set.rows.into_iter().next() else {
        return Reply::bad_request("the cell set holds no row");
    };
    let Some(key) = row.key.clone().or(url_row) else {
        return Reply::bad_request("the row has no key and the URL names no single row");
    };
    // A cell without a column takes the URL's first column.
    let mut cells = Vec::with_capacity(row.cells.len());
    for (i, cell) in row.cells.into_iter().enumerate() {
        let Some(column) = cell
            .column
            .clone()
            .or_else(|| spec.columns.first().cloned())
        else {
            return Reply::bad_request(&format!("Cell {i} has no column and the URL names none"));
        };
        cells.push((column, cell));
    }
    let table = match ctx.db.table(table) {
        Ok(table) => table,
        Err(e) => return Reply::error(&e),
    };
    let qualified = |column: &Bytes| match Column::parse(column) {
        Column::Qualified(f, q) if !q.is_empty() => Ok((f, q)),
        _ => Err(Reply::bad_request(&format!(
            "column {:?} is not family:qualifier",
            String::from_utf8_lossy(column)
        ))),
    };
    match check.as_str() {
        "put" => {
            if cells.len() < 2 {
                return Reply::bad_request(
                    "check=put takes the cells to write and, last, the cell to check",
                );
            }
            let Some((check_column, check_cell)) = cells.pop() else {
                return Reply::bad_request("no cell to check");
            };
            let (family, qualifier) = match qualified(&check_column) {
                Ok(fq) => fq,
                Err(reply) => return reply,
            };
            if !cells.iter().any(|(c, _)| *c == check_column) {
                return Reply::bad_request(
                    "the checked column is not among the cells written (HBase requires it)",
                );
            }
            let mut put = Put::new(key.clone());
            for (column, cell) in cells {
                let (f, q) = Column::parse(&column).family_qualifier();
                put = match cell.timestamp {
                    Some(ts) => put.add_at(f, q, ts, cell.value),
                    None => put.add(f, q, cell.value),
                };
            }
            let mutate = with_condition(
                basalt::CheckAndMutate::new(key, family, qualifier),
                check_cell.value,
            )
            .then(put);
            run_check(&table, mutate)
        }
        "delete" => {
            let Some((check_column, check_cell)) = cells.pop() else {
                return Reply::bad_request("check=delete takes, last, the cell to check");
            };
            let (family, qualifier) = match qualified(&check_column) {
                Ok(fq) => fq,
                Err(reply) => return reply,
            };
            let mut delete = basalt::Delete::new(key.clone());
            if cells.is_empty() {
                delete = delete.columns(family.clone(), qualifier.clone());
            }
            for (column, cell) in cells {
                delete = match (Column::parse(&column), cell.timestamp) {
                    (Column::Family(f), Some(ts)) => delete.family_at(f, ts),
                    (Column::Family(f), None) => delete.family(f),
                    (Column::Qualified(f, q), Some(ts)) => delete.columns_at(f, q, ts),
                    (Column::Qualified(f, q), None) => delete.columns(f, q),
                };
            }
            let mutate = with_condition(
                basalt::CheckAndMutate::new(key, family, qualifier),
                check_cell.value,
            )
            .then(delete);
            run_check(&table, mutate)
        }
        kind => {
            if cells.is_empty() {
                return Reply::bad_request(&format!("check={kind} takes at least one cell"));
            }
            let result = if kind == "increment" {
                let mut increment = basalt::Increment::new(key);
                for (column, cell) in cells {
                    let (f, q) = match qualified(&column) {
                        Ok(fq) => fq,
                        Err(reply) => return reply,
                    };
                    let text = String::from_utf8_lossy(&cell.value);
                    let Ok(delta) = text.trim().parse::<i64>() else {
                        return Reply::bad_request(&format!(
                            "an increment's value is a decimal integer, not {text:?}"
                        ));
                    };
                    increment = increment.add(f, q, delta);
                }
                table.increment(&increment)
            } else {
                let mut append = basalt::Append::new(key);
                for (column, cell) in cells {
                    let (f, q) = match qualified(&column) {
                        Ok(fq) => fq,
                        Err(reply) => return reply,
                    };
                    append = append.add(f, q, cell.value);
                }
                table.append(&append)
            };
            match result {
                Ok(row) if return_result => {
                    let Some(format) = negotiate(request.accept.as_deref(), MODEL_FORMATS) else {
                        return Reply::not_acceptable(MODEL_FORMATS);
                    };
                    let set = CellSet {
                        rows: vec![RowModel {
                            key: Some(row.row.clone()),
                            cells: row.cells.iter().map(cell_model).collect(),
                        }],
                    };
                    Reply::ok(format, set.encode(format))
                }
                Ok(_) => Reply::empty(200),
                Err(e) => Reply::error(&e),
            }
        }
    }
}

/// The check's condition: an empty expected value means the column must
/// be absent, as HBase reads an empty check value ("put if absent");
/// otherwise its newest value must equal the expected one.
fn with_condition(check: basalt::CheckAndMutate, value: Bytes) -> basalt::CheckAndMutate {
    if value.is_empty() {
        check.if_absent()
    } else {
        check.if_equals(value)
    }
}

/// Runs a check-and-mutate: 200 when applied, 304 (HBase's answer) when
/// the check failed.
fn run_check(table: &basalt::Table, mutate: basalt::Result<basalt::CheckAndMutate>) -> Reply {
    match mutate.and_then(|m| table.check_and_mutate(&m)) {
        Ok(true) => Reply::empty(200),
        // A 304 carries no body (HTTP forbids one).
        Ok(false) => Reply::empty(304),
        Err(e) => Reply::error(&e),
    }
}
