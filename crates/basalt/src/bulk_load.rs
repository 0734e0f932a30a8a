//! HBase's bulk load (`BulkLoadHFiles`, `LoadIncrementalHFiles`) into a
//! table this process serves: `basalt import hfiles DIR --table T` and the
//! admin call behind it.
//!
//! The directory is laid out as HBase's tools expect one:
//! `DIR/<family>/<hfile>` (what `HFileOutputFormat2` writes; names
//! starting with `_` or `.` are skipped, as HBase skips them). Each HFile
//! is read (`basalt-hfile`: every encoding and compression) and its rows
//! go to the regions they belong to, as HBase's tool splits a file that
//! spans regions: for each region the file overlaps, the cells in its
//! range become one new store file of that region
//! ([`basalt_engine::Region::bulk_load`]). No puts, no log, no memstore.
//!
//! Each piece gets a fresh sequence id of its region, as HBase assigns one
//! (`hbase.mapreduce.bulkload.assign.sequenceNumbers`, on by default): a
//! loaded cell wins over an existing cell with the same coordinates and
//! loses to any later write. Timestamps, versions and delete markers are
//! kept; a cell's TTL tag becomes its own TTL; other tags (ACL,
//! visibility labels) are left out and counted.
//!
//! A region that split or moved between the listing and the load answers
//! `NotServingRegion`; the regions are listed again and the piece retried
//! (pieces already loaded are not loaded twice: each is committed once).

use std::path::Path;
use std::sync::Arc;

use basalt_engine::compaction::CellStream;
use basalt_engine::fs::FileStore;
use basalt_hfile::{CellConverter, Cells, HFileReader};
use basalt_types::{Cell, Error, Result};
use bytes::Bytes;

use crate::access::{Action, Scope};
use crate::database::Database;
use crate::locator::RegionRoute;
use crate::remote::{RegionAnswer, RegionCall};
use basalt_engine::Region;

/// Attempts per piece when its region split or moved meanwhile.
const ATTEMPTS: usize = 5;

/// What a bulk load did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BulkLoadReport {
    /// HFiles read.
    pub files: u64,
    /// Store files added (a file per region it spans).
    pub pieces: u64,
    /// Cells loaded.
    pub cells: u64,
    /// HFile bytes read.
    pub bytes_read: u64,
    /// Tags left out (not a TTL).
    pub tags_dropped: u64,
}

/// The files behind a bulk load's `dir`: a directory on this server's
/// machine (an absolute path, or `file:///...`).
pub fn source_of(dir: &str) -> Result<(std::sync::Arc<dyn FileStore>, std::path::PathBuf)> {
    if dir.contains("://") && !dir.starts_with("file://") {
        return Err(Error::invalid(format!(
            "bulk load from {dir}: the server reads a directory on its own machine; copy the HFiles there (or run basalt import hfiles with the data directory)"
        )));
    }
    let path = Path::new(dir.strip_prefix("file://").unwrap_or(dir));
    let path = std::path::absolute(path).map_err(|e| Error::io(path, e))?;
    Ok((
        std::sync::Arc::new(basalt_engine::fs::LocalFileStore::new())
            as std::sync::Arc<dyn FileStore>,
        path,
    ))
}

/// [`open_hfile`] for a file whose size is not known yet, with the
/// default read-ahead (the bulk-load region calls).
fn open_sized_hfile(files: &Arc<dyn FileStore>, path: &Path) -> Result<HFileReader> {
    open_hfile(
        files,
        path,
        files.size(path)?,
        basalt_hfile::DEFAULT_READ_AHEAD,
    )
}

/// Opens the HFile at `path` of `files`, `len` bytes (the caller has
/// already asked its size), to be read by ranges of `read_ahead` bytes
/// (`basalt_hfile::DEFAULT_READ_AHEAD` unless told), rather than read
/// whole: an HBase store file can be several GiB, and an import or a bulk
/// load then holds about one window of it in memory.
pub fn open_hfile(
    files: &Arc<dyn FileStore>,
    path: &Path,
    len: u64,
    read_ahead: usize,
) -> Result<HFileReader> {
    let (store, at) = (Arc::clone(files), path.to_path_buf());
    HFileReader::from_ranges(
        path,
        len,
        read_ahead,
        Box::new(move |offset, len| store.read_range(&at, offset, len)),
    )
}

