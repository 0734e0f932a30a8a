//! `ClientService`: reads, writes, scans and batches, each addressed to a
//! region by name.
//!
//! Basalt's `Table` routes rows to regions itself; this service adds what a
//! native client relies on: the region named must still be served
//! (`NotServingRegionException` after a split or merge, so the client
//! re-reads `hbase:meta`) and must hold the row (`WrongRegionException`
//! otherwise, as HBase), and a scan answers for one region only
//! (`more_results_in_region` false at its end, so the client moves on to
//! the next region).

use basalt::{
    Append, CheckAndMutate, Condition as BasaltCondition, Delete, Durability, Get as BasaltGet,
    Increment, Mutation, Put, RegionInfo, RowMutations, RowResult, Scan as BasaltScan, TimeRange,
};
use basalt_types::{Cell, CellType, Comparator, CompareOp, LATEST_TIMESTAMP};
use bytes::Bytes;
use std::time::Duration;

use crate::call::{cell_from_proto, encode, Call, Method};
use crate::error::{RpcError, OUT_OF_ORDER_SCANNER_NEXT};
use crate::filters::{decode_comparator, decode_filter};
use crate::meta::{self, Target};
use crate::namespace_table;
use crate::proto::client::{
    mutation_proto::{DeleteType, MutationType},
    Column, Condition, Get, GetRequest, GetResponse, MultiRequest, MultiResponse, MutateRequest,
    MutateResponse, MutationProto, RegionAction, RegionActionResult, ResultOrException, Scan,
    ScanRequest, ScanResponse,
};
use crate::proto::hbase::{CompareType, RegionSpecifier};
use crate::scanners::{RowBounds, RowSource, ScanState};

/// The methods served; `ExecService` and `ExecRegionServerService` are
/// answered with `DoNotRetryIOException` (no coprocessors).
pub const METHODS: &[Method] = &[
    Method {
        name: "Get",
        handler: get,
    },
    Method {
        name: "Mutate",
        handler: mutate,
    },
    Method {
        name: "Scan",
        handler: scan,
    },
    Method {
        name: "Multi",
        handler: multi,
    },
    Method {
        name: "PrepareBulkLoad",
        handler: prepare_bulk_load,
    },
    Method {
        name: "BulkLoadHFile",
        handler: bulk_load_hfile,
    },
    Method {
        name: "CleanupBulkLoad",
        handler: cleanup_bulk_load,
    },
];

/// `PrepareBulkLoad`: HBase hands back a staging directory's token the
/// client moves its files under. Basalt reads the files where the client
/// left them, so the token only names the load (in the log).
fn prepare_bulk_load(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: crate::proto::client::PrepareBulkLoadRequest =
        Call::decode(param, "PrepareBulkLoadRequest")?;
    let table = request
        .table_name
        .as_ref()
        .ok_or_else(|| RpcError::missing("PrepareBulkLoadRequest.table_name"))?;
    let table = meta::table_name_text(table)?;
    // The table must exist (HBase's answer otherwise).
    call.db.table(&table)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let token = format!("basalt-bulk-load-{nanos:x}");
    tracing::info!(table, token, "bulk load prepared");
    Ok(encode(&crate::proto::client::PrepareBulkLoadResponse {
        bulk_token: token,
    }))
}

/// `BulkLoadHFile`: whole HFiles (which the client split to fit the
/// region) loaded into the region named, as new store files with a fresh
/// sequence id (`basalt::bulk_load`). Paths are read on this server's
/// machine (`file:` URIs or plain paths), as with standalone HBase.
fn bulk_load_hfile(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: crate::proto::client::BulkLoadHFileRequest =
        Call::decode(param, "BulkLoadHFileRequest")?;
    let info = meta::resolve_user_region(call.ctx, request.region.as_ref())?;
    let mut family_paths = Vec::with_capacity(request.family_path.len());
    for fp in &request.family_path {
        let family = String::from_utf8(fp.family.clone())
            .map_err(|_| RpcError::do_not_retry("a bulk load family name is not UTF-8"))?;
        family_paths.push((family, local_path(&fp.path)?));
    }
    let cells = call
        .db
        .bulk_load_region(&info.table, info.id, &family_paths)?;
    tracing::info!(table = %info.table, region = %info.encoded_name(), files = family_paths.len(), cells, token = request.bulk_token.as_deref().unwrap_or(""), "BulkLoadHFile");
    Ok(encode(&crate::proto::client::BulkLoadHFileResponse {
        loaded: true,
    }))
}

/// A Hadoop path on this machine: `file:/x`, `file:///x` or `/x`.
fn local_path(path: &str) -> Result<std::path::PathBuf, RpcError> {
    let plain = path
        .strip_prefix("file://")
        .or_else(|| path.strip_prefix("file:"))
        .unwrap_or(path);
    if plain.contains("://") || !plain.starts_with('/') {
        return Err(RpcError::do_not_retry(format!(
            "bulk load path {path}: Basalt reads HFiles from its own machine's filesystem (file: paths)"
        )));
    }
    Ok(std::path::PathBuf::from(plain))
}

/// `CleanupBulkLoad`: nothing was staged, so nothing to remove.
fn cleanup_bulk_load(_call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: crate::proto::client::CleanupBulkLoadRequest =
        Call::decode(param, "CleanupBulkLoadRequest")?;
    tracing::debug!(token = request.bulk_token, "bulk load cleaned up");
    Ok(encode(&crate::proto::client::CleanupBulkLoadResponse {}))
}

/// A region's row is outside the region named (HBase's class).
const WRONG_REGION: &str = "org.apache.hadoop.hbase.regionserver.WrongRegionException";

/// The user region `spec` names, checked to hold `row`.
fn region_for_row(
    call: &Call<'_>,
    spec: Option<&RegionSpecifier>,
    row: &[u8],
) -> Result<RegionInfo, RpcError> {
    match meta::resolve_for_row(call.ctx, spec, row)? {
        Target::Region { info, .. } => {
            check_row(&info, row)?;
            Ok(info)
        }
        Target::Meta => Err(meta::meta_is_read_only()),
        Target::Namespace => Err(namespace_table::read_only()),
    }
}

fn time_range(range: Option<&crate::proto::hbase::TimeRange>) -> Result<TimeRange, RpcError> {
    let Some(range) = range else {
        return Ok(TimeRange::all());
    };
    let min = i64::try_from(range.from.unwrap_or(0)).unwrap_or(i64::MAX);
    let max = i64::try_from(range.to.unwrap_or(i64::MAX as u64)).unwrap_or(i64::MAX);
    Ok(TimeRange::new(min, max)?)
}

