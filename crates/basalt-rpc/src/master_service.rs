//! `MasterService`: what HBase clients' `Admin` calls on the master port
//! (DDL, namespaces, cluster status, the master's switches, region
//! operations and procedure polling).
//!
//! Basalt's DDL is synchronous: when a call answers, the work is done and
//! committed. HBase's clients still expect a procedure id in each DDL
//! answer and poll `getProcedureResult` with it, so every successful DDL
//! call is handed an id from a counter and remembered, with its times,
//! among the last [`REMEMBERED_PROCEDURES`]; polling answers `FINISHED`,
//! and an id never handed out (or long forgotten) answers `NOT_FOUND`,
//! which HBase's clients also read as done. A failed call answers its
//! exception directly and gets no id.
//!
//! Exceptions keep HBase's classes (`TableExistsException`,
//! `TableNotFoundException`, `TableNotDisabledException`,
//! `TableNotEnabledException`, `NamespaceExistException`,
//! `NamespaceNotFoundException`, `InvalidFamilyOperationException`,
//! `UnknownRegionException`, `ConstraintException`), so a client's
//! `catch` clauses work unchanged.
//!
//! In a cluster (the master's process and every region server's are
//! members: `Database::cluster`), `GetClusterStatus` lists what the active
//! master says (every live region server with its regions, the dead
//! servers, the regions in transition) and `MoveRegion`, `AssignRegion`,
//! `UnassignRegion` and `Balance` are the master's own calls
//! (`Database::master_call`); the cluster status carries every server's
//! region loads as each reported them to the master (`RegionLoads`). The
//! balancer and normalizer switches are the catalog's, so every process
//! answers the same value and they outlive the master; `Normalize` is
//! the master's normalizer pass.
//!
//! Replication peers are kept in the catalog (`basalt::replication`) and
//! changed with HBase's checks and messages; HBase's peer procedures are
//! done when Basalt answers (their id polls as finished). Basalt ships no
//! edits to peers yet.
//!
//! One process is the whole cluster: one master (this one, active), one
//! region server, no backup masters, no dead servers. The balancer and
//! normalizer switches are kept in the catalog as in a cluster (and
//! `Normalize` merges and splits this process's regions); the catalog
//! janitor and cleaner switches are kept in the process so a client reads
//! back what it set; with a single server there is never a region to
//! move, so a balance "runs" and moves nothing. The split and
//! merge switches do gate the `SplitRegion` and `MergeTableRegions` calls
//! (as HBase's do); Basalt's automatic splits are governed by its own
//! configuration.
//!
//! Methods not served, answered with `DoNotRetryIOException` naming the
//! method (the server does that for any method missing from [`METHODS`]):
//! `Shutdown`, `StopMaster`, `OfflineRegion`, `ExecMasterService`
//! (coprocessor endpoints), `SetQuota`,
//! `getLastMajorCompactionTimestamp`,
//! `getLastMajorCompactionTimestampForRegion`,
//! `AbortProcedure`, `GetProcedures`, `GetLocks`,
//! `ListDecommissionedRegionServers`, `DecommissionRegionServers`,
//! `RecommissionRegionServer`, `GetSpaceQuotaRegionSizes`,
//! `GetQuotaStates`, `ClearDeadServers`, `SwitchRpcThrottle`,
//! `IsRpcThrottleEnabled`, `SwitchExceedThrottleQuota`, `GetLogEntries`,
//! `ModifyTableStoreFileTracker`, `ModifyColumnStoreFileTracker`,
//! `FlushMasterStore`; and `ExecProcedure` / `IsProcedureDone` for any
//! procedure but `flush-table-proc`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;

use basalt::replication::PeerChange;
use basalt::{namespace_of, Error, FamilyChange, RegionState, SplitOrMerge};

use crate::admin_service::{
    now_millis, online_regions, region_load, region_name_spec, system_region_loads,
};
use crate::call::{encode, Call, Method};
use crate::context::{RpcContext, Switches, HBASE_VERSION};
use crate::error::RpcError;
use crate::meta::{self, table_name_proto, Target, META_TABLE};
use crate::namespace_table::{self, NAMESPACE_TABLE};
use crate::proto::cluster_status::{
    self as status, region_state::State as RegionStateCode, StatusOption,
};
use crate::proto::hbase::{self as pb, table_state::State as TableStateCode};
use crate::proto::master::{self as m, get_procedure_result_response::State as ProcState};
use crate::proto::replication as rp;
use crate::replication;
use crate::schema;

/// The methods served.
pub const METHODS: &[Method] = &[
    method("GetTableDescriptors", get_table_descriptors),
    method("GetTableNames", get_table_names),
    method("GetTableState", get_table_state),
    method("GetSchemaAlterStatus", get_schema_alter_status),
    method("CreateTable", create_table),
    method("DeleteTable", delete_table),
    method("truncateTable", truncate_table),
    method("EnableTable", enable_table),
    method("DisableTable", disable_table),
    method("ModifyTable", modify_table),
    method("AddColumn", add_column),
    method("ModifyColumn", modify_column),
    method("DeleteColumn", delete_column),
    method("CreateNamespace", create_namespace),
    method("ModifyNamespace", modify_namespace),
    method("DeleteNamespace", delete_namespace),
    method("GetNamespaceDescriptor", get_namespace_descriptor),
    method("ListNamespaceDescriptors", list_namespace_descriptors),
    method("ListNamespaces", list_namespaces),
    method(
        "ListTableDescriptorsByNamespace",
        list_table_descriptors_by_namespace,
    ),
    method("ListTableNamesByNamespace", list_table_names_by_namespace),
    method("IsMasterRunning", is_master_running),
    method("IsMasterInMaintenanceMode", is_master_in_maintenance_mode),
    method("GetClusterStatus", get_cluster_status),
    method("Balance", balance),
    method("SetBalancerRunning", set_balancer_running),
    method("IsBalancerEnabled", is_balancer_enabled),
    method("Normalize", normalize),
    method("SetNormalizerRunning", set_normalizer_running),
    method("IsNormalizerEnabled", is_normalizer_enabled),
    method("RunCatalogScan", run_catalog_scan),
    method("EnableCatalogJanitor", enable_catalog_janitor),
    method("IsCatalogJanitorEnabled", is_catalog_janitor_enabled),
    method("RunCleanerChore", run_cleaner_chore),
    method("SetCleanerChoreRunning", set_cleaner_chore_running),
    method("IsCleanerChoreEnabled", is_cleaner_chore_enabled),
    method("SwitchSnapshotCleanup", switch_snapshot_cleanup),
    method("IsSnapshotCleanupEnabled", is_snapshot_cleanup_enabled),
    method("Snapshot", snapshot),
    method("IsSnapshotDone", is_snapshot_done),
    method("GetCompletedSnapshots", get_completed_snapshots),
    method("DeleteSnapshot", delete_snapshot),
    method("RestoreSnapshot", restore_snapshot),
    method("SetSplitOrMergeEnabled", set_split_or_merge_enabled),
    method("IsSplitOrMergeEnabled", is_split_or_merge_enabled),
    method("SplitRegion", split_region),
    method("MergeTableRegions", merge_table_regions),
    method("AssignRegion", assign_region),
    method("UnassignRegion", unassign_region),
    method("MoveRegion", move_region),
    method("getProcedureResult", get_procedure_result),
    method("ExecProcedure", exec_procedure),
    method("ExecProcedureWithRet", exec_procedure),
    method("IsProcedureDone", is_procedure_done),
    method("AddReplicationPeer", add_replication_peer),
    method("RemoveReplicationPeer", remove_replication_peer),
    method("EnableReplicationPeer", enable_replication_peer),
    method("DisableReplicationPeer", disable_replication_peer),
    method("GetReplicationPeerConfig", get_replication_peer_config),
    method(
        "UpdateReplicationPeerConfig",
        update_replication_peer_config,
    ),
    method("ListReplicationPeers", list_replication_peers),
    method("IsReplicationPeerEnabled", is_replication_peer_enabled),
    method(
        "ReplicationPeerModificationSwitch",
        replication_peer_modification_switch,
    ),
    method(
        "IsReplicationPeerModificationEnabled",
        is_replication_peer_modification_enabled,
    ),
    method(
        "GetReplicationPeerModificationProcedures",
        get_replication_peer_modification_procedures,
    ),
    method("Grant", crate::access_control::grant),
    method("Revoke", crate::access_control::revoke),
    method(
        "GetUserPermissions",
        crate::access_control::get_user_permissions,
    ),
    method(
        "HasUserPermissions",
        crate::access_control::has_user_permissions,
    ),
    method(
        "getSecurityCapabilities",
        crate::access_control::get_security_capabilities,
    ),
];

