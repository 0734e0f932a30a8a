//! `hbase:meta` as native clients read it, and region names.
//!
//! HBase's clients find the region of a row by a reverse scan of
//! `hbase:meta` from `<table>,<row>,` (or `<table>,<row>,99999999999999`).
//! Basalt keeps its catalog elsewhere, so this module builds the rows
//! `hbase:meta` would hold from the live region locations on every read:
//! they are in step with splits and merges by construction.
//!
//! Row format (facts from HBase 2.x):
//! - region rows, key `<table>,<start key>,<region id>.<encoded name>.`,
//!   family `info`: `regioninfo` (`PBUF` + RegionInfo), `server`
//!   (`host:port`), `serverstartcode` (8-byte big-endian), `sn`
//!   (`host,port,startcode`), `seqnumDuringOpen` (8-byte big-endian),
//!   `state` (`OPEN`);
//! - table rows, key `<table>`, family `table`: `state` (a TableState
//!   message, no magic).
//!
//! HBase 2's `hbase:namespace` (`namespace_table.rs`) has its table row
//! and its one region row here too, as in HBase's `hbase:meta`: the Java
//! client looks its region up before reading it.

use basalt::{RegionInfo, RegionState};
use basalt_types::{Cell, CellType};
use bytes::Bytes;

use crate::context::RpcContext;
use crate::error::RpcError;
use crate::namespace_table::{self, NAMESPACE_TABLE};
use crate::proto;
use crate::proto::hbase::region_specifier::RegionSpecifierType;

/// `hbase:meta`'s one region, by full name (HBase's old-format name).
pub const META_REGION_NAME: &[u8] = b"hbase:meta,,1";
/// `hbase:meta`'s one region, by encoded name.
pub const META_ENCODED_NAME: &[u8] = b"1588230740";
/// `hbase:meta`'s table name.
pub const META_TABLE: &str = "hbase:meta";
/// The prefix of every protobuf value HBase stores in `hbase:meta` and
/// ZooKeeper.
pub const PB_MAGIC: &[u8] = b"PBUF";

/// A table name in two parts: `default` for unqualified names.
pub fn table_name_proto(name: &str) -> proto::hbase::TableName {
    let (namespace, qualifier) = match name.split_once(':') {
        Some((ns, q)) => (ns, q),
        None => (basalt::DEFAULT_NAMESPACE, name),
    };
    proto::hbase::TableName {
        namespace: namespace.as_bytes().to_vec(),
        qualifier: qualifier.as_bytes().to_vec(),
    }
}

/// Basalt's name of a table (`ns:q`, or `q` in the default namespace).
pub fn table_name_text(name: &proto::hbase::TableName) -> Result<String, RpcError> {
    let namespace = std::str::from_utf8(&name.namespace)
        .map_err(|_| RpcError::do_not_retry("a table namespace is not UTF-8"))?;
    let qualifier = std::str::from_utf8(&name.qualifier)
        .map_err(|_| RpcError::do_not_retry("a table qualifier is not UTF-8"))?;
    if qualifier.is_empty() {
        return Err(RpcError::do_not_retry(
            "a table name has an empty qualifier",
        ));
    }
    Ok(
        if namespace.is_empty() || namespace == basalt::DEFAULT_NAMESPACE {
            qualifier.to_string()
        } else {
            format!("{namespace}:{qualifier}")
        },
    )
}

/// A region's `RegionInfo` message.
pub fn region_info_proto(info: &RegionInfo) -> proto::hbase::RegionInfo {
    proto::hbase::RegionInfo {
        region_id: info.id,
        table_name: Some(table_name_proto(&info.table)),
        start_key: Some(info.start_key.to_vec()),
        end_key: Some(info.end_key.to_vec()),
        offline: Some(false),
        split: Some(false),
        replica_id: Some(0),
    }
}

/// `hbase:meta`'s own `RegionInfo` (region id 1, the whole key space).
pub fn meta_region_info() -> proto::hbase::RegionInfo {
    proto::hbase::RegionInfo {
        region_id: 1,
        table_name: Some(table_name_proto(META_TABLE)),
        start_key: Some(Vec::new()),
        end_key: Some(Vec::new()),
        offline: Some(false),
        split: Some(false),
        replica_id: Some(0),
    }
}

