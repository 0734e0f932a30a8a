//! Access control in a cluster (`docs/security.md`): every region server
//! checks the requests it receives against the grants in the catalog it
//! follows, so a grant or revoke made through one server reaches every
//! server. Real `basalt master` and `basalt regionserver` processes and a
//! real ZooKeeper; the time each server took is printed, never asserted
//! (the waits are hang guards).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use basalt_rpc::client::RpcClient;
use basalt_rpc::proto::access_control as acl;
use basalt_rpc::RpcError;

#[path = "common/cluster.rs"]
mod cluster_support;
use cluster_support::TestCluster;
#[path = "common/access.rs"]
mod access;
use access::{change, read_row, table_over_every_server, until_every_server, DENIED};

/// `bob` reads row `row` of `t` through the region server `port`, named
/// by his connection header (simple authentication).
fn read_as_bob(port: u16, region: &str, row: &str) -> Result<usize, RpcError> {
    let mut c = RpcClient::connect_as(("127.0.0.1", port), "ClientService", false, "bob", None)?;
    read_row(&mut c, region, row)
}

fn change_bob(port: u16, method: &str, actions: &[acl::Action]) {
    // The test process is the server user (every process defaults to the
    // same USER), a superuser.
    let mut master = RpcClient::connect(("127.0.0.1", port), "MasterService", false).unwrap();
    change(&mut master, method, "bob", actions);
}

#[test]
fn a_grant_and_a_revoke_made_through_one_server_reach_every_server() {
    let cluster = TestCluster::builder()
        .extra_config("[security]\nauthorization = true\n")
        .start();
    let held = table_over_every_server(&cluster);
    // Before any grant, every server refuses bob.
    until_every_server(&cluster, &held, false, Instant::now(), read_as_bob);
    let via = cluster.server(1).port("rpc-master");
    let granted = Instant::now();
    change_bob(via, "Grant", &[acl::Action::Read]);
    until_every_server(&cluster, &held, true, granted, read_as_bob);
    let revoked = Instant::now();
    change_bob(via, "Revoke", &[]);
    until_every_server(&cluster, &held, false, revoked, read_as_bob);
    // And it stays refused.
    for (i, (region, row)) in held.iter().enumerate() {
        let port = cluster.server(i).port("rpc-region-server");
        let refused = read_as_bob(port, region, row).unwrap_err();
        assert_eq!(refused.class, DENIED, "server {i}");
    }
}
