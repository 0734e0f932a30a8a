//! `MasterService` at the handler level: requests encoded as HBase's
//! clients send them, answers decoded as they read them, over a database
//! in a temporary directory.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use basalt::{Get, Put, Scan};
use basalt_rpc::meta::table_name_proto;
use basalt_rpc::proto::admin::GetOnlineRegionResponse;
use basalt_rpc::proto::cluster_status::{
    GetClusterStatusRequest, GetClusterStatusResponse, StatusOption,
};
use basalt_rpc::proto::hbase::{
    region_specifier::RegionSpecifierType, table_state::State as TableStateCode, BytesBytesPair,
    ColumnFamilySchema, EmptyMsg, NameStringPair, NamespaceDescriptor, RegionInfo, RegionSpecifier,
    TableName, TableSchema,
};
use basalt_rpc::proto::master::{self as m, get_procedure_result_response::State as ProcState};
use basalt_rpc::services::{find, ADMIN_SERVICE, MASTER_SERVICE};
use basalt_rpc::RpcError;
use prost::Message;

const TABLE_EXISTS: &str = "org.apache.hadoop.hbase.TableExistsException";
const TABLE_NOT_FOUND: &str = "org.apache.hadoop.hbase.TableNotFoundException";
const TABLE_NOT_DISABLED: &str = "org.apache.hadoop.hbase.TableNotDisabledException";
const TABLE_NOT_ENABLED: &str = "org.apache.hadoop.hbase.TableNotEnabledException";
const NAMESPACE_EXISTS: &str = "org.apache.hadoop.hbase.NamespaceExistException";
const NAMESPACE_NOT_FOUND: &str = "org.apache.hadoop.hbase.NamespaceNotFoundException";
const CONSTRAINT: &str = "org.apache.hadoop.hbase.constraint.ConstraintException";
const INVALID_FAMILY: &str = "org.apache.hadoop.hbase.InvalidFamilyOperationException";
const UNKNOWN_REGION: &str = "org.apache.hadoop.hbase.UnknownRegionException";
const DO_NOT_RETRY: &str = "org.apache.hadoop.hbase.DoNotRetryIOException";
const ILLEGAL_ARGUMENT: &str = "java.lang.IllegalArgumentException";

mod common;
use common::{server, Server};

impl Server {
    fn call<A: Message + Default>(
        &self,
        method: &str,
        request: &impl Message,
    ) -> Result<A, RpcError> {
        self.call_on(MASTER_SERVICE, method, request)
    }

    fn ddl(&self, method: &str, request: &impl Message) -> u64 {
        let answer: m::ProcIdResponse = self.call(method, request).unwrap();
        answer.proc_id.expect("a DDL answer carries a procedure id")
    }

    fn create(&self, name: &str, families: &[&str], splits: &[&[u8]]) -> u64 {
        self.ddl(
            "CreateTable",
            &m::CreateTableRequest {
                table_schema: Some(schema(name, families)),
                split_keys: splits.iter().map(|k| k.to_vec()).collect(),
            },
        )
    }

    fn describe(&self, name: &str) -> Option<TableSchema> {
        let answer: m::GetTableDescriptorsResponse = self
            .call(
                "GetTableDescriptors",
                &m::GetTableDescriptorsRequest {
                    table_names: vec![table_name_proto(name)],
                    ..Default::default()
                },
            )
            .unwrap();
        answer.table_schema.into_iter().next()
    }

    fn families(&self, name: &str) -> Vec<String> {
        self.describe(name)
            .unwrap()
            .column_families
            .iter()
            .map(|f| String::from_utf8(f.name.clone()).unwrap())
            .collect()
    }

    fn state(&self, name: &str) -> Result<i32, RpcError> {
        let answer: m::GetTableStateResponse = self.call("GetTableState", &table(name))?;
        Ok(answer.table_state.unwrap().state.unwrap())
    }

    fn online_regions(&self) -> Vec<RegionInfo> {
        let answer: GetOnlineRegionResponse = self
            .call_on(ADMIN_SERVICE, "GetOnlineRegion", &EmptyMsg {})
            .unwrap();
        answer.region_info
    }

    fn regions_of(&self, name: &str) -> Vec<RegionInfo> {
        let qualifier = table_name_proto(name);
        self.online_regions()
            .into_iter()
            .filter(|r| r.table_name.as_ref() == Some(&qualifier))
            .collect()
    }

    fn put(&self, name: &str, row: &str) {
        self.db()
            .table(name)
            .unwrap()
            .put(&Put::new(row.to_string()).add("f", "q", "v"))
            .unwrap();
    }

    fn rows(&self, name: &str) -> usize {
        self.db()
            .table(name)
            .unwrap()
            .scan(&Scan::new())
            .unwrap()
            .count()
    }
}

fn family(name: &str, attributes: &[(&str, &str)]) -> ColumnFamilySchema {
    ColumnFamilySchema {
        name: name.as_bytes().to_vec(),
        attributes: attributes
            .iter()
            .map(|(k, v)| BytesBytesPair {
                first: k.as_bytes().to_vec(),
                second: v.as_bytes().to_vec(),
            })
            .collect(),
        configuration: Vec::new(),
    }
}

fn schema(name: &str, families: &[&str]) -> TableSchema {
    TableSchema {
        table_name: Some(table_name_proto(name)),
        attributes: Vec::new(),
        column_families: families.iter().map(|f| family(f, &[])).collect(),
        configuration: Vec::new(),
    }
}

fn table(name: &str) -> m::TableRequest {
    m::TableRequest {
        table_name: Some(table_name_proto(name)),
    }
}

fn attribute(family: &ColumnFamilySchema, key: &str) -> String {
    let pair = family
        .attributes
        .iter()
        .find(|p| p.first == key.as_bytes())
        .unwrap_or_else(|| panic!("no attribute {key}"));
    String::from_utf8(pair.second.clone()).unwrap()
}

fn region_spec(region: &RegionInfo) -> RegionSpecifier {
    let info = basalt::RegionInfo {
        id: region.region_id,
        table: basalt_rpc::meta::table_name_text(region.table_name.as_ref().unwrap()).unwrap(),
        start_key: region.start_key.clone().unwrap_or_default().into(),
        end_key: region.end_key.clone().unwrap_or_default().into(),
    };
    RegionSpecifier {
        r#type: RegionSpecifierType::RegionName as i32,
        value: info.region_name().to_vec(),
    }
}

