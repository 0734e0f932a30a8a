//! Namespaces through the embedded API and the admin API: HBase's
//! `create_namespace`, `alter_namespace`, `describe_namespace`,
//! `list_namespace`, `list_namespace_tables` and `drop_namespace`, and the
//! rule that a table can only be created in a namespace that exists.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use basalt::admin::{AdminReply, AdminRequest};
use basalt::*;
use common::TestDb;

fn table(name: &str) -> TableDescriptor {
    TableDescriptor::new(name).family(ColumnFamilyDescriptor::new("f"))
}

fn names(db: &Database) -> Vec<String> {
    db.list_namespaces().into_iter().map(|n| n.name).collect()
}

#[test]
fn the_reserved_namespaces_always_exist_and_cannot_be_dropped_or_altered() {
    let t = TestDb::new();
    assert_eq!(names(&t.db), ["default", "hbase"]);
    for reserved in ["default", "hbase"] {
        let e = t.db.drop_namespace(reserved).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Constraint, "{e}");
        assert!(e.to_string().contains("Reserved namespace"), "{e}");
        let e =
            t.db.alter_namespace(reserved, BTreeMap::from([("k".into(), "v".into())]), &[])
                .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Constraint, "{e}");
    }
    // A table without a namespace is in `default`.
    t.db.create_table(table("plain")).unwrap();
    assert_eq!(t.db.list_namespace_tables("default").unwrap(), ["plain"]);
}

#[test]
fn a_table_can_only_be_created_in_a_namespace_that_exists() {
    let t = TestDb::new();
    let e = t.db.create_table(table("ns1:t")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NamespaceNotFound);
    assert_eq!(e.subject(), Some("ns1"));
    assert_eq!(
        e.kind().java_class(),
        "org.apache.hadoop.hbase.NamespaceNotFoundException"
    );
    assert!(!t.db.table_exists("ns1:t"));

    t.db.create_namespace(NamespaceDescriptor::new("ns1"))
        .unwrap();
    t.db.create_table(table("ns1:t")).unwrap();
    t.db.table("ns1:t")
        .unwrap()
        .put(&Put::new("r").add("f", "q", "v"))
        .unwrap();
    assert_eq!(t.db.list_namespace_tables("ns1").unwrap(), ["ns1:t"]);
    assert!(t.db.list_namespace_tables("default").unwrap().is_empty());
}

#[test]
fn creating_a_namespace_twice_or_with_a_bad_name_is_refused() {
    let t = TestDb::new();
    t.db.create_namespace(NamespaceDescriptor::new("ns"))
        .unwrap();
    let e =
        t.db.create_namespace(NamespaceDescriptor::new("ns"))
            .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NamespaceExists);
    let e =
        t.db.create_namespace(NamespaceDescriptor::new("default"))
            .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NamespaceExists);
    for bad in ["", "a:b", "sp ace", "-x"] {
        let e =
            t.db.create_namespace(NamespaceDescriptor::new(bad))
                .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}: {e}");
    }
}

#[test]
fn only_an_empty_namespace_can_be_dropped() {
    let t = TestDb::new();
    t.db.create_namespace(NamespaceDescriptor::new("ns"))
        .unwrap();
    t.db.create_table(table("ns:a")).unwrap();
    let e = t.db.drop_namespace("ns").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Constraint);
    assert!(
        e.to_string()
            .contains("Only empty namespaces can be removed. Namespace ns has 1 tables"),
        "{e}"
    );
    t.db.disable_table("ns:a").unwrap();
    t.db.drop_table("ns:a").unwrap();
    t.db.drop_namespace("ns").unwrap();
    assert_eq!(names(&t.db), ["default", "hbase"]);
    let e = t.db.drop_namespace("ns").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NamespaceNotFound);
    let e = t.db.describe_namespace("ns").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NamespaceNotFound);
    let e = t.db.list_namespace_tables("ns").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NamespaceNotFound);
}

#[test]
fn properties_are_set_and_unset_and_survive_a_restart() {
    let mut t = TestDb::new();
    t.db.create_namespace(NamespaceDescriptor::new("ns").property("owner", "ops"))
        .unwrap();
    t.db.alter_namespace(
        "ns",
        BTreeMap::from([("quota".into(), "10".into())]),
        &["owner".to_string()],
    )
    .unwrap();
    t.db.create_namespace(NamespaceDescriptor::new("empty"))
        .unwrap();
    t.reopen();
    let ns = t.db.describe_namespace("ns").unwrap();
    assert_eq!(
        ns.properties,
        BTreeMap::from([("quota".into(), "10".into())])
    );
    assert_eq!(names(&t.db), ["default", "empty", "hbase", "ns"]);
}

#[test]
fn the_admin_api_carries_every_namespace_operation() {
    let t = TestDb::new();
    let db: &dyn Admin = &t.db;
    let done = db
        .execute(AdminRequest::CreateNamespace {
            namespace: NamespaceDescriptor::new("ns").property("a", "1"),
        })
        .unwrap();
    assert_eq!(done, AdminReply::Done);
    db.execute(AdminRequest::AlterNamespace {
        name: "ns".into(),
        set: BTreeMap::from([("b".into(), "2".into())]),
        unset: vec!["a".into()],
    })
    .unwrap();
    let AdminReply::Namespaces { namespaces } = db
        .execute(AdminRequest::DescribeNamespace { name: "ns".into() })
        .unwrap()
    else {
        panic!("describe_namespace answers namespaces")
    };
    assert_eq!(
        namespaces,
        [NamespaceDescriptor::new("ns").property("b", "2")]
    );
    t.db.create_table(table("ns:t")).unwrap();
    assert_eq!(
        db.execute(AdminRequest::ListNamespaceTables { name: "ns".into() })
            .unwrap(),
        AdminReply::Tables {
            tables: vec!["ns:t".into()]
        }
    );
    let AdminReply::Namespaces { namespaces } = db.execute(AdminRequest::ListNamespaces).unwrap()
    else {
        panic!("list_namespace answers namespaces")
    };
    assert_eq!(namespaces.len(), 3);
    let e = db
        .execute(AdminRequest::DropNamespace { name: "ns".into() })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Constraint);
    // The request travels as JSON (the Thrift admin extension's encoding).
    let json = serde_json::to_string(&AdminRequest::CreateNamespace {
        namespace: NamespaceDescriptor::new("x"),
    })
    .unwrap();
    assert_eq!(
        json,
        r#"{"op":"create_namespace","namespace":{"name":"x","properties":{}}}"#
    );
}
