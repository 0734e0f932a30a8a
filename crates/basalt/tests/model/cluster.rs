//! The third property: the model's operations sent through the members of
//! an in-process cluster (docs/cluster.md), with cluster events mixed in.
//!
//! 1. A case starts a `ClusterMaster` and 2-3 member `Database`s on one
//!    shared `file://` storage (each member with its own data directory and
//!    its log on the storage), wired by in-process stand-ins for the RPCs,
//!    as in tests/cluster_assignment.rs (the stand-ins are duplicated here,
//!    without that file's fault switches: moving them into a shared module
//!    would make both test crates compile code the other does not use).
//!    Every member reads the case's manual clock, so the timestamps the
//!    serving member gives are the reference's.
//! 2. The master creates the model's table, pre-split at a few row keys.
//! 3. Each data step (the first property's operations, unchanged) goes
//!    through a member picked by the step: most land on a remote route.
//!    `ASYNC_WAL` writes are sent as `SYNC_WAL`: a crash may lose them, as
//!    in HBase, and the reference does not model that loss.
//! 4. Each cluster event (move, balance by counts and load, normalize, a member
//!    crashing with a new one perhaps joining, a member joining, split,
//!    merge, an alter adding an empty family, a new master, flushes and
//!    compactions through one member, which reach every region) is
//!    followed by `settle` (the master hears who is live, members read
//!    the catalog) and two checks: the layout (the catalog's serving
//!    regions cover the key space without gap or overlap, each is open on
//!    exactly one live member, the one the catalog and the master name) and
//!    a full read (every version, and raw) against the reference.
//!
//! The engine's per-row record of server timestamps (a write in the same
//! millisecond as the row's last one gets the next millisecond) lives in
//! the region's memory and does not follow a region that reopens
//! elsewhere; rather than tracking which regions reopened, the clock moves
//! past every recorded timestamp after an event, where the record no
//! longer decides anything, and the reference forgets it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use basalt::cluster::{
    BalancerRun, ClusterMaster, MasterAnswer, MasterCall, MasterControl, PrepareMerge,
    PrepareSplit, RegionServerControl, SplitPlan,
};
use basalt::fs::FileStore;
use basalt::{
    ColumnFamilyDescriptor, Database, Durability, Error, FamilyChange, ManualClock, MemberConfig,
    ObjectWalOptions, Put, RegionAnswer, RegionCall, RegionCaller, RegionState, ServerAddress,
    SystemClock,
};
use basalt_object_store::{open_storage, StorageConfig};
use bytes::Bytes;
use parking_lot::RwLock;
use proptest::collection::vec;
use proptest::prelude::*;

use crate::harness::*;
use crate::operations::*;
use crate::reference::*;
use crate::stat;
use crate::strategies::*;

// ------------------------------------------------------------------ in-process RPC stand-ins

/// The live members by server name, for the stand-ins to reach.
#[derive(Debug, Default)]
struct Directory {
    members: RwLock<BTreeMap<String, Database>>,
}

impl Directory {
    fn by_name(&self, name: &str) -> basalt::Result<Database> {
        self.members
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NotServingRegion(format!("{name} is unreachable")))
    }

    fn by_address(&self, address: &ServerAddress) -> basalt::Result<Database> {
        let prefix = format!("{},{},", address.host(), address.port());
        self.members
            .read()
            .iter()
            .find(|(name, _)| name.starts_with(&prefix))
            .map(|(_, db)| db.clone())
            .ok_or_else(|| Error::NotServingRegion(format!("{address} is unreachable")))
    }
}

/// The master's calls to members.
#[derive(Debug)]
struct Control(Arc<Directory>);

impl RegionServerControl for Control {
    fn open_region(&self, server: &str, table: &str, region: u64) -> basalt::Result<()> {
        self.0.by_name(server)?.open_assigned_region(table, region)
    }
    fn close_region(&self, server: &str, _table: &str, region: u64) -> basalt::Result<()> {
        self.0.by_name(server)?.close_assigned_region(region)
    }
    fn prepare_split(&self, server: &str, request: &PrepareSplit) -> basalt::Result<SplitPlan> {
        self.0.by_name(server)?.prepare_split_region(request)
    }
    fn prepare_merge(&self, server: &str, request: &PrepareMerge) -> basalt::Result<()> {
        self.0.by_name(server)?.prepare_merge_regions(request)
    }
    // So `balance` events run the balancer's load pass too.
    fn region_loads(&self, server: &str) -> basalt::Result<Vec<basalt::cluster::RegionLoadReport>> {
        Ok(self.0.by_name(server)?.region_load_reports())
    }
}

