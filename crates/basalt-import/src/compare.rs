//! `basalt compare`: one table in two clusters that speak HBase's native
//! RPC (HBase and Basalt, or two of either), compared cell by cell, range
//! by range (in the spirit of HBase's HashTable/SyncTable).
//!
//! Each side is found as HBase's own clients find a cluster: its
//! ZooKeeper's `meta-region-server` names the server answering
//! `hbase:meta`, a scan of `hbase:meta` lists the table's regions and their
//! servers, and each region is scanned with `ClientService.Scan` (every
//! version; cells in cell blocks). Both sides stream in key order, so one
//! merge finds every difference without holding a table in memory.
//!
//! The report has, for each range (the first side's regions), the rows
//! and cells of each side and a digest of each (a hash of every cell's
//! coordinates and value, in order): equal digests mean equal ranges, and
//! a digest can be kept to compare with a later run. The first differing
//! rows are named with what each side has of them.
//!
//! What is compared is what a client reads: every version of every cell
//! the scan returns (delete markers and what they hide are not: whether
//! a compaction dropped them differs between two clusters).

use std::collections::BTreeMap;
use std::net::ToSocketAddrs;
use std::time::Duration;

use basalt_rpc::client::RpcClient;
use basalt_rpc::proto::client::{Column, Scan, ScanRequest, ScanResponse};
use basalt_rpc::proto::hbase::{region_specifier, MetaRegionServer, RegionInfo, RegionSpecifier};
use basalt_rpc::zk::{read_znode, ZkConfig};
use basalt_types::{Cell, Error, Result};
use bytes::Bytes;
use md5::{Digest, Md5};
use prost::Message;

/// The name `hbase:meta`'s one region answers to.
const META_REGION: &[u8] = b"hbase:meta,,1";
/// Rows asked per scan call.
const ROWS_PER_CALL: u32 = 1000;
/// Differing rows described in the report.
pub const DEFAULT_SHOWN: usize = 10;

/// One cluster to read from.
#[derive(Debug, Clone)]
pub struct Side {
    /// How the report names it ("HBase", "Basalt").
    pub name: String,
    /// Its ZooKeeper (quorum and znode parent).
    pub zookeeper: ZkConfig,
}

/// One region of a table and the server holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Its full region name (its `hbase:meta` row).
    pub name: Bytes,
    /// First row (inclusive).
    pub start_key: Bytes,
    /// End row (exclusive; empty: the table's end).
    pub end_key: Bytes,
    /// `host:port` of its server.
    pub server: String,
}

fn rpc_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::invalid(format!("{what}: {e}"))
}

/// The `host:port` answering `hbase:meta`, from the side's ZooKeeper.
pub fn meta_server(side: &Side) -> Result<String> {
    let location = read_znode::<MetaRegionServer>(&side.zookeeper, "meta-region-server")
        .map_err(|e| rpc_error(&format!("{}: ZooKeeper", side.name), e))?
        .ok_or_else(|| {
            Error::invalid(format!(
                "{}: no {}/meta-region-server in ZooKeeper {} (is the cluster running?)",
                side.name, side.zookeeper.znode_parent, side.zookeeper.quorum
            ))
        })?;
    let server = location.server.ok_or_else(|| {
        Error::invalid(format!("{}: meta-region-server names no server", side.name))
    })?;
    Ok(format!(
        "{}:{}",
        server.host_name,
        server.port.unwrap_or(16020)
    ))
}

fn connect(server: &str) -> Result<RpcClient> {
    let addr = server
        .to_socket_addrs()
        .map_err(|e| rpc_error(server, e))?
        .next()
        .ok_or_else(|| Error::invalid(format!("{server} resolves to no address")))?;
    RpcClient::connect_timeout(&addr, "ClientService", true, Duration::from_secs(60))
        .map_err(|e| rpc_error(&format!("connecting to {server}"), e))
}

fn region_spec(name: &[u8]) -> Option<RegionSpecifier> {
    Some(RegionSpecifier {
        r#type: region_specifier::RegionSpecifierType::RegionName as i32,
        value: name.to_vec(),
    })
}

/// One batch of a scan: its rows, the scanner to continue with, and
/// whether the region has more.
struct Batch {
    rows: Vec<Vec<Cell>>,
    scanner_id: Option<u64>,
    more: bool,
}

