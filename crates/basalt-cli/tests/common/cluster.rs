//! A Basalt cluster of real processes for the chaos tests: a real
//! ZooKeeper (test-support/zookeeper.rs: one server, or a replicated
//! ensemble), `basalt master` processes and `basalt regionserver`
//! processes on loopback, sharing a storage directory (`file://`) or a
//! bucket on moto (S3, test-support/moto.rs), each with its own data
//! directory. Includes the invariant checker every chaos test runs at its
//! end, a Thrift write load that records what was acknowledged, and a
//! watch on the master's status.
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
use zookeeper::{ZooKeeperEnsemble, ZooKeeperServer};

#[path = "../../../../test-support/moto.rs"]
pub mod moto;
use moto::MotoServer;

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
    /// The thread copying its log into `lines` (ends at the log's end).
    reader: Option<std::thread::JoinHandle<()>>,
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

    /// After the process exited: waits until its last lines are read,
    /// so that `logged` sees everything it wrote before it ended.
    pub fn read_to_end(&mut self) {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
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
    /// The single ZooKeeper server ([`TestCluster::start`], or a builder
    /// without [`ClusterBuilder::ensemble`]).
    pub zk: Option<ZooKeeperServer>,
    /// The ensemble, when the builder asked for one.
    pub ensemble: Option<ZooKeeperEnsemble>,
    pub dir: tempfile::TempDir,
    /// The storage URL every process gets (`file://...` or `s3://...`).
    pub storage: String,
    pub config: PathBuf,
    pub masters: Vec<Option<Proc>>,
    pub servers: Vec<Option<Proc>>,
    /// The environment every process gets (S3's endpoint and keys).
    env: Vec<(&'static str, String)>,
    /// Where the catalog is read from: S3's settings, or none for the
    /// storage directory.
    s3: Option<S3Access>,
    client: ClusterClient,
}

/// How the test itself reaches the bucket (to read the catalog).
#[derive(Clone)]
struct S3Access {
    endpoint: String,
}

/// How a cluster starts: [`TestCluster::builder`].
pub struct ClusterBuilder<'a> {
    masters: usize,
    servers: usize,
    ensemble: Option<usize>,
    moto: Option<&'a MotoServer>,
    session_timeout_ms: u64,
    request_timeout_ms: Option<u64>,
    wal_group_commit_ms: Option<u64>,
    extra_config: String,
}

impl<'a> ClusterBuilder<'a> {
    /// How many masters (the first becomes active); default 1.
    pub fn masters(mut self, n: usize) -> Self {
        self.masters = n;
        self
    }

    /// How many region servers; default 3.
    pub fn servers(mut self, n: usize) -> Self {
        self.servers = n;
        self
    }

    /// A replicated ZooKeeper ensemble of `n` servers instead of one
    /// server.
    pub fn ensemble(mut self, n: usize) -> Self {
        self.ensemble = Some(n);
        self
    }

    /// Storage on moto (a bucket of its own, created here) instead of a
    /// directory: every process gets the AWS environment and
    /// `--storage s3://<bucket>/basalt`.
    pub fn s3(mut self, moto: &'a MotoServer) -> Self {
        self.moto = Some(moto);
        self
    }

    /// Every process's ZooKeeper session timeout; default
    /// [`SESSION_TIMEOUT_MS`].
    pub fn session_timeout_ms(mut self, ms: u64) -> Self {
        self.session_timeout_ms = ms;
        self
    }

    /// `[storage] request_timeout_ms` of every process: how long one
    /// storage call may take before it fails (the default is the
    /// storage's own, 30 s).
    pub fn storage_request_timeout_ms(mut self, ms: u64) -> Self {
        self.request_timeout_ms = Some(ms);
        self
    }

    /// `[storage] wal_group_commit_ms` of every process: how long the
    /// first edit of a log object waits for others to share it (0 by
    /// default). A long window puts edits written together into one object.
    pub fn wal_group_commit_ms(mut self, ms: u64) -> Self {
        self.wal_group_commit_ms = Some(ms);
        self
    }

