//! `basalt`: the command-line entry point. `basalt serve` runs the HBase
//! Thrift1 gateway (and, when enabled, the REST gateway) on an embedded
//! database; `basalt shell` is HBase's shell.

// No crate of the workspace needs unsafe code; the compiler keeps it so.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use serde::Deserialize;

use basalt::{Database, Options};
use basalt_info::{InfoConfig, InfoServer};
use basalt_object_store::{open_storage, StorageConfig};
use basalt_rest::{RestConfig, RestServer};
use basalt_rpc::zk::{ZkConfig, ZkRegistration};
use basalt_rpc::{RpcConfig, RpcServer};
use basalt_thrift::{Flavour, Server, ServerConfig};

/// The allocator of every `basalt` process: jemalloc, not the system's.
///
/// Why: under a server's load glibc's malloc keeps what memstores and
/// block caches free inside its per-thread arenas (64 MiB heaps it only
/// trims from the top), so after a 1M-record YCSB load `basalt serve`
/// held 1.1 GiB of RSS with 142 MiB of memstore counted, and the resident
/// size grew past the configured memory budget. jemalloc returns freed
/// pages to the system on a time decay (measured in
/// bench/results/2026-11-29-memory.md), here from a background thread
/// after one second (its options are compiled in: `.cargo/config.toml`).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod allocator_metrics;
mod cluster;
mod import_cmd;
mod kerberos_args;
mod keys;
mod local_cluster;
mod replication_metrics;
mod shell;
mod snapshot_cmd;
mod stop_signals;

#[derive(Debug, Parser)]
#[command(
    name = "basalt",
    version,
    about = "Basalt: an HBase-compatible wide-column database"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the HBase Thrift1 API (happybase and other Thrift clients)
    /// and, with --rest-port, HBase's REST API.
    Serve(ServeArgs),
    /// The HBase shell: HBase's commands against a server or a data directory.
    Shell(shell::ShellArgs),
    /// hbtop for Basalt: the load of every region, table or server,
    /// refreshed every few seconds (docs/top.md).
    Top(basalt_top::TopArgs),
    /// Benchmarks: YCSB workloads, db_bench-compatible micro benchmarks,
    /// and the comparison with RocksDB and fjall.
    Bench(basalt_bench::command::BenchArgs),
    /// Verify every checksum and invariant of a stopped data directory
    /// (HBase's hbck, RocksDB's sst_dump): exit 0 when all is well, 1 with
    /// every problem (file and offset) otherwise. Changes nothing.
    Check(CheckArgs),
    /// Repair a stopped data directory: quarantine damaged store files,
    /// recover a damaged log. Moves aside, never deletes.
    Repair(RepairArgs),
    /// Cluster mode: a master (the active one assigns regions and keeps
    /// the catalog; others wait as backups). Takes serve's flags; needs
    /// --storage and --zookeeper. See docs/cluster.md.
    Master(ServeArgs),
    /// Cluster mode: a region server (serves the regions the master
    /// assigns it, and every gateway over the whole cluster). Takes
    /// serve's flags; needs --storage and --zookeeper.
    Regionserver(ServeArgs),
    /// Cluster mode on this machine, for trying it: ZooKeeper, a master
    /// and three region servers, with the data in a local directory.
    /// Prints where everything listens; Ctrl-C stops it all.
    LocalCluster(local_cluster::LocalClusterArgs),
    /// Row keys: `analyze` looks at sample keys and recommends a design.
    Keys(keys::KeysArgs),
    /// Snapshots of a data set, no server needed: `export` copies one to
    /// another Basalt's storage (HBase's ExportSnapshot), `list` shows them.
    Snapshot(snapshot_cmd::SnapshotArgs),
    /// Data from HBase: `hbase-snapshot` imports an HBase snapshot (its
    /// files read directly, no server needed on HBase's side) as a table.
    Import(import_cmd::ImportArgs),
    /// One table in two clusters (HBase or Basalt, found through their
    /// ZooKeeper) compared cell by cell, every version: per range the rows,
    /// cells and a digest of each side, then the first differing rows.
    /// Exit status 1 when they differ.
    Compare(import_cmd::CompareArgs),
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// The data directory to check (no server may hold it).
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,
}

