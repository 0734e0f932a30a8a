//! Cluster coordination: the one ZooKeeper session of one cluster process
//! (`basalt master`, `basalt regionserver`), in HBase's znode layout so
//! HBase's own clients and tools find the cluster unchanged.
//!
//! 1. [`Coordinator::connect`] opens the session; [`Coordinator::session`]
//!    follows its state. The session is never replaced (unlike
//!    [`crate::zk::ZkRegistration`]): once it has expired the master may
//!    already have declared this process dead and fenced it, so the caller
//!    stops the process instead.
//! 2. [`Coordinator::ensure_cluster_znodes`] lays out the persistent
//!    znodes and checks that `hbaseid` names this cluster.
//! 3. Region servers register (`rs/<name>`, ephemeral); masters run for
//!    master ([`Coordinator::run_for_master`]): the ephemeral `master`
//!    znode, or a backup under `backup-masters` that waits on a watch of
//!    `master` until it goes, then tries again.
//! 4. The active master says where `hbase:meta` is served
//!    (`meta-region-server`) and which catalog version is the newest
//!    (`basalt/catalog`); any process publishes its extra ports
//!    (`basalt/<role>/<name>`).
//! 5. Watcher tasks keep [`Coordinator::watch_active_master`],
//!    [`Coordinator::watch_region_servers`] and
//!    [`Coordinator::watch_catalog_version`] current: ZooKeeper's watches
//!    fire once, so each task reads again and re-arms after every event.
//! 6. [`Coordinator::close`] ends the session; ZooKeeper deletes its
//!    ephemeral znodes at once.
//!
//! Under the base znode (`/hbase`); HBase's envelope (see [`crate::zk`])
//! on every protobuf:
//!
//! | znode | kind | data |
//! |---|---|---|
//! | `hbaseid` | persistent | `ClusterId` |
//! | `running` | persistent | `ClusterUp` (when first created) |
//! | `master` | ephemeral | `Master`: the active master's `ServerName`, info port |
//! | `backup-masters/<name>` | ephemeral | `Master`: a waiting master, as HBase writes it |
//! | `rs/<name>` | ephemeral | `RegionServerInfo` |
//! | `meta-region-server` | persistent | `MetaRegionServer`, state `OPEN` |
//! | `table`, `basalt` | persistent | none |
//! | `basalt/catalog` | persistent | the newest catalog version, decimal text |
//! | `basalt/<role>/<name>` | ephemeral | an address, UTF-8 text |
//!
//! `<name>` is HBase's text form of a server name, `host,port,startcode`.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use zookeeper_client::{Acls, Client, CreateMode, EventType, OneshotWatcher};

use crate::proto::hbase::{ClusterId, ClusterUp, Master, MetaRegionServer, ServerName};
use crate::zk::{
    self, decode_znode, encode_with_metadata, RegionServerInfo, TokioSpawner, WithSpawner,
    ZkConfig, ZkError, ZnodePaths,
};

/// Shortest and longest pause before a watcher task reads again after an
/// unexpected error (a lost connection is waited out instead): short
/// enough to catch up soon, long enough not to flood ZooKeeper or the log.
const MIN_RETRY: Duration = Duration::from_millis(100);
const MAX_RETRY: Duration = Duration::from_secs(5);

/// How often a create-then-inspect sequence is tried when other sessions
/// keep creating and deleting the same znode in between (each retry means
/// another session changed it, so a few are plenty).
const RACE_TRIES: usize = 3;

/// The state of a coordinator's ZooKeeper session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// Connected: requests are served, ephemeral znodes are in place.
    Connected,
    /// The connection is lost; the session (and its ephemeral znodes) may
    /// still be alive, and the client is reconnecting.
    Disconnected,
    /// The session expired: its ephemeral znodes are gone and other
    /// processes may have acted on that. Final.
    Expired,
    /// This process closed the session. Final.
    Closed,
}

impl SessionState {
    /// Whether the session is over (expired or closed): no state follows.
    pub fn has_ended(self) -> bool {
        matches!(self, SessionState::Expired | SessionState::Closed)
    }

    fn from_client(state: zookeeper_client::SessionState) -> SessionState {
        use zookeeper_client::SessionState as Zk;
        match state {
            Zk::SyncConnected => SessionState::Connected,
            // Never asked for (the client is not allowed read-only
            // servers); writes would fail there, so it is no connection.
            Zk::ConnectedReadOnly | Zk::Disconnected => SessionState::Disconnected,
            // A failed authentication ends the session without our asking,
            // with its ephemeral znodes: for the caller it is an expiry.
            Zk::Expired | Zk::AuthFailed => SessionState::Expired,
            Zk::Closed => SessionState::Closed,
        }
    }
}

/// The znodes of cluster coordination under one base znode: HBase's
/// ([`ZnodePaths`]) and Basalt's own under `basalt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinationPaths {
    /// HBase's znodes.
    pub hbase: ZnodePaths,
    /// Parent of Basalt's own znodes (`/hbase/basalt`).
    pub basalt: String,
    /// The newest catalog version (`/hbase/basalt/catalog`).
    pub catalog: String,
}

impl CoordinationPaths {
    /// The paths under `base` (checked by [`ZkConfig::connect_string`]).
    pub fn new(base: &str) -> CoordinationPaths {
        let basalt = format!("{base}/basalt");
        CoordinationPaths {
            hbase: ZnodePaths::new(base),
            catalog: format!("{basalt}/catalog"),
            basalt,
        }
    }

    /// A region server's ephemeral znode, `rs/<host>,<port>,<startcode>`.
    pub fn region_server(&self, server: &ServerName) -> String {
        format!("{}/{}", self.hbase.region_servers, server_name_text(server))
    }

    /// A waiting master's ephemeral znode, `backup-masters/<name>`.
    pub fn backup_master(&self, server: &ServerName) -> String {
        format!("{}/{}", self.hbase.backup_masters, server_name_text(server))
    }

