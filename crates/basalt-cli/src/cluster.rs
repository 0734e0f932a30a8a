//! `basalt master` and `basalt regionserver`: the processes of a cluster
//! (`docs/cluster.md`). Both take `basalt serve`'s flags; both need
//! `--storage` (the shared data) and `--zookeeper` (the quorum).
//!
//! A region server, in order:
//! 1. binds its ports (native RPC, and the gateways), so a taken port
//!    fails before anything else;
//! 2. opens a cluster member database: its own log on the storage (the
//!    claimed log id becomes its start code, so its HBase name
//!    `host,port,logid` tells the master which log to fence if it dies);
//! 3. serves native RPC (region calls, the master's open/close), then
//!    registers `/hbase/rs/<name>` in ZooKeeper: from then on the master
//!    may assign it regions;
//! 4. serves the gateways (Thrift1, Thrift2, REST) over the whole cluster,
//!    and its info server (web UI, /metrics: its own regions' numbers);
//! 5. follows the catalog version the master announces;
//! 6. if its ZooKeeper session expires, the master may already have
//!    declared it dead and fenced its log: it stops serving at once and
//!    exits with status 1 (a new start gets a new log and name).
//!
//! A master waits in `/hbase/backup-masters` until it wins `/hbase/master`,
//! then becomes the active master (`basalt::cluster::ClusterMaster`): it
//! fences any older master through the catalog, follows `/hbase/rs`, and
//! reconciles assignments on every change and every second.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use basalt::cluster::{ClusterMaster, MasterControl, RegionServerControl};
use basalt::fs::FileStore;
use basalt::MemberConfig;
use basalt::{Database, SystemClock};
use basalt_object_store::open_storage;
use basalt_rpc::cluster_service::{RpcMasterControl, RpcRegionServerControl};
use basalt_rpc::coordination::{Coordinator, SessionState};
use basalt_rpc::peer_service::RpcRegionCaller;
use basalt_rpc::proto::hbase::ServerName as PbServerName;
use basalt_thrift::Flavour;

use crate::{
    bind_gateways, bind_info, bind_rpc, gateway_view, listen_error, load_config_for, ServeArgs,
    ServePlan,
};

/// How long the master waits for a region server to open or close a
/// region (an open replays a dead server's log and flushes).
const REGION_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a member waits for the master's answer to DDL.
const MASTER_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// How often the master reconciles without being woken.
const RECONCILE_EVERY: Duration = Duration::from_secs(1);

/// The cluster id every process of the cluster announces: one object on
/// the shared storage (`hbase.id`), created once by whoever comes first.
fn cluster_id(files: &dyn FileStore, root: &Path) -> Result<String, String> {
    let path = root.join("hbase.id");
    for _ in 0..4 {
        match files.read_all(&path) {
            Ok(bytes) => {
                let id = String::from_utf8_lossy(&bytes).trim().to_string();
                if !id.is_empty() {
                    return Ok(id);
                }
            }
            Err(e) if !files.exists(&path).unwrap_or(true) => {
                tracing::debug!(error = %e, "no cluster id yet; creating it");
            }
            Err(e) => return Err(format!("cannot read the cluster id: {e}")),
        }
        let id = basalt_rpc::server::new_cluster_id();
        match files.create(&path).and_then(|mut w| {
            w.write_all(id.as_bytes())?;
            w.finish()
        }) {
            Ok(_) => return Ok(id),
            // Another process created it first: read theirs.
            Err(e) if basalt::is_already_exists(&e) => continue,
            Err(e) => return Err(format!("cannot store the cluster id: {e}")),
        }
    }
    Err("the cluster id kept changing while it was read".into())
}

fn required(plan: &ServePlan) -> Result<(), String> {
    if plan.storage.url.is_none() {
        return Err("a cluster process needs --storage (s3://... or file:///...): every process reads the same data".into());
    }
    if plan.zookeeper.is_none() {
        return Err("a cluster process needs --zookeeper HOST:PORT[,...]".into());
    }
    Ok(())
}