fn fetch(client: &mut RpcClient, request: &ScanRequest, what: &str) -> Result<Batch> {
    let answer = client
        .call("Scan", request, &[])
        .map_err(|e| rpc_error(what, e))?;
    let response: ScanResponse = answer.decode().map_err(|e| rpc_error(what, e))?;
    let mut cells = answer.cells.into_iter();
    let mut rows = Vec::new();
    for count in &response.cells_per_result {
        let row: Vec<Cell> = cells.by_ref().take(*count as usize).collect();
        if !row.is_empty() {
            rows.push(row);
        }
    }
    // HBase answers more_results_in_region on every call; a server that
    // does not is done when a call brings nothing.
    let more = response.more_results.unwrap_or(true)
        && response
            .more_results_in_region
            .unwrap_or(!response.cells_per_result.is_empty());
    Ok(Batch {
        rows,
        scanner_id: response.scanner_id.or(request.scanner_id),
        more,
    })
}

fn open_request(region: &[u8], scan: Scan) -> ScanRequest {
    ScanRequest {
        region: region_spec(region),
        scan: Some(scan),
        number_of_rows: Some(ROWS_PER_CALL),
        client_handles_partials: Some(false),
        client_handles_heartbeats: Some(false),
        ..Default::default()
    }
}

fn next_request(scanner_id: u64, next_call_seq: u64) -> ScanRequest {
    ScanRequest {
        scanner_id: Some(scanner_id),
        number_of_rows: Some(ROWS_PER_CALL),
        next_call_seq: Some(next_call_seq),
        client_handles_partials: Some(false),
        client_handles_heartbeats: Some(false),
        ..Default::default()
    }
}

fn close(client: &mut RpcClient, scanner_id: u64) {
    // Best effort: a scanner left open expires with its lease.
    let _ = client.call(
        "Scan",
        &ScanRequest {
            scanner_id: Some(scanner_id),
            close_scanner: Some(true),
            number_of_rows: Some(0),
            ..Default::default()
        },
        &[],
    );
}

/// Scans one region, calling `row` with each row's cells in order.
fn scan_region(
    client: &mut RpcClient,
    region: &[u8],
    scan: Scan,
    row: &mut dyn FnMut(Vec<Cell>) -> Result<()>,
) -> Result<()> {
    let what = format!("scanning region {}", String::from_utf8_lossy(region));
    let mut batch = fetch(client, &open_request(region, scan), &what)?;
    let mut seq = 0;
    loop {
        for r in std::mem::take(&mut batch.rows) {
            row(r)?;
        }
        let Some(id) = batch.scanner_id else {
            return Ok(());
        };
        if !batch.more {
            close(client, id);
            return Ok(());
        }
        // The opening call carries no number; the first next is 0.
        batch = fetch(client, &next_request(id, seq), &what)?;
        seq += 1;
    }
}

/// The serving regions of `table` on `side`, in key order, from its
/// `hbase:meta`.
pub fn regions(side: &Side, table: &str) -> Result<Vec<Located>> {
    let meta = meta_server(side)?;
    let mut client = connect(&meta)?;
    // HBase's own bounds for a table's rows in hbase:meta: `T,,` to
    // `T ,,`. Meta rows compare part by part (table, start key, id), so
    // `T,` would sort after `T,,<id>` and miss the first region.
    let mut start = table.as_bytes().to_vec();
    start.extend_from_slice(b",,");
    let mut stop = table.as_bytes().to_vec();
    stop.extend_from_slice(b" ,,");
    let scan = Scan {
        start_row: Some(Bytes::from(start)),
        stop_row: Some(Bytes::from(stop)),
        column: vec![Column {
            family: Bytes::from_static(b"info"),
            qualifier: vec![],
        }],
        ..Default::default()
    };
    let mut found = Vec::new();
    scan_region(&mut client, META_REGION, scan, &mut |cells| {
        let get = |q: &[u8]| {
            cells
                .iter()
                .find(|c| &c.qualifier[..] == q)
                .map(|c| c.value.clone())
        };
        let Some(info) = get(b"regioninfo") else {
            return Ok(());
        };
        let info = info.strip_prefix(b"PBUF").ok_or_else(|| {
            Error::invalid(format!(
                "{}: an hbase:meta regioninfo lacks PBUF",
                side.name
            ))
        })?;
        let info = RegionInfo::decode(info)
            .map_err(|e| rpc_error(&format!("{}: an hbase:meta regioninfo", side.name), e))?;
        if info.split.unwrap_or(false)
            || info.offline.unwrap_or(false)
            || info.replica_id.unwrap_or(0) != 0
        {
            return Ok(());
        }
        let server = get(b"server")
            .map(|s| String::from_utf8_lossy(&s).into_owned())
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{}: region {} of {table} is not open on any server",
                    side.name,
                    String::from_utf8_lossy(&cells[0].row)
                ))
            })?;
        found.push(Located {
            name: cells[0].row.clone(),
            start_key: Bytes::from(info.start_key.unwrap_or_default()),
            end_key: Bytes::from(info.end_key.unwrap_or_default()),
            server,
        });
        Ok(())
    })?;
    if found.is_empty() {
        return Err(Error::TableNotFound(format!("{table} (on {})", side.name)));
    }
    found.sort_by(|a, b| a.start_key.cmp(&b.start_key));
    Ok(found)
}