fn expect_class<T: std::fmt::Debug>(result: Result<T, RpcError>, class: &str) -> RpcError {
    let error = result.expect_err("the call should fail");
    assert_eq!(error.class, class, "{error}");
    error
}

#[test]
fn a_table_created_with_split_keys_is_described_with_its_families_and_regions() {
    let s = server();
    let proc_id = s.ddl(
        "CreateTable",
        &m::CreateTableRequest {
            table_schema: Some(TableSchema {
                table_name: Some(table_name_proto("t1")),
                attributes: Vec::new(),
                column_families: vec![
                    family("f", &[("VERSIONS", "5"), ("TTL", "86400")]),
                    family("g", &[("BLOOMFILTER", "ROWCOL"), ("IN_MEMORY", "true")]),
                ],
                configuration: Vec::new(),
            }),
            // Unsorted on purpose: the order carries no meaning.
            split_keys: vec![b"m".to_vec(), b"g".to_vec()],
        },
    );
    assert!(proc_id > 0);

    let described = s.describe("t1").expect("the table is described");
    assert_eq!(described.table_name, Some(table_name_proto("t1")));
    let [f, g] = described.column_families.as_slice() else {
        panic!("two families expected: {described:?}");
    };
    assert_eq!(f.name, b"f");
    assert_eq!(attribute(f, "VERSIONS"), "5");
    assert_eq!(attribute(f, "TTL"), "86400");
    assert_eq!(attribute(g, "BLOOMFILTER"), "ROWCOL");
    assert_eq!(attribute(g, "IN_MEMORY"), "true");
    assert_eq!(attribute(g, "TTL"), "2147483647");

    let starts: Vec<Vec<u8>> = s
        .regions_of("t1")
        .iter()
        .map(|r| r.start_key.clone().unwrap())
        .collect();
    assert_eq!(starts, [b"".to_vec(), b"g".to_vec(), b"m".to_vec()]);
    assert_eq!(s.state("t1").unwrap(), TableStateCode::Enabled as i32);
}

#[test]
fn a_family_created_without_attributes_keeps_one_version_as_in_hbase() {
    let s = server();
    s.create("t", &["f"], &[]);
    let described = s.describe("t").unwrap();
    assert_eq!(attribute(&described.column_families[0], "VERSIONS"), "1");
    assert_eq!(
        s.db().describe_table("t").unwrap().descriptor.families()[0].max_versions,
        1
    );
}

#[test]
fn a_table_in_a_namespace_is_created_there() {
    let s = server();
    s.ddl(
        "CreateNamespace",
        &m::NamespaceRequest {
            namespace_descriptor: Some(NamespaceDescriptor {
                name: b"ns1".to_vec(),
                configuration: Vec::new(),
            }),
        },
    );
    s.create("ns1:t", &["f"], &[]);
    assert!(s.db().table_exists("ns1:t"));
    let name = s.describe("ns1:t").unwrap().table_name.unwrap();
    assert_eq!(name.namespace, b"ns1");
    assert_eq!(name.qualifier, b"t");
}

#[test]
fn describing_a_missing_table_answers_no_schema_rather_than_an_exception() {
    let s = server();
    assert_eq!(s.describe("nope"), None);
}

#[test]
fn a_bad_family_attribute_is_refused_naming_it() {
    let s = server();
    let mut bad = schema("t", &[]);
    bad.column_families = vec![family("f", &[("VERSIONS", "many")])];
    let error = expect_class(
        s.call::<m::ProcIdResponse>(
            "CreateTable",
            &m::CreateTableRequest {
                table_schema: Some(bad),
                split_keys: Vec::new(),
            },
        ),
        ILLEGAL_ARGUMENT,
    );
    assert!(error.message.contains("VERSIONS"), "{error}");
    assert!(error.message.contains("many"), "{error}");
    assert!(!s.db().table_exists("t"));
}

#[test]
fn listing_matches_whole_names_and_shows_system_tables_only_when_asked() {
    let s = server();
    s.create("apple", &["f"], &[]);
    s.create("apricot", &["f"], &[]);
    s.create("banana", &["f"], &[]);
    let names = |regex: Option<&str>, include_sys_tables: bool| -> Vec<String> {
        let answer: m::TableNamesResponse = s
            .call(
                "GetTableNames",
                &m::GetTableNamesRequest {
                    regex: regex.map(String::from),
                    include_sys_tables: Some(include_sys_tables),
                    namespace: None,
                },
            )
            .unwrap();
        answer
            .table_names
            .iter()
            .map(|n| basalt_rpc::meta::table_name_text(n).unwrap())
            .collect()
    };
    assert_eq!(names(Some("ap.*"), false), ["apple", "apricot"]);
    // The whole name must match, as Java's `matches`.
    assert!(names(Some("ap"), false).is_empty());
    assert_eq!(names(Some("default:b.*"), false), ["banana"]);
    assert_eq!(names(None, false), ["apple", "apricot", "banana"]);
    // HBase's master matches a present pattern, even an empty one, against
    // the whole name: an empty pattern lists nothing.
    assert!(names(Some(""), false).is_empty());
    assert!(names(Some(""), true).is_empty());
    // HBase 2.6 lists both of its system tables.
    assert_eq!(
        names(Some(".*"), true),
        [
            "apple",
            "apricot",
            "banana",
            "hbase:meta",
            "hbase:namespace"
        ]
    );
    assert_eq!(names(None, true).len(), 5);

    let answer: m::GetTableDescriptorsResponse = s
        .call(
            "GetTableDescriptors",
            &m::GetTableDescriptorsRequest {
                regex: Some(".*an.*".into()),
                include_sys_tables: Some(false),
                ..Default::default()
            },
        )
        .unwrap();
    let described: Vec<_> = answer
        .table_schema
        .iter()
        .map(|t| t.table_name.clone().unwrap().qualifier)
        .collect();
    assert_eq!(described, [b"banana".to_vec()]);

    expect_class(
        s.call::<m::TableNamesResponse>(
            "GetTableNames",
            &m::GetTableNamesRequest {
                regex: Some("(".into()),
                ..Default::default()
            },
        ),
        DO_NOT_RETRY,
    );
}

