//! Cluster mode's master and members in one process, deterministic: a
//! `ClusterMaster` and member `Database`s on one shared storage directory
//! (`file://`), each member with its own data directory, wired together
//! by in-process stand-ins for the RPCs (the processes and ZooKeeper are
//! the chaos suite's: crates/basalt-cli/tests/cluster.rs). Liveness is
//! what the test tells the master.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::RwLock;

use basalt::cluster::{
    ChorePeriods, ChoresRun, ClusterMaster, MasterAnswer, MasterCall, MasterControl, PrepareMerge,
    PrepareSplit, RegionServerControl, SplitPlan,
};
use basalt::fs::FileStore;
use basalt::replication::{PeerChange, PeerConfig, ReplicationPeer};
use basalt::{
    Admin, AdminRequest, ColumnFamilyDescriptor, Database, Error, Get, MemberConfig,
    NamespaceDescriptor, ObjectWalOptions, Options, Put, RegionAnswer, RegionCall, RegionCaller,
    Result, Scan, ServerAddress, SplitOrMerge, SystemClock, TableDescriptor,
};
use basalt_object_store::{open_storage, StorageConfig};

/// The members by server name, for the stand-ins to reach.
#[derive(Debug, Default)]
struct Directory {
    members: RwLock<BTreeMap<String, Database>>,
}

impl Directory {
    fn by_name(&self, name: &str) -> Result<Database> {
        self.members
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NotServingRegion(format!("{name} is unreachable")))
    }

    fn by_address(&self, address: &ServerAddress) -> Result<Database> {
        let prefix = format!("{},{},", address.host(), address.port());
        self.members
            .read()
            .iter()
            .find(|(name, _)| name.starts_with(&prefix))
            .map(|(_, db)| db.clone())
            .ok_or_else(|| Error::NotServingRegion(format!("{address} is unreachable")))
    }
}

/// Failures the stand-in injects, to play a master dying mid-procedure.
#[derive(Debug, Default)]
struct Faults {
    /// Every open fails (as if the master died before asking).
    fail_opens: AtomicBool,
    /// After a prepare step ran, the master stops (dies) before it hears
    /// the answer.
    stop_master_after_prepare: AtomicBool,
}

#[derive(Debug)]
struct Control {
    directory: Arc<Directory>,
    master: Arc<MasterSlot>,
    faults: Arc<Faults>,
}

impl Control {
    fn after_prepare(&self) -> Result<()> {
        if self.faults.stop_master_after_prepare.load(Ordering::SeqCst) {
            if let Some(master) = self.master.0.read().clone() {
                master.stop();
            }
            return Err(Error::NotServingRegion("the answer was lost".into()));
        }
        Ok(())
    }
}

impl RegionServerControl for Control {
    fn open_region(&self, server: &str, table: &str, region: u64) -> Result<()> {
        if self.faults.fail_opens.load(Ordering::SeqCst) {
            return Err(Error::NotServingRegion("open failed (injected)".into()));
        }
        self.directory
            .by_name(server)?
            .open_assigned_region(table, region)
    }
    fn close_region(&self, server: &str, _table: &str, region: u64) -> Result<()> {
        self.directory
            .by_name(server)?
            .close_assigned_region(region)
    }
    fn prepare_split(&self, server: &str, request: &PrepareSplit) -> Result<SplitPlan> {
        let plan = self
            .directory
            .by_name(server)?
            .prepare_split_region(request)?;
        self.after_prepare()?;
        Ok(plan)
    }
    fn prepare_merge(&self, server: &str, request: &PrepareMerge) -> Result<()> {
        self.directory
            .by_name(server)?
            .prepare_merge_regions(request)?;
        self.after_prepare()
    }
    fn region_loads(&self, server: &str) -> Result<Vec<basalt::cluster::RegionLoadReport>> {
        Ok(self.directory.by_name(server)?.region_load_reports())
    }
    fn closed_through(&self, server: &str, region: u64) -> Result<Option<u64>> {
        self.directory.by_name(server)?.closed_through(region)
    }
    fn snapshot_region(
        &self,
        server: &str,
        request: &basalt::cluster::SnapshotRegionRequest,
    ) -> Result<Vec<basalt::snapshot::SnapshotStore>> {
        self.directory
            .by_name(server)?
            .snapshot_region_files(request)
    }
}

#[derive(Debug)]
struct Caller(Arc<Directory>);

impl RegionCaller for Caller {
    fn call(
        &self,
        server: &ServerAddress,
        table: &str,
        region_id: u64,
        call: RegionCall,
    ) -> Result<RegionAnswer> {
        self.0
            .by_address(server)?
            .serve_region_call(table, region_id, call)
    }
}

/// The master as members reach it; replaced when a new master starts.
#[derive(Debug, Default)]
struct MasterSlot(RwLock<Option<Arc<ClusterMaster>>>);

impl MasterControl for MasterSlot {
    fn call(&self, call: MasterCall) -> Result<MasterAnswer> {
        let master = self
            .0
            .read()
            .clone()
            .ok_or_else(|| Error::invalid("no master"))?;
        master.call(call)
    }
}

struct Harness {
    dir: tempfile::TempDir,
    url: String,
    directory: Arc<Directory>,
    master: Arc<MasterSlot>,
    faults: Arc<Faults>,
    next: u16,
}

