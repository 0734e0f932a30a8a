//! The cluster through the administration surfaces: `basalt shell` on a
//! region server's Thrift port (`status 'detailed'`, `move`, `unassign`,
//! `assign`, `balancer`) and native RPC's `MasterService`
//! (`GetClusterStatus`), against real `basalt master` and `basalt
//! regionserver` processes and a real ZooKeeper. Timings are never
//! asserted; waits are hang guards.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use basalt::cluster::{ClusterStatus, ServerName};

#[path = "common/cluster.rs"]
mod cluster_support;
use cluster_support::{TestCluster, READY_LIMIT};

/// Runs `basalt shell -e SCRIPT` against a region server's Thrift port;
/// returns its standard output, failing the test if the shell failed.
fn shell(port: u16, script: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["shell", "--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-e", script])
        .env("USER", "tester")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "shell {script:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Each live server's regions, by server name, from the master.
fn placement(status: &ClusterStatus) -> BTreeMap<String, Vec<String>> {
    status
        .servers
        .iter()
        .map(|s| (s.name.clone(), s.regions.clone()))
        .collect()
}

/// The server holding `region`, if any.
fn holder(status: &ClusterStatus, region: &str) -> Option<String> {
    status
        .servers
        .iter()
        .find(|s| s.regions.iter().any(|r| r == region))
        .map(|s| s.name.clone())
}

/// `status 'detailed'` split into the regions listed under each server
/// line (`    host:port startcode`), by that line.
fn detailed_sections(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut live = false;
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.ends_with("live servers") {
            live = true;
        } else if line.ends_with("dead servers") {
            live = false;
            current = None;
        } else if let Some(server) = line
            .strip_prefix("    ")
            .filter(|l| live && !l.starts_with(' '))
        {
            current = Some(server.to_string());
            out.entry(server.to_string()).or_default();
        } else if let (Some(server), Some(name)) = (
            &current,
            line.trim()
                .strip_prefix('"')
                .and_then(|l| l.strip_suffix('"')),
        ) {
            out.get_mut(server).unwrap().push(name.to_string());
        }
    }
    out
}

/// How `status` prints a server name.
fn shown(name: &str) -> String {
    let n = ServerName::parse(name).unwrap();
    format!("{} {}", n.address(), n.start_code)
}

fn rows_in(port: u16, table: &str) -> usize {
    let out = shell(port, &format!("count '{table}'"));
    let line = out
        .lines()
        .find(|l| l.starts_with("=> "))
        .unwrap_or_else(|| panic!("count printed no result:\n{out}"));
    line[3..].trim().parse().unwrap()
}