fn columns_into(columns: &[Column], mut add: impl FnMut(Bytes, Option<Bytes>)) {
    for column in columns {
        if column.qualifier.is_empty() {
            add(column.family.clone(), None);
        } else {
            for q in &column.qualifier {
                add(column.family.clone(), Some(q.clone()));
            }
        }
    }
}

/// A protobuf `Get` as Basalt's, with the per-family window HBase's
/// `store_limit`/`store_offset` ask for (applied to the answer).
fn to_get(get: &Get) -> Result<(BasaltGet, Option<(usize, usize)>), RpcError> {
    if get.closest_row_before.unwrap_or(false) {
        return Err(RpcError::do_not_retry(
            "Get.closest_row_before (HBase 1's getRowOrBefore) is not served: use a reversed scan",
        ));
    }
    if !get.cf_time_range.is_empty() {
        return Err(RpcError::do_not_retry(
            "per-family time ranges (cf_time_range) are not supported by Basalt",
        ));
    }
    let mut out = BasaltGet::new(get.row.clone());
    columns_into(&get.column, |f, q| match q {
        Some(q) => out.columns.add_column(f, q),
        None => out.columns.add_family(f),
    });
    out.max_versions = get.max_versions.unwrap_or(1).max(1);
    out.time_range = time_range(get.time_range.as_ref())?;
    if let Some(filter) = &get.filter {
        out.filter = Some(decode_filter(filter)?);
    }
    Ok((out, store_window(get.store_limit, get.store_offset)))
}

fn store_window(limit: Option<u32>, offset: Option<u32>) -> Option<(usize, usize)> {
    let limit = limit.filter(|&l| l > 0).map(|l| l as usize);
    let offset = offset.unwrap_or(0) as usize;
    (limit.is_some() || offset > 0).then(|| (limit.unwrap_or(usize::MAX), offset))
}

/// HBase's `store_limit`/`store_offset`: per family, skip `offset` cells
/// and keep at most `limit` (cells come sorted by family).
fn apply_store_window(cells: Vec<Cell>, window: Option<(usize, usize)>) -> Vec<Cell> {
    let Some((limit, offset)) = window else {
        return cells;
    };
    let mut out = Vec::with_capacity(cells.len());
    let mut family: Option<Bytes> = None;
    let mut seen = 0usize;
    for cell in cells {
        if family.as_ref() != Some(&cell.family) {
            family = Some(cell.family.clone());
            seen = 0;
        }
        if seen >= offset && seen - offset < limit {
            out.push(cell);
        }
        seen += 1;
    }
    out
}

fn get(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: GetRequest = Call::decode(param, "GetRequest")?;
    let get = request
        .get
        .ok_or_else(|| RpcError::missing("GetRequest.get"))?;
    let result = match meta::resolve_for_row(call.ctx, request.region.as_ref(), &get.row)? {
        Target::Meta => {
            let (query, _) = to_get(&get)?;
            let row = meta::rows_for_key(call.ctx, &query.row)
                .into_iter()
                .find(|r| r.row == query.row)
                .map(|r| select_meta_columns(r, &get.column))
                .unwrap_or_default();
            if get.existence_only.unwrap_or(false) {
                exists(!row.cells.is_empty())
            } else {
                call.result(row.cells, false)
            }
        }
        Target::Namespace => {
            let (query, window) = to_get(&get)?;
            let row = namespace_table::get(call.ctx, &query)?;
            if get.existence_only.unwrap_or(false) {
                exists(!row.cells.is_empty())
            } else {
                call.result(apply_store_window(row.cells, window), false)
            }
        }
        Target::Region { info, .. } => {
            check_row(&info, &get.row)?;
            let table = call.db.table(&info.table)?;
            let (query, window) = to_get(&get)?;
            if get.existence_only.unwrap_or(false) {
                exists(table.exists(&query)?)
            } else {
                let row = table.get(&query)?;
                call.result(apply_store_window(row.cells, window), false)
            }
        }
    };
    Ok(encode(&GetResponse {
        result: Some(result),
    }))
}

fn exists(found: bool) -> crate::proto::client::Result {
    crate::proto::client::Result {
        exists: Some(found),
        ..Default::default()
    }
}

fn select_meta_columns(row: RowResult, columns: &[Column]) -> RowResult {
    if columns.is_empty() {
        return row;
    }
    let cells = row
        .cells
        .into_iter()
        .filter(|c| {
            columns.iter().any(|col| {
                col.family == c.family
                    && (col.qualifier.is_empty() || col.qualifier.contains(&c.qualifier))
            })
        })
        .collect();
    RowResult {
        row: row.row,
        cells,
    }
}

fn durability(code: Option<i32>) -> Option<Durability> {
    use crate::proto::client::mutation_proto::Durability as D;
    match code.and_then(|c| D::try_from(c).ok()) {
        Some(D::SkipWal) => Some(Durability::SkipWal),
        Some(D::AsyncWal) => Some(Durability::AsyncWal),
        Some(D::SyncWal) => Some(Durability::SyncWal),
        Some(D::FsyncWal) => Some(Durability::FsyncWal),
        Some(D::UseDefault) | None => None,
    }
}

/// The cells of a mutation: inside the message, or counted and taken from
/// the request's cell block.
fn mutation_cells(call: &mut Call<'_>, mutation: &MutationProto) -> Result<Vec<Cell>, RpcError> {
    let row = mutation.row.clone().unwrap_or_default();
    let default_ts = mutation.timestamp.map_or(LATEST_TIMESTAMP, |t| {
        i64::try_from(t).unwrap_or(LATEST_TIMESTAMP)
    });
    let mut cells = Vec::new();
    if let Some(count) = mutation.associated_cell_count.filter(|&c| c > 0) {
        cells.extend(call.take_request_cells(count as usize)?);
    }
    for column in &mutation.column_value {
        for qv in &column.qualifier_value {
            let cell_type = match qv.delete_type.map(DeleteType::try_from) {
                None => CellType::Put,
                Some(Ok(DeleteType::DeleteOneVersion)) => CellType::Delete,
                Some(Ok(DeleteType::DeleteMultipleVersions)) => CellType::DeleteColumn,
                Some(Ok(DeleteType::DeleteFamily)) => CellType::DeleteFamily,
                Some(Ok(DeleteType::DeleteFamilyVersion)) => CellType::DeleteFamilyVersion,
                Some(Err(_)) => {
                    return Err(RpcError::do_not_retry(format!(
                        "unknown delete type {:?}",
                        qv.delete_type
                    )))
                }
            };
            let proto_cell = crate::proto::hbase::Cell {
                row: Some(row.clone()),
                family: Some(column.family.clone()),
                qualifier: qv.qualifier.clone(),
                timestamp: Some(qv.timestamp.map_or(default_ts as u64, |t| t)),
                cell_type: Some(cell_type as i32),
                value: qv.value.clone(),
                tags: None,
            };
            cells.push(cell_from_proto(&proto_cell)?);
        }
    }
    if cells.iter().any(|c| c.row != row) {
        return Err(RpcError::do_not_retry(
            "a mutation's cells must all be on the mutation's row",
        ));
    }
    Ok(cells)
}

