//! ZooKeeper registration: the znodes through which HBase's own clients
//! find a Basalt server (the active master, the server carrying
//! `hbase:meta`, the cluster id, the live region servers).
//!
//! Layout under the base znode (HBase's `zookeeper.znode.parent`, `/hbase`
//! by default); every znode with data carries HBase's envelope: the byte
//! `0xFF`, a 4-byte big-endian length, that many bytes naming the writer,
//! then `PBUF` and a protobuf message (HBase's own writer puts the envelope
//! on every znode it writes, and its readers strip it when present):
//!
//! | znode | kind | message |
//! |---|---|---|
//! | `master` | ephemeral | `Master` (the master's `ServerName`) |
//! | `meta-region-server` | persistent | `MetaRegionServer` (state `OPEN`) |
//! | `hbaseid` | persistent | `ClusterId` |
//! | `running` | persistent | `ClusterUp` (a start date) |
//! | `rs/<host>,<port>,<startcode>` | ephemeral | `RegionServerInfo` |
//! | `rs`, `backup-masters`, `table` | persistent | none |
//!
//! Ephemeral znodes live as long as our ZooKeeper session: they vanish when
//! the process dies, which is how clients stop being sent to a dead server.
//! A background task watches the session and puts them back after an
//! expiry or a reconnection; ZooKeeper being away never stops serving.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use prost::Message;
use tokio::sync::watch;
use zookeeper_client::{Acls, Client, CreateMode, SessionState};

use crate::context::{Identity, HBASE_VERSION};
use crate::proto::hbase::{ClusterId, ClusterUp, Master, MetaRegionServer, VersionInfo};

/// The first byte of HBase's znode envelope (the writer's identifier
/// follows).
pub const METADATA_MAGIC: u8 = 0xFF;

/// The four bytes before every protobuf message HBase keeps in a znode.
pub const PB_MAGIC: &[u8; 4] = b"PBUF";

/// ZooKeeper's default client port, used for quorum members written
/// without one (as HBase's `hbase.zookeeper.property.clientPort`).
pub const DEFAULT_ZOOKEEPER_PORT: u16 = 2181;

/// HBase's RPC version in the `Master` and `MetaRegionServer` znodes.
pub(crate) const RPC_VERSION: u32 = 0;

/// `RegionState.State.OPEN`: `hbase:meta` is served.
pub(crate) const META_STATE_OPEN: i32 = 3;

/// What `RegionServerInfo.infoPort` says when a server has no web UI
/// (HBase writes -1 then); Basalt has none.
pub(crate) const NO_INFO_PORT: i32 = -1;

/// The master's web UI port in the `Master` znode: a `uint32`, so "none"
/// is 0.
const NO_MASTER_INFO_PORT: u32 = 0;

/// Longest wait between two attempts to register again after losing the
/// session: short enough that clients find the server soon after
/// ZooKeeper comes back, long enough not to flood the logs while it is
/// away.
const MAX_RETRY_BACKOFF: Duration = Duration::from_secs(5);

/// HBase's `RegionServerInfo`, the data of a `/hbase/rs/<server>` znode.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegionServerInfo {
    /// Web UI port, -1 when there is none.
    #[prost(int32, optional, tag = "1")]
    pub info_port: Option<i32>,
    /// The server's version.
    #[prost(message, optional, tag = "2")]
    pub version_info: Option<VersionInfo>,
}

/// Where and how to register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkConfig {
    /// The ZooKeeper ensemble: `host[:port][,host[:port]...]` (HBase's
    /// `hbase.zookeeper.quorum`; a missing port is 2181; IPv6 hosts in
    /// brackets).
    pub quorum: String,
    /// The base znode (HBase's `zookeeper.znode.parent`), `/hbase` by
    /// default; clients must be configured with the same.
    pub znode_parent: String,
    /// Session timeout asked of ZooKeeper, in milliseconds (the server
    /// clamps it to its own bounds). Our ephemeral znodes outlive a crash
    /// by this long; registering waits this long for a previous master's
    /// znode to go.
    pub session_timeout_ms: u64,
    /// How long a connection attempt may take before registering fails,
    /// in milliseconds.
    pub connect_timeout_ms: u64,
}

impl Default for ZkConfig {
    fn default() -> Self {
        ZkConfig {
            quorum: "127.0.0.1:2181".to_owned(),
            znode_parent: "/hbase".to_owned(),
            session_timeout_ms: 10_000,
            connect_timeout_ms: 10_000,
        }
    }
}

/// One member of a ZooKeeper ensemble.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumMember {
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// Client port.
    pub port: u16,
}

impl std::fmt::Display for QuorumMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl ZkConfig {
    /// The quorum, parsed and checked (see [`parse_quorum`]).
    pub fn members(&self) -> Result<Vec<QuorumMember>, ZkError> {
        parse_quorum(&self.quorum)
    }

    /// The connect string handed to the ZooKeeper client, after checking
    /// the quorum, the znode parent and the timeouts.
    pub fn connect_string(&self) -> Result<String, ZkError> {
        let members = self.members()?;
        check_znode_parent(&self.znode_parent)?;
        for (name, value) in [
            ("session_timeout_ms", self.session_timeout_ms),
            ("connect_timeout_ms", self.connect_timeout_ms),
        ] {
            // Zero would mean "fail at once" or, for ZooKeeper, "use the
            // server's minimum": neither is what a configuration means.
            if value == 0 {
                return Err(ZkError::BadConfig {
                    quorum: self.quorum.clone(),
                    reason: format!("{name} must be positive"),
                });
            }
        }
        Ok(members
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(","))
    }
}

