//! Replication peers on the wire: HBase's `ReplicationPeer` message to
//! and from Basalt's `PeerConfig` (`basalt::replication`), and the one
//! check of a peer that needs the peer itself.
//!
//! HBase's master, before adding a peer that is another HBase cluster (or
//! changing one), connects to the peer's ZooKeeper and reads its cluster
//! id: a ZooKeeper that does not answer is refused (`Can't get
//! peerClusterId for clusterKey=<key>`), and so is a peer that is this
//! very cluster (`Invalid cluster key: <key>, should not replicate to
//! itself for HBaseInterClusterReplicationEndpoint`); a ZooKeeper that
//! answers without a cluster id is accepted. [`check_peer_cluster`] does
//! the same. Basalt ships no edits to peers yet, but a peer it accepts is
//! one HBase would have accepted.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use basalt::replication::{ClusterKey, PeerConfig, ReplicationPeer};
use bytes::Bytes;

use crate::context::RpcContext;
use crate::error::RpcError;
use crate::meta;
use crate::proto::hbase::{BytesBytesPair, NameStringPair};
use crate::proto::replication::{self as r, replication_state::State};
use crate::zk::{self, ZkConfig};

/// How long the peer's ZooKeeper has to answer, connecting and reading
/// each (HBase's own check retries for longer; a client's admin call
/// should not wait that long on a peer that is down).
pub const PEER_CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// A peer's configuration from its message. Absent fields take the
/// values HBase's client reads them as: all user tables replicated, no
/// bandwidth limit, not serial.
pub fn peer_config(message: &r::ReplicationPeer) -> Result<PeerConfig, RpcError> {
    Ok(PeerConfig {
        cluster_key: message.clusterkey.clone(),
        endpoint: message.replication_endpoint_impl.clone(),
        data: message
            .data
            .iter()
            .map(|p| (Bytes::from(p.first.clone()), Bytes::from(p.second.clone())))
            .collect(),
        configuration: message
            .configuration
            .iter()
            .map(|p| (p.name.clone(), p.value.clone()))
            .collect(),
        table_cfs: table_cfs(&message.table_cfs, "table_cfs")?,
        namespaces: namespaces(&message.namespaces, "namespaces")?,
        bandwidth: message.bandwidth.unwrap_or(0),
        replicate_all: message.replicate_all.unwrap_or(true),
        exclude_table_cfs: table_cfs(&message.exclude_table_cfs, "exclude_table_cfs")?,
        exclude_namespaces: namespaces(&message.exclude_namespaces, "exclude_namespaces")?,
        serial: message.serial.unwrap_or(false),
    })
}

fn utf8(bytes: &[u8], what: &str) -> Result<String, RpcError> {
    String::from_utf8(bytes.to_vec())
        .map_err(|_| RpcError::do_not_retry(format!("a replication peer's {what} is not UTF-8")))
}

fn table_cfs(
    entries: &[r::TableCf],
    field: &str,
) -> Result<BTreeMap<String, Vec<String>>, RpcError> {
    let mut out = BTreeMap::new();
    for entry in entries {
        let name = entry
            .table_name
            .as_ref()
            .ok_or_else(|| RpcError::missing(&format!("{field}.table_name")))?;
        let families = entry
            .families
            .iter()
            .map(|f| utf8(f, &format!("{field} family")))
            .collect::<Result<Vec<_>, _>>()?;
        // A table named twice keeps the last entry, as HBase's map does.
        out.insert(meta::table_name_text(name)?, families);
    }
    Ok(out)
}

fn namespaces(entries: &[Vec<u8>], field: &str) -> Result<BTreeSet<String>, RpcError> {
    entries.iter().map(|n| utf8(n, field)).collect()
}

