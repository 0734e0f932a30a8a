//! A Basalt cluster of real processes for the chaos tests: a real
//! ZooKeeper (test-support/zookeeper.rs), `basalt master` processes and
//! `basalt regionserver` processes on loopback, sharing a storage
//! directory (`file://`), each with its own data directory. Includes the
//! invariant checker every chaos test runs at its end.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use basalt::cluster::{ClusterStatus, MasterAnswer, MasterCall};
use basalt_rpc::cluster_service::ClusterClient;

#[path = "../../../../test-support/zookeeper.rs"]
pub mod zookeeper;
use zookeeper::ZooKeeperServer;

/// Hang guard only: how long a process may take to say it is ready.
pub const READY_LIMIT: Duration = Duration::from_secs(120);
/// The ZooKeeper session timeout of every process (short, so a killed
/// server is noticed in seconds; the test ZooKeeper allows it).
pub const SESSION_TIMEOUT_MS: u64 = 2000;

/// One `basalt` process of the cluster.
pub struct Proc {
    pub child: Child,
    /// Every line it logged so far.
    pub lines: Arc<Mutex<Vec<String>>>,
    /// Ports by what listens there (`thrift`, `thrift2`, `rest`,
    /// `rpc-master`, `rpc-region-server`).
    pub ports: BTreeMap<String, u16>,
    /// Its HBase server name (region servers: `host,port,logid`).
    pub name: String,
    pub data_dir: PathBuf,
}

impl Proc {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn port(&self, what: &str) -> u16 {
        *self
            .ports
            .get(what)
            .unwrap_or_else(|| panic!("{} has no {what} port: {:?}", self.name, self.ports))
    }

    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} {}", self.pid());
    }

    /// The port of `what` as logged so far (a standby master logs its
    /// ports only once it is active).
    pub fn port_from_log(&self, what: &str) -> u16 {
        let lines = self.lines.lock().unwrap();
        lines
            .iter()
            .filter(|l| l.contains("listening") && port_kind(l) == what)
            .find_map(|l| port_of(l))
            .unwrap_or_else(|| panic!("{} never logged a {what} port", self.name))
    }

    pub fn logged(&self, needle: &str) -> bool {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(needle))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A cluster under test.
pub struct TestCluster {
    pub zk: ZooKeeperServer,
    pub dir: tempfile::TempDir,
    pub storage: String,
    pub config: PathBuf,
    pub masters: Vec<Option<Proc>>,
    pub servers: Vec<Option<Proc>>,
    client: ClusterClient,
}

fn spawn(kind: &str, args: &[String], ready: &str, tag: &str) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .arg(kind)
        .args(args)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    {
        let lines = Arc::clone(&lines);
        let tag = tag.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                eprintln!("[{tag}] {line}");
                lines.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
    }
    let mut ports = BTreeMap::new();
    let mut name = String::new();
    let deadline = Instant::now() + READY_LIMIT;
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("{tag} never logged {ready:?}"));
        if line.contains("listening") {
            if let Some(port) = port_of(&line) {
                ports.insert(port_kind(&line).to_string(), port);
            }
        }
        if let Some(n) = line.split_whitespace().find_map(|w| {
            w.strip_prefix("server=")
                .or_else(|| w.strip_prefix("master="))
        }) {
            name = n.trim_matches('"').to_string();
        }
        if line.contains(ready) {
            break;
        }
    }
    Proc {
        child,
        lines,
        ports,
        name,
        data_dir: PathBuf::new(),
    }
}

fn port_of(line: &str) -> Option<u16> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("address="))
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse().ok())
}

fn port_kind(line: &str) -> &'static str {
    if line.contains("RPC master") {
        "rpc-master"
    } else if line.contains("RPC region server") {
        "rpc-region-server"
    } else if line.contains("Thrift2") {
        "thrift2"
    } else if line.contains("REST") {
        "rest"
    } else {
        "thrift"
    }
}

impl TestCluster {
    /// ZooKeeper, `masters` masters (the first becomes active) and
    /// `servers` region servers, all registered.
    pub fn start(masters: usize, servers: usize) -> TestCluster {
        let zk = ZooKeeperServer::start();
        let dir = tempfile::tempdir().unwrap();
        let storage_dir = dir.path().join("storage");
        std::fs::create_dir_all(&storage_dir).unwrap();
        let storage = format!("file://{}", storage_dir.display());
        let config = dir.path().join("cluster.toml");
        std::fs::write(
            &config,
            format!(
                "[zookeeper]\nsession_timeout_ms = {SESSION_TIMEOUT_MS}\nconnect_timeout_ms = 10000\n\n[storage]\ncache_bytes = 67108864\n"
            ),
        )
        .unwrap();
        let mut cluster = TestCluster {
            zk,
            dir,
            storage,
            config,
            masters: Vec::new(),
            servers: Vec::new(),
            client: ClusterClient::new(Duration::from_secs(60)),
        };
        for i in 0..masters {
            let ready = if i == 0 {
                "master serving"
            } else {
                "waiting to become the active master"
            };
            cluster.start_master(ready);
        }
        for _ in 0..servers {
            cluster.start_region_server();
        }
        cluster.wait_for_live_servers(servers);
        cluster
    }