#[derive(Debug, clap::Args)]
struct RepairArgs {
    /// The data directory to repair (no server may hold it).
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,
    /// Move this store file into <DIR>/quarantine and commit its store's
    /// manifest (and those linking to it) without it; may be repeated.
    #[arg(long, value_name = "FILE")]
    quarantine: Vec<PathBuf>,
    /// Open the log in this recovery mode: absolute-consistency (refuse
    /// any damage) or point-in-time (keep records up to the first damaged
    /// one, move the rest into the quarantine).
    #[arg(long, value_name = "MODE")]
    wal_recovery: Option<basalt::check::WalRecovery>,
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// TOML configuration file; flags given here override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Data directory (default ./basalt-data). With --storage it holds
    /// only local state: the lock, the write-ahead log, the disk cache.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Keep the data on object storage: s3://BUCKET[/PREFIX] (endpoint,
    /// region and credentials from the AWS_* environment variables) or
    /// file:///SHARED/DIR. Default: the data directory.
    #[arg(long, value_name = "URL")]
    storage: Option<String>,
    /// Thrift port (default 9090; 0 picks a free one).
    #[arg(long, value_name = "PORT")]
    thrift_port: Option<u16>,
    /// Thrift2 port (default 9091; 0 picks a free one).
    #[arg(long, value_name = "PORT")]
    thrift2_port: Option<u16>,
    /// Do not serve Thrift2.
    #[arg(long, conflicts_with = "thrift2_port")]
    no_thrift2: bool,
    /// REST (Stargate) port (default 8080; 0 picks a free one).
    #[arg(long, value_name = "PORT")]
    rest_port: Option<u16>,
    /// Do not serve REST.
    #[arg(long, conflicts_with = "rest_port")]
    no_rest: bool,
    /// Info server port: the web UI, its JSON API and Prometheus /metrics
    /// (default 16010, HBase's master UI; a region server 16030; 0 picks a
    /// free one). Named here, a taken port fails the start.
    #[arg(long, value_name = "PORT")]
    info_port: Option<u16>,
    /// Do not serve the info server.
    #[arg(long, conflicts_with = "info_port")]
    no_info: bool,
    /// Address to listen on, for every gateway (default 127.0.0.1).
    #[arg(long, value_name = "ADDR")]
    bind: Option<String>,
    /// Serve HBase's native RPC (master and region server ports) for
    /// HBase's own clients; implied by --zookeeper.
    #[arg(long)]
    native_rpc: bool,
    /// Register in ZooKeeper (HOST:PORT[,HOST:PORT...]) so native HBase
    /// clients find this server with only hbase.zookeeper.quorum set.
    #[arg(long, value_name = "QUORUM")]
    zookeeper: Option<String>,
    /// Native RPC master port (default 16000; 0 picks a free one).
    #[arg(long, value_name = "PORT")]
    master_port: Option<u16>,
    /// Native RPC region server port (default 16020; 0 picks a free one).
    #[arg(long, value_name = "PORT")]
    region_server_port: Option<u16>,
}

/// The configuration file: every option has a default, so an empty (or
/// missing) file is a valid configuration.
///
/// ```toml
/// data_dir = "basalt-data"
///
/// [thrift]
/// bind = "127.0.0.1"
/// port = 9090
/// max_frame_bytes = 16777216
/// scanner_lease_ms = 60000
/// worker_threads = 2
/// max_blocking_threads = 32
/// max_scanners_per_connection = 1000
/// max_scanners = 4096
/// max_connections = 1000
/// idle_timeout_ms = 60000
/// max_in_flight_bytes = 67108864
///
/// [thrift.tls]       # TLS on the Thrift1 port (docs/security.md); [thrift2.tls] likewise
/// # cert_file = "server.pem"       # chain, PEM; its SANs name the host clients connect to
/// # key_file = "server-key.pem"    # PEM; refused when readable by every user
/// # client_ca_file = "ca.pem"      # require client certificates signed by this CA
/// # plaintext = false              # also accept plaintext on the same port
///
/// [thrift2]           # the same settings; port 9091; enabled = false turns it off
/// port = 9091
///
/// [rest]              # HBase's REST gateway; enabled = false turns it off
/// enabled = true
/// bind = "127.0.0.1"
/// port = 8080
/// worker_threads = 2
/// max_blocking_threads = 32
/// max_connections = 1000
/// idle_timeout_ms = 60000
/// max_request_bytes = 16777216
/// max_in_flight_bytes = 67108864
/// max_response_cells = 100000
/// max_scanners = 4096
/// scanner_lease_ms = 60000
/// read_only = false
///
/// [rest.tls]          # HTTPS on the REST port: the keys of [thrift.tls]
/// # cert_file = "server.pem"
/// # key_file = "server-key.pem"
///
/// [info]              # web UI, JSON API, /metrics (docs/web-ui.md); enabled = false turns it off
/// enabled = true
/// bind = "127.0.0.1"
/// port = 16010        # basalt regionserver: 16030 while this is the default
/// port_auto = true    # a taken port: serve on a free one (not with --info-port)
/// worker_threads = 1
/// max_blocking_threads = 4
/// max_connections = 64
/// idle_timeout_ms = 30000
/// heatmap_rows = 64
/// max_heatmap_rows = 512
///
/// [info.tls]          # HTTPS on the web UI: the keys of [thrift.tls]
/// # cert_file = "server.pem"
/// # key_file = "server-key.pem"
///
/// [rpc]               # HBase's native RPC; on with --native-rpc or --zookeeper
/// enabled = false
/// bind = "127.0.0.1"
/// master_port = 16000
/// region_server_port = 16020
/// # hostname = "db1.example.com"   # announced to clients; default: the bind address
/// max_frame_bytes = 67108864
/// max_in_flight_bytes = 268435456
/// max_connections = 1000
/// idle_timeout_ms = 600000
/// max_scanners = 4096
/// scanner_lease_ms = 60000
/// default_scan_rows = 100
/// max_scan_answer_bytes = 2097152
/// max_calls_per_connection = 64
///
/// [zookeeper]         # registration for native clients; on with --zookeeper
/// # quorum = "zk1:2181,zk2:2181"
/// znode_parent = "/hbase"
/// session_timeout_ms = 10000   # basalt serve; master and regionserver: 4000
/// connect_timeout_ms = 10000
///
/// [storage]           # object storage (docs/object-storage.md); no url: the data directory
/// # url = "s3://bucket/prefix"     # or "file:///shared/dir"; --storage overrides
/// # endpoint = "http://127.0.0.1:9000"   # else AWS_ENDPOINT_URL; implies path-style
/// # region = "us-east-1"           # else AWS_REGION
/// # access_key_id = "..."          # else AWS_ACCESS_KEY_ID
/// # secret_access_key = "..."      # else AWS_SECRET_ACCESS_KEY
/// # allow_http = false             # else AWS_ALLOW_HTTP
/// # cache_dir = "basalt-data/cache"
/// cache_bytes = 1073741824
/// part_bytes = 1048576
/// request_timeout_ms = 30000
/// min_bytes_per_sec = 1048576
/// max_object_bytes = 5368709120
/// runtime_threads = 2
/// wal_group_commit_ms = 0
/// wal_objects_in_flight = 1
/// # wal_append = true             # shared directory: log batches appended to segments
///                                 # (default: on local file systems only, not NFS/SMB/FUSE)
///
/// [database]          # engine options (see basalt::Options)
/// wal_segment_bytes = 67108864
///
/// [limits]            # shared by every gateway (docs/limits.md)
/// max_filters = 1000
/// max_filter_depth = 32
/// max_answer_bytes_in_flight = 134217728
///
/// [security]          # access control (docs/security.md); off by default
/// authorization = false
/// superusers = []     # users and "@groups" that pass every check
/// # server_user = "hbase"          # default: the process's USER; always a superuser
/// # [security.groups]              # group membership by user
/// # alice = ["admins"]
///
/// [rpc.tls]           # TLS on both native RPC ports: the keys of [thrift.tls]
/// # cert_file = "server.pem"
/// # key_file = "server-key.pem"
/// # client_ca_file = "ca.pem"
/// # plaintext = false              # also accept plaintext on the same ports
///
/// [cluster_tls]       # TLS of the cluster's own calls (needed with [rpc.tls] in a cluster)
/// # ca_file = "ca.pem"
/// # cert_file = "node.pem"         # when the servers require client certificates
/// # key_file = "node-key.pem"
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Config {
    /// The data directory (overrides `database.data_dir`).
    data_dir: Option<PathBuf>,
    /// The Thrift server.
    thrift: ServerConfig,
    /// The Thrift2 server.
    thrift2: Thrift2Config,
    /// The REST server.
    rest: RestConfig,
    /// The info server (web UI, JSON API, /metrics).
    info: InfoConfig,
    /// HBase's native RPC.
    rpc: RpcConfig,
    /// ZooKeeper registration.
    zookeeper: ZkConfigFile,
    /// Where the data lives (object storage).
    storage: StorageConfig,
    /// The embedded database.
    database: Options,
    /// Limits every gateway shares (docs/limits.md).
    limits: LimitsConfig,
    /// Access control (docs/security.md).
    security: basalt::SecurityOptions,
    /// TLS of the cluster's own calls to other processes (docs/security.md).
    cluster_tls: Option<basalt::tls::TlsClientSettings>,
}