impl Harness {
    fn new() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("storage");
        std::fs::create_dir_all(&shared).unwrap();
        Harness {
            url: format!("file://{}", shared.display()),
            dir,
            directory: Arc::new(Directory::default()),
            master: Arc::new(MasterSlot::default()),
            faults: Arc::new(Faults::default()),
            next: 1,
        }
    }

    fn files(&self, root: &Path) -> Arc<dyn FileStore> {
        open_storage(&StorageConfig::for_url(&self.url), root)
            .unwrap()
            .unwrap()
            .file_store()
    }

    fn start_master(&self, name: &str) -> Arc<ClusterMaster> {
        self.start_master_on(name, Arc::new(SystemClock))
    }

    /// A master on `clock` (the chores' tests drive a manual one).
    fn start_master_on(&self, name: &str, clock: Arc<dyn basalt::Clock>) -> Arc<ClusterMaster> {
        let root: PathBuf = self.dir.path().join(name);
        let master = ClusterMaster::start(
            &root,
            name,
            clock,
            self.files(&root),
            Arc::new(Control {
                directory: Arc::clone(&self.directory),
                master: Arc::clone(&self.master),
                faults: Arc::clone(&self.faults),
            }),
        )
        .unwrap();
        *self.master.0.write() = Some(Arc::clone(&master));
        master
    }

    /// A new member; returns its server name.
    fn start_member(&mut self) -> String {
        self.start_member_with(|_| {})
    }

    /// A new member whose options `tune` changes; returns its server name.
    fn start_member_with(&mut self, tune: impl FnOnce(&mut Options)) -> String {
        let port = self.next;
        self.next += 1;
        let root = self.dir.path().join(format!("rs{port}"));
        let mut options = Options::new(&root);
        tune(&mut options);
        let db = Database::builder(options)
            .file_store(self.files(&root))
            .wal_in_file_store(ObjectWalOptions::default())
            .open_cluster_member(MemberConfig {
                control: Arc::clone(&self.master) as Arc<dyn MasterControl>,
                caller: Arc::new(Caller(Arc::clone(&self.directory))),
                host: Some(("rs".to_string(), port)),
            })
            .unwrap();
        let name = db.server_name().unwrap().to_string();
        self.directory.members.write().insert(name.clone(), db);
        name
    }

    fn member(&self, name: &str) -> Database {
        self.directory.by_name(name).unwrap()
    }

    fn live(&self) -> BTreeSet<String> {
        self.directory.members.read().keys().cloned().collect()
    }

    /// Tells the master who is live, then lets every member read the
    /// catalog (what ZooKeeper's notification does in a cluster).
    fn settle(&self, master: &ClusterMaster) {
        master.servers_changed(self.live()).unwrap();
        for db in self.directory.members.read().values() {
            db.refresh_cluster().unwrap();
        }
    }
}

fn status(master: &ClusterMaster) -> basalt::cluster::ClusterStatus {
    master.status()
}

/// How many regions each live server holds, in server order.
fn region_counts(master: &ClusterMaster) -> Vec<usize> {
    status(master)
        .servers
        .iter()
        .map(|s| s.regions.len())
        .collect()
}

/// Runs the balancer; how many regions it moved.
fn balance(master: &ClusterMaster) -> usize {
    match master.call(MasterCall::Balance { force: false }).unwrap() {
        MasterAnswer::Moved { regions } => regions,
        other => panic!("{other:?}"),
    }
}

/// Sets the balancer switch; its value before.
fn balancer_switch(master: &ClusterMaster, on: Option<bool>) -> bool {
    match master.call(MasterCall::BalancerSwitch { on }).unwrap() {
        MasterAnswer::Switch { previous } => previous,
        other => panic!("{other:?}"),
    }
}

fn rows(db: &Database) -> Vec<Bytes> {
    db.table("t")
        .unwrap()
        .scan(&Scan::new())
        .unwrap()
        .map(|r| r.unwrap().row)
        .collect()
}

fn write(db: &Database, from: usize, to: usize) {
    let t = db.table("t").unwrap();
    for i in from..to {
        t.put(&Put::new(format!("{:02}-{i:05}", i % 8)).add("f", "q", format!("v{i}")))
            .unwrap();
    }
}

fn create(master: &ClusterMaster) {
    let splits = ["01", "02", "03", "04", "05", "06", "07"]
        .iter()
        .map(|s| Bytes::from(s.to_string()))
        .collect();
    let answer = master
        .call(MasterCall::CreateTable {
            descriptor: TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")),
            splits,
            owner: None,
        })
        .unwrap();
    assert!(matches!(answer, MasterAnswer::Done));
}

#[test]
fn a_new_table_s_regions_spread_over_the_live_servers_and_every_member_reaches_every_row() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let servers: Vec<String> = (0..3).map(|_| h.start_member()).collect();
    h.settle(&master);
    create(&master);
    h.settle(&master);
    let s = status(&master);
    assert!(s.in_transition.is_empty(), "{s:?}");
    let counts: Vec<usize> = s.servers.iter().map(|s| s.regions.len()).collect();
    assert_eq!(counts.iter().sum::<usize>(), 8);
    assert!(counts.iter().all(|&n| (2..=3).contains(&n)), "{counts:?}");
    write(&h.member(&servers[0]), 0, 400);
    // Every member sees every row, through its own routes.
    for name in &servers {
        assert_eq!(rows(&h.member(name)).len(), 400, "through {name}");
    }
    let got = h
        .member(&servers[2])
        .table("t")
        .unwrap()
        .get(&Get::new("03-00003"))
        .unwrap();
    assert_eq!(got.value(b"f", b"q").map(|v| &v[..]), Some(&b"v3"[..]));
}

/// `hbase:meta` reads call `refresh_cluster` before answering, so a drop
/// shows on a member whose catalog notification has not arrived yet (the
/// Java client's `tableExists` right after `deleteTable`).
#[test]
fn a_member_that_missed_the_notification_sees_a_dropped_table_gone_after_one_refresh() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let server = h.start_member();
    h.settle(&master);
    create(&master);
    h.settle(&master);
    let member = h.member(&server);
    assert!(member.table_exists("t"));
    master
        .call(MasterCall::SetEnabled {
            table: "t".into(),
            enabled: false,
        })
        .unwrap();
    master
        .call(MasterCall::DropTable { table: "t".into() })
        .unwrap();
    // No settle: the member has not heard of the drop.
    assert!(member.table_exists("t"), "the member's catalog is stale");
    member.refresh_cluster().unwrap();
    assert!(!member.table_exists("t"));
    // A refresh that finds no newer version keeps what the member holds.
    member.refresh_cluster().unwrap();
    assert!(!member.table_exists("t"));
    assert!(member.list_tables().is_empty());
}

