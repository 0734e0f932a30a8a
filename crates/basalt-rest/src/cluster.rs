//! `/status/cluster` and `/namespaces`: the cluster's load as HBase's
//! `StorageClusterStatus`, and namespaces through the core's admin requests.
//!
//! In one process the status reports one live node (the gateway's own
//! address) holding every region of every table, with the request
//! counters, store files and memstore sizes the engine keeps per region.
//! In a cluster it reports every live region server the active master
//! knows (`host:port` and start code) with the regions assigned to it, and
//! the dead servers still being recovered; the counters are known only for
//! the regions this gateway's own server holds (the others' travel in no
//! message Basalt has), so the other nodes' regions report zeros. There is
//! no JVM heap, so the heap fields report 0.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde_json::{json, Map, Value};

use basalt::admin::{Admin, AdminRequest};
use basalt::cluster::{MasterAnswer, MasterCall, ServerName};
use basalt::{Error, ErrorKind, NamespaceDescriptor, RegionSummary};

use crate::media::{negotiate, Format};
use crate::model::{encode_table_list, BadBody};
use crate::protobuf::{Reader, Writer};
use crate::resources::{Context, Reply, Request, MODEL_FORMATS, TEXT_FIRST};
use crate::xml::{escape, DECLARATION};

const MB: u64 = 1 << 20;

/// One region in the status.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionStatus {
    /// HBase's region name (`table,start,id.hash.`).
    pub name: Vec<u8>,
    /// Families.
    pub stores: u64,
    /// Store files over the families.
    pub storefiles: u64,
    /// Bytes in store files, in MB (rounded down).
    pub storefile_size_mb: u64,
    /// Bytes in the memstores, in MB (rounded down).
    pub memstore_size_mb: u64,
    /// Gets and scans served.
    pub read_requests: u64,
    /// Row mutations applied.
    pub write_requests: u64,
}

impl RegionStatus {
    fn of(r: &RegionSummary, with_load: bool) -> RegionStatus {
        let load = |n: u64| if with_load { n } else { 0 };
        RegionStatus {
            name: r.info.region_name().to_vec(),
            stores: r.stores.len() as u64,
            storefiles: load(r.store_files() as u64),
            storefile_size_mb: load(r.store_file_bytes() / MB),
            memstore_size_mb: load(r.load.memstore_bytes / MB),
            read_requests: load(r.load.read_requests),
            write_requests: load(r.load.write_requests),
        }
    }
}

/// One live node (region server) of the status.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeStatus {
    /// `host:port`.
    pub name: String,
    /// HBase's start code (0 in one process).
    pub start_code: u64,
    /// The regions it serves.
    pub regions: Vec<RegionStatus>,
}

impl NodeStatus {
    /// Requests over its regions.
    pub fn requests(&self) -> u64 {
        self.regions
            .iter()
            .map(|r| r.read_requests + r.write_requests)
            .sum()
    }
}

/// HBase's `StorageClusterStatus`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterStatus {
    /// Live nodes, in name order.
    pub nodes: Vec<NodeStatus>,
    /// Dead servers (HBase names) whose recovery is not over.
    pub dead: Vec<String>,
}

impl ClusterStatus {
    /// Reads the regions and their load from the database (and, in a
    /// cluster, the servers from the active master).
    pub(crate) fn collect(ctx: &Context) -> Result<ClusterStatus, Error> {
        let mut summaries = Vec::new();
        for table in ctx.db.list_tables() {
            // A table dropped between the listing and here is left out.
            if let Ok(regions) = ctx.db.list_regions(&table) {
                summaries.extend(regions);
            }
        }
        if ctx.db.cluster().is_none() {
            return Ok(ClusterStatus {
                nodes: vec![NodeStatus {
                    name: ctx.location.clone(),
                    start_code: 0,
                    regions: summaries
                        .iter()
                        .map(|r| RegionStatus::of(r, true))
                        .collect(),
                }],
                dead: Vec::new(),
            });
        }
        let MasterAnswer::Status(status) = ctx.db.master_call(MasterCall::Status)? else {
            return Err(Error::invalid("the master answered status with no status"));
        };
        let here = ctx.db.server_name().map(str::to_string);
        Ok(Self::of_cluster(status, &summaries, here.as_deref()))
    }