/// Parses `host[:port][,host[:port]...]`, refusing anything the ZooKeeper
/// client would misread: empty members, ports out of range, chroot
/// suffixes (the base znode is [`ZkConfig::znode_parent`]), schemes,
/// blanks and odd characters in host names.
pub fn parse_quorum(quorum: &str) -> Result<Vec<QuorumMember>, ZkError> {
    let bad = |reason: String| ZkError::BadQuorum {
        quorum: quorum.to_owned(),
        reason,
    };
    if quorum.trim().is_empty() {
        return Err(bad("it is empty".to_owned()));
    }
    if quorum.contains('/') {
        return Err(bad(
            "a chroot or scheme does not belong in the quorum; set the znode parent instead"
                .to_owned(),
        ));
    }
    let mut members = Vec::new();
    for (index, raw) in quorum.split(',').enumerate() {
        let member = raw.trim();
        if member.is_empty() {
            return Err(bad(format!("member {} is empty", index + 1)));
        }
        let (host, port) = if let Some(rest) = member.strip_prefix('[') {
            let Some(close) = rest.find(']') else {
                return Err(bad(format!("member {member:?} opens '[' without ']'")));
            };
            let host = &rest[..close];
            let after = &rest[close + 1..];
            let port = match after.strip_prefix(':') {
                Some(port) => Some(port),
                None if after.is_empty() => None,
                None => return Err(bad(format!("member {member:?}: junk after ']'"))),
            };
            if host.is_empty()
                || !host
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
            {
                return Err(bad(format!("member {member:?}: not an IPv6 address")));
            }
            (host, port)
        } else {
            if member.matches(':').count() > 1 {
                return Err(bad(format!(
                    "member {member:?} is not a host name or IPv4 address with a port \
                     (IPv6 goes in brackets: [::1]:2181)"
                )));
            }
            let (host, port) = match member.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (member, None),
            };
            if host.is_empty() {
                return Err(bad(format!("member {member:?} has no host")));
            }
            if !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_')
            {
                return Err(bad(format!(
                    "member {member:?}: host {host:?} is not a host name or IPv4 address \
                     (IPv6 goes in brackets)"
                )));
            }
            (host, port)
        };
        let port = match port {
            None => DEFAULT_ZOOKEEPER_PORT,
            Some(text) => match text.parse::<u16>() {
                Ok(port) if port != 0 && text.bytes().all(|b| b.is_ascii_digit()) => port,
                _ => {
                    return Err(bad(format!(
                        "member {member:?}: port {text:?} is not a number from 1 to 65535"
                    )))
                }
            },
        };
        members.push(QuorumMember {
            host: host.to_owned(),
            port,
        });
    }
    Ok(members)
}

/// Checks a base znode: absolute, not the root, no empty, `.` or `..`
/// segment, no trailing `/`, no control characters (ZooKeeper refuses
/// those paths, and HBase's clients would not find them).
fn check_znode_parent(parent: &str) -> Result<(), ZkError> {
    let bad = |reason: &str| ZkError::BadZnodeParent {
        parent: parent.to_owned(),
        reason: reason.to_owned(),
    };
    let Some(rest) = parent.strip_prefix('/') else {
        return Err(bad("it must start with '/'"));
    };
    if rest.is_empty() {
        return Err(bad("the root cannot be the base znode"));
    }
    if rest
        .split('/')
        .any(|segment| segment.is_empty() || segment == "." || segment == "..")
    {
        return Err(bad("empty, '.' and '..' segments are not allowed"));
    }
    if parent.chars().any(char::is_control) {
        return Err(bad("control characters are not allowed"));
    }
    Ok(())
}

/// The znodes HBase's clients read, under one base znode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZnodePaths {
    /// The base znode (`/hbase`).
    pub base: String,
    /// The active master (ephemeral).
    pub master: String,
    /// Where `hbase:meta` is served.
    pub meta_region_server: String,
    /// The cluster id.
    pub cluster_id: String,
    /// Present while the cluster is up.
    pub running: String,
    /// Parent of the live region servers' ephemeral znodes.
    pub region_servers: String,
    /// Parent of backup masters (empty for one process; cluster masters
    /// wait there, see `coordination.rs`).
    pub backup_masters: String,
    /// Parent of per-table state (kept empty; clients list it).
    pub table: String,
}

impl ZnodePaths {
    /// The paths under `base` (checked by [`ZkConfig::connect_string`]).
    pub fn new(base: &str) -> ZnodePaths {
        let under = |name: &str| format!("{base}/{name}");
        ZnodePaths {
            base: base.to_owned(),
            master: under("master"),
            meta_region_server: under("meta-region-server"),
            cluster_id: under("hbaseid"),
            running: under("running"),
            region_servers: under("rs"),
            backup_masters: under("backup-masters"),
            table: under("table"),
        }
    }

    /// A region server's ephemeral znode: `rs/<host>,<port>,<startcode>`.
    pub fn region_server(&self, identity: &Identity) -> String {
        format!("{}/{}", self.region_servers, identity.region_server_text())
    }
}

