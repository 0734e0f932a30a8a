//! Replication peers: HBase's `add_peer`, `remove_peer`, `enable_peer`,
//! `disable_peer`, `update_peer_config` and `list_peers`, kept in the
//! catalog (so they survive restarts and, in a cluster, the active
//! master) and changed by the master under HBase 2.6's rules.
//!
//! **Basalt ships no edits to a peer yet**: a peer is configuration only,
//! kept so that tools and clients that manage peers work unchanged and
//! find what they set. Nothing reads the WAL for a peer.
//!
//! The checks follow HBase's master (its `ReplicationPeerManager`), in its
//! order, with its messages: an id with a `-` is refused, a peer's cluster
//! key must have HBase's `quorum:port:/parent` form, the table and
//! namespace selection must agree with `replicate_all`, an id can be added
//! once, enabled or disabled only when it is not already, and an update
//! may not change the cluster key or the endpoint. One check needs the
//! peer itself (that its ZooKeeper answers and names another cluster):
//! that is the native RPC gateway's, before it calls the master.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use basalt_types::{Error, Result};

/// HBase's endpoint for a peer that is another HBase cluster: naming it is
/// the same as naming none.
pub const HBASE_ENDPOINT: &str =
    "org.apache.hadoop.hbase.replication.regionserver.HBaseInterClusterReplicationEndpoint";

/// One replication peer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicationPeer {
    /// Whether the peer is enabled (edits would be shipped to it).
    pub enabled: bool,
    /// What the peer is and what would be shipped to it.
    pub config: PeerConfig,
}

/// A peer's configuration, HBase's `ReplicationPeerConfig` field by
/// field. Table names are Basalt's (`ns:t`, or `t` in the default
/// namespace, as HBase prints them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerConfig {
    /// The peer cluster's ZooKeeper: `quorum:port:/znode-parent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_key: Option<String>,
    /// A replication endpoint's Java class name (`None`: HBase's
    /// inter-cluster endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Opaque peer data (HBase's `peerData`), in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data: Vec<(Bytes, Bytes)>,
    /// Configuration overrides for the peer.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub configuration: BTreeMap<String, String>,
    /// Tables replicated, each with its families (none: all of them);
    /// used when `replicate_all` is false.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub table_cfs: BTreeMap<String, Vec<String>>,
    /// Namespaces replicated whole; used when `replicate_all` is false.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub namespaces: BTreeSet<String>,
    /// Bytes per second the peer may take (0: no limit).
    #[serde(default)]
    pub bandwidth: i64,
    /// Every user table is replicated, but the exclusions.
    #[serde(default)]
    pub replicate_all: bool,
    /// Tables (and families) left out when `replicate_all`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub exclude_table_cfs: BTreeMap<String, Vec<String>>,
    /// Namespaces left out when `replicate_all`.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub exclude_namespaces: BTreeSet<String>,
    /// Edits of a region would be shipped in order (serial replication).
    #[serde(default)]
    pub serial: bool,
}

/// A cluster key split as HBase's `ZKConfig.transformClusterKey` splits
/// it: the ZooKeeper servers (`host:port` each), the client port, and the
/// base znode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterKey {
    /// The quorum, each server with its port (the key's client port for
    /// a server that names none), comma-separated.
    pub quorum: String,
    /// The client port the key names.
    pub client_port: u16,
    /// The peer cluster's base znode (`/hbase`).
    pub znode_parent: String,
}

