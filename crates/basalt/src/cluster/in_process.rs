//! One process as a cluster of one: `basalt serve` and the embedded
//! library run the cluster's own master ([`ClusterMaster`]) and one member
//! region server in the same process, joined by direct calls where a
//! cluster has RPC, with a liveness source that always says the one
//! server is live. So alter, truncate, split, merge, normalize and balance
//! exist once, whichever the mode; what differs is only the transport
//! ([`InProcessServers`] here, `basalt-rpc`'s in a cluster) and the
//! liveness (here constant, ZooKeeper sessions in a cluster).
//!
//! Start-up ([`start`]), in order:
//! 1. load the catalog; every serving region whose state says it may hold
//!    edits in this process's log (`OPEN`, `OPENING`, `CLOSING`, on any
//!    server: a data set written by an earlier one-process version names
//!    none) is opened by the region server, which replays the log into
//!    them; the other region directories the catalog names are kept;
//! 2. the master starts without claiming an epoch of its own (the data
//!    directory's lock already excludes every other process; on object
//!    storage the region server's claim fences the catalog, as before);
//! 3. the master adopts the regions opened in step 1: one catalog version
//!    records them `OPEN` on [`IN_PROCESS_SERVER`] at their region epochs
//!    (new ones for regions that had none), which the region server then
//!    holds them at;
//! 4. the member publishes routes, and the master learns that its one
//!    server is live: reconciliation closes the regions of disabled
//!    tables, opens the closed regions of enabled ones, and finishes or
//!    rolls back what a crash interrupted.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, OnceLock, Weak};

use basalt_engine::fence::Fence;
use basalt_engine::fs::FileStore;
use basalt_engine::Clock;
use basalt_types::{Error, Result};

use super::control::{
    MasterAnswer, MasterCall, MasterControl, MasterLink, PrepareMerge, PrepareSplit,
    RegionLoadReport, RegionServerControl, SplitPlan,
};
use super::master::ClusterMaster;
use super::member::ClusterMember;
use super::split::MemberHooks;
use crate::catalog::{region_spec, Catalog, Procedure, RegionState};
use crate::locator::RegionLocator;
use crate::normalizer::NormalizerConfig;
use crate::options::Options;
use crate::region_server::{RecoveryReport, RegionServer, WalPlacement};

/// The name the one region server of a process has in the catalog. It is
/// not a network address: the process's gateways name themselves by their
/// own ports, and status in one process does not list servers.
pub(crate) const IN_PROCESS_SERVER: &str = "localhost,0,0";

/// What [`start`] hands the database.
#[derive(Debug)]
pub(crate) struct Started {
    pub(crate) link: Arc<InProcessCluster>,
    pub(crate) server: Arc<RegionServer>,
    pub(crate) locator: Arc<RegionLocator>,
    pub(crate) recovery: RecoveryReport,
}