fn pb_server_name(host: &str, port: u16, start_code: u64) -> PbServerName {
    PbServerName {
        host_name: host.to_string(),
        port: Some(u32::from(port)),
        start_code: Some(start_code),
    }
}

fn text_of(name: &PbServerName) -> String {
    format!(
        "{},{},{}",
        name.host_name,
        name.port.unwrap_or(0),
        name.start_code.unwrap_or(0)
    )
}

/// `basalt regionserver`: steps 1-6 of the module docs.
pub fn run_region_server(args: ServeArgs) -> Result<(), String> {
    let mut plan = load_config_for(&args, true)?;
    required(&plan)?;
    let stop_signals = crate::stop_signals::StopSignals::install()?;
    // A region server's UI is on HBase's region server UI port unless a
    // port was chosen (a config file naming 16010 reads as the default).
    if let Some(info) = plan.info.as_mut() {
        if args.info_port.is_none() && info.port == basalt_info::DEFAULT_PORT {
            info.port = basalt_info::DEFAULT_REGION_SERVER_PORT;
        }
    }
    let ServePlan {
        options,
        storage,
        thrift,
        thrift2,
        rest,
        info,
        rpc,
        zookeeper,
    } = plan;
    let (Some(zk), Some(rpc)) = (zookeeper, rpc) else {
        return Err("a region server needs --zookeeper".into());
    };
    // 1. Ports.
    let rpc_bound = bind_rpc(&rpc)?;
    let (thrift_bound, thrift2_bound, rest_bound) =
        bind_gateways(&thrift, thrift2.as_ref(), rest.as_ref())?;
    let info_bound = bind_info(info.as_ref())?;
    let host = rpc_bound
        .announced_host()
        .map_err(|e| format!("cannot tell this host's name: {e}"))?;
    let rs_port = rpc_bound
        .region_server_addr()
        .map_err(|e| format!("native RPC port: {e}"))?
        .port();

    // 2. The member database.
    let dir = options.data_dir.clone();
    let storage = open_storage(&storage, &dir)
        .map_err(|e| format!("cannot use the storage: {e}"))?
        .ok_or("a region server needs --storage")?;
    let files = storage.file_store();
    let cluster_id = cluster_id(files.as_ref(), &dir)?;
    let coordinator = rpc_bound
        .runtime()
        .block_on(Coordinator::connect(&zk, "regionserver"))
        .map_err(|e| format!("cannot reach ZooKeeper: {e}"))?;
    let masters = coordinator.watch_active_master();
    let control: Arc<dyn MasterControl> =
        Arc::new(RpcMasterControl::new(MASTER_CALL_TIMEOUT, move || {
            masters
                .borrow()
                .as_ref()
                .map(|m| format!("{}:{}", m.host_name, m.port.unwrap_or(0)))
        }));
    let db = Database::builder(options)
        .file_store(files)
        .wal_in_file_store(storage.wal_options())
        .open_cluster_member(MemberConfig {
            control,
            caller: Arc::new(RpcRegionCaller::new(REGION_CALL_TIMEOUT)),
            host: Some((host.clone(), rs_port)),
        })
        .map_err(|e| format!("cannot open the cluster member on {}: {e}", storage.url))?;
    let name = db
        .server_name()
        .ok_or("the member has no server name")?
        .to_string();
    let log_id = db.region_server().fence().map_or(0, |f| f.epoch());

    // 3. Native RPC, then ZooKeeper.
    let rpc_server = rpc_bound
        .start_code(log_id)
        .serve(db.clone(), cluster_id)
        .map_err(|e| format!("native RPC failed to start: {e}"))?;
    let me = pb_server_name(&host, rs_port, log_id);
    rpc_server
        .block_on(coordinator.register_region_server(&me, 0))
        .ok_or("the RPC runtime stopped")?
        .map_err(|e| format!("cannot register in ZooKeeper: {e}"))?;
    tracing::info!(server = %name, log = log_id, "region server registered");

    // 4. Gateways over the whole cluster.
    let thrift_server = thrift_bound
        .serve(gateway_view(&db))
        .map_err(|e| listen_error(&thrift.bind, thrift.port, "--thrift-port", &e))?;
    let thrift2_server = match thrift2_bound {
        Some(b) => Some(
            b.serve_as(gateway_view(&db), Flavour::Thrift2)
                .map_err(|e| format!("Thrift2 failed to start: {e}"))?,
        ),
        None => None,
    };
    let rest_server = match rest_bound {
        Some(b) => Some(
            b.serve(gateway_view(&db))
                .map_err(|e| format!("REST failed to start: {e}"))?,
        ),
        None => None,
    };
    let info_server = match info_bound {
        Some(b) => Some(
            b.serve_with(
                db.clone(),
                vec![
                    crate::replication_metrics::reader(&rpc_server),
                    crate::allocator_metrics::reader(),
                ],
            )
            .map_err(|e| format!("the info server failed to start: {e}"))?,
        ),
        None => None,
    };
    db.register_gateway("thrift", thrift_server.local_addr());
    if let Some(s) = &thrift2_server {
        db.register_gateway("thrift2", s.local_addr());
    }
    if let Some(s) = &rest_server {
        db.register_gateway("rest", s.local_addr());
    }
    db.register_gateway("hbase-regionserver", rpc_server.region_server_addr());
    if let Some(s) = &info_server {
        db.register_gateway("info", s.local_addr());
    }
    for gateway in db.gateways() {
        let address = gateway.address.to_string();
        let _ = rpc_server.block_on(coordinator.publish_address(&me, &gateway.protocol, &address));
    }
    let list: Vec<String> = db.gateways().iter().map(ToString::to_string).collect();
    tracing::info!(server = %name, gateways = %list.join(", "), "gateways serving");

    // 5 and 6: follow the catalog; stop at once when the session expires.
    let mut versions = coordinator.watch_catalog_version();
    let mut session = coordinator.session();
    let runtime = rpc_server.runtime().ok_or("the RPC runtime stopped")?;
    // Two tasks, so that a slow catalog read never delays the reaction to
    // an expired session.
    let follower = {
        let db = db.clone();
        runtime.spawn(async move {
            while versions.changed().await.is_ok() {
                let db = db.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    if let Err(e) = db.refresh_cluster() {
                        tracing::warn!(error = %e, "could not read the new catalog");
                    }
                })
                .await;
            }
        })
    };
    let guard = {
        let db = db.clone();
        runtime.spawn(async move {
            loop {
                // The last state counts even once the sender is gone (the
                // coordinator's session task ends at expiry).
                let closed = session.changed().await.is_err();
                if *session.borrow_and_update() == SessionState::Expired {
                    // The master may have fenced our log already: serve
                    // nothing more, not even reads, and stop.
                    if let Some(fence) = db.region_server().fence() {
                        fence.trip(0, "the ZooKeeper session expired: the master declares this server dead");
                    }
                    tracing::error!("ZooKeeper session expired: this region server stops (its regions reopen elsewhere)");
                    std::process::exit(1);
                }
                if closed {
                    return;
                }
            }
        })
    };
    stop_signals.wait();
    follower.abort();
    guard.abort();
    // Leave ZooKeeper first: the master reassigns our regions (after
    // fencing our log: a clean stop still ends in a crash procedure, which
    // replays only what the flush below did not persist).
    let _ = rpc_server.block_on(coordinator.close());
    if let Some(s) = info_server {
        s.shutdown();
    }
    if let Some(s) = rest_server {
        s.shutdown();
    }
    if let Some(s) = thrift2_server {
        s.stop();
    }
    thrift_server.stop();
    rpc_server.stop();
    let closed = db.close();
    closed.map_err(|e| format!("closing the region server failed: {e}"))
}