#[test]
fn creating_a_table_twice_is_a_table_exists_exception() {
    let s = server();
    s.create("t", &["f"], &[]);
    expect_class(
        s.call::<m::ProcIdResponse>(
            "CreateTable",
            &m::CreateTableRequest {
                table_schema: Some(schema("t", &["f"])),
                split_keys: Vec::new(),
            },
        ),
        TABLE_EXISTS,
    );
}

#[test]
fn ddl_on_a_missing_table_is_a_table_not_found_exception() {
    let s = server();
    for method in ["EnableTable", "DisableTable", "DeleteTable"] {
        expect_class(
            s.call::<m::ProcIdResponse>(method, &table("nope")),
            TABLE_NOT_FOUND,
        );
    }
    expect_class(s.state("nope"), TABLE_NOT_FOUND);
    expect_class(
        s.call::<m::ProcIdResponse>(
            "AddColumn",
            &m::ColumnRequest {
                table_name: Some(table_name_proto("nope")),
                column_families: Some(family("f", &[])),
            },
        ),
        TABLE_NOT_FOUND,
    );
}

#[test]
fn enable_disable_and_delete_keep_hbases_state_exceptions() {
    let s = server();
    s.create("t", &["f"], &[]);
    expect_class(
        s.call::<m::ProcIdResponse>("EnableTable", &table("t")),
        TABLE_NOT_DISABLED,
    );
    expect_class(
        s.call::<m::ProcIdResponse>("DeleteTable", &table("t")),
        TABLE_NOT_DISABLED,
    );

    s.ddl("DisableTable", &table("t"));
    assert_eq!(s.state("t").unwrap(), TableStateCode::Disabled as i32);
    expect_class(
        s.call::<m::ProcIdResponse>("DisableTable", &table("t")),
        TABLE_NOT_ENABLED,
    );

    s.ddl("EnableTable", &table("t"));
    assert_eq!(s.state("t").unwrap(), TableStateCode::Enabled as i32);
    s.ddl("DisableTable", &table("t"));
    s.ddl("DeleteTable", &table("t"));
    assert!(!s.db().table_exists("t"));
    assert_eq!(s.describe("t"), None);
}

#[test]
fn adding_modifying_and_deleting_families_changes_the_description() {
    let s = server();
    s.create("t", &["a"], &[]);
    s.ddl(
        "AddColumn",
        &m::ColumnRequest {
            table_name: Some(table_name_proto("t")),
            column_families: Some(family("b", &[("VERSIONS", "7")])),
        },
    );
    assert_eq!(s.families("t"), ["a", "b"]);

    s.ddl(
        "ModifyColumn",
        &m::ColumnRequest {
            table_name: Some(table_name_proto("t")),
            column_families: Some(family("a", &[("TTL", "60"), ("COMPRESSION", "SNAPPY")])),
        },
    );
    let described = s.describe("t").unwrap();
    assert_eq!(attribute(&described.column_families[0], "TTL"), "60");
    assert_eq!(
        attribute(&described.column_families[0], "COMPRESSION"),
        "SNAPPY"
    );
    assert_eq!(attribute(&described.column_families[1], "VERSIONS"), "7");

    s.ddl(
        "DeleteColumn",
        &m::DeleteColumnRequest {
            table_name: Some(table_name_proto("t")),
            column_name: Some(b"b".to_vec()),
        },
    );
    assert_eq!(s.families("t"), ["a"]);
}

#[test]
fn family_operations_the_families_forbid_are_invalid_family_operations() {
    let s = server();
    s.create("t", &["a"], &[]);
    let column = |method: &str, name: &str| {
        s.call::<m::ProcIdResponse>(
            method,
            &m::ColumnRequest {
                table_name: Some(table_name_proto("t")),
                column_families: Some(family(name, &[])),
            },
        )
    };
    let delete = |name: &str| {
        s.call::<m::ProcIdResponse>(
            "DeleteColumn",
            &m::DeleteColumnRequest {
                table_name: Some(table_name_proto("t")),
                column_name: Some(name.as_bytes().to_vec()),
            },
        )
    };
    let error = expect_class(column("AddColumn", "a"), INVALID_FAMILY);
    assert!(error.message.contains("already exists"), "{error}");
    let error = expect_class(column("ModifyColumn", "zz"), INVALID_FAMILY);
    assert!(error.message.contains("does not exist"), "{error}");
    let error = expect_class(delete("zz"), INVALID_FAMILY);
    assert!(error.message.contains("does not exist"), "{error}");
    let error = expect_class(delete("a"), INVALID_FAMILY);
    assert!(error.message.contains("only one"), "{error}");
    assert!(error.do_not_retry);
    assert_eq!(s.families("t"), ["a"]);
}

#[test]
fn modify_table_makes_the_families_exactly_those_given() {
    let s = server();
    s.create("t", &["a", "b"], &[]);
    let mut wanted = schema("t", &["b", "c"]);
    wanted.column_families[0] = family("b", &[("VERSIONS", "9")]);
    s.ddl(
        "ModifyTable",
        &m::ModifyTableRequest {
            table_name: Some(table_name_proto("t")),
            table_schema: Some(wanted),
        },
    );
    assert_eq!(s.families("t"), ["b", "c"]);
    assert_eq!(
        attribute(&s.describe("t").unwrap().column_families[0], "VERSIONS"),
        "9"
    );

    let error = expect_class(
        s.call::<m::ProcIdResponse>(
            "ModifyTable",
            &m::ModifyTableRequest {
                table_name: Some(table_name_proto("t")),
                table_schema: Some(schema("other", &["b"])),
            },
        ),
        DO_NOT_RETRY,
    );
    assert!(error.message.contains("renamed"), "{error}");
}

fn truncate(s: &Server, name: &str, preserve_splits: bool) -> Result<m::ProcIdResponse, RpcError> {
    s.call(
        "truncateTable",
        &m::TruncateTableRequest {
            table_name: Some(table_name_proto(name)),
            preserve_splits: Some(preserve_splits),
        },
    )
}

#[test]
fn truncating_without_preserving_splits_leaves_one_empty_enabled_region() {
    let s = server();
    s.create("t", &["f"], &[b"g", b"p"]);
    for row in ["a", "h", "q"] {
        s.put("t", row);
    }
    s.ddl("DisableTable", &table("t"));
    assert!(truncate(&s, "t", false).unwrap().proc_id.is_some());

    assert_eq!(s.state("t").unwrap(), TableStateCode::Enabled as i32);
    let regions = s.regions_of("t");
    assert_eq!(regions.len(), 1, "{regions:?}");
    assert_eq!(regions[0].start_key.as_deref(), Some(&b""[..]));
    assert_eq!(regions[0].end_key.as_deref(), Some(&b""[..]));
    assert_eq!(s.rows("t"), 0);
    assert_eq!(s.families("t"), ["f"]);
    s.put("t", "z");
    assert_eq!(s.rows("t"), 1);
}