    /// The master's view with each region's full name, and loads for the
    /// regions of `here` (the server this gateway runs in).
    fn of_cluster(
        status: basalt::cluster::ClusterStatus,
        summaries: &[RegionSummary],
        here: Option<&str>,
    ) -> ClusterStatus {
        let by_encoded: BTreeMap<String, &RegionSummary> = summaries
            .iter()
            .map(|r| (r.info.encoded_name(), r))
            .collect();
        let mut nodes: Vec<NodeStatus> = status
            .servers
            .iter()
            .map(|s| {
                let (name, start_code) = match ServerName::parse(&s.name) {
                    Ok(n) => (n.address(), n.start_code),
                    Err(_) => (s.name.clone(), 0),
                };
                let mine = here == Some(s.name.as_str());
                // Another server's regions: the load it reported to the
                // master for this status, if it answered in time.
                let reported: BTreeMap<u64, &basalt::cluster::RegionLoadReport> = s
                    .region_loads
                    .iter()
                    .flatten()
                    .map(|l| (l.region, l))
                    .collect();
                let regions = s
                    .regions
                    .iter()
                    .map(|encoded| match by_encoded.get(encoded) {
                        Some(r) if !mine => match reported.get(&r.info.id) {
                            Some(l) => RegionStatus {
                                storefiles: l.store_files as u64,
                                storefile_size_mb: l.store_file_bytes / MB,
                                memstore_size_mb: l.memstore_bytes / MB,
                                read_requests: l.read_requests,
                                write_requests: l.write_requests,
                                ..RegionStatus::of(r, false)
                            },
                            None => RegionStatus::of(r, false),
                        },
                        Some(r) => RegionStatus::of(r, mine),
                        // Newer than the catalog this member read.
                        None => RegionStatus {
                            name: encoded.as_bytes().to_vec(),
                            stores: 0,
                            storefiles: 0,
                            storefile_size_mb: 0,
                            memstore_size_mb: 0,
                            read_requests: 0,
                            write_requests: 0,
                        },
                    })
                    .collect();
                NodeStatus {
                    name,
                    start_code,
                    regions,
                }
            })
            .collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        ClusterStatus {
            nodes,
            dead: status.dead_servers,
        }
    }

    /// Regions over every node.
    pub fn regions(&self) -> usize {
        self.nodes.iter().map(|n| n.regions.len()).sum()
    }

    /// Requests over every region.
    pub fn requests(&self) -> u64 {
        self.nodes.iter().map(NodeStatus::requests).sum()
    }

    /// Regions per live node.
    pub fn average_load(&self) -> f64 {
        if self.nodes.is_empty() {
            return 0.0;
        }
        self.regions() as f64 / self.nodes.len() as f64
    }