    /// The parent of one role's addresses, `basalt/<role>`.
    pub fn role(&self, role: &str) -> String {
        format!("{}/{role}", self.basalt)
    }

    /// One server's address in a role, `basalt/<role>/<name>`.
    pub fn address(&self, role: &str, server: &ServerName) -> String {
        format!("{}/{}", self.role(role), server_name_text(server))
    }
}

/// HBase's text form of a server name, `host,port,startcode` (the
/// `/hbase/rs` children, `info:sn` in `hbase:meta`). A missing port or
/// start code is written as 0; the coordinator refuses such names before
/// writing them (see [`parse_server_name`] for the checks).
pub fn server_name_text(server: &ServerName) -> String {
    format!(
        "{},{},{}",
        server.host_name,
        server.port.unwrap_or(0),
        server.start_code.unwrap_or(0)
    )
}

/// Reads `host,port,startcode` back into a `ServerName`: exactly three
/// fields, a host name usable in a znode name, a port from 1 to 65535 and
/// a decimal start code.
pub fn parse_server_name(text: &str) -> Result<ServerName, ZkError> {
    let bad = |reason: String| ZkError::BadName {
        what: "server name",
        name: text.to_owned(),
        reason,
    };
    let fields: Vec<&str> = text.split(',').collect();
    let [host, port, start_code] = fields.as_slice() else {
        return Err(bad(format!(
            "expected host,port,startcode, found {} comma-separated fields",
            fields.len()
        )));
    };
    let port = parse_decimal(port)
        .and_then(|port| u16::try_from(port).ok())
        .filter(|port| *port != 0)
        .ok_or_else(|| bad(format!("port {port:?} is not a number from 1 to 65535")))?;
    let start_code = parse_decimal(start_code)
        .ok_or_else(|| bad(format!("start code {start_code:?} is not a decimal number")))?;
    let server = ServerName {
        host_name: (*host).to_owned(),
        port: Some(u32::from(port)),
        start_code: Some(start_code),
    };
    check_server_name(&server)?;
    Ok(server)
}