/// Why registering, deregistering or decoding failed. Every message names
/// the quorum and the znode concerned.
#[derive(Debug, thiserror::Error)]
pub enum ZkError {
    /// The quorum string is malformed.
    #[error("invalid ZooKeeper quorum {quorum:?}: {reason}")]
    BadQuorum {
        /// The quorum as configured.
        quorum: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The base znode is malformed.
    #[error("invalid ZooKeeper znode parent {parent:?}: {reason}")]
    BadZnodeParent {
        /// The base znode as configured.
        parent: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Another setting is out of range.
    #[error("invalid ZooKeeper settings for quorum {quorum}: {reason}")]
    BadConfig {
        /// The quorum as configured.
        quorum: String,
        /// What is wrong.
        reason: String,
    },
    /// Registering was called outside a tokio runtime.
    #[error("ZooKeeper registration with {quorum} needs a tokio runtime")]
    NoRuntime {
        /// The quorum.
        quorum: String,
    },
    /// No session could be established in time.
    #[error("cannot reach ZooKeeper at {quorum} within {timeout_ms} ms: {reason}")]
    Connect {
        /// The quorum.
        quorum: String,
        /// The connect timeout.
        timeout_ms: u64,
        /// The client's reason.
        reason: String,
    },
    /// A ZooKeeper operation on one znode failed.
    #[error("ZooKeeper at {quorum}: {operation} {znode} failed: {source}")]
    Operation {
        /// The quorum.
        quorum: String,
        /// The znode.
        znode: String,
        /// What was being done (`create`, `set`, `delete`, `read`).
        operation: &'static str,
        /// The client's error.
        #[source]
        source: zookeeper_client::Error,
    },
    /// A ZooKeeper operation did not finish in time.
    #[error("ZooKeeper at {quorum}: {operation} {znode} got no answer within {timeout_ms} ms")]
    Timeout {
        /// The quorum.
        quorum: String,
        /// The znode.
        znode: String,
        /// What was being done.
        operation: &'static str,
        /// How long we waited.
        timeout_ms: u64,
    },
    /// Another live master holds the master znode.
    #[error(
        "another master ({other}) is active: {znode} at ZooKeeper {quorum} belongs to live \
         session {session:#x}; waited {waited_ms} ms for it to go"
    )]
    MasterTaken {
        /// The quorum.
        quorum: String,
        /// The master znode.
        znode: String,
        /// The other master, `host:port` (start code ...) as its znode says.
        other: String,
        /// The session owning the znode.
        session: i64,
        /// How long registering waited.
        waited_ms: u64,
    },
    /// An ephemeral znode naming this process is held by another live
    /// session (cluster coordination never steals one: the other session
    /// may be a live process with the same name).
    #[error(
        "ZooKeeper at {quorum}: {znode} is held by another live session {session:#x}: {reason}"
    )]
    AlreadyRegistered {
        /// The quorum.
        quorum: String,
        /// The znode.
        znode: String,
        /// The session owning it.
        session: i64,
        /// What that means.
        reason: String,
    },
    /// The session ended (expired, or closed by this process) before an
    /// operation could finish; a coordinator never opens another one.
    #[error("ZooKeeper at {quorum}: the session {state}; cannot {operation} {znode}")]
    SessionEnded {
        /// The quorum.
        quorum: String,
        /// The znode.
        znode: String,
        /// What was being done.
        operation: &'static str,
        /// `expired` or `was closed`.
        state: &'static str,
    },
    /// A znode holds data this cluster cannot use (undecodable, or another
    /// cluster's).
    #[error("ZooKeeper at {quorum}: {znode} {reason}")]
    BadZnode {
        /// The quorum.
        quorum: String,
        /// The znode.
        znode: String,
        /// What is wrong with its data.
        reason: String,
    },
    /// A name that becomes a znode name (a server name, a role) is not
    /// well formed.
    #[error("invalid {what} {name:?}: {reason}")]
    BadName {
        /// What the name names (`server name`, `role`).
        what: &'static str,
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A znode's data is not what HBase writes.
    #[error("bad znode data at offset {offset}: {reason}")]
    Decode {
        /// Where in the data decoding stopped.
        offset: usize,
        /// What was expected there.
        reason: String,
    },
}

impl ZkError {
    pub(crate) fn operation(
        quorum: &str,
        znode: &str,
        operation: &'static str,
        source: zookeeper_client::Error,
    ) -> ZkError {
        ZkError::Operation {
            quorum: quorum.to_owned(),
            znode: znode.to_owned(),
            operation,
            source,
        }
    }
}

/// `PBUF` followed by `message`: what HBase keeps in a znode, before the
/// envelope.
pub fn encode_pb(message: &impl Message) -> Vec<u8> {
    let mut out = Vec::with_capacity(PB_MAGIC.len() + message.encoded_len());
    out.extend_from_slice(PB_MAGIC);
    message.encode_raw(&mut out);
    out
}