    /// The status as JSON, XML or HBase's text form.
    pub fn encode(&self, format: Format) -> Vec<u8> {
        match format {
            Format::Protobuf => {
                // StorageClusterStatus: liveNodes = 1, deadNodes = 2,
                // regions = 3, requests = 4, averageLoad = 5 (double);
                // Node: name = 1, startCode = 2, requests = 3,
                // heapSizeMB = 4, maxHeapSizeMB = 5, regions = 6; Region:
                // name = 1, stores = 2, storefiles = 3, storefileSizeMB = 4,
                // memstoreSizeMB = 5, readRequestsCount = 7,
                // writeRequestsCount = 8.
                let mut status = Writer::new();
                for n in &self.nodes {
                    let mut node = Writer::new();
                    node.string(1, &n.name);
                    node.int(2, clamp(n.start_code));
                    node.int(3, clamp(n.requests()));
                    node.int(4, 0);
                    node.int(5, 0);
                    for r in &n.regions {
                        let mut region = Writer::new();
                        region.bytes(1, &r.name);
                        region.int(2, clamp(r.stores));
                        region.int(3, clamp(r.storefiles));
                        region.int(4, clamp(r.storefile_size_mb));
                        region.int(5, clamp(r.memstore_size_mb));
                        region.int(7, clamp(r.read_requests));
                        region.int(8, clamp(r.write_requests));
                        node.message(6, region);
                    }
                    status.message(1, node);
                }
                for d in &self.dead {
                    status.string(2, d);
                }
                status.int(3, clamp(self.regions() as u64));
                status.int(4, clamp(self.requests()));
                status.double(5, self.average_load());
                status.finish()
            }
            Format::Json => {
                let nodes: Vec<Value> = self
                    .nodes
                    .iter()
                    .map(|n| {
                        let regions: Vec<Value> = n
                            .regions
                            .iter()
                            .map(|r| {
                                json!({
                                    "name": BASE64.encode(&r.name),
                                    "stores": r.stores,
                                    "storefiles": r.storefiles,
                                    "storefileSizeMB": r.storefile_size_mb,
                                    "memstoreSizeMB": r.memstore_size_mb,
                                    "readRequestsCount": r.read_requests,
                                    "writeRequestsCount": r.write_requests,
                                })
                            })
                            .collect();
                        json!({
                            "name": n.name,
                            "startCode": n.start_code,
                            "requests": n.requests(),
                            "heapSizeMB": 0,
                            "maxHeapSizeMB": 0,
                            "Region": regions,
                        })
                    })
                    .collect();
                json!({
                    "regions": self.regions(),
                    "requests": self.requests(),
                    "averageLoad": self.average_load(),
                    "LiveNodes": nodes,
                    "DeadNodes": self.dead,
                })
                .to_string()
                .into_bytes()
            }
            Format::Xml => {
                let mut out = String::from(DECLARATION);
                out.push_str(&format!(
                    r#"<ClusterStatus regions="{}" requests="{}" averageLoad="{}"><LiveNodes>"#,
                    self.regions(),
                    self.requests(),
                    self.average_load()
                ));
                for n in &self.nodes {
                    out.push_str(&format!(
                        r#"<Node name="{}" startCode="{}" requests="{}" heapSizeMB="0" maxHeapSizeMB="0">"#,
                        escape(&n.name),
                        n.start_code,
                        n.requests()
                    ));
                    for r in &n.regions {
                        out.push_str(&format!(
                            r#"<Region name="{}" stores="{}" storefiles="{}" storefileSizeMB="{}" memstoreSizeMB="{}" readRequestsCount="{}" writeRequestsCount="{}"/>"#,
                            BASE64.encode(&r.name),
                            r.stores,
                            r.storefiles,
                            r.storefile_size_mb,
                            r.memstore_size_mb,
                            r.read_requests,
                            r.write_requests
                        ));
                    }
                    out.push_str("</Node>");
                }
                out.push_str("</LiveNodes>");
                if self.dead.is_empty() {
                    out.push_str("<DeadNodes/>");
                } else {
                    out.push_str("<DeadNodes>");
                    for d in &self.dead {
                        out.push_str(&format!("<Node name=\"{}\"/>", escape(d)));
                    }
                    out.push_str("</DeadNodes>");
                }
                out.push_str("</ClusterStatus>");
                out.into_bytes()
            }
            _ => {
                let mut out = format!(
                    "{} live servers, {} dead servers, {:.4} average load\n\n{} live servers\n",
                    self.nodes.len(),
                    self.dead.len(),
                    self.average_load(),
                    self.nodes.len()
                );
                for n in &self.nodes {
                    out.push_str(&format!(
                        "    {} {}\n        requests={}, regions={}\n\n",
                        n.name,
                        n.start_code,
                        n.requests(),
                        n.regions.len()
                    ));
                    for r in &n.regions {
                        out.push_str(&format!(
                            "        {}\n            stores={}\n            storefiles={}\n            storefileSizeMB={}\n            memstoreSizeMB={}\n",
                            String::from_utf8_lossy(&r.name),
                            r.stores,
                            r.storefiles,
                            r.storefile_size_mb,
                            r.memstore_size_mb
                        ));
                    }
                }
                out.push_str(&format!("\n{} dead servers\n", self.dead.len()));
                for d in &self.dead {
                    out.push_str(&format!("    {d}\n"));
                }
                out.into_bytes()
            }
        }
    }
}