#[test]
fn truncating_with_preserved_splits_keeps_the_region_boundaries() {
    let s = server();
    s.create("t", &["f"], &[b"g", b"p"]);
    for row in ["a", "h", "q"] {
        s.put("t", row);
    }
    s.ddl("DisableTable", &table("t"));
    truncate(&s, "t", true).unwrap();

    assert_eq!(s.state("t").unwrap(), TableStateCode::Enabled as i32);
    let starts: Vec<Vec<u8>> = s
        .regions_of("t")
        .iter()
        .map(|r| r.start_key.clone().unwrap())
        .collect();
    assert_eq!(starts, [b"".to_vec(), b"g".to_vec(), b"p".to_vec()]);
    assert_eq!(s.rows("t"), 0);
}

#[test]
fn truncating_an_enabled_table_is_a_table_not_disabled_exception() {
    let s = server();
    s.create("t", &["f"], &[]);
    s.put("t", "a");
    expect_class(truncate(&s, "t", false), TABLE_NOT_DISABLED);
    assert_eq!(s.rows("t"), 1);
}

#[test]
fn namespaces_are_created_described_modified_listed_and_deleted() {
    let s = server();
    let descriptor = |pairs: &[(&str, &str)]| NamespaceDescriptor {
        name: b"ns1".to_vec(),
        configuration: pairs
            .iter()
            .map(|(k, v)| NameStringPair {
                name: k.to_string(),
                value: v.to_string(),
            })
            .collect(),
    };
    s.ddl(
        "CreateNamespace",
        &m::NamespaceRequest {
            namespace_descriptor: Some(descriptor(&[("a", "1"), ("b", "2")])),
        },
    );
    let name = m::NamespaceNameRequest {
        namespace_name: Some("ns1".into()),
    };
    let described: m::GetNamespaceDescriptorResponse =
        s.call("GetNamespaceDescriptor", &name).unwrap();
    assert_eq!(
        described.namespace_descriptor,
        Some(descriptor(&[("a", "1"), ("b", "2")]))
    );

    // The configuration given replaces the old one.
    s.ddl(
        "ModifyNamespace",
        &m::NamespaceRequest {
            namespace_descriptor: Some(descriptor(&[("b", "3"), ("c", "4")])),
        },
    );
    let described: m::GetNamespaceDescriptorResponse =
        s.call("GetNamespaceDescriptor", &name).unwrap();
    assert_eq!(
        described.namespace_descriptor,
        Some(descriptor(&[("b", "3"), ("c", "4")]))
    );

    let listed: m::ListNamespacesResponse = s.call("ListNamespaces", &m::Empty {}).unwrap();
    assert_eq!(listed.namespace_name, ["default", "hbase", "ns1"]);
    let listed: m::ListNamespaceDescriptorsResponse =
        s.call("ListNamespaceDescriptors", &m::Empty {}).unwrap();
    assert_eq!(listed.namespace_descriptor.len(), 3);

    s.create("ns1:t1", &["f"], &[]);
    let tables: m::TableNamesResponse = s.call("ListTableNamesByNamespace", &name).unwrap();
    assert_eq!(tables.table_names, [table_name_proto("ns1:t1")]);
    let tables: m::ListTableDescriptorsByNamespaceResponse =
        s.call("ListTableDescriptorsByNamespace", &name).unwrap();
    assert_eq!(tables.table_schema.len(), 1);
    let system: m::TableNamesResponse = s
        .call(
            "ListTableNamesByNamespace",
            &m::NamespaceNameRequest {
                namespace_name: Some("hbase".into()),
            },
        )
        .unwrap();
    assert_eq!(
        system.table_names,
        [
            table_name_proto("hbase:meta"),
            table_name_proto("hbase:namespace")
        ]
    );

    s.ddl("DisableTable", &table("ns1:t1"));
    s.ddl("DeleteTable", &table("ns1:t1"));
    s.ddl("DeleteNamespace", &name);
    let listed: m::ListNamespacesResponse = s.call("ListNamespaces", &m::Empty {}).unwrap();
    assert_eq!(listed.namespace_name, ["default", "hbase"]);
}

#[test]
fn namespace_failures_keep_hbases_exception_classes() {
    let s = server();
    let create = |name: &str| {
        s.call::<m::ProcIdResponse>(
            "CreateNamespace",
            &m::NamespaceRequest {
                namespace_descriptor: Some(NamespaceDescriptor {
                    name: name.as_bytes().to_vec(),
                    configuration: Vec::new(),
                }),
            },
        )
    };
    let delete = |name: &str| {
        s.call::<m::ProcIdResponse>(
            "DeleteNamespace",
            &m::NamespaceNameRequest {
                namespace_name: Some(name.into()),
            },
        )
    };
    create("ns").unwrap();
    expect_class(create("ns"), NAMESPACE_EXISTS);
    expect_class(delete("missing"), NAMESPACE_NOT_FOUND);
    expect_class(
        s.call::<m::GetNamespaceDescriptorResponse>(
            "GetNamespaceDescriptor",
            &m::NamespaceNameRequest {
                namespace_name: Some("missing".into()),
            },
        ),
        NAMESPACE_NOT_FOUND,
    );
    expect_class(
        s.call::<m::ProcIdResponse>(
            "CreateTable",
            &m::CreateTableRequest {
                table_schema: Some(schema("missing:t", &["f"])),
                split_keys: Vec::new(),
            },
        ),
        NAMESPACE_NOT_FOUND,
    );
    s.create("ns:t", &["f"], &[]);
    expect_class(delete("ns"), CONSTRAINT);
    expect_class(delete("default"), CONSTRAINT);
}