/// HBase's full znode data: `0xFF`, the identifier's length (4 bytes,
/// big-endian), the identifier, then [`encode_pb`] of `message`.
pub fn encode_with_metadata(id: &[u8], message: &impl Message) -> Vec<u8> {
    // The length field is 4 bytes: an identifier longer than that cannot
    // be written faithfully, so it is cut (identifiers are a few dozen
    // bytes: `<pid>@<host>`).
    let id = &id[..id.len().min(u32::MAX as usize)];
    let id_len = u32::try_from(id.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(1 + 4 + id.len() + PB_MAGIC.len() + message.encoded_len());
    out.push(METADATA_MAGIC);
    out.extend_from_slice(&id_len.to_be_bytes());
    out.extend_from_slice(id);
    out.extend_from_slice(PB_MAGIC);
    message.encode_raw(&mut out);
    out
}

/// Decodes a znode's data written by HBase or by us: the envelope is
/// skipped when present (HBase's readers accept data without it), then
/// `PBUF` is required and the rest decoded as `M`. Errors name the offset
/// where the data stopped making sense.
pub fn decode_znode<M: Message + Default>(data: &[u8]) -> Result<M, ZkError> {
    let bad = |offset: usize, reason: String| ZkError::Decode { offset, reason };
    let mut offset = 0usize;
    if data.first() == Some(&METADATA_MAGIC) {
        let Some(len_bytes) = data.get(1..5) else {
            return Err(bad(
                1,
                format!(
                    "the envelope needs a 4-byte identifier length, {} bytes left",
                    data.len().saturating_sub(1)
                ),
            ));
        };
        let mut len = [0u8; 4];
        len.copy_from_slice(len_bytes);
        let id_len = u32::from_be_bytes(len) as usize;
        let left = data.len() - 5;
        if id_len > left {
            return Err(bad(
                1,
                format!("the identifier length {id_len} exceeds the {left} bytes left"),
            ));
        }
        offset = 5 + id_len;
    }
    match data.get(offset..offset + PB_MAGIC.len()) {
        Some(magic) if magic == PB_MAGIC => {}
        _ => {
            let seen = &data[offset.min(data.len())..data.len().min(offset + PB_MAGIC.len())];
            return Err(bad(
                offset,
                format!("expected the protobuf magic \"PBUF\", found {seen:02x?}"),
            ));
        }
    }
    offset += PB_MAGIC.len();
    M::decode(&data[offset..])
        .map_err(|e| bad(offset, format!("the protobuf message does not decode: {e}")))
}

/// Registers this server with ZooKeeper and keeps it registered: see
/// [`ZkRegistration::register`]. Dropping it without
/// [`ZkRegistration::deregister`] closes the session, so ZooKeeper drops
/// the ephemeral znodes itself.
#[derive(Debug)]
pub struct ZkRegistration {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// What the registration and its watcher task share.
#[derive(Debug)]
struct Shared {
    config: ZkConfig,
    connect_string: String,
    identity: Identity,
    paths: ZnodePaths,
    /// HBase's envelope identifier, `<pid>@<host>`: tells which process
    /// wrote a znode when reading it by hand.
    identifier: Vec<u8>,
    spawner: TokioSpawner,
    /// The current session; replaced after an expiry, taken out by
    /// `deregister`.
    client: Mutex<Option<Client>>,
}

impl ZkRegistration {
    /// Connects to `config.quorum` and writes every znode HBase's clients
    /// read for `identity` (see the module documentation), then starts
    /// the task that keeps them there.
    ///
    /// Fails with [`ZkError::Connect`] when no session is established
    /// within `connect_timeout_ms`, and with [`ZkError::MasterTaken`] when
    /// another live session holds the master znode for longer than
    /// `session_timeout_ms` (a crashed predecessor's znode goes when its
    /// session expires, so waiting that long lets a restart succeed).
    /// Must be called inside a tokio runtime (the ZooKeeper client's tasks
    /// run on it).
    pub async fn register(
        config: &ZkConfig,
        identity: &Identity,
    ) -> Result<ZkRegistration, ZkError> {
        let connect_string = config.connect_string()?;
        let handle = tokio::runtime::Handle::try_current().map_err(|_| ZkError::NoRuntime {
            quorum: config.quorum.clone(),
        })?;
        let shared = Arc::new(Shared {
            config: config.clone(),
            connect_string,
            identity: identity.clone(),
            paths: ZnodePaths::new(&config.znode_parent),
            identifier: format!("{}@{}", std::process::id(), identity.host).into_bytes(),
            spawner: TokioSpawner(handle),
            client: Mutex::new(None),
        });
        let client = WithSpawner::new(shared.spawner.clone(), async {
            let client = connect(&shared.config, &shared.connect_string).await?;
            let wait = Duration::from_millis(config.session_timeout_ms);
            // On failure the client is dropped, which closes the session
            // and removes whatever ephemeral znode was already written.
            publish(&shared, &client, wait, &[]).await?;
            Ok::<Client, ZkError>(client)
        })
        .await?;
        tracing::info!(
            quorum = %config.quorum,
            master = %shared.paths.master,
            session = %client.session_id(),
            "registered in ZooKeeper"
        );
        *shared.client.lock() = Some(client);
        let (stop, stopped) = watch::channel(false);
        let task = shared.spawner.0.spawn(WithSpawner::new(
            shared.spawner.clone(),
            watch_session(shared.clone(), stopped),
        ));
        Ok(ZkRegistration {
            shared,
            stop,
            task: Some(task),
        })
    }

    /// The znodes written.
    pub fn paths(&self) -> &ZnodePaths {
        &self.shared.paths
    }

    /// The region server's ephemeral znode.
    pub fn region_server_znode(&self) -> String {
        self.shared.paths.region_server(&self.shared.identity)
    }

    /// The current ZooKeeper session's id (it changes when the watcher
    /// task registers again after an expiry), `None` once deregistered.
    pub fn session_id(&self) -> Option<i64> {
        self.shared
            .client
            .lock()
            .as_ref()
            .map(|client| client.session_id().0)
    }

    /// Deletes our ephemeral znodes (the master znode only while it is
    /// still ours) and closes the session, each step bounded by
    /// `connect_timeout_ms`. The persistent znodes stay, as HBase leaves
    /// them. The session is closed even when a deletion fails; the first
    /// failure is reported (ZooKeeper removes the znodes anyway once the
    /// session is gone).
    pub async fn deregister(mut self) -> Result<(), ZkError> {
        self.stop_watcher().await;
        let Some(client) = self.shared.client.lock().take() else {
            return Ok(());
        };
        let shared = self.shared.clone();
        WithSpawner::new(shared.spawner.clone(), async move {
            let mut first_error = None;
            for znode in [
                shared.paths.master.clone(),
                shared.paths.region_server(&shared.identity),
            ] {
                if let Err(e) = delete_if_ours(&shared.config, &client, &znode).await {
                    tracing::warn!(error = %e, "deregistering from ZooKeeper");
                    first_error.get_or_insert(e);
                }
            }
            let mut states = client.state_watcher();
            let closing = client.state();
            // Dropping the last handle sends CloseSession; waiting for the
            // Closed state makes "deregistered" mean the server knows.
            drop(client);
            if !closing.is_terminated() {
                let limit = Duration::from_millis(shared.config.connect_timeout_ms);
                let closed = tokio::time::timeout(limit, async {
                    while !states.changed().await.is_terminated() {}
                })
                .await;
                if closed.is_err() {
                    first_error.get_or_insert(ZkError::Timeout {
                        quorum: shared.config.quorum.clone(),
                        znode: shared.paths.base.clone(),
                        operation: "close session of",
                        timeout_ms: shared.config.connect_timeout_ms,
                    });
                }
            }
            tracing::info!(quorum = %shared.config.quorum, "deregistered from ZooKeeper");
            first_error.map_or(Ok(()), Err)
        })
        .await
    }

    /// Stops the watcher task and waits for it, so it cannot register
    /// again behind our back.
    async fn stop_watcher(&mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            // The task only ends by the stop signal or by being aborted;
            // either way it no longer touches ZooKeeper.
            let _ = task.await;
        }
    }
}

impl Drop for ZkRegistration {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Opens a session with `config`'s session timeout, bounded by its
/// `connect_timeout_ms`; `connect_string` is [`ZkConfig::connect_string`].
pub(crate) async fn connect(config: &ZkConfig, connect_string: &str) -> Result<Client, ZkError> {
    let connector =
        Client::connector().with_session_timeout(Duration::from_millis(config.session_timeout_ms));
    let limit = Duration::from_millis(config.connect_timeout_ms);
    // The client retries unreachable servers until its session timeout;
    // the outer limit turns a dead quorum into an error in bounded time.
    // Dropping the connect future is clean: its session task is only
    // spawned once a session exists.
    let failed = |reason: String| ZkError::Connect {
        quorum: config.quorum.clone(),
        timeout_ms: config.connect_timeout_ms,
        reason,
    };
    match tokio::time::timeout(limit, connector.connect(connect_string)).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(failed(e.to_string())),
        Err(_) => Err(failed(
            "no ZooKeeper server answered with a session (is it running there?)".to_owned(),
        )),
    }
}

/// The cluster id another cluster's ZooKeeper holds
/// (`<znode_parent>/hbaseid`), `None` when it holds none: what HBase's
/// master reads of a replication peer before adding it. See
/// [`read_znode`].
pub fn read_cluster_id(config: &ZkConfig) -> Result<Option<String>, ZkError> {
    read_znode::<ClusterId>(config, "hbaseid").map(|id| id.map(|id| id.cluster_id))
}

/// The message another cluster's ZooKeeper holds at
/// `<znode_parent>/<name>` (`PBUF`-prefixed, as HBase writes its znodes),
/// `None` when the znode is absent. One short session, connecting and
/// reading each bounded by `config.connect_timeout_ms`, on a runtime of
/// its own, so it can be called from any thread not running async code
/// (the RPC handlers run on the blocking pool).
pub fn read_znode<M: Message + Default>(
    config: &ZkConfig,
    name: &str,
) -> Result<Option<M>, ZkError> {
    let connect_string = config.connect_string()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ZkError::Connect {
            quorum: config.quorum.clone(),
            timeout_ms: config.connect_timeout_ms,
            reason: format!("no runtime for the ZooKeeper client: {e}"),
        })?;
    let znode = format!("{}/{name}", config.znode_parent);
    let limit = Duration::from_millis(config.connect_timeout_ms);
    let spawner = TokioSpawner(runtime.handle().clone());
    runtime.block_on(WithSpawner::new(spawner, async {
        let client = connect(config, &connect_string).await?;
        let read = tokio::time::timeout(limit, client.get_data(&znode)).await;
        // Dropping the last handle sends CloseSession; waiting a moment
        // for it spares the peer a session left to expire.
        let mut states = client.state_watcher();
        let closing = client.state();
        drop(client);
        if !closing.is_terminated() {
            let _ = tokio::time::timeout(Duration::from_secs(1), async {
                while !states.changed().await.is_terminated() {}
            })
            .await;
        }
        match read {
            Err(_) => Err(ZkError::Timeout {
                quorum: config.quorum.clone(),
                znode: znode.clone(),
                operation: "read",
                timeout_ms: config.connect_timeout_ms,
            }),
            Ok(Err(zookeeper_client::Error::NoNode)) => Ok(None),
            Ok(Err(e)) => Err(ZkError::operation(&config.quorum, &znode, "read", e)),
            Ok(Ok((data, _))) => decode_znode::<M>(&data).map(Some),
        }
    }))
}