/// `[limits]`: bounds on the work one request may ask of the server,
/// whatever gateway it came through.
#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct LimitsConfig {
    /// Most filters in one request's filter tree.
    max_filters: usize,
    /// Deepest nesting of one request's filter tree.
    max_filter_depth: usize,
    /// Bytes of answers being built or waiting for their clients, over
    /// every gateway of the process.
    max_answer_bytes_in_flight: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_filters: basalt::DEFAULT_MAX_FILTERS,
            max_filter_depth: basalt::DEFAULT_MAX_FILTER_DEPTH,
            max_answer_bytes_in_flight: basalt::guard::DEFAULT_ANSWER_BUDGET_BYTES,
        }
    }
}

/// `[zookeeper]`: where to register; no quorum means no registration.
#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ZkConfigFile {
    quorum: Option<String>,
    znode_parent: String,
    /// `None`: the command's default (10 s for `serve`, 4 s for cluster
    /// processes, whose session timeout is the bulk of a recovery).
    session_timeout_ms: Option<u64>,
    connect_timeout_ms: u64,
}

impl Default for ZkConfigFile {
    fn default() -> Self {
        let d = ZkConfig::default();
        ZkConfigFile {
            quorum: None,
            znode_parent: d.znode_parent,
            session_timeout_ms: None,
            connect_timeout_ms: d.connect_timeout_ms,
        }
    }
}

/// `[thrift2]`: a Thrift server's settings, and whether to run it.
#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Thrift2Config {
    enabled: bool,
    #[serde(flatten)]
    server: ServerConfig,
}