/// A decimal `u64` written with digits only (no sign, no blanks: what we
/// write is what we read).
fn parse_decimal(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Checks that a server name can become a znode name that reads back as
/// the same server: a host without `,`, `/`, blanks or control
/// characters, a port from 1 to 65535, a start code.
fn check_server_name(server: &ServerName) -> Result<(), ZkError> {
    let bad = |reason: &str| ZkError::BadName {
        what: "server name",
        name: server_name_text(server),
        reason: reason.to_owned(),
    };
    let host = &server.host_name;
    if host.is_empty() {
        return Err(bad("the host is empty"));
    }
    if host
        .chars()
        .any(|c| c == ',' || c == '/' || c.is_whitespace() || c.is_control())
    {
        return Err(bad(
            "the host may not hold ',', '/', blanks or control characters",
        ));
    }
    match server.port {
        Some(port) if (1..=u32::from(u16::MAX)).contains(&port) => {}
        _ => return Err(bad("the port must be from 1 to 65535")),
    }
    if server.start_code.is_none() {
        return Err(bad("the start code is missing"));
    }
    Ok(())
}

/// Checks a role of [`Coordinator::publish_address`]: one znode name, and
/// not `catalog` (that znode is the catalog version).
fn check_role(role: &str) -> Result<(), ZkError> {
    let bad = |reason: &str| ZkError::BadName {
        what: "role",
        name: role.to_owned(),
        reason: reason.to_owned(),
    };
    if role.is_empty() || role == "." || role == ".." {
        return Err(bad("a role must be a non-empty znode name"));
    }
    if role
        .chars()
        .any(|c| c == '/' || c.is_whitespace() || c.is_control())
    {
        return Err(bad("a role may not hold '/', blanks or control characters"));
    }
    if role == "catalog" {
        return Err(bad("`catalog` is the catalog version's znode"));
    }
    Ok(())
}

/// A lost connection or a busy server: worth waiting out and retrying.
fn is_transient(error: &zookeeper_client::Error) -> bool {
    matches!(
        error,
        zookeeper_client::Error::ConnectionLoss | zookeeper_client::Error::Throttled
    )
}

/// The session has ended: nothing more can succeed on it.
fn is_final(error: &zookeeper_client::Error) -> bool {
    matches!(
        error,
        zookeeper_client::Error::SessionExpired
            | zookeeper_client::Error::ClientClosed
            | zookeeper_client::Error::AuthFailed
    )
}

/// Resolves once `stop` says so, or once its sender is gone (the
/// coordinator was dropped).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// What the coordinator, its watcher tasks and its master candidates
/// share.
#[derive(Debug)]
struct Inner {
    config: ZkConfig,
    paths: CoordinationPaths,
    /// HBase's envelope identifier (who wrote a znode, for people reading
    /// it by hand).
    identifier: Vec<u8>,
    spawner: TokioSpawner,
    session_id: i64,
    /// The session; taken out by `close` (and on drop) so that the last
    /// handle goes and the client sends CloseSession.
    client: Mutex<Option<Client>>,
    session: watch::Sender<SessionState>,
    /// Set by `close`; ends watcher tasks and waits.
    stop: watch::Receiver<bool>,
}

impl Inner {
    /// A handle on the session for one operation.
    fn client(&self, znode: &str, operation: &'static str) -> Result<Client, ZkError> {
        self.client
            .lock()
            .clone()
            .ok_or_else(|| self.ended(znode, operation, "was closed"))
    }

    fn ended(&self, znode: &str, operation: &'static str, state: &'static str) -> ZkError {
        ZkError::SessionEnded {
            quorum: self.config.quorum.clone(),
            znode: znode.to_owned(),
            operation,
            state,
        }
    }

    /// The error for a failed request: the session's end is named as such
    /// (the caller's cue to stop), anything else as the operation's.
    fn failed(
        &self,
        znode: &str,
        operation: &'static str,
        error: zookeeper_client::Error,
    ) -> ZkError {
        match error {
            zookeeper_client::Error::SessionExpired | zookeeper_client::Error::AuthFailed => {
                self.ended(znode, operation, "expired")
            }
            zookeeper_client::Error::ClientClosed => self.ended(znode, operation, "was closed"),
            error => ZkError::operation(&self.config.quorum, znode, operation, error),
        }
    }

    fn bad_znode(&self, znode: &str, reason: String) -> ZkError {
        ZkError::BadZnode {
            quorum: self.config.quorum.clone(),
            znode: znode.to_owned(),
            reason,
        }
    }

    /// Waits out a lost connection: `Ok` once connected again, the
    /// session's end (or the coordinator's close) otherwise.
    async fn wait_until_connected(
        &self,
        znode: &str,
        operation: &'static str,
    ) -> Result<(), ZkError> {
        let mut session = self.session.subscribe();
        let mut stop = self.stop.clone();
        let state = tokio::select! {
            _ = stopped(&mut stop) => SessionState::Closed,
            state = session.wait_for(|state| *state != SessionState::Disconnected) => {
                state.map_or(SessionState::Closed, |state| *state)
            }
        };
        match state {
            SessionState::Connected => Ok(()),
            SessionState::Expired => Err(self.ended(znode, operation, "expired")),
            SessionState::Disconnected | SessionState::Closed => {
                Err(self.ended(znode, operation, "was closed"))
            }
        }
    }

    /// Creates an ephemeral znode that only this session may hold. Our own
    /// (a retried call) gets the new data; another live session's is an
    /// [`ZkError::AlreadyRegistered`] naming `whose`: never deleted, as that
    /// session may be a live process.
    async fn put_exclusive_ephemeral(
        &self,
        znode: &str,
        data: &[u8],
        whose: &str,
    ) -> Result<(), ZkError> {
        let client = self.client(znode, "create")?;
        let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        for _ in 0..RACE_TRIES {
            match client.create(znode, data, &options).await {
                Ok(_) => return Ok(()),
                Err(zookeeper_client::Error::NodeExists) => {}
                Err(e) => return Err(self.failed(znode, "create", e)),
            }
            let stat = match client.check_stat(znode).await {
                Ok(Some(stat)) => stat,
                Ok(None) => continue,
                Err(e) => return Err(self.failed(znode, "read", e)),
            };
            if stat.ephemeral_owner == 0 {
                return Err(self.bad_znode(
                    znode,
                    "is a persistent znode where an ephemeral one belongs; remove it".to_owned(),
                ));
            }
            if stat.ephemeral_owner != self.session_id {
                return Err(ZkError::AlreadyRegistered {
                    quorum: self.config.quorum.clone(),
                    znode: znode.to_owned(),
                    session: stat.ephemeral_owner,
                    reason: whose.to_owned(),
                });
            }
            match client.set_data(znode, data, Some(stat.version)).await {
                Ok(_) => return Ok(()),
                Err(zookeeper_client::Error::BadVersion | zookeeper_client::Error::NoNode) => {}
                Err(e) => return Err(self.failed(znode, "set", e)),
            }
        }
        Err(ZkError::operation(
            &self.config.quorum,
            znode,
            "create",
            zookeeper_client::Error::NodeExists,
        ))
    }

    /// Creates a persistent directory znode and its missing ancestors.
    async fn mkdir(&self, client: &Client, znode: &str) -> Result<(), ZkError> {
        let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
        client
            .mkdir(znode, &options)
            .await
            .map_err(|e| self.failed(znode, "create", e))
    }
}

/// One ZooKeeper session of one cluster process: see the module
/// documentation. Dropping it without [`Coordinator::close`] closes the
/// session too, without waiting for ZooKeeper to confirm.
pub struct Coordinator {
    inner: Arc<Inner>,
    stop: watch::Sender<bool>,
    /// Feeds `inner.session` from the client's own state stream.
    session_task: Option<JoinHandle<()>>,
    /// The watcher tasks started so far.
    tasks: Mutex<Vec<JoinHandle<()>>>,
    active_master: OnceLock<watch::Receiver<Option<ServerName>>>,
    region_servers: OnceLock<watch::Receiver<BTreeSet<String>>>,
    catalog_version: OnceLock<watch::Receiver<u64>>,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator")
            .field("quorum", &self.inner.config.quorum)
            .field("base", &self.inner.paths.hbase.base)
            .field("session", &format_args!("{:#x}", self.inner.session_id))
            .field("state", &*self.inner.session.borrow())
            .finish_non_exhaustive()
    }
}

impl Coordinator {
    /// Opens a session with `config.quorum` (session timeout
    /// `config.session_timeout_ms`), failing with [`ZkError::Connect`]
    /// when none is established within `config.connect_timeout_ms`.
    /// `identifier` names this process in the envelope of the znodes it
    /// writes (HBase writes `<pid>@<host>`). Must be called inside a tokio
    /// runtime: the client's tasks and the watcher tasks run on it.
    pub async fn connect(config: &ZkConfig, identifier: &str) -> Result<Coordinator, ZkError> {
        let connect_string = config.connect_string()?;
        let handle = tokio::runtime::Handle::try_current().map_err(|_| ZkError::NoRuntime {
            quorum: config.quorum.clone(),
        })?;
        let spawner = TokioSpawner(handle);
        let client =
            WithSpawner::new(spawner.clone(), zk::connect(config, &connect_string)).await?;
        let mut states = client.state_watcher();
        let (session, _) = watch::channel(SessionState::from_client(states.state()));
        let (stop, stopped) = watch::channel(false);
        tracing::info!(
            quorum = %config.quorum,
            session = %client.session_id(),
            "cluster coordination session opened"
        );
        let inner = Arc::new(Inner {
            config: config.clone(),
            paths: CoordinationPaths::new(&config.znode_parent),
            identifier: identifier.as_bytes().to_vec(),
            spawner: spawner.clone(),
            session_id: client.session_id().0,
            client: Mutex::new(Some(client)),
            session,
            stop: stopped,
        });
        let feeding = inner.clone();
        let session_task = spawner.0.spawn(async move {
            loop {
                let state = states.changed().await;
                publish_state(&feeding.session, SessionState::from_client(state));
                if state.is_terminated() {
                    if state != zookeeper_client::SessionState::Closed {
                        tracing::error!(
                            quorum = %feeding.config.quorum,
                            session = %format_args!("{:#x}", feeding.session_id),
                            ?state,
                            "cluster coordination session ended; its ephemeral znodes are gone"
                        );
                    }
                    return;
                }
            }
        });
        Ok(Coordinator {
            inner,
            stop,
            session_task: Some(session_task),
            tasks: Mutex::new(Vec::new()),
            active_master: OnceLock::new(),
            region_servers: OnceLock::new(),
            catalog_version: OnceLock::new(),
        })
    }