/// `GET /status/cluster`.
pub(crate) fn status(ctx: &Context, request: &Request) -> Reply {
    let Some(format) = negotiate(request.accept.as_deref(), TEXT_FIRST) else {
        return Reply::not_acceptable(TEXT_FIRST);
    };
    match ClusterStatus::collect(ctx) {
        Ok(status) => Reply::ok(format, status.encode(format)),
        Err(e) => Reply::error(&e),
    }
}

/// HBase's `Namespaces`: the names.
pub fn encode_namespaces(names: &[String], format: Format) -> Vec<u8> {
    match format {
        // Namespaces: namespace = 1 (repeated).
        Format::Protobuf => crate::model::strings_message(1, names),
        Format::Json => json!({ "Namespace": names }).to_string().into_bytes(),
        Format::Xml => {
            let mut out = String::from(DECLARATION);
            out.push_str("<Namespaces>");
            for name in names {
                out.push_str(&format!("<Namespace>{}</Namespace>", escape(name)));
            }
            out.push_str("</Namespaces>");
            out.into_bytes()
        }
        _ => names
            .iter()
            .map(|n| format!("{n}\n"))
            .collect::<String>()
            .into_bytes(),
    }
}

/// HBase's `NamespaceProperties`: a namespace's properties.
pub fn encode_namespace_properties(
    properties: &BTreeMap<String, String>,
    format: Format,
) -> Vec<u8> {
    match format {
        Format::Protobuf => {
            // NamespaceProperties: props = 1; Property: key = 1, value = 2.
            let mut w = Writer::new();
            for (k, v) in properties {
                let mut p = Writer::new();
                p.string(1, k);
                p.string(2, v);
                w.message(1, p);
            }
            w.finish()
        }
        Format::Json => json!({ "properties": properties }).to_string().into_bytes(),
        Format::Xml => {
            let mut out = String::from(DECLARATION);
            out.push_str("<NamespaceProperties><properties>");
            for (k, v) in properties {
                out.push_str(&format!(
                    "<entry><key>{}</key><value>{}</value></entry>",
                    escape(k),
                    escape(v)
                ));
            }
            out.push_str("</properties></NamespaceProperties>");
            out.into_bytes()
        }
        _ => properties
            .iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect::<String>()
            .into_bytes(),
    }
}