/// Starts the roles over the data set at `root` (the steps of the module
/// docs).
pub(crate) fn start(
    root: &Path,
    options: Options,
    clock: Arc<dyn Clock>,
    files: Arc<dyn FileStore>,
    wal: &WalPlacement,
) -> Result<Started> {
    // Step 1.
    let catalog = Catalog::load(files.as_ref(), root)?;
    let mut specs = Vec::new();
    let mut keep = Vec::new();
    for (name, entry) in &catalog.tables {
        for region in &entry.regions {
            if matches!(
                region.state,
                RegionState::Open | RegionState::Opening | RegionState::Closing
            ) {
                specs.push(region_spec(name, &entry.descriptor, region));
            } else {
                keep.push((name.clone(), region.id));
            }
        }
        // Retired regions stay while serving ones link to their files.
        keep.extend(entry.retired.iter().map(|r| (name.clone(), r.id)));
    }
    // The new regions of a split or merge a crash interrupted: the
    // master's reconciliation finishes or rolls it back, and needs them.
    for procedure in catalog.procedures.values() {
        match procedure {
            Procedure::SplitRegion {
                table, daughters, ..
            } => keep.extend(daughters.iter().map(|id| (table.clone(), *id))),
            Procedure::MergeRegions { table, merged, .. } => keep.push((table.clone(), *merged)),
            _ => {}
        }
    }
    // The master loads its own copy: this one goes before the regions
    // open, so one fewer catalog is held at the peak of opening.
    drop(catalog);
    let (server, recovery) = RegionServer::start(
        root,
        options.clone(),
        Arc::clone(&clock),
        Arc::clone(&files),
        specs,
        &keep,
        wal,
    )?;
    let server = Arc::new(server);
    server.serve_in_process();

    // Step 2.
    let fence = server
        .fence()
        .cloned()
        .unwrap_or_else(|| Arc::new(Fence::new(0)));
    let servers = Arc::new(InProcessServers::default());
    let master = ClusterMaster::start_fenced(
        root,
        IN_PROCESS_SERVER,
        Arc::clone(&clock),
        Arc::clone(&files),
        Arc::clone(&servers) as Arc<dyn RegionServerControl>,
        fence,
    )?;
    master.set_normalizer_config(NormalizerConfig::from_options(&options));
    master.set_catalog_checkpoint_policy(crate::catalog::CheckpointPolicy::from_options(&options));
    master.set_snapshot_manifest_max_bytes(options.snapshot_manifest_max_bytes);
    master.set_snapshot_timeout(std::time::Duration::from_millis(
        options.snapshot_timeout_ms,
    ));

    // Step 3.
    let opened: Vec<u64> = server
        .online_regions()
        .iter()
        .map(|r| r.info().id)
        .collect();
    for (region, epoch) in master.adopt_regions(&opened)? {
        server.adopt_epoch(region, epoch);
    }

    // Step 4.
    let locator = Arc::new(RegionLocator::new());
    let control: Arc<dyn MasterControl> = Arc::clone(&master) as Arc<dyn MasterControl>;
    let member = Arc::new(ClusterMember::new(
        root,
        files,
        Some(IN_PROCESS_SERVER.to_string()),
        control,
    ));
    servers.connect(&member, &server, &locator);
    // Splits after a flush and by load ask the master on the flushing
    // thread when maintenance runs there (deterministic tests): the split
    // is over when the write that caused it returns.
    let inline = options.background_threads == 0;
    server.set_hooks(Arc::new(MemberHooks::in_process(
        &member, options, inline, &master,
    )));
    let (weak_member, weak_server, weak_locator) = (
        Arc::downgrade(&member),
        Arc::downgrade(&server),
        Arc::downgrade(&locator),
    );
    master.set_commit_listener(Arc::new(move |_version| {
        publish(&weak_member, &weak_server, &weak_locator);
    }));
    member.refresh(Some(&server), &locator)?;
    master.servers_changed(BTreeSet::from([IN_PROCESS_SERVER.to_string()]))?;
    // Regions that opened with links go on rewriting them.
    for region in server.online_regions() {
        if region.has_parent_links() {
            server.request_compaction(region.info().id);
        }
    }
    let link = Arc::new(InProcessCluster {
        master,
        member,
        server: Arc::clone(&server),
        locator: Arc::clone(&locator),
    });
    Ok(Started {
        link,
        server,
        locator,
        recovery,
    })
}

/// After each commit: the member reads the new catalog and publishes its
/// routes (what a cluster member does when ZooKeeper announces a version).
fn publish(
    member: &Weak<ClusterMember>,
    server: &Weak<RegionServer>,
    locator: &Weak<RegionLocator>,
) {
    let (Some(member), Some(server), Some(locator)) =
        (member.upgrade(), server.upgrade(), locator.upgrade())
    else {
        return;
    };
    if let Err(e) = member.refresh(Some(&server), &locator) {
        tracing::warn!(error = %e, "could not publish the routes of a new catalog version");
    }
}

/// The database's way to the master in one process.
#[derive(Debug)]
pub(crate) struct InProcessCluster {
    master: Arc<ClusterMaster>,
    member: Arc<ClusterMember>,
    server: Arc<RegionServer>,
    locator: Arc<RegionLocator>,
}

