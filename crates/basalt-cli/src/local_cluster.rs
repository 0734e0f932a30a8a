//! `basalt local-cluster`: a whole cluster on this machine for trying
//! cluster mode: ZooKeeper (Debian's `zookeeper` package, unless
//! `--zookeeper` names a running one), one master and N region servers,
//! each a child process of this one with its own data directory under
//! `--dir`, the data on a shared directory (or `--storage`). It prints
//! where everything listens, and on Ctrl-C (or SIGTERM) stops the region
//! servers, then the master, then ZooKeeper.

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use basalt::cluster::{MasterAnswer, MasterCall};
use basalt_rpc::cluster_service::ClusterClient;

/// The jar of Debian's `zookeeper` package (its manifest names the rest
/// of the classpath).
const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
/// How long the cluster may take to come up before the command gives up.
const START_LIMIT: Duration = Duration::from_secs(120);

#[derive(Debug, clap::Args)]
pub struct LocalClusterArgs {
    /// Where the processes' data directories, the logs and (without
    /// --storage) the shared data go.
    #[arg(long, value_name = "DIR", default_value = "basalt-cluster")]
    dir: PathBuf,
    /// Region servers to start.
    #[arg(long, value_name = "N", default_value_t = 3)]
    region_servers: u16,
    /// Shared storage for the data (default: file://<DIR>/storage).
    #[arg(long, value_name = "URL")]
    storage: Option<String>,
    /// A running ZooKeeper quorum to use instead of starting one.
    #[arg(long, value_name = "QUORUM")]
    zookeeper: Option<String>,
    /// The port of the ZooKeeper this command starts.
    #[arg(long, value_name = "PORT", default_value_t = 2181)]
    zookeeper_port: u16,
    /// The master's native RPC port (0: a free one, as for every port).
    #[arg(long, value_name = "PORT", default_value_t = 16000)]
    master_port: u16,
    /// Region server N's ports are these plus N - 1 (0: free ports):
    /// Thrift1.
    #[arg(long, value_name = "PORT", default_value_t = 9090)]
    thrift_port: u16,
    /// ... Thrift2.
    #[arg(long, value_name = "PORT", default_value_t = 9190)]
    thrift2_port: u16,
    /// ... REST.
    #[arg(long, value_name = "PORT", default_value_t = 8080)]
    rest_port: u16,
    /// ... native RPC.
    #[arg(long, value_name = "PORT", default_value_t = 16020)]
    region_server_port: u16,
    /// ... the info server (web UI, /metrics).
    #[arg(long, value_name = "PORT", default_value_t = 16030)]
    region_server_info_port: u16,
    /// The master's info server port (web UI, /metrics).
    #[arg(long, value_name = "PORT", default_value_t = 16010)]
    info_port: u16,
    /// The ZooKeeper session timeout of every process: how long a killed
    /// region server goes unnoticed.
    #[arg(long, value_name = "MS", default_value_t = 3000)]
    session_timeout_ms: u64,
    /// A configuration file every process reads (`basalt serve`'s format,
    /// e.g. `[security]`); its ZooKeeper session timeout, if it sets one,
    /// wins over --session-timeout-ms.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// The configuration every process of the cluster reads: the user's file
/// (if any) with the session timeout added unless it sets one.
fn cluster_config(args: &LocalClusterArgs) -> Result<String, String> {
    let mut table = match &args.config {
        Some(path) => {
            let text = fs::read_to_string(path)
                .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
            text.parse::<toml::Table>()
                .map_err(|e| format!("config file {}: {e}", path.display()))?
        }
        None => toml::Table::new(),
    };
    let zookeeper = table
        .entry("zookeeper")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let toml::Value::Table(zookeeper) = zookeeper else {
        return Err("config file: [zookeeper] must be a table".into());
    };
    zookeeper
        .entry("session_timeout_ms")
        .or_insert(toml::Value::Integer(
            i64::try_from(args.session_timeout_ms).unwrap_or(i64::MAX),
        ));
    toml::to_string(&table).map_err(|e| format!("cannot write the cluster's configuration: {e}"))
}

/// A child process, stopped (SIGTERM, then SIGKILL after a while) on drop.
struct Managed {
    name: String,
    child: Child,
}

impl Managed {
    fn stop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!("{} did not stop within 30 s: killing it", self.name);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        self.stop();
    }
}

fn log_file(dir: &Path, name: &str) -> Result<fs::File, String> {
    let path = dir.join("logs").join(format!("{name}.log"));
    fs::File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))
}

/// ZooKeeper answers its `srvr` command once it serves.
fn zookeeper_ready(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(b"srvr").is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.contains("Mode:")
}