/// A member's calls to the regions other members hold.
#[derive(Debug)]
struct Caller(Arc<Directory>);

impl RegionCaller for Caller {
    fn call(
        &self,
        server: &ServerAddress,
        table: &str,
        region_id: u64,
        call: RegionCall,
    ) -> basalt::Result<RegionAnswer> {
        self.0
            .by_address(server)?
            .serve_region_call(table, region_id, call)
    }
}

/// The master as members reach it; replaced when a new master starts.
#[derive(Debug, Default)]
struct MasterSlot(RwLock<Option<Arc<ClusterMaster>>>);

impl MasterControl for MasterSlot {
    fn call(&self, call: MasterCall) -> basalt::Result<MasterAnswer> {
        let master = self
            .0
            .read()
            .clone()
            .ok_or_else(|| Error::invalid("no master"))?;
        master.call(call)
    }
}

// ------------------------------------------------------------------ cases

/// Where a manual split cuts.
#[derive(Clone, Debug)]
pub(crate) enum SplitAt {
    /// `MasterCall::Split` of the region holding the key, at the key: an
    /// error exactly when the key is empty or already a region's start.
    Key(Bytes),
    /// `MasterCall::Split` of the `n % regions`-th region without a key
    /// (a row near the middle of its store files; none: an error).
    Middle(usize),
}

/// A cluster event.
#[derive(Clone, Debug)]
pub(crate) enum Event {
    /// `MasterCall::Move` of the `region % regions`-th region to the
    /// `target % others`-th other live member.
    Move {
        region: usize,
        target: usize,
    },
    /// `Database::balance` through a member: it runs unless the switch is
    /// off (or, without `force`, regions are in transition).
    Balance {
        force: bool,
    },
    /// `Database::balancer_switch` through a member: it answers the value
    /// the reference holds, which survives a new master (`NewMaster`).
    BalancerSwitch(bool),
    /// `Database::normalizer_switch(true)` then `Database::normalize`
    /// through a member (the master merges small cold neighbours at any
    /// age here, see `master_in`): merges and splits never change data,
    /// which the checks after every event read back.
    Normalize,
    /// The `victim % live`-th member leaves the live set without closing
    /// (it keeps running: a zombie, which must be fenced); with `join` a
    /// new member starts before the master hears of it. A lone member
    /// gets company first.
    Crash {
        victim: usize,
        join: bool,
    },
    /// A new member (up to 3).
    Join,
    Split(SplitAt),
    /// `MasterCall::Merge` of the `n % (regions - 1)`-th region and the next.
    Merge(usize),
    /// `MasterCall::Alter` adding a family nothing writes to: every region
    /// reopens, no read changes.
    AlterAddFamily,
    /// `ClusterMaster::start` again: the old master is fenced.
    NewMaster,
    /// `flush_table` through one member (it reaches every region).
    Flush,
    /// A minor `compact_table` through one member.
    MinorCompact,
    /// Flush, then a major `compact_table` through one member: the reference
    /// drops what a major compaction drops.
    MajorCompact,
}

#[derive(Clone, Debug)]
pub(crate) enum ClusterOp {
    Data(Op),
    Event(Event),
}

/// One step: move the clock, then run the op through the `via % live`-th
/// live member.
#[derive(Clone)]
pub(crate) struct ClusterStep {
    pub(crate) advance: i64,
    pub(crate) via: usize,
    pub(crate) op: ClusterOp,
}

impl fmt::Debug for ClusterStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "+{}ms via {} {:?}", self.advance, self.via, self.op)
    }
}

/// A whole case: store options, members at the start, the table's split
/// keys, the steps.
#[derive(Clone, Debug)]
pub(crate) struct ClusterCase {
    pub(crate) config: Config,
    pub(crate) members: usize,
    pub(crate) splits: Vec<Bytes>,
    pub(crate) steps: Vec<ClusterStep>,
}

/// Split keys a table may start with (sorted).
const INITIAL_SPLITS: [&[u8]; 5] = [b"r1", b"r10", b"r2", b"s", b"\xff"];