impl ClusterKey {
    /// Parses `quorum:port:/parent`, where the quorum may name each
    /// server's own port (`h1:2181,h2:2182:2181:/hbase`). The parent must
    /// start with `/` and not end with one. Refused as HBase refuses it:
    /// `Invalid cluster key: <key>`.
    pub fn parse(key: &str) -> Result<ClusterKey> {
        let invalid = || Error::ReplicationPeerRefused(format!("Invalid cluster key: {key}"));
        let parts: Vec<&str> = key.split(':').collect();
        if parts.len() < 3 {
            return Err(invalid());
        }
        let parent = parts[parts.len() - 1];
        let port_text = parts[parts.len() - 2];
        // HBase's pattern `/.*[^/]`: a slash, then anything, ending in
        // something other than a slash.
        if parent.len() < 2 || !parent.starts_with('/') || parent.ends_with('/') {
            return Err(invalid());
        }
        let client_port: u16 = port_text.parse().map_err(|_| invalid())?;
        let quorum_text = &key[..key.len() - parent.len() - port_text.len() - 2];
        let quorum = quorum_text
            .split(',')
            .map(|server| {
                if server.contains(':') {
                    server.to_string()
                } else {
                    format!("{server}:{client_port}")
                }
            })
            .collect::<Vec<_>>()
            .join(",");
        Ok(ClusterKey {
            quorum,
            client_port,
            znode_parent: parent.to_string(),
        })
    }
}

/// HBase refuses a peer id holding `-` (its queues are named
/// `<peer>-<server>`): `Found invalid peer name: <id>`. An empty id is
/// refused too: it could not be named again.
pub fn check_peer_id(id: &str) -> Result<()> {
    if id.is_empty() || id.contains('-') {
        return Err(Error::ReplicationPeerRefused(format!(
            "Found invalid peer name: {id}"
        )));
    }
    Ok(())
}

impl PeerConfig {
    /// Whether the peer is another HBase cluster reached through its
    /// cluster key: no endpoint, or HBase's inter-cluster one. Only then
    /// does HBase check the key (a custom endpoint may not use one);
    /// Basalt cannot load an endpoint class to ask it, so any other
    /// endpoint is taken as not needing the key.
    pub fn is_hbase_cluster(&self) -> bool {
        match self.endpoint.as_deref().map(str::trim) {
            None | Some("") => true,
            Some(endpoint) => endpoint == HBASE_ENDPOINT,
        }
    }

    /// The cluster key parsed, for a peer that is an HBase cluster
    /// (`None` for a custom endpoint).
    pub fn cluster_key(&self) -> Result<Option<ClusterKey>> {
        if !self.is_hbase_cluster() {
            return Ok(None);
        }
        ClusterKey::parse(self.cluster_key.as_deref().unwrap_or_default()).map(Some)
    }

    /// HBase's checks of a peer's configuration that need nothing but the
    /// configuration, in HBase's order: the cluster key's form, then the
    /// selection rules (with `replicate_all` no tables or namespaces may
    /// be named; without it no exclusions; a table may not be named with
    /// its namespace).
    pub fn check(&self) -> Result<()> {
        self.cluster_key()?;
        if self.replicate_all {
            if !self.namespaces.is_empty() || !self.table_cfs.is_empty() {
                return Err(Error::ReplicationPeerRefused(
                    "Need clean namespaces or table-cfs config firstly when you want replicate all cluster"
                        .to_string(),
                ));
            }
            check_no_conflict(&self.exclude_namespaces, &self.exclude_table_cfs)
        } else {
            if !self.exclude_namespaces.is_empty() || !self.exclude_table_cfs.is_empty() {
                return Err(Error::ReplicationPeerRefused(
                    "Need clean exclude-namespaces or exclude-table-cfs config firstly when replicate_all flag is false"
                        .to_string(),
                ));
            }
            check_no_conflict(&self.namespaces, &self.table_cfs)
        }
    }
}

/// A table may not be selected both by itself and through its namespace.
fn check_no_conflict(
    namespaces: &BTreeSet<String>,
    table_cfs: &BTreeMap<String, Vec<String>>,
) -> Result<()> {
    for table in table_cfs.keys() {
        let namespace = basalt_types::descriptor::namespace_of(table);
        if namespaces.contains(namespace) {
            return Err(Error::ReplicationPeerRefused(format!(
                "Table-cfs {table} is conflict with namespaces {namespace} in peer config"
            )));
        }
    }
    Ok(())
}

