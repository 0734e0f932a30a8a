//! The same admin operation through every gateway of one `basalt serve`
//! must have the same outcome (issue 29's acceptance test).
//!
//! Each test starts `basalt serve` with Thrift1, Thrift2, REST and native
//! RPC on free ports (native RPC in one process needs no ZooKeeper), and
//! performs one operation through each gateway that offers it, each on a
//! table (or namespace) of its own, made the same way. The outcome is then
//! read through ONE observer, Basalt's admin extension on the Thrift1 port
//! (`describe`, `read`, `list_namespace`, `balancer_enabled`: the core's
//! own view), and compared: the table's enabled state, its region
//! boundaries, its families with every option, its rows; the namespaces
//! with their properties; the balancer switch. `status` has no state to
//! observe: there the answers themselves are compared.
//!
//! Which gateway carries which operation (HBase's own protocols; "ext" is
//! Basalt's `basaltAdmin` method on the Thrift1 port, the admin protocol
//! of docs/admin-protocol.md that the remote shell also speaks: HBase's
//! Hbase.thrift has none of these calls, so Thrift1 is tested through it;
//! "none" means the protocol has no such call and the pair is skipped):
//!
//! | operation           | Thrift1 | Thrift2               | REST                      | native RPC                    | shell                       |
//! |---------------------|---------|-----------------------|---------------------------|-------------------------------|-----------------------------|
//! | truncate (preserve) | ext     | `truncateTable(true)` | none                      | `truncateTable` preserve      | `truncate_preserve`         |
//! | truncate            | ext     | `truncateTable(false)`| none                      | `truncateTable`               | `truncate`                  |
//! | alter               | ext     | `modifyTable`         | `PUT /<t>/schema`         | `ModifyTable`                 | `alter`                     |
//! | split               | ext     | none                  | none                      | `SplitRegion`                 | `split`                     |
//! | merge               | ext     | none                  | none                      | `MergeTableRegions`           | `merge_region`              |
//! | namespace create    | ext     | `createNamespace`     | `POST /namespaces/<ns>`   | `CreateNamespace`             | `create_namespace`          |
//! | namespace delete    | ext     | `deleteNamespace`     | `DELETE /namespaces/<ns>` | `DeleteNamespace`             | `drop_namespace`            |
//! | namespace alter     | ext     | `modifyNamespace`     | `PUT /namespaces/<ns>`    | `ModifyNamespace`             | none (see below)            |
//! | split/merge switch  | none    | none                  | none                      | `SetSplitOrMergeEnabled`      | none                        |
//! | balancer switch     | ext     | none                  | none                      | `SetBalancerRunning`          | `balance_switch`            |
//! | status              | ext     | none                  | `GET /status/cluster`     | `GetClusterStatus`            | `status 'simple'`           |
//!
//! The split and merge switches are set through native RPC, the one
//! gateway with the call, and gate the splits and merges of every gateway
//! (as HBase's master gates its clients' calls, the shell's included).
//!
//! Where HBase's own calls differ, the difference is kept and named:
//! - HBase's shell `truncate` disables an enabled table first; the wire
//!   calls refuse an enabled table (`TableNotEnabledException`). Both are
//!   tested; the refusal only through the wire gateways.
//! - HBase's shell `alter_namespace` sets or unsets single properties;
//!   `modifyNamespace` (Thrift2, REST's PUT, native RPC) replaces them
//!   all, so the shell has no pair in the replacing alter.
//! - In `status`, native RPC also reports the regions of `hbase:meta` and
//!   `hbase:namespace`, the system tables only it serves (HBase's clients
//!   locate them there; Thrift and REST have no such tables in Basalt). The
//!   user regions, the servers and the request counts are compared.
//! - Thrift1's "ext" status carries no server list in one process: its
//!   absent cluster part means this process, one live server and no dead
//!   one, as the shell prints it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::fmt;

use bytes::Bytes;

use basalt::admin::{
    AdminReply, AdminRequest, AlterChange, FamilyInfo, FamilySpec, ReadSpec, StatusReply,
};
use basalt::{ColumnFamilyDescriptor, NamespaceDescriptor, TableDescriptor};
use basalt_rpc::client::RpcClient;
use basalt_rpc::meta::table_name_proto;
use basalt_rpc::proto::cluster_status as cs;
use basalt_rpc::proto::hbase as pb;
use basalt_rpc::proto::master as m;
use basalt_thrift::thrift2::types::{TColumnFamilyDescriptor, TTableDescriptor, TTableName};
use basalt_thrift::{Client2, Protocol};

use common::Server;

/// The gateways, in the order of the table above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gateway {
    Thrift1,
    Thrift2,
    Rest,
    NativeRpc,
    Shell,
}

use Gateway::{NativeRpc, Rest, Shell, Thrift1, Thrift2};

impl Gateway {
    /// A name fit for a table or namespace of this gateway's own.
    fn tag(self) -> &'static str {
        match self {
            Thrift1 => "thrift1",
            Thrift2 => "thrift2",
            Rest => "rest",
            NativeRpc => "rpc",
            Shell => "shell",
        }
    }
}