/// Writes every znode, the master first: if another master is live we
/// must not overwrite the znodes it owns the meaning of.
async fn publish(
    shared: &Shared,
    client: &Client,
    master_wait: Duration,
    dead_sessions: &[i64],
) -> Result<(), ZkError> {
    let paths = &shared.paths;
    let identity = &shared.identity;
    let quorum = &shared.config.quorum;
    let directory = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for dir in [
        &paths.base,
        &paths.region_servers,
        &paths.backup_masters,
        &paths.table,
    ] {
        client
            .mkdir(dir, &directory)
            .await
            .map_err(|e| ZkError::operation(quorum, dir, "create", e))?;
    }
    let id = &shared.identifier;
    let master = Master {
        master: Some(identity.master()),
        rpc_version: Some(RPC_VERSION),
        info_port: Some(NO_MASTER_INFO_PORT),
    };
    claim_master(
        shared,
        client,
        &encode_with_metadata(id, &master),
        master_wait,
        dead_sessions,
    )
    .await?;
    let cluster_id = ClusterId {
        cluster_id: identity.cluster_id.clone(),
    };
    put_persistent(
        quorum,
        client,
        &paths.cluster_id,
        &encode_with_metadata(id, &cluster_id),
    )
    .await?;
    let up = ClusterUp {
        start_date: java_date_text(identity.start_code),
    };
    put_persistent(
        quorum,
        client,
        &paths.running,
        &encode_with_metadata(id, &up),
    )
    .await?;
    let meta = MetaRegionServer {
        server: Some(identity.region_server()),
        rpc_version: Some(RPC_VERSION),
        state: Some(META_STATE_OPEN),
    };
    put_persistent(
        quorum,
        client,
        &paths.meta_region_server,
        &encode_with_metadata(id, &meta),
    )
    .await?;
    let info = RegionServerInfo {
        info_port: Some(NO_INFO_PORT),
        version_info: Some(version_info()),
    };
    put_own_ephemeral(
        shared,
        client,
        &paths.region_server(identity),
        &encode_with_metadata(id, &info),
    )
    .await
}

/// Creates or overwrites a persistent znode: a leftover of an earlier run
/// may hold stale data (another start code, another cluster id).
pub(crate) async fn put_persistent(
    quorum: &str,
    client: &Client,
    znode: &str,
    data: &[u8],
) -> Result<(), ZkError> {
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    // A concurrent delete between our create and set is retried once more
    // rather than looped on forever.
    for _ in 0..3 {
        match client.create(znode, data, &options).await {
            Ok(_) => return Ok(()),
            Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => return Err(ZkError::operation(quorum, znode, "create", e)),
        }
        match client.set_data(znode, data, None).await {
            Ok(_) => return Ok(()),
            Err(zookeeper_client::Error::NoNode) => continue,
            Err(e) => return Err(ZkError::operation(quorum, znode, "set", e)),
        }
    }
    Err(ZkError::operation(
        quorum,
        znode,
        "create",
        zookeeper_client::Error::NoNode,
    ))
}