#[test]
fn every_ddl_answer_carries_a_procedure_id_that_polls_as_finished() {
    let s = server();
    let ids = [
        s.create("t", &["f"], &[]),
        s.ddl("DisableTable", &table("t")),
        s.ddl("EnableTable", &table("t")),
    ];
    assert!(ids[0] < ids[1] && ids[1] < ids[2], "{ids:?}");
    for id in ids {
        let answer: m::GetProcedureResultResponse = s
            .call(
                "getProcedureResult",
                &m::GetProcedureResultRequest { proc_id: Some(id) },
            )
            .unwrap();
        assert_eq!(answer.state, Some(ProcState::Finished as i32));
        let submitted = answer.submitted_time.unwrap();
        assert!(submitted > 0 && answer.last_update.unwrap() >= submitted);
    }
    let unknown: m::GetProcedureResultResponse = s
        .call(
            "getProcedureResult",
            &m::GetProcedureResultRequest {
                proc_id: Some(u64::MAX),
            },
        )
        .unwrap();
    assert_eq!(unknown.state, Some(ProcState::NotFound as i32));
}

#[test]
fn schema_alter_status_reports_no_region_left_to_update() {
    let s = server();
    s.create("t", &["f"], &[b"k"]);
    let status: m::GetSchemaAlterStatusResponse =
        s.call("GetSchemaAlterStatus", &table("t")).unwrap();
    assert_eq!(status.yet_to_update_regions, Some(0));
    assert_eq!(status.total_regions, Some(2));
}

#[test]
fn the_master_is_running_and_not_in_maintenance() {
    let s = server();
    let running: m::BoolResponse = s.call("IsMasterRunning", &m::Empty {}).unwrap();
    assert_eq!(running.value, Some(true));
    let maintenance: m::BoolResponse = s.call("IsMasterInMaintenanceMode", &m::Empty {}).unwrap();
    assert_eq!(maintenance.value, Some(false));
}

#[test]
fn cluster_status_lists_this_server_and_every_region() {
    let s = server();
    s.create("t1", &["f"], &[b"k"]);
    s.create("t2", &["f"], &[]);
    s.create("off", &["f"], &[]);
    s.ddl("DisableTable", &table("off"));
    let answer: GetClusterStatusResponse = s
        .call("GetClusterStatus", &GetClusterStatusRequest::default())
        .unwrap();
    let status = answer.cluster_status.unwrap();
    assert_eq!(
        status.hbase_version.unwrap().version.as_deref(),
        Some(basalt_rpc::context::HBASE_VERSION)
    );
    assert_eq!(status.cluster_id.unwrap().cluster_id, "cluster-under-test");
    assert_eq!(status.master, Some(s.ctx.identity.master()));
    assert_eq!(status.balancer_on, Some(true));
    assert!(status.dead_servers.is_empty());
    assert!(status.backup_masters.is_empty());
    assert!(status.regions_in_transition.is_empty());
    assert_eq!(status.servers_name, [s.ctx.identity.region_server()]);

    let [live] = status.live_servers.as_slice() else {
        panic!("one live server expected");
    };
    assert_eq!(live.server, Some(s.ctx.identity.region_server()));
    let loads = &live.server_load.as_ref().unwrap().region_loads;
    let names: Vec<Vec<u8>> = loads
        .iter()
        .map(|l| l.region_specifier.clone().unwrap().value)
        .collect();
    assert_eq!(names.len(), 5, "meta, namespace, two of t1, one of t2");
    assert_eq!(names[0], b"hbase:meta,,1");
    assert!(names[1].starts_with(b"hbase:namespace,,"));
    for region in s.regions_of("t1").iter().chain(&s.regions_of("t2")) {
        assert!(names.contains(&region_spec(region).value));
    }

    let counts: Vec<(Vec<u8>, u32, u32)> = status
        .table_region_states_count
        .iter()
        .map(|c| {
            let n = c.region_states_count.clone().unwrap();
            (
                c.table_name.clone().unwrap().qualifier,
                n.open_regions.unwrap(),
                n.closed_regions.unwrap(),
            )
        })
        .collect();
    assert!(counts.contains(&(b"t1".to_vec(), 2, 0)), "{counts:?}");
    assert!(counts.contains(&(b"off".to_vec(), 0, 1)), "{counts:?}");

    // Only what is asked for is filled in.
    let answer: GetClusterStatusResponse = s
        .call(
            "GetClusterStatus",
            &GetClusterStatusRequest {
                options: vec![StatusOption::Master as i32],
            },
        )
        .unwrap();
    let status = answer.cluster_status.unwrap();
    assert!(status.master.is_some());
    assert!(status.live_servers.is_empty());
    assert!(status.cluster_id.is_none());
}

fn switch(s: &Server, method: &str, on: bool) -> bool {
    let answer: m::BoolResponse = s.call(method, &m::SwitchRequest { on: Some(on) }).unwrap();
    answer.value.expect("the previous value")
}

fn read_switch(s: &Server, method: &str) -> bool {
    let answer: m::BoolResponse = s.call(method, &m::Empty {}).unwrap();
    answer.value.expect("the value")
}

#[test]
fn switches_read_back_what_was_set() {
    let s = server();
    for (set, get, default) in [
        ("SetBalancerRunning", "IsBalancerEnabled", true),
        ("SetNormalizerRunning", "IsNormalizerEnabled", false),
        ("EnableCatalogJanitor", "IsCatalogJanitorEnabled", true),
        ("SetCleanerChoreRunning", "IsCleanerChoreEnabled", true),
        ("SwitchSnapshotCleanup", "IsSnapshotCleanupEnabled", true),
    ] {
        assert_eq!(read_switch(&s, get), default, "{get}");
        assert_eq!(switch(&s, set, !default), default, "{set}");
        assert_eq!(read_switch(&s, get), !default, "{get}");
        assert_eq!(switch(&s, set, default), !default, "{set}");
        assert_eq!(read_switch(&s, get), default, "{get}");
    }

    let is_enabled = |kind: m::MasterSwitchType| {
        let answer: m::BoolResponse = s
            .call(
                "IsSplitOrMergeEnabled",
                &m::IsSplitOrMergeEnabledRequest {
                    switch_type: Some(kind as i32),
                },
            )
            .unwrap();
        answer.value.unwrap()
    };
    let answer: m::SetSplitOrMergeEnabledResponse = s
        .call(
            "SetSplitOrMergeEnabled",
            &m::SetSplitOrMergeEnabledRequest {
                enabled: Some(false),
                synchronous: None,
                switch_types: vec![m::MasterSwitchType::Merge as i32],
            },
        )
        .unwrap();
    assert_eq!(answer.prev_value, [true]);
    assert!(is_enabled(m::MasterSwitchType::Split));
    assert!(!is_enabled(m::MasterSwitchType::Merge));
}

