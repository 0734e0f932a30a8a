//! `AdminService`: what HBase clients ask a region server about its own
//! regions (their identity and load), and the per-region flush and
//! compaction `Admin.flush*` / `Admin.compact*` send to the region's
//! server, and `ReplicateWALEntry`, the edits a replicating HBase cluster
//! sends its peer (`replication_sink`).
//!
//! The regions online here are `hbase:meta`'s and `hbase:namespace`'s
//! (built from Basalt's catalog) and every open region of every enabled
//! table: a disabled
//! table's regions are closed in HBase's terms, and a region whose files
//! failed to open is in transition (`FAILED_OPEN`); calls naming either
//! answer `NotServingRegionException`.
//!
//! Methods not served, answered with `DoNotRetryIOException` naming the
//! method (the server does that for any method missing from [`METHODS`]):
//! `GetStoreFile`, `OpenRegion`, `WarmupRegion`, `CloseRegion`,
//! `CompactionSwitch`, `Replay`, `RollWALWriter`,
//! `StopServer`, `UpdateFavoredNodes`, `UpdateConfiguration`,
//! `ClearCompactionQueues`, `ClearRegionBlockCache`,
//! `GetSpaceQuotaSnapshots`, `ExecuteProcedures`, `GetSlowLogResponses`,
//! `GetLargeLogResponses`, `ClearSlowLogsResponses`, `GetLogEntries`.
//! Opening, closing and moving regions is the master's business in
//! Basalt, done inside DDL, split and merge.

use basalt::{CompactionState, RegionInfo, RegionState, RegionSummary};

use crate::call::{encode, Call, Method};
use crate::context::RpcContext;
use crate::error::RpcError;
use crate::meta::{self, Target, META_REGION_NAME, META_TABLE};
use crate::namespace_table::{self, NAMESPACE_TABLE};
use crate::proto::admin as a;
use crate::proto::cluster_status::RegionLoad;
use crate::proto::hbase::{region_specifier::RegionSpecifierType, EmptyMsg, RegionSpecifier};

/// The methods served.
pub const METHODS: &[Method] = &[
    Method {
        name: "GetRegionInfo",
        handler: get_region_info,
    },
    Method {
        name: "GetOnlineRegion",
        handler: get_online_region,
    },
    Method {
        name: "FlushRegion",
        handler: flush_region,
    },
    Method {
        name: "CompactRegion",
        handler: compact_region,
    },
    Method {
        name: "GetServerInfo",
        handler: get_server_info,
    },
    Method {
        name: "GetRegionLoad",
        handler: get_region_load,
    },
    Method {
        name: "ReplicateWALEntry",
        handler: crate::replication_sink::replicate_wal_entry,
    },
];

type Answer = Result<Vec<u8>, RpcError>;

/// Milliseconds since the epoch, by the system clock (0 before 1970).
pub(crate) fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A region named by its full name.
pub(crate) fn region_name_spec(name: &[u8]) -> RegionSpecifier {
    RegionSpecifier {
        r#type: RegionSpecifierType::RegionName as i32,
        value: name.to_vec(),
    }
}

/// The regions of user tables online here: every open region of every
/// enabled table, tables in name order, regions in key order.
pub(crate) fn online_regions(ctx: &RpcContext) -> Vec<RegionSummary> {
    let mut out = Vec::new();
    for name in ctx.db.list_tables() {
        // A table dropped since the listing is not part of the answer.
        let Ok(info) = ctx.db.describe_table(&name) else {
            continue;
        };
        if info.enabled {
            // In a cluster, the table's other regions are open on other
            // servers: only those held here are this server's.
            let here = ctx.db.server_name();
            out.extend(info.regions.into_iter().filter(|r| {
                r.state == RegionState::Open && (r.server.is_none() || r.server.as_deref() == here)
            }));
        }
    }
    out
}

fn mib(bytes: u64) -> Option<u32> {
    Some(u32::try_from(bytes >> 20).unwrap_or(u32::MAX))
}

