//! `/status/cluster` and `/namespaces`: the cluster's real regions and
//! load, and namespaces through the core's namespace API.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{json_row, unb64, Fixture};

#[test]
fn the_cluster_status_lists_every_region_of_every_table_with_its_requests() {
    let f = Fixture::new();
    f.create_table("a", &["cf"]);
    f.create_table("b", &["cf", "cf2"]);
    let write = f.put(
        "/a/r",
        "application/json",
        &json_row(b"r", &[(b"cf:q", None, b"v")]),
    );
    assert_eq!(write.status, 200);
    assert_eq!(f.get("/a/r", "application/json").status, 200);

    let status = f.get("/status/cluster", "application/json").json();
    assert_eq!(status["regions"], 2);
    assert!(status["requests"].as_u64().unwrap() >= 2);
    assert_eq!(status["DeadNodes"].as_array().unwrap().len(), 0);
    let nodes = status["LiveNodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0]["name"], f.addr.to_string());
    let regions = nodes[0]["Region"].as_array().unwrap();
    let names: Vec<String> = regions
        .iter()
        .map(|r| String::from_utf8(unb64(r["name"].as_str().unwrap())).unwrap())
        .collect();
    assert!(names[0].starts_with("a,"), "{names:?}");
    assert!(names[1].starts_with("b,"), "{names:?}");
    assert_eq!(regions[1]["stores"], 2);
    assert_eq!(regions[0]["writeRequestsCount"], 1);

    let xml = f.get("/status/cluster", "text/xml");
    assert!(
        xml.text().contains("<ClusterStatus regions=\"2\""),
        "{}",
        xml.text()
    );
    let text = f.get("/status/cluster", "text/plain");
    assert!(text.text().starts_with("1 live servers"), "{}", text.text());
}

#[test]
fn namespaces_are_created_described_altered_listed_and_dropped() {
    let f = Fixture::new();
    let list = f.get("/namespaces", "application/json").json();
    assert_eq!(list["Namespace"], serde_json::json!(["default", "hbase"]));

    let created = f.post("/namespaces/ns1", "application/json", b"");
    assert_eq!(created.status, 201, "{}", created.text());
    let again = f.post("/namespaces/ns1", "application/json", b"");
    assert_eq!(again.status, 403, "{}", again.text());

    // PUT on an existing namespace sets its properties.
    let altered = f.put(
        "/namespaces/ns1",
        "application/json",
        br#"{"properties":{"owner":"ops"}}"#,
    );
    assert_eq!(altered.status, 200, "{}", altered.text());
    let described = f.get("/namespaces/ns1", "application/json").json();
    assert_eq!(described["properties"]["owner"], "ops");
    let xml = f.get("/namespaces/ns1", "text/xml").text();
    assert!(xml.contains("<key>owner</key><value>ops</value>"), "{xml}");

    f.create_table("ns1:t", &["cf"]);
    let tables = f.get("/namespaces/ns1/tables", "application/json").json();
    assert_eq!(tables["table"], serde_json::json!([{ "name": "t" }]));
    // A namespace holding a table is not dropped.
    assert_eq!(f.delete("/namespaces/ns1").status, 403);
    f.db.disable_table("ns1:t").unwrap();
    f.db.drop_table("ns1:t").unwrap();
    assert_eq!(f.delete("/namespaces/ns1").status, 200);
    assert_eq!(f.get("/namespaces/ns1", "application/json").status, 404);
    assert_eq!(f.delete("/namespaces/ns1").status, 404);
    let list = f.get("/namespaces", "text/plain").text();
    assert_eq!(list, "default\nhbase\n");
}

#[test]
fn a_namespace_created_with_xml_properties_keeps_them() {
    let f = Fixture::new();
    let body = br#"<NamespaceProperties><properties><entry><key>k</key><value>v</value></entry></properties></NamespaceProperties>"#;
    assert_eq!(f.put("/namespaces/ns2", "text/xml", body).status, 201);
    let described = f.get("/namespaces/ns2", "application/json").json();
    assert_eq!(described["properties"]["k"], "v");
    let bad = f.put("/namespaces/ns2", "application/json", b"{\"properties\":");
    assert_eq!(bad.status, 400);
}

#[test]
fn head_answers_a_gets_headers_without_its_body() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let raw = common::exchange_raw(
        f.addr,
        b"HEAD /status/cluster HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
    );
    let text = String::from_utf8_lossy(&raw).to_string();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{text}"
    );
    assert!(
        text.ends_with("\r\n\r\n"),
        "no body after the headers: {text}"
    );
}