/// A side's rows in key order, region after region, one row at a time.
struct RowStream {
    regions: std::vec::IntoIter<Located>,
    connections: BTreeMap<String, RpcClient>,
    buffered: std::collections::VecDeque<Vec<Cell>>,
    /// The region being read: its server, name, scanner and next call's
    /// number.
    open: Option<(String, Bytes, u64, u64)>,
    name: String,
}

impl RowStream {
    fn new(side: &Side, table: &str) -> Result<RowStream> {
        Ok(RowStream {
            regions: regions(side, table)?.into_iter(),
            connections: BTreeMap::new(),
            buffered: Default::default(),
            open: None,
            name: side.name.clone(),
        })
    }

    fn client(&mut self, server: &str) -> Result<&mut RpcClient> {
        Ok(match self.connections.entry(server.to_string()) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => e.insert(connect(server)?),
        })
    }

    /// The next row: the buffered batch's, else the open region's next
    /// batch, else the next region's first.
    fn next_row(&mut self) -> Result<Option<Vec<Cell>>> {
        loop {
            if let Some(row) = self.buffered.pop_front() {
                return Ok(Some(row));
            }
            let (server, batch) = match self.open.take() {
                Some((server, region, id, seq)) => {
                    let what = format!(
                        "{}: scanning {}",
                        self.name,
                        String::from_utf8_lossy(&region)
                    );
                    // `seq` is the number of the next call (0 after the open).
                    let batch = fetch(self.client(&server)?, &next_request(id, seq), &what)?;
                    self.open = Some((server.clone(), region, id, seq + 1));
                    (server, batch)
                }
                None => {
                    let Some(located) = self.regions.next() else {
                        return Ok(None);
                    };
                    let scan = Scan {
                        start_row: Some(located.start_key.clone()),
                        stop_row: Some(located.end_key.clone()),
                        max_versions: Some(i32::MAX as u32),
                        ..Default::default()
                    };
                    let what = format!(
                        "{}: scanning {}",
                        self.name,
                        String::from_utf8_lossy(&located.name)
                    );
                    let batch = fetch(
                        self.client(&located.server)?,
                        &open_request(&located.name, scan),
                        &what,
                    )?;
                    if let Some(id) = batch.scanner_id {
                        self.open = Some((located.server.clone(), located.name.clone(), id, 0));
                    }
                    (located.server, batch)
                }
            };
            self.buffered.extend(batch.rows);
            if !batch.more {
                if let Some((_, _, id, _)) = self.open.take() {
                    close(self.client(&server)?, id);
                }
            }
        }
    }
}

/// A cell's part in a digest and in a comparison: what a client reads.
fn same_cell(a: &Cell, b: &Cell) -> bool {
    a.row == b.row
        && a.family == b.family
        && a.qualifier == b.qualifier
        && a.timestamp == b.timestamp
        && a.cell_type == b.cell_type
        && a.value == b.value
}

/// Adds a cell to a digest: each part length-prefixed, so no two
/// different cells feed the same bytes. MD5: stable across versions and
/// machines, so a digest can be compared with a later run's.
fn digest_cell(hasher: &mut Md5, cell: &Cell) {
    for part in [&cell.row, &cell.family, &cell.qualifier, &cell.value] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher.update(cell.timestamp.to_be_bytes());
    hasher.update([cell.cell_type as u8]);
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// One range's figures on both sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeReport {
    /// First row (inclusive).
    pub start_key: Bytes,
    /// End row (exclusive; empty: the end).
    pub end_key: Bytes,
    /// Rows and cells on each side.
    pub rows: [u64; 2],
    /// Cells on each side.
    pub cells: [u64; 2],
    /// Each side's digest of the range (hex MD5).
    pub digests: [String; 2],
}

impl RangeReport {
    /// True when both sides hold the same cells in this range.
    pub fn equal(&self) -> bool {
        self.rows[0] == self.rows[1]
            && self.cells[0] == self.cells[1]
            && self.digests[0] == self.digests[1]
    }
}

/// One differing row: what each side has of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowDifference {
    /// The row.
    pub row: Bytes,
    /// Each side's cells of it (empty: the side lacks the row).
    pub cells: [Vec<Cell>; 2],
}

