//! Access control through native RPC (`docs/security.md`): the caller is
//! the user a connection header names; every call is checked in the core
//! for it; the permission methods HBase 2.x clients use grant, revoke and
//! list; and nothing is written by a refused call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use basalt::{ColumnFamilyDescriptor, Get as CoreGet, Put, SecurityOptions, TableDescriptor};
use basalt_rpc::client::RpcClient;
use basalt_rpc::proto::access_control as acl;
use basalt_rpc::proto::client::{Get, GetRequest, GetResponse};
use basalt_rpc::proto::master::Empty;
use basalt_rpc::{RpcConfig, RpcError};
use bytes::Bytes;

mod common;
use common::Fixture;

const DENIED: &str = "org.apache.hadoop.hbase.security.AccessDeniedException";

fn security() -> SecurityOptions {
    SecurityOptions {
        authorization: true,
        server_user: Some("admin".into()),
        ..SecurityOptions::default()
    }
}

/// A server with authorization on over a database holding `t` (family
/// `cf`, one row `r`).
fn start(security: SecurityOptions) -> Fixture {
    common::start_serving_secured(RpcConfig::default(), security, |db| {
        db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")))
            .unwrap();
        db.table("t")
            .unwrap()
            .put(&Put::new("r").add("cf", "q", "v"))
            .unwrap();
    })
}

fn region_server(f: &Fixture, user: &str) -> RpcClient {
    RpcClient::connect_as(
        f.server.region_server_addr(),
        "ClientService",
        false,
        user,
        None,
    )
    .unwrap()
}

fn master(f: &Fixture, user: &str) -> RpcClient {
    RpcClient::connect_as(f.server.master_addr(), "MasterService", false, user, None).unwrap()
}

fn get(f: &Fixture, c: &mut RpcClient) -> Result<usize, RpcError> {
    let region = f.db.describe_table("t").unwrap().regions[0]
        .info
        .region_name();
    let answer = c.call(
        "Get",
        &GetRequest {
            region: common::region(&region),
            get: Some(Get {
                row: Bytes::from_static(b"r"),
                ..Default::default()
            }),
        },
        &[],
    )?;
    let response: GetResponse = answer.decode()?;
    Ok(response.result.unwrap_or_default().cell.len())
}

fn table_permission(user: &str, actions: &[acl::Action]) -> acl::UserPermission {
    acl::UserPermission {
        user: Some(user.as_bytes().to_vec()),
        permission: Some(acl::Permission {
            r#type: Some(acl::PermissionType::Table as i32),
            table_permission: Some(acl::TablePermission {
                table_name: Some(basalt_rpc::meta::table_name_proto("t")),
                family: None,
                qualifier: None,
                action: actions.iter().map(|a| *a as i32).collect(),
            }),
            ..Default::default()
        }),
    }
}

fn grant(c: &mut RpcClient, permission: acl::UserPermission) -> Result<(), RpcError> {
    c.call(
        "Grant",
        &acl::GrantRequest {
            user_permission: Some(permission),
            merge_existing_permissions: Some(true),
        },
        &[],
    )?
    .decode::<Empty>()
    .map(drop)
}

#[test]
fn a_caller_reads_only_after_a_grant_and_not_after_its_revoke() {
    let f = start(security());
    let mut bob = region_server(&f, "bob");
    let refused = get(&f, &mut bob).unwrap_err();
    assert_eq!(refused.class, DENIED);
    assert!(
        refused
            .message
            .contains("Insufficient permissions for user 'bob'"),
        "{refused:?}"
    );
    // bob cannot grant himself anything.
    let mut bob_master = master(&f, "bob");
    let refused = grant(
        &mut bob_master,
        table_permission("bob", &[acl::Action::Read]),
    )
    .unwrap_err();
    assert_eq!(refused.class, DENIED);
    let mut admin = master(&f, "admin");
    grant(&mut admin, table_permission("bob", &[acl::Action::Read])).unwrap();
    assert_eq!(get(&f, &mut bob).unwrap(), 1);
    let listed: acl::GetUserPermissionsResponse = admin
        .call(
            "GetUserPermissions",
            &acl::GetUserPermissionsRequest {
                r#type: Some(acl::PermissionType::Table as i32),
                table_name: Some(basalt_rpc::meta::table_name_proto("t")),
                ..Default::default()
            },
            &[],
        )
        .unwrap()
        .decode()
        .unwrap();
    assert_eq!(
        listed.user_permission,
        [table_permission("bob", &[acl::Action::Read])]
    );
    let held: acl::HasUserPermissionsResponse = bob_master
        .call(
            "HasUserPermissions",
            &acl::HasUserPermissionsRequest {
                user_name: None,
                permission: vec![
                    table_permission("bob", &[acl::Action::Read])
                        .permission
                        .unwrap(),
                    table_permission("bob", &[acl::Action::Write])
                        .permission
                        .unwrap(),
                ],
            },
            &[],
        )
        .unwrap()
        .decode()
        .unwrap();
    assert_eq!(held.has_user_permission, [true, false]);
    admin
        .call(
            "Revoke",
            &acl::RevokeRequest {
                user_permission: Some(table_permission("bob", &[])),
            },
            &[],
        )
        .unwrap();
    assert_eq!(get(&f, &mut bob).unwrap_err().class, DENIED);
}