    /// The session's state, kept current. `Expired` and `Closed` are final:
    /// after an expiry the process must stop (this coordinator never opens
    /// another session).
    pub fn session(&self) -> watch::Receiver<SessionState> {
        self.inner.session.subscribe()
    }

    /// The session's id (the owner of our ephemeral znodes).
    pub fn session_id(&self) -> i64 {
        self.inner.session_id
    }

    /// The znodes used.
    pub fn paths(&self) -> &CoordinationPaths {
        &self.inner.paths
    }

    /// Creates the cluster's persistent znodes where missing: the base,
    /// `hbaseid` (holding `cluster_id`), `running`, `rs`,
    /// `backup-masters`, `table` and `basalt`. Safe to call from every
    /// process at once and again later. An `hbaseid` naming another
    /// cluster is refused ([`ZkError::BadZnode`]): two clusters under one
    /// base znode would send clients to each other's servers.
    pub async fn ensure_cluster_znodes(&self, cluster_id: &str) -> Result<(), ZkError> {
        let inner = &self.inner;
        let paths = &inner.paths;
        if cluster_id.is_empty() {
            return Err(ZkError::BadName {
                what: "cluster id",
                name: String::new(),
                reason: "it is empty".to_owned(),
            });
        }
        let client = inner.client(&paths.hbase.base, "create")?;
        for dir in [
            &paths.hbase.base,
            &paths.hbase.region_servers,
            &paths.hbase.backup_masters,
            &paths.hbase.table,
            &paths.basalt,
        ] {
            inner.mkdir(&client, dir).await?;
        }
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        let running = &paths.hbase.running;
        let up = ClusterUp {
            // 0: the time of creating it.
            start_date: zk::java_date_text(0),
        };
        match client
            .create(
                running,
                &encode_with_metadata(&inner.identifier, &up),
                &persistent,
            )
            .await
        {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => return Err(inner.failed(running, "create", e)),
        }
        let znode = &paths.hbase.cluster_id;
        let data = encode_with_metadata(
            &inner.identifier,
            &ClusterId {
                cluster_id: cluster_id.to_owned(),
            },
        );
        for _ in 0..RACE_TRIES {
            match client.create(znode, &data, &persistent).await {
                Ok(_) => return Ok(()),
                Err(zookeeper_client::Error::NodeExists) => {}
                Err(e) => return Err(inner.failed(znode, "create", e)),
            }
            let found = match client.get_data(znode).await {
                Ok((found, _)) => found,
                Err(zookeeper_client::Error::NoNode) => continue,
                Err(e) => return Err(inner.failed(znode, "read", e)),
            };
            let found = decode_znode::<ClusterId>(&found).map_err(|e| {
                inner.bad_znode(znode, format!("does not hold HBase's ClusterId: {e}"))
            })?;
            if found.cluster_id == cluster_id {
                return Ok(());
            }
            return Err(inner.bad_znode(
                znode,
                format!(
                    "names cluster {:?}, not {cluster_id:?}: another cluster uses this znode \
                     parent (give each cluster its own, or remove the stale znode)",
                    found.cluster_id
                ),
            ));
        }
        Err(ZkError::operation(
            &inner.config.quorum,
            znode,
            "create",
            zookeeper_client::Error::NoNode,
        ))
    }

    /// Announces a live region server: the ephemeral
    /// `rs/<host>,<port>,<startcode>` with HBase's `RegionServerInfo`
    /// (`info_port` 0 means no web UI, written as HBase's -1). Fails with
    /// [`ZkError::AlreadyRegistered`] when another session holds that
    /// znode; again on this session just rewrites it. Needs
    /// [`Coordinator::ensure_cluster_znodes`] first.
    pub async fn register_region_server(
        &self,
        server: &ServerName,
        info_port: u32,
    ) -> Result<(), ZkError> {
        check_server_name(server)?;
        let info = RegionServerInfo {
            info_port: Some(match info_port {
                0 => zk::NO_INFO_PORT,
                port => i32::try_from(port).unwrap_or(zk::NO_INFO_PORT),
            }),
            version_info: Some(zk::version_info()),
        };
        self.inner
            .put_exclusive_ephemeral(
                &self.inner.paths.region_server(server),
                &encode_with_metadata(&self.inner.identifier, &info),
                "another process registered the same region server (host, port and start code)",
            )
            .await
    }

    /// Enters the master election as `me` (its master port; `info_port`
    /// the web UI's, 0 for none). Tries to take the ephemeral `master`
    /// znode at once; when another session holds it, announces `me` as a
    /// backup master (`backup-masters/<name>`, the same `Master` data
    /// HBase writes there). [`MasterCandidate::wait_until_active`] then
    /// waits for the election. Needs
    /// [`Coordinator::ensure_cluster_znodes`] first.
    pub async fn run_for_master(
        &self,
        me: &ServerName,
        info_port: u32,
    ) -> Result<MasterCandidate, ZkError> {
        check_server_name(me)?;
        let master = Master {
            master: Some(me.clone()),
            rpc_version: Some(zk::RPC_VERSION),
            info_port: Some(info_port),
        };
        let candidate = MasterCandidate {
            inner: self.inner.clone(),
            data: encode_with_metadata(&self.inner.identifier, &master),
            backup_znode: self.inner.paths.backup_master(me),
        };
        if candidate.try_take().await?.is_some() {
            self.inner
                .put_exclusive_ephemeral(
                    &candidate.backup_znode,
                    &candidate.data,
                    "another process runs for master under the same name",
                )
                .await?;
            tracing::info!(
                backup = %candidate.backup_znode,
                "another master is active; waiting as a backup master"
            );
        } else {
            candidate.delete_backup().await?;
        }
        Ok(candidate)
    }

