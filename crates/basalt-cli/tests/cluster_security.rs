//! Access control in a cluster (`docs/security.md`): every region server
//! checks the requests it receives against the grants in the catalog it
//! follows, so a grant or revoke made through one server reaches every
//! server. Real `basalt master` and `basalt regionserver` processes and a
//! real ZooKeeper; the time each server took is printed, never asserted
//! (the waits are hang guards).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use basalt::cluster::{MasterAnswer, MasterCall};
use basalt::{ColumnFamilyDescriptor, TableDescriptor};
use basalt_rpc::client::RpcClient;
use basalt_rpc::proto::access_control as acl;
use basalt_rpc::proto::client::{Get, GetRequest, GetResponse};
use basalt_rpc::proto::hbase::region_specifier::RegionSpecifierType;
use basalt_rpc::proto::hbase::RegionSpecifier;
use basalt_rpc::RpcError;
use bytes::Bytes;

#[path = "common/cluster.rs"]
mod cluster_support;
use cluster_support::{thrift_put, TestCluster, READY_LIMIT};

const DENIED: &str = "org.apache.hadoop.hbase.security.AccessDeniedException";

/// `bob` reads row `row` of `t` through the region server `port`.
fn read_as_bob(port: u16, region: &str, row: &str) -> Result<usize, RpcError> {
    let mut c = RpcClient::connect_as(("127.0.0.1", port), "ClientService", false, "bob", None)?;
    let answer = c.call(
        "Get",
        &GetRequest {
            region: Some(RegionSpecifier {
                r#type: RegionSpecifierType::EncodedRegionName as i32,
                value: region.as_bytes().to_vec(),
            }),
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

fn change(port: u16, method: &str, actions: &[acl::Action]) {
    let permission = acl::UserPermission {
        user: Some(b"bob".to_vec()),
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
    // The test process is the server user (every process defaults to the
    // same USER), a superuser.
    let mut master = RpcClient::connect(("127.0.0.1", port), "MasterService", false).unwrap();
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
fn one_region_per_server(cluster: &TestCluster) -> Vec<(String, String)> {
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

/// Waits until `bob`'s read through each region server gives `allowed`;
/// prints how long each took after `since`.
fn until_every_server(
    cluster: &TestCluster,
    held: &[(String, String)],
    allowed: bool,
    since: Instant,
) {
    for (i, (region, row)) in held.iter().enumerate() {
        let port = cluster.server(i).port("rpc-region-server");
        let deadline = Instant::now() + READY_LIMIT;
        loop {
            let outcome = read_as_bob(port, region, row);
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

#[test]
fn a_grant_and_a_revoke_made_through_one_server_reach_every_server() {
    let cluster = TestCluster::builder()
        .extra_config("[security]\nauthorization = true\n")
        .start();
    // Six regions over three servers: each server holds some.
    let created = cluster.master_call(MasterCall::CreateTable {
        descriptor: TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")),
        splits: ["b", "d", "f", "h", "j"].map(Bytes::from).to_vec(),
        owner: None,
    });
    assert!(matches!(created, Ok(MasterAnswer::Done)), "{created:?}");
    cluster.wait_until_settled();
    let held = one_region_per_server(&cluster);
    // Thrift acts as the server user: the rows are written.
    for (_, row) in &held {
        thrift_put(&mut cluster.thrift(0), "t", row).unwrap();
    }
    // Before any grant, every server refuses bob.
    until_every_server(&cluster, &held, false, Instant::now());
    let via = cluster.server(1).port("rpc-master");
    let granted = Instant::now();
    change(via, "Grant", &[acl::Action::Read]);
    until_every_server(&cluster, &held, true, granted);
    let revoked = Instant::now();
    change(via, "Revoke", &[]);
    until_every_server(&cluster, &held, false, revoked);
    // And it stays refused.
    for (i, (region, row)) in held.iter().enumerate() {
        let port = cluster.server(i).port("rpc-region-server");
        let refused = read_as_bob(port, region, row).unwrap_err();
        assert_eq!(refused.class, DENIED, "server {i}");
    }
}