    fn common_args(&self, data_dir: &Path) -> Vec<String> {
        vec![
            "--config".into(),
            self.config.display().to_string(),
            "--data-dir".into(),
            data_dir.display().to_string(),
            "--storage".into(),
            self.storage.clone(),
            "--zookeeper".into(),
            self.zk.connect_string(),
            "--master-port".into(),
            "0".into(),
            "--region-server-port".into(),
            "0".into(),
        ]
    }

    /// Starts another master; `ready` is the line to wait for (`master
    /// serving`, or the standby's line).
    pub fn start_master(&mut self, ready: &str) -> usize {
        let i = self.masters.len();
        let data_dir = self.dir.path().join(format!("master{i}"));
        let args = self.common_args(&data_dir);
        let mut proc = spawn("master", &args, ready, &format!("master{i}"));
        proc.data_dir = data_dir;
        self.masters.push(Some(proc));
        i
    }

    /// Starts another region server and waits until it is registered.
    pub fn start_region_server(&mut self) -> usize {
        let i = self.servers.len();
        let data_dir = self.dir.path().join(format!("rs{i}"));
        let mut args = self.common_args(&data_dir);
        args.extend(
            [
                "--thrift-port",
                "0",
                "--thrift2-port",
                "0",
                "--rest-port",
                "0",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        let mut proc = spawn("regionserver", &args, "gateways serving", &format!("rs{i}"));
        proc.data_dir = data_dir;
        self.servers.push(Some(proc));
        i
    }

    pub fn server(&self, i: usize) -> &Proc {
        self.servers[i].as_ref().expect("region server is gone")
    }

    pub fn master(&self, i: usize) -> &Proc {
        self.masters[i].as_ref().expect("master is gone")
    }

    /// SIGKILL region server `i` (it is gone from the cluster's list).
    pub fn kill_server(&mut self, i: usize) -> Proc {
        let proc = self.servers[i].take().expect("region server is gone");
        proc.signal("KILL");
        proc
    }

    /// SIGKILL master `i`.
    pub fn kill_master(&mut self, i: usize) -> Proc {
        let proc = self.masters[i].take().expect("master is gone");
        proc.signal("KILL");
        proc
    }

    /// A call to whichever master answers as active.
    pub fn master_call(&self, call: MasterCall) -> basalt::Result<MasterAnswer> {
        let mut last = None;
        for proc in self.masters.iter().flatten() {
            let Some(port) = proc.ports.get("rpc-master") else {
                continue;
            };
            match self.client.call::<_, MasterAnswer>(
                &format!("127.0.0.1:{port}"),
                "MasterCall",
                &call,
            ) {
                Ok(answer) => return Ok(answer),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| basalt::Error::invalid("no master running")))
    }

    pub fn status(&self) -> ClusterStatus {
        match self.master_call(MasterCall::Status).unwrap() {
            MasterAnswer::Status(status) => status,
            other => panic!("status answered {other:?}"),
        }
    }

    /// Waits until `n` region servers are live in the master's view.
    pub fn wait_for_live_servers(&self, n: usize) {
        let deadline = Instant::now() + READY_LIMIT;
        loop {
            if let Ok(MasterAnswer::Status(s)) = self.master_call(MasterCall::Status) {
                if s.servers.len() == n {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{n} region servers never became live"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until no region is in transition and no dead server is
    /// being recovered; returns the status and when that first held.
    pub fn wait_until_settled(&self) -> (ClusterStatus, Instant) {
        let deadline = Instant::now() + READY_LIMIT;
        loop {
            if let Ok(MasterAnswer::Status(s)) = self.master_call(MasterCall::Status) {
                if s.in_transition.is_empty() && s.dead_servers.is_empty() {
                    return (s, Instant::now());
                }
            }
            assert!(
                Instant::now() < deadline,
                "the cluster never settled: {:?}",
                self.master_call(MasterCall::Status)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// [`TestCluster::wait_until_settled`], once `gone` is no longer a
    /// live server.
    pub fn wait_until_settled_without(&self, gone: &str) -> (ClusterStatus, Instant) {
        let deadline = Instant::now() + READY_LIMIT;
        loop {
            if let Ok(MasterAnswer::Status(s)) = self.master_call(MasterCall::Status) {
                if s.in_transition.is_empty()
                    && s.dead_servers.is_empty()
                    && s.servers.iter().all(|server| server.name != gone)
                {
                    return (s, Instant::now());
                }
            }
            assert!(
                Instant::now() < deadline,
                "the cluster never settled without {gone}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A Thrift1 client of region server `i`'s gateway.
    pub fn thrift(&self, i: usize) -> basalt_thrift::Client {
        let c = basalt_thrift::Client::connect(
            ("127.0.0.1", self.server(i).port("thrift")),
            false,
            basalt_thrift::Protocol::Binary { strict: true },
        )
        .unwrap();
        c.set_timeout(Some(READY_LIMIT)).unwrap();
        c
    }

    /// The catalog as stored (the newest version), as JSON.
    pub fn catalog_json(&self) -> serde_json::Value {
        let dir = self.dir.path().join("storage").join("catalog");
        let newest = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .max_by_key(|p| {
                p.file_stem()
                    .and_then(|s| s.to_str())
                    .and_then(|s| s.parse::<u64>().ok())
                    .unwrap_or(0)
            })
            .expect("no catalog version");
        serde_json::from_slice(&std::fs::read(newest).unwrap()).unwrap()
    }

    /// The checker every chaos test ends with: the cluster settled, and
    /// 1. every table's serving regions chain from the first row to the
    ///    last without gap or overlap, each `OPEN` on a live server;
    /// 2. each live region server has open exactly the regions the
    ///    catalog assigns it, so no region is open on two servers.
    pub fn check_invariants(&self) {
        let (status, _) = self.wait_until_settled();
        let live: BTreeSet<String> = status.servers.iter().map(|s| s.name.clone()).collect();
        let catalog = self.catalog_json();
        let mut assigned: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (table, entry) in catalog["tables"].as_object().unwrap() {
            let regions = entry["regions"].as_array().unwrap();
            let mut end = String::new();
            for (k, r) in regions.iter().enumerate() {
                let start = r["start_key"].to_string();
                if k > 0 {
                    assert_eq!(start, end, "table {table}: regions do not chain at {k}");
                }
                end = r["end_key"].to_string();
                if entry["enabled"].as_bool().unwrap() {
                    assert_eq!(r["state"], "OPEN", "table {table} region {}", r["id"]);
                    let server = r["server"]
                        .as_str()
                        .expect("an open region has a server")
                        .to_string();
                    assert!(
                        live.contains(&server),
                        "region {} is open on {server}, which is not live",
                        r["id"]
                    );
                    assigned
                        .entry(server)
                        .or_default()
                        .insert(r["id"].to_string());
                }
            }
        }
        for s in &status.servers {
            let by_master: BTreeSet<String> = s.regions.iter().cloned().collect();
            assert_eq!(
                by_master.len(),
                assigned.get(&s.name).map_or(0, |a| a.len()),
                "server {} holds {:?}",
                s.name,
                s.regions
            );
        }
        // What each server itself has open: its online regions, through
        // the native RPC AdminService.
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for proc in self.servers.iter().flatten() {
            for region in online_regions(proc.port("rpc-region-server")) {
                if let Some(other) = seen.insert(region.clone(), proc.name.clone()) {
                    panic!("region {region} is open on {other} and on {}", proc.name);
                }
            }
        }
    }
}

/// The encoded names of the regions a region server has open, as it says
/// through AdminService.GetOnlineRegion.
pub fn online_regions(port: u16) -> Vec<String> {
    use basalt_rpc::proto::admin::GetOnlineRegionResponse;
    use basalt_rpc::proto::hbase::EmptyMsg;
    let mut client =
        basalt_rpc::client::RpcClient::connect(("127.0.0.1", port), "AdminService", false).unwrap();
    let answer = client.call("GetOnlineRegion", &EmptyMsg {}, &[]).unwrap();
    let response: GetOnlineRegionResponse = answer.decode().unwrap();
    response
        .region_info
        .iter()
        .filter_map(|info| {
            let table = info.table_name.as_ref()?;
            // hbase:meta is listed by every region server.
            if table.namespace.as_slice() == b"hbase" {
                return None;
            }
            let name = basalt::RegionInfo {
                id: info.region_id,
                table: String::from_utf8_lossy(&table.qualifier).into_owned(),
                start_key: info.start_key.clone().unwrap_or_default().into(),
                end_key: info.end_key.clone().unwrap_or_default().into(),
            };
            Some(name.encoded_name())
        })
        .collect()
}