/// A protobuf mutation as Basalt's.
fn to_mutation(call: &mut Call<'_>, mutation: &MutationProto) -> Result<Mutation, RpcError> {
    let row = mutation
        .row
        .clone()
        .ok_or_else(|| RpcError::missing("MutationProto.row"))?;
    let kind = mutation
        .mutate_type
        .and_then(|t| MutationType::try_from(t).ok())
        .ok_or_else(|| {
            RpcError::do_not_retry(format!("unknown mutation type {:?}", mutation.mutate_type))
        })?;
    let cells = mutation_cells(call, mutation)?;
    let durability = durability(mutation.durability);
    Ok(match kind {
        MutationType::Put => {
            let mut put = Put::new(row);
            for c in cells {
                if c.cell_type != CellType::Put {
                    return Err(RpcError::do_not_retry("a Put carries a delete marker"));
                }
                put = put.add_at(c.family, c.qualifier, c.timestamp, c.value);
            }
            if let Some(d) = durability {
                put = put.durability(d);
            }
            if let Some(ttl) = cell_ttl(mutation)? {
                put = put.ttl_millis(ttl);
            }
            Mutation::Put(put)
        }
        MutationType::Delete => {
            let ts = mutation.timestamp.map_or(LATEST_TIMESTAMP, |t| {
                i64::try_from(t).unwrap_or(LATEST_TIMESTAMP)
            });
            let mut delete = if ts == LATEST_TIMESTAMP {
                Delete::new(row)
            } else {
                Delete::with_timestamp(row, ts)
            };
            for c in cells {
                let latest = c.timestamp == LATEST_TIMESTAMP;
                delete = match c.cell_type {
                    CellType::Delete if latest => delete.column(c.family, c.qualifier),
                    CellType::Delete => delete.column_at(c.family, c.qualifier, c.timestamp),
                    CellType::DeleteColumn => delete.columns_at(c.family, c.qualifier, c.timestamp),
                    CellType::DeleteFamily => delete.family_at(c.family, c.timestamp),
                    CellType::DeleteFamilyVersion => delete.family_version(c.family, c.timestamp),
                    // A Delete's column without a delete type: HBase reads
                    // it as "all versions of the column".
                    CellType::Put => delete.columns_at(c.family, c.qualifier, c.timestamp),
                };
            }
            if let Some(d) = durability {
                delete = delete.durability(d);
            }
            Mutation::Delete(delete)
        }
        MutationType::Increment => {
            let mut increment = Increment::new(row);
            for c in cells {
                let amount: [u8; 8] = c.value[..].try_into().map_err(|_| {
                    RpcError::do_not_retry(format!(
                        "an increment amount must be an 8-byte long, got {} bytes",
                        c.value.len()
                    ))
                })?;
                increment = increment.add(c.family, c.qualifier, i64::from_be_bytes(amount));
            }
            if let Some(d) = durability {
                increment = increment.durability(d);
            }
            increment.ttl_millis = cell_ttl(mutation)?;
            Mutation::Increment(increment)
        }
        MutationType::Append => {
            let mut append = Append::new(row);
            for c in cells {
                append = append.add(c.family, c.qualifier, c.value);
            }
            if let Some(d) = durability {
                append = append.durability(d);
            }
            append.ttl_millis = cell_ttl(mutation)?;
            Mutation::Append(append)
        }
    })
}

/// A condition of check-and-mutate as Basalt's.
fn to_check(condition: &Condition, mutations: RowMutations) -> Result<CheckAndMutate, RpcError> {
    if let Some(filter) = &condition.filter {
        // HBase 2.4+: the row read through the filter must have a cell.
        return Ok(CheckAndMutate {
            row: condition.row.clone(),
            family: Bytes::new(),
            qualifier: Bytes::new(),
            condition: BasaltCondition::Filter(decode_filter(filter)?),
            time_range: time_range(condition.time_range.as_ref())?,
            mutations,
        });
    }
    let family = condition
        .family
        .clone()
        .ok_or_else(|| RpcError::missing("Condition.family"))?;
    let qualifier = condition.qualifier.clone().unwrap_or_default();
    let op = condition
        .compare_type
        .and_then(|c| CompareType::try_from(c).ok())
        .ok_or_else(|| RpcError::missing("Condition.compare_type"))?;
    let comparator = match &condition.comparator {
        Some(c) => decode_comparator(c)?,
        None => None,
    };
    // A missing comparator or a `NullComparator` has an empty value, as in
    // HBase: the engine then tests for an absent (or empty) cell.
    let test = BasaltCondition::Compare {
        op: compare_op(op)?,
        comparator: comparator.unwrap_or_else(|| Comparator::Binary(Bytes::new())),
    };
    Ok(CheckAndMutate {
        row: condition.row.clone(),
        family,
        qualifier,
        condition: test,
        time_range: time_range(condition.time_range.as_ref())?,
        mutations,
    })
}

/// HBase's compare type as Basalt's operator; `NO_OP` is refused.
pub fn compare_op(op: CompareType) -> Result<CompareOp, RpcError> {
    Ok(match op {
        CompareType::Less => CompareOp::Less,
        CompareType::LessOrEqual => CompareOp::LessOrEqual,
        CompareType::Equal => CompareOp::Equal,
        CompareType::NotEqual => CompareOp::NotEqual,
        CompareType::GreaterOrEqual => CompareOp::GreaterOrEqual,
        CompareType::Greater => CompareOp::Greater,
        CompareType::NoOp => {
            return Err(RpcError::do_not_retry(
                "compare type NO_OP is not supported",
            ))
        }
    })
}

/// A mutation's per-cell TTL in milliseconds: HBase's `_ttl` attribute
/// (`Mutation.setTTL`, an 8-byte big-endian long). Absent, or Java's
/// `Long.MAX_VALUE` (what HBase reads as "none"), means none; a negative or
/// malformed one is refused.
fn cell_ttl(mutation: &MutationProto) -> Result<Option<u64>, RpcError> {
    let Some(attribute) = mutation.attribute.iter().find(|a| a.name == "_ttl") else {
        return Ok(None);
    };
    let bytes: [u8; 8] = attribute
        .value
        .as_deref()
        .unwrap_or_default()
        .try_into()
        .map_err(|_| RpcError::do_not_retry("the _ttl attribute must be an 8-byte long"))?;
    match i64::from_be_bytes(bytes) {
        i64::MAX => Ok(None),
        ttl if ttl < 0 => Err(RpcError::do_not_retry(format!(
            "a cell TTL must not be negative, got {ttl} ms"
        ))),
        ttl => Ok(Some(ttl as u64)),
    }
}