    /// The active master as `/hbase/master` names it now, `None` when
    /// there is none.
    pub async fn active_master(&self) -> Result<Option<ServerName>, ZkError> {
        let inner = &self.inner;
        let znode = &inner.paths.hbase.master;
        let client = inner.client(znode, "read")?;
        match client.get_data(znode).await {
            Ok((data, _)) => decode_master(&data)
                .map(Some)
                .map_err(|reason| inner.bad_znode(znode, reason)),
            Err(zookeeper_client::Error::NoNode) => Ok(None),
            Err(e) => Err(inner.failed(znode, "read", e)),
        }
    }

    /// The live region servers now (the children of `/hbase/rs`), read
    /// once. The master reconciles on this, never on a watch's first value
    /// (which is an empty set until the watcher's first read).
    pub async fn region_servers(&self) -> Result<BTreeSet<String>, ZkError> {
        let inner = &self.inner;
        let znode = &inner.paths.hbase.region_servers;
        let client = inner.client(znode, "list")?;
        match client.list_children(znode).await {
            Ok(children) => Ok(children.into_iter().collect()),
            Err(zookeeper_client::Error::NoNode) => Ok(BTreeSet::new()),
            Err(e) => Err(inner.failed(znode, "list", e)),
        }
    }

    /// The standby masters now (the children of `/hbase/backup-masters`,
    /// HBase server names), read once.
    pub async fn backup_masters(&self) -> Result<BTreeSet<String>, ZkError> {
        let inner = &self.inner;
        let znode = &inner.paths.hbase.backup_masters;
        let client = inner.client(znode, "list")?;
        match client.list_children(znode).await {
            Ok(children) => Ok(children.into_iter().collect()),
            Err(zookeeper_client::Error::NoNode) => Ok(BTreeSet::new()),
            Err(e) => Err(inner.failed(znode, "list", e)),
        }
    }

    /// The active master, kept current by a task watching `/hbase/master`
    /// (started on the first call; `None` until its first read, and while
    /// there is no master or the znode does not decode). After the session
    /// ends the last value stays.
    pub fn watch_active_master(&self) -> watch::Receiver<Option<ServerName>> {
        self.active_master
            .get_or_init(|| {
                let znode = self.inner.paths.hbase.master.clone();
                self.start_watching(None, znode.clone(), move |client| {
                    read_active_master(client, znode.clone())
                })
            })
            .clone()
    }

    /// The live region servers, HBase's `host,port,startcode` names of the
    /// children of `/hbase/rs`, kept current by a task with a children
    /// watch (started on the first call; empty until its first read). The
    /// master's view of which servers live. After the session ends the
    /// last value stays.
    pub fn watch_region_servers(&self) -> watch::Receiver<BTreeSet<String>> {
        self.region_servers
            .get_or_init(|| {
                let znode = self.inner.paths.hbase.region_servers.clone();
                self.start_watching(BTreeSet::new(), znode.clone(), move |client| {
                    read_children(client, znode.clone())
                })
            })
            .clone()
    }

    /// Says where `hbase:meta` is served: HBase's `MetaRegionServer`
    /// (`server`, state `OPEN`) in the persistent `meta-region-server`,
    /// created or overwritten.
    pub async fn set_meta_region_server(&self, server: &ServerName) -> Result<(), ZkError> {
        check_server_name(server)?;
        let inner = &self.inner;
        let znode = &inner.paths.hbase.meta_region_server;
        let meta = MetaRegionServer {
            server: Some(server.clone()),
            rpc_version: Some(zk::RPC_VERSION),
            state: Some(zk::META_STATE_OPEN),
        };
        let client = inner.client(znode, "set")?;
        zk::put_persistent(
            &inner.config.quorum,
            &client,
            znode,
            &encode_with_metadata(&inner.identifier, &meta),
        )
        .await
    }

    /// Announces `version` as the newest catalog the active master has
    /// committed: the persistent `basalt/catalog` holds it as decimal text
    /// (a notification only: the catalog itself is on storage, where
    /// region servers read it when the number changes). Never lowers the
    /// number (a compare-and-set on the znode's version), so a deposed
    /// master writing late cannot send servers back to an older catalog.
    pub async fn publish_catalog_version(&self, version: u64) -> Result<(), ZkError> {
        let inner = &self.inner;
        let znode = &inner.paths.catalog;
        let client = inner.client(znode, "set")?;
        let text = version.to_string();
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        // Each lost race means another process changed the number: a few
        // tries settle it.
        for _ in 0..RACE_TRIES * 2 {
            match client.get_data(znode).await {
                Ok((data, stat)) => {
                    if parse_catalog_version(&data).is_some_and(|current| current >= version) {
                        return Ok(());
                    }
                    match client
                        .set_data(znode, text.as_bytes(), Some(stat.version))
                        .await
                    {
                        Ok(_) => return Ok(()),
                        Err(
                            zookeeper_client::Error::BadVersion | zookeeper_client::Error::NoNode,
                        ) => {}
                        Err(e) => return Err(inner.failed(znode, "set", e)),
                    }
                }
                Err(zookeeper_client::Error::NoNode) => {
                    match client.create(znode, text.as_bytes(), &persistent).await {
                        Ok(_) => return Ok(()),
                        Err(zookeeper_client::Error::NodeExists) => {}
                        Err(zookeeper_client::Error::NoNode) => {
                            inner.mkdir(&client, &inner.paths.basalt).await?;
                        }
                        Err(e) => return Err(inner.failed(znode, "create", e)),
                    }
                }
                Err(e) => return Err(inner.failed(znode, "read", e)),
            }
        }
        Err(ZkError::operation(
            &inner.config.quorum,
            znode,
            "set",
            zookeeper_client::Error::BadVersion,
        ))
    }

