//! One HBase store file rewritten as one Basalt store file, cell for cell.
//!
//! Everything a read can tell apart is kept: row, family, qualifier,
//! timestamp, type (puts and every delete marker), value, a cell's own
//! TTL (HBase's TTL tag). What HBase orders by besides the key is kept
//! too, as Basalt's sequence id:
//!
//! - HBase orders two cells of the same key by their sequence id (the
//!   memstore timestamp the file keeps, `KEY_VALUE_VERSION` 1), then by
//!   the file (the newer file first). A major compaction zeroes the
//!   sequence ids it no longer needs, and a bulk-loaded file's cells take
//!   the file's own (`_SeqId_<n>_` in its name).
//! - So a cell's Basalt sequence id is its own when the file kept one,
//!   else its file's (the file name's for a bulk load, else
//!   `MAX_SEQ_ID_KEY`). Files are flushed in sequence order, so a newer
//!   file's cells carry higher ids than every cell of an older one, and
//!   zeroed cells are older than their file's maximum: HBase's order
//!   between files holds. The region's next write then gets an id above
//!   all of them (the store's flushed sequence is the files' highest).
//! - Two cells of one key in one file with the same id (possible only
//!   when both lost theirs) keep their file order: the second gets the id
//!   just below, as HBase's scanner would rank it.
//!
//! Left out, by design and counted in the report: tags other than TTL
//! (ACL and visibility-label tags: Basalt keeps access rules in its own
//! catalog, docs/security.md) and the memstore timestamps themselves.

use std::path::Path;
use std::sync::Arc;

use basalt_engine::fs::FileStore;
use basalt_engine::storefile::{StoreFileWriter, WriterOptions};
use basalt_hfile::{file_info_keys, CellConverter, HFileReader};
use basalt_types::{CellType, ColumnFamilyDescriptor, Error, Result};

use crate::hbase::Half;

/// What one conversion wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Converted {
    /// The Basalt file's size in bytes (0: the part read held no cells and
    /// no file was written).
    pub size: u64,
    /// Its highest sequence id.
    pub max_sequence: u64,
    /// Cells written.
    pub cells: u64,
    /// Delete markers among them.
    pub markers: u64,
    /// Tags left out (not a TTL).
    pub tags_dropped: u64,
}

/// The sequence id HBase gives a file's cells that kept none: a bulk
/// load's from its name, else the file's recorded maximum.
pub fn file_sequence(reader: &HFileReader, file_name: &str) -> Result<u64> {
    if let Some(n) = bulk_load_sequence(file_name) {
        return Ok(n);
    }
    let recorded = reader
        .file_info()
        .get_i64(file_info_keys::MAX_SEQ_ID)
        .map_err(|m| Error::Corruption {
            path: reader.path().to_path_buf(),
            offset: 0,
            message: format!("file info MAX_SEQ_ID_KEY: {m}"),
        })?
        .unwrap_or(0);
    Ok(u64::try_from(recorded).unwrap_or(0))
}

/// `<hex>_SeqId_<n>_`: the id HBase assigned a bulk-loaded file.
fn bulk_load_sequence(file_name: &str) -> Option<u64> {
    let at = file_name.find("_SeqId_")?;
    let rest = &file_name[at + "_SeqId_".len()..];
    let digits = rest.strip_suffix('_')?;
    digits.parse().ok()
}

/// Writes the cells of `reader` that `half` keeps as a Basalt store file
/// of `family` at `dest` (which must not exist). Nothing is published
/// when the part read holds no cells (`size` 0) or on an error.
pub fn convert_file(
    reader: &HFileReader,
    file_name: &str,
    half: &Half,
    family: &ColumnFamilyDescriptor,
    dest_files: &Arc<dyn FileStore>,
    dest: &Path,
    now_ms: i64,
) -> Result<Converted> {
    let fallback = file_sequence(reader, file_name)?.max(1);
    let mut options = WriterOptions::for_family(family, now_ms);
    options.expected_cells = reader.entry_count();
    options
        .properties
        .insert("imported.from".into(), file_name.as_bytes().to_vec().into());
    let mut writer: Option<StoreFileWriter> = None;
    let mut out = Converted::default();
    let mut converter = CellConverter::default();
    let cells = match half {
        Half::From(split) => reader.seek(split)?,
        _ => reader.cells(),
    };
    for cell in cells {
        let cell = cell?;
        if !half.contains(&cell.row) {
            if matches!(half, Half::Before(_)) {
                // Sorted: nothing after this row is in the bottom half.
                break;
            }
            continue;
        }
        if cell.family != family.name().as_bytes() {
            return Err(Error::Corruption {
                path: reader.path().to_path_buf(),
                offset: 0,
                message: format!(
                    "a cell of family {:?} in a file of family {}",
                    cell.family,
                    family.name()
                ),
            });
        }
        // HBase's own id when the file kept one, else the file's.
        let sequence_id = if cell.seq_id > 0 {
            cell.seq_id
        } else {
            fallback
        };
        let converted =
            converter
                .convert(cell, sequence_id)
                .map_err(|message| Error::Corruption {
                    path: reader.path().to_path_buf(),
                    offset: 0,
                    message,
                })?;
        let writer = match writer.as_mut() {
            Some(w) => w,
            None => writer.insert(StoreFileWriter::new(
                Arc::clone(dest_files),
                dest,
                options.clone(),
            )?),
        };
        writer.add(&converted).map_err(|e| Error::Corruption {
            path: reader.path().to_path_buf(),
            offset: 0,
            message: format!("cells out of HBase's order: {e}"),
        })?;
        out.cells += 1;
        if converted.cell_type != CellType::Put {
            out.markers += 1;
        }
        out.max_sequence = out.max_sequence.max(converted.sequence_id);
    }
    out.tags_dropped = converter.tags_dropped;
    let Some(mut writer) = writer else {
        return Ok(out);
    };
    // What HBase recorded as the oldest put its file keeps: a family
    // keeping deleted cells reads it when it compacts.
    if let Ok(Some(earliest)) = reader.file_info().get_i64(b"EARLIEST_PUT_TS") {
        writer.record_earliest_put(earliest);
    }
    let meta = writer.finish()?;
    out.size = meta.file_size;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bulk_loaded_file_name_carries_its_sequence_id() {
        assert_eq!(bulk_load_sequence("0a1b2c_SeqId_42_"), Some(42));
        assert_eq!(bulk_load_sequence("0a1b2c"), None);
        assert_eq!(bulk_load_sequence("0a1b2c_SeqId_x_"), None);
        assert_eq!(bulk_load_sequence("0a1b2c_SeqId_42"), None);
    }
}