/// Whether an increment or append answers its new values: HBase's
/// `_rr_` attribute ("return results"), true unless set to false.
fn returns_results(mutation: &MutationProto) -> bool {
    // Java's `Bytes.toBytes(false)` is one zero byte.
    !mutation
        .attribute
        .iter()
        .any(|a| a.name == "_rr_" && a.value.as_deref() == Some(&[0][..]))
}

/// Applies one mutation; the answer's `Result` for increments and appends.
fn apply(
    call: &mut Call<'_>,
    table: &basalt::Table,
    mutation: Mutation,
    want_result: bool,
) -> Result<Option<crate::proto::client::Result>, RpcError> {
    Ok(match mutation {
        Mutation::Put(put) => {
            table.put(&put)?;
            None
        }
        Mutation::Delete(delete) => {
            table.delete(&delete)?;
            None
        }
        Mutation::Increment(increment) => {
            let row = table.increment(&increment)?;
            want_result.then(|| call.result(row.cells, false))
        }
        Mutation::Append(append) => {
            let row = table.append(&append)?;
            want_result.then(|| call.result(row.cells, false))
        }
    })
}

fn mutate(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: MutateRequest = Call::decode(param, "MutateRequest")?;
    let mutation = request
        .mutation
        .as_ref()
        .ok_or_else(|| RpcError::missing("MutateRequest.mutation"))?;
    let row = mutation.row.clone().unwrap_or_default();
    let info = region_for_row(call, request.region.as_ref(), &row)?;
    let table = call.db.table(&info.table)?;
    let want_result = returns_results(mutation);
    let converted = to_mutation(call, mutation)?;
    let response = match &request.condition {
        Some(condition) => {
            if condition.row != row {
                return Err(RpcError::do_not_retry(
                    "a check-and-mutate must check the row it mutates",
                ));
            }
            let check = to_check(condition, RowMutations::new(row.clone()).add(converted)?)?;
            let (applied, result) = table.check_and_mutate_returning(&check)?;
            // HBase answers an applied increment's or append's new values.
            MutateResponse {
                result: (applied && want_result && !result.cells.is_empty())
                    .then(|| call.result(result.cells, false)),
                processed: Some(applied),
            }
        }
        None => MutateResponse {
            result: apply(call, &table, converted, want_result)?,
            processed: Some(true),
        },
    };
    Ok(encode(&response))
}

fn multi(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: MultiRequest = Call::decode(param, "MultiRequest")?;
    // Several gets answer whole rows: room in the answer budget first, as a
    // scan takes, and each row counted.
    let gets = request
        .region_action
        .iter()
        .flat_map(|a| &a.action)
        .filter(|a| a.get.is_some())
        .count();
    if gets > 1 {
        let patience = Duration::from_millis(call.ctx.limits.write_timeout_ms.max(1));
        basalt::guard::take_answer_room(FIRST_ROOM, patience)
            .map_err(|full| RpcError::from(basalt::Error::RegionTooBusy(full.to_string())))?;
    }
    let mut response = MultiResponse::default();
    for (i, action) in request.region_action.iter().enumerate() {
        // HBase 2.0-2.3 sent one condition for the whole request.
        let condition = action.condition.as_ref().or(if i == 0 {
            request.condition.as_ref()
        } else {
            None
        });
        let result = match region_action(call, action, condition) {
            Ok(result) => result,
            Err(error) => RegionActionResult {
                exception: Some(error.to_name_bytes()),
                ..Default::default()
            },
        };
        if i == 0 && request.condition.is_some() {
            response.processed = result.processed;
        }
        response.region_action_result.push(result);
    }
    Ok(encode(&response))
}

/// One region's actions: all or nothing when `atomic` (a row mutation,
/// optionally conditional), else each on its own with its own answer.
fn region_action(
    call: &mut Call<'_>,
    action: &RegionAction,
    condition: Option<&Condition>,
) -> Result<RegionActionResult, RpcError> {
    if let Target::Namespace = meta::resolve(call.ctx, action.region.as_ref())? {
        return namespace_action(call, action, condition);
    }
    let info = meta::resolve_user_region(call.ctx, action.region.as_ref())?;
    let table = call.db.table(&info.table)?;
    let mut result = RegionActionResult::default();
    if action.atomic.unwrap_or(false) || condition.is_some() {
        let mut group: Option<RowMutations> = None;
        for a in &action.action {
            let mutation = a.mutation.as_ref().ok_or_else(|| {
                RpcError::do_not_retry("an atomic region action holds only mutations")
            })?;
            let row = mutation.row.clone().unwrap_or_default();
            check_row(&info, &row)?;
            let converted = to_mutation(call, mutation)?;
            group = Some(match group {
                None => RowMutations::new(row).add(converted)?,
                Some(g) => g.add(converted)?,
            });
        }
        let Some(group) = group else {
            return Ok(result);
        };
        let (processed, computed) = match condition {
            Some(condition) => table.check_and_mutate_returning(&to_check(condition, group)?)?,
            None => (true, table.mutate_row(&group)?),
        };
        result.processed = Some(processed);
        // One answer per mutation, numbered by position as HBase's region
        // server does: the Java client sends these actions unnumbered and
        // looks each answer up by its position. The first carries the new
        // values of every increment and append (HBase 2.4+'s
        // `ResponseConverter` reads them from there); the others are empty.
        let mut computed = Some(computed.cells);
        for position in 0..action.action.len() {
            let answer = match computed.take() {
                Some(cells) if !cells.is_empty() => call.result(cells, false),
                _ => crate::proto::client::Result::default(),
            };
            result.result_or_exception.push(ResultOrException {
                index: u32::try_from(position).ok(),
                result: Some(answer),
                exception: None,
            });
        }
        return Ok(result);
    }
    // As HBase's region server does: gets and increments/appends are
    // answered where they stand, while puts and deletes are gathered and
    // applied together (one log sync) before the next increment or append
    // and at the end. So a get does not see a put or delete that comes
    // before it in the same action unless an increment or append lies
    // between them (HBase 2.6 answers the same).
    let mut outcomes: Vec<Option<Result<crate::proto::client::Result, RpcError>>> =
        (0..action.action.len()).map(|_| None).collect();
    let mut gathered: Vec<(usize, Mutation)> = Vec::new();
    for (position, a) in action.action.iter().enumerate() {
        let outcome = match one_action(call, &table, &info, a) {
            Ok(Step::Answered(r)) => Ok(r),
            Ok(Step::Gather(mutation)) => {
                gathered.push((position, mutation));
                continue;
            }
            Ok(Step::Apply(mutation, want)) => {
                apply_gathered(&table, &mut gathered, &mut outcomes);
                apply(call, &table, mutation, want).map(Option::unwrap_or_default)
            }
            Err(error) => Err(error),
        };
        outcomes[position] = Some(outcome);
    }
    apply_gathered(&table, &mut gathered, &mut outcomes);
    for (a, outcome) in action.action.iter().zip(outcomes) {
        let outcome = outcome.unwrap_or_else(|| {
            Err(RpcError::do_not_retry(
                "an action was left unanswered (a Basalt bug)",
            ))
        });
        result
            .result_or_exception
            .push(action_answer(a.index, outcome));
    }
    Ok(result)
}