impl Default for Thrift2Config {
    fn default() -> Self {
        Thrift2Config {
            enabled: true,
            server: ServerConfig::thrift2(),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The shell's and the benchmarks' output is their own; the engine only
    // speaks up for trouble.
    init_logging(
        if matches!(
            cli.command,
            Command::Shell(_)
                | Command::Top(_)
                | Command::Bench(_)
                | Command::Check(_)
                | Command::Repair(_)
                | Command::Keys(_)
                | Command::Snapshot(_)
                | Command::Import(_)
                | Command::Compare(_)
        ) {
            "warn"
        } else {
            "info"
        },
    );
    let result = match cli.command {
        Command::Serve(args) => serve(args),
        Command::Shell(args) => return shell::run(args),
        Command::Top(args) => return basalt_top::run(args),
        Command::Bench(args) => basalt_bench::command::run(args),
        Command::Check(args) => return check(&args),
        Command::Repair(args) => repair(&args),
        Command::Master(args) => cluster::run_master(args),
        Command::Regionserver(args) => cluster::run_region_server(args),
        Command::LocalCluster(args) => local_cluster::run(args),
        Command::Keys(args) => return keys::run(args),
        Command::Snapshot(args) => snapshot_cmd::run(args),
        Command::Import(args) => import_cmd::run(args),
        Command::Compare(args) => {
            return match import_cmd::compare(args) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("basalt: {e}");
                    ExitCode::from(2)
                }
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Once, on stderr, as a sentence: not also as a log line.
            eprintln!("basalt: {}", sentence(&e));
            ExitCode::FAILURE
        }
    }
}

/// `message` ending in a full stop, unless it already ends in punctuation
/// or spans lines (a TOML error points at the line with a caret).
fn sentence(message: &str) -> String {
    let message = message.trim_end();
    if message.contains('\n') || message.ends_with(['.', '!', '?', ':']) {
        message.to_string()
    } else {
        format!("{message}.")
    }
}

fn init_logging(default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        // A log line that cannot be written (stderr closed) is dropped:
        // reporting that failure on stderr again would panic the server.
        .log_internal_errors(false)
        .init();
}

/// What `basalt serve` runs: the database's options and each gateway's
/// settings (`None` for a gateway turned off).
struct ServePlan {
    options: Options,
    storage: StorageConfig,
    thrift: ServerConfig,
    thrift2: Option<ServerConfig>,
    rest: Option<RestConfig>,
    info: Option<InfoConfig>,
    rpc: Option<RpcConfig>,
    zookeeper: Option<ZkConfig>,
}

/// The ZooKeeper session timeout of `basalt master` and `basalt
/// regionserver` unless configured: a killed region server is noticed
/// this long after its death (docs/cluster.md, "Failure timeline").
const CLUSTER_SESSION_TIMEOUT_MS: u64 = 4000;

/// The plan of `basalt serve`.
fn load_config(args: &ServeArgs) -> Result<ServePlan, String> {
    load_config_for(args, false)
}

/// The gateways' `max_blocking_threads` when the data is on object
/// storage and the configuration does not set it (see `load_config_for`).
const OBJECT_STORAGE_BLOCKING_THREADS: usize = 256;

/// The plan of `basalt serve` (`cluster` false) or of a cluster process.
fn load_config_for(args: &ServeArgs, cluster: bool) -> Result<ServePlan, String> {
    let (mut config, raw) = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
            let config = toml::from_str::<Config>(&text)
                .map_err(|e| format!("config file {}: {e}", path.display()))?;
            let raw = toml::from_str::<toml::Table>(&text)
                .map_err(|e| format!("config file {}: {e}", path.display()))?;
            (config, raw)
        }
        None => (Config::default(), toml::Table::new()),
    };
    if let Some(dir) = config.data_dir.take() {
        config.database.data_dir = dir;
    }
    basalt::set_filter_limits(config.limits.max_filters, config.limits.max_filter_depth);
    announce_security(&config.security);
    prepare_kerberos(&config.security)?;
    // The cluster's own calls say they come from the server user, a
    // superuser, which the internal services accept alone.
    basalt_rpc::client::set_process_user(&config.security.server_user());
    config.database.security = config.security.clone();
    if let Some(settings) = &config.cluster_tls {
        let client = basalt::tls::client_config(settings).map_err(|e| e.to_string())?;
        basalt_rpc::client::set_process_tls(client);
    } else if cluster && config.rpc.tls.as_ref().is_some_and(|tls| !tls.plaintext) {
        return Err("[rpc.tls] takes TLS only, so the cluster's own calls need it too: set [cluster_tls] ca_file (the CA of the servers' certificates; docs/security.md)".into());
    }
    basalt::guard::set_answer_budget_bytes(config.limits.max_answer_bytes_in_flight);
    if let Some(dir) = &args.data_dir {
        config.database.data_dir = dir.clone();
    }
    if let Some(url) = &args.storage {
        config.storage.url = Some(url.clone());
    }
    if config
        .storage
        .url
        .as_deref()
        .is_some_and(|url| url.starts_with("s3://"))
    {
        // On object storage a write's call waits milliseconds for its log
        // object's `PUT`, holding its thread. With the local default (32
        // threads) 64 clients get at most 32 writes into the log at once,
        // which take turns in two batches of about 16 each; measured with
        // 64 YCSB clients on moto, 64 threads took the load from about 3,500
        // to 4,900-6,000 inserts/s (bench/results/2026-11-29-object-log.md).
        // Waiting threads cost little, so the gateways get many.
        let unset = |section: &str| {
            !raw.get(section)
                .and_then(|table| table.as_table())
                .is_some_and(|table| table.contains_key("max_blocking_threads"))
        };
        if unset("thrift") {
            config.thrift.max_blocking_threads = OBJECT_STORAGE_BLOCKING_THREADS;
        }
        if unset("thrift2") {
            config.thrift2.server.max_blocking_threads = OBJECT_STORAGE_BLOCKING_THREADS;
        }
        if unset("rest") {
            config.rest.max_blocking_threads = OBJECT_STORAGE_BLOCKING_THREADS;
        }
        if unset("rpc") {
            config.rpc.max_blocking_threads = OBJECT_STORAGE_BLOCKING_THREADS;
        }
    }
    if let Some(port) = args.thrift_port {
        config.thrift.port = port;
    }
    if let Some(port) = args.thrift2_port {
        config.thrift2.server.port = port;
    }
    if let Some(port) = args.rest_port {
        config.rest.port = port;
    }
    if let Some(port) = args.info_port {
        config.info.port = port;
        // A port named on the command line must be that port.
        config.info.port_auto = false;
    }
    if let Some(bind) = &args.bind {
        config.info.bind = bind.clone();
        config.thrift.bind = bind.clone();
        config.thrift2.server.bind = bind.clone();
        config.rest.bind = bind.clone();
        config.rpc.bind = bind.clone();
    }
    if let Some(port) = args.master_port {
        config.rpc.master_port = port;
    }
    if let Some(port) = args.region_server_port {
        config.rpc.region_server_port = port;
    }
    if let Some(quorum) = &args.zookeeper {
        config.zookeeper.quorum = Some(quorum.clone());
    }
    let zookeeper = config.zookeeper.quorum.clone().map(|quorum| ZkConfig {
        quorum,
        znode_parent: config.zookeeper.znode_parent.clone(),
        session_timeout_ms: config.zookeeper.session_timeout_ms.unwrap_or(if cluster {
            CLUSTER_SESSION_TIMEOUT_MS
        } else {
            ZkConfig::default().session_timeout_ms
        }),
        connect_timeout_ms: config.zookeeper.connect_timeout_ms,
    });
    // Registering in ZooKeeper only makes sense with something to find.
    let rpc = (config.rpc.enabled || args.native_rpc || zookeeper.is_some())
        .then_some(config.rpc.clone());
    let thrift2 = (config.thrift2.enabled && !args.no_thrift2).then_some(config.thrift2.server);
    let rest = (config.rest.enabled && !args.no_rest).then_some(config.rest);
    let info = (config.info.enabled && !args.no_info).then_some(config.info);
    Ok(ServePlan {
        options: config.database,
        storage: config.storage,
        thrift: config.thrift,
        thrift2,
        rest,
        info,
        rpc,
        zookeeper,
    })
}