/// HBase keeps the split and merge switches in ZooKeeper, so every
/// server and a new master see one value; Basalt keeps them in the
/// catalog for the same reason.
#[test]
fn a_split_switch_turned_off_through_one_member_refuses_splits_through_every_member_and_a_new_master(
) {
    let mut h = Harness::new();
    let old = h.start_master("m1");
    let first = member_with_table(&mut h, &old, 100);
    let second = h.start_member();
    h.settle(&old);
    assert!(h
        .member(&first)
        .split_or_merge_switch(SplitOrMerge::Split, Some(false))
        .unwrap());
    h.settle(&old);
    let split = AdminRequest::Split {
        target: Bytes::from_static(b"t"),
        key: Some(Bytes::from_static(b"03-00050")),
    };
    for name in [&first, &second] {
        let e = h.member(name).execute(split.clone()).unwrap_err();
        assert!(e.to_string().contains("split switch is off"), "{name}: {e}");
    }
    // The merge switch is apart, and a master that takes over keeps both.
    let new = h.start_master("m2");
    h.settle(&new);
    let member = h.member(&second);
    assert!(!member
        .split_or_merge_switch(SplitOrMerge::Split, None)
        .unwrap());
    assert!(member
        .split_or_merge_switch(SplitOrMerge::Merge, None)
        .unwrap());
    assert!(!member
        .split_or_merge_switch(SplitOrMerge::Split, Some(true))
        .unwrap());
    h.settle(&new);
    member.execute(split).unwrap();
}

/// `hbase:namespace` reads refresh the same way: a namespace dropped
/// through the master is gone after one refresh on a member that has not
/// been notified (the Java client's `exists` right after
/// `deleteNamespace`).
#[test]
fn a_member_that_missed_the_notification_sees_a_dropped_namespace_gone_after_one_refresh() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let server = h.start_member();
    h.settle(&master);
    master
        .call(MasterCall::CreateNamespace {
            descriptor: NamespaceDescriptor::new("ns1"),
        })
        .unwrap();
    h.settle(&master);
    let member = h.member(&server);
    let named = |db: &Database| {
        db.list_namespaces()
            .iter()
            .any(|namespace| namespace.name == "ns1")
    };
    assert!(named(&member));
    master
        .call(MasterCall::DropNamespace { name: "ns1".into() })
        .unwrap();
    assert!(named(&member), "the member's catalog is stale");
    member.refresh_cluster().unwrap();
    assert!(!named(&member));
}

#[test]
fn a_dead_server_s_regions_reopen_elsewhere_with_its_acknowledged_writes_and_it_is_fenced() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let servers: Vec<String> = (0..3).map(|_| h.start_member()).collect();
    h.settle(&master);
    create(&master);
    h.settle(&master);
    // Writes land in every server's log, unflushed.
    write(&h.member(&servers[0]), 0, 800);
    // Server 3 "dies": it leaves the live set but keeps running (a zombie,
    // as a paused process that wakes up).
    let zombie = h.directory.members.write().remove(&servers[2]).unwrap();
    h.settle(&master);
    let s = status(&master);
    assert!(
        s.in_transition.is_empty() && s.dead_servers.is_empty(),
        "{s:?}"
    );
    assert_eq!(s.servers.len(), 2);
    for name in &servers[..2] {
        assert_eq!(rows(&h.member(name)).len(), 800, "through {name}");
    }
    // The zombie cannot make a write visible any more: its log is fenced.
    let held_by_zombie: Vec<u64> = zombie
        .region_server()
        .online_regions()
        .iter()
        .map(|r| r.info().id)
        .collect();
    assert!(!held_by_zombie.is_empty());
    let late = zombie
        .region_server()
        .region(held_by_zombie[0])
        .unwrap()
        .put(&Put::new(zombie_row(&zombie, held_by_zombie[0])).add("f", "q", "late"));
    assert!(matches!(late, Err(Error::Fenced { .. })), "{late:?}");
    assert_eq!(rows(&h.member(&servers[0])).len(), 800);
}

fn zombie_row(db: &Database, region: u64) -> Vec<u8> {
    let r = db.region_server().region(region).unwrap();
    let mut row = r.info().start_key.to_vec();
    row.extend_from_slice(b"-late");
    row
}

#[test]
fn a_move_and_the_balancer_keep_every_row_and_even_out_the_servers() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let first = member_with_table(&mut h, &master, 300);
    let second = h.start_member();
    h.settle(&master);
    let moved = balance(&master);
    assert_eq!(moved, 4);
    h.settle(&master);
    let s = status(&master);
    let counts: Vec<usize> = s.servers.iter().map(|s| s.regions.len()).collect();
    assert_eq!(counts, vec![4, 4]);
    assert_eq!(rows(&h.member(&second)).len(), 300);
    write(&h.member(&second), 300, 400);
    assert_eq!(rows(&h.member(&first)).len(), 400);
}

#[test]
fn the_balancer_switch_is_kept_in_the_catalog_so_the_next_master_honours_it() {
    let mut h = Harness::new();
    let old = h.start_master("m1");
    let first = member_with_table(&mut h, &old, 100);
    assert!(balancer_switch(&old, Some(false)), "on by default");
    let _second = h.start_member();
    h.settle(&old);
    match old.call(MasterCall::Balance { force: false }).unwrap() {
        MasterAnswer::NotRun { reason } => assert!(reason.contains("switch is off"), "{reason}"),
        other => panic!("the balancer ran with its switch off: {other:?}"),
    }
    // A standby takes over: it reads the switch from the catalog.
    let new = h.start_master("m2");
    h.settle(&new);
    assert!(!balancer_switch(&new, None));
    // `balancer 'force'` ignores regions in transition, not the switch.
    assert!(matches!(
        new.call(MasterCall::Balance { force: true }).unwrap(),
        MasterAnswer::NotRun { .. }
    ));
    assert!(!balancer_switch(&new, Some(true)));
    assert!(balancer_switch(&new, None));
    assert_eq!(balance(&new), 4);
    h.settle(&new);
    assert_eq!(rows(&h.member(&first)).len(), 100);
}