const fn method(
    name: &'static str,
    handler: fn(&mut Call<'_>, &[u8]) -> Result<Vec<u8>, RpcError>,
) -> Method {
    Method { name, handler }
}

type Answer = Result<Vec<u8>, RpcError>;

/// HBase's exception for a family operation that the table's families
/// forbid (adding one that exists, deleting or modifying one that does
/// not, deleting the last one). Basalt's error table has no kind for it:
/// Basalt's own `alter` reports these as `InvalidArgument` or
/// `NoSuchFamily`, which map to other classes, so the check is made here
/// first to answer HBase's class. Like HBase's, it is final.
pub const INVALID_FAMILY_OPERATION: &str =
    "org.apache.hadoop.hbase.InvalidFamilyOperationException";

/// HBase's exception for a region the master does not know (assign,
/// unassign, move, split, merge). Basalt's error table has no kind for
/// it: the region server's `NotServingRegionException` would make the
/// client retry a call that cannot succeed.
pub const UNKNOWN_REGION: &str = "org.apache.hadoop.hbase.UnknownRegionException";

/// How many finished procedures `getProcedureResult` remembers.
pub const REMEMBERED_PROCEDURES: usize = 1024;

/// How long `ExecProcedure` tells the client to wait at most: the work is
/// already done when it answers, so the client's first poll sees it done.
const EXEC_PROCEDURE_TIMEOUT_MS: i64 = 60_000;

/// HBase's signature of the procedure `Admin.flush(table)` runs.
const FLUSH_TABLE_PROCEDURE: &str = "flush-table-proc";

// ---- procedures ----

/// A DDL call that finished: its id and times.
#[derive(Debug, Clone, Copy)]
struct Finished {
    id: u64,
    submitted: u64,
    finished: u64,
}

/// The ids handed out and the last finished procedures.
///
/// Process-wide rather than per `RpcContext`: the context has no slot for
/// it, and ids from one counter never collide even when one process
/// serves several databases (tests do).
struct Procedures {
    next: AtomicU64,
    finished: Mutex<VecDeque<Finished>>,
}

static PROCEDURES: Procedures = Procedures {
    next: AtomicU64::new(1),
    finished: Mutex::new(VecDeque::new()),
};

/// Hands out the id of a DDL call that started at `submitted` and has
/// just finished, remembering it.
fn finished_procedure(submitted: u64) -> u64 {
    let id = PROCEDURES.next.fetch_add(1, Ordering::SeqCst);
    let mut finished = PROCEDURES.finished.lock();
    if finished.len() == REMEMBERED_PROCEDURES {
        finished.pop_front();
    }
    finished.push_back(Finished {
        id,
        submitted,
        finished: now_millis(),
    });
    id
}

fn find_procedure(id: u64) -> Option<Finished> {
    PROCEDURES
        .finished
        .lock()
        .iter()
        .rev()
        .find(|p| p.id == id)
        .copied()
}

/// The answer of a DDL call that succeeded.
fn procedure_answer(submitted: u64) -> Answer {
    Ok(encode(&m::ProcIdResponse {
        proc_id: Some(finished_procedure(submitted)),
    }))
}

// ---- shared helpers ----

/// Basalt's name of the table in a required field.
fn table_name(name: Option<&pb::TableName>, field: &str) -> Result<String, RpcError> {
    meta::table_name_text(name.ok_or_else(|| RpcError::missing(field))?)
}

/// Refuses DDL on the system tables (`hbase:meta`, `hbase:namespace`):
/// Basalt builds them from its catalog, they are not tables that can be
/// altered.
fn refuse_meta(name: &str) -> Result<(), RpcError> {
    if is_system_table(name) {
        return Err(RpcError::do_not_retry(format!(
            "{name} is built from Basalt's catalog and cannot be altered, disabled, truncated or deleted"
        )));
    }
    Ok(())
}

/// The system tables HBase 2.6 lists: `hbase:meta` and `hbase:namespace`,
/// both served from Basalt's catalog.
const SYSTEM_TABLES: [&str; 2] = [META_TABLE, NAMESPACE_TABLE];

fn is_system_table(name: &str) -> bool {
    SYSTEM_TABLES.contains(&name)
}

fn family_error(message: String) -> RpcError {
    RpcError::new(INVALID_FAMILY_OPERATION, message, true)
}

fn unknown_region(message: String) -> RpcError {
    RpcError::new(UNKNOWN_REGION, message, true)
}

/// A region the master knows, or `UnknownRegionException` (what HBase's
/// master answers where the region server would say "not serving").
fn known_region(call: &Call<'_>, spec: Option<&pb::RegionSpecifier>) -> Result<Target, RpcError> {
    meta::resolve(call.ctx, spec).map_err(|e| {
        if e.class == crate::error::NOT_SERVING_REGION {
            unknown_region(e.message)
        } else {
            e
        }
    })
}

/// The tables a listing shows, by Basalt name, in order: user tables,
/// plus `hbase:meta` and `hbase:namespace` when system tables are asked
/// for (HBase 2.6 lists both); filtered by
/// namespace and by a Java-style pattern matching the whole name.
fn listed_tables(
    call: &Call<'_>,
    regex: Option<&str>,
    include_sys_tables: bool,
    namespace: Option<&str>,
) -> Result<Vec<String>, RpcError> {
    let pattern = table_pattern(regex)?;
    let mut names = call.db.list_tables();
    if include_sys_tables {
        names.extend(SYSTEM_TABLES.iter().map(|t| t.to_string()));
        names.sort();
    }
    Ok(names
        .into_iter()
        .filter(|n| {
            include_sys_tables || namespace_of(n) != basalt_types::descriptor::SYSTEM_NAMESPACE
        })
        .filter(|n| {
            namespace
                .filter(|ns| !ns.is_empty())
                .is_none_or(|ns| namespace_of(n) == ns)
        })
        .filter(|n| {
            pattern.as_ref().is_none_or(|p| {
                // A default-namespace table matches as `t` or `default:t`.
                p.is_match(n)
                    || (!n.contains(':')
                        && p.is_match(&format!("{}:{n}", basalt::DEFAULT_NAMESPACE)))
            })
        })
        .collect())
}

/// A listing's pattern as HBase's master applies it: absent lists every
/// table; present (even empty) must match the whole name, as Java's
/// `Pattern.matcher(name).matches()`, so an empty pattern matches none.
fn table_pattern(regex: Option<&str>) -> Result<Option<regex::Regex>, RpcError> {
    regex
        .map(|r| {
            regex::Regex::new(&format!("^(?:{r})$")).map_err(|e| {
                RpcError::do_not_retry(format!("invalid table name pattern '{r}': {e}"))
            })
        })
        .transpose()
}

/// The schema of `name`, `None` when it does not exist (dropped since it
/// was listed, or never there).
fn schema_of(call: &Call<'_>, name: &str) -> Result<Option<pb::TableSchema>, RpcError> {
    if name == META_TABLE {
        return Ok(Some(schema::meta_table_schema()));
    }
    if name == NAMESPACE_TABLE {
        return Ok(Some(namespace_table::table_schema()));
    }
    // The descriptor alone: `describe_table` would also gather every
    // region's load.
    match call.db.table(name) {
        Ok(table) => Ok(Some(schema::table_schema(&table.descriptor()))),
        Err(Error::TableNotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn schemas_of(call: &Call<'_>, names: &[String]) -> Result<Vec<pb::TableSchema>, RpcError> {
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        out.extend(schema_of(call, name)?);
    }
    Ok(out)
}

/// The tables of a namespace, the system tables included for `hbase`
/// (in HBase 2.6's order: `hbase:meta`, `hbase:namespace`).
fn namespace_tables(call: &Call<'_>, namespace: &str) -> Result<Vec<String>, RpcError> {
    let mut names = call.db.list_namespace_tables(namespace)?;
    if namespace == basalt_types::descriptor::SYSTEM_NAMESPACE {
        names.splice(0..0, SYSTEM_TABLES.iter().map(|t| t.to_string()));
    }
    Ok(names)
}

fn namespace_name(name: Option<String>) -> Result<String, RpcError> {
    name.filter(|n| !n.is_empty())
        .ok_or_else(|| RpcError::missing("namespaceName"))
}

fn bool_answer(value: bool) -> Answer {
    Ok(encode(&m::BoolResponse { value: Some(value) }))
}

/// Sets a switch from a one-boolean request and answers its previous value.
fn set_switch(param: &[u8], what: &str, switch: &std::sync::atomic::AtomicBool) -> Answer {
    let request = Call::decode::<m::SwitchRequest>(param, what)?;
    // An absent value is protobuf's default, as encoders that skip
    // default values (proto3-style) leave it out.
    bool_answer(Switches::swap(switch, request.on.unwrap_or(false)))
}

/// Answers a switch's value to a request that carries nothing.
fn read_switch(param: &[u8], what: &str, switch: &std::sync::atomic::AtomicBool) -> Answer {
    Call::decode::<m::Empty>(param, what)?;
    bool_answer(Switches::get(switch))
}

// ---- tables ----

/// By names: the tables that exist (a missing one is left out, which is
/// how HBase's clients learn a table does not exist). Otherwise by
/// pattern, namespace and whether system tables are wanted.
fn get_table_descriptors(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request =
        Call::decode::<m::GetTableDescriptorsRequest>(param, "GetTableDescriptorsRequest")?;
    let names = if request.table_names.is_empty() {
        listed_tables(
            call,
            request.regex.as_deref(),
            request.include_sys_tables.unwrap_or(false),
            request.namespace.as_deref(),
        )?
    } else {
        request
            .table_names
            .iter()
            .map(meta::table_name_text)
            .collect::<Result<Vec<_>, _>>()?
    };
    Ok(encode(&m::GetTableDescriptorsResponse {
        table_schema: schemas_of(call, &names)?,
    }))
}

fn get_table_names(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::GetTableNamesRequest>(param, "GetTableNamesRequest")?;
    let names = listed_tables(
        call,
        request.regex.as_deref(),
        request.include_sys_tables.unwrap_or(false),
        request.namespace.as_deref(),
    )?;
    Ok(encode(&m::TableNamesResponse {
        table_names: names.iter().map(|n| table_name_proto(n)).collect(),
    }))
}

fn get_table_state(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::TableRequest>(param, "GetTableStateRequest")?;
    let name = table_name(request.table_name.as_ref(), "table_name")?;
    let enabled = is_system_table(&name) || call.db.is_table_enabled(&name)?;
    let state = if enabled {
        TableStateCode::Enabled
    } else {
        TableStateCode::Disabled
    };
    Ok(encode(&m::GetTableStateResponse {
        table_state: Some(m::TableState {
            state: Some(state as i32),
        }),
    }))
}

/// Schema changes apply to every region before the call answers: none is
/// ever left to update.
fn get_schema_alter_status(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::TableRequest>(param, "GetSchemaAlterStatusRequest")?;
    let name = table_name(request.table_name.as_ref(), "table_name")?;
    let regions = if is_system_table(&name) {
        1
    } else {
        call.db.list_regions(&name)?.len()
    };
    Ok(encode(&m::GetSchemaAlterStatusResponse {
        yet_to_update_regions: Some(0),
        total_regions: Some(u32::try_from(regions).unwrap_or(u32::MAX)),
    }))
}

/// Creates the table pre-split at the keys given. HBase's Java client
/// sorts the keys before sending them; others may not, and the order
/// carries no meaning, so they are sorted here too (duplicates and empty
/// keys are still refused by Basalt).
fn create_table(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::CreateTableRequest>(param, "CreateTableRequest")?;
    let table_schema = request
        .table_schema
        .as_ref()
        .ok_or_else(|| RpcError::missing("table_schema"))?;
    let descriptor = schema::table_descriptor(table_schema)?;
    if is_system_table(descriptor.name()) {
        return Err(Error::TableExists(descriptor.name().to_string()).into());
    }
    let mut splits: Vec<Bytes> = request.split_keys.into_iter().map(Bytes::from).collect();
    splits.sort();
    call.db.create_table_with_splits(descriptor, &splits)?;
    procedure_answer(submitted)
}

fn delete_table(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::TableRequest>(param, "DeleteTableRequest")?;
    let name = table_name(request.table_name.as_ref(), "table_name")?;
    refuse_meta(&name)?;
    call.db.drop_table(&name)?;
    procedure_answer(submitted)
}

/// HBase's truncate: the core's `AdminRequest::Truncate` (a disabled
/// table emptied and left enabled, in one region unless `preserveSplits`),
/// the same for every gateway.
fn truncate_table(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::TruncateTableRequest>(param, "TruncateTableRequest")?;
    let name = table_name(request.table_name.as_ref(), "tableName")?;
    refuse_meta(&name)?;
    basalt::admin::Admin::execute(
        call.db,
        basalt::AdminRequest::Truncate {
            table: name,
            preserve_splits: request.preserve_splits.unwrap_or(false),
        },
    )?;
    procedure_answer(submitted)
}

fn enable_table(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::TableRequest>(param, "EnableTableRequest")?;
    let name = table_name(request.table_name.as_ref(), "table_name")?;
    refuse_meta(&name)?;
    call.db.enable_table(&name)?;
    procedure_answer(submitted)
}

fn disable_table(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::TableRequest>(param, "DisableTableRequest")?;
    let name = table_name(request.table_name.as_ref(), "table_name")?;
    refuse_meta(&name)?;
    call.db.disable_table(&name)?;
    procedure_answer(submitted)
}

/// The table's families become exactly those given: new ones added,
/// missing ones deleted (with their data), the others replaced whole
/// (options left out take their defaults, as in HBase, whose new
/// descriptor is the one sent).
fn modify_table(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::ModifyTableRequest>(param, "ModifyTableRequest")?;
    let name = table_name(request.table_name.as_ref(), "table_name")?;
    refuse_meta(&name)?;
    let table_schema = request
        .table_schema
        .as_ref()
        .ok_or_else(|| RpcError::missing("table_schema"))?;
    let wanted = schema::table_descriptor(table_schema)?;
    if wanted.name() != name {
        return Err(RpcError::do_not_retry(format!(
            "ModifyTable of {name} carries the schema of {}; a table cannot be renamed",
            wanted.name()
        )));
    }
    let current = call.db.table(&name)?.descriptor();
    let mut changes = Vec::new();
    for family in current.families() {
        if wanted.get_family(family.name().as_bytes()).is_none() {
            changes.push(FamilyChange::Delete(family.name().to_string()));
        }
    }
    for family in wanted.families() {
        changes.push(match current.get_family(family.name().as_bytes()) {
            Some(_) => FamilyChange::Modify(family.clone()),
            None => FamilyChange::Add(family.clone()),
        });
    }
    call.db.alter_table(&name, &changes)?;
    procedure_answer(submitted)
}

/// The table's descriptor, for a family operation on it.
fn families_of(call: &Call<'_>, name: &str) -> Result<basalt::TableDescriptor, RpcError> {
    refuse_meta(name)?;
    Ok(call.db.table(name)?.descriptor())
}

fn add_column(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::ColumnRequest>(param, "AddColumnRequest")?;
    let name = table_name(request.table_name.as_ref(), "table_name")?;
    let family = schema::family_descriptor(
        request
            .column_families
            .as_ref()
            .ok_or_else(|| RpcError::missing("column_families"))?,
    )?;
    if families_of(call, &name)?
        .get_family(family.name().as_bytes())
        .is_some()
    {
        return Err(family_error(format!(
            "column family '{}' already exists in table '{name}'; it cannot be added again",
            family.name()
        )));
    }
    call.db.alter_table(&name, &[FamilyChange::Add(family)])?;
    procedure_answer(submitted)
}

/// The family given replaces the old one whole: options left out take
/// their defaults (HBase's new descriptor is the one sent).
fn modify_column(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::ColumnRequest>(param, "ModifyColumnRequest")?;
    let name = table_name(request.table_name.as_ref(), "table_name")?;
    let family = schema::family_descriptor(
        request
            .column_families
            .as_ref()
            .ok_or_else(|| RpcError::missing("column_families"))?,
    )?;
    if families_of(call, &name)?
        .get_family(family.name().as_bytes())
        .is_none()
    {
        return Err(family_error(format!(
            "column family '{}' does not exist in table '{name}'; it cannot be modified",
            family.name()
        )));
    }
    call.db
        .alter_table(&name, &[FamilyChange::Modify(family)])?;
    procedure_answer(submitted)
}

fn delete_column(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::DeleteColumnRequest>(param, "DeleteColumnRequest")?;
    let name = table_name(request.table_name.as_ref(), "table_name")?;
    let column = request
        .column_name
        .ok_or_else(|| RpcError::missing("column_name"))?;
    let shown = String::from_utf8_lossy(&column).into_owned();
    let current = families_of(call, &name)?;
    if current.get_family(&column).is_none() {
        return Err(family_error(format!(
            "column family '{shown}' does not exist in table '{name}'; it cannot be deleted"
        )));
    }
    if current.families().len() == 1 {
        return Err(family_error(format!(
            "column family '{shown}' is the only one of table '{name}'; it cannot be deleted"
        )));
    }
    call.db.alter_table(&name, &[FamilyChange::Delete(shown)])?;
    procedure_answer(submitted)
}

// ---- namespaces ----

fn create_namespace(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::NamespaceRequest>(param, "CreateNamespaceRequest")?;
    let namespace = schema::namespace_descriptor(
        request
            .namespace_descriptor
            .as_ref()
            .ok_or_else(|| RpcError::missing("namespaceDescriptor"))?,
    )?;
    call.db.create_namespace(namespace)?;
    procedure_answer(submitted)
}

/// HBase replaces the namespace's configuration with the one given: keys
/// it no longer names are removed.
fn modify_namespace(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::NamespaceRequest>(param, "ModifyNamespaceRequest")?;
    let wanted = schema::namespace_descriptor(
        request
            .namespace_descriptor
            .as_ref()
            .ok_or_else(|| RpcError::missing("namespaceDescriptor"))?,
    )?;
    let current = call.db.describe_namespace(&wanted.name)?;
    basalt::admin::Admin::execute(
        call.db,
        basalt::AdminRequest::modify_namespace(&current, wanted),
    )?;
    procedure_answer(submitted)
}

fn delete_namespace(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::NamespaceNameRequest>(param, "DeleteNamespaceRequest")?;
    call.db
        .drop_namespace(&namespace_name(request.namespace_name)?)?;
    procedure_answer(submitted)
}

fn get_namespace_descriptor(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::NamespaceNameRequest>(param, "GetNamespaceDescriptorRequest")?;
    let namespace = call
        .db
        .describe_namespace(&namespace_name(request.namespace_name)?)?;
    Ok(encode(&m::GetNamespaceDescriptorResponse {
        namespace_descriptor: Some(schema::namespace_message(&namespace)),
    }))
}

fn list_namespace_descriptors(call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<m::Empty>(param, "ListNamespaceDescriptorsRequest")?;
    Ok(encode(&m::ListNamespaceDescriptorsResponse {
        namespace_descriptor: call
            .db
            .list_namespaces()
            .iter()
            .map(schema::namespace_message)
            .collect(),
    }))
}

fn list_namespaces(call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<m::Empty>(param, "ListNamespacesRequest")?;
    Ok(encode(&m::ListNamespacesResponse {
        namespace_name: call
            .db
            .list_namespaces()
            .into_iter()
            .map(|n| n.name)
            .collect(),
    }))
}

fn list_table_descriptors_by_namespace(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request =
        Call::decode::<m::NamespaceNameRequest>(param, "ListTableDescriptorsByNamespaceRequest")?;
    let names = namespace_tables(call, &namespace_name(request.namespace_name)?)?;
    Ok(encode(&m::ListTableDescriptorsByNamespaceResponse {
        table_schema: schemas_of(call, &names)?,
    }))
}

fn list_table_names_by_namespace(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request =
        Call::decode::<m::NamespaceNameRequest>(param, "ListTableNamesByNamespaceRequest")?;
    let names = namespace_tables(call, &namespace_name(request.namespace_name)?)?;
    Ok(encode(&m::TableNamesResponse {
        table_names: names.iter().map(|n| table_name_proto(n)).collect(),
    }))
}

// ---- the master and the cluster ----

fn is_master_running(_call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<m::Empty>(param, "IsMasterRunningRequest")?;
    bool_answer(true)
}

fn is_master_in_maintenance_mode(_call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<m::Empty>(param, "IsInMaintenanceModeRequest")?;
    bool_answer(false)
}

fn get_cluster_status(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request =
        Call::decode::<status::GetClusterStatusRequest>(param, "GetClusterStatusRequest")?;
    let cluster_status = if call.db.cluster().is_some() {
        members_status(call, &request.options)?
    } else {
        cluster_status(call, &request.options)
    };
    Ok(encode(&status::GetClusterStatusResponse {
        cluster_status: Some(cluster_status),
    }))
}

/// A `host,port,startcode` name as HBase's `ServerName` message; a name
/// that is not one (never written by Basalt) is carried whole as the host.
fn server_name_proto(name: &str) -> pb::ServerName {
    match basalt::cluster::ServerName::parse(name) {
        Ok(n) => pb::ServerName {
            host_name: n.host,
            port: Some(u32::from(n.port)),
            start_code: Some(n.start_code),
        },
        Err(_) => pb::ServerName {
            host_name: name.to_string(),
            port: None,
            start_code: None,
        },
    }
}

/// HBase's `RegionState.State` number for a state name of the catalog
/// (the generated enum names only the states one process reaches).
fn region_state_code(state: &str) -> i32 {
    match state {
        "OFFLINE" => 0,
        "OPENING" => 2,
        "OPEN" => 3,
        "CLOSING" => 5,
        "CLOSED" => 6,
        "SPLIT" => 8,
        "FAILED_OPEN" => 9,
        "MERGED" => 12,
        // Anything newer is reported as not served rather than guessed.
        _ => 0,
    }
}

/// The cluster as its active master sees it: every live region server
/// with its regions (loads for those held here, the others by name only),
/// the dead servers and the regions in transition. Only the parts asked
/// for are filled in, as in one process.
fn members_status(call: &Call<'_>, options: &[i32]) -> Result<status::ClusterStatus, RpcError> {
    let ctx = call.ctx;
    let want = |o: StatusOption| options.is_empty() || options.contains(&(o as i32));
    let basalt::cluster::MasterAnswer::Status(cluster) =
        ctx.db.master_call(basalt::cluster::MasterCall::Status)?
    else {
        return Err(RpcError::do_not_retry(
            "the master answered its status with something else".to_string(),
        ));
    };
    let now = now_millis();
    // Every region of the catalog by encoded name: full names and key
    // ranges for the answer.
    let mut regions: std::collections::BTreeMap<String, basalt::RegionSummary> =
        std::collections::BTreeMap::new();
    for name in ctx.db.list_tables() {
        // A table dropped since the listing is not part of the answer.
        if let Ok(list) = ctx.db.list_regions(&name) {
            regions.extend(list.into_iter().map(|r| (r.info.encoded_name(), r)));
        }
    }
    let here = ctx.db.server_name();
    let mut out = status::ClusterStatus::default();
    if want(StatusOption::HbaseVersion) {
        out.hbase_version = Some(status::HBaseVersionFileContent {
            version: Some(HBASE_VERSION.to_string()),
        });
    }
    if want(StatusOption::ClusterId) {
        out.cluster_id = Some(pb::ClusterId {
            cluster_id: ctx.identity.cluster_id.clone(),
        });
    }
    if want(StatusOption::Master) {
        out.master = Some(server_name_proto(&cluster.master));
    }
    if want(StatusOption::BackupMasters) {
        out.backup_masters = cluster
            .backup_masters
            .iter()
            .map(|s| server_name_proto(s))
            .collect();
    }
    if want(StatusOption::BalancerOn) {
        out.balancer_on = ctx.db.balancer_switch(None).ok();
    }
    if want(StatusOption::ServersName) {
        out.servers_name = cluster
            .servers
            .iter()
            .map(|s| server_name_proto(&s.name))
            .collect();
    }
    if want(StatusOption::LiveServers) {
        for server in &cluster.servers {
            let mine = here == Some(server.name.as_str());
            // Every region server answers the system tables (from the
            // catalog).
            let mut loads = system_region_loads(None);
            let held: Vec<&basalt::RegionSummary> = server
                .regions
                .iter()
                .filter_map(|encoded| regions.get(encoded))
                .collect();
            // Another server's regions: what it reported to the master
            // for this status, if it answered in time.
            let reported: BTreeMap<u64, &basalt::cluster::RegionLoadReport> = server
                .region_loads
                .iter()
                .flatten()
                .map(|l| (l.region, l))
                .collect();
            loads.extend(held.iter().map(|r| {
                if mine {
                    return region_load(r);
                }
                let mut load = status::RegionLoad {
                    region_specifier: Some(region_name_spec(&r.info.region_name())),
                    ..status::RegionLoad::default()
                };
                if let Some(l) = reported.get(&r.info.id) {
                    load.storefiles = Some(u32::try_from(l.store_files).unwrap_or(u32::MAX));
                    load.storefile_size_mb = Some(mib(l.store_file_bytes));
                    load.store_uncompressed_size_mb = Some(mib(l.store_file_bytes));
                    load.mem_store_size_mb = Some(mib(l.memstore_bytes));
                    load.read_requests_count = Some(l.read_requests);
                    load.write_requests_count = Some(l.write_requests);
                    load.filtered_read_requests_count = l.filtered_read_requests;
                }
                load
            }));
            let (reads, writes, rate) = if mine {
                (
                    held.iter().map(|r| r.load.read_requests).sum::<u64>(),
                    held.iter().map(|r| r.load.write_requests).sum::<u64>(),
                    held.iter()
                        .map(|r| r.load.read_requests_per_sec + r.load.write_requests_per_sec)
                        .sum::<f64>(),
                )
            } else {
                let reports = reported.values();
                (
                    reports.clone().map(|l| l.read_requests).sum::<u64>(),
                    reports.clone().map(|l| l.write_requests).sum::<u64>(),
                    reports.map(|l| l.requests_per_sec).sum::<f64>(),
                )
            };
            out.live_servers.push(status::LiveServerInfo {
                server: Some(server_name_proto(&server.name)),
                server_load: Some(status::ServerLoad {
                    number_of_requests: Some(rate.round() as u64),
                    total_number_of_requests: Some(reads.saturating_add(writes)),
                    used_heap_mb: Some(if mine { mib(memory_used(ctx)) } else { 0 }),
                    max_heap_mb: Some(if mine {
                        mib(memory_budget(ctx)).max(1)
                    } else {
                        1
                    }),
                    region_loads: loads,
                    report_start_time: mine.then_some(ctx.identity.start_code),
                    report_end_time: Some(now),
                    info_server_port: Some(0),
                }),
            });
        }
    }
    if want(StatusOption::DeadServers) {
        out.dead_servers = cluster
            .dead_servers
            .iter()
            .map(|s| server_name_proto(s))
            .collect();
    }
    if want(StatusOption::RegionsInTransition) {
        for t in &cluster.in_transition {
            let Some(r) = regions.get(&t.region) else {
                continue;
            };
            out.regions_in_transition.push(status::RegionInTransition {
                spec: Some(region_name_spec(&r.info.region_name())),
                region_state: Some(status::RegionState {
                    region_info: Some(meta::region_info_proto(&r.info)),
                    state: Some(region_state_code(&t.state)),
                    stamp: Some(now),
                }),
            });
        }
    }
    Ok(out)
}

/// The cluster: this process as master and only region server, with the
/// loads of the regions it serves (`hbase:meta`'s included). Only the
/// parts asked for are filled in; no option asks for all, as in HBase.
fn cluster_status(call: &Call<'_>, options: &[i32]) -> status::ClusterStatus {
    let ctx = call.ctx;
    let want = |o: StatusOption| options.is_empty() || options.contains(&(o as i32));
    let now = now_millis();
    let mut out = status::ClusterStatus::default();
    if want(StatusOption::HbaseVersion) {
        out.hbase_version = Some(status::HBaseVersionFileContent {
            version: Some(HBASE_VERSION.to_string()),
        });
    }
    if want(StatusOption::ClusterId) {
        out.cluster_id = Some(pb::ClusterId {
            cluster_id: ctx.identity.cluster_id.clone(),
        });
    }
    if want(StatusOption::Master) {
        out.master = Some(ctx.identity.master());
    }
    if want(StatusOption::BalancerOn) {
        out.balancer_on = ctx.db.balancer_switch(None).ok();
    }
    if want(StatusOption::ServersName) {
        out.servers_name = vec![ctx.identity.region_server()];
    }
    if want(StatusOption::LiveServers) {
        let regions = online_regions(ctx);
        let mut loads = system_region_loads(None);
        loads.extend(regions.iter().map(region_load));
        let reads: u64 = regions.iter().map(|r| r.load.read_requests).sum();
        let writes: u64 = regions.iter().map(|r| r.load.write_requests).sum();
        let rate: f64 = regions
            .iter()
            .map(|r| r.load.read_requests_per_sec + r.load.write_requests_per_sec)
            .sum();
        out.live_servers = vec![status::LiveServerInfo {
            server: Some(ctx.identity.region_server()),
            server_load: Some(status::ServerLoad {
                number_of_requests: Some(rate.round() as u64),
                total_number_of_requests: Some(reads.saturating_add(writes)),
                // Basalt has no Java heap; what plays its part is the
                // memory the server budgets: memstores plus block cache,
                // used and configured (the shell's `status` shows the same).
                used_heap_mb: Some(mib(memory_used(ctx))),
                max_heap_mb: Some(mib(memory_budget(ctx)).max(1)),
                region_loads: loads,
                report_start_time: Some(ctx.identity.start_code),
                report_end_time: Some(now),
                info_server_port: Some(0),
            }),
        }];
    }
    let want_transitions = want(StatusOption::RegionsInTransition);
    let want_counts = want(StatusOption::TableToRegionsCount);
    if want_transitions || want_counts {
        if want_counts {
            for table in SYSTEM_TABLES {
                out.table_region_states_count
                    .push(region_states_count(table, 1, 0, 0));
            }
        }
        for name in ctx.db.list_tables() {
            // A table dropped since the listing is not part of the answer.
            let Ok(info) = ctx.db.describe_table(&name) else {
                continue;
            };
            let failed: Vec<_> = info
                .regions
                .iter()
                .filter(|r| r.state != RegionState::Open)
                .collect();
            if want_transitions && info.enabled {
                out.regions_in_transition.extend(failed.iter().map(|r| {
                    status::RegionInTransition {
                        spec: Some(region_name_spec(&r.info.region_name())),
                        region_state: Some(status::RegionState {
                            region_info: Some(meta::region_info_proto(&r.info)),
                            state: Some(RegionStateCode::FailedOpen as i32),
                            stamp: Some(now),
                        }),
                    }
                }));
            }
            if want_counts {
                let total = info.regions.len();
                let (open, closed, failed) = if info.enabled {
                    (total - failed.len(), 0, failed.len())
                } else {
                    (0, total, 0)
                };
                out.table_region_states_count
                    .push(region_states_count(&name, open, closed, failed));
            }
        }
    }
    out
}

fn region_states_count(
    table: &str,
    open: usize,
    closed: usize,
    in_transition: usize,
) -> status::TableRegionStatesCount {
    let count = |n: usize| Some(u32::try_from(n).unwrap_or(u32::MAX));
    status::TableRegionStatesCount {
        table_name: Some(table_name_proto(table)),
        region_states_count: Some(status::RegionStatesCount {
            open_regions: count(open),
            split_regions: count(0),
            closed_regions: count(closed),
            regions_in_transition: count(in_transition),
            total_regions: count(open + closed + in_transition),
        }),
    }
}

/// `Database::balance`: in a cluster the active master evens region
/// counts, then load; with one region server there is never a region to
/// move, so a run moves nothing. It does not run while the balancer
/// switch is off, nor (in a cluster) while regions are in transition
/// unless `ignore_rit`, as HBase answers. A dry run only says whether a
/// run would happen: the master plans and moves in one step.
fn balance(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::BalanceRequest>(param, "BalanceRequest")?;
    let db = &call.db;
    if request.dry_run.unwrap_or(false) {
        return Ok(encode(&m::BalanceResponse {
            balancer_ran: Some(db.balancer_switch(None)?),
            moves_calculated: Some(0),
            moves_executed: Some(0),
        }));
    }
    let (ran, moved) = match db.balance(request.ignore_rit.unwrap_or(false))? {
        basalt::cluster::BalancerRun::Moved(moved) => (true, moved),
        basalt::cluster::BalancerRun::NotRun(_) => (false, 0),
    };
    let moved = Some(u32::try_from(moved).unwrap_or(u32::MAX));
    Ok(encode(&m::BalanceResponse {
        balancer_ran: Some(ran),
        moves_calculated: moved,
        moves_executed: moved,
    }))
}

/// The balancer switch lives in the catalog (`Database::balancer_switch`),
/// so every process of a cluster, and a master that takes over, answers
/// the same value.
fn set_balancer_running(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::SwitchRequest>(param, "SetBalancerRunningRequest")?;
    // An absent value is protobuf's default (see `set_switch`).
    bool_answer(call.db.balancer_switch(Some(request.on.unwrap_or(false)))?)
}

fn is_balancer_enabled(call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<m::Empty>(param, "IsBalancerEnabledRequest")?;
    bool_answer(call.db.balancer_switch(None)?)
}

/// `Database::normalize` (docs/normalizer.md): merges small cold
/// neighbours and splits oversized regions, in a cluster by the active
/// master. Answers whether it ran: not while the normalizer switch is off
/// (as HBase answers), nor while regions are in transition. HBase's
/// request may name tables; Basalt normalizes every table.
fn normalize(call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<m::Empty>(param, "NormalizeRequest")?;
    bool_answer(call.db.normalize()?.ran)
}

/// The normalizer switch lives in the catalog
/// (`Database::normalizer_switch`), as the balancer's does.
fn set_normalizer_running(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::SwitchRequest>(param, "SetNormalizerRunningRequest")?;
    // An absent value is protobuf's default (see `set_switch`).
    bool_answer(
        call.db
            .normalizer_switch(Some(request.on.unwrap_or(false)))?,
    )
}

fn is_normalizer_enabled(call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<m::Empty>(param, "IsNormalizerEnabledRequest")?;
    bool_answer(call.db.normalizer_switch(None)?)
}

/// Basalt's janitor drops retired split and merge parents as soon as no
/// region links to their files (after the compaction that rewrites the
/// links), whatever the switch says: a scan on demand finds nothing left.
fn run_catalog_scan(_call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<m::Empty>(param, "RunCatalogScanRequest")?;
    Ok(encode(&m::RunCatalogScanResponse {
        scan_result: Some(0),
    }))
}

fn enable_catalog_janitor(call: &mut Call<'_>, param: &[u8]) -> Answer {
    set_switch(
        param,
        "EnableCatalogJanitorRequest",
        &call.ctx.switches.catalog_janitor,
    )
}

fn is_catalog_janitor_enabled(call: &mut Call<'_>, param: &[u8]) -> Answer {
    read_switch(
        param,
        "IsCatalogJanitorEnabledRequest",
        &call.ctx.switches.catalog_janitor,
    )
}

/// HBase's cleaner chore deletes archived WALs and files; Basalt deletes
/// its obsolete files as soon as they are unused, so there is nothing left
/// for a run on demand. It "runs" when the switch is on.
fn run_cleaner_chore(call: &mut Call<'_>, param: &[u8]) -> Answer {
    read_switch(
        param,
        "RunCleanerChoreRequest",
        &call.ctx.switches.cleaner_chore,
    )
}

fn set_cleaner_chore_running(call: &mut Call<'_>, param: &[u8]) -> Answer {
    set_switch(
        param,
        "SetCleanerChoreRunningRequest",
        &call.ctx.switches.cleaner_chore,
    )
}

fn is_cleaner_chore_enabled(call: &mut Call<'_>, param: &[u8]) -> Answer {
    read_switch(
        param,
        "IsCleanerChoreEnabledRequest",
        &call.ctx.switches.cleaner_chore,
    )
}

/// The snapshot cleanup switch is the catalog's (`Database::
/// snapshot_cleanup_switch`): while on, snapshots past their TTL are
/// deleted.
fn switch_snapshot_cleanup(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::SwitchRequest>(param, "SetSnapshotCleanupRequest")?;
    // An absent value is protobuf's default (see `set_switch`).
    bool_answer(switch_answer(basalt::admin::Admin::execute(
        call.db,
        basalt::AdminRequest::SnapshotCleanupSwitch {
            on: request.on.unwrap_or(false),
        },
    )?)?)
}

fn is_snapshot_cleanup_enabled(call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<m::Empty>(param, "IsSnapshotCleanupEnabledRequest")?;
    bool_answer(switch_answer(basalt::admin::Admin::execute(
        call.db,
        basalt::AdminRequest::SnapshotCleanupEnabled,
    )?)?)
}

fn switch_answer(reply: basalt::AdminReply) -> Result<bool, RpcError> {
    match reply {
        basalt::AdminReply::Switch { previous } => Ok(previous),
        other => Err(RpcError::do_not_retry(format!(
            "unexpected answer to a switch: {other:?}"
        ))),
    }
}

// ---- snapshots (docs/snapshots.md) ----

/// The snapshot a request describes, and its name (checked by the core).
fn described_snapshot(param: &[u8], what: &str) -> Result<m::SnapshotDescription, RpcError> {
    named_snapshot(Call::decode::<m::SnapshotRequest>(param, what)?.snapshot)
}

/// The request's snapshot description, which must name the snapshot.
fn named_snapshot(
    snapshot: Option<m::SnapshotDescription>,
) -> Result<m::SnapshotDescription, RpcError> {
    let snapshot = snapshot.ok_or_else(|| RpcError::missing("snapshot"))?;
    if snapshot.name.as_deref().unwrap_or("").is_empty() {
        return Err(RpcError::missing("snapshot.name"));
    }
    Ok(snapshot)
}

/// A snapshot description's table in Basalt's spelling (`default:t` is
/// `t`).
fn snapshot_table(snapshot: &m::SnapshotDescription) -> Result<String, RpcError> {
    let table = snapshot
        .table
        .as_deref()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| RpcError::missing("snapshot.table"))?;
    Ok(table.strip_prefix("default:").unwrap_or(table).to_string())
}

fn description(info: &basalt::cluster::SnapshotInfo) -> m::SnapshotDescription {
    use m::snapshot_description::Type;
    let kind = match info.kind.as_str() {
        "DISABLED" => Type::Disabled,
        "SKIPFLUSH" => Type::Skipflush,
        _ => Type::Flush,
    };
    m::SnapshotDescription {
        name: Some(info.name.clone()),
        table: Some(info.table.clone()),
        creation_time: Some(info.created_ms),
        r#type: Some(kind as i32),
        version: Some(2),
        owner: info.owner.clone(),
        ttl: Some(info.ttl_secs),
        max_file_size: None,
    }
}

fn snapshots(
    call: &Call<'_>,
    pattern: Option<String>,
) -> Result<Vec<basalt::cluster::SnapshotInfo>, RpcError> {
    match basalt::admin::Admin::execute(call.db, basalt::AdminRequest::ListSnapshots { pattern })? {
        basalt::AdminReply::Snapshots { snapshots } => Ok(snapshots),
        other => Err(RpcError::do_not_retry(format!(
            "unexpected answer to list_snapshots: {other:?}"
        ))),
    }
}

/// Basalt takes the snapshot before it answers, so the procedure id it
/// hands out polls as finished and `IsSnapshotDone` answers done.
fn snapshot(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::SnapshotRequest>(param, "SnapshotRequest")?;
    let nonce = basalt_types::Nonce::from_fields(request.nonce_group, request.nonce);
    let snapshot = named_snapshot(request.snapshot)?;
    let table = snapshot_table(&snapshot)?;
    let skip_flush = snapshot.r#type == Some(m::snapshot_description::Type::Skipflush as i32);
    basalt::admin::Admin::execute(
        call.db,
        basalt::AdminRequest::Snapshot {
            table,
            name: snapshot.name.unwrap_or_default(),
            skip_flush,
            ttl_secs: snapshot.ttl.unwrap_or(0),
            nonce,
        },
    )?;
    let id = finished_procedure(submitted);
    Ok(encode(&m::SnapshotResponse {
        expected_timeout: Some(0),
        proc_id: i64::try_from(id).ok(),
    }))
}

/// Done when the snapshot is complete; a name that is neither is HBase's
/// `UnknownSnapshotException`.
fn is_snapshot_done(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::SnapshotRequest>(param, "IsSnapshotDoneRequest")?;
    let name = request
        .snapshot
        .and_then(|s| s.name)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            RpcError::new(
                UNKNOWN_SNAPSHOT,
                "No snapshot name passed in request, can't figure out which snapshot you want to check.",
                true,
            )
        })?;
    let found = snapshots(call, None)?.into_iter().find(|s| s.name == name);
    match found {
        Some(info) => Ok(encode(&m::IsSnapshotDoneResponse {
            done: Some(true),
            snapshot: Some(description(&info)),
        })),
        None => Err(RpcError::new(
            UNKNOWN_SNAPSHOT,
            format!(
                "Snapshot '{name}' is not currently running or one of the known completed snapshots."
            ),
            true,
        )),
    }
}