#[test]
fn balance_runs_and_moves_nothing_when_on_and_does_not_run_when_off() {
    let s = server();
    s.create("t", &["f"], &[b"k"]);
    let balance = || -> m::BalanceResponse {
        s.call(
            "Balance",
            &m::BalanceRequest {
                ignore_rit: Some(true),
                dry_run: Some(false),
            },
        )
        .unwrap()
    };
    let ran = balance();
    assert_eq!(ran.balancer_ran, Some(true));
    assert_eq!(ran.moves_calculated, Some(0));
    assert_eq!(ran.moves_executed, Some(0));
    switch(&s, "SetBalancerRunning", false);
    assert_eq!(balance().balancer_ran, Some(false));
    let enabled: m::BoolResponse = s.call("IsBalancerEnabled", &m::Empty {}).unwrap();
    assert_eq!(enabled.value, Some(false));
    let answer: GetClusterStatusResponse = s
        .call("GetClusterStatus", &GetClusterStatusRequest::default())
        .unwrap();
    assert_eq!(answer.cluster_status.unwrap().balancer_on, Some(false));
    // The switch is the catalog's: the admin API reads what native RPC set.
    assert!(matches!(
        basalt::Admin::execute(s.ctx.db.as_ref(), basalt::AdminRequest::BalancerEnabled).unwrap(),
        basalt::AdminReply::Switch { previous: false }
    ));

    let normalized: m::BoolResponse = s.call("Normalize", &m::Empty {}).unwrap();
    assert_eq!(
        normalized.value,
        Some(false),
        "the normalizer starts off, so it does not run"
    );
    assert!(!switch(&s, "SetNormalizerRunning", true));
    let normalized: m::BoolResponse = s.call("Normalize", &m::Empty {}).unwrap();
    assert_eq!(normalized.value, Some(true), "on, it runs (nothing to do)");
    // The switch is the catalog's: the admin API reads what native RPC set.
    assert!(matches!(
        basalt::Admin::execute(s.ctx.db.as_ref(), basalt::AdminRequest::NormalizerEnabled).unwrap(),
        basalt::AdminReply::Switch { previous: true }
    ));
    let scan: m::RunCatalogScanResponse = s.call("RunCatalogScan", &m::Empty {}).unwrap();
    assert_eq!(scan.scan_result, Some(0));
}

#[test]
fn splitting_a_region_at_a_row_changes_the_online_regions() {
    let s = server();
    s.create("t", &["f"], &[]);
    let [region] = s.regions_of("t").try_into().unwrap();
    s.ddl(
        "SplitRegion",
        &m::SplitTableRegionRequest {
            region_info: Some(region.clone()),
            split_row: Some(b"m".to_vec()),
        },
    );
    let starts: Vec<Vec<u8>> = s
        .regions_of("t")
        .iter()
        .map(|r| r.start_key.clone().unwrap())
        .collect();
    assert_eq!(starts, [b"".to_vec(), b"m".to_vec()]);

    // The parent is gone: naming it again is an unknown region.
    expect_class(
        s.call::<m::ProcIdResponse>(
            "SplitRegion",
            &m::SplitTableRegionRequest {
                region_info: Some(region),
                split_row: Some(b"c".to_vec()),
            },
        ),
        UNKNOWN_REGION,
    );
}

#[test]
fn splitting_without_a_row_splits_near_the_middle_of_the_data() {
    let s = server();
    s.create("t", &["f"], &[]);
    for row in ["a", "b", "c", "d", "e", "f"] {
        s.put("t", row);
    }
    // As in HBase, the split point is found in the store files.
    s.db().flush_table("t").unwrap();
    let [region] = s.regions_of("t").try_into().unwrap();
    s.ddl(
        "SplitRegion",
        &m::SplitTableRegionRequest {
            region_info: Some(region),
            split_row: None,
        },
    );
    assert_eq!(s.regions_of("t").len(), 2);
    assert_eq!(s.rows("t"), 6);
}

#[test]
fn merging_regions_leaves_one_online_region_covering_them() {
    let s = server();
    s.create("t", &["f"], &[b"g", b"p"]);
    for row in ["a", "h", "q"] {
        s.put("t", row);
    }
    let regions = s.regions_of("t");
    assert_eq!(regions.len(), 3);
    s.ddl(
        "MergeTableRegions",
        &m::MergeTableRegionsRequest {
            region: vec![region_spec(&regions[1]), region_spec(&regions[0])],
            forcible: Some(false),
        },
    );
    let merged = s.regions_of("t");
    assert_eq!(merged.len(), 2);
    assert_eq!(merged[0].start_key.as_deref(), Some(&b""[..]));
    assert_eq!(merged[0].end_key.as_deref(), Some(&b"p"[..]));

    // Three at once: the two left merge into one.
    s.create("u", &["f"], &[b"g", b"p"]);
    let regions = s.regions_of("u");
    s.ddl(
        "MergeTableRegions",
        &m::MergeTableRegionsRequest {
            region: regions.iter().map(region_spec).collect(),
            forcible: None,
        },
    );
    assert_eq!(s.regions_of("u").len(), 1);
    assert_eq!(s.rows("t"), 3);
    let row = s.db().table("t").unwrap().get(&Get::new("h")).unwrap();
    assert!(!row.is_empty());
}

#[test]
fn merging_one_region_or_regions_that_are_not_adjacent_is_refused() {
    let s = server();
    s.create("t", &["f"], &[b"g", b"p"]);
    let regions = s.regions_of("t");
    expect_class(
        s.call::<m::ProcIdResponse>(
            "MergeTableRegions",
            &m::MergeTableRegionsRequest {
                region: vec![region_spec(&regions[0])],
                forcible: None,
            },
        ),
        DO_NOT_RETRY,
    );
    let error = s
        .call::<m::ProcIdResponse>(
            "MergeTableRegions",
            &m::MergeTableRegionsRequest {
                region: vec![region_spec(&regions[0]), region_spec(&regions[2])],
                forcible: Some(true),
            },
        )
        .unwrap_err();
    assert!(error.message.contains("adjacent"), "{error}");
    assert_eq!(s.regions_of("t").len(), 3);
}