/// A region's load as HBase reports it (sizes in whole MiB, rounded down).
pub(crate) fn region_load(region: &RegionSummary) -> RegionLoad {
    let memstore: u64 = region.stores.iter().map(|(_, s)| s.memstore_bytes).sum();
    RegionLoad {
        region_specifier: Some(region_name_spec(&region.info.region_name())),
        stores: Some(u32::try_from(region.stores.len()).unwrap_or(u32::MAX)),
        storefiles: Some(u32::try_from(region.store_files()).unwrap_or(u32::MAX)),
        // Basalt does not track uncompressed sizes; the stored size is
        // the closest figure it has.
        store_uncompressed_size_mb: mib(region.store_file_bytes()),
        storefile_size_mb: mib(region.store_file_bytes()),
        mem_store_size_mb: mib(memstore),
        read_requests_count: Some(region.load.read_requests),
        write_requests_count: Some(region.load.write_requests),
        // Every file is on this process's own storage.
        data_locality: Some(1.0),
        filtered_read_requests_count: Some(region.load.filtered_read_requests),
    }
}

/// The loads of the system tables' regions of `table` (all of them for
/// `None`): `hbase:meta`'s and `hbase:namespace`'s, every server answers
/// both.
pub(crate) fn system_region_loads(table: Option<&str>) -> Vec<RegionLoad> {
    let mut loads = Vec::new();
    if table.is_none_or(|t| t == META_TABLE) {
        loads.push(system_region_load(META_REGION_NAME, 2));
    }
    if table.is_none_or(|t| t == NAMESPACE_TABLE) {
        loads.push(system_region_load(
            &namespace_table::region_info().region_name(),
            1,
        ));
    }
    loads
}

/// A system table's region load: it has no files or memstore of its own
/// (its rows are built from Basalt's catalog on each read).
fn system_region_load(region_name: &[u8], stores: u32) -> RegionLoad {
    RegionLoad {
        region_specifier: Some(region_name_spec(region_name)),
        stores: Some(stores),
        storefiles: Some(0),
        store_uncompressed_size_mb: Some(0),
        storefile_size_mb: Some(0),
        mem_store_size_mb: Some(0),
        read_requests_count: Some(0),
        write_requests_count: Some(0),
        data_locality: Some(1.0),
        filtered_read_requests_count: Some(0),
    }
}

/// A region this server serves: a system table's (with its `RegionInfo`
/// message), or an open region of an enabled table; anything else is
/// `NotServingRegionException`.
enum Served {
    /// `hbase:meta` or `hbase:namespace`: nothing stored to flush or
    /// compact, never split or merged.
    System(crate::proto::hbase::RegionInfo),
    /// A user table's region.
    User(RegionInfo),
}

fn served(call: &Call<'_>, spec: Option<&RegionSpecifier>) -> Result<Served, RpcError> {
    match meta::resolve(call.ctx, spec)? {
        Target::Meta => Ok(Served::System(meta::meta_region_info())),
        Target::Namespace => Ok(Served::System(meta::region_info_proto(
            &namespace_table::region_info(),
        ))),
        Target::Region { info, state } => {
            let enabled = call.db.is_table_enabled(&info.table).unwrap_or(false);
            if !enabled || state != RegionState::Open {
                return Err(RpcError::not_serving(&info.region_name()));
            }
            Ok(Served::User(info))
        }
    }
}

/// Refuses a family the region's table does not have (HBase's
/// `NoSuchColumnFamilyException`).
fn check_family(call: &Call<'_>, info: &RegionInfo, family: Option<&[u8]>) -> Result<(), RpcError> {
    let Some(family) = family.filter(|f| !f.is_empty()) else {
        return Ok(());
    };
    let descriptor = call.db.table(&info.table)?.descriptor();
    if descriptor.get_family(family).is_none() {
        return Err(basalt::Error::NoSuchFamily {
            table: info.table.clone(),
            family: String::from_utf8_lossy(family).into_owned(),
        }
        .into());
    }
    Ok(())
}