const UNKNOWN_SNAPSHOT: &str = "org.apache.hadoop.hbase.snapshot.UnknownSnapshotException";

fn get_completed_snapshots(call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<m::Empty>(param, "GetCompletedSnapshotsRequest")?;
    Ok(encode(&m::GetCompletedSnapshotsResponse {
        snapshots: snapshots(call, None)?.iter().map(description).collect(),
    }))
}

fn delete_snapshot(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let snapshot = described_snapshot(param, "DeleteSnapshotRequest")?;
    basalt::admin::Admin::execute(
        call.db,
        basalt::AdminRequest::DeleteSnapshot {
            name: snapshot.name.unwrap_or_default(),
        },
    )?;
    Ok(encode(&m::Empty {}))
}

/// HBase's clients clone through this call too: the master restores when
/// the named table exists (it must be the snapshot's own, disabled) and
/// clones into a new table otherwise, as HBase's `restoreOrCloneSnapshot`.
fn restore_snapshot(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let snapshot = described_snapshot(param, "RestoreSnapshotRequest")?;
    let name = snapshot.name.clone().unwrap_or_default();
    // A request without a table (hbase-driver's `restore_snapshot` without
    // one) restores the snapshot's own table.
    let table = match snapshot.table.as_deref() {
        None | Some("") => None,
        Some(_) => Some(snapshot_table(&snapshot)?),
    };
    let request = if table
        .as_ref()
        .is_none_or(|table| call.db.list_tables().iter().any(|t| t == table))
    {
        let table = table.unwrap_or_default();
        let source = snapshots(call, None)?
            .into_iter()
            .find(|s| s.name == name)
            .ok_or_else(|| basalt::Error::SnapshotNotFound(name.clone()))?;
        if !table.is_empty() && source.table != table {
            return Err(RpcError::new(
                "org.apache.hadoop.hbase.snapshot.RestoreSnapshotException",
                format!(
                    "snapshot '{name}' is of table {}, not {table}: Basalt restores a snapshot into its own table only",
                    source.table
                ),
                true,
            ));
        }
        basalt::AdminRequest::RestoreSnapshot { name }
    } else {
        basalt::AdminRequest::CloneSnapshot {
            name,
            table: table.unwrap_or_default(),
        }
    };
    basalt::admin::Admin::execute(call.db, request)?;
    Ok(encode(&m::RestoreSnapshotResponse {
        proc_id: Some(finished_procedure(submitted)),
    }))
}

