//! Tables through REST: the table list, versions, schemas (create, read,
//! update, replace, drop) and regions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{b64, Fixture};

const JSON: &str = "application/json";
const XML: &str = "text/xml";
const TEXT: &str = "text/plain";

#[test]
fn the_table_list_is_text_by_default_and_xml_or_json_on_request() {
    let f = Fixture::new();
    f.create_table("alpha", &["cf"]);
    f.create_table("beta", &["cf"]);
    let reply = f.send("GET", "/", &[], b"");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some(TEXT));
    assert_eq!(reply.text(), "alpha\nbeta\n");
    assert_eq!(
        f.get("/", JSON).json(),
        serde_json::json!({"table": [{"name": "alpha"}, {"name": "beta"}]})
    );
    assert!(f
        .get("/", XML)
        .text()
        .ends_with(r#"<TableList><table name="alpha"/><table name="beta"/></TableList>"#));
}

#[test]
fn version_and_cluster_version_answer_in_every_format() {
    let f = Fixture::new();
    let json = f.get("/version", JSON).json();
    assert_eq!(json["REST"], "0.0.3");
    assert!(json["Server"].as_str().unwrap().starts_with("basalt/"));
    assert!(f
        .get("/version", TEXT)
        .text()
        .starts_with("rest 0.0.3 [JVM: "));
    assert_eq!(
        f.get("/version/cluster", JSON).json(),
        serde_json::json!({"Version": basalt_rest::CLUSTER_VERSION})
    );
    assert!(f
        .get("/version/cluster", XML)
        .text()
        .contains(r#"<ClusterVersion Version=""#));
}

#[test]
fn a_schema_put_creates_the_table_with_its_family_options() {
    let f = Fixture::new();
    let body = br#"<?xml version="1.0"?><TableSchema name="users"><ColumnSchema name="info" VERSIONS="3" TTL="86400" REPLICATION_SCOPE="0"/></TableSchema>"#;
    let reply = f.put("/users/schema", XML, body);
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(reply.header("location"), Some("/users/schema"));
    let descriptor = f.db.describe_table("users").unwrap().descriptor;
    let family = descriptor.get_family(b"info").unwrap();
    assert_eq!(family.max_versions, 3);
    assert_eq!(family.ttl_seconds, Some(86_400));

    let json = f.get("/users/schema", JSON).json();
    assert_eq!(json["name"], "users");
    assert_eq!(json["ColumnSchema"][0]["name"], "info");
    assert_eq!(json["ColumnSchema"][0]["VERSIONS"], "3");
    assert_eq!(json["ColumnSchema"][0]["TTL"], "86400");
    let text = f.get("/users/schema", TEXT).text();
    assert!(
        text.contains("NAME => 'users'") && text.contains("VERSIONS => '3'"),
        "{text}"
    );
}

#[test]
fn a_schema_post_adds_and_changes_families_and_keeps_the_others() {
    let f = Fixture::new();
    f.create_table("t", &["a", "b"]);
    let body = br#"{"name":"t","ColumnSchema":[{"name":"b","VERSIONS":"7"},{"name":"c"}]}"#;
    let reply = f.post("/t/schema", JSON, body);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let descriptor = f.db.describe_table("t").unwrap().descriptor;
    let names: Vec<&str> = descriptor.families().iter().map(|f| f.name()).collect();
    assert_eq!(names, vec!["a", "b", "c"]);
    assert_eq!(descriptor.get_family(b"b").unwrap().max_versions, 7);
}

#[test]
fn a_schema_put_on_an_existing_table_replaces_its_families() {
    let f = Fixture::new();
    f.create_table("t", &["a", "b"]);
    let reply = f.put(
        "/t/schema",
        JSON,
        br#"{"ColumnSchema":[{"name":"b"},{"name":"c"}]}"#,
    );
    assert_eq!(reply.status, 201, "{}", reply.text());
    let descriptor = f.db.describe_table("t").unwrap().descriptor;
    let names: Vec<&str> = descriptor.families().iter().map(|f| f.name()).collect();
    assert_eq!(names, vec!["b", "c"]);
}

#[test]
fn a_schema_with_an_unknown_or_invalid_option_is_a_bad_request() {
    let f = Fixture::new();
    let reply = f.put(
        "/t/schema",
        JSON,
        br#"{"ColumnSchema":[{"name":"a","VERSIONS":"many"}]}"#,
    );
    assert_eq!(reply.status, 400, "{}", reply.text());
    let reply = f.put(
        "/t/schema",
        JSON,
        br#"{"ColumnSchema":[{"name":"a","COLOUR":"red"}]}"#,
    );
    assert_eq!(reply.status, 400);
    assert!(reply.text().contains("COLOUR"), "{}", reply.text());
    assert!(!f.db.table_exists("t"));
}

#[test]
fn a_schema_delete_drops_the_table_enabled_or_not() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    f.create_table("u", &["cf"]);
    f.db.disable_table("u").unwrap();
    assert_eq!(f.delete("/t/schema").status, 200);
    assert_eq!(f.delete("/u/schema").status, 200);
    assert!(f.db.list_tables().is_empty());
    assert_eq!(f.delete("/t/schema").status, 404);
    assert_eq!(f.get("/t/schema", JSON).status, 404);
}

#[test]
fn regions_list_each_region_with_its_keys() {
    let f = Fixture::new();
    let descriptor =
        basalt::TableDescriptor::new("t").family(basalt::ColumnFamilyDescriptor::new("cf"));
    f.db.create_table_with_splits(descriptor, &[bytes::Bytes::from_static(b"m")])
        .unwrap();
    let json = f.get("/t/regions", JSON).json();
    assert_eq!(json["name"], "t");
    let regions = json["Region"].as_array().unwrap();
    assert_eq!(regions.len(), 2);
    assert_eq!(regions[0]["startKey"], "");
    assert_eq!(regions[0]["endKey"], b64(b"m"));
    assert_eq!(regions[1]["startKey"], b64(b"m"));
    assert_eq!(regions[1]["location"], f.addr.to_string());
    assert!(regions[0]["name"].as_str().unwrap().starts_with("t,,"));
}

#[test]
fn methods_a_resource_does_not_take_are_refused_with_the_allowed_ones() {
    let f = Fixture::new();
    let reply = f.send("DELETE", "/version", &[], b"");
    assert_eq!(reply.status, 405);
    assert_eq!(reply.header("allow"), Some("GET"));
}