#[test]
fn replication_peers_are_kept_in_the_catalog_so_the_next_master_answers_them() {
    let mut h = Harness::new();
    let old = h.start_master("m1");
    let member = h.start_member();
    h.settle(&old);
    // A member's calls go to the active master.
    let db = h.member(&member);
    let config = PeerConfig {
        cluster_key: Some("zk1:2181:/hbase-dr".into()),
        replicate_all: true,
        bandwidth: 1000,
        ..PeerConfig::default()
    };
    db.change_replication_peer(PeerChange::Add {
        id: "dr".into(),
        config: config.clone(),
        enabled: true,
    })
    .unwrap();
    db.change_replication_peer(PeerChange::SetState {
        id: "dr".into(),
        enabled: false,
    })
    .unwrap();
    let refused = db
        .change_replication_peer(PeerChange::Remove { id: "nope".into() })
        .unwrap_err();
    assert_eq!(refused.kind(), basalt::ErrorKind::ReplicationPeerNotFound);

    // A standby takes over: it reads the peers from the catalog.
    let new = h.start_master("m2");
    h.settle(&new);
    match new.call(MasterCall::ReplicationPeers).unwrap() {
        MasterAnswer::ReplicationPeers { peers } => {
            assert_eq!(
                peers["dr"],
                ReplicationPeer {
                    enabled: false,
                    config
                }
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        new.call(MasterCall::ReplicationPeerModificationSwitch { on: Some(false) })
            .unwrap(),
        MasterAnswer::Switch { previous: true }
    ));
    let refused = h
        .member(&member)
        .change_replication_peer(PeerChange::Remove { id: "dr".into() })
        .unwrap_err();
    assert_eq!(refused.kind(), basalt::ErrorKind::ReplicationPeerRefused);
    assert!(!h
        .member(&member)
        .replication_peer_modification_switch(None)
        .unwrap());
    assert_eq!(h.member(&member).replication_peers().unwrap().len(), 1);
}

/// One member, holding table `t` with `rows` rows written through it.
fn member_with_table(h: &mut Harness, master: &ClusterMaster, rows: usize) -> String {
    let first = h.start_member();
    h.settle(master);
    create(master);
    h.settle(master);
    write(&h.member(&first), 0, rows);
    first
}

/// A master on a manual clock running its chores every `periods`, one
/// member, and table `t` with `rows` rows written through it.
fn cluster_with_chores(
    h: &mut Harness,
    periods: ChorePeriods,
    rows: usize,
) -> (Arc<basalt::ManualClock>, Arc<ClusterMaster>, String) {
    let clock = Arc::new(basalt::ManualClock::new(1_000_000));
    let master = h.start_master_on("m1", clock.clone());
    master.set_chore_periods(periods);
    let first = member_with_table(h, &master, rows);
    (clock, master, first)
}

#[test]
fn the_periodic_balancer_runs_when_due_and_only_while_its_switch_is_on() {
    let mut h = Harness::new();
    let (clock, master, first) = cluster_with_chores(
        &mut h,
        ChorePeriods {
            balancer: Duration::from_secs(60),
            janitor: Duration::ZERO,
            normalizer: Duration::ZERO,
        },
        100,
    );
    let _second = h.start_member();
    h.settle(&master);
    assert_eq!(master.run_chores(), ChoresRun::default(), "not due yet");
    clock.advance(59_999);
    assert_eq!(master.run_chores().balanced, None, "not due yet");
    clock.advance(1);
    assert_eq!(master.run_chores().balanced, Some(4));
    h.settle(&master);
    assert_eq!(region_counts(&master), vec![4, 4]);
    assert_eq!(
        master.run_chores().balanced,
        None,
        "next due a period later"
    );

    // With the switch off a due run does nothing.
    balancer_switch(&master, Some(false));
    let _third = h.start_member();
    h.settle(&master);
    clock.advance(60_000);
    assert_eq!(master.run_chores().balanced, None);
    balancer_switch(&master, Some(true));
    clock.advance(60_000);
    assert!(master.run_chores().balanced.unwrap_or(0) > 0);
    h.settle(&master);
    assert_eq!(rows(&h.member(&first)).len(), 100);
}

#[test]
fn the_normalizer_chore_merges_small_cold_regions_on_different_servers_and_keeps_every_row() {
    const DAY_MS: i64 = 24 * 60 * 60 * 1000;
    let mut h = Harness::new();
    let clock = Arc::new(basalt::ManualClock::new(1_000_000));
    let master = h.start_master_on("m1", clock.clone());
    master.set_chore_periods(ChorePeriods {
        balancer: Duration::ZERO,
        janitor: Duration::ZERO,
        normalizer: Duration::from_secs(60),
    });
    let first = h.start_member();
    let second = h.start_member();
    h.settle(&master);
    create(&master);
    h.settle(&master);
    write(&h.member(&first), 0, 200);
    let holders: BTreeSet<usize> = status(&master)
        .servers
        .iter()
        .map(|s| s.regions.len())
        .collect();
    assert!(!holders.contains(&0), "both servers hold regions");

    // Off by default: a due run does nothing.
    clock.advance(3 * DAY_MS + 60_000);
    assert_eq!(master.run_chores().normalized, None);
    match master
        .call(MasterCall::NormalizerSwitch { on: Some(true) })
        .unwrap()
    {
        MasterAnswer::Switch { previous } => assert!(!previous),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        master.run_chores().normalized,
        None,
        "next due a period later"
    );
    clock.advance(60_000);
    assert_eq!(master.run_chores().normalized, Some(4));
    h.settle(&master);
    let s = status(&master);
    assert!(
        s.in_transition.is_empty() && s.procedures.is_empty(),
        "{s:?}"
    );
    assert_eq!(region_count(&master), 4);
    assert_eq!(distinct_rows(&h.member(&second)), 200);
    write(&h.member(&second), 200, 300);
    assert_eq!(distinct_rows(&h.member(&first)), 300);
}

#[test]
fn the_janitor_removes_region_directories_no_catalog_region_names_and_keeps_the_rest() {
    let mut h = Harness::new();
    let (clock, master, first) = cluster_with_chores(
        &mut h,
        ChorePeriods {
            balancer: Duration::ZERO,
            janitor: Duration::from_secs(300),
            normalizer: Duration::ZERO,
        },
        200,
    );
    h.member(&first).flush_table("t").unwrap();
    // What a master that died between a drop or truncate's commit and its
    // deletions leaves: directories of regions no catalog names, in a
    // table that exists and in one that does not any more.
    let root = h.dir.path().join("m1");
    let files = h.files(&root);
    for (table, id) in [("t", 4242_u64), ("gone", 4343)] {
        let path = basalt::layout::region_dir(&root, table, id)
            .join("f")
            .join("stray");
        let mut writer = files.create(&path).unwrap();
        writer.write_all(b"left behind").unwrap();
        writer.finish().unwrap();
        assert!(region_dir_exists(&h, id));
    }
    assert_eq!(master.run_chores().swept, None, "not due yet");
    clock.advance(300_000);
    assert_eq!(master.run_chores().swept, Some(2));
    assert!(!region_dir_exists(&h, 4242));
    assert!(!region_dir_exists(&h, 4343));
    // Every region the catalog names kept its files.
    h.settle(&master);
    assert_eq!(distinct_rows(&h.member(&first)), 200);
    assert_eq!(master.sweep_orphans().unwrap(), 0);
}

#[test]
fn a_servers_request_totals_keep_the_regions_it_moved_away_and_reports_carry_filtered_reads() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let first = member_with_table(&mut h, &master, 300);
    let totals = |db: &Database| {
        let server = db.server_metrics().requests.write_requests;
        let table = db
            .table_metrics()
            .into_iter()
            .find(|t| t.table == "t")
            .map(|t| t.requests.write_requests);
        (server, table)
    };
    assert_eq!(totals(&h.member(&first)), (300, Some(300)));

    // Half the regions move to a new server: the first keeps their counts.
    let second = h.start_member();
    h.settle(&master);
    assert_eq!(balance(&master), 4);
    h.settle(&master);
    assert_eq!(h.member(&first).server_metrics().regions, 4);
    assert_eq!(totals(&h.member(&first)), (300, Some(300)));
    assert_eq!(
        totals(&h.member(&second)),
        (0, Some(0)),
        "moved regions start at 0"
    );

    // A filtered read of a row the second server holds, through the first:
    // the second's report to the master carries it.
    let held = status(&master)
        .servers
        .into_iter()
        .find(|s| s.name == second)
        .unwrap()
        .regions;
    let region = h
        .member(&first)
        .region_states("t")
        .unwrap()
        .into_iter()
        .map(|(info, _)| info)
        .find(|info| held.contains(&info.encoded_name()))
        .unwrap();
    // `write` put row i at "<i % 8>-<i>": the first row of region k is k's.
    let k: usize = std::str::from_utf8(&region.start_key)
        .unwrap()
        .parse()
        .unwrap_or(0);
    let row = format!("{k:02}-{k:05}");
    let filter = basalt::Filter::parse("ValueFilter(=, 'binary:nothing')").unwrap();
    h.member(&first)
        .table("t")
        .unwrap()
        .get(&Get::new(row).filter(filter))
        .unwrap();
    let reports = status(&master)
        .servers
        .into_iter()
        .find(|s| s.name == second)
        .unwrap()
        .region_loads
        .expect("the second server answered");
    let report = reports.iter().find(|r| r.region == region.id).unwrap();
    assert_eq!(report.read_requests, 1);
    assert_eq!(report.filtered_read_requests, Some(1));
    assert!(report.read_requests_per_sec.is_some() && report.bytes_written.is_some());
}