/// The core's split or merge switch a `MasterSwitchType` names: the
/// switches gate the splits and merges of every gateway, not only this
/// one's (`Database::split_or_merge_switch`).
fn switch_of(code: i32) -> Result<SplitOrMerge, RpcError> {
    match m::MasterSwitchType::try_from(code) {
        Ok(m::MasterSwitchType::Split) => Ok(SplitOrMerge::Split),
        Ok(m::MasterSwitchType::Merge) => Ok(SplitOrMerge::Merge),
        Err(_) => Err(RpcError::do_not_retry(format!(
            "unknown MasterSwitchType {code}"
        ))),
    }
}

fn set_split_or_merge_enabled(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request =
        Call::decode::<m::SetSplitOrMergeEnabledRequest>(param, "SetSplitOrMergeEnabledRequest")?;
    // Absent fields read as protobuf's defaults (see `set_switch`).
    let enabled = request.enabled.unwrap_or(false);
    let switches = request
        .switch_types
        .iter()
        .map(|&code| switch_of(code))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(encode(&m::SetSplitOrMergeEnabledResponse {
        prev_value: switches
            .into_iter()
            .map(|s| call.db.split_or_merge_switch(s, Some(enabled)))
            .collect::<basalt::Result<Vec<bool>>>()?,
    }))
}