/// What a `RegionSpecifier` names.
#[derive(Debug, Clone)]
pub enum Target {
    /// `hbase:meta`.
    Meta,
    /// HBase 2's `hbase:namespace` (its one region).
    Namespace,
    /// A user table's region, as served now.
    Region {
        /// Identity and key range.
        info: RegionInfo,
        /// Open, or failed to open.
        state: RegionState,
    },
}

/// The region `spec` names, or `NotServingRegionException` when no serving
/// region has that name (it split, merged, or its table is gone): the
/// client then re-reads `hbase:meta`, as with HBase.
pub fn resolve(
    ctx: &RpcContext,
    spec: Option<&proto::hbase::RegionSpecifier>,
) -> Result<Target, RpcError> {
    let spec = spec.ok_or_else(|| RpcError::missing("region specifier"))?;
    let encoded = spec.r#type == RegionSpecifierType::EncodedRegionName as i32;
    if !encoded && spec.r#type != RegionSpecifierType::RegionName as i32 {
        return Err(RpcError::do_not_retry(format!(
            "unknown region specifier type {}",
            spec.r#type
        )));
    }
    let name = &spec.value[..];
    if (encoded && name == META_ENCODED_NAME) || (!encoded && name == META_REGION_NAME) {
        return Ok(Target::Meta);
    }
    // Every server answers it, as hbase:meta: it is built from the catalog.
    if namespace_table::is_region(name, encoded) {
        return Ok(Target::Namespace);
    }
    let tables: Vec<String> = if encoded {
        ctx.db.list_tables()
    } else {
        let table = table_of_region_name(name).ok_or_else(|| RpcError::not_serving(name))?;
        vec![table.to_string()]
    };
    for table in tables {
        let Ok(regions) = ctx.db.region_states(&table) else {
            continue;
        };
        for (info, state) in regions {
            let matches = if encoded {
                info.encoded_name().as_bytes() == name
            } else {
                info.region_name() == name
            };
            if matches {
                // A cluster member serves only the regions open here; a
                // native client then reads hbase:meta again (HBase's way).
                if ctx.db.server_name().is_some()
                    && ctx.db.region_server().region(info.id).is_none()
                {
                    return Err(RpcError::not_serving(name));
                }
                return Ok(Target::Region { info, state });
            }
        }
    }
    Err(RpcError::not_serving(name))
}

/// The table part of a full region name: table names have no commas, so
/// it is everything before the first one.
fn table_of_region_name(name: &[u8]) -> Option<&str> {
    let comma = name.iter().position(|&b| b == b',')?;
    std::str::from_utf8(&name[..comma]).ok()
}

/// What `spec` names, for a call on `row`. Every read and write comes
/// here, so the usual case is one locator lookup: the region serving `row`
/// now is the one named. Anything else (an encoded name, a region split or
/// merged since, a disabled table) takes [`resolve`]'s full listing, which
/// also says why.
pub fn resolve_for_row(
    ctx: &RpcContext,
    spec: Option<&proto::hbase::RegionSpecifier>,
    row: &[u8],
) -> Result<Target, RpcError> {
    if let Some(spec) = spec.filter(|s| s.r#type == RegionSpecifierType::RegionName as i32) {
        if let Some(table) = table_of_region_name(&spec.value) {
            if let Ok(region) = ctx.db.locator().locate(table, row) {
                // A region that failed to open goes the long way: the
                // listing carries the failure's details.
                if region.info().region_name() == spec.value && region.open_failure().is_none() {
                    return Ok(Target::Region {
                        info: region.info().clone(),
                        state: RegionState::Open,
                    });
                }
            }
        }
    }
    resolve(ctx, spec)
}

/// The region `spec` names, refusing `hbase:meta` (for calls that only make
/// sense on a user region).
pub fn resolve_user_region(
    ctx: &RpcContext,
    spec: Option<&proto::hbase::RegionSpecifier>,
) -> Result<RegionInfo, RpcError> {
    match resolve(ctx, spec)? {
        Target::Region { info, .. } => Ok(info),
        Target::Meta => Err(meta_is_read_only()),
        Target::Namespace => Err(namespace_table::read_only()),
    }
}

/// The answer to a write, flush, split or compaction of `hbase:meta`.
pub fn meta_is_read_only() -> RpcError {
    RpcError::do_not_retry(
        "hbase:meta is served from Basalt's catalog and cannot be written, flushed, split or compacted",
    )
}

