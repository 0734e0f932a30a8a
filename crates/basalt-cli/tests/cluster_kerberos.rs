//! A cluster under Kerberos (docs/security.md, "Kerberos"): real `basalt
//! master` and `basalt regionserver` processes whose native RPC takes
//! Kerberos only, with `privacy`, so every call between them (assignment,
//! region calls, the catalog) authenticates as the servers' principal,
//! and clients are checked as the user their tickets prove. A grant and
//! a revoke made through one server reach every server. The times are
//! printed, never asserted (the waits are hang guards).
#![cfg(feature = "kerberos")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use basalt_kerberos::testing::{ThrowawayKdc, REALM};
use basalt_kerberos::Qop;
use basalt_rpc::client::{KerberosClient, RpcClient};
use basalt_rpc::proto::access_control as acl;
use basalt_rpc::RpcError;

#[path = "common/cluster.rs"]
mod cluster_support;
use cluster_support::TestCluster;
#[path = "common/access.rs"]
mod access;
use access::{
    change, put_row, read_row, table_over_every_server_writing, until_every_server, DENIED,
};

fn server_principal() -> String {
    format!("hbase/localhost@{REALM}")
}

fn as_user(principal: &str) -> KerberosClient {
    KerberosClient {
        server_principal: server_principal(),
        protection: vec![Qop::Privacy],
        client_principal: Some(principal.to_string()),
    }
}

/// `bob`, authenticated by his keytab, reads through the region server
/// `port`.
fn read_as_bob(port: u16, region: &str, row: &str) -> Result<usize, RpcError> {
    let mut c = RpcClient::connect_kerberos(
        ("127.0.0.1", port),
        "ClientService",
        false,
        &as_user(&ThrowawayKdc::principal("bob")),
        None,
    )?;
    read_row(&mut c, region, row)
}

#[test]
fn a_kerberos_cluster_runs_and_a_revoke_reaches_every_server() {
    let kdc = ThrowawayKdc::get();
    // The test's own calls to the master (status, create) are the
    // servers' principal's, a superuser, as an operator's tool would be.
    basalt_rpc::client::set_process_kerberos(as_user(&server_principal()));
    let cluster = TestCluster::builder()
        .extra_config(&format!(
            "[security]\nauthorization = true\nauthentication = \"kerberos\"\nsuperusers = [\"alice\"]\n\n[security.kerberos]\nprincipal = \"{}\"\nhttp_principal = \"HTTP/localhost@{REALM}\"\nkeytab = \"{}\"\nrpc_protection = [\"privacy\"]\n",
            server_principal(),
            kdc.server_keytab.display()
        ))
        .start();
    // Thrift takes Kerberos too: alice writes the rows over native RPC.
    let held = table_over_every_server_writing(&cluster, |i, region, row| {
        let port = cluster.server(i).port("rpc-region-server");
        let mut alice = RpcClient::connect_kerberos(
            ("127.0.0.1", port),
            "ClientService",
            false,
            &as_user(&ThrowawayKdc::principal("alice")),
            None,
        )
        .unwrap();
        put_row(&mut alice, region, row).unwrap();
    });
    // A client that does not authenticate gets nothing from any server.
    for (i, (region, row)) in held.iter().enumerate() {
        let port = cluster.server(i).port("rpc-region-server");
        let refused =
            RpcClient::connect_as(("127.0.0.1", port), "ClientService", false, "alice", None)
                .and_then(|mut c| read_row(&mut c, region, row))
                .unwrap_err();
        assert_eq!(refused.class, DENIED, "server {i}: {refused}");
    }
    until_every_server(&cluster, &held, false, Instant::now(), read_as_bob);
    // alice, a superuser by her ticket, grants bob read through one
    // server, then revokes it.
    let via = cluster.server(1).port("rpc-master");
    let mut alice = RpcClient::connect_kerberos(
        ("127.0.0.1", via),
        "MasterService",
        false,
        &as_user(&ThrowawayKdc::principal("alice")),
        None,
    )
    .unwrap();
    let granted = Instant::now();
    change(&mut alice, "Grant", "bob", &[acl::Action::Read]);
    until_every_server(&cluster, &held, true, granted, read_as_bob);
    let revoked = Instant::now();
    change(&mut alice, "Revoke", "bob", &[]);
    until_every_server(&cluster, &held, false, revoked, read_as_bob);

    // `basalt compare` reads through Kerberos too, as the ticket cache's
    // principal (alice, by `kinit`), here the table against itself.
    let cache = format!("FILE:{}", cluster.dir.path().join("alice.ccache").display());
    let kinit = std::process::Command::new("kinit")
        .env("KRB5CCNAME", &cache)
        .arg("-kt")
        .arg(&kdc.client_keytab)
        .arg(ThrowawayKdc::principal("alice"))
        .status()
        .unwrap();
    assert!(kinit.success());
    let quorum = cluster.zk_connect_string();
    let compared = std::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
        .env("KRB5CCNAME", &cache)
        .env_remove("KRB5_CLIENT_KTNAME")
        .args(["compare", "t", "--zookeeper", &quorum, "--with", &quorum])
        .args(["--kerberos-principal", &format!("hbase/_HOST@{REALM}")])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&compared.stdout);
    assert!(
        compared.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&compared.stderr)
    );
    assert!(report.contains("equal"), "{report}");
}