/// The HFiles of a bulk-load directory: `(family, path)`, in name order.
pub fn hfiles_of(files: &dyn FileStore, dir: &Path) -> Result<Vec<(String, std::path::PathBuf)>> {
    let skipped = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_none_or(|n| n.starts_with('_') || n.starts_with('.'))
    };
    let mut out = Vec::new();
    for family_dir in files.list_dirs(dir)? {
        if skipped(&family_dir) {
            continue;
        }
        let family = family_dir
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
            .ok_or_else(|| Error::invalid(format!("{} names no family", family_dir.display())))?;
        let mut paths = files.list(&family_dir)?;
        paths.retain(|p| !skipped(p));
        paths.sort();
        out.extend(paths.into_iter().map(|p| (family.clone(), p)));
    }
    if out.is_empty() {
        return Err(Error::invalid(format!(
            "{} holds no HFiles (expected DIR/<family>/<hfile>)",
            dir.display()
        )));
    }
    Ok(out)
}

/// The cells of one HFile within `[start, end)`, with one sequence id
/// (two cells of one key in the file keep the file's order: the second
/// gets the id below).
struct Piece<'a> {
    cells: Cells<'a>,
    end: Bytes,
    /// A row at or past `end` is an error (the file was meant for this
    /// region alone), not where the piece stops.
    strict: bool,
    sequence: u64,
    converter: CellConverter,
    count: u64,
    path: &'a Path,
}

impl<'a> Piece<'a> {
    fn new(cells: Cells<'a>, end: Bytes, strict: bool, sequence: u64, path: &'a Path) -> Self {
        Piece {
            cells,
            end,
            strict,
            sequence,
            converter: CellConverter::default(),
            count: 0,
            path,
        }
    }
}

impl CellStream for Piece<'_> {
    fn next_cell(&mut self) -> Result<Option<Cell>> {
        let Some(cell) = self.cells.next().transpose()? else {
            return Ok(None);
        };
        if !self.end.is_empty() && cell.row >= self.end {
            if self.strict {
                return Err(Error::invalid(format!(
                    "bulk load file {} does not fit inside the region: row {:?} is at or past its end {:?}",
                    self.path.display(),
                    cell.row,
                    self.end
                )));
            }
            return Ok(None);
        }
        let converted = self
            .converter
            .convert(cell, self.sequence)
            .map_err(|message| Error::Corruption {
                path: self.path.to_path_buf(),
                offset: 0,
                message,
            })?;
        self.count += 1;
        Ok(Some(converted))
    }
}

impl Database {
    /// Bulk-loads the HFiles under `dir` (read through `files`) into
    /// `table` (the module docs). A region another server of a cluster
    /// holds gets its piece through a region call; that server reads the
    /// file by the same path.
    pub fn bulk_load_hfiles(
        &self,
        table: &str,
        files: &Arc<dyn FileStore>,
        dir: &Path,
    ) -> Result<BulkLoadReport> {
        // HBase's AccessController asks ADMIN or CREATE on the table of
        // whoever bulk-loads into it (preBulkLoadHFile).
        self.authorize(
            "bulkLoadHFile",
            &[Action::Admin, Action::Create],
            &Scope::table(table),
        )?;
        let hfiles = hfiles_of(files.as_ref(), dir)?;
        let mut report = BulkLoadReport::default();
        for (family, path) in hfiles {
            let len = files.size(&path)?;
            let reader = open_hfile(files, &path, len, basalt_hfile::DEFAULT_READ_AHEAD)?;
            report.bytes_read += len;
            let (loaded, dropped, pieces) = self.load_one(table, &family, &reader, &path)?;
            report.files += 1;
            report.cells += loaded;
            report.tags_dropped += dropped;
            report.pieces += pieces;
            tracing::info!(table, family, file = %path.display(), cells = loaded, pieces, "bulk-loaded an HFile");
        }
        Ok(report)
    }

    /// HBase's `BulkLoadHFile` call: loads whole HFiles, `(family, path)`,
    /// into region `region_id` of `table` (held by this process), every
    /// file's rows inside the region (HBase's client splits them first; a
    /// file that does not fit is refused before anything of it is
    /// committed). The files share one fresh sequence id and are read on
    /// this machine (HBase's client names them by path). Answers the cells
    /// loaded.
    pub fn bulk_load_region(
        &self,
        table: &str,
        region_id: u64,
        family_paths: &[(String, std::path::PathBuf)],
    ) -> Result<u64> {
        let files: Arc<dyn FileStore> = Arc::new(basalt_engine::fs::LocalFileStore::new());
        self.authorize(
            "bulkLoadHFile",
            &[Action::Admin, Action::Create],
            &Scope::table(table),
        )?;
        let region = self
            .region_server()
            .region(region_id)
            .ok_or_else(|| Error::NotServingRegion(format!("region {region_id} of {table}")))?;
        let sequence = region.bulk_load_sequence()?;
        let mut cells = 0;
        for (family, path) in family_paths {
            let reader = open_sized_hfile(&files, path)?;
            let info = region.info();
            if let Some(first) = reader.cells().next().transpose()? {
                if !info.contains(&first.row) {
                    return Err(Error::invalid(format!(
                        "bulk load file {} does not fit inside region {}: its first row {:?} is outside it",
                        path.display(),
                        info.encoded_name(),
                        first.row
                    )));
                }
            }
            let mut piece = Piece::new(reader.cells(), info.end_key.clone(), true, sequence, path);
            region.bulk_load(family.as_bytes(), &mut piece)?;
            cells += piece.count;
            tracing::info!(table, region = %info.encoded_name(), family, file = %path.display(), cells = piece.count, "bulk-loaded an HFile (BulkLoadHFile)");
        }
        Ok(cells)
    }