    /// The newest catalog version published, kept current by a task
    /// watching `basalt/catalog` (started on the first call; 0 until its
    /// first read and while nothing was published; data that is not a
    /// decimal number is logged and skipped). After the session ends the
    /// last value stays.
    pub fn watch_catalog_version(&self) -> watch::Receiver<u64> {
        self.catalog_version
            .get_or_init(|| {
                let znode = self.inner.paths.catalog.clone();
                self.start_watching(0, znode.clone(), move |client| {
                    read_catalog_version(client, znode.clone())
                })
            })
            .clone()
    }

    /// Announces one of `server`'s extra addresses (a gateway's Thrift or
    /// REST port, a web UI) under `role`: the ephemeral
    /// `basalt/<role>/<host>,<port>,<startcode>` holding `address` as
    /// UTF-8. Fails with [`ZkError::AlreadyRegistered`] when another
    /// session holds that znode; again on this session overwrites it.
    pub async fn publish_address(
        &self,
        server: &ServerName,
        role: &str,
        address: &str,
    ) -> Result<(), ZkError> {
        check_server_name(server)?;
        check_role(role)?;
        let inner = &self.inner;
        let parent = inner.paths.role(role);
        let client = inner.client(&parent, "create")?;
        inner.mkdir(&client, &parent).await?;
        inner
            .put_exclusive_ephemeral(
                &inner.paths.address(role, server),
                address.as_bytes(),
                "another process published an address for the same server name",
            )
            .await
    }

    /// Every address published under `role`, by server name
    /// (`host,port,startcode`); empty when there is none.
    pub async fn addresses(&self, role: &str) -> Result<BTreeMap<String, String>, ZkError> {
        check_role(role)?;
        let inner = &self.inner;
        let parent = inner.paths.role(role);
        let client = inner.client(&parent, "list")?;
        let children = match client.list_children(&parent).await {
            Ok(children) => children,
            Err(zookeeper_client::Error::NoNode) => return Ok(BTreeMap::new()),
            Err(e) => return Err(inner.failed(&parent, "list", e)),
        };
        let mut addresses = BTreeMap::new();
        for child in children {
            let znode = format!("{parent}/{child}");
            let data = match client.get_data(&znode).await {
                Ok((data, _)) => data,
                // Its session ended between the listing and the read.
                Err(zookeeper_client::Error::NoNode) => continue,
                Err(e) => return Err(inner.failed(&znode, "read", e)),
            };
            let address = String::from_utf8(data)
                .map_err(|e| inner.bad_znode(&znode, format!("is not UTF-8 text: {e}")))?;
            addresses.insert(child, address);
        }
        Ok(addresses)
    }

    /// Closes the session: ZooKeeper deletes its ephemeral znodes at once
    /// (our `master` and backup znodes, `rs/<name>`, addresses), so other
    /// processes see this one gone without waiting for a timeout. Stops
    /// the watcher tasks first; waits up to `connect_timeout_ms` for
    /// ZooKeeper to confirm (without a confirmation the znodes go when the
    /// session times out). [`Coordinator::session`] then reports `Closed`
    /// (or `Expired` if it had expired before).
    pub async fn close(mut self) {
        let _ = self.stop.send(true);
        let tasks: Vec<_> = std::mem::take(&mut *self.tasks.lock());
        for task in tasks {
            // They end at the stop signal; an error is a panic already
            // logged by tokio, nothing to undo.
            let _ = task.await;
        }
        let mut session = self.inner.session.subscribe();
        // The last handle: dropping it sends CloseSession (master
        // candidates only borrow the client for single requests).
        let client = self.inner.client.lock().take();
        drop(client);
        let limit = Duration::from_millis(self.inner.config.connect_timeout_ms);
        let confirmed = tokio::time::timeout(limit, session.wait_for(|state| state.has_ended()))
            .await
            .is_ok();
        if !confirmed {
            tracing::warn!(
                quorum = %self.inner.config.quorum,
                session = %format_args!("{:#x}", self.inner.session_id),
                "ZooKeeper did not confirm closing the session; its ephemeral znodes go when it \
                 times out"
            );
        }
        publish_state(&self.inner.session, SessionState::Closed);
        if let Some(task) = self.session_task.take() {
            task.abort();
        }
        tracing::info!(quorum = %self.inner.config.quorum, "cluster coordination session closed");
    }

    /// Starts a watcher task keeping a channel (first value `initial`)
    /// current with `read`, which reads the znode and arms a watch.
    fn start_watching<T, R, Fut>(&self, initial: T, znode: String, read: R) -> watch::Receiver<T>
    where
        T: PartialEq + Send + Sync + 'static,
        R: Fn(Client) -> Fut + Send + 'static,
        Fut: Future<Output = Read<T>> + Send + 'static,
    {
        let (sender, receiver) = watch::channel(initial);
        let task = self.inner.spawner.0.spawn(WithSpawner::new(
            self.inner.spawner.clone(),
            follow(self.inner.clone(), sender, znode, read),
        ));
        self.tasks.lock().push(task);
        receiver
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        for task in self.tasks.lock().drain(..) {
            task.abort();
        }
        // Without the last handle the client closes the session; nobody
        // waits for the confirmation here.
        if self.inner.client.lock().take().is_some() {
            publish_state(&self.inner.session, SessionState::Closed);
        }
        if let Some(task) = self.session_task.take() {
            task.abort();
        }
    }
}

/// Moves the published state on, except past a final one.
fn publish_state(sender: &watch::Sender<SessionState>, state: SessionState) {
    sender.send_if_modified(|current| {
        if current.has_ended() || *current == state {
            return false;
        }
        *current = state;
        true
    });
}