/// An 8-byte big-endian long, as HBase's `Bytes.toBytes(long)`.
pub fn long_bytes(value: i64) -> Bytes {
    Bytes::copy_from_slice(&value.to_be_bytes())
}

/// A `Put` cell of `hbase:meta` (timestamp: the server's start code, so
/// every read of the same layout answers the same cells).
pub fn meta_cell(
    row: &Bytes,
    family: &'static [u8],
    qualifier: &'static [u8],
    ts: i64,
    value: Bytes,
) -> Cell {
    Cell {
        row: row.clone(),
        family: Bytes::from_static(family),
        qualifier: Bytes::from_static(qualifier),
        timestamp: ts,
        cell_type: CellType::Put,
        sequence_id: 0,
        value,
        ttl_millis: None,
    }
}

/// HBase's order of `hbase:meta` rows: by table, then start key, then the
/// rest (id and encoded name). Plain byte order would put the region whose
/// start key is `a\x00` before the one starting at `a` (`\x00` < `,`).
pub fn compare_meta_rows(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    /// The table, and (for region rows) the start key and the rest.
    type Parts<'a> = (&'a [u8], Option<(&'a [u8], &'a [u8])>);
    fn parts(row: &[u8]) -> Parts<'_> {
        match row.iter().position(|&c| c == b',') {
            None => (row, None),
            Some(first) => {
                let rest = &row[first + 1..];
                match rest.iter().rposition(|&c| c == b',') {
                    None => (&row[..first], Some((rest, &[][..]))),
                    Some(last) => (&row[..first], Some((&rest[..last], &rest[last + 1..]))),
                }
            }
        }
    }
    let (table_a, rest_a) = parts(a);
    let (table_b, rest_b) = parts(b);
    table_a.cmp(table_b).then_with(|| rest_a.cmp(&rest_b))
}

/// Every row `hbase:meta` would hold now, in meta order: for each table its
/// state row, then one row per region (`hbase:namespace`'s included).
pub fn rows(ctx: &RpcContext) -> Vec<basalt::RowResult> {
    catch_up(ctx);
    let mut tables = ctx.db.list_tables();
    tables.push(NAMESPACE_TABLE.to_string());
    rows_of(ctx, tables)
}

/// In a cluster, reads the catalog again when the master committed a newer
/// version: HBase's clients expect `hbase:meta` to show a DDL as soon as
/// the master's call returns (`Admin.tableExists` right after
/// `deleteTable`), and the watch on the catalog version can lag behind
/// that. A failed read keeps the catalog held (logged): a look-up answered
/// from it is at worst stale, and the client retries on `NotServingRegion`.
/// `hbase:namespace` reads catch up the same way (a namespace deleted
/// through the master must be gone from the next read).
pub(crate) fn catch_up(ctx: &RpcContext) {
    if let Err(e) = ctx.db.refresh_cluster() {
        tracing::warn!(error = %e, "hbase:meta answered from the catalog held: could not read the newest");
    }
}

/// The rows of `hbase:meta` for one row key: its table's rows (a get needs
/// no other table's regions).
pub fn rows_for_key(ctx: &RpcContext, key: &[u8]) -> Vec<basalt::RowResult> {
    catch_up(ctx);
    let table = match key.iter().position(|&b| b == b',') {
        Some(comma) => &key[..comma],
        None => key,
    };
    match std::str::from_utf8(table) {
        Ok(table) if table == NAMESPACE_TABLE || ctx.db.table_exists(table) => {
            rows_of(ctx, vec![table.to_string()])
        }
        _ => Vec::new(),
    }
}

