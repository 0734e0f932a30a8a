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

use basalt::{RegionInfo, RegionState};
use basalt_types::{Cell, CellType};
use bytes::Bytes;

use crate::context::RpcContext;
use crate::error::RpcError;
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
    let tables: Vec<String> = if encoded {
        ctx.db.list_tables()
    } else {
        // Table names have no commas: the name is everything before the
        // first one.
        let table = name
            .iter()
            .position(|&b| b == b',')
            .and_then(|i| std::str::from_utf8(&name[..i]).ok())
            .ok_or_else(|| RpcError::not_serving(name))?;
        vec![table.to_string()]
    };
    for table in tables {
        let Ok(regions) = ctx.db.list_regions(&table) else {
            continue;
        };
        for region in regions {
            let matches = if encoded {
                region.info.encoded_name().as_bytes() == name
            } else {
                region.info.region_name() == name
            };
            if matches {
                return Ok(Target::Region {
                    info: region.info,
                    state: region.state,
                });
            }
        }
    }
    Err(RpcError::not_serving(name))
}

/// The region `spec` names, refusing `hbase:meta` (for calls that only make
/// sense on a user region).
pub fn resolve_user_region(
    ctx: &RpcContext,
    spec: Option<&proto::hbase::RegionSpecifier>,
) -> Result<RegionInfo, RpcError> {
    match resolve(ctx, spec)? {
        Target::Region { info, .. } => Ok(info),
        Target::Meta => Err(RpcError::do_not_retry(
            "hbase:meta is served from Basalt's catalog and cannot be written, flushed, split or compacted",
        )),
    }
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
    }
}