    /// A `BulkLoad` region call another server sent: the holder reads the
    /// file and loads its piece from `from` into `region`.
    pub(crate) fn serve_bulk_load(
        region: &Region,
        family: &str,
        path: &Path,
        from: &[u8],
    ) -> Result<RegionAnswer> {
        let files: Arc<dyn FileStore> = Arc::new(basalt_engine::fs::LocalFileStore::new());
        let reader = open_sized_hfile(&files, path)?;
        let (cells, tags_dropped, added) = load_piece(region, family, &reader, path, from)?;
        Ok(RegionAnswer::BulkLoaded {
            cells,
            tags_dropped,
            added,
        })
    }

    /// Loads one HFile region by region: a region open here directly, one
    /// held by another server of a cluster through a region call (that
    /// server reads the file: same machine or a shared mount). Answers
    /// (cells, tags dropped, pieces).
    fn load_one(
        &self,
        table: &str,
        family: &str,
        reader: &HFileReader,
        path: &Path,
    ) -> Result<(u64, u64, u64)> {
        let (mut cells, mut dropped, mut pieces) = (0, 0, 0);
        // The next row to load: everything before it is loaded.
        let mut from: Option<Bytes> = None;
        let mut attempts = 0;
        let located = self.locator().table(table)?;
        loop {
            let mut source = match &from {
                Some(row) => reader.seek(row)?,
                None => reader.cells(),
            };
            let Some(first) = source.next().transpose()? else {
                return Ok((cells, dropped, pieces));
            };
            let start = first.row.clone();
            let route = located
                .routes()
                .into_iter()
                .find(|r| r.info().contains(&start))
                .ok_or_else(|| {
                    Error::invalid(format!("no region of {table} holds row {start:?}"))
                })?;
            let end_key = route.info().end_key.clone();
            let attempt = match &route {
                RegionRoute::Local(region) => load_piece(region, family, reader, path, &start),
                RegionRoute::Remote { info, server } => located
                    .call_remote(
                        info,
                        server,
                        RegionCall::BulkLoad {
                            family: family.to_string(),
                            path: path.to_path_buf(),
                            from: start.clone(),
                        },
                    )
                    .and_then(|answer| match answer {
                        RegionAnswer::BulkLoaded {
                            cells,
                            tags_dropped,
                            added,
                        } => Ok((cells, tags_dropped, added)),
                        other => Err(crate::remote::unexpected(server, "BulkLoad", &other)),
                    }),
                RegionRoute::Offline { info } => Err(Error::NotServingRegion(format!(
                    "region {} of {table} is being assigned",
                    info.encoded_name()
                ))),
            };
            match attempt {
                Ok((n, d, added)) => {
                    cells += n;
                    dropped += d;
                    pieces += u64::from(added);
                    attempts = 0;
                    if end_key.is_empty() {
                        return Ok((cells, dropped, pieces));
                    }
                    from = Some(end_key);
                }
                Err(Error::NotServingRegion(why)) if attempts + 1 < ATTEMPTS => {
                    attempts += 1;
                    tracing::info!(
                        table,
                        why,
                        "bulk load: a region split or moved; routing again"
                    );
                    located.refresh();
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Loads the cells of `reader` from row `from` to `region`'s end as one new
/// store file of `family`, with a fresh sequence id of the region.
/// Answers (cells, tags dropped, whether a file was added).
fn load_piece(
    region: &Region,
    family: &str,
    reader: &HFileReader,
    path: &Path,
    from: &[u8],
) -> Result<(u64, u64, bool)> {
    let sequence = region.bulk_load_sequence()?;
    let mut piece = Piece::new(
        reader.seek(from)?,
        region.info().end_key.clone(),
        false,
        sequence,
        path,
    );
    let entry = region.bulk_load(family.as_bytes(), &mut piece)?;
    Ok((piece.count, piece.converter.tags_dropped, entry.is_some()))
}