/// `basalt master`: waits to become active, then runs the cluster.
pub fn run_master(args: ServeArgs) -> Result<(), String> {
    let plan = load_config_for(&args, true)?;
    required(&plan)?;
    let stop_signals = crate::stop_signals::StopSignals::install()?;
    let ServePlan {
        options,
        storage,
        rpc,
        info,
        zookeeper,
        ..
    } = plan;
    let (Some(zk), Some(rpc)) = (zookeeper, rpc) else {
        return Err("a master needs --zookeeper".into());
    };
    let rpc_bound = bind_rpc(&rpc)?;
    let info_bound = bind_info(info.as_ref())?;
    let host = rpc_bound
        .announced_host()
        .map_err(|e| format!("cannot tell this host's name: {e}"))?;
    let master_port = rpc_bound
        .master_addr()
        .map_err(|e| format!("native RPC port: {e}"))?
        .port();
    let start_code = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_millis() as u64);
    let me = pb_server_name(&host, master_port, start_code);
    let name = text_of(&me);
    let dir = options.data_dir.clone();
    let storage = open_storage(&storage, &dir)
        .map_err(|e| format!("cannot use the storage: {e}"))?
        .ok_or("a master needs --storage")?;
    let files = storage.file_store();
    let cluster_id = cluster_id(files.as_ref(), &dir)?;
    let runtime = rpc_bound.runtime();
    let coordinator = Arc::new(
        runtime
            .block_on(Coordinator::connect(&zk, "master"))
            .map_err(|e| format!("cannot reach ZooKeeper: {e}"))?,
    );
    runtime
        .block_on(coordinator.ensure_cluster_znodes(&cluster_id))
        .map_err(|e| format!("cannot set up the cluster's znodes: {e}"))?;
    let candidate = runtime
        .block_on(coordinator.run_for_master(&me, 0))
        .map_err(|e| format!("cannot run for master: {e}"))?;
    tracing::info!(master = %name, "waiting to become the active master (standby in /hbase/backup-masters)");
    runtime
        .block_on(candidate.wait_until_active())
        .map_err(|e| format!("lost the election: {e}"))?;
    tracing::info!(master = %name, "active master");

    let control: Arc<dyn RegionServerControl> =
        Arc::new(RpcRegionServerControl::new(REGION_CALL_TIMEOUT));
    let master = ClusterMaster::start(
        &dir,
        &name,
        Arc::new(SystemClock),
        Arc::clone(&files),
        control,
    )
    .map_err(|e| format!("cannot start the master: {e}"))?;
    master.set_chore_periods(basalt::cluster::ChorePeriods::from_options(&options));
    master.set_catalog_checkpoint_policy(basalt::CheckpointPolicy::from_options(&options));
    master.set_normalizer_config(basalt::normalizer::NormalizerConfig::from_options(&options));
    master.set_snapshot_manifest_max_bytes(options.snapshot_manifest_max_bytes);
    master.set_snapshot_timeout(Duration::from_millis(options.snapshot_timeout_ms));
    {
        let coordinator = Arc::clone(&coordinator);
        let handle = runtime.handle().clone();
        master.set_commit_listener(Arc::new(move |version| {
            let coordinator = Arc::clone(&coordinator);
            handle.spawn(async move {
                if let Err(e) = coordinator.publish_catalog_version(version).await {
                    tracing::warn!(error = %e, "could not announce the catalog version");
                }
            });
        }));
    }
    // The master's own gateways (DDL from HBase clients on the master
    // port) run on a member database hosting no region.
    let db = Database::builder(options)
        .file_store(files)
        .wal_in_file_store(storage.wal_options())
        .open_cluster_member(MemberConfig {
            control: Arc::clone(&master) as Arc<dyn MasterControl>,
            caller: Arc::new(RpcRegionCaller::new(REGION_CALL_TIMEOUT)),
            host: None,
        })
        .map_err(|e| format!("cannot open the master's view of the cluster: {e}"))?;
    let rpc_server = rpc_bound
        .start_code(start_code)
        .serve(db.clone(), cluster_id)
        .map_err(|e| format!("native RPC failed to start: {e}"))?;
    db.register_gateway("hbase-master", rpc_server.master_addr());
    // The master's UI shows the cluster's tables and regions as its
    // member database sees them (it holds no region, so no loads).
    let info_server = match info_bound {
        Some(b) => Some(
            b.serve(db.clone())
                .map_err(|e| format!("the info server failed to start: {e}"))?,
        ),
        None => None,
    };
    if let Some(s) = &info_server {
        db.register_gateway("info", s.local_addr());
    }
    tracing::info!(master = %name, port = master_port, "master serving");

    let mut live = coordinator.watch_region_servers();
    let mut session = coordinator.session();
    let stopper = {
        let master = Arc::clone(&master);
        let coordinator = Arc::clone(&coordinator);
        let db = db.clone();
        rpc_server.runtime().ok_or("the RPC runtime stopped")?.spawn(async move {
            let mut meta_holder: Option<String> = None;
            loop {
                // One authoritative read per round: a watch's first value
                // is empty until its first read, and an unreadable list
                // must not declare every server dead.
                let servers: BTreeSet<String> = match coordinator.region_servers().await {
                    Ok(servers) => servers,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot list the live region servers; reconciling later");
                        tokio::time::sleep(RECONCILE_EVERY).await;
                        continue;
                    }
                };
                // The meta-region-server znode names a live region server
                // (each answers hbase:meta from the catalog).
                if meta_holder.as_ref().is_none_or(|h| !servers.contains(h)) {
                    if let Some(first) = servers.iter().next() {
                        if let Ok(sn) = basalt::cluster::ServerName::parse(first) {
                            let pb = pb_server_name(&sn.host, sn.port, sn.start_code);
                            if coordinator.set_meta_region_server(&pb).await.is_ok() {
                                meta_holder = Some(first.clone());
                            }
                        }
                    }
                }
                // Standbys only show in status: a failed read keeps the
                // last list.
                if let Ok(standbys) = coordinator.backup_masters().await {
                    master.set_backup_masters(standbys.into_iter().collect());
                }
                let m = Arc::clone(&master);
                let db = db.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    if let Err(e) = m.servers_changed(servers) {
                        tracing::warn!(error = %e, "reconciliation failed; retried");
                    }
                    // The balancer and the janitor, when due (each logs
                    // what it did).
                    m.run_chores();
                    let _ = db.refresh_cluster();
                })
                .await;
                if master.is_fenced() {
                    tracing::error!("a newer master fenced this one: stopping");
                    std::process::exit(1);
                }
                tokio::select! {
                    changed = live.changed() => { if changed.is_err() { return; } }
                    changed = session.changed() => {
                        // A closed channel means the session task ended:
                        // the session is gone either way.
                        if changed.is_err() || *session.borrow() == SessionState::Expired {
                            master.stop();
                            tracing::error!("ZooKeeper session expired: this master stops (a standby takes over)");
                            std::process::exit(1);
                        }
                    }
                    _ = tokio::time::sleep(RECONCILE_EVERY) => {}
                }
            }
        })
    };
    stop_signals.wait();
    stopper.abort();
    if let Some(s) = info_server {
        s.shutdown();
    }
    master.stop();
    if let Ok(coordinator) = Arc::try_unwrap(coordinator) {
        let _ = rpc_server.block_on(coordinator.close());
    }
    rpc_server.stop();
    let closed = db.close();
    closed.map_err(|e| format!("closing the master failed: {e}"))
}