/// Reads a `NamespaceProperties` body (XML or JSON); an empty body is no
/// properties.
pub fn decode_namespace_properties(
    format: Format,
    body: &[u8],
) -> Result<BTreeMap<String, String>, BadBody> {
    let mut properties = BTreeMap::new();
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(properties);
    }
    match format {
        Format::Json => {
            let value: Value = crate::model::parse_json(body, "NamespaceProperties")?;
            let fields = value
                .as_object()
                .and_then(|o| o.get("properties"))
                .map(|p| p.as_object().cloned().unwrap_or_else(Map::new));
            let Some(fields) = fields else {
                return Err(BadBody(
                    "NamespaceProperties needs a \"properties\" object".into(),
                ));
            };
            for (k, v) in fields {
                let v = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                properties.insert(k, v);
            }
        }
        Format::Xml => {
            let root = crate::xml::parse(body)
                .map_err(|e| BadBody(format!("NamespaceProperties is not valid XML: {e}")))?;
            if root.name != "NamespaceProperties" {
                return Err(BadBody(format!(
                    "expected <NamespaceProperties>, found <{}>",
                    root.name
                )));
            }
            for list in root.children_named("properties") {
                for entry in list.children_named("entry") {
                    let text = |name: &str| {
                        entry
                            .children_named(name)
                            .next()
                            .map(|e| e.text.clone())
                            .unwrap_or_default()
                    };
                    properties.insert(text("key"), text("value"));
                }
            }
        }
        Format::Protobuf => {
            let mut read = || -> crate::protobuf::Read<()> {
                let mut r = Reader::new(body);
                while let Some((field, value)) = r.next_field()? {
                    if field != 1 {
                        continue;
                    }
                    let (mut k, mut v) = (String::new(), String::new());
                    let mut p = Reader::new(value.bytes("props")?);
                    while let Some((field, value)) = p.next_field()? {
                        match field {
                            1 => k = value.string("key")?,
                            2 => v = value.string("value")?,
                            _ => {}
                        }
                    }
                    properties.insert(k, v);
                }
                Ok(())
            };
            read().map_err(|e| BadBody(format!("protobuf NamespaceProperties: {e}")))?;
        }
        other => {
            return Err(BadBody(format!(
                "NamespaceProperties cannot be read as {}",
                other.mime()
            )))
        }
    }
    Ok(properties)
}

/// `/namespaces[/<ns>[/tables]]`.
pub(crate) fn namespaces(ctx: &Context, request: &Request, rest: &[&str]) -> Reply {
    let method = request.method.as_str();
    match rest {
        [] => match method {
            "GET" => {
                let Some(format) = negotiate(request.accept.as_deref(), TEXT_FIRST) else {
                    return Reply::not_acceptable(TEXT_FIRST);
                };
                let names: Vec<String> = ctx
                    .db
                    .list_namespaces()
                    .into_iter()
                    .map(|n| n.name)
                    .collect();
                Reply::ok(format, encode_namespaces(&names, format))
            }
            _ => Reply::method_not_allowed("GET"),
        },
        [name] => {
            let name = match crate::path::percent_decode(name, false) {
                Ok(name) => String::from_utf8_lossy(&name).into_owned(),
                Err(e) => return Reply::bad_request(&e),
            };
            namespace(ctx, request, &name)
        }
        [name, "tables"] => match method {
            "GET" => {
                let name = match crate::path::percent_decode(name, false) {
                    Ok(name) => String::from_utf8_lossy(&name).into_owned(),
                    Err(e) => return Reply::bad_request(&e),
                };
                let Some(format) = negotiate(request.accept.as_deref(), TEXT_FIRST) else {
                    return Reply::not_acceptable(TEXT_FIRST);
                };
                match ctx.db.list_namespace_tables(&name) {
                    Ok(tables) => {
                        // HBase lists a namespace's tables by their
                        // qualifier, without the `ns:` prefix.
                        let prefix = format!("{name}:");
                        let names: Vec<String> = tables
                            .iter()
                            .map(|t| t.strip_prefix(&prefix).unwrap_or(t).to_string())
                            .collect();
                        Reply::ok(format, encode_table_list(&names, format))
                    }
                    Err(e) => Reply::error(&e),
                }
            }
            _ => Reply::method_not_allowed("GET"),
        },
        _ => Reply::not_found(),
    }
}