/// A change to the replication peers, as the master applies it (and as a
/// cluster member sends it to the active master).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum PeerChange {
    /// Adds a peer (HBase's `add_peer`).
    Add {
        /// The peer's id.
        id: String,
        /// Its configuration.
        config: PeerConfig,
        /// Whether it starts enabled.
        enabled: bool,
    },
    /// Removes a peer (`remove_peer`).
    Remove {
        /// The peer's id.
        id: String,
    },
    /// Enables or disables a peer (`enable_peer`, `disable_peer`).
    SetState {
        /// The peer's id.
        id: String,
        /// The state wanted.
        enabled: bool,
    },
    /// Replaces a peer's configuration (`update_peer_config`).
    Update {
        /// The peer's id.
        id: String,
        /// The new configuration.
        config: PeerConfig,
    },
}

impl PeerChange {
    /// Applies the change to `peers` with HBase's checks; `peers` is left
    /// untouched when it fails. `modifiable` is the modification switch.
    pub(crate) fn apply(
        self,
        peers: &mut BTreeMap<String, ReplicationPeer>,
        modifiable: bool,
    ) -> Result<()> {
        if !modifiable {
            return Err(modification_disabled());
        }
        match self {
            PeerChange::Add {
                id,
                config,
                enabled,
            } => add_peer(peers, &id, config, enabled),
            PeerChange::Remove { id } => remove_peer(peers, &id),
            PeerChange::SetState { id, enabled } => set_peer_state(peers, &id, enabled),
            PeerChange::Update { id, config } => update_peer(peers, &id, config),
        }
    }
}

/// The peers of a catalog, changed as HBase's master changes them. Each
/// call leaves `peers` untouched when it fails.
fn add_peer(
    peers: &mut BTreeMap<String, ReplicationPeer>,
    id: &str,
    config: PeerConfig,
    enabled: bool,
) -> Result<()> {
    check_peer_id(id)?;
    config.check()?;
    if peers.contains_key(id) {
        return Err(Error::ReplicationPeerRefused(format!(
            "Replication peer {id} already exists"
        )));
    }
    peers.insert(id.to_string(), ReplicationPeer { enabled, config });
    Ok(())
}

/// Removes a peer (`ReplicationPeerNotFound` when there is none).
fn remove_peer(peers: &mut BTreeMap<String, ReplicationPeer>, id: &str) -> Result<()> {
    peers
        .remove(id)
        .map(drop)
        .ok_or_else(|| Error::ReplicationPeerNotFound(id.to_string()))
}

/// Enables or disables a peer; one already in that state is refused, as
/// HBase refuses it.
fn set_peer_state(
    peers: &mut BTreeMap<String, ReplicationPeer>,
    id: &str,
    enabled: bool,
) -> Result<()> {
    let peer = peers
        .get_mut(id)
        .ok_or_else(|| Error::ReplicationPeerNotFound(id.to_string()))?;
    if peer.enabled == enabled {
        let state = if enabled { "enabled" } else { "disabled" };
        return Err(Error::ReplicationPeerRefused(format!(
            "Replication peer {id} has already been {state}"
        )));
    }
    peer.enabled = enabled;
    Ok(())
}

