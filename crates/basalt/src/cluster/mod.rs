//! Cluster mode: HBase's three roles in separate processes over shared
//! storage (`docs/cluster.md`).
//!
//! ```text
//!   basalt master (active)        basalt regionserver (each)
//!   ClusterMaster                 Database, member mode (ClusterMember):
//!     catalog (only writer) ──────> reads the newest catalog on each change
//!     assignment, procedures        RegionServer: opens what it is told,
//!     server crash: fence its log,  its own log, fenced regions refuse
//!       reopen its regions ───────> Locator: local routes, remote routes
//! ```
//!
//! The master is the only writer of the catalog (stored with its epoch,
//! so a stale master is fenced: `Catalog::store_fenced`). Region servers
//! only read it: the catalog says which server each region is assigned
//! to, at which region epoch, and which dead servers' logs it must replay
//! first. The master tells a server to open or close a region through
//! [`RegionServerControl`] (an RPC in a cluster) only *after* committing
//! the assignment, so a server always finds its instructions in the
//! catalog it reads. Members ask the master for DDL through
//! [`MasterControl`].
//!
//! Liveness is not decided here: the process wiring (ZooKeeper sessions,
//! `basalt-rpc`'s coordination) tells the master which servers are live
//! ([`ClusterMaster::servers_changed`]).

mod alter;
mod control;
mod in_process;
mod master;
mod member;
mod snapshot;
mod split;

pub(crate) use control::{region_load_reports, MasterLink};
pub use control::{
    BalancerRun, ClusterStatus, IndexChange, MasterAnswer, MasterCall, MasterControl, PrepareMerge,
    PrepareSplit, RegionLoadReport, RegionServerControl, RegionTransition, ServerName,
    ServerStatus, SnapshotInfo, SnapshotRegionRequest, SplitPlan,
};
pub(crate) use in_process::{start as start_in_process, IN_PROCESS_SERVER};
pub use master::{ChorePeriods, ChoresRun, ClusterMaster};
pub use member::ClusterMember;
pub(crate) use member::MemberLink;
pub(crate) use snapshot::snapshot_region;
pub(crate) use split::MemberHooks;