#[test]
fn split_and_merge_are_refused_while_their_switches_are_off() {
    let s = server();
    s.create("t", &["f"], &[b"k"]);
    s.call::<m::SetSplitOrMergeEnabledResponse>(
        "SetSplitOrMergeEnabled",
        &m::SetSplitOrMergeEnabledRequest {
            enabled: Some(false),
            synchronous: Some(true),
            switch_types: vec![
                m::MasterSwitchType::Split as i32,
                m::MasterSwitchType::Merge as i32,
            ],
        },
    )
    .unwrap();
    let regions = s.regions_of("t");
    let error = expect_class(
        s.call::<m::ProcIdResponse>(
            "SplitRegion",
            &m::SplitTableRegionRequest {
                region_info: Some(regions[0].clone()),
                split_row: Some(b"c".to_vec()),
            },
        ),
        DO_NOT_RETRY,
    );
    assert!(error.message.contains("split switch is off"), "{error}");
    let error = expect_class(
        s.call::<m::ProcIdResponse>(
            "MergeTableRegions",
            &m::MergeTableRegionsRequest {
                region: regions.iter().map(region_spec).collect(),
                forcible: None,
            },
        ),
        DO_NOT_RETRY,
    );
    assert!(error.message.contains("merge switch is off"), "{error}");
    assert_eq!(s.regions_of("t").len(), 2);
}

#[test]
fn assigning_unassigning_and_moving_a_region_that_exists_succeeds_and_an_unknown_one_is_refused() {
    let s = server();
    s.create("t", &["f"], &[]);
    let [region] = s.regions_of("t").try_into().unwrap();
    let meta = RegionSpecifier {
        r#type: RegionSpecifierType::EncodedRegionName as i32,
        value: b"1588230740".to_vec(),
    };
    let unknown = RegionSpecifier {
        r#type: RegionSpecifierType::RegionName as i32,
        value: b"t,,1.0123456789abcdef0123456789abcdef.".to_vec(),
    };
    for method in ["AssignRegion", "UnassignRegion", "MoveRegion"] {
        for spec in [region_spec(&region), meta.clone()] {
            s.call::<m::Empty>(method, &m::RegionRequest { region: Some(spec) })
                .unwrap();
        }
        expect_class(
            s.call::<m::Empty>(
                method,
                &m::RegionRequest {
                    region: Some(unknown.clone()),
                },
            ),
            UNKNOWN_REGION,
        );
    }
    assert_eq!(s.regions_of("t"), [region]);
}

#[test]
fn the_table_flush_procedure_flushes_and_is_done_at_once() {
    let s = server();
    s.create("t", &["f"], &[]);
    s.put("t", "a");
    let flush = m::ProcedureDescription {
        signature: Some("flush-table-proc".into()),
        instance: Some("default:t".into()),
        creation_time: None,
        configuration: Vec::new(),
    };
    let answer: m::ExecProcedureResponse = s
        .call(
            "ExecProcedure",
            &m::ExecProcedureRequest {
                procedure: Some(flush.clone()),
            },
        )
        .unwrap();
    assert!(answer.expected_timeout.unwrap() > 0);
    let files: usize = s
        .db()
        .list_regions("t")
        .unwrap()
        .iter()
        .map(|r| r.store_files())
        .sum();
    assert_eq!(files, 1);
    let done: m::IsProcedureDoneResponse = s
        .call(
            "IsProcedureDone",
            &m::IsProcedureDoneRequest {
                procedure: Some(flush),
            },
        )
        .unwrap();
    assert_eq!(done.done, Some(true));

    let snapshot = m::ProcedureDescription {
        signature: Some("online-snapshot".into()),
        ..Default::default()
    };
    expect_class(
        s.call::<m::ExecProcedureResponse>(
            "ExecProcedure",
            &m::ExecProcedureRequest {
                procedure: Some(snapshot),
            },
        ),
        DO_NOT_RETRY,
    );
}

#[test]
fn hbase_meta_is_described_and_enabled_but_refuses_ddl() {
    let s = server();
    let meta = s.describe("hbase:meta").expect("hbase:meta is described");
    assert_eq!(meta.column_families.len(), 2);
    assert_eq!(
        s.state("hbase:meta").unwrap(),
        TableStateCode::Enabled as i32
    );
    for method in ["DisableTable", "DeleteTable"] {
        expect_class(
            s.call::<m::ProcIdResponse>(method, &table("hbase:meta")),
            DO_NOT_RETRY,
        );
    }
    expect_class(
        s.call::<m::ProcIdResponse>(
            "CreateTable",
            &m::CreateTableRequest {
                table_schema: Some(schema("hbase:meta", &["info"])),
                split_keys: Vec::new(),
            },
        ),
        TABLE_EXISTS,
    );
}

#[test]
fn hbase_namespace_is_described_as_hbase_describes_it_and_refuses_ddl() {
    let s = server();
    let described = s
        .describe("hbase:namespace")
        .expect("hbase:namespace is described");
    let [info] = described.column_families.as_slice() else {
        panic!("one family expected: {described:?}");
    };
    assert_eq!(info.name, b"info");
    assert_eq!(attribute(info, "VERSIONS"), "10");
    assert_eq!(attribute(info, "IN_MEMORY"), "true");
    assert_eq!(attribute(info, "BLOCKSIZE"), "8192");
    assert_eq!(attribute(info, "BLOOMFILTER"), "ROW");
    assert_eq!(
        s.state("hbase:namespace").unwrap(),
        TableStateCode::Enabled as i32
    );
    for method in ["DisableTable", "DeleteTable", "EnableTable"] {
        let error = expect_class(
            s.call::<m::ProcIdResponse>(method, &table("hbase:namespace")),
            DO_NOT_RETRY,
        );
        assert!(error.message.contains("hbase:namespace"), "{error:?}");
    }
    expect_class(
        s.call::<m::ProcIdResponse>(
            "CreateTable",
            &m::CreateTableRequest {
                table_schema: Some(schema("hbase:namespace", &["info"])),
                split_keys: Vec::new(),
            },
        ),
        TABLE_EXISTS,
    );
    let status: m::GetSchemaAlterStatusResponse = s
        .call("GetSchemaAlterStatus", &table("hbase:namespace"))
        .unwrap();
    assert_eq!(status.total_regions, Some(1));
}