/// Creates an ephemeral znode only this server can own (its name carries
/// our start code): a same-named znode of another session is a leftover
/// of this very incarnation's previous session, so it is replaced.
async fn put_own_ephemeral(
    shared: &Shared,
    client: &Client,
    znode: &str,
    data: &[u8],
) -> Result<(), ZkError> {
    let quorum = &shared.config.quorum;
    let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let ours = client.session_id().0;
    for _ in 0..3 {
        match client.create(znode, data, &options).await {
            Ok(_) => return Ok(()),
            Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => return Err(ZkError::operation(quorum, znode, "create", e)),
        }
        let stat = match client.check_stat(znode).await {
            Ok(Some(stat)) => stat,
            Ok(None) => continue,
            Err(e) => return Err(ZkError::operation(quorum, znode, "read", e)),
        };
        if stat.ephemeral_owner == ours {
            return match client.set_data(znode, data, None).await {
                Ok(_) => Ok(()),
                Err(e) => Err(ZkError::operation(quorum, znode, "set", e)),
            };
        }
        match client.delete(znode, Some(stat.version)).await {
            Ok(())
            | Err(zookeeper_client::Error::NoNode)
            | Err(zookeeper_client::Error::BadVersion) => {}
            Err(e) => return Err(ZkError::operation(quorum, znode, "delete", e)),
        }
    }
    Err(ZkError::operation(
        quorum,
        znode,
        "create",
        zookeeper_client::Error::NodeExists,
    ))
}

/// Takes the master znode. A znode of another live session is waited on
/// (up to `wait`) rather than stolen: two servers announcing themselves as
/// the master would split clients between them. A znode of one of our own
/// dead sessions, or a persistent one (HBase's is always ephemeral, so it
/// is debris), is replaced at once.
async fn claim_master(
    shared: &Shared,
    client: &Client,
    data: &[u8],
    wait: Duration,
    dead_sessions: &[i64],
) -> Result<(), ZkError> {
    let quorum = &shared.config.quorum;
    let znode = shared.paths.master.as_str();
    let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let ours = client.session_id().0;
    let started = Instant::now();
    let deadline = started + wait;
    loop {
        match client.create(znode, data, &options).await {
            Ok(_) => return Ok(()),
            Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => return Err(ZkError::operation(quorum, znode, "create", e)),
        }
        let (stat, watcher) = match client.check_and_watch_stat(znode).await {
            Ok(found) => found,
            Err(e) => return Err(ZkError::operation(quorum, znode, "read", e)),
        };
        let Some(stat) = stat else { continue };
        let owner = stat.ephemeral_owner;
        if owner == ours {
            return match client.set_data(znode, data, None).await {
                Ok(_) => Ok(()),
                Err(e) => Err(ZkError::operation(quorum, znode, "set", e)),
            };
        }
        if owner == 0 || dead_sessions.contains(&owner) {
            tracing::info!(znode, owner = %format!("{owner:#x}"), "replacing a stale master znode");
            match client.delete(znode, Some(stat.version)).await {
                Ok(())
                | Err(zookeeper_client::Error::NoNode)
                | Err(zookeeper_client::Error::BadVersion) => continue,
                Err(e) => return Err(ZkError::operation(quorum, znode, "delete", e)),
            }
        }
        let now = Instant::now();
        if now >= deadline {
            let other = match client.get_data(znode).await {
                Ok((data, _)) => describe_master(&data),
                Err(zookeeper_client::Error::NoNode) => continue,
                Err(e) => format!("unreadable: {e}"),
            };
            return Err(ZkError::MasterTaken {
                quorum: quorum.clone(),
                znode: znode.to_owned(),
                other,
                session: owner,
                waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            });
        }
        tracing::info!(
            znode,
            owner = %format!("{owner:#x}"),
            "another master is registered; waiting for its session to end"
        );
        // Woken by the znode's deletion (or any session event); the loop
        // then looks again.
        let _ = tokio::time::timeout(deadline - now, watcher.changed()).await;
    }
}

/// `host:port (start code N)` of a master znode, for error messages.
fn describe_master(data: &[u8]) -> String {
    match decode_znode::<Master>(data) {
        Ok(Master {
            master: Some(server),
            ..
        }) => format!(
            "{}:{} (start code {})",
            server.host_name,
            server
                .port
                .map_or_else(|| "?".to_owned(), |p| p.to_string()),
            server
                .start_code
                .map_or_else(|| "?".to_owned(), |c| c.to_string())
        ),
        Ok(_) => "a master znode naming no server".to_owned(),
        Err(e) => format!("an undecodable master znode: {e}"),
    }
}

/// Deletes `znode` if our session owns it; a znode already gone is fine.
/// Each request is bounded by `config.connect_timeout_ms`.
pub(crate) async fn delete_if_ours(
    config: &ZkConfig,
    client: &Client,
    znode: &str,
) -> Result<(), ZkError> {
    let quorum = &config.quorum;
    let limit = Duration::from_millis(config.connect_timeout_ms);
    let timeout = |operation| ZkError::Timeout {
        quorum: quorum.clone(),
        znode: znode.to_owned(),
        operation,
        timeout_ms: config.connect_timeout_ms,
    };
    // While ZooKeeper is away requests wait for a reconnection: bounded,
    // so stopping a server never hangs on it.
    let stat = match tokio::time::timeout(limit, client.check_stat(znode)).await {
        Err(_) => return Err(timeout("read")),
        Ok(Ok(Some(stat))) => stat,
        Ok(Ok(None)) => return Ok(()),
        Ok(Err(e)) => return Err(ZkError::operation(quorum, znode, "read", e)),
    };
    if stat.ephemeral_owner != client.session_id().0 {
        return Ok(());
    }
    match tokio::time::timeout(limit, client.delete(znode, Some(stat.version))).await {
        Err(_) => Err(timeout("delete")),
        Ok(Ok(())) | Ok(Err(zookeeper_client::Error::NoNode)) => Ok(()),
        Ok(Err(e)) => Err(ZkError::operation(quorum, znode, "delete", e)),
    }
}