/// One action's answer in a region action's result: its result or its
/// exception, under the action's index.
fn action_answer(
    index: Option<u32>,
    outcome: Result<crate::proto::client::Result, RpcError>,
) -> ResultOrException {
    match outcome {
        Ok(r) => ResultOrException {
            index,
            result: Some(r),
            exception: None,
        },
        Err(error) => ResultOrException {
            index,
            result: None,
            exception: Some(error.to_name_bytes()),
        },
    }
}

/// What one cell adds to a native answer: its key and value, and the
/// fixed fields around them (what `max_result_size` and the answer budget
/// count).
fn answer_cell_bytes(cell: &Cell) -> usize {
    cell.row.len() + cell.family.len() + cell.qualifier.len() + cell.value.len() + 24
}

/// A region action on `hbase:namespace`: its gets are answered (a batch
/// of gets, `Table.get(List)` and `exists(List)`, travels this way), each
/// mutation is refused on its own, and an atomic or conditional action,
/// which can only hold mutations, is refused whole.
fn namespace_action(
    call: &mut Call<'_>,
    action: &RegionAction,
    condition: Option<&Condition>,
) -> Result<RegionActionResult, RpcError> {
    if action.atomic.unwrap_or(false) || condition.is_some() {
        return Err(namespace_table::read_only());
    }
    let mut result = RegionActionResult::default();
    for a in &action.action {
        let outcome = match (&a.get, &a.mutation) {
            (Some(get), _) => to_get(get).and_then(|(query, window)| {
                let row = namespace_table::get(call.ctx, &query)?;
                Ok(if get.existence_only.unwrap_or(false) {
                    exists(!row.cells.is_empty())
                } else {
                    call.result(apply_store_window(row.cells, window), false)
                })
            }),
            (None, Some(_)) => Err(namespace_table::read_only()),
            (None, None) => Err(RpcError::do_not_retry(
                "an action on hbase:namespace holds neither a get nor a mutation",
            )),
        };
        result
            .result_or_exception
            .push(action_answer(a.index, outcome));
    }
    Ok(result)
}

/// What one action of a non-atomic region action comes to.
enum Step {
    /// Answered at once (a get).
    Answered(crate::proto::client::Result),
    /// A put or delete, applied with the others gathered.
    Gather(Mutation),
    /// An increment or append, applied where it stands (whether its new
    /// values are answered).
    Apply(Mutation, bool),
}

/// Applies the gathered puts and deletes as one batch and records each
/// one's answer.
fn apply_gathered(
    table: &basalt::Table,
    gathered: &mut Vec<(usize, Mutation)>,
    outcomes: &mut [Option<Result<crate::proto::client::Result, RpcError>>],
) {
    if gathered.is_empty() {
        return;
    }
    let (positions, mutations): (Vec<usize>, Vec<Mutation>) = gathered.drain(..).unzip();
    for (position, applied) in positions.into_iter().zip(table.batch(&mutations)) {
        if let Some(slot) = outcomes.get_mut(position) {
            *slot = Some(
                applied
                    .map(|()| crate::proto::client::Result::default())
                    .map_err(RpcError::from),
            );
        }
    }
}

fn one_action(
    call: &mut Call<'_>,
    table: &basalt::Table,
    info: &RegionInfo,
    action: &crate::proto::client::Action,
) -> Result<Step, RpcError> {
    if let Some(get) = &action.get {
        check_row(info, &get.row)?;
        let (query, window) = to_get(get)?;
        if get.existence_only.unwrap_or(false) {
            return Ok(Step::Answered(exists(table.exists(&query)?)));
        }
        let row = table.get(&query)?;
        let bytes: usize = row.cells.iter().map(answer_cell_bytes).sum();
        basalt::guard::count_answer(basalt::guard::answer_estimate(bytes, row.cells.len()));
        return Ok(Step::Answered(
            call.result(apply_store_window(row.cells, window), false),
        ));
    }
    if let Some(mutation) = &action.mutation {
        check_row(info, &mutation.row.clone().unwrap_or_default())?;
        let want = returns_results(mutation);
        // Converted here, in order: the cells of each mutation come next
        // in the request's cell block.
        return Ok(match to_mutation(call, mutation)? {
            m @ (Mutation::Put(_) | Mutation::Delete(_)) => Step::Gather(m),
            m @ (Mutation::Increment(_) | Mutation::Append(_)) => Step::Apply(m, want),
        });
    }
    if action.service_call.is_some() {
        return Err(RpcError::do_not_retry(
            "coprocessor calls are not served by Basalt",
        ));
    }
    Err(RpcError::do_not_retry(
        "an action holds neither a get nor a mutation",
    ))
}

fn check_row(info: &RegionInfo, row: &[u8]) -> Result<(), RpcError> {
    if info.contains(row) {
        Ok(())
    } else {
        Err(RpcError::new(
            WRONG_REGION,
            format!(
                "row {} is outside region {}",
                String::from_utf8_lossy(row),
                String::from_utf8_lossy(&info.region_name())
            ),
            false,
        ))
    }
}

/// The bounds a scan may return in a region: the scan's own (with HBase's
/// inclusive/exclusive flags) cut to the region's `[start, end)`.
fn scan_bounds(scan: &Scan, region_start: &Bytes, region_end: &Bytes) -> RowBounds {
    let reversed = scan.reversed.unwrap_or(false);
    let start = scan.start_row.clone().unwrap_or_default();
    let stop = scan.stop_row.clone().unwrap_or_default();
    let include_start = scan.include_start_row.unwrap_or(true);
    let include_stop = scan.include_stop_row.unwrap_or(false);
    // For a reversed scan the start row is the high end.
    let (mut low, mut high) = if reversed {
        ((stop, include_stop), (start, include_start))
    } else {
        ((start, include_start), (stop, include_stop))
    };
    if !region_start.is_empty() && (low.0.is_empty() || low.0 < *region_start) {
        low = (region_start.clone(), true);
    }
    if !region_end.is_empty() && (high.0.is_empty() || high.0 >= *region_end) {
        high = (region_end.clone(), false);
    }
    RowBounds { low, high }
}