#[test]
fn a_refused_write_writes_nothing() {
    let f = start(security());
    let mut bob = region_server(&f, "bob");
    let region = f.db.describe_table("t").unwrap().regions[0]
        .info
        .region_name();
    let put = basalt_rpc::proto::client::MutateRequest {
        region: common::region(&region),
        mutation: Some(basalt_rpc::proto::client::MutationProto {
            row: Some(Bytes::from_static(b"new")),
            mutate_type: Some(basalt_rpc::proto::client::mutation_proto::MutationType::Put as i32),
            column_value: vec![basalt_rpc::proto::client::mutation_proto::ColumnValue {
                family: Bytes::from_static(b"cf"),
                qualifier_value: vec![
                    basalt_rpc::proto::client::mutation_proto::column_value::QualifierValue {
                        qualifier: Some(Bytes::from_static(b"q")),
                        value: Some(Bytes::from_static(b"v")),
                        ..Default::default()
                    },
                ],
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let refused = bob.call("Mutate", &put, &[]).unwrap_err();
    assert_eq!(refused.class, DENIED);
    let row = f.db.table("t").unwrap().get(&CoreGet::new("new")).unwrap();
    assert!(row.is_empty());
}

#[test]
fn connections_that_name_no_user_impersonate_without_right_or_reach_internal_services_are_refused()
{
    let f = start(security());
    let addr = f.server.region_server_addr();
    let mut nobody = RpcClient::connect_as(addr, "ClientService", false, "", None).unwrap();
    let refused = get(&f, &mut nobody).unwrap_err();
    assert!(refused.message.contains("names no user"), "{refused:?}");
    let mut acting =
        RpcClient::connect_as(addr, "ClientService", false, "admin", Some("bob")).unwrap();
    let refused = get(&f, &mut acting).unwrap_err();
    assert!(
        refused.message.contains("may not act as 'admin'"),
        "{refused:?}"
    );
    let mut internal =
        RpcClient::connect_as(addr, "BasaltClusterService", false, "bob", None).unwrap();
    let refused = internal.call("ClosedThrough", &Empty {}, &[]).unwrap_err();
    assert!(
        refused.message.contains("BasaltClusterService"),
        "{refused:?}"
    );
    // A superuser may act for another user, who is then the caller.
    let mut proxied =
        RpcClient::connect_as(addr, "ClientService", false, "bob", Some("admin")).unwrap();
    assert_eq!(get(&f, &mut proxied).unwrap_err().class, DENIED);
    // Kerberos principals are named by their short name.
    let mut admin =
        RpcClient::connect_as(addr, "ClientService", false, "admin/host@REALM", None).unwrap();
    assert_eq!(get(&f, &mut admin).unwrap(), 1);
}

#[test]
fn security_capabilities_say_whether_grants_are_checked_and_permission_calls_need_them_on() {
    let on = start(security());
    let answer: acl::SecurityCapabilitiesResponse = master(&on, "bob")
        .call("getSecurityCapabilities", &Empty {}, &[])
        .unwrap()
        .decode()
        .unwrap();
    assert_eq!(
        answer.capabilities,
        [
            acl::Capability::SimpleAuthentication as i32,
            acl::Capability::Authorization as i32
        ]
    );
    let off = start(SecurityOptions::default());
    let mut anyone = master(&off, "bob");
    let answer: acl::SecurityCapabilitiesResponse = anyone
        .call("getSecurityCapabilities", &Empty {}, &[])
        .unwrap()
        .decode()
        .unwrap();
    assert_eq!(
        answer.capabilities,
        [acl::Capability::SimpleAuthentication as i32]
    );
    let refused = grant(&mut anyone, table_permission("bob", &[acl::Action::Read])).unwrap_err();
    assert!(
        refused.message.contains("authorization = true"),
        "{refused:?}"
    );
    // With access control off, everyone reads.
    assert_eq!(get(&off, &mut region_server(&off, "bob")).unwrap(), 1);
}