/// The database as Thrift and REST use it: acting as the server user,
/// as HBase's gateways act as their login user (they authenticate no
/// client yet). A superuser, so nothing is refused; what it creates is
/// owned by that user, as in HBase.
pub(crate) fn gateway_view(db: &basalt::Database) -> basalt::Database {
    db.acting_as_user(&db.security().server_user())
}

/// Says at start-up whether requests are checked, and as whom the
/// gateways act (docs/security.md).
fn announce_security(security: &basalt::SecurityOptions) {
    let kerberos = security.authentication == basalt::Authentication::Kerberos;
    if !kerberos {
        tracing::info!(
            "authentication simple: native RPC clients are whom their connection header names, unproven (set [security] authentication = \"kerberos\"; docs/security.md)"
        );
    }
    if security.authorization && kerberos {
        tracing::info!(
            server_user = %security.server_user(),
            superusers = %security.superusers.join(","),
            "access control on: every request is checked against the grants of the user Kerberos authenticated, on native RPC, Thrift and REST alike"
        );
    } else if security.authorization {
        tracing::info!(
            server_user = %security.server_user(),
            superusers = %security.superusers.join(","),
            "access control on: every native RPC request is checked against the grants for its connection header's user; Thrift and REST act as the server user"
        );
    } else {
        tracing::info!(
            "access control off: every client may do everything (set [security] authorization = true; docs/security.md)"
        );
    }
}

/// With `authentication = "kerberos"`: checks the settings and the
/// keytab, and points MIT Kerberos at the keytab. Runs while the process
/// has one thread: the environment is read by every later Kerberos call
/// and must not change under a running thread. The cluster's own calls
/// then authenticate as the server's principal too.
fn prepare_kerberos(security: &basalt::SecurityOptions) -> Result<(), String> {
    let Some(kerberos) = security.kerberos().map_err(|e| e.to_string())? else {
        return Ok(());
    };
    kerberos.validate().map_err(|e| e.to_string())?;
    if !basalt_kerberos::gss::built() {
        return Err(basalt_kerberos::KerberosError::NotBuilt.to_string());
    }
    for (name, value) in
        basalt_kerberos::gss::process_environment(&kerberos.keytab).map_err(|e| e.to_string())?
    {
        std::env::set_var(name, value);
    }
    basalt_rpc::client::set_process_kerberos(basalt_rpc::client::KerberosClient {
        server_principal: kerberos.principal.clone(),
        protection: kerberos.rpc_protection.clone(),
        client_principal: None,
    });
    tracing::info!(
        principal = %kerberos.principal,
        keytab = %kerberos.keytab.display(),
        "Kerberos authentication on: native RPC and Thrift clients authenticate with SASL GSSAPI, REST and web UI clients with SPNEGO (docs/security.md)"
    );
    Ok(())
}