/// `/namespaces/<ns>`: properties (GET), create (POST), alter or create
/// (PUT), drop (DELETE).
fn namespace(ctx: &Context, request: &Request, name: &str) -> Reply {
    match request.method.as_str() {
        "GET" => {
            let Some(format) = negotiate(request.accept.as_deref(), TEXT_FIRST) else {
                return Reply::not_acceptable(TEXT_FIRST);
            };
            match ctx.db.describe_namespace(name) {
                Ok(ns) => Reply::ok(format, encode_namespace_properties(&ns.properties, format)),
                Err(e) => Reply::error(&e),
            }
        }
        method @ ("POST" | "PUT") => {
            let properties = if request.body.is_empty() {
                BTreeMap::new()
            } else {
                match crate::resources::read_body(
                    request,
                    MODEL_FORMATS,
                    decode_namespace_properties,
                ) {
                    Ok(p) => p,
                    Err(reply) => return reply,
                }
            };
            let current = match ctx.db.describe_namespace(name) {
                Ok(current) => Some(current),
                Err(e) if e.kind() == ErrorKind::NamespaceNotFound => None,
                Err(e) => return Reply::error(&e),
            };
            let descriptor = NamespaceDescriptor {
                name: name.to_string(),
                properties,
            };
            if let Some(current) = current {
                if method == "POST" {
                    return Reply::text(
                        403,
                        "Forbidden",
                        Some(&format!(
                            "namespace {name} already exists; PUT changes its properties"
                        )),
                    );
                }
                // HBase's PUT is `modifyNamespace`: the properties become
                // exactly those sent, as through Thrift2 and native RPC.
                let request = AdminRequest::modify_namespace(&current, descriptor);
                return match ctx.db.execute(request) {
                    Ok(_) => Reply::empty(200),
                    Err(e) => Reply::error(&e),
                };
            }
            match ctx.db.execute(AdminRequest::CreateNamespace {
                namespace: descriptor,
            }) {
                Ok(_) => {
                    let mut reply = Reply::empty(201);
                    reply.headers.push((
                        "Location",
                        format!("/namespaces/{}", crate::resources::encode_segment(name)),
                    ));
                    reply
                }
                Err(e) => Reply::error(&e),
            }
        }
        "DELETE" => match ctx.db.execute(AdminRequest::DropNamespace {
            name: name.to_string(),
        }) {
            Ok(_) => Reply::empty(200),
            Err(e) => Reply::error(&e),
        },
        _ => Reply::method_not_allowed("GET, POST, PUT, DELETE"),
    }
}

/// A counter as a protobuf integer field (they are signed there).
fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt::cluster::ServerStatus;

    fn cluster() -> ClusterStatus {
        let status = basalt::cluster::ClusterStatus {
            master: "m,16000,1".into(),
            servers: vec![
                ServerStatus {
                    name: "rs2,16020,8".into(),
                    regions: vec!["b".repeat(32)],
                    region_loads: None,
                },
                ServerStatus {
                    name: "rs1,16020,7".into(),
                    regions: vec!["a".repeat(32), "c".repeat(32)],
                    region_loads: None,
                },
            ],
            dead_servers: vec!["rs0,16020,3".into()],
            ..Default::default()
        };
        ClusterStatus::of_cluster(status, &[], Some("rs1,16020,7"))
    }

    #[test]
    fn a_cluster_lists_every_live_server_with_its_regions_and_the_dead_ones() {
        let status = cluster();
        let names: Vec<(&str, u64, usize)> = status
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.start_code, n.regions.len()))
            .collect();
        assert_eq!(names, [("rs1:16020", 7, 2), ("rs2:16020", 8, 1)]);
        assert_eq!(status.average_load(), 1.5);
        let json: Value = serde_json::from_slice(&status.encode(Format::Json)).unwrap();
        assert_eq!(json["LiveNodes"].as_array().unwrap().len(), 2);
        assert_eq!(json["DeadNodes"][0], "rs0,16020,3");
        let xml = String::from_utf8(status.encode(Format::Xml)).unwrap();
        assert!(
            xml.contains(r#"<DeadNodes><Node name="rs0,16020,3"/></DeadNodes>"#),
            "{xml}"
        );
        let text = String::from_utf8(status.encode(Format::Text)).unwrap();
        assert!(
            text.starts_with("2 live servers, 1 dead servers, 1.5000 average load"),
            "{text}"
        );
        assert!(text.contains("    rs2:16020 8\n"), "{text}");
    }
}