/// A peer's configuration as its message, every field HBase's client
/// writes set (bandwidth, `replicate_all` and `serial` always).
pub fn peer_message(config: &PeerConfig) -> r::ReplicationPeer {
    let table_cfs = |map: &BTreeMap<String, Vec<String>>| -> Vec<r::TableCf> {
        map.iter()
            .map(|(table, families)| r::TableCf {
                table_name: Some(meta::table_name_proto(table)),
                families: families.iter().map(|f| f.clone().into_bytes()).collect(),
            })
            .collect()
    };
    let namespaces = |set: &BTreeSet<String>| -> Vec<Vec<u8>> {
        set.iter().map(|n| n.clone().into_bytes()).collect()
    };
    r::ReplicationPeer {
        clusterkey: config.cluster_key.clone(),
        replication_endpoint_impl: config.endpoint.clone(),
        data: config
            .data
            .iter()
            .map(|(first, second)| BytesBytesPair {
                first: first.to_vec(),
                second: second.to_vec(),
            })
            .collect(),
        configuration: config
            .configuration
            .iter()
            .map(|(name, value)| NameStringPair {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
        table_cfs: table_cfs(&config.table_cfs),
        namespaces: namespaces(&config.namespaces),
        bandwidth: Some(config.bandwidth),
        replicate_all: Some(config.replicate_all),
        exclude_table_cfs: table_cfs(&config.exclude_table_cfs),
        exclude_namespaces: namespaces(&config.exclude_namespaces),
        serial: Some(config.serial),
    }
}

/// A peer as `ListReplicationPeers` describes it.
pub fn peer_description(id: &str, peer: &ReplicationPeer) -> r::ReplicationPeerDescription {
    r::ReplicationPeerDescription {
        id: Some(id.to_string()),
        state: Some(state_message(peer.enabled)),
        config: Some(peer_message(&peer.config)),
    }
}

/// A peer state's message.
pub fn state_message(enabled: bool) -> r::ReplicationState {
    r::ReplicationState {
        state: Some(if enabled {
            State::Enabled
        } else {
            State::Disabled
        } as i32),
    }
}

/// Whether a state message says enabled (absent: protobuf's default,
/// `ENABLED`).
pub fn is_enabled(state: Option<&r::ReplicationState>) -> bool {
    state.and_then(|s| s.state).unwrap_or(State::Enabled as i32) != State::Disabled as i32
}

/// HBase's check of a peer that is another HBase cluster: its ZooKeeper
/// must answer within [`PEER_CHECK_TIMEOUT`], and must not name this
/// cluster's id. A peer with a custom endpoint is not checked (HBase asks
/// the endpoint class, which Basalt cannot load). The key's form is
/// checked first, with HBase's message.
pub fn check_peer_cluster(ctx: &RpcContext, config: &PeerConfig) -> Result<(), RpcError> {
    check_peer_cluster_within(ctx, config, PEER_CHECK_TIMEOUT)
}

/// [`check_peer_cluster`] with another bound on the peer's ZooKeeper.
pub fn check_peer_cluster_within(
    ctx: &RpcContext,
    config: &PeerConfig,
    timeout: Duration,
) -> Result<(), RpcError> {
    let Some(key) = config.cluster_key()? else {
        return Ok(());
    };
    let text = config.cluster_key.as_deref().unwrap_or_default();
    match peer_cluster_id(&key, timeout) {
        Ok(Some(id)) if id == ctx.identity.cluster_id => Err(RpcError::do_not_retry(format!(
            "Invalid cluster key: {text}, should not replicate to itself for HBaseInterClusterReplicationEndpoint"
        ))),
        Ok(_) => Ok(()),
        Err(reason) => {
            tracing::info!(cluster_key = text, %reason, "replication peer check failed");
            Err(RpcError::do_not_retry(format!(
                "Can't get peerClusterId for clusterKey={text} ({reason})"
            )))
        }
    }
}

/// The cluster id the peer's ZooKeeper holds, if any.
fn peer_cluster_id(key: &ClusterKey, timeout: Duration) -> Result<Option<String>, String> {
    let millis = u64::try_from(timeout.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    let config = ZkConfig {
        quorum: key.quorum.clone(),
        znode_parent: key.znode_parent.clone(),
        session_timeout_ms: millis,
        connect_timeout_ms: millis,
    };
    zk::read_cluster_id(&config).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_config_goes_to_its_message_and_back_unchanged() {
        let mut config = PeerConfig {
            cluster_key: Some("zk1:2181:/hbase".into()),
            replicate_all: false,
            bandwidth: 77,
            serial: true,
            ..PeerConfig::default()
        };
        config
            .table_cfs
            .insert("ns1:t1".into(), vec!["cf1".into(), "cf2".into()]);
        config.table_cfs.insert("t2".into(), vec![]);
        config.namespaces.insert("ns2".into());
        config.configuration.insert("k".into(), "v".into());
        config
            .data
            .push((Bytes::from_static(b"d1"), Bytes::from_static(b"\x00\xff")));
        let message = peer_message(&config);
        // A default-namespace table travels with its namespace, as HBase
        // writes it.
        let t2 = &message.table_cfs[1];
        assert_eq!(t2.table_name.as_ref().unwrap().namespace, b"default");
        assert_eq!(peer_config(&message).unwrap(), config);
    }

    #[test]
    fn absent_fields_read_as_hbases_client_reads_them() {
        let config = peer_config(&r::ReplicationPeer {
            clusterkey: Some("zk:2181:/hbase".into()),
            ..Default::default()
        })
        .unwrap();
        assert!(config.replicate_all);
        assert_eq!(config.bandwidth, 0);
        assert!(!config.serial);
        assert!(is_enabled(None));
        assert!(!is_enabled(Some(&state_message(false))));
    }

    #[test]
    fn a_table_entry_without_a_name_is_refused_naming_the_field() {
        let error = peer_config(&r::ReplicationPeer {
            exclude_table_cfs: vec![r::TableCf::default()],
            ..Default::default()
        })
        .unwrap_err();
        assert!(
            error.message.contains("exclude_table_cfs.table_name"),
            "{error}"
        );
    }
}