/// Replaces a peer's configuration; its cluster key and endpoint cannot
/// change (HBase's rule: remove the peer and add it again).
fn update_peer(
    peers: &mut BTreeMap<String, ReplicationPeer>,
    id: &str,
    config: PeerConfig,
) -> Result<()> {
    config.check()?;
    let peer = peers
        .get_mut(id)
        .ok_or_else(|| Error::ReplicationPeerNotFound(id.to_string()))?;
    let same = |a: &Option<String>, b: &Option<String>| {
        // HBase compares them as blank-or-equal strings.
        let blank = |s: &Option<String>| s.as_deref().is_none_or(|s| s.trim().is_empty());
        (blank(a) && blank(b)) || a == b
    };
    if !same(&peer.config.cluster_key, &config.cluster_key) {
        return Err(Error::ReplicationPeerRefused(format!(
            "Changing the cluster key on an existing peer is not allowed. Existing key '{}' for peer {id} does not match new key '{}'",
            peer.config.cluster_key.as_deref().unwrap_or("null"),
            config.cluster_key.as_deref().unwrap_or("null"),
        )));
    }
    if !same(&peer.config.endpoint, &config.endpoint) {
        return Err(Error::ReplicationPeerRefused(format!(
            "Changing the replication endpoint implementation class on an existing peer is not allowed. Existing class '{}' for peer {id} does not match new class '{}'",
            peer.config.endpoint.as_deref().unwrap_or("null"),
            config.endpoint.as_deref().unwrap_or("null"),
        )));
    }
    peer.config = config;
    Ok(())
}