#[test]
fn methods_left_out_are_not_in_the_table() {
    for method in ["Shutdown", "StopMaster", "OfflineRegion", "SetQuota"] {
        assert!(find(MASTER_SERVICE, method).is_none(), "{method}");
    }
    // HBase's method names are case-sensitive on the wire.
    assert!(find(MASTER_SERVICE, "truncateTable").is_some());
    assert!(find(MASTER_SERVICE, "getProcedureResult").is_some());
}

#[test]
fn a_table_name_without_a_namespace_reads_as_the_default_one() {
    let s = server();
    s.create("t", &["f"], &[]);
    let empty_namespace = TableName {
        namespace: Vec::new(),
        qualifier: b"t".to_vec(),
    };
    let answer: m::GetTableStateResponse = s
        .call(
            "GetTableState",
            &m::TableRequest {
                table_name: Some(empty_namespace),
            },
        )
        .unwrap();
    assert_eq!(
        answer.table_state.unwrap().state,
        Some(TableStateCode::Enabled as i32)
    );
}

fn snapshot_request(
    name: &str,
    table: Option<&str>,
    kind: m::snapshot_description::Type,
) -> m::SnapshotRequest {
    m::SnapshotRequest {
        snapshot: Some(m::SnapshotDescription {
            name: Some(name.into()),
            table: table.map(str::to_string),
            r#type: Some(kind as i32),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn a_snapshot_request_sent_again_with_its_nonce_is_answered_as_done() {
    use m::snapshot_description::Type;
    let s = server();
    s.create("t", &["f"], &[]);
    let with_nonce = |nonce: u64| m::SnapshotRequest {
        nonce_group: Some(5),
        nonce: Some(nonce),
        ..snapshot_request("s1", Some("t"), Type::Flush)
    };
    // HBase's client sends the same request again when its master died
    // with the answer.
    for _ in 0..2 {
        s.call::<m::SnapshotResponse>("Snapshot", &with_nonce(11))
            .unwrap();
    }
    expect_class(
        s.call::<m::SnapshotResponse>("Snapshot", &with_nonce(12)),
        "org.apache.hadoop.hbase.snapshot.SnapshotExistsException",
    );
    let listed: m::GetCompletedSnapshotsResponse =
        s.call("GetCompletedSnapshots", &m::Empty {}).unwrap();
    assert_eq!(listed.snapshots.len(), 1);
}

#[test]
fn snapshots_are_taken_listed_cloned_restored_and_deleted_as_hbase_clients_ask() {
    use m::snapshot_description::Type;
    let s = server();
    s.create("t", &["f"], &[b"m"]);
    s.db()
        .table("t")
        .unwrap()
        .put(&Put::new("a").add("f", "q", "before"))
        .unwrap();
    let taken: m::SnapshotResponse = s
        .call(
            "Snapshot",
            &snapshot_request("s1", Some("default:t"), Type::Flush),
        )
        .unwrap();
    let proc_id = taken.proc_id.expect("a procedure to poll") as u64;
    let polled: m::GetProcedureResultResponse = s
        .call(
            "getProcedureResult",
            &m::GetProcedureResultRequest {
                proc_id: Some(proc_id),
            },
        )
        .unwrap();
    assert_eq!(polled.state, Some(ProcState::Finished as i32));
    let done: m::IsSnapshotDoneResponse = s
        .call("IsSnapshotDone", &snapshot_request("s1", None, Type::Flush))
        .unwrap();
    assert_eq!(done.done, Some(true));
    expect_class(
        s.call::<m::IsSnapshotDoneResponse>(
            "IsSnapshotDone",
            &snapshot_request("nope", None, Type::Flush),
        ),
        "org.apache.hadoop.hbase.snapshot.UnknownSnapshotException",
    );
    expect_class(
        s.call::<m::SnapshotResponse>("Snapshot", &snapshot_request("s1", Some("t"), Type::Flush)),
        "org.apache.hadoop.hbase.snapshot.SnapshotExistsException",
    );
    expect_class(
        s.call::<m::SnapshotResponse>(
            "Snapshot",
            &snapshot_request("s2", Some("missing"), Type::Flush),
        ),
        "org.apache.hadoop.hbase.snapshot.SnapshotCreationException",
    );
    let listed: m::GetCompletedSnapshotsResponse =
        s.call("GetCompletedSnapshots", &m::Empty {}).unwrap();
    assert_eq!(listed.snapshots.len(), 1);
    let d = &listed.snapshots[0];
    assert_eq!(
        (d.name.as_deref(), d.table.as_deref()),
        (Some("s1"), Some("t"))
    );
    assert_eq!(d.r#type, Some(Type::Flush as i32));
    assert!(d.creation_time.unwrap() > 0);

    s.db()
        .table("t")
        .unwrap()
        .put(&Put::new("a").add("f", "q", "after"))
        .unwrap();
    // A RestoreSnapshot naming a table that does not exist clones.
    let _: m::RestoreSnapshotResponse = s
        .call(
            "RestoreSnapshot",
            &snapshot_request("s1", Some("copy"), Type::Flush),
        )
        .unwrap();
    let value = |table: &str| {
        let row = s.db().table(table).unwrap().get(&Get::new("a")).unwrap();
        String::from_utf8(row.cells[0].value.to_vec()).unwrap()
    };
    assert_eq!(value("copy"), "before");
    // Naming the snapshot's own table restores it, once disabled.
    expect_class(
        s.call::<m::RestoreSnapshotResponse>(
            "RestoreSnapshot",
            &snapshot_request("s1", Some("t"), Type::Flush),
        ),
        TABLE_NOT_DISABLED,
    );
    s.db().disable_table("t").unwrap();
    let _: m::RestoreSnapshotResponse = s
        .call(
            "RestoreSnapshot",
            &snapshot_request("s1", Some("t"), Type::Flush),
        )
        .unwrap();
    s.db().enable_table("t").unwrap();
    assert_eq!(value("t"), "before");

    let _: m::Empty = s
        .call("DeleteSnapshot", &snapshot_request("s1", None, Type::Flush))
        .unwrap();
    expect_class(
        s.call::<m::Empty>("DeleteSnapshot", &snapshot_request("s1", None, Type::Flush)),
        "org.apache.hadoop.hbase.snapshot.SnapshotDoesNotExistException",
    );
    let listed: m::GetCompletedSnapshotsResponse =
        s.call("GetCompletedSnapshots", &m::Empty {}).unwrap();
    assert!(listed.snapshots.is_empty());
}