/// Basalt's scan for `bounds`: a superset where Basalt's start-inclusive,
/// stop-exclusive rows cannot say it exactly (the rest is cut per row).
fn to_scan(scan: &Scan, bounds: &RowBounds) -> Result<BasaltScan, RpcError> {
    let reversed = scan.reversed.unwrap_or(false);
    let mut out = BasaltScan::new().reversed(reversed);
    let (low, low_inclusive) = &bounds.low;
    let (high, high_inclusive) = &bounds.high;
    if reversed {
        // Start at the high end (inclusive), stop before the low end.
        if !high.is_empty() {
            out = out.start_row(high.clone());
        }
        if !low.is_empty() && !low_inclusive {
            out = out.stop_row(low.clone());
        }
    } else {
        if !low.is_empty() {
            let mut start = low.to_vec();
            if !low_inclusive {
                start.push(0);
            }
            out = out.start_row(start);
        }
        if !high.is_empty() {
            let mut stop = high.to_vec();
            if *high_inclusive {
                stop.push(0);
            }
            out = out.stop_row(stop);
        }
    }
    columns_into(&scan.column, |f, q| match q {
        Some(q) => out.columns.add_column(f, q),
        None => out.columns.add_family(f),
    });
    out.max_versions = scan.max_versions.unwrap_or(1).max(1);
    out.raw = is_raw(scan);
    // HBase's store scanner refuses a raw scan naming qualifiers (whole
    // families are fine): a raw read shows every cell of what it reads.
    if out.raw && scan.column.iter().any(|c| !c.qualifier.is_empty()) {
        return Err(RpcError::do_not_retry(
            "Cannot specify any column for a raw scan",
        ));
    }
    out.time_range = time_range(scan.time_range.as_ref())?;
    if let Some(filter) = &scan.filter {
        out.filter = Some(decode_filter(filter)?);
    }
    if let Some(batch) = scan.batch_size.filter(|&b| b > 0) {
        // HBase's server builds its Scan filter first, then batch, and
        // Scan.setBatch refuses a filter that decides on whole rows: every
        // such scan fails at its open, whatever the rows hold. HBase sends
        // that as a retriable IOException, so its client retries until it
        // gives up; a retry cannot succeed, so Basalt says do-not-retry
        // (docs/hbase-semantics.md, "Deviations from HBase").
        let whole_row = out
            .filter
            .as_ref()
            .is_some_and(|f| f.build(reversed).has_filter_row());
        if whole_row {
            return Err(RpcError::do_not_retry(
                "IncompatibleFilterException: Cannot set batch on a scan using a filter \
                 that returns true for filter.hasFilterRow",
            ));
        }
        out.batch = Some(batch as usize);
    }
    if !scan.cf_time_range.is_empty() {
        return Err(RpcError::do_not_retry(
            "per-family time ranges (cf_time_range) are not supported by Basalt",
        ));
    }
    Ok(out)
}

/// The attribute that makes a scan a read by a secondary index
/// (`scan.setAttribute("basalt.index", Bytes.toBytes("by_buyer"))`): its
/// value names the index, its start and stop rows are index keys
/// (docs/secondary-indexes.md), and the rows come in index order.
pub const INDEX_ATTRIBUTE: &str = "basalt.index";

/// The index a scan reads by, if any.
fn index_of(scan: &Scan) -> Result<Option<String>, RpcError> {
    let Some(pair) = scan.attribute.iter().find(|a| a.name == INDEX_ATTRIBUTE) else {
        return Ok(None);
    };
    let value = pair.value.as_deref().unwrap_or_default();
    String::from_utf8(value.to_vec()).map(Some).map_err(|_| {
        RpcError::do_not_retry("the basalt.index attribute must name an index in UTF-8")
    })
}

/// Whether a scan is raw: it shows delete markers and the cells they mask
/// (HBase's `Scan.setRaw`, the shell's `RAW => true`). The protocol has no
/// field for it: HBase's client sends the attribute `_raw_` holding
/// `Bytes.toBytes(boolean)`, one byte, non-zero for true.
fn is_raw(scan: &Scan) -> bool {
    scan.attribute.iter().any(|pair| {
        pair.name == "_raw_"
            && pair
                .value
                .as_deref()
                .is_some_and(|v| v.iter().any(|&b| b != 0))
    })
}