/// What the observer sees of a table after an operation: everything but
/// its name and its regions' ids.
#[derive(Debug, Clone, PartialEq)]
struct TableOutcome {
    enabled: bool,
    /// `[start, end)` of each region, in key order.
    regions: Vec<(Bytes, Bytes)>,
    /// Families with every option, as `describe` shows them.
    families: Vec<FamilyInfo>,
    /// Row keys.
    rows: Vec<Bytes>,
}

/// A `basalt serve` with every gateway, and the observer's connection.
struct Fixture {
    server: Server,
    observer: basalt_thrift::Client,
    _dir: tempfile::TempDir,
}

/// Four rows, one in each region of a table split at `g`, `m`, `t`.
const ROWS: [&str; 4] = ["a", "h", "p", "x"];

impl Fixture {
    fn start() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let server = common::start(
            &[
                "--data-dir",
                data.to_str().unwrap(),
                "--thrift-port",
                "0",
                "--native-rpc",
                "--master-port",
                "0",
                "--region-server-port",
                "0",
            ],
            None,
        );
        let observer = common::thrift_client(&server);
        Fixture {
            server,
            observer,
            _dir: dir,
        }
    }

    /// One request through the observer (the core's `Admin::execute`).
    fn admin(&mut self, request: AdminRequest) -> AdminReply {
        self.observer
            .admin(request.clone())
            .unwrap_or_else(|e| panic!("{request:?}: {e}"))
    }

    /// Creates `table` with `families`, split at `splits`, holding
    /// [`ROWS`] in family `f` (when it has one).
    fn create(&mut self, table: &str, families: &[&str], splits: &[&str]) {
        self.admin(AdminRequest::Create {
            table: table.into(),
            families: families
                .iter()
                .map(|f| FamilySpec {
                    name: f.to_string(),
                    options: BTreeMap::new(),
                })
                .collect(),
            splits: splits.iter().map(|s| Bytes::from(s.to_string())).collect(),
            num_regions: None,
            split_algo: None,
        });
        if families.contains(&"f") {
            let batch = ROWS
                .iter()
                .map(|r| basalt_thrift::types::BatchMutation {
                    row: Some(Bytes::from(r.to_string())),
                    mutations: Some(vec![basalt_thrift::client::put(b"f:q", b"v")]),
                })
                .collect();
            self.observer.mutate_rows(table.as_bytes(), batch).unwrap();
        }
    }

    fn disable(&mut self, table: &str) {
        self.observer.disable_table(table.as_bytes()).unwrap();
    }

    /// The table as the observer sees it.
    fn observe(&mut self, table: &str) -> TableOutcome {
        let AdminReply::Table(t) = self.admin(AdminRequest::Describe {
            table: table.into(),
        }) else {
            panic!("describe answers a table");
        };
        let rows = if t.enabled {
            let AdminReply::Rows { rows, more, .. } = self.admin(AdminRequest::Read {
                table: table.into(),
                read: ReadSpec::default(),
            }) else {
                panic!("read answers rows");
            };
            assert!(!more, "a handful of rows fit one page");
            rows.into_iter().map(|r| r.row).collect()
        } else {
            Vec::new()
        };
        TableOutcome {
            enabled: t.enabled,
            regions: t
                .regions
                .iter()
                .map(|r| (r.start_key.clone(), r.end_key.clone()))
                .collect(),
            families: t.families,
            rows,
        }
    }

    /// The table's regions as (full name, encoded name), in key order.
    fn regions(&mut self, table: &str) -> Vec<(Bytes, String)> {
        let AdminReply::Regions { regions } = self.admin(AdminRequest::ListRegions {
            table: table.into(),
        }) else {
            panic!("list_regions answers regions");
        };
        regions
            .into_iter()
            .map(|r| (r.name, r.encoded_name))
            .collect()
    }

    /// The table's regions as ((full name, encoded name), start key).
    fn regions_with_starts(&mut self, table: &str) -> Vec<((Bytes, String), Bytes)> {
        let AdminReply::Regions { regions } = self.admin(AdminRequest::ListRegions {
            table: table.into(),
        }) else {
            panic!("list_regions answers regions");
        };
        regions
            .into_iter()
            .map(|r| ((r.name, r.encoded_name), r.start_key))
            .collect()
    }

    fn namespaces(&mut self) -> BTreeMap<String, BTreeMap<String, String>> {
        let AdminReply::Namespaces { namespaces } = self.admin(AdminRequest::ListNamespaces) else {
            panic!("list_namespace answers namespaces");
        };
        namespaces
            .into_iter()
            .map(|n| (n.name, n.properties))
            .collect()
    }

    fn balancer_enabled(&mut self) -> bool {
        let AdminReply::Switch { previous } = self.admin(AdminRequest::BalancerEnabled) else {
            panic!("balancer_enabled answers a switch");
        };
        previous
    }

    fn thrift2(&self) -> Client2 {
        let port = self.server.thrift2_port.unwrap();
        let mut c = Client2::connect(
            ("127.0.0.1", port),
            false,
            Protocol::Binary { strict: true },
        )
        .unwrap();
        c.connection()
            .set_timeout(Some(std::time::Duration::from_secs(120)))
            .unwrap();
        c
    }

    /// A call of HBase's `MasterService`.
    fn rpc(&self, method: &str, param: &impl prost::Message) -> basalt_rpc::client::CallResult {
        let port = self.server.master_port.unwrap();
        let mut c = RpcClient::connect(("127.0.0.1", port), "MasterService", false).unwrap();
        c.call(method, param, &[])
    }

    /// `basalt shell -e COMMANDS` against the server: its standard output
    /// (it must succeed).
    fn shell(&self, commands: &str) -> String {
        let mut args = common::remote_args(&self.server);
        args.extend(["-e".to_string(), commands.to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = common::shell(&args, "");
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            out.status.success(),
            "shell {commands:?} failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    fn rest(&self, method: &str, path: &str, body: &[u8]) -> (u16, String) {
        common::http(
            self.server.rest_port.unwrap(),
            method,
            path,
            "application/json",
            body,
        )
    }
}

/// Asserts that every gateway's outcome is `expected`, showing all of
/// them when one differs.
fn assert_all_equal<T: PartialEq + fmt::Debug>(
    what: &str,
    outcomes: &[(Gateway, T)],
    expected: &T,
) {
    let differing: Vec<Gateway> = outcomes
        .iter()
        .filter(|(_, o)| o != expected)
        .map(|(g, _)| *g)
        .collect();
    assert!(
        differing.is_empty(),
        "{what}: {differing:?} differ from the expected outcome\nexpected: {expected:#?}\n{}",
        outcomes
            .iter()
            .map(|(g, o)| format!("{g:?}: {o:#?}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn b(s: &str) -> Bytes {
    Bytes::from(s.to_string())
}

fn region_bounds(keys: &[&str]) -> Vec<(Bytes, Bytes)> {
    let mut bounds = Vec::new();
    let mut start = "";
    for k in keys.iter().copied().chain([""]) {
        bounds.push((b(start), b(k)));
        start = k;
    }
    bounds
}

fn table_request(table: &str) -> Option<pb::TableName> {
    Some(table_name_proto(table))
}

/// The region id of a full region name `<table>,<start>,<id>.<encoded>.`.
fn region_id(name: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(name);
    let (_, tail) = text.rsplit_once(',').unwrap();
    tail.split('.').next().unwrap().parse().unwrap()
}

fn encoded_spec(encoded: &str) -> pb::RegionSpecifier {
    pb::RegionSpecifier {
        r#type: pb::region_specifier::RegionSpecifierType::EncodedRegionName as i32,
        value: encoded.as_bytes().to_vec(),
    }
}

// ---- truncate ----

/// Truncates `table` (disabled) through `gateway`.
fn truncate(f: &Fixture, gateway: Gateway, table: &str, preserve_splits: bool) {
    match gateway {
        Thrift1 => {
            common::thrift_client(&f.server)
                .admin(AdminRequest::Truncate {
                    table: table.into(),
                    preserve_splits,
                })
                .unwrap();
        }
        Thrift2 => f.thrift2().truncate_table(table, preserve_splits).unwrap(),
        NativeRpc => {
            f.rpc(
                "truncateTable",
                &m::TruncateTableRequest {
                    table_name: table_request(table),
                    preserve_splits: Some(preserve_splits),
                },
            )
            .unwrap();
        }
        Shell => {
            let command = if preserve_splits {
                "truncate_preserve"
            } else {
                "truncate"
            };
            f.shell(&format!("{command} '{table}'"));
        }
        Rest => unreachable!("HBase's REST API has no truncate"),
    }
}

const TRUNCATE_GATEWAYS: [Gateway; 4] = [Thrift1, Thrift2, NativeRpc, Shell];

fn truncate_everywhere(preserve_splits: bool) -> (Vec<(Gateway, TableOutcome)>, TableOutcome) {
    let mut f = Fixture::start();
    let mut outcomes = Vec::new();
    let mut before = None;
    for gateway in TRUNCATE_GATEWAYS {
        let table = format!("truncate_{}", gateway.tag());
        f.create(&table, &["f", "g"], &["g", "m", "t"]);
        before.get_or_insert_with(|| f.observe(&table));
        f.disable(&table);
        truncate(&f, gateway, &table, preserve_splits);
        outcomes.push((gateway, f.observe(&table)));
    }
    (outcomes, before.unwrap())
}

#[test]
fn truncate_preserving_splits_empties_the_table_keeps_its_regions_and_enables_it_through_every_gateway(
) {
    let (outcomes, before) = truncate_everywhere(true);
    let expected = TableOutcome {
        enabled: true,
        regions: region_bounds(&["g", "m", "t"]),
        families: before.families.clone(),
        rows: Vec::new(),
    };
    assert_eq!(before.rows.len(), ROWS.len());
    assert_all_equal("truncate_preserve", &outcomes, &expected);
}

#[test]
fn truncate_without_preserving_splits_leaves_one_empty_enabled_region_through_every_gateway() {
    let (outcomes, before) = truncate_everywhere(false);
    let expected = TableOutcome {
        enabled: true,
        regions: region_bounds(&[]),
        families: before.families.clone(),
        rows: Vec::new(),
    };
    assert_all_equal("truncate", &outcomes, &expected);
}

/// HBase's `truncateTable` refuses an enabled table; the shell's
/// `truncate` is the one that disables it first (admin.rb), tested above.
#[test]
fn truncating_an_enabled_table_is_refused_by_every_wire_gateway_and_changes_nothing() {
    let mut f = Fixture::start();
    let mut outcomes = Vec::new();
    let mut expected = None;
    for gateway in [Thrift1, Thrift2, NativeRpc] {
        let table = format!("enabled_{}", gateway.tag());
        f.create(&table, &["f"], &["m"]);
        expected.get_or_insert_with(|| f.observe(&table));
        let refused = match gateway {
            Thrift1 => common::thrift_client(&f.server)
                .admin(AdminRequest::Truncate {
                    table: table.clone(),
                    preserve_splits: false,
                })
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Thrift2 => f
                .thrift2()
                .truncate_table(&table, false)
                .map_err(|e| e.to_string()),
            NativeRpc => f
                .rpc(
                    "truncateTable",
                    &m::TruncateTableRequest {
                        table_name: table_request(&table),
                        preserve_splits: Some(false),
                    },
                )
                .map(|_| ())
                .map_err(|e| e.to_string()),
            _ => unreachable!(),
        };
        let message = refused.expect_err("an enabled table is not truncated");
        assert!(
            message.contains("enabled") || message.contains("TableNotDisabled"),
            "{gateway:?}: {message}"
        );
        outcomes.push((gateway, f.observe(&table)));
    }
    let expected = expected.unwrap();
    assert_eq!(expected.rows.len(), ROWS.len());
    assert_all_equal("truncate of an enabled table", &outcomes, &expected);
}

// ---- alter ----

/// The alter every gateway sends: `f` keeps 5 versions, `g` is added with
/// a TTL of an hour, `old` is deleted.
fn alter(f: &Fixture, gateway: Gateway, table: &str) {
    match gateway {
        Thrift1 => {
            let set = |name: &str, option: &str, value: &str| AlterChange::Set {
                family: FamilySpec {
                    name: name.into(),
                    options: [(option.to_string(), value.to_string())].into(),
                },
            };
            common::thrift_client(&f.server)
                .admin(AdminRequest::Alter {
                    table: table.into(),
                    changes: vec![
                        set("f", "VERSIONS", "5"),
                        set("g", "TTL", "3600"),
                        AlterChange::Delete { name: "old".into() },
                    ],
                })
                .unwrap();
        }
        Thrift2 => {
            let family = |name: &str| TColumnFamilyDescriptor {
                name: Some(b(name)),
                ..TColumnFamilyDescriptor::default()
            };
            f.thrift2()
                .modify_table(TTableDescriptor {
                    table_name: Some(TTableName::of(table)),
                    columns: Some(vec![
                        TColumnFamilyDescriptor {
                            max_versions: Some(5),
                            ..family("f")
                        },
                        TColumnFamilyDescriptor {
                            time_to_live: Some(3600),
                            ..family("g")
                        },
                    ]),
                    attributes: None,
                    durability: None,
                })
                .unwrap();
        }
        Rest => {
            let body =
                br#"{"ColumnSchema":[{"name":"f","VERSIONS":"5"},{"name":"g","TTL":"3600"}]}"#;
            let (status, text) = f.rest("PUT", &format!("/{table}/schema"), body);
            assert!(status == 200 || status == 201, "{status}: {text}");
        }
        NativeRpc => {
            let descriptor = TableDescriptor::new(table)
                .family(ColumnFamilyDescriptor::new("f").max_versions(5))
                .family(ColumnFamilyDescriptor::new("g").ttl_seconds(3600));
            f.rpc(
                "ModifyTable",
                &m::ModifyTableRequest {
                    table_name: table_request(table),
                    table_schema: Some(basalt_rpc::schema::table_schema(&descriptor)),
                },
            )
            .unwrap();
        }
        Shell => {
            f.shell(&format!(
                "alter '{table}', {{NAME => 'f', VERSIONS => 5}}, {{NAME => 'g', TTL => 3600}}, {{NAME => 'old', METHOD => 'delete'}}"
            ));
        }
    }
}

#[test]
fn alter_sets_adds_and_deletes_families_alike_through_every_gateway() {
    let mut f = Fixture::start();
    let gateways = [Thrift1, Thrift2, Rest, NativeRpc, Shell];
    let mut outcomes = Vec::new();
    for gateway in gateways {
        let table = format!("alter_{}", gateway.tag());
        f.create(&table, &["f", "old"], &["m"]);
        alter(&f, gateway, &table);
        outcomes.push((gateway, f.observe(&table)));
    }
    // The expected families: the core's own descriptors for the result.
    let mut expected_families: Vec<FamilyInfo> = [
        ColumnFamilyDescriptor::new("f").max_versions(5),
        ColumnFamilyDescriptor::new("g").ttl_seconds(3600),
    ]
    .iter()
    .map(FamilyInfo::of)
    .collect();
    expected_families.sort_by(|a, b| a.name.cmp(&b.name));
    let expected = TableOutcome {
        enabled: true,
        regions: region_bounds(&["m"]),
        families: expected_families,
        rows: ROWS.iter().map(|r| b(r)).collect(),
    };
    assert_all_equal("alter", &outcomes, &expected);
}

// ---- split and merge ----

/// Splits the region of `table` that starts at `start` through
/// `gateway`, at `key` or, without one, where the server picks (near the
/// middle of the data): `Ok` or the refusal's text.
fn split(
    f: &mut Fixture,
    gateway: Gateway,
    table: &str,
    start: &str,
    key: Option<&str>,
) -> Result<(), String> {
    let (name, _) = f
        .regions_with_starts(table)
        .into_iter()
        .find(|(_, s)| s == start.as_bytes())
        .map(|(r, _)| r)
        .unwrap();
    match gateway {
        Thrift1 => common::thrift_client(&f.server)
            .admin(AdminRequest::Split {
                target: if start.is_empty() {
                    b(table)
                } else {
                    name.clone()
                },
                key: key.map(b),
            })
            .map(|_| ())
            .map_err(|e| e.to_string()),
        NativeRpc => f
            .rpc(
                "SplitRegion",
                &m::SplitTableRegionRequest {
                    region_info: Some(pb::RegionInfo {
                        region_id: region_id(&name),
                        table_name: table_request(table),
                        ..pb::RegionInfo::default()
                    }),
                    split_row: key.map(|k| k.as_bytes().to_vec()),
                },
            )
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Shell => {
            // HBase's shell takes a table or a region name; the region's
            // name here, as a client holding one would send it.
            let name = String::from_utf8(name.to_vec()).unwrap();
            match key {
                Some(key) => shell_result(f, &format!("split '{name}', '{key}'")),
                None => shell_result(f, &format!("split '{name}'")),
            }
        }
        _ => unreachable!("Thrift2 and REST have no split"),
    }
}

/// Merges the first two regions of `table` through `gateway`: `Ok` or
/// the refusal's text.
fn merge(f: &mut Fixture, gateway: Gateway, table: &str) -> Result<(), String> {
    let regions = f.regions(table);
    let (a, b_) = (regions[0].1.clone(), regions[1].1.clone());
    match gateway {
        Thrift1 => common::thrift_client(&f.server)
            .admin(AdminRequest::Merge {
                region_a: b(&a),
                region_b: b(&b_),
            })
            .map(|_| ())
            .map_err(|e| e.to_string()),
        NativeRpc => f
            .rpc(
                "MergeTableRegions",
                &m::MergeTableRegionsRequest {
                    region: vec![encoded_spec(&a), encoded_spec(&b_)],
                    forcible: Some(false),
                },
            )
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Shell => shell_result(f, &format!("merge_region '{a}', '{b_}'")),
        _ => unreachable!("Thrift2 and REST have no merge"),
    }
}

const SPLIT_GATEWAYS: [Gateway; 3] = [Thrift1, NativeRpc, Shell];

#[test]
fn split_at_a_key_gives_the_same_regions_and_rows_through_every_gateway() {
    let mut f = Fixture::start();
    let mut outcomes = Vec::new();
    for gateway in SPLIT_GATEWAYS {
        let table = format!("split_{}", gateway.tag());
        f.create(&table, &["f"], &[]);
        split(&mut f, gateway, &table, "", Some("m")).unwrap();
        outcomes.push((gateway, f.observe(&table)));
    }
    let families = f.observe("split_thrift1").families;
    let expected = TableOutcome {
        enabled: true,
        regions: region_bounds(&["m"]),
        families,
        rows: ROWS.iter().map(|r| b(r)).collect(),
    };
    assert_all_equal("split", &outcomes, &expected);
}

#[test]
fn split_without_a_key_cuts_at_the_same_row_through_every_gateway() {
    let mut f = Fixture::start();
    let mut outcomes = Vec::new();
    for gateway in SPLIT_GATEWAYS {
        let table = format!("midsplit_{}", gateway.tag());
        f.create(&table, &["f"], &[]);
        // The middle is found in store files, as HBase's is.
        f.admin(AdminRequest::Flush {
            table: table.clone(),
        });
        split(&mut f, gateway, &table, "", None).unwrap();
        outcomes.push((gateway, f.observe(&table)));
    }
    let first = outcomes[0].1.clone();
    assert_eq!(first.regions.len(), 2, "{first:?}");
    assert_eq!(first.rows.len(), ROWS.len());
    assert_all_equal("split without a key", &outcomes, &first);
}

#[test]
fn merging_two_adjacent_regions_gives_the_same_regions_and_rows_through_every_gateway() {
    let mut f = Fixture::start();
    let mut outcomes = Vec::new();
    for gateway in SPLIT_GATEWAYS {
        let table = format!("merge_{}", gateway.tag());
        f.create(&table, &["f"], &["g", "m"]);
        merge(&mut f, gateway, &table).unwrap_or_else(|e| panic!("{gateway:?}: {e}"));
        outcomes.push((gateway, f.observe(&table)));
    }
    let families = f.observe("merge_thrift1").families;
    let expected = TableOutcome {
        enabled: true,
        regions: region_bounds(&["m"]),
        families,
        rows: ROWS.iter().map(|r| b(r)).collect(),
    };
    assert_all_equal("merge", &outcomes, &expected);
}

/// Sets HBase's split and merge switches through native RPC, the only
/// gateway with the call (`SetSplitOrMergeEnabled`): their previous
/// values.
fn split_or_merge_switch(f: &Fixture, on: bool) -> Vec<bool> {
    let answer: m::SetSplitOrMergeEnabledResponse = f
        .rpc(
            "SetSplitOrMergeEnabled",
            &m::SetSplitOrMergeEnabledRequest {
                enabled: Some(on),
                synchronous: Some(true),
                switch_types: vec![
                    m::MasterSwitchType::Split as i32,
                    m::MasterSwitchType::Merge as i32,
                ],
            },
        )
        .unwrap()
        .decode()
        .unwrap();
    answer.prev_value
}

/// HBase's master refuses a split or merge a client asks for while its
/// switch is off, whichever client asks (the shell's `split` and
/// `merge_region` reach the same master calls).
#[test]
fn with_the_split_and_merge_switches_off_no_gateway_splits_or_merges() {
    let mut f = Fixture::start();
    for gateway in SPLIT_GATEWAYS {
        f.create(&format!("switched_{}", gateway.tag()), &["f"], &["g", "m"]);
    }
    assert_eq!(split_or_merge_switch(&f, false), [true, true]);
    let mut refusals = Vec::new();
    let mut outcomes = Vec::new();
    for gateway in SPLIT_GATEWAYS {
        let table = format!("switched_{}", gateway.tag());
        let split = split(&mut f, gateway, &table, "m", Some("t"));
        let merge = merge(&mut f, gateway, &table);
        refusals.push((
            gateway,
            (
                split.is_err_and(|e| e.contains("split switch is off")),
                merge.is_err_and(|e| e.contains("merge switch is off")),
            ),
        ));
        outcomes.push((gateway, f.observe(&table).regions));
    }
    assert_all_equal("refused while off", &refusals, &(true, true));
    assert_all_equal("regions while off", &outcomes, &region_bounds(&["g", "m"]));

    assert_eq!(split_or_merge_switch(&f, true), [false, false]);
    let mut outcomes = Vec::new();
    for gateway in SPLIT_GATEWAYS {
        let table = format!("switched_{}", gateway.tag());
        split(&mut f, gateway, &table, "m", Some("t")).unwrap();
        merge(&mut f, gateway, &table).unwrap();
        outcomes.push((gateway, f.observe(&table).regions));
    }
    assert_all_equal("regions once on", &outcomes, &region_bounds(&["m", "t"]));
}

// ---- namespaces ----

const NAMESPACE_GATEWAYS: [Gateway; 5] = [Thrift1, Thrift2, Rest, NativeRpc, Shell];

/// Creates namespace `ns` with the property `owner=ops` through `gateway`:
/// `Ok` or the refusal's text.
fn create_namespace(f: &Fixture, gateway: Gateway, ns: &str) -> Result<(), String> {
    let properties: BTreeMap<String, String> = [("owner".to_string(), "ops".to_string())].into();
    match gateway {
        Thrift1 => common::thrift_client(&f.server)
            .admin(AdminRequest::CreateNamespace {
                namespace: NamespaceDescriptor {
                    name: ns.into(),
                    properties,
                },
            })
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Thrift2 => f
            .thrift2()
            .create_namespace(ns, &properties)
            .map_err(|e| e.to_string()),
        Rest => match f.rest(
            "POST",
            &format!("/namespaces/{ns}"),
            br#"{"properties":{"owner":"ops"}}"#,
        ) {
            (201, _) => Ok(()),
            (status, text) => Err(format!("{status}: {text}")),
        },
        NativeRpc => f
            .rpc(
                "CreateNamespace",
                &m::NamespaceRequest {
                    namespace_descriptor: Some(pb::NamespaceDescriptor {
                        name: ns.as_bytes().to_vec(),
                        configuration: vec![pb::NameStringPair {
                            name: "owner".into(),
                            value: "ops".into(),
                        }],
                    }),
                },
            )
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Shell => shell_result(f, &format!("create_namespace '{ns}', {{'owner' => 'ops'}}")),
    }
}

/// Drops namespace `ns` through `gateway`: `Ok` or the refusal's text.
fn delete_namespace(f: &Fixture, gateway: Gateway, ns: &str) -> Result<(), String> {
    match gateway {
        Thrift1 => common::thrift_client(&f.server)
            .admin(AdminRequest::DropNamespace { name: ns.into() })
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Thrift2 => f.thrift2().delete_namespace(ns).map_err(|e| e.to_string()),
        Rest => match f.rest("DELETE", &format!("/namespaces/{ns}"), b"") {
            (200, _) => Ok(()),
            (status, text) => Err(format!("{status}: {text}")),
        },
        NativeRpc => f
            .rpc(
                "DeleteNamespace",
                &m::NamespaceNameRequest {
                    namespace_name: Some(ns.into()),
                },
            )
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Shell => shell_result(f, &format!("drop_namespace '{ns}'")),
    }
}

/// A shell command's success, or its output when it failed.
fn shell_result(f: &Fixture, command: &str) -> Result<(), String> {
    let mut args = common::remote_args(&f.server);
    args.extend(["-e".to_string(), command.to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = common::shell(&args, "");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

#[test]
fn namespaces_are_created_with_their_properties_and_deleted_alike_through_every_gateway() {
    let mut f = Fixture::start();
    let before = f.namespaces();
    for gateway in NAMESPACE_GATEWAYS {
        let ns = format!("ns_{}", gateway.tag());
        create_namespace(&f, gateway, &ns).unwrap_or_else(|e| panic!("{gateway:?}: {e}"));
    }
    let created = f.namespaces();
    let outcomes: Vec<(Gateway, Option<BTreeMap<String, String>>)> = NAMESPACE_GATEWAYS
        .iter()
        .map(|g| (*g, created.get(&format!("ns_{}", g.tag())).cloned()))
        .collect();
    let owned: BTreeMap<String, String> = [("owner".to_string(), "ops".to_string())].into();
    assert_all_equal("create_namespace", &outcomes, &Some(owned));

    for gateway in NAMESPACE_GATEWAYS {
        let ns = format!("ns_{}", gateway.tag());
        delete_namespace(&f, gateway, &ns).unwrap_or_else(|e| panic!("{gateway:?}: {e}"));
    }
    assert_eq!(
        f.namespaces(),
        before,
        "every namespace created was deleted"
    );
}

#[test]
fn creating_an_existing_namespace_and_deleting_one_with_tables_are_refused_through_every_gateway() {
    let mut f = Fixture::start();
    for gateway in NAMESPACE_GATEWAYS {
        let ns = format!("busy_{}", gateway.tag());
        f.admin(AdminRequest::CreateNamespace {
            namespace: NamespaceDescriptor {
                name: ns.clone(),
                properties: BTreeMap::new(),
            },
        });
        f.create(&format!("{ns}:t"), &["f"], &[]);
    }
    let before = f.namespaces();
    let mut created_again = Vec::new();
    let mut deleted = Vec::new();
    for gateway in NAMESPACE_GATEWAYS {
        let ns = format!("busy_{}", gateway.tag());
        created_again.push((gateway, create_namespace(&f, gateway, &ns).is_err()));
        deleted.push((gateway, delete_namespace(&f, gateway, &ns).is_err()));
    }
    assert_all_equal(
        "create of an existing namespace refused",
        &created_again,
        &true,
    );
    assert_all_equal("drop of a namespace with tables refused", &deleted, &true);
    assert_eq!(f.namespaces(), before, "nothing changed");
}

/// HBase's `modifyNamespace` (Thrift2's, REST's `PUT`, native RPC's)
/// replaces the namespace's properties with those sent: a key not sent is
/// removed. Thrift1's "ext" `alter_namespace` names both sides.
#[test]
fn modifying_a_namespace_replaces_its_properties_alike_through_every_gateway() {
    let mut f = Fixture::start();
    let gateways = [Thrift1, Thrift2, Rest, NativeRpc];
    let mut outcomes = Vec::new();
    for gateway in gateways {
        let ns = format!("mod_{}", gateway.tag());
        f.admin(AdminRequest::CreateNamespace {
            namespace: NamespaceDescriptor {
                name: ns.clone(),
                properties: [
                    ("owner".to_string(), "ops".to_string()),
                    ("tier".to_string(), "gold".to_string()),
                ]
                .into(),
            },
        });
        let wanted: BTreeMap<String, String> = [("owner".to_string(), "dev".to_string())].into();
        match gateway {
            Thrift1 => {
                common::thrift_client(&f.server)
                    .admin(AdminRequest::AlterNamespace {
                        name: ns.clone(),
                        set: wanted.clone(),
                        unset: vec!["tier".into()],
                    })
                    .unwrap();
            }
            Thrift2 => f.thrift2().modify_namespace(&ns, &wanted).unwrap(),
            Rest => {
                let (status, text) = f.rest(
                    "PUT",
                    &format!("/namespaces/{ns}"),
                    br#"{"properties":{"owner":"dev"}}"#,
                );
                assert_eq!(status, 200, "{text}");
            }
            NativeRpc => {
                f.rpc(
                    "ModifyNamespace",
                    &m::NamespaceRequest {
                        namespace_descriptor: Some(pb::NamespaceDescriptor {
                            name: ns.as_bytes().to_vec(),
                            configuration: vec![pb::NameStringPair {
                                name: "owner".into(),
                                value: "dev".into(),
                            }],
                        }),
                    },
                )
                .unwrap();
            }
            _ => unreachable!(),
        }
        outcomes.push((gateway, f.namespaces().get(&ns).cloned()));
    }
    let expected: BTreeMap<String, String> = [("owner".to_string(), "dev".to_string())].into();
    assert_all_equal("modifyNamespace", &outcomes, &Some(expected));
}

// ---- the balancer switch ----

/// Sets the balancer switch through `gateway`: the state before.
fn balance_switch(f: &Fixture, gateway: Gateway, on: bool) -> bool {
    match gateway {
        Thrift1 => match common::thrift_client(&f.server)
            .admin(AdminRequest::BalanceSwitch { on })
            .unwrap()
        {
            AdminReply::Switch { previous } => previous,
            other => panic!("unexpected {other:?}"),
        },
        NativeRpc => {
            let answer: m::BoolResponse = f
                .rpc("SetBalancerRunning", &m::SwitchRequest { on: Some(on) })
                .unwrap()
                .decode()
                .unwrap();
            answer
                .value
                .expect("SetBalancerRunning answers the previous value")
        }
        Shell => {
            let out = f.shell(&format!("balance_switch {on}"));
            let line = out
                .lines()
                .find_map(|l| l.strip_prefix("Previous balancer state : "))
                .unwrap_or_else(|| panic!("no previous state in {out}"));
            line.trim().parse().unwrap()
        }
        _ => unreachable!("Thrift2 and REST have no balancer switch"),
    }
}

#[test]
fn the_balancer_switch_answers_its_previous_state_and_sets_it_alike_through_every_gateway() {
    let mut f = Fixture::start();
    let mut outcomes = Vec::new();
    for gateway in [Thrift1, NativeRpc, Shell] {
        // Each gateway starts from the switch on.
        f.admin(AdminRequest::BalanceSwitch { on: true });
        let mut seen = Vec::new();
        for on in [false, false, true, true] {
            let previous = balance_switch(&f, gateway, on);
            seen.push((previous, f.balancer_enabled()));
        }
        outcomes.push((gateway, seen));
    }
    // (previous, as observed after): off from on, off again, on, on again.
    let expected = vec![(true, false), (false, false), (false, true), (true, true)];
    assert_all_equal("balance_switch", &outcomes, &expected);
}

// ---- status ----

/// What every gateway's status reports.
#[derive(Debug, Clone, PartialEq)]
struct StatusOutcome {
    live_servers: usize,
    dead_servers: usize,
    /// Regions of user tables.
    regions: usize,
    /// Reads and writes served, over those regions.
    requests: u64,
}

fn status_of(f: &Fixture, gateway: Gateway) -> StatusOutcome {
    match gateway {
        Thrift1 => {
            let AdminReply::Status(s) = common::thrift_client(&f.server)
                .admin(AdminRequest::Status)
                .unwrap()
            else {
                panic!("status answers a status");
            };
            let StatusReply {
                regions,
                read_requests,
                write_requests,
                cluster,
                ..
            } = s;
            assert!(cluster.is_none(), "one process");
            StatusOutcome {
                live_servers: 1,
                dead_servers: 0,
                regions,
                requests: read_requests + write_requests,
            }
        }
        Rest => {
            let (status, text) = f.rest("GET", "/status/cluster", b"");
            assert_eq!(status, 200, "{text}");
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            let nodes = json["LiveNodes"].as_array().unwrap();
            let regions = nodes
                .iter()
                .map(|n| n["Region"].as_array().unwrap().len())
                .sum::<usize>();
            assert_eq!(json["regions"].as_u64().unwrap() as usize, regions);
            StatusOutcome {
                live_servers: nodes.len(),
                dead_servers: json["DeadNodes"].as_array().unwrap().len(),
                regions,
                requests: json["requests"].as_u64().unwrap(),
            }
        }
        NativeRpc => {
            let answer: cs::GetClusterStatusResponse = f
                .rpc(
                    "GetClusterStatus",
                    &cs::GetClusterStatusRequest {
                        options: Vec::new(),
                    },
                )
                .unwrap()
                .decode()
                .unwrap();
            let status = answer.cluster_status.unwrap();
            let loads: Vec<&cs::RegionLoad> = status
                .live_servers
                .iter()
                .flat_map(|s| &s.server_load.as_ref().unwrap().region_loads)
                .collect();
            let user = loads
                .iter()
                .filter(|l| {
                    !l.region_specifier
                        .as_ref()
                        .unwrap()
                        .value
                        .starts_with(b"hbase:")
                })
                .count();
            assert_eq!(loads.len() - user, 2, "hbase:meta and hbase:namespace");
            StatusOutcome {
                live_servers: status.live_servers.len(),
                dead_servers: status.dead_servers.len(),
                regions: user,
                requests: status
                    .live_servers
                    .iter()
                    .map(|s| {
                        s.server_load
                            .as_ref()
                            .unwrap()
                            .total_number_of_requests
                            .unwrap_or(0)
                    })
                    .sum(),
            }
        }
        Shell => {
            let out = f.shell("status 'simple'");
            let number = |line: &str, key: &str| -> u64 {
                line.split(", ")
                    .find_map(|p| p.trim().strip_prefix(&format!("{key}=")))
                    .unwrap_or_else(|| panic!("no {key} in {line}"))
                    .parse()
                    .unwrap()
            };
            let count = |suffix: &str| -> usize {
                out.lines()
                    .find_map(|l| l.strip_suffix(suffix))
                    .unwrap_or_else(|| panic!("no '{suffix}' in {out}"))
                    .trim()
                    .parse()
                    .unwrap()
            };
            let server = out
                .lines()
                .find(|l| l.contains("numberOfOnlineRegions="))
                .unwrap_or_else(|| panic!("no server line in {out}"));
            StatusOutcome {
                live_servers: count(" live servers"),
                dead_servers: count(" dead servers"),
                regions: number(server, "numberOfOnlineRegions") as usize,
                requests: number(server, "readRequestsCount")
                    + number(server, "writeRequestsCount"),
            }
        }
        Thrift2 => unreachable!("Thrift2 has no status"),
    }
}

#[test]
fn status_reports_the_same_servers_regions_and_requests_through_every_gateway() {
    let mut f = Fixture::start();
    f.create("status_a", &["f"], &["g", "m", "t"]);
    f.create("status_b", &["f"], &[]);
    // Some reads, so that the counters are not all writes.
    f.observe("status_a");
    f.observe("status_b");
    let outcomes: Vec<(Gateway, StatusOutcome)> = [Thrift1, Rest, NativeRpc, Shell]
        .iter()
        .map(|g| (*g, status_of(&f, *g)))
        .collect();
    let expected = StatusOutcome {
        live_servers: 1,
        dead_servers: 0,
        regions: 5,
        requests: outcomes[0].1.requests,
    };
    assert!(expected.requests >= 2 * ROWS.len() as u64, "{outcomes:?}");
    assert_all_equal("status", &outcomes, &expected);
}
