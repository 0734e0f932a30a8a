//! From a request line to an answer: the route table, query parameters
//! (checked strictly: an unknown parameter or a bad value is a 400 that
//! names it), and errors as an HTML page or a JSON object by route.

use basalt::{Database, ErrorKind};

use crate::{heatmap, model, pages, prometheus};

/// What every request may read: the database and the settings pages use.
#[derive(Debug)]
pub struct Context {
    /// The database served.
    pub db: Database,
    /// Key-axis rows of a heatmap by default.
    pub heatmap_rows: usize,
    /// Most key-axis rows a request may ask for.
    pub max_heatmap_rows: usize,
    /// Numbers the process keeps outside the database.
    pub extras: crate::extra::Extras,
}

impl Context {
    /// The context of a server on `db` with `config`'s settings.
    pub fn new(db: Database, config: &crate::InfoConfig) -> Context {
        Context {
            db,
            heatmap_rows: config.heatmap_rows.clamp(1, config.max_heatmap_rows.max(1)),
            max_heatmap_rows: config.max_heatmap_rows.max(1),
            extras: crate::extra::Extras::default(),
        }
    }
}

/// An answer: status, content type and body.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

const HTML: &str = "text/html; charset=utf-8";
const JSON: &str = "application/json";
/// The Prometheus text exposition format, version 0.0.4.
const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

impl Reply {
    /// A plain-text answer.
    pub fn text(status: u16, text: &str) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            body: format!("{text}\n").into_bytes(),
        }
    }

    fn html(body: String) -> Reply {
        Reply {
            status: 200,
            content_type: HTML,
            body: body.into_bytes(),
        }
    }

    fn json<T: serde::Serialize>(value: &T) -> Reply {
        match serde_json::to_vec_pretty(value) {
            Ok(body) => Reply {
                status: 200,
                content_type: JSON,
                body,
            },
            Err(e) => Failure::new(500, format!("the answer could not be encoded: {e}")).json(),
        }
    }
}

/// Why a request could not be answered: a status and a sentence for the
/// reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// HTTP status.
    pub status: u16,
    /// What went wrong and, where it helps, what to do.
    pub message: String,
}

impl Failure {
    /// A failure with `status` and `message`.
    pub fn new(status: u16, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    /// A 400 naming what is wrong with the request.
    pub fn bad_request(message: impl Into<String>) -> Failure {
        Failure::new(400, message)
    }

    /// The status for an engine error: unknown table 404, bad input 400,
    /// a closed or unavailable database 503, anything else 500.
    pub fn from_error(e: &basalt::Error) -> Failure {
        let status = match e.kind() {
            ErrorKind::TableNotFound | ErrorKind::NamespaceNotFound => 404,
            ErrorKind::InvalidArgument => 400,
            ErrorKind::Closed => 503,
            _ => 500,
        };
        Failure::new(status, e.to_string())
    }

    fn json(&self) -> Reply {
        let body = serde_json::json!({ "status": self.status, "error": self.message });
        Reply {
            status: self.status,
            content_type: JSON,
            body: serde_json::to_vec_pretty(&body).unwrap_or_default(),
        }
    }

    fn html(&self) -> Reply {
        let title = match self.status {
            404 => "Not found",
            400 => "Bad request",
            405 => "Method not allowed",
            503 => "Unavailable",
            _ => "Error",
        };
        let body = format!(
            "<p id=\"error\">{}</p><p><a href=\"/\">Back to the status page</a></p>",
            crate::html::escape(&self.message)
        );
        Reply {
            status: self.status,
            content_type: HTML,
            body: crate::html::page(title, "", &body).into_bytes(),
        }
    }
}

/// A request's query parameters, decoded; each route takes the ones it
/// knows and [`Query::finish`] refuses any left over.
#[derive(Debug, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses `a=1&b=2` (percent-decoded, `+` as space).
    pub fn parse(query: Option<&str>) -> Result<Query, Failure> {
        let mut pairs = Vec::new();
        for part in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            let key = decode(k).ok_or_else(|| {
                Failure::bad_request(format!(
                    "query parameter {k:?} is not valid percent-encoding"
                ))
            })?;
            let value = decode(v).ok_or_else(|| {
                Failure::bad_request(format!(
                    "the value of query parameter {key:?} is not valid percent-encoding"
                ))
            })?;
            if pairs.iter().any(|(k, _)| *k == key) {
                return Err(Failure::bad_request(format!(
                    "query parameter {key:?} is given twice"
                )));
            }
            pairs.push((key, value));
        }
        Ok(Query { pairs })
    }

    /// Takes parameter `name`.
    pub fn take(&mut self, name: &str) -> Option<String> {
        let at = self.pairs.iter().position(|(k, _)| k == name)?;
        Some(self.pairs.remove(at).1)
    }

    /// Refuses parameters no route took, naming the ones this route knows.
    pub fn finish(self, known: &[&str]) -> Result<(), Failure> {
        match self.pairs.first() {
            None => Ok(()),
            Some((k, _)) if known.is_empty() => Err(Failure::bad_request(format!(
                "unknown query parameter {k:?}: this page takes none"
            ))),
            Some((k, _)) => Err(Failure::bad_request(format!(
                "unknown query parameter {k:?}: this page takes {}",
                known.join(", ")
            ))),
        }
    }
}