/// Watches the session until told to stop. A reconnection (same session)
/// re-publishes, in case a znode was removed meanwhile; an expired or
/// closed session is replaced by a new one, retried with backoff for as
/// long as ZooKeeper is away. Failures are only logged: the server keeps
/// serving its clients without ZooKeeper.
async fn watch_session(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    // Our own ended sessions: their master znode (until ZooKeeper notices
    // they ended) is ours to replace, not another master's.
    let mut dead_sessions: Vec<i64> = Vec::new();
    loop {
        let Some(client) = shared.client.lock().clone() else {
            return;
        };
        let mut states = client.state_watcher();
        let mut state = client.state();
        while !state.is_terminated() {
            tokio::select! {
                _ = stop.changed() => return,
                changed = states.changed() => state = changed,
            }
            match state {
                SessionState::Disconnected => tracing::warn!(
                    quorum = %shared.config.quorum,
                    "lost the ZooKeeper connection; still serving, reconnecting"
                ),
                SessionState::SyncConnected | SessionState::ConnectedReadOnly => {
                    tracing::info!(quorum = %shared.config.quorum, "ZooKeeper connection back");
                    let republished = tokio::select! {
                        _ = stop.changed() => return,
                        r = publish(&shared, &client, Duration::ZERO, &dead_sessions) => r,
                    };
                    if let Err(e) = republished {
                        tracing::warn!(error = %e, "re-publishing znodes after a reconnection");
                    }
                }
                _ => {}
            }
        }
        tracing::warn!(
            quorum = %shared.config.quorum,
            session = %client.session_id(),
            ?state,
            "ZooKeeper session ended; still serving, registering with a new session"
        );
        dead_sessions.push(client.session_id().0);
        // A long outage could pile up ids; only recent ones can still own
        // a znode (older sessions have long expired).
        if dead_sessions.len() > 16 {
            dead_sessions.remove(0);
        }
        drop(client);
        let mut backoff = Duration::from_millis(100);
        loop {
            if *stop.borrow() {
                return;
            }
            let attempt = async {
                let client = connect(&shared.config, &shared.connect_string).await?;
                publish(&shared, &client, Duration::ZERO, &dead_sessions).await?;
                Ok::<Client, ZkError>(client)
            };
            let attempt = tokio::select! {
                _ = stop.changed() => return,
                r = attempt => r,
            };
            match attempt {
                Ok(client) => {
                    tracing::info!(
                        quorum = %shared.config.quorum,
                        session = %client.session_id(),
                        "registered again in ZooKeeper"
                    );
                    *shared.client.lock() = Some(client);
                    break;
                }
                Err(e) => tracing::warn!(error = %e, "registering again in ZooKeeper"),
            }
            tokio::select! {
                _ = stop.changed() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_RETRY_BACKOFF);
        }
    }
}

/// Our `VersionInfo`: HBase's version we speak, and Basalt's own version
/// as the revision so an operator can tell the two apart.
pub(crate) fn version_info() -> VersionInfo {
    let mut parts = HBASE_VERSION.split('.').map(|p| p.parse::<u32>().ok());
    VersionInfo {
        version: HBASE_VERSION.to_owned(),
        url: "basalt".to_owned(),
        revision: env!("CARGO_PKG_VERSION").to_owned(),
        user: "basalt".to_owned(),
        date: String::new(),
        src_checksum: String::new(),
        version_major: parts.next().flatten(),
        version_minor: parts.next().flatten(),
    }
}

/// A time in milliseconds as Java's `Date.toString()` writes it in UTC
/// (`Thu Jan 01 00:00:00 UTC 1970`): HBase's `ClusterUp.start_date` is that
/// text, and tools display it as is.
pub(crate) fn java_date_text(millis: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let millis = if millis == 0 {
        // No start code: the time of registering.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    } else {
        millis
    };
    let secs = millis / 1000;
    let days = secs / 86_400;
    let of_day = secs % 86_400;
    // Days to a civil date (proleptic Gregorian), counting from 0000-03-01
    // so leap days fall at the end of a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} UTC {}",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
        year
    )
}

/// Runs `future`, and the tasks the `zookeeper-client` crate spawns from
/// it (a session's connection task, on `connect`), on the tokio runtime of
/// `handle`. Any other use of that crate in a tokio program needs this
/// around `Client::connect` (tests reading the znodes, tools).
pub fn with_tokio_spawner<F: Future>(
    handle: tokio::runtime::Handle,
    future: F,
) -> impl Future<Output = F::Output> {
    WithSpawner::new(TokioSpawner(handle), future)
}

/// Runs the ZooKeeper client's background tasks on tokio. The client
/// spawns through a thread-local spawner (the `spawns` facade) and has no
/// tokio support compiled in without an extra crate; this adapter is the
/// few lines that crate would add.
#[derive(Debug, Clone)]
pub(crate) struct TokioSpawner(pub(crate) tokio::runtime::Handle);

impl spawns_core::Spawn for TokioSpawner {
    fn spawn(&self, task: spawns_core::Task) {
        let future = Box::into_pin(task.future);
        self.0.spawn(WithSpawner::new(self.clone(), future));
    }
}

/// Polls a future with the spawner installed: the spawner is per thread
/// and tokio moves tasks between threads, so it is installed at every
/// poll rather than once.
pub(crate) struct WithSpawner<F> {
    spawner: TokioSpawner,
    inner: Pin<Box<F>>,
}

impl<F: Future> WithSpawner<F> {
    pub(crate) fn new(spawner: TokioSpawner, inner: F) -> Self {
        WithSpawner {
            spawner,
            inner: Box::pin(inner),
        }
    }
}