fn is_split_or_merge_enabled(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request =
        Call::decode::<m::IsSplitOrMergeEnabledRequest>(param, "IsSplitOrMergeEnabledRequest")?;
    let code = request
        .switch_type
        .unwrap_or(m::MasterSwitchType::Split as i32);
    bool_answer(call.db.split_or_merge_switch(switch_of(code)?, None)?)
}

// ---- regions ----

/// Refuses a split or merge the client turned off, as HBase does (the
/// core's check, which the other gateways' splits and merges run too).
fn check_switch(call: &Call<'_>, which: SplitOrMerge) -> Result<(), RpcError> {
    call.db
        .check_split_or_merge(which)
        .map_err(|e| RpcError::do_not_retry(e.detail()))
}

/// Splits the region at `split_row`, or near the middle of its data
/// without one. The region is named by its `RegionInfo`: found by table
/// and region id among the regions served now.
fn split_region(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::SplitTableRegionRequest>(param, "SplitTableRegionRequest")?;
    check_switch(call, SplitOrMerge::Split)?;
    let info = request
        .region_info
        .as_ref()
        .ok_or_else(|| RpcError::missing("region_info"))?;
    let table = table_name(info.table_name.as_ref(), "region_info.table_name")?;
    if is_system_table(&table) {
        return Err(RpcError::do_not_retry(format!(
            "{table} has one region and cannot be split"
        )));
    }
    let region = call
        .db
        .list_regions(&table)?
        .into_iter()
        .find(|r| r.info.id == info.region_id)
        .ok_or_else(|| {
            unknown_region(format!(
                "table {table} has no region with id {} (it split or merged since)",
                info.region_id
            ))
        })?;
    let split_row = request.split_row.as_deref().filter(|k| !k.is_empty());
    call.db
        .split_region(region.info.encoded_name().as_bytes(), split_row)?;
    procedure_answer(submitted)
}

