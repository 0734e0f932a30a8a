//! Thrift2's admin methods: tables with splits, regions, descriptors,
//! enable/disable, truncate, families, patterns and namespaces.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use bytes::Bytes;

use basalt_thrift::{ClientError, Protocol};
use common::thrift2::*;
use common::{TestServer, WIRES};

#[test]
fn create_with_split_keys_shows_in_region_locations_in_every_protocol() {
    let server = TestServer::thrift2();
    for (i, (framed, protocol)) in WIRES.into_iter().enumerate() {
        let mut c = server.client2(framed, protocol);
        let table = format!("t{i}");
        c.create_table(
            descriptor(&table, &["cf"]),
            vec![Bytes::from_static(b"g"), Bytes::from_static(b"p")],
        )
        .unwrap();
        let all = c.get_all_region_locations(table.as_bytes()).unwrap();
        let starts: Vec<Bytes> = all
            .iter()
            .map(|l| l.region_info.as_ref().unwrap().start_key.clone().unwrap())
            .collect();
        assert_eq!(
            starts,
            vec![Bytes::new(), Bytes::from("g"), Bytes::from("p")]
        );
        let loc = c.get_region_location(table.as_bytes(), b"k").unwrap();
        assert_eq!(
            loc.region_info.unwrap().start_key.as_deref(),
            Some(&b"g"[..])
        );
        assert_eq!(
            loc.server_name.unwrap().port,
            Some(i32::from(server.addr().port()))
        );
        assert!(c
            .is_table_available_with_split(&table, vec![Bytes::from_static(b"g")])
            .unwrap());
        assert!(!c
            .is_table_available_with_split(&table, vec![Bytes::from_static(b"h")])
            .unwrap());
    }
}

#[test]
fn tables_are_enabled_disabled_truncated_and_deleted() {
    let server = TestServer::thrift2();
    let mut c = server.client2(true, Protocol::Compact);
    c.create_table(descriptor("t", &["cf"]), vec![Bytes::from_static(b"m")])
        .unwrap();
    c.put(b"t", put(b"a", vec![cell(b"cf", b"q", b"v")]))
        .unwrap();
    assert!(c.table_exists("t").unwrap());
    assert!(c.is_table_enabled("t").unwrap());
    // Truncating an enabled table is refused, as in HBase.
    assert!(matches!(
        c.truncate_table("t", true),
        Err(ClientError::Io(_))
    ));
    c.disable_table("t").unwrap();
    assert!(c.is_table_disabled("t").unwrap());
    assert!(!c.is_table_available("t").unwrap());
    // It comes back enabled, as HBase's truncate leaves it.
    c.truncate_table("t", true).unwrap();
    assert!(c.is_table_enabled("t").unwrap());
    assert_eq!(c.get(b"t", get(b"a")).unwrap().row, None);
    assert_eq!(c.get_all_region_locations(b"t").unwrap().len(), 2);
    c.disable_table("t").unwrap();
    c.truncate_table("t", false).unwrap();
    assert!(c.is_table_enabled("t").unwrap());
    assert_eq!(c.get_all_region_locations(b"t").unwrap().len(), 1);
    c.disable_table("t").unwrap();
    c.delete_table("t").unwrap();
    assert!(!c.table_exists("t").unwrap());
}

#[test]
fn families_are_added_modified_and_deleted_and_descriptors_say_so() {
    let server = TestServer::thrift2();
    let mut c = server.client2(false, Protocol::Binary { strict: true });
    create(&mut c, "t", &["a"]);
    let mut f = family("b");
    f.max_versions = Some(7);
    f.compression_type = Some(1); // GZ
    c.add_column_family("t", f).unwrap();
    let d = c.get_table_descriptor("t").unwrap();
    let b_family = d
        .columns
        .unwrap()
        .into_iter()
        .find(|f| f.name.as_deref() == Some(&b"b"[..]))
        .unwrap();
    assert_eq!(b_family.max_versions, Some(7));
    assert_eq!(b_family.compression_type, Some(1));

    let mut f = family("b");
    f.max_versions = Some(2);
    c.modify_column_family("t", f).unwrap();
    let d = c.get_table_descriptor("t").unwrap();
    let versions: Vec<Option<i32>> = d.columns.unwrap().iter().map(|f| f.max_versions).collect();
    assert_eq!(versions, vec![Some(3), Some(2)]);

    c.delete_column_family("t", b"a").unwrap();
    // modifyTable: exactly the families given.
    c.modify_table(descriptor("t", &["b", "c"])).unwrap();
    let d = c.get_table_descriptors(&["t"]).unwrap();
    let names: Vec<Bytes> = d[0]
        .columns
        .clone()
        .unwrap()
        .into_iter()
        .filter_map(|f| f.name)
        .collect();
    assert_eq!(names, vec![Bytes::from("b"), Bytes::from("c")]);
}