    /// More configuration for every process (whole sections, such as
    /// `[security]`), appended to the cluster's file.
    pub fn extra_config(mut self, text: &str) -> Self {
        self.extra_config.push_str(text);
        self
    }

    /// Starts ZooKeeper, the masters and the region servers, and waits
    /// until every region server is registered.
    pub fn start(self) -> TestCluster {
        let (zk, ensemble) = match self.ensemble {
            Some(n) => (None, Some(ZooKeeperEnsemble::start(n))),
            None => (Some(ZooKeeperServer::start()), None),
        };
        let dir = tempfile::tempdir().unwrap();
        let (storage, env, s3) = match self.moto {
            Some(moto) => {
                let bucket = next_bucket_name();
                moto.create_bucket(&bucket);
                (
                    format!("s3://{bucket}/basalt"),
                    moto.aws_env(),
                    Some(S3Access {
                        endpoint: moto.endpoint(),
                    }),
                )
            }
            None => {
                let storage_dir = dir.path().join("storage");
                std::fs::create_dir_all(&storage_dir).unwrap();
                (
                    format!("file://{}", storage_dir.display()),
                    Vec::new(),
                    None,
                )
            }
        };
        let config = dir.path().join("cluster.toml");
        let mut storage_section = String::from("[storage]\ncache_bytes = 67108864\n");
        if let Some(ms) = self.request_timeout_ms {
            storage_section.push_str(&format!("request_timeout_ms = {ms}\n"));
        }
        if let Some(ms) = self.wal_group_commit_ms {
            storage_section.push_str(&format!("wal_group_commit_ms = {ms}\n"));
        }
        // No periodic balancer: the chaos tests assert that no region moves
        // without cause (a ZooKeeper restart, a paused server), and a
        // balancer run for load five minutes in would be a cause of its
        // own. The balancer runs when a test asks (`balancer`); its
        // periodic runs are tested with a manual clock
        // (crates/basalt/tests/cluster_assignment.rs).
        std::fs::write(
            &config,
            format!(
                "[zookeeper]\nsession_timeout_ms = {}\nconnect_timeout_ms = 10000\n\n{storage_section}\n[database]\nbalancer_period_ms = 0\n\n{}",
                self.session_timeout_ms, self.extra_config
            ),
        )
        .unwrap();
        let mut cluster = TestCluster {
            zk,
            ensemble,
            dir,
            storage,
            config,
            masters: Vec::new(),
            servers: Vec::new(),
            env,
            s3,
            client: ClusterClient::new(Duration::from_secs(60)),
        };
        for i in 0..self.masters {
            let ready = if i == 0 {
                "master serving"
            } else {
                "waiting to become the active master"
            };
            cluster.start_master(ready);
        }
        for _ in 0..self.servers {
            cluster.start_region_server();
        }
        cluster.wait_for_live_servers(self.servers);
        cluster
    }
}

/// A bucket name no other cluster of this test process uses.
fn next_bucket_name() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("cluster-{}-{n}", std::process::id())
}