fn start_zookeeper(args: &LocalClusterArgs) -> Result<Managed, String> {
    if !Path::new(ZOOKEEPER_JAR).exists() {
        return Err(format!(
            "ZooKeeper is not installed ({ZOOKEEPER_JAR} is missing): `apt-get install zookeeper`, or pass --zookeeper HOST:PORT"
        ));
    }
    if zookeeper_ready(args.zookeeper_port) {
        return Err(format!(
            "a ZooKeeper already answers on port {}: pass --zookeeper 127.0.0.1:{} to use it, or --zookeeper-port to start another",
            args.zookeeper_port, args.zookeeper_port
        ));
    }
    let dir = args.dir.join("zookeeper");
    fs::create_dir_all(dir.join("data"))
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let config = dir.join("zoo.cfg");
    // A short tick lets sessions of a few seconds (2 to 20 ticks).
    fs::write(
        &config,
        format!(
            "tickTime=250\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=srvr,ruok\nmaxSessionTimeout=60000\n",
            dir.join("data").display(),
            args.zookeeper_port
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    let child = Command::new("java")
        .args([
            "-cp",
            ZOOKEEPER_JAR,
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        ])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(log_file(&args.dir, "zookeeper")?)
        .stderr(log_file(&args.dir, "zookeeper.err")?)
        .spawn()
        .map_err(|e| format!("cannot start ZooKeeper (java): {e}"))?;
    let mut zk = Managed {
        name: "ZooKeeper".into(),
        child,
    };
    let deadline = Instant::now() + START_LIMIT;
    while !zookeeper_ready(args.zookeeper_port) {
        if let Ok(Some(status)) = zk.child.try_wait() {
            return Err(format!(
                "ZooKeeper exited ({status}); see {}",
                args.dir.join("logs").join("zookeeper.log").display()
            ));
        }
        if Instant::now() > deadline {
            zk.stop();
            return Err("ZooKeeper did not answer within 2 minutes".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(zk)
}

fn spawn_basalt(dir: &Path, name: &str, args: &[String]) -> Result<Managed, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the basalt binary: {e}"))?;
    let child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file(dir, name)?)
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    Ok(Managed {
        name: name.to_string(),
        child,
    })
}

/// Runs the local cluster until Ctrl-C or SIGTERM.
pub fn run(args: LocalClusterArgs) -> Result<(), String> {
    let stop_signals = crate::stop_signals::StopSignals::install()?;
    fs::create_dir_all(args.dir.join("logs"))
        .map_err(|e| format!("cannot create {}: {e}", args.dir.display()))?;
    let dir = fs::canonicalize(&args.dir).map_err(|e| format!("{}: {e}", args.dir.display()))?;
    let storage = match &args.storage {
        Some(url) => url.clone(),
        None => {
            let shared = dir.join("storage");
            fs::create_dir_all(&shared)
                .map_err(|e| format!("cannot create {}: {e}", shared.display()))?;
            format!("file://{}", shared.display())
        }
    };
    let mut zookeeper = None;
    let quorum = match &args.zookeeper {
        Some(q) => q.clone(),
        None => {
            zookeeper = Some(start_zookeeper(&args)?);
            format!("127.0.0.1:{}", args.zookeeper_port)
        }
    };
    let config = dir.join("cluster.toml");
    fs::write(&config, cluster_config(&args)?)
        .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    let common = |data_dir: PathBuf| -> Vec<String> {
        vec![
            "--config".into(),
            config.display().to_string(),
            "--data-dir".into(),
            data_dir.display().to_string(),
            "--storage".into(),
            storage.clone(),
            "--zookeeper".into(),
            quorum.clone(),
            "--bind".into(),
            "127.0.0.1".into(),
        ]
    };
    let mut master_args = vec!["master".to_string()];
    master_args.extend(common(dir.join("master")));
    master_args.extend([
        "--master-port".into(),
        args.master_port.to_string(),
        "--region-server-port".into(),
        "0".into(),
        "--info-port".into(),
        args.info_port.to_string(),
    ]);
    let mut master = spawn_basalt(&dir, "master", &master_args)?;
    let master_ports = wait_for_log(&dir, &mut master, "master serving")?;
    let master_port = master_ports
        .get("rpc-master")
        .copied()
        .unwrap_or(args.master_port);
    let master_info = master_ports.get("info").copied().unwrap_or(0);
    let mut servers = Vec::new();
    let mut rows = Vec::new();
    let offset = |base: u16, i: u16| if base == 0 { 0 } else { base + i };
    for i in 0..args.region_servers {
        let name = format!("regionserver{}", i + 1);
        let mut rs_args = vec!["regionserver".to_string()];
        rs_args.extend(common(dir.join(&name)));
        rs_args.extend([
            "--master-port".into(),
            "0".into(),
            "--region-server-port".into(),
            offset(args.region_server_port, i).to_string(),
            "--thrift-port".into(),
            offset(args.thrift_port, i).to_string(),
            "--thrift2-port".into(),
            offset(args.thrift2_port, i).to_string(),
            "--rest-port".into(),
            offset(args.rest_port, i).to_string(),
            "--info-port".into(),
            offset(args.region_server_info_port, i).to_string(),
        ]);
        let mut server = spawn_basalt(&dir, &name, &rs_args)?;
        let ports = match wait_for_log(&dir, &mut server, "gateways serving") {
            Ok(ports) => ports,
            Err(e) => {
                master.stop();
                return Err(e);
            }
        };
        let port = |what: &str| ports.get(what).copied().unwrap_or(0);
        rows.push(format!(
            "  {name:<15} thrift 127.0.0.1:{}  thrift2 127.0.0.1:{}  rest 127.0.0.1:{}  native RPC 127.0.0.1:{}  web UI http://127.0.0.1:{}/",
            port("thrift"),
            port("thrift2"),
            port("rest"),
            port("rpc-region-server"),
            port("info")
        ));
        servers.push(server);
    }
    let mut processes: Vec<Managed> = Vec::new();
    processes.push(master);
    processes.extend(servers);
    // Ready once the master sees every region server.
    let client = ClusterClient::new(Duration::from_secs(10));
    let deadline = Instant::now() + START_LIMIT;
    loop {
        if let Ok(MasterAnswer::Status(s)) = client.call(
            &format!("127.0.0.1:{master_port}"),
            "MasterCall",
            &MasterCall::Status,
        ) {
            if s.servers.len() == usize::from(args.region_servers) {
                break;
            }
        }
        for p in &mut processes {
            if let Ok(Some(status)) = p.child.try_wait() {
                return Err(format!(
                    "{} exited ({status}); see {}",
                    p.name,
                    dir.join("logs").join(format!("{}.log", p.name)).display()
                ));
            }
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the cluster did not come up within 2 minutes; see the logs in {}",
                dir.join("logs").display()
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    println!("Basalt local cluster is up (data: {storage})");
    println!("  {:<15} {quorum}", "ZooKeeper");
    println!(
        "  {:<15} native RPC 127.0.0.1:{master_port}  web UI http://127.0.0.1:{master_info}/",
        "master"
    );
    for row in &rows {
        println!("{row}");
    }
    println!(
        "Logs in {}. Try: basalt shell --host 127.0.0.1 --port <a thrift port above>. Ctrl-C stops everything.",
        dir.join("logs").display()
    );
    let _ = std::io::stdout().flush();
    stop_signals.wait();
    println!("stopping the region servers, the master, then ZooKeeper");
    // Region servers first (their regions flush), then the master.
    for p in processes.iter_mut().skip(1) {
        p.stop();
    }
    if let Some(master) = processes.first_mut() {
        master.stop();
    }
    drop(processes);
    drop(zookeeper);
    Ok(())
}

/// Waits until `process`'s log has a line containing `ready`, and reads
/// the ports it logged as listening (by kind: `thrift`, `thrift2`, `rest`,
/// `info`, `rpc-master`, `rpc-region-server`).
fn wait_for_log(
    dir: &Path,
    process: &mut Managed,
    ready: &str,
) -> Result<std::collections::BTreeMap<String, u16>, String> {
    let path = dir.join("logs").join(format!("{}.log", process.name));
    let deadline = Instant::now() + START_LIMIT;
    loop {
        let text = fs::read_to_string(&path).unwrap_or_default();
        if text.lines().any(|l| l.contains(ready)) {
            let mut ports = std::collections::BTreeMap::new();
            for line in text.lines().filter(|l| l.contains("listening")) {
                let Some(port) = line
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("address="))
                    .and_then(|a| a.rsplit(':').next())
                    .and_then(|p| p.parse::<u16>().ok())
                else {
                    continue;
                };
                let kind = if line.contains("info server listening") {
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
                };
                ports.insert(kind.to_string(), port);
            }
            return Ok(ports);
        }
        if let Ok(Some(status)) = process.child.try_wait() {
            return Err(format!(
                "{} exited ({status}); see {}",
                process.name,
                path.display()
            ));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{} was not ready within 2 minutes; see {}",
                process.name,
                path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