fn serve(args: ServeArgs) -> Result<(), String> {
    let ServePlan {
        options,
        storage,
        thrift,
        thrift2,
        rest,
        info,
        rpc,
        zookeeper,
    } = load_config(&args)?;
    let stop_signals = stop_signals::StopSignals::install()?;
    // The ports first: a taken port then fails at once, before the data
    // directory is created, locked or replayed.
    let (bound, bound2, rest_bound) = bind_gateways(&thrift, thrift2.as_ref(), rest.as_ref())?;
    let info_bound = bind_info(info.as_ref())?;
    let rpc_bound = match &rpc {
        Some(c) => Some(bind_rpc(c)?),
        None => None,
    };
    let dir = options.data_dir.clone();
    let normalizer_period = Duration::from_millis(options.normalizer_period_ms);
    let storage =
        open_storage(&storage, &dir).map_err(|e| format!("cannot use the storage: {e}"))?;
    let mut builder = Database::builder(options);
    if let Some(s) = &storage {
        tracing::info!(url = %s.url, cache_bytes = s.cache_stats().capacity_bytes, "data on object storage");
        // The log goes to the storage too: the data directory holds only
        // the lock and the caches, and a second process on the same
        // storage fences this one (docs/object-storage.md, "Fencing").
        builder = builder
            .file_store(s.file_store())
            .wal_in_file_store(s.wal_options());
    }
    let db = builder.open().map_err(|e| match &storage {
        Some(s) => format!(
            "cannot open the database on {} (data directory {}): {e}",
            s.url,
            dir.display()
        ),
        None => format!("cannot open data directory {}: {e}", dir.display()),
    })?;
    let report = db.recovery_report();
    tracing::info!(
        data_dir = %dir.display(),
        tables = db.list_tables().len(),
        replayed = report.edits_replayed,
        "database open"
    );
    let server = bound.serve(gateway_view(&db)).map_err(|e| {
        // The database is closed before reporting, so its log is synced.
        let _ = db.close();
        listen_error(&thrift.bind, thrift.port, "--thrift-port", &e)
    })?;
    // Thrift1 first: its "listening" line stays the first one printed.
    let server2 = match (bound2, &thrift2) {
        (Some(b), Some(c)) => match b.serve_as(gateway_view(&db), Flavour::Thrift2) {
            Ok(s) => Some(s),
            Err(e) => {
                let _ = server.shutdown();
                return Err(listen_error(&c.bind, c.port, "--thrift2-port", &e));
            }
        },
        _ => None,
    };
    let rest_server = match (rest_bound, &rest) {
        (Some(b), Some(c)) => match b.serve(gateway_view(&db)) {
            Ok(s) => Some(s),
            Err(e) => {
                if let Some(s) = server2 {
                    s.stop();
                }
                let _ = server.shutdown();
                return Err(listen_error(&c.bind, c.port, "--rest-port", &e));
            }
        },
        _ => None,
    };
    let stop_others = |rest_server: Option<RestServer>, server2: Option<Server>| {
        if let Some(s) = rest_server {
            s.shutdown();
        }
        if let Some(s) = server2 {
            s.stop();
        }
    };
    let rpc_server = match rpc_bound {
        Some(b) => {
            let started = basalt_rpc::server::load_or_create_cluster_id(&dir)
                .map_err(|e| {
                    format!(
                        "cannot read or create the cluster id in {}: {e}",
                        dir.display()
                    )
                })
                .and_then(|id| {
                    b.serve(db.clone(), id)
                        .map_err(|e| format!("native RPC failed to start: {e}"))
                });
            match started {
                Ok(s) => Some(s),
                Err(e) => {
                    stop_others(rest_server, server2);
                    let _ = server.shutdown();
                    return Err(e);
                }
            }
        }
        None => None,
    };
    let registration = match (&rpc_server, &zookeeper) {
        (Some(s), Some(zk)) => match s.block_on(ZkRegistration::register(zk, s.identity())) {
            Some(Ok(r)) => {
                tracing::info!(quorum = %zk.quorum, znode_parent = %zk.znode_parent, "registered in ZooKeeper");
                Some(r)
            }
            Some(Err(e)) => {
                if let Some(s) = rpc_server {
                    s.stop();
                }
                stop_others(rest_server, server2);
                let _ = server.shutdown();
                return Err(format!("cannot register in ZooKeeper: {e}"));
            }
            None => None,
        },
        _ => None,
    };
    let extras: Vec<basalt_info::ExtraMetrics> = rpc_server
        .iter()
        .map(replication_metrics::reader)
        .chain([allocator_metrics::reader()])
        .collect();
    let info_server = match info_bound
        .map(|b| b.serve_with(db.clone(), extras))
        .transpose()
    {
        Ok(s) => s,
        Err(e) => {
            if let Some(s) = rpc_server {
                s.stop();
            }
            stop_others(rest_server, server2);
            let _ = server.shutdown();
            return Err(format!("the info server failed to start: {e}"));
        }
    };
    db.register_gateway("thrift", server.local_addr());
    if let Some(s) = &server2 {
        db.register_gateway("thrift2", s.local_addr());
    }
    if let Some(s) = &rest_server {
        db.register_gateway("rest", s.local_addr());
    }
    if let Some(s) = &rpc_server {
        db.register_gateway("hbase-master", s.master_addr());
        db.register_gateway("hbase-regionserver", s.region_server_addr());
    }
    if let Some(s) = &info_server {
        db.register_gateway("info", s.local_addr());
    }
    // After every gateway's own "listening" line: whoever watches the log
    // (tests, scripts) knows from this one that all of them serve.
    let gateways = db.gateways();
    let list: Vec<String> = gateways.iter().map(ToString::to_string).collect();
    tracing::info!(count = gateways.len(), gateways = %list.join(", "), "gateways serving");
    let normalizer = NormalizerChore::start(&db, normalizer_period);
    stop_signals.wait();
    normalizer.stop();
    // Out of ZooKeeper first: clients stop being sent here.
    if let (Some(s), Some(r)) = (&rpc_server, registration) {
        if let Some(Err(e)) = s.block_on(r.deregister()) {
            tracing::warn!(error = %e, "leaving ZooKeeper failed; the session's nodes go when it expires");
        }
    }
    if let Some(s) = rpc_server {
        s.stop();
    }
    if let Some(s) = info_server {
        s.shutdown();
    }
    // The other gateways share the database: they stop first, and
    // Thrift1's shutdown closes it.
    stop_others(rest_server, server2);
    let closed = match &storage {
        None => server.shutdown(),
        Some(s) => {
            // A clean stop flushes every table, so the next owner (this
            // or another data directory) replays nothing. A fenced server
            // fails here with the fenced error and exits 1.
            server.stop();
            let flushed = flush_all(&db);
            let closed = db.close().and(flushed);
            let stats = s.cache_stats();
            tracing::info!(
                hits = stats.hits,
                misses = stats.misses,
                hit_ratio = format!("{:.3}", stats.hit_ratio()),
                cached_bytes = stats.bytes,
                evictions = stats.evictions,
                "disk cache"
            );
            closed
        }
    };
    closed.map_err(|e| format!("closing the database failed: {e}"))
}