/// The rows of `tables`, in meta order.
fn rows_of(ctx: &RpcContext, tables: Vec<String>) -> Vec<basalt::RowResult> {
    let identity = &ctx.identity;
    let ts = i64::try_from(identity.start_code).unwrap_or(i64::MAX);
    let server = Bytes::from(format!("{}:{}", identity.host, identity.region_server_port));
    let server_name = Bytes::from(identity.region_server_text());
    let start_code = long_bytes(ts);
    let mut rows = Vec::new();
    for table in tables {
        let (enabled, regions) = if table == NAMESPACE_TABLE {
            // Always enabled, its one region served by the server answering.
            (
                true,
                vec![(namespace_table::region_info(), RegionState::Open, None)],
            )
        } else {
            // Either fails when the table was dropped since the listing.
            let (Ok(enabled), Ok(regions)) = (
                ctx.db.is_table_enabled(&table),
                ctx.db.region_holders(&table),
            ) else {
                continue;
            };
            (enabled, regions)
        };
        let state = proto::hbase::TableState {
            state: if enabled {
                proto::hbase::table_state::State::Enabled as i32
            } else {
                proto::hbase::table_state::State::Disabled as i32
            },
        };
        let row = Bytes::from(table.clone().into_bytes());
        rows.push(basalt::RowResult {
            row: row.clone(),
            cells: vec![meta_cell(
                &row,
                b"table",
                b"state",
                ts,
                Bytes::from(prost::Message::encode_to_vec(&state)),
            )],
        });
        for (region, region_state, holder) in regions {
            let row = region.region_name();
            // In a cluster each region names the server holding it (its
            // HBase name `host,port,startcode`); in one process, this one.
            let held = holder
                .as_deref()
                .and_then(|h| basalt::cluster::ServerName::parse(h).ok());
            let (server, start_code, server_name) = match &held {
                Some(h) => (
                    Bytes::from(h.address()),
                    long_bytes(i64::try_from(h.start_code).unwrap_or(i64::MAX)),
                    Bytes::from(h.to_string()),
                ),
                None => (server.clone(), start_code.clone(), server_name.clone()),
            };
            let mut regioninfo = PB_MAGIC.to_vec();
            prost::Message::encode(&region_info_proto(&region), &mut regioninfo)
                .unwrap_or_default();
            // A disabled table's regions are closed in HBase's meta; a
            // region that failed to open says so (AdminService agrees).
            let state: &'static [u8] = match region_state {
                _ if !enabled => b"CLOSED",
                RegionState::Open => b"OPEN",
                RegionState::Offline => b"OFFLINE",
                _ => b"FAILED_OPEN",
            };
            // HBase's qualifiers in byte order: regioninfo, seqnumDuringOpen,
            // server, serverstartcode, sn, state.
            let cells = vec![
                meta_cell(&row, b"info", b"regioninfo", ts, Bytes::from(regioninfo)),
                meta_cell(&row, b"info", b"seqnumDuringOpen", ts, long_bytes(1)),
                meta_cell(&row, b"info", b"server", ts, server),
                meta_cell(&row, b"info", b"serverstartcode", ts, start_code),
                meta_cell(&row, b"info", b"sn", ts, server_name),
                meta_cell(&row, b"info", b"state", ts, Bytes::from_static(state)),
            ];
            rows.push(basalt::RowResult { row, cells });
        }
    }
    rows.sort_by(|a, b| compare_meta_rows(&a.row, &b.row));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn meta_rows_sort_by_table_then_start_key() {
        assert_eq!(
            compare_meta_rows(b"t,a,1.x.", b"t,a\x00,1.y."),
            Ordering::Less
        );
        assert_eq!(compare_meta_rows(b"t", b"t,,1.x."), Ordering::Less);
        assert_eq!(compare_meta_rows(b"t,,1.x.", b"t1,,1.x."), Ordering::Less);
        assert_eq!(
            compare_meta_rows(b"t,a,b,1.x.", b"t,a,b,1.x."),
            Ordering::Equal
        );
        // A start key holding a comma still sorts by its bytes.
        assert_eq!(
            compare_meta_rows(b"t,a,b,1.x.", b"t,b,1.y."),
            Ordering::Less
        );
    }

    #[test]
    fn required_fields_are_written_even_when_they_hold_their_default() {
        // Java's parser refuses a message missing a required field: an
        // ENABLED (0) table state must still be on the wire.
        let state = proto::hbase::TableState {
            state: proto::hbase::table_state::State::Enabled as i32,
        };
        assert_eq!(prost::Message::encode_to_vec(&state), vec![0x08, 0x00]);
    }

    #[test]
    fn table_names_split_into_namespace_and_qualifier() {
        let name = table_name_proto("ns:t");
        assert_eq!(name.namespace, b"ns");
        assert_eq!(table_name_text(&name).unwrap(), "ns:t");
        let name = table_name_proto("t");
        assert_eq!(name.namespace, b"default");
        assert_eq!(table_name_text(&name).unwrap(), "t");
    }
}