fn scan(call: &mut Call<'_>, param: &[u8]) -> Result<Vec<u8>, RpcError> {
    let request: ScanRequest = Call::decode(param, "ScanRequest")?;
    let ctx = call.ctx;
    let (id, scanner, opened) = match request.scanner_id {
        Some(id) => {
            if request.close_scanner.unwrap_or(false) && request.number_of_rows.unwrap_or(0) == 0 {
                ctx.scanners.close(id, call.connection);
                return Ok(encode(&ScanResponse {
                    scanner_id: Some(id),
                    more_results: Some(false),
                    ..Default::default()
                }));
            }
            let scanner = match ctx.scanners.get(id, call.connection) {
                Ok(scanner) => scanner,
                // HBase answers a call on a scanner it closed by itself (a
                // region with nothing more to give) with an empty answer:
                // clients still send a `next` or a `close` for it.
                Err(_) if ctx.scanners.was_recently_closed(id) => {
                    return Ok(encode(&ScanResponse::default()));
                }
                Err(e) => return Err(e),
            };
            if let Some(seq) = request.next_call_seq {
                let mut state = scanner.lock();
                if seq != state.next_call_seq {
                    let expected = state.next_call_seq;
                    drop(state);
                    ctx.scanners.close(id, call.connection);
                    return Err(RpcError::new(
                        OUT_OF_ORDER_SCANNER_NEXT,
                        format!("scanner {id}: expected next_call_seq {expected}, got {seq} (a retried call whose answer was lost); reopen the scan"),
                        true,
                    ));
                }
                state.next_call_seq += 1;
            }
            (id, scanner, false)
        }
        None => {
            let scan = request
                .scan
                .as_ref()
                .ok_or_else(|| RpcError::missing("ScanRequest.scan"))?;
            let state = open_scan(call, request.region.as_ref(), scan)?;
            let (id, scanner) = ctx.scanners.register(call.connection, state)?;
            (id, scanner, true)
        }
    };
    if request.renew.unwrap_or(false) && !opened && request.number_of_rows.unwrap_or(0) == 0 {
        // A lease renewal only (the lease was renewed by the lookup).
        return Ok(encode(&ScanResponse {
            scanner_id: Some(id),
            more_results: Some(true),
            more_results_in_region: Some(true),
            ttl: Some(ctx.scanners.lease_seconds()),
            ..Default::default()
        }));
    }
    let caching = request
        .scan
        .as_ref()
        .and_then(|s| s.caching)
        .filter(|&c| c > 0);
    let rows_wanted = request
        .number_of_rows
        .filter(|&n| n > 0)
        .or(caching)
        .map_or(ctx.limits.default_scan_rows, |n| n as usize);
    // Whatever the client asks, an answer stops at the server's cap.
    let max_bytes = request
        .scan
        .as_ref()
        .and_then(|s| s.max_result_size)
        .filter(|&m| m > 0)
        .map_or(ctx.limits.max_scan_answer_bytes, |m| {
            usize::try_from(m).unwrap_or(usize::MAX)
        })
        .min(ctx.limits.max_answer_bytes)
        .min(ctx.limits.max_frame_bytes / 2);
    // Room in the answer budget before any row is read: a full budget
    // holds the call back (then refuses it as busy, which clients retry).
    // The room joins the call's, held until the answer is written.
    let patience = Duration::from_millis(ctx.limits.write_timeout_ms.max(1));
    basalt::guard::take_answer_room(FIRST_ROOM, patience)
        .map_err(|full| RpcError::from(basalt::Error::RegionTooBusy(full.to_string())))?;
    let mut response = ScanResponse {
        scanner_id: Some(id),
        ttl: Some(ctx.scanners.lease_seconds()),
        ..Default::default()
    };
    let partial_ok = request.client_handles_partials.unwrap_or(false);
    let mut state = scanner.lock();
    // The rows this call may end: HBase's client sends what is left of the
    // scan's limit with every call (as it counts), and HBase's server counts
    // against that, from zero, in each call.
    let limit_of_rows = request.limit_of_rows.filter(|&l| l > 0).map(u64::from);
    let fetched = fetch(
        &mut state,
        rows_wanted,
        max_bytes,
        partial_ok,
        limit_of_rows,
    );
    let fetched = match fetched {
        Ok(Fetched::Rows(f)) => f,
        // The call's time ran out before a row was found: a heartbeat, so
        // the client calls again and the scan goes on where it stopped (as
        // HBase's time-limited scans answer); a client that takes no
        // heartbeats is told why.
        Ok(Fetched::OutOfTime(e)) => {
            if !request.client_handles_heartbeats.unwrap_or(false) {
                return Err(e.into());
            }
            response.heartbeat_message = Some(true);
            Vec::new()
        }
        Err(e) => {
            drop(state);
            ctx.scanners.close(id, call.connection);
            return Err(e);
        }
    };
    for (cells, partial) in fetched {
        response.partial_flag_per_result.push(partial);
        if call.uses_cell_blocks() {
            response.cells_per_result.push(cells.len() as u32);
            call.push_response_cells(cells);
        } else {
            let result = call.result(cells, partial);
            response.results.push(result);
        }
    }
    let more_in_region = !state.region_exhausted;
    let more = !state.scan_done;
    if request.track_scan_metrics.unwrap_or(false) {
        response.scan_metrics = Some(scan_metrics(state.unreported_metrics()));
    }
    drop(state);
    response.more_results_in_region = Some(more_in_region);
    response.more_results = Some(more);
    if !more_in_region || !more || request.close_scanner.unwrap_or(false) {
        // HBase closes a scanner with nothing more to give, and the client
        // does not call it again.
        ctx.scanners.close(id, call.connection);
    }
    Ok(encode(&response))
}

/// The server side's scan metrics as HBase names them (its
/// `ServerSideScanMetrics`), counters at zero left out as HBase does.
fn scan_metrics(work: basalt::ScanMetrics) -> crate::proto::client::ScanMetrics {
    let counters = [
        ("ROWS_SCANNED", work.rows_scanned),
        ("ROWS_FILTERED", work.rows_filtered),
    ];
    crate::proto::client::ScanMetrics {
        metrics: counters
            .into_iter()
            .filter(|&(_, value)| value > 0)
            .map(|(name, value)| crate::proto::hbase::NameInt64Pair {
                name: Some(name.to_string()),
                value: Some(i64::try_from(value).unwrap_or(i64::MAX)),
            })
            .collect(),
    }
}

/// Opens the engine's scan (or `hbase:meta`'s rows) for a new scanner.
fn open_scan(
    call: &Call<'_>,
    spec: Option<&RegionSpecifier>,
    scan: &Scan,
) -> Result<ScanState, RpcError> {
    let reversed = scan.reversed.unwrap_or(false);
    let index = index_of(scan)?;
    let (bounds, rows): (RowBounds, Box<dyn RowSource>) = match meta::resolve(call.ctx, spec)? {
        Target::Meta => {
            let bounds = scan_bounds(scan, &Bytes::new(), &Bytes::new());
            let mut rows: Vec<RowResult> = meta::rows(call.ctx)
                .into_iter()
                .filter(|r| meta_in_bounds(&bounds, &r.row))
                .map(|r| select_meta_columns(r, &scan.column))
                .filter(|r| !r.cells.is_empty())
                .collect();
            if reversed {
                rows.reverse();
            }
            // The rows are already cut to the scan's bounds in meta order;
            // the per-row check in `fetch` compares bytes, which would drop
            // them (the client's stop row `t ,,` sorts below `t,` in bytes).
            let unbounded = RowBounds {
                low: (Bytes::new(), true),
                high: (Bytes::new(), false),
            };
            let rows: Vec<basalt::Result<RowResult>> = rows.into_iter().map(Ok).collect();
            (unbounded, Box::new(rows.into_iter()))
        }
        Target::Namespace => {
            // A few rows, one per namespace: read whole at open, cut to the
            // scan's bounds by `fetch` as a region's rows are.
            let bounds = scan_bounds(scan, &Bytes::new(), &Bytes::new());
            let rows = namespace_table::scan(call.ctx, &to_scan(scan, &bounds)?)?;
            let rows: Vec<basalt::Result<RowResult>> = rows.into_iter().map(Ok).collect();
            (bounds, Box::new(rows.into_iter()))
        }
        Target::Region { info, .. } if index.is_some() => {
            // The whole read by index, whichever region the client asked:
            // its rows are in index order, not in this region's range, and
            // the scan ends when they do (`whole_scan`).
            let bounds = scan_bounds(scan, &Bytes::new(), &Bytes::new());
            let engine_scan = to_scan(scan, &bounds)?;
            let name = index.as_deref().unwrap_or_default();
            let scanner = call.db.scan_index(&info.table, name, &engine_scan)?;
            let unbounded = RowBounds {
                low: (Bytes::new(), true),
                high: (Bytes::new(), false),
            };
            (unbounded, Box::new(scanner))
        }
        Target::Region { info, .. } => {
            let bounds = scan_bounds(scan, &info.start_key, &info.end_key);
            let table = call.db.table(&info.table)?;
            // Exactly the region's part of the scan: a row outside it (the
            // region's own exclusive end, where a reversed scan moving on
            // from the region above starts) is never read, so a filter
            // that counts rows (PageFilter) does not count it, as HBase's
            // region scanner never sees it.
            let scanner = table.scan_within(&to_scan(scan, &bounds)?, &bounds.row_range())?;
            (bounds, Box::new(scanner))
        }
    };
    Ok(ScanState {
        rows: Some(rows),
        ended_metrics: basalt::ScanMetrics::default(),
        reported_metrics: basalt::ScanMetrics::default(),
        bounds,
        reversed,
        carried: Vec::new(),
        next_call_seq: 0,
        region_exhausted: false,
        scan_done: false,
        whole_scan: index.is_some(),
        store_window: store_window(scan.store_limit, scan.store_offset),
        batched: scan.batch_size.is_some_and(|b| b > 0),
        lookahead: None,
        carried_more_in_row: false,
    })
}