/// The one-process normalizer chore of `basalt serve`: every
/// `normalizer_period_ms` (0: never), while the normalizer switch is on,
/// one `Database::normalize` pass on a thread of its own (a pass flushes
/// and rewrites catalog versions: never on a gateway's thread). A cluster
/// member leaves it to the active master's chore.
struct NormalizerChore {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl NormalizerChore {
    fn start(db: &Database, period: Duration) -> NormalizerChore {
        if period.is_zero() || db.cluster().is_some() {
            return NormalizerChore {
                stop: None,
                thread: None,
            };
        }
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let db = db.clone();
        let thread = std::thread::Builder::new()
            .name("normalizer".into())
            .spawn(move || {
                // A message or a dropped sender both mean stop.
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(period)
                {
                    match db.normalizer_switch(None) {
                        Ok(true) => match db.normalize() {
                            Ok(run) if !run.plans.is_empty() || run.failed > 0 => {
                                tracing::info!(
                                    plans = run.plans.len(),
                                    failed = run.failed,
                                    "periodic normalizer"
                                );
                            }
                            Ok(_) => {}
                            Err(e) => tracing::warn!(error = %e, "periodic normalizer failed; due again next period"),
                        },
                        Ok(false) => {}
                        Err(e) => tracing::debug!(error = %e, "normalizer switch unreadable"),
                    }
                }
            });
        match thread {
            Ok(thread) => NormalizerChore {
                stop: Some(stop),
                thread: Some(thread),
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the normalizer thread; normalize runs only when asked");
                NormalizerChore {
                    stop: None,
                    thread: None,
                }
            }
        }
    }