/// Merges two or more adjacent regions of a table into one, left to
/// right (Basalt merges two at a time; each step is committed). `forcible`
/// cannot make regions that are not adjacent mergeable: Basalt refuses
/// them whatever it says.
fn merge_table_regions(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<m::MergeTableRegionsRequest>(param, "MergeTableRegionsRequest")?;
    check_switch(call, SplitOrMerge::Merge)?;
    if request.region.len() < 2 {
        return Err(RpcError::do_not_retry(format!(
            "a merge needs at least two regions; {} given",
            request.region.len()
        )));
    }
    let mut regions = Vec::with_capacity(request.region.len());
    for spec in &request.region {
        match known_region(call, Some(spec))? {
            Target::Region { info, .. } => regions.push(info),
            Target::Meta => {
                return Err(RpcError::do_not_retry(
                    "hbase:meta has one region and cannot be merged",
                ))
            }
            Target::Namespace => {
                return Err(RpcError::do_not_retry(
                    "hbase:namespace has one region and cannot be merged",
                ))
            }
        }
    }
    regions.sort_by(|a, b| a.start_key.cmp(&b.start_key));
    let db = &call.db;
    let mut merged = regions[0].clone();
    for next in &regions[1..] {
        db.merge_regions(
            merged.encoded_name().as_bytes(),
            next.encoded_name().as_bytes(),
        )?;
        // The merged region starts where the first one did.
        merged = db
            .list_regions(&merged.table)?
            .into_iter()
            .map(|r| r.info)
            .find(|r| r.start_key == merged.start_key)
            .ok_or_else(|| RpcError::do_not_retry("the merged region vanished"))?;
    }
    procedure_answer(submitted)
}

