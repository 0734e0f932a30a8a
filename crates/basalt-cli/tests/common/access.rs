//! Access checks shared by the cluster security tests: which region of
//! `t` each server holds, reads through one server, grants and revokes,
//! and waiting until every server sees a change.
// Each test file uses some of these.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use basalt_rpc::client::RpcClient;
use basalt_rpc::proto::access_control as acl;
use basalt_rpc::proto::client::{Get, GetRequest, GetResponse};
use basalt_rpc::proto::hbase::region_specifier::RegionSpecifierType;
use basalt_rpc::proto::hbase::RegionSpecifier;
use basalt_rpc::RpcError;
use bytes::Bytes;

use basalt::cluster::{MasterAnswer, MasterCall};
use basalt::{ColumnFamilyDescriptor, TableDescriptor};

use super::cluster_support::{thrift_put, TestCluster, READY_LIMIT};

pub const DENIED: &str = "org.apache.hadoop.hbase.security.AccessDeniedException";

/// The region whose encoded name is `region`.
fn encoded(region: &str) -> Option<RegionSpecifier> {
    Some(RegionSpecifier {
        r#type: RegionSpecifierType::EncodedRegionName as i32,
        value: region.as_bytes().to_vec(),
    })
}

/// Reads row `row` of region `region` (encoded name) on connection `c`;
/// answers the cells found.
pub fn read_row(c: &mut RpcClient, region: &str, row: &str) -> Result<usize, RpcError> {
    let answer = c.call(
        "Get",
        &GetRequest {
            region: encoded(region),
            get: Some(Get {
                row: Bytes::from(row.to_string()),
                ..Default::default()
            }),
        },
        &[],
    )?;
    let response: GetResponse = answer.decode()?;
    Ok(response.result.unwrap_or_default().cell.len())
}

/// Grants (`"Grant"`) or revokes (anything else) `actions` on `t` to
/// `user` through the master connection `master`.
pub fn change(master: &mut RpcClient, method: &str, user: &str, actions: &[acl::Action]) {
    let permission = acl::UserPermission {
        user: Some(user.as_bytes().to_vec()),
        permission: Some(acl::Permission {
            r#type: Some(acl::PermissionType::Table as i32),
            table_permission: Some(acl::TablePermission {
                table_name: Some(basalt_rpc::meta::table_name_proto("t")),
                action: actions.iter().map(|a| *a as i32).collect(),
                ..Default::default()
            }),
            ..Default::default()
        }),
    };
    match method {
        "Grant" => master.call(
            "Grant",
            &acl::GrantRequest {
                user_permission: Some(permission),
                merge_existing_permissions: Some(false),
            },
            &[],
        ),
        _ => master.call(
            "Revoke",
            &acl::RevokeRequest {
                user_permission: Some(permission),
            },
            &[],
        ),
    }
    .unwrap();
}

/// For each region server, in order: a region of `t` it holds (encoded
/// name) and a row of that region.
pub fn one_region_per_server(cluster: &TestCluster) -> Vec<(String, String)> {
    let catalog = cluster.catalog_json();
    let regions: Vec<(String, String)> = catalog["tables"]["t"]["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let bytes = |v: &serde_json::Value| -> Bytes {
                v.as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b.as_u64().unwrap() as u8)
                    .collect::<Vec<u8>>()
                    .into()
            };
            let info = basalt::RegionInfo {
                id: r["id"].as_u64().unwrap(),
                table: "t".into(),
                start_key: bytes(&r["start_key"]),
                end_key: bytes(&r["end_key"]),
            };
            // A row inside the region: its first key and a digit (the
            // first region's keys are below "b").
            let row = match &info.start_key[..] {
                [] => "a0".to_string(),
                start => format!("{}0", String::from_utf8_lossy(start)),
            };
            (info.encoded_name(), row)
        })
        .collect();
    let status = cluster.status();
    (0..3)
        .map(|i| {
            let name = &cluster.server(i).name;
            let held = &status
                .servers
                .iter()
                .find(|s| &s.name == name)
                .unwrap_or_else(|| panic!("server {name} is not live"))
                .regions;
            regions
                .iter()
                .find(|(encoded, _)| held.contains(encoded))
                .unwrap_or_else(|| panic!("server {name} holds no region of t: {held:?}"))
                .clone()
        })
        .collect()
}

/// Waits until `read` (a read through the region server on a port) gives
/// `allowed` on each region server; prints how long each took after
/// `since`.
pub fn until_every_server(
    cluster: &TestCluster,
    held: &[(String, String)],
    allowed: bool,
    since: Instant,
    read: impl Fn(u16, &str, &str) -> Result<usize, RpcError>,
) {
    for (i, (region, row)) in held.iter().enumerate() {
        let port = cluster.server(i).port("rpc-region-server");
        let deadline = Instant::now() + READY_LIMIT;
        loop {
            let outcome = read(port, region, row);
            let seen = match &outcome {
                Ok(cells) => {
                    assert_eq!(*cells, 1, "bob's allowed read through server {i}");
                    allowed
                }
                Err(e) if e.class == DENIED => !allowed,
                Err(e) => panic!("server {i} answered {e:?}"),
            };
            if seen {
                eprintln!(
                    "server {i} {} bob after {:?}",
                    if allowed { "allows" } else { "refuses" },
                    since.elapsed()
                );
                break;
            }
            assert!(Instant::now() < deadline, "server {i} never saw the change");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Writes `cf:q = v` to row `row` of region `region` (encoded name) on
/// connection `c`.
pub fn put_row(c: &mut RpcClient, region: &str, row: &str) -> Result<(), RpcError> {
    use basalt_rpc::proto::client::{mutation_proto, MutateRequest, MutationProto};
    let column = mutation_proto::ColumnValue {
        family: Bytes::from_static(b"cf"),
        qualifier_value: vec![mutation_proto::column_value::QualifierValue {
            qualifier: Some(Bytes::from_static(b"q")),
            value: Some(Bytes::from_static(b"v")),
            ..Default::default()
        }],
    };
    c.call(
        "Mutate",
        &MutateRequest {
            region: encoded(region),
            mutation: Some(MutationProto {
                row: Some(Bytes::from(row.to_string())),
                mutate_type: Some(mutation_proto::MutationType::Put as i32),
                column_value: vec![column],
                ..Default::default()
            }),
            ..Default::default()
        },
        &[],
    )
    .map(|_| ())
}

/// Creates `t` (family `cf`) in six regions over the three servers, writes
/// a row into one region each server holds (through Thrift, which acts as
/// the server user), and answers those regions and rows, by server.
pub fn table_over_every_server(cluster: &TestCluster) -> Vec<(String, String)> {
    table_over_every_server_writing(cluster, |_, _, row| {
        thrift_put(&mut cluster.thrift(0), "t", row).unwrap()
    })
}

/// [`table_over_every_server`], each row written by `write` (the server's
/// index, the region, the row).
pub fn table_over_every_server_writing(
    cluster: &TestCluster,
    write: impl Fn(usize, &str, &str),
) -> Vec<(String, String)> {
    let created = cluster.master_call(MasterCall::CreateTable {
        descriptor: TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")),
        splits: ["b", "d", "f", "h", "j"].map(Bytes::from).to_vec(),
        owner: None,
    });
    assert!(matches!(created, Ok(MasterAnswer::Done)), "{created:?}");
    cluster.wait_until_settled();
    let held = one_region_per_server(cluster);
    for (i, (region, row)) in held.iter().enumerate() {
        write(i, region, row);
    }
    held
}