/// `hbase:meta`'s rows are compared in meta order, not byte order.
fn meta_in_bounds(bounds: &RowBounds, row: &[u8]) -> bool {
    use std::cmp::Ordering::*;
    let (low, low_inclusive) = &bounds.low;
    let (high, high_inclusive) = &bounds.high;
    let above = low.is_empty()
        || match meta::compare_meta_rows(row, low) {
            Greater => true,
            Equal => *low_inclusive,
            Less => false,
        };
    let below = high.is_empty()
        || match meta::compare_meta_rows(row, high) {
            Less => true,
            Equal => *high_inclusive,
            Greater => false,
        };
    above && below
}

/// Room an answer takes in the answer budget before its first row is read.
const FIRST_ROOM: usize = 64 * 1024;

/// What [`fetch`] found.
enum Fetched {
    /// Rows (and pieces of rows), perhaps none at the end of the region.
    Rows(Vec<(Vec<Cell>, bool)>),
    /// The call's time ran out before any row was found; the scanner
    /// stays where it stopped.
    OutOfTime(basalt::Error),
}

/// The next rows of a scanner: at most `rows`, stopping once about
/// `max_bytes` are collected, or once the process's answer budget is full
/// and some rows are collected (their estimated size is counted in the
/// call's answer room as they are read). With `partial_ok`, a row bigger than what is left of
/// `max_bytes` is cut and the rest carried to the next call (the client
/// reassembles it); otherwise rows are whole.
fn fetch(
    state: &mut ScanState,
    rows: usize,
    max_bytes: usize,
    partial_ok: bool,
    limit_of_rows: Option<u64>,
) -> Result<Fetched, RpcError> {
    let budget = basalt::guard::answer_budget();
    let mut out = Vec::new();
    let mut bytes = 0usize;
    // Rows whose last part this call answered.
    let mut rows_ended = 0u64;
    while out.len() < rows && bytes < max_bytes && !state.scan_done {
        if !out.is_empty() && budget.in_use() >= budget.total() {
            break;
        }
        // A part of a row cut by the scan's batch, with more of the row to
        // come: HBase marks it "may have more cells in row", and neither
        // its client nor the scan's limit counts it as a row.
        let mut more_in_row = false;
        let cells = if !state.carried.is_empty() {
            more_in_row = state.carried_more_in_row;
            std::mem::take(&mut state.carried)
        } else {
            let next = match state.lookahead.take() {
                Some(next) => Some(next),
                None => match state.rows.as_mut() {
                    Some(source) => source.next(),
                    None => {
                        state.region_exhausted = true;
                        break;
                    }
                },
            };
            match next {
                Some(Ok(row)) => {
                    if state.batched {
                        // Batches of a row come one after another: the
                        // next result tells whether this one ended it.
                        if let Some(source) = state.rows.as_mut() {
                            state.lookahead = source.next();
                        }
                        more_in_row = matches!(
                            &state.lookahead,
                            Some(Ok(next)) if next.row == row.row
                        );
                    }
                    if !state.bounds.above_low(&row.row) || !state.bounds.below_high(&row.row) {
                        // Outside the region's part of the scan: in order,
                        // so nothing later is inside either (a reversed
                        // scan meets rows above its high end first only
                        // when it starts at the region's exclusive end).
                        let past = if state.reversed {
                            !state.bounds.above_low(&row.row)
                        } else {
                            !state.bounds.below_high(&row.row)
                        };
                        if past {
                            state.end_rows();
                            state.region_exhausted = true;
                            break;
                        }
                        continue;
                    }
                    let cells = match state.store_window {
                        Some(w) => apply_store_window(row.cells, Some(w)),
                        None => row.cells,
                    };
                    if cells.is_empty() {
                        continue;
                    }
                    cells
                }
                // Stopped between rows by the call's time budget: answer
                // what there is; the scanner goes on at the next call.
                Some(Err(e)) if e.kind() == basalt::ErrorKind::TimedOut => {
                    if out.is_empty() {
                        return Ok(Fetched::OutOfTime(e));
                    }
                    break;
                }
                Some(Err(e)) => {
                    if e.kind() != basalt::ErrorKind::Cancelled {
                        state.end_rows();
                    }
                    return Err(e.into());
                }
                None => {
                    state.end_rows();
                    state.region_exhausted = true;
                    state.scan_done |= state.whole_scan;
                    break;
                }
            }
        };
        let row_bytes: usize = cells.iter().map(answer_cell_bytes).sum();
        basalt::guard::count_answer(basalt::guard::answer_estimate(row_bytes, cells.len()));
        if partial_ok && bytes + row_bytes > max_bytes && cells.len() > 1 {
            // Cut the row where the answer fills; at least one cell goes.
            let mut taken = 0usize;
            let mut n = 0usize;
            for c in &cells {
                if n > 0 && bytes + taken + answer_cell_bytes(c) > max_bytes {
                    break;
                }
                taken += answer_cell_bytes(c);
                n += 1;
            }
            if n < cells.len() {
                let mut head = cells;
                let tail = head.split_off(n);
                state.carried = tail;
                state.carried_more_in_row = more_in_row;
                out.push((head, true));
                break;
            }
            bytes += row_bytes;
            out.push((cells, false));
        } else {
            bytes += row_bytes;
            out.push((cells, more_in_row));
        }
        if let Some(limit) = limit_of_rows {
            // A row counts when its last part is answered.
            if state.carried.is_empty() && !more_in_row {
                rows_ended += 1;
                if rows_ended >= limit {
                    state.scan_done = true;
                    state.end_rows();
                }
            }
        }
    }
    Ok(Fetched::Rows(out))
}
