//! TEMPORARY stand-in with the API of the store-file format being written on
//! the `sst` branch (blocks, index, bloom, compression); replaced at merge.
#![allow(missing_docs, clippy::all)]
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use basalt_types::descriptor::{BloomType, Compression, DataBlockEncoding};
use basalt_types::{Cell, CellType, Error, Result};

use crate::block_cache::BlockCache;
use crate::fs::{FileStore, FileWriter};
use crate::source::CellSource;

#[derive(Debug, Clone)]
pub struct WriterOptions {
    pub block_size: u32,
    pub compression: Compression,
    pub encoding: DataBlockEncoding,
    pub bloom: BloomType,
    pub family: Bytes,
    pub expected_cells: u64,
}

#[derive(Debug, Clone, Default)]
pub struct StoreFileMeta {
    pub cell_count: u64,
    pub max_sequence: u64,
    pub min_timestamp: i64,
    pub max_timestamp: i64,
    pub first_row: Bytes,
    pub last_row: Bytes,
    pub file_size: u64,
}

pub struct StoreFileWriter {
    out: Box<dyn FileWriter>,
    meta: StoreFileMeta,
    last: Option<Cell>,
}

fn put_bytes(buf: &mut Vec<u8>, b: &[u8]) {
    buf.extend_from_slice(&(b.len() as u32).to_le_bytes());
    buf.extend_from_slice(b);
}

impl StoreFileWriter {
    pub fn new(store: Arc<dyn FileStore>, path: &Path, _options: WriterOptions) -> Result<Self> {
        Ok(StoreFileWriter {
            out: store.create(path)?,
            meta: StoreFileMeta {
                min_timestamp: i64::MAX,
                max_timestamp: i64::MIN,
                ..Default::default()
            },
            last: None,
        })
    }
    pub fn add(&mut self, cell: &Cell) -> Result<()> {
        if let Some(last) = &self.last {
            if last.compare_key(cell).is_ge() {
                return Err(Error::invalid("cells out of order"));
            }
        }
        let mut buf = Vec::new();
        put_bytes(&mut buf, &cell.row);
        put_bytes(&mut buf, &cell.qualifier);
        buf.extend_from_slice(&cell.timestamp.to_le_bytes());
        buf.push(cell.cell_type.code());
        buf.extend_from_slice(&cell.sequence_id.to_le_bytes());
        put_bytes(&mut buf, &cell.value);
        self.out.write_all(&buf)?;
        let m = &mut self.meta;
        m.cell_count += 1;
        m.max_sequence = m.max_sequence.max(cell.sequence_id);
        m.min_timestamp = m.min_timestamp.min(cell.timestamp);
        m.max_timestamp = m.max_timestamp.max(cell.timestamp);
        if m.cell_count == 1 {
            m.first_row = cell.row.clone();
        }
        m.last_row = cell.row.clone();
        self.last = Some(cell.clone());
        Ok(())
    }
    pub fn finish(self) -> Result<StoreFileMeta> {
        let mut meta = self.meta;
        meta.file_size = self.out.finish()?;
        Ok(meta)
    }
}

#[derive(Debug)]
pub struct StoreFileReader {
    cells: Arc<Vec<Cell>>,
    meta: StoreFileMeta,
    pub path: PathBuf,
}

impl StoreFileReader {
    pub fn open(
        store: Arc<dyn FileStore>,
        path: &Path,
        _file_id: u64,
        _cache: Option<Arc<BlockCache>>,
        family: Bytes,
    ) -> Result<Arc<Self>> {
        let size = store.size(path)?;
        let data = store.read_range(path, 0, size as usize)?;
        let mut cells = Vec::new();
        let mut pos = 0usize;
        let corrupt = || Error::Corruption {
            path: path.to_path_buf(),
            offset: 0,
            message: "bad stub file".into(),
        };
        let take = |pos: &mut usize, n: usize| -> Result<Bytes> {
            if *pos + n > data.len() {
                return Err(corrupt());
            }
            let b = data.slice(*pos..*pos + n);
            *pos += n;
            Ok(b)
        };
        let mut meta = StoreFileMeta {
            min_timestamp: i64::MAX,
            max_timestamp: i64::MIN,
            file_size: size,
            ..Default::default()
        };
        while pos < data.len() {
            let n = u32::from_le_bytes(take(&mut pos, 4)?[..].try_into().map_err(|_| corrupt())?)
                as usize;
            let row = take(&mut pos, n)?;
            let n = u32::from_le_bytes(take(&mut pos, 4)?[..].try_into().map_err(|_| corrupt())?)
                as usize;
            let qualifier = take(&mut pos, n)?;
            let timestamp =
                i64::from_le_bytes(take(&mut pos, 8)?[..].try_into().map_err(|_| corrupt())?);
            let cell_type = CellType::from_code(take(&mut pos, 1)?[0]).ok_or_else(corrupt)?;
            let sequence_id =
                u64::from_le_bytes(take(&mut pos, 8)?[..].try_into().map_err(|_| corrupt())?);
            let n = u32::from_le_bytes(take(&mut pos, 4)?[..].try_into().map_err(|_| corrupt())?)
                as usize;
            let value = take(&mut pos, n)?;
            meta.cell_count += 1;
            meta.max_sequence = meta.max_sequence.max(sequence_id);
            meta.min_timestamp = meta.min_timestamp.min(timestamp);
            meta.max_timestamp = meta.max_timestamp.max(timestamp);
            if meta.cell_count == 1 {
                meta.first_row = row.clone();
            }
            meta.last_row = row.clone();
            cells.push(Cell {
                row,
                family: family.clone(),
                qualifier,
                timestamp,
                cell_type,
                sequence_id,
                value,
            });
        }
        Ok(Arc::new(StoreFileReader {
            cells: Arc::new(cells),
            meta,
            path: path.to_path_buf(),
        }))
    }
    pub fn meta(&self) -> &StoreFileMeta {
        &self.meta
    }
    pub fn may_contain_row(&self, _row: &[u8]) -> bool {
        true
    }
    pub fn source(self: &Arc<Self>) -> StoreFileSource {
        StoreFileSource {
            cells: Arc::clone(&self.cells),
            pos: self.cells.len(),
        }
    }
}

pub struct StoreFileSource {
    cells: Arc<Vec<Cell>>,
    pos: usize,
}
impl CellSource for StoreFileSource {
    fn peek(&self) -> Option<&Cell> {
        self.cells.get(self.pos)
    }
    fn advance(&mut self) -> Result<()> {
        self.pos = (self.pos + 1).min(self.cells.len());
        Ok(())
    }
    fn seek(&mut self, key: &Cell) -> Result<()> {
        self.pos = self.cells.partition_point(|c| c.compare_key(key).is_lt());
        Ok(())
    }
    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        let end = match row {
            Some(row) => self.cells.partition_point(|c| &c.row[..] < row),
            None => self.cells.len(),
        };
        self.pos = match end.checked_sub(1) {
            Some(last) => {
                let r = self.cells[last].row.clone();
                self.cells.partition_point(|c| c.row < r)
            }
            None => self.cells.len(),
        };
        Ok(())
    }
}