impl<F: Future> Future for WithSpawner<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let _scope = spawns_core::enter(&this.spawner);
        this.inner.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::hbase::ServerName;
    use proptest::prelude::*;

    fn identity() -> Identity {
        Identity {
            host: "node-1.example".to_owned(),
            master_port: 16000,
            region_server_port: 16020,
            start_code: 1_700_000_000_123,
            cluster_id: "c0ffee".to_owned(),
        }
    }

    #[test]
    fn the_envelope_is_magic_length_identifier_then_pbuf() {
        let master = Master {
            master: Some(identity().master()),
            rpc_version: Some(0),
            info_port: Some(0),
        };
        let data = encode_with_metadata(b"42@node-1", &master);
        assert_eq!(data[0], 0xFF);
        assert_eq!(&data[1..5], &9u32.to_be_bytes());
        assert_eq!(&data[5..14], b"42@node-1");
        assert_eq!(&data[14..18], b"PBUF");
        assert_eq!(&data[18..], master.encode_to_vec().as_slice());
        assert_eq!(decode_znode::<Master>(&data).unwrap(), master);
    }

    #[test]
    fn data_without_the_envelope_decodes_as_hbase_readers_accept_it() {
        let id = ClusterId {
            cluster_id: "abc".to_owned(),
        };
        let data = encode_pb(&id);
        assert_eq!(&data[..4], b"PBUF");
        assert_eq!(decode_znode::<ClusterId>(&data).unwrap(), id);
    }

    #[test]
    fn a_truncated_envelope_names_the_offset() {
        let err = decode_znode::<Master>(&[0xFF, 0, 0]).unwrap_err();
        assert!(matches!(err, ZkError::Decode { offset: 1, .. }), "{err}");
        let err = decode_znode::<Master>(&[0xFF, 0, 0, 0, 9, b'a']).unwrap_err();
        assert!(err.to_string().contains("identifier length 9"), "{err}");
    }

    #[test]
    fn a_missing_pbuf_magic_names_the_offset() {
        let err = decode_znode::<Master>(&[0xFF, 0, 0, 0, 1, b'x', b'P', b'B']).unwrap_err();
        assert!(matches!(err, ZkError::Decode { offset: 6, .. }), "{err}");
        let err = decode_znode::<Master>(b"").unwrap_err();
        assert!(matches!(err, ZkError::Decode { offset: 0, .. }), "{err}");
    }

    #[test]
    fn a_broken_message_after_pbuf_names_the_offset() {
        let err = decode_znode::<Master>(b"PBUF\x0a\x05ab").unwrap_err();
        assert!(matches!(err, ZkError::Decode { offset: 4, .. }), "{err}");
    }

    #[test]
    fn the_quorum_parses_hosts_ports_and_defaults() {
        let members = parse_quorum("zk1:2181, zk2 ,[::1]:2182,10.0.0.1:3000").unwrap();
        let text: Vec<String> = members.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            ["zk1:2181", "zk2:2181", "[::1]:2182", "10.0.0.1:3000"]
        );
    }

    #[test]
    fn garbage_quorums_are_refused_with_the_reason() {
        for (quorum, reason) in [
            ("", "empty"),
            ("zk1:2181,", "member 2 is empty"),
            ("zk1:0", "port"),
            ("zk1:70000", "port"),
            ("zk1:+5", "port"),
            ("zk1:2181/hbase", "znode parent"),
            ("tcp://zk1", "znode parent"),
            ("zk 1:2181", "not a host name"),
            (":2181", "no host"),
            ("[::1", "without ']'"),
            ("[zz]:1", "IPv6"),
            ("::1:2181", "IPv6 goes in brackets"),
        ] {
            let err = parse_quorum(quorum).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(reason), "{quorum:?}: {text}");
            assert!(text.contains(&format!("{quorum:?}")), "{text}");
        }
    }

    #[test]
    fn bad_znode_parents_are_refused() {
        for parent in ["hbase", "/", "/hbase/", "//hbase", "/a/../b", "/a\nb"] {
            let config = ZkConfig {
                znode_parent: parent.to_owned(),
                ..ZkConfig::default()
            };
            let err = config.connect_string().unwrap_err();
            assert!(
                matches!(err, ZkError::BadZnodeParent { .. }),
                "{parent:?}: {err}"
            );
        }
        let nested = ZkConfig {
            znode_parent: "/basalt/test".to_owned(),
            ..ZkConfig::default()
        };
        assert_eq!(nested.connect_string().unwrap(), "127.0.0.1:2181");
    }

    #[test]
    fn paths_follow_hbase_names() {
        let paths = ZnodePaths::new("/hbase");
        assert_eq!(paths.master, "/hbase/master");
        assert_eq!(paths.meta_region_server, "/hbase/meta-region-server");
        assert_eq!(paths.cluster_id, "/hbase/hbaseid");
        assert_eq!(paths.running, "/hbase/running");
        assert_eq!(
            paths.region_server(&identity()),
            "/hbase/rs/node-1.example,16020,1700000000123"
        );
    }

    #[test]
    fn the_start_date_reads_as_java_prints_dates() {
        assert_eq!(java_date_text(1), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(
            java_date_text(951_782_400_000),
            "Tue Feb 29 00:00:00 UTC 2000"
        );
        assert_eq!(
            java_date_text(1_700_000_000_123),
            "Tue Nov 14 22:13:20 UTC 2023"
        );
    }

    #[test]
    fn the_version_info_names_the_hbase_version() {
        let info = version_info();
        assert_eq!(info.version, HBASE_VERSION);
        assert_eq!(info.version_major, Some(2));
        let rs = RegionServerInfo {
            info_port: Some(-1),
            version_info: Some(info),
        };
        let back: RegionServerInfo = decode_znode(&encode_with_metadata(b"x", &rs)).unwrap();
        assert_eq!(back, rs);
    }

    #[test]
    fn server_names_survive_the_round_trip() {
        let meta = MetaRegionServer {
            server: Some(ServerName {
                host_name: "h".to_owned(),
                port: Some(1),
                start_code: Some(2),
            }),
            rpc_version: Some(0),
            state: Some(3),
        };
        let back: MetaRegionServer = decode_znode(&encode_with_metadata(b"", &meta)).unwrap();
        assert_eq!(back, meta);
    }

    fn mutated(data: Vec<u8>, at: usize, byte: u8, cut: usize) -> Vec<u8> {
        let mut data = data;
        if !data.is_empty() {
            let at = at % data.len();
            data[at] = byte;
            data.truncate(data.len() - cut % data.len());
        }
        data
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn decoding_random_bytes_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_znode::<Master>(&data);
            let _ = decode_znode::<MetaRegionServer>(&data);
            let _ = decode_znode::<RegionServerInfo>(&data);
            let _ = decode_znode::<ClusterId>(&data);
        }

        #[test]
        fn decoding_damaged_znodes_never_panics(
            id in proptest::collection::vec(any::<u8>(), 0..16),
            at in any::<usize>(),
            byte in any::<u8>(),
            cut in any::<usize>(),
        ) {
            let master = Master {
                master: Some(identity().master()),
                rpc_version: Some(0),
                info_port: Some(0),
            };
            let data = mutated(encode_with_metadata(&id, &master), at, byte, cut);
            let _ = decode_znode::<Master>(&data);
        }
    }
}