impl MasterLink for InProcessCluster {
    fn call(&self, call: MasterCall) -> Result<MasterAnswer> {
        match call {
            // One region server holds every region: there is nowhere to
            // move a region to, and the cluster's status is this server's
            // (`AdminRequest::Status` describes it).
            MasterCall::Move { .. } => Err(needs_a_cluster("move")),
            MasterCall::Assign { .. } => Err(needs_a_cluster("assign")),
            MasterCall::Unassign { .. } => Err(needs_a_cluster("unassign")),
            MasterCall::Status => Err(needs_a_cluster("the cluster's status")),
            call => self.master.call(call),
        }
    }

    fn catalog(&self) -> Arc<Catalog> {
        self.member.catalog()
    }

    /// Routes are published at each commit; a request that found its
    /// region offline (an open that failed) asks the master to reconcile,
    /// which opens it again.
    fn refresh(&self) -> Result<()> {
        self.master.tick()?;
        self.member
            .refresh(Some(&self.server), &self.locator)
            .map(drop)
    }

    fn stop(&self) {
        self.master.stop();
    }
}

/// A region operation of a cluster's master, refused in one process with
/// a message saying why.
fn needs_a_cluster(what: &str) -> Error {
    Error::invalid(format!(
        "{what} needs a cluster: this database runs in one process, whose one region server holds every region"
    ))
}

/// The master's calls on its one region server: the member's own
/// operations, called directly (weakly held: the member and the server
/// live in the database, which holds the master).
#[derive(Debug, Default)]
pub(crate) struct InProcessServers {
    parts: OnceLock<(Weak<ClusterMember>, Weak<RegionServer>, Weak<RegionLocator>)>,
}

impl InProcessServers {
    fn connect(
        &self,
        member: &Arc<ClusterMember>,
        server: &Arc<RegionServer>,
        locator: &Arc<RegionLocator>,
    ) {
        // Connected once, before the master is told its server is live.
        let _ = self.parts.set((
            Arc::downgrade(member),
            Arc::downgrade(server),
            Arc::downgrade(locator),
        ));
    }

    /// The member, its server and locator, for a call naming `server`.
    fn parts(
        &self,
        server: &str,
    ) -> Result<(Arc<ClusterMember>, Arc<RegionServer>, Arc<RegionLocator>)> {
        if server != IN_PROCESS_SERVER {
            return Err(Error::NotServingRegion(format!(
                "no region server {server} in this process"
            )));
        }
        let closed = || Error::Closed("the database is closing".into());
        let (member, region_server, locator) = self.parts.get().ok_or_else(closed)?;
        Ok((
            member.upgrade().ok_or_else(closed)?,
            region_server.upgrade().ok_or_else(closed)?,
            locator.upgrade().ok_or_else(closed)?,
        ))
    }
}

impl RegionServerControl for InProcessServers {
    fn open_region(&self, server: &str, table: &str, region: u64) -> Result<()> {
        let (member, server, locator) = self.parts(server)?;
        member.open_assigned(&server, &locator, table, region)
    }

    fn close_region(&self, server: &str, _table: &str, region: u64) -> Result<()> {
        let (member, server, locator) = self.parts(server)?;
        member.close_assigned(&server, &locator, region)
    }

    fn prepare_split(&self, server: &str, request: &PrepareSplit) -> Result<SplitPlan> {
        let (member, server, locator) = self.parts(server)?;
        member.prepare_split(&server, &locator, request)
    }

    fn prepare_merge(&self, server: &str, request: &PrepareMerge) -> Result<()> {
        let (member, server, locator) = self.parts(server)?;
        member.prepare_merge(&server, &locator, request)
    }

    fn snapshot_region(
        &self,
        server: &str,
        request: &super::control::SnapshotRegionRequest,
    ) -> Result<Vec<basalt_engine::snapshot::SnapshotStore>> {
        let (_, server, _) = self.parts(server)?;
        super::snapshot::snapshot_region(&server, request)
    }

    fn closed_through(&self, server: &str, region: u64) -> Result<Option<u64>> {
        let (_, server, _) = self.parts(server)?;
        Ok(server.closed_through(region))
    }

    fn region_loads(&self, server: &str) -> Result<Vec<RegionLoadReport>> {
        let (_, _, locator) = self.parts(server)?;
        Ok(super::control::region_load_reports(&locator))
    }
}