    /// Stops the thread, after the pass it may be in.
    fn stop(mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Flushes every table (enabled or not: a disabled table has nothing in
/// memory); the first failure is returned after trying them all.
fn flush_all(db: &Database) -> basalt::Result<()> {
    let mut first = Ok(());
    for table in db.list_tables() {
        if let Err(e) = db.flush_table(&table) {
            if !matches!(e, basalt::Error::TableDisabled(_)) {
                tracing::warn!(table = %table, error = %e, "flush at shutdown failed; the write-ahead log keeps its edits");
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
    }
    first
}

/// `basalt check`: every problem on stdout, then the one-line summary.
fn check(args: &CheckArgs) -> ExitCode {
    match basalt::check::check(&args.data_dir) {
        Ok(report) => {
            for problem in &report.problems {
                println!("PROBLEM {problem}");
            }
            for note in &report.notes {
                println!("NOTE {note}");
            }
            println!("{}", report.summary());
            if report.is_healthy() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("basalt check: {}", sentence(&e.to_string()));
            ExitCode::from(2)
        }
    }
}

/// `basalt repair`: quarantines first, then the log.
fn repair(args: &RepairArgs) -> Result<(), String> {
    if args.quarantine.is_empty() && args.wal_recovery.is_none() {
        return Err(
            "nothing to repair: name --quarantine FILE and/or --wal-recovery MODE (run basalt check to find what is damaged)"
                .into(),
        );
    }
    for file in &args.quarantine {
        let report = basalt::check::quarantine_store_file(&args.data_dir, file)
            .map_err(|e| e.to_string())?;
        println!(
            "quarantined {} -> {}",
            report.file.display(),
            report.moved_to.display()
        );
        println!("lost key range: {}", report.lost_range);
        for manifest in &report.manifests_updated {
            println!("committed {}", manifest.display());
        }
    }
    if let Some(mode) = args.wal_recovery {
        let report = basalt::check::recover_wal(&args.data_dir, mode).map_err(|e| e.to_string())?;
        match &report.damage {
            None => println!("log intact: {} records kept", report.records_kept),
            Some(damage) => println!("log damaged: {damage}"),
        }
        if let Some((segment, kept_bytes, dropped)) = &report.truncated {
            println!(
                "point-in-time: cut {} at offset {kept_bytes}, dropping {dropped} bytes (a full copy is in the quarantine)",
                segment.display()
            );
        }
        for segment in &report.moved {
            println!(
                "point-in-time: moved {} into the quarantine",
                segment.display()
            );
        }
        if report.damage.is_some() {
            println!("{} records kept", report.records_kept);
        }
    }
    Ok(())
}

/// Why a gateway's port cannot be served, said so that the reader knows
/// what to do (`flag` chooses another port).
/// The Thrift1, Thrift2 (if on) and REST (if on) ports, bound (a taken
/// port fails before anything else is started).
fn bind_gateways(
    thrift: &ServerConfig,
    thrift2: Option<&ServerConfig>,
    rest: Option<&RestConfig>,
) -> Result<
    (
        basalt_thrift::Bound,
        Option<basalt_thrift::Bound>,
        Option<basalt_rest::Bound>,
    ),
    String,
> {
    let bound = Server::bind(thrift)
        .map_err(|e| listen_error(&thrift.bind, thrift.port, "--thrift-port", &e))?;
    let bound2 = match thrift2 {
        Some(c) => {
            Some(Server::bind(c).map_err(|e| listen_error(&c.bind, c.port, "--thrift2-port", &e))?)
        }
        None => None,
    };
    let rest_bound = match rest {
        Some(c) => Some(
            RestServer::bind(c).map_err(|e| listen_error(&c.bind, c.port, "--rest-port", &e))?,
        ),
        None => None,
    };
    Ok((bound, bound2, rest_bound))
}

/// The info server's port, bound (when it is on). A taken port fails
/// unless `port_auto` lets the server take a free one.
fn bind_info(info: Option<&InfoConfig>) -> Result<Option<basalt_info::Bound>, String> {
    info.map(|c| {
        InfoServer::listen(c).map_err(|e| listen_error(&c.bind, c.port, "--info-port", &e))
    })
    .transpose()
}

/// The native RPC master and region server ports, bound.
fn bind_rpc(c: &RpcConfig) -> Result<basalt_rpc::server::RpcBound, String> {
    RpcServer::bind(c).map_err(|e| {
        format!(
            "cannot listen for native RPC on {} ports {} and {}: {e} (choose others with --master-port and --region-server-port)",
            c.bind, c.master_port, c.region_server_port
        )
    })
}

fn listen_error(bind: &str, port: u16, flag: &str, e: &std::io::Error) -> String {
    let address = format!("{bind}:{port}");
    match e.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "cannot listen on {address}: the port is already in use (another basalt serve?); \
             stop what holds it or choose another port with {flag}"
        ),
        _ => format!("cannot listen on {address}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve_args(extra: &[&str]) -> ServeArgs {
        let argv = ["basalt", "serve"].iter().chain(extra).copied();
        match Cli::try_parse_from(argv).map(|cli| cli.command) {
            Ok(Command::Serve(args)) => args,
            other => panic!("not a serve command: {other:?}"),
        }
    }

    #[test]
    fn on_object_storage_the_gateways_let_many_calls_wait_unless_configured() {
        let local = load_config(&serve_args(&[])).unwrap();
        assert_eq!(local.thrift.max_blocking_threads, 32);
        let s3 = load_config(&serve_args(&["--storage", "s3://bucket/prefix"])).unwrap();
        assert_eq!(
            s3.thrift.max_blocking_threads,
            OBJECT_STORAGE_BLOCKING_THREADS
        );
        assert_eq!(
            s3.thrift2.map(|t| t.max_blocking_threads),
            Some(OBJECT_STORAGE_BLOCKING_THREADS)
        );
        assert_eq!(
            s3.rest.map(|r| r.max_blocking_threads),
            Some(OBJECT_STORAGE_BLOCKING_THREADS)
        );
        // A value the configuration sets is kept.
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("basalt.toml");
        std::fs::write(&config, "[thrift]\nmax_blocking_threads = 48\n").unwrap();
        let config = config.to_str().unwrap();
        let set = load_config(&serve_args(&["--config", config, "--storage", "s3://b/p"])).unwrap();
        assert_eq!(set.thrift.max_blocking_threads, 48);
        assert_eq!(
            set.rest.map(|r| r.max_blocking_threads),
            Some(OBJECT_STORAGE_BLOCKING_THREADS)
        );
    }
}