/// A master in the election, from [`Coordinator::run_for_master`]. It
/// shares the coordinator's session: closing the coordinator ends the
/// candidacy.
#[derive(Debug)]
pub struct MasterCandidate {
    inner: Arc<Inner>,
    /// The `Master` data, written to `master` and to the backup znode.
    data: Vec<u8>,
    backup_znode: String,
}

impl MasterCandidate {
    /// This candidate's backup znode (present while it waits).
    pub fn backup_znode(&self) -> &str {
        &self.backup_znode
    }

    /// Waits until this candidate holds `/hbase/master`, then deletes its
    /// backup znode. Waits on a watch of `master`, re-armed after every
    /// event, trying again whenever it is deleted (the active master
    /// closed its session, or the session expired); a lost connection is
    /// waited out. Returns at once when it already holds it. Fails with
    /// [`ZkError::SessionEnded`] when the session expires or the
    /// coordinator is closed meanwhile.
    pub async fn wait_until_active(&self) -> Result<(), ZkError> {
        let mut stop = self.inner.stop.clone();
        let master = &self.inner.paths.hbase.master;
        while let Some(watcher) = self.try_take().await? {
            let event = tokio::select! {
                _ = stopped(&mut stop) => {
                    return Err(self.inner.ended(master, "wait for", "was closed"));
                }
                event = watcher.changed() => event,
            };
            if event.event_type == EventType::Session && event.session_state.is_terminated() {
                let state = match SessionState::from_client(event.session_state) {
                    SessionState::Closed => "was closed",
                    _ => "expired",
                };
                return Err(self.inner.ended(master, "wait for", state));
            }
        }
        tracing::info!(master = %master, "became the active master");
        self.delete_backup().await
    }

    /// One attempt at the master znode: `None` when it is ours, else the
    /// watch on it (armed while another session holds it).
    async fn try_take(&self) -> Result<Option<OneshotWatcher>, ZkError> {
        let inner = &self.inner;
        let master = &inner.paths.hbase.master;
        let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        loop {
            let client = inner.client(master, "create")?;
            let attempt = async {
                match client.create(master, &self.data, &options).await {
                    Ok(_) => return Ok(None),
                    Err(zookeeper_client::Error::NodeExists) => {}
                    Err(e) => return Err(("create", e)),
                }
                match client.check_and_watch_stat(master).await {
                    Ok((Some(stat), _)) if stat.ephemeral_owner == inner.session_id => Ok(None),
                    Ok((Some(_), watcher)) => Ok(Some(Some(watcher))),
                    // Gone meanwhile: try again at once.
                    Ok((None, _)) => Ok(Some(None)),
                    Err(e) => Err(("read", e)),
                }
            };
            match attempt.await {
                Ok(None) => return Ok(None),
                Ok(Some(Some(watcher))) => return Ok(Some(watcher)),
                Ok(Some(None)) => continue,
                Err((operation, e)) if is_transient(&e) => {
                    drop(client);
                    inner.wait_until_connected(master, operation).await?;
                }
                Err((operation, e)) => return Err(inner.failed(master, operation, e)),
            }
        }
    }

    /// Deletes the backup znode if this session holds it.
    async fn delete_backup(&self) -> Result<(), ZkError> {
        let client = self.inner.client(&self.backup_znode, "delete")?;
        zk::delete_if_ours(&self.inner.config, &client, &self.backup_znode).await
    }
}

/// What one read by a watcher task yields: the new value (`None`: keep the
/// last one) and the armed watch, or the client's error.
type Read<T> = Result<(Option<T>, OneshotWatcher), zookeeper_client::Error>;

/// A watcher task: reads and arms a watch, publishes, waits for the watch
/// to fire, and again, until the coordinator stops or the session ends.
async fn follow<T, R, Fut>(inner: Arc<Inner>, sender: watch::Sender<T>, znode: String, read: R)
where
    T: PartialEq,
    R: Fn(Client) -> Fut,
    Fut: Future<Output = Read<T>>,
{
    let mut stop = inner.stop.clone();
    let mut pause = MIN_RETRY;
    loop {
        // 1. Read and re-arm.
        let Some(client) = inner.client.lock().clone() else {
            return;
        };
        let outcome = tokio::select! {
            _ = stopped(&mut stop) => return,
            outcome = read(client) => outcome,
        };
        let watcher = match outcome {
            Ok((value, watcher)) => {
                pause = MIN_RETRY;
                if let Some(value) = value {
                    sender.send_if_modified(|current| {
                        if *current == value {
                            return false;
                        }
                        *current = value;
                        true
                    });
                }
                watcher
            }
            Err(e) if is_final(&e) => return,
            Err(e) if is_transient(&e) => {
                if inner.wait_until_connected(&znode, "read").await.is_err() {
                    return;
                }
                continue;
            }
            Err(e) => {
                tracing::warn!(znode = %znode, error = %e, "watching a znode; reading it again");
                tokio::select! {
                    _ = stopped(&mut stop) => return,
                    _ = tokio::time::sleep(pause) => {}
                }
                pause = (pause * 2).min(MAX_RETRY);
                continue;
            }
        };
        // 2. Wait for it to fire (no event while disconnected: ZooKeeper
        //    sets the watch again on reconnection and fires it if the znode
        //    changed meanwhile).
        let event = tokio::select! {
            _ = stopped(&mut stop) => return,
            event = watcher.changed() => event,
        };
        if event.event_type == EventType::Session && event.session_state.is_terminated() {
            return;
        }
    }
}

/// `/hbase/master` with an existence watch (it fires on creation, deletion
/// and data change).
async fn read_active_master(client: Client, znode: String) -> Read<Option<ServerName>> {
    let (stat, watcher) = client.check_and_watch_stat(&znode).await?;
    if stat.is_none() {
        return Ok((Some(None), watcher));
    }
    let value = match client.get_data(&znode).await {
        Ok((data, _)) => match decode_master(&data) {
            Ok(server) => Some(server),
            Err(reason) => {
                tracing::warn!(znode = %znode, %reason, "the master znode does not decode");
                None
            }
        },
        // Deleted meanwhile: the watch has fired and the next read says so.
        Err(zookeeper_client::Error::NoNode) => None,
        Err(e) => return Err(e),
    };
    Ok((Some(value), watcher))
}