/// `ASYNC_WAL` becomes `SYNC_WAL` (see the module docs).
fn synced(d: Durability) -> Durability {
    match d {
        Durability::AsyncWal => Durability::SyncWal,
        other => other,
    }
}

fn synced_mut(m: MutSpec) -> MutSpec {
    match m {
        MutSpec::Put(p) => MutSpec::Put(PutSpec {
            durability: synced(p.durability),
            ..p
        }),
        MutSpec::Delete(d) => MutSpec::Delete(DeleteSpec {
            durability: synced(d.durability),
            ..d
        }),
    }
}

fn synced_op(op: Op) -> Op {
    match op {
        Op::Put(p) => match synced_mut(MutSpec::Put(p)) {
            MutSpec::Put(p) => Op::Put(p),
            MutSpec::Delete(d) => Op::Delete(d),
        },
        Op::Delete(d) => match synced_mut(MutSpec::Delete(d)) {
            MutSpec::Put(p) => Op::Put(p),
            MutSpec::Delete(d) => Op::Delete(d),
        },
        Op::Increment {
            row,
            cols,
            durability,
        } => Op::Increment {
            row,
            cols,
            durability: synced(durability),
        },
        Op::Append {
            row,
            cols,
            durability,
        } => Op::Append {
            row,
            cols,
            durability: synced(durability),
        },
        Op::CheckAndMutate {
            row,
            fam,
            qual,
            cond,
            tr,
            muts,
        } => Op::CheckAndMutate {
            row,
            fam,
            qual,
            cond,
            tr,
            muts: muts.into_iter().map(synced_mut).collect(),
        },
        Op::RowMutations { row, muts } => Op::RowMutations {
            row,
            muts: muts.into_iter().map(synced_mut).collect(),
        },
        Op::Batch(muts) => Op::Batch(muts.into_iter().map(synced_mut).collect()),
        other => other,
    }
}

/// Whether a filter counts rows (a page filter, alone or in a list).
fn counts_rows(filter: &FilterSpec) -> bool {
    match filter {
        FilterSpec::Page(_) => true,
        FilterSpec::List(_, inner) => inner.iter().any(counts_rows),
        _ => false,
    }
}

/// The first property's data operations and reads; its reopen, flush and
/// compaction ops are replaced by cluster events. Scans with a page filter
/// are left out: a region on another server builds the filter afresh, as
/// HBase's region servers each do (`Scanner`'s docs in table.rs), so the
/// page counts per remote region, while the reference counts over the
/// whole scan (as one process does).
fn data_op() -> impl Strategy<Value = Op> {
    op().prop_filter("a cluster event does this", |op| match op {
        Op::Reopen { .. } | Op::Flush | Op::MinorCompact | Op::MajorCompact => false,
        Op::Scan(s) => !s.filter.as_ref().is_some_and(counts_rows),
        _ => true,
    })
    .prop_map(synced_op)
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        3 => (any::<usize>(), any::<usize>())
            .prop_map(|(region, target)| Event::Move { region, target }),
        1 => any::<bool>().prop_map(|force| Event::Balance { force }),
        1 => any::<bool>().prop_map(Event::BalancerSwitch),
        1 => Just(Event::Normalize),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(victim, join)| Event::Crash { victim, join }),
        1 => Just(Event::Join),
        2 => row().prop_map(|k| Event::Split(SplitAt::Key(k))),
        1 => Just(Event::Split(SplitAt::Key(Bytes::new()))),
        2 => any::<usize>().prop_map(|n| Event::Split(SplitAt::Middle(n))),
        3 => any::<usize>().prop_map(Event::Merge),
        1 => Just(Event::AlterAddFamily),
        1 => Just(Event::NewMaster),
        2 => Just(Event::Flush),
        1 => Just(Event::MinorCompact),
        1 => Just(Event::MajorCompact),
    ]
}

fn cluster_step() -> impl Strategy<Value = ClusterStep> {
    let op = prop_oneof![
        5 => data_op().prop_map(ClusterOp::Data),
        1 => event().prop_map(ClusterOp::Event),
    ];
    (advance(), any::<usize>(), op).prop_map(|(advance, via, op)| ClusterStep { advance, via, op })
}

pub(crate) fn cluster_case() -> impl Strategy<Value = ClusterCase> {
    (
        config(),
        2usize..=3,
        proptest::sample::subsequence(INITIAL_SPLITS.to_vec(), 0..=3),
        vec(cluster_step(), 20..80),
    )
        .prop_map(|(config, members, splits, steps)| ClusterCase {
            config,
            members,
            splits: splits.into_iter().map(Bytes::from_static).collect(),
            steps,
        })
}