/// The region's identity; its compaction state (what runs now, or a
/// daughter's link rewrite still due, so a client's wait for a compaction
/// after a split ends when the daughter is rewritten, as HBase's does) and
/// the row a split would use, when asked.
fn get_region_info(call: &mut Call<'_>, param: &[u8]) -> Answer {
    use a::get_region_info_response::CompactionState as Wire;
    let request = Call::decode::<a::GetRegionInfoRequest>(param, "GetRegionInfoRequest")?;
    let asks_compaction_state = request.compaction_state.unwrap_or(false);
    let answer = match served(call, request.region.as_ref())? {
        Served::System(region_info) => a::GetRegionInfoResponse {
            region_info: Some(region_info),
            compaction_state: asks_compaction_state.then_some(Wire::None as i32),
            splittable: Some(false),
            mergeable: Some(false),
            best_split_row: None,
        },
        Served::User(info) => {
            let region = call.db.region_server().region(info.id);
            let best_split_row = match (&region, request.best_split_row.unwrap_or(false)) {
                (Some(region), true) => region.split_point()?.map(|k| k.to_vec()),
                _ => None,
            };
            let compaction_state = asks_compaction_state.then(|| {
                let state = region.map_or(CompactionState::None, |r| r.compaction_state());
                let wire = match state {
                    CompactionState::None => Wire::None,
                    CompactionState::Minor => Wire::Minor,
                    CompactionState::Major => Wire::Major,
                };
                wire as i32
            });
            a::GetRegionInfoResponse {
                region_info: Some(meta::region_info_proto(&info)),
                compaction_state,
                splittable: Some(true),
                mergeable: Some(true),
                best_split_row,
            }
        }
    };
    Ok(encode(&answer))
}

fn get_online_region(call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<EmptyMsg>(param, "GetOnlineRegionRequest")?;
    let mut regions = vec![
        meta::meta_region_info(),
        meta::region_info_proto(&namespace_table::region_info()),
    ];
    regions.extend(
        online_regions(call.ctx)
            .iter()
            .map(|r| meta::region_info_proto(&r.info)),
    );
    Ok(encode(&a::GetOnlineRegionResponse {
        region_info: regions,
    }))
}

/// Flushes the region now. Basalt flushes whole regions: a family named
/// is checked to exist and the region flushed. `if_older_than_ts` is a
/// hint to skip a redundant flush; Basalt does not keep the time of the
/// last flush, and flushing again costs at most a small file, so it always
/// flushes. The system tables have no memstore: nothing to flush.
fn flush_region(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<a::FlushRegionRequest>(param, "FlushRegionRequest")?;
    let flushed = match served(call, request.region.as_ref())? {
        Served::System(_) => false,
        Served::User(info) => {
            check_family(call, &info, request.family.as_deref())?;
            call.db.region_server().flush_region(info.id)?;
            true
        }
    };
    Ok(encode(&a::FlushRegionResponse {
        last_flush_time: Some(now_millis()),
        flushed: Some(flushed),
        wrote_flush_wal_marker: Some(false),
    }))
}

/// Compacts the region now (major or minor). Basalt compacts a region's
/// stores together under one gate: a family named is checked to exist and
/// the whole region compacted, which includes it. The system tables have
/// no files: nothing to compact.
fn compact_region(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<a::CompactRegionRequest>(param, "CompactRegionRequest")?;
    if let Served::User(info) = served(call, request.region.as_ref())? {
        check_family(call, &info, request.family.as_deref())?;
        call.db.compact_region(
            info.encoded_name().as_bytes(),
            request.major.unwrap_or(false),
        )?;
    }
    Ok(encode(&EmptyMsg {}))
}

/// This region server; it has no web UI (port 0).
fn get_server_info(call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<EmptyMsg>(param, "GetServerInfoRequest")?;
    Ok(encode(&a::GetServerInfoResponse {
        server_info: Some(a::ServerInfo {
            server_name: Some(call.ctx.identity.region_server()),
            webui_port: Some(0),
        }),
    }))
}

/// The loads of one table's online regions (none for a table that does
/// not exist or is disabled, as HBase's region server answers), or of
/// every region online here.
fn get_region_load(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<a::GetRegionLoadRequest>(param, "GetRegionLoadRequest")?;
    let table = request
        .table_name
        .as_ref()
        .map(meta::table_name_text)
        .transpose()?;
    let mut loads = system_region_loads(table.as_deref());
    loads.extend(
        online_regions(call.ctx)
            .iter()
            .filter(|r| table.as_deref().is_none_or(|t| r.info.table == t))
            .map(region_load),
    );
    Ok(encode(&a::GetRegionLoadResponse {
        region_loads: loads,
    }))
}
