//! What every call can see: the database, who this server is, the open
//! scanners, the master's switches, and the limits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use basalt::Database;

use crate::proto::hbase::ServerName;
use crate::scanners::Scanners;

/// The HBase version Basalt answers as (cluster status, `VersionInfo`,
/// the region server znode): the 2.x line whose protocol it speaks.
pub const HBASE_VERSION: &str = "2.6.1";

/// The identity this process announces (in ZooKeeper, `hbase:meta` and
/// `ClientMetaService`): where native clients reach the master and the
/// region server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Host name clients connect to.
    pub host: String,
    /// Master RPC port (HBase's 16000).
    pub master_port: u16,
    /// Region server RPC port (HBase's 16020).
    pub region_server_port: u16,
    /// Start time in milliseconds: HBase's start code, telling restarts of
    /// the same host and port apart.
    pub start_code: u64,
    /// The cluster id (`/hbase/hbaseid`, `GetClusterId`).
    pub cluster_id: String,
}

impl Identity {
    /// The master as a `ServerName`.
    pub fn master(&self) -> ServerName {
        ServerName {
            host_name: self.host.clone(),
            port: Some(u32::from(self.master_port)),
            start_code: Some(self.start_code),
        }
    }

    /// The region server as a `ServerName`.
    pub fn region_server(&self) -> ServerName {
        ServerName {
            host_name: self.host.clone(),
            port: Some(u32::from(self.region_server_port)),
            start_code: Some(self.start_code),
        }
    }

    /// HBase's text form of the region server's name: `host,port,startcode`
    /// (the `/hbase/rs` child and `info:sn`).
    pub fn region_server_text(&self) -> String {
        format!(
            "{},{},{}",
            self.host, self.region_server_port, self.start_code
        )
    }
}

/// Limits of the native RPC gateway; every one is in `[rpc]` of the
/// configuration file (docs/native-rpc.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcLimits {
    /// Largest request frame (HBase's `hbase.ipc.max.request.size`,
    /// 256 MiB there; 64 MiB here, as the Thrift gateway).
    pub max_frame_bytes: usize,
    /// Open connections at most; more are closed at once.
    pub max_connections: usize,
    /// A connection silent this long is closed.
    pub idle_timeout_ms: u64,
    /// Open scanners at most (over all connections).
    pub max_scanners: usize,
    /// A scanner not called this long is closed (HBase's
    /// `hbase.client.scanner.timeout.period`, 60 s).
    pub scanner_lease_ms: u64,
    /// Rows per scan answer when the client asks for none (HBase's
    /// `hbase.client.scanner.caching` is unbounded and sized by bytes; a
    /// row count keeps one answer small).
    pub default_scan_rows: usize,
    /// Bytes per scan answer at most when the client sets no
    /// `max_result_size` (HBase's `hbase.server.scanner.max.result.size`,
    /// 100 MiB; 2 MiB as HBase's client default).
    pub max_scan_answer_bytes: usize,
    /// Calls being answered at once per connection; more wait.
    pub max_calls_per_connection: usize,
    /// Bytes per scan answer at most whatever the client asks (its
    /// `max_result_size` is lowered to this): HBase's server-side
    /// `hbase.server.scanner.max.result.size`, 4 MiB here.
    pub max_answer_bytes: usize,
    /// How long a scan call may read before it answers what it has (a
    /// heartbeat when it has nothing and the client takes heartbeats, as
    /// HBase's time-limited scans do); 0 never.
    pub scan_call_timeout_ms: u64,
    /// How long an answer may wait for room in the answer budget, and a
    /// connection may make no progress writing one before it is dropped.
    pub write_timeout_ms: u64,
}

impl Default for RpcLimits {
    fn default() -> Self {
        RpcLimits {
            max_frame_bytes: 64 << 20,
            max_connections: 1000,
            idle_timeout_ms: 10 * 60 * 1000,
            max_scanners: 4096,
            scanner_lease_ms: 60_000,
            default_scan_rows: 100,
            max_scan_answer_bytes: 2 << 20,
            max_calls_per_connection: 64,
            max_answer_bytes: basalt::guard::DEFAULT_MAX_ANSWER_BYTES,
            scan_call_timeout_ms: basalt::guard::DEFAULT_SCAN_CALL_TIMEOUT_MS,
            write_timeout_ms: basalt::guard::DEFAULT_WRITE_TIMEOUT_MS,
        }
    }
}

/// The master's switches that have no effect in one process but that the
/// Admin API reads and sets (catalog janitor, cleaner chore): kept so a
/// client reads back what it set. The balancer, normalizer and snapshot
/// cleanup switches are the catalog's (`Database::balancer_switch`,
/// `Database::normalizer_switch`, `Database::snapshot_cleanup_switch`), and
/// so are the split and merge switches (`Database::split_or_merge_switch`),
/// which gate every gateway's splits and merges.
#[derive(Debug)]
pub struct Switches {
    /// `EnableCatalogJanitor` / `IsCatalogJanitorEnabled`.
    pub catalog_janitor: AtomicBool,
    /// `SetCleanerChoreRunning`.
    pub cleaner_chore: AtomicBool,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            catalog_janitor: AtomicBool::new(true),
            cleaner_chore: AtomicBool::new(true),
        }
    }
}

impl Switches {
    /// Sets `switch` and answers its previous value.
    pub fn swap(switch: &AtomicBool, on: bool) -> bool {
        switch.swap(on, Ordering::SeqCst)
    }

    /// Reads `switch`.
    pub fn get(switch: &AtomicBool) -> bool {
        switch.load(Ordering::SeqCst)
    }
}

/// Shared by every connection and call.
#[derive(Debug)]
pub struct RpcContext {
    /// The database served.
    pub db: Arc<Database>,
    /// Who this server is.
    pub identity: Identity,
    /// Limits.
    pub limits: RpcLimits,
    /// Open scanners.
    pub scanners: Scanners,
    /// The master's switches.
    pub switches: Switches,
    /// What `ReplicateWALEntry` applied (Basalt as a replication sink).
    pub replication_sink: Arc<crate::replication_sink::SinkMetrics>,
}

impl RpcContext {
    /// A context serving `db` as `identity`.
    pub fn new(db: Arc<Database>, identity: Identity, limits: RpcLimits) -> RpcContext {
        let scanners = Scanners::new(limits.max_scanners, limits.scanner_lease_ms);
        RpcContext {
            db,
            identity,
            limits,
            scanners,
            switches: Switches::default(),
            replication_sink: Arc::default(),
        }
    }
}
