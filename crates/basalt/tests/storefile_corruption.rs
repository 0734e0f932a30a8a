//! Damaged store files are reported as corruption naming the file, never
//! read as wrong data and never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use basalt::*;

fn store_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "sst") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&dir.join("data"), &mut out);
    out
}

/// Writes a table with enough data for many blocks, flushes it to one
/// store file, closes the database and returns that file.
fn one_store_file(dir: &Path, compression: Compression) -> PathBuf {
    let db = Database::open(dir).unwrap();
    db.create_table(
        TableDescriptor::new("t").family(
            ColumnFamilyDescriptor::new("f")
                .block_size(1024)
                .compression(compression),
        ),
    )
    .unwrap();
    let table = db.table("t").unwrap();
    for i in 0..2000 {
        table
            .put(&Put::new(format!("row{i:05}")).add(
                "f",
                "q",
                format!("value number {i} {}", "x".repeat(i % 50)),
            ))
            .unwrap();
    }
    db.flush_table("t").unwrap();
    db.close().unwrap();
    let files = store_files(dir);
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}

/// Reads everything back; the outcome is either the exact data (not
/// possible after a flip) or a corruption error naming `file`.
fn expect_corruption_naming(dir: &Path, file: &Path) {
    let outcome = Database::open(dir).and_then(|db| {
        let table = db.table("t")?;
        let mut rows = 0;
        for result in table.scan(&Scan::new())? {
            result?;
            rows += 1;
        }
        for i in (0..2000).step_by(7) {
            table.get(&Get::new(format!("row{i:05}")))?;
        }
        Ok(rows)
    });
    match outcome {
        Err(Error::Corruption { path, .. }) => assert_eq!(path, file),
        Err(other) => panic!("expected corruption naming {}, got {other}", file.display()),
        Ok(rows) => panic!("a damaged file read back {rows} rows without an error"),
    }
}

#[test]
fn flipped_byte_in_a_data_block_is_reported_with_the_file() {
    for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let file = one_store_file(dir.path(), compression);
        let len = std::fs::metadata(&file).unwrap().len() as usize;
        // Data blocks come first in the file: a quarter in is inside one.
        flip(&file, len / 4);
        expect_corruption_naming(dir.path(), &file);
    }
}

#[test]
fn damage_anywhere_in_the_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let file = one_store_file(dir.path(), Compression::None);
    let pristine = std::fs::read(&file).unwrap();
    let len = pristine.len();
    // Data, index, bloom, metadata, trailer: sample offsets across the file.
    let offsets: Vec<usize> = (0..40).map(|k| k * (len - 1) / 39).collect();
    for at in offsets {
        std::fs::write(&file, &pristine).unwrap();
        flip(&file, at);
        expect_corruption_naming(dir.path(), &file);
    }
    std::fs::write(&file, &pristine[..len / 2]).unwrap();
    expect_corruption_naming(dir.path(), &file);
}