/// Waits until the master's status satisfies `ok` (hang guard only).
fn wait_for(
    cluster: &TestCluster,
    what: &str,
    ok: impl Fn(&ClusterStatus) -> bool,
) -> ClusterStatus {
    let deadline = Instant::now() + READY_LIMIT;
    loop {
        let (status, _) = cluster.wait_until_settled();
        if ok(&status) {
            return status;
        }
        assert!(Instant::now() < deadline, "never: {what}: {status:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_shell_shows_moves_reassigns_and_balances_the_regions_of_a_cluster() {
    // Two masters: the standby shows in status as a backup master.
    let mut cluster = TestCluster::start(2, 3);
    let port = cluster.server(0).port("thrift");

    // 1. A pre-split table with a row in every region, through the shell.
    shell(port, "create 'ct', 'cf', SPLITS => ['b', 'd', 'f', 'h']");
    let rows = ["a1", "b1", "c1", "d1", "e1", "f1", "g1", "h1", "i1"];
    let puts: Vec<String> = rows
        .iter()
        .map(|r| format!("put 'ct', '{r}', 'cf:q', 'v-{r}'"))
        .collect();
    shell(port, &puts.join("; "));
    let (status, _) = cluster.wait_until_settled();
    assert_eq!(status.servers.len(), 3);

    // 2. `status 'detailed'` lists the three servers and every region
    //    under the server the master says holds it.
    let standby = wait_for(&cluster, "the standby master listed", |s| {
        s.backup_masters.len() == 1
    })
    .backup_masters[0]
        .clone();
    let detailed = shell(port, "status 'detailed'");
    println!("STATUS DETAILED\n{detailed}");
    assert!(detailed.contains("1 backup masters"), "{detailed}");
    assert!(
        detailed.contains(&format!("    {}", shown(&standby))),
        "{detailed}"
    );
    assert!(detailed.contains("3 live servers"), "{detailed}");
    assert!(detailed.contains("0 dead servers"), "{detailed}");
    let sections = detailed_sections(&detailed);
    assert_eq!(sections.len(), 3, "{detailed}");
    let mut listed = 0;
    for (server, regions) in placement(&status) {
        let names = sections
            .get(&shown(&server))
            .unwrap_or_else(|| panic!("{server} missing from:\n{detailed}"));
        for encoded in &regions {
            assert!(
                names.iter().any(|n| n.ends_with(&format!(".{encoded}."))),
                "{encoded} not listed under {server}:\n{detailed}"
            );
        }
        listed += regions.len();
    }
    assert_eq!(listed, 5, "{detailed}");
    // Every server's regions carry their load, not only this server's:
    // each server reports it to the master for the status.
    let region_loads = detailed
        .lines()
        .filter(|l| l.starts_with("            numberOfStorefiles="))
        .count();
    assert_eq!(region_loads, listed, "{detailed}");
    let server_loads = detailed
        .lines()
        .filter(|l| l.starts_with("        requestsPerSecond="))
        .count();
    assert_eq!(server_loads, 3, "{detailed}");
    let summary = shell(port, "status");
    assert!(summary.contains("3 servers, 0 dead"), "{summary}");

    // 3. `move` a region to a named server: the status shows it there and
    //    every row is still readable (through a gateway elsewhere too).
    let (region, from) = status
        .servers
        .iter()
        .find_map(|s| s.regions.first().map(|r| (r.clone(), s.name.clone())))
        .unwrap();
    let to = status
        .servers
        .iter()
        .map(|s| s.name.clone())
        .find(|s| *s != from)
        .unwrap();
    shell(port, &format!("move '{region}', '{to}'"));
    let status = wait_for(&cluster, "the region is on its new server", |s| {
        holder(s, &region).as_deref() == Some(to.as_str())
    });
    let detailed = shell(port, "status 'detailed'");
    let under_to = &detailed_sections(&detailed)[&shown(&to)];
    assert!(
        under_to.iter().any(|n| n.ends_with(&format!(".{region}."))),
        "{region} not under {to}:\n{detailed}"
    );
    assert_eq!(rows_in(port, "ct"), rows.len());
    assert_eq!(rows_in(cluster.server(2).port("thrift"), "ct"), rows.len());
    assert_eq!(status.servers.len(), 3);

    // 4. `unassign` closes the region and it stays closed (the master's
    //    rounds leave it alone); `assign` opens it again; the rows are all
    //    there afterwards.
    shell(port, &format!("unassign '{region}'"));
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let status = cluster.status();
    assert!(
        holder(&status, &region).is_none(),
        "an unassigned region was reopened: {status:?}"
    );
    shell(port, &format!("assign '{region}'"));
    wait_for(&cluster, "the region is open again", |s| {
        holder(s, &region).is_some()
    });
    assert_eq!(rows_in(port, "ct"), rows.len());

    // 5. A fourth server joins with nothing. With the balancer switch off
    // `balancer` does not run; switched on again, it evens the counts.
    cluster.start_region_server();
    cluster.wait_for_live_servers(4);
    let out = shell(port, "balance_switch false");
    assert!(out.contains("Previous balancer state : true"), "{out}");
    let out = shell(port, "balancer");
    assert!(
        out.contains("balancer switch is off") && out.contains("=> false"),
        "{out}"
    );
    // The switch is the catalog's: another server's shell reads it.
    let other = cluster.server(1).port("thrift");
    assert!(shell(other, "balancer_enabled").contains("=> false"));
    let out = shell(other, "balance_switch true");
    assert!(out.contains("Previous balancer state : false"), "{out}");
    let out = shell(port, "balancer");
    assert!(out.contains("=> true"), "{out}");
    let status = wait_for(&cluster, "balanced", |s| {
        let counts: Vec<usize> = s.servers.iter().map(|s| s.regions.len()).collect();
        counts.len() == 4 && counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1
    });
    let newcomer = &cluster.server(3).name;
    assert!(
        !placement(&status)[newcomer].is_empty(),
        "the new server got no region: {status:?}"
    );
    assert_eq!(rows_in(port, "ct"), rows.len());

    // 6. Native RPC: GetClusterStatus on a region server's master port
    //    lists every live server with its regions.
    let rpc_status = native_cluster_status(cluster.server(1).port("rpc-master"));
    assert_eq!(rpc_status.live_servers.len(), 4);
    let mut regions = 0;
    for live in &rpc_status.live_servers {
        let sn = live.server.as_ref().unwrap();
        let name = format!(
            "{},{},{}",
            sn.host_name,
            sn.port.unwrap(),
            sn.start_code.unwrap()
        );
        let expected = &placement(&status)[&name];
        let load = live.server_load.as_ref().unwrap();
        // hbase:meta and hbase:namespace (every server answers both) plus
        // the table's regions.
        assert_eq!(load.region_loads.len(), expected.len() + 2, "{name}");
        regions += expected.len();
    }
    assert_eq!(regions, 5);
    assert!(rpc_status.dead_servers.is_empty());
    assert!(rpc_status.regions_in_transition.is_empty());

    // 7. REST: /status/cluster lists every live server with its regions.
    let rest = rest_cluster_status(cluster.server(2).port("rest"));
    let nodes = rest["LiveNodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 4, "{rest}");
    for (server, regions) in placement(&status) {
        let sn = ServerName::parse(&server).unwrap();
        let node = nodes
            .iter()
            .find(|n| n["name"] == sn.address() && n["startCode"] == sn.start_code)
            .unwrap_or_else(|| panic!("{server} missing from {rest}"));
        assert_eq!(node["Region"].as_array().unwrap().len(), regions.len());
    }
    assert_eq!(rest["regions"], 5);
    assert!(rest["DeadNodes"].as_array().unwrap().is_empty());
    cluster.check_invariants();
}

/// `GET /status/cluster` as JSON from a region server's REST gateway.
fn rest_cluster_status(port: u16) -> serde_json::Value {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(READY_LIMIT)).unwrap();
    let head = format!(
        "GET /status/cluster HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nAccept: application/json\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{text}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn native_cluster_status(port: u16) -> basalt_rpc::proto::cluster_status::ClusterStatus {
    use basalt_rpc::proto::cluster_status::{GetClusterStatusRequest, GetClusterStatusResponse};
    let mut client =
        basalt_rpc::client::RpcClient::connect(("127.0.0.1", port), "MasterService", false)
            .unwrap();
    let answer = client
        .call(
            "GetClusterStatus",
            &GetClusterStatusRequest { options: vec![] },
            &[],
        )
        .unwrap();
    let response: GetClusterStatusResponse = answer.decode().unwrap();
    response.cluster_status.unwrap()
}