// ------------------------------------------------------------------ the cluster

/// The master, the members and what wires them.
struct Cluster {
    root: PathBuf,
    url: String,
    clock: ManualClock,
    config: Config,
    directory: Arc<Directory>,
    slot: Arc<MasterSlot>,
    master: Arc<ClusterMaster>,
    masters: u32,
    next_port: u16,
    /// Crashed members, still running (their writes must be fenced).
    zombies: Vec<Database>,
    families_added: u32,
    /// The balancer switch as the reference has it.
    balancer_on: bool,
}

fn failed(what: &str) -> impl Fn(Error) -> String + '_ {
    move |e| format!("{what} failed: {e}")
}

impl Cluster {
    fn start(root: &Path, clock: ManualClock, config: Config) -> Result<Cluster, String> {
        let shared = root.join("storage");
        std::fs::create_dir_all(&shared).map_err(|e| format!("storage directory: {e}"))?;
        let directory = Arc::new(Directory::default());
        let slot = Arc::new(MasterSlot::default());
        let cluster = Cluster {
            root: root.to_path_buf(),
            url: format!("file://{}", shared.display()),
            clock,
            config,
            master: Self::master_in(root, "m1", &shared, &directory, &slot)?,
            directory,
            slot,
            masters: 1,
            next_port: 1,
            zombies: Vec::new(),
            families_added: 0,
            balancer_on: true,
        };
        cluster.settle()?;
        Ok(cluster)
    }

    fn files_at(url: &str, root: &Path) -> Result<Arc<dyn FileStore>, String> {
        Ok(open_storage(&StorageConfig::for_url(url), root)
            .map_err(failed("open_storage"))?
            .ok_or("no storage for a file:// url")?
            .file_store())
    }

    fn master_in(
        root: &Path,
        name: &str,
        shared: &Path,
        directory: &Arc<Directory>,
        slot: &Arc<MasterSlot>,
    ) -> Result<Arc<ClusterMaster>, String> {
        let dir = root.join(name);
        let url = format!("file://{}", shared.display());
        let master = ClusterMaster::start(
            &dir,
            name,
            Arc::new(SystemClock),
            Self::files_at(&url, &dir)?,
            Arc::new(Control(Arc::clone(directory))),
        )
        .map_err(failed("ClusterMaster::start"))?;
        // Regions of a case are seconds old: without this the normalizer
        // would never merge (its default waits three days).
        master.set_normalizer_config(basalt::normalizer::NormalizerConfig {
            merge_min_age_ms: 0,
            ..basalt::normalizer::NormalizerConfig::default()
        });
        *slot.0.write() = Some(Arc::clone(&master));
        Ok(master)
    }

    /// A new member, live once the master hears of it (`settle`).
    fn start_member(&mut self) -> Result<String, String> {
        let port = self.next_port;
        self.next_port += 1;
        let root = self.root.join(format!("rs{port}"));
        let db = Database::builder(self.config.options(&root))
            .clock(Arc::new(self.clock.clone()))
            .file_store(Self::files_at(&self.url, &root)?)
            .wal_in_file_store(ObjectWalOptions {
                // The model writes one edit at a time.
                group_commit_window: std::time::Duration::ZERO,
                ..ObjectWalOptions::default()
            })
            .open_cluster_member(MemberConfig {
                control: Arc::clone(&self.slot) as Arc<dyn MasterControl>,
                caller: Arc::new(Caller(Arc::clone(&self.directory))),
                host: Some(("rs".to_string(), port)),
            })
            .map_err(failed("open_cluster_member"))?;
        let name = db
            .server_name()
            .ok_or("a member without a server name")?
            .to_string();
        self.directory.members.write().insert(name.clone(), db);
        Ok(name)
    }

    fn live(&self) -> Vec<(String, Database)> {
        self.directory
            .members
            .read()
            .iter()
            .map(|(n, d)| (n.clone(), d.clone()))
            .collect()
    }

    fn via(&self, pick: usize) -> Result<(String, Database), String> {
        let live = self.live();
        if live.is_empty() {
            return Err("no live member".into());
        }
        Ok(live[pick % live.len()].clone())
    }