/// `MoveRegion`'s parameter: HBase's `MoveRegionRequest` (the shared
/// `RegionRequest` has no destination).
#[derive(Clone, PartialEq, prost::Message)]
struct MoveRegionRequest {
    /// The region.
    #[prost(message, optional, tag = "1")]
    region: Option<pb::RegionSpecifier>,
    /// Where to; absent: a server the master picks.
    #[prost(message, optional, tag = "2")]
    dest_server_name: Option<pb::ServerName>,
}

/// The encoded name a specifier gives, for the cluster's master (which
/// knows every region, wherever it is open). `hbase:meta` is served by
/// every region server and is never moved.
fn encoded_of(spec: Option<&pb::RegionSpecifier>) -> Result<String, RpcError> {
    let spec = spec.ok_or_else(|| RpcError::missing("region specifier"))?;
    let text = String::from_utf8_lossy(&spec.value);
    if spec.value == meta::META_REGION_NAME || spec.value == meta::META_ENCODED_NAME {
        return Err(RpcError::do_not_retry(
            "hbase:meta is served by every region server and is not moved".to_string(),
        ));
    }
    if namespace_table::is_region(&spec.value, true)
        || namespace_table::is_region(&spec.value, false)
    {
        return Err(RpcError::do_not_retry(
            "hbase:namespace is served by every region server and is not moved".to_string(),
        ));
    }
    basalt::admin::encoded_region(&text).map_err(|e| unknown_region(e.to_string()))
}

/// `AssignRegion`, `UnassignRegion` and `MoveRegion` in one process: with
/// one region server every region is assigned to it and has nowhere else
/// to go, so a region that exists is answered with success and left as it
/// is (an unassign does not close it: the only server would have to
/// reopen it). One that does not exist is an `UnknownRegionException`, as
/// from HBase's master. In a cluster each is the master's call.
fn assign_region(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::RegionRequest>(param, "RegionRequest")?;
    region_call(call, request.region.as_ref(), |region| {
        basalt::cluster::MasterCall::Assign { region }
    })
}

/// See [`assign_region`].
fn unassign_region(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::RegionRequest>(param, "RegionRequest")?;
    region_call(call, request.region.as_ref(), |region| {
        basalt::cluster::MasterCall::Unassign { region }
    })
}

/// See [`assign_region`].
fn move_region(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<MoveRegionRequest>(param, "MoveRegionRequest")?;
    let target = request.dest_server_name.map(|n| {
        format!(
            "{},{},{}",
            n.host_name,
            n.port.unwrap_or(0),
            n.start_code.unwrap_or(0)
        )
    });
    region_call(call, request.region.as_ref(), |region| {
        basalt::cluster::MasterCall::Move { region, target }
    })
}

/// A master call about one region: in a cluster, the call made from the
/// region's encoded name goes to the active master; in one process the
/// region only has to exist (there is nowhere else for it to go).
fn region_call(
    call: &mut Call<'_>,
    region: Option<&pb::RegionSpecifier>,
    master_call: impl FnOnce(String) -> basalt::cluster::MasterCall,
) -> Answer {
    if call.db.cluster().is_some() {
        let encoded = encoded_of(region)?;
        call.db.master_call(master_call(encoded))?;
        return Ok(encode(&m::Empty {}));
    }
    known_region(call, region)?;
    Ok(encode(&m::Empty {}))
}

// ---- procedures ----

fn get_procedure_result(_call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::GetProcedureResultRequest>(param, "GetProcedureResultRequest")?;
    // Id 0 is never handed out: an absent id answers NOT_FOUND.
    let id = request.proc_id.unwrap_or(0);
    Ok(encode(&match find_procedure(id) {
        Some(p) => m::GetProcedureResultResponse {
            state: Some(ProcState::Finished as i32),
            submitted_time: Some(p.submitted),
            last_update: Some(p.finished),
        },
        None => m::GetProcedureResultResponse {
            state: Some(ProcState::NotFound as i32),
            submitted_time: None,
            last_update: None,
        },
    }))
}

/// The signature of a named procedure, refusing all but the table flush
/// (HBase's `Admin.flush(table)` runs `flush-table-proc`).
fn flush_procedure(
    procedure: Option<&m::ProcedureDescription>,
) -> Result<&m::ProcedureDescription, RpcError> {
    let procedure = procedure.ok_or_else(|| RpcError::missing("procedure"))?;
    match procedure.signature.as_deref() {
        Some(FLUSH_TABLE_PROCEDURE) => Ok(procedure),
        other => Err(RpcError::do_not_retry(format!(
            "procedure {} is not served by Basalt (only {FLUSH_TABLE_PROCEDURE} is)",
            other.unwrap_or("(no signature)")
        ))),
    }
}

/// `flush-table-proc`: flushes every region of the table named by the
/// instance before answering. A `columnfamily` option flushes the whole
/// table: Basalt flushes regions, not single families.
fn exec_procedure(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::ExecProcedureRequest>(param, "ExecProcedureRequest")?;
    let procedure = flush_procedure(request.procedure.as_ref())?;
    let instance = procedure
        .instance
        .as_deref()
        .filter(|i| !i.is_empty())
        .ok_or_else(|| RpcError::missing("the table to flush (instance)"))?;
    let name = match instance.split_once(':') {
        Some((ns, q)) if ns == basalt::DEFAULT_NAMESPACE => q,
        _ => instance,
    };
    // The system tables live in Basalt's catalog: nothing to flush.
    if !is_system_table(name) {
        call.db.flush_table(name)?;
    }
    Ok(encode(&m::ExecProcedureResponse {
        expected_timeout: Some(EXEC_PROCEDURE_TIMEOUT_MS),
        return_data: None,
    }))
}