#[test]
fn the_balancer_moves_load_off_the_server_holding_the_two_hot_regions() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let first = h.start_member();
    let second = h.start_member();
    h.settle(&master);
    create(&master);
    h.settle(&master);
    assert_eq!(region_counts(&master), vec![4, 4]);

    // Two of the first server's regions take nearly all the requests.
    let held = status(&master)
        .servers
        .into_iter()
        .find(|s| s.name == first)
        .unwrap()
        .regions;
    let hot: Vec<basalt::RegionInfo> = h
        .member(&first)
        .region_states("t")
        .unwrap()
        .into_iter()
        .map(|(info, _)| info)
        .filter(|info| held.contains(&info.encoded_name()))
        .take(2)
        .collect();
    let t = h.member(&first).table("t").unwrap();
    for info in &hot {
        let prefix = if info.start_key.is_empty() {
            "00".to_string()
        } else {
            String::from_utf8(info.start_key.to_vec()).unwrap()
        };
        for i in 0..400 {
            t.put(&Put::new(format!("{prefix}-hot{i:05}")).add("f", "q", "v"))
                .unwrap();
        }
    }
    write(&h.member(&second), 0, 16);

    let moved = balance(&master);
    // Counts were even, so a hot region is swapped for a cold one.
    assert_eq!(moved, 2);
    h.settle(&master);
    let after = status(&master);
    let server_of = |info: &basalt::RegionInfo| {
        after
            .servers
            .iter()
            .find(|s| s.regions.contains(&info.encoded_name()))
            .map(|s| s.name.clone())
            .unwrap()
    };
    assert_ne!(server_of(&hot[0]), server_of(&hot[1]));
    let counts: Vec<usize> = after.servers.iter().map(|s| s.regions.len()).collect();
    assert_eq!(counts, vec![4, 4]);
    assert_eq!(rows(&h.member(&second)).len(), 800 + 16);
}