    /// Tells the master who is live, then lets every member read the
    /// catalog (what ZooKeeper's notification does in a cluster).
    fn settle(&self) -> Result<(), String> {
        let live: BTreeSet<String> = self.live().into_iter().map(|(n, _)| n).collect();
        self.master
            .servers_changed(live)
            .map_err(failed("servers_changed"))?;
        for (name, db) in self.live() {
            db.refresh_cluster()
                .map_err(|e| format!("refresh_cluster on {name} failed: {e}"))?;
        }
        Ok(())
    }

    fn call(&self, call: MasterCall) -> basalt::Result<MasterAnswer> {
        self.master.call(call)
    }

    /// The serving regions as a member reads the catalog: (info, holder).
    fn layout(&self) -> Result<Vec<(basalt::RegionInfo, String)>, String> {
        let (_, db) = self.via(0)?;
        db.region_holders(TABLE)
            .map_err(failed("region_holders"))?
            .into_iter()
            .map(|(info, state, holder)| match (state, holder) {
                (RegionState::Open, Some(holder)) => Ok((info, holder)),
                (state, holder) => Err(format!(
                    "region {} [{}, {}) is {state:?} on {holder:?}",
                    info.encoded_name(),
                    escape(&info.start_key),
                    escape(&info.end_key)
                )),
            })
            .collect()
    }

