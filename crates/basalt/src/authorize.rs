//! What each operation needs: HBase 2.6's `AccessController` rules as
//! one table, so the core asks them in one place for every gateway
//! (`crate::access` holds the model, `docs/security.md` the list).
//!
//! An operation needs one of its actions at its scope. The master's
//! operations are read off their [`MasterCall`]; the others (flush,
//! compact, describe, reads and writes) name theirs where the database
//! runs them.

use crate::access::{Action, Scope};
use crate::catalog::Catalog;
use crate::cluster::{MasterCall, SnapshotInfo};
use basalt_types::descriptor::namespace_of;

/// What one operation needs: one of `actions` at `scope`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Requirement {
    /// The operation, as HBase's denial message names it.
    pub operation: &'static str,
    /// Any one of these suffices.
    pub actions: &'static [Action],
    /// Where.
    pub scope: Scope,
}

/// Table administration: HBase accepts ADMIN or CREATE on the table (or
/// wider) for creating, altering, enabling, disabling, truncating,
/// dropping, flushing and compacting it.
pub(crate) const ADMIN_OR_CREATE: &[Action] = &[Action::Admin, Action::Create];
/// Cluster-wide administration and region moves: ADMIN only.
pub(crate) const ADMIN: &[Action] = &[Action::Admin];

fn on_table(operation: &'static str, actions: &'static [Action], table: &str) -> Requirement {
    Requirement {
        operation,
        actions,
        scope: Scope::table(table),
    }
}

fn global_admin(operation: &'static str) -> Requirement {
    Requirement {
        operation,
        actions: ADMIN,
        scope: Scope::Global,
    }
}

/// ADMIN on the table of the region named `region`; the global scope
/// when no region has that name (the call then fails on its own).
fn on_region(operation: &'static str, catalog: &Catalog, region: &str) -> Requirement {
    match catalog.region_by_name(region) {
        Ok((table, _)) => on_table(operation, ADMIN, &table),
        Err(_) => global_admin(operation),
    }
}

/// What a call on an existing snapshot (delete, clone, restore) needs from
/// `user`, with the snapshot it names; `None` for nothing. HBase's
/// AccessController: the snapshot's owner may delete it, clone it into a
/// table named as the snapshotted one, and restore it with ADMIN on that
/// table; anyone else needs global ADMIN (`master_call`).
pub(crate) fn snapshot_call(
    call: &MasterCall,
    snapshot: &SnapshotInfo,
    user: &str,
    catalog: &Catalog,
) -> Option<Requirement> {
    let owned = snapshot.owner.as_deref() == Some(user);
    match call {
        MasterCall::DeleteSnapshot { .. } if owned => None,
        MasterCall::CloneSnapshot { table, .. } if owned && *table == snapshot.table => None,
        MasterCall::RestoreSnapshot { .. } if owned => {
            Some(on_table("restoreSnapshot", ADMIN, &snapshot.table))
        }
        _ => master_call(call, catalog),
    }
}

/// Whether `user` may see `snapshot` listed: its owner may, and anyone
/// `may_administer_all` (HBase's global ADMIN).
pub(crate) fn lists_snapshot(
    snapshot: &SnapshotInfo,
    user: &str,
    may_administer_all: bool,
) -> bool {
    may_administer_all || snapshot.owner.as_deref() == Some(user)
}

/// A switch read needs nothing; setting it needs global ADMIN.
fn switch(operation: &'static str, on: Option<bool>) -> Option<Requirement> {
    on.map(|_| global_admin(operation))
}

/// What `call` needs, or `None` when any caller may make it.
pub(crate) fn master_call(call: &MasterCall, catalog: &Catalog) -> Option<Requirement> {
    Some(match call {
        MasterCall::CreateTable { descriptor, .. } => Requirement {
            operation: "createTable",
            actions: ADMIN_OR_CREATE,
            scope: Scope::namespace(namespace_of(descriptor.name())),
        },
        MasterCall::SetEnabled { table, enabled } => on_table(
            if *enabled {
                "enableTable"
            } else {
                "disableTable"
            },
            ADMIN_OR_CREATE,
            table,
        ),
        MasterCall::DropTable { table } => on_table("deleteTable", ADMIN_OR_CREATE, table),
        MasterCall::Alter { table, .. } => on_table("modifyTable", ADMIN_OR_CREATE, table),
        MasterCall::Indexes { table, .. } => on_table("modifyTable", ADMIN_OR_CREATE, table),
        MasterCall::Truncate { table } => on_table("truncateTable", ADMIN_OR_CREATE, table),
        MasterCall::CreateNamespace { .. } => global_admin("createNamespace"),
        MasterCall::AlterNamespace { .. } => global_admin("modifyNamespace"),
        MasterCall::DropNamespace { .. } => global_admin("deleteNamespace"),
        MasterCall::Move { region, .. } => on_region("move", catalog, region),
        MasterCall::Assign { region } => on_region("assign", catalog, region),
        MasterCall::Unassign { region } => on_region("unassign", catalog, region),
        MasterCall::Split { region, .. } => on_region("split", catalog, region),
        MasterCall::SplitTable { table, .. } => on_table("split", ADMIN, table),
        MasterCall::Merge { region_a, .. } => on_region("mergeRegions", catalog, region_a),
        MasterCall::Balance { .. } => global_admin("balance"),
        MasterCall::BalancerSwitch { on } => return switch("balanceSwitch", *on),
        MasterCall::NormalizerSwitch { on } => return switch("setNormalizerRunning", *on),
        MasterCall::SplitOrMergeSwitch { on, .. } => return switch("setSplitOrMergeEnabled", *on),
        MasterCall::Normalize => global_admin("normalize"),
        MasterCall::ReplicationPeer { .. } => global_admin("replicationPeer"),
        MasterCall::ReplicationPeers => global_admin("listReplicationPeers"),
        MasterCall::ReplicationPeerModificationSwitch { on } => {
            return switch("replicationPeerModificationSwitch", *on)
        }
        MasterCall::Status => return None,
        MasterCall::Snapshot { table, .. } => on_table("snapshot", ADMIN, table),
        // Filtered rather than refused (`Database::list_snapshots`).
        MasterCall::ListSnapshots { .. } => return None,
        MasterCall::DeleteSnapshot { .. } => global_admin("deleteSnapshot"),
        MasterCall::CloneSnapshot { .. } => global_admin("cloneSnapshot"),
        MasterCall::RestoreSnapshot { .. } => global_admin("restoreSnapshot"),
        MasterCall::SnapshotCleanupSwitch { on } => return switch("snapshotCleanupSwitch", *on),
        MasterCall::CatalogJanitor => global_admin("runCatalogJanitor"),
        MasterCall::Permission { change } => {
            let grant = match change {
                crate::access::PermissionChange::Grant { grant, .. }
                | crate::access::PermissionChange::Revoke { grant } => grant,
            };
            Requirement {
                operation: match change {
                    crate::access::PermissionChange::Grant { .. } => "grant",
                    crate::access::PermissionChange::Revoke { .. } => "revoke",
                },
                actions: ADMIN,
                scope: grant.scope.clone(),
            }
        }
    })
}