/// HBase's answer to a peer change while the modification switch is off
/// (HBase answers a retried `IOException`; Basalt's answer is final).
fn modification_disabled() -> Error {
    Error::ReplicationPeerRefused("Replication peer modification disabled".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hbase_peer(key: &str) -> PeerConfig {
        PeerConfig {
            cluster_key: Some(key.to_string()),
            replicate_all: true,
            ..PeerConfig::default()
        }
    }

    fn refused(result: Result<()>) -> String {
        match result {
            Err(Error::ReplicationPeerRefused(message)) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_cluster_key_splits_as_hbase_splits_it() {
        let key = ClusterKey::parse("zk1,zk2:2182:2181:/hbase-peer").unwrap();
        assert_eq!(key.quorum, "zk1:2181,zk2:2182");
        assert_eq!(key.client_port, 2181);
        assert_eq!(key.znode_parent, "/hbase-peer");
        let key = ClusterKey::parse("127.0.0.1:2181:/hbase").unwrap();
        assert_eq!(key.quorum, "127.0.0.1:2181");
        for bad in [
            "",
            "nonsense",
            "h:2181",
            "h:2181:hbase",
            "h:2181:/",
            "h:2181:/hbase/",
            "h:port:/hbase",
        ] {
            assert_eq!(
                refused(ClusterKey::parse(bad).map(drop)),
                format!("Invalid cluster key: {bad}")
            );
        }
    }

    #[test]
    fn a_custom_endpoint_needs_no_cluster_key_but_hbases_own_does() {
        let custom = PeerConfig {
            endpoint: Some("com.example.Shipper".into()),
            replicate_all: true,
            ..PeerConfig::default()
        };
        assert!(custom.check().is_ok());
        let hbase = PeerConfig {
            endpoint: Some(HBASE_ENDPOINT.into()),
            ..custom
        };
        assert_eq!(refused(hbase.check()), "Invalid cluster key: ");
    }

    #[test]
    fn the_table_and_namespace_selection_follows_hbases_rules() {
        let mut all = hbase_peer("h:2181:/hbase");
        all.namespaces.insert("ns1".into());
        assert!(refused(all.check()).starts_with("Need clean namespaces or table-cfs"));
        let mut some = hbase_peer("h:2181:/hbase");
        some.replicate_all = false;
        some.exclude_namespaces.insert("ns1".into());
        assert!(refused(some.check()).starts_with("Need clean exclude-namespaces"));
        let mut conflict = hbase_peer("h:2181:/hbase");
        conflict.replicate_all = false;
        conflict.namespaces.insert("ns1".into());
        conflict.table_cfs.insert("ns1:t1".into(), vec![]);
        assert_eq!(
            refused(conflict.check()),
            "Table-cfs ns1:t1 is conflict with namespaces ns1 in peer config"
        );
        conflict.namespaces.clear();
        conflict.namespaces.insert("default".into());
        conflict.table_cfs.insert("t2".into(), vec!["cf".into()]);
        assert_eq!(
            refused(conflict.check()),
            "Table-cfs t2 is conflict with namespaces default in peer config"
        );
    }

    #[test]
    fn peers_are_added_once_switched_once_and_removed_by_id() {
        let mut peers = BTreeMap::new();
        let config = hbase_peer("h:2181:/hbase");
        add_peer(&mut peers, "p1", config.clone(), true).unwrap();
        assert_eq!(
            refused(add_peer(&mut peers, "p1", config.clone(), true)),
            "Replication peer p1 already exists"
        );
        assert_eq!(
            refused(add_peer(&mut peers, "a-b", config.clone(), true)),
            "Found invalid peer name: a-b"
        );
        assert_eq!(
            refused(set_peer_state(&mut peers, "p1", true)),
            "Replication peer p1 has already been enabled"
        );
        set_peer_state(&mut peers, "p1", false).unwrap();
        assert_eq!(
            refused(set_peer_state(&mut peers, "p1", false)),
            "Replication peer p1 has already been disabled"
        );
        assert!(matches!(
            set_peer_state(&mut peers, "nope", true),
            Err(Error::ReplicationPeerNotFound(id)) if id == "nope"
        ));
        remove_peer(&mut peers, "p1").unwrap();
        assert!(matches!(
            remove_peer(&mut peers, "p1"),
            Err(Error::ReplicationPeerNotFound(_))
        ));
    }

    #[test]
    fn no_change_is_made_while_the_modification_switch_is_off() {
        let mut peers = BTreeMap::new();
        let add = PeerChange::Add {
            id: "p1".into(),
            config: hbase_peer("h:2181:/hbase"),
            enabled: true,
        };
        assert_eq!(
            refused(add.clone().apply(&mut peers, false)),
            "Replication peer modification disabled"
        );
        assert!(peers.is_empty());
        add.apply(&mut peers, true).unwrap();
        assert!(peers["p1"].enabled);
    }

    #[test]
    fn peers_and_the_modification_switch_outlive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Database::open(dir.path()).unwrap();
        let mut config = hbase_peer("zk1,zk2:2181:/hbase");
        config.configuration.insert("k".into(), "v".into());
        db.change_replication_peer(PeerChange::Add {
            id: "p1".into(),
            config: config.clone(),
            enabled: false,
        })
        .unwrap();
        assert!(db
            .replication_peer_modification_switch(Some(false))
            .unwrap());
        db.close().unwrap();

        let db = crate::Database::open(dir.path()).unwrap();
        let peers = db.replication_peers().unwrap();
        assert_eq!(
            peers["p1"],
            ReplicationPeer {
                enabled: false,
                config
            }
        );
        assert!(!db.replication_peer_modification_switch(None).unwrap());
        let refused = db
            .change_replication_peer(PeerChange::Remove { id: "p1".into() })
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "Replication peer modification disabled"
        );
        assert!(!db.replication_peer_modification_switch(Some(true)).unwrap());
        db.change_replication_peer(PeerChange::Remove { id: "p1".into() })
            .unwrap();
        assert!(db.replication_peers().unwrap().is_empty());
    }

    #[test]
    fn an_update_keeps_the_cluster_key_and_endpoint() {
        let mut peers = BTreeMap::new();
        add_peer(&mut peers, "p1", hbase_peer("h:2181:/hbase"), true).unwrap();
        let mut wider = hbase_peer("h:2181:/hbase");
        wider.bandwidth = 1000;
        update_peer(&mut peers, "p1", wider).unwrap();
        assert_eq!(peers["p1"].config.bandwidth, 1000);
        assert!(peers["p1"].enabled, "an update keeps the state");
        assert_eq!(
            refused(update_peer(&mut peers, "p1", hbase_peer("h:2181:/other"))),
            "Changing the cluster key on an existing peer is not allowed. Existing key 'h:2181:/hbase' for peer p1 does not match new key 'h:2181:/other'"
        );
        assert!(matches!(
            update_peer(&mut peers, "nope", hbase_peer("h:2181:/hbase")),
            Err(Error::ReplicationPeerNotFound(_))
        ));
    }
}