    /// After an event: the cluster settled, the serving regions cover the
    /// key space without gap or overlap (every member agreeing), and each
    /// is open on exactly one live member, the one the catalog and the
    /// master name.
    fn check_layout(&self) -> Result<(), String> {
        let status = self.master.status();
        if !status.in_transition.is_empty()
            || !status.procedures.is_empty()
            || !status.dead_servers.is_empty()
        {
            return Err(format!("the cluster did not settle: {status:#?}"));
        }
        let live = self.live();
        let names: BTreeSet<String> = live.iter().map(|(n, _)| n.clone()).collect();
        let listed: BTreeSet<String> = status.servers.iter().map(|s| s.name.clone()).collect();
        if names != listed {
            return Err(format!(
                "the master lists servers {listed:?}, live: {names:?}"
            ));
        }
        let mut by_master: BTreeMap<String, String> = BTreeMap::new();
        for s in &status.servers {
            for region in &s.regions {
                if let Some(other) = by_master.insert(region.clone(), s.name.clone()) {
                    return Err(format!(
                        "the master lists {region} on {other} and {}",
                        s.name
                    ));
                }
            }
        }
        let layout = self.layout()?;
        let shown = || {
            layout
                .iter()
                .map(|(i, h)| format!("[{}, {}) on {h}", escape(&i.start_key), escape(&i.end_key)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let first_open = layout.first().is_some_and(|(i, _)| i.start_key.is_empty());
        let last_open = layout.last().is_some_and(|(i, _)| i.end_key.is_empty());
        let chained = layout
            .windows(2)
            .all(|w| w[0].0.end_key == w[1].0.start_key);
        let nonempty = layout
            .iter()
            .all(|(i, _)| i.end_key.is_empty() || i.start_key < i.end_key);
        if !(first_open && last_open && chained && nonempty) {
            return Err(format!("regions do not cover the key space: {}", shown()));
        }
        for (name, db) in &live {
            let seen: Vec<(Bytes, Bytes, Option<String>)> = db
                .region_holders(TABLE)
                .map_err(failed("region_holders"))?
                .into_iter()
                .map(|(i, _, h)| (i.start_key, i.end_key, h))
                .collect();
            let expected: Vec<(Bytes, Bytes, Option<String>)> = layout
                .iter()
                .map(|(i, h)| (i.start_key.clone(), i.end_key.clone(), Some(h.clone())))
                .collect();
            if seen != expected {
                return Err(format!(
                    "{name} sees another layout than {}: {seen:?}",
                    shown()
                ));
            }
        }
        let serving: BTreeSet<u64> = layout.iter().map(|(i, _)| i.id).collect();
        for (info, holder) in &layout {
            if !names.contains(holder) {
                return Err(format!(
                    "{} is held by {holder}, not live",
                    info.encoded_name()
                ));
            }
            if by_master.get(&info.encoded_name()) != Some(holder) {
                return Err(format!(
                    "the catalog puts {} on {holder}, the master on {:?}",
                    info.encoded_name(),
                    by_master.get(&info.encoded_name())
                ));
            }
            let open_on: Vec<&String> = live
                .iter()
                .filter(|(_, db)| db.region_server().region(info.id).is_some())
                .map(|(n, _)| n)
                .collect();
            if open_on != vec![holder] {
                return Err(format!(
                    "{} (held by {holder}) is open on {open_on:?}",
                    info.encoded_name()
                ));
            }
        }
        for (name, db) in &live {
            for region in db.region_server().online_regions() {
                let info = region.info();
                if info.table == TABLE && !serving.contains(&info.id) {
                    return Err(format!(
                        "{name} still has {} [{}, {}) open, which the catalog does not serve",
                        info.encoded_name(),
                        escape(&info.start_key),
                        escape(&info.end_key)
                    ));
                }
            }
        }
        Ok(())
    }

    /// Runs `f` on the first live member (by name).
    fn one_member(
        &self,
        what: &str,
        f: impl Fn(&Database) -> basalt::Result<()>,
    ) -> Result<(), String> {
        match self.live().into_iter().next() {
            Some((name, db)) => f(&db).map_err(|e| format!("{what} on {name} failed: {e}")),
            None => Err(format!("{what}: no live member")),
        }
    }
}

/// The reference, the clock and the cluster under test.
pub(crate) struct ClusterHarness {
    cluster: Cluster,
    /// The reference and the clock; its `db` and `table` are the member of
    /// the current step.
    pub(crate) h: Harness,
}

impl ClusterHarness {
    pub(crate) fn new(case: &ClusterCase) -> Result<ClusterHarness, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
        let clock = ManualClock::new(START_MS);
        let mut cluster = Cluster::start(dir.path(), clock.clone(), case.config.clone())?;
        for _ in 0..case.members {
            cluster.start_member()?;
        }
        cluster.settle()?;
        let answer = cluster
            .call(MasterCall::CreateTable {
                descriptor: table_descriptor(&case.config),
                splits: case.splits.clone(),
                owner: None,
            })
            .map_err(failed("CreateTable"))?;
        if !matches!(answer, MasterAnswer::Done) {
            return Err(format!("CreateTable answered {answer:?}"));
        }
        cluster.settle()?;
        cluster.check_layout()?;
        let (_, db) = cluster.via(0)?;
        let h = Harness::attached(dir, clock, case.config.clone(), db)?;
        Ok(ClusterHarness { cluster, h })
    }

    /// Points the harness at the `via % live`-th member.
    fn through(&mut self, via: usize) -> Result<(), String> {
        let (name, db) = self.cluster.via(via)?;
        self.h.table = Some(
            db.table(TABLE)
                .map_err(|e| format!("table through {name}: {e}"))?,
        );
        self.h.db = Some(db);
        Ok(())
    }

    pub(crate) fn step(&mut self, step: &ClusterStep) -> Result<(), String> {
        self.h.clock.advance(step.advance);
        self.through(step.via)?;
        let now = self.h.now();
        match &step.op {
            ClusterOp::Data(op) => {
                stat("cluster: data op");
                self.h.run_op(op, now)
            }
            ClusterOp::Event(event) => {
                self.event(event, now)?;
                self.cluster.settle()?;
                // See the module docs: past every recorded server timestamp.
                let last = self.h.model.row_clock.values().copied().max();
                if let Some(last) = last.filter(|&last| last >= now) {
                    self.h.clock.advance(last - now + 1);
                }
                self.h.model.forget_server_ts();
                self.cluster.check_layout()?;
                self.through(step.via)?;
                self.h.check_everything()
            }
        }
    }

    fn event(&mut self, event: &Event, now: i64) -> Result<(), String> {
        let c = &mut self.cluster;
        match event {
            Event::Move { region, target } => {
                let layout = c.layout()?;
                let (info, holder) = &layout[region % layout.len()];
                let others: Vec<String> = c
                    .live()
                    .into_iter()
                    .map(|(n, _)| n)
                    .filter(|n| n != holder)
                    .collect();
                if others.is_empty() {
                    stat("cluster: move with one member");
                    return Ok(());
                }
                let target = others[target % others.len()].clone();
                c.call(MasterCall::Move {
                    region: info.encoded_name(),
                    target: Some(target.clone()),
                })
                .map_err(failed("Move"))?;
                c.settle()?;
                let now_on = c
                    .layout()?
                    .into_iter()
                    .find(|(i, _)| i.id == info.id)
                    .map(|(_, h)| h);
                if now_on.as_ref() != Some(&target) {
                    return Err(format!(
                        "moved {} to {target}, the catalog has it on {now_on:?}",
                        info.encoded_name()
                    ));
                }
                stat("cluster: move");
            }
            Event::Balance { force } => {
                let (_, db) = c.via(0)?;
                let may_run = c.balancer_on;
                match db.balance(*force).map_err(failed("balance"))? {
                    BalancerRun::Moved(_) if !may_run => {
                        return Err("the balancer ran with its switch off".into())
                    }
                    BalancerRun::Moved(regions) if regions > 0 => stat("cluster: balance moved"),
                    BalancerRun::Moved(_) => stat("cluster: balance, nothing to move"),
                    // Regions still in transition stop an unforced run.
                    BalancerRun::NotRun(reason)
                        if may_run && (*force || !reason.contains("in transition")) =>
                    {
                        return Err(format!("the balancer did not run: {reason}"))
                    }
                    BalancerRun::NotRun(_) => stat("cluster: balance refused"),
                }
            }
            Event::BalancerSwitch(on) => {
                let (_, db) = c.via(0)?;
                let previous = db
                    .balancer_switch(Some(*on))
                    .map_err(failed("balancer_switch"))?;
                if previous != c.balancer_on {
                    return Err(format!(
                        "the balancer switch was {previous}, the reference has {}",
                        c.balancer_on
                    ));
                }
                c.balancer_on = *on;
                stat("cluster: balancer switch");
            }
            Event::Normalize => {
                let (_, db) = c.via(0)?;
                db.normalizer_switch(Some(true))
                    .map_err(failed("normalizer_switch"))?;
                let run = db.normalize().map_err(failed("normalize"))?;
                c.settle()?;
                match run.reason.as_deref() {
                    Some(reason) if reason.contains("switch is off") => {
                        return Err(format!("the normalizer did not run: {reason}"))
                    }
                    Some(_) => stat("cluster: normalize refused"),
                    None if run.plans.is_empty() => stat("cluster: normalize, nothing to do"),
                    None => stat("cluster: normalize carried out plans"),
                }
            }
            Event::Crash { victim, join } => {
                if c.live().len() < 2 {
                    c.start_member()?;
                    c.settle()?;
                }
                let (name, _) = c.via(*victim)?;
                let zombie = c
                    .directory
                    .members
                    .write()
                    .remove(&name)
                    .ok_or("the victim vanished")?;
                if *join {
                    c.start_member()?;
                    stat("cluster: crash and a member joins");
                } else {
                    stat("cluster: crash");
                }
                c.settle()?;
                // The zombie cannot make a write visible any more.
                if let Some(region) = zombie.region_server().online_regions().first() {
                    let mut row = region.info().start_key.to_vec();
                    row.extend_from_slice(b"-zombie");
                    let late = region.put(&Put::new(row).add(FAMS[0].name, "z", "late"));
                    // Refused: fenced, or (under the global memstore
                    // budget) "too busy" because the flush meant to make
                    // room was fenced. The full read below shows it did
                    // not land.
                    match late {
                        Err(Error::Fenced { .. }) => stat("cluster: zombie write fenced"),
                        Err(_) => stat("cluster: zombie write refused otherwise"),
                        Ok(()) => return Err("a crashed member's write was accepted".into()),
                    }
                }
                c.zombies.push(zombie);
            }
            Event::Join => {
                if c.live().len() < 3 {
                    c.start_member()?;
                    stat("cluster: join");
                }
            }
            Event::Split(at) => {
                let layout = c.layout()?;
                let (region, key) = match at {
                    SplitAt::Key(k) => {
                        let holding = layout
                            .iter()
                            .find(|(i, _)| i.contains(k))
                            .map(|(i, _)| i.clone())
                            .ok_or("no region holds a key")?;
                        (holding, Some(k.clone()))
                    }
                    SplitAt::Middle(n) => (layout[n % layout.len()].0.clone(), None),
                };
                let expect_error = key
                    .as_ref()
                    .is_some_and(|k| k.is_empty() || *k == region.start_key);
                let r = c.call(MasterCall::Split {
                    region: region.encoded_name(),
                    key: key.clone(),
                });
                c.settle()?;
                let after = c.layout()?.len();
                match (r, expect_error) {
                    (Ok(_), false) => {
                        if after != layout.len() + 1 {
                            return Err(format!(
                                "a split made {after} regions of {}",
                                layout.len()
                            ));
                        }
                        stat("cluster: split");
                    }
                    (Err(Error::InvalidArgument(_)), true) => {
                        stat("cluster: bad split key refused")
                    }
                    (Err(Error::InvalidArgument(m)), false)
                        if key.is_none() && m.contains("no row to split at") =>
                    {
                        stat("cluster: split, no split point")
                    }
                    (r, expected) => {
                        return Err(format!(
                            "Split of {} at {:?} gave {:?}, expected an error: {expected}",
                            region.encoded_name(),
                            key.as_deref().map(escape),
                            r.map_err(|e| e.to_string())
                        ))
                    }
                }
            }
            Event::Merge(pick) => {
                let layout = c.layout()?;
                if layout.len() < 2 {
                    stat("cluster: merge of a single region");
                    return Ok(());
                }
                let i = pick % (layout.len() - 1);
                let (a, b) = (layout[i].0.encoded_name(), layout[i + 1].0.encoded_name());
                // Either order names the same pair.
                let (region_a, region_b) = if pick % 2 == 0 { (a, b) } else { (b, a) };
                c.call(MasterCall::Merge { region_a, region_b })
                    .map_err(failed("Merge"))?;
                c.settle()?;
                if c.layout()?.len() != layout.len() - 1 {
                    return Err("a merge did not remove a region".into());
                }
                stat("cluster: merge");
            }
            Event::AlterAddFamily => {
                c.families_added += 1;
                let family = format!("x{}", c.families_added);
                c.call(MasterCall::Alter {
                    table: TABLE.to_string(),
                    changes: vec![FamilyChange::Add(ColumnFamilyDescriptor::new(family))],
                })
                .map_err(failed("Alter"))?;
                stat("cluster: alter");
            }
            Event::NewMaster => {
                c.masters += 1;
                let name = format!("m{}", c.masters);
                let shared = c.root.join("storage");
                let old = std::mem::replace(
                    &mut c.master,
                    Cluster::master_in(&c.root, &name, &shared, &c.directory, &c.slot)?,
                );
                if c.master.epoch() <= old.epoch() {
                    return Err("a new master without a later epoch".into());
                }
                c.settle()?;
                // The old master's next change collides with the new one's.
                let refused = old.call(MasterCall::CreateNamespace {
                    descriptor: basalt::NamespaceDescriptor {
                        name: format!("late{}", c.masters),
                        properties: BTreeMap::new(),
                    },
                });
                if !matches!(refused, Err(Error::Fenced { .. })) {
                    return Err(format!("the old master's change gave {refused:?}"));
                }
                stat("cluster: new master");
            }
            // Each through one member: it reaches the regions the others
            // hold with region calls (the reference's major compaction
            // needs every region compacted, so this checks that it did).
            Event::Flush => {
                c.one_member("flush_table", |db| db.flush_table(TABLE))?;
                stat("cluster: flush");
            }
            Event::MinorCompact => {
                c.one_member("minor compact_table", |db| db.compact_table(TABLE, false))?;
                stat("cluster: minor compaction");
            }
            Event::MajorCompact => {
                c.one_member("flush_table", |db| db.flush_table(TABLE))?;
                let members: Vec<Database> = c.live().into_iter().map(|(_, db)| db).collect();
                let before = Harness::kept_deleted_stores(&members)?;
                c.one_member("major compact_table", |db| db.compact_table(TABLE, true))?;
                let after = Harness::kept_deleted_stores(&members)?;
                let stores = Harness::compacted_kept_deleted(&before, &after)?;
                self.h.model.major_compact(now, &stores)?;
                stat("cluster: major compaction");
            }
        }
        Ok(())
    }
}

/// Runs a case, comparing engine and model at each step; the error names
/// the failing step and shows the model's cells.
pub(crate) fn run_cluster_case(case: &ClusterCase) -> Result<(), String> {
    let mut ch = ClusterHarness::new(case)?;
    for (i, step) in case.steps.iter().enumerate() {
        ch.step(step).map_err(|e| {
            format!(
                "step {i} (now={}) {step:?}\n{e}\nmodel cells:\n{}",
                ch.h.now(),
                ch.h.model.dump()
            )
        })?;
    }
    ch.h.check_everything().map_err(|e| {
        format!(
            "final check (now={}):\n{e}\nmodel cells:\n{}",
            ch.h.now(),
            ch.h.model.dump()
        )
    })
}