/// Percent-decoding (and `+` as space) into UTF-8; `None` for a bad
/// escape or bytes that are not UTF-8.
pub fn decode(text: &str) -> Option<String> {
    let bytes = basalt::gateways::text::percent_decode(text, true).ok()?;
    String::from_utf8(bytes).ok()
}

/// The routes: what a path names.
enum Route {
    Status,
    Tables,
    Table(String),
    Heatmap(String),
    LoadSplits,
    Servers,
    ApiStatus,
    ApiTables,
    ApiTable(String),
    ApiHeatmap(String),
    ApiLoadSplits,
    ApiServerMetrics,
    ApiServers,
    Metrics,
}

impl Route {
    fn is_api(path: &str) -> bool {
        path == "/api" || path.starts_with("/api/")
    }

    /// The route for `path`; `None` for a path that names nothing.
    fn of(path: &str) -> Result<Option<Route>, Failure> {
        let segments: Vec<&str> = path
            .trim_start_matches('/')
            .trim_end_matches('/')
            .split('/')
            .collect();
        let name = |s: &str| {
            decode(s).ok_or_else(|| {
                Failure::bad_request(format!("table name {s:?} is not valid percent-encoding"))
            })
        };
        Ok(Some(match segments.as_slice() {
            [""] => Route::Status,
            ["tables"] => Route::Tables,
            ["table", t] => Route::Table(name(t)?),
            ["table", t, "heatmap"] => Route::Heatmap(name(t)?),
            ["load-splits"] => Route::LoadSplits,
            ["servers"] => Route::Servers,
            ["api", "status"] => Route::ApiStatus,
            ["api", "tables"] => Route::ApiTables,
            ["api", "tables", t] => Route::ApiTable(name(t)?),
            ["api", "tables", t, "heatmap"] => Route::ApiHeatmap(name(t)?),
            ["api", "load-splits"] => Route::ApiLoadSplits,
            ["api", "server-metrics"] => Route::ApiServerMetrics,
            ["api", "servers"] => Route::ApiServers,
            ["metrics"] => Route::Metrics,
            _ => return Ok(None),
        }))
    }
}

/// Answers one request.
pub fn handle(context: &Context, method: &str, path: &str, query: Option<&str>) -> Reply {
    let api = Route::is_api(path);
    let fail = |f: Failure| if api { f.json() } else { f.html() };
    if method != "GET" {
        return fail(Failure::new(
            405,
            format!("{method} is not served here: the info server answers GET and HEAD"),
        ));
    }
    let route = match Route::of(path) {
        Ok(Some(route)) => route,
        Ok(None) => {
            return fail(Failure::new(
                404,
                format!("no page at {path}: see / for the status page, /tables, /servers, /load-splits, /metrics and the /api/... endpoints in docs/web-ui.md"),
            ))
        }
        Err(f) => return fail(f),
    };
    let query = match Query::parse(query) {
        Ok(query) => query,
        Err(f) => return fail(f),
    };
    match answer(context, route, query) {
        Ok(reply) => reply,
        Err(f) => fail(f),
    }
}