#[test]
fn patterns_and_namespaces_list_the_tables() {
    let server = TestServer::thrift2();
    let mut c = server.client2(true, Protocol::Binary { strict: true });
    create(&mut c, "apple", &["f"]);
    create(&mut c, "apricot", &["f"]);
    // A table goes only into a namespace that exists.
    let e = c
        .create_table(descriptor("ns1:banana", &["f"]), Vec::new())
        .unwrap_err();
    assert!(e.to_string().contains("NamespaceNotFoundException"), "{e}");
    c.create_namespace("ns1", &BTreeMap::new()).unwrap();
    create(&mut c, "ns1:banana", &["f"]);
    let names: Vec<Bytes> = c
        .get_table_names_by_pattern(Some("ap.*"), false)
        .unwrap()
        .into_iter()
        .filter_map(|t| t.qualifier)
        .collect();
    assert_eq!(names, vec![Bytes::from("apple"), Bytes::from("apricot")]);
    // The whole name must match.
    assert!(c
        .get_table_names_by_pattern(Some("ap"), false)
        .unwrap()
        .is_empty());
    assert_eq!(
        c.get_table_descriptors_by_pattern(None, false)
            .unwrap()
            .len(),
        3
    );

    assert_eq!(c.list_namespaces().unwrap(), ["default", "hbase", "ns1"]);
    let in_ns1 = c.get_table_names_by_namespace("ns1").unwrap();
    assert_eq!(in_ns1.len(), 1);
    assert_eq!(in_ns1[0].ns.as_deref(), Some(&b"ns1"[..]));
    assert_eq!(
        c.get_table_descriptors_by_namespace("default")
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        c.get_namespace_descriptor("ns1").unwrap().name.as_deref(),
        Some("ns1")
    );
    assert_eq!(c.list_namespace_descriptors().unwrap().len(), 3);
    let e = c.get_namespace_descriptor("nope").unwrap_err();
    assert!(e.to_string().contains("NamespaceNotFoundException"), "{e}");
    let e = c.delete_namespace("ns1").unwrap_err();
    assert!(e.to_string().contains("ConstraintException"), "{e}");
    let e = c.create_namespace("ns1", &BTreeMap::new()).unwrap_err();
    assert!(e.to_string().contains("NamespaceExistException"), "{e}");
    assert_eq!(c.get_thrift_server_type().unwrap(), 2);
}

#[test]
fn namespaces_are_created_modified_and_deleted_with_their_configuration() {
    let server = TestServer::thrift2();
    let mut c = server.client2(false, Protocol::Compact);
    let config = BTreeMap::from([("owner".to_string(), "ops".to_string())]);
    c.create_namespace("team", &config).unwrap();
    let got = c.get_namespace_descriptor("team").unwrap();
    assert_eq!(got.configuration, Some(config));
    // modifyNamespace replaces the configuration: `owner` goes.
    let replaced = BTreeMap::from([("quota".to_string(), "5".to_string())]);
    c.modify_namespace("team", &replaced).unwrap();
    let got = c.get_namespace_descriptor("team").unwrap();
    assert_eq!(got.configuration, Some(replaced));
    assert_eq!(c.list_namespaces().unwrap(), ["default", "hbase", "team"]);
    c.delete_namespace("team").unwrap();
    assert_eq!(c.list_namespaces().unwrap(), ["default", "hbase"]);
    let e = c.delete_namespace("default").unwrap_err();
    assert!(e.to_string().contains("ConstraintException"), "{e}");
    let e = c.modify_namespace("gone", &BTreeMap::new()).unwrap_err();
    assert!(e.to_string().contains("NamespaceNotFoundException"), "{e}");
}