fn spawn(
    kind: &str,
    args: &[String],
    env: &[(&'static str, String)],
    ready: &str,
    tag: &str,
) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .arg(kind)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    let reader;
    {
        let lines = Arc::clone(&lines);
        let tag = tag.to_string();
        reader = std::thread::spawn(move || {
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
        reader: Some(reader),
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
    if line.contains("info server") {
        "info"
    } else if line.contains("RPC master") {
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
    /// `servers` region servers, all registered, on a storage directory.
    pub fn start(masters: usize, servers: usize) -> TestCluster {
        TestCluster::builder()
            .masters(masters)
            .servers(servers)
            .start()
    }

    /// A cluster to configure: one master, three region servers, one
    /// ZooKeeper server and a storage directory unless told otherwise.
    pub fn builder<'a>() -> ClusterBuilder<'a> {
        ClusterBuilder {
            masters: 1,
            servers: 3,
            ensemble: None,
            moto: None,
            session_timeout_ms: SESSION_TIMEOUT_MS,
            request_timeout_ms: None,
            wal_group_commit_ms: None,
            extra_config: String::new(),
        }
    }

    /// The ZooKeeper quorum every process is given.
    pub fn zk_connect_string(&self) -> String {
        match (&self.ensemble, &self.zk) {
            (Some(ensemble), _) => ensemble.connect_string(),
            (None, Some(zk)) => zk.connect_string(),
            (None, None) => unreachable!("a cluster always has ZooKeeper"),
        }
    }

    /// The ensemble (panics on a cluster with one ZooKeeper server).
    pub fn ensemble(&mut self) -> &mut ZooKeeperEnsemble {
        self.ensemble
            .as_mut()
            .expect("this cluster runs one ZooKeeper server, not an ensemble")
    }

    /// Whether every master and region server the cluster still lists is
    /// running; names those that exited.
    pub fn exited_processes(&mut self) -> Vec<String> {
        let mut exited = Vec::new();
        for (kind, procs) in [("master", &mut self.masters), ("rs", &mut self.servers)] {
            for (i, proc) in procs.iter_mut().enumerate() {
                if let Some(proc) = proc {
                    if let Ok(Some(status)) = proc.child.try_wait() {
                        exited.push(format!("{kind}{i} ({}) exited: {status}", proc.name));
                    }
                }
            }
        }
        exited
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
            self.zk_connect_string(),
            "--master-port".into(),
            "0".into(),
            "--region-server-port".into(),
            "0".into(),
            // Tests run in parallel: the web UI's defaults are one port each.
            "--info-port".into(),
            "0".into(),
        ]
    }

    /// Starts another master; `ready` is the line to wait for (`master
    /// serving`, or the standby's line).
    pub fn start_master(&mut self, ready: &str) -> usize {
        let i = self.masters.len();
        let data_dir = self.dir.path().join(format!("master{i}"));
        let args = self.common_args(&data_dir);
        let mut proc = spawn("master", &args, &self.env, ready, &format!("master{i}"));
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
        let mut proc = spawn(
            "regionserver",
            &args,
            &self.env,
            "gateways serving",
            &format!("rs{i}"),
        );
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

    /// Waits until standby master `i` logs that it is active, then learns
    /// the master port it logged (a standby binds it only when it wins).
    pub fn wait_for_active_master(&mut self, i: usize) {
        let standby = self.masters[i].as_ref().expect("master is gone");
        let deadline = Instant::now() + READY_LIMIT;
        while !standby.logged("master serving") {
            assert!(Instant::now() < deadline, "the standby never became active");
            std::thread::sleep(Duration::from_millis(50));
        }
        let port = standby.port_from_log("rpc-master");
        if let Some(proc) = self.masters[i].as_mut() {
            proc.ports.insert("rpc-master".into(), port);
        }
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

    /// The catalog as stored (the newest version: its checkpoint with the
    /// deltas after it applied), as JSON.
    pub fn catalog_json(&self) -> serde_json::Value {
        if let Some(s3) = &self.s3 {
            return self.catalog_json_on_s3(s3);
        }
        let root = self.dir.path().join("storage");
        let text = basalt::catalog_document(&basalt::fs::LocalFileStore::new(), &root)
            .unwrap()
            .expect("no catalog version");
        serde_json::from_slice(&text).unwrap()
    }

    /// The newest catalog in the bucket, read as the processes read it
    /// (the object store, no disk cache).
    fn catalog_json_on_s3(&self, s3: &S3Access) -> serde_json::Value {
        use basalt_object_store::{open_storage, StorageConfig};
        let root = self.dir.path().join("catalog-reader");
        let config = StorageConfig {
            endpoint: Some(s3.endpoint.clone()),
            region: Some(moto::REGION.to_owned()),
            access_key_id: Some(moto::ACCESS_KEY.to_owned()),
            secret_access_key: Some(moto::SECRET_KEY.to_owned()),
            allow_http: Some(true),
            cache_bytes: 0,
            ..StorageConfig::for_url(self.storage.clone())
        };
        let files = open_storage(&config, &root)
            .unwrap()
            .expect("an S3 URL opens a storage")
            .file_store();
        let text = basalt::catalog_document(files.as_ref(), &root)
            .unwrap()
            .expect("no catalog version");
        serde_json::from_slice(&text).unwrap()
    }

    /// Which server the catalog assigns each region of each table:
    /// `(table, region id) -> server`.
    pub fn assignment(&self) -> BTreeMap<(String, String), String> {
        let catalog = self.catalog_json();
        let mut assignment = BTreeMap::new();
        for (table, entry) in catalog["tables"].as_object().unwrap() {
            for r in entry["regions"].as_array().unwrap() {
                assignment.insert(
                    (table.clone(), r["id"].to_string()),
                    r["server"].as_str().unwrap_or("").to_string(),
                );
            }
        }
        assignment
    }

    /// Polls the active master's status every 100 ms in the background
    /// until [`StatusWatch::stop`]: what a test asserts stayed true all
    /// along (no server declared dead).
    pub fn watch_status(&self) -> StatusWatch {
        let ports: Vec<u16> = self
            .masters
            .iter()
            .flatten()
            .filter_map(|m| m.ports.get("rpc-master").copied())
            .collect();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(StatusSeen::default()));
        let thread = {
            let (stop, seen) = (Arc::clone(&stop), Arc::clone(&seen));
            std::thread::spawn(move || {
                let client = ClusterClient::new(Duration::from_secs(5));
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let answer = ports.iter().find_map(|port| {
                        client
                            .call::<_, MasterAnswer>(
                                &format!("127.0.0.1:{port}"),
                                "MasterCall",
                                &MasterCall::Status,
                            )
                            .ok()
                    });
                    let mut seen = seen.lock().unwrap();
                    match answer {
                        Some(MasterAnswer::Status(status)) => {
                            seen.answers += 1;
                            seen.dead_servers
                                .extend(status.dead_servers.iter().cloned());
                            if !status.in_transition.is_empty() {
                                seen.in_transition += 1;
                            }
                        }
                        _ => seen.unanswered += 1,
                    }
                    drop(seen);
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        };
        StatusWatch {
            stop,
            seen,
            thread: Some(thread),
        }
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

/// What [`TestCluster::watch_status`] saw.
#[derive(Debug, Default, Clone)]
pub struct StatusSeen {
    /// Status answers received.
    pub answers: usize,
    /// Polls no master answered.
    pub unanswered: usize,
    /// Answers with a region in transition.
    pub in_transition: usize,
    /// Every server any answer listed as dead.
    pub dead_servers: BTreeSet<String>,
}

/// A background poll of the master's status ([`TestCluster::watch_status`]).
pub struct StatusWatch {
    stop: Arc<std::sync::atomic::AtomicBool>,
    seen: Arc<Mutex<StatusSeen>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StatusWatch {
    /// Stops polling; what was seen.
    pub fn stop(mut self) -> StatusSeen {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        self.seen.lock().unwrap().clone()
    }
}

/// One row written through a Thrift1 client (`cf:q` = the row key).
pub fn thrift_put(c: &mut basalt_thrift::Client, table: &str, row: &str) -> Result<(), String> {
    c.mutate_rows(
        table.as_bytes(),
        vec![basalt_thrift::types::BatchMutation {
            row: Some(bytes::Bytes::from(row.to_owned())),
            mutations: Some(vec![basalt_thrift::client::put(b"cf:q", row.as_bytes())]),
        }],
    )
    .map_err(|e| e.to_string())
}

/// A write that failed, and how long it had waited.
#[derive(Debug, Clone)]
pub struct FailedWrite {
    /// When the answer came.
    pub at: Instant,
    /// How long the call took.
    pub took: Duration,
    pub error: String,
}

/// Writers over Thrift, each on a region server's gateway (which forwards
/// rows of regions held elsewhere), recording every row whose write was
/// acknowledged, each failed write, and the longest wait for an answer.
pub struct Load {
    stop: Arc<std::sync::atomic::AtomicBool>,
    acknowledged: Arc<Mutex<BTreeSet<String>>>,
    failures: Arc<Mutex<Vec<FailedWrite>>>,
    /// The latest acknowledgement, and the longest call so far.
    progress: Arc<Mutex<(Option<Instant>, Duration)>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// What a [`Load`] recorded.
pub struct LoadResult {
    pub acknowledged: BTreeSet<String>,
    pub failures: Vec<FailedWrite>,
    /// The longest any write call took (acknowledged or not).
    pub longest_call: Duration,
}

impl Load {
    /// One writer per entry of `servers` (an index of a region server),
    /// writing rows `r<0-3>-<digit>-<writer>-<n>` of `table` (family `cf`)
    /// until stopped: spread over any table split at `r0-5`, `r1`, ...
    pub fn start(cluster: &TestCluster, table: &str, servers: &[usize]) -> Load {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let acknowledged = Arc::new(Mutex::new(BTreeSet::new()));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let progress = Arc::new(Mutex::new((None, Duration::ZERO)));
        let mut threads = Vec::new();
        for (writer, &server) in servers.iter().enumerate() {
            let port = cluster.server(server).port("thrift");
            let (stop, acknowledged, failures, progress) = (
                Arc::clone(&stop),
                Arc::clone(&acknowledged),
                Arc::clone(&failures),
                Arc::clone(&progress),
            );
            let table = table.to_string();
            threads.push(std::thread::spawn(move || {
                let connect = || {
                    let c = basalt_thrift::Client::connect(
                        ("127.0.0.1", port),
                        false,
                        basalt_thrift::Protocol::Binary { strict: true },
                    )
                    .unwrap();
                    c.set_timeout(Some(READY_LIMIT)).unwrap();
                    c
                };
                let mut c = connect();
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let row = format!("r{}-{}-{writer}-{i:06}", i % 4, (i / 4) % 10);
                    let started = Instant::now();
                    let result = thrift_put(&mut c, &table, &row);
                    let took = started.elapsed();
                    {
                        let mut progress = progress.lock().unwrap();
                        progress.1 = progress.1.max(took);
                        if result.is_ok() {
                            progress.0 = Some(Instant::now());
                        }
                    }
                    match result {
                        Ok(()) => {
                            acknowledged.lock().unwrap().insert(row);
                            i += 1;
                        }
                        Err(error) => {
                            failures.lock().unwrap().push(FailedWrite {
                                at: Instant::now(),
                                took,
                                error,
                            });
                            // The row is written again under a new
                            // number: whether the failed one landed is
                            // unknown, and it is not counted.
                            i += 1;
                            c = connect();
                        }
                    }
                }
            }));
        }
        Load {
            stop,
            acknowledged,
            failures,
            progress,
            threads,
        }
    }

    /// Stops the writers (each finishes its call in flight).
    pub fn stop(self) -> LoadResult {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        for t in self.threads {
            t.join().unwrap();
        }
        let acknowledged = self.acknowledged.lock().unwrap().clone();
        let failures = self.failures.lock().unwrap().clone();
        let longest_call = self.progress.lock().unwrap().1;
        LoadResult {
            acknowledged,
            failures,
            longest_call,
        }
    }

    /// Rows acknowledged so far.
    pub fn count(&self) -> usize {
        self.acknowledged.lock().unwrap().len()
    }

    /// Failed writes so far.
    pub fn failure_count(&self) -> usize {
        self.failures.lock().unwrap().len()
    }

    /// When the latest write was acknowledged.
    pub fn last_acknowledged(&self) -> Option<Instant> {
        self.progress.lock().unwrap().0
    }

    /// Waits until `at_least` rows are acknowledged in all (hang guard:
    /// [`READY_LIMIT`]).
    pub fn wait_for(&self, at_least: usize) {
        let deadline = Instant::now() + READY_LIMIT;
        while self.count() < at_least {
            assert!(
                Instant::now() < deadline,
                "the load never reached {at_least} writes ({} so far)",
                self.count()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Every row of `table`, read through a Thrift1 scanner.
pub fn all_rows(c: &mut basalt_thrift::Client, table: &str) -> BTreeSet<String> {
    let id = c.scanner_open(table.as_bytes(), b"", &[]).unwrap();
    c.scan_all(id, 1000)
        .unwrap()
        .into_iter()
        .map(|r| String::from_utf8(r.row.unwrap().to_vec()).unwrap())
        .collect()
}