#[test]
fn flush_and_compaction_of_a_table_reach_the_regions_other_servers_hold() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let first = h.start_member();
    let second = h.start_member();
    h.settle(&master);
    create(&master);
    h.settle(&master);
    let on_second = |h: &Harness| -> Vec<basalt::RegionSummary> {
        h.member(&second)
            .list_regions("t")
            .unwrap()
            .into_iter()
            .filter(|r| r.server.as_deref() == Some(second.as_str()))
            .collect()
    };
    assert_eq!(on_second(&h).len(), 4);

    // Two rounds of writes and flushes, asked of the first server only:
    // every region of the second gets two files.
    for round in 0..2 {
        write(&h.member(&first), round * 200, round * 200 + 200);
        h.member(&first).flush_table("t").unwrap();
    }
    for region in on_second(&h) {
        assert_eq!(region.load.memstore_bytes, 0, "{:?}", region.info);
        assert_eq!(region.store_files(), 2, "{:?}", region.info);
    }

    // A major compaction of one of them, named from the first server.
    let one = on_second(&h)[0].info.encoded_name();
    h.member(&first)
        .compact_region(one.as_bytes(), true)
        .unwrap();
    let files = |h: &Harness, encoded: &str| {
        on_second(h)
            .into_iter()
            .find(|r| r.info.encoded_name() == encoded)
            .unwrap()
            .store_files()
    };
    assert_eq!(files(&h, &one), 1);
    // Then of the whole table.
    h.member(&first).compact_table("t", true).unwrap();
    for region in on_second(&h) {
        assert_eq!(region.store_files(), 1, "{:?}", region.info);
    }
    assert_eq!(rows(&h.member(&first)).len(), 400);
    assert!(h
        .member(&first)
        .compact_region(b"no-such-region", true)
        .is_err());
}

#[test]
fn a_new_master_fences_the_old_one_and_carries_on_from_the_catalog() {
    let mut h = Harness::new();
    let old = h.start_master("m1");
    let a = h.start_member();
    let _b = h.start_member();
    h.settle(&old);
    create(&old);
    h.settle(&old);
    write(&h.member(&a), 0, 100);
    let new = h.start_master("m2");
    assert!(new.epoch() > old.epoch());
    h.settle(&new);
    // The old master's next change collides with the new one's catalog.
    let refused = old.call(MasterCall::CreateNamespace {
        descriptor: basalt::NamespaceDescriptor {
            name: "late".into(),
            properties: BTreeMap::new(),
        },
    });
    assert!(matches!(refused, Err(Error::Fenced { .. })), "{refused:?}");
    assert!(old.is_fenced());
    // The new one works from the same catalog.
    assert!(status(&new).in_transition.is_empty());
    new.call(MasterCall::SetEnabled {
        table: "t".into(),
        enabled: false,
    })
    .unwrap();
    h.settle(&new);
    assert!(h
        .member(&a)
        .table("t")
        .unwrap()
        .get(&Get::new("00-00000"))
        .is_err());
    new.call(MasterCall::SetEnabled {
        table: "t".into(),
        enabled: true,
    })
    .unwrap();
    h.settle(&new);
    assert_eq!(rows(&h.member(&a)).len(), 100);
}

// ---- split and merge (`basalt::cluster::split`) ----

/// Every row, checked to be there exactly once.
fn distinct_rows(db: &Database) -> usize {
    let all = rows(db);
    let distinct: BTreeSet<Bytes> = all.iter().cloned().collect();
    assert_eq!(distinct.len(), all.len(), "a row is read twice");
    all.len()
}

fn region_count(master: &ClusterMaster) -> usize {
    status(master).servers.iter().map(|s| s.regions.len()).sum()
}

/// The encoded name of the region of `t` holding `row`.
fn region_holding(db: &Database, row: &[u8]) -> basalt::RegionInfo {
    db.region_states("t")
        .unwrap()
        .into_iter()
        .map(|(info, _)| info)
        .find(|i| &i.start_key[..] <= row && (i.end_key.is_empty() || row < &i.end_key[..]))
        .unwrap()
}

/// Whether the shared storage holds a directory named after region `id`.
fn region_dir_exists(h: &Harness, id: u64) -> bool {
    fn walk(dir: &Path, name: &str) -> bool {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let path = e.path();
                path.is_dir() && (e.file_name().to_str() == Some(name) || walk(&path, name))
            })
    }
    walk(&h.dir.path().join("storage"), &id.to_string())
}

#[test]
fn a_split_by_hand_keeps_every_row_and_both_daughters_serve_on_the_parent_s_server() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let a = h.start_member();
    let b = h.start_member();
    h.settle(&master);
    create(&master);
    h.settle(&master);
    write(&h.member(&a), 0, 800);
    let parent = region_holding(&h.member(&a), b"03");
    let host = status(&master)
        .servers
        .into_iter()
        .find(|s| s.regions.contains(&parent.encoded_name()))
        .unwrap()
        .name;
    // The split point comes from the store files (as in one process).
    h.member(&host).flush_table("t").unwrap();
    // By encoded name, without a key: the parent's server picks the row.
    h.member(&b)
        .split_region(parent.encoded_name().as_bytes(), None)
        .unwrap();
    h.settle(&master);
    let s = status(&master);
    assert!(
        s.in_transition.is_empty() && s.procedures.is_empty(),
        "{s:?}"
    );
    assert_eq!(region_count(&master), 9);
    let daughters: Vec<basalt::RegionInfo> = h
        .member(&a)
        .region_states("t")
        .unwrap()
        .into_iter()
        .map(|(i, _)| i)
        .filter(|i| i.start_key == parent.start_key || i.end_key == parent.end_key)
        .collect();
    assert_eq!(daughters.len(), 2, "{daughters:?}");
    let on_host = &s.servers.iter().find(|x| x.name == host).unwrap().regions;
    for d in &daughters {
        assert!(on_host.contains(&d.encoded_name()), "{d:?} not on {host}");
    }
    for name in [&a, &b] {
        assert_eq!(distinct_rows(&h.member(name)), 800, "through {name}");
    }
    // The daughters take writes, and a split at a given key works too.
    write(&h.member(&b), 800, 900);
    h.member(&a).split_table("t", Some(b"05-00500")).unwrap();
    h.settle(&master);
    assert_eq!(region_count(&master), 10);
    assert_eq!(distinct_rows(&h.member(&b)), 900);
}