fn answer(context: &Context, route: Route, mut query: Query) -> Result<Reply, Failure> {
    let db = &context.db;
    Ok(match route {
        Route::Status => {
            query.finish(&[])?;
            Reply::html(pages::status(&model::status(db), &context.extras.read()))
        }
        Route::ApiStatus => {
            query.finish(&[])?;
            Reply::json(&model::status(db))
        }
        Route::Tables => {
            query.finish(&[])?;
            Reply::html(pages::tables(&model::tables(db)))
        }
        Route::ApiTables => {
            query.finish(&[])?;
            Reply::json(&model::tables(db))
        }
        Route::Table(name) => {
            let sort = pages::RegionSort::from_query(&mut query)?;
            query.finish(&["sort", "order"])?;
            let mut detail = model::table_detail(db, &name)?;
            pages::sort_regions(&mut detail, &sort, db);
            Reply::html(pages::table(&detail, &sort))
        }
        Route::ApiTable(name) => {
            let sort = pages::RegionSort::from_query(&mut query)?;
            query.finish(&["sort", "order"])?;
            let mut detail = model::table_detail(db, &name)?;
            pages::sort_regions(&mut detail, &sort, db);
            Reply::json(&detail)
        }
        Route::Heatmap(name) => {
            let request = heatmap::Request::from_query(&mut query, context)?;
            query.finish(&["metric", "rows"])?;
            let map = heatmap::build(db, &name, &request)?;
            Reply::html(pages::heatmap(&map))
        }
        Route::ApiHeatmap(name) => {
            let request = heatmap::Request::from_query(&mut query, context)?;
            query.finish(&["metric", "rows"])?;
            Reply::json(&heatmap::build(db, &name, &request)?)
        }
        Route::LoadSplits => {
            query.finish(&[])?;
            Reply::html(pages::load_splits(&model::load_splits(db)))
        }
        Route::ApiLoadSplits => {
            query.finish(&[])?;
            Reply::json(&model::load_splits(db))
        }
        Route::Servers => {
            query.finish(&[])?;
            Reply::html(pages::servers(&model::servers(db)))
        }
        Route::ApiServers => {
            query.finish(&[])?;
            Reply::json(&model::servers(db))
        }
        Route::ApiServerMetrics => {
            query.finish(&[])?;
            let metrics = model::server_metrics(db);
            let groups = context.extras.read();
            if groups.is_empty() {
                Reply::json(&metrics)
            } else {
                Reply::json(&with_extras(&metrics, &groups))
            }
        }
        Route::Metrics => {
            query.finish(&[])?;
            Reply {
                status: 200,
                content_type: PROMETHEUS,
                body: prometheus::render_with(db, &context.extras.read()).into_bytes(),
            }
        }
    })
}

/// The server metrics' JSON with each extra group as one more object,
/// under its key.
fn with_extras(
    metrics: &basalt::metrics::ServerMetrics,
    groups: &[crate::ExtraGroup],
) -> serde_json::Value {
    let mut value = serde_json::to_value(metrics).unwrap_or(serde_json::Value::Null);
    if let serde_json::Value::Object(map) = &mut value {
        for group in groups {
            let numbers: serde_json::Map<String, serde_json::Value> = group
                .samples
                .iter()
                .map(|s| (s.key.clone(), serde_json::json!(s.value)))
                .collect();
            map.insert(group.key.clone(), serde_json::Value::Object(numbers));
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode_percent_escapes_and_refuse_duplicates_and_leftovers() {
        let mut q = Query::parse(Some("metric=writes&rows=8&x=a%20b+c")).unwrap();
        assert_eq!(q.take("metric").as_deref(), Some("writes"));
        assert_eq!(q.take("rows").as_deref(), Some("8"));
        let leftover = q.finish(&["metric", "rows"]).unwrap_err();
        assert_eq!(leftover.status, 400);
        assert!(leftover.message.contains("\"x\""), "{}", leftover.message);
        assert!(Query::parse(Some("a=1&a=2")).is_err());
        assert!(Query::parse(Some("a=%zz")).is_err());
        assert_eq!(decode("ns%3At").as_deref(), Some("ns:t"));
    }

    #[test]
    fn paths_name_routes_and_unknown_paths_name_nothing() {
        assert!(matches!(Route::of("/"), Ok(Some(Route::Status))));
        assert!(
            matches!(Route::of("/table/ns%3At/heatmap"), Ok(Some(Route::Heatmap(t))) if t == "ns:t")
        );
        assert!(matches!(Route::of("/api/tables/t/"), Ok(Some(Route::ApiTable(t))) if t == "t"));
        assert!(matches!(Route::of("/nope"), Ok(None)));
        assert!(matches!(Route::of("/table/a/b/c"), Ok(None)));
        assert!(Route::is_api("/api/nope"));
    }
}