/// The children of `znode` with a children watch; while `znode` does not
/// exist, none, with an existence watch to learn of its creation.
async fn read_children(client: Client, znode: String) -> Read<BTreeSet<String>> {
    loop {
        match client.list_and_watch_children(&znode).await {
            Ok((children, watcher)) => return Ok((Some(children.into_iter().collect()), watcher)),
            Err(zookeeper_client::Error::NoNode) => {}
            Err(e) => return Err(e),
        }
        match client.check_and_watch_stat(&znode).await? {
            (None, watcher) => return Ok((Some(BTreeSet::new()), watcher)),
            // Created meanwhile: list it (an existence watch would miss
            // its children).
            (Some(_), _) => continue,
        }
    }
}

/// `basalt/catalog` with an existence watch; a missing znode keeps the last
/// value (0 at first).
async fn read_catalog_version(client: Client, znode: String) -> Read<u64> {
    let (stat, watcher) = client.check_and_watch_stat(&znode).await?;
    if stat.is_none() {
        return Ok((None, watcher));
    }
    let value = match client.get_data(&znode).await {
        Ok((data, _)) => {
            let version = parse_catalog_version(&data);
            if version.is_none() {
                tracing::warn!(
                    znode = %znode,
                    data = %String::from_utf8_lossy(&data),
                    "the catalog version is not a decimal number; ignored"
                );
            }
            version
        }
        Err(zookeeper_client::Error::NoNode) => None,
        Err(e) => return Err(e),
    };
    Ok((value, watcher))
}

/// The decimal text of `basalt/catalog`.
fn parse_catalog_version(data: &[u8]) -> Option<u64> {
    std::str::from_utf8(data).ok().and_then(parse_decimal)
}

/// The `ServerName` of a `master` (or backup master) znode; the reason
/// when it is not HBase's `Master` naming a server.
fn decode_master(data: &[u8]) -> Result<ServerName, String> {
    match decode_znode::<Master>(data) {
        Ok(Master {
            master: Some(server),
            ..
        }) => Ok(server),
        Ok(_) => Err("holds a Master message naming no server".to_owned()),
        Err(e) => Err(format!("does not hold HBase's Master message: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(host: &str, port: u32, start_code: u64) -> ServerName {
        ServerName {
            host_name: host.to_owned(),
            port: Some(port),
            start_code: Some(start_code),
        }
    }

    #[test]
    fn server_names_read_back_as_written() {
        let name = server("rs-1.example", 16020, 1_700_000_000_123);
        let text = server_name_text(&name);
        assert_eq!(text, "rs-1.example,16020,1700000000123");
        assert_eq!(parse_server_name(&text).unwrap(), name);
    }

    #[test]
    fn malformed_server_names_are_refused_with_the_reason() {
        for (text, reason) in [
            ("", "fields"),
            ("host,16020", "found 2 comma-separated"),
            ("a,b,16020,1", "4 comma-separated"),
            (",16020,1", "host is empty"),
            ("host,0,1", "port"),
            ("host,70000,1", "port"),
            ("host,+1,1", "port"),
            ("host,16020,-1", "start code"),
            ("host,16020,", "start code"),
            ("ho st,16020,1", "blanks"),
            ("a/b,16020,1", "'/'"),
        ] {
            let err = parse_server_name(text).unwrap_err();
            assert!(matches!(err, ZkError::BadName { .. }), "{text:?}: {err}");
            let message = err.to_string();
            assert!(message.contains(reason), "{text:?}: {message}");
        }
    }

    #[test]
    fn a_server_name_without_port_or_start_code_is_not_written() {
        let mut name = server("h", 1, 2);
        name.port = None;
        assert!(check_server_name(&name).is_err());
        let mut name = server("h", 1, 2);
        name.start_code = None;
        assert!(check_server_name(&name).is_err());
    }

    #[test]
    fn roles_are_single_znode_names_other_than_catalog() {
        assert!(check_role("thrift").is_ok());
        for role in ["", ".", "..", "a/b", "a b", "catalog"] {
            assert!(check_role(role).is_err(), "{role:?}");
        }
    }

    #[test]
    fn paths_follow_hbase_and_basalt_names() {
        let paths = CoordinationPaths::new("/hbase");
        let name = server("h", 16020, 7);
        assert_eq!(paths.region_server(&name), "/hbase/rs/h,16020,7");
        assert_eq!(
            paths.backup_master(&name),
            "/hbase/backup-masters/h,16020,7"
        );
        assert_eq!(paths.catalog, "/hbase/basalt/catalog");
        assert_eq!(paths.address("rest", &name), "/hbase/basalt/rest/h,16020,7");
    }

    #[test]
    fn catalog_versions_are_plain_decimal_text() {
        assert_eq!(parse_catalog_version(b"42"), Some(42));
        assert_eq!(parse_catalog_version(b""), None);
        assert_eq!(parse_catalog_version(b" 42"), None);
        assert_eq!(parse_catalog_version(b"4x"), None);
        assert_eq!(parse_catalog_version(&[0xFF]), None);
    }

    #[test]
    fn session_states_map_from_the_client() {
        use zookeeper_client::SessionState as Zk;
        assert_eq!(
            SessionState::from_client(Zk::SyncConnected),
            SessionState::Connected
        );
        assert_eq!(
            SessionState::from_client(Zk::Disconnected),
            SessionState::Disconnected
        );
        assert_eq!(
            SessionState::from_client(Zk::Expired),
            SessionState::Expired
        );
        assert_eq!(SessionState::from_client(Zk::Closed), SessionState::Closed);
        assert!(SessionState::Expired.has_ended() && SessionState::Closed.has_ended());
        assert!(!SessionState::Disconnected.has_ended());
    }
}