/// What a comparison found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompareReport {
    /// The ranges (the first side's regions), in order.
    pub ranges: Vec<RangeReport>,
    /// Rows that differ.
    pub differing_rows: u64,
    /// The first of them, with their cells.
    pub first_differences: Vec<RowDifference>,
}

impl CompareReport {
    /// True when the two tables hold the same cells.
    pub fn equal(&self) -> bool {
        self.differing_rows == 0
    }
}

/// Compares `table` on `sides[0]` with `sides[1]` (`table_b` there when
/// given), describing at most `shown` differing rows.
pub fn compare(
    sides: &[Side; 2],
    table: &str,
    table_b: Option<&str>,
    shown: usize,
) -> Result<CompareReport> {
    let ranges_of = regions(&sides[0], table)?;
    let mut a = RowStream::new(&sides[0], table)?;
    let mut b = RowStream::new(&sides[1], table_b.unwrap_or(table))?;
    let mut report = CompareReport {
        ranges: ranges_of
            .iter()
            .map(|r| RangeReport {
                start_key: r.start_key.clone(),
                end_key: r.end_key.clone(),
                rows: [0; 2],
                cells: [0; 2],
                digests: Default::default(),
            })
            .collect(),
        differing_rows: 0,
        first_differences: Vec::new(),
    };
    let mut hashers: Vec<[Md5; 2]> = report
        .ranges
        .iter()
        .map(|_| [Md5::new(), Md5::new()])
        .collect();
    let range_of = |row: &[u8]| -> usize {
        ranges_of
            .iter()
            .rposition(|r| row >= &r.start_key[..])
            .unwrap_or(0)
    };
    let mut count = |side: usize, row: &[Cell], report: &mut CompareReport| {
        if let Some(first) = row.first() {
            let i = range_of(&first.row);
            report.ranges[i].rows[side] += 1;
            report.ranges[i].cells[side] += row.len() as u64;
            for cell in row {
                digest_cell(&mut hashers[i][side], cell);
            }
        }
    };
    let mut next_a = a.next_row()?;
    let mut next_b = b.next_row()?;
    loop {
        let (left, right) = match (&next_a, &next_b) {
            (None, None) => break,
            (Some(x), None) => (Some(x.clone()), None),
            (None, Some(y)) => (None, Some(y.clone())),
            (Some(x), Some(y)) => match x[0].row.cmp(&y[0].row) {
                std::cmp::Ordering::Less => (Some(x.clone()), None),
                std::cmp::Ordering::Greater => (None, Some(y.clone())),
                std::cmp::Ordering::Equal => (Some(x.clone()), Some(y.clone())),
            },
        };
        let same = match (&left, &right) {
            (Some(x), Some(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(c, d)| same_cell(c, d))
            }
            _ => false,
        };
        if let Some(x) = &left {
            count(0, x, &mut report);
            next_a = a.next_row()?;
        }
        if let Some(y) = &right {
            count(1, y, &mut report);
            next_b = b.next_row()?;
        }
        if !same {
            report.differing_rows += 1;
            if report.first_differences.len() < shown {
                let row = left
                    .as_ref()
                    .or(right.as_ref())
                    .and_then(|r| r.first())
                    .map(|c| c.row.clone())
                    .unwrap_or_default();
                report.first_differences.push(RowDifference {
                    row,
                    cells: [left.unwrap_or_default(), right.unwrap_or_default()],
                });
            }
        }
    }
    for (range, [a, b]) in report.ranges.iter_mut().zip(hashers) {
        range.digests = [hex(&a.finalize()), hex(&b.finalize())];
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt_types::CellType;

    fn cell(row: &str, value: &str) -> Cell {
        Cell {
            row: Bytes::copy_from_slice(row.as_bytes()),
            family: Bytes::from_static(b"f"),
            qualifier: Bytes::from_static(b"q"),
            timestamp: 1,
            cell_type: CellType::Put,
            sequence_id: 7,
            value: Bytes::copy_from_slice(value.as_bytes()),
            ttl_millis: None,
        }
    }

    #[test]
    fn cells_differing_only_in_what_a_client_cannot_see_are_the_same() {
        let a = cell("r", "v");
        let mut b = cell("r", "v");
        b.sequence_id = 99;
        assert!(same_cell(&a, &b));
        assert!(!same_cell(&a, &cell("r", "w")));
        let mut h1 = Md5::new();
        let mut h2 = Md5::new();
        digest_cell(&mut h1, &a);
        digest_cell(&mut h2, &b);
        assert_eq!(h1.finalize(), h2.finalize());
    }
}