#[test]
fn a_split_whose_new_regions_did_not_open_is_finished_by_the_next_master() {
    let mut h = Harness::new();
    let old = h.start_master("m1");
    let a = h.start_member();
    h.settle(&old);
    create(&old);
    h.settle(&old);
    write(&h.member(&a), 0, 400);
    let parent = region_holding(&h.member(&a), b"02");
    // The master "dies" after the commit: its opens of the daughters fail.
    h.faults.fail_opens.store(true, Ordering::SeqCst);
    assert!(h
        .member(&a)
        .split_region(parent.encoded_name().as_bytes(), Some(b"02-00200"))
        .is_err());
    old.stop();
    h.faults.fail_opens.store(false, Ordering::SeqCst);
    let new = h.start_master("m2");
    assert_eq!(status(&new).procedures.len(), 1, "{:?}", status(&new));
    h.settle(&new);
    let s = status(&new);
    assert!(
        s.in_transition.is_empty() && s.procedures.is_empty(),
        "{s:?}"
    );
    assert_eq!(region_count(&new), 9);
    assert_eq!(distinct_rows(&h.member(&a)), 400);
    write(&h.member(&a), 400, 500);
    assert_eq!(distinct_rows(&h.member(&a)), 500);
}

#[test]
fn a_split_whose_master_died_after_the_prepare_step_is_rolled_back_by_the_next_master() {
    let mut h = Harness::new();
    let old = h.start_master("m1");
    let a = h.start_member();
    let _b = h.start_member();
    h.settle(&old);
    create(&old);
    h.settle(&old);
    write(&h.member(&a), 0, 400);
    let parent = region_holding(&h.member(&a), b"04");
    h.faults
        .stop_master_after_prepare
        .store(true, Ordering::SeqCst);
    assert!(h
        .member(&a)
        .split_region(parent.encoded_name().as_bytes(), None)
        .is_err());
    h.faults
        .stop_master_after_prepare
        .store(false, Ordering::SeqCst);
    let procedures = status(&old).procedures;
    assert_eq!(procedures.len(), 1, "{procedures:?}");
    let new = h.start_master("m2");
    h.settle(&new);
    let s = status(&new);
    assert!(
        s.in_transition.is_empty() && s.procedures.is_empty(),
        "{s:?}"
    );
    // Rolled back: the parent serves again, no daughter was kept.
    assert_eq!(region_count(&new), 8);
    assert!(s
        .servers
        .iter()
        .any(|x| x.regions.contains(&parent.encoded_name())));
    assert_eq!(distinct_rows(&h.member(&a)), 400);
    write(&h.member(&a), 400, 500);
    assert_eq!(distinct_rows(&h.member(&a)), 500);
}

#[test]
fn two_adjacent_regions_on_different_servers_merge_into_one_that_keeps_every_row() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let a = h.start_member();
    let b = h.start_member();
    h.settle(&master);
    create(&master);
    h.settle(&master);
    write(&h.member(&a), 0, 400);
    let left = region_holding(&h.member(&a), b"03");
    let right = region_holding(&h.member(&a), b"04");
    h.member(&b)
        .merge_regions(left.encoded_name().as_bytes(), &right.region_name()[..])
        .unwrap();
    h.settle(&master);
    let s = status(&master);
    assert!(
        s.in_transition.is_empty() && s.procedures.is_empty(),
        "{s:?}"
    );
    assert_eq!(region_count(&master), 7);
    let merged = region_holding(&h.member(&a), b"03");
    assert_eq!(merged.start_key, left.start_key);
    assert_eq!(merged.end_key, right.end_key);
    assert_eq!(distinct_rows(&h.member(&b)), 400);
    write(&h.member(&b), 400, 500);
    assert_eq!(distinct_rows(&h.member(&a)), 500);
}

#[test]
fn a_region_past_the_split_size_splits_by_itself_after_a_flush() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let a = h.start_member_with(|o| o.region_split_bytes = 2048);
    h.settle(&master);
    create(&master);
    h.settle(&master);
    write(&h.member(&a), 0, 800);
    h.member(&a).flush_table("t").unwrap();
    // The member asks the master from a thread of its own.
    let mut waited = 0;
    while region_count(&master) <= 8 && waited < 600 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        waited += 1;
    }
    h.settle(&master);
    assert!(region_count(&master) > 8, "{:?}", status(&master));
    // Let every asked split finish before checking.
    for _ in 0..100 {
        if status(&master).procedures.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    h.settle(&master);
    assert_eq!(distinct_rows(&h.member(&a)), 800);
}

#[test]
fn the_janitor_deletes_the_parent_s_files_once_compactions_rewrote_the_daughters() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let a = h.start_member();
    h.settle(&master);
    create(&master);
    h.settle(&master);
    write(&h.member(&a), 0, 400);
    let parent = region_holding(&h.member(&a), b"06");
    h.member(&a)
        .split_region(parent.encoded_name().as_bytes(), Some(b"06-00300"))
        .unwrap();
    h.settle(&master);
    // The daughters' compactions (asked for when they opened, and the
    // major ones here) rewrite the links into their own files.
    h.member(&a).compact_table("t", true).unwrap();
    master.tick().unwrap();
    assert!(!region_dir_exists(&h, parent.id));
    h.settle(&master);
    assert_eq!(distinct_rows(&h.member(&a)), 400);
}