/// A flush is done when `ExecProcedure` answers.
fn is_procedure_done(_call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<m::IsProcedureDoneRequest>(param, "IsProcedureDoneRequest")?;
    flush_procedure(request.procedure.as_ref())?;
    Ok(encode(&m::IsProcedureDoneResponse { done: Some(true) }))
}

// ---- replication peers ----

/// HBase's class for the peer failures its master does not make final
/// (the modification switch off, the state of an unknown peer): the
/// client retries them.
const IO_EXCEPTION: &str = "java.io.IOException";

fn peer_id(id: Option<String>) -> Result<String, RpcError> {
    id.ok_or_else(|| RpcError::missing("peer_id"))
}

/// HBase's master refuses every peer change while the modification switch
/// is off, before looking at the request, with a plain (retried)
/// `IOException`. The master checks the switch again as it commits.
fn check_peer_modification(call: &Call<'_>) -> Result<(), RpcError> {
    if call.db.replication_peer_modification_switch(None)? {
        Ok(())
    } else {
        Err(RpcError::new(
            IO_EXCEPTION,
            "Replication peer modification disabled",
            false,
        ))
    }
}

/// A peer's configuration from a request, checked as HBase's master checks
/// it before its other rules: the cluster key's form, then (for a peer
/// that is another HBase cluster) its ZooKeeper, which must answer and
/// must not be this cluster's (`replication.rs`).
fn checked_peer_config(
    call: &Call<'_>,
    message: Option<&crate::proto::replication::ReplicationPeer>,
) -> Result<basalt::replication::PeerConfig, RpcError> {
    let config =
        replication::peer_config(message.ok_or_else(|| RpcError::missing("peer_config"))?)?;
    replication::check_peer_cluster(call.ctx, &config)?;
    Ok(config)
}

/// Adds a peer (HBase's `Admin.addReplicationPeer`): a procedure in
/// HBase, whose id the client polls; done when Basalt answers. Basalt
/// keeps the peer and ships no edits to it.
fn add_replication_peer(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request =
        Call::decode::<rp::AddReplicationPeerRequest>(param, "AddReplicationPeerRequest")?;
    check_peer_modification(call)?;
    let id = peer_id(request.peer_id)?;
    basalt::replication::check_peer_id(&id)?;
    let config = checked_peer_config(call, request.peer_config.as_ref())?;
    call.db.change_replication_peer(PeerChange::Add {
        id,
        config,
        enabled: replication::is_enabled(request.peer_state.as_ref()),
    })?;
    procedure_answer(submitted)
}

/// One peer change naming only the peer.
fn peer_change(
    call: &mut Call<'_>,
    param: &[u8],
    what: &str,
    change: impl FnOnce(String) -> PeerChange,
) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<rp::PeerIdRequest>(param, what)?;
    check_peer_modification(call)?;
    let id = peer_id(request.peer_id)?;
    call.db.change_replication_peer(change(id))?;
    procedure_answer(submitted)
}

fn remove_replication_peer(call: &mut Call<'_>, param: &[u8]) -> Answer {
    peer_change(call, param, "RemoveReplicationPeerRequest", |id| {
        PeerChange::Remove { id }
    })
}

fn enable_replication_peer(call: &mut Call<'_>, param: &[u8]) -> Answer {
    peer_change(call, param, "EnableReplicationPeerRequest", |id| {
        PeerChange::SetState { id, enabled: true }
    })
}

fn disable_replication_peer(call: &mut Call<'_>, param: &[u8]) -> Answer {
    peer_change(call, param, "DisableReplicationPeerRequest", |id| {
        PeerChange::SetState { id, enabled: false }
    })
}

/// Replaces a peer's configuration; its state stays, its cluster key and
/// endpoint cannot change (HBase's rules).
fn update_replication_peer_config(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let submitted = now_millis();
    let request = Call::decode::<rp::UpdateReplicationPeerConfigRequest>(
        param,
        "UpdateReplicationPeerConfigRequest",
    )?;
    check_peer_modification(call)?;
    let id = peer_id(request.peer_id)?;
    let config = checked_peer_config(call, request.peer_config.as_ref())?;
    call.db
        .change_replication_peer(PeerChange::Update { id, config })?;
    procedure_answer(submitted)
}

/// One peer, or `ReplicationPeerNotFoundException` (as HBase answers).
fn peer(call: &Call<'_>, id: &str) -> Result<basalt::replication::ReplicationPeer, RpcError> {
    call.db
        .replication_peers()?
        .remove(id)
        .ok_or_else(|| Error::ReplicationPeerNotFound(id.to_string()).into())
}

fn get_replication_peer_config(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<rp::PeerIdRequest>(param, "GetReplicationPeerConfigRequest")?;
    let id = peer_id(request.peer_id)?;
    let found = peer(call, &id)?;
    Ok(encode(&rp::GetReplicationPeerConfigResponse {
        peer_id: Some(id),
        peer_config: Some(replication::peer_message(&found.config)),
    }))
}

/// Every peer whose whole id matches the pattern (Java's `matches`), in
/// id order; every peer without one.
fn list_replication_peers(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request =
        Call::decode::<rp::ListReplicationPeersRequest>(param, "ListReplicationPeersRequest")?;
    let pattern = request
        .regex
        .as_deref()
        .map(|r| {
            regex::Regex::new(&format!("^(?:{r})$")).map_err(|e| {
                RpcError::do_not_retry(format!("invalid replication peer pattern '{r}': {e}"))
            })
        })
        .transpose()?;
    Ok(encode(&rp::ListReplicationPeersResponse {
        peer_desc: call
            .db
            .replication_peers()?
            .iter()
            .filter(|(id, _)| pattern.as_ref().is_none_or(|p| p.is_match(id)))
            .map(|(id, peer)| replication::peer_description(id, peer))
            .collect(),
    }))
}

/// Whether a peer is enabled. HBase's master answers an unknown peer here
/// with a plain `IOException` (retried), not the not-found exception of
/// the other calls.
fn is_replication_peer_enabled(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<rp::PeerIdRequest>(param, "GetReplicationPeerStateRequest")?;
    let id = peer_id(request.peer_id)?;
    let Some(found) = call.db.replication_peers()?.remove(&id) else {
        return Err(RpcError::new(
            IO_EXCEPTION,
            format!("Replication Peer of {id} does not exist."),
            false,
        ));
    };
    Ok(encode(&rp::GetReplicationPeerStateResponse {
        is_enabled: Some(found.enabled),
    }))
}

/// HBase 2.6's switch for peer changes; kept in the catalog
/// (`Database::replication_peer_modification_switch`).
fn replication_peer_modification_switch(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<rp::ReplicationPeerModificationSwitchRequest>(
        param,
        "ReplicationPeerModificationSwitchRequest",
    )?;
    // An absent value is protobuf's default (see `set_switch`).
    let previous = call
        .db
        .replication_peer_modification_switch(Some(request.on.unwrap_or(false)))?;
    Ok(encode(&rp::ReplicationPeerModificationSwitchResponse {
        previous_value: Some(previous),
    }))
}

fn is_replication_peer_modification_enabled(call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<m::Empty>(param, "IsReplicationPeerModificationEnabledRequest")?;
    Ok(encode(&rp::IsReplicationPeerModificationEnabledResponse {
        enabled: Some(call.db.replication_peer_modification_switch(None)?),
    }))
}

/// The peer changes still running: none, each is done when its call
/// answers (a client waits on this after turning the switch off).
fn get_replication_peer_modification_procedures(_call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<m::Empty>(param, "GetReplicationPeerModificationProceduresRequest")?;
    Ok(encode(
        &rp::GetReplicationPeerModificationProceduresResponse {},
    ))
}

/// Bytes the server's budgeted memory holds now: memstores and cached
/// blocks.
fn memory_used(ctx: &RpcContext) -> u64 {
    let server = ctx.db.region_server();
    server.memstore_bytes() as u64 + server.block_cache_stats().bytes
}

/// Bytes the server may budget: the global memstore limit and the block
/// cache's capacity.
fn memory_budget(ctx: &RpcContext) -> u64 {
    let server = ctx.db.region_server();
    server.memstore_high_water_bytes() as u64 + server.block_cache_stats().capacity
}

/// Whole MiB, saturating.
fn mib(bytes: u64) -> u32 {
    u32::try_from(bytes >> 20).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn an_empty_table_pattern_matches_no_name_while_an_absent_one_lists_all() {
        let empty = table_pattern(Some("")).unwrap().unwrap();
        assert!(!empty.is_match("t"));
        assert!(!empty.is_match("default:t"));
        assert!(table_pattern(None).unwrap().is_none());
    }

    #[test]
    fn a_table_pattern_must_match_the_whole_name() {
        let p = table_pattern(Some("ap")).unwrap().unwrap();
        assert!(!p.is_match("apple"));
        assert!(p.is_match("ap"));
    }
}