#[test]
fn alter_reopens_every_region_with_the_new_families_and_a_deleted_family_comes_back_empty() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let a = h.start_member();
    let _b = h.start_member();
    h.settle(&master);
    create(&master);
    h.settle(&master);
    write(&h.member(&a), 0, 200);
    let db = h.member(&a);
    db.alter_table(
        "t",
        &[basalt::FamilyChange::Add(ColumnFamilyDescriptor::new("g"))],
    )
    .unwrap();
    h.settle(&master);
    assert!(status(&master).procedures.is_empty());
    let t = db.table("t").unwrap();
    t.put(&Put::new("03-x").add("g", "q", "in g")).unwrap();
    let got = t.get(&Get::new("03-x")).unwrap();
    assert_eq!(got.value(b"g", b"q").map(|v| &v[..]), Some(&b"in g"[..]));
    assert_eq!(rows(&db).len(), 201);
    // Delete g, add it again: its old cells are gone.
    db.alter_table("t", &[basalt::FamilyChange::Delete("g".into())])
        .unwrap();
    h.settle(&master);
    db.alter_table(
        "t",
        &[basalt::FamilyChange::Add(ColumnFamilyDescriptor::new("g"))],
    )
    .unwrap();
    h.settle(&master);
    let got = db.table("t").unwrap().get(&Get::new("03-x")).unwrap();
    assert!(got.is_empty(), "{got:?}");
    assert_eq!(rows(&db).len(), 200);
}

#[test]
fn truncate_empties_a_disabled_table_and_keeps_its_region_boundaries() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let a = h.start_member();
    h.settle(&master);
    create(&master);
    h.settle(&master);
    write(&h.member(&a), 0, 100);
    let db = h.member(&a);
    db.disable_table("t").unwrap();
    db.truncate_table("t").unwrap();
    db.enable_table("t").unwrap();
    h.settle(&master);
    assert_eq!(rows(&db).len(), 0);
    assert_eq!(db.region_states("t").unwrap().len(), 8);
    write(&db, 0, 10);
    assert_eq!(rows(&db).len(), 10);
}

#[test]
fn a_snapshot_spans_the_regions_every_server_holds_and_a_clone_reads_them_all_back() {
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let servers: Vec<String> = (0..3).map(|_| h.start_member()).collect();
    h.settle(&master);
    create(&master);
    h.settle(&master);
    let db = h.member(&servers[0]);
    write(&db, 0, 400);
    let snapshot = MasterCall::Snapshot {
        table: "t".into(),
        name: "across".into(),
        skip_flush: false,
        ttl_secs: 0,
        owner: None,
        nonce: None,
    };
    assert!(matches!(master.call(snapshot).unwrap(), MasterAnswer::Done));
    // Writes after the snapshot are not in it.
    write(&db, 400, 480);
    let clone = MasterCall::CloneSnapshot {
        name: "across".into(),
        table: "t_copy".into(),
    };
    assert!(matches!(master.call(clone).unwrap(), MasterAnswer::Done));
    h.settle(&master);
    for name in &servers {
        let copy = h.member(name).table("t_copy").unwrap();
        let n = copy.scan(&Scan::new()).unwrap().count();
        assert_eq!(n, 400, "the clone through {name} holds the snapshot's rows");
    }
    match master
        .call(MasterCall::ListSnapshots { pattern: None })
        .unwrap()
    {
        MasterAnswer::Snapshots { snapshots } => {
            assert_eq!(snapshots.len(), 1);
            assert_eq!(snapshots[0].kind, "FLUSH");
        }
        other => panic!("{other:?}"),
    }
}

/// `basalt import hfiles` against one member of a cluster: each piece of
/// an HBase-written HFile goes to the member holding its region (a region
/// call for the others, which read the file on the same machine), and
/// every member then reads every loaded row.
#[test]
fn a_bulk_load_through_one_member_reaches_the_regions_every_member_holds() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../basalt-hfile/tests/fixtures/none-none.hfile");
    let reader = basalt_hfile::HFileReader::open(&fixture).unwrap();
    let mut rows: Vec<Bytes> = Vec::new();
    for cell in reader.cells() {
        let cell = cell.unwrap();
        if rows.last() != Some(&cell.row) {
            rows.push(cell.row);
        }
    }
    let mut h = Harness::new();
    let master = h.start_master("m1");
    let servers: Vec<String> = (0..3).map(|_| h.start_member()).collect();
    h.settle(&master);
    let splits: Vec<Bytes> = [rows.len() / 4, rows.len() / 2, 3 * rows.len() / 4]
        .iter()
        .map(|&i| rows[i].clone())
        .collect();
    let answer = master
        .call(MasterCall::CreateTable {
            descriptor: TableDescriptor::new("t")
                .family(ColumnFamilyDescriptor::new("cf").max_versions(10)),
            splits,
            owner: None,
        })
        .unwrap();
    assert!(matches!(answer, MasterAnswer::Done));
    h.settle(&master);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("cf")).unwrap();
    std::fs::copy(&fixture, dir.path().join("cf").join("f1")).unwrap();
    let report = h
        .member(&servers[0])
        .bulk_load_hfiles(
            "t",
            &(std::sync::Arc::new(basalt::fs::LocalFileStore::new()) as _),
            dir.path(),
        )
        .unwrap();
    assert_eq!(report.cells, reader.entry_count());
    assert_eq!(report.pieces, 4, "one store file per region");
    for name in &servers {
        let seen: Vec<Bytes> = h
            .member(name)
            .table("t")
            .unwrap()
            .scan(&Scan::new().raw(true).max_versions(100))
            .unwrap()
            .map(|r| r.unwrap().row)
            .collect();
        assert!(
            seen.contains(&rows[0]) && seen.contains(&rows[rows.len() - 1]),
            "through {name}: {} rows",
            seen.len()
        );
    }
}
